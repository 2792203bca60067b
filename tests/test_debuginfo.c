/*
 * Tests for common/debuginfo: our DIE and line-program reader checked against an independent
 * implementation, libdwarf (opened with dwarf_object_init_b over each Mach-O slice's
 * __DWARF sections, so thin and fat files both work), on every fixture slice:
 *   - every DW_TAG_subprogram with code: same entry address and same name
 *     (linkage name as written, else DW_AT_name, following abstract_origin/specification:
 *     debuginfo keeps names raw, the symcache demangles them at lookup);
 *   - every DW_TAG_inlined_subroutine: same entry address, call line and depth;
 *   - every line-table row: same address and line.
 * Plus hostile DWARF: truncated and bit-flipped __debug_info/__debug_line must give a
 * result with what was skipped counted, never an error or a crash (ASan watches); a unit
 * whose header is bad, or that runs past the section, costs only itself; DIEs that all name
 * one long range list add a bounded number of ranges.
 */
#include <dwarf.h>
#include <jansson.h>
#include <libdwarf.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "debuginfo/debuginfo.h"
#include "harness.h"
#include "macho/macho.h"

static const char *fixtures_dir(void)
{
    const char *d = getenv("STACKSIFT_FIXTURES");
    return d && *d ? d : "build-fixtures";
}

/* ---- libdwarf over a Mach-O slice -------------------------------------------------------- */

typedef struct {
    const macho_image *img;
    const char *names[64];
    const macho_section *secs[64];
    unsigned n;
} reader;

static int get_section_info(void *obj, Dwarf_Half i, Dwarf_Obj_Access_Section *out, int *e)
{
    reader *r = obj;
    (void)e;
    if (i >= r->n)
        return DW_DLV_NO_ENTRY;
    memset(out, 0, sizeof *out);
    out->name = r->names[i];
    out->size = r->secs[i] && r->secs[i]->data ? r->secs[i]->size : 0;
    return DW_DLV_OK;
}
static Dwarf_Endianness byte_order(void *obj)
{
    (void)obj;
    return DW_OBJECT_LSB;
}
static Dwarf_Small length_size(void *obj)
{
    (void)obj;
    return 4;
}
static Dwarf_Small pointer_size(void *obj)
{
    return ((reader *)obj)->img->is64 ? 8 : 4;
}
static Dwarf_Unsigned section_count(void *obj)
{
    return ((reader *)obj)->n;
}
static int load_section(void *obj, Dwarf_Half i, Dwarf_Small **data, int *e)
{
    reader *r = obj;
    (void)e;
    if (i >= r->n || r->secs[i] == NULL || r->secs[i]->data == NULL)
        return DW_DLV_NO_ENTRY;
    *data = (Dwarf_Small *)r->secs[i]->data;
    return DW_DLV_OK;
}
static const Dwarf_Obj_Access_Methods METHODS = {get_section_info, byte_order, length_size,
                                                 pointer_size, section_count, load_section, NULL};

static char name_buf[64][24];

static void reader_init(reader *r, const macho_image *img)
{
    memset(r, 0, sizeof *r);
    r->img = img;
    r->names[0] = "";
    r->n = 1;
    for (size_t i = 0; i < img->nsections && r->n < 64; i++) {
        const macho_section *s = &img->sections[i];
        if (strcmp(s->segname, "__DWARF") != 0 || strncmp(s->sectname, "__debug_", 8) != 0)
            continue;
        snprintf(name_buf[r->n], sizeof name_buf[0], ".%s", s->sectname + 2);
        if (strcmp(name_buf[r->n], ".debug_str_offs") == 0)
            snprintf(name_buf[r->n], sizeof name_buf[0], ".debug_str_offsets");
        r->names[r->n] = name_buf[r->n];
        r->secs[r->n] = s;
        r->n++;
    }
}

/* Expected entries collected by the libdwarf walk. */
typedef struct {
    uint64_t entry;
    char name[512];
    uint32_t depth, call_line;
} expected;

typedef struct {
    Dwarf_Debug dbg;
    expected *v;
    size_t n, cap;
} walk_state;

