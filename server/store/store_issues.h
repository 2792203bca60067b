/*
 * store_issues - grouped issues in Postgres, read side: the issues API and per-day counts
 * (store_queue writes them).
 *
 * Errors as in store.h, plus ERR_TOO_LARGE when the arena is full. JSON answers are built by
 * Postgres (json_build_object) and handed back as text in the caller's arena.
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

/* store_issues_daily - reports per UTC day of receipt over the last `days` days (1..90, today
 * last) for each issue id in ids[0..n): *json = {"days":["YYYY-MM-DD",...],"issues":
 * {"<id>":[count,...]}} in `a`, one count per day, oldest first; ids that name no issue are
 * left out. Errors ERR_STORE, ERR_INTERNAL, ERR_TOO_LARGE (arena full). */
err_code store_issues_daily(const char **json, store *s, const int64_t *ids, size_t n,
                            unsigned days, arena *a, err_info *err);

#endif
