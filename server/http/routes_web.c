/*
 * routes_web - the two API routes the dashboard needs beyond the issues API (issue #6):
 *   GET /api/v1/daily?issues=1,2,3[&days=30]  per-day counts of a page of issues in one
 *                                             request (the issue list's sparklines)
 *   GET /api/v1/reports/{id}/raw              the report's bytes as received (after gzip
 *                                             decoding), beside its symbolicated text
 * Both need the read scope (ROUTES in server.c); shapes in docs/openapi.yaml.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "http/http_internal.h"
#include "http/web.h"
#include "store/store_issues.h"
#include "store/store_web.h"

#define DAILY_MAX_ISSUES 200 /* the issue list's largest page */
#define DAILY_MAX_DAYS 90

/* "1,2,3" -> ids; each a positive integer, 1..DAILY_MAX_ISSUES of them. */
static err_code parse_ids(int64_t *ids, size_t *n, const char *s, err_info *err)
{
    *n = 0;
    if (s == NULL || *s == '\0')
        return err_set(err, ERR_INVALID, "issues= is required: issue ids separated by commas");
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long long v = (*p >= '0' && *p <= '9') ? strtoll(p, &end, 10) : 0;
        if (v < 1 || errno || (*end != ',' && *end != '\0'))
            return err_set(err, ERR_INVALID, "issues must be positive issue ids separated by "
                           "commas, not '%.60s'", s);
        if (*n == DAILY_MAX_ISSUES)
            return err_set(err, ERR_INVALID, "at most %d issue ids per request",
                           DAILY_MAX_ISSUES);
        ids[(*n)++] = v;
        if (*end == '\0')
            return ERR_OK;
        p = end + 1;
    }
}

enum MHD_Result handle_daily(http_request *r)
{
    int64_t ids[DAILY_MAX_ISSUES];
    size_t n;
    const char *issues = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "issues");
    const char *days_s = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "days");
    if (parse_ids(ids, &n, issues, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    long days = 30;
    if (days_s != NULL) {
        char *end;
        errno = 0;
        days = strtol(days_s, &end, 10);
        if (errno || *end || end == days_s || days < 1 || days > DAILY_MAX_DAYS)
            return respond_error(r, ERR_INVALID, "days must be a whole number from 1 to 90");
    }
    const char *json;
    if (store_web_daily(&json, r->srv->store, ids, n, (unsigned)days, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    size_t len = strlen(json);
    char *body = xmalloc(len + 2);   /* libmicrohttpd frees what it sends */
    memcpy(body, json, len);
    body[len] = '\n';
    body[len + 1] = '\0';
    return queue_body(r, 200, "application/json", body, len + 1);
}

enum MHD_Result handle_report_raw(http_request *r)
{
    const uint8_t *raw;
    size_t len;
    if (store_report_raw_get(&raw, &len, r->srv->store, r->param, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    char *body = xmalloc(len + 1);
    memcpy(body, raw, len);
    body[len] = '\0';
    return queue_body(r, 200, "text/plain; charset=utf-8", body, len);
}
