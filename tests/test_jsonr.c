/* Tests for common/base/jsonr: the reader's trees and refusals, each held against jansson's
 * verdict on the same text (tests/jsonr_compare.h), over hand-written cases, generated
 * nesting and every JSON report of ../shared/corpus. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "base/jsonr.h"
#include "harness.h"
#include "jsonr_compare.h"

/* Parse text with both readers: true when they agree (both refuse, or equal trees), and
 * jsonr_check gives jsonr_parse's verdict and error (without JSONR_REJECT_DUPLICATES, which it
 * ignores). */
static bool agrees(const char *text, size_t len, unsigned flags)
{
    arena *a = arena_new(0);
    jsonr_error e;
    jsonr_value *r = jsonr_parse(a, text, len, flags, NULL, &e);
    json_t *j = jsonr_compare_jansson(text, len, flags);
    bool same = (r == NULL) == (j == NULL) && (r == NULL || jsonr_compare_equal(r, j));
    if (!same)
        fprintf(stderr, "disagree on %.60s: jsonr %s (%s), jansson %s\n", text,
                r ? "accepts" : "refuses", r ? "" : e.text, j ? "accepts" : "refuses");
    json_decref(j);
    unsigned nodup = flags & ~(unsigned)JSONR_REJECT_DUPLICATES;
    jsonr_error pe, ce;
    bool parsed = jsonr_parse(a, text, len, nodup, NULL, &pe) != NULL;
    bool checked = jsonr_check(text, len, flags, NULL, &ce);
    if (checked != parsed || (!parsed && (ce.code != pe.code || ce.position != pe.position ||
                                          strcmp(ce.text, pe.text) != 0))) {
        fprintf(stderr, "jsonr_check on %.60s: %s (%s), jsonr_parse %s (%s)\n", text,
                checked ? "accepts" : "refuses", checked ? "" : ce.text,
                parsed ? "accepts" : "refuses", parsed ? "" : pe.text);
        same = false;
    }
    arena_free(a);
    return same;
}

static void reads_values_and_paths(void)
{
    const char *t = "{\"app\": {\"name\": \"Sp\\u00e4t \\ud83d\\ude00\", \"build\": 42},"
                    " \"frames\": [1, -9223372036854775808, 2.5e3, true, false, null, \"\"],"
                    " \"big\": 18446744073709551616, \"k\": 1, \"k\": \"last\","
                    " \"\": \"empty key\", \"kk\": 2, \"bk\": 3}";
    arena *a = arena_new(0);
    jsonr_error e;
    jsonr_value *root = jsonr_parse(a, t, strlen(t), 0, NULL, &e);
    CHECK(root != NULL);
    jsonr_value *app = jsonr_get(root, "app");
    CHECK_EQ_STR(jsonr_string(jsonr_get(app, "name")), "Sp\xc3\xa4t \xf0\x9f\x98\x80");
    CHECK_EQ_INT(jsonr_string_length(jsonr_get(app, "name")), 10);
    CHECK_EQ_INT(jsonr_integer(jsonr_get(app, "build")), 42);
    jsonr_value *frames = jsonr_get(root, "frames");
    CHECK_EQ_INT(jsonr_size(frames), 7);
    CHECK(jsonr_integer(jsonr_at(frames, 1)) == INT64_MIN);
    CHECK(jsonr_is_real(jsonr_at(frames, 2)) && jsonr_real(jsonr_at(frames, 2)) == 2500.0);
    CHECK(jsonr_is_true(jsonr_at(frames, 3)) && jsonr_is_false(jsonr_at(frames, 4)));
    CHECK(jsonr_is_null(jsonr_at(frames, 5)) && jsonr_at(frames, 7) == NULL);
    CHECK_EQ_STR(jsonr_string(jsonr_at(frames, 6)), "");
    CHECK(jsonr_is_real(jsonr_get(root, "big")) &&
          jsonr_real(jsonr_get(root, "big")) == 18446744073709551616.0);
    CHECK_EQ_STR(jsonr_string(jsonr_get(root, "k")), "last");
    /* the empty key, and keys that share a length or a first byte with others */
    CHECK_EQ_STR(jsonr_string(jsonr_get(root, "")), "empty key");
    CHECK_EQ_INT(jsonr_integer(jsonr_get(root, "kk")), 2);
    CHECK_EQ_INT(jsonr_integer(jsonr_getn(root, "bkx", 2)), 3);
    CHECK(jsonr_get(root, "kb") == NULL && jsonr_getn(root, "", 0) == jsonr_get(root, ""));
    /* paths through missing and mistyped steps answer NULL, 0 and false */
    CHECK(jsonr_get(jsonr_get(root, "nope"), "name") == NULL);
    CHECK(jsonr_at(app, 0) == NULL && jsonr_get(frames, "x") == NULL);
    CHECK(jsonr_string(jsonr_get(app, "build")) == NULL && jsonr_integer(NULL) == 0);
    CHECK(!jsonr_is_object(NULL) && jsonr_size(jsonr_get(app, "name")) == 0);
    arena_free(a);
}

