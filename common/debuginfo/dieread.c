/*
 * DIE reader. Form encodings: DWARF 5 section 7.5.6 (table 7.6), DWARF 4 section 7.5.4,
 * DWARF 2 section 7.5.4 (DW_FORM_ref_addr is address-sized in version 2). Range lists: DWARF 4
 * section 2.17.3 (.debug_ranges), DWARF 5 section 2.17.3 / 7.25 (.debug_rnglists).
 */
#include "debuginfo/dieread_internal.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

typedef struct {
    const uint8_t *p, *end;
    bool bad;
} cursor;

static cursor at(const die_section *s, uint64_t off, uint64_t end)
{
    cursor c = {NULL, NULL, true};
    if (s->data == NULL || off > s->len || end > s->len || off > end)
        return c;
    c.p = s->data + off;
    c.end = s->data + end;
    c.bad = false;
    return c;
}

static bool need(cursor *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return false;
    }
    return true;
}

static uint64_t rd(cursor *c, unsigned n)
{
    if (!need(c, n))
        return 0;
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

static uint64_t uleb(cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    while (!c->bad) {
        if (c->p >= c->end) {
            c->bad = true;
            break;
        }
        uint8_t b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if ((b & 0x80) == 0)
            break;
    }
    return v;
}

static int64_t sleb(cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    while (!c->bad) {
        if (c->p >= c->end) {
            c->bad = true;
            break;
        }
        b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if ((b & 0x80) == 0)
            break;
    }
    if (shift < 64 && (b & 0x40))
        v |= ~0ull << shift;
    return (int64_t)v;
}

static void skip(cursor *c, uint64_t n)
{
    if (!c->bad && (uint64_t)(c->end - c->p) >= n)
        c->p += n;
    else
        c->bad = true;
}

static void skip_cstr(cursor *c)
{
    if (c->bad)
        return;
    const uint8_t *z = memchr(c->p, 0, (size_t)(c->end - c->p));
    if (z == NULL)
        c->bad = true;
    else
        c->p = z + 1;
}

/* a NUL-terminated string at `off` of section `s`, or NULL */
static const char *sect_str(const die_section *s, uint64_t off)
{
    if (s->data == NULL || off >= s->len)
        return NULL;
    if (memchr(s->data + off, 0, (size_t)(s->len - off)) == NULL)
        return NULL;
    return (const char *)s->data + off;
}

/* ---- units and abbreviations ------------------------------------------------------------ */

/* A unit whose header cannot be read is listed with `bad` set (and, when its length is
 * unusable too, runs to the end of the section, which ends the scan): the caller skips it
 * and reports it, keeping every other unit. */
static void unit_push(die_unit **out, size_t *n, size_t *cap, const die_unit *u)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *out = xreallocarray(*out, *cap, sizeof **out);
    }
    (*out)[(*n)++] = *u;
}

void die_units_scan(die_unit **out, size_t *n, const die_sections *s)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    uint64_t off = 0;
    while (off < s->info.len) {
        cursor c = at(&s->info, off, s->info.len);
        die_unit u;
        memset(&u, 0, sizeof u);
        u.offset = off;
        uint64_t len = rd(&c, 4);
        u.offset_size = 4;
        if (len == 0xffffffffull) {
            len = rd(&c, 8);
            u.offset_size = 8;
        } else if (len >= 0xfffffff0ull) {
            u.bad = "unit length uses a reserved value";
        }
        uint64_t start = (uint64_t)(c.p - s->info.data);
        if (u.bad == NULL && (c.bad || len > s->info.len - start))
            u.bad = "unit extends past the end of .debug_info";
        if (u.bad != NULL) { /* no way to the next unit: the rest of the section is lost */
            u.end = u.die_offset = s->info.len;
            unit_push(out, n, &cap, &u);
            return;
        }
        u.end = start + len;
        c.end = s->info.data + u.end;
        u.version = (uint16_t)rd(&c, 2);
        if (u.version >= 5) {
            u.unit_type = (uint8_t)rd(&c, 1);
            u.addr_size = (uint8_t)rd(&c, 1);
            u.abbrev_offset = rd(&c, u.offset_size);
            if (u.unit_type == DW_UT_skeleton || u.unit_type == DW_UT_split_compile)
                skip(&c, 8); /* dwo_id */
            else if (u.unit_type == DW_UT_type || u.unit_type == DW_UT_split_type)
                skip(&c, 8 + u.offset_size); /* type signature, type offset */
        } else {
            u.unit_type = DW_UT_compile;
            u.abbrev_offset = rd(&c, u.offset_size);
            u.addr_size = (uint8_t)rd(&c, 1);
        }
        if (u.version < 2 || u.version > 5)
            u.bad = "unit has an unsupported DWARF version";
        else if (c.bad)
            u.bad = "truncated unit header";
        else if (u.addr_size != 4 && u.addr_size != 8)
            u.bad = "unit has an unsupported address size";
        u.die_offset = u.bad != NULL ? u.end : (uint64_t)(c.p - s->info.data);
        unit_push(out, n, &cap, &u);
        off = u.end;
    }
}

