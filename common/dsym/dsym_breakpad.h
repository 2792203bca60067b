/*
 * dsym_breakpad - a Breakpad symbol file (.sym, common/breakpad) as a symcache, keyed by its
 * MODULE id's UUID: names and lines for the same lookups as a dSYM's, and its STACK CFI
 * kept in the symcache's BREAKPAD_CFI_SECTION for the stack walker.
 *
 * Mapping: a FUNC is a concrete function over [addr, addr + size); an INLINE an inlinee of
 * its parent (the FUNC at depth 0) named by its INLINE_ORIGIN, called from FILE call_file at
 * call_line, over its ranges; line records are the line table (records that follow each
 * other make one sequence); a PUBLIC is a symbol-table symbol up to the next PUBLIC or FUNC
 * start. Addresses are module offsets: the symcache's __TEXT vmaddr is 0, so a lookup
 * is at (pc - load address), as for any symcache (+ its vmaddr). Names are stored as
 * dump_syms wrote them (already demangled: shown as they are).
 */
#ifndef STACKSIFT_DSYM_DSYM_BREAKPAD_H
#define STACKSIFT_DSYM_DSYM_BREAKPAD_H

#include "base/buf.h"
#include "base/err.h"
#include "breakpad/breakpad.h"
#include "debuginfo/debuginfo.h"
#include "macho/macho.h"
#include "symcache/symcache_build.h"

/* dsym_breakpad_debuginfo - `sym` as debuginfo (owned by the caller: debuginfo_reset) and
 * the image header a symcache needs (UUID, cputype of the MODULE arch, no __TEXT).
 * Errors  ERR_TOO_LARGE (names over 4 GiB). */
err_code dsym_breakpad_debuginfo(debuginfo *di, macho_image *img, const breakpad_sym *sym,
                                 err_info *err);

/* dsym_breakpad_build - append the symcache of `sym` to `out`: flags "from Breakpad", and
 * its STACK CFI table as a section when it has any.
 * Errors  as symcache_build, ERR_TOO_LARGE. */
err_code dsym_breakpad_build(buf *out, symcache_build_stats *stats, const breakpad_sym *sym,
                             unsigned threads, err_info *err);

#endif
