/*
 * store_internal - what the store_*.c files share: the pooled connection, running statements
 * on it, translating libpq's failures, copying values out of results, and the generated
 * migrations table. libpq's types and codes never leave server/store: every public function
 * returns an err_code (see store.h). Not for use outside server/store.
 */
#ifndef STACKSIFT_STORE_STORE_INTERNAL_H
#define STACKSIFT_STORE_STORE_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"
#include "store/store_blobs.h"
#include "store/store_dsyms.h"

/* STORE_TS - a timestamptz column as RFC 3339 UTC text with milliseconds, the form every API
 * answer uses: 2026-01-07T10:31:02.114Z. STORE_TS_US keeps microseconds (queue ordering). */
#define STORE_TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define STORE_TS_US(col) \
    "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

typedef struct {
    int version;      /* NNNN of migrations/NNNN_name.sql, increasing (a number
                         reserved for an issue may be missing until it lands) */
    const char *name; /* the name part */
    const char *sql;  /* the whole file */
} store_migration;

extern const store_migration STORE_MIGRATIONS[];   /* generated: embed_migrations.cmake */
extern const size_t STORE_MIGRATIONS_COUNT;

/* A statement prepared once per connection, on first use (a statement naming a table that a
 * migration has not created yet must not break the pool). Define each one as a static const
 * in the file that owns its table; `name` is unique across server/store. */
typedef struct {
    const char *name;
    const char *sql;
} store_stmt;

#define STORE_MAX_PREPARED 64 /* per connection; more statements run unprepared */

/* A pooled connection (store_pool.c). Every statement on it waits for its answer at most the
 * store's statement timeout (libpq in non-blocking mode, poll(2) on its socket; the server's
 * statement_timeout is the same), so a hung database fails the call instead of hanging it.
 * A connection that missed a deadline is `timed_out` and is closed when released. */
typedef struct {
    PGconn *pg;
    const store_stmt *prepared[STORE_MAX_PREPARED]; /* statements prepared on it */
    unsigned nprepared;
    unsigned statement_ms;   /* longest wait for one statement's answer; 0 = none */
    unsigned server_ms;      /* the statement_timeout the server applies on this session */
    bool timed_out;          /* a statement missed its deadline: the answer may still come */
    bool unanswered;         /* ... after waiting long enough (BREAKER_MIN_WAIT_MS) to count
                                as the database not answering (the circuit breaker) */
    bool discard;            /* session settings changed (store_unbounded): close on release */
} pconn;


/* store_unbounded - lift the statement deadline on `c` for long work (migrations, retention):
 * no client deadline, statement_timeout 0; the connection is closed when released. */
err_code store_unbounded(pconn *c, err_info *err);

/* store_unbounded_xact - the same for the rest of the transaction `c` is in (SET LOCAL:
 * Postgres restores the timeout at COMMIT or ROLLBACK, and the next store_acquire restores
 * the client's deadline), so the connection goes back to the pool: a new connection costs
 * Postgres a backend fork, cold caches and every statement prepared again (~1 us a session
 * in batches of 10,000). Call after BEGIN. */
err_code store_unbounded_xact(pconn *c, err_info *err);

/* store_pq_params / store_pq / store_pq_prepare / store_pq_prepared - PQexecParams, PQexec,
 * PQprepare and PQexecPrepared with c's deadline. NULL when the deadline passed (c->timed_out
 * is set) or the connection failed; store_translate(NULL, c, ...) names which. */
PGresult *store_pq_params(pconn *c, const char *sql, int n, const char *const *values,
                          const int *lengths, const int *formats, int result_format);
PGresult *store_pq(pconn *c, const char *sql);
PGresult *store_pq_prepare(pconn *c, const char *name, const char *sql);
PGresult *store_pq_prepared(pconn *c, const char *name, int n, const char *const *values,
                            const int *lengths, const int *formats, int result_format);

typedef err_code (*store_fn)(pconn *c, void *ctx, err_info *err);

/* store_acquire / store_release - take a pooled connection and give it back (an open
 * transaction is rolled back, a broken connection closed). Errors ERR_STORE (no connection
 * within the pool's timeout, or connecting failed). */
err_code store_acquire(pconn **out, store *s, err_info *err);
void store_release(store *s, pconn *c);

/* The ON CONFLICT clause of every issue upsert (worker batches in store_queue.c, reports
 * processed at intake in store_intake.c), for an INSERT INTO issues AS i whose rows carry
 * count, first/last seen, last_report and versions of the reports joining: counts add up,
 * first/last seen widen, versions merge sorted, and a resolved issue seen again in the
 * version it was fixed in or later reopens (a regression). Issues are keyed by (project_id,
 * app, fingerprint): grouping is per project. Each statement lists its rows in that order, so
 * concurrent ones lock issues in the same order. */
