/*
 * routes_samples - privacy-API samples and call sites (issue #13):
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

/* The error shape of every route, plus the field the client must fix. */
static enum MHD_Result respond_field_error(http_request *r, const char *field)
{
    if (field == NULL || field[0] == '\0')
        return respond_err(r, &r->err);
    json_t *body = json_pack("{s:{s:s,s:s,s:s}}", "error", "code", err_name(r->err.code),
                             "message", r->err.msg, "field", field);
    return respond_json(r, http_status_for(r->err.code), body);
}

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
    };
    callsites_result res;
    char field[SAMPLEBATCH_FIELD_MAX];
    if (callsites_accept(&res, field, r->srv->store, &in, r->a, &r->err) != ERR_OK)
        return respond_field_error(r, field);
    json_t *body = json_pack("{s:I,s:I}", "accepted", (json_int_t)res.samples, "calls",
                             (json_int_t)res.calls);
    if (res.retry)
        json_object_set_new(body, "duplicate", json_true());
    return respond_json(r, 202, body);
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
    return request_limit_arg(&q->limit, r, 50, 1000);
}

enum MHD_Result handle_callsites_list(http_request *r)
{
    store_callsite_query q;
    const char *json;
    if (callsite_query(&q, r) != ERR_OK ||
        store_callsites_list(&json, r->srv->store, &q, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    return respond_json_text(r, 200, json);
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

static void csv_int(buf *out, const json_t *v)
{
    buf_printf(out, "%" JSON_INTEGER_FORMAT ",", json_integer_value(v));
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

static void csv_row(buf *out, buf *tmp, const json_t *c)
{
    csv_int(out, json_object_get(c, "id"));
    csv_field(out, json_string_value(json_object_get(c, "app")), false);
    csv_field(out, json_string_value(json_object_get(c, "tag")), false);
    const json_t *frames = json_object_get(c, "frames");
    for (size_t i = 0; i < 3; i++) {
        const json_t *f = json_array_get(frames, i);
        csv_field(out, f ? frame_text(tmp, f) : "", false);
    }
    csv_int(out, json_object_get(c, "count"));
    csv_int(out, json_object_get(c, "devices"));
    tmp->len = 0;
    const json_t *builds = json_object_get(c, "builds");
    for (size_t i = 0; i < json_array_size(builds); i++)
        buf_printf(tmp, "%s%s", i ? " " : "", json_string_value(json_array_get(builds, i)));
    buf_putc(tmp, '\0');
    csv_field(out, (const char *)tmp->data, false);
    csv_field(out, json_string_value(json_object_get(c, "first_seen_build")), false);
    csv_field(out, json_string_value(json_object_get(c, "first_seen")), false);
    csv_field(out, json_string_value(json_object_get(c, "last_seen")), true);
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
        const char *json;
        q.cursor = cursor;
        rc = store_callsites_list(&json, r->srv->store, &q, r->a, &r->err);
        free(cursor);
        cursor = NULL;
        if (rc != ERR_OK)
            break;
        json_t *page = json_loads(json, 0, NULL);
        const json_t *list = json_object_get(page, "callsites");
        for (size_t i = 0; i < json_array_size(list); i++)
            csv_row(&out, &tmp, json_array_get(list, i));
        rows += json_array_size(list);
        const char *next = json_string_value(json_object_get(page, "next_cursor"));
        cursor = next && rows < CSV_MAX_ROWS ? xstrdup(next) : NULL;
        json_decref(page);
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
