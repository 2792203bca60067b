/*
 * parse_json.c - the JSON formats: .ips (header line + body), KSCrash, stacksift's own stack
 * format; hands MetricKit (parse_metrickit.c), Bugsnag (parse_bugsnag.c) and Sentry
 * (parse_sentry.c) documents on; recognizes and rejects other JSON documents (kernel
 * panics) with a message
 * that names them.
 *
 * Documents are read with jsonr (base/jsonr.h) into the report's arena: it limits nesting to
 * JSONR_MAX_DEPTH (2048, as jansson) and checks UTF-8, so a hostile document costs a bounded
 * stack and gives a clean error, and the tree's strings go into the model without a copy.
 * Integers beyond int64 (thread-state registers in real .ips files) come back as reals;
 * addresses read from reals are accepted only when they are exact (below 2^53).
 *
 * Sources: Apple "Interpreting the JSON format of a crash report" (.ips, bug_type 309);
 * KSCrash's KSCrashReportFields.h; docs/report-formats.md for the stacksift format.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashreport/json_field.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* A number or string value as text ("0x1", 6, "6"), NULL if absent. */
static const char *jtext(cr_builder *b, const jsonr_value *o, const char *key)
{
    const jsonr_value *v = jsonr_get(o, key);
    if (jsonr_is_string(v))
        return cr_json_str(o, key);
    if (jsonr_is_integer(v))
        return cr_sprintf(b, "%" PRId64, jsonr_integer(v));
    if (jsonr_is_real(v))
        return cr_sprintf(b, "%.17g", jsonr_real(v));
    return NULL;
}

static void set_if_null(const char **slot, const char *v)
{
    if (*slot == NULL && v != NULL)
        *slot = v;
}

/* ---- .ips ------------------------------------------------------------------------------------- */

void cr_parse_ips_header_into(cr_builder *b, const char *line, size_t len)
{
    const jsonr_value *h = jsonr_parse(b->a, line, len, CR_JSONR_FLAGS, NULL, NULL);
    if (!jsonr_is_object(h)) {
        cr_note(b, "line 1: .ips JSON header is unreadable, ignored");
        return;
    }
    crashreport_metadata *m = &b->r->meta;
    set_if_null(&m->app_name, cr_json_str(h, "app_name"));
    set_if_null(&m->process, cr_json_str(h, "name"));
    set_if_null(&m->app_version, cr_json_str(h, "app_version"));
    set_if_null(&m->build, cr_json_str(h, "build_version"));
    set_if_null(&m->bundle_id, cr_json_str(h, "bundleID"));
    set_if_null(&m->os_version, cr_json_str(h, "os_version"));
    set_if_null(&m->incident_id, cr_json_str(h, "incident_id"));
    set_if_null(&m->date, cr_json_str(h, "timestamp"));
}

static const char *bug_type_of(const jsonr_value *header, const jsonr_value *body)
{
    const char *bt = cr_json_str(header, "bug_type");
    return bt != NULL ? bt : cr_json_str(body, "bug_type");
}

/* The members of an .ips frame that ips_frames reads (cr_json_fields: a 100-frame report has
 * 700 of them). */
enum { IF_INLINE, IF_IMAGE_OFFSET, IF_IMAGE_INDEX, IF_SYMBOL, IF_SYMBOL_LOCATION, IF_SOURCE_FILE,
       IF_SOURCE_LINE, IF_N };
static const cr_json_key IPS_FRAME_KEYS[IF_N] = {
    CR_JSON_KEY("inline"), CR_JSON_KEY("imageOffset"), CR_JSON_KEY("imageIndex"),
    CR_JSON_KEY("symbol"), CR_JSON_KEY("symbolLocation"), CR_JSON_KEY("sourceFile"),
    CR_JSON_KEY("sourceLine"),
};

