/*
 * store_pool - Postgres through libpq: a small pool of connections, statements prepared
 * lazily on each connection (a statement naming a table that a migration has not created yet
 * must not break the pool), text results, binary parameters for bytea; and the schema:
 * migrations compiled in from migrations/NNNN_name.sql.
 *
 * libpq's status codes and SQLSTATEs never leave server/store: store_translate() maps them to
 * err_code (see store.h). The tables' own statements live in store_<table>.c.
 */
#include "store/store.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/xalloc.h"
#include "store/store_internal.h"

static const store_stmt ST_HAS_MIGRATIONS = {
    "has_migrations", "SELECT to_regclass('schema_migrations') IS NOT NULL"};
static const store_stmt ST_SCHEMA_VERSION = {
    "schema_version", "SELECT coalesce(max(version), 0) FROM schema_migrations"};

/* ---- pool ------------------------------------------------------------------------------ */

/* The circuit breaker: BREAKER_TRIPS timeouts in a row (a statement or a connection attempt
 * that got no answer by its deadline, a connection refused) open it; while it is open every
 * store_acquire fails at once with ERR_STORE, and the probe thread tries a connection and
 * `SELECT 1` every BREAKER_PROBE_EVERY_MS (each bounded by BREAKER_PROBE_MS) until one
 * answers, which closes it. Why: without it, every request of a hung database spends its
 * whole deadline before its 503, holding a connection slot and a thread all along. */
#define BREAKER_TRIPS 3
#define BREAKER_PROBE_EVERY_MS 100
#define BREAKER_PROBE_MS 1000
#define BREAKER_MIN_WAIT_MS 250 /* a timeout after less waiting (a request whose time was
                                   nearly spent) says nothing about the database */

struct store {
    char *url;
    unsigned size, timeout_ms;
    _Atomic unsigned statement_ms;  /* per statement, 0 = none (store_set_statement_timeout) */
    pthread_mutex_t mu;
    pthread_cond_t cv;              /* a connection came back; the breaker opened; stop */
    pconn **idle;   /* stack of `n_idle` idle connections */
    unsigned n_idle, n_open, n_waiting;
    /* the breaker: state and counters under mu, `open` also read without it */
    _Atomic bool breaker_open;
    unsigned failures_in_row;       /* timeouts since the last answer */
    uint64_t breaker_opened, breaker_rejected;
    double opened_at_ms;
    char breaker_why[200];          /* the failure that opened it */
    store_breaker_fn on_breaker;
    void *on_breaker_ctx;
    bool stopping, probe_started;
    pthread_cond_t probe_cv;        /* the breaker opened, or stop */
    pthread_t probe;
};

static void breaker_failure(store *s, const char *why);

/* First line of a libpq message, without the trailing newline. */
static void store_first_line(char *out, size_t cap, const char *msg)
{
    size_t n = 0;
    if (msg)
        while (msg[n] && msg[n] != '\n' && n + 1 < cap)
            n++;
    if (n)
        memcpy(out, msg, n);
    out[n] = '\0';
}

static void store_ignore_notice(void *ctx, const char *message)
{
    (void)ctx, (void)message;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The calling thread's deadline for all its store calls (monotonic ms; 0 = none). */
static _Thread_local double thread_deadline;

void store_deadline_begin(unsigned ms)
{
    thread_deadline = mono_ms() + ms;
}

void store_deadline_set(double deadline_ms)
{
    thread_deadline = deadline_ms > 0 ? deadline_ms : 0;
}

double store_deadline_get(void)
{
    return thread_deadline;
}

double store_now_ms(void)
{
    return mono_ms();
}

void store_deadline_end(void)
{
    thread_deadline = 0;
}

/* The earlier of `deadline` and the thread's (0 = none for either). */
static double sooner(double deadline)
{
    if (thread_deadline > 0 && (deadline == 0 || thread_deadline < deadline))
        return thread_deadline;
    return deadline;
}

/* Wait for `events` on libpq's socket until `deadline` (monotonic ms; 0 = none).
 * 1 ready, 0 deadline passed, -1 no socket or poll failed. */
static int wait_socket(PGconn *pg, short events, double deadline)
{
    struct pollfd p = {PQsocket(pg), events, 0};
    if (p.fd < 0)
        return -1;
    for (;;) {
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - mono_ms();
            if (left <= 0)
                return 0;
            ms = (int)left + 1;
        }
        int n = poll(&p, 1, ms);
        if (n > 0)
            return 1;
        if (n == 0)
            continue;   /* re-check the deadline: poll may wake a little early */
        if (errno != EINTR)
            return -1;
    }
}

