/*
 * Tests for common/symcache (+ debuginfo, dsym): build from the real fixtures, look up
 * known functions, inline chains, determinism across thread counts, concurrent readers,
 * symbol-table-only images, and corrupt .symc files; DWARF shapes of older toolchains and of
 * units that overlap, written as i386 assembly and assembled with clang-14 at test time.
 */
#include <dirent.h>
#include <stdio.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bytes.h"
#include "dsym/dsym.h"
#include "harness.h"
#include "macho/macho.h"
#include "symcache/symcache.h"
#include "symcache/symcache_build.h"
#include "debuginfo/debuginfo.h"
#include "unwind/unwind.h"
#include <string.h>

static char tmp_root[256];

static const char *fixtures_dir(void)
{
    const char *d = getenv("STACKSIFT_FIXTURES");
    return d && *d ? d : "build-fixtures";
}

typedef struct {
    char path[8][4096];
    char arch[8][16];
    bool has_dwarf[8];
    uint32_t functions[8];
    int n;
} built;

static void collect(const dsym_built *b, void *ctx)
{
    built *l = ctx;
    if (l->n < 8) {
        snprintf(l->path[l->n], sizeof l->path[0], "%s", b->path);
        snprintf(l->arch[l->n], sizeof l->arch[0], "%s", b->arch);
        l->has_dwarf[l->n] = b->has_dwarf;
        l->functions[l->n] = b->functions;
        l->n++;
    }
}

static char *new_dir(const char *name)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
    mkdir(dir, 0755);
    return dir;
}

/* build with display names stored ("DISP") or not */
static err_code build_opts(built *out, const char *rel_input, const char *dir_name, unsigned threads, bool display)
{
    char input[4096];
    snprintf(input, sizeof input, "%s/%s", fixtures_dir(), rel_input);
    memset(out, 0, sizeof *out);
    dsym_options opts = {.threads = threads, .display_names = display};
    err_info err = {0};
    err_code rc = dsym_build_symcaches(input, new_dir(dir_name), &opts, collect, out, &err);
    if (rc != ERR_OK)
        fprintf(stderr, "build %s: %s\n", input, err.msg);
    return rc;
}

static err_code build(built *out, const char *rel_input, const char *dir_name, unsigned threads)
{
    return build_opts(out, rel_input, dir_name, threads, false);
}

/* what SYMC_NAME_RAW_PLAIN says, byte by byte */
static bool plain_bytes(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f || *s == '"' || *s == '\\')
            return false;
    return true;
}

/* address of symbol `name` (e.g. "_main") in the Mach-O at rel path, arch slice 0 */
static uint64_t symbol_address(const char *rel, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", fixtures_dir(), rel);
    bytes b;
    err_info err = {0};
    uint64_t addr = 0;
    if (bytes_map_file(&b, path, &err) != ERR_OK)
        return 0;
    macho_image *img = malloc(sizeof *img);
    if (macho_parse(img, b.data, b.len, &err) == ERR_OK) {
        macho_symbol sym;
        for (uint32_t i = 0; i < img->nsyms; i++)
            if (macho_symbol_get(&sym, img, i) && strcmp(sym.name, name) == 0 && (sym.type & 0x0e) == 0x0e)
                addr = sym.value;
    }
    free(img);
    bytes_unmap(&b);
    return addr;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return s && a >= b && strcmp(s + a - b, suffix) == 0;
}

static void main_symbolicates_at_O0(void)
{
    built b;
    CHECK_EQ_INT(build(&b, "arm64-O0/FixtureApp.app.dSYM", "o0", 2), ERR_OK);
    CHECK_EQ_INT(b.n, 1);
    symcache *sc = NULL;
    err_info err = {0};
    CHECK_EQ_INT(symcache_open(&sc, b.path[0], &err), ERR_OK);
    if (sc == NULL)
        return;
    CHECK_EQ_STR(symcache_arch(sc), "arm64");
    CHECK_EQ_STR(symcache_image_name(sc), "FixtureApp");
    CHECK(symcache_has_dwarf(sc));
    CHECK_EQ_U64(symcache_text_vmaddr(sc), 0x100000000ull);
    uint64_t main_addr = symbol_address("arm64-O0/FixtureApp.app/FixtureApp", "_main");
    CHECK(main_addr != 0);
    symcache_frame f[SYMCACHE_MAX_FRAMES];
    size_t n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, main_addr);
    CHECK_EQ_INT(n, 1);
    if (n >= 1) {
        CHECK_EQ_STR(f[0].function, "main");
        CHECK(ends_with(f[0].file, "/main.c"));
        CHECK(f[0].line > 0);
        CHECK(!f[0].inlined && !f[0].from_symtab);
        CHECK_EQ_U64(f[0].sym_addr, main_addr);
    }
    /* before the image and far after it: nothing */
    CHECK_EQ_INT(symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, 0x1000), 0);
    CHECK_EQ_INT(symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, 0x200000000ull), 0);
    CHECK_EQ_INT(symcache_lookup(f, 0, sc, main_addr), 0);
    symcache_close(sc);
}

/* At -O2 some address expands into an inline chain: all but the last frame inlined, each
 * frame's caller line known. */
static void inline_chains_at_O2(void)
{
    built b;
    CHECK_EQ_INT(build(&b, "arm64-O2/FixtureApp.app.dSYM", "o2", 2), ERR_OK);
    symcache *sc = NULL;
    err_info err = {0};
    CHECK_EQ_INT(symcache_open(&sc, b.path[0], &err), ERR_OK);
    if (sc == NULL)
        return;
    symcache_frame f[SYMCACHE_MAX_FRAMES];
    int chains = 0, deepest = 0;
    for (uint64_t a = 0x100004000ull; a < 0x100008000ull; a += 4) {
        size_t n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, a);
        if (n < 2)
            continue;
        chains++;
        if ((int)n > deepest)
            deepest = (int)n;
        for (size_t i = 0; i < n; i++)
            CHECK(f[i].inlined == (i + 1 < n));
        CHECK(f[n - 1].line > 0 || f[n - 1].file == NULL);
        /* a caller frame's sym_addr never lies above the address */
        CHECK(f[n - 1].sym_addr <= a);
    }
    CHECK(chains > 10);
    CHECK(deepest >= 3);
    /* only 1 frame fits: the innermost */
    size_t n = 0;
    for (uint64_t a = 0x100004000ull; a < 0x100008000ull && n < 2; a += 4)
        n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, a);
    if (n >= 2) {
        symcache_frame one[1];
        uint64_t a;
        for (a = 0x100004000ull; symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, a) < 2; a += 4)
            ;
        CHECK_EQ_INT(symcache_lookup(one, 1, sc, a), 1);
        CHECK_EQ_STR(one[0].function, f[0].function);
    }
    symcache_close(sc);
}

/* symcache_lookup_many: answers in input order equal to symcache_lookup's, addresses nothing
 * covers answered with no frames, and a call stops (answering fewer) when the next address's
 * frames do not fit. */
