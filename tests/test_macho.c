/*
 * Tests for common/macho: real fixture files (thin, fat, dylib), and hostile input: every
 * truncation, bit flips, absurd counts and offsets. Under ASan an out-of-bounds read fails
 * the run even where the parse result is not checked.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/bytes.h"
#include "harness.h"
#include "macho/macho.h"

static const char *fixtures_dir(void)
{
    const char *d = getenv("STACKSIFT_FIXTURES");
    return d && *d ? d : "build-fixtures";
}

static json_t *load_manifest(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", fixtures_dir());
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    if (m == NULL)
        fprintf(stderr, "cannot read %s: %s (run tests/fixtures/build.sh)\n", path, jerr.text);
    return m;
}

/* ---- a small synthetic image ------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* mach_header_64 + LC_SEGMENT_64 __TEXT with one __text section + LC_UUID + LC_SYMTAB with
 * two symbols; returns the size. */
static size_t make_image(uint8_t *b, size_t cap)
{
    memset(b, 0, cap);
    put32(b, 0xfeedfacf);
    put32(b + 4, MACHO_CPU_TYPE_ARM64);
    put32(b + 8, 0);
    put32(b + 12, 2); /* MH_EXECUTE */
    size_t seg = 72 + 80, uuid = 24, symtab = 24;
    put32(b + 16, 3);
    put32(b + 20, (uint32_t)(seg + uuid + symtab));
    uint8_t *c = b + 32;
    put32(c, 0x19);
    put32(c + 4, (uint32_t)seg);
    memcpy(c + 8, "__TEXT", 6);
    put64(c + 24, 0x100000000ull);
    put64(c + 32, 0x4000);
    put32(c + 64, 1);
    uint8_t *s = c + 72;
    memcpy(s, "__text", 6);
    memcpy(s + 16, "__TEXT", 6);
    put64(s + 32, 0x100000400ull);
    put64(s + 40, 0x20);
    put32(s + 48, 0x400);
    put32(s + 64, 0x80000400);
    c += seg;
    put32(c, 0x1b);
    put32(c + 4, 24);
    for (int i = 0; i < 16; i++)
        c[8 + i] = (uint8_t)(0xA0 + i);
    c += uuid;
    put32(c, 0x2);
    put32(c + 4, 24);
    put32(c + 8, 0x500);  /* symoff */
    put32(c + 12, 2);     /* nsyms */
    put32(c + 16, 0x520); /* stroff */
    put32(c + 20, 16);    /* strsize */
    uint8_t *sym = b + 0x500;
    put32(sym, 1);
    sym[4] = 0x0f, sym[5] = 1;
    put64(sym + 8, 0x100000400ull);
    put32(sym + 16, 7);
    sym[20] = 0x0f, sym[21] = 1;
    put64(sym + 24, 0x100000410ull);
    memcpy(b + 0x520, "\0_main\0_helper\0", 15);
    return 0x530;
}

static void synthetic_image_parses(void)
{
    uint8_t b[0x600];
    size_t n = make_image(b, sizeof b);
    macho_image *img = malloc(sizeof *img);
    err_info err = {0};
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_OK);
    CHECK(img->has_uuid && img->uuid[0] == 0xA0 && img->uuid[15] == 0xAF);
    CHECK(img->has_text);
    CHECK_EQ_U64(img->text_vmaddr, 0x100000000ull);
    CHECK_EQ_INT(img->nsections, 1);
    CHECK(macho_section_find(img, "__TEXT", "__text") != NULL);
    CHECK_EQ_INT(img->nsyms, 2);
    macho_symbol sym;
    CHECK(macho_symbol_get(&sym, img, 1));
    CHECK_EQ_STR(sym.name, "_helper");
    CHECK_EQ_U64(sym.value, 0x100000410ull);
    CHECK(!macho_symbol_get(&sym, img, 2));
    free(img);
}

static void every_truncation_is_an_error(void)
{
    uint8_t b[0x600];
    size_t n = make_image(b, sizeof b);
    macho_image *img = malloc(sizeof *img);
    for (size_t len = 0; len < n; len++) {
        uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees any overread */
        memcpy(copy, b, len);
        err_info err = {0};
        err_code rc = macho_parse(img, copy, len, &err);
        /* the symbol and string tables end the file: any cut before is an error */
        if (rc == ERR_OK)
            fprintf(stderr, "truncated to %zu parsed\n", len);
        CHECK(rc != ERR_OK);
        CHECK(rc == ERR_OK || err.msg[0] != '\0');
        macho_slice slices[MACHO_MAX_SLICES];
        size_t ns;
        (void)macho_slices(slices, &ns, copy, len, &err); /* must not read past len */
        free(copy);
    }
    free(img);
}

