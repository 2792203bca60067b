/*
 * Tests for common/unwind: every compact-unwind entry decoded from the Mach-O files of
 * ../shared/minidumps/ and the built fixtures (x86_64 and arm64, regular and compressed pages)
 * equals what `llvm-objdump-14 --unwind-info` lists (function offset, encoding), every
 * encoding met decodes, and hand-made encodings decode as Apple's format documents them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "harness.h"
#include "macho/macho.h"
#include "unwind/unwind.h"
#include "unwind/walk.h"

static macho_image img;

/* objdump_entries - (function offset, encoding) pairs llvm-objdump-14 lists for `path`. */
static size_t objdump_entries(uint32_t (*out)[2], size_t cap, const char *path)
{
    char cmd[4200], line[512];
    snprintf(cmd, sizeof cmd, "llvm-objdump-14 --unwind-info '%s'", path);
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    if (p == NULL)
        return 0;
    while (fgets(line, sizeof line, p) != NULL) {
        const char *f = strstr(line, "function offset=0x");
        const char *e = strstr(line, "encoding");
        if (f == NULL || e == NULL || strstr(line, "2nd level") != NULL)
            continue;
        e = strstr(e, "=0x");
        if (e == NULL || n == cap)
            continue;
        out[n][0] = (uint32_t)strtoul(f + strlen("function offset="), NULL, 16);
        out[n][1] = (uint32_t)strtoul(e + 1, NULL, 16);
        n++;
    }
    pclose(p);
    return n;
}

static void check_file(const char *path, int *files)
{
    bytes b = {0};
    err_info err = {0};
    if (bytes_map_file(&b, path, &err) != ERR_OK) {
        fprintf(stderr, "skip %s: %s\n", path, err.msg);
        return;
    }
    CHECK_EQ_INT(macho_parse(&img, b.data, b.len, &err), ERR_OK);
    const macho_section *s = macho_section_find(&img, "__TEXT", "__unwind_info");
    CHECK(s != NULL && s->data != NULL);
    if (s == NULL || s->data == NULL) {
        bytes_unmap(&b);
        return;
    }
    arena *a = arena_new(0);
    unwind_entry *list;
    size_t n;
    CHECK_EQ_INT(unwind_compact_list(&list, &n, s->data, s->size, a, &err), ERR_OK);
    static uint32_t want[100000][2];
    size_t nwant = objdump_entries(want, 100000, path);
    fprintf(stderr, "%s: %zu entries, llvm-objdump %zu\n", path, n, nwant);
    CHECK(nwant > 0);
    CHECK_EQ_INT(n, nwant);
    bool x86 = img.cputype == MACHO_CPU_TYPE_X86_64;
    for (size_t i = 0; i < n && i < nwant; i++) {
        CHECK_EQ_U64(list[i].func_start, want[i][0]);
        CHECK_EQ_U64(list[i].encoding, want[i][1]);
        unwind_rule r;
        CHECK(x86 ? unwind_decode_x86_64(&r, list[i].encoding) : unwind_decode_arm64(&r, list[i].encoding));
        CHECK(r.kind != UNWIND_KIND_UNKNOWN);
        CHECK(unwind_compact_find(list, n, list[i].func_start) == &list[i]);
        if (list[i].func_end > list[i].func_start)
            CHECK(unwind_compact_find(list, n, list[i].func_end - 1) == &list[i]);
    }
    (*files)++;
    arena_free(a);
    bytes_unmap(&b);
}

static void entries_match_llvm_objdump(void)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR"), *fx = getenv("STACKSIFT_FIXTURES");
    char path[4096];
    int files = 0;
    snprintf(path, sizeof path, "%s/../shared/minidumps/macos-x86_64-breakpad/crash", src ? src : "..");
    check_file(path, &files);
    static const char *const FIXTURES[] = {"arm64-O0/FixtureApp.app/FixtureApp",
                                           "arm64-O2/FixtureApp.app/FixtureApp",
                                           "x86_64-O2/FixtureApp.app/FixtureApp",
                                           "dwarf5/FixtureD5.app/FixtureD5",
                                           "kit/FixtureKit.framework/FixtureKit"};
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", fx && *fx ? fx : "../build-fixtures", FIXTURES[i]);
        check_file(path, &files);
    }
    CHECK_EQ_INT(files, 6);
}

static void encodings_decode(void)
{
    unwind_rule r;
    /* x86_64 rbp frame, rbx and r12 saved 16 bytes below rbp */
    CHECK(unwind_decode_x86_64(&r, 0x01020000 | 1 | (2 << 3)));
    CHECK_EQ_INT(r.kind, UNWIND_KIND_FRAME);
    CHECK_EQ_INT(r.saved_offset, 16);
    CHECK_EQ_INT(r.saved[0], 3);
    CHECK_EQ_INT(r.saved[1], 12);
    CHECK_EQ_INT(r.saved[2], -1);
    /* frameless, 0x18 bytes (with the return address), no registers */
    CHECK(unwind_decode_x86_64(&r, 0x02030000));
    CHECK_EQ_INT(r.kind, UNWIND_KIND_FRAMELESS);
    CHECK_EQ_INT(r.stack_size, 24);
    CHECK_EQ_INT(r.nsaved, 0);
    /* frameless with 2 registers, permutation 0: rbx then r12 */
    CHECK(unwind_decode_x86_64(&r, 0x02040800));
    CHECK_EQ_INT(r.nsaved, 2);
    CHECK_EQ_INT(r.saved[0], 3);
    CHECK_EQ_INT(r.saved[1], 12);
    /* 6 registers, permutation 719 (the last): rbp r15 r14 r13 r12 rbx */
    CHECK(unwind_decode_x86_64(&r, 0x02070000 | (6 << 10) | 719));
    CHECK_EQ_INT(r.saved[0], 6);
    CHECK_EQ_INT(r.saved[5], 3);
    /* a permutation digit out of range */
    CHECK(!unwind_decode_x86_64(&r, 0x02070000 | (1 << 10) | 6));
    /* indirect: imm32 at function + 0x0d, plus 3 * 8 */
    CHECK(unwind_decode_x86_64(&r, 0x030d6000));
    CHECK_EQ_INT(r.kind, UNWIND_KIND_FRAMELESS_INDIRECT);
    CHECK_EQ_INT(r.sub_offset, 0x0d);
    CHECK_EQ_INT(r.stack_adjust, 24);
    CHECK(unwind_decode_x86_64(&r, 0x04000fe8));
    CHECK_EQ_INT(r.kind, UNWIND_KIND_DWARF);
    CHECK_EQ_INT(r.dwarf_offset, 0xfe8);
    /* arm64: frame with x19/x20 and x23/x24; frameless 0x30 bytes; DWARF */
    CHECK(unwind_decode_arm64(&r, 0x04000005));
    CHECK_EQ_INT(r.kind, UNWIND_KIND_FRAME);
    CHECK_EQ_INT(r.nsaved, 4);
    CHECK_EQ_INT(r.saved[2], 23);
    CHECK(unwind_decode_arm64(&r, 0x02003000));
    CHECK_EQ_INT(r.kind, UNWIND_KIND_FRAMELESS);
    CHECK_EQ_INT(r.stack_size, 48);
    CHECK(unwind_decode_arm64(&r, 0x03000123));
    CHECK_EQ_INT(r.dwarf_offset, 0x123);
    CHECK(unwind_decode_arm64(&r, 0) && r.kind == UNWIND_KIND_NONE);
}

