/*
 * store_regroup - re-fingerprinting the stored reports when the grouping rules change
 * (common/signature's SIGNATURE_VERSION), in Postgres: the rules the stored fingerprints were
 * made by (signature_rules), the work list of new signatures (regroup_reports), and applying
 * it in one transaction: reports move to the issue of their new fingerprint, issues that now
 * share one are merged and issues whose reports now differ are split, carrying counts,
 * per-day counts, first/last seen, versions, status and resolved-in. The reading, parsing,
 * symbolicating and signing between page and put is ingest/regroup.c's. Migration
 * 0013_create_regroup.sql holds the tables.
 *
 * Errors as in store.h, plus ERR_TOO_LARGE when the arena is full.
 */
#ifndef STACKSIFT_STORE_STORE_REGROUP_H
#define STACKSIFT_STORE_STORE_REGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"
#include "store/store_queue.h"

/* store_signature_rules - the SIGNATURE_VERSION the stored fingerprints were made by, into
 * out[cap] ("" when the row is missing), and the DEMANGLE_REVISION their names were made by
 * (migration 0026; 0 when the row is missing). */
err_code store_signature_rules(char *out, size_t cap, unsigned *demangle_revision, store *s,
                               err_info *err);

/* store_regroup_reset - empty the work list (a regroup starts over). */
err_code store_regroup_reset(store *s, err_info *err);

/*
 * store_regroup_page - up to `max` grouped reports (issue_id set) after (after_at, after_id)
 * in (received_at, id) order: id, raw (as stored), content_type, app, issue_id, fingerprint,
 * received_at (RFC 3339 UTC, microseconds), project_id. after_at NULL: from the start. Rows
 * in `a`; *n = 0 at the end.
 */
err_code store_regroup_page(store_claimed **rows, size_t *n, store *s, const char *after_at,
                            const char *after_id, size_t max, arena *a, err_info *err);

/* store_regroup_put - add the grouped outcomes[i] of rows[i] (i < n) to the work list;
 * outcomes not grouped (the report no longer reads) are left out: such a report stays where
 * it is. */
err_code store_regroup_put(store *s, const store_claimed *rows, const store_outcome *outcomes,
                           size_t n, err_info *err);

/* What store_regroup_apply did. */
typedef struct {
    int64_t reports;       /* reports on the work list that were still where they were read */
    int64_t moved;         /* of those, reports whose issue or fingerprint changed */
    int64_t merged;        /* issues merged into another (and deleted) */
    int64_t created;       /* issues made for reports split off an issue */
    int64_t issues_before; /* issues the listed reports were in */
    int64_t issues_after;  /* issues they are in now */
} store_regroup_stats;

/*
 * store_regroup_apply - in one transaction (new issues' alerts silenced: a split is not a new
 * crash; workers' issue upserts wait for it): each listed report still in the issue it was
 * read from goes to the issue of its new (project, app, fingerprint): the issue that holds the
 * key already, else the old issue most of whose reports go there (the one with the most
 * reports if several), renamed; else a new issue carrying the status of the issue its latest
 * report came from. An old issue none of whose reports stay is merged into the issue of its
 * key: its count and per-day counts that no stored report accounts for (retention expired
 * them) are added, first/last seen widen, versions merge, and it is deleted; the issue kept
 * keeps its status and resolved-in. Then signature_rules says `version` and
 * `demangle_revision` (the DEMANGLE_REVISION the names were made by) and the list is emptied.
 */
err_code store_regroup_apply(store_regroup_stats *out, store *s, const char *version,
                             unsigned demangle_revision, err_info *err);

#endif
