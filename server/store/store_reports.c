/*
 * store_reports - the reports table (see store_reports.h): intake's insert, the API's reads.
 * A report id from a client goes through store_report_id_norm, the one rule, before any SQL.
 * The work queue's reads and writes of the same rows are in store_queue.c.
 */
#include "store/store_reports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

static const store_stmt ST_REPORT_INSERT = {
    "report_insert", "INSERT INTO reports (status, format, content_type, raw, raw_bytes, "
                     "parsed, app, app_version, os_version, missing_uuids, error, "
                     "project_id) "
                     "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, "
                     "coalesce((SELECT array_agg(u::uuid) "
                     "FROM jsonb_array_elements_text($10::jsonb) u), '{}'), $11, $12::int8) "
                     "RETURNING id::text"};
static const store_stmt ST_REPORT_GET = {
    "report_get", "SELECT id::text, status, format, content_type, " STORE_TS("received_at") ", "
                  STORE_TS("updated_at") ", raw_bytes, parsed::text, app, app_version, "
                  "os_version, (SELECT coalesce(json_agg(upper(u::text)), '[]') "
                  "FROM unnest(missing_uuids) u)::text, error, "
                  "coalesce(issue_id, 0)::text, fingerprint, kind, hardware_model, "
                  "symbolicated, " STORE_TS("processed_at") ", project_id::text, "
                  "(SELECT coalesce(json_agg(upper(u::text)), '[]') "
                  "FROM unnest(unwind_uuids) u)::text "
                  "FROM reports WHERE id = $1::uuid"};
static const store_stmt ST_REPORT_COUNT = {
    "report_count", "SELECT count(*) FROM reports WHERE ($1::text IS NULL OR status = $1)"};

typedef struct {
    const store_report_new *in;
    char *id_out;
    const char *id;
    const char *status;
    store_report *out;
    int64_t *count;
    const uint8_t **raw;
    size_t *raw_len;
    const char **content_type;
    arena *a;
} report_ctx;

static err_code do_report_insert(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const store_report_new *in = r->in;
    char raw_bytes[24], project[24];
    snprintf(raw_bytes, sizeof raw_bytes, "%zu", in->report_len ? in->report_len : in->raw_len);
    snprintf(project, sizeof project, "%lld",
             (long long)(in->project_id ? in->project_id : STORE_PROJECT_DEFAULT));
    const char *values[12] = {in->status,     in->format,      in->content_type,
                              (const char *)in->raw, raw_bytes, in->parsed_json,
                              in->app,        in->app_version, in->os_version,
                              in->missing_uuids_json, in->error, project};
    int lengths[12] = {0};
    int formats[12] = {0};
    lengths[3] = (int)in->raw_len;
    formats[3] = 1;   /* bytea travels as binary: no escaping, no doubling */
    if (in->raw_len == 0)
        values[3] = "";   /* a NULL pointer would mean SQL NULL */
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_REPORT_INSERT, 12, values, lengths, formats, err);
    if (rc != ERR_OK)
        return rc;
    store_copy(r->id_out, 37, res, 0, 0);
    PQclear(res);
    return ERR_OK;
}

err_code store_report_insert(char id_out[37], store *s, const store_report_new *r, err_info *err)
{
    if (r->raw_len > 0x7fffffff)
        return err_set(err, ERR_TOO_LARGE, "report of %zu bytes is too large to store", r->raw_len);
    report_ctx ctx = {.in = r, .id_out = id_out};
    id_out[0] = '\0';
    return store_run(s, do_report_insert, &ctx, err);
}

bool store_report_id_norm(char out[37], const char *id)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = strlen(id), k = 0;
    out[0] = '\0';
    if (n != 36 && n != 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash_here = n == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
        if (dash_here) {
            if (id[i] != '-')
                return false;
            continue;
        }
        char ch = id[i];
        int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (v < 0)
            return false;
        if (k == 8 || k == 13 || k == 18 || k == 23)
            out[k++] = '-';
        out[k++] = digits[v];
    }
    out[k] = '\0';
    return true;
}

