/*
 * ingest_dsym - turn an uploaded debug file into symcaches and rows.
 *
 * Postgres is the only shared state: every new symcache and the upload part it
 * was built from are stored as blobs (store_blobs.h) in the same transaction that makes the
 * dSYM row visible, so any node can fetch it and a rebuild can re-derive it. Order:
 *   1. build every slice into work_dir/symc/ (dsym_build_symcaches writes temp + rename);
 *   2. hash each symcache and each upload part (SHA-256, the blobs' names);
 *   3. one transaction: rows inserted (or upgraded: DWARF replaces a symbol table, never the
 *      reverse) and, for those, their blobs; a row and its symcache change together or not;
 *   4. after the commit, the new symcaches go into this node's file cache (a hard link), so
 *      the first lookup here needs no download. Nothing outside work_dir is written before.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "ingest/ingest.h"
#include "store/store_blobs.h"

static void hex_encode(char *out, const uint8_t *in, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ingest_sha256_file_hex (ingest.h): hex SHA-256 of the file at `path`, streamed.
 * Errors ERR_IO, ERR_INTERNAL (OpenSSL could not set up the digest). */
err_code ingest_sha256_file_hex(char out[65], const char *path, err_info *err)
{
    uint8_t chunk[65536], md[32];
    unsigned md_len = 32;
    err_code rc = ERR_OK;
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, ERR_IO, "opening %s: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        rc = err_set(err, ERR_INTERNAL, "sha256: cannot initialize OpenSSL digest");
        goto done;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = err_set(err, ERR_IO, "reading %s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(ctx, chunk, (size_t)n);
    }
    if (EVP_DigestFinal_ex(ctx, md, &md_len) != 1) {
        rc = err_set(err, ERR_INTERNAL, "sha256: OpenSSL digest failed");
        goto done;
    }
    hex_encode(out, md, 32);
done:
    EVP_MD_CTX_free(ctx);
    close(fd);
    return rc;
}

typedef struct {
    dsym_built *items; /* xmalloc'd */
    size_t *input;     /* per item: index of the upload part it came from */
    size_t n, cap;
    size_t current;    /* the part being built now */
} built_list;

static void collect_built(const dsym_built *built, void *ctx)
{
    built_list *l = ctx;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].uuid, built->uuid) == 0) {
            l->items[i] = *built;   /* the same UUID twice in one upload: one row */
            l->input[i] = l->current;
            return;
        }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->items = xreallocarray(l->items, l->cap, sizeof *l->items);
        l->input = xreallocarray(l->input, l->cap, sizeof *l->input);
    }
    l->input[l->n] = l->current;
    l->items[l->n++] = *built;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

err_code ingest_dsym_upload(ingest_dsym_file **out, size_t *n, store *s,
                            const char *const *inputs, size_t ninputs, const char *work_dir,
                            symfiles *cache, const dsym_options *opts, arena *a, err_info *err)
{
    return ingest_dsym_upload_hashed(out, n, s, inputs, NULL, ninputs, work_dir, cache, opts, a,
                                     err);
}

err_code ingest_dsym_upload_hashed(ingest_dsym_file **out, size_t *n, store *s,
                                   const char *const *inputs, const char *const *input_sha256,
                                   size_t ninputs, const char *work_dir, symfiles *cache,
                                   const dsym_options *opts, arena *a, err_info *err)
{
    built_list built = {0};
    store_dsym_record *rows = NULL;
    char (*input_sha)[65] = NULL;
    char symc_dir[4096];
    err_code rc = ERR_OK;
    *out = NULL;
    *n = 0;

    snprintf(symc_dir, sizeof symc_dir, "%s/symc", work_dir);
    if (mkdir(symc_dir, 0700) != 0 && errno != EEXIST) {
        rc = err_set(err, ERR_IO, "creating %s: %s", symc_dir, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < ninputs; i++) {
        built.current = i;
        rc = dsym_build_symcaches(inputs[i], symc_dir, opts, collect_built, &built, err);
        if (rc == ERR_NOT_FOUND)   /* the input is ours: "not found" means nothing usable */
            rc = err_set(err, ERR_INVALID, "upload holds no debug file: %s", err->msg);
        if (rc != ERR_OK)
            goto done;
    }
    if (built.n == 0) {
        rc = err_set(err, ERR_INVALID, "upload holds no Mach-O debug file");
        goto done;
    }

    input_sha = xcalloc(ninputs, sizeof *input_sha);
    for (size_t i = 0; i < ninputs; i++) {
        if (input_sha256 && input_sha256[i]) {
            snprintf(input_sha[i], sizeof input_sha[i], "%s", input_sha256[i]);
            continue;
        }
        rc = ingest_sha256_file_hex(input_sha[i], inputs[i], err);
        if (rc != ERR_OK)
            goto done;
    }
    rows = xcalloc(built.n, sizeof *rows);
    for (size_t i = 0; i < built.n; i++) {
        const dsym_built *b = &built.items[i];
        store_dsym_record *d = &rows[i];
        store_dsym *row = &d->row;
        snprintf(row->uuid, sizeof row->uuid, "%s", b->uuid);
        snprintf(row->arch, sizeof row->arch, "%s", b->arch);
        snprintf(row->name, sizeof row->name, "%s", b->name);
        row->has_dwarf = b->has_dwarf;
        row->dwarf_bytes = (int64_t)b->dwarf_bytes;
        row->symcache_bytes = (int64_t)b->bytes;
        row->functions = (int32_t)b->functions;
        rc = ingest_sha256_file_hex(row->sha256, b->path, err);
        if (rc != ERR_OK)
            goto done;
        d->symcache_path = b->path;
        d->original_sha256 = input_sha[built.input[i]];
        d->original_path = inputs[built.input[i]];
        d->original_name = base_name(inputs[built.input[i]]);
    }

    rc = store_dsyms_record(rows, built.n, s, err);
    if (rc != ERR_OK)
        goto done;
    for (size_t i = 0; i < built.n; i++)
        if (rows[i].outcome != STORE_DSYM_EXISTS)
            symfiles_add(cache, rows[i].row.uuid, rows[i].row.sha256, built.items[i].path);

    ingest_dsym_file *files = arena_alloc_array(a, built.n, sizeof *files, err);
    if (!files) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    for (size_t i = 0; i < built.n; i++) {
        files[i].row = rows[i].row;
        files[i].status = rows[i].outcome == STORE_DSYM_CREATED    ? "created"
                          : rows[i].outcome == STORE_DSYM_UPGRADED ? "updated"
                                                                   : "exists";
        files[i].warnings = built.items[i].warnings;
        files[i].warning = NULL;
        if (built.items[i].warnings > 0 &&
            !(files[i].warning = arena_strdup(a, built.items[i].warning, err))) {
            rc = ERR_TOO_LARGE;
            goto done;
        }
    }
    *out = files;
    *n = built.n;
done:
    free(rows);
    free(input_sha);
    free(built.input);
    free(built.items);
    return rc;
}
