/*
 * ingest_dsym - turn an uploaded debug file into symcaches and rows.
 *
 * Postgres is the only shared state: every new symcache and the upload part it
 * was built from are stored as blobs (store_blobs.h) in the same transaction that makes the
 * dSYM row visible, so any node can fetch it and a rebuild can re-derive it. Order:
 *   1. build every slice into work_dir/symc/ (dsym_build_symcaches writes temp + rename);
 *   2. hash each symcache and each upload part (SHA-256, the blobs' names);
 *   3. each slice merged with the stored symcache of its UUID (merge_stored: DWARF names win
 *      over a symbol table's, never the reverse; an executable's unwind info is kept whichever
 *      arrives first), then one transaction: rows inserted, upgraded or given the merged
 *      symcache, only where the row is still what the merge read, and for those their blobs;
 *      a row and its symcache change together or not; a row changed meanwhile is merged and
 *      recorded again;
 *   4. after the commit, the new symcaches go into this node's file cache (a hard link), so
 *      the first lookup here needs no download. Nothing outside work_dir is written before.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "ingest/ingest.h"
#include "log/log.h"
#include "store/store_blobs.h"
#include "store/store_symbol_maps.h"
#include "symcache/symcache.h"

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


static err_code to_buf(void *ctx, const uint8_t *data, size_t len, err_info *err)
{
    (void)err;
    buf_append(ctx, data, len);
    return ERR_OK;
}

/* ---- UUID maps and BCSymbolMaps ---------------------------------------------------------- */

/* The maps an upload brings (to store) and the stored maps its slices asked for. */
struct ingest_maps {
    store *s;
    const char *work_dir;
    unsigned seq;                /* scratch file names */
    store_uuid_map *u;           /* xmalloc'd */
    size_t nu;
    store_symbol_map *m;         /* xmalloc'd; file.path and file.sha256 point into paths/shas */
    char (*paths)[4200];
    char (*shas)[65];
    char (*names)[256];          /* each map's file name */
    size_t nm;
    struct { char uuid[37]; symbolmap *map; } *loaded;  /* fetched from the store */
    size_t nloaded;
};
typedef struct ingest_maps maps_ctx;

static err_code write_file(const char *path, const uint8_t *data, size_t len, err_info *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(err, ERR_IO, "creating %s: %s", path, strerror(errno));
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return err_set(err, ERR_IO, "writing %s: %s", path, strerror(e));
        }
        data += n;
        len -= (size_t)n;
    }
    if (close(fd) != 0)
        return err_set(err, ERR_IO, "writing %s: %s", path, strerror(errno));
    return ERR_OK;
}

/* dsym_options.map_found: keep the map to store with the upload. A BCSymbolMap shorter than
 * a stored dSYM that needs it is some other build's: refused before anything is stored. */
static err_code keep_map(const dsym_map *map, void *vctx, err_info *err)
{
    maps_ctx *x = vctx;
    if (map->kind == DSYM_MAP_UUIDMAP) {
        x->u = xreallocarray(x->u, x->nu + 1, sizeof *x->u);
        snprintf(x->u[x->nu].uuid, 37, "%s", map->uuid);
        snprintf(x->u[x->nu].original, 37, "%s", map->original);
        x->nu++;
        return ERR_OK;
    }
    bool found;
    char dsym_uuid[37];
    uint32_t need;
    err_code rc = store_symbol_map_short(&found, dsym_uuid, &need, x->s, map->uuid, map->names,
                                         err);
    if (rc != ERR_OK)
        return rc;
    if (found)
        return err_set(err, ERR_INVALID, "%s: BCSymbolMap %s has %u names but the stored dSYM "
                       "%s refers to __hidden#%u_: it is the map of another build", map->name,
                       map->uuid, map->names, dsym_uuid, need - 1);
    size_t i = x->nm++;
    x->m = xreallocarray(x->m, x->nm, sizeof *x->m);
    x->paths = xreallocarray(x->paths, x->nm, sizeof *x->paths);
    x->shas = xreallocarray(x->shas, x->nm, sizeof *x->shas);
    x->names = xreallocarray(x->names, x->nm, sizeof *x->names);
    memset(&x->m[i], 0, sizeof x->m[i]);
    snprintf(x->m[i].uuid, 37, "%s", map->uuid);
    snprintf(x->names[i], sizeof x->names[i], "%s", map->name);
    x->m[i].names = map->names;
    x->m[i].bytes = (int64_t)map->len;
    snprintf(x->paths[i], sizeof x->paths[i], "%s/map-%u.bcsymbolmap", x->work_dir, x->seq++);
    rc = write_file(x->paths[i], map->data, map->len, err);
    if (rc == ERR_OK)
        rc = ingest_sha256_file_hex(x->shas[i], x->paths[i], err);
    return rc;
}

