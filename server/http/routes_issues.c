/*
 * routes_issues - /api/v1/issues: the grouped issues, filtered and keyset-paginated; one
 * issue with its breakdowns, daily counts and latest sample; an issue's reports; status
 * changes (PATCH, admin scope). Shapes in docs/openapi.yaml.
 */
#include <errno.h>
#include <inttypes.h>
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

enum MHD_Result handle_issues_list(http_request *r)
{
    static const char *const KINDS[] = {"crash", "hang", "sample", NULL};
    static const char *const STATUSES[] = {"open", "resolved", "ignored", NULL};
    store_issue_query q = {
        .app = request_arg(r, "app"), .kind = request_arg(r, "kind"), .version = request_arg(r, "version"),
        .status = request_arg(r, "status"), .since = request_arg(r, "since"), .until = request_arg(r, "until"),
        .q = request_arg(r, "q"), .sort = request_arg(r, "sort"), .cursor = request_arg(r, "cursor"),
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
    if (request_limit_arg(&q.limit, r, 50, 200) != ERR_OK)
        return respond_err(r, &r->err);
    const char *json;
    if (store_issues_list(&json, r->srv->store, &q, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    return respond_json_text(r, 200, json);
}

enum MHD_Result handle_issue_get(http_request *r)
{
    int64_t id;
    const char *json;
    if (issue_id_param(&id, r) != ERR_OK ||
        store_issue_get(&json, r->srv->store, id, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    return respond_json_text(r, 200, json);
}

enum MHD_Result handle_issue_reports(http_request *r)
{
    int64_t id;
    unsigned limit;
    const char *json;
    if (issue_id_param(&id, r) != ERR_OK || request_limit_arg(&limit, r, 50, 500) != ERR_OK ||
        store_issue_reports(&json, r->srv->store, id, limit, request_arg(r, "cursor"), r->a, &r->err) !=
            ERR_OK)
        return respond_err(r, &r->err);
    return respond_json_text(r, 200, json);
}

enum MHD_Result handle_issue_patch(http_request *r)
{
    int64_t id;
    if (issue_id_param(&id, r) != ERR_OK)
        return respond_err(r, &r->err);
    json_error_t je;
    json_t *body = json_loadb((const char *)(r->mem ? r->mem : (uint8_t *)""),
                              (size_t)r->body_bytes, 0, &je);
    if (body == NULL || !json_is_object(body)) {
        json_decref(body);
        return respond_error(r, ERR_INVALID, "body must be a JSON object like "
                             "{\"status\":\"resolved\",\"resolved_in\":\"1.2.0\"}");
    }
    json_t *st = json_object_get(body, "status"), *in = json_object_get(body, "resolved_in");
    const char *json = NULL;
    err_code rc;
    if (!json_is_string(st))
        rc = err_set(&r->err, ERR_INVALID, "\"status\" (open, resolved or ignored) is required");
    else if (in != NULL && !json_is_null(in) && !json_is_string(in))
        rc = err_set(&r->err, ERR_INVALID, "\"resolved_in\" must be a version string");
    else if (in != NULL && json_is_string(in) && strcmp(json_string_value(st), "resolved") != 0)
        rc = err_set(&r->err, ERR_INVALID, "\"resolved_in\" goes with status \"resolved\"");
    else
        rc = store_issue_set_status(&json, r->srv->store, id, json_string_value(st),
                                    json_is_string(in) ? json_string_value(in) : NULL, r->a,
                                    &r->err);
    json_decref(body);
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    return respond_json_text(r, 200, json);
}
