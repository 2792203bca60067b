/*
 * http_internal - what the transport (server.c) shares with the route files of server/http,
 * one per resource: the request and server records, the route table's row, the request and
 * response helpers, and each route file's handlers (listed in ROUTES, server.c).
 * Not for use outside server/http.
 */
#ifndef STACKSIFT_HTTP_HTTP_INTERNAL_H
#define STACKSIFT_HTTP_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth/auth.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "config/config.h"
#include "http/admission.h"
#include "http/conns.h"
#include "http/http.h"
#include "ingest/assemble.h"
#include "ingest/ingest.h"
#include "ingest/ingest_minidump.h"
#include "ingest/pipeline.h"
#include "store/store.h"
#include "store/store_intake.h"
#include "store/store_reports.h"

#define MAX_UPLOAD_PARTS 16
#define MAX_FORM_FIELDS 16   /* multipart fields without a filename kept for the handler */
#define FORM_FIELD_MAX 1024  /* bytes of one such field's value; longer ones are dropped */
#define REPORT_BATCH_FACTOR 4 /* a multipart batch of reports (KSCrash's standard sink) may be
                                 this many times STACKSIFT_MAX_REPORT_BYTES; each report alone
                                 stays within it */

typedef struct http_request http_request;
typedef struct sentry_state sentry_state; /* routes_sentry.c: the spool and its replay */
typedef enum { BODY_NONE, BODY_MEMORY, BODY_FILE } body_kind;
typedef enum MHD_Result (*handler_fn)(http_request *r);

typedef struct {
    const char *method;
    const char *path;   /* exact, or a prefix ending in '/' followed by one {param} segment,
                           or a prefix, '*' and a suffix: the {param} segment in place
                           of the '*' */
    bool has_param;
    const char *name;   /* route label in logs and metrics */
    unsigned scope;     /* AUTH_SCOPE_* needed; 0 = no token needed */
    body_kind body;
    handler_fn handler;
} route;

struct http_server {
    struct MHD_Daemon *daemon;
    struct MHD_Daemon *metrics_daemon;   /* STACKSIFT_METRICS_LISTEN; NULL = none */
    const config *cfg;
    store *store;
    pipeline *pipe;          /* symbolication caches and workers; NULL in tests without */
    maintain *node;          /* heartbeats, retention, node metrics; NULL in tests without */
    callsites *counters;     /* this process's call site workers (batches handed over); NULL
                                = none */
    store_intake *intake;    /* group commit of POSTed reports (owned) */
    char *tmp_dir;
    conns *conns;            /* every open connection and the reaper (conns.h) */
    auth_tokens *tokens;     /* the token table (server/auth) */
    ingest_assembler *assembler; /* sentry-cli uploads: files assembled from chunks */
    sentry_state *sentry;    /* the Sentry endpoints' disk spool and replay thread (owned) */
    admission *admission;    /* the crash-report routes' budget: over it, 429 (owned) */
    /* handler threads: requests that may wait (database, symbolication, dSYMs) run there,
     * never on libmicrohttpd's threads (server.c "handler threads") */
    pthread_mutex_t jobs_mu;
    pthread_cond_t jobs_cv;
    http_request *jobs_head, *jobs_tail;
    http_request *jobs_urgent_tail; /* the last queued request that is no crash report: those
                                       go before every report (NULL: none queued) */
    unsigned jobs_queued, jobs_running, njob_threads;
    bool jobs_stop;
    pthread_t *job_threads;
    atomic_int in_flight;
    atomic_uint next_id;
    unsigned id_seed;
};