const char *die_abbrev_table_load(die_abbrev_table *t, const die_sections *s, uint64_t offset)
{
    memset(t, 0, sizeof *t);
    t->offset = offset;
    cursor c = at(&s->abbrev, offset, s->abbrev.len);
    if (c.bad)
        return "abbreviation table offset is outside .debug_abbrev";
    /* never NULL, so that `specs + first` is defined even for a table without attributes */
    uint32_t cap_specs = 64;
    t->specs = xmalloc(cap_specs * sizeof *t->specs);
    for (;;) {
        uint64_t code = uleb(&c);
        if (c.bad)
            return "truncated abbreviation table";
        if (code == 0)
            break;
        if (code > 1u << 20)
            return "abbreviation code is implausibly large";
        if (code >= t->ncodes) {
            uint32_t n = t->ncodes ? t->ncodes : 64;
            while (n <= code)
                n *= 2;
            t->by_code = xreallocarray(t->by_code, n, sizeof *t->by_code);
            memset(t->by_code + t->ncodes, 0, (n - t->ncodes) * sizeof *t->by_code);
            t->ncodes = n;
        }
        die_abbrev *a = &t->by_code[code];
        a->tag = (uint16_t)uleb(&c);
        a->children = rd(&c, 1) != 0;
        a->first = t->nspecs;
        if (a->tag == 0)
            return "abbreviation has tag 0";
        for (;;) {
            uint64_t name = uleb(&c), form = uleb(&c);
            int64_t implicit = 0;
            if (form == DW_FORM_implicit_const)
                implicit = sleb(&c);
            if (c.bad)
                return "truncated abbreviation";
            if (name == 0 && form == 0)
                break;
            if (t->nspecs == cap_specs) {
                cap_specs *= 2;
                t->specs = xreallocarray(t->specs, cap_specs, sizeof *t->specs);
            }
            t->specs[t->nspecs++] = (die_attr_spec){(uint16_t)(name > 0xffff ? 0xffff : name),
                                                    (uint16_t)(form > 0xffff ? 0xffff : form), implicit};
            if (name == DW_AT_sibling)
                a->has_sibling = true;
        }
        a->count = t->nspecs - a->first;
        a->fixed_size = -1;
    }
    return NULL;
}

uint32_t die_unit_size_key(const die_unit *u)
{
    return 1u << 24 | (uint32_t)(u->version <= 2) << 16 | (uint32_t)u->offset_size << 8 | u->addr_size;
}

/* Bytes a value of `form` takes in units like `u`, or -1 when the value says (strings,
 * blocks, LEB128 numbers, indirect forms) or the form is unknown. */
static int form_size(const die_unit *u, uint16_t form)
{
    switch (form) {
    case DW_FORM_flag_present:
    case DW_FORM_implicit_const:
        return 0;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1:
        return 1;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2:
        return 2;
    case DW_FORM_strx3:
    case DW_FORM_addrx3:
        return 3;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4:
    case DW_FORM_ref_sup4:
        return 4;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
        return 8;
    case DW_FORM_data16:
        return 16;
    case DW_FORM_addr:
        return u->addr_size;
    case DW_FORM_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_line_strp:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
        return u->offset_size;
    case DW_FORM_ref_addr:
        return u->version <= 2 ? u->addr_size : u->offset_size;
    default:
        return -1;
    }
}

void die_abbrev_table_size(die_abbrev_table *t, const die_unit *u)
{
    uint32_t key = die_unit_size_key(u);
    if (t->sized_for == key)
        return;
    for (uint32_t code = 0; code < t->ncodes; code++) {
        die_abbrev *a = &t->by_code[code];
        if (a->tag == 0)
            continue;
        int64_t size = 0;
        for (uint32_t i = 0; i < a->count && size >= 0; i++) {
            int n = form_size(u, t->specs[a->first + i].form);
            size = n < 0 ? -1 : size + n;
        }
        a->fixed_size = size >= 0 && size <= INT32_MAX ? (int32_t)size : -1;
    }
    t->sized_for = key;
}

void die_abbrev_table_free(die_abbrev_table *t)
{
    free(t->by_code);
    free(t->specs);
    memset(t, 0, sizeof *t);
}

/* ---- attribute values ------------------------------------------------------------------- */

typedef struct {
    uint16_t form;
    uint64_t u;        /* numbers, offsets, indexes, addresses */
    const char *s;     /* DW_FORM_string */
} value;

