/*
 * Tests for common/minidump: the real macOS dumps of ../shared/minidumps/ (a Breakpad dump and
 * two Crashpad dumps: system info, threads, registers, exception, modules and their UUIDs
 * against the executable's LC_UUID), the malformed ones there, synthetic dumps for the ARM64
 * context layouts and EXC_CRASH as Breakpad writes it, and hostile input: every truncation
 * and bit flips of a real dump. Under ASan an out-of-bounds read fails the run.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/bytes.h"
#include "harness.h"
#include "macho/macho.h"
#include "minidump/minidump.h"

static char shared_path[4096];

/* dump_path - ../shared/minidumps/<rel> beside the source tree. */
static const char *dump_path(const char *rel)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    snprintf(shared_path, sizeof shared_path, "%s/../shared/minidumps/%s", src && *src ? src : "..",
             rel);
    return shared_path;
}

static bytes map_dump(const char *rel)
{
    bytes b = {0};
    err_info err = {0};
    if (bytes_map_file(&b, dump_path(rel), &err) != ERR_OK)
        fprintf(stderr, "cannot map %s: %s\n", shared_path, err.msg);
    return b;
}

static const minidump_module *module_named(const minidump *md, const char *suffix)
{
    size_t n = strlen(suffix);
    for (size_t i = 0; i < md->nmodules; i++) {
        size_t m = strlen(md->modules[i].name);
        if (m >= n && strcmp(md->modules[i].name + m - n, suffix) == 0)
            return &md->modules[i];
    }
    return NULL;
}

static const char *annotation(const minidump_annotation *a, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (key == NULL ? a[i].key == NULL : a[i].key != NULL && strcmp(a[i].key, key) == 0)
            return a[i].value;
    return NULL;
}

static const char *uuid_text(char out[37], const uint8_t uuid[16])
{
    macho_uuid_format(out, uuid);
    return out;
}

/* ---- real dumps ------------------------------------------------------------------------ */