static const char *die_name(Dwarf_Debug dbg, Dwarf_Die die, int hops, bool *linkage)
{
    Dwarf_Attribute a;
    Dwarf_Error e = NULL;
    char *s = NULL;
    static const Dwarf_Half LINK[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name};
    for (int k = 0; k < 2; k++)
        if (dwarf_attr(die, LINK[k], &a, &e) == DW_DLV_OK) {
            dwarf_formstring(a, &s, &e);
            dwarf_dealloc_attribute(a);
            if (s) {
                *linkage = true;
                return s;
            }
        }
    char *short_name = NULL;
    if (dwarf_attr(die, DW_AT_name, &a, &e) == DW_DLV_OK) {
        dwarf_formstring(a, &short_name, &e);
        dwarf_dealloc_attribute(a);
    }
    static const Dwarf_Half REF[] = {DW_AT_abstract_origin, DW_AT_specification};
    for (int k = 0; k < 2 && hops < 16; k++) {
        if (dwarf_attr(die, REF[k], &a, &e) != DW_DLV_OK)
            continue;
        Dwarf_Off off;
        Dwarf_Die target;
        int ok = dwarf_global_formref(a, &off, &e) == DW_DLV_OK;
        dwarf_dealloc_attribute(a);
        if (ok && dwarf_offdie_b(dbg, off, 1, &target, &e) == DW_DLV_OK) {
            bool l = false;
            const char *n = die_name(dbg, target, hops + 1, &l);
            dwarf_dealloc_die(target);
            if (n && (l || short_name == NULL)) {
                *linkage = l;
                return n;
            }
        }
        break;
    }
    *linkage = false;
    return short_name;
}

static bool die_entry(Dwarf_Debug dbg, Dwarf_Die die, uint64_t cu_base, uint64_t *entry)
{
    Dwarf_Addr lo;
    Dwarf_Error e = NULL;
    if (dwarf_lowpc(die, &lo, &e) == DW_DLV_OK) {
        *entry = lo;
        return true;
    }
    Dwarf_Attribute a;
    if (dwarf_attr(die, DW_AT_ranges, &a, &e) != DW_DLV_OK)
        return false;
    Dwarf_Half form = 0, version = 0, osize = 0;
    dwarf_whatform(a, &form, &e);
    dwarf_get_version_of_die(die, &version, &osize);
    Dwarf_Unsigned off = 0;
    bool found = false;
    *entry = UINT64_MAX;
    if (version >= 5) {
        Dwarf_Rnglists_Head head;
        Dwarf_Unsigned count, global;
        if (form == DW_FORM_rnglistx ? dwarf_formudata(a, &off, &e) == DW_DLV_OK
                                     : dwarf_global_formref(a, &off, &e) == DW_DLV_OK) {
            if (dwarf_rnglists_get_rle_head(a, form, off, &head, &count, &global, &e) == DW_DLV_OK) {
                for (Dwarf_Unsigned i = 0; i < count; i++) {
                    unsigned len, code;
                    Dwarf_Unsigned r1, r2, c1, c2;
                    Dwarf_Bool unavailable;
                    if (dwarf_get_rnglists_entry_fields_a(head, i, &len, &code, &r1, &r2, &unavailable,
                                                          &c1, &c2, &e) != DW_DLV_OK)
                        break;
                    if (code == DW_RLE_end_of_list)
                        break;
                    if (code == DW_RLE_base_address || code == DW_RLE_base_addressx || unavailable || c2 <= c1)
                        continue;
                    if (c1 < *entry)
                        *entry = c1, found = true;
                }
                dwarf_dealloc_rnglists_head(head);
            }
        }
    } else if (dwarf_global_formref(a, &off, &e) == DW_DLV_OK || dwarf_formudata(a, &off, &e) == DW_DLV_OK) {
        Dwarf_Ranges *list;
        Dwarf_Signed count;
        Dwarf_Unsigned bytes;
        Dwarf_Off real;
        if (dwarf_get_ranges_b(dbg, off, die, &real, &list, &count, &bytes, &e) == DW_DLV_OK) {
            uint64_t base = cu_base;
            for (Dwarf_Signed i = 0; i < count; i++) {
                if (list[i].dwr_type == DW_RANGES_END)
                    break;
                if (list[i].dwr_type == DW_RANGES_ADDRESS_SELECTION) {
                    base = list[i].dwr_addr2;
                    continue;
                }
                if (list[i].dwr_addr2 > list[i].dwr_addr1 && base + list[i].dwr_addr1 < *entry)
                    *entry = base + list[i].dwr_addr1, found = true;
            }
            dwarf_ranges_dealloc(dbg, list, count);
        }
    }
    dwarf_dealloc_attribute(a);
    return found;
}

