/*
 * server - the transport: libmicrohttpd wiring, one route table (ROUTES) and dispatch to the
 * route files (routes_<resource>.c), request bodies, the bearer check (server/auth) and the
 * response helpers. One http_request per request, created on the first callback (headers
 * known: route, auth and declared size are checked before any body byte is read) and freed
 * in the completion callback, where the request's log line is written.
 *
 * Bodies: reports are gathered in the request arena (bounded by STACKSIFT_MAX_REPORT_BYTES);
 * dSYM uploads stream to a scratch directory DATA_DIR/tmp/upload-XXXXXX (never whole in
 * memory), via MHD's post processor for multipart/form-data. The scratch directory is
 * removed when the request ends, whatever happened.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/jsonw.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "http/http.h"
#include "dsym/dsym.h"
#include "http/http_internal.h"
#include "http/metrics.h"
#include "log/log.h"

#define RETRY_AFTER_S "5"
#define RETRY_AFTER_BUSY_S 60u /* 429 of a full spool: it drains at the database's pace */
#define DRAIN_SLACK_BYTES (64u << 20) /* past a limit, bytes still read to send the 413 */
/* Crash-report bodies held at once by admitted requests (each with its parsed model beside
 * it, several times its size); one request is always admitted, whatever its size. */
#define INGEST_INFLIGHT_BYTES (64u << 20)

double http_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- responses ------------------------------------------------------------------------- */

enum MHD_Result queue_body(http_request *r, unsigned status, const char *content_type,
                                  char *body, size_t len)
{
    /* MUST_FREE: MHD free()s `body` once it has been sent (buf uses malloc). */
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    /* browsers must not guess another type (a raw report is text, never HTML) */
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    if (r->disposition)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, r->disposition);
    if (status == 503)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER_S);
    if (status == 429) {
        char secs[16];
        snprintf(secs, sizeof secs, "%u", r->retry_after_s ? r->retry_after_s : RETRY_AFTER_BUSY_S);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
        /* Sentry's SDKs (sentry-cocoa among them) read their own header first:
         * "retry_after:categories:scope:reason_code", an empty category list meaning every
         * kind of data: the whole endpoint is refused, not only events. */
        if (r->route && (r->route->handler == handle_sentry_envelope ||
                         r->route->handler == handle_sentry_store ||
                         r->route->handler == handle_sentry_minidump)) {
            char limits[64];
            snprintf(limits, sizeof limits, "%s::organization:%s", secs,
                     r->shed ? "node_busy" : "spool_full");
            MHD_add_response_header(resp, "X-Sentry-Rate-Limits", limits);
        }
    }
    if (status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (r->offloaded) {
        /* on a handler thread: libmicrohttpd queues it when it resumes the connection */
        if (r->pending)
            MHD_destroy_response(r->pending);   /* the last answer wins */
        r->pending = resp;
        r->pending_status = status;
        return MHD_YES;
    }
    enum MHD_Result ok = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES)
        r->status = status;
    return ok;
}

void json_body_begin(buf *body, jsonw *w)
{
    buf_init(body);
    jsonw_init(w, body);
}

enum MHD_Result respond_json(http_request *r, unsigned status, buf *body)
{
    buf_putc(body, '\n');
    char *text = (char *)body->data;   /* malloc'd by buf: libmicrohttpd frees it */
    size_t len = body->len;
    body->data = NULL;
    body->len = body->cap = 0;
    return queue_body(r, status, "application/json", text, len);
}

const char *http_public_message(char *out, size_t cap, const http_request *r, err_code code,
                                const char *message)
{
    switch (code) {
    case ERR_STORE:
        snprintf(out, cap, "the database is unavailable for now: retry later (request id %s)",
                 r->id);
        return out;
    case ERR_INTERNAL:
        snprintf(out, cap, "internal error: the server's log has the details under request id "
                 "%s", r->id);
        return out;
    case ERR_OK:
    case ERR_INVALID:
    case ERR_UNSUPPORTED:
    case ERR_NOT_FOUND:
    case ERR_TOO_LARGE:
    case ERR_IO:
    case ERR_UNAUTHORIZED:
    case ERR_FORBIDDEN:
    case ERR_CONFLICT:
    case ERR_OUTDATED:
    case ERR_BUSY:
        break;
    }
    /* a conflict the database found: what it was, not the database's words */
    const char *words = strstr(message, STORE_DB_WORDS);
    if (words != NULL) {
        snprintf(out, cap, "%.*s", (int)(words - message), message);
        return out;
    }
    return message;
}

/* The one error shape: {"error":{"code":"...","message":"..."}} with http_status_for(code).
 * Messages echo what the client sent (a path, a header): bytes that are not UTF-8 become
 * U+FFFD, so that the body is always valid JSON. The whole message stays in r->err for the
 * request's log line; the answer says what http_public_message lets it say. */
enum MHD_Result respond_error(http_request *r, err_code code, const char *message)
{
    char clean[sizeof r->err.msg], shown[sizeof r->err.msg];
    utf8_repair(clean, sizeof clean, message);
    err_set(&r->err, code, "%s", clean);
    const char *msg = http_public_message(shown, sizeof shown, r, code, clean);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "error");
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "code", err_name(code));
    jsonw_kstr(&w, "message", msg);
    jsonw_object_end(&w);
    /* Sentry's clients (sentry-cli) print an error's "detail": the same message for them. */
    if (r->url && strncmp(r->url, "/api/0/", 7) == 0)
        jsonw_kstr(&w, "detail", msg);
    jsonw_object_end(&w);
    return respond_json(r, http_status_for(code), &body);
}

enum MHD_Result respond_err(http_request *r, const err_info *err)
{
    if (err != &r->err)
        r->err = *err;
    return respond_error(r, r->err.code, r->err.msg);
}

enum MHD_Result respond_field_error(http_request *r, const char *field)
{
    if (field == NULL || field[0] == '\0')
        return respond_err(r, &r->err);
    char shown[sizeof r->err.msg];
    const char *msg = http_public_message(shown, sizeof shown, r, r->err.code, r->err.msg);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "error");
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "code", err_name(r->err.code));
    jsonw_kstr(&w, "message", msg);
    jsonw_kstr(&w, "field", field);
    jsonw_object_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, http_status_for(r->err.code), &body);
}

/* ---- scratch files --------------------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    /* Ignored: a file that cannot be removed is reported by the directory's rmdir failing. */
    (void)remove(path);
    return 0;
}