struct http_request {
    http_server *srv;
    struct MHD_Connection *conn;
    conn_slot *slot;         /* the connection's entry in srv->conns (NULL if unknown) */
    http_request *job_next;  /* in srv's job queue */
    bool offloaded;          /* the handler runs on a handler thread: answers are kept in
                                `pending` until libmicrohttpd resumes the connection */
    struct MHD_Response *pending;
    unsigned pending_status;
    arena *a;
    char id[17];
    double t0_ms;
    double deadline_ms;      /* every store call of the request ends by then (http_now_ms's
                                clock), whatever thread makes it; set once the request is
                                read, before its handler runs (server.c) */
    bool no_store;           /* runs on a libmicrohttpd thread (GET /metrics while every
                                handler thread is busy): must not call the store */
    const route *route;      /* NULL: no route matched */
    unsigned route_index;    /* metrics label; the last index is "unmatched" */
    const char *method, *url;
    const char *param;       /* the {param} segment, in the arena */
    unsigned status;         /* sent status, 0 until a response is queued */
    const char *disposition; /* Content-Disposition for the answer, NULL for none */
    err_info err;            /* why status >= 400 */
    bool admitted;           /* holds a place in srv->admission until it is answered */
    bool shed;               /* refused by srv->admission: answered 429 */
    unsigned retry_after_s;  /* a 429's Retry-After; 0: the default (a full spool's) */
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
    const char *form_names[MAX_FORM_FIELDS]; /* fields without a filename (request_form_field) */
    char *form_values[MAX_FORM_FIELDS];      /* in the arena, NUL-terminated; NULL: dropped */
    size_t form_lens[MAX_FORM_FIELDS];
    size_t nform;
    const char *part_fields[MAX_UPLOAD_PARTS]; /* multipart field name; NULL for a bare body */
    const char *part_names[MAX_UPLOAD_PARTS];  /* the file name as sent; NULL if none */
    size_t nparts;
    /* POST /api/v1/reports: the connection is suspended while its rows (one, or one per
     * MetricKit diagnostic) wait for the group commit; the committers fill these and the last
     * one resumes it (routes_reports.c) */
    enum { INTAKE_NONE, INTAKE_WAITING, INTAKE_DONE } intake;
    store_report_new *intake_rows; /* nintake rows, in the request arena */
    size_t nintake;
    char (*intake_ids)[37];        /* the stored ids, one per row */
    atomic_size_t intake_pending;  /* rows not committed yet */
    atomic_int intake_failed;      /* the first failure owns intake_rc and err */
    err_code intake_rc;
    int64_t project_id;            /* the project a DSN key (?sentry_key=, Bugsnag's API key)
                                      authenticated the request for; 0 = the default */
    /* a multipart batch (KSCrash's standard sink): every report's verdict; the accepted ones
     * are the intake rows, batch_row[i] the row of report i (SIZE_MAX: refused at parse) */
    bool batch_mode;
    ingest_batch_item *batch;
    size_t nbatch;
    size_t *batch_row;
    /* a Sentry envelope whose event waits for the group commit (routes_sentry.c), in the
     * arena */
    struct sentry_pending *sentry;
};

/* ---- requests and responses (server.c) ------------------------------------------------ */

/* handler_detach - called by a handler on a handler thread that gave its (suspended)
 * connection to another owner, which resumes it: the handler thread then leaves it alone, and
 * `r` may be gone as soon as that owner resumes it. When resumed, the route's handler runs
 * again on the libmicrohttpd thread to answer (r->intake is INTAKE_DONE). */
void handler_detach(void);

/* handler_requeue - from the owner of a detached request's suspended connection (a group
 * commit's callback): run the route's handler again on a handler thread, which then resumes
 * the connection, instead of resuming it now (for work that blocks: a spool write). False
 * (nothing done) when the handler threads are stopping or their queue is full. */
bool handler_requeue(http_request *r);

/* handler_offload - from a handler running inline on the libmicrohttpd thread (a small crash
 * report, server.c) that finds it must wait (a Postgres call, a disk fsync): suspend the
 * connection and run the route's handler again on a handler thread, which answers as for any
 * handler job; the handler keeps in `r` what it needs to go on there. The caller returns
 * MHD_YES at once and reads nothing of `r` after: the handler thread may have it already.
 * False (nothing done) when the handler threads are stopping or their queue is full. */
