/*
 * store_issues - the processing queue and grouped issues in Postgres (issue #5): claiming
 * received reports, committing what the workers made of them (symbolicated model, issue
 * upsert, per-day counts) in one transaction, and the read side of the issues API.
 *
 * Errors as in store.h (ERR_STORE, ERR_INVALID, ERR_NOT_FOUND, ERR_INTERNAL), plus
 * ERR_TOO_LARGE when the arena is full. JSON answers are built by Postgres
 * (json_build_object) and handed back as text in the caller's arena.
 */
#ifndef STACKSIFT_STORE_STORE_ISSUES_H
#define STACKSIFT_STORE_STORE_ISSUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

/* ---- the work queue -------------------------------------------------------------------- */

typedef struct store_work store_work; /* a claimed batch: one connection, one open transaction */

/* A claimed report; strings in the batch's arena. */
typedef struct {
    char id[37];
    const uint8_t *raw;       /* the report as received (decoded) */
    size_t raw_len;
    int64_t issue_id;         /* the issue it is in now (reprocessing), 0 = none */
    const char *fingerprint;  /* and that issue's fingerprint, NULL = none */
    const char *app;          /* reports.app as intake set it, NULL = unknown */
    const char *received_at;  /* RFC 3339 UTC, microseconds */
    const char *day;          /* UTC day of receipt, YYYY-MM-DD */
    int attempts;             /* earlier processing attempts */
} store_claimed;

/* What a worker made of one claimed report. Strings NUL-terminated, NULL = SQL NULL. */
typedef struct {
    const char *status;             /* "processed", "pending_dsym" or "failed" */
    const char *error;              /* why it failed */
    const char *missing_uuids_json; /* JSON array of the in-app UUIDs without a dSYM, or NULL */
    const char *symbolicated_json;  /* the symbolicated model (JSON object), or NULL */
    const char *kind;               /* "crash", "hang", "sample" */
    const char *app;                /* app the issue belongs to ("" if unknown) */
    const char *app_version;
    const char *hardware_model;
    bool grouped;                   /* false: no issue (failed) */
    const char *fingerprint;        /* 64 hex */
    const char *title, *culprit, *exception, *basis;
    bool provisional;
    const char *frames_json;        /* JSON array of the signature frames */
} store_outcome;

/* store_work_claim - open a transaction on a connection of `s` and lock up to `max` reports
 * with status 'received', oldest first, FOR UPDATE SKIP LOCKED (other workers and other
 * processes skip them). *out is NULL (and *n 0) when there was nothing to claim; otherwise
 * finish it with store_work_commit or store_work_abort. Rows live in `a`. */
err_code store_work_claim(store_work **out, const store_claimed **rows, size_t *n, store *s,
                          size_t max, arena *a, err_info *err);

/* store_work_commit - for each claimed row i, store outcomes[i]: the report row, the issue
 * upsert (count, first/last seen, versions, regression), issue_days, and, for a report that
 * moves from another issue (reprocessing), that issue's counts (an issue left with no
 * reports is deleted); then COMMIT. Frees the batch whatever happens (on error the
 * transaction is rolled back and the reports go back to the queue).
 * *regressions = issues reopened by this batch. */
err_code store_work_commit(store_work *w, const store_outcome *outcomes, unsigned *regressions,
                           err_info *err);

/* store_work_abort - roll back and free; NULL is a no-op. */
void store_work_abort(store_work *w);

/* store_report_fail - mark one report failed with `reason`, in its own transaction, when the
 * batch it was in could not be committed (so a bad report never blocks the queue). */
err_code store_report_fail(store *s, const char *id, const char *reason, err_info *err);

/* store_pending_sweep - send 'pending_dsym' reports whose missing UUIDs now have a dSYM
 * back to the queue (a safety net behind the dsyms trigger). *released = how many. */
err_code store_pending_sweep(int64_t *released, store *s, err_info *err);

/* ---- the issues API -------------------------------------------------------------------- */

typedef struct {
    const char *app, *kind, *version, *status; /* exact filters, NULL = any */
    const char *since, *until;  /* last_seen >= since, last_seen < until (RFC 3339), or NULL */
    const char *q;              /* substring of title or culprit (case-insensitive), or NULL */
    const char *sort;           /* "last_seen" (default), "first_seen", "count"; descending */
    unsigned limit;             /* 1..200 */
    const char *cursor;         /* next_cursor of the previous page, or NULL */
} store_issue_query;

/* store_issues_list - one page: *json = {"issues":[{id,title,culprit,kind,count,first_seen,
 * last_seen,status,versions,app,regressed,provisional}],"next_cursor":"..."|null}.
 * Errors ERR_INVALID (bad sort, cursor, time), ERR_STORE. */
err_code store_issues_list(const char **json, store *s, const store_issue_query *q, arena *a,
                           err_info *err);

/* store_issue_get - one issue with "breakdowns" (app_version, os_version, hardware_model:
 * [{value,count}]), "daily" (the last 30 UTC days, [{day,count}], oldest first) and
 * "latest_sample" ({id,received_at,app_version,os_version,hardware_model,report}).
 * Errors ERR_NOT_FOUND, ERR_STORE. */
err_code store_issue_get(const char **json, store *s, int64_t id, arena *a, err_info *err);

/* store_issue_reports - reports of an issue, newest first, keyset-paginated:
 * {"reports":[{id,received_at,status,app_version,os_version,hardware_model}],"next_cursor"}.
 * Errors ERR_NOT_FOUND (no such issue), ERR_INVALID (cursor), ERR_STORE. */
err_code store_issue_reports(const char **json, store *s, int64_t id, unsigned limit,
                             const char *cursor, arena *a, err_info *err);

/* store_issue_set_status - status "open", "resolved" (resolved_in: the version the fix ships
 * in, NULL = any later report reopens it) or "ignored"; clears the regression flag. *json =
 * the issue as store_issues_list lists it. Errors ERR_NOT_FOUND, ERR_INVALID, ERR_STORE. */
err_code store_issue_set_status(const char **json, store *s, int64_t id, const char *status,
                                const char *resolved_in, arena *a, err_info *err);

/* What the pipeline added to a report row. */
typedef struct {
    int64_t issue_id;              /* 0 = none */
    const char *fingerprint;
    const char *kind;
    const char *hardware_model;
    const char *symbolicated_json; /* NULL until processed */
    const char *processed_at;
} store_report_extra;

/* store_report_extra_get - the pipeline's columns of report `id`. Errors ERR_NOT_FOUND. */
err_code store_report_extra_get(store_report_extra *out, store *s, const char *id, arena *a,
                                err_info *err);

/* store_report_raw_get - the raw bytes of report `id` (in `a`). Errors ERR_NOT_FOUND. */
err_code store_report_raw_get(const uint8_t **raw, size_t *len, store *s, const char *id,
                              arena *a, err_info *err);

/* store_dsyms_missing - {"missing":[{uuid,name,reports,first_received,last_received}]}: the
 * UUIDs pending_dsym reports wait for, most reports first. Errors ERR_STORE. */
err_code store_dsyms_missing(const char **json, store *s, unsigned limit, arena *a,
                             err_info *err);

/* store_queue_counts - reports by status, for /metrics: received, pending_dsym, failed,
 * processed. Errors ERR_STORE. */
typedef struct {
    int64_t received, pending_dsym, failed, processed;
    int64_t issues;
} store_queue_stats;
err_code store_queue_counts(store_queue_stats *out, store *s, err_info *err);

#endif
