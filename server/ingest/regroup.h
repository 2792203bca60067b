/*
 * regroup - bring the stored reports to the grouping rules of this binary (SIGNATURE_VERSION)
 * and to the names its demangler gives (DEMANGLE_REVISION):
 * every grouped report is read back, parsed, symbolicated and signed as a worker would
 * (pipeline_process_claimed), page by page onto the store's work list, which is then applied
 * in one transaction (store_regroup_apply: reports move, issues merge or split, counts, first
 * and last seen, versions, status and resolved-in carried, no new-issue alerts). Run by
 * `stacksift regroup`, and by `stacksift migrate` when the stored rules are older.
 */
#ifndef STACKSIFT_INGEST_REGROUP_H
#define STACKSIFT_INGEST_REGROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "ingest/pipeline.h"
#include "store/store.h"
#include "store/store_regroup.h"

/* regroup_needed - whether the stored fingerprints were made by other rules than
 * SIGNATURE_VERSION, or their names by another demangler than DEMANGLE_REVISION (its output
 * changed: every stored name is made again); *stored gets their version (cap bytes), with
 * " (demangler revision N)" after it when that differs. */
err_code regroup_needed(bool *out, char *stored, size_t cap, store *s, err_info *err);

/*
 * regroup_run - re-sign every grouped report (`page` at a time, 1..10,000; 0 = 500) with `p`
 * (symcaches from the store), then apply. `progress` (may be NULL) is called after each page
 * with the reports read so far. A report that no longer reads stays where it is. Errors as
 * the store's; on error nothing has moved (the list is emptied at the next run).
 */
err_code regroup_run(store_regroup_stats *out, store *s, pipeline *p, size_t page,
                     void (*progress)(size_t done, void *ctx), void *ctx, err_info *err);

#endif
