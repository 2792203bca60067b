/* Tests for common/base: arena budgets, buffers, JSON escaping, errors, file mapping, the
 * worker pool. */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/jsonw.h"
#include "base/bytes.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/utf8.h"
#include "base/workpool.h"
#include "harness.h"

static void arena_enforces_budget(void)
{
    err_info err = {0};
    arena *a = arena_new(1000);
    CHECK(arena_alloc(a, 500, &err) != NULL);
    CHECK(arena_alloc(a, 600, &err) == NULL);
    CHECK_EQ_INT(err.code, ERR_TOO_LARGE);
    CHECK(arena_alloc_array(a, SIZE_MAX / 2, 4, &err) == NULL);
    arena_free(a);
}

static int deferred_order[3], deferred_n;
static void record(void *p)
{
    deferred_order[deferred_n++] = (int)(intptr_t)p;
}

static void arena_runs_defers_lifo(void)
{
    arena *a = arena_new(0);
    deferred_n = 0;
    arena_defer(a, record, (void *)1);
    arena_defer(a, record, (void *)2);
    arena_free(a);
    CHECK_EQ_INT(deferred_n, 2);
    CHECK_EQ_INT(deferred_order[0], 2);
    CHECK_EQ_INT(deferred_order[1], 1);
}

static void arena_grow_keeps_contents(void)
{
    err_info err = {0};
    arena *a = arena_new(0);
    char *p = arena_alloc(a, 4, &err);
    memcpy(p, "abc", 4);
    char *q = arena_grow(a, p, 4, 100000, &err);
    CHECK_EQ_STR(q, "abc");
    CHECK_EQ_INT(q[99999], 0);
    char *s = arena_sprintf(a, &err, "%s-%d", "x", 42);
    CHECK_EQ_STR(s, "x-42");
    arena_free(a);
}

/* arena_grow_uninit keeps what was there, in place (the last allocation) and when it moves;
 * arena_grow zeroes the new part in both cases, over memory that held other bytes before. */
static void arena_grow_uninit_keeps_contents(void)
{
    err_info err = {0};
    arena *a = arena_new(0);
    char *p = arena_alloc_uninit(a, 16, &err);
    memcpy(p, "0123456789abcde", 16);
    char *q = arena_grow_uninit(a, p, 16, 64, &err);      /* in place */
    CHECK(q == p);
    CHECK_EQ_STR(q, "0123456789abcde");
    char *other = arena_strndup(a, "xyz", 3, &err);       /* q is no longer the last */
    CHECK_EQ_STR(other, "xyz");
    char *r = arena_grow_uninit(a, q, 64, 200000, &err);  /* moves */
    CHECK(r != q);
    CHECK_EQ_STR(r, "0123456789abcde");
    memset(r, 'z', 200000);
    arena_free(a);
    a = arena_new(0);
    char *z = arena_alloc_uninit(a, 32, &err);
    memset(z, 'z', 32);
    char *y = arena_strndup(a, "y", 1, &err);             /* z is not the last: grow moves it */
    char *g = arena_grow(a, z, 32, 48, &err);
    CHECK(g != z);
    CHECK(g[0] == 'z' && g[31] == 'z');
    for (int i = 32; i < 48; i++)
        CHECK_EQ_INT(g[i], 0);
    CHECK_EQ_STR(y, "y");
    arena_free(a);
}

