/*
 * workpool - threads that loop until stopped (see workpool.h). One mutex and one condition
 * variable: `stopping` and the wake counter change under the mutex, every sleeper waits on
 * the condition variable with a deadline.
 */
#include "base/workpool.h"

#include <pthread.h>
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

void workpool_wait(workpool *wp, unsigned ms)
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
    while (!wp->stopping && wp->wakes == wakes)
        if (pthread_cond_timedwait(&wp->cv, &wp->mu, &dl) != 0)
            break;   /* the time is up (ETIMEDOUT) */
    pthread_mutex_unlock(&wp->mu);
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
