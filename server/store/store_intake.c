/*
 * store_intake - group commit of new reports; see store_intake.h for the contract.
 *
 * The queue is a FIFO of entries (one malloc'd entry per report). A committer thread waits
 * for entries, cuts a batch off the head of the queue under `mu`, commits it without the lock
 * and calls each entry's done callback. The batch goes as one prepared INSERT of ten binary
 * arrays (insert_batch): one round trip, no escaping of the raw bytes, no text parsing of ids
 * and sizes.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/buf.h"
#include "base/hex.h"
#include "base/xalloc.h"
#include "store/store_intake.h"
#include "store/store_internal.h"

typedef struct intake_entry {
    const store_report_new *r;
    store_intake_done_fn done;
    void *ctx;
    uint8_t id[16];            /* UUIDv7, set by the committer */
    double deadline_ms;        /* its commit must end by then (store_now_ms): the
                                  submitting request's deadline, else submission + the
                                  store's timeout (a 503 rather than a hang) */
    err_code rc;
    err_info err;
    bool processed;            /* stored as processed (its issue upserted in the commit) */
    bool own;                  /* its id is the report's own (a Sentry event_id): claimed in
                                  report_claims, stored once per project */
    bool dup;                  /* own id repeated within this batch: only the first goes in */
    struct intake_entry *next;
} intake_entry;

struct store_intake {
    store *s;
    unsigned max_batch, nthreads;
    uint64_t max_batch_bytes;
    double gather_ms;            /* longest wait for the last commit's clients (0: none) */
    void (*on_queued)(void *ctx); /* store_intake_options.queued */
    void *queued_ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* an entry was queued, or stop */
    intake_entry *head, *tail;   /* waiting for a committer */
    size_t queued;               /* entries from head to tail */
    size_t last_batch;           /* entries of the last commit */
    size_t queued_at_end;        /* entries queued when it ended (other clients than its) */
    double end_ms;               /* when it ended (intake_now_ms) */
    size_t gather_want;          /* while a committer gathers: the queue length it waits
                                    for (submissions before that wake nobody); else 0 */
    bool stop;
    pthread_t *threads;
    unsigned started;
    store_intake_stats stats;
};

static void *committer_main(void *arg);

err_code store_intake_new(store_intake **out, store *s, const store_intake_options *opts,
                          err_info *err)
{
    store_intake *q = xcalloc(1, sizeof *q);
    q->s = s;
    q->max_batch = opts && opts->max_batch ? opts->max_batch : 256;
    q->nthreads = opts && opts->max_inflight ? opts->max_inflight : 2;
    q->max_batch_bytes = opts && opts->max_batch_bytes ? opts->max_batch_bytes : 16u << 20;
    q->gather_ms = opts ? opts->gather_us / 1e3 : 0;
    q->on_queued = opts ? opts->queued : NULL;
    q->queued_ctx = opts ? opts->queued_ctx : NULL;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->threads = xcalloc(q->nthreads, sizeof *q->threads);
    *out = NULL;
    for (; q->started < q->nthreads; q->started++)
        if (pthread_create(&q->threads[q->started], NULL, committer_main, q) != 0) {
            store_intake_free(q);
            return err_set(err, ERR_INTERNAL, "starting intake committer threads failed");
        }
    *out = q;
    return ERR_OK;
}

void store_intake_free(store_intake *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (unsigned i = 0; i < q->started; i++)
        pthread_join(q->threads[i], NULL);
    assert(q->head == NULL);   /* the committers drain the queue before they stop */
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->threads);
    free(q);
}

void store_intake_stats_get(store_intake_stats *out, store_intake *q)
{
    pthread_mutex_lock(&q->mu);
    *out = q->stats;
    pthread_mutex_unlock(&q->mu);
}

/* ---- ids ------------------------------------------------------------------------------- */

