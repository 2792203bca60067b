/*
 * fuzz_unwind - libFuzzer target for the compact unwind reader (common/unwind): the input is
 * an `__unwind_info` section. Beyond "no crash, no sanitizer report": an error has a message,
 * the entries are in address order with end >= start, every entry is found by its own start
 * address, and every encoding decodes for both architectures without reading past its rule.
 * An input that parses as a Mach-O with an `__unwind_info` section is read through that
 * section (so the seeds, Mach-O files, are real tables from the start); any other input is
 * the section itself. Every entry's encoding is also read as a DWARF FDE offset into the
 * Mach-O's `__eh_frame` (ehframe.c): errors have a message, a row covers its address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macho/macho.h"
#include "unwind/unwind.h"
#include "fuzz_require.h"

static macho_image img; /* large: off the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    err_info merr = {0};
    const macho_section *eh = NULL;
    if (macho_parse(&img, data, len, &merr) == ERR_OK) {
        eh = macho_section_find(&img, "__TEXT", "__eh_frame");
        const macho_section *s = macho_section_find(&img, "__TEXT", "__unwind_info");
        if (s != NULL && s->data != NULL) {
            data = s->data;
            len = (size_t)s->size;
        }
    }
    arena *a = arena_new(64u << 20);
    unwind_entry *list;
    size_t n;
    err_info err = {0};
    err_code rc = unwind_compact_list(&list, &n, data, len, a, &err);
    if (rc != ERR_OK) {
        REQUIRE(err.msg[0] != '\0');
        arena_free(a);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            REQUIRE(list[i].func_start >= list[i - 1].func_start);
        const unwind_entry *e = unwind_compact_find(list, n, list[i].func_start);
        if (list[i].func_end > list[i].func_start)
            REQUIRE(e != NULL && e->func_start == list[i].func_start);
        unwind_rule r;
        (void)unwind_decode_x86_64(&r, list[i].encoding);
        REQUIRE(r.nsaved <= UNWIND_MAX_SAVED);
        (void)unwind_decode_arm64(&r, list[i].encoding);
        REQUIRE(r.nsaved <= UNWIND_MAX_SAVED);
        /* a DWARF encoding's FDE, read at the function's first and last byte */
        if (eh != NULL && eh->data != NULL && (list[i].encoding & 0x0f000000) != 0) {
            unwind_cfi_row row;
            err_info e2 = {0};
            for (int k = 0; k < 2; k++) {
                uint64_t at = img.text_vmaddr + (k ? list[i].func_end - 1 : list[i].func_start);
                if (unwind_dwarf_row(&row, eh->data, (size_t)eh->size, eh->addr,
                                     list[i].encoding & 0xffffff, at, &e2) != ERR_OK)
                    REQUIRE(e2.msg[0] != '\0');
                else
                    REQUIRE(at >= row.func_start && at < row.func_end);
            }
        }
    }
    arena_free(a);
    return 0;
}