static void lookup_many_matches_lookup(void)
{
    built b;
    CHECK_EQ_INT(build(&b, "arm64-O2/FixtureApp.app.dSYM", "many", 2), ERR_OK);
    symcache *sc = NULL;
    err_info err = {0};
    CHECK_EQ_INT(symcache_open(&sc, b.path[0], &err), ERR_OK);
    if (sc == NULL)
        return;
    /* every 4th byte of the text, backwards (input order is not address order), plus
     * addresses below, inside a gap of and above the image */
    enum { N = 0x1000 + 3 };
    uint64_t *addrs = calloc(N, sizeof *addrs);
    size_t n = 0;
    for (uint64_t a = 0x100008000ull; a > 0x100004000ull; a -= 4)
        addrs[n++] = a - 4;
    addrs[n++] = 0x1000;
    addrs[n++] = 0x200000000ull;
    addrs[n++] = UINT64_MAX;
    CHECK_EQ_INT(n, N);
    symcache_frame *many = calloc((size_t)N * 8, sizeof *many), one[SYMCACHE_MAX_FRAMES];
    size_t *ends = calloc(N, sizeof *ends);
    CHECK_EQ_INT(symcache_lookup_many(many, (size_t)N * 8, ends, sc, addrs, 0), 0);
    CHECK_EQ_INT(symcache_lookup_many(many, (size_t)N * 8, ends, sc, addrs, N), N);
    size_t chains = 0, empty = 0, mismatches = 0;
    for (size_t i = 0; i < N; i++) {
        size_t from = i ? ends[i - 1] : 0, k = ends[i] - from;
        size_t m = symcache_lookup(one, SYMCACHE_MAX_FRAMES, sc, addrs[i]);
        chains += m >= 2;
        empty += m == 0;
        bool same = k == m;
        for (size_t j = 0; same && j < m; j++)
            same = many[from + j].function == one[j].function && many[from + j].mangled == one[j].mangled &&
                   many[from + j].file == one[j].file && many[from + j].line == one[j].line &&
                   many[from + j].inlined == one[j].inlined && many[from + j].sym_addr == one[j].sym_addr;
        mismatches += !same;
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK(chains > 10);
    CHECK(empty >= 3);
    /* room for fewer frames than the first chain of 3 or more has: it is not answered, the
     * address before it (no frames) is; with room for exactly its frames, it is */
    size_t deep = 0;
    while (deep < N - 3 && symcache_lookup(one, SYMCACHE_MAX_FRAMES, sc, addrs[deep]) < 3)
        deep++;
    CHECK(deep < N - 3);
    uint64_t probe[3] = {0x1000, addrs[deep], 0x1000};
    CHECK_EQ_INT(symcache_lookup_many(many, 1, ends, sc, probe, 3), 1);
    CHECK_EQ_INT(ends[0], 0);
    size_t depth = symcache_lookup(one, SYMCACHE_MAX_FRAMES, sc, addrs[deep]);
    CHECK_EQ_INT(symcache_lookup_many(many, depth - 1, ends, sc, probe + 1, 2), 0);
    CHECK_EQ_INT(symcache_lookup_many(many, depth, ends, sc, probe + 1, 2), 2);
    CHECK_EQ_INT(ends[0], depth);
    CHECK_EQ_INT(ends[1], depth);
    free(addrs);
    free(many);
    free(ends);
    symcache_close(sc);
}

static void lookup_many_ids_and_names_of(bool disp)
{
    built b;
    CHECK_EQ_INT(build_opts(&b, "arm64-O2/FixtureApp.app.dSYM", disp ? "ids-disp" : "ids", 2, disp), ERR_OK);

    enum { N = 0x1000 + 1 };
    uint64_t *addrs = calloc(N, sizeof *addrs);
    size_t n = 0;
    for (uint64_t a = 0x100004000ull; a < 0x100008000ull; a += 4)
        addrs[n++] = a;
    addrs[n++] = 0x1000;
    CHECK_EQ_INT(n, N);
    symcache_frame *want = calloc((size_t)N * 8, sizeof *want), *got = calloc((size_t)N * 8, sizeof *got);
    uint32_t *ids = calloc((size_t)N * 8, sizeof *ids);
    size_t *ends_want = calloc(N, sizeof *ends_want), *ends_got = calloc(N, sizeof *ends_got);
    for (int memo = 0; memo < 2; memo++) {
        symcache *sc = NULL, *ref = NULL;
        err_info err = {0};
        CHECK_EQ_INT(symcache_open(&sc, b.path[0], &err), ERR_OK);
        CHECK_EQ_INT(symcache_open(&ref, b.path[0], &err), ERR_OK);
        if (sc == NULL || ref == NULL)
            break;
        CHECK(symcache_has_display_names(sc) == disp);
        if (memo) /* the blocks decompressed by lookups first */
            CHECK_EQ_INT(symcache_lookup_many(got, (size_t)N * 8, ends_got, sc, addrs, N), N);
        CHECK_EQ_INT(symcache_lookup_many(want, (size_t)N * 8, ends_want, ref, addrs, N), N);
        CHECK_EQ_INT(symcache_lookup_many_ids(got, ids, (size_t)N * 8, ends_got, sc, addrs, N), N);
        size_t frames = ends_got[N - 1], named = 0, mismatches = 0;
        CHECK_EQ_INT(frames, ends_want[N - 1]);
        /* the distinct ids, ascending */
        uint32_t nnames = symcache_name_count(sc), *uniq = calloc(frames + 1, sizeof *uniq);
        unsigned char *seen = calloc(nnames + 1, 1);
        size_t nuniq = 0;
        for (uint32_t id = 0; id < nnames; id++)
            for (size_t k = 0; k < frames; k++)
                if (ids[k] == id) {
                    uniq[nuniq++] = id;
                    break;
                }
        symcache_name *nm = calloc(nuniq + 1, sizeof *nm);
        symcache_names(nm, sc, uniq, nuniq);
        size_t bad_len = 0, bad_plain = 0, escaped = 0;
        for (size_t k = 0; k < nuniq; k++) {
            bad_len += strlen(nm[k].raw) != nm[k].raw_len || strlen(nm[k].display) != nm[k].display_len;
            bad_plain += plain_bytes(nm[k].raw) != nm[k].raw_plain || plain_bytes(nm[k].display) != nm[k].display_plain;
            escaped += !nm[k].display_plain;
        }
        CHECK_EQ_INT(bad_len, 0);
        CHECK_EQ_INT(bad_plain, 0);
        for (size_t k = 0; k < frames; k++) {
            const symcache_frame *w = &want[k];
            const char *fn = "??", *mg = NULL;
            CHECK(got[k].function == NULL && got[k].mangled == NULL);
            if (ids[k] != SYMCACHE_NO_NAME) {
                size_t at = 0;
                while (at < nuniq && uniq[at] != ids[k])
                    at++;
                CHECK(at < nuniq);
                if (at == nuniq)
                    continue;
                fn = nm[at].display;
                mg = nm[at].raw;
                named++;
                if ((fn == mg) != (w->function == w->mangled))
                    mismatches++;
            }
            bool same = strcmp(fn, w->function) == 0 &&
                        (mg == NULL ? w->mangled == NULL : w->mangled != NULL && strcmp(mg, w->mangled) == 0) &&
                        (got[k].file == NULL ? w->file == NULL : w->file != NULL && strcmp(got[k].file, w->file) == 0) &&
                        got[k].line == w->line && got[k].inlined == w->inlined &&
                        got[k].sym_addr == w->sym_addr && got[k].from_symtab == w->from_symtab;
            mismatches += !same;
        }
        CHECK_EQ_INT(mismatches, 0);
        CHECK(named > 100);
        CHECK(nuniq > 10);
        free(seen);
        free(uniq);
        (void)escaped;
        free(nm);
        symcache_close(sc);
        symcache_close(ref);
    }
    free(addrs);
    free(want);
    free(got);
    free(ids);
    free(ends_want);
    free(ends_got);
}

/* symcache_lookup_many_ids + symcache_names: the same frames as symcache_lookup_many (names
 * equal as strings; display == raw exactly when lookup_many's are the same pointer; lengths and
 * plain flags as the strings say), both on a fresh symcache (names read from
 * scratch-decompressed blocks) and on one whose lookups have decompressed the blocks already
 * (the memo's names), for a file without display names (demangled at lookup) and one with them
 * (the "DISP" section, nothing demangled). The reference is another open symcache of the
 * same file, so strings compare as strings. */
static void lookup_many_ids_and_names(void)
{
    for (int disp = 0; disp < 2; disp++)
        lookup_many_ids_and_names_of(disp);
}

static bool same_file(const char *a, const char *b)
{
    bytes x, y;
    err_info err = {0};
    if (bytes_map_file(&x, a, &err) != ERR_OK)
        return false;
    if (bytes_map_file(&y, b, &err) != ERR_OK) {
        bytes_unmap(&x);
        return false;
    }
    bool same = x.len == y.len && memcmp(x.data, y.data, x.len) == 0;
    bytes_unmap(&x);
    bytes_unmap(&y);
    return same;
}

static void output_does_not_depend_on_threads(void)
{
    built one, four;
    CHECK_EQ_INT(build(&one, "arm64-O2/FixtureApp.app.dSYM", "t1", 1), ERR_OK);
    CHECK_EQ_INT(build(&four, "arm64-O2/FixtureApp.app.dSYM", "t4", 4), ERR_OK);
    CHECK(one.n == 1 && four.n == 1);
    CHECK(same_file(one.path[0], four.path[0]));
}

static void fat_zip_and_symtab_only_inputs(void)
{
    built b;
    CHECK_EQ_INT(build(&b, "fat/FixtureApp.app.dSYM", "fat", 0), ERR_OK);
    CHECK_EQ_INT(b.n, 2);
    CHECK(strcmp(b.arch[0], b.arch[1]) != 0);
    CHECK(b.has_dwarf[0] && b.has_dwarf[1]);

    CHECK_EQ_INT(build(&b, "FixtureApp-dSYMs.zip", "zip", 0), ERR_OK);
    CHECK(b.n >= 2); /* the app and the framework */

    /* the app binary itself: no DWARF, the symbol table becomes the symcache */
    CHECK_EQ_INT(build(&b, "arm64-O0/FixtureApp.app/FixtureApp", "symtab", 0), ERR_OK);
    CHECK_EQ_INT(b.n, 1);
    CHECK(!b.has_dwarf[0]);
    CHECK(b.functions[0] > 5);
    symcache *sc = NULL;
    err_info err = {0};
    CHECK_EQ_INT(symcache_open(&sc, b.path[0], &err), ERR_OK);
    if (sc == NULL)
        return;
    CHECK(!symcache_has_dwarf(sc));
    uint64_t main_addr = symbol_address("arm64-O0/FixtureApp.app/FixtureApp", "_main");
    symcache_frame f[4];
    CHECK_EQ_INT(symcache_lookup(f, 4, sc, main_addr + 8), 1);
    CHECK_EQ_STR(f[0].function, "main"); /* leading underscore stripped */
    CHECK(f[0].from_symtab);
    CHECK(f[0].file == NULL);
    CHECK_EQ_U64(f[0].sym_addr, main_addr);
    symcache_close(sc);
}

static void bad_inputs_are_errors(void)
{
    err_info err = {0};
    char path[600];
    CHECK_EQ_INT(dsym_build_symcaches("/nonexistent", new_dir("bad"), NULL, NULL, NULL, &err), ERR_NOT_FOUND);
    snprintf(path, sizeof path, "%s/not-macho", tmp_root);
    FILE *f = fopen(path, "w");
    fputs("hello, I am not a Mach-O file", f);
    fclose(f);
    CHECK_EQ_INT(dsym_build_symcaches(path, new_dir("bad"), NULL, NULL, NULL, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "not a Mach-O") != NULL);
    snprintf(path, sizeof path, "%s/empty-dir", tmp_root);
    mkdir(path, 0755);
    CHECK_EQ_INT(dsym_build_symcaches(path, new_dir("bad"), NULL, NULL, NULL, &err), ERR_INVALID);
}

/* ---- corrupt .symc files ---------------------------------------------------------------- */

static uint32_t rd32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}



static uint8_t *read_all(const char *path, size_t *len)
{
    bytes b;
    err_info err = {0};
    if (bytes_map_file(&b, path, &err) != ERR_OK)
        return NULL;
    uint8_t *copy = malloc(b.len);
    memcpy(copy, b.data, b.len);
    *len = b.len;
    bytes_unmap(&b);
    return copy;
}

/* The names of every id of `sc` through symcache_names, as "raw\tdisplay\tflags\n" lines (a
 * display form equal to the raw name printed as "=") into *out. */
