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
#include "ingest/symfiles.h"
#include "store/store.h"
#include "store/store_dsyms.h"
#include "store/store_reports.h"

/* ---- reports --------------------------------------------------------------------------- */

typedef struct {
    const char *content_type;     /* media type without parameters, lower case: "text/plain"
                                     or "application/json"; anything else is refused */
    const char *content_encoding; /* NULL, "identity" or "gzip" */
    const uint8_t *body;          /* the request body as received */
    size_t len;
    uint64_t max_report_bytes;    /* limit on the decoded report */
    struct pipeline *pipe;        /* processes a report at once when it can
                                     (pipeline_process_at_intake); NULL: never */
    int64_t project_id;           /* projects.id the report goes to (grouped among that
                                     project's issues); 0 = STORE_PROJECT_DEFAULT. The caller
                                     authenticated it: see auth_dsn_key_check */
} ingest_report_input;

/*
 * ingest_report_prepare - decode (gzip) and parse one report into the row intake commits
 * (status "received", project in->project_id, format and the summary columns; no parsed model: see
 * ingest_report_model_json); a MetricKit payload of several diagnostics gives one row per
 * diagnostic (crashreport_split), *rows an arena array of *nrows (>= 1). With in->pipe, a
 * report that pipeline_process_at_intake could process now also carries its outcome
 * (row.processed): the commit stores it processed, with its issue. The caller commits
 * the rows through store_intake (group commit);
 * once that commit succeeded the report is durable and workers take it from there. Strings
 * and bytes of `row` live in `a` (or borrow in->body).
 * Errors  ERR_UNSUPPORTED (content type or encoding not accepted; a recognized document that
 *         is not an app crash report), ERR_INVALID (corrupt gzip, a report that does not
 *         parse: the message gives the reason and, for text, the line), ERR_TOO_LARGE (over
 *         max_report_bytes after decoding, or the arena budget).
 */
err_code ingest_report_prepare(store_report_new **rows, size_t *nrows, const ingest_report_input *in,
                               arena *a, err_info *err);

/* One report of a batch (ingest_report_prepare_batch): its row, or why it was refused. */
typedef struct {
    store_report_new row; /* valid when rc == ERR_OK */
    err_code rc;          /* this report's verdict at intake */
    err_info err;         /* why, when rc != ERR_OK */
} ingest_batch_item;

#define INGEST_BATCH_MAX 1000 /* reports in one batch */

/*
 * ingest_report_prepare_batch - a JSON array of reports (what KSCrash's standard sink sends in
 * its "reports" part: KSCrash report objects, or reports as JSON strings) at in->body: each
 * report prepared on its own as ingest_report_prepare prepares one (parsed, summary columns,
 * processed at intake when the pipeline can), so that a bad report refuses only itself
 * (items[i].rc, items[i].err); each must fit in in->max_report_bytes. A report that names
 * itself (KSCrash's report.id, an Apple report's Incident Identifier) gets row.id from that
 * name and the project (a UUID of their SHA-256), so that the same batch sent again names the
 * same rows; row.id NULL otherwise. in->content_type and in->content_encoding are not read (the
 * caller decoded the body). *items an arena array of *n.
 * Errors  (the whole batch) ERR_INVALID (not a JSON array of reports, truncated),
 *         ERR_TOO_LARGE (more than INGEST_BATCH_MAX reports, the arena's budget).
 */
err_code ingest_report_prepare_batch(ingest_batch_item **items, size_t *n,
                                     const ingest_report_input *in, arena *a, err_info *err);

/* The media type PLCrashReporter's binary reports are sent as, and served back as (docs/clients/plcrashreporter.md). */
#define INGEST_PLCRASH_CONTENT_TYPE "application/x-plcrashreporter"

/* ingest_is_plcrash - whether `len` bytes at raw are a PLCrashReporter file: they start with
 * its "plcrash" magic (what decides the format, whatever the Content-Type said). */
bool ingest_is_plcrash(const uint8_t *raw, size_t len);

/* The media type of a report row that stores a whole Sentry envelope as received (its event
 * item is the report): see ingest_raw_report. */
