/*
 * store_samples - sample batches, call-site counting and the call sites API in SQL (see
 * store_samples.h). Like store_issues, a worker's whole batch of changes travels as one JSON
 * parameter per statement (json_to_recordset), so a commit is a handful of statements
 * whatever the number of call sites.
 */
#include "store/store_samples.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "store/store_internal.h"

/* ---- intake ---------------------------------------------------------------------------- */

static const store_stmt SQL_INSERT = {"samples_insert",
    "INSERT INTO sample_batches (app, batch_id, sha256, build, device, samples, calls, canonical, "
    "project_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
    "ON CONFLICT (project_id, app, batch_id) WHERE batch_id IS NOT NULL DO NOTHING RETURNING id"};
static const store_stmt SQL_EXISTING = {"samples_existing",
    "SELECT sha256 FROM sample_batches WHERE project_id = $3 AND app = $1 AND batch_id = $2"};

typedef struct {
    const store_sample_batch *b;
    store_batch_outcome *outcome;
} insert_ctx;

static err_code do_insert(pconn *c, void *vctx, err_info *err)
{
    insert_ctx *x = vctx;
    const store_sample_batch *b = x->b;
    char samples[24], calls[24], project[24];
    snprintf(samples, sizeof samples, "%lld", (long long)b->samples);
    snprintf(calls, sizeof calls, "%lld", (long long)b->calls);
    snprintf(project, sizeof project, "%lld",
             (long long)(b->project_id ? b->project_id : STORE_PROJECT_DEFAULT));
    const char *values[9] = {b->app, b->batch_id, b->sha256, b->build, b->device, samples, calls,
                             b->canonical, project};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_INSERT, 9, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    int stored = PQntuples(res);
    PQclear(res);
    if (stored == 1) {
        *x->outcome = STORE_BATCH_STORED;
        return ERR_OK;
    }
    /* batch_id taken: the same content is a retry, other content a client bug */
    const char *existing[3] = {b->app, b->batch_id, project};
    rc = store_exec(&res, c, &SQL_EXISTING, 3, existing, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    bool same = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), b->sha256) == 0;
    PQclear(res);
    if (!same)
        return err_set(err, ERR_CONFLICT, "batch_id: \"%.128s\" was already used for a batch "
                       "with other samples", b->batch_id);
    *x->outcome = STORE_BATCH_RETRY;
    return ERR_OK;
}

err_code store_samples_insert(store_batch_outcome *outcome, store *s, const store_sample_batch *b,
                              err_info *err)
{
    insert_ctx x = {b, outcome};
    return store_run(s, do_insert, &x, err);
}

/* ---- counting -------------------------------------------------------------------------- */

struct store_sample_work {
    store *s;
    pconn *c;
    int64_t *batch_ids, *pending_ids;
    size_t nbatches, npending;
};

static const store_stmt SQL_CLAIM_BATCHES = {"samples_claim_batches",
    "SELECT id::text, " STORE_TS_US("received_at") ", "
    "to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), project_id::text, sha256 "
    "FROM sample_batches WHERE status = 'received' "
    "AND id <> ALL(string_to_array($2, ',')::bigint[]) "
    "ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"};
static const store_stmt SQL_CLAIM_PENDING = {"samples_claim_pending",
    "SELECT id::text, app, build, day::text, version, sample, count::text, "
    "array_to_string(devices, chr(31)), " STORE_TS_US("first_seen") ", " STORE_TS_US("last_seen") ", "
    "project_id::text "
    "FROM callsite_pending WHERE status = 'ready' "
    "AND id <> ALL(string_to_array($2, ',')::bigint[]) "
    "ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"};

static const store_stmt SQL_CANONICAL = {"samples_canonical",
    "SELECT canonical FROM sample_batches WHERE id = $1::bigint"};

