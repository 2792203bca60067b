/*
 * callsites - sample batch intake and the counting workers (see callsites.h).
 */
#include "ingest/callsites.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/workpool.h"
#include "base/xalloc.h"
#include "ingest/ingest.h"
#include "log/log.h"
#include "signature/signature.h"
#include "store/store_samples.h"

#define SWEEP_EVERY_S 30

/* Bytes of checked batches the intake may keep for this process's workers: past it a new one
 * is not kept (its worker parses the stored text instead). Not the oldest dropped: workers
 * claim the oldest rows first, so in a burst larger than this the kept ones are used and make
 * room, where dropping the oldest would drop each batch just before its claim. A 1,000-sample
 * batch of 20-frame stacks takes about 100 KB once merged. */
#define HANDOFF_MAX_BYTES ((size_t)32 << 20)
/* A batch kept longer than this was claimed by another node (or its row failed): dropped. */
#define HANDOFF_MAX_AGE_MS 60000.0

/* A batch the intake checked, in canonical form (samplebatch_canonical), for the worker of
 * this process that claims its row: counted without parsing its stored text again. */
typedef struct {
    char sha256[65];   /* of its canonical text: what its row's sha256 says */
    arena *a;          /* owns `b` */
    samplebatch *b;
    size_t bytes;      /* arena_used(a) */
    double at_ms;      /* when it was kept (now_ms) */
} handoff_entry;

struct callsites {
    callsites_options o;
    store *store;
    pipeline *pipe;
    workpool *_Atomic workers; /* NULL until callsites_start (callsites_accept reads it from
                                  HTTP threads, which may run before the start) */
    /* Batches handed from the intake, oldest first (a few hundred at most: a linear search) */
    pthread_mutex_t handoff_mu;
    handoff_entry *handoff;
    size_t nhandoff, cap_handoff, handoff_bytes;
    /* Batches and pending stacks this process could not read or count (a bug, logged once
     * each): left in the queue for a fixed server, skipped here so the rest goes on. */
    pthread_mutex_t poison_mu;
    buf poison_batches, poison_pending;   /* comma-separated ids */
    atomic_uint_fast64_t batches, stacks, stack_evals, pending_stacks, commits, commit_failures,
        batches_handed;
};

static double now_ms(void);

/* Keep checked batch `b` (owned by `a`, which goes with it) under `sha256` for a worker of
 * this process, unless HANDOFF_MAX_BYTES are kept already (then `a` is freed); batches kept
 * past HANDOFF_MAX_AGE_MS go first. */
static void handoff_put(callsites *c, const char *sha256, arena *a, samplebatch *b)
{
    double now = now_ms();
    size_t bytes = arena_used(a), drop = 0;
    pthread_mutex_lock(&c->handoff_mu);
    while (drop < c->nhandoff && now - c->handoff[drop].at_ms > HANDOFF_MAX_AGE_MS) {
        c->handoff_bytes -= c->handoff[drop].bytes;
        arena_free(c->handoff[drop++].a);
    }
    if (drop > 0) {
        c->nhandoff -= drop;
        memmove(c->handoff, c->handoff + drop, c->nhandoff * sizeof *c->handoff);
    }
    if (c->handoff_bytes + bytes > HANDOFF_MAX_BYTES) {
        pthread_mutex_unlock(&c->handoff_mu);
        arena_free(a);
        return;
    }
    if (c->nhandoff == c->cap_handoff) {
        c->cap_handoff = c->cap_handoff ? c->cap_handoff * 2 : 64;
        c->handoff = xreallocarray(c->handoff, c->cap_handoff, sizeof *c->handoff);
    }
    handoff_entry *e = &c->handoff[c->nhandoff++];
    snprintf(e->sha256, sizeof e->sha256, "%s", sha256);
    e->a = a;
    e->b = b;
    e->bytes = bytes;
    e->at_ms = now;
    c->handoff_bytes += bytes;
    pthread_mutex_unlock(&c->handoff_mu);
}

/* The batch kept under `sha256` (the oldest such), taken out: its arena is the caller's now;
 * NULL if none. */
static arena *handoff_take(samplebatch **b, callsites *c, const char *sha256)
{
    arena *a = NULL;
    *b = NULL;
    pthread_mutex_lock(&c->handoff_mu);
    for (size_t i = 0; i < c->nhandoff; i++) {
        if (strcmp(c->handoff[i].sha256, sha256) != 0)
            continue;
        a = c->handoff[i].a;
        *b = c->handoff[i].b;
        c->handoff_bytes -= c->handoff[i].bytes;
        c->nhandoff--;
        memmove(c->handoff + i, c->handoff + i + 1, (c->nhandoff - i) * sizeof *c->handoff);
        break;
    }
    pthread_mutex_unlock(&c->handoff_mu);
    return a;
}

/* ---- intake ---------------------------------------------------------------------------- */

