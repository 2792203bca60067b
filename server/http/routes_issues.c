/*
 * routes_issues - the grouped-issues API, synchronous symbolication and the symbolicated
 * views of a report (issue #5). Registered in ROUTES (server.c); statuses come from
 * http_status_for like everywhere else.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "http/http_internal.h"
#include "ingest/ingest.h"
#include "store/store_issues.h"

#define SYMBOLICATE_MAX_IMAGES 4096
#define SYMBOLICATE_MAX_STACKS 1024
#define SYMBOLICATE_MAX_FRAMES 100000 /* over all stacks */

static const char *arg(http_request *r, const char *name)
{
    const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
    return v && *v ? v : NULL;
}

/* Send JSON text the store built (copied: libmicrohttpd frees what it sends). */
static enum MHD_Result respond_text_json(http_request *r, unsigned status, const char *json)
{
    size_t n = strlen(json);
    char *body = xmalloc(n + 2);
    memcpy(body, json, n);
    body[n] = '\n';
    body[n + 1] = '\0';
    return queue_body(r, status, "application/json", body, n + 1);
}

/* ?limit= within [1, max], `def` when absent. */
static err_code limit_arg(unsigned *out, http_request *r, unsigned def, unsigned max)
{
    const char *s = arg(r, "limit");
    *out = def;
    if (s == NULL)
        return ERR_OK;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1 || v > (long)max)
        return err_set(&r->err, ERR_INVALID, "limit must be a whole number from 1 to %u", max);
    *out = (unsigned)v;
    return ERR_OK;
}

/* The {id} of /api/v1/issues/{id}: a positive integer, else there is no such issue. */
static err_code issue_id_param(int64_t *out, http_request *r)
{
    char *end;
    errno = 0;
    long long v = r->param ? strtoll(r->param, &end, 10) : 0;
    if (r->param == NULL || errno || *end || v < 1 || r->param[0] == '+')
        return err_set(&r->err, ERR_NOT_FOUND, "no issue with id %.40s",
                       r->param ? r->param : "");
    *out = v;
    return ERR_OK;
}

static bool one_of(const char *v, const char *const *allowed)
{
    for (size_t i = 0; allowed[i]; i++)
        if (strcmp(v, allowed[i]) == 0)
            return true;
    return false;
}

