/*
 * routes_bugsnag - what Bugsnag's clients send, unchanged, at the URLs a team points them to:
 * bugsnag-cocoa's `endpoints.notify` (POST /bugsnag/notify: an event payload, stored through the
 * report intake as format "bugsnag") and `endpoints.sessions` (POST /bugsnag/sessions: counted
 * as release health sessions, server/ingest/sessions.h), and dSYM uploads as bugsnag-cli (`upload dsym --upload-api-root-url`, POST
 * /bugsnag/dsym) and bugsnag-dsym-upload (POST /) send them: multipart `apiKey` + `dsym` (a
 * DWARF file or a zip of .dSYM folders) + `overwrite`, stored like POST /api/v1/dsyms; a
 * duplicate is 409, which bugsnag-cli reports as "Duplicate file detected" and goes on.
 *
 * The Bugsnag API key a team configures is its stacksift project's DSN key (32 hex digits, as
 * Bugsnag's keys are): auth_dsn_key_check gives the project. It comes from the
 * Bugsnag-Api-Key header (the notifier sets it on every request), else the payload's `apiKey`
 * (the form field of a dSYM upload).
 *
 * Sources: bugsnag/bugsnag-cocoa BSGEventUploadOperation, BSGSessionUploader,
 * BugsnagApiClient (2xx delivered; 4xx other than 402/407/408/429 dropped; else retried);
 * bugsnag/bugsnag-cli pkg/server/request.go (multipart fields, "409" = duplicate).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/jsonr.h"
#include "http/http_internal.h"
#include "http/metrics.h"
#include "ingest/sessions.h"

static void release_json(void *j)
{
    json_decref(j);
}

#define BUGSNAG_MAX_SESSIONS 1000 /* sessions of one payload */

/* The project of a Bugsnag request: its API key (`key`, else the Bugsnag-Api-Key header) is
 * a project's DSN key. Errors ERR_UNAUTHORIZED (none, or not accepted). */
static err_code bugsnag_project(http_request *r, const char *key)
{
    if (key == NULL)
        key = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Bugsnag-Api-Key");
    if (key == NULL || key[0] == '\0')
        return err_set(&r->err, ERR_UNAUTHORIZED, "no Bugsnag API key: send the Bugsnag-Api-Key "
                       "header or an apiKey field holding the project's DSN key");
    return auth_dsn_key_check(&r->project_id, r->srv->tokens, key, &r->err);
}

/* Bugsnag-Payload-Version, when sent, must be one this route reads (`major` "4"/"5" for
 * events: bugsnag-cocoa sends 4.0, newer notifiers 5.0; "1" for sessions). */
static err_code payload_version_check(http_request *r, const char *const *majors, size_t n)
{
    const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                "Bugsnag-Payload-Version");
    if (v == NULL)
        return ERR_OK;
    size_t major = strcspn(v, ".");
    for (size_t i = 0; i < n; i++)
        if (strlen(majors[i]) == major && strncmp(v, majors[i], major) == 0)
            return ERR_OK;
    return err_set(&r->err, ERR_UNSUPPORTED, "Bugsnag-Payload-Version %s is not read here "
                   "(%s.x is)", v, majors[0]);
}

/* Bugsnag-Integrity, when sent (bugsnag-cocoa sends it with every event and session payload):
 * the SHA-1 of the body as sent must match. Errors ERR_INVALID (400: the notifier drops the
 * payload rather than retrying a body that arrived changed). */
static err_code integrity_check(http_request *r)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Bugsnag-Integrity");
    if (h == NULL)
        return ERR_OK;
    return auth_integrity_check(h, r->mem ? (const void *)r->mem : "", (size_t)r->body_bytes,
                                &r->err);
}

enum MHD_Result handle_bugsnag_notify(http_request *r)
{
    if (r->intake == INTAKE_NONE) {
        static const char *const EVENTS[] = {"4", "5"};
        const char *body_key = NULL;
        if (MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Bugsnag-Api-Key") == NULL &&
            r->mem != NULL) {
            /* no header (a hand-made client): the payload's apiKey */
            const jsonr_value *j = jsonr_parse(r->a, (const char *)r->mem, (size_t)r->body_bytes,
                                               JSONR_REPLACE_INVALID, NULL, NULL);
            body_key = jsonr_string(jsonr_get(j, "apiKey"));
        }
        if (payload_version_check(r, EVENTS, 2) != ERR_OK || bugsnag_project(r, body_key) != ERR_OK ||
            integrity_check(r) != ERR_OK) {
            metrics_report_rejected(r->err.code);
            return respond_err(r, &r->err);
        }
    }
    return report_intake(r, "bugsnag");
}

