/*
 * parse_minidump.c - a minidump as a crash report (crashreport_parse_minidump).
 *
 * The dump is read by common/minidump and every thread walked by common/unwind; this file only
 * maps what they give onto the model, the way Apple's reports show the same crash:
 *   images     the module list in dump order (the main executable first): path, base name,
 *              UUID (LC_UUID), [BaseOfImage, BaseOfImage + SizeOfImage - 1], the dump's arch
 *   threads    in dump order, numbered from 0 as Apple numbers them, Breakpad's handler
 *              thread left out; the crashed thread is walked from the exception's registers
 *              and keeps its registers; each frame's `found` says how the walk found it
 *   exception  EXC_CRASH unwrapped (signal, original exception) as the reader unwraps it;
 *              EXC_BAD_ACCESS's code as KERN_INVALID_ADDRESS / KERN_PROTECTION_FAILURE at
 *              the faulting address
 *   text       Crashpad's list annotations of the modules (on macOS the `__crash_info`
 *              messages: abort and assertion texts) as app_specific_info
 *   annotations Crashpad's process and module key/value annotations, then the upload's
 *              (the Sentry event given beside the dump: environment, tags.K, user.id, extra)
 * What the reader could not read, and threads that could not be walked, become errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "crashreport/crashreport_internal.h"
#include "crashreport/json_field.h"
#include "minidump/minidump.h"
#include "unwind/walk.h"

#define MINIDUMP_PLATFORM_MACOS 0x8101u
#define MINIDUMP_PLATFORM_IOS 0x8102u

bool crashreport_is_minidump(const uint8_t *data, size_t len)
{
    return len >= 4 && memcmp(data, "MDMP", 4) == 0;
}

const char *crashreport_found_name(uint8_t found)
{
    switch (found) {
    case CRASHREPORT_FOUND_CONTEXT:       return "context";
    case CRASHREPORT_FOUND_CFI:           return "cfi";
    case CRASHREPORT_FOUND_FRAME_POINTER: return "frame_pointer";
    case CRASHREPORT_FOUND_SCAN:          return "scan";
    default:                              return NULL;
    }
}

static uint8_t found_of(unwind_found f)
{
    switch (f) {
    case UNWIND_FOUND_CONTEXT:       return CRASHREPORT_FOUND_CONTEXT;
    case UNWIND_FOUND_CFI:           return CRASHREPORT_FOUND_CFI;
    case UNWIND_FOUND_FRAME_POINTER: return CRASHREPORT_FOUND_FRAME_POINTER;
    case UNWIND_FOUND_SCAN:          return CRASHREPORT_FOUND_SCAN;
    }
    return CRASHREPORT_FOUND_SCAN; /* unreachable while the switch is complete */
}

static void add_annotation(cr_builder *b, const char *key, const char *value)
{
    if (key == NULL || value == NULL)
        return;
    crashreport *r = b->r;
    crashreport_annotation *an = cr_push(b, (void **)&r->annotations, &r->nannotations, sizeof *an);
    if (an == NULL)
        return;
    an->key = cr_strdup(b, key);
    an->value = cr_strdup(b, value);
}

/* The value of annotation `key`, the last one given winning (the upload's come after the
 * dump's); NULL if none. */
static const char *annotation(const crashreport *r, const char *key)
{
    for (size_t i = r->nannotations; i > 0; i--)
        if (strcmp(r->annotations[i - 1].key, key) == 0)
            return r->annotations[i - 1].value;
    return NULL;
}

/* The metadata's numbers are written by hand: snprintf's formatting of a few fields per dump
 * (twice per report, at intake and by the worker) showed in the server's profile. */

/* put_dec - `v` in decimal at `p`, zero-padded to `width` digits; the end. */
static char *put_dec(char *p, uint64_t v, int width)
{
    char d[20];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n < width)
        d[n++] = '0';
    while (n > 0)
        *p++ = d[--n];
    return p;
}

/* put_hex64 - "0x" and `v` as 16 lower-case hex digits (PRIx64's "0x%016"), at `p`; the end. */
static char *put_hex64(char *p, uint64_t v)
{
    static const char HEX[] = "0123456789abcdef";
    *p++ = '0';
    *p++ = 'x';
    for (int shift = 60; shift >= 0; shift -= 4)
        *p++ = HEX[(v >> shift) & 15];
    return p;
}

