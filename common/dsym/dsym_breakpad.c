/*
 * dsym_breakpad - a Breakpad .sym (common/breakpad) as a symcache: its FUNC, line, INLINE and
 * PUBLIC records as the debuginfo a dSYM would give (dsym_breakpad.h).
 */
#include "dsym/dsym_breakpad.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "symcache/symcache.h"
#include "symcache/symcache_build.h"

/* The Mach-O cputype and subtype of a MODULE arch (dump_syms writes Mach-O's names). */
static void arch_of(macho_image *img, const char *arch)
{
    static const struct {
        const char *name;
        uint32_t cputype, cpusubtype;
    } arches[] = {
        {"x86_64", 0x01000007u, 3}, {"x86_64h", 0x01000007u, 8}, {"arm64", 0x0100000cu, 0},
        {"arm64e", 0x0100000cu, 2}, {"i386", 7, 3}, {"x86", 7, 3}, {"armv7", 12, 9},
        {"armv7s", 12, 11}, {"armv7k", 12, 12}, {"arm", 12, 9},
    };
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
        if (strcmp(arch, arches[i].name) == 0) {
            img->cputype = arches[i].cputype;
            img->cpusubtype = arches[i].cpusubtype;
            return;
        }
}

/* the record numbered `id` of v[n] (FILE or INLINE_ORIGIN records, sorted by id), or NULL */
static const breakpad_named *named_find(const breakpad_named *v, size_t n, uint32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].id == id ? &v[lo] : NULL;
}

/* the string id of FILE `id`, or STRTAB_NONE */
static uint32_t file_string(debuginfo *di, const breakpad_sym *sym, uint32_t id)
{
    const breakpad_named *f = named_find(sym->files, sym->nfiles, id);
    return f != NULL ? strtab_intern(&di->strings, f->name, strlen(f->name)) : STRTAB_NONE;
}

static const char *origin_name(const breakpad_sym *sym, uint32_t id)
{
    const breakpad_named *o = named_find(sym->origins, sym->norigins, id);
    return o != NULL ? o->name : "??";
}

