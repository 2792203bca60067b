/*
 * grouping - where each report of a processed batch goes: the grouping decisions, made here
 * in C, which store_work_commit only persists.
 *
 * A report whose signature could be computed (outcome.grouped) belongs to the issue keyed by
 * (project, app, fingerprint): grouping is per project. If it is already in an issue with
 * that fingerprint (reprocessing that changed nothing), it stays. Otherwise it joins a group:
 * the batch's reports of one (project, app, fingerprint), whose count, first/last receipt, newest report and app versions become
 * one upsert of that issue. A report that was in an issue and does not stay leaves it (its
 * dSYM arrived and its frames now say something else; or it failed on reprocessing).
 */
#ifndef STACKSIFT_INGEST_GROUPING_H
#define STACKSIFT_INGEST_GROUPING_H

#include <stddef.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store_queue.h"

/*
 * grouping_decide - fill each outcomes[i]'s group, issue_id and leaves for the claimed
 * rows[i] (n of each), and write the batch's groups to *groups (in `a`; *ngroups of them, in
 * order of first appearance; group strings borrow from the outcomes and rows).
 * Errors  ERR_TOO_LARGE (arena budget).
 */
err_code grouping_decide(store_group **groups, size_t *ngroups, store_outcome *outcomes,
                         const store_claimed *rows, size_t n, arena *a, err_info *err);

#endif
