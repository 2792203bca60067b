/*
 * store_issues - grouped issues in Postgres, read side: the issues API and per-day counts
 * (store_queue writes them).
 *
 * Errors as in store.h, plus ERR_TOO_LARGE when the arena is full. Answers are rows in C
 * records; their wire format is server/http/routes_issues.c's.
 */
#ifndef STACKSIFT_STORE_STORE_ISSUES_H
#define STACKSIFT_STORE_STORE_ISSUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

typedef struct {
    const char *app, *kind, *version, *status; /* exact filters, NULL = any */
    const char *since, *until;  /* last_seen >= since, last_seen < until (RFC 3339), or NULL */
    const char *q;              /* substring of title or culprit (case-insensitive), or NULL */
    const char *sort;           /* "last_seen" (default), "first_seen", "count"; descending */
    unsigned limit;             /* 1..200 */
    const char *cursor;         /* next_cursor of the previous page, or NULL */
    int64_t project_id;         /* only this project's issues; 0 = every project */
} store_issue_query;

/* An issue row; strings in the caller's arena, NULL for SQL NULL. */
typedef struct {
    int64_t id;
    int64_t project_id;             /* projects.id */
    const char *app, *kind, *fingerprint;
    const char *title, *culprit, *exception, *basis;
    bool provisional;
    const char *frames_json;        /* the signature frames, a JSON array */
    int64_t count;
    const char *first_seen, *last_seen;   /* RFC 3339 UTC, milliseconds */
    const char *status;             /* "open", "resolved", "ignored" */
    const char *resolved_in, *resolved_at;
    bool regressed;
    const char *regressed_at;
    const char *versions_json;      /* app versions seen, a sorted JSON array of strings */
} store_issue;

/* store_issues_list - one page of issues, at most q->limit: *out in `a`, *next_cursor = the
 * cursor of the next page (in `a`), NULL on the last page.
 * Errors ERR_INVALID (bad sort, cursor, time), ERR_STORE, ERR_TOO_LARGE. */
err_code store_issues_list(store_issue **out, size_t *n, const char **next_cursor, store *s,
                           const store_issue_query *q, arena *a, err_info *err);

/* One value of a breakdown and how many of the issue's reports have it. */
typedef struct {
    const char *value;   /* NULL = unknown */
    int64_t count;
} store_count;

/* One UTC day and a count. */
typedef struct {
    const char *day;     /* YYYY-MM-DD */
    int64_t count;
} store_day;

/* One issue with what its detail page shows; everything in the caller's arena. */
typedef struct {
    store_issue issue;
    store_count *by_app_version, *by_os_version, *by_hardware_model; /* most reports first */
    size_t n_app_version, n_os_version, n_hardware_model;
    store_day daily[30];             /* the last 30 UTC days, oldest first */
    bool has_hang_duration;          /* some report of the issue gives its hang duration */
    int64_t hang_median_ms, hang_p90_ms, hang_max_ms; /* over those reports, rounded to ms */
    bool has_sample;                 /* the issue's newest report is still there */
    struct {
        const char *id, *received_at, *app_version, *os_version, *hardware_model;
        const char *report_json;     /* its symbolicated model, NULL until processed */
    } sample;
} store_issue_detail;

/* store_issue_get - issue `id` with its breakdowns, daily counts and newest report, read in
 * one snapshot. Errors ERR_NOT_FOUND, ERR_STORE, ERR_TOO_LARGE. */
err_code store_issue_get(store_issue_detail *out, store *s, int64_t id, arena *a, err_info *err);

/* A report of an issue, as its report list shows it; strings in the caller's arena. */
typedef struct {
    const char *id, *received_at, *status, *app_version, *os_version, *hardware_model;
} store_issue_report;

/* store_issue_reports - reports of an issue, newest first, at most `limit`, keyset-paginated
 * (`cursor`: a next_cursor this gave, or NULL). Errors ERR_NOT_FOUND (no such issue),
 * ERR_INVALID (cursor), ERR_STORE, ERR_TOO_LARGE. */
err_code store_issue_reports(store_issue_report **out, size_t *n, const char **next_cursor,
                             store *s, int64_t id, unsigned limit, const char *cursor, arena *a,
                             err_info *err);

/* store_issue_set_status - status "open", "resolved" (resolved_in: the version the fix ships
 * in, NULL = any later report reopens it) or "ignored"; clears the regression flag. *out =
 * the issue afterwards. Errors ERR_NOT_FOUND, ERR_INVALID, ERR_STORE, ERR_TOO_LARGE. */
err_code store_issue_set_status(store_issue *out, store *s, int64_t id, const char *status,
                                const char *resolved_in, arena *a, err_info *err);

/* Per-day counts of several issues. */
typedef struct {
    int64_t id;          /* the issue */
    int64_t *counts;     /* one per day of store_daily.days */
} store_issue_days;

typedef struct {
    const char **days;   /* YYYY-MM-DD, oldest first, today (UTC) last */
    size_t ndays;
    store_issue_days *issues;  /* the ids that name an issue, in no particular order */
    size_t nissues;
} store_daily;

/* store_issues_daily - reports per UTC day of receipt over the last `days` days (1..90) for
 * each issue id in ids[0..n); ids that name no issue are left out. *out in `a`.
 * Errors ERR_STORE, ERR_INTERNAL, ERR_TOO_LARGE (arena full). */
err_code store_issues_daily(store_daily *out, store *s, const int64_t *ids, size_t n,
                            unsigned days, arena *a, err_info *err);

#endif
