/*
 * store_releases - the releases API's reads (see store_releases.h). One statement per page:
 * the release_envs rows of the project (and environment) grouped by release, their hours
 * summed, the last 24 hours for adoption, and the issues whose first version is the
 * release's version.
 */
#include "store/store_releases.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

/* "com.example.app@1.4+103" -> "1.4": Sentry's package@version+build; a release without '@'
 * is taken as the version itself (what reports carry as app_version). */
#define SQL_RELEASE_VERSION(col) \
    "regexp_replace(regexp_replace(" col ", '^[^@]*@', ''), '\\+.*$', '')"

static const store_stmt SQL_LIST = {"releases_list",
    "WITH e AS (SELECT id, release, first_seen, last_seen, user_rows, crashed_rows, user_level "
    "FROM release_envs WHERE project_id = $1::bigint "
    "AND ($2::text IS NULL OR environment = $2::text) "
    "AND ($6::text IS NULL OR release = $6::text)), "
    "r AS (SELECT release, min(first_seen) AS fs, max(last_seen) AS ls, "
    "sum(user_rows * (1::bigint << user_level::int)) AS users, "
    "sum(crashed_rows * (1::bigint << user_level::int)) AS cu FROM e GROUP BY release), "
    "pg AS (SELECT * FROM r WHERE $3::bigint IS NULL OR "
    "((extract(epoch FROM fs) * 1000000)::bigint, release) < ($3::bigint, $4::text) "
    "ORDER BY fs DESC, release DESC LIMIT $5::int), "
    "h AS MATERIALIZED (SELECT e.release, sum(h.sessions) AS s, sum(h.crashed) AS c, "
    "sum(h.abnormal) AS a, sum(h.errored) AS er, "
    "sum(h.sessions) FILTER (WHERE h.hour >= date_trunc('hour', now()) - interval '23 hours') "
    "AS recent FROM session_hours h JOIN e ON e.id = h.renv "
    "WHERE e.release IN (SELECT release FROM pg) GROUP BY e.release), "
    "tot AS MATERIALIZED (SELECT coalesce(sum(h.sessions), 0) AS t FROM session_hours h "
    "JOIN e ON e.id = h.renv WHERE h.hour >= date_trunc('hour', now()) - interval '23 hours'), "
    "firsts AS (SELECT i.first_version AS fv, count(*) AS n FROM issues i "
    "WHERE i.project_id = $1::bigint AND i.first_version IN (SELECT "
    SQL_RELEASE_VERSION("release") " FROM pg) GROUP BY 1) "
    "SELECT pg.release, coalesce(h.s, 0), coalesce(h.c, 0), coalesce(h.a, 0), "
    "coalesce(h.er, 0), pg.users, pg.cu, " STORE_TS("pg.fs") ", " STORE_TS("pg.ls") ", "
    "coalesce((SELECT n FROM firsts WHERE fv = " SQL_RELEASE_VERSION("pg.release") "), 0), "
    "coalesce(h.recent, 0), tot.t, (extract(epoch FROM pg.fs) * 1000000)::bigint "
    "FROM pg LEFT JOIN h USING (release) CROSS JOIN tot ORDER BY pg.fs DESC, pg.release DESC"};

typedef struct {
    const store_release_query *q;
    arena *a;
    store_release_row *rows;
    size_t n;
    const char *next_cursor;
} list_ctx;

static int64_t num(PGresult *res, int row, int col)
{
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static err_code do_list(pconn *c, void *vctx, err_info *err)
{
    list_ctx *x = vctx;
    const store_release_query *q = x->q;
    char pid[24], limit[16], cur_us[24];
    const char *cur_rel = NULL, *cur = NULL;
    snprintf(pid, sizeof pid, "%lld", (long long)q->project_id);
    snprintf(limit, sizeof limit, "%u", q->limit + 1);
    if (q->cursor) {
        /* "<first_seen in us>.<release>" */
        const char *dot = strchr(q->cursor, '.');
        char *end;
        long long us = strtoll(q->cursor, &end, 10);
        if (dot == NULL || end != dot || q->cursor == dot)
            return err_set(err, ERR_INVALID, "cursor: not a cursor this API gave: \"%.64s\"",
                           q->cursor);
        snprintf(cur_us, sizeof cur_us, "%lld", us);
        cur = cur_us;
        cur_rel = dot + 1;
    }
    const char *v[6] = {pid, q->environment, cur, cur_rel, limit, q->release};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_LIST, 6, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res);
    bool more = n > q->limit;
    if (more)
        n = q->limit;
    x->rows = n ? arena_alloc_array(x->a, n, sizeof *x->rows, err) : NULL;
    if (n && x->rows == NULL) {
        PQclear(res);
        return ERR_TOO_LARGE;
    }
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        int r = (int)i;
        store_release_row *o = &x->rows[i];
        o->release = store_dup(x->a, res, r, 0, err, &rc);
        o->sessions = num(res, r, 1);
        o->crashed = num(res, r, 2);
        o->abnormal = num(res, r, 3);
        o->errored = num(res, r, 4);
        o->users = num(res, r, 5);
        o->crashed_users = num(res, r, 6);
        o->first_seen = store_dup(x->a, res, r, 7, err, &rc);
        o->last_seen = store_dup(x->a, res, r, 8, err, &rc);
        o->new_issues = num(res, r, 9);
        o->recent_sessions = num(res, r, 10);
        o->recent_total = num(res, r, 11);
    }
    if (rc == ERR_OK && more) {
        x->next_cursor = arena_sprintf(x->a, err, "%s.%s", PQgetvalue(res, (int)n - 1, 12),
                                       PQgetvalue(res, (int)n - 1, 0));
        if (x->next_cursor == NULL)
            rc = ERR_TOO_LARGE;
    }
    x->n = n;
    PQclear(res);
    return rc;
}