static void json_string_escapes(void)
{
    buf b;
    buf_init(&b);
    buf_append_json_str(&b, "a\"b\\\n\x01\xff\xc3\xa9", 9);
    CHECK_EQ_STR((char *)b.data, "\"a\\\"b\\\\\\n\\u0001\\u00ff\xc3\xa9\"");
    buf_reset(&b);
    /* every byte value at every place of a 20-byte string, eight at a time or one by one: the
     * byte escaped as it is alone, the rest as they are */
    int bad = 0;
    for (unsigned c = 0; c < 256; c++)
        for (int at = 0; at < 20; at++) {
            char in[20], esc[8], want[64];
            memset(in, 'x', sizeof in);
            in[at] = (char)c;
            if (c == '"' || c == '\\')
                snprintf(esc, sizeof esc, "\\%c", c);
            else if (c == '\n' || c == '\t' || c == '\r')
                snprintf(esc, sizeof esc, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
            else if (c < 0x20 || c >= 0x80)
                snprintf(esc, sizeof esc, "\\u%04x", c);
            else
                snprintf(esc, sizeof esc, "%c", c);
            snprintf(want, sizeof want, "\"%.*s%s%.*s\"", at, in, esc, 19 - at, in + at + 1);
            buf_init(&b);
            buf_append_json_str(&b, in, sizeof in);
            bad += strcmp((char *)b.data, want) != 0;
            buf_reset(&b);
        }
    CHECK_EQ_INT(bad, 0);
}

/* The literal-key forms write what jsonw_key and jsonw_k* write, commas included, also when a
 * key is the first write into an empty buffer (the comma slot is written, then not kept). */
static void jsonw_literal_keys_match(void)
{
    buf a, b;
    buf_init(&a);
    buf_init(&b);
    jsonw wa, wb;
    jsonw_init(&wa, &a);
    jsonw_init(&wb, &b);
    jsonw_object_begin(&wa);
    jsonw_object_begin(&wb);
    jsonw_key(&wa, "first");
    jsonw_key_lit(&wb, "first");
    jsonw_object_begin(&wa);
    jsonw_object_begin(&wb);
    jsonw_object_end(&wa);
    jsonw_object_end(&wb);
    jsonw_kstr(&wa, "s", "x");
    jsonw_kstr_lit(&wb, "s", "x");
    jsonw_kint(&wa, "i", -1);
    jsonw_kint_lit(&wb, "i", -1);
    jsonw_kuint(&wa, "u", 7);
    jsonw_kuint_lit(&wb, "u", 7);
    jsonw_kbool(&wa, "b", false);
    jsonw_kbool_lit(&wb, "b", false);
    jsonw_khex(&wa, "h", 0xabc);
    jsonw_khex_lit(&wb, "h", 0xabc);
    jsonw_kraw(&wa, "r", "[1]");
    jsonw_kraw_lit(&wb, "r", "[1]");
    for (int i = 0; i < 200; i++) {   /* through several of the buffer's doublings */
        jsonw_key(&wa, "a_longer_key_name");
        jsonw_int(&wa, i);
        jsonw_key_lit(&wb, "a_longer_key_name");
        jsonw_int(&wb, i);
    }
    jsonw_object_end(&wa);
    jsonw_object_end(&wb);
    CHECK_EQ_INT(a.len, b.len);
    CHECK_EQ_STR((const char *)b.data, (const char *)a.data);
    const char *start = "{\"first\":{},\"s\":\"x\",\"i\":-1,";
    CHECK(strncmp((const char *)b.data, start, strlen(start)) == 0);
    buf_reset(&a);
    buf_reset(&b);
}

static void jsonw_places_commas_and_nulls(void)
{
    buf b;
    buf_init(&b);
    jsonw w;
    jsonw_init(&w, &b);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "id", "a\"b");
    jsonw_kstr(&w, "none", NULL);
    jsonw_kint(&w, "n", -3);
    jsonw_key(&w, "list");
    jsonw_array_begin(&w);
    jsonw_uint(&w, 18446744073709551615u);
    jsonw_hex(&w, 0x1f);
    jsonw_object_begin(&w);
    jsonw_object_end(&w);
    jsonw_array_begin(&w);
    jsonw_array_end(&w);
    jsonw_raw(&w, "{\"x\":[1]}");
    jsonw_raw(&w, NULL);
    jsonw_array_end(&w);
    jsonw_kbool(&w, "ok", true);
    jsonw_knull(&w, "z");
    jsonw_kint(&w, "k\"q", INT64_MIN);
    jsonw_kuint(&w, "zero", 0);
    jsonw_object_end(&w);
    CHECK_EQ_STR((const char *)b.data,
                 "{\"id\":\"a\\\"b\",\"none\":null,\"n\":-3,\"list\":[18446744073709551615,"
                 "\"0x1f\",{},[],{\"x\":[1]},null],\"ok\":true,\"z\":null,"
                 "\"k\\\"q\":-9223372036854775808,\"zero\":0}");
    CHECK_EQ_INT(w.depth, 0);
    buf_reset(&b);
    /* a top-level scalar, then a second writer appending to the same buffer */
    jsonw_init(&w, &b);
    jsonw_strn(&w, "abc", 2);
    CHECK_EQ_STR((const char *)b.data, "\"ab\"");
    buf_reset(&b);
}