static void names_text(buf *out, const symcache *sc)
{
    uint32_t n = symcache_name_count(sc);
    uint32_t *ids = malloc((n + 1) * sizeof *ids);
    symcache_name *nm = malloc((n + 1) * sizeof *nm);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = i;
    symcache_names(nm, sc, ids, n);
    for (uint32_t i = 0; i < n; i++)
        buf_printf(out, "%s\t%s\t%u%u%u%u\n", nm[i].raw, nm[i].raw == nm[i].display ? "=" : nm[i].display,
                   nm[i].raw_len, nm[i].display_len, nm[i].raw_plain, nm[i].display_plain);
    free(ids);
    free(nm);
}

/* Display names stored at build ("DISP", format 8; LZ4 groups since format 9): symcache_names
 * gives exactly what demangling at lookup gives (a file built without them is the reference); a
 * section of another demangler revision or in a version-8 file (zstd groups) is ignored, a
 * corrupt group falls back to demangling, a section that does not fit the core is refused at
 * open, and a merge never takes another file's (nor a version-8 base's). */

/* sc has no display names of its own (ignored or absent): every name reads as `want`, the
 * names demangled at lookup */
static void names_demangled_as(const symcache *sc, const buf *want)
{
    CHECK(!symcache_has_display_names(sc));
    buf got;
    buf_init(&got);
    names_text(&got, sc);
    CHECK(want->len == got.len && memcmp(want->data, got.data, want->len) == 0);
    buf_reset(&got);
}

static void display_names_section(void)
{
    built with, without;
    CHECK_EQ_INT(build_opts(&with, "arm64-O2/FixtureApp.app.dSYM", "disp-with", 1, true), ERR_OK);
    CHECK_EQ_INT(build_opts(&without, "arm64-O2/FixtureApp.app.dSYM", "disp-without", 1, false), ERR_OK);
    size_t wlen = 0, olen = 0;
    uint8_t *w = read_all(with.path[0], &wlen), *o = read_all(without.path[0], &olen);
    CHECK(w != NULL && o != NULL && wlen > olen);
    if (w == NULL || o == NULL || wlen <= olen)
        return;
    symcache *sw = NULL, *so = NULL;
    err_info err = {0};
    CHECK_EQ_INT(symcache_open_bytes(&sw, w, wlen, &err), ERR_OK);
    CHECK_EQ_INT(symcache_open_bytes(&so, o, olen, &err), ERR_OK);
    if (sw == NULL || so == NULL)
        return;
    CHECK(symcache_has_display_names(sw));
    CHECK(!symcache_has_display_names(so));
    buf want, got;
    buf_init(&want);
    buf_init(&got);
    names_text(&want, so);
    names_text(&got, sw);
    CHECK(symcache_name_count(so) > 20);
    CHECK(want.len == got.len && memcmp(want.data, got.data, want.len) == 0);
    /* the section's body in w (it is the only section of a dSYM-only build) */
    size_t blen = 0;
    const uint8_t *body = symcache_section(sw, 0x50534944u /* "DISP" */, &blen);
    CHECK(body != NULL && blen > 16);
    size_t at = body ? (size_t)(body - w) : 0;
    uint8_t *copy = malloc(wlen);
    /* another demangler revision: ignored, names demangled at lookup */
    memcpy(copy, w, wlen);
    copy[at] ^= 0x40;
    symcache *sc = NULL;
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, wlen, &err), ERR_OK);
    if (sc != NULL) {
        names_demangled_as(sc, &want);
        symcache_close(sc);
    }
    /* the same bytes in a version-8 file: its groups would be zstd frames, ignored */
    memcpy(copy, w, wlen);
    copy[8] = 8;
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, wlen, &err), ERR_OK);
    if (sc != NULL) {
        names_demangled_as(sc, &want);
        buf m8;
        buf_init(&m8);
        CHECK_EQ_INT(symcache_merge(&m8, sc, so, &err), ERR_OK);
        size_t l8 = 0;
        CHECK(symcache_section(sc, 0x50534944u, &l8) != NULL);
        symcache *merged = NULL;
        CHECK_EQ_INT(symcache_open_bytes(&merged, m8.data, m8.len, &err), ERR_OK);
        CHECK(merged != NULL && symcache_section(merged, 0x50534944u, &l8) == NULL);
        symcache_close(merged);
        buf_reset(&m8);
        symcache_close(sc);
    }
    /* a name count that is not the core's: corrupt */
    memcpy(copy, w, wlen);
    copy[at + 4] ^= 1;
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, wlen, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "display names") != NULL);
    /* every byte of the first group flipped in turn: the names stay right (a group whose check
     * word, size or LZ4 block does not match is demangled instead) */
    uint32_t ngroups = (symcache_name_count(sw) + 255) / 256;
    size_t frames = at + 16 + ((size_t)ngroups + 1) * 4, flen = rd32le(body + 16 + 4);
    size_t fallbacks = 0;
    for (size_t k = 0; k < flen; k++) {
        memcpy(copy, w, wlen);
        copy[frames + k] ^= 0x21;
        if (symcache_open_bytes(&sc, copy, wlen, &err) != ERR_OK) {
            CHECK(0);
            continue;
        }
        got.len = 0;
        names_text(&got, sc);
        fallbacks += want.len == got.len && memcmp(want.data, got.data, want.len) == 0;
        symcache_close(sc);
    }
    CHECK_EQ_U64(fallbacks, flen);
    /* merges: the base's section stays, the other's is never taken */
    buf m;
    buf_init(&m);
    CHECK_EQ_INT(symcache_merge(&m, so, sw, &err), ERR_OK);
    CHECK_EQ_INT(symcache_open_bytes(&sc, m.data, m.len, &err), ERR_OK);
    CHECK(sc != NULL && !symcache_has_display_names(sc));
    symcache_close(sc);
    m.len = 0;
    CHECK_EQ_INT(symcache_merge(&m, sw, so, &err), ERR_OK);
    CHECK_EQ_INT(symcache_open_bytes(&sc, m.data, m.len, &err), ERR_OK);
    CHECK(sc != NULL && symcache_has_display_names(sc));
    if (sc != NULL) {
        got.len = 0;
        names_text(&got, sc);
        CHECK(want.len == got.len && memcmp(want.data, got.data, want.len) == 0);
    }
    symcache_close(sc);
    buf_reset(&m);
    buf_reset(&want);
    buf_reset(&got);
    free(copy);
    symcache_close(sw);
    symcache_close(so);
    free(w);
    free(o);
}

static void corrupt_symcaches_are_rejected(void)
{
    built b;
    CHECK_EQ_INT(build(&b, "arm64-O2/FixtureApp.app.dSYM", "corrupt", 1), ERR_OK);
    size_t len = 0;
    uint8_t *good = read_all(b.path[0], &len);
    CHECK(good != NULL && len > 200);
    if (good == NULL)
        return;
    err_info err = {0};
    symcache *sc = NULL;
    /* every truncation */
    for (size_t cut = 0; cut < len; cut += (cut < 256 ? 1 : 97)) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, good, cut);
        CHECK(symcache_open_bytes(&sc, copy, cut, &err) != ERR_OK);
        CHECK(sc == NULL);
        free(copy);
    }
    /* wrong magic, unknown version, out-of-order ranges */
    uint8_t *copy = malloc(len);
    memcpy(copy, good, len);
    copy[0] = 'X';
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_INVALID);
    memcpy(copy, good, len);
    copy[8] = 99;
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "version 99") != NULL);
    memcpy(copy, good, len);
    copy[8] = 4; /* the version before the oldest this build reads: outdated, to be rebuilt */
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_OUTDATED);
    CHECK(strstr(err.msg, "outdated") != NULL && strstr(err.msg, "rebuild") != NULL);
    /* (symcache_format.h: ngranules at 76, nfiles at 72, strings_size at 64, the granule
     * index from 96, the padding right before the strings) */
    uint32_t ngranules = rd32le(good + 76), strings_size = rd32le(good + 64);
    memcpy(copy, good, len);
    copy[96 + 4 * (size_t)ngranules] ^= 1; /* the index's last entry: not the granules' end */
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "granule index") != NULL);
    memcpy(copy, good, len);
    copy[len - strings_size - 1] = 1; /* the padding after the granules */
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "padding") != NULL);
    memcpy(copy, good, len);
    copy[76] ^= 1; /* a granule count that does not match the tables' size */
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_INVALID);
    /* absurd counts */
    memcpy(copy, good, len);
    copy[72] = 0xff, copy[73] = 0xff, copy[74] = 0xff, copy[75] = 0x7f;
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_INVALID);
    memcpy(copy, good, len);
    copy[84] = 7; /* a granule unit of 2^7 bytes */
    CHECK_EQ_INT(symcache_open_bytes(&sc, copy, len, &err), ERR_INVALID);
    /* bit flips in the tables: open may pass (granules are checked by the lookups that read
     * them), lookups must stay in bounds (ASan: `copy` is exactly `len` bytes) */
    int opened = 0;
    for (size_t i = 96; i < len; i += 13) {
        memcpy(copy, good, len);
        copy[i] ^= 0x5a;
        if (symcache_open_bytes(&sc, copy, len, &err) == ERR_OK) {
            opened++;
            symcache_frame f[SYMCACHE_MAX_FRAMES];
            for (uint64_t a = 0x100004000ull; a < 0x100006000ull; a += 64) {
                size_t n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, a);
                for (size_t k = 0; k < n; k++)
                    CHECK(f[k].function != NULL && strlen(f[k].function) < len);
            }
            symcache_close(sc);
        }
    }
    CHECK(opened > 0);
    free(copy);
    free(good);
}

/* ---- unwind sections (format 6) --------------------------------------------------------- */

