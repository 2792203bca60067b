/*
 * metrics - process-wide counters for GET /metrics (Prometheus text format 0.0.4).
 * Internal to server/http. Thread-safe.
 */
#ifndef STACKSIFT_HTTP_METRICS_H
#define STACKSIFT_HTTP_METRICS_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "store/store.h"
#include "store/store_intake.h"

#define METRICS_MAX_ROUTES 32

/* metrics_init - register the route names (static strings; index = route id). */
void metrics_init(const char *const *routes, unsigned nroutes);

/* metrics_request - one finished request: route id, HTTP status (0 = aborted), seconds. */
void metrics_request(unsigned route, unsigned status, double seconds);

void metrics_report_accepted(void);
void metrics_report_rejected(err_code code);
void metrics_dsym_processed(const char *status);   /* "created", "updated", "exists" */
void metrics_dsym_failed(err_code code);
/* metrics_dsym_skipped - parts of uploaded debug files left out as unreadable: `warnings`
 * DWARF parts of built slices (units, functions, line sequences), `slices` fat-file slices. */
void metrics_dsym_skipped(uint64_t warnings, uint64_t slices);
void metrics_in_flight(int delta);
void metrics_connections(int delta);               /* open HTTP connections */
void metrics_connection_closed(unsigned reason);   /* conns.h conn_closed_reason */

/* metrics_render - append every metric; `pool` and `queued` (< 0: unknown) are sampled now. */
void metrics_render(buf *out, const store_pool_stats *pool, int64_t queued);

/* metrics_intake_render - append the group commit's counters (store_intake_stats). */
void metrics_intake_render(buf *out, const store_intake_stats *st);

#endif
