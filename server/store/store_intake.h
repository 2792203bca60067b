/*
 * store_intake - group commit of new reports. Intake requests queue their row and
 * wait; `max_inflight` committer threads each take every row queued so far (up to `max_batch`
 * rows / `max_batch_bytes`) and commit them with one INSERT (the batch as binary arrays, unnest) on one pooled connection, then
 * answer each request of the batch. A batch is what queued while the previous commit ran,
 * plus, within `gather_us` of that commit's end, as many reports as it had (its clients,
 * just answered, sending again): an idle server commits each report at once and a busy one
 * shares one commit (and its WAL flush) among many reports.
 *
 * A report processed at intake (store_report_new.processed) is inserted 'processed' with its
 * model and issue, and the batch's issues are upserted (counts, first/last seen = the commit's
 * now(), versions, per-day counts, regressions) in the same statement; if that statement
 * fails, the whole batch is inserted again as received (the workers process it later).
 *
 * Durability: the INSERT runs outside any transaction block, so it is its own transaction; a
 * request hears ERR_OK only after Postgres acknowledged that commit (synchronous_commit as the
 * server has it, on by default: the WAL is flushed). Ids are UUIDv7 made here (time-ordered:
 * inserts append at the primary key's right edge), or the report's own (store_report_new.id:
 * a Sentry event_id), so before a batch is retried on a fresh
 * connection after the old one broke, it can tell "already committed" (every id present)
 * from "lost" and never stores a report twice.
 *
 * Errors per report: ERR_STORE (database down, pool exhausted: the whole batch), ERR_INTERNAL
 * (a value the database refused: the batch is then committed again in halves, down to the
 * one report that is refused, so that it alone fails and the others are stored; a report
 * whose issue upsert fails is stored as received), ERR_CONFLICT.
 * Thread-safe.
 */
#ifndef STACKSIFT_STORE_STORE_INTAKE_H
#define STACKSIFT_STORE_STORE_INTAKE_H

#include <stdint.h>

#include "base/err.h"
#include "store/store.h"
#include "store/store_reports.h"

typedef struct store_intake store_intake;

typedef struct {
    unsigned max_batch;       /* most reports per commit; 0 = 256 */
    unsigned max_inflight;    /* committer threads = commits running at once, one pool
                                 connection each; 0 = 2 */
    uint64_t max_batch_bytes; /* raw + parsed bytes per commit (a batch always takes at least
                                 one report); 0 = 16 MiB */
    unsigned gather_us;       /* before a commit, how long a lone committer (max_inflight 1)
                                 waits at most for as many more reports as its last batch had
                                 (their clients are likely sending again); 0 = never waits */
    void (*queued)(void *ctx); /* called (from a committer thread, after the commit) when a
                                  commit stored reports for the workers: status "received",
                                  not processed at intake; NULL = none */
    void *queued_ctx;
} store_intake_options;

/* store_intake_new - the queue and its committer threads, in front of `s` (borrowed: it must
 * outlive the queue). Owned by the caller: store_intake_free(). Errors ERR_INTERNAL (no
 * thread). */
err_code store_intake_new(store_intake **out, store *s, const store_intake_options *opts,
                          err_info *err);

/* store_intake_free - commit what is queued (every done callback runs), stop the threads.
 * NULL is a no-op. */
void store_intake_free(store_intake *q);

/* store_intake_done_fn - the verdict on one submitted report, called once from a committer
 * thread: rc ERR_OK and `id` (lower-case 8-4-4-4-12) once the row is durable, else rc and
 * `err`. The report's strings may be freed once this returns. */
typedef void (*store_intake_done_fn)(void *ctx, err_code rc, const char *id, const err_info *err);

/*
 * store_intake_submit - queue `r` (status, format, content_type, raw, parsed_json, app,
 * app_version, os_version, processed and id, when given, are stored; missing_uuids_json and
 * error must be NULL) for the next
 * commit; `r` and its strings must stay valid until `done` ran. ERR_OK: `done(ctx, ...)` will
 * be called exactly once. Else `done` is never called: ERR_TOO_LARGE (over 2 GiB).
 */
err_code store_intake_submit(store_intake *q, const store_report_new *r,
                             store_intake_done_fn done, void *ctx, err_info *err);

/*
 * store_intake_insert - store_intake_submit and wait for the verdict: the blocking form. A
 * report with missing_uuids_json or error set goes through store_report_insert instead. Writes
 * the id to id_out; ERR_OK means the row is durable. Errors as above.
 */
err_code store_intake_insert(char id_out[37], store_intake *q, const store_report_new *r,
                             err_info *err);

typedef struct {
    uint64_t reports;    /* reports committed */
    uint64_t batches;    /* batch commits that succeeded */
    uint64_t largest;    /* most reports in one commit */
    uint64_t splits;     /* batches committed again in halves after a refused value */
    uint64_t failures;   /* reports that got an error */
    uint64_t processed;  /* reports committed as processed at intake (with their issue) */
    uint64_t regressions; /* resolved issues those reopened */
    uint64_t processed_fallbacks; /* commits whose processed reports were stored as received
                                     after their issue upsert failed */
} store_intake_stats;

void store_intake_stats_get(store_intake_stats *out, store_intake *q);

#endif
