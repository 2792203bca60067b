/*
 * test_crashreport_tree - the call-tree formats of common/crashreport: macOS
 * `sample` and spindump text, MetricKit payloads.
 *
 * - The real `sample` reports of ../shared/real-xcode/ parse into the tree they print (every
 *   call-graph line a frame, parents by indentation, counts as given, main thread first).
 * - Our own spindump and MetricKit payload (tests/golden/crashreport/spindump.txt,
 *   metrickit-payload.json, written from Apple's documented field names) parse into golden
 *   models; a payload gives one report per diagnostic with its kind, hang duration and
 *   exception fields.
 * - Bad input: truncated trees, counts that do not add up, indentation that jumps, missing or
 *   overlapping Binary Images give a partial model with the problem named; MetricKit trees
 *   10,000 levels deep get a clear error, a million frames a bounded partial model; every
 *   arena budget gives ERR_OK or ERR_TOO_LARGE, never a crash.
 */
#include <jansson.h>

#include "crashreport/crashreport.h"
#include "harness.h"

static char real_dir[4096], golden_dir[4096];

typedef struct {
    char *data;
    size_t len;
} file_data;

static bool read_file(file_data *out, const char *path)
{
    out->data = NULL;
    out->len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->data = malloc((size_t)n + 1);
    out->len = fread(out->data, 1, (size_t)n, f);
    out->data[out->len] = '\0';
    fclose(f);
    return out->len == (size_t)n;
}

static bool has_error(const crashreport *r, const char *needle)
{
    for (size_t i = 0; i < r->nerrors; i++)
        if (strstr(r->errors[i], needle) != NULL)
            return true;
    return false;
}

/* every frame's parent precedes it, depth = parent's + 1, leaf = no callee */
static void check_tree_shape(const crashreport *r)
{
    CHECK(r->tree);
    for (size_t t = 0; t < r->nthreads; t++) {
        const crashreport_thread *th = &r->threads[t];
        for (size_t i = 0; i < th->nframes; i++) {
            const crashreport_frame *f = &th->frames[i];
            bool has_child = i + 1 < th->nframes && th->frames[i + 1].parent == (int32_t)i;
            CHECK_EQ_INT(f->leaf, !has_child);
            if (f->parent < 0) {
                CHECK_EQ_INT(f->depth, 0);
                continue;
            }
            CHECK(f->parent < (int32_t)i);
            CHECK_EQ_INT(f->depth, th->frames[f->parent].depth + 1);
        }
    }
}

/* ---- sample ---------------------------------------------------------------------------------- */

static void real_sample_multithread(void)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/macsymbolicator-2021-03/Samples/multithread-sample.txt", real_dir);
    file_data fd;
    if (!read_file(&fd, path)) {
        CHECK(!"../shared/real-xcode sample is readable");
        free(fd.data);
        return;
    }
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport *r = NULL;
    CHECK_EQ_INT(crashreport_parse(&r, fd.data, fd.len, a, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(crashreport_format_name(r->format), "sample");
        CHECK_EQ_STR(crashreport_kind_name(r->kind), "hang");
        CHECK(!r->partial);
        CHECK_EQ_INT(r->nerrors, 0);
        CHECK_EQ_INT(r->nthreads, 2);
        CHECK_EQ_U64(r->meta.hang_duration_ms, 3000); /* "Sampling process ... for 3 seconds" */
        CHECK_EQ_STR(r->meta.process, "CrashingAndHangingTest");
        CHECK_EQ_STR(r->meta.arch, "x86_64");
        CHECK_EQ_INT(r->nimages, 120);
        check_tree_shape(r);
        const crashreport_thread *m = &r->threads[0];
        CHECK_EQ_STR(m->queue, "com.apple.main-thread");
        CHECK_EQ_U64(m->sample_count, 2761);
        CHECK_EQ_INT(m->nframes, 7);
        if (m->nframes == 7) {
            CHECK_EQ_STR(m->frames[0].symbol, "start");
            CHECK_EQ_U64(m->frames[0].symbol_offset, 1);
            CHECK_EQ_STR(m->frames[0].image_name, "libdyld.dylib");
            CHECK(m->frames[1].symbol == NULL); /* "???  (in CrashingAndHangingTest)  load address" */
            CHECK_EQ_U64(m->frames[1].addr, 0x101671e30);
            CHECK_EQ_INT(m->frames[1].image, 0);
            CHECK_EQ_INT(m->frames[3].parent, 2);
            CHECK_EQ_U64(m->frames[6].sample_count, 2761);
            CHECK_EQ_STR(m->frames[6].symbol, "__psynch_mutexwait");
            CHECK(m->frames[6].leaf);
        }
        CHECK_EQ_STR(r->threads[1].queue, "com.apple.root.default-qos");
        CHECK_EQ_INT(r->threads[1].nframes, 10);
        /* rendering an unsymbolicated sample gives the text back byte for byte */
        buf o;
        buf_init(&o);
        crashreport_render_text(&o, r);
        CHECK(o.len == fd.len && memcmp(o.data, fd.data, fd.len) == 0);
        buf_reset(&o);
    }
    arena_free(a);
    free(fd.data);
}

