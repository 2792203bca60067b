/*
 * store_chunks - upload_chunks and dif_assemblies (see store_chunks.h, migration 0009).
 */
#include "store/store_chunks.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "store/store_internal.h"

static const store_stmt ST_CHUNK_PUT = {
    "chunk_put", "INSERT INTO upload_chunks (sha1, gzip, bytes, data) VALUES ($1, $2, $3, $4) "
                 "ON CONFLICT (sha1) DO NOTHING RETURNING 1"};
/* A chunk an assemble request counts on must not expire before the assembly reads it: one
 * asked about is kept another expiry period (touched at most every 5 minutes). */
static const store_stmt ST_CHUNK_SIZES = {
    "chunk_sizes", "WITH touched AS (UPDATE upload_chunks SET created_at = now() "
                   "WHERE sha1 = ANY($1::text[]) AND created_at < now() - interval '5 minutes') "
                   "SELECT sha1, bytes FROM upload_chunks WHERE sha1 = ANY($1::text[])"};
/* What an assembled file left, still stored: a debug file, or (arch "any") an App Store
 * dSYM's UUID map or BCSymbolMap. An "ok" row without it is started over (expired). */
#define ASSEMBLY_STORED                                                                      \
    "(EXISTS (SELECT 1 FROM dsyms d WHERE d.uuid = a.uuid) OR (a.arch = 'any' AND "          \
    "(EXISTS (SELECT 1 FROM uuid_maps u WHERE u.uuid = a.uuid) OR "                           \
    "EXISTS (SELECT 1 FROM symbol_maps m WHERE m.uuid = a.uuid))))"
/* The columns of store_assembly, then its staleness ($2 = stale_s, $3 = error_s). */
#define ASSEMBLY_SELECT                                                                      \
    "SELECT state, coalesce(detail, ''), name, coalesce(upper(uuid::text), ''), "            \
    "coalesce(arch, ''), coalesce(has_dwarf, false), "                                       \
    "(state = 'assembling' AND updated_at < now() - $2::int * interval '1 second') OR "      \
    "(state = 'error' AND updated_at < now() - $3::int * interval '1 second') OR "           \
    "(state = 'ok' AND NOT " ASSEMBLY_STORED ") "                                        \
    "FROM dif_assemblies a WHERE sha1 = $1"
static const store_stmt ST_ASSEMBLY_GET = {"assembly_get", ASSEMBLY_SELECT};
/* Claims a file nobody assembles: a new row, or a stale one started over. */
static const store_stmt ST_ASSEMBLY_BEGIN = {
    "assembly_begin",
    "INSERT INTO dif_assemblies AS a (sha1, state, name, project) "
    "VALUES ($1, 'assembling', $4, $5) ON CONFLICT (sha1) DO UPDATE SET "
    "state = 'assembling', detail = NULL, name = EXCLUDED.name, project = EXCLUDED.project, "
    "uuid = NULL, arch = NULL, has_dwarf = NULL, updated_at = now() "
    "WHERE (a.state = 'assembling' AND a.updated_at < now() - $2::int * interval '1 second') "
    "OR (a.state = 'error' AND a.updated_at < now() - $3::int * interval '1 second') "
    "OR (a.state = 'ok' AND NOT " ASSEMBLY_STORED ") "
    "RETURNING 1"};
static const store_stmt ST_ASSEMBLY_FINISH = {
    "assembly_finish", "UPDATE dif_assemblies SET state = $2, detail = $3, uuid = $4::uuid, "
                       "arch = $5, has_dwarf = $6, updated_at = now() WHERE sha1 = $1"};
static const store_stmt ST_CHUNKS_EXPIRE = {
    "chunks_expire", "DELETE FROM upload_chunks "
                     "WHERE created_at < now() - $1::int * interval '1 second'"};
static const store_stmt ST_ASSEMBLIES_EXPIRE = {
    "assemblies_expire",
    "DELETE FROM dif_assemblies a WHERE "
    "(state = 'error' AND updated_at < now() - interval '1 day') OR "
    "(state = 'assembling' AND updated_at < now() - interval '1 day') OR "
    "(state = 'ok' AND NOT " ASSEMBLY_STORED ")"};

/* ---- chunks ---------------------------------------------------------------------------- */

typedef struct {
    bool *created;
    const char *sha1;
    bool gzip;
    uint32_t bytes;
    const uint8_t *data;
    size_t len;
} put_ctx;

