/*
 * parse_sentry.c - a Sentry event as SDKs send it (the JSON of an `event` envelope item or
 * of the legacy store endpoint) into the report model.
 *
 * Read:
 *   event_id, timestamp, release, dist, message (string or {formatted, message}), level;
 *   contexts.os (name, version, build), contexts.device (model, arch), contexts.app
 *   (app_identifier, app_name, app_version, app_build);
 *   exception.values[] (the last one is the exception that ended the process, the ones before
 *     it, newest first, the errors it was caused by: causes with their own stacks): type, value,
 *     thread_id, stacktrace, mechanism: sentry-cocoa's {type: mach|signal|nsexception|...,
 *     meta: {mach_exception: {name, exception, code, subcode}, signal: {name, number,
 *     code_name}}} and the older {mach_exception: {exception_name, ...}, posix_signal:
 *     {name, signal, ...}} of the KSCrash-based SDKs;
 *   threads.values[]: id, name, crashed, stacktrace.frames[] (caller first, as Sentry orders
 *     them: the model turns them around) with instruction_addr, image_addr, symbol_addr,
 *     function (`<redacted>` = not named), package, filename/abs_path, lineno;
 *   debug_meta.images[]: `macho` (debug_id, code_file, image_addr, image_size, image_vmaddr,
 *     arch) and the older `apple` (uuid, name, cpu_type/cpu_subtype, image_vmaddr); other
 *     image types are noted and skipped.
 * `exception` and `threads` may also be bare arrays (the protocol allows both).
 *
 * Addresses: arm64 events of the KSCrash-based SDKs cut every address to 32 bits (image
 * 0x1000dc000 is sent as 0xdc000); only instruction_addr - image_addr matters, so a frame
 * whose image_addr names an image is kept in that image, a cut address that wrapped below
 * its image's start being moved up by 2^32. image_vmaddr goes to the model's image vmaddr
 * (0 = use the dSYM's __TEXT vmaddr, which "0x0" also means: those SDKs send it for images
 * whose __TEXT is not at 0).
 *
 * An event without any frame (a message, a handled error without a stack) is still a report:
 * it is grouped by its exception. An event with neither frames nor an exception nor a
 * message is refused.
 *
 * Sources: develop.sentry.dev "Event Payloads" (exception, threads, stacktrace, debugmeta,
 * contexts); Relay's protocol crate for what it still accepts (apple images); the events of
 * ../shared/corpus/reports/other/symbolic-crashprobe-*.json.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crashreport/json_field.h"

/* Frames of one event; more are cut (noted): no SDK sends this many. */
#define SENTRY_MAX_FRAMES 100000

/* `{"values": [...]}` or a bare array: the array, NULL if neither. */
static const jsonr_value *values_of(const jsonr_value *v)
{
    if (jsonr_is_array(v))
        return v;
    const jsonr_value *vals = jsonr_get(v, "values");
    return jsonr_is_array(vals) ? vals : NULL;
}

bool cr_is_sentry(const jsonr_value *root)
{
    if (!jsonr_is_object(root))
        return false;
    /* Bugsnag events carry "exceptions" / "apiKey"; KSCrash has "report" + "crash" */
    if (jsonr_get(root, "apiKey") != NULL || jsonr_get(root, "exceptions") != NULL)
        return false;
    /* keys only Sentry's event payload has at its top level (the formats tried before this
     * one own "threads", "exception" without "values", "kind") */
    static const char *const KEYS[] = {"event_id", "sdk", "debug_meta", "platform", "logentry",
                                       "message"};
    for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++)
        if (jsonr_get(root, KEYS[i]) != NULL)
            return true;
    return values_of(jsonr_get(root, "exception")) != NULL ||
           jsonr_get(jsonr_get(root, "threads"), "values") != NULL;
}