static void remove_tree(const char *dir)
{
    if (dir && nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        log_event(LOG_WARN, "scratch_cleanup_failed", "dir=%s error=%s", dir, strerror(errno));
}

static void request_cleanup(void *p)
{
    http_request *r = p;
    if (r->pp)
        MHD_destroy_post_processor(r->pp);   /* result ignored: the request is over */
    r->pp = NULL;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    remove_tree(r->work_dir);
}

/* The name a debug file gets on disk: dsym names a bare Mach-O's image after its file. Only
 * the base name, only [A-Za-z0-9._+-], no leading dot; "debug-file" if nothing is left. */
static const char *safe_file_name(http_request *r, const char *given)
{
    const char *base = given ? given : "";
    for (const char *p = base; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    while (*base == '.')
        base++;
    size_t n = strlen(base);
    if (n > 200)
        n = 200;
    char *out = arena_strndup(r->a, base, n, &r->err);
    if (!out || n == 0)
        return "debug-file";
    for (char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '+' || *p == '-'))
            *p = '_';
    return out;
}

/* Start input file number r->nparts: work_dir/part-N/<safe name>, sent in form field `field`
 * (NULL for a bare body). */
static err_code open_part(http_request *r, const char *field, const char *filename)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    if (r->nparts == MAX_UPLOAD_PARTS)
        return err_set(&r->err, ERR_INVALID, "upload has more than %d files", MAX_UPLOAD_PARTS);
    char *dir = arena_sprintf(r->a, &r->err, "%s/part-%zu", r->work_dir, r->nparts);
    if (!dir)
        return ERR_TOO_LARGE;
    if (mkdir(dir, 0700) != 0)
        return err_set(&r->err, ERR_IO, "creating %s: %s", dir, strerror(errno));
    char *path = arena_sprintf(r->a, &r->err, "%s/%s", dir, safe_file_name(r, filename));
    if (!path)
        return ERR_TOO_LARGE;
    r->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (r->fd < 0)
        return err_set(&r->err, ERR_IO, "creating %s: %s", path, strerror(errno));
    r->part_fields[r->nparts] = field ? arena_strdup(r->a, field, &r->err) : NULL;
    r->part_names[r->nparts] = filename ? arena_strdup(r->a, filename, &r->err) : NULL;
    r->parts[r->nparts++] = path;
    return ERR_OK;
}

static err_code write_all(http_request *r, const char *data, size_t size)
{
    while (size > 0) {
        ssize_t n = write(r->fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_set(&r->err, ERR_IO, "writing upload to %s: %s", r->work_dir,
                           strerror(errno));
        data += n;
        size -= (size_t)n;
    }
    return ERR_OK;
}

/* A multipart field without a filename: its bytes from `off` kept (small ones only). */
static void form_field_add(http_request *r, const char *key, const char *data, uint64_t off,
                           size_t size)
{
    size_t i = 0;
    while (i < r->nform && strcmp(r->form_names[i], key) != 0)
        i++;
    if (i == r->nform) {
        if (off != 0 || r->nform == MAX_FORM_FIELDS)
            return;
        r->form_names[i] = arena_strdup(r->a, key, &r->err);
        if (r->form_names[i] == NULL)
            return;
        r->nform++;
    }
    if (r->form_values[i] == NULL && off != 0)
        return; /* dropped: over FORM_FIELD_MAX */
    size_t have = r->form_lens[i];
    if (have + size > FORM_FIELD_MAX) {
        r->form_values[i] = NULL;
        r->form_lens[i] = 0;
        return;
    }
    char *v = arena_grow(r->a, r->form_values[i], have ? have + 1 : 0, have + size + 1, &r->err);
    if (v == NULL)
        return;
    memcpy(v + have, data, size);
    v[have + size] = '\0';
    r->form_values[i] = v;
    r->form_lens[i] = have + size;
}

const char *request_form_field(http_request *r, const char *name)
{
    for (size_t i = 0; i < r->nform; i++)
        if (strcmp(r->form_names[i], name) == 0) {
            if (r->form_values[i] == NULL)
                return NULL;
            /* a value that is no UTF-8 is read with U+FFFD in place of each invalid sequence
             * (base/utf8's rule): it may be echoed, logged or stored */
            size_t n;
            const char *v = utf8_sanitize(&n, r->form_values[i], r->form_lens[i], r->a, NULL);
            if (v != NULL && v != r->form_values[i]) {
                r->form_values[i] = (char *)v;   /* an arena copy of its own */
                r->form_lens[i] = n;
            }
            return v;
        }
    return NULL;
}

/* Multipart: every part with a filename is one input file; small fields without one are kept
 * for the handler (request_form_field), larger ones dropped. */
static enum MHD_Result on_post_part(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *filename, const char *content_type,
                                    const char *transfer_encoding, const char *data,
                                    uint64_t off, size_t size)
{
    http_request *r = cls;
    (void)kind, (void)key, (void)content_type, (void)transfer_encoding;
    if (r->failed)
        return MHD_YES;
    if (filename == NULL) {
        if (key != NULL && size > 0)
            form_field_add(r, key, data, off, size);
        return MHD_YES;
    }
    err_code rc = ERR_OK;
    /* a Bugsnag dSYM upload whose key came first and is wrong: nothing of it spooled */
    if (off == 0 && r->route->handler == handle_bugsnag_dsym)
        rc = bugsnag_dsym_part_begin(r);
    if (rc == ERR_OK && off == 0)
        rc = open_part(r, key, filename);
    if (rc == ERR_OK && size > 0)
        rc = write_all(r, data, size);
    if (rc != ERR_OK)
        r->failed = true;
    return MHD_YES;
}

/* ---- body intake ----------------------------------------------------------------------- */

static void receive_body(http_request *r, const char *data, size_t size)
{
    r->body_bytes += size;
    if (r->failed)
        return;
    if (r->body_bytes > r->body_limit) {
        err_set(&r->err, ERR_TOO_LARGE, "body is larger than the limit of %llu bytes",
                (unsigned long long)r->body_limit);
        r->failed = true;
        return;
    }
    err_code rc = ERR_OK;
    if (r->route->body == BODY_MEMORY) {
        size_t need = (size_t)r->body_bytes;
        /* Not zeroed as it grows (the body fills it): one NUL is kept after the bytes
         * instead, which is all that the zeroing gave past them. */
        if (need + 1 > r->mem_cap) {
            size_t cap = r->mem_cap ? r->mem_cap : 16384;
            while (cap < need + 1)
                cap *= 2;
            r->mem = arena_grow_uninit(r->a, r->mem, r->mem_cap, cap, &r->err);
            if (!r->mem) {
                r->failed = true;
                return;
            }
            r->mem_cap = cap;
        }
        memcpy(r->mem + need - size, data, size);
        r->mem[need] = 0;
    } else if (r->pp) {
        if (MHD_post_process(r->pp, data, size) != MHD_YES && !r->failed)
            rc = err_set(&r->err, ERR_INVALID, "malformed multipart/form-data body");
    } else {
        rc = write_all(r, data, size);
    }
    if (rc != ERR_OK)
        r->failed = true;
}

/* First callback of a body route: declared size, scratch space. */
static err_code prepare_body(http_request *r)
{
    const config *cfg = r->srv->cfg;
    r->body_limit = r->route->body == BODY_MEMORY ? cfg->max_report_bytes : cfg->max_upload_bytes;
    if (r->route->handler == handle_chunk_post)   /* the chunk-upload options' maxRequestSize */
        r->body_limit = CHUNK_POST_MAX_BYTES;
    /* a BCSymbolMap sent alone (POST /api/v1/dsyms?name=<UUID>.bcsymbolmap): its own limit,
     * answered from the headers */
    const char *qname = r->route->handler == handle_dsym_post
                            ? MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "name")
                            : NULL;
    size_t qlen = qname ? strlen(qname) : 0;
    if (qlen > 12 && strcasecmp(qname + qlen - 12, ".bcsymbolmap") == 0 &&
        r->body_limit > DSYM_DEFAULT_MAX_MAP_BYTES)
        r->body_limit = DSYM_DEFAULT_MAX_MAP_BYTES;
    /* KSCrash's standard sink sends every pending report in one multipart body */
    if (r->route->handler == handle_report_post && request_is_multipart(r))
        r->body_limit *= REPORT_BATCH_FACTOR;
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > r->body_limit)
        return err_set(&r->err, ERR_TOO_LARGE, "body of %s bytes is over the limit of %llu bytes",
                       cl, (unsigned long long)r->body_limit);
    if (r->route->body != BODY_FILE)
        return ERR_OK;

    char *tmpl = arena_sprintf(r->a, &r->err, "%s/upload-XXXXXX", r->srv->tmp_dir);
    if (!tmpl)
        return ERR_TOO_LARGE;
    if (!mkdtemp(tmpl))
        return err_set(&r->err, ERR_IO, "creating scratch directory in %s: %s",
                       r->srv->tmp_dir, strerror(errno));
    r->work_dir = tmpl;
    const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
        r->pp = MHD_create_post_processor(r->conn, 65536, on_post_part, r);
        if (!r->pp)
            return err_set(&r->err, ERR_INVALID, "multipart/form-data without a boundary");
        return ERR_OK;
    }
    /* A bare body: ?name= names the file (and so a bare Mach-O's image). */
    return open_part(r, NULL, MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "name"));
}

