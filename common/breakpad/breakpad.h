/*
 * breakpad - Breakpad symbol files (`.sym`, the text dump_syms writes): the parser, the
 * STACK CFI table kept in a symcache section, and the evaluator of its postfix rules.
 *
 * Records (one per line, fields separated by one space; numbers hex unless said decimal):
 *   MODULE os arch id name            first line; id = 32 hex digits of the debug id (a Mach-O
 *                                     UUID, byte for byte) + the age (hex, 1-8 digits)
 *   INFO kind value...                (CODE_ID, GENERATOR): kept as the code id / ignored
 *   FILE n name                       n decimal
 *   INLINE_ORIGIN n name              n decimal
 *   FUNC [m] addr size param_size name
 *   addr size line filenum            a line record of the FUNC before it (line, filenum decimal)
 *   INLINE depth call_line call_file origin addr size [addr size...]   (the four decimal) of the
 *                                     FUNC before it; depth 0 lies in the function, depth d in
 *                                     the latest INLINE of depth d - 1
 *   PUBLIC [m] addr param_size name
 *   STACK CFI INIT addr size rules    the rules at addr, for [addr, addr + size)
 *   STACK CFI addr rules              further rules from addr on, in the INIT before it
 *   STACK WIN ...                     Windows frame data: skipped, counted
 * Addresses are offsets from the module's load address (for Mach-O, from __TEXT's vmaddr).
 * Written from Breakpad's own description of the format (docs/symbol_files.md in its
 * repository), read, not copied; checked against the shared crash.sym of
 * ../shared/minidumps/macos-x86_64-breakpad, written by dump_syms from the same executable.
 *
 * Hostile input: every number is range-checked, every record that does not parse is skipped
 * and counted (the first one named), a line record or INLINE without a FUNC before it is
 * skipped; only a missing or malformed MODULE line refuses the file. Memory comes from the
 * caller's arena (its budget bounds what a huge file may take).
 */
#ifndef STACKSIFT_BREAKPAD_BREAKPAD_H
#define STACKSIFT_BREAKPAD_BREAKPAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"

#define BREAKPAD_MAX_INLINE_DEPTH 62 /* deeper INLINE records are skipped (symcache cap 64) */

typedef struct {
    uint32_t id;       /* FILE / INLINE_ORIGIN number */
    const char *name;  /* in the arena */
} breakpad_named;

typedef struct {
    uint64_t addr, size;
    uint32_t line;     /* 0 = unknown */
    uint32_t file;     /* FILE number as written (may name no FILE record) */
} breakpad_line;

typedef struct {
    uint64_t addr, size;
    const char *name;
    bool multiple;          /* `m`: several functions folded at this address */
    size_t first_line, nlines;        /* into breakpad_sym.lines */
    size_t first_inline, ninlines;    /* into breakpad_sym.inlines */
} breakpad_func;

typedef struct {
    uint32_t depth;          /* 0: inlined into the function itself */
    uint32_t call_line;      /* line of the call in its parent, 0 = unknown */
    uint32_t call_file;      /* FILE number of the call site */
    uint32_t origin;         /* INLINE_ORIGIN number: the inlined function's name */
    uint32_t parent;         /* index (within the FUNC's inlines) of the INLINE it lies in;
                                UINT32_MAX: the function */
    size_t first_range, nranges;      /* into breakpad_sym.ranges */
} breakpad_inline;

typedef struct {
    uint64_t addr, size;
} breakpad_range;

typedef struct {
    uint64_t addr;
    const char *name;
    bool multiple;
} breakpad_public;

typedef struct {
    uint64_t addr, size;
    const char *rules;       /* the INIT record's rules, e.g. ".cfa: $rsp 8 + .ra: .cfa -8 + ^" */
    size_t first_delta, ndeltas;      /* into breakpad_sym.deltas, in file order */
} breakpad_cfi_init;

typedef struct {
    uint64_t addr;
    const char *rules;
} breakpad_cfi_delta;

typedef struct {
    const char *os, *arch, *name;     /* MODULE fields */
    const char *code_id;              /* INFO CODE_ID, or NULL */
    uint8_t uuid[16];                 /* the debug id's GUID bytes in written order */
    uint32_t age;
    breakpad_named *files;            /* sorted by id, ids distinct (a repeated id: last wins) */
    size_t nfiles;
    breakpad_named *origins;          /* sorted by id, ids distinct */
    size_t norigins;
    breakpad_func *funcs;             /* in file order */
    size_t nfuncs;
    breakpad_line *lines;
    size_t nlines;
    breakpad_inline *inlines;
    size_t ninlines;
    breakpad_range *ranges;
    size_t nranges;
    breakpad_public *publics;         /* in file order */
    size_t npublics;
    breakpad_cfi_init *cfi;           /* in file order */
    size_t ncfi;
    breakpad_cfi_delta *deltas;
    size_t ndeltas;
    uint64_t stack_win;               /* STACK WIN records skipped */
    uint64_t skipped;                 /* malformed records skipped */
    uint64_t first_skipped_line;      /* 1-based line number of the first, 0 = none */
    char first_skipped[96];           /* why it was skipped ("" = none) */
} breakpad_sym;