enum MHD_Result handle_issues_list(http_request *r)
{
    static const char *const KINDS[] = {"crash", "hang", "sample", NULL};
    static const char *const STATUSES[] = {"open", "resolved", "ignored", NULL};
    store_issue_query q = {
        .app = arg(r, "app"), .kind = arg(r, "kind"), .version = arg(r, "version"),
        .status = arg(r, "status"), .since = arg(r, "since"), .until = arg(r, "until"),
        .q = arg(r, "q"), .sort = arg(r, "sort"), .cursor = arg(r, "cursor"),
    };
    if (q.kind && !one_of(q.kind, KINDS))
        return respond_error(r, ERR_INVALID, "kind must be crash, hang or sample");
    if (q.status && !one_of(q.status, STATUSES))
        return respond_error(r, ERR_INVALID, "status must be open, resolved or ignored");
    if (limit_arg(&q.limit, r, 50, 200) != ERR_OK)
        return respond_err(r, &r->err);
    const char *json;
    if (store_issues_list(&json, r->srv->store, &q, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    return respond_text_json(r, 200, json);
}

enum MHD_Result handle_issue_get(http_request *r)
{
    int64_t id;
    const char *json;
    if (issue_id_param(&id, r) != ERR_OK ||
        store_issue_get(&json, r->srv->store, id, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    return respond_text_json(r, 200, json);
}

enum MHD_Result handle_issue_reports(http_request *r)
{
    int64_t id;
    unsigned limit;
    const char *json;
    if (issue_id_param(&id, r) != ERR_OK || limit_arg(&limit, r, 50, 500) != ERR_OK ||
        store_issue_reports(&json, r->srv->store, id, limit, arg(r, "cursor"), r->a, &r->err) !=
            ERR_OK)
        return respond_err(r, &r->err);
    return respond_text_json(r, 200, json);
}

enum MHD_Result handle_issue_patch(http_request *r)
{
    int64_t id;
    if (issue_id_param(&id, r) != ERR_OK)
        return respond_err(r, &r->err);
    json_error_t je;
    json_t *body = json_loadb((const char *)(r->mem ? r->mem : (uint8_t *)""),
                              (size_t)r->body_bytes, 0, &je);
    if (body == NULL || !json_is_object(body)) {
        json_decref(body);
        return respond_error(r, ERR_INVALID, "body must be a JSON object like "
                             "{\"status\":\"resolved\",\"resolved_in\":\"1.2.0\"}");
    }
    json_t *st = json_object_get(body, "status"), *in = json_object_get(body, "resolved_in");
    const char *json = NULL;
    err_code rc;
    if (!json_is_string(st))
        rc = err_set(&r->err, ERR_INVALID, "\"status\" (open, resolved or ignored) is required");
    else if (in != NULL && !json_is_null(in) && !json_is_string(in))
        rc = err_set(&r->err, ERR_INVALID, "\"resolved_in\" must be a version string");
    else if (in != NULL && json_is_string(in) && strcmp(json_string_value(st), "resolved") != 0)
        rc = err_set(&r->err, ERR_INVALID, "\"resolved_in\" goes with status \"resolved\"");
    else
        rc = store_issue_set_status(&json, r->srv->store, id, json_string_value(st),
                                    json_is_string(in) ? json_string_value(in) : NULL, r->a,
                                    &r->err);
    json_decref(body);
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    return respond_text_json(r, 200, json);
}

enum MHD_Result handle_dsyms_missing(http_request *r)
{
    unsigned limit;
    const char *json;
    if (limit_arg(&limit, r, 100, 1000) != ERR_OK ||
        store_dsyms_missing(&json, r->srv->store, limit, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    return respond_text_json(r, 200, json);
}

/* ---- reports ----------------------------------------------------------------------------- */

void report_json_extend(http_request *r, json_t *body)
{
    store_report_extra x;
    err_info err = {0};
    if (store_report_extra_get(&x, r->srv->store, r->param, r->a, &err) != ERR_OK)
        return;   /* the base answer stands; the row was just read, so this is rare */
    json_object_set_new(body, "issue_id", x.issue_id ? json_integer(x.issue_id) : json_null());
    json_object_set_new(body, "fingerprint", json_str_or_null(x.fingerprint));
    json_object_set_new(body, "kind", json_str_or_null(x.kind));
    json_object_set_new(body, "hardware_model", json_str_or_null(x.hardware_model));
    json_object_set_new(body, "processed_at", json_str_or_null(x.processed_at));
    json_object_set_new(body, "symbolicated", json_from_text(x.symbolicated_json));
}

enum MHD_Result handle_report_text(http_request *r, const char *format)
{
    if (strcmp(format, "text") != 0)
        return respond_error(r, ERR_INVALID, "format must be json or text");
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

/* ---- POST /api/v1/symbolicate ---------------------------------------------------------- */

/* "0x1f", "31" or a JSON integer -> address. */
static bool json_addr(uint64_t *out, const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    if (s == NULL || *s == '\0')
        return false;
    char *end;
    errno = 0;
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    unsigned long long a = strtoull(hex ? s + 2 : s, &end, hex ? 16 : 10);
    if (errno || *end || end == (hex ? s + 2 : s))
        return false;
    *out = a;
    return true;
}

/* A UUID as 32 hex digits with or without dashes -> upper case with dashes. */
static bool uuid_norm(char out[37], const char *s)
{
    char hex[33];
    size_t n = 0;
    for (; s && *s; s++) {
        if (*s == '-')
            continue;
        if (n == 32 || !strchr("0123456789abcdefABCDEF", *s))
            return false;
        hex[n++] = (char)(*s >= 'a' && *s <= 'f' ? *s - 'a' + 'A' : *s);
    }
    if (n != 32)
        return false;
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
    return true;
}

static err_code build_report(crashreport **out, http_request *r, const json_t *body)
{
    err_info *err = &r->err;
    const json_t *images = json_object_get(body, "images"), *stacks = json_object_get(body, "stacks");
    if (!json_is_array(images) || !json_is_array(stacks))
        return err_set(err, ERR_INVALID, "body must be {\"images\":[{\"uuid\",\"arch\","
                       "\"load_address\",\"name\"}],\"stacks\":[[\"0x...\",...]]}");
    size_t ni = json_array_size(images), ns = json_array_size(stacks), total = 0;
    if (ni > SYMBOLICATE_MAX_IMAGES || ns > SYMBOLICATE_MAX_STACKS)
        return err_set(err, ERR_TOO_LARGE, "at most %d images and %d stacks per request",
                       SYMBOLICATE_MAX_IMAGES, SYMBOLICATE_MAX_STACKS);
    crashreport *rep = arena_alloc(r->a, sizeof *rep, err);
    if (rep == NULL)
        return ERR_TOO_LARGE;
    rep->format = CRASHREPORT_FORMAT_JSON;
    rep->kind = CRASHREPORT_KIND_SAMPLE;
    rep->meta.crashed_thread = -1;
    rep->images = arena_alloc_array(r->a, ni ? ni : 1, sizeof *rep->images, err);
    rep->threads = arena_alloc_array(r->a, ns ? ns : 1, sizeof *rep->threads, err);
    if (rep->images == NULL || rep->threads == NULL)
        return ERR_TOO_LARGE;
    rep->nimages = ni;
    for (size_t i = 0; i < ni; i++) {
        const json_t *im = json_array_get(images, i);
        crashreport_image *d = &rep->images[i];
        const char *uuid = json_string_value(json_object_get(im, "uuid"));
        if (!json_is_object(im) || !uuid_norm(d->uuid, uuid) ||
            !json_addr(&d->load_addr, json_object_get(im, "load_address")))
            return err_set(err, ERR_INVALID, "images[%zu] needs a \"uuid\" (32 hex digits) and "
                           "a \"load_address\"", i);
        const char *arch = json_string_value(json_object_get(im, "arch"));
        const char *name = json_string_value(json_object_get(im, "name"));
        d->arch = arch ? arena_strdup(r->a, arch, err) : NULL;
        d->name = name ? arena_strdup(r->a, name, err) : NULL;
        d->user = true;
    }
    rep->nthreads = ns;
    for (size_t t = 0; t < ns; t++) {
        const json_t *st = json_array_get(stacks, t);
        if (!json_is_array(st))
            return err_set(err, ERR_INVALID, "stacks[%zu] must be an array of addresses", t);
        size_t nf = json_array_size(st);
        total += nf;
        if (total > SYMBOLICATE_MAX_FRAMES)
            return err_set(err, ERR_TOO_LARGE, "at most %d addresses per request",
                           SYMBOLICATE_MAX_FRAMES);
        crashreport_thread *th = &rep->threads[t];
        th->index = (uint32_t)t;
        th->frames = arena_alloc_array(r->a, nf ? nf : 1, sizeof *th->frames, err);
        if (th->frames == NULL)
            return ERR_TOO_LARGE;
        th->nframes = nf;
        for (size_t i = 0; i < nf; i++) {
            crashreport_frame *f = &th->frames[i];
            f->index = (uint32_t)i;
            f->image = -1;
            if (!json_addr(&f->addr, json_array_get(st, i)))
                return err_set(err, ERR_INVALID, "stacks[%zu][%zu] is not an address", t, i);
            /* The image loaded closest below the address holds it (sizes are not given). */
            uint64_t best = 0;
            for (size_t k = 0; k < ni; k++) {
                const crashreport_image *im = &rep->images[k];
                uint64_t a = crashreport_strip_pac(f->addr, im->arch);
                if (im->load_addr <= a && (f->image < 0 || im->load_addr > best)) {
                    best = im->load_addr;
                    f->image = (int32_t)k;
                }
            }
            if (f->image >= 0)
                f->image_name = rep->images[f->image].name;
        }
    }
    *out = rep;
    return ERR_OK;
}

static json_t *hex_json(uint64_t v)
{
    char s[24];
    snprintf(s, sizeof s, "0x%" PRIx64, v);
    return json_string(s);
}

enum MHD_Result handle_symbolicate(http_request *r)
{
    if (r->srv->pipe == NULL)
        return respond_error(r, ERR_UNSUPPORTED, "this server does not symbolicate");
    json_error_t je;
    json_t *body = json_loadb((const char *)(r->mem ? r->mem : (uint8_t *)""),
                              (size_t)r->body_bytes, 0, &je);
    if (body == NULL || !json_is_object(body)) {
        json_decref(body);
        return respond_error(r, ERR_INVALID, "body must be a JSON object {\"images\":[...],"
                             "\"stacks\":[[...]]}");
    }
    crashreport *rep = NULL;
    err_code rc = build_report(&rep, r, body);
    json_decref(body);
    if (rc == ERR_OK)
        rc = pipeline_symbolicate(r->srv->pipe, rep, NULL, NULL, r->a, &r->err);
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    json_t *stacks = json_array();
    for (size_t t = 0; t < rep->nthreads; t++) {
        json_t *frames = json_array();
        for (size_t i = 0; i < rep->threads[t].nframes; i++) {
            const crashreport_frame *f = &rep->threads[t].frames[i];
            const crashreport_image *im = f->image >= 0 ? &rep->images[f->image] : NULL;
            json_t *o = json_pack("{s:o,s:o,s:o,s:s}", "address", hex_json(f->addr),
                                  "image", json_str_or_null(im ? im->name : NULL),
                                  "uuid", json_str_or_null(im ? im->uuid : NULL),
                                  "status", crashreport_sym_status_name(f->sym_status));
            if (im)
                json_object_set_new(o, "offset",
                                    hex_json(crashreport_strip_pac(f->addr, im->arch) -
                                             im->load_addr));
            json_t *syms = json_array();
            for (uint32_t k = 0; k < f->nsymbols; k++) {
                const crashreport_symbol *s = &f->symbols[k];
                json_array_append_new(
                    syms, json_pack("{s:s,s:o,s:o,s:b,s:I}", "function", s->function, "file",
                                    json_str_or_null(s->file), "line",
                                    s->line ? json_integer(s->line) : json_null(), "inlined",
                                    s->inlined, "offset", (json_int_t)s->offset));
            }
            json_object_set_new(o, "symbols", syms);
            json_array_append_new(frames, o);
        }
        json_array_append_new(stacks, frames);
    }
    json_t *missing = json_array();
    for (size_t i = 0; i < rep->nmissing_uuids; i++)
        json_array_append_new(missing, json_string(rep->missing_uuids[i]));
    return respond_json(r, 200, json_pack("{s:o,s:o}", "stacks", stacks, "missing_uuids",
                                          missing));
}