static void add(walk_state *w, uint64_t entry, const char *name, uint32_t depth, uint32_t call_line)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 256;
        w->v = realloc(w->v, w->cap * sizeof *w->v);
    }
    expected *x = &w->v[w->n++];
    x->entry = entry;
    x->depth = depth;
    x->call_line = call_line;
    snprintf(x->name, sizeof x->name, "%s", name ? name : "");
}

static void walk(walk_state *w, Dwarf_Die parent, uint64_t cu_base, int depth, bool in_function)
{
    Dwarf_Die child, next;
    Dwarf_Error e = NULL;
    if (dwarf_child(parent, &child, &e) != DW_DLV_OK)
        return;
    for (;;) {
        Dwarf_Half tag = 0;
        dwarf_tag(child, &tag, &e);
        uint64_t entry;
        if (tag == DW_TAG_subprogram || (tag == DW_TAG_inlined_subroutine && in_function)) {
            if (die_entry(w->dbg, child, cu_base, &entry)) {
                bool linkage = false;
                const char *raw = die_name(w->dbg, child, 0, &linkage);
                Dwarf_Unsigned line = 0;
                Dwarf_Attribute a;
                if (tag == DW_TAG_inlined_subroutine && dwarf_attr(child, DW_AT_call_line, &a, &e) == DW_DLV_OK) {
                    dwarf_formudata(a, &line, &e);
                    dwarf_dealloc_attribute(a);
                }
                int d = tag == DW_TAG_subprogram ? 0 : depth + 1;
                add(w, entry, raw, (uint32_t)d, (uint32_t)line);
                walk(w, child, cu_base, d, true);
            }
        } else if (tag == DW_TAG_lexical_block && in_function) {
            walk(w, child, cu_base, depth, true);
        } else if ((tag == DW_TAG_namespace || tag == DW_TAG_module) && !in_function) {
            walk(w, child, cu_base, 0, false);
        }
        int res = dwarf_siblingof_b(w->dbg, child, 1, &next, &e);
        dwarf_dealloc_die(child);
        if (res != DW_DLV_OK)
            break;
        child = next;
    }
}

/* libdwarf's view of one slice; returns false if libdwarf cannot open it. */
static bool libdwarf_walk(walk_state *w, const macho_image *img)
{
    reader r;
    reader_init(&r, img);
    Dwarf_Obj_Access_Interface iface = {&r, &METHODS};
    Dwarf_Error e = NULL;
    memset(w, 0, sizeof *w);
    if (dwarf_object_init_b(&iface, NULL, NULL, DW_GROUPNUMBER_ANY, &w->dbg, &e) != DW_DLV_OK)
        return false;
    bool ok = true;
    for (;;) {
        Dwarf_Unsigned len, typeoff, next;
        Dwarf_Half version, asz, lsz, esz, ut;
        Dwarf_Off abbrev;
        Dwarf_Sig8 sig;
        int res = dwarf_next_cu_header_d(w->dbg, 1, &len, &version, &abbrev, &asz, &lsz, &esz, &sig,
                                         &typeoff, &next, &ut, &e);
        if (res == DW_DLV_ERROR) {
            fprintf(stderr, "libdwarf: %s\n", dwarf_errmsg(e));
            ok = false;
        }
        if (res != DW_DLV_OK)
            break;
        Dwarf_Die cu;
        if (dwarf_siblingof_b(w->dbg, NULL, 1, &cu, &e) != DW_DLV_OK)
            continue;
        Dwarf_Addr base = 0;
        if (dwarf_lowpc(cu, &base, &e) != DW_DLV_OK)
            base = 0;
        walk(w, cu, base, 0, false);
        dwarf_dealloc_die(cu);
    }
    dwarf_finish(w->dbg, &e);
    return ok;
}

/* ---- the comparison ---------------------------------------------------------------------- */

