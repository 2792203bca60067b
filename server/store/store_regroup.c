/*
 * store_regroup - the regroup's SQL (see store_regroup.h).
 */
#include "store/store_regroup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "store/store_internal.h"

typedef struct {
    char *out;
    size_t cap;
    unsigned *demangle_revision;
} rules_ctx;

static err_code do_rules(pconn *c, void *vctx, err_info *err)
{
    rules_ctx *q = vctx;
    PGresult *res;
    err_code rc = store_exec_sql(&res, c, "reading the grouping rules' version",
                                 "SELECT version, demangle_revision FROM signature_rules", 0,
                                 NULL, 0, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) > 0) {
        store_copy(q->out, q->cap, res, 0, 0);
        *q->demangle_revision = (unsigned)strtoul(PQgetvalue(res, 0, 1), NULL, 10);
    }
    PQclear(res);
    return ERR_OK;
}

err_code store_signature_rules(char *out, size_t cap, unsigned *demangle_revision, store *s,
                               err_info *err)
{
    rules_ctx q = {out, cap, demangle_revision};
    if (cap > 0)
        out[0] = '\0';
    *demangle_revision = 0;
    return store_run(s, do_rules, &q, err);
}

static err_code do_reset(pconn *c, void *vctx, err_info *err)
{
    (void)vctx;
    return store_command(c, "TRUNCATE regroup_reports", "emptying the regroup list", err);
}

err_code store_regroup_reset(store *s, err_info *err)
{
    return store_run(s, do_reset, NULL, err);
}

static const char SQL_PAGE[] =
    "SELECT id::text, raw, issue_id::text, fingerprint, app, " STORE_TS_US("received_at") ", "
    "project_id::text, content_type FROM reports WHERE issue_id IS NOT NULL AND "
    "($1::timestamptz IS NULL OR (received_at, id) > ($1::timestamptz, $2::uuid)) "
    "ORDER BY received_at, id LIMIT $3::int";

typedef struct {
    store_claimed **rows;
    size_t *n;
    const char *after_at, *after_id;
    size_t max;
    arena *a;
} page_ctx;

static err_code do_page(pconn *c, void *vctx, err_info *err)
{
    page_ctx *q = vctx;
    char limit[24];
    snprintf(limit, sizeof limit, "%zu", q->max);
    const char *values[3] = {q->after_at, q->after_at ? q->after_id : NULL, limit};
    PGresult *res;
    /* binary results: raw arrives as its bytes; every other column is text anyway */
    err_code rc = store_exec_sql(&res, c, "reading reports to regroup", SQL_PAGE, 3, values, 1,
                                 err);
    if (rc != ERR_OK)
        return rc;
    size_t got = (size_t)PQntuples(res);
    store_claimed *rows = got ? arena_alloc_array(q->a, got, sizeof *rows, err) : NULL;
    if (got > 0 && rows == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; rc == ERR_OK && i < got; i++) {
        store_claimed *r = &rows[i];
        int row = (int)i;
        memset(r, 0, sizeof *r);
        snprintf(r->id, sizeof r->id, "%s", PQgetvalue(res, row, 0));
        r->raw_len = (size_t)PQgetlength(res, row, 1);
        uint8_t *raw = arena_alloc(q->a, r->raw_len + 1, err);
        if (raw == NULL) {
            rc = ERR_TOO_LARGE;
            break;
        }
        memcpy(raw, PQgetvalue(res, row, 1), r->raw_len);
        r->raw = raw;
        r->issue_id = strtoll(PQgetvalue(res, row, 2), NULL, 10);
        r->fingerprint = store_dup(q->a, res, row, 3, err, &rc);
        r->app = store_dup(q->a, res, row, 4, err, &rc);
        r->received_at = store_dup(q->a, res, row, 5, err, &rc);
        r->project_id = strtoll(PQgetvalue(res, row, 6), NULL, 10);
        r->content_type = store_dup(q->a, res, row, 7, err, &rc);
    }
    PQclear(res);
    if (rc == ERR_OK) {
        *q->rows = rows;
        *q->n = got;
    }
    return rc;
}