static void sha256_hex(char out[65], const void *data, size_t len)
{
    uint8_t md[32];
    unsigned n = 32;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

err_code callsites_accept(callsites_result *out, char field[SAMPLEBATCH_FIELD_MAX], store *s,
                          callsites *c, const callsites_input *in, arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    field[0] = '\0';
    if (in->content_type[0] != '\0' && strcmp(in->content_type, "application/json") != 0) {
        snprintf(field, SAMPLEBATCH_FIELD_MAX, "Content-Type");
        return err_set(err, ERR_UNSUPPORTED, "Content-Type: a sample batch is application/json, "
                       "not %.64s", in->content_type);
    }
    const uint8_t *json = in->body;
    size_t len = in->len;
    if (in->content_encoding && strcmp(in->content_encoding, "gzip") == 0) {
        uint8_t *plain = NULL;
        err_code rc = ingest_gunzip(&plain, &len, in->body, in->len, in->max_bytes,
                                    "the sample batch", a, err);
        if (rc != ERR_OK) {
            err_prefix(err, "body");
            snprintf(field, SAMPLEBATCH_FIELD_MAX, "body");
            return rc;
        }
        json = plain;
    } else if (in->content_encoding && strcmp(in->content_encoding, "identity") != 0) {
        snprintf(field, SAMPLEBATCH_FIELD_MAX, "Content-Encoding");
        return err_set(err, ERR_UNSUPPORTED, "Content-Encoding: gzip or identity, not %.64s",
                       in->content_encoding);
    } else if (len > in->max_bytes) {
        snprintf(field, SAMPLEBATCH_FIELD_MAX, "body");
        return err_set(err, ERR_TOO_LARGE, "body: larger than %llu bytes",
                       (unsigned long long)in->max_bytes);
    }
    if (len == 0) {
        snprintf(field, SAMPLEBATCH_FIELD_MAX, "body");
        return err_set(err, ERR_INVALID, "body: empty (a sample batch is a JSON object)");
    }
    samplebatch *b;
    err_code rc = samplebatch_parse(&b, field, (const char *)json, len, SAMPLEBATCH_SENT, a, err);
    if (rc != ERR_OK)
        return rc;
    /* With workers here, the checked batch goes to them in canonical form (its own arena):
     * the one that claims its row counts it without parsing the stored text again. Rendered
     * from that form, the text is the same (samplebatch_canonical). */
    arena *ca = NULL;
    samplebatch *cb = NULL;
    if (c != NULL && c->o.workers > 0) {
        ca = arena_new(0);
        if (samplebatch_canonical(&cb, b, ca, err) != ERR_OK) {   /* no budget: cannot fail */
            arena_free(ca);
            ca = NULL;
            cb = NULL;
        }
    }
    buf canon;
    buf_init(&canon);
    samplebatch_render_canonical(&canon, &out->stacks, cb ? cb : b);
    char sha[65];
    sha256_hex(sha, canon.data, canon.len);
    /* handed over before the row commits, so that no worker can claim it first; a row that
     * is not stored takes it back below */
    if (cb != NULL)
        handoff_put(c, sha, ca, cb);
    store_sample_batch row = {
        .project_id = in->project_id,
        .app = b->bundle_id ? b->bundle_id : b->app_name,
        .batch_id = b->batch_id,
        .sha256 = sha,
        .build = b->build,
        .device = b->device_id,
        .samples = (int64_t)b->nsamples,
        .calls = (int64_t)b->calls,
        .canonical = (const char *)canon.data,
    };
    store_batch_outcome outcome = STORE_BATCH_STORED;
    rc = store_samples_insert(&outcome, s, &row, err);
    buf_reset(&canon);
    if (cb != NULL && (rc != ERR_OK || outcome != STORE_BATCH_STORED)) {
        samplebatch *unused;
        arena_free(handoff_take(&unused, c, sha));   /* NULL when not kept: a no-op */
    }
    if (rc == ERR_CONFLICT)
        snprintf(field, SAMPLEBATCH_FIELD_MAX, "batch_id");
    if (rc != ERR_OK)
        return rc;
    if (outcome == STORE_BATCH_STORED && c != NULL)
        workpool_post(c->workers);   /* wakes a worker that has been idle a while */
    out->samples = b->nsamples;
    out->calls = b->calls;
    out->retry = outcome == STORE_BATCH_RETRY;
    return ERR_OK;
}

/* ---- a byte-keyed table for one claim ------------------------------------------------ */

typedef struct {
    const char *key;    /* NULL: empty slot; `len` bytes, borrowed (must outlive the map) */
    size_t len;
    uint64_t hash;      /* key_hash(key, len) */
    size_t val;
} smap_slot;

typedef struct {
    smap_slot *slots;
    size_t cap, n;      /* cap: 0 or a power of two */
} smap;

/* FNV-1a over 8-byte words, then the tail bytes: an in-memory table's hash (keys are compared
 * whole on a match, so a collision costs a comparison, never a wrong answer). */
static uint64_t key_hash(const void *key, size_t n)
{
    const unsigned char *p = key;
    uint64_t h = 1469598103934665603ull;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 32;
    }
    for (; n > 0; p++, n--)
        h = (h ^ *p) * 1099511628211ull;
    return h ^ h >> 31;
}

static void smap_free(smap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* The value stored for `key` (`len` bytes, hash `h`), or SIZE_MAX if none. */
static size_t smap_get(const smap *m, const void *key, size_t len, uint64_t h)
{
    if (m->cap == 0)
        return SIZE_MAX;
    for (size_t at = (size_t)h & (m->cap - 1);; at = (at + 1) & (m->cap - 1)) {
        const smap_slot *sl = &m->slots[at];
        if (sl->key == NULL)
            return SIZE_MAX;
        if (sl->hash == h && sl->len == len && memcmp(sl->key, key, len) == 0)
            return sl->val;
    }
}

/* Store `key` (not in the map yet; borrowed: it must outlive the map) with value `v`. */
static void smap_put(smap *m, const char *key, size_t len, uint64_t h, size_t v)
{
    if (m->n * 2 >= m->cap) {
        smap old = *m;
        m->cap = old.cap ? old.cap * 2 : 64;
        m->slots = xcalloc(m->cap, sizeof *m->slots);
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i].key)
                smap_put(m, old.slots[i].key, old.slots[i].len, old.slots[i].hash,
                         old.slots[i].val);
        free(old.slots);
    }
    size_t at = (size_t)h & (m->cap - 1);
    while (m->slots[at].key != NULL)
        at = (at + 1) & (m->cap - 1);
    m->slots[at] = (smap_slot){key, len, h, v};
    m->n++;
}