/* Decode one value of `form` at c (DW_FORM_indirect resolved). */
static void read_value(cursor *c, const die_unit *u, uint16_t form, int64_t implicit, value *v)
{
    v->form = form;
    v->s = NULL;
    v->u = 0;
    switch (form) {
    case DW_FORM_addr:
        v->u = rd(c, u->addr_size);
        break;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1:
        v->u = rd(c, 1);
        break;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2:
        v->u = rd(c, 2);
        break;
    case DW_FORM_strx3:
    case DW_FORM_addrx3:
        v->u = rd(c, 3);
        break;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4:
    case DW_FORM_ref_sup4:
        v->u = rd(c, 4);
        break;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
        v->u = rd(c, 8);
        break;
    case DW_FORM_data16:
        skip(c, 16);
        break;
    case DW_FORM_string:
        v->s = (const char *)c->p;
        skip_cstr(c);
        break;
    case DW_FORM_block:
    case DW_FORM_exprloc:
        skip(c, uleb(c));
        break;
    case DW_FORM_block1:
        skip(c, rd(c, 1));
        break;
    case DW_FORM_block2:
        skip(c, rd(c, 2));
        break;
    case DW_FORM_block4:
        skip(c, rd(c, 4));
        break;
    case DW_FORM_sdata:
        v->u = (uint64_t)sleb(c);
        break;
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
        v->u = uleb(c);
        break;
    case DW_FORM_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_line_strp:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
        v->u = rd(c, u->offset_size);
        break;
    case DW_FORM_ref_addr:
        v->u = rd(c, u->version <= 2 ? u->addr_size : u->offset_size);
        break;
    case DW_FORM_flag_present:
        v->u = 1;
        break;
    case DW_FORM_implicit_const:
        v->u = (uint64_t)implicit;
        break;
    case DW_FORM_indirect: {
        uint64_t f = uleb(c);
        if (f == DW_FORM_indirect || f == DW_FORM_implicit_const || f > 0xffff)
            c->bad = true;
        else
            read_value(c, u, (uint16_t)f, 0, v);
        break;
    }
    default:
        c->bad = true; /* an unknown form has an unknown size: nothing after it can be read */
        break;
    }
}

/* Skip one value of `form` at c without decoding it (DW_FORM_indirect resolved). */
static void skip_value(cursor *c, const die_unit *u, uint16_t form)
{
    switch (form) {
    case DW_FORM_flag_present:
    case DW_FORM_implicit_const:
        return;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1:
        skip(c, 1);
        return;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2:
        skip(c, 2);
        return;
    case DW_FORM_strx3:
    case DW_FORM_addrx3:
        skip(c, 3);
        return;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4:
    case DW_FORM_ref_sup4:
        skip(c, 4);
        return;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
        skip(c, 8);
        return;
    case DW_FORM_data16:
        skip(c, 16);
        return;
    case DW_FORM_addr:
        skip(c, u->addr_size);
        return;
    case DW_FORM_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_line_strp:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
        skip(c, u->offset_size);
        return;
    case DW_FORM_ref_addr:
        skip(c, u->version <= 2 ? u->addr_size : u->offset_size);
        return;
    case DW_FORM_sdata:
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
        /* a LEB128 number: bytes up to the first without the high bit */
        while (!c->bad) {
            if (c->p >= c->end) {
                c->bad = true;
                break;
            }
            if ((*c->p++ & 0x80) == 0)
                break;
        }
        return;
    case DW_FORM_string:
        skip_cstr(c);
        return;
    case DW_FORM_block:
    case DW_FORM_exprloc:
        skip(c, uleb(c));
        return;
    case DW_FORM_block1:
        skip(c, rd(c, 1));
        return;
    case DW_FORM_block2:
        skip(c, rd(c, 2));
        return;
    case DW_FORM_block4:
        skip(c, rd(c, 4));
        return;
    case DW_FORM_indirect: {
        uint64_t f = uleb(c);
        if (f == DW_FORM_indirect || f == DW_FORM_implicit_const || f > 0xffff)
            c->bad = true;
        else
            skip_value(c, u, (uint16_t)f);
        return;
    }
    default:
        c->bad = true; /* an unknown form has an unknown size: nothing after it can be read */
        return;
    }
}

static const char *value_string(const die_sections *s, const die_unit *u, const value *v)
{
    switch (v->form) {
    case DW_FORM_string:
        return v->s;
    case DW_FORM_strp:
        return sect_str(&s->str, v->u);
    case DW_FORM_line_strp:
        return sect_str(&s->line_str, v->u);
    case DW_FORM_strx:
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
    case DW_FORM_GNU_str_index: {
        uint64_t pos = u->str_offsets_base + v->u * u->offset_size;
        if (v->u > s->str_offsets.len || pos + u->offset_size > s->str_offsets.len)
            return NULL;
        cursor c = at(&s->str_offsets, pos, pos + u->offset_size);
        uint64_t off = rd(&c, u->offset_size);
        return c.bad ? NULL : sect_str(&s->str, off);
    }
    default:
        return NULL;
    }
}