static void err_formats_and_names(void)
{
    err_info err = {0};
    CHECK_EQ_INT(err_set(&err, ERR_INVALID, "bad %s", "magic"), ERR_INVALID);
    err_prefix(&err, "slice %d", 2);
    CHECK_EQ_STR(err.msg, "slice 2: bad magic");
    CHECK_EQ_STR(err_name(ERR_TOO_LARGE), "too_large");
    CHECK_EQ_STR(err_name(ERR_STORE), "store_unavailable");
}

static void hex_uuid_formats_both_cases(void)
{
    const uint8_t u[16] = {0x6a, 0x1f, 0xd8, 0xc2, 0xe4, 0xb0, 0x3b, 0x7a,
                           0x9c, 0x1d, 0x2e, 0x3f, 0x40, 0x51, 0x62, 0x73};
    char s[37];
    hex_uuid_format(s, u, true);
    CHECK_EQ_STR(s, "6A1FD8C2-E4B0-3B7A-9C1D-2E3F40516273");
    hex_uuid_format(s, u, false);
    CHECK_EQ_STR(s, "6a1fd8c2-e4b0-3b7a-9c1d-2e3f40516273");
}

static void utf8_checks_and_repairs(void)
{
    CHECK(utf8_valid("", 0));
    CHECK(utf8_valid("caf\xc3\xa9 \xf0\x9f\x98\x80", 10));
    static const char *const BAD[] = {"\xff", "\xc3\x28", "\xc0\xaf", "\xed\xa0\x80",
                                      "\xf4\x90\x80\x80", "\xe2\x82", "\x80"};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++)
        CHECK(!utf8_valid(BAD[i], strlen(BAD[i])));
    char out[16];
    CHECK_EQ_STR(utf8_repair(out, sizeof out, "a\xff" "b"), "a\xef\xbf\xbd" "b");
    CHECK_EQ_STR(utf8_repair(out, sizeof out, "\xc3\xa9\xc3"), "\xc3\xa9\xef\xbf\xbd");
    /* cut at a character boundary: 5 x U+FFFD need 15 bytes + NUL; 4 of them fit in 13 */
    CHECK_EQ_STR(utf8_repair(out, 13, "\xff\xff\xff\xff\xff"),
                 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(utf8_valid(out, strlen(out)));
    /* encode: each length, read back as one valid sequence of that length */
    static const unsigned CP[] = {0x41, 0xE9, 0x20AC, 0x1F600, 0x10FFFF};
    for (size_t i = 0; i < sizeof CP / sizeof CP[0]; i++) {
        char enc[4];
        size_t n = utf8_encode(enc, CP[i]);
        CHECK_EQ_INT(n, i < 3 ? i + 1 : 4);
        CHECK_EQ_INT(utf8_seq_len(enc, n), n);
    }
    char euro[4];
    CHECK(utf8_encode(euro, 0x20AC) == 3 && memcmp(euro, "\xe2\x82\xac", 3) == 0);
}

/* utf8_sanitize: valid text is the input itself; each invalid sequence (its maximal
 * subpart) becomes one U+FFFD, as Python's bytes.decode("utf-8", "replace") gives it. */
