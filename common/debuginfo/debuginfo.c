/*
 * DWARF -> scopes, ranges, line rows; symbol table -> fallback symbols.
 *
 * Parallelism: the unit headers are listed once; each worker thread takes every n-th unit and
 * reads it with dieread (DIE tree and line program) over the shared, read-only mapped
 * sections. Workers collect into private tables (strings, scopes, ranges, rows) that
 * debuginfo_load merges; the symcache builder renumbers everything by address, so its output
 * does not depend on the thread count.
 */
#include "debuginfo/debuginfo.h"

#include <dwarf.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/phase.h"
#include "base/radix.h"
#include "base/search.h"
#include "base/xalloc.h"
#include "debuginfo/dieread_internal.h"

#define MAX_NAME_HOPS 64   /* abstract_origin/specification chain length we follow (a
                              * cycle in corrupt DWARF ends here) */
#define MAX_SCOPE_DEPTH 256 /* nesting of inlinees and lexical blocks we descend into */

/* ---- the __DWARF sections of a Mach-O image ------------------------------------------ */

/* The sections the reader uses, by their Mach-O names. Names are cut at 16 bytes:
 * "__debug_str_offs" is .debug_str_offsets. */
static const struct {
    const char *sectname;
    size_t field;
} SECTIONS[] = {
    {"__debug_info", offsetof(die_sections, info)},
    {"__debug_abbrev", offsetof(die_sections, abbrev)},
    {"__debug_str", offsetof(die_sections, str)},
    {"__debug_line_str", offsetof(die_sections, line_str)},
    {"__debug_str_offs", offsetof(die_sections, str_offsets)},
    {"__debug_addr", offsetof(die_sections, addr)},
    {"__debug_ranges", offsetof(die_sections, ranges)},
    {"__debug_rnglists", offsetof(die_sections, rnglists)},
    {"__debug_line", offsetof(die_sections, line)},
    {"__debug_aranges", offsetof(die_sections, aranges)},
};

/* Point `out` at the image's __DWARF sections; returns the bytes of all __DWARF sections
 * (what a symcache was built from). */
static uint64_t load_sections(die_sections *out, const macho_image *img)
{
    uint64_t total = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < img->nsections; i++) {
        const macho_section *s = &img->sections[i];
        if (strcmp(s->segname, "__DWARF") != 0 || s->data == NULL)
            continue;
        total += s->size;
        for (size_t k = 0; k < sizeof SECTIONS / sizeof SECTIONS[0]; k++)
            if (strcmp(s->sectname, SECTIONS[k].sectname) == 0) {
                die_section *d = (die_section *)((char *)out + SECTIONS[k].field);
                d->data = s->data;
                d->len = s->size;
            }
    }
    return total;
}

/* ---- range order ------------------------------------------------------------------------ */

int debuginfo_range_order(const debuginfo_range *x, const debuginfo_range *y)
{
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* outer first */
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return x->scope < y->scope ? -1 : x->scope > y->scope;
}

static int cmp_range_order(const void *a, const void *b)
{
    return debuginfo_range_order(a, b);
}

DEFINE_RADIX_SORT(sort_ranges_by_start, debuginfo_range, start)

void debuginfo_sort_ranges(debuginfo_range *r, size_t n)
{
    /* by start, then each run of equal starts by the rest: runs are short */
    sort_ranges_by_start(r, n);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && r[j].start == r[i].start; j++)
            ;
        if (j - i > 1)
            qsort(r + i, j - i, sizeof *r, cmp_range_order);
    }
}

/* ---- per-thread worker ------------------------------------------------------------------ */

typedef struct {
    uint64_t key;   /* DIE offset + 1; 0 = empty */
    uint32_t gen;   /* unit generation the entry belongs to (older = empty) */
    uint32_t name;  /* resolved string id */
    bool linkage;   /* the name came from a linkage name */
    uint64_t name_die; /* without a linkage name: the DIE whose DW_AT_name it is */
} name_slot;

/* A namespace or type DIE of the unit being walked, for scope-qualified names: its
 * children span [start, end) of .debug_info. Recorded in pre-order, so by start. */
typedef struct {
    uint64_t start, end;
    int32_t parent;   /* the enclosing one, -1 = none */
    uint16_t tag;
    const char *name; /* DW_AT_name, NULL if anonymous (into the mapped section) */
} container;

/* A scope of the unit being walked that DW_AT_name alone names, to qualify once the unit's
 * namespaces and types are all known (a reference may point forward). */
typedef struct {
    uint32_t scope;
    uint64_t name_die;
} pending_name;

typedef uint64_t pc_range[2];

/* Addresses [start, end) that belong to one unit (unit_owners). */
typedef struct {
    uint64_t start, end;
    size_t unit; /* index in the unit list */
} unit_span;

typedef struct {
    /* input, shared read-only by all workers */
    const die_sections *secs;
    const die_unit *units;      /* every unit in .debug_info, by offset */
    size_t nunits;
    const unit_span *owned;     /* the addresses each unit owns (unit_owners), by unit */
    const size_t *owned_first;  /* unit i owns owned[owned_first[i] .. owned_first[i + 1]) */
    unsigned tid, nthreads;
    /* output, merged by debuginfo_load */
    strtab strings;
    debuginfo_scope *scopes;
    size_t nscopes, cap_scopes;
    debuginfo_range *ranges;
    size_t nranges, cap_ranges;
    debuginfo_row *rows;
    size_t nrows, cap_rows;
    uint64_t last_addr;         /* address of the last row the line program gave (on_row) */
    uint32_t cus;
    debuginfo_warnings warn;    /* what this worker skipped */
    double cpu_ms;              /* CPU time the worker spent (STACKSIFT_PHASES) */
    /* private state */
    die_unit *my_units;         /* copies with bases + abbrevs, made on first use */
    uint8_t *unit_state;        /* UNIT_* per unit */
    const char **unit_bad;      /* why a UNIT_BAD unit could not be loaded */
    const char *fail;           /* the walk of the current unit met this (static) problem */
    uint64_t fail_at;           /* ... at this .debug_info offset */
    size_t mark_scopes, mark_ranges; /* the tables before the current top-level function */
    size_t unit_ranges;         /* w->nranges when the current unit's walk began */
    size_t range_budget;        /* the most ranges that unit may add (unit_range_budget) */
    die_abbrev_table *tables;   /* abbreviation tables loaded so far */
    size_t ntables;
    const die_unit *unit;       /* the unit being walked */
    size_t unit_index;          /* its index in units */
    uint64_t entry;             /* lowest address of the last DIE read_ranges read (unclipped) */
    pc_range *clip;             /* scratch for clipping w->tmp to the unit's addresses */
    size_t cap_clip;
    debuginfo_row *seq;         /* the line-table sequence being read, until its end row */
    size_t nseq, cap_seq;
    uint32_t *files;            /* string id per line-table file number of that unit */
    size_t nfiles;              /* file numbers 0 .. nfiles-1 (0 unused before DWARF 5) */
    buf scratch;                /* path joining */
    size_t cap_files;
    pc_range *tmp;              /* scratch for one DIE's ranges */
    size_t ntmp, cap_tmp;
    name_slot *names;           /* DIE offset -> resolved name cache, for the current unit */
    size_t nnames, cap_names;   /* cap is a power of two */
    uint32_t name_gen;          /* the current unit's generation in `names` (from 1) */
    container *conts;           /* namespaces and types of the current unit, in pre-order */
    size_t nconts, cap_conts;
    int32_t cur_cont;           /* the one the walk is inside, -1 = none */
    pending_name *pending;      /* scopes of the current unit to qualify */
    size_t npending, cap_pending;
    debuginfo_qualified *qual;  /* output: qualified names, by scope */
    size_t nqual, cap_qual;
} worker;