bool handler_offload(http_request *r);

/* http_now_ms - a monotonic clock in milliseconds, for durations. */
double http_now_ms(void);

/* queue_body - send `body` (malloc'd, `len` bytes; freed by libmicrohttpd) with `status`. */
enum MHD_Result queue_body(http_request *r, unsigned status, const char *content_type,
                           char *body, size_t len);
/* json_body_begin - an empty response body and a JSON writer on it (base/jsonw.h: the one
 * way answers are written; server/README.md, "JSON"). */
void json_body_begin(buf *body, jsonw *w);
/* respond_json - send the JSON in `body` (one value, as written by jsonw) with `status`;
 * takes body's memory (*body is empty afterwards). */
enum MHD_Result respond_json(http_request *r, unsigned status, buf *body);
/* http_public_message - what an answer may say of an error: `message` itself, except for
 * the server's own failures (ERR_STORE, ERR_INTERNAL), whose messages may carry the
 * database's words, SQLSTATEs and statement names: those are logged with the request id (the
 * request's log line has r->err) and the answer is a fixed sentence naming r->id, written to
 * out[cap]. Returns out or message. */
const char *http_public_message(char *out, size_t cap, const http_request *r, err_code code,
                                const char *message);
/* respond_error / respond_err - the one error shape {"error":{"code","message"}}. */
enum MHD_Result respond_error(http_request *r, err_code code, const char *message);
enum MHD_Result respond_err(http_request *r, const err_info *err);
/* respond_field_error - r->err in the error shape plus the field the client must fix:
 * {"error":{"code","message","field"}}; plain respond_err when `field` is NULL or "". */
enum MHD_Result respond_field_error(http_request *r, const char *field);
/* request_arg - the query argument `name`, or NULL when absent or empty. */
const char *request_arg(http_request *r, const char *name);
/* request_media_type - header `header` without parameters (";..."), lower case, in the
 * arena; "" when absent (Content-Type, Content-Encoding). */
const char *request_media_type(http_request *r, const char *header);
/* request_form_field - the value of a multipart form field without a filename (fields of at
 * most FORM_FIELD_MAX bytes, MAX_FORM_FIELDS of them, are kept), NULL if not sent. */
const char *request_form_field(http_request *r, const char *name);

/* bugsnag_dsym_part_begin - called before the first byte of a file part of a Bugsnag dSYM
 * upload is spooled: when the API key is known by then (an apiKey field before the file, as
 * bugsnag-cli and curl -F send it, or the Bugsnag-Api-Key header) it is checked now, so that
 * a wrong key costs no disk. ERR_OK when it is good or not known yet (the handler checks it
 * after the body); ERR_UNAUTHORIZED (r->err set) when it is not accepted. */
err_code bugsnag_dsym_part_begin(http_request *r);
/* A multipart/form-data body's parts (http_form_read); everything in the request arena. */
typedef struct {
    bool has_reports;              /* a "reports" part (KSCrash's standard sink) */
    uint8_t *reports;              /* its bytes ("" when none) */
    size_t reports_len;
    bool has_dump;                 /* an "upload_file_minidump" part */
    uint8_t *dump;                 /* its bytes (the first such part) */
    size_t dump_len;
    const char *dump_filename;     /* as sent, NULL if none */
    ingest_form_field *fields;     /* the text fields, in body order */
    size_t nfields;
} http_form;

/* http_form_read - the parts of the request's multipart body (gzip decoded first, up to `max`
 * bytes, when Content-Encoding says so); other file parts are skipped. Errors ERR_INVALID
 * (no boundary, malformed body), ERR_TOO_LARGE (over INGEST_FORM_MAX_FIELDS fields, a field
 * over INGEST_FORM_MAX_VALUE bytes, the arena's budget), ERR_UNSUPPORTED (encoding). */
err_code http_form_read(http_form *out, http_request *r, uint64_t max);

