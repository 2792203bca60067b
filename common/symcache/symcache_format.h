/*
 * symcache_format - the on-disk layout of a .symc file. Internal to common/symcache.
 *
 * All integers little-endian. One file per (UUID, arch).
 *
 *   offset  size  field
 *   0       8     magic "STKSYMC\0"
 *   8       4     version (SYMCACHE_VERSION)
 *   12      4     flags: bit 0 = built from DWARF (else from the symbol table only);
 *                 bit 1 = names or paths still read `__hidden#N_` (an App Store dSYM built
 *                 without its BCSymbolMap); bit 2 = names revealed from a BCSymbolMap
 *                 (common/symbolmap); bit 3 = built from a Breakpad .sym (names and lines of
 *                 its FUNC, line, INLINE and PUBLIC records; bit 0 is set too when it had
 *                 any). Readers ignore the bits they do not know.
 *   16      16    UUID (LC_UUID of the image)
 *   32      4     cputype
 *   36      4     cpusubtype
 *   40      8     __TEXT vmaddr of the image
 *   48      8     base address: granules and function entries are offsets from it
 *   56      4     nranges: distinct address ranges (sentinel included; a statistic)
 *   60      4     nscopes: distinct functions and inlinees (a statistic)
 *   64      4     strings_size (bytes; the last byte is NUL): source paths and the image name
 *   68      4     image name (string offset)
 *   72      4     nfiles
 *   76      4     ngranules
 *   80      4     nnames: distinct function names
 *   84      1     unit_shift: every range start is a multiple of 2^unit_shift bytes (2 on
 *                 arm64, 0 if any start is not 4-aligned); a granule covers
 *                 SYMC_GRANULE_UNITS units: 2^(unit_shift + 7) bytes
 *   85      1     w_name: bits of a name id in a local scope
 *   86      2     reserved, 0
 *   88      4     names_size: bytes of the compressed name blocks
 *   92      4     granules_size: bytes of the granules (without the padding after them)
 *   96            granule_index u32[ngranules + 1] where each granule's bytes begin (the last:
 *                                                  granules_size)
 *                 files        u32[nfiles]           string offsets of source paths
 *                 name_index   u32[nname_blocks + 1] offsets of the name blocks in names
 *                 names        nname_blocks = ceil(nnames / SYMC_NAMES_PER_BLOCK) zstd frames;
 *                              each decompresses to its raw names (SYMC_NAMES_PER_BLOCK, fewer
 *                              in the last), NUL-terminated, back to back
 *                 granules     granules_size bytes, then SYMC_GRANULE_PAD zero bytes (so that
 *                              every read a lookup makes from inside a granule is one
 *                              unaligned load that stays in the file)
 *                 strings      NUL-terminated paths and the image name, each stored once
 *                 (version 6) optional sections, up to the file's end (none: the file ends
 *                 with the strings, as a version-5 file does)
 *
 * Sections (version 6). After the strings: zero bytes up to an 8-byte boundary, then sections
 * back to back, each
 *   0   4  tag (four ASCII bytes, read as a little-endian u32: SYMC_TAG_*)
 *   4   4  size of the body in bytes
 *   8      body, then zero bytes up to an 8-byte boundary
 * A tag appears at most once; a reader skips tags it does not know, so a section can be added
 * without a version bump. Sections are what a merge carries from one symcache of a (UUID,
 * arch) to another (symcache_merge): the names come from one debug file (DWARF over a symbol
 * table), each section from whichever file had it.
 *
 *   "UNWI"  unwind info from the executable or dylib itself (a dSYM has only the header of
 *           __unwind_info): its compact unwind table, decoded, and its __eh_frame. Written only
 *           for a slice with __unwind_info bytes: a walker reaches __eh_frame through the
 *           table's DWARF encodings, and llvm's dsymutil copies __eh_frame alone into a dSYM.
 *             0   8  __eh_frame vm address (0: no __eh_frame)
 *             8   4  nentries, 12 4 nsizes, 16 4 eh_frame_len, 20 4 reserved (0)
 *             24     entries u32[3][nentries]: func_start, func_end, encoding (offsets from the
 *                    header's __TEXT vmaddr; in address order, non-overlapping; what
 *                    unwind_compact_list reads from __TEXT,__unwind_info)
 *                    zero bytes up to an 8-byte boundary (of the body)
 *                    sizes u32[2][nsizes]: func_start, imm32 of the x86_64 frameless functions
 *                    with an indirect stack size (the immediate of their `sub $imm32, %rsp`,
 *                    read from __TEXT at build: unwind_stack_sizes), by func_start
 *                    eh_frame  eh_frame_len bytes of __TEXT,__eh_frame as they are
 *           The body adds up exactly. Records are read in place (unwind_image points into the
 *           mapping): every body starts 8-byte aligned.
 *   "DBGF"  a dSYM's __DWARF,__debug_frame (when it has one): u64 its vm address, then its
 *           bytes as they are (DWARF 5 section 6.4: absolute addresses; the walker indexes
 *           its FDEs when it first needs them, unwind_debug_frame_list).
 *   "BPC1"  the STACK CFI records of a Breakpad .sym: the table breakpad_cfi_encode writes
 *           (layout in common/breakpad/breakpad.h), module offsets. Added without a version
 *           bump (readers skip tags they do not know).
 *   "DISP"  (version 8; LZ4 groups since version 9) every name's raw and display forms as
 *           lookups give them, the display form made at build (common/demangle, as a lookup
 *           would derive it), so that a batch of lookups demangles nothing and decodes no name
 *           block. It belongs to the core it was built with: a merge keeps the base's and never
 *           takes another file's (its name ids would be another core's). A reader uses it only
 *           in a file of version 9 or later (SYMC_DISPLAY_MIN_VERSION: a version-8 file's
 *           groups are zstd frames, which it ignores and demangles instead).
 *             0   4  demangler revision (DEMANGLE_REVISION at build); a reader of another
 *                    revision ignores the section and demangles at lookup
 *             4   4  nnames (the header's), 8 4 names per group (SYMC_DISPLAY_GROUP), 12 4 0
 *             16     index u32[ngroups + 1]: where each group starts, from the end of the
 *                    index (the last: the groups' total size, up to the body's end)
 *                    groups: group g (names g * SYMC_DISPLAY_GROUP.., fewer in the last) is
 *                      u32 size                bytes it decompresses to
 *                      u32 check               symc_display_check of the LZ4 block's bytes
 *                      an LZ4 block (lz4.h's block format, no frame) of `size` bytes:
 *                      u32 raw_len[count]      bytes of the raw name as lookups give it (a
 *                                              scope-qualified name: DW_AT_name, after the mark)
 *                      u32 display_len[count]  bytes of its display form; SYMC_DISPLAY_SAME
 *                                              when that is the raw name itself
 *                      u8  flags[count]        SYMC_NAME_RAW_PLAIN, SYMC_NAME_DISPLAY_PLAIN
 *                      the raw names, NUL-terminated, in id order
 *                      the display forms not SYMC_DISPLAY_SAME, NUL-terminated, in id order
 *           Groups of 256 (4 name blocks): a batch that resolves many names decodes every
 *           group its ids touch (a random batch of 100,000 addresses: all of them, 373 MB on
 *           the benchmark). LZ4 (LZ4HC level SYMC_DISPLAY_LEVEL at build) decodes those at
 *           ~10 GB/s where zstd level 3 (version 8) decoded 1.3-3 GB/s, for a section 1.3x
 *           larger (21.5 MB instead of 16.2 on the benchmark). LZ4 blocks carry no checksum,
 *           and a flipped literal still decodes: the check word makes a corrupt group fall
 *           back to demangling instead of showing a wrong name. The raw names are the core's
 *           again: a batch then decodes one group per 256 names instead of that and four
 *           name blocks.
 *
 * Granule g covers [base + g * G, base + (g + 1) * G), G = 2^(unit_shift + 7) bytes, and holds
 * everything a lookup there needs: which range covers each address and the whole inline chain
 * of each range (the functions it lies in, innermost first), so that one lookup reads one
 * granule (about 200 bytes on arm64: a few neighbouring cache lines, one memory round trip)
 * and no other table but the name memo and the paths:
 *
 *   0   1  nrec - 1: records in the granule (1..128)
 *   1   2  nlocal: local scopes (u16)
 *   3   1  w_ls: bits of a local scope index + 1 (0 = none), in records and as a parent
 *   4   1  w_file, 5 w_line: bits of a record's file and line fields
 *   6   1  w_x, 7 w_y: bits of a local scope's x and y fields (every width <= 32)
 *   8   4  file_base, 12 4 line_base: added to every record's file and line field
 *   16     offsets  u8[nrec - 1]: where records 1.. start, in units from the granule start
 *                   (strictly increasing, 1..127); record 0 starts at the granule start (it is
 *                   the range covering that address, whatever its real start)
 *          records  nrec bit-packed records of w_ls + w_file + w_line bits (low bits first):
 *                     local scope index + 1 (0 = no function), file index + 1 (0 = none) -
 *                     file_base, line - line_base (line 0 = unknown); zero-padded to a byte
 *          scopes   nlocal bit-packed local scopes of w_name + w_ls + w_x + w_y bits:
 *                     name     name id
 *                     parent   local index + 1 of the scope this was inlined into; 0 = a
 *                              concrete function
 *                     x        inlinee: call file index + 1 (0 = unknown);
 *                              function: SYMC_KIND_DWARF or SYMC_KIND_SYMTAB
 *                     y        inlinee: call line (0 = unknown);
 *                              function: (granule end - entry) mod 2^32, the entry address
 *                              being an offset from the base
 *                   zero-padded to a byte
 *
 * A range longer than a granule is repeated as record 0 of each granule it spans, and a
 * function is stored in each granule that needs it (1.27 times on the benchmark): that costs
 * less than what granule-local values save (record and scope fields a few bits wide, local
 * indexes instead of global ones). The last range is a sentinel (no function, no file) that
 * ends the one before it. Names are raw (a scope-qualified one: version 6 below): DW_AT_linkage_name as the compiler wrote it
 * (`_ZN...`, `$s...`), the symbol-table name without Mach-O's one leading underscore, else
 * DW_AT_name (`main`, `-[Foo bar:]`); sorted, so that neighbours share most of their bytes. A
 * name block is decompressed on first use, and each name's display form demangled
 * (common/demangle) the first time a lookup returns it; both are kept for the life of the open
 * symcache.
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
 *   4  (2026-11) granules: a direct index from each 2^(unit_shift + 7)-byte granule of the
 *                address space to its bytes, which hold its ranges (fixed-width fields, found
 *                with a branch-free search) and the inline chains they need. A lookup reads
 *                one granule instead of a block index, a block and the global scope table (3-4
 *                dependent cache misses: about one now), and open no longer decodes every
 *                record to build an index in memory: lookups check what they read. A version-3
 *                file is refused with ERR_OUTDATED.
 *   4  (2026-11, same version) flags bits 1 and 2: hidden names left / revealed from a
 *                BCSymbolMap. Files written before have both clear; readers that predate them
 *                ignore them. The reveal itself happens once, at build: names and paths are
 *                stored revealed, so a lookup pays nothing for it.
 *   5  (2026-11) the layout of 4; what the builder reads changed: an address is named by the
 *                unit that owns it (.debug_aranges, else the unit's own ranges), inlinees
 *                without a name stay frames of the chain, an address several symbols share is
 *                named by the last. A version-4 file answers those shapes as the older reader
 *                did, so it is refused with ERR_OUTDATED and rebuilt from the stored dSYM
 *                (on first use, or `stacksift symcache rebuild`).
 *   6  (2026-11) optional sections after the strings (above): "UNWI" (compact unwind and
 *                __eh_frame of an executable or dylib), "DBGF" (a dSYM's __debug_frame). The
 *                core is the layout of 5, so a version-5 file is read as a version-6 file
 *                without sections (it has no unwind info); a version-5 reader refuses a
 *                version-6 file as unsupported rather than misreading the sections as corrupt.
 *   7  (2026-11) the layout of 6; a name DWARF gives without a linkage name, whose DIE lies
 *                inside namespaces or types (debuginfo_qualified), is stored as its scope
 *                prefix, SYMC_SCOPE_MARK (0x1f) and DW_AT_name: "ns::Widget::\x1fdraw",
 *                "CRLCrashSwift.\x1fcrash". Lookups return DW_AT_name as the raw and display
 *                name (what llvm-symbolizer prints) and prefix + name as the frame's
 *                `qualified` name, which grouping reads: the same function then groups alike
 *                whether its build wrote linkage names or not. Version 5 and 6 files are
 *                still read: they hold no marked name, so their frames have no qualified
 *                names (`stacksift symcache rebuild` gives them); a version-6 reader refuses
 *                a version-7 file as unsupported rather than show a marked name.
 *   8  (2026-11) the layout of 7 and the optional "DISP" section (above): display forms made
 *                at build, read by symcache_names instead of demangling (a one-shot batch of
 *                100,000 long C++ and Swift names spent most of its CPU in the demanglers).
 *                Built by `stacksift symcache build` (symcache_extra.display_names); a file
 *                without it (version 5-7, or built without) demangles at lookup as before.
 *                Version 8 because a version-7 merge would carry another file's section into
 *                a core it does not belong to: a version-7 reader refuses version 8 as
 *                unsupported.
 *   9  (2026-11) the layout of 8; "DISP" groups are LZ4 blocks with a check word instead of
 *                zstd frames (a batch of 100,000 random lookups decoded 373 MB of them: the
 *                largest share of its CPU). A version-8 file is still read, its "DISP"
 *                section ignored (names demangled at lookup, as in a file without one), and a
 *                merge drops it; a version-8 reader refuses version 9 as unsupported rather
 *                than read LZ4 as zstd.
 */
