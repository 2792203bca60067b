/*
 * routes_web - the dashboard (server/web): its files, compiled into the binary
 * (server/web/embed_web.cmake), at GET / (index.html) and GET /ui/{name}, and the one API
 * route it needs beyond the issues API, GET /api/v1/daily?issues=1,2,3[&days=30]: per-day
 * counts of a page of issues in one request (the issue list's sparklines).
 *
 * The files need no token: the page asks for one and sends it with each API call. Every
 * answer carries its ETag and "Cache-Control: no-cache", so a browser revalidates with
 * If-None-Match and gets a body-less 304 while the binary is the same. The
 * Content-Security-Policy allows this origin only: the page loads nothing from elsewhere.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_internal.h"
#include "http/web.h"
#include "store/store_issues.h"

#define CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const web_asset *web_asset_find(const char *name)
{
    for (size_t i = 0; i < WEB_ASSETS_COUNT; i++)
        if (strcmp(WEB_ASSETS[i].name, name) == 0)
            return &WEB_ASSETS[i];
    return NULL;
}

/* If-None-Match lists `etag` (or is "*"): the browser's copy is current. */
static bool etag_matches(http_request *r, const char *etag)
{
    const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm == NULL)
        return false;
    size_t n = strlen(etag);
    for (const char *p = inm; *p;) {
        p += strspn(p, " \t,");
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (*p == '*' || (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' ||
                                                       p[n] == ' ' || p[n] == '\t')))
            return true;
        p += strcspn(p, ",");
    }
    return false;
}

static enum MHD_Result send_asset(http_request *r, const web_asset *f)
{
    bool fresh = etag_matches(r, f->etag);
    unsigned status = fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK;
    /* PERSISTENT: the bytes are static data of the binary, never copied or freed. */
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        fresh ? 0 : f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, f->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, f->etag);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    if (strncmp(f->content_type, "text/html", 9) == 0) {
        MHD_add_response_header(resp, "Content-Security-Policy", CSP);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    enum MHD_Result ok = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES)
        r->status = status;
    return ok;
}

enum MHD_Result handle_dashboard(http_request *r)
{
    const web_asset *f = web_asset_find("index.html");
    if (f == NULL)
        return respond_error(r, ERR_INTERNAL, "the dashboard was not compiled in");
    return send_asset(r, f);
}

enum MHD_Result handle_dashboard_asset(http_request *r)
{
    const web_asset *f = r->param ? web_asset_find(r->param) : NULL;
    if (f == NULL) {
        err_set(&r->err, ERR_NOT_FOUND, "no dashboard file named %.80s", r->param ? r->param : "");
        return respond_err(r, &r->err);
    }
    return send_asset(r, f);
}

/* ---- GET /api/v1/daily ------------------------------------------------------------------ */

#define DAILY_MAX_ISSUES 200 /* the issue list's largest page */
#define DAILY_MAX_DAYS 90

/* "1,2,3" -> ids; each a positive integer, 1..DAILY_MAX_ISSUES of them. */
static err_code parse_ids(int64_t *ids, size_t *n, const char *s, err_info *err)
{
    *n = 0;
    if (s == NULL || *s == '\0')
        return err_set(err, ERR_INVALID, "issues= is required: issue ids separated by commas");
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long long v = (*p >= '0' && *p <= '9') ? strtoll(p, &end, 10) : 0;
        if (v < 1 || errno || (*end != ',' && *end != '\0'))
            return err_set(err, ERR_INVALID, "issues must be positive issue ids separated by "
                           "commas, not '%.60s'", s);
        if (*n == DAILY_MAX_ISSUES)
            return err_set(err, ERR_INVALID, "at most %d issue ids per request",
                           DAILY_MAX_ISSUES);
        ids[(*n)++] = v;
        if (*end == '\0')
            return ERR_OK;
        p = end + 1;
    }
}

enum MHD_Result handle_daily(http_request *r)
{
    int64_t ids[DAILY_MAX_ISSUES];
    size_t n;
    const char *issues = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "issues");
    const char *days_s = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "days");
    if (parse_ids(ids, &n, issues, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    long days = 30;
    if (days_s != NULL) {
        char *end;
        errno = 0;
        days = strtol(days_s, &end, 10);
        if (errno || *end || end == days_s || days < 1 || days > DAILY_MAX_DAYS)
            return respond_error(r, ERR_INVALID, "days must be a whole number from 1 to 90");
    }
    store_daily d;
    if (store_issues_daily(&d, r->srv->store, ids, n, (unsigned)days, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    /* {"days":["YYYY-MM-DD",...],"issues":{"<id>":[count,...]}} (docs/openapi.yaml, Daily) */
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "days");
    jsonw_array_begin(&w);
    for (size_t k = 0; k < d.ndays; k++)
        jsonw_str(&w, d.days[k]);
    jsonw_array_end(&w);
    jsonw_key(&w, "issues");
    jsonw_object_begin(&w);
    for (size_t i = 0; i < d.nissues; i++) {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)d.issues[i].id);
        jsonw_key(&w, key);
        jsonw_array_begin(&w);
        for (size_t k = 0; k < d.ndays; k++)
            jsonw_int(&w, d.issues[i].counts[k]);
        jsonw_array_end(&w);
    }
    jsonw_object_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}
