/*
 * symcache - a compact, sorted address table for one (UUID, arch) image, built once from
 * a dSYM's DWARF (plus the Mach-O symbol table) and read through mmap.
 *
 * A lookup reads one granule of the memory-mapped file (found through an index stored in it:
 * the ranges of 512 bytes of arm64 code and the inline chains they need) plus the name memo:
 * safe from any number of threads, no lock but on first uses (a name block decompressed, a
 * chunk of lookup memory made).
 * Function names are stored raw (linkage names), compressed in blocks; a block is
 * decompressed (one allocation) the first time a lookup needs one of its names, and a name's
 * display form is demangled the first time a lookup returns it; both are kept until
 * symcache_close.
 * The file format and its version history are described in symcache_format.h.
 */
#ifndef STACKSIFT_SYMCACHE_SYMCACHE_H
#define STACKSIFT_SYMCACHE_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "macho/macho.h"
#include "unwind/unwind_image.h"

typedef struct symcache symcache; /* opaque; an open, mapped .symc file */

/* One symbolicated frame. Strings are borrowed from the symcache: valid until symcache_close. */
typedef struct {
    const char *function; /* display name (demangled: Swift in the simplified atos form, C++
                             as llvm-symbolizer prints it; else the raw name); "??" only when
                             the line table covers an address that no function or symbol does */
    const char *file;     /* source path, directory joined as DWARF gives it; NULL if unknown */
    uint32_t line;        /* 1-based; 0 = unknown */
    bool inlined;         /* true: this frame was inlined into the next one in the array */
    bool from_symtab;     /* true: name from the Mach-O symbol table, no DWARF here */
    uint64_t sym_addr;    /* file address where the concrete function starts (same for all
                             frames of a chain; 0 if `cap` cut the chain before it) */
    const char *mangled;  /* raw name: DW_AT_linkage_name (`_ZN...`, `$s...`), the symbol-table
                             name without Mach-O's leading underscore, or DW_AT_name when there
                             is no linkage name; the same pointer as `function` when the
                             name does not demangle (compare pointers to tell); NULL with
                             "??" */
    const char *qualified; /* the name qualified by the namespaces and types around it
                              (debuginfo_qualified: "ns::Widget::draw", "CRLCrashSwift.crash")
                              where DWARF gave no linkage name and `mangled` is DW_AT_name
                              alone; NULL otherwise (a linkage name qualifies itself). Ends
                              with `mangled`'s text. For grouping (common/signature): the
                              display name stays what llvm-symbolizer prints. */
} symcache_frame;

#define SYMCACHE_MAX_FRAMES 64 /* inline depth we return at most; deeper chains are cut */

/* symcache_open - map `path` read-only and check the header, every table's bounds against the
 * file size, the paths and the name block index: O(1) in the number of ranges (the granules
 * are checked by the lookups that read them: a corrupt one answers nothing, never reads
 * outside the file or loops).
 * out     owned by the caller: symcache_close().
 * Errors  ERR_NOT_FOUND (no file), ERR_IO, ERR_INVALID (not a symcache, corrupt tables),
 *         ERR_OUTDATED (an older format version: rebuild it from the dSYM),
 *         ERR_UNSUPPORTED (a newer format version than this build reads). */
err_code symcache_open(symcache **out, const char *path, err_info *err);

/* symcache_open_bytes - like symcache_open over `len` bytes the caller keeps alive (e.g. a
 * buffer or a fuzzer input); the symcache does not own or free them. */
err_code symcache_open_bytes(symcache **out, const uint8_t *data, size_t len, err_info *err);

/* symcache_close - unmap and free; NULL is a no-op. Invalidates every frame string. */
void symcache_close(symcache *sc);

/* symcache_lookup - frames covering `file_addr` (an address in the image's own vm space:
 * runtime address - load address + __TEXT vmaddr), innermost first: frame 0 is the
 * innermost inlinee with the line-table location, each further frame the caller it was
 * inlined into, at its DW_AT_call_file/DW_AT_call_line; the last frame is the concrete
 * function. Writes at most `cap` frames and returns how many were written, 0 when nothing
 * covers the address. */
size_t symcache_lookup(symcache_frame *out, size_t cap, const symcache *sc, uint64_t file_addr);

