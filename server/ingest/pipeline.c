/*
 * pipeline - workers, the symcache cache and the stack cache (see pipeline.h).
 */
#include "ingest/pipeline.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/utf8.h"
#include "base/workpool.h"
#include "base/xalloc.h"
#include "ingest/grouping.h"
#include "ingest/ingest.h"
#include "ingest/ingest_minidump.h"
#include "log/log.h"
#include "store/store_queue.h"
#include "symbolicate/symbolicate.h"

#define STACK_BUCKETS 65536u
#define SWEEP_EVERY_S 30

/* ---- symcache cache -------------------------------------------------------------------- */

typedef struct {
    char uuid[37];
    symcache *sc;     /* NULL: free slot */
    unsigned refs;    /* reports using it now; never closed while > 0 */
    uint64_t used;    /* LRU tick of the last acquire */
    uint64_t version; /* identity of the file it was opened from (inode, mtime): a dSYM
                         upload that replaces a symcache gives a new version */
} sc_entry;

/* ---- stack cache ----------------------------------------------------------------------- */

typedef struct {
    crashreport_sym_status status;
    uint64_t lookup_addr;
    uint32_t first, nsymbols; /* into the entry's symbols */
} cached_frame;

typedef struct stack_entry {
    uint8_t key[32];
    struct stack_entry *hnext;       /* hash chain */
    struct stack_entry *prev, *next; /* LRU list: head = most recently used */
    size_t bytes;
    uint32_t nframes, nsymbols;
    cached_frame *frames;            /* inside this allocation */
    crashreport_symbol *symbols;     /* inside this allocation; strings too */
} stack_entry;

struct pipeline {
    pipeline_options o;
    char *symcache_dir;
    store *store;

    pthread_mutex_t sc_mu;
    pthread_mutex_t rebuild_mu; /* one on-demand rebuild at a time */
    sc_entry *sc;          /* o.symcache_max_open slots (grows past it while all are in use) */
    size_t nsc;
    uint64_t tick;

    pthread_mutex_t st_mu;
    stack_entry **buckets;
    stack_entry *lru_head, *lru_tail;
    uint64_t st_bytes, st_entries;

    workpool *_Atomic workers; /* NULL until pipeline_start (pipeline_post reads it from
                                  other threads, which may run before the start) */
    /* SHA-256 fetched from OpenSSL's provider once: EVP_sha256() in EVP_DigestInit_ex fetches
     * it again on every init (a lock and a property lookup), 1.6% of the server's CPU per
     * report when each stack's key was hashed that way */
    EVP_MD *sha256;