static int cmp_expected(const void *a, const void *b)
{
    const expected *x = a, *y = b;
    if (x->entry != y->entry)
        return x->entry < y->entry ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    if (x->call_line != y->call_line)
        return x->call_line < y->call_line ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int slices_checked, scopes_checked;

static void compare_slice(const char *label, const macho_image *img)
{
    walk_state want;
    if (!libdwarf_walk(&want, img)) {
        /* libdwarf 20210528 rejects dsymutil-14's DWARF 5 units (no usable .debug_addr for
         * it); the oracle test covers those against llvm-symbolizer instead */
        fprintf(stderr, "%s: libdwarf cannot read this slice, skipped\n", label);
        free(want.v);
        return;
    }
    debuginfo di;
    err_info err = {0};
    CHECK_EQ_INT(debuginfo_load(&di, img, 2, &err), ERR_OK);
    expected *got = calloc(di.nscopes ? di.nscopes : 1, sizeof *got);
    size_t ngot = 0;
    for (uint32_t i = 0; i < di.nscopes; i++) {
        const debuginfo_scope *s = &di.scopes[i];
        expected *x = &got[ngot++];
        x->entry = s->entry;
        x->depth = s->depth;
        x->call_line = s->call_line;
        snprintf(x->name, sizeof x->name, "%s", s->name == STRTAB_NONE ? "" : strtab_get(&di.strings, s->name));
    }
    qsort(got, ngot, sizeof *got, cmp_expected);
    qsort(want.v, want.n, sizeof *want.v, cmp_expected);
    CHECK_EQ_INT(ngot, want.n);
    size_t shown = 0;
    for (size_t i = 0; i < ngot && i < want.n; i++) {
        if (cmp_expected(&got[i], &want.v[i]) != 0 && shown++ < 5)
            fprintf(stderr, "%s: #%zu ours 0x%llx d%u l%u %s | libdwarf 0x%llx d%u l%u %s\n", label, i,
                    (unsigned long long)got[i].entry, got[i].depth, got[i].call_line, got[i].name,
                    (unsigned long long)want.v[i].entry, want.v[i].depth, want.v[i].call_line, want.v[i].name);
    }
    CHECK_EQ_INT(shown, 0);
    CHECK(ngot > 10);
    slices_checked++;
    scopes_checked += (int)ngot;
    free(got);
    free(want.v);
    debuginfo_reset(&di);
}

static void agrees_with_libdwarf_on_every_fixture(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", fixtures_dir());
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    CHECK(m != NULL);
    if (m == NULL)
        return;
    size_t i;
    json_t *fx;
    json_array_foreach(json_object_get(m, "fixtures"), i, fx)
    {
        snprintf(path, sizeof path, "%s/%s", fixtures_dir(), json_string_value(json_object_get(fx, "dwarf")));
        bytes b;
        err_info err = {0};
        if (bytes_map_file(&b, path, &err) != ERR_OK) {
            CHECK(false);
            continue;
        }
        macho_slice slices[MACHO_MAX_SLICES];
        size_t n = 0;
        CHECK_EQ_INT(macho_slices(slices, &n, b.data, b.len, &err), ERR_OK);
        macho_image *img = malloc(sizeof *img);
        for (size_t k = 0; k < n; k++) {
            if (macho_parse(img, b.data + slices[k].offset, slices[k].size, &err) != ERR_OK)
                continue;
            char label[600];
            snprintf(label, sizeof label, "%s/%s", json_string_value(json_object_get(fx, "name")),
                     macho_arch_name(img->cputype, img->cpusubtype));
            compare_slice(label, img);
        }
        free(img);
        bytes_unmap(&b);
    }
    json_decref(m);
    fprintf(stderr, "%d slices, %d functions and inlinees compared\n", slices_checked, scopes_checked);
    CHECK(slices_checked >= 4);
}

/* Map the -O2 fixture app's DWARF file (the hand-damaged and hand-written tests start from
 * it); false (a failed check) when it cannot be. */
static bool map_o2_dwarf(bytes *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/arm64-O2/FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp",
             fixtures_dir());
    err_info err = {0};
    CHECK_EQ_INT(bytes_map_file(b, path, &err), ERR_OK);
    return b->data != NULL;
}