enum { UNIT_NEW, UNIT_READY, UNIT_BAD };

/* The walk of the current unit stops at the first problem (process_unit keeps what came
 * before it). */
static void die_fail(worker *w, uint64_t offset, const char *what)
{
    if (w->fail == NULL) {
        w->fail = what;
        w->fail_at = offset;
    }
}

/* Count one skipped part; the problem at the lowest offset is the one reported. */
static void warn_note(debuginfo_warnings *warn, uint64_t offset, const char *what)
{
    if (warn->first[0] == '\0' || offset < warn->offset) {
        warn->offset = offset;
        snprintf(warn->first, sizeof warn->first, "%s", what);
    }
}

/* The unit `i` with its abbreviations and bases, loaded once per worker; NULL when it
 * cannot be read (w->unit_bad[i] says why). */
static const die_unit *unit_get(worker *w, size_t i)
{
    if (w->unit_state[i] != UNIT_NEW)
        return w->unit_state[i] == UNIT_READY ? &w->my_units[i] : NULL;
    die_unit *u = &w->my_units[i];
    *u = w->units[i];
    if (u->bad != NULL) {
        w->unit_state[i] = UNIT_BAD;
        w->unit_bad[i] = u->bad;
        return NULL;
    }
    const die_abbrev_table *t = NULL;
    for (size_t k = 0; k < w->ntables; k++)
        if (w->tables[k].offset == u->abbrev_offset)
            t = &w->tables[k];
    if (t == NULL) {
        w->tables = xreallocarray(w->tables, w->ntables + 1, sizeof *w->tables);
        const char *msg = die_abbrev_table_load(&w->tables[w->ntables], w->secs, u->abbrev_offset);
        if (msg != NULL) {
            die_abbrev_table_free(&w->tables[w->ntables]);
            w->unit_state[i] = UNIT_BAD;
            w->unit_bad[i] = msg;
            return NULL;
        }
        t = &w->tables[w->ntables++];
        /* the table array moved: re-point the units that use it */
        for (size_t k = 0; k < w->nunits; k++)
            if (w->unit_state[k] == UNIT_READY)
                for (size_t m = 0; m < w->ntables; m++)
                    if (w->tables[m].offset == w->my_units[k].abbrev_offset)
                        w->my_units[k].abbrevs = &w->tables[m];
    }
    u->abbrevs = t;
    die_abbrev_table_size(&w->tables[t - w->tables], u);
    const char *msg = die_unit_bases(u, w->secs);
    if (msg != NULL) {
        w->unit_state[i] = UNIT_BAD;
        w->unit_bad[i] = msg;
        return NULL;
    }
    w->unit_state[i] = UNIT_READY;
    return u;
}

/* The unit holding global .debug_info offset `off`, or NULL. */
static const die_unit *unit_for(worker *w, uint64_t off)
{
    if (w->unit != NULL && off >= w->unit->die_offset && off < w->unit->end)
        return w->unit;
    size_t lo = 0, hi = w->nunits;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->units[mid].end <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == w->nunits || off < w->units[lo].die_offset)
        return NULL;
    return unit_get(w, lo);
}

/* ---- names ------------------------------------------------------------------------------ */

/* The name cache holds the DIEs of one unit (references rarely leave their unit): it stays
 * small enough for the cache, and a new unit empties it by bumping the generation. */
static bool name_slot_live(const worker *w, const name_slot *s)
{
    return s->key != 0 && s->gen == w->name_gen;
}

static name_slot *name_cache_find(worker *w, uint64_t off)
{
    if (w->cap_names == 0)
        return NULL;
    uint64_t key = off + 1;
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (w->cap_names - 1);
    while (name_slot_live(w, &w->names[j])) {
        if (w->names[j].key == key)
            return &w->names[j];
        j = (j + 1) & (w->cap_names - 1);
    }
    return NULL;
}

static void name_cache_put(worker *w, uint64_t off, uint32_t name, bool linkage, uint64_t name_die)
{
    if ((w->nnames + 1) * 2 > w->cap_names) {
        size_t cap = w->cap_names ? w->cap_names * 2 : 4096;
        name_slot *old = w->names;
        size_t old_cap = w->cap_names;
        w->names = xcalloc(cap, sizeof *w->names);
        w->cap_names = cap;
        w->nnames = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (name_slot_live(w, &old[i]))
                name_cache_put(w, old[i].key - 1, old[i].name, old[i].linkage, old[i].name_die);
        free(old);
    }
    uint64_t key = off + 1;
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (w->cap_names - 1);
    while (name_slot_live(w, &w->names[j]) && w->names[j].key != key)
        j = (j + 1) & (w->cap_names - 1);
    if (!name_slot_live(w, &w->names[j]))
        w->nnames++;
    w->names[j] = (name_slot){key, w->name_gen, name, linkage, name_die};
}

/* A new unit: the name cache starts empty. */
static void name_cache_clear(worker *w)
{
    w->nnames = 0;
    if (++w->name_gen == 0) { /* wrapped: old generations could look live again */
        if (w->cap_names > 0)
            memset(w->names, 0, w->cap_names * sizeof *w->names);
        w->name_gen = 1;
    }
}

/* Linkage names are kept raw (`_Z...`, `$s...`): the symcache stores them so, and lookups
 * derive the display form (common/demangle), so nothing is demangled while reading. */
static uint32_t intern_linkage(worker *w, const char *linkage)
{
    return strtab_intern(&w->strings, linkage, strlen(linkage));
}

static bool resolve_offset(worker *w, uint64_t off, int hops, uint32_t *name, bool *linkage, uint64_t *name_die);

/* The name llvm-symbolizer --functions=linkage gives DIE `d`: a linkage name anywhere along
 * its abstract_origin/specification chain (raw, as --no-demangle prints it), else the first
 * DW_AT_name on it; *name_die gets the offset of the DIE that DW_AT_name is from (its
 * parents qualify it: qualify_pending). */
static bool resolve_die(worker *w, const die_info *d, int hops, uint32_t *name, bool *linkage, uint64_t *name_die)
{
    if (d->linkage != NULL) {
        *name = intern_linkage(w, d->linkage);
        *linkage = true;
        *name_die = d->offset;
        return true;
    }
    uint32_t ref_name;
    bool ref_linkage;
    uint64_t ref = d->has_origin ? d->origin : d->spec, ref_die;
    if (hops < MAX_NAME_HOPS && (d->has_origin || d->has_spec) &&
        resolve_offset(w, ref, hops + 1, &ref_name, &ref_linkage, &ref_die) && (ref_linkage || d->name == NULL)) {
        *name = ref_name;
        *linkage = ref_linkage;
        *name_die = ref_die;
        return true;
    }
    if (d->name != NULL) {
        *name = strtab_intern(&w->strings, d->name, strlen(d->name));
        *linkage = false;
        *name_die = d->offset;
        return true;
    }
    return false;
}

static bool resolve_offset(worker *w, uint64_t off, int hops, uint32_t *name, bool *linkage, uint64_t *name_die)
{
    name_slot *hit = name_cache_find(w, off);
    if (hit != NULL) {
        *name = hit->name;
        *linkage = hit->linkage;
        *name_die = hit->name_die;
        return hit->name != STRTAB_NONE;
    }
    const die_unit *u = unit_for(w, off);
    die_info d;
    bool ok = false;
    if (u != NULL && die_read(&d, w->secs, u, off) == NULL && d.tag != 0) {
        const die_unit *saved = w->unit;
        w->unit = u; /* strings of a DIE in another unit use that unit's bases */
        ok = resolve_die(w, &d, hops, name, linkage, name_die);
        w->unit = saved;
    }
    name_cache_put(w, off, ok ? *name : STRTAB_NONE, ok && *linkage, ok ? *name_die : 0);
    return ok;
}