/* dsym_options.lookup: the stored BCSymbolMap of hidden slice `uuid`, fetched and parsed
 * once per upload; NULL when none is stored (or it cannot be read: the slice stays hidden
 * and is revealed when the map is uploaded again). */
static const symbolmap *stored_map(const char *uuid, char original[37], void *vctx)
{
    maps_ctx *x = vctx;
    char sha[65];
    err_info err = {0};
    if (store_symbol_map_find(original, sha, x->s, uuid, &err) != ERR_OK)
        return NULL;
    const char *key = original[0] ? original : uuid;
    for (size_t i = 0; i < x->nloaded; i++)
        if (strcmp(x->loaded[i].uuid, key) == 0)
            return x->loaded[i].map;
    buf bytes;
    buf_init(&bytes);
    uint64_t size;
    symbolmap *m = NULL;
    if (store_blob_fetch(&size, x->s, sha, to_buf, &bytes, &err) == ERR_OK &&
        symbolmap_parse(&m, bytes.data, bytes.len, 0, &err) == ERR_OK) {
        x->loaded = xreallocarray(x->loaded, x->nloaded + 1, sizeof *x->loaded);
        snprintf(x->loaded[x->nloaded].uuid, 37, "%s", key);
        x->loaded[x->nloaded++].map = m;
    }
    buf_reset(&bytes);
    return m;
}

static void maps_reset(maps_ctx *x);

ingest_maps *ingest_maps_new(store *s, const char *work_dir)
{
    ingest_maps *m = xcalloc(1, sizeof *m);
    m->s = s;
    m->work_dir = work_dir;
    return m;
}

void ingest_maps_attach(dsym_options *o, ingest_maps *m)
{
    o->lookup = stored_map;
    o->lookup_ctx = m;
}

void ingest_maps_free(ingest_maps *m)
{
    if (m == NULL)
        return;
    maps_reset(m);
    free(m);
}

