/*
 * fuzz_crashreport_sample - libFuzzer target for the sample / spindump parser (common/
 * crashreport, parse_sample.c): the input follows "Call graph:" so that it is always read as a
 * sample. Checks: fuzz_crashreport_check.h (tree invariants included). Seeds: the real
 * samples of ../shared/real-xcode, our spindump golden.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one("Analysis of sampling App (pid 1) every 1 millisecond\nCall graph:\n", data, len);
    return 0;
}
