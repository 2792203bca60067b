/*
 * test_envelope - Sentry envelope framing (common/envelope): items with and without
 * "length", trailing newlines, binary payloads, unknown types; every framing error with its
 * message; hostile input (10,000 items, a length past the end, 10,000-deep nesting, huge
 * header lines); every truncation and random mutations of a valid envelope give an envelope
 * or a clean error.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "envelope/envelope.h"
#include "harness.h"

static err_code parse(envelope **e, arena **a, const char *s, size_t n, const envelope_limits *lim,
                      err_info *err)
{
    *a = arena_new(0);
    err_clear(err);
    return envelope_parse(e, s, n, lim, *a, err);
}

static bool payload_is(const envelope_item *it, const char *s)
{
    return it->payload_len == strlen(s) && memcmp(it->payload, s, it->payload_len) == 0;
}

static const char SAMPLE[] =
    "{\"event_id\":\"9ec79c33ec9942ab8353589fcb2e04dc\",\"dsn\":\"http://k@h/1\","
    "\"sent_at\":\"2026-01-01T00:00:00Z\"}\n"
    "{\"type\":\"event\",\"length\":20,\"content_type\":\"application/json\"}\n"
    "{\"message\":\"a\\nb\"}  \n"
    "{\"type\":\"session\"}\n"
    "{\"sid\":\"1\",\"status\":\"ok\"}\n"
    "{\"type\":\"attachment\",\"length\":5,\"filename\":\"log.txt\","
    "\"attachment_type\":\"event.attachment\"}\n"
    "a\nb\0c\n"
    "{\"type\":\"replay_video\",\"length\":0}\n"
    "\n";

static void items_with_and_without_length(void)
{
    envelope *e;
    arena *a;
    err_info err;
    CHECK_EQ_INT(parse(&e, &a, SAMPLE, sizeof SAMPLE - 1, NULL, &err), ERR_OK);
    if (e != NULL) {
        CHECK_EQ_STR(e->event_id, "9ec79c33ec9942ab8353589fcb2e04dc");
        CHECK_EQ_STR(e->dsn, "http://k@h/1");
        CHECK_EQ_INT(e->nitems, 4);
        CHECK_EQ_STR(e->items[0].type, "event");
        CHECK_EQ_STR(e->items[0].content_type, "application/json");
        CHECK(payload_is(&e->items[0], "{\"message\":\"a\\nb\"}  "));
        CHECK_EQ_STR(e->items[1].type, "session");
        CHECK(payload_is(&e->items[1], "{\"sid\":\"1\",\"status\":\"ok\"}"));
        CHECK_EQ_STR(e->items[2].type, "attachment");
        CHECK_EQ_STR(e->items[2].filename, "log.txt");
        CHECK_EQ_STR(e->items[2].attachment_type, "event.attachment");
        CHECK_EQ_INT(e->items[2].payload_len, 5);
        CHECK(memcmp(e->items[2].payload, "a\nb\0c", 5) == 0); /* binary, newlines inside */
        CHECK_EQ_STR(e->items[3].type, "replay_video");      /* unknown types are items */
        CHECK_EQ_INT(e->items[3].payload_len, 0);
    }
    arena_free(a);

    /* no trailing newline; a length-less payload at the very end; header only */
    static const char *const OK_CASES[] = {
        "{}\n{\"type\":\"event\",\"length\":2}\n{}",
        "{}\n{\"type\":\"event\"}\n{}",
        "{}\n{\"type\":\"event\"}\n{}\n",
        "{}",
        "{}\n",
        "{}\n{\"type\":\"event\",\"length\":2}\r\n{}\r\n{\"type\":\"session\"}\n{}",
    };
    static const size_t OK_ITEMS[] = {1, 1, 1, 0, 0, 2};
    for (size_t i = 0; i < sizeof OK_CASES / sizeof OK_CASES[0]; i++) {
        CHECK_EQ_INT(parse(&e, &a, OK_CASES[i], strlen(OK_CASES[i]), NULL, &err), ERR_OK);
        if (e != NULL) {
            CHECK_EQ_INT(e->nitems, OK_ITEMS[i]);
            if (e->nitems > 0)
                CHECK(payload_is(&e->items[0], "{}") || payload_is(&e->items[0], "{}\r"));
        }
        arena_free(a);
    }
}

