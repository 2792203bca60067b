/*
 * store - Postgres through libpq: a small pool of connections, statements prepared lazily on
 * each connection (a statement naming a table that a migration has not created yet must not
 * break the pool), text results, binary parameters for bytea.
 *
 * libpq's status codes and SQLSTATEs never leave this file: store_translate() maps them to
 * err_code (see store.h).
 */
#include "store/store.h"

#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/xalloc.h"
#include "store/store_internal.h"

/* ---- statements ------------------------------------------------------------------------ */

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define DSYM_COLUMNS                                                                         \
    "upper(uuid::text), arch, name, has_dwarf, dwarf_bytes, symcache_bytes, functions, "     \
    "sha256, " TS("uploaded_at")

enum {
    ST_HAS_MIGRATIONS,
    ST_SCHEMA_VERSION,
    ST_TOKEN_INSERT,
    ST_TOKEN_GET,
    ST_DSYM_INSERT,
    ST_DSYM_UPGRADE,
    ST_DSYM_GET,
    ST_DSYM_LIST,
    ST_REPORT_INSERT,
    ST_REPORT_GET,
    ST_REPORT_COUNT,
    ST_COUNT
};

static const struct {
    const char *name;
    const char *sql;
} STMTS[ST_COUNT] = {
    [ST_HAS_MIGRATIONS] = {"has_migrations", "SELECT to_regclass('schema_migrations') IS NOT NULL"},
    [ST_SCHEMA_VERSION] = {"schema_version",
                           "SELECT coalesce(max(version), 0) FROM schema_migrations"},
    [ST_TOKEN_INSERT] = {"token_insert",
                         "INSERT INTO tokens (public_id, token_sha256, name, scopes) "
                         "VALUES ($1, $2, $3, string_to_array($4, ','))"},
    [ST_TOKEN_GET] = {"token_get",
                      "SELECT encode(token_sha256, 'hex'), name, array_to_string(scopes, ','), "
                      "revoked_at IS NOT NULL FROM tokens WHERE public_id = $1"},
    [ST_DSYM_INSERT] = {"dsym_insert",
                        "INSERT INTO dsyms (uuid, arch, name, has_dwarf, dwarf_bytes, "
                        "symcache_bytes, functions, sha256) "
                        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
                        "ON CONFLICT (uuid) DO NOTHING RETURNING " DSYM_COLUMNS},
    [ST_DSYM_UPGRADE] = {"dsym_upgrade",
                         "UPDATE dsyms SET arch = $2, name = $3, has_dwarf = $4, "
                         "dwarf_bytes = $5, symcache_bytes = $6, functions = $7, sha256 = $8, "
                         "uploaded_at = now() "
                         "WHERE uuid = $1::uuid AND NOT has_dwarf AND $4::boolean "
                         "RETURNING " DSYM_COLUMNS},
    [ST_DSYM_GET] = {"dsym_get", "SELECT " DSYM_COLUMNS " FROM dsyms WHERE uuid = $1::uuid"},
    [ST_DSYM_LIST] = {"dsym_list",
                      "SELECT " DSYM_COLUMNS " FROM dsyms "
                      "WHERE ($1::uuid IS NULL OR uuid = $1::uuid) "
                      "AND ($2::text IS NULL OR name = $2) "
                      "ORDER BY uploaded_at DESC, uuid LIMIT $3"},
    [ST_REPORT_INSERT] = {"report_insert",
                          "INSERT INTO reports (status, format, content_type, raw, raw_bytes, "
                          "parsed, app, app_version, os_version, missing_uuids, error) "
                          "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, "
                          "coalesce((SELECT array_agg(u::uuid) "
                          "FROM jsonb_array_elements_text($10::jsonb) u), '{}'), $11) "
                          "RETURNING id::text"},
    [ST_REPORT_GET] = {"report_get",
                       "SELECT id::text, status, format, content_type, " TS("received_at") ", "
                       TS("updated_at") ", raw_bytes, parsed::text, app, app_version, "
                       "os_version, (SELECT coalesce(json_agg(upper(u::text)), '[]') "
                       "FROM unnest(missing_uuids) u)::text, error "
                       "FROM reports WHERE id = $1::uuid"},
    [ST_REPORT_COUNT] = {"report_count",
                         "SELECT count(*) FROM reports WHERE ($1::text IS NULL OR status = $1)"},
};

