/*
 * dsym - find the debug files in what CI uploads and turn each slice into a symcache.
 *
 * Input is one of: a `.dSYM` bundle directory (Contents/Resources/DWARF/ files), a directory
 * holding bundles (an `.xcarchive`), a zip of one or more bundles (frameworks included), a
 * Mach-O file (thin or fat; a dSYM companion file, or an executable or dylib: its symbol table
 * and its unwind info, symcache_unwind_append), or
 * one of the two files of an App Store (bitcode) dSYM's names (common/symbolmap): a UUID map
 * `<UUID>.plist` or a BCSymbolMap `<UUID>.bcsymbolmap`, or a Breakpad symbol file (`.sym`,
 * recognised by its first line "MODULE ...", alone or in a directory or zip: dsym_breakpad.h).
 * A .sym and a dSYM of one UUID built into the same OUTDIR make one symcache: the dSYM's
 * DWARF names with the .sym's STACK CFI section, whichever came first.
 *
 * Hidden names. A slice whose names read `__hidden#N_` is revealed at build with the
 * BCSymbolMap of its original build: the UUID map for the slice's UUID names that build
 * (without one, the slice's own UUID), and the map is looked for among the maps of the same
 * input (a bundle's Contents/Resources/<UUID>.plist, an archive's BCSymbolMaps/), then in
 * opts->symbol_maps_dir, then through opts->lookup (the server's stored maps). Maps are read
 * before any slice is built, whatever their order in the input.
 * Zip archives are read with libzip, with limits on total size, entry count and compression
 * ratio (zip bombs) and no entry name is ever used as a path to write.
 */
#ifndef STACKSIFT_DSYM_DSYM_H
#define STACKSIFT_DSYM_DSYM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "symbolmap/symbolmap.h"

#define DSYM_DEFAULT_MAX_MAP_BYTES (512ull << 20) /* largest BCSymbolMap read (0 = this) */

/* Called for a slice of a fat file that could not be read at all (`why`), while the other
 * slices are built: `name` the file, `arch` the slice's architecture. */
typedef void (*dsym_skipped_fn)(const char *name, const char *arch, const char *why, void *ctx);

/* A UUID map or BCSymbolMap found in the input (dsym_options.map_found). */
typedef enum { DSYM_MAP_UUIDMAP, DSYM_MAP_BCSYMBOLMAP } dsym_map_kind;
typedef struct {
    dsym_map_kind kind;
    char uuid[37];          /* UUID map: the dSYM slice's UUID; BCSymbolMap: the original
                               build's (both from the file name, upper case with dashes) */
    char original[37];      /* UUID map: its DBGOriginalUUID; "" for a BCSymbolMap */
    uint32_t names;         /* BCSymbolMap: its lines after the header; 0 for a UUID map */
    const char *name;       /* the file's name (base name) */
    const uint8_t *data;    /* the file's bytes, valid during the call */
    size_t len;
} dsym_map;

typedef err_code (*dsym_map_fn)(const dsym_map *map, void *ctx, err_info *err);

/* Asked for the BCSymbolMap of a hidden slice `uuid` that the input did not bring: `original`
 * holds its UUID map's DBGOriginalUUID ("" = none known; the callee may fill it in from what
 * it knows). Returns the map for `original` (else for `uuid`), owned by the callee and valid
 * until dsym_build_symcaches returns; NULL = none. */
typedef const symbolmap *(*dsym_lookup_fn)(const char *uuid, char original[37], void *ctx);