static void hostile_tables_are_refused(void)
{
    uint8_t sect[64] = {0};
    arena *a = arena_new(0);
    unwind_entry *list;
    size_t n;
    err_info err = {0};
    CHECK_EQ_INT(unwind_compact_list(&list, &n, sect, 10, a, &err), ERR_INVALID);
    sect[0] = 1;
    sect[20] = 28, sect[24] = 2; /* index: 2 entries at 28 */
    sect[28 + 4] = 0xff;         /* page offset 0xff: outside */
    CHECK_EQ_INT(unwind_compact_list(&list, &n, sect, sizeof sect, a, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "outside") != NULL);
    sect[24] = 0xff; /* 255 index entries: outside */
    CHECK_EQ_INT(unwind_compact_list(&list, &n, sect, sizeof sect, a, &err), ERR_INVALID);
    arena_free(a);
}

/* ---- the walker on synthetic stacks ----------------------------------------------------- */

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static const uint8_t UUID_APP[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* a dump of one module (load 0x100000000, 64 KiB) and one thread whose stack is `stack`,
 * zeroed here */
static void make_dump(minidump *md, minidump_module *mod, minidump_thread *t, uint8_t *stack,
                      size_t stack_len, uint64_t stack_addr)
{
    memset(stack, 0, stack_len);
    memset(md, 0, sizeof *md);
    memset(mod, 0, sizeof *mod);
    memset(t, 0, sizeof *t);
    mod->load_addr = 0x100000000;
    mod->size = 0x10000;
    mod->name = "/App";
    mod->has_uuid = true;
    memcpy(mod->uuid, UUID_APP, 16);
    t->stack.start_addr = stack_addr;
    t->stack.size = stack_len;
    t->stack.data = stack;
    md->modules = mod;
    md->nmodules = 1;
    md->threads = t;
    md->nthreads = 1;
}

static void walks_arm64(void)
{
    static uint8_t stack[0x1000];
    const uint64_t base = 0x16fdf0000;
    minidump md;
    minidump_module mod;
    minidump_thread t;
    make_dump(&md, &mod, &t, stack, sizeof stack, base);
    const unwind_entry entries[] = {
        {0x1000, 0x1100, 0x02000000}, /* frameless, no stack: a leaf */
        {0x1100, 0x1200, 0x04000001}, /* fp frame, x19/x20 saved */
        {0x1200, 0x1300, 0x03000010}, /* DWARF: not read, the frame pointer takes over */
    };
    unwind_image img = {.text_vmaddr = 0x100000000, .entries = entries, .nentries = 3};
    memcpy(img.uuid, UUID_APP, 16);
    put64(stack + 0x200, base + 0x300);      /* frame 1's fp record: caller fp */
    put64(stack + 0x208, 0x100001210);       /* and return address */
    put64(stack + 0x200 - 8, 0x1919);        /* x19 */
    put64(stack + 0x200 - 16, 0x2020);       /* x20 */
    put64(stack + 0x300, 0);                 /* outermost fp record */
    put64(stack + 0x308, 0x100001050);
    minidump_context c = {.arch = MINIDUMP_ARCH_ARM64, .nregs = 33};
    c.regs[MINIDUMP_ARM64_PC] = 0x100001010;
    c.regs[MINIDUMP_ARM64_LR] = 0x0012000100001120; /* pointer-authentication bits set */
    c.regs[MINIDUMP_ARM64_SP] = base + 0x100;
    c.regs[MINIDUMP_ARM64_FP] = base + 0x200;
    arena *a = arena_new(0);
    unwind_frame *f;
    size_t n;
    err_info err = {0};
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, &img, 1, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        CHECK_EQ_INT(f[0].found, UNWIND_FOUND_CONTEXT);
        CHECK_EQ_U64(f[1].pc, 0x100001120); /* PAC bits stripped */
        CHECK_EQ_INT(f[1].found, UNWIND_FOUND_CFI);
        CHECK_EQ_U64(f[1].sp, base + 0x100); /* a leaf's caller shares its sp */
        CHECK_EQ_U64(f[2].pc, 0x100001210);
        CHECK_EQ_INT(f[2].found, UNWIND_FOUND_CFI);
        CHECK_EQ_U64(f[2].sp, base + 0x210);
        CHECK_EQ_U64(f[2].fp, base + 0x300);
        CHECK_EQ_U64(f[3].pc, 0x100001050);
        CHECK_EQ_INT(f[3].found, UNWIND_FOUND_FRAME_POINTER);
        CHECK_EQ_U64(f[3].rel_addr, 0x1050);
        CHECK_EQ_INT(f[3].module, 0);
    }
    /* without unwind info: frame pointers only (lr is not used past frame 0) */
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, NULL, 0, a, &err), ERR_OK);
    CHECK(n >= 2 && f[1].found == UNWIND_FOUND_FRAME_POINTER && f[1].pc == 0x100001210);
    arena_free(a);
}

