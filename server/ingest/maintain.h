/*
 * maintain - the node's background duties besides processing reports: a
 * heartbeat every MAINTAIN_HEARTBEAT_S into the nodes table (health, work in progress,
 * symcache cache hit ratio: what GET /metrics on any node shows for all of them), and the
 * retention run (store_maintain.h), tried every minute and done at most once per interval
 * by one node at a time. One thread; stops within a second of maintain_stop.
 */
#ifndef STACKSIFT_INGEST_MAINTAIN_H
#define STACKSIFT_INGEST_MAINTAIN_H

#include "base/buf.h"
#include "base/err.h"
#include "ingest/pipeline.h"
#include "ingest/symfiles.h"
#include "store/store.h"
#include "store/store_maintain.h"

#define MAINTAIN_HEARTBEAT_S 5
#define MAINTAIN_STALE_S 30 /* a node silent this long is reported down */

typedef struct maintain maintain;

typedef struct {
    const char *node;                 /* this node's name */
    store *store;                     /* borrowed */
    pipeline *pipe;                   /* borrowed; its counters go into the heartbeat */
    symfiles *files;                  /* borrowed; may be NULL */
    store_retention_options retention; /* node is filled from `node` */
} maintain_options;

/* maintain_start - send the first heartbeat and start the thread. Owned by the caller:
 * maintain_stop(). Errors ERR_INTERNAL (no thread); a database that is down is not an error
 * (the thread keeps trying). */
err_code maintain_start(maintain **out, const maintain_options *o, err_info *err);

/* maintain_stop - stop the thread and free. NULL is a no-op. */
void maintain_stop(maintain *m);

/* maintain_metrics_render - append the node table, queue per node, retention totals (from
 * Postgres) and this node's symcache cache metrics. A database error leaves the database
 * part out (the caller's other metrics still render). */
void maintain_metrics_render(buf *out, maintain *m);

#endif
