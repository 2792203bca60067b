/*
 * routes_reports - /api/v1/reports: POST a report (ingest_report_prepare: decode, parse, a
 * MetricKit payload split into one report per diagnostic; then store_intake's group commit,
 * the connection suspended meanwhile; 202 once every row is durable), GET one by id (JSON with the pipeline's results, or ?format=text
 * for Apple crash text symbolicated now) and GET its raw bytes. Report ids follow
 * store_report_id_norm (32 or 36 hex-digit forms). Shapes in docs/openapi.yaml.
 */
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "http/http_internal.h"
#include "http/metrics.h"
#include "ingest/ingest.h"
#include "store/store_reports.h"

/* One row's place in the request, the context of its commit callback. */
typedef struct {
    http_request *r;
    size_t i;
} intake_slot;

/* The group commit's verdict on one row, on a committer thread: record it; the last row's
 * verdict hands the connection back to libmicrohttpd, which calls handle_report_post again to
 * answer. `r` may be gone as soon as the connection is resumed. */
static void report_committed(void *ctx, err_code rc, const char *id, const err_info *err)
{
    intake_slot *slot = ctx;
    http_request *r = slot->r;
    if (rc == ERR_OK && id != NULL) { /* a row that was never queued has no id */
        memcpy(r->intake_ids[slot->i], id, sizeof r->intake_ids[0]);
    } else {
        int expected = 0;
        if (atomic_compare_exchange_strong(&r->intake_failed, &expected, 1)) {
            r->intake_rc = rc;
            r->err = *err;
        }
    }
    if (atomic_fetch_sub(&r->intake_pending, 1) == 1) {
        r->intake = INTAKE_DONE;
        MHD_resume_connection(r->conn);
    }
}

/* 202 {"id","status","format"}, and for a MetricKit payload of several diagnostics
 * "reports": [{"id","format"}...], one per stored report (id is the first). */
static enum MHD_Result report_accepted(http_request *r)
{
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "id", r->intake_ids[0]);
    jsonw_kstr(&w, "status", r->intake_rows[0].status);
    jsonw_kstr(&w, "format", r->intake_rows[0].format);
    if (r->nintake > 1) {
        jsonw_key(&w, "reports");
        jsonw_array_begin(&w);
        for (size_t i = 0; i < r->nintake; i++) {
            jsonw_object_begin(&w);
            jsonw_kstr(&w, "id", r->intake_ids[i]);
            jsonw_kstr(&w, "format", r->intake_rows[i].format);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
    }
    jsonw_object_end(&w);
    return respond_json(r, 202, &body);
}

/* POST /api/v1/reports. Runs on a libmicrohttpd thread and never waits there: after the parse
 * it suspends its own connection until the group commit answers (report_committed), then is
 * called again to send the 202. A transport that runs handlers on threads of its own, its
 * connection already suspended, must call it inline or commit with store_intake_insert. */
enum MHD_Result handle_report_post(http_request *r)
{
    if (r->intake == INTAKE_DONE) {
        if (r->intake_rc != ERR_OK) {
            metrics_report_rejected(r->intake_rc);
            return respond_err(r, &r->err);
        }
        for (size_t i = 0; i < r->nintake; i++)
            metrics_report_accepted();
        return report_accepted(r);
    }
    ingest_report_input in = {
        .content_type = request_media_type(r, MHD_HTTP_HEADER_CONTENT_TYPE),
        .content_encoding = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING),
        .body = r->mem ? r->mem : (const uint8_t *)"",
        .len = (size_t)r->body_bytes,
        .max_report_bytes = r->srv->cfg->max_report_bytes,
        .pipe = r->srv->pipe,
    };
    if (in.content_encoding[0] == '\0')
        in.content_encoding = NULL;
    err_code rc = ingest_report_prepare(&r->intake_rows, &r->nintake, &in, r->a, &r->err);
    intake_slot *slots = NULL;
    if (rc == ERR_OK) {
        r->intake_ids = arena_alloc_array(r->a, r->nintake, sizeof r->intake_ids[0], &r->err);
        slots = arena_alloc_array(r->a, r->nintake, sizeof *slots, &r->err);
        if (r->intake_ids == NULL || slots == NULL)
            rc = ERR_TOO_LARGE;
    }
    if (rc != ERR_OK) {
        metrics_report_rejected(rc);
        return respond_err(r, &r->err);
    }
    /* Suspended before the rows are queued: the commits may finish (and resume it) at once.
     * The 202 goes out only after every row's commit. */
    r->intake_rc = ERR_OK;
    atomic_store(&r->intake_failed, 0);
    atomic_store(&r->intake_pending, r->nintake);
    r->intake = INTAKE_WAITING;
    MHD_suspend_connection(r->conn);
    /* r may be resumed and gone once the last row is queued: nothing of it is read after */
    size_t n = r->nintake;
    store_intake *q = r->srv->intake;
    for (size_t i = 0; i < n; i++)
        slots[i] = (intake_slot){r, i};
    for (size_t i = 0; i < n; i++) {
        err_info err = {0};
        rc = store_intake_submit(q, &r->intake_rows[i], report_committed, &slots[i], &err);
        if (rc != ERR_OK) /* not queued: its verdict now, the others' when they come */
            report_committed(&slots[i], rc, NULL, &err);
    }
    return MHD_YES;
}