/* One .ips frame list; inline frames ("inline": true) fold into the next real frame. */
static bool ips_frames(cr_builder *b, const jsonr_value *frames, bool leb, crashreport_thread *t,
                       const char *where)
{
    crashreport *r = b->r;
    size_t n = cr_json_array_size(frames), run_start = 0;
    uint32_t index = 0;
    for (size_t i = 0; i < n; i++) {
        const jsonr_value *jf = jsonr_at(frames, i);
        if (!jsonr_is_object(jf)) {
            cr_note(b, "%s frame %zu is not an object, skipped", where, i);
            run_start = i + 1;
            continue;
        }
        const jsonr_value *ff[IF_N];
        cr_json_fields(ff, jf, IPS_FRAME_KEYS, IF_N);
        if (jsonr_is_true(ff[IF_INLINE]))
            continue; /* collected when the frame it was inlined into comes */
        uint64_t off = 0, img = 0;
        bool has_off = cr_json_u64(ff[IF_IMAGE_OFFSET], &off);
        bool has_img = cr_json_u64(ff[IF_IMAGE_INDEX], &img);
        crashreport_frame *f = leb ? cr_add_leb_frame(b) : cr_add_frame(b, t);
        if (f == NULL)
            return false;
        f->index = index++;
        if (!has_off)
            cr_note(b, "%s frame %zu has no imageOffset", where, i);
        if (has_img && img < r->nimages) {
            const crashreport_image *im = &r->images[img];
            if (off > UINT64_MAX - im->load_addr)
                cr_note(b, "%s frame %zu: address overflows 64 bits", where, i);
            else
                f->addr = im->load_addr + off;
            f->image = (int32_t)img;
        } else {
            if (has_img)
                cr_note(b, "%s frame %zu: imageIndex %" PRIu64 " is out of range", where, i,
                        img);
            f->addr = off;
        }
        f->symbol = cr_json_string(ff[IF_SYMBOL]);
        f->has_symbol_offset = f->symbol != NULL && cr_json_u64(ff[IF_SYMBOL_LOCATION],
                                                                &f->symbol_offset);
        f->file = cr_json_string(ff[IF_SOURCE_FILE]);
        uint64_t line;
        if (cr_json_u64(ff[IF_SOURCE_LINE], &line) && line <= UINT32_MAX)
            f->line = (uint32_t)line;
        if (i > run_start) {
            size_t k = i - run_start;
            crashreport_symbol *syms = arena_alloc_array(b->a, k, sizeof *syms, b->err);
            if (syms == NULL) {
                b->failed = true;
                return false;
            }
            size_t w = 0;
            for (size_t j = run_start; j < i; j++) {
                const jsonr_value *ji = jsonr_at(frames, j);
                if (!jsonr_is_object(ji))
                    continue;
                crashreport_symbol *s = &syms[w];
                const jsonr_value *fi[IF_N];
                cr_json_fields(fi, ji, IPS_FRAME_KEYS, IF_N);
                s->function = cr_json_string(fi[IF_SYMBOL]);
                if (s->function == NULL)
                    continue;
                s->file = cr_json_string(fi[IF_SOURCE_FILE]);
                if (cr_json_u64(fi[IF_SOURCE_LINE], &line) && line <= UINT32_MAX)
                    s->line = (uint32_t)line;
                cr_json_u64(fi[IF_SYMBOL_LOCATION], &s->offset);
                s->inlined = true;
                w++;
            }
            f->given_inlines = w > 0 ? syms : NULL;
            f->ngiven_inlines = (uint32_t)w;
        }
        run_start = i + 1;
    }
    if (run_start < n)
        cr_note(b, "%s ends with inline frames that belong to no frame", where);
    return !b->failed;
}

static void ips_metadata(cr_builder *b, const jsonr_value *h, const jsonr_value *body)
{
    crashreport_metadata *m = &b->r->meta;
    const jsonr_value *bi = jsonr_get(body, "bundleInfo");
    m->incident_id = cr_json_str(body, "incident");
    m->process = cr_json_str(body, "procName");
    m->process_path = cr_json_str(body, "procPath");
    m->bundle_id = cr_json_str(bi, "CFBundleIdentifier");
    m->app_version = cr_json_str(bi, "CFBundleShortVersionString");
    m->build = cr_json_str(bi, "CFBundleVersion");
    m->code_type = cr_json_str(body, "cpuType");
    m->arch = cr_arch_from_code_type(m->code_type);
    m->hardware_model = cr_json_str(body, "modelCode");
    m->date = cr_json_str(body, "captureTime");
    const jsonr_value *os = jsonr_get(body, "osVersion");
    const char *train = cr_json_str(os, "train"), *build = cr_json_str(os, "build");
    if (train != NULL)
        m->os_version = build ? cr_sprintf(b, "%s (%s)", train, build) : cr_strdup(b, train);
    const char *parent = cr_json_str(body, "parentProc");
    uint64_t ppid;
    if (parent != NULL)
        m->parent_process = cr_json_get_u64(body, "parentPid", &ppid)
                                ? cr_sprintf(b, "%s [%" PRIu64 "]", parent, ppid)
                                : cr_strdup(b, parent);
    const jsonr_value *ex = jsonr_get(body, "exception");
    m->exception_type = cr_json_str(ex, "type");
    m->exception_codes = cr_json_str(ex, "codes");
    m->exception_subtype = cr_json_str(ex, "subtype");
    m->exception_reason = cr_json_str(ex, "message");
    m->signal = cr_json_str(ex, "signal");
    const jsonr_value *term = jsonr_get(body, "termination");
    if (jsonr_is_object(term)) {
        const char *ns = cr_json_str(term, "namespace"), *ind = cr_json_str(term, "indicator");
        uint64_t code;
        bool has_code = cr_json_get_u64(term, "code", &code);
        char codebuf[32] = "";
        if (has_code)
            snprintf(codebuf, sizeof codebuf, code > 0xffff ? "0x%" PRIx64 : "%" PRIu64, code);
        m->termination_reason =
            cr_sprintf(b, "Namespace %s%s%s%s%s", ns ? ns : "?", has_code ? ", Code " : "",
                       codebuf, ind ? ", " : "", ind ? ind : "");
    }
    const jsonr_value *asi = jsonr_get(body, "asi");
    if (jsonr_is_object(asi)) {
        buf t;
        buf_init(&t);
        cr_json_kv *kv;
        size_t nkv = cr_json_members(&kv, asi);
        for (size_t k = 0; k < nkv; k++) {
            const jsonr_value *val = kv[k].value;
            for (size_t i = 0; i < cr_json_array_size(val) && t.len < 8192; i++) {
                const jsonr_value *s = jsonr_at(val, i);
                if (!jsonr_is_string(s))
                    continue;
                if (t.len > 0)
                    buf_putc(&t, '\n');
                buf_printf(&t, "%s: %s", kv[k].key, jsonr_string(s));
            }
        }
        free(kv);
        if (t.len > 0)
            m->app_specific_info = cr_strndup(b, (const char *)t.data, t.len);
        buf_reset(&t);
    }
    uint64_t ft;
    if (cr_json_get_u64(body, "faultingThread", &ft) && ft < INT32_MAX)
        m->crashed_thread = (int32_t)ft;
    /* the header fills what the body lacks */
    if (jsonr_is_object(h)) {
        set_if_null(&m->incident_id, cr_json_str(h, "incident_id"));
        set_if_null(&m->process, cr_json_str(h, "name"));
        set_if_null(&m->app_name, cr_json_str(h, "app_name"));
        set_if_null(&m->app_version, cr_json_str(h, "app_version"));
        set_if_null(&m->build, cr_json_str(h, "build_version"));
        set_if_null(&m->bundle_id, cr_json_str(h, "bundleID"));
        set_if_null(&m->os_version, cr_json_str(h, "os_version"));
        set_if_null(&m->date, cr_json_str(h, "timestamp"));
    }
}

