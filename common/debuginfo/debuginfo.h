/*
 * debuginfo - read what symbolication needs out of one Mach-O slice of a dSYM: the function
 * tree (concrete functions and their inlinees with address ranges and call sites), the line
 * tables, and the symbol table as a fallback.
 *
 * DWARF is read by our own DIE reader (dieread.c, over the slice's __DWARF sections as
 * common/macho maps them, so thin and fat files both work), compile units spread over the
 * threads; libdwarf is only the test oracle (tests/test_debuginfo.c, README.md). Only the DIEs symbolication needs are visited: the compile unit, namespaces and
 * modules, aggregate types (Swift and C++ nest methods there), subprograms with code, lexical
 * blocks and inlined subroutines, at any nesting; everything else is skipped as a subtree. Names follow DW_AT_abstract_origin / DW_AT_specification (DWARF 5
 * sections 3.3.8.1, 2.13.2) the way llvm-symbolizer --functions=linkage does: the linkage name
 * found anywhere along that chain, raw (as `--no-demangle` prints it: the symcache stores raw
 * names and lookups demangle them), else the first DW_AT_name along it.
 * Sources: DWARF 2-5 (dwarfstd.org), Apple <mach-o/loader.h>, <mach-o/nlist.h>.
 */
#ifndef STACKSIFT_DEBUGINFO_DEBUGINFO_H
#define STACKSIFT_DEBUGINFO_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "debuginfo/strtab.h"
#include "macho/macho.h"
#include "symbolmap/symbolmap.h"

#define DEBUGINFO_NONE UINT32_MAX

/* A function or inlinee. Addresses are file addresses (the image's vm space). */
typedef struct {
    uint32_t name;      /* string id: raw linkage name (`_Z...`, `$s...`) or DW_AT_name */
    uint32_t parent;    /* scope this was inlined into; DEBUGINFO_NONE for a concrete function */
    uint32_t call_file; /* string id of DW_AT_call_file's path, or STRTAB_NONE */
    uint32_t call_line; /* DW_AT_call_line, 0 = unknown */
    uint32_t depth;     /* 0 for a concrete function, inline depth otherwise */
    uint32_t flags;     /* DEBUGINFO_SCOPE_* */
    uint64_t entry;     /* lowest address of the scope (for "+ offset") */
} debuginfo_scope;

#define DEBUGINFO_SCOPE_SYMTAB 1u /* from the Mach-O symbol table, not DWARF */
#define DEBUGINFO_SCOPE_SYMTAB_NAME 2u /* a concrete function whose DWARF has no linkage name,
                                          named by the symbol table's symbol at its entry */

/* One address range [start, end) owned by a scope. */
typedef struct {
    uint64_t start, end;
    uint32_t scope; /* index into scopes */
    uint32_t depth; /* copy of scopes[scope].depth, for sorting */
} debuginfo_range;

/* One line-table row: from addr on, until the next row of its sequence, code is at file:line.
 * A row with line == DEBUGINFO_END_SEQUENCE ends its sequence at addr. */
typedef struct {
    uint64_t addr;
    uint32_t file; /* string id of the source path, or STRTAB_NONE */
    uint32_t line;
} debuginfo_row;

#define DEBUGINFO_END_SEQUENCE UINT32_MAX

/* The scope-qualified name of a scope named by DW_AT_name alone (no linkage name anywhere
 * along its abstract_origin / specification chain): DW_AT_name of the DIE that gave the
 * name, after the names of the namespaces and types around that DIE, outermost first, joined
 * by "::" (C, C++, Objective-C units) or "." (Swift units, DW_LANG_Swift): `ns::Widget::draw`,
 * `(anonymous namespace)::helper`, `CRLCrashSwift.crash`. DW_TAG_module is left out: a Swift
 * name as atos and our display print it (DEMANGLE_SIMPLIFIED) carries no module, and the
 * qualified name is there so that both forms of one function read alike (common/signature).
 * Only scopes whose name DIE lies inside such a scope get one, and never an Objective-C method
 * or a block of one ("-[Cart add:]" names its class already). */
typedef struct {
    uint32_t scope; /* index into debuginfo.scopes */
    uint32_t name;  /* string id of the qualified name; never the same string as the scope's */
} debuginfo_qualified;

/* What debuginfo_load skipped instead of refusing the slice (llvm-dwarfdump warns and reads
 * on the same way): the smallest bad part is left out, everything else is kept. */
typedef struct {
    uint32_t units;      /* units skipped whole: unreadable header, empty or truncated unit,
                            abbreviation table or unit DIE that does not parse */
    uint32_t functions;  /* functions left out of an otherwise read unit: a DIE that does not
                            parse (the unit's DIEs after it are lost too), a bad range list */
    uint32_t sequences;  /* line programs cut short: the unterminated or malformed tail after
                            the last complete sequence left out */
    bool symtab_only;    /* there was DWARF but none of it was usable: symbol table only */
    uint64_t offset;     /* .debug_info offset of the first problem (lowest offset) */
    char first[160];     /* what that problem is, "" when there was none */
} debuginfo_warnings;