/* ---- workers --------------------------------------------------------------------------- */


/* What one distinct stack (frames only) comes to; strings in the claim's arena. The keys
 * that name it in the database are SHA-256 (stable across claims and nodes), made once per
 * stack and tag here rather than once per sample. */
typedef struct {
    bool pending;             /* an in-app image has no dSYM yet */
    const char *missing_json; /* pending: JSON array of those UUIDs */
    const char *names;        /* call site: normalized functions, one per line */
    const char *frames_json;  /* [{function,file,line,image}] */
    const char *stack_json;   /* the whole symbolicated stack */
    char stack_sha[65];       /* pending: hex SHA-256 of the stack (stack_key) */
    const char *key_tag;      /* the tag `key` was made for, NULL = none yet */
    char key[65];             /* hex SHA-256 of key_tag and the call site's names (pending:
                                 of key_tag and stack_sha) */
} stack_eval;

/* Devices seen for one aggregated row: interned ids (claim_intern), so the same device is the
 * same pointer and a pointer comparison finds it. */
typedef struct {
    const char **ids;
    size_t n, cap;
} device_set;

static void devices_add(device_set *d, const char *id)
{
    /* a batch's samples share their device: most adds repeat the last one */
    for (size_t i = d->n; i-- > 0;)
        if (d->ids[i] == id)
            return;
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 4;
        d->ids = xrealloc(d->ids, d->cap * sizeof *d->ids);
    }
    d->ids[d->n++] = id;
}


static const char *devices_json(const device_set *d, arena *a, err_info *err)
{
    buf b;
    buf_init(&b);
    buf_putc(&b, '[');
    for (size_t i = 0; i < d->n; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_append_json_str(&b, d->ids[i], strlen(d->ids[i]));
    }
    buf_putc(&b, ']');
    const char *s = arena_strndup(a, (const char *)b.data, b.len, err);
    buf_reset(&b);
    return s;
}

/* One aggregated row in the making (a call site add or a pending add). */
typedef struct {
    bool is_pending;
    store_callsite_add add;
    store_pending_add pend;
    device_set devices;
} agg_row;

typedef struct {
    callsites *c;
    arena *a;
    err_info *err;
    EVP_MD_CTX *md;
    int64_t culprit;        /* the batch (> 0) or pending stack (< 0) that failed, 0 = none */
    smap names;         /* an app, image or device as bytes -> its interned copy (index into
                           `interned`) */
    const char **interned;
    size_t ninterned, cap_interned;
    smap evals;         /* stack key (stack_material) -> index into `ev` */
    stack_eval *ev;
    size_t nev, cap_ev;
    smap rows;          /* row key -> index into `rows_v` */
    agg_row *rows_v;
    size_t nrows, cap_rows;
    size_t handed;      /* batches counted from the intake's handoff, not parsed */
    buf key;            /* scratch: the key being looked up */
} claim;

/* What a batch's samples share, interned in the claim: the same app, image or device in two
 * batches is the same pointer. */
typedef struct {
    const char *app;          /* app name and bundle id */
    const char **images;      /* per image of the batch: its UUID, arch, path and name */
    const char *device;       /* the device id */
} batch_ids;

static void md_str(EVP_MD_CTX *md, const char *s)
{
    EVP_DigestUpdate(md, s ? s : "", s ? strlen(s) + 1 : 1);
}

static void hex32(char out[65], const uint8_t md[32])
{
    static const char HEX[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = HEX[md[i] >> 4];
        out[2 * i + 1] = HEX[md[i] & 15];
    }
    out[64] = '\0';
}

/* Key of a stack for symbolication: the app (its in-app rules), then each frame's image
 * UUID, arch and offset in the image (the slide differs per launch; the stack does not).
 * The stable name of a stack that waits for a dSYM (callsite_pending.stack_key). */
static void stack_key(char out[65], claim *k, const samplebatch *b, const samplebatch_sample *s)
{
    uint8_t md[32];
    unsigned n = 32;
    EVP_DigestInit_ex(k->md, EVP_sha256(), NULL);
    md_str(k->md, b->app_name);
    md_str(k->md, b->bundle_id);
    for (uint32_t i = 0; i < s->nframes; i++) {
        const crashreport_image *im = &b->images[s->frames[i].image];
        uint64_t off = crashreport_strip_pac(s->frames[i].addr, im->arch ? im->arch : b->arch) -
                       im->load_addr;
        uint8_t rec[9];
        for (int j = 0; j < 8; j++)
            rec[j] = (uint8_t)(off >> (8 * j));
        rec[8] = (uint8_t)(im->in_app | (i == 0) << 4);
        EVP_DigestUpdate(k->md, im->uuid, 36);
        md_str(k->md, im->arch);
        md_str(k->md, im->path);
        md_str(k->md, im->name);
        EVP_DigestUpdate(k->md, rec, sizeof rec);
    }
    EVP_DigestFinal_ex(k->md, md, &n);
    hex32(out, md);
}

static void json_kv(buf *b, const char *key, const char *value)
{
    buf_printf(b, "%s\"%s\":", b->data[b->len - 1] == '{' ? "" : ",", key);
    if (value)
        buf_append_json_str(b, value, strlen(value));
    else
        buf_append_str(b, "null");
}

static const char *buf_to_arena(buf *b, arena *a, err_info *err)
{
    const char *s = arena_strndup(a, (const char *)b->data, b->len, err);
    b->len = 0;
    return s;
}

