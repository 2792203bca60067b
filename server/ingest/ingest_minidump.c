/*
 * ingest_minidump - minidumps in (ingest_minidump.h): the report row of a dump, the envelope a
 * multipart upload is stored as, and reading a stored dump back with the event it came with.
 *
 * One stored form for every dump that comes with more than its own bytes: a Sentry envelope
 * holding an `event` item (what the upload said: a Sentry event, or the multipart form fields
 * made into one as Sentry makes them) and an `attachment` item of attachment_type
 * `event.minidump` (the dump, byte for byte). An envelope sent by sentry-native is stored as it
 * came; a multipart upload is stored as the envelope ingest_minidump_envelope builds. A dump
 * sent alone is stored as it is (application/x-dmp).
 */
#include "ingest/ingest_minidump.h"

#include <jansson.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "crashreport/crashreport.h"
#include "envelope/envelope.h"
#include "ingest/ingest.h"
#include "ingest/pipeline.h"

/* ---- form fields -> Sentry event ------------------------------------------------------- */

/* The path of a "sentry[a][b]" key: "a", "b" into parts (at most `cap`); the count, 0 when
 * the key is not of that form. */
static size_t bracket_path(char parts[][INGEST_FORM_MAX_KEY], size_t cap, const char *key)
{
    const char *p = strchr(key, '[');
    size_t n = 0;
    while (p != NULL && *p == '[' && n < cap) {
        const char *end = strchr(p, ']');
        if (end == NULL || (size_t)(end - p - 1) >= INGEST_FORM_MAX_KEY || end == p + 1)
            return 0;
        memcpy(parts[n], p + 1, (size_t)(end - p - 1));
        parts[n][end - p - 1] = '\0';
        n++;
        p = end + 1;
    }
    return p != NULL && *p == '\0' ? n : 0;
}

/* The Sentry event of a multipart upload's form fields, as Sentry reads them: a `sentry`
 * field holding an event as JSON is the base; `sentry[a][b]=v` sets event.a.b; every other
 * field goes to event.extra under its own name (Crashpad's `prod`, `ver`, Electron's
 * `_productName`, `_version`, `guid`...). JSON text in `a`. */
static err_code event_of_fields(const char **out, size_t *out_len, const ingest_form_field *f,
                                size_t n, arena *a, err_info *err)
{
    json_t *ev = NULL;
    *out = NULL;
    *out_len = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(f[i].key, "sentry") == 0) {
            json_t *j = json_loadb(f[i].value, f[i].value_len, JSON_REJECT_DUPLICATES, NULL);
            if (!json_is_object(j)) {
                json_decref(j);
                json_decref(ev);
                return err_set(err, ERR_INVALID, "form field \"sentry\" must hold a JSON object "
                               "(a Sentry event)");
            }
            json_decref(ev);
            ev = j;
        }
    if (ev == NULL)
        ev = json_object();
    json_t *extra = json_object();
    err_code rc = ERR_OK;
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        if (strcmp(f[i].key, "sentry") == 0)
            continue;
        json_t *v = json_stringn(f[i].value, f[i].value_len);
        if (v == NULL) { /* not UTF-8: kept out rather than refused */
            continue;
        }
        char parts[8][INGEST_FORM_MAX_KEY];
        size_t np = strncmp(f[i].key, "sentry[", 7) == 0
                        ? bracket_path(parts, sizeof parts / sizeof parts[0], f[i].key) : 0;
        if (np == 0) {
            json_object_set_new(extra, f[i].key, v);
            continue;
        }
        json_t *at = ev;
        for (size_t k = 0; k + 1 < np && at != NULL; k++) {
            json_t *next = json_object_get(at, parts[k]);
            if (next == NULL) {
                next = json_object();
                json_object_set_new(at, parts[k], next);
            }
            at = json_is_object(next) ? next : NULL;
        }
        if (at == NULL) {
            json_decref(v);
            rc = err_set(err, ERR_INVALID, "form field \"%.128s\" sets a key inside a value "
                         "that is not an object", f[i].key);
            break;
        }
        json_object_set_new(at, parts[np - 1], v);
    }
    if (rc == ERR_OK && json_object_size(extra) > 0) {
        json_t *old = json_object_get(ev, "extra");
        if (json_is_object(old))
            json_object_update_missing(old, extra);
        else
            json_object_set(ev, "extra", extra);
    }
    json_decref(extra);
    if (rc == ERR_OK) {
        char *text = json_dumps(ev, JSON_COMPACT);
        *out = text ? arena_strdup(a, text, err) : NULL;
        free(text);
        *out_len = *out ? strlen(*out) : 0;
        if (*out == NULL)
            rc = err_set(err, ERR_TOO_LARGE, "the upload's form fields are too large");
    }
    json_decref(ev);
    return rc;
}