/* ---- auth ------------------------------------------------------------------------------ */

static err_code authorize(http_request *r)
{
    /* /metrics needs a read token unless the operator made it public */
    unsigned need = r->route->handler == handle_metrics && r->srv->cfg->metrics_public
                        ? 0
                        : r->route->scope;
    const char *header = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION);
    /* Crash reporters that can set no header (KSCrash's standard sink) put an ingest token or
     * a project's DSN key in the URL. The request log line has the path only, never the
     * query. */
    const char *url_token = header == NULL && need != 0 ? request_arg(r, "token") : NULL;
    if (url_token != NULL)
        return auth_check_url_token(r->srv->tokens, url_token, need, &r->err);
    const char *url_key = header == NULL && need != 0 ? request_arg(r, "sentry_key") : NULL;
    if (url_key != NULL) {
        if (need != AUTH_SCOPE_INGEST)
            return err_set(&r->err, ERR_UNAUTHORIZED, "a DSN key (?sentry_key=) is accepted by "
                           "the ingest routes only: send \"Authorization: Bearer TOKEN\"");
        return auth_dsn_key_check(&r->project_id, r->srv->tokens, url_key, &r->err);
    }
    return auth_check_header(r->srv->tokens, header, need, &r->err);
}

/* ---- request helpers ------------------------------------------------------------------- */

const char *request_arg(http_request *r, const char *name)
{
    const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
    return v && *v ? v : NULL;
}

const char *request_media_type(http_request *r, const char *header)
{
    const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, header);
    if (!v)
        return "";
    size_t n = strcspn(v, ";");
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    char *out = arena_strndup(r->a, v, n, &r->err);
    if (!out)
        return "";
    for (char *p = out; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return out;
}

bool request_is_multipart(http_request *r)
{
    const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_TYPE);
    return ct != NULL && strncasecmp(ct, "multipart/form-data", 19) == 0;
}

