/*
 * symcache_roundtrip MACHO [ADDRS] - every (address -> frames) answer of the current symcache
 * format equals the version-1 format's (tests/symcache_v1/, the frozen old builder and reader).
 *
 * For each slice of MACHO (a dSYM's DWARF file or any Mach-O, thin or fat), builds both
 * formats from the same debuginfo in memory and compares symcache_lookup's frames (function,
 * file, line, inlined, from_symtab, sym_addr) at: the file addresses listed in ADDRS (hex, one
 * per line; the benchmark's sample), else every byte of __TEXT (at most 4 M addresses, evenly
 * spread beyond that) plus a margin either side; then that symcache_lookup_many over the same
 * addresses gives exactly symcache_lookup's frames. Prints one line per slice with the counts
 * and the two sizes; exits 1 on the first slice with a difference (printing up to 5), 2 on a
 * usage or input error.
 *
 * Since format 3 the symcache stores raw linkage names and demangles at lookup, while the
 * version-1 builder stored what debuginfo gave it then: names demangled while reading. The v1
 * side is built from a copy of the debuginfo whose function names are demangled up front
 * (display_copy), so display names are compared as before; each new frame's raw name must
 * also demangle to its display name, or be it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/bytes.h"
#include "debuginfo/debuginfo.h"
#include "demangle/demangle.h"
#include "macho/macho.h"
#include "symcache/symcache.h"
#include "symcache/symcache_build.h"
#include "symcache_v1/symcache_v1.h"

static bool same_str(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void print_frames(const char *label, const symcache_frame *f, size_t n, bool raw)
{
    fprintf(stderr, "  %s: %zu frames\n", label, n);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "    %s [%s] %s:%u%s%s sym 0x%llx\n", f[i].function, raw && f[i].mangled ? f[i].mangled : "-",
                f[i].file ? f[i].file : "(null)",
                f[i].line, f[i].inlined ? " inlined" : "", f[i].from_symtab ? " symtab" : "",
                (unsigned long long)f[i].sym_addr);
}

static bool same_frames(const symcache_frame *a, size_t na, const symcache_frame *b, size_t nb)
{
    bool same = na == nb;
    for (size_t i = 0; same && i < na; i++)
        same = same_str(a[i].function, b[i].function) && same_str(a[i].file, b[i].file) &&
               a[i].line == b[i].line && a[i].inlined == b[i].inlined &&
               a[i].from_symtab == b[i].from_symtab && a[i].sym_addr == b[i].sym_addr;
    return same;
}

/* *dv = `di` with every function name in its display form, as debuginfo gave names before
 * format 3; the ids of all other strings are kept. Free with display_copy_free. */
static void display_copy(debuginfo *dv, const debuginfo *di)
{
    *dv = *di; /* borrows every array but the two replaced here */
    strtab_init(&dv->strings);
    strtab_append(&dv->strings, &di->strings);
    dv->scopes = malloc((di->nscopes ? di->nscopes : 1) * sizeof *dv->scopes);
    if (dv->scopes == NULL)
        abort();
    for (uint32_t i = 0; i < di->nscopes; i++) {
        dv->scopes[i] = di->scopes[i];
        if (di->scopes[i].name == STRTAB_NONE)
            continue;
        char *shown = demangle_name(strtab_get(&di->strings, di->scopes[i].name), DEMANGLE_SIMPLIFIED);
        if (shown != NULL)
            dv->scopes[i].name = strtab_add(&dv->strings, shown, strlen(shown));
        free(shown);
    }
}

static void display_copy_free(debuginfo *dv)
{
    strtab_reset(&dv->strings);
    free(dv->scopes);
}

/* A frame's raw name reads as its display name: demangled, or unchanged. */
static bool raw_matches(const symcache_frame *f)
{
    if (f->mangled == NULL)
        return strcmp(f->function, "??") == 0;
    char *shown = demangle_name(f->mangled, DEMANGLE_SIMPLIFIED);
    bool ok = strcmp(shown ? shown : f->mangled, f->function) == 0;
    free(shown);
    return ok;
}