/* http_form_minidump_envelope - the envelope a multipart minidump upload is stored as
 * (ingest_minidump_envelope) of `form`, whose dump must be a minidump within
 * max_report_bytes. Errors ERR_INVALID, ERR_TOO_LARGE (r->err set). */
err_code http_form_minidump_envelope(const uint8_t **env, size_t *env_len, http_request *r,
                                     const http_form *form);

/* request_is_multipart - whether the request's Content-Type is multipart/form-data. */
bool request_is_multipart(http_request *r);
/* request_limit_arg - ?limit= within [1, max], `def` when absent. Errors ERR_INVALID. */
err_code request_limit_arg(unsigned *out, http_request *r, unsigned def, unsigned max);

/* ---- GET /healthz, /readyz, /metrics (routes_health.c) --------------------------------- */

enum MHD_Result handle_healthz(http_request *r);
enum MHD_Result handle_readyz(http_request *r);
enum MHD_Result handle_metrics(http_request *r);

/* ---- Sentry SDK endpoints (routes_sentry.c) ---------------------------------------------- */

enum MHD_Result handle_sentry_envelope(http_request *r); /* POST /api/{project}/envelope/ */
enum MHD_Result handle_sentry_store(http_request *r);    /* POST /api/{project}/store/ */
enum MHD_Result handle_sentry_minidump(http_request *r); /* POST /api/{project}/minidump/ */
/* sentry_start - open the spool (STACKSIFT_DATA_DIR/spool, STACKSIFT_SPOOL_MB) and start its
 * replay thread, which commits what an earlier run left there. Errors ERR_IO, ERR_INTERNAL. */
err_code sentry_start(http_server *srv, err_info *err);
/* sentry_stop - stop the replay thread (before the intake it commits through goes; spooled
 * entries stay on disk). sentry_free - then, once no handler runs, close the spool. Both are
 * no-ops when there is nothing to stop or free. */
void sentry_stop(http_server *srv);
void sentry_free(http_server *srv);
/* sentry_metrics_render - the Sentry endpoints' counters and the spool (GET /metrics). */
void sentry_metrics_render(buf *out, http_server *srv);

/* ---- /api/v1/reports (routes_reports.c) ------------------------------------------------ */

enum MHD_Result handle_report_post(http_request *r);    /* POST /api/v1/reports (one report,
                                                           or a multipart batch) */
enum MHD_Result handle_report_get(http_request *r);     /* GET /api/v1/reports/{id}[?format=] */
enum MHD_Result handle_report_raw(http_request *r);     /* GET /api/v1/reports/{id}/raw */
/* report_intake - one report (or one per MetricKit diagnostic / Bugsnag event) from the
 * request's body into the group commit, answered 202 once durable, into project
 * r->project_id; with `want_format` (NULL: any), a report of another format is 400. Suspends
 * the connection and is called again when the commit answers (runs inline, never on a handler
 * thread). */
enum MHD_Result report_intake(http_request *r, const char *want_format);

/* ---- /api/v1/dsyms (routes_dsyms.c) ---------------------------------------------------- */

enum MHD_Result handle_dsym_post(http_request *r);      /* POST /api/v1/dsyms */
/* dsym_upload_respond - the request's uploaded files (r->parts) stored as POST /api/v1/dsyms
 * stores them, answered 201/200 {"files":[...]}; with `conflict_if_known`, an upload whose
 * every debug file was stored already is 409 (what bugsnag-cli takes as a duplicate). */
enum MHD_Result dsym_upload_respond(http_request *r, bool conflict_if_known);
enum MHD_Result handle_dsym_list(http_request *r);      /* GET /api/v1/dsyms */
enum MHD_Result handle_dsym_get(http_request *r);       /* GET /api/v1/dsyms/{uuid} */
enum MHD_Result handle_dsyms_missing(http_request *r);  /* GET /api/v1/dsyms/missing */

/* ---- sentry-cli's chunked debug-file upload (routes_difs.c) --------------------------- */

