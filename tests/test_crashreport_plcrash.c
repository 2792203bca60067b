/*
 * test_crashreport_plcrash - the bounded protobuf reader (common/crashreport/protobuf.c) and
 * the .plcrash parser (parse_plcrash.c) on files built here by a small encoder that follows
 * PLCrashReport.proto's field numbers: a full report into the model, then every kind of bad
 * input (truncated varints, lengths past the end, too-deep nesting, huge repeated counts,
 * wrong wire types, missing fields, every truncation of a valid file) answered by a clean
 * error that names the field.
 */
#include "harness.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/utf8.h"
#include "crashreport/crashreport.h"
#include "crashreport/protobuf.h"

/* ---- a tiny encoder ------------------------------------------------------------------------ */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} enc;

static void put(enc *e, const void *d, size_t n)
{
    if (e->n + n > e->cap) {
        e->cap = (e->n + n) * 2 + 64;
        e->p = realloc(e->p, e->cap);
        if (e->p == NULL)
            abort();
    }
    if (n)
        memcpy(e->p + e->n, d, n);
    e->n += n;
}

static void put_varint(enc *e, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    put(e, b, n);
}

static void f_varint(enc *e, uint32_t field, uint64_t v)
{
    put_varint(e, (uint64_t)field << 3);
    put_varint(e, v);
}

static void f_bytes(enc *e, uint32_t field, const void *d, size_t n)
{
    put_varint(e, (uint64_t)field << 3 | 2);
    put_varint(e, n);
    put(e, d, n);
}

static void f_str(enc *e, uint32_t field, const char *s)
{
    f_bytes(e, field, s, strlen(s));
}

static void f_msg(enc *e, uint32_t field, enc *sub)
{
    f_bytes(e, field, sub->p, sub->n);
    free(sub->p);
    memset(sub, 0, sizeof *sub);
}

static void f_frame(enc *e, uint32_t field, uint64_t pc, const char *sym, uint64_t start)
{
    enc fr = {0};
    f_varint(&fr, 3, pc);
    if (sym != NULL) {
        enc s = {0};
        f_str(&s, 1, sym);
        f_varint(&s, 2, start);
        f_msg(&fr, 6, &s);
    }
    f_msg(e, field, &fr);
}

static void f_processor(enc *e, uint32_t field, uint64_t type, uint64_t sub)
{
    enc p = {0};
    f_varint(&p, 1, 1);
    f_varint(&p, 2, type);
    f_varint(&p, 3, sub);
    f_msg(e, field, &p);
}

static const uint8_t APP_UUID[16] = {0x6f, 0x8a, 0x2c, 0x1e, 0x11, 0x11, 0x42, 0x22,
                                     0x83, 0x33, 0x94, 0x44, 0x55, 0x55, 0x66, 0x66};

/* The header, system info and app info every report needs, without a signal. */
static void head_nosig(enc *e)
{
    put(e, "plcrash\x01", 8);
    enc s = {0};
    f_varint(&s, 1, 1); /* IPHONE_OS */
    f_str(&s, 2, "17.5");
    f_varint(&s, 3, 6);
    f_varint(&s, 4, 1717243200);
    f_str(&s, 5, "21F79");
    f_msg(e, 1, &s);
    enc a = {0};
    f_str(&a, 1, "com.example.App");
    f_str(&a, 2, "7");
    f_str(&a, 3, "1.0");
    f_msg(e, 2, &a);
}

/* head_nosig and the signal (a Mach EXC_BAD_ACCESS) */
static void head(enc *e)
{
    head_nosig(e);
    enc g = {0};
    f_str(&g, 1, "SIGSEGV");
    f_str(&g, 2, "SEGV_MAPERR");
    f_varint(&g, 3, 0x8);
    enc mach = {0};
    f_varint(&mach, 1, 1); /* EXC_BAD_ACCESS */
    f_varint(&mach, 2, 1);
    f_varint(&mach, 2, 8);
    f_msg(&g, 4, &mach);
    f_msg(e, 6, &g);
}

