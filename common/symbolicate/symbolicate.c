/*
 * symbolicate.c - a whole report against symcaches; the address rules are in symbolicate.h.
 */
#include "symbolicate/symbolicate.h"

#include <string.h>

#include "macho/macho.h"

uint64_t symbolicate_caller_addr(uint64_t addr, const char *arch)
{
    if (addr == 0)
        return 0;
    if (arch == NULL)
        return addr - 1;
    if (strncmp(arch, "arm64", 5) == 0)
        return addr < 4 ? 0 : (addr & ~(uint64_t)3) - 4;
    if (strncmp(arch, "arm", 3) == 0)
        return addr < 2 ? 0 : (addr & ~(uint64_t)1) - 2;
    return addr - 1;
}

/* The file name of `path`: a minidump's module names are the paths the images were loaded from. */
static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void symbolicate_walk_frame_write(jsonw *j, const minidump *md, const unwind_frame *f,
                                  const symcache_frame *syms, size_t nsyms)
{
    const minidump_module *m = f->module >= 0 ? &md->modules[f->module] : NULL;
    char uuid[37];
    if (m && m->has_uuid)
        macho_uuid_format(uuid, m->uuid);
    jsonw_object_begin(j);
    jsonw_khex(j, "pc", f->pc);
    jsonw_khex(j, "sp", f->sp);
    jsonw_kstr(j, "module", m ? base_name(m->name) : NULL);
    jsonw_kstr(j, "uuid", m && m->has_uuid ? uuid : NULL);
    if (m)
        jsonw_khex(j, "rel_addr", f->rel_addr);
    else
        jsonw_knull(j, "rel_addr");
    jsonw_kstr(j, "found", unwind_found_name(f->found));
    jsonw_key(j, "symbols");
    jsonw_array_begin(j);
    for (size_t s = 0; s < nsyms; s++) {
        jsonw_object_begin(j);
        jsonw_kstr(j, "function", syms[s].function);
        jsonw_kstr(j, "file", syms[s].file);
        jsonw_kuint(j, "line", syms[s].line);
        jsonw_object_end(j);
    }
    jsonw_array_end(j);
    jsonw_object_end(j);
}

typedef struct {
    const symcache *sc; /* NULL: none */
    bool resolved;      /* resolve() was asked */
    bool missing_used;  /* a frame fell in this image and it had no symcache */
} image_state;

typedef struct {
    crashreport *r;
    symbolicate_resolve_fn resolve;
    void *ctx;
    arena *a;
    err_info *err;
    image_state *images;
} sym_ctx;

static char *copy(sym_ctx *c, const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *p = arena_strdup(c->a, s, c->err);
    if (p == NULL)
        *failed = true;
    return p;
}

