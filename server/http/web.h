/*
 * web - the dashboard's files (server/web), compiled in by server/web/embed_web.cmake as
 * WEB_ASSETS and served at / and /ui/{name} by routes_web.c. Not for use outside server/http.
 */
#ifndef STACKSIFT_HTTP_WEB_H
#define STACKSIFT_HTTP_WEB_H

#include <stddef.h>

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

#endif
