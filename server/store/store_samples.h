/*
 * store_samples - privacy-API samples in Postgres, migrations/0005: accepted
 * batches, the workers' counting transaction (call sites, per build and day counts with
 * device sets, stacks waiting for a dSYM) and the read side of /api/v1/callsites.
 *
 * Exactly once: a batch's calls are added to the counts in the same transaction that marks
 * the batch counted, so a worker that dies, a node that restarts or a failed commit only
 * puts the batch back in the queue. Upserts go in key order, so concurrent workers lock rows
 * in the same order (no deadlocks). Errors as in store.h, plus ERR_TOO_LARGE (arena full).
 */
#ifndef STACKSIFT_STORE_STORE_SAMPLES_H
#define STACKSIFT_STORE_STORE_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

/* ---- intake ---------------------------------------------------------------------------- */

/* An accepted batch; strings NUL-terminated, batch_id NULL if the client sent none. */
typedef struct {
    int64_t project_id;     /* the project the batch was sent to; 0 = STORE_PROJECT_DEFAULT */
    const char *app;        /* bundle id, else app name */
    const char *batch_id;
    const char *sha256;     /* 64 hex: of `canonical` */
    const char *build;
    const char *device;
    int64_t samples, calls;
    const char *canonical;  /* samplebatch_render_canonical */
} store_sample_batch;

/* What became of a batch handed to store_samples_insert. */
typedef enum {
    STORE_BATCH_STORED,  /* a new row, durable now */
    STORE_BATCH_RETRY,   /* this app already has a batch with this batch_id and the same
                            content: nothing stored, it is counted once */
} store_batch_outcome;

/* store_samples_insert - commit one batch (synchronous commit: durable when ERR_OK).
 * Errors ERR_CONFLICT (the app has a batch with this batch_id and other content),
 * ERR_STORE, ERR_INVALID. */
err_code store_samples_insert(store_batch_outcome *outcome, store *s, const store_sample_batch *b,
                              err_info *err);

/* ---- counting (workers) ---------------------------------------------------------------- */

typedef struct store_sample_work store_sample_work; /* claimed rows: one connection, one open
                                                       transaction */

/* A claimed batch; strings in the claim's arena. */
typedef struct {
    int64_t id;
    int64_t project_id;
    const char *sha256;      /* 64 hex: of its canonical text (store_sample_batch.sha256);
                                the text itself: store_samples_canonical */
    const char *received_at; /* RFC 3339 UTC, microseconds */
    const char *day;         /* UTC day of receipt, YYYY-MM-DD */
} store_claimed_batch;

/* A claimed stack that waited for a dSYM that has arrived since. */
typedef struct {
    int64_t id;
    int64_t project_id;
    const char *app, *build, *day, *version;
    const char *sample;       /* one-sample canonical batch */
    size_t sample_len;
    int64_t count;
    const char *devices;      /* device ids joined by \x1f (ids hold no control characters) */
    const char *first_seen, *last_seen;
} store_claimed_pending;

/* store_samples_claim - open a transaction and lock up to `max` received batches (oldest
 * first) and up to `max` ready pending stacks, FOR UPDATE SKIP LOCKED, leaving out the ids
 * listed in skip_batches / skip_pending (comma-separated decimal, NULL or "" = none). *out is
 * NULL when there was nothing; otherwise finish with store_samples_commit or
 * store_samples_abort. */
err_code store_samples_claim(store_sample_work **out, const store_claimed_batch **batches,
                             size_t *nbatches, const store_claimed_pending **pending,
                             size_t *npending, store *s, size_t max, const char *skip_batches,
                             const char *skip_pending, arena *a, err_info *err);

/* store_samples_canonical - the canonical text of claimed batch `id` (claimed by `w`): *text
 * (NUL-terminated, *len bytes) in `a`. Fetched apart from the claim, and only for a batch
 * this process has not kept parsed (callsites' handoff): most are not read back at all.
 * Errors ERR_STORE, ERR_INTERNAL (no such claimed row), ERR_TOO_LARGE. */
err_code store_samples_canonical(const char **text, size_t *len, store_sample_work *w, int64_t id,
                                 arena *a, err_info *err);

