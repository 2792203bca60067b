/*
 * store_queue - the processing queue in SQL (see store_queue.h): claiming received reports,
 * committing what the workers made of them in one transaction. Batches travel as one JSON parameter read by json_to_recordset, so that a
 * batch of reports costs a handful of statements, not a handful per report. Upserts list
 * issues in (project, app, fingerprint) order, so concurrent batches lock rows in the same
 * order.
 */
#include "store/store_queue.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "base/xalloc.h"
#include "store/store_internal.h"

/* ---- the work queue ------------------------------------------------------------------- */

struct store_work {
    store *s;
    pconn *c;
    store_claimed *rows;
    size_t n;
};

/* Prepared, and run under a generic plan (the claim's transaction sets plan_cache_mode):
 * planning a query of the partitioned reports table opens every partition and its indexes,
 * which made an idle worker's poll (every 50-200 ms, found nothing) cost ~0.8 ms of
 * Postgres's CPU, most of it planning; the generic plan is made once per connection. */
static const store_stmt STMT_CLAIM = {
    "work_claim",
    "SELECT id::text, raw, coalesce(issue_id, 0)::text, fingerprint, app, " STORE_TS_US("received_at")
    ", to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), attempts::text, project_id::text, "
    "content_type FROM reports WHERE status = 'received' ORDER BY received_at "
    "LIMIT $1 FOR UPDATE SKIP LOCKED"};

void store_work_abort(store_work *w)
{
    if (w == NULL)
        return;
    store_release(w->s, w->c);   /* rolls the open transaction back */
    free(w);
}

err_code store_work_claim(store_work **out, const store_claimed **rows, size_t *n, store *s,
                          size_t max, arena *a, err_info *err)
{
    *out = NULL;
    *rows = NULL;
    *n = 0;
    store_work *w = xcalloc(1, sizeof *w);
    w->s = s;
    err_code rc = store_acquire(&w->c, s, err);
    if (rc != ERR_OK) {
        free(w);
        return rc;
    }
    /* Losing a batch's commit in a database crash only puts its reports back in the queue
     * (all of it or nothing): no need to wait for the WAL flush. One round trip. */
    rc = store_command(w->c, "BEGIN; SET LOCAL synchronous_commit TO off; "
                       "SET LOCAL plan_cache_mode TO force_generic_plan", "claiming reports", err);
    char limit[24];
    snprintf(limit, sizeof limit, "%zu", max);
    const char *values[1] = {limit};
    PGresult *res = NULL;
    if (rc == ERR_OK)
        /* binary results: raw arrives as its bytes; every other column is text anyway */
        rc = store_exec_format(&res, w->c, &STMT_CLAIM, 1, values, NULL, NULL, 1, err);
    size_t got = res ? (size_t)PQntuples(res) : 0;
    if (rc == ERR_OK && got > 0) {
        w->rows = arena_alloc_array(a, got, sizeof *w->rows, err);
        if (w->rows == NULL)
            rc = ERR_TOO_LARGE;
        for (size_t i = 0; rc == ERR_OK && i < got; i++) {
            store_claimed *r = &w->rows[i];
            int row = (int)i;
            snprintf(r->id, sizeof r->id, "%s", PQgetvalue(res, row, 0));
            r->raw_len = (size_t)PQgetlength(res, row, 1);
            uint8_t *raw = arena_alloc(a, r->raw_len + 1, err);
            if (raw == NULL) {
                rc = ERR_TOO_LARGE;
                break;
            }
            memcpy(raw, PQgetvalue(res, row, 1), r->raw_len);
            r->raw = raw;
            r->issue_id = strtoll(PQgetvalue(res, row, 2), NULL, 10);
            r->fingerprint = store_dup(a, res, row, 3, err, &rc);
            r->app = store_dup(a, res, row, 4, err, &rc);
            r->received_at = store_dup(a, res, row, 5, err, &rc);
            r->day = store_dup(a, res, row, 6, err, &rc);
            r->attempts = atoi(PQgetvalue(res, row, 7));
            r->project_id = strtoll(PQgetvalue(res, row, 8), NULL, 10);
            r->content_type = store_dup(a, res, row, 9, err, &rc);
        }
        w->n = got;
    }
    PQclear(res);
    if (rc != ERR_OK || got == 0) {
        store_work_abort(w);
        return rc;
    }
    *out = w;
    *rows = w->rows;
    *n = w->n;
    return ERR_OK;
}

