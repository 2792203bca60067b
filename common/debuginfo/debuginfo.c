/*
 * DWARF -> scopes, ranges, line rows, with libdwarf; symbol table -> fallback symbols.
 *
 * Parallelism: each worker thread opens its own Dwarf_Debug over the same mapped sections
 * (libdwarf instances share nothing) and takes every n-th compile unit. Workers collect into
 * private tables (strings, scopes, ranges, rows) that debuginfo_load merges; the symcache
 * builder renumbers everything by address, so its output does not depend on the thread count.
 */
#include "debuginfo/debuginfo.h"

#include <dwarf.h>
#include <libdwarf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "debuginfo/demangle.h"

#define MAX_DWARF_SECTIONS 32
#define MAX_NAME_HOPS 16   /* abstract_origin/specification chain length we follow */
#define MAX_SCOPE_DEPTH 256 /* nesting of inlinees and lexical blocks we descend into */

/* ---- Mach-O sections as libdwarf's object access interface ---------------------------- */

typedef struct {
    const char *name;    /* ".debug_info", ... */
    const uint8_t *data; /* inside the mapped slice */
    uint64_t size, addr;
} dwarf_section;

typedef struct {
    dwarf_section secs[MAX_DWARF_SECTIONS]; /* [0] is an empty placeholder, as in ELF */
    unsigned n;
    uint8_t pointer_size;
    uint64_t dwarf_bytes;
} section_reader;

/* Mach-O names are cut at 16 bytes: map them back to the standard DWARF names. */
static const char *dwarf_name_for(const char *sectname)
{
    static const char *const NAMES[] = {
        ".debug_info",     ".debug_abbrev",   ".debug_line",    ".debug_str",
        ".debug_ranges",   ".debug_rnglists", ".debug_addr",    ".debug_str_offsets",
        ".debug_line_str", ".debug_aranges",  ".debug_loc",     ".debug_loclists",
        ".debug_types",    ".debug_frame",    ".debug_names",   ".debug_macinfo",
        ".debug_macro",    ".debug_pubnames", ".debug_pubtypes",
    };
    if (strncmp(sectname, "__debug_", 8) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strncmp(NAMES[i] + 1, sectname + 2, 15) == 0 && strlen(NAMES[i] + 1) >= 15 &&
            strlen(sectname + 2) == 14)
            return NAMES[i]; /* truncated 16-byte name: prefix match */
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcmp(NAMES[i] + 1, sectname + 2) == 0)
            return NAMES[i];
    return NULL;
}

static void section_reader_init(section_reader *r, const macho_image *img)
{
    memset(r, 0, sizeof *r);
    r->secs[0].name = "";
    r->n = 1;
    r->pointer_size = img->is64 ? 8 : 4;
    for (size_t i = 0; i < img->nsections && r->n < MAX_DWARF_SECTIONS; i++) {
        const macho_section *s = &img->sections[i];
        if (strcmp(s->segname, "__DWARF") != 0)
            continue;
        const char *name = dwarf_name_for(s->sectname);
        if (name == NULL)
            continue;
        dwarf_section *d = &r->secs[r->n++];
        d->name = name;
        d->data = s->data;
        d->size = s->data ? s->size : 0;
        d->addr = 0;
        r->dwarf_bytes += d->size;
    }
}

static int sr_get_section_info(void *obj, Dwarf_Half i, Dwarf_Obj_Access_Section *out, int *error)
{
    section_reader *r = obj;
    (void)error;
    if (i >= r->n)
        return DW_DLV_NO_ENTRY;
    memset(out, 0, sizeof *out);
    out->addr = r->secs[i].addr;
    out->size = r->secs[i].size;
    out->name = r->secs[i].name;
    return DW_DLV_OK;
}

static Dwarf_Endianness sr_get_byte_order(void *obj)
{
    (void)obj;
    return DW_OBJECT_LSB;
}

static Dwarf_Small sr_get_length_size(void *obj)
{
    (void)obj;
    return 4;
}

static Dwarf_Small sr_get_pointer_size(void *obj)
{
    return ((section_reader *)obj)->pointer_size;
}

static Dwarf_Unsigned sr_get_section_count(void *obj)
{
    return ((section_reader *)obj)->n;
}