/* ---- scope-qualified names ---------------------------------------------------------------- */

/* Remember that scope `scope`, named by the DW_AT_name of DIE `name_die` (no linkage name),
 * is to be qualified once the unit is walked. */
static void pending_add(worker *w, uint32_t scope, uint64_t name_die)
{
    if (w->npending == w->cap_pending) {
        w->cap_pending = w->cap_pending ? w->cap_pending * 2 : 256;
        w->pending = xreallocarray(w->pending, w->cap_pending, sizeof *w->pending);
    }
    w->pending[w->npending++] = (pending_name){scope, name_die};
}

/* The innermost recorded namespace or type whose children hold `off`, or -1. */
static int32_t container_of(const worker *w, uint64_t off)
{
    size_t lo = 0, hi = w->nconts; /* the last container starting before off */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->conts[mid].start <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t c = (int32_t)lo - 1;
    while (c >= 0 && !(off >= w->conts[c].start && off < w->conts[c].end))
        c = w->conts[c].parent;
    return c;
}

/* How llvm prints a namespace or type without a name. */
static const char *anonymous_name(uint16_t tag)
{
    switch (tag) {
    case DW_TAG_namespace: return "(anonymous namespace)";
    case DW_TAG_class_type: return "(anonymous class)";
    case DW_TAG_union_type: return "(anonymous union)";
    case DW_TAG_enumeration_type: return "(anonymous enum)";
    default: return "(anonymous struct)";
    }
}

/* Qualify the current unit's pending scopes (the unit's walk is over, every namespace and
 * type of it recorded): debuginfo_qualified in debuginfo.h says how. A name DIE in another
 * unit (a cross-unit reference) stays unqualified. */
static void qualify_pending(worker *w)
{
    const die_unit *u = w->unit;
    const char *sep = u->language == DW_LANG_Swift ? "." : "::";
    buf q = {0};
    for (size_t i = 0; i < w->npending; i++) {
        const pending_name *p = &w->pending[i];
        if (p->scope >= w->nscopes || p->name_die < u->die_offset || p->name_die >= u->end)
            continue; /* dropped with a function that did not parse, or another unit's */
        int32_t chain[MAX_SCOPE_DEPTH];
        size_t depth = 0;
        for (int32_t c = container_of(w, p->name_die); c >= 0 && depth < MAX_SCOPE_DEPTH; c = w->conts[c].parent)
            if (w->conts[c].tag != DW_TAG_module) /* see debuginfo_qualified */
                chain[depth++] = c;
        if (depth == 0)
            continue;
        uint32_t name = w->scopes[p->scope].name;
        const char *plain = strtab_get(&w->strings, name);
        /* an Objective-C method names its class itself ("-[Cart add:]", declared in the
         * class's DW_TAG_structure_type), and so does a block of one */
        if (strstr(plain, "-[") != NULL || strstr(plain, "+[") != NULL)
            continue;
        q.len = 0;
        while (depth > 0) {
            const container *c = &w->conts[chain[--depth]];
            const char *part = c->name != NULL && c->name[0] != '\0' ? c->name : anonymous_name(c->tag);
            buf_append(&q, part, strlen(part));
            buf_append(&q, sep, strlen(sep));
        }
        buf_append(&q, strtab_get(&w->strings, name), strtab_len(&w->strings, name));
        uint32_t id = strtab_intern(&w->strings, (const char *)q.data, q.len);
        if (id == STRTAB_NONE || id == name)
            continue;
        if (w->nqual == w->cap_qual) {
            w->cap_qual = w->cap_qual ? w->cap_qual * 2 : 256;
            w->qual = xreallocarray(w->qual, w->cap_qual, sizeof *w->qual);
        }
        w->qual[w->nqual++] = (debuginfo_qualified){p->scope, id};
    }
    buf_reset(&q);
    w->npending = 0;
    w->nconts = 0;
}

/* ---- the DIE walk ----------------------------------------------------------------------- */

/* DW_AT_low_pc/high_pc or DW_AT_ranges of `d` into w->tmp (DWARF 5 section 2.17). A range
 * list that does not parse leaves the DIE out with its subtree (counted as a function). */
static bool read_ranges_raw(worker *w, const die_unit *u, const die_info *d)
{
    w->ntmp = 0;
    for (;;) {
        long n = die_ranges(w->tmp, w->cap_tmp, w->secs, u, d);
        if (n < 0) {
            w->warn.functions++;
            warn_note(&w->warn, d->offset, "malformed address range list");
            return false;
        }
        if ((size_t)n <= w->cap_tmp) {
            w->ntmp = (size_t)n;
            return true;
        }
        w->cap_tmp = (size_t)n;
        w->tmp = xreallocarray(w->tmp, w->cap_tmp, sizeof *w->tmp);
    }
}

/* The spans of owned[0..n) that overlap [lo, hi): the first index, the first span ending
 * after lo. */
DEFINE_COUNT_AT_MOST(span_first, unit_span, end)

/* Cut w->tmp down to the addresses the current unit owns. llvm-symbolizer looks an address
 * up in the one unit that owns it (.debug_aranges, else the unit DIE's ranges: unit_owners),
 * so a function's bytes outside its unit's ranges are not its own there. */
static bool clip_to_unit(worker *w)
{
    const unit_span *o = w->owned + w->owned_first[w->unit_index];
    size_t no = w->owned_first[w->unit_index + 1] - w->owned_first[w->unit_index], n = 0;
    size_t room = w->range_budget - (w->nranges - w->unit_ranges);
    for (size_t i = 0; i < w->ntmp; i++) {
        uint64_t lo = w->tmp[i][0], hi = w->tmp[i][1];
        for (size_t k = span_first(o, no, lo); k < no && o[k].start < hi; k++) {
            if (n == room)
                return false;
            if (n == w->cap_clip) {
                w->cap_clip = w->cap_clip ? w->cap_clip * 2 : 64;
                w->clip = xreallocarray(w->clip, w->cap_clip, sizeof *w->clip);
            }
            w->clip[n][0] = lo > o[k].start ? lo : o[k].start;
            w->clip[n][1] = hi < o[k].end ? hi : o[k].end;
            n++;
        }
    }
    pc_range *t = w->tmp;
    size_t cap = w->cap_tmp;
    w->tmp = w->clip;
    w->cap_tmp = w->cap_clip;
    w->clip = t;
    w->cap_clip = cap;
    w->ntmp = n;
    return true;
}

/* DW_AT_low_pc/high_pc or DW_AT_ranges of `d` into w->tmp (DWARF 5 section 2.17), cut to
 * the addresses its unit owns; w->entry gets the lowest address before the cut. A range list
 * that does not parse leaves the DIE out with its subtree (counted as a function). */
static bool read_ranges(worker *w, const die_info *d)
{
    if (!read_ranges_raw(w, w->unit, d))
        return false;
    w->entry = UINT64_MAX;
    for (size_t i = 0; i < w->ntmp; i++)
        if (w->tmp[i][0] < w->entry)
            w->entry = w->tmp[i][0];
    if (!clip_to_unit(w)) {
        die_fail(w, d->offset, "the unit's functions name more address ranges than its size "
                               "allows (range lists shared by many DIEs)");
        return false;
    }
    return true;
}

