/*
 * walk - stack walking over a minidump's memory (see walk.h for the rules).
 */
#include "unwind/walk.h"

#include <stdlib.h>
#include <string.h>

#include "breakpad/breakpad.h"

#define MIN_PC UNWIND_MIN_PC
/* arm64 return addresses may carry pointer-authentication bits above the 47-bit user
 * address space (macOS and iOS user addresses fit in 47 bits). */
#define ARM64_ADDR_MASK 0x00007fffffffffffull

typedef struct {
    uint64_t regs[MINIDUMP_MAX_REGS];
    uint64_t valid; /* bit i: regs[i] is known */
} regset;

struct mod_ref {
    uint64_t load_addr;
    uint32_t index; /* into md->modules */
};

/* One image the walker knows: its unwind info, and what the walks derive from it on first
 * use, for every thread of the dump (its __debug_frame's FDEs by address). */
struct image_slot {
    unwind_image img;             /* a copy: its pointers borrowed as the caller's */
    bool indexed;                 /* fdes built (or found unbuildable) */
    const unwind_fde *fdes;
    size_t nfdes;
};

#define MOD_UNASKED (-2)          /* mod_slot: not looked for yet */
#define MOD_NONE (-1)             /* mod_slot: no unwind info (looked for, or no UUID) */

struct unwind_walker {
    const minidump *md;
    struct image_slot *slots;     /* the given images, then those resolved (nimages + nmodules) */
    size_t nslots;
    int32_t *mod_slot;            /* per module: MOD_UNASKED, MOD_NONE or its index in slots */
    struct mod_ref *by_addr;      /* the modules sorted by load address */
    unwind_resolve_fn resolve;    /* NULL: the given images only */
    void *resolve_ctx;
    arena *a;                     /* the frames and the debug_frame indexes */
    size_t indexes;               /* __debug_frame indexes built */
};

/* One thread's walk over its dump's walker. */
typedef struct {
    unwind_walker *d;
    const minidump *md;
    minidump_arch arch;
    unsigned sp, fp, pc;          /* DWARF numbers of these registers for arch */
    uint64_t callee_saved;        /* mask of registers that carry over to a caller */
    const struct mod_ref *by_addr;
} walker;

static bool known(const regset *r, unsigned i)
{
    return (r->valid >> i) & 1;
}

static void set(regset *r, unsigned i, uint64_t v)
{
    r->regs[i] = v;
    r->valid |= 1ull << i;
}

static bool read64(uint64_t *out, const walker *w, uint64_t addr)
{
    const uint8_t *p = minidump_memory_find(w->md, addr, 8);
    if (p == NULL)
        return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    *out = v;
    return true;
}

static uint64_t strip(const walker *w, uint64_t addr)
{
    return w->arch == MINIDUMP_ARCH_ARM64 ? addr & ARM64_ADDR_MASK : addr;
}

/* module_of - the module whose [load_addr, load_addr + size) holds addr, by binary search
 * (a scan asks for every stack word); of overlapping modules, the one loaded last below addr. */
static int module_of(const walker *w, uint64_t addr)
{
    const minidump_module *mods = w->md->modules;
    size_t lo = 0, hi = w->md->nmodules;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->by_addr[mid].load_addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const minidump_module *m = &mods[w->by_addr[lo - 1].index];
    return addr - m->load_addr < m->size ? (int)w->by_addr[lo - 1].index : -1;
}