static void expect_error(const char *s, size_t n, const envelope_limits *lim, err_code code,
                         const char *msg)
{
    envelope *e = NULL;
    arena *a;
    err_info err;
    CHECK_EQ_INT(parse(&e, &a, s, n, lim, &err), code);
    CHECK(e == NULL);
    if (strcmp(err.msg, msg) != 0)
        fprintf(stderr, "input %.60s: message %s\n", s, err.msg);
    CHECK_EQ_STR(err.msg, msg);
    arena_free(a);
}

#define EXPECT(s, code, msg) expect_error(s, strlen(s), NULL, code, msg)

static void framing_errors(void)
{
    EXPECT("", ERR_INVALID, "envelope is empty");
    EXPECT("\n{\"type\":\"event\"}\n{}", ERR_INVALID,
           "envelope header is not valid JSON: '[' or '{' expected near end of file");
    EXPECT("[1]\n", ERR_INVALID, "envelope header is not a JSON object");
    EXPECT("{}\n{\"length\":2}\n{}", ERR_INVALID, "item 0 header has no \"type\"");
    EXPECT("{}\n{\"type\":\"\"}\n{}", ERR_INVALID, "item 0 header has no \"type\"");
    EXPECT("{}\n{\"type\":\"event\",\"length\":9999999999}\n{}", ERR_INVALID,
           "item 0: length 9999999999 runs past the end of the envelope (2 bytes left)");
    EXPECT("{}\n{\"type\":\"event\",\"length\":3}\n{}", ERR_INVALID,
           "item 0: length 3 runs past the end of the envelope (2 bytes left)");
    EXPECT("{}\n{\"type\":\"event\",\"length\":-1}\n{}", ERR_INVALID,
           "item 0: \"length\" must be a non-negative integer");
    EXPECT("{}\n{\"type\":\"event\",\"length\":\"2\"}\n{}", ERR_INVALID,
           "item 0: \"length\" must be a non-negative integer");
    EXPECT("{}\n{\"type\":\"event\",\"length\":1}\n{}", ERR_INVALID,
           "item 0: payload of length 1 is not followed by a newline");
    EXPECT("{}\n{\"type\":\"event\"}\n{}\nnot json\n", ERR_INVALID,
           "item 1 header is not valid JSON: '[' or '{' expected near 'not'");
    EXPECT("{}\n{\"type\":\"event\",\"type\":\"x\"}\n{}", ERR_INVALID,
           "item 0 header is not valid JSON: duplicate object key 'type'");
    envelope_limits small = {2, 4};
    const char *three = "{}\n{\"type\":\"a\"}\n1\n{\"type\":\"b\"}\n2\n{\"type\":\"c\"}\n3\n";
    expect_error(three, strlen(three), &small, ERR_TOO_LARGE, "envelope has more than 2 items");
    const char *big = "{}\n{\"type\":\"event\",\"length\":5}\n12345\n";
    expect_error(big, strlen(big), &small, ERR_TOO_LARGE,
                 "item 0 (event) is 5 bytes, over the limit of 4");
    const char *big2 = "{}\n{\"type\":\"event\"}\n12345\n";
    expect_error(big2, strlen(big2), &small, ERR_TOO_LARGE,
                 "item 0 (event) is 5 bytes, over the limit of 4");
}

