/*
 * store_dsyms - the dsyms table: one row per debug file (UUID), and the UUIDs that
 * pending_dsym reports wait for (see store_dsyms.h).
 */
#include "store/store_dsyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

#define DSYM_COLUMNS                                                                         \
    "upper(uuid::text), arch, name, has_dwarf, dwarf_bytes, symcache_bytes, functions, "     \
    "sha256, " STORE_TS("uploaded_at")

static const store_stmt ST_DSYM_INSERT = {
    "dsym_insert", "INSERT INTO dsyms (uuid, arch, name, has_dwarf, dwarf_bytes, "
                   "symcache_bytes, functions, sha256) "
                   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
                   "ON CONFLICT (uuid) DO NOTHING RETURNING " DSYM_COLUMNS};
static const store_stmt ST_DSYM_UPGRADE = {
    "dsym_upgrade", "UPDATE dsyms SET arch = $2, name = $3, has_dwarf = $4, "
                    "dwarf_bytes = $5, symcache_bytes = $6, functions = $7, sha256 = $8, "
                    "uploaded_at = now() "
                    "WHERE uuid = $1::uuid AND NOT has_dwarf AND $4::boolean "
                    "RETURNING " DSYM_COLUMNS};
static const store_stmt ST_DSYM_GET = {
    "dsym_get", "SELECT " DSYM_COLUMNS " FROM dsyms WHERE uuid = $1::uuid"};
static const store_stmt ST_DSYM_LIST = {
    "dsym_list", "SELECT " DSYM_COLUMNS " FROM dsyms "
                 "WHERE ($1::uuid IS NULL OR uuid = $1::uuid) "
                 "AND ($2::text IS NULL OR name = $2) "
                 "ORDER BY uploaded_at DESC, uuid LIMIT $3"};

static void dsym_from_row(store_dsym *d, PGresult *res, int row)
{
    store_copy(d->uuid, sizeof d->uuid, res, row, 0);
    store_copy(d->arch, sizeof d->arch, res, row, 1);
    store_copy(d->name, sizeof d->name, res, row, 2);
    d->has_dwarf = PQgetvalue(res, row, 3)[0] == 't';
    d->dwarf_bytes = strtoll(PQgetvalue(res, row, 4), NULL, 10);
    d->symcache_bytes = strtoll(PQgetvalue(res, row, 5), NULL, 10);
    d->functions = (int32_t)strtol(PQgetvalue(res, row, 6), NULL, 10);
    store_copy(d->sha256, sizeof d->sha256, res, row, 7);
    store_copy(d->uploaded_at, sizeof d->uploaded_at, res, row, 8);
}

typedef struct {
    store_dsym_outcome *outcome;
    store_dsym *rows;
    size_t n;
    const char *uuid, *name;
    size_t limit;
    arena *a;
    store_dsym **list;
    size_t *list_n;
} dsym_ctx;

static err_code do_dsyms_insert(pconn *c, void *vctx, err_info *err)
{
    dsym_ctx *d = vctx;
    err_code rc = store_command(c, "BEGIN", "inserting debug files", err);
    for (size_t i = 0; rc == ERR_OK && i < d->n; i++) {
        store_dsym *row = &d->rows[i];
        char dwarf[24], symc[24], funcs[16];
        snprintf(dwarf, sizeof dwarf, "%lld", (long long)row->dwarf_bytes);
        snprintf(symc, sizeof symc, "%lld", (long long)row->symcache_bytes);
        snprintf(funcs, sizeof funcs, "%ld", (long)row->functions);
        const char *values[8] = {row->uuid, row->arch, row->name, row->has_dwarf ? "t" : "f",
                                 dwarf, symc, funcs, row->sha256};
        PGresult *res;
        rc = store_exec(&res, c, &ST_DSYM_INSERT, 8, values, NULL, NULL, err);
        if (rc != ERR_OK)
            break;
        d->outcome[i] = PQntuples(res) == 1 ? STORE_DSYM_CREATED : STORE_DSYM_EXISTS;
        if (d->outcome[i] == STORE_DSYM_EXISTS && row->has_dwarf) {
            /* Known UUID: DWARF replaces a record built from a symbol table only. */
            PQclear(res);
            rc = store_exec(&res, c, &ST_DSYM_UPGRADE, 8, values, NULL, NULL, err);
            if (rc != ERR_OK)
                break;
            if (PQntuples(res) == 1)
                d->outcome[i] = STORE_DSYM_UPGRADED;
        }
        if (d->outcome[i] != STORE_DSYM_EXISTS)
            dsym_from_row(row, res, 0);
        PQclear(res);
        if (d->outcome[i] != STORE_DSYM_EXISTS)
            continue;
        /* Already there: answer with the stored record (idempotent re-upload). */
        const char *uuid[1] = {row->uuid};
        rc = store_exec(&res, c, &ST_DSYM_GET, 1, uuid, NULL, NULL, err);
        if (rc != ERR_OK)
            break;
        if (PQntuples(res) == 1)
            dsym_from_row(row, res, 0);
        PQclear(res);
    }
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "inserting debug files", err);
    return rc;   /* store_release rolls back a transaction left open by an error */
}

