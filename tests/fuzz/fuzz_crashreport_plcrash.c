/*
 * fuzz_crashreport_plcrash - libFuzzer target for PLCrashReporter's .plcrash files
 * (parse_plcrash.c over the protobuf reader, protobuf.c). Checks: fuzz_crashreport_check.h.
 *
 * No real .plcrash files exist to seed from (tests write theirs with tests/plcrash_encode.py),
 * so the target builds the start of the file itself: the first input byte chooses between the
 * bare header ("plcrash", version 1) and the header followed by the messages every report
 * needs (system_info, application_info, signal), after which the fuzzer's bytes are more
 * top-level fields (protobuf merges repeated messages, so they add threads and images or
 * override what the prefix set). Inputs of other versions come from the bare variant's
 * fuzzed bytes only through the parser's own checks, which tests/test_crashreport_plcrash.c
 * covers.
 */
#include "fuzz_crashreport_check.h"

static const uint8_t HEADER[] = {'p', 'l', 'c', 'r', 'a', 's', 'h', 1};
static const uint8_t REQUIRED[] = {
    0x0a, 0x03, 0x12, 0x01, '1',                  /* system_info { os_version: "1" } */
    0x12, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, '1', /* application_info { "a", "1" } */
    0x32, 0x03, 0x0a, 0x01, 'S',                  /* signal { name: "S" } */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len == 0)
        return 0;
    bool with_required = (data[0] & 1) != 0;
    size_t pre = sizeof HEADER + (with_required ? sizeof REQUIRED : 0);
    uint8_t *in = malloc(pre + len - 1);
    REQUIRE(in != NULL);
    memcpy(in, HEADER, sizeof HEADER);
    if (with_required)
        memcpy(in + sizeof HEADER, REQUIRED, sizeof REQUIRED);
    memcpy(in + pre, data + 1, len - 1);
    fuzz_crashreport_one(NULL, in, pre + len - 1);
    free(in);
    return 0;
}
