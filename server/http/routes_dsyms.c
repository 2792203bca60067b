/*
 * routes_dsyms - /api/v1/dsyms: POST debug files (a zip of .dSYM bundles or bare Mach-O,
 * multipart or raw body, streamed to scratch files by server.c; ingest_dsym_upload builds
 * the symcaches), list and GET the stored records, and the UUIDs reports wait for
 * (/missing). Shapes in docs/openapi.yaml.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/http_internal.h"
#include "http/metrics.h"
#include "ingest/ingest.h"
#include "log/log.h"
#include "store/store_dsyms.h"

/* The wire format of a debug file (docs/openapi.yaml, Dsym); `status` and `warnings` only
 * in upload answers (NULL: left out). */
static void dsym_json(jsonw *w, const store_dsym *d, const char *status, const ingest_dsym_file *f)
{
    jsonw_object_begin(w);
    jsonw_kstr(w, "uuid", d->uuid);
    jsonw_kstr(w, "arch", d->arch);
    jsonw_kstr(w, "name", d->name);
    jsonw_kbool(w, "has_dwarf", d->has_dwarf);
    jsonw_kint(w, "dwarf_bytes", d->dwarf_bytes);
    jsonw_kint(w, "symcache_bytes", d->symcache_bytes);
    jsonw_kint(w, "functions", d->functions);
    jsonw_kstr(w, "sha256", d->sha256);
    jsonw_kstr(w, "uploaded_at", d->uploaded_at);
    if (status)
        jsonw_kstr(w, "status", status);
    if (f != NULL && f->symbol_map != NULL) {   /* names still hidden: the map they wait for */
        jsonw_kuint(w, "hidden_names", f->hidden);
        jsonw_kstr(w, "symbol_map", f->symbol_map);
    }
    if (f != NULL) { /* what of its DWARF was left out as unreadable, the rest kept */
        jsonw_key(w, "warnings");
        jsonw_array_begin(w);
        if (f->warning != NULL)
            jsonw_str(w, f->warning);
        jsonw_array_end(w);
    }
    jsonw_object_end(w);
}

/* Fat-file slices left out of an upload, as JSON strings (the "warnings" of the answer). */
typedef struct {
    http_request *r;
    buf list;   /* comma-separated JSON strings */
    unsigned n;
} skipped_slices;

static void note_skipped(const char *name, const char *arch, const char *why, void *ctx)
{
    skipped_slices *k = ctx;
    char line[600];
    snprintf(line, sizeof line, "%s: slice %s left out, the others are built: %s", name, arch, why);
    if (k->n++ > 0)
        buf_putc(&k->list, ',');
    buf_append_json_str(&k->list, line, strlen(line));
    log_event(LOG_WARN, "dsym_slice_skipped", "req=%s name=%s arch=%s message=%s", k->r->id, name,
              arch, why);
}

enum MHD_Result handle_dsym_post(http_request *r)
{
    return dsym_upload_respond(r, false);
}

enum MHD_Result dsym_upload_respond(http_request *r, bool conflict_if_known)
{
    const config *cfg = r->srv->cfg;
    if (r->pp) {
        enum MHD_Result ok = MHD_destroy_post_processor(r->pp);   /* flushes the last part */
        r->pp = NULL;
        if (r->failed)
            return respond_err(r, &r->err);
        if (ok != MHD_YES)
            return respond_error(r, ERR_INVALID, "malformed multipart/form-data body");
        if (r->nparts == 0)
            return respond_error(r, ERR_INVALID, "multipart body has no file part "
                                 "(send it as e.g. curl -F file=@App.dSYM.zip)");
    }
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    if (r->body_bytes == 0)
        return respond_error(r, ERR_INVALID, "upload body is empty");