static void breakpad_macos_x86_64(void)
{
    bytes b = map_dump("macos-x86_64-breakpad/macos.dmp");
    CHECK(b.data != NULL);
    if (b.data == NULL)
        return;
    arena *a = arena_new(0);
    minidump *md;
    err_info err = {0};
    CHECK_EQ_INT(minidump_parse(&md, b.data, b.len, a, &err), ERR_OK);
    if (err.code != ERR_OK)
        goto done;
    CHECK_EQ_INT(md->nnotes, 0);
    CHECK(md->has_system);
    CHECK_EQ_INT(md->system.arch, MINIDUMP_ARCH_X86_64);
    CHECK_EQ_U64(md->system.platform_id, 0x8101);
    CHECK_EQ_INT(md->system.os_major, 10);
    CHECK_EQ_INT(md->system.os_minor, 12);
    CHECK_EQ_INT(md->system.os_build, 6);
    CHECK_EQ_STR(md->system.csd_version, "16G29");

    /* Breakpad pads each list by 4 bytes after the count: one thread, 43 modules, 2 ranges. */
    CHECK_EQ_INT(md->nthreads, 1);
    CHECK_EQ_INT(md->nmodules, 43);
    CHECK_EQ_INT(md->nmemory, 2);
    const minidump_thread *t = &md->threads[0];
    CHECK_EQ_INT(t->thread_id, 775);
    CHECK_EQ_U64(t->stack.start_addr, 0x7fff56064110);
    CHECK_EQ_U64(t->stack.size, 0xef0);
    CHECK(t->stack.data != NULL);
    CHECK_EQ_INT(t->context.arch, MINIDUMP_ARCH_X86_64);
    CHECK_EQ_U64(t->context.regs[MINIDUMP_X86_64_RIP], 0x109ba8c15);
    CHECK_EQ_U64(t->context.regs[MINIDUMP_X86_64_RSP], 0x7fff56064110);
    CHECK_EQ_U64(t->context.regs[MINIDUMP_X86_64_RBP], 0x7fff56064258);
    CHECK_EQ_U64(t->context.regs[3], 0x7fff56064120); /* rbx */
    CHECK_EQ_U64(t->context.regs[4], 0x7fff56064140); /* rsi: DWARF 4, stored 7th */
    CHECK_EQ_U64(t->context.regs[8], 0xc0008ff);      /* r8 */
    CHECK_EQ_STR(minidump_reg_name(MINIDUMP_ARCH_X86_64, 16), "rip");

    /* EXC_BAD_ACCESS / KERN_INVALID_ADDRESS at 0x45, as Breakpad writes it. */
    const minidump_exception *e = &md->exception;
    CHECK(e->present);
    CHECK_EQ_INT(e->thread_id, 775);
    CHECK_EQ_INT(e->code, MINIDUMP_EXC_BAD_ACCESS);
    CHECK_EQ_INT(e->mach_type, MINIDUMP_EXC_BAD_ACCESS);
    CHECK_EQ_U64(e->mach_code, 1);
    CHECK_EQ_U64(e->address, 0x45);
    CHECK(!e->wrapped);
    CHECK_EQ_STR(minidump_mach_exception_name(e->mach_type), "EXC_BAD_ACCESS");
    CHECK_EQ_U64(e->context.regs[MINIDUMP_X86_64_RIP], 0x109ba8c15);
    CHECK(minidump_crashed_thread(md) == t);

    /* Breakpad's handler thread is named, and is not one of the dumped threads. */
    CHECK(md->has_dump_thread_id);
    CHECK_EQ_INT(md->dump_thread_id, 4611);
    CHECK(md->has_requesting_thread_id);
    CHECK_EQ_INT(md->requesting_thread_id, 775);
    CHECK(minidump_thread_find(md, 4611) == NULL);
    CHECK(md->has_process_id);
    CHECK_EQ_INT(md->process_id, 2984);

    /* The executable: its UUID is the crash binary's LC_UUID. */
    const minidump_module *m = &md->modules[0];
    CHECK_EQ_STR(m->name, "/Users/travis/build/getsentry/breakpad-tools/macos/build/./crash");
    CHECK_EQ_U64(m->load_addr, 0x109b9b000);
    CHECK_EQ_U64(m->size, 0x11000);
    CHECK(m->has_uuid);
    bytes exe = map_dump("macos-x86_64-breakpad/crash");
    static macho_image img;
    char got[37], want[37];
    if (exe.data != NULL && macho_parse(&img, exe.data, exe.len, &err) == ERR_OK) {
        CHECK(img.has_uuid);
        CHECK_EQ_STR(uuid_text(got, m->uuid), uuid_text(want, img.uuid));
    } else {
        CHECK(!"crash executable readable");
    }
    bytes_unmap(&exe);
    CHECK_EQ_STR(uuid_text(got, m->uuid), "67E9247C-814E-392B-A027-DBDE6748FCBF");
    const minidump_module *cf = module_named(md, "/CoreFoundation");
    CHECK(cf != NULL && cf->has_uuid);
    if (cf != NULL)
        CHECK_EQ_STR(uuid_text(got, cf->uuid), "36385A3A-60D3-32DB-BF55-C6D8931A7AA6");

    /* The stack is readable through the memory lookup, the instruction bytes at the pc too. */
    CHECK(minidump_memory_find(md, 0x7fff56064110, 8) == t->stack.data);
    CHECK(minidump_memory_find(md, 0x7fff56064110 + 0xef0 - 8, 8) != NULL);
    CHECK(minidump_memory_find(md, 0x7fff56064110 + 0xef0 - 7, 8) == NULL);
done:
    arena_free(a);
    bytes_unmap(&b);
}

