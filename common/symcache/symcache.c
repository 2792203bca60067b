/*
 * symcache reader: mmap, validate once at open, then lock-free lookups.
 */
#include "symcache/symcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "base/bytes.h"
#include "base/xalloc.h"
#include "demangle/demangle.h"
#include "macho/macho.h"
#include "symcache/symcache_format.h"

#define SYMC_NAME_BLOCK_MAX (4u << 20) /* a name block larger than this is corrupt */
#define SYMC_DCTX 4                     /* zstd contexts a symcache keeps */

/* One name of a decompressed block: the raw name and, once a lookup asked for it, its
 * display form (one cache line holds both for four names). */
typedef struct {
    const char *raw;                /* into the block's text */
    _Atomic(const char *) display;  /* NULL = not derived yet; `raw` itself when it does not
                                       demangle, else a copy in the symcache's display arena.
                                       Published with a compare-and-swap like the block: a
                                       thread that loses leaves its copy unused. */
} name_entry;

/* A chunk of a symcache's lookup memory: what lookups derive and keep until symcache_close
 * (decompressed name blocks, demangled names) is bump-allocated from chunks by any thread,
 * lock-free, and freed chunk by chunk at close. One malloc'd string per demangled name cost 7%
 * of a 100,000-address CLI batch in free() at close, and a 4 KiB page fault per 4 KiB of names
 * as much again: chunks grow from 64 KiB to 2 MiB, and 2 MiB chunks are aligned so that the
 * kernel can back them with one transparent huge page each (advice only). */
typedef struct mem_chunk {
    struct mem_chunk *next;
    size_t cap;     /* bytes at data */
    size_t map_len; /* bytes mapped (0: malloc'd) */
    _Atomic size_t used;
    _Alignas(16) unsigned char data[];
} mem_chunk;

#define MEM_CHUNK_FIRST ((size_t)64 << 10)
#define MEM_HUGE ((size_t)2 << 20)


/* One decompressed block of raw names, kept until symcache_close. */
typedef struct {
    uint32_t count;                        /* names in the block */
    name_entry name[SYMC_NAMES_PER_BLOCK]; /* the names in id order */
    char text[];                           /* the raw names, NUL-terminated */
} name_block;

/* A name block whose bytes are corrupt: published in its memo slot so that it is tried once. */
static name_block corrupt_block;

/* Where decoding can resume inside a block: a record's decoded state and where the next
 * record's bytes begin. */
typedef struct {
    uint32_t start;               /* the record's start, an offset from the base */
    uint32_t next;                /* offset of the following record in block_data */
    uint32_t scope1, file1, line; /* the record's scope + 1, file index + 1, line */
} resume_point;

/* A resume point every this many records (divides SYMC_BLOCK_RANGES, so that the records after
 * one never cross into the next block): 20 bytes of memory per this many ranges. */
#define SYMC_RESUME_RANGES 8u
_Static_assert(SYMC_BLOCK_RANGES % SYMC_RESUME_RANGES == 0, "resume groups must not cross blocks");

struct symcache {
    bytes map;              /* owned mapping, or zeroed when opened over caller bytes */
    const uint8_t *data;
    size_t len;
    uint32_t version, flags, cputype, cpusubtype;
    uint8_t uuid[16];
    uint64_t text_vmaddr, base;
    uint32_t nranges, nscopes, strings_size, image_name, nfiles, nblocks;
    uint32_t nnames, names_size, nname_blocks;
    unsigned w_name, w_parent, w_x, w_y, w_scope; /* scope field widths in bits */
    const uint8_t *blocks;  /* symc_block[nblocks] */
    const uint8_t *files;   /* u32[nfiles] string offsets */
    const uint8_t *scopes;  /* bit-packed scope records */
    const uint8_t *name_index; /* u32[nname_blocks + 1] */
    const uint8_t *names;   /* compressed name blocks */
    const uint8_t *records; /* block_data */
    size_t records_len;
    const char *strings;
    /* The lookup index, built by check() from the records it decodes anyway: every
     * SYMC_RESUME_RANGES-th record's start and decoded state (resume points), and a page table
     * from each 2^page_shift-byte granule of the address space to the last resume point at or
     * before it. A lookup reads two page entries, searches the few resume points between them
     * and decodes at most SYMC_RESUME_RANGES - 1 records past the one it lands on. */
    uint32_t nresume, npages;
    unsigned page_shift;
    resume_point *resume;   /* nresume, starts ascending */
    uint32_t *page;         /* npages */
    /* Name blocks are decompressed on first use, by any thread: a block is published with a
     * compare-and-swap (a thread that loses frees its copy); the zstd context is shared under
     * the mutex, which only a first use takes. */
    _Atomic(name_block *) *name_memo; /* nname_blocks entries, NULL = not yet */
    _Atomic(mem_chunk *) mem; /* newest chunk of the lookup memory, NULL = none yet */
    /* zstd contexts, each under its mutex: a first use takes a free one (threads that
     * decompress at the same time do not wait for each other) */
    pthread_mutex_t zstd_mu[SYMC_DCTX];
    ZSTD_DCtx *dctx[SYMC_DCTX];
};