/* Mutated DWARF: copy a fixture slice, damage __debug_info / __debug_line / __debug_abbrev
 * and load it: an error or a result, never a crash or a read out of bounds. */
static void damaged_dwarf_is_skipped_not_a_crash(void)
{
    bytes b;
    err_info err = {0};
    if (!map_o2_dwarf(&b))
        return;
    uint8_t *copy = malloc(b.len);
    macho_image *img = malloc(sizeof *img);
    const char *targets[] = {"__debug_info", "__debug_line", "__debug_abbrev", "__debug_ranges", "__debug_str"};
    int warned = 0, loads = 0;
    unsigned seed = 12345;
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        for (int round = 0; round < 60; round++) {
            memcpy(copy, b.data, b.len);
            CHECK_EQ_INT(macho_parse(img, copy, b.len, &err), ERR_OK);
            macho_section *s = NULL;
            for (size_t k = 0; k < img->nsections; k++)
                if (strcmp(img->sections[k].sectname, targets[t]) == 0)
                    s = &img->sections[k];
            if (s == NULL || s->data == NULL || s->size == 0)
                break;
            uint8_t *data = copy + s->offset;
            if (round < 20) {
                s->size = (uint64_t)(rand_r(&seed) % s->size); /* truncated section */
            } else {
                for (int f = 0; f < 1 + round % 7; f++)
                    data[rand_r(&seed) % s->size] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
            }
            debuginfo di;
            CHECK_EQ_INT(debuginfo_load(&di, img, 1, &err), ERR_OK);
            loads++;
            if (debuginfo_warnings_count(&di.warnings) > 0) {
                warned++;
                char text[400];
                debuginfo_warnings_text(&di.warnings, text, sizeof text);
                CHECK(di.warnings.first[0] != '\0');
                CHECK(strstr(text, "skipped ") != NULL);
            }
            debuginfo_reset(&di);
        }
    }
    CHECK(warned > 0);
    CHECK(loads > warned);
    free(img);
    free(copy);
    bytes_unmap(&b);
}

/* One bad unit costs only itself: a unit with an unknown DWARF version is skipped and counted,
 * every other unit's functions and rows stay; a last unit whose length runs past the section
 * is skipped the same way. */
