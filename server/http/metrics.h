/*
 * metrics - process-wide counters for GET /metrics (Prometheus text format 0.0.4).
 * Internal to server/http. Thread-safe.
 */
#ifndef STACKSIFT_HTTP_METRICS_H
#define STACKSIFT_HTTP_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "store/store.h"
#include "store/store_intake.h"

#define METRICS_MAX_ROUTES 64

/* metrics_init - register the route names (static strings; index = route id). */
void metrics_init(const char *const *routes, unsigned nroutes);

/* metrics_request - one finished request: route id, HTTP status (0 = aborted), seconds. */
void metrics_request(unsigned route, unsigned status, double seconds);

void metrics_report_accepted(void);
void metrics_report_rejected(err_code code);
void metrics_dsym_processed(const char *status);   /* "created", "updated", "exists" */
void metrics_bugsnag_sessions(uint64_t n);         /* sessions Bugsnag's notifier reported */
void metrics_dsym_failed(err_code code);
/* metrics_dsym_skipped - parts of uploaded debug files left out as unreadable: `warnings`
 * DWARF parts of built slices (units, functions, line sequences), `slices` fat-file slices. */
void metrics_dsym_skipped(uint64_t warnings, uint64_t slices);
void metrics_in_flight(int delta);
/* Crash-report requests refused by the admission budget (429), and admitted ones in
 * progress (admission.h). */
void metrics_ingest_shed(void);
void metrics_ingest_admitted(int delta);
/* Crash-report requests whose handler ran inline, on the HTTP thread that read them
 * (server.c, report_runs_inline). */
void metrics_ingest_inline(void);
void metrics_connections(int delta);               /* open HTTP connections */
void metrics_connection_closed(unsigned reason);   /* conns.h conn_closed_reason */

/* Sentry endpoints (routes_sentry.c): items of accepted envelopes by kind
 * (ingest_sentry_item_kind order, INGEST_SENTRY_ITEM_KINDS entries), answers, refusals by
 * error code, spool writes refused because it was full. */
void metrics_sentry_items(const size_t *items);
void metrics_sentry_answered(bool with_event);
void metrics_sentry_refused(err_code code);
void metrics_sentry_spool_full(void);
void metrics_sentry_session_dropped(void); /* a session item that did not parse or count */

/* metrics_sentry_render - append the Sentry counters and the spool's state (entries and
 * bytes on disk now; spooled, replayed and dropped since start). */
void metrics_sentry_render(buf *out, uint64_t spool_entries, uint64_t spool_bytes,
                           uint64_t spooled, uint64_t replayed, uint64_t dropped);

/* metrics_render - append every metric; `pool` and `queued` (< 0: unknown) are sampled now. */
void metrics_render(buf *out, const store_pool_stats *pool, int64_t queued);

/* metrics_intake_render - append the group commit's counters (store_intake_stats). */
void metrics_intake_render(buf *out, const store_intake_stats *st);

#endif
