/*
 * bench_parse - crash report parse and symbolication rates, each beside a peer run in the same
 * process on the same input (not a test; run by hand or by tests/bench/bench_parse.sh):
 *
 *   apple-text  crashreport_parse of a generated 100-frame Apple text report (8 threads, a
 *               10-frame Last Exception Backtrace, 30 binary images: modern reports list only
 *               the images their frames use), a fresh arena each time
 *       peers   "lines":  memchr line split + strtoull of every frame address (no model: the
 *                         floor of touching every byte)
 *               "regex":  one JIT-compiled pcre2 frame pattern matched against every line
 *                         (what a regex-per-line parser pays before building anything)
 *   ips         crashreport_parse of the same crash as .ips JSON
 *       peer    "jansson": json_loadb + json_decref of the same bytes (the JSON floor)
 *   jsonr       the project's JSON reader (base/jsonr) on the same bytes, tree only
 *       peer    "jansson", as above; and both readers over the corpus's JSON files (MB/s)
 *   plcrash     crashreport_parse of the same crash as PLCrashReporter's .plcrash file
 *               (protobuf, written here following PLCrashReport.proto's field numbers)
 *       peer    "apple-text": the text parse above, measured again beside it
 *   sentry      crashreport_parse of the same crash as a sentry-cocoa event (the JSON of an
 *               envelope's event item, compact)
 *       peer    "apple-text": the text parse, measured again beside it
 *   symbolicate parse + symbolicate_report of a 100-frame report whose app frames all hit a
 *               warm symcache (built from the arm64-O2 fixture dSYM, STACKSIFT_FIXTURES)
 *       peer    "lookups": symcache_lookup of the same 100 addresses, nothing else
 *   corpus      every parseable file of ../shared/corpus/reports, once per round (MB/s)
 *
 * Rates are per core: one thread, timed by its CPU time (CLOCK_THREAD_CPUTIME_ID). The target is >= 20,000 reports/s for the 100-frame
 * Apple text and .ips reports; with --check the exit status is 1 when it is missed.
 * Usage: bench_parse [--seconds S] [--check] [--only text|ips|sentry] (--only: just that parse, for
 * a profiler)
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/jsonr.h"
#include "crashreport/crashreport.h"
#include "dsym/dsym.h"
#include "symbolicate/symbolicate.h"
#include "symcache/symcache.h"

static double seconds = 1.0;

/* This thread's CPU time: a rate per core that other processes on a shared machine do not
 * skew (wall time would count the time we were not scheduled). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef void (*bench_fn)(void *ctx);

/* Runs fn until `seconds` have passed (after a short warm-up); calls per second. */
static double rate(bench_fn fn, void *ctx)
{
    for (int i = 0; i < 50; i++)
        fn(ctx);
    size_t n = 0;
    double t0 = now(), t;
    do {
        for (int i = 0; i < 64; i++)
            fn(ctx);
        n += 64;
        t = now();
    } while (t - t0 < seconds);
    return (double)n / (t - t0);
}

/* ---- the generated crash ----------------------------------------------------------------- */

typedef struct {
    char name[48];
    char uuid[33];
    uint64_t load, size;
} gen_image;

typedef struct {
    gen_image images[30];
    int thread_of[110], image_of[110];
    uint64_t addr[110];
    int nframes; /* 10 LEB + 100 thread frames */
} gen_crash;

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void gen(gen_crash *c, uint64_t app_load, const char *app_uuid)
{
    static const char *const NAMES[] = {"libsystem_kernel.dylib", "CoreFoundation", "UIKitCore",
                                        "Foundation", "libdispatch.dylib", "libobjc.A.dylib",
                                        "libsystem_pthread.dylib", "GraphicsServices"};
    for (int i = 0; i < 30; i++) {
        gen_image *im = &c->images[i];
        if (i == 0)
            snprintf(im->name, sizeof im->name, "FixtureApp");
        else if (i <= 8)
            snprintf(im->name, sizeof im->name, "%s", NAMES[i - 1]);
        else
            snprintf(im->name, sizeof im->name, "SystemLib%d.dylib", i);
        if (i == 0 && app_uuid != NULL)
            snprintf(im->uuid, sizeof im->uuid, "%s", app_uuid);
        else
            for (int k = 0; k < 32; k++)
                im->uuid[k] = "0123456789abcdef"[rnd() % 16];
        im->load = i == 0 ? app_load : 0x180000000ull + (uint64_t)i * 0x4000000ull;
        im->size = i == 0 ? 0x8000 : 0x1000000;
    }
    c->nframes = 110;
    for (int f = 0; f < 110; f++) {
        int img = rnd() % 3 == 0 ? 0 : 1 + (int)(rnd() % 8);
        c->image_of[f] = img;
        c->thread_of[f] = f < 10 ? -1 : (f - 10) / 13; /* LEB, then 8 threads (last has 9) */
        uint64_t off = img == 0 ? 0x4000 + (rnd() % 0x3000) / 4 * 4 : 0x1000 + rnd() % 0xf00000;
        c->addr[f] = c->images[img].load + off;
    }
}

