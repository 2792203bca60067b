/*
 * metrics - counters behind one mutex; cheap next to a request's database round trip.
 */
#include "http/metrics.h"
#include "ingest/ingest_sentry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "http/conns.h"

#define MAX_STATUSES 24
static const double BUCKETS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                 0.25,  0.5,    1,     2.5,  5,     10,   30};
#define NBUCKETS (sizeof BUCKETS / sizeof BUCKETS[0])
#define NERR (ERR_BUSY + 1)

typedef struct {
    unsigned status[MAX_STATUSES];
    uint64_t count[MAX_STATUSES];
    unsigned nstatus;
    uint64_t buckets[NBUCKETS]; /* non-cumulative here, summed when rendered */
    uint64_t total;
    double sum_s;
} route_stats;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *route_names[METRICS_MAX_ROUTES];
static unsigned nroutes;
static route_stats routes[METRICS_MAX_ROUTES];
static uint64_t reports_accepted, reports_rejected[NERR];
static uint64_t dsyms_created, dsyms_updated, dsyms_existing, dsym_uploads_failed[NERR];
static uint64_t dsym_skipped_dwarf, dsym_skipped_slices;
static uint64_t bugsnag_sessions;
static int64_t in_flight, connections, ingest_admitted;
static uint64_t ingest_shed;
static atomic_uint_fast64_t ingest_inline;   /* counted on every report path: no lock */
static uint64_t connections_closed[CONN_CLOSED_NREASONS];

/* ---- the text exposition format (Prometheus): a family's HELP and TYPE lines, then its
 * samples ---------------------------------------------------------------------------------- */

