/*
 * test_sessions_parse - the session parsers without a database (server/ingest/sessions.h):
 * RFC 3339 times against timegm (the oracle), and the field each refusal names.
 */
/* timegm: _GNU_SOURCE comes from the build */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "ingest/sessions.h"

/* Random times of years 0000-9999, days up to 31 in every month and second 60 (both carried
 * over as timegm carries them), with and without fractions and offsets. */
static void times_match_timegm(void)
{
    unsigned seed = 12345;
    size_t bad = 0;
    for (int i = 0; i < 200000; i++) {
        int y = rand_r(&seed) % 10000, mo = 1 + rand_r(&seed) % 12, d = 1 + rand_r(&seed) % 31;
        int h = rand_r(&seed) % 24, mi = rand_r(&seed) % 60, s = rand_r(&seed) % 61;
        int ms = rand_r(&seed) % 1000, off = (rand_r(&seed) % 3 - 1) * (rand_r(&seed) % 840);
        char text[64];
        if (off == 0)
            snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, mo, d, h, mi, s,
                     ms);
        else
            snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03d%c%02d:%02d", y, mo, d,
                     h, mi, s, ms, off < 0 ? '-' : '+', abs(off) / 60, abs(off) % 60);
        struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
                        .tm_min = mi, .tm_sec = s};
        int64_t want = ((int64_t)timegm(&tm) - off * 60LL) * 1000 + ms, got = 0;
        if (!sessions_time_parse(&got, text) || got != want) {
            if (bad++ < 5)
                fprintf(stderr, "  %s: %lld, timegm %lld\n", text, (long long)got,
                        (long long)want);
        }
    }
    CHECK(bad == 0);
    int64_t t;
    CHECK(sessions_time_parse(&t, "1970-01-01T00:00:00Z") && t == 0);
    CHECK(sessions_time_parse(&t, "1969-12-31T23:59:59.5Z") && t == -500);
    CHECK(sessions_time_parse(&t, "2026-11-27T01:02:03+01:00") && t == 1795737723000);
    CHECK(!sessions_time_parse(&t, "2026-13-01T00:00:00Z"));
    CHECK(!sessions_time_parse(&t, "2026-11-27T01:02:03.Z"));
    CHECK(!sessions_time_parse(&t, "2026-11-27"));
}

/* A refusal names the field and its index, in `field` and in the message. */
static void refusals_name_the_field(void)
{
    static const struct {
        const char *body, *field, *message;
    } cases[] = {
        {"[]", "body", "body: not a JSON object"},
        {"{\"sessions\": 1}", "sessions", "sessions: required, an array"},
        {"{\"sessions\": [{\"sid\": \"a\", \"release\": \"r\", \"started\": 1e9}, 7]}",
         "sessions[1]", "sessions[1]: not an object"},
        {"{\"sessions\": [{\"sid\": \"a\", \"release\": \"r\", \"started\": 1e9, "
         "\"status\": \"gone\"}]}", "sessions[0].status", "sessions[0].status: unknown status"},
        {"{\"sessions\": [{\"sid\": \"a\", \"release\": \"r\", \"started\": 1e9, "
         "\"errors\": -1}]}", "sessions[0].errors", "sessions[0].errors: not a non-negative"},
        {"{\"sessions\": [{\"sid\": \"a\", \"release\": \"r\"}]}", "sessions[0].started",
         "sessions[0].started: required"},
        {"{\"sessions\": [", "body", "body: not JSON (line 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        arena *a = arena_new(1 << 20);
        session_update *u;
        size_t n;
        char field[SESSIONS_FIELD_MAX];
        err_info err = {0};
        CHECK_EQ_INT(sessions_parse_json(&u, &n, field, cases[i].body, strlen(cases[i].body), a,
                                         &err), ERR_INVALID);
        CHECK_EQ_STR(field, cases[i].field);
        CHECK(strncmp(err.msg, cases[i].message, strlen(cases[i].message)) == 0);
        arena_free(a);
    }
    arena *a = arena_new(1 << 20);
    session_update *u;
    size_t n;
    char field[SESSIONS_FIELD_MAX];
    err_info err = {0};
    const char *ok = "{\"sessions\": [{\"sid\": \"s1\", \"did\": \"d\", \"release\": \"r@1\", "
                     "\"started\": \"2026-11-27T01:00:00Z\", \"duration_s\": 3, "
                     "\"status\": \"crashed\", \"errors\": 2}]}";
    CHECK_EQ_INT(sessions_parse_json(&u, &n, field, ok, strlen(ok), a, &err), ERR_OK);
    CHECK(n == 1 && strcmp(u[0].sid, "s1") == 0 && strcmp(u[0].release, "r@1") == 0);
    CHECK(u[0].status == SESSION_CRASHED && u[0].errors == 2 && u[0].init);
    CHECK(u[0].started_ms == 1795741200000 && u[0].duration_s == 3);
    arena_free(a);
}

int main(void)
{
    RUN(times_match_timegm);
    RUN(refusals_name_the_field);
    return harness_done();
}