static void gen_text(buf *o, const gen_crash *c)
{
    buf_append_str(o,
                   "Incident Identifier: C4F96507-F369-43E3-B19D-28881BF8E4D2\n"
                   "CrashReporter Key:   7840dc5b00ac5b413ca12a4313d6428d21e4357c\n"
                   "Hardware Model:      iPhone14,5\n"
                   "Process:             FixtureApp [8009]\n"
                   "Path:                /private/var/containers/Bundle/Application/D43A16CE/"
                   "FixtureApp.app/FixtureApp\n"
                   "Identifier:          com.example.FixtureApp\n"
                   "Version:             1.0.0 (12)\n"
                   "Code Type:           ARM-64 (Native)\n"
                   "Role:                Foreground\n"
                   "Parent Process:      launchd [1]\n\n"
                   "Date/Time:           2025-07-19 17:26:12.2595 +0200\n"
                   "OS Version:          iPhone OS 18.5 (22F76)\n"
                   "Report Version:      104\n\n"
                   "Exception Type:  EXC_CRASH (SIGABRT)\n"
                   "Exception Codes: 0x0000000000000000, 0x0000000000000000\n"
                   "Termination Reason: SIGNAL 6 Abort trap: 6\n"
                   "Triggered by Thread:  5\n\n"
                   "Application Specific Information:\nabort() called\n\n\n"
                   "Last Exception Backtrace:\n");
    int thread = -2, index = 0;
    for (int f = 0; f < c->nframes; f++) {
        if (c->thread_of[f] != thread) {
            thread = c->thread_of[f];
            index = 0;
            if (thread >= 0)
                buf_printf(o, "\nThread %d name:   Dispatch queue: com.example.queue-%d\n"
                              "Thread %d%s:\n",
                           thread, thread, thread, thread == 5 ? " Crashed" : "");
        }
        const gen_image *im = &c->images[c->image_of[f]];
        if (c->image_of[f] == 0)
            buf_printf(o, "%-4d%-30s\t       0x%" PRIx64 " 0x%" PRIx64 " + %" PRIu64 "\n", index,
                       im->name, c->addr[f], im->load, c->addr[f] - im->load);
        else
            buf_printf(o, "%-4d%-30s\t       0x%" PRIx64 " -[NSObject(Category%d) perform:with:] "
                          "+ %d\n",
                       index, im->name, c->addr[f], f, (int)(c->addr[f] % 997));
        index++;
    }
    buf_append_str(o, "\n\nThread 5 crashed with ARM Thread State (64-bit):\n"
                      "    x0: 0x0000000000000000   x1: 0x0000000000000000   x2: "
                      "0x0000000000000000   x3: 0x0000000000000000\n"
                      "    sp: 0x000000016f7454d0   pc: 0x00000001f21021dc cpsr: 0x40001000\n\n"
                      "Binary Images:\n");
    for (int i = 0; i < 30; i++) {
        const gen_image *im = &c->images[i];
        buf_printf(o, "       0x%" PRIx64 " -        0x%" PRIx64 " %s %s  <%s> /usr/lib/%s\n",
                   im->load, im->load + im->size - 1, im->name, i == 0 ? "arm64" : "arm64e",
                   im->uuid, im->name);
    }
    buf_append_str(o, "\nEOF\n");
}