/* A whole report: two threads (one crashed, with registers), two images, an exception. */
static void full_report(enc *e)
{
    head(e);
    enc t = {0};
    f_varint(&t, 1, 0);
    f_frame(&t, 2, 0x100001000, NULL, 0);
    f_frame(&t, 2, 0x180001234, "__pthread_kill", 0x180001200);
    f_varint(&t, 3, 1);
    enc r = {0};
    f_str(&r, 1, "x0");
    f_varint(&r, 2, 0x1);
    f_msg(&t, 4, &r);
    f_str(&r, 1, "pc");
    f_varint(&r, 2, 0x100001000);
    f_msg(&t, 4, &r);
    f_msg(e, 3, &t);
    f_varint(&t, 1, 3);
    f_frame(&t, 2, 0x100002000, NULL, 0);
    f_varint(&t, 3, 0);
    f_msg(e, 3, &t);
    enc im = {0};
    f_varint(&im, 1, 0x100000000);
    f_varint(&im, 2, 0x4000);
    f_str(&im, 3, "/private/var/containers/Bundle/Application/X/App.app/App");
    f_bytes(&im, 4, APP_UUID, 16);
    f_processor(&im, 5, 0x0100000c, 0);
    f_msg(e, 4, &im);
    f_varint(&im, 1, 0x180000000);
    f_varint(&im, 2, 0x10000);
    f_str(&im, 3, "/usr/lib/system/libsystem_kernel.dylib");
    f_processor(&im, 5, 0x0100000c, 0x80000002);
    f_msg(e, 4, &im);
    enc x = {0};
    f_str(&x, 1, "NSRangeException");
    f_str(&x, 2, "index 3 beyond bounds");
    f_frame(&x, 3, 0x100001010, NULL, 0);
    f_frame(&x, 3, 0x180001300, "objc_exception_throw", 0x180001280);
    f_msg(e, 5, &x);
    enc p = {0};
    f_str(&p, 1, "App");
    f_varint(&p, 2, 4242);
    f_str(&p, 3, "/private/var/containers/Bundle/Application/X/App.app/App");
    f_str(&p, 4, "launchd");
    f_varint(&p, 5, 1);
    f_varint(&p, 6, 1);
    f_msg(e, 7, &p);
    enc m = {0};
    f_str(&m, 1, "iPhone14,2");
    f_processor(&m, 2, 0x0100000c, 2);
    f_varint(&m, 3, 6);
    f_varint(&m, 4, 6);
    f_msg(e, 8, &m);
    enc ri = {0};
    f_varint(&ri, 1, 0);
    f_bytes(&ri, 2, APP_UUID, 16);
    f_msg(e, 9, &ri);
    f_str(e, 10, "custom data is not read");
    f_varint(e, 99, 5); /* an unknown field: skipped */
}

static err_code parse(crashreport **r, const enc *e, arena *a, err_info *err)
{
    memset(err, 0, sizeof *err);
    return crashreport_parse(r, (const char *)e->p, e->n, a, err);
}

/* ---- the reader ---------------------------------------------------------------------------- */

static void varint_bounds(void)
{
    uint64_t v;
    const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const uint8_t *p = max;
    CHECK(cr_pb_varint(&v, &p, max + sizeof max));
    CHECK_EQ_U64(v, UINT64_MAX);
    CHECK(p == max + 10);
    /* the 10th byte may hold bit 63 only */
    const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    p = over;
    CHECK(!cr_pb_varint(&v, &p, over + sizeof over));
    CHECK(p == over);
    /* eleven bytes */
    const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    p = eleven;
    CHECK(!cr_pb_varint(&v, &p, eleven + sizeof eleven));
    /* truncated: every prefix of a 3-byte varint */
    const uint8_t three[] = {0x96, 0x81, 0x01};
    for (size_t n = 0; n < 3; n++) {
        p = three;
        CHECK(!cr_pb_varint(&v, &p, three + n));
    }
    p = three;
    CHECK(cr_pb_varint(&v, &p, three + 3));
    CHECK_EQ_U64(v, 0x16 | (1u << 7) | (1u << 14));
}

static int next_err(const uint8_t *d, size_t n, err_info *err)
{
    cr_pb m;
    cr_pb_field f;
    cr_pb_init(&m, d, n);
    memset(err, 0, sizeof *err);
    int rc;
    size_t guard = 0;
    while ((rc = cr_pb_next(&m, &f, err)) > 0 && guard++ < n + 1)
        ;
    return rc;
}

