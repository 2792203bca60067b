/*
 * fuzz_minidump - libFuzzer target for the minidump reader (common/minidump): minidump_parse
 * over the input, then a walk over everything it returned. Beyond "no crash, no sanitizer
 * report" it checks the reader's promises: every memory view lies inside the bytes given,
 * every error has a message and leaves no result, names and notes are NUL-terminated valid
 * UTF-8, register counts match the arch, and memory lookups return bytes inside the input.
 * Every thread is then walked (common/unwind, without unwind info: frame pointers and scans):
 * frames stay within UNWIND_WALK_MAX_FRAMES, stack pointers grow (an arm64 leaf's caller may
 * share its sp). Seeds: the real dumps of ../shared/minidumps/ (run.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "minidump/minidump.h"
#include "unwind/walk.h"
#include "fuzz_require.h"

static int inside(const uint8_t *q, uint64_t n, const uint8_t *base, size_t len)
{
    return q >= base && n <= len && (size_t)(q - base) <= len - n;
}

static void check_memory(const minidump_memory *m, const uint8_t *data, size_t len)
{
    if (m->data == NULL || m->size == 0)
        return;
    REQUIRE(inside(m->data, m->size, data, len));
}

static void check_text(const char *s)
{
    REQUIRE(s != NULL);
    REQUIRE(utf8_valid(s, strlen(s)));
}

static void check_context(const minidump_context *c)
{
    if (c->arch == MINIDUMP_ARCH_X86_64)
        REQUIRE(c->nregs == 17);
    else if (c->arch == MINIDUMP_ARCH_ARM64)
        REQUIRE(c->nregs == 33);
    else
        REQUIRE(c->nregs == 0);
    for (unsigned i = 0; i < c->nregs; i++)
        REQUIRE(minidump_reg_name(c->arch, i) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    arena *a = arena_new(64u << 20);
    minidump *md = (minidump *)&md; /* any non-NULL value: parse must reset it */
    err_info err = {0};
    err_code rc = minidump_parse(&md, data, len, a, &err);
    if (rc != ERR_OK) {
        REQUIRE(md == NULL);
        REQUIRE(err.msg[0] != '\0');
        REQUIRE(memchr(err.msg, '\0', sizeof err.msg) != NULL);
        arena_free(a);
        return 0;
    }
    REQUIRE(md != NULL);
    for (size_t i = 0; i < md->nthreads; i++) {
        const minidump_thread *t = &md->threads[i];
        check_memory(&t->stack, data, len);
        check_context(&t->context);
        if (t->name != NULL)
            check_text(t->name);
        REQUIRE(minidump_thread_find(md, t->thread_id) != NULL);
        const minidump_context *c = &t->context;
        if (c->arch != MINIDUMP_ARCH_UNKNOWN) {
            uint64_t sp = c->regs[c->arch == MINIDUMP_ARCH_X86_64 ? MINIDUMP_X86_64_RSP
                                                                   : MINIDUMP_ARM64_SP];
            const uint8_t *p = minidump_memory_find(md, sp, 16);
            if (p != NULL)
                REQUIRE(inside(p, 16, data, len));
        }
    }
    for (size_t i = 0; i < md->nmemory; i++)
        check_memory(&md->memory[i], data, len);
    for (size_t i = 0; i < md->nthreads; i++) {
        unwind_frame *f;
        size_t n;
        err_info werr = {0};
        if (unwind_walk(&f, &n, md, &md->threads[i].context, NULL, 0, a, &werr) != ERR_OK) {
            REQUIRE(werr.msg[0] != '\0');
            continue;
        }
        REQUIRE(n <= UNWIND_WALK_MAX_FRAMES);
        for (size_t k = 1; k < n; k++) {
            REQUIRE(f[k].sp >= f[k - 1].sp);
            REQUIRE(f[k].sp > f[k - 1].sp || k == 1);
            REQUIRE(f[k].module < (int)md->nmodules);
        }
    }
    for (size_t i = 0; i < md->nmodules; i++) {
        const minidump_module *m = &md->modules[i];
        check_text(m->name);
        for (size_t k = 0; k < m->nannotations; k++) {
            if (m->annotations[k].key != NULL)
                check_text(m->annotations[k].key);
            check_text(m->annotations[k].value);
        }
    }
    for (size_t i = 0; i < md->nannotations; i++) {
        check_text(md->annotations[i].key);
        check_text(md->annotations[i].value);
    }
    if (md->exception.present) {
        REQUIRE(md->exception.nparams <= 15);
        check_context(&md->exception.context);
        (void)minidump_crashed_thread(md);
    }
    if (md->has_system)
        check_text(md->system.csd_version);
    REQUIRE(md->nnotes <= 64);
    for (size_t i = 0; i < md->nnotes; i++) {
        check_text(md->notes[i]);
        REQUIRE(md->notes[i][0] != '\0');
    }
    arena_free(a);
    return 0;
}