static err_code store_connect(pconn **out, store *s, double deadline, err_info *err)
{
    char timeout_s[16], options[64];
    unsigned secs = (s->timeout_ms + 999) / 1000;
    snprintf(timeout_s, sizeof timeout_s, "%u", secs < 2 ? 2 : secs);
    snprintf(options, sizeof options, "-c statement_timeout=%u", s->statement_ms);
    /* With expand_dbname, settings inside the URL override the keywords listed before it.
     * Keepalives and tcp_user_timeout notice a peer that vanished; a server that is there
     * but does not answer is caught by the deadlines (wait_socket). */
    const char *const keys[] = {"connect_timeout", "application_name", "keepalives",
                                "keepalives_idle", "keepalives_interval", "keepalives_count",
                                "tcp_user_timeout", "options", "dbname", NULL};
    const char *const values[] = {timeout_s, "stacksift", "1", "10", "5", "3", "10000", options,
                                  s->url, NULL};
    PGconn *pg = PQconnectStartParams(keys, values, 1);
    *out = NULL;
    if (pg == NULL)
        return err_set(err, ERR_STORE, "connecting to the database: out of memory");
    PostgresPollingStatusType st = PQstatus(pg) == CONNECTION_BAD ? PGRES_POLLING_FAILED
                                                                  : PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        int w = wait_socket(pg, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (w == 0) {
            PQfinish(pg);
            return err_set(err, ERR_STORE, "connecting to the database: no answer within %u ms",
                           s->timeout_ms);
        }
        st = w < 0 ? PGRES_POLLING_FAILED : PQconnectPoll(pg);
    }
    if (st == PGRES_POLLING_FAILED || PQstatus(pg) != CONNECTION_OK) {
        char line[200];
        store_first_line(line, sizeof line, PQerrorMessage(pg));
        PQfinish(pg);
        return err_set(err, ERR_STORE, "connecting to the database: %s", line);
    }
    /* Non-blocking: sending never waits for the server; await_result does, with a deadline. */
    if (PQsetnonblocking(pg, 1) != 0) {
        PQfinish(pg);
        return err_set(err, ERR_STORE, "connecting to the database: cannot make it non-blocking");
    }
    /* NOTICEs ("relation already exists, skipping") are not errors and must not reach
     * stderr unstructured. */
    PQsetNoticeProcessor(pg, store_ignore_notice, NULL);
    /* Values TOASTed on this connection (raw reports, 5-50 KB each) are compressed with lz4,
     * not pglz: pglz was the largest single cost of intake in Postgres. Ignored
     * where the server has no lz4: values are then compressed with pglz as before. */
    pconn *c = xcalloc(1, sizeof *c);
    c->pg = pg;
    c->server_ms = s->statement_ms;
    /* With a deadline like every statement: PQexec would block on a non-blocking connection
     * to a hung server (reliability_db_freeze saw a request wait 30 s on a new connection). */
    c->statement_ms = s->statement_ms ? s->statement_ms : s->timeout_ms;
    PGresult *lz4 = store_pq(c, "SET default_toast_compression = lz4");
    if (lz4 == NULL && c->timed_out) {
        PQfinish(pg);
        free(c);
        return err_set(err, ERR_STORE, "connecting to the database: no answer within %u ms",
                       s->timeout_ms);
    }
    PQclear(lz4);
    *out = c;
    return ERR_OK;
}

/* ---- statements with a deadline -------------------------------------------------------- */