err_code request_limit_arg(unsigned *out, http_request *r, unsigned def, unsigned max)
{
    const char *s = request_arg(r, "limit");
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

/* Every endpoint, grouped by resource; each group's handlers live in routes_<resource>.c.
 * docs/openapi.yaml lists the same (tests/test_openapi.py); docs/api.md summarizes it.
 * Order matters only where paths overlap: an exact path before a {param} one. */
static const route ROUTES[] = {
    /* the service itself (routes_health.c) */
    {"GET", "/healthz", false, "healthz", 0, BODY_NONE, handle_healthz},
    {"GET", "/readyz", false, "readyz", 0, BODY_NONE, handle_readyz},
    {"GET", "/metrics", false, "metrics", AUTH_SCOPE_READ, BODY_NONE, handle_metrics},
    /* reports (routes_reports.c) */
    {"POST", "/api/v1/reports", false, "reports_post", AUTH_SCOPE_INGEST, BODY_MEMORY,
     handle_report_post},
    {"GET", "/api/v1/reports/", true, "reports_get", AUTH_SCOPE_READ, BODY_NONE,
     handle_report_get},
    {"GET", "/api/v1/reports/*/raw", true, "reports_raw", AUTH_SCOPE_READ, BODY_NONE,
     handle_report_raw},
    /* debug files (routes_dsyms.c) */
    {"POST", "/api/v1/dsyms", false, "dsyms_post", AUTH_SCOPE_UPLOAD, BODY_FILE,
     handle_dsym_post},
    {"GET", "/api/v1/dsyms", false, "dsyms_list", AUTH_SCOPE_READ, BODY_NONE,
     handle_dsym_list},
    {"GET", "/api/v1/dsyms/missing", false, "dsyms_missing", AUTH_SCOPE_READ, BODY_NONE,
     handle_dsyms_missing},
    {"GET", "/api/v1/dsyms/", true, "dsyms_get", AUTH_SCOPE_READ, BODY_NONE,
     handle_dsym_get},
    /* sentry-cli's chunked debug-file upload (routes_difs.c) */
    {"GET", "/api/0/organizations/*/chunk-upload/", true, "sentry_chunk_options",
     AUTH_SCOPE_UPLOAD, BODY_NONE, handle_chunk_options},
    {"POST", "/api/0/organizations/*/chunk-upload/", true, "sentry_chunk_post",
     AUTH_SCOPE_UPLOAD, BODY_FILE, handle_chunk_post},
    {"POST", "/api/0/projects/*/*/files/difs/assemble/", true, "sentry_difs_assemble",
     AUTH_SCOPE_UPLOAD, BODY_MEMORY, handle_difs_assemble},
    /* grouped issues (routes_issues.c) */
    {"GET", "/api/v1/issues", false, "issues_list", AUTH_SCOPE_READ, BODY_NONE,
     handle_issues_list},
    {"GET", "/api/v1/issues/*/reports", true, "issue_reports", AUTH_SCOPE_READ, BODY_NONE,
     handle_issue_reports},
    {"GET", "/api/v1/issues/", true, "issues_get", AUTH_SCOPE_READ, BODY_NONE,
     handle_issue_get},
    {"PATCH", "/api/v1/issues/", true, "issues_patch", AUTH_SCOPE_ADMIN, BODY_MEMORY,
     handle_issue_patch},
    /* synchronous symbolication (routes_symbolicate.c) */
    {"POST", "/api/v1/symbolicate", false, "symbolicate", AUTH_SCOPE_READ, BODY_MEMORY,
     handle_symbolicate},
    /* privacy-API samples and call sites (routes_samples.c) */
    {"POST", "/api/v1/samples", false, "samples_post", AUTH_SCOPE_INGEST, BODY_MEMORY,
     handle_samples_post},
    {"GET", "/api/v1/callsites", false, "callsites_list", AUTH_SCOPE_READ, BODY_NONE,
     handle_callsites_list},
    {"GET", "/api/v1/callsites.csv", false, "callsites_csv", AUTH_SCOPE_READ, BODY_NONE,
     handle_callsites_csv},
    /* release health (routes_sessions.c) */
    {"POST", "/api/v1/sessions", false, "sessions_post", AUTH_SCOPE_INGEST, BODY_MEMORY,
     handle_sessions_post},
    {"GET", "/api/v1/releases", false, "releases_list", AUTH_SCOPE_READ, BODY_NONE,
     handle_releases_list},
    {"GET", "/api/v1/releases/", true, "releases_get", AUTH_SCOPE_READ, BODY_NONE,
     handle_release_get},
    /* alert rules (routes_alerts.c) */
    {"GET", "/api/v1/alerts", false, "alerts_list", AUTH_SCOPE_ADMIN, BODY_NONE,
     handle_alerts_list},
    {"POST", "/api/v1/alerts", false, "alerts_post", AUTH_SCOPE_ADMIN, BODY_MEMORY,
     handle_alerts_post},
    {"DELETE", "/api/v1/alerts/", true, "alerts_delete", AUTH_SCOPE_ADMIN, BODY_NONE,
     handle_alerts_delete},
    /* projects (routes_projects.c) */
    {"GET", "/api/v1/projects", false, "projects_list", AUTH_SCOPE_READ, BODY_NONE,
     handle_projects_list},
    /* Sentry SDKs (routes_sentry.c): the DSN key is checked by the handler */
    {"POST", "/api/*/envelope/", true, "sentry_envelope", 0, BODY_MEMORY,
     handle_sentry_envelope},
    {"POST", "/api/*/store/", true, "sentry_store", 0, BODY_MEMORY, handle_sentry_store},
    {"POST", "/api/*/minidump/", true, "sentry_minidump", 0, BODY_MEMORY,
     handle_sentry_minidump},
    /* Bugsnag's clients, unchanged: notifier events and sessions, dSYM uploads as bugsnag-cli
     * and bugsnag-dsym-upload send them (routes_bugsnag.c); the API key is checked there */
    {"POST", "/bugsnag/notify", false, "bugsnag_notify", 0, BODY_MEMORY, handle_bugsnag_notify},
    {"POST", "/bugsnag/sessions", false, "bugsnag_sessions", 0, BODY_MEMORY,
     handle_bugsnag_sessions},
    {"POST", "/bugsnag/dsym", false, "bugsnag_dsym", 0, BODY_FILE, handle_bugsnag_dsym},
    {"POST", "/", false, "bugsnag_dsym_root", 0, BODY_FILE, handle_bugsnag_dsym},
    /* the dashboard and its sparklines (routes_web.c) */
    {"GET", "/", false, "dashboard", 0, BODY_NONE, handle_dashboard},
    {"GET", "/ui/", true, "dashboard_file", 0, BODY_NONE, handle_dashboard_asset},
    {"GET", "/api/v1/daily", false, "daily", AUTH_SCOPE_READ, BODY_NONE, handle_daily},
};
#define NROUTES (sizeof ROUTES / sizeof ROUTES[0])

/* `url` against `pattern`, in which each '*' stands for one non-empty segment (no '/');
 * *first = where the first such segment starts in `url`. */
static bool match_stars(const char *pattern, const char *url, const char **first)
{
    *first = NULL;
    while (*pattern) {
        if (*pattern == '*') {
            size_t seg = strcspn(url, "/");
            if (seg == 0)
                return false;
            if (!*first)
                *first = url;
            url += seg;
            pattern++;
        } else if (*pattern++ != *url++) {
            return false;
        }
    }
    return *url == '\0';
}

/* Find the route; on a path match with another method, *path_known is set. */
static const route *route_match(const char *method, const char *url, const char **param,
                                bool *path_known)
{
    *param = NULL;
    *path_known = false;
    for (size_t i = 0; i < NROUTES; i++) {
        const route *rt = &ROUTES[i];
        size_t n = strlen(rt->path);
        bool match;
        const char *star = rt->has_param ? strchr(rt->path, '*') : NULL;
        const char *first = NULL;
        if (star) {   /* each '*' is one segment; the param is the first of them */
            match = match_stars(rt->path, url, &first);
            n = first ? (size_t)(first - url) : 0;
        } else if (rt->has_param)
            match = strncmp(url, rt->path, n) == 0 && url[n] != '\0' && !strchr(url + n, '/');
        else
            match = strcmp(url, rt->path) == 0;
        if (!match)
            continue;
        if (strcmp(method, rt->method) != 0) {
            *path_known = true;
            continue;
        }
        if (rt->has_param)
            *param = url + n;   /* with a suffix, request_param_segment() cuts it */
        return rt;
    }
    return NULL;
}

/* ---- handler threads ------------------------------------------------------------------- */

/* A handler that waits (for Postgres, a symbolication, a dSYM conversion) or works for long
 * must not hold one of libmicrohttpd's threads: every other connection of that thread would
 * wait with it, /healthz included. So the request's connection is suspended and the handler
 * runs on one of njob_threads handler threads; its answer is kept in r->pending and queued
 * when libmicrohttpd resumes the connection and calls on_request again. A handler that hands
 * the suspended connection on (POST /api/v1/reports to the group commit) calls
 * handler_detach: the commit resumes it.
 *
 * What runs inline, on the libmicrohttpd thread that read the request:
 * - the handlers that never wait and do little (/healthz, the dashboard's files);
 * - a crash report (route_sheds) whose body is at most INLINE_REPORT_BYTES once decoded
 *   (report_runs_inline). Its handler never waits either: it parses, processes from memory
 *   alone (pipeline_process_at_intake: warm symcaches, the symfiles row cache, no Postgres;
 *   auth and DSN keys from the in-memory table; no lock it takes is held across a Postgres
 *   call), suspends the connection and submits the rows to the group commit, which resumes
 *   it. Its CPU is the parse, which for such a body is a few hundred microseconds at most:
 *   less than the two wakeups (this thread's queue signal, the handler thread's) a handoff
 *   costs, which were a fifth of the server's CPU per report. The part of a Sentry request
 *   that may wait (its sessions go to Postgres; the disk spool writes and fsyncs) is handed
 *   to a handler thread from inside the handler (handler_offload). A larger body, and one
 *   whose decoded size is not known from its headers, keeps the handler thread. */
#define JOBS_MAX_QUEUED 1024

/* The largest crash report body, decoded, parsed on a libmicrohttpd thread. The corpus's
 * reports of 60-70 kB (Apple text, .ips, KSCrash JSON) parse in 75-100 us each on this
 * machine (the fastest of 300 parses), a 4 kB one in 8 us; intake processing adds less than
 * that again. So at 64 KiB a report stays well under a millisecond, which /healthz and the
 * dashboard sharing the thread do not notice, and most crash reports are smaller (the
 * benchmark's 30-frame report is ~5 kB). Minidumps, KSCrash batches and reports of apps with
 * hundreds of images are often larger and keep the handler thread. */
#define INLINE_REPORT_BYTES (64u << 10)

/* The routes a crash storm floods: each request is admitted against srv->admission once its
 * body is read, or answered 429 at once. Their handler jobs queue behind every other
 * route's (the dashboard's API stays responsive while a storm is absorbed). */
static bool route_sheds(const route *rt)
{
    return rt->handler == handle_report_post || rt->handler == handle_sentry_envelope ||
           rt->handler == handle_sentry_store || rt->handler == handle_sentry_minidump ||
           rt->handler == handle_bugsnag_notify;
}

static bool runs_inline(const route *rt)
{
    return rt->handler == handle_healthz || rt->handler == handle_dashboard ||
           rt->handler == handle_dashboard_asset;
}

/* Whether crash report r (body read, admitted) is small enough to run inline: at most
 * INLINE_REPORT_BYTES as sent and once decoded. Identity bodies are their own size; a gzip
 * body's decoded size is read from its trailer (ISIZE, RFC 1952 2.3.1: the size mod 2^32,
 * little-endian) into *said, and the handler's decode is held to it
 * (ingest_gzip_trusted_size): a trailer that lies costs one byte of output past what it said,
 * then a 400, not a decode up to the report limit on this thread. Other encodings are not
 * guessed. *said is -1 when there is no such size. */
static bool report_runs_inline(http_request *r, int64_t *said)
{
    *said = -1;
    if (!route_sheds(r->route) || r->body_bytes > INLINE_REPORT_BYTES || r->mem == NULL)
        return false;
    const char *enc = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (enc[0] == '\0' || strcmp(enc, "identity") == 0)
        return true;
    if (strcmp(enc, "gzip") != 0 || r->body_bytes < 18)   /* 10 header + 8 trailer bytes */
        return false;
    const uint8_t *t = r->mem + r->body_bytes - 4;
    uint32_t isize = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
                     (uint32_t)t[3] << 24;
    *said = isize;
    return isize <= INLINE_REPORT_BYTES;
}

/* Set by handler_detach on a handler thread: its connection is resumed by someone else. */
static _Thread_local bool job_detached;

void handler_detach(void)
{
    job_detached = true;
}

static void *job_main(void *arg)
{
    http_server *srv = arg;
    pthread_mutex_lock(&srv->jobs_mu);
    for (;;) {
        while (!srv->jobs_head && !srv->jobs_stop)
            pthread_cond_wait(&srv->jobs_cv, &srv->jobs_mu);
        if (!srv->jobs_head)
            break;
        http_request *r = srv->jobs_head;
        srv->jobs_head = r->job_next;
        if (!srv->jobs_head)
            srv->jobs_tail = NULL;
        if (srv->jobs_urgent_tail == r)   /* the urgent ones are a prefix: none left */
            srv->jobs_urgent_tail = NULL;
        srv->jobs_queued--;
        srv->jobs_running++;
        pthread_mutex_unlock(&srv->jobs_mu);
        struct MHD_Connection *conn = r->conn;
        job_detached = false;
        if (srv->jobs_stop) {
            respond_error(r, ERR_STORE, "the server is stopping: retry on another node");
        } else {
            /* A request's database calls end together by its deadline (503 after), fixed
             * when it was read (request_deadline), so the time it queued here counts too,
             * except where big symcaches move (uploads, symbolication): there each
             * statement is bounded on its own. */
            if (r->route->body != BODY_FILE && r->route->handler != handle_symbolicate)
                store_deadline_set(r->deadline_ms);
            job_detached = false;
            r->route->handler(r);   /* its answer is in r->pending (none: see on_request) */
            store_deadline_end();
        }
        if (!job_detached)   /* detached: r may be freed already, the commit resumes it */
            MHD_resume_connection(conn);   /* r may be freed from here on */
        /* no wakeup here: an idle thread waits only for a queued job (jobs_enqueue signals
         * one), and jobs_stop polls; a broadcast per job woke every idle handler thread to
         * fight for jobs_mu and sleep again */
        pthread_mutex_lock(&srv->jobs_mu);
        srv->jobs_running--;
    }
    pthread_mutex_unlock(&srv->jobs_mu);
    return NULL;
}

/* Queue r for a handler thread, its connection suspended by the caller (`suspend`: here,
 * before a handler thread can see it, which may resume it at once); false (nothing done)
 * when the queue is full or stopping. */
static bool jobs_enqueue(http_server *srv, http_request *r, bool suspend)
{
    pthread_mutex_lock(&srv->jobs_mu);
    bool ok = !srv->jobs_stop && srv->jobs_queued < JOBS_MAX_QUEUED;
    if (ok) {
        if (suspend)
            MHD_suspend_connection(r->conn);
        r->offloaded = true;
        /* crash reports at the tail; any other request after the last other one queued,
         * before every report */
        bool urgent = !route_sheds(r->route);
        http_request **at = urgent ? (srv->jobs_urgent_tail ? &srv->jobs_urgent_tail->job_next
                                                             : &srv->jobs_head)
                                   : (srv->jobs_tail ? &srv->jobs_tail->job_next
                                                     : &srv->jobs_head);
        r->job_next = *at;
        *at = r;
        if (r->job_next == NULL)
            srv->jobs_tail = r;
        if (urgent)
            srv->jobs_urgent_tail = r;
        srv->jobs_queued++;
    }
    pthread_mutex_unlock(&srv->jobs_mu);
    /* after the unlock: a thread woken while jobs_mu is still held would block on it at once
     * (a second futex wait and context switch per request) */
    if (ok)
        pthread_cond_signal(&srv->jobs_cv);
    return ok;
}

bool handler_requeue(http_request *r)
{
    return jobs_enqueue(r->srv, r, false);   /* suspended already: by the detached handler */
}

bool handler_offload(http_request *r)
{
    assert(!r->offloaded);
    return jobs_enqueue(r->srv, r, true);
}

/* Whether a handler thread would take a request queued now without waiting. */
static bool jobs_thread_free(http_server *srv)
{
    pthread_mutex_lock(&srv->jobs_mu);
    bool free_now = srv->jobs_running + srv->jobs_queued < srv->njob_threads && !srv->jobs_stop;
    pthread_mutex_unlock(&srv->jobs_mu);
    return free_now;
}

/* Suspend r's connection and queue r for a handler thread; false (nothing done) when the
 * queue is full or stopping. */
static bool jobs_push(http_server *srv, http_request *r)
{
    return jobs_enqueue(srv, r, true);
}

static void jobs_start(http_server *srv, unsigned n)
{
    pthread_mutex_init(&srv->jobs_mu, NULL);
    pthread_cond_init(&srv->jobs_cv, NULL);
    srv->job_threads = xcalloc(n, sizeof *srv->job_threads);
    for (unsigned i = 0; i < n; i++) {
        if (pthread_create(&srv->job_threads[i], NULL, job_main, srv) != 0)
            break;
        srv->njob_threads++;
    }
    if (srv->njob_threads < n)
        log_event(LOG_WARN, "handler_threads_short", "wanted=%u started=%u", n,
                  srv->njob_threads);
}

/* Stop taking jobs; queued ones are answered 503. Waits until `deadline_ms` (http_now_ms) for
 * running handlers; true if all ended (the threads are joined then). */
static bool jobs_stop(http_server *srv, double deadline_ms)
{
    pthread_mutex_lock(&srv->jobs_mu);
    srv->jobs_stop = true;
    pthread_cond_broadcast(&srv->jobs_cv);
    while ((srv->jobs_running > 0 || srv->jobs_head) && http_now_ms() < deadline_ms) {
        pthread_mutex_unlock(&srv->jobs_mu);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&srv->jobs_mu);
    }
    bool idle = srv->jobs_running == 0 && !srv->jobs_head;
    pthread_mutex_unlock(&srv->jobs_mu);
    if (!idle)
        return false;
    for (unsigned i = 0; i < srv->njob_threads; i++)
        pthread_join(srv->job_threads[i], NULL);
    free(srv->job_threads);
    srv->job_threads = NULL;
    srv->njob_threads = 0;
    return true;
}