/* The most address ranges the functions and inlinees of unit `u` may add: RANGES_PER_BYTE
 * per byte of the unit. Each DIE names its ranges in a few bytes and compilers give every
 * DIE a list of its own, so real units stay far below it (the densest unit of the real dSYMs
 * we test adds one range per 4 bytes); a crafted unit whose DIEs all name one long
 * list would otherwise grow the tables as DIEs x entries, without bound. */
enum { RANGES_PER_BYTE = 4, RANGES_SLACK = 64 };
static size_t unit_range_budget(const die_unit *u)
{
    uint64_t size = u->end > u->offset ? u->end - u->offset : 0;
    if (size > SIZE_MAX / RANGES_PER_BYTE - RANGES_SLACK)
        return SIZE_MAX;
    return (size_t)size * RANGES_PER_BYTE + RANGES_SLACK;
}

static uint32_t add_scope(worker *w, uint32_t name, uint32_t parent, uint32_t depth)
{
    if (w->nscopes == w->cap_scopes) {
        w->cap_scopes = w->cap_scopes ? w->cap_scopes * 2 : 1024;
        w->scopes = xreallocarray(w->scopes, w->cap_scopes, sizeof *w->scopes);
    }
    uint64_t entry = w->entry;
    uint32_t id = (uint32_t)w->nscopes++;
    w->scopes[id] = (debuginfo_scope){name, parent, STRTAB_NONE, 0, depth, 0, entry};
    if (w->nranges + w->ntmp > w->cap_ranges) {
        while (w->nranges + w->ntmp > w->cap_ranges)
            w->cap_ranges = w->cap_ranges ? w->cap_ranges * 2 : 1024;
        w->ranges = xreallocarray(w->ranges, w->cap_ranges, sizeof *w->ranges);
    }
    for (size_t i = 0; i < w->ntmp; i++)
        w->ranges[w->nranges++] = (debuginfo_range){w->tmp[i][0], w->tmp[i][1], id, depth};
    return id;
}

static uint32_t file_id(worker *w, uint64_t index)
{
    return index < w->nfiles ? w->files[index] : STRTAB_NONE;
}

/* The DIEs the walk reads in full; of every other one it needs only the way past it. */
#define TAG_BIT(t) (1ull << (t))
static const uint64_t WALK_TAGS = TAG_BIT(DW_TAG_subprogram) | TAG_BIT(DW_TAG_inlined_subroutine) |
    TAG_BIT(DW_TAG_lexical_block) | TAG_BIT(DW_TAG_namespace) | TAG_BIT(DW_TAG_module) |
    TAG_BIT(DW_TAG_structure_type) | TAG_BIT(DW_TAG_class_type) | TAG_BIT(DW_TAG_union_type) |
    TAG_BIT(DW_TAG_enumeration_type) | TAG_BIT(DW_TAG_interface_type);

/* Walk the children starting at `pos` (a sibling list ended by a null entry); *end gets the
 * offset after that null entry. `scope` is the enclosing function or inlinee (NONE at
 * unit or namespace level). */
static void walk(worker *w, uint64_t pos, uint32_t scope, uint32_t depth, unsigned nest, uint64_t *end)
{
    const die_unit *u = w->unit;
    while (w->fail == NULL) {
        if (scope == DEBUGINFO_NONE) { /* between functions: a failure from here on drops
                                          only the function it happens in */
            w->mark_scopes = w->nscopes;
            w->mark_ranges = w->nranges;
        }
        die_info d;
        const char *msg = die_read_tags(&d, w->secs, u, pos, WALK_TAGS);
        if (msg != NULL) {
            die_fail(w, pos, msg);
            return;
        }
        if (d.tag == 0) {
            *end = d.next;
            return;
        }
        bool descend = false;
        uint32_t child_scope = scope, child_depth = depth;
        int32_t cont = -1; /* a namespace or type recorded for qualified names */
        switch (d.tag) {
        case DW_TAG_subprogram:
            if (read_ranges(w, &d) && w->ntmp > 0) {
                uint32_t name = STRTAB_NONE;
                bool linkage;
                uint64_t name_die = 0;
                if (!resolve_die(w, &d, 0, &name, &linkage, &name_die)) {
                    name = STRTAB_NONE;
                    linkage = false;
                }
                child_scope = add_scope(w, name, DEBUGINFO_NONE, 0);
                if (!linkage) /* named by the symbol table if it has a symbol at the entry */
                    w->scopes[child_scope].flags |= DEBUGINFO_SCOPE_SYMTAB_NAME;
                if (!linkage && name != STRTAB_NONE)
                    pending_add(w, child_scope, name_die);
                child_depth = 0;
                descend = true;
            }
            /* else a declaration or an abstract instance: no code of its own, and its
             * children (parameters, abstract inlinees and blocks) have none either */
            break;
        case DW_TAG_inlined_subroutine:
            if (scope == DEBUGINFO_NONE)
                break;
            if (read_ranges(w, &d) && w->ntmp > 0) {
                uint32_t name = STRTAB_NONE;
                bool linkage = false;
                uint64_t name_die = 0;
                if (!resolve_die(w, &d, 0, &name, &linkage, &name_die))
                    name = STRTAB_NONE;
                child_scope = add_scope(w, name, scope, depth + 1);
                if (!linkage && name != STRTAB_NONE)
                    pending_add(w, child_scope, name_die);
                child_depth = depth + 1;
                if (d.has_call_file)
                    w->scopes[child_scope].call_file = file_id(w, d.call_file);
                if (d.has_call_line)
                    w->scopes[child_scope].call_line = d.call_line >= UINT32_MAX ? 0 : (uint32_t)d.call_line;
                descend = true;
            }
            break;
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_structure_type:
        case DW_TAG_class_type:
        case DW_TAG_union_type:
        case DW_TAG_enumeration_type:
        case DW_TAG_interface_type:
            /* Functions live wherever the producer nests them: Swift puts methods (and the
             * @objc thunks that inline them) in DW_TAG_module > DW_TAG_structure_type, extensions
             * and enums alike; llvm-symbolizer finds a subprogram under any parent and climbs
             * through any parent to the enclosing function, so the scope passes through. */
            if (d.children && nest < MAX_SCOPE_DEPTH && w->nconts < INT32_MAX) {
                /* its children's names are qualified by it (qualify_pending); the end is
                 * known once they are walked */
                if (w->nconts == w->cap_conts) {
                    w->cap_conts = w->cap_conts ? w->cap_conts * 2 : 256;
                    w->conts = xreallocarray(w->conts, w->cap_conts, sizeof *w->conts);
                }
                cont = (int32_t)w->nconts++;
                w->conts[cont] = (container){d.next, UINT64_MAX, w->cur_cont, d.tag, d.name};
            }
            descend = true;
            break;
        case DW_TAG_lexical_block:
            descend = true;
            break;
        default:
            break; /* variables, parameters, typedefs, call sites: subtree skipped */
        }
        pos = d.next;
        if (!d.children)
            continue;
        if (descend && nest < MAX_SCOPE_DEPTH) {
            int32_t outer = w->cur_cont;
            if (cont >= 0)
                w->cur_cont = cont;
            walk(w, d.next, child_scope, child_depth, nest + 1, &pos);
            w->cur_cont = outer;
            if (cont >= 0)
                w->conts[cont].end = pos;
        } else if (d.has_sibling && d.sibling > d.next && d.sibling < u->end) {
            pos = d.sibling;
        } else {
            msg = die_skip_children(&pos, w->secs, u, d.next);
            if (msg != NULL) {
                die_fail(w, d.next, msg);
                return;
            }
        }
    }
}

/* ---- line tables ------------------------------------------------------------------------ */