err_code store_samples_canonical(const char **text, size_t *len, store_sample_work *w, int64_t id,
                                 arena *a, err_info *err)
{
    char idv[24];
    snprintf(idv, sizeof idv, "%lld", (long long)id);
    const char *values[1] = {idv};
    PGresult *res;
    *text = NULL;
    *len = 0;
    err_code rc = store_exec(&res, w->c, &SQL_CANONICAL, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
        rc = err_set(err, ERR_INTERNAL, "sample batch %lld has no canonical form", (long long)id);
    else
        *text = store_dup(a, res, 0, 0, err, &rc);
    if (rc == ERR_OK)
        *len = (size_t)PQgetlength(res, 0, 0);
    PQclear(res);
    return rc;
}

void store_samples_abort(store_sample_work *w)
{
    if (w == NULL)
        return;
    store_release(w->s, w->c);   /* rolls the open transaction back */
    free(w->batch_ids);
    free(w->pending_ids);
    free(w);
}

err_code store_samples_claim(store_sample_work **out, const store_claimed_batch **batches,
                             size_t *nbatches, const store_claimed_pending **pending,
                             size_t *npending, store *s, size_t max, const char *skip_batches,
                             const char *skip_pending, arena *a, err_info *err)
{
    *out = NULL;
    *batches = NULL;
    *pending = NULL;
    *nbatches = *npending = 0;
    store_sample_work *w = xcalloc(1, sizeof *w);
    w->s = s;
    err_code rc = store_acquire(&w->c, s, err);
    if (rc != ERR_OK) {
        free(w);
        return rc;
    }
    rc = store_command(w->c, "BEGIN", "claiming sample batches", err);
    /* A commit lost in a database crash only puts its batches back in the queue (all of it
     * or nothing): no need to wait for the WAL flush. */
    if (rc == ERR_OK)
        rc = store_command(w->c, "SET LOCAL synchronous_commit TO off", "claiming sample batches",
                           err);
    char limit[24];
    snprintf(limit, sizeof limit, "%zu", max);
    const char *values[2] = {limit, skip_batches ? skip_batches : ""};
    PGresult *res = NULL;
    store_claimed_batch *bs = NULL;
    store_claimed_pending *ps = NULL;
    if (rc == ERR_OK)
        rc = store_exec(&res, w->c, &SQL_CLAIM_BATCHES, 2, values, NULL, NULL, err);
    size_t nb = res ? (size_t)PQntuples(res) : 0;
    if (rc == ERR_OK && nb > 0) {
        bs = arena_alloc_array(a, nb, sizeof *bs, err);
        w->batch_ids = xcalloc(nb, sizeof *w->batch_ids);
        if (bs == NULL)
            rc = ERR_TOO_LARGE;
        for (size_t i = 0; rc == ERR_OK && i < nb; i++) {
            int r = (int)i;
            bs[i].id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
            w->batch_ids[i] = bs[i].id;
            bs[i].received_at = store_dup(a, res, r, 1, err, &rc);
            bs[i].day = store_dup(a, res, r, 2, err, &rc);
            bs[i].project_id = strtoll(PQgetvalue(res, r, 3), NULL, 10);
            bs[i].sha256 = store_dup(a, res, r, 4, err, &rc);
        }
        w->nbatches = nb;
    }
    PQclear(res);
    res = NULL;
    values[1] = skip_pending ? skip_pending : "";
    if (rc == ERR_OK)
        rc = store_exec(&res, w->c, &SQL_CLAIM_PENDING, 2, values, NULL, NULL, err);
    size_t np = res ? (size_t)PQntuples(res) : 0;
    if (rc == ERR_OK && np > 0) {
        ps = arena_alloc_array(a, np, sizeof *ps, err);
        w->pending_ids = xcalloc(np, sizeof *w->pending_ids);
        if (ps == NULL)
            rc = ERR_TOO_LARGE;
        for (size_t i = 0; rc == ERR_OK && i < np; i++) {
            int r = (int)i;
            store_claimed_pending *p = &ps[i];
            p->id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
            w->pending_ids[i] = p->id;
            p->app = store_dup(a, res, r, 1, err, &rc);
            p->build = store_dup(a, res, r, 2, err, &rc);
            p->day = store_dup(a, res, r, 3, err, &rc);
            p->version = store_dup(a, res, r, 4, err, &rc);
            p->sample = store_dup(a, res, r, 5, err, &rc);
            p->sample_len = (size_t)PQgetlength(res, r, 5);
            p->count = strtoll(PQgetvalue(res, r, 6), NULL, 10);
            p->devices = store_dup(a, res, r, 7, err, &rc);
            p->first_seen = store_dup(a, res, r, 8, err, &rc);
            p->last_seen = store_dup(a, res, r, 9, err, &rc);
            p->project_id = strtoll(PQgetvalue(res, r, 10), NULL, 10);
        }
        w->npending = np;
    }
    PQclear(res);
    if (rc != ERR_OK || nb + np == 0) {
        store_samples_abort(w);
        return rc;
    }
    *out = w;
    *batches = bs;
    *nbatches = nb;
    *pending = ps;
    *npending = np;
    return ERR_OK;
}

/* Call sites first (one row per (app, tag, key): DISTINCT ON, or ON CONFLICT would meet a
 * row twice), then their per-build-and-day rows, joined back by the unique key. Only one row
 * of each call site carries its frames and stack (do_commit): DISTINCT ON keeps that one
 * (frames IS NULL sorts it first), and the days' statement gets neither. Parsing the stack of
 * every (call site, build, day) row twice was most of a commit's time.
 * version_key runs once per distinct build (the `v` CTE: the commit's builds and the first
 * builds stored for its call sites), not once per row: a commit's hundreds of (call site,
 * build, day) rows name a handful of builds. A first build another transaction stored since
 * this statement's snapshot is not in `v`: keyed on the spot (coalesce stops at the first
 * value that is not NULL, CASE at the first true branch). */
static const store_stmt SQL_UPSERT_CALLSITES = {"samples_upsert_callsites",
    "WITH t AS (SELECT coalesce(t.project_id, 1) AS project_id, t.app, t.tag, t.key, t.frames, "
    "t.stack, t.build, t.first_seen, t.last_seen, t.n "
    "FROM json_to_recordset($1::json) AS t(project_id bigint, app text, tag text, key text, "
    "frames jsonb, stack jsonb, build text, first_seen timestamptz, last_seen timestamptz, "
    "n bigint)), "
    "v AS MATERIALIZED (SELECT u.b, version_key(u.b) AS k FROM (SELECT build FROM t UNION "
    "SELECT c0.first_build FROM callsites c0 JOIN (SELECT DISTINCT project_id, app, tag, key "
    "FROM t) n ON c0.project_id = n.project_id AND c0.app = n.app AND c0.tag = n.tag "
    "AND c0.key = n.key) u(b)) "
    "INSERT INTO callsites AS c (project_id, app, tag, key, frames, stack, first_build, "
    "first_seen, last_seen, count) "
    "SELECT DISTINCT ON (t.project_id, t.app, t.tag, t.key) t.project_id, t.app, t.tag, t.key, "
    "t.frames, t.stack, "
    "first_value(t.build) OVER (PARTITION BY t.project_id, t.app, t.tag, t.key "
    "ORDER BY v.k, t.build), "
    "min(t.first_seen) OVER w, max(t.last_seen) OVER w, sum(t.n) OVER w "
    "FROM t JOIN v ON v.b = t.build "
    "WINDOW w AS (PARTITION BY t.project_id, t.app, t.tag, t.key) "
    "ORDER BY t.project_id, t.app, t.tag, t.key, t.frames IS NULL "
    "ON CONFLICT (project_id, app, tag, key) DO UPDATE SET "
    "count = c.count + EXCLUDED.count, "
    "first_seen = least(c.first_seen, EXCLUDED.first_seen), "
    "last_seen = greatest(c.last_seen, EXCLUDED.last_seen), "
    "first_build = CASE WHEN EXCLUDED.first_build = c.first_build THEN c.first_build "
    "WHEN ((SELECT v.k FROM v WHERE v.b = EXCLUDED.first_build), EXCLUDED.first_build) < "
    "(coalesce((SELECT v.k FROM v WHERE v.b = c.first_build), version_key(c.first_build)), "
    "c.first_build) THEN EXCLUDED.first_build ELSE c.first_build END"};

static const store_stmt SQL_UPSERT_DAYS = {"samples_upsert_days",
    "INSERT INTO callsite_days AS d (callsite_id, build, day, version, count, devices, "
    "first_seen, last_seen) "
    "SELECT c.id, t.build, t.day, t.version, t.n, "
    "ARRAY(SELECT DISTINCT x FROM json_array_elements_text(t.devices) x ORDER BY 1), "
    "t.first_seen, t.last_seen "
    "FROM json_to_recordset($1::json) AS t(project_id bigint, app text, tag text, key text, "
    "build text, day date, version text, n bigint, devices json, first_seen timestamptz, "
    "last_seen timestamptz) "
    "JOIN callsites c ON c.project_id = coalesce(t.project_id, 1) AND c.app = t.app "
    "AND c.tag = t.tag AND c.key = t.key "
    "ORDER BY c.id, t.build, t.day "
    "ON CONFLICT (callsite_id, build, day) DO UPDATE SET "
    "count = d.count + EXCLUDED.count, version = EXCLUDED.version, "
    "devices = ARRAY(SELECT DISTINCT x FROM unnest(d.devices || EXCLUDED.devices) x ORDER BY 1), "
    "first_seen = least(d.first_seen, EXCLUDED.first_seen), "
    "last_seen = greatest(d.last_seen, EXCLUDED.last_seen)"};

/* The distinct devices of each call site (migrations/0024): the (call site, device) pairs
 * of the days' rows, each looked up once (most are known: a join, not a conflict a pair),
 * the unknown ones inserted and added to callsites.devices, a known one's last_day moved to
 * a later day. The call sites are locked already, by the upsert above in this transaction: no
 * other transaction adds pairs of theirs meanwhile (ON CONFLICT DO NOTHING all the same). */
static const store_stmt SQL_UPSERT_DEVICES = {"samples_upsert_devices",
    "WITH t AS ("
    " SELECT c.id AS callsite_id, x AS device, max(t.day) AS day "
    " FROM json_to_recordset($1::json) AS t(project_id bigint, app text, tag text, key text, "
    " day date, devices json) "
    " JOIN callsites c ON c.project_id = coalesce(t.project_id, 1) AND c.app = t.app "
    " AND c.tag = t.tag AND c.key = t.key "
    " CROSS JOIN LATERAL json_array_elements_text(t.devices) x "
    " GROUP BY 1, 2), "
    "j AS ("
    " SELECT t.callsite_id, t.device, t.day, d.last_day FROM t LEFT JOIN callsite_devices d "
    " ON d.callsite_id = t.callsite_id AND d.device = t.device), "
    "ins AS ("
    " INSERT INTO callsite_devices (callsite_id, device, last_day) "
    " SELECT callsite_id, device, day FROM j WHERE last_day IS NULL ORDER BY 1, 2 "
    " ON CONFLICT (callsite_id, device) DO NOTHING RETURNING callsite_id), "
    "later AS ("
    " UPDATE callsite_devices d SET last_day = j.day FROM j "
    " WHERE j.last_day < j.day AND d.callsite_id = j.callsite_id AND d.device = j.device) "
    "UPDATE callsites c SET devices = c.devices + n.n "
    "FROM (SELECT callsite_id, count(*) AS n FROM ins GROUP BY 1) n "
    "WHERE c.id = n.callsite_id"};

static const store_stmt SQL_DELETE_PENDING = {"samples_delete_pending",
    "DELETE FROM callsite_pending WHERE id = ANY(string_to_array($1, ',')::bigint[])"};

static const store_stmt SQL_UPSERT_PENDING = {"samples_upsert_pending",
    "INSERT INTO callsite_pending AS p (project_id, app, stack_key, build, day, version, sample, "
    "count, devices, first_seen, last_seen, missing_uuids) "
    "SELECT coalesce(t.project_id, 1), t.app, t.stack_key, t.build, t.day, t.version, t.sample, "
    "t.n, "
    "ARRAY(SELECT DISTINCT x FROM json_array_elements_text(t.devices) x ORDER BY 1), "
    "t.first_seen, t.last_seen, "
    "ARRAY(SELECT u::uuid FROM json_array_elements_text(t.missing) u) "
    "FROM json_to_recordset($1::json) AS t(project_id bigint, app text, stack_key text, "
    "build text, day date, version text, sample text, n bigint, devices json, "
    "first_seen timestamptz, last_seen timestamptz, missing json) "
    "ORDER BY 1, t.app, t.stack_key, t.build, t.day "
    "ON CONFLICT (project_id, app, stack_key, build, day) DO UPDATE SET "
    "count = p.count + EXCLUDED.count, version = EXCLUDED.version, "
    "devices = ARRAY(SELECT DISTINCT x FROM unnest(p.devices || EXCLUDED.devices) x ORDER BY 1), "
    "first_seen = least(p.first_seen, EXCLUDED.first_seen), "
    "last_seen = greatest(p.last_seen, EXCLUDED.last_seen), "
    "missing_uuids = EXCLUDED.missing_uuids, status = 'waiting'"};

static const store_stmt SQL_MARK_COUNTED = {"samples_mark_counted",
    "UPDATE sample_batches SET status = 'counted', canonical = NULL, counted_at = now() "
    "WHERE id = ANY(string_to_array($1, ',')::bigint[])"};

static void kv(buf *b, const char *key, const char *value)
{
    if (b->data[b->len - 1] != '{')
        buf_putc(b, ',');
    buf_append_json_str(b, key, strlen(key));
    buf_putc(b, ':');
    if (value == NULL)
        buf_append_str(b, "null");
    else
        buf_append_json_str(b, value, strlen(value));
}

static void kraw(buf *b, const char *key, const char *raw)
{
    if (b->data[b->len - 1] != '{')
        buf_putc(b, ',');
    buf_printf(b, "\"%s\":%s", key, raw ? raw : "null");
}

static void id_list(buf *b, const int64_t *ids, size_t n)
{
    b->len = 0;
    buf_reserve(b, 1);
    b->data[0] = '\0';
    for (size_t i = 0; i < n; i++)
        buf_printf(b, "%s%lld", i ? "," : "", (long long)ids[i]);
}

/* Orders call site adds by their call site (project, app, tag, key). */
static int add_cmp(const void *va, const void *vb)
{
    const store_callsite_add *a = *(const store_callsite_add *const *)va;
    const store_callsite_add *b = *(const store_callsite_add *const *)vb;
    if (a->project_id != b->project_id)
        return a->project_id < b->project_id ? -1 : 1;
    int c = strcmp(a->app, b->app);
    if (c == 0)
        c = strcmp(a->tag, b->tag);
    return c != 0 ? c : strcmp(a->key, b->key);
}

/* carry[i]: whether adds[i] is the first of its call site's rows (the one that carries its
 * frames and stack); nadds entries, the caller frees it. */
static bool *adds_first_of_callsite(const store_callsite_add *adds, size_t nadds)
{
    bool *carry = xcalloc(nadds, sizeof *carry);
    const store_callsite_add **by = xcalloc(nadds, sizeof *by);
    for (size_t i = 0; i < nadds; i++)
        by[i] = &adds[i];
    qsort(by, nadds, sizeof *by, add_cmp);
    for (size_t i = 0; i < nadds; i++)
        carry[by[i] - adds] = i == 0 || add_cmp(&by[i - 1], &by[i]) != 0;
    free(by);
    return carry;
}

/* One (call site, build, day) add as a json_to_recordset row; frames and stack only when
 * `carry`. */
static void add_json(buf *b, const store_callsite_add *x, bool carry)
{
    buf_printf(b, "\"project_id\":%lld", (long long)x->project_id);
    kv(b, "app", x->app);
    kv(b, "tag", x->tag);
    kv(b, "key", x->key);
    if (carry) {
        kraw(b, "frames", x->frames_json);
        kraw(b, "stack", x->stack_json);
    }
    kv(b, "build", x->build);
    kv(b, "day", x->day);
    kv(b, "version", x->version ? x->version : "");
    buf_printf(b, ",\"n\":%lld", (long long)x->count);
    kraw(b, "devices", x->devices_json);
    kv(b, "first_seen", x->first_seen);
    kv(b, "last_seen", x->last_seen);
}

static err_code do_commit(store_sample_work *w, const store_callsite_add *adds, size_t nadds,
                          const store_pending_add *pend, size_t npend, err_info *err)
{
    buf b;
    buf_init(&b);
    err_code rc = ERR_OK;
    const char *values[1];
    if (nadds > 0) {
        bool *carry = adds_first_of_callsite(adds, nadds);
        for (int days = 0; days < 2 && rc == ERR_OK; days++) {
            b.len = 0;
            buf_putc(&b, '[');
            for (size_t i = 0; i < nadds; i++) {
                buf_append_str(&b, i ? ",{" : "{");
                add_json(&b, &adds[i], !days && carry[i]);
                buf_putc(&b, '}');
            }
            buf_putc(&b, ']');
            values[0] = (const char *)b.data;
            rc = store_exec(NULL, w->c, days ? &SQL_UPSERT_DAYS : &SQL_UPSERT_CALLSITES, 1,
                            values, NULL, NULL, err);
            /* the days' rows again, for their devices */
            if (days && rc == ERR_OK)
                rc = store_exec(NULL, w->c, &SQL_UPSERT_DEVICES, 1, values, NULL, NULL, err);
        }
        free(carry);
        if (rc != ERR_OK)
            goto done;
    }
    if (w->npending > 0) {
        id_list(&b, w->pending_ids, w->npending);
        values[0] = (const char *)b.data;
        rc = store_exec(NULL, w->c, &SQL_DELETE_PENDING, 1, values, NULL, NULL, err);
        if (rc != ERR_OK)
            goto done;
    }
    if (npend > 0) {
        b.len = 0;
        buf_putc(&b, '[');
        for (size_t i = 0; i < npend; i++) {
            const store_pending_add *x = &pend[i];
            buf_append_str(&b, i ? ",{" : "{");
            buf_printf(&b, "\"project_id\":%lld", (long long)x->project_id);
            kv(&b, "app", x->app);
            kv(&b, "stack_key", x->stack_key);
            kv(&b, "build", x->build);
            kv(&b, "day", x->day);
            kv(&b, "version", x->version ? x->version : "");
            kv(&b, "sample", x->sample);
            buf_printf(&b, ",\"n\":%lld", (long long)x->count);
            kraw(&b, "devices", x->devices_json);
            kv(&b, "first_seen", x->first_seen);
            kv(&b, "last_seen", x->last_seen);
            kraw(&b, "missing", x->missing_json);
            buf_putc(&b, '}');
        }
        buf_putc(&b, ']');
        values[0] = (const char *)b.data;
        rc = store_exec(NULL, w->c, &SQL_UPSERT_PENDING, 1, values, NULL, NULL,
                        err);
        if (rc != ERR_OK)
            goto done;
    }
    if (w->nbatches > 0) {
        id_list(&b, w->batch_ids, w->nbatches);
        values[0] = (const char *)b.data;
        rc = store_exec(NULL, w->c, &SQL_MARK_COUNTED, 1, values, NULL, NULL, err);
        if (rc != ERR_OK)
            goto done;
    }
    rc = store_command(w->c, "COMMIT", "committing call site counts", err);
done:
    buf_reset(&b);
    return rc;
}

err_code store_samples_commit(store_sample_work *w, const store_callsite_add *adds, size_t nadds,
                              const store_pending_add *pend, size_t npend, err_info *err)
{
    err_code rc = do_commit(w, adds, nadds, pend, npend, err);
    store_samples_abort(w);   /* releases the connection; rolls back if COMMIT did not happen */
    return rc;
}

/* An App Store dSYM whose names are still hidden is no release: the stacks wait for its map
 * (store_dsym_reveal releases them). */
static const store_stmt SQL_SWEEP = {"samples_sweep",
    "UPDATE callsite_pending p SET status = 'ready' WHERE p.status = 'waiting' "
    "AND EXISTS (SELECT 1 FROM dsyms d WHERE d.uuid = ANY(p.missing_uuids) "
    "AND d.hidden_names = 0)"};

/* Counted batches are kept (without their samples) only to recognize a retried batch_id. */
static const store_stmt SQL_EXPIRE_BATCHES = {"samples_expire_batches",
    "DELETE FROM sample_batches WHERE status = 'counted' "
    "AND counted_at < now() - interval '" STORE_SAMPLES_BATCH_ID_DAYS " days'"};

static err_code do_sweep(pconn *c, void *vctx, err_info *err)
{
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_SWEEP, 0, NULL, NULL, NULL, err);
    if (rc == ERR_OK) {
        *(int64_t *)vctx = strtoll(PQcmdTuples(res), NULL, 10);
        PQclear(res);
        rc = store_exec(NULL, c, &SQL_EXPIRE_BATCHES, 0, NULL, NULL, NULL, err);
    }
    return rc;
}