static const char *signal_name(uint64_t n)
{
    /* Darwin's numbering (sys/signal.h) */
    static const char *const NAMES[] = {
        NULL,      "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGILL",  "SIGTRAP", "SIGABRT",
        "SIGEMT",  "SIGFPE",  "SIGKILL", "SIGBUS",  "SIGSEGV", "SIGSYS",  "SIGPIPE",
        "SIGALRM", "SIGTERM",
    };
    return n < sizeof NAMES / sizeof NAMES[0] ? NAMES[n] : NULL;
}

static const char *mach_exception_name(uint64_t n)
{
    /* mach/exception_types.h */
    static const char *const NAMES[] = {
        NULL,          "EXC_BAD_ACCESS",   "EXC_BAD_INSTRUCTION", "EXC_ARITHMETIC",
        "EXC_EMULATION", "EXC_SOFTWARE",   "EXC_BREAKPOINT",      "EXC_SYSCALL",
        "EXC_MACH_SYSCALL", "EXC_RPC_ALERT", "EXC_CRASH",         "EXC_RESOURCE",
        "EXC_GUARD",   "EXC_CORPSE_NOTIFY",
    };
    return n < sizeof NAMES / sizeof NAMES[0] ? NAMES[n] : NULL;
}

/* The metadata of the exception that ended the process (the last of exception.values). */
static void exception_metadata(cr_builder *b, const jsonr_value *ex)
{
    crashreport_metadata *m = &b->r->meta;
    const jsonr_value *mech = jsonr_get(ex, "mechanism");
    const jsonr_value *meta = jsonr_get(mech, "meta");
    /* sentry-cocoa: mechanism.meta.{mach_exception,signal}; older SDKs: mechanism.{...} */
    const jsonr_value *mach = jsonr_get(meta, "mach_exception");
    if (mach == NULL)
        mach = jsonr_get(mech, "mach_exception");
    const jsonr_value *sig = jsonr_get(meta, "signal");
    if (sig == NULL)
        sig = jsonr_get(mech, "posix_signal");
    const char *type = cr_json_str(ex, "type"), *value = cr_json_str(ex, "value");
    const char *mname = cr_json_str(mach, "name");
    if (mname == NULL)
        mname = cr_json_str(mach, "exception_name");
    uint64_t n;
    if (mname == NULL && cr_json_get_u64(mach, "exception", &n))
        mname = mach_exception_name(n);
    const char *sname = cr_json_str(sig, "name");
    if (sname == NULL && (cr_json_get_u64(sig, "number", &n) || cr_json_get_u64(sig, "signal", &n)))
        sname = signal_name(n);
    m->exception_type = cr_strdup(b, mname != NULL ? mname : sname != NULL ? sname : type);
    m->signal = cr_strdup(b, sname);
    uint64_t code, sub;
    if (cr_json_get_u64(mach, "code", &code) && cr_json_get_u64(mach, "subcode", &sub))
        m->exception_codes = cr_sprintf(b, "0x%016" PRIx64 ", 0x%016" PRIx64, code, sub);
    m->exception_subtype = cr_json_str(sig, "code_name");
    /* The exception's own name beside its value ("NSInvalidArgumentException: reason"), so
     * that grouping sees the same exception class as in Apple's reports of the crash. */
    bool type_is_class = type != NULL && (mname != NULL || sname != NULL) &&
                         strcmp(type, mname ? mname : sname) != 0;
    if (type_is_class)
        m->exception_reason = cr_sprintf(b, "%s%s%s", type, value ? ": " : "", value ? value : "");
    else if (value != NULL)
        m->exception_reason = cr_strdup(b, value);
}

/* Image lookup by the image_addr frames name: (load_addr, index) sorted by address. */
typedef struct {
    uint64_t load;
    int32_t index;
} image_key;

static int key_cmp(const void *x, const void *y)
{
    const image_key *a = x, *c = y;
    if (a->load != c->load)
        return a->load < c->load ? -1 : 1;
    return a->index < c->index ? -1 : a->index > c->index;
}