/* Compare both answers at addr; true when equal. */
static bool compare_at(const symcache *sc, const symcache_v1 *old, uint64_t addr, int *reported)
{
    symcache_frame a[SYMCACHE_MAX_FRAMES], b[SYMCACHE_MAX_FRAMES];
    size_t na = symcache_lookup(a, SYMCACHE_MAX_FRAMES, sc, addr);
    size_t nb = symcache_v1_lookup(b, SYMCACHE_MAX_FRAMES, old, addr);
    bool same = same_frames(a, na, b, nb);
    for (size_t i = 0; same && i < na; i++)
        same = raw_matches(&a[i]);
    if (!same && (*reported)++ < 5) {
        fprintf(stderr, "symcache_roundtrip: 0x%llx differs\n", (unsigned long long)addr);
        print_frames("new", a, na, true);
        print_frames("v1", b, nb, false); /* v1 has no raw names */
    }
    return same;
}

/* symcache_lookup_many over all of `addrs` equals one symcache_lookup per address. Small,
 * odd-sized calls (MANY_ADDRS addresses into MANY_FRAMES frames) so that windows end part-way
 * and calls stop early for room; returns the addresses that differ. */
#define MANY_ADDRS 45
#define MANY_FRAMES 71

static uint64_t check_many(const symcache *sc, const uint64_t *addrs, size_t n, int *reported)
{
    symcache_frame many[MANY_FRAMES], one[SYMCACHE_MAX_FRAMES];
    size_t ends[MANY_ADDRS];
    uint64_t differ = 0;
    for (size_t i = 0; i < n;) {
        size_t m = n - i < MANY_ADDRS ? n - i : MANY_ADDRS;
        size_t got = symcache_lookup_many(many, MANY_FRAMES, ends, sc, addrs + i, m);
        if (got == 0) { /* room for fewer frames than one address has: a bug (71 > any chain here) */
            fprintf(stderr, "symcache_roundtrip: lookup_many answered nothing at 0x%llx\n", (unsigned long long)addrs[i]);
            return differ + 1;
        }
        for (size_t k = 0; k < got; k++) {
            size_t from = k ? ends[k - 1] : 0;
            size_t no = symcache_lookup(one, SYMCACHE_MAX_FRAMES, sc, addrs[i + k]);
            bool same = same_frames(many + from, ends[k] - from, one, no);
            for (size_t f = 0; same && f < no; f++)
                same = same_str(many[from + f].mangled, one[f].mangled);
            if (!same) {
                differ++;
                if ((*reported)++ < 5) {
                    fprintf(stderr, "symcache_roundtrip: lookup_many differs at 0x%llx\n",
                            (unsigned long long)addrs[i + k]);
                    print_frames("lookup_many", many + from, ends[k] - from, true);
                    print_frames("lookup", one, no, true);
                }
            }
        }
        i += got;
    }
    return differ;
}

/* The reader hands the builder its scope ranges sorted, and the .symc bytes do not depend on
 * how many threads read the DWARF or built the file: 1, 3 and 4 threads against `want`
 * (built with 2). Returns the number of disagreements. */
static int check_thread_counts(const macho_image *img, const char *name, const buf *want)
{
    static const unsigned counts[] = {1, 3, 4};
    int bad = 0;
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        debuginfo d = {0};
        buf b;
        buf_init(&b);
        err_info err = {0};
        if (debuginfo_load(&d, img, counts[k], &err) != ERR_OK ||
            symcache_build(&b, NULL, img, &d, name, counts[k], &err) != ERR_OK) {
            fprintf(stderr, "symcache_roundtrip: %s with %u threads: %s\n", name, counts[k], err.msg);
            bad++;
        } else {
            for (size_t i = 1; i < d.nranges; i++)
                if (debuginfo_range_order(&d.ranges[i - 1], &d.ranges[i]) > 0) {
                    fprintf(stderr, "symcache_roundtrip: %s with %u threads: ranges out of order at %zu\n", name,
                            counts[k], i);
                    bad++;
                    break;
                }
            if (b.len != want->len || memcmp(b.data, want->data, b.len) != 0) {
                fprintf(stderr, "symcache_roundtrip: %s: %u threads built other bytes than 2 (%zu vs %zu)\n", name,
                        counts[k], b.len, want->len);
                bad++;
            }
        }
        buf_reset(&b);
        debuginfo_reset(&d);
    }
    return bad;
}