/*
 * breakpad_test - true when `data` (`len` bytes) starts like a Breakpad symbol file
 * ("MODULE " then an os name).
 */
bool breakpad_test(const uint8_t *data, size_t len);

/*
 * breakpad_parse - parse the `.sym` text `data` (`len` bytes, no NUL needed; CRLF accepted).
 * out     allocated in `a`, valid until arena_free(a).
 * Errors  ERR_INVALID (no MODULE line first, a debug id shorter than 33 hex digits or not
 *         hex), ERR_TOO_LARGE (the arena's budget).
 */
err_code breakpad_parse(breakpad_sym **out, const uint8_t *data, size_t len, arena *a,
                        err_info *err);

/* breakpad_debug_id - the MODULE id as written: 32 hex digits of `uuid` + the age in hex,
 * upper case (`out` holds 41 bytes). */
void breakpad_debug_id(char out[41], const uint8_t uuid[16], uint32_t age);

/* ---- STACK CFI table (a symcache section) ---------------------------------------------- */

/*
 * Layout (little-endian), version 1:
 *   0   4  magic "BPC1"
 *   4   4  ninit
 *   8   4  nrows
 *   12  4  rules_size (bytes; the last is NUL)
 *   16     init[ninit]  24 bytes each, sorted by addr, disjoint: u64 addr, u32 size,
 *                       u32 reserved (0), u32 first_row, u32 nrows (rows[first_row..] are
 *                       the INIT's own rules then its deltas, addresses not decreasing)
 *          rows[nrows]  12 bytes each: u64 addr, u32 rules offset
 *          rules        rules_size bytes: NUL-terminated rule texts, each stored once
 */
#define BREAKPAD_CFI_SECTION 0x31435042u /* "BPC1" as a u32: the symcache section kind */

/*
 * breakpad_cfi_encode - append the STACK CFI table of `sym` to `out` (layout above). INIT
 * records that overlap an earlier one, are empty or end past 2^64 are left out; an INIT
 * larger than 4 GiB is clipped. Returns the INIT records written.
 */
size_t breakpad_cfi_encode(buf *out, const breakpad_sym *sym);

/* A checked view of an encoded table. */
typedef struct {
    const uint8_t *init, *rows;
    const char *rules;
    uint32_t ninit, nrows, rules_size;
} breakpad_cfi;

/*
 * breakpad_cfi_open - check the table's header and sizes against `len` (O(1) besides the
 * NUL at its end); the view borrows `data`. Row ranges and rule offsets are checked by each
 * lookup.
 * Errors  ERR_INVALID (bad magic, sizes that do not add up to len).
 */
err_code breakpad_cfi_open(breakpad_cfi *out, const uint8_t *data, size_t len, err_info *err);

#define BREAKPAD_CFI_MAX_RULES 64 /* rule texts applied at one address, at most */

/*
 * breakpad_cfi_find - the rule texts in force at `rel_addr` (module offset), in the order
 * they apply (the INIT's first, later ones override a register they name again): at most
 * `cap` into out (borrowed from the table). Returns how many; 0 when no INIT covers it.
 */
size_t breakpad_cfi_find(const char **out, size_t cap, const breakpad_cfi *cfi, uint64_t rel_addr);

/* ---- postfix rules --------------------------------------------------------------------- */

#define BREAKPAD_REGS 33            /* DWARF numbering: x86_64 0..16, arm64 0..32 */
#define BREAKPAD_STACK_MAX 32       /* evaluator stack depth */
#define BREAKPAD_TOKENS_MAX 256     /* tokens in the rules of one address */

typedef enum { BREAKPAD_ARCH_X86_64, BREAKPAD_ARCH_ARM64 } breakpad_arch;

/* A register file in DWARF numbering; bit i of `valid` says regs[i] is known. */
typedef struct {
    uint64_t regs[BREAKPAD_REGS];
    uint64_t valid;
} breakpad_regs;

/* Reads 8 little-endian bytes at `addr` of the crashed process; false when not captured. */
typedef bool (*breakpad_read_fn)(uint64_t *out, uint64_t addr, void *ctx);

/*
 * breakpad_cfi_eval - the caller's registers by `rules` (n texts as breakpad_cfi_find gives
 * them) over the frame's registers `cur`: `.cfa` first (from cur), then `.ra` and every
 * register named, with `.cfa` known. Postfix: numbers (decimal, optionally negative, or
 * 0x hex), registers ($rsp, $rbp, ... on x86_64; $x0..$x30, $fp, $lr, $sp, $pc on arm64, the
 * `$` optional), `.cfa`, binary + - * / % @ (align down), unary ^ (deref through `read`).
 * Arithmetic wraps at 64 bits; a division by zero, an unknown token, a stack under- or
 * overflow or a result that is not one value fails that rule. out gets: sp = .cfa, pc = .ra,
 * each register whose rule evaluated; *cfa and *ra the two values. A register whose rule
 * fails is cleared in out->valid; the caller keeps what else it inherits.
 * Returns false when `.cfa` or `.ra` is missing or fails.
 */
bool breakpad_cfi_eval(breakpad_regs *out, uint64_t *cfa, uint64_t *ra, const char *const *rules,
                       size_t n, breakpad_arch arch, const breakpad_regs *cur, breakpad_read_fn read,
                       void *ctx);

#endif