/* Symbolicate one stack (through the pipeline's caches) and make its call site. */
static err_code stack_evaluate(claim *k, stack_eval *out, const samplebatch *b,
                               const samplebatch_sample *s)
{
    arena *a = k->a;
    err_info *err = k->err;
    memset(out, 0, sizeof *out);
    crashreport *r = arena_alloc(a, sizeof *r, err);
    crashreport_thread *t = arena_alloc(a, sizeof *t, err);
    crashreport_frame *fs = arena_alloc_array(a, s->nframes, sizeof *fs, err);
    crashreport_image *images = arena_alloc_array(a, b->nimages, sizeof *images, err);
    if (r == NULL || t == NULL || fs == NULL || images == NULL)
        return ERR_TOO_LARGE;
    memset(r, 0, sizeof *r);
    memset(t, 0, sizeof *t);
    memset(fs, 0, s->nframes * sizeof *fs);
    memcpy(images, b->images, b->nimages * sizeof *images);
    r->format = CRASHREPORT_FORMAT_JSON;
    r->kind = CRASHREPORT_KIND_SAMPLE;
    r->meta.process = b->app_name;
    r->meta.app_name = b->app_name;
    r->meta.bundle_id = b->bundle_id;
    r->meta.app_version = b->app_version;
    r->meta.build = b->build;
    r->meta.arch = b->arch;
    r->meta.crashed_thread = 0;
    r->images = images;
    r->nimages = b->nimages;
    t->crashed = true;
    t->frames = fs;
    t->nframes = s->nframes;
    r->threads = t;
    r->nthreads = 1;
    for (uint32_t i = 0; i < s->nframes; i++) {
        fs[i].index = i;
        fs[i].image = (int32_t)s->frames[i].image;
        fs[i].addr = s->frames[i].addr;
    }
    const char **missing = NULL;
    size_t nmissing = 0;
    err_code rc = pipeline_symbolicate(k->c->pipe, r, &missing, &nmissing, a, err);
    if (rc != ERR_OK)
        return rc;
    atomic_fetch_add(&k->c->stack_evals, 1);
    buf j;
    buf_init(&j);
    if (nmissing > 0) {
        out->pending = true;
        buf_putc(&j, '[');
        for (size_t i = 0; i < nmissing; i++) {
            if (i)
                buf_putc(&j, ',');
            buf_append_json_str(&j, missing[i], strlen(missing[i]));
        }
        buf_putc(&j, ']');
        out->missing_json = buf_to_arena(&j, a, err);
        buf_reset(&j);
        return out->missing_json ? ERR_OK : ERR_TOO_LARGE;
    }
    signature sig;
    signature_options so = {k->c->o.signature_frames};
    rc = signature_compute(&sig, r, &so, a, err);
    if (rc != ERR_OK) {
        buf_reset(&j);
        return rc;
    }
    /* the call site: normalized names, one per line; and its frames for people */
    buf_putc(&j, '[');
    buf names;
    buf_init(&names);
    for (size_t i = 0; i < sig.nframes; i++) {
        const signature_frame *f = &sig.frames[i];
        buf_printf(&names, "%s\n", f->function ? f->function : "");
        buf_append_str(&j, i ? ",{" : "{");
        json_kv(&j, "function", f->function);
        json_kv(&j, "file", f->file);
        buf_printf(&j, ",\"line\":%u", f->line);
        json_kv(&j, "image", f->image);
        buf_putc(&j, '}');
    }
    buf_putc(&j, ']');
    out->names = names.len ? buf_to_arena(&names, a, err) : "";
    buf_reset(&names);
    out->frames_json = buf_to_arena(&j, a, err);
    /* the whole stack, inlined functions expanded, innermost first */
    buf_putc(&j, '[');
    bool first = true;
    for (uint32_t i = 0; i < s->nframes; i++) {
        const crashreport_frame *f = &fs[i];
        const crashreport_image *im = &images[f->image];
        bool in_app = signature_image_in_app(r, (size_t)f->image);
        uint32_t nsym = f->nsymbols ? f->nsymbols : 1;
        for (uint32_t k2 = 0; k2 < nsym; k2++) {
            const crashreport_symbol *sym = f->nsymbols ? &f->symbols[k2] : NULL;
            buf_append_str(&j, first ? "{" : ",{");
            first = false;
            json_kv(&j, "function", sym ? sym->function : NULL);
            json_kv(&j, "file", sym ? sym->file : NULL);
            buf_printf(&j, ",\"line\":%u", sym ? sym->line : 0);
            json_kv(&j, "image", im->name);
            buf_printf(&j, ",\"in_app\":%s,\"inlined\":%s,\"offset\":%llu}",
                       in_app ? "true" : "false", sym && sym->inlined ? "true" : "false",
                       (unsigned long long)(crashreport_strip_pac(f->addr, im->arch) -
                                            im->load_addr));
        }
    }
    buf_putc(&j, ']');
    out->stack_json = buf_to_arena(&j, a, err);
    buf_reset(&j);
    if (out->names == NULL || out->frames_json == NULL || out->stack_json == NULL)
        return ERR_TOO_LARGE;
    return ERR_OK;
}

/* The claim's copy of the `n` bytes at `p` (one copy per distinct value, NUL-terminated);
 * NULL when the arena is full. */
