/*
 * fuzz_samplebatch - libFuzzer target for the sample batch parser (base/jsonr) and checks
 * (common/samplebatch). Promises: any input is accepted or refused with a message (never a
 * crash, a hang or an overread); a refusal names a field or says "malformed JSON"; an
 * accepted batch's canonical form reads back (as stored) with the same calls, one sample per
 * distinct stack, and renders to the same bytes again.
 */
#include <string.h>

#include "fuzz_require.h"
#include "samplebatch/samplebatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    arena *a = arena_new(64u << 20);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    samplebatch *b = NULL;
    /* a copy of exactly len bytes: ASan sees any read past the end */
    char *doc = arena_alloc(a, len ? len : 1, &err);
    REQUIRE(doc != NULL);
    memcpy(doc, data, len);
    err_code rc = samplebatch_parse(&b, field, doc, len, SAMPLEBATCH_SENT, a, &err);
    if (rc != ERR_OK) {
        REQUIRE(b == NULL && err.msg[0] != '\0');
        REQUIRE(rc == ERR_TOO_LARGE || field[0] != '\0' || strstr(err.msg, "JSON") != NULL);
    } else {
        buf c1, c2;
        buf_init(&c1);
        buf_init(&c2);
        size_t stacks = 0;
        samplebatch_render_canonical(&c1, &stacks, b);
        samplebatch *s = NULL;
        rc = samplebatch_parse(&s, field, (const char *)c1.data, c1.len, SAMPLEBATCH_STORED, a, &err);
        REQUIRE(rc == ERR_OK && s != NULL);
        REQUIRE(s->calls == b->calls && s->nsamples == stacks);
        samplebatch_render_canonical(&c2, NULL, s);
        REQUIRE(c1.len == c2.len && memcmp(c1.data, c2.data, c1.len) == 0);
        buf_reset(&c1);
        buf_reset(&c2);
    }
    arena_free(a);
    return 0;
}