#define INGEST_SENTRY_ENVELOPE_TYPE "application/x-sentry-envelope"

/* Most bytes a stored raw report inflates to when read back (ingest_raw_report): far above
 * any limit intake applies, so that only the arena's budget bounds what intake accepted. */
#define INGEST_STORED_MAX ((uint64_t)1 << 31)

/* ingest_is_gzip - whether `len` bytes at raw start with gzip's magic (RFC 1952 section 2.3.1:
 * 1f 8b), which no report format starts with. */
bool ingest_is_gzip(const uint8_t *raw, size_t len);

/* ingest_keep_body - have `row` (whose raw is its report) store instead the `len` bytes of
 * the gzip'd body at `body` the report came in, when they are fewer (ingest_raw_report reads
 * them back): raw and raw_len then name the body, report_len the report's size. The caller
 * vouches that the body, once inflated, is the report (or, for INGEST_SENTRY_ENVELOPE_TYPE,
 * the envelope holding it). Returns whether it did. */
bool ingest_keep_body(store_report_new *row, const uint8_t *body, size_t len);

/*
 * ingest_raw_report - the report's own bytes from a row's stored raw bytes and content type.
 * A gzip'd body whose report is the whole body is stored as received when that is smaller than
 * the report (reports.raw as the client sent it: Postgres then compresses nothing, and a
 * sentry-cocoa event takes its gzip size); this undoes that: bytes starting with gzip's magic
 * are inflated, and a Sentry envelope (content type INGEST_SENTRY_ENVELOPE_TYPE) gives its
 * minidump attachment if it has one (ingest_minidump.h), else its event item's payload. Anything else is the report as it is. *out borrows raw or lives in `a`.
 * Errors  ERR_INVALID (corrupt gzip, an envelope that does not frame or holds no event),
 *         ERR_TOO_LARGE (the arena's budget).
 */
err_code ingest_raw_report(const uint8_t **out, size_t *out_len, const uint8_t *raw, size_t len,
                           const char *content_type, arena *a, err_info *err);

/* ingest_report_model_json - the parsed model of a row's stored raw bytes (of its stored
 * content type, ingest_stored_read) as JSON text
 * (crashreport_render_json), in `a`: what GET /api/v1/reports/{id} shows as "report" for a
 * report whose model was not stored. Errors as crashreport_parse, ERR_TOO_LARGE. */
err_code ingest_report_model_json(const char **json, const uint8_t *raw, size_t len,
                                  const char *content_type, arena *a, err_info *err);

/* ingest_gunzip - inflate `in_len` bytes of gzip into `a` (*out, *out_len bytes), refusing to
 * produce more than `max` bytes: a gzip bomb stops at the limit, not at the end of the
 * stream. `what` names the body in messages ("report"). Errors ERR_INVALID (corrupt or
 * truncated gzip), ERR_TOO_LARGE (over `max`, or the arena's budget), ERR_INTERNAL (zlib). */
err_code ingest_gunzip(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len,
                       uint64_t max, const char *what, arena *a, err_info *err);

/* ingest_gzip_trusted_size - until called again with -1, every gzip decode on this thread
 * (ingest_gunzip, ingest_inflate_wbits with gzip's wbits) stops past `bytes` of output with
 * ERR_INVALID: the body's trailer said it decodes to `bytes` (ISIZE, RFC 1952 section 2.3.1),
 * and work was chosen by that (the server parses such a small report on its HTTP thread), so
 * a body that decodes to more is corrupt and must not cost more than it said. -1: no such
 * bound (the default). Bodies whose last four bytes are not their only member's ISIZE
 * (trailing bytes after the member) are refused under it. */
void ingest_gzip_trusted_size(int64_t bytes);

/* ingest_inflate_wbits - the same for any zlib wrapping: `wbits` as inflateInit2 takes it (16 +
 * MAX_WBITS gzip, MAX_WBITS zlib, -MAX_WBITS raw deflate), `encoding` names it in messages.
 * *data_error is set when the stream is not of that wrapping at all (nothing decoded), so
 * the caller may try another (HTTP `deflate` is sent both zlib-wrapped and raw). */
