/*
 * symcache_format - the on-disk layout of a .symc file. Internal to common/symcache.
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
 *   48      8     base address: range starts and function entries are offsets from it
 *   56      4     nranges
 *   60      4     nscopes
 *   64      4     strings_size (bytes; the last byte is NUL): source paths and the image name
 *   68      4     image name (string offset)
 *   72      4     nfiles
 *   76      4     nblocks = ceil(nranges / SYMC_BLOCK_RANGES)
 *   80      4     nnames: distinct function names
 *   84      4     reserved, 0
 *   88      4     names_size: bytes of the compressed name blocks
 *   92      4     scope_bits: packed widths, one byte each (low to high): name, parent, x, y
 *   96            block_index  symc_block[nblocks]   first range start of each block, and where
 *                                                    its records begin in block_data
 *                 files        u32[nfiles]           string offsets of source paths
 *                 scopes       nscopes bit-packed records (widths from scope_bits), then 8
 *                              zero bytes so that every field is one unaligned 64-bit load:
 *                                name     name id
 *                                parent   scope this was inlined into + 1; 0 = a concrete
 *                                         function
 *                                x        inlinee: call file index + 1 (0 = unknown);
 *                                         function: SYMC_KIND_DWARF or SYMC_KIND_SYMTAB
 *                                y        inlinee: call line (0 = unknown);
 *                                         function: entry address as an offset from the base
 *                 name_index   u32[nname_blocks + 1] offsets of the name blocks in names
 *                 names        nname_blocks = ceil(nnames / SYMC_NAMES_PER_BLOCK) zstd frames;
 *                              each decompresses to its raw names (SYMC_NAMES_PER_BLOCK, fewer
 *                              in the last), NUL-terminated, back to back
 *                 block_data   the range records, SYMC_BLOCK_RANGES per block (fewer in the
 *                              last), each: start (ULEB delta from the previous record; the
 *                              block's first is the index entry), scope + 1 (0 = none; first
 *                              of a block as ULEB, then zigzag delta); the block's first then
 *                              holds file index + 1 (0 = none) and line as ULEBs, the others
 *                              (zigzag line delta) << 1 | file changed, and only when the
 *                              file changed the zigzag delta of file index + 1
 *                 strings      NUL-terminated paths and the image name, each stored once
 *
 * A record covers [its start, the next record's start). The last record is a sentinel (no
 * scope, no file) that ends the one before it. A lookup is a binary search over block_index,
 * a decode of at most SYMC_BLOCK_RANGES records, then a walk up the scopes' parents. Names
 * are raw: DW_AT_linkage_name as the compiler wrote it (`_ZN...`, `$s...`), the symbol-table
 * name without Mach-O's one leading underscore, else DW_AT_name (`main`, `-[Foo bar:]`);
 * sorted, so that neighbours share most of their bytes. A name block is decompressed on first
 * use, and each name's display form demangled (common/demangle) the first time a lookup
 * returns it; both are kept for the life of the open symcache.
 *
 * Version history
 *   1  (2026-11) first version: names and paths in one plain string table, 16-byte scopes.
 *   2  (2026-11) names sorted and zstd-compressed in blocks of 64, bit-packed scopes,
 *                call files as file indexes, file index delta-coded in range records. A
 *                version-1 file is refused with ERR_OUTDATED (rebuild from the dSYM).
 *   3  (2026-11) names stored raw (linkage names) instead of demangled: lookups return both
 *                forms (`--mangled`), the build demangles nothing, and the sorted raw names
 *                compress smaller. Same layout as 2; a version-2 file is refused with
 *                ERR_OUTDATED (its names are display names: read as raw they would be wrong).
 */
#ifndef STACKSIFT_SYMCACHE_FORMAT_H
#define STACKSIFT_SYMCACHE_FORMAT_H

#include <stdint.h>

#define SYMC_MAGIC "STKSYMC"
#define SYMCACHE_VERSION 3u
#define SYMC_HEADER_SIZE 96u
#define SYMC_BLOCK_RANGES 32u
#define SYMC_NAMES_PER_BLOCK 64u
#define SYMC_NONE UINT32_MAX
#define SYMC_FLAG_DWARF 1u
#define SYMC_SCOPE_PAD 8u

typedef struct {
    uint32_t start;     /* first range start of the block, as an offset from the base */
    uint32_t data;      /* offset of its first record in block_data */
} symc_block;

#define SYMC_BLOCK_SIZE 8u

/* A scope unpacked: an inlinee (parent != SYMC_NONE) or a concrete function (parent ==
 * SYMC_NONE). The last two fields mean different things for the two. */
typedef struct {
    uint32_t name;   /* name id */
    uint32_t parent; /* scope this was inlined into, or SYMC_NONE for a concrete function */
    uint32_t c;      /* inlinee: call site's file index or SYMC_NONE;
                        function: SYMC_KIND_DWARF or SYMC_KIND_SYMTAB */
    uint32_t d;      /* inlinee: call site's line in the parent (0 = unknown);
                        function: its entry address as an offset from the base address */
} symc_scope;

#define SYMC_KIND_DWARF 0u
#define SYMC_KIND_SYMTAB 1u

#endif