static void system_metadata(cr_builder *b, const minidump *md)
{
    crashreport_metadata *m = &b->r->meta;
    minidump_arch arch = md->system.arch;
    if (!md->has_system || arch == MINIDUMP_ARCH_UNKNOWN)
        for (size_t i = 0; i < md->nthreads && arch == MINIDUMP_ARCH_UNKNOWN; i++)
            arch = md->threads[i].context.arch;
    if (arch != MINIDUMP_ARCH_UNKNOWN) {
        m->arch = minidump_arch_name(arch);
        m->code_type = arch == MINIDUMP_ARCH_X86_64 ? "X86-64 (Native)" : "ARM-64 (Native)";
    }
    if (md->has_system) {
        const minidump_system *s = &md->system;
        const char *os = s->platform_id == MINIDUMP_PLATFORM_MACOS ? "macOS"
                         : s->platform_id == MINIDUMP_PLATFORM_IOS ? "iOS" : NULL;
        char ver[48], *v = ver;   /* "major.minor.build": three u32 of 10 digits at most */
        v = put_dec(v, s->os_major, 1);
        *v++ = '.';
        v = put_dec(v, s->os_minor, 1);
        *v++ = '.';
        v = put_dec(v, s->os_build, 1);
        *v = '\0';
        m->os_version = cr_os_version(b, os, ver,
                                      s->csd_version && s->csd_version[0] ? s->csd_version : NULL);
    }
    if (md->timestamp != 0) {
        struct tm tm;
        time_t t = (time_t)md->timestamp;
        /* a u32 timestamp (time_date_stamp): years 1970-2106, every field its width */
        if (gmtime_r(&t, &tm) != NULL) {
            char date[40], *d = date;   /* "%04d-%02d-%02d %02d:%02d:%02d.000 +0000" */
            d = put_dec(d, (uint64_t)tm.tm_year + 1900, 4);
            *d++ = '-';
            d = put_dec(d, (uint64_t)tm.tm_mon + 1, 2);
            *d++ = '-';
            d = put_dec(d, (uint64_t)tm.tm_mday, 2);
            *d++ = ' ';
            d = put_dec(d, (uint64_t)tm.tm_hour, 2);
            *d++ = ':';
            d = put_dec(d, (uint64_t)tm.tm_min, 2);
            *d++ = ':';
            d = put_dec(d, (uint64_t)tm.tm_sec, 2);
            memcpy(d, ".000 +0000", 10);
            d += 10;
            m->date = cr_strndup(b, date, (size_t)(d - date));
        }
    }
    if (md->nmodules > 0 && md->modules[0].name[0] != '\0') {
        m->process_path = cr_strdup(b, md->modules[0].name);
        m->process = cr_basename(m->process_path);
    }
}

static void exception_metadata(cr_builder *b, const minidump *md)
{
    const minidump_exception *e = &md->exception;
    crashreport_metadata *m = &b->r->meta;
    if (!e->present)
        return;
    const char *type = minidump_mach_exception_name(e->mach_type);
    if (e->wrapped) {
        m->exception_type = "EXC_CRASH";
        m->signal = minidump_signal_name(e->signal);
        if (m->signal == NULL && e->signal != 0)
            m->signal = cr_sprintf(b, "signal %u", e->signal);
        if (type != NULL && e->mach_type != MINIDUMP_EXC_CRASH)
            m->exception_subtype = cr_sprintf(b, "wrapping %s (code 0x%" PRIx64 ")", type,
                                              e->mach_code);
        if (m->signal != NULL)
            m->termination_reason = cr_sprintf(b, "Namespace SIGNAL, Code %u %s", e->signal,
                                               m->signal);
    } else {
        m->exception_type = type != NULL ? type : cr_sprintf(b, "0x%x", e->mach_type);
        if (e->mach_type == MINIDUMP_EXC_BAD_ACCESS) {
            const char *kern = e->mach_code == 1 ? "KERN_INVALID_ADDRESS"
                               : e->mach_code == 2 ? "KERN_PROTECTION_FAILURE" : NULL;
            m->exception_subtype = kern ? cr_sprintf(b, "%s at 0x%016" PRIx64, kern, e->address)
                                        : cr_sprintf(b, "0x%" PRIx64 " at 0x%016" PRIx64,
                                                     e->mach_code, e->address);
        }
    }
    char codes[48], *c = codes;   /* "0x%016" PRIx64 ", 0x%016" PRIx64 */
    c = put_hex64(c, e->mach_code);
    *c++ = ',';
    *c++ = ' ';
    c = put_hex64(c, e->address);
    m->exception_codes = cr_strndup(b, codes, (size_t)(c - codes));
}