static inline __attribute__((always_inline)) uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline __attribute__((always_inline)) uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* ULEB128 at *p (below end); false if it runs past end or over 64 bits */
static inline __attribute__((always_inline)) bool get_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    if (*p < end && **p < 0x80) { /* most record fields fit in one byte */
        *out = *(*p)++;
        return true;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t byte = *(*p)++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            *out = v;
            return true;
        }
    }
    return false;
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* One decoded range record. */
typedef struct {
    uint32_t start; /* offset from the base */
    uint64_t scope1, file1, line;
} record;

/* Decode the next record of a block: `first` records take absolute values. */
static inline __attribute__((always_inline)) bool next_record(const uint8_t **p, const uint8_t *end, bool first, record *r)
{
    uint64_t delta, scope, file, line;
    if (first) {
        if (!get_uleb(p, end, &scope) || !get_uleb(p, end, &file) || !get_uleb(p, end, &line))
            return false;
        r->scope1 = scope;
        r->line = line;
        r->file1 = file;
    } else {
        if (!get_uleb(p, end, &delta) || !get_uleb(p, end, &scope) || !get_uleb(p, end, &line) ||
            delta == 0 || delta > UINT32_MAX - r->start)
            return false;
        if (line & 1) { /* the file changed: its delta follows */
            if (!get_uleb(p, end, &file))
                return false;
            r->file1 = (uint64_t)((int64_t)r->file1 + unzigzag(file));
        }
        r->start += (uint32_t)delta;
        r->scope1 = (uint64_t)((int64_t)r->scope1 + unzigzag(scope));
        r->line = (uint64_t)((int64_t)r->line + unzigzag(line >> 1));
    }
    return true;
}

static uint32_t block_start(const symcache *sc, uint32_t b)
{
    return rd32(sc->blocks + (size_t)b * SYMC_BLOCK_SIZE);
}

static uint32_t block_records(const symcache *sc, uint32_t b)
{
    return rd32(sc->blocks + (size_t)b * SYMC_BLOCK_SIZE + 4);
}

static uint32_t block_count(const symcache *sc, uint32_t b)
{
    return b + 1 < sc->nblocks ? SYMC_BLOCK_RANGES : sc->nranges - b * SYMC_BLOCK_RANGES;
}

/* The `width`-bit field (<= 32) at bit `at` of the packed scopes (padded: one 64-bit load). */
static inline __attribute__((always_inline)) uint32_t get_bits(const uint8_t *p, uint64_t at, unsigned width)
{
    return (uint32_t)(rd64(p + at / 8) >> (at % 8) & ((1ull << width) - 1));
}

static inline __attribute__((always_inline)) symc_scope scope_at(const symcache *sc, uint32_t i)
{
    uint64_t at = (uint64_t)i * sc->w_scope;
    symc_scope s;
    s.name = get_bits(sc->scopes, at, sc->w_name);
    uint32_t parent1 = get_bits(sc->scopes, at + sc->w_name, sc->w_parent);
    uint32_t x = get_bits(sc->scopes, at + sc->w_name + sc->w_parent, sc->w_x);
    s.d = get_bits(sc->scopes, at + sc->w_name + sc->w_parent + sc->w_x, sc->w_y);
    s.parent = parent1 == 0 ? SYMC_NONE : parent1 - 1;
    s.c = parent1 == 0 ? x : (x == 0 ? SYMC_NONE : x - 1);
    return s;
}

/* A chunk of at least `need` bytes after `prev` (NULL: the first). */
static mem_chunk *mem_chunk_new(const mem_chunk *prev, size_t need)
{
    size_t want = prev == NULL ? MEM_CHUNK_FIRST : prev->cap * 2;
    if (want > MEM_HUGE - sizeof(mem_chunk))
        want = MEM_HUGE - sizeof(mem_chunk);
    if (want < need)
        want = need;
    size_t total = sizeof(mem_chunk) + want;
    mem_chunk *c = NULL;
    size_t map_len = 0;
    if (total >= MEM_HUGE) {
        /* whole 2 MiB pages at a 2 MiB boundary: map one page more and trim both ends */
        map_len = (total + MEM_HUGE - 1) & ~(MEM_HUGE - 1);
        unsigned char *p = mmap(NULL, map_len + MEM_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            size_t lead = (MEM_HUGE - (uintptr_t)p % MEM_HUGE) % MEM_HUGE;
            if (lead > 0)
                munmap(p, lead);
            munmap(p + lead + map_len, MEM_HUGE - lead);
            c = (mem_chunk *)(p + lead);
#ifdef MADV_HUGEPAGE
            madvise(c, map_len, MADV_HUGEPAGE);
#endif
            want = map_len - sizeof(mem_chunk);
        } else {
            map_len = 0;
        }
    }
    if (c == NULL)
        c = xmalloc(total);
    c->cap = want;
    c->map_len = map_len;
    return c;
}

