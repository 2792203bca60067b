/*
 * store_alerts - alert rules and the event outbox in SQL (see store_alerts.h).
 */
#include "store/store_alerts.h"

#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "base/xalloc.h"
#include "store/store_internal.h"

static int64_t num(PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? -1 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* ---- rules ----------------------------------------------------------------------------- */

static const store_stmt SQL_RULE_ADD = {"alerts_rule_add",
    "INSERT INTO alert_rules (project_id, kind, url, secret, threshold, min_count) "
    "VALUES ($1::bigint, $2, $3, $4, $5::double precision, $6::bigint) RETURNING id"};

typedef struct {
    const store_alert_rule *r;
    int64_t *id;
} add_ctx;

static err_code do_add(pconn *c, void *vctx, err_info *err)
{
    add_ctx *x = vctx;
    char pid[24], thr[40], minc[24];
    snprintf(pid, sizeof pid, "%lld", (long long)x->r->project_id);
    snprintf(thr, sizeof thr, "%.17g", x->r->threshold);
    snprintf(minc, sizeof minc, "%lld", (long long)x->r->min_count);
    const char *v[6] = {pid, x->r->kind, x->r->url, x->r->secret,
                        isnan(x->r->threshold) ? NULL : thr, x->r->min_count < 0 ? NULL : minc};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_RULE_ADD, 6, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *x->id = num(res, 0, 0);
    PQclear(res);
    return ERR_OK;
}

err_code store_alert_rule_add(int64_t *id, store *s, const store_alert_rule *r, err_info *err)
{
    add_ctx x = {r, id};
    return store_run(s, do_add, &x, err);
}

static const store_stmt SQL_RULES = {"alerts_rules",
    "SELECT r.id, r.project_id, r.kind, r.url, r.threshold, r.min_count, "
    STORE_TS("r.created_at") ", "
    "count(e.id) FILTER (WHERE e.status = 'pending'), "
    "count(e.id) FILTER (WHERE e.status = 'delivered'), "
    "count(e.id) FILTER (WHERE e.status = 'failed') "
    "FROM alert_rules r LEFT JOIN alert_events e ON e.rule_id = r.id "
    "WHERE $1::bigint = 0 OR r.project_id = $1::bigint GROUP BY r.id ORDER BY r.id"};

typedef struct {
    int64_t project_id;
    arena *a;
    store_alert_rule *rows;
    size_t n;
} list_ctx;

static err_code do_list(pconn *c, void *vctx, err_info *err)
{
    list_ctx *x = vctx;
    char pid[24];
    snprintf(pid, sizeof pid, "%lld", (long long)x->project_id);
    const char *v[1] = {pid};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_RULES, 1, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    x->n = (size_t)PQntuples(res);
    x->rows = arena_alloc_array(x->a, x->n ? x->n : 1, sizeof *x->rows, err);
    if (x->rows == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; i < x->n && rc == ERR_OK; i++) {
        int r = (int)i;
        store_alert_rule *o = &x->rows[i];
        o->id = num(res, r, 0);
        o->project_id = num(res, r, 1);
        o->kind = store_dup(x->a, res, r, 2, err, &rc);
        o->url = store_dup(x->a, res, r, 3, err, &rc);
        o->secret = "";
        o->threshold = PQgetisnull(res, r, 4) ? NAN : strtod(PQgetvalue(res, r, 4), NULL);
        o->min_count = num(res, r, 5);
        o->created_at = store_dup(x->a, res, r, 6, err, &rc);
        o->pending = num(res, r, 7);
        o->delivered = num(res, r, 8);
        o->failed = num(res, r, 9);
    }
    PQclear(res);
    return rc;
}

err_code store_alert_rules_list(store_alert_rule **rows, size_t *n, store *s, int64_t project_id,
                                arena *a, err_info *err)
{
    list_ctx x = {project_id, a, NULL, 0};
    *rows = NULL;
    *n = 0;
    err_code rc = store_run(s, do_list, &x, err);
    if (rc == ERR_OK) {
        *rows = x.rows;
        *n = x.n;
    }
    return rc;
}

static const store_stmt SQL_RULE_REMOVE = {"alerts_rule_remove",
    "DELETE FROM alert_rules WHERE id = $1::bigint RETURNING id"};

static err_code do_remove(pconn *c, void *vctx, err_info *err)
{
    int64_t id = *(int64_t *)vctx;
    char ids[24];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *v[1] = {ids};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_RULE_REMOVE, 1, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    bool found = PQntuples(res) == 1;
    PQclear(res);
    return found ? ERR_OK : err_set(err, ERR_NOT_FOUND, "no alert rule with id %lld", (long long)id);
}

err_code store_alert_rule_remove(store *s, int64_t id, err_info *err)
{
    return store_run(s, do_remove, &id, err);
}

static const store_stmt SQL_EVENTS = {"alerts_events",
    "SELECT id, rule_id, project_id, kind, cause, status, last_error, " STORE_TS("created_at")
    ", attempts FROM alert_events WHERE ($1::bigint = 0 OR project_id = $1::bigint) "
    "AND ($2::text IS NULL OR status = $2::text) ORDER BY created_at DESC, id LIMIT $3::int"};

typedef struct {
    int64_t project_id;
    const char *status;
    unsigned limit;
    arena *a;
    store_alert_event *rows;
    size_t n;
} events_ctx;

static err_code do_events(pconn *c, void *vctx, err_info *err)
{
    events_ctx *x = vctx;
    char pid[24], lim[16];
    snprintf(pid, sizeof pid, "%lld", (long long)x->project_id);
    snprintf(lim, sizeof lim, "%u", x->limit);
    const char *v[3] = {pid, x->status, lim};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_EVENTS, 3, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    x->n = (size_t)PQntuples(res);
    x->rows = arena_alloc_array(x->a, x->n ? x->n : 1, sizeof *x->rows, err);
    if (x->rows == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; i < x->n && rc == ERR_OK; i++) {
        int r = (int)i;
        store_alert_event *o = &x->rows[i];
        o->id = store_dup(x->a, res, r, 0, err, &rc);
        o->rule_id = num(res, r, 1);
        o->project_id = num(res, r, 2);
        o->kind = store_dup(x->a, res, r, 3, err, &rc);
        o->cause = store_dup(x->a, res, r, 4, err, &rc);
        o->status = store_dup(x->a, res, r, 5, err, &rc);
        o->last_error = store_dup(x->a, res, r, 6, err, &rc);
        o->created_at = store_dup(x->a, res, r, 7, err, &rc);
        o->attempts = (int)num(res, r, 8);
    }
    PQclear(res);
    return rc;
}

err_code store_alert_events_list(store_alert_event **rows, size_t *n, store *s,
                                 int64_t project_id, const char *status, unsigned limit,
                                 arena *a, err_info *err)
{
    events_ctx x = {project_id, status, limit, a, NULL, 0};
    *rows = NULL;
    *n = 0;
    err_code rc = store_run(s, do_events, &x, err);
    if (rc == ERR_OK) {
        *rows = x.rows;
        *n = x.n;
    }
    return rc;
}

/* ---- delivery -------------------------------------------------------------------------- */

/* Each URL's due events in turn (rules grouped by URL, a LATERAL pick per URL with its own
 * LIMIT), locked SKIP LOCKED and leased in the same statement. A row another node leased
 * since this statement's snapshot is re-checked under its lock and no longer due. */
static const store_stmt SQL_CLAIM = {"alerts_claim",
    "WITH busy AS (SELECT key AS url, value::int AS n FROM json_each_text($3::json)), "
    "urls AS (SELECT url, array_agg(id) AS rules FROM alert_rules GROUP BY url), "
    "pick AS (SELECT x.id FROM urls u LEFT JOIN busy b ON b.url = u.url "
    "CROSS JOIN LATERAL (SELECT e.id FROM alert_events e "
    "WHERE e.rule_id = ANY (u.rules) AND e.status = 'pending' AND e.next_at <= now() "
    "ORDER BY e.next_at, e.id LIMIT greatest($2::int - coalesce(b.n, 0), 0) "
    "FOR UPDATE OF e SKIP LOCKED) x LIMIT $1::int) "
    "UPDATE alert_events e SET claim = gen_random_uuid(), "
    "claimed_by = current_setting('application_name'), "
    "next_at = now() + $4::bigint * interval '1 millisecond' "
    "FROM pick, alert_rules r WHERE e.id = pick.id AND r.id = e.rule_id "
    "RETURNING e.id, e.rule_id, e.project_id, e.kind, r.url, r.secret, e.payload::text, "
    STORE_TS("e.created_at") ", e.attempts, "
    "(e.created_at < now() - $5::int * interval '1 second'), e.claim"};

typedef struct {
    unsigned max, per_url, lease_ms, give_up_s;
    const char *busy_json;
    arena *a;
    store_alert_due *rows;
    size_t n;
} claim_ctx;

static err_code do_claim(pconn *c, void *vctx, err_info *err)
{
    claim_ctx *x = vctx;
    char lim[16], per[16], lease[16], gu[16];
    snprintf(lim, sizeof lim, "%u", x->max);
    snprintf(per, sizeof per, "%u", x->per_url);
    snprintf(lease, sizeof lease, "%u", x->lease_ms);
    snprintf(gu, sizeof gu, "%u", x->give_up_s);
    const char *v[5] = {lim, per, x->busy_json ? x->busy_json : "{}", lease, gu};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_CLAIM, 5, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t k = (size_t)PQntuples(res);
    store_alert_due *ev = k ? arena_alloc_array(x->a, k, sizeof *ev, err) : NULL;
    if (k && ev == NULL)
        rc = ERR_TOO_LARGE;
    for (size_t i = 0; i < k && rc == ERR_OK; i++) {
        int r = (int)i;
        ev[i].id = store_dup(x->a, res, r, 0, err, &rc);
        ev[i].rule_id = num(res, r, 1);
        ev[i].project_id = num(res, r, 2);
        ev[i].kind = store_dup(x->a, res, r, 3, err, &rc);
        ev[i].url = store_dup(x->a, res, r, 4, err, &rc);
        ev[i].secret = store_dup(x->a, res, r, 5, err, &rc);
        ev[i].payload_json = store_dup(x->a, res, r, 6, err, &rc);
        ev[i].created_at = store_dup(x->a, res, r, 7, err, &rc);
        ev[i].attempts = (int)num(res, r, 8);
        ev[i].last_chance = PQgetvalue(res, r, 9)[0] == 't';
        ev[i].claim = store_dup(x->a, res, r, 10, err, &rc);
    }
    PQclear(res);
    if (rc == ERR_OK) {
        x->rows = ev;
        x->n = k;
    }
    return rc;
}

err_code store_alert_claim(store_alert_due **events, size_t *n, store *s, unsigned max,
                           unsigned per_url, const char *busy_json, unsigned lease_ms,
                           unsigned give_up_s, arena *a, err_info *err)
{
    /* The statement commits on its own: a retry after a broken connection (store_run) claims
     * afresh, and events leased by a lost answer fall due again when their lease lapses. */
    claim_ctx x = {max, per_url, lease_ms, give_up_s, busy_json, a, NULL, 0};
    *events = NULL;
    *n = 0;
    err_code rc = store_run(s, do_claim, &x, err);
    if (rc == ERR_OK) {
        *events = x.rows;
        *n = x.n;
    }
    return rc;
}

static const store_stmt SQL_RECORD = {"alerts_record",
    "UPDATE alert_events e SET "
    "attempts = e.attempts + CASE WHEN t.st = 'released' THEN 0 ELSE 1 END, "
    "status = CASE WHEN t.st IN ('delivered', 'failed') THEN t.st ELSE 'pending' END, "
    "next_at = now() + t.ms * interval '1 millisecond', "
    "last_error = CASE WHEN t.st = 'released' THEN e.last_error ELSE t.err END, "
    "claim = NULL, delivered_at = CASE WHEN t.st = 'delivered' THEN now() END "
    "FROM json_to_recordset($1::json) AS t(id uuid, claim uuid, st text, ms bigint, err text) "
    "WHERE e.id = t.id AND e.claim = t.claim RETURNING 1"};

typedef struct {
    const char *json;
    size_t recorded;
} record_ctx;

static err_code do_record(pconn *c, void *vctx, err_info *err)
{
    record_ctx *x = vctx;
    const char *v[1] = {x->json};
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_RECORD, 1, v, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    x->recorded = (size_t)PQntuples(res);
    PQclear(res);
    return ERR_OK;
}

err_code store_alert_record(size_t *recorded, store *s, const store_alert_outcome *o, size_t n,
                            err_info *err)
{
    static const char *const ST[] = {
        [STORE_ALERT_DELIVERED] = "delivered", [STORE_ALERT_RETRY] = "retry",
        [STORE_ALERT_FAILED] = "failed", [STORE_ALERT_RELEASED] = "released"};
    *recorded = 0;
    if (n == 0)
        return ERR_OK;
    buf json;
    jsonw w;
    buf_init(&json);
    jsonw_init(&w, &json);
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "id", o[i].id);
        jsonw_kstr(&w, "claim", o[i].claim);
        jsonw_kstr(&w, "st", ST[o[i].result]);
        jsonw_kint(&w, "ms", o[i].result == STORE_ALERT_RETRY ? (int64_t)o[i].retry_ms : 0);
        jsonw_kstr(&w, "err", o[i].error);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    buf_putc(&json, '\0');
    /* A retry on a fresh connection (store_run) after the first one committed finds the
     * tokens gone and writes nothing twice. */
    record_ctx x = {(const char *)json.data, 0};
    err_code rc = store_run(s, do_record, &x, err);
    buf_reset(&json);
    if (rc == ERR_OK)
        *recorded = x.recorded;
    return rc;
}