/* The slice 0 of the Mach-O at `path` (mapped into *b; unmapped by the caller). */
static macho_image *slice0(bytes *b, const char *path)
{
    err_info err = {0};
    if (bytes_map_file(b, path, &err) != ERR_OK)
        return NULL;
    macho_image *img = malloc(sizeof *img);
    if (macho_parse(img, b->data, b->len, &err) != ERR_OK) {
        free(img);
        bytes_unmap(b);
        return NULL;
    }
    return img;
}

/* What symcache_unwind_image gives for the symcache at `symc` is what the binary at `exe`
 * holds: its compact unwind entries as unwind_compact_list reads them (checked against
 * llvm-objdump by test_unwind), its indirect stack sizes, its __eh_frame bytes. */
static void unwind_matches_binary(const char *symc, const char *exe)
{
    bytes b;
    macho_image *img = slice0(&b, exe);
    CHECK(img != NULL);
    if (img == NULL)
        return;
    symcache *sc = NULL;
    err_info err = {0};
    CHECK_EQ_INT(symcache_open(&sc, symc, &err), ERR_OK);
    unwind_image ui;
    arena *a = arena_new(0);
    if (sc != NULL && symcache_unwind_image(&ui, sc, &err) == ERR_OK) {
        CHECK(symcache_has_unwind(sc));
        CHECK(memcmp(ui.uuid, img->uuid, 16) == 0);
        CHECK_EQ_U64(ui.text_vmaddr, img->text_vmaddr);
        const macho_section *us = macho_section_find(img, "__TEXT", "__unwind_info");
        unwind_entry *e = NULL;
        size_t n = 0;
        CHECK(us != NULL && unwind_compact_list(&e, &n, us->data, us->size, a, &err) == ERR_OK);
        CHECK(n > 10);
        CHECK_EQ_INT(ui.nentries, n);
        CHECK(n == ui.nentries && (n == 0 || memcmp(e, ui.entries, n * sizeof *e) == 0));
        const macho_section *t = macho_section_find(img, "__TEXT", "__text");
        unwind_stack_size *z = NULL;
        size_t nz = 0;
        if (img->cputype == MACHO_CPU_TYPE_X86_64 && t != NULL)
            CHECK(unwind_stack_sizes(&z, &nz, e, n, img->data + t->offset - (t->addr - img->text_vmaddr),
                                     img->len - (t->offset - (t->addr - img->text_vmaddr)), a, &err) == ERR_OK);
        CHECK_EQ_INT(ui.nstack_sizes, nz);
        CHECK(nz == ui.nstack_sizes && (nz == 0 || memcmp(z, ui.stack_sizes, nz * sizeof *z) == 0));
        const macho_section *eh = macho_section_find(img, "__TEXT", "__eh_frame");
        if (eh != NULL && eh->data != NULL) {
            CHECK_EQ_INT(ui.eh_frame_len, eh->size);
            CHECK_EQ_U64(ui.eh_frame_vmaddr, eh->addr);
            CHECK(ui.eh_frame != NULL && memcmp(ui.eh_frame, eh->data, eh->size) == 0);
        } else {
            CHECK(ui.eh_frame == NULL && ui.eh_frame_len == 0);
        }
        CHECK(ui.debug_frame == NULL);
    } else {
        CHECK(!"no unwind info in the executable's symcache");
    }
    arena_free(a);
    symcache_close(sc);
    free(img);
    bytes_unmap(&b);
}

static void unwind_sections_from_executables(void)
{
    static const char *const apps[] = {"arm64-O2/FixtureApp.app", "x86_64-O2/FixtureApp.app"};
    for (size_t i = 0; i < 2; i++) {
        char exe[4096], rel[512];
        snprintf(rel, sizeof rel, "%s/FixtureApp", apps[i]);
        snprintf(exe, sizeof exe, "%s/%s", fixtures_dir(), rel);
        built x, d, m1, m2;
        char dir[64];
        snprintf(dir, sizeof dir, "unwind-exe-%zu", i);
        CHECK_EQ_INT(build(&x, rel, dir, 1), ERR_OK);
        CHECK(x.n == 1 && !x.has_dwarf[0]);
        if (x.n == 1)
            unwind_matches_binary(x.path[0], exe);
        /* the dSYM alone: no unwind info (dsymutil keeps the section headers only) */
        char dsym[512];
        snprintf(dsym, sizeof dsym, "%s.dSYM", apps[i]);
        snprintf(dir, sizeof dir, "unwind-dsym-%zu", i);
        CHECK_EQ_INT(build(&d, dsym, dir, 1), ERR_OK);
        symcache *sc = NULL;
        err_info err = {0};
        unwind_image ui;
        if (d.n == 1 && symcache_open(&sc, d.path[0], &err) == ERR_OK) {
            CHECK(!symcache_has_unwind(sc));
            CHECK_EQ_INT(symcache_unwind_image(&ui, sc, &err), ERR_NOT_FOUND);
            symcache_close(sc);
        }
        /* both into one folder, in either order: DWARF names and the executable's unwind
         * info, the same bytes */
        char in[4096];
        snprintf(dir, sizeof dir, "unwind-merge-a%zu", i);
        CHECK_EQ_INT(build(&m1, dsym, dir, 1), ERR_OK);
        snprintf(in, sizeof in, "%s/%s", fixtures_dir(), rel);
        memset(&m1, 0, sizeof m1);
        dsym_options o = {.threads = 1};
        CHECK_EQ_INT(dsym_build_symcaches(in, new_dir(dir), &o, collect, &m1, &err), ERR_OK);
        CHECK(m1.n == 1 && m1.has_dwarf[0] && m1.functions[0] == d.functions[0]);
        snprintf(dir, sizeof dir, "unwind-merge-b%zu", i);
        CHECK_EQ_INT(build(&m2, rel, dir, 1), ERR_OK);
        snprintf(in, sizeof in, "%s/%s", fixtures_dir(), dsym);
        memset(&m2, 0, sizeof m2);
        CHECK_EQ_INT(dsym_build_symcaches(in, new_dir(dir), &o, collect, &m2, &err), ERR_OK);
        CHECK(m2.n == 1 && m2.has_dwarf[0]);
        if (m1.n != 1 || m2.n != 1)
            continue;
        unwind_matches_binary(m1.path[0], exe);
        unwind_matches_binary(m2.path[0], exe);
        size_t l1 = 0, l2 = 0;
        uint8_t *b1 = read_all(m1.path[0], &l1), *b2 = read_all(m2.path[0], &l2);
        CHECK(b1 && b2 && l1 == l2 && memcmp(b1, b2, l1) == 0);
        /* the names are the dSYM's */
        if (symcache_open(&sc, m1.path[0], &err) == ERR_OK) {
            CHECK(symcache_has_dwarf(sc));
            symcache_frame f[8];
            uint64_t main_addr = symbol_address(rel, "_main");
            CHECK(symcache_lookup(f, 8, sc, main_addr) > 0 && f[0].file != NULL && !f[0].from_symtab);
            symcache_close(sc);
        }
        /* the executable again into the merged folder: nothing changes, nothing reported */
        built again;
        memset(&again, 0, sizeof again);
        snprintf(in, sizeof in, "%s/%s", fixtures_dir(), rel);
        CHECK_EQ_INT(dsym_build_symcaches(in, new_dir(dir), &o, collect, &again, &err), ERR_OK);
        CHECK_EQ_INT(again.n, 0);
        size_t l3 = 0;
        uint8_t *b3 = read_all(m2.path[0], &l3);
        CHECK(b3 && l3 == l2 && memcmp(b3, b2, l2) == 0);
        free(b1);
        free(b2);
        free(b3);
    }
}

/* Version 5 files read as version 6 without sections; sections are checked at open (framing)
 * and by the accessor (the body); a corrupt one never reads outside the file. */