/* The 16 bytes of a canonical UUID text (store_report_id_norm's form); false if it is not one. */
static bool uuid_bytes(uint8_t out[16], const char *text)
{
    char norm[37];
    if (!store_report_id_norm(norm, text))
        return false;
    for (int i = 0, k = 0; i < 16; k += 2) {
        if (norm[k] == '-')
            k++;
        unsigned hi = (unsigned)(norm[k] <= '9' ? norm[k] - '0' : norm[k] - 'a' + 10);
        unsigned lo = (unsigned)(norm[k + 1] <= '9' ? norm[k + 1] - '0' : norm[k + 1] - 'a' + 10);
        out[i++] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

/* UUIDv7 (RFC 9562 section 5.7): 48-bit Unix time in ms, version 7, 74 random bits; a report
 * that brings its own id (a Sentry event_id) keeps it. */
static void uuid7_fill(intake_entry *batch, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    for (intake_entry *e = batch; n > 0; e = e->next, n--) {
        uint8_t *u = e->id;
        e->own = e->r->id != NULL && uuid_bytes(u, e->r->id);
        e->dup = false;
        if (e->own) {   /* the same id twice in one batch (resends at once): one row */
            for (intake_entry *o = batch; o != e && !e->dup; o = o->next)
                e->dup = o->own && memcmp(o->id, u, 16) == 0 &&
                         (o->r->project_id ? o->r->project_id : STORE_PROJECT_DEFAULT) ==
                             (e->r->project_id ? e->r->project_id : STORE_PROJECT_DEFAULT);
            continue;
        }
        size_t got = 0;
        while (got < 10) {
            ssize_t k = getrandom(u + 6 + got, 10 - got, 0);
            if (k > 0)
                got += (size_t)k;   /* EINTR: try again; getrandom(0) blocks only at boot */
        }
        for (int i = 0; i < 6; i++)
            u[i] = (uint8_t)(ms >> (40 - 8 * i));
        u[6] = (uint8_t)(0x70 | (u[6] & 0x0f));
        u[8] = (uint8_t)(0x80 | (u[8] & 0x3f));
    }
}

/* RFC 9562's text form: lower-case */
static void uuid_text(char out[37], const uint8_t u[16])
{
    hex_uuid_format(out, u, false);
}

/* ---- the INSERT ------------------------------------------------------------------------ */

/* One statement, prepared once per connection: the batch travels as ten binary arrays, one
 * per column, and `unnest` turns them back into rows. One round trip (a COPY takes two: the
 * COPY command, then the data), no escaping of the raw bytes, no text parsing of ids and
 * sizes. Outside a transaction block the statement is its own transaction: the answer comes
 * after the commit (synchronous_commit on: after its WAL is flushed). */
/* The claims of the reports that bring their own id ($12, own; migration 0012): inserted
 * in (project, id) order so that two commits claiming the same ids wait for each other in one
 * order, never a deadlock; a claim another transaction holds makes this one wait for its
 * outcome. Only reports whose claim this statement made, or that have no id of their own, are
 * inserted: a resent event is stored once. */
#define CLAIMS_CTE                                                                           \
    "c AS (INSERT INTO report_claims (project_id, id) "                                       \
    "SELECT o.p, o.i FROM unnest($1::uuid[], $11::int8[], $12::bool[]) AS o(i, p, own) "      \
    "WHERE o.own ORDER BY o.p, o.i ON CONFLICT DO NOTHING RETURNING project_id, id)"
#define CLAIMED(r) "(NOT " r ".own OR EXISTS (SELECT 1 FROM c WHERE c.project_id = " r       \
                   ".project_id AND c.id = " r ".id))"

/* The reports' rows from their columns' arrays $1..$12, as set-returning functions in a
 * select list (a ProjectSet: the arrays are walked in step, a shorter one read as NULLs, as
 * unnest(a, b, ...) in FROM does). In FROM, unnest is a function scan, which copies every
 * element into a tuplestore first: the raw bytes and the model, ~22 kB a report, copied
 * (and zeroed) once more before the insert copies them into the row. */
#define REPORT_COLUMNS                                                                       \
    "unnest($1::uuid[]) AS id, unnest($2::text[]) AS status, unnest($3::text[]) AS format, "  \
    "unnest($4::text[]) AS content_type, unnest($5::bytea[]) AS raw, "                       \
    "unnest($6::int4[]) AS raw_bytes, unnest($7::jsonb[]) AS parsed, "                       \
    "unnest($8::text[]) AS app, unnest($9::text[]) AS app_version, "                         \
    "unnest($10::text[]) AS os_version, unnest($11::int8[]) AS project_id, "                 \
    "unnest($12::bool[]) AS own"

static const store_stmt STMT_INSERT = {
    "reports_intake",
    "WITH " CLAIMS_CTE " "
    "INSERT INTO reports (id, status, format, content_type, raw, raw_bytes, parsed, app, "
    "app_version, os_version, project_id) "
    "SELECT r.id, r.status, r.format, r.content_type, r.raw, r.raw_bytes, r.parsed, r.app, "
    "r.app_version, r.os_version, r.project_id "
    "FROM (SELECT " REPORT_COLUMNS ") AS r WHERE " CLAIMED("r")};
enum { COL_ID, COL_STATUS, COL_FORMAT, COL_CTYPE, COL_RAW, COL_RAW_BYTES, COL_PARSED, COL_APP,
       COL_APP_VERSION, COL_OS_VERSION, COL_PROJECT, COL_OWN, NCOLS };

/* Element type OIDs (PostgreSQL's src/include/catalog/pg_type.dat): array_recv refuses an
 * array whose element type is not the parameter's. */
static const uint32_t COL_TYPE[NCOLS] = {2950 /* uuid */, 25, 25, 25 /* text */,
                                         17 /* bytea */, 23 /* int4 */, 3802 /* jsonb */,
                                         25, 25, 25, 20 /* int8 */, 16 /* bool */};

static void put_i32(buf *b, int32_t v)
{
    uint32_t be = htonl((uint32_t)v);
    buf_append(b, &be, 4);
}

static void put_i64(buf *b, int64_t v)
{
    uint32_t hi = htonl((uint32_t)((uint64_t)v >> 32)), lo = htonl((uint32_t)v);
    buf_append(b, &hi, 4);
    buf_append(b, &lo, 4);
}

/* One element: its length and bytes, or -1 for NULL. */
static void put_elem(buf *b, const void *p, size_t n)
{
    if (!p) {
        put_i32(b, -1);
        return;
    }
    put_i32(b, (int32_t)n);
    buf_append(b, p, n);
}

static void put_text(buf *b, const char *s)
{
    put_elem(b, s, s ? strlen(s) : 0);
}

/* An array header (array_recv's binary form): one dimension of `n` elements of type `oid`. */
static void put_array_head(buf *b, bool has_nulls, uint32_t oid, size_t n)
{
    put_i32(b, 1);
    put_i32(b, has_nulls ? 1 : 0);
    put_i32(b, (int32_t)oid);
    put_i32(b, (int32_t)n);
    put_i32(b, 1);
}

/* A minidump processed at intake whose walk went through in-app images without unwind info
 * carries what it saw of each one's debug file ($19: [{"uuid","seen"}], "seen" the first 16
 * hex digits of the symcache read, "" none; store_queue.c's SQL_RECHECK_UNWIND for the
 * workers). A row changed since (a debug file recorded on another node, whose trigger of
 * migration 0022 ran before this row existed) stores the report 'received', with its issue,
 * as that trigger would have left it: the workers walk it again. */
#define UNWIND_RECHECKED_STATUS                                                              \
    "CASE WHEN r.checks IS NOT NULL AND EXISTS (SELECT 1 FROM json_to_recordset("            \
    "r.checks::json) AS c(uuid uuid, seen text) JOIN dsyms d ON d.uuid = c.uuid "             \
    "WHERE d.symcache_blob IS NOT NULL "                                                     \
    "AND lower(left(d.symcache_blob, 16)) IS DISTINCT FROM nullif(c.seen, '')) "              \
    "THEN 'received' ELSE r.status END"

/* The same INSERT for a batch holding reports processed at intake: each of those is stored
 * 'processed' with its model and issue, and its issue upserted, in the one statement (so in
 * the one transaction whose commit precedes the 202s). $13..$19 are per report (NULL for a
 * report stored as received; $18 a minidump's unwind_uuids as an array's text form, $19 its
 * checks), $20..$31 per group (one per project + issue_app + fingerprint),
 * each a binary array in the groups' order, as the reports' columns: no JSON to check and
 * read (json_recv, json_to_recordset: ~2% of the statement's CPU when the groups were one JSON
 * parameter); the frames, a JSON text each, are parsed once, into the proposed row's jsonb,
 * and the versions are an array's text form each (an array of arrays of different lengths
 * has no binary form). The counts come from the reports actually inserted (k: not a resent
 * event). The groups' receipt times are now(): the transaction's time, which is received_at
 * of every row it inserts. Upserts go in (project, app, fingerprint) order and per-day counts in issue
 * order, as the workers' (store_queue.c): no deadlock among them. The answer is how many
 * resolved issues the batch reopened. */
#define INTAKE_PROCESSED_SQL(CLAIMS, CLAIMED_)                                               \
    "WITH " CLAIMS                                                                           \
    "t AS (SELECT project_id, app, kind, fingerprint, title, culprit, exception, basis, "    \
    "provisional, versions::text[] AS versions, last_report, frames "                        \
    "FROM unnest($20::int8[], $21::text[], $22::text[], $23::text[], $24::text[], "          \
    "$25::text[], $26::text[], $27::text[], $28::bool[], $29::text[], $30::uuid[], "          \
    "$31::text[]) AS u(project_id, app, kind, fingerprint, title, culprit, exception, basis, " \
    "provisional, versions, last_report, frames)), "                                         \
    /* per group, the reports this statement inserts (a resent event is not counted) */      \
    "k AS (SELECT x.project_id, x.issue_app, x.fingerprint, count(*) AS n "                  \
    "FROM unnest($1::uuid[], $11::int8[], $12::bool[], $13::text[], $14::text[]) "           \
    "AS x(id, project_id, own, issue_app, fingerprint) "                                     \
    "WHERE x.fingerprint IS NOT NULL AND " CLAIMED_("x") " GROUP BY 1, 2, 3), "              \
    "g AS (INSERT INTO issues AS i (project_id, app, kind, fingerprint, title, culprit, "    \
    "exception, basis, provisional, frames, first_seen, last_seen, count, versions, "        \
    "last_report, first_version) "                                                           \
    "SELECT t.project_id, t.app, t.kind, t.fingerprint, t.title, t.culprit, t.exception, "   \
    "t.basis, t.provisional, t.frames::jsonb, now(), now(), k.n, "                           \
    "ARRAY(SELECT DISTINCT v FROM unnest(t.versions) v ORDER BY 1), t.last_report, "         \
    /* one version: it is the first (then no trigger call, migration 0027) */                \
    "CASE WHEN cardinality(t.versions) = 1 THEN t.versions[1] END "                          \
    "FROM t JOIN k ON k.project_id = t.project_id AND k.issue_app = t.app "                  \
    "AND k.fingerprint = t.fingerprint "                                                     \
    "ORDER BY t.project_id, t.app, t.fingerprint " STORE_ISSUE_UPSERT_CONFLICT               \
    "RETURNING i.id, i.project_id, i.app, i.fingerprint, "                                   \
    "coalesce(i.regressed_at = now(), false) AS regressed), "                                \
    "d AS (INSERT INTO issue_days AS d (issue_id, day, count) "                              \
    "SELECT g.id, (now() AT TIME ZONE 'UTC')::date, k.n FROM g "                             \
    "JOIN k ON k.project_id = g.project_id AND k.issue_app = g.app "                         \
    "AND k.fingerprint = g.fingerprint "                                                     \
    "ORDER BY 1 "                                                                            \
    "ON CONFLICT (issue_id, day) DO UPDATE SET count = d.count + EXCLUDED.count), "          \
    "r AS (INSERT INTO reports (id, status, format, content_type, raw, raw_bytes, parsed, app, " \
    "app_version, os_version, project_id, issue_id, fingerprint, kind, hardware_model, "     \
    "symbolicated, attempts, processed_at, unwind_uuids) "                                   \
    "SELECT r.id, " UNWIND_RECHECKED_STATUS ", r.format, r.content_type, r.raw, r.raw_bytes, " \
    "r.parsed, r.app, r.app_version, r.os_version, r.project_id, g.id, r.fingerprint, r.kind, " \
    "r.hardware_model, r.model, CASE WHEN g.id IS NULL THEN 0 ELSE 1 END, "                  \
    "CASE WHEN g.id IS NULL THEN NULL ELSE now() END, coalesce(r.unwind::uuid[], '{}') "     \
    "FROM (SELECT " REPORT_COLUMNS ", unnest($13::text[]) AS issue_app, "                    \
    "unnest($14::text[]) AS fingerprint, unnest($15::text[]) AS kind, "                      \
    "unnest($16::text[]) AS hardware_model, unnest($17::text[]) AS model, "                  \
    "unnest($18::text[]) AS unwind, unnest($19::text[]) AS checks) AS r "                    \
    "LEFT JOIN g ON g.project_id = r.project_id AND g.app = r.issue_app "                    \
    "AND g.fingerprint = r.fingerprint WHERE " CLAIMED_("r") " "                             \
    "RETURNING issue_id, app_version, os_version, hardware_model), "                         \
    /* the issues' breakdown counters (migration 0016) of the reports just inserted, in      \
     * (issue, dimension, value) order as every writer of them (migration 0023) */           \
    "bd AS (INSERT INTO issue_breakdowns AS b (issue_id, dim, value, count) "                \
    "SELECT r.issue_id, x.d, x.v, count(*) FROM r "                                          \
    "CROSS JOIN LATERAL (VALUES (0::smallint, coalesce(r.app_version, '')), "                \
    "(1::smallint, coalesce(r.os_version, '')), (2::smallint, coalesce(r.hardware_model, ''))) " \
    "AS x(d, v) WHERE r.issue_id IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 "             \
    "ON CONFLICT (issue_id, dim, value) DO UPDATE SET count = b.count + EXCLUDED.count) "    \
    "SELECT count(*) FILTER (WHERE regressed) FROM g"
static const store_stmt STMT_INSERT_PROCESSED = {
    "reports_intake_processed", INTAKE_PROCESSED_SQL(CLAIMS_CTE ", ", CLAIMED)};
/* The same for a batch in which no report brings its own id (every Apple report, most
 * others): no claims to make, so no CTE c, whose insert into report_claims (the table and its
 * two indexes opened, the arbiter set up, the ids unnested and sorted) is set up on every
 * execution even when it inserts nothing. */
#define CLAIMED_NONE(r) "true"
static const store_stmt STMT_INSERT_PROCESSED_UNCLAIMED = {
    "reports_intake_processed_unclaimed", INTAKE_PROCESSED_SQL("", CLAIMED_NONE)};
enum { PCOL_ISSUE_APP, PCOL_FINGERPRINT, PCOL_KIND, PCOL_HARDWARE_MODEL, PCOL_MODEL,
       PCOL_UNWIND, PCOL_CHECKS, NPCOLS };
/* The groups' columns, $20..$31 */
enum { GCOL_PROJECT, GCOL_APP, GCOL_KIND, GCOL_FINGERPRINT, GCOL_TITLE, GCOL_CULPRIT,
       GCOL_EXCEPTION, GCOL_BASIS, GCOL_PROVISIONAL, GCOL_VERSIONS, GCOL_LAST_REPORT, GCOL_FRAMES,
       NGCOLS };
static const uint32_t GCOL_TYPE[NGCOLS] = {20 /* int8 */, 25, 25, 25, 25, 25, 25, 25 /* text */,
                                           16 /* bool */, 25, 2950 /* uuid */, 25};

/* The project a report goes to (0 = the default). */
static int64_t project_of(const store_report_new *r)
{
    return r->project_id ? r->project_id : STORE_PROJECT_DEFAULT;
}

/* Are processed reports `a` and `b` in the same group: the same issue (project, app,
 * fingerprint)? */
static bool same_group(const store_report_new *a, const store_report_new *b)
{
    return a->processed && b->processed && project_of(a) == project_of(b) &&
           strcmp(a->processed->issue_app, b->processed->issue_app) == 0 &&
           strcmp(a->processed->fingerprint, b->processed->fingerprint) == 0;
}

/* One version as an element of an array's text form (array_in): in double quotes, with a
 * backslash before each double quote and backslash. */
static void put_version_literal(buf *b, const char *v)
{
    buf_putc(b, '"');
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            buf_putc(b, '\\');
        buf_putc(b, *c);
    }
    buf_putc(b, '"');
}

/* A JSON array of UUID strings (["..."], as unwind_lacking writes it) as one element in an
 * array's text form ({...}, array_in: UUIDs need no quotes); NULL stays NULL. */
static void put_uuid_array_literal(buf *b, const char *json)
{
    if (json == NULL) {
        put_text(b, NULL);
        return;
    }
    size_t at = b->len;
    put_i32(b, 0);   /* the length, set below */
    buf_putc(b, '{');
    for (const char *c = json; *c; c++)
        if (*c == ',' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
            (*c >= 'A' && *c <= 'F') || *c == '-')
            buf_putc(b, *c);
    buf_putc(b, '}');
    uint32_t be = htonl((uint32_t)(b->len - at - 4));
    memcpy(b->data + at, &be, 4);
}

/* $13..$19 (binary text arrays: NULL for a report stored as received) into `pcol`, and the
 * groups' $20..$31 into `gcol`, in order of first appearance: project, app, kind,
 * fingerprint, title, culprit, exception, basis, provisional, versions (an array's text form:
 * {"1.0","1.1"}), last_report and frames. A group's title and frames come from its first
 * report (the same signature gives the same ones), last_report is its last (all share one
 * receipt time), versions its reports' distinct app versions. */
static void processed_columns(buf pcol[NPCOLS], buf gcol[NGCOLS], intake_entry *batch, size_t n,
                              size_t rows)
{
    for (int k = 0; k < NPCOLS; k++) {
        buf_init(&pcol[k]);
        put_array_head(&pcol[k], true, 25, rows);
    }
    /* the models are most of the bytes (~17 kB a report): their column's room at once, not a
     * doubling (and a copy of what it holds) every few reports */
    size_t model_bytes = 0, km = n;
    for (intake_entry *e = batch; km > 0; e = e->next, km--)
        if (!e->dup && e->r->processed)
            model_bytes += 4 + e->r->processed->symbolicated_len;
    buf_reserve(&pcol[PCOL_MODEL], model_bytes);
    size_t ngroups = 0;
    for (int g = 0; g < NGCOLS; g++) {
        buf_init(&gcol[g]);
        put_array_head(&gcol[g], true, GCOL_TYPE[g], 0);   /* the length is set below */
    }
    buf versions;
    buf_init(&versions);
    size_t k = n;
    for (intake_entry *e = batch; k > 0; e = e->next, k--) {
        if (e->dup)   /* not inserted: no row, no count */
            continue;
        const store_report_processed *p = e->r->processed;
        put_text(&pcol[PCOL_ISSUE_APP], p ? p->issue_app : NULL);
        put_text(&pcol[PCOL_FINGERPRINT], p ? p->fingerprint : NULL);
        put_text(&pcol[PCOL_KIND], p ? p->kind : NULL);
        put_text(&pcol[PCOL_HARDWARE_MODEL], p ? p->hardware_model : NULL);
        if (p && p->symbolicated_json && p->symbolicated_len > 0)   /* measured when made */
            put_elem(&pcol[PCOL_MODEL], p->symbolicated_json, p->symbolicated_len);
        else
            put_text(&pcol[PCOL_MODEL], p ? p->symbolicated_json : NULL);
        put_uuid_array_literal(&pcol[PCOL_UNWIND], p ? p->unwind_uuids_json : NULL);
        put_text(&pcol[PCOL_CHECKS], p ? p->unwind_checks_json : NULL);
        if (!p)
            continue;
        /* the first report of its group writes the group */
        bool first = true;
        for (intake_entry *o = batch; o != e && first; o = o->next)
            first = o->dup || !same_group(o->r, e->r);
        if (!first)
            continue;
        const uint8_t *last = NULL;
        put_i32(&gcol[GCOL_PROJECT], 8);
        put_i64(&gcol[GCOL_PROJECT], project_of(e->r));
        put_text(&gcol[GCOL_APP], p->issue_app);
        put_text(&gcol[GCOL_KIND], p->kind);
        put_text(&gcol[GCOL_FINGERPRINT], p->fingerprint);
        put_text(&gcol[GCOL_TITLE], p->title);
        put_text(&gcol[GCOL_CULPRIT], p->culprit);
        put_text(&gcol[GCOL_EXCEPTION], p->exception);
        put_text(&gcol[GCOL_BASIS], p->basis);
        put_i32(&gcol[GCOL_PROVISIONAL], 1);
        buf_putc(&gcol[GCOL_PROVISIONAL], p->provisional ? 1 : 0);
        put_text(&gcol[GCOL_FRAMES], p->frames_json ? p->frames_json : "[]");
        ngroups++;
        versions.len = 0;
        buf_putc(&versions, '{');
        size_t m = k;
        for (intake_entry *o = e; m > 0; o = o->next, m--) {
            if (o->dup || !same_group(o->r, e->r))
                continue;
            last = o->id;
            const char *v = o->r->app_version;
            if (v == NULL)
                continue;
            bool seen = false;   /* repeats are dropped by the SQL too; this keeps it short */
            size_t m2 = k;
            for (intake_entry *w = e; w != o && m2 > 0 && !seen; w = w->next, m2--)
                seen = same_group(w->r, e->r) &&
                       w->r->app_version && strcmp(w->r->app_version, v) == 0;
            if (!seen) {
                if (versions.len > 1)
                    buf_putc(&versions, ',');
                put_version_literal(&versions, v);
            }
        }
        buf_putc(&versions, '}');
        put_elem(&gcol[GCOL_VERSIONS], versions.data, versions.len);
        put_elem(&gcol[GCOL_LAST_REPORT], last, 16);
    }
    buf_reset(&versions);
    uint32_t be = htonl((uint32_t)ngroups);   /* the headers' element count (put_array_head) */
    for (int g = 0; g < NGCOLS; g++)
        memcpy(gcol[g].data + 12, &be, 4);
}

/* Insert `n` entries from `batch` with STMT_INSERT. Each array in binary form (array_recv,
 * src/backend/utils/adt/arrayfuncs.c): dimensions 1, a has-nulls flag, the element type,
 * then length and lower bound (1), then each element as put_elem writes it; binary uuid is
 * its 16 bytes, int4 big-endian, jsonb a version byte (1) and the JSON text, text and bytea
 * their bytes. */
static err_code insert_batch(pconn *c, intake_entry *batch, size_t n, bool with_processed,
                             uint64_t *regressions, err_info *err)
{
    buf col[NCOLS];
    size_t rows = 0, k = n;   /* the rows sent: an own id repeated in the batch goes once */
    for (intake_entry *e = batch; k > 0; e = e->next, k--)
        rows += !e->dup;
    for (int i = 0; i < NCOLS; i++) {
        buf_init(&col[i]);
        put_array_head(&col[i], !(i == COL_ID || i == COL_STATUS || i == COL_FORMAT ||
                                  i == COL_CTYPE || i == COL_RAW || i == COL_RAW_BYTES ||
                                  i == COL_PROJECT || i == COL_OWN),
                       COL_TYPE[i], rows);
    }
    size_t raw_bytes = 0;   /* the raw reports' column in one allocation, as the models' */
    k = n;
    for (intake_entry *e = batch; k > 0; e = e->next, k--)
        if (!e->dup)
            raw_bytes += 4 + e->r->raw_len;
    buf_reserve(&col[COL_RAW], raw_bytes);
    k = n;
    for (intake_entry *e = batch; k > 0; e = e->next, k--) {
        const store_report_new *r = e->r;
        if (e->dup)
            continue;
        put_elem(&col[COL_ID], e->id, 16);
        put_text(&col[COL_STATUS], with_processed && r->processed ? "processed" : r->status);
        put_text(&col[COL_FORMAT], r->format);
        put_text(&col[COL_CTYPE], r->content_type);
        put_elem(&col[COL_RAW], r->raw_len ? r->raw : (const uint8_t *)"", r->raw_len);
        put_i32(&col[COL_RAW_BYTES], 4);
        put_i32(&col[COL_RAW_BYTES], (int32_t)(r->report_len ? r->report_len : r->raw_len));
        if (r->parsed_json) {
            size_t pn = strlen(r->parsed_json);
            put_i32(&col[COL_PARSED], (int32_t)pn + 1);
            buf_putc(&col[COL_PARSED], 1);
            buf_append(&col[COL_PARSED], r->parsed_json, pn);
        } else {
            put_i32(&col[COL_PARSED], -1);
        }
        put_text(&col[COL_APP], r->app);
        put_text(&col[COL_APP_VERSION], r->app_version);
        put_text(&col[COL_OS_VERSION], r->os_version);
        put_i32(&col[COL_PROJECT], 8);
        put_i64(&col[COL_PROJECT], project_of(r));
        put_i32(&col[COL_OWN], 1);
        buf_putc(&col[COL_OWN], e->own ? 1 : 0);
    }
    const char *values[NCOLS + NPCOLS + NGCOLS];
    int lengths[NCOLS + NPCOLS + NGCOLS], formats[NCOLS + NPCOLS + NGCOLS];
    for (int i = 0; i < NCOLS; i++) {
        values[i] = (const char *)col[i].data;
        lengths[i] = (int)col[i].len;
        formats[i] = 1;
    }
    PGresult *res = NULL;
    err_code rc;
    buf pcol[NPCOLS + NGCOLS];   /* the reports' $13..$19, then the groups' $20..$31 */
    if (with_processed) {
        processed_columns(pcol, pcol + NPCOLS, batch, n, rows);
        for (int i = 0; i < NPCOLS + NGCOLS; i++) {
            values[NCOLS + i] = (const char *)pcol[i].data;
            lengths[NCOLS + i] = (int)pcol[i].len;
            formats[NCOLS + i] = 1;
        }
        bool claims = false;   /* a report of its own id in the batch */
        k = n;
        for (intake_entry *e = batch; k > 0 && !claims; e = e->next, k--)
            claims = e->own && !e->dup;
        const store_stmt *st = claims ? &STMT_INSERT_PROCESSED : &STMT_INSERT_PROCESSED_UNCLAIMED;
        rc = store_exec(&res, c, st, NCOLS + NPCOLS + NGCOLS, values, lengths, formats, err);
        if (rc == ERR_OK && regressions)
            *regressions = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        for (int i = 0; i < NPCOLS + NGCOLS; i++)
            buf_reset(&pcol[i]);
    } else {
        rc = store_exec(&res, c, &STMT_INSERT, NCOLS, values, lengths, formats, err);
    }
    PQclear(res);
    for (int i = 0; i < NCOLS; i++)
        buf_reset(&col[i]);
    return rc;
}

/* Before a batch is retried on a fresh connection: did the first attempt commit every row
 * (only its answer was lost)? The primary key is (id, received_at) since reports are
 * partitioned, so a second INSERT would not conflict: it would store each report twice. */
static bool batch_present(pconn *c, intake_entry *batch, size_t n)
{
    buf ids;
    buf_init(&ids);
    buf_putc(&ids, '{');
    size_t k = n;
    for (intake_entry *e = batch; k > 0; e = e->next, k--) {
        char t[37];
        uuid_text(t, e->id);
        if (ids.len > 1)
            buf_putc(&ids, ',');
        buf_append_str(&ids, t);
    }
    buf_putc(&ids, '}');
    const char *values[1] = {(const char *)ids.data};
    PGresult *res = store_pq_params(c, "SELECT count(*) FROM reports WHERE id = ANY($1::uuid[])",
                                    1, values, NULL, NULL, 0);
    bool all = PQresultStatus(res) == PGRES_TUPLES_OK &&
               strtoull(PQgetvalue(res, 0, 0), NULL, 10) == n;
    PQclear(res);
    buf_reset(&ids);
    return all;
}

/* Commit `n` entries on a pooled connection, retried once on a fresh connection when the
 * first one turns out to be broken (the database restarted since it was opened). */
static err_code commit_batch(store_intake *q, intake_entry *batch, size_t n, bool with_processed,
                             uint64_t *regressions, err_info *err)
{
    err_code rc = ERR_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        pconn *c;
        rc = store_acquire(&c, q->s, err);
        if (rc != ERR_OK)
            return rc;
        if (attempt > 0 && batch_present(c, batch, n))
            rc = ERR_OK;   /* the first attempt committed; only its answer was lost */
        else
            rc = insert_batch(c, batch, n, with_processed, regressions, err);
        bool broken = PQstatus(c->pg) != CONNECTION_OK && !c->timed_out;
        store_release(q->s, c);
        if (!(rc == ERR_STORE && broken))
            break;
    }
    return rc;
}

