/*
 * fuzz_signature - libFuzzer target for common/signature: the input, split at the first NUL
 * byte, is (1) a function name for signature_normalize_symbol (hostile brackets, quotes,
 * operators, suffixes) and (2) a crash report (any format) whose signature is computed;
 * without a NUL the whole input is both (the corpus seeds are plain reports).
 * Checks: the normalized name fits its buffer (also a tiny one); a signature has a 64-hex fingerprint, a title and a
 * culprit, and at most the configured number of frames.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "crashreport/crashreport.h"
#include "signature/signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    const uint8_t *nul = memchr(data, 0, len);
    size_t name_len = nul ? (size_t)(nul - data) : len;
    char name[4096], out[SIGNATURE_MAX_NAME], small[8];
    if (name_len >= sizeof name)
        name_len = sizeof name - 1;
    memcpy(name, data, name_len);
    name[name_len] = '\0';
    const char *n = signature_normalize_symbol(out, sizeof out, name);
    assert(n == out && strlen(out) < sizeof out);
    signature_normalize_symbol(small, sizeof small, name);   /* cut, never overrun */
    assert(strlen(small) < sizeof small);
    (void)signature_is_skipped(out);
    (void)signature_function_in_app(out);

    arena *a = arena_new(64u << 20);
    crashreport *r = NULL;
    err_info err = {0};
    const uint8_t *rep = nul ? nul + 1 : data;
    if (crashreport_parse(&r, (const char *)rep, len - (size_t)(rep - data), a, &err) == ERR_OK) {
        signature s;
        signature_options o = {2};
        if (signature_compute(&s, r, &o, a, &err) == ERR_OK) {
            assert(strlen(s.fingerprint) == 64 && s.title && s.culprit && s.exception);
            assert(s.nframes <= 2);
            for (size_t i = 0; i < r->nimages; i++)
                (void)signature_image_in_app(r, i);
            buf b;
            buf_init(&b);
            signature_render_frames_json(&b, &s);
            buf_reset(&b);
        }
    }
    arena_free(a);
    return 0;
}