/* ---- spikes ---------------------------------------------------------------------------- */

static const store_stmt SQL_SPIKES = {"alerts_spikes",
    "WITH h AS (SELECT date_trunc('hour', now()) AS start), "
    "cand AS (SELECT i.id, i.project_id AS pid FROM issues i, h "
    "WHERE i.last_seen >= h.start AND EXISTS (SELECT 1 FROM alert_rules WHERE kind = 'spike')), "
    "counts AS (SELECT c.id, c.pid, "
    "(SELECT count(*) FROM reports r WHERE r.issue_id = c.id AND r.received_at >= h.start) AS n, "
    "(SELECT count(*) FROM reports r WHERE r.issue_id = c.id "
    "AND r.received_at >= h.start - interval '7 days' AND r.received_at < h.start) / 168.0 "
    "AS mean FROM cand c, h) "
    "INSERT INTO alert_events (rule_id, project_id, kind, cause, payload) "
    "SELECT r.id, r.project_id, r.kind, "
    "'spike:' || k.id || ':' || to_char(h.start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24'), "
    "jsonb_build_object('issue', alerts_issue_facts(i), 'spike', jsonb_build_object("
    "'hour', to_char(h.start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "'count', k.n, 'hourly_mean', round(k.mean, 3), 'threshold', r.threshold, "
    "'min_count', r.min_count)) "
    "FROM counts k JOIN alert_rules r ON r.kind = 'spike' AND r.project_id = k.pid "
    "JOIN issues i ON i.id = k.id CROSS JOIN h "
    "WHERE k.n >= coalesce(r.min_count, 10) AND k.n > coalesce(r.threshold, 3) * k.mean "
    "ON CONFLICT (rule_id, cause) DO NOTHING RETURNING 1"};

static err_code do_spikes(pconn *c, void *vctx, err_info *err)
{
    PGresult *res;
    err_code rc = store_exec(&res, c, &SQL_SPIKES, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    *(int64_t *)vctx = PQntuples(res);
    PQclear(res);
    return ERR_OK;
}

err_code store_alert_sweep_spikes(int64_t *made, store *s, err_info *err)
{
    *made = 0;
    return store_run(s, do_spikes, made, err);
}
