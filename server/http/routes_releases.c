/*
 * routes_releases - release health out (read scope):
 *   GET /api/v1/releases?project=&environment=&limit=&cursor=
 *       {"releases":[{release, sessions, crashed, abnormal, errored, users, crashed_users,
 *         crash_free_sessions, crash_free_users, first_seen, last_seen, new_issues,
 *         adoption}], "next_cursor"}
 *   GET /api/v1/releases/{release}   the same fields, plus "version", "daily" (per UTC day)
 *       and "issues" (its top issues)
 * Rates are fractions in [0, 1] computed from the exact counters: crash_free_sessions =
 * (sessions - crashed) / sessions, crash_free_users = (users - crashed_users) / users,
 * adoption = the release's share of the sessions started in the last 24 hours; each is
 * written with 17 significant digits (the double nearest the fraction, read back exactly),
 * null when its denominator is 0.
 */
#include <stdio.h>
#include <string.h>

#include "http/http_internal.h"
#include "store/store_releases.h"

/* num / den as a JSON number (null when den is 0). */
static void kfraction(jsonw *w, const char *key, int64_t num, int64_t den)
{
    if (den <= 0) {
        jsonw_knull(w, key);
        return;
    }
    char text[40];
    snprintf(text, sizeof text, "%.17g", (double)num / (double)den);
    jsonw_kraw(w, key, text);
}

static void release_fields(jsonw *w, const store_release_row *r)
{
    jsonw_kstr(w, "release", r->release);
    jsonw_kint(w, "sessions", r->sessions);
    jsonw_kint(w, "crashed", r->crashed);
    jsonw_kint(w, "abnormal", r->abnormal);
    jsonw_kint(w, "errored", r->errored);
    jsonw_kint(w, "users", r->users);
    jsonw_kint(w, "crashed_users", r->crashed_users);
    kfraction(w, "crash_free_sessions", r->sessions - r->crashed, r->sessions);
    kfraction(w, "crash_free_users", r->users - r->crashed_users, r->users);
    jsonw_kstr(w, "first_seen", r->first_seen);
    jsonw_kstr(w, "last_seen", r->last_seen);
    jsonw_kint(w, "new_issues", r->new_issues);
    if (r->recent_total > 0)
        kfraction(w, "adoption", r->recent_sessions, r->recent_total);
    else
        jsonw_kraw(w, "adoption", "0");
}

static err_code release_query(store_release_query *q, http_request *r)
{
    memset(q, 0, sizeof *q);
    if (request_project_arg(&q->project_id, r) != ERR_OK)
        return r->err.code;
    q->environment = request_arg(r, "environment");
    q->cursor = request_arg(r, "cursor");
    return request_limit_arg(&q->limit, r, 50, 1000);
}

enum MHD_Result handle_releases_list(http_request *r)
{
    store_release_query q;
    store_release_page page;
    if (release_query(&q, r) != ERR_OK ||
        store_releases_list(&page, r->srv->store, &q, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "releases");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < page.n; i++) {
        jsonw_object_begin(&w);
        release_fields(&w, &page.releases[i]);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_kstr(&w, "next_cursor", page.next_cursor);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_release_get(http_request *r)
{
    store_release_query q;
    store_release_detail d;
    if (release_query(&q, r) != ERR_OK)
        return respond_err(r, &r->err);
    q.release = r->param;
    if (q.release == NULL || q.release[0] == '\0')
        return respond_error(r, ERR_NOT_FOUND, "no release named");
    if (store_release_get(&d, r->srv->store, &q, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    release_fields(&w, &d.release);
    jsonw_kstr(&w, "version", d.version);
    jsonw_key(&w, "daily");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < d.ndays; i++) {
        const store_release_day *day = &d.days[i];
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "day", day->day);
        jsonw_kint(&w, "sessions", day->sessions);
        jsonw_kint(&w, "crashed", day->crashed);
        jsonw_kint(&w, "abnormal", day->abnormal);
        jsonw_kint(&w, "errored", day->errored);
        kfraction(&w, "crash_free_sessions", day->sessions - day->crashed, day->sessions);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_key(&w, "issues");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < d.nissues; i++) {
        const store_release_issue *is = &d.issues[i];
        jsonw_object_begin(&w);
        jsonw_kint(&w, "id", is->id);
        jsonw_kstr(&w, "title", is->title);
        jsonw_kstr(&w, "culprit", is->culprit);
        jsonw_kstr(&w, "status", is->status);
        jsonw_kint(&w, "reports", is->reports);
        jsonw_kint(&w, "count", is->count);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}
