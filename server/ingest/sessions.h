/*
 * sessions - release health: session updates in, counted as Sentry counts them (the release
 * health docs, develop.sentry.dev "Sessions", and Relay's session metrics extraction):
 *
 *   - a session counts once, when an update with `init` arrives (a repeated or retried
 *     update, or a batch sent twice, changes nothing: the state of every open session is
 *     kept in Postgres until its start is 5 days old);
 *   - `exited`, `crashed` and `abnormal` are final: later updates change nothing but a late
 *     `init`;
 *   - errored = `errors` > 0 or status `errored` seen, and the session is neither crashed
 *     nor abnormal (a session that errors then crashes counts as crashed only);
 *   - release, environment, device (`did`) and start are fixed by the session's first update;
 *   - an update whose session started more than 5 days ago (or more than a day ahead) is
 *     ignored (counted in the result, not an error);
 *   - users = distinct `did` of counted sessions; crashed users = those with a crashed one.
 *
 * Counted per project, release, environment and UTC hour of start (migration 0010). Callers:
 * POST /api/v1/sessions (sessions_parse_json), Sentry envelope `session` and `sessions` items
 * (sessions_parse_sentry_session, sessions_parse_sentry_aggregates), Bugsnag sessions (build
 * session_aggregate rows). Thread-safe (the store is).
 */
#ifndef STACKSIFT_INGEST_SESSIONS_H
#define STACKSIFT_INGEST_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

#define SESSIONS_MAX_BATCH 100000  /* updates (or aggregate rows) in one call */
#define SESSIONS_MAX_ID 256        /* bytes in sid and did */
#define SESSIONS_MAX_NAME 200      /* bytes in release and environment */
#define SESSIONS_FIELD_MAX 64      /* "sessions[99999].environment" and its NUL */

typedef enum {
    SESSION_OK,        /* "ok": running */
    SESSION_EXITED,    /* "exited": ended normally (final) */
    SESSION_CRASHED,   /* "crashed" (final) */
    SESSION_ABNORMAL,  /* "abnormal": ended without a clean exit, e.g. killed (final) */
    SESSION_ERRORED,   /* "errored": had a handled error; not final */
} session_status;

/* One session update. Strings borrowed from the caller for the call. */
typedef struct {
    const char *sid;          /* session id, 1..256 bytes (any text: a UUID for Sentry) */
    const char *did;          /* distinct id of the user or device, NULL = none; <= 256 bytes */
    const char *release;      /* 1..200 bytes, e.g. "com.example.app@1.4+103" */
    const char *environment;  /* NULL or "" -> "production"; <= 200 bytes */
    int64_t started_ms;       /* session start, Unix ms (UTC) */
    int64_t timestamp_ms;     /* when this update was made, Unix ms; 0 = started_ms */
    double duration_s;        /* seconds, >= 0; negative is refused; NAN = not given */
    session_status status;
    uint32_t errors;          /* errors seen so far in the session */
    bool init;                /* the session's first update */
} session_update;

/* One aggregated row (Sentry `sessions` item, Bugsnag session counts): sessions that
 * started in the same minute, with no session id, all counted now (no init needed).
 * Sessions of the row = exited + errored + abnormal + crashed. */
typedef struct {
    const char *release;      /* as in session_update */
    const char *environment;
    const char *did;          /* NULL = none; else the one device of all these sessions */
    int64_t started_ms;
    uint32_t exited;          /* ended cleanly without errors */
    uint32_t errored;         /* had errors, neither crashed nor abnormal */
    uint32_t abnormal;
    uint32_t crashed;
} session_aggregate;

typedef struct {
    size_t accepted;   /* updates or rows taken into account */
    size_t ignored;    /* older than 5 days (or more than a day ahead) */
} sessions_result;

/*
 * sessions_ingest - count `n` updates of project `project_id` (n <= SESSIONS_MAX_BATCH) in
 * one transaction: all or nothing. Several updates of one session may be in the batch, in
 * the order they were made. `now_ms` = 0 for the clock (tests pass their own).
 * On error `field` (may be NULL) names the offending field with its index, as in
 * "sessions[3].status" (`prefix` is the array's name, "sessions" for NULL), and nothing is
 * counted.
 * Errors  ERR_INVALID (missing sid or release, a field too long, a negative duration),
 *         ERR_TOO_LARGE (more than SESSIONS_MAX_BATCH), ERR_STORE.
 */
err_code sessions_ingest(sessions_result *out, char field[SESSIONS_FIELD_MAX], store *s,
                         int64_t project_id, const session_update *u, size_t n,
                         const char *prefix, int64_t now_ms, err_info *err);

/* sessions_ingest_aggregates - count `n` aggregated rows in one transaction; same rules for
 * fields, age and errors as sessions_ingest. Not idempotent: a row sent twice counts twice
 * (Sentry's `sessions` items carry no id; a caller that can retry must dedupe above). */
err_code sessions_ingest_aggregates(sessions_result *out, char field[SESSIONS_FIELD_MAX],
                                    store *s, int64_t project_id, const session_aggregate *a,
                                    size_t n, const char *prefix, int64_t now_ms,
                                    err_info *err);

/*
 * sessions_parse_json - the body of POST /api/v1/sessions:
 *   {"sessions": [{"sid", "did", "release", "environment", "started", "duration_s",
 *                  "status", "errors", "init"?, "timestamp"?}, ...]}
 * started/timestamp: RFC 3339 text or Unix seconds (number). `init` defaults to true: a
 * client that sends each session once, at its end, needs no flag. `len` bytes of JSON.
 * *out, *n and every string of the updates (borrowed from the parsed JSON, which `a` owns)
 * valid until arena_free(a). Errors ERR_INVALID / ERR_TOO_LARGE with `field` set
 * ("sessions[7].status").
 */
err_code sessions_parse_json(session_update **out, size_t *n, char field[SESSIONS_FIELD_MAX],
                             const char *json, size_t len, arena *a, err_info *err);

/* sessions_parse_sentry_session - one Sentry envelope `session` item payload:
 * {"sid","did","init","started","timestamp","duration","status","errors","seq",
 *  "attrs":{"release","environment",...}} (develop.sentry.dev/sdk/sessions). Strings valid
 *  until arena_free(a).
 * Errors ERR_INVALID with `field` set. */
err_code sessions_parse_sentry_session(session_update *out, char field[SESSIONS_FIELD_MAX],
                                       const char *json, size_t len, arena *a, err_info *err);

/* sessions_parse_sentry_aggregates - one Sentry `sessions` item payload:
 * {"aggregates":[{"started","did","exited","errored","abnormal","crashed"}],
 *  "attrs":{"release","environment"}}; *out, *n and the strings valid until arena_free(a).
 * Errors ERR_INVALID / ERR_TOO_LARGE with `field` set ("aggregates[2].crashed"). */
err_code sessions_parse_sentry_aggregates(session_aggregate **out, size_t *n,
                                          char field[SESSIONS_FIELD_MAX], const char *json,
                                          size_t len, arena *a, err_info *err);

/* sessions_status_parse - "ok" | "exited" | "crashed" | "abnormal" | "errored" -> *out;
 * false for anything else. */
bool sessions_status_parse(session_status *out, const char *name);

/* sessions_time_parse - RFC 3339 ("2026-11-27T01:02:03.456Z", "+01:00" offsets) -> Unix ms;
 * false when malformed. */
bool sessions_time_parse(int64_t *out_ms, const char *text);

#endif
