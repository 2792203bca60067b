/*
 * pipeline - what happens to a report after intake: worker threads claim received
 * reports from Postgres (FOR UPDATE SKIP LOCKED, so several server processes can share one
 * database), parse, symbolicate, compute the signature, and store the symbolicated model and
 * the issue upsert in one transaction.
 *
 *   received --worker--> processed            grouped into an issue
 *                    \-> pending_dsym         an in-app image has no dSYM yet: grouped
 *                    |                        provisionally, back to received when one of
 *                    |                        its missing UUIDs gets a dSYM (dsyms trigger)
 *                    \-> failed               with the reason; never retried automatically
 *
 * Process-lifetime caches, shared by workers and API requests:
 *   symcaches  opened (mmap) on first use by UUID, at most `symcache_max_open` kept open
 *              (least recently used closed first); the file comes from `files` (the node's
 *              cache of symcaches stored in Postgres, symfiles.h), or without it from
 *              symcache_dir/<UUID>.symc
 *   stacks     symbolicated stacks keyed by SHA-256 of (image UUID, arch, offset, which
 *              symcache file if any) of every frame: a repeated stack (hang monitors, API
 *              samplers) is symbolicated once; bounded by `stack_cache_bytes`
 * Thread-safe.
 */
#ifndef STACKSIFT_INGEST_PIPELINE_H
#define STACKSIFT_INGEST_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "crashreport/crashreport.h"
#include "ingest/symfiles.h"
#include "signature/signature.h"
#include "store/store.h"
#include "store/store_queue.h"

typedef struct pipeline pipeline;

typedef struct {
    symfiles *files;              /* where symcaches come from (borrowed); NULL: symcache_dir */
    const char *symcache_dir;     /* without `files`: <UUID>.symc files */
    const char *scratch_dir;      /* where an outdated symcache is rebuilt (DATA_DIR/tmp) */
    unsigned workers;             /* worker threads; 0 = this process does not process */
    unsigned batch;               /* reports claimed per transaction (1..1024) */
    unsigned symcache_max_open;   /* symcaches kept open */
    uint64_t stack_cache_bytes;   /* stack cache budget; 0 = no cache */
    unsigned signature_frames;    /* frames in a fingerprint (signature_options) */
    uint64_t max_report_bytes;    /* per-report arena budget is derived from it */
    unsigned idle_poll_ms;        /* how often an idle worker looks at the queue; it sleeps
                                     twice as long each time it finds nothing, up to
                                     PIPELINE_IDLE_MAX_MS, and pipeline_post wakes it */
    unsigned nice;                /* the worker threads' nice value (0: as the process) */
    bool at_intake;               /* pipeline_process_at_intake may process (with workers) */
} pipeline_options;

/* pipeline_new - caches and (stopped) workers; the workers use `work_store`, which should
 * have one connection per worker (a worker holds its connection for a whole batch).
 * Owned by the caller: pipeline_free(). Errors none so far (ERR_OK). */
err_code pipeline_new(pipeline **out, store *work_store, const pipeline_options *opts,
                      err_info *err);

/* pipeline_worker_thread_init - on a worker thread (report or call-site processing): name it
 * `name` (at most 15 characters: top -H, /proc/PID/task/TID/comm) and add `nice` (0..19) to its
 * nice value (Linux: setpriority(2) on a thread id sets that thread's value only; lowering
 * one's priority needs no privilege). The queued work is durable already and nobody waits on
 * it, so when the CPUs are busy it yields them to the HTTP threads and the intake, whose
 * clients are waiting; the workers catch up with whatever CPU time is left over. A failure
 * is logged, not fatal. */
void pipeline_worker_thread_init(const char *name, unsigned nice);

/* PIPELINE_IDLE_MAX_MS - the longest an idle worker (reports, call sites) sleeps between looks
 * at its queue. Work this node queues wakes it at once (pipeline_post, callsites_accept);
 * work another node queued waits at most this long when that node's workers are busy. */
#define PIPELINE_IDLE_MAX_MS 1000

/* pipeline_post - reports were queued for the workers (committed as received, not processed
 * at intake): wakes the workers that have been idle a while (workpool_doze). Any thread; a
 * no-op before pipeline_start or for NULL. */
void pipeline_post(pipeline *p);

/* pipeline_start - start opts->workers threads. Errors ERR_INTERNAL (no thread). */
err_code pipeline_start(pipeline *p, err_info *err);

/* pipeline_stop - ask the workers to stop and wait for them: a batch in progress is finished
 * and committed (or rolled back). Idempotent. */
void pipeline_stop(pipeline *p);

/* pipeline_free - stop, close every symcache, free the caches. NULL is a no-op. */
void pipeline_free(pipeline *p);