static void crashpad_simple_sigabrt(void)
{
    bytes b = map_dump("crashpad/simple-crashpad.dmp");
    CHECK(b.data != NULL);
    if (b.data == NULL)
        return;
    arena *a = arena_new(0);
    minidump *md;
    err_info err = {0};
    CHECK_EQ_INT(minidump_parse(&md, b.data, b.len, a, &err), ERR_OK);
    if (err.code != ERR_OK)
        goto done;
    CHECK_EQ_INT(md->nnotes, 0);
    CHECK_EQ_STR(md->system.csd_version, "19H114");
    CHECK_EQ_INT(md->system.os_minor, 15);
    CHECK_EQ_INT(md->nthreads, 1);
    CHECK_EQ_INT(md->nmodules, 40);
    CHECK_EQ_INT(md->process_id, 56685);
    const minidump_thread *t = &md->threads[0];
    CHECK_EQ_INT(t->thread_id, 927532);
    CHECK_EQ_U64(t->context.regs[MINIDUMP_X86_64_RIP], 0x7fff6f41333a);
    CHECK_EQ_U64(t->context.regs[MINIDUMP_X86_64_RSP], 0x7ffee1c16bf8);

    /* abort(): EXC_CRASH wrapping no Mach exception, signal 6, as Apple's reports show it
     * ("EXC_CRASH (SIGABRT)"); Crashpad keeps the raw codes in ExceptionInformation. */
    const minidump_exception *e = &md->exception;
    CHECK(e->present);
    CHECK_EQ_INT(e->thread_id, 927532);
    CHECK(e->wrapped);
    CHECK_EQ_INT(e->signal, 6);
    CHECK_EQ_STR(minidump_signal_name(e->signal), "SIGABRT");
    CHECK_EQ_INT(e->mach_type, 0);
    CHECK_EQ_INT(e->nparams, 3);
    CHECK_EQ_U64(e->params[0], MINIDUMP_EXC_CRASH);

    char got[37];
    CHECK_EQ_STR(md->modules[0].name, "/Users/ted/src/crashy");
    CHECK_EQ_STR(uuid_text(got, md->modules[0].uuid), "EF1091E3-81DA-369B-9039-EA1591D07E0B");

    /* Crashpad annotations: the process's simple ones, a module's list annotation. */
    CHECK(md->has_crashpad_info);
    CHECK_EQ_STR(annotation(md->annotations, md->nannotations, "hello"), "world");
    const minidump_module *libc = module_named(md, "/libsystem_c.dylib");
    CHECK(libc != NULL);
    if (libc != NULL)
        CHECK_EQ_STR(annotation(libc->annotations, libc->nannotations, NULL), "abort() called");
done:
    arena_free(a);
    bytes_unmap(&b);
}

static void crashpad_electron_sigill(void)
{
    bytes b = map_dump("crashpad/electron-1.4.3-mac.dmp");
    CHECK(b.data != NULL);
    if (b.data == NULL)
        return;
    arena *a = arena_new(0);
    minidump *md;
    err_info err = {0};
    CHECK_EQ_INT(minidump_parse(&md, b.data, b.len, a, &err), ERR_OK);
    if (err.code != ERR_OK)
        goto done;
    CHECK_EQ_INT(md->nnotes, 0);
    CHECK_EQ_INT(md->nthreads, 17);
    CHECK_EQ_INT(md->nmodules, 217);
    CHECK_EQ_INT(md->nmemory, 17);
    CHECK_EQ_STR(md->system.csd_version, "15G1004");
    for (size_t i = 0; i < md->nthreads; i++) {
        CHECK_EQ_INT(md->threads[i].context.arch, MINIDUMP_ARCH_X86_64);
        CHECK(md->threads[i].stack.data != NULL);
    }
    /* EXC_CRASH carrying EXC_BAD_INSTRUCTION code 1 and SIGILL. */
    const minidump_exception *e = &md->exception;
    CHECK_EQ_INT(e->thread_id, 6722809);
    CHECK(e->wrapped);
    CHECK_EQ_INT(e->signal, 4);
    CHECK_EQ_STR(minidump_mach_exception_name(e->mach_type), "EXC_BAD_INSTRUCTION");
    CHECK_EQ_U64(e->mach_code, 1);
    CHECK_EQ_U64(e->context.regs[MINIDUMP_X86_64_RIP], 0x10ce0a4e4);
    const minidump_module *fw = module_named(md, "/Electron Framework");
    CHECK(fw != NULL);
    if (fw != NULL) {
        char got[37];
        CHECK_EQ_STR(uuid_text(got, fw->uuid), "02DB4A28-EC3E-3BF8-833F-A54C0D5E8635");
        CHECK_EQ_STR(annotation(fw->annotations, fw->nannotations, "ver"), "1.4.3");
        CHECK_EQ_STR(annotation(fw->annotations, fw->nannotations, "process_type"), "renderer");
    }
done:
    arena_free(a);
    bytes_unmap(&b);
}