static err_code do_put(pconn *c, void *vctx, err_info *err)
{
    put_ctx *x = vctx;
    char bytes_s[16];
    snprintf(bytes_s, sizeof bytes_s, "%u", (unsigned)x->bytes);
    const char *values[4] = {x->sha1, x->gzip ? "t" : "f", bytes_s, (const char *)x->data};
    const int lengths[4] = {0, 0, 0, (int)x->len};
    const int formats[4] = {0, 0, 0, 1};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_CHUNK_PUT, 4, values, lengths, formats, err);
    if (rc != ERR_OK)
        return rc;
    *x->created = PQntuples(res) == 1;
    PQclear(res);
    return ERR_OK;
}

err_code store_chunk_put(bool *created, store *s, const char *sha1, bool gzip, uint32_t bytes,
                         const uint8_t *data, size_t len, err_info *err)
{
    *created = false;
    if (len > INT32_MAX)
        return err_set(err, ERR_TOO_LARGE, "chunk %s of %zu bytes is too large to store", sha1,
                       len);
    put_ctx x = {created, sha1, gzip, bytes, data, len};
    return store_run(s, do_put, &x, err);
}

typedef struct {
    int64_t *sizes;
    const char *const *sha1s;
    size_t n;
} sizes_ctx;

static err_code do_sizes(pconn *c, void *vctx, err_info *err)
{
    sizes_ctx *x = vctx;
    /* a text[] literal: the SHA-1s are hex, nothing to quote */
    char *list = xmalloc(x->n * 41 + 3);
    size_t at = 0;
    list[at++] = '{';
    for (size_t i = 0; i < x->n; i++) {
        if (i)
            list[at++] = ',';
        memcpy(list + at, x->sha1s[i], 40);
        at += 40;
    }
    list[at++] = '}';
    list[at] = '\0';
    const char *values[1] = {list};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_CHUNK_SIZES, 1, values, NULL, NULL, err);
    free(list);
    if (rc != ERR_OK)
        return rc;
    for (size_t i = 0; i < x->n; i++)
        x->sizes[i] = -1;
    for (int row = 0; row < PQntuples(res); row++) {
        const char *sha = PQgetvalue(res, row, 0);
        int64_t bytes = strtoll(PQgetvalue(res, row, 1), NULL, 10);
        for (size_t i = 0; i < x->n; i++)
            if (strcmp(x->sha1s[i], sha) == 0)
                x->sizes[i] = bytes;
    }
    PQclear(res);
    return ERR_OK;
}

err_code store_chunks_sizes(int64_t *sizes, store *s, const char *const *sha1s, size_t n,
                            err_info *err)
{
    if (n == 0)
        return ERR_OK;
    sizes_ctx x = {sizes, sha1s, n};
    return store_run(s, do_sizes, &x, err);
}

err_code store_chunks_fetch(store *s, const char *const *sha1s, size_t n, store_chunk_sink sink,
                            void *ctx, err_info *err)
{
    pconn *c;
    /* Not store_run: the sink has seen bytes by the time a connection could break. */
    err_code rc = store_acquire(&c, s, err);
    if (rc != ERR_OK)
        return rc;
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const char *values[1] = {sha1s[i]};
        /* binary results: the bytes as they are, gzip as one byte, bytes as int4 */
        PGresult *res = store_pq_params(c, "SELECT gzip, bytes, data FROM upload_chunks "
                                           "WHERE sha1 = $1", 1, values, NULL, NULL, 1);
        ExecStatusType st = PQresultStatus(res);
        if (st != PGRES_TUPLES_OK) {
            rc = store_translate(res, c, "fetching an upload chunk", err);
        } else if (PQntuples(res) != 1) {
            rc = err_set(err, ERR_NOT_FOUND, "chunk %s is not stored (it may have expired)",
                         sha1s[i]);
        } else if (PQgetlength(res, 0, 0) != 1 || PQgetlength(res, 0, 1) != 4) {
            rc = err_set(err, ERR_INTERNAL, "chunk %s: unexpected binary column sizes", sha1s[i]);
        } else {
            uint32_t be;
            memcpy(&be, PQgetvalue(res, 0, 1), 4);
            rc = sink(ctx, (const uint8_t *)PQgetvalue(res, 0, 2),
                      (size_t)PQgetlength(res, 0, 2), PQgetvalue(res, 0, 0)[0] != 0, ntohl(be),
                      err);
        }
        PQclear(res);
    }
    store_release(s, c);
    return rc;
}

/* ---- assemblies ------------------------------------------------------------------------ */