err_code ingest_inflate_wbits(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len,
                              int wbits, const char *encoding, uint64_t max,
                              const char *what, bool *data_error, arena *a, err_info *err);

/* ---- dSYM uploads ---------------------------------------------------------------------- */

/* One debug file of an upload, as answered to the client. */
typedef struct {
    store_dsym row;     /* the stored record (existing one for a re-upload) */
    const char *status; /* "created", "updated" (DWARF replaced a symbol-table-only record)
                           or "exists" (static strings) */
    uint32_t warnings;  /* parts of its DWARF left out as unreadable (dsym_built.warnings) */
    const char *warning; /* what was left out (in the arena), NULL when nothing was */
    const char *kind;   /* "dsym", or "uuidmap" / "bcsymbolmap" (an App Store dSYM's names:
                           row holds only uuid, name and arch "any") */
    uint32_t hidden;    /* dsym: names and paths its symcache still hides `__hidden#N_` */
    const char *symbol_map; /* dsym with hidden names: the UUID of the BCSymbolMap it needs
                               (static or arena), NULL otherwise */
    char original[37];  /* uuidmap: its DBGOriginalUUID */
    uint32_t names;     /* bcsymbolmap: its lines after the header */
} ingest_dsym_file;

/*
 * ingest_dsym_upload - build a symcache for every slice of every debug file in the
 * `ninputs` files at `inputs` (zip of .dSYM bundles, or Mach-O, thin or fat: dSYMs,
 * executables, dylibs) and record one row per debug file together with its symcache and the
 * upload part it came from, stored in Postgres (store_dsyms_record), all in one transaction.
 * Scratch files go to `work_dir` (existing, emptied by the caller). One symcache per UUID:
 * each slice is merged with the stored symcache of its UUID (symcache_merge) and recorded
 * only over the row it was merged with (a row changed meanwhile by a concurrent upload is
 * merged again, up to five times). A UUID already recorded keeps its record and symcache
 * ("exists"), unless this upload has DWARF and only a symbol table made it (the row becomes
 * this upload's, its symcache keeping the stored one's unwind info: "updated"), or this
 * upload brings unwind info the stored symcache lacks (an executable after its dSYM: the
 * stored names and row stay, the symcache gains the executable's unwind section: "updated").
 * New symcaches are also put into `cache` (this node's file cache; may be NULL). On any
 * error nothing is recorded. *out in `a`.
 * UUID maps and BCSymbolMaps (common/symbolmap) in the upload, alone or beside the dSYMs, are
 * stored too (one file each in *out); a hidden slice is built revealed when its map is in
 * the upload or stored, and dSYMs stored hidden before that this upload's maps now reveal
 * are rebuilt from their stored uploads (ingest_dsyms_reveal) after the commit.
 * Errors  ERR_INVALID (no Mach-O or map inside, corrupt Mach-O or zip, hostile zip entry
 *         names, a map that does not parse, a BCSymbolMap shorter than a stored dSYM that
 *         needs it: another build's), ERR_UNSUPPORTED, ERR_TOO_LARGE (zip and map limits),
 *         ERR_IO, ERR_STORE.
 */
err_code ingest_dsym_upload(ingest_dsym_file **out, size_t *n, store *s,
                            const char *const *inputs, size_t ninputs, const char *work_dir,
                            symfiles *cache, const dsym_options *opts, arena *a,
                            err_info *err);

/* ingest_dsym_upload_hashed - ingest_dsym_upload with the inputs' SHA-256s (64 lower-case hex
 * digits each, the names of their blobs) known already: `input_sha256[i]` is used for
 * inputs[i] instead of reading the file again (NULL, or a NULL entry: computed). The caller
 * vouches for them: they name the blobs stored. */
err_code ingest_dsym_upload_hashed(ingest_dsym_file **out, size_t *n, store *s,
                                   const char *const *inputs, const char *const *input_sha256,
                                   size_t ninputs, const char *work_dir, symfiles *cache,
                                   const dsym_options *opts, arena *a, err_info *err);

