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
 *   workpool_doze(wp, ms, seen)       a longer idle sleep, ended early by workpool_post
 *   workpool_post(wp)                 new work came: wakes the dozing threads only
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

/* workpool_posted - how many workpool_post calls were made so far: read it before looking
 * for work, and pass it to workpool_doze. */
unsigned long workpool_posted(workpool *wp);

/* workpool_doze - like workpool_wait, and returns at once when workpool_post was called since
 * workpool_posted gave `seen` (so a post that raced the look for work is never slept past).
 * For the long sleeps of a thread that found nothing for a while: a post wakes it, so it can
 * sleep long and still start at once, while its short waits (workpool_wait) are not
 * interrupted by every post and its claims keep gathering what came meanwhile. */
void workpool_doze(workpool *wp, unsigned ms, unsigned long seen);

/* workpool_post - note that new work is queued: ends every workpool_doze in progress (not the
 * workpool_waits). Costs two atomic operations when no thread dozes. NULL is a no-op. */
void workpool_post(workpool *wp);

/* workpool_idle - the sleep of a thread that found no work, `*idle_ms` (from `base_ms` when
 * work was last found) doubled up to `max_ms` for the next one: the first sleep a plain
 * workpool_wait, the longer ones workpool_doze (`seen` as there), so that a post ends them. */
void workpool_idle(workpool *wp, unsigned *idle_ms, unsigned base_ms, unsigned max_ms,
                   unsigned long seen);

/* workpool_stop - ask every thread to stop (returns at once). NULL is a no-op. */
void workpool_stop(workpool *wp);

/* workpool_join - workpool_stop, then wait until every thread's function returned. Safe to
 * call twice. NULL is a no-op. */
void workpool_join(workpool *wp);

/* workpool_free - workpool_join, then free the pool. NULL is a no-op. */
void workpool_free(workpool *wp);

#endif