err_code store_samples_sweep(int64_t *released, store *s, err_info *err)
{
    *released = 0;
    return store_run(s, do_sweep, released, err);
}

/* ---- the call sites API ---------------------------------------------------------------- */

/* $1 tag, $2 build, $3 version, $4 new_in_build, $5 q, $6 sort, $7 cursor value, $8 cursor
 * id, $9 limit, $10 app, $11 project id (0 = any). The sort key is numeric so one keyset comparison serves all sorts
 * (first_seen as microseconds since the epoch). Devices: the maintained count without a build
 * or version filter, else counted over the day rows those select. */
static const char SQL_LIST[] =
    "WITH f AS ("
    " SELECT d.callsite_id AS id, sum(d.count) AS n, min(d.first_seen) AS fs, "
    " max(d.last_seen) AS ls, array_agg(DISTINCT d.build) AS builds, "
    " max(c.devices) AS all_devices "
    " FROM callsite_days d JOIN callsites c ON c.id = d.callsite_id "
    " WHERE ($1::text IS NULL OR c.tag = $1) AND ($2::text IS NULL OR d.build = $2) "
    " AND ($3::text IS NULL OR d.version = $3) AND ($4::text IS NULL OR c.first_build = $4) "
    " AND ($10::text IS NULL OR c.app = $10) "
    " AND ($11::bigint = 0 OR c.project_id = $11::bigint) "
    " AND ($5::text IS NULL OR strpos(lower(c.tag), lower($5)) > 0 "
    "      OR strpos(lower(c.frames::text), lower($5)) > 0) "
    " GROUP BY d.callsite_id), "
    "g AS ("
    " SELECT f.*, CASE WHEN $2::text IS NULL AND $3::text IS NULL THEN f.all_devices "
    "  ELSE (SELECT count(DISTINCT x) FROM callsite_days d2, unnest(d2.devices) x "
    "  WHERE d2.callsite_id = f.id AND ($2::text IS NULL OR d2.build = $2) "
    "  AND ($3::text IS NULL OR d2.version = $3)) END AS devices FROM f), "
    "h AS ("
    " SELECT g.*, CASE $6::text WHEN 'devices' THEN g.devices::numeric "
    " WHEN 'first_seen' THEN floor(extract(epoch FROM g.fs) * 1000000)::numeric "
    " ELSE g.n::numeric END AS sk FROM g), "
    "page AS ("
    " SELECT h.*, c.app, c.tag, c.frames, c.stack, c.first_build "
    " FROM h JOIN callsites c ON c.id = h.id "
    " WHERE $7::numeric IS NULL OR (h.sk, h.id) < ($7::numeric, $8::bigint) "
    " ORDER BY h.sk DESC, h.id DESC LIMIT $9::int + 1), "
    /* each build of the page keyed once, not once per call site that has it (MATERIALIZED:
     * a CTE used once would be inlined into the subquery that runs per call site) */
    "bk AS MATERIALIZED (SELECT u.b, version_key(u.b) AS k "
    " FROM (SELECT DISTINCT unnest(builds) AS b FROM page) u) "
    "SELECT id, app, tag, frames::text, stack::text, n, devices, "
    " coalesce((SELECT array_to_json(array_agg(bk.b ORDER BY bk.k, bk.b)) "
    " FROM unnest(page.builds) x JOIN bk ON bk.b = x), '[]')::text, "
    " first_build, " STORE_TS("fs") ", " STORE_TS("ls") ", sk::text "
    "FROM page ORDER BY sk DESC, id DESC";