/* The answer to what was just sent (`sent`: the PQsend* call's result), as PQexec gives it
 * (the last result), waiting at most c->statement_ms. NULL: the deadline passed
 * (c->timed_out) or the connection failed (PQerrorMessage says why). */
static PGresult *await_result(pconn *c, int sent)
{
    if (!sent)
        return NULL;
    double start = mono_ms();
    double deadline = sooner(c->statement_ms ? start + c->statement_ms : 0);
    for (;;) {   /* push the query out */
        int f = PQflush(c->pg);
        if (f == 0)
            break;
        if (f < 0)
            return NULL;
        int w = wait_socket(c->pg, POLLOUT | POLLIN, deadline);
        if (w == 0)
            goto timeout;
        if (w < 0 || PQconsumeInput(c->pg) == 0)
            return NULL;
    }
    PGresult *last = NULL;
    for (;;) {
        while (PQisBusy(c->pg)) {
            int w = wait_socket(c->pg, POLLIN, deadline);
            if (w == 0) {
                PQclear(last);
                goto timeout;
            }
            if (w < 0 || PQconsumeInput(c->pg) == 0) {
                PQclear(last);
                return NULL;
            }
        }
        PGresult *r = PQgetResult(c->pg);
        if (r == NULL)
            break;
        ExecStatusType st = PQresultStatus(r);
        PQclear(last);
        last = r;
        if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH)
            break;   /* no COPY here; never wait for one */
    }
    return last;
timeout:
    c->timed_out = true;
    c->unanswered = mono_ms() - start >= BREAKER_MIN_WAIT_MS;
    return NULL;
}

PGresult *store_pq_params(pconn *c, const char *sql, int n, const char *const *values,
                          const int *lengths, const int *formats, int result_format)
{
    return await_result(c, PQsendQueryParams(c->pg, sql, n, NULL, values, lengths, formats,
                                             result_format));
}

PGresult *store_pq(pconn *c, const char *sql)
{
    return await_result(c, PQsendQuery(c->pg, sql));
}

PGresult *store_pq_prepare(pconn *c, const char *name, const char *sql)
{
    return await_result(c, PQsendPrepare(c->pg, name, sql, 0, NULL));
}

PGresult *store_pq_prepared(pconn *c, const char *name, int n, const char *const *values,
                            const int *lengths, const int *formats, int result_format)
{
    return await_result(c, PQsendQueryPrepared(c->pg, name, n, values, lengths, formats,
                                               result_format));
}

err_code store_unbounded(pconn *c, err_info *err)
{
    c->discard = true;
    c->statement_ms = 0;
    return store_command(c, "SET statement_timeout = 0", "lifting the statement timeout", err);
}

err_code store_unbounded_xact(pconn *c, err_info *err)
{
    assert(PQtransactionStatus(c->pg) == PQTRANS_INTRANS);
    c->statement_ms = 0;
    return store_command(c, "SET LOCAL statement_timeout = 0", "lifting the statement timeout",
                         err);
}

static void store_disconnect(pconn *c)
{
    if (c) {
        PQfinish(c->pg);
        free(c);
    }
}

/* An ERR_STORE for a request refused while the breaker is open; under s->mu. */
static err_code breaker_refuse(store *s, err_info *err)
{
    s->breaker_rejected++;
    return err_set(err, ERR_STORE, "the database is not answering (for %.0f ms: %s); not "
                   "asked again until a probe query succeeds", mono_ms() - s->opened_at_ms,
                   s->breaker_why);
}