static void walks_x86_64_indirect_and_stops(void)
{
    static uint8_t stack[0x400];
    static uint8_t text[0x2000];
    const uint64_t base = 0x7ff000000000;
    minidump md;
    minidump_module mod;
    minidump_thread t;
    make_dump(&md, &mod, &t, stack, sizeof stack, base);
    /* frameless indirect: `sub $0x28, %rsp` with its imm32 at function + 4, rbx saved */
    const unwind_entry entries[] = {
        {0x1000, 0x1100, 0x03040400},
        {0x1100, 0x1200, 0x01000000}, /* rbp frame */
    };
    text[0x1004] = 0x28;
    arena *a = arena_new(0);
    unwind_stack_size *sizes;
    size_t nsizes;
    err_info err = {0};
    /* the immediate is read once from the __TEXT bytes; one past them is left out */
    CHECK_EQ_INT(unwind_stack_sizes(&sizes, &nsizes, entries, 2, text, 0x1007, a, &err), ERR_OK);
    CHECK_EQ_INT(nsizes, 0);
    CHECK_EQ_INT(unwind_stack_sizes(&sizes, &nsizes, entries, 2, text, sizeof text, a, &err), ERR_OK);
    CHECK_EQ_INT(nsizes, 1);
    uint32_t imm = 0;
    CHECK(unwind_stack_size_find(&imm, sizes, nsizes, 0x1000) && imm == 0x28);
    CHECK(!unwind_stack_size_find(&imm, sizes, nsizes, 0x1100));
    unwind_image img = {.text_vmaddr = 0x100000000, .entries = entries, .nentries = 2,
                        .stack_sizes = sizes, .nstack_sizes = nsizes};
    memcpy(img.uuid, UUID_APP, 16);
    put64(stack + 0x28 - 8, 0x100001150);   /* return address */
    put64(stack + 0x28 - 16, 0xbbbb);       /* rbx */
    put64(stack + 0x100, base + 0x200);     /* caller's rbp record */
    put64(stack + 0x108, 0x100001160);
    put64(stack + 0x200, 0);
    put64(stack + 0x208, 0);                /* a return address of 0 ends the walk */
    minidump_context c = {.arch = MINIDUMP_ARCH_X86_64, .nregs = 17};
    c.regs[MINIDUMP_X86_64_RIP] = 0x100001010;
    c.regs[MINIDUMP_X86_64_RSP] = base;
    c.regs[MINIDUMP_X86_64_RBP] = base + 0x100;
    c.regs[0] = 0xaaaa; /* rax: not callee-saved */
    unwind_frame *f;
    size_t n;
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, &img, 1, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 3);
    if (n == 3) {
        CHECK_EQ_U64(f[1].pc, 0x100001150);
        CHECK_EQ_U64(f[1].sp, base + 0x28);
        CHECK_EQ_INT(f[1].found, UNWIND_FOUND_CFI);
        CHECK_EQ_U64(f[2].pc, 0x100001160);
        CHECK_EQ_U64(f[2].sp, base + 0x110);
        CHECK_EQ_INT(f[2].found, UNWIND_FOUND_CFI);
    }
    /* a context without a known arch is refused */
    minidump_context none = {0};
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &none, &img, 1, a, &err), ERR_UNSUPPORTED);
    arena_free(a);
}

/* ---- DWARF CFI against Breakpad's STACK CFI records ------------------------------------- */

static const char *const X86_64_REG[17] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                           "r9", "r10", "r11", "r12", "r13", "r14", "r15", ".ra"};

/* rule_text - a rule as dump_syms writes it: "$rsp 16 +", ".cfa -8 + ^", ".cfa 8 +", "$rbx" */
static void rule_text(char *out, size_t cap, const unwind_reg_rule *r)
{
    switch (r->kind) {
    case UNWIND_REG_OFFSET: snprintf(out, cap, ".cfa %lld + ^", (long long)r->value); break;
    case UNWIND_REG_VAL_OFFSET: snprintf(out, cap, ".cfa %lld +", (long long)r->value); break;
    case UNWIND_REG_REGISTER:
        snprintf(out, cap, "$%s", r->value >= 0 && r->value < 17 ? X86_64_REG[r->value] : "?");
        break;
    default: snprintf(out, cap, "-"); break;
    }
}

typedef struct {
    char key[16];
    char expr[64];
} sym_rule;