err_code store_dsyms_insert(store_dsym_outcome *outcome, store_dsym *rows, size_t n, store *s,
                            err_info *err)
{
    dsym_ctx d = {.outcome = outcome, .rows = rows, .n = n};
    return store_run(s, do_dsyms_insert, &d, err);
}

static err_code do_dsym_get(pconn *c, void *vctx, err_info *err)
{
    dsym_ctx *d = vctx;
    const char *values[1] = {d->uuid};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSYM_GET, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0)
        rc = err_set(err, ERR_NOT_FOUND, "no debug file with uuid %s", d->uuid);
    else
        dsym_from_row(d->rows, res, 0);
    PQclear(res);
    return rc;
}

err_code store_dsym_get(store_dsym *out, store *s, const char *uuid, err_info *err)
{
    dsym_ctx d = {.rows = out, .uuid = uuid};
    memset(out, 0, sizeof *out);
    err_code rc = store_run(s, do_dsym_get, &d, err);
    if (rc == ERR_INVALID)   /* not a UUID: nothing can have it */
        rc = err_set(err, ERR_NOT_FOUND, "no debug file with uuid %s", uuid);
    return rc;
}

static err_code do_dsyms_list(pconn *c, void *vctx, err_info *err)
{
    dsym_ctx *d = vctx;
    char limit[24];
    snprintf(limit, sizeof limit, "%zu", d->limit);
    const char *values[3] = {d->uuid, d->name, limit};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSYM_LIST, 3, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res);
    store_dsym *list = arena_alloc_array(d->a, n ? n : 1, sizeof *list, err);
    if (!list) {
        PQclear(res);
        return ERR_TOO_LARGE;
    }
    for (size_t i = 0; i < n; i++)
        dsym_from_row(&list[i], res, (int)i);
    PQclear(res);
    *d->list = list;
    *d->list_n = n;
    return ERR_OK;
}

err_code store_dsyms_list(store_dsym **out, size_t *n, store *s, const char *uuid,
                          const char *name, size_t limit, arena *a, err_info *err)
{
    dsym_ctx d = {.uuid = uuid, .name = name, .limit = limit, .a = a, .list = out, .list_n = n};
    *out = NULL;
    *n = 0;
    err_code rc = store_run(s, do_dsyms_list, &d, err);
    if (rc == ERR_INVALID)
        rc = err_set(err, ERR_INVALID, "uuid filter '%s' is not a UUID", uuid ? uuid : "");
    return rc;
}

/* The image name comes from one waiting report's model. */
static const char SQL_MISSING[] =
    "WITH m AS (SELECT u, count(*) AS n, min(r.received_at) AS first_r, "
    "max(r.received_at) AS last_r, (array_agg(r.id))[1] AS sample "
    "FROM reports r, unnest(r.missing_uuids) u "
    "WHERE r.status = 'pending_dsym' GROUP BY u ORDER BY n DESC, u "
    "LIMIT $1::int) "
    "SELECT json_build_object('missing', coalesce(json_agg(json_build_object("
    "'uuid', upper(m.u::text), 'name', (SELECT img->>'name' FROM reports r, "
    "json_array_elements(r.symbolicated::json->'images') img WHERE r.id = m.sample "
    "AND upper(img->>'uuid') = upper(m.u::text) LIMIT 1), 'reports', m.n, "
    "'first_received', " STORE_TS("m.first_r") ", 'last_received', "
    STORE_TS("m.last_r") ") ORDER BY m.n DESC, m.u), '[]'))::text FROM m";

err_code store_dsyms_missing(const char **json, store *s, unsigned limit, arena *a,
                             err_info *err)
{
    char limit_s[16];
    snprintf(limit_s, sizeof limit_s, "%u", limit);
    const char *values[1] = {limit_s};
    return store_json_query(json, s, "listing missing dSYMs", SQL_MISSING, 1, values, false, a,
                            err);
}
