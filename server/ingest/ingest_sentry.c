/*
 * ingest_sentry.c - Sentry envelopes and store-endpoint events in (ingest_sentry.h).
 *
 * Relay's rules followed: an envelope holds at most one event; the envelope header's
 * event_id names it (else the event's own); attachments and other items travel beside it and
 * are never a reason to refuse it. Item types Relay knows but stacksift does not store
 * (transactions, replays, profiles, client reports, spans, logs, check-ins, user feedback)
 * are counted as "ignored", any other type as "unknown".
 */
#include "ingest/ingest_sentry.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "base/jsonr.h"
#include "envelope/envelope.h"
#include "ingest/ingest.h"
#include "ingest/ingest_minidump.h"

const char *ingest_sentry_item_kind_name(ingest_sentry_item_kind k)
{
    switch (k) {
    case INGEST_SENTRY_ITEM_EVENT:      return "event";
    case INGEST_SENTRY_ITEM_SESSION:    return "session";
    case INGEST_SENTRY_ITEM_ATTACHMENT: return "attachment";
    case INGEST_SENTRY_ITEM_MINIDUMP:   return "minidump";
    case INGEST_SENTRY_ITEM_IGNORED:    return "ignored";
    case INGEST_SENTRY_ITEM_UNKNOWN:    return "unknown";
    case INGEST_SENTRY_ITEM_KINDS:      break;
    }
    return "unknown";
}

static ingest_sentry_item_kind kind_of(const char *type)
{
    static const char *const IGNORED[] = {
        "transaction", "replay_event", "replay_recording", "replay_video", "profile",
        "profile_chunk", "client_report", "span", "spans", "log", "otel_log", "check_in",
        "user_report", "feedback", "statsd", "metric_buckets", "form_data", "security",
        "raw_security", "nel", "unreal_report", "otel_span",
    };
    if (strcmp(type, "event") == 0)
        return INGEST_SENTRY_ITEM_EVENT;
    if (strcmp(type, "session") == 0 || strcmp(type, "sessions") == 0)
        return INGEST_SENTRY_ITEM_SESSION;
    if (strcmp(type, "attachment") == 0)
        return INGEST_SENTRY_ITEM_ATTACHMENT;
    for (size_t i = 0; i < sizeof IGNORED / sizeof IGNORED[0]; i++)
        if (strcmp(type, IGNORED[i]) == 0)
            return INGEST_SENTRY_ITEM_IGNORED;
    return INGEST_SENTRY_ITEM_UNKNOWN;
}

err_code ingest_inflate(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len,
                        const char *encoding, uint64_t max, const char *what, arena *a,
                        err_info *err)
{
    bool gzip = strcmp(encoding, "gzip") == 0, data_error = false;
    *out = NULL;
    *out_len = 0;
    if (in_len > UINT32_MAX)
        return err_set(err, ERR_TOO_LARGE, "%s body of %zu bytes is too large to decode",
                       encoding, in_len);
    /* gzip: the gzip wrapper; deflate: zlib's or gzip's (32 = detect), then raw deflate */
    err_code rc = ingest_inflate_wbits(out, out_len, in, in_len,
                                       gzip ? 16 + MAX_WBITS : 32 + MAX_WBITS, encoding, max,
                                       what, &data_error, a, err);
    if (rc != ERR_OK && !gzip && data_error)
        rc = ingest_inflate_wbits(out, out_len, in, in_len, -MAX_WBITS, encoding, max, what,
                                  &data_error, a, err);
    return rc;
}

/* The event_id of an event payload, NULL if it has none (or is no JSON object). */
static const char *payload_event_id(const uint8_t *p, size_t n, arena *a)
{
    const jsonr_value *j = jsonr_parse(a, (const char *)p, n, JSONR_REPLACE_INVALID, NULL, NULL);
    return jsonr_string(jsonr_get(j, "event_id"));
}

