/*
 * fuzz_crashreport_bugsnag - libFuzzer target for the Bugsnag notifier parser (common/crashreport,
 * parse_bugsnag.c): any JSON document, read with crashreport_parse_all so that every event of a
 * payload is checked, and split with crashreport_split (each part must parse as the whole did).
 * Checks: fuzz_crashreport_check.h. Seeds: the corpus's Bugsnag event.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one(NULL, data, len);
    arena *a = arena_new((size_t)64 << 20);
    err_info err = {0};
    const char **docs = NULL;
    size_t *lens = NULL, n = 0;
    err_code rc = crashreport_split(&docs, &lens, &n, (const char *)data, len, a, &err);
    REQUIRE(rc == ERR_OK || rc == ERR_TOO_LARGE);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        crashreport *r = NULL;
        err_info e2 = {0};
        err_code one = crashreport_parse(&r, docs[i], lens[i], a, &e2);
        REQUIRE(one == ERR_OK || one == ERR_INVALID || one == ERR_UNSUPPORTED || one == ERR_TOO_LARGE);
    }
    arena_free(a);
    return 0;
}