static void refuses_with_position(void)
{
    arena *a = arena_new(0);
    jsonr_error e;
    const char *t = "{\"a\": 1,\n  \"b\": [1, 2}\n}";
    CHECK(jsonr_parse(a, t, strlen(t), 0, NULL, &e) == NULL);
    CHECK_EQ_INT(e.code, JSONR_ERR_SYNTAX);
    CHECK_EQ_INT(e.line, 2);
    CHECK_EQ_INT(e.column, 13);
    CHECK_EQ_STR(e.text, "']' expected near '}'");
    t = "[\"caf\xc3\"]";
    CHECK(jsonr_parse(a, t, strlen(t), 0, NULL, &e) == NULL);
    CHECK_EQ_INT(e.code, JSONR_ERR_UTF8);
    t = "{\"a\": 1, \"a\": 2}";
    CHECK(jsonr_parse(a, t, strlen(t), JSONR_REJECT_DUPLICATES, NULL, &e) == NULL);
    CHECK_EQ_STR(e.text, "duplicate object key 'a'");
    /* a budget too small for the tree is "too large", never a crash */
    arena *small = arena_new(256);
    t = "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]";
    CHECK(jsonr_parse(small, t, strlen(t), 0, NULL, &e) == NULL);
    CHECK_EQ_INT(e.code, JSONR_ERR_TOO_LARGE);
    arena_free(small);
    arena_free(a);
}

/* JSONR_REPLACE_INVALID: raw bytes that are no UTF-8 and lone surrogate escapes become
 * U+FFFD (base/utf8's rule: one per maximal subpart), and so does "\u0000", in values and
 * keys, in the one-copy
 * parse, the parse of a first value (`used`) and jsonr_check alike; the rest unchanged. */
static void replaces_invalid_text(void)
{
#define FFFD "\xef\xbf\xbd"
    static const struct {
        const char *in, *want;
    } CASES[] = {
        {"[\"\xab\xab\xab\"]", FFFD FFFD FFFD},
        {"[\"OS \xab (\xe2\x82)\\n\"]", "OS " FFFD " (" FFFD ")\n"},
        {"[\"a\\ud800b\"]", "a" FFFD "b"},
        {"[\"\\udc00\\ud83d\\ude00\"]", FFFD "\xf0\x9f\x98\x80"},
        {"[\"\\ud800\\u0041\"]", FFFD "A"},
        {"[\"\\ud800\xab\"]", FFFD FFFD},
        {"[\"caf\xc3\xa9\"]", "caf\xc3\xa9"},
    };
    arena *a = arena_new(0);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const char *t = CASES[i].in;
        size_t len = strlen(t), used = 0;
        jsonr_error e;
        const jsonr_value *v = jsonr_parse(a, t, len, JSONR_REPLACE_INVALID, NULL, &e);
        CHECK_EQ_STR(jsonr_string(jsonr_at(v, 0)), CASES[i].want);
        CHECK_EQ_INT(jsonr_string_length(jsonr_at(v, 0)), strlen(CASES[i].want));
        v = jsonr_parse(a, t, len, JSONR_REPLACE_INVALID, &used, &e);
        CHECK_EQ_STR(jsonr_string(jsonr_at(v, 0)), CASES[i].want);
        CHECK_EQ_INT(used, len);
        CHECK(jsonr_check(t, len, JSONR_REPLACE_INVALID, NULL, &e));
    }
    /* keys too, and the rest of the document after a repaired string */
    const char *t = "{\"k\xab\": \"v\xff\", \"n\": 7}";
    const jsonr_value *o = jsonr_parse(a, t, strlen(t), JSONR_REPLACE_INVALID, NULL, NULL);
    CHECK_EQ_STR(jsonr_string(jsonr_get(o, "k" FFFD)), "v" FFFD);
    CHECK_EQ_INT(jsonr_integer(jsonr_get(o, "n")), 7);
    /* without the flag, as before: refused */
    CHECK(jsonr_parse(a, t, strlen(t), 0, NULL, NULL) == NULL);
    /* "\u0000" too (no C string holds it); what stays an error: a raw control character, a
     * bad escape */
    const jsonr_value *z = jsonr_parse(a, "[\"a\\u0000b\"]", 12, JSONR_REPLACE_INVALID, NULL, NULL);
    CHECK_EQ_STR(jsonr_string(jsonr_at(z, 0)), "a" FFFD "b");
    CHECK(jsonr_parse(a, "[\"\\u0000\"]", 10, 0, NULL, NULL) == NULL);
    CHECK(jsonr_parse(a, "[\"\x01\"]", 5, JSONR_REPLACE_INVALID, NULL, NULL) == NULL);
    CHECK(jsonr_parse(a, "[\"\\ud8\"]", 8, JSONR_REPLACE_INVALID, NULL, NULL) == NULL);
#undef FFFD
    arena_free(a);
}

