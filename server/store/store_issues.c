/*
 * store_issues - the issues table and its per-day counts, read side (see store_issues.h):
 * lists, one issue with its breakdowns, an issue's reports, status changes, per-day counts of
 * many issues. Rows come back as C records; the JSON is written by server/http. The work
 * queue writes these tables (store_queue.c).
 */
#include "store/store_issues.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "store/store_internal.h"

/* Every column of store_issue, in read_issue's order. */
#define ISSUE_COLUMNS                                                                        \
    "i.id, i.app, i.kind, i.fingerprint, i.title, i.culprit, i.exception, i.basis, "         \
    "i.provisional, i.frames::text, i.count, " STORE_TS("i.first_seen") ", "                 \
    STORE_TS("i.last_seen") ", i.status, i.resolved_in, " STORE_TS("i.resolved_at") ", "     \
    "i.regressed, " STORE_TS("i.regressed_at") ", array_to_json(i.versions)::text, "          \
    "i.project_id"
#define ISSUE_NCOLUMNS 20

static bool is_true(PGresult *res, int row, int col)
{
    return PQgetvalue(res, row, col)[0] == 't';
}

static void read_issue(store_issue *o, PGresult *res, int row, arena *a, err_info *err,
                       err_code *rc)
{
    o->id = strtoll(PQgetvalue(res, row, 0), NULL, 10);
    o->app = store_dup(a, res, row, 1, err, rc);
    o->kind = store_dup(a, res, row, 2, err, rc);
    o->fingerprint = store_dup(a, res, row, 3, err, rc);
    o->title = store_dup(a, res, row, 4, err, rc);
    o->culprit = store_dup(a, res, row, 5, err, rc);
    o->exception = store_dup(a, res, row, 6, err, rc);
    o->basis = store_dup(a, res, row, 7, err, rc);
    o->provisional = is_true(res, row, 8);
    o->frames_json = store_dup(a, res, row, 9, err, rc);
    o->count = strtoll(PQgetvalue(res, row, 10), NULL, 10);
    o->first_seen = store_dup(a, res, row, 11, err, rc);
    o->last_seen = store_dup(a, res, row, 12, err, rc);
    o->status = store_dup(a, res, row, 13, err, rc);
    o->resolved_in = store_dup(a, res, row, 14, err, rc);
    o->resolved_at = store_dup(a, res, row, 15, err, rc);
    o->regressed = is_true(res, row, 16);
    o->regressed_at = store_dup(a, res, row, 17, err, rc);
    o->versions_json = store_dup(a, res, row, 18, err, rc);
    o->project_id = strtoll(PQgetvalue(res, row, 19), NULL, 10);
}

/* ---- lists ------------------------------------------------------------------------------ */

/* Sort keys as integers (microseconds since the epoch for times), so that a cursor is
 * "<key>_<id>" and compares exactly. */
static const struct {
    const char *name, *key, *order, *after;
} SORTS[] = {
    {"last_seen", "(extract(epoch FROM i.last_seen) * 1000000)::bigint",
     "i.last_seen DESC, i.id DESC",
     "(i.last_seen, i.id) < ('epoch'::timestamptz + $9::bigint * interval '1 microsecond', "
     "$10::bigint)"},
    {"first_seen", "(extract(epoch FROM i.first_seen) * 1000000)::bigint",
     "i.first_seen DESC, i.id DESC",
     "(i.first_seen, i.id) < ('epoch'::timestamptz + $9::bigint * interval '1 microsecond', "
     "$10::bigint)"},
    {"count", "i.count", "i.count DESC, i.id DESC",
     "(i.count, i.id) < ($9::bigint, $10::bigint)"},
};
#define NSORTS (sizeof SORTS / sizeof SORTS[0])

/* The search text $7 as a LIKE pattern (SQL text, given to asprintf as an argument, never in
 * its format): lowered, its own '\', '%' and '_' escaped, between wildcards, so that
 * "contains, ignoring case" can use the trigram index of issue_search (migration 0025) on
 * lower(title) and lower(culprit) (without pg_trgm every row of issue_search is read). */
