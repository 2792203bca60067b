/*
 * ingest_report - report intake: decode the body, parse it (ingest_report_parse is the one
 * place that does) into the row intake commits: raw bytes + summary columns, and when the
 * pipeline can process it at once, its outcome (stored processed, with its issue).
 */
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>
#include <libdeflate.h>
#include <zlib.h>

#include "base/buf.h"
#include "ingest/ingest.h"
#include "ingest/ingest_minidump.h"
#include "ingest/pipeline.h"
#include "store/store_reports.h"

#include "crashreport/crashreport.h"
#include "envelope/envelope.h"

/* A whole gzip body in one libdeflate call, sized by the trailer's ISIZE (RFC 1952 section
 * 2.3.1): about twice as fast as zlib's stream. Only for a body that is one member whose
 * ISIZE is plausible (up to 32x the input, JSON inflates ~10x; within max): a hostile trailer
 * must not buy a large allocation with a tiny body. false when it does not apply or the body
 * does not decode to exactly ISIZE bytes: zlib's stream then decodes it, or says why not. */
static bool gunzip_whole(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len,
                         uint64_t max, arena *a)
{
    if (in_len < 18 || in[0] != 0x1f || in[1] != 0x8b)
        return false;
    const uint8_t *t = in + in_len - 4;
    size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    if (isize > max || isize / 32 > in_len)
        return false;
    uint8_t *dst = arena_alloc_uninit(a, isize + 1, NULL);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (dst == NULL || d == NULL) {
        libdeflate_free_decompressor(d);
        return false;
    }
    size_t in_used = 0, n = 0;
    enum libdeflate_result r = libdeflate_gzip_decompress_ex(d, in, in_len, dst, isize, &in_used, &n);
    libdeflate_free_decompressor(d);
    if (r != LIBDEFLATE_SUCCESS || n != isize || in_used != in_len)
        return false;
    dst[n] = 0;
    *out = dst;
    *out_len = n;
    return true;
}

/* The size this thread's gzip bodies said they decode to (ingest_gzip_trusted_size), -1: none. */
static _Thread_local int64_t trusted_size = -1;

void ingest_gzip_trusted_size(int64_t bytes)
{
    trusted_size = bytes;
}

/* The error for output past `stop` bytes: past what the body said (a lie), or past `max`. */
static err_code too_much(err_info *err, const char *what, const char *encoding, uint64_t max,
                         uint64_t said)
{
    if (said < max)
        return err_set(err, ERR_INVALID, "%s body is corrupt: it decodes to more than the %llu "
                       "bytes its trailer gives", encoding, (unsigned long long)said);
    return err_set(err, ERR_TOO_LARGE, "%s is larger than %llu bytes after %s decoding", what,
                   (unsigned long long)max, encoding);
}

err_code ingest_inflate_wbits(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len,
                              int wbits, const char *encoding, uint64_t max,
                              const char *what, bool *data_error, arena *a, err_info *err)
{
    *data_error = false;
    uint64_t said = wbits == 16 + MAX_WBITS && trusted_size >= 0 ? (uint64_t)trusted_size : UINT64_MAX;
    uint64_t stop = said < max ? said : max; /* the most output decoded */
    if (wbits == 16 + MAX_WBITS && gunzip_whole(out, out_len, in, in_len, stop, a))
        return ERR_OK;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    *data_error = false;
    if (inflateInit2(&zs, wbits) != Z_OK)
        return err_set(err, ERR_INTERNAL, "%s: cannot initialize zlib", encoding);
    size_t cap = in_len * 4 + 1024, len = 0;
    if (cap > stop + 1)
        cap = (size_t)stop + 1;
    uint8_t *dst = arena_alloc(a, cap, err);
    err_code rc = ERR_OK;
    if (dst == NULL) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)in_len;
    for (;;) {
        if (len == cap) {
            if (cap > stop) {
                rc = too_much(err, what, encoding, max, said);
                goto done;
            }
            size_t ncap = cap * 2 > stop + 1 ? (size_t)stop + 1 : cap * 2;
            dst = arena_grow(a, dst, cap, ncap, err);
            if (dst == NULL) {
                rc = ERR_TOO_LARGE;
                goto done;
            }
            cap = ncap;
        }
        zs.next_out = dst + len;
        zs.avail_out = (uInt)(cap - len);
        int zr = inflate(&zs, Z_NO_FLUSH);
        len = cap - zs.avail_out;
        if (zr == Z_STREAM_END)
            break;
        if (zr == Z_BUF_ERROR && zs.avail_in == 0) {
            rc = err_set(err, ERR_INVALID, "%s body is truncated after %zu bytes", encoding,
                         in_len);
            goto done;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            *data_error = zr == Z_DATA_ERROR && zs.total_out == 0;
            rc = err_set(err, ERR_INVALID, "%s body is corrupt: %s", encoding,
                         zs.msg ? zs.msg : "inflate failed");
            goto done;
        }
    }
    if (len > stop) {
        rc = too_much(err, what, encoding, max, said);
        goto done;
    }
    *out = dst;
    *out_len = len;