static void reader_bounds(void)
{
    err_info err;
    /* truncated tag / varint / fixed */
    CHECK_EQ_INT(next_err((const uint8_t *)"\x80", 1, &err), -1);
    CHECK(strstr(err.msg, "truncated tag at offset 0") != NULL);
    CHECK_EQ_INT(next_err((const uint8_t *)"\x08\xff", 2, &err), -1);
    CHECK(strstr(err.msg, "truncated varint at offset 1") != NULL);
    CHECK_EQ_INT(next_err((const uint8_t *)"\x09\x01\x02\x03", 4, &err), -1);
    CHECK(strstr(err.msg, "truncated fixed64") != NULL);
    CHECK_EQ_INT(next_err((const uint8_t *)"\x0d\x01\x02", 3, &err), -1);
    CHECK(strstr(err.msg, "truncated fixed32") != NULL);
    /* a length past the end, and one near 2^64 */
    CHECK_EQ_INT(next_err((const uint8_t *)"\x0a\x05\x01\x02", 4, &err), -1);
    CHECK(strstr(err.msg, "length 5 at offset 1 runs past the end of its message (2 bytes left)") != NULL);
    const uint8_t huge[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
    CHECK_EQ_INT(next_err(huge, sizeof huge, &err), -1);
    CHECK(strstr(err.msg, "runs past the end") != NULL);
    /* groups and unknown wire types, field number 0 */
    CHECK_EQ_INT(next_err((const uint8_t *)"\x0b", 1, &err), -1);
    CHECK(strstr(err.msg, "wire type 3 (group)") != NULL);
    CHECK_EQ_INT(next_err((const uint8_t *)"\x0c", 1, &err), -1);
    CHECK(strstr(err.msg, "wire type 4 (group)") != NULL);
    CHECK_EQ_INT(next_err((const uint8_t *)"\x0e", 1, &err), -1);
    CHECK(strstr(err.msg, "wire type 6") != NULL);
    CHECK_EQ_INT(next_err((const uint8_t *)"\x00\x01", 2, &err), -1);
    CHECK(strstr(err.msg, "field number 0") != NULL);
    /* a field number above 2^29-1 */
    const uint8_t big[] = {0xf8, 0xff, 0xff, 0xff, 0x1f, 0x00};
    CHECK_EQ_INT(next_err(big, sizeof big, &err), -1);
    CHECK(strstr(err.msg, "field number 1073741823 at offset 0") != NULL);
    /* a well-formed message of every wire type reads to its end */
    const uint8_t ok[] = {0x08, 0x96, 0x01, 0x11, 1, 2, 3, 4, 5, 6, 7, 8, 0x1a, 0x02, 'h', 'i',
                          0x25, 1, 0, 0, 0x80};
    cr_pb m;
    cr_pb_field f;
    cr_pb_init(&m, ok, sizeof ok);
    CHECK_EQ_INT(cr_pb_next(&m, &f, &err), 1);
    CHECK_EQ_U64(f.u64, 150);
    CHECK_EQ_INT(cr_pb_next(&m, &f, &err), 1);
    CHECK_EQ_U64(f.u64, 0x0807060504030201ull);
    CHECK_EQ_INT(cr_pb_next(&m, &f, &err), 1);
    CHECK(f.len == 2 && memcmp(f.data, "hi", 2) == 0);
    CHECK_EQ_INT(cr_pb_next(&m, &f, &err), 1);
    CHECK_EQ_U64(f.u64, 0x80000001u);
    CHECK_EQ_INT(cr_pb_next(&m, &f, &err), 0);
}

static void reader_depth(void)
{
    /* 40 messages nested in one another: field 1 of each holds the next */
    enc e = {0};
    f_varint(&e, 2, 7);
    for (int i = 0; i < 40; i++) {
        enc outer = {0};
        f_bytes(&outer, 1, e.p, e.n);
        free(e.p);
        e = outer;
    }
    cr_pb m[CR_PB_MAX_DEPTH + 2];
    cr_pb_field f;
    err_info err = {0};
    cr_pb_init(&m[0], e.p, e.n);
    int depth = 0;
    err_code rc = ERR_OK;
    while (rc == ERR_OK && cr_pb_next(&m[depth], &f, &err) == 1 && f.number == 1) {
        rc = cr_pb_enter(&m[depth + 1], &m[depth], &f, &err);
        if (rc == ERR_OK)
            depth++;
    }
    CHECK_EQ_INT(rc, ERR_INVALID);
    CHECK_EQ_INT(depth, CR_PB_MAX_DEPTH);
    CHECK(strstr(err.msg, "nests messages more than 16 deep") != NULL);
    /* entering a varint is refused */
    cr_pb_init(&m[0], (const uint8_t *)"\x08\x01", 2);
    CHECK_EQ_INT(cr_pb_next(&m[0], &f, &err), 1);
    CHECK_EQ_INT(cr_pb_enter(&m[1], &m[0], &f, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "want a message") != NULL);
    free(e.p);
}

/* ---- the parser ---------------------------------------------------------------------------- */

static void full_report_model(void)
{
    enc e = {0};
    full_report(&e);
    arena *a = arena_new(1 << 20);
    crashreport *r;
    err_info err;
    CHECK_EQ_INT(parse(&r, &e, a, &err), ERR_OK);
    if (r == NULL)
        goto done;
    const crashreport_metadata *m = &r->meta;
    CHECK_EQ_STR(crashreport_format_name(r->format), "plcrash");
    CHECK_EQ_STR(m->incident_id, "6F8A2C1E-1111-4222-8333-944455556666");
    CHECK_EQ_STR(m->process, "App");
    CHECK_EQ_STR(m->process_path, "/private/var/containers/Bundle/Application/X/App.app/App");
    CHECK_EQ_STR(m->parent_process, "launchd [1]");
    CHECK_EQ_STR(m->bundle_id, "com.example.App");
    CHECK_EQ_STR(m->app_version, "1.0");
    CHECK_EQ_STR(m->build, "7");
    CHECK_EQ_STR(m->version_text, "1.0 (7)");
    CHECK_EQ_STR(m->os_version, "iPhone OS 17.5 (21F79)");
    CHECK_EQ_STR(m->hardware_model, "iPhone14,2");
    CHECK_EQ_STR(m->arch, "arm64e");
    CHECK_EQ_STR(m->code_type, "ARM-64 (Native)");
    CHECK_EQ_STR(m->date, "2024-06-01 12:00:00 +0000");
    CHECK_EQ_STR(m->exception_type, "EXC_BAD_ACCESS");
    CHECK_EQ_STR(m->signal, "SIGSEGV");
    CHECK_EQ_STR(m->exception_codes, "0x0000000000000001, 0x0000000000000008");
    CHECK_EQ_STR(m->exception_subtype, "SEGV_MAPERR at 0x8");
    CHECK_EQ_STR(m->exception_reason, "NSRangeException: index 3 beyond bounds");
    CHECK_EQ_STR(m->app_specific_info, "*** Terminating app due to uncaught exception "
                 "'NSRangeException', reason: 'index 3 beyond bounds'");
    CHECK_EQ_INT(m->crashed_thread, 0);
    CHECK_EQ_INT(r->kind, CRASHREPORT_KIND_CRASH);
    CHECK_EQ_INT(r->nthreads, 2);
    CHECK_EQ_INT(r->threads[1].index, 3);
    CHECK(r->threads[0].crashed && !r->threads[1].crashed);
    CHECK_EQ_INT(r->threads[0].nframes, 2);
    CHECK_EQ_U64(r->threads[0].frames[0].addr, 0x100001000);
    CHECK_EQ_INT(r->threads[0].frames[0].image, 0);
    CHECK_EQ_STR(r->threads[0].frames[1].symbol, "__pthread_kill");
    CHECK_EQ_U64(r->threads[0].frames[1].symbol_offset, 0x34);
    CHECK_EQ_INT(r->threads[0].frames[1].image, 1);
    CHECK_EQ_INT(r->threads[0].frames[1].index, 1);
    CHECK_EQ_INT(r->threads[0].nregisters, 2);
    CHECK_EQ_STR(r->threads[0].registers[1].name, "pc");
    CHECK_EQ_U64(r->threads[0].registers[1].value, 0x100001000);
    CHECK(r->has_leb);
    CHECK_EQ_INT(r->nleb, 2);
    CHECK_EQ_STR(r->leb[1].symbol, "objc_exception_throw");
    CHECK_EQ_INT(r->nimages, 2);
    CHECK_EQ_STR(r->images[0].name, "App");
    CHECK_EQ_STR(r->images[0].uuid, "6F8A2C1E-1111-4222-8333-944455556666");
    CHECK_EQ_STR(r->images[0].arch, "arm64");
    CHECK_EQ_U64(r->images[0].end_addr, 0x100003fff);
    CHECK(r->images[0].user && !r->images[1].user);
    CHECK_EQ_STR(r->images[1].arch, "arm64e");
    CHECK_EQ_STR(r->images[1].uuid, "");
    CHECK_EQ_INT(r->nerrors, 0);
    /* rendered as Apple text: the synthesized report with the crashed thread's registers */
    buf o;
    buf_init(&o);
    crashreport_render_text(&o, r);
    buf_putc(&o, '\0');
    const char *t = (const char *)o.data;
    CHECK(strstr(t, "Exception Type:      EXC_BAD_ACCESS (SIGSEGV)\n") != NULL);
    CHECK(strstr(t, "Thread 0 Crashed:\n") != NULL);
    CHECK(strstr(t, "Thread 3:\n") != NULL);
    CHECK(strstr(t, "Thread 0 crashed with ARM Thread State (64-bit):\n") != NULL);
    CHECK(strstr(t, "    pc: 0x0000000100001000\n") != NULL);
    CHECK(strstr(t, "<6F8A2C1E-1111-4222-8333-944455556666> /private/var/containers") != NULL);
    buf_reset(&o);
    buf_init(&o);
    crashreport_render_json(&o, r);
    buf_putc(&o, '\0');
    CHECK(strstr((const char *)o.data, "\"registers\":{\"x0\":\"0x1\",\"pc\":\"0x100001000\"}") != NULL);
    CHECK(strstr((const char *)o.data, "\"format\":\"plcrash\"") != NULL);
    buf_reset(&o);
done:
    arena_free(a);
    free(e.p);
}

/* Every prefix of a valid file parses or fails cleanly (never a crash, ASan watching). */
/* A macOS process whose heap was corrupted: OS build, app version and process name of 0xAB
 * bytes (what a real report carried), a symbol cut inside a character. Each invalid
 * sequence is read as U+FFFD; the rest of the report as ever. */
static void strings_not_utf8(void)
{
#define FFFD "\xef\xbf\xbd"
    enc e = {0};
    put(&e, "plcrash\x01", 8);
    enc s = {0};
    f_varint(&s, 1, 0); /* MAC_OS_X */
    f_str(&s, 2, "10.15.7");
    f_varint(&s, 3, 1);
    f_varint(&s, 4, 1717243200);
    f_str(&s, 5, "\xab\xab\xab\xab\xab\xab\xab\xab");
    f_msg(&e, 1, &s);
    enc a = {0};
    f_str(&a, 1, "com.example.App");
    f_str(&a, 2, "\xab\xab\xab");
    f_str(&a, 3, "\xab\xab\xab\xab");
    f_msg(&e, 2, &a);
    enc t = {0};
    f_varint(&t, 1, 0);
    f_frame(&t, 2, 0x100001000, "caf\xc3", 0x100000f00);
    f_varint(&t, 3, 1);
    f_msg(&e, 3, &t);
    enc im = {0};
    f_varint(&im, 1, 0x100000000);
    f_varint(&im, 2, 0x4000);
    f_str(&im, 3, "/Applications/\xab.app/Contents/MacOS/\xab");
    f_bytes(&im, 4, APP_UUID, 16);
    f_processor(&im, 5, 0x01000007, 3);
    f_msg(&e, 4, &im);
    enc g = {0};
    f_str(&g, 1, "SIGSEGV");
    f_str(&g, 2, "SEGV_MAPERR");
    f_varint(&g, 3, 0x8);
    f_msg(&e, 6, &g);
    enc p = {0};
    f_str(&p, 1, "\xab\xab\xab\xab\xab\xab");
    f_varint(&p, 2, 4242);
    f_msg(&e, 7, &p);
    arena *ar = arena_new(1 << 20);
    crashreport *r;
    err_info err;
    CHECK_EQ_INT(parse(&r, &e, ar, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.process, FFFD FFFD FFFD FFFD FFFD FFFD);
        CHECK_EQ_STR(r->meta.app_version, FFFD FFFD FFFD FFFD);
        CHECK_EQ_STR(r->meta.build, FFFD FFFD FFFD);
        CHECK(r->meta.os_version != NULL &&
              strstr(r->meta.os_version, "(" FFFD FFFD FFFD FFFD FFFD FFFD FFFD FFFD ")") != NULL);
        CHECK(r->nimages == 1 &&
              strcmp(r->images[0].path, "/Applications/" FFFD ".app/Contents/MacOS/" FFFD) == 0);
        CHECK(r->nthreads == 1 && r->threads[0].nframes == 1 &&
              strcmp(r->threads[0].frames[0].symbol, "caf" FFFD) == 0);
        buf o;
        buf_init(&o);
        crashreport_render_json(&o, r);
        CHECK(utf8_valid((const char *)o.data, o.len));
        CHECK(strstr((const char *)o.data, "\"process\":\"" FFFD) != NULL);
        buf_reset(&o);
        crashreport_render_text(&o, r);
        CHECK(utf8_valid((const char *)o.data, o.len));
        buf_reset(&o);
    } else {
        fprintf(stderr, "plcrash with 0xAB strings: %s\n", err.msg);
    }
    arena_free(ar);
    free(e.p);
#undef FFFD
}

static void every_truncation(void)
{
    enc e = {0};
    full_report(&e);
    size_t ok = 0, bad = 0;
    for (size_t n = 0; n < e.n; n++) {
        arena *a = arena_new(1 << 20);
        crashreport *r = NULL;
        err_info err = {0};
        err_code rc = crashreport_parse(&r, (const char *)e.p, n, a, &err);
        if (rc == ERR_OK) {
            ok++;
            CHECK(r != NULL);
        } else {
            bad++;
            CHECK(r == NULL);
            CHECK(err.msg[0] != '\0');
            CHECK(rc == ERR_INVALID || rc == ERR_UNSUPPORTED);
            if (n >= 8)
                CHECK(strncmp(err.msg, "plcrash report", 14) == 0);
        }
        arena_free(a);
    }
    /* a cut between top-level fields leaves a readable report only once every required
     * message and a frame are in */
    CHECK(bad > e.n / 2);
    CHECK(ok > 0);
    free(e.p);
}

static void expect_error(const enc *e, err_code want, const char *msg)
{
    arena *a = arena_new(64u << 20);
    crashreport *r = NULL;
    err_info err;
    err_code rc = parse(&r, e, a, &err);
    CHECK_EQ_INT(rc, want);
    CHECK(r == NULL);
    if (strstr(err.msg, msg) == NULL) {
        fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err.msg, msg);
        CHECK(strstr(err.msg, msg) != NULL);
    }
    arena_free(a);
}

