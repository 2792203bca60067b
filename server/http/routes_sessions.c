/*
 * routes_sessions - release health in:
 *   POST /api/v1/sessions   {"sessions":[{sid,did,release,environment,started,duration_s,
 *                           status,errors}]} (ingest scope, gzip or identity) -> 202
 * A batch is counted all or nothing (server/ingest/sessions.h gives the rules); a batch sent
 * again is counted once. Errors name the field and its index:
 * {"error":{"code","message","field":"sessions[3].status"}}.
 */
#include <stdlib.h>
#include <string.h>

#include "http/http_internal.h"
#include "ingest/ingest.h"
#include "ingest/sessions.h"
#include "store/store_projects.h"

err_code request_project_arg(int64_t *out, http_request *r)
{
    const char *p = request_arg(r, "project");
    *out = STORE_PROJECT_DEFAULT;
    if (p == NULL)
        return ERR_OK;
    store_project found;
    char *end;
    long long v = strtoll(p, &end, 10);
    err_code rc = *end == '\0' && v > 0 ? store_project_find_id(&found, r->srv->store, v, &r->err)
                  : store_project_find_slug(&found, r->srv->store, p, &r->err);
    if (rc == ERR_NOT_FOUND)
        return err_set(&r->err, ERR_INVALID, "project: no project with id or slug \"%.64s\"", p);
    if (rc != ERR_OK)
        return rc;
    *out = found.id;
    return ERR_OK;
}

enum MHD_Result handle_sessions_post(http_request *r)
{
    char field[SESSIONS_FIELD_MAX] = "";
    const char *type = request_media_type(r, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *enc = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    int64_t project;
    if (request_project_arg(&project, r) != ERR_OK)
        return respond_field_error(r, "project");
    if (type[0] != '\0' && strcmp(type, "application/json") != 0) {
        err_set(&r->err, ERR_UNSUPPORTED, "Content-Type: sessions are application/json, not "
                "%.64s", type);
        return respond_field_error(r, "Content-Type");
    }
    const uint8_t *json = r->mem ? r->mem : (const uint8_t *)"";
    size_t len = (size_t)r->body_bytes;
    /* 100,000 sessions of ~200 bytes of JSON: more than a report */
    uint64_t max = r->srv->cfg->max_report_bytes * 8;
    if (strcmp(enc, "gzip") == 0) {
        uint8_t *plain;
        if (ingest_gunzip(&plain, &len, json, len, max, "the sessions batch", r->a, &r->err) !=
            ERR_OK) {
            err_prefix(&r->err, "body");
            return respond_field_error(r, "body");
        }
        json = plain;
    } else if (enc[0] != '\0' && strcmp(enc, "identity") != 0) {
        err_set(&r->err, ERR_UNSUPPORTED, "Content-Encoding: gzip or identity, not %.64s", enc);
        return respond_field_error(r, "Content-Encoding");
    }
    if (len == 0) {
        err_set(&r->err, ERR_INVALID, "body: empty (sessions are a JSON object)");
        return respond_field_error(r, "body");
    }
    session_update *u;
    size_t n;
    sessions_result res;
    if (sessions_parse_json(&u, &n, field, (const char *)json, len, r->a, &r->err) != ERR_OK)
        return respond_field_error(r, field);
    /* The request's database deadline (fixed when it was read) grows with the batch: ~20 us
     * a session in Postgres on a quiet 2-core box, 100 us allowed. Parsing a batch of
     * 100,000 is CPU work that may have used up the request's budget on a loaded machine:
     * the database calls still get at least one full budget from now, never less than what
     * was left. */
    double deadline = store_deadline_get();
    double fresh = store_now_ms() + r->srv->cfg->db_timeout_ms;
    if (deadline > 0)
        store_deadline_set((deadline > fresh ? deadline : fresh) + (double)n / 10);
    else
        store_deadline_begin(r->srv->cfg->db_timeout_ms + (unsigned)(n / 10));
    if (sessions_ingest(&res, field, r->srv->store, project, u, n, "sessions", 0, &r->err) !=
            ERR_OK)
        return respond_field_error(r, field);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kuint(&w, "accepted", res.accepted);
    jsonw_kuint(&w, "ignored", res.ignored);
    jsonw_object_end(&w);
    return respond_json(r, 202, &body);
}
