/*
 * static - the dashboard's files, compiled into the binary (server/web/embed_web.cmake), at
 * GET / (index.html) and GET /ui/{name}. No token: the page asks for one and sends it with
 * each API call. Every answer carries its ETag and "Cache-Control: no-cache", so a browser
 * revalidates with If-None-Match and gets a body-less 304 while the binary is the same.
 * The Content-Security-Policy allows this origin only: the page loads nothing from elsewhere.
 */
#include <microhttpd.h>
#include <string.h>

#include "http/http_internal.h"
#include "http/web.h"

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
