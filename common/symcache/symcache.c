/*
 * symcache reader: mmap, validate once at open, then lock-free lookups.
 */
#include "symcache/symcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <endian.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string.h>
#include <sys/mman.h>
#include <lz4.h>
#include <zstd.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "base/xalloc.h"
#include "demangle/demangle.h"
#include "macho/macho.h"
#include "symcache/symcache_format.h"
#include "unwind/unwind.h"

#define SYMC_NAME_BLOCK_MAX (4u << 20) /* a name block larger than this is corrupt */
/* A "DISP" group larger than this is corrupt (its declared size is the file's word, and is
 * allocated before the group is checked): the raw forms of its names, as at most as many
 * name blocks, and display forms as long again. A larger group's names are demangled at lookup. */
#define SYMC_DISPLAY_GROUP_MAX ((size_t)2 * (SYMC_DISPLAY_GROUP / SYMC_NAMES_PER_BLOCK) * SYMC_NAME_BLOCK_MAX)
#define SYMC_DCTX 4                     /* zstd contexts a symcache keeps */

/* One name of a decompressed block: the raw name, its scope-qualified form and, once a
 * lookup asked for it, its display form (one cache line holds them for four names). */
typedef struct {
    uint32_t raw;                   /* offset of the raw name in the block's text */
    uint32_t qualified;             /* offset of the scope-qualified name: `raw` when the name
                                       has none (a stored name without SYMC_SCOPE_MARK), else
                                       the start of the name rewritten as prefix + raw name,
                                       whose last bytes are the raw name */
    _Atomic(const char *) display;  /* NULL = not derived yet; `raw` itself when it does not
                                       demangle, else a copy in the symcache's display arena.
                                       Published with a compare-and-swap like the block: a
                                       thread that loses leaves its copy unused. */
} name_entry;

/* A chunk of a symcache's lookup memory: what lookups derive and keep until symcache_close
 * (decompressed name blocks, demangled names) is bump-allocated from chunks by any thread
 * (an atomic add; a mutex only to make the next chunk), and freed chunk by chunk at close. One malloc'd string per demangled name cost 7%
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


/* One decompressed block of raw names, kept until symcache_close. Allocated at a cache-line
 * boundary, entries first, so that no entry straddles two lines (a lookup's name costs one
 * miss, not two for a quarter of them). */
typedef struct {
    name_entry name[SYMC_NAMES_PER_BLOCK]; /* the names in id order */
    uint32_t count;                        /* names in the block */
    char text[];                           /* the raw names, NUL-terminated */
} name_block;

/* A name block whose bytes are corrupt: published in its memo slot so that it is tried once. */
static name_block corrupt_block;