err_code store_acquire(pconn **out, store *s, err_info *err)
{
    double now = mono_ms();
    *out = NULL;
    if (thread_deadline > 0 && thread_deadline <= now)
        return err_set(err, ERR_STORE, "the request's %u ms for the database were spent before "
                       "this call", s->timeout_ms);
    double connect_deadline = sooner(now + s->timeout_ms);
    double wait_ms = connect_deadline - now;
    unsigned wait = wait_ms > 0 ? (unsigned)wait_ms : 0;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += wait / 1000;
    deadline.tv_nsec += (long)(wait % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    if (s->breaker_open) {
        err_code rc = breaker_refuse(s, err);
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    while (s->n_idle == 0 && s->n_open >= s->size) {
        s->n_waiting++;
        int rc = pthread_cond_timedwait(&s->cv, &s->mu, &deadline);
        s->n_waiting--;
        if (s->breaker_open) {   /* opened while this caller waited: no use waiting on */
            err_code brc = breaker_refuse(s, err);
            pthread_mutex_unlock(&s->mu);
            return brc;
        }
        if (rc == ETIMEDOUT && s->n_idle == 0 && s->n_open >= s->size) {
            pthread_mutex_unlock(&s->mu);
            return err_set(err, ERR_STORE, "no free database connection within %.0f ms",
                           wait_ms > 0 ? wait_ms : 0);
        }
    }
    if (s->n_idle > 0) {
        pconn *c = s->idle[--s->n_idle];
        pthread_mutex_unlock(&s->mu);
        c->statement_ms = s->statement_ms;
        if (c->server_ms != c->statement_ms) {   /* store_set_statement_timeout since */
            char sql[64];
            snprintf(sql, sizeof sql, "SET statement_timeout = %u", c->statement_ms);
            err_code rc = store_command(c, sql, "setting the statement timeout", err);
            if (rc != ERR_OK) {
                store_release(s, c);
                return rc;
            }
            c->server_ms = c->statement_ms;
        }
        *out = c;
        return ERR_OK;
    }
    s->n_open++;   /* reserve the slot, then connect without holding the lock */
    pthread_mutex_unlock(&s->mu);
    err_code rc = store_connect(out, s, connect_deadline, err);
    if (rc == ERR_OK)
        (*out)->statement_ms = s->statement_ms;
    if (rc != ERR_OK) {
        double end = mono_ms();
        pthread_mutex_lock(&s->mu);
        s->n_open--;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        /* refused, or no answer for long enough: the database's fault, not the caller's */
        if (end < connect_deadline || end - now >= BREAKER_MIN_WAIT_MS)
            breaker_failure(s, err->msg);
    }
    return rc;
}

void store_release(store *s, pconn *c)
{
    /* A connection left inside a transaction by an error is rolled back before reuse; one
     * that missed a deadline may still get the old answer and is closed instead. */
    if (!c->timed_out && !c->discard && PQstatus(c->pg) == CONNECTION_OK &&
        PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        PQclear(store_pq(c, "ROLLBACK"));
    bool lost = PQstatus(c->pg) != CONNECTION_OK;
    int broken = c->timed_out || c->discard || lost ||
                 PQtransactionStatus(c->pg) != PQTRANS_IDLE;
    bool failed = c->unanswered || lost;
    char why[200] = "";
    if (c->unanswered)
        snprintf(why, sizeof why, "a statement got no answer within its deadline");
    else if (lost)
        store_first_line(why, sizeof why, PQerrorMessage(c->pg));
    pthread_mutex_lock(&s->mu);
    if (broken) {
        s->n_open--;
    } else {
        s->idle[s->n_idle++] = c;
        c = NULL;
    }
    if (!failed && !broken)
        s->failures_in_row = 0;   /* it answered */
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    store_disconnect(c);
    if (failed)
        breaker_failure(s, why[0] ? why : "database connection lost");
}

/* ---- the circuit breaker --------------------------------------------------------------- */

static void *probe_main(void *arg);

/* One more failure in a row (called without s->mu); BREAKER_TRIPS of them open the breaker. */
static void breaker_failure(store *s, const char *why)
{
    bool opened = false;
    pthread_mutex_lock(&s->mu);
    s->failures_in_row++;
    if (!s->breaker_open && s->failures_in_row >= BREAKER_TRIPS && !s->stopping) {
        s->breaker_open = true;
        s->breaker_opened++;
        s->opened_at_ms = mono_ms();
        snprintf(s->breaker_why, sizeof s->breaker_why, "%s", why);
        opened = true;
        if (!s->probe_started)
            s->probe_started = pthread_create(&s->probe, NULL, probe_main, s) == 0;
        pthread_cond_broadcast(&s->cv);   /* callers waiting for a connection fail now */
        pthread_cond_signal(&s->probe_cv);
    }
    unsigned n = s->failures_in_row;
    pthread_mutex_unlock(&s->mu);
    if (opened && s->on_breaker)
        s->on_breaker(s->on_breaker_ctx, true, n, 0, why);
}

/* One probe: a new connection and SELECT 1 within BREAKER_PROBE_MS. */
static bool probe_once(store *s, err_info *err)
{
    pconn *c = NULL;
    double deadline = mono_ms() + BREAKER_PROBE_MS;
    store_deadline_set(deadline);
    bool ok = store_connect(&c, s, deadline, err) == ERR_OK;
    if (ok) {
        PGresult *res = store_pq(c, "SELECT 1");
        ok = PQresultStatus(res) == PGRES_TUPLES_OK;
        if (!ok)
            store_translate(res, c, "probing the database", err);
        PQclear(res);
    }
    store_disconnect(c);
    store_deadline_end();
    return ok;
}

/* The probe thread: while the breaker is open, probe every BREAKER_PROBE_EVERY_MS; the first
 * probe answered closes it. Idle connections whose peer went meanwhile are closed then too:
 * after a restart of the database they are all broken, and each would cost a request its
 * retry. */
static void *probe_main(void *arg)
{
    store *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        if (!s->breaker_open) {
            pthread_cond_wait(&s->probe_cv, &s->mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += BREAKER_PROBE_EVERY_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->probe_cv, &s->mu, &ts);
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->mu);
        err_info err = {0};
        bool ok = probe_once(s, &err);
        pthread_mutex_lock(&s->mu);
        if (!ok)
            continue;
        /* Idle connections that saw their peer go (the database restarted: EOF or a reset
         * waits on the socket) are closed; the others (it was only frozen, or cut off) are
         * good as they are and spare the first requests a connection each. */
        pconn **stale = xcalloc(s->n_idle + 1, sizeof *stale);
        unsigned nstale = 0, kept = 0;
        for (unsigned i = 0; i < s->n_idle; i++) {
            struct pollfd pf = {PQsocket(s->idle[i]->pg), POLLIN, 0};
            if (pf.fd < 0 || poll(&pf, 1, 0) != 0)
                stale[nstale++] = s->idle[i];
            else
                s->idle[kept++] = s->idle[i];
        }
        s->n_open -= nstale;
        s->n_idle = kept;
        s->breaker_open = false;
        s->failures_in_row = 0;
        double open_ms = mono_ms() - s->opened_at_ms;
        pthread_mutex_unlock(&s->mu);
        for (unsigned i = 0; i < nstale; i++)
            store_disconnect(stale[i]);
        free(stale);
        if (s->on_breaker)
            s->on_breaker(s->on_breaker_ctx, false, 0, open_ms, NULL);
        pthread_mutex_lock(&s->mu);
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void store_on_breaker(store *s, store_breaker_fn fn, void *ctx)
{
    s->on_breaker = fn;
    s->on_breaker_ctx = ctx;
}

bool store_breaker_open(store *s, double *open_ms)
{
    pthread_mutex_lock(&s->mu);
    bool open = s->breaker_open;
    if (open_ms)
        *open_ms = open ? mono_ms() - s->opened_at_ms : 0;
    pthread_mutex_unlock(&s->mu);
    return open;
}

err_code store_open_lazy(store **out, const char *url, unsigned pool_size, unsigned timeout_ms,
                         err_info *err)
{
    *out = NULL;
    if (pool_size == 0 || pool_size > 1024)
        return err_set(err, ERR_INVALID, "database pool size %u is out of range 1..1024",
                       pool_size);
    char *why = NULL;
    PQconninfoOption *opts = PQconninfoParse(url ? url : "", &why);
    if (opts == NULL) {
        err_set(err, ERR_INVALID, "database URL: %s", why ? why : "cannot be parsed");
        PQfreemem(why);
        return ERR_INVALID;
    }
    PQconninfoFree(opts);
    store *s = xcalloc(1, sizeof *s);
    s->url = xstrdup(url ? url : "");
    s->size = pool_size;
    s->timeout_ms = timeout_ms ? timeout_ms : 3000;
    s->statement_ms = s->timeout_ms;
    s->idle = xcalloc(pool_size, sizeof *s->idle);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->probe_cv, NULL);
    *out = s;
    return ERR_OK;
}

err_code store_open(store **out, const char *url, unsigned pool_size, unsigned timeout_ms,
                    err_info *err)
{
    store *s;
    err_code rc = store_open_lazy(&s, url, pool_size, timeout_ms, err);
    if (rc != ERR_OK)
        return rc;
    pconn *c;
    rc = store_acquire(&c, s, err);
    if (rc != ERR_OK) {
        store_close(s);
        return rc;
    }
    store_release(s, c);
    *out = s;
    return ERR_OK;
}

void store_close(store *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->probe_cv);
    pthread_mutex_unlock(&s->mu);
    if (s->probe_started)
        pthread_join(s->probe, NULL);
    for (unsigned i = 0; i < s->n_idle; i++)
        store_disconnect(s->idle[i]);
    pthread_cond_destroy(&s->probe_cv);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->idle);
    free(s->url);
    free(s);
}

unsigned store_timeout_ms(const store *s)
{
    return s->timeout_ms;
}

void store_set_statement_timeout(store *s, unsigned ms)
{
    s->statement_ms = ms;
}

void store_pool_stats_get(store_pool_stats *out, store *s)
{
    pthread_mutex_lock(&s->mu);
    out->size = s->size;
    out->open = s->n_open;
    out->idle = s->n_idle;
    out->waiting = s->n_waiting;
    out->breaker_open = s->breaker_open;
    out->breaker_opened = s->breaker_opened;
    out->breaker_rejected = s->breaker_rejected;
    pthread_mutex_unlock(&s->mu);
}

/* ---- running statements ---------------------------------------------------------------- */

/* Map a failed result to an err_code; `what` names the operation for the message. */
err_code store_translate(PGresult *res, pconn *c, const char *what, err_info *err)
{
    char line[200];
    if (res == NULL && c->timed_out)
        return err_set(err, ERR_STORE, "%s: the database did not answer within %u ms", what,
                       c->statement_ms);
    const char *msg = res ? PQresultErrorMessage(res) : NULL;
    store_first_line(line, sizeof line, msg && *msg ? msg : PQerrorMessage(c->pg));
    if (PQstatus(c->pg) != CONNECTION_OK)
        return err_set(err, ERR_STORE, "%s: database connection lost: %s", what, line);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state == NULL)
        return err_set(err, ERR_STORE, "%s: %s", what, line);
    /* A value the database refused (a data exception, a CHECK) is the server's fault: what
     * reaches a statement was checked before (a report's text is UTF-8 by then), so it is not
     * the client's to fix; a caller that passes a client's value to be read by Postgres (a
     * time filter) says so itself (store_refused_value). */
    if (strcmp(state, "23514") == 0 || strncmp(state, "22", 2) == 0)
        return err_set(err, ERR_INTERNAL, "%s: " STORE_REFUSED " %s)" STORE_DB_WORDS "%s", what,
                       state, line);
    if (strncmp(state, "23", 2) == 0)     /* integrity constraint violation */
        return err_set(err, ERR_CONFLICT, "%s: it conflicts with what is stored" STORE_DB_WORDS
                       "%s (SQLSTATE %s)", what, line, state);
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0 ||
        strncmp(state, "53", 2) == 0 || strcmp(state, "40001") == 0 ||
        strcmp(state, "40P01") == 0)      /* connection, shutdown, resources, retryable */
        return err_set(err, ERR_STORE, "%s: %s", what, line);
    return err_set(err, ERR_INTERNAL, "%s: %s (SQLSTATE %s)", what, line, state);
}

