/*
 * fuzz_crashreport_text - libFuzzer target for the Apple text parser (common/crashreport,
 * parse_text.c): the input follows a fixed header line so that it is always read as text.
 * Checks: fuzz_crashreport_check.h. Seeds: corpus apple-text/ and plcrash-text/, golden .crash.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one("Incident Identifier: F\n", data, len);
    return 0;
}