struct symcache {
    bytes map;              /* owned mapping, or zeroed when opened over caller bytes */
    const uint8_t *data;
    size_t len;
    uint32_t version, flags, cputype, cpusubtype;
    uint8_t uuid[16];
    uint64_t text_vmaddr, base;
    uint32_t nranges, nscopes, strings_size, image_name, nfiles, ngranules;
    uint32_t nnames, names_size, nname_blocks, granules_size;
    unsigned unit_shift, gshift, w_name; /* granule: 2^gshift bytes of 2^unit_shift-byte units */
    const uint8_t *gindex;  /* u32[ngranules + 1] */
    const uint8_t *files;   /* u32[nfiles] string offsets */
    const uint8_t *name_index; /* u32[nname_blocks + 1] */
    const uint8_t *names;   /* compressed name blocks */
    const uint8_t *granules; /* granules_size bytes, then SYMC_GRANULE_PAD zero bytes */
    const char *strings;
    size_t core_len;        /* bytes up to the strings' end: the part every version has */
    symc_section sections[SYMC_MAX_SECTIONS]; /* the optional sections after it (version 6) */
    unsigned nsections;
    /* the "DISP" section when it is of this build's demangler revision (version 9 and later),
     * else disp_index == NULL: display forms are demangled at lookup */
    const uint8_t *disp_index;  /* u32[disp_ngroups + 1] group offsets from disp_frames */
    const uint8_t *disp_frames;
    uint32_t disp_ngroups;
    /* Name blocks are decompressed on first use, by any thread: a block is published with a
     * compare-and-swap (a thread that loses frees its copy); the zstd context is shared under
     * the mutex, which only a first use takes. */
    _Atomic(name_block *) *name_memo; /* nname_blocks entries, NULL = not yet */
    _Atomic(mem_chunk *) mem; /* newest chunk of the lookup memory, NULL = none yet */
    pthread_mutex_t mem_mu;   /* held while the next chunk is made (mem_alloc) */
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

/* The `width`-bit field (<= 32) at bit `at` of p: one unaligned 64-bit load (the granules
 * are followed by SYMC_GRANULE_PAD zero bytes, so it stays in the file). */
static inline __attribute__((always_inline)) uint32_t get_bits(const uint8_t *p, uint64_t at, unsigned width)
{
    uint64_t w;
    memcpy(&w, p + at / 8, 8);
    return (uint32_t)(le64toh(w) >> (at % 8) & ((1ull << width) - 1));
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

/* `n` bytes (16-aligned) of sc's lookup memory, kept until symcache_close; any thread. A bump
 * of the newest chunk's counter, lock-free; only making the next chunk takes sc->mem_mu, so that
 * one thread makes it and the others allocate there (threads that each made one when a chunk
 * filled left all but one of them unused: 2 MB zeroed for nothing at nearly every chunk of a
 * two-thread batch). */
static void *mem_alloc(symcache *sc, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    for (;;) {
        mem_chunk *c = atomic_load_explicit(&sc->mem, memory_order_acquire);
        if (c != NULL) {
            size_t at = atomic_fetch_add_explicit(&c->used, n, memory_order_relaxed);
            if (at + n <= c->cap)
                return c->data + at;
        }
        pthread_mutex_lock(&sc->mem_mu);
        if (atomic_load_explicit(&sc->mem, memory_order_acquire) == c) { /* nobody made one meanwhile */
            mem_chunk *fresh = mem_chunk_new(c, n);
            atomic_init(&fresh->used, n);
            fresh->next = c;
            atomic_store_explicit(&sc->mem, fresh, memory_order_release);
            pthread_mutex_unlock(&sc->mem_mu);
            return fresh->data;
        }
        pthread_mutex_unlock(&sc->mem_mu);
    }
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

/* Bytes name block `k` decompresses to; 0 if its frame header is corrupt or too large. */
static size_t block_size(const symcache *sc, uint32_t k)
{
    uint32_t off = rd32(sc->name_index + (size_t)k * 4), end = rd32(sc->name_index + (size_t)(k + 1) * 4);
    unsigned long long size = ZSTD_getFrameContentSize(sc->names + off, end - off);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > SYMC_NAME_BLOCK_MAX)
        return 0;
    return (size_t)size;
}

/* Decompress the zstd frame of `src_len` bytes at src into `dst` with one of sc's zstd
 * contexts; false unless it gives exactly `size` bytes. */
static bool frame_decompress(symcache *sc, char *dst, size_t size, const uint8_t *src, size_t src_len)
{
    size_t got = (size_t)-1;
    int x = 0;
    while (x < SYMC_DCTX && pthread_mutex_trylock(&sc->zstd_mu[x]) != 0)
        x++;
    if (x == SYMC_DCTX) /* all busy: wait for the first */
        pthread_mutex_lock(&sc->zstd_mu[x = 0]);
    if (sc->dctx[x] == NULL)
        sc->dctx[x] = ZSTD_createDCtx();
    if (sc->dctx[x] != NULL)
        got = ZSTD_decompressDCtx(sc->dctx[x], dst, size, src, src_len);
    pthread_mutex_unlock(&sc->zstd_mu[x]);
    return !ZSTD_isError(got) && got == size;
}

/* Decompress name block `k` (block_size bytes) into `dst`; false unless it gives exactly
 * `size` bytes ending in a NUL. */
static bool block_decompress(symcache *sc, uint32_t k, char *dst, size_t size)
{
    uint32_t off = rd32(sc->name_index + (size_t)k * 4), end = rd32(sc->name_index + (size_t)(k + 1) * 4);
    return frame_decompress(sc, dst, size, sc->names + off, end - off) && dst[size - 1] == '\0';
}

/* Split decompressed block `k` (`size` bytes at `text`) into its names: exactly the block's
 * count of NUL-terminated ones, or false. */
static bool block_split(const symcache *sc, uint32_t k, const char *text, size_t size,
                        const char *name[SYMC_NAMES_PER_BLOCK])
{
    uint32_t count = k + 1 < sc->nname_blocks ? SYMC_NAMES_PER_BLOCK : sc->nnames - k * SYMC_NAMES_PER_BLOCK;
    uint32_t n = 0;
    for (size_t at = 0; at < size; n++) {
        if (n == count)
            return false;
        name[n] = text + at;
        at += strlen(text + at) + 1;
    }
    return n == count;
}

/* Decompress name block `k` into sc's lookup memory and check it holds exactly its names;
 * NULL if it does not. */
static name_block *decompress_names(symcache *sc, uint32_t k)
{
    size_t size = block_size(sc, k);
    if (size == 0)
        return NULL;
    /* mem_alloc gives 16-byte alignment: 48 bytes more to start at a 64-byte boundary */
    unsigned char *mem = mem_alloc(sc, sizeof(name_block) + size + 48);
    name_block *nb = (name_block *)(void *)(mem + ((64 - (uintptr_t)mem % 64) % 64));
    const char *name[SYMC_NAMES_PER_BLOCK];
    if (!block_decompress(sc, k, nb->text, size) || !block_split(sc, k, nb->text, size, name))
        return NULL;
    nb->count = k + 1 < sc->nname_blocks ? SYMC_NAMES_PER_BLOCK : sc->nnames - k * SYMC_NAMES_PER_BLOCK;
    for (uint32_t i = 0; i < SYMC_NAMES_PER_BLOCK; i++) {
        uint32_t off = i < nb->count ? (uint32_t)(name[i] - nb->text) : 0, at = off;
        char *mark = i < nb->count ? strchr(nb->text + off, SYMC_SCOPE_MARK) : NULL;
        if (mark != NULL) {
            /* "<prefix>\x1f<name>" becomes "<prefix><name>" in place: the qualified name, and
             * the raw name where it ends (the freed byte becomes a second NUL) */
            at = (uint32_t)(mark - nb->text);
            memmove(mark, mark + 1, strlen(mark + 1) + 1);
        }
        nb->name[i].raw = at;
        nb->name[i].qualified = off;
        atomic_init(&nb->name[i].display, NULL);
    }
    return nb;
}

/* Block k's memo slot filled on first use: decompressed, or corrupt_block if it is corrupt
 * (tried once). Kept until symcache_close. */
static __attribute__((noinline)) name_block *name_block_fill(symcache *sc, uint32_t k)
{
    name_block *nb = NULL, *fresh = decompress_names(sc, k);
    if (fresh == NULL)
        fresh = &corrupt_block;
    /* a thread that loses uses the winner's block; its copy stays unused in the memory */
    if (atomic_compare_exchange_strong_explicit(&sc->name_memo[k], &nb, fresh, memory_order_acq_rel,
                                                memory_order_acquire))
        nb = fresh;
    return nb;
}

/* The block holding name `id` (< nnames), decompressed on first use; NULL if it is corrupt. */
static inline __attribute__((always_inline)) name_block *name_block_at(const symcache *csc, uint32_t id)
{
    symcache *sc = (symcache *)csc; /* the memo is the only state a lookup writes */
    uint32_t k = id / SYMC_NAMES_PER_BLOCK;
    name_block *nb = atomic_load_explicit(&sc->name_memo[k], memory_order_acquire);
    if (__builtin_expect(nb == NULL, 0))
        nb = name_block_fill(sc, k);
    return nb == &corrupt_block ? NULL : nb;
}

/* The display form of raw name `i` of block `nb`, derived (demangled: common/demangle, the
 * simplified Swift form, C++ as llvm-symbolizer prints it) and published on first use. */
/* The display form of `raw`: its demangling copied into sc's lookup memory, or `raw` itself
 * when it does not demangle. */
static const char *derive_display(symcache *sc, const char *raw)
{
    char *demangled = demangle_name(raw, DEMANGLE_SIMPLIFIED);
    if (demangled == NULL)
        return raw;
    size_t len = strlen(demangled);
    char *copy = mem_alloc(sc, len + 1);
    memcpy(copy, demangled, len + 1);
    free(demangled); /* now, while it is hot: the lookup memory holds the copy */
    return copy;
}

static __attribute__((noinline)) const char *display_fill(symcache *sc, name_block *nb, uint32_t i)
{
    const char *shown = NULL, *fresh = derive_display(sc, nb->text + nb->name[i].raw);
    if (atomic_compare_exchange_strong_explicit(&nb->name[i].display, &shown, fresh, memory_order_acq_rel,
                                                memory_order_acquire))
        return fresh;
    return shown; /* another thread published it first; our copy stays unused */
}

/* The display form of raw name `i` of block `nb`: the memo's, derived the first time. */
static inline __attribute__((always_inline)) const char *display_at(symcache *sc, name_block *nb, uint32_t i)
{
    const char *shown = atomic_load_explicit(&nb->name[i].display, memory_order_acquire);
    return __builtin_expect(shown != NULL, 1) ? shown : display_fill(sc, nb, i);
}

/* The sections after the core (version 6; symcache_format.h): zero padding to 8 bytes, then
 * (tag, size, body, zero padding to 8) up to the file's end exactly; a tag at most once. Only
 * their framing is checked here; an accessor checks the body it reads. */
static err_code check_sections(symcache *sc, err_info *err)
{
    size_t at = sc->core_len;
    sc->nsections = 0;
    if (at == sc->len)
        return ERR_OK;
    size_t first = (at + 7) & ~(size_t)7;
    for (; at < first; at++)
        if (at >= sc->len || sc->data[at] != 0)
            return err_set(err, ERR_INVALID, "corrupt symcache: bytes after the strings are no section");
    if (at == sc->len) /* padding is there only before a section */
        return err_set(err, ERR_INVALID, "corrupt symcache: bytes after the strings are no section");
    while (at < sc->len) {
        if (sc->len - at < SYMC_SECTION_HEADER)
            return err_set(err, ERR_INVALID, "corrupt symcache: section header at %zu is truncated", at);
        uint32_t tag = rd32(sc->data + at), size = rd32(sc->data + at + 4);
        size_t body = at + SYMC_SECTION_HEADER, padded = ((size_t)size + 7) & ~(size_t)7;
        if (sc->len - body < padded)
            return err_set(err, ERR_INVALID, "corrupt symcache: section at %zu (%u bytes) runs past the file's end",
                           at, size);
        for (size_t k = size; k < padded; k++)
            if (sc->data[body + k] != 0)
                return err_set(err, ERR_INVALID, "corrupt symcache: section at %zu is not zero-padded", at);
        for (unsigned k = 0; k < sc->nsections; k++)
            if (sc->sections[k].tag == tag)
                return err_set(err, ERR_INVALID, "corrupt symcache: section %08x twice", tag);
        if (sc->nsections == SYMC_MAX_SECTIONS)
            return err_set(err, ERR_INVALID, "corrupt symcache: more than %u sections", SYMC_MAX_SECTIONS);
        sc->sections[sc->nsections++] = (symc_section){tag, sc->data + body, size};
        at = body + padded;
    }
    return ERR_OK;
}

/* The "DISP" section's header and group index (symcache_format.h): a section of another
 * demangler revision, or of a version-8 file (zstd groups), is ignored (display forms are then
 * demangled at lookup, as for a file without one); one that does not fit the core or whose
 * index runs out of it is corrupt. The groups are checked when symcache_names decodes one. */
static err_code check_display(symcache *sc, err_info *err)
{
    size_t len;
    const uint8_t *p = symcache_section(sc, SYMC_TAG_DISPLAY, &len);
    sc->disp_index = NULL;
    if (p == NULL || sc->version < SYMC_DISPLAY_MIN_VERSION || (len >= 4 && rd32(p) != DEMANGLE_REVISION))
        return ERR_OK;
    uint32_t ngroups = (uint32_t)(((uint64_t)sc->nnames + SYMC_DISPLAY_GROUP - 1) / SYMC_DISPLAY_GROUP);
    uint64_t index_end = SYMC_DISPLAY_HEADER + ((uint64_t)ngroups + 1) * 4;
    if (len < index_end || rd32(p + 4) != sc->nnames || rd32(p + 8) != SYMC_DISPLAY_GROUP || rd32(p + 12) != 0)
        return err_set(err, ERR_INVALID, "corrupt symcache: the display names section does not fit its %u names",
                       sc->nnames);
    const uint8_t *index = p + SYMC_DISPLAY_HEADER;
    uint64_t frames_len = len - index_end;
    for (uint32_t g = 0; g <= ngroups; g++) {
        uint32_t off = rd32(index + (size_t)g * 4);
        if (off > frames_len || (g > 0 && off < rd32(index + (size_t)(g - 1) * 4)) ||
            (g == ngroups && off != frames_len))
            return err_set(err, ERR_INVALID, "corrupt symcache: display names group %u is out of bounds", g);
    }
    sc->disp_index = index;
    sc->disp_frames = p + index_end;
    sc->disp_ngroups = ngroups;
    return ERR_OK;
}

/* Check what lookups rely on and costs O(1) or O(small tables): the header, the table sizes
 * against the file size (exactly), the granule index's end and padding, the paths and the
 * name block index. The granules themselves are not read here: a lookup checks the one it
 * reads (its bounds, its field widths, every index it follows), so that opening a symcache
 * costs the same whatever its size. */
static err_code check(symcache *sc, err_info *err)
{
    const uint8_t *d = sc->data;
    if (sc->len < SYMC_HEADER_SIZE || memcmp(d, SYMC_MAGIC, 8) != 0)
        return err_set(err, ERR_INVALID, "not a symcache: bad magic or %zu-byte file", sc->len);
    sc->version = rd32(d + 8);
    /* older: rebuild it from the dSYM (a distinct code the server acts on); newer: unknown */
    if (sc->version < SYMCACHE_MIN_VERSION)
        return err_set(err, ERR_OUTDATED,
                       "symcache format version %u is outdated (this build reads %u-%u): rebuild it from the dSYM",
                       sc->version, SYMCACHE_MIN_VERSION, SYMCACHE_VERSION);
    if (sc->version > SYMCACHE_VERSION)
        return err_set(err, ERR_UNSUPPORTED, "symcache format version %u is not supported (this build reads %u-%u)",
                       sc->version, SYMCACHE_MIN_VERSION, SYMCACHE_VERSION);
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
    sc->ngranules = rd32(d + 76);
    sc->nnames = rd32(d + 80);
    sc->unit_shift = d[84];
    sc->w_name = d[85];
    sc->names_size = rd32(d + 88);
    sc->granules_size = rd32(d + 92);
    sc->gshift = sc->unit_shift + SYMC_GRANULE_UNIT_BITS;
    sc->nname_blocks = (uint32_t)(((uint64_t)sc->nnames + SYMC_NAMES_PER_BLOCK - 1) / SYMC_NAMES_PER_BLOCK);
    if (d[86] != 0 || d[87] != 0 || sc->unit_shift > SYMC_MAX_UNIT_SHIFT || sc->w_name > 32)
        return err_set(err, ERR_INVALID, "corrupt symcache: granule unit 2^%u bytes, name width %u",
                       sc->unit_shift, sc->w_name);
    if (sc->ngranules == 0 || sc->strings_size == 0)
        return err_set(err, ERR_INVALID, "corrupt symcache: no granules or no strings");
    uint64_t size = SYMC_HEADER_SIZE + ((uint64_t)sc->ngranules + 1) * 4 + (uint64_t)sc->nfiles * 4 +
                    ((uint64_t)sc->nname_blocks + 1) * 4 + sc->names_size + sc->granules_size + SYMC_GRANULE_PAD +
                    sc->strings_size;
    /* version 5 ends there; version 6 may go on with sections (check_sections) */
    if (size > sc->len || (size != sc->len && sc->version < 6))
        return err_set(err, ERR_INVALID, "corrupt symcache: tables need %llu bytes, file has %zu",
                       (unsigned long long)size, sc->len);
    sc->core_len = (size_t)size;
    err_code rc = check_sections(sc, err);
    if (rc != ERR_OK)
        return rc;
    sc->gindex = d + SYMC_HEADER_SIZE;
    sc->files = sc->gindex + ((size_t)sc->ngranules + 1) * 4;
    sc->name_index = sc->files + (size_t)sc->nfiles * 4;
    sc->names = sc->name_index + ((size_t)sc->nname_blocks + 1) * 4;
    sc->granules = sc->names + sc->names_size;
    sc->strings = (const char *)sc->granules + sc->granules_size + SYMC_GRANULE_PAD;
    if (sc->strings[sc->strings_size - 1] != '\0')
        return err_set(err, ERR_INVALID, "corrupt symcache: string table is not terminated");
    if (sc->image_name >= sc->strings_size)
        return err_set(err, ERR_INVALID, "corrupt symcache: image name offset %u out of range",
                       sc->image_name);
    if (rd32(sc->gindex + (size_t)sc->ngranules * 4) != sc->granules_size)
        return err_set(err, ERR_INVALID, "corrupt symcache: the granule index does not end at the granules' end");
    for (uint32_t i = 0; i < SYMC_GRANULE_PAD; i++)
        if (sc->granules[sc->granules_size + i] != 0)
            return err_set(err, ERR_INVALID, "corrupt symcache: the padding after the granules is not zero");
    for (uint32_t i = 0; i < sc->nfiles; i++)
        if (rd32(sc->files + (size_t)i * 4) >= sc->strings_size)
            return err_set(err, ERR_INVALID, "corrupt symcache: file %u points outside the strings", i);
    /* name blocks in order inside the names section; their contents are checked when a
     * lookup first decompresses one (a bad block gives "??", never a wild read) */
    for (uint32_t k = 0; k <= sc->nname_blocks; k++) {
        uint32_t off = rd32(sc->name_index + (size_t)k * 4);
        if (off > sc->names_size || (k > 0 && off < rd32(sc->name_index + (size_t)(k - 1) * 4)) ||
            (k == sc->nname_blocks && off != sc->names_size))
            return err_set(err, ERR_INVALID, "corrupt symcache: name block %u is out of bounds", k);
    }
    rc = check_display(sc, err);
    if (rc != ERR_OK)
        return rc;
    sc->name_memo = xcalloc(sc->nname_blocks ? sc->nname_blocks : 1, sizeof *sc->name_memo);
    return ERR_OK;
}

/* A zeroed symcache with its mutexes initialized. */
static symcache *symcache_new(void)
{
    symcache *sc = xcalloc(1, sizeof *sc);
    for (int x = 0; x < SYMC_DCTX; x++)
        pthread_mutex_init(&sc->zstd_mu[x], NULL);
    pthread_mutex_init(&sc->mem_mu, NULL);
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
    for (int x = 0; x < SYMC_DCTX; x++) {
        ZSTD_freeDCtx(sc->dctx[x]);
        pthread_mutex_destroy(&sc->zstd_mu[x]);
    }
    pthread_mutex_destroy(&sc->mem_mu);
    bytes_unmap(&sc->map);
    free(sc);
}

/* One granule's fields, read from its header and checked against its bounds (granule_at). */
typedef struct {
    const uint8_t *offs;          /* u8[nrec - 1]: record starts 1.., units from the granule start */
    const uint8_t *recs, *scopes; /* bit-packed records and local scopes */
    uint32_t nrec, nlocal;        /* records (1..256), local scopes */
    uint32_t fbase, lbase;        /* added to each record's file and line field */
    uint32_t gend;                /* the granule's end, an offset from the base (mod 2^32) */
    unsigned w_ls, w_file, w_line, w_x, w_y, w_rec, w_sc; /* field widths in bits */
} granule;

/* Start loading granule g's bytes: its first cache lines, all at once (a granule is about 200
 * bytes on arm64), so that a lookup waits for memory about once. */
static inline __attribute__((always_inline)) void granule_prefetch(const symcache *sc, uint32_t g)
{
    uint32_t off = rd32(sc->gindex + (size_t)g * 4), end = rd32(sc->gindex + (size_t)g * 4 + 4);
    if (end > sc->granules_size || off >= end)
        return;
    const uint8_t *p = sc->granules + off;
    for (uint32_t at = 0; at < end - off && at < 256; at += 64)
        __builtin_prefetch(p + at);
}

/* Granule g's header into *gv; false if it is corrupt (it then answers nothing): its bytes
 * outside the granules, field widths over 32 bits, or tables longer than its bytes. */
static inline __attribute__((always_inline)) bool granule_at(granule *gv, const symcache *sc, uint32_t g)
{
    uint32_t off = rd32(sc->gindex + (size_t)g * 4), end = rd32(sc->gindex + (size_t)g * 4 + 4);
    if (end > sc->granules_size || off > end || end - off < SYMC_GRANULE_HEADER)
        return false;
    const uint8_t *p = sc->granules + off;
    gv->nrec = p[0] + 1u;
    gv->nlocal = p[1] | (uint32_t)p[2] << 8;
    gv->w_ls = p[3], gv->w_file = p[4], gv->w_line = p[5], gv->w_x = p[6], gv->w_y = p[7];
    if (gv->w_ls > 16 || gv->w_file > 32 || gv->w_line > 32 || gv->w_x > 32 || gv->w_y > 32)
        return false;
    gv->w_rec = gv->w_ls + gv->w_file + gv->w_line;
    gv->w_sc = sc->w_name + gv->w_ls + gv->w_x + gv->w_y;
    uint32_t rec_bytes = (gv->nrec * gv->w_rec + 7) / 8;
    uint64_t need = SYMC_GRANULE_HEADER + (gv->nrec - 1) + rec_bytes + ((uint64_t)gv->nlocal * gv->w_sc + 7) / 8;
    if (need > end - off)
        return false;
    gv->fbase = rd32(p + 8);
    gv->lbase = rd32(p + 12);
    gv->offs = p + SYMC_GRANULE_HEADER;
    gv->recs = gv->offs + (gv->nrec - 1);
    gv->scopes = gv->recs + rec_bytes;
    gv->gend = (uint32_t)(((uint64_t)g + 1) << sc->gshift);
    return true;
}

/* The record covering unit `key` (< 128) of the granule: record starts strictly increase, so
 * it is the last one starting at or before the key, i.e. one before the first start past it.
 * Branch-free over the first 64 starts (a lookup then does not wait for the granule's bytes
 * to know which way to go, and the next lookup's loads can start meanwhile); a granule with
 * more records (never on arm64 code so far: at most 46 on the benchmark) looks at the rest in
 * a loop. A corrupt granule gives some record of its own: k <= nrec - 1. */
static inline __attribute__((always_inline)) uint32_t find_record(const granule *gv, uint32_t key)
{
    uint32_t cnt = gv->nrec - 1;
    /* bit i set: start i + 1 lies past the key (the 64 bytes stay in the file: the granules
     * are followed by SYMC_GRANULE_PAD bytes; bits past cnt are ignored) */
    uint64_t past = 0;
#if defined(__SSE2__)
    /* signed byte compares: starts are below 128 (a corrupt byte over 127 reads as "not past") */
    __m128i keys = _mm_set1_epi8((char)key);
    for (unsigned c = 0; c < 4; c++)
        past |= (uint64_t)(uint32_t)_mm_movemask_epi8(
                    _mm_cmpgt_epi8(_mm_loadu_si128((const __m128i *)(const void *)(gv->offs + 16 * c)), keys))
                << (16 * c);
#else
    /* 8 bytes at a time: (0x80 | key) - start keeps its high bit exactly when start <= key,
     * with no borrow between bytes below 0x80 (a corrupt byte may borrow from the byte after
     * it: a wrong record, still one of the granule's) */
    const uint64_t ones = 0x0101010101010101ull, high = ones << 7;
    uint64_t keys = (uint64_t)key * ones | high;
    for (unsigned w = 0; w < 8; w++) {
        uint64_t v;
        memcpy(&v, gv->offs + 8 * w, 8);
        uint64_t gt = ((keys - le64toh(v)) & high) ^ high; /* 0x80 where start > key */
        past |= (gt * 0x0002040810204081ull >> 56) << (8 * w); /* byte i's bit 7 to bit i */
    }
#endif
    if (cnt < 64)
        return (uint32_t)__builtin_ctzll(past | 1ull << cnt);
    if (past != 0)
        return (uint32_t)__builtin_ctzll(past);
    uint32_t k = 64;
    while (k < cnt && gv->offs[k] <= key)
        k++;
    return k;
}

static const char *string_at(const symcache *sc, uint32_t off)
{
    return off < sc->strings_size ? sc->strings + off : NULL;
}

/* Path of file index + 1 `file1` (0 or out of range: NULL). */
static inline __attribute__((always_inline)) const char *file_at(const symcache *sc, uint32_t file1)
{
    return file1 == 0 || file1 > sc->nfiles ? NULL : string_at(sc, rd32(sc->files + (size_t)(file1 - 1) * 4));
}

/* Start loading name `id`'s slot in its block when the block is already decompressed (a
 * hint: the misses of a chain's names then overlap the walk's). Name side, with resolve_names. */
static inline __attribute__((always_inline)) void name_prefetch(const symcache *sc, uint32_t id)
{
    name_block *nb = atomic_load_explicit(&sc->name_memo[id / SYMC_NAMES_PER_BLOCK], memory_order_acquire);
    if (nb != NULL)
        __builtin_prefetch(&nb->name[id % SYMC_NAMES_PER_BLOCK]);
}

/* Where a frame's function name comes from: a name id, or none ("??": the line table covers an
 * address no function or symbol does). */
#define NAME_UNKNOWN UINT32_MAX

/* The frames of record k of granule gv, found for file_addr: its local scope, then each parent
 * up to the concrete function (a walk up local indexes, each checked: a parent cycle in a
 * crafted file ends at the frame cap). Writes at most `cap` frames (cap <= SYMCACHE_MAX_FRAMES)
 * with their functions unset: name_ids[k] says which name frame k gets (resolve_names).
 * Returns how many. */
static inline __attribute__((always_inline)) size_t walk_chain(symcache_frame *out, uint32_t *name_ids, size_t cap,
                                                               const symcache *sc, const granule *gv, uint32_t k,
                                                               uint64_t file_addr)
{
    uint64_t at = (uint64_t)k * gv->w_rec;
    uint32_t ls1 = get_bits(gv->recs, at, gv->w_ls);
    const char *file = file_at(sc, gv->fbase + get_bits(gv->recs, at + gv->w_ls, gv->w_file));
    uint32_t line = gv->lbase + get_bits(gv->recs, at + gv->w_ls + gv->w_file, gv->w_line);
    bool scoped = ls1 != 0 && ls1 <= gv->nlocal;
    if (cap == 0 || (!scoped && file == NULL))
        return 0;
    if (!scoped) {
        out[0] = (symcache_frame){NULL, file, line, false, false, file_addr, NULL, NULL};
        name_ids[0] = NAME_UNKNOWN;
        return 1;
    }
    /* The inlinees' entry address is not stored: frames of one chain share the concrete
     * function's entry, written once the walk reaches it. */
    uint32_t s = ls1 - 1;
    unsigned o_parent = sc->w_name, o_x = o_parent + gv->w_ls, o_y = o_x + gv->w_x;
    size_t n = 0;
    while (n < cap) {
        uint64_t a = (uint64_t)s * gv->w_sc;
        uint32_t name = get_bits(gv->scopes, a, sc->w_name);
        uint32_t parent1 = get_bits(gv->scopes, a + o_parent, gv->w_ls);
        uint32_t x = get_bits(gv->scopes, a + o_x, gv->w_x);
        uint32_t y = get_bits(gv->scopes, a + o_y, gv->w_y);
        bool concrete = parent1 == 0 || parent1 > gv->nlocal;
        if (name < sc->nnames) {
            name_prefetch(sc, name);
            name_ids[n] = name;
        } else {
            name_ids[n] = NAME_UNKNOWN;
        }
        out[n].file = file;
        out[n].line = line;
        out[n].inlined = !concrete;
        out[n].from_symtab = false;
        out[n].sym_addr = 0;
        n++;
        if (concrete) {
            uint64_t entry = sc->base + (uint32_t)(gv->gend - y);
            out[n - 1].from_symtab = x == SYMC_KIND_SYMTAB;
            for (size_t i = 0; i < n; i++)
                out[i].sym_addr = entry;
            break;
        }
        file = file_at(sc, x);
        line = y;
        s = parent1 - 1;
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
        out[k].qualified = NULL;
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
        const name_entry *e = &nb->name[i];
        out[k].mangled = nb->text + e->raw;
        if (__builtin_expect(e->qualified != e->raw, 0))
            out[k].qualified = nb->text + e->qualified;
        out[k].function = display_at((symcache *)sc, nb, i); /* the memos are all a lookup writes */
        __builtin_prefetch(out[k].function); /* the caller reads it next */
    }
}

/* The granule of `file_addr` and the unit inside it; false if the address lies before the
 * base or over 4 GiB past it. Past the last granule: its last unit (the sentinel's range). */
static inline __attribute__((always_inline)) bool locate(uint32_t *g, uint32_t *key, const symcache *sc,
                                                         uint64_t file_addr)
{
    if (file_addr < sc->base || file_addr - sc->base > UINT32_MAX)
        return false;
    uint32_t rel = (uint32_t)(file_addr - sc->base);
    *g = rel >> sc->gshift;
    *key = (rel >> sc->unit_shift) & (SYMC_GRANULE_UNITS - 1);
    if (*g >= sc->ngranules) {
        *g = sc->ngranules - 1;
        *key = SYMC_GRANULE_UNITS - 1;
    }
    return true;
}

size_t symcache_lookup(symcache_frame *out, size_t cap, const symcache *sc, uint64_t file_addr)
{
    uint32_t g, key;
    granule gv;
    if (cap == 0 || !locate(&g, &key, sc, file_addr))
        return 0;
    granule_prefetch(sc, g);
    if (!granule_at(&gv, sc, g))
        return 0;
    /* Two passes: the walk up the parents (all in the granule), then the names; the walk
     * starts loading each name's slot, so those misses overlap. */
    uint32_t name_ids[SYMCACHE_MAX_FRAMES];
    size_t n = walk_chain(out, name_ids, cap < SYMCACHE_MAX_FRAMES ? cap : SYMCACHE_MAX_FRAMES, sc, &gv,
                          find_record(&gv, key), file_addr);
    resolve_names(out, name_ids, n, sc);
    return n;
}

/* Addresses symcache_lookup_many works on at once: enough independent cache misses in flight
 * to cover the memory latency, few enough that the lines stay in L1 between the stages. */
#define SYMC_BATCH 16u

/* symcache_lookup_many, and with `ids_out` its _ids form: the name ids into ids_out (parallel
 * to out) instead of the names resolved. */
static inline __attribute__((always_inline)) size_t lookup_many(symcache_frame *out, uint32_t *ids_out, size_t cap,
                                                                size_t *ends, const symcache *sc,
                                                                const uint64_t *addrs, size_t n)
{
    /* Per address of a window: in the table's range, its granule and unit. Each stage starts
     * the next stage's cache misses for every address of the window (prefetch: granule index,
     * granule lines) before any of them waits for one. */
    bool in[SYMC_BATCH];
    uint32_t gr[SYMC_BATCH], key[SYMC_BATCH];
    uint32_t name_ids[SYMCACHE_MAX_FRAMES * SYMC_BATCH];
    size_t used = 0, done = 0;
    while (done < n) {
        size_t w = n - done < SYMC_BATCH ? n - done : SYMC_BATCH;
        const uint64_t *a = addrs + done;
        for (size_t j = 0; j < w; j++) {
            in[j] = locate(&gr[j], &key[j], sc, a[j]);
            if (in[j])
                __builtin_prefetch(sc->gindex + (size_t)gr[j] * 4);
        }
        for (size_t j = 0; j < w; j++)
            if (in[j])
                granule_prefetch(sc, gr[j]);
        /* the walks, in input order, into out */
        size_t first = used, j = 0;
        for (; j < w; j++) {
            size_t room = cap - used, k = 0;
            granule gv;
            if (in[j] && granule_at(&gv, sc, gr[j])) {
                size_t limit = room < SYMCACHE_MAX_FRAMES ? room : SYMCACHE_MAX_FRAMES;
                symcache_frame probe;
                uint32_t probe_id;
                uint32_t rec = find_record(&gv, key[j]);
                if (limit == 0) {
                    if (walk_chain(&probe, &probe_id, 1, sc, &gv, rec, a[j]) > 0) /* it has frames */
                        break;
                } else {
                    k = walk_chain(out + used, ids_out ? ids_out + used : name_ids + (used - first), limit, sc,
                                   &gv, rec, a[j]);
                    /* cut short by the room left (not by the frame cap): answer it in the next call */
                    if (k == limit && limit < SYMCACHE_MAX_FRAMES && out[used + k - 1].inlined)
                        break;
                }
            }
            used += k;
            ends[done + j] = used;
        }
        if (ids_out == NULL)
            resolve_names(out + first, name_ids, used - first, sc);
        else
            for (size_t k = first; k < used; k++) {
                out[k].function = NULL;
                out[k].mangled = NULL;
                out[k].qualified = NULL;
            }
        done += j;
        if (j < w)
            break;
    }
    return done;
}

size_t symcache_lookup_many(symcache_frame *out, size_t cap, size_t *ends, const symcache *sc, const uint64_t *addrs,
                            size_t n)
{
    return lookup_many(out, NULL, cap, ends, sc, addrs, n);
}

size_t symcache_lookup_many_ids(symcache_frame *out, uint32_t *name_ids, size_t cap, size_t *ends, const symcache *sc,
                                const uint64_t *addrs, size_t n)
{
    size_t got = lookup_many(out, name_ids, cap, ends, sc, addrs, n);
    size_t frames = got ? ends[got - 1] : 0;
    for (size_t k = 0; k < frames; k++)
        if (name_ids[k] == NAME_UNKNOWN)
            name_ids[k] = SYMCACHE_NO_NAME;
    return got;
}

/* A "DISP" group decoded for symcache_names: the raw and display forms and flags of each of its
 * names (symcache_format.h), checked: its check word, lengths inside the group, each form NUL-terminated where
 * its length says, the forms filling the text exactly. */
typedef struct {
    uint32_t g;       /* the group decoded (UINT32_MAX: none yet) */
    bool ok;          /* decoded and consistent: its forms may be used */
    char *bytes;      /* the decompressed group (scratch, owned) */
    size_t cap;
    const uint8_t *raw_len, *display_len, *flags; /* u32[count], u32[count], u8[count] in bytes */
    uint32_t raw_at[SYMC_DISPLAY_GROUP];          /* name i's raw form starts at bytes + raw_at[i] */
    uint32_t display_at[SYMC_DISPLAY_GROUP];      /* and its display form (unless the same) */
} display_group;

static void display_group_load(display_group *d, symcache *sc, uint32_t g)
{
    d->g = g;
    d->ok = false;
    uint32_t off = rd32(sc->disp_index + (size_t)g * 4), end = rd32(sc->disp_index + (size_t)g * 4 + 4);
    if (end - off < SYMC_DISPLAY_GROUP_HEADER)
        return;
    const uint8_t *group = sc->disp_frames + off, *block = group + SYMC_DISPLAY_GROUP_HEADER;
    size_t block_len = end - off - SYMC_DISPLAY_GROUP_HEADER, size = rd32(group);
    uint32_t count = g + 1 < sc->disp_ngroups ? SYMC_DISPLAY_GROUP : sc->nnames - g * SYMC_DISPLAY_GROUP;
    if (size < (size_t)count * 10 || size > SYMC_DISPLAY_GROUP_MAX || block_len > (size_t)LZ4_MAX_INPUT_SIZE ||
        rd32(group + 4) != symc_display_check(block, block_len))
        return;
    if (size > d->cap) {
        d->cap = size;
        d->bytes = xrealloc(d->bytes, d->cap);
    }
    /* LZ4_decompress_safe never reads past the block or writes past `size` bytes */
    if (LZ4_decompress_safe((const char *)block, d->bytes, (int)block_len, (int)size) != (int)size)
        return;
    const uint8_t *b = (const uint8_t *)d->bytes;
    d->raw_len = b;
    d->display_len = b + (size_t)count * 4;
    d->flags = b + (size_t)count * 8;
    size_t at = (size_t)count * 9;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t len = rd32(d->raw_len + (size_t)i * 4);
        if (len >= size - at || d->bytes[at + len] != '\0')
            return;
        d->raw_at[i] = (uint32_t)at;
        at += (size_t)len + 1;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t len = rd32(d->display_len + (size_t)i * 4);
        if (len == SYMC_DISPLAY_SAME)
            continue;
        if (at == size || len >= size - at || d->bytes[at + len] != '\0')
            return;
        d->display_at[i] = (uint32_t)at;
        at += (size_t)len + 1;
    }
    d->ok = at == size;
}

/* `len` bytes at s and a NUL, copied into sc's lookup memory. */
static const char *mem_copy(symcache *sc, const char *s, size_t len)
{
    char *copy = mem_alloc(sc, len + 1);
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

/* out for raw name `raw` (in sc's lookup memory or a memo block) and its display form
 * `display`, derived now when NULL (demangled: a file without usable display forms). */
static void name_derive(symcache_name *out, symcache *sc, const char *raw, size_t raw_len, const char *display)
{
    out->raw = raw;
    out->raw_len = (uint32_t)raw_len;
    out->raw_plain = symc_text_plain(raw, raw_len);
    out->display = display != NULL ? display : derive_display(sc, raw);
    if (out->display == raw) {
        out->display_len = out->raw_len;
        out->display_plain = out->raw_plain;
    } else {
        out->display_len = (uint32_t)strlen(out->display);
        out->display_plain = symc_text_plain(out->display, out->display_len);
    }
}

void symcache_names(symcache_name *out, const symcache *csc, const uint32_t *ids, size_t n)
{
    static const symcache_name unknown = {"??", "??", 2, 2, true, true};
    symcache *sc = (symcache *)csc; /* the lookup memory is all this writes */
    char *scratch = NULL;
    size_t scratch_cap = 0;
    display_group dg = {.g = UINT32_MAX};
    for (size_t i = 0; i < n;) {
        if (ids[i] >= sc->nnames) {
            out[i++] = unknown;
            continue;
        }
        /* the stored forms of the group, when the file has them: all this id needs */
        uint32_t g = ids[i] / SYMC_DISPLAY_GROUP;
        if (sc->disp_index != NULL && dg.g != g)
            display_group_load(&dg, sc, g);
        if (sc->disp_index != NULL && dg.ok) {
            /* the group's names asked for, copied into one piece of lookup memory: one
             * allocation (an atomic add on a counter the other thread's calls share) per group,
             * not two per name, and no padding between the strings */
            size_t end = i, bytes = 0;
            for (; end < n && ids[end] / SYMC_DISPLAY_GROUP == g; end++) {
                uint32_t k = ids[end] % SYMC_DISPLAY_GROUP, display_len = rd32(dg.display_len + (size_t)k * 4);
                bytes += (size_t)rd32(dg.raw_len + (size_t)k * 4) + 1 +
                         (display_len == SYMC_DISPLAY_SAME ? 0 : (size_t)display_len + 1);
            }
            char *to = mem_alloc(sc, bytes);
            for (; i < end; i++) {
                uint32_t k = ids[i] % SYMC_DISPLAY_GROUP;
                uint32_t raw_len = rd32(dg.raw_len + (size_t)k * 4), display_len = rd32(dg.display_len + (size_t)k * 4);
                uint8_t flags = dg.flags[k];
                symcache_name *o = &out[i];
                /* each form is NUL-terminated in the group (display_group_load checked it) */
                memcpy(to, dg.bytes + dg.raw_at[k], (size_t)raw_len + 1);
                o->raw = to;
                to += (size_t)raw_len + 1;
                o->raw_len = raw_len;
                o->raw_plain = (flags & SYMC_NAME_RAW_PLAIN) != 0;
                o->display_plain = (flags & SYMC_NAME_DISPLAY_PLAIN) != 0;
                if (display_len == SYMC_DISPLAY_SAME) {
                    o->display = o->raw;
                    o->display_len = raw_len;
                } else {
                    memcpy(to, dg.bytes + dg.display_at[k], (size_t)display_len + 1);
                    o->display = to;
                    to += (size_t)display_len + 1;
                    o->display_len = display_len;
                }
            }
            continue;
        }
        uint32_t k = ids[i] / SYMC_NAMES_PER_BLOCK;
        size_t end = i; /* ids[i, end): this block's */
        while (end < n && ids[end] / SYMC_NAMES_PER_BLOCK == k)
            end++;
        /* the block's names: from its memo when a lookup decompressed it already, else
         * decompressed into scratch and checked like a memo block */
        const char *name[SYMC_NAMES_PER_BLOCK];
        bool from_memo = false, ok = false;
        name_block *nb = atomic_load_explicit(&sc->name_memo[k], memory_order_acquire);
        if (nb != NULL) {
            from_memo = ok = nb != &corrupt_block;
        } else {
            size_t size = block_size(sc, k);
            if (size > scratch_cap) {
                scratch_cap = size;
                scratch = xrealloc(scratch, scratch_cap);
            }
            ok = size > 0 && block_decompress(sc, k, scratch, size) && block_split(sc, k, scratch, size, name);
        }
        for (size_t j = i; j < end; j++) {
            uint32_t at = ids[j] % SYMC_NAMES_PER_BLOCK;
            if (!ok || ids[j] >= sc->nnames) {
                out[j] = unknown;
            } else if (from_memo) {
                const char *raw = nb->text + nb->name[at].raw;
                name_derive(&out[j], sc, raw, strlen(raw), display_at(sc, nb, at));
            } else {
                /* the raw name of a scope-qualified one is what follows the mark */
                const char *mark = strchr(name[at], SYMC_SCOPE_MARK), *plain = mark ? mark + 1 : name[at];
                size_t len = strlen(plain);
                name_derive(&out[j], sc, mem_copy(sc, plain, len), len, NULL);
            }
        }
        i = end;
    }
    free(dg.bytes);
    free(scratch);
}

bool symcache_has_display_names(const symcache *sc)
{
    return sc->disp_index != NULL;
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

size_t symcache_size(const symcache *sc)
{
    return sc->len;
}

bool symcache_has_dwarf(const symcache *sc)
{
    return (sc->flags & SYMC_FLAG_DWARF) != 0;
}

bool symcache_hidden(const symcache *sc)
{
    return (sc->flags & SYMC_FLAG_HIDDEN) != 0;
}

bool symcache_revealed(const symcache *sc)
{
    return (sc->flags & SYMC_FLAG_REVEALED) != 0;
}

uint32_t symcache_range_count(const symcache *sc)
{
    return sc->nranges;
}

uint32_t symcache_function_count(const symcache *sc)
{
    return sc->nscopes;
}

uint32_t symcache_name_count(const symcache *sc)
{
    return sc->nnames;
}

/* ---- sections (version 6) -------------------------------------------------------------- */

static const symc_section *section_find(const symcache *sc, uint32_t tag)
{
    for (unsigned k = 0; k < sc->nsections; k++)
        if (sc->sections[k].tag == tag)
            return &sc->sections[k];
    return NULL;
}

bool symcache_has_unwind(const symcache *sc)
{
    return section_find(sc, SYMC_TAG_UNWIND) != NULL || section_find(sc, SYMC_TAG_DEBUG_FRAME) != NULL ||
           section_find(sc, SYMC_TAG_BREAKPAD_CFI) != NULL;
}

bool symcache_from_breakpad(const symcache *sc)
{
    return (sc->flags & SYMC_FLAG_BREAKPAD) != 0;
}

const uint8_t *symcache_section(const symcache *sc, uint32_t tag, size_t *len)
{
    const symc_section *s = section_find(sc, tag);
    *len = s ? s->len : 0;
    return s ? s->data : NULL;
}

_Static_assert(sizeof(unwind_entry) == 12 && sizeof(unwind_stack_size) == 8,
               "the unwind section's records are read in place");
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the unwind section's records are little-endian and read in place"
#endif

err_code symcache_unwind_image(unwind_image *out, const symcache *sc, err_info *err)
{
    memset(out, 0, sizeof *out);
    const symc_section *u = section_find(sc, SYMC_TAG_UNWIND);
    const symc_section *d = section_find(sc, SYMC_TAG_DEBUG_FRAME);
    const symc_section *bp = section_find(sc, SYMC_TAG_BREAKPAD_CFI);
    if (u == NULL && d == NULL && bp == NULL)
        return err_set(err, ERR_NOT_FOUND, "symcache has no unwind info");
    memcpy(out->uuid, sc->uuid, 16);
    out->text_vmaddr = sc->text_vmaddr;
    if (bp != NULL) { /* checked by its reader (common/breakpad) at each use */
        out->breakpad_cfi = bp->data;
        out->breakpad_cfi_len = bp->len;
    }
    if (u != NULL) {
        if (u->len < SYMC_UNWIND_HEADER)
            return err_set(err, ERR_INVALID, "corrupt symcache: unwind section of %u bytes", u->len);
        const uint8_t *p = u->data;
        uint32_t nentries = rd32(p + 8), nsizes = rd32(p + 12), eh_len = rd32(p + 16);
        uint64_t entries_end = SYMC_UNWIND_HEADER + (uint64_t)nentries * 12;
        uint64_t sizes_at = (entries_end + 7) & ~(uint64_t)7;
        uint64_t eh_at = sizes_at + (uint64_t)nsizes * 8;
        if (rd32(p + 20) != 0 || eh_at + eh_len != u->len)
            return err_set(err, ERR_INVALID, "corrupt symcache: unwind section tables need %llu bytes, it has %u",
                           (unsigned long long)(eh_at + eh_len), u->len);
        /* records are read in place: a caller's buffer (symcache_open_bytes) must be aligned */
        if (((uintptr_t)p & 7) != 0)
            return err_set(err, ERR_INVALID, "symcache bytes are not 8-byte aligned");
        const unwind_entry *e = (const unwind_entry *)(const void *)(p + SYMC_UNWIND_HEADER);
        const unwind_stack_size *z = (const unwind_stack_size *)(const void *)(p + sizes_at);
        /* binary searches need order: O(n) once per call */
        for (uint32_t i = 0; i < nentries; i++)
            if (e[i].func_start > e[i].func_end || (i > 0 && e[i].func_start < e[i - 1].func_end))
                return err_set(err, ERR_INVALID, "corrupt symcache: unwind entry %u out of order", i);
        for (uint32_t i = 1; i < nsizes; i++)
            if (z[i].func_start <= z[i - 1].func_start)
                return err_set(err, ERR_INVALID, "corrupt symcache: stack size %u out of order", i);
        out->entries = nentries ? e : NULL;
        out->nentries = nentries;
        out->stack_sizes = nsizes ? z : NULL;
        out->nstack_sizes = nsizes;
        out->eh_frame = eh_len ? p + eh_at : NULL;
        out->eh_frame_len = eh_len;
        out->eh_frame_vmaddr = eh_len ? rd64(p) : 0;
    }
    if (d != NULL) {
        if (d->len < 8)
            return err_set(err, ERR_INVALID, "corrupt symcache: debug_frame section of %u bytes", d->len);
        out->debug_frame_vmaddr = rd64(d->data);
        out->debug_frame = d->len > 8 ? d->data + 8 : NULL;
        out->debug_frame_len = d->len - 8;
    }
    return ERR_OK;
}

/* Append one section (tag, body) to `out`, which ends at its core or at a section's end. */
static void section_append(buf *out, uint32_t tag, const uint8_t *body, size_t len)
{
    static const uint8_t zero[8];
    if (out->len & 7)
        buf_append(out, zero, 8 - (out->len & 7));
    buf_append_u32le(out, tag);
    buf_append_u32le(out, (uint32_t)len);
    buf_append(out, body, len);
    if (len & 7)
        buf_append(out, zero, 8 - (len & 7));
}

void symcache_section_append(buf *out, uint32_t tag, const uint8_t *body, size_t len)
{
    section_append(out, tag, body, len);
}

/* offsets_only - a Breakpad .sym's symcache whose sections (if any) are all "BPC1": nothing
 * in it depends on the image's __TEXT vmaddr, which the .sym does not give (it says 0) */
static bool offsets_only(const symcache *sc)
{
    bool only = (sc->flags & SYMC_FLAG_BREAKPAD) != 0;
    for (unsigned k = 0; k < sc->nsections; k++)
        only &= sc->sections[k].tag == SYMC_TAG_BREAKPAD_CFI;
    return only;
}

err_code symcache_merge(buf *out, const symcache *base, const symcache *other, err_info *err)
{
    /* a .sym's symcache joins any symcache of the image: as `other`, its section holds module
     * offsets; as `base`, its header moves to the other's __TEXT vmaddr (the base address
     * with it: every address of the core is an offset from that base) */
    bool moved = base->text_vmaddr != other->text_vmaddr;
    if (memcmp(base->uuid, other->uuid, 16) != 0 || base->cputype != other->cputype ||
        (moved && !offsets_only(other) && !offsets_only(base)))
        return err_set(err, ERR_INVALID, "merging symcaches of different images (UUID, arch or __TEXT address)");
    bool rebase = moved && !offsets_only(other);
    size_t start = out->len;
    buf_append(out, base->data, base->core_len);
    /* the merged file is this version's: the core's layout is the same since version 5 */
    uint8_t v[4] = {SYMCACHE_VERSION & 0xff, 0, 0, 0};
    memcpy(out->data + start + 8, v, 4);
    if (rebase) {
        uint64_t vm = other->text_vmaddr, at = base->base + (other->text_vmaddr - base->text_vmaddr);
        for (int i = 0; i < 8; i++) {
            out->data[start + 40 + i] = (uint8_t)(vm >> (8 * i));
            out->data[start + 48 + i] = (uint8_t)(at >> (8 * i));
        }
    }
    /* the base's own "DISP" stays, unless it is a version-8 one (zstd groups): the merged file
     * is read as this version's */
    for (unsigned k = 0; k < base->nsections; k++)
        if (base->sections[k].tag != SYMC_TAG_DISPLAY || base->version >= SYMC_DISPLAY_MIN_VERSION)
            section_append(out, base->sections[k].tag, base->sections[k].data, base->sections[k].len);
    /* another file's display names belong to its own core's name ids: never taken */
    for (unsigned k = 0; k < other->nsections; k++)
        if (other->sections[k].tag != SYMC_TAG_DISPLAY && section_find(base, other->sections[k].tag) == NULL)
            section_append(out, other->sections[k].tag, other->sections[k].data, other->sections[k].len);
    return ERR_OK;
}

static bool section_bytes(const macho_section *s)
{
    return s != NULL && s->data != NULL && s->size > 0 && s->size < UINT32_MAX / 2;
}

err_code symcache_unwind_append(buf *out, const macho_image *img, err_info *err)
{
    const macho_section *ui = macho_section_find(img, "__TEXT", "__unwind_info");
    const macho_section *eh = macho_section_find(img, "__TEXT", "__eh_frame");
    const macho_section *df = macho_section_find(img, "__DWARF", "__debug_frame");
    err_code rc = ERR_OK;
    arena *a = arena_new(0);
    buf body;
    buf_init(&body);
    /* only a compact unwind table makes "UNWI": the walker reaches __eh_frame through its
     * DWARF encodings, and llvm's dsymutil copies __eh_frame (not __unwind_info) into a dSYM,
     * whose section must not stand in for the executable's in a merge */
    if (section_bytes(ui)) {
        unwind_entry *entries = NULL;
        unwind_stack_size *sizes = NULL;
        size_t n = 0, nsizes = 0;
        rc = unwind_compact_list(&entries, &n, ui->data, (size_t)ui->size, a, err);
        if (rc != ERR_OK) {
            err_prefix(err, "__unwind_info");
            goto done;
        }
        /* x86_64 frameless functions with an indirect stack size: their immediates now, so
         * that __TEXT's bytes need not be kept. __TEXT's file bytes start where a __TEXT
         * section's vm address and file offset agree on it. */
        const macho_section *t = macho_section_find(img, "__TEXT", "__text");
        if (img->cputype == MACHO_CPU_TYPE_X86_64 && t != NULL &&
            t->offset != 0 && t->addr >= img->text_vmaddr && t->addr - img->text_vmaddr <= t->offset) {
            uint64_t fo = t->offset - (t->addr - img->text_vmaddr);
            if (fo <= img->len) {
                rc = unwind_stack_sizes(&sizes, &nsizes, entries, n, img->data + fo, img->len - (size_t)fo, a, err);
                if (rc != ERR_OK)
                    goto done;
            }
        }
        uint32_t eh_len = section_bytes(eh) ? (uint32_t)eh->size : 0;
        buf_append_u64le(&body, eh_len ? eh->addr : 0);
        buf_append_u32le(&body, (uint32_t)n);
        buf_append_u32le(&body, (uint32_t)nsizes);
        buf_append_u32le(&body, eh_len);
        buf_append_u32le(&body, 0);
        for (size_t i = 0; i < n; i++) {
            buf_append_u32le(&body, entries[i].func_start);
            buf_append_u32le(&body, entries[i].func_end);
            buf_append_u32le(&body, entries[i].encoding);
        }
        static const uint8_t zero[8];
        if (body.len & 7)
            buf_append(&body, zero, 8 - (body.len & 7));
        for (size_t i = 0; i < nsizes; i++) {
            buf_append_u32le(&body, sizes[i].func_start);
            buf_append_u32le(&body, sizes[i].imm);
        }
        if (eh_len)
            buf_append(&body, eh->data, eh_len);
        section_append(out, SYMC_TAG_UNWIND, body.data, body.len);
    }
    if (section_bytes(df)) {
        body.len = 0;
        buf_append_u64le(&body, df->addr);
        buf_append(&body, df->data, (size_t)df->size);
        section_append(out, SYMC_TAG_DEBUG_FRAME, body.data, body.len);
    }
done:
    buf_reset(&body);
    arena_free(a);
    return rc;
}

err_code symcache_scan_image(unwind_image *out, const symcache *sc, err_info *err)
{
    err_info uerr = {0};
    err_code rc = symcache_unwind_image(out, sc, &uerr);
    if (rc != ERR_OK) { /* no unwind info (or unreadable): the symbols still bound the scan */
        memset(out, 0, sizeof *out);
        memcpy(out->uuid, sc->uuid, 16);
        out->text_vmaddr = sc->text_vmaddr;
    }
    out->covers = symcache_covers;
    out->symbols = sc;
    if (rc == ERR_INVALID)
        return err_set(err, rc, "%s", uerr.msg);
    return ERR_OK;
}

bool symcache_covers(const void *symbols, uint64_t rel)
{
    const symcache *c = symbols;
    symcache_frame f;
    return symcache_lookup(&f, 1, c, rel + c->text_vmaddr) > 0 && f.function != NULL &&
           strcmp(f.function, "??") != 0;
}
