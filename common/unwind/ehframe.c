/*
 * ehframe - DWARF call frame information from `__TEXT,__eh_frame` (the FDE a compact unwind
 * DWARF encoding points to) and from a dSYM's `__DWARF,__debug_frame` (found through an index
 * of its FDEs): the FDE's CIE, and the row of the CFA program that covers an address.
 *
 * Formats: DWARF 5 section 6.4 (Call Frame Information) for `__debug_frame`: 32- or 64-bit
 * entries, CIE id 0xffffffff (all ones in 64-bit entries), the FDE's CIE pointer an offset
 * from the section's start, addresses of the CIE's address size (version 4; 8 before it),
 * absolute. The .eh_frame changes of the Linux Standard Base for `__eh_frame`: CIE id 0, the
 * CIE pointer relative to its own field, augmentation strings "z", "zR", "zPLR", ... and
 * DW_EH_PE pointer encodings. Every read is bounded by the section; the CFA program is
 * bounded in steps and in remember_state depth.
 */
#include "unwind/unwind.h"

#include <stdlib.h>
#include <string.h>

#include "base/search.h"

#define MAX_CFA_STEPS 100000
#define MAX_STATE_DEPTH 16

typedef struct {
    const uint8_t *p, *end;
    const uint8_t *base;     /* the section's first byte */
    uint64_t base_vmaddr;    /* its vm address: pc-relative pointers are relative to it */
    bool bad;
} cursor;

static uint8_t u8(cursor *c)
{
    if (c->p >= c->end) {
        c->bad = true;
        return 0;
    }
    return *c->p++;
}

