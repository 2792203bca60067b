/*
 * test_breakpad - Breakpad .sym files (common/breakpad, common/dsym/dsym_breakpad.c): the
 * parser on the shared crash.sym (../shared/minidumps/macos-x86_64-breakpad, never copied) and
 * on hostile text, the postfix evaluator, the symcache a .sym becomes (names, lines, the
 * STACK CFI section), and the walker's use of that CFI against the executable's own
 * __eh_frame (what dump_syms wrote the rows from).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/bytes.h"
#include "breakpad/breakpad.h"
#include "dsym/dsym.h"
#include "dsym/dsym_breakpad.h"
#include "harness.h"
#include "macho/macho.h"
#include "symcache/symcache.h"
#include "unwind/unwind.h"
#include "unwind/walk.h"

static macho_image exe; /* large: off the stack */

static const char *shared_path(char *out, size_t cap, const char *file)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    snprintf(out, cap, "%s/../shared/minidumps/macos-x86_64-breakpad/%s", src ? src : "..", file);
    return out;
}

/* The shared crash.sym mapped into *b and parsed into *s (in `a`), its executable `crash`
 * mapped into *x and parsed into `exe`. false, after a failed check, when either is unreadable
 * or does not parse; the caller unmaps b and x either way. */
static bool load_shared(breakpad_sym **s, bytes *b, bytes *x, arena *a)
{
    char path[4096];
    err_info err = {0};
    if (bytes_map_file(b, shared_path(path, sizeof path, "crash.sym"), &err) != ERR_OK ||
        bytes_map_file(x, shared_path(path, sizeof path, "crash"), &err) != ERR_OK ||
        macho_parse(&exe, x->data, x->len, &err) != ERR_OK) {
        CHECK(!"shared crash.sym and crash readable");
        return false;
    }
    err_code rc = breakpad_parse(s, b->data, b->len, a, &err);
    CHECK_EQ_INT(rc, ERR_OK);
    return rc == ERR_OK;
}

static void parses_shared_sym(void)
{
    bytes b = {0}, x = {0};
    err_info err = {0};
    arena *a = arena_new(0);
    breakpad_sym *s;
    if (!load_shared(&s, &b, &x, a))
        goto done;
    CHECK_EQ_STR(s->os, "mac");
    CHECK_EQ_STR(s->arch, "x86_64");
    CHECK_EQ_STR(s->name, "crash");
    /* the MODULE id's 32 hex digits are the executable's LC_UUID byte for byte, age 0 */
    CHECK(exe.has_uuid && memcmp(s->uuid, exe.uuid, 16) == 0);
    CHECK_EQ_INT(s->age, 0);
    char id[41];
    breakpad_debug_id(id, s->uuid, s->age);
    CHECK_EQ_STR(id, "67E9247C814E392BA027DBDE6748FCBF0");
    /* record counts as grep counts them in the file */
    CHECK_EQ_INT(s->nfiles, 35);
    CHECK_EQ_INT(s->nfuncs, 193);
    CHECK_EQ_INT(s->npublics, 61);
    CHECK_EQ_INT(s->nlines, 5593);
    CHECK_EQ_INT(s->ncfi + s->ndeltas, 213);
    CHECK_EQ_INT(s->skipped, 0);
    size_t lines = 0;
    for (size_t i = 0; i < s->nfuncs; i++)
        lines += s->funcs[i].nlines;
    CHECK_EQ_INT(lines, s->nlines);
    const breakpad_func *main_fn = NULL;
    for (size_t i = 0; i < s->nfuncs; i++)
        if (strcmp(s->funcs[i].name, "main") == 0)
            main_fn = &s->funcs[i];
    CHECK(main_fn != NULL && main_fn->addr == 0xdba0 && main_fn->size == 0xc3);
    /* every STACK CFI INIT address finds its own rules first */
    buf t;
    buf_init(&t);
    size_t kept = breakpad_cfi_encode(&t, s);
    CHECK_EQ_INT(kept, s->ncfi);
    breakpad_cfi cfi;
    CHECK_EQ_INT(breakpad_cfi_open(&cfi, t.data, t.len, &err), ERR_OK);
    size_t found = 0;
    for (size_t i = 0; i < s->ncfi; i++) {
        const char *r[BREAKPAD_CFI_MAX_RULES];
        size_t n = breakpad_cfi_find(r, BREAKPAD_CFI_MAX_RULES, &cfi, s->cfi[i].addr + s->cfi[i].size - 1);
        found += n == 1 + s->cfi[i].ndeltas && strcmp(r[0], s->cfi[i].rules) == 0;
        CHECK_EQ_INT(breakpad_cfi_find(r, BREAKPAD_CFI_MAX_RULES, &cfi, s->cfi[i].addr + s->cfi[i].size) > 0 &&
                         (i + 1 == s->ncfi || s->cfi[i + 1].addr != s->cfi[i].addr + s->cfi[i].size),
                     0);
    }
    CHECK_EQ_INT(found, s->ncfi);
    /* a corrupt table is refused or answers nothing, never reads outside it */
    for (size_t cut = 0; cut < t.len; cut += 7)
        CHECK(breakpad_cfi_open(&cfi, t.data, cut, &err) == ERR_INVALID);
    buf_reset(&t);
done:
    arena_free(a);
    bytes_unmap(&b);
    bytes_unmap(&x);
}

