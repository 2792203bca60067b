/*
 * store_maintain - node heartbeats and the retention run (see store_maintain.h).
 */
#include "store/store_maintain.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store_internal.h"

/* Run `sql` and return the first column of its first row as an integer (0 if none). */
static err_code exec_int(int64_t *out, pconn *c, const char *what, const char *sql, int n,
                         const char *const *values, err_info *err)
{
    PGresult *res;
    *out = 0;
    err_code rc = store_exec_sql(&res, c, what, sql, n, values, 0, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) > 0 && PQnfields(res) > 0 && !PQgetisnull(res, 0, 0))
        *out = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    else if (PQntuples(res) == 0 && PQnfields(res) == 0)
        *out = strtoll(PQcmdTuples(res), NULL, 10);   /* a command: rows affected */
    PQclear(res);
    return ERR_OK;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- nodes ----------------------------------------------------------------------------- */

typedef struct {
    const store_node_beat *b;
    bool starting;
} beat_ctx;

static err_code do_heartbeat(pconn *c, void *vctx, err_info *err)
{
    beat_ctx *x = vctx;
    char workers[16], in_progress[16], processed[24], hits[24], misses[24];
    snprintf(workers, sizeof workers, "%u", x->b->workers);
    snprintf(in_progress, sizeof in_progress, "%u", x->b->in_progress);
    snprintf(processed, sizeof processed, "%llu", (unsigned long long)x->b->processed);
    snprintf(hits, sizeof hits, "%llu", (unsigned long long)x->b->cache_hits);
    snprintf(misses, sizeof misses, "%llu", (unsigned long long)x->b->cache_misses);
    const char *values[7] = {x->b->name, workers, in_progress, processed, hits, misses,
                             x->starting ? "t" : "f"};
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "recording the node's heartbeat",
                                 "INSERT INTO nodes (name, workers, in_progress, processed, "
                                 "cache_hits, cache_misses) VALUES ($1, $2, $3, $4, $5, $6) ON "
                                 "CONFLICT (name) DO UPDATE SET heartbeat_at = now(), workers = "
                                 "$2, in_progress = $3, processed = $4, cache_hits = $5, "
                                 "cache_misses = $6, started_at = CASE WHEN $7::boolean THEN now() "
                                 "ELSE nodes.started_at END",
                                 7, values, 0, err);
    PQclear(res);
    return rc;
}

err_code store_node_heartbeat(store *s, const store_node_beat *b, bool starting, err_info *err)
{
    beat_ctx x = {b, starting};
    return store_run(s, do_heartbeat, &x, err);
}

typedef struct {
    buf *out;
    unsigned stale_s;
} metrics_ctx;

