/*
 * dieread - a small, allocation-free reader for the DIE tree in .debug_info, driven by the
 * abbreviation tables (DWARF 5 sections 7.5.1-7.5.6; DWARF 2-4 unit headers and forms).
 * It decodes only the attributes symbolication needs and skips everything else by form, so
 * subtrees of types and variables cost a few byte reads per DIE. Internal to debuginfo.
 *
 * Every read is bounds-checked against its section; a malformed unit makes the reader
 * return false with a message, never read outside the mapped sections.
 */
#ifndef STACKSIFT_DEBUGINFO_DIEREAD_INTERNAL_H
#define STACKSIFT_DEBUGINFO_DIEREAD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const uint8_t *data; /* NULL when the section is absent */
    uint64_t len;
} die_section;

typedef struct {
    die_section info, abbrev, str, line_str, str_offsets, addr, ranges, rnglists, line, aranges;
} die_sections;

typedef struct {
    uint16_t name, form;
    int64_t implicit; /* DW_FORM_implicit_const value */
} die_attr_spec;

typedef struct {
    uint16_t tag;
    bool children;
    bool has_sibling;      /* one of its attributes is DW_AT_sibling */
    uint32_t first, count; /* specs[first .. first+count) */
    int32_t fixed_size;    /* bytes of all its values when every form has a fixed size for
                              the table's sized_for units, else -1 (die_abbrev_table_size) */
} die_abbrev;

/* One abbreviation table (one .debug_abbrev offset), indexed by code. */
typedef struct {
    uint64_t offset;
    die_abbrev *by_code;    /* by_code[code]; tag 0 = no such code */
    uint32_t ncodes;        /* codes 0 .. ncodes-1 */
    die_attr_spec *specs;
    uint32_t nspecs;
    uint32_t sized_for;     /* die_unit_size_key of the units fixed_size holds for; 0 = none */
} die_abbrev_table;

/* A unit header and what its unit DIE says about bases. */
typedef struct {
    uint64_t offset;       /* unit header offset in .debug_info */
    uint64_t end;          /* first byte after the unit */
    uint64_t die_offset;   /* the unit DIE */
    uint64_t abbrev_offset;
    uint16_t version;
    uint8_t unit_type;     /* DW_UT_*; DWARF 2-4 compile units are DW_UT_compile */
    uint8_t addr_size, offset_size;
    /* filled by die_unit_bases */
    uint64_t str_offsets_base, addr_base, rnglists_base, base_addr;
    const char *comp_dir;  /* DW_AT_comp_dir, NULL if absent */
    uint32_t language;     /* DW_AT_language (DW_LANG_*), 0 if absent */
    bool has_stmt_list;
    uint64_t stmt_list;    /* DW_AT_stmt_list: offset of its line program in .debug_line */
    const die_abbrev_table *abbrevs;
    const char *bad;       /* the header cannot be read (static message): skip the unit */
} die_unit;

/* What one DIE says, of the attributes symbolication reads. (die_read clears it field by
 * field, in die_info_clear: a new field is cleared there too.) */
typedef struct {
    uint64_t offset;       /* global .debug_info offset of the DIE */
    uint64_t next;         /* offset just past its attributes (children or sibling start) */
    uint16_t tag;          /* 0 for a null entry (end of a sibling list) */
    bool children;
    bool has_low, has_high, high_is_size, has_ranges;
    uint64_t low, high;
    uint16_t ranges_form;
    uint64_t ranges;       /* offset or rnglistx index */
    const char *name, *linkage;
    bool has_origin, has_spec;
    uint64_t origin, spec; /* global offsets */
    bool has_call_file, has_call_line;
    uint64_t call_file, call_line;
    bool has_sibling;
    uint64_t sibling;      /* global offset */
} die_info;

/* die_units_scan - list the units in .debug_info (headers only). *out is malloc'd. A unit
 * whose header cannot be read is listed with `bad` naming the problem (die_offset = end):
 * the caller skips it. When its length is unusable it runs to the end of the section. */