static int32_t image_by_load(const image_key *keys, size_t n, uint64_t load)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid].load < load)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo].load == load ? keys[lo].index : -1;
}

typedef struct {
    cr_builder *b;
    image_key *keys;
    size_t nkeys;
    size_t frames;   /* frames read so far */
    bool cut_noted;
} sentry_ctx;

/* The members of a frame that read_frames reads (cr_json_fields). */
enum { SF_INSTRUCTION_ADDR, SF_FUNCTION, SF_FILENAME, SF_ABS_PATH, SF_LINENO, SF_PACKAGE,
       SF_SYMBOL_ADDR, SF_IMAGE_ADDR, SF_N };
static const cr_json_key FRAME_KEYS[SF_N] = {
    CR_JSON_KEY("instruction_addr"), CR_JSON_KEY("function"), CR_JSON_KEY("filename"),
    CR_JSON_KEY("abs_path"), CR_JSON_KEY("lineno"), CR_JSON_KEY("package"),
    CR_JSON_KEY("symbol_addr"), CR_JSON_KEY("image_addr"),
};

/* What a note calls the stacktrace: "threads[i]", "exception" for pos SIZE_MAX, and
 * "exception.values[i]" for a cause's. Written only when there is a note to write. */
static const char *where_name(char buf[48], bool cause, size_t pos)
{
    if (pos == SIZE_MAX)
        return "exception";
    snprintf(buf, 48, cause ? "exception.values[%zu]" : "threads[%zu]", pos);
    return buf;
}

/* Append the frames of one Sentry stacktrace (caller first), innermost first, to thread `ti`
 * or, with `cause`, to cause `ti`; `pos` is the stacktrace's place in threads.values or
 * exception.values (SIZE_MAX: the exception's own, read into its thread). */
static void read_frames(sentry_ctx *c, const jsonr_value *stacktrace, size_t ti, bool cause,
                        size_t pos)
{
    char where[48];
    cr_builder *b = c->b;
    const jsonr_value *frames = jsonr_get(stacktrace, "frames");
    size_t n = cr_json_array_size(frames);
    for (size_t k = n; k > 0 && !b->failed; k--) {
        const jsonr_value *jf = jsonr_at(frames, k - 1);
        if (!jsonr_is_object(jf)) {
            cr_note(b, "%s frame %zu is not an object, skipped", where_name(where, cause, pos),
                    k - 1);
            continue;
        }
        if (c->frames >= SENTRY_MAX_FRAMES) {
            if (!c->cut_noted)
                cr_note(b, "more than %d frames: the rest were skipped", SENTRY_MAX_FRAMES);
            c->cut_noted = true;
            return;
        }
        const jsonr_value *ff[SF_N];
        cr_json_fields(ff, jf, FRAME_KEYS, SF_N);
        uint64_t addr = 0, image_addr = 0, sym_addr = 0, line = 0;
        bool has_addr = cr_json_u64(ff[SF_INSTRUCTION_ADDR], &addr);
        const char *function = cr_json_string(ff[SF_FUNCTION]);
        if (function != NULL && strcmp(function, "<redacted>") == 0)
            function = NULL;
        const char *file = cr_json_string(ff[SF_FILENAME]);
        if (file == NULL)
            file = cr_json_string(ff[SF_ABS_PATH]);
        if (!has_addr && function == NULL && file == NULL) {
            cr_note(b, "%s frame %zu has neither instruction_addr nor function, skipped",
                    where_name(where, cause, pos), k - 1);
            continue;
        }
        crashreport_frame *f = cause ? cr_add_cause_frame(b, &b->r->causes[ti])
                                     : cr_add_frame(b, &b->r->threads[ti]);
        if (f == NULL)
            return;
        c->frames++;
        f->index = (uint32_t)(cause ? b->r->causes[ti].nframes : b->r->threads[ti].nframes) - 1;
        f->addr = addr;
        f->symbol = function; /* borrowed: the tree lives in the report's arena */
        f->file = file;
        if (cr_json_u64(ff[SF_LINENO], &line) && line <= UINT32_MAX)
            f->line = (uint32_t)line;
        const char *package = cr_json_string(ff[SF_PACKAGE]);
        if (package != NULL)
            f->image_name = cr_basename(package);
        if (f->symbol != NULL && cr_json_u64(ff[SF_SYMBOL_ADDR], &sym_addr) && sym_addr <= addr &&
            has_addr) {
            f->symbol_offset = addr - sym_addr;
            f->has_symbol_offset = true;
        }
        if (has_addr && cr_json_u64(ff[SF_IMAGE_ADDR], &image_addr)) {
            int32_t im = image_by_load(c->keys, c->nkeys, image_addr);
            if (im >= 0) {
                f->image = im;
                /* an address cut to 32 bits that wrapped past 2^32 inside its image */
                if (addr < image_addr && image_addr <= UINT32_MAX && addr <= UINT32_MAX)
                    f->addr = addr + (UINT64_C(1) << 32);
            }
        }
    }
}