static void metric_head(buf *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static err_code do_nodes_metrics(pconn *c, void *vctx, err_info *err)
{
    metrics_ctx *x = vctx;
    char stale[16];
    snprintf(stale, sizeof stale, "%u", x->stale_s);
    const char *values[1] = {stale};
    PGresult *res;
    /* Node names are checked at config time ([A-Za-z0-9._-]): safe inside label quotes. */
    err_code rc = store_exec_sql(&res, c, "reading nodes",
                                 "SELECT n.name, extract(epoch FROM now() - "
                                 "n.heartbeat_at)::float8, n.workers, n.in_progress, n.processed, "
                                 "n.cache_hits, n.cache_misses, coalesce(q.queued, 0) FROM nodes n "
                                 "LEFT JOIN (SELECT received_by, count(*) AS queued FROM reports "
                                 "WHERE status = 'received' GROUP BY 1) q ON q.received_by = "
                                 "n.name WHERE n.heartbeat_at > now() - interval '1 day' ORDER BY "
                                 "n.name",
                                 0, NULL, 0, err);
    (void)values;
    if (rc != ERR_OK)
        return rc;
    int n = PQntuples(res);
    static const struct {
        const char *name, *type, *help;
    } M[] = {
        {"stacksift_node_up", "gauge",
         "1 if the node sent a heartbeat within the stale limit, else 0 (nodes seen in the last day)."},
        {"stacksift_node_heartbeat_age_seconds", "gauge", "Seconds since the node's last heartbeat."},
        {"stacksift_node_workers", "gauge", "Report processing threads of the node."},
        {"stacksift_node_reports_in_progress", "gauge", "Reports the node's workers hold now."},
        {"stacksift_node_reports_processed", "gauge",
         "Reports the node's workers finished since it started."},
        {"stacksift_node_symcache_cache_hit_ratio", "gauge",
         "Share of symcache requests the node's local file cache answered without a download."},
        {"stacksift_node_queue_depth", "gauge",
         "Reports accepted by the node and not processed yet (any node's workers may take them)."},
    };
    for (size_t m = 0; m < sizeof M / sizeof M[0]; m++) {
        metric_head(x->out, M[m].name, M[m].type, M[m].help);
        for (int i = 0; i < n; i++) {
            const char *name = PQgetvalue(res, i, 0);
            double age = strtod(PQgetvalue(res, i, 1), NULL);
            double hits = strtod(PQgetvalue(res, i, 5), NULL);
            double misses = strtod(PQgetvalue(res, i, 6), NULL);
            buf_printf(x->out, "%s{node=\"%s\"} ", M[m].name, name);
            switch (m) {
            case 0: buf_printf(x->out, "%d\n", age <= (double)x->stale_s); break;
            case 1: buf_printf(x->out, "%.1f\n", age); break;
            case 2: case 3: case 4:
                buf_printf(x->out, "%s\n", PQgetvalue(res, i, (int)m));
                break;
            case 5:
                buf_printf(x->out, "%.4f\n", hits + misses > 0 ? hits / (hits + misses) : 0.0);
                break;
            default: buf_printf(x->out, "%s\n", PQgetvalue(res, i, 7)); break;
            }
        }
    }
    PQclear(res);

    rc = store_exec_sql(&res, c, "reading maintenance runs",
                        "SELECT extract(epoch FROM finished_at)::bigint, runs, partitions_dropped, "
                        "reports_expired, issues_expired, dsyms_expired, blobs_deleted FROM "
                        "maintenance_runs WHERE job = 'retention' AND finished_at IS NOT NULL",
                        0, NULL, 0, err);
    if (rc != ERR_OK)
        return rc;
    bool have = PQntuples(res) == 1;
    static const struct {
        const char *name, *help;
    } R[] = {
        {"stacksift_retention_last_run_timestamp_seconds",
         "When the last complete retention run finished (Unix time; 0 = never)."},
        {"stacksift_retention_runs_total", "Complete retention runs, on any node."},
        {"stacksift_retention_partitions_dropped_total", "Daily report partitions dropped."},
        {"stacksift_retention_reports_expired_total", "Reports (with raw bodies) expired."},
        {"stacksift_retention_issues_expired_total", "Issues expired (aggregate retention)."},
        {"stacksift_retention_dsyms_expired_total", "dSYMs expired for not being used."},
        {"stacksift_retention_blobs_deleted_total", "Stored symcaches and uploads deleted."},
    };
    for (int m = 0; m < (int)(sizeof R / sizeof R[0]); m++) {
        metric_head(x->out, R[m].name, m == 0 ? "gauge" : "counter", R[m].help);
        buf_printf(x->out, "%s %s\n", R[m].name, have ? PQgetvalue(res, 0, m) : "0");
    }
    PQclear(res);
    return ERR_OK;
}

err_code store_nodes_metrics(buf *out, store *s, unsigned stale_s, err_info *err)
{
    /* Rendered into a scratch buffer first: a retried or failed query appends nothing. */
    buf tmp;
    buf_init(&tmp);
    metrics_ctx x = {&tmp, stale_s};
    err_code rc = store_run(s, do_nodes_metrics, &x, err);
    if (rc == ERR_OK && tmp.len)
        buf_append(out, tmp.data, tmp.len);
    buf_reset(&tmp);
    return rc;
}

/* ---- retention ------------------------------------------------------------------------- */

/* The partitions to make: yesterday (a clock slightly behind) to `ahead` days from today. */
static err_code make_partitions(store_retention_result *r, pconn *c, unsigned ahead,
                                err_info *err)
{
    char ahead_s[16];
    snprintf(ahead_s, sizeof ahead_s, "%u", ahead);
    const char *values[1] = {ahead_s};
    int64_t made;
    err_code rc = exec_int(&made, c, "creating report partitions",
                           "SELECT count(*) FILTER (WHERE stacksift_reports_partition_create(d)) "
                           "FROM generate_series((now() AT TIME ZONE 'UTC')::date - 1, "
                           "(now() AT TIME ZONE 'UTC')::date + $1::int, interval '1 day') g, "
                           "LATERAL (SELECT g::date AS d) x",
                           1, values, err);
    r->partitions_created = (unsigned)made;
    return rc;
}

static err_code drop_partitions(store_retention_result *r, pconn *c, unsigned days,
                                err_info *err)
{
    char days_s[16];
    snprintf(days_s, sizeof days_s, "%u", days);
    const char *values[1] = {days_s};
    PGresult *res;
    /* A partition goes when its whole UTC day is older than `days` days. */
    err_code rc = store_exec_sql(&res, c, "listing expired report partitions",
                                 "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
                                 "i.inhrelid WHERE i.inhparent = 'reports'::regclass AND c.relname "
                                 "~ '^reports_p[0-9]{8}$' AND to_date(substring(c.relname FROM "
                                 "10), 'YYYYMMDD') < (now() AT TIME ZONE 'UTC')::date - $1::int "
                                 "ORDER BY 1",
                                 1, values, 0, err);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; rc == ERR_OK && i < PQntuples(res); i++) {
        char *ident = PQescapeIdentifier(c->pg, PQgetvalue(res, i, 0), strlen(PQgetvalue(res, i, 0)));
        char sql[256];
        int64_t rows = 0;
        /* One short transaction per partition; DETACH needs a brief exclusive lock on
         * reports, so it gives up rather than stall intake behind a long transaction. */
        rc = store_command(c, "BEGIN", "dropping a report partition", err);
        if (rc == ERR_OK)
            rc = store_command(c, "SET LOCAL lock_timeout = '5s'", "dropping a report partition",
                               err);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", ident);
        if (rc == ERR_OK)
            rc = exec_int(&rows, c, "counting an expired partition", sql, 0, NULL, err);
        snprintf(sql, sizeof sql, "ALTER TABLE reports DETACH PARTITION %s", ident);
        if (rc == ERR_OK)
            rc = store_command(c, sql, "detaching a report partition", err);
        snprintf(sql, sizeof sql, "DROP TABLE %s", ident);
        if (rc == ERR_OK)
            rc = store_command(c, sql, "dropping a report partition", err);
        if (rc == ERR_OK)
            rc = store_command(c, "COMMIT", "dropping a report partition", err);
        PQfreemem(ident);
        if (rc == ERR_OK) {
            r->partitions_dropped++;
            r->reports_expired += rows;
        }
    }
    PQclear(res);
    if (rc != ERR_OK)
        return rc;
    /* Rows that fell into the default partition (a day without a partition) expire too. */
    int64_t rows;
    rc = exec_int(&rows, c, "expiring reports",
                  "DELETE FROM reports_default WHERE received_at < "
                  "((now() AT TIME ZONE 'UTC')::date - $1::int)::timestamp AT TIME ZONE 'UTC'",
                  1, values, err);
    r->reports_expired += rows;
    /* The once-only claims of reports with ids of their own (migration 0012) go with them:
     * a claim is as old as its report. */
    int64_t claims = 0;   /* not reported: a claim is not data anyone reads */
    if (rc == ERR_OK)
        rc = exec_int(&claims, c, "expiring report claims",
                      "DELETE FROM report_claims WHERE received_at < "
                      "((now() AT TIME ZONE 'UTC')::date - $1::int)::timestamp AT TIME ZONE 'UTC'",
                      1, values, err);
    return rc;
}