static void images_of(cr_builder *b, const minidump *md, const char *arch)
{
    for (size_t i = 0; i < md->nmodules; i++) {
        const minidump_module *mod = &md->modules[i];
        crashreport_image *im = cr_add_image(b);
        if (im == NULL)
            return;
        if (mod->name[0] != '\0') {
            im->path = cr_strdup(b, mod->name);
            im->name = cr_basename(im->path);
        }
        im->arch = arch;
        if (mod->has_uuid)
            cr_uuid_from_bytes(im->uuid, mod->uuid);
        im->load_addr = mod->load_addr;
        if (mod->size > 0 && mod->size - 1 <= UINT64_MAX - mod->load_addr)
            im->end_addr = mod->load_addr + mod->size - 1;
    }
}

/* The modules' Crashpad annotations: list entries (the `__crash_info` messages) as
 * app_specific_info lines, keyed ones as annotations; then the process's. */
static void dump_annotations(cr_builder *b, const minidump *md)
{
    buf text;
    buf_init(&text);
    for (size_t i = 0; i < md->nmodules; i++) {
        const minidump_module *mod = &md->modules[i];
        for (size_t k = 0; k < mod->nannotations; k++) {
            const minidump_annotation *an = &mod->annotations[k];
            if (an->key != NULL) {
                add_annotation(b, an->key, an->value);
            } else if (an->value != NULL && an->value[0] != '\0') {
                if (text.len > 0)
                    buf_putc(&text, '\n');
                buf_append_str(&text, an->value);
            }
        }
    }
    for (size_t i = 0; i < md->nannotations; i++)
        add_annotation(b, md->annotations[i].key, md->annotations[i].value);
    if (text.len > 0)
        b->r->meta.app_specific_info = cr_strndup(b, (const char *)text.data, text.len);
    buf_reset(&text);
}

static void add_registers(cr_builder *b, crashreport_thread *t, const minidump_context *ctx)
{
    for (unsigned k = 0; k < ctx->nregs && k < MINIDUMP_MAX_REGS; k++) {
        const char *name = minidump_reg_name(ctx->arch, k);
        if (name == NULL)
            continue;
        crashreport_register *reg = cr_push(b, (void **)&t->registers, &t->nregisters, sizeof *reg);
        if (reg == NULL)
            return;
        reg->name = name;
        reg->value = ctx->regs[k];
    }
}

/* Which images the walks had unwind info for (crashreport_image.has_unwind), by UUID: with
 * a resolver, those the frames fell in (asked now if a walk did not); else every image given.
 * An image given with its symbols only (they bound the scan) has none. */
static void mark_unwind(cr_builder *b, const minidump *md, unwind_walker *w, bool resolver)
{
    crashreport *r = b->r;
    bool *used = NULL;
    if (resolver) {
        err_info err = {0};
        used = arena_alloc_array(b->a, r->nimages ? r->nimages : 1, sizeof *used, &err);
        if (used == NULL) {
            b->failed = true;
            *b->err = err;
            return;
        }
        for (size_t t = 0; t < r->nthreads; t++)
            for (size_t k = 0; k < r->threads[t].nframes; k++) {
                int32_t im = r->threads[t].frames[k].image;
                if (im >= 0 && (size_t)im < r->nimages)
                    used[im] = true;
            }
    }
    for (size_t i = 0; i < md->nmodules && i < r->nimages; i++) {
        if (used != NULL && !used[i])
            continue;
        const unwind_image *im = unwind_walker_image(w, i);
        if (im != NULL && unwind_image_has_cfi(im))
            r->images[i].has_unwind = true;
    }
}

/* The resolver's context: the caller's, with the report being built. */
struct resolve_ctx {
    const crashreport_minidump_options *o;
    const crashreport *r;
};

static bool resolve_image(unwind_image *out, void *ctx, size_t module)
{
    const struct resolve_ctx *c = ctx;
    if (module >= c->r->nimages)
        return false;   /* the image list stopped short (the arena): no image to name */
    return c->o->image_unwind(out, c->o->image_unwind_ctx, c->r, module);
}