/* ---- pool ------------------------------------------------------------------------------ */

struct store {
    char *url;
    unsigned size, timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pconn **idle;   /* stack of `n_idle` idle connections */
    unsigned n_idle, n_open, n_waiting;
};

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

static err_code store_connect(pconn **out, store *s, err_info *err)
{
    char timeout_s[16];
    unsigned secs = (s->timeout_ms + 999) / 1000;
    snprintf(timeout_s, sizeof timeout_s, "%u", secs < 2 ? 2 : secs);
    /* With expand_dbname, settings inside the URL override the keywords listed before it. */
    const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *const values[] = {timeout_s, "stacksift", s->url, NULL};
    PGconn *pg = PQconnectdbParams(keys, values, 1);
    *out = NULL;
    if (pg == NULL)
        return err_set(err, ERR_STORE, "connecting to the database: out of memory");
    if (PQstatus(pg) != CONNECTION_OK) {
        char line[200];
        store_first_line(line, sizeof line, PQerrorMessage(pg));
        PQfinish(pg);
        return err_set(err, ERR_STORE, "connecting to the database: %s", line);
    }
    /* NOTICEs ("relation already exists, skipping") are not errors and must not reach
     * stderr unstructured. */
    PQsetNoticeProcessor(pg, store_ignore_notice, NULL);
    pconn *c = xcalloc(1, sizeof *c);
    c->pg = pg;
    *out = c;
    return ERR_OK;
}

static void store_disconnect(pconn *c)
{
    if (c) {
        PQfinish(c->pg);
        free(c);
    }
}

err_code store_acquire(pconn **out, store *s, err_info *err)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += s->timeout_ms / 1000;
    deadline.tv_nsec += (long)(s->timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    *out = NULL;
    pthread_mutex_lock(&s->mu);
    while (s->n_idle == 0 && s->n_open >= s->size) {
        s->n_waiting++;
        int rc = pthread_cond_timedwait(&s->cv, &s->mu, &deadline);
        s->n_waiting--;
        if (rc == ETIMEDOUT && s->n_idle == 0 && s->n_open >= s->size) {
            pthread_mutex_unlock(&s->mu);
            return err_set(err, ERR_STORE, "no free database connection within %u ms",
                           s->timeout_ms);
        }
    }
    if (s->n_idle > 0) {
        *out = s->idle[--s->n_idle];
        pthread_mutex_unlock(&s->mu);
        return ERR_OK;
    }
    s->n_open++;   /* reserve the slot, then connect without holding the lock */
    pthread_mutex_unlock(&s->mu);
    err_code rc = store_connect(out, s, err);
    if (rc != ERR_OK) {
        pthread_mutex_lock(&s->mu);
        s->n_open--;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

void store_release(store *s, pconn *c)
{
    /* A connection left inside a transaction by an error is rolled back before reuse. */
    if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        PQclear(PQexec(c->pg, "ROLLBACK"));
    int broken = PQstatus(c->pg) != CONNECTION_OK ||
                 PQtransactionStatus(c->pg) != PQTRANS_IDLE;
    pthread_mutex_lock(&s->mu);
    if (broken) {
        s->n_open--;
    } else {
        s->idle[s->n_idle++] = c;
        c = NULL;
    }
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    store_disconnect(c);
}

err_code store_open(store **out, const char *url, unsigned pool_size, unsigned timeout_ms,
                    err_info *err)
{
    *out = NULL;
    if (pool_size == 0 || pool_size > 1024)
        return err_set(err, ERR_INVALID, "database pool size %u is out of range 1..1024",
                       pool_size);
    store *s = xcalloc(1, sizeof *s);
    s->url = xstrdup(url ? url : "");
    s->size = pool_size;
    s->timeout_ms = timeout_ms ? timeout_ms : 3000;
    s->idle = xcalloc(pool_size, sizeof *s->idle);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pconn *c;
    err_code rc = store_acquire(&c, s, err);
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
    for (unsigned i = 0; i < s->n_idle; i++)
        store_disconnect(s->idle[i]);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->idle);
    free(s->url);
    free(s);
}

void store_pool_stats_get(store_pool_stats *out, store *s)
{
    pthread_mutex_lock(&s->mu);
    out->size = s->size;
    out->open = s->n_open;
    out->idle = s->n_idle;
    out->waiting = s->n_waiting;
    pthread_mutex_unlock(&s->mu);
}

/* ---- running statements ---------------------------------------------------------------- */

/* Map a failed result to an err_code; `what` names the operation for the message. */
err_code store_translate(PGresult *res, pconn *c, const char *what, err_info *err)
{
    char line[200];
    const char *msg = res ? PQresultErrorMessage(res) : NULL;
    store_first_line(line, sizeof line, msg && *msg ? msg : PQerrorMessage(c->pg));
    if (PQstatus(c->pg) != CONNECTION_OK)
        return err_set(err, ERR_STORE, "%s: database connection lost: %s", what, line);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state == NULL)
        return err_set(err, ERR_STORE, "%s: %s", what, line);
    if (strcmp(state, "23514") == 0)      /* check_violation */
        return err_set(err, ERR_INVALID, "%s: %s", what, line);
    if (strncmp(state, "23", 2) == 0)     /* integrity constraint violation */
        return err_set(err, ERR_CONFLICT, "%s: %s", what, line);
    if (strncmp(state, "22", 2) == 0)     /* data exception: a value the database refused */
        return err_set(err, ERR_INVALID, "%s: %s", what, line);
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0 ||
        strncmp(state, "53", 2) == 0 || strcmp(state, "40001") == 0 ||
        strcmp(state, "40P01") == 0)      /* connection, shutdown, resources, retryable */
        return err_set(err, ERR_STORE, "%s: %s", what, line);
    return err_set(err, ERR_INTERNAL, "%s: %s (SQLSTATE %s)", what, line, state);
}