/* apply_sym_rules - merge "KEY: EXPR KEY: EXPR ..." (a STACK CFI line's rules) into rules */
static void apply_sym_rules(sym_rule *rules, size_t *n, char *text)
{
    char *tok, *save = NULL;
    sym_rule *cur = NULL;
    for (tok = strtok_r(text, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
        size_t l = strlen(tok);
        if (l > 1 && tok[l - 1] == ':') {
            tok[l - 1] = '\0';
            cur = NULL;
            for (size_t i = 0; i < *n; i++)
                if (strcmp(rules[i].key, tok) == 0)
                    cur = &rules[i];
            if (cur == NULL && *n < 20)
                cur = &rules[(*n)++];
            if (cur) {
                snprintf(cur->key, sizeof cur->key, "%s", tok);
                cur->expr[0] = '\0';
            }
        } else if (cur) {
            size_t el = strlen(cur->expr);
            snprintf(cur->expr + el, sizeof cur->expr - el, "%s%s", el ? " " : "", tok);
        }
    }
}

static int cfi_rows_checked, cfi_rows_agree;

static void check_row(const uint8_t *eh, size_t eh_len, uint64_t eh_addr, uint32_t fde_off,
                      uint64_t text_vmaddr, uint64_t addr, const sym_rule *rules, size_t nrules)
{
    unwind_cfi_row row;
    err_info err = {0};
    cfi_rows_checked++;
    if (unwind_dwarf_row(&row, eh, eh_len, eh_addr, fde_off, text_vmaddr + addr, &err) != ERR_OK) {
        fprintf(stderr, "row 0x%llx: %s\n", (unsigned long long)addr, err.msg);
        CHECK(!"row read");
        return;
    }
    bool ok = true;
    size_t offsets = 0;
    for (unsigned r = 0; r < 17; r++)
        offsets += r != 16 && row.regs[r].kind == UNWIND_REG_OFFSET;
    size_t reg_rules = 0;
    for (size_t i = 0; i < nrules; i++) {
        char mine[64];
        if (strcmp(rules[i].key, ".cfa") == 0) {
            snprintf(mine, sizeof mine, "$%s %lld +", row.cfa_reg < 17 ? X86_64_REG[row.cfa_reg] : "?",
                     (long long)row.cfa_offset);
        } else if (strcmp(rules[i].key, ".ra") == 0) {
            rule_text(mine, sizeof mine, &row.regs[row.ra_reg]);
        } else {
            unsigned r = 0;
            while (r < 16 && !(rules[i].key[0] == '$' && strcmp(rules[i].key + 1, X86_64_REG[r]) == 0))
                r++;
            rule_text(mine, sizeof mine, &row.regs[r < 16 ? r : 0]);
            reg_rules++;
        }
        if (strcmp(mine, rules[i].expr) != 0) {
            fprintf(stderr, "row 0x%llx: %s: ours \"%s\", dump_syms \"%s\"\n",
                    (unsigned long long)addr, rules[i].key, mine, rules[i].expr);
            ok = false;
        }
    }
    if (reg_rules != offsets) {
        fprintf(stderr, "row 0x%llx: %zu saved registers, dump_syms %zu\n", (unsigned long long)addr,
                offsets, reg_rules);
        ok = false;
    }
    CHECK(ok);
    cfi_rows_agree += ok;
}

/* Every STACK CFI row crash.sym gives for a function whose compact unwind defers to DWARF is
 * the row unwind_dwarf_row reads from the executable's __eh_frame. */
static void dwarf_rows_match_breakpad_symbols(void)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/../shared/minidumps/macos-x86_64-breakpad/crash", src ? src : "..");
    bytes b = {0};
    err_info err = {0};
    if (bytes_map_file(&b, path, &err) != ERR_OK || macho_parse(&img, b.data, b.len, &err) != ERR_OK) {
        CHECK(!"crash executable readable");
        return;
    }
    const macho_section *ui = macho_section_find(&img, "__TEXT", "__unwind_info");
    const macho_section *eh = macho_section_find(&img, "__TEXT", "__eh_frame");
    CHECK(ui != NULL && eh != NULL && eh->data != NULL);
    arena *a = arena_new(0);
    unwind_entry *list = NULL;
    size_t n = 0;
    CHECK_EQ_INT(unwind_compact_list(&list, &n, ui->data, ui->size, a, &err), ERR_OK);
    strcat(path, ".sym");
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[4096];
    sym_rule rules[20];
    size_t nrules = 0;
    const unwind_entry *fn = NULL;
    int functions = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        unsigned long long addr, size;
        int used = 0;
        if (sscanf(line, "STACK CFI INIT %llx %llx %n", &addr, &size, &used) == 2 && used > 0) {
            fn = unwind_compact_find(list, n, (uint32_t)addr);
            unwind_rule r;
            if (fn == NULL || !unwind_decode_x86_64(&r, fn->encoding) || r.kind != UNWIND_KIND_DWARF) {
                fn = NULL; /* compact unwind describes it: no FDE offset to start from */
                continue;
            }
            functions++;
            nrules = 0;
            apply_sym_rules(rules, &nrules, line + used);
            check_row(eh->data, eh->size, eh->addr, fn->encoding & 0xffffff, img.text_vmaddr, addr,
                      rules, nrules);
        } else if (fn != NULL && sscanf(line, "STACK CFI %llx %n", &addr, &used) == 1 && used > 0) {
            apply_sym_rules(rules, &nrules, line + used);
            check_row(eh->data, eh->size, eh->addr, fn->encoding & 0xffffff, img.text_vmaddr, addr,
                      rules, nrules);
        }
    }
    if (f != NULL)
        fclose(f);
    fprintf(stderr, "crash.sym: %d DWARF functions, %d/%d CFI rows agree\n", functions,
            cfi_rows_agree, cfi_rows_checked);
    CHECK(functions >= 50);
    CHECK_EQ_INT(cfi_rows_agree, cfi_rows_checked);
    /* a walk through one of these functions: at 0x17d3 (two pushes in) the CFA is rsp + 24
     * and the return address at CFA - 8, as the rows above say */
    static uint8_t stack[0x100];
    minidump md;
    minidump_module mod;
    minidump_thread t;
    const uint64_t sp = 0x7ff000001000;
    make_dump(&md, &mod, &t, stack, sizeof stack, sp);
    memcpy(mod.uuid, img.uuid, 16);
    put64(stack + 16, 0x100000000 + 0xdc20); /* a return address inside the module */
    unwind_image uimg = {.text_vmaddr = img.text_vmaddr, .entries = list, .nentries = n,
                       .eh_frame = eh->data, .eh_frame_len = eh->size, .eh_frame_vmaddr = eh->addr};
    memcpy(uimg.uuid, img.uuid, 16);
    minidump_context c = {.arch = MINIDUMP_ARCH_X86_64, .nregs = 17};
    c.regs[MINIDUMP_X86_64_RIP] = 0x100000000 + 0x17d3;
    c.regs[MINIDUMP_X86_64_RSP] = sp;
    unwind_frame *fr;
    size_t nf;
    CHECK_EQ_INT(unwind_walk(&fr, &nf, &md, &c, &uimg, 1, a, &err), ERR_OK);
    CHECK(nf >= 2);
    if (nf >= 2) {
        CHECK_EQ_U64(fr[1].pc, 0x100000000 + 0xdc20);
        CHECK_EQ_U64(fr[1].sp, sp + 24);
        CHECK_EQ_INT(fr[1].found, UNWIND_FOUND_CFI);
    }
    /* an offset that is no FDE, a target outside the FDE */
    unwind_cfi_row row;
    CHECK(unwind_dwarf_row(&row, eh->data, eh->size, eh->addr, eh->size + 4, 0, &err) == ERR_INVALID);
    arena_free(a);
    bytes_unmap(&b);
}

