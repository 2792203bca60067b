/*
 * routes_reports - /api/v1/reports: POST a report (ingest_report_prepare: decode, parse, a
 * MetricKit or Bugsnag payload split into one report per diagnostic or event; then
 * store_intake's group commit, the connection suspended meanwhile; 202 once every row is
 * durable) or a multipart batch as KSCrash's standard sink sends it (a "reports" part holding
 * a JSON array: each report accepted or refused on its own, ingest_report_prepare_batch); GET
 * one by id (JSON with the pipeline's results, or ?format=text for Apple crash text
 * symbolicated now) and GET its raw bytes. Report ids follow store_report_id_norm (32 or 36
 * hex-digit forms). Shapes in docs/openapi.yaml.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "http/http_internal.h"
#include "http/metrics.h"
#include "ingest/ingest.h"
#include "ingest/ingest_minidump.h"
#include "store/store_reports.h"

/* One row's place in the request, the context of its commit callback. */
typedef struct {
    http_request *r;
    size_t i;
} intake_slot;

/* The group commit's verdict on one row, on a committer thread: record it; the last row's
 * verdict hands the connection back to libmicrohttpd, which calls handle_report_post again to
 * answer. `r` may be gone as soon as the connection is resumed. */
static void report_committed(void *ctx, err_code rc, const char *id, const err_info *err)
{
    intake_slot *slot = ctx;
    http_request *r = slot->r;
    if (rc == ERR_OK && id != NULL) { /* a row that was never queued has no id */
        memcpy(r->intake_ids[slot->i], id, sizeof r->intake_ids[0]);
    } else {
        int expected = 0;
        if (atomic_compare_exchange_strong(&r->intake_failed, &expected, 1)) {
            r->intake_rc = rc;
            r->err = *err;
        }
    }
    if (atomic_fetch_sub(&r->intake_pending, 1) == 1) {
        r->intake = INTAKE_DONE;
        MHD_resume_connection(r->conn);
    }
}

/* 202 {"id","status","format"}, and for a MetricKit payload of several diagnostics
 * "reports": [{"id","format"}...], one per stored report (id is the first). */
static enum MHD_Result report_accepted(http_request *r)
{
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "id", r->intake_ids[0]);
    jsonw_kstr(&w, "status", r->intake_rows[0].status);
    jsonw_kstr(&w, "format", r->intake_rows[0].format);
    if (r->nintake > 1) {
        jsonw_key(&w, "reports");
        jsonw_array_begin(&w);
        for (size_t i = 0; i < r->nintake; i++) {
            jsonw_object_begin(&w);
            jsonw_kstr(&w, "id", r->intake_ids[i]);
            jsonw_kstr(&w, "format", r->intake_rows[i].format);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
    }
    jsonw_object_end(&w);
    return respond_json(r, 202, &body);
}

/* ---- multipart/form-data bodies -------------------------------------------------------------- */

/* libmicrohttpd's post processor's buffer: the chunk size it hands a part over in. */
#define FORM_CHUNK_BYTES 8192

/* Appends `size` bytes of a part's chunk to `*data` (*len bytes so far, cap *cap), growing it in
 * the request arena; false over budget (r->err set). The room is not zeroed: every byte of it
 * that is read was copied in. */
static bool part_append(http_request *r, uint8_t **data, size_t *cap, size_t *len,
                        const char *chunk, size_t size)
{
    if (*len + size > *cap) {
        size_t ncap = *cap ? *cap : 65536;
        while (ncap < *len + size)
            ncap *= 2;
        uint8_t *p = arena_grow_uninit(r->a, *data, *cap, ncap, &r->err);
        if (p == NULL)
            return false;
        *data = p;
        *cap = ncap;
    }
    memcpy(*data + *len, chunk, size);
    *len += size;
    return true;
}

/* Collects a multipart body's parts (libmicrohttpd's post processor over the gathered body):
 * the "reports" part (KSCrash's standard sink), the "upload_file_minidump" file part and the
 * other text fields (minidump uploads); other file parts are skipped. */
