/*
 * routes_health - the service's own state: GET /healthz (the process answers), GET /readyz
 * (the database is reachable and its schema is the one this binary expects), GET /metrics
 * (Prometheus text: http/metrics.c, the pool and its circuit breaker, the queue and the
 * pipeline). /readyz answers 503 at once while the breaker is open. No token.
 */
#include "base/buf.h"
#include "http/http_internal.h"
#include "http/metrics.h"
#include "store/store_reports.h"
#include "store/store_samples.h"

enum MHD_Result handle_healthz(http_request *r)
{
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "status", "ok");
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_readyz(http_request *r)
{
    int version;
    err_info err = {0};
    double open_ms = 0;
    if (store_breaker_open(r->srv->store, &open_ms)) {
        err_set(&err, ERR_STORE, "the database circuit breaker is open (for %.0f ms): the "
                "database stopped answering and is probed until it does", open_ms);
        return respond_err(r, &err);
    }
    if (store_schema_version(&version, r->srv->store, &err) != ERR_OK)
        return respond_err(r, &err);
    int need = store_schema_required();
    if (version != need)
        return respond_error(r, ERR_STORE, version < need
                                 ? "database schema is older than this server: run "
                                   "`stacksift migrate`"
                                 : "database schema is newer than this server");
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "status", "ready");
    jsonw_kint(&w, "schema", version);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_metrics(http_request *r)
{
    store_pool_stats pool;
    int64_t queued = -1;
    err_info err;
    store_pool_stats_get(&pool, r->srv->store);
    /* On a libmicrohttpd thread (every handler thread was busy) nothing waits for the
     * database: the gauges read from it are left out, as when it is down. */
    if (r->no_store || store_reports_count(&queued, r->srv->store, "received", &err) != ERR_OK)
        queued = -1;   /* the database being down must not hide the other metrics */
    buf out;
    buf_init(&out);
    metrics_render(&out, &pool, queued);
    store_intake_stats intake;
    store_intake_stats_get(&intake, r->srv->intake);
    metrics_intake_render(&out, &intake);
    if (r->srv->pipe)
        pipeline_metrics_render(&out, r->srv->pipe, intake.processed, intake.regressions);
    maintain_metrics_render(&out, r->srv->node);   /* NULL: nothing */
    sentry_metrics_render(&out, r->srv);
    callsites_metrics_render(&out, r->srv->counters);
    store_samples_stats ss;
    if (!r->no_store && store_samples_counts(&ss, r->srv->store, &err) == ERR_OK)   /* else left out */
        buf_printf(&out,
                   "# HELP stacksift_sample_batches_queued Sample batches accepted and not "
                   "counted yet.\n"
                   "# TYPE stacksift_sample_batches_queued gauge\n"
                   "stacksift_sample_batches_queued %lld\n"
                   "# HELP stacksift_callsite_pending_calls Sampled calls whose stacks wait for "
                   "an in-app dSYM.\n"
                   "# TYPE stacksift_callsite_pending_calls gauge\n"
                   "stacksift_callsite_pending_calls %lld\n"
                   "# HELP stacksift_callsite_pending_stacks Distinct stacks (per build and day) "
                   "waiting for an in-app dSYM.\n"
                   "# TYPE stacksift_callsite_pending_stacks gauge\n"
                   "stacksift_callsite_pending_stacks %lld\n",
                   (long long)ss.received, (long long)ss.pending_calls,
                   (long long)ss.pending_stacks);
    return queue_body(r, 200, "text/plain; version=0.0.4", (char *)out.data, out.len);
}

/* Media type without parameters, lower case, in the arena; "" if missing. */
