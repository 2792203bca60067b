/*
 * parse_plcrash.c - PLCrashReporter's own report files (.plcrash) into the model.
 *
 * Layout (microsoft/plcrashreporter, PLCrashReport.h / PLCrashReport.m): the 7 bytes
 * "plcrash", one version byte (1, the only version), then one protobuf message
 * `plcrash.CrashReport` (Source/PLCrashReport.proto, proto2) to the end of the file.
 * Field numbers used here, by message:
 *
 *   CrashReport      1 system_info, 2 application_info, 3 threads[], 4 binary_images[],
 *                    5 exception, 6 signal, 7 process_info, 8 machine_info, 9 report_info,
 *                    10 custom_data (not read: free-form app data)
 *   SystemInfo       1 operating_system (enum), 2 os_version, 3 architecture (legacy enum),
 *                    4 timestamp (int64, seconds since 1970; 0 = unknown), 5 os_build
 *   ApplicationInfo  1 identifier, 2 version (CFBundleVersion), 3 marketing_version
 *   Thread           1 thread_number, 2 frames[], 3 crashed, 4 registers[]
 *   StackFrame       3 pc, 6 symbol (Symbol: 1 name, 2 start_address, 3 end_address)
 *   RegisterValue    1 name, 2 value
 *   BinaryImage      1 base_address, 2 size, 3 name (full path), 4 uuid (16 bytes),
 *                    5 code_type (Processor)
 *   Processor        1 encoding (1 = Mach cpu_type_t/cpu_subtype_t), 2 type, 3 subtype
 *   Exception        1 name, 2 reason, 3 frames[] (StackFrame)
 *   Signal           1 name, 2 code, 3 address, 4 mach_exception (1 type, 2 codes[])
 *   ProcessInfo      1 process_name, 2 process_id, 3 process_path, 4 parent_process_name,
 *                    5 parent_process_id, 6 native, 7 start_time
 *   MachineInfo      1 model, 2 processor, 3 processor_count, 4 logical_processor_count
 *   ReportInfo       1 user_requested, 2 uuid (16 bytes)
 *
 * Unknown fields are skipped (the format grew by adding fields). A known field with the
 * wrong wire type, a malformed wire encoding, or a missing field the report cannot be read
 * without (signal name, a frame's pc, an image's base address and name) is ERR_INVALID with
 * the field path: "plcrash report: threads[2].frames[7]: truncated varint at offset 913".
 */
#include "crashreport/crashreport_internal.h"
#include "crashreport/protobuf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Caps on repeated fields: far above anything PLCrashReporter writes (512 frames per
 * thread), low enough that a hostile file cannot make the model huge. */
#define PLC_MAX_THREADS 4096
#define PLC_MAX_THREAD_FRAMES 8192 /* one thread or the exception */
#define PLC_MAX_FRAMES 65536        /* all threads and the exception together */
#define PLC_MAX_IMAGES 65536
#define PLC_MAX_REGISTERS 1024
#define PLC_MAX_CODES 64

typedef struct {
    cr_builder b;
    err_info *err;
    size_t nframes;  /* frames read so far, all stacks */
    /* read first, combined into the metadata at the end */
    uint64_t os;     /* SystemInfo.operating_system; 3 = unknown */
    bool has_os;
    const char *os_version, *os_build;
    uint64_t legacy_arch;
    bool has_legacy_arch;
    bool has_cpu;
    uint64_t cpu_type, cpu_subtype;
    bool has_native, native;
    const char *app_version, *marketing_version;
    const char *parent_name;
    uint64_t pid, parent_pid;
    bool has_pid, has_parent_pid;
    const char *exc_name, *exc_reason;
    const char *sig_name, *sig_code;
    uint64_t sig_addr;
    bool has_sig, has_sig_addr, has_mach;
    uint64_t mach_type;
    uint64_t mach_codes[PLC_MAX_CODES];
    size_t nmach_codes;
} plc;

/* ---- errors -------------------------------------------------------------------------------- */

/* Where a field is: "threads[2].frames[7]". A chain built on the stack as the parser descends
 * and printed only when something is wrong (a frame or an image costs no formatting). */
typedef struct plc_path {
    const struct plc_path *up; /* enclosing message, NULL at the top */
    const char *name;          /* field name */
    size_t index;              /* position in a repeated field, if indexed */
    bool indexed;
} plc_path;