static void threads_of(cr_builder *b, const minidump *md, const crashreport_minidump_options *o)
{
    const unwind_image *images = o ? (const unwind_image *)o->images : NULL;
    size_t nimages = o && o->images ? o->nimages : 0;
    bool context_only = o != NULL && (o->context_only ||
                                      (o->walk_if != NULL && !o->walk_if(o->image_unwind_ctx, b->r)));
    bool resolver = o != NULL && o->image_unwind != NULL;
    struct resolve_ctx rc_ctx = {o, b->r};
    unwind_walker *walker = NULL;
    if (!context_only) {
        /* one walker for every thread: each image asked for and indexed once per dump */
        err_info werr = {0};
        if (unwind_walker_new(&walker, md, images, nimages, resolver ? resolve_image : NULL,
                              &rc_ctx, b->a, &werr) != ERR_OK) {
            b->failed = true;
            *b->err = werr;
            return;
        }
    }
    uint32_t shown = 0;
    for (size_t ti = 0; ti < md->nthreads && !b->failed; ti++) {
        const minidump_thread *mt = &md->threads[ti];
        if (md->has_dump_thread_id && mt->thread_id == md->dump_thread_id)
            continue; /* Breakpad's handler thread: not part of the crash */
        bool crashed = md->exception.present && md->exception.thread_id == mt->thread_id;
        const minidump_context *ctx = crashed && md->exception.context.arch != MINIDUMP_ARCH_UNKNOWN
                                          ? &md->exception.context : &mt->context;
        crashreport_thread *t = cr_add_thread(b);
        if (t == NULL)
            return;
        t->index = shown++;
        t->name = cr_strdup(b, mt->name);
        t->crashed = crashed;
        if (crashed) {
            b->r->meta.crashed_thread = (int32_t)t->index;
            if (!context_only)   /* intake's read stores none of them */
                add_registers(b, t, ctx);
        }
        unwind_frame *frames = NULL;
        size_t n = 0;
        err_info werr = {0};
        if (ctx->arch == MINIDUMP_ARCH_UNKNOWN) {
            cr_note(b, "thread %u (id %u): no readable register context: not walked", t->index,
                    mt->thread_id);
            continue;
        }
        if (context_only) {
            /* frame 0 as unwind_walk finds it: the pc of an x86_64 or arm64 context, if
             * known and not below the walk's lowest pc */
            unsigned at = ctx->arch == MINIDUMP_ARCH_ARM64    ? MINIDUMP_ARM64_PC
                          : ctx->arch == MINIDUMP_ARCH_X86_64 ? MINIDUMP_X86_64_RIP
                                                              : MINIDUMP_MAX_REGS;
            if (at < ctx->nregs && ctx->regs[at] >= UNWIND_MIN_PC) {
                crashreport_frame *f = cr_add_frame(b, t);
                if (f == NULL)
                    return;
                f->addr = ctx->regs[at];
                f->image = -1;
                f->found = CRASHREPORT_FOUND_CONTEXT;
                f->parent = -1;
            }
            continue;
        }
        err_code rc = unwind_walker_walk(&frames, &n, walker, ctx, &werr);
        if (rc == ERR_TOO_LARGE) {
            b->failed = true;
            *b->err = werr;
            return;
        }
        if (rc != ERR_OK) {
            cr_note(b, "thread %u (id %u): %s", t->index, mt->thread_id, werr.msg);
            continue;
        }
        for (size_t k = 0; k < n; k++) {
            crashreport_frame *f = cr_add_frame(b, t);
            if (f == NULL)
                return;
            f->index = (uint32_t)k;
            f->addr = frames[k].pc;
            f->image = frames[k].module >= 0 && (size_t)frames[k].module < b->r->nimages
                           ? frames[k].module : -1;
            f->found = found_of(frames[k].found);
            f->parent = -1;
        }
    }
    if (walker != NULL && !b->failed)
        mark_unwind(b, md, walker, resolver);
}

/* Tags as Sentry sends them: {"k": "v"} or [["k", "v"], ...]. */
static void event_tags(cr_builder *b, const jsonr_value *tags)
{
    if (jsonr_is_object(tags)) {
        for (size_t i = 0; i < jsonr_size(tags); i++) {
            const jsonr_member *mb = jsonr_member_at(tags, i);
            const char *v = cr_json_string(&mb->value);
            if (v != NULL)
                add_annotation(b, cr_sprintf(b, "tags.%s", mb->key), v);
        }
    } else if (jsonr_is_array(tags)) {
        for (size_t i = 0; i < jsonr_size(tags); i++) {
            const jsonr_value *pair = jsonr_at(tags, i);
            const char *k = cr_json_string(jsonr_at(pair, 0)), *v = cr_json_string(jsonr_at(pair, 1));
            if (k != NULL && v != NULL)
                add_annotation(b, cr_sprintf(b, "tags.%s", k), v);
        }
    }
}

