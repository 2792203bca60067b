/*
 * store_issues - the queue, the grouping transaction and the issues API in SQL (see
 * store_issues.h). Batches travel as one JSON parameter read by json_to_recordset, so that a
 * batch of reports costs a handful of statements, not a handful per report. Upserts list
 * issues in (app, fingerprint) order, so concurrent batches lock rows in the same order.
 */
#include "store/store_issues.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "store/store_internal.h"

#define TS_US(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define TS_MS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define JTS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* Run `sql` with text parameters; *out = the result (caller PQclear()s). */
static err_code exec_params(PGresult **out, pconn *c, const char *what, const char *sql, int n,
                            const char *const *values, int result_format, err_info *err)
{
    *out = NULL;
    PGresult *res = PQexecParams(c->pg, sql, n, NULL, values, NULL, NULL, result_format);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        err_code rc = store_translate(res, c, what, err);
        PQclear(res);
        return rc;
    }
    *out = res;
    return ERR_OK;
}

/* One row, one text column, copied into `a`: the usual shape of a JSON answer. */
typedef struct {
    const char *what, *sql;
    int n;
    const char *const *values;
    arena *a;
    const char **json;
    bool missing_is_not_found;
} json_query;

static err_code do_json_query(pconn *c, void *vctx, err_info *err)
{
    json_query *q = vctx;
    PGresult *res;
    err_code rc = exec_params(&res, c, q->what, q->sql, q->n, q->values, 0, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0 || PQgetisnull(res, 0, 0)) {
        PQclear(res);
        return q->missing_is_not_found ? err_set(err, ERR_NOT_FOUND, "%s: not found", q->what)
                                       : err_set(err, ERR_INTERNAL, "%s: no answer", q->what);
    }
    *q->json = store_dup(q->a, res, 0, 0, err, &rc);
    PQclear(res);
    return rc;
}

static err_code run_json(const char **json, store *s, const char *what, const char *sql, int n,
                         const char *const *values, bool not_found, arena *a, err_info *err)
{
    json_query q = {what, sql, n, values, a, json, not_found};
    *json = NULL;
    return store_run(s, do_json_query, &q, err);
}

/* ---- the work queue ------------------------------------------------------------------- */

struct store_work {
    store *s;
    pconn *c;
    store_claimed *rows;
    size_t n;
};