static void unwind_sections_versions_and_corruption(void)
{
    built x, d;
    CHECK_EQ_INT(build(&x, "x86_64-O2/FixtureApp.app/FixtureApp", "unwind-corrupt-x", 1), ERR_OK);
    CHECK_EQ_INT(build(&d, "x86_64-O2/FixtureApp.app.dSYM", "unwind-corrupt-d", 1), ERR_OK);
    if (x.n != 1 || d.n != 1)
        return;
    size_t xl = 0, dl = 0;
    uint8_t *xg = read_all(x.path[0], &xl), *dg = read_all(d.path[0], &dl);
    err_info err = {0};
    symcache *sc = NULL;
    unwind_image ui;
    /* a version-5 file: the dSYM's (no sections) opens, without unwind info */
    uint8_t *c = malloc(xl > dl ? xl : dl);
    memcpy(c, dg, dl);
    c[8] = 5;
    CHECK_EQ_INT(symcache_open_bytes(&sc, c, dl, &err), ERR_OK);
    if (sc) {
        CHECK_EQ_INT(symcache_unwind_image(&ui, sc, &err), ERR_NOT_FOUND);
        symcache_frame f[4];
        CHECK(symcache_lookup(f, 4, sc, symbol_address("x86_64-O2/FixtureApp.app/FixtureApp", "_main")) > 0);
        symcache_close(sc);
    }
    /* ... but sections in a version-5 file are not */
    memcpy(c, xg, xl);
    c[8] = 5;
    CHECK_EQ_INT(symcache_open_bytes(&sc, c, xl, &err), ERR_INVALID);
    /* where the core ends: the sections start at the next 8-byte boundary */
    CHECK_EQ_INT(symcache_open_bytes(&sc, xg, xl, &err), ERR_OK);
    size_t core = 0;
    if (sc) {
        CHECK(symcache_has_unwind(sc));
        symcache_close(sc);
    }
    uint32_t strings_size = rd32le(xg + 64);
    /* find the core's end: the first section tag "UNWI" after 8-byte alignment */
    for (size_t at = 96; at + 4 <= xl; at += 8)
        if (memcmp(xg + at, "UNWI", 4) == 0) {
            core = at;
            break;
        }
    CHECK(core > strings_size);
    if (core == 0) {
        free(c), free(xg), free(dg);
        return;
    }
    /* every truncation past the core fails (only the core itself is a whole file) */
    for (size_t cut = core - 8; cut < xl; cut += 7) {
        memcpy(c, xg, cut);
        err_code rc = symcache_open_bytes(&sc, c, cut, &err);
        if (rc == ERR_OK) {
            CHECK(cut <= core); /* the core, maybe with the zero padding before the section */
            CHECK_EQ_INT(symcache_unwind_image(&ui, sc, &err), ERR_NOT_FOUND);
            symcache_close(sc);
        }
    }
    uint32_t size = rd32le(xg + core + 4);
    /* a size past the end; a second section with the same tag; nonzero padding */
    memcpy(c, xg, xl);
    c[core + 7] = 0x7f;
    CHECK_EQ_INT(symcache_open_bytes(&sc, c, xl, &err), ERR_INVALID);
    memcpy(c, xg, xl);
    if (size % 8 != 0) {
        c[core + 8 + size] = 1;
        CHECK_EQ_INT(symcache_open_bytes(&sc, c, xl, &err), ERR_INVALID);
    }
    /* the body: counts that do not add up, entries out of order (the accessor) */
    memcpy(c, xg, xl);
    c[core + 8 + 8] ^= 1; /* nentries */
    CHECK_EQ_INT(symcache_open_bytes(&sc, c, xl, &err), ERR_OK);
    if (sc) {
        CHECK_EQ_INT(symcache_unwind_image(&ui, sc, &err), ERR_INVALID);
        symcache_close(sc);
    }
    memcpy(c, xg, xl);
    memcpy(c + core + 8 + 24, xg + core + 8 + 24 + 16, 4); /* entry 0 starts at entry 1's end */
    CHECK_EQ_INT(symcache_open_bytes(&sc, c, xl, &err), ERR_OK);
    if (sc) {
        CHECK_EQ_INT(symcache_unwind_image(&ui, sc, &err), ERR_INVALID);
        CHECK(strstr(err.msg, "order") != NULL);
        symcache_close(sc);
    }
    /* an unknown section is skipped; merging images of different UUIDs is refused */
    buf more;
    buf_init(&more);
    buf_append(&more, xg, xl);
    const uint8_t unknown[16] = {'Z', 'Z', 'Z', 'Z', 3, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0};
    buf_append(&more, unknown, sizeof unknown);
    CHECK_EQ_INT(symcache_open_bytes(&sc, more.data, more.len, &err), ERR_OK);
    if (sc) {
        CHECK_EQ_INT(symcache_unwind_image(&ui, sc, &err), ERR_OK);
        symcache *other = NULL;
        built o;
        CHECK_EQ_INT(build(&o, "arm64-O2/FixtureApp.app.dSYM", "unwind-corrupt-o", 1), ERR_OK);
        if (o.n == 1 && symcache_open(&other, o.path[0], &err) == ERR_OK) {
            buf m;
            buf_init(&m);
            CHECK_EQ_INT(symcache_merge(&m, sc, other, &err), ERR_INVALID);
            buf_reset(&m);
            symcache_close(other);
        }
        symcache_close(sc);
    }
    buf_reset(&more);
    free(c);
    free(xg);
    free(dg);
}

/* ---- concurrent readers ----------------------------------------------------------------- */

typedef struct {
    const symcache *sc;
    const char **expect; /* innermost function per probe address */
    int mismatches;
} reader_arg;

#define PROBES 4096

static void *reader(void *p)
{
    reader_arg *r = p;
    symcache_frame f[SYMCACHE_MAX_FRAMES];
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < PROBES; i++) {
            size_t n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, r->sc, 0x100004000ull + (uint64_t)i * 4);
            const char *got = n ? f[0].function : NULL;
            if (got != r->expect[i])
                r->mismatches++;
        }
    return NULL;
}

static void concurrent_lookups_agree(void)
{
    built b;
    CHECK_EQ_INT(build(&b, "arm64-O2/FixtureApp.app.dSYM", "threads", 0), ERR_OK);
    symcache *sc = NULL;
    err_info err = {0};
    CHECK_EQ_INT(symcache_open(&sc, b.path[0], &err), ERR_OK);
    if (sc == NULL)
        return;
    const char **expect = calloc(PROBES, sizeof *expect);
    symcache_frame f[SYMCACHE_MAX_FRAMES];
    for (int i = 0; i < PROBES; i++) {
        size_t n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, 0x100004000ull + (uint64_t)i * 4);
        expect[i] = n ? f[0].function : NULL;
    }
    pthread_t t[4];
    reader_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (reader_arg){sc, expect, 0};
        pthread_create(&t[i], NULL, reader, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(args[i].mismatches, 0);
    }
    free(expect);
    symcache_close(sc);
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names that sort hard: thousands sharing a prefix longer than 1 KiB (the sort compares
 * whole names past that depth), names that are prefixes of others, bytes above 0x7f, and
 * the same name under two string ids (as two reader threads store it): every address must
 * come back with its own name, whatever the thread count. */
static void names_sort_and_fold(void)
{
    enum { N = 6000 };
    macho_image img;
    memset(&img, 0, sizeof img);
    img.has_uuid = true;
    memset(img.uuid, 0x5a, sizeof img.uuid);
    img.cputype = 0x0100000c; /* arm64 */
    img.has_text = true;
    img.text_vmaddr = 0x100000;
    img.text_vmsize = 16u * N + 0x1000;
    debuginfo di;
    memset(&di, 0, sizeof di);
    strtab_init(&di.strings);
    di.scopes = calloc(N, sizeof *di.scopes);
    di.ranges = calloc(N, sizeof *di.ranges);
    static char names[N][1400];
    char longp[1200];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    for (int i = 0; i < N; i++) {
        switch (i % 4) {
        case 0: snprintf(names[i], sizeof names[i], "%s%d", longp, (i * 7919) % N); break;
        case 1: snprintf(names[i], sizeof names[i], "ns::f%.*s", i % 40 + 1, "abcdefghijklmnopqrstuvwxyzabcdefghijklmn"); break;
        case 2: snprintf(names[i], sizeof names[i], "caf\xc3\xa9::g%d", i / 3); break;
        default: snprintf(names[i], sizeof names[i], "%s", names[i - 3]); break; /* a duplicate */
        }
        uint32_t id = strtab_add(&di.strings, names[i], strlen(names[i])); /* no dedup */
        uint64_t start = img.text_vmaddr + 16u * (uint64_t)i;
        di.scopes[i] = (debuginfo_scope){id, DEBUGINFO_NONE, STRTAB_NONE, 0, 0, 0, start};
        di.ranges[i] = (debuginfo_range){start, start + 16, (uint32_t)i, 0};
    }
    di.nscopes = N;
    di.nranges = N;
    buf one, two;
    buf_init(&one);
    buf_init(&two);
    err_info err = {0};
    CHECK_EQ_INT(symcache_build(&one, NULL, &img, &di, "Names", 1, &err), ERR_OK);
    CHECK_EQ_INT(symcache_build(&two, NULL, &img, &di, "Names", 2, &err), ERR_OK);
    CHECK(one.len == two.len && memcmp(one.data, two.data, one.len) == 0);
    /* each distinct name stored once (symcache_format.h: nnames, u32 at offset 80): a sort
     * that left equal names apart would store some twice */
    static const char *sorted[N];
    for (int i = 0; i < N; i++)
        sorted[i] = names[i];
    qsort(sorted, N, sizeof *sorted, cmp_cstr);
    uint32_t distinct = 0;
    for (int i = 0; i < N; i++)
        distinct += i == 0 || strcmp(sorted[i - 1], sorted[i]) != 0;
    CHECK(one.len > 84);
    if (one.len > 84)
        CHECK_EQ_INT(one.data[80] | one.data[81] << 8 | one.data[82] << 16 | (uint32_t)one.data[83] << 24, distinct);
    symcache *sc = NULL;
    CHECK_EQ_INT(symcache_open_bytes(&sc, one.data, one.len, &err), ERR_OK);
    int wrong = 0;
    for (int i = 0; sc != NULL && i < N; i++) {
        symcache_frame f[4];
        size_t nf = symcache_lookup(f, 4, sc, img.text_vmaddr + 16u * (uint64_t)i + 3);
        if (nf != 1 || strcmp(f[0].function, names[i]) != 0)
            wrong++;
    }
    CHECK_EQ_INT(wrong, 0);
    symcache_close(sc);
    buf_reset(&one);
    buf_reset(&two);
    debuginfo_reset(&di);
}

/* A name DWARF gives without a linkage name keeps its display and raw form (DW_AT_name, as
 * llvm-symbolizer prints it) and gets its scope-qualified name beside it, per scope: one
 * DW_AT_name in two classes (and bare in a C function) stays three functions. */