/* Join path components the way llvm::sys::path::append does (POSIX style). */
static void path_append(buf *b, const char *component)
{
    if (component == NULL)
        return;
    if (b->len > 0 && b->data[b->len - 1] == '/') {
        while (*component == '/')
            component++;
        buf_append_str(b, component);
        return;
    }
    if (b->len > 0 && component[0] != '/')
        buf_putc(b, '/');
    buf_append_str(b, component);
}

/* File entry -> path, as llvm's Prologue::getFileNameByIndex with AbsoluteFilePath. */
static uint32_t file_path(worker *w, const char *name, const char *dir, bool dir_is_comp_dir,
                          const char *comp_dir, buf *scratch)
{
    if (name == NULL)
        return STRTAB_NONE;
    if (name[0] == '/')
        return strtab_intern(&w->strings, name, strlen(name));
    scratch->len = 0;
    if (comp_dir != NULL && comp_dir[0] != '\0' && !(dir != NULL && dir[0] == '/') && !dir_is_comp_dir)
        path_append(scratch, comp_dir);
    if (dir != NULL && dir[0] != '\0')
        path_append(scratch, dir);
    path_append(scratch, name);
    return strtab_intern(&w->strings, (const char *)scratch->data, scratch->len);
}

static void push_row(debuginfo_row **rows, size_t *n, size_t *cap, uint64_t addr, uint32_t file, uint32_t line)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4096;
        *rows = xreallocarray(*rows, *cap, sizeof **rows);
    }
    (*rows)[(*n)++] = (debuginfo_row){addr, file, line};
}

static void on_file(void *ctx, uint64_t index, const char *name, const char *dir, bool dir_is_comp_dir)
{
    worker *w = ctx;
    if (index >= w->cap_files) {
        size_t cap = w->cap_files ? w->cap_files : 64;
        while (cap <= index)
            cap *= 2;
        w->files = xreallocarray(w->files, cap, sizeof *w->files);
        w->cap_files = cap;
    }
    for (size_t i = w->nfiles; i < index; i++)
        w->files[i] = STRTAB_NONE;
    w->files[index] = file_path(w, name, dir, dir_is_comp_dir, w->unit->comp_dir, &w->scratch);
    if (index >= w->nfiles)
        w->nfiles = index + 1;
}

/* Rows that cannot change what the symcache says are not stored (clang emits several rows
 * per line: columns, is_stmt, prologue_end). The builder reads rows as [addr, next addr)
 * segments, a row followed by one at the same address covering nothing, and joins
 * neighbouring segments at the same file and line; so a row at the address of the row
 * before it replaces that row, and a row at a higher address with the same file and line
 * as the row before it is dropped. The builder discards a sequence whose addresses go down:
 * when one does after a dropped row, that row is stored again first so the fall shows. */
void debuginfo_row_add(debuginfo_row **rows, size_t *n, size_t *cap, uint64_t *last_addr, uint64_t addr,
                       uint32_t file, uint32_t line)
{
    bool end = line == DEBUGINFO_END_SEQUENCE;
    if (end)
        file = STRTAB_NONE;
    debuginfo_row *p = *n > 0 ? &(*rows)[*n - 1] : NULL;
    if (p == NULL || p->line == DEBUGINFO_END_SEQUENCE) {
        push_row(rows, n, cap, addr, file, line); /* a sequence starts */
    } else if (addr < *last_addr) {
        if (p->addr != *last_addr)
            push_row(rows, n, cap, *last_addr, p->file, p->line);
        push_row(rows, n, cap, addr, file, line);
    } else if (!end && addr == p->addr) {
        p->file = file;
        p->line = line;
    } else if (end || file != p->file || line != p->line) {
        push_row(rows, n, cap, addr, file, line);
    }
    *last_addr = addr;
}

static void seq_emit(worker *w, uint64_t addr, uint32_t file, uint32_t line)
{
    debuginfo_row_add(&w->rows, &w->nrows, &w->cap_rows, &w->last_addr, addr, file, line);
}

/* Store the sequence w->seq[0..nseq) ending at `end`, cut to the addresses the unit owns
 * (llvm-symbolizer reads an address's rows from the line table of the unit that owns it:
 * unit_owners). Each owned part becomes a sequence of its own, starting with the row that
 * covers its first address (of several rows at one address the last, as the builder reads
 * them). A sequence whose addresses fall is stored whole: the builder discards it. */
static void seq_flush(worker *w, uint64_t end)
{
    const debuginfo_row *r = w->seq;
    size_t n = w->nseq;
    w->nseq = 0;
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = r[i].addr >= r[i - 1].addr;
    sorted = sorted && (n == 0 || end >= r[n - 1].addr);
    if (!sorted) {
        for (size_t i = 0; i < n; i++)
            seq_emit(w, r[i].addr, r[i].file, r[i].line);
        seq_emit(w, end, STRTAB_NONE, DEBUGINFO_END_SEQUENCE);
        return;
    }
    if (n == 0)
        return; /* an end row alone covers nothing */
    const unit_span *o = w->owned + w->owned_first[w->unit_index];
    size_t no = w->owned_first[w->unit_index + 1] - w->owned_first[w->unit_index];
    for (size_t k = span_first(o, no, r[0].addr); k < no && o[k].start < end; k++) {
        uint64_t lo = r[0].addr > o[k].start ? r[0].addr : o[k].start;
        uint64_t hi = end < o[k].end ? end : o[k].end;
        if (hi <= lo)
            continue;
        size_t a = 0, b = n; /* the last row at or before lo */
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (r[mid].addr <= lo)
                a = mid + 1;
            else
                b = mid;
        }
        size_t i = a - 1;
        seq_emit(w, lo, r[i].file, r[i].line);
        for (i++; i < n && r[i].addr < hi; i++)
            seq_emit(w, r[i].addr, r[i].file, r[i].line);
        seq_emit(w, hi, STRTAB_NONE, DEBUGINFO_END_SEQUENCE);
    }
}

static void on_row(void *ctx, uint64_t addr, uint64_t file, uint64_t line, bool end)
{
    worker *w = ctx;
    if (end) {
        seq_flush(w, addr);
        return;
    }
    if (w->nseq == w->cap_seq) {
        w->cap_seq = w->cap_seq ? w->cap_seq * 2 : 1024;
        w->seq = xreallocarray(w->seq, w->cap_seq, sizeof *w->seq);
    }
    w->seq[w->nseq++] = (debuginfo_row){addr, file_id(w, file), line >= DEBUGINFO_END_SEQUENCE ? 0 : (uint32_t)line};
}

/* One unit: its line program, then its DIE tree. Whatever does not parse is left out as
 * the smallest part that holds it and counted in w->warn: the unit (header, abbreviations,
 * unit DIE), the line rows after the last complete sequence, the top-level function a DIE
 * that does not parse belongs to (with the unit's DIEs after it: there is no way past). */