static int sr_load_section(void *obj, Dwarf_Half i, Dwarf_Small **data, int *error)
{
    section_reader *r = obj;
    (void)error;
    if (i >= r->n || r->secs[i].data == NULL)
        return DW_DLV_NO_ENTRY;
    *data = (Dwarf_Small *)r->secs[i].data; /* libdwarf only reads it */
    return DW_DLV_OK;
}

static const Dwarf_Obj_Access_Methods SECTION_METHODS = {
    .get_section_info = sr_get_section_info,
    .get_byte_order = sr_get_byte_order,
    .get_length_size = sr_get_length_size,
    .get_pointer_size = sr_get_pointer_size,
    .get_section_count = sr_get_section_count,
    .load_section = sr_load_section,
    .relocate_a_section = NULL,
};

/* ---- per-thread worker ------------------------------------------------------------------ */

typedef struct {
    uint64_t key;   /* DIE offset + 1; 0 = empty */
    uint32_t name;  /* resolved string id */
    bool linkage;   /* the name came from a linkage name */
} name_slot;

typedef struct {
    uint64_t start, end;
} pc_range;

typedef struct {
    /* input */
    section_reader *reader;
    unsigned tid, nthreads;
    /* output, merged by debuginfo_load */
    strtab strings;
    debuginfo_scope *scopes;
    size_t nscopes, cap_scopes;
    debuginfo_range *ranges;
    size_t nranges, cap_ranges;
    debuginfo_row *rows;
    size_t nrows, cap_rows;
    uint32_t cus;
    err_code rc;
    err_info err;
    /* per-CU state */
    Dwarf_Debug dbg;
    Dwarf_Half cu_version;
    uint64_t cu_base;           /* CU base address for DWARF <= 4 range lists */
    uint32_t *files;            /* string id per line-table file index */
    size_t nfiles;
    Dwarf_Signed file_base;     /* index of files[0] (0 in DWARF 5, 1 before) */
    pc_range *tmp;              /* scratch for one DIE's ranges */
    size_t ntmp, cap_tmp;
    name_slot *names;           /* DIE offset -> resolved name cache */
    size_t nnames, cap_names;   /* cap is a power of two */
} worker;

static void push_range(worker *w, uint64_t start, uint64_t end)
{
    if (end <= start)
        return;
    if (w->ntmp == w->cap_tmp) {
        w->cap_tmp = w->cap_tmp ? w->cap_tmp * 2 : 16;
        w->tmp = xreallocarray(w->tmp, w->cap_tmp, sizeof *w->tmp);
    }
    w->tmp[w->ntmp++] = (pc_range){start, end};
}

static void dwarf_fail(worker *w, Dwarf_Error derr, const char *what)
{
    if (w->rc == ERR_OK) {
        w->rc = err_set(&w->err, ERR_INVALID, "corrupt DWARF: %s: %s", what,
                        derr ? dwarf_errmsg(derr) : "unknown libdwarf error");
    }
    if (derr)
        dwarf_dealloc_error(w->dbg, derr);
}

/* Drop an error we chose to tolerate (the attribute is then treated as absent). */
static void dwarf_ignore(worker *w, Dwarf_Error derr)
{
    if (derr)
        dwarf_dealloc_error(w->dbg, derr);
}

static const char *attr_string(worker *w, Dwarf_Die die, Dwarf_Half at)
{
    Dwarf_Attribute attr = NULL;
    Dwarf_Error derr = NULL;
    char *s = NULL;
    int res = dwarf_attr(die, at, &attr, &derr);
    if (res != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        return NULL;
    }
    if (dwarf_formstring(attr, &s, &derr) != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        s = NULL;
    }
    dwarf_dealloc_attribute(attr);
    return s; /* points into .debug_str / .debug_info: no copy, no free */
}

static bool attr_udata(worker *w, Dwarf_Die die, Dwarf_Half at, Dwarf_Unsigned *out)
{
    Dwarf_Attribute attr = NULL;
    Dwarf_Error derr = NULL;
    int res = dwarf_attr(die, at, &attr, &derr);
    if (res != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        return false;
    }
    res = dwarf_formudata(attr, out, &derr);
    if (res != DW_DLV_OK)
        dwarf_ignore(w, derr);
    dwarf_dealloc_attribute(attr);
    return res == DW_DLV_OK;
}