/* `n` bytes (16-aligned) of sc's lookup memory, kept until symcache_close; any thread. */
static void *mem_alloc(symcache *sc, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    mem_chunk *c = atomic_load_explicit(&sc->mem, memory_order_acquire);
    if (c != NULL) {
        size_t at = atomic_fetch_add_explicit(&c->used, n, memory_order_relaxed);
        if (at + n <= c->cap)
            return c->data + at;
    }
    mem_chunk *fresh = mem_chunk_new(c, n);
    atomic_init(&fresh->used, n);
    fresh->next = c;
    /* on failure c is a chunk another thread pushed: link behind it and try again (the rest of
     * a full chunk stays unused) */
    while (!atomic_compare_exchange_weak_explicit(&sc->mem, &c, fresh, memory_order_acq_rel, memory_order_acquire))
        fresh->next = c;
    return fresh->data;
}

static void mem_free_all(symcache *sc)
{
    for (mem_chunk *c = atomic_load_explicit(&sc->mem, memory_order_relaxed), *next; c != NULL; c = next) {
        next = c->next;
        if (c->map_len > 0)
            munmap(c, c->map_len);
        else
            free(c);
    }
}

/* Decompress name block `k` into sc's lookup memory and check it holds exactly its names;
 * NULL if it does not. */
static name_block *decompress_names(symcache *sc, uint32_t k)
{
    uint32_t off = rd32(sc->name_index + (size_t)k * 4), end = rd32(sc->name_index + (size_t)(k + 1) * 4);
    uint32_t count = k + 1 < sc->nname_blocks ? SYMC_NAMES_PER_BLOCK : sc->nnames - k * SYMC_NAMES_PER_BLOCK;
    unsigned long long size = ZSTD_getFrameContentSize(sc->names + off, end - off);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size == 0 ||
        size > SYMC_NAME_BLOCK_MAX)
        return NULL;
    name_block *nb = mem_alloc(sc, sizeof *nb + (size_t)size);
    for (uint32_t i = 0; i < SYMC_NAMES_PER_BLOCK; i++)
        atomic_init(&nb->name[i].display, NULL);
    size_t got = (size_t)-1;
    int x = 0;
    while (x < SYMC_DCTX && pthread_mutex_trylock(&sc->zstd_mu[x]) != 0)
        x++;
    if (x == SYMC_DCTX) /* all busy: wait for the first */
        pthread_mutex_lock(&sc->zstd_mu[x = 0]);
    if (sc->dctx[x] == NULL)
        sc->dctx[x] = ZSTD_createDCtx();
    if (sc->dctx[x] != NULL)
        got = ZSTD_decompressDCtx(sc->dctx[x], nb->text, (size_t)size, sc->names + off, end - off);
    pthread_mutex_unlock(&sc->zstd_mu[x]);
    if (ZSTD_isError(got) || got != size || nb->text[size - 1] != '\0')
        return NULL;
    /* exactly `count` NUL-terminated names */
    uint32_t n = 0;
    for (size_t at = 0; at < size; n++) {
        if (n == count)
            return NULL;
        nb->name[n].raw = nb->text + at;
        at += strlen(nb->text + at) + 1;
    }
    if (n != count)
        return NULL;
    nb->count = count;
    return nb;
}

/* The block holding name `id` (< nnames, checked at open), decompressed on first use; NULL
 * if it is corrupt (tried once: the memo then holds corrupt_block). Kept until symcache_close. */
static name_block *name_block_at(const symcache *csc, uint32_t id)
{
    symcache *sc = (symcache *)csc; /* the memo is the only state a lookup writes */
    uint32_t k = id / SYMC_NAMES_PER_BLOCK;
    name_block *nb = atomic_load_explicit(&sc->name_memo[k], memory_order_acquire);
    if (nb == NULL) {
        name_block *fresh = decompress_names(sc, k);
        if (fresh == NULL)
            fresh = &corrupt_block;
        /* a thread that loses uses the winner's block; its copy stays unused in the memory */
        if (atomic_compare_exchange_strong_explicit(&sc->name_memo[k], &nb, fresh, memory_order_acq_rel,
                                                    memory_order_acquire))
            nb = fresh;
    }
    return nb == &corrupt_block ? NULL : nb;
}

/* The display form of raw name `i` of block `nb`: demangled (common/demangle, the simplified
 * Swift form, C++ as llvm-symbolizer prints it) the first time, then the memo's copy. */
static const char *display_at(symcache *sc, name_block *nb, uint32_t i)
{
    const char *shown = atomic_load_explicit(&nb->name[i].display, memory_order_acquire);
    if (shown != NULL)
        return shown;
    const char *raw = nb->name[i].raw;
    char *demangled = demangle_name(raw, DEMANGLE_SIMPLIFIED);
    const char *fresh = raw;
    if (demangled != NULL) {
        size_t len = strlen(demangled);
        char *copy = mem_alloc(sc, len + 1);
        memcpy(copy, demangled, len + 1);
        fresh = copy;
        free(demangled); /* now, while it is hot: the lookup memory holds the copy */
    }
    if (atomic_compare_exchange_strong_explicit(&nb->name[i].display, &shown, fresh, memory_order_acq_rel,
                                                memory_order_acquire))
        return fresh;
    return shown; /* another thread published it first; our copy stays unused */
}