static uint64_t fixed(cursor *c, unsigned n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

static uint64_t uleb(cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = u8(c);
        if (c->bad)
            return 0;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

static int64_t sleb(cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = u8(c);
        if (c->bad)
            return 0;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~0ull << shift;
    return (int64_t)v;
}

/* pointer - a DW_EH_PE-encoded pointer; pcrel is applied (relative to the field's vm
 * address), indirect and the other bases are refused (c->bad). */
static uint64_t pointer(cursor *c, uint8_t enc)
{
    if (enc == 0xff) /* DW_EH_PE_omit */
        return 0;
    uint64_t field = c->base_vmaddr + (uint64_t)(c->p - c->base), v;
    switch (enc & 0x0f) {
    case 0x00: v = fixed(c, 8); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = fixed(c, 2); break;
    case 0x03: v = fixed(c, 4); break;
    case 0x04: v = fixed(c, 8); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
    case 0x0c: v = fixed(c, 8); break;
    default: c->bad = true; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += field; break;
    default: c->bad = true; return 0; /* textrel, datarel, funcrel, aligned: not on Darwin */
    }
    if (enc & 0x80)
        c->bad = true; /* indirect: the pointer is in memory we do not have */
    return v;
}

/* entry - the CIE or FDE at `off`: its content [*start, *end) after the length field;
 * *wide: a 64-bit DWARF entry (its CIE id or pointer is 8 bytes). */
static bool entry(const uint8_t **start, const uint8_t **end, bool *wide, const uint8_t *sect,
                  size_t len, uint64_t off)
{
    if (off > len || len - off < 4)
        return false;
    cursor c = {sect + off, sect + len, sect, 0, false};
    uint64_t n = fixed(&c, 4);
    *wide = n == 0xffffffffu;
    if (*wide)
        n = fixed(&c, 8);
    if (c.bad || n == 0 || n > (uint64_t)(c.end - c.p))
        return false;
    *start = c.p;
    *end = c.p + n;
    return true;
}

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    unsigned ra_reg;
    uint8_t fde_enc;
    bool has_z;
    const uint8_t *insns, *insns_end;
} cie;

/* read_cie - the CIE at `off`. __debug_frame (`debug`): its id is all ones, its pointers
 * absolute of the CIE's address size (4 or 8; version 4 says which, 8 before it); a segment
 * selector is refused. */
static bool read_cie(cie *out, const uint8_t *sect, size_t len, uint64_t vmaddr, uint64_t off,
                     bool debug)
{
    const uint8_t *s, *e;
    bool wide;
    if (!entry(&s, &e, &wide, sect, len, off))
        return false;
    cursor c = {s, e, sect, vmaddr, false};
    uint64_t id = fixed(&c, wide ? 8 : 4);
    if (id != (debug ? (wide ? UINT64_MAX : 0xffffffffu) : 0))
        return false;
    uint8_t version = u8(&c);
    if (version != 1 && version != 3 && version != 4)
        return false;
    const uint8_t *aug = c.p;
    while (c.p < c.end && *c.p != 0)
        c.p++;
    size_t aug_len = (size_t)(c.p - aug);
    u8(&c); /* the NUL */
    uint8_t addr_size = 8;
    if (version == 4) {
        addr_size = u8(&c);
        if (u8(&c) != 0) /* segment selector size: no segmented addresses on Darwin */
            return false;
    }
    memset(out, 0, sizeof *out);
    /* eh_frame: absptr unless 'R' says otherwise; debug_frame: the address size, absolute */
    out->fde_enc = 0;
    if (debug) {
        if (addr_size != 4 && addr_size != 8)
            return false;
        out->fde_enc = addr_size == 4 ? 0x03 : 0x00;
    }
    out->code_align = uleb(&c);
    out->data_align = sleb(&c);
    out->ra_reg = version == 1 ? u8(&c) : (unsigned)uleb(&c);
    const uint8_t *aug_end = NULL;
    if (aug_len > 0 && aug[0] == 'z') {
        out->has_z = true;
        uint64_t n = uleb(&c);
        if (c.bad || n > (uint64_t)(c.end - c.p))
            return false;
        aug_end = c.p + n;
    }
    for (size_t i = out->has_z ? 1 : 0; i < aug_len; i++) {
        switch (aug[i]) {
        case 'R': out->fde_enc = u8(&c); break;
        case 'L': u8(&c); break;                        /* LSDA encoding */
        case 'P': { uint8_t pe = u8(&c); pointer(&c, (uint8_t)(pe & 0x7f)); break; }
        case 'S': case 'B': break;                      /* signal frame, arm64 B-key */
        default:
            if (aug_end == NULL)
                return false; /* unknown augmentation without a length to skip it */
            i = aug_len;
        }
    }
    if (aug_end != NULL)
        c.p = aug_end;
    if (c.bad)
        return false;
    out->insns = c.p;
    out->insns_end = c.end;
    return true;
}

/* ---- the CFA program ----------------------------------------------------------------- */

typedef struct {
    unsigned cfa_reg;
    int64_t cfa_offset;
    unwind_reg_rule regs[UNWIND_CFI_REGS];
} row;

static void set_rule(row *r, uint64_t reg, unwind_reg_kind kind, int64_t value)
{
    if (reg < UNWIND_CFI_REGS) { /* vector registers and above are not tracked */
        r->regs[reg].kind = kind;
        r->regs[reg].value = value;
    }
}

/* run - execute the instructions [p, end) until the location passes `target`. `init` is the
 * row after the CIE's initial instructions (for DW_CFA_restore). False when an instruction
 * cannot be followed (an expression, bad bytes, too deep a state stack). */
static bool run(row *r, uint64_t *loc, const cie *ci, const row *init, const uint8_t *p,
                const uint8_t *end, const uint8_t *sect, uint64_t vmaddr, uint64_t target,
                unsigned *steps)
{
    row stack[MAX_STATE_DEPTH];
    unsigned depth = 0;
    cursor c = {p, end, sect, vmaddr, false};
    while (c.p < c.end) {
        if (++*steps > MAX_CFA_STEPS)
            return false;
        uint8_t op = u8(&c);
        uint64_t reg, advance = 0;
        switch (op >> 6) {
        case 1: advance = (op & 0x3f) * ci->code_align; break;
        case 2:
            set_rule(r, op & 0x3f, UNWIND_REG_OFFSET, (int64_t)uleb(&c) * ci->data_align);
            continue;
        case 3:
            reg = op & 0x3f;
            if (reg < UNWIND_CFI_REGS)
                r->regs[reg] = init->regs[reg];
            continue;
        }
        if ((op >> 6) == 0) {
            switch (op) {
            case 0x00: break; /* nop */
            case 0x01: { uint64_t to = pointer(&c, ci->fde_enc); if (to > target) return !c.bad; *loc = to; break; }
            case 0x02: advance = fixed(&c, 1) * ci->code_align; break;
            case 0x03: advance = fixed(&c, 2) * ci->code_align; break;
            case 0x04: advance = fixed(&c, 4) * ci->code_align; break;
            case 0x05: reg = uleb(&c); set_rule(r, reg, UNWIND_REG_OFFSET, (int64_t)uleb(&c) * ci->data_align); break;
            case 0x06: reg = uleb(&c); if (reg < UNWIND_CFI_REGS) r->regs[reg] = init->regs[reg]; break;
            case 0x07: set_rule(r, uleb(&c), UNWIND_REG_UNDEFINED, 0); break;
            case 0x08: set_rule(r, uleb(&c), UNWIND_REG_SAME, 0); break;
            case 0x09: reg = uleb(&c); set_rule(r, reg, UNWIND_REG_REGISTER, (int64_t)uleb(&c)); break;
            case 0x0a:
                if (depth == MAX_STATE_DEPTH)
                    return false;
                stack[depth++] = *r;
                break;
            case 0x0b: {
                if (depth == 0)
                    return false;
                /* the CFA is not part of the remembered state's restore in LLVM's reading
                 * either way; both keep it: restore the whole row */
                *r = stack[--depth];
                break;
            }
            case 0x0c: r->cfa_reg = (unsigned)uleb(&c); r->cfa_offset = (int64_t)uleb(&c); break;
            case 0x0d: r->cfa_reg = (unsigned)uleb(&c); break;
            case 0x0e: r->cfa_offset = (int64_t)uleb(&c); break;
            case 0x11: reg = uleb(&c); set_rule(r, reg, UNWIND_REG_OFFSET, sleb(&c) * ci->data_align); break;
            case 0x12: r->cfa_reg = (unsigned)uleb(&c); r->cfa_offset = sleb(&c) * ci->data_align; break;
            case 0x13: r->cfa_offset = sleb(&c) * ci->data_align; break;
            case 0x14: reg = uleb(&c); set_rule(r, reg, UNWIND_REG_VAL_OFFSET, (int64_t)uleb(&c) * ci->data_align); break;
            case 0x15: reg = uleb(&c); set_rule(r, reg, UNWIND_REG_VAL_OFFSET, sleb(&c) * ci->data_align); break;
            case 0x2e: uleb(&c); break; /* DW_CFA_GNU_args_size */
            case 0x2f: reg = uleb(&c); set_rule(r, reg, UNWIND_REG_OFFSET, -(int64_t)uleb(&c) * ci->data_align); break;
            default: return false; /* expressions (0x0f, 0x10, 0x16) and unknown opcodes */
            }
        }
        if (c.bad)
            return false;
        if (advance > 0) {
            if (*loc + advance > target)
                return true;
            *loc += advance;
        }
    }
    return !c.bad;
}

/* The header of one FDE: its CIE, the range it covers, where its instructions are. */
typedef struct {
    cie ci;
    uint64_t pc_begin, pc_range;
    const uint8_t *insns, *insns_end;
} fde;

typedef enum { FDE_OK, FDE_IS_CIE, FDE_BAD_ENTRY, FDE_BAD_CIE, FDE_TRUNCATED } fde_status;

/* read_fde - the FDE at `off` of an __eh_frame or (`debug`) __debug_frame section. FDE_IS_CIE
 * when the entry there is a CIE. */
static fde_status read_fde(fde *out, const uint8_t *sect, size_t len, uint64_t vmaddr,
                           uint64_t off, bool debug)
{
    const uint8_t *s, *e;
    bool wide;
    if (!entry(&s, &e, &wide, sect, len, off))
        return FDE_BAD_ENTRY;
    cursor c = {s, e, sect, vmaddr, false};
    uint64_t cie_ptr_field = (uint64_t)(c.p - sect);
    uint64_t cie_ptr = fixed(&c, wide ? 8 : 4), cie_off;
    if (c.bad)
        return FDE_BAD_ENTRY;
    if (debug) {
        /* DWARF: an offset from the section's start; all ones marks a CIE */
        if (cie_ptr == (wide ? UINT64_MAX : 0xffffffffu))
            return FDE_IS_CIE;
        cie_off = cie_ptr;
    } else {
        /* .eh_frame: 0 marks a CIE, else the distance back from this field */
        if (cie_ptr == 0)
            return FDE_IS_CIE;
        if (cie_ptr > cie_ptr_field)
            return FDE_BAD_CIE;
        cie_off = cie_ptr_field - cie_ptr;
    }
    if (cie_off >= len || !read_cie(&out->ci, sect, len, vmaddr, cie_off, debug))
        return FDE_BAD_CIE;
    out->pc_begin = pointer(&c, out->ci.fde_enc);
    out->pc_range = pointer(&c, (uint8_t)(out->ci.fde_enc & 0x0f)); /* a size: no pcrel */
    if (out->ci.has_z) {
        uint64_t n = uleb(&c);
        if (n > (uint64_t)(c.end - c.p))
            c.bad = true;
        else
            c.p += n;
    }
    if (c.bad)
        return FDE_TRUNCATED;
    out->insns = c.p;
    out->insns_end = c.end;
    return FDE_OK;
}

/* fde_row - the row at `target` of FDE `f` (read_fde) at `fde_off`; `what` names the
 * section in errors. */
static err_code fde_row(unwind_cfi_row *out, const fde *f, const uint8_t *sect, uint64_t vmaddr,
                        uint64_t fde_off, uint64_t target, const char *what, err_info *err);

static err_code fde_status_error(fde_status st, uint64_t fde_off, const char *what, err_info *err)
{
    switch (st) {
    case FDE_OK:
        break;
    case FDE_IS_CIE:
        return err_set(err, ERR_INVALID, "%s: entry at 0x%llx is not an FDE", what,
                       (unsigned long long)fde_off);
    case FDE_BAD_ENTRY:
        return err_set(err, ERR_INVALID, "%s: no FDE at offset 0x%llx", what,
                       (unsigned long long)fde_off);
    case FDE_BAD_CIE:
        return err_set(err, ERR_INVALID, "%s: the CIE of the FDE at 0x%llx is unreadable", what,
                       (unsigned long long)fde_off);
    case FDE_TRUNCATED:
        return err_set(err, ERR_INVALID, "%s: FDE at 0x%llx is truncated", what,
                       (unsigned long long)fde_off);
    }
    return ERR_OK;
}

err_code unwind_dwarf_row(unwind_cfi_row *out, const uint8_t *sect, size_t len, uint64_t vmaddr,
                          uint64_t fde_off, uint64_t target, err_info *err)
{
    fde f;
    memset(out, 0, sizeof *out);
    fde_status st = read_fde(&f, sect, len, vmaddr, fde_off, false);
    if (st != FDE_OK)
        return fde_status_error(st, fde_off, "__eh_frame", err);
    return fde_row(out, &f, sect, vmaddr, fde_off, target, "__eh_frame", err);
}

err_code unwind_debug_frame_row(unwind_cfi_row *out, const uint8_t *sect, size_t len,
                                uint64_t fde_off, uint64_t target, err_info *err)
{
    fde f;
    memset(out, 0, sizeof *out);
    fde_status st = read_fde(&f, sect, len, 0, fde_off, true);
    if (st != FDE_OK)
        return fde_status_error(st, fde_off, "__debug_frame", err);
    return fde_row(out, &f, sect, 0, fde_off, target, "__debug_frame", err);
}

static int by_start(const void *x, const void *y)
{
    const unwind_fde *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->fde_off < b->fde_off ? -1 : a->fde_off > b->fde_off;
}

err_code unwind_debug_frame_list(unwind_fde **out, size_t *n, const uint8_t *sect, size_t len,
                                 arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    /* a first pass counts the entries, so that the list is one allocation */
    size_t count = 0;
    for (uint64_t off = 0; off + 4 <= len;) {
        const uint8_t *s, *e;
        bool wide;
        if (!entry(&s, &e, &wide, sect, len, off))
            break;
        count++;
        off = (uint64_t)(e - sect);
    }
    if (count == 0)
        return ERR_OK;
    unwind_fde *list = arena_alloc_array(a, count, sizeof *list, err);
    if (list == NULL)
        return ERR_TOO_LARGE;
    size_t k = 0;
    uint64_t off = 0;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *s, *e;
        bool wide;
        if (!entry(&s, &e, &wide, sect, len, off))
            break;
        fde f;
        fde_status st = read_fde(&f, sect, len, 0, off, true);
        /* an FDE this reader cannot follow covers nothing here; the rest still serve.
         * An empty range or one past 2^64 is left out (it would break the order). */
        if (st == FDE_OK && f.pc_range > 0 && f.pc_begin + f.pc_range > f.pc_begin) {
            list[k].start = f.pc_begin;
            list[k].end = f.pc_begin + f.pc_range;
            list[k].fde_off = off;
            k++;
        }
        off = (uint64_t)(e - sect);
    }
    qsort(list, k, sizeof *list, by_start);
    /* overlapping FDEs (dead code left at a reused address): the earlier start wins, the
     * later one is clipped, and left out if nothing of it remains */
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && list[i].start < list[m - 1].end) {
            if (list[i].end <= list[m - 1].end)
                continue;
            list[i].start = list[m - 1].end;
        }
        list[m++] = list[i];
    }
    *out = k ? list : NULL;
    *n = m;
    return ERR_OK;
}

