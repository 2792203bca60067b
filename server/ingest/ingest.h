/*
 * ingest - what the service does with what it receives: reports (decode, parse, commit),
 * dSYM uploads (build symcaches, record debug files) and API tokens (create, check).
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

/* ---- tokens ---------------------------------------------------------------------------- */

enum {
    INGEST_SCOPE_INGEST = 1 << 0, /* POST reports */
    INGEST_SCOPE_UPLOAD = 1 << 1, /* POST dSYMs */
    INGEST_SCOPE_READ = 1 << 2,   /* GET the API */
    INGEST_SCOPE_ADMIN = 1 << 3,  /* everything */
};

#define INGEST_TOKEN_MAX 96 /* bytes of a token, NUL included */

/* ingest_scopes_parse - "ingest,upload,read,admin" (any subset, any order, no blanks) ->
 * INGEST_SCOPE_* bits. Errors ERR_INVALID naming the unknown or missing scope. */
err_code ingest_scopes_parse(unsigned *out, const char *csv, err_info *err);

/*
 * ingest_token_create - make a new token "ss_<12 hex id>_<64 hex secret>" from 32 bytes of
 * OpenSSL's CSPRNG, store its id, SHA-256, `name` and scopes; write it to `token_out`. The
 * token itself is stored nowhere. Errors ERR_INVALID (scopes, empty name), ERR_STORE,
 * ERR_INTERNAL (no randomness).
 */
err_code ingest_token_create(char token_out[INGEST_TOKEN_MAX], store *s, const char *name,
                             const char *scopes_csv, err_info *err);

/*
 * ingest_token_check - authenticate a bearer token: find it by its id, compare SHA-256 in
 * constant time (CRYPTO_memcmp). *scopes = INGEST_SCOPE_* bits (admin implies all).
 * Checked tokens are cached in memory for a few seconds, so a revocation takes effect
 * within INGEST_TOKEN_CACHE_S.
 * Errors  ERR_UNAUTHORIZED (malformed, unknown, revoked or wrong token), ERR_STORE.
 */
#define INGEST_TOKEN_CACHE_S 10
err_code ingest_token_check(unsigned *scopes, store *s, const char *token, err_info *err);

/* ingest_sha256_file_hex - hex SHA-256 of the file at `path` (streamed). Errors ERR_IO. */
err_code ingest_sha256_file_hex(char out[65], const char *path, err_info *err);

#endif