typedef struct {
    http_request *r;
    http_form *f;
    size_t reports_cap, dump_cap;
    char last_key[INGEST_FORM_MAX_KEY]; /* the field the last chunk went to */
    unsigned dump_parts;                /* "upload_file_minidump" parts begun */
    bool failed;
} form_reader;

static enum MHD_Result on_form_part(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *filename, const char *content_type,
                                    const char *transfer_encoding, const char *data,
                                    uint64_t off, size_t size)
{
    form_reader *fr = cls;
    http_form *f = fr->f;
    http_request *r = fr->r;
    (void)kind, (void)content_type, (void)transfer_encoding;
    if (key == NULL || fr->failed)
        return MHD_YES;
    if (strcmp(key, "reports") == 0) {
        f->has_reports = true;
        if (!part_append(r, &f->reports, &fr->reports_cap, &f->reports_len, data, size)) {
            fr->failed = true;
            return MHD_NO;
        }
        return MHD_YES;
    }
    if (strcmp(key, INGEST_MINIDUMP_PART) == 0) {
        if (off == 0)
            fr->dump_parts++;
        if (fr->dump_parts > 1)
            return MHD_YES; /* a second dump part: the first one is the report */
        f->has_dump = true;
        if (f->dump_filename == NULL && filename != NULL)
            f->dump_filename = arena_strdup(r->a, filename, &r->err);
        if (!part_append(r, &f->dump, &fr->dump_cap, &f->dump_len, data, size)) {
            fr->failed = true;
            return MHD_NO;
        }
        return MHD_YES;
    }
    if (filename != NULL)
        return MHD_YES; /* other attachments: not kept */
    if (strlen(key) >= INGEST_FORM_MAX_KEY) {
        err_set(&r->err, ERR_INVALID, "form field name of %zu bytes is over the limit of %d",
                strlen(key), INGEST_FORM_MAX_KEY - 1);
        fr->failed = true;
        return MHD_NO;
    }
    /* a value in several chunks: the later ones continue the last field */
    ingest_form_field *fld = NULL;
    if (off > 0 && f->nfields > 0 && strcmp(fr->last_key, key) == 0) {
        fld = &f->fields[f->nfields - 1];
    } else {
        if (f->nfields == INGEST_FORM_MAX_FIELDS) {
            err_set(&r->err, ERR_TOO_LARGE, "the upload has more than %d form fields",
                    INGEST_FORM_MAX_FIELDS);
            fr->failed = true;
            return MHD_NO;
        }
        if (f->fields == NULL)
            f->fields = arena_alloc_array(r->a, INGEST_FORM_MAX_FIELDS, sizeof *f->fields, &r->err);
        if (f->fields == NULL) {
            fr->failed = true;
            return MHD_NO;
        }
        fld = &f->fields[f->nfields++];
        fld->key = arena_strdup(r->a, key, &r->err);
        fld->value = NULL;
        fld->value_len = 0;
        snprintf(fr->last_key, sizeof fr->last_key, "%s", key);
        if (fld->key == NULL) {
            fr->failed = true;
            return MHD_NO;
        }
    }
    if (fld->value_len + size > INGEST_FORM_MAX_VALUE) {
        err_set(&r->err, ERR_TOO_LARGE, "form field \"%.64s\" is over the limit of %d bytes", key,
                INGEST_FORM_MAX_VALUE);
        fr->failed = true;
        return MHD_NO;
    }
    char *v = arena_alloc(r->a, fld->value_len + size + 1, &r->err);
    if (v == NULL) {
        fr->failed = true;
        return MHD_NO;
    }
    if (fld->value_len > 0)
        memcpy(v, fld->value, fld->value_len);
    memcpy(v + fld->value_len, data, size);
    v[fld->value_len + size] = '\0';
    fld->value = v;
    fld->value_len += size;
    return MHD_YES;
}