static void hostile_input(void)
{
    buf b;
    /* 10,000 items: refused by the default bound, not read to the end */
    buf_init(&b);
    buf_append_str(&b, "{}\n");
    for (int i = 0; i < 10000; i++)
        buf_append_str(&b, "{\"type\":\"session\"}\n{}\n");
    expect_error((const char *)b.data, b.len, NULL, ERR_TOO_LARGE,
                 "envelope has more than 1000 items");
    buf_reset(&b);
    /* nesting 10,000 deep in an item header and in the envelope header */
    buf_init(&b);
    buf_append_str(&b, "{}\n{\"type\":\"event\",\"x\":");
    for (int i = 0; i < 10000; i++)
        buf_putc(&b, '[');
    for (int i = 0; i < 10000; i++)
        buf_putc(&b, ']');
    buf_append_str(&b, "}\n{}\n");
    envelope *e;
    arena *a;
    err_info err;
    CHECK_EQ_INT(parse(&e, &a, (const char *)b.data, b.len, NULL, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "maximum parsing depth reached") != NULL);
    arena_free(a);
    buf_reset(&b);
    /* a header line of 1 MB */
    buf_init(&b);
    buf_append_str(&b, "{\"pad\":\"");
    for (int i = 0; i < (1 << 20); i++)
        buf_putc(&b, 'x');
    buf_append_str(&b, "\"}\n");
    expect_error((const char *)b.data, b.len, NULL, ERR_TOO_LARGE,
                 "envelope header is 1048586 bytes, over the limit of 65536");
    buf_reset(&b);
    /* text that is no UTF-8 in a header is read with U+FFFD (base/utf8's rule), never a
     * reason to refuse the event: its item's header and payload come through */
    static const char bad_text[] = "{\"a\":\"\xff\",\"dsn\":\"http://k@h/\xab\"}\n"
                                   "{\"type\":\"event\",\"x\":\"\xc3\",\"length\":2}\n{}\n";
    CHECK_EQ_INT(parse(&e, &a, bad_text, sizeof bad_text - 1, NULL, &err), ERR_OK);
    if (e != NULL) {
        CHECK_EQ_STR(e->dsn, "http://k@h/\xef\xbf\xbd");
        CHECK(e->nitems == 1 && strcmp(e->items[0].type, "event") == 0 &&
              payload_is(&e->items[0], "{}"));
    }
    arena_free(a);
    /* tiny arena budgets: too_large, never a crash */
    int too_large = 0, ok = 0;
    for (size_t budget = 64; budget < 8192; budget += 64) {
        a = arena_new(budget);
        err_clear(&err);
        err_code rc = envelope_parse(&e, SAMPLE, sizeof SAMPLE - 1, NULL, a, &err);
        CHECK(rc == ERR_OK || rc == ERR_TOO_LARGE);
        too_large += rc == ERR_TOO_LARGE;
        ok += rc == ERR_OK;
        arena_free(a);
    }
    CHECK(too_large > 0 && ok > 0);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Every payload lies inside the input; items fit the limits. */
static void check_bounds(const envelope *e, const char *data, size_t len)
{
    for (size_t i = 0; i < e->nitems; i++) {
        const envelope_item *it = &e->items[i];
        CHECK(it->type != NULL && it->type[0] != '\0');
        CHECK(it->payload >= data && it->payload + it->payload_len <= data + len);
    }
}

static void truncations_and_mutations(void)
{
    size_t n = sizeof SAMPLE - 1, ok = 0;
    for (size_t cut = 0; cut <= n; cut++) {
        envelope *e;
        arena *a;
        err_info err;
        err_code rc = parse(&e, &a, SAMPLE, cut, NULL, &err);
        CHECK(rc == ERR_OK || rc == ERR_INVALID);
        CHECK(rc == ERR_OK || err.msg[0] != '\0');
        if (rc == ERR_OK) {
            ok++;
            check_bounds(e, SAMPLE, cut);
        }
        arena_free(a);
    }
    CHECK(ok > 0 && ok < n);
    char m[sizeof SAMPLE];
    for (int round = 0; round < 20000; round++) {
        memcpy(m, SAMPLE, n);
        for (int k = 0, nk = 1 + (int)(rng() % 4); k < nk; k++)
            m[rng() % n] = "\n{}\":0123456789,x\0\r"[rng() % 19];
        envelope *e;
        arena *a;
        err_info err;
        err_code rc = parse(&e, &a, m, n, NULL, &err);
        CHECK(rc == ERR_OK || rc == ERR_INVALID);
        if (rc == ERR_OK)
            check_bounds(e, m, n);
        arena_free(a);
    }
}

int main(void)
{
    RUN(items_with_and_without_length);
    RUN(framing_errors);
    RUN(hostile_input);
    RUN(truncations_and_mutations);
    return harness_done();
}
