/*
 * envelope - Sentry envelope framing: the envelope header line and the items (an item header
 * line, then a payload of `length` bytes or, without `length`, up to the next newline), read
 * as Relay reads them. Payloads are not interpreted: an `event` item's payload is a Sentry
 * event (crashreport_parse reads it), the rest is up to the caller.
 *
 *   Envelope = Header "\n" { Item } [ "\n" ]     Item = Header "\n" Payload [ "\n" ]
 *   Header   = one line holding a JSON object
 *   Payload  = `length` bytes when the item header has "length", else the bytes up to the
 *              next "\n" or the end
 * Blank lines between items are skipped; the newline after a payload is optional at the end.
 *
 * Bounds against hostile input: at most `max_items` items, each payload at most
 * `max_item_bytes`, header lines at most ENVELOPE_MAX_HEADER bytes and nested at most as
 * deep as base/jsonr allows (JSONR_MAX_DEPTH), a `length` must lie inside the envelope. Every byte is
 * looked at a bounded number of times, whatever the input.
 *
 * Source: develop.sentry.dev/sdk/envelopes (format), Relay's envelope reader (what it accepts).
 */
#ifndef STACKSIFT_ENVELOPE_ENVELOPE_H
#define STACKSIFT_ENVELOPE_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"

#define ENVELOPE_MAX_HEADER 65536          /* bytes of one header line */
#define ENVELOPE_DEFAULT_MAX_ITEMS 1000    /* items of one envelope */
#define ENVELOPE_DEFAULT_MAX_ITEM_BYTES (20u << 20) /* bytes of one payload */

/* One item; strings are NUL-terminated copies in the arena, NULL when the header lacks them;
 * payload points into the caller's data (no NUL). */
typedef struct {
    const char *type;            /* "event", "session", "sessions", "attachment", ... */
    const char *content_type;    /* "application/json", NULL if not given */
    const char *filename;        /* attachments: the file name, NULL if not given */
    const char *attachment_type; /* attachments: "event.attachment", ..., NULL if not given */
    const char *payload;         /* borrowed from the data passed to envelope_parse */
    size_t payload_len;          /* bytes */
} envelope_item;

typedef struct {
    const char *event_id;        /* the envelope header's event_id as given, NULL if none */
    const char *dsn;             /* the envelope header's dsn, NULL if none */
    envelope_item *items;        /* in envelope order */
    size_t nitems;
} envelope;

typedef struct {
    size_t max_items;      /* 0 = ENVELOPE_DEFAULT_MAX_ITEMS */
    size_t max_item_bytes; /* 0 = ENVELOPE_DEFAULT_MAX_ITEM_BYTES */
} envelope_limits;

/*
 * envelope_parse - frame `len` bytes of an (uncompressed) envelope.
 * out     allocated in `a`, valid until arena_free(a); payloads point into `data`, which must
 *         outlive it. `lim` may be NULL (defaults).
 * Errors  ERR_INVALID   a header line that is no JSON object (too deep, not UTF-8, empty),
 *                       an item without "type", a "length" that is not a non-negative integer
 *                       or runs past the end, bytes after a payload other than a newline;
 *                       the message names the item (0-based) and the problem;
 *         ERR_TOO_LARGE more than max_items items, a payload over max_item_bytes, a header
 *                       line over ENVELOPE_MAX_HEADER, the arena's budget.
 * Thread-safe: any number may run at once (each with its own arena).
 */
err_code envelope_parse(envelope **out, const char *data, size_t len, const envelope_limits *lim,
                        arena *a, err_info *err);

#endif
