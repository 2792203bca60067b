/*
 * conns - see conns.h.
 */
#include "http/conns.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/workpool.h"
#include "base/xalloc.h"
#include "http/metrics.h"
#include "log/log.h"

#define REAP_INTERVAL_MS 250
/* Lingering close (conns_request_linger), as nginx's lingering_timeout / lingering_time: */
#define LINGER_IDLE_MS 5000              /* closed after this long without a byte */
#define LINGER_MAX_MS 30000              /* and after this long in all */
#define LINGER_MAX_BYTES (64ull << 20)   /* or once this much was discarded */
#define LINGER_MAX_SOCKETS 256           /* more at once are closed at once (a reset) */

enum { PHASE_WAITING, PHASE_BODY, PHASE_HANDLING };

struct conn_slot {
    conn_slot *prev, *next;
    int fd;
    /* written by the connection's thread, read by the reaper */
    atomic_int phase;
    atomic_uint_fast64_t since_ms;  /* WAITING: connected or last answer sent; BODY: headers */
    atomic_uint_fast64_t body_bytes;
    atomic_uint_fast64_t declared;  /* Content-Length, UINT64_MAX if unknown */
    /* the reaper's own */
    uint64_t last_bytes;            /* body_bytes at the previous pass */
    bool fin_seen;                  /* half-closed at the previous pass, no progress since */
    bool closing;                   /* shut down already */
    atomic_bool linger;             /* answered before its body was read: linger on close */
};

/* A socket libmicrohttpd closed after an early answer, kept open by a dup of it. */
typedef struct {
    int fd;
    uint64_t since_ms, last_ms, bytes;
} lingering;

struct conns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn_slot *head;
    atomic_uint n;
    bool stop;
    pthread_t reaper;
    uint64_t header_timeout_ms;
    uint64_t min_body_rate;
    /* lingering close: sockets handed over in the "closed" notification, under lmu */
    pthread_mutex_t lmu;
    lingering lingers[LINGER_MAX_SOCKETS];
    unsigned nlingers;
    workpool *lingerer;   /* one thread reading and discarding, then closing */
};

static const char *const REASONS[CONN_CLOSED_NREASONS] = {
    "header_timeout", "slow_body", "half_closed", "shutdown"};