static size_t path_fmt(char *out, size_t cap, const plc_path *p)
{
    size_t n = p->up != NULL ? path_fmt(out, cap, p->up) : 0;
    if (n >= cap)
        return n;
    int k = p->indexed ? snprintf(out + n, cap - n, "%s%s[%zu]", n ? "." : "", p->name, p->index)
                       : snprintf(out + n, cap - n, "%s%s", n ? "." : "", p->name);
    return k < 0 ? n : n + (size_t)k;
}

/* "plcrash report: <path>[.<field>]: <message>", ERR_INVALID or `code`. */
static err_code fail_at(plc *c, err_code code, const plc_path *path, const char *field,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static err_code fail_at(plc *c, err_code code, const plc_path *path, const char *field,
                        const char *fmt, ...)
{
    char where[128] = "", msg[sizeof c->err->msg];
    size_t n = path != NULL ? path_fmt(where, sizeof where, path) : 0;
    if (field != NULL && n < sizeof where)
        snprintf(where + n, sizeof where - n, "%s%s", n ? "." : "", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(c->err, code, "plcrash report: %s%s%s", where, where[0] ? ": " : "", msg);
}

static err_code bad(plc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static err_code bad(plc *c, const char *fmt, ...)
{
    char msg[sizeof c->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(c->err, ERR_INVALID, "plcrash report: %s", msg);
}

/* The reader's own message (wire-level problem), with the field path in front. */
static err_code wire_error(plc *c, const plc_path *path)
{
    if (path != NULL) {
        char where[128];
        path_fmt(where, sizeof where, path);
        err_prefix(c->err, "%s", where);
    }
    return err_prefix(c->err, "plcrash report");
}

static const char *wire_name(cr_pb_wire w)
{
    switch (w) {
    case CR_PB_VARINT:  return "a varint";
    case CR_PB_FIXED64: return "a fixed64";
    case CR_PB_LEN:     return "a string, bytes or message";
    case CR_PB_FIXED32: return "a fixed32";
    }
    return "?";
}

static bool wire_is(plc *c, const cr_pb_field *f, cr_pb_wire w, const plc_path *path, const char *field)
{
    if (f->wire == w)
        return true;
    fail_at(c, ERR_INVALID, path, field, "wire type %u at offset %zu, want %s", (unsigned)f->wire,
            f->offset, wire_name(w));
    return false;
}

static const char *str_of(plc *c, const cr_pb_field *f)
{
    return cr_text(&c->b, (const char *)f->data, f->len);
}

/* A varint (or, leniently, a fixed field of the same width) as uint64. */
static bool num(plc *c, const cr_pb_field *f, uint64_t *out, const plc_path *path, const char *field)
{
    if (!wire_is(c, f, CR_PB_VARINT, path, field))
        return false;
    *out = f->u64;
    return true;
}

static bool text(plc *c, const cr_pb_field *f, const char **out, const plc_path *path, const char *field)
{
    if (!wire_is(c, f, CR_PB_LEN, path, field))
        return false;
    *out = str_of(c, f);
    return *out != NULL;
}

static bool enter(plc *c, cr_pb *child, const cr_pb *parent, const cr_pb_field *f, const plc_path *path)
{
    if (cr_pb_enter(child, parent, f, c->err) == ERR_OK)
        return true;
    wire_error(c, path);
    return false;
}

/* ---- messages -------------------------------------------------------------------------------- */

/* One field of a message being read; `m` is the message (for a nested one's cursor), `path`
 * names the message in errors, `ctx` what the reader fills. False (c->err set) to stop. */
typedef bool (*plc_field_fn)(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                             void *ctx);

/* Every field of the message `pf` holds (inside `parent`), in wire order, through `field`;
 * unknown fields are the callback's to skip. False (c->err set, naming `path`) on a wire error
 * or when `field` fails. */
static bool read_message(plc *c, const cr_pb *parent, const cr_pb_field *pf, const plc_path *path,
                         plc_field_fn field, void *ctx)
{
    cr_pb m;
    if (!enter(c, &m, parent, pf, path))
        return false;
    cr_pb_field f;
    int rc;
    while ((rc = cr_pb_next(&m, &f, c->err)) > 0)
        if (!field(c, &m, &f, path, ctx))
            return false;
    if (rc < 0) {
        wire_error(c, path);
        return false;
    }
    return true;
}

/* Processor: encoding, type, subtype. */
typedef struct {
    uint64_t enc, type, subtype;
    bool has_type;
} plc_processor;

static bool processor_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                            void *ctx)
{
    plc_processor *p = ctx;
    (void)m;
    switch (f->number) {
    case 1: return num(c, f, &p->enc, path, "encoding");
    case 2: p->has_type = true; return num(c, f, &p->type, path, "type");
    case 3: return num(c, f, &p->subtype, path, "subtype");
    default: return true;
    }
}

/* A Processor message: its Mach type and subtype. Only Mach encodings (1, or none given: every
 * writer of this format is on Apple platforms) are interpreted (*has). */
static bool read_processor(plc *c, const cr_pb *m0, const cr_pb_field *pf, const plc_path *path,
                           bool *has, uint64_t *type, uint64_t *subtype)
{
    plc_processor p = {.enc = 1};
    if (!read_message(c, m0, pf, path, processor_field, &p))
        return false;
    *has = p.has_type && p.enc == 1;
    *type = p.type;
    *subtype = p.subtype;
    return true;
}

static bool system_info_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                              void *ctx)
{
    (void)m, (void)ctx;
    switch (f->number) {
    case 1: c->has_os = true; return num(c, f, &c->os, path, "operating_system");
    case 2: return text(c, f, &c->os_version, path, "os_version");
    case 3: c->has_legacy_arch = true; return num(c, f, &c->legacy_arch, path, "architecture");
    case 4: {
        uint64_t ts;
        if (!num(c, f, &ts, path, "timestamp"))
            return false;
        /* int64 seconds since 1970; 0 means unknown. Years past 9999 are not dates. */
        int64_t secs = (int64_t)ts;
        if (secs > 0 && secs < INT64_C(253402300800)) {
            time_t t = (time_t)secs;
            struct tm tm;
            char when[64];
            if (gmtime_r(&t, &tm) != NULL &&
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S +0000", &tm) > 0)
                c->b.r->meta.date = cr_strdup(&c->b, when);
        }
        return true;
    }
    case 5: return text(c, f, &c->os_build, path, "os_build");
    default: return true;
    }
}

static bool app_info_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                           void *ctx)
{
    (void)m, (void)ctx;
    switch (f->number) {
    case 1: return text(c, f, &c->b.r->meta.bundle_id, path, "identifier");
    case 2: return text(c, f, &c->app_version, path, "version");
    case 3: return text(c, f, &c->marketing_version, path, "marketing_version");
    default: return true;
    }
}

/* Symbol: the name and start address a client-side symbolication guessed for a frame. */
typedef struct {
    const char *name;
    uint64_t start;
    bool has_start;
} plc_symbol;

static bool symbol_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                         void *ctx)
{
    plc_symbol *s = ctx;
    (void)m;
    switch (f->number) {
    case 1: return text(c, f, &s->name, path, "symbol.name");
    case 2: s->has_start = true; return num(c, f, &s->start, path, "symbol.start_address");
    default: return true;
    }
}

static bool read_symbol(plc *c, const cr_pb *m0, const cr_pb_field *pf, const plc_path *path,
                        crashreport_frame *fr)
{
    plc_symbol s = {0};
    if (!read_message(c, m0, pf, path, symbol_field, &s))
        return false;
    if (s.name != NULL && s.name[0] != '\0') {
        fr->symbol = s.name;
        if (s.has_start && s.start <= fr->addr) {
            fr->symbol_offset = fr->addr - s.start;
            fr->has_symbol_offset = true;
        }
    }
    return true;
}

typedef struct {
    crashreport_frame *fr;
    bool has_pc;
    cr_pb msg;          /* the frame's message, the parent of its symbol */
    cr_pb_field sym;    /* the symbol field, read after the pc (which may come later) */
    bool has_sym;
} plc_frame;

static bool frame_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                        void *ctx)
{
    plc_frame *x = ctx;
    switch (f->number) {
    case 3: x->has_pc = true; return num(c, f, &x->fr->addr, path, "pc");
    case 6:
        x->msg = *m;
        x->sym = *f;
        x->has_sym = true;
        return true;
    default: return true;
    }
}