static uint8_t memory[256];
static const uint64_t MEM_BASE = 0x7000;

static bool read_mem(uint64_t *out, uint64_t addr, void *ctx)
{
    (void)ctx;
    if (addr < MEM_BASE || addr - MEM_BASE > sizeof memory - 8)
        return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | memory[addr - MEM_BASE + (uint64_t)i];
    *out = v;
    return true;
}

static void evaluates_rules(void)
{
    for (size_t i = 0; i < sizeof memory; i++)
        memory[i] = (uint8_t)i;
    breakpad_regs cur = {{0}, 0}, out;
    cur.regs[7] = MEM_BASE + 0x10; /* rsp */
    cur.regs[6] = MEM_BASE + 0x40; /* rbp */
    cur.valid = 1u << 7 | 1u << 6;
    uint64_t cfa, ra;
    const char *frame[] = {".cfa: $rsp 16 + .ra: .cfa -8 + ^", "$rbp: .cfa -16 + ^"};
    memset(&out, 0, sizeof out);
    CHECK(breakpad_cfi_eval(&out, &cfa, &ra, frame, 2, BREAKPAD_ARCH_X86_64, &cur, read_mem, NULL));
    CHECK_EQ_U64(cfa, MEM_BASE + 0x20);
    CHECK_EQ_U64(ra, 0x1f1e1d1c1b1a1918ull);
    CHECK_EQ_U64(out.regs[6], 0x1716151413121110ull);
    CHECK_EQ_U64(out.regs[7], cfa);
    CHECK_EQ_U64(out.regs[16], ra);
    /* a later text overrides a register: .cfa from rbp now */
    const char *later[] = {".cfa: $rsp 8 + .ra: .cfa -8 + ^", ".cfa: $rbp 16 +"};
    CHECK(breakpad_cfi_eval(&out, &cfa, &ra, later, 2, BREAKPAD_ARCH_X86_64, &cur, read_mem, NULL));
    CHECK_EQ_U64(cfa, MEM_BASE + 0x50);
    /* arithmetic: * / % @ and hex, negative numbers wrap */
    const char *arith[] = {".cfa: $rsp 3 * 0x10 - 4 / .ra: 100 7 % 0x1234 16 @ +"};
    CHECK(breakpad_cfi_eval(&out, &cfa, &ra, arith, 1, BREAKPAD_ARCH_X86_64, &cur, read_mem, NULL));
    CHECK_EQ_U64(cfa, ((MEM_BASE + 0x10) * 3 - 0x10) / 4);
    CHECK_EQ_U64(ra, 2 + 0x1230);
    /* failures: division by zero, an unknown register, memory not captured, no .ra, a stack
     * left with two values, stack overflow, an alignment that is no power of two */
    const char *bad[] = {
        ".cfa: $rsp 0 / .ra: 1",          ".cfa: $rsp 0 % .ra: 1",      ".cfa: $zzz .ra: 1",
        ".cfa: $rsp .ra: 0 ^",            ".cfa: $rsp 8 +",             ".cfa: $rsp 8 .ra: 1",
        ".cfa: $rsp 3 @ .ra: 1",          ".cfa: + .ra: 1",             ".cfa: $rax .ra: 1",
        ".cfa: .ra: 1",                   ".ra: 1",                     ".cfa: .cfa .ra: 1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *one[] = {bad[i]};
        if (breakpad_cfi_eval(&out, &cfa, &ra, one, 1, BREAKPAD_ARCH_X86_64, &cur, read_mem, NULL))
            fprintf(stderr, "evaluated: %s\n", bad[i]);
        CHECK(!breakpad_cfi_eval(&out, &cfa, &ra, one, 1, BREAKPAD_ARCH_X86_64, &cur, read_mem, NULL));
    }
    char deep[1024] = ".cfa:";
    for (int i = 0; i < BREAKPAD_STACK_MAX + 1; i++)
        strcat(deep, " 1");
    strcat(deep, " .ra: 1");
    const char *d[] = {deep};
    CHECK(!breakpad_cfi_eval(&out, &cfa, &ra, d, 1, BREAKPAD_ARCH_X86_64, &cur, read_mem, NULL));
    /* a register rule that fails clears that register only */
    const char *partial[] = {".cfa: $rsp 8 + .ra: 5 $rbx: 0 ^"};
    out.regs[3] = 1;
    out.valid = 1u << 3;
    CHECK(breakpad_cfi_eval(&out, &cfa, &ra, partial, 1, BREAKPAD_ARCH_X86_64, &cur, read_mem, NULL));
    CHECK(!(out.valid & 1u << 3));
    /* arm64: $x29, $sp, lr/pc names, with and without `$` */
    breakpad_regs a64 = {{0}, 0};
    a64.regs[31] = MEM_BASE + 0x20;
    a64.regs[29] = MEM_BASE + 0x30;
    a64.valid = 1ull << 31 | 1ull << 29;
    const char *arm[] = {".cfa: $x29 16 + .ra: .cfa -8 + ^ x29: .cfa -16 + ^ $x19: $sp"};
    memset(&out, 0, sizeof out);
    CHECK(breakpad_cfi_eval(&out, &cfa, &ra, arm, 1, BREAKPAD_ARCH_ARM64, &a64, read_mem, NULL));
    CHECK_EQ_U64(cfa, MEM_BASE + 0x40);
    CHECK_EQ_U64(ra, 0x3f3e3d3c3b3a3938ull);
    CHECK_EQ_U64(out.regs[29], 0x3736353433323130ull);
    CHECK_EQ_U64(out.regs[19], MEM_BASE + 0x20);
    CHECK_EQ_U64(out.regs[32], ra);
}

