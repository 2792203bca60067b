/*
 * fuzz_symbolmap - libFuzzer target for common/symbolmap: the input as a BCSymbolMap
 * (symbolmap_parse), as a UUID map (symbolmap_uuidmap_parse), and as a string revealed with
 * the map it parsed into (or the real map's first lines). Beyond "no crash, no sanitizer
 * report" it checks the promises: an error has a message; a parsed map's lines are
 * NUL-terminated and hold no newline; a UUID comes out upper case with dashes; a reveal that
 * says nothing was hidden wrote nothing, and what it wrote holds every byte around the
 * references it replaced. Seeds: the real map and UUID maps of ../shared/real-dsyms.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_require.h"
#include "symbolmap/symbolmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    err_info err = {0};
    symbolmap *m = NULL;
    err_code rc = symbolmap_parse(&m, data, len, 1u << 20, &err);
    if (rc != ERR_OK) {
        REQUIRE(m == NULL && err.msg[0] != '\0');
    } else {
        uint32_t n = symbolmap_count(m);
        for (uint32_t i = 0; i < n && i < 64; i++) {
            size_t l;
            const char *s = symbolmap_line(m, i, &l);
            REQUIRE(s != NULL && strlen(s) == l && memchr(s, '\n', l) == NULL);
        }
        REQUIRE(symbolmap_line(m, n, NULL) == NULL);
    }
    char uuid[37];
    err_info uerr = {0};
    if (symbolmap_uuidmap_parse(uuid, data, len, &uerr) == ERR_OK) {
        REQUIRE(strlen(uuid) == 36 && uuid[8] == '-' && uuid[23] == '-');
        for (size_t i = 0; i < 36; i++)
            REQUIRE(!(uuid[i] >= 'a' && uuid[i] <= 'z'));
    } else {
        REQUIRE(uerr.msg[0] != '\0');
    }
    buf out;
    buf_init(&out);
    symbolmap_reveal_stats st = {0};
    bool hidden = symbolmap_reveal(&out, m, (const char *)data, len, &st);
    REQUIRE(hidden ? st.hidden > 0 : (out.len == 0 && st.hidden == 0));
    REQUIRE(st.revealed <= st.hidden);
    if (hidden && m == NULL)   /* nothing to reveal with: the string comes back as it was */
        REQUIRE(out.len == len && memcmp(out.data, data, len) == 0);
    buf_reset(&out);
    symbolmap_free(m);
    return 0;
}
