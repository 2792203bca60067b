/*
 * fuzz_jsonr - libFuzzer target for the JSON reader (common/base/jsonr), differential against
 * jansson. Promises: any input is read or refused, never a crash, a hang or an overread;
 * jsonr refuses exactly what jansson refuses (with the same flags) and otherwise builds the
 * same tree; the first-value mode reads the same value and stops where the rest begins;
 * jsonr_check gives jsonr_parse's verdict, error and stop without building a tree. With
 * JSONR_REPLACE_INVALID: what jansson reads is read to the same tree, nothing is refused for
 * its UTF-8, and every string and key of a tree is valid UTF-8.
 */
#include <string.h>

#include "../jsonr_compare.h"
#include "base/utf8.h"
#include "fuzz_require.h"

/* Every string and key under v is valid UTF-8 (the depth is bounded by JSONR_MAX_DEPTH). */
static void require_utf8(const jsonr_value *v)
{
    if (jsonr_is_string(v))
        REQUIRE(utf8_valid(jsonr_string(v), jsonr_string_length(v)));
    size_t n = jsonr_size(v);
    for (size_t i = 0; i < n; i++) {
        if (jsonr_is_object(v)) {
            const jsonr_member *m = jsonr_member_at(v, i);
            REQUIRE(utf8_valid(m->key, m->key_len));
            require_utf8(&m->value);
        } else {
            require_utf8(jsonr_at(v, i));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    /* a first byte below 4 picks the flags and is not text; seeds start as JSON does */
    bool flagged = len > 0 && data[0] < 4;
    unsigned flags = flagged ? data[0] : 0;
    const uint8_t *text = flagged ? data + 1 : data;
    size_t n = flagged ? len - 1 : len;
    arena *a = arena_new(64u << 20);
    err_info err = {0};
    /* a copy of exactly n bytes: ASan sees any read past the end */
    char *doc = arena_alloc(a, n ? n : 1, &err);
    REQUIRE(doc != NULL);
    memcpy(doc, text, n);
    jsonr_error e;
    jsonr_value *r = jsonr_parse(a, doc, n, flags, NULL, &e);
    json_t *j = jsonr_compare_jansson(doc, n, flags);
    REQUIRE((r == NULL) == (j == NULL));
    if (r != NULL)
        REQUIRE(jsonr_compare_equal(r, j));
    else
        REQUIRE(e.text[0] != '\0' && e.position <= n && e.line >= 1 && e.column >= 1);
    unsigned rflags = flags | JSONR_REPLACE_INVALID;
    jsonr_value *rr = jsonr_parse(a, doc, n, rflags, NULL, &e);
    if (j != NULL)
        REQUIRE(rr != NULL && jsonr_compare_equal(rr, j));
    if (rr != NULL)
        require_utf8(rr);
    else
        REQUIRE(e.code != JSONR_ERR_UTF8);
    REQUIRE(jsonr_check(doc, n, rflags & ~(unsigned)JSONR_REJECT_DUPLICATES, NULL, NULL) ==
            (jsonr_parse(a, doc, n, rflags & ~(unsigned)JSONR_REJECT_DUPLICATES, NULL, NULL) !=
             NULL));
    json_decref(j);
    /* jsonr_check: the verdict of jsonr_parse without JSONR_REJECT_DUPLICATES (it keeps no keys) */
    unsigned nodup = flags & ~(unsigned)JSONR_REJECT_DUPLICATES;
    jsonr_error pe, ce;
    size_t pused = 0, cused = 0;
    bool parsed = jsonr_parse(a, doc, n, nodup, NULL, &pe) != NULL;
    REQUIRE(jsonr_check(doc, n, flags, NULL, &ce) == parsed);
    if (!parsed)
        REQUIRE(ce.code == pe.code && ce.position == pe.position && strcmp(ce.text, pe.text) == 0);
    parsed = jsonr_parse(a, doc, n, nodup, &pused, &pe) != NULL;
    REQUIRE(jsonr_check(doc, n, flags, &cused, &ce) == parsed && cused == pused);
    /* first value only: what it read parses alone to the same tree */
    size_t used = 0;
    jsonr_value *first = jsonr_parse(a, doc, n, flags, &used, &e);
    if (first != NULL) {
        REQUIRE(used <= n);
        jsonr_value *again = jsonr_parse(a, doc, used, flags, NULL, &e);
        REQUIRE(again != NULL);
        json_t *ja = jsonr_compare_jansson(doc, used, flags);
        REQUIRE(ja != NULL && jsonr_compare_equal(first, ja) && jsonr_compare_equal(again, ja));
        json_decref(ja);
    }
    arena_free(a);
    return 0;
}