done:
    inflateEnd(&zs);
    return rc;
}

err_code ingest_gunzip(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len,
                       uint64_t max, const char *what, arena *a, err_info *err)
{
    bool not_gzip;
    return ingest_inflate_wbits(out, out_len, in, in_len, 16 + MAX_WBITS, "gzip", max, what,
                                &not_gzip, a, err);
}

/* ingest_report_parse - THE one place a report is parsed on its way in (and when its model
 * is rebuilt for reading): crashreport_parse detects the format from the bytes. */
static err_code ingest_report_parse(crashreport **out, const uint8_t *data, size_t len,
                                    arena *a, err_info *err)
{
    return crashreport_parse(out, (const char *)data, len, a, err);
}

const store_report_processed *ingest_processed_of(const store_outcome *o, arena *a)
{
    err_info err = {0};
    store_report_processed *p = arena_alloc(a, sizeof *p, &err);
    if (p == NULL)
        return NULL;
    *p = (store_report_processed){
        .issue_app = o->app, .fingerprint = o->fingerprint, .kind = o->kind,
        .title = o->title, .culprit = o->culprit, .exception = o->exception,
        .basis = o->basis, .provisional = o->provisional, .frames_json = o->frames_json,
        .hardware_model = o->hardware_model, .symbolicated_json = o->symbolicated_json,
        .symbolicated_len = o->symbolicated_len,
        .unwind_uuids_json = o->unwind_uuids_json, .unwind_checks_json = o->unwind_checks_json,
    };
    return p;
}

/* The row of one decoded report (raw_len bytes at raw) parsed into `r`: its summary, and
 * its outcome when `pipe` can process it now (pipeline_process_at_intake). */
static void row_of(store_report_new *row, const crashreport *r, const char *content_type,
                   const uint8_t *raw, size_t raw_len, pipeline *pipe, arena *a)
{
    memset(row, 0, sizeof *row);
    row->status = "received";
    row->format = crashreport_format_name(r->format);
    row->content_type = content_type;
    row->raw = raw;
    row->raw_len = raw_len;
    row->app = r->meta.app_name ? r->meta.app_name : r->meta.process;
    row->app_version = r->meta.app_version;
    row->os_version = r->meta.os_version;
    store_outcome o;
    if (pipe && pipeline_process_at_intake(pipe, (crashreport *)r, row->app, &o, a))
        row->processed = ingest_processed_of(&o, a);
}

/* The id a report of a sink batch is stored under, made of the report's own id (KSCrash's
 * report.id, an Apple report's Incident Identifier) and its project: a UUID (version 8, RFC
 * 9562) of the SHA-256 of "<project id>/<own id>", so that a batch sent again (the sink sends
 * it until it gets a 2xx) names the same rows, and the same report sent to two projects is
 * two reports (ids are unique across projects). NULL (a new UUIDv7) when the report names
 * itself not, or the arena is full. */
static const char *report_own_id(const crashreport *r, int64_t project_id, arena *a)
{
    const char *given = r->meta.incident_id;
    if (given == NULL || given[0] == '\0')
        return NULL;
    err_info err = {0};
    char *name = arena_sprintf(a, &err, "%lld/%s", (long long)project_id, given);
    char *id = arena_alloc(a, 37, &err);
    if (name == NULL || id == NULL)
        return NULL;
    uint8_t md[32];
    unsigned n = sizeof md;
    if (EVP_Digest(name, strlen(name), md, &n, EVP_sha256(), NULL) != 1)
        return NULL;
    md[6] = (uint8_t)((md[6] & 0x0f) | 0x80); /* version 8: custom */
    md[8] = (uint8_t)((md[8] & 0x3f) | 0x80); /* the RFC's variant */
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return store_report_id_norm(id, hex) ? id : NULL;
}

/* One decoded report (raw_len bytes at raw) into row: parsed for its 4xx and its summary;
 * processed now if `pipe` can; with `own_id`, stored under an id made of the report's own
 * in project `project_id` (report_own_id). */