/* ---- __debug_frame (a dSYM's) ---------------------------------------------------------- */

static const char *const X86_64_NAME[17] = {"RAX", "RDX", "RCX", "RBX", "RSI", "RDI", "RBP", "RSP", "R8",
                                            "R9", "R10", "R11", "R12", "R13", "R14", "R15", "RIP"};

/* row_text - a row as llvm-dwarfdump-14 --debug-frame prints it: "CFA=RSP+16: RBP=[CFA-16],
 * RIP=[CFA-8]" (registers in DWARF number order). */
static void row_text(char *out, size_t cap, const unwind_cfi_row *row)
{
    size_t k = (size_t)snprintf(out, cap, "CFA=%s%+lld", row->cfa_reg < 17 ? X86_64_NAME[row->cfa_reg] : "?",
                                (long long)row->cfa_offset);
    const char *sep = ": ";
    for (unsigned r = 0; r < 17 && k < cap; r++) {
        const unwind_reg_rule *g = &row->regs[r];
        if (g->kind == UNWIND_REG_NONE)
            continue;
        if (g->kind == UNWIND_REG_OFFSET)
            k += (size_t)snprintf(out + k, cap - k, "%s%s=[CFA%+lld]", sep, X86_64_NAME[r], (long long)g->value);
        else
            k += (size_t)snprintf(out + k, cap - k, "%s%s=?", sep, X86_64_NAME[r]);
        sep = ", ";
    }
}

static bool map_debug_frame(bytes *b, const macho_section **df)
{
    const char *fx = getenv("STACKSIFT_FIXTURES");
    char path[4096];
    err_info err = {0};
    snprintf(path, sizeof path, "%s/debugframe/DebugFrameKit.framework.dSYM/Contents/Resources/DWARF/DebugFrameKit",
             fx && *fx ? fx : "../build-fixtures");
    if (bytes_map_file(b, path, &err) != ERR_OK || macho_parse(&img, b->data, b->len, &err) != ERR_OK) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return false;
    }
    *df = macho_section_find(&img, "__DWARF", "__debug_frame");
    return *df != NULL && (*df)->data != NULL;
}

/* The fixture dylib's __debug_frame and its FDEs, where the __debug_frame tests start. */
typedef struct {
    bytes b;                    /* the dSYM's DWARF file, mapped */
    const macho_section *df;    /* its __DWARF,__debug_frame (in b) */
    arena *a;                   /* the test's arena; holds fdes */
    unwind_fde *fdes;           /* unwind_debug_frame_list of df */
    size_t n;                   /* how many */
} debug_frame_fx;

/* debug_frame_fx_open - maps the fixture (map_debug_frame) and lists its FDEs, CHECKing both.
 * false when the fixture has no __debug_frame: nothing is held then. */
static bool debug_frame_fx_open(debug_frame_fx *x)
{
    err_info err = {0};
    memset(x, 0, sizeof *x);
    CHECK(map_debug_frame(&x->b, &x->df));
    if (x->df == NULL || x->df->data == NULL) {
        bytes_unmap(&x->b);
        return false;
    }
    x->a = arena_new(0);
    CHECK_EQ_INT(unwind_debug_frame_list(&x->fdes, &x->n, x->df->data, (size_t)x->df->size, x->a, &err),
                 ERR_OK);
    return true;
}

static void debug_frame_fx_close(debug_frame_fx *x)
{
    arena_free(x->a);
    bytes_unmap(&x->b);
}

/* The dump's module loaded at `load` as the fixture dylib (its UUID), and *ui the fixture's
 * unwind info: its __debug_frame alone. */
static void debug_frame_image(unwind_image *ui, minidump_module *mod, const macho_section *df,
                              uint64_t load)
{
    mod->load_addr = load;
    memcpy(mod->uuid, img.uuid, 16);
    *ui = (unwind_image){.text_vmaddr = img.text_vmaddr, .debug_frame = df->data,
                         .debug_frame_len = (size_t)df->size, .debug_frame_vmaddr = df->addr};
    memcpy(ui->uuid, img.uuid, 16);
}

/* Every FDE and every row llvm-dwarfdump-14 --debug-frame prints for the fixture dylib's dSYM
 * (DebugFrameKit: no compact unwind, its CFI only in __debug_frame) is what
 * unwind_debug_frame_list and unwind_debug_frame_row read: the same ranges, at each row's
 * address the same CFA and saved registers. */