/* "invalid-parameter" is a well-formed Windows dump of an invalid-parameter exception
 * (STATUS_INVALID_PARAMETER): read like any other; the macOS-only parts stay empty. */
static void windows_invalid_parameter_dump_reads(void)
{
    bytes b = map_dump("invalid/invalid-parameter.dmp");
    CHECK(b.data != NULL);
    if (b.data == NULL)
        return;
    arena *a = arena_new(0);
    minidump *md;
    err_info err = {0};
    CHECK_EQ_INT(minidump_parse(&md, b.data, b.len, a, &err), ERR_OK);
    if (err.code == ERR_OK) {
        CHECK_EQ_U64(md->system.platform_id, 2);
        CHECK_EQ_U64(md->exception.code, 0xc000000d);
        CHECK_EQ_INT(md->nthreads, 6);
        CHECK_EQ_INT(md->nmodules, 31);
        CHECK(!md->modules[0].nannotations);
    }
    arena_free(a);
    bytes_unmap(&b);
}

static void malformed_dumps_are_refused(void)
{
    static const char *const FILES[] = {"invalid/invalid-range.dmp",
                                        "invalid/invalid-record-count.dmp"};
    for (size_t i = 0; i < 2; i++) {
        bytes b = map_dump(FILES[i]);
        CHECK(b.data != NULL);
        arena *a = arena_new(0);
        minidump *md = (minidump *)1;
        err_info err = {0};
        CHECK_EQ_INT(minidump_parse(&md, b.data, b.len, a, &err), ERR_INVALID);
        CHECK(md == NULL);
        CHECK(strstr(err.msg, "no readable thread list, module list or exception") != NULL);
        arena_free(a);
        bytes_unmap(&b);
    }
    arena *a = arena_new(0);
    minidump *md;
    err_info err = {0};
    CHECK_EQ_INT(minidump_parse(&md, (const uint8_t *)"MDMP", 4, a, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "header needs 32 bytes") != NULL);
    uint8_t text[64] = "Incident Identifier: 1234\nCrashReporter Key: abc\n";
    CHECK_EQ_INT(minidump_parse(&md, text, sizeof text, a, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "not a minidump") != NULL);
    arena_free(a);
}

/* ---- synthetic dumps ------------------------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* make_arm64_dump - header, directory (system info, thread list with `pad` bytes after the
 * count, exception), one thread whose context has `ctx_flags` in the layout Crashpad
 * (old == false) or Breakpad's older ARM64 (old == true) writes; x_i = 0x1000 + i, sp, pc.
 * The exception is EXC_CRASH as Breakpad writes it: type as code, code[0] as flags.
 * Returns the size. */