/* An RFC 3339 UTC time ("2021-01-19T11:16:01.259Z", "+00:00" also) as Unix milliseconds. */
static bool rfc3339_ms(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int ms = 0, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
        return false;
    const char *p = s + n;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        if (digits == 0)
            return false;
        for (; digits < 3; digits++)
            ms *= 10;
    }
    if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
        return false;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (int64_t)timegm(&tm) * 1000 + ms;
    return true;
}

/* {"app":{...},"device":{...},"notifier":{...},"sessions":[{"id","startedAt","user"}]} as
 * BSGSessionUploader sends it (older notifiers: "sessionCounts":[{"startedAt",
 * "sessionsStarted"}]): counted as release health sessions (server/ingest/sessions.h) of the
 * key's project, release = app.version, environment = app.releaseStage, device = device.id.
 * A Bugsnag session is reported once, when it starts: it counts as started (init) and is
 * never closed; crashes reach the release through the events. */
enum MHD_Result handle_bugsnag_sessions(http_request *r)
{
    static const char *const SESSIONS[] = {"1"};
    if (payload_version_check(r, SESSIONS, 1) != ERR_OK || bugsnag_project(r, NULL) != ERR_OK ||
        integrity_check(r) != ERR_OK)
        return respond_err(r, &r->err);
    json_error_t e;
    json_t *root = json_loadb(r->mem ? (const char *)r->mem : "", (size_t)r->body_bytes, 0, &e);
    if (root == NULL)
        return respond_error(r, ERR_INVALID, "body is not valid JSON");
    arena_defer(r->a, release_json, root);
    if (!json_is_object(root))
        return respond_error(r, ERR_INVALID, "body must be a JSON object");
    const json_t *app = json_object_get(root, "app");
    const char *release = json_is_string(json_object_get(app, "version"))
                              ? json_string_value(json_object_get(app, "version")) : NULL;
    const char *env = json_is_string(json_object_get(app, "releaseStage"))
                          ? json_string_value(json_object_get(app, "releaseStage")) : NULL;
    const json_t *dev = json_object_get(json_object_get(root, "device"), "id");
    const char *did = json_is_string(dev) ? json_string_value(dev) : NULL;
    const json_t *sessions = json_object_get(root, "sessions");
    const json_t *counts = json_object_get(root, "sessionCounts");
    if (sessions == NULL && counts == NULL)
        return respond_error(r, ERR_INVALID, "sessions: missing (a Bugsnag session payload has "
                             "\"sessions\" or \"sessionCounts\")");
    if (release == NULL || release[0] == '\0')
        return respond_error(r, ERR_INVALID, "app.version: missing (the release the sessions "
                             "count for)");
    if ((sessions != NULL && !json_is_array(sessions)) || (counts != NULL && !json_is_array(counts)))
        return respond_error(r, ERR_INVALID, sessions != NULL && !json_is_array(sessions)
                                                 ? "sessions must be an array"
                                                 : "sessionCounts must be an array");
    size_t ns = json_array_size(sessions), nc = json_array_size(counts);
    if (ns > BUGSNAG_MAX_SESSIONS || nc > BUGSNAG_MAX_SESSIONS)
        return respond_error(r, ERR_TOO_LARGE, "sessions: more than 1000 in one payload");
    session_update *u = arena_alloc_array(r->a, ns ? ns : 1, sizeof *u, &r->err);
    session_aggregate *ag = arena_alloc_array(r->a, nc ? nc : 1, sizeof *ag, &r->err);
    if (u == NULL || ag == NULL)
        return respond_err(r, &r->err);
    char msg[128];
    for (size_t i = 0; i < ns; i++) {
        const json_t *s = json_array_get(sessions, i);
        const json_t *id = json_object_get(s, "id");
        const json_t *at = json_object_get(s, "startedAt");
        if (!json_is_object(s))
            snprintf(msg, sizeof msg, "sessions[%zu] must be an object", i);
        else if (!json_is_string(id) || json_string_length(id) == 0)
            snprintf(msg, sizeof msg, "sessions[%zu].id must be a non-empty string", i);
        else if (!json_is_string(at) || !rfc3339_ms(json_string_value(at), &u[i].started_ms))
            snprintf(msg, sizeof msg, "sessions[%zu].startedAt must be an RFC 3339 UTC time", i);
        else {
            u[i].sid = json_string_value(id);
            u[i].did = did;
            u[i].release = release;
            u[i].environment = env;
            u[i].duration_s = NAN;
            u[i].status = SESSION_OK;
            u[i].init = true;
            continue;
        }
        return respond_error(r, ERR_INVALID, msg);
    }
    for (size_t i = 0; i < nc; i++) {
        const json_t *c = json_array_get(counts, i);
        const json_t *n = json_object_get(c, "sessionsStarted");
        const json_t *at = json_object_get(c, "startedAt");
        if (!json_is_object(c))
            snprintf(msg, sizeof msg, "sessionCounts[%zu] must be an object", i);
        else if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 1000000)
            snprintf(msg, sizeof msg, "sessionCounts[%zu].sessionsStarted must be a whole number "
                     "from 0 to 1000000", i);
        else if (!json_is_string(at) || !rfc3339_ms(json_string_value(at), &ag[i].started_ms))
            snprintf(msg, sizeof msg, "sessionCounts[%zu].startedAt must be an RFC 3339 UTC time", i);
        else {
            ag[i].release = release;
            ag[i].environment = env;
            ag[i].did = did;
            ag[i].exited = (uint32_t)json_integer_value(n); /* started, none known to crash */
            continue;
        }
        return respond_error(r, ERR_INVALID, msg);
    }
    sessions_result res = {0}, res2 = {0};
    char field[SESSIONS_FIELD_MAX] = "";
    err_code rc = ERR_OK;
    if (ns > 0)
        rc = sessions_ingest(&res, field, r->srv->store, r->project_id ? r->project_id : STORE_PROJECT_DEFAULT, u, ns,
                             "sessions", 0, &r->err);
    if (rc == ERR_OK && nc > 0)
        rc = sessions_ingest_aggregates(&res2, field, r->srv->store,
                                        r->project_id ? r->project_id : STORE_PROJECT_DEFAULT, ag, nc, "sessionCounts",
                                        0, &r->err);
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    uint64_t started = 0;
    for (size_t i = 0; i < nc; i++)
        started += ag[i].exited;
    metrics_bugsnag_sessions(res.accepted + started);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kuint(&w, "accepted", res.accepted + res2.accepted);
    jsonw_kuint(&w, "ignored", res.ignored + res2.ignored);
    jsonw_object_end(&w);
    return respond_json(r, 202, &body);
}