    atomic_uint_fast64_t stack_hits, stack_misses, frame_hits, frame_misses, symcache_opens;
    atomic_uint_fast64_t processed, pending, failed, batches, regressions, commit_errors;
    atomic_uint_fast64_t in_progress;
    atomic_uint_fast64_t minidump_walks; /* dumps walked for their stored frames, by the
                                            workers or at intake (one walk each) */
    atomic_uint_fast64_t minidump_intake_dropped; /* walked at intake, not processed there (a
                                                     symcache not open, names still hidden):
                                                     the workers walk them again */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void post_cb(void *ctx)
{
    pipeline_post(ctx);
}

err_code pipeline_new(pipeline **out, store *work_store, const pipeline_options *opts,
                      err_info *err)
{
    (void)err;
    *out = NULL;
    EVP_MD *sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (sha256 == NULL)
        return err_set(err, ERR_INTERNAL, "sha-256: openssl has no implementation of it");
    pipeline *p = xcalloc(1, sizeof *p);
    p->sha256 = sha256;
    p->o = *opts;
    if (p->o.batch == 0)
        p->o.batch = 1;
    if (p->o.symcache_max_open == 0)
        p->o.symcache_max_open = 1;
    if (p->o.idle_poll_ms == 0)
        p->o.idle_poll_ms = 50;
    p->symcache_dir = xstrdup(opts->symcache_dir ? opts->symcache_dir : ".");
    p->o.symcache_dir = p->symcache_dir;
    p->store = work_store;
    p->sc = xcalloc(p->o.symcache_max_open, sizeof *p->sc);
    p->nsc = p->o.symcache_max_open;
    p->buckets = xcalloc(STACK_BUCKETS, sizeof *p->buckets);
    pthread_mutex_init(&p->sc_mu, NULL);
    pthread_mutex_init(&p->rebuild_mu, NULL);
    pthread_mutex_init(&p->st_mu, NULL);
    if (p->o.files != NULL)   /* an upload here released the reports waiting for its dSYM */
        symfiles_on_add(p->o.files, post_cb, p);
    *out = p;
    return ERR_OK;
}

static bool sc_locate_in(char path[4096], uint64_t *version, pipeline *p, const char *uuid,
                         bool memory_only, bool *unknown);

/* Where the symcache of `uuid` is and which version: from the node's file cache (version =
 * the first 64 bits of its SHA-256), or symcache_dir/<uuid>.symc (version from inode and
 * mtime, so a replaced file is noticed). false: there is none (yet). */
static bool sc_locate(char path[4096], uint64_t *version, pipeline *p, const char *uuid)
{
    return sc_locate_in(path, version, p, uuid, false, NULL);
}

/* sc_locate; `memory_only` (the intake's processing, on an HTTP thread): from the row cache
 * alone (symfiles_known), no file fetched or checked (path is then left empty: the caller
 * uses only a symcache already open) and never Postgres: a row the cache does not know
 * recently gives false and *unknown = true (the workers ask). */
static bool sc_locate_in(char path[4096], uint64_t *version, pipeline *p, const char *uuid,
                         bool memory_only, bool *unknown)
{
    if (p->o.files) {
        char sha[65];
        err_info err = {0};
        err_code rc;
        if (memory_only) {
            path[0] = '\0';
            int known = symfiles_known(sha, p->o.files, uuid);
            if (known < 0) {
                *unknown = true;
                return false;
            }
            rc = known > 0 ? ERR_OK : ERR_NOT_FOUND;
        } else {
            rc = symfiles_get(path, sha, p->o.files, uuid, false, &err);
        }
        if (rc != ERR_OK) {
            if (rc != ERR_NOT_FOUND)
                log_event(LOG_WARN, "symcache_unavailable", "uuid=%s error=%s message=%s", uuid,
                          err_name(rc), err.msg);
            if (rc != ERR_NOT_FOUND && unknown)
                *unknown = true;   /* not known to be absent: the worker decides */
            return false;
        }
        char head[17];
        memcpy(head, sha, 16);
        head[16] = '\0';
        *version = strtoull(head, NULL, 16);
        return true;
    }
    struct stat st;
    snprintf(path, 4096, "%s/%s.symc", p->symcache_dir, uuid);
    /* One stat per image and report: a replaced file (DWARF after a symbol-table-only
     * upload) is noticed, and a missing one costs no open(). */
    if (stat(path, &st) != 0)
        return false;
    *version = (uint64_t)st.st_ino * 1000003u ^ (uint64_t)st.st_mtim.tv_sec * 1000000000u ^
               (uint64_t)st.st_mtim.tv_nsec ^ (uint64_t)st.st_size << 40;
    return true;
}

static void log_rebuilt(const ingest_rebuilt *r, void *ctx)
{
    (void)ctx;
    log_event(r->err.code ? LOG_WARN : LOG_INFO, "symcache_rebuilt", "uuid=%s status=%s "
              "sha256=%s message=%s", r->uuid, r->status, r->sha256, r->err.msg);
}

/* The stored symcache of `uuid` (version `outdated`) was written by an older stacksift:
 * re-derive it from the stored upload now (what `stacksift symcache rebuild` does for all),
 * one rebuild at a time per process. true if the row now names another symcache. */
static bool rebuild_outdated(pipeline *p, const char *uuid, uint64_t outdated)
{
    char path[4096], dir[4200];
    uint64_t version = 0;
    bool changed = false;
    pthread_mutex_lock(&p->rebuild_mu);
    symfiles_forget(p->o.files, uuid);   /* another thread may have rebuilt it meanwhile */
    if (sc_locate(path, &version, p, uuid) && version != outdated) {
        changed = true;
    } else {
        snprintf(dir, sizeof dir, "%.4096s/rebuild-XXXXXX", p->o.scratch_dir ? p->o.scratch_dir
                                                                              : "/tmp");
        unsigned failed = 0;
        err_info err = {0};
        dsym_options opts = {.threads = 1};
        if (mkdtemp(dir) == NULL) {
            log_event(LOG_WARN, "symcache_rebuild_failed", "uuid=%s message=%s", uuid,
                      strerror(errno));
        } else {
            err_code rc = ingest_symcache_rebuild(&failed, symfiles_store(p->o.files), uuid, dir,
                                                  &opts, log_rebuilt, NULL, &err);
            if (rc != ERR_OK)
                log_event(LOG_WARN, "symcache_rebuild_failed", "uuid=%s message=%s", uuid,
                          err.msg);
            (void)rmdir(dir);   /* ignored: emptied by the rebuild; the next start clears tmp/ */
            symfiles_forget(p->o.files, uuid);
            changed = rc == ERR_OK && failed == 0 && sc_locate(path, &version, p, uuid) &&
                      version != outdated;
        }
    }
    pthread_mutex_unlock(&p->rebuild_mu);
    return changed;
}

/* The open symcache for `uuid` with one more reference, or NULL if it has none (yet). Not
 * cached when missing: the dSYM may come any time. `warm_only`: only a symcache this node
 * has open already, current by the row cache; when it would have to be fetched, opened or
 * rebuilt first, or its row is not known recently, NULL and *cold = true. */
static sc_entry *sc_acquire(pipeline *p, const char *uuid, bool warm_only, bool *cold)
{
    char path[4096];
    uint64_t version = 0;
    if (!sc_locate_in(path, &version, p, uuid, warm_only, warm_only ? cold : NULL))
        return NULL;
    pthread_mutex_lock(&p->sc_mu);
    for (size_t i = 0; i < p->nsc; i++) {
        sc_entry *e = &p->sc[i];
        if (e->sc == NULL || strcmp(e->uuid, uuid) != 0)
            continue;
        if (e->version == version) {
            e->refs++;
            e->used = ++p->tick;
            pthread_mutex_unlock(&p->sc_mu);
            return e;
        }
        if (e->refs == 0 && !warm_only) {   /* an older file: nobody uses it, close it now */
            symcache_close(e->sc);
            e->sc = NULL;
        }
    }
    pthread_mutex_unlock(&p->sc_mu);
    if (warm_only) {
        *cold = true;
        return NULL;
    }

    symcache *sc = NULL;
    err_info err = {0};
    err_code rc = symcache_open(&sc, path, &err);
    if (rc == ERR_OUTDATED && p->o.files && rebuild_outdated(p, uuid, version) &&
        sc_locate(path, &version, p, uuid)) {
        err_clear(&err);
        rc = symcache_open(&sc, path, &err);
    }
    if (rc != ERR_OK) {
        if (rc != ERR_NOT_FOUND)
            log_event(LOG_WARN, "symcache_unreadable", "uuid=%s error=%s message=%s", uuid,
                      err_name(rc), err.msg);
        return NULL;
    }
    atomic_fetch_add(&p->symcache_opens, 1);

    pthread_mutex_lock(&p->sc_mu);
    sc_entry *slot = NULL, *lru = NULL;
    for (size_t i = 0; i < p->nsc; i++) {
        sc_entry *e = &p->sc[i];
        if (e->sc != NULL && strcmp(e->uuid, uuid) == 0 && e->version == version) {
            /* another thread was faster */
            e->refs++;
            e->used = ++p->tick;
            pthread_mutex_unlock(&p->sc_mu);
            symcache_close(sc);
            return e;
        }
        if (e->sc == NULL && slot == NULL)
            slot = e;
        if (e->sc != NULL && e->refs == 0 && (lru == NULL || e->used < lru->used))
            lru = e;
    }
    if (slot == NULL && lru != NULL) {
        symcache_close(lru->sc);   /* invalidates nothing in use: refs == 0 */
        lru->sc = NULL;
        slot = lru;
    }
    if (slot == NULL) {
        /* Every slot is in use right now: grow; entries never move while referenced, so the
         * table is never reallocated: over-limit entries get their own allocation instead. */
        slot = xcalloc(1, sizeof *slot);
        snprintf(slot->uuid, sizeof slot->uuid, "%s", uuid);
        slot->sc = sc;
        slot->refs = 1;
        slot->version = version;
        slot->used = ~(uint64_t)0; /* marks a private entry: closed on release */
        pthread_mutex_unlock(&p->sc_mu);
        return slot;
    }
    snprintf(slot->uuid, sizeof slot->uuid, "%s", uuid);
    slot->sc = sc;
    slot->refs = 1;
    slot->version = version;
    slot->used = ++p->tick;
    pthread_mutex_unlock(&p->sc_mu);
    return slot;
}

static void sc_release(pipeline *p, sc_entry *e)
{
    if (e == NULL)
        return;
    if (e->used == ~(uint64_t)0) {
        symcache_close(e->sc);
        free(e);
        return;
    }
    pthread_mutex_lock(&p->sc_mu);
    e->refs--;
    pthread_mutex_unlock(&p->sc_mu);
}

/* ---- one report's symbolication ------------------------------------------------------ */

typedef struct {
    pipeline *p;
    crashreport *r;
    sc_entry **ent;     /* per image: its symcache entry, NULL if none */
    uint8_t *state;     /* per image: 0 not asked, 1 asked and this image holds the
                           reference, 2 asked (no symcache, or shares another image's) */
    bool warm_only;     /* use only symcaches open already (sc_acquire) */
    bool cold;          /* warm_only, and an image's symcache was not (or not known): no
                           further image is looked at, the report goes to the workers */
} rctx;

static sc_entry *image_symcache(rctx *c, size_t image)
{
    if (c->state[image] == 0) {
        const char *uuid = c->r->images[image].uuid;
        /* Two image lines with the same UUID share one reference. */
        for (size_t k = 0; k < c->r->nimages && c->state[image] == 0; k++)
            if (k != image && c->state[k] != 0 && strcmp(c->r->images[k].uuid, uuid) == 0) {
                c->ent[image] = c->ent[k];
                c->state[image] = 2;
            }
        if (c->state[image] == 0 && c->cold)
            return NULL;   /* given up already: not even the row cache is asked again */
        if (c->state[image] == 0) {
            c->ent[image] = uuid[0] ? sc_acquire(c->p, uuid, c->warm_only, &c->cold) : NULL;
            c->state[image] = c->ent[image] ? 1 : 2;
        }
    }
    return c->ent[image];
}

static const symcache *resolve(void *ctx, const char *uuid, const char *arch)
{
    rctx *c = ctx;
    (void)arch;
    for (size_t i = 0; i < c->r->nimages; i++)
        if (strcmp(c->r->images[i].uuid, uuid) == 0) {
            sc_entry *e = image_symcache(c, i);
            return e ? e->sc : NULL;
        }
    return NULL;
}

/* The stack cache's key of frames fs[0..n): SHA-256 over each frame's image UUID, arch,
 * image-relative address and symcache version. The records are gathered in a buffer and
 * hashed a few kilobytes at a time: three EVP_DigestUpdate calls a frame cost more than the
 * hashing itself. A frame in the image (and arch) of the frame before it says so in one byte
 * instead of repeating the UUID and arch (a stack's frames come in runs of one image): the
 * bytes still tell every stack apart, and there are about a third as many to hash. */
static void stack_key(uint8_t key[32], EVP_MD_CTX *md, rctx *c, const crashreport_frame *fs,
                      size_t n)
{
    const crashreport *r = c->r;
    unsigned len = 32;
    unsigned char acc[4096];
    size_t used = 0;
    int64_t prev_image = INT64_MIN;   /* none yet */
    const char *prev_arch = NULL;
    EVP_DigestInit_ex(md, c->p->sha256, NULL);
    for (size_t i = 0; i < n; i++) {
        const crashreport_frame *f = &fs[i];
        const char *arch = crashreport_frame_arch(r, f);
        uint64_t addr = crashreport_strip_pac(f->addr, arch);
        uint8_t rec[17] = {0};
        const char *uuid = "-";
        uint64_t version = 0; /* 0: no symcache */
        if (f->image >= 0 && (size_t)f->image < r->nimages) {
            const crashreport_image *im = &r->images[f->image];
            sc_entry *e = image_symcache(c, (size_t)f->image);
            if (c->cold)
                break;   /* the first cold image ends it: the key is not used */
            uuid = im->uuid;
            addr -= im->load_addr;
            version = e ? e->version | 1 : 0;
            rec[16] = 1;
        }
        for (int b = 0; b < 8; b++) {
            rec[b] = (uint8_t)(addr >> (8 * b));
            rec[8 + b] = (uint8_t)(version >> (8 * b));
        }
        /* 0: the image and arch of the frame before; 1, then uuid and arch with their NULs:
         * another (the same image index gives the same strings) */
        bool same = f->image == prev_image && arch == prev_arch;
        prev_image = f->image;
        prev_arch = arch;
        size_t ulen = same ? 0 : strlen(uuid) + 1, alen = same ? 0 : arch ? strlen(arch) + 1 : 1;
        if (used + 1 + ulen + alen + sizeof rec > sizeof acc) {
            EVP_DigestUpdate(md, acc, used);
            used = 0;
        }
        if (1 + ulen + alen + sizeof rec > sizeof acc) {   /* a UUID or arch no parser gives */
            EVP_DigestUpdate(md, "\1", 1);
            EVP_DigestUpdate(md, uuid, ulen);
            EVP_DigestUpdate(md, arch ? arch : "", alen);
            EVP_DigestUpdate(md, rec, sizeof rec);
            continue;
        }
        acc[used++] = same ? 0 : 1;
        if (!same) {
            memcpy(acc + used, uuid, ulen);
            used += ulen;
            memcpy(acc + used, arch ? arch : "", alen);
            used += alen;
        }
        memcpy(acc + used, rec, sizeof rec);
        used += sizeof rec;
    }
    if (used > 0)
        EVP_DigestUpdate(md, acc, used);
    EVP_DigestFinal_ex(md, key, &len);
}

static void lru_unlink(pipeline *p, stack_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        p->lru_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        p->lru_tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push(pipeline *p, stack_entry *e)
{
    e->next = p->lru_head;
    e->prev = NULL;
    if (p->lru_head)
        p->lru_head->prev = e;
    p->lru_head = e;
    if (!p->lru_tail)
        p->lru_tail = e;
}

static size_t bucket_of(const uint8_t key[32])
{
    return ((size_t)key[0] | (size_t)key[1] << 8) % STACK_BUCKETS;
}

/* A string of a cached entry, at the same offset in the entry's copy: `s` lies between
 * `from` and the entry's end, or is NULL. */
static const char *moved(const char *s, const uint8_t *from, uint8_t *to)
{
    return s ? (const char *)to + ((const uint8_t *)s - from) : NULL;
}

/* Fill the frames from a cached entry (its symbols and their strings copied into `a` in one
 * block, as they lie in the entry); false if not cached. */
static bool stack_from_cache(pipeline *p, const uint8_t key[32], crashreport_frame *fs, size_t n,
                             arena *a, err_info *err, err_code *rc)
{
    bool hit = false, failed = false;
    pthread_mutex_lock(&p->st_mu);
    stack_entry *e = p->buckets[bucket_of(key)];
    while (e != NULL && memcmp(e->key, key, 32) != 0)
        e = e->hnext;
    if (e != NULL && e->nframes == n) {
        hit = true;
        lru_unlink(p, e);
        lru_push(p, e);
        /* the symbols, then their strings, to the entry's end (stack_to_cache's layout) */
        const uint8_t *from = (const uint8_t *)e->symbols;
        size_t len = (size_t)((const uint8_t *)e + e->bytes - from);
        uint8_t *to = e->nsymbols > 0 ? arena_alloc_uninit(a, len, err) : NULL;
        failed = e->nsymbols > 0 && to == NULL;
        if (to != NULL) {
            memcpy(to, from, len);
            crashreport_symbol *syms = (crashreport_symbol *)to;
            for (uint32_t k = 0; k < e->nsymbols; k++) {
                syms[k].function = moved(syms[k].function, from, to);
                syms[k].file = moved(syms[k].file, from, to);
                syms[k].mangled = moved(syms[k].mangled, from, to);
                syms[k].qualified = moved(syms[k].qualified, from, to);
            }
        }
        for (size_t i = 0; i < n && !failed; i++) {
            const cached_frame *cf = &e->frames[i];
            crashreport_frame *f = &fs[i];
            f->sym_status = cf->status;
            f->lookup_addr = cf->lookup_addr;
            f->symbols = cf->nsymbols > 0 ? (crashreport_symbol *)to + cf->first : NULL;
            f->nsymbols = cf->nsymbols;
        }
    }
    pthread_mutex_unlock(&p->st_mu);
    if (failed)
        *rc = ERR_TOO_LARGE;
    return hit;
}

static void stack_to_cache(pipeline *p, const uint8_t key[32], const crashreport_frame *fs,
                           size_t n)
{
    if (p->o.stack_cache_bytes == 0)
        return;
    size_t nsym = 0, strings = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < fs[i].nsymbols; k++) {
            nsym++;
            strings += strlen(fs[i].symbols[k].function) + 1;
            strings += fs[i].symbols[k].file ? strlen(fs[i].symbols[k].file) + 1 : 0;
            strings += fs[i].symbols[k].mangled ? strlen(fs[i].symbols[k].mangled) + 1 : 0;
            strings += fs[i].symbols[k].qualified ? strlen(fs[i].symbols[k].qualified) + 1 : 0;
        }
    size_t bytes = sizeof(stack_entry) + n * sizeof(cached_frame) +
                   nsym * sizeof(crashreport_symbol) + strings;
    if (bytes > p->o.stack_cache_bytes / 4)
        return;   /* one huge stack must not flush the cache */
    stack_entry *e = xcalloc(1, bytes);
    memcpy(e->key, key, 32);
    e->bytes = bytes;
    e->nframes = (uint32_t)n;
    e->nsymbols = (uint32_t)nsym;
    e->frames = (cached_frame *)(e + 1);
    e->symbols = (crashreport_symbol *)(e->frames + n);
    char *str = (char *)(e->symbols + nsym);
    size_t s = 0;
    for (size_t i = 0; i < n; i++) {
        e->frames[i].status = fs[i].sym_status;
        e->frames[i].lookup_addr = fs[i].lookup_addr;
        e->frames[i].first = (uint32_t)s;
        e->frames[i].nsymbols = fs[i].nsymbols;
        for (uint32_t k = 0; k < fs[i].nsymbols; k++, s++) {
            const crashreport_symbol *src = &fs[i].symbols[k];
            e->symbols[s] = *src;
            size_t fl = strlen(src->function) + 1;
            memcpy(str, src->function, fl);
            e->symbols[s].function = str;
            str += fl;
            if (src->file) {
                size_t l = strlen(src->file) + 1;
                memcpy(str, src->file, l);
                e->symbols[s].file = str;
                str += l;
            }
            if (src->mangled) {   /* the report's arena goes: every string lives in the entry */
                size_t l = strlen(src->mangled) + 1;
                memcpy(str, src->mangled, l);
                e->symbols[s].mangled = str;
                str += l;
            }
            if (src->qualified) {   /* in the report's arena too (symbolicate's copy) */
                size_t l = strlen(src->qualified) + 1;
                memcpy(str, src->qualified, l);
                e->symbols[s].qualified = str;
                str += l;
            }
        }
    }
    pthread_mutex_lock(&p->st_mu);
    size_t b = bucket_of(key);
    stack_entry *dup = p->buckets[b];
    while (dup != NULL && memcmp(dup->key, key, 32) != 0)
        dup = dup->hnext;
    if (dup != NULL) {   /* another thread cached the same stack meanwhile */
        pthread_mutex_unlock(&p->st_mu);
        free(e);
        return;
    }
    e->hnext = p->buckets[b];
    p->buckets[b] = e;
    lru_push(p, e);
    p->st_bytes += bytes;
    p->st_entries++;
    while (p->st_bytes > p->o.stack_cache_bytes && p->lru_tail != NULL && p->lru_tail != e) {
        stack_entry *old = p->lru_tail;
        lru_unlink(p, old);
        stack_entry **pp = &p->buckets[bucket_of(old->key)];
        while (*pp != old)
            pp = &(*pp)->hnext;
        *pp = old->hnext;
        p->st_bytes -= old->bytes;
        p->st_entries--;
        free(old);
    }
    pthread_mutex_unlock(&p->st_mu);
}

/* Symbolicate one stack (a thread's frames, or the Last Exception Backtrace). */
static err_code stack_symbolicate(rctx *c, EVP_MD_CTX *md, crashreport_thread *thread,
                                  crashreport_frame *fs, size_t n, arena *a, err_info *err)
{
    pipeline *p = c->p;
    if (n == 0)
        return ERR_OK;
    uint8_t key[32];
    stack_key(key, md, c, fs, n);
    if (c->cold)
        return ERR_OK;   /* the caller gives the report up (warm_only) */
    err_code rc = ERR_OK;
    if (p->o.stack_cache_bytes > 0 && stack_from_cache(p, key, fs, n, a, err, &rc)) {
        atomic_fetch_add(&p->stack_hits, 1);
        atomic_fetch_add(&p->frame_hits, n);
        return rc;
    }
    /* A view of the report holding only this stack: symbolicate_report does the rest. */
    crashreport view = *c->r;
    view.threads = thread;
    view.nthreads = thread ? 1 : 0;
    view.leb = thread ? NULL : fs;
    view.nleb = thread ? 0 : n;
    view.causes = NULL;   /* each cause's stack is a stack of its own (symbolicate_pass) */
    view.ncauses = 0;
    rc = symbolicate_report(&view, resolve, c, a, err);
    if (rc != ERR_OK)
        return rc;
    atomic_fetch_add(&p->stack_misses, 1);
    atomic_fetch_add(&p->frame_misses, n);
    stack_to_cache(p, key, fs, n);
    return ERR_OK;
}

/* Whether any of the in-app UUIDs a report lacks has a symcache after all, asking Postgres
 * now rather than trusting a recent "none". */
static bool recheck_missing(pipeline *p, const char **uuids, size_t n)
{
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        char path[4096], sha[65];
        err_info err = {0};
        found |= symfiles_get(path, sha, p->o.files, uuids[i], true, &err) == ERR_OK;
    }
    return found;
}