err_code http_form_read(http_form *out, http_request *r, uint64_t max)
{
    memset(out, 0, sizeof *out);
    const uint8_t *body = r->mem ? r->mem : (const uint8_t *)"";
    size_t len = (size_t)r->body_bytes;
    const char *enc = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (strcmp(enc, "gzip") == 0) {
        uint8_t *dec;
        err_code rc = ingest_gunzip(&dec, &len, body, len, max, "multipart body", r->a, &r->err);
        if (rc != ERR_OK)
            return rc;
        body = dec;
    } else if (enc[0] != '\0' && strcmp(enc, "identity") != 0) {
        return err_set(&r->err, ERR_UNSUPPORTED, "content encoding '%s' is not accepted: send gzip "
                       "or identity", enc);
    }
    form_reader fr = {.r = r, .f = out};
    /* The processor's buffer (zeroed by libmicrohttpd at every request) holds one field's
     * value at most before it is handed over; a larger part comes in chunks of that size,
     * which part_append joins. */
    struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, FORM_CHUNK_BYTES,
                                                             on_form_part, &fr);
    if (pp == NULL)
        return err_set(&r->err, ERR_INVALID, "multipart/form-data without a boundary");
    enum MHD_Result ok = MHD_post_process(pp, (const char *)body, len);
    /* ignored: the parts were all delivered by MHD_post_process */
    (void)MHD_destroy_post_processor(pp);
    if (fr.failed)
        return r->err.code != ERR_OK ? r->err.code : ERR_TOO_LARGE;
    if (ok != MHD_YES)
        return err_set(&r->err, ERR_INVALID, "malformed multipart/form-data body");
    if (out->reports == NULL)
        out->reports = (uint8_t *)"";
    return ERR_OK;
}

/* {"accepted":N,"refused":M,"reports":[{"index","id","status","format"} |
 *  {"index","error":{"code","message"}}...]} (after "error" for a 4xx/5xx). */
static void batch_json(jsonw *w, http_request *r)
{
    size_t accepted = 0;
    for (size_t i = 0; i < r->nbatch; i++)
        accepted += r->batch_row[i] != SIZE_MAX && r->intake_ids[r->batch_row[i]][0] != '\0';
    jsonw_kuint(w, "accepted", accepted);
    jsonw_kuint(w, "refused", r->nbatch - accepted);
    jsonw_key(w, "reports");
    jsonw_array_begin(w);
    for (size_t i = 0; i < r->nbatch; i++) {
        jsonw_object_begin(w);
        jsonw_kuint(w, "index", i);
        size_t row = r->batch_row[i];
        if (row != SIZE_MAX && r->intake_ids[row][0] != '\0') {
            jsonw_kstr(w, "id", r->intake_ids[row]);
            jsonw_kstr(w, "status", r->intake_rows[row].status);
            jsonw_kstr(w, "format", r->intake_rows[row].format);
        } else {
            const err_info *e = row == SIZE_MAX ? &r->batch[i].err : &r->err;
            err_code code = row == SIZE_MAX ? r->batch[i].rc : r->intake_rc;
            char shown[sizeof e->msg];
            jsonw_key(w, "error");
            jsonw_object_begin(w);
            jsonw_kstr(w, "code", err_name(code));
            jsonw_kstr(w, "message", http_public_message(shown, sizeof shown, r, code, e->msg));
            jsonw_object_end(w);
        }
        jsonw_object_end(w);
    }
    jsonw_array_end(w);
}

/* The batch's answer: 202 when every accepted report is durable (refused ones listed with
 * their reason); else the error of the commit (503: retry) or, when no report was accepted,
 * of the first report, each with the per-report list. */
static enum MHD_Result batch_answer(http_request *r, err_code rc, const err_info *why)
{
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    if (rc != ERR_OK) {
        char shown[sizeof why->msg];
        jsonw_key(&w, "error");
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "code", err_name(rc));
        jsonw_kstr(&w, "message", http_public_message(shown, sizeof shown, r, rc, why->msg));
        jsonw_object_end(&w);
    }
    batch_json(&w, r);
    jsonw_object_end(&w);
    if (rc != ERR_OK && why != &r->err)
        r->err = *why;
    return respond_json(r, rc == ERR_OK ? 202 : http_status_for(rc), &body);
}

/* Suspend the connection (or, on a handler thread, hand it to the group commit) and queue
 * every intake row for the group commit; the last verdict resumes it (report_committed).
 * `r` may be gone when this returns. */