static err_code prepare_row(store_report_new *row, const char *content_type, const uint8_t *raw,
                            size_t raw_len, bool own_id, int64_t project_id, pipeline *pipe,
                            arena *a, err_info *err)
{
    /* Parsed here so that a bad report gets its 4xx now; only the summary is kept: the model
     * is rebuilt from the raw bytes when someone reads it (ingest_report_model_json), which
     * keeps intake's commit to the bytes that cannot be rebuilt. */
    crashreport *r;
    err_code rc = ingest_report_parse(&r, raw, raw_len, a, err);
    if (rc != ERR_OK)
        return rc;
    row_of(row, r, content_type, raw, raw_len, pipe, a);
    if (own_id)
        row->id = report_own_id(r, project_id, a);
    return ERR_OK;
}

err_code ingest_report_prepare(store_report_new **rows, size_t *nrows, const ingest_report_input *in,
                               arena *a, err_info *err)
{
    *rows = NULL;
    *nrows = 0;
    /* PLCrashReporter's binary reports come as its own type or as plain bytes; the format is
     * still decided by the bytes (the "plcrash" magic), checked once decoded below. */
    /* Minidumps likewise: application/x-dmp (or application/x-minidump), or any accepted
     * type whose bytes start with the "MDMP" magic. */
    bool dmp = strcmp(in->content_type, INGEST_MINIDUMP_CONTENT_TYPE) == 0 ||
               strcmp(in->content_type, "application/x-minidump") == 0;
    bool binary = strcmp(in->content_type, INGEST_PLCRASH_CONTENT_TYPE) == 0 ||
                  strcmp(in->content_type, "application/octet-stream") == 0 || dmp;
    if (!binary && strcmp(in->content_type, "text/plain") != 0 &&
        strcmp(in->content_type, "application/json") != 0)
        return err_set(err, ERR_UNSUPPORTED, "content type '%s' is not accepted for reports: "
                       "send text/plain, application/json, " INGEST_PLCRASH_CONTENT_TYPE
                       " or " INGEST_MINIDUMP_CONTENT_TYPE, in->content_type);

    const uint8_t *raw = in->body;
    size_t raw_len = in->len;
    if (in->content_encoding && strcmp(in->content_encoding, "gzip") == 0) {
        uint8_t *dec = NULL;
        err_code rc = ingest_gunzip(&dec, &raw_len, in->body, in->len, in->max_report_bytes,
                                    "report", a, err);
        if (rc != ERR_OK)
            return rc;
        raw = dec;
    } else if (in->content_encoding && strcmp(in->content_encoding, "identity") != 0) {
        return err_set(err, ERR_UNSUPPORTED, "content encoding '%s' is not accepted: send gzip "
                       "or identity", in->content_encoding);
    }
    if (raw_len > in->max_report_bytes)
        return err_set(err, ERR_TOO_LARGE, "report of %zu bytes is over the limit of %llu bytes",
                       raw_len, (unsigned long long)in->max_report_bytes);
    if (crashreport_is_minidump(raw, raw_len)) {
        store_report_new *one = arena_alloc_array(a, 1, sizeof *one, err);
        if (one == NULL)
            return ERR_TOO_LARGE;
        err_code rc = ingest_minidump_row(one, raw, raw_len, INGEST_MINIDUMP_CONTENT_TYPE, raw,
                                          raw_len, NULL, 0, in->project_id, in->pipe, a, err);
        if (rc != ERR_OK)
            return rc;
        ingest_keep_body(one, in->body, in->len);   /* a gzip'd body that is the dump */
        *rows = one;
        *nrows = 1;
        return ERR_OK;
    }
    if (dmp)
        return err_set(err, ERR_INVALID, "a %s body must be a minidump: it does not start with "
                       "the \"MDMP\" magic", in->content_type);
    if (binary && !ingest_is_plcrash(raw, raw_len))
        return err_set(err, ERR_INVALID, "a %s body must be a PLCrashReporter report or a "
                       "minidump: it starts with neither the \"plcrash\" nor the \"MDMP\" "
                       "magic", in->content_type);

    /* One parse for the common case of one report (a JSON document parsed once, not once to
     * look for several and again to read it). */
    crashreport **all = NULL;
    size_t nall = 0;
    err_code rc = crashreport_parse_all(&all, &nall, (const char *)raw, raw_len, a, err);
    if (rc != ERR_OK) /* the message names the diagnostic or event */
        return rc;
    if (nall == 1) {
        store_report_new *one = arena_alloc_array(a, 1, sizeof *one, err);
        if (one == NULL)
            return ERR_TOO_LARGE;
        row_of(one, all[0], in->content_type, raw, raw_len, in->pipe, a);
        ingest_keep_body(one, in->body, in->len);   /* a gzip'd body that is the one report */
        one->project_id = in->project_id ? in->project_id : STORE_PROJECT_DEFAULT;
        *rows = one;
        *nrows = 1;
        return ERR_OK;
    }
    /* A MetricKit payload of several diagnostics (a Bugsnag payload of several events) is
     * stored as one report per diagnostic (event), each a standalone payload of it: each is
     * grouped on its own. */
    const char **docs;
    size_t *lens, ndocs;
    rc = crashreport_split(&docs, &lens, &ndocs, (const char *)raw, raw_len, a, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = ndocs > 0 ? ndocs : 1;
    store_report_new *out = arena_alloc_array(a, n, sizeof *out, err);
    if (out == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *doc = ndocs > 0 ? (const uint8_t *)docs[i] : raw;
        size_t dlen = ndocs > 0 ? lens[i] : raw_len;
        rc = prepare_row(&out[i], in->content_type, doc, dlen, false, 0, in->pipe, a, err);
        out[i].project_id = in->project_id ? in->project_id : STORE_PROJECT_DEFAULT;
        if (rc != ERR_OK) {
            if (ndocs > 0) {
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s", err->msg);
                err_set(err, rc, "%s %zu of %zu: %s", all[0]->format == CRASHREPORT_FORMAT_BUGSNAG
                        ? "Bugsnag event" : "MetricKit diagnostic", i + 1, n, msg);
            }
            return rc;
        }
    }
    *rows = out;
    *nrows = n;
    return ERR_OK;
}

err_code ingest_report_prepare_batch(ingest_batch_item **items, size_t *n,
                                     const ingest_report_input *in, arena *a, err_info *err)
{
    *items = NULL;
    *n = 0;
    crashreport_doc *docs;
    size_t nd;
    err_code rc = crashreport_split_array(&docs, &nd, (const char *)in->body, in->len,
                                          INGEST_BATCH_MAX, a, err);
    if (rc != ERR_OK)
        return rc;
    ingest_batch_item *out = arena_alloc_array(a, nd, sizeof *out, err);
    if (out == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < nd; i++) {
        ingest_batch_item *it = &out[i];
        if (docs[i].len > in->max_report_bytes)
            it->rc = err_set(&it->err, ERR_TOO_LARGE, "report of %zu bytes is over the limit "
                             "of %llu bytes", docs[i].len, (unsigned long long)in->max_report_bytes);
        else
            it->rc = prepare_row(&it->row, docs[i].text ? "text/plain" : "application/json",
                                 (const uint8_t *)docs[i].data, docs[i].len, true,
                                 in->project_id ? in->project_id : STORE_PROJECT_DEFAULT,
                                 in->pipe, a, &it->err);
        it->row.project_id = in->project_id ? in->project_id : STORE_PROJECT_DEFAULT;
    }
    *items = out;
    *n = nd;
    return ERR_OK;
}

bool ingest_is_gzip(const uint8_t *raw, size_t len)
{
    return len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b;
}

bool ingest_keep_body(store_report_new *row, const uint8_t *body, size_t len)
{
    if (body == row->raw || !ingest_is_gzip(body, len) || len >= row->raw_len)
        return false;
    row->report_len = row->raw_len;
    row->raw = body;
    row->raw_len = len;
    return true;
}

err_code ingest_raw_report(const uint8_t **out, size_t *out_len, const uint8_t *raw, size_t len,
                           const char *content_type, arena *a, err_info *err)
{
    ingest_stored st;
    err_code rc = ingest_stored_unpack(&st, raw, len, content_type, a, err);
    *out = st.report;
    *out_len = st.len;
    return rc;
}

bool ingest_is_plcrash(const uint8_t *raw, size_t len)
{
    return len >= 7 && memcmp(raw, "plcrash", 7) == 0;
}

err_code ingest_report_model_json(const char **json, const uint8_t *raw, size_t len,
                                  const char *content_type, arena *a, err_info *err)
{
    *json = NULL;
    crashreport *r;
    err_code rc = ingest_stored_read(&r, raw, len, content_type, a, err);
    if (rc != ERR_OK)
        return rc;
    buf out;
    buf_init(&out);
    crashreport_render_json(&out, r);
    *json = arena_strndup(a, (const char *)out.data, out.len, err);
    buf_reset(&out);
    return *json ? ERR_OK : ERR_TOO_LARGE;
}
