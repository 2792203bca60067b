/*
 * routes_issues - /api/v1/issues: the grouped issues, filtered and keyset-paginated; one
 * issue with its breakdowns, daily counts and latest sample; an issue's reports; status
 * changes (PATCH, admin scope). Shapes in docs/openapi.yaml.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle/demangle.h"
#include "http/http_internal.h"
#include "signature/signature.h"
#include "store/store_issues.h"

/* The {id} of /api/v1/issues/{id}: a positive integer, else there is no such issue. */
static err_code issue_id_param(int64_t *out, http_request *r)
{
    char *end;
    *out = 0;   /* set on every path: gcc -O3 cannot see that err_set never returns ERR_OK */
    errno = 0;
    long long v = r->param ? strtoll(r->param, &end, 10) : 0;
    if (r->param == NULL || errno || *end || v < 1 || r->param[0] == '+')
        return err_set(&r->err, ERR_NOT_FOUND, "no issue with id %.40s",
                       r->param ? r->param : "");
    *out = v;
    return ERR_OK;
}

static bool one_of(const char *v, const char *const *allowed)
{
    for (size_t i = 0; allowed[i]; i++)
        if (strcmp(v, allowed[i]) == 0)
            return true;
    return false;
}

/* ---- wire format (docs/openapi.yaml: IssueSummary, Issue, IssueReports) ------------------ */

/* An issue as lists and PATCH answer it. */
static void issue_summary_json(jsonw *w, const store_issue *i)
{
    jsonw_object_begin(w);
    jsonw_kint(w, "id", i->id);
    jsonw_kstr(w, "title", i->title);
    jsonw_kstr(w, "culprit", i->culprit);
    jsonw_kstr(w, "kind", i->kind);
    jsonw_kint(w, "count", i->count);
    jsonw_kstr(w, "first_seen", i->first_seen);
    jsonw_kstr(w, "last_seen", i->last_seen);
    jsonw_kstr(w, "status", i->status);
    jsonw_kraw(w, "versions", i->versions_json);
    jsonw_kstr(w, "app", i->app);
    jsonw_kint(w, "project_id", i->project_id);
    jsonw_kbool(w, "regressed", i->regressed);
    jsonw_kbool(w, "provisional", i->provisional);
    jsonw_kstr(w, "resolved_in", i->resolved_in);
    jsonw_object_end(w);
}

static void counts_json(jsonw *w, const char *key, const store_count *c, size_t n)
{
    jsonw_key(w, key);
    jsonw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(w);
        jsonw_kstr(w, "value", c[i].value);
        jsonw_kint(w, "count", c[i].count);
        jsonw_object_end(w);
    }
    jsonw_array_end(w);
}

/* One issue with its breakdowns, daily counts and latest sample. */
static void issue_detail_json(jsonw *w, const store_issue_detail *d)
{
    const store_issue *i = &d->issue;
    jsonw_object_begin(w);
    jsonw_kint(w, "id", i->id);
    jsonw_kint(w, "project_id", i->project_id);
    jsonw_kstr(w, "app", i->app);
    jsonw_kstr(w, "kind", i->kind);
    jsonw_kstr(w, "fingerprint", i->fingerprint);
    jsonw_kstr(w, "title", i->title);
    jsonw_kstr(w, "culprit", i->culprit);
    jsonw_kstr(w, "exception", i->exception);
    jsonw_kstr(w, "basis", i->basis);
    jsonw_kbool(w, "provisional", i->provisional);
    jsonw_kraw(w, "frames", i->frames_json);
    jsonw_kint(w, "count", i->count);
    jsonw_kstr(w, "first_seen", i->first_seen);
    jsonw_kstr(w, "last_seen", i->last_seen);
    jsonw_kstr(w, "status", i->status);
    jsonw_kstr(w, "resolved_in", i->resolved_in);
    jsonw_kstr(w, "resolved_at", i->resolved_at);
    jsonw_kbool(w, "regressed", i->regressed);
    jsonw_kstr(w, "regressed_at", i->regressed_at);
    jsonw_kraw(w, "versions", i->versions_json);
    jsonw_key(w, "breakdowns");
    jsonw_object_begin(w);
    counts_json(w, "app_version", d->by_app_version, d->n_app_version);
    counts_json(w, "os_version", d->by_os_version, d->n_os_version);
    counts_json(w, "hardware_model", d->by_hardware_model, d->n_hardware_model);
    jsonw_object_end(w);
    jsonw_key(w, "daily");
    jsonw_array_begin(w);
    for (size_t k = 0; k < sizeof d->daily / sizeof d->daily[0]; k++) {
        jsonw_object_begin(w);
        jsonw_kstr(w, "day", d->daily[k].day);
        jsonw_kint(w, "count", d->daily[k].count);
        jsonw_object_end(w);
    }
    jsonw_array_end(w);
    jsonw_key(w, "hang_duration_ms");
    if (d->has_hang_duration) {
        jsonw_object_begin(w);
        jsonw_kint(w, "median", d->hang_median_ms);
        jsonw_kint(w, "p90", d->hang_p90_ms);
        jsonw_kint(w, "max", d->hang_max_ms);
        jsonw_object_end(w);
    } else {
        jsonw_null(w);
    }
    jsonw_key(w, "latest_sample");
    if (d->has_sample) {
        jsonw_object_begin(w);
        jsonw_kstr(w, "id", d->sample.id);
        jsonw_kstr(w, "received_at", d->sample.received_at);
        jsonw_kstr(w, "app_version", d->sample.app_version);
        jsonw_kstr(w, "os_version", d->sample.os_version);
        jsonw_kstr(w, "hardware_model", d->sample.hardware_model);
        jsonw_kraw(w, "report", d->sample.report_json);
        jsonw_object_end(w);
    } else {
        jsonw_null(w);
    }
    jsonw_object_end(w);
}