/* ---- the queue ------------------------------------------------------------------------- */

static uint64_t entry_bytes(const store_report_new *r)
{
    return r->raw_len + (r->parsed_json ? strlen(r->parsed_json) : 0);
}

/* Commit one batch and answer its entries (called without q->mu). */
static double intake_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Answer `e` (and free it) with `rc`, `id` when ERR_OK. */
static void answer(intake_entry *e, err_code rc, const err_info *err)
{
    char id[37] = "";
    if (rc == ERR_OK)
        uuid_text(id, e->id);
    e->done(e->ctx, rc, id, err);
    free(e);
}

/* The entries of `batch` whose deadline passed while they queued (behind a commit that
 * waited for a hung database) are answered ERR_STORE now, without asking the database;
 * returns the rest (*n updated). */
static intake_entry *drop_expired(store_intake *q, intake_entry *batch, size_t *n)
{
    double now = intake_now_ms();
    intake_entry *keep = NULL, **tail = &keep;
    unsigned expired = 0;
    for (intake_entry *e = batch, *next; e; e = next) {
        next = e->next;
        e->next = NULL;
        if (e->deadline_ms > now + 1) {
            *tail = e;
            tail = &e->next;
            continue;
        }
        err_info err = {0};
        err_set(&err, ERR_STORE, "the request's time for the database was spent waiting for "
                "an earlier commit");
        answer(e, ERR_STORE, &err);
        expired++;
        (*n)--;
    }
    if (expired) {
        pthread_mutex_lock(&q->mu);
        q->stats.failures += expired;
        pthread_mutex_unlock(&q->mu);
    }
    return keep;
}

