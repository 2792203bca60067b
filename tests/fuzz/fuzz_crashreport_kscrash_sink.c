/*
 * fuzz_crashreport_kscrash_sink - libFuzzer target for what KSCrash's standard sink sends in its
 * "reports" part: a JSON array of reports, split by crashreport_split_array (parse_json.c) and
 * each element parsed on its own. Checks: every document lies inside the input (or is a decoded
 * string), the splitter answers ERR_OK, ERR_INVALID or ERR_TOO_LARGE with a message, and each
 * element passes fuzz_crashreport_check.h. Seeds: the corpus's KSCrash reports.
 */
#include "fuzz_crashreport_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    arena *a = arena_new((size_t)64 << 20);
    err_info err = {0};
    crashreport_doc *docs = NULL;
    size_t n = 0;
    err_code rc = crashreport_split_array(&docs, &n, (const char *)data, len, 64, a, &err);
    REQUIRE(rc == ERR_OK || rc == ERR_INVALID || rc == ERR_TOO_LARGE);
    REQUIRE(rc == ERR_OK ? n > 0 && docs != NULL : err.msg[0] != '\0');
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const char *d = docs[i].data;
        REQUIRE(docs[i].text || (d >= (const char *)data && d + docs[i].len <= (const char *)data + len));
        fuzz_crashreport_one(NULL, (const uint8_t *)d, docs[i].len);
    }
    arena_free(a);
    return 0;
}