/* One symbolication of every frame of `r` (see pipeline_symbolicate). */
static err_code symbolicate_pass(pipeline *p, crashreport *r, const char ***missing_in_app,
                                 size_t *nmissing, bool warm_only, bool *cold, arena *a,
                                 err_info *err)
{
    size_t ni = r->nimages ? r->nimages : 1;
    rctx c = {p, r, arena_alloc_array(a, ni, sizeof(sc_entry *), err),
              arena_alloc_array(a, ni, 1, err), warm_only, false};
    if (missing_in_app) {
        *missing_in_app = NULL;
        *nmissing = 0;
    }
    if (c.ent == NULL || c.state == NULL)
        return ERR_TOO_LARGE;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md == NULL)
        return err_set(err, ERR_INTERNAL, "sha-256: out of memory");
    err_code rc = ERR_OK;
    for (size_t t = 0; t < r->nthreads && rc == ERR_OK && !c.cold; t++)
        rc = stack_symbolicate(&c, md, &r->threads[t], r->threads[t].frames,
                               r->threads[t].nframes, a, err);
    if (rc == ERR_OK && !c.cold)
        rc = stack_symbolicate(&c, md, NULL, r->leb, r->nleb, a, err);
    /* the errors the exception was caused by (bugsnag): backtraces like the LEB */
    for (size_t k = 0; k < r->ncauses && rc == ERR_OK && !c.cold; k++)
        rc = stack_symbolicate(&c, md, NULL, r->causes[k].frames, r->causes[k].nframes, a, err);
    EVP_MD_CTX_free(md);
    if (cold)
        *cold = c.cold;
    if (c.cold) {
        for (size_t i = 0; i < r->nimages; i++)
            if (c.state[i] == 1)
                sc_release(p, c.ent[i]);
        return rc;
    }

    /* Which images frames fell in without a symcache: all of them for the model, the
     * in-app ones for pending_dsym. */
    bool *used = rc == ERR_OK ? arena_alloc_array(a, ni, sizeof(bool), err) : NULL;
    if (rc == ERR_OK && used == NULL)
        rc = ERR_TOO_LARGE;
    if (rc == ERR_OK) {
        for (size_t t = 0; t <= r->nthreads + r->ncauses; t++) {
            const crashreport_frame *fs = t < r->nthreads    ? r->threads[t].frames
                                          : t == r->nthreads ? r->leb
                                                             : r->causes[t - r->nthreads - 1].frames;
            size_t n = t < r->nthreads    ? r->threads[t].nframes
                       : t == r->nthreads ? r->nleb
                                          : r->causes[t - r->nthreads - 1].nframes;
            for (size_t i = 0; i < n; i++) {
                if (fs[i].image < 0 || (size_t)fs[i].image >= r->nimages ||
                    !r->images[fs[i].image].uuid[0])
                    continue;
                /* an App Store dSYM whose names are still hidden waits for its BCSymbolMap
                 * like a missing dSYM (released when the map reveals it) */
                const sc_entry *e = c.state[fs[i].image] != 0 ? c.ent[fs[i].image] : NULL;
                if (fs[i].sym_status == CRASHREPORT_SYM_MISSING ||
                    (e != NULL && e->sc != NULL && symcache_hidden(e->sc)))
                    used[fs[i].image] = true;
            }
        }
        const char **all = arena_alloc_array(a, ni, sizeof *all, err);
        const char **in_app = arena_alloc_array(a, ni, sizeof *in_app, err);
        size_t nall = 0, napp = 0;
        if (all == NULL || in_app == NULL)
            rc = ERR_TOO_LARGE;
        for (size_t i = 0; rc == ERR_OK && i < r->nimages; i++) {
            if (!used[i])
                continue;
            bool dup = false;
            for (size_t k = 0; k < nall && !dup; k++)
                dup = strcmp(all[k], r->images[i].uuid) == 0;
            if (dup)
                continue;
            all[nall++] = r->images[i].uuid;
            if (signature_image_in_app(r, i))
                in_app[napp++] = r->images[i].uuid;
        }
        if (rc == ERR_OK) {
            r->missing_uuids = nall ? all : NULL;
            r->nmissing_uuids = nall;
            r->symbolicated = true;
            if (missing_in_app) {
                *missing_in_app = napp ? in_app : NULL;
                *nmissing = napp;
            }
        }
    }
    for (size_t i = 0; i < r->nimages; i++)
        if (c.state[i] == 1)
            sc_release(p, c.ent[i]);
    return rc;
}

