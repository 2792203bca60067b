/*
 * reveal - names and paths of an App Store (bitcode) dSYM revealed with its BCSymbolMap
 * (debuginfo_reveal, debuginfo.h): the string table is written again, string by string in id
 * order, so that every id keeps naming the same (now revealed) string.
 */
/* memmem: _GNU_SOURCE comes from the build (CMakeLists.txt) */
#include <string.h>

#include "debuginfo/debuginfo.h"

err_code debuginfo_reveal(debuginfo *d, const symbolmap *m, debuginfo_hidden *out,
                          err_info *err)
{
    memset(out, 0, sizeof *out);
    memset(&d->hidden, 0, sizeof d->hidden);
    d->revealed = false;
    const strtab *t = &d->strings;
    if (t->count == 0 || memmem(t->bytes.data, t->bytes.len, "_hidden#", 8) == NULL)
        return ERR_OK;
    symbolmap_reveal_stats stats = {0};
    buf scratch;
    buf_init(&scratch);
    strtab fresh;
    strtab_init(&fresh);
    err_code rc = ERR_OK;
    for (size_t id = 0; id < t->count; id++) {
        const char *s = strtab_get(t, (uint32_t)id);
        size_t len = strtab_len(t, (uint32_t)id);
        scratch.len = 0;
        bool hidden = symbolmap_reveal(&scratch, m, s, len, &stats);
        if (hidden) {
            out->hidden++;
            if (m == NULL || symbolmap_has_hidden((const char *)scratch.data, scratch.len))
                out->left++;
        }
        if (m == NULL)
            continue;   /* counting only: the table stays */
        if (hidden)
            strtab_add(&fresh, (const char *)scratch.data, scratch.len);
        else
            strtab_add(&fresh, s, len);
    }
    out->max_index = stats.max_index;
    d->hidden = *out;
    d->revealed = m != NULL && stats.revealed > 0;
    if (m != NULL) {
        if (fresh.full) {
            rc = err_set(err, ERR_TOO_LARGE, "revealed names and paths pass 4 GiB");
        } else {
            strtab_reset(&d->strings);
            d->strings = fresh;
            strtab_init(&fresh);
        }
    }
    strtab_reset(&fresh);
    buf_reset(&scratch);
    return rc;
}