/* What the Sentry event sent with the dump says: its metadata where it gives any (release,
 * dist, app, device, os; the dump keeps its own exception and stacks), then environment, tags,
 * user and extra as annotations. A malformed event is noted and left out. */
static void event_of(cr_builder *b, const char *json, size_t len)
{
    jsonr_error je;
    const jsonr_value *root = jsonr_parse(b->a, json, len, JSONR_REPLACE_INVALID, NULL, &je);
    if (!jsonr_is_object(root)) {
        cr_note(b, "the event sent with the minidump is no JSON object: left out");
        return;
    }
    cr_builder eb;
    if (!cr_builder_init(&eb, CRASHREPORT_FORMAT_SENTRY, b->a, b->err)) {
        b->failed = true;
        return;
    }
    cr_sentry_event_metadata(&eb, root);
    if (eb.failed) {
        b->failed = true;
        return;
    }
    crashreport_metadata *m = &b->r->meta;
    const crashreport_metadata *e = &eb.r->meta;
#define TAKE(f)          \
    if (e->f != NULL)    \
        m->f = e->f;
    TAKE(incident_id) TAKE(release) TAKE(dist) TAKE(bundle_id) TAKE(app_version) TAKE(build)
    TAKE(hardware_model)
#undef TAKE
    if (e->app_name != NULL)
        m->app_name = e->app_name;
    if (m->os_version == NULL)
        m->os_version = e->os_version;
    if (m->app_specific_info == NULL)
        m->app_specific_info = e->app_specific_info;
    const char *env = cr_json_str(root, "environment");
    if (env != NULL)
        add_annotation(b, "environment", env);
    event_tags(b, jsonr_get(root, "tags"));
    const jsonr_value *user = jsonr_get(root, "user");
    static const char *const USER_KEYS[] = {"id", "username", "email", "ip_address"};
    for (size_t i = 0; i < sizeof USER_KEYS / sizeof USER_KEYS[0]; i++) {
        const char *v = cr_json_str(user, USER_KEYS[i]);
        if (v != NULL)
            add_annotation(b, cr_sprintf(b, "user.%s", USER_KEYS[i]), v);
    }
    const jsonr_value *extra = jsonr_get(root, "extra");
    for (size_t i = 0; jsonr_is_object(extra) && i < jsonr_size(extra); i++) {
        const jsonr_member *mb = jsonr_member_at(extra, i);
        const char *v = cr_json_string(&mb->value);
        if (v != NULL)
            add_annotation(b, mb->key, v);
    }
}

/* The app's name and version where neither the dump's metadata nor the event named them:
 * the annotations Crashpad's clients set for the upload (Electron's `_productName` and
 * `_version`, Crashpad's `prod` and `ver`). */
static void app_from_annotations(cr_builder *b)
{
    crashreport_metadata *m = &b->r->meta;
    const crashreport *r = b->r;
    if (m->app_version == NULL) {
        m->app_version = annotation(r, "_version");
        if (m->app_version == NULL)
            m->app_version = annotation(r, "ver");
    }
    if (m->app_name == NULL) {
        m->app_name = annotation(r, "_productName");
        if (m->app_name == NULL)
            m->app_name = annotation(r, "prod");
    }
}

err_code crashreport_parse_minidump(crashreport **out, const uint8_t *data, size_t len,
                                    const crashreport_minidump_options *opts, arena *a,
                                    err_info *err)
{
    *out = NULL;
    minidump *md;
    err_code rc = minidump_parse(&md, data, len, a, err);
    if (rc != ERR_OK) {
        if (rc == ERR_INVALID) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            err_set(err, rc, "minidump: %s", msg);
        }
        return rc;
    }
    cr_builder b;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_MINIDUMP, a, err))
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < md->nnotes; i++)
        cr_note(&b, "minidump: %s", md->notes[i]);
    system_metadata(&b, md);
    exception_metadata(&b, md);
    images_of(&b, md, b.r->meta.arch);
    dump_annotations(&b, md);
    if (opts != NULL && opts->event_json != NULL)
        event_of(&b, opts->event_json, opts->event_len);
    app_from_annotations(&b);
    threads_of(&b, md, opts);
    if (md->nthreads == 0)
        cr_note(&b, "minidump has no thread list");
    rc = cr_finish(&b, "minidump");
    if (rc != ERR_OK)
        return rc;
    *out = b.r;
    return ERR_OK;
}