static void bad_input_names_the_field(void)
{
    enc e = {0};
    /* header problems */
    put(&e, "plcrash", 7);
    expect_error(&e, ERR_INVALID, "plcrash report is truncated");
    put(&e, "\x02", 1);
    expect_error(&e, ERR_UNSUPPORTED, "plcrash report version 2 is not supported");
    free(e.p);

    /* required messages */
    memset(&e, 0, sizeof e);
    put(&e, "plcrash\x01", 8);
    expect_error(&e, ERR_INVALID, "plcrash report: no system_info (field 1)");
    free(e.p);
    memset(&e, 0, sizeof e);
    head(&e);
    expect_error(&e, ERR_INVALID, "plcrash report has no stack frames");

    /* a frame without its pc, in the second thread */
    enc t = {0};
    f_frame(&t, 2, 0x1000, NULL, 0);
    f_msg(&e, 3, &t);
    f_varint(&t, 1, 1);
    f_frame(&t, 2, 0x1000, NULL, 0);
    f_bytes(&t, 2, "", 0);
    f_msg(&e, 3, &t);
    expect_error(&e, ERR_INVALID, "plcrash report: threads[1].frames[1]: no pc (field 3)");
    free(e.p);

    /* a string where a varint belongs */
    memset(&e, 0, sizeof e);
    head(&e);
    f_varint(&t, 1, 0);
    f_str(&t, 3, "yes");
    f_msg(&e, 3, &t);
    expect_error(&e, ERR_INVALID, "plcrash report: threads[0].crashed: wire type 2 at offset");
    free(e.p);

    /* an image without a name; a truncated varint inside an image */
    memset(&e, 0, sizeof e);
    head(&e);
    enc im = {0};
    f_varint(&im, 1, 0x1000);
    f_msg(&e, 4, &im);
    expect_error(&e, ERR_INVALID, "plcrash report: binary_images[0]: no name (field 3)");
    free(e.p);
    memset(&e, 0, sizeof e);
    head(&e);
    put(&e, "\x22\x02\x08\xff", 4); /* binary_images { base_address: <cut> } */
    expect_error(&e, ERR_INVALID, "plcrash report: binary_images[0]: truncated varint at offset");
    free(e.p);

    /* a length past the end of the file at top level, and inside a thread */
    memset(&e, 0, sizeof e);
    head(&e);
    put(&e, "\x1a\x7f\x08\x00", 4);
    expect_error(&e, ERR_INVALID, "plcrash report: threads[0]: length 127 at offset");
    free(e.p);
    memset(&e, 0, sizeof e);
    head(&e);
    put(&e, "\x1a\x04\x12\x09\x18\x01", 6);
    expect_error(&e, ERR_INVALID, "plcrash report: threads[0]: length 9 at offset");
    free(e.p);

    /* a signal without a name, the report UUID of the wrong size */
    memset(&e, 0, sizeof e);
    head_nosig(&e);
    f_frame(&t, 2, 0x1000, NULL, 0);
    f_msg(&e, 3, &t);
    expect_error(&e, ERR_INVALID, "plcrash report: no signal (field 6)");
    enc g = {0};
    f_str(&g, 2, "#0");
    f_msg(&e, 6, &g);
    expect_error(&e, ERR_INVALID, "plcrash report: signal: no name (field 1)");
    free(e.p);
    memset(&e, 0, sizeof e);
    head(&e);
    enc ri = {0};
    f_bytes(&ri, 2, "abc", 3);
    f_msg(&e, 9, &ri);
    expect_error(&e, ERR_INVALID, "plcrash report: report_info.uuid: 3 bytes, want 16");
    free(e.p);
}