static void bad_unit_costs_only_itself(void)
{
    bytes b;
    err_info err = {0};
    if (!map_o2_dwarf(&b))
        return;
    uint8_t *copy = malloc(b.len);
    macho_image *img = malloc(sizeof *img);
    memcpy(copy, b.data, b.len);
    CHECK_EQ_INT(macho_parse(img, copy, b.len, &err), ERR_OK);
    debuginfo clean;
    CHECK_EQ_INT(debuginfo_load(&clean, img, 2, &err), ERR_OK);
    CHECK_EQ_INT(debuginfo_warnings_count(&clean.warnings), 0);
    macho_section *info = NULL;
    for (size_t k = 0; k < img->nsections; k++)
        if (strcmp(img->sections[k].sectname, "__debug_info") == 0)
            info = &img->sections[k];
    CHECK(info != NULL && clean.compile_units >= 2);
    if (info == NULL || clean.compile_units < 2)
        goto out;
    /* the units (32-bit DWARF: length, then version) */
    uint8_t *data = copy + info->offset;
    uint64_t offs[256];
    size_t nunits = 0;
    for (uint64_t off = 0; off + 4 <= info->size && nunits < 256;) {
        uint32_t len = (uint32_t)data[off] | (uint32_t)data[off + 1] << 8 | (uint32_t)data[off + 2] << 16 |
                       (uint32_t)data[off + 3] << 24;
        offs[nunits++] = off;
        off += 4 + (uint64_t)len;
    }
    CHECK(nunits >= 2);
    uint64_t lost = 0;
    for (size_t victim = 0; victim < nunits; victim++) {
        memcpy(copy, b.data, b.len);
        data[offs[victim] + 4] = 9; /* version 9 */
        debuginfo d;
        CHECK_EQ_INT(debuginfo_load(&d, img, 2, &err), ERR_OK);
        CHECK_EQ_INT(d.warnings.units, 1);
        CHECK_EQ_INT(d.warnings.offset, offs[victim]);
        CHECK_EQ_STR(d.warnings.first, "unit has an unsupported DWARF version");
        CHECK_EQ_INT(d.compile_units, clean.compile_units - 1);
        CHECK(!d.warnings.symtab_only);
        /* only the victim's scopes are gone: summed over the victims, every scope of the
         * clean load is lost exactly once */
        CHECK(d.nscopes <= clean.nscopes);
        lost += clean.nscopes - d.nscopes;
        CHECK(d.nrows <= clean.nrows);
        debuginfo_reset(&d);
    }
    CHECK_EQ_INT(lost, clean.nscopes);
    /* the last unit says it runs past the section: it alone is skipped */
    memcpy(copy, b.data, b.len);
    data[offs[nunits - 1] + 3] = 0x7f;
    debuginfo d;
    CHECK_EQ_INT(debuginfo_load(&d, img, 1, &err), ERR_OK);
    CHECK_EQ_INT(d.warnings.units, 1);
    CHECK_EQ_STR(d.warnings.first, "unit extends past the end of .debug_info");
    CHECK_EQ_INT(d.compile_units, clean.compile_units - 1);
    CHECK(d.nscopes > 0);
    debuginfo_reset(&d);
    /* every unit bad: nothing usable, the symbol table answers and the warning says so */
    memcpy(copy, b.data, b.len);
    for (size_t i = 0; i < nunits; i++)
        data[offs[i] + 4] = 9;
    CHECK_EQ_INT(debuginfo_load(&d, img, 1, &err), ERR_OK);
    CHECK_EQ_INT(d.warnings.units, nunits);
    CHECK(d.warnings.symtab_only);
    CHECK_EQ_INT(d.nscopes, 0);
    CHECK(d.nsymbols > 0);
    char text[400];
    debuginfo_warnings_text(&d.warnings, text, sizeof text);
    CHECK(strstr(text, "no usable DWARF, symbol table only") == text);
    debuginfo_reset(&d);
out:
    debuginfo_reset(&clean);
    free(img);
    free(copy);
    bytes_unmap(&b);
}

/* Appends for the hand-written DWARF below. */
static size_t put(uint8_t *p, size_t at, const uint8_t *b, size_t n)
{
    memcpy(p + at, b, n);
    return at + n;
}

static size_t put_u32(uint8_t *p, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
    return at + 4;
}

static size_t put_u64(uint8_t *p, size_t at, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
    return at + 8;
}

/* One DWARF 4 unit (DWARF 4 sections 7.5, 2.17.3): a function and `ninlinees` inlinees that
 * all name the same .debug_ranges list of `nentries` entries, loaded in place of a fixture's
 * __DWARF sections. Returns the load; *unit_bytes gets the unit's size. */