const char *conns_reason_name(conn_closed_reason reason)
{
    return (unsigned)reason < CONN_CLOSED_NREASONS ? REASONS[reason] : "unknown";
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Called with c->mu held. */
static void shut(conn_slot *s, conn_closed_reason why)
{
    s->closing = true;
    /* Ignored: the peer may be gone already; libmicrohttpd closes the descriptor either way. */
    (void)shutdown(s->fd, SHUT_RDWR);
    metrics_connection_closed(why);
    log_event(LOG_DEBUG, "connection_closed", "reason=%s fd=%d", REASONS[why], s->fd);
}

/* FIN received and nothing left to read: the client will send no more. */
static bool peer_finished(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
}

static void reap_one(conns *c, conn_slot *s, uint64_t now)
{
    if (s->closing)
        return;
    int phase = atomic_load(&s->phase);
    uint64_t since = atomic_load(&s->since_ms);
    /* `now` was read before the pass: a request that began or ended since then has a later
     * `since`, which must count as no time at all (unsigned, it would be ages: a connection
     * just answered was shut under the client's next request) */
    uint64_t elapsed = now > since ? now - since : 0;
    if (phase == PHASE_WAITING) {
        if (elapsed > c->header_timeout_ms)
            shut(s, CONN_CLOSED_HEADER_TIMEOUT);
        return;
    }
    if (phase != PHASE_BODY)
        return;
    uint64_t bytes = atomic_load(&s->body_bytes), declared = atomic_load(&s->declared);
    bool progress = bytes != s->last_bytes;
    s->last_bytes = bytes;
    /* Half-closed with the body incomplete, seen twice in a row without progress: bytes
     * libmicrohttpd has read but not handed over yet would show as progress. */
    bool fin = bytes < declared && !progress && peer_finished(s->fd);
    if (fin && s->fin_seen) {
        shut(s, CONN_CLOSED_HALF_CLOSED);
        return;
    }
    s->fin_seen = fin;
    if (c->min_body_rate > 0 && elapsed > c->header_timeout_ms &&
        bytes * 1000u < c->min_body_rate * elapsed)
        shut(s, CONN_CLOSED_SLOW_BODY);
}

static void *reaper_main(void *arg)
{
    conns *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += REAP_INTERVAL_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        if (c->stop)
            break;
        uint64_t now = mono_ms();
        for (conn_slot *s = c->head; s; s = s->next)
            reap_one(c, s, now);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Keep `fd` (a dup of the socket libmicrohttpd is about to close) open while the client may
 * still be sending the body of a request answered early: FIN is sent (the answer is complete)
 * and what comes is read and discarded, so closing finds no unread byte and sends no reset,
 * which would make the client's kernel drop the answer before the client read it. */
static void linger_add(conns *c, int fd)
{
    (void)shutdown(fd, SHUT_WR);   /* ignored: libmicrohttpd may have done it already */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        close(fd);
        return;
    }
    uint64_t now = mono_ms();
    pthread_mutex_lock(&c->lmu);
    if (c->nlingers == LINGER_MAX_SOCKETS || c->lingerer == NULL) {
        pthread_mutex_unlock(&c->lmu);
        close(fd);   /* too many at once: this client may see a reset */
        return;
    }
    c->lingers[c->nlingers++] = (lingering){fd, now, now, 0};
    pthread_mutex_unlock(&c->lmu);
    workpool_wake(c->lingerer);
}

/* Read and discard what is there; true when the socket is done (EOF, error, or a limit). */
static bool linger_drain(lingering *l, uint64_t now)
{
    char buf[65536];
    for (;;) {
        ssize_t n = recv(l->fd, buf, sizeof buf, 0);
        if (n > 0) {
            l->bytes += (uint64_t)n;
            l->last_ms = now;
            if (l->bytes >= LINGER_MAX_BYTES)
                return true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return now - l->last_ms >= LINGER_IDLE_MS || now - l->since_ms >= LINGER_MAX_MS;
        return true;   /* EOF (the client is done) or an error */
    }
}

/* The lingerer (workpool_fn, one thread): polls the lingering sockets, drains them, closes
 * those that are done. */
static void lingerer_run(workpool *wp, unsigned index, void *ctx)
{
    conns *c = ctx;
    (void)index;
    while (!workpool_stopping(wp)) {
        struct pollfd p[LINGER_MAX_SOCKETS];
        pthread_mutex_lock(&c->lmu);
        unsigned n = c->nlingers;
        for (unsigned i = 0; i < n; i++)
            p[i] = (struct pollfd){c->lingers[i].fd, POLLIN, 0};
        pthread_mutex_unlock(&c->lmu);
        if (n == 0) {
            workpool_wait(wp, 1000);
            continue;
        }
        if (poll(p, n, 100) < 0 && errno != EINTR)
            workpool_wait(wp, 100);
        uint64_t now = mono_ms();
        pthread_mutex_lock(&c->lmu);
        /* only this thread removes entries: the first n are the ones polled */
        for (unsigned i = n; i-- > 0;) {
            if (!linger_drain(&c->lingers[i], now))
                continue;
            close(c->lingers[i].fd);
            c->lingers[i] = c->lingers[--c->nlingers];
        }
        pthread_mutex_unlock(&c->lmu);
    }
}

conns *conns_new(uint32_t header_timeout_ms, uint64_t min_body_rate)
{
    conns *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->header_timeout_ms = header_timeout_ms;
    c->min_body_rate = min_body_rate;
    pthread_mutex_init(&c->lmu, NULL);
    err_info err = {0};
    if (workpool_start(&c->lingerer, 1, lingerer_run, c, &err) != ERR_OK)
        log_event(LOG_ERROR, "lingerer_not_started", "message=%s", err.msg);
    if (pthread_create(&c->reaper, NULL, reaper_main, c) != 0) {
        /* Without the reaper only libmicrohttpd's own timeout protects the slots. */
        log_event(LOG_ERROR, "reaper_not_started", "error=%s", "pthread_create failed");
        c->stop = true;
        c->reaper = 0;
    }
    return c;
}

void conns_free(conns *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    bool running = !c->stop;
    c->stop = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (running)
        pthread_join(c->reaper, NULL);
    workpool_free(c->lingerer);
    for (unsigned i = 0; i < c->nlingers; i++)
        close(c->lingers[i].fd);
    pthread_mutex_destroy(&c->lmu);
    while (c->head) {   /* libmicrohttpd has stopped: no notification will come */
        conn_slot *s = c->head;
        c->head = s->next;
        free(s);
    }
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode toe)
{
    conns *c = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_slot *s = xcalloc(1, sizeof *s);
        s->fd = fd ? fd->connect_fd : -1;
        atomic_init(&s->phase, PHASE_WAITING);
        atomic_init(&s->since_ms, mono_ms());
        atomic_init(&s->body_bytes, 0);
        atomic_init(&s->declared, UINT64_MAX);
        atomic_init(&s->linger, false);
        pthread_mutex_lock(&c->mu);
        s->next = c->head;
        if (c->head)
            c->head->prev = s;
        c->head = s;
        c->n++;
        pthread_mutex_unlock(&c->mu);
        *socket_context = s;
        metrics_connections(1);
        return;
    }
    conn_slot *s = *socket_context;
    if (!s)
        return;
    *socket_context = NULL;
    /* The notification comes before libmicrohttpd closes the descriptor: a dup keeps the
     * socket open for the lingering close. */
    if (atomic_load(&s->linger) && s->fd >= 0) {
        int fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0)
            linger_add(c, fd);
    }
    pthread_mutex_lock(&c->mu);
    if (s->prev)
        s->prev->next = s->next;
    else
        c->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    c->n--;
    pthread_mutex_unlock(&c->mu);
    free(s);
    metrics_connections(-1);
}

