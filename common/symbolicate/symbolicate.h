/*
 * symbolicate - symbolicate every frame of a parsed crash report against symcaches that the
 * caller finds by image UUID (a directory of .symc files, a server-side cache, ...).
 *
 * Which address is looked up (docs/report-formats.md, "Symbolication"):
 *   1. PAC bits are stripped (crashreport_strip_pac: arm64 user space ends below 2^47).
 *   2. Frame 0 of every thread, and frame 0 of the Last Exception Backtrace, is the address
 *      the CPU was executing (or the throw site) and is looked up as is; in a call tree
 *      (sample, MetricKit) that is every leaf, the frames with callees being callers. Every other frame
 *      holds a return address, the instruction after a call; the call itself is looked up:
 *        arm64, arm64e, arm64_32   (addr & ~3) - 4   (fixed 4-byte instructions)
 *        x86_64, i386              addr - 1          (variable length: any byte of the call)
 *        armv7 and other 32-bit ARM (addr & ~1) - 2  (bit 0 = Thumb; BL/BLX are 4 bytes, so
 *                                                     2 bytes back is inside the call in
 *                                                     both ARM and Thumb state)
 *        unknown arch              addr - 1
 *      This is what Apple's own symbolication does (callers show odd "+ N" offsets in
 *      Apple-symbolicated reports), applied to the Last Exception Backtrace as well.
 *   3. file address = address - image load address + the image's vmaddr as the report gives
 *      it (crashreport_image.vmaddr: Sentry's image_vmaddr), or symcache_text_vmaddr(sc)
 *      when the report gives none (0).
 * Inlined functions come back as several symbols per frame, innermost first.
 */
#ifndef STACKSIFT_SYMBOLICATE_SYMBOLICATE_H
#define STACKSIFT_SYMBOLICATE_SYMBOLICATE_H

#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "crashreport/crashreport.h"
#include "minidump/minidump.h"
#include "symcache/symcache.h"
#include "unwind/walk.h"

/* symbolicate_resolve_fn - the symcache for image `uuid` (upper-case, dashed) of `arch`
 * ("arm64", ...; NULL if the report does not say), or NULL if there is none. Called at most
 * once per image of the report; the symcache must stay open until symbolicate_report
 * returns (the results are copied into the arena). */
typedef const symcache *(*symbolicate_resolve_fn)(void *ctx, const char *uuid, const char *arch);

/*
 * symbolicate_report - symbolicate every frame of `r` (threads and Last Exception Backtrace)
 * in place: sets each frame's sym_status, lookup_addr and symbols, r->symbolicated, and
 * r->missing_uuids (the UUIDs of images that frames fell in but `resolve` had no symcache
 * for, in image order). Frames without a symcache keep the symbol text the report gave.
 * Results live in `a` (the report's arena). Running it twice redoes the work.
 * Errors  ERR_TOO_LARGE (arena budget).
 */
err_code symbolicate_report(crashreport *r, symbolicate_resolve_fn resolve, void *ctx, arena *a,
                            err_info *err);

/* symbolicate_caller_addr - the address inside the call instruction for return address
 * `addr` on `arch` (rule 2 above). */
uint64_t symbolicate_caller_addr(uint64_t addr, const char *arch);

/*
 * symbolicate_walk_frame_write - one frame of a walked minidump thread (unwind_walk) and its
 * symbols as the JSON object `stacksift minidump walk --json` prints for it:
 *   {"pc": "0x..", "sp": "0x..", "module": base name or null, "uuid": "XXXXXXXX-..." or null,
 *    "rel_addr": "0x.." (null outside every module), "found": unwind_found_name,
 *    "symbols": [{"function", "file", "line"}, ...innermost first]}
 * `syms` holds `nsyms` symbols (symcache_lookup output; 0 when no symcache covers the frame);
 * `f->module` indexes md->modules (-1: none). Written to `j` as an array element or after a
 * key; nothing is kept.
 */
void symbolicate_walk_frame_write(jsonw *j, const minidump *md, const unwind_frame *f,
                                  const symcache_frame *syms, size_t nsyms);

#endif