/* Run STMTS[stmt] with `n` parameters (NULL value = SQL NULL; formats may be NULL = all
 * text). *out is the result on success (caller PQclear()s it). */
static err_code store_exec(PGresult **out, pconn *c, int stmt, int n, const char *const *values,
                           const int *lengths, const int *formats, err_info *err)
{
    *out = NULL;
    if (!(c->prepared & (1u << stmt))) {
        PGresult *p = PQprepare(c->pg, STMTS[stmt].name, STMTS[stmt].sql, 0, NULL);
        if (PQresultStatus(p) != PGRES_COMMAND_OK) {
            err_code rc = store_translate(p, c, STMTS[stmt].name, err);
            PQclear(p);
            return rc;
        }
        PQclear(p);
        c->prepared |= 1u << stmt;
    }
    PGresult *res = PQexecPrepared(c->pg, STMTS[stmt].name, n, values, lengths, formats, 0);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        err_code rc = store_translate(res, c, STMTS[stmt].name, err);
        PQclear(res);
        return rc;
    }
    *out = res;
    return ERR_OK;
}

/* Run a plain SQL command (transaction control, migrations) without parameters. */
err_code store_command(pconn *c, const char *sql, const char *what, err_info *err)
{
    PGresult *res = PQexec(c->pg, sql);
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
        int broken = PQstatus(c->pg) != CONNECTION_OK;
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

static void store_copy(char *out, size_t cap, PGresult *res, int row, int col)
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
    err_code rc = store_exec(&res, c, ST_HAS_MIGRATIONS, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    int has = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    *out = 0;
    if (!has)
        return ERR_OK;
    rc = store_exec(&res, c, ST_SCHEMA_VERSION, 0, NULL, NULL, NULL, err);
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

static double store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static err_code do_migrate(pconn *c, void *vctx, err_info *err)
{
    migrate_ctx *m = vctx;
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
        double t0 = store_now_ms();
        rc = store_command(c, "BEGIN", what, err);
        if (rc != ERR_OK)
            break;
        PGresult *res = PQexecParams(c->pg, "SELECT 1 FROM schema_migrations WHERE version = $1",
                                     1, NULL, params, NULL, NULL, 0);
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
        res = PQexecParams(c->pg, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                           2, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            rc = store_translate(res, c, what, err);
        PQclear(res);
        if (rc == ERR_OK)
            rc = store_command(c, "COMMIT", what, err);
        if (rc != ERR_OK)
            break;
        m->applied++;
        if (m->fn)
            m->fn(mig->version, mig->name, store_now_ms() - t0, m->ctx);
    }
    if (PQstatus(c->pg) == CONNECTION_OK) {
        if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
            PQclear(PQexec(c->pg, "ROLLBACK"));
        /* The unlock result is ignored: closing the connection would release it as well. */
        PQclear(PQexec(c->pg, "SELECT pg_advisory_unlock(7215841)"));
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

/* ---- tokens ---------------------------------------------------------------------------- */

typedef struct {
    const char *public_id, *name, *scopes;
    const uint8_t *sha;
    store_token *out;
} token_ctx;

static err_code do_token_insert(pconn *c, void *vctx, err_info *err)
{
    token_ctx *t = vctx;
    const char *values[4] = {t->public_id, (const char *)t->sha, t->name, t->scopes};
    const int lengths[4] = {0, 32, 0, 0};
    const int formats[4] = {0, 1, 0, 0};
    PGresult *res;
    err_code rc = store_exec(&res, c, ST_TOKEN_INSERT, 4, values, lengths, formats, err);
    PQclear(res);
    return rc;
}

err_code store_token_insert(store *s, const char *public_id, const uint8_t token_sha256[32],
                            const char *name, const char *scopes, err_info *err)
{
    token_ctx t = {public_id, name, scopes, token_sha256, NULL};
    return store_run(s, do_token_insert, &t, err);
}

static int hex_nibble(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static err_code do_token_get(pconn *c, void *vctx, err_info *err)
{
    token_ctx *t = vctx;
    const char *values[1] = {t->public_id};
    PGresult *res;
    err_code rc = store_exec(&res, c, ST_TOKEN_GET, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no token with id %s", t->public_id);
    }
    const char *hex = PQgetvalue(res, 0, 0);
    if (strlen(hex) != 64) {
        PQclear(res);
        return err_set(err, ERR_INTERNAL, "token %s has a malformed hash", t->public_id);
    }
    for (int i = 0; i < 32; i++)
        t->out->token_sha256[i] = (uint8_t)(hex_nibble(hex[2 * i]) << 4 | hex_nibble(hex[2 * i + 1]));
    store_copy(t->out->name, sizeof t->out->name, res, 0, 1);
    store_copy(t->out->scopes, sizeof t->out->scopes, res, 0, 2);
    t->out->revoked = PQgetvalue(res, 0, 3)[0] == 't';
    PQclear(res);
    return ERR_OK;
}

err_code store_token_get(store_token *out, store *s, const char *public_id, err_info *err)
{
    token_ctx t = {public_id, NULL, NULL, NULL, out};
    memset(out, 0, sizeof *out);
    return store_run(s, do_token_get, &t, err);
}

/* ---- debug files ----------------------------------------------------------------------- */

static void dsym_from_row(store_dsym *d, PGresult *res, int row)
{
    store_copy(d->uuid, sizeof d->uuid, res, row, 0);
    store_copy(d->arch, sizeof d->arch, res, row, 1);
    store_copy(d->name, sizeof d->name, res, row, 2);
    d->has_dwarf = PQgetvalue(res, row, 3)[0] == 't';
    d->dwarf_bytes = strtoll(PQgetvalue(res, row, 4), NULL, 10);
    d->symcache_bytes = strtoll(PQgetvalue(res, row, 5), NULL, 10);
    d->functions = (int32_t)strtol(PQgetvalue(res, row, 6), NULL, 10);
    store_copy(d->sha256, sizeof d->sha256, res, row, 7);
    store_copy(d->uploaded_at, sizeof d->uploaded_at, res, row, 8);
}

typedef struct {
    store_dsym_outcome *outcome;
    store_dsym *rows;
    size_t n;
    const char *uuid, *name;
    size_t limit;
    arena *a;
    store_dsym **list;
    size_t *list_n;
} dsym_ctx;

static err_code do_dsyms_insert(pconn *c, void *vctx, err_info *err)
{
    dsym_ctx *d = vctx;
    err_code rc = store_command(c, "BEGIN", "inserting debug files", err);
    for (size_t i = 0; rc == ERR_OK && i < d->n; i++) {
        store_dsym *row = &d->rows[i];
        char dwarf[24], symc[24], funcs[16];
        snprintf(dwarf, sizeof dwarf, "%lld", (long long)row->dwarf_bytes);
        snprintf(symc, sizeof symc, "%lld", (long long)row->symcache_bytes);
        snprintf(funcs, sizeof funcs, "%ld", (long)row->functions);
        const char *values[8] = {row->uuid, row->arch, row->name, row->has_dwarf ? "t" : "f",
                                 dwarf, symc, funcs, row->sha256};
        PGresult *res;
        rc = store_exec(&res, c, ST_DSYM_INSERT, 8, values, NULL, NULL, err);
        if (rc != ERR_OK)
            break;
        d->outcome[i] = PQntuples(res) == 1 ? STORE_DSYM_CREATED : STORE_DSYM_EXISTS;
        if (d->outcome[i] == STORE_DSYM_EXISTS && row->has_dwarf) {
            /* Known UUID: DWARF replaces a record built from a symbol table only. */
            PQclear(res);
            rc = store_exec(&res, c, ST_DSYM_UPGRADE, 8, values, NULL, NULL, err);
            if (rc != ERR_OK)
                break;
            if (PQntuples(res) == 1)
                d->outcome[i] = STORE_DSYM_UPGRADED;
        }
        if (d->outcome[i] != STORE_DSYM_EXISTS)
            dsym_from_row(row, res, 0);
        PQclear(res);
        if (d->outcome[i] != STORE_DSYM_EXISTS)
            continue;
        /* Already there: answer with the stored record (idempotent re-upload). */
        const char *uuid[1] = {row->uuid};
        rc = store_exec(&res, c, ST_DSYM_GET, 1, uuid, NULL, NULL, err);
        if (rc != ERR_OK)
            break;
        if (PQntuples(res) == 1)
            dsym_from_row(row, res, 0);
        PQclear(res);
    }
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "inserting debug files", err);
    return rc;   /* store_release rolls back a transaction left open by an error */
}

err_code store_dsyms_insert(store_dsym_outcome *outcome, store_dsym *rows, size_t n, store *s,
                            err_info *err)
{
    dsym_ctx d = {.outcome = outcome, .rows = rows, .n = n};
    return store_run(s, do_dsyms_insert, &d, err);
}

static err_code do_dsym_get(pconn *c, void *vctx, err_info *err)
{
    dsym_ctx *d = vctx;
    const char *values[1] = {d->uuid};
    PGresult *res;
    err_code rc = store_exec(&res, c, ST_DSYM_GET, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0)
        rc = err_set(err, ERR_NOT_FOUND, "no debug file with uuid %s", d->uuid);
    else
        dsym_from_row(d->rows, res, 0);
    PQclear(res);
    return rc;
}

err_code store_dsym_get(store_dsym *out, store *s, const char *uuid, err_info *err)
{
    dsym_ctx d = {.rows = out, .uuid = uuid};
    memset(out, 0, sizeof *out);
    err_code rc = store_run(s, do_dsym_get, &d, err);
    if (rc == ERR_INVALID)   /* not a UUID: nothing can have it */
        rc = err_set(err, ERR_NOT_FOUND, "no debug file with uuid %s", uuid);
    return rc;
}

static err_code do_dsyms_list(pconn *c, void *vctx, err_info *err)
{
    dsym_ctx *d = vctx;
    char limit[24];
    snprintf(limit, sizeof limit, "%zu", d->limit);
    const char *values[3] = {d->uuid, d->name, limit};
    PGresult *res;
    err_code rc = store_exec(&res, c, ST_DSYM_LIST, 3, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res);
    store_dsym *list = arena_alloc_array(d->a, n ? n : 1, sizeof *list, err);
    if (!list) {
        PQclear(res);
        return ERR_TOO_LARGE;
    }
    for (size_t i = 0; i < n; i++)
        dsym_from_row(&list[i], res, (int)i);
    PQclear(res);
    *d->list = list;
    *d->list_n = n;
    return ERR_OK;
}

err_code store_dsyms_list(store_dsym **out, size_t *n, store *s, const char *uuid,
                          const char *name, size_t limit, arena *a, err_info *err)
{
    dsym_ctx d = {.uuid = uuid, .name = name, .limit = limit, .a = a, .list = out, .list_n = n};
    *out = NULL;
    *n = 0;
    err_code rc = store_run(s, do_dsyms_list, &d, err);
    if (rc == ERR_INVALID)
        rc = err_set(err, ERR_INVALID, "uuid filter '%s' is not a UUID", uuid ? uuid : "");
    return rc;
}

/* ---- reports --------------------------------------------------------------------------- */

typedef struct {
    const store_report_new *in;
    char *id_out;
    const char *id;
    const char *status;
    store_report *out;
    int64_t *count;
    arena *a;
} report_ctx;

static err_code do_report_insert(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const store_report_new *in = r->in;
    char raw_bytes[24];
    snprintf(raw_bytes, sizeof raw_bytes, "%zu", in->raw_len);
    const char *values[11] = {in->status,     in->format,      in->content_type,
                              (const char *)in->raw, raw_bytes, in->parsed_json,
                              in->app,        in->app_version, in->os_version,
                              in->missing_uuids_json, in->error};
    int lengths[11] = {0};
    int formats[11] = {0};
    lengths[3] = (int)in->raw_len;
    formats[3] = 1;   /* bytea travels as binary: no escaping, no doubling */
    if (in->raw_len == 0)
        values[3] = "";   /* a NULL pointer would mean SQL NULL */
    PGresult *res;
    err_code rc = store_exec(&res, c, ST_REPORT_INSERT, 11, values, lengths, formats, err);
    if (rc != ERR_OK)
        return rc;
    store_copy(r->id_out, 37, res, 0, 0);
    PQclear(res);
    return ERR_OK;
}

err_code store_report_insert(char id_out[37], store *s, const store_report_new *r, err_info *err)
{
    if (r->raw_len > 0x7fffffff)
        return err_set(err, ERR_TOO_LARGE, "report of %zu bytes is too large to store", r->raw_len);
    report_ctx ctx = {.in = r, .id_out = id_out};
    id_out[0] = '\0';
    return store_run(s, do_report_insert, &ctx, err);
}

static int is_uuid_text(const char *s)
{
    size_t n = strlen(s), hex = 0;
    if (n != 36 && n != 32)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '-' && n == 36 && (i == 8 || i == 13 || i == 18 || i == 23))
            continue;
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
              (s[i] >= 'A' && s[i] <= 'F')))
            return 0;
        hex++;
    }
    return hex == 32;
}

