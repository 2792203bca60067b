/*
 * fuzz_breakpad - libFuzzer target for the Breakpad .sym parser and the STACK CFI table and
 * evaluator (common/breakpad). Beyond "no crash, no sanitizer report": an error has a
 * message; the FUNC records' line and INLINE counts add up to the totals and stay inside the
 * arrays; the encoded CFI table opens, every INIT kept finds rules at its own address, and
 * the rules found evaluate (or fail) on a synthetic register file and memory.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "breakpad/breakpad.h"
#include "fuzz_require.h"

static bool read_mem(uint64_t *out, uint64_t addr, void *ctx)
{
    (void)ctx;
    if (addr < 0x1000 || addr > 0x2000)
        return false;
    *out = addr * 3;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    arena *a = arena_new(64u << 20);
    breakpad_sym *s;
    err_info err = {0};
    if (breakpad_parse(&s, data, len, a, &err) != ERR_OK) {
        REQUIRE(err.msg[0] != '\0');
        arena_free(a);
        return 0;
    }
    size_t lines = 0, inlines = 0;
    for (size_t i = 0; i < s->nfuncs; i++) {
        const breakpad_func *f = &s->funcs[i];
        REQUIRE(f->first_line + f->nlines <= s->nlines);
        REQUIRE(f->first_inline + f->ninlines <= s->ninlines);
        lines += f->nlines;
        inlines += f->ninlines;
        for (size_t k = 0; k < f->ninlines; k++) {
            const breakpad_inline *in = &s->inlines[f->first_inline + k];
            REQUIRE(in->nranges > 0 && in->first_range + in->nranges <= s->nranges);
            REQUIRE(in->parent == UINT32_MAX || in->parent < k);
        }
    }
    REQUIRE(lines == s->nlines && inlines == s->ninlines);
    for (size_t i = 1; i < s->nfiles; i++)
        REQUIRE(s->files[i - 1].id < s->files[i].id);
    buf t;
    buf_init(&t);
    size_t kept = breakpad_cfi_encode(&t, s);
    breakpad_cfi cfi;
    REQUIRE(breakpad_cfi_open(&cfi, t.data, t.len, &err) == ERR_OK);
    REQUIRE(cfi.ninit == kept);
    breakpad_regs cur = {{0}, 0};
    for (unsigned i = 0; i < BREAKPAD_REGS; i++)
        cur.regs[i] = 0x1000 + 16 * i;
    cur.valid = (1ull << BREAKPAD_REGS) - 1;
    for (size_t i = 0; i < s->ncfi; i++) {
        const char *rules[BREAKPAD_CFI_MAX_RULES];
        uint64_t probes[2] = {s->cfi[i].addr, s->cfi[i].addr + s->cfi[i].size - 1};
        for (int p = 0; p < 2; p++) {
            size_t n = breakpad_cfi_find(rules, BREAKPAD_CFI_MAX_RULES, &cfi, probes[p]);
            REQUIRE(n <= BREAKPAD_CFI_MAX_RULES);
            for (int arch = 0; arch < 2 && n > 0; arch++) {
                breakpad_regs out = cur;
                uint64_t cfa, ra;
                if (breakpad_cfi_eval(&out, &cfa, &ra, rules, n, (breakpad_arch)arch, &cur, read_mem, NULL))
                    REQUIRE(out.regs[arch == 0 ? 7 : 31] == cfa && out.regs[arch == 0 ? 16 : 32] == ra);
            }
        }
    }
    buf_reset(&t);
    arena_free(a);
    return 0;
}
