/*
 * store_dsyms - the dsyms table: one row per debug file (UUID), and the UUIDs that
 * pending_dsym reports wait for (see store_dsyms.h).
 */
#include "store/store_dsyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_blobs.h"
#include "store/store_internal.h"

#define DSYM_COLUMNS                                                                         \
    "upper(uuid::text), arch, name, has_dwarf, dwarf_bytes, symcache_bytes, functions, "     \
    "sha256, " STORE_TS("uploaded_at")

static const store_stmt ST_DSYM_INSERT = {
    "dsym_insert", "INSERT INTO dsyms (uuid, arch, name, has_dwarf, dwarf_bytes, "
                   "symcache_bytes, functions, sha256, symcache_blob, original_blob, "
                   "original_name) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10) "
                   "ON CONFLICT (uuid) DO NOTHING RETURNING " DSYM_COLUMNS};
/* DWARF replaces a record built from a symbol table only, never the other way round. The
 * UPDATE locks the row, so of two racing uploads exactly one upgrades and the other sees
 * has_dwarf and leaves it; the symcache blob changes with the row. */
static const store_stmt ST_DSYM_UPGRADE = {
    "dsym_upgrade", "UPDATE dsyms SET arch = $2, name = $3, has_dwarf = $4, "
                    "dwarf_bytes = $5, symcache_bytes = $6, functions = $7, sha256 = $8, "
                    "symcache_blob = $8, original_blob = $9, original_name = $10, "
                    "uploaded_at = now(), last_used_at = now() "
                    "WHERE uuid = $1::uuid AND NOT has_dwarf AND $4::boolean "
                    "RETURNING " DSYM_COLUMNS};
/* Checked records (store_dsym_record.checked): the row as it is, locked, to compare with what
 * the caller merged with; then the whole row, or only its symcache, replaced. */
static const store_stmt ST_DSYM_LOCK = {
    "dsym_lock", "SELECT coalesce(symcache_blob, '') FROM dsyms WHERE uuid = $1::uuid FOR UPDATE"};
static const store_stmt ST_DSYM_REPLACE_ROW = {
    "dsym_replace_row", "UPDATE dsyms SET arch = $2, name = $3, has_dwarf = $4, "
                        "dwarf_bytes = $5, symcache_bytes = $6, functions = $7, sha256 = $8, "
                        "symcache_blob = $8, original_blob = $9, original_name = $10, "
                        "uploaded_at = now(), last_used_at = now() "
                        "WHERE uuid = $1::uuid RETURNING " DSYM_COLUMNS};
static const store_stmt ST_DSYM_REPLACE_SYMCACHE = {
    "dsym_replace_symcache", "UPDATE dsyms SET sha256 = $2, symcache_blob = $2, "
                             "symcache_bytes = $3, last_used_at = now() "
                             "WHERE uuid = $1::uuid RETURNING " DSYM_COLUMNS};
static const store_stmt ST_DSYM_HIDDEN = {
    "dsym_hidden", "UPDATE dsyms SET hidden_names = $2, hidden_max = $3, "
                   "revealed_by = nullif($4, '')::uuid WHERE uuid = $1::uuid"};
static const store_stmt ST_DSYM_BLOBS = {
    "dsym_blobs", "SELECT coalesce(symcache_blob, ''), symcache_bytes, "
                  "coalesce(original_blob, ''), coalesce(original_name, ''), arch, has_dwarf "
                  "FROM dsyms WHERE uuid = $1::uuid"};
static const store_stmt ST_DSYM_TOUCH = {
    "dsym_touch", "UPDATE dsyms SET last_used_at = now() WHERE uuid = $1::uuid "
                  "AND last_used_at < now() - interval '1 hour'"};
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
    if (rc != ERR_OK && store_refused_value(err))   /* not a UUID: nothing can have it */
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
    if (rc != ERR_OK && store_refused_value(err))
        rc = err_set(err, ERR_INVALID, "uuid filter '%s' is not a UUID", uuid ? uuid : "");
    return rc;
}