static void stops_after_first_value(void)
{
    arena *a = arena_new(0);
    const char *t = "{\"h\": 1}  \n{\"body\": 2}";
    size_t used = 0;
    jsonr_value *h = jsonr_parse(a, t, strlen(t), 0, &used, NULL);
    CHECK(h != NULL && jsonr_integer(jsonr_get(h, "h")) == 1);
    CHECK_EQ_INT(used, 11);
    CHECK(jsonr_parse(a, t, strlen(t), 0, NULL, NULL) == NULL);
    used = 0;
    CHECK(jsonr_check(t, strlen(t), 0, &used, NULL) && used == 11);
    CHECK(!jsonr_check(t, strlen(t), 0, NULL, NULL));
    arena_free(a);
}

/* Every case both readers must judge alike: grammar corners, escapes, UTF-8, numbers. */
static void agrees_with_jansson(void)
{
    static const char *const cases[] = {
        "[]", "{}", " [ ] ", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]", "[-]",
        "[-0]", "[-0.0]", "[1.]", "[.5]", "[1e]", "[1e+]", "[1E-2]", "[1e400]", "[-1e400]",
        "[1e-400]", "[9223372036854775807]", "[9223372036854775808]", "[-9223372036854775809]",
        "[99999999999999999999999]", "[tru]", "[true false]", "[nul]", "[NaN]", "[Infinity]",
        "[\"\\u0000\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800\\u0041\"]",
        "[\"\\ud83d\\ude00\"]", "[\"\\x\"]", "[\"\\u12\"]", "[\"\\u00E9\\/\\b\\f\\n\\r\\t\"]",
        "[\"tab\there\"]", "[\"\xc3\xa9\"]", "[\"\xe0\x80\x80\"]", "[\"\xed\xa0\x80\"]",
        "[\"\xf4\x90\x80\x80\"]", "[\"\xff\"]", "[\"open", "{\"a\":", "{\"a\"", "[1 2]",
        "[1] x", "[1] ", "\"top\"", "42", "null", "", "   ", "{\"a\":{\"b\":[{}]}}",
        "{\"k\":1,\"k\":2}", "[\"a\\\"b\"]", "{\"\":0}", "[1\n,\r2\t]", "{\"a\":1}{", "[\x01]",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(agrees(cases[i], strlen(cases[i]), 0));
        CHECK(agrees(cases[i], strlen(cases[i]), JSONR_DECODE_ANY));
        CHECK(agrees(cases[i], strlen(cases[i]), JSONR_REJECT_DUPLICATES));
    }
    /* a NUL byte in the input is refused by both */
    CHECK(agrees("[1,\0 2]", 6, 0));
}

/* Nesting up to and past JSONR_MAX_DEPTH: the same limit as jansson's. */
static void nests_to_the_limit(void)
{
    for (int depth = JSONR_MAX_DEPTH - 1; depth <= JSONR_MAX_DEPTH + 1; depth++) {
        char *t = malloc((size_t)depth * 2 + 1);
        for (int i = 0; i < depth; i++)
            t[i] = '[', t[2 * depth - 1 - i] = ']';
        t[2 * depth] = '\0';
        CHECK(agrees(t, (size_t)depth * 2, 0));
        arena *a = arena_new(0);
        jsonr_error e;
        jsonr_value *v = jsonr_parse(a, t, (size_t)depth * 2, 0, NULL, &e);
        CHECK((v != NULL) == (depth <= JSONR_MAX_DEPTH));
        if (v == NULL)
            CHECK_EQ_INT(e.code, JSONR_ERR_DEPTH);
        arena_free(a);
        free(t);
    }
}

/* Every .json and .ips file under dir (recursively): the same tree as jansson's, or for an
 * .ips, whose header line is a JSON value of its own, the same header and body. */
static void corpus_dir(const char *dir, int *files)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t n = strlen(de->d_name);
        bool json = n > 5 && strcmp(de->d_name + n - 5, ".json") == 0;
        bool ips = n > 4 && strcmp(de->d_name + n - 4, ".ips") == 0;
        if (!json && !ips) {
            corpus_dir(path, files);
            continue;
        }
        bytes b;
        err_info err = {0};
        if (bytes_map_file(&b, path, &err) != ERR_OK)
            continue;
        const char *text = (const char *)b.data;
        size_t len = b.len, used = 0;
        if (ips) {
            arena *a = arena_new(0);
            if (jsonr_parse(a, text, len, 0, &used, NULL) != NULL) {
                CHECK(agrees(text, used, 0));
                text += used, len -= used;
            }
            arena_free(a);
        }
        bool same = agrees(text, len, 0);
        if (!same)
            fprintf(stderr, "  in %s\n", path);
        CHECK(same);
        (*files)++;
        bytes_unmap(&b);
    }
    closedir(d);
}

static void agrees_on_corpus(void)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/../shared/corpus", src != NULL ? src : "..");
    int files = 0;
    corpus_dir(dir, &files);
    fprintf(stderr, "corpus: %d JSON files agree\n", files);
    CHECK(files > 20);
}

int main(void)
{
    RUN(reads_values_and_paths);
    RUN(refuses_with_position);
    RUN(replaces_invalid_text);
    RUN(stops_after_first_value);
    RUN(agrees_with_jansson);
    RUN(nests_to_the_limit);
    RUN(agrees_on_corpus);
    return harness_done();
}