err_code ingest_minidump_envelope(const uint8_t **out, size_t *out_len, const uint8_t *dump,
                                  size_t dump_len, const char *filename,
                                  const ingest_form_field *fields, size_t nfields, arena *a,
                                  err_info *err)
{
    *out = NULL;
    *out_len = 0;
    if (nfields > INGEST_FORM_MAX_FIELDS)
        return err_set(err, ERR_TOO_LARGE, "the upload has %zu form fields, over the limit of %d",
                       nfields, INGEST_FORM_MAX_FIELDS);
    const char *event = NULL;
    size_t event_len = 0;
    err_code rc = event_of_fields(&event, &event_len, fields, nfields, a, err);
    if (rc != ERR_OK)
        return rc;
    uint8_t u[16];
    if (RAND_bytes(u, sizeof u) != 1)
        return err_set(err, ERR_INTERNAL, "no random bytes for an event id");
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    char id[33];
    for (int i = 0; i < 16; i++)
        snprintf(id + 2 * i, 3, "%02x", u[i]);
    /* the file name as a JSON string: only safe characters kept */
    char name[128];
    size_t k = 0;
    for (const char *p = filename ? filename : "upload_file_minidump"; *p && k + 1 < sizeof name; p++)
        name[k++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '_';
    name[k] = '\0';
    buf b;
    buf_init(&b);
    buf_printf(&b, "{\"event_id\":\"%s\"}\n{\"type\":\"event\",\"length\":%zu}\n", id, event_len);
    buf_append(&b, event, event_len);
    buf_printf(&b, "\n{\"type\":\"attachment\",\"length\":%zu,\"attachment_type\":"
               "\"event.minidump\",\"filename\":\"%s\"}\n", dump_len, name);
    buf_append(&b, dump, dump_len);
    buf_putc(&b, '\n');
    uint8_t *copy = arena_alloc(a, b.len, err);
    if (copy != NULL) {
        memcpy(copy, b.data, b.len);
        *out = copy;
        *out_len = b.len;
    }
    buf_reset(&b);
    return copy != NULL ? ERR_OK : ERR_TOO_LARGE;
}

/* ---- rows ------------------------------------------------------------------------------- */

err_code ingest_minidump_row(store_report_new *row, const uint8_t *raw, size_t raw_len,
                             const char *content_type, const uint8_t *dump, size_t dump_len,
                             const char *event, size_t event_len, int64_t project_id,
                             struct pipeline *pipe, arena *a, err_info *err)
{
    memset(row, 0, sizeof *row);
    if (!crashreport_is_minidump(dump, dump_len))
        return err_set(err, ERR_INVALID, "the minidump does not start with the \"MDMP\" magic");
    /* The row needs the metadata, and the dump is refused only when it has no stack at all.
     * Walked and processed here when every in-app image's symcache is at hand, as a text
     * report is; else read for its row alone, and the workers walk it with its images'
     * unwind info (pipeline_minidump_at_intake). */
    crashreport *r;
    bool processed = false;
    store_outcome po;
    err_code rc = pipeline_minidump_at_intake(&r, &processed, &po, pipe, dump, dump_len, event,
                                              event_len, a, err);
    if (rc != ERR_OK)
        return rc;
    row->status = "received";
    row->format = crashreport_format_name(r->format);
    row->content_type = content_type;
    row->raw = raw;
    row->raw_len = raw_len;
    row->app = r->meta.app_name ? r->meta.app_name : r->meta.process;
    row->app_version = r->meta.app_version;
    row->os_version = r->meta.os_version;
    row->project_id = project_id ? project_id : STORE_PROJECT_DEFAULT;
    if (processed)
        row->processed = ingest_processed_of(&po, a);
    return ERR_OK;
}

/* ---- stored rows ------------------------------------------------------------------------ */

err_code ingest_stored_unpack(ingest_stored *out, const uint8_t *raw, size_t len,
                              const char *content_type, arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    out->report = raw;
    out->len = len;
    if (ingest_is_gzip(raw, len)) {
        uint8_t *dec;
        err_code rc = ingest_gunzip(&dec, &out->len, raw, len, INGEST_STORED_MAX, "stored report",
                                    a, err);
        if (rc != ERR_OK)
            return rc;
        out->report = dec;
    }
    if (content_type == NULL || strcmp(content_type, INGEST_SENTRY_ENVELOPE_TYPE) != 0)
        return ERR_OK;
    envelope *env;
    envelope_limits lim = {0, SIZE_MAX};
    err_code rc = envelope_parse(&env, (const char *)out->report, out->len, &lim, a, err);
    if (rc != ERR_OK)
        return rc;
    const envelope_item *event = NULL, *dump = NULL;
    for (size_t i = 0; i < env->nitems; i++) {
        const envelope_item *it = &env->items[i];
        if (strcmp(it->type, "event") == 0 && event == NULL)
            event = it;
        else if (ingest_is_minidump_item(it->type, it->attachment_type) && dump == NULL)
            dump = it;
    }
    if (dump != NULL) {
        out->report = (const uint8_t *)dump->payload;
        out->len = dump->payload_len;
        out->minidump = true;
        if (event != NULL) {
            out->event = event->payload;
            out->event_len = event->payload_len;
        }
        return ERR_OK;
    }
    if (event == NULL)
        return err_set(err, ERR_INVALID, "the stored envelope holds no event item");
    out->report = (const uint8_t *)event->payload;
    out->len = event->payload_len;
    return ERR_OK;
}

err_code ingest_stored_parse(crashreport **out, const ingest_stored *s, arena *a, err_info *err)
{
    if (crashreport_is_minidump(s->report, s->len)) {
        crashreport_minidump_options o = {.event_json = s->event, .event_len = s->event_len};
        return crashreport_parse_minidump(out, s->report, s->len, &o, a, err);
    }
    return crashreport_parse(out, (const char *)s->report, s->len, a, err);
}

err_code ingest_stored_read(crashreport **out, const uint8_t *raw, size_t len,
                            const char *content_type, arena *a, err_info *err)
{
    ingest_stored s;
    err_code rc = ingest_stored_unpack(&s, raw, len, content_type, a, err);
    if (rc != ERR_OK)
        return rc;
    return ingest_stored_parse(out, &s, a, err);
}

bool ingest_is_minidump_item(const char *type, const char *attachment_type)
{
    return type != NULL && strcmp(type, "attachment") == 0 && attachment_type != NULL &&
           strcmp(attachment_type, "event.minidump") == 0;
}
