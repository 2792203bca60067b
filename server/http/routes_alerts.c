/*
 * routes_alerts - alert rules (admin scope):
 *   GET    /api/v1/alerts?project=   {"alerts":[{id, project, kind, url, threshold, min_count,
 *                                     created_at, events:{pending, delivered, failed}}],
 *                                     "failed":[the newest 50 events that could not be
 *                                     delivered]}
 *   POST   /api/v1/alerts            {"kind","url","secret"?,"threshold"?,"min_count"?,
 *                                     "project"?} -> 201 the rule with its secret (shown once)
 *   DELETE /api/v1/alerts/{id}       the rule and its events -> 200 {"deleted": id}
 * Delivery: server/ingest/alerts.h.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_internal.h"
#include "ingest/alerts.h"
#include "store/store_alerts.h"

static void rule_json(jsonw *w, const store_alert_rule *r)
{
    jsonw_kint(w, "id", r->id);
    jsonw_kint(w, "project", r->project_id);
    jsonw_kstr(w, "kind", r->kind);
    jsonw_kstr(w, "url", r->url);
    if (isnan(r->threshold))
        jsonw_knull(w, "threshold");
    else {
        char t[40];
        snprintf(t, sizeof t, "%.17g", r->threshold);
        jsonw_kraw(w, "threshold", t);
    }
    if (r->min_count < 0)
        jsonw_knull(w, "min_count");
    else
        jsonw_kint(w, "min_count", r->min_count);
    jsonw_kstr(w, "created_at", r->created_at);
}

enum MHD_Result handle_alerts_list(http_request *r)
{
    int64_t project = 0;
    if (request_arg(r, "project") && request_project_arg(&project, r) != ERR_OK)
        return respond_field_error(r, "project");
    store_alert_rule *rules;
    size_t n, nf;
    store_alert_event *failed;
    if (store_alert_rules_list(&rules, &n, r->srv->store, project, r->a, &r->err) != ERR_OK ||
        store_alert_events_list(&failed, &nf, r->srv->store, project, "failed", 50, r->a,
                                &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "alerts");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(&w);
        rule_json(&w, &rules[i]);
        jsonw_key(&w, "events");
        jsonw_object_begin(&w);
        jsonw_kint(&w, "pending", rules[i].pending);
        jsonw_kint(&w, "delivered", rules[i].delivered);
        jsonw_kint(&w, "failed", rules[i].failed);
        jsonw_object_end(&w);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_key(&w, "failed");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < nf; i++) {
        const store_alert_event *e = &failed[i];
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "id", e->id);
        jsonw_kint(&w, "rule", e->rule_id);
        jsonw_kint(&w, "project", e->project_id);
        jsonw_kstr(&w, "kind", e->kind);
        jsonw_kstr(&w, "cause", e->cause);
        jsonw_kint(&w, "attempts", e->attempts);
        jsonw_kstr(&w, "last_error", e->last_error);
        jsonw_kstr(&w, "created_at", e->created_at);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

static void release_json(void *p)
{
    json_decref(p);
}

enum MHD_Result handle_alerts_post(http_request *r)
{
    json_error_t je;
    json_t *root = json_loadb(r->mem ? (const char *)r->mem : "", (size_t)r->body_bytes, 0, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        err_set(&r->err, ERR_INVALID, "body: a JSON object {\"kind\",\"url\",...}");
        return respond_field_error(r, "body");
    }
    arena_defer(r->a, release_json, root);
    store_alert_rule rule = {.project_id = 1, .threshold = NAN, .min_count = -1};
    json_t *v;
#define STR_FIELD(name, dst)                                                             \
    v = json_object_get(root, name);                                                     \
    if (v && !json_is_null(v)) {                                                         \
        if (!json_is_string(v)) {                                                        \
            err_set(&r->err, ERR_INVALID, name ": not a string");                        \
            return respond_field_error(r, name);                                         \
        }                                                                                \
        dst = json_string_value(v);                                                      \
    }
    STR_FIELD("kind", rule.kind)
    STR_FIELD("url", rule.url)
    STR_FIELD("secret", rule.secret)
#undef STR_FIELD
    v = json_object_get(root, "threshold");
    if (v && !json_is_null(v)) {
        if (!json_is_number(v)) {
            err_set(&r->err, ERR_INVALID, "threshold: not a number");
            return respond_field_error(r, "threshold");
        }
        rule.threshold = json_number_value(v);
    }
    v = json_object_get(root, "min_count");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            err_set(&r->err, ERR_INVALID, "min_count: not a non-negative integer");
            return respond_field_error(r, "min_count");
        }
        rule.min_count = json_integer_value(v);
    }
    v = json_object_get(root, "project");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1) {
            err_set(&r->err, ERR_INVALID, "project: not a project id");
            return respond_field_error(r, "project");
        }
        rule.project_id = json_integer_value(v);
    }
    char secret[65];
    const char *field = NULL;
    if (alerts_rule_check(&rule, secret, &field, &r->err) != ERR_OK)
        return respond_field_error(r, field);
    int64_t id;
    if (store_alert_rule_add(&id, r->srv->store, &rule, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    rule.id = id;
    rule.created_at = NULL;
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    rule_json(&w, &rule);
    jsonw_kstr(&w, "secret", rule.secret);
    jsonw_object_end(&w);
    return respond_json(r, 201, &body);
}

enum MHD_Result handle_alerts_delete(http_request *r)
{
    char *end;
    errno = 0;
    long long id = r->param ? strtoll(r->param, &end, 10) : 0;
    if (r->param == NULL || errno || *end || id < 1 || r->param[0] == '+')
        return respond_error(r, ERR_NOT_FOUND, "no alert rule with that id");
    if (store_alert_rule_remove(r->srv->store, id, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kint(&w, "deleted", id);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}