static err_code parse_ips(crashreport **out, const jsonr_value *h, const jsonr_value *body,
                          arena *a, err_info *err)
{
    const char *bt = bug_type_of(h, body);
    if ((bt != NULL && (strcmp(bt, "151") == 0 || strcmp(bt, "210") == 0)) ||
        jsonr_get(body, "panicString") != NULL || jsonr_get(body, "panicFlags"))
        return err_set(err, ERR_UNSUPPORTED,
                       "kernel panic report (bug_type %s) is not an app crash report",
                       bt ? bt : "?");
    const jsonr_value *threads = jsonr_get(body, "threads");
    const jsonr_value *images = jsonr_get(body, "usedImages");
    if (!jsonr_is_array(threads) || !jsonr_is_array(images)) {
        const char *what = bt == NULL                 ? "unknown"
                           : strcmp(bt, "288") == 0   ? "stackshot"
                           : strcmp(bt, "298") == 0   ? "jetsam event"
                           : strcmp(bt, "385") == 0   ? "spin/hang report"
                                                      : "not a crash";
        return err_set(err, ERR_UNSUPPORTED,
                       ".ips report of bug_type %s (%s) has no \"threads\" and \"usedImages\"",
                       bt ? bt : "?", what);
    }
    cr_builder b;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_IPS, a, err))
        return ERR_TOO_LARGE;
    ips_metadata(&b, h, body);
    for (size_t i = 0; i < cr_json_array_size(images); i++) {
        const jsonr_value *ji = jsonr_at(images, i);
        crashreport_image *im = cr_add_image(&b);
        if (im == NULL)
            break;
        if (!jsonr_is_object(ji)) {
            cr_note(&b, "usedImages[%zu] is not an object", i);
            continue;
        }
        uint64_t size = 0;
        cr_json_get_u64(ji, "base", &im->load_addr);
        if (cr_json_get_u64(ji, "size", &size) && size > 0 && size - 1 <= UINT64_MAX - im->load_addr)
            im->end_addr = im->load_addr + size - 1;
        const char *uuid = cr_json_str(ji, "uuid");
        if (uuid != NULL)
            cr_uuid_set(im->uuid, uuid, strlen(uuid));
        im->path = cr_json_str(ji, "path");
        im->name = cr_json_str(ji, "name");
        if (im->name == NULL && im->path != NULL)
            im->name = cr_basename(im->path);
        const char *arch = cr_json_str(ji, "arch");
        if (arch != NULL)
            im->arch = cr_arch_normalize(arch, strlen(arch));
        im->version = cr_json_str(ji, "CFBundleShortVersionString");
        /* "source": "P" process image, "S" shared cache, "A" absolute (no image) */
        const char *src = cr_json_str(ji, "source");
        im->user = src != NULL && strcmp(src, "P") == 0 && im->path != NULL &&
                   strncmp(im->path, "/usr/", 5) != 0 && strncmp(im->path, "/System/", 8) != 0;
    }
    for (size_t i = 0; i < cr_json_array_size(threads) && !b.failed; i++) {
        const jsonr_value *jt = jsonr_at(threads, i);
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            break;
        t->index = (uint32_t)i;
        if (!jsonr_is_object(jt)) {
            cr_note(&b, "threads[%zu] is not an object", i);
            continue;
        }
        t->name = cr_json_str(jt, "name");
        t->queue = cr_json_str(jt, "queue");
        t->crashed = jsonr_is_true(jsonr_get(jt, "triggered")) ||
                     (b.r->meta.crashed_thread >= 0 && (size_t)b.r->meta.crashed_thread == i);
        char where[32];
        snprintf(where, sizeof where, "threads[%zu]", i);
        ips_frames(&b, jsonr_get(jt, "frames"), false, &b.r->threads[i], where);
    }
    const jsonr_value *leb = jsonr_get(body, "lastExceptionBacktrace");
    if (jsonr_is_array(leb)) {
        b.r->has_leb = true;
        ips_frames(&b, leb, true, NULL, "lastExceptionBacktrace");
    }
    err_code rc = cr_finish(&b, ".ips report");
    if (rc == ERR_OK)
        *out = b.r;
    return rc;
}

/* ---- KSCrash ------------------------------------------------------------------------------------ */