/* The page table over the resume points (ascending, checked): granules of 2^page_shift bytes,
 * the smallest power of two that gives no more granules than resume points, so that the table
 * costs at most 4 bytes per resume point and a granule holds about one of them. page[g] is the
 * last resume point starting at or before the granule's first byte (0 if none does). */
static void build_pages(symcache *sc)
{
    uint32_t last = sc->resume[sc->nresume - 1].start;
    sc->page_shift = 0;
    while (sc->page_shift < 31 && (last >> sc->page_shift) + 1 > sc->nresume)
        sc->page_shift++;
    sc->npages = (last >> sc->page_shift) + 1;
    sc->page = xmalloc((size_t)sc->npages * sizeof *sc->page);
    uint32_t c = 0;
    for (uint32_t g = 0; g < sc->npages; g++) {
        uint64_t first = (uint64_t)g << sc->page_shift;
        while (c + 1 < sc->nresume && sc->resume[c + 1].start <= first)
            c++;
        sc->page[g] = c;
    }
}

static err_code check(symcache *sc, err_info *err)
{
    const uint8_t *d = sc->data;
    if (sc->len < SYMC_HEADER_SIZE || memcmp(d, SYMC_MAGIC, 8) != 0)
        return err_set(err, ERR_INVALID, "not a symcache: bad magic or %zu-byte file", sc->len);
    sc->version = rd32(d + 8);
    /* older: rebuild it from the dSYM (a distinct code the server acts on); newer: unknown */
    if (sc->version < SYMCACHE_VERSION)
        return err_set(err, ERR_OUTDATED,
                       "symcache format version %u is outdated (this build reads %u): rebuild it from the dSYM",
                       sc->version, SYMCACHE_VERSION);
    if (sc->version != SYMCACHE_VERSION)
        return err_set(err, ERR_UNSUPPORTED, "symcache format version %u is not supported (this build reads %u)",
                       sc->version, SYMCACHE_VERSION);
    sc->flags = rd32(d + 12);
    memcpy(sc->uuid, d + 16, 16);
    sc->cputype = rd32(d + 32);
    sc->cpusubtype = rd32(d + 36);
    sc->text_vmaddr = rd64(d + 40);
    sc->base = rd64(d + 48);
    sc->nranges = rd32(d + 56);
    sc->nscopes = rd32(d + 60);
    sc->strings_size = rd32(d + 64);
    sc->image_name = rd32(d + 68);
    sc->nfiles = rd32(d + 72);
    sc->nblocks = rd32(d + 76);
    sc->nnames = rd32(d + 80);
    if (rd32(d + 84) != 0)
        return err_set(err, ERR_INVALID, "corrupt symcache: reserved header field is %u", rd32(d + 84));
    sc->names_size = rd32(d + 88);
    uint32_t widths = rd32(d + 92);
    sc->w_name = widths & 0xff, sc->w_parent = widths >> 8 & 0xff;
    sc->w_x = widths >> 16 & 0xff, sc->w_y = widths >> 24;
    sc->w_scope = sc->w_name + sc->w_parent + sc->w_x + sc->w_y;
    sc->nname_blocks = (uint32_t)(((uint64_t)sc->nnames + SYMC_NAMES_PER_BLOCK - 1) / SYMC_NAMES_PER_BLOCK);
    if (sc->w_name == 0 || sc->w_name > 32 || sc->w_parent == 0 || sc->w_parent > 32 || sc->w_x == 0 ||
        sc->w_x > 32 || sc->w_y == 0 || sc->w_y > 32)
        return err_set(err, ERR_INVALID, "corrupt symcache: scope field widths 0x%08x", widths);
    if (sc->nranges == 0 || sc->strings_size == 0)
        return err_set(err, ERR_INVALID, "corrupt symcache: no ranges or no strings");
    if (sc->nblocks != (sc->nranges + SYMC_BLOCK_RANGES - 1) / SYMC_BLOCK_RANGES)
        return err_set(err, ERR_INVALID, "corrupt symcache: %u blocks cannot hold %u ranges", sc->nblocks,
                       sc->nranges);
    uint64_t scopes_bytes = ((uint64_t)sc->nscopes * sc->w_scope + 7) / 8 + SYMC_SCOPE_PAD;
    uint64_t fixed = SYMC_HEADER_SIZE + (uint64_t)sc->nblocks * SYMC_BLOCK_SIZE + (uint64_t)sc->nfiles * 4 +
                     scopes_bytes + ((uint64_t)sc->nname_blocks + 1) * 4 + sc->names_size +
                     sc->strings_size;
    if (fixed > sc->len)
        return err_set(err, ERR_INVALID, "corrupt symcache: tables need %llu bytes, file has %zu",
                       (unsigned long long)fixed, sc->len);
    sc->blocks = d + SYMC_HEADER_SIZE;
    sc->files = sc->blocks + (size_t)sc->nblocks * SYMC_BLOCK_SIZE;
    sc->scopes = sc->files + (size_t)sc->nfiles * 4;
    sc->name_index = sc->scopes + scopes_bytes;
    sc->names = sc->name_index + ((size_t)sc->nname_blocks + 1) * 4;
    sc->records = sc->names + sc->names_size;
    sc->records_len = sc->len - (size_t)fixed;
    sc->strings = (const char *)sc->records + sc->records_len;
    if (sc->strings[sc->strings_size - 1] != '\0')
        return err_set(err, ERR_INVALID, "corrupt symcache: string table is not terminated");
    if (sc->image_name >= sc->strings_size)
        return err_set(err, ERR_INVALID, "corrupt symcache: image name offset %u out of range",
                       sc->image_name);
    /* One pass over every table, so that lookups can trust what they follow: ordered starts
     * for the binary searches, every record decodable inside its block, every scope index,
     * file index and string offset in range. */
    for (uint32_t i = 0; i < sc->nfiles; i++)
        if (rd32(sc->files + (size_t)i * 4) >= sc->strings_size)
            return err_set(err, ERR_INVALID, "corrupt symcache: file %u points outside the strings", i);
    const uint8_t *end = sc->records + sc->records_len;
    sc->nresume = (sc->nranges + SYMC_RESUME_RANGES - 1) / SYMC_RESUME_RANGES;
    sc->resume = xmalloc((size_t)sc->nresume * sizeof *sc->resume);
    for (uint32_t b = 0; b < sc->nblocks; b++) {
        uint32_t off = block_records(sc, b);
        if (off >= sc->records_len || (b > 0 && off <= block_records(sc, b - 1)))
            return err_set(err, ERR_INVALID, "corrupt symcache: block %u has a bad record offset", b);
        const uint8_t *p = sc->records + off;
        record r = {block_start(sc, b), 0, 0, 0};
        for (uint32_t k = 0; k < block_count(sc, b); k++) {
            if (!next_record(&p, end, k == 0, &r) || r.scope1 > sc->nscopes || r.file1 > sc->nfiles ||
                r.line > UINT32_MAX)
                return err_set(err, ERR_INVALID, "corrupt symcache: range record %u of block %u is malformed",
                               k, b);
            if (k % SYMC_RESUME_RANGES == 0) {
                uint32_t at = (b * SYMC_BLOCK_RANGES + k) / SYMC_RESUME_RANGES;
                sc->resume[at] = (resume_point){r.start, (uint32_t)(p - sc->records), (uint32_t)r.scope1,
                                                (uint32_t)r.file1, (uint32_t)r.line};
            }
        }
        if (b + 1 < sc->nblocks && block_start(sc, b + 1) <= r.start)
            return err_set(err, ERR_INVALID, "corrupt symcache: block %u is out of order", b + 1);
    }
    build_pages(sc);
    for (uint32_t i = 0; i < sc->nscopes; i++) {
        symc_scope s = scope_at(sc, i);
        bool bad = s.name >= sc->nnames || s.parent == i ||
                   (s.parent != SYMC_NONE && s.parent >= sc->nscopes) ||
                   (s.parent != SYMC_NONE ? s.c != SYMC_NONE && s.c >= sc->nfiles
                                          : s.c != SYMC_KIND_DWARF && s.c != SYMC_KIND_SYMTAB);
        if (bad)
            return err_set(err, ERR_INVALID, "corrupt symcache: scope %u points outside its tables", i);
    }
    /* name blocks in order inside the names section; their contents are checked when a
     * lookup first decompresses one (a bad block gives "??", never a wild read) */
    for (uint32_t k = 0; k <= sc->nname_blocks; k++) {
        uint32_t off = rd32(sc->name_index + (size_t)k * 4);
        if (off > sc->names_size || (k > 0 && off < rd32(sc->name_index + (size_t)(k - 1) * 4)) ||
            (k == sc->nname_blocks && off != sc->names_size))
            return err_set(err, ERR_INVALID, "corrupt symcache: name block %u is out of bounds", k);
    }
    sc->name_memo = xcalloc(sc->nname_blocks ? sc->nname_blocks : 1, sizeof *sc->name_memo);
    return ERR_OK;
}