static enum MHD_Result submit_rows(http_request *r, intake_slot *slots)
{
    /* Suspended before the rows are queued: the commits may finish (and resume it) at once.
     * The answer goes out only after every row's commit. */
    r->intake_rc = ERR_OK;
    atomic_store(&r->intake_failed, 0);
    atomic_store(&r->intake_pending, r->nintake);
    r->intake = INTAKE_WAITING;
    if (r->offloaded)
        handler_detach();   /* suspended already (jobs_push); the commit resumes it */
    else
        MHD_suspend_connection(r->conn);
    /* r may be resumed and gone once the last row is queued: nothing of it is read after */
    size_t n = r->nintake;
    store_intake *q = r->srv->intake;
    for (size_t i = 0; i < n; i++)
        slots[i] = (intake_slot){r, i};
    for (size_t i = 0; i < n; i++) {
        err_info err = {0};
        err_code rc = store_intake_submit(q, &r->intake_rows[i], report_committed, &slots[i], &err);
        if (rc != ERR_OK) /* not queued: its verdict now, the others' when they come */
            report_committed(&slots[i], rc, NULL, &err);
    }
    return MHD_YES;
}

/* A multipart batch (KSCrash's standard sink): every report of the "reports" part accepted
 * or refused on its own; the accepted ones are committed like single reports. A report that
 * names itself has an id of its own (ingest_report_prepare_batch), which the intake stores once
 * per project: the same batch sent again (the sink retries until it gets a 2xx) is answered
 * with the same ids and stores nothing new. */
static enum MHD_Result report_batch_post(http_request *r, const http_form *form)
{
    err_code rc;
    {
        ingest_report_input in = {
            .content_type = "application/json",
            .body = form->reports,
            .len = form->reports_len,
            .max_report_bytes = r->srv->cfg->max_report_bytes,
            .pipe = r->srv->pipe,
            .project_id = r->project_id,
        };
        rc = ingest_report_prepare_batch(&r->batch, &r->nbatch, &in, r->a, &r->err);
    }
    size_t accepted = 0;
    for (size_t i = 0; rc == ERR_OK && i < r->nbatch; i++)
        accepted += r->batch[i].rc == ERR_OK;
    intake_slot *slots = NULL;
    if (rc == ERR_OK) {
        r->batch_row = arena_alloc_array(r->a, r->nbatch, sizeof *r->batch_row, &r->err);
        r->intake_rows = arena_alloc_array(r->a, accepted ? accepted : 1, sizeof *r->intake_rows, &r->err);
        r->intake_ids = arena_alloc_array(r->a, accepted ? accepted : 1, sizeof r->intake_ids[0], &r->err);
        slots = arena_alloc_array(r->a, accepted ? accepted : 1, sizeof *slots, &r->err);
        if (r->batch_row == NULL || r->intake_rows == NULL || r->intake_ids == NULL || slots == NULL)
            rc = ERR_TOO_LARGE;
    }
    if (rc != ERR_OK) {
        metrics_report_rejected(rc);
        return respond_err(r, &r->err);
    }
    r->batch_mode = true;
    r->nintake = 0;
    for (size_t i = 0; i < r->nbatch; i++) {
        if (r->batch[i].rc != ERR_OK) {
            r->batch_row[i] = SIZE_MAX;
            metrics_report_rejected(r->batch[i].rc);
            continue;
        }
        r->batch_row[i] = r->nintake;
        r->intake_rows[r->nintake++] = r->batch[i].row;
    }
    if (accepted == 0) {
        err_info none;
        err_set(&none, r->batch[0].rc, "none of the %zu reports was accepted; report 0: %s",
                r->nbatch, r->batch[0].err.msg);
        return batch_answer(r, none.code, &none);
    }
    return submit_rows(r, slots);
}