/* StackFrame into fr (already added); `path` names it ("threads[1].frames[4]"). */
static bool read_frame(plc *c, const cr_pb *m0, const cr_pb_field *pf, const plc_path *path,
                       crashreport_frame *fr)
{
    plc_frame x = {.fr = fr};
    if (!read_message(c, m0, pf, path, frame_field, &x))
        return false;
    if (!x.has_pc) {
        fail_at(c, ERR_INVALID, path, NULL, "no pc (field 3)");
        return false;
    }
    return !x.has_sym || read_symbol(c, &x.msg, &x.sym, path, fr);
}

static crashreport_frame *new_frame(plc *c, crashreport_thread *t, const plc_path *path)
{
    if ((t != NULL ? t->nframes : c->b.r->nleb) >= PLC_MAX_THREAD_FRAMES) {
        fail_at(c, ERR_TOO_LARGE, path, NULL, "more than %d frames in one stack",
                PLC_MAX_THREAD_FRAMES);
        return NULL;
    }
    if (c->nframes >= PLC_MAX_FRAMES) {
        fail_at(c, ERR_TOO_LARGE, path, NULL, "more than %d frames in the report", PLC_MAX_FRAMES);
        return NULL;
    }
    c->nframes++;
    crashreport_frame *fr = t != NULL ? cr_add_frame(&c->b, t) : cr_add_leb_frame(&c->b);
    if (fr != NULL)
        fr->index = (uint32_t)((t != NULL ? t->nframes : c->b.r->nleb) - 1);
    return fr;
}

