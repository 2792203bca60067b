/*
 * test_ingest_sentry - the Sentry intake below HTTP (server/ingest/ingest_sentry.c) and the
 * disk spool (server/ingest/spool.c), without a database: Content-Encoding gzip, zlib and raw
 * deflate, a deflate bomb; items sorted and counted, sessions handed over, the event as the
 * report row with its event_id as the id (from the envelope header, else the event, else a
 * new one); refusals; the spool's order, bound, leftovers of an interrupted write, and a
 * reopen that finds what was there.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/arena.h"
#include "harness.h"
#include "ingest/ingest.h"
#include "ingest/ingest_sentry.h"
#include "ingest/spool.h"

static const char EVENT[] =
    "{\"event_id\":\"AABBCCDD-EEFF-4011-8233-445566778899\",\"level\":\"error\","
    "\"exception\":{\"values\":[{\"type\":\"NSRangeException\",\"value\":\"index 3\"}]},"
    "\"threads\":{\"values\":[{\"id\":0,\"crashed\":true,\"stacktrace\":{\"frames\":["
    "{\"function\":\"main\"},{\"function\":\"-[List item:]\"}]}}]}}";

/* `in` compressed with zlib window bits `wbits` (31 gzip, 15 zlib, -15 raw); malloc'd. */
static unsigned char *deflate_bytes(size_t *out_len, const void *in, size_t n, int wbits)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    deflateInit2(&zs, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&zs, n) + 64;
    unsigned char *out = malloc(cap);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    deflate(&zs, Z_FINISH);
    *out_len = cap - zs.avail_out;
    deflateEnd(&zs);
    return out;
}

static char *envelope_of(const char *header, const char *const *types, const char *const *payloads,
                         size_t n)
{
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    len += (size_t)snprintf(b + len, cap - len, "%s\n", header);
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(b + len, cap - len, "{\"type\":\"%s\",\"length\":%zu}\n%s\n",
                                types[i], strlen(payloads[i]), payloads[i]);
    return b;
}

static err_code prepare(ingest_sentry_result *res, const char *enc, const void *body, size_t n,
                        bool store, arena *a, err_info *err)
{
    ingest_sentry_input in = {enc, body, n, store, 1 << 20, 64 << 10, NULL, 1};
    err_clear(err);
    return ingest_sentry_prepare(res, &in, a, err);
}

static void encodings(void)
{
    static const char *const T[] = {"event"};
    static const char *const P[] = {EVENT};
    char *env = envelope_of("{\"event_id\":\"aabbccddeeff40118233445566778899\"}", T, P, 1);
    static const struct { const char *enc; int wbits; } E[] = {
        {"gzip", 31}, {"deflate", 15}, {"deflate", -15}, {"deflate", 31}, {NULL, 0}, {"identity", 0},
    };
    for (size_t i = 0; i < sizeof E / sizeof E[0]; i++) {
        size_t n = strlen(env);
        unsigned char *z = E[i].wbits ? deflate_bytes(&n, env, n, E[i].wbits) : NULL;
        arena *a = arena_new(0);
        err_info err;
        ingest_sentry_result res;
        CHECK_EQ_INT(prepare(&res, E[i].enc, z ? (void *)z : env, n, false, a, &err), ERR_OK);
        CHECK(res.has_event);
        CHECK_EQ_STR(res.id, "aabbccdd-eeff-4011-8233-445566778899");
        CHECK_EQ_STR(res.event_id, "aabbccddeeff40118233445566778899");
        CHECK_EQ_STR(res.row.format, "sentry");
        /* a gzip'd body is kept as received (smaller than the event here), anything else
         * as the event's bytes; either reads back as the event */
        bool kept = E[i].wbits == 31;
        CHECK_EQ_STR(res.row.content_type,
                     kept ? INGEST_SENTRY_ENVELOPE_TYPE : "application/json");
        CHECK(kept ? res.row.raw == z && res.row.raw_len == n
                   : res.row.raw_len == strlen(EVENT));
        const uint8_t *back;
        size_t back_len;
        CHECK_EQ_INT(ingest_raw_report(&back, &back_len, res.row.raw, res.row.raw_len,
                                       res.row.content_type, a, &err), ERR_OK);
        CHECK(back_len == strlen(EVENT) && memcmp(back, EVENT, back_len) == 0);
        CHECK_EQ_INT(res.decoded_len, strlen(env));
        arena_free(a);
        free(z);
    }
    /* corrupt and truncated bodies, an unknown encoding, a bomb */
    arena *a = arena_new(0);
    err_info err;
    ingest_sentry_result res;
    CHECK_EQ_INT(prepare(&res, "gzip", "\x1f\x8b\x08\x00junkjunk", 12, false, a, &err), ERR_INVALID);
    size_t n = strlen(env);
    unsigned char *z = deflate_bytes(&n, env, n, 31);
    CHECK_EQ_INT(prepare(&res, "gzip", z, n / 2, false, a, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "truncated") != NULL);
    free(z);
    CHECK_EQ_INT(prepare(&res, "br", env, strlen(env), false, a, &err), ERR_UNSUPPORTED);
    size_t big = 64u << 20;
    char *zeros = calloc(1, big);
    z = deflate_bytes(&n, zeros, big, 15);
    CHECK_EQ_INT(prepare(&res, "deflate", z, n, false, a, &err), ERR_TOO_LARGE);
    CHECK(strstr(err.msg, "larger than 1048576 bytes after deflate decoding") != NULL);
    free(z);
    /* the same through gzip, whose trailer states the size (the decoder's first guess) */
    z = deflate_bytes(&n, zeros, big, 31);
    CHECK_EQ_INT(prepare(&res, "gzip", z, n, false, a, &err), ERR_TOO_LARGE);
    CHECK(strstr(err.msg, "larger than 1048576 bytes after gzip decoding") != NULL);
    free(z);
    free(zeros);
    /* a gzip trailer that lies about the size (or the CRC) is corrupt, whatever the guess */
    n = strlen(env);
    z = deflate_bytes(&n, env, n, 31);
    for (int lie = 0; lie < 3; lie++) {
        unsigned char *t = malloc(n);
        memcpy(t, z, n);
        if (lie == 0)
            memcpy(t + n - 4, "\x01\x00\x00\x00", 4);  /* ISIZE 1 */
        else if (lie == 1)
            memcpy(t + n - 4, "\xff\xff\xff\x7f", 4);  /* ISIZE 2 GB */
        else
            t[n - 8] ^= 0xff;                              /* CRC-32 */
        CHECK_EQ_INT(prepare(&res, "gzip", t, n, false, a, &err), ERR_INVALID);
        CHECK(strstr(err.msg, "gzip body is corrupt") != NULL);
        free(t);
    }
    free(z);
    arena_free(a);
    free(env);
}