static void debug_frame_rows_match_llvm_dwarfdump(void)
{
    debug_frame_fx x;
    if (!debug_frame_fx_open(&x))
        return;
    err_info err = {0};
    CHECK(x.n >= 3);
    char cmd[4200], line[512];
    const char *fx = getenv("STACKSIFT_FIXTURES");
    snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --debug-frame '%s/debugframe/DebugFrameKit.framework.dSYM'",
             fx && *fx ? fx : "../build-fixtures");
    FILE *p = popen(cmd, "r");
    size_t nfde = 0, rows = 0, agree = 0;
    const unwind_fde *cur = NULL;
    while (p != NULL && fgets(line, sizeof line, p) != NULL) {
        unsigned long long off, lo, hi, at;
        const char *pc = strstr(line, " FDE ");
        if (strstr(line, ".eh_frame contents") != NULL)
            break;
        if (pc != NULL && sscanf(line, "%llx", &off) == 1 && (pc = strstr(line, "pc=")) != NULL &&
            sscanf(pc, "pc=%llx...%llx", &lo, &hi) == 2) {
            nfde++;
            cur = unwind_fde_find(x.fdes, x.n, lo);
            CHECK(cur != NULL && cur->start == lo && cur->end == hi && cur->fde_off == off);
            CHECK(unwind_fde_find(x.fdes, x.n, hi - 1) == cur);
            continue;
        }
        int used = 0;
        if (cur == NULL || sscanf(line, " 0x%llx: %n", &at, &used) != 1 || used == 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        unwind_cfi_row row;
        char mine[256];
        rows++;
        if (unwind_debug_frame_row(&row, x.df->data, (size_t)x.df->size, cur->fde_off, at, &err) != ERR_OK) {
            fprintf(stderr, "row 0x%llx: %s\n", at, err.msg);
            continue;
        }
        row_text(mine, sizeof mine, &row);
        CHECK(row.func_start == cur->start && row.func_end == cur->end && row.ra_reg == 16);
        if (strcmp(mine, line + used) == 0)
            agree++;
        else
            fprintf(stderr, "row 0x%llx: ours \"%s\", llvm-dwarfdump \"%s\"\n", at, mine, line + used);
    }
    if (p != NULL)
        pclose(p);
    fprintf(stderr, "DebugFrameKit __debug_frame: %zu FDEs (llvm-dwarfdump %zu), %zu/%zu rows agree\n",
            x.n, nfde, agree, rows);
    CHECK_EQ_INT(nfde, x.n);
    CHECK(rows >= 8);
    CHECK_EQ_INT(agree, rows);
    /* an address no FDE covers; an offset that is a CIE, or past the section */
    unwind_cfi_row row;
    CHECK(unwind_fde_find(x.fdes, x.n, x.fdes[x.n - 1].end) == NULL);
    CHECK_EQ_INT(unwind_debug_frame_row(&row, x.df->data, (size_t)x.df->size, 0, x.fdes[0].start, &err),
                 ERR_INVALID);
    CHECK_EQ_INT(unwind_debug_frame_row(&row, x.df->data, (size_t)x.df->size, x.df->size + 8, 0, &err),
                 ERR_INVALID);
    CHECK_EQ_INT(unwind_debug_frame_row(&row, x.df->data, (size_t)x.df->size, x.fdes[0].fde_off,
                                        x.fdes[0].end, &err),
                 ERR_NOT_FOUND);
    /* the __eh_frame reader does not take a __debug_frame CIE (id 0xffffffff) */
    CHECK(unwind_dwarf_row(&row, x.df->data, (size_t)x.df->size, x.df->addr, x.fdes[0].fde_off,
                           x.fdes[0].start, &err) != ERR_OK);
    debug_frame_fx_close(&x);
}

/* A hand-made 64-bit DWARF __debug_frame (length escape 0xffffffff, 8-byte CIE id and
 * pointer) and hostile ones: a CIE pointer past the section, a truncated FDE, a segment
 * selector. */
