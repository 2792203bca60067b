/*
 * fuzz_unwind - libFuzzer target for the compact unwind reader (common/unwind): the input is
 * an `__unwind_info` section. Beyond "no crash, no sanitizer report": an error has a message,
 * the entries are in address order with end >= start, every entry is found by its own start
 * address, and every encoding decodes for both architectures without reading past its rule.
 * An input that parses as a Mach-O with an `__unwind_info` section is read through that
 * section (so the seeds, Mach-O files, are real tables from the start); any other input is
 * the section itself. Every entry's encoding is also read as a DWARF FDE offset into the
 * Mach-O's `__eh_frame` (ehframe.c): errors have a message, a row covers its address.
 * The Mach-O's `__DWARF,__debug_frame` (a dSYM's; else the input itself) is indexed
 * (unwind_debug_frame_list): its FDEs are in order and do not overlap, each is found by its
 * first and last address, and the row there is read or refused with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macho/macho.h"
#include "unwind/unwind.h"
#include "fuzz_require.h"

static macho_image img; /* large: off the stack */

/* debug_frame - the FDE index of a __debug_frame section and the rows at each FDE's ends. */
static void debug_frame(const uint8_t *sect, size_t len)
{
    arena *a = arena_new(64u << 20);
    unwind_fde *fdes;
    size_t n;
    err_info err = {0};
    if (unwind_debug_frame_list(&fdes, &n, sect, len, a, &err) != ERR_OK) {
        REQUIRE(err.msg[0] != '\0');
        arena_free(a);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        REQUIRE(fdes[i].start < fdes[i].end);
        if (i > 0)
            REQUIRE(fdes[i].start >= fdes[i - 1].end);
        REQUIRE(unwind_fde_find(fdes, n, fdes[i].start) == &fdes[i]);
        REQUIRE(unwind_fde_find(fdes, n, fdes[i].end - 1) == &fdes[i]);
        for (int k = 0; k < 2; k++) {
            uint64_t at = k ? fdes[i].end - 1 : fdes[i].start;
            unwind_cfi_row row;
            err_info e2 = {0};
            if (unwind_debug_frame_row(&row, sect, len, fdes[i].fde_off, at, &e2) != ERR_OK)
                REQUIRE(e2.msg[0] != '\0');
            else
                REQUIRE(at >= row.func_start && at < row.func_end);
        }
    }
    arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    err_info merr = {0};
    const macho_section *eh = NULL;
    const uint8_t *df = data;
    size_t df_len = len;
    if (macho_parse(&img, data, len, &merr) == ERR_OK) {
        const macho_section *d = macho_section_find(&img, "__DWARF", "__debug_frame");
        if (d != NULL && d->data != NULL) {
            df = d->data;
            df_len = (size_t)d->size;
        }
        eh = macho_section_find(&img, "__TEXT", "__eh_frame");
        const macho_section *s = macho_section_find(&img, "__TEXT", "__unwind_info");
        if (s != NULL && s->data != NULL) {
            data = s->data;
            len = (size_t)s->size;
        }
    }
    debug_frame(df, df_len);
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