/* The largest chunk POST: the maxRequestSize offered (sum of the chunks in one request)
 * plus room for the multipart framing and gzip's worst case. */
#define CHUNK_POST_MAX_BYTES ((uint64_t)CHUNK_REQUEST_BYTES + (2u << 20))
#define CHUNK_REQUEST_BYTES (32u << 20)

enum MHD_Result handle_chunk_options(http_request *r); /* GET  /api/0/organizations/{org}/chunk-upload/ */
enum MHD_Result handle_chunk_post(http_request *r);    /* POST /api/0/organizations/{org}/chunk-upload/ */
enum MHD_Result handle_difs_assemble(http_request *r); /* POST /api/0/projects/{org}/{project}/files/difs/assemble/ */

/* ---- /api/v1/issues (routes_issues.c) -------------------------------------------------- */

enum MHD_Result handle_issues_list(http_request *r);    /* GET /api/v1/issues */
enum MHD_Result handle_issue_get(http_request *r);      /* GET /api/v1/issues/{id} */
enum MHD_Result handle_issue_reports(http_request *r);  /* GET /api/v1/issues/{id}/reports */
enum MHD_Result handle_issue_patch(http_request *r);    /* PATCH /api/v1/issues/{id} */

/* ---- POST /api/v1/symbolicate (routes_symbolicate.c) ----------------------------------- */

enum MHD_Result handle_symbolicate(http_request *r);

/* ---- privacy-API samples and call sites (routes_samples.c) ---------------------------- */

enum MHD_Result handle_samples_post(http_request *r);   /* POST /api/v1/samples */
enum MHD_Result handle_callsites_list(http_request *r); /* GET /api/v1/callsites */
enum MHD_Result handle_callsites_csv(http_request *r);  /* GET /api/v1/callsites.csv */

/* ---- release health (routes_sessions.c) ------------------------------------------------ */

/* request_project_arg - ?project= (a project id or slug) when given, else 1 (the default
 * project). Errors ERR_INVALID (no such project; r->err set), ERR_STORE. */
err_code request_project_arg(int64_t *out, http_request *r);
enum MHD_Result handle_sessions_post(http_request *r);  /* POST /api/v1/sessions */
enum MHD_Result handle_releases_list(http_request *r);  /* GET /api/v1/releases */
enum MHD_Result handle_release_get(http_request *r);    /* GET /api/v1/releases/{release} */

/* ---- alert rules (routes_alerts.c) ---------------------------------------------------- */

enum MHD_Result handle_alerts_list(http_request *r);    /* GET /api/v1/alerts */
enum MHD_Result handle_alerts_post(http_request *r);    /* POST /api/v1/alerts */
enum MHD_Result handle_alerts_delete(http_request *r);  /* DELETE /api/v1/alerts/{id} */

/* ---- projects (routes_projects.c) ------------------------------------------------------ */

enum MHD_Result handle_projects_list(http_request *r);  /* GET /api/v1/projects */
/* request_project_filter - a list's ?project= (slug or id, as request_project_arg) as a
 * project id; 0 when absent: every project. Errors as request_project_arg. */
err_code request_project_filter(int64_t *project_id, http_request *r);

/* ---- Bugsnag's clients (routes_bugsnag.c) ---------------------------------------------- */

enum MHD_Result handle_bugsnag_notify(http_request *r);   /* POST /bugsnag/notify */
enum MHD_Result handle_bugsnag_sessions(http_request *r); /* POST /bugsnag/sessions */
enum MHD_Result handle_bugsnag_dsym(http_request *r);     /* POST /bugsnag/dsym, POST / */

/* ---- the dashboard (routes_web.c) ------------------------------------------------------ */

enum MHD_Result handle_dashboard(http_request *r);        /* GET / -> index.html */
enum MHD_Result handle_dashboard_asset(http_request *r);  /* GET /ui/{name} */
enum MHD_Result handle_daily(http_request *r);            /* GET /api/v1/daily?issues= */

#endif