static size_t make_arm64_dump(uint8_t *b, size_t cap, bool old, uint32_t pad)
{
    memset(b, 0, cap);
    put32(b, 0x504d444d);
    put32(b + 4, 0xa793);
    put32(b + 8, 3);
    put32(b + 12, 32);
    uint8_t *dir = b + 32;
    size_t sys = 32 + 3 * 12, threads = sys + 56, exc = threads + 4 + pad + 48;
    size_t ctx = exc + 168, ctx_size = old ? 796 : 912, name = ctx + ctx_size;
    put32(dir, MINIDUMP_STREAM_SYSTEM_INFO), put32(dir + 4, 56), put32(dir + 8, (uint32_t)sys);
    put32(dir + 12, MINIDUMP_STREAM_THREAD_LIST), put32(dir + 16, 4 + pad + 48);
    put32(dir + 20, (uint32_t)threads);
    put32(dir + 24, MINIDUMP_STREAM_EXCEPTION), put32(dir + 28, 168), put32(dir + 32, (uint32_t)exc);
    put16(b + sys, old ? 0x8003 : 12);
    put32(b + sys + 20, 0x8102); /* iOS */
    put32(b + sys + 24, (uint32_t)name);
    /* CSDVersion "20A" plus U+1F600 as a surrogate pair, then an unpaired low surrogate */
    static const uint16_t NAME[] = {'2', '0', 'A', 0xd83d, 0xde00, 0xdc00};
    put32(b + name, sizeof NAME);
    for (size_t i = 0; i < 6; i++)
        put16(b + name + 4 + 2 * i, NAME[i]);
    put32(b + threads, 1);
    uint8_t *t = b + threads + 4 + pad;
    put32(t, 42);
    put32(t + 40, (uint32_t)ctx_size), put32(t + 44, (uint32_t)ctx);
    uint8_t *c = b + ctx;
    if (old) {
        put64(c, 0x80000003);
        for (unsigned i = 0; i < 31; i++)
            put64(c + 8 + 8 * i, 0x1000 + i);
        put64(c + 8 + 31 * 8, 0x16fdff000); /* sp */
        put64(c + 8 + 32 * 8, 0x100004000); /* pc */
        put32(c + 8 + 33 * 8, 0x60000000);  /* cpsr */
    } else {
        put32(c, 0x00400003);
        put32(c + 4, 0x60000000);
        for (unsigned i = 0; i < 31; i++)
            put64(c + 8 + 8 * i, 0x1000 + i);
        put64(c + 256, 0x16fdff000);
        put64(c + 264, 0x100004000);
    }
    put32(b + exc, 42);
    put32(b + exc + 8, MINIDUMP_EXC_CRASH);
    put32(b + exc + 12, (11u << 24) | (1u << 20) | 2u); /* SIGSEGV, EXC_BAD_ACCESS, code 2 */
    put32(b + exc + 160, (uint32_t)ctx_size), put32(b + exc + 164, (uint32_t)ctx);
    size_t len = name + 4 + sizeof NAME;
    CHECK(len <= cap);
    return len;
}

static void arm64_contexts_both_layouts(void)
{
    static uint8_t buf[4096];
    for (int old = 0; old <= 1; old++) {
        for (uint32_t pad = 0; pad <= 4; pad += 4) {
            size_t len = make_arm64_dump(buf, sizeof buf, old, pad);
            arena *a = arena_new(0);
            minidump *md;
            err_info err = {0};
            CHECK_EQ_INT(minidump_parse(&md, buf, len, a, &err), ERR_OK);
            if (err.code != ERR_OK) {
                fprintf(stderr, "old=%d pad=%u: %s\n", old, pad, err.msg);
                arena_free(a);
                continue;
            }
            CHECK_EQ_INT(md->nnotes, 0);
            CHECK_EQ_INT(md->system.arch, MINIDUMP_ARCH_ARM64);
            CHECK_EQ_STR(md->system.csd_version, "20A\xf0\x9f\x98\x80\xef\xbf\xbd");
            CHECK_EQ_INT(md->nthreads, 1);
            const minidump_context *c = &md->threads[0].context;
            CHECK_EQ_INT(c->arch, MINIDUMP_ARCH_ARM64);
            CHECK_EQ_INT(c->nregs, 33);
            CHECK_EQ_U64(c->regs[0], 0x1000);
            CHECK_EQ_U64(c->regs[MINIDUMP_ARM64_FP], 0x1000 + 29);
            CHECK_EQ_U64(c->regs[MINIDUMP_ARM64_LR], 0x1000 + 30);
            CHECK_EQ_U64(c->regs[MINIDUMP_ARM64_SP], 0x16fdff000);
            CHECK_EQ_U64(c->regs[MINIDUMP_ARM64_PC], 0x100004000);
            CHECK_EQ_U64(c->status, 0x60000000);
            CHECK_EQ_STR(minidump_reg_name(c->arch, MINIDUMP_ARM64_LR), "lr");
            const minidump_exception *e = &md->exception;
            CHECK(e->wrapped);
            CHECK_EQ_INT(e->signal, 11);
            CHECK_EQ_INT(e->mach_type, MINIDUMP_EXC_BAD_ACCESS);
            CHECK_EQ_U64(e->mach_code, 2);
            CHECK_EQ_U64(e->context.regs[MINIDUMP_ARM64_PC], 0x100004000);
            arena_free(a);
        }
    }
}

