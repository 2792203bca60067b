/*
 * admission - see admission.h.
 */
#include "http/admission.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/xalloc.h"
#include "log/log.h"

#define WINDOW_MS 1000.0
#define RETRY_MIN_S 1u
#define RETRY_MAX_S 60u

/* Refusals and answers of one window of WINDOW_MS. */
typedef struct {
    uint64_t shed, answered, admitted;
} window;

struct admission {
    pthread_mutex_t mu;
    unsigned max_inflight;
    uint64_t max_bytes;
    unsigned inflight;
    uint64_t inflight_bytes;
    double window_start_ms;
    window cur, prev;   /* the window running now, the one before it (zero if idle) */
};

admission *admission_new(unsigned max_inflight, uint64_t max_inflight_bytes)
{
    admission *a = xcalloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    a->max_inflight = max_inflight ? max_inflight : 1;
    a->max_bytes = max_inflight_bytes;
    return a;
}

void admission_free(admission *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* Start a new window when the current one is over; with a->mu held. Returns the window that
 * ended if it refused requests (for one log line outside the lock), else a zero window. */
static window roll(admission *a, double now_ms)
{
    window ended = {0};
    if (now_ms - a->window_start_ms < WINDOW_MS)
        return ended;
    ended = a->cur;
    /* a gap of more than a window: nothing happened in the one before this */
    a->prev = now_ms - a->window_start_ms < 2 * WINDOW_MS ? a->cur : (window){0};
    a->cur = (window){0};
    a->window_start_ms = now_ms;
    return ended.shed > 0 ? ended : (window){0};
}

/* The seconds to come back after: refused / taken over the last one to two windows, taken
 * being the larger of admitted and answered (admitted: the first moments of a storm, before
 * any answer; answered: what the node actually gets through). */
static unsigned retry_after(const admission *a)
{
    uint64_t shed = a->prev.shed + a->cur.shed, answered = a->prev.answered + a->cur.answered;
    uint64_t admitted = a->prev.admitted + a->cur.admitted;
    uint64_t taken = answered > admitted ? answered : admitted;
    if (taken == 0)
        return RETRY_MAX_S;
    uint64_t s = (shed + taken - 1) / taken;   /* rounded up */
    if (s < RETRY_MIN_S)
        return RETRY_MIN_S;
    return s > RETRY_MAX_S ? RETRY_MAX_S : (unsigned)s;
}

/* The line of a window that refused requests; retry_s: the Retry-After its end gave. */
static void log_window(const window *w, unsigned retry_s)
{
    if (w->shed > 0)
        log_event(LOG_WARN, "ingest_shed", "refused=%llu admitted=%llu answered=%llu "
                  "retry_after_s=%u", (unsigned long long)w->shed,
                  (unsigned long long)w->admitted, (unsigned long long)w->answered, retry_s);
}

bool admission_enter(unsigned *retry_after_s, admission *a, uint64_t bytes, double now_ms)
{
    pthread_mutex_lock(&a->mu);
    unsigned shown = retry_after(a);   /* what the window that may end now told clients */
    window ended = roll(a, now_ms);
    bool ok = a->inflight == 0 ||
              (a->inflight < a->max_inflight && a->inflight_bytes + bytes <= a->max_bytes);
    if (ok) {
        a->inflight++;
        a->inflight_bytes += bytes;
        a->cur.admitted++;
        *retry_after_s = 0;
    } else {
        a->cur.shed++;
        *retry_after_s = retry_after(a);
    }
    pthread_mutex_unlock(&a->mu);
    log_window(&ended, shown);
    return ok;
}

void admission_leave(admission *a, uint64_t bytes, double now_ms)
{
    pthread_mutex_lock(&a->mu);
    unsigned shown = retry_after(a);
    window ended = roll(a, now_ms);
    if (a->inflight > 0)
        a->inflight--;
    a->inflight_bytes = a->inflight_bytes > bytes ? a->inflight_bytes - bytes : 0;
    a->cur.answered++;
    pthread_mutex_unlock(&a->mu);
    log_window(&ended, shown);
}

unsigned admission_inflight(admission *a)
{
    pthread_mutex_lock(&a->mu);
    unsigned n = a->inflight;
    pthread_mutex_unlock(&a->mu);
    return n;
}