    skipped_slices skipped = {r, {0}, 0};
    buf_init(&skipped.list);
    dsym_options opts = {
        .threads = cfg->dsym_threads,
        .max_unpacked_bytes = cfg->max_unpacked_bytes,
        .max_ratio = cfg->max_zip_ratio,
        .skipped = note_skipped,
        .skipped_ctx = &skipped,
        /* ?uuid=: the UUID a UUID map or BCSymbolMap sent alone is for, when its name
         * carries none (checked against the name when both do) */
        .map_uuid = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "uuid"),
    };
    ingest_dsym_file *files;
    size_t n;
    double t0 = http_now_ms();
    err_code rc = ingest_dsym_upload(&files, &n, r->srv->store, (const char *const *)r->parts,
                                     r->nparts, r->work_dir,
                                     r->srv->pipe ? pipeline_files(r->srv->pipe) : NULL, &opts, r->a,
                                     &r->err);
    if (rc != ERR_OK) {
        buf_reset(&skipped.list);
        metrics_dsym_failed(rc);
        return respond_err(r, &r->err);
    }
    uint64_t dwarf_skipped = 0;
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "files");
    jsonw_array_begin(&w);
    unsigned created = 0;
    for (size_t i = 0; i < n; i++) {
        if (files[i].kind != NULL && strcmp(files[i].kind, "dsym") != 0)
            continue;   /* a UUID map or BCSymbolMap: in "maps" below */
        dsym_json(&w, &files[i].row, files[i].status, &files[i]);
        metrics_dsym_processed(files[i].status);
        dwarf_skipped += files[i].warnings;
        if (files[i].warning != NULL)
            log_event(LOG_WARN, "dsym_dwarf_skipped", "req=%s uuid=%s arch=%s name=%s parts=%u "
                      "message=%s", r->id, files[i].row.uuid, files[i].row.arch,
                      files[i].row.name, files[i].warnings, files[i].warning);
        created += strcmp(files[i].status, "exists") != 0;
        log_event(LOG_INFO, "dsym_stored", "req=%s uuid=%s arch=%s name=%s status=%s "
                  "functions=%d symcache_bytes=%lld", r->id, files[i].row.uuid,
                  files[i].row.arch, files[i].row.name, files[i].status, files[i].row.functions,
                  (long long)files[i].row.symcache_bytes);
    }
    log_event(LOG_INFO, "dsym_upload_done", "req=%s files=%zu created=%u body_bytes=%llu "
              "build_ms=%.1f", r->id, n, created, (unsigned long long)r->body_bytes,
              http_now_ms() - t0);
    jsonw_array_end(&w);
    jsonw_key(&w, "maps");     /* UUID maps and BCSymbolMaps of App Store (bitcode) dSYMs */
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        if (files[i].kind == NULL || strcmp(files[i].kind, "dsym") == 0)
            continue;
        bool um = strcmp(files[i].kind, "uuidmap") == 0;
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "kind", files[i].kind);
        jsonw_kstr(&w, "uuid", files[i].row.uuid);
        jsonw_kstr(&w, "name", files[i].row.name);
        jsonw_kstr(&w, "status", files[i].status);
        if (um)
            jsonw_kstr(&w, "original_uuid", files[i].original);
        else
            jsonw_kuint(&w, "names", files[i].names);
        jsonw_object_end(&w);
        created += strcmp(files[i].status, "exists") != 0;
        log_event(LOG_INFO, "symbol_map_stored", "req=%s kind=%s uuid=%s status=%s", r->id,
                  files[i].kind, files[i].row.uuid, files[i].status);
    }
    jsonw_array_end(&w);
    jsonw_key(&w, "warnings"); /* slices of fat files left out, the others built */
    jsonw_array_begin(&w);
    if (skipped.n > 0) {
        buf_putc(&skipped.list, '\0');
        jsonw_raw(&w, (const char *)skipped.list.data);
    }
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    metrics_dsym_skipped(dwarf_skipped, skipped.n);
    buf_reset(&skipped.list);
    if (conflict_if_known && created == 0) {
        buf_reset(&body);
        return respond_error(r, ERR_CONFLICT, n == 1 ? "duplicate: this debug file is "
                             "stored already (with overwrite=true the answer is 200)"
                             : "duplicate: every debug file of this upload is stored already "
                             "(with overwrite=true the answer is 200)");
    }
    return respond_json(r, created ? 201 : 200, &body);
}

enum MHD_Result handle_dsym_list(http_request *r)
{
    const char *uuid = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "uuid");
    const char *name = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "name");
    const char *limit_s = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "limit");
    long limit = limit_s ? strtol(limit_s, NULL, 10) : 100;
    if (limit < 1 || limit > 1000)
        return respond_error(r, ERR_INVALID, "limit must be from 1 to 1000");
    if (uuid && !*uuid)
        uuid = NULL;
    if (name && !*name)
        name = NULL;
    store_dsym *rows;
    size_t n;
    if (store_dsyms_list(&rows, &n, r->srv->store, uuid, name, (size_t)limit, r->a, &r->err) !=
        ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "dsyms");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++)
        dsym_json(&w, &rows[i], NULL, NULL);
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_dsym_get(http_request *r)
{
    store_dsym d;
    if (store_dsym_get(&d, r->srv->store, r->param, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    dsym_json(&w, &d, NULL, NULL);
    return respond_json(r, 200, &body);
}

/* GET /api/v1/dsyms/missing (docs/openapi.yaml, MissingDsyms). */
enum MHD_Result handle_dsyms_missing(http_request *r)
{
    unsigned limit;
    store_dsym_missing *rows;
    size_t n;
    if (request_limit_arg(&limit, r, 100, 1000) != ERR_OK ||
        store_dsyms_missing(&rows, &n, r->srv->store, limit, r->a, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "missing");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "uuid", rows[i].uuid);
        jsonw_kstr(&w, "name", rows[i].name);
        jsonw_kint(&w, "reports", rows[i].reports);
        jsonw_kstr(&w, "first_received", rows[i].first_received);
        jsonw_kstr(&w, "last_received", rows[i].last_received);
        /* what the reports lack of it: names (a dSYM, or any debug file with a symbol table),
         * unwind info for a minidump's walk (an executable, a dylib or a Breakpad .sym) */
        jsonw_key(&w, "needs");
        jsonw_array_begin(&w);
        if (rows[i].needs_debug_info)
            jsonw_str(&w, "debug_info");
        if (rows[i].needs_unwind_info)
            jsonw_str(&w, "unwind_info");
        jsonw_array_end(&w);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}