static void utf8_sanitize_replaces_maximal_subparts(void)
{
    arena *a = arena_new(1 << 20);
    err_info err = {0};
    size_t n = 0;
    static const char ok[] = "caf\xc3\xa9 plain ASCII longer than eight bytes \xf0\x9f\x98\x80";
    CHECK(utf8_sanitize(&n, ok, sizeof ok - 1, a, &err) == ok); /* not copied */
    CHECK_EQ_INT(n, sizeof ok - 1);
#define FFFD "\xef\xbf\xbd"
    static const struct {
        const char *in, *out;
    } CASES[] = {
        {"a\xab\xab" "b", "a" FFFD FFFD "b"},  /* heap garbage: one each */
        {"\xe2\x82", FFFD},                     /* a truncated sequence: one */
        {"\xf0\x9f\x98" "x", FFFD "x"},
        {"\xe0\xa0", FFFD},
        {"\xf0\x80\x80", FFFD FFFD FFFD},       /* overlong: F0 80 is no prefix */
        {"\xed\xa0\x80", FFFD FFFD FFFD},       /* a surrogate */
        {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD}, /* past U+10FFFF */
        {"\xc0\xaf", FFFD FFFD},
        {"\xc3(", FFFD "("},
        {"\xf1\x80\x80\xe2\x82\xac", FFFD "\xe2\x82\xac"},
        {"12345678\xff", "12345678" FFFD},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const char *got = utf8_sanitize(&n, CASES[i].in, strlen(CASES[i].in), a, &err);
        CHECK(got != NULL && got != CASES[i].in);
        if (got != NULL) {
            CHECK_EQ_STR(got, CASES[i].out);
            CHECK_EQ_INT(n, strlen(CASES[i].out));
        }
        char small[64];
        CHECK_EQ_STR(utf8_repair(small, sizeof small, CASES[i].in), CASES[i].out);
    }
#undef FFFD
    /* every 1-, 2- and 3-byte input comes out valid; valid ones unchanged */
    unsigned char in[3];
    for (unsigned v = 0; v < 1u << 24; v += 7) {
        in[0] = (unsigned char)(v >> 16), in[1] = (unsigned char)(v >> 8), in[2] = (unsigned char)v;
        for (size_t len = 1; len <= 3; len++) {
            const char *got = utf8_sanitize(&n, (const char *)in, len, a, &err);
            if (got == NULL || !utf8_valid(got, n) ||
                (utf8_valid((const char *)in, len) != (got == (const char *)in))) {
                CHECK(!"utf8_sanitize output");
                v = 1u << 24;
                break;
            }
        }
        if ((v & 0xffff) < 7)
            arena_free(a), a = arena_new(1 << 20);
    }
    /* over the budget: NULL and ERR_TOO_LARGE */
    arena *tiny = arena_new(64);
    char big[200];
    memset(big, 0xab, sizeof big);
    CHECK(utf8_sanitize(&n, big, sizeof big, tiny, &err) == NULL);
    CHECK_EQ_INT(err.code, ERR_TOO_LARGE);
    arena_free(tiny);
    arena_free(a);
}

static void map_missing_file_is_not_found(void)
{
    err_info err = {0};
    bytes b;
    CHECK_EQ_INT(bytes_map_file(&b, "/nonexistent/stacksift", &err), ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "/nonexistent/stacksift") != NULL);
    CHECK_EQ_INT(bytes_map_file(&b, "/", &err), ERR_IO);
}

/* workpool: every thread runs with its own index, a long workpool_wait ends at once on stop,
 * workpool_wake ends a wait without stopping, join waits for every function to return. */
typedef struct {
    atomic_uint started, woken, finished;
    atomic_uint seen_mask;
} wp_probe;

static void wp_body(workpool *wp, unsigned index, void *ctx)
{
    wp_probe *p = ctx;
    atomic_fetch_or(&p->seen_mask, 1u << index);
    atomic_fetch_add(&p->started, 1);
    workpool_wait(wp, 60000);           /* ended by workpool_wake below */
    if (!workpool_stopping(wp))
        atomic_fetch_add(&p->woken, 1);
    while (!workpool_stopping(wp))
        workpool_wait(wp, 60000);       /* ended by workpool_stop */
    atomic_fetch_add(&p->finished, 1);
}

