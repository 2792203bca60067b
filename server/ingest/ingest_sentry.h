/*
 * ingest_sentry - what the Sentry endpoints receive (POST /api/{project}/envelope/ and the
 * legacy /store/): decode the body (gzip, deflate), frame the envelope (common/envelope),
 * and turn its event item into the report row intake commits, with the event's id as the
 * report id. Other items are sorted and counted: sessions are handed to the caller, the rest
 * (attachments, transactions, replays, client reports, unknown types) are accepted and not
 * stored. No HTTP and no SQL here.
 */
#ifndef STACKSIFT_INGEST_INGEST_SENTRY_H
#define STACKSIFT_INGEST_INGEST_SENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store_reports.h"

struct pipeline;

/* Item kinds as counted in /metrics (stacksift_sentry_items_total{type=...}). */
typedef enum {
    INGEST_SENTRY_ITEM_EVENT,       /* "event": stored as a report */
    INGEST_SENTRY_ITEM_SESSION,     /* "session", "sessions": recorded for releases */
    INGEST_SENTRY_ITEM_ATTACHMENT,  /* "attachment": accepted, not kept (but see MINIDUMP) */
    INGEST_SENTRY_ITEM_MINIDUMP,    /* "minidump": an attachment of attachment_type
                                       event.minidump, stored as the event's report (also
                                       counted as an attachment) */
    INGEST_SENTRY_ITEM_IGNORED,     /* transaction, replays, profiles, client reports, spans,
                                       logs, check-ins, user reports: accepted, not stored */
    INGEST_SENTRY_ITEM_UNKNOWN,     /* any other type: accepted, not stored */
    INGEST_SENTRY_ITEM_KINDS
} ingest_sentry_item_kind;

/* ingest_sentry_item_kind_name - "event", "session", "attachment", "minidump", "ignored",
 * "unknown". */
const char *ingest_sentry_item_kind_name(ingest_sentry_item_kind k);

typedef struct {
    const char *content_encoding; /* NULL, "", "identity", "gzip" or "deflate" (zlib or raw) */
    const uint8_t *body;          /* the request body as received */
    size_t len;
    bool store_endpoint;          /* the body is one bare event (POST /api/{id}/store/), not an
                                     envelope */
    uint64_t max_body_bytes;      /* limit on the decoded body */
    uint64_t max_event_bytes;     /* limit on one event item */
    struct pipeline *pipe;        /* processes the event at intake when it can; NULL: never */
    int64_t project_id;           /* the project the event goes to (its key was checked) */
} ingest_sentry_input;

typedef struct {
    const uint8_t *payload;       /* the item's bytes (in the decoded body) */
    size_t len;
    bool aggregate;               /* "sessions" (aggregates) rather than "session" */
} ingest_sentry_session;

typedef struct {
    const uint8_t *decoded;       /* the decoded body (what a spool keeps), in `a` or borrowed */
    size_t decoded_len;
    const char *dsn;              /* the envelope header's dsn, NULL if none; also set when
                                     the envelope fails after a readable header line */
    bool has_event;               /* an event item was found: `row` and `id` are set */
    store_report_new row;         /* the event as a report row: raw is the event JSON, or the
                                     gzip'd body as received when that is smaller
                                     (ingest_raw_report reads either back) */
    char id[37];                  /* the report id: the event_id as a lower-case dashed UUID */
    char event_id[33];            /* the event_id as Sentry writes it: 32 lower-case hex */
    ingest_sentry_session *sessions; /* session items, in envelope order */
    size_t nsessions;
    size_t items[INGEST_SENTRY_ITEM_KINDS]; /* items of each kind */
} ingest_sentry_result;

/*
 * ingest_sentry_prepare - decode and frame one request body; parse its event (if any) into
 * out->row (status "received", format "sentry" for a Sentry event, content type
 * application/json, or INGEST_SENTRY_ENVELOPE_TYPE when the row keeps a gzip'd envelope as
 * received; processed at intake when in->pipe can); with a minidump attachment, the dump
 * read with the event (format "minidump", the whole envelope stored as
 * INGEST_SENTRY_ENVELOPE_TYPE). The report id is the event's
 * `event_id` (the envelope header's, else the event's own; one is made up when neither
 * gives one: the store endpoint of an SDK that sends none). An envelope with no event
 * (sessions only, a transaction) is fine: has_event false. Everything lives in `a` or
 * borrows in->body.
 * Errors  ERR_UNSUPPORTED (content encoding), ERR_INVALID (corrupt or truncated gzip/deflate,
 *         framing errors of envelope_parse, two event items, an event_id that is not a
 *         UUID, an event that does not parse: the message names the problem),
 *         ERR_TOO_LARGE (decoded body over max_body_bytes, an event over max_event_bytes,
 *         over 1,000 items, the arena's budget).
 */
err_code ingest_sentry_prepare(ingest_sentry_result *out, const ingest_sentry_input *in, arena *a,
                               err_info *err);

/* ingest_inflate - decode `in_len` bytes of Content-Encoding `encoding` ("gzip", or
 * "deflate": zlib-wrapped as HTTP means it, or raw deflate as some clients send it) into `a`,
 * refusing to produce more than `max` bytes (a bomb stops at the limit). `what` names the
 * body in messages. Errors ERR_INVALID (corrupt, truncated), ERR_TOO_LARGE, ERR_INTERNAL. */
err_code ingest_inflate(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len,
                        const char *encoding, uint64_t max, const char *what, arena *a,
                        err_info *err);

#endif