static void process_unit(worker *w, size_t index)
{
    const die_unit *u = unit_get(w, index);
    if (u == NULL) {
        w->warn.units++;
        warn_note(&w->warn, w->units[index].offset, w->unit_bad[index]);
        return;
    }
    if (u->unit_type != DW_UT_compile && u->unit_type != DW_UT_partial)
        return; /* type units and skeletons describe no code of their own */
    w->unit = u;
    w->unit_index = index;
    w->cus++;
    name_cache_clear(w);
    w->nfiles = 0;
    if (u->has_stmt_list) {
        size_t first_row = w->nrows;
        die_line_sink sink = {w, on_file, on_row};
        w->nseq = 0;
        const char *msg = die_line_program(w->secs, u, u->stmt_list, &sink);
        if (msg == NULL && w->nseq > 0)
            msg = "line program ends inside a sequence";
        w->nseq = 0; /* an unterminated sequence is never stored */
        if (msg != NULL) {
            /* llvm keeps only terminated sequences too; rows of the next unit must not
             * continue this one */
            size_t keep = w->nrows;
            while (keep > first_row && w->rows[keep - 1].line != DEBUGINFO_END_SEQUENCE)
                keep--;
            w->nrows = keep;
            w->warn.sequences++;
            warn_note(&w->warn, u->offset, msg);
        }
    }
    /* the unit DIE's children */
    die_info d;
    const char *msg = die_read(&d, w->secs, u, u->die_offset);
    if (msg != NULL) {
        w->warn.units++;
        warn_note(&w->warn, u->die_offset, msg);
        w->unit = NULL;
        return;
    }
    if (d.tag != 0 && d.children) {
        uint64_t end;
        w->mark_scopes = w->nscopes;
        w->mark_ranges = w->nranges;
        w->unit_ranges = w->nranges;
        w->range_budget = unit_range_budget(u);
        w->fail = NULL;
        w->nconts = 0;
        w->npending = 0;
        w->cur_cont = -1;
        walk(w, d.next, DEBUGINFO_NONE, 0, 0, &end);
        if (w->fail != NULL) {
            w->nscopes = w->mark_scopes;
            w->nranges = w->mark_ranges;
            w->warn.functions++;
            warn_note(&w->warn, w->fail_at, w->fail);
            w->fail = NULL;
        }
        qualify_pending(w);
    }
    w->unit = NULL;
}

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *worker_run(void *arg)
{
    worker *w = arg;
    w->cpu_ms = -thread_cpu_ms();
    w->my_units = xcalloc(w->nunits ? w->nunits : 1, sizeof *w->my_units);
    w->unit_state = xcalloc(w->nunits ? w->nunits : 1, sizeof *w->unit_state);
    w->unit_bad = xcalloc(w->nunits ? w->nunits : 1, sizeof *w->unit_bad);
    buf_init(&w->scratch);
    for (size_t i = w->tid; i < w->nunits; i += w->nthreads)
        process_unit(w, i);
    /* sorted here, in parallel; debuginfo_load merges the sorted runs */
    debuginfo_sort_ranges(w->ranges, w->nranges);
    w->cpu_ms += thread_cpu_ms();
    return NULL;
}

/* ---- symbol table ----------------------------------------------------------------------- */

#define N_STAB 0xe0
#define N_TYPE 0x0e
#define N_SECT 0x0e
#define S_ATTR_PURE_INSTRUCTIONS 0x80000000u
#define S_ATTR_SOME_INSTRUCTIONS 0x00000400u

static int cmp_range_start(const void *a, const void *b)
{
    const debuginfo_range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->scope < y->scope ? -1 : x->scope > y->scope;
}

/* Functions from LC_SYMTAB: N_SECT entries in sections holding instructions, each running to
 * the next symbol of its section or the section's end (Mach-O has no symbol sizes). */
static void load_symbols(debuginfo *d, const macho_image *img)
{
    size_t cap = 0;
    for (uint32_t i = 0; i < img->nsyms; i++) {
        macho_symbol sym;
        if (!macho_symbol_get(&sym, img, i))
            continue;
        if ((sym.type & N_STAB) != 0 || (sym.type & N_TYPE) != N_SECT || sym.sect == 0 ||
            sym.sect > img->nsections || sym.name[0] == '\0')
            continue;
        const macho_section *s = &img->sections[sym.sect - 1];
        if ((s->flags & (S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS)) == 0)
            continue;
        /* llvm-symbolizer keeps symbols before their section's start too (__mh_execute_header
         * covers the Mach-O header); one past its end has nothing to cover */
        if (sym.value >= s->addr + s->size)
            continue;
        /* Mach-O C symbols carry a leading underscore the source name does not have; the name
         * stays mangled here (most symbols are covered by DWARF and never shown) */
        const char *raw = sym.name[0] == '_' ? sym.name + 1 : sym.name;
        if (d->nsymbols == cap) {
            cap = cap ? cap * 2 : 256;
            d->symbols = xreallocarray(d->symbols, cap, sizeof *d->symbols);
        }
        uint32_t sid = strtab_add(&d->strings, raw, strlen(raw)); /* the builder dedupes */
        d->symbols[d->nsymbols++] = (debuginfo_range){sym.value, s->addr + s->size, sid, sym.sect};
    }
    if (d->nsymbols > 1)
        qsort(d->symbols, d->nsymbols, sizeof *d->symbols, cmp_range_start);
    /* One symbol per address; each ends where the next one in its section starts. Of
     * several names at one address (aliases, functions folded into one body, a local label
     * beside a global) the last in symbol-table order stays, as in llvm-symbolizer, which
     * sorts its symbols stably by (address, size), sizes at one address being equal, and
     * keeps the last of each address. String ids grow in symbol-table order, and the sort
     * above puts the last one last. */
    size_t n = 0;
    for (size_t i = 0; i < d->nsymbols; i++) {
        if (n > 0 && d->symbols[n - 1].start == d->symbols[i].start) {
            d->symbols[n - 1] = d->symbols[i];
            continue;
        }
        d->symbols[n++] = d->symbols[i];
    }
    d->nsymbols = n;
    for (size_t i = 0; i + 1 < n; i++)
        if (d->symbols[i + 1].depth == d->symbols[i].depth && d->symbols[i + 1].start < d->symbols[i].end)
            d->symbols[i].end = d->symbols[i + 1].start;
    for (size_t i = 0; i < n; i++)
        d->symbols[i].depth = 0;
}

/* A concrete function whose DWARF has no linkage name (C, Objective-C, a C++ method of
 * -dwarf-linkage-names=Abstract, Swift without linkage names, release builds of Apple LLVM 8)
 * takes the name of the symbol at its entry address, as llvm-symbolizer --functions=linkage
 * names the outermost frame from the symbol table: `__copy_helper_block_.98` where DWARF says
 * `__copy_helper_block_`, `_ZNK2ns6Widget6UpdateE...` where it says `Update`. Functions with
 * no symbol there keep DW_AT_name; the flag is cleared on those that took a symbol's name. */
static void name_from_symbols(debuginfo *d)
{
    for (uint32_t i = 0; i < d->nscopes; i++) {
        debuginfo_scope *s = &d->scopes[i];
        if (!(s->flags & DEBUGINFO_SCOPE_SYMTAB_NAME))
            continue;
        size_t lo = 0, hi = d->nsymbols;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (d->symbols[mid].start < s->entry)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < d->nsymbols && d->symbols[lo].start == s->entry)
            s->name = d->symbols[lo].scope;
        else
            s->flags &= ~DEBUGINFO_SCOPE_SYMTAB_NAME;
    }
    /* a symbol's name is qualified as its linkage name says: the DWARF one is dropped */
    size_t keep = 0;
    for (size_t i = 0; i < d->nqualified; i++)
        if (d->qualified[i].scope < d->nscopes && !(d->scopes[d->qualified[i].scope].flags & DEBUGINFO_SCOPE_SYMTAB_NAME))
            d->qualified[keep++] = d->qualified[i];
    d->nqualified = keep;
}

/* ---- merge ------------------------------------------------------------------------------ */

static uint32_t rebase(uint32_t base, uint32_t id)
{
    return id == STRTAB_NONE ? STRTAB_NONE : base + id;
}

typedef struct {
    debuginfo *d;
    worker *w;
    uint32_t sbase, base; /* w's string 0 and scope 0 in d */
} merge_job;