/* debuginfo_warnings_count - total of the things skipped (0 = clean). */
uint32_t debuginfo_warnings_count(const debuginfo_warnings *w);

/* debuginfo_warnings_text - one line describing `w` into out[0..cap) ("" when clean), e.g.
 * "skipped 1 DWARF unit, 2 functions (first: .debug_info+0x26a61: unit has no unit DIE)". */
void debuginfo_warnings_text(const debuginfo_warnings *w, char *out, size_t cap);

/* What debuginfo_reveal found among the names and paths of a slice. */
typedef struct {
    uint32_t hidden;     /* strings (names, paths) that held a `__hidden#N_` reference */
    uint32_t left;       /* of those, how many still hold one after the reveal (no map, or an
                            N past the map's end) */
    uint32_t max_index;  /* the largest N + 1 referenced, 0 = none: a map with fewer lines is
                            not this build's */
} debuginfo_hidden;

typedef struct {
    strtab strings;           /* every name and path */
    debuginfo_scope *scopes;  /* nscopes entries */
    uint32_t nscopes;
    debuginfo_range *ranges;  /* nranges entries (concrete and inlined), sorted by
                                 debuginfo_range_order */
    size_t nranges;
    debuginfo_qualified *qualified; /* nqualified entries, by scope ascending: the scopes
                                       that have a scope-qualified name beside their name */
    size_t nqualified;
    debuginfo_row *rows;      /* nrows entries; each sequence in order, sequences unsorted */
    size_t nrows;
    debuginfo_range *symbols; /* symbol-table functions, sorted, [start, end) to the next one;
                                 scope = string id of the raw (mangled) name */
    size_t nsymbols;
    uint64_t dwarf_bytes;     /* total size of the __DWARF sections read */
    uint32_t compile_units;
    debuginfo_warnings warnings; /* what was skipped as unreadable (never fatal) */
    debuginfo_hidden hidden;     /* hidden names and paths (debuginfo_reveal; zero before) */
    bool revealed;               /* debuginfo_reveal applied a BCSymbolMap to some of them */
} debuginfo;

/* debuginfo_load - read DWARF and symbol table of `img` into *out with `threads` threads
 * (0 = all CPUs). An image with no DWARF yields just the symbol table. Each unit's function
 * ranges and line rows are kept only where the unit owns the addresses (.debug_aranges, else
 * the unit DIE's ranges; README.md "Which unit owns an address"), as llvm-symbolizer reads
 * them. Corrupt DWARF is never
 * fatal: the unit, function or line sequence that does not parse is left out and counted in
 * out->warnings; DWARF with nothing usable yields the symbol table (warnings.symtab_only).
 * out     owned by the caller: debuginfo_reset().
 * Errors  ERR_TOO_LARGE (names over 4 GiB). */
err_code debuginfo_load(debuginfo *out, const macho_image *img, unsigned threads, err_info *err);

/* debuginfo_range_order - the order of scope ranges: by start, then end descending (outer
 * before inner), depth, scope. Negative, 0 or positive, like strcmp. */
int debuginfo_range_order(const debuginfo_range *a, const debuginfo_range *b);

/* debuginfo_sort_ranges - sort r[0..n) by debuginfo_range_order (radix by start, then each
 * run of equal starts). */
void debuginfo_sort_ranges(debuginfo_range *r, size_t n);

/* debuginfo_row_add - append the line-table row (addr, file, line) to rows[0..*n) (capacity
 * *cap, grown with realloc), leaving out what cannot change a symcache: a row at the address
 * of the row before it replaces that row; a row at a higher address with the same file and
 * line as the row before it is dropped; when addresses fall after a dropped row, that row is
 * stored again first (the builder discards a sequence whose addresses fall). line ==
 * DEBUGINFO_END_SEQUENCE ends a sequence. *last_addr carries the previous row's address
 * between calls (start with 0). What debuginfo_load stores rows with (README.md). */
void debuginfo_row_add(debuginfo_row **rows, size_t *n, size_t *cap, uint64_t *last_addr, uint64_t addr,
                       uint32_t file, uint32_t line);


/*
 * debuginfo_reveal - replace every `__hidden#N_` in the names and paths of `d` by line N of
 * BCSymbolMap `m` (symbolmap_reveal's rules), in place: string ids stay what they were, so
 * scopes, rows and symbols need no change. `m` NULL only counts. A slice with no hidden
 * string (any dSYM not from App Store Connect) costs one memmem over its strings.
 * out     what was found (zeroed first); also kept in d->hidden, and d->revealed set.
 * Errors  ERR_TOO_LARGE (revealed strings over 4 GiB).
 */
err_code debuginfo_reveal(debuginfo *d, const symbolmap *m, debuginfo_hidden *out,
                          err_info *err);

/* debuginfo_reset - free everything in `d`; a zeroed struct is a no-op. */
void debuginfo_reset(debuginfo *d);

#endif