void die_units_scan(die_unit **out, size_t *n, const die_sections *s);

/* die_abbrev_table_load - parse the table at `offset`; NULL or a static error message. */
const char *die_abbrev_table_load(die_abbrev_table *t, const die_sections *s, uint64_t offset);
void die_abbrev_table_free(die_abbrev_table *t);

/* die_unit_size_key - what the sizes of a unit's forms depend on (address and offset size,
 * DWARF 2's DW_FORM_ref_addr), as one nonzero number. */
uint32_t die_unit_size_key(const die_unit *u);

/* die_abbrev_table_size - compute each abbreviation's fixed_size for units like `u`, so that
 * a DIE the walk steps over is skipped in one step (values are only skipped by form for
 * tables sized for another kind of unit). */
void die_abbrev_table_size(die_abbrev_table *t, const die_unit *u);

/* die_unit_bases - read the unit DIE for DW_AT_str_offsets_base, addr_base, rnglists_base
 * low_pc, comp_dir and language; u->abbrevs must be set. NULL or a static error message. */
const char *die_unit_bases(die_unit *u, const die_sections *s);

/* die_read - decode the DIE at global `offset` of unit `u` (or the null entry there). */
const char *die_read(die_info *out, const die_sections *s, const die_unit *u, uint64_t offset);

/* die_read_tags - die_read that decodes every attribute only of DIEs whose tag is below 64
 * with bit `tag` set in `full_tags` (~0 = every DIE); of any other DIE it reads tag,
 * children, next and DW_AT_sibling, skipping the other values by form (no strings looked up). */
const char *die_read_tags(die_info *out, const die_sections *s, const die_unit *u, uint64_t offset,
                          uint64_t full_tags);

/* die_skip_children - offset just past the children of a DIE whose children start at
 * `offset` (its `next`), found by walking the subtree without decoding values. */
const char *die_skip_children(uint64_t *out, const die_sections *s, const die_unit *u,
                              uint64_t offset);

/* die_string - the string a DW_AT_name-like value of form `form` / `value` designates;
 * NULL if invalid. (Used internally by die_read.) */

/* die_ranges - address ranges of `d` (low/high pc or DW_AT_ranges) into out[0..cap); returns
 * the count (may exceed cap: call again with more room), or -1 on a malformed list. */
long die_ranges(uint64_t (*out)[2], size_t cap, const die_sections *s, const die_unit *u,
                const die_info *d);

/* die_aranges - the address range sets of .debug_aranges (DWARF 5 section 6.1.2): calls
 * fn(ctx, unit_offset, lo, hi) for each tuple of each set, [lo, hi) with hi > lo (empty
 * tuples skipped), unit_offset being the set's .debug_info offset. Stops at the first set
 * that does not parse (a version other than 2, an address size other than 2, 4 or 8, a
 * segment selector, a length past the section), as llvm's DWARFDebugAranges does; the sets
 * before it stay read. */
void die_aranges(const die_sections *s, void (*fn)(void *ctx, uint64_t unit_offset, uint64_t lo, uint64_t hi),
                 void *ctx);

/* Receives a line program's file table and rows (DWARF 5 section 6.2). */
typedef struct {
    void *ctx;
    /* file entry number `index` (0-based in DWARF 5, 1-based before): `name` as given, `dir`
     * the directory entry it names (NULL if none), `dir_is_comp_dir` when that is DWARF 5's
     * directory 0 (the compilation directory itself) */
    void (*file)(void *ctx, uint64_t index, const char *name, const char *dir, bool dir_is_comp_dir);
    /* one row: from `addr` on, code is at file `file`, line `line`; `end` = end of sequence */
    void (*row)(void *ctx, uint64_t addr, uint64_t file, uint64_t line, bool end);
} die_line_sink;

/* die_line_program - run the line program at `offset` in .debug_line for unit `u`, versions
 * 2-5. NULL or a static error message. */
const char *die_line_program(const die_sections *s, const die_unit *u, uint64_t offset,
                             const die_line_sink *sink);

#endif