static int by_load_addr(const void *x, const void *y)
{
    const struct mod_ref *a = x, *b = y;
    if (a->load_addr != b->load_addr)
        return a->load_addr < b->load_addr ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* slot_find - the slot of module `module`: the first given or resolved image of its UUID, else
 * (a UUID no module asked before was refused) what the resolver gives; MOD_NONE if nothing. */
static int32_t slot_find(unwind_walker *d, size_t module)
{
    const minidump_module *m = &d->md->modules[module];
    if (!m->has_uuid)
        return MOD_NONE;
    for (size_t i = 0; i < d->nslots; i++)
        if (memcmp(d->slots[i].img.uuid, m->uuid, 16) == 0)
            return (int32_t)i;
    if (d->resolve == NULL)
        return MOD_NONE;
    for (size_t j = 0; j < d->md->nmodules; j++)
        if (d->mod_slot[j] == MOD_NONE && d->md->modules[j].has_uuid &&
            memcmp(d->md->modules[j].uuid, m->uuid, 16) == 0)
            return MOD_NONE;   /* refused for this UUID already */
    struct image_slot *s = &d->slots[d->nslots];
    memset(s, 0, sizeof *s);
    if (!d->resolve(&s->img, d->resolve_ctx, module))
        return MOD_NONE;
    memcpy(s->img.uuid, m->uuid, 16);   /* the module's, whatever the resolver wrote */
    return (int32_t)d->nslots++;
}

/* slot_of - the image module `module` walks with (slot_find on first use), NULL if none. */
static struct image_slot *slot_of(unwind_walker *d, int module)
{
    if (module < 0 || (size_t)module >= d->md->nmodules)
        return NULL;
    if (d->mod_slot[module] == MOD_UNASKED)
        d->mod_slot[module] = slot_find(d, (size_t)module);
    return d->mod_slot[module] >= 0 ? &d->slots[d->mod_slot[module]] : NULL;
}

/* debug_frame_fdes - the FDEs of the image's __debug_frame by address, indexed on first use
 * and kept for the dump's other threads (a walk asks for few images; a dSYM's section has one
 * FDE per function). */
static const unwind_fde *debug_frame_fdes(size_t *n, const walker *w, struct image_slot *st)
{
    const unwind_image *img = &st->img;
    if (!st->indexed) {
        st->indexed = true;
        unwind_fde *list = NULL;
        err_info err = {0};
        if (img->debug_frame != NULL)
            w->d->indexes++;
        /* over the arena's budget the image is walked without its __debug_frame: the
         * frame falls to the next method, as with no __debug_frame at all */
        if (img->debug_frame != NULL &&
            unwind_debug_frame_list(&list, &st->nfdes, img->debug_frame, img->debug_frame_len,
                                    w->d->a, &err) == ERR_OK)
            st->fdes = list;
        else
            st->nfdes = 0;
    }
    *n = st->nfdes;
    return st->fdes;
}

/* caller_base - the registers a caller inherits: the callee-saved ones. */
static regset caller_base(const walker *w, const regset *cur)
{
    regset next = *cur;
    next.valid &= w->callee_saved;
    return next;
}

static bool apply_row(regset *next, const walker *w, const regset *cur, const unwind_cfi_row *r0);

/* step_dwarf - the caller by the CFI row at `rel` (offset from __TEXT) of the FDE at `fde_off`
 * in the image's __eh_frame (apply_row). */
static bool step_dwarf(regset *next, const walker *w, const regset *cur, const unwind_image *img,
                       uint32_t fde_off, uint64_t rel)
{
    if (img->eh_frame == NULL)
        return false;
    unwind_cfi_row row;
    err_info err = {0};
    if (unwind_dwarf_row(&row, img->eh_frame, img->eh_frame_len, img->eh_frame_vmaddr, fde_off,
                         img->text_vmaddr + rel, &err) != ERR_OK)
        return false;
    return apply_row(next, w, cur, &row);
}

/* step_debug_frame - the caller by the CFI row at `rel` (offset from __TEXT) of the FDE of the
 * image's __debug_frame (a dSYM's) that covers it; as step_dwarf from there. */
static bool step_debug_frame(regset *next, const walker *w, const regset *cur,
                             struct image_slot *slot, uint64_t rel)
{
    const unwind_image *img = &slot->img;
    size_t n;
    const unwind_fde *fdes = debug_frame_fdes(&n, w, slot);
    const unwind_fde *f = unwind_fde_find(fdes, n, img->text_vmaddr + rel);
    if (f == NULL)
        return false;
    unwind_cfi_row row;
    err_info err = {0};
    if (unwind_debug_frame_row(&row, img->debug_frame, img->debug_frame_len, f->fde_off,
                               img->text_vmaddr + rel, &err) != ERR_OK)
        return false;
    return apply_row(next, w, cur, &row);
}

/* apply_row - the caller by a CFI row: CFA = register + offset; each register's rule; the
 * return address register's rule gives the pc (no rule on arm64: lr as it is); sp = CFA. */
static bool apply_row(regset *next, const walker *w, const regset *cur, const unwind_cfi_row *r0)
{
    const unwind_cfi_row row = *r0;
    uint64_t v;
    if (row.cfa_reg >= MINIDUMP_MAX_REGS || !known(cur, row.cfa_reg) ||
        row.ra_reg >= UNWIND_CFI_REGS)
        return false;
    uint64_t cfa = cur->regs[row.cfa_reg] + (uint64_t)row.cfa_offset;
    *next = caller_base(w, cur);
    for (unsigned i = 0; i < UNWIND_CFI_REGS && i < MINIDUMP_MAX_REGS; i++) {
        const unwind_reg_rule *r = &row.regs[i];
        switch (r->kind) {
        case UNWIND_REG_NONE:
            if (i == row.ra_reg && known(cur, i))
                set(next, i, cur->regs[i]); /* arm64: lr still holds it */
            break;
        case UNWIND_REG_SAME:
            if (known(cur, i))
                set(next, i, cur->regs[i]);
            break;
        case UNWIND_REG_UNDEFINED:
            next->valid &= ~(1ull << i);
            break;
        case UNWIND_REG_OFFSET:
            if (read64(&v, w, cfa + (uint64_t)r->value))
                set(next, i, v);
            else
                next->valid &= ~(1ull << i);
            break;
        case UNWIND_REG_VAL_OFFSET:
            set(next, i, cfa + (uint64_t)r->value);
            break;
        case UNWIND_REG_REGISTER:
            if (r->value >= 0 && r->value < MINIDUMP_MAX_REGS && known(cur, (unsigned)r->value))
                set(next, i, cur->regs[r->value]);
            else
                next->valid &= ~(1ull << i);
            break;
        }
    }
    if (!known(next, row.ra_reg))
        return false;
    uint64_t ra = strip(w, next->regs[row.ra_reg]);
    /* the return address register is not the caller's own value of it (x86_64: rip) */
    if (row.ra_reg != w->pc)
        next->valid &= ~(1ull << row.ra_reg);
    set(next, w->sp, cfa);
    set(next, w->pc, ra);
    return true;
}

static bool read_for_breakpad(uint64_t *out, uint64_t addr, void *ctx)
{
    return read64(out, ctx, addr);
}

/* step_breakpad - the caller by the STACK CFI rules in force at module offset `rel` of a
 * Breakpad .sym: .cfa is the caller's sp, .ra its pc, each register named its rule's value;
 * the others carry over as callee-saved. */
static bool step_breakpad(regset *next, const walker *w, const regset *cur, const unwind_image *img,
                          uint64_t rel)
{
    breakpad_cfi cfi;
    err_info err = {0};
    if (img->breakpad_cfi == NULL ||
        breakpad_cfi_open(&cfi, img->breakpad_cfi, img->breakpad_cfi_len, &err) != ERR_OK)
        return false;
    const char *rules[BREAKPAD_CFI_MAX_RULES];
    size_t n = breakpad_cfi_find(rules, BREAKPAD_CFI_MAX_RULES, &cfi, rel);
    if (n == 0)
        return false;
    breakpad_regs in = {{0}, 0}, out;
    for (unsigned i = 0; i < BREAKPAD_REGS && i < MINIDUMP_MAX_REGS; i++)
        if (known(cur, i)) {
            in.regs[i] = cur->regs[i];
            in.valid |= 1ull << i;
        }
    regset base = caller_base(w, cur);
    for (unsigned i = 0; i < BREAKPAD_REGS; i++)
        out.regs[i] = base.regs[i];
    out.valid = base.valid;
    uint64_t cfa, ra;
    breakpad_arch arch = w->arch == MINIDUMP_ARCH_X86_64 ? BREAKPAD_ARCH_X86_64 : BREAKPAD_ARCH_ARM64;
    if (!breakpad_cfi_eval(&out, &cfa, &ra, rules, n, arch, &in, read_for_breakpad, (void *)w))
        return false;
    *next = base;
    for (unsigned i = 0; i < BREAKPAD_REGS && i < MINIDUMP_MAX_REGS; i++) {
        if ((out.valid >> i) & 1)
            set(next, i, out.regs[i]);
        else
            next->valid &= ~(1ull << i);
    }
    set(next, w->pc, strip(w, ra));
    return true;
}

static bool step_compact(regset *next, bool *none, const walker *w, const regset *cur,
                         const unwind_image *img, uint64_t rel, uint64_t lookup, int m);
static bool step_leaf(regset *next, const walker *w, const regset *cur);

/* step_cfi - the caller by the image's CFI, in this order: its compact unwind entry (and the
 * __eh_frame FDE a DWARF encoding names), the FDE of a dSYM's __debug_frame, the leaf rule of
 * an entry without an encoding (the linker had no unwind info for the function, which
 * __debug_frame may have), a Breakpad .sym's STACK CFI; false if there is none or none
 * applies (unknown encoding, memory not captured). */
static bool step_cfi(regset *next, const walker *w, const regset *cur, bool first)
{
    uint64_t pc = cur->regs[w->pc];
    /* a return address may be one past the function's last byte: look up the call */
    uint64_t lookup = first ? pc : pc - 1;
    int m = module_of(w, lookup);
    struct image_slot *slot = slot_of(w->d, m);
    if (slot == NULL)
        return false;
    const unwind_image *img = &slot->img;
    uint64_t rel = lookup - w->md->modules[m].load_addr;
    bool none = false;
    if (step_compact(next, &none, w, cur, img, rel, lookup, m))
        return true;
    if (step_debug_frame(next, w, cur, slot, rel))
        return true;
    if (none && step_leaf(next, w, cur))
        return true;
    return step_breakpad(next, w, cur, img, rel);
}

/* step_leaf - a function that pushed nothing but the return address: it is at [rsp] (x86_64)
 * or in lr (arm64, the caller's sp the same). */
static bool step_leaf(regset *next, const walker *w, const regset *cur)
{
    uint64_t sp = cur->regs[w->sp], ra;
    *next = caller_base(w, cur);
    if (w->arch == MINIDUMP_ARCH_X86_64) {
        if (!read64(&ra, w, sp))
            return false;
        set(next, w->sp, sp + 8);
    } else {
        if (!known(cur, MINIDUMP_ARM64_LR))
            return false;
        ra = cur->regs[MINIDUMP_ARM64_LR];
        set(next, w->sp, sp);
    }
    set(next, w->pc, strip(w, ra));
    return true;
}

/* step_compact - the caller by the compact unwind entry at `rel`; false with *none set for
 * an entry without an encoding (step_leaf, once __debug_frame had no say). */
static bool step_compact(regset *next, bool *none, const walker *w, const regset *cur,
                         const unwind_image *img, uint64_t rel, uint64_t lookup, int m)
{
    if (rel > UINT32_MAX)
        return false;
    const unwind_entry *e = unwind_compact_find(img->entries, img->nentries, (uint32_t)rel);
    if (e == NULL)
        return false;
    unwind_rule rule;
    bool x86 = w->arch == MINIDUMP_ARCH_X86_64;
    if (!(x86 ? unwind_decode_x86_64(&rule, e->encoding) : unwind_decode_arm64(&rule, e->encoding)))
        return false;
    uint64_t sp = cur->regs[w->sp], ra = 0, v;
    *next = caller_base(w, cur);
    switch (rule.kind) {
    case UNWIND_KIND_NONE: /* a leaf, unless __debug_frame says otherwise: step_cfi */
        *none = true;
        return false;
    case UNWIND_KIND_FRAME: {
        if (!known(cur, w->fp))
            return false;
        uint64_t fp = cur->regs[w->fp], caller_fp;
        if (!read64(&ra, w, fp + 8) || !read64(&caller_fp, w, fp))
            return false;
        for (unsigned i = 0; i < rule.nsaved; i++) {
            uint64_t at = x86 ? fp - rule.saved_offset + 8 * i : fp - 8 - 8 * i;
            if (rule.saved[i] >= 0 && read64(&v, w, at))
                set(next, (unsigned)rule.saved[i], v);
        }
        set(next, w->fp, caller_fp);
        set(next, w->sp, fp + 16);
        break;
    }
    case UNWIND_KIND_FRAMELESS:
    case UNWIND_KIND_FRAMELESS_INDIRECT: {
        uint64_t size = rule.stack_size;
        if (rule.kind == UNWIND_KIND_FRAMELESS_INDIRECT) {
            /* the function's `sub $imm32, %rsp`: its immediate, read from the executable's
             * bytes when the image was made (unwind_stack_sizes) */
            uint32_t imm;
            if (!unwind_stack_size_find(&imm, img->stack_sizes, img->nstack_sizes, e->func_start))
                return false;
            size = (uint64_t)imm + rule.stack_adjust;
        }
        if (x86) {
            if (size < 8 || !read64(&ra, w, sp + size - 8))
                return false;
            for (unsigned i = 0; i < rule.nsaved; i++)
                if (rule.saved[i] >= 0 && read64(&v, w, sp + size - 8 - 8 * rule.nsaved + 8 * i))
                    set(next, (unsigned)rule.saved[i], v);
        } else {
            if (!known(cur, MINIDUMP_ARM64_LR))
                return false;
            ra = cur->regs[MINIDUMP_ARM64_LR];
            for (unsigned i = 0; i < rule.nsaved; i++)
                if (rule.saved[i] >= 0 && read64(&v, w, sp + size - 8 - 8 * i))
                    set(next, (unsigned)rule.saved[i], v);
        }
        set(next, w->sp, sp + size);
        break;
    }
    case UNWIND_KIND_DWARF:
        return step_dwarf(next, w, cur, img, rule.dwarf_offset, lookup - w->md->modules[m].load_addr);
    case UNWIND_KIND_UNKNOWN:
        return false;
    }
    set(next, w->pc, strip(w, ra));
    return true;
}

/* step_fp - the caller by the frame-pointer chain. */
static bool step_fp(regset *next, const walker *w, const regset *cur)
{
    if (!known(cur, w->fp))
        return false;
    uint64_t fp = cur->regs[w->fp], ra, caller_fp;
    if (fp == 0 || fp < cur->regs[w->sp] || !read64(&ra, w, fp + 8) || !read64(&caller_fp, w, fp))
        return false;
    /* the return address may lie outside every module (JIT code): the chain still holds */
    ra = strip(w, ra);
    if (ra < MIN_PC)
        return false;
    *next = caller_base(w, cur);
    set(next, w->fp, caller_fp);
    set(next, w->sp, fp + 16);
    set(next, w->pc, ra);
    return true;
}

/* in_function - whether module offset `rel` (a scanned word's call instruction) lies in a
 * function that the image's symbols or CFI know: its symbols (covers), a compact unwind
 * entry, a __debug_frame FDE, a Breakpad STACK CFI INIT record. True when the image knows
 * none of these (nothing to hold the word against); false when some are known and none
 * covers it (a stale pointer into the module's data, padding or a stub). */
static bool in_function(const walker *w, struct image_slot *slot, uint64_t rel)
{
    const unwind_image *img = &slot->img;
    bool known_any = false;
    if (img->covers != NULL) {
        known_any = true;
        if (img->covers(img->symbols, rel))
            return true;
    }
    if (img->nentries > 0) {
        known_any = true;
        if (rel <= UINT32_MAX && unwind_compact_find(img->entries, img->nentries, (uint32_t)rel))
            return true;
    }
    size_t nfdes;
    const unwind_fde *fdes = debug_frame_fdes(&nfdes, w, slot);
    if (nfdes > 0) {
        known_any = true;
        if (unwind_fde_find(fdes, nfdes, img->text_vmaddr + rel) != NULL)
            return true;
    }
    breakpad_cfi cfi;
    err_info err = {0};
    if (img->breakpad_cfi != NULL &&
        breakpad_cfi_open(&cfi, img->breakpad_cfi, img->breakpad_cfi_len, &err) == ERR_OK &&
        cfi.ninit > 0) {
        known_any = true;
        const char *rule;
        if (breakpad_cfi_find(&rule, 1, &cfi, rel) > 0)
            return true;
    }
    return !known_any;
}

/* step_scan - the first stack word from sp that points into a module, and there into a
 * function where the module's functions are known (in_function: the call before the word
 * must lie in one), is the return address; the caller's sp is just above it. */
static bool step_scan(regset *next, const walker *w, const regset *cur, bool first)
{
    uint64_t sp = cur->regs[w->sp], v;
    unsigned words = first ? UNWIND_SCAN_WORDS_FIRST : UNWIND_SCAN_WORDS;
    for (unsigned i = 0; i < words; i++) {
        uint64_t at = sp + 8 * (uint64_t)i;
        if (!read64(&v, w, at))
            return false;
        v = strip(w, v);
        int m = v >= MIN_PC ? module_of(w, v) : -1;
        struct image_slot *slot = slot_of(w->d, m);
        if (m >= 0 && slot != NULL && !in_function(w, slot, v - 1 - w->md->modules[m].load_addr))
            continue;
        if (m >= 0) {
            *next = caller_base(w, cur);
            set(next, w->sp, at + 8);
            set(next, w->pc, v);
            return true;
        }
    }
    return false;
}

/* plausible - a caller worth keeping: its sp grew (on arm64 a leaf's caller may share it). */
static bool plausible(const walker *w, const regset *cur, const regset *next, bool first)
{
    uint64_t sp = cur->regs[w->sp], nsp = next->regs[w->sp];
    return nsp > sp || (first && nsp == sp && w->arch == MINIDUMP_ARCH_ARM64);
}

err_code unwind_walker_new(unwind_walker **out, const minidump *md, const unwind_image *images,
                           size_t nimages, unwind_resolve_fn resolve, void *ctx, arena *a,
                           err_info *err)
{
    *out = NULL;
    unwind_walker *d = arena_alloc(a, sizeof *d, err);
    if (d == NULL)
        return ERR_TOO_LARGE;
    d->md = md;
    d->resolve = resolve;
    d->resolve_ctx = ctx;
    d->a = a;
    if (images == NULL)
        nimages = 0;
    /* every given image, then at most one resolved per module; written as they come */
    size_t nslots = nimages + md->nmodules + 1;
    if (nslots < nimages || nslots > SIZE_MAX / sizeof *d->slots)
        return err_set(err, ERR_TOO_LARGE, "stack walk: %zu images", nimages);
    d->slots = arena_alloc_uninit(a, nslots * sizeof *d->slots, err);
    d->mod_slot = arena_alloc_uninit(a, (md->nmodules + 1) * sizeof *d->mod_slot, err);
    if (d->slots == NULL || d->mod_slot == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < nimages; i++)
        d->slots[i] = (struct image_slot){.img = images[i]};
    d->nslots = nimages;
    for (size_t i = 0; i < md->nmodules; i++)
        d->mod_slot[i] = MOD_UNASKED;
    if (md->nmodules > 0) {
        d->by_addr = arena_alloc_uninit(a, md->nmodules * sizeof *d->by_addr, err);   /* all set below */
        if (d->by_addr == NULL)
            return ERR_TOO_LARGE;
        for (size_t i = 0; i < md->nmodules; i++) {
            d->by_addr[i].load_addr = md->modules[i].load_addr;
            d->by_addr[i].index = (uint32_t)i;
        }
        qsort(d->by_addr, md->nmodules, sizeof *d->by_addr, by_load_addr);
    }
    *out = d;
    return ERR_OK;
}

const unwind_image *unwind_walker_image(unwind_walker *w, size_t module)
{
    const struct image_slot *s = slot_of(w, module > INT32_MAX ? -1 : (int)module);
    return s != NULL ? &s->img : NULL;
}

size_t unwind_walker_indexes(const unwind_walker *w)
{
    return w->indexes;
}

err_code unwind_walk(unwind_frame **out, size_t *n, const minidump *md, const minidump_context *ctx,
                     const unwind_image *images, size_t nimages, arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    unwind_walker *d;
    err_code rc = unwind_walker_new(&d, md, images, nimages, NULL, NULL, a, err);
    if (rc != ERR_OK)
        return rc;
    return unwind_walker_walk(out, n, d, ctx, err);
}

err_code unwind_walker_walk(unwind_frame **out, size_t *n, unwind_walker *d,
                            const minidump_context *ctx, err_info *err)
{
    const minidump *md = d->md;
    *out = NULL;
    *n = 0;
    walker w = {.d = d, .md = md, .arch = ctx->arch, .by_addr = d->by_addr};
    if (ctx->arch == MINIDUMP_ARCH_X86_64) {
        w.sp = MINIDUMP_X86_64_RSP, w.fp = MINIDUMP_X86_64_RBP, w.pc = MINIDUMP_X86_64_RIP;
        w.callee_saved = 1ull << 3 | 1ull << 6 | 1ull << 12 | 1ull << 13 | 1ull << 14 | 1ull << 15;
    } else if (ctx->arch == MINIDUMP_ARCH_ARM64) {
        w.sp = MINIDUMP_ARM64_SP, w.fp = MINIDUMP_ARM64_FP, w.pc = MINIDUMP_ARM64_PC;
        w.callee_saved = 0;
        for (unsigned i = 19; i <= 29; i++)
            w.callee_saved |= 1ull << i;
    } else {
        return err_set(err, ERR_UNSUPPORTED, "stack walk: the thread has no x86_64 or arm64 "
                       "context");
    }
    /* not zeroed: every field of frames[0, k) is written below, and the rest is never read
     * (zeroing the whole bound was most of a short walk's time) */
    unwind_frame *frames = arena_alloc_uninit(d->a, UNWIND_WALK_MAX_FRAMES * sizeof *frames, err);
    if (frames == NULL)
        return ERR_TOO_LARGE;
    regset cur = {{0}, 0};
    for (unsigned i = 0; i < ctx->nregs; i++)
        set(&cur, i, ctx->regs[i]);
    unwind_found found = UNWIND_FOUND_CONTEXT;
    size_t k = 0;
    while (k < UNWIND_WALK_MAX_FRAMES) {
        uint64_t pc = cur.regs[w.pc];
        if (pc < MIN_PC)
            break;
        unwind_frame *f = &frames[k];
        f->pc = pc;
        f->sp = cur.regs[w.sp];
        f->fp = known(&cur, w.fp) ? cur.regs[w.fp] : 0;
        f->found = found;
        f->module = module_of(&w, pc);
        f->rel_addr = f->module >= 0 ? pc - md->modules[f->module].load_addr : 0;
        bool first = k == 0;
        k++;
        regset next;
        if (step_cfi(&next, &w, &cur, first) && plausible(&w, &cur, &next, first)) {
            found = UNWIND_FOUND_CFI;
        } else if (w.arch == MINIDUMP_ARCH_ARM64 && known(&cur, w.fp) && cur.regs[w.fp] == 0) {
            break; /* fp 0: the outermost frame */
        } else if (step_fp(&next, &w, &cur) && plausible(&w, &cur, &next, first)) {
            found = UNWIND_FOUND_FRAME_POINTER;
        } else {
            if (!step_scan(&next, &w, &cur, first) || !plausible(&w, &cur, &next, first))
                break;
            found = UNWIND_FOUND_SCAN;
        }
        cur = next;
    }
    *out = frames;
    *n = k;
    return ERR_OK;
}

const char *unwind_found_name(unwind_found f)
{
    switch (f) {
    case UNWIND_FOUND_CONTEXT: return "context";
    case UNWIND_FOUND_CFI: return "cfi";
    case UNWIND_FOUND_FRAME_POINTER: return "frame_pointer";
    case UNWIND_FOUND_SCAN: return "scan";
    }
    return "unknown";
}