static void items_and_ids(void)
{
    static const char *const T[] = {"attachment", "event", "session", "sessions", "transaction",
                                    "replay_video", "brand_new"};
    static const char *const P[] = {"log", EVENT, "{\"sid\":\"1\"}", "{\"aggregates\":[]}", "{}",
                                    "v", "x"};
    char *env = envelope_of("{\"dsn\":\"http://k@h/3\"}", T, P, 7);
    arena *a = arena_new(0);
    err_info err;
    ingest_sentry_result res;
    CHECK_EQ_INT(prepare(&res, NULL, env, strlen(env), false, a, &err), ERR_OK);
    CHECK_EQ_STR(res.dsn, "http://k@h/3");
    CHECK_EQ_INT(res.items[INGEST_SENTRY_ITEM_EVENT], 1);
    CHECK_EQ_INT(res.items[INGEST_SENTRY_ITEM_SESSION], 2);
    CHECK_EQ_INT(res.items[INGEST_SENTRY_ITEM_ATTACHMENT], 1);
    CHECK_EQ_INT(res.items[INGEST_SENTRY_ITEM_IGNORED], 2);
    CHECK_EQ_INT(res.items[INGEST_SENTRY_ITEM_UNKNOWN], 1);
    CHECK_EQ_INT(res.nsessions, 2);
    CHECK(!res.sessions[0].aggregate && res.sessions[1].aggregate);
    CHECK_EQ_INT(res.sessions[0].len, strlen("{\"sid\":\"1\"}"));
    /* no event_id in the header: the event's own (dashed, upper case: normalized) */
    CHECK_EQ_STR(res.id, "aabbccdd-eeff-4011-8233-445566778899");
    free(env);
    /* the store endpoint: one bare event; without any event_id a new v4 one */
    static const char NOID[] = "{\"message\":\"hello\"}";
    CHECK_EQ_INT(prepare(&res, NULL, NOID, strlen(NOID), true, a, &err), ERR_OK);
    CHECK(res.has_event && strlen(res.event_id) == 32 && res.id[14] == '4');
    ingest_sentry_result res2;
    CHECK_EQ_INT(prepare(&res2, NULL, NOID, strlen(NOID), true, a, &err), ERR_OK);
    CHECK(strcmp(res.id, res2.id) != 0);
    /* sessions only: fine, no event */
    static const char *const ST[] = {"session"};
    static const char *const SP[] = {"{\"sid\":\"2\"}"};
    env = envelope_of("{}", ST, SP, 1);
    CHECK_EQ_INT(prepare(&res, NULL, env, strlen(env), false, a, &err), ERR_OK);
    CHECK(!res.has_event && res.nsessions == 1);
    free(env);
    /* refusals */
    static const char *const TT[] = {"event", "event"};
    static const char *const PP[] = {EVENT, EVENT};
    env = envelope_of("{}", TT, PP, 2);
    CHECK_EQ_INT(prepare(&res, NULL, env, strlen(env), false, a, &err), ERR_INVALID);
    CHECK_EQ_STR(err.msg, "envelope holds more than one event item");
    free(env);
    env = envelope_of("{\"event_id\":\"xyz\"}", TT, PP, 1);
    CHECK_EQ_INT(prepare(&res, NULL, env, strlen(env), false, a, &err), ERR_INVALID);
    CHECK_EQ_STR(err.msg, "event_id 'xyz' is not a UUID (32 hex digits)");
    free(env);
    static const char *const BAD[] = {"{\"debug_meta\":{}}"};
    env = envelope_of("{\"dsn\":\"http://k@h/3\"}", TT, BAD, 1);
    CHECK_EQ_INT(prepare(&res, NULL, env, strlen(env), false, a, &err), ERR_INVALID);
    CHECK(strncmp(err.msg, "event: ", 7) == 0);
    free(env);
    /* a framing error after a readable header: the dsn is still known */
    static const char TRUNC[] = "{\"dsn\":\"http://k@h/3\"}\n{\"type\":\"event\",\"length\":99}\n{}";
    CHECK_EQ_INT(prepare(&res, NULL, TRUNC, strlen(TRUNC), false, a, &err), ERR_INVALID);
    CHECK_EQ_STR(res.dsn, "http://k@h/3");
    /* an event over max_event_bytes (64 KiB here) */
    char *huge = malloc(100000);
    int k = snprintf(huge, 100000, "{\"message\":\"");
    memset(huge + k, 'x', 80000);
    strcpy(huge + k + 80000, "\"}");
    CHECK_EQ_INT(prepare(&res, NULL, huge, strlen(huge), true, a, &err), ERR_TOO_LARGE);
    free(huge);
    arena_free(a);
}