#ifndef STACKSIFT_SYMCACHE_FORMAT_H
#define STACKSIFT_SYMCACHE_FORMAT_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SYMC_MAGIC "STKSYMC"
#define SYMCACHE_VERSION 9u
#define SYMCACHE_MIN_VERSION 5u  /* the oldest version read (5 as a 6 without sections;
                                    5 and 6 as a 7 without qualified names; 5-7 as an 8
                                    without display names) */
#define SYMC_DISPLAY_MIN_VERSION 9u /* the oldest version whose "DISP" section is read */
#define SYMC_SECTION_HEADER 8u
#define SYMC_MAX_SECTIONS 8u
#define SYMC_TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define SYMC_TAG_UNWIND SYMC_TAG('U', 'N', 'W', 'I')
#define SYMC_TAG_DEBUG_FRAME SYMC_TAG('D', 'B', 'G', 'F')
#define SYMC_TAG_BREAKPAD_CFI SYMC_TAG('B', 'P', 'C', '1') /* = BREAKPAD_CFI_SECTION */
#define SYMC_TAG_DISPLAY SYMC_TAG('D', 'I', 'S', 'P')
#define SYMC_UNWIND_HEADER 24u
#define SYMC_DISPLAY_HEADER 16u
#define SYMC_DISPLAY_GROUP_HEADER 8u /* size and check before each group's LZ4 block */
#define SYMC_DISPLAY_LEVEL 3         /* LZ4HC level of the groups: on the benchmark's 373 MB,
                                        level 3 gives 17.4x in 1.0 CPU s, 6 18.7x in 2.1 s,
                                        LZ4's fast mode 12.8x in 0.1 s */