/* What one batch's commits add to the stats. */
typedef struct {
    uint64_t regressions, splits, fallbacks;
} commit_tally;

/* Commit the `n` entries from `e` and set each one's verdict (rc, err, processed). Processed
 * reports go in with their issues; if that statement fails (a lock wait cut short, a deadlock
 * with a worker's regrouping, a value refused), the same reports are stored as received, as
 * without processing at intake, and the workers do the rest. If the database refuses that
 * too (not ERR_STORE: it answered, and said no), one of the reports holds a value it will
 * not take: the entries are committed again in two halves, each on its own (processed again
 * where they can be), so that only the report that is refused fails and the others are
 * stored, in about 2 log2(n) more statements for one bad report rather than n. */
static void commit_range(store_intake *q, intake_entry *e, size_t n, commit_tally *t)
{
    bool with_processed = false;
    size_t k = n;
    for (intake_entry *o = e; k > 0 && !with_processed; o = o->next, k--)
        with_processed = o->r->processed != NULL;
    err_info err = {0};
    uint64_t regressions = 0;
    err_code rc = commit_batch(q, e, n, with_processed, &regressions, &err);
    if (rc != ERR_OK && with_processed) {
        err_clear(&err);
        regressions = 0;
        with_processed = false;
        rc = commit_batch(q, e, n, false, NULL, &err);
        t->fallbacks += rc == ERR_OK;
    }
    if (rc != ERR_OK && rc != ERR_STORE && n > 1) {
        size_t half = n / 2;
        intake_entry *second = e;
        for (size_t i = 0; i < half; i++)
            second = second->next;
        t->splits++;
        commit_range(q, e, half, t);
        commit_range(q, second, n - half, t);
        return;
    }
    t->regressions += regressions;
    k = n;
    for (intake_entry *o = e; k > 0; o = o->next, k--) {
        o->rc = rc;
        o->err = err;
        o->processed = rc == ERR_OK && with_processed && o->r->processed != NULL;
    }
}

