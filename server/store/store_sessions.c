/*
 * store_sessions - release health counters (see store_sessions.h). A batch is four
 * statements in one transaction, whatever its size: the project's advisory lock, the stored
 * states of the batch's sessions, the release_envs rows it needs, then one statement with
 * data-modifying CTEs that writes states, hourly counters and users. The many rows (new
 * states, devices) travel as one array parameter per column in Postgres's binary array
 * format (unnest of text arrays spent ~10 us a session parsing them), the few (hours,
 * changed states) as JSON.
 *
 * Devices already known to be stored are not sent again (store_devcache.h): a device's
 * upsert can only insert its row or set crashed, and a release_users row is never deleted
 * except by the downsampling, which also raises the release's level so that the device
 * could not be inserted again anyway. So when this node has seen the row committed (and
 * crashed, if this batch would mark it crashed), the upsert would change nothing on any
 * node's behalf: skipping it keeps the counts exact.
 */
#include "store/store_sessions.h"

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "base/xalloc.h"
#include "store/store_devcache.h"
#include "store/store_internal.h"

/* Advisory lock class of session batches (the second key is the project id). */
#define SESSIONS_LOCK_CLASS 7215843
/* Batches of more sessions run without the per-statement timeout. */
#define SESSIONS_UNBOUNDED_FROM 5000

static _Atomic uint64_t users_exact = 1000000;
/* devices known stored, or NULL (store_sessions_configure) */
static store_devcache *_Atomic devcache;

void store_sessions_configure(uint64_t n, size_t cache_devices)
{
    atomic_store(&users_exact, n > 0 ? n : 1);
    store_devcache *old = atomic_exchange(&devcache, cache_devices
                                          ? store_devcache_new(cache_devices) : NULL);
    store_devcache_free(old);   /* called before serving: nobody holds it */
}

static void hex16(char out[33], const uint8_t b[16])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[32] = '\0';
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A uuid as Postgres prints it -> 16 bytes; false if malformed. */
static bool uuid_bytes(uint8_t out[16], const char *s)
{
    int n = 0;
    for (; *s && n < 32; s++) {
        if (*s == '-')
            continue;
        int v = hexval(*s);
        if (v < 0)
            return false;
        if (n % 2 == 0)
            out[n / 2] = (uint8_t)(v << 4);
        else
            out[n / 2] |= (uint8_t)v;
        n++;
    }
    return n == 32;
}

/* The lock, and what names this database in this Postgres run for the device cache: its oid
 * and the postmaster's start (a restore from a backup means a restart). */
static const store_stmt SQL_LOCK = {"sessions_lock",
    "SELECT pg_advisory_xact_lock(" "7215843" ", $1::int), "
    "(SELECT oid FROM pg_database WHERE datname = current_database())::text || ' ' || "
    "extract(epoch FROM pg_postmaster_start_time())::text"};

/* BEGIN and the project's lock; *gen = the device cache's generation (0 without a cache).
 * A batch of `n` sessions: a large one takes longer than one statement may (100,000
 * sessions: seconds), so its transaction runs without the per-statement timeout; the
 * caller's deadline (store_deadline_begin) still bounds the whole call. */
static err_code begin_locked(uint64_t *gen, pconn *c, int64_t project_id, size_t n,
                             err_info *err)
{
    _Static_assert(SESSIONS_LOCK_CLASS == 7215843, "SQL_LOCK names the same class");
    err_code rc = store_command(c, "BEGIN", "counting sessions", err);
    if (rc == ERR_OK && n > SESSIONS_UNBOUNDED_FROM)
        rc = store_unbounded_xact(c, err);
    if (rc != ERR_OK)
        return rc;
    char pid[24];
    /* The two-key advisory lock takes int4 keys: projects beyond 2^31 share a lock. */
    snprintf(pid, sizeof pid, "%d", (int)(project_id & 0x7fffffff));
    const char *v[1] = {pid};
    PGresult *res;
    *gen = 0;
    rc = store_exec(&res, c, &SQL_LOCK, 1, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    store_devcache *dc = atomic_load(&devcache);
    if (dc && PQntuples(res) == 1 && !PQgetisnull(res, 0, 1))
        *gen = store_devcache_check_db(dc, PQgetvalue(res, 0, 1));
    PQclear(res);
    return ERR_OK;
}

/* ---- release_envs ---------------------------------------------------------------------- */

/* One (release, environment) a batch touches, with the starts it brings. */
typedef struct {
    const char *release, *environment;
    int64_t first_ms, last_ms;
    int64_t id;               /* release_envs.id once upserted */
    int level;                /* its user_level then (fixed while the project is locked) */
} renv_key;

typedef struct {
    renv_key *v;
    size_t n, cap;
} renv_set;

static int renv_cmp(const void *pa, const void *pb)
{
    const renv_key *a = pa, *b = pb;
    int c = strcmp(a->release, b->release);
    return c ? c : strcmp(a->environment, b->environment);
}

static int renv_ptr_cmp(const void *pa, const void *pb)
{
    return renv_cmp(*(const renv_key *const *)pa, *(const renv_key *const *)pb);
}

/* The key of (release, env) in `s` (added if new), its starts widened by started_ms; returns
 * its index, which stays valid (keys are never reordered). */
static size_t renv_add(renv_set *s, const char *release, const char *env, int64_t started_ms)
{
    for (size_t i = s->n; i-- > 0;)   /* a batch names few releases: the last one first */
        if ((s->v[i].release == release || strcmp(s->v[i].release, release) == 0) &&
            (s->v[i].environment == env || strcmp(s->v[i].environment, env) == 0)) {
            if (started_ms < s->v[i].first_ms)
                s->v[i].first_ms = started_ms;
            if (started_ms > s->v[i].last_ms)
                s->v[i].last_ms = started_ms;
            return i;
        }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n] = (renv_key){release, env, started_ms, started_ms, 0, 0};
    return s->n++;
}