static void gen_ips(buf *o, const gen_crash *c)
{
    buf_append_str(o, "{\"app_name\":\"FixtureApp\",\"timestamp\":\"2025-07-19 17:26:12.00 +0200\","
                      "\"app_version\":\"1.0.0\",\"build_version\":\"12\",\"bug_type\":\"309\","
                      "\"os_version\":\"iPhone OS 18.5 (22F76)\",\"name\":\"FixtureApp\"}\n{\n"
                      "  \"incident\" : \"C4F96507-F369-43E3-B19D-28881BF8E4D2\",\n"
                      "  \"procName\" : \"FixtureApp\",\n  \"cpuType\" : \"ARM-64\",\n"
                      "  \"modelCode\" : \"iPhone14,5\",\n"
                      "  \"osVersion\" : {\"train\":\"iPhone OS 18.5\",\"build\":\"22F76\"},\n"
                      "  \"exception\" : {\"codes\":\"0x0, 0x0\",\"type\":\"EXC_CRASH\","
                      "\"signal\":\"SIGABRT\"},\n  \"faultingThread\" : 5,\n");
    int thread = -2;
    for (int f = 0; f < c->nframes; f++) {
        if (c->thread_of[f] != thread) {
            if (thread == -1)
                buf_append_str(o, "],\n  \"threads\" : [");
            else if (thread >= 0)
                buf_append_str(o, "]},");
            thread = c->thread_of[f];
            if (thread == -1)
                buf_append_str(o, "  \"lastExceptionBacktrace\" : [");
            else
                buf_printf(o, "{\"id\":%d,\"queue\":\"com.example.queue-%d\",%s\"frames\":[",
                           1000 + thread, thread, thread == 5 ? "\"triggered\":true," : "");
        } else {
            buf_putc(o, ',');
        }
        const gen_image *im = &c->images[c->image_of[f]];
        buf_printf(o, "{\"imageOffset\":%" PRIu64 ",\"imageIndex\":%d", c->addr[f] - im->load,
                   c->image_of[f]);
        if (c->image_of[f] != 0)
            buf_printf(o, ",\"symbol\":\"-[NSObject(Category%d) perform:with:]\","
                          "\"symbolLocation\":%d",
                       f, (int)(c->addr[f] % 997));
        buf_putc(o, '}');
    }
    buf_append_str(o, "]}],\n  \"usedImages\" : [");
    for (int i = 0; i < 30; i++) {
        const gen_image *im = &c->images[i];
        buf_printf(o, "%s{\"source\":\"P\",\"arch\":\"%s\",\"base\":%" PRIu64 ",\"size\":%" PRIu64
                      ",\"uuid\":\"%.8s-%.4s-%.4s-%.4s-%.12s\",\"path\":\"/usr/lib/%s\","
                      "\"name\":\"%s\"}",
                   i ? "," : "", i == 0 ? "arm64" : "arm64e", im->load, im->size, im->uuid,
                   im->uuid + 8, im->uuid + 12, im->uuid + 16, im->uuid + 20, im->name, im->name);
    }
    buf_append_str(o, "]\n}\n");
}

/* The same crash as a sentry-cocoa event (compact JSON, as NSJSONSerialization writes it):
 * the LEB's frames as the exception's stack, the threads with theirs (caller first, as
 * Sentry orders them), images as debug_meta macho images with their debug_id. */