/* Append w's strings, then its scopes (rebased) after d's first `base` scopes. */
static void *merge_strings_scopes(void *arg)
{
    merge_job *j = arg;
    strtab_append(&j->d->strings, &j->w->strings);
    debuginfo_scope *out = j->d->scopes + j->base;
    for (size_t i = 0; i < j->w->nscopes; i++) {
        debuginfo_scope s = j->w->scopes[i];
        s.name = rebase(j->sbase, s.name);
        s.call_file = rebase(j->sbase, s.call_file);
        if (s.parent != DEBUGINFO_NONE)
            s.parent += j->base;
        out[i] = s;
    }
    return NULL;
}

/* Append worker `w`'s tables to `d`, which has room for `room` more scopes, ranges and rows
 * (the totals of all workers), on two threads if `parallel`. The first worker's tables
 * become `d`'s (grown in place, not copied: they are the biggest allocations of the load).
 * Strings are appended wholesale, not re-interned: a name two workers both met is then
 * stored twice here, and the symcache builder, which writes each name once, stores it once. */
static void merge_worker(debuginfo *d, worker *w, const size_t room[3], bool parallel)
{
    if (d->nscopes == 0 && d->nranges == 0 && d->nrows == 0 && d->strings.count == 0) {
        strtab_reset(&d->strings);
        d->strings = w->strings;
        memset(&w->strings, 0, sizeof w->strings);
        free(d->scopes);
        free(d->ranges);
        free(d->rows);
        d->scopes = xreallocarray(w->scopes, room[0] + 1, sizeof *d->scopes);
        d->ranges = xreallocarray(w->ranges, room[1] + 1, sizeof *d->ranges);
        d->rows = xreallocarray(w->rows, room[2] + 1, sizeof *d->rows);
        w->scopes = NULL;
        w->ranges = NULL;
        w->rows = NULL;
        free(d->qualified);
        d->qualified = w->qual;
        d->nqualified = w->nqual;
        w->qual = NULL;
        d->nscopes = (uint32_t)w->nscopes;
        d->nranges = w->nranges;
        d->nrows = w->nrows;
        d->compile_units += w->cus;
        return;
    }
    /* strings and scopes on a second thread, ranges and rows here: disjoint memory. The
     * strings' base is known before they are appended (a table that fills up fails the load) */
    merge_job job = {d, w, (uint32_t)d->strings.count, d->nscopes};
    pthread_t tid;
    bool threaded = parallel && pthread_create(&tid, NULL, merge_strings_scopes, &job) == 0;
    if (!threaded)
        merge_strings_scopes(&job);
    uint32_t sbase = job.sbase, base = job.base;
    /* both sorted: merged from the back, in place (rebasing keeps w's order) */
    size_t i = d->nranges, j = w->nranges, k = d->nranges + w->nranges;
    while (j > 0) {
        debuginfo_range r = w->ranges[j - 1];
        r.scope += base;
        if (i > 0 && debuginfo_range_order(&d->ranges[i - 1], &r) > 0) {
            d->ranges[--k] = d->ranges[--i];
        } else {
            d->ranges[--k] = r;
            j--;
        }
    }
    d->nranges += w->nranges;
    for (size_t i = 0; i < w->nrows; i++) {
        debuginfo_row r = w->rows[i];
        r.file = rebase(sbase, r.file);
        d->rows[d->nrows++] = r;
    }
    if (threaded)
        pthread_join(tid, NULL);
    if (w->nqual > 0) {
        d->qualified = xreallocarray(d->qualified, d->nqualified + w->nqual, sizeof *d->qualified);
        for (size_t i = 0; i < w->nqual; i++)
            d->qualified[d->nqualified++] = (debuginfo_qualified){w->qual[i].scope + base,
                                                                  rebase(sbase, w->qual[i].name)};
    }
    d->nscopes += (uint32_t)w->nscopes;
    d->compile_units += w->cus;
}

static void worker_reset(worker *w)
{
    for (size_t i = 0; i < w->ntables; i++)
        die_abbrev_table_free(&w->tables[i]);
    free(w->tables);
    free(w->my_units);
    free(w->unit_state);
    free(w->unit_bad);
    buf_reset(&w->scratch);
    strtab_reset(&w->strings);
    free(w->scopes);
    free(w->ranges);
    free(w->rows);
    free(w->files);
    free(w->tmp);
    free(w->clip);
    free(w->seq);
    free(w->names);
    free(w->conts);
    free(w->pending);
    free(w->qual);
}

/* ---- which unit owns an address ----------------------------------------------------------- */

typedef struct {
    uint64_t addr;
    size_t unit;
    bool start;
} span_end;

typedef struct {
    span_end *v;
    size_t n, cap;
    const die_unit *units;
    size_t nunits;
    bool *in_aranges;       /* per unit: .debug_aranges has a set for it */
} owner_input;

static void owner_push(owner_input *in, size_t unit, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return;
    if (in->n + 2 > in->cap) {
        in->cap = in->cap ? in->cap * 2 : 256;
        in->v = xreallocarray(in->v, in->cap, sizeof *in->v);
    }
    in->v[in->n++] = (span_end){lo, unit, true};
    in->v[in->n++] = (span_end){hi, unit, false};
}

static void on_arange(void *ctx, uint64_t unit_offset, uint64_t lo, uint64_t hi)
{
    owner_input *in = ctx;
    size_t a = 0, b = in->nunits;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (in->units[mid].offset < unit_offset)
            a = mid + 1;
        else
            b = mid;
    }
    if (a == in->nunits || in->units[a].offset != unit_offset)
        return; /* a set for no unit names nothing an address could be looked up in */
    in->in_aranges[a] = true;
    owner_push(in, a, lo, hi);
}