err_code bugsnag_dsym_part_begin(http_request *r)
{
    const char *key = request_form_field(r, "apiKey");
    if (key == NULL &&
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Bugsnag-Api-Key") == NULL)
        return ERR_OK; /* not known yet: checked once the body is in */
    return bugsnag_project(r, key);
}

enum MHD_Result handle_bugsnag_dsym(http_request *r)
{
    if (r->pp) {
        /* the fields (apiKey, overwrite) are complete once the last part is flushed */
        enum MHD_Result ok = MHD_destroy_post_processor(r->pp);
        r->pp = NULL;
        if (r->failed)
            return respond_err(r, &r->err);
        if (ok != MHD_YES)
            return respond_error(r, ERR_INVALID, "malformed multipart/form-data body");
    }
    if (bugsnag_project(r, request_form_field(r, "apiKey")) != ERR_OK)
        return respond_err(r, &r->err);
    if (r->nparts == 0 || r->part_fields[0] == NULL || strcmp(r->part_fields[0], "dsym") != 0)
        return respond_error(r, ERR_INVALID, "dsym: missing (send the dSYM's DWARF file or a zip "
                             "of .dSYM folders as the file field \"dsym\")");
    const char *ow = request_form_field(r, "overwrite");
    bool overwrite = ow != NULL && (strcmp(ow, "true") == 0 || strcmp(ow, "1") == 0);
    return dsym_upload_respond(r, !overwrite);
}