static const store_stmt SQL_RENV_UPSERT = {"sessions_renv_upsert",
    "INSERT INTO release_envs AS e (project_id, release, environment, first_seen, last_seen) "
    "SELECT $1::bigint, t.r, t.e, to_timestamp(t.f / 1000.0), to_timestamp(t.l / 1000.0) "
    "FROM json_to_recordset($2::json) AS t(r text, e text, f bigint, l bigint) ORDER BY t.r, t.e "
    "ON CONFLICT (project_id, release, environment) DO UPDATE SET "
    "first_seen = least(e.first_seen, EXCLUDED.first_seen), "
    "last_seen = greatest(e.last_seen, EXCLUDED.last_seen) "
    "RETURNING id, release, environment, user_level"};

/* Upsert every key of `s` and fill in their ids (the statement takes them in key order). */
static err_code renv_upsert(renv_set *s, pconn *c, int64_t project_id, err_info *err)
{
    if (s->n == 0)
        return ERR_OK;
    buf json;
    jsonw w;
    buf_init(&json);
    jsonw_init(&w, &json);
    jsonw_array_begin(&w);
    for (size_t i = 0; i < s->n; i++) {
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "r", s->v[i].release);
        jsonw_kstr(&w, "e", s->v[i].environment);
        jsonw_kint(&w, "f", s->v[i].first_ms);
        jsonw_kint(&w, "l", s->v[i].last_ms);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    buf_putc(&json, '\0');
    char pid[24];
    snprintf(pid, sizeof pid, "%lld", (long long)project_id);
    const char *v[2] = {pid, (const char *)json.data};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_RENV_UPSERT, 2, v, NULL, NULL, err);
    buf_reset(&json);
    if (rc != ERR_OK)
        return rc;
    renv_key **sorted = xmalloc(s->n * sizeof *sorted);   /* to find the returned rows */
    for (size_t i = 0; i < s->n; i++)
        sorted[i] = &s->v[i];
    qsort(sorted, s->n, sizeof *sorted, renv_ptr_cmp);
    for (int i = 0; i < PQntuples(res); i++) {
        renv_key k = {PQgetvalue(res, i, 1), PQgetvalue(res, i, 2), 0, 0, 0, 0}, *pk = &k;
        renv_key **f = bsearch(&pk, sorted, s->n, sizeof *sorted, renv_ptr_cmp);
        if (f) {
            (*f)->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
            (*f)->level = atoi(PQgetvalue(res, i, 3));
        }
    }
    free(sorted);
    PQclear(res);
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].id == 0)
            return err_set(err, ERR_INTERNAL, "counting sessions: release_envs row for \"%.64s\" "
                           "not returned", s->v[i].release);
    return ERR_OK;
}

/* ---- counters and users ---------------------------------------------------------------- */

/* One session's contribution to an hour's counters, or a change of it. */
typedef struct {
    int64_t renv, hour_s;
    int64_t sessions, crashed, abnormal, errored;
} hour_delta;

typedef struct {
    int64_t renv;
    uint8_t uid[16];
    uint8_t lvl;
    bool crashed;
} user_add;

/* Slots of an open-addressing table over `n` entries (a power of two, at least 2n): merging
 * by hash keeps a batch's 10,000 entries out of qsort, whose comparator calls were ~10% of the
 * server's CPU a session. Each slot holds an entry's index + 1 (0 = free). */