/* The wire format of a report (docs/openapi.yaml, Report). The stored JSON (the parsed and
 * the symbolicated model, missing UUIDs) was written by jsonw or Postgres: copied as it is. */
static void report_json(jsonw *w, const store_report *rep)
{
    jsonw_object_begin(w);
    jsonw_kstr(w, "id", rep->id);
    jsonw_kstr(w, "status", rep->status);
    jsonw_kstr(w, "format", rep->format);
    jsonw_kstr(w, "content_type", rep->content_type);
    jsonw_kstr(w, "received_at", rep->received_at);
    jsonw_kstr(w, "updated_at", rep->updated_at);
    jsonw_kint(w, "raw_bytes", rep->raw_bytes);
    jsonw_kstr(w, "app", rep->app);
    jsonw_kstr(w, "app_version", rep->app_version);
    jsonw_kstr(w, "os_version", rep->os_version);
    jsonw_kraw(w, "missing_uuids", rep->missing_uuids_json);
    jsonw_kstr(w, "error", rep->error);
    jsonw_kraw(w, "report", rep->parsed_json);
    jsonw_key(w, "issue_id");
    if (rep->issue_id)
        jsonw_int(w, rep->issue_id);
    else
        jsonw_null(w);
    jsonw_kstr(w, "fingerprint", rep->fingerprint);
    jsonw_kstr(w, "kind", rep->kind);
    jsonw_kstr(w, "hardware_model", rep->hardware_model);
    jsonw_kstr(w, "processed_at", rep->processed_at);
    jsonw_kraw(w, "symbolicated", rep->symbolicated_json);
    jsonw_object_end(w);
}

/* ?format=text: the symbolicated report as Apple crash text. */
static enum MHD_Result report_text(http_request *r)
{
    if (r->srv->pipe == NULL)
        return respond_error(r, ERR_UNSUPPORTED, "this server does not symbolicate");
    const uint8_t *raw;
    size_t len;
    crashreport *rep;
    if (store_report_raw_get(&raw, &len, r->srv->store, r->param, r->a, &r->err) != ERR_OK ||
        pipeline_parse(&rep, r->srv->pipe, raw, len, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf out;
    buf_init(&out);
    crashreport_render_text(&out, rep);
    return queue_body(r, 200, "text/plain; charset=utf-8", (char *)out.data, out.len);
}

enum MHD_Result handle_report_get(http_request *r)
{
    const char *format = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "format");
    if (format && strcmp(format, "text") == 0)
        return report_text(r);
    if (format && strcmp(format, "json") != 0)
        return respond_error(r, ERR_INVALID, "format must be json or text");
    store_report rep;
    if (store_report_get(&rep, r->srv->store, r->param, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    if (rep.parsed_json == NULL) {
        /* Intake stores no model (ingest_report_prepare): rebuild it from the raw bytes. */
        const uint8_t *raw;
        size_t len;
        err_info perr = {0};
        if (store_report_raw_get(&raw, &len, r->srv->store, r->param, r->a, &r->err) != ERR_OK)
            return respond_err(r, &r->err);
        /* A stored report that no longer parses (a parser regression) still has its row. */
        if (ingest_report_model_json(&rep.parsed_json, raw, len, r->a, &perr) != ERR_OK)
            rep.parsed_json = NULL;
    }
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    report_json(&w, &rep);
    return respond_json(r, 200, &body);
}

/* The report's bytes as received (after gzip decoding), beside its symbolicated text. */
enum MHD_Result handle_report_raw(http_request *r)
{
    const uint8_t *raw;
    size_t len;
    if (store_report_raw_get(&raw, &len, r->srv->store, r->param, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    char *body = xmalloc(len + 1);
    memcpy(body, raw, len);
    body[len] = '\0';
    /* a download, never a page: whatever the device sent cannot run in the dashboard */
    r->disposition = arena_sprintf(r->a, &r->err, "attachment; filename=\"report-%s.txt\"",
                                   r->param);
    return queue_body(r, 200, "text/plain; charset=utf-8", body, len);
}