static const char SQL_CLAIM[] =
    "SELECT id::text, raw, coalesce(issue_id, 0)::text, fingerprint, app, " TS_US("received_at")
    ", to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), attempts::text "
    "FROM reports WHERE status = 'received' ORDER BY received_at "
    "LIMIT $1 FOR UPDATE SKIP LOCKED";

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
    rc = store_command(w->c, "BEGIN", "claiming reports", err);
    /* Losing a batch's commit in a database crash only puts its reports back in the queue
     * (all of it or nothing): no need to wait for the WAL flush. */
    if (rc == ERR_OK)
        rc = store_command(w->c, "SET LOCAL synchronous_commit TO off", "claiming reports", err);
    char limit[24];
    snprintf(limit, sizeof limit, "%zu", max);
    const char *values[1] = {limit};
    PGresult *res = NULL;
    if (rc == ERR_OK)
        /* binary results: raw arrives as its bytes; every other column is text anyway */
        rc = exec_params(&res, w->c, "claiming reports", SQL_CLAIM, 1, values, 1, err);
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
    "INSERT INTO issues AS i (app, kind, fingerprint, title, culprit, exception, basis, "
    "provisional, frames, first_seen, last_seen, count, versions, last_report) "
    "SELECT t.app, t.kind, t.fingerprint, t.title, t.culprit, t.exception, t.basis, "
    "t.provisional, t.frames, t.first_seen, t.last_seen, t.n, "
    "ARRAY(SELECT DISTINCT v FROM unnest(t.versions) v ORDER BY 1), t.last_report "
    "FROM json_to_recordset($1::json) AS t(app text, kind text, fingerprint text, title text, "
    "culprit text, exception text, basis text, provisional boolean, frames jsonb, "
    "first_seen timestamptz, last_seen timestamptz, n bigint, versions text[], last_report uuid) "
    "ORDER BY t.app, t.fingerprint "
    "ON CONFLICT (app, fingerprint) DO UPDATE SET "
    "count = i.count + EXCLUDED.count, "
    "first_seen = least(i.first_seen, EXCLUDED.first_seen), "
    "last_seen = greatest(i.last_seen, EXCLUDED.last_seen), "
    "last_report = CASE WHEN EXCLUDED.last_seen >= i.last_seen THEN EXCLUDED.last_report "
    "ELSE i.last_report END, "
    "versions = ARRAY(SELECT DISTINCT v FROM unnest(i.versions || EXCLUDED.versions) v "
    "ORDER BY 1), "
    /* A resolved issue seen again in the version it was fixed in or later reopens. */
    "status = CASE WHEN i.status = 'resolved' AND (i.resolved_in IS NULL OR EXISTS ("
    "SELECT 1 FROM unnest(EXCLUDED.versions) v "
    "WHERE version_key(v) >= version_key(i.resolved_in))) THEN 'open' ELSE i.status END, "
    "regressed = i.regressed OR (i.status = 'resolved' AND (i.resolved_in IS NULL OR EXISTS ("
    "SELECT 1 FROM unnest(EXCLUDED.versions) v "
    "WHERE version_key(v) >= version_key(i.resolved_in)))), "
    "regressed_at = CASE WHEN i.status = 'resolved' AND (i.resolved_in IS NULL OR EXISTS ("
    "SELECT 1 FROM unnest(EXCLUDED.versions) v "
    "WHERE version_key(v) >= version_key(i.resolved_in))) THEN now() ELSE i.regressed_at END "
    "RETURNING id::text, app, fingerprint, coalesce(regressed_at = now(), false)";

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
    "attempts = r.attempts + 1, processed_at = now(), updated_at = now() "
    "FROM json_to_recordset($1::json) AS t(id uuid, status text, error text, issue_id bigint, "
    "fingerprint text, kind text, hardware_model text, missing json) "
    /* the models travel as plain text parameters, one each: no JSON parsing on the way in */
    "JOIN (VALUES %s) AS v(id, s) ON v.id = t.id "
    "WHERE r.id = t.id";

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

/* A dSYM that arrived while these reports were processed: straight back to the queue. */
static const char SQL_RECHECK_PENDING[] =
    "UPDATE reports r SET status = 'received' "
    "WHERE r.id = ANY(string_to_array($1, ',')::uuid[]) AND r.status = 'pending_dsym' "
    "AND EXISTS (SELECT 1 FROM dsyms d WHERE d.uuid = ANY(r.missing_uuids))";

static void json_kv(buf *b, const char *key, const char *value, bool first)
{
    if (!first)
        buf_putc(b, ',');
    buf_append_json_str(b, key, strlen(key));
    buf_putc(b, ':');
    if (value == NULL)
        buf_append_str(b, "null");
    else
        buf_append_json_str(b, value, strlen(value));
}

static void json_kraw(buf *b, const char *key, const char *raw)
{
    buf_putc(b, ',');
    buf_append_json_str(b, key, strlen(key));
    buf_putc(b, ':');
    buf_append_str(b, raw ? raw : "null");
}

/* A group of the batch's reports that go to one issue. */
typedef struct {
    size_t first;      /* index of the first outcome in the group */
    int64_t id;        /* issue id once upserted */
} group;

static bool same_issue(const store_outcome *a, const store_outcome *b)
{
    return strcmp(a->app, b->app) == 0 && strcmp(a->fingerprint, b->fingerprint) == 0;
}

static bool stays(const store_claimed *row, const store_outcome *o)
{
    return row->issue_id != 0 && row->fingerprint != NULL &&
           strcmp(row->fingerprint, o->fingerprint) == 0;
}

/* Run `sql` with one text parameter (a JSON batch or an id list); its result is not needed. */
static err_code exec_batch(pconn *c, const char *what, const char *sql, const char *param,
                           err_info *err)
{
    PGresult *res;
    const char *values[1] = {param};
    err_code rc = exec_params(&res, c, what, sql, 1, values, 0, err);
    PQclear(res);
    return rc;
}