/* A zeroed symcache with its mutexes initialized. */
static symcache *symcache_new(void)
{
    symcache *sc = xcalloc(1, sizeof *sc);
    for (int x = 0; x < SYMC_DCTX; x++)
        pthread_mutex_init(&sc->zstd_mu[x], NULL);
    return sc;
}

err_code symcache_open_bytes(symcache **out, const uint8_t *data, size_t len, err_info *err)
{
    symcache *sc = symcache_new();
    *out = NULL;
    sc->data = data;
    sc->len = len;
    err_code rc = check(sc, err);
    if (rc != ERR_OK) {
        symcache_close(sc);
        return rc;
    }
    *out = sc;
    return ERR_OK;
}

err_code symcache_open(symcache **out, const char *path, err_info *err)
{
    symcache *sc = symcache_new();
    err_code rc;
    *out = NULL;
    rc = bytes_map_file(&sc->map, path, err);
    if (rc != ERR_OK)
        goto done;
    sc->data = sc->map.data;
    sc->len = sc->map.len;
    rc = check(sc, err);
    if (rc != ERR_OK) {
        err_prefix(err, "%s", path);
        goto done;
    }
    *out = sc;
    sc = NULL; /* caller owns it now */
done:
    symcache_close(sc);
    return rc;
}

void symcache_close(symcache *sc)
{
    if (sc == NULL)
        return;
    mem_free_all(sc); /* name blocks and display names */
    free(sc->name_memo);
    free(sc->resume);
    free(sc->page);
    for (int x = 0; x < SYMC_DCTX; x++) {
        ZSTD_freeDCtx(sc->dctx[x]);
        pthread_mutex_destroy(&sc->zstd_mu[x]);
    }
    bytes_unmap(&sc->map);
    free(sc);
}