#define SYMC_DISPLAY_GROUP 256u      /* names per "DISP" frame: 4 name blocks */
#define SYMC_DISPLAY_SAME UINT32_MAX /* display_len of a name shown as its raw form */
#define SYMC_NAME_RAW_PLAIN 1u     /* the raw name (as lookups give it) is plain: every byte in
                                      0x20..0x7e and none '"' or '\\' (JSON or C as it is) */
#define SYMC_NAME_DISPLAY_PLAIN 2u /* the display form is plain */

/* One section of a version-6 file, in the mapping. */
typedef struct {
    uint32_t tag;
    const uint8_t *data; /* the body */
    uint32_t len;        /* body bytes (padding not counted) */
} symc_section;
#define SYMC_HEADER_SIZE 96u
#define SYMC_NAMES_PER_BLOCK 64u
#define SYMC_NONE UINT32_MAX
#define SYMC_SCOPE_MARK '\x1f' /* in a stored name: "<scope prefix>" MARK "<DW_AT_name>" */
#define SYMC_FLAG_DWARF 1u
#define SYMC_FLAG_HIDDEN 2u    /* hidden names left: no BCSymbolMap was applied */
#define SYMC_FLAG_REVEALED 4u  /* hidden names revealed from a BCSymbolMap at build */
#define SYMC_FLAG_BREAKPAD 8u  /* built from a Breakpad .sym */
#define SYMC_GRANULE_UNITS 128u  /* units (2^unit_shift bytes) a granule covers */
#define SYMC_GRANULE_UNIT_BITS 7u
#define SYMC_GRANULE_HEADER 16u  /* bytes before a granule's offsets */
#define SYMC_GRANULE_PAD 64u     /* zero bytes after the granules */
#define SYMC_MAX_UNIT_SHIFT 2u

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