/* $1 build, $2 version, $3 app, $4 project id (0 = any): what the filters leave waiting for
 * a dSYM */
static const char SQL_PENDING[] =
    "SELECT count(*), coalesce(sum(count), 0) FROM callsite_pending p "
    "WHERE ($1::text IS NULL OR p.build = $1) AND ($2::text IS NULL OR p.version = $2) "
    "AND ($3::text IS NULL OR p.app = $3) AND ($4::bigint = 0 OR p.project_id = $4::bigint)";

typedef struct {
    const char *const *values;   /* SQL_LIST's */
    unsigned limit;
    store_callsite_page *out;
    arena *a;
} list_ctx;

static err_code do_callsites_list(pconn *c, void *vctx, err_info *err)
{
    list_ctx *q = vctx;
    store_callsite_page *o = q->out;
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "listing call sites", SQL_LIST, 11, q->values, 0, err);
    if (rc != ERR_OK)
        return rc;
    size_t got = (size_t)PQntuples(res), n = got > q->limit ? q->limit : got;
    store_callsite *rows = arena_alloc_array(q->a, n ? n : 1, sizeof *rows, err);
    if (rows == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        int r = (int)i;
        store_callsite *cs = &rows[i];
        cs->id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        cs->app = store_dup(q->a, res, r, 1, err, &rc);
        cs->tag = store_dup(q->a, res, r, 2, err, &rc);
        cs->frames_json = store_dup(q->a, res, r, 3, err, &rc);
        cs->stack_json = store_dup(q->a, res, r, 4, err, &rc);
        cs->count = strtoll(PQgetvalue(res, r, 5), NULL, 10);
        cs->devices = strtoll(PQgetvalue(res, r, 6), NULL, 10);
        cs->builds_json = store_dup(q->a, res, r, 7, err, &rc);
        cs->first_seen_build = store_dup(q->a, res, r, 8, err, &rc);
        cs->first_seen = store_dup(q->a, res, r, 9, err, &rc);
        cs->last_seen = store_dup(q->a, res, r, 10, err, &rc);
    }
    if (rc == ERR_OK && got > n) {
        o->next_cursor = arena_sprintf(q->a, err, "%s:%lld", PQgetvalue(res, (int)n - 1, 11),
                                       (long long)rows[n - 1].id);
        if (o->next_cursor == NULL)
            rc = ERR_TOO_LARGE;
    }
    PQclear(res);
    if (rc != ERR_OK)
        return rc;
    o->callsites = rows;
    o->n = n;
    /* build, version, app, project */
    const char *pvalues[4] = {q->values[1], q->values[2], q->values[9], q->values[10]};
    rc = store_exec_sql(&res, c, "counting pending stacks", SQL_PENDING, 4, pvalues, 0, err);
    if (rc != ERR_OK)
        return rc;
    o->pending_stacks = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    o->pending_calls = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return ERR_OK;
}