static void debug_frame_64bit_and_hostile(void)
{
    uint8_t s[128] = {0};
    size_t k = 0;
    /* CIE: 0xffffffff, u64 length, u64 id all ones, version 4, "", addr 8, seg 0, code 1,
     * data -8 (0x78), ra 16, def_cfa rsp+8, offset rip 1 (-8) */
    static const uint8_t cie_body[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 4, 0, 8, 0, 1, 0x78, 16,
                                       0x0c, 7, 8, 0x90, 1};
    s[k++] = 0xff, s[k++] = 0xff, s[k++] = 0xff, s[k++] = 0xff;
    put64(s + k, sizeof cie_body);
    k += 8;
    memcpy(s + k, cie_body, sizeof cie_body);
    k += sizeof cie_body;
    size_t fde_at = k;
    /* FDE: u64 CIE offset 0, pc 0x2000, range 0x40, advance 4, def_cfa_offset 32 */
    static const uint8_t fde_insns[] = {0x44, 0x0e, 32};
    s[k++] = 0xff, s[k++] = 0xff, s[k++] = 0xff, s[k++] = 0xff;
    put64(s + k, 8 + 8 + 8 + sizeof fde_insns);
    k += 8;
    put64(s + k, 0);
    k += 8;
    put64(s + k, 0x2000);
    k += 8;
    put64(s + k, 0x40);
    k += 8;
    memcpy(s + k, fde_insns, sizeof fde_insns);
    k += sizeof fde_insns;
    arena *a = arena_new(0);
    unwind_fde *fdes;
    size_t n;
    err_info err = {0};
    CHECK_EQ_INT(unwind_debug_frame_list(&fdes, &n, s, k, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 1);
    unwind_cfi_row row;
    if (n == 1) {
        CHECK_EQ_U64(fdes[0].start, 0x2000);
        CHECK_EQ_U64(fdes[0].end, 0x2040);
        CHECK_EQ_U64(fdes[0].fde_off, fde_at);
        CHECK_EQ_INT(unwind_debug_frame_row(&row, s, k, fde_at, 0x2003, &err), ERR_OK);
        CHECK(row.cfa_reg == 7 && row.cfa_offset == 8 && row.regs[16].kind == UNWIND_REG_OFFSET &&
              row.regs[16].value == -8);
        CHECK_EQ_INT(unwind_debug_frame_row(&row, s, k, fde_at, 0x2004, &err), ERR_OK);
        CHECK(row.cfa_offset == 32);
    }
    /* the FDE's CIE pointer past the section: left out of the list, refused as a row */
    put64(s + fde_at + 12, 0x1000);
    CHECK_EQ_INT(unwind_debug_frame_list(&fdes, &n, s, k, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(unwind_debug_frame_row(&row, s, k, fde_at, 0x2000, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "__debug_frame") != NULL);
    put64(s + fde_at + 12, 0);
    /* a range that runs past the end of the address space: no end to give, left out of
     * the list and refused as a row (its end would wrap below the address asked for) */
    put64(s + fde_at + 20, 0xffffffffffffffc0ull);
    put64(s + fde_at + 28, 0x80);
    CHECK_EQ_INT(unwind_debug_frame_list(&fdes, &n, s, k, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(unwind_debug_frame_row(&row, s, k, fde_at, 0xfffffffffffffff0ull, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "past the end of the address space") != NULL);
    put64(s + fde_at + 20, 0x2000);
    put64(s + fde_at + 28, 0x40);
    CHECK_EQ_INT(unwind_debug_frame_row(&row, s, k, fde_at, 0x2003, &err), ERR_OK);
    /* a segment selector size: not on Darwin */
    s[12 + 8 + 3] = 8;
    CHECK_EQ_INT(unwind_debug_frame_list(&fdes, &n, s, k, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 0);
    s[12 + 8 + 3] = 0;
    /* truncated: every length checked against the section */
    for (size_t cut = 0; cut < k; cut++) {
        CHECK_EQ_INT(unwind_debug_frame_list(&fdes, &n, s, cut, a, &err), ERR_OK);
        CHECK_EQ_INT(n, 0);
    }
    arena_free(a);
}

/* A resolver of one image for module 0, counting how often it is asked. */
struct one_image {
    const unwind_image *img;
    int asked;
};

static bool resolve_one(unwind_image *out, void *ctx, size_t module)
{
    struct one_image *r = ctx;
    r->asked++;
    if (module != 0)
        return false;
    *out = *r->img;
    return true;
}

/* The fixture dylib's frames walked by its dSYM's __debug_frame: frame 0 in df_leaf (frameless:
 * CFA = rsp + its frame), its caller in df_middle (CFA = rbp + 16), that one's caller by the
 * frame pointer's row. Without __debug_frame the frame pointer skips df_middle's frame. */
static void walks_by_debug_frame(void)
{
    debug_frame_fx x;
    if (!debug_frame_fx_open(&x))
        return;
    err_info err = {0};
    /* a frameless row (CFA = rsp + more than the return address) and two rbp rows, in two
     * other functions: found from the rows themselves, not from known addresses */
    uint64_t leaf_pc = 0, mid_pc = 0, outer_pc = 0;
    unwind_cfi_row leaf = {0}, row;
    for (size_t i = 0; i < x.n; i++)
        for (uint64_t at = x.fdes[i].start; at < x.fdes[i].end; at++) {
            if (unwind_debug_frame_row(&row, x.df->data, (size_t)x.df->size, x.fdes[i].fde_off, at,
                                       &err) != ERR_OK)
                continue;
            if (row.cfa_reg == 7 && row.cfa_offset > 16 && leaf_pc == 0) {
                leaf_pc = at;
                leaf = row;
            } else if (row.cfa_reg == 6 && row.cfa_offset == 16 && mid_pc == 0 && at > x.fdes[i].start) {
                mid_pc = at;
            } else if (row.cfa_reg == 6 && row.cfa_offset == 16 && outer_pc == 0 && mid_pc != 0 &&
                       (mid_pc < x.fdes[i].start || mid_pc >= x.fdes[i].end)) {
                outer_pc = at;
            }
        }
    CHECK(leaf_pc != 0 && mid_pc != 0 && outer_pc != 0);
    if (leaf_pc == 0 || mid_pc == 0 || outer_pc == 0) {
        debug_frame_fx_close(&x);
        return;
    }
    static uint8_t stack[0x400];
    const uint64_t sp = 0x7ff000001000, load = 0x10a000000;
    minidump md;
    minidump_module mod;
    minidump_thread t;
    make_dump(&md, &mod, &t, stack, sizeof stack, sp);
    unwind_image ui;
    debug_frame_image(&ui, &mod, x.df, load);
    uint64_t cfa = sp + (uint64_t)leaf.cfa_offset, rbp = sp + 0x200;
    put64(stack + (cfa - 8 - sp), load + mid_pc + 1);   /* df_leaf's return address */
    if (leaf.regs[3].kind == UNWIND_REG_OFFSET)
        put64(stack + (cfa + (uint64_t)leaf.regs[3].value - sp), 0xb0b0); /* rbx */
    put64(stack + 0x200, 0);                            /* df_middle's frame record */
    put64(stack + 0x208, load + outer_pc + 1);
    minidump_context c = {.arch = MINIDUMP_ARCH_X86_64, .nregs = 17};
    c.regs[MINIDUMP_X86_64_RIP] = load + leaf_pc;
    c.regs[MINIDUMP_X86_64_RSP] = sp;
    c.regs[MINIDUMP_X86_64_RBP] = rbp;
    unwind_frame *f;
    size_t nf;
    CHECK_EQ_INT(unwind_walk(&f, &nf, &md, &c, &ui, 1, x.a, &err), ERR_OK);
    CHECK(nf >= 3);
    if (nf >= 3) {
        CHECK_EQ_U64(f[1].pc, load + mid_pc + 1);
        CHECK_EQ_U64(f[1].sp, cfa);
        CHECK_EQ_INT(f[1].found, UNWIND_FOUND_CFI);
        CHECK_EQ_U64(f[2].pc, load + outer_pc + 1);
        CHECK_EQ_U64(f[2].sp, rbp + 16);
        CHECK_EQ_INT(f[2].found, UNWIND_FOUND_CFI);
    }
    /* a dump's threads share one walker: the __debug_frame is indexed once for all of them,
     * whether the image was given or resolved on first use (asked once), and every thread
     * walks as a walk of its own does */
    for (int by_resolver = 0; by_resolver < 2; by_resolver++) {
        struct one_image r1 = {&ui, 0};
        unwind_walker *w;
        CHECK_EQ_INT(unwind_walker_new(&w, &md, by_resolver ? NULL : &ui, by_resolver ? 0 : 1,
                                       by_resolver ? resolve_one : NULL, &r1, x.a, &err), ERR_OK);
        for (int thread = 0; thread < 3; thread++) {
            unwind_frame *g;
            size_t ng;
            CHECK_EQ_INT(unwind_walker_walk(&g, &ng, w, &c, &err), ERR_OK);
            CHECK_EQ_U64(ng, nf);
            for (size_t k = 0; k < ng && k < nf; k++)
                CHECK(g[k].pc == f[k].pc && g[k].sp == f[k].sp && g[k].found == f[k].found);
        }
        CHECK_EQ_U64(unwind_walker_indexes(w), 1);
        CHECK_EQ_INT(r1.asked, by_resolver);
        CHECK(unwind_walker_image(w, 0) != NULL);
    }
    ui.debug_frame = NULL;
    ui.debug_frame_len = 0;
    CHECK_EQ_INT(unwind_walk(&f, &nf, &md, &c, &ui, 1, x.a, &err), ERR_OK);
    CHECK(nf >= 2 && f[1].pc == load + outer_pc + 1 && f[1].found == UNWIND_FOUND_FRAME_POINTER);
    debug_frame_fx_close(&x);
}

/* ---- the stack scan's rule ------------------------------------------------------------- */

static bool covers_below_0x1180(const void *symbols, uint64_t rel)
{
    (void)symbols;
    return rel >= 0x1000 && rel < 0x1180;
}

/* A scanned word must lie in a module, and where the module's symbols or CFI are known, its
 * call instruction (word - 1) in one of their functions: a stale word pointing into the
 * module's data is passed over, the return address after it taken. With nothing known of the
 * module, the stale word is taken. */
static void scan_skips_words_outside_functions(void)
{
    static uint8_t stack[0x400];
    const uint64_t base = 0x7ff000000000;
    minidump md;
    minidump_module mod;
    minidump_thread t;
    make_dump(&md, &mod, &t, stack, sizeof stack, base);
    const unwind_entry entries[] = {
        {0x1000, 0x1100, 0x04000010}, /* DWARF, but no __eh_frame given: no caller by CFI */
        {0x1100, 0x1200, 0x01000000},
    };
    put64(stack + 0, 0x100008000);  /* stale: in the module, past its functions */
    put64(stack + 8, 0x100001190);  /* a return address in the second function */
    minidump_context c = {.arch = MINIDUMP_ARCH_X86_64, .nregs = 17};
    c.regs[MINIDUMP_X86_64_RIP] = 0x100001010;
    c.regs[MINIDUMP_X86_64_RSP] = base;
    c.regs[MINIDUMP_X86_64_RBP] = 0; /* no frame pointer chain */
    arena *a = arena_new(0);
    unwind_frame *f;
    size_t n;
    err_info err = {0};
    /* nothing known of the module: the first word in it */
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, NULL, 0, a, &err), ERR_OK);
    CHECK(n >= 2 && f[1].pc == 0x100008000 && f[1].found == UNWIND_FOUND_SCAN);
    /* its compact unwind known: the stale word lies in no function */
    unwind_image ui = {.text_vmaddr = 0x100000000, .entries = entries, .nentries = 2};
    memcpy(ui.uuid, UUID_APP, 16);
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, &ui, 1, a, &err), ERR_OK);
    CHECK(n >= 2 && f[1].pc == 0x100001190 && f[1].sp == base + 16 && f[1].found == UNWIND_FOUND_SCAN);
    /* its symbols alone known */
    unwind_image sym = {.text_vmaddr = 0x100000000, .covers = covers_below_0x1180};
    memcpy(sym.uuid, UUID_APP, 16);
    put64(stack + 8, 0x100001170);
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, &sym, 1, a, &err), ERR_OK);
    CHECK(n >= 2 && f[1].pc == 0x100001170 && f[1].found == UNWIND_FOUND_SCAN);
    /* symbols and CFI known: either covering the call is enough (0x11a0 is in the compact
     * unwind's second function, not in the symbols) */
    ui.covers = covers_below_0x1180;
    put64(stack + 8, 0x1000011a0);
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, &ui, 1, a, &err), ERR_OK);
    CHECK(n >= 2 && f[1].pc == 0x1000011a0);
    /* a word just past the last function: its call (word - 1) is still inside */
    put64(stack + 8, 0x100001200);
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, &ui, 1, a, &err), ERR_OK);
    CHECK(n >= 2 && f[1].pc == 0x100001200);
    /* no word in a function: no caller by scanning */
    put64(stack + 8, 0x100001201);
    CHECK_EQ_INT(unwind_walk(&f, &n, &md, &c, &ui, 1, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 1);
    arena_free(a);
}