/* out->id and out->event_id from `given` (a UUID in either form), or a new random one. */
static err_code set_event_id(ingest_sentry_result *out, const char *given, err_info *err)
{
    if (given != NULL) {
        if (!store_report_id_norm(out->id, given))
            return err_set(err, ERR_INVALID, "event_id '%.64s' is not a UUID (32 hex digits)",
                           given);
    } else {
        uint8_t u[16];
        if (RAND_bytes(u, sizeof u) != 1)
            return err_set(err, ERR_INTERNAL, "no random bytes for an event id");
        u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
        u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
        char hex[33];
        for (int i = 0; i < 16; i++)
            snprintf(hex + 2 * i, 3, "%02x", u[i]);
        store_report_id_norm(out->id, hex);
    }
    size_t k = 0;
    for (const char *p = out->id; *p; p++)
        if (*p != '-')
            out->event_id[k++] = *p;
    out->event_id[k] = '\0';
    return ERR_OK;
}

/* The event (n bytes at p) as the report row; `header_id` is the envelope's event_id. */
static err_code prepare_event(ingest_sentry_result *out, const uint8_t *p, size_t n,
                              const char *header_id, const ingest_sentry_input *in, arena *a,
                              err_info *err)
{
    if (n > in->max_event_bytes)
        return err_set(err, ERR_TOO_LARGE, "event of %zu bytes is over the limit of %llu bytes",
                       n, (unsigned long long)in->max_event_bytes);
    ingest_report_input rin = {
        .content_type = "application/json",
        .content_encoding = NULL,
        .body = p,
        .len = n,
        .max_report_bytes = in->max_event_bytes,
        .pipe = in->pipe,
        .project_id = in->project_id,
    };
    store_report_new *rows;
    size_t nrows;
    err_code rc = ingest_report_prepare(&rows, &nrows, &rin, a, err);
    if (rc != ERR_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return err_set(err, rc, "event: %s", msg);
    }
    if (nrows != 1)
        return err_set(err, ERR_INVALID, "event item holds %zu reports (a MetricKit payload?), "
                       "not one event", nrows);
    const char *id = header_id != NULL ? header_id : payload_event_id(p, n, a);
    rc = set_event_id(out, id, err);
    if (rc != ERR_OK)
        return rc;
    out->row = rows[0];
    out->has_event = true;
    return ERR_OK;
}

/* An envelope with a minidump attachment (sentry-native, sentry-electron, and the multipart
 * uploads stored as envelopes): the dump is the report of the event beside it (`event`, NULL
 * if none), stored as the whole envelope (`len` bytes at `body`, or the gzip'd body as
 * received when smaller). The report id is the header's event_id, else the event's. */
static err_code prepare_minidump(ingest_sentry_result *out, const envelope_item *dump,
                                 const envelope_item *event, const char *header_id,
                                 const uint8_t *body, size_t len, const ingest_sentry_input *in,
                                 arena *a, err_info *err)
{
    if (dump->payload_len > in->max_event_bytes)
        return err_set(err, ERR_TOO_LARGE, "minidump of %zu bytes is over the limit of %llu "
                       "bytes", dump->payload_len, (unsigned long long)in->max_event_bytes);
    if (event != NULL && event->payload_len > in->max_event_bytes)
        return err_set(err, ERR_TOO_LARGE, "event of %zu bytes is over the limit of %llu bytes",
                       event->payload_len, (unsigned long long)in->max_event_bytes);
    out->items[INGEST_SENTRY_ITEM_MINIDUMP]++;
    err_code rc = ingest_minidump_row(&out->row, body, len, INGEST_SENTRY_ENVELOPE_TYPE,
                                      (const uint8_t *)dump->payload, dump->payload_len,
                                      event ? event->payload : NULL, event ? event->payload_len : 0,
                                      in->project_id, in->pipe, a, err);
    if (rc != ERR_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return err_set(err, rc, "minidump attachment: %s", msg);
    }
    const char *id = header_id;
    if (id == NULL && event != NULL)
        id = payload_event_id((const uint8_t *)event->payload, event->payload_len, a);
    rc = set_event_id(out, id, err);
    if (rc != ERR_OK)
        return rc;
    ingest_keep_body(&out->row, in->body, in->len);
    out->has_event = true;
    return ERR_OK;
}

