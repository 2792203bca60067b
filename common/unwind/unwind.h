/*
 * unwind - Apple's compact unwind info (`__TEXT,__unwind_info`): the table of functions and
 * their 32-bit encodings, and what an encoding says for x86_64 and arm64.
 *
 * Layout (version 1), from the format as Apple documents it in <mach-o/compact_unwind_encoding.h>
 * (llvm's libunwind/include/mach-o/compact_unwind_encoding.h; read, not copied):
 *   header: u32 version (1), commonEncodingsArraySectionOffset, commonEncodingsArrayCount,
 *           personalityArraySectionOffset, personalityArrayCount, indexSectionOffset,
 *           indexCount
 *   index entry (12 bytes): u32 functionOffset, u32 secondLevelPagesSectionOffset (0 = none;
 *           the last entry is a sentinel whose functionOffset ends the last function),
 *           u32 lsdaIndexArraySectionOffset
 *   second-level page, kind 2 (regular): u32 kind, u16 entryPageOffset, u16 entryCount;
 *           entries (u32 functionOffset, u32 encoding)
 *   second-level page, kind 3 (compressed): u32 kind, u16 entryPageOffset, u16 entryCount,
 *           u16 encodingsPageOffset, u16 encodingsCount; entries u32: low 24 bits the
 *           function offset from the index entry's, high 8 bits an encoding index (below
 *           commonEncodingsArrayCount: the common array, else the page's own array)
 * Function offsets are relative to the image's __TEXT vmaddr (the mach header).
 * Every offset and count is checked against the section's bytes.
 */
#ifndef STACKSIFT_UNWIND_UNWIND_H
#define STACKSIFT_UNWIND_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "unwind/unwind_image.h"

/* unwind_compact_list - every function of the `__unwind_info` section (`len` bytes), in
 * address order. *out is allocated in `a` (NULL when *n == 0).
 * Errors  ERR_INVALID (version is not 1, header, index or a page outside the section),
 *         ERR_TOO_LARGE (arena budget). */
err_code unwind_compact_list(unwind_entry **out, size_t *n, const uint8_t *sect, size_t len,
                             arena *a, err_info *err);

/* unwind_compact_find - the entry whose [func_start, func_end) holds `rel_addr`, by binary
 * search in a list from unwind_compact_list; NULL if none. */
const unwind_entry *unwind_compact_find(const unwind_entry *entries, size_t n, uint32_t rel_addr);

/* unwind_stack_sizes - for every x86_64 entry of `entries` (from unwind_compact_list) whose
 * encoding is UNWIND_KIND_FRAMELESS_INDIRECT, the imm32 at func_start + sub_offset of `text`
 * (`text_len` file bytes of the __TEXT segment, from its vmaddr), in entry order; entries
 * whose immediate lies outside `text` are left out (a walker then tries its next method).
 * *out allocated in `a` (NULL when *n == 0). Errors  ERR_TOO_LARGE (arena budget). */
err_code unwind_stack_sizes(unwind_stack_size **out, size_t *n, const unwind_entry *entries,
                            size_t nentries, const uint8_t *text, size_t text_len, arena *a,
                            err_info *err);

/* unwind_stack_size_find - the imm32 of the function starting at `func_start`, by binary
 * search in a table sorted by func_start; false if it has none. */
bool unwind_stack_size_find(uint32_t *imm, const unwind_stack_size *sizes, size_t n,
                            uint32_t func_start);

/* What an encoding says, per architecture. */
typedef enum {
    UNWIND_KIND_NONE = 0,          /* encoding 0: no info; treated as a leaf by walkers */
    UNWIND_KIND_FRAME,             /* rbp / fp frame */
    UNWIND_KIND_FRAMELESS,         /* fixed stack size */
    UNWIND_KIND_FRAMELESS_INDIRECT,/* x86_64: stack size read from the function's sub insn */
    UNWIND_KIND_DWARF,             /* see the FDE at dwarf_offset in __eh_frame */
    UNWIND_KIND_UNKNOWN,           /* a mode this reader does not know */
} unwind_kind;

#define UNWIND_MAX_SAVED 12

typedef struct {
    unwind_kind kind;
    /* FRAME (x86_64): saved registers at rbp - saved_offset + 8 * i, i = 0..nsaved-1 (a
     * DWARF number, or -1 for an unused slot). FRAME (arm64): pairs x19/x20.. saved below fp,
     * from fp - 8 downwards, in `saved` order (-1 for the d8..d15 slots skipped).
     * FRAMELESS: stack_size bytes (x86_64: including the return address); the saved
     * registers lie just below the return address (x86_64) or from sp + stack_size - 8
     * downwards (arm64), in `saved` order. */
    uint32_t stack_size;
    uint32_t saved_offset;     /* x86_64 FRAME: bytes below rbp of the first saved register */
    uint32_t sub_offset;       /* FRAMELESS_INDIRECT: offset in the function of the imm32 */
    uint32_t stack_adjust;     /* FRAMELESS_INDIRECT: bytes added to the imm32 */
    uint32_t dwarf_offset;     /* DWARF: offset of the FDE in __eh_frame */
    unsigned nsaved;
    int saved[UNWIND_MAX_SAVED]; /* DWARF register numbers */
} unwind_rule;