/* A context pointing outside the dump, a count larger than its stream: notes, not errors. */
static void unreadable_parts_become_notes(void)
{
    static uint8_t buf[4096];
    size_t len = make_arm64_dump(buf, sizeof buf, false, 0);
    size_t threads = 32 + 36 + 56;
    put32(buf + threads + 4 + 44, 0xfffff000); /* thread context rva */
    put32(buf + threads, 1000);                 /* thread count */
    arena *a = arena_new(0);
    minidump *md;
    err_info err = {0};
    CHECK_EQ_INT(minidump_parse(&md, buf, len, a, &err), ERR_OK);
    if (err.code == ERR_OK) {
        CHECK_EQ_INT(md->nthreads, 1);
        CHECK_EQ_INT(md->threads[0].context.arch, MINIDUMP_ARCH_UNKNOWN);
        CHECK_EQ_INT(md->exception.context.arch, MINIDUMP_ARCH_ARM64); /* still read */
        CHECK_EQ_INT(md->nnotes, 2);
        if (md->nnotes == 2) {
            CHECK(strstr(md->notes[0], "thread list: count 1000") != NULL);
            CHECK(strstr(md->notes[1], "thread 42: context rva 0xfffff000") != NULL);
        }
    }
    arena_free(a);
}

/* Many entries naming one long string cost no more than the dump's size allows. */
static void shared_strings_are_bounded(void)
{
    enum { NMOD = 2000, NAME_UNITS = 8192 };
    size_t mods = 32 + 12, name = mods + 4 + (size_t)NMOD * 108, len = name + 4 + 2 * NAME_UNITS;
    uint8_t *b = calloc(1, len);
    put32(b, 0x504d444d);
    put32(b + 4, 0xa793);
    put32(b + 8, 1);
    put32(b + 12, 32);
    put32(b + 32, MINIDUMP_STREAM_MODULE_LIST);
    put32(b + 36, 4 + NMOD * 108);
    put32(b + 40, (uint32_t)mods);
    put32(b + mods, NMOD);
    for (size_t i = 0; i < NMOD; i++)
        put32(b + mods + 4 + i * 108 + 20, (uint32_t)name);
    put32(b + name, 2 * NAME_UNITS);
    for (size_t i = 0; i < NAME_UNITS; i++)
        put16(b + name + 4 + 2 * i, 0x4e2d); /* a CJK character: 3 UTF-8 bytes */
    arena *a = arena_new(0);
    minidump *md;
    err_info err = {0};
    CHECK_EQ_INT(minidump_parse(&md, b, len, a, &err), ERR_OK);
    if (err.code == ERR_OK) {
        CHECK_EQ_INT(md->nmodules, NMOD);
        CHECK_EQ_INT(strlen(md->modules[0].name), 3 * NAME_UNITS);
        CHECK_EQ_STR(md->modules[NMOD - 1].name, "");
        CHECK(md->nnotes == 1 && strstr(md->notes[0], "strings: more text") != NULL);
        CHECK(arena_used(a) < 4 * len + (2u << 20));
    }
    arena_free(a);
    free(b);
}