static const char SQL_UPSERT_ISSUES[] =
    "INSERT INTO issues AS i (project_id, app, kind, fingerprint, title, culprit, exception, "
    "basis, provisional, frames, first_seen, last_seen, count, versions, last_report) "
    "SELECT t.project_id, t.app, t.kind, t.fingerprint, t.title, t.culprit, t.exception, "
    "t.basis, t.provisional, t.frames, t.first_seen, t.last_seen, t.n, "
    "ARRAY(SELECT DISTINCT v FROM unnest(t.versions) v ORDER BY 1), t.last_report "
    "FROM json_to_recordset($1::json) AS t(project_id bigint, app text, kind text, "
    "fingerprint text, title text, culprit text, exception text, basis text, "
    "provisional boolean, frames jsonb, first_seen timestamptz, last_seen timestamptz, "
    "n bigint, versions text[], last_report uuid) "
    "ORDER BY t.project_id, t.app, t.fingerprint " STORE_ISSUE_UPSERT_CONFLICT
    "RETURNING id::text, app, fingerprint, coalesce(regressed_at = now(), false), "
    "project_id::text";

static const char SQL_ISSUE_DAYS[] =
    "INSERT INTO issue_days AS d (issue_id, day, count) "
    "SELECT t.issue_id, t.day, sum(t.n) FROM json_to_recordset($1::json) "
    "AS t(issue_id bigint, day date, n bigint) GROUP BY 1, 2 ORDER BY 1, 2 "
    "ON CONFLICT (issue_id, day) DO UPDATE SET count = d.count + EXCLUDED.count";

static const char SQL_UPDATE_REPORTS[] =
    "UPDATE reports r SET status = t.status, error = t.error, issue_id = t.issue_id, "
    "fingerprint = t.fingerprint, kind = t.kind, hardware_model = t.hardware_model, "
    "symbolicated = v.s, "
    "missing_uuids = coalesce((SELECT array_agg(u::uuid) FROM json_array_elements_text("
    "coalesce(t.missing, '[]'::json)) u), '{}'), "
    "unwind_uuids = coalesce((SELECT array_agg(u::uuid) FROM json_array_elements_text("
    "coalesce(t.unwind, '[]'::json)) u), '{}'), "
    "attempts = r.attempts + 1, processed_at = now(), updated_at = now() "
    "FROM json_to_recordset($1::json) AS t(id uuid, at timestamptz, status text, error text, "
    "issue_id bigint, fingerprint text, kind text, hardware_model text, missing json, "
    "unwind json) "
    /* the models travel as plain text parameters, one each: no JSON parsing on the way in */
    "JOIN (VALUES %s) AS v(id, s) ON v.id = t.id "
    /* reports is partitioned by day (migration 0006): the batch's receipt times as constants
     * prune the plan to its days, and (id, received_at) is each partition's primary key */
    "WHERE r.id = t.id AND r.received_at = t.at "
    "AND r.received_at BETWEEN $%zu::timestamptz AND $%zu::timestamptz";

/* Reports that left an issue: take them off its counts; drop issues left with none. */
static const char SQL_LEAVE_DAYS[] =
    "UPDATE issue_days d SET count = greatest(d.count - t.n, 0) "
    "FROM json_to_recordset($1::json) AS t(issue_id bigint, day date, n bigint) "
    "WHERE d.issue_id = t.issue_id AND d.day = t.day";
