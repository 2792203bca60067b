/*
 * unwind_image - the records of an image's unwind info, apart from the readers (unwind.h) so
 * that a module that only hands them over (common/symcache) includes nothing else.
 */
#ifndef STACKSIFT_UNWIND_UNWIND_IMAGE_H
#define STACKSIFT_UNWIND_UNWIND_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One function of the table. */
typedef struct {
    uint32_t func_start; /* offset from __TEXT vmaddr */
    uint32_t func_end;   /* the next function's start (exclusive) */
    uint32_t encoding;   /* its compact unwind encoding (0: none given) */
} unwind_entry;

/* The stack size of an x86_64 function whose encoding is frameless with an indirect stack
 * size: the imm32 of its `sub $imm32, %rsp`, read once from the executable's __TEXT bytes so
 * that a walker needs only this table, not __TEXT. */
typedef struct {
    uint32_t func_start; /* the function's unwind_entry.func_start */
    uint32_t imm;        /* the immediate as it is in the instruction (stack_adjust not added) */
} unwind_stack_size;

/* The unwind info of one image (one (UUID, arch)), matched to a dump's modules by UUID. Every
 * pointer is borrowed (a mapped symcache: symcache_unwind_image; or a Mach-O file's bytes). */
typedef struct unwind_image {
    uint8_t uuid[16];
    uint64_t text_vmaddr;          /* __TEXT vmaddr: compact unwind offsets are from it */
    const unwind_entry *entries;   /* from unwind_compact_list; sorted (NULL: none) */
    size_t nentries;
    /* x86_64 frameless-indirect functions' stack sizes (unwind_stack_sizes); sorted */
    const unwind_stack_size *stack_sizes;
    size_t nstack_sizes;
    /* __TEXT,__eh_frame, for DWARF encodings: its bytes and vm address (NULL: none) */
    const uint8_t *eh_frame;
    size_t eh_frame_len;
    uint64_t eh_frame_vmaddr;
    /* __DWARF,__debug_frame of a dSYM, when it has one (NULL: none); its FDEs serve
     * functions the compact unwind does not describe. Addresses in it are absolute vm
     * addresses of the image (text_vmaddr + module offset). */
    const uint8_t *debug_frame;
    size_t debug_frame_len;
    uint64_t debug_frame_vmaddr;
    /* a Breakpad .sym's STACK CFI table (common/breakpad, the "BPC1" section of its symcache),
     * or NULL; its addresses are module offsets */
    const uint8_t *breakpad_cfi;
    size_t breakpad_cfi_len;
    /* optional: whether the module's symbols cover module offset `rel` (NULL: unknown). A
     * scanned word whose call instruction (word - 1) neither they nor the CFI above cover is
     * no return address */
    bool (*covers)(const void *symbols, uint64_t rel);
    const void *symbols;
} unwind_image;

/* unwind_image_has_cfi - whether `im` gives the walker call-frame information to read (compact
 * unwind, __eh_frame, a dSYM's __debug_frame, a .sym's STACK CFI), not only symbols that
 * bound the scan. */
static inline bool unwind_image_has_cfi(const unwind_image *im)
{
    return im->nentries > 0 || im->eh_frame != NULL || im->debug_frame != NULL ||
           im->breakpad_cfi != NULL;
}

#endif