err_code http_form_minidump_envelope(const uint8_t **env, size_t *env_len, http_request *r,
                                     const http_form *form)
{
    if (form->dump_len > r->srv->cfg->max_report_bytes)
        return err_set(&r->err, ERR_TOO_LARGE, "minidump of %zu bytes is over the limit of %llu "
                       "bytes", form->dump_len, (unsigned long long)r->srv->cfg->max_report_bytes);
    if (!crashreport_is_minidump(form->dump, form->dump_len))
        return err_set(&r->err, ERR_INVALID, "the \"" INGEST_MINIDUMP_PART "\" part is no "
                       "minidump: it does not start with the \"MDMP\" magic");
    return ingest_minidump_envelope(env, env_len, form->dump, form->dump_len, form->dump_filename,
                                    form->fields, form->nfields, r->a, &r->err);
}

/* A multipart minidump upload (Crashpad's uploader, Electron's crashReporter, Backtrace,
 * BugSplat): the dump and the form fields stored as one envelope (ingest_minidump_envelope),
 * committed as one report. */
static enum MHD_Result report_minidump_post(http_request *r, const http_form *form)
{
    const uint8_t *env;
    size_t env_len;
    err_code rc = http_form_minidump_envelope(&env, &env_len, r, form);
    intake_slot *slots = NULL;
    if (rc == ERR_OK) {
        r->intake_rows = arena_alloc_array(r->a, 1, sizeof *r->intake_rows, &r->err);
        r->intake_ids = arena_alloc_array(r->a, 1, sizeof r->intake_ids[0], &r->err);
        slots = arena_alloc_array(r->a, 1, sizeof *slots, &r->err);
        if (r->intake_rows == NULL || r->intake_ids == NULL || slots == NULL)
            rc = ERR_TOO_LARGE;
    }
    ingest_stored st;
    if (rc == ERR_OK) /* the event as it is stored, so that intake and workers read the same */
        rc = ingest_stored_unpack(&st, env, env_len, INGEST_SENTRY_ENVELOPE_TYPE, r->a, &r->err);
    if (rc == ERR_OK)
        rc = ingest_minidump_row(&r->intake_rows[0], env, env_len, INGEST_SENTRY_ENVELOPE_TYPE,
                                 st.report, st.len, st.event, st.event_len, r->project_id,
                                 r->srv->pipe, r->a, &r->err);
    if (rc != ERR_OK) {
        metrics_report_rejected(rc);
        return respond_err(r, &r->err);
    }
    r->nintake = 1;
    return submit_rows(r, slots);
}

/* A multipart body: a minidump upload when it has an "upload_file_minidump" part, else a
 * KSCrash batch ("reports" part). */
static enum MHD_Result report_form_post(http_request *r)
{
    http_form form;
    err_code rc = http_form_read(&form, r, r->srv->cfg->max_report_bytes * REPORT_BATCH_FACTOR);
    if (rc == ERR_OK && !form.has_dump && !form.has_reports)
        rc = err_set(&r->err, ERR_INVALID, "multipart/form-data body has neither a \"reports\" "
                     "part (KSCrash's standard sink sends the reports as a JSON array there) nor "
                     "an \"" INGEST_MINIDUMP_PART "\" file part (a minidump upload)");
    if (rc != ERR_OK) {
        metrics_report_rejected(rc);
        return respond_err(r, &r->err);
    }
    if (form.has_dump)
        return report_minidump_post(r, &form);
    return report_batch_post(r, &form);
}

/* POST /api/v1/reports. Parses (and processes, when the node can from memory: nothing here
 * waits for Postgres) on the libmicrohttpd thread that read it when its body is small, else
 * on a handler thread with its connection suspended (server.c, "handler threads"); then
 * hands the connection to the group commit (suspending it, or handler_detach on a handler
 * thread) and returns: no thread waits for the commit. The last row's verdict
 * (report_committed) resumes the connection and libmicrohttpd's thread calls this again to
 * send the 202. Every store call made meanwhile, the commit included, ends by the request's
 * deadline (r->deadline_ms, set on this thread by the transport). */