err_code pipeline_symbolicate(pipeline *p, crashreport *r, const char ***missing_in_app,
                              size_t *nmissing, arena *a, err_info *err)
{
    err_code rc = symbolicate_pass(p, r, missing_in_app, nmissing, false, NULL, a, err);
    /* The report is about to wait for an in-app dSYM: ask Postgres rather than trust a recent
     * "none" of this node's cache, and if one came meanwhile, symbolicate again with it (a
     * report never waits for a dSYM that is there: no pending/received ping-pong). */
    if (rc == ERR_OK && missing_in_app && *nmissing > 0 && p->o.files &&
        recheck_missing(p, *missing_in_app, *nmissing))
        rc = symbolicate_pass(p, r, missing_in_app, nmissing, false, NULL, a, err);
    return rc;
}

err_code pipeline_parse(crashreport **out, pipeline *p, const uint8_t *raw, size_t len, arena *a,
                        err_info *err)
{
    err_code rc = crashreport_parse(out, (const char *)raw, len, a, err);
    if (rc == ERR_OK)
        rc = pipeline_symbolicate(p, *out, NULL, NULL, a, err);
    return rc;
}

/* `s` (NULL: NULL) as valid UTF-8 in `a` (base/utf8's rule); `s` itself if it is, or if the
 * arena's budget is spent (its commit then fails alone). */