/* Both kinds of waiting in one list, a report counted once per UUID; the image name comes
 * from one waiting report's model. Each branch reads only its partial indexes' rows
 * (reports_pending_dsym, reports_unwind_waiting). */
static const store_stmt ST_DSYMS_MISSING = {
    "dsyms_missing",
    "WITH w AS (SELECT u, r.id, r.received_at, true AS dbg, false AS unw "
    "FROM reports r, unnest(r.missing_uuids) u WHERE r.status = 'pending_dsym' "
    "UNION ALL SELECT u, r.id, r.received_at, false, true "
    "FROM reports r, unnest(r.unwind_uuids) u WHERE r.unwind_uuids <> '{}' "
    "AND r.status IN ('processed', 'pending_dsym')), "
    "m AS (SELECT u, count(DISTINCT w.id) AS n, min(w.received_at) AS first_r, "
    "max(w.received_at) AS last_r, (array_agg(w.id))[1] AS sample, bool_or(w.dbg) AS dbg, "
    "bool_or(w.unw) AS unw FROM w GROUP BY u ORDER BY n DESC, u LIMIT $1::int) "
    "SELECT upper(m.u::text), (SELECT img->>'name' FROM reports r, "
    "json_array_elements(r.symbolicated::json->'images') img WHERE r.id = m.sample "
    "AND upper(img->>'uuid') = upper(m.u::text) LIMIT 1), m.n, "
    STORE_TS("m.first_r") ", " STORE_TS("m.last_r") ", m.dbg, m.unw "
    "FROM m ORDER BY m.n DESC, m.u"};

typedef struct {
    const char *limit;
    arena *a;
    store_dsym_missing **out;
    size_t *n;
} missing_ctx;

static err_code do_dsyms_missing(pconn *c, void *vctx, err_info *err)
{
    missing_ctx *m = vctx;
    const char *values[1] = {m->limit};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSYMS_MISSING, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res);
    store_dsym_missing *rows = arena_alloc_array(m->a, n ? n : 1, sizeof *rows, err);
    if (rows == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        int row = (int)i;
        rows[i].uuid = store_dup(m->a, res, row, 0, err, &rc);
        rows[i].name = store_dup(m->a, res, row, 1, err, &rc);
        rows[i].reports = strtoll(PQgetvalue(res, row, 2), NULL, 10);
        rows[i].first_received = store_dup(m->a, res, row, 3, err, &rc);
        rows[i].last_received = store_dup(m->a, res, row, 4, err, &rc);
        rows[i].needs_debug_info = PQgetvalue(res, row, 5)[0] == 't';
        rows[i].needs_unwind_info = PQgetvalue(res, row, 6)[0] == 't';
    }
    PQclear(res);
    if (rc == ERR_OK) {
        *m->out = rows;
        *m->n = n;
    }
    return rc;
}

err_code store_dsyms_missing(store_dsym_missing **out, size_t *n, store *s, unsigned limit,
                             arena *a, err_info *err)
{
    char limit_s[16];
    snprintf(limit_s, sizeof limit_s, "%u", limit);
    missing_ctx m = {limit_s, a, out, n};
    *out = NULL;
    *n = 0;
    return store_run(s, do_dsyms_missing, &m, err);
}

/* ---- rows with their stored symcaches ----------------------------------------------------------- */

static err_code do_blobs_get(pconn *c, void *vctx, err_info *err)
{
    void **a = vctx;
    store_dsym_blobs *out = a[0];
    const char *values[1] = {a[1]};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSYM_BLOBS, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no debug file with uuid %s", values[0]);
    }
    store_copy(out->symcache_sha256, sizeof out->symcache_sha256, res, 0, 0);
    out->symcache_bytes = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    store_copy(out->original_sha256, sizeof out->original_sha256, res, 0, 2);
    store_copy(out->original_name, sizeof out->original_name, res, 0, 3);
    store_copy(out->arch, sizeof out->arch, res, 0, 4);
    out->has_dwarf = PQgetvalue(res, 0, 5)[0] == 't';
    PQclear(res);
    return ERR_OK;
}