static void refuses_and_skips_hostile_text(void)
{
    arena *a = arena_new(1u << 20);
    breakpad_sym *s;
    err_info err = {0};
    const char *refused[] = {"", "MODULE", "MODULE mac x86_64", "MODULE mac x86_64 67E9 crash",
                             "MODULE mac x86_64 ZZE9247C814E392BA027DBDE6748FCBF0 crash",
                             "FUNC 0 1 0 main\nMODULE mac x86_64 67E9247C814E392BA027DBDE6748FCBF0 x"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        err_info e = {0};
        CHECK_EQ_INT(breakpad_parse(&s, (const uint8_t *)refused[i], strlen(refused[i]), a, &e), ERR_INVALID);
        CHECK(e.msg[0] != '\0');
    }
    const char *text =
        "MODULE mac arm64 000102030405060708090A0B0C0D0E0F1A app\r\n"
        "INFO CODE_ID 000102030405060708090A0B0C0D0E0F\n"
        "10 4 7 0\n"                                    /* a line before any FUNC */
        "FILE 0 /src/a.c\nFILE x /bad\nINLINE_ORIGIN 0 inl\n"
        "FUNC m 1000 40 0 f(int)\n"
        "1000 10 3 0\n1010 zz 4 0\n1020 20 99999999999 0\n"
        "INLINE 0 5 0 0 1004 8\nINLINE 2 5 0 0 1004 8\nINLINE 1 6 0 0 1004 4 1020\n"
        "INLINE 63 1 0 0 1000 1\n"
        "PUBLIC m 2000 0 pub\nPUBLIC zz\n"
        "STACK CFI 1000 .cfa: sp\n"                     /* a delta before any INIT */
        "STACK CFI INIT 1000 40 .cfa: $sp 0 + .ra: $x30\nSTACK CFI 1010 .cfa: $x29 16 +\n"
        "STACK WIN 4 1000 40 0 0 0 0 0 0 1 prog\nSTACK FOO\nUNKNOWN RECORD\n"
        "FUNC 18446744073709551615 1 0 overflowing\nFUNC ffffffffffffffff 1 0 wraps\n";
    CHECK_EQ_INT(breakpad_parse(&s, (const uint8_t *)text, strlen(text), a, &err), ERR_OK);
    CHECK_EQ_STR(s->arch, "arm64");
    CHECK_EQ_INT(s->age, 0x1a);
    CHECK_EQ_INT(s->uuid[15], 0x0f);
    CHECK_EQ_STR(s->code_id, "000102030405060708090A0B0C0D0E0F");
    CHECK_EQ_INT(s->nfuncs, 2);
    CHECK(s->nfuncs > 0 && s->funcs[0].multiple && strcmp(s->funcs[0].name, "f(int)") == 0);
    CHECK_EQ_INT(s->nlines, 1);
    CHECK_EQ_INT(s->ninlines, 1);        /* depth 2 has no depth-1 parent; depth 63 too deep;
                                            the range "1020" has no size */
    CHECK_EQ_INT(s->npublics, 1);
    CHECK_EQ_INT(s->ncfi, 1);
    CHECK_EQ_INT(s->ndeltas, 1);
    CHECK_EQ_INT(s->stack_win, 1);
    CHECK_EQ_INT(s->nfiles, 1);
    CHECK_EQ_INT(s->first_skipped_line, 3);
    CHECK(s->skipped >= 10);
    /* every prefix parses or is refused with a message, under a small budget too */
    for (size_t cut = 0; cut <= strlen(text); cut++) {
        arena *small = arena_new(cut * 8 + 256);
        err_info e = {0};
        err_code rc = breakpad_parse(&s, (const uint8_t *)text, cut, small, &e);
        CHECK(rc == ERR_OK || e.msg[0] != '\0');
        arena_free(small);
    }
    /* the symcache of the hostile text builds, and the overflowing FUNC is left out */
    buf out;
    buf_init(&out);
    symcache_build_stats st;
    CHECK_EQ_INT(breakpad_parse(&s, (const uint8_t *)text, strlen(text), a, &err), ERR_OK);
    err_code rc = dsym_breakpad_build(&out, &st, s, 1, &err);
    CHECK(rc == ERR_OK || rc == ERR_UNSUPPORTED);
    buf_reset(&out);
    arena_free(a);
}