static const char SAMPLE_HEAD[] =
    "Analysis of sampling App (pid 1) every 1 millisecond\n"
    "Process:         App [1]\n"
    "Code Type:       ARM-64\n"
    "\n"
    "Call graph:\n";
static const char SAMPLE_IMAGES[] =
    "\n"
    "Binary Images:\n"
    "       0x100000000 -        0x100003fff +App (1.0) <11111111-2222-3333-4444-555555555555> /App\n"
    "       0x180000000 -        0x180ffffff  libsystem_kernel.dylib (1) "
    "<66666666-7777-8888-9999-AAAAAAAAAAAA> /usr/lib/system/libsystem_kernel.dylib\n";

static crashreport *parse_sample_graph(arena *a, const char *graph, const char *images, err_info *err)
{
    buf t;
    buf_init(&t);
    buf_append_str(&t, SAMPLE_HEAD);
    buf_append_str(&t, graph);
    if (images != NULL)
        buf_append_str(&t, images);
    crashreport *r = NULL;
    err_code rc = crashreport_parse(&r, (const char *)t.data, t.len, a, err);
    buf_reset(&t);
    return rc == ERR_OK ? r : NULL;
}

static void sample_bad_input(void)
{
    err_info err = {0};
    arena *a = arena_new(0);
    /* a well-formed tree: no errors, not partial; "+ ! : |" drawing characters read as blanks */
    crashreport *r = parse_sample_graph(a,
        "    10 Thread_1   DispatchQueue_1: com.apple.main-thread  (serial)\n"
        "    + 10 start  (in App) + 4  [0x100000104]\n"
        "    +   7 foo  (in App) + 8  [0x100000208]\n"
        "    +   ! 7 __psynch_mutexwait  (in libsystem_kernel.dylib) + 10  [0x18000000a]\n"
        "    +   3 ???  (in App)  load address 0x100000000 + 0x300  [0x100000300]\n",
        SAMPLE_IMAGES, &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK(!r->partial);
        CHECK_EQ_INT(r->nerrors, 0);
        CHECK_EQ_INT(r->threads[0].nframes, 4);
        CHECK_EQ_INT(r->threads[0].frames[3].parent, 0);
        CHECK_EQ_INT(r->threads[0].frames[2].parent, 1);
        CHECK_EQ_STR(r->meta.arch, "arm64");
        check_tree_shape(r);
    }
    /* callees count more samples than their caller */
    r = parse_sample_graph(a,
        "    10 Thread_1\n"
        "    + 10 start  (in App) + 4  [0x100000104]\n"
        "    +   9 foo  (in App) + 8  [0x100000208]\n"
        "    +   9 bar  (in App) + 8  [0x100000308]\n",
        SAMPLE_IMAGES, &err);
    CHECK(r != NULL && r->partial && has_error(r, "count more samples"));
    /* a dedent to a column no caller has */
    r = parse_sample_graph(a,
        "    10 Thread_1\n"
        "    + 10 start  (in App) + 4  [0x100000104]\n"
        "    +     10 foo  (in App) + 8  [0x100000208]\n"
        "    +   5 bar  (in App) + 8  [0x100000308]\n",
        SAMPLE_IMAGES, &err);
    CHECK(r != NULL && r->partial && has_error(r, "indentation jumps"));
    if (r != NULL)
        check_tree_shape(r);
    /* truncated inside the graph, no Binary Images */
    r = parse_sample_graph(a,
        "    10 Thread_1\n"
        "    + 10 start  (in App) + 4  [0x100000104]\n"
        "    +   10 foo  (in App) + 8  [0x1000", NULL, &err);
    CHECK(r != NULL && r->partial && has_error(r, "truncated") && has_error(r, "unreadable call-graph line"));
    /* overlapping images */
    r = parse_sample_graph(a,
        "    10 Thread_1\n"
        "    + 10 start  (in App) + 4  [0x100000104]\n",
        "\nBinary Images:\n"
        "       0x100000000 -        0x100003fff +App (1.0) <11111111-2222-3333-4444-555555555555> /App\n"
        "       0x100002000 -        0x100005fff  Lib (1.0) <21111111-2222-3333-4444-555555555555> /Lib\n",
        &err);
    CHECK(r != NULL && has_error(r, "Binary Images overlap"));
    /* no frames at all: a clear error */
    r = parse_sample_graph(a, "\n", SAMPLE_IMAGES, &err);
    CHECK(r == NULL);
    CHECK_EQ_INT(err.code, ERR_INVALID);
    CHECK_EQ_STR(err.msg, "sample report has no stack frames");
    arena_free(a);
}