static void kscrash_thread(cr_builder *b, const jsonr_value *jt, size_t pos)
{
    crashreport_thread *t = cr_add_thread(b);
    if (t == NULL)
        return;
    uint64_t idx;
    t->index = cr_json_get_u64(jt, "index", &idx) && idx <= UINT32_MAX ? (uint32_t)idx : (uint32_t)pos;
    t->name = cr_json_str(jt, "name");
    t->queue = cr_json_str(jt, "dispatch_queue");
    t->crashed = jsonr_is_true(jsonr_get(jt, "crashed"));
    const jsonr_value *bt = jsonr_get(jsonr_get(jt, "backtrace"), "contents");
    size_t ti = b->r->nthreads - 1;
    for (size_t i = 0; i < cr_json_array_size(bt); i++) {
        const jsonr_value *jf = jsonr_at(bt, i);
        uint64_t addr;
        if (!jsonr_is_object(jf) || !cr_json_get_u64(jf, "instruction_addr", &addr)) {
            cr_note(b, "thread %u frame %zu has no instruction_addr, skipped", t->index, i);
            continue;
        }
        crashreport_frame *f = cr_add_frame(b, &b->r->threads[ti]);
        if (f == NULL)
            return;
        t = &b->r->threads[ti];
        f->index = (uint32_t)(t->nframes - 1);
        f->addr = addr;
        f->image_name = cr_json_str(jf, "object_name");
        f->symbol = cr_json_str(jf, "symbol_name");
        uint64_t sa;
        if (f->symbol != NULL && cr_json_get_u64(jf, "symbol_addr", &sa) && sa <= addr) {
            f->symbol_offset = addr - sa;
            f->has_symbol_offset = true;
        }
    }
}

static void kscrash_metadata(cr_builder *b, const jsonr_value *root)
{
    crashreport_metadata *m = &b->r->meta;
    const jsonr_value *rep = jsonr_get(root, "report");
    const jsonr_value *sys = jsonr_get(root, "system");
    const jsonr_value *error = jsonr_get(jsonr_get(root, "crash"), "error");
    m->incident_id = cr_json_str(rep, "id");
    m->process = cr_json_str(rep, "process_name");
    m->date = jtext(b, rep, "timestamp");
    set_if_null(&m->process, cr_json_str(sys, "process_name"));
    set_if_null(&m->process, cr_json_str(sys, "CFBundleExecutable"));
    m->process_path = cr_json_str(sys, "CFBundleExecutablePath");
    m->bundle_id = cr_json_str(sys, "CFBundleIdentifier");
    m->app_name = cr_json_str(sys, "CFBundleName");
    m->app_version = cr_json_str(sys, "CFBundleShortVersionString");
    m->build = cr_json_str(sys, "CFBundleVersion");
    m->hardware_model = cr_json_str(sys, "machine");
    const char *cpu = cr_json_str(sys, "cpu_arch");
    if (cpu != NULL)
        m->arch = cr_arch_normalize(cpu, strlen(cpu));
    const char *osn = cr_json_str(sys, "system_name"), *osv = cr_json_str(sys, "system_version");
    const char *osb = cr_json_str(sys, "os_version");
    m->os_version = cr_os_version(b, osn, osv, osb);
    const jsonr_value *mach = jsonr_get(error, "mach");
    const jsonr_value *sig = jsonr_get(error, "signal");
    m->exception_type = cr_json_str(mach, "exception_name");
    m->signal = cr_json_str(sig, "name");
    set_if_null(&m->exception_type, m->signal);
    set_if_null(&m->exception_type, cr_json_str(error, "type"));
    uint64_t code, sub;
    if (cr_json_get_u64(mach, "code", &code) && cr_json_get_u64(mach, "subcode", &sub))
        m->exception_codes = cr_sprintf(b, "0x%016" PRIx64 ", 0x%016" PRIx64, code, sub);
    m->exception_subtype = cr_json_str(mach, "code_name");
    const char *reason = cr_json_str(error, "reason");
    const char *exname = cr_json_str(jsonr_get(error, "nsexception"), "name");
    if (exname == NULL)
        exname = cr_json_str(jsonr_get(error, "cpp_exception"), "name");
    if (exname != NULL || reason != NULL)
        m->exception_reason = cr_sprintf(b, "%s%s%s", exname ? exname : "",
                                         exname && reason ? ": " : "", reason ? reason : "");
    const char *diag = cr_json_str(jsonr_get(root, "crash"), "diagnosis");
    if (diag != NULL)
        m->app_specific_info = cr_strdup(b, diag);
    /* error.type names kills that are no exception and no signal of the app's own making:
     * "memory_termination" (KSCrash 2's OOM watchdog, SIGKILL), "deadlock" (main thread) */
    const char *etype = cr_json_str(error, "type");
    if (etype != NULL && (strcmp(etype, "memory_termination") == 0 ||
                          strcmp(etype, "deadlock") == 0)) {
        const char *level = cr_json_str(jsonr_get(error, "memory_termination"), "memory_level");
        m->termination_reason = level != NULL ? cr_sprintf(b, "%s (memory level %s)", etype, level)
                                              : cr_strdup(b, etype);
    }
}

/* A KSCrash report of only `crash.error` (no thread list: KSCrash 2's memory terminations,
 * SentryCrash's minimal reports of a signal) still says what crashed: it is stored without
 * stacks and grouped by its exception, reason and crashing image (signature rule 5). The
 * crashing image is the one holding error.address, else the main executable. */