static const char *string_at(const symcache *sc, uint32_t off)
{
    return off < sc->strings_size ? sc->strings + off : NULL;
}

/* A ULEB128 field of a record that check() decoded at open: it ends within the records (so no
 * bounds check here) after at most 10 bytes. */
static inline __attribute__((always_inline)) uint64_t uleb_checked(const uint8_t **p)
{
    uint64_t v = *(*p)++;
    if (v < 0x80)
        return v;
    v &= 0x7f;
    for (unsigned shift = 7; shift < 64; shift += 7) {
        uint8_t byte = *(*p)++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0)
            break;
    }
    return v;
}

/* Decode the record after `r` (not the first of its block) from bytes check() accepted. The
 * common case, every field one byte, is one 4-byte load and no branch on the file bit: a
 * record is at least 3 bytes and block_data is followed by the non-empty string table, so the
 * load stays in the mapping. (Measured on the benchmark: 57% of records take it; a branch-free
 * two-byte-field variant over an 8-byte load decoded slower overall.) */
static inline __attribute__((always_inline)) const uint8_t *next_record_checked(const uint8_t *p, record *r)
{
    uint32_t w = rd32(p);
    uint32_t file_changed = w >> 16 & 1;
    if ((w & (0x808080u | file_changed << 31)) == 0) {
        r->start += w & 0x7f;
        r->scope1 = (uint64_t)((int64_t)r->scope1 + unzigzag(w >> 8 & 0x7f));
        r->line = (uint64_t)((int64_t)r->line + unzigzag(w >> 17 & 0x3f));
        r->file1 = (uint64_t)((int64_t)r->file1 + unzigzag(w >> 24 & (0u - file_changed)));
        return p + 3 + file_changed;
    }
    uint64_t delta = uleb_checked(&p), scope = uleb_checked(&p), line = uleb_checked(&p);
    if (line & 1)
        r->file1 = (uint64_t)((int64_t)r->file1 + unzigzag(uleb_checked(&p)));
    r->start += (uint32_t)delta;
    r->scope1 = (uint64_t)((int64_t)r->scope1 + unzigzag(scope));
    r->line = (uint64_t)((int64_t)r->line + unzigzag(line >> 1));
    return p;
}

/* The last resume point starting at or before `rel` (>= the first one's start): two page
 * entries, then a binary search between them (about one point on a real image). */
