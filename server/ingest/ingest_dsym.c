/*
 * ingest_dsym - turn an uploaded debug file into symcaches and rows.
 *
 * Order of effects, so that an error leaves nothing half-written:
 *   1. build every slice into work_dir/symc/ (dsym_build_symcaches writes temp + rename);
 *   2. move each new symcache to symcache_dir/<UUID>.symc (rename: atomic, same file system;
 *      a UUID whose symcache already exists keeps it);
 *   3. insert all rows in one transaction; a row whose stored twin has no DWARF while this
 *      one has is updated, and its symcache replaced after the commit;
 *   on an error in 2 or 3, the symcaches placed in 2 are removed again.
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

static void hex_encode(char *out, const uint8_t *in, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Hex SHA-256 of the file at `path`, streamed: the dsyms row's checksum of its symcache.
 * Errors ERR_IO, ERR_INTERNAL (OpenSSL could not set up the digest). */
static err_code sha256_file_hex(char out[65], const char *path, err_info *err)
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
    size_t n, cap;
} built_list;

static void collect_built(const dsym_built *built, void *ctx)
{
    built_list *l = ctx;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].uuid, built->uuid) == 0) {
            l->items[i] = *built;   /* the same UUID twice in one upload: one row */
            return;
        }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->items = xreallocarray(l->items, l->cap, sizeof *l->items);
    }
    l->items[l->n++] = *built;
}

err_code ingest_dsym_upload(ingest_dsym_file **out, size_t *n, store *s,
                            const char *const *inputs, size_t ninputs, const char *work_dir,
                            const char *symcache_dir, const dsym_options *opts, arena *a,
                            err_info *err)
{
    built_list built = {0};
    bool *placed = NULL;
    store_dsym_outcome *outcome = NULL;
    store_dsym *rows = NULL;
    char symc_dir[4096], final_path[4096];
    err_code rc = ERR_OK;
    *out = NULL;
    *n = 0;

    snprintf(symc_dir, sizeof symc_dir, "%s/symc", work_dir);
    if (mkdir(symc_dir, 0700) != 0 && errno != EEXIST) {
        rc = err_set(err, ERR_IO, "creating %s: %s", symc_dir, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < ninputs; i++) {
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

    placed = xcalloc(built.n, sizeof *placed);
    outcome = xcalloc(built.n, sizeof *outcome);
    rows = xcalloc(built.n, sizeof *rows);
    for (size_t i = 0; i < built.n; i++) {
        const dsym_built *b = &built.items[i];
        store_dsym *row = &rows[i];
        snprintf(row->uuid, sizeof row->uuid, "%s", b->uuid);
        snprintf(row->arch, sizeof row->arch, "%s", b->arch);
        snprintf(row->name, sizeof row->name, "%s", b->name);
        row->has_dwarf = b->has_dwarf;
        row->dwarf_bytes = (int64_t)b->dwarf_bytes;
        row->symcache_bytes = (int64_t)b->bytes;
        row->functions = (int32_t)b->functions;
        rc = sha256_file_hex(row->sha256, b->path, err);
        if (rc != ERR_OK)
            goto done;
        snprintf(final_path, sizeof final_path, "%s/%s.symc", symcache_dir, b->uuid);
        if (access(final_path, F_OK) == 0)
            continue;   /* recorded before (or being recorded): keep the existing file */
        if (rename(b->path, final_path) != 0) {
            rc = err_set(err, ERR_IO, "moving symcache to %s: %s", final_path, strerror(errno));
            goto done;
        }
        placed[i] = true;
    }

    rc = store_dsyms_insert(outcome, rows, built.n, s, err);
    if (rc != ERR_OK)
        goto done;
    /* The row now describes DWARF where a symbol-table-only symcache sits: replace it. The
     * row is committed first; a failure here leaves the older, still valid, symcache. */
    for (size_t i = 0; i < built.n; i++) {
        if (outcome[i] != STORE_DSYM_UPGRADED || placed[i])
            continue;
        snprintf(final_path, sizeof final_path, "%s/%s.symc", symcache_dir, built.items[i].uuid);
        if (rename(built.items[i].path, final_path) != 0) {
            rc = err_set(err, ERR_IO, "replacing symcache %s: %s", final_path, strerror(errno));
            goto done;
        }
    }

    ingest_dsym_file *files = arena_alloc_array(a, built.n, sizeof *files, err);
    if (!files) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    for (size_t i = 0; i < built.n; i++) {
        files[i].row = rows[i];
        files[i].status = outcome[i] == STORE_DSYM_CREATED    ? "created"
                          : outcome[i] == STORE_DSYM_UPGRADED ? "updated"
                                                              : "exists";
    }
    *out = files;
    *n = built.n;
done:
    if (rc != ERR_OK && placed) {
        for (size_t i = 0; i < built.n; i++) {
            if (!placed[i])
                continue;
            snprintf(final_path, sizeof final_path, "%s/%s.symc", symcache_dir,
                     built.items[i].uuid);
            /* Ignored: if even this fails, the file is a complete symcache nobody refers to. */
            (void)unlink(final_path);
        }
    }
    free(rows);
    free(outcome);
    free(placed);
    free(built.items);
    return rc;
}