err_code store_dsym_blobs_get(store_dsym_blobs *out, store *s, const char *uuid, err_info *err)
{
    void *ctx[2] = {out, (void *)uuid};
    memset(out, 0, sizeof *out);
    err_code rc = store_run(s, do_blobs_get, ctx, err);
    if (rc != ERR_OK && store_refused_value(err))   /* not a UUID: nothing can have it */
        rc = err_set(err, ERR_NOT_FOUND, "no debug file with uuid %.40s", uuid);
    return rc;
}

static err_code do_touch(pconn *c, void *vctx, err_info *err)
{
    const char *values[1] = {vctx};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSYM_TOUCH, 1, values, NULL, NULL, err);
    PQclear(res);
    return rc;
}

err_code store_dsym_touch(store *s, const char *uuid, err_info *err)
{
    return store_run(s, do_touch, (void *)uuid, err);
}

typedef struct {
    store_dsym_record *rows;
    size_t n;
} record_ctx;

static err_code do_record(pconn *c, void *vctx, err_info *err)
{
    record_ctx *x = vctx;
    err_code rc = store_command(c, "BEGIN", "recording debug files", err);
    for (size_t i = 0; rc == ERR_OK && i < x->n; i++) {
        store_dsym_record *d = &x->rows[i];
        store_dsym *row = &d->row;
        char dwarf[24], symc[24], funcs[16];
        snprintf(dwarf, sizeof dwarf, "%lld", (long long)row->dwarf_bytes);
        snprintf(symc, sizeof symc, "%lld", (long long)row->symcache_bytes);
        snprintf(funcs, sizeof funcs, "%ld", (long)row->functions);
        const char *values[10] = {row->uuid, row->arch, row->name, row->has_dwarf ? "t" : "f",
                                  dwarf, symc, funcs, row->sha256, d->original_sha256,
                                  d->original_name};
        PGresult *res;
        rc = store_exec(&res, c, &ST_DSYM_INSERT, 10, values, NULL, NULL, err);
        if (rc != ERR_OK)
            break;
        d->outcome = PQntuples(res) == 1 ? STORE_DSYM_CREATED : STORE_DSYM_EXISTS;
        if (d->outcome == STORE_DSYM_EXISTS && d->checked) {
            /* still the row the caller merged with? (locked until COMMIT) */
            PQclear(res);
            rc = store_exec(&res, c, &ST_DSYM_LOCK, 1, values, NULL, NULL, err);
            if (rc != ERR_OK)
                break;
            bool same = d->expect_row && PQntuples(res) == 1 &&
                        strcmp(PQgetvalue(res, 0, 0), d->expect_sha256 ? d->expect_sha256 : "") == 0;
            PQclear(res);
            if (!same) {
                d->outcome = STORE_DSYM_CONFLICT;
                continue;
            }
            if (d->action == STORE_DSYM_REPLACE_SYMCACHE) {
                const char *sv[3] = {row->uuid, row->sha256, symc};
                rc = store_exec(&res, c, &ST_DSYM_REPLACE_SYMCACHE, 3, sv, NULL, NULL, err);
                if (rc != ERR_OK)
                    break;
                d->outcome = STORE_DSYM_UPGRADED;
                dsym_from_row(row, res, 0);
                PQclear(res);
                store_blob_file sym = {row->sha256, d->symcache_path};
                rc = store_blob_put(c, &sym, err);
                continue;
            }
            if (d->action == STORE_DSYM_REPLACE_ROW) {
                rc = store_exec(&res, c, &ST_DSYM_REPLACE_ROW, 10, values, NULL, NULL, err);
                if (rc != ERR_OK)
                    break;
                d->outcome = STORE_DSYM_UPGRADED;
            } else {
                rc = store_exec(&res, c, &ST_DSYM_GET, 1, values, NULL, NULL, err);
                if (rc != ERR_OK)
                    break;
            }
        } else if (d->outcome == STORE_DSYM_EXISTS && row->has_dwarf) {
            /* Known UUID: maybe an upgrade (ST_DSYM_UPGRADE). */
            PQclear(res);
            rc = store_exec(&res, c, &ST_DSYM_UPGRADE, 10, values, NULL, NULL, err);
            if (rc != ERR_OK)
                break;
            if (PQntuples(res) == 1)
                d->outcome = STORE_DSYM_UPGRADED;
        }
        if (d->outcome != STORE_DSYM_EXISTS) {
            dsym_from_row(row, res, 0);
            PQclear(res);
            if (d->hidden_names > 0 || d->hidden_max > 0 || (d->revealed_by && *d->revealed_by) ||
                d->outcome == STORE_DSYM_UPGRADED) {
                char hn[16], hm[16];
                snprintf(hn, sizeof hn, "%u", d->hidden_names);
                snprintf(hm, sizeof hm, "%u", d->hidden_max);
                const char *hv[4] = {row->uuid, hn, hm, d->revealed_by ? d->revealed_by : ""};
                rc = store_exec(NULL, c, &ST_DSYM_HIDDEN, 4, hv, NULL, NULL, err);
                if (rc != ERR_OK)
                    break;
            }
            /* The row is written; its blobs follow in this transaction (the foreign keys
             * are checked at COMMIT). */
            store_blob_file sym = {row->sha256, d->symcache_path};
            store_blob_file orig = {d->original_sha256, d->original_path};
            rc = store_blob_put(c, &sym, err);
            if (rc == ERR_OK)
                rc = store_blob_put(c, &orig, err);
            continue;
        }
        PQclear(res);
        /* Already there: answer with the stored record (idempotent re-upload). */
        rc = store_exec(&res, c, &ST_DSYM_GET, 1, values, NULL, NULL, err);
        if (rc != ERR_OK)
            break;
        if (PQntuples(res) == 1)
            dsym_from_row(row, res, 0);
        PQclear(res);
    }
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "recording debug files", err);
    return rc;   /* store_release rolls back a transaction left open by an error */
}

