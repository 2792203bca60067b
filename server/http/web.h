/*
 * web - the dashboard: the files in server/web, compiled in by server/web/embed_web.cmake,
 * served at / and /ui/{name} by static.c, and the two API routes it needs beyond the issues
 * API (routes_web.c): per-day counts of many issues, and a report's raw bytes. Registered in
 * ROUTES (server.c); documented in docs/openapi.yaml. Not for use outside server/http.
 */
#ifndef STACKSIFT_HTTP_WEB_H
#define STACKSIFT_HTTP_WEB_H

#include <stddef.h>

#include "http/http_internal.h"

/* One embedded file. */
typedef struct {
    const char *name;               /* file name under server/web, e.g. "app.js" */
    const char *content_type;       /* from the extension */
    const unsigned char *data;      /* `len` bytes (plus a NUL) */
    size_t len;
    const char *etag;               /* quoted: "\"<16 hex of SHA-256>\"" */
} web_asset;

extern const web_asset WEB_ASSETS[];   /* generated web_assets.c */
extern const size_t WEB_ASSETS_COUNT;

/* web_asset_find - the embedded file called `name`, or NULL. */
const web_asset *web_asset_find(const char *name);

enum MHD_Result handle_dashboard(http_request *r);        /* GET / -> index.html */
enum MHD_Result handle_dashboard_asset(http_request *r);  /* GET /ui/{name} */
enum MHD_Result handle_daily(http_request *r);            /* GET /api/v1/daily?issues= */
enum MHD_Result handle_report_raw(http_request *r);       /* GET /api/v1/reports/{id}/raw */

#endif