static int cmp_line(const void *x, const void *y)
{
    const breakpad_line *a = *(const breakpad_line *const *)x, *b = *(const breakpad_line *const *)y;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a < b ? -1 : a > b; /* file order */
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_public(const void *x, const void *y)
{
    const breakpad_public *a = *(const breakpad_public *const *)x, *b = *(const breakpad_public *const *)y;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a < b ? -1 : a > b;
}

static bool range_ok(uint64_t addr, uint64_t size)
{
    return size > 0 && addr + size > addr;
}

static void add_range(debuginfo *di, size_t *cap, uint64_t start, uint64_t end, uint32_t scope,
                      uint32_t depth)
{
    if (di->nranges == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        di->ranges = xreallocarray(di->ranges, *cap, sizeof *di->ranges);
    }
    di->ranges[di->nranges++] = (debuginfo_range){start, end, scope, depth};
}

err_code dsym_breakpad_debuginfo(debuginfo *di, macho_image *img, const breakpad_sym *sym,
                                 err_info *err)
{
    memset(di, 0, sizeof *di);
    memset(img, 0, sizeof *img);
    strtab_init(&di->strings);
    img->has_uuid = true;
    memcpy(img->uuid, sym->uuid, 16);
    arch_of(img, sym->arch);
    err_code rc = ERR_OK;

    /* FUNCs and their INLINEs become scopes and ranges */
    size_t range_cap = 0, scope_cap = 0;
    uint32_t *local = NULL; /* a FUNC's inline index -> scope index */
    size_t local_cap = 0;
    for (size_t f = 0; f < sym->nfuncs; f++) {
        const breakpad_func *fn = &sym->funcs[f];
        if (!range_ok(fn->addr, fn->size))
            continue;
        if (di->nscopes + fn->ninlines + 1 > UINT32_MAX - 1) {
            rc = err_set(err, ERR_TOO_LARGE, "breakpad symbol file: more than 4 G functions");
            goto done;
        }
        while (scope_cap < di->nscopes + fn->ninlines + 1) {
            scope_cap = scope_cap ? scope_cap * 2 : 256;
            di->scopes = xreallocarray(di->scopes, scope_cap, sizeof *di->scopes);
        }
        uint32_t fs = di->nscopes++;
        di->scopes[fs] = (debuginfo_scope){
            .name = strtab_intern(&di->strings, fn->name, strlen(fn->name)),
            .parent = DEBUGINFO_NONE, .call_file = STRTAB_NONE, .entry = fn->addr};
        add_range(di, &range_cap, fn->addr, fn->addr + fn->size, fs, 0);
        if (fn->ninlines > local_cap) {
            local_cap = fn->ninlines;
            local = xreallocarray(local, local_cap, sizeof *local);
        }
        for (size_t i = 0; i < fn->ninlines; i++) {
            const breakpad_inline *in = &sym->inlines[fn->first_inline + i];
            const char *name = origin_name(sym, in->origin);
            uint32_t s = di->nscopes++;
            local[i] = s;
            uint32_t parent = in->parent == UINT32_MAX || in->parent >= i ? fs : local[in->parent];
            di->scopes[s] = (debuginfo_scope){
                .name = strtab_intern(&di->strings, name, strlen(name)), .parent = parent,
                .call_file = file_string(di, sym, in->call_file), .call_line = in->call_line,
                .depth = in->depth + 1, .entry = sym->ranges[in->first_range].addr};
            for (size_t r = 0; r < in->nranges; r++) {
                const breakpad_range *rg = &sym->ranges[in->first_range + r];
                if (range_ok(rg->addr, rg->size))
                    add_range(di, &range_cap, rg->addr, rg->addr + rg->size, s, in->depth + 1);
            }
        }
    }
    if (di->nranges > 1)
        debuginfo_sort_ranges(di->ranges, di->nranges);

    /* line records: one sequence per run of adjacent records, in address order */
    if (sym->nlines > 0) {
        const breakpad_line **order = xmalloc(sym->nlines * sizeof *order);
        for (size_t i = 0; i < sym->nlines; i++)
            order[i] = &sym->lines[i];
        qsort(order, sym->nlines, sizeof *order, cmp_line);
        size_t cap = 0;
        uint64_t last = 0, end = 0;
        bool open = false;
        for (size_t i = 0; i < sym->nlines; i++) {
            const breakpad_line *l = order[i];
            if (!range_ok(l->addr, l->size))
                continue;
            if (open && l->addr > end)
                debuginfo_row_add(&di->rows, &di->nrows, &cap, &last, end, STRTAB_NONE,
                                  DEBUGINFO_END_SEQUENCE);
            debuginfo_row_add(&di->rows, &di->nrows, &cap, &last, l->addr,
                              file_string(di, sym, l->file), l->line);
            open = true;
            if (l->addr + l->size > end)
                end = l->addr + l->size;
        }
        if (open)
            debuginfo_row_add(&di->rows, &di->nrows, &cap, &last, end, STRTAB_NONE,
                              DEBUGINFO_END_SEQUENCE);
        free(order);
    }

    /* PUBLIC symbols: each up to the next PUBLIC or FUNC start (Breakpad names an address by
     * a PUBLIC only when no function lies between them) */
    if (sym->npublics > 0) {
        const breakpad_public **order = xmalloc(sym->npublics * sizeof *order);
        for (size_t i = 0; i < sym->npublics; i++)
            order[i] = &sym->publics[i];
        qsort(order, sym->npublics, sizeof *order, cmp_public);
        uint64_t *starts = xmalloc((sym->nfuncs ? sym->nfuncs : 1) * sizeof *starts);
        for (size_t f = 0; f < sym->nfuncs; f++)
            starts[f] = sym->funcs[f].addr;
        qsort(starts, sym->nfuncs, sizeof *starts, cmp_u64);
        di->symbols = xmalloc(sym->npublics * sizeof *di->symbols);
        size_t n = 0;
        for (size_t i = 0; i < sym->npublics; i++) {
            const breakpad_public *p = order[i];
            uint32_t id = strtab_intern(&di->strings, p->name, strlen(p->name));
            if (n > 0 && di->symbols[n - 1].start == p->addr) {
                di->symbols[n - 1].scope = id; /* one name per address: the last */
                continue;
            }
            di->symbols[n++] = (debuginfo_range){p->addr, UINT64_MAX, id, 0};
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t a = di->symbols[i].start, end = i + 1 < n ? di->symbols[i + 1].start : a + 1;
            size_t lo = 0, hi = sym->nfuncs; /* the first FUNC start after a */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (starts[mid] <= a)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < sym->nfuncs && starts[lo] < end)
                end = starts[lo];
            di->symbols[i].end = end > a ? end : UINT64_MAX;
        }
        di->nsymbols = n;
        free(starts);
        free(order);
    }
    if (di->strings.full)
        rc = err_set(err, ERR_TOO_LARGE, "breakpad symbol file: names over 4 GiB");
done:
    free(local);
    if (rc != ERR_OK)
        debuginfo_reset(di);
    return rc;
}

err_code dsym_breakpad_build(buf *out, symcache_build_stats *stats, const breakpad_sym *sym,
                             unsigned threads, err_info *err)
{
    macho_image *img = xmalloc(sizeof *img);
    debuginfo di;
    buf cfi;
    buf_init(&cfi);
    err_code rc = dsym_breakpad_debuginfo(&di, img, sym, err);
    if (rc != ERR_OK)
        goto done;
    symcache_extra extra = {.breakpad = true};
    rc = symcache_build_extra(out, stats, img, &di, sym->name, threads, &extra, err);
    debuginfo_reset(&di);
    if (rc == ERR_OK && breakpad_cfi_encode(&cfi, sym) > 0)
        symcache_section_append(out, BREAKPAD_CFI_SECTION, cfi.data, cfi.len);
done:
    buf_reset(&cfi);
    free(img);
    return rc;
}
