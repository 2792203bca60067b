/*
 * ingest_rebuild - `stacksift symcache rebuild`: symcaches re-derived from the stored
 * original uploads (after a symcache format change, or a better DWARF reader).
 *
 * Per original (several debug files may share one: a fat file, a zip of bundles): fetch it
 * into work_dir/orig-N/<its upload name> (the name matters: a bare Mach-O's image is named
 * after its file), build every slice into work_dir/symc-N/, then for each debug file of that
 * original compare and, if different, replace its symcache in one transaction that also
 * stores the new blob. A node that has the old file keeps using it until it re-reads the row.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "ingest/ingest.h"
#include "store/store_blobs.h"

typedef struct {
    int fd;
    const char *path;
} file_sink;

static err_code to_file(void *vctx, const uint8_t *data, size_t len, err_info *err)
{
    file_sink *x = vctx;
    while (len > 0) {
        ssize_t n = write(x->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_set(err, ERR_IO, "writing %s: %s", x->path, strerror(errno));
        data += n;
        len -= (size_t)n;
    }
    return ERR_OK;
}

typedef struct {
    dsym_built *items;
    size_t n, cap;
} built_list;

static void collect(const dsym_built *b, void *ctx)
{
    built_list *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->items = xreallocarray(l->items, l->cap, sizeof *l->items);
    }
    l->items[l->n++] = *b;
}

err_code ingest_fetch_upload(store *s, const char *sha, const char *path, err_info *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(err, ERR_IO, "creating %s: %s", path, strerror(errno));
    file_sink x = {fd, path};
    uint64_t bytes;
    err_code rc = store_blob_fetch(&bytes, s, sha, to_file, &x, err);
    if (close(fd) != 0 && rc == ERR_OK)
        rc = err_set(err, ERR_IO, "writing %s: %s", path, strerror(errno));
    char got[65];
    if (rc == ERR_OK)
        rc = ingest_sha256_file_hex(got, path, err);
    if (rc == ERR_OK && strcmp(got, sha) != 0)
        rc = err_set(err, ERR_INTERNAL, "stored upload %s has SHA-256 %s", sha, got);
    return rc;
}

err_code ingest_symcache_rebuild(unsigned *failed, store *s, const char *uuid,
                                 const char *work_dir, const dsym_options *opts,
                                 ingest_rebuilt_fn fn, void *ctx, err_info *err)
{
    arena *a = arena_new(0);
    store_dsym_original *rows;
    size_t n;
    *failed = 0;
    /* the stored maps of App Store dSYMs: a revealed symcache stays revealed */
    ingest_maps *maps = ingest_maps_new(s, work_dir);
    dsym_options o = opts ? *opts : (dsym_options){0};
    ingest_maps_attach(&o, maps);
    opts = &o;
    err_code rc = store_dsyms_rebuildable(&rows, &n, s, a, err);
    built_list built = {0};
    char orig_dir[4096] = "", symc_dir[4096] = "", orig_path[4096], loaded[65] = "";
    err_info load_err = {0};
    unsigned seq = 0;
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const store_dsym_original *d = &rows[i];
        if (uuid && strcasecmp(uuid, d->uuid) != 0)
            continue;
        ingest_rebuilt out = {0};
        snprintf(out.uuid, sizeof out.uuid, "%s", d->uuid);
        if (strcmp(loaded, d->original_sha256) != 0) {
            /* a new original: the previous one's files go first */
            for (size_t k = 0; k < built.n; k++)
                (void)unlink(built.items[k].path);   /* ignored: scratch space */
            built.n = 0;
            if (orig_path[0] && loaded[0])
                (void)unlink(orig_path);
            (void)rmdir(orig_dir);
            (void)rmdir(symc_dir);
            seq++;
            snprintf(orig_dir, sizeof orig_dir, "%s/orig-%u", work_dir, seq);
            snprintf(symc_dir, sizeof symc_dir, "%s/symc-%u", work_dir, seq);
            const char *name = d->original_name[0] ? strrchr(d->original_name, '/') : NULL;
            name = name ? name + 1 : d->original_name[0] ? d->original_name : "upload";
            snprintf(orig_path, sizeof orig_path, "%s/%s", orig_dir, name);
            snprintf(loaded, sizeof loaded, "%s", d->original_sha256);
            err_clear(&load_err);
            if (mkdir(orig_dir, 0700) != 0 || mkdir(symc_dir, 0700) != 0) {
                rc = err_set(err, ERR_IO, "creating %s: %s", orig_dir, strerror(errno));
                break;
            }
            if (ingest_fetch_upload(s, d->original_sha256, orig_path, &load_err) == ERR_OK)
                (void)dsym_build_symcaches(orig_path, symc_dir, opts, collect, &built, &load_err);
        }
        const dsym_built *b = NULL;
        for (size_t k = 0; k < built.n; k++)
            if (strcasecmp(built.items[k].uuid, d->uuid) == 0)
                b = &built.items[k];
        err_code frc = ERR_OK;
        if (b == NULL) {
            frc = load_err.code != ERR_OK
                      ? err_set(&out.err, load_err.code, "%s", load_err.msg)
                      : err_set(&out.err, ERR_NOT_FOUND, "the stored upload has no slice %s",
                                d->uuid);
        }
        /* what another debug file of the UUID added (an executable's unwind info) stays */
        char path[4096] = "";
        struct stat st;
        if (frc == ERR_OK)
            frc = ingest_symcache_carry(path, b->path, d->symcache_sha256, s, symc_dir, &out.err);
        if (frc == ERR_OK && stat(path, &st) != 0)
            frc = err_set(&out.err, ERR_IO, "%s: %s", path, strerror(errno));
        if (frc == ERR_OK)
            frc = ingest_sha256_file_hex(out.sha256, path, &out.err);
        /* built with the maps stored now: it may hide more or less than the stored one */
        store_dsym_hidden hidden = {0};
        if (b != NULL)
            hidden = (store_dsym_hidden){b->hidden_left, b->hidden_max,
                                         b->revealed ? b->map_uuid : NULL};
        if (frc == ERR_OK && strcmp(out.sha256, d->symcache_sha256) == 0) {
            /* the same file: its row's hidden names are still made right, had an older
             * rebuild left them as they were */
            bool corrected = false;
            frc = store_dsym_hidden_correct(&corrected, s, d->uuid, d->symcache_sha256, &hidden,
                                            &out.err);
            out.status = "unchanged";
        } else if (frc == ERR_OK) {
            bool replaced = false;
            store_blob_file f = {out.sha256, path};
            frc = store_dsym_symcache_replace(&replaced, s, d->uuid, d->symcache_sha256, &f,
                                              (int64_t)st.st_size, (int32_t)b->functions,
                                              &hidden, &out.err);
            out.status = replaced ? "rebuilt" : "changed";
        }
        if (frc != ERR_OK) {
            out.status = "failed";
            (*failed)++;
        }
        if (path[0] && b != NULL && strcmp(path, b->path) != 0)
            (void)unlink(path); /* ignored: scratch space */
        fn(&out, ctx);
    }
    for (size_t k = 0; k < built.n; k++)
        (void)unlink(built.items[k].path);   /* ignored: scratch space */
    if (loaded[0])
        (void)unlink(orig_path);
    if (orig_dir[0]) {
        (void)rmdir(orig_dir);
        (void)rmdir(symc_dir);
    }
    free(built.items);
    ingest_maps_free(maps);
    arena_free(a);
    return rc;
}
