/*
 * routes_samples - privacy-API samples and call sites:
 *   POST /api/v1/samples        a batch of stack samples (ingest scope) -> 202
 *   GET  /api/v1/callsites      call sites per API, build and version (read scope)
 *   GET  /api/v1/callsites.csv  the same rows as RFC 4180 CSV, every page
 * Errors of a batch name the offending field: {"error":{"code","message","field"}}.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "http/http_internal.h"
#include "ingest/callsites.h"
#include "store/store_samples.h"

#define CSV_MAX_ROWS 100000

enum MHD_Result handle_samples_post(http_request *r)
{
    const char *enc = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    callsites_input in = {
        .content_type = request_media_type(r, MHD_HTTP_HEADER_CONTENT_TYPE),
        .content_encoding = enc[0] ? enc : NULL,
        .body = r->mem ? r->mem : (const uint8_t *)"",
        .len = (size_t)r->body_bytes,
        /* a batch may be larger than a report: 100,000 samples of ~200 bytes of JSON */
        .max_bytes = r->srv->cfg->max_report_bytes * 4,
        .project_id = r->project_id,   /* a DSN key's project (?sentry_key=), else the default */
    };
    callsites_result res;
    char field[SAMPLEBATCH_FIELD_MAX];
    if (callsites_accept(&res, field, r->srv->store, r->srv->counters, &in, r->a, &r->err) !=
        ERR_OK)
        return respond_field_error(r, field);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kint(&w, "accepted", (int64_t)res.samples);
    jsonw_kint(&w, "calls", (int64_t)res.calls);
    if (res.retry)
        jsonw_kbool(&w, "duplicate", true);
    jsonw_object_end(&w);
    return respond_json(r, 202, &body);
}

/* The query both call site routes read. */
static err_code callsite_query(store_callsite_query *q, http_request *r)
{
    memset(q, 0, sizeof *q);
    q->app = request_arg(r, "app");
    q->tag = request_arg(r, "tag");
    q->build = request_arg(r, "build");
    q->version = request_arg(r, "version");
    q->new_in_build = request_arg(r, "new_in_build");
    q->q = request_arg(r, "q");
    q->sort = request_arg(r, "sort");
    q->cursor = request_arg(r, "cursor");
    err_code rc = request_limit_arg(&q->limit, r, 50, 1000);
    return rc == ERR_OK ? request_project_filter(&q->project_id, r) : rc;
}

/* The wire format of a page (docs/openapi.yaml, CallSites): {"callsites":[{id,app,tag,
 * frames,stack,count,devices,builds,first_seen_build,first_seen,last_seen}],
 * "next_cursor":"..."|null,"pending":{"stacks","calls"}}. */