static err_code expire_aggregates(store_retention_result *r, pconn *c, unsigned days,
                                  err_info *err)
{
    char days_s[16];
    snprintf(days_s, sizeof days_s, "%u", days);
    const char *values[1] = {days_s};
    err_code rc = exec_int(&r->issue_days_expired, c, "expiring per-day counts",
                           "DELETE FROM issue_days WHERE day < "
                           "(now() AT TIME ZONE 'UTC')::date - $1::int",
                           1, values, err);
    if (rc == ERR_OK)
        rc = exec_int(&r->issues_expired, c, "expiring issues",
                      "DELETE FROM issues WHERE last_seen < now() - $1::int * interval '1 day'",
                      1, values, err);
    /* Privacy-API call sites, when that migration is there: per-day rows and
     * call sites not seen for as long are aggregates too. */
    int64_t have = 0;
    if (rc == ERR_OK)
        rc = exec_int(&have, c, "looking for call sites",
                      "SELECT (to_regclass('callsite_days') IS NOT NULL)::int", 0, NULL, err);
    if (rc == ERR_OK && have) {
        int64_t n = 0;
        rc = exec_int(&n, c, "expiring call site days",
                      "DELETE FROM callsite_days WHERE day < "
                      "(now() AT TIME ZONE 'UTC')::date - $1::int",
                      1, values, err);
        r->issue_days_expired += n;
        /* the devices last counted on an expired day leave the distinct counts with them. The
         * call sites are locked first, in the order the counting workers lock them (project,
         * app, tag, key), and each one's pairs only once it is locked, as a worker does: the
         * two never wait for each other in a cycle. */
        if (rc == ERR_OK)
            rc = exec_int(&have, c, "looking for call site devices",
                          "SELECT (to_regclass('callsite_devices') IS NOT NULL)::int", 0, NULL,
                          err);
        if (rc == ERR_OK && have)
            rc = exec_int(&n, c, "expiring call site devices",
                          "WITH locked AS (SELECT c.id FROM callsites c WHERE c.id IN "
                          "(SELECT callsite_id FROM callsite_devices WHERE last_day < "
                          "(now() AT TIME ZONE 'UTC')::date - $1::int) "
                          "ORDER BY c.project_id, c.app, c.tag, c.key FOR UPDATE OF c), "
                          "gone AS (DELETE FROM callsite_devices d USING locked l "
                          "WHERE d.callsite_id = l.id AND d.last_day < "
                          "(now() AT TIME ZONE 'UTC')::date - $1::int RETURNING d.callsite_id) "
                          "UPDATE callsites c SET devices = c.devices - g.n "
                          "FROM (SELECT callsite_id, count(*) AS n FROM gone GROUP BY 1) g "
                          "WHERE c.id = g.callsite_id",
                          1, values, err);
        if (rc == ERR_OK)
            rc = exec_int(&n, c, "expiring call sites",
                          "DELETE FROM callsites WHERE last_seen < "
                          "now() - $1::int * interval '1 day'",
                          1, values, err);
        r->issues_expired += n;
    }
    /* Release health (migration 0010): a session started more than 5 days ago takes no more
     * updates (server/ingest/sessions.h), so its state is not needed; its counters are
     * aggregates like the others. */
    if (rc == ERR_OK)
        rc = exec_int(&have, c, "looking for sessions",
                      "SELECT (to_regclass('session_states') IS NOT NULL)::int", 0, NULL, err);
    if (rc == ERR_OK && have) {
        int64_t n = 0;
        rc = exec_int(&n, c, "expiring session states",
                      "DELETE FROM session_states WHERE started < now() - interval '6 days'",
                      0, NULL, err);
        if (rc == ERR_OK)
            rc = exec_int(&n, c, "expiring session hours",
                          "DELETE FROM session_hours WHERE hour < "
                          "now() - $1::int * interval '1 day'", 1, values, err);
        r->issue_days_expired += n;
    }
    return rc;
}

