/*
 * fuzz_crashreport_kscrash - libFuzzer target for the KSCrash JSON parser (parse_json.c).
 * Checks: fuzz_crashreport_check.h. Seeds: corpus kscrash-json/.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one(NULL, data, len);
    return 0;
}