static void workpool_runs_wakes_and_stops(void)
{
    wp_probe p = {0};
    workpool *wp = NULL;
    err_info err = {0};
    CHECK_EQ_INT(workpool_start(&wp, 3, wp_body, &p, &err), ERR_OK);
    struct timespec nap = {0, 1000000L};
    for (int i = 0; i < 5000 && atomic_load(&p.started) < 3; i++)
        nanosleep(&nap, NULL);
    CHECK_EQ_INT(atomic_load(&p.started), 3);
    CHECK_EQ_INT(atomic_load(&p.seen_mask), 7);
    CHECK(!workpool_stopping(wp));
    workpool_wake(wp);
    for (int i = 0; i < 5000 && atomic_load(&p.woken) < 3; i++)
        nanosleep(&nap, NULL);
    CHECK_EQ_INT(atomic_load(&p.woken), 3);
    CHECK_EQ_INT(atomic_load(&p.finished), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    workpool_join(wp);                  /* stops, then waits: far sooner than the 60 s waits */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_EQ_INT(atomic_load(&p.finished), 3);
    CHECK(t1.tv_sec - t0.tv_sec < 5);
    CHECK(workpool_stopping(wp));
    workpool_join(wp);                  /* twice is fine */
    workpool_free(wp);
    workpool_free(NULL);
    workpool *none = NULL;              /* no threads: a pool that only stops */
    CHECK_EQ_INT(workpool_start(&none, 0, wp_body, &p, &err), ERR_OK);
    workpool_free(none);
}

/* workpool_post ends a workpool_doze (and a doze whose `seen` is stale returns at once), and
 * leaves a workpool_wait alone. */
typedef struct {
    atomic_uint phase;      /* the thread's progress */
    atomic_uint go;         /* the test's: the thread may go on */
    atomic_uint wait_ended; /* the plain wait ended while not stopping */
} doze_probe;

static void spin_until(atomic_uint *v, unsigned want)
{
    struct timespec nap = {0, 1000000L};
    for (int i = 0; i < 10000 && atomic_load(v) < want; i++)
        nanosleep(&nap, NULL);
}

static void doze_body(workpool *wp, unsigned index, void *ctx)
{
    (void)index;
    doze_probe *p = ctx;
    atomic_store(&p->phase, 1);
    workpool_wait(wp, 60000);           /* a post leaves it; workpool_wake ends it */
    atomic_store(&p->wait_ended, 1);
    unsigned long seen = workpool_posted(wp);
    atomic_store(&p->phase, 2);
    workpool_doze(wp, 60000, seen);     /* ended by the test's post */
    seen = workpool_posted(wp);
    atomic_store(&p->phase, 3);
    spin_until(&p->go, 1);              /* the test posts after `seen` was read */
    workpool_doze(wp, 60000, seen);     /* returns at once: a post came since `seen` */
    atomic_store(&p->phase, 4);
    while (!workpool_stopping(wp))
        workpool_wait(wp, 60000);
}

static void workpool_post_ends_dozes_only(void)
{
    doze_probe p = {0};
    workpool *wp = NULL;
    err_info err = {0};
    struct timespec t0, t1, settle = {0, 50000000L};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ_INT(workpool_start(&wp, 1, doze_body, &p, &err), ERR_OK);
    spin_until(&p.phase, 1);
    nanosleep(&settle, NULL);
    workpool_post(wp);
    nanosleep(&settle, NULL);
    CHECK_EQ_INT(atomic_load(&p.wait_ended), 0);
    workpool_wake(wp);
    spin_until(&p.phase, 2);
    CHECK_EQ_INT(atomic_load(&p.phase), 2);
    nanosleep(&settle, NULL);           /* most likely dozing by now; if not, the stale `seen` */
    workpool_post(wp);
    spin_until(&p.phase, 3);
    CHECK_EQ_INT(atomic_load(&p.phase), 3);
    workpool_post(wp);
    atomic_store(&p.go, 1);
    spin_until(&p.phase, 4);
    CHECK_EQ_INT(atomic_load(&p.phase), 4);
    workpool_free(wp);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(t1.tv_sec - t0.tv_sec < 30);  /* no 60 s sleep ran out */
    workpool_post(NULL);                /* a no-op */
}

int main(void)
{
    RUN(arena_enforces_budget);
    RUN(arena_runs_defers_lifo);
    RUN(arena_grow_keeps_contents);
    RUN(arena_grow_uninit_keeps_contents);
    RUN(json_string_escapes);
    RUN(jsonw_places_commas_and_nulls);
    RUN(jsonw_literal_keys_match);
    RUN(err_formats_and_names);
    RUN(utf8_checks_and_repairs);
    RUN(utf8_sanitize_replaces_maximal_subparts);
    RUN(map_missing_file_is_not_found);
    RUN(workpool_runs_wakes_and_stops);
    RUN(workpool_post_ends_dozes_only);
    RUN(hex_uuid_formats_both_cases);
    return harness_done();
}