static size_t slots_for(size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    return cap;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* Counters of a session in a given state: counted once, in exactly one outcome class. */
typedef struct {
    bool counted, errored;
    char final;
} sess_state;

static void contribution(hour_delta *h, const sess_state *s, int sign)
{
    if (!s->counted)
        return;
    h->sessions += sign;
    if (s->final == STORE_SESSION_CRASHED)
        h->crashed += sign;
    else if (s->final == STORE_SESSION_ABNORMAL)
        h->abnormal += sign;
    else if (s->errored)
        h->errored += sign;
}

static int64_t hour_of(int64_t ms)
{
    int64_t s = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    return s - ((s % 3600) + 3600) % 3600;
}

/* Add up entries of `v` with the same (renv, hour), in place, in order of first appearance;
 * returns the new count. */
static size_t hours_merge(hour_delta *v, size_t n)
{
    size_t cap = slots_for(n), out = 0;
    uint32_t *slot = xcalloc(cap, sizeof *slot);
    for (size_t i = 0; i < n; i++) {
        size_t h = mix64((uint64_t)v[i].renv * 0x9e3779b97f4a7c15ULL ^ (uint64_t)v[i].hour_s);
        for (;; h++) {
            uint32_t *sl = &slot[h & (cap - 1)];
            if (*sl == 0) {
                v[out] = v[i];
                *sl = (uint32_t)++out;
                break;
            }
            hour_delta *o = &v[*sl - 1];
            if (o->renv == v[i].renv && o->hour_s == v[i].hour_s) {
                o->sessions += v[i].sessions;
                o->crashed += v[i].crashed;
                o->abnormal += v[i].abnormal;
                o->errored += v[i].errored;
                break;
            }
        }
    }
    free(slot);
    return out;
}

/* One entry per (renv, uid) of `v`, crashed if any was, in place; returns the new count. */
static size_t users_merge(user_add *v, size_t n)
{
    size_t cap = slots_for(n), out = 0;
    uint32_t *slot = xcalloc(cap, sizeof *slot);
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, v[i].uid, sizeof u);   /* SHA-256 bytes: already uniform */
        size_t h = mix64(u ^ (uint64_t)v[i].renv * 0x9e3779b97f4a7c15ULL);
        for (;; h++) {
            uint32_t *sl = &slot[h & (cap - 1)];
            if (*sl == 0) {
                v[out] = v[i];
                *sl = (uint32_t)++out;
                break;
            }
            user_add *o = &v[*sl - 1];
            if (o->renv == v[i].renv && memcmp(o->uid, v[i].uid, 16) == 0) {
                o->crashed |= v[i].crashed;
                break;
            }
        }
    }
    free(slot);
    return out;
}

static void hours_json(jsonw *w, const hour_delta *h, size_t n)
{
    jsonw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        if (h[i].sessions == 0 && h[i].crashed == 0 && h[i].abnormal == 0 && h[i].errored == 0)
            continue;
        jsonw_object_begin(w);
        jsonw_kint(w, "r", h[i].renv);
        jsonw_kint(w, "h", h[i].hour_s);
        jsonw_kint(w, "s", h[i].sessions);
        jsonw_kint(w, "c", h[i].crashed);
        jsonw_kint(w, "a", h[i].abnormal);
        jsonw_kint(w, "e", h[i].errored);
        jsonw_object_end(w);
    }
    jsonw_array_end(w);
}

/* Postgres arrays in the binary send/recv format (array_recv): a 20-byte header (dimensions,
 * has-nulls, element type; length and lower bound of the one dimension), then each element
 * as a big-endian int32 length (-1 = NULL) and its bytes in the type's binary format. */
#define OID_BOOL 16
#define OID_CHAR 18
#define OID_INT8 20
#define OID_INT2 21
#define OID_TIMESTAMPTZ 1184
#define OID_UUID 2950
#define ARRAY_HEADER 20

typedef struct {
    buf b;
    uint32_t n;         /* elements */
    bool nulls;
    uint32_t oid;       /* element type */
} pg_array;