static void gen_sentry(buf *o, const gen_crash *c)
{
    buf_append_str(o, "{\"event_id\":\"c4f96507f36943e3b19d28881bf8e4d2\",\"platform\":\"cocoa\","
                      "\"level\":\"fatal\",\"release\":\"com.example.FixtureApp@1.0.0+12\","
                      "\"timestamp\":1752938772,\"sdk\":{\"name\":\"sentry.cocoa\","
                      "\"version\":\"8.40.1\"},\"contexts\":{\"os\":{\"name\":\"iOS\","
                      "\"version\":\"18.5\",\"build\":\"22F76\"},\"device\":{\"model\":"
                      "\"iPhone14,5\",\"arch\":\"arm64e\"},\"app\":{\"app_identifier\":"
                      "\"com.example.FixtureApp\",\"app_name\":\"FixtureApp\","
                      "\"app_version\":\"1.0.0\",\"app_build\":\"12\"}},");
    for (int t = -1; t < 8; t++) {
        if (t == -1)
            buf_append_str(o, "\"exception\":{\"values\":[{\"type\":\"EXC_CRASH\",\"value\":"
                              "\"SIGABRT\",\"mechanism\":{\"type\":\"mach\",\"meta\":{"
                              "\"signal\":{\"number\":6,\"name\":\"SIGABRT\"}}},"
                              "\"thread_id\":5,\"stacktrace\":{\"frames\":[");
        else
            buf_printf(o, "%s{\"id\":%d,\"name\":\"com.example.queue-%d\",\"crashed\":%s,"
                          "\"current\":%s,\"stacktrace\":{\"frames\":[",
                       t == 0 ? "\"threads\":{\"values\":[" : ",", t, t,
                       t == 5 ? "true" : "false", t == 5 ? "true" : "false");
        bool first = true;
        for (int f = c->nframes - 1; f >= 0; f--) {   /* caller first */
            if (c->thread_of[f] != t)
                continue;
            const gen_image *im = &c->images[c->image_of[f]];
            buf_printf(o, "%s{\"instruction_addr\":\"0x%016" PRIx64 "\",\"image_addr\":"
                          "\"0x%016" PRIx64 "\",\"package\":\"/usr/lib/%s\"",
                       first ? "" : ",", c->addr[f], im->load, im->name);
            if (c->image_of[f] != 0)
                buf_printf(o, ",\"function\":\"-[NSObject(Category%d) perform:with:]\","
                              "\"symbol_addr\":\"0x%016" PRIx64 "\"",
                           f, c->addr[f] - c->addr[f] % 997);
            buf_printf(o, ",\"in_app\":%s}", c->image_of[f] == 0 ? "true" : "false");
            first = false;
        }
        buf_append_str(o, t == -1 ? "]}}]}," : "]}}");
    }
    buf_append_str(o, "]},\"debug_meta\":{\"images\":[");
    for (int i = 0; i < 30; i++) {
        const gen_image *im = &c->images[i];
        buf_printf(o, "%s{\"type\":\"macho\",\"debug_id\":\"%.8s-%.4s-%.4s-%.4s-%.12s\","
                      "\"image_addr\":\"0x%016" PRIx64 "\",\"image_size\":%" PRIu64 ","
                      "\"code_file\":\"/usr/lib/%s\",\"arch\":\"%s\"}",
                   i ? "," : "", im->uuid, im->uuid + 8, im->uuid + 12, im->uuid + 16,
                   im->uuid + 20, im->load, im->size, im->name, i == 0 ? "arm64" : "arm64e");
    }
    buf_append_str(o, "]}}");
}

/* The same crash as a .plcrash file: a protobuf writer of just what PLCrashReport.proto needs
 * here (varints and length-delimited fields), nested messages written into scratch buffers. */
static void pb_varint(buf *o, uint64_t v)
{
    do {
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        buf_putc(o, (char)(v ? b | 0x80 : b));
    } while (v);
}

static void pb_u64(buf *o, uint32_t field, uint64_t v)
{
    pb_varint(o, (uint64_t)field << 3);
    pb_varint(o, v);
}

static void pb_bytes(buf *o, uint32_t field, const void *d, size_t n)
{
    pb_varint(o, (uint64_t)field << 3 | 2);
    pb_varint(o, n);
    buf_append(o, d, n);
}

static void pb_str(buf *o, uint32_t field, const char *s)
{
    pb_bytes(o, field, s, strlen(s));
}

static void pb_msg(buf *o, uint32_t field, buf *sub) /* appends sub as a message, empties it */
{
    pb_bytes(o, field, sub->data, sub->len);
    sub->len = 0;
}

