/*
 * stacksift lookup -o INPUT [--arch ARCH] [--symbol-maps DIR] [-l LOAD_ADDRESS] [-i] [--json] [--mangled] ADDRESS...
 *
 * atos-compatible. INPUT is a .symc, a dSYM bundle, a zip of bundles or a Mach-O; anything but
 * a .symc is converted into a temp directory first. With -l the addresses are runtime
 * addresses of the image loaded at LOAD_ADDRESS (file address = address - load address +
 * __TEXT vmaddr); without it they are file addresses. No addresses on the command line:
 * read them from stdin, one per line.
 *
 * Plain output, one line per frame as atos prints it:
 *   function (in Image) (file:line)      DWARF knows the address
 *   function (in Image) + offset         only the symbol table does
 *   0x1000                               nothing covers the address
 * Without -i only the concrete function is named (with the innermost line); -i prints every
 * inlined frame, innermost first. --json prints one object per address with all frames, each
 * with "mangled" (the raw linkage name) when that differs from "function". --mangled prints
 * raw names (`_ZN...`, `$s...`) where function names go.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/radix.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/cli_tmpdir.h"
#include "dsym/dsym.h"
#include "macho/macho.h"
#include "symcache/symcache.h"

typedef struct {
    char paths[MACHO_MAX_SLICES * 4][4096];
    char arches[MACHO_MAX_SLICES * 4][16];
    size_t n;
} built_list;

static void remember(const dsym_built *b, void *ctx)
{
    built_list *l = ctx;
    if (l->n < sizeof l->paths / sizeof l->paths[0]) {
        snprintf(l->paths[l->n], sizeof l->paths[0], "%s", b->path);
        snprintf(l->arches[l->n], sizeof l->arches[0], "%s", b->arch);
        l->n++;
    }
}

static bool is_symcache_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[8] = {0};
    if (f == NULL)
        return false;
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == 8 && memcmp(magic, "STKSYMC", 8) == 0;
}

/* Open the symcache for INPUT/--arch; converts non-.symc input into tmp_dir. */
static int open_input(symcache **out, const char *input, const char *arch,
                      const char *symbol_maps, char *tmp_dir)
{
    err_info err = {0};
    if (is_symcache_file(input)) {
        if (symcache_open(out, input, &err) != ERR_OK) {
            fprintf(stderr, "stacksift: %s\n", err.msg);
            return 1;
        }
        if (arch != NULL && strcmp(symcache_arch(*out), arch) != 0) {
            fprintf(stderr, "stacksift: %s is %s, not %s\n", input, symcache_arch(*out), arch);
            symcache_close(*out);
            *out = NULL;
            return 1;
        }
        return 0;
    }
    if (cli_tmpdir_make(tmp_dir, 4096, "lookup") != 0) {
        fprintf(stderr, "stacksift: cannot create a temp directory: %s\n", strerror(errno));
        return 1;
    }
    built_list *l = calloc(1, sizeof *l);
    int status = 1;
    if (l == NULL)
        abort();
    /* an App Store dSYM's names: its maps beside it or in --symbol-maps */
    dsym_options opts = {.maps_beside = true, .symbol_maps_dir = symbol_maps};
    if (dsym_build_symcaches(input, tmp_dir, &opts, remember, l, &err) != ERR_OK) {
        fprintf(stderr, "stacksift: %s\n", err.msg);
        goto done;
    }
    size_t pick = l->n;
    for (size_t i = 0; i < l->n; i++) {
        if (arch != NULL ? strcmp(l->arches[i], arch) == 0 : (l->n == 1 || strcmp(l->arches[i], "arm64") == 0)) {
            pick = i;
            break;
        }
    }
    if (pick == l->n && arch == NULL && l->n > 0)
        pick = 0; /* no arm64 slice: the first one, as atos takes the first match */
    if (pick == l->n) {
        fprintf(stderr, "stacksift: %s has no %s slice (has:", input, arch ? arch : "matching");
        for (size_t i = 0; i < l->n; i++)
            fprintf(stderr, " %s", l->arches[i]);
        fprintf(stderr, ")\n");
        goto done;
    }
    if (symcache_open(out, l->paths[pick], &err) != ERR_OK) {
        fprintf(stderr, "stacksift: %s\n", err.msg);
        goto done;
    }
    status = 0;
done:
    free(l);
    return status;
}

