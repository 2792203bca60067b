/*
 * symcache_build - turn debuginfo (DWARF + symbol table of one slice) into .symc bytes.
 */
#ifndef STACKSIFT_SYMCACHE_BUILD_H
#define STACKSIFT_SYMCACHE_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "macho/macho.h"

typedef struct {
    uint32_t functions; /* scopes written: concrete functions + inlinees + symbol-table symbols */
    uint32_t ranges;    /* address ranges written (sentinel included) */
} symcache_build_stats;

/* symcache_build - flatten `di` into non-overlapping ranges (innermost inlinee wins, the
 * line table splits ranges, the symbol table fills what DWARF does not cover) and append the
 * .symc file (layout in symcache_format.h) to `out`, using up to `threads` threads (0 or 1:
 * this one only). Output is deterministic: the same input gives the same bytes whatever
 * thread counts built `di` and ran the build.
 * Errors  ERR_UNSUPPORTED (code spans more than 4 GiB), ERR_INVALID (image has no UUID). */
err_code symcache_build(buf *out, symcache_build_stats *stats, const macho_image *img,
                        const debuginfo *di, const char *image_name, unsigned threads,
                        err_info *err);

/* What a build from something else than a dSYM says. */
typedef struct {
    bool breakpad;       /* flags bit 3: built from a Breakpad .sym */
    bool display_names;  /* also store every name's display form (the "DISP" section): each
                            name demangled once at build (on `threads` threads), so that
                            symcache_names demangles nothing. Worth it for a file looked up
                            many times by batches (`stacksift lookup`); a one-shot build or
                            the server's memoizing lookups do without. */
} symcache_extra;

/* symcache_build_extra - symcache_build with `extra` (NULL: none). Sections are appended
 * after it (symcache_section_append). */
err_code symcache_build_extra(buf *out, symcache_build_stats *stats, const macho_image *img,
                              const debuginfo *di, const char *image_name, unsigned threads,
                              const symcache_extra *extra, err_info *err);

#endif