static void gen_plcrash(buf *o, const gen_crash *c)
{
    buf m, sub, sub2;
    buf_init(&m);
    buf_init(&sub);
    buf_init(&sub2);
    buf_append(o, "plcrash\x01", 8);
    pb_u64(&m, 1, 1);
    pb_str(&m, 2, "18.5");
    pb_u64(&m, 3, 6);
    pb_u64(&m, 4, 1752938772);
    pb_str(&m, 5, "22F76");
    pb_msg(o, 1, &m);
    pb_str(&m, 1, "com.example.FixtureApp");
    pb_str(&m, 2, "12");
    pb_str(&m, 3, "1.0.0");
    pb_msg(o, 2, &m);
    /* threads 0..7 with their frames; the LEB frames go into the exception */
    for (int t = 0; t < 8; t++) {
        pb_u64(&m, 1, (uint64_t)t);
        for (int f = 0; f < c->nframes; f++) {
            if (c->thread_of[f] != t)
                continue;
            pb_u64(&sub, 3, c->addr[f]);
            if (c->image_of[f] != 0) {
                char name[64];
                snprintf(name, sizeof name, "-[NSObject(Category%d) perform:with:]", f);
                pb_str(&sub2, 1, name);
                pb_u64(&sub2, 2, c->addr[f] - c->addr[f] % 997);
                pb_msg(&sub, 6, &sub2);
            }
            pb_msg(&m, 2, &sub);
        }
        pb_u64(&m, 3, t == 5);
        if (t == 5)
            for (int r = 0; r < 34; r++) {
                char name[8];
                snprintf(name, sizeof name, "x%d", r);
                pb_str(&sub, 1, name);
                pb_u64(&sub, 2, 0x16f745000u + (uint64_t)r);
                pb_msg(&m, 4, &sub);
            }
        pb_msg(o, 3, &m);
    }
    for (int i = 0; i < 30; i++) {
        const gen_image *im = &c->images[i];
        uint8_t uuid[16];
        for (int k = 0; k < 16; k++)
            sscanf(im->uuid + 2 * k, "%2hhx", &uuid[k]);
        char path[80];
        snprintf(path, sizeof path, "/usr/lib/%s", im->name);
        pb_u64(&m, 1, im->load);
        pb_u64(&m, 2, im->size);
        pb_str(&m, 3, path);
        pb_bytes(&m, 4, uuid, 16);
        pb_u64(&sub, 1, 1);
        pb_u64(&sub, 2, 0x0100000c);
        pb_u64(&sub, 3, i == 0 ? 0 : 2);
        pb_msg(&m, 5, &sub);
        pb_msg(o, 4, &m);
    }
    pb_str(&m, 1, "NSInvalidArgumentException");
    pb_str(&m, 2, "abort() called");
    for (int f = 0; f < c->nframes; f++)
        if (c->thread_of[f] == -1) {
            pb_u64(&sub, 3, c->addr[f]);
            pb_msg(&m, 3, &sub);
        }
    pb_msg(o, 5, &m);
    pb_str(&m, 1, "SIGABRT");
    pb_str(&m, 2, "#0");
    pb_u64(&m, 3, 0);
    pb_u64(&sub, 1, 10);
    pb_u64(&sub, 2, 0);
    pb_u64(&sub, 2, 0);
    pb_msg(&m, 4, &sub);
    pb_msg(o, 6, &m);
    pb_str(&m, 1, "FixtureApp");
    pb_u64(&m, 2, 8009);
    pb_str(&m, 3, "/usr/lib/FixtureApp");
    pb_str(&m, 4, "launchd");
    pb_u64(&m, 5, 1);
    pb_u64(&m, 6, 1);
    pb_msg(o, 7, &m);
    pb_str(&m, 1, "iPhone14,5");
    pb_u64(&sub, 1, 1);
    pb_u64(&sub, 2, 0x0100000c);
    pb_u64(&sub, 3, 2);
    pb_msg(&m, 2, &sub);
    pb_u64(&m, 3, 6);
    pb_u64(&m, 4, 6);
    pb_msg(o, 8, &m);
    buf_reset(&m);
    buf_reset(&sub);
    buf_reset(&sub2);
}

/* ---- the runs ---------------------------------------------------------------------------- */

typedef struct {
    const char *data;
    size_t len;
    pcre2_code *re;
    pcre2_match_data *md;
    uint64_t sink;
    const symcache *sc;
    uint64_t *lookups;
    size_t nlookups;
    size_t failures;
} run_ctx;

static void run_parse(void *p)
{
    run_ctx *c = p;
    arena *a = arena_new(0);
    err_info err;
    crashreport *r = NULL;
    if (crashreport_parse(&r, c->data, c->len, a, &err) != ERR_OK)
        c->failures++;
    else
        c->sink += r->nthreads;
    arena_free(a);
}

static void run_lines(void *p)
{
    run_ctx *c = p;
    const char *s = c->data, *end = c->data + c->len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        if (s < e && *s >= '0' && *s <= '9') {
            const char *x = memmem(s, (size_t)(e - s), " 0x", 3);
            if (x != NULL)
                c->sink += strtoull(x + 1, NULL, 16);
        }
        s = e + 1;
    }
}