static bool register_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                           void *ctx)
{
    crashreport_register *reg = ctx;
    (void)m;
    switch (f->number) {
    case 1: return text(c, f, &reg->name, path, "name");
    case 2: return num(c, f, &reg->value, path, "value");
    default: return true;
    }
}

static bool read_register(plc *c, const cr_pb *m0, const cr_pb_field *pf, const plc_path *path,
                          crashreport_register *reg)
{
    if (!read_message(c, m0, pf, path, register_field, reg))
        return false;
    if (reg->name == NULL) {
        fail_at(c, ERR_INVALID, path, NULL, "no name (field 1)");
        return false;
    }
    return true;
}

typedef struct {
    crashreport_thread *t;
    size_t nregs;
} plc_thread;

static bool thread_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                         void *ctx)
{
    plc_thread *x = ctx;
    crashreport_thread *t = x->t;
    switch (f->number) {
    case 1: {
        uint64_t n;
        if (!num(c, f, &n, path, "thread_number"))
            return false;
        if (n > INT32_MAX) {
            fail_at(c, ERR_INVALID, path, "thread_number", "%" PRIu64 " is out of range", n);
            return false;
        }
        t->index = (uint32_t)n;
        return true;
    }
    case 2: {
        const plc_path fp = {path, "frames", t->nframes, true};
        crashreport_frame *fr = new_frame(c, t, &fp);
        return fr != NULL && read_frame(c, m, f, &fp, fr);
    }
    case 3: {
        uint64_t v;
        if (!num(c, f, &v, path, "crashed"))
            return false;
        t->crashed = v != 0;
        return true;
    }
    case 4: {
        const plc_path rp = {path, "registers", x->nregs, true};
        if (x->nregs >= PLC_MAX_REGISTERS) {
            fail_at(c, ERR_TOO_LARGE, path, "registers", "more than %d registers",
                    PLC_MAX_REGISTERS);
            return false;
        }
        crashreport_register *reg = cr_push(&c->b, (void **)&t->registers, &x->nregs, sizeof *reg);
        if (reg == NULL || !read_register(c, m, f, &rp, reg))
            return false;
        t->nregisters = x->nregs;
        return true;
    }
    default: return true;
    }
}

static bool read_thread(plc *c, const cr_pb *top, const cr_pb_field *pf, size_t ti)
{
    const plc_path at = {NULL, "threads", ti, true};
    if (c->b.r->nthreads >= PLC_MAX_THREADS) {
        err_set(c->err, ERR_TOO_LARGE, "plcrash report: threads: more than %d threads",
                PLC_MAX_THREADS);
        return false;
    }
    plc_thread x = {cr_add_thread(&c->b), 0};
    if (x.t == NULL)
        return false;
    x.t->index = (uint32_t)ti; /* thread_number replaces it when given */
    return read_message(c, top, pf, &at, thread_field, &x);
}

