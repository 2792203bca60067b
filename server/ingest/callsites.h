/*
 * callsites - privacy-API call sites at fleet volume: intake of sample batches
 * and the workers that count them.
 *
 *   POST /api/v1/samples -> callsites_accept: gunzip, samplebatch_parse (all or nothing),
 *       canonical form (identical stacks merged), one sample_batches row -> 202; with
 *       workers in this process the checked batch is handed to them in canonical form
 *       (memory only, bounded), so the one that claims its row does not parse it again
 *   workers: claim batches (FOR UPDATE SKIP LOCKED) -> per distinct stack: symbolicate once
 *       (pipeline caches), call site = tag + normalized top in-app frames (signature rules)
 *       -> one row per (call site, build, UTC day): count + device set; stacks whose in-app
 *       image has no dSYM wait in callsite_pending (per distinct stack, counted) and are
 *       counted when a missing UUID gets its dSYM. Counts and "batch counted" commit in one
 *       transaction: exactly once across restarts, crashes and concurrent nodes.
 * Thread-safe.
 */
#ifndef STACKSIFT_INGEST_CALLSITES_H
#define STACKSIFT_INGEST_CALLSITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "ingest/pipeline.h"
#include "samplebatch/samplebatch.h"
#include "store/store.h"

/* ---- intake ---------------------------------------------------------------------------- */

typedef struct {
    const char *content_type;     /* media type without parameters, lower case; "" or
                                     "application/json" are accepted */
    const char *content_encoding; /* NULL, "identity" or "gzip" */
    const uint8_t *body;
    size_t len;
    uint64_t max_bytes;           /* limit on the decoded batch */
    int64_t project_id;           /* the project it was sent to (a DSN key's); 0 = default */
} callsites_input;

typedef struct {
    size_t samples;     /* samples in the batch as sent */
    uint64_t calls;     /* sum of their counts */
    size_t stacks;      /* distinct stacks after merging */
    bool retry;         /* the batch_id was stored before with the same samples: not counted
                           again */
} callsites_result;

/*
 * callsites_accept - decode, check and commit one batch. When it returns ERR_OK the batch is
 * durable (or was already: out->retry). `field` names the offending field on error ("body"
 * for the encoding, "" when the problem is not one field). Scratch memory in `a`. `c` (may be
 * NULL) are this process's workers: a stored batch is handed to them, checked and in
 * canonical form, for the one that claims it (a row claimed elsewhere is parsed there).
 * Errors  ERR_INVALID (bad gzip, bad JSON, a bad field: see samplebatch_parse),
 *         ERR_UNSUPPORTED (content type, encoding, format_version), ERR_TOO_LARGE (decoded
 *         size, samples, frames), ERR_CONFLICT (batch_id reused for other samples), ERR_STORE.
 */
typedef struct callsites callsites;

err_code callsites_accept(callsites_result *out, char field[SAMPLEBATCH_FIELD_MAX], store *s,
                          callsites *c, const callsites_input *in, arena *a, err_info *err);

/* ---- counting workers ------------------------------------------------------------------ */

typedef struct {
    unsigned workers;          /* threads; 0 = this process does not count */
    unsigned batch;            /* batches claimed per transaction (1..1024) */
    unsigned signature_frames; /* in-app frames in a call site (signature_options) */
    unsigned idle_poll_ms;     /* how often an idle worker looks at the queue (doubling while
                                  it finds nothing, up to PIPELINE_IDLE_MAX_MS; a stored
                                  batch wakes it) */
    unsigned nice;             /* the worker threads' nice value (pipeline_worker_thread_init) */
} callsites_options;

/* callsites_new - stopped workers that symbolicate through `pipe`'s caches and use
 * `work_store` (one connection per worker). Owned by the caller: callsites_free(). */
err_code callsites_new(callsites **out, store *work_store, pipeline *pipe,
                       const callsites_options *opts, err_info *err);

/* callsites_start - start the threads. Errors ERR_INTERNAL (no thread). */
err_code callsites_start(callsites *c, err_info *err);

/* callsites_stop - stop and join; a claim in progress is committed or rolled back. */
void callsites_stop(callsites *c);

/* callsites_free - stop and free. NULL is a no-op. */
void callsites_free(callsites *c);

typedef struct {
    uint64_t batches, stacks, stack_evals, pending_stacks, commits, commit_failures;
    uint64_t batches_handed;   /* of `batches`: counted from this process's intake, unparsed */
} callsites_stats;

void callsites_stats_get(callsites_stats *out, const callsites *c);

/* callsites_metrics_render - this process's counters in Prometheus text (GET /metrics):
 * sample batches counted and, of them, handed over by this process's intake (not parsed
 * again), the counters' commits and failed commits. NULL is a no-op. */
void callsites_metrics_render(buf *out, const callsites *c);

#endif