typedef struct {
    unsigned threads;             /* DWARF conversion threads; 0 = number of CPUs */
    dsym_skipped_fn skipped;      /* optional: told of each fat-file slice left out */
    void *skipped_ctx;
    uint64_t max_unpacked_bytes;  /* zip: total uncompressed bytes allowed (0 = 8 GiB) */
    uint32_t max_ratio;           /* zip: max uncompressed/compressed per entry (0 = 200) */
    uint32_t max_entries;         /* zip: max entries (0 = 100000) */
    uint64_t max_map_bytes;       /* largest BCSymbolMap (0 = DSYM_DEFAULT_MAX_MAP_BYTES) */
    const char *symbol_maps_dir;  /* optional: a folder of <UUID>.plist / <UUID>.bcsymbolmap */
    bool maps_beside;             /* a Mach-O file input: also look in its own folder */
    const char *map_uuid;         /* optional: the UUID a map given alone is for, when its file
                                     name carries none (sentry-cli's debug_id) */
    dsym_map_fn map_found;        /* optional: told of each map in the input, before any slice
                                     is built; an error it returns ends the build */
    void *map_found_ctx;
    dsym_lookup_fn lookup;        /* optional: maps the input did not bring */
    void *lookup_ctx;
    bool display_names;           /* store each name's display form in the symcaches built
                                     from DWARF or a symbol table (symcache_extra): for files
                                     kept and looked up by batches; costs a demangling of
                                     every name at build */
} dsym_options;

/* What one built slice produced. */
typedef struct {
    char uuid[37];          /* upper-case with dashes */
    char arch[16];          /* "arm64", ... */
    char name[256];         /* image name: the Mach-O file name inside the bundle */
    char path[4096];        /* the written OUTDIR/<UUID>.symc */
    uint32_t functions;     /* concrete functions + inlinees */
    uint32_t ranges;        /* address ranges in the table */
    uint64_t bytes;         /* size of the .symc */
    uint64_t dwarf_bytes;   /* size of the __DWARF sections it came from (0: symbol table only) */
    bool has_dwarf;
    double ms;              /* wall time to build this slice, milliseconds */
    uint32_t warnings;      /* parts of the DWARF left out as unreadable (debuginfo_warnings) */
    char warning[320];      /* what was left out, one line ("" when nothing was) */
    uint32_t hidden;        /* names and paths that read `__hidden#N_` (0: not an App Store
                               bitcode dSYM) */
    uint32_t hidden_left;   /* of those, still hidden in the symcache (no map, or a short one) */
    uint32_t hidden_max;    /* the largest N + 1 referenced: the lines its map must have */
    bool revealed;          /* a BCSymbolMap was applied */
    char map_uuid[37];      /* hidden: the UUID of the BCSymbolMap it needs (its UUID map's
                               original, else its own UUID); "" when not hidden */
    bool breakpad;          /* names and lines from a Breakpad .sym (its STACK CFI kept too) */
    uint32_t cfi;           /* breakpad: its STACK CFI INIT records */
} dsym_built;

typedef void (*dsym_built_fn)(const dsym_built *built, void *ctx);

/* dsym_build_symcaches - build OUTDIR/<UUID>.symc for every slice of every Mach-O in
 * `input`, calling `fn` once per slice in input order. DWARF that does not parse is left out
 * part by part (dsym_built.warnings says what); a slice of a fat file that cannot be read at
 * all is left out (opts->skipped is told) when another slice of the file builds. Files are written to a temporary name
 * and renamed, so a reader never sees a half-written symcache. An existing symcache of the same
 * UUID in `out_dir` (built earlier from this input, e.g. an `.app` beside its `.dSYM`, or by an
 * earlier call) is merged with the new one (symcache_merge): DWARF names win over a symbol
 * table's, each one's sections (unwind info) are kept; `fn` is not called when the merge
 * leaves the existing file as it was. An outdated or unreadable one is replaced. `out_dir`
 * must exist.
 * An input that holds only maps (a UUID map or BCSymbolMap alone) builds nothing: fn is not
 * called, opts->map_found is.
 * Errors  ERR_NOT_FOUND (input missing), ERR_INVALID (no Mach-O or map inside, corrupt Mach-O
 *         or zip, hostile zip entry, a map that does not parse or is named for no UUID, a
 *         BCSymbolMap given with a slice that refers to more names than it holds),
 *         ERR_UNSUPPORTED (a binary plist, a BCSymbolMap version other than 2), ERR_TOO_LARGE
 *         (zip limits, a map over max_map_bytes), ERR_IO, or map_found's error. On error,
 *         symcaches already written for earlier slices stay (they are complete). */
err_code dsym_build_symcaches(const char *input, const char *out_dir, const dsym_options *opts,
                              dsym_built_fn fn, void *ctx, err_info *err);

#endif