static const char SQL_LEAVE_ISSUES[] =
    "UPDATE issues i SET count = greatest(i.count - t.n, 0) FROM (SELECT issue_id, sum(n) AS n "
    "FROM json_to_recordset($1::json) AS t(issue_id bigint, day date, n bigint) "
    "GROUP BY issue_id) t WHERE i.id = t.issue_id";
/* A separate statement: a DELETE cannot see rows its own WITH ... UPDATE changed. */
static const char SQL_DROP_EMPTY[] =
    "DELETE FROM issues WHERE count = 0 AND id IN (SELECT t.issue_id FROM json_to_recordset("
    "$1::json) AS t(issue_id bigint, day date, n bigint))";

/* A dSYM that arrived while these reports were processed: straight back to the queue. An
 * App Store dSYM whose names are still hidden is what they wait on (its map): not that. */
static const char SQL_RECHECK_PENDING[] =
    "UPDATE reports r SET status = 'received' "
    "WHERE r.id = ANY(string_to_array($1, ',')::uuid[]) AND r.status = 'pending_dsym' "
    "AND r.received_at BETWEEN $2::timestamptz AND $3::timestamptz "   /* partition pruning */
    "AND EXISTS (SELECT 1 FROM dsyms d WHERE d.uuid = ANY(r.missing_uuids) "
    "AND d.hidden_names = 0)";

/* A debug file recorded while these minidumps were walked without its unwind info: back to
 * the queue. Its trigger (migration 0022) found them neither processed nor lacking it then
 * (still 'received', their first walk) and left them; the walk's view of each UUID's row
 * ("seen": the first 16 hex digits of the symcache it read, "" = none) tells whether the row
 * changed since. The check runs after this batch's reports are written, so that an upload
 * committing later finds them locked and, once this commits, lacking it (its trigger). */
static const char SQL_RECHECK_UNWIND[] =
    "UPDATE reports r SET status = 'received', updated_at = now() "
    "FROM json_to_recordset($1::json) AS t(id uuid, checks json) "
    "WHERE r.id = t.id AND r.status IN ('processed', 'pending_dsym') "
    "AND r.received_at BETWEEN $2::timestamptz AND $3::timestamptz "   /* partition pruning */
    "AND EXISTS (SELECT 1 FROM json_to_recordset(t.checks) AS c(uuid uuid, seen text) "
    "JOIN dsyms d ON d.uuid = c.uuid WHERE d.symcache_blob IS NOT NULL "
    "AND lower(left(d.symcache_blob, 16)) IS DISTINCT FROM nullif(c.seen, ''))";

/* Run `sql` with one text parameter (a JSON batch or an id list); its result is not needed. */
static err_code exec_batch(pconn *c, const char *what, const char *sql, const char *param,
                           err_info *err)
{
    PGresult *res;
    const char *values[1] = {param};
    err_code rc = store_exec_sql(&res, c, what, sql, 1, values, 0, err);
    PQclear(res);
    return rc;
}

/* One per-day count change {"issue_id":N,"day":"YYYY-MM-DD","n":1} of an array. */
static void day_json(jsonw *j, int64_t issue_id, const char *day)
{
    jsonw_object_begin(j);
    jsonw_kint(j, "issue_id", issue_id);
    jsonw_kstr(j, "day", day);
    jsonw_kint(j, "n", 1);
    jsonw_object_end(j);
}