static void qualified_names_stored_beside_display(void)
{
    macho_image img;
    memset(&img, 0, sizeof img);
    img.has_uuid = true;
    memset(img.uuid, 0x5b, sizeof img.uuid);
    img.cputype = 0x0100000c; /* arm64 */
    img.has_text = true;
    img.text_vmaddr = 0x100000;
    img.text_vmsize = 0x1000;
    debuginfo di;
    memset(&di, 0, sizeof di);
    strtab_init(&di.strings);
    static const struct {
        const char *name, *qualified;
    } S[] = {{"_ZN2ns3runEi", NULL}, {"area", "ns::Widget::area"}, {"area", "ns::Box<int>::area"},
             {"area", NULL}, {"crash", "CRLCrashSwift.crash"}};
    enum { N = sizeof S / sizeof S[0] };
    di.scopes = calloc(N, sizeof *di.scopes);
    di.ranges = calloc(N, sizeof *di.ranges);
    di.qualified = calloc(N, sizeof *di.qualified);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t id = strtab_intern(&di.strings, S[i].name, strlen(S[i].name));
        uint64_t start = img.text_vmaddr + 64u * i;
        di.scopes[i] = (debuginfo_scope){id, DEBUGINFO_NONE, STRTAB_NONE, 0, 0, 0, start};
        di.ranges[i] = (debuginfo_range){start, start + 64, i, 0};
        if (S[i].qualified != NULL)
            di.qualified[di.nqualified++] =
                (debuginfo_qualified){i, strtab_intern(&di.strings, S[i].qualified, strlen(S[i].qualified))};
    }
    di.nscopes = N;
    di.nranges = N;
    buf out;
    buf_init(&out);
    err_info err = {0};
    CHECK_EQ_INT(symcache_build(&out, NULL, &img, &di, "Scopes", 1, &err), ERR_OK);
    symcache *sc = NULL;
    CHECK_EQ_INT(symcache_open_bytes(&sc, out.data, out.len, &err), ERR_OK);
    CHECK_EQ_INT(sc ? symcache_name_count(sc) : 0, 5); /* "area" bare, and in two scopes */
    for (uint32_t i = 0; sc != NULL && i < N; i++) {
        uint64_t addr = img.text_vmaddr + 64u * i + 8;
        symcache_frame f[2], many[2];
        uint32_t id[2];
        size_t end;
        CHECK_EQ_INT(symcache_lookup(f, 2, sc, addr), 1);
        CHECK_EQ_INT(symcache_lookup_many(many, 2, &end, sc, &addr, 1), 1);
        CHECK_EQ_INT(symcache_lookup_many_ids(many, id, 2, &end, sc, &addr, 1), 1);
        symcache_name nm;
        symcache_names(&nm, sc, id, 1);
        const char *raw = nm.raw, *shown = nm.display;
        bool cxx = S[i].name[0] == '_';
        CHECK_EQ_STR(f[0].function, cxx ? "ns::run(int)" : S[i].name);
        CHECK_EQ_STR(f[0].mangled, S[i].name);
        CHECK_EQ_STR(raw, S[i].name);
        CHECK_EQ_STR(shown, f[0].function);
        CHECK((f[0].qualified == NULL) == (S[i].qualified == NULL));
        if (f[0].qualified != NULL && S[i].qualified != NULL)
            CHECK_EQ_STR(f[0].qualified, S[i].qualified);
    }
    symcache_close(sc);
    buf_reset(&out);
    debuginfo_reset(&di);
}

/* debuginfo_row_add leaves out line rows that cannot change a symcache: random line
 * programs (rows at one address, repeated lines, falling addresses, several sequences at
 * one address) must build the same bytes from every row as from the rows it kept. */
static void row_compaction_keeps_answers(void)
{
    macho_image img;
    memset(&img, 0, sizeof img);
    img.has_uuid = true;
    img.cputype = 0x0100000c; /* arm64 */
    img.has_text = true;
    img.text_vmaddr = 0x100000;
    img.text_vmsize = 0x10000;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int differ = 0, kept_fewer = 0;
    for (int trial = 0; trial < 400; trial++) {
        debuginfo all, kept;
        memset(&all, 0, sizeof all);
        memset(&kept, 0, sizeof kept);
        strtab_init(&all.strings);
        strtab_init(&kept.strings);
        const char *files[] = {"a.c", "b.c"};
        for (int k = 0; k < 2; k++) {
            strtab_intern(&all.strings, files[k], 3);
            strtab_intern(&kept.strings, files[k], 3);
        }
        size_t cap_all = 0, cap_kept = 0;
        uint64_t last = 0;
        int nseq = 1 + (int)(seed % 4);
        for (int q = 0; q < nseq; q++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t addr = img.text_vmaddr + ((seed >> 33) % 64) * 4;
            int nrows = 1 + (int)((seed >> 20) % 12);
            for (int r = 0; r <= nrows; r++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                unsigned pick = (unsigned)(seed >> 40);
                bool end = r == nrows;
                uint32_t file = pick & 1 ? 1 : 0, line = end ? DEBUGINFO_END_SEQUENCE : 1 + (pick >> 1) % 3;
                if (r > 0) {
                    static const int steps[] = {0, 4, 4, 8, 16, -4};
                    int step = steps[(pick >> 4) % 6];
                    addr = step < 0 && addr >= img.text_vmaddr + 4 ? addr - 4 : addr + (uint64_t)(step < 0 ? 0 : step);
                }
                if (all.nrows == cap_all) {
                    cap_all = cap_all ? cap_all * 2 : 64;
                    all.rows = realloc(all.rows, cap_all * sizeof *all.rows);
                }
                all.rows[all.nrows++] = (debuginfo_row){addr, end ? STRTAB_NONE : file, line};
                debuginfo_row_add(&kept.rows, &kept.nrows, &cap_kept, &last, addr, file, line);
            }
        }
        kept_fewer += kept.nrows < all.nrows;
        buf a, b;
        buf_init(&a);
        buf_init(&b);
        err_info err = {0};
        if (symcache_build(&a, NULL, &img, &all, "Rows", 1, &err) != ERR_OK ||
            symcache_build(&b, NULL, &img, &kept, "Rows", 1, &err) != ERR_OK || a.len != b.len ||
            memcmp(a.data, b.data, a.len) != 0)
            differ++;
        buf_reset(&a);
        buf_reset(&b);
        debuginfo_reset(&all);
        debuginfo_reset(&kept);
    }
    CHECK_EQ_INT(differ, 0);
    CHECK(kept_fewer > 100); /* the programs did give it rows to leave out */
}

/* Granules at their limits (symcache_format.h): x86 code is counted in 1-byte units, so a
 * granule covers 128 bytes and one-byte functions give it 128 records (the record search past
 * its first 64 starts), and an inline chain 12 deep keeps 13 local scopes with their call
 * sites. Every address must come back as built, from symcache_lookup and
 * symcache_lookup_many alike, whatever the thread count (the granules are coded in two halves). */
static void dense_granules_and_deep_chains(void)
{
    enum { TINY = 200, DEPTH = 12 };
    const uint64_t text = 0x100000, chain = text + 0x400;
    macho_image img;
    memset(&img, 0, sizeof img);
    img.has_uuid = true;
    memset(img.uuid, 0x3c, sizeof img.uuid);
    img.cputype = 0x01000007; /* x86_64 */
    img.cpusubtype = 3;
    img.has_text = true;
    img.text_vmaddr = text;
    img.text_vmsize = 0x1000;
    debuginfo di;
    memset(&di, 0, sizeof di);
    strtab_init(&di.strings);
    di.scopes = calloc(TINY + DEPTH + 1, sizeof *di.scopes);
    di.ranges = calloc(TINY + DEPTH + 1, sizeof *di.ranges);
    char name[32];
    uint32_t cfile = strtab_add(&di.strings, "c.c", 3);
    for (uint32_t i = 0; i < TINY; i++) { /* f<i> is the byte at text + 1 + i */
        snprintf(name, sizeof name, "f%u", i);
        uint64_t start = text + 1 + i;
        di.scopes[i] = (debuginfo_scope){strtab_add(&di.strings, name, strlen(name)), DEBUGINFO_NONE, STRTAB_NONE, 0,
                                         0, 0, start};
        di.ranges[i] = (debuginfo_range){start, start + 1, i, 0};
    }
    for (uint32_t d = 0; d <= DEPTH; d++) { /* g<d> inlined into g<d - 1>, 4 bytes in on each side */
        uint32_t i = TINY + d;
        snprintf(name, sizeof name, "g%u", d);
        di.scopes[i] = (debuginfo_scope){strtab_add(&di.strings, name, strlen(name)), d == 0 ? DEBUGINFO_NONE : i - 1,
                                         d == 0 ? STRTAB_NONE : cfile, d == 0 ? 0 : 100 + d, d, 0, chain + 4 * d};
        di.ranges[i] = (debuginfo_range){chain + 4 * d, chain + 0x80 - 4 * d, i, d};
    }
    di.nscopes = TINY + DEPTH + 1;
    di.nranges = TINY + DEPTH + 1;
    buf one, two;
    buf_init(&one);
    buf_init(&two);
    err_info err = {0};
    CHECK_EQ_INT(symcache_build(&one, NULL, &img, &di, "Dense", 1, &err), ERR_OK);
    CHECK_EQ_INT(symcache_build(&two, NULL, &img, &di, "Dense", 2, &err), ERR_OK);
    CHECK(one.len == two.len && memcmp(one.data, two.data, one.len) == 0);
    CHECK(one.len > 96 && one.data[84] == 0); /* 1-byte units */
    symcache *sc = NULL;
    CHECK_EQ_INT(symcache_open_bytes(&sc, one.data, one.len, &err), ERR_OK);
    int wrong = 0, checked = 0;
    enum { NADDR = 0x500 };
    static uint64_t addrs[NADDR];
    static symcache_frame many[NADDR * (DEPTH + 1)];
    static size_t ends[NADDR];
    for (uint32_t k = 0; sc != NULL && k < NADDR; k++) {
        uint64_t a = text + k;
        addrs[k] = a;
        symcache_frame f[SYMCACHE_MAX_FRAMES];
        size_t n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, a);
        if (a >= text + 1 && a < text + 1 + TINY) {
            snprintf(name, sizeof name, "f%u", (unsigned)(a - text - 1));
            wrong += n != 1 || strcmp(f[0].function, name) != 0 || f[0].sym_addr != a || f[0].inlined;
            checked++;
        } else if (a >= chain && a < chain + 0x80) {
            uint32_t depth = (uint32_t)((a - chain < chain + 0x80 - 1 - a ? a - chain : chain + 0x80 - 1 - a) / 4);
            if (depth > DEPTH)
                depth = DEPTH;
            wrong += n != depth + 1;
            for (size_t j = 0; j < n && n == depth + 1; j++) {
                uint32_t d = depth - (uint32_t)j;
                snprintf(name, sizeof name, "g%u", d);
                wrong += strcmp(f[j].function, name) != 0 || f[j].sym_addr != chain || f[j].inlined != (d > 0) ||
                         f[j].line != (j == 0 ? 0 : 100 + d + 1) ||
                         (j == 0 ? f[j].file != NULL : f[j].file == NULL || strcmp(f[j].file, "c.c") != 0);
            }
            checked++;
        } else {
            wrong += n != 0;
        }
    }
    CHECK_EQ_INT(checked, TINY + 0x80);
    CHECK_EQ_INT(wrong, 0);
    /* the batch gives the same frames */
    size_t got = sc != NULL ? symcache_lookup_many(many, sizeof many / sizeof many[0], ends, sc, addrs, NADDR) : 0;
    CHECK_EQ_INT(got, NADDR);
    int differ = 0;
    for (size_t k = 0; k < got; k++) {
        symcache_frame f[SYMCACHE_MAX_FRAMES];
        size_t n = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, addrs[k]), from = k ? ends[k - 1] : 0;
        differ += n != ends[k] - from;
        for (size_t j = 0; j < n && n == ends[k] - from; j++)
            differ += many[from + j].function != f[j].function || many[from + j].line != f[j].line ||
                      many[from + j].file != f[j].file || many[from + j].sym_addr != f[j].sym_addr;
    }
    CHECK_EQ_INT(differ, 0);
    symcache_close(sc);
    buf_reset(&one);
    buf_reset(&two);
    debuginfo_reset(&di);
}

