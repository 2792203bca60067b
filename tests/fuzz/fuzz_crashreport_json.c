/*
 * fuzz_crashreport_json - libFuzzer target for stacksift's own JSON stack format
 * (parse_json.c). Checks: fuzz_crashreport_check.h. Seeds: golden hang.json, corpus other/
 * (documents that must be rejected).
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one(NULL, data, len);
    return 0;
}