err_code store_dsyms_record(store_dsym_record *rows, size_t n, store *s, err_info *err)
{
    record_ctx x = {rows, n};
    return store_run(s, do_record, &x, err);
}

typedef struct {
    bool *done;
    const char *uuid, *expect;
    const store_blob_file *file;
    const char *bytes, *functions;
    const char *hidden_names, *hidden_max, *revealed_by;   /* replace only */
} replace_ctx;

/* One transaction: `sql` points the row at x->file's blob only if the row is still what the
 * caller saw (one row updated), then the blob is written; *x->done says whether it was. */
static err_code swap_symcache(pconn *c, replace_ctx *x, const char *what, const char *sql,
                              int nparams, const char *const *values, err_info *err)
{
    *x->done = false;
    err_code rc = store_command(c, "BEGIN", what, err);
    if (rc != ERR_OK)
        return rc;
    PGresult *res;
    rc = store_exec_sql(&res, c, what, sql, nparams, values, 0, err);
    if (rc != ERR_OK)
        return rc;
    bool updated = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    if (updated)
        rc = store_blob_put(c, x->file, err);
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", what, err);
    if (rc == ERR_OK)
        *x->done = updated;
    return rc;
}

/* The row gets the new symcache's hidden names with it (the queue and the call site sweep
 * read hidden_names: a symcache revealed by a rebuild must release what waits for it, one
 * hidden again must hold new reports back). */