/* Upsert the groups: ids[g] = the issue of groups[g]. */
static err_code upsert_groups(int64_t *ids, store_work *w, const store_group *groups,
                              size_t ngroups, unsigned *regressions, err_info *err)
{
    buf b;
    buf_init(&b);
    jsonw j;
    jsonw_init(&j, &b);
    jsonw_array_begin(&j);
    for (size_t g = 0; g < ngroups; g++) {
        const store_group *o = &groups[g];
        jsonw_object_begin(&j);
        jsonw_kint(&j, "project_id", o->project_id ? o->project_id : STORE_PROJECT_DEFAULT);
        jsonw_kstr(&j, "app", o->app);
        jsonw_kstr(&j, "kind", o->kind);
        jsonw_kstr(&j, "fingerprint", o->fingerprint);
        jsonw_kstr(&j, "title", o->title);
        jsonw_kstr(&j, "culprit", o->culprit);
        jsonw_kstr(&j, "exception", o->exception);
        jsonw_kstr(&j, "basis", o->basis);
        jsonw_kbool(&j, "provisional", o->provisional);
        jsonw_kraw(&j, "frames", o->frames_json ? o->frames_json : "[]");
        jsonw_kstr(&j, "first_seen", o->first_seen);
        jsonw_kstr(&j, "last_seen", o->last_seen);
        jsonw_kint(&j, "n", o->count);
        jsonw_key(&j, "versions");
        jsonw_array_begin(&j);
        for (size_t v = 0; v < o->nversions; v++)
            jsonw_str(&j, o->versions[v]);
        jsonw_array_end(&j);
        jsonw_kstr(&j, "last_report", o->last_report);
        jsonw_object_end(&j);
    }
    jsonw_array_end(&j);
    PGresult *res = NULL;
    const char *values[1] = {(const char *)b.data};
    err_code rc = store_exec_sql(&res, w->c, "upserting issues", SQL_UPSERT_ISSUES, 1, values, 0,
                                 err);
    buf_reset(&b);
    if (rc != ERR_OK)
        return rc;
    for (int r = 0; r < PQntuples(res); r++) {
        const char *app = PQgetvalue(res, r, 1), *fp = PQgetvalue(res, r, 2);
        int64_t project = strtoll(PQgetvalue(res, r, 4), NULL, 10);
        for (size_t g = 0; g < ngroups; g++)
            if ((groups[g].project_id ? groups[g].project_id : STORE_PROJECT_DEFAULT) == project &&
                strcmp(groups[g].app, app) == 0 && strcmp(groups[g].fingerprint, fp) == 0)
                ids[g] = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        *regressions += PQgetvalue(res, r, 3)[0] == 't';
    }
    PQclear(res);
    for (size_t g = 0; g < ngroups; g++)
        if (ids[g] == 0)
            return err_set(err, ERR_INTERNAL, "upserting issues: no id for fingerprint %s",
                           groups[g].fingerprint);
    return ERR_OK;
}