/* ---- MHD callbacks --------------------------------------------------------------------- */

/* Content-Length, 0 without a body, UINT64_MAX when the length is not declared (chunked). */
static uint64_t declared_body_bytes(struct MHD_Connection *conn)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl)
        return strtoull(cl, NULL, 10);
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                       MHD_HTTP_HEADER_TRANSFER_ENCODING) ? UINT64_MAX : 0;
}

/* libmicrohttpd's unescaping of the path and the query, except that "%00" decodes to the
 * byte 0xC0, which is never UTF-8: a NUL would cut the value short without anyone noticing;
 * this way url_is_utf8() refuses the request. */
static size_t unescape_url(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls, (void)conn;
    for (char *p = strchr(s, '%'); p != NULL; p = strchr(p + 1, '%'))
        if (p[1] == '0' && p[2] == '0')
            p[1] = 'C';
    return MHD_http_unescape(s);
}

static enum MHD_Result arg_is_utf8(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    bool *ok = cls;
    (void)kind;
    *ok = utf8_valid(key, strlen(key)) && (!value || utf8_valid(value, strlen(value)));
    return *ok ? MHD_YES : MHD_NO;
}

/* The decoded path and every query argument are UTF-8: what the routes, the logs, the JSON
 * answers and Postgres (text columns) can all take. */