static const char *text_of(const char *s, arena *a)
{
    const char *t = s ? utf8_sanitize(NULL, s, strlen(s), a, NULL) : NULL;
    return t ? t : s;
}


/* ---- workers ------------------------------------------------------------------------- */

/* What the walks of one minidump saw of each image's stored debug file (minidump_unwind), by
 * image index: so that the commit can tell whether one of them changed meanwhile. */
enum { SEEN_UNKNOWN, SEEN_NONE, SEEN_VERSION };
typedef struct {
    uint8_t *state;    /* SEEN_UNKNOWN (not asked, or its row could not be read), SEEN_NONE (no
                          stored symcache), SEEN_VERSION (walked with `version`) */
    uint64_t *version; /* the first 64 bits of the symcache's SHA-256 (sc_locate's version) */
} unwind_seen;

/* The in-app images a minidump's walk went through without their unwind info (a frame of
 * any walked thread fell in them, has_unwind false: the frame's caller was found by the frame
 * pointer or the scan, or the walk stopped there), as a JSON array of their UUIDs in `a`
 * (*out NULL when there are none); `json` is scratch space. Images the app does not own
 * (the OS's libraries) are not asked for, as for dSYMs. With `seen`, *checks (else NULL) is
 * what the walk saw of each of them (store_outcome.unwind_checks_json). Errors ERR_TOO_LARGE. */
static err_code unwind_lacking(const char **out, const char **checks, const crashreport *r,
                               const unwind_seen *seen, buf *json, arena *a, err_info *err)
{
    *out = NULL;
    *checks = NULL;
    bool *used = arena_alloc_array(a, r->nimages ? r->nimages : 1, sizeof *used, err);
    if (used == NULL)
        return ERR_TOO_LARGE;
    for (size_t t = 0; t < r->nthreads; t++)
        for (size_t k = 0; k < r->threads[t].nframes; k++) {
            int32_t im = r->threads[t].frames[k].image;
            if (im >= 0 && (size_t)im < r->nimages)
                used[im] = true;
        }
    jsonw j;
    jsonw_init(&j, json);
    jsonw_array_begin(&j);
    size_t n = 0;
    for (size_t i = 0; i < r->nimages; i++) {
        const crashreport_image *im = &r->images[i];
        used[i] = used[i] && im->uuid[0] != '\0' && !im->has_unwind &&
                  im->in_app == CRASHREPORT_IN_APP_YES;
        bool dup = false;
        for (size_t k = 0; k < i && used[i] && !dup; k++)
            dup = used[k] && strcmp(r->images[k].uuid, im->uuid) == 0;
        if (!used[i] || dup)
            continue;
        jsonw_str(&j, im->uuid);
        n++;
    }
    jsonw_array_end(&j);
    if (n == 0)
        return ERR_OK;
    *out = arena_strndup(a, (const char *)json->data, json->len, err);
    if (*out == NULL)
        return ERR_TOO_LARGE;
    if (seen == NULL)
        return ERR_OK;
    /* the same images, with what the walk saw of each (asked under any index of its UUID) */
    json->len = 0;
    jsonw_init(&j, json);
    jsonw_array_begin(&j);
    size_t nchecks = 0;
    for (size_t i = 0; i < r->nimages; i++) {
        bool dup = false;
        for (size_t k = 0; k < i && used[i] && !dup; k++)
            dup = used[k] && strcmp(r->images[k].uuid, r->images[i].uuid) == 0;
        if (!used[i] || dup)
            continue;
        size_t at = r->nimages;
        for (size_t k = 0; k < r->nimages && at == r->nimages; k++)
            if (seen->state[k] != SEEN_UNKNOWN && strcmp(r->images[k].uuid, r->images[i].uuid) == 0)
                at = k;
        if (at == r->nimages)
            continue;   /* unknown: no check (it could release the report again and again) */
        char hex[17] = "";
        if (seen->state[at] == SEEN_VERSION)
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)seen->version[at]);
        jsonw_object_begin(&j);
        jsonw_kstr(&j, "uuid", r->images[i].uuid);
        jsonw_kstr(&j, "seen", hex);
        jsonw_object_end(&j);
        nchecks++;
    }
    jsonw_array_end(&j);
    if (nchecks > 0) {
        *checks = arena_strndup(a, (const char *)json->data, json->len, err);
        if (*checks == NULL)
            return ERR_TOO_LARGE;
    }
    return ERR_OK;
}


/* What becomes of report `r` (parsed; `app` as intake stored it, NULL = unknown): *o filled
 * as a worker commits it, everything in `a`. `at_intake`: only with symcaches this node has
 * open already (sc_acquire's warm_only) and only to "processed": false when that could not
 * be (a symcache to fetch or open, an in-app image without a dSYM, an error), *o then unused
 * (the report goes to the queue, where pipeline_process_claimed does it all). `seen`: what a
 * minidump's walks saw of its images' debug files (minidump_unwind), NULL if none. */
static bool process_parsed(pipeline *p, crashreport *r, const char *app, store_outcome *o,
                           bool at_intake, const unwind_seen *seen, arena *a)
{
    err_info err = {0};
    const char **missing = NULL;
    size_t nmissing = 0;
    signature sig;
    memset(o, 0, sizeof *o);
    o->status = "failed";
    o->kind = crashreport_kind_name(r->kind);
    err_code rc;
    if (at_intake) {
        bool cold = false;
        rc = symbolicate_pass(p, r, &missing, &nmissing, true, &cold, a, &err);
        if (rc != ERR_OK || cold || nmissing > 0)
            return false;   /* the worker fetches, opens, rechecks or records the error */
    } else {
        rc = pipeline_symbolicate(p, r, &missing, &nmissing, a, &err);
    }
    signature_options so = {p->o.signature_frames};
    if (rc == ERR_OK)
        rc = signature_compute(&sig, r, &so, a, &err);
    buf json;
    buf_init(&json);
    /* a 30-frame report's model is ~17 kB: room for it at once, not eight doublings */
    buf_reserve(&json, 32768);
    if (rc == ERR_OK) {
        /* the stored model says which images are the app's own, by the signature's rules,
         * so that readers (the dashboard) need not repeat them */
        for (size_t i = 0; i < r->nimages; i++)
            r->images[i].in_app = signature_image_in_app(r, i) ? CRASHREPORT_IN_APP_YES : CRASHREPORT_IN_APP_NO;
        crashreport_render_json(&json, r);
        o->symbolicated_json = arena_strndup(a, (const char *)json.data, json.len, &err);
        o->symbolicated_len = json.len;
        if (o->symbolicated_json == NULL)
            rc = ERR_TOO_LARGE;
        json.len = 0;
    }
    if (rc == ERR_OK && nmissing > 0) {
        jsonw j;
        jsonw_init(&j, &json);
        jsonw_array_begin(&j);
        for (size_t i = 0; i < nmissing; i++)
            jsonw_str(&j, missing[i]);
        jsonw_array_end(&j);
        o->missing_uuids_json = arena_strndup(a, (const char *)json.data, json.len, &err);
        json.len = 0;
        if (o->missing_uuids_json == NULL)
            rc = ERR_TOO_LARGE;
    }
    if (rc == ERR_OK && r->format == CRASHREPORT_FORMAT_MINIDUMP) {
        rc = unwind_lacking(&o->unwind_uuids_json, &o->unwind_checks_json, r, seen, &json, a,
                            &err);
        json.len = 0;
    }
    if (rc == ERR_OK) {
        signature_render_frames_json(&json, &sig);
        o->frames_json = arena_strndup(a, (const char *)json.data, json.len, &err);
        if (o->frames_json == NULL)
            rc = ERR_TOO_LARGE;
    }
    buf_reset(&json);
    if (rc != ERR_OK) {
        o->error = arena_sprintf(a, &err, "%s: %s", err_name(rc), err.msg);
        o->symbolicated_json = NULL;
        o->symbolicated_len = 0;
        o->missing_uuids_json = NULL;
        o->unwind_uuids_json = NULL;
        o->unwind_checks_json = NULL;
        if (o->error == NULL)
            o->error = "the report needs more memory than its budget";
        return !at_intake;
    }
    const crashreport_metadata *m = &r->meta;
    o->status = nmissing > 0 ? "pending_dsym" : "processed";
    o->app = app ? app : m->app_name ? m->app_name : m->process ? m->process : "";
    o->app_version = m->app_version;
    o->hardware_model = m->hardware_model;
    o->grouped = true;
    o->fingerprint = sig.fingerprint;
    /* names from a dSYM (the symbolicated frames they are made of) are not the report's:
     * text columns take them as UTF-8 by base/utf8's rule all the same */
    o->title = text_of(sig.title, a);
    o->culprit = text_of(sig.culprit, a);
    o->exception = text_of(sig.exception, a);
    o->basis = signature_basis_name(sig.basis);
    /* provisional: the grouping can still change, because a frame that decided the
     * signature lacks its in-app dSYM (a dSYM missing below those frames changes how the
     * report reads, not where it belongs) */
    o->provisional = sig.provisional || (nmissing > 0 && signature_waits_for(&sig, r));
    /* sig.fingerprint lives in `sig` on this stack: keep a copy in the arena */
    o->fingerprint = arena_strdup(a, sig.fingerprint, &err);
    if (o->fingerprint == NULL) {
        o->grouped = false;
        o->status = "failed";
        o->error = "the report needs more memory than its budget";
        return !at_intake;
    }
    return true;
}

