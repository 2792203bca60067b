/*
 * ingest - what the service does with what it receives: reports (decode, parse, commit) and
 * dSYM uploads (build symcaches, record debug files).
 * No HTTP here: the http module streams bodies in and maps err_codes to statuses.
 */
#ifndef STACKSIFT_INGEST_INGEST_H
#define STACKSIFT_INGEST_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "dsym/dsym.h"
#include "store/store.h"
#include "store/store_dsyms.h"

/* ---- reports --------------------------------------------------------------------------- */

typedef struct {
    const char *content_type;     /* media type without parameters, lower case: "text/plain"
                                     or "application/json"; anything else is refused */
    const char *content_encoding; /* NULL, "identity" or "gzip" */
    const uint8_t *body;          /* the request body as received */
    size_t len;
    uint64_t max_report_bytes;    /* limit on the decoded report */
} ingest_report_input;

typedef struct {
    char id[37];        /* the stored report's id (UUID) */
    const char *format; /* "apple-text", "ips", "kscrash", "json" (static or in the arena) */
    const char *status; /* "received" */
    size_t raw_bytes;   /* decoded size */
} ingest_report_result;

/*
 * ingest_report_accept - decode (gzip), parse and commit one report. When it returns ERR_OK
 * the report is durable in Postgres with status "received" (workers take it from there).
 * Scratch memory comes from `a`.
 * Errors  ERR_UNSUPPORTED (content type or encoding not accepted; a recognized document that
 *         is not an app crash report), ERR_INVALID (corrupt gzip, a report that does not
 *         parse: the message gives the reason and, for text, the line), ERR_TOO_LARGE (over
 *         max_report_bytes after decoding, or the arena budget), ERR_STORE (database down:
 *         nothing was stored, the client should retry).
 */
err_code ingest_report_accept(ingest_report_result *out, store *s, const ingest_report_input *in,
                              arena *a, err_info *err);

/* ---- dSYM uploads ---------------------------------------------------------------------- */

/* One debug file of an upload, as answered to the client. */
typedef struct {
    store_dsym row;     /* the stored record (existing one for a re-upload) */
    const char *status; /* "created", "updated" (DWARF replaced a symbol-table-only record)
                           or "exists" (static strings) */
} ingest_dsym_file;

/*
 * ingest_dsym_upload - build a symcache for every slice of every debug file in the
 * `ninputs` files at `inputs` (zip of .dSYM bundles, or Mach-O, thin or fat), move them to
 * `symcache_dir`/<UUID>.symc and record one row per debug file, all in one transaction.
 * Scratch files go to `work_dir` (existing, emptied by the caller). A UUID that is already
 * recorded keeps its record and symcache ("exists"), unless only a symbol table made it and
 * this upload has DWARF ("updated"). On any error no row is written and no
 * symcache this call placed is left in symcache_dir. *out in `a`.
 * Errors  ERR_INVALID (no Mach-O inside, corrupt Mach-O or zip, hostile zip entry names),
 *         ERR_TOO_LARGE (zip limits), ERR_IO, ERR_STORE.
 */
err_code ingest_dsym_upload(ingest_dsym_file **out, size_t *n, store *s,
                            const char *const *inputs, size_t ninputs, const char *work_dir,
                            const char *symcache_dir, const dsym_options *opts, arena *a,
                            err_info *err);

#endif
