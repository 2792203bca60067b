/*
 * routes_difs - `sentry-cli debug-files upload`, unchanged, against stacksift: the three
 * endpoints of Sentry's chunked debug-file upload as sentry-cli speaks it
 * (src/utils/chunks, src/api/data_types/chunking in getsentry/sentry-cli):
 *
 *   GET  /api/0/organizations/{org}/chunk-upload/      the chunking options
 *   POST /api/0/organizations/{org}/chunk-upload/      chunks, multipart: each part a chunk
 *        in field `file_gzip` (gzip) or `file`, its file name the SHA-1 of the uncompressed
 *        chunk; every part is checked before any is stored (ingest_assembler_chunks_store)
 *   POST /api/0/projects/{org}/{project}/files/difs/assemble/
 *        {sha1 of file: {name, debug_id?, chunks: [sha1...]}} -> per file {state,
 *        missingChunks, detail, dif}: "not_found" with the chunks still to send (never an
 *        empty list: sentry-cli takes not_found without missing chunks as done), "created"
 *        when this request started the assembly (ingest/assemble.c, in the background),
 *        "assembling" while it runs, then "ok" with the debug file or "error" with why.
 *
 * `org` is accepted as given (one stacksift is one organization); `project` is the slug of
 * a project (store_projects.h): debug files are shared by every project (a UUID names one
 * build), but an upload to a project that does not exist is refused (404). The token is a stacksift API token with scope `upload` (Authorization: Bearer).
 * Shapes in docs/openapi.yaml.
 */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "http/http_internal.h"
#include "ingest/assemble.h"
#include "log/log.h"
#include "store/store_chunks.h"
#include "store/store_projects.h"

#define ASSEMBLE_MAX_FILES 1024     /* files in one assemble request */
/* What the client is told: one chunk a request, 8 requests at once. sentry-cli gzips a
 * request's chunks on the thread that then waits for the answer, so small requests on more
 * threads keep both its compression and the server's checking busy; the last requests of a
 * file do not leave the client waiting on one big batch. */
#define CHUNKS_PER_REQUEST 1
#define CHUNK_CONCURRENCY 8
/* A poll of a file being assembled on this node waits for it (at most this long a request,
 * at most ASSEMBLE_WAITERS requests at once, so that handler threads stay free for others):
 * sentry-cli polls once a second, so the answer comes as soon as the file is done. */
#define ASSEMBLE_WAIT_MS 10000
#define ASSEMBLE_WAITERS 4

static atomic_uint assemble_waiters;

/* Segment `i` of the request path (0 = "api"), in the arena; NULL if there is none. */
static const char *path_segment(http_request *r, unsigned i)
{
    const char *p = r->url;
    for (unsigned k = 0; k <= i; k++) {
        if (*p != '/')
            return NULL;
        p++;
        if (k < i)
            p += strcspn(p, "/");
    }
    size_t n = strcspn(p, "/");
    return n ? arena_strndup(r->a, p, n, &r->err) : NULL;
}

static bool is_sha1(const char *s)
{
    return strspn(s, "0123456789abcdefABCDEF") == 40 && s[40] == '\0';
}

/* 40 hex digits into lower case, in the arena. */
static char *sha1_lower(http_request *r, const char *s)
{
    char *out = arena_strndup(r->a, s, 40, &r->err);
    if (out)
        for (char *p = out; *p; p++)
            *p = (char)(*p | 0x20);   /* hex digits only */
    return out;
}