/* Calls to add to one (call site, build, day); the list handed to commit holds each such
 * key at most once. Strings NUL-terminated. */
typedef struct {
    int64_t project_id;
    const char *app, *tag, *key;   /* the call site: key = hex SHA-256 of tag + frames */
    const char *frames_json;       /* [{function,file,line,image}] */
    const char *stack_json;        /* one symbolicated stack */
    const char *build, *version, *day;
    int64_t count;
    const char *devices_json;      /* JSON array of distinct device ids */
    const char *first_seen, *last_seen;
} store_callsite_add;

/* Calls of one stack still waiting for a dSYM; (app, stack_key, build, day) at most once. */
typedef struct {
    int64_t project_id;
    const char *app, *stack_key, *build, *day, *version;
    const char *sample;            /* one-sample canonical batch */
    int64_t count;
    const char *devices_json;
    const char *first_seen, *last_seen;
    const char *missing_json;      /* JSON array of the in-app UUIDs without a dSYM */
} store_pending_add;

/* store_samples_commit - add `adds` to callsites and callsite_days, replace the claimed
 * pending stacks by `pend` (merged with waiting ones of the same key), mark the claimed
 * batches counted, COMMIT. Frees the work whatever happens (rolled back on error: the rows
 * go back to the queue). */
err_code store_samples_commit(store_sample_work *w, const store_callsite_add *adds, size_t nadds,
                              const store_pending_add *pend, size_t npend, err_info *err);

/* store_samples_abort - roll back and free; NULL is a no-op. */
void store_samples_abort(store_sample_work *w);

/* How long a counted batch's row is kept to recognize a retry of its batch_id. */
#define STORE_SAMPLES_BATCH_ID_DAYS "30"

/* store_samples_sweep - mark waiting stacks whose missing UUIDs have a dSYM now 'ready' (the
 * safety net behind the dsyms trigger), and forget counted batches older than
 * STORE_SAMPLES_BATCH_ID_DAYS. *released = stacks marked ready. */
err_code store_samples_sweep(int64_t *released, store *s, err_info *err);

/* ---- the call sites API ---------------------------------------------------------------- */

typedef struct {
    const char *app, *tag, *build, *version; /* exact filters, NULL = any */
    const char *new_in_build;  /* only call sites whose first build is this, NULL = any */
    const char *q;             /* substring of the tag or a frame (case-insensitive), or NULL */
    const char *sort;          /* "count" (default), "first_seen", "devices"; descending */
    unsigned limit;            /* 1..1000 */
    const char *cursor;        /* next_cursor of the previous page, or NULL */
    int64_t project_id;        /* only this project's call sites; 0 = every project */
} store_callsite_query;

/* A call site and its counts over the rows the build and version filters select; strings
 * in the caller's arena. */
typedef struct {
    int64_t id;
    const char *app, *tag;
    const char *frames_json;       /* [{function, file, line, image}], top first */
    const char *stack_json;        /* one symbolicated stack */
    int64_t count, devices;
    const char *builds_json;       /* the builds it was seen in, a JSON array, version order */
    const char *first_seen_build;
    const char *first_seen, *last_seen;   /* RFC 3339 UTC */
} store_callsite;

/* One page of call sites. */
typedef struct {
    store_callsite *callsites;
    size_t n;
    const char *next_cursor;       /* NULL on the last page */
    int64_t pending_stacks, pending_calls; /* waiting for a dSYM, under the same filters */
} store_callsite_page;

/* store_callsites_list - one page, its wire format in server/http/routes_samples.c.
 * Errors ERR_INVALID (sort, cursor), ERR_STORE, ERR_TOO_LARGE. */
err_code store_callsites_list(store_callsite_page *out, store *s, const store_callsite_query *q,
                              arena *a, err_info *err);

/* store_samples_counts - batches waiting to be counted and stacks waiting for a dSYM, for
 * /metrics. */
typedef struct {
    int64_t received, pending_stacks, pending_calls;
} store_samples_stats;
err_code store_samples_counts(store_samples_stats *out, store *s, err_info *err);

#endif