static err_code do_commit(store_work *w, const store_outcome *out, const store_group *groups,
                          size_t ngroups, unsigned *regressions, err_info *err)
{
    size_t n = w->n;
    int64_t *ids = xcalloc(ngroups ? ngroups : 1, sizeof *ids);
    buf b;
    buf_init(&b);
    jsonw j;
    PGresult *res = NULL;
    err_code rc = ERR_OK;

    /* 1. issues, 2. their per-day counts */
    *regressions = 0;
    if (ngroups > 0) {
        rc = upsert_groups(ids, w, groups, ngroups, regressions, err);
        if (rc != ERR_OK)
            goto done;
        jsonw_init(&j, &b);
        jsonw_array_begin(&j);
        for (size_t i = 0; i < n; i++)
            if (out[i].group != STORE_NO_GROUP)
                day_json(&j, ids[out[i].group], w->rows[i].day);
        jsonw_array_end(&j);
        rc = exec_batch(w->c, "counting issue days", SQL_ISSUE_DAYS, (const char *)b.data, err);
        if (rc != ERR_OK)
            goto done;
    }

    /* 3. the reports */
    b.len = 0;
    jsonw_init(&j, &b);
    jsonw_array_begin(&j);
    bool any_pending = false, any_unwind = false;
    for (size_t i = 0; i < n; i++) {
        const store_outcome *o = &out[i];
        int64_t issue = o->group != STORE_NO_GROUP ? ids[o->group] : o->issue_id;
        jsonw_object_begin(&j);
        jsonw_kstr(&j, "id", w->rows[i].id);
        jsonw_kstr(&j, "at", w->rows[i].received_at);
        jsonw_kstr(&j, "status", o->status);
        jsonw_kstr(&j, "error", o->error);
        if (issue)
            jsonw_kint(&j, "issue_id", issue);
        jsonw_kstr(&j, "fingerprint", o->grouped ? o->fingerprint : NULL);
        jsonw_kstr(&j, "kind", o->kind);
        jsonw_kstr(&j, "hardware_model", o->hardware_model);
        jsonw_kraw(&j, "missing", o->missing_uuids_json);
        jsonw_kraw(&j, "unwind", o->unwind_uuids_json);
        jsonw_object_end(&j);
        any_pending |= strcmp(o->status, "pending_dsym") == 0;
        any_unwind |= o->unwind_checks_json != NULL;
    }
    jsonw_array_end(&j);
    /* the batch's first and last receipt time (same RFC 3339 form: text order is time order) */
    const char *at_min = w->rows[0].received_at, *at_max = w->rows[0].received_at;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(w->rows[i].received_at, at_min) < 0)
            at_min = w->rows[i].received_at;
        if (strcmp(w->rows[i].received_at, at_max) > 0)
            at_max = w->rows[i].received_at;
    }
    const char **uvalues = xcalloc(3 + 2 * n, sizeof *uvalues);
    buf rows;
    buf_init(&rows);
    uvalues[0] = (const char *)b.data;
    for (size_t i = 0; i < n; i++) {
        buf_printf(&rows, "%s($%zu::uuid, $%zu::text)", i ? ", " : "", 2 + 2 * i, 3 + 2 * i);
        uvalues[1 + 2 * i] = w->rows[i].id;
        uvalues[2 + 2 * i] = out[i].symbolicated_json;
    }
    uvalues[1 + 2 * n] = at_min;
    uvalues[2 + 2 * n] = at_max;
    char *usql = NULL;
    if (asprintf(&usql, SQL_UPDATE_REPORTS, (const char *)rows.data, 2 + 2 * n, 3 + 2 * n) < 0)
        usql = NULL;
    buf_reset(&rows);
    rc = usql ? store_exec_sql(&res, w->c, "storing processed reports", usql, (int)(3 + 2 * n),
                               uvalues, 0, err)
              : err_set(err, ERR_INTERNAL, "storing processed reports: out of memory");
    free(usql);
    free(uvalues);
    if (rc != ERR_OK)
        goto done;
    PQclear(res);
    res = NULL;

    /* 4. reports that moved out of an issue (regrouped after their dSYM arrived) */
    b.len = 0;
    jsonw_init(&j, &b);
    jsonw_array_begin(&j);
    bool any_left = false;
    for (size_t i = 0; i < n; i++)
        if (out[i].leaves) {
            day_json(&j, w->rows[i].issue_id, w->rows[i].day);
            any_left = true;
        }
    jsonw_array_end(&j);
    if (any_left) {
        const char *left = (const char *)b.data;
        rc = exec_batch(w->c, "regrouping reports", SQL_LEAVE_DAYS, left, err);
        if (rc == ERR_OK)
            rc = exec_batch(w->c, "regrouping reports", SQL_LEAVE_ISSUES, left, err);
        if (rc == ERR_OK)
            rc = exec_batch(w->c, "regrouping reports", SQL_DROP_EMPTY, left, err);
        if (rc != ERR_OK)
            goto done;
    }

    /* 5. a dSYM that arrived while these were processed */
    if (any_pending) {
        b.len = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(out[i].status, "pending_dsym") == 0)
                buf_printf(&b, "%s%s", b.len ? "," : "", w->rows[i].id);
        const char *rvalues[3] = {(const char *)b.data, at_min, at_max};
        rc = store_exec_sql(&res, w->c, "rechecking pending reports", SQL_RECHECK_PENDING, 3,
                            rvalues, 0, err);
        PQclear(res);
        res = NULL;
        if (rc != ERR_OK)
            goto done;
    }
    /* 6. unwind info recorded while these minidumps were walked without it */
    if (any_unwind) {
        b.len = 0;
        jsonw_init(&j, &b);
        jsonw_array_begin(&j);
        for (size_t i = 0; i < n; i++)
            if (out[i].unwind_checks_json != NULL) {
                jsonw_object_begin(&j);
                jsonw_kstr(&j, "id", w->rows[i].id);
                jsonw_kraw(&j, "checks", out[i].unwind_checks_json);
                jsonw_object_end(&j);
            }
        jsonw_array_end(&j);
        const char *rvalues[3] = {(const char *)b.data, at_min, at_max};
        rc = store_exec_sql(&res, w->c, "rechecking reports without unwind info",
                            SQL_RECHECK_UNWIND, 3, rvalues, 0, err);
        PQclear(res);
        res = NULL;
        if (rc != ERR_OK)
            goto done;
    }
    rc = store_command(w->c, "COMMIT", "committing processed reports", err);