enum MHD_Result handle_chunk_options(http_request *r)
{
    const config *cfg = r->srv->cfg;
    const char *org = path_segment(r, 3);
    if (!org)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    /* Relative: the client sends the chunks where it reached this answer (sentry-cli joins it
     * with SENTRY_URL), which stays right behind a proxy. */
    buf url;
    buf_init(&url);
    buf_printf(&url, "/api/0/organizations/%s/chunk-upload/", org);
    jsonw_key(&w, "url");
    jsonw_strn(&w, (const char *)url.data, url.len);
    buf_reset(&url);
    jsonw_kint(&w, "chunkSize", ASSEMBLE_CHUNK_BYTES);
    jsonw_kint(&w, "chunksPerRequest", CHUNKS_PER_REQUEST);
    jsonw_kint(&w, "maxRequestSize", CHUNK_REQUEST_BYTES);
    jsonw_kint(&w, "maxFileSize", (int64_t)cfg->max_upload_bytes);
    jsonw_kint(&w, "concurrency", CHUNK_CONCURRENCY);
    jsonw_kstr(&w, "hashAlgorithm", "sha1");
    /* With none offered, sentry-cli sends chunks as they are (field `file`). */
    jsonw_key(&w, "compression");
    jsonw_array_begin(&w);
    if (cfg->chunk_gzip)
        jsonw_str(&w, "gzip");
    jsonw_array_end(&w);
    /* what older sentry-cli versions look for before they use chunks for debug files */
    jsonw_key(&w, "accept");
    jsonw_array_begin(&w);
    jsonw_str(&w, "debug_files");
    /* App Store dSYMs' UUID maps and BCSymbolMaps: with this, sentry-cli sends them too, as
     * files of their own (uuidmap, bcsymbolmap) */
    jsonw_str(&w, "bcsymbolmaps");
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

enum MHD_Result handle_chunk_post(http_request *r)
{
    if (!r->pp)
        return respond_error(r, ERR_INVALID, "chunks are sent as multipart/form-data, one part "
                             "per chunk in field file_gzip or file");
    enum MHD_Result ok = MHD_destroy_post_processor(r->pp);   /* flushes the last part */
    r->pp = NULL;
    if (r->failed)
        return respond_err(r, &r->err);
    if (ok != MHD_YES)
        return respond_error(r, ERR_INVALID, "malformed multipart/form-data body");
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    if (r->nparts == 0)
        return respond_error(r, ERR_INVALID, "no chunk in the body (parts file_gzip or file, "
                             "each named by the SHA-1 of its uncompressed bytes)");
    ingest_chunk_part parts[MAX_UPLOAD_PARTS];
    for (size_t i = 0; i < r->nparts; i++) {
        const char *field = r->part_fields[i] ? r->part_fields[i] : "";
        if (strcmp(field, "file_gzip") != 0 && strcmp(field, "file") != 0) {
            err_set(&r->err, ERR_INVALID, "chunk part %zu is in field \"%.64s\": the fields are "
                    "file_gzip (gzip) and file", i, field);
            return respond_err(r, &r->err);
        }
        parts[i].path = r->parts[i];
        parts[i].gzip = strcmp(field, "file_gzip") == 0;
        parts[i].sha1 = r->part_names[i] ? r->part_names[i] : "";
    }
    unsigned created;
    double t0 = http_now_ms();
    if (ingest_assembler_chunks_store(&created, r->srv->assembler, parts, r->nparts, &r->err) !=
        ERR_OK)
        return respond_err(r, &r->err);
    log_event(LOG_INFO, "chunks_stored", "req=%s chunks=%zu created=%u body_bytes=%llu ms=%.1f",
              r->id, r->nparts, created, (unsigned long long)r->body_bytes, http_now_ms() - t0);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_kint(&w, "chunks", (int64_t)r->nparts);
    jsonw_kint(&w, "created", created);
    jsonw_object_end(&w);
    return respond_json(r, 200, &body);
}

/* One file of an assemble request, validated. */
typedef struct {
    const char *sha1;       /* lower case */
    const char *name;
    const char *debug_id;   /* "" = none */
    const char **chunks;    /* lower case */
    size_t n;
} dif_request;

/* The answer for one file: sentry-cli's ChunkedDifResponse. `a` (state "ok") gives `dif`. */
static void file_json(jsonw *w, const dif_request *f, const char *state, const char *detail,
                      const char *const *missing, size_t nmissing, const store_assembly *a)
{
    jsonw_key(w, f->sha1);
    jsonw_object_begin(w);
    jsonw_kstr(w, "state", state);
    jsonw_key(w, "missingChunks");
    jsonw_array_begin(w);
    for (size_t i = 0; i < nmissing; i++)
        jsonw_str(w, missing[i]);
    jsonw_array_end(w);
    jsonw_kstr(w, "detail", detail && *detail ? detail : NULL);
    jsonw_key(w, "dif");
    if (a && strcmp(state, "ok") == 0) {
        char uuid[37];
        snprintf(uuid, sizeof uuid, "%s", a->uuid);
        for (char *p = uuid; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        jsonw_object_begin(w);
        jsonw_kstr(w, "uuid", uuid);
        jsonw_kstr(w, "debugId", uuid);
        jsonw_kstr(w, "objectName", f->name);
        jsonw_kstr(w, "cpuName", a->arch);
        jsonw_kstr(w, "sha1", f->sha1);
        jsonw_key(w, "data");
        jsonw_object_begin(w);
        /* symbolic's object kinds: a debug companion (dSYM) or an executable's symbol table;
         * a UUID map or BCSymbolMap is stored with arch "any" */
        bool map = strcmp(a->arch, "any") == 0;
        /* a map is no object: sentry-cli reads "type" as symbolic's ObjectKind, where null
         * is the one value for it */
        jsonw_kstr(w, "type", map ? NULL : a->has_dwarf ? "dbg" : "exe");
        jsonw_key(w, "features");
        jsonw_array_begin(w);
        if (a->has_dwarf)
            jsonw_str(w, "debug");
        if (!map)
            jsonw_str(w, "symtab");
        jsonw_array_end(w);
        jsonw_object_end(w);
        jsonw_object_end(w);
    } else {
        jsonw_null(w);
    }
    jsonw_object_end(w);
}

static void assembly_json(jsonw *w, const dif_request *f, const store_assembly *a)
{
    file_json(w, f, a->state, a->detail, NULL, 0, a);
}

/* File `f`, found assembling: wait (until `wait_until_ms`, http_now_ms) if it assembles on
 * this node, and read its state again once done. */
static err_code await_assembly(store_assembly *a, http_request *r, const dif_request *f,
                               double wait_until_ms)
{
    double left = wait_until_ms - http_now_ms();
    if (left < 1 || atomic_fetch_add(&assemble_waiters, 1) >= ASSEMBLE_WAITERS) {
        if (left >= 1)
            atomic_fetch_sub(&assemble_waiters, 1);
        return ERR_OK;
    }
    /* The wait is no database call: what was left of the request's database budget is
     * left for the read after it (never more). */
    double deadline = store_deadline_get();
    double budget = deadline > 0 ? deadline - store_now_ms() : 0;
    bool done = ingest_assembler_wait(r->srv->assembler, f->sha1, (unsigned)left);
    atomic_fetch_sub(&assemble_waiters, 1);
    if (deadline > 0)
        store_deadline_set(store_now_ms() + (budget > 0 ? budget : 0));
    if (!done)
        return ERR_OK;
    return store_assembly_get(a, r->srv->store, f->sha1, ASSEMBLE_STALE_S, ASSEMBLE_ERROR_S,
                              &r->err);
}

/* Where file `f` stands, starting its assembly when every chunk is stored. A file already
 * assembling on this node is waited for until `wait_until_ms` (the request that starts an
 * assembly answers "created" at once: sentry-cli without --wait stops there). */
static err_code assemble_one(jsonw *w, http_request *r, const dif_request *f,
                             const char *project, double wait_until_ms)
{
    store *s = r->srv->store;
    store_assembly a;
    err_code rc = store_assembly_get(&a, s, f->sha1, ASSEMBLE_STALE_S, ASSEMBLE_ERROR_S, &r->err);
    if (rc == ERR_OK && !a.stale && strcmp(a.state, "assembling") == 0)
        rc = await_assembly(&a, r, f, wait_until_ms);
    if (rc == ERR_OK && !a.stale) {
        assembly_json(w, f, &a);
        return ERR_OK;
    }
    if (rc != ERR_OK && rc != ERR_NOT_FOUND)
        return rc;

    int64_t *sizes = arena_alloc_array(r->a, f->n ? f->n : 1, sizeof *sizes, &r->err);
    const char **missing = arena_alloc_array(r->a, f->n ? f->n : 1, sizeof *missing, &r->err);
    if (!sizes || !missing)
        return ERR_TOO_LARGE;
    rc = store_chunks_sizes(sizes, s, f->chunks, f->n, &r->err);
    if (rc != ERR_OK)
        return rc;
    size_t nmissing = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (sizes[i] >= 0) {
            total += (uint64_t)sizes[i];
            continue;
        }
        bool listed = false;
        for (size_t k = 0; k < nmissing && !listed; k++)
            listed = strcmp(missing[k], f->chunks[i]) == 0;
        if (!listed)
            missing[nmissing++] = f->chunks[i];
    }
    if (nmissing > 0) {
        /* sentry-cli sends the missing chunks next: this node puts those it gets in place */
        ingest_assembler_expect(r->srv->assembler, f->sha1, f->chunks, f->n);
        file_json(w, f, "not_found", NULL, missing, nmissing, NULL);
        return ERR_OK;
    }
    if (total > r->srv->cfg->max_upload_bytes) {
        char detail[160];
        snprintf(detail, sizeof detail, "the file has %llu bytes, over the limit of %llu bytes "
                 "(STACKSIFT_MAX_UPLOAD_BYTES)", (unsigned long long)total,
                 (unsigned long long)r->srv->cfg->max_upload_bytes);
        file_json(w, f, "error", detail, NULL, 0, NULL);
        return ERR_OK;
    }
    bool claimed;
    rc = store_assembly_begin(&claimed, &a, s, f->sha1, f->name, project, ASSEMBLE_STALE_S,
                              ASSEMBLE_ERROR_S, &r->err);
    if (rc == ERR_NOT_FOUND) {   /* claimed and finished by others, then expired: ask again */
        file_json(w, f, "assembling", NULL, NULL, 0, NULL);
        return ERR_OK;
    }
    if (rc != ERR_OK)
        return rc;
    if (!claimed) {
        assembly_json(w, f, &a);
        return ERR_OK;
    }
    if (!ingest_assembler_submit(r->srv->assembler, f->sha1, f->name, f->debug_id, f->chunks,
                                 f->n)) {
        const char *why = "the server is busy assembling other files: upload again shortly";
        err_info ferr;
        /* Ignored on failure: the row is restarted once stale. */
        (void)store_assembly_finish(s, f->sha1, "error", why, NULL, NULL, false, &ferr);
        file_json(w, f, "error", why, NULL, 0, NULL);
        return ERR_OK;
    }
    file_json(w, f, "created", NULL, NULL, 0, NULL);
    return ERR_OK;
}

/* The request body's files, validated: nothing is started unless all of them are right. */
static err_code parse_assemble(dif_request **out, size_t *n, http_request *r, json_t *body)
{
    const uint64_t max_chunks = r->srv->cfg->max_upload_bytes / ASSEMBLE_CHUNK_BYTES + 1;
    *out = NULL;
    *n = 0;
    if (!json_is_object(body))
        return err_set(&r->err, ERR_INVALID, "body must be a JSON object: {\"<sha1 of the "
                       "file>\": {\"name\": ..., \"chunks\": [\"<sha1>\", ...]}}");
    size_t count = json_object_size(body);
    if (count > ASSEMBLE_MAX_FILES)
        return err_set(&r->err, ERR_TOO_LARGE, "%zu files in one request, at most %d", count,
                       ASSEMBLE_MAX_FILES);
    dif_request *files = arena_alloc_array(r->a, count ? count : 1, sizeof *files, &r->err);
    if (!files)
        return ERR_TOO_LARGE;
    const char *key;
    json_t *v;
    size_t i = 0;
    json_object_foreach(body, key, v) {
        dif_request *f = &files[i++];
        if (!is_sha1(key))
            return err_set(&r->err, ERR_INVALID, "file \"%.64s\": the key is the file's SHA-1 "
                           "(40 hex digits)", key);
        json_t *name = json_object_get(v, "name"), *chunks = json_object_get(v, "chunks");
        json_t *did = json_object_get(v, "debug_id");
        if (!json_is_object(v) || !json_is_string(name) || !json_is_array(chunks))
            return err_set(&r->err, ERR_INVALID, "file %.40s: needs \"name\" (a string) and "
                           "\"chunks\" (an array of SHA-1s)", key);
        if (did && !json_is_null(did) && !json_is_string(did))
            return err_set(&r->err, ERR_INVALID, "file %.40s: \"debug_id\" must be a string",
                           key);
        if (json_array_size(chunks) > max_chunks)
            return err_set(&r->err, ERR_TOO_LARGE, "file %.40s: %zu chunks of %u bytes are "
                           "over the upload limit of %llu bytes", key, json_array_size(chunks),
                           ASSEMBLE_CHUNK_BYTES,
                           (unsigned long long)r->srv->cfg->max_upload_bytes);
        f->sha1 = sha1_lower(r, key);
        f->name = arena_strndup(r->a, json_string_value(name),
                                strnlen(json_string_value(name), 255), &r->err);
        f->debug_id = json_is_string(did) ? arena_strndup(r->a, json_string_value(did),
                                                          strnlen(json_string_value(did), 63),
                                                          &r->err)
                                          : "";
        f->n = json_array_size(chunks);
        f->chunks = arena_alloc_array(r->a, f->n ? f->n : 1, sizeof *f->chunks, &r->err);
        if (!f->sha1 || !f->name || !f->debug_id || !f->chunks)
            return ERR_TOO_LARGE;
        for (size_t k = 0; k < f->n; k++) {
            json_t *c = json_array_get(chunks, k);
            if (!json_is_string(c) || !is_sha1(json_string_value(c)))
                return err_set(&r->err, ERR_INVALID, "file %.40s: chunk %zu is not a SHA-1 (40 "
                               "hex digits)", key, k);
            f->chunks[k] = sha1_lower(r, json_string_value(c));
            if (!f->chunks[k])
                return ERR_TOO_LARGE;
        }
    }
    *out = files;
    *n = count;
    return ERR_OK;
}

enum MHD_Result handle_difs_assemble(http_request *r)
{
    const char *project = path_segment(r, 4);
    if (!project)
        return respond_err(r, &r->err);
    store_project p;
    err_code rc = store_project_slug_valid(project)
                      ? store_project_find_slug(&p, r->srv->store, project, &r->err)
                      : ERR_NOT_FOUND;
    if (rc == ERR_NOT_FOUND) {
        err_set(&r->err, ERR_NOT_FOUND, "no project \"%.100s\" (SENTRY_PROJECT is the slug "
                "of a project: stacksift project list)", project);
        return respond_err(r, &r->err);
    }
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    json_error_t je;
    json_t *in = json_loadb((const char *)(r->mem ? r->mem : (uint8_t *)""),
                            (size_t)r->body_bytes, 0, &je);
    if (!in)
        return respond_error(r, ERR_INVALID, "body is not JSON");
    dif_request *files;
    size_t n;
    rc = parse_assemble(&files, &n, r, in);
    json_decref(in);
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    double wait_until_ms = http_now_ms() + ASSEMBLE_WAIT_MS;
    for (size_t i = 0; rc == ERR_OK && i < n; i++)
        rc = assemble_one(&w, r, &files[i], project, wait_until_ms);
    jsonw_object_end(&w);
    if (rc != ERR_OK) {
        buf_reset(&body);
        return respond_err(r, &r->err);
    }
    return respond_json(r, 200, &body);
}
