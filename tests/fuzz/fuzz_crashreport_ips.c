/*
 * fuzz_crashreport_ips - libFuzzer target for the .ips parser (parse_json.c): the input is
 * the whole .ips (header line + body) as in the seeds. Checks: fuzz_crashreport_check.h.
 * Seeds: corpus ips/, golden minimal.ips.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one(NULL, data, len);
    return 0;
}