/* True if the n bytes at p are plain (SYMC_NAME_RAW_PLAIN): every byte in 0x20..0x7e and none
 * '"' or '\\'. Eight bytes at a time; each test is exact for a whole word ("Bit Twiddling
 * Hacks": "determine if a word has a byte less than n", "has a zero byte"). */
static inline bool symc_text_plain(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t bad = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, q, b;
        memcpy(&x, p + i, 8);
        q = x ^ (ones * '"');
        b = x ^ (ones * '\\');
        /* a high bit: a byte >= 0x80, < 0x20, '"' or '\\'; 0x7f is caught below */
        bad |= x | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) | ((x + ones) & highs & ~x);
    }
    for (; i < n; i++)
        bad |= (p[i] < 0x20 || p[i] == '"' || p[i] == '\\' || p[i] == 0x7f) ? 0x80 : p[i];
    return (bad & highs) == 0;
}

/* The check word of a "DISP" group: a 64-bit multiply-xor hash of its n LZ4 bytes folded to 32
 * bits, eight bytes a step (the tail zero-padded, the length mixed in). Catches a flipped
 * byte, which an LZ4 literal otherwise decodes as a wrong name; not a defence against crafted
 * files, which may only make a group decode to readable but wrong names. */
static inline uint32_t symc_display_check(const uint8_t *p, size_t n)
{
    const uint64_t mul = 0x9e3779b97f4a7c15ull;
    uint64_t h = (uint64_t)n * mul, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ le64toh(w)) * mul;
        h ^= h >> 29;
    }
    w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ le64toh(w)) * mul;
    h ^= h >> 32;
    return (uint32_t)h;
}

#endif