static void kscrash_frameless(cr_builder *b, const jsonr_value *root)
{
    crashreport *r = b->r;
    const jsonr_value *error = jsonr_get(jsonr_get(root, "crash"), "error");
    if (!jsonr_is_object(error) || r->nthreads > 0 || r->has_leb)
        return;
    if (r->meta.exception_type == NULL && r->meta.exception_reason == NULL &&
        r->meta.termination_reason == NULL)
        return; /* an error that says nothing: still "no stack frames" */
    b->frameless_ok = true;
    uint64_t addr;
    int32_t im = -1;
    for (size_t i = 0; i < r->nimages && cr_json_get_u64(error, "address", &addr) && addr != 0; i++) {
        const crashreport_image *x = &r->images[i];
        if (addr >= x->load_addr && (x->end_addr == 0 ? addr - x->load_addr < 0x100000000ull
                                                      : addr <= x->end_addr)) {
            im = (int32_t)i;
            break;
        }
    }
    if (im >= 0)
        r->meta.crash_image = r->images[im].name;
    else
        r->meta.crash_image = r->meta.process;
    cr_note(b, "KSCrash report has no threads (only crash.error): grouped by its exception, "
            "reason and crashing image");
}

static err_code parse_kscrash(crashreport **out, const jsonr_value *root, arena *a, err_info *err)
{
    cr_builder b;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_KSCRASH, a, err))
        return ERR_TOO_LARGE;
    kscrash_metadata(&b, root);
    const jsonr_value *images = jsonr_get(root, "binary_images");
    for (size_t i = 0; i < cr_json_array_size(images); i++) {
        const jsonr_value *ji = jsonr_at(images, i);
        crashreport_image *im = cr_add_image(&b);
        if (im == NULL)
            break;
        uint64_t size = 0, ct = 0, cs = 0;
        cr_json_get_u64(ji, "image_addr", &im->load_addr);
        if (cr_json_get_u64(ji, "image_size", &size) && size > 0 &&
            size - 1 <= UINT64_MAX - im->load_addr)
            im->end_addr = im->load_addr + size - 1;
        const char *uuid = cr_json_str(ji, "uuid");
        if (uuid != NULL)
            cr_uuid_set(im->uuid, uuid, strlen(uuid));
        im->path = cr_json_str(ji, "name");
        if (im->path != NULL)
            im->name = cr_basename(im->path);
        if (cr_json_get_u64(ji, "cpu_type", &ct) && cr_json_get_u64(ji, "cpu_subtype", &cs))
            im->arch = cr_arch_from_cpu(ct, cs);
    }
    const jsonr_value *crash = jsonr_get(root, "crash");
    const jsonr_value *threads = jsonr_get(crash, "threads");
    for (size_t i = 0; i < cr_json_array_size(threads) && !b.failed; i++)
        if (jsonr_is_object(jsonr_at(threads, i)))
            kscrash_thread(&b, jsonr_at(threads, i), i);
    const jsonr_value *ct = jsonr_get(crash, "crashed_thread"); /* "minimal" reports */
    if (jsonr_is_object(ct) && !b.failed) {
        kscrash_thread(&b, ct, 0);
        if (b.r->nthreads > 0)
            b.r->threads[b.r->nthreads - 1].crashed = true;
    }
    if (jsonr_get(root, "recrash_report") != NULL)
        cr_note(&b, "the embedded recrash_report (a crash inside the crash reporter) was ignored");
    if (!b.failed)
        kscrash_frameless(&b, root);
    err_code rc = cr_finish(&b, "KSCrash report");
    if (rc == ERR_OK)
        *out = b.r;
    return rc;
}

/* ---- stacksift JSON ------------------------------------------------------------------------- */

static err_code stack_frames(cr_builder *b, const jsonr_value *frames, crashreport_thread *t,
                             size_t ti, const char *where, err_info *err)
{
    if (!jsonr_is_array(frames))
        return err_set(err, ERR_INVALID, "%s.frames must be an array", where);
    for (size_t i = 0; i < cr_json_array_size(frames); i++) {
        const jsonr_value *jf = jsonr_at(frames, i);
        const jsonr_value *av = jsonr_is_object(jf) ? jsonr_get(jf, "address") : jf;
        uint64_t addr;
        if (!cr_json_u64(av, &addr))
            return err_set(err, ERR_INVALID,
                           "%s.frames[%zu]: address must be a \"0x...\" hex string of at most "
                           "16 digits or a non-negative integer",
                           where, i);
        crashreport_frame *f = t != NULL ? cr_add_frame(b, &b->r->threads[ti])
                                         : cr_add_leb_frame(b);
        if (f == NULL)
            return ERR_TOO_LARGE;
        f->index = (uint32_t)i;
        f->addr = addr;
        if (jsonr_is_object(jf)) {
            f->symbol = cr_json_str(jf, "symbol");
            f->image_name = cr_json_str(jf, "image");
        }
    }
    return ERR_OK;
}

