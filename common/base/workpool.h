/*
 * workpool - a small pool of threads that each run one function until told to stop: the
 * report workers (server/ingest/pipeline.c), the call site counters (callsites.c), the alert
 * deliverer (alerts.c), the symcache row refresher (symfiles.c), the lingering-close thread
 * (server/http/conns.c); anything that loops "take work, or sleep a while".
 *
 *   workpool_start(&wp, n, fn, ctx)   n threads, each runs fn(wp, index, ctx) once; fn loops
 *                                     while !workpool_stopping(wp), sleeping with
 *                                     workpool_wait(wp, ms) when it has nothing to do
 *   workpool_stop(wp)                 ask them to stop: every workpool_wait returns at once
 *   workpool_join(wp)                 wait until every fn returned
 *   workpool_free(wp)                 stop, join, free
 *
 * Thread-safe. libc and pthreads only.
 */
#ifndef STACKSIFT_BASE_WORKPOOL_H
#define STACKSIFT_BASE_WORKPOOL_H

#include <stdbool.h>

#include "base/err.h"

typedef struct workpool workpool;

/* workpool_fn - one thread's whole life: `index` 0..n-1 tells the threads apart (index 0 may
 * take the chores one thread should do). Returns when it wants (normally once stopping). */
typedef void (*workpool_fn)(workpool *wp, unsigned index, void *ctx);

/* workpool_start - start `n` threads (0: none, a pool that only stops) running fn(wp, i,
 * ctx); `ctx` is borrowed and must outlive workpool_join. Owned by the caller:
 * workpool_free(). Errors ERR_INTERNAL (a thread could not be started: the ones that were
 * are stopped and joined, *out is NULL). */
err_code workpool_start(workpool **out, unsigned n, workpool_fn fn, void *ctx, err_info *err);

/* workpool_stopping - true once workpool_stop was called. */
bool workpool_stopping(workpool *wp);

/* workpool_wait - sleep up to `ms` milliseconds; returns early on workpool_stop or
 * workpool_wake. */
void workpool_wait(workpool *wp, unsigned ms);

/* workpool_wake - end every workpool_wait in progress now (new work came), without stopping. */
void workpool_wake(workpool *wp);

/* workpool_stop - ask every thread to stop (returns at once). NULL is a no-op. */
void workpool_stop(workpool *wp);

/* workpool_join - workpool_stop, then wait until every thread's function returned. Safe to
 * call twice. NULL is a no-op. */
void workpool_join(workpool *wp);

/* workpool_free - workpool_join, then free the pool. NULL is a no-op. */
void workpool_free(workpool *wp);

#endif