static void bit_flips_never_read_out_of_bounds(void)
{
    uint8_t b[0x600];
    size_t n = make_image(b, sizeof b);
    macho_image *img = malloc(sizeof *img);
    int ok = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            uint8_t *copy = malloc(n);
            memcpy(copy, b, n);
            copy[i] ^= (uint8_t)(1u << bit);
            err_info err = {0};
            if (macho_parse(img, copy, n, &err) == ERR_OK) {
                ok++;
                for (size_t s = 0; s < img->nsections; s++)
                    if (img->sections[s].data != NULL)
                        CHECK(img->sections[s].data >= copy &&
                              img->sections[s].data + img->sections[s].size <= copy + n);
                macho_symbol sym;
                for (uint32_t k = 0; k < img->nsyms; k++)
                    if (macho_symbol_get(&sym, img, k))
                        CHECK(sym.name >= (const char *)copy && sym.name < (const char *)copy + n);
            } else {
                failed++;
                CHECK(err.msg[0] != '\0');
            }
            free(copy);
        }
    }
    CHECK(ok > 0 && failed > 0); /* both outcomes happen: the flips hit fields that matter */
    free(img);
}

static void absurd_counts_are_rejected(void)
{
    uint8_t b[0x600];
    size_t n = make_image(b, sizeof b);
    macho_image *img = malloc(sizeof *img);
    err_info err = {0};

    put32(b + 16, 0xffffffff); /* ncmds */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "load commands") != NULL);
    make_image(b, sizeof b);
    put32(b + 20, 0x7fffffff); /* sizeofcmds */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    make_image(b, sizeof b);
    put32(b + 32 + 64, 1000000); /* nsects */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "sections") != NULL);
    make_image(b, sizeof b);
    put32(b + 32 + 72 + 48, 0xfffffff0); /* section offset */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    make_image(b, sizeof b);
    put32(b + 32 + 152 + 24 + 12, 0x10000000); /* nsyms */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "symbol table") != NULL);
    make_image(b, sizeof b);
    put32(b + 32 + 152 + 24 + 20, 0xffffffff); /* strsize */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    make_image(b, sizeof b);
    put32(b + 32 + 4, 3); /* cmdsize smaller than a load command */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    make_image(b, sizeof b);
    put32(b, 0xcffaedfe); /* byte-swapped */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_UNSUPPORTED);
    put32(b, 0x464c457f); /* ELF */
    CHECK_EQ_INT(macho_parse(img, b, n, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "magic") != NULL);
    free(img);
}

static void fat_headers_are_checked(void)
{
    uint8_t b[0x100] = {0};
    macho_slice s[MACHO_MAX_SLICES];
    size_t n;
    err_info err = {0};
    /* FAT_MAGIC, 2 slices, big-endian; the second points past the end */
    uint8_t hdr[48] = {0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2,
                       0x01, 0, 0, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0x40, 0, 0, 0, 0,
                       0x01, 0, 0, 0x07, 0, 0, 0, 3, 0, 0, 0, 0x80, 0, 0, 0x10, 0x00, 0, 0, 0, 0};
    memcpy(b, hdr, sizeof hdr);
    CHECK_EQ_INT(macho_slices(s, &n, b, sizeof b, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "slice 1") != NULL);
    b[43] = 0x40, b[42] = 0; /* size 0x40: fits */
    CHECK_EQ_INT(macho_slices(s, &n, b, sizeof b, &err), ERR_OK);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_STR(macho_arch_name(s[0].cputype, s[0].cpusubtype), "arm64");
    CHECK_EQ_STR(macho_arch_name(s[1].cputype, s[1].cpusubtype), "x86_64");
    b[7] = 200; /* a Java class file also starts with 0xcafebabe */
    CHECK_EQ_INT(macho_slices(s, &n, b, sizeof b, &err), ERR_INVALID);
    b[7] = 2;
    b[35] = 0; /* second slice arm64 too: duplicate */
    b[31] = 0x0c;
    CHECK_EQ_INT(macho_slices(s, &n, b, sizeof b, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "two") != NULL);
}