/* DWARF shapes of older toolchains and of Apple's bitcode recompilation (the App Store dSYMs
 * of ../shared/real-dsyms/crashprobe-2017-release hold them all), written out by hand as
 * i386 assembly (a 32-bit x86 simulator slice) and assembled by clang-14 at test time:
 *   - a line-0 row and a real one at one address, both ways round: the last one counts;
 *   - rows with line 0 keep their file;
 *   - an inlinee whose abstract origin is a DW_TAG_subprogram with no attributes, with no
 *     DW_AT_call_line: still a frame ("??"), its caller at line 0;
 *   - an inlinee named only through DW_AT_abstract_origin (DW_FORM_ref_addr) to a
 *     DW_AT_specification in another unit;
 *   - a function and line rows outside their unit's DW_AT_low_pc/high_pc: not the unit's
 *     there, so the symbol table answers, with no file or line;
 *   - two symbols at one address (a local label, then a global): the last one names it.
 * Expected frames are what llvm-symbolizer-14 --inlines says for each address of the object. */
static const char SHAPES_S[] =
    "## DWARF shapes of older toolchains and Apple's bitcode recompilation, written out by hand\n"
    "## (i386, DWARF 4 units, a DWARF 2 line table).\n"
    "        .section __TEXT,__text,regular,pure_instructions\n"
    "        .globl _outer\n"
    "_outer:\n"
    "        nop                             ## 0x00 outer, line 10\n"
    "        nop\n"
    "        nop\n"
    "        nop\n"
    "        nop                             ## 0x04 an unnamed inlinee, called from line 0\n"
    "        nop\n"
    "        nop\n"
    "        nop\n"
    "        nop                             ## 0x08 init_thing inlined at line 11\n"
    "        nop\n"
    "        nop\n"
    "        nop\n"
    "        nop                             ## 0x0c outer, line 14\n"
    "        nop\n"
    "        nop\n"
    "        ret\n"
    "        .globl _stray\n"
    "_zlocal:\n"
    "_stray:\n"
    "        nop                             ## 0x10 outside its unit's ranges\n"
    "        nop\n"
    "        nop\n"
    "        nop\n"
    "        nop\n"
    "        nop\n"
    "        nop\n"
    "        ret\n"
    "Ltext_end:\n"
    "\n"
    "        .section __DWARF,__debug_abbrev,regular,debug\n"
    "Labbrev:\n"
    "        .byte 1, 0x11, 1                ## 1: compile_unit, children\n"
    "        .byte 0x03, 0x08                ##   name string\n"
    "        .byte 0x10, 0x17                ##   stmt_list sec_offset\n"
    "        .byte 0x1b, 0x08                ##   comp_dir string\n"
    "        .byte 0x11, 0x01                ##   low_pc addr\n"
    "        .byte 0x12, 0x06                ##   high_pc data4 (a size)\n"
    "        .byte 0, 0\n"
    "        .byte 2, 0x2e, 1                ## 2: subprogram, children\n"
    "        .byte 0x03, 0x08                ##   name\n"
    "        .byte 0x11, 0x01                ##   low_pc\n"
    "        .byte 0x12, 0x06                ##   high_pc (size)\n"
    "        .byte 0, 0\n"
    "        .byte 3, 0x1d, 0                ## 3: inlined_subroutine, no call_line\n"
    "        .byte 0x31, 0x13                ##   abstract_origin ref4\n"
    "        .byte 0x11, 0x01, 0x12, 0x06    ##   low_pc, high_pc\n"
    "        .byte 0x58, 0x0b                ##   call_file data1\n"
    "        .byte 0, 0\n"
    "        .byte 4, 0x1d, 0                ## 4: inlined_subroutine into another unit\n"
    "        .byte 0x31, 0x10                ##   abstract_origin ref_addr\n"
    "        .byte 0x11, 0x01, 0x12, 0x06\n"
    "        .byte 0x58, 0x0b, 0x59, 0x0b    ##   call_file, call_line data1\n"
    "        .byte 0, 0\n"
    "        .byte 5, 0x2e, 0                ## 5: a subprogram with no attributes at all\n"
    "        .byte 0, 0\n"
    "        .byte 6, 0x11, 1                ## 6: compile_unit without code\n"
    "        .byte 0x03, 0x08\n"
    "        .byte 0, 0\n"
    "        .byte 7, 0x2e, 0                ## 7: declaration\n"
    "        .byte 0x03, 0x08, 0x3c, 0x19    ##   name, declaration flag_present\n"
    "        .byte 0, 0\n"
    "        .byte 8, 0x2e, 0                ## 8: abstract definition of a declaration\n"
    "        .byte 0x47, 0x13                ##   specification ref4\n"
    "        .byte 0x20, 0x0b                ##   inline data1\n"
    "        .byte 0, 0\n"
    "        .byte 0\n"
    "\n"
    "        .section __DWARF,__debug_info,regular,debug\n"
    "Linfo:\n"
    "Lcu_a:\n"
    "        .long Lcu_a_end - Lcu_a - 4\n"
    "        .short 4\n"
    "        .long 0                         ## abbrev offset\n"
    "        .byte 4\n"
    "        .byte 1                         ## compile_unit \"shapes.c\" [0x00, 0x10)\n"
    "        .asciz \"shapes.c\"\n"
    "        .long 0\n"
    "        .asciz \"/src\"\n"
    "        .long _outer\n"
    "        .long 0x10\n"
    "Lbare = . - Lcu_a\n"
    "        .byte 5                         ##   the bare subprogram\n"
    "        .byte 2                         ##   outer\n"
    "        .asciz \"outer\"\n"
    "        .long _outer\n"
    "        .long 0x10\n"
    "        .byte 3                         ##     unnamed, no call line\n"
    "        .long Lbare\n"
    "        .long _outer + 4\n"
    "        .long 4\n"
    "        .byte 1\n"
    "        .byte 4                         ##     init_thing, through the other unit\n"
    "        .long Labstract - Linfo\n"
    "        .long _outer + 8\n"
    "        .long 4\n"
    "        .byte 1, 11\n"
    "        .byte 0\n"
    "        .byte 2                         ##   stray: code outside the unit's ranges\n"
    "        .asciz \"stray\"\n"
    "        .long _stray\n"
    "        .long 8\n"
    "        .byte 0\n"
    "        .byte 0\n"
    "Lcu_a_end:\n"
    "Lcu_b:\n"
    "        .long Lcu_b_end - Lcu_b - 4\n"
    "        .short 4\n"
    "        .long 0\n"
    "        .byte 4\n"
    "        .byte 6\n"
    "        .asciz \"other.c\"\n"
    "Ldecl = . - Lcu_b\n"
    "        .byte 7\n"
    "        .asciz \"init_thing\"\n"
    "Labstract:\n"
    "        .byte 8\n"
    "        .long Ldecl\n"
    "        .byte 1\n"
    "        .byte 0\n"
    "Lcu_b_end:\n"
    "\n"
    "        .section __DWARF,__debug_line,regular,debug\n"
    "Lline:\n"
    "        .long Lline_end - Lline - 4\n"
    "        .short 2\n"
    "        .long Lline_prog - Lline_hdr\n"
    "Lline_hdr:\n"
    "        .byte 1, 1, -5, 14, 13\n"
    "        .byte 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1\n"
    "        .asciz \"/src\"\n"
    "        .byte 0\n"
    "        .asciz \"shapes.c\"\n"
    "        .byte 1, 0, 0\n"
    "        .byte 0\n"
    "Lline_prog:\n"
    "        .byte 0, 5, 2\n"
    "        .long _outer\n"
    "        .byte 3, 9, 1                   ## 0x00 line 10\n"
    "        .byte 2, 4, 3, 0x76, 1          ## 0x04 line 0\n"
    "        .byte 3, 12, 1                  ##      line 12, same address\n"
    "        .byte 2, 4, 3, 1, 1             ## 0x08 line 13\n"
    "        .byte 3, 0x73, 1                ##      line 0, same address\n"
    "        .byte 2, 4, 3, 14, 1            ## 0x0c line 14\n"
    "        .byte 2, 4, 3, 6, 1             ## 0x10 line 20 (outside the unit)\n"
    "        .byte 2, 8, 0, 1, 1             ## 0x18 end\n"
    "Lline_end:\n";