static void maps_reset(maps_ctx *x)
{
    for (size_t i = 0; i < x->nloaded; i++)
        symbolmap_free(x->loaded[i].map);
    free(x->loaded);
    free(x->u);
    free(x->m);
    free(x->paths);
    free(x->shas);
    free(x->names);
    memset(x, 0, sizeof *x);
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

/* ---- one symcache per UUID: the stored one merged with a new one ------------------------- */

/* carry - merge the symcache at `path` with `other` into `out_path`: with other_is_base the
 * names are other's and path's sections are added, else the names are path's and other's
 * sections are added. *carried = false when the merge would be `path`'s symcache (or, with
 * other_is_base, other's) as it is: out_path is then not written. */
static err_code carry(bool *carried, const char *out_path, const char *path,
                      const symcache *other, bool other_is_base, err_info *err)
{
    symcache *mine = NULL;
    buf m;
    buf_init(&m);
    *carried = false;
    err_code rc = symcache_open(&mine, path, err);
    if (rc != ERR_OK)
        goto done;
    const symcache *base = other_is_base ? other : mine, *from = other_is_base ? mine : other;
    rc = symcache_merge(&m, base, from, err);
    if (rc != ERR_OK)
        goto done;
    if (m.len == symcache_size(base))
        goto done; /* `from` brings no section `base` lacks */
    rc = write_file(out_path, m.data, m.len, err);
    if (rc == ERR_OK)
        *carried = true;
done:
    buf_reset(&m);
    symcache_close(mine);
    return rc;
}

err_code ingest_symcache_carry(char out_path[4096], const char *built_path,
                               const char *current_sha256, store *s, const char *work_dir,
                               err_info *err)
{
    snprintf(out_path, 4096, "%s", built_path);
    if (current_sha256 == NULL || current_sha256[0] == '\0')
        return ERR_OK;
    char cur_path[4096], merged[4096];
    if ((size_t)snprintf(cur_path, sizeof cur_path, "%s/current-%s.symc", work_dir, current_sha256) >=
            sizeof cur_path ||
        (size_t)snprintf(merged, sizeof merged, "%s/carried-%s.symc", work_dir, current_sha256) >=
            sizeof merged)
        return err_set(err, ERR_IO, "scratch directory path is too long: %s", work_dir);
    err_code rc = ingest_fetch_upload(s, current_sha256, cur_path, err);
    if (rc != ERR_OK)
        return rc;
    symcache *cur = NULL;
    err_info oerr = {0};
    bool carried = false;
    /* an outdated or unreadable stored symcache has no sections to carry */
    if (symcache_open(&cur, cur_path, &oerr) == ERR_OK && symcache_has_unwind(cur)) {
        rc = carry(&carried, merged, built_path, cur, false, err);
        if (rc == ERR_OK && carried)
            snprintf(out_path, 4096, "%s", merged);
    }
    symcache_close(cur);
    (void)unlink(cur_path); /* ignored: scratch space */
    return rc;
}

/* merge_stored - make d (built from this upload at `b->path`) a checked record over the row
 * of its UUID as read now (store_dsym_record), its symcache one with the stored one: DWARF
 * names win over a symbol table's, the stored ones on a tie; each side's sections (an
 * executable's unwind info) are kept. `expect` and `merged_path` hold the strings d points to.
 * The stored symcache is fetched only when the merge can change something. */
static err_code merge_stored(store_dsym_record *d, char expect[65], char merged_path[4200],
                             const dsym_built *b, store *s, const char *work_dir, unsigned seq,
                             err_info *err)
{
    store_dsym_blobs cur;
    symcache *mine = NULL, *stored = NULL;
    char cur_path[4200];
    cur_path[0] = '\0';
    d->checked = true;
    d->expect_row = false;
    d->action = STORE_DSYM_KEEP;
    d->symcache_path = b->path;
    expect[0] = '\0';
    d->expect_sha256 = expect;
    err_code rc = store_dsym_blobs_get(&cur, s, b->uuid, err);
    if (rc == ERR_NOT_FOUND)
        return ERR_OK; /* a new UUID: inserted (a conflict if another upload was first) */
    if (rc != ERR_OK)
        return rc;
    d->expect_row = true;
    snprintf(expect, 65, "%s", cur.symcache_sha256);
    if (cur.symcache_sha256[0] == '\0') {
        d->checked = false; /* a row from before stored symcaches: as before merges */
        return ERR_OK;
    }
    rc = symcache_open(&mine, b->path, err);
    if (rc != ERR_OK)
        goto done;
    /* the row's rank, not the file's: a Breakpad .sym has names and lines but ranks below
     * DWARF (row has_dwarf false), so a .sym again is no upgrade of itself */
    bool new_names = d->row.has_dwarf && !cur.has_dwarf;
    if (!new_names && !symcache_has_unwind(mine))
        goto done; /* nothing this one adds: the stored one stays (KEEP) */
    snprintf(cur_path, sizeof cur_path, "%s/stored-%u.symc", work_dir, seq);
    rc = ingest_fetch_upload(s, cur.symcache_sha256, cur_path, err);
    if (rc != ERR_OK)
        goto done;
    err_info oerr = {0};
    if (symcache_open(&stored, cur_path, &oerr) != ERR_OK) {
        /* outdated or unreadable: nothing to carry over; DWARF replaces it as before */
        d->action = new_names ? STORE_DSYM_REPLACE_ROW : STORE_DSYM_KEEP;
        goto done;
    }
    snprintf(merged_path, 4200, "%s/merged-%u.symc", work_dir, seq);
    bool carried = false;
    rc = carry(&carried, merged_path, b->path, stored, !new_names, err);
    if (rc != ERR_OK)
        goto done;
    if (new_names) {
        d->action = STORE_DSYM_REPLACE_ROW;
        if (carried)
            d->symcache_path = merged_path;
    } else if (carried) {
        d->action = STORE_DSYM_REPLACE_SYMCACHE;
        d->symcache_path = merged_path;
    }
done:
    symcache_close(stored);
    symcache_close(mine);
    if (cur_path[0])
        (void)unlink(cur_path); /* ignored: scratch space */
    if (rc == ERR_OK && d->symcache_path != b->path) {
        struct stat st;
        rc = ingest_sha256_file_hex(d->row.sha256, d->symcache_path, err);
        if (rc == ERR_OK && stat(d->symcache_path, &st) == 0)
            d->row.symcache_bytes = (int64_t)st.st_size;
    }
    return rc;
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
    struct { char expect[65]; char path[4200]; } *merge = NULL; /* per row: merge_stored's strings */
    char (*input_sha)[65] = NULL;
    char symc_dir[4096];
    err_code rc = ERR_OK;
    maps_ctx maps = {.s = s, .work_dir = work_dir};
    dsym_options o = opts ? *opts : (dsym_options){0};
    o.map_found = keep_map;
    o.map_found_ctx = &maps;
    o.lookup = stored_map;
    o.lookup_ctx = &maps;
    *out = NULL;
    *n = 0;

    snprintf(symc_dir, sizeof symc_dir, "%s/symc", work_dir);
    if (mkdir(symc_dir, 0700) != 0 && errno != EEXIST) {
        rc = err_set(err, ERR_IO, "creating %s: %s", symc_dir, strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < ninputs; i++) {
        built.current = i;
        rc = dsym_build_symcaches(inputs[i], symc_dir, &o, collect_built, &built, err);
        if (rc == ERR_NOT_FOUND)   /* the input is ours: "not found" means nothing usable */
            rc = err_set(err, ERR_INVALID, "upload holds no debug file: %s", err->msg);
        if (rc != ERR_OK)
            goto done;
    }
    if (built.n == 0 && maps.nu == 0 && maps.nm == 0) {
        rc = err_set(err, ERR_INVALID, "upload holds no Mach-O debug file");
        goto done;
    }
    for (size_t i = 0; i < maps.nm; i++) {
        maps.m[i].file.path = maps.paths[i];
        maps.m[i].file.sha256 = maps.shas[i];
    }
    /* the maps first: a dSYM of this upload that they reveal is built revealed already */
    rc = store_symbol_maps_record(maps.u, maps.nu, maps.m, maps.nm, s, err);
    if (rc != ERR_OK)
        goto done;

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
    merge = xcalloc(built.n ? built.n : 1, sizeof *merge);
    for (size_t i = 0; i < built.n; i++) {
        const dsym_built *b = &built.items[i];
        store_dsym_record *d = &rows[i];
        store_dsym *row = &d->row;
        snprintf(row->uuid, sizeof row->uuid, "%s", b->uuid);
        snprintf(row->arch, sizeof row->arch, "%s", b->arch);
        snprintf(row->name, sizeof row->name, "%s", b->name);
        /* a Breakpad .sym's names and lines count below DWARF: the store lets a dSYM of the
         * same UUID replace it (a row without DWARF is upgraded), never the reverse */
        row->has_dwarf = b->has_dwarf && !b->breakpad;
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
        d->hidden_names = b->hidden_left;
        d->hidden_max = b->hidden_max;
        d->revealed_by = b->revealed ? b->map_uuid : NULL;
    }
    /* One symcache per UUID: each row merged with the stored one (a dSYM after its
     * executable keeps the executable's unwind info, an executable after its dSYM adds it
     * without replacing DWARF names), recorded only over the row it was merged with; a row
     * another upload changed meanwhile is merged and recorded again. */
    for (unsigned attempt = 0; built.n > 0; attempt++) {
        store_dsym_record *todo = xcalloc(built.n, sizeof *todo);
        size_t *at = xcalloc(built.n, sizeof *at), ntodo = 0;
        for (size_t i = 0; rc == ERR_OK && i < built.n; i++) {
            if (attempt > 0 && rows[i].outcome != STORE_DSYM_CONFLICT)
                continue;
            rows[i].row.symcache_bytes = (int64_t)built.items[i].bytes;
            rc = ingest_sha256_file_hex(rows[i].row.sha256, built.items[i].path, err);
            if (rc == ERR_OK)
                rc = merge_stored(&rows[i], merge[i].expect, merge[i].path, &built.items[i], s,
                                  symc_dir, (unsigned)(attempt * built.n + i), err);
            at[ntodo] = i;
            todo[ntodo++] = rows[i];
        }
        if (rc == ERR_OK && ntodo > 0)
            rc = store_dsyms_record(todo, ntodo, s, err);
        bool again = false;
        for (size_t k = 0; rc == ERR_OK && k < ntodo; k++) {
            rows[at[k]] = todo[k];
            if (todo[k].outcome == STORE_DSYM_CONFLICT) {
                again = true;
                log_event(LOG_INFO, "dsym_merge_again", "uuid=%s attempt=%u", todo[k].row.uuid,
                          attempt + 1);
            }
        }
        free(todo);
        free(at);
        if (rc != ERR_OK)
            goto done;
        if (!again)
            break;
        if (attempt == 4) {
            rc = err_set(err, ERR_STORE, "debug file %s: changed by concurrent uploads five times "
                         "while this one merged with it", built.items[0].uuid);
            goto done;
        }
    }
    bool stored_hidden = false;
    for (size_t i = 0; i < built.n; i++) {
        if (rows[i].outcome == STORE_DSYM_EXISTS)
            continue;
        symfiles_add(cache, rows[i].row.uuid, rows[i].row.sha256, rows[i].symcache_path);
        stored_hidden |= built.items[i].hidden_left > 0;
    }
    /* Hidden dSYMs stored before that this upload's maps complete: rebuilt now. And a hidden
     * dSYM stored now: its map may have been committed by a concurrent upload after this
     * build looked for it (sentry-cli sends dSYM and maps at once), and that upload's pass
     * may have run before this row was committed: looked for once more. */
    if (maps.nu > 0 || maps.nm > 0 || stored_hidden) {
        unsigned revealed;
        char reveal_dir[4200];
        snprintf(reveal_dir, sizeof reveal_dir, "%s/reveal", work_dir);
        if (mkdir(reveal_dir, 0700) != 0 && errno != EEXIST) {
            rc = err_set(err, ERR_IO, "creating %s: %s", reveal_dir, strerror(errno));
            goto done;
        }
        rc = ingest_dsyms_reveal(&revealed, s, reveal_dir, cache, opts, err);
        if (rc != ERR_OK)
            goto done;
    }

    size_t nfiles = built.n + maps.nu + maps.nm;
    ingest_dsym_file *files = arena_alloc_array(a, nfiles, sizeof *files, err);
    if (!files) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    for (size_t i = 0; i < maps.nu + maps.nm; i++) {
        ingest_dsym_file *f = &files[built.n + i];
        memset(f, 0, sizeof *f);
        bool um = i < maps.nu;
        f->kind = um ? "uuidmap" : "bcsymbolmap";
        snprintf(f->row.uuid, sizeof f->row.uuid, "%s", um ? maps.u[i].uuid
                                                           : maps.m[i - maps.nu].uuid);
        snprintf(f->row.arch, sizeof f->row.arch, "any");
        if (um)
            snprintf(f->row.name, sizeof f->row.name, "%s.plist", maps.u[i].uuid);
        else
            snprintf(f->row.name, sizeof f->row.name, "%s", maps.names[i - maps.nu]);
        f->status = um || maps.m[i - maps.nu].created ? "created" : "exists";
        if (um)
            snprintf(f->original, sizeof f->original, "%s", maps.u[i].original);
        else
            f->names = maps.m[i - maps.nu].names;
    }
    for (size_t i = 0; i < built.n; i++) {
        files[i].kind = "dsym";
        files[i].hidden = built.items[i].hidden_left;
        files[i].symbol_map = NULL;
        if (built.items[i].hidden_left > 0 &&
            !(files[i].symbol_map = arena_strdup(a, built.items[i].map_uuid, err))) {
            rc = ERR_TOO_LARGE;
            goto done;
        }
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
    *n = nfiles;
done:
    maps_reset(&maps);
    free(merge);
    free(rows);
    free(input_sha);
    free(built.input);
    free(built.items);
    return rc;
}

/* ---- dSYMs stored hidden, revealed once their maps are there ------------------------------ */

err_code ingest_dsyms_reveal(unsigned *revealed, store *s, const char *work_dir,
                             symfiles *cache, const dsym_options *opts, err_info *err)
{
    arena *a = arena_new(0);
    store_dsym_original *rows;
    size_t n;
    *revealed = 0;
    err_code rc = store_dsyms_to_reveal(&rows, &n, s, a, err);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const store_dsym_original *d = &rows[i];
        maps_ctx maps = {.s = s, .work_dir = work_dir};
        dsym_options o = opts ? *opts : (dsym_options){0};
        o.lookup = stored_map;
        o.lookup_ctx = &maps;
        o.map_found = NULL;   /* its upload's own maps are stored already */
        built_list built = {0};
        char dir[4096], orig[4400], symc[4200];
        snprintf(dir, sizeof dir, "%s/dsym-%zu", work_dir, i);
        snprintf(symc, sizeof symc, "%s/symc", dir);
        const char *name = strrchr(d->original_name, '/');
        name = name ? name + 1 : d->original_name[0] ? d->original_name : "upload";
        snprintf(orig, sizeof orig, "%s/%s", dir, name);
        err_info ferr = {0};
        err_code frc = mkdir(dir, 0700) == 0 && mkdir(symc, 0700) == 0
                           ? ERR_OK
                           : err_set(&ferr, ERR_IO, "creating %s: %s", dir, strerror(errno));
        if (frc == ERR_OK)
            frc = ingest_fetch_upload(s, d->original_sha256, orig, &ferr);
        if (frc == ERR_OK)
            frc = dsym_build_symcaches(orig, symc, &o, collect_built, &built, &ferr);
        for (size_t k = 0; frc == ERR_OK && k < built.n; k++) {
            const dsym_built *b = &built.items[k];
            if (strcasecmp(b->uuid, d->uuid) != 0 || !b->revealed)
                continue;
            char sha[65], path[4096];
            bool done = false;
            struct stat st;
            /* the unwind info an executable of this UUID added stays */
            frc = ingest_symcache_carry(path, b->path, d->symcache_sha256, s, dir, &ferr);
            if (frc == ERR_OK)
                frc = ingest_sha256_file_hex(sha, path, &ferr);
            if (frc == ERR_OK && stat(path, &st) != 0)
                frc = err_set(&ferr, ERR_IO, "%s: %s", path, strerror(errno));
            store_blob_file f = {sha, path};
            if (frc == ERR_OK)
                frc = store_dsym_reveal(&done, s, d->uuid, d->symcache_sha256, &f,
                                        (int64_t)st.st_size, (int32_t)b->functions,
                                        b->hidden_left, b->map_uuid, &ferr);
            if (frc == ERR_OK && done) {
                if (cache) {
                    symfiles_forget(cache, d->uuid);
                    symfiles_add(cache, d->uuid, sha, path);
                }
                (*revealed)++;
            }
        }
        free(built.items);
        free(built.input);
        maps_reset(&maps);
        if (frc != ERR_OK)   /* it stays hidden: the next map uploaded tries again */
            log_event(LOG_WARN, "dsym_reveal_failed", "uuid=%s error=%s message=%s", d->uuid,
                      err_name(frc), ferr.msg);
    }
    arena_free(a);
    return rc;
}
