/*
 * metrics - counters behind one mutex; cheap next to a request's database round trip.
 */
#include "http/metrics.h"
#include "ingest/ingest_sentry.h"

#include <pthread.h>
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
static int64_t in_flight, connections;
static uint64_t connections_closed[CONN_CLOSED_NREASONS];

void metrics_bugsnag_sessions(uint64_t n)
{
    pthread_mutex_lock(&mu);
    bugsnag_sessions += n;
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
    buf_append_str(out, "# HELP stacksift_http_requests_total HTTP requests by route and status "
                        "(status 0: the client went away).\n"
                        "# TYPE stacksift_http_requests_total counter\n");
    for (unsigned r = 0; r < nroutes; r++)
        for (unsigned i = 0; i < routes[r].nstatus; i++)
            buf_printf(out, "stacksift_http_requests_total{route=\"%s\",status=\"%u\"} %llu\n",
                       route_names[r], routes[r].status[i],
                       (unsigned long long)routes[r].count[i]);
    buf_append_str(out, "# HELP stacksift_http_request_duration_seconds Time from the first "
                        "byte of a request to the end of its response.\n"
                        "# TYPE stacksift_http_request_duration_seconds histogram\n");
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
    buf_printf(out, "# HELP stacksift_http_requests_in_flight Requests being served now.\n"
                    "# TYPE stacksift_http_requests_in_flight gauge\n"
                    "stacksift_http_requests_in_flight %lld\n", (long long)in_flight);
    buf_printf(out, "# HELP stacksift_http_connections Open HTTP connections.\n"
                    "# TYPE stacksift_http_connections gauge\n"
                    "stacksift_http_connections %lld\n", (long long)connections);
    buf_append_str(out, "# HELP stacksift_http_connections_closed_total Connections the server "
                        "closed because they held a slot without using it, by reason.\n"
                        "# TYPE stacksift_http_connections_closed_total counter\n");
    for (unsigned i = 0; i < CONN_CLOSED_NREASONS; i++)
        buf_printf(out, "stacksift_http_connections_closed_total{reason=\"%s\"} %llu\n",
                   conns_reason_name((conn_closed_reason)i),
                   (unsigned long long)connections_closed[i]);
    buf_printf(out, "# HELP stacksift_bugsnag_sessions_total Sessions Bugsnag's notifier "
                    "reported (POST /bugsnag/sessions).\n"
                    "# TYPE stacksift_bugsnag_sessions_total counter\n"
                    "stacksift_bugsnag_sessions_total %llu\n",
               (unsigned long long)bugsnag_sessions);
    buf_printf(out, "# HELP stacksift_reports_accepted_total Reports committed and answered 202.\n"
                    "# TYPE stacksift_reports_accepted_total counter\n"
                    "stacksift_reports_accepted_total %llu\n",
               (unsigned long long)reports_accepted);
    buf_append_str(out, "# HELP stacksift_reports_rejected_total Reports refused, by error code.\n"
                        "# TYPE stacksift_reports_rejected_total counter\n");
    for (unsigned c = 1; c < NERR; c++)
        buf_printf(out, "stacksift_reports_rejected_total{code=\"%s\"} %llu\n",
                   err_name((err_code)c), (unsigned long long)reports_rejected[c]);
    buf_printf(out, "# HELP stacksift_dsyms_processed_total Debug files of successful uploads, "
                    "new or already known.\n"
                    "# TYPE stacksift_dsyms_processed_total counter\n"
                    "stacksift_dsyms_processed_total{status=\"created\"} %llu\n"
                    "stacksift_dsyms_processed_total{status=\"updated\"} %llu\n"
                    "stacksift_dsyms_processed_total{status=\"exists\"} %llu\n",
               (unsigned long long)dsyms_created, (unsigned long long)dsyms_updated,
               (unsigned long long)dsyms_existing);
    buf_printf(out, "# HELP stacksift_dsym_parts_skipped_total Parts of uploaded debug files "
                    "left out as unreadable, the rest kept: DWARF units, functions and line "
                    "sequences, and slices of fat files.\n"
                    "# TYPE stacksift_dsym_parts_skipped_total counter\n"
                    "stacksift_dsym_parts_skipped_total{part=\"dwarf\"} %llu\n"
                    "stacksift_dsym_parts_skipped_total{part=\"slice\"} %llu\n",
               (unsigned long long)dsym_skipped_dwarf, (unsigned long long)dsym_skipped_slices);
    buf_append_str(out, "# HELP stacksift_dsym_uploads_failed_total dSYM uploads refused, by "
                        "error code.\n"
                        "# TYPE stacksift_dsym_uploads_failed_total counter\n");
    for (unsigned c = 1; c < NERR; c++)
        buf_printf(out, "stacksift_dsym_uploads_failed_total{code=\"%s\"} %llu\n",
                   err_name((err_code)c), (unsigned long long)dsym_uploads_failed[c]);
    pthread_mutex_unlock(&mu);

    buf_printf(out, "# HELP stacksift_db_pool_size Most Postgres connections the pool opens.\n"
                    "# TYPE stacksift_db_pool_size gauge\n"
                    "stacksift_db_pool_size %u\n"
                    "# HELP stacksift_db_pool_connections Postgres connections by state.\n"
                    "# TYPE stacksift_db_pool_connections gauge\n"
                    "stacksift_db_pool_connections{state=\"idle\"} %u\n"
                    "stacksift_db_pool_connections{state=\"in_use\"} %u\n"
                    "# HELP stacksift_db_pool_waiting Requests waiting for a connection.\n"
                    "# TYPE stacksift_db_pool_waiting gauge\n"
                    "stacksift_db_pool_waiting %u\n"
                    "# HELP stacksift_db_breaker_open 1 while the circuit breaker in front of "
                    "the pool refuses database calls (the database stopped answering).\n"
                    "# TYPE stacksift_db_breaker_open gauge\n"
                    "stacksift_db_breaker_open %d\n"
                    "# HELP stacksift_db_breaker_opened_total Times the circuit breaker opened.\n"
                    "# TYPE stacksift_db_breaker_opened_total counter\n"
                    "stacksift_db_breaker_opened_total %llu\n"
                    "# HELP stacksift_db_breaker_rejected_total Database calls the open breaker "
                    "refused at once (each a 503 + Retry-After).\n"
                    "# TYPE stacksift_db_breaker_rejected_total counter\n"
                    "stacksift_db_breaker_rejected_total %llu\n",
               pool->size, pool->idle, pool->open - pool->idle, pool->waiting,
               pool->breaker_open ? 1 : 0, (unsigned long long)pool->breaker_opened,
               (unsigned long long)pool->breaker_rejected);
    if (queued >= 0)
        buf_printf(out, "# HELP stacksift_reports_queued Reports received and not processed yet.\n"
                        "# TYPE stacksift_reports_queued gauge\n"
                        "stacksift_reports_queued %lld\n", (long long)queued);
}

