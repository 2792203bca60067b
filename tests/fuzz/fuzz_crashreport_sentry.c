/*
 * fuzz_crashreport_sentry - libFuzzer target for Sentry events (parse_sentry.c). Checks:
 * fuzz_crashreport_check.h. Seeds: the corpus's Sentry events, the golden sentry-cocoa event.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one(NULL, data, len);
    return 0;
}