static err_code expire_dsyms(store_retention_result *r, pconn *c, unsigned days, err_info *err)
{
    err_code rc = ERR_OK;
    if (days > 0) {
        char days_s[16];
        snprintf(days_s, sizeof days_s, "%u", days);
        const char *values[1] = {days_s};
        rc = exec_int(&r->dsyms_expired, c, "expiring dSYMs",
                      "DELETE FROM dsyms WHERE last_used_at < now() - $1::int * interval '1 day'",
                      1, values, err);
    }
    /* Blobs nothing points at any more (dSYMs, BCSymbolMaps): of expired dSYMs, replaced
     * symcaches (rebuild, DWARF after a symbol table, a BCSymbolMap applied). An upload reusing one holds it FOR KEY SHARE, and the foreign keys
     * refuse to delete one a row still names. */
    if (rc == ERR_OK)
        rc = exec_int(&r->blobs_deleted, c, "deleting unused blobs",
                      "DELETE FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM dsyms d "
                      "WHERE d.symcache_blob = b.sha256) AND NOT EXISTS (SELECT 1 FROM dsyms d "
                      "WHERE d.original_blob = b.sha256) AND NOT EXISTS (SELECT 1 FROM "
                      "symbol_maps m WHERE m.blob = b.sha256)",
                      0, NULL, err);
    return rc;
}