void metrics_intake_render(buf *out, const store_intake_stats *st)
{
    buf_printf(out, "# HELP stacksift_intake_commits_total Group commits of POSTed reports "
                    "(one INSERT each).\n"
                    "# TYPE stacksift_intake_commits_total counter\n"
                    "stacksift_intake_commits_total %llu\n"
                    "# HELP stacksift_intake_reports_total Reports committed by those commits.\n"
                    "# TYPE stacksift_intake_reports_total counter\n"
                    "stacksift_intake_reports_total %llu\n"
                    "# HELP stacksift_intake_largest_commit Most reports one commit held.\n"
                    "# TYPE stacksift_intake_largest_commit gauge\n"
                    "stacksift_intake_largest_commit %llu\n"
                    "# HELP stacksift_intake_failures_total Reports whose commit failed.\n"
                    "# TYPE stacksift_intake_failures_total counter\n"
                    "stacksift_intake_failures_total %llu\n"
                    "# HELP stacksift_intake_processed_total Reports processed at intake and "
                    "committed processed, with their issue (the rest went to the queue).\n"
                    "# TYPE stacksift_intake_processed_total counter\n"
                    "stacksift_intake_processed_total %llu\n"
                    "# HELP stacksift_intake_processed_fallbacks_total Commits whose reports "
                    "processed at intake were stored as received instead (their issue upsert "
                    "failed).\n"
                    "# TYPE stacksift_intake_processed_fallbacks_total counter\n"
                    "stacksift_intake_processed_fallbacks_total %llu\n",
               (unsigned long long)st->batches, (unsigned long long)st->reports,
               (unsigned long long)st->largest, (unsigned long long)st->failures,
               (unsigned long long)st->processed, (unsigned long long)st->processed_fallbacks);
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
    buf_append_str(out, "# HELP stacksift_sentry_items_total Items of accepted Sentry envelopes "
                        "by type: event (stored), session (recorded), attachment, ignored "
                        "(transactions, replays, ...) and unknown types (accepted, not stored).\n"
                        "# TYPE stacksift_sentry_items_total counter\n");
    for (unsigned k = 0; k < INGEST_SENTRY_ITEM_KINDS; k++)
        buf_printf(out, "stacksift_sentry_items_total{type=\"%s\"} %llu\n",
                   ingest_sentry_item_kind_name((ingest_sentry_item_kind)k),
                   (unsigned long long)sentry_items[k]);
    buf_printf(out, "# HELP stacksift_sentry_accepted_total Sentry requests answered 200, with "
                    "and without an event.\n"
                    "# TYPE stacksift_sentry_accepted_total counter\n"
                    "stacksift_sentry_accepted_total{event=\"yes\"} %llu\n"
                    "stacksift_sentry_accepted_total{event=\"no\"} %llu\n",
               (unsigned long long)sentry_events, (unsigned long long)sentry_no_event);
    buf_append_str(out, "# HELP stacksift_sentry_rejected_total Sentry requests refused, by "
                        "error code.\n"
                        "# TYPE stacksift_sentry_rejected_total counter\n");
    for (unsigned c = 1; c < NERR; c++)
        buf_printf(out, "stacksift_sentry_rejected_total{code=\"%s\"} %llu\n",
                   err_name((err_code)c), (unsigned long long)sentry_refused[c]);
    buf_printf(out, "# HELP stacksift_sentry_sessions_dropped_total Session items of accepted "
                    "envelopes that did not parse (or were refused by the release view).\n"
                    "# TYPE stacksift_sentry_sessions_dropped_total counter\n"
                    "stacksift_sentry_sessions_dropped_total %llu\n",
               (unsigned long long)sentry_sessions_dropped);
    uint64_t full = sentry_spool_full;
    pthread_mutex_unlock(&mu);
    buf_printf(out, "# HELP stacksift_spool_entries Envelopes in this node's disk spool, waiting "
                    "for Postgres.\n"
                    "# TYPE stacksift_spool_entries gauge\n"
                    "stacksift_spool_entries %llu\n"
                    "# HELP stacksift_spool_bytes Bytes of this node's disk spool.\n"
                    "# TYPE stacksift_spool_bytes gauge\n"
                    "stacksift_spool_bytes %llu\n"
                    "# HELP stacksift_spool_written_total Envelopes spooled since start.\n"
                    "# TYPE stacksift_spool_written_total counter\n"
                    "stacksift_spool_written_total %llu\n"
                    "# HELP stacksift_spool_replayed_total Spooled envelopes committed since "
                    "start.\n"
                    "# TYPE stacksift_spool_replayed_total counter\n"
                    "stacksift_spool_replayed_total %llu\n"
                    "# HELP stacksift_spool_dropped_total Spooled envelopes dropped at replay "
                    "(a wrong key, a body that no longer parses).\n"
                    "# TYPE stacksift_spool_dropped_total counter\n"
                    "stacksift_spool_dropped_total %llu\n"
                    "# HELP stacksift_spool_full_total Envelopes answered 429 because the spool "
                    "was full.\n"
                    "# TYPE stacksift_spool_full_total counter\n"
                    "stacksift_spool_full_total %llu\n",
               (unsigned long long)spool_entries, (unsigned long long)spool_bytes,
               (unsigned long long)spooled, (unsigned long long)replayed,
               (unsigned long long)dropped, (unsigned long long)full);
}