static err_code do_replace(pconn *c, void *vctx, err_info *err)
{
    replace_ctx *x = vctx;
    /* no file: the symcache stays, only hidden-name columns that say otherwise change */
    const char *values[8] = {x->uuid, x->expect, x->file ? x->file->sha256 : "", x->bytes,
                             x->functions, x->hidden_names, x->hidden_max, x->revealed_by};
    *x->done = false;
    err_code rc = store_command(c, "BEGIN", "replacing a symcache", err);
    PGresult *res = NULL;
    if (rc == ERR_OK && x->file != NULL)
        rc = store_exec_sql(&res, c, "replacing a symcache",
                            "UPDATE dsyms SET sha256 = $3, symcache_blob = $3, "
                            "symcache_bytes = $4, functions = $5, hidden_names = $6, "
                            "hidden_max = $7, revealed_by = nullif($8, '')::uuid "
                            "WHERE uuid = $1::uuid AND symcache_blob IS NOT DISTINCT FROM "
                            "nullif($2, '')", 8, values, 0, err);
    else if (rc == ERR_OK)
        rc = store_exec_sql(&res, c, "correcting hidden names",
                            "UPDATE dsyms SET hidden_names = $3::int, hidden_max = $4::int, "
                            "revealed_by = nullif($5, '')::uuid WHERE uuid = $1::uuid "
                            "AND symcache_blob IS NOT DISTINCT FROM nullif($2, '') "
                            "AND (hidden_names, hidden_max, revealed_by) IS DISTINCT FROM "
                            "($3::int, $4::int, nullif($5, '')::uuid)", 5,
                            (const char *const[]){x->uuid, x->expect, x->hidden_names,
                                                  x->hidden_max, x->revealed_by},
                            0, err);
    if (rc != ERR_OK)
        return rc;
    bool updated = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    if (!updated)
        return store_command(c, "ROLLBACK", "replacing a symcache", err);
    if (x->file != NULL)
        rc = store_blob_put(c, x->file, err);
    /* nothing hidden: what waited for this dSYM goes back to the queue (store_dsym_reveal) */
    if (rc == ERR_OK && strcmp(x->hidden_names, "0") == 0)
        rc = store_exec_sql(NULL, c, "releasing reports", "UPDATE reports SET status = "
                            "'received', updated_at = now() WHERE status = 'pending_dsym' AND "
                            "missing_uuids && ARRAY[$1::uuid]", 1, values, 0, err);
    if (rc == ERR_OK && strcmp(x->hidden_names, "0") == 0)
        rc = store_exec_sql(NULL, c, "releasing call sites", "UPDATE callsite_pending SET "
                            "status = 'ready' WHERE status = 'waiting' AND missing_uuids && "
                            "ARRAY[$1::uuid]", 1, values, 0, err);
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "replacing a symcache", err);
    if (rc == ERR_OK)
        *x->done = true;
    return rc; /* on error store_release rolls the transaction back */
}

err_code store_dsym_symcache_replace(bool *replaced, store *s, const char *uuid,
                                     const char *expect_sha256, const store_blob_file *file,
                                     int64_t symcache_bytes, int32_t functions,
                                     const store_dsym_hidden *hidden, err_info *err)
{
    char bytes[24], funcs[16], hn[16], hm[16];
    snprintf(bytes, sizeof bytes, "%lld", (long long)symcache_bytes);
    snprintf(funcs, sizeof funcs, "%ld", (long)functions);
    snprintf(hn, sizeof hn, "%u", hidden->names);
    snprintf(hm, sizeof hm, "%u", hidden->max);
    replace_ctx x = {replaced, uuid, expect_sha256 ? expect_sha256 : "", file, bytes, funcs,
                     hn, hm, hidden->revealed_by ? hidden->revealed_by : ""};
    return store_run(s, do_replace, &x, err);
}

err_code store_dsym_hidden_correct(bool *corrected, store *s, const char *uuid,
                                   const char *expect_sha256, const store_dsym_hidden *hidden,
                                   err_info *err)
{
    char hn[16], hm[16];
    snprintf(hn, sizeof hn, "%u", hidden->names);
    snprintf(hm, sizeof hm, "%u", hidden->max);
    replace_ctx x = {corrected, uuid, expect_sha256 ? expect_sha256 : "", NULL, "", "",
                     hn, hm, hidden->revealed_by ? hidden->revealed_by : ""};
    return store_run(s, do_replace, &x, err);
}