static void put_be32(buf *b, uint32_t v)
{
    uint8_t t[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    buf_append(b, t, 4);
}

static void arr_init(pg_array *a, uint32_t oid)
{
    static const uint8_t header[ARRAY_HEADER];   /* written by arr_finish */
    buf_init(&a->b);
    buf_append(&a->b, header, sizeof header);
    a->n = 0;
    a->nulls = false;
    a->oid = oid;
}

static void arr_add(pg_array *a, const void *p, uint32_t len)
{
    put_be32(&a->b, len);
    buf_append(&a->b, p, len);
    a->n++;
}

static void arr_add_null(pg_array *a)
{
    put_be32(&a->b, 0xffffffffu);
    a->nulls = true;
    a->n++;
}

static void arr_add_int8(pg_array *a, int64_t v)
{
    uint64_t u = (uint64_t)v;
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(u >> (56 - 8 * i));
    arr_add(a, t, 8);
}

/* timestamptz's binary form: microseconds since 2000-01-01 00:00 UTC. */
static void arr_add_timestamptz(pg_array *a, int64_t unix_ms)
{
    arr_add_int8(a, (unix_ms - 946684800000LL) * 1000);
}

static void arr_add_int2(pg_array *a, int v)
{
    uint8_t t[2] = {(uint8_t)((unsigned)v >> 8), (uint8_t)v};
    arr_add(a, t, 2);
}

static void arr_add_bool(pg_array *a, bool v)
{
    uint8_t t = v ? 1 : 0;
    arr_add(a, &t, 1);
}

/* The parameter: *data and *len for PQexecPrepared with format 1. */
static void arr_finish(const char **data, int *len, pg_array *a)
{
    buf h;
    buf_init(&h);
    if (a->n == 0) {                    /* no dimensions: the 12 bytes before them */
        put_be32(&h, 0);
        put_be32(&h, 0);
        put_be32(&h, a->oid);
        memcpy(a->b.data + ARRAY_HEADER - 12, h.data, 12);
        *data = (const char *)a->b.data + ARRAY_HEADER - 12;
        *len = 12;
    } else {
        put_be32(&h, 1);
        put_be32(&h, a->nulls ? 1 : 0);
        put_be32(&h, a->oid);
        put_be32(&h, a->n);
        put_be32(&h, 1);
        memcpy(a->b.data, h.data, ARRAY_HEADER);
        *data = (const char *)a->b.data;
        *len = (int)a->b.len;
    }
    buf_reset(&h);
}

static void arrays_reset(pg_array *col, int n)
{
    for (int c = 0; c < n; c++)
        buf_reset(&col[c].b);
}

/* Hours and users in one statement: the counters add up (a change may be negative: errored
 * becomes crashed), new devices are inserted when in the release's current sample, a device
 * that crashes is marked, and release_envs keeps the row counts. Returns the release_envs
 * rows now over the exact limit ($2). Devices travel in two sets: $3-$5 (renv, uid, lvl)
 * not crashed, inserted unless stored (one index probe each, LATERAL as in SQL_STATES; a
 * plain insert: every writer of a release's devices holds its project's lock, so nothing
 * inserts the same row meanwhile, and ON CONFLICT's speculative insertion, a lock-manager
 * lock and an extra WAL record per row, cost ~3x the insert), and $6-$8 crashed, inserted
 * or marked. A device is in one set only (the caller merges them), so the two inserts never
 * meet the same key. */
#define SQL_COUNTERS_CTES                                                                    \
    "hours AS (INSERT INTO session_hours AS h (renv, hour, sessions, crashed, abnormal, "    \
    "errored) SELECT t.r, to_timestamp(t.h), t.s, t.c, t.a, t.e "                            \
    "FROM json_to_recordset($1::json) AS t(r bigint, h bigint, s bigint, c bigint, "         \
    "a bigint, e bigint) ORDER BY t.r, t.h "                                                 \
    "ON CONFLICT (renv, hour) DO UPDATE SET sessions = h.sessions + EXCLUDED.sessions, "     \
    "crashed = h.crashed + EXCLUDED.crashed, abnormal = h.abnormal + EXCLUDED.abnormal, "    \
    "errored = h.errored + EXCLUDED.errored RETURNING 1), "                                  \
    "ins AS (INSERT INTO release_users AS u (renv, uid, lvl) "                               \
    "SELECT t.r, t.u, t.l FROM (SELECT unnest($3::bigint[]) AS r, unnest($4::uuid[]) AS u, " \
    "unnest($5::int2[]) AS l) t "                                                            \
    "JOIN release_envs re ON re.id = t.r LEFT JOIN LATERAL (SELECT true AS found "          \
    "FROM release_users k WHERE k.renv = t.r AND k.uid = t.u LIMIT 1) x ON true "            \
    "WHERE t.l >= re.user_level AND x.found IS NULL ORDER BY t.r, t.u "                      \
    "RETURNING u.renv, 1 AS nu, 0 AS nc), "                                                  \
    "crash AS (INSERT INTO release_users AS u (renv, uid, lvl, crashed) "                    \
    "SELECT t.r, t.u, t.l, true FROM (SELECT unnest($6::bigint[]) AS r, "                    \
    "unnest($7::uuid[]) AS u, unnest($8::int2[]) AS l) t "                                   \
    "JOIN release_envs re ON re.id = t.r WHERE t.l >= re.user_level "                        \
    "ORDER BY t.r, t.u ON CONFLICT (renv, uid) DO UPDATE SET crashed = true "                \
    "WHERE NOT u.crashed RETURNING u.renv, (u.xmax = 0)::int AS nu, 1 AS nc), "              \
    "envs AS (UPDATE release_envs e SET user_rows = e.user_rows + d.nu, "                    \
    "crashed_rows = e.crashed_rows + d.nc FROM (SELECT renv, sum(nu) AS nu, "                \
    "sum(nc) AS nc FROM (SELECT * FROM ins UNION ALL SELECT * FROM crash) x GROUP BY renv) d "\
    "WHERE e.id = d.renv RETURNING e.id, e.user_rows) "

static const store_stmt SQL_APPLY = {"sessions_apply",
    "WITH new_states AS (INSERT INTO session_states (project_id, sid, renv, uid, lvl, started, "
    "counted, errored, final) SELECT $9::bigint, unnest($10::uuid[]), unnest($11::bigint[]), "
    "unnest($12::uuid[]), unnest($13::int2[]), unnest($14::timestamptz[]), unnest($15::bool[]), "
    "unnest($16::bool[]), unnest($17::\"char\"[]) RETURNING 1), "
    "old_states AS (UPDATE session_states st SET counted = t.n, errored = t.e, "
    "final = t.f::\"char\" FROM json_to_recordset($18::json) AS t(s text, n boolean, "
    "e boolean, f text) WHERE st.project_id = $9::bigint AND st.sid = t.s::uuid RETURNING 1), "
    SQL_COUNTERS_CTES
    "SELECT id FROM envs WHERE user_rows > $2::bigint "
    "UNION ALL SELECT -count(*) FROM new_states UNION ALL SELECT -count(*) FROM old_states "
    "UNION ALL SELECT -count(*) FROM hours"};

static const store_stmt SQL_ADD = {"sessions_add",
    "WITH " SQL_COUNTERS_CTES
    "SELECT id FROM envs WHERE user_rows > $2::bigint UNION ALL SELECT -count(*) FROM hours"};

/* The device arrays of SQL_COUNTERS_CTES ($3-$8) from merged users: devices the cache knows
 * to be stored (as crashed, when this batch crashes them) are left out; *keep gets the ones
 * that will be stored once the transaction commits (their release's level is known and
 * they are in its sample), to be added to the cache then. */
static size_t users_arrays(pg_array col[6], user_add *keep, size_t *nkeep, const user_add *u,
                           size_t n, const renv_set *renvs, uint64_t gen)
{
    store_devcache *dc = gen ? atomic_load(&devcache) : NULL;
    size_t skipped = 0;
    static const uint32_t oids[6] = {OID_INT8, OID_UUID, OID_INT2, OID_INT8, OID_UUID, OID_INT2};
    for (int c = 0; c < 6; c++)
        arr_init(&col[c], oids[c]);
    *nkeep = 0;
    for (size_t i = 0; i < n; i++) {
        int level = -1;   /* unknown: the statement checks it */
        for (size_t k = 0; k < renvs->n; k++)
            if (renvs->v[k].id == u[i].renv)
                level = renvs->v[k].level;
        if (level >= 0 && u[i].lvl < level)
            continue;     /* outside the release's sample: never stored */
        if (dc) {
            store_devcache_state st = store_devcache_lookup(dc, gen, u[i].renv, u[i].uid);
            if (st == STORE_DEVCACHE_CRASHED || (st == STORE_DEVCACHE_STORED && !u[i].crashed)) {
                skipped++;
                continue;
            }
        }
        pg_array *set = u[i].crashed ? &col[3] : &col[0];
        arr_add_int8(&set[0], u[i].renv);
        arr_add(&set[1], u[i].uid, 16);
        arr_add_int2(&set[2], u[i].lvl);
        if (level >= 0)
            keep[(*nkeep)++] = u[i];
    }
    return skipped;
}

/* Over the exact limit: keep one device in two more (the next leading hash bit must be
 * zero) until the rows fit again; row counts recomputed from what is left. */
static const store_stmt SQL_DOWNSAMPLE = {"sessions_downsample",
    "WITH del AS (DELETE FROM release_users WHERE renv = $1::bigint "
    "AND lvl < (SELECT user_level + 1 FROM release_envs WHERE id = $1::bigint) "
    "RETURNING crashed) "
    "UPDATE release_envs SET user_level = user_level + 1, "
    "user_rows = user_rows - (SELECT count(*) FROM del), "
    "crashed_rows = crashed_rows - (SELECT count(*) FROM del WHERE crashed) "
    "WHERE id = $1::bigint RETURNING user_rows"};

/* Bring every release_envs row listed in `res` (positive ids) back within the limit. */
static err_code downsample(pconn *c, PGresult *res, err_info *err)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)atomic_load(&users_exact));
    for (int i = 0; i < PQntuples(res); i++) {
        const char *id = PQgetvalue(res, i, 0);
        if (strtoll(id, NULL, 10) <= 0)
            continue;   /* the statement's row counts, not release_envs ids */
        for (int round = 0; round < 32; round++) {
            const char *v[1] = {id};
            PGresult *r2;
            err_code rc = store_exec(&r2, c, &SQL_DOWNSAMPLE, 1, v, NULL, NULL, err);
            if (rc != ERR_OK)
                return rc;
            /* the rows are visible in this transaction: the update saw the deletion's count */
            long long rows = PQntuples(r2) ? strtoll(PQgetvalue(r2, 0, 0), NULL, 10) : 0;
            PQclear(r2);
            if ((unsigned long long)rows <= strtoull(limit, NULL, 10))
                break;
        }
    }
    return ERR_OK;
}

