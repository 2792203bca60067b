/*
 * store_symbol_maps - the uuid_maps and symbol_maps tables, and the dSYMs they reveal (see
 * store_symbol_maps.h).
 */
#include "store/store_symbol_maps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

/* The map a hidden dSYM needs: its UUID map's original, else its own UUID. */
#define NEEDED_MAP "coalesce((SELECT u.original_uuid FROM uuid_maps u WHERE u.uuid = d.uuid), d.uuid)"

static const store_stmt ST_UUIDMAP_PUT = {
    "uuidmap_put", "INSERT INTO uuid_maps (uuid, original_uuid) VALUES ($1::uuid, $2::uuid) "
                   "ON CONFLICT (uuid) DO UPDATE SET original_uuid = EXCLUDED.original_uuid, "
                   "uploaded_at = now() WHERE uuid_maps.original_uuid <> EXCLUDED.original_uuid"};
static const store_stmt ST_SYMBOLMAP_PUT = {
    "symbolmap_put", "INSERT INTO symbol_maps (uuid, names, bytes, blob) VALUES ($1::uuid, $2, "
                     "$3, $4) ON CONFLICT (uuid) DO NOTHING RETURNING uuid"};
static const store_stmt ST_SYMBOLMAP_SHORT = {
    "symbolmap_short", "SELECT upper(d.uuid::text), d.hidden_max FROM dsyms d "
                       "WHERE d.hidden_names > 0 AND d.hidden_max > $2::int AND "
                       NEEDED_MAP " = $1::uuid ORDER BY d.hidden_max DESC LIMIT 1"};
static const store_stmt ST_SYMBOLMAP_FIND = {
    "symbolmap_find", "WITH o AS (SELECT coalesce(nullif($2, '')::uuid, (SELECT original_uuid "
                      "FROM uuid_maps WHERE uuid = $1::uuid)) AS original) "
                      "SELECT coalesce(upper(o.original::text), ''), m.blob FROM o "
                      "LEFT JOIN symbol_maps m ON m.uuid = coalesce(o.original, $1::uuid)"};
static const store_stmt ST_DSYMS_TO_REVEAL = {
    "dsyms_to_reveal", "SELECT upper(d.uuid::text), coalesce(d.symcache_blob, ''), "
                       "d.original_blob, coalesce(d.original_name, '') FROM dsyms d "
                       "JOIN symbol_maps m ON m.uuid = " NEEDED_MAP " "
                       "WHERE d.hidden_names > 0 AND d.original_blob IS NOT NULL "
                       "AND m.names >= d.hidden_max AND d.revealed_by IS DISTINCT FROM m.uuid "
                       "ORDER BY d.original_blob, d.uuid"};

typedef struct {
    const store_uuid_map *u;
    size_t nu;
    store_symbol_map *m;
    size_t nm;
} record_ctx;

static err_code do_record(pconn *c, void *vctx, err_info *err)
{
    record_ctx *x = vctx;
    err_code rc = store_command(c, "BEGIN", "recording symbol maps", err);
    for (size_t i = 0; rc == ERR_OK && i < x->nu; i++) {
        const char *values[2] = {x->u[i].uuid, x->u[i].original};
        rc = store_exec(NULL, c, &ST_UUIDMAP_PUT, 2, values, NULL, NULL, err);
    }
    for (size_t i = 0; rc == ERR_OK && i < x->nm; i++) {
        store_symbol_map *m = &x->m[i];
        char names[16], bytes[24];
        snprintf(names, sizeof names, "%u", m->names);
        snprintf(bytes, sizeof bytes, "%lld", (long long)m->bytes);
        const char *values[4] = {m->uuid, names, bytes, m->file.sha256};
        PGresult *res;
        rc = store_exec(&res, c, &ST_SYMBOLMAP_PUT, 4, values, NULL, NULL, err);
        if (rc != ERR_OK)
            break;
        m->created = PQntuples(res) == 1;
        PQclear(res);
        if (m->created)   /* the row first: its foreign key is checked at COMMIT */
            rc = store_blob_put(c, &m->file, err);
    }
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "recording symbol maps", err);
    return rc;   /* store_release rolls back a transaction left open by an error */
}

err_code store_symbol_maps_record(const store_uuid_map *uuidmaps, size_t nu,
                                  store_symbol_map *maps, size_t nm, store *s, err_info *err)
{
    record_ctx x = {uuidmaps, nu, maps, nm};
    if (nu == 0 && nm == 0)
        return ERR_OK;
    return store_run(s, do_record, &x, err);
}

typedef struct {
    bool *found;
    char *dsym_uuid;
    uint32_t *need;
    const char *uuid;
    uint32_t names;
} short_ctx;

static err_code do_short(pconn *c, void *vctx, err_info *err)
{
    short_ctx *x = vctx;
    char names[16];
    snprintf(names, sizeof names, "%u", x->names);
    const char *values[2] = {x->uuid, names};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_SYMBOLMAP_SHORT, 2, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *x->found = PQntuples(res) == 1;
    if (*x->found) {
        store_copy(x->dsym_uuid, 37, res, 0, 0);
        *x->need = (uint32_t)strtoul(PQgetvalue(res, 0, 1), NULL, 10);
    }
    PQclear(res);
    return ERR_OK;
}