/* ingest_sha256_file_hex - hex SHA-256 of the file at `path`, streamed (the name of a blob).
 * Errors ERR_IO, ERR_INTERNAL (OpenSSL could not set up the digest). */
err_code ingest_sha256_file_hex(char out[65], const char *path, err_info *err);

/* ingest_fetch_upload - write stored upload blob `sha` (64 hex) to `path` (created, 0600) and
 * check its SHA-256. Errors ERR_IO (the file), ERR_STORE, ERR_NOT_FOUND (no such blob),
 * ERR_INTERNAL (the bytes do not hash to `sha`). Used by rebuilds and reveals. */
err_code ingest_fetch_upload(store *s, const char *sha, const char *path, err_info *err);

/*
 * ingest_symcache_carry - a symcache rebuilt from a row's stored original (`built_path`: a
 * reveal, `stacksift symcache rebuild`) keeps what the row's current symcache
 * (`current_sha256`, "" = none) got from another debug file of its UUID: its sections (an
 * executable's unwind info, merged into a dSYM's symcache: symcache_merge with the rebuilt
 * one's names). out_path = built_path when there is nothing to carry, else a merged file
 * written in `work_dir`. Errors ERR_STORE, ERR_IO, ERR_NOT_FOUND (the current blob is gone),
 * ERR_INTERNAL, ERR_INVALID (the two are not the same image).
 */
err_code ingest_symcache_carry(char out_path[4096], const char *built_path,
                               const char *current_sha256, store *s, const char *work_dir,
                               err_info *err);

/*
 * ingest_dsyms_reveal - rebuild every stored dSYM with hidden names whose BCSymbolMap is now
 * stored (store_dsyms_to_reveal) from its stored upload, revealed, and store it
 * (store_dsym_reveal: the reports waiting for it go back to the queue). Scratch files in
 * `work_dir` (existing). *revealed = how many were. New symcaches go into `cache` (may be
 * NULL). Errors ERR_STORE, ERR_IO; a dSYM that fails is left hidden (logged by the caller
 * through the returned count only).
 */
err_code ingest_dsyms_reveal(unsigned *revealed, store *s, const char *work_dir,
                             symfiles *cache, const dsym_options *opts, err_info *err);

/* Stored BCSymbolMaps for dsym_options.lookup: a hidden slice built with the options
 * ingest_maps_attach set is revealed with the map the store holds for it (each map fetched
 * and parsed once per ingest_maps). Owned: ingest_maps_free (NULL is a no-op), after the
 * builds that use it. */
typedef struct ingest_maps ingest_maps;
ingest_maps *ingest_maps_new(store *s, const char *work_dir);
void ingest_maps_attach(dsym_options *o, ingest_maps *m);
void ingest_maps_free(ingest_maps *m);

/* What `stacksift symcache rebuild` did with one debug file. */
typedef struct {
    char uuid[37];
    const char *status;  /* "rebuilt" (new symcache stored), "unchanged" (same bytes),
                            "changed" (another writer replaced it meanwhile: left alone),
                            "failed" (see err) */
    char sha256[65];     /* the symcache stored now */
    err_info err;
} ingest_rebuilt;

typedef void (*ingest_rebuilt_fn)(const ingest_rebuilt *r, void *ctx);

/*
 * ingest_symcache_rebuild - re-derive the symcache of every debug file with a stored original
 * upload (or only of `uuid`, if not NULL) with this binary's symcache builder, and store each
 * one that differs (store_dsym_symcache_replace: only if nobody changed the row meanwhile, so
 * it is safe while nodes serve; they pick up the new symcache within SYMFILES_ROW_TTL_MS).
 * Each original is fetched once into `work_dir` (existing; emptied as it goes); an App Store
 * dSYM is rebuilt revealed with its stored maps (ingest_maps). `fn` is called
 * once per debug file. *failed = how many failed.
 * Errors  ERR_STORE (listing failed), ERR_IO (work_dir); per-file errors go to `fn`.
 */
err_code ingest_symcache_rebuild(unsigned *failed, store *s, const char *uuid,
                                 const char *work_dir, const dsym_options *opts,
                                 ingest_rebuilt_fn fn, void *ctx, err_info *err);

#endif