/* 3,000 levels and 200,000 siblings: linear time, arena-bounded memory */
static void sample_deep_and_wide(void)
{
    buf g;
    buf_init(&g);
    buf_append_str(&g, "    1 Thread_1\n");
    for (size_t i = 0; i < 3000; i++) {
        buf_append_str(&g, "    ");
        for (size_t k = 0; k < i; k++)
            buf_putc(&g, ' ');
        buf_append_str(&g, "1 f  (in App) + 1  [0x100000010]\n");
    }
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport *r = parse_sample_graph(a, (const char *)g.data, SAMPLE_IMAGES, &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_INT(r->threads[0].nframes, 3000);
        CHECK_EQ_INT(r->threads[0].frames[2999].depth, 2999);
        CHECK(!r->partial);
    }
    arena_free(a);
    g.len = 0;
    buf_append_str(&g, "    200000 Thread_1\n    + 200000 start  (in App) + 4  [0x100000104]\n");
    for (size_t i = 0; i < 200000; i++)
        buf_append_str(&g, "    +   1 f  (in App) + 1  [0x100000010]\n");
    a = arena_new(0);
    r = parse_sample_graph(a, (const char *)g.data, SAMPLE_IMAGES, &err);
    CHECK(r != NULL && r->threads[0].nframes == 200001 && !r->partial);
    arena_free(a);
    /* a small budget: a clean ERR_TOO_LARGE */
    a = arena_new(1 << 20);
    r = parse_sample_graph(a, (const char *)g.data, SAMPLE_IMAGES, &err);
    CHECK(r == NULL);
    CHECK_EQ_INT(err.code, ERR_TOO_LARGE);
    arena_free(a);
    buf_reset(&g);
}

/* ---- golden models -------------------------------------------------------------------------- */

static void golden_case(const char *name)
{
    char in_path[8192], exp_path[8192];
    snprintf(in_path, sizeof in_path, "%s/%s", golden_dir, name);
    const char *dot = strrchr(name, '.');
    snprintf(exp_path, sizeof exp_path, "%s/%.*s.expected.json", golden_dir, (int)(dot - name), name);
    file_data fd;
    CHECK(read_file(&fd, in_path));
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport **rs = NULL;
    size_t n = 0;
    CHECK_EQ_INT(crashreport_parse_all(&rs, &n, fd.data, fd.len, a, &err), ERR_OK);
    buf o;
    buf_init(&o);
    buf_putc(&o, '[');
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            buf_putc(&o, ',');
        check_tree_shape(rs[i]);
        crashreport_render_json(&o, rs[i]);
    }
    buf_putc(&o, ']');
    json_t *j = json_loadb((const char *)o.data, o.len, 0, NULL);
    CHECK(j != NULL);
    char *pretty = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    const char *update = getenv("UPDATE_GOLDEN");
    if (update != NULL && strcmp(update, "1") == 0) {
        FILE *f = fopen(exp_path, "w");
        CHECK(f != NULL);
        if (f != NULL) {
            fprintf(f, "%s\n", pretty);
            fclose(f);
        }
    } else {
        file_data want;
        CHECK(read_file(&want, exp_path));
        size_t pl = pretty ? strlen(pretty) : 0;
        bool same = pretty != NULL && want.len == pl + 1 && memcmp(want.data, pretty, pl) == 0;
        if (!same)
            fprintf(stderr, "%s: model differs from %s (UPDATE_GOLDEN=1 rewrites it)\n", name, exp_path);
        CHECK(same);
        free(want.data);
    }
    free(pretty);
    json_decref(j);
    buf_reset(&o);
    arena_free(a);
    free(fd.data);
}