#define SEARCH_PATTERN \
    "('%' || replace(replace(replace(lower($7), '\\', '\\\\'), '%', '\\%'), '_', " \
    "'\\_') || '%')"
/* With a search, the issues whose title or culprit contains it, as a semi-join on
 * issue_search: Postgres pulls up an `IN` that is a conjunct of WHERE and reads the trigram
 * index first, where `$7 IS NULL OR i.id IN (...)` is a hashed subplan that reads every
 * issue (10,000 issues: every row read, against the matching few). Without one, $7 is still
 * named, so that its type is known. */
#define SEARCH_IN                                                                            \
    "i.id IN (SELECT s.issue_id FROM issue_search s WHERE lower(s.title) LIKE "              \
    SEARCH_PATTERN " OR lower(s.culprit) LIKE " SEARCH_PATTERN ")"
#define SEARCH_NONE "$7::text IS NULL"

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

typedef struct {
    const char *sql;
    const char *const *values;
    int nvalues;
    unsigned limit;
    store_issue **out;
    size_t *n;
    const char **next_cursor;
    arena *a;
} list_ctx;

/* The page query returns limit + 1 rows at most, the sort key last: one more row than the
 * page means there is a next page, which starts after the page's last row. */
static err_code do_issues_list(pconn *c, void *vctx, err_info *err)
{
    list_ctx *q = vctx;
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "listing issues", q->sql, q->nvalues, q->values, 0,
                                 err);
    if (rc != ERR_OK)
        return rc;
    size_t got = (size_t)PQntuples(res), n = got > q->limit ? q->limit : got;
    store_issue *rows = arena_alloc_array(q->a, n ? n : 1, sizeof *rows, err);
    if (rows == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; rc == ERR_OK && i < n; i++)
        read_issue(&rows[i], res, (int)i, q->a, err, &rc);
    if (rc == ERR_OK && got > n)
        *q->next_cursor = arena_sprintf(q->a, err, "%s_%" PRId64,
                                        PQgetvalue(res, (int)n - 1, ISSUE_NCOLUMNS),
                                        rows[n - 1].id);
    if (rc == ERR_OK && got > n && *q->next_cursor == NULL)
        rc = ERR_TOO_LARGE;
    PQclear(res);
    if (rc == ERR_OK) {
        *q->out = rows;
        *q->n = n;
    }
    return rc;
}