static void read_images(cr_builder *b, const jsonr_value *images)
{
    const char *default_arch = b->r->meta.arch;
    for (size_t i = 0; i < cr_json_array_size(images) && !b->failed; i++) {
        const jsonr_value *ji = jsonr_at(images, i);
        const char *type = cr_json_str(ji, "type");
        if (!jsonr_is_object(ji) || type == NULL ||
            (strcmp(type, "macho") != 0 && strcmp(type, "apple") != 0)) {
            cr_note(b, "debug_meta.images[%zu] is not a macho or apple image, skipped", i);
            continue;
        }
        crashreport_image *im = cr_add_image(b);
        if (im == NULL)
            return;
        uint64_t size = 0, ct = 0, cs = 0;
        if (!cr_json_get_u64(ji, "image_addr", &im->load_addr))
            cr_note(b, "debug_meta.images[%zu] has no image_addr", i);
        if (cr_json_get_u64(ji, "image_size", &size) && size > 0 && size - 1 <= UINT64_MAX - im->load_addr)
            im->end_addr = im->load_addr + size - 1;
        cr_json_get_u64(ji, "image_vmaddr", &im->vmaddr); /* absent or "0x0": the dSYM's */
        const char *uuid = cr_json_str(ji, "debug_id");
        if (uuid == NULL)
            uuid = cr_json_str(ji, "uuid");
        if (uuid != NULL) {
            /* a debug_id may carry an age appendix ("<uuid>-0"); the UUID is its first 36 */
            size_t n = strlen(uuid);
            cr_uuid_set(im->uuid, uuid, n > 36 && uuid[36] == '-' ? 36 : n);
        }
        im->path = cr_json_str(ji, "code_file");
        if (im->path == NULL)
            im->path = cr_json_str(ji, "name");
        if (im->path != NULL)
            im->name = cr_basename(im->path);
        const char *arch = cr_json_str(ji, "arch");
        if (arch != NULL)
            im->arch = cr_arch_normalize(arch, strlen(arch));
        else if (cr_json_get_u64(ji, "cpu_type", &ct) && cr_json_get_u64(ji, "cpu_subtype", &cs))
            im->arch = cr_arch_from_cpu(ct, cs);
        if (im->arch == NULL)
            im->arch = default_arch;
    }
}