/* Crash-free alerts (migration 0011), in the batch's transaction: when the project's newest
 * release (latest first session) has at least the rule's sessions and its crash-free share
 * fell below the rule's threshold, one event per (rule, release). The EXISTS is a one-time
 * filter: without such a rule nothing else is evaluated. */
static const store_stmt SQL_CRASH_FREE = {"sessions_crash_free_alerts",
    "INSERT INTO alert_events (rule_id, project_id, kind, cause, payload) "
    "SELECT r.id, r.project_id, r.kind, 'crash_free:' || n.release, "
    "jsonb_build_object('release', jsonb_build_object('release', n.release, 'sessions', n.s, "
    "'crashed', n.c, 'crash_free_sessions', (n.s - n.c)::float8 / n.s, "
    "'threshold', coalesce(r.threshold, 0.99), 'min_sessions', coalesce(r.min_count, 100))) "
    "FROM (SELECT e.release, sum(h.sessions) AS s, sum(h.crashed) AS c FROM release_envs e "
    "JOIN session_hours h ON h.renv = e.id WHERE e.project_id = $1::bigint "
    "AND EXISTS (SELECT 1 FROM alert_rules WHERE project_id = $1::bigint "
    "AND kind = 'crash_free') "
    "AND e.release = (SELECT release FROM release_envs WHERE project_id = $1::bigint "
    "GROUP BY release ORDER BY min(first_seen) DESC, release DESC LIMIT 1) "
    "GROUP BY e.release) n "
    "JOIN alert_rules r ON r.project_id = $1::bigint AND r.kind = 'crash_free' "
    "WHERE n.s > 0 AND n.s >= coalesce(r.min_count, 100) "
    "AND (n.s - n.c)::float8 / n.s < coalesce(r.threshold, 0.99) "
    "ON CONFLICT (rule_id, cause) DO NOTHING"};