/* Ask for the unwind info of image `i` of `cur` into *out (its symcache referenced in
 * *held): true when it has a symcache: its unwind info, or its symbols alone, which bound the
 * stack scan. With `fresh`, an in-app image without unwind info is asked of Postgres once
 * more (not this node's row cache, which may be a TTL behind an upload on another node). A
 * report's first walk trusts the cache: what it saw of each such image goes to the commit's
 * check (unwind_seen), which sends the report back to the queue when the row is not what was
 * seen, and that walk again is fresh. */
static bool unwind_ask(unwind_image *out, sc_entry **held, unwind_seen *seen, pipeline *p,
                       const crashreport *cur, size_t i, bool fresh, bool warm_only, bool *cold)
{
    const char *uuid = cur->images[i].uuid;
    err_info err = {0};
    bool unknown = false;
    char path[4096];
    uint64_t version = 0;
    /* located first: most images a walk reaches (the OS's libraries) have no symcache, which
     * one lookup tells (sc_acquire, then the check's own lookup, took two) */
    bool located = sc_locate_in(path, &version, p, uuid, warm_only, &unknown);
    sc_entry *e = located ? sc_acquire(p, uuid, warm_only, cold) : NULL;
    if (warm_only && (unknown || (located && e == NULL))) {
        *cold = true;   /* a row to read or a symcache to open first: the workers' walk */
        return false;
    }
    if (fresh && !warm_only && (e == NULL || !symcache_has_unwind(e->sc)) && p->o.files != NULL &&
        signature_image_in_app(cur, i)) {
        if (e != NULL)
            sc_release(p, e);
        symfiles_forget(p->o.files, uuid);
        unknown = false;
        located = sc_locate_in(path, &version, p, uuid, false, &unknown);
        e = located ? sc_acquire(p, uuid, false, cold) : NULL;
    }
    /* What was seen, for the commit's check (stored debug files only: p->o.files). No
     * symcache: none only when the row says so (an unreadable row or file is unknown). */
    if (p->o.files != NULL && e != NULL) {
        seen->state[i] = SEEN_VERSION;
        seen->version[i] = e->version;
    } else if (p->o.files != NULL && located) {
        seen->state[i] = SEEN_VERSION;
        seen->version[i] = version;
    } else if (p->o.files != NULL && !unknown) {
        seen->state[i] = SEEN_NONE;
    }
    if (e == NULL)
        return false;
    if (symcache_scan_image(out, e->sc, &err) != ERR_OK)
        log_event(LOG_WARN, "symcache_unwind_unreadable", "uuid=%s message=%s", uuid, err.msg);
    *held = e;
    return true;
}

/* The images' unwind info a worker's walk of one minidump asks for (minidump_resolve). */
typedef struct {
    pipeline *p;
    bool fresh;          /* unwind_ask's */
    bool warm_only;      /* the intake's walk: only symcaches open already (unwind_ask) */
    bool cold;           /* warm_only: an image needed more; nothing more is asked */
    bool walked;         /* warm_only: minidump_walk_warm let the walk go on */
    arena *a;
    sc_entry **held;     /* per image: the symcache referenced for the walk, NULL if none */
    size_t nheld;        /* entries of held (the report's images), 0 before the first ask */
    unwind_seen seen;    /* state NULL until the first ask, or when the arena was full */
    bool full;           /* the arena could not hold the arrays: nothing is asked */
} minidump_asker;

/* minidump_resolve - crashreport_minidump_options.image_unwind for a worker: the unwind info
 * an image's symcache carries (an uploaded executable's compact unwind and __eh_frame, a
 * dSYM's __debug_frame, a .sym's STACK CFI: symcache_scan_image, with the symbols that bound
 * the stack scan), asked when the walk first reaches the image: the dump is walked once, and
 * only the images it reaches are asked for (a dump lists every loaded image, 200 and more for
 * an Electron app, and each asked for costs a symcache lookup). */
static bool minidump_resolve(struct unwind_image *out, void *ctx, const crashreport *r,
                             size_t i)
{
    minidump_asker *k = ctx;
    if (k->full || k->cold || i >= r->nimages || r->images[i].uuid[0] == '\0')
        return false;
    if (k->held == NULL) {
        err_info err = {0};
        size_t ni = r->nimages;
        k->held = arena_alloc_array(k->a, ni, sizeof *k->held, &err);
        k->seen.state = arena_alloc_array(k->a, ni, sizeof *k->seen.state, &err);
        k->seen.version = arena_alloc_array(k->a, ni, sizeof *k->seen.version, &err);
        if (k->held == NULL || k->seen.state == NULL || k->seen.version == NULL) {
            k->held = NULL;
            k->seen.state = NULL;
            k->full = true;
            return false;
        }
        k->nheld = ni;
    }
    return unwind_ask(out, &k->held[i], &k->seen, k->p, r, i, k->fresh, k->warm_only, &k->cold);
}

/* crashreport_minidump_options.walk_if for the intake: walk only when every in-app image
 * with a UUID has its symcache open on this node already (current by the row cache), as
 * processing at intake needs (an in-app dSYM missing or cold sends the report to the
 * workers, who would walk it again): a dump of an app whose dSYMs are not uploaded is read
 * for its row alone, as without processing at intake. */
static bool minidump_walk_warm(void *ctx, const crashreport *r)
{
    minidump_asker *k = ctx;
    for (size_t i = 0; i < r->nimages && !k->cold; i++) {
        if (r->images[i].uuid[0] == '\0' || !signature_image_in_app(r, i))
            continue;
        bool cold = false;
        sc_entry *e = sc_acquire(k->p, r->images[i].uuid, true, &cold);
        if (e == NULL)
            k->cold = true;
        sc_release(k->p, e);
    }
    k->walked = !k->cold;
    return k->walked;
}