typedef struct {
    crashreport_image *im;
    size_t index;
    uint64_t size;
    bool has_base;
} plc_image;

static bool image_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                        void *ctx)
{
    plc_image *x = ctx;
    crashreport_image *im = x->im;
    switch (f->number) {
    case 1: x->has_base = true; return num(c, f, &im->load_addr, path, "base_address");
    case 2: return num(c, f, &x->size, path, "size");
    case 3: return text(c, f, &im->path, path, "name");
    case 4: {
        if (!wire_is(c, f, CR_PB_LEN, path, "uuid"))
            return false;
        if (f->len != 16) {
            cr_note(&c->b, "binary_images[%zu].uuid: %zu bytes, want 16 (ignored)", x->index,
                    f->len);
            return true;
        }
        cr_uuid_from_bytes(im->uuid, f->data);
        return true;
    }
    case 5: {
        const plc_path cp = {path, "code_type", 0, false};
        bool has;
        uint64_t type, sub;
        if (!read_processor(c, m, f, &cp, &has, &type, &sub))
            return false;
        if (has)
            im->arch = cr_arch_from_cpu(type, sub);
        return true;
    }
    default: return true;
    }
}

static bool read_image(plc *c, const cr_pb *top, const cr_pb_field *pf, size_t ii)
{
    const plc_path at = {NULL, "binary_images", ii, true}, *path = &at;
    if (c->b.r->nimages >= PLC_MAX_IMAGES) {
        err_set(c->err, ERR_TOO_LARGE, "plcrash report: binary_images: more than %d images",
                PLC_MAX_IMAGES);
        return false;
    }
    plc_image x = {cr_add_image(&c->b), ii, 0, false};
    if (x.im == NULL || !read_message(c, top, pf, path, image_field, &x))
        return false;
    crashreport_image *im = x.im;
    if (!x.has_base) {
        fail_at(c, ERR_INVALID, path, NULL, "no base_address (field 1)");
        return false;
    }
    if (im->path == NULL || im->path[0] == '\0') {
        fail_at(c, ERR_INVALID, path, NULL, "no name (field 3)");
        return false;
    }
    im->name = cr_basename(im->path);
    /* Apple prints the last byte (inclusive); an empty image has no known extent */
    if (x.size > 0 && x.size - 1 <= UINT64_MAX - im->load_addr)
        im->end_addr = im->load_addr + x.size - 1;
    return true;
}

static bool exception_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                            void *ctx)
{
    (void)ctx;
    switch (f->number) {
    case 1: return text(c, f, &c->exc_name, path, "name");
    case 2: return text(c, f, &c->exc_reason, path, "reason");
    case 3: {
        const plc_path fp = {path, "frames", c->b.r->nleb, true};
        crashreport_frame *fr = new_frame(c, NULL, &fp);
        if (fr == NULL || !read_frame(c, m, f, &fp, fr))
            return false;
        c->b.r->has_leb = true;
        return true;
    }
    default: return true;
    }
}

/* One Mach exception code into c->mach_codes; false (c->err set) past PLC_MAX_CODES. */
static bool mach_code_add(plc *c, const plc_path *path, uint64_t v)
{
    if (c->nmach_codes >= PLC_MAX_CODES) {
        fail_at(c, ERR_INVALID, path, "codes", "more than %d codes", PLC_MAX_CODES);
        return false;
    }
    c->mach_codes[c->nmach_codes++] = v;
    return true;
}

static bool mach_exception_field(plc *c, const cr_pb *m, const cr_pb_field *f,
                                 const plc_path *path, void *ctx)
{
    (void)m, (void)ctx;
    switch (f->number) {
    case 1: c->has_mach = true; return num(c, f, &c->mach_type, path, "type");
    case 2: {
        if (f->wire != CR_PB_LEN) {
            uint64_t v;
            return num(c, f, &v, path, "codes") && mach_code_add(c, path, v);
        }
        /* packed encoding: varints back to back */
        const uint8_t *p = f->data, *end = f->data + f->len;
        while (p < end) {
            uint64_t v;
            if (!cr_pb_varint(&v, &p, end)) {
                fail_at(c, ERR_INVALID, path, "codes", "malformed packed varint at offset %zu",
                        f->offset);
                return false;
            }
            if (!mach_code_add(c, path, v))
                return false;
        }
        return true;
    }
    default: return true;
    }
}