void cr_sentry_event_metadata(cr_builder *b, const jsonr_value *root)
{
    crashreport_metadata *m = &b->r->meta;
    const jsonr_value *contexts = jsonr_get(root, "contexts");
    const jsonr_value *os = jsonr_get(contexts, "os");
    const jsonr_value *dev = jsonr_get(contexts, "device");
    const jsonr_value *app = jsonr_get(contexts, "app");
    m->incident_id = cr_json_str(root, "event_id");
    m->date = cr_json_str(root, "timestamp");
    const jsonr_value *ts = jsonr_get(root, "timestamp");
    if (m->date == NULL && jsonr_is_number(ts)) {
        /* seconds since the epoch: shown the way Apple's reports show a date */
        double secs = jsonr_number(ts);
        struct tm tm;
        time_t whole = (time_t)secs;
        if (secs >= 0 && secs < 253402300800.0 && gmtime_r(&whole, &tm) != NULL)
            m->date = cr_sprintf(b, "%04d-%02d-%02d %02d:%02d:%02d.%03d +0000", tm.tm_year + 1900,
                                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                                 (int)((secs - (double)whole) * 1000.0));
    }
    m->release = cr_json_str(root, "release");
    m->dist = cr_json_str(root, "dist");
    const char *on = cr_json_str(os, "name"), *ov = cr_json_str(os, "version"), *ob = cr_json_str(os, "build");
    m->os_version = cr_os_version(b, on, ov, ob);
    m->hardware_model = cr_json_str(dev, "model");
    const char *arch = cr_json_str(dev, "arch");
    if (arch != NULL)
        m->arch = cr_arch_normalize(arch, strlen(arch));
    m->bundle_id = cr_json_str(app, "app_identifier");
    m->app_name = cr_json_str(app, "app_name");
    m->process = m->app_name;
    m->app_version = cr_json_str(app, "app_version");
    m->build = cr_json_str(app, "app_build");
    /* sentry-cocoa's default release is "<bundle id>@<version>+<build>" */
    const char *rel = m->release;
    const char *at = rel != NULL ? strrchr(rel, '@') : NULL;
    if (at != NULL) {
        const char *plus = strchr(at, '+');
        if (m->bundle_id == NULL && at > rel)
            m->bundle_id = cr_strndup(b, rel, (size_t)(at - rel));
        if (m->app_version == NULL && (plus ? plus : at + strlen(at)) > at + 1)
            m->app_version = cr_strndup(b, at + 1, plus ? (size_t)(plus - at - 1) : strlen(at + 1));
        if (m->build == NULL && plus != NULL && plus[1] != '\0')
            m->build = cr_strdup(b, plus + 1);
    }
    if (m->build == NULL)
        m->build = m->dist;
    const jsonr_value *msg = jsonr_get(root, "message");
    const char *text = jsonr_is_string(msg) ? cr_json_str(root, "message")
                                            : cr_json_str(msg, "formatted");
    if (text == NULL)
        text = cr_json_str(msg, "message");
    const jsonr_value *logentry = jsonr_get(root, "logentry");
    if (text == NULL)
        text = cr_json_str(logentry, "formatted");
    if (text == NULL)
        text = cr_json_str(logentry, "message");
    m->app_specific_info = cr_strdup(b, text);
}

/* The thread `id` names: its position in r->threads, -1 if none. */
static int32_t thread_by_id(const crashreport *r, uint64_t id)
{
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].index == id)
            return (int32_t)i;
    return -1;
}