err_code store_callsites_list(store_callsite_page *out, store *s, const store_callsite_query *q,
                              arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    const char *sort = q->sort ? q->sort : "count";
    if (strcmp(sort, "count") != 0 && strcmp(sort, "first_seen") != 0 &&
        strcmp(sort, "devices") != 0)
        return err_set(err, ERR_INVALID, "sort: must be count, first_seen or devices (got "
                       "\"%.40s\")", sort);
    if (q->limit < 1 || q->limit > 1000)
        return err_set(err, ERR_INVALID, "limit: must be from 1 to 1000");
    const char *cursor_value = NULL, *cursor_id = NULL;
    if (q->cursor) {
        /* "<sort value>:<id>", both decimal */
        const char *colon = strchr(q->cursor, ':');
        size_t vlen = colon ? (size_t)(colon - q->cursor) : 0;
        bool ok = colon && vlen > 0 && vlen < 40 && colon[1] != '\0' &&
                  strspn(q->cursor, "0123456789") == vlen &&
                  strspn(colon + 1, "0123456789") == strlen(colon + 1) && strlen(colon + 1) < 20;
        if (!ok)
            return err_set(err, ERR_INVALID, "cursor: not a next_cursor this API gave");
        cursor_value = arena_strndup(a, q->cursor, vlen, err);
        cursor_id = colon + 1;
        if (cursor_value == NULL)
            return ERR_TOO_LARGE;
    }
    char limit[16], project[24];
    snprintf(limit, sizeof limit, "%u", q->limit);
    snprintf(project, sizeof project, "%lld", (long long)q->project_id);
    const char *values[11] = {q->tag, q->build, q->version, q->new_in_build, q->q, sort,
                              cursor_value, cursor_id, limit, q->app, project};
    list_ctx ctx = {values, q->limit, out, a};
    return store_run(s, do_callsites_list, &ctx, err);
}

static const store_stmt SQL_COUNTS = {"samples_counts",
    "SELECT (SELECT count(*) FROM sample_batches WHERE status = 'received'), "
    "(SELECT count(*) FROM callsite_pending), "
    "(SELECT coalesce(sum(count), 0) FROM callsite_pending)"};

static err_code do_counts(pconn *c, void *vctx, err_info *err)
{
    store_samples_stats *out = vctx;
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_COUNTS, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    out->received = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    out->pending_stacks = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    out->pending_calls = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    PQclear(res);
    return ERR_OK;
}

err_code store_samples_counts(store_samples_stats *out, store *s, err_info *err)
{
    memset(out, 0, sizeof *out);
    return store_run(s, do_counts, out, err);
}