DEFINE_COUNT_AT_MOST(fdes_starting_at_most, unwind_fde, start)

const unwind_fde *unwind_fde_find(const unwind_fde *fdes, size_t n, uint64_t addr)
{
    size_t lo = fdes_starting_at_most(fdes, n, addr);
    if (lo == 0 || addr >= fdes[lo - 1].end)
        return NULL;
    return &fdes[lo - 1];
}

static err_code fde_row(unwind_cfi_row *out, const fde *f, const uint8_t *sect, uint64_t vmaddr,
                        uint64_t fde_off, uint64_t target, const char *what, err_info *err)
{
    const cie ci = f->ci;
    uint64_t pc_begin = f->pc_begin, pc_range = f->pc_range;
    if (pc_begin + pc_range < pc_begin) /* no end to give (unwind_debug_frame_list leaves it out) */
        return err_set(err, ERR_INVALID, "%s: FDE at 0x%llx covers 0x%llx bytes from 0x%llx, past "
                       "the end of the address space", what, (unsigned long long)fde_off,
                       (unsigned long long)pc_range, (unsigned long long)pc_begin);
    if (target < pc_begin || target - pc_begin >= pc_range)
        return err_set(err, ERR_NOT_FOUND, "%s: FDE at 0x%llx covers [0x%llx, 0x%llx), "
                       "not 0x%llx", what, (unsigned long long)fde_off, (unsigned long long)pc_begin,
                       (unsigned long long)(pc_begin + pc_range), (unsigned long long)target);
    row init = {0}, r;
    uint64_t loc = pc_begin;
    unsigned steps = 0;
    if (!run(&init, &loc, &ci, &init, ci.insns, ci.insns_end, sect, vmaddr, UINT64_MAX, &steps))
        return err_set(err, ERR_UNSUPPORTED, "%s: the CIE's instructions of the FDE at "
                       "0x%llx cannot be followed", what, (unsigned long long)fde_off);
    r = init;
    loc = pc_begin;
    if (!run(&r, &loc, &ci, &init, f->insns, f->insns_end, sect, vmaddr, target, &steps))
        return err_set(err, ERR_UNSUPPORTED, "%s: the FDE at 0x%llx uses an instruction "
                       "this reader does not follow (an expression)", what,
                       (unsigned long long)fde_off);
    out->func_start = pc_begin;
    out->func_end = pc_begin + pc_range;
    out->cfa_reg = r.cfa_reg;
    out->cfa_offset = r.cfa_offset;
    out->ra_reg = ci.ra_reg;
    memcpy(out->regs, r.regs, sizeof out->regs);
    return ERR_OK;
}