err_code store_symbol_map_short(bool *found, char dsym_uuid[37], uint32_t *need, store *s,
                                const char *uuid, uint32_t names, err_info *err)
{
    short_ctx x = {found, dsym_uuid, need, uuid, names};
    *found = false;
    dsym_uuid[0] = '\0';
    *need = 0;
    return store_run(s, do_short, &x, err);
}

typedef struct {
    char *original, *sha;
    const char *uuid;
} find_ctx;

static err_code do_find(pconn *c, void *vctx, err_info *err)
{
    find_ctx *x = vctx;
    const char *values[2] = {x->uuid, x->original};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_SYMBOLMAP_FIND, 2, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 1) {
        if (!x->original[0])
            store_copy(x->original, 37, res, 0, 0);
        store_copy(x->sha, 65, res, 0, 1);
    }
    PQclear(res);
    if (!x->sha[0])
        return err_set(err, ERR_NOT_FOUND, "no BCSymbolMap stored for %s", x->uuid);
    return ERR_OK;
}

err_code store_symbol_map_find(char original[37], char sha256[65], store *s, const char *uuid,
                               err_info *err)
{
    find_ctx x = {original, sha256, uuid};
    sha256[0] = '\0';
    return store_run(s, do_find, &x, err);
}

typedef struct {
    store_dsym_original **out;
    size_t *n;
    arena *a;
} reveal_list_ctx;

static err_code do_to_reveal(pconn *c, void *vctx, err_info *err)
{
    reveal_list_ctx *x = vctx;
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSYMS_TO_REVEAL, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    rc = store_dsym_originals_read(x->out, x->n, res, x->a, err);
    PQclear(res);
    return rc;
}

err_code store_dsyms_to_reveal(store_dsym_original **out, size_t *n, store *s, arena *a,
                               err_info *err)
{
    reveal_list_ctx x = {out, n, a};
    *out = NULL;
    *n = 0;
    return store_run(s, do_to_reveal, &x, err);
}

typedef struct {
    bool *done;
    const char *values[7];
    const store_blob_file *file;
} reveal_ctx;

static err_code do_reveal(pconn *c, void *vctx, err_info *err)
{
    reveal_ctx *x = vctx;
    *x->done = false;
    err_code rc = store_command(c, "BEGIN", "revealing a dSYM", err);
    PGresult *res = NULL;
    if (rc == ERR_OK)
        rc = store_exec_sql(&res, c, "revealing a dSYM",
                            "UPDATE dsyms SET sha256 = $3, symcache_blob = $3, "
                            "symcache_bytes = $4, functions = $5, hidden_names = $6, "
                            "revealed_by = nullif($7, '')::uuid WHERE uuid = $1::uuid AND "
                            "symcache_blob IS NOT DISTINCT FROM nullif($2, '')",
                            7, x->values, 0, err);
    if (rc != ERR_OK)
        return rc;
    bool updated = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    if (!updated)
        return store_command(c, "ROLLBACK", "revealing a dSYM", err);
    rc = store_blob_put(c, x->file, err);
    /* what waited for this dSYM goes back to the queue, as when a missing dSYM arrives
     * (the dsyms INSERT triggers of migrations 0002 and 0005) */
    if (rc == ERR_OK)
        rc = store_exec_sql(NULL, c, "releasing reports", "UPDATE reports SET status = "
                            "'received', updated_at = now() WHERE status = 'pending_dsym' AND "
                            "missing_uuids && ARRAY[$1::uuid]", 1, x->values, 0, err);
    if (rc == ERR_OK)
        rc = store_exec_sql(NULL, c, "releasing call sites", "UPDATE callsite_pending SET "
                            "status = 'ready' WHERE status = 'waiting' AND missing_uuids && "
                            "ARRAY[$1::uuid]", 1, x->values, 0, err);
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "revealing a dSYM", err);
    if (rc == ERR_OK)
        *x->done = true;
    return rc;
}

err_code store_dsym_reveal(bool *done, store *s, const char *uuid, const char *expect_sha256,
                           const store_blob_file *file, int64_t symcache_bytes,
                           int32_t functions, uint32_t hidden_names, const char *revealed_by,
                           err_info *err)
{
    char bytes[24], funcs[16], hidden[16];
    snprintf(bytes, sizeof bytes, "%lld", (long long)symcache_bytes);
    snprintf(funcs, sizeof funcs, "%ld", (long)functions);
    snprintf(hidden, sizeof hidden, "%u", hidden_names);
    reveal_ctx x = {done, {uuid, expect_sha256 ? expect_sha256 : "", file->sha256, bytes, funcs,
                           hidden, revealed_by ? revealed_by : ""}, file};
    return store_run(s, do_reveal, &x, err);
}
