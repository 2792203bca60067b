/*
 * ingest_minidump - minidumps (Breakpad, Crashpad) in, and stored reports read back.
 *
 * A dump sent alone (POST /api/v1/reports, application/x-dmp or recognized by its "MDMP"
 * magic) is stored as it is. A dump sent with more (a Crashpad / Electron / Backtrace
 * multipart upload with its form fields; a Sentry envelope with an `event` item and an
 * `event.minidump` attachment) is stored as a Sentry envelope (INGEST_SENTRY_ENVELOPE_TYPE):
 * the event says what the upload said, the attachment holds the dump byte for byte.
 * ingest_stored_unpack reads either form back. No HTTP and no SQL here.
 */
#ifndef STACKSIFT_INGEST_INGEST_MINIDUMP_H
#define STACKSIFT_INGEST_INGEST_MINIDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "crashreport/crashreport.h"
#include "store/store_queue.h"
#include "store/store_reports.h"

struct pipeline;

/* The media type a minidump alone is stored and served as (Breakpad's, Crashpad's). */
#define INGEST_MINIDUMP_CONTENT_TYPE "application/x-dmp"

/* The multipart part a minidump upload carries its dump in (Crashpad's uploader, Electron's
 * crashReporter, Backtrace, BugSplat, Sentry's minidump endpoint). */
#define INGEST_MINIDUMP_PART "upload_file_minidump"

/* Bounds on a multipart upload's other fields. */
#define INGEST_FORM_MAX_FIELDS 256     /* fields beside the dump */
#define INGEST_FORM_MAX_KEY 256        /* bytes of a field name, NUL included */
#define INGEST_FORM_MAX_VALUE 65536    /* bytes of one field's value */

/* One form field of a multipart upload (not a file part). */
typedef struct {
    const char *key;   /* NUL-terminated, shorter than INGEST_FORM_MAX_KEY */
    const char *value; /* value_len bytes, not necessarily NUL-terminated */
    size_t value_len;
} ingest_form_field;

/*
 * ingest_minidump_envelope - the Sentry envelope a multipart minidump upload is stored as: a
 * header with a new event_id, an `event` item made of the form fields as Sentry reads them (a
 * `sentry` field holding a JSON event is the base, `sentry[a][b]=v` sets event.a.b, e.g.
 * sentry[release], sentry[environment], sentry[tags][k], sentry[user][id]; any other field
 * goes to event.extra under its own name), and an `attachment` item of attachment_type
 * `event.minidump` holding the `dump_len` bytes at `dump` (`filename` as sent, may be NULL).
 * *out (in `a`) of *out_len bytes.
 * Errors  ERR_INVALID (a `sentry` field that is no JSON object, a key path through a value),
 *         ERR_TOO_LARGE (over INGEST_FORM_MAX_FIELDS fields, the arena's budget),
 *         ERR_INTERNAL (no random bytes).
 */
err_code ingest_minidump_envelope(const uint8_t **out, size_t *out_len, const uint8_t *dump,
                                  size_t dump_len, const char *filename,
                                  const ingest_form_field *fields, size_t nfields, arena *a,
                                  err_info *err);

/*
 * ingest_minidump_row - the row intake commits for a minidump (`dump_len` bytes at `dump`)
 * sent with the Sentry event `event` (JSON, NULL if none): parsed now with it
 * (crashreport_parse_minidump) for its 4xx and its summary columns (app: the event's app name,
 * else the annotations' product, else the executable's name), and processed now when `pipe`
 * (NULL: never) can walk it with symcaches open already (pipeline_minidump_at_intake: then
 * row->processed), else left to the workers, who walk it with its images' unwind info;
 * stored as the `raw_len` bytes at `raw` of type `content_type` (the dump itself, or the
 * envelope holding it). Strings in `a` or borrowed.
 * Errors  ERR_INVALID (no "MDMP" magic, a header or stream directory that does not read, no
 *         thread that can be walked: the message says which), ERR_TOO_LARGE.
 */
err_code ingest_minidump_row(store_report_new *row, const uint8_t *raw, size_t raw_len,
                             const char *content_type, const uint8_t *dump, size_t dump_len,
                             const char *event, size_t event_len, int64_t project_id,
                             struct pipeline *pipe, arena *a, err_info *err);

/* ingest_is_minidump_item - whether an envelope item (type, attachment_type; either may be
 * NULL) is a minidump attachment: type "attachment", attachment_type "event.minidump". */
bool ingest_is_minidump_item(const char *type, const char *attachment_type);

/* A stored report's parts (ingest_stored_unpack). */
typedef struct {
    const uint8_t *report; /* the report's bytes: the text or JSON, the .plcrash, the dump */
    size_t len;
    bool minidump;         /* report is a minidump from an envelope */
    const char *event;     /* the Sentry event a minidump came with (JSON), NULL if none */
    size_t event_len;
} ingest_stored;

/*
 * ingest_stored_unpack - a stored row's report from its raw bytes and content type: gzip'd
 * bytes inflated; a stored envelope gives its minidump attachment (with its event item as
 * `event`), else its event item. Everything borrows `raw` or lives in `a`.
 * Errors  ERR_INVALID (corrupt gzip, an envelope that does not frame or holds no event and no
 *         minidump), ERR_TOO_LARGE.
 */
err_code ingest_stored_unpack(ingest_stored *out, const uint8_t *raw, size_t len,
                              const char *content_type, arena *a, err_info *err);

/* ingest_stored_parse - the report of an unpacked row: a minidump with its event
 * (crashreport_parse_minidump), anything else by crashreport_parse. Errors as those. */
err_code ingest_stored_parse(crashreport **out, const ingest_stored *s, arena *a, err_info *err);

/* ingest_stored_read - ingest_stored_unpack then ingest_stored_parse. */
err_code ingest_stored_read(crashreport **out, const uint8_t *raw, size_t len,
                            const char *content_type, arena *a, err_info *err);

/* ingest_processed_of - a report's outcome processed at intake as its row's
 * store_report_processed (in `a`); NULL if the arena is full (stored as received). */
const store_report_processed *ingest_processed_of(const store_outcome *o, arena *a);

#endif