static void run_regex(void *p)
{
    run_ctx *c = p;
    const char *s = c->data, *end = c->data + c->len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        if (pcre2_match(c->re, (PCRE2_SPTR)s, (size_t)(e - s), 0, 0, c->md, NULL) > 0)
            c->sink++;
        s = e + 1;
    }
}

static void run_jansson(void *p)
{
    run_ctx *c = p;
    json_error_t e;
    const char *nl = memchr(c->data, '\n', c->len);
    size_t off = nl ? (size_t)(nl - c->data) + 1 : 0;
    json_t *h = json_loadb(c->data, off, 0, &e);
    json_t *j = json_loadb(c->data + off, c->len - off, 0, &e);
    c->sink += j != NULL;
    json_decref(h);
    json_decref(j);
}

static void run_jsonr(void *p)
{
    run_ctx *c = p;
    arena *a = arena_new(0);
    size_t off = 0;
    jsonr_value *h = jsonr_parse(a, c->data, c->len, 0, &off, NULL);
    jsonr_value *j = jsonr_parse(a, c->data + off, c->len - off, 0, NULL, NULL);
    c->sink += h != NULL && j != NULL;
    arena_free(a);
}

/* Every JSON value in c's bytes, one after the other (an .ips: header line, body): jsonr's
 * tree, or jansson's; c->sink counts the texts read whole. */
static void run_values(void *p, bool jansson)
{
    run_ctx *c = p;
    arena *a = arena_new(0);
    size_t off = 0;
    bool ok = true;
    while (ok && off < c->len) {
        size_t used = 0;
        if (jansson) {
            json_error_t e;
            json_t *j = json_loadb(c->data + off, c->len - off, JSON_DISABLE_EOF_CHECK, &e);
            if (j == NULL && json_error_code(&e) == json_error_numeric_overflow)
                j = json_loadb(c->data + off, c->len - off,
                               JSON_DISABLE_EOF_CHECK | JSON_DECODE_INT_AS_REAL, &e);
            ok = j != NULL;
            used = ok ? (size_t)e.position : 0;
            json_decref(j);
        } else {
            ok = jsonr_parse(a, c->data + off, c->len - off, 0, &used, NULL) != NULL;
        }
        ok = ok && used > 0;
        off += used;
        while (off < c->len && (c->data[off] == '\n' || c->data[off] == ' '))
            off++;
    }
    c->sink += ok;
    arena_free(a);
}

