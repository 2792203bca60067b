/*
 * store_web - what the dashboard (server/web) needs beyond the issues API: per-day counts of
 * many issues in one query, for the issue list's sparklines. Errors as in store.h.
 */
#ifndef STACKSIFT_STORE_STORE_WEB_H
#define STACKSIFT_STORE_STORE_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

/* store_web_daily - reports per UTC day of receipt over the last `days` days (1..90, today
 * last) for each issue id in ids[0..n): *json = {"days":["YYYY-MM-DD",...],"issues":
 * {"<id>":[count,...]}} in `a`, one count per day, oldest first; ids that name no issue are
 * left out. Errors ERR_STORE, ERR_INTERNAL, ERR_TOO_LARGE (arena full). */
err_code store_web_daily(const char **json, store *s, const int64_t *ids, size_t n, unsigned days,
                         arena *a, err_info *err);

#endif