/* A 32-bit armv7 image: mach_header, LC_SEGMENT __TEXT with one section, LC_UUID, LC_SYMTAB
 * with 12-byte nlist entries. */
static void thirty_two_bit_images_parse(void)
{
    uint8_t b[0x400];
    memset(b, 0, sizeof b);
    put32(b, 0xfeedface);
    put32(b + 4, MACHO_CPU_TYPE_ARM);
    put32(b + 8, 9); /* CPU_SUBTYPE_ARM_V7 */
    put32(b + 12, 2);
    size_t seg = 56 + 68;
    put32(b + 16, 3);
    put32(b + 20, (uint32_t)(seg + 24 + 24));
    uint8_t *c = b + 28;
    put32(c, 0x1);
    put32(c + 4, (uint32_t)seg);
    memcpy(c + 8, "__TEXT", 6);
    put32(c + 24, 0x4000); /* vmaddr */
    put32(c + 28, 0x1000); /* vmsize */
    put32(c + 48, 1);      /* nsects */
    uint8_t *sec = c + 56;
    memcpy(sec, "__text", 6);
    memcpy(sec + 16, "__TEXT", 6);
    put32(sec + 32, 0x4100); /* addr */
    put32(sec + 36, 0x40);   /* size */
    put32(sec + 40, 0x200);  /* offset */
    put32(sec + 56, 0x80000400);
    c += seg;
    put32(c, 0x1b);
    put32(c + 4, 24);
    memset(c + 8, 0x11, 16);
    c += 24;
    put32(c, 0x2);
    put32(c + 4, 24);
    put32(c + 8, 0x300); /* symoff */
    put32(c + 12, 1);
    put32(c + 16, 0x310); /* stroff */
    put32(c + 20, 8);
    put32(b + 0x300, 1);
    b[0x304] = 0x0f, b[0x305] = 1;
    put32(b + 0x308, 0x4101);
    memcpy(b + 0x310, "\0_start", 8);
    macho_image *img = malloc(sizeof *img);
    err_info err = {0};
    CHECK_EQ_INT(macho_parse(img, b, sizeof b, &err), ERR_OK);
    CHECK(!img->is64);
    CHECK_EQ_STR(macho_arch_name(img->cputype, img->cpusubtype), "armv7");
    CHECK_EQ_U64(img->text_vmaddr, 0x4000);
    CHECK_EQ_INT(img->nsections, 1);
    CHECK(img->sections[0].data == b + 0x200);
    macho_symbol sym;
    CHECK(macho_symbol_get(&sym, img, 0));
    CHECK_EQ_STR(sym.name, "_start");
    CHECK_EQ_U64(sym.value, 0x4101);
    /* nsects that cannot fit in a 32-bit segment command */
    put32(b + 28 + 48, 2);
    CHECK_EQ_INT(macho_parse(img, b, sizeof b, &err), ERR_INVALID);
    free(img);
}

/* FAT_MAGIC_64: 64-bit offsets and sizes in each fat_arch. */
static void fat64_headers_parse(void)
{
    uint8_t b[0x300] = {0};
    uint8_t hdr[8] = {0xca, 0xfe, 0xba, 0xbf, 0, 0, 0, 2};
    memcpy(b, hdr, 8);
    const uint32_t types[2] = {MACHO_CPU_TYPE_ARM64, MACHO_CPU_TYPE_ARM64};
    const uint32_t subtypes[2] = {0, 2}; /* arm64, arm64e */
    for (int i = 0; i < 2; i++) {
        uint8_t *fa = b + 8 + i * 32;
        fa[0] = (uint8_t)(types[i] >> 24), fa[3] = (uint8_t)types[i];
        fa[7] = (uint8_t)subtypes[i];
        fa[14] = (uint8_t)(i ? 0x02 : 0x01); /* offset 0x100 / 0x200, big-endian u64 */
        fa[23] = 0x80;                      /* size 0x80 */
    }
    macho_slice s[MACHO_MAX_SLICES];
    size_t n = 0;
    err_info err = {0};
    CHECK_EQ_INT(macho_slices(s, &n, b, sizeof b, &err), ERR_OK);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_U64(s[0].offset, 0x100);
    CHECK_EQ_U64(s[1].offset, 0x200);
    CHECK_EQ_U64(s[1].size, 0x80);
    CHECK_EQ_STR(macho_arch_name(s[1].cputype, s[1].cpusubtype), "arm64e");
    b[8 + 32 + 8] = 0x01; /* offset 2^56: far outside the file */
    CHECK_EQ_INT(macho_slices(s, &n, b, sizeof b, &err), ERR_INVALID);
}

