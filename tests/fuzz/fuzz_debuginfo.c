/*
 * fuzz_debuginfo - libFuzzer target for the DWARF reader and the symcache builder: the input
 * is a Mach-O file (thin or fat; seeds are the fixture dSYMs); every slice that parses is read
 * with debuginfo_load, built into a symcache, reopened and looked up. Beyond "no crash, no
 * sanitizer report": a load either succeeds or names the problem, what it skipped is counted
 * exactly when it is named, and a built symcache always reopens (the builder never writes
 * what the reader rejects). Seeds include the real dSYMs of ../shared/real-dsyms/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "debuginfo/debuginfo.h"
#include "macho/macho.h"
#include "symcache/symcache.h"
#include "symcache/symcache_build.h"
#include "fuzz_require.h"

static macho_image img;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    macho_slice slices[MACHO_MAX_SLICES];
    size_t n = 0;
    err_info err = {0};
    if (macho_slices(slices, &n, data, len, &err) != ERR_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (macho_parse(&img, data + slices[i].offset, (size_t)slices[i].size, &err) != ERR_OK)
            continue;
        debuginfo di;
        err_code rc = debuginfo_load(&di, &img, 1, &err);
        if (rc != ERR_OK) {
            REQUIRE(err.msg[0] != '\0');
            continue;
        }
        /* whatever was skipped is counted and named */
        REQUIRE((debuginfo_warnings_count(&di.warnings) > 0) == (di.warnings.first[0] != '\0'));
        buf out;
        buf_init(&out);
        symcache_build_stats stats;
        if (symcache_build(&out, &stats, &img, &di, "Fuzz", 1, &err) == ERR_OK) {
            symcache *sc = NULL;
            REQUIRE(symcache_open_bytes(&sc, out.data, out.len, &err) == ERR_OK);
            symcache_frame f[SYMCACHE_MAX_FRAMES];
            uint64_t base = img.has_text ? img.text_vmaddr : 0;
            for (uint64_t a = 0; a < 4096; a += 61) {
                size_t k = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, base + a * 4);
                for (size_t j = 0; j < k; j++)
                    REQUIRE(f[j].function != NULL);
            }
            symcache_close(sc);
        }
        buf_reset(&out);
        debuginfo_reset(&di);
    }
    return 0;
}