static bool signal_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                         void *ctx)
{
    (void)ctx;
    switch (f->number) {
    case 1: return text(c, f, &c->sig_name, path, "name");
    case 2: return text(c, f, &c->sig_code, path, "code");
    case 3: c->has_sig_addr = true; return num(c, f, &c->sig_addr, path, "address");
    case 4: {
        const plc_path at = {path, "mach_exception", 0, false};
        c->has_mach = false; /* the last one given counts, as when it is read alone */
        return read_message(c, m, f, &at, mach_exception_field, NULL);
    }
    default: return true;
    }
}

static bool read_signal(plc *c, const cr_pb *top, const cr_pb_field *pf)
{
    const plc_path at = {NULL, "signal", 0, false};
    c->has_sig = true;
    if (!read_message(c, top, pf, &at, signal_field, NULL))
        return false;
    if (c->sig_name == NULL || c->sig_name[0] == '\0') {
        bad(c, "signal: no name (field 1)");
        return false;
    }
    return true;
}

static bool process_info_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                               void *ctx)
{
    crashreport_metadata *meta = &c->b.r->meta;
    (void)m, (void)ctx;
    switch (f->number) {
    case 1: return text(c, f, &meta->process, path, "process_name");
    case 2: c->has_pid = true; return num(c, f, &c->pid, path, "process_id");
    case 3: return text(c, f, &meta->process_path, path, "process_path");
    case 4: return text(c, f, &c->parent_name, path, "parent_process_name");
    case 5: c->has_parent_pid = true; return num(c, f, &c->parent_pid, path, "parent_process_id");
    case 6: {
        uint64_t v;
        if (!num(c, f, &v, path, "native"))
            return false;
        c->has_native = true;
        c->native = v != 0;
        return true;
    }
    default: return true;
    }
}

static bool machine_info_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                               void *ctx)
{
    (void)ctx;
    switch (f->number) {
    case 1: return text(c, f, &c->b.r->meta.hardware_model, path, "model");
    case 2: {
        const plc_path pp = {path, "processor", 0, false};
        return read_processor(c, m, f, &pp, &c->has_cpu, &c->cpu_type, &c->cpu_subtype);
    }
    default: return true;
    }
}

static bool report_info_field(plc *c, const cr_pb *m, const cr_pb_field *f, const plc_path *path,
                              void *ctx)
{
    (void)m, (void)ctx;
    switch (f->number) {
    case 1: {
        uint64_t v;
        if (!num(c, f, &v, path, "user_requested"))
            return false;
        /* a report taken on request (no crash): a stack sample, grouped apart */
        if (v != 0)
            c->b.r->kind = CRASHREPORT_KIND_SAMPLE;
        return true;
    }
    case 2: {
        if (!wire_is(c, f, CR_PB_LEN, path, "uuid"))
            return false;
        if (f->len != 16) {
            bad(c, "report_info.uuid: %zu bytes, want 16", f->len);
            return false;
        }
        char id[37];
        if (cr_uuid_from_bytes(id, f->data))
            c->b.r->meta.incident_id = cr_strdup(&c->b, id);
        return true;
    }
    default: return true;
    }
}

/* A top-level message (system_info, application_info, exception, process_info, machine_info,
 * report_info) read by its field function. */
static bool read_top(plc *c, const cr_pb *top, const cr_pb_field *pf, const char *name,
                     plc_field_fn field)
{
    const plc_path at = {NULL, name, 0, false};
    return read_message(c, top, pf, &at, field, NULL);
}

static const char *mach_exception_name(uint64_t type)
{
    /* <mach/exception_types.h> */
    static const char *const NAMES[] = {
        NULL, "EXC_BAD_ACCESS", "EXC_BAD_INSTRUCTION", "EXC_ARITHMETIC", "EXC_EMULATION",
        "EXC_SOFTWARE", "EXC_BREAKPOINT", "EXC_SYSCALL", "EXC_MACH_SYSCALL", "EXC_RPC_ALERT",
        "EXC_CRASH", "EXC_RESOURCE", "EXC_GUARD", "EXC_CORPSE_NOTIFY",
    };
    return type < sizeof NAMES / sizeof NAMES[0] ? NAMES[type] : NULL;
}

static const char *os_name(uint64_t os)
{
    switch (os) {
    case 0: return "Mac OS X";
    case 1: return "iPhone OS";
    case 2: return "iPhone Simulator";
    case 4: return "Apple tvOS";
    }
    return NULL;
}