static err_code crash_free_alerts(pconn *c, int64_t project_id, err_info *err)
{
    char pid[24];
    snprintf(pid, sizeof pid, "%lld", (long long)project_id);
    const char *v[1] = {pid};
    return store_exec(NULL, c, &SQL_CRASH_FREE, 1, v, NULL, NULL, err);
}

/* ---- a batch of session updates -------------------------------------------------------- */

typedef struct {
    int64_t project_id;
    const store_session_delta *d;
    size_t n;
    user_add *keep;           /* devices stored once the transaction commits (per attempt) */
    size_t nkeep;
    uint64_t gen;             /* the device cache's generation seen by that transaction */
} apply_ctx;

typedef struct {
    uint8_t sid[16];
    int64_t renv;
    int64_t started_ms;
    sess_state st;
    uint8_t uid[16];
    bool has_uid;
    uint8_t lvl;
} stored_state;

static int stored_cmp(const void *pa, const void *pb)
{
    return memcmp(((const stored_state *)pa)->sid, ((const stored_state *)pb)->sid, 16);
}

static const store_stmt SQL_STATES = {"sessions_states",
    "SELECT s.sid, s.renv, s.uid, s.lvl, (extract(epoch FROM s.started) * 1000)::bigint, "
    "s.counted, s.errored, coalesce(s.final::text, '') FROM (SELECT unnest($2::uuid[]) AS sid) q "
    "CROSS JOIN LATERAL (SELECT * FROM session_states s WHERE s.project_id = $1::bigint "
    "AND s.sid = q.sid LIMIT 1) s"};

/* The stored states of the batch's sessions, sorted by sid. One index probe per session
 * whatever the planner thinks of the table: a LATERAL subquery with LIMIT is not pulled up
 * into a join (as a join it became a hash join reading every state of the project for each
 * batch: linear in the sessions of the last 5 days). */
static err_code load_states(stored_state **out, size_t *nout, pconn *c, const apply_ctx *x,
                            err_info *err)
{
    *out = NULL;
    *nout = 0;
    pg_array ids;
    arr_init(&ids, OID_UUID);
    for (size_t i = 0; i < x->n; i++)
        arr_add(&ids, x->d[i].sid, 16);
    char pid[24];
    snprintf(pid, sizeof pid, "%lld", (long long)x->project_id);
    const char *v[2] = {pid, NULL};
    int len[2] = {0, 0}, fmt[2] = {0, 1};
    arr_finish(&v[1], &len[1], &ids);
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_STATES, 2, v, len, fmt, err);
    arrays_reset(&ids, 1);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res);
    stored_state *s = n ? xcalloc(n, sizeof *s) : NULL;
    for (size_t i = 0; i < n; i++) {
        int r = (int)i;
        uuid_bytes(s[i].sid, PQgetvalue(res, r, 0));
        s[i].renv = strtoll(PQgetvalue(res, r, 1), NULL, 10);
        s[i].has_uid = !PQgetisnull(res, r, 2) && uuid_bytes(s[i].uid, PQgetvalue(res, r, 2));
        s[i].lvl = (uint8_t)atoi(PQgetvalue(res, r, 3));
        s[i].started_ms = strtoll(PQgetvalue(res, r, 4), NULL, 10);
        s[i].st.counted = PQgetvalue(res, r, 5)[0] == 't';
        s[i].st.errored = PQgetvalue(res, r, 6)[0] == 't';
        s[i].st.final = PQgetvalue(res, r, 7)[0];
    }
    PQclear(res);
    if (n)
        qsort(s, n, sizeof *s, stored_cmp);
    *out = s;
    *nout = n;
    return ERR_OK;
}

/* The state after a delta: init counts, the first final status stays, errors before it. */
static sess_state merge(sess_state old, const store_session_delta *d)
{
    sess_state s = old;
    s.counted = old.counted || d->init;
    if (old.final == STORE_SESSION_OPEN) {
        s.errored = old.errored || d->errored;
        s.final = d->final;
    }
    return s;
}

/* After the commit: the devices it stored (or found stored) are known to this node. */
static void devices_remember(const user_add *keep, size_t n, uint64_t gen)
{
    store_devcache *dc = atomic_load(&devcache);
    for (size_t i = 0; dc && gen && i < n; i++)
        store_devcache_add(dc, gen, keep[i].renv, keep[i].uid, keep[i].crashed);
}

