/*
 * store_sessions - release health in Postgres (migration 0010): session states, per-hour
 * counters per (project, release, environment) and each release's distinct users. The
 * counting rules are decided in server/ingest/sessions.c; this file merges a batch of
 * per-session changes with the stored states in one transaction.
 */
#ifndef STACKSIFT_STORE_STORE_SESSIONS_H
#define STACKSIFT_STORE_STORE_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "store/store.h"

/* A session's final status as stored. */
#define STORE_SESSION_OPEN 0
#define STORE_SESSION_EXITED 'x'
#define STORE_SESSION_CRASHED 'c'
#define STORE_SESSION_ABNORMAL 'a'

/* What one batch says about one session (its updates folded in order, sessions.c). */
typedef struct {
    uint8_t sid[16];          /* 16 bytes of SHA-256 of the session id */
    uint8_t uid[16];          /* 16 bytes of SHA-256 of did (when has_uid) */
    bool has_uid;
    uint8_t lvl;              /* leading zero bits of SHA-256(did) (release_users.lvl) */
    const char *release;      /* attributes of the batch's first update of the session: */
    const char *environment;  /* used only when the session is new */
    int64_t started_ms;
    bool init;                /* an update had init */
    bool errored;             /* an update before the final one had errors or status errored */
    char final;               /* STORE_SESSION_*: the first final status in the batch */
} store_session_delta;

/* store_sessions_apply - merge `n` deltas (distinct sids) of project `project_id` with the
 * stored session states and update the counters, in one transaction (batches of a project
 * are serialized by a transaction-level advisory lock: no deadlock, no lost update).
 * Errors as store.h. */
err_code store_sessions_apply(store *s, int64_t project_id, const store_session_delta *d,
                              size_t n, err_info *err);

/* One aggregated row: sessions counted now, without state. */
typedef struct {
    const char *release;
    const char *environment;
    uint8_t uid[16];
    bool has_uid;
    uint8_t lvl;
    int64_t started_ms;
    int64_t sessions, crashed, abnormal, errored;
} store_session_agg;

/* store_sessions_add - add `n` aggregated rows to the counters in one transaction.
 * Errors as store.h. */
err_code store_sessions_add(store *s, int64_t project_id, const store_session_agg *a, size_t n,
                            err_info *err);

/* store_sessions_configure - devices per release and environment kept exactly
 * (STACKSIFT_RELEASE_USERS_EXACT, default 1,000,000); above, one device in 2^k is kept and
 * counts 2^k (docs/release-health.md). `cache_devices`: how many (release, device) pairs
 * this node remembers as stored, to skip their upserts (STACKSIFT_SESSIONS_DEVICE_CACHE,
 * at most ~50 bytes each; 0 = none, the default before this call). Process-wide; call before
 * serving. */
void store_sessions_configure(uint64_t users_exact, size_t cache_devices);

#endif
