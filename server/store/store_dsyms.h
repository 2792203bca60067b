/*
 * store_dsyms - debug files (dSYMs) and the UUIDs reports wait for (store_dsyms.c).
 * Errors as in store.h.
 */
#ifndef STACKSIFT_STORE_STORE_DSYMS_H
#define STACKSIFT_STORE_STORE_DSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"
#include "store/store_blobs.h"

typedef struct {
    char uuid[37];          /* upper-case with dashes */
    char arch[16];
    char name[256];         /* image name */
    bool has_dwarf;
    int64_t dwarf_bytes;
    int64_t symcache_bytes;
    int32_t functions;
    char sha256[65];        /* hex SHA-256 of the symcache */
    char uploaded_at[32];   /* RFC 3339 UTC; filled by the store */
} store_dsym;

/* What store_dsyms_record did with one row. */
typedef enum {
    STORE_DSYM_EXISTS,   /* the UUID was recorded already: the stored record is read back */
    STORE_DSYM_CREATED,  /* a new row */
    STORE_DSYM_UPGRADED, /* the stored row came from a symbol table only and this one has
                            DWARF: the row now describes the new debug file; or (checked
                            records) the row now points at the merged symcache */
    STORE_DSYM_CONFLICT, /* checked records: the row is no longer what the caller merged with
                            (another upload changed it meanwhile); nothing was written for it:
                            merge again with what is stored now and record it again */
} store_dsym_outcome;

/* What a checked record (store_dsym_record.checked) does to an existing row that is still
 * what the caller saw. */
typedef enum {
    STORE_DSYM_KEEP,             /* leave it (STORE_DSYM_EXISTS) */
    STORE_DSYM_REPLACE_ROW,      /* the row becomes this record: its names won (DWARF over a
                                    symbol table) and its symcache carries the stored one's
                                    sections */
    STORE_DSYM_REPLACE_SYMCACHE, /* only the symcache changes (the stored names stay, the
                                    merged symcache adds this upload's unwind info); the
                                    row's original upload stays */
} store_dsym_action;

/* store_dsym_get - the row for `uuid` (any case, dashes). Errors ERR_NOT_FOUND, ERR_STORE. */
err_code store_dsym_get(store_dsym *out, store *s, const char *uuid, err_info *err);

/* store_dsyms_list - rows matching `uuid` and `name` (each NULL = any), newest first, at most
 * `limit`; *out is allocated in `a`. Errors ERR_INVALID (malformed uuid), ERR_STORE. */
err_code store_dsyms_list(store_dsym **out, size_t *n, store *s, const char *uuid,
                          const char *name, size_t limit, arena *a, err_info *err);

/* A UUID that reports wait for: its dSYM (pending_dsym reports, missing_uuids), or its unwind
 * info (minidumps walked through it without any: unwind_uuids); strings in the caller's arena. */
typedef struct {
    const char *uuid;            /* upper case with dashes */
    const char *name;            /* the image's name in one waiting report, NULL = unknown */
    int64_t reports;             /* how many reports wait for it (either way, each once) */
    const char *first_received;  /* RFC 3339 UTC: the earliest of them */
    const char *last_received;   /* the latest */
    bool needs_debug_info;       /* a pending_dsym report lacks its names */
    bool needs_unwind_info;      /* a processed or pending_dsym minidump was walked through it
                                    without its unwind info (an executable, dylib or .sym) */
} store_dsym_missing;

/* store_dsyms_missing - the UUIDs reports wait for (store_dsym_missing), most reports first, at
 * most `limit`; *out in `a`. Errors ERR_STORE, ERR_TOO_LARGE. */
err_code store_dsyms_missing(store_dsym_missing **out, size_t *n, store *s, unsigned limit,
                             arena *a, err_info *err);

/* The current stored symcache of a debug file: what a node needs to fetch and check it. */
typedef struct {
    char symcache_sha256[65]; /* hex; "" = the row has no stored symcache (recorded before
                                 migration 0006 and not backfilled yet) */
    int64_t symcache_bytes;
    char original_sha256[65]; /* hex of the upload it came from; "" = none stored */
    char original_name[256];  /* that upload's file name */
    char arch[16];
    bool has_dwarf;
} store_dsym_blobs;

/* store_dsym_blobs_get - the blobs of debug file `uuid` (any case, dashes).
 * Errors ERR_NOT_FOUND (no such dSYM, or not a UUID), ERR_STORE. */
err_code store_dsym_blobs_get(store_dsym_blobs *out, store *s, const char *uuid, err_info *err);

/* store_dsym_touch - move dsyms.last_used_at of `uuid` to now (the dSYM retention clock);
 * a no-op within an hour of the last move, so callers may call it often. Errors ERR_STORE. */
err_code store_dsym_touch(store *s, const char *uuid, err_info *err);

