/*
 * fuzz_sessions - libFuzzer target for the release health parsers (server/ingest/sessions.c):
 * the body of POST /api/v1/sessions, a Sentry envelope `session` item and a `sessions`
 * (aggregates) item, each tried on every input. Promises: an input is accepted or refused
 * with ERR_INVALID / ERR_TOO_LARGE, a message and the field it names (never a crash, a hang
 * or an overread); accepted updates have checked strings, a known status and no negative
 * duration; counting them (sessions_ingest, with the store replaced by the checks below)
 * folds them into one change per distinct session whose fields obey the rules, and
 * accepted + ignored = updates.
 */
#include <math.h>
#include <string.h>

#include "fuzz_require.h"
#include "ingest/sessions.h"
#include "store/store_sessions.h"

#define NOW_MS 1795000000000LL   /* a fixed clock: 2026-11-19 */

/* The store's side of sessions_ingest: what it is handed must be well formed. */
err_code store_sessions_apply(store *s, int64_t project_id, const store_session_delta *d,
                              size_t n, err_info *err)
{
    (void)s;
    (void)err;
    REQUIRE(project_id == 1 && n <= SESSIONS_MAX_BATCH);
    for (size_t i = 0; i < n; i++) {
        REQUIRE(i == 0 || memcmp(d[i - 1].sid, d[i].sid, 16) < 0);   /* distinct, sorted */
        REQUIRE(d[i].release != NULL && d[i].release[0] != '\0' &&
                strlen(d[i].release) <= SESSIONS_MAX_NAME);
        REQUIRE(d[i].environment != NULL && d[i].environment[0] != '\0' &&
                strlen(d[i].environment) <= SESSIONS_MAX_NAME);
        REQUIRE(d[i].final == STORE_SESSION_OPEN || d[i].final == STORE_SESSION_EXITED ||
                d[i].final == STORE_SESSION_CRASHED || d[i].final == STORE_SESSION_ABNORMAL);
        REQUIRE(d[i].lvl <= 64 && (d[i].has_uid || d[i].lvl == 0));
        REQUIRE(d[i].started_ms >= NOW_MS - 5LL * 86400000 &&
                d[i].started_ms <= NOW_MS + 86400000);
    }
    return ERR_OK;
}

err_code store_sessions_add(store *s, int64_t project_id, const store_session_agg *a, size_t n,
                            err_info *err)
{
    (void)s;
    (void)err;
    REQUIRE(project_id == 1 && n <= SESSIONS_MAX_BATCH);
    for (size_t i = 0; i < n; i++) {
        REQUIRE(a[i].release != NULL && a[i].release[0] != '\0' && a[i].environment != NULL);
        REQUIRE(a[i].sessions >= 0 && a[i].crashed >= 0 && a[i].abnormal >= 0 &&
                a[i].errored >= 0);
        REQUIRE(a[i].sessions >= a[i].crashed + a[i].abnormal + a[i].errored);
    }
    return ERR_OK;
}

static void check_refusal(err_code rc, const char *field, const err_info *err)
{
    REQUIRE(rc == ERR_INVALID || rc == ERR_TOO_LARGE);
    REQUIRE(err->msg[0] != '\0' && field[0] != '\0');
    REQUIRE(strlen(field) < SESSIONS_FIELD_MAX);
}

static void check_update(const session_update *u)
{
    /* strings are NUL-terminated copies (strlen must stay inside them: ASan checks) */
    if (u->sid)
        (void)strlen(u->sid);
    if (u->did)
        (void)strlen(u->did);
    if (u->release)
        (void)strlen(u->release);
    if (u->environment)
        (void)strlen(u->environment);
    REQUIRE((unsigned)u->status <= SESSION_ERRORED);
    REQUIRE(isnan(u->duration_s) || u->duration_s >= 0);
}

/* Count accepted updates as the server would; the checks are in store_sessions_apply. */
static void count(const session_update *u, size_t n)
{
    sessions_result res;
    char field[SESSIONS_FIELD_MAX];
    err_info err = {0};
    err_code rc = sessions_ingest(&res, field, (store *)NULL, 1, u, n, "sessions", NOW_MS, &err);
    if (rc == ERR_OK)
        REQUIRE(res.accepted + res.ignored == n);
    else
        check_refusal(rc, field, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    arena *a = arena_new(64u << 20);
    char field[SESSIONS_FIELD_MAX];
    err_info err = {0};
    /* a copy of exactly len bytes: ASan sees any read past the end */
    char *doc = arena_alloc(a, len ? len : 1, &err);
    REQUIRE(doc != NULL);
    memcpy(doc, data, len);

    session_update *u = NULL;
    size_t n = 0;
    err_code rc = sessions_parse_json(&u, &n, field, doc, len, a, &err);
    if (rc == ERR_OK) {
        REQUIRE(n <= SESSIONS_MAX_BATCH && (n == 0 || u != NULL));
        for (size_t i = 0; i < n; i++)
            check_update(&u[i]);
        count(u, n);
    } else {
        check_refusal(rc, field, &err);
    }

    session_update one;
    err = (err_info){0};
    rc = sessions_parse_sentry_session(&one, field, doc, len, a, &err);
    if (rc == ERR_OK) {
        check_update(&one);
        REQUIRE(one.timestamp_ms != 0 || one.started_ms == 0);
        count(&one, 1);
    } else {
        check_refusal(rc, field, &err);
    }

    session_aggregate *g = NULL;
    err = (err_info){0};
    rc = sessions_parse_sentry_aggregates(&g, &n, field, doc, len, a, &err);
    if (rc == ERR_OK) {
        REQUIRE(n <= SESSIONS_MAX_BATCH && (n == 0 || g != NULL));
        sessions_result res;
        err = (err_info){0};
        rc = sessions_ingest_aggregates(&res, field, (store *)NULL, 1, g, n, "aggregates",
                                        NOW_MS, &err);
        if (rc == ERR_OK)
            REQUIRE(res.accepted + res.ignored == n);
        else
            check_refusal(rc, field, &err);
    } else {
        check_refusal(rc, field, &err);
    }
    arena_free(a);
    return 0;
}
