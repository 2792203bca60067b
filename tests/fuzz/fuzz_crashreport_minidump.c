/*
 * fuzz_crashreport_minidump - libFuzzer target for minidumps as crash reports
 * (parse_minidump.c over common/minidump and common/unwind): the input parsed as a report
 * (crashreport_parse_all detects the "MDMP" magic), then again with a Sentry event beside it,
 * as a dump sent with its upload's fields is read. Checks: fuzz_crashreport_check.h.
 * Seeds: the real dumps of ../shared/minidumps/.
 */
#include "fuzz_crashreport_check.h"

static const char EVENT[] =
    "{\"event_id\":\"0123456789abcdef0123456789abcdef\",\"release\":\"app@1.2+3\","
    "\"environment\":\"prod\",\"tags\":[[\"k\",\"v\"],[\"x\"]],\"user\":{\"id\":\"u\"},"
    "\"extra\":{\"prod\":\"P\",\"ver\":\"1\"},\"contexts\":{\"os\":{\"name\":\"macOS\"}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    fuzz_crashreport_one(NULL, data, len);
    arena *a = arena_new((size_t)64 << 20);
    err_info err = {0};
    crashreport *r = NULL;
    crashreport_minidump_options o = {.event_json = EVENT, .event_len = sizeof EVENT - 1};
    err_code rc = crashreport_parse_minidump(&r, data, len, &o, a, &err);
    REQUIRE((rc == ERR_OK) == (r != NULL));
    REQUIRE(rc == ERR_OK || rc == ERR_INVALID || rc == ERR_TOO_LARGE);
    REQUIRE(rc == ERR_OK || err.msg[0] != '\0');
    if (rc == ERR_OK)
        check_report(r);
    arena_free(a);
    return 0;
}