static void huge_repeated_counts(void)
{
    /* 4097 threads of one frame each */
    enc e = {0};
    head(&e);
    for (int i = 0; i < 4097; i++) {
        enc t = {0};
        f_varint(&t, 1, (uint64_t)i);
        f_frame(&t, 2, 0x1000, NULL, 0);
        f_msg(&e, 3, &t);
    }
    expect_error(&e, ERR_TOO_LARGE, "plcrash report: threads: more than 4096 threads");
    free(e.p);

    /* 8193 frames in one thread (PLCrashReporter writes at most 512), 65,537 in all */
    memset(&e, 0, sizeof e);
    head(&e);
    enc t = {0};
    for (int i = 0; i < 8193; i++)
        f_frame(&t, 2, 0x1000 + (uint64_t)i, NULL, 0);
    f_msg(&e, 3, &t);
    expect_error(&e, ERR_TOO_LARGE, "plcrash report: threads[0].frames[8192]: more than 8192 frames in one stack");
    free(e.p);
    memset(&e, 0, sizeof e);
    head(&e);
    for (int k = 0; k < 9; k++) {
        for (int i = 0; i < 8000; i++)
            f_frame(&t, 2, 0x1000 + (uint64_t)i, NULL, 0);
        f_msg(&e, 3, &t);
    }
    expect_error(&e, ERR_TOO_LARGE, "plcrash report: threads[8].frames[1536]: more than 65536 frames in the report");
    free(e.p);

    /* registers and mach codes */
    memset(&e, 0, sizeof e);
    head(&e);
    f_frame(&t, 2, 0x1000, NULL, 0);
    for (int i = 0; i < 1025; i++) {
        enc r = {0};
        f_str(&r, 1, "x0");
        f_varint(&r, 2, 1);
        f_msg(&t, 4, &r);
    }
    f_msg(&e, 3, &t);
    expect_error(&e, ERR_TOO_LARGE, "plcrash report: threads[0].registers: more than 1024 registers");
    free(e.p);
    memset(&e, 0, sizeof e);
    head(&e);
    enc g = {0}, mach = {0};
    f_str(&g, 1, "SIGABRT");
    f_varint(&mach, 1, 10);
    for (int i = 0; i < 65; i++)
        f_varint(&mach, 2, 0);
    f_msg(&g, 4, &mach);
    f_msg(&e, 6, &g);
    expect_error(&e, ERR_INVALID, "plcrash report: signal.mach_exception.codes: more than 64 codes");
    free(e.p);

    /* a tiny arena budget ends a big but valid report with too_large, not a crash */
    memset(&e, 0, sizeof e);
    head(&e);
    for (int i = 0; i < 2000; i++)
        f_frame(&t, 2, 0x1000 + (uint64_t)i, NULL, 0);
    f_msg(&e, 3, &t);
    arena *a = arena_new(16 << 10);
    crashreport *r = NULL;
    err_info err;
    CHECK_EQ_INT(parse(&r, &e, a, &err), ERR_TOO_LARGE);
    CHECK(r == NULL);
    arena_free(a);
    free(e.p);
}