static err_code do_report_get(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const char *values[1] = {r->id};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_REPORT_GET, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no report with id %s", r->id);
    }
    store_report *o = r->out;
    store_copy(o->id, sizeof o->id, res, 0, 0);
    o->status = store_dup(r->a, res, 0, 1, err, &rc);
    o->format = store_dup(r->a, res, 0, 2, err, &rc);
    o->content_type = store_dup(r->a, res, 0, 3, err, &rc);
    o->received_at = store_dup(r->a, res, 0, 4, err, &rc);
    o->updated_at = store_dup(r->a, res, 0, 5, err, &rc);
    o->raw_bytes = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
    o->parsed_json = store_dup(r->a, res, 0, 7, err, &rc);
    o->app = store_dup(r->a, res, 0, 8, err, &rc);
    o->app_version = store_dup(r->a, res, 0, 9, err, &rc);
    o->os_version = store_dup(r->a, res, 0, 10, err, &rc);
    o->missing_uuids_json = store_dup(r->a, res, 0, 11, err, &rc);
    o->error = store_dup(r->a, res, 0, 12, err, &rc);
    o->issue_id = strtoll(PQgetvalue(res, 0, 13), NULL, 10);
    o->fingerprint = store_dup(r->a, res, 0, 14, err, &rc);
    o->kind = store_dup(r->a, res, 0, 15, err, &rc);
    o->hardware_model = store_dup(r->a, res, 0, 16, err, &rc);
    o->symbolicated_json = store_dup(r->a, res, 0, 17, err, &rc);
    o->processed_at = store_dup(r->a, res, 0, 18, err, &rc);
    o->project_id = strtoll(PQgetvalue(res, 0, 19), NULL, 10);
    o->unwind_uuids_json = store_dup(r->a, res, 0, 20, err, &rc);
    PQclear(res);
    return rc;
}

err_code store_report_get(store_report *out, store *s, const char *id, arena *a, err_info *err)
{
    char norm[37];
    memset(out, 0, sizeof *out);
    if (!store_report_id_norm(norm, id))
        return err_set(err, ERR_NOT_FOUND, "no report with id %.64s", id);
    report_ctx ctx = {.id = norm, .out = out, .a = a};
    return store_run(s, do_report_get, &ctx, err);
}

static err_code do_report_raw(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const char *values[1] = {r->id};
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "reading a report",
                                 "SELECT raw, content_type FROM reports WHERE id = $1::uuid", 1,
                                 values, 1, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no report with id %s", r->id);
    }
    size_t len = (size_t)PQgetlength(res, 0, 0);
    uint8_t *raw = arena_alloc(r->a, len + 1, err);
    if (raw != NULL) {
        memcpy(raw, PQgetvalue(res, 0, 0), len);
        raw[len] = '\0';
    }
    *r->content_type = store_dup(r->a, res, 0, 1, err, &rc);
    PQclear(res);
    if (raw == NULL || rc != ERR_OK)
        return ERR_TOO_LARGE;
    *r->raw = raw;
    *r->raw_len = len;
    return ERR_OK;
}

err_code store_report_raw_get(const uint8_t **raw, size_t *len, const char **content_type,
                              store *s, const char *id, arena *a, err_info *err)
{
    char norm[37];
    *raw = NULL;
    *len = 0;
    *content_type = NULL;
    if (!store_report_id_norm(norm, id))
        return err_set(err, ERR_NOT_FOUND, "no report with id %.64s", id);
    report_ctx ctx = {.id = norm, .raw = raw, .raw_len = len, .content_type = content_type,
                      .a = a};
    return store_run(s, do_report_raw, &ctx, err);
}

static err_code do_reports_count(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const char *values[1] = {r->status};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_REPORT_COUNT, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *r->count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return ERR_OK;
}

err_code store_reports_count(int64_t *out, store *s, const char *status, err_info *err)
{
    report_ctx ctx = {.status = status, .count = out};
    *out = 0;
    return store_run(s, do_reports_count, &ctx, err);
}