typedef struct {
    store_retention_result *r;
    const store_retention_options *o;
} retention_ctx;

static err_code do_retention(pconn *c, void *vctx, err_info *err)
{
    retention_ctx *x = vctx;
    const store_retention_options *o = x->o;
    store_retention_result *r = x->r;
    char lock_sql[64];
    int64_t locked;
    /* dropping partitions and expiring rows may take long: no statement deadline */
    err_code rc = store_unbounded(c, err);
    if (rc != ERR_OK)
        return rc;
    snprintf(lock_sql, sizeof lock_sql, "SELECT pg_try_advisory_lock(%d)::int", STORE_RETENTION_LOCK);
    rc = exec_int(&locked, c, "locking retention", lock_sql, 0, NULL, err);
    if (rc != ERR_OK || !locked)
        return rc;   /* another node is running it */
    char interval[16];
    snprintf(interval, sizeof interval, "%u", o->interval_s);
    const char *values[3] = {o->node, interval, o->force ? "t" : "f"};
    int64_t due;
    rc = exec_int(&due, c, "starting retention",
                  "INSERT INTO maintenance_runs AS m (job, node, started_at) "
                  "VALUES ('retention', $1, now()) ON CONFLICT (job) DO UPDATE "
                  "SET node = $1, started_at = now() WHERE $3::boolean OR m.finished_at IS NULL "
                  "OR m.finished_at < now() - $2::int * interval '1 second' RETURNING 1",
                  3, values, err);
    if (rc == ERR_OK && due) {
        r->ran = true;
        rc = make_partitions(r, c, o->ahead_days, err);
        if (rc == ERR_OK && o->report_days > 0)
            rc = drop_partitions(r, c, o->report_days, err);
        if (rc == ERR_OK && o->aggregate_days > 0)
            rc = expire_aggregates(r, c, o->aggregate_days, err);
        if (rc == ERR_OK)
            rc = expire_dsyms(r, c, o->dsym_days, err);
        if (rc == ERR_OK) {
            char v[6][24];
            snprintf(v[0], 24, "%u", r->partitions_dropped);
            snprintf(v[1], 24, "%lld", (long long)r->reports_expired);
            snprintf(v[2], 24, "%lld", (long long)r->issues_expired);
            snprintf(v[3], 24, "%lld", (long long)r->dsyms_expired);
            snprintf(v[4], 24, "%lld", (long long)r->blobs_deleted);
            const char *fin[5] = {v[0], v[1], v[2], v[3], v[4]};
            PGresult *res;
            rc = store_exec_sql(&res, c, "finishing retention",
                                "UPDATE maintenance_runs SET finished_at = now(), runs = runs + 1, "
                                "partitions_dropped = partitions_dropped + $1, reports_expired = "
                                "reports_expired + $2, issues_expired = issues_expired + $3, "
                                "dsyms_expired = dsyms_expired + $4, blobs_deleted = blobs_deleted "
                                "+ $5 WHERE job = 'retention'",
                                5, fin, 0, err);
            PQclear(res);
        }
    }
    if (PQstatus(c->pg) == CONNECTION_OK) {
        if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
            PQclear(store_pq(c, "ROLLBACK"));
        snprintf(lock_sql, sizeof lock_sql, "SELECT pg_advisory_unlock(%d)", STORE_RETENTION_LOCK);
        /* Ignored: closing the connection releases the lock as well. */
        PQclear(store_pq(c, lock_sql));
    }
    return rc;
}

err_code store_retention_run(store_retention_result *out, store *s,
                             const store_retention_options *o, err_info *err)
{
    memset(out, 0, sizeof *out);
    double t0 = mono_ms();
    retention_ctx x = {out, o};
    /* Not store_run: a run cut short is finished by the next one, not repeated now. */
    pconn *c;
    err_code rc = store_acquire(&c, s, err);
    if (rc == ERR_OK) {
        rc = do_retention(c, &x, err);
        store_release(s, c);
    }
    out->ms = mono_ms() - t0;
    return rc;
}