static err_code do_report_get(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const char *values[1] = {r->id};
    PGresult *res;
    err_code rc = store_exec(&res, c, ST_REPORT_GET, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no report with id %s", r->id);
    }
    store_report *o = r->out;
    store_copy(o->id, sizeof o->id, res, 0, 0);
    o->status = store_dup(r->a, res, 0, 1, err, &rc);
    o->format = store_dup(r->a, res, 0, 2, err, &rc);
    o->content_type = store_dup(r->a, res, 0, 3, err, &rc);
    o->received_at = store_dup(r->a, res, 0, 4, err, &rc);
    o->updated_at = store_dup(r->a, res, 0, 5, err, &rc);
    o->raw_bytes = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
    o->parsed_json = store_dup(r->a, res, 0, 7, err, &rc);
    o->app = store_dup(r->a, res, 0, 8, err, &rc);
    o->app_version = store_dup(r->a, res, 0, 9, err, &rc);
    o->os_version = store_dup(r->a, res, 0, 10, err, &rc);
    o->missing_uuids_json = store_dup(r->a, res, 0, 11, err, &rc);
    o->error = store_dup(r->a, res, 0, 12, err, &rc);
    PQclear(res);
    return rc;
}

err_code store_report_get(store_report *out, store *s, const char *id, arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    if (!is_uuid_text(id))
        return err_set(err, ERR_NOT_FOUND, "no report with id %.64s", id);
    report_ctx ctx = {.id = id, .out = out, .a = a};
    return store_run(s, do_report_get, &ctx, err);
}

static err_code do_reports_count(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const char *values[1] = {r->status};
    PGresult *res;
    err_code rc = store_exec(&res, c, ST_REPORT_COUNT, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *r->count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return ERR_OK;
}

err_code store_reports_count(int64_t *out, store *s, const char *status, err_info *err)
{
    report_ctx ctx = {.status = status, .count = out};
    *out = 0;
    return store_run(s, do_reports_count, &ctx, err);
}