static void commit_and_answer(store_intake *q, intake_entry *batch, size_t n)
{
    batch = drop_expired(q, batch, &n);
    if (batch == NULL)
        return;
    uuid7_fill(batch, n);
    /* The earliest deadline of the batch bounds all its database work: no request is
     * answered after its own. */
    double first = batch->deadline_ms;
    for (intake_entry *e = batch; e; e = e->next)
        first = e->deadline_ms < first ? e->deadline_ms : first;
    store_deadline_set(first);
    commit_tally t = {0};
    commit_range(q, batch, n, &t);
    /* A repeated own id went in once, with the first entry that has it: the others share
     * its verdict (its half may have been refused while theirs was stored). */
    for (intake_entry *e = batch; e; e = e->next) {
        if (!e->dup)
            continue;
        for (intake_entry *o = batch; o != e; o = o->next)
            if (!o->dup && o->own && memcmp(o->id, e->id, 16) == 0 &&
                project_of(o->r) == project_of(e->r)) {
                e->rc = o->rc;
                e->err = o->err;
                e->processed = false;
                break;
            }
    }
    bool all_ok = true;
    for (intake_entry *e = batch; e; e = e->next)
        all_ok &= e->rc == ERR_OK;

    store_deadline_end();
    pthread_mutex_lock(&q->mu);
    q->stats.splits += t.splits > 0;
    q->stats.processed_fallbacks += t.fallbacks;
    q->stats.regressions += t.regressions;
    if (all_ok) {
        q->stats.batches++;
        if (n > q->stats.largest)
            q->stats.largest = n;
    }
    bool queued = false;
    for (intake_entry *e = batch; e; e = e->next) {
        if (e->rc == ERR_OK) {
            q->stats.reports++;
            q->stats.processed += e->processed;
            queued |= !e->processed && strcmp(e->r->status, "received") == 0;
        } else
            q->stats.failures++;
    }
    pthread_mutex_unlock(&q->mu);
    if (queued && q->on_queued != NULL)
        q->on_queued(q->queued_ctx);

    for (intake_entry *e = batch; e;) {
        intake_entry *next = e->next;   /* `e` is freed below; the callback may free e->r */
        answer(e, e->rc, &e->err);
        e = next;
    }
}