/* symcache_lookup_many - symcache_lookup(.., SYMCACHE_MAX_FRAMES, ..) for each of the `n` file
 * addresses in `addrs`, answers in input order: the frames of addrs[i] are out[i ? ends[i - 1]
 * : 0] up to out[ends[i]] (exclusive; none when nothing covers it). `out` holds `cap` frames,
 * `ends` n entries. Stops before the first address whose frames do not fit in what is left of
 * `out` and returns how many addresses it answered (n when all; call again for the rest).
 * Same frames as one symcache_lookup per address, faster on many addresses: it works on 16 at
 * a time and starts each one's next cache miss before waiting for any (prefetch), so the
 * misses of independent lookups overlap. Any order works; address order (as `stacksift
 * lookup` sorts a batch) also shares cache lines between neighbours. */
size_t symcache_lookup_many(symcache_frame *out, size_t cap, size_t *ends, const symcache *sc, const uint64_t *addrs,
                            size_t n);

/* symcache_lookup_many_ids - symcache_lookup_many without resolving names: the frames'
 * `function` and `mangled` are NULL and name_ids[k] (parallel to out, `cap` entries) holds
 * frame k's name id, or SYMCACHE_NO_NAME for a frame with no name ("??"). For a batch that
 * prints many answers: symcache_names then resolves the distinct ids once each, block by
 * block, keeping only the names asked for (a lookup keeps every name block it touches
 * decompressed: tens of MB of fresh memory for a big random batch). */
#define SYMCACHE_NO_NAME UINT32_MAX
size_t symcache_lookup_many_ids(symcache_frame *out, uint32_t *name_ids, size_t cap, size_t *ends, const symcache *sc,
                                const uint64_t *addrs, size_t n);

/* One name as symcache_names gives it. Strings are borrowed like frame strings. */
typedef struct {
    const char *raw;      /* as symcache_lookup's `mangled` */
    const char *display;  /* as its `function`: the same pointer as `raw` when the name does
                             not demangle */
    uint32_t raw_len, display_len; /* strlen of each */
    bool raw_plain;       /* every byte of raw in 0x20..0x7e and none '"' or '\\': it goes into
                             a JSON (or C) string as it is */
    bool display_plain;   /* the same for display */
} symcache_name;

/* symcache_names - the `n` names with ids `ids` (ascending, distinct; from
 * symcache_lookup_many_ids; never SYMCACHE_NO_NAME): raw and display forms as
 * symcache_lookup gives `mangled` and `function` ("??" for both when its block is corrupt or
 * the id out of range), with their lengths and whether they need escaping. When the file has
 * a "DISP" section of this build's demangler revision, both forms come from it, a group of
 * SYMCACHE_NAME_GROUP ids decompressed at a time into scratch memory, nothing demangled; else
 * each name block is decompressed once into scratch memory and each name demangled. The names
 * asked for are copied into the symcache's lookup memory (valid until symcache_close). Any thread;
 * calls on disjoint id sets may run at once; give each call whole groups (ids / group equal)
 * so that no group is decoded twice. */
#define SYMCACHE_NAME_GROUP 256u
void symcache_names(symcache_name *out, const symcache *sc, const uint32_t *ids, size_t n);

/* symcache_has_display_names - true when the file stores display forms this build uses
 * (a "DISP" section of its demangler revision): symcache_names then demangles nothing. */
bool symcache_has_display_names(const symcache *sc);

/* Accessors for the header (strings borrowed like frame strings). */
const uint8_t *symcache_uuid(const symcache *sc);       /* 16 bytes */
uint32_t symcache_cputype(const symcache *sc);
uint32_t symcache_cpusubtype(const symcache *sc);
const char *symcache_arch(const symcache *sc);          /* "arm64", ... */
const char *symcache_image_name(const symcache *sc);    /* e.g. "App"; "" if unknown */
uint64_t symcache_text_vmaddr(const symcache *sc);      /* __TEXT vmaddr of the image */
bool symcache_has_dwarf(const symcache *sc);            /* false: built from a symbol table */
/* true: names or paths still read `__hidden#N_` (an App Store dSYM built without its
 * BCSymbolMap: rebuild it once the map is there) */
bool symcache_hidden(const symcache *sc);
bool symcache_revealed(const symcache *sc);             /* true: built with a BCSymbolMap */
/* true: built from a Breakpad .sym (symcache_has_dwarf is true too when it had FUNC or line
 * records: names and lines, but a dSYM's DWARF is preferred for the same UUID) */
