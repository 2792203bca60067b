/*
 * fuzz_demangle - libFuzzer target for common/demangle's Swift demangler (and the C++ path):
 * the input, cut at the first NUL, is a name. Each of each prefix spelling (Swift 5, 4.2, 4.0, embedded, Swift 3) is tried in
 * front of it as well, so that the fuzzer spends its time inside the grammar.
 * Checks: never a crash, hang or leak; a result is non-empty, NUL-terminated within
 * DEMANGLE_MAX_OUTPUT, and the buffer variant agrees with the malloc'ing one, also when it is
 * cut short.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "demangle/demangle.h"

static void check(const char *name)
{
    for (unsigned flags = 0; flags <= DEMANGLE_SIMPLIFIED; flags++) {
        char *d = demangle_name(name, flags);
        char buf[DEMANGLE_MAX_OUTPUT + 1], small[16];
        size_t n = demangle_name_buf(buf, sizeof buf, name, flags);
        size_t m = demangle_name_buf(small, sizeof small, name, flags);
        assert(strlen(small) < sizeof small);
        assert(m == n);
        if (d != NULL) {
            assert(d[0] != '\0' && strlen(d) <= DEMANGLE_MAX_OUTPUT);
            assert(n == strlen(d) && strcmp(buf, d) == 0);
            free(d);
        } else {
            assert(n == 0 && buf[0] == '\0');
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    static const char *const prefixes[] = {"", "$s", "_$S", "_T0", "$e", "_T"};
    char name[4096];
    const uint8_t *nul = memchr(data, 0, len);
    size_t n = nul ? (size_t)(nul - data) : len;
    if (n > sizeof name - 8)
        n = sizeof name - 8;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t k = strlen(prefixes[i]);
        memcpy(name, prefixes[i], k);
        memcpy(name + k, data, n);
        name[k + n] = '\0';
        check(name);
    }
    return 0;
}
