/*
 * http_internal - what server.c shares with the other route files of server/http (for now
 * routes_issues.c): the request and server records, the route table's row, and the
 * response helpers. Not for use outside server/http.
 */
#ifndef STACKSIFT_HTTP_HTTP_INTERNAL_H
#define STACKSIFT_HTTP_HTTP_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "config/config.h"
#include "http/http.h"
#include "ingest/pipeline.h"
#include "store/store.h"

#define MAX_UPLOAD_PARTS 16

#define MAX_UPLOAD_PARTS 16

typedef struct http_request http_request;
typedef enum { BODY_NONE, BODY_MEMORY, BODY_FILE } body_kind;
typedef enum MHD_Result (*handler_fn)(http_request *r);

typedef struct {
    const char *method;
    const char *path;   /* exact, or a prefix ending in '/' followed by one {param} segment,
                           or a prefix, '*' and a suffix: the {param} segment in place
                           of the '*' */
    bool has_param;
    const char *name;   /* route label in logs and metrics */
    unsigned scope;     /* INGEST_SCOPE_* needed; 0 = no token needed */
    body_kind body;
    handler_fn handler;
} route;

struct http_server {
    struct MHD_Daemon *daemon;
    const config *cfg;
    store *store;
    pipeline *pipe;          /* symbolication caches and workers; NULL in tests without */
    char *symcache_dir;
    char *tmp_dir;
    atomic_int in_flight;
    atomic_uint next_id;
    unsigned id_seed;
};

struct http_request {
    http_server *srv;
    struct MHD_Connection *conn;
    arena *a;
    char id[17];
    double t0_ms;
    const route *route;      /* NULL: no route matched */
    unsigned route_index;    /* metrics label; the last index is "unmatched" */
    const char *method, *url;
    const char *param;       /* the {param} segment, in the arena */
    unsigned status;         /* sent status, 0 until a response is queued */
    err_info err;            /* why status >= 400 */
    bool failed;             /* an error was found while receiving: answer it at the end */
    uint64_t body_bytes;     /* bytes received */
    uint64_t body_limit;
    /* BODY_MEMORY */
    uint8_t *mem;
    size_t mem_cap;
    /* BODY_FILE */
    char *work_dir;
    int fd;
    struct MHD_PostProcessor *pp;
    char *parts[MAX_UPLOAD_PARTS];
    size_t nparts;
};

/* ---- responses (server.c) -------------------------------------------------------------- */

/* queue_body - send `body` (malloc'd, `len` bytes; freed by libmicrohttpd) with `status`. */
enum MHD_Result queue_body(http_request *r, unsigned status, const char *content_type,
                           char *body, size_t len);
/* respond_json - send `body` (a new reference, stolen) as JSON with `status`. */
enum MHD_Result respond_json(http_request *r, unsigned status, json_t *body);
/* respond_error / respond_err - the one error shape {"error":{"code","message"}}. */
enum MHD_Result respond_error(http_request *r, err_code code, const char *message);
enum MHD_Result respond_err(http_request *r, const err_info *err);
/* json_str_or_null - json_string(s), or null for NULL. */
json_t *json_str_or_null(const char *s);
/* json_from_text - parsed JSON text, or null (NULL or unparsable text). */
json_t *json_from_text(const char *text);

/* ---- issue and symbolication routes (routes_issues.c) ---------------------------------- */

enum MHD_Result handle_issues_list(http_request *r);    /* GET /api/v1/issues */
enum MHD_Result handle_issue_get(http_request *r);      /* GET /api/v1/issues/{id} */
enum MHD_Result handle_issue_reports(http_request *r);  /* GET /api/v1/issues/{id}/reports */
enum MHD_Result handle_issue_patch(http_request *r);    /* PATCH /api/v1/issues/{id} */
enum MHD_Result handle_dsyms_missing(http_request *r);  /* GET /api/v1/dsyms/missing */
enum MHD_Result handle_symbolicate(http_request *r);    /* POST /api/v1/symbolicate */
/* GET /api/v1/reports/{id}?format=text: the symbolicated report as Apple crash text. */
enum MHD_Result handle_report_text(http_request *r, const char *format);
/* report_json_extend - add "issue_id", "fingerprint", "kind", "processed_at" and
 * "symbolicated" to a GET /api/v1/reports/{id} answer (unchanged if the store fails). */
void report_json_extend(http_request *r, json_t *body);

#endif