err_code store_regroup_page(store_claimed **rows, size_t *n, store *s, const char *after_at,
                            const char *after_id, size_t max, arena *a, err_info *err)
{
    page_ctx q = {rows, n, after_at, after_id, max, a};
    *rows = NULL;
    *n = 0;
    return store_run(s, do_page, &q, err);
}

static const char SQL_PUT[] =
    "INSERT INTO regroup_reports (report_id, received_at, old_issue, project_id, app, kind, "
    "fingerprint, title, culprit, exception, basis, provisional, frames) "
    "SELECT t.id, t.at, t.old_issue, t.project_id, t.app, t.kind, t.fingerprint, t.title, "
    "t.culprit, t.exception, t.basis, t.provisional, t.frames "
    "FROM json_to_recordset($1::json) AS t(id uuid, at timestamptz, old_issue bigint, "
    "project_id bigint, app text, kind text, fingerprint text, title text, culprit text, "
    "exception text, basis text, provisional boolean, frames jsonb) "
    "ON CONFLICT (report_id, received_at) DO UPDATE SET old_issue = EXCLUDED.old_issue, "
    "fingerprint = EXCLUDED.fingerprint, title = EXCLUDED.title, culprit = EXCLUDED.culprit, "
    "exception = EXCLUDED.exception, basis = EXCLUDED.basis, "
    "provisional = EXCLUDED.provisional, frames = EXCLUDED.frames, kind = EXCLUDED.kind";

typedef struct {
    const char *json;
} put_ctx;

static err_code do_put(pconn *c, void *vctx, err_info *err)
{
    put_ctx *q = vctx;
    const char *values[1] = {q->json};
    return store_exec_sql(NULL, c, "listing reports to regroup", SQL_PUT, 1, values, 0, err);
}

err_code store_regroup_put(store *s, const store_claimed *rows, const store_outcome *outcomes,
                           size_t n, err_info *err)
{
    buf b;
    buf_init(&b);
    jsonw j;
    jsonw_init(&j, &b);
    jsonw_array_begin(&j);
    size_t listed = 0;
    for (size_t i = 0; i < n; i++) {
        const store_outcome *o = &outcomes[i];
        if (!o->grouped)
            continue;
        listed++;
        jsonw_object_begin(&j);
        jsonw_kstr(&j, "id", rows[i].id);
        jsonw_kstr(&j, "at", rows[i].received_at);
        jsonw_kint(&j, "old_issue", rows[i].issue_id);
        jsonw_kint(&j, "project_id", rows[i].project_id ? rows[i].project_id
                                                         : STORE_PROJECT_DEFAULT);
        jsonw_kstr(&j, "app", o->app);
        jsonw_kstr(&j, "kind", o->kind);
        jsonw_kstr(&j, "fingerprint", o->fingerprint);
        jsonw_kstr(&j, "title", o->title);
        jsonw_kstr(&j, "culprit", o->culprit);
        jsonw_kstr(&j, "exception", o->exception);
        jsonw_kstr(&j, "basis", o->basis);
        jsonw_kbool(&j, "provisional", o->provisional);
        jsonw_kraw(&j, "frames", o->frames_json ? o->frames_json : "[]");
        jsonw_object_end(&j);
    }
    jsonw_array_end(&j);
    buf_putc(&b, '\0');
    err_code rc = ERR_OK;
    if (listed > 0) {
        put_ctx q = {(const char *)b.data};
        rc = store_run(s, do_put, &q, err);
    }
    buf_reset(&b);
    return rc;
}

/* ---- applying the list, one transaction ------------------------------------------------ */

typedef struct {
    const char *what;
    const char *sql;
} step;