static err_code do_backfill(pconn *c, void *vctx, err_info *err)
{
    replace_ctx *x = vctx;
    const char *values[2] = {x->uuid, x->file->sha256};
    return swap_symcache(c, x, "backfilling a symcache",
              "UPDATE dsyms SET symcache_blob = $2 WHERE uuid = $1::uuid "
              "AND symcache_blob IS NULL AND sha256 = $2",
              2, values, err);
}

err_code store_dsym_symcache_backfill(bool *attached, store *s, const char *uuid,
                                      const store_blob_file *file, err_info *err)
{
    replace_ctx x = {.done = attached, .uuid = uuid, .file = file};
    return store_run(s, do_backfill, &x, err);
}

typedef struct {
    size_t limit;
    arena *a;
    void *out;
    size_t *n;
} list_ctx;

static err_code do_unstored(pconn *c, void *vctx, err_info *err)
{
    list_ctx *x = vctx;
    char limit[24];
    snprintf(limit, sizeof limit, "%zu", x->limit);
    const char *values[1] = {limit};
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "listing debug files to backfill",
                       "SELECT upper(uuid::text), sha256 FROM dsyms WHERE symcache_blob IS NULL "
                       "ORDER BY uploaded_at LIMIT $1",
                       1, values, 0, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res);
    store_dsym_unstored *list = arena_alloc_array(x->a, n ? n : 1, sizeof *list, err);
    if (!list) {
        PQclear(res);
        return ERR_TOO_LARGE;
    }
    for (size_t i = 0; i < n; i++) {
        store_copy(list[i].uuid, sizeof list[i].uuid, res, (int)i, 0);
        store_copy(list[i].sha256, sizeof list[i].sha256, res, (int)i, 1);
    }
    PQclear(res);
    *(store_dsym_unstored **)x->out = list;
    *x->n = n;
    return ERR_OK;
}

err_code store_dsyms_unstored(store_dsym_unstored **out, size_t *n, store *s, size_t limit,
                              arena *a, err_info *err)
{
    list_ctx x = {limit, a, out, n};
    *out = NULL;
    *n = 0;
    return store_run(s, do_unstored, &x, err);
}

static err_code do_rebuildable(pconn *c, void *vctx, err_info *err)
{
    list_ctx *x = vctx;
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "listing debug files to rebuild",
                       "SELECT upper(uuid::text), coalesce(symcache_blob, ''), original_blob, "
                       "coalesce(original_name, '') FROM dsyms WHERE original_blob IS NOT NULL "
                       "ORDER BY original_blob, uuid",
                       0, NULL, 0, err);
    if (rc != ERR_OK)
        return rc;
    rc = store_dsym_originals_read(x->out, x->n, res, x->a, err);
    PQclear(res);
    return rc;
}

err_code store_dsym_originals_read(store_dsym_original **out, size_t *n, PGresult *res, arena *a,
                                   err_info *err)
{
    size_t rows = (size_t)PQntuples(res);
    store_dsym_original *list = arena_alloc_array(a, rows ? rows : 1, sizeof *list, err);
    if (!list)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < rows; i++) {
        store_copy(list[i].uuid, sizeof list[i].uuid, res, (int)i, 0);
        store_copy(list[i].symcache_sha256, sizeof list[i].symcache_sha256, res, (int)i, 1);
        store_copy(list[i].original_sha256, sizeof list[i].original_sha256, res, (int)i, 2);
        store_copy(list[i].original_name, sizeof list[i].original_name, res, (int)i, 3);
    }
    *out = list;
    *n = rows;
    return ERR_OK;
}

err_code store_dsyms_rebuildable(store_dsym_original **out, size_t *n, store *s, arena *a,
                                 err_info *err)
{
    list_ctx x = {0, a, out, n};
    *out = NULL;
    *n = 0;
    return store_run(s, do_rebuildable, &x, err);
}