static size_t files_in(const char *dir, const char *suffix)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, suffix) != NULL;
    if (d)
        closedir(d);
    return n;
}

static void spool_order_bound_reopen(void)
{
    char dir[] = "/tmp/stacksift-test-spool.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/a/spool", dir); /* created with its parents */
    spool *s;
    err_info err = {0};
    CHECK_EQ_INT(spool_open(&s, sub, 1000, &err), ERR_OK);
    char body[300];
    for (int i = 0; i < 3; i++) {
        memset(body, 'a' + i, sizeof body);
        CHECK_EQ_INT(spool_put(s, 7 + i, i == 1 ? "store" : "envelope", (uint8_t *)body,
                               sizeof body, &err), ERR_OK);
    }
    /* the fourth would pass 1000 bytes: refused, nothing written */
    CHECK_EQ_INT(spool_put(s, 1, "envelope", (uint8_t *)body, sizeof body, &err), ERR_BUSY);
    CHECK(strstr(err.msg, "spool is full") != NULL);
    CHECK_EQ_INT(files_in(sub, ".spool"), 3);
    uint64_t entries, bytes;
    spool_stats(s, &entries, &bytes);
    CHECK_EQ_INT(entries, 3);
    spool_close(s);
    /* an interrupted write's leftover goes at open; the entries are found again */
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s/00000000000000ff.tmp", sub);
    FILE *f = fopen(tmp, "w");
    fputs("half", f);
    fclose(f);
    CHECK_EQ_INT(spool_open(&s, sub, 1000, &err), ERR_OK);
    CHECK_EQ_INT(files_in(sub, ".tmp"), 0);
    spool_stats(s, &entries, &bytes);
    CHECK_EQ_INT(entries, 3);
    CHECK_EQ_U64(bytes, 900 + 29 + 26 + 29); /* bodies + header lines */
    /* oldest first, each as written */
    for (int i = 0; i < 3; i++) {
        arena *a = arena_new(0);
        spool_entry e;
        CHECK_EQ_INT(spool_oldest(&e, s, a, &err), ERR_OK);
        CHECK_EQ_INT(e.project_id, 7 + i);
        CHECK_EQ_STR(e.kind, i == 1 ? "store" : "envelope");
        CHECK_EQ_INT(e.len, 300);
        CHECK(e.body[0] == 'a' + i && e.body[299] == 'a' + i);
        CHECK_EQ_INT(spool_remove(s, e.seq, &err), ERR_OK);
        arena_free(a);
    }
    arena *a = arena_new(0);
    spool_entry e;
    CHECK_EQ_INT(spool_oldest(&e, s, a, &err), ERR_NOT_FOUND);
    arena_free(a);
    spool_stats(s, &entries, &bytes);
    CHECK(entries == 0 && bytes == 0);
    /* room again; numbering goes on after the highest entry seen */
    CHECK_EQ_INT(spool_put(s, 1, "envelope", (uint8_t *)"x", 1, &err), ERR_OK);
    a = arena_new(0);
    CHECK_EQ_INT(spool_oldest(&e, s, a, &err), ERR_OK);
    CHECK(e.seq >= 3);
    spool_remove(s, e.seq, &err);
    arena_free(a);
    /* a file that is no entry: ERR_INVALID with its number, so the replay can drop it */
    char bogus[300];
    snprintf(bogus, sizeof bogus, "%s/0000000000000001.spool", sub);
    f = fopen(bogus, "w");
    fputs("garbage without a header line", f);
    fclose(f);
    a = arena_new(0);
    CHECK_EQ_INT(spool_oldest(&e, s, a, &err), ERR_INVALID);
    CHECK_EQ_U64(e.seq, 1);
    arena_free(a);
    unlink(bogus);
    spool_close(s);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    RUN(encodings);
    RUN(items_and_ids);
    RUN(spool_order_bound_reopen);
    return harness_done();
}