/* Append one per-day count change {"issue_id":N,"day":"YYYY-MM-DD","n":1} to the JSON array
 * being built in `b` (which holds at least its '['). */
static void append_day(buf *b, int64_t issue_id, const char *day)
{
    buf_printf(b, "%s{\"issue_id\":%lld,\"day\":\"%s\",\"n\":1}", b->len > 1 ? "," : "",
               (long long)issue_id, day);
}

static err_code do_commit(store_work *w, const store_outcome *out, unsigned *regressions,
                          err_info *err)
{
    size_t n = w->n;
    group *groups = xcalloc(n ? n : 1, sizeof *groups);
    size_t *group_of = xcalloc(n ? n : 1, sizeof *group_of);
    size_t ngroups = 0;
    buf b;
    buf_init(&b);
    PGresult *res = NULL;
    err_code rc = ERR_OK;

    /* 1. issues: one row per (app, fingerprint) of the reports that join an issue */
    buf_putc(&b, '[');
    for (size_t i = 0; i < n; i++) {
        group_of[i] = SIZE_MAX;
        if (!out[i].grouped || stays(&w->rows[i], &out[i]))
            continue;
        size_t g = 0;
        while (g < ngroups && !same_issue(&out[groups[g].first], &out[i]))
            g++;
        group_of[i] = g;
        if (g == ngroups)
            groups[ngroups++].first = i;
    }
    for (size_t g = 0; g < ngroups; g++) {
        const store_outcome *o = &out[groups[g].first];
        const char *first_seen = NULL, *last_seen = NULL, *last_report = NULL;
        long long count = 0;
        buf versions;
        buf_init(&versions);
        buf_putc(&versions, '[');
        for (size_t i = 0; i < n; i++) {
            if (group_of[i] != g)
                continue;
            const store_claimed *row = &w->rows[i];
            count++;
            if (first_seen == NULL || strcmp(row->received_at, first_seen) < 0)
                first_seen = row->received_at;
            if (last_seen == NULL || strcmp(row->received_at, last_seen) >= 0) {
                last_seen = row->received_at;
                last_report = row->id;
            }
            if (out[i].app_version != NULL) {
                if (versions.len > 1)
                    buf_putc(&versions, ',');
                buf_append_json_str(&versions, out[i].app_version, strlen(out[i].app_version));
            }
        }
        buf_putc(&versions, ']');
        buf_append_str(&b, g ? ",{" : "{");
        json_kv(&b, "app", o->app, true);
        json_kv(&b, "kind", o->kind, false);
        json_kv(&b, "fingerprint", o->fingerprint, false);
        json_kv(&b, "title", o->title, false);
        json_kv(&b, "culprit", o->culprit, false);
        json_kv(&b, "exception", o->exception, false);
        json_kv(&b, "basis", o->basis, false);
        json_kraw(&b, "provisional", o->provisional ? "true" : "false");
        json_kraw(&b, "frames", o->frames_json ? o->frames_json : "[]");
        json_kv(&b, "first_seen", first_seen, false);
        json_kv(&b, "last_seen", last_seen, false);
        buf_printf(&b, ",\"n\":%lld", count);
        json_kraw(&b, "versions", (const char *)versions.data);
        json_kv(&b, "last_report", last_report, false);
        buf_putc(&b, '}');
        buf_reset(&versions);
    }
    buf_putc(&b, ']');
    *regressions = 0;
    if (ngroups > 0) {
        const char *values[1] = {(const char *)b.data};
        rc = exec_params(&res, w->c, "upserting issues", SQL_UPSERT_ISSUES, 1, values, 0, err);
        if (rc != ERR_OK)
            goto done;
        for (int r = 0; r < PQntuples(res); r++) {
            const char *app = PQgetvalue(res, r, 1), *fp = PQgetvalue(res, r, 2);
            for (size_t g = 0; g < ngroups; g++) {
                const store_outcome *o = &out[groups[g].first];
                if (strcmp(o->app, app) == 0 && strcmp(o->fingerprint, fp) == 0)
                    groups[g].id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
            }
            *regressions += PQgetvalue(res, r, 3)[0] == 't';
        }
        PQclear(res);
        res = NULL;
        for (size_t g = 0; g < ngroups; g++)
            if (groups[g].id == 0) {
                rc = err_set(err, ERR_INTERNAL, "upserting issues: no id for fingerprint %s",
                             out[groups[g].first].fingerprint);
                goto done;
            }

        /* 2. per-day counts */
        b.len = 0;
        buf_putc(&b, '[');
        for (size_t i = 0; i < n; i++)
            if (group_of[i] != SIZE_MAX)
                append_day(&b, groups[group_of[i]].id, w->rows[i].day);
        buf_putc(&b, ']');
        rc = exec_batch(w->c, "counting issue days", SQL_ISSUE_DAYS, (const char *)b.data, err);
        if (rc != ERR_OK)
            goto done;
    }

    /* 3. the reports */
    b.len = 0;
    buf_putc(&b, '[');
    bool any_pending = false;
    for (size_t i = 0; i < n; i++) {
        const store_outcome *o = &out[i];
        const store_claimed *row = &w->rows[i];
        int64_t issue = group_of[i] != SIZE_MAX ? groups[group_of[i]].id
                        : o->grouped && stays(row, o) ? row->issue_id : 0;
        buf_append_str(&b, i ? ",{" : "{");
        json_kv(&b, "id", row->id, true);
        json_kv(&b, "status", o->status, false);
        json_kv(&b, "error", o->error, false);
        if (issue)
            buf_printf(&b, ",\"issue_id\":%lld", (long long)issue);
        json_kv(&b, "fingerprint", o->grouped ? o->fingerprint : NULL, false);
        json_kv(&b, "kind", o->kind, false);
        json_kv(&b, "hardware_model", o->hardware_model, false);
        json_kraw(&b, "missing", o->missing_uuids_json);
        buf_putc(&b, '}');
        any_pending |= strcmp(o->status, "pending_dsym") == 0;
    }
    buf_putc(&b, ']');
    const char **uvalues = xcalloc(1 + 2 * n, sizeof *uvalues);
    buf rows;
    buf_init(&rows);
    uvalues[0] = (const char *)b.data;
    for (size_t i = 0; i < n; i++) {
        buf_printf(&rows, "%s($%zu::uuid, $%zu::text)", i ? ", " : "", 2 + 2 * i, 3 + 2 * i);
        uvalues[1 + 2 * i] = w->rows[i].id;
        uvalues[2 + 2 * i] = out[i].symbolicated_json;
    }
    char *usql = NULL;
    if (asprintf(&usql, SQL_UPDATE_REPORTS, (const char *)rows.data) < 0)
        usql = NULL;
    buf_reset(&rows);
    rc = usql ? exec_params(&res, w->c, "storing processed reports", usql, (int)(1 + 2 * n),
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
    buf_putc(&b, '[');
    for (size_t i = 0; i < n; i++) {
        const store_claimed *row = &w->rows[i];
        if (row->issue_id != 0 && !(out[i].grouped && stays(row, &out[i])))
            append_day(&b, row->issue_id, row->day);
    }
    bool any_left = b.len > 1;
    buf_putc(&b, ']');
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

    if (any_pending) {
        b.len = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(out[i].status, "pending_dsym") == 0)
                buf_printf(&b, "%s%s", b.len ? "," : "", w->rows[i].id);
        rc = exec_batch(w->c, "rechecking pending reports", SQL_RECHECK_PENDING,
                        (const char *)b.data, err);
        if (rc != ERR_OK)
            goto done;
    }
    rc = store_command(w->c, "COMMIT", "committing processed reports", err);
done:
    PQclear(res);
    buf_reset(&b);
    free(groups);
    free(group_of);
    return rc;
}