static int check_slice(const uint8_t *data, size_t len, const char *name, FILE *addrs)
{
    macho_image *img = calloc(1, sizeof *img);
    debuginfo di = {0}, dv = {0};
    bool have_dv = false;
    buf now, v1;
    buf_init(&now);
    buf_init(&v1);
    symcache *sc = NULL;
    symcache_v1 *old = NULL;
    err_info err = {0};
    int status = 2;
    if (img == NULL || macho_parse(img, data, len, &err) != ERR_OK || debuginfo_load(&di, img, 2, &err) != ERR_OK ||
        symcache_build(&now, NULL, img, &di, name, 2, &err) != ERR_OK ||
        (display_copy(&dv, &di), have_dv = true, symcache_v1_build(&v1, NULL, img, &dv, name, 2, &err) != ERR_OK) ||
        symcache_open_bytes(&sc, (const uint8_t *)now.data, now.len, &err) != ERR_OK ||
        symcache_v1_open_bytes(&old, (const uint8_t *)v1.data, v1.len, &err) != ERR_OK) {
        fprintf(stderr, "symcache_roundtrip: %s: %s\n", name, err.msg);
        goto done;
    }
    uint64_t checked = 0, covered = 0, differ = 0;
    int reported = 0;
    /* the fixtures (not the benchmark's big dSYM: three more builds of it) */
    int thread_differ = addrs == NULL ? check_thread_counts(img, name, &now) : 0;
    buf seen; /* every address checked, for check_many */
    buf_init(&seen);
    symcache_frame f[1];
    if (addrs != NULL) {
        char line[128];
        rewind(addrs);
        while (fgets(line, sizeof line, addrs) != NULL) {
            char *end;
            uint64_t a = strtoull(line, &end, 16);
            if (end == line)
                continue;
            checked++;
            buf_append(&seen, &a, sizeof a);
            covered += symcache_lookup(f, 1, sc, a) > 0;
            differ += !compare_at(sc, old, a, &reported);
        }
    } else {
        uint64_t lo = img->text_vmaddr, size = img->text_vmsize;
        uint64_t step = size / (4u << 20) + 1, margin = 64;
        for (uint64_t a = lo >= margin ? lo - margin : 0; a < lo + size + margin; a += a < lo || a >= lo + size ? 1 : step) {
            checked++;
            buf_append(&seen, &a, sizeof a);
            covered += symcache_lookup(f, 1, sc, a) > 0;
            differ += !compare_at(sc, old, a, &reported);
        }
    }
    uint64_t many_differ = check_many(sc, (const uint64_t *)(const void *)seen.data, seen.len / sizeof(uint64_t), &reported);
    buf_reset(&seen);
    differ += many_differ;
    printf("symcache_roundtrip: %s %s: %llu addresses (%llu covered), %llu differ (%llu in lookup_many); .symc %zu bytes, v1 %zu "
           "bytes (%.1f%%)\n",
           name, macho_arch_name(img->cputype, img->cpusubtype), (unsigned long long)checked,
           (unsigned long long)covered, (unsigned long long)differ, (unsigned long long)many_differ, now.len, v1.len,
           v1.len ? 100.0 * (double)now.len / (double)v1.len : 0.0);
    status = differ == 0 && covered > 0 && thread_differ == 0 ? 0 : 1;
    if (covered == 0)
        fprintf(stderr, "symcache_roundtrip: %s: no address was covered: nothing compared\n", name);
done:
    symcache_close(sc);
    symcache_v1_close(old);
    buf_reset(&now);
    buf_reset(&v1);
    if (have_dv)
        display_copy_free(&dv);
    debuginfo_reset(&di);
    free(img);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: symcache_roundtrip MACHO [ADDRS]\n");
        return 2;
    }
    FILE *addrs = NULL;
    if (argc == 3 && (addrs = fopen(argv[2], "r")) == NULL) {
        fprintf(stderr, "symcache_roundtrip: cannot open %s\n", argv[2]);
        return 2;
    }
    bytes b;
    err_info err = {0};
    if (bytes_map_file(&b, argv[1], &err) != ERR_OK) {
        fprintf(stderr, "symcache_roundtrip: %s\n", err.msg);
        return 2;
    }
    macho_slice slices[MACHO_MAX_SLICES];
    size_t n = 0;
    int status = 0;
    if (macho_slices(slices, &n, b.data, b.len, &err) != ERR_OK) {
        fprintf(stderr, "symcache_roundtrip: %s: %s\n", argv[1], err.msg);
        status = 2;
    }
    const char *name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    for (size_t i = 0; i < n && status == 0; i++)
        status = check_slice(b.data + slices[i].offset, (size_t)slices[i].size, name, addrs);
    bytes_unmap(&b);
    if (addrs != NULL)
        fclose(addrs);
    return status;
}