static void family(buf *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one unlabelled sample. */
static void single(buf *out, const char *name, const char *type, const char *help, long long v)
{
    family(out, name, type, help);
    buf_printf(out, "%s %lld\n", name, v);
}

/* A counter with one sample per error code (err_name), `counts` indexed by err_code. */
static void by_code(buf *out, const char *name, const char *help, const uint64_t counts[NERR])
{
    family(out, name, "counter", help);
    for (unsigned c = 1; c < NERR; c++)
        buf_printf(out, "%s{code=\"%s\"} %llu\n", name, err_name((err_code)c),
                   (unsigned long long)counts[c]);
}

void metrics_bugsnag_sessions(uint64_t n)
{
    pthread_mutex_lock(&mu);
    bugsnag_sessions += n;
    pthread_mutex_unlock(&mu);
}

void metrics_ingest_shed(void)
{
    pthread_mutex_lock(&mu);
    ingest_shed++;
    pthread_mutex_unlock(&mu);
}

void metrics_ingest_inline(void)
{
    atomic_fetch_add_explicit(&ingest_inline, 1, memory_order_relaxed);
}

void metrics_ingest_admitted(int delta)
{
    pthread_mutex_lock(&mu);
    ingest_admitted += delta;
    pthread_mutex_unlock(&mu);
}

void metrics_init(const char *const *names, unsigned n)
{
    pthread_mutex_lock(&mu);
    nroutes = n > METRICS_MAX_ROUTES ? METRICS_MAX_ROUTES : n;
    for (unsigned i = 0; i < nroutes; i++)
        route_names[i] = names[i];
    pthread_mutex_unlock(&mu);
}

void metrics_request(unsigned route, unsigned status, double seconds)
{
    pthread_mutex_lock(&mu);
    if (route < nroutes) {
        route_stats *r = &routes[route];
        unsigned i = 0;
        while (i < r->nstatus && r->status[i] != status)
            i++;
        if (i == r->nstatus && i < MAX_STATUSES)
            r->status[r->nstatus++] = status;
        if (i < MAX_STATUSES)
            r->count[i]++;
        size_t b = 0;
        while (b < NBUCKETS && seconds > BUCKETS[b])
            b++;
        if (b < NBUCKETS)
            r->buckets[b]++;
        r->total++;
        r->sum_s += seconds;
    }
    pthread_mutex_unlock(&mu);
}

void metrics_report_accepted(void)
{
    pthread_mutex_lock(&mu);
    reports_accepted++;
    pthread_mutex_unlock(&mu);
}

void metrics_report_rejected(err_code code)
{
    pthread_mutex_lock(&mu);
    if ((unsigned)code < NERR)
        reports_rejected[code]++;
    pthread_mutex_unlock(&mu);
}

void metrics_dsym_processed(const char *status)
{
    pthread_mutex_lock(&mu);
    if (strcmp(status, "created") == 0)
        dsyms_created++;
    else if (strcmp(status, "updated") == 0)
        dsyms_updated++;
    else
        dsyms_existing++;
    pthread_mutex_unlock(&mu);
}

void metrics_dsym_skipped(uint64_t warnings, uint64_t slices)
{
    pthread_mutex_lock(&mu);
    dsym_skipped_dwarf += warnings;
    dsym_skipped_slices += slices;
    pthread_mutex_unlock(&mu);
}

void metrics_dsym_failed(err_code code)
{
    pthread_mutex_lock(&mu);
    if ((unsigned)code < NERR)
        dsym_uploads_failed[code]++;
    pthread_mutex_unlock(&mu);
}

void metrics_in_flight(int delta)
{
    pthread_mutex_lock(&mu);
    in_flight += delta;
    pthread_mutex_unlock(&mu);
}

void metrics_connections(int delta)
{
    pthread_mutex_lock(&mu);
    connections += delta;
    pthread_mutex_unlock(&mu);
}

void metrics_connection_closed(unsigned reason)
{
    pthread_mutex_lock(&mu);
    if (reason < CONN_CLOSED_NREASONS)
        connections_closed[reason]++;
    pthread_mutex_unlock(&mu);
}

void metrics_render(buf *out, const store_pool_stats *pool, int64_t queued)
{
    pthread_mutex_lock(&mu);
    family(out, "stacksift_http_requests_total", "counter",
           "HTTP requests by route and status (status 0: the client went away).");
    for (unsigned r = 0; r < nroutes; r++)
        for (unsigned i = 0; i < routes[r].nstatus; i++)
            buf_printf(out, "stacksift_http_requests_total{route=\"%s\",status=\"%u\"} %llu\n",
                       route_names[r], routes[r].status[i],
                       (unsigned long long)routes[r].count[i]);
    family(out, "stacksift_http_request_duration_seconds", "histogram",
           "Time from the first byte of a request to the end of its response.");
    for (unsigned r = 0; r < nroutes; r++) {
        uint64_t cum = 0;
        if (routes[r].total == 0)
            continue;
        for (size_t b = 0; b < NBUCKETS; b++) {
            cum += routes[r].buckets[b];
            buf_printf(out, "stacksift_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                       route_names[r], BUCKETS[b], (unsigned long long)cum);
        }
        buf_printf(out, "stacksift_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
                   route_names[r], (unsigned long long)routes[r].total);
        buf_printf(out, "stacksift_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n",
                   route_names[r], routes[r].sum_s);
        buf_printf(out, "stacksift_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                   route_names[r], (unsigned long long)routes[r].total);
    }
    single(out, "stacksift_http_requests_in_flight", "gauge", "Requests being served now.",
           in_flight);
    single(out, "stacksift_http_connections", "gauge", "Open HTTP connections.", connections);
    single(out, "stacksift_ingest_admitted", "gauge",
           "Crash-report requests admitted and not yet answered (STACKSIFT_INGEST_INFLIGHT at "
           "most).", ingest_admitted);
    single(out, "stacksift_ingest_shed_total", "counter",
           "Crash-report requests answered 429 at once because the node had as many in "
           "progress as it takes (load shedding).", (long long)ingest_shed);
    single(out, "stacksift_ingest_inline_total", "counter",
           "Crash-report requests whose handler ran on the HTTP thread that read them (a body "
           "of at most 64 KiB decoded) instead of a handler thread.",
           (long long)atomic_load_explicit(&ingest_inline, memory_order_relaxed));
    family(out, "stacksift_http_connections_closed_total", "counter",
           "Connections the server closed because they held a slot without using it, by reason.");
    for (unsigned i = 0; i < CONN_CLOSED_NREASONS; i++)
        buf_printf(out, "stacksift_http_connections_closed_total{reason=\"%s\"} %llu\n",
                   conns_reason_name((conn_closed_reason)i),
                   (unsigned long long)connections_closed[i]);
    single(out, "stacksift_bugsnag_sessions_total", "counter",
           "Sessions Bugsnag's notifier reported (POST /bugsnag/sessions).",
           (long long)bugsnag_sessions);
    single(out, "stacksift_reports_accepted_total", "counter",
           "Reports committed and answered 202.", (long long)reports_accepted);
    by_code(out, "stacksift_reports_rejected_total", "Reports refused, by error code.",
            reports_rejected);
    family(out, "stacksift_dsyms_processed_total", "counter",
           "Debug files of successful uploads, new or already known.");
    buf_printf(out, "stacksift_dsyms_processed_total{status=\"created\"} %llu\n"
                    "stacksift_dsyms_processed_total{status=\"updated\"} %llu\n"
                    "stacksift_dsyms_processed_total{status=\"exists\"} %llu\n",
               (unsigned long long)dsyms_created, (unsigned long long)dsyms_updated,
               (unsigned long long)dsyms_existing);
    family(out, "stacksift_dsym_parts_skipped_total", "counter",
           "Parts of uploaded debug files left out as unreadable, the rest kept: DWARF units, "
           "functions and line sequences, and slices of fat files.");
    buf_printf(out, "stacksift_dsym_parts_skipped_total{part=\"dwarf\"} %llu\n"
                    "stacksift_dsym_parts_skipped_total{part=\"slice\"} %llu\n",
               (unsigned long long)dsym_skipped_dwarf, (unsigned long long)dsym_skipped_slices);
    by_code(out, "stacksift_dsym_uploads_failed_total", "dSYM uploads refused, by error code.",
            dsym_uploads_failed);
    pthread_mutex_unlock(&mu);

    single(out, "stacksift_db_pool_size", "gauge", "Most Postgres connections the pool opens.",
           pool->size);
    family(out, "stacksift_db_pool_connections", "gauge", "Postgres connections by state.");
    buf_printf(out, "stacksift_db_pool_connections{state=\"idle\"} %u\n"
                    "stacksift_db_pool_connections{state=\"in_use\"} %u\n",
               pool->idle, pool->open - pool->idle);
    single(out, "stacksift_db_pool_waiting", "gauge", "Requests waiting for a connection.",
           pool->waiting);
    single(out, "stacksift_db_breaker_open", "gauge",
           "1 while the circuit breaker in front of the pool refuses database calls (the "
           "database stopped answering).", pool->breaker_open ? 1 : 0);
    single(out, "stacksift_db_breaker_opened_total", "counter",
           "Times the circuit breaker opened.", (long long)pool->breaker_opened);
    single(out, "stacksift_db_breaker_rejected_total", "counter",
           "Database calls the open breaker refused at once (each a 503 + Retry-After).",
           (long long)pool->breaker_rejected);
    if (queued >= 0)
        single(out, "stacksift_reports_queued", "gauge", "Reports received and not processed yet.",
               queued);
}

void metrics_intake_render(buf *out, const store_intake_stats *st)
{
    single(out, "stacksift_intake_commits_total", "counter",
           "Group commits of POSTed reports (one INSERT each).", (long long)st->batches);
    single(out, "stacksift_intake_reports_total", "counter",
           "Reports committed by those commits.", (long long)st->reports);
    single(out, "stacksift_intake_largest_commit", "gauge", "Most reports one commit held.",
           (long long)st->largest);
    single(out, "stacksift_intake_failures_total", "counter", "Reports whose commit failed.",
           (long long)st->failures);
    single(out, "stacksift_intake_processed_total", "counter",
           "Reports processed at intake and committed processed, with their issue (the rest "
           "went to the queue).", (long long)st->processed);
    single(out, "stacksift_intake_processed_fallbacks_total", "counter",
           "Commits whose reports processed at intake were stored as received instead (their "
           "issue upsert failed).", (long long)st->processed_fallbacks);
}

/* ---- Sentry endpoints ---------------------------------------------------------------------- */

static uint64_t sentry_items[INGEST_SENTRY_ITEM_KINDS], sentry_events, sentry_no_event,
    sentry_refused[NERR], sentry_spool_full, sentry_sessions_dropped;

void metrics_sentry_session_dropped(void)
{
    pthread_mutex_lock(&mu);
    sentry_sessions_dropped++;
    pthread_mutex_unlock(&mu);
}

void metrics_sentry_items(const size_t *items)
{
    pthread_mutex_lock(&mu);
    for (unsigned k = 0; k < INGEST_SENTRY_ITEM_KINDS; k++)
        sentry_items[k] += items[k];
    pthread_mutex_unlock(&mu);
}

void metrics_sentry_answered(bool with_event)
{
    pthread_mutex_lock(&mu);
    if (with_event)
        sentry_events++;
    else
        sentry_no_event++;
    pthread_mutex_unlock(&mu);
}

void metrics_sentry_refused(err_code code)
{
    pthread_mutex_lock(&mu);
    if ((unsigned)code < NERR)
        sentry_refused[code]++;
    pthread_mutex_unlock(&mu);
}

void metrics_sentry_spool_full(void)
{
    pthread_mutex_lock(&mu);
    sentry_spool_full++;
    pthread_mutex_unlock(&mu);
}

void metrics_sentry_render(buf *out, uint64_t spool_entries, uint64_t spool_bytes,
                           uint64_t spooled, uint64_t replayed, uint64_t dropped)
{
    pthread_mutex_lock(&mu);
    family(out, "stacksift_sentry_items_total", "counter",
           "Items of accepted Sentry envelopes by type: event (stored), session (recorded), "
           "attachment, ignored (transactions, replays, ...) and unknown types (accepted, not "
           "stored).");
    for (unsigned k = 0; k < INGEST_SENTRY_ITEM_KINDS; k++)
        buf_printf(out, "stacksift_sentry_items_total{type=\"%s\"} %llu\n",
                   ingest_sentry_item_kind_name((ingest_sentry_item_kind)k),
                   (unsigned long long)sentry_items[k]);
    family(out, "stacksift_sentry_accepted_total", "counter",
           "Sentry requests answered 200, with and without an event.");
    buf_printf(out, "stacksift_sentry_accepted_total{event=\"yes\"} %llu\n"
                    "stacksift_sentry_accepted_total{event=\"no\"} %llu\n",
               (unsigned long long)sentry_events, (unsigned long long)sentry_no_event);
    by_code(out, "stacksift_sentry_rejected_total", "Sentry requests refused, by error code.",
            sentry_refused);
    single(out, "stacksift_sentry_sessions_dropped_total", "counter",
           "Session items of accepted envelopes that did not parse (or were refused by the "
           "release view).", (long long)sentry_sessions_dropped);
    uint64_t full = sentry_spool_full;
    pthread_mutex_unlock(&mu);
    single(out, "stacksift_spool_entries", "gauge",
           "Envelopes in this node's disk spool, waiting for Postgres.", (long long)spool_entries);
    single(out, "stacksift_spool_bytes", "gauge", "Bytes of this node's disk spool.",
           (long long)spool_bytes);
    single(out, "stacksift_spool_written_total", "counter", "Envelopes spooled since start.",
           (long long)spooled);
    single(out, "stacksift_spool_replayed_total", "counter",
           "Spooled envelopes committed since start.", (long long)replayed);
    single(out, "stacksift_spool_dropped_total", "counter",
           "Spooled envelopes dropped at replay (a wrong key, a body that no longer parses).",
           (long long)dropped);
    single(out, "stacksift_spool_full_total", "counter",
           "Envelopes answered 429 because the spool was full.", (long long)full);
}