static const step APPLY[] = {
    /* a split is not a new crash (alerts_issue_inserted reads this) */
    {"silencing new-issue alerts", "SET LOCAL stacksift.regroup = 'on'"},
    /* workers' issue upserts wait; readers go on */
    {"locking issues", "LOCK TABLE issues IN SHARE ROW EXCLUSIVE MODE"},
    /* the listed reports still in the issue they were read from */
    {"matching the list",
     "CREATE TEMP TABLE rg_m ON COMMIT DROP AS SELECT g.*, r.app_version, "
     "r.fingerprint AS old_fingerprint, (g.received_at AT TIME ZONE 'UTC')::date AS day "
     "FROM regroup_reports g JOIN reports r ON r.id = g.report_id "
     "AND r.received_at = g.received_at WHERE r.issue_id = g.old_issue"},
    /* each old issue's target: the new key most of its reports have */
    {"choosing targets",
     "CREATE TEMP TABLE rg_tgt ON COMMIT DROP AS SELECT DISTINCT ON (old_issue) old_issue, "
     "project_id, app, fingerprint FROM (SELECT old_issue, project_id, app, fingerprint, "
     "count(*) AS n FROM rg_m GROUP BY 1, 2, 3, 4) t ORDER BY old_issue, n DESC, fingerprint"},
    /* each new key's issue: one holding it already (unless its own reports go elsewhere), else
     * the targeting old issue with the most reports, else none yet (a split: made below) */
    {"choosing the issues kept",
     "CREATE TEMP TABLE rg_keep ON COMMIT DROP AS "
     "SELECT DISTINCT ON (k.project_id, k.app, k.fingerprint) k.project_id, k.app, "
     "k.fingerprint, coalesce(e.id, t.old_issue) AS issue_id, false AS made "
     "FROM (SELECT DISTINCT project_id, app, fingerprint FROM rg_m) k "
     "LEFT JOIN issues e ON e.project_id = k.project_id AND e.app = k.app "
     "AND e.fingerprint = k.fingerprint AND NOT EXISTS (SELECT 1 FROM rg_tgt x "
     "WHERE x.old_issue = e.id AND x.fingerprint <> k.fingerprint) "
     "LEFT JOIN rg_tgt t ON t.project_id = k.project_id AND t.app = k.app "
     "AND t.fingerprint = k.fingerprint LEFT JOIN issues i ON i.id = t.old_issue "
     "ORDER BY k.project_id, k.app, k.fingerprint, (e.id IS NULL), i.count DESC NULLS LAST, "
     "i.first_seen, i.id"},
    /* every old issue off its key first, so that no rename meets another's key */
    {"renaming issues",
     "UPDATE issues i SET fingerprint = 'regroup:' || i.id WHERE i.id IN (SELECT old_issue "
     "FROM rg_tgt) AND NOT EXISTS (SELECT 1 FROM rg_keep k WHERE k.issue_id = i.id "
     "AND k.fingerprint = i.fingerprint)"},
    {"renaming issues",
     "UPDATE issues i SET fingerprint = k.fingerprint, kind = s.kind, title = s.title, "
     "culprit = s.culprit, exception = s.exception, basis = s.basis, "
     "provisional = s.provisional, frames = s.frames FROM rg_keep k CROSS JOIN LATERAL "
     "(SELECT * FROM rg_m m WHERE m.project_id = k.project_id AND m.app = k.app "
     "AND m.fingerprint = k.fingerprint ORDER BY m.received_at DESC LIMIT 1) s "
     "WHERE i.id = k.issue_id"},
    /* split-off keys: a new issue each, with the status of the issue its latest report left */
    {"making split issues",
     "WITH s AS (SELECT DISTINCT ON (m.project_id, m.app, m.fingerprint) m.* FROM rg_m m "
     "JOIN rg_keep k ON k.project_id = m.project_id AND k.app = m.app "
     "AND k.fingerprint = m.fingerprint WHERE k.issue_id IS NULL "
     "ORDER BY m.project_id, m.app, m.fingerprint, m.received_at DESC), "
     "ins AS (INSERT INTO issues (project_id, app, kind, fingerprint, title, culprit, exception, "
     "basis, provisional, frames, first_seen, last_seen, count, status, resolved_in, "
     "resolved_at) SELECT s.project_id, s.app, s.kind, s.fingerprint, s.title, s.culprit, "
     "s.exception, s.basis, s.provisional, s.frames, s.received_at, s.received_at, 0, "
     "o.status, o.resolved_in, o.resolved_at FROM s JOIN issues o ON o.id = s.old_issue "
     "RETURNING id, project_id, app, fingerprint) "
     "UPDATE rg_keep k SET issue_id = ins.id, made = true FROM ins "
     "WHERE k.project_id = ins.project_id AND k.app = ins.app "
     "AND k.fingerprint = ins.fingerprint"},
    {"moving reports",
     "CREATE TEMP TABLE rg_move ON COMMIT DROP AS SELECT m.report_id, m.received_at, m.day, "
     "m.app_version, m.fingerprint, m.old_fingerprint, m.old_issue AS src, k.issue_id AS dst "
     "FROM rg_m m JOIN rg_keep k ON k.project_id = m.project_id AND k.app = m.app "
     "AND k.fingerprint = m.fingerprint"},
    {"moving reports",
     "UPDATE reports r SET issue_id = v.dst, fingerprint = v.fingerprint, updated_at = now() "
     "FROM rg_move v WHERE r.id = v.report_id AND r.received_at = v.received_at "
     "AND (r.issue_id IS DISTINCT FROM v.dst OR r.fingerprint IS DISTINCT FROM v.fingerprint)"},
    /* old issues kept by no key and left with no report: merged into their target's issue */
    {"merging issues",
     "CREATE TEMP TABLE rg_merge ON COMMIT DROP AS SELECT t.old_issue AS src, k.issue_id AS dst "
     "FROM rg_tgt t JOIN rg_keep k ON k.project_id = t.project_id AND k.app = t.app "
     "AND k.fingerprint = t.fingerprint WHERE t.old_issue <> k.issue_id "
     "AND NOT EXISTS (SELECT 1 FROM rg_keep k2 WHERE k2.issue_id = t.old_issue) "
     "AND NOT EXISTS (SELECT 1 FROM reports r WHERE r.issue_id = t.old_issue)"},
    /* per-day counts: each moved report leaves its day in the old issue and joins it in the
     * new; a merged issue's days that no stored report accounts for go along */
    {"moving per-day counts",
     "CREATE TEMP TABLE rg_days ON COMMIT DROP AS SELECT issue_id, day, sum(n) AS n FROM ("
     "SELECT src AS issue_id, day, -1 AS n FROM rg_move WHERE src <> dst "
     "UNION ALL SELECT dst, day, 1 FROM rg_move WHERE src <> dst "
     "UNION ALL SELECT g.dst, d.day, d.count - (SELECT count(*) FROM rg_move v "
     "WHERE v.src = g.src AND v.src <> v.dst AND v.day = d.day) "
     "FROM rg_merge g JOIN issue_days d ON d.issue_id = g.src) x "
     "WHERE issue_id NOT IN (SELECT src FROM rg_merge) GROUP BY 1, 2"},
    {"moving per-day counts",
     "UPDATE issue_days d SET count = greatest(d.count + x.n, 0) FROM rg_days x "
     "WHERE d.issue_id = x.issue_id AND d.day = x.day"},
    {"moving per-day counts",
     "INSERT INTO issue_days (issue_id, day, count) SELECT x.issue_id, x.day, x.n "
     "FROM rg_days x WHERE x.n > 0 AND NOT EXISTS (SELECT 1 FROM issue_days d "
     "WHERE d.issue_id = x.issue_id AND d.day = x.day) ORDER BY 1, 2"},
    /* counts and first/last seen of every issue that changed */
    {"moving counts",
     "UPDATE issues i SET count = greatest(i.count + c.n, 0), "
     "first_seen = least(i.first_seen, c.first_seen), "
     "last_seen = greatest(i.last_seen, c.last_seen) "
     "FROM (SELECT issue_id, sum(n) AS n, min(f) AS first_seen, max(l) AS last_seen FROM ("
     "SELECT src, -1, NULL::timestamptz, NULL::timestamptz FROM rg_move WHERE src <> dst "
     "UNION ALL SELECT dst, 1, received_at, received_at FROM rg_move WHERE src <> dst "
     "UNION ALL SELECT g.dst, o.count - (SELECT count(*) FROM rg_move v WHERE v.src = g.src "
     "AND v.src <> v.dst), o.first_seen, o.last_seen FROM rg_merge g "
     "JOIN issues o ON o.id = g.src) x(issue_id, n, f, l) GROUP BY issue_id) c "
     "WHERE i.id = c.issue_id AND i.id NOT IN (SELECT src FROM rg_merge)"},
    {"moving versions",
     "UPDATE issues i SET versions = ARRAY(SELECT DISTINCT v FROM unnest(i.versions || "
     "c.versions) v WHERE v IS NOT NULL ORDER BY 1) "
     "FROM (SELECT issue_id, array_agg(v) AS versions FROM ("
     "SELECT dst, app_version FROM rg_move WHERE src <> dst AND app_version IS NOT NULL "
     "UNION ALL SELECT g.dst, unnest(o.versions) FROM rg_merge g JOIN issues o ON o.id = g.src"
     ") x(issue_id, v) GROUP BY issue_id) c "
     "WHERE i.id = c.issue_id AND i.id NOT IN (SELECT src FROM rg_merge)"},
    /* a merged issue's breakdown counters that no stored report accounts for go along (the
     * moved reports' own were moved by the reports trigger of migration 0016) */
    {"moving breakdowns",
     "INSERT INTO issue_breakdowns AS b (issue_id, dim, value, count) "
     "SELECT g.dst, s.dim, s.value, sum(s.count) FROM rg_merge g "
     "JOIN issue_breakdowns s ON s.issue_id = g.src WHERE s.count <> 0 "
     "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 "
     "ON CONFLICT (issue_id, dim, value) DO UPDATE SET count = b.count + EXCLUDED.count"},
    {"merging issues", "DELETE FROM issues WHERE id IN (SELECT src FROM rg_merge)"},
    {"naming the latest reports",
     "UPDATE issues i SET last_report = (SELECT r.id FROM reports r WHERE r.issue_id = i.id "
     "ORDER BY r.received_at DESC, r.id DESC LIMIT 1) WHERE i.id IN (SELECT dst FROM rg_move)"},
};