bool symcache_from_breakpad(const symcache *sc);


/* symcache_section - the body of the section tagged `tag` (since format version 6; tags in
 * symcache_format.h, e.g. "BPC1" = BREAKPAD_CFI_SECTION), borrowed like frame strings; NULL
 * and *len = 0 when the file has none. Its contents are its reader's to check. */
const uint8_t *symcache_section(const symcache *sc, uint32_t tag, size_t *len);

/* symcache_section_append - append section (`tag`, `len` bytes of `body`) to `out`, a
 * symcache just built or merged that has no section of that tag yet (a reader keeps the
 * first of a tag). */
void symcache_section_append(buf *out, uint32_t tag, const uint8_t *body, size_t len);
uint32_t symcache_range_count(const symcache *sc);
uint32_t symcache_function_count(const symcache *sc);   /* concrete functions + inlinees */
uint32_t symcache_name_count(const symcache *sc);       /* distinct names: ids are below it */
size_t symcache_size(const symcache *sc);               /* bytes of the file, sections included */

/* ---- Unwind info (format version 6 sections) ---------------------------------------- */

/* symcache_has_unwind - true when the symcache carries unwind info ("UNWI" or "DBGF"). */
bool symcache_has_unwind(const symcache *sc);

/*
 * symcache_unwind_image - the unwind info of the image, for unwind_walk: out->uuid and
 * out->text_vmaddr from the header; compact unwind entries, x86_64 indirect stack sizes and
 * __eh_frame from the "UNWI" section (an executable's or dylib's), __debug_frame from "DBGF"
 * (a dSYM's); each NULL/0 when absent. Every pointer borrows the mapping: valid until
 * symcache_close. O(entries): checks the section's sizes and that the entries and stack
 * sizes are in order (the walker's binary searches rely on it).
 * Errors  ERR_NOT_FOUND (no unwind info: a symcache built from a dSYM alone, or version 5),
 *         ERR_INVALID (a corrupt section; bytes given to symcache_open_bytes that are not
 *         8-byte aligned).
 * Source  symcache_format.h ("UNWI", "DBGF").
 */
err_code symcache_unwind_image(unwind_image *out, const symcache *sc, err_info *err);

/*
 * symcache_scan_image - `sc` as an image whose symbols bound the stack scan
 * (unwind_image.covers = symcache_covers, .symbols = sc): its unwind info as
 * symcache_unwind_image gives it, or, when it has none, out->uuid and out->text_vmaddr only.
 * Borrows the mapping as symcache_unwind_image does.
 * Errors  ERR_INVALID (a corrupt unwind section: *out then has the symbols only).
 */
err_code symcache_scan_image(unwind_image *out, const symcache *sc, err_info *err);

/* symcache_covers - unwind_image.covers over a symcache (`symbols`): whether a function or
 * symbol covers module offset `rel` (the symcache's addresses are offsets + its __TEXT
 * vmaddr). */
bool symcache_covers(const void *symbols, uint64_t rel);

/*
 * symcache_unwind_append - append the unwind sections of Mach-O slice `img` to `out`, a
 * symcache just built (symcache_build) or merged: "UNWI" when it has __TEXT,__unwind_info with
 * bytes (an executable or dylib; a dSYM has its header only), with __TEXT,__eh_frame, "DBGF"
 * when it has __DWARF,__debug_frame; nothing otherwise. On error `out` is unchanged.
 * Errors  ERR_INVALID (an __unwind_info that unwind_compact_list refuses), ERR_TOO_LARGE.
 */
err_code symcache_unwind_append(buf *out, const macho_image *img, err_info *err);

/*
 * symcache_merge - append to `out` one symcache of the image of `base` and `other` (same
 * UUID, cputype and __TEXT vmaddr, except for a Breakpad .sym's symcache, whose vmaddr is 0
 * and whose addresses are module offsets: as `other` its "BPC1" section joins any base, as
 * `base` its header takes the other's vmaddr): the names and lines of `base` (the caller
 * picks it: DWARF over a .sym over a symbol table), its sections, and each section of
 * `other` that `base` lacks but "DISP" (display names of `other`'s own names; a base without
 * one demangles at lookup) (symcache_format.h). The result is at the current format
 * version.
 * Errors  ERR_INVALID (different images).
 */
err_code symcache_merge(buf *out, const symcache *base, const symcache *other, err_info *err);

#endif