static err_code do_apply(pconn *c, void *vctx, err_info *err)
{
    apply_ctx *x = vctx;
    stored_state *stored = NULL;
    size_t nstored = 0;
    renv_set renvs = {0};
    hour_delta *hours = xcalloc(2 * x->n + 1, sizeof *hours);
    user_add *users = xcalloc(x->n + 1, sizeof *users);
    stored_state **olds = xcalloc(x->n + 1, sizeof *olds);   /* each delta's stored state */
    size_t *ri = xcalloc(x->n + 1, sizeof *ri);               /* a new one's renvs key */
    size_t nhours = 0, nusers = 0;
    buf jold, jhours;
    pg_array ncol[8], ucol[6];   /* new states: sid, renv, uid, lvl, started, counted,
                                    errored, final; users: as users_arrays */
    static const uint32_t noids[8] = {OID_UUID, OID_INT8, OID_UUID, OID_INT2, OID_TIMESTAMPTZ,
                                      OID_BOOL, OID_BOOL, OID_CHAR};
    buf_init(&jold);
    buf_init(&jhours);
    for (int k = 0; k < 8; k++)
        arr_init(&ncol[k], noids[k]);
    for (int k = 0; k < 6; k++)
        arr_init(&ucol[k], OID_INT8);
    x->nkeep = 0;
    x->gen = 0;
    PGresult *res = NULL;

    err_code rc = begin_locked(&x->gen, c, x->project_id, x->n, err);
    if (rc == ERR_OK)
        rc = load_states(&stored, &nstored, c, x, err);
    if (rc != ERR_OK)
        goto done;
    /* release_envs rows: every new session's, and last_seen moves with their starts */
    for (size_t i = 0; i < x->n; i++) {
        stored_state key;
        memcpy(key.sid, x->d[i].sid, 16);
        olds[i] = nstored ? bsearch(&key, stored, nstored, sizeof *stored, stored_cmp) : NULL;
        if (olds[i] == NULL)
            ri[i] = renv_add(&renvs, x->d[i].release, x->d[i].environment, x->d[i].started_ms);
    }
    rc = renv_upsert(&renvs, c, x->project_id, err);
    if (rc != ERR_OK)
        goto done;

    jsonw wo;
    jsonw_init(&wo, &jold);
    jsonw_array_begin(&wo);
    char hex[33], fin[2] = {0, 0};
    for (size_t i = 0; i < x->n; i++) {
        const store_session_delta *d = &x->d[i];
        const stored_state *old = olds[i];
        sess_state before = old ? old->st : (sess_state){false, false, STORE_SESSION_OPEN};
        sess_state after = merge(before, d);
        int64_t renv = old ? old->renv : renvs.v[ri[i]].id;
        int64_t started = old ? old->started_ms : d->started_ms;
        const uint8_t *uid = old ? (old->has_uid ? old->uid : NULL) : (d->has_uid ? d->uid : NULL);
        uint8_t lvl = old ? old->lvl : d->lvl;
        if (old == NULL) {
            arr_add(&ncol[0], d->sid, 16);
            arr_add_int8(&ncol[1], renv);
            if (uid)
                arr_add(&ncol[2], uid, 16);
            else
                arr_add_null(&ncol[2]);
            arr_add_int2(&ncol[3], lvl);
            arr_add_timestamptz(&ncol[4], started);
            arr_add_bool(&ncol[5], after.counted);
            arr_add_bool(&ncol[6], after.errored);
            if (after.final)
                arr_add(&ncol[7], &after.final, 1);
            else
                arr_add_null(&ncol[7]);
        } else if (memcmp(&before, &after, sizeof before) != 0) {
            hex16(hex, d->sid);
            fin[0] = after.final;
            jsonw_object_begin(&wo);
            jsonw_kstr(&wo, "s", hex);
            jsonw_kbool(&wo, "n", after.counted);
            jsonw_kbool(&wo, "e", after.errored);
            if (after.final)
                jsonw_kstr(&wo, "f", fin);
            jsonw_object_end(&wo);
        } else {
            continue;   /* a repeated update: nothing changes */
        }
        hour_delta h = {.renv = renv, .hour_s = hour_of(started)};
        contribution(&h, &after, 1);
        contribution(&h, &before, -1);
        hours[nhours++] = h;
        bool crashed_before = before.counted && before.final == STORE_SESSION_CRASHED;
        bool crashed_after = after.counted && after.final == STORE_SESSION_CRASHED;
        if (uid && after.counted && (!before.counted || (crashed_after && !crashed_before))) {
            user_add *u = &users[nusers++];
            u->renv = renv;
            memcpy(u->uid, uid, 16);
            u->lvl = lvl;
            u->crashed = crashed_after;
        }
    }
    jsonw_array_end(&wo);
    nhours = hours_merge(hours, nhours);
    nusers = users_merge(users, nusers);
    arrays_reset(ucol, 6);
    x->keep = xrealloc(x->keep, (nusers + 1) * sizeof *x->keep);
    users_arrays(ucol, x->keep, &x->nkeep, users, nusers, &renvs, x->gen);
    jsonw wh;
    jsonw_init(&wh, &jhours);
    hours_json(&wh, hours, nhours);
    buf_putc(&jold, '\0');
    buf_putc(&jhours, '\0');
    char pid[24], limit[24];
    snprintf(pid, sizeof pid, "%lld", (long long)x->project_id);
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)atomic_load(&users_exact));
    const char *v[18] = {(const char *)jhours.data, limit};
    int len[18] = {0}, fmt[18] = {0};
    for (int k = 0; k < 6; k++) {
        arr_finish(&v[2 + k], &len[2 + k], &ucol[k]);
        fmt[2 + k] = 1;
    }
    v[8] = pid;
    for (int k = 0; k < 8; k++) {
        arr_finish(&v[9 + k], &len[9 + k], &ncol[k]);
        fmt[9 + k] = 1;
    }
    v[17] = (const char *)jold.data;
    rc = store_exec(&res, c, &SQL_APPLY, 18, v, len, fmt, err);
    if (rc == ERR_OK)
        rc = downsample(c, res, err);
    if (rc == ERR_OK)
        rc = crash_free_alerts(c, x->project_id, err);
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "counting sessions", err);
done:
    if (rc != ERR_OK)
        x->nkeep = 0;
    PQclear(res);
    buf_reset(&jold);
    buf_reset(&jhours);
    arrays_reset(ncol, 8);
    arrays_reset(ucol, 6);
    free(hours);
    free(users);
    free(olds);
    free(ri);
    free(renvs.v);
    free(stored);
    return rc;
}