err_code store_work_commit(store_work *w, const store_outcome *outcomes, unsigned *regressions,
                           err_info *err)
{
    unsigned ignored;
    err_code rc = do_commit(w, outcomes, regressions ? regressions : &ignored, err);
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
    err_code rc = exec_params(&res, c, "marking a report failed",
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
    err_code rc = exec_params(&res, c, "releasing pending reports",
                              "UPDATE reports r SET status = 'received', updated_at = now() "
                              "WHERE r.status = 'pending_dsym' AND r.missing_uuids && "
                              "ARRAY(SELECT uuid FROM dsyms)",
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

/* ---- the issues API ------------------------------------------------------------------ */

#define ISSUE_JSON                                                                          \
    "json_build_object('id', i.id, 'title', i.title, 'culprit', i.culprit, 'kind', i.kind,"  \
    " 'count', i.count, 'first_seen', " JTS("i.first_seen") ", 'last_seen', "                \
    JTS("i.last_seen") ", 'status', i.status, 'versions', i.versions, 'app', i.app,"         \
    " 'regressed', i.regressed, 'provisional', i.provisional, 'resolved_in', i.resolved_in)"

/* Sort keys as integers (microseconds since the epoch for times), so that a cursor is
 * "<key>_<id>" and compares exactly. */
static const struct {
    const char *name, *key, *order;
} SORTS[] = {
    {"last_seen", "(extract(epoch FROM i.last_seen) * 1000000)::bigint",
     "i.last_seen DESC, i.id DESC"},
    {"first_seen", "(extract(epoch FROM i.first_seen) * 1000000)::bigint",
     "i.first_seen DESC, i.id DESC"},
    {"count", "i.count", "i.count DESC, i.id DESC"},
};

static bool parse_cursor(const char *cursor, long long *key, long long *id)
{
    char *end;
    if (cursor == NULL)
        return false;
    *key = strtoll(cursor, &end, 10);
    if (end == cursor || *end != '_')
        return false;
    const char *p = end + 1;
    *id = strtoll(p, &end, 10);
    return end != p && *end == '\0' && *id > 0;
}

err_code store_issues_list(const char **json, store *s, const store_issue_query *q, arena *a,
                           err_info *err)
{
    *json = NULL;
    size_t sort = 0;
    if (q->sort != NULL) {
        while (sort < 3 && strcmp(SORTS[sort].name, q->sort) != 0)
            sort++;
        if (sort == 3)
            return err_set(err, ERR_INVALID,
                           "sort must be last_seen, first_seen or count, not '%.40s'", q->sort);
    }
    long long ckey = 0, cid = 0;
    if (q->cursor != NULL && !parse_cursor(q->cursor, &ckey, &cid))
        return err_set(err, ERR_INVALID, "cursor '%.60s' is not one this API gave", q->cursor);
    char key_s[24], id_s[24], limit_s[16];
    snprintf(key_s, sizeof key_s, "%lld", ckey);
    snprintf(id_s, sizeof id_s, "%lld", cid);
    snprintf(limit_s, sizeof limit_s, "%u", q->limit);
    /* Where the sort key is a time, compare the row value (index order) exactly. */
    char *sql = NULL;
    const char *after =
        sort == 2 ? "(i.count, i.id) < ($9::bigint, $10::bigint)"
        : sort == 1 ? "(i.first_seen, i.id) < ('epoch'::timestamptz + $9::bigint * "
                      "interval '1 microsecond', $10::bigint)"
                    : "(i.last_seen, i.id) < ('epoch'::timestamptz + $9::bigint * "
                      "interval '1 microsecond', $10::bigint)";
    if (asprintf(&sql,
                 "WITH page AS (SELECT i.*, %s AS sort_key FROM issues i "
                 "WHERE ($1::text IS NULL OR i.app = $1) AND ($2::text IS NULL OR i.kind = $2) "
                 "AND ($3::text IS NULL OR i.versions @> ARRAY[$3::text]) "
                 "AND ($4::text IS NULL OR i.status = $4) "
                 "AND ($5::timestamptz IS NULL OR i.last_seen >= $5) "
                 "AND ($6::timestamptz IS NULL OR i.last_seen < $6) "
                 "AND ($7::text IS NULL OR strpos(lower(i.title), lower($7)) > 0 "
                 "OR strpos(lower(i.culprit), lower($7)) > 0) "
                 "AND (NOT $8::boolean OR %s) "
                 "ORDER BY %s LIMIT $11::int + 1), "
                 "numbered AS (SELECT p.*, row_number() OVER () AS rn FROM page p) "
                 "SELECT json_build_object('issues', coalesce((SELECT json_agg(" ISSUE_JSON
                 " ORDER BY i.rn) FROM numbered i WHERE i.rn <= $11::int), '[]'), "
                 "'next_cursor', (SELECT i.sort_key || '_' || i.id FROM numbered i "
                 "WHERE i.rn = $11::int AND EXISTS (SELECT 1 FROM numbered x "
                 "WHERE x.rn = $11::int + 1)))::text",
                 SORTS[sort].key, after, SORTS[sort].order) < 0)
        return err_set(err, ERR_INTERNAL, "listing issues: out of memory");
    const char *values[11] = {q->app, q->kind, q->version, q->status, q->since, q->until, q->q,
                              q->cursor ? "t" : "f", key_s, id_s, limit_s};
    err_code rc = run_json(json, s, "listing issues", sql, 11, values, false, a, err);
    free(sql);
    return rc;
}

static const char SQL_ISSUE_GET[] =
    "SELECT json_build_object('id', i.id, 'app', i.app, 'kind', i.kind, "
    "'fingerprint', i.fingerprint, 'title', i.title, 'culprit', i.culprit, "
    "'exception', i.exception, 'basis', i.basis, 'provisional', i.provisional, "
    "'frames', i.frames, 'count', i.count, 'first_seen', " JTS("i.first_seen") ", "
    "'last_seen', " JTS("i.last_seen") ", 'status', i.status, 'resolved_in', i.resolved_in, "
    "'resolved_at', " JTS("i.resolved_at") ", 'regressed', i.regressed, "
    "'regressed_at', " JTS("i.regressed_at") ", 'versions', i.versions, "
    "'breakdowns', json_build_object("
    "'app_version', (SELECT coalesce(json_agg(json_build_object('value', v, 'count', n) "
    "ORDER BY n DESC, v), '[]') FROM (SELECT app_version AS v, count(*) AS n FROM reports "
    "WHERE issue_id = i.id GROUP BY 1) b), "
    "'os_version', (SELECT coalesce(json_agg(json_build_object('value', v, 'count', n) "
    "ORDER BY n DESC, v), '[]') FROM (SELECT os_version AS v, count(*) AS n FROM reports "
    "WHERE issue_id = i.id GROUP BY 1) b), "
    "'hardware_model', (SELECT coalesce(json_agg(json_build_object('value', v, 'count', n) "
    "ORDER BY n DESC, v), '[]') FROM (SELECT hardware_model AS v, count(*) AS n FROM reports "
    "WHERE issue_id = i.id GROUP BY 1) b)), "
    "'daily', (SELECT json_agg(json_build_object('day', to_char(d, 'YYYY-MM-DD'), "
    "'count', coalesce(x.count, 0)) ORDER BY d) "
    "FROM generate_series((now() AT TIME ZONE 'UTC')::date - 29, "
    "(now() AT TIME ZONE 'UTC')::date, interval '1 day') d "
    "LEFT JOIN issue_days x ON x.issue_id = i.id AND x.day = d::date), "
    "'latest_sample', (SELECT json_build_object('id', r.id, 'received_at', "
    JTS("r.received_at") ", 'app_version', r.app_version, 'os_version', r.os_version, "
    "'hardware_model', r.hardware_model, 'report', r.symbolicated::json) "
    "FROM reports r WHERE r.id = i.last_report))::text "
    "FROM issues i WHERE i.id = $1::bigint";

err_code store_issue_get(const char **json, store *s, int64_t id, arena *a, err_info *err)
{
    char id_s[24];
    snprintf(id_s, sizeof id_s, "%lld", (long long)id);
    const char *values[1] = {id_s};
    err_code rc = run_json(json, s, "reading an issue", SQL_ISSUE_GET, 1, values, true, a, err);
    if (rc == ERR_NOT_FOUND)
        rc = err_set(err, ERR_NOT_FOUND, "no issue with id %lld", (long long)id);
    return rc;
}

static const char SQL_ISSUE_REPORTS[] =
    "WITH page AS (SELECT r.id, r.received_at, r.status, r.app_version, r.os_version, "
    "r.hardware_model, (extract(epoch FROM r.received_at) * 1000000)::bigint AS k "
    "FROM reports r WHERE r.issue_id = $1::bigint AND (NOT $2::boolean OR "
    "(r.received_at, r.id) < ('epoch'::timestamptz + $3::bigint * interval '1 microsecond', "
    "$4::uuid)) ORDER BY r.received_at DESC, r.id DESC LIMIT $5::int + 1), "
    "numbered AS (SELECT p.*, row_number() OVER () AS rn FROM page p) "
    "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM issues WHERE id = $1::bigint) THEN NULL ELSE "
    "json_build_object('reports', coalesce((SELECT json_agg(json_build_object('id', n.id, "
    "'received_at', " JTS("n.received_at") ", 'status', n.status, 'app_version', "
    "n.app_version, 'os_version', n.os_version, 'hardware_model', n.hardware_model) "
    "ORDER BY n.rn) FROM numbered n WHERE n.rn <= $5::int), '[]'), "
    "'next_cursor', (SELECT n.k || '_' || n.id FROM numbered n WHERE n.rn = $5::int AND "
    "EXISTS (SELECT 1 FROM numbered x WHERE x.rn = $5::int + 1)))::text END";

err_code store_issue_reports(const char **json, store *s, int64_t id, unsigned limit,
                             const char *cursor, arena *a, err_info *err)
{
    char id_s[24], key_s[24] = "0", limit_s[16], rid[40] = "00000000-0000-0000-0000-000000000000";
    snprintf(id_s, sizeof id_s, "%lld", (long long)id);
    snprintf(limit_s, sizeof limit_s, "%u", limit);
    if (cursor != NULL) {
        const char *us = strchr(cursor, '_');
        char *end;
        long long k = strtoll(cursor, &end, 10);
        if (us == NULL || end != us || strlen(us + 1) != 36)
            return err_set(err, ERR_INVALID, "cursor '%.60s' is not one this API gave", cursor);
        snprintf(key_s, sizeof key_s, "%lld", k);
        snprintf(rid, sizeof rid, "%s", us + 1);
    }
    const char *values[5] = {id_s, cursor ? "t" : "f", key_s, rid, limit_s};
    err_code rc = run_json(json, s, "listing an issue's reports", SQL_ISSUE_REPORTS, 5, values,
                           true, a, err);
    if (rc == ERR_NOT_FOUND)
        rc = err_set(err, ERR_NOT_FOUND, "no issue with id %lld", (long long)id);
    return rc;
}

err_code store_issue_set_status(const char **json, store *s, int64_t id, const char *status,
                                const char *resolved_in, arena *a, err_info *err)
{
    if (strcmp(status, "open") != 0 && strcmp(status, "resolved") != 0 &&
        strcmp(status, "ignored") != 0)
        return err_set(err, ERR_INVALID, "status must be open, resolved or ignored, not '%.40s'",
                       status);
    char id_s[24];
    snprintf(id_s, sizeof id_s, "%lld", (long long)id);
    const char *values[3] = {id_s, status, resolved_in};
    err_code rc = run_json(json, s, "changing an issue's status",
                           "UPDATE issues i SET status = $2, "
                           "resolved_in = CASE WHEN $2 = 'resolved' THEN $3 END, "
                           "resolved_at = CASE WHEN $2 = 'resolved' THEN now() END, "
                           "regressed = false WHERE i.id = $1::bigint "
                           "RETURNING " ISSUE_JSON "::text",
                           3, values, true, a, err);
    if (rc == ERR_NOT_FOUND)
        rc = err_set(err, ERR_NOT_FOUND, "no issue with id %lld", (long long)id);
    return rc;
}

typedef struct {
    const char *id;
    store_report_extra *extra;
    const uint8_t **raw;
    size_t *len;
    arena *a;
} report_ctx;

static err_code do_report_extra(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const char *values[1] = {r->id};
    PGresult *res;
    err_code rc = exec_params(&res, c, "reading a report",
                              "SELECT coalesce(issue_id, 0)::text, fingerprint, kind, "
                              "hardware_model, symbolicated, " JTS("processed_at")
                              " FROM reports WHERE id = $1::uuid",
                              1, values, 0, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no report with id %s", r->id);
    }
    store_report_extra *o = r->extra;
    o->issue_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    o->fingerprint = store_dup(r->a, res, 0, 1, err, &rc);
    o->kind = store_dup(r->a, res, 0, 2, err, &rc);
    o->hardware_model = store_dup(r->a, res, 0, 3, err, &rc);
    o->symbolicated_json = store_dup(r->a, res, 0, 4, err, &rc);
    o->processed_at = store_dup(r->a, res, 0, 5, err, &rc);
    PQclear(res);
    return rc;
}

static bool looks_like_uuid(const char *s)
{
    size_t n = strlen(s);
    if (n != 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]))
            return false;
    }
    return true;
}