/*
 * pipeline_symbolicate - symbolicate every frame of `r` in place (as symbolicate_report does)
 * through the caches. *missing_in_app (may be NULL) = the distinct UUIDs of in-app images
 * that frames fell in and that have no symcache yet, in the arena; *nmissing their count.
 * Errors ERR_TOO_LARGE (arena budget).
 */
err_code pipeline_symbolicate(pipeline *p, crashreport *r, const char ***missing_in_app,
                              size_t *nmissing, arena *a, err_info *err);

/* pipeline_parse - crashreport_parse of `len` bytes then pipeline_symbolicate; for
 * GET /api/v1/reports/{id}?format=text. Errors as both. */
err_code pipeline_parse(crashreport **out, pipeline *p, const uint8_t *raw, size_t len, arena *a,
                        err_info *err);

/*
 * pipeline_process_at_intake - process report `r` (just parsed by the intake; `app` as the
 * intake stores it, NULL = unknown) on the calling thread, as a worker would, when that needs
 * nothing this node lacks: every image's symcache is open already (or known to be absent)
 * and no in-app image waits for a dSYM. true: *o holds the outcome, status "processed",
 * grouped (strings in `a`), for the intake to commit with the report and its issue upsert.
 * false: nothing to store but the report as received (the workers do the rest, as before):
 * a symcache to fetch, open or rebuild, an in-app dSYM missing, an error, or no workers or
 * opts.at_intake off. Frames of `r` are symbolicated in place either way.
 */
bool pipeline_process_at_intake(pipeline *p, crashreport *r, const char *app, store_outcome *o,
                                arena *a);

/*
 * pipeline_minidump_at_intake - read minidump `dump` (`len` bytes starting "MDMP"; the Sentry
 * event it came with, `event_len` bytes at `event`, or NULL) as the intake does, into *out
 * (in `a`), and process it there when it can, as pipeline_process_at_intake does a text
 * report: walked (crashreport_parse_minidump) with the unwind info of the symcaches this node
 * has open already, when every in-app image's symcache is open (else only each thread's
 * frame 0 is read, context_only, for the row: the workers walk it). *processed true: *o holds
 * the outcome, including the in-app images the walk went through without unwind info
 * (unwind_uuids_json) and what it saw of each one's stored debug file (unwind_checks_json,
 * which the intake's commit checks as a worker's does). false: store it as received (a
 * symcache the walk reached was not open or its row not known recently, an in-app dSYM
 * still hides its names, no workers, or opts.at_intake off). Errors as
 * crashreport_parse_minidump's with context_only: a walk's own failure (its arena) falls
 * back to that read.
 */
err_code pipeline_minidump_at_intake(crashreport **out, bool *processed, store_outcome *o,
                                     pipeline *p, const uint8_t *dump, size_t len,
                                     const char *event, size_t event_len, arena *a,
                                     err_info *err);

/*
 * pipeline_process_claimed - what a worker makes of one stored report `row` (raw bytes in any
 * stored form, app as intake set it): read back, parsed, symbolicated with this node's
 * symcaches (fetched from the store when missing), signed by the grouping rules. *o holds the
 * outcome (strings in `a`); o->grouped false with status "failed" and o->error when the
 * report no longer reads. Thread-safe as the workers are.
 */
void pipeline_process_claimed(store_outcome *o, pipeline *p, const store_claimed *row, arena *a);

/* pipeline_files - the symcache file cache it was made with (opts.files; may be NULL). */
symfiles *pipeline_files(pipeline *p);

/* pipeline_metrics_render - append the pipeline's metrics (Prometheus text): reports
 * processed by outcome, batches, symcaches open, stack cache hits and misses and hit ratio,
 * minidumps walked.
 * `intake_processed` reports (reopening `intake_regressions` issues) were processed at
 * intake (store_intake_stats): counted with the workers' in the processed and regression
 * totals. */
void pipeline_metrics_render(buf *out, pipeline *p, uint64_t intake_processed,
                             uint64_t intake_regressions);

/* Cache counters, for tests and the benchmark. */
typedef struct {
    uint64_t stack_hits, stack_misses;  /* stacks served from / added to the stack cache */
    uint64_t frame_hits, frame_misses;  /* frames of those stacks */
    uint64_t stack_entries, stack_bytes;
    uint64_t symcache_opens;            /* symcache_open calls that succeeded */
    unsigned symcaches_open;
    uint64_t processed, pending, failed, batches, batch_failures, regressions;
    unsigned workers;                   /* opts.workers */
    uint64_t in_progress;               /* reports claimed by the workers right now */
    uint64_t minidump_walks;            /* minidumps walked for their stored frames, by the
                                           workers or at intake (one walk each) */
    uint64_t minidump_intake_dropped;   /* walked at intake, not processed there */
} pipeline_stats;

void pipeline_stats_get(pipeline_stats *out, pipeline *p);

#endif