bool store_refused_value(const err_info *err)
{
    return err->code == ERR_INTERNAL && strstr(err->msg, ": " STORE_REFUSED) != NULL;
}

static bool is_prepared(const pconn *c, const store_stmt *st)
{
    for (unsigned i = 0; i < c->nprepared; i++)
        if (c->prepared[i] == st)
            return true;
    return false;
}

/* A command's result: kept in *out (NULL `out`: cleared) when it succeeded, else translated
 * into err and cleared. */
static err_code check_result(PGresult **out, PGresult *res, pconn *c, const char *what,
                             err_info *err)
{
    ExecStatusType st = PQresultStatus(res);
    if (out != NULL)
        *out = NULL;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        err_code rc = store_translate(res, c, what, err);
        PQclear(res);
        return rc;
    }
    if (out != NULL)
        *out = res;
    else
        PQclear(res);
    return ERR_OK;
}

err_code store_exec(PGresult **out, pconn *c, const store_stmt *st, int n,
                    const char *const *values, const int *lengths, const int *formats,
                    err_info *err)
{
    return store_exec_format(out, c, st, n, values, lengths, formats, 0, err);
}

err_code store_exec_format(PGresult **out, pconn *c, const store_stmt *st, int n,
                           const char *const *values, const int *lengths, const int *formats,
                           int result_format, err_info *err)
{
    if (out != NULL)
        *out = NULL;
    if (!is_prepared(c, st)) {
        if (c->nprepared == STORE_MAX_PREPARED)   /* never in practice: run it unprepared */
            return check_result(out, store_pq_params(c, st->sql, n, values, lengths, formats,
                                                     result_format),
                                c, st->name, err);
        PGresult *p = store_pq_prepare(c, st->name, st->sql);
        if (PQresultStatus(p) != PGRES_COMMAND_OK) {
            err_code rc = store_translate(p, c, st->name, err);
            PQclear(p);
            return rc;
        }
        PQclear(p);
        c->prepared[c->nprepared++] = st;
    }
    return check_result(out, store_pq_prepared(c, st->name, n, values, lengths, formats,
                                               result_format),
                        c, st->name, err);
}