err_code cr_parse_sentry(crashreport **out, const jsonr_value *root, arena *a, err_info *err)
{
    cr_builder b;
    *out = NULL;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_SENTRY, a, err))
        return ERR_TOO_LARGE;
    b.frameless_ok = true;
    sentry_ctx c = {.b = &b};
    cr_sentry_event_metadata(&b, root);

    const jsonr_value *exceptions = values_of(jsonr_get(root, "exception"));
    size_t nex = cr_json_array_size(exceptions);
    const jsonr_value *ex = nex > 0 ? jsonr_at(exceptions, nex - 1) : NULL;
    if (jsonr_is_object(ex))
        exception_metadata(&b, ex);

    const jsonr_value *images = jsonr_get(jsonr_get(root, "debug_meta"), "images");
    read_images(&b, images);
    if (b.r->nimages > 0 && !b.failed) {
        c.keys = arena_alloc_array(a, b.r->nimages, sizeof *c.keys, err);
        if (c.keys == NULL)
            return ERR_TOO_LARGE;
        for (size_t i = 0; i < b.r->nimages; i++)
            c.keys[i] = (image_key){b.r->images[i].load_addr, (int32_t)i};
        c.nkeys = b.r->nimages;
        qsort(c.keys, c.nkeys, sizeof *c.keys, key_cmp);
    }

    const jsonr_value *threads = values_of(jsonr_get(root, "threads"));
    for (size_t i = 0; i < cr_json_array_size(threads) && !b.failed; i++) {
        const jsonr_value *jt = jsonr_at(threads, i);
        if (!jsonr_is_object(jt)) {
            cr_note(&b, "threads[%zu] is not an object, skipped", i);
            continue;
        }
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            break;
        uint64_t id;
        t->index = cr_json_get_u64(jt, "id", &id) && id <= UINT32_MAX ? (uint32_t)id : (uint32_t)i;
        t->name = cr_json_str(jt, "name");
        t->crashed = jsonr_is_true(jsonr_get(jt, "crashed"));
        read_frames(&c, jsonr_get(jt, "stacktrace"), b.r->nthreads - 1, false, i);
    }

    /* The exception's thread is the crashed one when no thread says so; its stacktrace stands
     * in for that thread's when the thread has none, or is the only stack of the event. */
    uint64_t tid = 0;
    bool has_tid =
        jsonr_is_object(ex) && cr_json_get_u64(ex, "thread_id", &tid) && tid <= UINT32_MAX;
    bool any_crashed = false;
    for (size_t i = 0; i < b.r->nthreads; i++)
        any_crashed |= b.r->threads[i].crashed;
    if (has_tid && !any_crashed && b.r->meta.exception_type != NULL) {
        int32_t ti = thread_by_id(b.r, tid);
        if (ti >= 0)
            b.r->threads[ti].crashed = true;
    }
    const jsonr_value *exst = jsonr_get(ex, "stacktrace");
    if (cr_json_array_size(jsonr_get(exst, "frames")) > 0 && !b.failed) {
        int32_t ti = has_tid ? thread_by_id(b.r, tid) : -1;
        if (ti < 0 && b.r->nthreads == 0) {
            crashreport_thread *t = cr_add_thread(&b);
            if (t != NULL) {
                t->index = has_tid ? (uint32_t)tid : 0;
                t->crashed = true;
                ti = 0;
            }
        }
        if (ti >= 0 && b.r->threads[ti].nframes == 0)
            read_frames(&c, exst, (size_t)ti, false, SIZE_MAX);
    }

    /* The values before the last are the errors it was caused by ("sorted oldest to newest",
     * Sentry's exception interface): the nearest cause is the one just before it. */
    for (size_t i = nex > 1 ? nex - 1 : 0; i-- > 0 && !b.failed;) {
        const jsonr_value *cv = jsonr_at(exceptions, i);
        if (!jsonr_is_object(cv)) {
            cr_note(&b, "exception.values[%zu] is not an object, skipped", i);
            continue;
        }
        crashreport_cause *cause = cr_add_cause(&b);
        if (cause == NULL)
            break;
        cause->type = cr_json_str(cv, "type");
        cause->reason = cr_json_str(cv, "value");
        read_frames(&c, jsonr_get(cv, "stacktrace"), b.r->ncauses - 1, true, i);
    }

    size_t frames = 0;
    for (size_t i = 0; i < b.r->nthreads; i++)
        frames += b.r->threads[i].nframes;
    if (frames == 0 && b.r->meta.exception_type == NULL && b.r->meta.exception_reason == NULL &&
        b.r->meta.app_specific_info == NULL && !b.failed)
        return err_set(err, ERR_INVALID,
                       "Sentry event has no stack frames, no exception and no message");
    err_code rc = cr_finish(&b, "Sentry event");
    if (rc == ERR_OK)
        *out = b.r;
    return rc;
}