/* A stale word pointing into the fixture dylib's stubs (past every __debug_frame FDE) is
 * passed over when the image's only knowledge is its __debug_frame. */
static void scan_holds_words_against_debug_frame(void)
{
    debug_frame_fx x;
    if (!debug_frame_fx_open(&x))
        return;
    err_info err = {0};
    CHECK(x.n > 0);
    if (x.n == 0) {
        debug_frame_fx_close(&x);
        return;
    }
    static uint8_t stack[0x400];
    const uint64_t base = 0x7ff000000000, load = 0x10a000000;
    minidump md;
    minidump_module mod;
    minidump_thread t;
    make_dump(&md, &mod, &t, stack, sizeof stack, base);
    unwind_image ui;
    debug_frame_image(&ui, &mod, x.df, load);
    put64(stack + 0, load + x.fdes[x.n - 1].end + 8); /* past the last function */
    put64(stack + 8, load + x.fdes[0].start + 5);     /* inside the first */
    minidump_context c = {.arch = MINIDUMP_ARCH_X86_64, .nregs = 17};
    c.regs[MINIDUMP_X86_64_RIP] = 0x5000; /* in no module: no CFI */
    c.regs[MINIDUMP_X86_64_RSP] = base;
    unwind_frame *f;
    size_t nf;
    CHECK_EQ_INT(unwind_walk(&f, &nf, &md, &c, &ui, 1, x.a, &err), ERR_OK);
    CHECK(nf >= 2 && f[1].pc == load + x.fdes[0].start + 5 && f[1].found == UNWIND_FOUND_SCAN);
    debug_frame_fx_close(&x);
}

int main(void)
{
    RUN(entries_match_llvm_objdump);
    RUN(encodings_decode);
    RUN(hostile_tables_are_refused);
    RUN(dwarf_rows_match_breakpad_symbols);
    RUN(walks_arm64);
    RUN(walks_x86_64_indirect_and_stops);
    RUN(debug_frame_rows_match_llvm_dwarfdump);
    RUN(debug_frame_64bit_and_hostile);
    RUN(walks_by_debug_frame);
    RUN(scan_skips_words_outside_functions);
    RUN(scan_holds_words_against_debug_frame);
    return harness_done();
}