err_code store_sessions_apply(store *s, int64_t project_id, const store_session_delta *d,
                              size_t n, err_info *err)
{
    if (n == 0)
        return ERR_OK;
    apply_ctx x = {project_id, d, n, NULL, 0, 0};
    err_code rc = store_run(s, do_apply, &x, err);
    if (rc == ERR_OK)
        devices_remember(x.keep, x.nkeep, x.gen);
    free(x.keep);
    return rc;
}

/* ---- aggregated rows ------------------------------------------------------------------- */

typedef struct {
    int64_t project_id;
    const store_session_agg *a;
    size_t n;
    user_add *keep;           /* as in apply_ctx */
    size_t nkeep;
    uint64_t gen;
} add_ctx;

static err_code do_add(pconn *c, void *vctx, err_info *err)
{
    add_ctx *x = vctx;
    renv_set renvs = {0};
    hour_delta *hours = xcalloc(x->n + 1, sizeof *hours);
    user_add *users = xcalloc(x->n + 1, sizeof *users);
    size_t *ri = xcalloc(x->n + 1, sizeof *ri);   /* each row's renvs key */
    size_t nhours = 0, nusers = 0;
    buf jhours;
    pg_array ucol[6];
    buf_init(&jhours);
    for (int k = 0; k < 6; k++)
        arr_init(&ucol[k], OID_INT8);
    x->nkeep = 0;
    x->gen = 0;
    PGresult *res = NULL;
    err_code rc = begin_locked(&x->gen, c, x->project_id, x->n, err);
    for (size_t i = 0; i < x->n && rc == ERR_OK; i++)
        ri[i] = renv_add(&renvs, x->a[i].release, x->a[i].environment, x->a[i].started_ms);
    if (rc == ERR_OK)
        rc = renv_upsert(&renvs, c, x->project_id, err);
    if (rc != ERR_OK)
        goto done;
    for (size_t i = 0; i < x->n; i++) {
        const store_session_agg *a = &x->a[i];
        int64_t renv = renvs.v[ri[i]].id;
        hours[nhours++] = (hour_delta){renv, hour_of(a->started_ms), a->sessions, a->crashed,
                                       a->abnormal, a->errored};
        if (a->has_uid && a->sessions > 0) {
            user_add *u = &users[nusers++];
            u->renv = renv;
            memcpy(u->uid, a->uid, 16);
            u->lvl = a->lvl;
            u->crashed = a->crashed > 0;
        }
    }
    nhours = hours_merge(hours, nhours);
    nusers = users_merge(users, nusers);
    arrays_reset(ucol, 6);
    x->keep = xrealloc(x->keep, (nusers + 1) * sizeof *x->keep);
    users_arrays(ucol, x->keep, &x->nkeep, users, nusers, &renvs, x->gen);
    jsonw wh;
    jsonw_init(&wh, &jhours);
    hours_json(&wh, hours, nhours);
    buf_putc(&jhours, '\0');
    char limit[24];
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)atomic_load(&users_exact));
    const char *v[8] = {(const char *)jhours.data, limit};
    int len[8] = {0}, fmt[8] = {0};
    for (int k = 0; k < 6; k++) {
        arr_finish(&v[2 + k], &len[2 + k], &ucol[k]);
        fmt[2 + k] = 1;
    }
    rc = store_exec(&res, c, &SQL_ADD, 8, v, len, fmt, err);
    if (rc == ERR_OK)
        rc = downsample(c, res, err);
    if (rc == ERR_OK)
        rc = crash_free_alerts(c, x->project_id, err);
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "counting sessions", err);
done:
    if (rc != ERR_OK)
        x->nkeep = 0;
    PQclear(res);
    buf_reset(&jhours);
    arrays_reset(ucol, 6);
    free(hours);
    free(users);
    free(ri);
    free(renvs.v);
    return rc;
}

err_code store_sessions_add(store *s, int64_t project_id, const store_session_agg *a, size_t n,
                            err_info *err)
{
    if (n == 0)
        return ERR_OK;
    add_ctx x = {project_id, a, n, NULL, 0, 0};
    err_code rc = store_run(s, do_add, &x, err);
    if (rc == ERR_OK)
        devices_remember(x.keep, x.nkeep, x.gen);
    free(x.keep);
    return rc;
}