/* Apple's "Code Type" words for a Mach cpu type. */
static const char *code_type_name(uint64_t type)
{
    switch (type) {
    case 7:           return "X86";
    case 0x01000007u: return "X86-64";
    case 12:          return "ARM";
    case 0x0100000cu: return "ARM-64";
    case 0x0200000cu: return "ARM-64_32";
    case 18:          return "PPC";
    case 0x01000012u: return "PPC-64";
    }
    return NULL;
}

static const char *legacy_arch(uint64_t a)
{
    /* SystemInfo.architecture (deprecated): X86_32, X86_64, ARMV6, PPC, PPC64, ARMV7 */
    static const char *const ARCH[] = {"i386", "x86_64", "armv6", "ppc", "ppc64", "armv7"};
    return a < sizeof ARCH / sizeof ARCH[0] ? ARCH[a] : NULL;
}

static void finish_metadata(plc *c)
{
    cr_builder *b = &c->b;
    crashreport *r = b->r;
    crashreport_metadata *m = &r->meta;

    const char *osn = c->has_os ? os_name(c->os) : NULL;
    m->os_version = cr_os_version(b, osn, c->os_version, c->os_build);

    if (c->has_cpu) {
        m->arch = cr_arch_from_cpu(c->cpu_type, c->cpu_subtype);
        const char *ct = code_type_name(c->cpu_type);
        if (ct != NULL)
            m->code_type = c->has_native ? cr_sprintf(b, "%s (%s)", ct, c->native ? "Native" : "Translated")
                                         : ct;
    }
    if (m->arch == NULL && c->has_legacy_arch)
        m->arch = legacy_arch(c->legacy_arch);

    /* ApplicationInfo.version is CFBundleVersion; marketing_version the short version */
    if (c->marketing_version != NULL) {
        m->app_version = c->marketing_version;
        m->build = c->app_version;
        m->version_text = c->app_version ? cr_sprintf(b, "%s (%s)", c->marketing_version, c->app_version)
                                         : c->marketing_version;
    } else {
        m->app_version = c->app_version;
        m->version_text = c->app_version;
    }
    if (m->process == NULL && m->process_path != NULL)
        m->process = cr_strdup(b, cr_basename(m->process_path));
    if (c->parent_name != NULL || c->has_parent_pid) {
        if (c->has_parent_pid)
            m->parent_process = cr_sprintf(b, "%s [%" PRIu64 "]", c->parent_name ? c->parent_name : "???",
                                           c->parent_pid);
        else
            m->parent_process = c->parent_name;
    }

    m->signal = c->sig_name;
    const char *exc = c->has_mach ? mach_exception_name(c->mach_type) : NULL;
    if (c->has_mach && exc == NULL)
        exc = cr_sprintf(b, "0x%" PRIx64, c->mach_type);
    m->exception_type = exc != NULL ? exc : c->sig_name;
    const char *at = NULL;
    if (c->sig_code != NULL)
        at = c->has_sig_addr ? cr_sprintf(b, "%s at 0x%" PRIx64, c->sig_code, c->sig_addr) : c->sig_code;
    if (c->has_mach && c->nmach_codes > 0) {
        /* "0x000000000000000a, 0x0000000000000008" as Apple prints the codes */
        char codes[PLC_MAX_CODES * 20];
        size_t n = 0;
        for (size_t i = 0; i < c->nmach_codes; i++)
            n += (size_t)snprintf(codes + n, sizeof codes - n, "%s0x%016" PRIx64, i ? ", " : "",
                                  c->mach_codes[i]);
        m->exception_codes = cr_strdup(b, codes);
        m->exception_subtype = at;
    } else {
        m->exception_codes = at;
    }
    if (c->exc_name != NULL || c->exc_reason != NULL) {
        const char *n = c->exc_name ? c->exc_name : "", *why = c->exc_reason ? c->exc_reason : "";
        /* "Name: reason" as the other SDK formats give it, and the line PLCrashReporter's
         * text formatter prints, so that both forms of one crash group alike */
        m->exception_reason = cr_sprintf(b, "%s%s%s", n, n[0] && why[0] ? ": " : "", why);
        m->app_specific_info = cr_sprintf(b, "*** Terminating app due to uncaught exception '%s', "
                                          "reason: '%s'", n, why);
    }
    for (size_t i = 0; i < r->nimages; i++) {
        crashreport_image *im = &r->images[i];
        if (im->arch == NULL)
            im->arch = m->arch;
        /* the main executable is what Apple marks "+" (not part of the OS) */
        if (m->process_path != NULL && strcmp(im->path, m->process_path) == 0)
            im->user = true;
    }
}