static bool indexed_addr(const die_sections *s, const die_unit *u, uint64_t index, uint64_t *out)
{
    uint64_t pos = u->addr_base + index * u->addr_size;
    if (index > s->addr.len || pos + u->addr_size > s->addr.len)
        return false;
    cursor c = at(&s->addr, pos, pos + u->addr_size);
    *out = rd(&c, u->addr_size);
    return !c.bad;
}

static bool value_addr(const die_sections *s, const die_unit *u, const value *v, uint64_t *out)
{
    switch (v->form) {
    case DW_FORM_addr:
        *out = v->u;
        return true;
    case DW_FORM_addrx:
    case DW_FORM_addrx1:
    case DW_FORM_addrx2:
    case DW_FORM_addrx3:
    case DW_FORM_addrx4:
    case DW_FORM_GNU_addr_index:
        return indexed_addr(s, u, v->u, out);
    default:
        return false;
    }
}

static bool value_ref(const die_unit *u, const value *v, uint64_t *out)
{
    switch (v->form) {
    case DW_FORM_ref1:
    case DW_FORM_ref2:
    case DW_FORM_ref4:
    case DW_FORM_ref8:
    case DW_FORM_ref_udata:
        *out = u->offset + v->u;
        return true;
    case DW_FORM_ref_addr:
        *out = v->u;
        return true;
    default:
        return false; /* type-unit signatures and supplementary files do not name functions */
    }
}

static bool value_is_constant(uint16_t form)
{
    switch (form) {
    case DW_FORM_data1:
    case DW_FORM_data2:
    case DW_FORM_data4:
    case DW_FORM_data8:
    case DW_FORM_udata:
    case DW_FORM_sdata:
    case DW_FORM_implicit_const:
        return true;
    default:
        return false;
    }
}

/* ---- DIEs ------------------------------------------------------------------------------- */

const char *die_read(die_info *d, const die_sections *s, const die_unit *u, uint64_t offset)
{
    return die_read_tags(d, s, u, offset, ~0ull);
}

/* Every field of `d` cleared, field by field: memset of the whole struct compiled to
 * `rep stos`, a quarter of the time of reading a DIE. */
static void die_info_clear(die_info *d, uint64_t offset)
{
    d->offset = offset;
    d->next = 0;
    d->tag = 0;
    d->children = d->has_low = d->has_high = d->high_is_size = d->has_ranges = false;
    d->low = d->high = 0;
    d->ranges_form = 0;
    d->ranges = 0;
    d->name = d->linkage = NULL;
    d->has_origin = d->has_spec = false;
    d->origin = d->spec = 0;
    d->has_call_file = d->has_call_line = false;
    d->call_file = d->call_line = 0;
    d->has_sibling = false;
    d->sibling = 0;
}

const char *die_read_tags(die_info *d, const die_sections *s, const die_unit *u, uint64_t offset,
                          uint64_t full_tags)
{
    die_info_clear(d, offset);
    cursor c = at(&s->info, offset, u->end);
    uint64_t code = uleb(&c);
    if (c.bad)
        return "DIE lies outside its unit";
    if (code == 0) {
        d->next = (uint64_t)(c.p - s->info.data);
        return NULL;
    }
    if (code >= u->abbrevs->ncodes || u->abbrevs->by_code[code].tag == 0)
        return "DIE uses an undefined abbreviation code";
    const die_abbrev *a = &u->abbrevs->by_code[code];
    d->tag = a->tag;
    d->children = a->children;
    const die_attr_spec *spec = u->abbrevs->specs + a->first;
    value v;
    if (!(full_tags == ~0ull || (a->tag < 64 && (full_tags >> a->tag & 1)))) {
        /* a DIE the caller only steps over: its sibling link, every other value skipped;
         * all at once when every value has a fixed size */
        if (a->fixed_size >= 0 && !a->has_sibling && u->abbrevs->sized_for == die_unit_size_key(u)) {
            skip(&c, (uint64_t)a->fixed_size);
            if (c.bad)
                return "DIE attribute runs past the end of its unit";
            d->next = (uint64_t)(c.p - s->info.data);
            return NULL;
        }
        for (uint32_t i = 0; i < a->count; i++) {
            if (spec[i].name == DW_AT_sibling) {
                read_value(&c, u, spec[i].form, spec[i].implicit, &v);
                d->has_sibling = !c.bad && value_ref(u, &v, &d->sibling);
            } else {
                skip_value(&c, u, spec[i].form);
            }
            if (c.bad)
                return "DIE attribute runs past the end of its unit";
        }
        d->next = (uint64_t)(c.p - s->info.data);
        return NULL;
    }
    for (uint32_t i = 0; i < a->count; i++) {
        read_value(&c, u, spec[i].form, spec[i].implicit, &v);
        if (c.bad)
            return "DIE attribute runs past the end of its unit";
        switch (spec[i].name) {
        case DW_AT_name:
            d->name = value_string(s, u, &v);
            break;
        case DW_AT_linkage_name:
        case DW_AT_MIPS_linkage_name:
            d->linkage = value_string(s, u, &v);
            break;
        case DW_AT_low_pc:
            d->has_low = value_addr(s, u, &v, &d->low);
            break;
        case DW_AT_high_pc:
            if (value_is_constant(v.form)) {
                d->has_high = true;
                d->high_is_size = true;
                d->high = v.u;
            } else {
                d->has_high = value_addr(s, u, &v, &d->high);
            }
            break;
        case DW_AT_ranges:
            d->has_ranges = true;
            d->ranges_form = v.form;
            d->ranges = v.u;
            break;
        case DW_AT_abstract_origin:
            d->has_origin = value_ref(u, &v, &d->origin);
            break;
        case DW_AT_specification:
            d->has_spec = value_ref(u, &v, &d->spec);
            break;
        case DW_AT_call_file:
            d->has_call_file = value_is_constant(v.form);
            d->call_file = v.u;
            break;
        case DW_AT_call_line:
            d->has_call_line = value_is_constant(v.form);
            d->call_line = v.u;
            break;
        case DW_AT_sibling:
            d->has_sibling = value_ref(u, &v, &d->sibling);
            break;
        default:
            break;
        }
    }
    d->next = (uint64_t)(c.p - s->info.data);
    return NULL;
}