/* ---- handlers ------------------------------------------------------------------------- */

enum MHD_Result handle_issues_list(http_request *r)
{
    static const char *const KINDS[] = {"crash", "hang", "sample", NULL};
    static const char *const STATUSES[] = {"open", "resolved", "ignored", NULL};
    store_issue_query q = {
        .app = request_arg(r, "app"), .kind = request_arg(r, "kind"),
        .version = request_arg(r, "version"), .status = request_arg(r, "status"),
        .since = request_arg(r, "since"), .until = request_arg(r, "until"),
        .q = request_arg(r, "q"), .sort = request_arg(r, "sort"),
        .cursor = request_arg(r, "cursor"),
    };
    /* Titles and culprits hold display names: a mangled Swift or C++ name searches as the
     * name it normalizes to, so either form finds the issue. */
    char shown[SIGNATURE_MAX_NAME];
    if (q.q != NULL && (demangle_is_swift(q.q) || demangle_is_cxx(q.q)) &&
        signature_normalize_symbol(shown, sizeof shown, q.q)[0] != '\0') {
        q.q = arena_strdup(r->a, shown, &r->err);
        if (q.q == NULL)
            return respond_err(r, &r->err);
    }
    if (q.kind && !one_of(q.kind, KINDS))
        return respond_error(r, ERR_INVALID, "kind must be crash, hang or sample");
    if (q.status && !one_of(q.status, STATUSES))
        return respond_error(r, ERR_INVALID, "status must be open, resolved or ignored");
    if (request_limit_arg(&q.limit, r, 50, 200) != ERR_OK ||
        request_project_filter(&q.project_id, r) != ERR_OK)
        return respond_err(r, &r->err);
    store_issue *rows;
    size_t n;
    const char *next;
    if (store_issues_list(&rows, &n, &next, r->srv->store, &q, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "issues");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++)
        issue_summary_json(&w, &rows[i]);
    jsonw_array_end(&w);
    jsonw_kstr(&w, "next_cursor", next);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_issue_get(http_request *r)
{
    int64_t id;
    store_issue_detail d;
    if (issue_id_param(&id, r) != ERR_OK ||
        store_issue_get(&d, r->srv->store, id, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    issue_detail_json(&w, &d);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_issue_reports(http_request *r)
{
    int64_t id;
    unsigned limit;
    store_issue_report *rows;
    size_t n;
    const char *next;
    if (issue_id_param(&id, r) != ERR_OK || request_limit_arg(&limit, r, 50, 500) != ERR_OK ||
        store_issue_reports(&rows, &n, &next, r->srv->store, id, limit,
                            request_arg(r, "cursor"), r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "reports");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "id", rows[i].id);
        jsonw_kstr(&w, "received_at", rows[i].received_at);
        jsonw_kstr(&w, "status", rows[i].status);
        jsonw_kstr(&w, "app_version", rows[i].app_version);
        jsonw_kstr(&w, "os_version", rows[i].os_version);
        jsonw_kstr(&w, "hardware_model", rows[i].hardware_model);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_kstr(&w, "next_cursor", next);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_issue_patch(http_request *r)
{
    int64_t id;
    if (issue_id_param(&id, r) != ERR_OK)
        return respond_err(r, &r->err);
    json_error_t je;
    json_t *in_body = json_loadb((const char *)(r->mem ? r->mem : (uint8_t *)""),
                                 (size_t)r->body_bytes, 0, &je);
    if (in_body == NULL || !json_is_object(in_body)) {
        json_decref(in_body);
        return respond_error(r, ERR_INVALID, "body must be a JSON object like "
                             "{\"status\":\"resolved\",\"resolved_in\":\"1.2.0\"}");
    }
    json_t *st = json_object_get(in_body, "status"), *in = json_object_get(in_body, "resolved_in");
    store_issue issue;
    err_code rc;
    if (!json_is_string(st))
        rc = err_set(&r->err, ERR_INVALID, "\"status\" (open, resolved or ignored) is required");
    else if (in != NULL && !json_is_null(in) && !json_is_string(in))
        rc = err_set(&r->err, ERR_INVALID, "\"resolved_in\" must be a version string");
    else if (in != NULL && json_is_string(in) && strcmp(json_string_value(st), "resolved") != 0)
        rc = err_set(&r->err, ERR_INVALID, "\"resolved_in\" goes with status \"resolved\"");
    else
        rc = store_issue_set_status(&issue, r->srv->store, id, json_string_value(st),
                                    json_is_string(in) ? json_string_value(in) : NULL, r->a,
                                    &r->err);
    json_decref(in_body);
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    issue_summary_json(&w, &issue);
    return respond_json(r, 200, &body);
}