/* What becomes of one claimed report; everything in `a`. */
void pipeline_process_claimed(store_outcome *o, pipeline *p, const store_claimed *row, arena *a)
{
    err_info err = {0};
    crashreport *r = NULL;
    ingest_stored st;
    /* processed before (sent back by an upload or by the commit's check, or retried): the
     * row cache may be what missed the upload (unwind_ask) */
    minidump_asker k = {.p = p, .fresh = row->issue_id != 0 || row->attempts > 0, .a = a};
    err_code rc = ingest_stored_unpack(&st, row->raw, row->raw_len, row->content_type, a, &err);
    if (rc == ERR_OK && crashreport_is_minidump(st.report, st.len)) {
        /* walked once, each image's unwind info asked for when the walk first reaches it */
        crashreport_minidump_options mo = {.event_json = st.event, .event_len = st.event_len,
                                           .image_unwind = minidump_resolve,
                                           .image_unwind_ctx = &k};
        rc = crashreport_parse_minidump(&r, st.report, st.len, &mo, a, &err);
        atomic_fetch_add(&p->minidump_walks, 1);
        for (size_t i = 0; i < k.nheld; i++)
            if (k.held[i] != NULL)
                sc_release(p, k.held[i]);   /* the walk is done: nothing points into them */
    } else if (rc == ERR_OK) {
        rc = ingest_stored_parse(&r, &st, a, &err);
    }
    if (rc != ERR_OK) {
        memset(o, 0, sizeof *o);
        o->status = "failed";
        o->error = arena_sprintf(a, &err, "parsing: %s", err.msg);
        return;
    }
    process_parsed(p, r, row->app, o, false, k.seen.state ? &k.seen : NULL, a);
}

bool pipeline_process_at_intake(pipeline *p, crashreport *r, const char *app, store_outcome *o,
                                arena *a)
{
    if (p->o.workers == 0 || !p->o.at_intake)
        return false;
    return process_parsed(p, r, app, o, true, NULL, a);
}

err_code pipeline_minidump_at_intake(crashreport **out, bool *processed, store_outcome *o,
                                     pipeline *p, const uint8_t *dump, size_t len,
                                     const char *event, size_t event_len, arena *a,
                                     err_info *err)
{
    *out = NULL;
    *processed = false;
    crashreport_minidump_options mo = {.event_json = event, .event_len = event_len};
    if (p == NULL || p->o.workers == 0 || !p->o.at_intake) {
        mo.context_only = true;
        return crashreport_parse_minidump(out, dump, len, &mo, a, err);
    }
    minidump_asker k = {.p = p, .warm_only = true, .a = a};
    mo.image_unwind = minidump_resolve;
    mo.image_unwind_ctx = &k;
    mo.walk_if = minidump_walk_warm;
    err_code rc = crashreport_parse_minidump(out, dump, len, &mo, a, err);
    for (size_t i = 0; i < k.nheld; i++)
        if (k.held[i] != NULL)
            sc_release(p, k.held[i]);
    if (rc != ERR_OK) {
        /* a walk's own limit (the arena) must not refuse what the row alone would take */
        err_clear(err);
        mo = (crashreport_minidump_options){.event_json = event, .event_len = event_len,
                                            .context_only = true};
        return crashreport_parse_minidump(out, dump, len, &mo, a, err);
    }
    if (!k.walked)
        return ERR_OK;   /* read for its row alone; the workers walk it */
    *processed = !k.cold && !k.full &&
                 process_parsed(p, *out, NULL, o, true, k.seen.state ? &k.seen : NULL, a);
    if (*processed)
        atomic_fetch_add(&p->minidump_walks, 1);
    else
        atomic_fetch_add(&p->minidump_intake_dropped, 1);
    return ERR_OK;
}

void pipeline_worker_thread_init(const char *name, unsigned nice)
{
    pthread_setname_np(pthread_self(), name);
    if (nice == 0)
        return;
    errno = 0;
    int now = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (errno == 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), now + (int)nice) != 0)
        log_event(LOG_WARN, "worker_nice_failed", "thread=%s nice=%u message=%s", name, nice,
                  strerror(errno));
}

void pipeline_post(pipeline *p)
{
    if (p != NULL)
        workpool_post(p->workers);
}

/* One report worker (workpool_fn): claim a batch, process it, commit, until stopped. */
static void worker_run(workpool *wp, unsigned index, void *ctx)
{
    pipeline *p = ctx;
    pipeline_worker_thread_init("report-worker", p->o.nice);
    unsigned solo = 0;       /* > 0: claim one report at a time, after a batch was refused */
    unsigned store_errors = 0;
    unsigned idle_ms = p->o.idle_poll_ms; /* doubles while the queue stays empty */
    double next_sweep = now_ms() + SWEEP_EVERY_S * 1000.0;
    size_t budget = (size_t)p->o.max_report_bytes * 24 + (16u << 20);

    while (!workpool_stopping(wp)) {
        if (index == 0 && now_ms() >= next_sweep) {
            int64_t released = 0;
            err_info err = {0};
            if (store_pending_sweep(&released, p->store, &err) == ERR_OK && released > 0)
                log_event(LOG_INFO, "pending_released", "reports=%lld", (long long)released);
            next_sweep = now_ms() + SWEEP_EVERY_S * 1000.0;
        }
        arena *batch_a = arena_new(0);
        store_work *work = NULL;
        const store_claimed *rows = NULL;
        size_t n = 0;
        err_info err = {0};
        double t0 = now_ms();
        unsigned long seen = workpool_posted(wp);
        err_code rc = store_work_claim(&work, &rows, &n, p->store, solo ? 1 : p->o.batch,
                                       batch_a, &err);
        if (rc != ERR_OK || n == 0) {
            arena_free(batch_a);
            if (rc != ERR_OK) {
                if (store_errors++ % 20 == 0)
                    log_event(LOG_WARN, "queue_unavailable", "worker=%u error=%s message=%s",
                              index, err_name(rc), err.msg);
                workpool_wait(wp, 1000);
            } else {
                store_errors = 0;
                workpool_idle(wp, &idle_ms, p->o.idle_poll_ms, PIPELINE_IDLE_MAX_MS, seen);
            }
            continue;
        }
        store_errors = 0;
        idle_ms = p->o.idle_poll_ms;
        atomic_fetch_add(&p->in_progress, n);
        store_outcome *out = arena_alloc_array(batch_a, n, sizeof *out, &err);
        arena **arenas = xcalloc(n, sizeof *arenas);
        unsigned counts[3] = {0};
        for (size_t i = 0; out != NULL && i < n; i++) {
            arenas[i] = arena_new(budget);
            pipeline_process_claimed(&out[i], p, &rows[i], arenas[i]);
            counts[out[i].status[0] == 'p' ? (out[i].status[1] == 'r' ? 0 : 1) : 2]++;
            if (out[i].status[0] == 'f')
                log_event(LOG_WARN, "report_failed", "report=%s message=%s", rows[i].id,
                          out[i].error);
        }
        double t1 = now_ms();
        unsigned regressions = 0;
        if (out == NULL) {
            store_work_abort(work);
            rc = ERR_TOO_LARGE;
        } else {
            store_group *groups = NULL;
            size_t ngroups = 0;
            rc = grouping_decide(&groups, &ngroups, out, rows, n, batch_a, &err);
            if (rc == ERR_OK)
                rc = store_work_commit(work, out, groups, ngroups, &regressions, &err);
            else
                store_work_abort(work);
        }
        if (rc == ERR_OK) {
            atomic_fetch_add(&p->processed, counts[0]);
            atomic_fetch_add(&p->pending, counts[1]);
            atomic_fetch_add(&p->failed, counts[2]);
            atomic_fetch_add(&p->batches, 1);
            atomic_fetch_add(&p->regressions, regressions);
            if (solo)
                solo--;
            log_event(LOG_DEBUG, "batch_done", "worker=%u reports=%zu processed=%u pending=%u "
                      "failed=%u regressions=%u process_ms=%.1f commit_ms=%.1f", index, n,
                      counts[0], counts[1], counts[2], regressions, t1 - t0, now_ms() - t1);
        } else {
            atomic_fetch_add(&p->commit_errors, 1);
            log_event(LOG_WARN, "batch_failed", "worker=%u reports=%zu error=%s message=%s",
                      index, n, err_name(rc), err.msg);
            if (rc == ERR_STORE) {
                workpool_wait(wp, 1000);   /* database trouble: the reports wait in the queue */
            } else if (n == 1) {
                /* This one report cannot be stored: fail it, with the reason, and go on. */
                err_info ferr = {0};
                if (store_report_fail(p->store, rows[0].id, err.msg, &ferr) != ERR_OK)
                    log_event(LOG_WARN, "report_fail_unrecorded", "report=%s message=%s",
                              rows[0].id, ferr.msg);
                else
                    atomic_fetch_add(&p->failed, 1);
            } else {
                solo = (unsigned)n;   /* find the one that breaks the batch */
            }
        }
        atomic_fetch_sub(&p->in_progress, n);
        for (size_t i = 0; i < n; i++)
            arena_free(arenas[i]);
        free(arenas);
        arena_free(batch_a);
    }
}