const char *die_skip_children(uint64_t *out, const die_sections *s, const die_unit *u, uint64_t offset)
{
    cursor c = at(&s->info, offset, u->end);
    unsigned depth = 1;
    bool sized = u->abbrevs->sized_for == die_unit_size_key(u);
    while (!c.bad) {
        uint64_t code = uleb(&c);
        if (c.bad)
            break;
        if (code == 0) {
            if (--depth == 0) {
                *out = (uint64_t)(c.p - s->info.data);
                return NULL;
            }
            continue;
        }
        if (code >= u->abbrevs->ncodes || u->abbrevs->by_code[code].tag == 0)
            return "DIE uses an undefined abbreviation code";
        const die_abbrev *a = &u->abbrevs->by_code[code];
        const die_attr_spec *spec = u->abbrevs->specs + a->first;
        if (a->fixed_size >= 0 && sized)
            skip(&c, (uint64_t)a->fixed_size);
        else
            for (uint32_t i = 0; i < a->count && !c.bad; i++)
                skip_value(&c, u, spec[i].form);
        if (a->children && ++depth > 4096)
            return "DIE tree is nested too deeply";
    }
    return "DIE children run past the end of their unit";
}

const char *die_unit_bases(die_unit *u, const die_sections *s)
{
    /* DWARF 5 section 7.3.2/7.5.1: absent bases mean the first table in the section */
    u->str_offsets_base = u->version >= 5 ? (u->offset_size == 8 ? 16 : 8) : 0;
    u->addr_base = u->version >= 5 ? (u->offset_size == 8 ? 16 : 8) : 0;
    u->rnglists_base = u->version >= 5 ? (u->offset_size == 8 ? 20 : 12) : 0;
    u->base_addr = 0;
    u->comp_dir = NULL;
    u->language = 0;
    u->has_stmt_list = false;
    cursor c = at(&s->info, u->die_offset, u->end);
    uint64_t code = uleb(&c);
    if (c.bad || code == 0)
        return c.bad ? "unit has no unit DIE" : NULL;
    if (code >= u->abbrevs->ncodes || u->abbrevs->by_code[code].tag == 0)
        return "unit DIE uses an undefined abbreviation code";
    const die_abbrev *a = &u->abbrevs->by_code[code];
    const die_attr_spec *spec = u->abbrevs->specs + a->first;
    value v, low = {0, 0, NULL}, comp_dir = {0, 0, NULL};
    bool has_low = false, has_comp_dir = false;
    for (uint32_t i = 0; i < a->count; i++) {
        read_value(&c, u, spec[i].form, spec[i].implicit, &v);
        if (c.bad)
            return "unit DIE runs past the end of its unit";
        switch (spec[i].name) {
        case DW_AT_str_offsets_base:
            u->str_offsets_base = v.u;
            break;
        case DW_AT_addr_base:
        case DW_AT_GNU_addr_base:
            u->addr_base = v.u;
            break;
        case DW_AT_rnglists_base:
            u->rnglists_base = v.u;
            break;
        case DW_AT_low_pc:
            low = v;
            has_low = true;
            break;
        case DW_AT_comp_dir:
            comp_dir = v;
            has_comp_dir = true;
            break;
        case DW_AT_language:
            u->language = v.u > UINT32_MAX ? 0 : (uint32_t)v.u;
            break;
        case DW_AT_stmt_list:
            u->has_stmt_list = true;
            u->stmt_list = v.u;
            break;
        default:
            break;
        }
    }
    /* strx and addrx values are decoded once the bases are known */
    u->comp_dir = has_comp_dir ? value_string(s, u, &comp_dir) : NULL;
    if (has_low && !value_addr(s, u, &low, &u->base_addr))
        u->base_addr = 0;
    return NULL;
}

