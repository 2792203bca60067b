/*
 * walk - stack walking of a minidump thread (x86_64, arm64).
 *
 * Per frame, the caller is found by the first of these that works:
 *   cfi            the module's compact unwind entry (`__TEXT,__unwind_info` of the image
 *                  given for its UUID): rbp/fp frame, frameless with an immediate or (x86_64)
 *                  indirect stack size (precomputed: unwind_stack_sizes), encoding 0 as a leaf
 *                  (return address at [rsp] / in lr, after a __debug_frame FDE); a DWARF
 *                  encoding runs the CFA program of its __eh_frame FDE; else (no entry, or
 *                  it gives no caller) the FDE of a dSYM's __debug_frame covering the pc,
 *                  then the STACK CFI rules of a Breakpad .sym for the UUID (common/breakpad)
 *   frame_pointer  [fp] is the caller's fp, [fp + 8] the return address, fp + 16 its sp
 *   scan           the first stack word (from sp, bounded) that points into a loaded module
 *                  and, where the module's functions are known (its symbols, compact unwind
 *                  entries, __debug_frame FDEs, STACK CFI ranges), whose call instruction
 *                  (the word - 1) lies in one of them
 * The walk stops at a pc below 4096, a stack pointer that does not grow, a caller no method
 * finds, or UNWIND_WALK_MAX_FRAMES. On arm64 pointer-authentication bits are stripped from
 * return addresses and fp 0 ends the walk. Only callee-saved registers (x86_64: rbx, rbp,
 * r12-r15; arm64: x19-x29) carry over from a frame to its caller, with sp and pc.
 */
#ifndef STACKSIFT_UNWIND_WALK_H
#define STACKSIFT_UNWIND_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "minidump/minidump.h"
#include "unwind/unwind.h"

#define UNWIND_WALK_MAX_FRAMES 256
#define UNWIND_MIN_PC 4096u           /* a pc below this ends the walk (frame 0 included) */
#define UNWIND_SCAN_WORDS 64          /* words scanned for a caller past the first frame */
#define UNWIND_SCAN_WORDS_FIRST 256   /* words scanned from the context frame */

typedef enum {
    UNWIND_FOUND_CONTEXT,       /* the thread's (or exception's) registers */
    UNWIND_FOUND_CFI,           /* compact unwind, its DWARF, or Breakpad STACK CFI */
    UNWIND_FOUND_FRAME_POINTER, /* frame-pointer chain */
    UNWIND_FOUND_SCAN,          /* stack scan */
} unwind_found;

typedef struct {
    uint64_t pc;         /* frame 0: the instruction; callers: the return address */
    uint64_t sp;         /* the frame's stack pointer */
    uint64_t fp;         /* its frame pointer (rbp / x29) as recovered */
    unwind_found found;  /* how this frame was found */
    int module;          /* index into the dump's modules, -1 if pc is in none */
    uint64_t rel_addr;   /* pc - the module's load address (0 without a module) */
} unwind_frame;

/*
 * unwind_walker - what the walks of one dump's threads share: which image (unwind info) each
 * module has, and each image's __debug_frame index, built the first time a walk needs it and
 * kept for the other threads (a dSYM's section has one FDE per function: indexing it for
 * every thread was most of a many-threaded dump's walk).
 */
typedef struct unwind_walker unwind_walker;

/*
 * unwind_resolve_fn - the unwind info of module `module` (an index into the dump's modules)
 * when `images` has none for its UUID: true with *out filled (its pointers valid while the
 * walker is used), false when there is none. Asked at most once per module, and only for
 * modules a walk reaches (a frame's pc or a scanned stack word in it), so that a caller need
 * not know beforehand which of a dump's modules (200 and more for an Electron app) matter;
 * a module whose UUID another module already resolved shares that one's image.
 */
typedef bool (*unwind_resolve_fn)(unwind_image *out, void *ctx, size_t module);

/*
 * unwind_walker_new - a walker for `md`'s threads with the unwind info `images` (matched to
 * modules by UUID; borrowed, NULL if none) and, for modules none of them matches, `resolve`
 * (may be NULL) called with `ctx`. *out in `a`, as is everything it builds; valid while `a`,
 * `md` and the images are. Errors  ERR_TOO_LARGE (arena).
 */
err_code unwind_walker_new(unwind_walker **out, const minidump *md, const unwind_image *images,
                           size_t nimages, unwind_resolve_fn resolve, void *ctx, arena *a,
                           err_info *err);

/*
 * unwind_walker_walk - the frames of `ctx` (a thread's or the exception's registers) over the
 * dump's memory, innermost first. *out allocated in the walker's arena.
 * Errors  ERR_UNSUPPORTED (context arch unknown), ERR_TOO_LARGE (arena).
 */
err_code unwind_walker_walk(unwind_frame **out, size_t *n, unwind_walker *w,
                            const minidump_context *ctx, err_info *err);

/* unwind_walker_image - the unwind info module `module` walks with: the images' match by
 * UUID, else what `resolve` gives (asked now if it was not yet); NULL if none. Borrowed. */
const unwind_image *unwind_walker_image(unwind_walker *w, size_t module);

/* unwind_walker_indexes - how many __debug_frame indexes the walker has built (at most one
 * per image), for tests and benchmarks. */
size_t unwind_walker_indexes(const unwind_walker *w);

/*
 * unwind_walk - one thread's walk with a walker of its own (unwind_walker_new with no
 * resolver, then unwind_walker_walk): for a single thread; a dump's threads share one walker.
 * Errors  as those.
 */
err_code unwind_walk(unwind_frame **out, size_t *n, const minidump *md, const minidump_context *ctx,
                     const unwind_image *images, size_t nimages, arena *a, err_info *err);

/* unwind_found_name - "context", "cfi", "frame_pointer", "scan". */
const char *unwind_found_name(unwind_found f);

#endif