err_code store_exec_sql(PGresult **out, pconn *c, const char *what, const char *sql, int n,
                        const char *const *values, int result_format, err_info *err)
{
    return store_exec_sql_params(out, c, what, sql, n, values, NULL, NULL, result_format, err);
}

err_code store_exec_sql_params(PGresult **out, pconn *c, const char *what, const char *sql,
                               int n, const char *const *values, const int *lengths,
                               const int *formats, int result_format, err_info *err)
{
    return check_result(out, store_pq_params(c, sql, n, values, lengths, formats, result_format),
                        c, what, err);
}

/* Run a plain SQL command (transaction control, migrations) without parameters. */
err_code store_command(pconn *c, const char *sql, const char *what, err_info *err)
{
    PGresult *res = store_pq(c, sql);
    ExecStatusType st = PQresultStatus(res);
    err_code rc = ERR_OK;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        rc = store_translate(res, c, what, err);
    PQclear(res);
    return rc;
}

/* Run fn on a pooled connection; retry once on a fresh connection when the first one turns
 * out to be broken (the database restarted since it was opened). */
err_code store_run(store *s, store_fn fn, void *ctx, err_info *err)
{
    err_code rc = ERR_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        pconn *c;
        rc = store_acquire(&c, s, err);
        if (rc != ERR_OK)
            return rc;
        rc = fn(c, ctx, err);
        /* a connection that broke at once is retried; one that hung is not: waiting again
         * would only double the time before the 503 */
        int broken = PQstatus(c->pg) != CONNECTION_OK && !c->timed_out;
        store_release(s, c);
        if (!(rc == ERR_STORE && broken))
            break;
    }
    return rc;
}