err_code store_releases_list(store_release_page *out, store *s, const store_release_query *q,
                             arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    list_ctx x = {q, a, NULL, 0, NULL};
    err_code rc = store_run(s, do_list, &x, err);
    if (rc != ERR_OK)
        return rc;
    out->releases = x.rows;
    out->n = x.n;
    out->next_cursor = x.next_cursor;
    return ERR_OK;
}

/* ---- one release ----------------------------------------------------------------------- */

static const store_stmt SQL_DAYS = {"releases_days",
    "SELECT to_char(h.hour AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, sum(h.sessions), "
    "sum(h.crashed), sum(h.abnormal), sum(h.errored) FROM session_hours h "
    "JOIN release_envs e ON e.id = h.renv WHERE e.project_id = $1::bigint "
    "AND e.release = $2::text AND ($3::text IS NULL OR e.environment = $3::text) "
    "GROUP BY 1 ORDER BY 1"};

/* Issues seen in the release's version, by their reports from that version (reports carry
 * no device id: users of an issue are not known). Candidates are the 50 largest issues
 * listing the version (in the order of index issues_count, which a scan stops reading after
 * the 50th: with ties in id order it sorted every issue); their reports from it are the
 * issue's app-version breakdown counter (migration 0016: one row, whatever the issue's size;
 * it keeps expired reports, as the issue's count does). */
static const store_stmt SQL_TOP_ISSUES = {"releases_top_issues",
    "WITH cand AS (SELECT id, title, culprit, status, count FROM issues "
    "WHERE project_id = $2::bigint AND versions @> ARRAY[$1::text] "
    "ORDER BY count DESC, id DESC LIMIT 50) "
    "SELECT c.id, c.title, c.culprit, c.status, c.count, "
    "coalesce((SELECT b.count FROM issue_breakdowns b WHERE b.issue_id = c.id AND b.dim = 0 "
    "AND b.value = $1::text), 0) AS n FROM cand c ORDER BY n DESC, c.count DESC, c.id LIMIT 10"};

static const store_stmt SQL_VERSION = {"releases_version",
    "SELECT " SQL_RELEASE_VERSION("$1::text")};

typedef struct {
    const store_release_query *q;
    arena *a;
    store_release_detail *out;
} get_ctx;

static err_code do_get(pconn *c, void *vctx, err_info *err)
{
    get_ctx *x = vctx;
    store_release_detail *o = x->out;
    char pid[24];
    snprintf(pid, sizeof pid, "%lld", (long long)x->q->project_id);
    const char *v[3] = {pid, x->q->release, x->q->environment};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_DAYS, 3, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    o->ndays = (size_t)PQntuples(res);
    o->days = o->ndays ? arena_alloc_array(x->a, o->ndays, sizeof *o->days, err) : NULL;
    if (o->ndays && o->days == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; i < o->ndays && rc == ERR_OK; i++) {
        int r = (int)i;
        o->days[i].day = store_dup(x->a, res, r, 0, err, &rc);
        o->days[i].sessions = num(res, r, 1);
        o->days[i].crashed = num(res, r, 2);
        o->days[i].abnormal = num(res, r, 3);
        o->days[i].errored = num(res, r, 4);
    }
    PQclear(res);
    if (rc != ERR_OK)
        return rc;
    const char *rv[1] = {x->q->release};
    rc = store_exec(&res, c, &SQL_VERSION, 1, rv, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    o->version = store_dup(x->a, res, 0, 0, err, &rc);
    PQclear(res);
    if (rc != ERR_OK)
        return rc;
    const char *iv[2] = {o->version, pid};
    rc = store_exec(&res, c, &SQL_TOP_ISSUES, 2, iv, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    o->nissues = (size_t)PQntuples(res);
    o->issues = o->nissues ? arena_alloc_array(x->a, o->nissues, sizeof *o->issues, err) : NULL;
    if (o->nissues && o->issues == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; i < o->nissues && rc == ERR_OK; i++) {
        int r = (int)i;
        store_release_issue *is = &o->issues[i];
        is->id = num(res, r, 0);
        is->title = store_dup(x->a, res, r, 1, err, &rc);
        is->culprit = store_dup(x->a, res, r, 2, err, &rc);
        is->status = store_dup(x->a, res, r, 3, err, &rc);
        is->count = num(res, r, 4);
        is->reports = num(res, r, 5);
    }
    PQclear(res);
    return rc;
}

err_code store_release_get(store_release_detail *out, store *s, const store_release_query *q,
                           arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    store_release_page page;
    store_release_query one = *q;
    one.cursor = NULL;
    one.limit = 1;
    err_code rc = store_releases_list(&page, s, &one, a, err);
    if (rc != ERR_OK)
        return rc;
    if (page.n == 0)
        return err_set(err, ERR_NOT_FOUND, "release \"%.128s\": no sessions", q->release);
    out->release = page.releases[0];
    get_ctx x = {q, a, out};
    return store_run(s, do_get, &x, err);
}
