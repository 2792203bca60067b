/*
 * cli_regroup - `stacksift regroup` on an open store, shared with `stacksift migrate`.
 */
#ifndef STACKSIFT_CLI_REGROUP_H
#define STACKSIFT_CLI_REGROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "store/store.h"

/* cli_regroup_store - regroup the reports of `s` (only when the stored rules differ from
 * this binary's with if_needed; `page` reports at a time, 0 = default) and print one JSON
 * line of what it did. 0, or 1 after printing why on stderr. */
int cli_regroup_store(const config *cfg, store *s, bool if_needed, size_t page);

#endif