static void golden_files(void)
{
    golden_case("spindump.txt");
    golden_case("metrickit-payload.json");
}

/* ---- spindump by hand -------------------------------------------------------------------------- */

static void spindump_by_hand(void)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/spindump.txt", golden_dir);
    file_data fd;
    CHECK(read_file(&fd, path));
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport *r = NULL;
    CHECK_EQ_INT(crashreport_parse(&r, fd.data, fd.len, a, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(crashreport_format_name(r->format), "sample");
        CHECK_EQ_U64(r->meta.hang_duration_ms, 2100);
        CHECK_EQ_STR(r->meta.process, "CrashingAndHangingTest");
        CHECK_EQ_INT(r->nthreads, 2); /* WindowServer's thread is another process: not read */
        CHECK_EQ_INT(r->nimages, 4);
        CHECK_EQ_INT(r->nerrors, 0);
        const crashreport_thread *m = &r->threads[0];
        CHECK_EQ_STR(m->queue, "com.apple.main-thread");
        CHECK_EQ_U64(m->sample_count, 21);
        CHECK_EQ_INT(m->nframes, 6);
        if (m->nframes == 6) {
            CHECK_EQ_INT(m->frames[5].parent, 1); /* "1   ???" back at the second level */
            CHECK_EQ_INT(m->frames[4].image, -1); /* the kernel frame: no image */
            CHECK_EQ_INT(m->frames[2].image, 0);
        }
        CHECK_EQ_STR(r->threads[1].name, "worker");
    }
    arena_free(a);
    free(fd.data);
}

/* ---- MetricKit ----------------------------------------------------------------------------------- */

static void metrickit_payload(void)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/metrickit-payload.json", golden_dir);
    file_data fd;
    CHECK(read_file(&fd, path));
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport **rs = NULL;
    size_t n = 0;
    CHECK_EQ_INT(crashreport_parse_all(&rs, &n, fd.data, fd.len, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        CHECK_EQ_STR(rs[0]->meta.diagnostic, "crash");
        CHECK_EQ_STR(crashreport_kind_name(rs[0]->kind), "crash");
        CHECK_EQ_STR(rs[0]->meta.exception_type, "EXC_BREAKPOINT");
        CHECK_EQ_STR(rs[0]->meta.signal, "SIGTRAP");
        CHECK_EQ_STR(rs[0]->meta.termination_reason, "Namespace SIGNAL, Code 0x5");
        CHECK(rs[0]->threads[0].crashed);
        /* a per-thread stack: a chain, callers first, the crashing frame the leaf */
        const crashreport_thread *t = &rs[0]->threads[0];
        CHECK_EQ_INT(t->nframes, 6);
        if (t->nframes == 6) {
            CHECK_EQ_STR(t->frames[0].image_name, "dyld");
            CHECK_EQ_STR(t->frames[5].image_name, "libswiftCore.dylib");
            CHECK(t->frames[5].leaf);
            CHECK_EQ_U64(t->frames[4].addr, 0x102bc4000 + 25252);
            CHECK_EQ_U64(rs[0]->images[t->frames[4].image].load_addr, 0x102bc4000);
        }
        CHECK_EQ_STR(crashreport_kind_name(rs[1]->kind), "hang");
        CHECK_EQ_U64(rs[1]->meta.hang_duration_ms, 3500);
        CHECK_EQ_STR(rs[1]->meta.exception_detail, "{\"hangDuration\":\"3.5 sec\"}");
        /* the inverted aggregate tree becomes a caller-first tree: dyld > main > viewDidLoad >
         * {kernel 30, pleaseCrash 12} */
        t = &rs[1]->threads[0];
        CHECK_EQ_INT(t->nframes, 5);
        CHECK_EQ_U64(t->sample_count, 42);
        if (t->nframes == 5) {
            CHECK_EQ_U64(t->frames[0].sample_count, 42);
            CHECK_EQ_INT(t->frames[3].parent, 2);
            CHECK_EQ_INT(t->frames[4].parent, 2);
            CHECK_EQ_U64(t->frames[3].sample_count, 30);
            CHECK_EQ_U64(t->frames[4].sample_count, 12);
        }
        CHECK_EQ_STR(rs[2]->meta.diagnostic, "cpu_exception");
        CHECK_EQ_STR(crashreport_kind_name(rs[2]->kind), "sample");
        CHECK(strstr(rs[2]->meta.exception_detail, "\"totalCPUTime\":\"20 sec\"") != NULL);
        CHECK_EQ_STR(rs[3]->meta.diagnostic, "disk_write_exception");
        CHECK(strstr(rs[3]->meta.exception_detail, "\"writesCaused\":\"2,048 MB\"") != NULL);
        for (size_t i = 0; i < n; i++)
            CHECK_EQ_STR(rs[i]->meta.app_version, "1.2");
    }
    /* crashreport_parse gives the first diagnostic and says there are more */
    crashreport *one = NULL;
    CHECK_EQ_INT(crashreport_parse(&one, fd.data, fd.len, a, &err), ERR_OK);
    CHECK(one != NULL && one->meta.diagnostic != NULL && strcmp(one->meta.diagnostic, "crash") == 0 &&
          has_error(one, "holds 4 diagnostics"));
    arena_free(a);
    free(fd.data);
}