/* ---- ranges ----------------------------------------------------------------------------- */

static void put(uint64_t (*out)[2], size_t cap, long *n, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return;
    if ((size_t)*n < cap) {
        out[*n][0] = lo;
        out[*n][1] = hi;
    }
    (*n)++;
}

#define MAX_RANGE_ENTRIES 65536 /* per DIE: more is a corrupt or hostile list */

long die_ranges(uint64_t (*out)[2], size_t cap, const die_sections *s, const die_unit *u,
                const die_info *d)
{
    long n = 0;
    if (d->has_low && d->has_high) {
        put(out, cap, &n, d->low, d->high_is_size ? d->low + d->high : d->high);
        return n;
    }
    if (!d->has_ranges)
        return 0;
    uint64_t base = u->base_addr;
    if (u->version < 5 && d->ranges_form != DW_FORM_rnglistx) {
        /* .debug_ranges: (begin, end) pairs relative to the base; (0, 0) ends the list */
        cursor c = at(&s->ranges, d->ranges, s->ranges.len);
        uint64_t max = u->addr_size == 8 ? UINT64_MAX : UINT32_MAX;
        for (int i = 0; i < MAX_RANGE_ENTRIES; i++) {
            uint64_t b = rd(&c, u->addr_size), e = rd(&c, u->addr_size);
            if (c.bad)
                return -1;
            if (b == 0 && e == 0)
                return n;
            if (b == max) {
                base = e;
                continue;
            }
            put(out, cap, &n, base + b, base + e);
        }
        return -1;
    }
    uint64_t off = d->ranges;
    if (d->ranges_form == DW_FORM_rnglistx) {
        uint64_t pos = u->rnglists_base + d->ranges * u->offset_size;
        if (d->ranges > s->rnglists.len)
            return -1;
        cursor c = at(&s->rnglists, pos, s->rnglists.len);
        off = u->rnglists_base + rd(&c, u->offset_size);
        if (c.bad)
            return -1;
    }
    cursor c = at(&s->rnglists, off, s->rnglists.len);
    for (int i = 0; i < MAX_RANGE_ENTRIES; i++) {
        uint8_t kind = (uint8_t)rd(&c, 1);
        uint64_t a = 0, b = 0;
        if (c.bad)
            return -1;
        switch (kind) {
        case DW_RLE_end_of_list:
            return n;
        case DW_RLE_base_addressx:
            if (!indexed_addr(s, u, uleb(&c), &base))
                return -1;
            break;
        case DW_RLE_startx_endx:
            if (!indexed_addr(s, u, uleb(&c), &a) || !indexed_addr(s, u, uleb(&c), &b))
                return -1;
            put(out, cap, &n, a, b);
            break;
        case DW_RLE_startx_length:
            if (!indexed_addr(s, u, uleb(&c), &a))
                return -1;
            b = uleb(&c);
            put(out, cap, &n, a, a + b);
            break;
        case DW_RLE_offset_pair:
            a = uleb(&c);
            b = uleb(&c);
            put(out, cap, &n, base + a, base + b);
            break;
        case DW_RLE_base_address:
            base = rd(&c, u->addr_size);
            break;
        case DW_RLE_start_end:
            a = rd(&c, u->addr_size);
            b = rd(&c, u->addr_size);
            put(out, cap, &n, a, b);
            break;
        case DW_RLE_start_length:
            a = rd(&c, u->addr_size);
            b = uleb(&c);
            put(out, cap, &n, a, a + b);
            break;
        default:
            return -1;
        }
        if (c.bad)
            return -1;
    }
    return -1;
}

/* ---- address range sets ----------------------------------------------------------------- */

void die_aranges(const die_sections *s, void (*fn)(void *ctx, uint64_t unit_offset, uint64_t lo, uint64_t hi),
                 void *ctx)
{
    uint64_t set = 0;
    while (s->aranges.data != NULL && set < s->aranges.len) {
        cursor c = at(&s->aranges, set, s->aranges.len);
        uint64_t len = rd(&c, 4);
        unsigned offset_size = 4;
        if (len == 0xffffffffu) {
            len = rd(&c, 8);
            offset_size = 8;
        }
        uint64_t body = set + (offset_size == 8 ? 12 : 4);
        if (c.bad || len > s->aranges.len - body)
            return;
        uint64_t end = body + len;
        c = at(&s->aranges, body, end);
        uint16_t version = (uint16_t)rd(&c, 2);
        uint64_t unit_offset = rd(&c, offset_size);
        uint8_t addr_size = (uint8_t)rd(&c, 1), seg_size = (uint8_t)rd(&c, 1);
        if (c.bad || version != 2 || seg_size != 0 || (addr_size != 2 && addr_size != 4 && addr_size != 8))
            return;
        /* the tuples start at the first multiple of their size (two addresses) from the set's
         * start that is past the header */
        uint64_t header = (uint64_t)(c.p - s->aranges.data) - set, tuple = 2u * addr_size;
        uint64_t first = (header + tuple - 1) / tuple * tuple;
        c = at(&s->aranges, set + first, end);
        while (!c.bad && c.p < c.end) {
            uint64_t lo = rd(&c, addr_size), n = rd(&c, addr_size);
            if (c.bad)
                return;
            if (lo == 0 && n == 0)
                break; /* the terminating tuple */
            if (n > 0 && lo + n > lo)
                fn(ctx, unit_offset, lo, lo + n);
        }
        set = end;
    }
}