static void assembly_from_row(store_assembly *a, PGresult *res)
{
    store_copy(a->state, sizeof a->state, res, 0, 0);
    store_copy(a->detail, sizeof a->detail, res, 0, 1);
    store_copy(a->name, sizeof a->name, res, 0, 2);
    store_copy(a->uuid, sizeof a->uuid, res, 0, 3);
    store_copy(a->arch, sizeof a->arch, res, 0, 4);
    a->has_dwarf = PQgetvalue(res, 0, 5)[0] == 't';
    a->stale = PQgetvalue(res, 0, 6)[0] == 't';
}

typedef struct {
    store_assembly *out;
    bool *claimed;
    const char *sha1, *name, *project;
    unsigned stale_s, error_s;
} assembly_ctx;

static err_code read_assembly(pconn *c, assembly_ctx *x, err_info *err)
{
    char stale[16], error[16];
    snprintf(stale, sizeof stale, "%u", x->stale_s);
    snprintf(error, sizeof error, "%u", x->error_s);
    const char *values[3] = {x->sha1, stale, error};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_ASSEMBLY_GET, 3, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 1)
        assembly_from_row(x->out, res);
    else
        rc = err_set(err, ERR_NOT_FOUND, "no assembly of %s", x->sha1);
    PQclear(res);
    return rc;
}

static err_code do_assembly_get(pconn *c, void *vctx, err_info *err)
{
    return read_assembly(c, vctx, err);
}

err_code store_assembly_get(store_assembly *out, store *s, const char *sha1, unsigned stale_s,
                            unsigned error_s, err_info *err)
{
    memset(out, 0, sizeof *out);
    assembly_ctx x = {out, NULL, sha1, NULL, NULL, stale_s, error_s};
    return store_run(s, do_assembly_get, &x, err);
}

static err_code do_assembly_begin(pconn *c, void *vctx, err_info *err)
{
    assembly_ctx *x = vctx;
    char stale[16], error[16];
    snprintf(stale, sizeof stale, "%u", x->stale_s);
    snprintf(error, sizeof error, "%u", x->error_s);
    const char *values[5] = {x->sha1, stale, error, x->name, x->project};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_ASSEMBLY_BEGIN, 5, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *x->claimed = PQntuples(res) == 1;
    PQclear(res);
    if (*x->claimed)
        return ERR_OK;
    /* Someone else has it: what they have. The row was not deleted in between unless the
     * expiry ran (a day old): then this is simply "not found" and the client asks again. */
    return read_assembly(c, x, err);
}

err_code store_assembly_begin(bool *claimed, store_assembly *cur, store *s, const char *sha1,
                              const char *name, const char *project, unsigned stale_s,
                              unsigned error_s, err_info *err)
{
    memset(cur, 0, sizeof *cur);
    *claimed = false;
    assembly_ctx x = {cur, claimed, sha1, name, project, stale_s, error_s};
    return store_run(s, do_assembly_begin, &x, err);
}

typedef struct {
    const char *values[6];
} finish_ctx;

static err_code do_finish(pconn *c, void *vctx, err_info *err)
{
    finish_ctx *x = vctx;
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_ASSEMBLY_FINISH, 6, x->values, NULL, NULL, err);
    PQclear(res);
    return rc;
}

err_code store_assembly_finish(store *s, const char *sha1, const char *state, const char *detail,
                               const char *uuid, const char *arch, bool has_dwarf,
                               err_info *err)
{
    finish_ctx x = {{sha1, state, detail && *detail ? detail : NULL, uuid, arch,
                     uuid ? (has_dwarf ? "t" : "f") : NULL}};
    return store_run(s, do_finish, &x, err);
}

typedef struct {
    unsigned *chunks, *assemblies;
    unsigned max_age_s;
} expire_ctx;

static err_code do_expire(pconn *c, void *vctx, err_info *err)
{
    expire_ctx *x = vctx;
    char age[16];
    snprintf(age, sizeof age, "%u", x->max_age_s);
    const char *values[1] = {age};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_CHUNKS_EXPIRE, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *x->chunks = (unsigned)strtoul(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    rc = store_exec(&res, c, &ST_ASSEMBLIES_EXPIRE, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *x->assemblies = (unsigned)strtoul(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return ERR_OK;
}

err_code store_chunks_expire(unsigned *chunks, unsigned *assemblies, store *s,
                             unsigned max_age_s, err_info *err)
{
    *chunks = *assemblies = 0;
    expire_ctx x = {chunks, assemblies, max_age_s};
    return store_run(s, do_expire, &x, err);
}