static err_code parse_all_str(const char *s, size_t len, size_t budget, crashreport ***rs, size_t *n,
                              arena **a, err_info *err)
{
    *a = arena_new(budget);
    err_clear(err);
    return crashreport_parse_all(rs, n, s, len, *a, err);
}

static void metrickit_bad_input(void)
{
    crashreport **rs;
    size_t n;
    arena *a;
    err_info err;
    static const struct {
        const char *json;
        err_code code;
        const char *msg;
    } CASES[] = {
        {"{\"crashDiagnostics\": 3}", ERR_INVALID, "MetricKit payload: crashDiagnostics must be an array"},
        {"{\"hangDiagnostics\": []}", ERR_INVALID, "MetricKit payload holds no diagnostics"},
        {"{\"hangDiagnostics\": [1]}", ERR_INVALID, "MetricKit payload: hangDiagnostics[0] must be an object"},
        {"{\"hangDiagnostics\": [{\"diagnosticMetaData\": {}}]}", ERR_INVALID,
         "hangDiagnostics[0]: MetricKit hang diagnostic has no callStackTree.callStacks array"},
        {"{\"callStackTree\": {\"callStacks\": [{\"callStackRootFrames\": []}]}}", ERR_INVALID,
         "MetricKit diagnostic has no stack frames"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        err_code rc = parse_all_str(CASES[i].json, strlen(CASES[i].json), 0, &rs, &n, &a, &err);
        CHECK_EQ_INT(rc, CASES[i].code);
        CHECK_EQ_STR(err.msg, CASES[i].msg);
        arena_free(a);
    }
    /* a frame without a binaryUUID keeps its address and no image; odd values are skipped */
    const char *odd = "{\"callStacks\":[{\"callStackRootFrames\":[{\"address\":4096,\"subFrames\":[7,"
                      "{\"binaryUUID\":\"nope\",\"offsetIntoBinaryTextSegment\":-3,\"address\":8192}]}]}]}";
    CHECK_EQ_INT(parse_all_str(odd, strlen(odd), 0, &rs, &n, &a, &err), ERR_OK);
    if (n == 1) {
        CHECK_EQ_INT(rs[0]->threads[0].nframes, 2);
        CHECK_EQ_U64(rs[0]->threads[0].frames[0].addr, 8192);
        CHECK_EQ_U64(rs[0]->threads[0].frames[1].addr, 4096);
        CHECK_EQ_INT(rs[0]->threads[0].frames[1].image, -1);
    }
    arena_free(a);
}

static void metrickit_deep_and_huge(void)
{
    crashreport **rs;
    size_t n;
    arena *a;
    err_info err;
    /* 10,000 levels: beyond jansson's nesting limit, a clear error */
    buf j;
    buf_init(&j);
    buf_append_str(&j, "{\"callStacks\":[{\"callStackRootFrames\":[");
    for (int i = 0; i < 10000; i++)
        buf_append_str(&j, "{\"binaryUUID\":\"11111111-2222-3333-4444-555555555555\","
                           "\"offsetIntoBinaryTextSegment\":16,\"subFrames\":[");
    for (int i = 0; i < 10000; i++)
        buf_append_str(&j, "]}");
    buf_append_str(&j, "]}]}");
    err_code rc = parse_all_str((const char *)j.data, j.len, 0, &rs, &n, &a, &err);
    CHECK_EQ_INT(rc, ERR_INVALID);
    CHECK(strstr(err.msg, "depth") != NULL);
    arena_free(a);
    /* 900 levels: within the limit, a chain of 900 frames */
    j.len = 0;
    buf_append_str(&j, "{\"callStacks\":[{\"callStackRootFrames\":[");
    for (int i = 0; i < 900; i++)
        buf_printf(&j, "{\"binaryUUID\":\"11111111-2222-3333-4444-555555555555\","
                       "\"offsetIntoBinaryTextSegment\":%d,\"subFrames\":[", i * 4);
    for (int i = 0; i < 900; i++)
        buf_append_str(&j, "]}");
    buf_append_str(&j, "]}]}");
    rc = parse_all_str((const char *)j.data, j.len, 0, &rs, &n, &a, &err);
    CHECK_EQ_INT(rc, ERR_OK);
    if (rc == ERR_OK) {
        CHECK_EQ_INT(rs[0]->threads[0].nframes, 900);
        CHECK_EQ_U64(rs[0]->threads[0].frames[0].addr, 899 * 4); /* the outermost caller first */
        CHECK(rs[0]->threads[0].frames[899].leaf);
    }
    arena_free(a);
    /* a million root frames: kept up to the frame bound, marked partial */
    j.len = 0;
    buf_append_str(&j, "{\"callStacks\":[{\"callStackRootFrames\":[");
    for (int i = 0; i < 1000000; i++)
        buf_printf(&j, "%s{\"binaryUUID\":\"11111111-2222-3333-4444-555555555555\","
                       "\"offsetIntoBinaryTextSegment\":%d}", i ? "," : "", i);
    buf_append_str(&j, "]}]}");
    rc = parse_all_str((const char *)j.data, j.len, 0, &rs, &n, &a, &err);
    CHECK_EQ_INT(rc, ERR_OK);
    if (rc == ERR_OK) {
        CHECK(rs[0]->partial);
        CHECK(rs[0]->threads[0].nframes < CRASHREPORT_MAX_TREE_FRAMES);
        CHECK(has_error(rs[0], "too large"));
    }
    arena_free(a);
    buf_reset(&j);
}

/* Every budget: ERR_OK or ERR_TOO_LARGE, never anything else. */
static void tiny_budgets(void)
{
    static const char *const FILES[] = {"spindump.txt", "metrickit-payload.json"};
    for (size_t f = 0; f < sizeof FILES / sizeof FILES[0]; f++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", golden_dir, FILES[f]);
        file_data fd;
        CHECK(read_file(&fd, path));
        size_t too_large = 0, ok = 0;
        for (size_t budget = 16; budget < (size_t)1 << 20; budget = budget * 5 / 4 + 16) {
            crashreport **rs = NULL;
            size_t n = 0;
            arena *a;
            err_info err;
            err_code rc = parse_all_str(fd.data, fd.len, budget, &rs, &n, &a, &err);
            CHECK(rc == ERR_OK || rc == ERR_TOO_LARGE);
            too_large += rc == ERR_TOO_LARGE;
            ok += rc == ERR_OK;
            arena_free(a);
        }
        CHECK(too_large > 0 && ok > 0);
        free(fd.data);
    }
}

int main(void)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    if (src == NULL)
        src = "..";
    snprintf(real_dir, sizeof real_dir, "%s/../shared/real-xcode", src);
    snprintf(golden_dir, sizeof golden_dir, "%s/tests/golden/crashreport", src);
    RUN(real_sample_multithread);
    RUN(sample_bad_input);
    RUN(sample_deep_and_wide);
    RUN(spindump_by_hand);
    RUN(metrickit_payload);
    RUN(metrickit_bad_input);
    RUN(metrickit_deep_and_huge);
    RUN(tiny_budgets);
    RUN(golden_files);
    return harness_done();
}