err_code store_report_extra_get(store_report_extra *out, store *s, const char *id, arena *a,
                                err_info *err)
{
    memset(out, 0, sizeof *out);
    if (!looks_like_uuid(id))
        return err_set(err, ERR_NOT_FOUND, "no report with id %.64s", id);
    report_ctx r = {id, out, NULL, NULL, a};
    return store_run(s, do_report_extra, &r, err);
}

static err_code do_report_raw(pconn *c, void *vctx, err_info *err)
{
    report_ctx *r = vctx;
    const char *values[1] = {r->id};
    PGresult *res;
    err_code rc = exec_params(&res, c, "reading a report",
                              "SELECT raw FROM reports WHERE id = $1::uuid", 1, values, 1, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no report with id %s", r->id);
    }
    size_t len = (size_t)PQgetlength(res, 0, 0);
    uint8_t *raw = arena_alloc(r->a, len + 1, err);
    if (raw != NULL)
        memcpy(raw, PQgetvalue(res, 0, 0), len);
    PQclear(res);
    if (raw == NULL)
        return ERR_TOO_LARGE;
    *r->raw = raw;
    *r->len = len;
    return ERR_OK;
}

err_code store_report_raw_get(const uint8_t **raw, size_t *len, store *s, const char *id,
                              arena *a, err_info *err)
{
    *raw = NULL;
    *len = 0;
    if (!looks_like_uuid(id))
        return err_set(err, ERR_NOT_FOUND, "no report with id %.64s", id);
    report_ctx r = {id, NULL, raw, len, a};
    return store_run(s, do_report_raw, &r, err);
}