static err_code parse_stack_json(crashreport **out, const jsonr_value *root, arena *a,
                                 err_info *err)
{
    uint64_t fv;
    const jsonr_value *jfv = jsonr_get(root, "format_version");
    if (jfv != NULL && (!cr_json_u64(jfv, &fv) || fv != 1))
        return err_set(err, ERR_UNSUPPORTED,
                       "stacksift JSON format_version must be 1 (the only version so far)");
    const char *kind = cr_json_str(root, "kind");
    crashreport_kind k;
    if (kind != NULL && strcmp(kind, "crash") == 0)
        k = CRASHREPORT_KIND_CRASH;
    else if (kind != NULL && strcmp(kind, "hang") == 0)
        k = CRASHREPORT_KIND_HANG;
    else if (kind != NULL && strcmp(kind, "sample") == 0)
        k = CRASHREPORT_KIND_SAMPLE;
    else
        return err_set(err, ERR_INVALID,
                       "stacksift JSON: \"kind\" must be \"crash\", \"hang\" or \"sample\"");
    const jsonr_value *images = jsonr_get(root, "images");
    const jsonr_value *threads = jsonr_get(root, "threads");
    if (!jsonr_is_array(images))
        return err_set(err, ERR_INVALID, "stacksift JSON: \"images\" must be an array");
    if (!jsonr_is_array(threads))
        return err_set(err, ERR_INVALID, "stacksift JSON: \"threads\" must be an array");

    cr_builder b;
    err_code rc;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_JSON, a, err))
        return ERR_TOO_LARGE;
    b.r->kind = k;
    crashreport_metadata *m = &b.r->meta;
    const jsonr_value *app = jsonr_get(root, "app");
    m->app_name = cr_json_str(app, "name");
    m->process = m->app_name;
    m->bundle_id = cr_json_str(app, "bundle_id");
    m->app_version = cr_json_str(app, "version");
    m->build = cr_json_str(app, "build");
    const jsonr_value *os = jsonr_get(root, "os");
    if (jsonr_is_string(os)) {
        m->os_version = cr_json_str(root, "os");
    } else {
        const char *on = cr_json_str(os, "name"), *ov = cr_json_str(os, "version"), *ob = cr_json_str(os, "build");
        m->os_version = cr_os_version(&b, on, ov, ob);
    }
    const jsonr_value *dev = jsonr_get(root, "device");
    m->hardware_model = jsonr_is_string(dev) ? cr_json_str(root, "device")
                                             : cr_json_str(dev, "model");
    const char *arch = cr_json_str(root, "arch");
    if (arch != NULL)
        m->arch = cr_arch_normalize(arch, strlen(arch));
    m->date = cr_json_str(root, "timestamp");
    m->incident_id = cr_json_str(root, "incident_id");
    m->app_specific_info = cr_json_str(root, "reason");
    const jsonr_value *ex = jsonr_get(root, "exception");
    m->exception_type = cr_json_str(ex, "type");
    m->exception_codes = cr_json_str(ex, "codes");
    m->signal = cr_json_str(ex, "signal");
    m->exception_reason = cr_json_str(ex, "reason");

    for (size_t i = 0; i < cr_json_array_size(images); i++) {
        const jsonr_value *ji = jsonr_at(images, i);
        if (!jsonr_is_object(ji)) {
            rc = err_set(err, ERR_INVALID, "stacksift JSON: images[%zu] must be an object", i);
            goto done;
        }
        crashreport_image *im = cr_add_image(&b);
        if (im == NULL)
            break;
        if (!cr_json_get_u64(ji, "load_address", &im->load_addr)) {
            rc = err_set(err, ERR_INVALID,
                         "stacksift JSON: images[%zu].load_address must be a \"0x...\" hex "
                         "string",
                         i);
            goto done;
        }
        uint64_t size = 0, end = 0;
        if (cr_json_get_u64(ji, "size", &size) && size > 0 && size - 1 <= UINT64_MAX - im->load_addr)
            im->end_addr = im->load_addr + size - 1;
        else if (cr_json_get_u64(ji, "end_address", &end) && end >= im->load_addr)
            im->end_addr = end;
        const char *uuid = cr_json_str(ji, "uuid");
        if (uuid != NULL && !cr_uuid_set(im->uuid, uuid, strlen(uuid)) &&
            strspn(uuid, "0-") != strlen(uuid)) {
            rc = err_set(err, ERR_INVALID, "stacksift JSON: images[%zu].uuid is not a UUID", i);
            goto done;
        }
        im->path = cr_json_str(ji, "path");
        im->name = cr_json_str(ji, "name");
        if (im->name == NULL && im->path != NULL)
            im->name = cr_basename(im->path);
        const char *ia = cr_json_str(ji, "arch");
        if (ia != NULL)
            im->arch = cr_arch_normalize(ia, strlen(ia));
        const jsonr_value *in_app = jsonr_get(ji, "in_app");
        im->user = jsonr_is_true(in_app);
        if (jsonr_is_boolean(in_app))
            im->in_app = jsonr_is_true(in_app) ? CRASHREPORT_IN_APP_YES : CRASHREPORT_IN_APP_NO;
    }
    for (size_t i = 0; i < cr_json_array_size(threads) && !b.failed; i++) {
        const jsonr_value *jt = jsonr_at(threads, i);
        char where[64];
        snprintf(where, sizeof where, "stacksift JSON: threads[%zu]", i);
        if (!jsonr_is_object(jt)) {
            rc = err_set(err, ERR_INVALID, "%s must be an object", where);
            goto done;
        }
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            break;
        t->index = (uint32_t)i;
        t->name = cr_json_str(jt, "name");
        t->queue = cr_json_str(jt, "queue");
        t->crashed = jsonr_is_true(jsonr_get(jt, "crashed"));
        rc = stack_frames(&b, jsonr_get(jt, "frames"), t, i, where, err);
        if (rc != ERR_OK)
            goto done;
    }
    const jsonr_value *leb = jsonr_get(root, "last_exception_backtrace");
    if (jsonr_is_array(leb)) {
        b.r->has_leb = true;
        rc = stack_frames(&b, leb, NULL, 0, "stacksift JSON: last_exception_backtrace", err);
        if (rc != ERR_OK)
            goto done;
    }
    rc = cr_finish(&b, "stacksift JSON report");
    if (rc == ERR_OK)
        *out = b.r;