/* ---- hostile input --------------------------------------------------------------------- */

static void check_result(err_code rc, const err_info *err, const minidump *md)
{
    if (rc != ERR_OK) {
        CHECK(err->msg[0] != '\0');
        CHECK(md == NULL);
        return;
    }
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < md->nthreads; i++)
        if (md->threads[i].stack.data != NULL && md->threads[i].stack.size > 0)
            sink ^= md->threads[i].stack.data[md->threads[i].stack.size - 1];
    for (size_t i = 0; i < md->nmemory; i++)
        if (md->memory[i].data != NULL && md->memory[i].size > 0)
            sink ^= md->memory[i].data[md->memory[i].size - 1];
    for (size_t i = 0; i < md->nmodules; i++)
        CHECK(md->modules[i].name != NULL);
    for (size_t i = 0; i < md->nnotes; i++)
        CHECK(md->notes[i][0] != '\0');
    (void)sink;
}

static void every_truncation_and_bit_flips(void)
{
    bytes b = map_dump("macos-x86_64-breakpad/macos.dmp");
    CHECK(b.data != NULL);
    if (b.data == NULL)
        return;
    uint8_t *copy = malloc(b.len);
    size_t noted = 0;
    for (size_t n = 0; n < b.len; n += n < 1024 ? 1 : 13) {
        /* a fresh heap copy of exactly n bytes: ASan sees any read past the end */
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, b.data, n);
        arena *a = arena_new(0);
        minidump *md = NULL;
        err_info err = {0};
        err_code rc = minidump_parse(&md, cut, n, a, &err);
        check_result(rc, &err, md);
        noted += rc == ERR_OK && md->nnotes > 0;
        arena_free(a);
        free(cut);
    }
    CHECK(noted > 0); /* cut streams are named, not fatal */
    uint32_t seed = 12345;
    for (int i = 0; i < 4000; i++) {
        memcpy(copy, b.data, b.len);
        for (int k = 0; k < 4; k++) {
            seed = seed * 1103515245u + 12345u;
            /* most flips land in the header, directory and stream headers at the front */
            size_t at = (seed >> 8) % (i % 2 ? b.len : 400);
            copy[at] ^= (uint8_t)(1u << ((seed >> 4) & 7));
        }
        arena *a = arena_new(0);
        minidump *md = NULL;
        err_info err = {0};
        err_code rc = minidump_parse(&md, copy, b.len, a, &err);
        check_result(rc, &err, md);
        arena_free(a);
    }
    free(copy);
    bytes_unmap(&b);
}

/* A tiny arena budget ends the parse with ERR_TOO_LARGE, never a partial result. */
static void arena_budget_is_an_error(void)
{
    bytes b = map_dump("crashpad/electron-1.4.3-mac.dmp");
    if (b.data == NULL)
        return;
    for (size_t budget = 64; budget < 200000; budget *= 3) {
        arena *a = arena_new(budget);
        minidump *md = NULL;
        err_info err = {0};
        err_code rc = minidump_parse(&md, b.data, b.len, a, &err);
        CHECK(rc == ERR_OK || (rc == ERR_TOO_LARGE && md == NULL));
        arena_free(a);
    }
    bytes_unmap(&b);
}

int main(void)
{
    RUN(breakpad_macos_x86_64);
    RUN(crashpad_simple_sigabrt);
    RUN(crashpad_electron_sigill);
    RUN(windows_invalid_parameter_dump_reads);
    RUN(malformed_dumps_are_refused);
    RUN(arm64_contexts_both_layouts);
    RUN(unreadable_parts_become_notes);
    RUN(shared_strings_are_bounded);
    RUN(every_truncation_and_bit_flips);
    RUN(arena_budget_is_an_error);
    return harness_done();
}