err_code pipeline_start(pipeline *p, err_info *err)
{
    if (p->o.workers == 0 || p->workers != NULL)
        return ERR_OK;
    workpool *wp;
    err_code rc = workpool_start(&wp, p->o.workers, worker_run, p, err);
    if (rc == ERR_OK)
        p->workers = wp;
    return rc;
}

void pipeline_stop(pipeline *p)
{
    if (p != NULL)
        workpool_join(p->workers);
}

void pipeline_free(pipeline *p)
{
    if (p == NULL)
        return;
    workpool_free(p->workers);
    for (size_t i = 0; i < p->nsc; i++)
        symcache_close(p->sc[i].sc);
    free(p->sc);
    for (stack_entry *e = p->lru_head; e != NULL;) {
        stack_entry *next = e->next;
        free(e);
        e = next;
    }
    free(p->buckets);
    pthread_mutex_destroy(&p->sc_mu);
    pthread_mutex_destroy(&p->rebuild_mu);
    pthread_mutex_destroy(&p->st_mu);
    free(p->symcache_dir);
    EVP_MD_free(p->sha256);
    free(p);
}

void pipeline_stats_get(pipeline_stats *out, pipeline *p)
{
    memset(out, 0, sizeof *out);
    out->stack_hits = atomic_load(&p->stack_hits);
    out->stack_misses = atomic_load(&p->stack_misses);
    out->frame_hits = atomic_load(&p->frame_hits);
    out->frame_misses = atomic_load(&p->frame_misses);
    out->symcache_opens = atomic_load(&p->symcache_opens);
    out->processed = atomic_load(&p->processed);
    out->pending = atomic_load(&p->pending);
    out->failed = atomic_load(&p->failed);
    out->batches = atomic_load(&p->batches);
    out->batch_failures = atomic_load(&p->commit_errors);
    out->regressions = atomic_load(&p->regressions);
    out->workers = p->o.workers;
    out->in_progress = atomic_load(&p->in_progress);
    out->minidump_walks = atomic_load(&p->minidump_walks);
    out->minidump_intake_dropped = atomic_load(&p->minidump_intake_dropped);
    pthread_mutex_lock(&p->st_mu);
    out->stack_entries = p->st_entries;
    out->stack_bytes = p->st_bytes;
    pthread_mutex_unlock(&p->st_mu);
    pthread_mutex_lock(&p->sc_mu);
    for (size_t i = 0; i < p->nsc; i++)
        out->symcaches_open += p->sc[i].sc != NULL;
    pthread_mutex_unlock(&p->sc_mu);
}

symfiles *pipeline_files(pipeline *p)
{
    return p->o.files;
}

void pipeline_metrics_render(buf *out, pipeline *p, uint64_t intake_processed,
                             uint64_t intake_regressions)
{
    pipeline_stats s;
    pipeline_stats_get(&s, p);
    s.processed += intake_processed;
    s.regressions += intake_regressions;
    uint64_t lookups = s.frame_hits + s.frame_misses;
    buf_printf(out,
               "# HELP stacksift_reports_processed_total Reports the workers finished, by "
               "outcome, and those processed at intake (status processed).\n"
               "# TYPE stacksift_reports_processed_total counter\n"
               "stacksift_reports_processed_total{status=\"processed\"} %llu\n"
               "stacksift_reports_processed_total{status=\"pending_dsym\"} %llu\n"
               "stacksift_reports_processed_total{status=\"failed\"} %llu\n"
               "# HELP stacksift_worker_batches_total Batches committed by the workers.\n"
               "# TYPE stacksift_worker_batches_total counter\n"
               "stacksift_worker_batches_total %llu\n"
               "# HELP stacksift_worker_batch_failures_total Batches that could not be "
               "committed (their reports went back to the queue).\n"
               "# TYPE stacksift_worker_batch_failures_total counter\n"
               "stacksift_worker_batch_failures_total %llu\n"
               "# HELP stacksift_issue_regressions_total Resolved issues reopened by a new report.\n"
               "# TYPE stacksift_issue_regressions_total counter\n"
               "stacksift_issue_regressions_total %llu\n"
               "# HELP stacksift_symbol_cache_stacks_total Stacks symbolicated, by whether the "
               "stack cache had them.\n"
               "# TYPE stacksift_symbol_cache_stacks_total counter\n"
               "stacksift_symbol_cache_stacks_total{result=\"hit\"} %llu\n"
               "stacksift_symbol_cache_stacks_total{result=\"miss\"} %llu\n"
               "# HELP stacksift_symbol_cache_frames_total Frames symbolicated, by whether the "
               "stack cache had them.\n"
               "# TYPE stacksift_symbol_cache_frames_total counter\n"
               "stacksift_symbol_cache_frames_total{result=\"hit\"} %llu\n"
               "stacksift_symbol_cache_frames_total{result=\"miss\"} %llu\n"
               "# HELP stacksift_symbol_cache_hit_ratio Share of frames served by the stack "
               "cache since start.\n"
               "# TYPE stacksift_symbol_cache_hit_ratio gauge\n"
               "stacksift_symbol_cache_hit_ratio %.4f\n"
               "# HELP stacksift_symbol_cache_bytes Bytes held by the stack cache.\n"
               "# TYPE stacksift_symbol_cache_bytes gauge\n"
               "stacksift_symbol_cache_bytes %llu\n"
               "# HELP stacksift_symcaches_open Symcaches mapped now.\n"
               "# TYPE stacksift_symcaches_open gauge\n"
               "stacksift_symcaches_open %u\n"
               "# HELP stacksift_minidump_walks_total Minidumps walked for the frames "
               "stored (each once: every thread, with the unwind info of the images it "
               "reaches), by the workers or at intake.\n"
               "# TYPE stacksift_minidump_walks_total counter\n"
               "stacksift_minidump_walks_total %llu\n"
               "# HELP stacksift_minidump_intake_walks_dropped_total Minidumps walked at "
               "intake but not processed there (a symcache the walk reached not open on this "
               "node, an in-app dSYM still hiding its names): the workers walk them again.\n"
               "# TYPE stacksift_minidump_intake_walks_dropped_total counter\n"
               "stacksift_minidump_intake_walks_dropped_total %llu\n",
               (unsigned long long)s.processed, (unsigned long long)s.pending,
               (unsigned long long)s.failed, (unsigned long long)s.batches,
               (unsigned long long)s.batch_failures, (unsigned long long)s.regressions, (unsigned long long)s.stack_hits,
               (unsigned long long)s.stack_misses, (unsigned long long)s.frame_hits,
               (unsigned long long)s.frame_misses,
               lookups ? (double)s.frame_hits / (double)lookups : 0.0,
               (unsigned long long)s.stack_bytes, s.symcaches_open,
               (unsigned long long)s.minidump_walks,
               (unsigned long long)s.minidump_intake_dropped);
}