err_code store_issues_list(store_issue **out, size_t *n, const char **next_cursor, store *s,
                           const store_issue_query *q, arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    *next_cursor = NULL;
    size_t sort = 0;
    if (q->sort != NULL) {
        while (sort < NSORTS && strcmp(SORTS[sort].name, q->sort) != 0)
            sort++;
        if (sort == NSORTS)
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
    char project_s[24];
    snprintf(project_s, sizeof project_s, "%lld", (long long)q->project_id);
    char *sql = NULL;
    if (asprintf(&sql,
                 "SELECT " ISSUE_COLUMNS ", %s FROM issues i "
                 "WHERE ($1::text IS NULL OR i.app = $1) AND ($2::text IS NULL OR i.kind = $2) "
                 "AND ($3::text IS NULL OR i.versions @> ARRAY[$3::text]) "
                 "AND ($4::text IS NULL OR i.status = $4) "
                 "AND ($5::timestamptz IS NULL OR i.last_seen >= $5) "
                 "AND ($6::timestamptz IS NULL OR i.last_seen < $6) "
                 "AND %s AND (NOT $8::boolean OR %s) "
                 "AND ($12::bigint = 0 OR i.project_id = $12::bigint) "
                 "ORDER BY %s LIMIT $11::int + 1",
                 SORTS[sort].key, q->q != NULL ? SEARCH_IN : SEARCH_NONE, SORTS[sort].after,
                 SORTS[sort].order) < 0)
        return err_set(err, ERR_INTERNAL, "listing issues: out of memory");
    const char *values[12] = {q->app, q->kind, q->version, q->status, q->since, q->until, q->q,
                              q->cursor ? "t" : "f", key_s, id_s, limit_s, project_s};
    list_ctx ctx = {sql, values, 12, q->limit, out, n, next_cursor, a};
    err_code rc = store_run(s, do_issues_list, &ctx, err);
    free(sql);
    /* since and until are read by Postgres as the client sent them (any form timestamptz
     * takes): its refusal is theirs, said in our words */
    if (rc != ERR_OK && store_refused_value(err) && (q->since != NULL || q->until != NULL))
        rc = err_set(err, ERR_INVALID, "since and until must be times (2026-01-07T10:31:02Z), "
                     "not '%.40s'", q->since != NULL ? q->since : q->until);
    return rc;
}

/* ---- one issue ------------------------------------------------------------------------ */

static const store_stmt ST_ISSUE_GET = {
    "issue_get", "SELECT " ISSUE_COLUMNS " FROM issues i WHERE i.id = $1::bigint"};
/* dimension (0 app_version, 1 os_version, 2 hardware_model), value, count */
/* The counters kept with each report (migration 0016): a few rows whatever the issue's size. */
static const store_stmt ST_ISSUE_BREAKDOWNS = {
    "issue_breakdowns",
    "SELECT dim, nullif(value, ''), count FROM issue_breakdowns WHERE issue_id = $1::bigint "
    "AND count > 0 ORDER BY dim, count DESC, value"};
static const store_stmt ST_ISSUE_DAILY = {
    "issue_daily",
    "SELECT to_char(d, 'YYYY-MM-DD'), coalesce(x.count, 0) "
    "FROM generate_series((now() AT TIME ZONE 'UTC')::date - 29, "
    "(now() AT TIME ZONE 'UTC')::date, interval '1 day') d "
    "LEFT JOIN issue_days x ON x.issue_id = $1::bigint AND x.day = d::date ORDER BY d"};
/* Hang duration over the issue's reports that give one (metadata.hang_duration_ms of the
 * symbolicated model, present only for hangs): crash reports are skipped without reading
 * their models, and only models that name the key are parsed. No row = none gives it. */
static const store_stmt ST_ISSUE_HANG = {
    "issue_hang",
    "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY h))::bigint, "
    "round(percentile_cont(0.9) WITHIN GROUP (ORDER BY h))::bigint, max(h)::bigint "
    "FROM (SELECT (symbolicated::jsonb #>> '{metadata,hang_duration_ms}')::numeric AS h "
    "FROM reports WHERE issue_id = $1::bigint AND kind IS DISTINCT FROM 'crash' "
    "AND strpos(symbolicated, '\"hang_duration_ms\"') > 0) x WHERE h IS NOT NULL "
    "HAVING count(*) > 0"};
static const store_stmt ST_ISSUE_SAMPLE = {
    "issue_sample",
    "SELECT r.id::text, " STORE_TS("r.received_at") ", r.app_version, r.os_version, "
    "r.hardware_model, r.symbolicated FROM issues i JOIN reports r ON r.id = i.last_report "
    "WHERE i.id = $1::bigint"};

typedef struct {
    const char *id;
    store_issue_detail *out;
    arena *a;
} detail_ctx;

static err_code read_breakdowns(detail_ctx *q, PGresult *res, err_info *err)
{
    size_t n = (size_t)PQntuples(res), count[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        int d = atoi(PQgetvalue(res, (int)i, 0));
        if (d >= 0 && d < 3)
            count[d]++;
    }
    store_count *lists[3];
    for (int d = 0; d < 3; d++) {
        lists[d] = arena_alloc_array(q->a, count[d] ? count[d] : 1, sizeof *lists[d], err);
        if (lists[d] == NULL)
            return ERR_TOO_LARGE;
        count[d] = 0;
    }
    err_code rc = ERR_OK;
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        int d = atoi(PQgetvalue(res, (int)i, 0));
        if (d < 0 || d >= 3)
            continue;
        store_count *sc = &lists[d][count[d]++];
        sc->value = store_dup(q->a, res, (int)i, 1, err, &rc);
        sc->count = strtoll(PQgetvalue(res, (int)i, 2), NULL, 10);
    }
    store_issue_detail *o = q->out;
    o->by_app_version = lists[0], o->n_app_version = count[0];
    o->by_os_version = lists[1], o->n_os_version = count[1];
    o->by_hardware_model = lists[2], o->n_hardware_model = count[2];
    return rc;
}