static const char *claim_intern(claim *k, const char *p, size_t n)
{
    uint64_t h = key_hash(p, n);
    size_t found = smap_get(&k->names, p, n, h);
    if (found != SIZE_MAX)
        return k->interned[found];
    char *copy = arena_strndup(k->a, p, n, k->err);
    if (copy == NULL)
        return NULL;
    if (k->ninterned == k->cap_interned) {
        k->cap_interned = k->cap_interned ? k->cap_interned * 2 : 64;
        k->interned = xrealloc(k->interned, k->cap_interned * sizeof *k->interned);
    }
    k->interned[k->ninterned] = copy;
    smap_put(&k->names, copy, n, h, k->ninterned++);
    return copy;
}

/* Append `s` and a NUL (NULL as ""; NULL and "" name the same thing, as in stack_key). */
static void key_str(buf *b, const char *s)
{
    buf_append(b, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* The interned app, images and device of `b`; device NULL: none (a pending stack's devices
 * come from its row). */
static err_code batch_ids_make(batch_ids *out, claim *k, const samplebatch *b, const char *device)
{
    buf *kb = &k->key;
    memset(out, 0, sizeof *out);
    kb->len = 0;
    buf_putc(kb, 'a');
    key_str(kb, b->app_name);
    key_str(kb, b->bundle_id);
    out->app = claim_intern(k, (const char *)kb->data, kb->len);
    out->images = arena_alloc_array(k->a, b->nimages ? b->nimages : 1, sizeof *out->images,
                                    k->err);
    if (out->app == NULL || out->images == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < b->nimages; i++) {
        const crashreport_image *im = &b->images[i];
        kb->len = 0;
        buf_putc(kb, 'i');
        buf_append(kb, im->uuid, 36);
        key_str(kb, im->arch);
        key_str(kb, im->path);
        key_str(kb, im->name);
        if ((out->images[i] = claim_intern(k, (const char *)kb->data, kb->len)) == NULL)
            return ERR_TOO_LARGE;
    }
    if (device != NULL && (out->device = claim_intern(k, device, strlen(device))) == NULL)
        return ERR_TOO_LARGE;
    return ERR_OK;
}

/* The evaluation of sample `s` of `b` (its interned ids `ids`), from this claim's table or
 * made now. The table's key holds what stack_key hashes, with the app and images as their
 * interned pointers: a few bytes a frame, no digest per sample. */
static err_code stack_get(claim *k, stack_eval **out, const batch_ids *ids, const samplebatch *b,
                          const samplebatch_sample *s)
{
    buf *kb = &k->key;
    kb->len = 0;
    buf_append(kb, &ids->app, sizeof ids->app);
    for (uint32_t i = 0; i < s->nframes; i++) {
        const crashreport_image *im = &b->images[s->frames[i].image];
        uint64_t off = crashreport_strip_pac(s->frames[i].addr, im->arch ? im->arch : b->arch) -
                       im->load_addr;
        uint8_t flags = (uint8_t)(im->in_app | (i == 0) << 4);
        buf_append(kb, &ids->images[s->frames[i].image], sizeof *ids->images);
        buf_append(kb, &off, sizeof off);
        buf_append(kb, &flags, 1);
    }
    uint64_t h = key_hash(kb->data, kb->len);
    size_t found = smap_get(&k->evals, kb->data, kb->len, h);
    if (found != SIZE_MAX) {
        *out = &k->ev[found];
        return ERR_OK;
    }
    char *stored = arena_strndup(k->a, (const char *)kb->data, kb->len, k->err);
    if (stored == NULL)
        return ERR_TOO_LARGE;
    size_t at = k->nev;
    smap_put(&k->evals, stored, kb->len, h, at);
    if (k->nev == k->cap_ev) {
        k->cap_ev = k->cap_ev ? k->cap_ev * 2 : 64;
        k->ev = xrealloc(k->ev, k->cap_ev * sizeof *k->ev);
    }
    err_code rc = stack_evaluate(k, &k->ev[at], b, s);
    if (rc == ERR_OK && k->ev[at].pending)
        stack_key(k->ev[at].stack_sha, k, b, s);
    k->nev++;   /* even on error: the map already points at it */
    *out = &k->ev[at];
    return rc;
}

/* The aggregated row for the key in k->key (copied into the arena if new), made if new. */
static agg_row *row_get(claim *k, bool *is_new)
{
    buf *kb = &k->key;
    uint64_t h = key_hash(kb->data, kb->len);
    size_t found = smap_get(&k->rows, kb->data, kb->len, h);
    *is_new = found == SIZE_MAX;
    if (!*is_new)
        return &k->rows_v[found];
    char *stored = arena_strndup(k->a, (const char *)kb->data, kb->len, k->err);
    if (stored == NULL)
        return NULL;
    smap_put(&k->rows, stored, kb->len, h, k->nrows);
    if (k->nrows == k->cap_rows) {
        k->cap_rows = k->cap_rows ? k->cap_rows * 2 : 64;
        k->rows_v = xrealloc(k->rows_v, k->cap_rows * sizeof *k->rows_v);
    }
    agg_row *row = &k->rows_v[k->nrows++];
    memset(row, 0, sizeof *row);
    return row;
}

static void seen_merge(const char **first, const char **last, const char *f, const char *l)
{
    if (*first == NULL || strcmp(f, *first) < 0)
        *first = f;
    if (*last == NULL || strcmp(l, *last) > 0)
        *last = l;
}

/* The hex SHA-256 of `tag` and `what` (NUL-terminated each) into out. */
static void tag_digest(char out[65], claim *k, const char *tag, const char *what)
{
    uint8_t md[32];
    unsigned n = 32;
    EVP_DigestInit_ex(k->md, EVP_sha256(), NULL);
    md_str(k->md, tag);
    md_str(k->md, what);
    EVP_DigestFinal_ex(k->md, md, &n);
    hex32(out, md);
}

/* Count `count` calls of sample `s` (of batch `b` with interned ids `ids`, sent to project
 * `project_id`) made by the interned `devices` between first and last seen, on `day`. */
static err_code count_sample(claim *k, int64_t project_id, const batch_ids *ids,
                             const samplebatch *b, const samplebatch_sample *s, int64_t count,
                             const char *day, const char *first_seen, const char *last_seen,
                             const char *const *devices, size_t ndevices)
{
    stack_eval *ev;
    err_code rc = stack_get(k, &ev, ids, b, s);
    if (rc != ERR_OK)
        return rc;
    const char *app = b->bundle_id ? b->bundle_id : b->app_name;
    const char *version = b->app_version ? b->app_version : "";
    /* the call site (pending: the stack) per tag, hashed once per stack and tag */
    if (ev->key_tag == NULL || strcmp(ev->key_tag, s->tag) != 0) {
        tag_digest(ev->key, k, s->tag, ev->pending ? ev->stack_sha : ev->names);
        ev->key_tag = s->tag;
    }
    /* the row: per (project, app, key, build, day); a call site's key also names its tag */
    buf *kb = &k->key;
    kb->len = 0;
    buf_putc(kb, ev->pending ? 'p' : 'c');
    buf_append(kb, &project_id, sizeof project_id);
    key_str(kb, app);
    if (!ev->pending)
        key_str(kb, s->tag);
    buf_append(kb, ev->key, 64);
    key_str(kb, b->build);
    key_str(kb, day);
    bool is_new;
    agg_row *row = row_get(k, &is_new);
    if (row == NULL)
        return ERR_TOO_LARGE;
    if (ev->pending) {
        /* per distinct stack and tag */
        if (is_new) {
            row->is_pending = true;
            store_pending_add *p = &row->pend;
            p->project_id = project_id;
            p->app = app;
            p->stack_key = arena_strndup(k->a, ev->key, 64, k->err);
            p->build = b->build;
            p->day = day;
            p->version = version;
            p->missing_json = ev->missing_json;
            /* the stack as a one-sample canonical batch */
            samplebatch one = *b;
            samplebatch_sample smp = *s;
            smp.count = 1;
            one.samples = &smp;
            one.nsamples = 1;
            one.calls = 1;
            one.batch_id = NULL;
            buf t;
            buf_init(&t);
            samplebatch_render_canonical(&t, NULL, &one);
            p->sample = buf_to_arena(&t, k->a, k->err);
            buf_reset(&t);
            if (p->stack_key == NULL || p->sample == NULL)
                return ERR_TOO_LARGE;
        }
        row->pend.count += count;
        row->pend.version = version;
        seen_merge(&row->pend.first_seen, &row->pend.last_seen, first_seen, last_seen);
    } else {
        /* per call site (app, tag, names), build and day */
        if (is_new) {
            store_callsite_add *x = &row->add;
            x->project_id = project_id;
            x->app = app;
            x->tag = s->tag;
            x->key = arena_strndup(k->a, ev->key, 64, k->err);
            x->frames_json = ev->frames_json;
            x->stack_json = ev->stack_json;
            x->build = b->build;
            x->day = day;
            if (x->key == NULL)
                return ERR_TOO_LARGE;
        }
        row->add.count += count;
        row->add.version = version;
        seen_merge(&row->add.first_seen, &row->add.last_seen, first_seen, last_seen);
    }
    for (size_t i = 0; i < ndevices; i++)
        devices_add(&row->devices, devices[i]);
    return ERR_OK;
}

/* The devices of a pending row (ids joined by \x1f, as store_samples_claim gives them; ids
 * hold no control characters), interned: *out in the arena, *n of them. */
static err_code pending_devices(const char ***out, size_t *n, claim *k, const char *joined)
{
    size_t cap = 1;
    for (const char *p = joined; *p; p++)
        cap += *p == '\x1f';
    *n = 0;
    *out = arena_alloc_array(k->a, cap, sizeof **out, k->err);
    if (*out == NULL)
        return ERR_TOO_LARGE;
    for (const char *p = joined; *p;) {
        const char *sep = strchr(p, '\x1f');
        size_t len = sep ? (size_t)(sep - p) : strlen(p);
        if (len > 0 && ((*out)[(*n)++] = claim_intern(k, p, len)) == NULL)
            return ERR_TOO_LARGE;
        p = sep ? sep + 1 : p + len;
    }
    return ERR_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* arena_defer's shape of arena_free */
static void free_arena(void *a)
{
    arena_free(a);
}

/* Count one claim: every batch and pending stack, then one commit. */
static err_code claim_count(claim *k, store_sample_work *w, const store_claimed_batch *bs,
                            size_t nb, const store_claimed_pending *ps, size_t np)
{
    callsites *c = k->c;
    err_code rc = ERR_OK;
    char field[SAMPLEBATCH_FIELD_MAX];
    for (size_t i = 0; i < nb && rc == ERR_OK; i++) {
        samplebatch *b;
        batch_ids ids;
        /* checked by this process's intake: counted from its parse (its arena then lives as
         * long as the claim's, whose rows borrow its strings); else read from the row */
        arena *handed = handoff_take(&b, c, bs[i].sha256);
        if (handed != NULL) {
            arena_defer(k->a, free_arena, handed);
            k->handed++;
        } else {
            /* the text is fetched only now, for the batches not handed over; a store error
             * is no fault of the batch (it goes back to the queue with the claim) */
            const char *text;
            size_t len;
            rc = store_samples_canonical(&text, &len, w, bs[i].id, k->a, k->err);
            if (rc != ERR_OK)
                break;
            rc = samplebatch_parse(&b, field, text, len, SAMPLEBATCH_STORED, k->a, k->err);
        }
        if (rc == ERR_OK)
            rc = batch_ids_make(&ids, k, b, b->device_id);
        for (size_t j = 0; rc == ERR_OK && j < b->nsamples; j++)
            rc = count_sample(k, bs[i].project_id, &ids, b, &b->samples[j],
                              (int64_t)b->samples[j].count, bs[i].day, bs[i].received_at,
                              bs[i].received_at, &ids.device, 1);
        if (rc != ERR_OK) {
            err_prefix(k->err, "sample batch %lld", (long long)bs[i].id);
            k->culprit = bs[i].id;
            break;
        }
        atomic_fetch_add(&c->stacks, b->nsamples);
    }
    for (size_t i = 0; i < np && rc == ERR_OK; i++) {
        samplebatch *b;
        batch_ids ids;
        const char **devices = NULL;
        size_t ndevices = 0;
        rc = samplebatch_parse(&b, field, ps[i].sample, ps[i].sample_len, SAMPLEBATCH_STORED,
                               k->a, k->err);
        if (rc == ERR_OK)
            rc = batch_ids_make(&ids, k, b, NULL);
        if (rc == ERR_OK)
            rc = pending_devices(&devices, &ndevices, k, ps[i].devices);
        if (rc == ERR_OK)
            rc = count_sample(k, ps[i].project_id, &ids, b, &b->samples[0], ps[i].count,
                              ps[i].day, ps[i].first_seen, ps[i].last_seen, devices, ndevices);
        if (rc != ERR_OK) {
            err_prefix(k->err, "pending stack %lld", (long long)ps[i].id);
            k->culprit = -ps[i].id;
        }
    }
    if (rc != ERR_OK) {
        store_samples_abort(w);
        return rc;
    }
    size_t nadds = 0, npend = 0;
    store_callsite_add *adds = arena_alloc_array(k->a, k->nrows + 1, sizeof *adds, k->err);
    store_pending_add *pend = arena_alloc_array(k->a, k->nrows + 1, sizeof *pend, k->err);
    if (adds == NULL || pend == NULL) {
        store_samples_abort(w);
        return ERR_TOO_LARGE;
    }
    for (size_t i = 0; i < k->nrows; i++) {
        agg_row *row = &k->rows_v[i];
        const char *dj = devices_json(&row->devices, k->a, k->err);
        if (dj == NULL) {
            store_samples_abort(w);
            return ERR_TOO_LARGE;
        }
        if (row->is_pending) {
            pend[npend] = row->pend;
            pend[npend++].devices_json = dj;
        } else {
            adds[nadds] = row->add;
            adds[nadds++].devices_json = dj;
        }
    }
    atomic_fetch_add(&c->pending_stacks, npend);
    return store_samples_commit(w, adds, nadds, pend, npend, k->err);
}

/* One call site counter (workpool_fn): claim sample batches, count them, until stopped. */
static void worker_run(workpool *wp, unsigned index, void *ctx)
{
    callsites *c = ctx;
    unsigned idle_ms = c->o.idle_poll_ms, store_errors = 0;
    double next_sweep = now_ms() + SWEEP_EVERY_S * 1000.0;
    pipeline_worker_thread_init("callsite-worker", c->o.nice);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md == NULL) {
        log_event(LOG_ERROR, "callsites_worker_failed", "worker=%u message=%s", index,
                  "sha-256: out of memory");
        return;
    }
    while (!workpool_stopping(wp)) {
        err_info err = {0};
        if (index == 0 && now_ms() >= next_sweep) {
            int64_t released = 0;
            if (store_samples_sweep(&released, c->store, &err) == ERR_OK && released > 0)
                log_event(LOG_INFO, "callsites_pending_released", "stacks=%lld",
                          (long long)released);
            next_sweep = now_ms() + SWEEP_EVERY_S * 1000.0;
        }
        arena *a = arena_new(0);
        store_sample_work *w = NULL;
        const store_claimed_batch *bs;
        const store_claimed_pending *ps;
        size_t nb = 0, np = 0;
        double t0 = now_ms();
        unsigned long seen = workpool_posted(wp);
        pthread_mutex_lock(&c->poison_mu);
        const char *skip_b = arena_strndup(a, c->poison_batches.len ? (const char *)c->poison_batches.data : "",
                                           c->poison_batches.len, &err);
        const char *skip_p = arena_strndup(a, c->poison_pending.len ? (const char *)c->poison_pending.data : "",
                                           c->poison_pending.len, &err);
        pthread_mutex_unlock(&c->poison_mu);
        err_code rc = store_samples_claim(&w, &bs, &nb, &ps, &np, c->store, c->o.batch, skip_b,
                                          skip_p, a, &err);
        if (rc != ERR_OK || w == NULL) {
            arena_free(a);
            if (rc != ERR_OK) {
                if (store_errors++ % 20 == 0)
                    log_event(LOG_WARN, "callsites_queue_unavailable", "worker=%u error=%s "
                              "message=%s", index, err_name(rc), err.msg);
                workpool_wait(wp, 1000);
            } else {
                store_errors = 0;
                workpool_idle(wp, &idle_ms, c->o.idle_poll_ms, PIPELINE_IDLE_MAX_MS, seen);
            }
            continue;
        }
        store_errors = 0;
        idle_ms = c->o.idle_poll_ms;
        claim k = {.c = c, .a = a, .err = &err, .md = md};
        buf_init(&k.key);
        rc = claim_count(&k, w, bs, nb, ps, np);
        if (rc == ERR_OK) {
            atomic_fetch_add(&c->batches, nb);
            atomic_fetch_add(&c->batches_handed, k.handed);
            atomic_fetch_add(&c->commits, 1);
            log_event(LOG_DEBUG, "callsites_counted", "worker=%u batches=%zu handed=%zu "
                      "pending=%zu stacks=%zu rows=%zu ms=%.1f", index, nb, k.handed, np, k.nev,
                      k.nrows, now_ms() - t0);
        } else if (k.culprit != 0) {
            /* one row cannot be read or counted: skip it from now on, count the others */
            atomic_fetch_add(&c->commit_failures, 1);
            log_event(LOG_ERROR, "callsites_row_skipped", "worker=%u batch=%lld pending_stack=%lld "
                      "error=%s message=%s", index, (long long)(k.culprit > 0 ? k.culprit : 0),
                      (long long)(k.culprit < 0 ? -k.culprit : 0), err_name(rc), err.msg);
            pthread_mutex_lock(&c->poison_mu);
            buf *list = k.culprit > 0 ? &c->poison_batches : &c->poison_pending;
            buf_printf(list, "%s%lld", list->len ? "," : "",
                       (long long)(k.culprit > 0 ? k.culprit : -k.culprit));
            pthread_mutex_unlock(&c->poison_mu);
        } else {
            atomic_fetch_add(&c->commit_failures, 1);
            log_event(LOG_WARN, "callsites_count_failed", "worker=%u batches=%zu pending=%zu "
                      "error=%s message=%s", index, nb, np, err_name(rc), err.msg);
            /* the rows went back to the queue; give the database (or a fix) time */
            workpool_wait(wp, 1000);
        }
        for (size_t i = 0; i < k.nrows; i++)
            free(k.rows_v[i].devices.ids);
        free(k.rows_v);
        free(k.ev);
        free(k.interned);
        smap_free(&k.names);
        smap_free(&k.evals);
        smap_free(&k.rows);
        buf_reset(&k.key);
        arena_free(a);
    }
    EVP_MD_CTX_free(md);
}

err_code callsites_new(callsites **out, store *work_store, pipeline *pipe,
                       const callsites_options *opts, err_info *err)
{
    (void)err;
    callsites *c = xcalloc(1, sizeof *c);
    c->o = *opts;
    if (c->o.batch == 0)
        c->o.batch = 1;
    if (c->o.idle_poll_ms == 0)
        c->o.idle_poll_ms = 50;
    c->store = work_store;
    c->pipe = pipe;
    pthread_mutex_init(&c->poison_mu, NULL);
    pthread_mutex_init(&c->handoff_mu, NULL);
    buf_init(&c->poison_batches);
    buf_init(&c->poison_pending);
    *out = c;
    return ERR_OK;
}

err_code callsites_start(callsites *c, err_info *err)
{
    if (c->o.workers == 0 || c->workers != NULL)
        return ERR_OK;
    workpool *wp;
    err_code rc = workpool_start(&wp, c->o.workers, worker_run, c, err);
    if (rc == ERR_OK)
        c->workers = wp;
    return rc;
}

void callsites_stop(callsites *c)
{
    if (c != NULL)
        workpool_join(c->workers);
}

void callsites_free(callsites *c)
{
    if (c == NULL)
        return;
    workpool_free(c->workers);
    for (size_t i = 0; i < c->nhandoff; i++)
        arena_free(c->handoff[i].a);
    free(c->handoff);
    pthread_mutex_destroy(&c->handoff_mu);
    pthread_mutex_destroy(&c->poison_mu);
    buf_reset(&c->poison_batches);
    buf_reset(&c->poison_pending);
    free(c);
}

void callsites_stats_get(callsites_stats *out, const callsites *c)
{
    callsites *m = (callsites *)c;   /* atomics are read, not changed */
    out->batches = atomic_load(&m->batches);
    out->stacks = atomic_load(&m->stacks);
    out->stack_evals = atomic_load(&m->stack_evals);
    out->pending_stacks = atomic_load(&m->pending_stacks);
    out->commits = atomic_load(&m->commits);
    out->commit_failures = atomic_load(&m->commit_failures);
    out->batches_handed = atomic_load(&m->batches_handed);
}

void callsites_metrics_render(buf *out, const callsites *c)
{
    if (c == NULL)
        return;
    callsites_stats st;
    callsites_stats_get(&st, c);
    buf_printf(out,
               "# HELP stacksift_sample_batches_counted_total Sample batches this node's "
               "workers counted.\n"
               "# TYPE stacksift_sample_batches_counted_total counter\n"
               "stacksift_sample_batches_counted_total %llu\n"
               "# HELP stacksift_sample_batches_handed_total Of them, batches this node's "
               "intake handed over already parsed (the rest were parsed from their stored "
               "text: another node's, or past the hand-over's memory bound).\n"
               "# TYPE stacksift_sample_batches_handed_total counter\n"
               "stacksift_sample_batches_handed_total %llu\n"
               "# HELP stacksift_callsite_commits_total Counting transactions committed.\n"
               "# TYPE stacksift_callsite_commits_total counter\n"
               "stacksift_callsite_commits_total %llu\n"
               "# HELP stacksift_callsite_commit_failures_total Counting transactions that "
               "failed (their batches went back to the queue, or a row was skipped).\n"
               "# TYPE stacksift_callsite_commit_failures_total counter\n"
               "stacksift_callsite_commit_failures_total %llu\n",
               (unsigned long long)st.batches, (unsigned long long)st.batches_handed,
               (unsigned long long)st.commits, (unsigned long long)st.commit_failures);
}