err_code ingest_sentry_prepare(ingest_sentry_result *out, const ingest_sentry_input *in, arena *a,
                               err_info *err)
{
    memset(out, 0, sizeof *out);
    const uint8_t *body = in->body;
    size_t len = in->len;
    const char *enc = in->content_encoding;
    if (enc != NULL && enc[0] != '\0' && strcmp(enc, "identity") != 0) {
        if (strcmp(enc, "gzip") != 0 && strcmp(enc, "deflate") != 0)
            return err_set(err, ERR_UNSUPPORTED, "content encoding '%s' is not accepted: send "
                           "gzip, deflate or identity", enc);
        uint8_t *dec;
        err_code rc = ingest_inflate(&dec, &len, in->body, in->len, enc, in->max_body_bytes,
                                     in->store_endpoint ? "event" : "envelope", a, err);
        if (rc != ERR_OK)
            return rc;
        body = dec;
    }
    if (len > in->max_body_bytes)
        return err_set(err, ERR_TOO_LARGE, "%s of %zu bytes is over the limit of %llu bytes",
                       in->store_endpoint ? "event" : "envelope", len,
                       (unsigned long long)in->max_body_bytes);
    out->decoded = body;
    out->decoded_len = len;
    /* A gzip'd body (what sentry-cocoa sends) is stored as received when it is smaller than
     * the event (ingest_keep_body): an envelope whole, with its own content type. */
    if (in->store_endpoint) {
        out->items[INGEST_SENTRY_ITEM_EVENT] = 1;
        err_code rc = prepare_event(out, body, len, NULL, in, a, err);
        if (rc == ERR_OK)
            ingest_keep_body(&out->row, in->body, in->len);
        return rc;
    }

    envelope *env;
    envelope_limits lim = {0, (size_t)(in->max_body_bytes < SIZE_MAX ? in->max_body_bytes : 0)};
    err_code rc = envelope_parse(&env, (const char *)body, len, &lim, a, err);
    if (rc != ERR_OK) {
        /* the header line alone may still name the DSN key: the caller checks it first */
        const char *nl = memchr(body, '\n', len);
        envelope *head;
        err_info herr = {0};
        if (nl != NULL && envelope_parse(&head, (const char *)body, (size_t)(nl - (const char *)body),
                                         &lim, a, &herr) == ERR_OK)
            out->dsn = head->dsn;
        return rc;
    }
    out->dsn = env->dsn;
    size_t nsessions = 0;
    const envelope_item *dump = NULL;
    for (size_t i = 0; i < env->nitems; i++) {
        nsessions += kind_of(env->items[i].type) == INGEST_SENTRY_ITEM_SESSION;
        if (dump == NULL && ingest_is_minidump_item(env->items[i].type,
                                                    env->items[i].attachment_type))
            dump = &env->items[i];
    }
    const envelope_item *event = NULL;
    if (nsessions > 0) {
        out->sessions = arena_alloc_array(a, nsessions, sizeof *out->sessions, err);
        if (out->sessions == NULL)
            return ERR_TOO_LARGE;
    }
    for (size_t i = 0; i < env->nitems; i++) {
        const envelope_item *it = &env->items[i];
        ingest_sentry_item_kind k = kind_of(it->type);
        out->items[k]++;
        if (k == INGEST_SENTRY_ITEM_EVENT && dump != NULL) {
            /* the minidump is the event's report: read with it below */
            if (event != NULL)
                return err_set(err, ERR_INVALID, "envelope holds more than one event item");
            event = it;
        } else if (k == INGEST_SENTRY_ITEM_EVENT) {
            if (out->has_event)
                return err_set(err, ERR_INVALID, "envelope holds more than one event item");
            rc = prepare_event(out, (const uint8_t *)it->payload, it->payload_len,
                               env->event_id, in, a, err);
            if (rc != ERR_OK)
                return rc;
            if (ingest_keep_body(&out->row, in->body, in->len))
                out->row.content_type = INGEST_SENTRY_ENVELOPE_TYPE;
        } else if (k == INGEST_SENTRY_ITEM_SESSION) {
            out->sessions[out->nsessions++] = (ingest_sentry_session){
                (const uint8_t *)it->payload, it->payload_len, strcmp(it->type, "sessions") == 0};
        }
    }
    if (dump != NULL)
        return prepare_minidump(out, dump, event, env->event_id, body, len, in, a, err);
    return ERR_OK;
}