/* ---- line programs ---------------------------------------------------------------------- */

#define MAX_LINE_TABLE_ENTRIES 1000000 /* directories or files in one header */

/* A DWARF 5 entry-format description: (content type, form) pairs. */
typedef struct {
    uint64_t type, form;
} entry_format;

/* Read one DWARF 5 directory or file entry; the path and the directory index come out. */
static void read_entry(cursor *c, const die_sections *s, const die_unit *u, const entry_format *fmt,
                       unsigned nfmt, const char **path, uint64_t *dir_index)
{
    *path = NULL;
    *dir_index = 0;
    for (unsigned k = 0; k < nfmt && !c->bad; k++) {
        value v;
        if (fmt[k].form > 0xffff) {
            c->bad = true;
            return;
        }
        read_value(c, u, (uint16_t)fmt[k].form, 0, &v);
        if (fmt[k].type == DW_LNCT_path)
            *path = value_string(s, u, &v);
        else if (fmt[k].type == DW_LNCT_directory_index)
            *dir_index = v.u;
    }
}

const char *die_line_program(const die_sections *s, const die_unit *u, uint64_t offset,
                             const die_line_sink *sink)
{
    cursor c = at(&s->line, offset, s->line.len);
    if (c.bad)
        return "line table offset is outside .debug_line";
    unsigned offset_size = 4;
    uint64_t len = rd(&c, 4);
    if (len == 0xffffffffull) {
        len = rd(&c, 8);
        offset_size = 8;
    }
    if (c.bad || len > (uint64_t)(c.end - c.p))
        return "line table extends past the end of .debug_line";
    c.end = c.p + len;
    uint16_t version = (uint16_t)rd(&c, 2);
    if (version < 2 || version > 5)
        return "line table has an unsupported version";
    /* the line table's own offset size and address size govern its forms */
    die_unit lu = *u;
    lu.offset_size = (uint8_t)offset_size;
    if (version >= 5) {
        uint8_t addr_size = (uint8_t)rd(&c, 1);
        if (addr_size == 4 || addr_size == 8)
            lu.addr_size = addr_size;
        skip(&c, 1); /* segment selector size */
    }
    uint64_t header_length = rd(&c, offset_size);
    if (c.bad || header_length > (uint64_t)(c.end - c.p))
        return "line table header extends past the table";
    const uint8_t *program = c.p + header_length;
    uint8_t min_inst = (uint8_t)rd(&c, 1);
    if (version >= 4)
        skip(&c, 1); /* maximum_operations_per_instruction: VLIW only */
    bool default_is_stmt = rd(&c, 1) != 0;
    (void)default_is_stmt;
    int8_t line_base = (int8_t)rd(&c, 1);
    uint8_t line_range = (uint8_t)rd(&c, 1);
    uint8_t opcode_base = (uint8_t)rd(&c, 1);
    if (c.bad)
        return "truncated line table header";
    if (line_range == 0)
        return "line table has line_range 0";
    uint8_t std_lengths[256] = {0};
    for (unsigned i = 1; i < opcode_base; i++)
        std_lengths[i] = (uint8_t)rd(&c, 1);

    /* directories and files */
    uint64_t next_index = 0; /* number a DW_LNE_define_file entry gets */
    if (version >= 5) {
        entry_format dfmt[16], ffmt[16];
        unsigned ndf = (unsigned)rd(&c, 1);
        if (ndf > 16)
            return "line table directory format has too many fields";
        for (unsigned k = 0; k < ndf; k++)
            dfmt[k].type = uleb(&c), dfmt[k].form = uleb(&c);
        uint64_t ndirs = uleb(&c);
        if (c.bad || ndirs > MAX_LINE_TABLE_ENTRIES)
            return "malformed line table directory list";
        const char **dirs = xcalloc(ndirs ? ndirs : 1, sizeof *dirs);
        for (uint64_t i = 0; i < ndirs && !c.bad; i++) {
            uint64_t unused;
            read_entry(&c, s, &lu, dfmt, ndf, &dirs[i], &unused);
        }
        unsigned nff = c.bad ? 0 : (unsigned)rd(&c, 1);
        if (nff > 16) {
            free(dirs);
            return "line table file format has too many fields";
        }
        for (unsigned k = 0; k < nff; k++)
            ffmt[k].type = uleb(&c), ffmt[k].form = uleb(&c);
        uint64_t nfiles = uleb(&c);
        if (c.bad || nfiles > MAX_LINE_TABLE_ENTRIES) {
            free(dirs);
            return "malformed line table file list";
        }
        for (uint64_t i = 0; i < nfiles && !c.bad; i++) {
            const char *name;
            uint64_t di;
            read_entry(&c, s, &lu, ffmt, nff, &name, &di);
            if (!c.bad)
                sink->file(sink->ctx, i, name, di < ndirs ? dirs[di] : NULL, di == 0);
        }
        free(dirs);
    } else {
        /* include_directories: strings up to an empty one; entry 0 is the comp dir */
        const char **dirs = NULL;
        size_t ndirs = 0, cap = 0;
        for (;;) {
            const char *d = (const char *)c.p;
            skip_cstr(&c);
            if (c.bad || d[0] == '\0')
                break;
            if (ndirs == cap) {
                cap = cap ? cap * 2 : 16;
                dirs = xreallocarray(dirs, cap, sizeof *dirs);
            }
            dirs[ndirs++] = d;
            if (ndirs > MAX_LINE_TABLE_ENTRIES)
                c.bad = true;
        }
        for (uint64_t i = 1; !c.bad; i++) {
            next_index = i;
            const char *name = (const char *)c.p;
            skip_cstr(&c);
            if (c.bad || name[0] == '\0')
                break;
            uint64_t di = uleb(&c);
            uleb(&c); /* mtime */
            uleb(&c); /* length */
            if (!c.bad)
                sink->file(sink->ctx, i, name, di > 0 && di <= ndirs ? dirs[di - 1] : NULL, false);
            next_index = i + 1;
            if (i > MAX_LINE_TABLE_ENTRIES)
                c.bad = true;
        }
        free(dirs);
    }
    if (c.bad)
        return "truncated line table header";

    /* the program: DWARF 5 section 6.2.2 state machine */
    c.p = program;
    uint64_t addr = 0, file = 1, line = 1;
    uint64_t nfile_defs = 0;
    while (c.p < c.end && !c.bad) {
        uint8_t op = (uint8_t)rd(&c, 1);
        if (op >= opcode_base) {
            unsigned adj = op - opcode_base;
            addr += (uint64_t)(adj / line_range) * min_inst;
            line += (uint64_t)((int64_t)line_base + (int64_t)(adj % line_range));
            sink->row(sink->ctx, addr, file, line, false);
            continue;
        }
        switch (op) {
        case 0: { /* extended */
            uint64_t elen = uleb(&c);
            if (c.bad || elen == 0 || elen > (uint64_t)(c.end - c.p)) {
                c.bad = true;
                break;
            }
            const uint8_t *next = c.p + elen;
            uint8_t sub = (uint8_t)rd(&c, 1);
            if (sub == DW_LNE_end_sequence) {
                sink->row(sink->ctx, addr, file, line, true);
                addr = 0, file = 1, line = 1;
            } else if (sub == DW_LNE_set_address) {
                addr = rd(&c, elen - 1 >= 8 ? 8 : (unsigned)(elen - 1));
            } else if (sub == DW_LNE_define_file && version < 5) {
                /* a file added by the program: it takes the next number */
                const char *name = (const char *)c.p;
                skip_cstr(&c);
                uint64_t di = uleb(&c);
                (void)di; /* its directory list is gone: the name is used as given */
                if (!c.bad && nfile_defs++ < MAX_LINE_TABLE_ENTRIES)
                    sink->file(sink->ctx, next_index++, name, NULL, false);
            }
            c.p = next; /* set_discriminator and unknown extended opcodes skipped */
            break;
        }
        case DW_LNS_copy:
            sink->row(sink->ctx, addr, file, line, false);
            break;
        case DW_LNS_advance_pc:
            addr += uleb(&c) * min_inst;
            break;
        case DW_LNS_advance_line:
            line += (uint64_t)sleb(&c);
            break;
        case DW_LNS_set_file:
            file = uleb(&c);
            break;
        case DW_LNS_const_add_pc:
            addr += (uint64_t)((255 - opcode_base) / line_range) * min_inst;
            break;
        case DW_LNS_fixed_advance_pc:
            addr += rd(&c, 2);
            break;
        default:
            /* set_column, negate_stmt, basic_block, prologue/epilogue, isa and any opcode
             * this reader does not know: skip its ULEB operands */
            for (unsigned k = 0; k < std_lengths[op]; k++)
                uleb(&c);
            break;
        }
    }
    return c.bad ? "malformed line program" : NULL;
}