static err_code do_issue_get(pconn *c, void *vctx, err_info *err)
{
    detail_ctx *q = vctx;
    store_issue_detail *o = q->out;
    const char *values[1] = {q->id};
    PGresult *res = NULL;
    /* one snapshot for the four reads, as one statement would see */
    err_code rc = store_command(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                                "reading an issue", err);
    if (rc == ERR_OK)
        rc = store_exec(&res, c, &ST_ISSUE_GET, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;   /* store_release rolls back a transaction left open */
    if (PQntuples(res) == 0)
        rc = err_set(err, ERR_NOT_FOUND, "no issue with id %s", q->id);
    else
        read_issue(&o->issue, res, 0, q->a, err, &rc);
    PQclear(res);
    if (rc == ERR_OK)
        rc = store_exec(&res, c, &ST_ISSUE_BREAKDOWNS, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    rc = read_breakdowns(q, res, err);
    PQclear(res);
    if (rc == ERR_OK)
        rc = store_exec(&res, c, &ST_ISSUE_DAILY, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    for (int i = 0; rc == ERR_OK && i < PQntuples(res) && i < 30; i++) {
        o->daily[i].day = store_dup(q->a, res, i, 0, err, &rc);
        o->daily[i].count = strtoll(PQgetvalue(res, i, 1), NULL, 10);
    }
    PQclear(res);
    /* a crash issue's reports give no hang duration: no need to read them */
    bool crash = o->issue.kind != NULL && strcmp(o->issue.kind, "crash") == 0;
    if (rc == ERR_OK && !crash) {
        rc = store_exec(&res, c, &ST_ISSUE_HANG, 1, values, NULL, NULL, err);
        if (rc != ERR_OK)
            return rc;
        o->has_hang_duration = PQntuples(res) > 0;
        if (o->has_hang_duration) {
            o->hang_median_ms = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
            o->hang_p90_ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
            o->hang_max_ms = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
        }
        PQclear(res);
    }
    if (rc == ERR_OK)
        rc = store_exec(&res, c, &ST_ISSUE_SAMPLE, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    o->has_sample = PQntuples(res) > 0;
    if (o->has_sample) {
        o->sample.id = store_dup(q->a, res, 0, 0, err, &rc);
        o->sample.received_at = store_dup(q->a, res, 0, 1, err, &rc);
        o->sample.app_version = store_dup(q->a, res, 0, 2, err, &rc);
        o->sample.os_version = store_dup(q->a, res, 0, 3, err, &rc);
        o->sample.hardware_model = store_dup(q->a, res, 0, 4, err, &rc);
        o->sample.report_json = store_dup(q->a, res, 0, 5, err, &rc);
    }
    PQclear(res);
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "reading an issue", err);
    return rc;
}

err_code store_issue_get(store_issue_detail *out, store *s, int64_t id, arena *a, err_info *err)
{
    char id_s[24];
    snprintf(id_s, sizeof id_s, "%lld", (long long)id);
    memset(out, 0, sizeof *out);
    detail_ctx q = {id_s, out, a};
    return store_run(s, do_issue_get, &q, err);
}

/* ---- an issue's reports ------------------------------------------------------------------ */

static const store_stmt ST_ISSUE_REPORTS = {
    "issue_reports",
    "SELECT r.id::text, " STORE_TS("r.received_at") ", r.status, r.app_version, "
    "r.os_version, r.hardware_model, (extract(epoch FROM r.received_at) * 1000000)::bigint "
    "FROM reports r WHERE r.issue_id = $1::bigint AND (NOT $2::boolean OR "
    "(r.received_at, r.id) < ('epoch'::timestamptz + $3::bigint * interval '1 microsecond', "
    "$4::uuid)) ORDER BY r.received_at DESC, r.id DESC LIMIT $5::int + 1"};
static const store_stmt ST_ISSUE_EXISTS = {
    "issue_exists", "SELECT 1 FROM issues WHERE id = $1::bigint"};

typedef struct {
    const char *const *values;   /* id, has cursor, key, report id, limit */
    unsigned limit;
    store_issue_report **out;
    size_t *n;
    const char **next_cursor;
    arena *a;
} reports_ctx;

static err_code do_issue_reports(pconn *c, void *vctx, err_info *err)
{
    reports_ctx *q = vctx;
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_ISSUE_REPORTS, 5, q->values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t got = (size_t)PQntuples(res), n = got > q->limit ? q->limit : got;
    if (got == 0) {   /* an empty page, or no such issue */
        PQclear(res);
        rc = store_exec(&res, c, &ST_ISSUE_EXISTS, 1, q->values, NULL, NULL, err);
        if (rc != ERR_OK)
            return rc;
        if (PQntuples(res) == 0)
            rc = err_set(err, ERR_NOT_FOUND, "no issue with id %s", q->values[0]);
    }
    store_issue_report *rows = arena_alloc_array(q->a, n ? n : 1, sizeof *rows, err);
    if (rc == ERR_OK && rows == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        int row = (int)i;
        rows[i].id = store_dup(q->a, res, row, 0, err, &rc);
        rows[i].received_at = store_dup(q->a, res, row, 1, err, &rc);
        rows[i].status = store_dup(q->a, res, row, 2, err, &rc);
        rows[i].app_version = store_dup(q->a, res, row, 3, err, &rc);
        rows[i].os_version = store_dup(q->a, res, row, 4, err, &rc);
        rows[i].hardware_model = store_dup(q->a, res, row, 5, err, &rc);
    }
    if (rc == ERR_OK && got > n) {
        *q->next_cursor = arena_sprintf(q->a, err, "%s_%s", PQgetvalue(res, (int)n - 1, 6),
                                        rows[n - 1].id);
        if (*q->next_cursor == NULL)
            rc = ERR_TOO_LARGE;
    }
    PQclear(res);
    if (rc == ERR_OK) {
        *q->out = rows;
        *q->n = n;
    }
    return rc;
}

err_code store_issue_reports(store_issue_report **out, size_t *n, const char **next_cursor,
                             store *s, int64_t id, unsigned limit, const char *cursor, arena *a,
                             err_info *err)
{
    char id_s[24], key_s[24] = "0", limit_s[16], rid[40] = "00000000-0000-0000-0000-000000000000";
    *out = NULL;
    *n = 0;
    *next_cursor = NULL;
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
    reports_ctx q = {values, limit, out, n, next_cursor, a};
    return store_run(s, do_issue_reports, &q, err);
}

/* ---- status changes ------------------------------------------------------------------- */

static const store_stmt ST_ISSUE_SET_STATUS = {
    "issue_set_status",
    "UPDATE issues i SET status = $2, "
    "resolved_in = CASE WHEN $2 = 'resolved' THEN $3 END, "
    "resolved_at = CASE WHEN $2 = 'resolved' THEN now() END, "
    "regressed = false WHERE i.id = $1::bigint RETURNING " ISSUE_COLUMNS};

typedef struct {
    const char *const *values;   /* id, status, resolved_in */
    store_issue *out;
    arena *a;
} status_ctx;

static err_code do_issue_set_status(pconn *c, void *vctx, err_info *err)
{
    status_ctx *q = vctx;
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_ISSUE_SET_STATUS, 3, q->values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0)
        rc = err_set(err, ERR_NOT_FOUND, "no issue with id %s", q->values[0]);
    else
        read_issue(q->out, res, 0, q->a, err, &rc);
    PQclear(res);
    return rc;
}

err_code store_issue_set_status(store_issue *out, store *s, int64_t id, const char *status,
                                const char *resolved_in, arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(status, "open") != 0 && strcmp(status, "resolved") != 0 &&
        strcmp(status, "ignored") != 0)
        return err_set(err, ERR_INVALID, "status must be open, resolved or ignored, not '%.40s'",
                       status);
    char id_s[24];
    snprintf(id_s, sizeof id_s, "%lld", (long long)id);
    const char *values[3] = {id_s, status, resolved_in};
    status_ctx q = {values, out, a};
    return store_run(s, do_issue_set_status, &q, err);
}

/* ---- per-day counts of many issues (the dashboard's sparklines) ---------------------- */

/* $1 bigint[] of issue ids, $2 number of days. Days are UTC, as issue_days counts them.
 * One row per (issue, day), issues in id order, days oldest first; when no id names an
 * issue, one row per day with a NULL issue. The counts are read first by their primary key
 * (CTE c): joined to the generated days directly, the planner guessed a thousand days and
 * hashed all of issue_days (240 ms at 10,000 issues). */
static const store_stmt ST_DAILY = {
    "issues_daily",
    "WITH d AS (SELECT g::date AS day FROM generate_series("
    "(now() AT TIME ZONE 'UTC')::date - ($2::int - 1), (now() AT TIME ZONE 'UTC')::date, "
    "interval '1 day') g), "
    "c AS (SELECT issue_id, day, count FROM issue_days WHERE issue_id = ANY($1::bigint[]) "
    "AND day >= (now() AT TIME ZONE 'UTC')::date - ($2::int - 1)) "
    "SELECT to_char(d.day, 'YYYY-MM-DD'), i.id, coalesce(c.count, 0) "
    "FROM d LEFT JOIN issues i ON i.id = ANY($1::bigint[]) "
    "LEFT JOIN c ON c.issue_id = i.id AND c.day = d.day ORDER BY i.id, d.day"};

typedef struct {
    const char *const *values;
    size_t ndays;
    store_daily *out;
    arena *a;
} daily_ctx;

static err_code do_daily(pconn *c, void *vctx, err_info *err)
{
    daily_ctx *q = vctx;
    store_daily *o = q->out;
    size_t ndays = q->ndays;
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DAILY, 2, q->values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t rows = (size_t)PQntuples(res);
    size_t nissues = rows > 0 && !PQgetisnull(res, 0, 1) ? rows / ndays : 0;
    o->days = arena_alloc_array(q->a, ndays, sizeof *o->days, err);
    o->issues = arena_alloc_array(q->a, nissues ? nissues : 1, sizeof *o->issues, err);
    if (o->days == NULL || o->issues == NULL)
        rc = ERR_TOO_LARGE;
    else if (rows != (nissues ? nissues : 1) * ndays)
        rc = err_set(err, ERR_INTERNAL, "reading daily counts: %zu rows for %zu days", rows,
                     ndays);
    for (size_t k = 0; rc == ERR_OK && k < ndays; k++)
        o->days[k] = store_dup(q->a, res, (int)k, 0, err, &rc);
    for (size_t i = 0; rc == ERR_OK && i < nissues; i++) {
        store_issue_days *d = &o->issues[i];
        d->id = strtoll(PQgetvalue(res, (int)(i * ndays), 1), NULL, 10);
        d->counts = arena_alloc_array(q->a, ndays, sizeof *d->counts, err);
        if (d->counts == NULL) {
            rc = ERR_TOO_LARGE;
            break;
        }
        for (size_t k = 0; k < ndays; k++)
            d->counts[k] = strtoll(PQgetvalue(res, (int)(i * ndays + k), 2), NULL, 10);
    }
    PQclear(res);
    if (rc == ERR_OK) {
        o->ndays = ndays;
        o->nissues = nissues;
    }
    return rc;
}

err_code store_issues_daily(store_daily *out, store *s, const int64_t *ids, size_t n,
                            unsigned days, arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    if (days == 0)
        return err_set(err, ERR_INVALID, "days must be at least 1");
    buf arr;   /* Postgres array literal: {1,2,3} */
    buf_init(&arr);
    buf_append_str(&arr, "{");
    for (size_t i = 0; i < n; i++)
        buf_printf(&arr, "%s%" PRId64, i ? "," : "", ids[i]);
    buf_append_str(&arr, "}");
    char days_s[16];
    snprintf(days_s, sizeof days_s, "%u", days);
    const char *values[2] = {(const char *)arr.data, days_s};
    daily_ctx q = {values, days, out, a};
    err_code rc = store_run(s, do_daily, &q, err);
    buf_reset(&arr);
    return rc;
}
