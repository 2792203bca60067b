/*
 * dsym - find the debug files in what CI uploads and turn each slice into a symcache.
 *
 * Input is one of: a `.dSYM` bundle directory (Contents/Resources/DWARF/ files), a directory
 * holding bundles, a zip of one or more bundles (frameworks included), or a Mach-O file
 * (thin or fat; a dSYM companion file, or a binary with only a symbol table).
 * Zip archives are read with libzip, with limits on total size, entry count and compression
 * ratio (zip bombs) and no entry name is ever used as a path to write.
 */
#ifndef STACKSIFT_DSYM_DSYM_H
#define STACKSIFT_DSYM_DSYM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

/* Called for a slice of a fat file that could not be read at all (`why`), while the other
 * slices are built: `name` the file, `arch` the slice's architecture. */
typedef void (*dsym_skipped_fn)(const char *name, const char *arch, const char *why, void *ctx);

typedef struct {
    unsigned threads;             /* DWARF conversion threads; 0 = number of CPUs */
    dsym_skipped_fn skipped;      /* optional: told of each fat-file slice left out */
    void *skipped_ctx;
    uint64_t max_unpacked_bytes;  /* zip: total uncompressed bytes allowed (0 = 8 GiB) */
    uint32_t max_ratio;           /* zip: max uncompressed/compressed per entry (0 = 200) */
    uint32_t max_entries;         /* zip: max entries (0 = 100000) */
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
} dsym_built;

typedef void (*dsym_built_fn)(const dsym_built *built, void *ctx);

/* dsym_build_symcaches - build OUTDIR/<UUID>.symc for every slice of every Mach-O in
 * `input`, calling `fn` once per slice in input order. DWARF that does not parse is left out
 * part by part (dsym_built.warnings says what); a slice of a fat file that cannot be read at
 * all is left out (opts->skipped is told) when another slice of the file builds. Files are written to a temporary name
 * and renamed, so a reader never sees a half-written symcache; an existing symcache is
 * replaced. `out_dir` must exist.
 * Errors  ERR_NOT_FOUND (input missing), ERR_INVALID (no Mach-O inside, corrupt Mach-O or
 *         zip, hostile zip entry), ERR_TOO_LARGE (zip limits), ERR_IO. On error, symcaches
 *         already written for earlier slices stay (they are complete). */
err_code dsym_build_symcaches(const char *input, const char *out_dir, const dsym_options *opts,
                              dsym_built_fn fn, void *ctx, err_info *err);

#endif