static const symcache *resolve_one(void *ctx, const char *uuid, const char *arch)
{
    run_ctx *c = ctx;
    (void)arch;
    char want[37];
    const uint8_t *u = symcache_uuid(c->sc);
    snprintf(want, sizeof want,
             "%02X%02X%02X%02X-%02X%02X-%02X%02X-%02X%02X-%02X%02X%02X%02X%02X%02X", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    return strcmp(uuid, want) == 0 ? c->sc : NULL;
}

static void run_symbolicate(void *p)
{
    run_ctx *c = p;
    arena *a = arena_new(0);
    err_info err;
    crashreport *r = NULL;
    if (crashreport_parse(&r, c->data, c->len, a, &err) != ERR_OK ||
        symbolicate_report(r, resolve_one, c, a, &err) != ERR_OK)
        c->failures++;
    else
        c->sink += r->nmissing_uuids;
    arena_free(a);
}

static void run_lookups(void *p)
{
    run_ctx *c = p;
    symcache_frame out[SYMCACHE_MAX_FRAMES];
    for (size_t i = 0; i < c->nlookups; i++)
        c->sink += symcache_lookup(out, SYMCACHE_MAX_FRAMES, c->sc, c->lookups[i]);
}

static void print_row(const char *what, double r, size_t bytes, const char *peer, double pr)
{
    printf("%-34s %10.0f /s %8.1f MB/s", what, r, r * (double)bytes / 1e6);
    if (peer != NULL)
        printf("   peer %-9s %10.0f /s   ratio %.2f", peer, pr, r / pr);
    printf("\n");
}

static char built_path[4096];
static void remember(const dsym_built *b, void *ctx)
{
    (void)ctx;
    if (strcmp(b->arch, "arm64") == 0)
        snprintf(built_path, sizeof built_path, "%s", b->path);
}

int main(int argc, char **argv)
{
    bool check = false;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--check") == 0)
            check = true;
        else {
            fprintf(stderr, "usage: bench_parse [--seconds S] [--check] [--only text|ips|sentry]\n");
            return 2;
        }
    }
    /* a symcache for the symbolication run, when the fixtures are there */
    symcache *sc = NULL;
    char tmp[] = "/tmp/stacksift-bench.XXXXXX";
    const char *fx = getenv("STACKSIFT_FIXTURES");
    char uuid_hex[33] = "";
    if (fx != NULL && mkdtemp(tmp) != NULL) {
        char dsym[4096];
        err_info err;
        snprintf(dsym, sizeof dsym, "%s/arm64-O2/FixtureApp.app.dSYM", fx);
        if (dsym_build_symcaches(dsym, tmp, NULL, remember, NULL, &err) == ERR_OK &&
            symcache_open(&sc, built_path, &err) == ERR_OK) {
            const uint8_t *u = symcache_uuid(sc);
            for (int i = 0; i < 16; i++)
                sprintf(uuid_hex + 2 * i, "%02x", u[i]);
        } else {
            fprintf(stderr, "bench: no symcache (%s): symbolication not measured\n", err.msg);
        }
    }
    gen_crash crash;
    gen(&crash, 0x104c00000ull, uuid_hex[0] ? uuid_hex : NULL);
    buf text, ips, plc, sentry;
    buf_init(&text);
    buf_init(&ips);
    buf_init(&plc);
    buf_init(&sentry);
    gen_text(&text, &crash);
    gen_ips(&ips, &crash);
    gen_plcrash(&plc, &crash);
    gen_sentry(&sentry, &crash);

    int errcode;
    PCRE2_SIZE erroff;
    run_ctx c = {0};
    c.re = pcre2_compile((PCRE2_SPTR) "^([0-9]+)\\s+(.+?)\\s+0x([0-9a-fA-F]+)\\s+(.*)$",
                         PCRE2_ZERO_TERMINATED, 0, &errcode, &erroff, NULL);
    pcre2_jit_compile(c.re, PCRE2_JIT_COMPLETE);
    c.md = pcre2_match_data_create_from_pattern(c.re, NULL);

    if (only != NULL) {
        const buf *b = strcmp(only, "ips") == 0 ? &ips : strcmp(only, "sentry") == 0 ? &sentry
                                                                                 : &text;
        c.data = (const char *)b->data;
        c.len = b->len;
        printf("%s: %.0f /s\n", only, rate(run_parse, &c));
        return 0;
    }
    printf("bench_parse: one thread, %.1f s per measurement\n", seconds);
    c.data = (const char *)text.data;
    c.len = text.len;
    double text_rate = rate(run_parse, &c);
    print_row("apple-text 100 frames, 30 images", text_rate, text.len, "lines", rate(run_lines, &c));
    print_row("", text_rate, text.len, "regex", rate(run_regex, &c));
    c.data = (const char *)ips.data;
    c.len = ips.len;
    double ips_rate = rate(run_parse, &c);
    print_row("ips 100 frames, 30 images", ips_rate, ips.len, "jansson", rate(run_jansson, &c));
    print_row("jsonr: the ips bytes, tree only", rate(run_jsonr, &c), ips.len, "jansson",
              rate(run_jansson, &c));
    c.data = (const char *)plc.data;
    c.len = plc.len;
    double plc_rate = rate(run_parse, &c);
    c.data = (const char *)text.data;
    c.len = text.len;
    print_row("plcrash 100 frames, 30 images", plc_rate, plc.len, "apple-text", rate(run_parse, &c));
    c.data = (const char *)sentry.data;
    c.len = sentry.len;
    double sentry_rate = rate(run_parse, &c);
    c.data = (const char *)text.data;
    c.len = text.len;
    print_row("sentry event 100 frames, 30 images", sentry_rate, sentry.len, "apple-text",
              rate(run_parse, &c));
    if (sc != NULL) {
        c.sc = sc;
        c.data = (const char *)text.data;
        c.len = text.len;
        uint64_t look[110];
        size_t n = 0;
        for (int f = 0; f < crash.nframes; f++)
            if (crash.image_of[f] == 0)
                look[n++] = crash.addr[f] - crash.images[0].load + symcache_text_vmaddr(sc);
        c.lookups = look;
        c.nlookups = n;
        double sym_rate = rate(run_symbolicate, &c);
        char label[64];
        snprintf(label, sizeof label, "parse+symbolicate (%zu app frames)", n);
        print_row(label, sym_rate, text.len, "lookups", rate(run_lookups, &c));
    }
    /* the real corpus */
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../shared/corpus/reports", src ? src : ".");
    static const char *const DIRS[] = {"apple-text", "ips", "kscrash-json", "plcrash-text"};
    size_t corpus_bytes = 0, corpus_files = 0;
    buf all;
    buf_init(&all);
    typedef struct {
        size_t off, len;
    } span;
    span spans[256];
    for (size_t d = 0; d < 4; d++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, DIRS[d]);
        DIR *dh = opendir(path);
        if (dh == NULL)
            continue;
        struct dirent *e;
        while ((e = readdir(dh)) != NULL && corpus_files < 256) {
            if (e->d_name[0] == '.')
                continue;
            char fp[8704];
            snprintf(fp, sizeof fp, "%s/%s", path, e->d_name);
            FILE *f = fopen(fp, "rb");
            if (f == NULL)
                continue;
            char chunk[65536];
            size_t start = all.len, k;
            while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
                buf_append(&all, chunk, k);
            fclose(f);
            spans[corpus_files++] = (span){start, all.len - start};
        }
        closedir(dh);
    }
    if (corpus_files > 0) {
        double t0 = now(), t;
        size_t rounds = 0, ok = 0;
        do {
            for (size_t i = 0; i < corpus_files; i++) {
                arena *a = arena_new(0);
                err_info err;
                crashreport *r;
                ok += crashreport_parse(&r, (const char *)all.data + spans[i].off, spans[i].len,
                                        a, &err) == ERR_OK;
                arena_free(a);
            }
            rounds++;
            t = now();
        } while (t - t0 < seconds);
        corpus_bytes = all.len;
        double files_per_s = (double)(rounds * corpus_files) / (t - t0);
        printf("%-34s %10.0f /s %8.1f MB/s   (%zu files, %zu parse)\n", "corpus (all formats)",
               files_per_s, (double)rounds * (double)corpus_bytes / (t - t0) / 1e6,
               corpus_files, ok / rounds);
    }
    /* the JSON readers over the corpus's JSON files (KSCrash, .ips: header line and body) */
    for (int reader = 0; reader < 2 && corpus_files > 0; reader++) {
        size_t json_bytes = 0, rounds = 0, ok = 0;
        double t0 = now(), t;
        do {
            for (size_t i = 0; i < corpus_files; i++) {
                run_ctx jc = {.data = (const char *)all.data + spans[i].off, .len = spans[i].len};
                if (jc.len == 0 || (jc.data[0] != '{' && jc.data[0] != '['))
                    continue;
                run_values(&jc, reader == 1);
                ok += jc.sink;
                json_bytes += jc.len;
            }
            rounds++;
            t = now();
        } while (t - t0 < seconds);
        printf("%-34s %10s    %8.1f MB/s   (%zu of %zu files read)\n",
               reader == 0 ? "corpus JSON: jsonr" : "corpus JSON: jansson (peer)", "",
               (double)json_bytes / (t - t0) / 1e6, ok / rounds, corpus_files);
    }
    printf("target: >= 20000 reports/s for 100-frame reports: apple-text %s (%.1fx), ips %s "
           "(%.1fx)\n",
           text_rate >= 20000 ? "met" : "MISSED", text_rate / 20000,
           ips_rate >= 20000 ? "met" : "MISSED", ips_rate / 20000);
    if (c.failures > 0)
        printf("bench: %zu parses failed\n", c.failures);
    buf_reset(&text);
    buf_reset(&ips);
    buf_reset(&plc);
    buf_reset(&sentry);
    buf_reset(&all);
    pcre2_match_data_free(c.md);
    pcre2_code_free(c.re);
    if (sc != NULL) {
        symcache_close(sc);
        unlink(built_path);
    }
    rmdir(tmp);
    if (check && (text_rate < 20000 || ips_rate < 20000 || c.failures > 0))
        return 1;
    return c.failures > 0 ? 1 : 0;
}