err_code store_dsyms_missing(const char **json, store *s, unsigned limit, arena *a,
                             err_info *err)
{
    char limit_s[16];
    snprintf(limit_s, sizeof limit_s, "%u", limit);
    const char *values[1] = {limit_s};
    /* The image name comes from one waiting report's model. */
    return run_json(json, s, "listing missing dSYMs",
                    "WITH m AS (SELECT u, count(*) AS n, min(r.received_at) AS first_r, "
                    "max(r.received_at) AS last_r, (array_agg(r.id))[1] AS sample "
                    "FROM reports r, unnest(r.missing_uuids) u "
                    "WHERE r.status = 'pending_dsym' GROUP BY u ORDER BY n DESC, u "
                    "LIMIT $1::int) "
                    "SELECT json_build_object('missing', coalesce(json_agg(json_build_object("
                    "'uuid', upper(m.u::text), 'name', (SELECT img->>'name' FROM reports r, "
                    "json_array_elements(r.symbolicated::json->'images') img WHERE r.id = m.sample "
                    "AND upper(img->>'uuid') = upper(m.u::text) LIMIT 1), 'reports', m.n, "
                    "'first_received', " JTS("m.first_r") ", 'last_received', "
                    JTS("m.last_r") ") ORDER BY m.n DESC, m.u), '[]'))::text FROM m",
                    1, values, false, a, err);
}

static err_code do_queue_counts(pconn *c, void *vctx, err_info *err)
{
    store_queue_stats *o = vctx;
    PGresult *res;
    err_code rc = exec_params(&res, c, "counting reports",
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