static void legacy_and_user_requested(void)
{
    /* a v1.0 report: no machine_info (the legacy architecture decides), no process_info,
     * user_requested (a live report, not a crash), packed mach codes */
    enc e = {0};
    put(&e, "plcrash\x01", 8);
    enc s = {0};
    f_varint(&s, 1, 0);
    f_str(&s, 2, "10.15.7");
    f_varint(&s, 3, 1); /* X86_64 */
    f_varint(&s, 4, 0);
    f_msg(&e, 1, &s);
    enc a = {0};
    f_str(&a, 1, "com.example.Mac");
    f_str(&a, 2, "3");
    f_msg(&e, 2, &a);
    enc t = {0};
    f_frame(&t, 2, 0x10000, NULL, 0);
    f_msg(&e, 3, &t);
    enc g = {0}, mach = {0};
    f_str(&g, 1, "SIGTRAP");
    f_str(&g, 2, "#0");
    f_varint(&mach, 1, 6);
    f_bytes(&mach, 2, "\x01\x96\x01", 3);
    f_msg(&g, 4, &mach);
    f_msg(&e, 6, &g);
    enc ri = {0};
    f_varint(&ri, 1, 1);
    f_msg(&e, 9, &ri);
    arena *ar = arena_new(1 << 20);
    crashreport *r;
    err_info err;
    CHECK_EQ_INT(parse(&r, &e, ar, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.arch, "x86_64");
        CHECK_EQ_STR(r->meta.os_version, "Mac OS X 10.15.7");
        CHECK_EQ_STR(r->meta.app_version, "3");
        CHECK_EQ_STR(r->meta.build, NULL);
        CHECK_EQ_STR(r->meta.date, NULL);
        CHECK_EQ_STR(r->meta.exception_type, "EXC_BREAKPOINT");
        CHECK_EQ_STR(r->meta.exception_codes, "0x0000000000000001, 0x0000000000000096");
        CHECK_EQ_INT(r->kind, CRASHREPORT_KIND_SAMPLE);
        CHECK_EQ_INT(r->threads[0].index, 0);
    }
    arena_free(ar);
    free(e.p);
}

int main(void)
{
    RUN(varint_bounds);
    RUN(reader_bounds);
    RUN(reader_depth);
    RUN(full_report_model);
    RUN(strings_not_utf8);
    RUN(every_truncation);
    RUN(bad_input_names_the_field);
    RUN(huge_repeated_counts);
    RUN(legacy_and_user_requested);
    return harness_done();
}