/* Wait (with q->mu held), until q->gather_ms after the last commit ended, for the clients
 * of that commit to send their next reports, so that they share this commit instead of
 * waiting for the one after. Why: with N clients that each wait for their answer, one
 * committer settles into two alternating batches of N/2 (the half answered last is still on
 * its way back when the next commit starts), and each statement costs Postgres a fixed
 * ~1 ms on top of its reports' work; waiting out the clients' round trip (well under a WAL
 * flush) makes one batch of N. The wait ends as soon as as many reports as that commit had
 * have come (beside those that queued while it ran), or the batch is full. A lone client
 * (a commit of one) never waits, nor does a report after a pause longer than gather_ms, nor
 * do several committers (their commits overlap instead: plain inserts). */
static void gather(store_intake *q)
{
    if (q->gather_ms <= 0 || q->nthreads > 1 || q->last_batch < 2 || q->stop)
        return;
    double left = q->end_ms + q->gather_ms - intake_now_ms();
    if (left <= 0)
        return;
    size_t want = q->queued_at_end + q->last_batch;
    if (want > q->max_batch)
        want = q->max_batch;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);   /* pthread_cond_timedwait's clock */
    long ns = until.tv_nsec + (long)(left * 1e6);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    q->gather_want = want;
    while (q->queued < want && !q->stop)
        if (pthread_cond_timedwait(&q->cv, &q->mu, &until) != 0)
            break;   /* ETIMEDOUT: commit what came */
    q->gather_want = 0;
}

