/*
 * store_releases - the releases API's reads over the release health tables (migration 0010):
 * per release, session counters summed over hours (and environments), distinct users,
 * adoption, issues new in the release; per day; its top issues.
 */
#ifndef STACKSIFT_STORE_STORE_RELEASES_H
#define STACKSIFT_STORE_STORE_RELEASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

typedef struct {
    int64_t project_id;
    const char *environment;  /* NULL = every environment */
    const char *release;      /* NULL = every release (list); else that one only */
    const char *cursor;       /* next_cursor of the previous page, NULL = first */
    unsigned limit;           /* 1..1000 */
} store_release_query;

/* One release; strings in the caller's arena. */
typedef struct {
    const char *release;
    int64_t sessions, crashed, abnormal, errored;   /* exact counters */
    int64_t users, crashed_users;    /* exact up to the limit, then estimates (docs/release-health.md) */
    const char *first_seen, *last_seen;  /* RFC 3339: earliest and latest session start */
    int64_t new_issues;              /* issues whose first version is this release's */
    int64_t recent_sessions;         /* sessions started in the last 24 hours */
    int64_t recent_total;            /* all releases' sessions in the last 24 hours (same
                                        project and environment filter) */
} store_release_row;

typedef struct {
    store_release_row *releases;  /* newest first (first_seen, then release, descending) */
    size_t n;
    const char *next_cursor;  /* NULL on the last page */
} store_release_page;

/* store_releases_list - one page of releases. Errors ERR_INVALID (bad cursor), ERR_STORE. */
err_code store_releases_list(store_release_page *out, store *s, const store_release_query *q,
                             arena *a, err_info *err);

typedef struct {
    const char *day;                              /* "2026-11-27" (UTC) */
    int64_t sessions, crashed, abnormal, errored;
} store_release_day;

typedef struct {
    int64_t id;
    const char *title, *culprit, *status;
    int64_t reports;   /* reports of the issue from this release's version */
    int64_t count;     /* all its reports */
} store_release_issue;

typedef struct {
    store_release_row release;
    const char *version;          /* the app version the release names ("1.4" of
                                     "com.example.app@1.4+103") */
    store_release_day *days;      /* oldest first */
    size_t ndays;
    store_release_issue *issues;  /* most reports in this version first, at most 10 */
    size_t nissues;
} store_release_detail;

/* store_release_get - one release with its per-day series and top issues.
 * Errors ERR_NOT_FOUND (no sessions for it), ERR_STORE. */
err_code store_release_get(store_release_detail *out, store *s, const store_release_query *q,
                           arena *a, err_info *err);

#endif