static err_code frame_symbolicate(sym_ctx *c, crashreport_frame *f, bool caller)
{
    crashreport *r = c->r;
    f->symbols = NULL;
    f->nsymbols = 0;
    f->lookup_addr = 0;
    if (f->image < 0 || (size_t)f->image >= r->nimages) {
        f->sym_status = CRASHREPORT_SYM_NO_IMAGE;
        return ERR_OK;
    }
    const crashreport_image *im = &r->images[f->image];
    image_state *st = &c->images[f->image];
    if (!st->resolved) {
        st->resolved = true;
        st->sc = im->uuid[0] != '\0' ? c->resolve(c->ctx, im->uuid, im->arch) : NULL;
    }
    if (st->sc == NULL) {
        f->sym_status = CRASHREPORT_SYM_MISSING;
        st->missing_used = true;
        return ERR_OK;
    }
    const char *arch = crashreport_frame_arch(r, f);
    uint64_t addr = crashreport_strip_pac(f->addr, arch);
    uint64_t look = caller ? symbolicate_caller_addr(addr, arch) : addr;
    if (look < im->load_addr || (im->end_addr != 0 && look > im->end_addr)) {
        /* matched by name only, or the adjusted address left the image */
        f->sym_status = CRASHREPORT_SYM_NO_IMAGE;
        return ERR_OK;
    }
    /* the report's own __TEXT vmaddr when it gives one (Sentry's image_vmaddr), else the
     * dSYM's */
    uint64_t vmaddr = im->vmaddr != 0 ? im->vmaddr : symcache_text_vmaddr(st->sc);
    uint64_t file_addr = look - im->load_addr + vmaddr;
    uint64_t shown_addr = addr - im->load_addr + vmaddr; /* offsets are shown from it */
    symcache_frame out[SYMCACHE_MAX_FRAMES];
    size_t n = symcache_lookup(out, SYMCACHE_MAX_FRAMES, st->sc, file_addr);
    f->lookup_addr = file_addr;
    if (n == 0) {
        f->sym_status = CRASHREPORT_SYM_NOT_FOUND;
        return ERR_OK;
    }
    crashreport_symbol *syms = arena_alloc_array(c->a, n, sizeof *syms, c->err);
    if (syms == NULL)
        return ERR_TOO_LARGE;
    bool failed = false;
    for (size_t i = 0; i < n; i++) {
        syms[i].function = copy(c, out[i].function, &failed);
        /* the raw linkage name beside it, when it reads differently */
        syms[i].mangled = out[i].mangled != NULL && strcmp(out[i].mangled, out[i].function) != 0
                              ? copy(c, out[i].mangled, &failed)
                              : NULL;
        syms[i].qualified = copy(c, out[i].qualified, &failed);
        syms[i].file = copy(c, out[i].file, &failed);
        syms[i].line = out[i].line;
        syms[i].inlined = out[i].inlined;
        syms[i].offset = shown_addr >= out[i].sym_addr ? shown_addr - out[i].sym_addr : 0;
    }
    if (failed)
        return ERR_TOO_LARGE;
    f->symbols = syms;
    f->nsymbols = (uint32_t)n;
    f->sym_status = CRASHREPORT_SYM_OK;
    return ERR_OK;
}

static err_code frames_symbolicate(sym_ctx *c, crashreport_frame *fs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        /* a stack: every frame but the first returns; a call tree: every frame with callees */
        bool caller = c->r->tree ? !fs[i].leaf : i > 0;
        err_code rc = frame_symbolicate(c, &fs[i], caller);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

err_code symbolicate_report(crashreport *r, symbolicate_resolve_fn resolve, void *ctx, arena *a,
                            err_info *err)
{
    sym_ctx c = {r, resolve, ctx, a, err, NULL};
    err_code rc = ERR_OK;
    c.images = arena_alloc_array(a, r->nimages ? r->nimages : 1, sizeof *c.images, err);
    if (c.images == NULL)
        return ERR_TOO_LARGE;
    for (size_t t = 0; t < r->nthreads && rc == ERR_OK; t++)
        rc = frames_symbolicate(&c, r->threads[t].frames, r->threads[t].nframes);
    if (rc == ERR_OK)
        rc = frames_symbolicate(&c, r->leb, r->nleb);
    for (size_t k = 0; k < r->ncauses && rc == ERR_OK; k++)
        rc = frames_symbolicate(&c, r->causes[k].frames, r->causes[k].nframes);
    if (rc != ERR_OK)
        return rc;

    size_t missing = 0;
    for (size_t i = 0; i < r->nimages; i++)
        missing += c.images[i].missing_used && r->images[i].uuid[0] != '\0';
    r->missing_uuids = NULL;
    r->nmissing_uuids = 0;
    if (missing > 0) {
        const char **list = arena_alloc_array(a, missing, sizeof *list, err);
        if (list == NULL)
            return ERR_TOO_LARGE;
        for (size_t i = 0; i < r->nimages; i++) {
            if (!c.images[i].missing_used || r->images[i].uuid[0] == '\0')
                continue;
            /* two image lines may carry the same UUID; list it once */
            bool dup = false;
            for (size_t k = 0; k < r->nmissing_uuids && !dup; k++)
                dup = strcmp(list[k], r->images[i].uuid) == 0;
            if (!dup)
                list[r->nmissing_uuids++] = r->images[i].uuid;
        }
        r->missing_uuids = list;
    }
    r->symbolicated = true;
    return ERR_OK;
}