enum MHD_Result handle_report_post(http_request *r)
{
    if (r->intake == INTAKE_DONE && r->batch_mode) {
        for (size_t i = 0; i < r->nintake; i++)
            if (r->intake_ids[i][0] != '\0')
                metrics_report_accepted();
        if (r->intake_rc != ERR_OK)
            metrics_report_rejected(r->intake_rc);
        return batch_answer(r, r->intake_rc, &r->err);
    }
    if (r->intake == INTAKE_NONE && request_is_multipart(r))
        return report_form_post(r);
    return report_intake(r, NULL);
}

enum MHD_Result report_intake(http_request *r, const char *want_format)
{
    if (r->intake == INTAKE_DONE) {
        if (r->intake_rc != ERR_OK) {
            metrics_report_rejected(r->intake_rc);
            return respond_err(r, &r->err);
        }
        for (size_t i = 0; i < r->nintake; i++)
            metrics_report_accepted();
        return report_accepted(r);
    }
    ingest_report_input in = {
        .content_type = request_media_type(r, MHD_HTTP_HEADER_CONTENT_TYPE),
        .content_encoding = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING),
        .body = r->mem ? r->mem : (const uint8_t *)"",
        .len = (size_t)r->body_bytes,
        .max_report_bytes = r->srv->cfg->max_report_bytes,
        .pipe = r->srv->pipe,
        .project_id = r->project_id,
    };
    if (in.content_encoding[0] == '\0')
        in.content_encoding = NULL;
    err_code rc = ingest_report_prepare(&r->intake_rows, &r->nintake, &in, r->a, &r->err);
    if (rc == ERR_OK && want_format != NULL && strcmp(r->intake_rows[0].format, want_format) != 0)
        rc = err_set(&r->err, ERR_INVALID, "%s takes %s reports; this is a %s report", r->url,
                     want_format, r->intake_rows[0].format);
    intake_slot *slots = NULL;
    if (rc == ERR_OK) {
        r->intake_ids = arena_alloc_array(r->a, r->nintake, sizeof r->intake_ids[0], &r->err);
        slots = arena_alloc_array(r->a, r->nintake, sizeof *slots, &r->err);
        if (r->intake_ids == NULL || slots == NULL)
            rc = ERR_TOO_LARGE;
    }
    if (rc != ERR_OK) {
        metrics_report_rejected(rc);
        return respond_err(r, &r->err);
    }
    return submit_rows(r, slots);
}

/* The wire format of a report (docs/openapi.yaml, Report). The stored JSON (the parsed and
 * the symbolicated model, missing UUIDs) was written by jsonw or Postgres: copied as it is. */
static void report_json(jsonw *w, const store_report *rep)
{
    jsonw_object_begin(w);
    jsonw_kstr(w, "id", rep->id);
    jsonw_kstr(w, "status", rep->status);
    jsonw_kstr(w, "format", rep->format);
    jsonw_kstr(w, "content_type", rep->content_type);
    jsonw_kstr(w, "received_at", rep->received_at);
    jsonw_kstr(w, "updated_at", rep->updated_at);
    jsonw_kint(w, "raw_bytes", rep->raw_bytes);
    jsonw_kstr(w, "app", rep->app);
    jsonw_kstr(w, "app_version", rep->app_version);
    jsonw_kstr(w, "os_version", rep->os_version);
    jsonw_kraw(w, "missing_uuids", rep->missing_uuids_json);
    jsonw_kraw(w, "unwind_uuids", rep->unwind_uuids_json);
    jsonw_kstr(w, "error", rep->error);
    jsonw_kraw(w, "report", rep->parsed_json);
    jsonw_key(w, "issue_id");
    if (rep->issue_id)
        jsonw_int(w, rep->issue_id);
    else
        jsonw_null(w);
    jsonw_kstr(w, "fingerprint", rep->fingerprint);
    jsonw_kstr(w, "kind", rep->kind);
    jsonw_kstr(w, "hardware_model", rep->hardware_model);
    jsonw_kstr(w, "processed_at", rep->processed_at);
    jsonw_kraw(w, "symbolicated", rep->symbolicated_json);
    jsonw_object_end(w);
}

/* The report's own bytes (ingest_raw_report) of the stored row r->param; *raw in r->a.
 * Errors as store_report_raw_get, and ERR_INVALID for stored bytes that no longer decode. */