static bool url_is_utf8(struct MHD_Connection *conn, const char *url)
{
    bool ok = utf8_valid(url, strlen(url));
    if (ok)
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, arg_is_utf8, &ok);
    return ok;
}

static http_request *request_new(http_server *srv, struct MHD_Connection *conn,
                                 const char *method, const char *url)
{
    http_request *r = xcalloc(1, sizeof *r);
    const config *cfg = srv->cfg;
    r->srv = srv;
    r->conn = conn;
    r->fd = -1;
    r->t0_ms = http_now_ms();
    /* Budget: the body, its gunzipped copy and the parser's model, with room to spare. */
    r->a = arena_new((size_t)cfg->max_report_bytes * 24 + (16u << 20));
    arena_defer(r->a, request_cleanup, r);
    /* "%08x%08x" of the seed and the counter, without printf (every request makes one) */
    static const char hex[] = "0123456789abcdef";
    uint64_t id = (uint64_t)srv->id_seed << 32 | (uint32_t)atomic_fetch_add(&srv->next_id, 1);
    for (int i = 0; i < 16; i++)
        r->id[i] = hex[(id >> (60 - 4 * i)) & 15];
    r->id[16] = '\0';
    err_info ignored;
    r->method = arena_strdup(r->a, method, &ignored);
    r->url = arena_strdup(r->a, url, &ignored);
    r->route_index = NROUTES;
    atomic_fetch_add(&srv->in_flight, 1);
    metrics_in_flight(1);
    return r;
}

/* An answer on the first callback (no route, no token, a body declared too large): sent
 * before the body is read, after which libmicrohttpd closes the connection. A declared body
 * means the client may still be writing it: the close lingers (conns_request_linger). */
static enum MHD_Result answer_early(http_request *r)
{
    if (declared_body_bytes(r->conn) > 0)
        conns_request_linger(r->slot);
    return respond_err(r, &r->err);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    http_server *srv = cls;
    http_request *r = *con_cls;
    (void)version;
    if (r == NULL) {
        r = request_new(srv, conn, method, url);
        *con_cls = r;
        r->slot = conns_slot(conn);
        conns_request_begin(r->slot, declared_body_bytes(conn));
        if (!url_is_utf8(conn, url)) {
            err_set(&r->err, ERR_INVALID, "the request URL is not UTF-8 once percent-decoded "
                    "(or it holds %%00)");
            return answer_early(r);
        }
        bool path_known;
        const char *param;
        r->route = route_match(method, url, &param, &path_known);
        if (!r->route) {
            err_set(&r->err, ERR_NOT_FOUND, "%s %s: %s", method, url,
                    path_known ? "method not allowed on this path" : "no such endpoint");
            return answer_early(r);
        }
        r->route_index = (unsigned)(r->route - ROUTES);
        if (param) {
            r->param = arena_strndup(r->a, param, strcspn(param, "/"), &r->err);
            if (!r->param)
                return answer_early(r);
        }
        /* Answered before the body is read: clients that sent Expect: 100-continue never
         * send it; libmicrohttpd closes the connection after such an early answer. */
        if (authorize(r) != ERR_OK)
            return answer_early(r);
        if (r->route->body != BODY_NONE && prepare_body(r) != ERR_OK)
            return answer_early(r);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t size = *upload_data_size;
        *upload_data_size = 0;
        conns_request_body(r->slot, size);
        if (r->status != 0 || r->route->body == BODY_NONE) {   /* answered early, or a GET */
            r->body_bytes += size;   /* discarded */
            return MHD_YES;
        }
        receive_body(r, upload_data, size);
        /* Past the limit by far: stop reading (the client gets no answer, but a connection
         * may not make us read without end). */
        if (r->failed && r->body_bytes > r->body_limit + DRAIN_SLACK_BYTES)
            return MHD_NO;
        return MHD_YES;
    }
    conns_request_handling(r->slot);
    if (r->offloaded) {   /* resumed: the handler thread is done with r */
        r->offloaded = false;
        if (!r->pending && r->intake == INTAKE_DONE)   /* the group commit resumed it */
            return r->route->handler(r);
        if (!r->pending)
            return respond_error(r, ERR_INTERNAL, "the request's handler gave no answer");
        struct MHD_Response *resp = r->pending;
        r->pending = NULL;
        enum MHD_Result ok = MHD_queue_response(conn, r->pending_status, resp);
        MHD_destroy_response(resp);
        if (ok == MHD_YES)
            r->status = r->pending_status;
        return ok;
    }
    if (r->status != 0)
        return MHD_YES;   /* answered already */
    if (r->failed)
        return respond_err(r, &r->err);
    /* A crash report over the node's budget is answered now, on this thread, without being
     * parsed: a client told 429 + Retry-After backs off, one kept waiting times out and
     * sends it again (admission.h). Its body was read: the connection stays open. */
    if (!r->admitted && route_sheds(r->route)) {
        if (!admission_enter(&r->retry_after_s, srv->admission, r->body_bytes, http_now_ms())) {
            r->shed = true;
            metrics_ingest_shed();
            char msg[160];
            snprintf(msg, sizeof msg, "this node is taking all the crash reports it can at "
                     "the moment: retry after %u s", r->retry_after_s);
            return respond_error(r, ERR_BUSY, msg);
        }
        r->admitted = true;
        metrics_ingest_admitted(1);
    }
    /* The request's one deadline: from here, whichever thread runs the handler, every store
     * call under it gets what is left (never a fresh budget). */
    if (r->deadline_ms == 0)
        r->deadline_ms = http_now_ms() + srv->cfg->db_timeout_ms;
    /* /metrics is served whatever the handler threads do: when none is free, here, with
     * what the process knows (no database gauges). */
    if (r->route->handler == handle_metrics && !jobs_thread_free(srv))
        r->no_store = true;
    int64_t said;
    bool report_inline = report_runs_inline(r, &said);
    if (report_inline && r->intake == INTAKE_NONE)   /* not again when the commit resumes it */
        metrics_ingest_inline();
    if (r->no_store || report_inline || runs_inline(r->route)) {
        store_deadline_set(r->deadline_ms);
        ingest_gzip_trusted_size(report_inline ? said : -1);
        enum MHD_Result ok = r->route->handler(r);
        ingest_gzip_trusted_size(-1);
        store_deadline_end();
        return ok;
    }
    if (!jobs_push(srv, r))
        return respond_error(r, ERR_STORE, "every handler thread is busy: retry shortly");
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_server *srv = cls;
    http_request *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    conns_request_end(conns_slot(conn));   /* the header timeout starts again */
    double now_ms = http_now_ms(), dur_ms = now_ms - r->t0_ms;
    if (r->admitted) {
        admission_leave(srv->admission, r->body_bytes, now_ms);
        metrics_ingest_admitted(-1);
    }
    unsigned status = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? r->status : 0;
    metrics_request(r->route_index, status, dur_ms / 1e3);
    const char *route_name = r->route ? r->route->name : "unmatched";
    /* refusals of a storm, thousands a second, are counted (admission's one line a second,
     * /metrics) rather than logged one by one */
    if (status >= 400 || status == 0)
        log_event(r->shed ? LOG_DEBUG : status >= 500 || status == 0 ? LOG_WARN : LOG_INFO,
                  "request",
                  "req=%s method=%s path=%s route=%s status=%u dur_ms=%.2f bytes_in=%llu "
                  "error=%s message=%s", r->id, r->method, r->url, route_name, status, dur_ms,
                  (unsigned long long)r->body_bytes,
                  status ? err_name(r->err.code) : "client_gone", status ? r->err.msg : NULL);
    else
        log_event(LOG_INFO, "request",
                  "req=%s method=%s path=%s route=%s status=%u dur_ms=%.2f bytes_in=%llu", r->id,
                  r->method, r->url, route_name, status, dur_ms, (unsigned long long)r->body_bytes);
    arena_free(r->a);   /* runs request_cleanup: closes files, removes the scratch dir */
    free(r);
    metrics_in_flight(-1);
    atomic_fetch_sub(&srv->in_flight, 1);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    (void)cls;
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_event(LOG_WARN, "mhd", "message=%s", line);
}