/* One debug file to record with its blobs (store_dsyms_record). */
typedef struct {
    store_dsym row;              /* in: what was built; out: the stored record */
    const char *symcache_path;   /* the built symcache (its SHA-256 is row.sha256) */
    const char *original_sha256; /* hex SHA-256 of the upload part it came from */
    const char *original_path;
    const char *original_name;   /* that part's file name */
    uint32_t hidden_names;       /* App Store dSYM: names and paths its symcache still hides */
    uint32_t hidden_max;         /* the largest `__hidden#N_` + 1: the lines its map needs */
    const char *revealed_by;     /* the BCSymbolMap applied, NULL or "" = none */
    /* Checked records: built by merging with what the caller read of the UUID's row
     * (ingest_dsym: a dSYM and its executable make one symcache). The row is written only if
     * it is still that: no row (expect_row false), or a row whose symcache is expect_sha256;
     * else STORE_DSYM_CONFLICT. Unchecked records: insert, or upgrade a symbol-table row to
     * DWARF, as the outcomes above say. */
    bool checked;
    bool expect_row;
    const char *expect_sha256;
    store_dsym_action action;    /* checked: what to do with the existing row */
    store_dsym_outcome outcome;  /* out */
} store_dsym_record;

/*
 * store_dsyms_record - record `n` debug files and their blobs in ONE transaction: each row is
 * inserted, or left as it is (STORE_DSYM_EXISTS: the UUID is known and this upload does not
 * improve it), or upgraded (a DWARF symcache replaces a symbol-table-only one; never the other
 * way round). Created and upgraded rows get their hidden-name columns (migration 0017) set in
 * the same transaction. Only created and upgraded rows get their symcache and original blobs written
 * (content-addressed: an existing blob is locked and reused, not written again); all of it
 * becomes visible at COMMIT together. rows[i].row is overwritten with the stored record.
 * Checked records (above) are written only over the row their caller merged with; a
 * STORE_DSYM_CONFLICT row writes nothing and does not stop the others.
 * Errors ERR_STORE, ERR_INVALID, ERR_IO (a file could not be read), ERR_INTERNAL.
 */
err_code store_dsyms_record(store_dsym_record *rows, size_t n, store *s, err_info *err);

/* What a symcache of an App Store dSYM still hides (migration 0017's columns); all zero/NULL
 * for any other debug file. */
typedef struct {
    uint32_t names;           /* names and paths left `__hidden#N_` */
    uint32_t max;             /* the largest N + 1: the lines its BCSymbolMap needs */
    const char *revealed_by;  /* UUID of the BCSymbolMap applied; NULL or "" = none */
} store_dsym_hidden;

/*
 * store_dsym_symcache_replace - (`stacksift symcache rebuild`) point debug file `uuid` at a
 * new symcache `file` (stored as a blob in the same transaction) with the given size,
 * function count and hidden names (`hidden`: what this symcache hides, which a rebuild with
 * the maps stored now may change either way), if its stored symcache is still
 * `expect_sha256`. When the new one hides nothing, the reports and call site stacks that
 * wait for `uuid` go back to the queue in the same transaction (as store_dsym_reveal).
 * *replaced = false when another writer changed the row meanwhile (nothing is written then).
 * Errors ERR_NOT_FOUND (no such dSYM), ERR_STORE, ERR_IO, ERR_INTERNAL.
 */
err_code store_dsym_symcache_replace(bool *replaced, store *s, const char *uuid,
                                     const char *expect_sha256, const store_blob_file *file,
                                     int64_t symcache_bytes, int32_t functions,
                                     const store_dsym_hidden *hidden, err_info *err);

/*
 * store_dsym_hidden_correct - (`stacksift symcache rebuild`, a symcache rebuilt to the bytes
 * stored) set the hidden-name columns of `uuid` to `hidden` where they say otherwise and its
 * stored symcache is still `expect_sha256` (a rebuild before they were stored with the
 * symcache left them as they were); what waits for it is released as by
 * store_dsym_symcache_replace when nothing is hidden. *corrected = whether they changed.
 * Errors ERR_STORE.
 */
err_code store_dsym_hidden_correct(bool *corrected, store *s, const char *uuid,
                                   const char *expect_sha256, const store_dsym_hidden *hidden,
                                   err_info *err);

/*
 * store_dsym_symcache_backfill - attach a stored symcache to a row recorded before blobs
 * existed (symcache_blob IS NULL), when its local file's SHA-256 `file->sha256` equals the
 * row's sha256. *attached says whether it did. Errors ERR_STORE, ERR_IO, ERR_INTERNAL.
 */
err_code store_dsym_symcache_backfill(bool *attached, store *s, const char *uuid,
                                      const store_blob_file *file, err_info *err);

/* A debug file without a stored symcache (recorded before blobs existed). */
typedef struct {
    char uuid[37];
    char sha256[65];
} store_dsym_unstored;

/* store_dsyms_unstored - up to `limit` rows whose symcache_blob is NULL, in `a`.
 * Errors ERR_STORE, ERR_TOO_LARGE. */
err_code store_dsyms_unstored(store_dsym_unstored **out, size_t *n, store *s, size_t limit,
                              arena *a, err_info *err);

/* A stored debug file with the upload it was built from: what rebuilding its symcache takes
 * (`stacksift symcache rebuild`, the App Store reveal in store_symbol_maps.h). */
typedef struct {
    char uuid[37];
    char symcache_sha256[65];
    char original_sha256[65];   /* the upload it was built from */
    char original_name[256];
} store_dsym_original;

/* store_dsyms_rebuildable - every row with a stored original, oldest upload first, in `a`.
 * Errors ERR_STORE, ERR_TOO_LARGE. */
err_code store_dsyms_rebuildable(store_dsym_original **out, size_t *n, store *s, arena *a,
                                 err_info *err);

#endif