typedef struct {
    const char *function, *file;
    uint32_t line;
    bool inlined;
} want_frame;

typedef struct {
    uint64_t addr;
    size_t n;
    want_frame f[2];
} want_lookup;

/* Assemble `asm_text` for i386 with clang-14 into tmp_root/<name>.o, build its symcache
 * (debuginfo_load + symcache_build; an object file has no LC_UUID, so one is made up) and
 * check every lookup of want[0..nwant). */
static void object_looks_up_as(const char *name, const char *asm_text, const want_lookup *want, size_t nwant)
{
    char src[512], obj[512], cmd[1200];
    snprintf(src, sizeof src, "%s/%s.s", tmp_root, name);
    snprintf(obj, sizeof obj, "%s/%s.o", tmp_root, name);
    FILE *f = fopen(src, "w");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    fputs(asm_text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "clang-14 -target i386-apple-ios9.0-simulator -c '%s' -o '%s'", src, obj);
    CHECK_EQ_INT(system(cmd), 0);
    bytes b;
    err_info err = {0};
    CHECK_EQ_INT(bytes_map_file(&b, obj, &err), ERR_OK);
    if (b.data == NULL)
        return;
    macho_image *img = malloc(sizeof *img);
    CHECK_EQ_INT(macho_parse(img, b.data, b.len, &err), ERR_OK);
    CHECK_EQ_STR(macho_arch_name(img->cputype, img->cpusubtype), "i386");
    img->has_uuid = true;
    memset(img->uuid, 0x5a, sizeof img->uuid);
    debuginfo di;
    CHECK_EQ_INT(debuginfo_load(&di, img, 2, &err), ERR_OK);
    CHECK_EQ_INT(debuginfo_warnings_count(&di.warnings), 0);
    buf out;
    buf_init(&out);
    CHECK_EQ_INT(symcache_build(&out, NULL, img, &di, name, 1, &err), ERR_OK);
    symcache *sc = NULL;
    CHECK_EQ_INT(symcache_open_bytes(&sc, out.data, out.len, &err), ERR_OK);
    for (size_t i = 0; sc != NULL && i < nwant; i++) {
        symcache_frame fr[8];
        size_t n = symcache_lookup(fr, 8, sc, want[i].addr);
        CHECK_EQ_INT(n, want[i].n);
        for (size_t k = 0; k < n && k < want[i].n; k++) {
            const want_frame *w = &want[i].f[k];
            if (strcmp(fr[k].function, w->function) != 0 || fr[k].line != w->line || fr[k].inlined != w->inlined ||
                (w->file == NULL) != (fr[k].file == NULL) || (w->file != NULL && strcmp(fr[k].file, w->file) != 0))
                fprintf(stderr, "%s 0x%llx frame %zu: got %s %s:%u%s\n", name, (unsigned long long)want[i].addr, k,
                        fr[k].function, fr[k].file ? fr[k].file : "(null)", fr[k].line, fr[k].inlined ? " inlined" : "");
            CHECK_EQ_STR(fr[k].function, w->function);
            CHECK_EQ_INT(fr[k].line, w->line);
            CHECK(fr[k].inlined == w->inlined);
            CHECK((w->file == NULL) == (fr[k].file == NULL));
            if (w->file != NULL && fr[k].file != NULL)
                CHECK_EQ_STR(fr[k].file, w->file);
        }
    }
    symcache_close(sc);
    buf_reset(&out);
    debuginfo_reset(&di);
    free(img);
    bytes_unmap(&b);
}

static void old_toolchain_shapes(void)
{
    static const want_lookup want[] = {
        {0x0, 1, {{"outer", "/src/shapes.c", 10, false}}},
        {0x2, 1, {{"outer", "/src/shapes.c", 10, false}}},
        {0x4, 2, {{"??", "/src/shapes.c", 12, true}, {"outer", "/src/shapes.c", 0, false}}},
        {0x7, 2, {{"??", "/src/shapes.c", 12, true}, {"outer", "/src/shapes.c", 0, false}}},
        {0x8, 2, {{"init_thing", "/src/shapes.c", 0, true}, {"outer", "/src/shapes.c", 11, false}}},
        {0xb, 2, {{"init_thing", "/src/shapes.c", 0, true}, {"outer", "/src/shapes.c", 11, false}}},
        {0xc, 1, {{"outer", "/src/shapes.c", 14, false}}},
        {0xf, 1, {{"outer", "/src/shapes.c", 14, false}}},
        {0x10, 1, {{"stray", NULL, 0, false}}},
        {0x17, 1, {{"stray", NULL, 0, false}}},
    };
    object_looks_up_as("shapes", SHAPES_S, want, sizeof want / sizeof want[0]);
}

/* Two units claim the same code: a.c (the lower .debug_info offset) [0x08, 0x10), b.c
 * [0x00, 0x18), both with a function and a line row over all 0x18 bytes. llvm-symbolizer-14
 * answers b.c:20 everywhere: where the units overlap, a part continues the unit of the part
 * before it while that unit still covers it (llvm's DWARFDebugAranges::construct), so a.c owns
 * nothing. */
static const char OVERLAP_S[] =
    "        .section __TEXT,__text,regular,pure_instructions\n"
    "        .globl _f\n"
    "_f:\n"
    "        .fill 0x18, 1, 0x90\n"
    "        .section __DWARF,__debug_abbrev,regular,debug\n"
    "        .byte 1, 0x11, 1, 0x03, 0x08, 0x10, 0x17, 0x11, 0x01, 0x12, 0x06, 0, 0\n"
    "        .byte 2, 0x2e, 0, 0x03, 0x08, 0x11, 0x01, 0x12, 0x06, 0, 0\n"
    "        .byte 0\n"
    "        .section __DWARF,__debug_info,regular,debug\n"
    "Lcu_a:\n"
    "        .long Lcu_a_end - Lcu_a - 4\n"
    "        .short 4\n"
    "        .long 0\n"
    "        .byte 4\n"
    "        .byte 1\n"
    "        .asciz \"a.c\"\n"
    "        .long 0\n"
    "        .long _f + 8\n"
    "        .long 8\n"
    "        .byte 2\n"
    "        .asciz \"in_a\"\n"
    "        .long _f\n"
    "        .long 0x18\n"
    "        .byte 0\n"
    "Lcu_a_end:\n"
    "Lcu_b:\n"
    "        .long Lcu_b_end - Lcu_b - 4\n"
    "        .short 4\n"
    "        .long 0\n"
    "        .byte 4\n"
    "        .byte 1\n"
    "        .asciz \"b.c\"\n"
    "        .long Lline_b - Lline_a\n"
    "        .long _f\n"
    "        .long 0x18\n"
    "        .byte 2\n"
    "        .asciz \"in_b\"\n"
    "        .long _f\n"
    "        .long 0x18\n"
    "        .byte 0\n"
    "Lcu_b_end:\n"
    "        .section __DWARF,__debug_line,regular,debug\n"
    "Lline_a:\n"
    "        .long Lline_a_end - Lline_a - 4\n"
    "        .short 2\n"
    "        .long Lpa - Lha\n"
    "Lha:\n"
    "        .byte 1, 1, -5, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1\n"
    "        .byte 0\n"
    "        .asciz \"a.c\"\n"
    "        .byte 0, 0, 0, 0\n"
    "Lpa:\n"
    "        .byte 0, 5, 2\n"
    "        .long _f\n"
    "        .byte 3, 9, 1, 2, 0x18, 0, 1, 1\n"
    "Lline_a_end:\n"
    "Lline_b:\n"
    "        .long Lline_b_end - Lline_b - 4\n"
    "        .short 2\n"
    "        .long Lpb - Lhb\n"
    "Lhb:\n"
    "        .byte 1, 1, -5, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1\n"
    "        .byte 0\n"
    "        .asciz \"b.c\"\n"
    "        .byte 0, 0, 0, 0\n"
    "Lpb:\n"
    "        .byte 0, 5, 2\n"
    "        .long _f\n"
    "        .byte 3, 19, 1, 2, 0x18, 0, 1, 1\n"
    "Lline_b_end:\n";

static void overlapping_units(void)
{
    static const want_lookup want[] = {
        {0x0, 1, {{"f", "b.c", 20, false}}},  {0x7, 1, {{"f", "b.c", 20, false}}},
        {0x8, 1, {{"f", "b.c", 20, false}}},  {0xf, 1, {{"f", "b.c", 20, false}}},
        {0x10, 1, {{"f", "b.c", 20, false}}}, {0x17, 1, {{"f", "b.c", 20, false}}},
    };
    object_looks_up_as("overlap", OVERLAP_S, want, sizeof want / sizeof want[0]);
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/stacksift-test-symcache.XXXXXX");
    if (mkdtemp(tmp_root) == NULL)
        return 1;
    RUN(main_symbolicates_at_O0);
    RUN(inline_chains_at_O2);
    RUN(lookup_many_matches_lookup);
    RUN(lookup_many_ids_and_names);
    RUN(display_names_section);
    RUN(output_does_not_depend_on_threads);
    RUN(fat_zip_and_symtab_only_inputs);
    RUN(bad_inputs_are_errors);
    RUN(corrupt_symcaches_are_rejected);
    RUN(unwind_sections_from_executables);
    RUN(unwind_sections_versions_and_corruption);
    RUN(concurrent_lookups_agree);
    RUN(names_sort_and_fold);
    RUN(qualified_names_stored_beside_display);
    RUN(row_compaction_keeps_answers);
    RUN(dense_granules_and_deep_chains);
    RUN(old_toolchain_shapes);
    RUN(overlapping_units);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_root);
    return harness_done();
}