/* ---- the metrics listener (STACKSIFT_METRICS_LISTEN) --------------------------------------- */

/* A loopback-only daemon of one thread for the scraper: GET /metrics without a token, 404 for
 * anything else. Its store calls are bounded like a request's. */
static enum MHD_Result on_metrics_request(void *cls, struct MHD_Connection *conn,
                                          const char *url, const char *method,
                                          const char *version, const char *upload_data,
                                          size_t *upload_data_size, void **con_cls)
{
    static int started;
    http_server *srv = cls;
    (void)version, (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &started;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0;   /* a body is not read */
        return MHD_YES;
    }
    http_request *r = xcalloc(1, sizeof *r);
    r->srv = srv;
    r->conn = conn;
    r->fd = -1;
    r->a = arena_new(1u << 20);
    snprintf(r->id, sizeof r->id, "%08x%08x", srv->id_seed, atomic_fetch_add(&srv->next_id, 1));
    enum MHD_Result ok;
    if (strcmp(method, "GET") == 0 && strcmp(url, "/metrics") == 0) {
        store_deadline_begin(srv->cfg->db_timeout_ms);
        ok = handle_metrics(r);
        store_deadline_end();
    } else {
        ok = respond_error(r, ERR_NOT_FOUND, "this listener serves GET /metrics only");
    }
    arena_free(r->a);
    free(r);
    return ok;
}

static err_code metrics_listener_start(http_server *srv, err_info *err)
{
    const config *cfg = srv->cfg;
    if (!cfg->metrics_host)
        return ERR_OK;
    struct addrinfo hints = {.ai_flags = AI_NUMERICSERV | AI_PASSIVE, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char port[8];
    snprintf(port, sizeof port, "%u", cfg->metrics_port);
    int gai = getaddrinfo(cfg->metrics_host, port, &hints, &ai);
    if (gai != 0 || !ai)
        return err_set(err, ERR_INVALID, "resolving STACKSIFT_METRICS_LISTEN %s: %s",
                       cfg->metrics_host, gai_strerror(gai));
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    srv->metrics_daemon = MHD_start_daemon(
        flags, cfg->metrics_port, NULL, NULL, on_metrics_request, srv,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_CONNECTION_TIMEOUT, 10u,
        MHD_OPTION_CONNECTION_LIMIT, 64u,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1,
        MHD_OPTION_END);
    int saved = errno;
    freeaddrinfo(ai);
    if (!srv->metrics_daemon)
        return err_set(err, ERR_IO, "cannot listen on STACKSIFT_METRICS_LISTEN %s:%u: %s",
                       cfg->metrics_host, cfg->metrics_port,
                       saved ? strerror(saved) : "libmicrohttpd refused");
    return ERR_OK;
}

/* ---- lifecycle ------------------------------------------------------------------------- */

/* Each connection is a descriptor: raise the soft open-file limit to the hard one, and keep
 * the connection limit under it (with room for Postgres, symcaches and scratch files). */
static unsigned connection_limit(const config *cfg)
{
    enum { RESERVED_FDS = 256 };
    struct rlimit rl;
    unsigned want = cfg->max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return want;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            rl.rlim_cur = rl.rlim_max;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)want + RESERVED_FDS) {
        unsigned capped = rl.rlim_cur > 2 * RESERVED_FDS ? (unsigned)rl.rlim_cur - RESERVED_FDS
                                                         : (unsigned)rl.rlim_cur / 2;
        log_event(LOG_WARN, "connection_limit_capped", "wanted=%u allowed=%u open_files=%llu",
                  want, capped, (unsigned long long)rl.rlim_cur);
        want = capped;
    }
    return want;
}

static err_code ensure_dir(const char *path, err_info *err)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return err_set(err, ERR_IO, "creating directory %s: %s", path, strerror(errno));
    return ERR_OK;
}

/* store_intake_options.queued: reports the workers must process were committed. */
static void intake_queued(void *ctx)
{
    pipeline_post(ctx);
}

