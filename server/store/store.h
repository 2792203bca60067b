/*
 * store - everything the service keeps in Postgres, behind libpq, which no other module
 * includes. This header: the connection pool and the schema (store_pool.c). One header and
 * file per table or concern beside it: store_tokens, store_dsyms, store_reports, store_queue
 * (claiming and committing work), store_issues. All SQL text of the server lives in
 * server/store; every value travels as a parameter, never in SQL text.
 *
 * Errors returned by every function here:
 *   ERR_STORE     the database is unreachable, the connection broke, or the pool had no free
 *                 connection within the timeout (the server answers 503 + Retry-After)
 *   ERR_CONFLICT  a uniqueness rule was violated
 *   ERR_INVALID   a client's value that a lookup reads as it was sent was refused (a
 *                 malformed UUID or time: the functions that take one say so)
 *   ERR_NOT_FOUND the row asked for does not exist
 *   ERR_INTERNAL  any other SQL error, and a value the database refused in anything the
 *                 server wrote (a bug: the message carries the SQLSTATE and the database's
 *                 words, for the log; the HTTP layer never shows them to a client)
 * A message that quotes the database (its words, SQLSTATE) puts that after STORE_DB_WORDS: an
 * HTTP answer leaves it out (server/http, http_public_message), the request's log line keeps it.
 * A statement that fails because its connection broke is retried once on a new connection.
 * Thread-safe: one store is shared by every request thread.
 */
#ifndef STACKSIFT_STORE_STORE_H
#define STACKSIFT_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"

typedef struct store store;

/* Where a message's quote of the database begins (see above). */
#define STORE_DB_WORDS " -- the database said: "

/* projects.id of the default project (migration 0008): where reports go when their route
 * names no project, and where every row made before projects existed moved. */
#define STORE_PROJECT_DEFAULT 1

typedef struct {
    unsigned size;    /* most connections the pool opens */
    unsigned open;    /* connections open now (idle + in use) */
    unsigned idle;    /* open and waiting in the pool */
    unsigned waiting; /* callers waiting for a connection */
    bool breaker_open;         /* the circuit breaker refuses calls now (store_on_breaker) */
    uint64_t breaker_opened;   /* times it opened since store_open */
    uint64_t breaker_rejected; /* calls it refused at once, without a connection attempt */
} store_pool_stats;

/* store_open - a pool of at most `pool_size` connections to `url` (libpq URI or conninfo).
 * One connection is made now so that a bad URL or a database that is down is reported at
 * once; the others are made on demand. `timeout_ms` bounds waiting for a pooled connection
 * and connecting together, and separately each statement (client-side deadline and the
 * server's statement_timeout): a hung database gives ERR_STORE after that long, never a hang.
 * Connections use TCP keepalives and tcp_user_timeout (10 s) against dead peers.
 * Owned by the caller: store_close(). Errors ERR_STORE, ERR_INVALID. */
err_code store_open(store **out, const char *url, unsigned pool_size, unsigned timeout_ms,
                    err_info *err);

/* store_open_lazy - the same pool without the first connection: every connection is made on
 * demand, so a database that is down now is not an error (the calls made meanwhile fail with
 * ERR_STORE and open the breaker). For a node that starts while Postgres is away. The URL's
 * syntax is still checked (PQconninfoParse). Errors ERR_INVALID. */
err_code store_open_lazy(store **out, const char *url, unsigned pool_size, unsigned timeout_ms,
                         err_info *err);

/* store_timeout_ms - the store's timeout (store_open), ms. */
unsigned store_timeout_ms(const store *s);

/* store_set_statement_timeout - change the per-statement bound of connections made from now
 * on and of every statement run from now on (ms; 0 = none). For background work whose
 * statements may legitimately take longer than a request's. */
void store_set_statement_timeout(store *s, unsigned ms);

/* store_deadline_begin / store_deadline_end - bound every store call made by this thread from
 * now on, together, to `ms` (waiting for a connection, connecting, statements): for a request
 * handler, so that however many calls it makes it answers within about that long when the
 * database hangs. Thread-local; _end lifts it. */
void store_deadline_begin(unsigned ms);
void store_deadline_end(void);

/* store_deadline_set - the same with an absolute deadline: `deadline_ms` on store_now_ms()'s
 * clock (CLOCK_MONOTONIC in ms), 0 = none. For a request whose deadline was fixed when it
 * started: every store call under it, on whatever thread, uses what is left of it, never a
 * fresh budget. store_deadline_get - this thread's deadline now (0 = none). */
void   store_deadline_set(double deadline_ms);
double store_deadline_get(void);
double store_now_ms(void);

/*
 * The circuit breaker in front of the pool. Three timeouts in a row (a statement or a
 * connection attempt that got no answer by its deadline after at least 250 ms, a connection
 * refused or lost) open it: from then on every call fails at once with ERR_STORE ("the
 * database is not answering ...") without a connection attempt, and a probe thread tries a
 * new connection and `SELECT 1` every 100 ms (each bounded by 1 s). The first probe answered
 * closes it, and the idle connections whose peer went meanwhile (EOF or a reset waiting on
 * the socket: the database restarted) are closed. Every store has its own.
 *
 * store_breaker_fn - told of each change, on the thread that made it: opened (`failures` in
 * a row, `why` the last one) or closed (`open_ms` it was open; why NULL). Must not call the
 * store. store_on_breaker - set it (before the store is shared between threads).
 * store_breaker_open - whether it is open now, and for how long (ms; NULL: not wanted).
 */
typedef void (*store_breaker_fn)(void *ctx, bool opened, unsigned failures, double open_ms,
                                 const char *why);
void store_on_breaker(store *s, store_breaker_fn fn, void *ctx);
bool store_breaker_open(store *s, double *open_ms);

/* store_close - close every connection; callers must have returned theirs. NULL is a no-op. */
void store_close(store *s);

void store_pool_stats_get(store_pool_stats *out, store *s);

/* ---- schema ---------------------------------------------------------------------------- */

/* store_schema_required - the highest migration version compiled into this binary. */
int store_schema_required(void);

/* store_schema_version - the highest applied migration version; 0 for an empty database. */
err_code store_schema_version(int *out, store *s, err_info *err);

/* store_migrate_fn - called once per migration applied now. */
typedef void (*store_migrate_fn)(int version, const char *name, double ms, void *ctx);

/* store_migrate - apply, in order, each migration compiled in from migrations/NNNN_name.sql
 * that schema_migrations does not list yet; each in its own transaction together with its
 * schema_migrations row, under an advisory lock so that two migrate runs do not race.
 * *applied = how many were applied now. Errors ERR_STORE, ERR_INTERNAL (a migration failed:
 * it is rolled back and the message names it). */
err_code store_migrate(int *applied, store *s, store_migrate_fn fn, void *ctx, err_info *err);

#endif
