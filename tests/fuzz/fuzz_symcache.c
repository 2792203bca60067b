/*
 * fuzz_symcache - libFuzzer target for the symcache reader (common/symcache): the input is
 * opened with symcache_open_bytes and, when accepted, looked up at addresses derived from
 * it (the header's __TEXT vmaddr plus offsets read from the input, the edges of the address
 * space). A corrupt file must be rejected with a message at open, never crash a lookup.
 * Frames must hold what symcache.h promises. Seeds: .symc files built from the fixtures.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symcache/symcache.h"
#include "fuzz_require.h"

/* FUZZ_STRICT=1 (FUZZ_CFLAGS=-DFUZZ_STRICT=1 tests/fuzz/run.sh ...) also checks the frame
 * contract of symcache.h on every symcache that opens: no "??" function, `inlined` set on
 * exactly the frames that have a caller after them. Off by default until
 * symcache_open_bytes rejects a scope tree whose parent indexes point outside the table. */
#ifndef FUZZ_STRICT
#define FUZZ_STRICT 0
#endif

static void check_frames(const symcache_frame *f, size_t n, size_t cap)
{
    REQUIRE(n <= cap);
    for (size_t i = 0; i < n; i++) {
        REQUIRE(f[i].function != NULL);
        (void)strlen(f[i].function);
        if (f[i].file != NULL)
            (void)strlen(f[i].file);
        if (FUZZ_STRICT) {
            REQUIRE(strcmp(f[i].function, "??") != 0);
            /* every frame but the last was inlined into the next one; the last is the
             * concrete function unless the chain was cut at `cap` */
            if (i + 1 < n)
                REQUIRE(f[i].inlined);
            else if (n < cap)
                REQUIRE(!f[i].inlined);
        }
    }
}

