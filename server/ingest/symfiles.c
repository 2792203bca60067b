/*
 * symfiles - the node's symcache file cache (see symfiles.h).
 *
 * Two small hash tables behind one mutex: rows (UUID -> SHA-256 of its current symcache, or
 * "none") and files (SHA-256 -> state, size, LRU tick). A file is BUSY while one thread
 * downloads or checks it; the others wait on the condition variable, so a node fetches each
 * symcache once however many workers and requests want it at the same moment. The slow
 * parts (database, disk, hashing) run without the mutex.
 */
#include "ingest/symfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/workpool.h"
#include "base/xalloc.h"
#include "ingest/ingest.h"
#include "log/log.h"
#include "store/store_blobs.h"

#define ROW_BUCKETS 4096u
#define FILE_BUCKETS 1024u
#define TOUCH_EVERY_MS (3600.0 * 1000.0) /* dsyms.last_used_at moves at most hourly */
#define TMP_PREFIX ".part-"

typedef struct row_entry {
    char uuid[37];
    char sha[65];            /* "" = no stored symcache */
    double checked_ms;       /* when the row was read */
    double touched_ms;       /* when last_used_at was last moved by this node */
    uint64_t gen;            /* bumped by symfiles_forget: a read that began before it is
                                not remembered (it may predate a commit this node made) */
    bool wanted;             /* the intake found it out of date: the refresher reads it */
    struct row_entry *next;
} row_entry;

enum { F_ABSENT, F_BUSY, F_READY, F_UNCHECKED };

typedef struct file_entry {
    char sha[65];
    int state;
    uint64_t bytes;          /* counted in symfiles.bytes when READY or UNCHECKED */
    uint64_t used;           /* LRU tick */
    struct file_entry *next;
} file_entry;