done:
    if (rc == ERR_OK && *out == NULL)
        rc = ERR_TOO_LARGE;
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static err_code classify(crashreport **out, const jsonr_value *root, arena *a, err_info *err)
{
    if (!jsonr_is_object(root))
        return err_set(err, ERR_INVALID,
                       "unrecognized JSON document: a crash report is a JSON object");
    if (jsonr_is_object(jsonr_get(root, "report")) &&
        (jsonr_get(root, "crash") != NULL || jsonr_get(root, "binary_images")))
        return parse_kscrash(out, root, a, err);
    if (jsonr_is_string(jsonr_get(root, "kind")) && jsonr_get(root, "threads"))
        return parse_stack_json(out, root, a, err);
    if (jsonr_get(root, "usedImages") != NULL || jsonr_get(root, "bug_type"))
        return parse_ips(out, NULL, root, a, err);
    if (cr_is_sentry(root))
        return cr_parse_sentry(out, root, a, err);
    return err_set(err, ERR_INVALID,
                   "unrecognized JSON document: not an .ips, KSCrash or stacksift report");
}

static err_code parse_json_one(crashreport **out, crashreport ***all, size_t *nall, const char *data,
                               size_t len, arena *a, err_info *err);

err_code cr_parse_json(crashreport **out, const char *data, size_t len, arena *a,
                       err_info *err)
{
    crashreport **all = NULL;
    size_t n = 0;
    *out = NULL;
    err_code rc = cr_parse_json_all(&all, &n, data, len, a, err);
    if (rc != ERR_OK)
        return rc;
    *out = all[0];
    if (n > 1) {
        /* crashreport_parse gives one report: say that the payload holds more */
        cr_builder b = {.r = all[0], .a = a, .err = err};
        if (all[0]->format == CRASHREPORT_FORMAT_BUGSNAG)
            cr_note(&b, "Bugsnag payload holds %zu events; this is the first "
                    "(crashreport_parse_all reads every one)", n);
        else
            cr_note(&b, "MetricKit payload holds %zu diagnostics; this is the first "
                    "(crashreport_parse_all reads every one)", n);
        if (b.failed)
            return ERR_TOO_LARGE;
    }
    return ERR_OK;
}

err_code cr_parse_json_all(crashreport ***out, size_t *n, const char *data, size_t len, arena *a,
                           err_info *err)
{
    *out = NULL;
    *n = 0;
    crashreport *one = NULL;
    err_code rc1 = parse_json_one(&one, out, n, data, len, a, err);
    if (rc1 != ERR_OK || *out != NULL)
        return rc1;
    crashreport **list = arena_alloc_array(a, 1, sizeof *list, err);
    if (list == NULL)
        return ERR_TOO_LARGE;
    list[0] = one;
    *out = list;
    *n = 1;
    return ERR_OK;
}

/* Whether the input may be two documents, an .ips file's one-line header and its body: a
 * first line that ends in '}' with more than blanks after it. */