static void *committer_main(void *arg)
{
    store_intake *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        if (!q->head) {
            if (q->stop)
                break;
            pthread_cond_wait(&q->cv, &q->mu);
            continue;
        }
        gather(q);
        if (!q->head)   /* another committer took them meanwhile */
            continue;
        /* Everything queued so far, within the batch limits. */
        intake_entry *batch = q->head, *last = batch;
        size_t n = 1;
        uint64_t bytes = entry_bytes(batch->r);
        while (last->next && n < q->max_batch) {
            uint64_t more = entry_bytes(last->next->r);
            if (bytes + more > q->max_batch_bytes)
                break;
            bytes += more;
            last = last->next;
            n++;
        }
        q->head = last->next;
        if (!q->head)
            q->tail = NULL;
        last->next = NULL;
        q->queued -= n;
        pthread_mutex_unlock(&q->mu);
        commit_and_answer(q, batch, n);
        pthread_mutex_lock(&q->mu);
        q->last_batch = n;
        q->queued_at_end = q->queued;
        q->end_ms = intake_now_ms();
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

err_code store_intake_submit(store_intake *q, const store_report_new *r,
                             store_intake_done_fn done, void *ctx, err_info *err)
{
    assert(r->missing_uuids_json == NULL && r->error == NULL);
    if (r->raw_len > 0x7fffffff)
        return err_set(err, ERR_TOO_LARGE, "report of %zu bytes is too large to store", r->raw_len);
    intake_entry *e = xcalloc(1, sizeof *e);
    e->r = r;
    e->done = done;
    e->ctx = ctx;
    double now = intake_now_ms();
    e->deadline_ms = store_deadline_get();
    if (e->deadline_ms <= 0)
        e->deadline_ms = now + store_timeout_ms(q->s);
    pthread_mutex_lock(&q->mu);
    assert(!q->stop);
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->queued++;
    /* a committer gathering a batch is woken once, by the report that completes it */
    bool wake = q->gather_want == 0 || q->queued >= q->gather_want;
    pthread_mutex_unlock(&q->mu);
    /* after the unlock, so that the committer it wakes does not block on `mu` at once */
    if (wake)
        pthread_cond_signal(&q->cv);
    return ERR_OK;
}

/* What store_intake_insert waits on. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    err_code rc;
    char *id_out;
    err_info *err;
} intake_wait;

static void insert_done(void *ctx, err_code rc, const char *id, const err_info *err)
{
    intake_wait *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    memcpy(w->id_out, id, strlen(id) + 1);
    if (rc != ERR_OK && w->err)
        *w->err = *err;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

err_code store_intake_insert(char id_out[37], store_intake *q, const store_report_new *r,
                             err_info *err)
{
    id_out[0] = '\0';
    if (r->missing_uuids_json || r->error)
        return store_report_insert(id_out, q->s, r, err);
    intake_wait w = {.id_out = id_out, .err = err};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    err_code rc = store_intake_submit(q, r, insert_done, &w, err);
    if (rc == ERR_OK) {
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        rc = w.rc;
        pthread_mutex_unlock(&w.mu);
    }
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return rc;
}
