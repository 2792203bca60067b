/*
 * fuzz_crashreport_metrickit - libFuzzer target for the MetricKit parser (common/crashreport,
 * parse_metrickit.c): any JSON document, read with crashreport_parse_all so that every
 * diagnostic of a payload is checked. Checks: fuzz_crashreport_check.h. Seeds: our payload
 * golden and Sentry's recorded callStackTree in the corpus.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one(NULL, data, len);
    return 0;
}
