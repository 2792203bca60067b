/*
 * store_issues - the issues table and its per-day counts, read side (see store_issues.h):
 * lists, one issue with its breakdowns, an issue's reports, status changes, per-day counts of
 * many issues. The work queue writes them (store_queue.c).
 */
#include "store/store_issues.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "store/store_internal.h"

#define ISSUE_JSON                                                                          \
    "json_build_object('id', i.id, 'title', i.title, 'culprit', i.culprit, 'kind', i.kind,"  \
    " 'count', i.count, 'first_seen', " STORE_TS("i.first_seen") ", 'last_seen', "                \
    STORE_TS("i.last_seen") ", 'status', i.status, 'versions', i.versions, 'app', i.app,"         \
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
    err_code rc = store_json_query(json, s, "listing issues", sql, 11, values, false, a, err);
    free(sql);
    return rc;
}

static const char SQL_ISSUE_GET[] =
    "SELECT json_build_object('id', i.id, 'app', i.app, 'kind', i.kind, "
    "'fingerprint', i.fingerprint, 'title', i.title, 'culprit', i.culprit, "
    "'exception', i.exception, 'basis', i.basis, 'provisional', i.provisional, "
    "'frames', i.frames, 'count', i.count, 'first_seen', " STORE_TS("i.first_seen") ", "
    "'last_seen', " STORE_TS("i.last_seen") ", 'status', i.status, 'resolved_in', i.resolved_in, "
    "'resolved_at', " STORE_TS("i.resolved_at") ", 'regressed', i.regressed, "
    "'regressed_at', " STORE_TS("i.regressed_at") ", 'versions', i.versions, "
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
    STORE_TS("r.received_at") ", 'app_version', r.app_version, 'os_version', r.os_version, "
    "'hardware_model', r.hardware_model, 'report', r.symbolicated::json) "
    "FROM reports r WHERE r.id = i.last_report))::text "
    "FROM issues i WHERE i.id = $1::bigint";

err_code store_issue_get(const char **json, store *s, int64_t id, arena *a, err_info *err)
{
    char id_s[24];
    snprintf(id_s, sizeof id_s, "%lld", (long long)id);
    const char *values[1] = {id_s};
    err_code rc = store_json_query(json, s, "reading an issue", SQL_ISSUE_GET, 1, values, true, a, err);
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
    "'received_at', " STORE_TS("n.received_at") ", 'status', n.status, 'app_version', "
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
    err_code rc = store_json_query(json, s, "listing an issue's reports", SQL_ISSUE_REPORTS, 5, values,
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
    err_code rc = store_json_query(json, s, "changing an issue's status",
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

/* ---- per-day counts of many issues (the dashboard's sparklines) ---------------------- */

/* $1 bigint[] of issue ids, $2 number of days. Days are UTC, as issue_days counts them. */
static const char SQL_DAILY[] =
    "WITH d AS (SELECT g::date AS day FROM generate_series("
    "(now() AT TIME ZONE 'UTC')::date - ($2::int - 1), (now() AT TIME ZONE 'UTC')::date, "
    "interval '1 day') g) "
    "SELECT json_build_object("
    "'days', (SELECT json_agg(to_char(d.day, 'YYYY-MM-DD') ORDER BY d.day) FROM d), "
    "'issues', coalesce((SELECT json_object_agg(i.id, (SELECT json_agg(coalesce(c.count, 0) "
    "ORDER BY d.day) FROM d LEFT JOIN issue_days c ON c.issue_id = i.id AND c.day = d.day)) "
    "FROM issues i WHERE i.id = ANY($1::bigint[])), '{}'))::text";

err_code store_issues_daily(const char **json, store *s, const int64_t *ids, size_t n,
                            unsigned days, arena *a, err_info *err)
{
    *json = NULL;
    buf arr;   /* Postgres array literal: {1,2,3} */
    buf_init(&arr);
    buf_append_str(&arr, "{");
    for (size_t i = 0; i < n; i++)
        buf_printf(&arr, "%s%" PRId64, i ? "," : "", ids[i]);
    buf_append_str(&arr, "}");
    char days_s[16];
    snprintf(days_s, sizeof days_s, "%u", days);
    const char *values[2] = {(const char *)arr.data, days_s};
    err_code rc = store_json_query(json, s, "reading daily counts", SQL_DAILY, 2, values, false,
                                   a, err);
    buf_reset(&arr);
    return rc;
}