/* The symcache of crash.sym answers every FUNC by its name and every line record by its
 * line and file; its STACK CFI section is the table breakpad_cfi_encode writes. */
static void symcache_from_shared_sym(void)
{
    char path[4096];
    bytes b = {0};
    err_info err = {0};
    if (bytes_map_file(&b, shared_path(path, sizeof path, "crash.sym"), &err) != ERR_OK) {
        CHECK(!"crash.sym readable");
        return;
    }
    arena *a = arena_new(0);
    breakpad_sym *s;
    CHECK_EQ_INT(breakpad_parse(&s, b.data, b.len, a, &err), ERR_OK);
    buf out;
    buf_init(&out);
    symcache_build_stats st;
    CHECK_EQ_INT(dsym_breakpad_build(&out, &st, s, 2, &err), ERR_OK);
    symcache *sc = NULL;
    CHECK_EQ_INT(symcache_open_bytes(&sc, out.data, out.len, &err), ERR_OK);
    if (sc == NULL)
        goto done;
    CHECK(symcache_from_breakpad(sc));
    CHECK(symcache_has_dwarf(sc));
    CHECK_EQ_STR(symcache_arch(sc), "x86_64");
    CHECK_EQ_STR(symcache_image_name(sc), "crash");
    CHECK(memcmp(symcache_uuid(sc), s->uuid, 16) == 0);
    CHECK_EQ_U64(symcache_text_vmaddr(sc), 0);
    size_t named = 0, lined = 0, checked = 0;
    symcache_frame fr[SYMCACHE_MAX_FRAMES];
    for (size_t i = 0; i < s->nfuncs; i++) {
        const breakpad_func *f = &s->funcs[i];
        size_t n = symcache_lookup(fr, SYMCACHE_MAX_FRAMES, sc, f->addr);
        named += n > 0 && strcmp(fr[n - 1].function, f->name) == 0;
        for (size_t k = 0; k < f->nlines; k++) {
            const breakpad_line *l = &s->lines[f->first_line + k];
            if (l->size == 0)
                continue;
            checked++;
            n = symcache_lookup(fr, SYMCACHE_MAX_FRAMES, sc, l->addr);
            const char *file = NULL;
            for (size_t j = 0; j < s->nfiles; j++)
                if (s->files[j].id == l->file)
                    file = s->files[j].name;
            lined += n > 0 && fr[0].line == l->line && file != NULL && fr[0].file != NULL &&
                     strcmp(fr[0].file, file) == 0;
        }
    }
    CHECK_EQ_INT(named, s->nfuncs);
    fprintf(stderr, "crash.sym symcache: %zu/%zu functions, %zu/%zu line records\n", named,
            s->nfuncs, lined, checked);
    CHECK_EQ_INT(lined, checked);
    /* a PUBLIC where no FUNC is: __clang_call_terminate at 0x4680 */
    size_t n = symcache_lookup(fr, SYMCACHE_MAX_FRAMES, sc, 0x4680);
    CHECK(n == 1 && strcmp(fr[0].function, "__clang_call_terminate") == 0 && fr[0].from_symtab);
    size_t len = 0;
    const uint8_t *sect = symcache_section(sc, BREAKPAD_CFI_SECTION, &len);
    buf t;
    buf_init(&t);
    breakpad_cfi_encode(&t, s);
    CHECK(sect != NULL && len == t.len && memcmp(sect, t.data, len) == 0);
    buf_reset(&t);
    /* the walker's image: the section's table, no compact unwind */
    unwind_image ui;
    CHECK_EQ_INT(symcache_unwind_image(&ui, sc, &err), ERR_OK);
    CHECK(ui.breakpad_cfi == sect && ui.breakpad_cfi_len == len && ui.nentries == 0);
    symcache_close(sc);
done:
    buf_reset(&out);
    arena_free(a);
    bytes_unmap(&b);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc(n > 0 ? (size_t)n : 1);
    *len = n > 0 && fread(p, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return p;
}

/* crash.sym and crash.dSYM built into one folder, in either order: one symcache with the
 * dSYM's names (DWARF over a .sym's) and the .sym's STACK CFI section, the same bytes. */
static void sym_and_dsym_merge(void)
{
    char sym[4096], dsym[4096], dirs[2][64], paths[2][4200];
    shared_path(sym, sizeof sym, "crash.sym");
    shared_path(dsym, sizeof dsym, "crash.dSYM");
    char *bytes2[2] = {NULL, NULL};
    size_t lens[2] = {0, 0};
    for (int order = 0; order < 2; order++) {
        snprintf(dirs[order], sizeof dirs[order], "/tmp/test_breakpad.XXXXXX");
        CHECK(mkdtemp(dirs[order]) != NULL);
        err_info err = {0};
        const char *first = order == 0 ? sym : dsym, *second = order == 0 ? dsym : sym;
        CHECK_EQ_INT(dsym_build_symcaches(first, dirs[order], NULL, NULL, NULL, &err), ERR_OK);
        CHECK_EQ_INT(dsym_build_symcaches(second, dirs[order], NULL, NULL, NULL, &err), ERR_OK);
        snprintf(paths[order], sizeof paths[order], "%s/67E9247C-814E-392B-A027-DBDE6748FCBF.symc", dirs[order]);
        symcache *sc = NULL;
        CHECK_EQ_INT(symcache_open(&sc, paths[order], &err), ERR_OK);
        if (sc != NULL) {
            CHECK(symcache_has_dwarf(sc) && !symcache_from_breakpad(sc));
            CHECK_EQ_U64(symcache_text_vmaddr(sc), 0x100000000ull);
            symcache_frame fr[SYMCACHE_MAX_FRAMES];
            /* the dSYM's inline chain at the crash: crash() in start() in main */
            CHECK_EQ_INT(symcache_lookup(fr, SYMCACHE_MAX_FRAMES, sc, 0x100000000ull + 0xdc15), 3);
            size_t len = 0;
            CHECK(symcache_section(sc, BREAKPAD_CFI_SECTION, &len) != NULL && len > 1000);
            symcache_close(sc);
        }
        bytes2[order] = slurp(paths[order], &lens[order]);
        unlink(paths[order]);
        rmdir(dirs[order]);
    }
    CHECK(lens[0] > 0 && lens[0] == lens[1] && memcmp(bytes2[0], bytes2[1], lens[0]) == 0);
    free(bytes2[0]);
    free(bytes2[1]);
}

/* ---- the walker: STACK CFI against the executable's own unwind info -------------------- */

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* For every STACK CFI row of crash.sym (INIT and deltas, at their address and the last byte
 * before the next row), a walk from a synthetic frame there with only the .sym's CFI finds
 * the caller (pc, sp, rbp) that a walk with the executable's compact unwind and __eh_frame
 * finds, both "cfi". */
static void walk_by_sym_cfi_matches_executable(void)
{
    bytes b = {0}, x = {0};
    err_info err = {0};
    arena *a = arena_new(0);
    breakpad_sym *s;
    buf t;
    buf_init(&t);
    unwind_entry *list = NULL;
    size_t nlist = 0;
    if (!load_shared(&s, &b, &x, a))
        goto done;
    breakpad_cfi_encode(&t, s);
    const macho_section *ui = macho_section_find(&exe, "__TEXT", "__unwind_info");
    const macho_section *eh = macho_section_find(&exe, "__TEXT", "__eh_frame");
    CHECK(ui != NULL && eh != NULL);
    if (ui == NULL || eh == NULL)
        goto done;
    CHECK_EQ_INT(unwind_compact_list(&list, &nlist, ui->data, ui->size, a, &err), ERR_OK);
    unwind_image by_exe = {.text_vmaddr = exe.text_vmaddr, .entries = list, .nentries = nlist,
                           .eh_frame = eh->data, .eh_frame_len = eh->size, .eh_frame_vmaddr = eh->addr};
    unwind_image by_sym = {.breakpad_cfi = t.data, .breakpad_cfi_len = t.len};
    memcpy(by_exe.uuid, exe.uuid, 16);
    memcpy(by_sym.uuid, exe.uuid, 16);
    static uint8_t stack[0x400];
    const uint64_t sp = 0x7ff000001000, load = 0x100000000;
    /* every word a distinct return address inside the module, past the tables' functions */
    for (size_t i = 0; i < sizeof stack / 8; i++)
        put64(stack + 8 * i, load + 0x20000 + 8 * i);
    minidump md;
    minidump_module mod;
    minidump_thread th;
    memset(&md, 0, sizeof md);
    memset(&mod, 0, sizeof mod);
    memset(&th, 0, sizeof th);
    mod.load_addr = load;
    mod.size = 0x40000;
    mod.name = "/crash";
    mod.has_uuid = true;
    memcpy(mod.uuid, exe.uuid, 16);
    th.stack.start_addr = sp;
    th.stack.size = sizeof stack;
    th.stack.data = stack;
    md.modules = &mod;
    md.nmodules = 1;
    md.threads = &th;
    md.nthreads = 1;
    size_t rows = 0, agree = 0;
    for (size_t i = 0; i < s->ncfi; i++) {
        const breakpad_cfi_init *c = &s->cfi[i];
        for (size_t k = 0; k <= c->ndeltas; k++) {
            uint64_t at = k == 0 ? c->addr : s->deltas[c->first_delta + k - 1].addr;
            uint64_t next = k < c->ndeltas ? s->deltas[c->first_delta + k].addr : c->addr + c->size;
            uint64_t probes[2] = {at, next - 1};
            for (int p = 0; p < 2; p++) {
                minidump_context ctx = {.arch = MINIDUMP_ARCH_X86_64, .nregs = 17};
                ctx.regs[MINIDUMP_X86_64_RIP] = load + probes[p];
                ctx.regs[MINIDUMP_X86_64_RSP] = sp;
                ctx.regs[MINIDUMP_X86_64_RBP] = sp + 0x100;
                unwind_frame *f1, *f2;
                size_t n1, n2;
                CHECK_EQ_INT(unwind_walk(&f1, &n1, &md, &ctx, &by_exe, 1, a, &err), ERR_OK);
                CHECK_EQ_INT(unwind_walk(&f2, &n2, &md, &ctx, &by_sym, 1, a, &err), ERR_OK);
                rows++;
                bool ok = n1 >= 2 && n2 >= 2 && f1[1].found == UNWIND_FOUND_CFI &&
                          f2[1].found == UNWIND_FOUND_CFI && f1[1].pc == f2[1].pc &&
                          f1[1].sp == f2[1].sp && f1[1].fp == f2[1].fp;
                if (!ok && n1 >= 2 && n2 >= 2)
                    fprintf(stderr, "row at 0x%llx: exe pc %llx sp %llx fp %llx (%d), sym pc %llx sp %llx fp %llx (%d)\n",
                            (unsigned long long)probes[p], (unsigned long long)f1[1].pc,
                            (unsigned long long)f1[1].sp, (unsigned long long)f1[1].fp, f1[1].found,
                            (unsigned long long)f2[1].pc, (unsigned long long)f2[1].sp,
                            (unsigned long long)f2[1].fp, f2[1].found);
                agree += ok;
            }
        }
    }
    fprintf(stderr, "crash.sym STACK CFI: %zu/%zu probes walk as the executable's unwind info\n",
            agree, rows);
    CHECK(rows >= 400);
    CHECK_EQ_INT(agree, rows);
done:
    buf_reset(&t);
    arena_free(a);
    bytes_unmap(&b);
    bytes_unmap(&x);
}

int main(void)
{
    RUN(parses_shared_sym);
    RUN(evaluates_rules);
    RUN(refuses_and_skips_hostile_text);
    RUN(symcache_from_shared_sym);
    RUN(sym_and_dsym_merge);
    RUN(walk_by_sym_cfi_matches_executable);
    return harness_done();
}