static void load_shared_range_list(debuginfo *di, const bytes *b, size_t ninlinees, size_t nentries,
                                   size_t *unit_bytes)
{
    static const uint8_t abbrev[] = {
        1, DW_TAG_compile_unit, 1, DW_AT_low_pc, DW_FORM_addr, DW_AT_high_pc, DW_FORM_data4, 0, 0,
        2, DW_TAG_subprogram, 1, DW_AT_ranges, DW_FORM_sec_offset, DW_AT_name, DW_FORM_string, 0, 0,
        3, DW_TAG_inlined_subroutine, 0, DW_AT_ranges, DW_FORM_sec_offset, 0, 0,
        0};
    uint8_t *info = calloc(64 + 5 * ninlinees, 1), *ranges = calloc(16 * (nentries + 1), 1);
    size_t at = put_u32(info, 0, 0); /* unit_length, set below */
    at = put(info, at, (const uint8_t[]){4, 0, 0, 0, 0, 0, 8}, 7); /* version 4, abbrev 0, addr 8 */
    at = put(info, at, (const uint8_t[]){1}, 1);
    at = put_u64(info, at, 0x1000);
    at = put_u32(info, at, 0x100000);
    at = put(info, at, (const uint8_t[]){2, 0, 0, 0, 0, 'f', 0}, 7);
    for (size_t i = 0; i < ninlinees; i++)
        at = put(info, at, (const uint8_t[]){3, 0, 0, 0, 0}, 5);
    at = put(info, at, (const uint8_t[]){0, 0}, 2);
    put_u32(info, 0, (uint32_t)(at - 4));
    *unit_bytes = at;
    for (size_t i = 0; i < nentries; i++) { /* offsets from the unit's base, 0x1000 */
        put_u64(ranges, 16 * i, 16 * i);
        put_u64(ranges, 16 * i + 8, 16 * i + 8);
    }
    uint8_t *copy = malloc(b->len);
    memcpy(copy, b->data, b->len);
    macho_image *img = malloc(sizeof *img);
    err_info err = {0};
    CHECK_EQ_INT(macho_parse(img, copy, b->len, &err), ERR_OK);
    for (size_t k = 0; k < img->nsections; k++) {
        macho_section *s = &img->sections[k];
        if (strcmp(s->segname, "__DWARF") != 0)
            continue;
        if (strcmp(s->sectname, "__debug_info") == 0) {
            s->data = info;
            s->size = at;
        } else if (strcmp(s->sectname, "__debug_abbrev") == 0) {
            s->data = abbrev;
            s->size = sizeof abbrev;
        } else if (strcmp(s->sectname, "__debug_ranges") == 0) {
            s->data = ranges;
            s->size = 16 * (nentries + 1);
        } else {
            s->data = NULL; /* no line table, names inline, no aranges: the unit DIE's range */
        }
    }
    CHECK_EQ_INT(debuginfo_load(di, img, 1, &err), ERR_OK);
    free(img);
    free(copy);
    free(ranges);
    free(info);
}

/* Many DIEs naming one long range list cannot grow the tables as DIEs x entries: a unit may
 * add a few ranges per byte of its own; past that its walk stops with a warning, and a unit
 * that stays within the bound loads whole. */
static void shared_range_lists_are_bounded(void)
{
    bytes b;
    if (!map_o2_dwarf(&b))
        return;
    debuginfo di;
    size_t unit_bytes;
    /* within the bound: the function and its 5 inlinees, 10 ranges each */
    load_shared_range_list(&di, &b, 5, 10, &unit_bytes);
    CHECK_EQ_INT(di.warnings.functions, 0);
    CHECK_EQ_INT(di.nscopes, 6);
    CHECK_EQ_INT(di.nranges, 60);
    debuginfo_reset(&di);
    /* 2,001 DIEs x 1,000 entries would be 2,001,000 ranges from a 10 kB unit */
    load_shared_range_list(&di, &b, 2000, 1000, &unit_bytes);
    CHECK_EQ_INT(di.warnings.functions, 1);
    CHECK(strstr(di.warnings.first, "more address ranges than its size allows") != NULL);
    CHECK(di.nranges <= 4 * unit_bytes + 64);
    CHECK_EQ_INT(di.nscopes, 0); /* the function it happened in is dropped whole */
    CHECK(di.nsymbols > 0);      /* the symbol table still answers */
    debuginfo_reset(&di);
    bytes_unmap(&b);
}

/* A table that would pass 4 GiB adds nothing and says so (the loader turns that into
 * ERR_TOO_LARGE) instead of aborting the server. The count is faked: 4 GiB of names is more
 * than a test may allocate; add_new checks it before touching memory. */
static void strtab_over_4gib_is_flagged_not_fatal(void)
{
    strtab t;
    strtab_init(&t);
    CHECK_EQ_INT(strtab_add(&t, "main", 4), 0);
    CHECK(!t.full);
    size_t real = t.count;
    t.count = UINT32_MAX - 1;
    CHECK(strtab_add(&t, "more", 4) == STRTAB_NONE);
    CHECK(t.full);
    CHECK_EQ_STR(strtab_get(&t, STRTAB_NONE), "");
    t.count = real;
    CHECK_EQ_STR(strtab_get(&t, 0), "main");
    strtab_reset(&t);
}

int main(void)
{
    RUN(agrees_with_libdwarf_on_every_fixture);
    RUN(damaged_dwarf_is_skipped_not_a_crash);
    RUN(bad_unit_costs_only_itself);
    RUN(shared_range_lists_are_bounded);
    RUN(strtab_over_4gib_is_flagged_not_fatal);
    return harness_done();
}