static inline __attribute__((always_inline)) uint32_t find_resume(const symcache *sc, uint32_t rel)
{
    uint32_t g = rel >> sc->page_shift;
    if (g >= sc->npages)
        g = sc->npages - 1;
    /* it lies in [page[g], page[g + 1]] */
    uint32_t lo = sc->page[g], hi = g + 1 < sc->npages ? sc->page[g + 1] : sc->nresume - 1;
    while (lo < hi) {
        uint32_t mid = hi - (hi - lo) / 2;
        if (sc->resume[mid].start <= rel)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The record covering `rel` into *hit, decoding from resume point `at` (find_resume): at most
 * SYMC_RESUME_RANGES - 1 records, the ones before the next resume point. They never span two
 * blocks (SYMC_RESUME_RANGES divides SYMC_BLOCK_RANGES). */
static inline __attribute__((always_inline)) void decode_from(const symcache *sc, uint32_t at, uint32_t rel, record *hit)
{
    const resume_point *rp = &sc->resume[at];
    record r = {rp->start, rp->scope1, rp->file1, rp->line};
    uint32_t first = at * SYMC_RESUME_RANGES;
    uint32_t more = sc->nranges - 1 - first < SYMC_RESUME_RANGES - 1 ? sc->nranges - 1 - first : SYMC_RESUME_RANGES - 1;
    const uint8_t *p = sc->records + rp->next;
    *hit = r;
    for (uint32_t k = 0; k < more; k++) {
        p = next_record_checked(p, &r);
        if (r.start > rel)
            break;
        *hit = r;
    }
}

/* The record covering `rel` (an offset from the base) into *hit; false if rel lies before the
 * first range. */
static inline __attribute__((always_inline)) bool find_range(const symcache *sc, uint32_t rel, record *hit)
{
    if (rel < sc->resume[0].start)
        return false;
    decode_from(sc, find_resume(sc, rel), rel, hit);
    return true;
}

/* Start loading name `id`'s slot in its block when the block is already decompressed (a
 * hint: the misses of a chain's names then overlap the walk's). Name side, with resolve_names. */
static inline __attribute__((always_inline)) void name_prefetch(const symcache *sc, uint32_t id)
{
    name_block *nb = atomic_load_explicit(&sc->name_memo[id / SYMC_NAMES_PER_BLOCK], memory_order_acquire);
    if (nb != NULL)
        __builtin_prefetch(&nb->name[id % SYMC_NAMES_PER_BLOCK]);
}

/* Start loading scope `i`'s cache line and the two before it: a parent is numbered before
 * its inlinees and lies in the same line or one of the two before in 92% of cases on the
 * benchmark, so the walk up a chain then waits for about one miss. */
static inline __attribute__((always_inline)) void scope_prefetch(const symcache *sc, uint32_t i)
{
    size_t at = (size_t)((uint64_t)i * sc->w_scope / 8);
    __builtin_prefetch(sc->scopes + at);
    __builtin_prefetch(sc->scopes + (at >= 64 ? at - 64 : 0));
    __builtin_prefetch(sc->scopes + (at >= 128 ? at - 128 : 0));
}

/* Where a frame's function name comes from: a name id, or none ("??": the line table covers an
 * address no function or symbol does). */
#define NAME_UNKNOWN UINT32_MAX

/* The frames of the record `hit` found for file_addr: its scope, then each parent up to the
 * concrete function (a walk up checked indexes: a parent cycle in a crafted file ends at the
 * frame cap). Writes at most `cap` frames (cap <= SYMCACHE_MAX_FRAMES) with their functions
 * unset: name_ids[k] says which name frame k gets (resolve_names). Returns how many. */
static inline __attribute__((always_inline)) size_t walk_chain(symcache_frame *out, uint32_t *name_ids, size_t cap,
                                                               const symcache *sc, const record *hit, uint64_t file_addr)
{
    uint32_t scope = hit->scope1 == 0 ? SYMC_NONE : (uint32_t)(hit->scope1 - 1);
    const char *file = hit->file1 == 0 ? NULL : string_at(sc, rd32(sc->files + (size_t)(hit->file1 - 1) * 4));
    uint32_t line = (uint32_t)hit->line;
    if (cap == 0 || (scope == SYMC_NONE && file == NULL))
        return 0;
    if (scope == SYMC_NONE) {
        out[0] = (symcache_frame){NULL, file, line, false, false, file_addr, NULL};
        name_ids[0] = NAME_UNKNOWN;
        return 1;
    }
    /* The inlinees' entry address is not stored: frames of one chain share the concrete
     * function's entry, written once the walk reaches it. */
    scope_prefetch(sc, scope);
    size_t n = 0;
    while (n < cap) {
        symc_scope s = scope_at(sc, scope);
        uint32_t parent = s.parent;
        name_prefetch(sc, s.name);
        name_ids[n] = s.name;
        out[n].file = file;
        out[n].line = line;
        out[n].inlined = parent != SYMC_NONE;
        out[n].from_symtab = false;
        out[n].sym_addr = 0;
        n++;
        if (parent == SYMC_NONE) {
            uint64_t entry = sc->base + s.d;
            out[n - 1].from_symtab = s.c == SYMC_KIND_SYMTAB;
            for (size_t k = 0; k < n; k++)
                out[k].sym_addr = entry;
            break;
        }
        file = s.c == SYMC_NONE ? NULL : string_at(sc, rd32(sc->files + (size_t)s.c * 4));
        line = s.d;
        scope = parent;
    }
    return n;
}

/* Each frame's names from its name id (walk_chain): the raw name into `mangled`, its display
 * form into `function` ("??" for both when the name block is corrupt; "??" and NULL when the
 * frame has no name). */
static inline __attribute__((always_inline)) void resolve_names(symcache_frame *out, const uint32_t *name_ids, size_t n,
                                                                const symcache *sc)
{
    for (size_t k = 0; k < n; k++) {
        if (name_ids[k] == NAME_UNKNOWN) {
            out[k].function = "??";
            out[k].mangled = NULL;
            continue;
        }
        name_block *nb = name_block_at(sc, name_ids[k]);
        if (nb == NULL) {
            out[k].function = out[k].mangled = "??";
            continue;
        }
        uint32_t i = name_ids[k] % SYMC_NAMES_PER_BLOCK;
        out[k].mangled = nb->name[i].raw;
        out[k].function = display_at((symcache *)sc, nb, i); /* the memos are all a lookup writes */
        __builtin_prefetch(out[k].function); /* the caller reads it next */
    }
}

size_t symcache_lookup(symcache_frame *out, size_t cap, const symcache *sc, uint64_t file_addr)
{
    record hit;
    if (cap == 0 || file_addr < sc->base || file_addr - sc->base > UINT32_MAX ||
        !find_range(sc, (uint32_t)(file_addr - sc->base), &hit))
        return 0;
    /* Two passes: the walk up the parents (each scope load waits for the one before), then the
     * names; the walk starts loading each name's slot, so those misses overlap the walk's. */
    uint32_t name_ids[SYMCACHE_MAX_FRAMES];
    size_t n = walk_chain(out, name_ids, cap < SYMCACHE_MAX_FRAMES ? cap : SYMCACHE_MAX_FRAMES, sc, &hit, file_addr);
    resolve_names(out, name_ids, n, sc);
    return n;
}

/* Addresses symcache_lookup_many works on at once: enough independent cache misses in flight
 * to cover the memory latency, few enough that the lines stay in L1 between the stages. */
#define SYMC_BATCH 16u

size_t symcache_lookup_many(symcache_frame *out, size_t cap, size_t *ends, const symcache *sc, const uint64_t *addrs,
                            size_t n)
{
    /* Per address of a window: in the table's range, its offset, and then its page, resume
     * point and record. Each stage starts the next stage's cache miss for every address of
     * the window (prefetch) before any of them waits for one. */
    bool in[SYMC_BATCH];
    uint32_t rel[SYMC_BATCH], at[SYMC_BATCH];
    record hit[SYMC_BATCH];
    uint32_t name_ids[SYMCACHE_MAX_FRAMES * SYMC_BATCH];
    size_t used = 0, done = 0;
    while (done < n) {
        size_t w = n - done < SYMC_BATCH ? n - done : SYMC_BATCH;
        const uint64_t *a = addrs + done;
        for (size_t j = 0; j < w; j++) {
            in[j] = a[j] >= sc->base && a[j] - sc->base <= UINT32_MAX;
            rel[j] = in[j] ? (uint32_t)(a[j] - sc->base) : 0;
            in[j] = in[j] && rel[j] >= sc->resume[0].start;
            uint32_t g = rel[j] >> sc->page_shift;
            at[j] = g < sc->npages ? g : sc->npages - 1;
            __builtin_prefetch(&sc->page[at[j]]);
        }
        for (size_t j = 0; j < w; j++)
            if (in[j])
                __builtin_prefetch(&sc->resume[sc->page[at[j]]]);
        for (size_t j = 0; j < w; j++)
            if (in[j]) {
                at[j] = find_resume(sc, rel[j]);
                __builtin_prefetch(sc->records + sc->resume[at[j]].next);
            }
        for (size_t j = 0; j < w; j++)
            if (in[j]) {
                decode_from(sc, at[j], rel[j], &hit[j]);
                if (hit[j].scope1 != 0)
                    scope_prefetch(sc, (uint32_t)(hit[j].scope1 - 1));
            }
        /* the walks, in input order, into out */
        size_t first = used, j = 0;
        for (; j < w; j++) {
            size_t room = cap - used, k = 0;
            if (in[j] && (hit[j].scope1 != 0 || hit[j].file1 != 0)) { /* at least one frame */
                size_t limit = room < SYMCACHE_MAX_FRAMES ? room : SYMCACHE_MAX_FRAMES;
                if (limit == 0)
                    break;
                k = walk_chain(out + used, name_ids + (used - first), limit, sc, &hit[j], a[j]);
                /* cut short by the room left (not by the frame cap): answer it in the next call */
                if (k == limit && limit < SYMCACHE_MAX_FRAMES && out[used + k - 1].inlined)
                    break;
            }
            used += k;
            ends[done + j] = used;
        }
        resolve_names(out + first, name_ids, used - first, sc);
        done += j;
        if (j < w)
            break;
    }
    return done;
}

const uint8_t *symcache_uuid(const symcache *sc)
{
    return sc->uuid;
}

uint32_t symcache_cputype(const symcache *sc)
{
    return sc->cputype;
}

uint32_t symcache_cpusubtype(const symcache *sc)
{
    return sc->cpusubtype;
}

const char *symcache_arch(const symcache *sc)
{
    return macho_arch_name(sc->cputype, sc->cpusubtype);
}

const char *symcache_image_name(const symcache *sc)
{
    return sc->strings + sc->image_name;
}

uint64_t symcache_text_vmaddr(const symcache *sc)
{
    return sc->text_vmaddr;
}

bool symcache_has_dwarf(const symcache *sc)
{
    return (sc->flags & SYMC_FLAG_DWARF) != 0;
}

uint32_t symcache_range_count(const symcache *sc)
{
    return sc->nranges;
}

uint32_t symcache_function_count(const symcache *sc)
{
    return sc->nscopes;
}