done:
    PQclear(res);
    buf_reset(&b);
    free(ids);
    return rc;
}

err_code store_work_commit(store_work *w, const store_outcome *outcomes, const store_group *groups,
                           size_t ngroups, unsigned *regressions, err_info *err)
{
    unsigned ignored;
    err_code rc = do_commit(w, outcomes, groups, ngroups, regressions ? regressions : &ignored,
                            err);
    store_work_abort(w);   /* releases the connection; rolls back if COMMIT did not happen */
    return rc;
}

typedef struct {
    const char *id, *reason;
    int64_t *count;
} fail_ctx;

static err_code do_report_fail(pconn *c, void *vctx, err_info *err)
{
    fail_ctx *f = vctx;
    const char *values[2] = {f->id, f->reason};
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "marking a report failed",
                              "UPDATE reports SET status = 'failed', error = $2, "
                              "attempts = attempts + 1, updated_at = now(), processed_at = now() "
                              "WHERE id = $1::uuid",
                              2, values, 0, err);
    PQclear(res);
    return rc;
}

err_code store_report_fail(store *s, const char *id, const char *reason, err_info *err)
{
    fail_ctx f = {id, reason, NULL};
    return store_run(s, do_report_fail, &f, err);
}

static err_code do_pending_sweep(pconn *c, void *vctx, err_info *err)
{
    fail_ctx *f = vctx;
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "releasing pending reports",
                              "UPDATE reports r SET status = 'received', updated_at = now() "
                              "WHERE r.status = 'pending_dsym' AND r.missing_uuids && "
                              "ARRAY(SELECT uuid FROM dsyms WHERE hidden_names = 0)",
                              0, NULL, 0, err);
    if (rc == ERR_OK)
        *f->count = strtoll(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return rc;
}

err_code store_pending_sweep(int64_t *released, store *s, err_info *err)
{
    fail_ctx f = {NULL, NULL, released};
    *released = 0;
    return store_run(s, do_pending_sweep, &f, err);
}

static err_code do_queue_counts(pconn *c, void *vctx, err_info *err)
{
    store_queue_stats *o = vctx;
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "counting reports",
                              "SELECT count(*) FILTER (WHERE status = 'received'), "
                              "count(*) FILTER (WHERE status = 'pending_dsym'), "
                              "count(*) FILTER (WHERE status = 'failed'), "
                              "count(*) FILTER (WHERE status = 'processed'), "
                              "(SELECT count(*) FROM issues) FROM reports",
                              0, NULL, 0, err);
    if (rc != ERR_OK)
        return rc;
    o->received = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    o->pending_dsym = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    o->failed = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    o->processed = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
    o->issues = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
    PQclear(res);
    return ERR_OK;
}

err_code store_queue_counts(store_queue_stats *out, store *s, err_info *err)
{
    memset(out, 0, sizeof *out);
    return store_run(s, do_queue_counts, out, err);
}
