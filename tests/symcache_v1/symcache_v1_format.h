/*
 * symcache_v1_format - the layout of version-1 .symc files, kept only for tests/symcache_roundtrip.c
 *
 * All integers little-endian. One file per (UUID, arch).
 *
 *   offset  size  field
 *   0       8     magic "STKSYMC\0"
 *   8       4     version (SYMCACHE_VERSION)
 *   12      4     flags: bit 0 = built from DWARF (else from the symbol table only)
 *   16      16    UUID (LC_UUID of the image)
 *   32      4     cputype
 *   36      4     cpusubtype
 *   40      8     __TEXT vmaddr of the image
 *   48      8     base address: range starts are offsets from it
 *   56      4     nranges
 *   60      4     nscopes
 *   64      4     strings_size (bytes; the last byte is NUL)
 *   68      4     image name (string offset)
 *   72      4     nfiles
 *   76      4     nblocks = ceil(nranges / SYMC_BLOCK_RANGES)
 *   80            block_index  symc_block[nblocks]   first range start of each block, and where
 *                                                    its records begin in block_data
 *                 files        u32[nfiles]           string offsets of source paths
 *                 scopes       symc_scope[nscopes]   functions and inlinees, 16 bytes each
 *                 block_data   the range records, SYMC_BLOCK_RANGES per block (fewer in the
 *                              last), each: start (ULEB delta from the previous record; the
 *                              block's first is the index entry), scope + 1 (0 = none; first
 *                              of a block as ULEB, then zigzag SLEB delta), file index + 1
 *                              (ULEB, 0 = none), line (first of a block as ULEB, then zigzag
 *                              delta)
 *                 strings      NUL-terminated names and paths, each stored once
 *
 * A record covers [its start, the next record's start). The last record is a sentinel (no
 * scope, no file) that ends the one before it. A lookup is a binary search over block_index,
 * a decode of at most SYMC_BLOCK_RANGES records, then a walk up scopes[].parent.
 *
 * Version history
 *   1  (2026-11) first version.
 */
#ifndef STACKSIFT_SYMCACHE_V1_FORMAT_H
#define STACKSIFT_SYMCACHE_V1_FORMAT_H

#include <stdint.h>

#define SYMC_MAGIC "STKSYMC"
#define SYMCACHE_VERSION 1u
#define SYMC_HEADER_SIZE 80u
#define SYMC_BLOCK_RANGES 32u
#define SYMC_NONE UINT32_MAX
#define SYMC_FLAG_DWARF 1u

typedef struct {
    uint32_t start;     /* first range start of the block, as an offset from the base */
    uint32_t data;      /* offset of its first record in block_data */
} symc_block;

#define SYMC_BLOCK_SIZE 8u

/* A scope is an inlinee (parent != SYMC_NONE) or a concrete function (parent == SYMC_NONE).
 * The last two fields mean different things for the two, which keeps a scope at 16 bytes. */
typedef struct {
    uint32_t name;   /* string offset of the (demangled) function name */
    uint32_t parent; /* scope this was inlined into, or SYMC_NONE for a concrete function */
    uint32_t c;      /* inlinee: call site's file (string offset or SYMC_NONE);
                        function: SYMC_KIND_DWARF or SYMC_KIND_SYMTAB */
    uint32_t d;      /* inlinee: call site's line in the parent (0 = unknown);
                        function: its entry address as an offset from the base address */
} symc_scope;

#define SYMC_SCOPE_SIZE 16u
#define SYMC_KIND_DWARF 0u
#define SYMC_KIND_SYMTAB 1u

#endif
