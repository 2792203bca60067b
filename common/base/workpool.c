/*
 * workpool - threads that loop until stopped (see workpool.h). One mutex and one condition
 * variable: `stopping` and the wake counter change under the mutex, every sleeper waits on
 * the condition variable with a deadline.
 */
#include "base/workpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/xalloc.h"

typedef struct {
    workpool *wp;
    unsigned index;
    pthread_t thread;
} wp_thread;

struct workpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    unsigned long wakes;   /* bumped by workpool_wake: a sleeper that sees it change returns */
    atomic_ulong posted;   /* workpool_post calls */
    atomic_uint dozing;    /* threads in workpool_doze */
    workpool_fn fn;
    void *ctx;
    wp_thread *threads;
    unsigned n, started;
    bool joined;
};

static void *wp_main(void *arg)
{
    wp_thread *t = arg;
    t->wp->fn(t->wp, t->index, t->wp->ctx);
    return NULL;
}

err_code workpool_start(workpool **out, unsigned n, workpool_fn fn, void *ctx, err_info *err)
{
    workpool *wp = xcalloc(1, sizeof *wp);
    *out = NULL;
    pthread_mutex_init(&wp->mu, NULL);
    pthread_cond_init(&wp->cv, NULL);
    atomic_init(&wp->posted, 0);
    atomic_init(&wp->dozing, 0);
    wp->fn = fn;
    wp->ctx = ctx;
    wp->n = n;
    wp->threads = xcalloc(n ? n : 1, sizeof *wp->threads);
    for (unsigned i = 0; i < n; i++) {
        wp->threads[i] = (wp_thread){wp, i, 0};
        int e = pthread_create(&wp->threads[i].thread, NULL, wp_main, &wp->threads[i]);
        if (e != 0) {
            workpool_free(wp);
            return err_set(err, ERR_INTERNAL, "starting thread %u of %u: %s", i, n, strerror(e));
        }
        wp->started++;
    }
    *out = wp;
    return ERR_OK;
}

bool workpool_stopping(workpool *wp)
{
    pthread_mutex_lock(&wp->mu);
    bool s = wp->stopping;
    pthread_mutex_unlock(&wp->mu);
    return s;
}

/* Sleep until `ms` from now, a wake, a stop, or (doze) a post since `seen`. */
static void sleep_until(workpool *wp, unsigned ms, bool doze, unsigned long seen)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&wp->mu);
    unsigned long wakes = wp->wakes;
    /* A post after `seen` either came before this check (seen here: no sleep) or after it,
     * and then it saw `dozing` set (both sides are sequentially consistent atomics) and its
     * wake needs the mutex held here, so the wait below sees the counter change. */
    if (doze && atomic_load(&wp->posted) != seen) {
        pthread_mutex_unlock(&wp->mu);
        return;
    }
    while (!wp->stopping && wp->wakes == wakes)
        if (pthread_cond_timedwait(&wp->cv, &wp->mu, &dl) != 0)
            break;   /* the time is up (ETIMEDOUT) */
    pthread_mutex_unlock(&wp->mu);
}

void workpool_wait(workpool *wp, unsigned ms)
{
    sleep_until(wp, ms, false, 0);
}

unsigned long workpool_posted(workpool *wp)
{
    return atomic_load(&wp->posted);
}

void workpool_doze(workpool *wp, unsigned ms, unsigned long seen)
{
    atomic_fetch_add(&wp->dozing, 1);
    sleep_until(wp, ms, true, seen);
    atomic_fetch_sub(&wp->dozing, 1);
}

void workpool_idle(workpool *wp, unsigned *idle_ms, unsigned base_ms, unsigned max_ms,
                   unsigned long seen)
{
    if (*idle_ms <= base_ms)
        workpool_wait(wp, *idle_ms);
    else
        workpool_doze(wp, *idle_ms, seen);
    *idle_ms = *idle_ms >= max_ms / 2 ? max_ms : *idle_ms * 2;
}

void workpool_post(workpool *wp)
{
    if (wp == NULL)
        return;
    atomic_fetch_add(&wp->posted, 1);
    if (atomic_load(&wp->dozing) > 0)
        workpool_wake(wp);
}

void workpool_wake(workpool *wp)
{
    pthread_mutex_lock(&wp->mu);
    wp->wakes++;
    pthread_cond_broadcast(&wp->cv);
    pthread_mutex_unlock(&wp->mu);
}

void workpool_stop(workpool *wp)
{
    if (wp == NULL)
        return;
    pthread_mutex_lock(&wp->mu);
    wp->stopping = true;
    pthread_cond_broadcast(&wp->cv);
    pthread_mutex_unlock(&wp->mu);
}

void workpool_join(workpool *wp)
{
    if (wp == NULL)
        return;
    workpool_stop(wp);
    if (wp->joined)
        return;
    for (unsigned i = 0; i < wp->started; i++)
        pthread_join(wp->threads[i].thread, NULL);
    wp->joined = true;
}

void workpool_free(workpool *wp)
{
    if (wp == NULL)
        return;
    workpool_join(wp);
    pthread_cond_destroy(&wp->cv);
    pthread_mutex_destroy(&wp->mu);
    free(wp->threads);
    free(wp);
}
