/*
 * conns - see conns.h.
 */
#include "http/conns.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "base/xalloc.h"
#include "http/metrics.h"
#include "log/log.h"

#define REAP_INTERVAL_MS 250

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
};

struct conns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn_slot *head;
    atomic_uint n;
    bool stop;
    pthread_t reaper;
    uint64_t header_timeout_ms;
    uint64_t min_body_rate;
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
    if (phase == PHASE_WAITING) {
        if (now - since > c->header_timeout_ms)
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
    uint64_t elapsed = now - since;
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

conns *conns_new(uint32_t header_timeout_ms, uint64_t min_body_rate)
{
    conns *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->header_timeout_ms = header_timeout_ms;
    c->min_body_rate = min_body_rate;
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
    atomic_store(&s->since_ms, mono_ms());
    atomic_store(&s->phase, PHASE_BODY);
}

void conns_request_body(conn_slot *s, uint64_t bytes)
{
    if (s)
        atomic_fetch_add(&s->body_bytes, bytes);
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