static bool attr_ref(worker *w, Dwarf_Die die, Dwarf_Half at, Dwarf_Off *out)
{
    Dwarf_Attribute attr = NULL;
    Dwarf_Error derr = NULL;
    int res = dwarf_attr(die, at, &attr, &derr);
    if (res != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        return false;
    }
    res = dwarf_global_formref(attr, out, &derr);
    if (res != DW_DLV_OK)
        dwarf_ignore(w, derr);
    dwarf_dealloc_attribute(attr);
    return res == DW_DLV_OK;
}

/* DW_AT_low_pc/high_pc or DW_AT_ranges of `die` into w->tmp (DWARF 5 section 2.17). */
static void die_ranges(worker *w, Dwarf_Die die)
{
    Dwarf_Error derr = NULL;
    Dwarf_Addr lo = 0, hi = 0;
    Dwarf_Half form = 0;
    enum Dwarf_Form_Class cls;
    w->ntmp = 0;
    if (dwarf_lowpc(die, &lo, &derr) == DW_DLV_OK) {
        if (dwarf_highpc_b(die, &hi, &form, &cls, &derr) == DW_DLV_OK) {
            if (cls == DW_FORM_CLASS_CONSTANT)
                hi += lo;
            push_range(w, lo, hi);
            return;
        }
        dwarf_ignore(w, derr);
        return;
    }
    dwarf_ignore(w, derr);
    derr = NULL;

    Dwarf_Attribute attr = NULL;
    if (dwarf_attr(die, DW_AT_ranges, &attr, &derr) != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        return;
    }
    if (dwarf_whatform(attr, &form, &derr) != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        dwarf_dealloc_attribute(attr);
        return;
    }
    Dwarf_Unsigned value = 0;
    int res = form == DW_FORM_rnglistx ? dwarf_formudata(attr, &value, &derr)
                                       : dwarf_global_formref(attr, &value, &derr);
    if (res != DW_DLV_OK) {
        derr = (dwarf_ignore(w, derr), NULL);
        res = dwarf_formudata(attr, &value, &derr);
    }
    if (res != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        dwarf_dealloc_attribute(attr);
        return;
    }
    if (w->cu_version >= 5 || form == DW_FORM_rnglistx) {
        Dwarf_Rnglists_Head head = NULL;
        Dwarf_Unsigned count = 0, global = 0;
        if (dwarf_rnglists_get_rle_head(attr, form, value, &head, &count, &global, &derr) == DW_DLV_OK) {
            for (Dwarf_Unsigned i = 0; i < count; i++) {
                unsigned len = 0, code = 0;
                Dwarf_Unsigned raw1, raw2, c1 = 0, c2 = 0;
                Dwarf_Bool unavailable = 0;
                if (dwarf_get_rnglists_entry_fields_a(head, i, &len, &code, &raw1, &raw2,
                                                      &unavailable, &c1, &c2, &derr) != DW_DLV_OK) {
                    dwarf_ignore(w, derr);
                    break;
                }
                if (code == DW_RLE_end_of_list)
                    break;
                if (code == DW_RLE_base_address || code == DW_RLE_base_addressx || unavailable)
                    continue;
                push_range(w, c1, c2);
            }
            dwarf_dealloc_rnglists_head(head);
        } else {
            dwarf_ignore(w, derr);
        }
    } else {
        Dwarf_Ranges *list = NULL;
        Dwarf_Signed count = 0;
        Dwarf_Unsigned bytes = 0;
        Dwarf_Off real = 0;
        if (dwarf_get_ranges_b(w->dbg, value, die, &real, &list, &count, &bytes, &derr) == DW_DLV_OK) {
            uint64_t base = w->cu_base;
            for (Dwarf_Signed i = 0; i < count; i++) {
                if (list[i].dwr_type == DW_RANGES_END)
                    break;
                if (list[i].dwr_type == DW_RANGES_ADDRESS_SELECTION) {
                    base = list[i].dwr_addr2;
                    continue;
                }
                push_range(w, base + list[i].dwr_addr1, base + list[i].dwr_addr2);
            }
            dwarf_ranges_dealloc(w->dbg, list, count);
        } else {
            dwarf_ignore(w, derr);
        }
    }
    dwarf_dealloc_attribute(attr);
}

/* ---- names ------------------------------------------------------------------------------ */