static int cmp_span_end(const void *x, const void *y)
{
    const span_end *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int cmp_span_unit(const void *x, const void *y)
{
    const unit_span *a = x, *b = y;
    if (a->unit != b->unit)
        return a->unit < b->unit ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

/* Min-heap of unit indexes (index order is .debug_info offset order). */
static void heap_push(size_t *h, size_t *n, size_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
    size_t v = h[--(*n)], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = v;
}

/* unit_owners - which unit each address belongs to, the way llvm's DWARFDebugAranges decides
 * it (DWARF 5 section 6.1.2): the ranges of .debug_aranges for the units it has a set for, the
 * unit DIE's DW_AT_low_pc/high_pc or DW_AT_ranges for the others; where ranges of several
 * units overlap, the part continues the unit of the part before it if that unit still covers
 * it, else goes to the unit with the lowest offset. *owned (malloc'd) gets the parts sorted by
 * unit and start; unit i owns (*owned)[first[i] .. first[i + 1]), first having nunits + 1
 * entries (malloc'd). The unit DIEs are read with `pre`, a worker used only for this. */
static void unit_owners(unit_span **owned, size_t **first, worker *pre)
{
    size_t nunits = pre->nunits;
    owner_input in = {NULL, 0, 0, pre->units, nunits, xcalloc(nunits, sizeof(bool))};
    die_aranges(pre->secs, on_arange, &in);
    for (size_t i = 0; i < nunits; i++) {
        if (in.in_aranges[i])
            continue;
        const die_unit *u = unit_get(pre, i);
        die_info d;
        if (u == NULL || die_read(&d, pre->secs, u, u->die_offset) != NULL || d.tag == 0)
            continue;
        if (!read_ranges_raw(pre, u, &d))
            continue;
        for (size_t k = 0; k < pre->ntmp; k++)
            owner_push(&in, i, pre->tmp[k][0], pre->tmp[k][1]);
    }
    if (in.n > 1) /* in.v is NULL when no unit has a range */
        qsort(in.v, in.n, sizeof *in.v, cmp_span_end);
    unit_span *out = xcalloc(in.n + 1, sizeof *out); /* a part per gap between ends at most */
    size_t nout = 0;
    uint32_t *live = xcalloc(nunits, sizeof *live); /* ranges of each unit covering the sweep */
    size_t *heap = xcalloc(in.n / 2 + 1, sizeof *heap), nheap = 0;
    uint64_t prev = UINT64_MAX;
    for (size_t i = 0; i < in.n; i++) {
        const span_end *e = &in.v[i];
        while (nheap > 0 && live[heap[0]] == 0)
            heap_pop(heap, &nheap);
        if (prev < e->addr && nheap > 0) {
            if (nout > 0 && out[nout - 1].end == prev && live[out[nout - 1].unit] > 0)
                out[nout - 1].end = e->addr;
            else
                out[nout++] = (unit_span){prev, e->addr, heap[0]};
        }
        if (e->start) {
            if (live[e->unit]++ == 0)
                heap_push(heap, &nheap, e->unit);
        } else {
            live[e->unit]--;
        }
        prev = e->addr;
    }
    if (nout > 1)
        qsort(out, nout, sizeof *out, cmp_span_unit);
    size_t *f = xcalloc(nunits + 1, sizeof *f);
    for (size_t i = 0, k = 0; i <= nunits; i++) {
        while (k < nout && out[k].unit < i)
            k++;
        f[i] = k;
    }
    free(heap);
    free(live);
    free(in.v);
    free(in.in_aranges);
    *owned = out;
    *first = f;
}

err_code debuginfo_load(debuginfo *out, const macho_image *img, unsigned threads, err_info *err)
{
    phase_clock clock;
    phase_start(&clock);
    memset(out, 0, sizeof *out);
    strtab_init(&out->strings);
    die_sections secs;
    out->dwarf_bytes = load_sections(&secs, img);
    err_code rc = ERR_OK;
    die_unit *units = NULL;
    size_t nunits = 0;
    unit_span *owned = NULL;
    size_t *owned_first = NULL;
    if (secs.info.len > 0)
        die_units_scan(&units, &nunits, &secs);
    if (nunits > 0) {
        if (threads == 0) {
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            threads = n > 0 ? (unsigned)n : 1;
        }
        if (threads > 64)
            threads = 64;
        if (threads > nunits)
            threads = (unsigned)nunits;
        /* which unit owns which addresses: read first, every worker clips to it */
        worker pre = {0};
        pre.secs = &secs;
        pre.units = units;
        pre.nunits = nunits;
        pre.my_units = xcalloc(nunits, sizeof *pre.my_units);
        pre.unit_state = xcalloc(nunits, sizeof *pre.unit_state);
        pre.unit_bad = xcalloc(nunits, sizeof *pre.unit_bad);
        strtab_init(&pre.strings);
        unit_owners(&owned, &owned_first, &pre);
        worker_reset(&pre);
        phase_mark(&clock, "debuginfo.owners");
        worker *ws = xcalloc(threads, sizeof *ws);
        pthread_t *tids = xcalloc(threads, sizeof *tids);
        bool *started = xcalloc(threads, sizeof *started);
        for (unsigned i = 0; i < threads; i++) {
            ws[i].secs = &secs;
            ws[i].units = units;
            ws[i].nunits = nunits;
            ws[i].owned = owned;
            ws[i].owned_first = owned_first;
            ws[i].tid = i;
            ws[i].nthreads = threads;
            strtab_init(&ws[i].strings);
        }
        for (unsigned i = 1; i < threads; i++)
            started[i] = pthread_create(&tids[i], NULL, worker_run, &ws[i]) == 0;
        worker_run(&ws[0]);
        for (unsigned i = 1; i < threads; i++)
            if (started[i])
                pthread_join(tids[i], NULL);
            else
                worker_run(&ws[i]); /* no thread to be had: do its share here */
        phase_mark(&clock, "debuginfo.units");
        for (unsigned i = 0; clock.on && i < threads; i++)
            fprintf(stderr, "  worker %u: %u units, %.1f ms cpu\n", i, ws[i].cus, ws[i].cpu_ms);
        size_t room[3] = {0, 0, 0};
        for (unsigned i = 0; i < threads; i++) {
            room[0] += ws[i].nscopes;
            room[1] += ws[i].nranges;
            room[2] += ws[i].nrows;
        }
        for (unsigned i = 0; i < threads; i++) {
            debuginfo_warnings *wv = &ws[i].warn;
            out->warnings.units += wv->units;
            out->warnings.functions += wv->functions;
            out->warnings.sequences += wv->sequences;
            if (wv->first[0] != '\0')
                warn_note(&out->warnings, wv->offset, wv->first);
            if (rc == ERR_OK && ws[i].strings.full)
                rc = err_set(err, ERR_TOO_LARGE, "debug info names of one thread over 4 GiB");
            if (rc == ERR_OK)
                merge_worker(out, &ws[i], room, threads > 1);
            if (rc == ERR_OK && out->strings.full)
                rc = err_set(err, ERR_TOO_LARGE, "debug info names over 4 GiB");
            worker_reset(&ws[i]);
        }
        free(ws);
        free(tids);
        free(started);
        phase_mark(&clock, "debuginfo.merge");
    }
    free(units);
    free(owned);
    free(owned_first);
    if (debuginfo_warnings_count(&out->warnings) > 0 && out->nscopes == 0 && out->nrows == 0)
        out->warnings.symtab_only = true; /* nothing of the DWARF was usable */
    if (rc == ERR_OK) {
        load_symbols(out, img);
        name_from_symbols(out);
    }
    phase_mark(&clock, "debuginfo.symbols");
    if (clock.on)
        fprintf(stderr, "debuginfo: %u units, %u scopes, %zu ranges, %zu rows, %zu strings (%zu bytes), %zu symbols\n",
                out->compile_units, out->nscopes, out->nranges, out->nrows, out->strings.count,
                out->strings.bytes.len, out->nsymbols);
    if (rc == ERR_OK && out->strings.full)
        rc = err_set(err, ERR_TOO_LARGE, "debug info and symbol names over 4 GiB");
    if (rc != ERR_OK)
        debuginfo_reset(out);
    return rc;
}

void debuginfo_reset(debuginfo *d)
{
    strtab_reset(&d->strings);
    free(d->scopes);
    free(d->ranges);
    free(d->rows);
    free(d->symbols);
    free(d->qualified);
    memset(d, 0, sizeof *d);
}

uint32_t debuginfo_warnings_count(const debuginfo_warnings *w)
{
    return w->units + w->functions + w->sequences;
}

static void plural(buf *b, uint32_t n, const char *one, const char *many)
{
    if (n == 0)
        return;
    if (b->len > 0)
        buf_append_str(b, ", ");
    char num[16];
    snprintf(num, sizeof num, "%u ", n);
    buf_append_str(b, num);
    buf_append_str(b, n == 1 ? one : many);
}

void debuginfo_warnings_text(const debuginfo_warnings *w, char *out, size_t cap)
{
    if (cap == 0)
        return;
    out[0] = '\0';
    if (debuginfo_warnings_count(w) == 0)
        return;
    buf b;
    buf_init(&b);
    plural(&b, w->units, "DWARF unit", "DWARF units");
    plural(&b, w->functions, "function", "functions");
    plural(&b, w->sequences, "line program cut short", "line programs cut short");
    snprintf(out, cap, "%sskipped %.*s (first: .debug_info+0x%llx: %s)",
             w->symtab_only ? "no usable DWARF, symbol table only: " : "", (int)b.len,
             (const char *)b.data, (unsigned long long)w->offset, w->first);
    buf_reset(&b);
}