static void lookup_at(const symcache *sc, uint64_t addr)
{
    symcache_frame frames[SYMCACHE_MAX_FRAMES];
    size_t n = symcache_lookup(frames, SYMCACHE_MAX_FRAMES, sc, addr);
    check_frames(frames, n, SYMCACHE_MAX_FRAMES);
    symcache_frame one;
    size_t m = symcache_lookup(&one, 1, sc, addr);
    REQUIRE(m == (n > 0 ? 1 : 0));
    REQUIRE(symcache_lookup(&one, 0, sc, addr) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    symcache *sc = NULL;
    err_info err = {0};
    err_code rc = symcache_open_bytes(&sc, data, size, &err);
    if (rc != ERR_OK) {
        REQUIRE(sc == NULL);
        REQUIRE(err.msg[0] != '\0');
        REQUIRE(memchr(err.msg, '\0', sizeof err.msg) != NULL);
        return 0;
    }
    REQUIRE(sc != NULL);
    REQUIRE(symcache_uuid(sc) != NULL);
    REQUIRE(symcache_arch(sc) != NULL && symcache_image_name(sc) != NULL);
    (void)strlen(symcache_arch(sc));
    (void)strlen(symcache_image_name(sc));
    (void)symcache_has_dwarf(sc);
    (void)symcache_range_count(sc);
    (void)symcache_function_count(sc);
    /* the unwind sections: read in place, inside the input, in order */
    unwind_image ui;
    err_info uerr = {0};
    rc = symcache_unwind_image(&ui, sc, &uerr);
    REQUIRE(rc == ERR_OK || rc == ERR_NOT_FOUND || rc == ERR_INVALID);
    REQUIRE(rc != ERR_OK || symcache_has_unwind(sc));
    if (rc == ERR_OK) {
        const uint8_t *end = data + size;
        REQUIRE(ui.nentries == 0 || ((const uint8_t *)(ui.entries + ui.nentries) <= end &&
                                     (const uint8_t *)ui.entries >= data));
        for (size_t i = 0; i < ui.nentries; i++)
            REQUIRE(ui.entries[i].func_start <= ui.entries[i].func_end);
        REQUIRE(ui.nstack_sizes == 0 || (const uint8_t *)(ui.stack_sizes + ui.nstack_sizes) <= end);
        REQUIRE(ui.eh_frame_len == 0 || (ui.eh_frame >= data && ui.eh_frame + ui.eh_frame_len <= end));
        REQUIRE(ui.debug_frame_len == 0 ||
                (ui.debug_frame >= data && ui.debug_frame + ui.debug_frame_len <= end));
    }
    /* a merge with itself is a symcache that opens, no larger (an older version's "DISP" is
     * dropped), and merging that one with itself changes nothing */
    buf merged, twice;
    buf_init(&merged);
    buf_init(&twice);
    REQUIRE(symcache_merge(&merged, sc, sc, &uerr) == ERR_OK);
    REQUIRE(merged.len <= symcache_size(sc));
    symcache *again = NULL;
    REQUIRE(symcache_open_bytes(&again, merged.data, merged.len, &uerr) == ERR_OK);
    REQUIRE(symcache_merge(&twice, again, again, &uerr) == ERR_OK);
    REQUIRE(twice.len == merged.len && memcmp(twice.data, merged.data, merged.len) == 0);
    symcache_close(again);
    buf_reset(&twice);
    buf_reset(&merged);

    uint64_t base = symcache_text_vmaddr(sc);
    uint64_t addrs[3 + 32];
    size_t naddrs = 0;
    addrs[naddrs++] = 0;
    addrs[naddrs++] = UINT64_MAX;
    addrs[naddrs++] = base;
    /* Offsets taken from the input's last bytes: the fuzzer steers them into the table. */
    for (size_t i = 0; i + 4 <= size && i < 64; i += 4) {
        uint32_t off;
        memcpy(&off, data + size - 4 - i, 4);
        addrs[naddrs++] = base + off;
        addrs[naddrs++] = base + (off & 0xffff);
    }
    /* First, while no lookup has decompressed a name block: the _ids batch and symcache_names
     * (names from scratch-decompressed blocks), every string readable. */
    {
        symcache_frame fr[2 * SYMCACHE_MAX_FRAMES];
        uint32_t ids[2 * SYMCACHE_MAX_FRAMES], uniq[2 * SYMCACHE_MAX_FRAMES];
        size_t e[3 + 32];
        for (size_t i = 0; i < naddrs;) {
            size_t got = symcache_lookup_many_ids(fr, ids, sizeof fr / sizeof fr[0], e, sc, addrs + i, naddrs - i);
            REQUIRE(got > 0 && got <= naddrs - i);
            size_t nf = e[got - 1], nu = 0;
            REQUIRE(nf <= sizeof fr / sizeof fr[0]);
            for (size_t k = 0; k < nf; k++) {
                REQUIRE(fr[k].function == NULL && fr[k].mangled == NULL);
                if (ids[k] == SYMCACHE_NO_NAME)
                    continue;
                REQUIRE(ids[k] < symcache_name_count(sc));
                size_t at = 0; /* insert into uniq, ascending, distinct */
                while (at < nu && uniq[at] < ids[k])
                    at++;
                if (at < nu && uniq[at] == ids[k])
                    continue;
                memmove(uniq + at + 1, uniq + at, (nu - at) * sizeof *uniq);
                uniq[at] = ids[k];
                nu++;
            }
            symcache_name nm[2 * SYMCACHE_MAX_FRAMES];
            symcache_names(nm, sc, uniq, nu);
            for (size_t k = 0; k < nu; k++) {
                REQUIRE(nm[k].raw != NULL && nm[k].display != NULL);
                /* the lengths given are what can be read (a crafted "DISP" section may hold
                 * a NUL inside a form: never more than the length) */
                REQUIRE(strlen(nm[k].raw) <= nm[k].raw_len && strlen(nm[k].display) <= nm[k].display_len);
                REQUIRE(nm[k].raw[nm[k].raw_len] == '\0' && nm[k].display[nm[k].display_len] == '\0');
            }
            i += got;
        }
    }
    for (size_t i = 0; i < naddrs; i++)
        lookup_at(sc, addrs[i]);
    /* the batch gives the same frames, address by address, and stops only for room */
    symcache_frame many[2 * SYMCACHE_MAX_FRAMES], one[SYMCACHE_MAX_FRAMES];
    size_t ends[3 + 32];
    for (size_t i = 0; i < naddrs;) {
        size_t got = symcache_lookup_many(many, sizeof many / sizeof many[0], ends, sc, addrs + i, naddrs - i);
        REQUIRE(got > 0 && got <= naddrs - i);
        for (size_t k = 0; k < got; k++) {
            size_t from = k ? ends[k - 1] : 0;
            REQUIRE(ends[k] >= from && ends[k] <= sizeof many / sizeof many[0]);
            size_t n = symcache_lookup(one, SYMCACHE_MAX_FRAMES, sc, addrs[i + k]);
            REQUIRE(n == ends[k] - from);
            for (size_t j = 0; j < n; j++)
                REQUIRE(many[from + j].function == one[j].function && many[from + j].file == one[j].file &&
                        many[from + j].line == one[j].line && many[from + j].sym_addr == one[j].sym_addr &&
                        many[from + j].inlined == one[j].inlined && many[from + j].from_symtab == one[j].from_symtab);
        }
        i += got;
    }
    symcache_close(sc);
    return 0;
}
