/*
 * http - the HTTP API on libmicrohttpd: routes, bearer auth, JSON in and out, err_code ->
 * status (http_status_for, the only place that knows statuses), metrics, one log line per
 * request. Endpoints are listed in docs/openapi.yaml (docs/api.md) and in ROUTES (server.c).
 */
#ifndef STACKSIFT_HTTP_HTTP_H
#define STACKSIFT_HTTP_HTTP_H

#include "base/err.h"
#include "config/config.h"
#include "ingest/callsites.h"
#include "ingest/maintain.h"
#include "ingest/pipeline.h"
#include "store/store.h"

typedef struct http_server http_server;

/* http_status_for - the HTTP status for an error code (ERR_OK -> 200). */
unsigned http_status_for(err_code code);

/* http_server_start - listen on cfg->listen_host:listen_port with an internal thread pool of
 * cfg->http_threads (epoll) and serve requests with `s`; `pipe` (may be NULL) serves the
 * symbolication routes and /metrics, and its symcache file cache takes new dSYMs; `node`
 * (may be NULL) adds the nodes and retention to /metrics; `counters` (may be NULL) are this
 * process's call site workers, handed the sample batches POSTed here. `cfg`, `s`, `pipe`,
 * `node` and `counters` must outlive the server. Owned by the caller: http_server_stop(). Errors ERR_IO (cannot listen: the message
 * says why), ERR_INVALID (host does not resolve). */
err_code http_server_start(http_server **out, const config *cfg, store *s, pipeline *pipe,
                           maintain *node, callsites *counters, err_info *err);

/* http_server_stop - stop accepting connections, let requests in flight finish for up to
 * cfg->shutdown_timeout_ms, then close everything and free the server. NULL is a no-op.
 * Returns how many requests were still running when the timeout hit (0 = clean). */
unsigned http_server_stop(http_server *srv);

#endif
