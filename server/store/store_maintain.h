/*
 * store_maintain - what keeps a multi-node deployment healthy and bounded:
 * node heartbeats (for /metrics) and the retention run (daily report partitions ahead of
 * time, expired partitions dropped, old aggregates and unused dSYMs with their blobs deleted).
 *
 * The retention run takes a session advisory lock (STORE_RETENTION_LOCK) and records itself
 * in maintenance_runs, so that with any number of nodes it runs on one node at a time and at
 * most once per interval. Each step is its own short transaction: a node killed in the middle
 * leaves every step either done or not done, and the next run finishes the job.
 *
 * Errors as in store.h (ERR_STORE, ERR_INTERNAL, ERR_TOO_LARGE for a full arena).
 */
#ifndef STACKSIFT_STORE_STORE_MAINTAIN_H
#define STACKSIFT_STORE_STORE_MAINTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "store/store.h"

#define STORE_RETENTION_LOCK 7215842 /* pg advisory lock key (migrations use 7215841) */

/* ---- nodes ----------------------------------------------------------------------------- */

typedef struct {
    const char *name;        /* STACKSIFT_NODE_NAME */
    unsigned workers;
    unsigned in_progress;    /* reports claimed by its workers now */
    uint64_t processed;      /* reports its workers finished since it started */
    uint64_t cache_hits, cache_misses; /* symcache file cache since start */
} store_node_beat;

/* store_node_heartbeat - upsert this node's row with heartbeat_at = now(); `starting` also
 * resets started_at. Errors ERR_STORE. */
err_code store_node_heartbeat(store *s, const store_node_beat *b, bool starting, err_info *err);

/* store_nodes_metrics - append Prometheus text for every node known (health: heartbeat age,
 * in progress, processed, symcache cache hit ratio), the queue (status 'received') per node
 * that accepted the reports, and what the last retention run did.
 * `stale_s`: a node whose last heartbeat is older is reported down. Errors ERR_STORE. */
err_code store_nodes_metrics(buf *out, store *s, unsigned stale_s, err_info *err);

/* ---- retention ------------------------------------------------------------------------- */

typedef struct {
    const char *node;            /* who runs it (maintenance_runs.node) */
    unsigned report_days;        /* reports and raw bodies: partitions older are dropped;
                                    0 = never */
    unsigned aggregate_days;     /* issues, per-day counts: older rows deleted; 0 = never */
    unsigned dsym_days;          /* dSYMs unused for longer are deleted with their blobs;
                                    0 = never */
    unsigned interval_s;         /* skip if the last run finished less than this ago */
    unsigned ahead_days;         /* partitions made ahead of today */
    bool force;                  /* run even within the interval (CLI) */
} store_retention_options;

typedef struct {
    bool ran;                    /* false: another node holds the lock, or within interval */
    unsigned partitions_created;
    unsigned partitions_dropped;
    int64_t reports_expired;     /* rows in the dropped partitions (+ the default one) */
    int64_t issues_expired, issue_days_expired;
    int64_t dsyms_expired, blobs_deleted;
    double ms;
} store_retention_result;

/* store_retention_run - one retention run (see above). On an error the steps done so far
 * stay done. Errors ERR_STORE, ERR_INTERNAL. */
err_code store_retention_run(store_retention_result *out, store *s,
                             const store_retention_options *o, err_info *err);

#endif