static name_slot *name_cache_find(worker *w, Dwarf_Off off)
{
    if (w->cap_names == 0)
        return NULL;
    uint64_t key = off + 1;
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (w->cap_names - 1);
    while (w->names[j].key != 0) {
        if (w->names[j].key == key)
            return &w->names[j];
        j = (j + 1) & (w->cap_names - 1);
    }
    return NULL;
}

static void name_cache_put(worker *w, Dwarf_Off off, uint32_t name, bool linkage)
{
    if ((w->nnames + 1) * 2 > w->cap_names) {
        size_t cap = w->cap_names ? w->cap_names * 2 : 4096;
        name_slot *old = w->names;
        size_t old_cap = w->cap_names;
        w->names = xcalloc(cap, sizeof *w->names);
        w->cap_names = cap;
        w->nnames = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].key != 0)
                name_cache_put(w, old[i].key - 1, old[i].name, old[i].linkage);
        free(old);
    }
    uint64_t key = off + 1;
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (w->cap_names - 1);
    while (w->names[j].key != 0 && w->names[j].key != key)
        j = (j + 1) & (w->cap_names - 1);
    if (w->names[j].key == 0)
        w->nnames++;
    w->names[j] = (name_slot){key, name, linkage};
}

static uint32_t intern_linkage(worker *w, const char *linkage, const char *short_name)
{
    char *demangled = demangle_symbol(linkage);
    if (demangled != NULL) {
        uint32_t id = strtab_intern(&w->strings, demangled, strlen(demangled));
        free(demangled);
        return id;
    }
    /* a raw Swift name is unreadable: a DW_AT_name along the chain reads better */
    if (short_name != NULL && demangle_is_swift(linkage))
        return strtab_intern(&w->strings, short_name, strlen(short_name));
    return strtab_intern(&w->strings, linkage, strlen(linkage));
}

static bool resolve_offset(worker *w, Dwarf_Off off, int hops, uint32_t *name, bool *linkage);

/* The name llvm-symbolizer --functions=linkage gives `die`: a linkage name anywhere along
 * its abstract_origin/specification chain (demangled), else the first DW_AT_name on it. */
static bool resolve_die(worker *w, Dwarf_Die die, int hops, uint32_t *name, bool *linkage)
{
    const char *link = attr_string(w, die, DW_AT_linkage_name);
    if (link == NULL)
        link = attr_string(w, die, DW_AT_MIPS_linkage_name);
    const char *short_name = attr_string(w, die, DW_AT_name);
    if (link != NULL) {
        *name = intern_linkage(w, link, short_name);
        *linkage = true;
        return true;
    }
    Dwarf_Off ref;
    uint32_t ref_name;
    bool ref_linkage;
    if (hops < MAX_NAME_HOPS &&
        (attr_ref(w, die, DW_AT_abstract_origin, &ref) || attr_ref(w, die, DW_AT_specification, &ref)) &&
        resolve_offset(w, ref, hops + 1, &ref_name, &ref_linkage) && (ref_linkage || short_name == NULL)) {
        *name = ref_name;
        *linkage = ref_linkage;
        return true;
    }
    if (short_name != NULL) {
        *name = strtab_intern(&w->strings, short_name, strlen(short_name));
        *linkage = false;
        return true;
    }
    return false;
}

static bool resolve_offset(worker *w, Dwarf_Off off, int hops, uint32_t *name, bool *linkage)
{
    name_slot *hit = name_cache_find(w, off);
    if (hit != NULL) {
        *name = hit->name;
        *linkage = hit->linkage;
        return hit->name != STRTAB_NONE;
    }
    Dwarf_Die die = NULL;
    Dwarf_Error derr = NULL;
    if (dwarf_offdie_b(w->dbg, off, 1, &die, &derr) != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        return false;
    }
    bool ok = resolve_die(w, die, hops, name, linkage);
    dwarf_dealloc_die(die);
    name_cache_put(w, off, ok ? *name : STRTAB_NONE, ok && *linkage);
    return ok;
}

/* ---- the DIE walk ----------------------------------------------------------------------- */