/* unwind_decode_x86_64, unwind_decode_arm64 - what `encoding` says; false for a register
 * permutation or mode that is not valid (the rule is then UNWIND_KIND_UNKNOWN). */
bool unwind_decode_x86_64(unwind_rule *out, uint32_t encoding);
bool unwind_decode_arm64(unwind_rule *out, uint32_t encoding);

/* ---- DWARF CFI (__eh_frame) ------------------------------------------------------------ */

#define UNWIND_CFI_REGS 33 /* DWARF registers tracked: x86_64 0..16, arm64 0..32 */

typedef enum {
    UNWIND_REG_NONE = 0,     /* no rule given: the register keeps its value (callee-saved) */
    UNWIND_REG_UNDEFINED,    /* DW_CFA_undefined: the caller's value is unknown */
    UNWIND_REG_SAME,         /* DW_CFA_same_value */
    UNWIND_REG_OFFSET,       /* saved at CFA + value */
    UNWIND_REG_VAL_OFFSET,   /* the value is CFA + value */
    UNWIND_REG_REGISTER,     /* the value is in register `value` */
} unwind_reg_kind;

typedef struct {
    unwind_reg_kind kind;
    int64_t value; /* bytes (OFFSET, VAL_OFFSET) or a register number (REGISTER) */
} unwind_reg_rule;

/* The row of a CFA program at one address. */
typedef struct {
    uint64_t func_start, func_end; /* the FDE's [pc_begin, pc_begin + pc_range), vm addresses */
    unsigned cfa_reg;              /* CFA = value of cfa_reg + cfa_offset */
    int64_t cfa_offset;
    unsigned ra_reg;               /* the CIE's return address register (16 x86_64, 30 arm64) */
    unwind_reg_rule regs[UNWIND_CFI_REGS];
} unwind_cfi_row;

/*
 * unwind_dwarf_row - the CFI row at vm address `target` of the FDE at `fde_off` in the
 * `__eh_frame` section (`len` bytes at vm address `vmaddr`), its CIE's initial instructions
 * first. Source: DWARF 4 section 6.4, .eh_frame as the LSB specifies it (augmentations z, R,
 * P, L, S; DW_EH_PE absptr/udata/sdata/uleb/sleb, pcrel).
 * Errors  ERR_INVALID (no FDE there, a CIE or FDE outside the section or truncated, an FDE
 *         whose range runs past the end of the address space), ERR_NOT_FOUND (the FDE does
 *         not cover target), ERR_UNSUPPORTED (a DWARF expression, an unknown opcode, an
 *         indirect pointer).
 */
err_code unwind_dwarf_row(unwind_cfi_row *out, const uint8_t *sect, size_t len, uint64_t vmaddr,
                          uint64_t fde_off, uint64_t target, err_info *err);

/* ---- DWARF CFI (__debug_frame) --------------------------------------------------------- */

/* One FDE of a `__debug_frame` section: the function it covers and where it is. */
typedef struct {
    uint64_t start, end; /* [pc_begin, pc_begin + pc_range), vm addresses of the image */
    uint64_t fde_off;    /* offset of the FDE in the section */
} unwind_fde;

/*
 * unwind_debug_frame_list - every FDE of a dSYM's `__DWARF,__debug_frame` (`len` bytes), by
 * start address: a __debug_frame has no index (unlike __eh_frame, which compact unwind
 * encodings point into), so a walker builds this once per image. Overlapping FDEs are
 * clipped (the earlier start wins); an FDE whose CIE cannot be read, or with an empty range,
 * is left out; the list ends at the first entry whose length runs past the section.
 * *out allocated in `a` (NULL when *n == 0).
 * Errors  ERR_TOO_LARGE (arena budget).
 * Source  DWARF 5 section 6.4.1 (CIE id 0xffffffff, CIE pointer an offset from the section's
 *         start, absolute addresses of the CIE's address size).
 */
err_code unwind_debug_frame_list(unwind_fde **out, size_t *n, const uint8_t *sect, size_t len,
                                 arena *a, err_info *err);

/* unwind_fde_find - the FDE of a list from unwind_debug_frame_list whose [start, end) holds
 * vm address `addr`, by binary search; NULL if none. */
const unwind_fde *unwind_fde_find(const unwind_fde *fdes, size_t n, uint64_t addr);

/*
 * unwind_debug_frame_row - the CFI row at vm address `target` of the FDE at `fde_off` in a
 * `__debug_frame` section (`len` bytes; its addresses are absolute), its CIE's initial
 * instructions first. The CFA program is the one unwind_dwarf_row runs.
 * Errors  as unwind_dwarf_row's (ERR_INVALID, ERR_NOT_FOUND, ERR_UNSUPPORTED).
 */
err_code unwind_debug_frame_row(unwind_cfi_row *out, const uint8_t *sect, size_t len,
                                uint64_t fde_off, uint64_t target, err_info *err);

#endif