enum MHD_Result handle_callsites_list(http_request *r)
{
    store_callsite_query q;
    store_callsite_page page;
    if (callsite_query(&q, r) != ERR_OK ||
        store_callsites_list(&page, r->srv->store, &q, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "callsites");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < page.n; i++) {
        const store_callsite *c = &page.callsites[i];
        jsonw_object_begin(&w);
        jsonw_kint(&w, "id", c->id);
        jsonw_kstr(&w, "app", c->app);
        jsonw_kstr(&w, "tag", c->tag);
        jsonw_kraw(&w, "frames", c->frames_json);
        jsonw_kraw(&w, "stack", c->stack_json);
        jsonw_kint(&w, "count", c->count);
        jsonw_kint(&w, "devices", c->devices);
        jsonw_kraw(&w, "builds", c->builds_json);
        jsonw_kstr(&w, "first_seen_build", c->first_seen_build);
        jsonw_kstr(&w, "first_seen", c->first_seen);
        jsonw_kstr(&w, "last_seen", c->last_seen);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_kstr(&w, "next_cursor", page.next_cursor);
    jsonw_key(&w, "pending");
    jsonw_object_begin(&w);
    jsonw_kint(&w, "stacks", page.pending_stacks);
    jsonw_kint(&w, "calls", page.pending_calls);
    jsonw_object_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

/* One RFC 4180 field: quoted when it holds a comma, quote, CR or LF (quotes doubled). */
static void csv_field(buf *out, const char *s, bool last)
{
    s = s ? s : "";
    if (strpbrk(s, ",\"\r\n") != NULL) {
        buf_putc(out, '"');
        for (const char *p = s; *p; p++) {
            if (*p == '"')
                buf_putc(out, '"');
            buf_putc(out, *p);
        }
        buf_putc(out, '"');
    } else {
        buf_append_str(out, s);
    }
    buf_append_str(out, last ? "\r\n" : ",");
}

/* "function (file:line)" of a call site frame, in `tmp`. */
static const char *frame_text(buf *tmp, const json_t *f)
{
    tmp->len = 0;
    const char *fn = json_string_value(json_object_get(f, "function"));
    const char *file = json_string_value(json_object_get(f, "file"));
    json_int_t line = json_integer_value(json_object_get(f, "line"));
    buf_append_str(tmp, fn ? fn : "");
    if (file) {
        const char *base = strrchr(file, '/');
        buf_printf(tmp, " (%s", base ? base + 1 : file);
        if (line > 0)
            buf_printf(tmp, ":%" JSON_INTEGER_FORMAT, line);
        buf_putc(tmp, ')');
    }
    buf_putc(tmp, '\0');
    tmp->len--;
    return (const char *)tmp->data;
}

static void csv_row(buf *out, buf *tmp, const store_callsite *c)
{
    buf_printf(out, "%lld,", (long long)c->id);
    csv_field(out, c->app, false);
    csv_field(out, c->tag, false);
    json_t *frames = c->frames_json ? json_loads(c->frames_json, 0, NULL) : NULL;
    for (size_t i = 0; i < 3; i++) {
        const json_t *f = json_array_get(frames, i);
        csv_field(out, f ? frame_text(tmp, f) : "", false);
    }
    json_decref(frames);
    buf_printf(out, "%lld,%lld,", (long long)c->count, (long long)c->devices);
    tmp->len = 0;
    json_t *builds = c->builds_json ? json_loads(c->builds_json, 0, NULL) : NULL;
    for (size_t i = 0; i < json_array_size(builds); i++)
        buf_printf(tmp, "%s%s", i ? " " : "", json_string_value(json_array_get(builds, i)));
    json_decref(builds);
    buf_putc(tmp, '\0');
    csv_field(out, (const char *)tmp->data, false);
    csv_field(out, c->first_seen_build, false);
    csv_field(out, c->first_seen, false);
    csv_field(out, c->last_seen, true);
}

enum MHD_Result handle_callsites_csv(http_request *r)
{
    store_callsite_query q;
    if (callsite_query(&q, r) != ERR_OK)
        return respond_err(r, &r->err);
    q.limit = 1000;
    buf out, tmp;
    buf_init(&out);
    buf_init(&tmp);
    buf_append_str(&out, "id,app,tag,frame_1,frame_2,frame_3,count,devices,builds,"
                         "first_seen_build,first_seen,last_seen\r\n");
    size_t rows = 0;
    char *cursor = NULL;
    err_code rc = ERR_OK;
    do {
        store_callsite_page page;
        q.cursor = cursor;
        rc = store_callsites_list(&page, r->srv->store, &q, r->a, &r->err);
        free(cursor);
        cursor = NULL;
        if (rc != ERR_OK)
            break;
        for (size_t i = 0; i < page.n; i++)
            csv_row(&out, &tmp, &page.callsites[i]);
        rows += page.n;
        cursor = page.next_cursor && rows < CSV_MAX_ROWS ? xstrdup(page.next_cursor) : NULL;
    } while (cursor != NULL);
    buf_reset(&tmp);
    if (rc != ERR_OK) {
        buf_reset(&out);
        return respond_err(r, &r->err);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(out.len, out.data, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        buf_reset(&out);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/csv; charset=utf-8; header=present");
    MHD_add_response_header(resp, "Content-Disposition", "attachment; filename=\"callsites.csv\"");
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    enum MHD_Result ok = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES)
        r->status = 200;
    return ok;
}