static uint32_t add_scope(worker *w, uint32_t name, uint32_t parent, uint32_t depth)
{
    if (w->nscopes == w->cap_scopes) {
        w->cap_scopes = w->cap_scopes ? w->cap_scopes * 2 : 1024;
        w->scopes = xreallocarray(w->scopes, w->cap_scopes, sizeof *w->scopes);
    }
    uint64_t entry = UINT64_MAX;
    for (size_t i = 0; i < w->ntmp; i++)
        if (w->tmp[i].start < entry)
            entry = w->tmp[i].start;
    uint32_t id = (uint32_t)w->nscopes++;
    w->scopes[id] = (debuginfo_scope){name, parent, STRTAB_NONE, 0, depth, 0, entry};
    if (w->nranges + w->ntmp > w->cap_ranges) {
        while (w->nranges + w->ntmp > w->cap_ranges)
            w->cap_ranges = w->cap_ranges ? w->cap_ranges * 2 : 1024;
        w->ranges = xreallocarray(w->ranges, w->cap_ranges, sizeof *w->ranges);
    }
    for (size_t i = 0; i < w->ntmp; i++)
        w->ranges[w->nranges++] = (debuginfo_range){w->tmp[i].start, w->tmp[i].end, id, depth};
    return id;
}

static uint32_t file_id(worker *w, Dwarf_Unsigned index)
{
    if ((Dwarf_Signed)index < w->file_base || index - (Dwarf_Unsigned)w->file_base >= w->nfiles)
        return STRTAB_NONE;
    return w->files[index - (Dwarf_Unsigned)w->file_base];
}

static void walk_children(worker *w, Dwarf_Die parent, uint32_t scope, uint32_t depth, unsigned nest);

/* A DW_TAG_subprogram with code becomes a concrete scope; one without is skipped. */
static void visit_subprogram(worker *w, Dwarf_Die die, unsigned nest)
{
    die_ranges(w, die);
    if (w->ntmp == 0)
        return; /* a declaration or an abstract instance: no code here */
    uint32_t name = STRTAB_NONE;
    bool linkage;
    if (!resolve_die(w, die, 0, &name, &linkage))
        name = STRTAB_NONE;
    uint32_t id = add_scope(w, name, DEBUGINFO_NONE, 0);
    walk_children(w, die, id, 0, nest + 1);
}

static void visit_inlined(worker *w, Dwarf_Die die, uint32_t parent, uint32_t depth, unsigned nest)
{
    die_ranges(w, die);
    if (w->ntmp == 0)
        return;
    uint32_t name = STRTAB_NONE;
    bool linkage;
    if (!resolve_die(w, die, 0, &name, &linkage))
        name = STRTAB_NONE;
    uint32_t id = add_scope(w, name, parent, depth + 1);
    Dwarf_Unsigned v;
    if (attr_udata(w, die, DW_AT_call_file, &v))
        w->scopes[id].call_file = file_id(w, v);
    if (attr_udata(w, die, DW_AT_call_line, &v))
        w->scopes[id].call_line = v > UINT32_MAX - 1 ? 0 : (uint32_t)v;
    walk_children(w, die, id, depth + 1, nest + 1);
}

