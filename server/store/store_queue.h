/*
 * store_queue - the processing queue in Postgres: claiming received reports (FOR UPDATE SKIP
 * LOCKED, so that workers of every process share one queue) and committing what the workers
 * made of them (symbolicated model, issue upsert, per-day counts) in one transaction.
 *
 * Errors as in store.h, plus ERR_TOO_LARGE when the arena is full.
 */
#ifndef STACKSIFT_STORE_STORE_QUEUE_H
#define STACKSIFT_STORE_STORE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

typedef struct store_work store_work; /* a claimed batch: one connection, one open transaction */

/* A claimed report; strings in the batch's arena. */
typedef struct {
    char id[37];
    const uint8_t *raw;       /* reports.raw: the report as received (decoded), or the gzip'd
                                 body it came in (ingest_raw_report reads both) */
    size_t raw_len;
    const char *content_type; /* reports.content_type */
    int64_t issue_id;         /* the issue it is in now (reprocessing), 0 = none */
    const char *fingerprint;  /* and that issue's fingerprint, NULL = none */
    const char *app;          /* reports.app as intake set it, NULL = unknown */
    const char *received_at;  /* RFC 3339 UTC, microseconds */
    const char *day;          /* UTC day of receipt, YYYY-MM-DD */
    int attempts;             /* earlier processing attempts */
    int64_t project_id;       /* projects.id: its issue is one of this project's */
} store_claimed;

/* What a worker made of one claimed report. Strings NUL-terminated, NULL = SQL NULL. */
typedef struct {
    const char *status;             /* "processed", "pending_dsym" or "failed" */
    const char *error;              /* why it failed */
    const char *missing_uuids_json; /* JSON array of the in-app UUIDs without a dSYM, or NULL */
    const char *unwind_uuids_json;  /* JSON array of the in-app UUIDs a minidump's walk went
                                       through without their unwind info, or NULL */
    const char *unwind_checks_json; /* JSON array [{"uuid","seen"}]: what the walk saw of each
                                       of those UUIDs' stored symcache ("seen": the first 16 hex
                                       digits of its SHA-256, "" = none); the commit sends the
                                       report back to the queue if one changed meanwhile. NULL:
                                       no check */
    const char *symbolicated_json;  /* the symbolicated model (JSON object), or NULL */
    size_t symbolicated_len;        /* its strlen, or 0 when not measured */
    const char *kind;               /* "crash", "hang", "sample" */
    const char *app;                /* app the issue belongs to ("" if unknown) */
    const char *app_version;
    const char *hardware_model;
    bool grouped;                   /* false: no issue (failed) */
    const char *fingerprint;        /* 64 hex */
    const char *title, *culprit, *exception, *basis;
    bool provisional;
    const char *frames_json;        /* JSON array of the signature frames */
    /* where it goes, as grouping decided (ingest/grouping.c); the store only persists it */
    size_t group;                   /* joins the batch's groups[group]; STORE_NO_GROUP: none */
    int64_t issue_id;               /* with STORE_NO_GROUP: stays in this issue, 0 = none */
    bool leaves;                    /* leaves the issue it was in (its store_claimed.issue_id):
                                       that issue's counts drop by one on its day */
} store_outcome;

#define STORE_NO_GROUP SIZE_MAX

/* One issue a batch adds reports to, keyed by (project_id, app, fingerprint): created, or
 * counted in if it exists. Strings NUL-terminated, from one of its reports' outcomes. */
typedef struct {
    int64_t project_id;             /* projects.id (0 = the default project) */
    const char *app, *kind, *fingerprint;
    const char *title, *culprit, *exception, *basis; /* used when the issue is created */
    bool provisional;
    const char *frames_json;        /* JSON array of the signature frames */
    int64_t count;                  /* reports of the batch that join it */
    const char *first_seen;         /* earliest received_at among them (RFC 3339) */
    const char *last_seen;          /* latest received_at among them */
    const char *last_report;        /* id of the report received last */
    const char *const *versions;    /* their distinct app versions (any order) */
    size_t nversions;
} store_group;

/* store_work_claim - open a transaction on a connection of `s` and lock up to `max` reports
 * with status 'received', oldest first, FOR UPDATE SKIP LOCKED (other workers and other
 * processes skip them). *out is NULL (and *n 0) when there was nothing to claim; otherwise
 * finish it with store_work_commit or store_work_abort. Rows live in `a`. */
err_code store_work_claim(store_work **out, const store_claimed **rows, size_t *n, store *s,
                          size_t max, arena *a, err_info *err);

/* store_work_commit - persist a batch as grouping decided it, in one transaction: upsert
 * groups[0..ngroups) (count, first/last seen, versions; a resolved issue seen again in its
 * fixed version or later reopens: a regression), add issue_days, store each outcomes[i] on
 * claimed row i (status, model, issue), take reports that leave an issue off its counts
 * (an issue left with no reports is deleted), send pending_dsym reports whose dSYM arrived
 * meanwhile back to the queue; then COMMIT. Frees the batch whatever happens (on error the
 * transaction is rolled back and the reports go back to the queue).
 * *regressions = issues reopened by this batch. */
err_code store_work_commit(store_work *w, const store_outcome *outcomes, const store_group *groups,
                           size_t ngroups, unsigned *regressions, err_info *err);

/* store_work_abort - roll back and free; NULL is a no-op. */
void store_work_abort(store_work *w);

/* store_report_fail - mark one report failed with `reason`, in its own transaction, when the
 * batch it was in could not be committed (so a bad report never blocks the queue). */
err_code store_report_fail(store *s, const char *id, const char *reason, err_info *err);

/* store_pending_sweep - send 'pending_dsym' reports whose missing UUIDs now have a dSYM
 * back to the queue (a safety net behind the dsyms trigger). *released = how many. */
err_code store_pending_sweep(int64_t *released, store *s, err_info *err);

/* store_queue_counts - reports by status, for /metrics: received, pending_dsym, failed,
 * processed. Errors ERR_STORE. */
typedef struct {
    int64_t received, pending_dsym, failed, processed;
    int64_t issues;
} store_queue_stats;
err_code store_queue_counts(store_queue_stats *out, store *s, err_info *err);

#endif