static bool parse_hex(const char *s, uint64_t *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (*s == '\0')
        return false;
    uint64_t v = 0;
    int digits = 0;
    for (; *s && *s != '\n' && *s != '\r' && *s != ' ' && *s != '\t'; s++) {
        int c = (unsigned char)*s, d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        if (++digits > 16)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    if (*s != '\0')
        return false;
    *out = v;
    return true;
}

/* "0x" + lower-case hex of v into out; returns the length */
static size_t format_hex(char *out, uint64_t v)
{
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    out[0] = '0', out[1] = 'x';
    for (size_t i = 0; i < n; i++)
        out[2 + i] = tmp[n - 1 - i];
    return n + 2;
}

/* decimal of v into out; returns the length */
static size_t format_u64(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* The answers of a batch (tens of MB for 100,000 --json -i addresses): one anonymous mapping
 * with transparent huge pages where the kernel offers them (a 4 KiB page fault per 4 KiB of
 * output cost more than the lookups), grown with mremap. */
typedef struct {
    char *data;
    size_t len, cap;
} arena;

static void arena_grow(arena *a, size_t need)
{
    size_t cap = a->cap ? a->cap : (size_t)1 << 21;
    while (cap - a->len < need)
        cap *= 2;
    void *p = a->data == NULL ? mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                              : mremap(a->data, a->cap, cap, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) {
        fprintf(stderr, "stacksift: out of memory for %zu bytes of answers\n", cap);
        exit(1);
    }
#ifdef MADV_HUGEPAGE
    madvise(p, cap, MADV_HUGEPAGE); /* advice only: without huge pages it still works */
#endif
    a->data = p;
    a->cap = cap;
}

static inline void put(arena *a, const void *p, size_t n)
{
    if (a->cap - a->len < n)
        arena_grow(a, n);
    memcpy(a->data + a->len, p, n);
    a->len += n;
}

#define PUT_LIT(a, lit) put((a), (lit), sizeof(lit) - 1)

/* A frame's source path as its JSON member prints it: `,"file":"<escaped path>"`, made once per
 * path and thread (a batch prints a few hundred paths hundreds of thousands of times). Paths
 * point into the mapped symcache, one pointer per path, so the pointer is the key. */
enum { FILE_SLOTS = 1024 };
typedef struct {
    const char *path; /* key; NULL: empty slot */
    char *json;       /* owned */
    size_t len;
} file_slot;

typedef struct {
    const symcache *sc;
    bool has_load, inlines, json, mangled;
    uint64_t load;
    arena out;
    file_slot *files; /* FILE_SLOTS, direct-mapped; NULL until the first JSON frame with a file */
    int status;
} lookup_ctx;

static void put_str(arena *a, const char *s)
{
    put(a, s, strlen(s));
}

/* The name a frame is shown by: display form, or raw with --mangled. */
static const char *shown_name(const lookup_ctx *c, const symcache_frame *f)
{
    return c->mangled && f->mangled != NULL ? f->mangled : f->function;
}

static void emit_plain(lookup_ctx *c, const symcache_frame *f, uint64_t file_addr, const symcache_frame *loc)
{
    char num[24];
    put_str(&c->out, shown_name(c, f));
    PUT_LIT(&c->out, " (in ");
    put_str(&c->out, symcache_image_name(c->sc));
    if (loc->file != NULL && !f->from_symtab) {
        const char *base = strrchr(loc->file, '/');
        PUT_LIT(&c->out, ") (");
        put_str(&c->out, base ? base + 1 : loc->file);
        PUT_LIT(&c->out, ":");
        put(&c->out, num, format_u64(num, loc->line));
        PUT_LIT(&c->out, ")\n");
    } else {
        PUT_LIT(&c->out, ") + ");
        put(&c->out, num, format_u64(num, file_addr - f->sym_addr));
        PUT_LIT(&c->out, "\n");
    }
}

/* A distinct name as the JSON answers print it, worked out once per batch (a name is printed
 * for every address whose chain has it: a hot function's long template or Swift name can be
 * printed thousands of times in a batch). `shown` and `raw` are the contents of the JSON
 * strings, escaped, quotes not included. */
typedef struct {
    const char *shown; /* "function": the display name, or the raw one with --mangled */
    const char *raw;   /* "mangled": the raw name; NULL when it is the display name (no member) */
    uint32_t shown_len, raw_len;
    char *owned;       /* escaped copies of names that needed escaping (rare), or NULL */
} name_out;

/* *out for name `nm` (symcache_names: its lengths and whether it needs escaping are known),
 * with --mangled or not. */
static void name_out_init(name_out *out, const symcache_name *nm, bool mangled)
{
    bool same = nm->raw == nm->display;
    const char *shown = mangled ? nm->raw : nm->display;
    size_t shown_len = mangled ? nm->raw_len : nm->display_len, raw_len = same ? 0 : nm->raw_len;
    const char *member = same ? NULL : nm->raw;
    *out = (name_out){.shown = shown, .raw = member, .shown_len = (uint32_t)shown_len, .raw_len = (uint32_t)raw_len};
    bool plain = (mangled ? nm->raw_plain : nm->display_plain) && (same || nm->raw_plain);
    if (plain)
        return;
    /* escape both into one owned block: "shown""raw", then point inside the quotes */
    buf b;
    buf_init(&b);
    buf_append_json_str(&b, shown, shown_len);
    size_t split = b.len;
    if (member != NULL)
        buf_append_json_str(&b, member, raw_len);
    out->owned = (char *)b.data; /* the buf's memory (malloc'd), now the batch's */
    out->shown = out->owned + 1;
    out->shown_len = (uint32_t)(split - 2);
    if (member != NULL) {
        out->raw = out->owned + split + 1;
        out->raw_len = (uint32_t)(b.len - split - 2);
    }
}

/* The `,"file":"..."` member of `path` (NULL: `,"file":null`), from c's cache. */
static const file_slot *file_json(lookup_ctx *c, const char *path)
{
    static const file_slot none = {NULL, (char *)",\"file\":null", sizeof ",\"file\":null" - 1};
    if (path == NULL)
        return &none;
    if (c->files == NULL)
        c->files = xcalloc(FILE_SLOTS, sizeof *c->files);
    file_slot *f = &c->files[((uintptr_t)path >> 3) % FILE_SLOTS];
    if (f->path == path)
        return f;
    buf b;
    buf_init(&b);
    buf_append_str(&b, ",\"file\":");
    buf_append_json_str(&b, path, strlen(path));
    free(f->json);
    *f = (file_slot){path, (char *)b.data, b.len};
    return f;
}

static void files_free(lookup_ctx *c)
{
    if (c->files == NULL)
        return;
    for (size_t i = 0; i < FILE_SLOTS; i++)
        free(c->files[i].json);
    free(c->files);
    c->files = NULL;
}

static inline char *put_bytes(char *d, const void *p, size_t n)
{
    memcpy(d, p, n);
    return d + n;
}

#define PUT_BYTES_LIT(d, lit) put_bytes((d), (lit), sizeof(lit) - 1)

/* Append the JSON answer for one address: `n` frames whose names are names[ids[k]]
 * (SYMCACHE_NO_NAME: "??"). Every frame's bytes are bounded ahead (its names, its file member,
 * the literals and three numbers), so the buffer is checked once a frame and written through a
 * plain pointer. */
static void answer_json(lookup_ctx *c, uint64_t addr, uint64_t file_addr, const symcache_frame *frames,
                        const uint32_t *ids, const name_out *names, size_t n)
{
    static const name_out unknown = {.shown = "??", .shown_len = 2};
    enum { FRAME_FIXED = 160 }; /* literals + 3 numbers of one frame, the address's own bytes */
    if (c->out.cap - c->out.len < FRAME_FIXED)
        arena_grow(&c->out, FRAME_FIXED);
    char *d = c->out.data + c->out.len;
    d = PUT_BYTES_LIT(d, "{\"address\":\"");
    d += format_hex(d, addr);
    d = PUT_BYTES_LIT(d, "\",\"frames\":[");
    for (size_t i = 0; i < n; i++) {
        const symcache_frame *f = &frames[i];
        const name_out *nm = ids[i] == SYMCACHE_NO_NAME ? &unknown : &names[ids[i]];
        const file_slot *file = file_json(c, f->file);
        size_t need = (size_t)nm->shown_len + nm->raw_len + file->len + FRAME_FIXED;
        c->out.len = (size_t)(d - c->out.data);
        if (c->out.cap - c->out.len < need) {
            arena_grow(&c->out, need); /* moves the buffer */
            d = c->out.data + c->out.len;
        }
        if (i)
            *d++ = ',';
        d = PUT_BYTES_LIT(d, "{\"function\":\"");
        d = put_bytes(d, nm->shown, nm->shown_len);
        if (nm->raw != NULL) {
            d = PUT_BYTES_LIT(d, "\",\"mangled\":\"");
            d = put_bytes(d, nm->raw, nm->raw_len);
        }
        *d++ = '"';
        d = put_bytes(d, file->json, file->len);
        d = PUT_BYTES_LIT(d, ",\"line\":");
        d += format_u64(d, f->line);
        if (f->inlined)
            d = PUT_BYTES_LIT(d, ",\"inlined\":true");
        else
            d = PUT_BYTES_LIT(d, ",\"inlined\":false");
        if (f->from_symtab) {
            d = PUT_BYTES_LIT(d, ",\"symbol_offset\":");
            d += format_u64(d, file_addr - f->sym_addr);
        }
        *d++ = '}';
    }
    d = PUT_BYTES_LIT(d, "]}\n");
    c->out.len = (size_t)(d - c->out.data);
}

/* Append the plain (atos) answer for one address (its `n` frames) to c->out. */
static void answer_plain(lookup_ctx *c, uint64_t addr, uint64_t file_addr, const symcache_frame *frames, size_t n)
{
    if (n == 0) {
        char num[24];
        put(&c->out, num, format_hex(num, addr));
        PUT_LIT(&c->out, "\n");
    } else if (c->inlines) {
        for (size_t i = 0; i < n; i++)
            emit_plain(c, &frames[i], file_addr, &frames[i]);
    } else {
        emit_plain(c, &frames[n - 1], file_addr, &frames[0]);
    }
}

typedef struct {
    uint64_t addr, file_addr;
    size_t first;  /* its frames: frames[part][first] ... (lookup_all) */
    uint8_t n;     /* how many (<= SYMCACHE_MAX_FRAMES) */
    uint8_t part;  /* which lookup thread's frame array */
} query;

typedef struct {
    uint64_t file_addr;
    size_t index; /* into the query array */
} query_key;

/* Sort keys by file address, ties in input order (a stable radix sort: qsort was 5% of a
 * batch). */
DEFINE_RADIX_SORT(sort_keys, query_key, file_addr)

/* Write `n` bytes at `p` to stdout, retrying short writes; false on an error. */
static bool write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* A growing array of frames in anonymous memory (huge pages where offered), grown by mremap. */
typedef struct {
    symcache_frame *v;
    uint32_t *ids; /* ids[k]: frame k's name id (symcache_lookup_many_ids) */
    size_t len, cap, ids_cap;
} frame_array;

static void frames_reserve(frame_array *f, size_t more)
{
    if (f->cap - f->len >= more)
        return;
    arena a = {(char *)f->v, f->len * sizeof *f->v, f->cap * sizeof *f->v};
    arena_grow(&a, more * sizeof *f->v);
    f->v = (symcache_frame *)a.data;
    f->cap = a.cap / sizeof *f->v;
    arena ia = {(char *)f->ids, f->len * sizeof *f->ids, f->ids_cap * sizeof *f->ids};
    arena_grow(&ia, (f->cap - f->len) * sizeof *f->ids);
    f->ids = (uint32_t *)ia.data;
    f->ids_cap = ia.cap / sizeof *f->ids;
}

/* Look up queries [from, to) of `order` (address order: neighbouring lookups share cache lines
 * and pages of the symcache, half the time of input order on 100,000 random addresses) with
 * symcache_lookup_many_ids, LOOKUP_CHUNK addresses a call so that their cache misses overlap;
 * each query's frames (names not resolved yet: see names_phase) are appended to `f` and found
 * through q[].first/.n/.part. */
static void lookup_range(const symcache *sc, query *q, const query_key *order, size_t from, size_t to,
                         frame_array *f, uint8_t part)
{
    enum { LOOKUP_CHUNK = 256 };
    uint64_t addrs[LOOKUP_CHUNK];
    size_t ends[LOOKUP_CHUNK];
    for (size_t i = from; i < to;) {
        size_t m = to - i < LOOKUP_CHUNK ? to - i : LOOKUP_CHUNK;
        for (size_t k = 0; k < m; k++)
            addrs[k] = order[i + k].file_addr;
        /* room for 8 frames an address, and never less than one address's most */
        frames_reserve(f, (size_t)LOOKUP_CHUNK * 8);
        size_t got = symcache_lookup_many_ids(f->v + f->len, f->ids + f->len, f->cap - f->len, ends, sc, addrs, m);
        for (size_t k = 0; k < got; k++) {
            query *x = &q[order[i + k].index];
            size_t at = k ? ends[k - 1] : 0;
            x->first = f->len + at;
            x->n = (uint8_t)(ends[k] - at);
            x->part = part;
        }
        f->len += got ? ends[got - 1] : 0;
        i += got;
    }
}

/* The printing half of a batch: answers are formatted in input order, a block of queries at a
 * time, into a buffer each thread reuses, and written in block order (threads take turns:
 * `turn` is the next block to write). Formatting one block while the other thread writes its
 * own, and never holding the whole output (tens of MB of fresh pages whose zeroing by the
 * kernel cost a third of a 100,000-address batch). */
typedef struct {
    const lookup_ctx *proto;
    const query *q;
    size_t n, nblocks;
    frame_array frames[2];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t turn;
    bool failed; /* a write failed: stop */
    size_t lookup_from, lookup_to; /* the second thread's share of the address order */
    query *qw;
    const query_key *order;
    /* the distinct name ids of all frames, ascending, and their names (names_phase) */
    uint32_t *uniq;
    size_t nuniq;
    /* an id's index in uniq is its rank among the ids in it: seen[] is the ids' bitmap, and
     * rank[w] the ids below w * 64 (110 KB for 582,000 names, where an array of the index by id
     * was 2.3 MB of fresh pages written at random) */
    uint64_t *seen;
    uint32_t *rank;
    size_t nnames;
    symcache_name *nm;           /* nm[i]: uniq[i]'s name (plain output only: --json keeps names) */
    name_out *names;             /* names[i]: uniq[i] as --json prints it (only with --json) */
    atomic_size_t next_chunk;    /* resolve_names: the next chunk of uniq to take */
} batch;

/* The distinct name ids of both threads' frames, ascending (a bitmap over the name ids). */
static void collect_names(batch *b, const symcache *sc)
{
    size_t nnames = symcache_name_count(sc), words = (nnames + 63) / 64;
    uint64_t *seen = xcalloc(words ? words : 1, sizeof *seen);
    uint32_t *rank = xmalloc((words ? words : 1) * sizeof *rank);
    size_t count = 0;
    for (int t = 0; t < 2; t++)
        for (size_t k = 0; k < b->frames[t].len; k++) {
            uint32_t id = b->frames[t].ids[k];
            if (id < nnames && !(seen[id / 64] >> (id % 64) & 1)) {
                seen[id / 64] |= (uint64_t)1 << (id % 64);
                count++;
            }
        }
    b->uniq = xcalloc(count ? count : 1, sizeof *b->uniq);
    /* --json prints from names[] alone (nm was 4 MB more of fresh pages), the plain output from nm[] */
    if (b->proto->json)
        b->names = xcalloc(count ? count : 1, sizeof *b->names);
    else
        b->nm = xcalloc(count ? count : 1, sizeof *b->nm);
    size_t at = 0;
    for (size_t w = 0; w < words; w++) {
        rank[w] = (uint32_t)at;
        for (uint64_t bits = seen[w]; bits; bits &= bits - 1)
            b->uniq[at++] = (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(bits));
    }
    b->nuniq = at;
    b->seen = seen;
    b->rank = rank;
    b->nnames = nnames;
}

/* The index in uniq of name id `id` (one that collect_names saw). */
static inline uint32_t uniq_index(const batch *b, uint32_t id)
{
    uint64_t below = b->seen[id / 64] & (((uint64_t)1 << (id % 64)) - 1);
    return b->rank[id / 64] + (uint32_t)__builtin_popcountll(below);
}

/* Resolve the distinct ids' names, a chunk of NAMES_CHUNK ids (cut at a boundary of
 * SYMCACHE_NAME_GROUP ids, so that no name block or group of display forms is decompressed
 * twice) at a time, taking chunks from a counter
 * shared by the threads: demangling costs differ a lot between names (sorted names put the
 * long templates together), so fixed halves left one thread waiting for the other. */
enum { NAMES_CHUNK = 1024 };

static void resolve_names(batch *b, const symcache *sc)
{
    symcache_name *tmp = NULL; /* --json: a chunk's names until they are made into names[] */
    size_t tmp_cap = 0;
    for (;;) {
        size_t c = atomic_fetch_add_explicit(&b->next_chunk, 1, memory_order_relaxed);
        size_t from = c * NAMES_CHUNK, to = from + NAMES_CHUNK;
        if (from >= b->nuniq)
            break;
        to = to < b->nuniq ? to : b->nuniq;
        while (from > 0 && from < b->nuniq &&
               b->uniq[from] / SYMCACHE_NAME_GROUP == b->uniq[from - 1] / SYMCACHE_NAME_GROUP)
            from++; /* the previous chunk took the rest of that group */
        while (to < b->nuniq && b->uniq[to] / SYMCACHE_NAME_GROUP == b->uniq[to - 1] / SYMCACHE_NAME_GROUP)
            to++;
        if (from >= to)
            continue;
        if (b->names == NULL) {
            symcache_names(b->nm + from, sc, b->uniq + from, to - from);
            continue;
        }
        if (to - from > tmp_cap) {
            tmp_cap = to - from;
            tmp = xreallocarray(tmp, tmp_cap, sizeof *tmp);
        }
        symcache_names(tmp, sc, b->uniq + from, to - from);
        for (size_t i = from; i < to; i++)
            name_out_init(&b->names[i], &tmp[i - from], b->proto->mangled);
    }
    free(tmp);
}

/* Give frames[t] their names; each frame's id becomes the index of its name in uniq (and so in
 * names), SYMCACHE_NO_NAME staying as it is (and an id past the symcache's names becoming it).
 * The frames' name pointers are set for the plain output only. */
static void fill_names(batch *b, int t)
{
    frame_array *f = &b->frames[t];
    for (size_t k = 0; k < f->len; k++) {
        uint32_t id = f->ids[k];
        if (id == SYMCACHE_NO_NAME || id >= b->nnames) {
            f->ids[k] = SYMCACHE_NO_NAME;
            f->v[k].function = "??";
            f->v[k].mangled = NULL;
            continue;
        }
        uint32_t at = uniq_index(b, id);
        f->ids[k] = at;
        if (b->nm != NULL) { /* --json prints from names[ids[k]] */
            f->v[k].function = b->nm[at].display;
            f->v[k].mangled = b->nm[at].raw;
        }
    }
}

enum { PRINT_BLOCK = 1024, PREFETCH_AHEAD = 8, PREFETCH_FRAMES = 4 };

/* The prefetches of the plain output for answer i of [.., to): frames 2 * PREFETCH_AHEAD ahead,
 * the names they point to PREFETCH_AHEAD ahead. */
static inline void prefetch_plain(const batch *b, size_t i, size_t to)
{
    if (i + 2 * PREFETCH_AHEAD < to) {
        const query *y = &b->q[i + 2 * PREFETCH_AHEAD];
        __builtin_prefetch(b->frames[y->part].v + y->first);
        __builtin_prefetch(b->frames[y->part].v + y->first + 1);
    }
    if (i + PREFETCH_AHEAD < to) {
        const query *y = &b->q[i + PREFETCH_AHEAD];
        const symcache_frame *f = b->frames[y->part].v + y->first;
        for (unsigned k = 0; k < y->n && k < 3; k++) {
            __builtin_prefetch(f[k].function);
            __builtin_prefetch(f[k].function + 64);
            if (f[k].mangled != NULL) { /* NULL with "??" */
                __builtin_prefetch(f[k].mangled);
                __builtin_prefetch(f[k].mangled + 64);
            }
        }
    }
}

/* The prefetches of the JSON output for answer i: its frames and their name indexes three
 * strides ahead, the name_out entries those index two ahead, the names' first bytes one ahead
 * (each a miss of its own in a random batch: the indexes and entries were most of the
 * printing's stalls). */
static inline void prefetch_json(const batch *b, size_t i, size_t to)
{
    if (i + 3 * PREFETCH_AHEAD < to) {
        const query *y = &b->q[i + 3 * PREFETCH_AHEAD];
        const frame_array *fa = &b->frames[y->part];
        const char *v = (const char *)(fa->v + y->first);
        unsigned n = y->n < PREFETCH_FRAMES ? y->n : PREFETCH_FRAMES;
        for (size_t at = 0; at < n * sizeof(symcache_frame); at += 64)
            __builtin_prefetch(v + at);
        __builtin_prefetch(fa->ids + y->first);
    }
    if (i + 2 * PREFETCH_AHEAD < to) {
        const query *y = &b->q[i + 2 * PREFETCH_AHEAD];
        const uint32_t *ids = b->frames[y->part].ids + y->first;
        for (unsigned k = 0; k < y->n && k < PREFETCH_FRAMES; k++)
            if (ids[k] != SYMCACHE_NO_NAME)
                __builtin_prefetch(&b->names[ids[k]]);
    }
    if (i + PREFETCH_AHEAD < to) {
        const query *y = &b->q[i + PREFETCH_AHEAD];
        const uint32_t *ids = b->frames[y->part].ids + y->first;
        for (unsigned k = 0; k < y->n && k < PREFETCH_FRAMES; k++) {
            if (ids[k] == SYMCACHE_NO_NAME)
                continue;
            const name_out *nm = &b->names[ids[k]];
            __builtin_prefetch(nm->shown);
            __builtin_prefetch(nm->shown + 64);
            if (nm->raw != NULL) {
                __builtin_prefetch(nm->raw);
                __builtin_prefetch(nm->raw + 64);
            }
        }
    }
}

static void print_blocks(batch *b, unsigned self, unsigned nthreads, lookup_ctx *c)
{
    for (size_t k = self; k < b->nblocks; k += nthreads) {
        size_t from = k * PRINT_BLOCK, to = from + PRINT_BLOCK < b->n ? from + PRINT_BLOCK : b->n;
        c->out.len = 0;
        for (size_t i = from; i < to; i++) {
            /* Input order is random order: start the cache misses of the answers ahead, stage by
             * stage, so that they overlap (each stage's loads were prefetched by the stage before). */
            if (c->json)
                prefetch_json(b, i, to);
            else
                prefetch_plain(b, i, to);
            const query *x = &b->q[i];
            const frame_array *fa = &b->frames[x->part];
            if (c->json)
                answer_json(c, x->addr, x->file_addr, fa->v + x->first, fa->ids + x->first, b->names, x->n);
            else
                answer_plain(c, x->addr, x->file_addr, fa->v + x->first, x->n);
        }
        pthread_mutex_lock(&b->mu);
        while (b->turn != k && !b->failed)
            pthread_cond_wait(&b->cv, &b->mu);
        bool go = !b->failed;
        pthread_mutex_unlock(&b->mu);
        /* One write of the whole block from the buffer, names included: the kernel copies
         * from a few MiB that are still in the cache. Long names written from the lookup
         * memory with writev (each a cache miss in a random batch, ~1,000 pieces a call) cost
         * the kernel twice a plain write's time for the same bytes. */
        bool ok = go && write_all(c->out.data, c->out.len);
        int saved = errno;
        pthread_mutex_lock(&b->mu);
        if (go && !ok && !b->failed) {
            b->failed = true;
            fprintf(stderr, "stacksift: cannot write the answers: %s\n", strerror(saved));
        }
        b->turn = k + 1;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        if (!go || !ok)
            return;
    }
}

typedef struct {
    batch *b;
    pthread_barrier_t *looked_up; /* both halves looked up: printing may start */
} helper_arg;

static void *batch_helper(void *arg)
{
    helper_arg *h = arg;
    batch *b = h->b;
    const symcache *sc = b->proto->sc;
    lookup_range(sc, b->qw, b->order, b->lookup_from, b->lookup_to, &b->frames[1], 1);
    pthread_barrier_wait(h->looked_up); /* both looked up: the main thread collects the ids */
    pthread_barrier_wait(h->looked_up);
    resolve_names(b, sc);
    pthread_barrier_wait(h->looked_up); /* all names resolved */
    fill_names(b, 1);
    pthread_barrier_wait(h->looked_up);
    lookup_ctx c = *b->proto; /* its own output buffer */
    c.out = (arena){0};
    c.files = NULL;
    print_blocks(b, 1, 2, &c);
    if (c.out.data != NULL)
        munmap(c.out.data, c.out.cap);
    files_free(&c);
    return NULL;
}

/* Answer every query and print the answers in input order. A big batch runs on two threads:
 * each looks up one half of the address order, names not resolved; the distinct name ids
 * are collected and each thread resolves half of them (symcache_names: each name block
 * decompressed once into scratch memory, only the names asked for kept, each demangled once:
 * a random batch touches every block, and keeping them all was ~47 MB of fresh pages); then
 * they format and write alternate blocks. */
static void lookup_all(lookup_ctx *c, query *q, size_t n)
{
    query_key *order = xcalloc(n ? n : 1, sizeof *order);
    for (size_t i = 0; i < n; i++) {
        q[i].file_addr = c->has_load ? q[i].addr - c->load + symcache_text_vmaddr(c->sc) : q[i].addr;
        order[i] = (query_key){q[i].file_addr, i};
    }
    sort_keys(order, n);
    batch b = {.proto = c, .q = q, .n = n, .nblocks = (n + PRINT_BLOCK - 1) / PRINT_BLOCK,
               .lookup_from = n / 2, .lookup_to = n, .qw = q, .order = order};
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    enum { SPLIT_MIN = 4096 }; /* smaller batches: not worth a thread */
    pthread_barrier_t looked_up;
    helper_arg h = {&b, &looked_up};
    pthread_t tid;
    bool split = n >= SPLIT_MIN && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
                 pthread_barrier_init(&looked_up, NULL, 2) == 0;
    if (split && pthread_create(&tid, NULL, batch_helper, &h) != 0) {
        pthread_barrier_destroy(&looked_up);
        split = false;
    }
    lookup_range(c->sc, q, order, 0, split ? n / 2 : n, &b.frames[0], 0);
    if (split)
        pthread_barrier_wait(&looked_up);
    collect_names(&b, c->sc);
    if (split)
        pthread_barrier_wait(&looked_up);
    resolve_names(&b, c->sc);
    if (split)
        pthread_barrier_wait(&looked_up);
    fill_names(&b, 0);
    if (split)
        pthread_barrier_wait(&looked_up);
    print_blocks(&b, 0, split ? 2 : 1, c);
    if (split) {
        pthread_join(tid, NULL);
        pthread_barrier_destroy(&looked_up);
    }
    if (b.failed)
        c->status = 1;
    free(order);
    for (int k = 0; k < 2; k++) {
        if (b.frames[k].v != NULL)
            munmap(b.frames[k].v, b.frames[k].cap * sizeof(symcache_frame));
        if (b.frames[k].ids != NULL)
            munmap(b.frames[k].ids, b.frames[k].ids_cap * sizeof(uint32_t));
    }
    free(b.uniq);
    free(b.seen);
    free(b.rank);
    free(b.nm);
    for (size_t i = 0; b.names != NULL && i < b.nuniq; i++)
        free(b.names[i].owned);
    free(b.names);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
}

/* Parse `text` as an address and queue it; a bad one is reported now and skipped. */
static void add_query(lookup_ctx *c, query **q, size_t *n, size_t *cap, const char *text)
{
    uint64_t addr;
    if (!parse_hex(text, &addr)) {
        fprintf(stderr, "stacksift: '%s' is not a hexadecimal address\n", text);
        c->status = 1;
        return;
    }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *q = xreallocarray(*q, *cap, sizeof **q);
    }
    (*q)[(*n)++] = (query){.addr = addr};
}

int cli_lookup(int argc, char **argv)
{
    const char *input = NULL, *arch = NULL, *symbol_maps = NULL;
    lookup_ctx c = {0};
    int first_addr = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            input = argv[++i];
        else if ((strcmp(argv[i], "--arch") == 0 || strcmp(argv[i], "-arch") == 0) && i + 1 < argc)
            arch = argv[++i];
        else if (strcmp(argv[i], "--symbol-maps") == 0 && i + 1 < argc)
            symbol_maps = argv[++i];
        else if (strcmp(argv[i], "-l") == 0 && i + 1 < argc) {
            if (!parse_hex(argv[++i], &c.load)) {
                fprintf(stderr, "stacksift lookup: bad load address '%s'\n", argv[i]);
                return 2;
            }
            c.has_load = true;
        } else if (strcmp(argv[i], "-i") == 0)
            c.inlines = true;
        else if (strcmp(argv[i], "--json") == 0)
            c.json = true;
        else if (strcmp(argv[i], "--mangled") == 0)
            c.mangled = true;
        else if (argv[i][0] == '-' && argv[i][1] != '\0' && !(argv[i][1] >= '0' && argv[i][1] <= '9')) {
            fprintf(stderr, "stacksift lookup: unknown option '%s'\n", argv[i]);
            return 2;
        } else {
            first_addr = i;
            break;
        }
    }
    if (input == NULL) {
        fprintf(stderr, "usage: stacksift lookup -o INPUT [--arch ARCH] [--symbol-maps DIR] [-l LOAD_ADDRESS] [-i] [--json] [--mangled] ADDRESS...\n");
        return 2;
    }
    symcache *sc = NULL;
    char tmp_dir[4096] = "";
    int status = open_input(&sc, input, arch, symbol_maps, tmp_dir);
    cli_tmpdir_remove(tmp_dir); /* the open symcache stays mapped after its file is unlinked */
    if (status != 0)
        return status;
    c.sc = sc;
    query *q = NULL;
    size_t nq = 0, capq = 0;
    if (first_addr < argc) {
        for (int i = first_addr; i < argc; i++)
            add_query(&c, &q, &nq, &capq, argv[i]);
    } else {
        char line[256];
        while (fgets(line, sizeof line, stdin) != NULL) {
            if (strchr(line, '\n') == NULL && !feof(stdin)) {
                int ch;
                while ((ch = getchar()) != EOF && ch != '\n')
                    ;
                fprintf(stderr, "stacksift: input line too long\n");
                c.status = 1;
                continue;
            }
            line[strcspn(line, "\r\n")] = '\0';
            if (line[0] == '\0')
                continue;
            add_query(&c, &q, &nq, &capq, line);
        }
    }
    lookup_all(&c, q, nq);
    free(q);
    if (c.out.data != NULL)
        munmap(c.out.data, c.out.cap);
    files_free(&c);
    symcache_close(sc);
    return c.status;
}