/* Children of the CU, a namespace (scope == NONE) or a function/inlinee/lexical block. */
static void walk_children(worker *w, Dwarf_Die parent, uint32_t scope, uint32_t depth, unsigned nest)
{
    Dwarf_Die child = NULL, next = NULL;
    Dwarf_Error derr = NULL;
    if (nest > MAX_SCOPE_DEPTH || w->rc != ERR_OK)
        return;
    int res = dwarf_child(parent, &child, &derr);
    if (res == DW_DLV_ERROR) {
        dwarf_fail(w, derr, "reading a DIE's children");
        return;
    }
    while (res == DW_DLV_OK) {
        Dwarf_Half tag = 0;
        if (dwarf_tag(child, &tag, &derr) != DW_DLV_OK) {
            dwarf_fail(w, derr, "reading a DIE tag");
            dwarf_dealloc_die(child);
            return;
        }
        switch (tag) {
        case DW_TAG_subprogram:
            visit_subprogram(w, child, nest);
            break;
        case DW_TAG_inlined_subroutine:
            if (scope != DEBUGINFO_NONE)
                visit_inlined(w, child, scope, depth, nest);
            break;
        case DW_TAG_lexical_block:
            if (scope != DEBUGINFO_NONE)
                walk_children(w, child, scope, depth, nest + 1);
            break;
        case DW_TAG_namespace:
        case DW_TAG_module:
            if (scope == DEBUGINFO_NONE)
                walk_children(w, child, DEBUGINFO_NONE, 0, nest + 1);
            break;
        default:
            break; /* types, variables, parameters, call sites: not needed, subtree skipped */
        }
        res = dwarf_siblingof_b(w->dbg, child, 1, &next, &derr);
        dwarf_dealloc_die(child);
        child = next;
        if (res == DW_DLV_ERROR) {
            dwarf_fail(w, derr, "reading a DIE's sibling");
            return;
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

static void push_row(worker *w, uint64_t addr, uint32_t file, uint32_t line)
{
    if (w->nrows == w->cap_rows) {
        w->cap_rows = w->cap_rows ? w->cap_rows * 2 : 4096;
        w->rows = xreallocarray(w->rows, w->cap_rows, sizeof *w->rows);
    }
    w->rows[w->nrows++] = (debuginfo_row){addr, file, line};
}

static void read_line_table(worker *w, Dwarf_Die cu_die, const char *comp_dir)
{
    Dwarf_Unsigned version = 0;
    Dwarf_Small table_count = 0;
    Dwarf_Line_Context ctx = NULL;
    Dwarf_Error derr = NULL;
    w->nfiles = 0;
    int res = dwarf_srclines_b(cu_die, &version, &table_count, &ctx, &derr);
    if (res != DW_DLV_OK) {
        if (res == DW_DLV_ERROR)
            dwarf_fail(w, derr, "reading a line table header");
        return;
    }
    Dwarf_Signed base = 0, count = 0, end = 0;
    buf scratch;
    buf_init(&scratch);
    if (dwarf_srclines_files_indexes(ctx, &base, &count, &end, &derr) != DW_DLV_OK) {
        dwarf_fail(w, derr, "reading the line table's file list");
        goto done;
    }
    Dwarf_Signed ndirs = 0;
    if (dwarf_srclines_include_dir_count(ctx, &ndirs, &derr) != DW_DLV_OK) {
        dwarf_ignore(w, derr);
        ndirs = 0;
    }
    w->file_base = base;
    w->files = xreallocarray(w->files, count > 0 ? (size_t)count : 1, sizeof *w->files);
    for (Dwarf_Signed i = 0; i < count; i++) {
        const char *name = NULL, *dir = NULL;
        Dwarf_Unsigned dir_index = 0, mtime, length;
        Dwarf_Form_Data16 *md5;
        derr = NULL;
        if (dwarf_srclines_files_data_b(ctx, base + i, &name, &dir_index, &mtime, &length, &md5,
                                        &derr) != DW_DLV_OK) {
            dwarf_ignore(w, derr);
            w->files[i] = STRTAB_NONE;
            continue;
        }
        bool dir_is_comp_dir;
        if (version >= 5) {
            /* DWARF 5 section 6.2.4: directory 0 is the compilation directory itself */
            dir_is_comp_dir = dir_index == 0;
            if ((Dwarf_Signed)dir_index < ndirs &&
                dwarf_srclines_include_dir_data(ctx, (Dwarf_Signed)dir_index, &dir, &derr) != DW_DLV_OK)
                dwarf_ignore(w, derr), dir = NULL;
        } else {
            dir_is_comp_dir = false;
            if (dir_index > 0 && (Dwarf_Signed)dir_index <= ndirs &&
                dwarf_srclines_include_dir_data(ctx, (Dwarf_Signed)dir_index, &dir, &derr) != DW_DLV_OK)
                dwarf_ignore(w, derr), dir = NULL;
        }
        w->files[i] = file_path(w, name, dir, dir_is_comp_dir, comp_dir, &scratch);
    }
    w->nfiles = (size_t)count;

    Dwarf_Line *lines = NULL;
    Dwarf_Signed nlines = 0;
    if (dwarf_srclines_from_linecontext(ctx, &lines, &nlines, &derr) != DW_DLV_OK) {
        dwarf_fail(w, derr, "reading line table rows");
        goto done;
    }
    for (Dwarf_Signed i = 0; i < nlines; i++) {
        Dwarf_Addr addr = 0;
        Dwarf_Unsigned lineno = 0, fileno = 0;
        Dwarf_Bool end_seq = 0;
        if (dwarf_lineaddr(lines[i], &addr, &derr) != DW_DLV_OK ||
            dwarf_lineendsequence(lines[i], &end_seq, &derr) != DW_DLV_OK) {
            dwarf_fail(w, derr, "reading a line table row");
            goto done;
        }
        if (end_seq) {
            push_row(w, addr, STRTAB_NONE, DEBUGINFO_END_SEQUENCE);
            continue;
        }
        if (dwarf_lineno(lines[i], &lineno, &derr) != DW_DLV_OK ||
            dwarf_line_srcfileno(lines[i], &fileno, &derr) != DW_DLV_OK) {
            dwarf_fail(w, derr, "reading a line table row");
            goto done;
        }
        push_row(w, addr, file_id(w, fileno), lineno >= DEBUGINFO_END_SEQUENCE ? 0 : (uint32_t)lineno);
    }
done:
    buf_reset(&scratch);
    dwarf_srclines_dealloc_b(ctx);
}

static void process_cu(worker *w, Dwarf_Die cu_die)
{
    Dwarf_Half version = 0, offset_size = 0;
    Dwarf_Error derr = NULL;
    Dwarf_Addr lo = 0;
    if (dwarf_get_version_of_die(cu_die, &version, &offset_size) != DW_DLV_OK)
        version = 4;
    w->cu_version = version;
    w->cu_base = 0;
    if (dwarf_lowpc(cu_die, &lo, &derr) == DW_DLV_OK)
        w->cu_base = lo;
    else
        dwarf_ignore(w, derr);
    const char *comp_dir = attr_string(w, cu_die, DW_AT_comp_dir);
    read_line_table(w, cu_die, comp_dir);
    if (w->rc != ERR_OK)
        return;
    walk_children(w, cu_die, DEBUGINFO_NONE, 0, 0);
}

static void *worker_run(void *arg)
{
    worker *w = arg;
    Dwarf_Obj_Access_Interface iface = {.object = w->reader, .methods = &SECTION_METHODS};
    Dwarf_Error derr = NULL;
    int res = dwarf_object_init_b(&iface, NULL, NULL, DW_GROUPNUMBER_ANY, &w->dbg, &derr);
    if (res != DW_DLV_OK) {
        if (res == DW_DLV_ERROR) {
            w->rc = err_set(&w->err, ERR_INVALID, "cannot read DWARF: %s", dwarf_errmsg(derr));
            dwarf_dealloc(NULL, derr, DW_DLA_ERROR);
        }
        w->dbg = NULL;
        return NULL;
    }
    for (uint64_t cu = 0; w->rc == ERR_OK; cu++) {
        Dwarf_Unsigned length, typeoff, next;
        Dwarf_Half version, addr_size, len_size, ext_size, cu_type;
        Dwarf_Off abbrev;
        Dwarf_Sig8 sig;
        res = dwarf_next_cu_header_d(w->dbg, 1, &length, &version, &abbrev, &addr_size, &len_size,
                                     &ext_size, &sig, &typeoff, &next, &cu_type, &derr);
        if (res == DW_DLV_NO_ENTRY)
            break;
        if (res == DW_DLV_ERROR) {
            dwarf_fail(w, derr, "reading a compile unit header");
            break;
        }
        if (cu % w->nthreads != w->tid)
            continue;
        Dwarf_Die cu_die = NULL;
        res = dwarf_siblingof_b(w->dbg, NULL, 1, &cu_die, &derr);
        if (res == DW_DLV_ERROR) {
            dwarf_fail(w, derr, "reading a compile unit DIE");
            break;
        }
        if (res == DW_DLV_NO_ENTRY)
            continue;
        w->cus++;
        process_cu(w, cu_die);
        dwarf_dealloc_die(cu_die);
    }
    dwarf_object_finish(w->dbg, &derr);
    w->dbg = NULL;
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
        uint32_t sid = strtab_intern(&d->strings, raw, strlen(raw));
        d->symbols[d->nsymbols++] = (debuginfo_range){sym.value, s->addr + s->size, sid, sym.sect};
    }
    qsort(d->symbols, d->nsymbols, sizeof *d->symbols, cmp_range_start);
    /* one symbol per address; each ends where the next one in its section starts */
    size_t n = 0;
    for (size_t i = 0; i < d->nsymbols; i++) {
        if (n > 0 && d->symbols[n - 1].start == d->symbols[i].start)
            continue;
        d->symbols[n++] = d->symbols[i];
    }
    d->nsymbols = n;
    for (size_t i = 0; i + 1 < n; i++)
        if (d->symbols[i + 1].depth == d->symbols[i].depth && d->symbols[i + 1].start < d->symbols[i].end)
            d->symbols[i].end = d->symbols[i + 1].start;
    for (size_t i = 0; i < n; i++)
        d->symbols[i].depth = 0;
}

/* ---- merge ------------------------------------------------------------------------------ */

static uint32_t remap(const uint32_t *map, uint32_t id)
{
    return id == STRTAB_NONE ? STRTAB_NONE : map[id];
}

static void merge_worker(debuginfo *d, worker *w)
{
    /* string ids are byte offsets: map each string's offset to its id in d->strings */
    uint32_t *map = xcalloc(w->strings.bytes.len ? w->strings.bytes.len : 1, sizeof *map);
    for (size_t off = 0; off < w->strings.bytes.len;) {
        const char *s = (const char *)w->strings.bytes.data + off;
        size_t len = strlen(s);
        map[off] = strtab_intern(&d->strings, s, len);
        off += len + 1;
    }
    uint32_t base = d->nscopes;
    d->scopes = xreallocarray(d->scopes, d->nscopes + w->nscopes + 1, sizeof *d->scopes);
    for (size_t i = 0; i < w->nscopes; i++) {
        debuginfo_scope s = w->scopes[i];
        s.name = remap(map, s.name);
        s.call_file = remap(map, s.call_file);
        if (s.parent != DEBUGINFO_NONE)
            s.parent += base;
        d->scopes[d->nscopes++] = s;
    }
    d->ranges = xreallocarray(d->ranges, d->nranges + w->nranges + 1, sizeof *d->ranges);
    for (size_t i = 0; i < w->nranges; i++) {
        debuginfo_range r = w->ranges[i];
        r.scope += base;
        d->ranges[d->nranges++] = r;
    }
    d->rows = xreallocarray(d->rows, d->nrows + w->nrows + 1, sizeof *d->rows);
    for (size_t i = 0; i < w->nrows; i++) {
        debuginfo_row r = w->rows[i];
        r.file = remap(map, r.file);
        d->rows[d->nrows++] = r;
    }
    d->compile_units += w->cus;
    free(map);
}

static void worker_reset(worker *w)
{
    strtab_reset(&w->strings);
    free(w->scopes);
    free(w->ranges);
    free(w->rows);
    free(w->files);
    free(w->tmp);
    free(w->names);
}

static pthread_once_t dwarf_once = PTHREAD_ONCE_INIT;

static void dwarf_global_setup(void)
{
    /* We free every DIE, attribute and error ourselves; libdwarf's own bookkeeping of each
     * allocation (a tree insert per malloc) would cost more than the walk. */
    dwarf_set_de_alloc_flag(0);
}

err_code debuginfo_load(debuginfo *out, const macho_image *img, unsigned threads, err_info *err)
{
    memset(out, 0, sizeof *out);
    strtab_init(&out->strings);
    section_reader reader;
    section_reader_init(&reader, img);
    out->dwarf_bytes = reader.dwarf_bytes;
    err_code rc = ERR_OK;

    bool has_info = false;
    for (unsigned i = 1; i < reader.n; i++)
        if (strcmp(reader.secs[i].name, ".debug_info") == 0 && reader.secs[i].size > 0)
            has_info = true;
    if (has_info) {
        pthread_once(&dwarf_once, dwarf_global_setup);
        if (threads == 0) {
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            threads = n > 0 ? (unsigned)n : 1;
        }
        if (threads > 64)
            threads = 64;
        worker *ws = xcalloc(threads, sizeof *ws);
        pthread_t *tids = xcalloc(threads, sizeof *tids);
        bool *started = xcalloc(threads, sizeof *started);
        for (unsigned i = 0; i < threads; i++) {
            ws[i].reader = &reader;
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
        for (unsigned i = 0; i < threads; i++) {
            if (ws[i].rc != ERR_OK && rc == ERR_OK) {
                rc = ws[i].rc;
                if (err != NULL)
                    *err = ws[i].err;
            }
            if (rc == ERR_OK)
                merge_worker(out, &ws[i]);
            worker_reset(&ws[i]);
        }
        free(ws);
        free(tids);
        free(started);
    }
    if (rc == ERR_OK)
        load_symbols(out, img);
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
    memset(d, 0, sizeof *d);
}