#define STORE_ISSUE_UPSERT_CONFLICT \
    "ON CONFLICT (project_id, app, fingerprint) DO UPDATE SET " \
    "count = i.count + EXCLUDED.count, " \
    "first_seen = least(i.first_seen, EXCLUDED.first_seen), " \
    "last_seen = greatest(i.last_seen, EXCLUDED.last_seen), " \
    "last_report = CASE WHEN EXCLUDED.last_seen >= i.last_seen THEN EXCLUDED.last_report " \
    "ELSE i.last_report END, " \
    "versions = ARRAY(SELECT DISTINCT v FROM unnest(i.versions || EXCLUDED.versions) v " \
    "ORDER BY 1), " \
    /* A resolved issue seen again in the version it was fixed in or later reopens. */ \
    "status = CASE WHEN i.status = 'resolved' AND (i.resolved_in IS NULL OR EXISTS (" \
    "SELECT 1 FROM unnest(EXCLUDED.versions) v " \
    "WHERE version_key(v) >= version_key(i.resolved_in))) THEN 'open' ELSE i.status END, " \
    "regressed = i.regressed OR (i.status = 'resolved' AND (i.resolved_in IS NULL OR EXISTS (" \
    "SELECT 1 FROM unnest(EXCLUDED.versions) v " \
    "WHERE version_key(v) >= version_key(i.resolved_in)))), " \
    "regressed_at = CASE WHEN i.status = 'resolved' AND (i.resolved_in IS NULL OR EXISTS (" \
    "SELECT 1 FROM unnest(EXCLUDED.versions) v " \
    "WHERE version_key(v) >= version_key(i.resolved_in))) THEN now() ELSE i.regressed_at END "

/* store_run - fn on a pooled connection, retried once on a fresh one if it broke. */
err_code store_run(store *s, store_fn fn, void *ctx, err_info *err);

/* store_translate - a failed result as err_code + message (see store.h); `what` names the
 * operation for the message. */
err_code store_translate(PGresult *res, pconn *c, const char *what, err_info *err);

/* How store_translate's message for a value the database refused begins (after "what: "). */
#define STORE_REFUSED "the database refused a value (SQLSTATE"

/* store_refused_value - whether `err` (from store_translate) is a value the database refused
 * (SQLSTATE class 22, or 23514): for a caller whose statement reads a client's value as it
 * was sent (a UUID, a time), where that means the client's input was wrong. */
bool store_refused_value(const err_info *err);

/* store_exec - run `st` (prepared on `c` on first use) with `n` parameters (NULL value = SQL
 * NULL; lengths/formats may be NULL = all text). Text results. *out is the result on
 * success; the caller PQclear()s it. A NULL `out`: the result is not needed (cleared here). */
err_code store_exec(PGresult **out, pconn *c, const store_stmt *st, int n,
                    const char *const *values, const int *lengths, const int *formats,
                    err_info *err);

/* store_exec_format - store_exec with results in `result_format` (1 = binary). */
err_code store_exec_format(PGresult **out, pconn *c, const store_stmt *st, int n,
                           const char *const *values, const int *lengths, const int *formats,
                           int result_format, err_info *err);

/* store_exec_sql - run `sql` unprepared (statements built at run time) with `n` text
 * parameters; result_format 1 = binary results. *out as store_exec. */
err_code store_exec_sql(PGresult **out, pconn *c, const char *what, const char *sql, int n,
                        const char *const *values, int result_format, err_info *err);

/* store_exec_sql_params - store_exec_sql with parameter lengths and formats (as store_exec:
 * NULL = all text), for binary parameters. */
err_code store_exec_sql_params(PGresult **out, pconn *c, const char *what, const char *sql,
                               int n, const char *const *values, const int *lengths,
                               const int *formats, int result_format, err_info *err);

/* store_command - run parameterless SQL (BEGIN, COMMIT, ...). */
err_code store_command(pconn *c, const char *sql, const char *what, err_info *err);

/* store_dup - column value copied into `a`, NULL for SQL NULL; *rc = ERR_TOO_LARGE if full. */
const char *store_dup(arena *a, PGresult *res, int row, int col, err_info *err, err_code *rc);

/* store_blob_put - inside the transaction open on `c`, make blob `f` exist: reuse a stored
 * one, locked FOR KEY SHARE so that a concurrent deletion waits for this transaction, or
 * insert it with its chunks read from f->path (store_blobs.c). Errors ERR_STORE, ERR_IO. */
err_code store_blob_put(pconn *c, const store_blob_file *f, err_info *err);

/* store_copy - column value into out[cap] (truncated), "" for SQL NULL. */
void store_copy(char *out, size_t cap, PGresult *res, int row, int col);

/* store_dsym_originals_read - every row of `res` (columns: uuid, symcache sha256, original
 * sha256, original name) into an array in `a`; *out and *n set on success only, `res` stays
 * the caller's (store_dsyms.c). Errors ERR_TOO_LARGE. */
err_code store_dsym_originals_read(store_dsym_original **out, size_t *n, PGresult *res, arena *a,
                                   err_info *err);

#endif