struct symfiles {
    store *s;
    void (*on_add)(void *ctx); /* symfiles_on_add */
    void *on_add_ctx;
    char *dir;
    uint64_t max_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    row_entry *rows[ROW_BUCKETS];
    file_entry *files[FILE_BUCKETS];
    uint64_t bytes, nfiles, tick;
    unsigned nwanted;        /* rows with `wanted` set */
    workpool *refresher;     /* one thread: re-reads the rows the intake wants (symfiles_known) */
    atomic_uint_fast64_t hits, misses, downloads, download_bytes, download_failures, evictions,
        tmp_seq, refresh_failures;
};

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static unsigned hash_str(const char *s)
{
    unsigned h = 2166136261u;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static bool is_sha_name(const char *name)
{
    size_t n = strlen(name);
    if (n != 64 + 5 || strcmp(name + 64, ".symc") != 0)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return true;
}

/* The file entry of `sha`, created ABSENT if `create`; under the mutex. */
static file_entry *file_find(symfiles *f, const char *sha, bool create)
{
    file_entry **b = &f->files[hash_str(sha) % FILE_BUCKETS];
    for (file_entry *e = *b; e; e = e->next)
        if (strcmp(e->sha, sha) == 0)
            return e;
    if (!create)
        return NULL;
    file_entry *e = xcalloc(1, sizeof *e);
    snprintf(e->sha, sizeof e->sha, "%s", sha);
    e->next = *b;
    *b = e;
    return e;
}

static void file_forget(symfiles *f, file_entry *gone)
{
    file_entry **pp = &f->files[hash_str(gone->sha) % FILE_BUCKETS];
    while (*pp != gone)
        pp = &(*pp)->next;
    *pp = gone->next;
    free(gone);
}

static void file_path(char out[4096], const symfiles *f, const char *sha)
{
    snprintf(out, 4096, "%s/%s.symc", f->dir, sha);
}

/* Unlink least recently used files until the cache fits, never `keep`; under the mutex. */
static void evict(symfiles *f, const file_entry *keep)
{
    while (f->bytes > f->max_bytes) {
        file_entry *lru = NULL;
        for (unsigned b = 0; b < FILE_BUCKETS; b++)
            for (file_entry *e = f->files[b]; e; e = e->next)
                if (e != keep && (e->state == F_READY || e->state == F_UNCHECKED) &&
                    (lru == NULL || e->used < lru->used))
                    lru = e;
        if (lru == NULL)
            return;   /* only `keep` is left: one symcache larger than the budget stays */
        char path[4096];
        file_path(path, f, lru->sha);
        /* A reader that mapped it keeps its mapping; the next get downloads it again. */
        if (unlink(path) != 0 && errno != ENOENT)
            log_event(LOG_WARN, "symcache_evict_failed", "path=%s message=%s", path,
                      strerror(errno));
        f->bytes -= lru->bytes;
        f->nfiles--;
        file_forget(f, lru);
        atomic_fetch_add(&f->evictions, 1);
    }
}

static void refresher_run(workpool *wp, unsigned index, void *ctx);

err_code symfiles_open(symfiles **out, store *s, const char *dir, uint64_t max_bytes,
                       err_info *err)
{
    *out = NULL;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return err_set(err, ERR_IO, "creating %s: %s", dir, strerror(errno));
    DIR *d = opendir(dir);
    if (d == NULL)
        return err_set(err, ERR_IO, "reading %s: %s", dir, strerror(errno));
    symfiles *f = xcalloc(1, sizeof *f);
    f->s = s;
    f->dir = xstrdup(dir);
    f->max_bytes = max_bytes;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
            /* a download a killed process did not finish: never used, never renamed */
            (void)unlink(path);   /* ignored: the next start tries again */
            continue;
        }
        if (!is_sha_name(e->d_name) || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        char sha[65];
        memcpy(sha, e->d_name, 64);
        sha[64] = '\0';
        file_entry *fe = file_find(f, sha, true);
        fe->state = F_UNCHECKED;   /* checked against its name before first use */
        fe->bytes = (uint64_t)st.st_size;
        fe->used = (uint64_t)st.st_mtime; /* older files go first; ticks of use start above */
        if (f->tick < fe->used)
            f->tick = fe->used;
        f->bytes += fe->bytes;
        f->nfiles++;
    }
    closedir(d);
    evict(f, NULL);
    err_code rc = workpool_start(&f->refresher, 1, refresher_run, f, err);
    if (rc != ERR_OK) {
        symfiles_close(f);
        return rc;
    }
    *out = f;
    return ERR_OK;
}