static const char SQL_STATS[] =
    "SELECT (SELECT count(*) FROM rg_m), (SELECT count(*) FROM rg_move WHERE src <> dst "
    "OR fingerprint IS DISTINCT FROM old_fingerprint), (SELECT count(*) FROM rg_merge), "
    "(SELECT count(*) FROM rg_keep WHERE made), (SELECT count(DISTINCT old_issue) FROM rg_m), "
    "(SELECT count(DISTINCT dst) FROM rg_move)";

typedef struct {
    store_regroup_stats *out;
    const char *version;
    unsigned demangle_revision;
} apply_ctx;

static err_code do_apply(pconn *c, void *vctx, err_info *err)
{
    apply_ctx *q = vctx;
    err_code rc = store_command(c, "BEGIN", "regrouping", err);
    if (rc == ERR_OK)
        rc = store_unbounded_xact(c, err);
    for (size_t i = 0; rc == ERR_OK && i < sizeof APPLY / sizeof APPLY[0]; i++)
        rc = store_exec_sql(NULL, c, APPLY[i].what, APPLY[i].sql, 0, NULL, 0, err);
    PGresult *res = NULL;
    if (rc == ERR_OK)
        rc = store_exec_sql(&res, c, "counting the regroup", SQL_STATS, 0, NULL, 0, err);
    if (rc == ERR_OK && PQntuples(res) == 1) {
        int64_t *f[6] = {&q->out->reports, &q->out->moved, &q->out->merged, &q->out->created,
                         &q->out->issues_before, &q->out->issues_after};
        for (int k = 0; k < 6; k++)
            *f[k] = strtoll(PQgetvalue(res, 0, k), NULL, 10);
    }
    PQclear(res);
    char revision[16];
    snprintf(revision, sizeof revision, "%u", q->demangle_revision);
    const char *values[2] = {q->version, revision};
    if (rc == ERR_OK)
        rc = store_exec_sql(NULL, c, "recording the grouping rules",
                            "UPDATE signature_rules SET version = $1, demangle_revision = $2, "
                            "regrouped_at = now()", 2, values, 0, err);
    if (rc == ERR_OK)
        rc = store_command(c, "TRUNCATE regroup_reports", "emptying the regroup list", err);
    if (rc == ERR_OK)
        rc = store_command(c, "COMMIT", "regrouping", err);
    return rc; /* on error store_release rolls the transaction back */
}

err_code store_regroup_apply(store_regroup_stats *out, store *s, const char *version,
                             unsigned demangle_revision, err_info *err)
{
    memset(out, 0, sizeof *out);
    apply_ctx q = {out, version, demangle_revision};
    return store_run(s, do_apply, &q, err);
}