static void uuid_and_arch_names(void)
{
    uint8_t u[16];
    char s[37];
    CHECK(macho_uuid_parse(u, "<6a1fd8c2e4b03b7a9c1d2e3f40516273>", 34));
    macho_uuid_format(s, u);
    CHECK_EQ_STR(s, "6A1FD8C2-E4B0-3B7A-9C1D-2E3F40516273");
    CHECK(macho_uuid_parse(u, s, strlen(s)));
    CHECK(!macho_uuid_parse(u, "6a1fd8c2", 8));
    CHECK(!macho_uuid_parse(u, "zz1fd8c2e4b03b7a9c1d2e3f40516273", 32));
    uint32_t t, st;
    const char *names[] = {"arm64", "arm64e", "arm64_32", "armv7", "armv7s", "x86_64", "i386"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK(macho_arch_parse(names[i], &t, &st));
        CHECK_EQ_STR(macho_arch_name(t, st), names[i]);
    }
    CHECK(!macho_arch_parse("sparc", &t, &st));
}

/* Every fixture file: slices, arch and UUID as the manifest (llvm-dwarfdump) says, and all
 * truncations of its header region fail cleanly. */
static void fixtures_match_manifest(void)
{
    json_t *m = load_manifest();
    CHECK(m != NULL);
    if (m == NULL)
        return;
    size_t i;
    json_t *fx;
    int files = 0;
    json_array_foreach(json_object_get(m, "fixtures"), i, fx)
    {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", fixtures_dir(), json_string_value(json_object_get(fx, "dwarf")));
        bytes b;
        err_info err = {0};
        CHECK_EQ_INT(bytes_map_file(&b, path, &err), ERR_OK);
        if (b.data == NULL)
            continue;
        files++;
        macho_slice slices[MACHO_MAX_SLICES];
        size_t n = 0;
        CHECK_EQ_INT(macho_slices(slices, &n, b.data, b.len, &err), ERR_OK);
        json_t *want = json_object_get(fx, "slices");
        CHECK_EQ_INT(n, json_array_size(want));
        macho_image *img = malloc(sizeof *img);
        for (size_t k = 0; k < n; k++) {
            CHECK_EQ_INT(macho_parse(img, b.data + slices[k].offset, slices[k].size, &err), ERR_OK);
            char uuid[37];
            macho_uuid_format(uuid, img->uuid);
            const char *arch = macho_arch_name(img->cputype, img->cpusubtype);
            bool found = false;
            size_t j;
            json_t *ws;
            json_array_foreach(want, j, ws)
            {
                if (strcmp(json_string_value(json_object_get(ws, "uuid")), uuid) == 0) {
                    found = true;
                    CHECK_EQ_STR(arch, json_string_value(json_object_get(ws, "arch")));
                    CHECK_EQ_U64(img->text_vmaddr,
                                 strtoull(json_string_value(json_object_get(ws, "text_vmaddr")), NULL, 16));
                }
            }
            CHECK(found);
            CHECK(macho_section_find(img, "__DWARF", "__debug_info") != NULL);
            CHECK(img->nsyms > 0);
            /* truncations inside the load commands */
            size_t hdr = 32 + 4096 < slices[k].size ? 32 + 4096 : slices[k].size;
            for (size_t len = 0; len < hdr; len += 7) {
                uint8_t *copy = malloc(len ? len : 1);
                memcpy(copy, b.data + slices[k].offset, len);
                (void)macho_parse(img, copy, len, &err); /* may pass once commands are whole */
                free(copy);
            }
        }
        free(img);
        bytes_unmap(&b);
    }
    CHECK(files >= 4);
    json_decref(m);
}

int main(void)
{
    RUN(synthetic_image_parses);
    RUN(every_truncation_is_an_error);
    RUN(bit_flips_never_read_out_of_bounds);
    RUN(absurd_counts_are_rejected);
    RUN(fat_headers_are_checked);
    RUN(thirty_two_bit_images_parse);
    RUN(fat64_headers_parse);
    RUN(uuid_and_arch_names);
    RUN(fixtures_match_manifest);
    return harness_done();
}