err_code http_server_start(http_server **out, const config *cfg, store *s, pipeline *pipe,
                           maintain *node, callsites *counters, err_info *err)
{
    *out = NULL;
    static const char *names[NROUTES + 1];
    for (size_t i = 0; i < NROUTES; i++)
        names[i] = ROUTES[i].name;
    names[NROUTES] = "unmatched";
    metrics_init(names, NROUTES + 1);

    /* jansson (request bodies) allocates through xalloc too: out of memory aborts with one
     * line (STYLE §6). */
    json_set_alloc_funcs(xmalloc, free);
    http_server *srv = xcalloc(1, sizeof *srv);
    srv->cfg = cfg;
    srv->store = s;
    srv->pipe = pipe;
    srv->node = node;
    srv->counters = counters;
    srv->id_seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    size_t dl = strlen(cfg->data_dir) + 16;
    srv->tmp_dir = xmalloc(dl);
    snprintf(srv->tmp_dir, dl, "%s/tmp", cfg->data_dir);
    err_code rc = ensure_dir(cfg->data_dir, err);
    if (rc == ERR_OK) {
        remove_tree(srv->tmp_dir);   /* scratch left by a process that was killed */
        rc = ensure_dir(srv->tmp_dir, err);
    }
    if (rc == ERR_OK) {
        /* the table on disk lets a node start (and spool envelopes) while Postgres is away */
        size_t cl = strlen(cfg->data_dir) + 16;
        char *cache = xmalloc(cl);
        snprintf(cache, cl, "%s/auth-table", cfg->data_dir);
        rc = auth_tokens_open_cached(&srv->tokens, s, cache, err);
        free(cache);
    }
    if (rc != ERR_OK)
        goto fail;
    jobs_start(srv, cfg->request_threads);
    srv->admission = admission_new(cfg->ingest_inflight, INGEST_INFLIGHT_BYTES);

    struct addrinfo hints = {.ai_flags = AI_NUMERICSERV | AI_PASSIVE, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char port[8];
    snprintf(port, sizeof port, "%u", cfg->listen_port);
    int gai = getaddrinfo(cfg->listen_host, port, &hints, &ai);
    if (gai != 0 || !ai) {
        rc = err_set(err, ERR_INVALID, "resolving listen address %s: %s", cfg->listen_host,
                     gai_strerror(gai));
        goto fail;
    }
    /* Commits that process reports at intake upsert issues and would wait on each other's
     * rows: one at a time, taking all that queued meanwhile. Plain inserts overlap well. */
    unsigned commits = cfg->intake_commits;
    if (commits == 0)
        commits = cfg->intake_processing && cfg->workers > 0 ? 1 : 4;
    store_intake_options io = {.max_inflight = commits, .gather_us = cfg->intake_gather_us,
                               .queued = intake_queued, .queued_ctx = pipe};
    rc = store_intake_new(&srv->intake, s, &io, err);
    if (rc == ERR_OK)
        rc = sentry_start(srv, err);   /* needs the intake: replays into it */
    if (rc != ERR_OK) {
        freeaddrinfo(ai);
        goto fail;
    }
    /* SUSPEND_RESUME: a POSTed report waits for its group commit without holding an HTTP
     * thread (routes_reports.c), other handlers run on the handler threads ("handler
     * threads" above). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    srv->conns = conns_new(cfg->header_timeout_s * 1000u, cfg->min_body_rate);
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* The logger first: libmicrohttpd prints messages about the options that follow it. */
    srv->daemon = MHD_start_daemon(
        flags, cfg->listen_port, NULL, NULL, on_request, srv,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_url, NULL,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->request_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit(cfg),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
        MHD_OPTION_NOTIFY_CONNECTION, conns_notify, srv->conns,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1,
        MHD_OPTION_END);
    int saved = errno;
    freeaddrinfo(ai);
    if (!srv->daemon) {
        rc = err_set(err, ERR_IO, "cannot listen on %s:%u: %s", cfg->listen_host,
                     cfg->listen_port, saved ? strerror(saved) : "libmicrohttpd refused");
        goto fail;
    }
    rc = metrics_listener_start(srv, err);
    if (rc != ERR_OK) {
        MHD_stop_daemon(srv->daemon);
        goto fail;
    }
    ingest_assembler_options ao = {
        .store = s,
        .cache = pipe ? pipeline_files(pipe) : NULL,
        .dsym = {.threads = cfg->dsym_threads, .max_unpacked_bytes = cfg->max_unpacked_bytes,
                 .max_ratio = cfg->max_zip_ratio},
        .tmp_dir = srv->tmp_dir,
        .max_file_bytes = cfg->max_upload_bytes,
        .chunk_ttl_s = cfg->chunk_expiry_s,
    };
    rc = ingest_assembler_new(&srv->assembler, &ao, err);
    if (rc != ERR_OK) {
        MHD_stop_daemon(srv->daemon);
        if (srv->metrics_daemon)
            MHD_stop_daemon(srv->metrics_daemon);
        goto fail;
    }
    *out = srv;
    return ERR_OK;
fail:
    sentry_free(srv);
    store_intake_free(srv->intake);
    if (srv->job_threads)
        jobs_stop(srv, http_now_ms());   /* nothing was queued: returns at once */
    auth_tokens_close(srv->tokens);
    conns_free(srv->conns);
    admission_free(srv->admission);
    free(srv->tmp_dir);
    free(srv);
    return rc;
}

unsigned http_server_stop(http_server *srv)
{
    if (!srv)
        return 0;
    /* Stop accepting; the listening socket is ours to close once quiesced. */
    MHD_socket lfd = MHD_quiesce_daemon(srv->daemon);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd);
    /* Connections without a request in progress (idle keep-alive, headers not complete) have
     * nothing to finish: closed now, and again as requests end. */
    double deadline = http_now_ms() + srv->cfg->shutdown_timeout_ms;
    unsigned closed = conns_close_idle(srv->conns);
    while (atomic_load(&srv->in_flight) > 0 && http_now_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        closed += conns_close_idle(srv->conns);
    }
    unsigned left = (unsigned)atomic_load(&srv->in_flight);
    log_event(LOG_INFO, "http_draining_done", "idle_closed=%u unfinished=%u", closed, left);
    /* A handler still running (a long dSYM conversion) holds a suspended connection, which
     * libmicrohttpd cannot stop under it: past the deadline the process just ends (nothing
     * acknowledged is lost: an answer is sent only after its commit). Before the intake
     * stops: a report's handler submits to it. */
    if (!jobs_stop(srv, deadline + 500)) {
        log_event(LOG_WARN, "server_stopped", "unfinished_requests=%u message=%s", left,
                  "a handler is still running: exiting without waiting for it");
        _exit(1);
    }
    /* The spool's replay commits through the intake: stopped first (what it holds stays on
     * disk for the next start). */
    sentry_stop(srv);
    /* Commits what is queued and resumes every suspended connection: libmicrohttpd must not
     * be stopped with a connection still suspended. */
    store_intake_free(srv->intake);
    MHD_stop_daemon(srv->daemon);
    if (srv->metrics_daemon)
        MHD_stop_daemon(srv->metrics_daemon);
    ingest_assembler_free(srv->assembler);   /* lets each thread finish its file */
    sentry_free(srv);                        /* no handler spools any more */
    auth_tokens_close(srv->tokens);
    conns_free(srv->conns);
    admission_free(srv->admission);   /* after the daemon: its last requests leave it */
    free(srv->tmp_dir);
    free(srv);
    return left;
}

