/*
 * regroup - see regroup.h.
 */
#include "ingest/regroup.h"

#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "demangle/demangle.h"
#include "signature/signature.h"

/* A page's memory: its reports (up to the largest report size) and their outcomes. */
#define REGROUP_ARENA_BYTES ((size_t)2 << 30)

err_code regroup_needed(bool *out, char *stored, size_t cap, store *s, err_info *err)
{
    unsigned revision = 0;
    *out = false;
    err_code rc = store_signature_rules(stored, cap, &revision, s, err);
    if (rc != ERR_OK)
        return rc;
    *out = strcmp(stored, SIGNATURE_VERSION) != 0 || revision != DEMANGLE_REVISION;
    /* names made by another demangler: said beside the rules they were grouped by */
    if (revision != DEMANGLE_REVISION) {
        size_t len = strlen(stored);
        snprintf(stored + len, cap - len, " (demangler revision %u)", revision);
    }
    return ERR_OK;
}

err_code regroup_run(store_regroup_stats *out, store *s, pipeline *p, size_t page,
                     void (*progress)(size_t done, void *ctx), void *ctx, err_info *err)
{
    memset(out, 0, sizeof *out);
    if (page == 0)
        page = 500;
    if (page > 10000)
        page = 10000;
    err_code rc = store_regroup_reset(s, err);
    char after_at[40] = "", after_id[37] = "";
    size_t done = 0;
    while (rc == ERR_OK) {
        arena *a = arena_new(REGROUP_ARENA_BYTES);
        store_claimed *rows = NULL;
        size_t n = 0;
        rc = store_regroup_page(&rows, &n, s, after_at[0] ? after_at : NULL, after_id, page, a,
                                err);
        store_outcome *outs = rc == ERR_OK && n > 0 ? arena_alloc_array(a, n, sizeof *outs, err)
                                                    : NULL;
        if (rc == ERR_OK && n > 0 && outs == NULL)
            rc = ERR_TOO_LARGE;
        for (size_t i = 0; rc == ERR_OK && i < n; i++)
            pipeline_process_claimed(&outs[i], p, &rows[i], a);
        if (rc == ERR_OK && n > 0)
            rc = store_regroup_put(s, rows, outs, n, err);
        if (rc == ERR_OK && n > 0) {
            snprintf(after_at, sizeof after_at, "%s", rows[n - 1].received_at);
            snprintf(after_id, sizeof after_id, "%s", rows[n - 1].id);
            done += n;
            if (progress)
                progress(done, ctx);
        }
        arena_free(a);
        if (n == 0)
            break;
    }
    if (rc == ERR_OK)
        rc = store_regroup_apply(out, s, SIGNATURE_VERSION, DEMANGLE_REVISION, err);
    return rc;
}