static err_code report_bytes(http_request *r, const uint8_t **raw, size_t *len, err_info *err)
{
    const uint8_t *stored;
    size_t n;
    const char *content_type;
    err_code rc = store_report_raw_get(&stored, &n, &content_type, r->srv->store, r->param, r->a,
                                       err);
    if (rc != ERR_OK)
        return rc;
    return ingest_raw_report(raw, len, stored, n, content_type, r->a, err);
}

/* The stored row r->param read back and parsed (ingest_stored_read: a minidump with the
 * event it came with). Errors as store_report_raw_get and ingest_stored_read. */
static err_code report_parsed(http_request *r, crashreport **rep, err_info *err)
{
    const uint8_t *stored;
    size_t n;
    const char *content_type;
    err_code rc = store_report_raw_get(&stored, &n, &content_type, r->srv->store, r->param, r->a,
                                       err);
    if (rc != ERR_OK)
        return rc;
    return ingest_stored_read(rep, stored, n, content_type, r->a, err);
}

/* ?format=text: the symbolicated report as Apple crash text. */
static enum MHD_Result report_text(http_request *r)
{
    if (r->srv->pipe == NULL)
        return respond_error(r, ERR_UNSUPPORTED, "this server does not symbolicate");
    crashreport *rep;
    if (report_parsed(r, &rep, &r->err) != ERR_OK ||
        pipeline_symbolicate(r->srv->pipe, rep, NULL, NULL, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf out;
    buf_init(&out);
    crashreport_render_text(&out, rep);
    return queue_body(r, 200, "text/plain; charset=utf-8", (char *)out.data, out.len);
}

enum MHD_Result handle_report_get(http_request *r)
{
    const char *format = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "format");
    if (format && strcmp(format, "text") == 0)
        return report_text(r);
    if (format && strcmp(format, "json") != 0)
        return respond_error(r, ERR_INVALID, "format must be json or text");
    store_report rep;
    if (store_report_get(&rep, r->srv->store, r->param, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    if (rep.parsed_json == NULL) {
        /* Intake stores no model (ingest_report_prepare): rebuild it from the raw bytes. */
        const uint8_t *raw;
        size_t len;
        const char *content_type;
        err_info perr = {0};
        err_code rc = store_report_raw_get(&raw, &len, &content_type, r->srv->store, r->param,
                                           r->a, &perr);
        if (rc == ERR_STORE || rc == ERR_NOT_FOUND || rc == ERR_TOO_LARGE) {
            r->err = perr;
            return respond_err(r, &r->err);
        }
        /* A stored report that no longer parses (a parser regression) still has its row. */
        if (rc != ERR_OK || ingest_report_model_json(&rep.parsed_json, raw, len, content_type,
                                                     r->a, &perr) != ERR_OK)
            rep.parsed_json = NULL;
    }
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    report_json(&w, &rep);
    return respond_json(r, 200, &body);
}

/* The report's bytes as received (after gzip decoding; a Sentry envelope's event item),
 * beside its symbolicated text. */
enum MHD_Result handle_report_raw(http_request *r)
{
    const uint8_t *raw;
    size_t len;
    if (report_bytes(r, &raw, &len, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    char *body = xmalloc(len + 1);
    memcpy(body, raw, len);
    body[len] = '\0';
    /* PLCrashReporter's binary file and a minidump go back as the types they are sent as,
     * decided as at intake by their magic; everything else is text */
    bool plcrash = ingest_is_plcrash(raw, len);
    bool dump = crashreport_is_minidump(raw, len);
    /* a download, never a page: whatever the device sent cannot run in the dashboard */
    r->disposition = arena_sprintf(r->a, &r->err, "attachment; filename=\"report-%s.%s\"",
                                   r->param, plcrash ? "plcrash" : dump ? "dmp" : "txt");
    return queue_body(r, 200, plcrash ? INGEST_PLCRASH_CONTENT_TYPE
                              : dump ? INGEST_MINIDUMP_CONTENT_TYPE : "text/plain; charset=utf-8",
                      body, len);
}