conn_slot *conns_slot(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

void conns_request_begin(conn_slot *s, uint64_t declared)
{
    if (!s)
        return;
    atomic_store(&s->body_bytes, 0);
    atomic_store(&s->declared, declared);
    atomic_store(&s->linger, false);   /* a previous request's answer was not early */
    atomic_store(&s->since_ms, mono_ms());
    atomic_store(&s->phase, PHASE_BODY);
}

void conns_request_body(conn_slot *s, uint64_t bytes)
{
    if (s)
        atomic_fetch_add(&s->body_bytes, bytes);
}

void conns_request_linger(conn_slot *s)
{
    if (s)
        atomic_store(&s->linger, true);
}

void conns_request_handling(conn_slot *s)
{
    if (s)
        atomic_store(&s->phase, PHASE_HANDLING);
}

void conns_request_end(conn_slot *s)
{
    if (!s)
        return;
    atomic_store(&s->since_ms, mono_ms());
    atomic_store(&s->phase, PHASE_WAITING);
}

unsigned conns_close_idle(conns *c)
{
    unsigned n = 0;
    pthread_mutex_lock(&c->mu);
    for (conn_slot *s = c->head; s; s = s->next)
        if (!s->closing && atomic_load(&s->phase) == PHASE_WAITING) {
            shut(s, CONN_CLOSED_SHUTDOWN);
            n++;
        }
    pthread_mutex_unlock(&c->mu);
    return n;
}

unsigned conns_open(conns *c)
{
    return atomic_load(&c->n);
}