/* ---- entry ---------------------------------------------------------------------------------- */

bool cr_is_plcrash(const char *data, size_t len)
{
    return len >= CR_PLCRASH_MAGIC_LEN && memcmp(data, CR_PLCRASH_MAGIC, CR_PLCRASH_MAGIC_LEN) == 0;
}

err_code cr_parse_plcrash(crashreport **out, const char *data, size_t len, arena *a, err_info *err)
{
    *out = NULL;
    if (len < CR_PLCRASH_MAGIC_LEN + 1)
        return err_set(err, ERR_INVALID, "plcrash report is truncated: %zu bytes, no version byte",
                       len);
    unsigned version = (unsigned char)data[CR_PLCRASH_MAGIC_LEN];
    if (version != 1)
        return err_set(err, ERR_UNSUPPORTED, "plcrash report version %u is not supported (only 1)",
                       version);
    plc c;
    memset(&c, 0, sizeof c);
    c.err = err;
    if (!cr_builder_init(&c.b, CRASHREPORT_FORMAT_PLCRASH, a, err))
        return ERR_TOO_LARGE;
    cr_pb top;
    cr_pb_init(&top, (const uint8_t *)data + CR_PLCRASH_MAGIC_LEN + 1, len - CR_PLCRASH_MAGIC_LEN - 1);
    /* offsets in messages count from the start of the file */
    top.base = (const uint8_t *)data;
    bool has_system = false, has_app = false, ok = true;
    size_t nthreads = 0, nimages = 0;
    cr_pb_field f;
    int rc = 0;
    while (ok && (rc = cr_pb_next(&top, &f, err)) > 0) {
        switch (f.number) {
        case 1: ok = read_top(&c, &top, &f, "system_info", system_info_field); has_system = true; break;
        case 2: ok = read_top(&c, &top, &f, "application_info", app_info_field); has_app = true; break;
        case 3: ok = read_thread(&c, &top, &f, nthreads++); break;
        case 4: ok = read_image(&c, &top, &f, nimages++); break;
        case 5: ok = read_top(&c, &top, &f, "exception", exception_field); break;
        case 6: ok = read_signal(&c, &top, &f); break;
        case 7: ok = read_top(&c, &top, &f, "process_info", process_info_field); break;
        case 8: ok = read_top(&c, &top, &f, "machine_info", machine_info_field); break;
        case 9: ok = read_top(&c, &top, &f, "report_info", report_info_field); break;
        default: break;
        }
        ok = ok && !c.b.failed;
    }
    if (!ok || c.b.failed) {
        if (c.b.failed && (err->code == ERR_OK || err->code == ERR_TOO_LARGE))
            return err_set(err, ERR_TOO_LARGE, "plcrash report: too large for its memory budget");
        return err->code;
    }
    if (rc < 0) {
        /* the tag was read: name the field whose value is broken */
        static const char *const TOP[] = {NULL, "system_info", "application_info", "threads",
                                          "binary_images", "exception", "signal", "process_info",
                                          "machine_info", "report_info", "custom_data"};
        char other[32];
        plc_path at = {NULL, NULL, f.number == 3 ? nthreads : nimages, f.number == 3 || f.number == 4};
        if (f.number > 0 && f.number < sizeof TOP / sizeof TOP[0]) {
            at.name = TOP[f.number];
        } else {
            snprintf(other, sizeof other, "field %u", f.number);
            at.name = other;
        }
        return wire_error(&c, f.number > 0 ? &at : NULL);
    }
    if (!has_system)
        return bad(&c, "no system_info (field 1)");
    if (!has_app)
        return bad(&c, "no application_info (field 2)");
    if (!c.has_sig)
        return bad(&c, "no signal (field 6)");
    finish_metadata(&c);
    err_code fin = cr_finish(&c.b, "plcrash report");
    if (fin != ERR_OK)
        return fin;
    *out = c.b.r;
    return ERR_OK;
}