static bool may_be_header_and_body(const char *data, size_t len)
{
    const char *nl = memchr(data, '\n', len), *end = data + len;
    if (nl == NULL)
        return false;
    const char *e = nl;
    while (e > data && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (e == data || e[-1] != '}')
        return false;
    for (const char *q = nl; q < end; q++)
        if (*q != '\n' && *q != '\r' && *q != ' ' && *q != '\t')
            return true;
    return false;
}

/* One JSON document: a report into *one, or (MetricKit) every diagnostic into *all / *n. */
static err_code parse_json_one(crashreport **out, crashreport ***all, size_t *nall, const char *data,
                               size_t len, arena *a, err_info *err)
{
    jsonr_error e;
    size_t used = len;
    err_code rc;
    *out = NULL;
    /* The common case, one value (an event, a KSCrash report), is parsed as the whole input:
     * jsonr then decodes its strings in place in one copy of it. Anything else, or a value
     * that does not parse so, goes the way that finds where the first value ends (and says
     * what is wrong with it). */
    const jsonr_value *first = may_be_header_and_body(data, len)
                                   ? NULL
                                   : jsonr_parse(a, data, len, CR_JSONR_FLAGS, NULL, NULL);
    if (first == NULL)
        first = jsonr_parse(a, data, len, CR_JSONR_FLAGS, &used, &e);
    if (first == NULL)
        return cr_json_parse_error(err, "report", &e, 0);
    size_t rest = used;
    while (rest < len && (data[rest] == ' ' || data[rest] == '\t' || data[rest] == '\r' ||
                          data[rest] == '\n'))
        rest++;
    if (rest == len) {
        if (cr_is_metrickit(first))
            return cr_parse_metrickit(all, nall, first, a, err);
        if (cr_is_bugsnag(first))
            return cr_parse_bugsnag(all, nall, first, a, err);
        return classify(out, first, a, err);
    }
    if (!jsonr_is_object(first))
        return err_set(err, ERR_INVALID, "unrecognized report: text after a JSON array");
    if (data[rest] != '{') {
        /* a one-line .ips header before a text body (iOS 8-14, bug_type 109) */
        const char *bt = cr_json_str(first, "bug_type");
        if (bt != NULL && (strcmp(bt, "151") == 0 || strcmp(bt, "210") == 0))
            return err_set(err, ERR_UNSUPPORTED,
                           "kernel panic report (bug_type %s) is not an app crash report", bt);
        return cr_parse_apple_text(out, data, len, a, err);
    }
    /* iOS 15+ .ips: header line, then the JSON body */
    int header_lines = 0;
    for (size_t i = 0; i < rest; i++)
        header_lines += data[i] == '\n';
    const jsonr_value *body =
        jsonr_parse(a, data + rest, len - rest, CR_JSONR_FLAGS, NULL, &e);
    if (body == NULL)
        return cr_json_parse_error(err, ".ips body", &e, header_lines);
    if (!jsonr_is_object(body))
        return err_set(err, ERR_INVALID, ".ips body is not a JSON object");
    rc = parse_ips(out, first, body, a, err);
    return rc;
}

/* ---- arrays of reports ---------------------------------------------------------------------- */

/* End (one past) of the JSON value starting at data[i]: strings and brackets are matched
 * (escapes honoured, up to JSONR_MAX_DEPTH deep), scalars run to the next ',', ']' or
 * blank. 0 when the value is unterminated or its brackets do not match. */
static size_t value_end(const char *data, size_t len, size_t i)
{
    char stack[JSONR_MAX_DEPTH];
    size_t depth = 0;
    if (data[i] != '{' && data[i] != '[' && data[i] != '"') {
        while (i < len && data[i] != ',' && data[i] != ']' && data[i] != ' ' && data[i] != '\t' &&
               data[i] != '\r' && data[i] != '\n' && data[i] != '}' && data[i] != '[' &&
               data[i] != '{' && data[i] != '"')
            i++;
        return i;
    }
    while (i < len) {
        char c = data[i++];
        if (c == '"') {
            /* the closing quote: the next '"' not escaped, i.e. after an even run of
             * backslashes (memchr: a report's strings are most of its bytes) */
            for (;;) {
                const char *q = i < len ? memchr(data + i, '"', len - i) : NULL;
                if (q == NULL)
                    return 0;
                size_t at = (size_t)(q - data), bs = 0;
                while (at - bs > i && data[at - bs - 1] == '\\')
                    bs++;
                i = at + 1;
                if (bs % 2 == 0)
                    break;
            }
        } else if (c == '{' || c == '[') {
            if (depth == sizeof stack)
                return 0;
            stack[depth++] = c == '{' ? '}' : ']';
        } else if (c == '}' || c == ']') {
            if (depth == 0 || stack[depth - 1] != c)
                return 0;
            depth--;
        }
        if (depth == 0)
            return i;
    }
    return 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

err_code crashreport_split_array(crashreport_doc **out, size_t *n, const char *data, size_t len,
                                 size_t max, arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && is_blank(data[i]))
        i++;
    if (i == len || data[i] != '[')
        return err_set(err, ERR_INVALID, "reports must be a JSON array of reports");
    i++;
    size_t cap = 0, count = 0;
    crashreport_doc *docs = NULL;
    for (;;) {
        while (i < len && is_blank(data[i]))
            i++;
        if (i < len && data[i] == ']' && count == 0) {
            i++;
            break;
        }
        if (i == len)
            return err_set(err, ERR_INVALID, "reports: the JSON array ends early (truncated?) "
                           "after %zu reports", count);
        size_t end = value_end(data, len, i);
        if (end == 0 || end == i)
            return err_set(err, ERR_INVALID, "reports: report %zu is not a complete JSON value "
                           "(truncated?) at byte %zu", count, i);
        if (count == max)
            return err_set(err, ERR_TOO_LARGE, "reports: more than %zu reports in one array", max);
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            docs = arena_grow(a, docs, cap * sizeof *docs, ncap * sizeof *docs, err);
            if (docs == NULL)
                return ERR_TOO_LARGE;
            cap = ncap;
        }
        crashreport_doc *d = &docs[count++];
        d->data = data + i;
        d->len = end - i;
        d->text = false;
        if (data[i] == '"') {
            /* a report as a JSON string (Apple text made by KSCrash's AppleFmt filter) */
            jsonr_error e;
            const jsonr_value *s =
                jsonr_parse(a, data + i, end - i, JSONR_DECODE_ANY | CR_JSONR_FLAGS, NULL, &e);
            if (s == NULL && e.code == JSONR_ERR_TOO_LARGE)
                return err_set(err, ERR_TOO_LARGE, "reports: report %zu is too large to read",
                               count - 1);
            if (!jsonr_is_string(s))
                return err_set(err, ERR_INVALID, "reports: report %zu is not a valid JSON string",
                               count - 1);
            d->data = jsonr_string(s); /* in the arena already */
            d->len = jsonr_string_length(s);
            d->text = true;
        }
        i = end;
        while (i < len && is_blank(data[i]))
            i++;
        if (i < len && data[i] == ',') {
            i++;
            continue;
        }
        if (i < len && data[i] == ']') {
            i++;
            break;
        }
        if (i == len)
            return err_set(err, ERR_INVALID, "reports: the JSON array ends early (truncated?) "
                           "after %zu reports", count);
        return err_set(err, ERR_INVALID, "reports: expected ',' or ']' after report %zu at byte %zu",
                       count - 1, i);
    }
    while (i < len && is_blank(data[i]))
        i++;
    if (i != len)
        return err_set(err, ERR_INVALID, "reports: bytes after the JSON array at byte %zu", i);
    if (count == 0)
        return err_set(err, ERR_INVALID, "reports: the JSON array holds no report");
    *out = docs;
    *n = count;
    return ERR_OK;
}