const char *store_dup(arena *a, PGresult *res, int row, int col, err_info *err,
                             err_code *rc)
{
    if (PQgetisnull(res, row, col))
        return NULL;
    const char *v = arena_strndup(a, PQgetvalue(res, row, col),
                                  (size_t)PQgetlength(res, row, col), err);
    if (!v)
        *rc = ERR_TOO_LARGE;
    return v;
}

void store_copy(char *out, size_t cap, PGresult *res, int row, int col)
{
    snprintf(out, cap, "%s", PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col));
}

/* ---- schema ---------------------------------------------------------------------------- */

int store_schema_required(void)
{
    return STORE_MIGRATIONS_COUNT ? STORE_MIGRATIONS[STORE_MIGRATIONS_COUNT - 1].version : 0;
}

static err_code do_schema_version(pconn *c, void *ctx, err_info *err)
{
    int *out = ctx;
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_HAS_MIGRATIONS, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    int has = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    *out = 0;
    if (!has)
        return ERR_OK;
    rc = store_exec(&res, c, &ST_SCHEMA_VERSION, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *out = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return ERR_OK;
}

err_code store_schema_version(int *out, store *s, err_info *err)
{
    *out = 0;
    return store_run(s, do_schema_version, out, err);
}

typedef struct {
    int applied;
    store_migrate_fn fn;
    void *ctx;
} migrate_ctx;


static err_code do_migrate(pconn *c, void *vctx, err_info *err)
{
    migrate_ctx *m = vctx;
    /* Migrations may take long (an index on a big table): no deadline, no statement_timeout. */
    err_code urc = store_unbounded(c, err);
    if (urc != ERR_OK)
        return urc;
    /* A session lock (released below or when the connection closes) serializes concurrent
     * `stacksift migrate` runs; the number is arbitrary but fixed. */
    err_code rc = store_command(c, "SELECT pg_advisory_lock(7215841)", "locking migrations", err);
    if (rc != ERR_OK)
        return rc;
    rc = store_command(c,
                       "CREATE TABLE IF NOT EXISTS schema_migrations ("
                       "version integer PRIMARY KEY, name text NOT NULL, "
                       "applied_at timestamptz NOT NULL DEFAULT now())",
                       "creating schema_migrations", err);
    for (size_t i = 0; rc == ERR_OK && i < STORE_MIGRATIONS_COUNT; i++) {
        const store_migration *mig = &STORE_MIGRATIONS[i];
        char version[16], what[160];
        snprintf(version, sizeof version, "%d", mig->version);
        snprintf(what, sizeof what, "migration %04d_%s", mig->version, mig->name);
        const char *params[2] = {version, mig->name};
        double t0 = mono_ms();
        rc = store_command(c, "BEGIN", what, err);
        if (rc != ERR_OK)
            break;
        PGresult *res = store_pq_params(c, "SELECT 1 FROM schema_migrations WHERE version = $1",
                                        1, params, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            rc = store_translate(res, c, what, err);
            PQclear(res);
            break;
        }
        int done = PQntuples(res) > 0;
        PQclear(res);
        if (done) {
            rc = store_command(c, "COMMIT", what, err);
            continue;
        }
        rc = store_command(c, mig->sql, what, err);
        if (rc != ERR_OK)
            break;
        res = store_pq_params(c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                              2, params, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            rc = store_translate(res, c, what, err);
        PQclear(res);
        if (rc == ERR_OK)
            rc = store_command(c, "COMMIT", what, err);
        if (rc != ERR_OK)
            break;
        m->applied++;
        if (m->fn)
            m->fn(mig->version, mig->name, mono_ms() - t0, m->ctx);
    }
    if (PQstatus(c->pg) == CONNECTION_OK) {
        if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
            PQclear(store_pq(c, "ROLLBACK"));
        /* The unlock result is ignored: closing the connection would release it as well. */
        PQclear(store_pq(c, "SELECT pg_advisory_unlock(7215841)"));
    }
    return rc;
}

err_code store_migrate(int *applied, store *s, store_migrate_fn fn, void *ctx, err_info *err)
{
    migrate_ctx m = {0, fn, ctx};
    /* Not store_run: a retry after a lost connection could only repeat what failed. */
    pconn *c;
    err_code rc = store_acquire(&c, s, err);
    if (rc == ERR_OK) {
        rc = do_migrate(c, &m, err);
        store_release(s, c);
    }
    *applied = m.applied;
    return rc;
}
