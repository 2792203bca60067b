/*
 * fuzz_macho - libFuzzer target for the Mach-O reader (common/macho): macho_slices over the
 * input, then macho_parse of every slice and a walk over its sections and symbols.
 * Beyond "no crash, no sanitizer report" it checks the reader's promises: every view lies
 * inside the bytes given, every error has a message, names are NUL-terminated and
 * architecture names and UUIDs round-trip. Seeds: the fixture binaries and dSYMs (run.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macho/macho.h"
#include "fuzz_require.h"

/* The image struct is large (MACHO_MAX_SECTIONS sections): keep it off the stack. */
static macho_image img;

static int inside(const void *p, size_t n, const uint8_t *base, size_t len)
{
    const uint8_t *q = p;
    return q >= base && n <= len && (size_t)(q - base) <= len - n;
}

static void check_error(err_code rc, const err_info *err)
{
    REQUIRE(rc != ERR_OK);
    REQUIRE(err->msg[0] != '\0');
    REQUIRE(memchr(err->msg, '\0', sizeof err->msg) != NULL);
}

static void walk_image(const uint8_t *data, size_t len)
{
    err_info err = {0};
    err_code rc = macho_parse(&img, data, len, &err);
    if (rc != ERR_OK) {
        check_error(rc, &err);
        return;
    }
    REQUIRE(img.data == data && img.len == len);
    REQUIRE(img.nsections <= MACHO_MAX_SECTIONS);
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < img.nsections; i++) {
        const macho_section *s = &img.sections[i];
        REQUIRE(memchr(s->segname, '\0', sizeof s->segname) != NULL);
        REQUIRE(memchr(s->sectname, '\0', sizeof s->sectname) != NULL);
        if (s->data != NULL && s->size > 0) {
            REQUIRE(inside(s->data, s->size, data, len));
            sink ^= s->data[0] ^ s->data[s->size - 1]; /* ASan checks both ends */
        }
        REQUIRE(macho_section_find(&img, s->segname, s->sectname) != NULL);
    }
    (void)macho_section_find(&img, "__DWARF", "__debug_info");
    if (img.nsyms > 0)
        REQUIRE(inside(img.symtab, (size_t)img.nsyms * (img.is64 ? 16 : 12), data, len));
    if (img.strsize > 0) /* strtab is NULL for an empty string table */
        REQUIRE(inside(img.strtab, img.strsize, data, len));
    for (uint32_t i = 0; i < img.nsyms; i++) {
        macho_symbol sym;
        if (!macho_symbol_get(&sym, &img, i))
            continue;
        size_t n = strlen(sym.name);
        REQUIRE(inside(sym.name, n + 1, (const uint8_t *)img.strtab, img.strsize));
    }
    const char *arch = macho_arch_name(img.cputype, img.cpusubtype);
    REQUIRE(arch != NULL);
    uint32_t cpu, sub;
    if (strcmp(arch, "unknown") != 0) {
        REQUIRE(macho_arch_parse(arch, &cpu, &sub));
        REQUIRE(strcmp(macho_arch_name(cpu, sub), arch) == 0);
    }
    if (img.has_uuid) {
        char text[37];
        uint8_t back[16];
        macho_uuid_format(text, img.uuid);
        REQUIRE(strlen(text) == 36);
        REQUIRE(macho_uuid_parse(back, text, strlen(text)));
        REQUIRE(memcmp(back, img.uuid, 16) == 0);
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    macho_slice slices[MACHO_MAX_SLICES];
    size_t n = 0;
    err_info err = {0};
    err_code rc = macho_slices(slices, &n, data, size, &err);
    if (rc != ERR_OK) {
        check_error(rc, &err);
        return 0;
    }
    REQUIRE(n >= 1 && n <= MACHO_MAX_SLICES);
    for (size_t i = 0; i < n; i++) {
        REQUIRE(slices[i].offset <= size && slices[i].size <= size - slices[i].offset);
        walk_image(data + slices[i].offset, (size_t)slices[i].size);
    }
    /* The input as a thin image too, whatever macho_slices made of it. */
    walk_image(data, size);
    return 0;
}