void symfiles_close(symfiles *f)
{
    if (f == NULL)
        return;
    workpool_free(f->refresher);   /* first: it reads the tables below */
    for (unsigned b = 0; b < ROW_BUCKETS; b++)
        for (row_entry *e = f->rows[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    for (unsigned b = 0; b < FILE_BUCKETS; b++)
        for (file_entry *e = f->files[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f->dir);
    free(f);
}

/* ---- hashing and downloading --------------------------------------------------------- */

static void hex32(char out[65], const unsigned char md[32])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

typedef struct {
    int fd;
    const char *path;
    EVP_MD_CTX *md;
} sink_ctx;

static err_code write_sink(void *vctx, const uint8_t *data, size_t len, err_info *err)
{
    sink_ctx *x = vctx;
    EVP_DigestUpdate(x->md, data, len);
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

/* Fetch blob `sha` to <dir>/<sha>.symc: temp file, SHA-256 checked, fsync, rename. */
static err_code download(uint64_t *bytes, symfiles *f, const char *sha, err_info *err)
{
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/" TMP_PREFIX "%s-%ld-%llu", f->dir, sha, (long)getpid(),
             (unsigned long long)atomic_fetch_add(&f->tmp_seq, 1));
    file_path(final, f, sha);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_set(err, ERR_IO, "creating %s: %s", tmp, strerror(errno));
    sink_ctx x = {fd, tmp, EVP_MD_CTX_new()};
    EVP_DigestInit_ex(x.md, EVP_sha256(), NULL);
    err_code rc = store_blob_fetch(bytes, f->s, sha, write_sink, &x, err);
    unsigned char digest[32];
    unsigned len = 32;
    char got[65];
    EVP_DigestFinal_ex(x.md, digest, &len);
    EVP_MD_CTX_free(x.md);
    hex32(got, digest);
    if (rc == ERR_OK && strcmp(got, sha) != 0)
        rc = err_set(err, ERR_INTERNAL, "stored symcache %s has SHA-256 %s: not used", sha, got);
    /* Durable before it gets its name: after a crash the name means a complete file. */
    if (rc == ERR_OK && fsync(fd) != 0)
        rc = err_set(err, ERR_IO, "writing %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == ERR_OK)
        rc = err_set(err, ERR_IO, "writing %s: %s", tmp, strerror(errno));
    if (rc == ERR_OK && rename(tmp, final) != 0)
        rc = err_set(err, ERR_IO, "renaming %s: %s", tmp, strerror(errno));
    if (rc != ERR_OK)
        (void)unlink(tmp);   /* ignored: a leftover is deleted at the next start */
    return rc;
}

/* ---- the row cache ------------------------------------------------------------------- */

static row_entry *row_find(symfiles *f, const char *uuid, bool create)
{
    row_entry **b = &f->rows[hash_str(uuid) % ROW_BUCKETS];
    for (row_entry *e = *b; e; e = e->next)
        if (strcmp(e->uuid, uuid) == 0)
            return e;
    if (!create)
        return NULL;
    row_entry *e = xcalloc(1, sizeof *e);
    snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
    e->checked_ms = -1e18;
    e->touched_ms = -1e18;
    e->next = *b;
    *b = e;
    return e;
}

/* The hex SHA-256 of `uuid`'s current symcache, "" if it has none. */
static err_code current_sha(char sha[65], symfiles *f, const char *uuid, bool fresh,
                            err_info *err)
{
    for (int attempt = 0;; attempt++) {
        double now = mono_ms();
        pthread_mutex_lock(&f->mu);
        row_entry *re = row_find(f, uuid, true);
        bool ask = re->sha[0] ? now - re->checked_ms > SYMFILES_ROW_TTL_MS
                              : fresh || now - re->checked_ms > SYMFILES_MISS_TTL_MS;
        uint64_t gen = re->gen;
        if (!ask)
            snprintf(sha, 65, "%s", re->sha);
        pthread_mutex_unlock(&f->mu);
        if (!ask)
            return ERR_OK;

        store_dsym_blobs b;
        err_code rc = store_dsym_blobs_get(&b, f->s, uuid, err);
        if (rc == ERR_NOT_FOUND)
            b.symcache_sha256[0] = '\0';
        else if (rc != ERR_OK)
            return rc;
        bool touch = false, kept = false;
        pthread_mutex_lock(&f->mu);
        re = row_find(f, uuid, true);   /* entries are never freed before symfiles_close */
        if (re->gen == gen || attempt >= 2) {
            /* No upload on this node committed while it was read: remember it (after two
             * retries it is still newer than anything remembered before). */
            snprintf(re->sha, sizeof re->sha, "%s", b.symcache_sha256);
            re->checked_ms = re->gen == gen ? now : -1e18;
            if (re->sha[0] && now - re->touched_ms > TOUCH_EVERY_MS) {
                re->touched_ms = now;
                touch = true;
            }
            snprintf(sha, 65, "%s", b.symcache_sha256);
            kept = true;
        }
        pthread_mutex_unlock(&f->mu);
        if (touch) {
            err_info terr = {0};
            if (store_dsym_touch(f->s, uuid, &terr) != ERR_OK)   /* moves again next hour */
                log_event(LOG_WARN, "dsym_touch_failed", "uuid=%s message=%s", uuid, terr.msg);
        }
        if (kept)
            return ERR_OK;
    }
}

int symfiles_known(char sha256[65], symfiles *f, const char *uuid)
{
    double now = mono_ms();
    bool wake = false;
    pthread_mutex_lock(&f->mu);
    row_entry *re = row_find(f, uuid, true);
    double age = now - re->checked_ms;
    int known = -1;
    if (age <= SYMFILES_INTAKE_STALE_MS) {
        memcpy(sha256, re->sha, 65);   /* NUL-terminated within its 65 bytes */
        known = re->sha[0] ? 1 : 0;
    }
    if (age > (re->sha[0] ? SYMFILES_ROW_TTL_MS : SYMFILES_MISS_TTL_MS) && !re->wanted &&
        f->nwanted < SYMFILES_WANTED_MAX) {
        re->wanted = true;   /* read again in the background, never on the caller's thread */
        f->nwanted++;
        wake = true;
    }
    pthread_mutex_unlock(&f->mu);
    if (wake && f->refresher)
        workpool_wake(f->refresher);
    return known;
}

/* The refresher (workpool_fn, one thread): reads the rows symfiles_known found out of date,
 * each bounded like a request (the store's timeout); after a failure (the database away) it
 * waits a second before the next round. */
static void refresher_run(workpool *wp, unsigned index, void *ctx)
{
    symfiles *f = ctx;
    (void)index;
    while (!workpool_stopping(wp)) {
        char uuid[37] = "";
        pthread_mutex_lock(&f->mu);
        for (unsigned b = 0; b < ROW_BUCKETS && !uuid[0] && f->nwanted > 0; b++)
            for (row_entry *e = f->rows[b]; e && !uuid[0]; e = e->next)
                if (e->wanted) {
                    e->wanted = false;
                    f->nwanted--;
                    snprintf(uuid, sizeof uuid, "%s", e->uuid);
                }
        pthread_mutex_unlock(&f->mu);
        if (!uuid[0]) {
            workpool_wait(wp, 1000);
            continue;
        }
        char sha[65];
        err_info err = {0};
        store_deadline_begin(store_timeout_ms(f->s));
        err_code rc = current_sha(sha, f, uuid, false, &err);
        store_deadline_end();
        if (rc != ERR_OK) {
            atomic_fetch_add(&f->refresh_failures, 1);
            workpool_wait(wp, 1000);
        }
    }
}

/* ---- get ------------------------------------------------------------------------------- */

err_code symfiles_get(char path[4096], char sha256[65], symfiles *f, const char *uuid,
                      bool fresh, err_info *err)
{
    char sha[65];
    err_code rc = current_sha(sha, f, uuid, fresh, err);
    if (rc != ERR_OK)
        return rc;
    if (sha[0] == '\0')
        return err_set(err, ERR_NOT_FOUND, "no stored symcache for %s", uuid);
    snprintf(sha256, 65, "%s", sha);
    file_path(path, f, sha);

    pthread_mutex_lock(&f->mu);
    for (;;) {
        file_entry *fe = file_find(f, sha, true);
        if (fe->state == F_READY) {
            fe->used = ++f->tick;
            pthread_mutex_unlock(&f->mu);
            atomic_fetch_add(&f->hits, 1);
            return ERR_OK;
        }
        if (fe->state == F_BUSY) {   /* another thread fetches or checks it: wait for it */
            pthread_cond_wait(&f->cv, &f->mu);
            continue;
        }
        if (fe->state == F_UNCHECKED) {
            fe->state = F_BUSY;
            pthread_mutex_unlock(&f->mu);
            char got[65] = "";
            err_info herr = {0};
            bool ok = ingest_sha256_file_hex(got, path, &herr) == ERR_OK && strcmp(got, sha) == 0;
            if (!ok) {
                log_event(LOG_WARN, "symcache_file_corrupt", "path=%s sha256=%s message=%s",
                          path, got, herr.msg[0] ? herr.msg : "content does not match its name");
                (void)unlink(path);   /* ignored: the download below replaces it anyway */
            }
            pthread_mutex_lock(&f->mu);
            if (ok) {
                fe->state = F_READY;
                fe->used = ++f->tick;
                pthread_cond_broadcast(&f->cv);
                pthread_mutex_unlock(&f->mu);
                atomic_fetch_add(&f->hits, 1);
                return ERR_OK;
            }
            f->bytes -= fe->bytes;
            f->nfiles--;
            fe->bytes = 0;
            fe->state = F_ABSENT;
        }
        /* F_ABSENT: this thread downloads it */
        fe->state = F_BUSY;
        pthread_mutex_unlock(&f->mu);
        uint64_t bytes = 0;
        double t0 = mono_ms();
        rc = download(&bytes, f, sha, err);
        pthread_mutex_lock(&f->mu);
        fe = file_find(f, sha, true);   /* entries never move while BUSY */
        if (rc == ERR_OK) {
            fe->state = F_READY;
            fe->bytes = bytes;
            fe->used = ++f->tick;
            f->bytes += bytes;
            f->nfiles++;
            evict(f, fe);
        } else {
            file_forget(f, fe);
        }
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        if (rc == ERR_OK) {
            atomic_fetch_add(&f->misses, 1);
            atomic_fetch_add(&f->downloads, 1);
            atomic_fetch_add(&f->download_bytes, bytes);
            log_event(LOG_INFO, "symcache_downloaded", "uuid=%s sha256=%s bytes=%llu ms=%.1f",
                      uuid, sha, (unsigned long long)bytes, mono_ms() - t0);
        } else {
            atomic_fetch_add(&f->download_failures, 1);
            if (rc == ERR_NOT_FOUND)   /* the row changed meanwhile (rebuild, expiry) */
                symfiles_forget(f, uuid);
        }
        return rc;
    }
}

void symfiles_on_add(symfiles *f, void (*fn)(void *ctx), void *ctx)
{
    f->on_add = fn;
    f->on_add_ctx = ctx;
}

void symfiles_add(symfiles *f, const char *uuid, const char *sha256, const char *path)
{
    char final[4096], tmp[4096];
    struct stat st;
    if (f == NULL)
        return;
    if (f->on_add != NULL)
        f->on_add(f->on_add_ctx);
    if (stat(path, &st) != 0) {
        symfiles_forget(f, uuid);
        return;
    }
    file_path(final, f, sha256);
    snprintf(tmp, sizeof tmp, "%s/" TMP_PREFIX "%s-%ld-%llu", f->dir, sha256, (long)getpid(),
             (unsigned long long)atomic_fetch_add(&f->tmp_seq, 1));
    pthread_mutex_lock(&f->mu);
    file_entry *fe = file_find(f, sha256, true);
    if (fe->state != F_ABSENT) {   /* here already (or being fetched) */
        pthread_mutex_unlock(&f->mu);
        symfiles_forget(f, uuid);
        return;
    }
    fe->state = F_BUSY;
    pthread_mutex_unlock(&f->mu);
    /* A hard link of the built file (same file system): no copy; the name is its hash. */
    bool ok = link(path, tmp) == 0 && rename(tmp, final) == 0;
    if (!ok)
        (void)unlink(tmp);   /* ignored: fetched on first use instead */
    pthread_mutex_lock(&f->mu);
    fe = file_find(f, sha256, true);
    if (ok) {
        fe->state = F_READY;
        fe->bytes = (uint64_t)st.st_size;
        fe->used = ++f->tick;
        f->bytes += fe->bytes;
        f->nfiles++;
        evict(f, fe);
    } else {
        file_forget(f, fe);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    /* Not "the row names sha256 now": a concurrent upload of the same UUID may have committed
     * after this one (DWARF after a symbol table). The next get reads the row. */
    symfiles_forget(f, uuid);
}

void symfiles_forget(symfiles *f, const char *uuid)
{
    pthread_mutex_lock(&f->mu);
    row_entry *re = row_find(f, uuid, false);
    if (re) {
        re->checked_ms = -1e18;
        re->gen++;
    }
    pthread_mutex_unlock(&f->mu);
}

store *symfiles_store(symfiles *f)
{
    return f->s;
}

void symfiles_stats_get(symfiles_stats *out, symfiles *f)
{
    memset(out, 0, sizeof *out);
    out->hits = atomic_load(&f->hits);
    out->misses = atomic_load(&f->misses);
    out->downloads = atomic_load(&f->downloads);
    out->download_bytes = atomic_load(&f->download_bytes);
    out->download_failures = atomic_load(&f->download_failures);
    out->evictions = atomic_load(&f->evictions);
    pthread_mutex_lock(&f->mu);
    out->files = f->nfiles;
    out->bytes = f->bytes;
    pthread_mutex_unlock(&f->mu);
    out->max_bytes = f->max_bytes;
}

void symfiles_metrics_render(buf *out, symfiles *f)
{
    symfiles_stats s;
    symfiles_stats_get(&s, f);
    uint64_t total = s.hits + s.misses;
    buf_printf(out,
               "# HELP stacksift_symcache_files_total Symcache files asked of this node's cache, "
               "by whether it had them (miss: downloaded from Postgres).\n"
               "# TYPE stacksift_symcache_files_total counter\n"
               "stacksift_symcache_files_total{result=\"hit\"} %llu\n"
               "stacksift_symcache_files_total{result=\"miss\"} %llu\n"
               "# HELP stacksift_symcache_file_cache_hit_ratio Share of symcache file requests "
               "answered without a download, since start.\n"
               "# TYPE stacksift_symcache_file_cache_hit_ratio gauge\n"
               "stacksift_symcache_file_cache_hit_ratio %.4f\n"
               "# HELP stacksift_symcache_downloads_total Symcaches downloaded from Postgres.\n"
               "# TYPE stacksift_symcache_downloads_total counter\n"
               "stacksift_symcache_downloads_total %llu\n"
               "# HELP stacksift_symcache_download_bytes_total Bytes of those downloads.\n"
               "# TYPE stacksift_symcache_download_bytes_total counter\n"
               "stacksift_symcache_download_bytes_total %llu\n"
               "# HELP stacksift_symcache_download_failures_total Downloads that failed "
               "(database, disk, or a hash mismatch).\n"
               "# TYPE stacksift_symcache_download_failures_total counter\n"
               "stacksift_symcache_download_failures_total %llu\n"
               "# HELP stacksift_symcache_evictions_total Cache files deleted to stay in budget.\n"
               "# TYPE stacksift_symcache_evictions_total counter\n"
               "stacksift_symcache_evictions_total %llu\n"
               "# HELP stacksift_symcache_cache_bytes Bytes of symcache files cached here now.\n"
               "# TYPE stacksift_symcache_cache_bytes gauge\n"
               "stacksift_symcache_cache_bytes %llu\n"
               "# HELP stacksift_symcache_cache_files Symcache files cached here now.\n"
               "# TYPE stacksift_symcache_cache_files gauge\n"
               "stacksift_symcache_cache_files %llu\n"
               "# HELP stacksift_symcache_cache_max_bytes STACKSIFT_SYMCACHE_CACHE_MB in bytes.\n"
               "# TYPE stacksift_symcache_cache_max_bytes gauge\n"
               "stacksift_symcache_cache_max_bytes %llu\n"
               "# HELP stacksift_symcache_row_refresh_failures_total Background re-reads of "
               "symcache rows (for the intake) that failed.\n"
               "# TYPE stacksift_symcache_row_refresh_failures_total counter\n"
               "stacksift_symcache_row_refresh_failures_total %llu\n",
               (unsigned long long)s.hits, (unsigned long long)s.misses,
               total ? (double)s.hits / (double)total : 0.0, (unsigned long long)s.downloads,
               (unsigned long long)s.download_bytes, (unsigned long long)s.download_failures,
               (unsigned long long)s.evictions, (unsigned long long)s.bytes,
               (unsigned long long)s.files, (unsigned long long)s.max_bytes,
               (unsigned long long)atomic_load(&f->refresh_failures));
}
