/*
 * Flattening: scope ranges nest (an inlinee lies inside its caller), so one sweep with a stack
 * over ranges sorted by (start, end desc, depth) yields, for every address, the innermost
 * scope. Line rows become [addr, next addr) segments per sequence. A three-way merge of scope
 * segments, line segments and symbol-table symbols gives the final table; neighbours that
 * say the same thing are joined.
 */
#include "symcache/symcache_build.h"

#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <lz4hc.h>
#include <zstd.h>

#include "base/phase.h"
#include "base/radix.h"
#include "base/search.h"
#include "base/xalloc.h"
#include "demangle/demangle.h"
#include "symcache/symcache.h"
#include "symcache/symcache_format.h"

typedef struct {
    uint64_t start, end;
    uint32_t a, b; /* scope segments: a = scope; line segments: a = file, b = line */
} segment;

typedef struct {
    segment *v;
    size_t n, cap;
} segments;

static void seg_push(segments *s, uint64_t start, uint64_t end, uint32_t a, uint32_t b)
{
    if (end <= start)
        return;
    if (s->n > 0 && s->v[s->n - 1].end == start && s->v[s->n - 1].a == a && s->v[s->n - 1].b == b) {
        s->v[s->n - 1].end = end;
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
    }
    s->v[s->n++] = (segment){start, end, a, b};
}

/* Room for `count` elements of `size` bytes up front, where `count` is an upper bound far
 * above what is usually used: a large allocation is mapped, not touched, so only the pages
 * written cost anything, and the array never moves while it grows (where doubling with
 * realloc copied it several times over). NULL if the system refuses (strict overcommit):
 * the caller then grows the array as it goes. */
static void *reserve(size_t count, size_t size)
{
    if (count == 0 || count > SIZE_MAX / size)
        return NULL;
    return malloc(count * size);
}

/* Innermost scope per address. Ranges that overlap without nesting (bad DWARF, folded
 * functions) are clipped to the range they start in. */
static void flatten_scopes(segments *out, const debuginfo *di)
{
    /* debuginfo_load sorts the ranges (in its threads); anything else is sorted here */
    const debuginfo_range *r = di->ranges;
    debuginfo_range *copy = NULL;
    for (size_t i = 1; i < di->nranges; i++)
        if (debuginfo_range_order(&di->ranges[i - 1], &di->ranges[i]) > 0) {
            copy = xmalloc(di->nranges * sizeof *copy);
            memcpy(copy, di->ranges, di->nranges * sizeof *copy);
            debuginfo_sort_ranges(copy, di->nranges);
            r = copy;
            break;
        }
    /* every range adds at most two segments (before and after a nested one) */
    if (out->cap == 0 && (out->v = reserve(2 * di->nranges + 2, sizeof *out->v)) != NULL)
        out->cap = 2 * di->nranges + 2;
    debuginfo_range *stack = xcalloc(di->nranges ? di->nranges : 1, sizeof *stack);
    size_t top = 0;
    uint64_t cur = 0;
    for (size_t i = 0; i <= di->nranges; i++) {
        uint64_t next = i < di->nranges ? r[i].start : UINT64_MAX;
        while (top > 0 && stack[top - 1].end <= next) {
            debuginfo_range t = stack[--top];
            seg_push(out, cur, t.end, t.scope, 0);
            if (t.end > cur)
                cur = t.end;
        }
        if (i == di->nranges)
            break;
        if (top > 0)
            seg_push(out, cur, next, stack[top - 1].scope, 0);
        cur = next;
        debuginfo_range nr = r[i];
        if (top > 0 && nr.end > stack[top - 1].end)
            nr.end = stack[top - 1].end;
        if (nr.end > nr.start)
            stack[top++] = nr;
    }
    free(stack);
    free(copy);
}


/* Line rows -> [addr, next addr) segments. For several rows at one address the last wins,
 * as in llvm's DWARFDebugLine::LineTable::findRowInSeq. */
typedef struct {
    uint64_t start;      /* address of its first row */
    size_t first, last;  /* rows[first .. last], last being the end_sequence row */
} sequence;

DEFINE_RADIX_SORT(sort_sequences_by_start, sequence, start)

/* Line rows -> [addr, next addr) segments, as llvm's DWARFDebugLine::LineTable::findRowInSeq
 * reads them, produced one at a time (millions of them: never stored). Rows within a sequence
 * increase (DWARF 5 section 6.2.5.1), so sorting the sequences by their first address, not
 * the rows, orders the segments. A sequence whose rows go backwards (corrupt) is dropped.
 * Where an earlier sequence already covers an address (dead code left at a reused address),
 * the earlier one wins. Neighbours at the same file and line are joined, then each segment
 * is clipped to [clip_lo, clip_hi). */
typedef struct {
    const debuginfo *di;
    sequence *seq;        /* sorted by start */
    size_t nseq, k;       /* the sequence being read */
    size_t row;           /* its next row */
    bool covered;         /* a segment was produced: `covered_end` is its end */
    uint64_t covered_end;
    bool has_pending;     /* the joined segment being grown */
    segment pending;
    uint64_t clip_lo, clip_hi;
} line_cursor;

static void line_cursor_init(line_cursor *c, const debuginfo *di, uint64_t clip_lo, uint64_t clip_hi)
{
    memset(c, 0, sizeof *c);
    c->di = di;
    c->clip_lo = clip_lo;
    c->clip_hi = clip_hi;
    size_t cap = 0, first = 0;
    for (size_t i = 0; i < di->nrows; i++) {
        if (i > first && di->rows[i].addr < di->rows[i - 1].addr) {
            /* out of order: skip to this sequence's end */
            while (i < di->nrows && di->rows[i].line != DEBUGINFO_END_SEQUENCE)
                i++;
            first = i + 1;
            continue;
        }
        if (di->rows[i].line != DEBUGINFO_END_SEQUENCE)
            continue;
        if (i > first) {
            if (c->nseq == cap) {
                cap = cap ? cap * 2 : 1024;
                c->seq = xreallocarray(c->seq, cap, sizeof *c->seq);
            }
            c->seq[c->nseq++] = (sequence){di->rows[first].addr, first, i};
        }
        first = i + 1;
    }
    sort_sequences_by_start(c->seq, c->nseq); /* stable: merge order breaks ties */
    if (c->nseq > 0)
        c->row = c->seq[0].first;
}

/* The next segment of the sorted sequences' rows, before joining. */
static bool line_raw_next(line_cursor *c, segment *out)
{
    while (c->k < c->nseq) {
        const sequence *q = &c->seq[c->k];
        if (c->row >= q->last) {
            if (++c->k < c->nseq)
                c->row = c->seq[c->k].first;
            continue;
        }
        const debuginfo_row *row = &c->di->rows[c->row], *next = row + 1;
        c->row++;
        if (next->addr <= row->addr)
            continue; /* several rows at one address: the last wins */
        segment s = {row->addr, next->addr, row->file, row->line};
        if (c->covered && c->covered_end > s.start) {
            if (c->covered_end >= s.end)
                continue;
            s.start = c->covered_end;
        }
        c->covered = true;
        c->covered_end = s.end;
        *out = s;
        return true;
    }
    return false;
}

/* The next line segment, joined and clipped; false when there are no more. */
static bool line_next(line_cursor *c, segment *out)
{
    for (;;) {
        segment s;
        bool more = line_raw_next(c, &s);
        if (more && c->has_pending && c->pending.end == s.start && c->pending.a == s.a &&
            c->pending.b == s.b) {
            c->pending.end = s.end;
            continue;
        }
        if (!c->has_pending && !more)
            return false;
        segment done = c->pending;
        bool had = c->has_pending;
        c->pending = s;
        c->has_pending = more;
        if (!had)
            continue;
        if (done.start < c->clip_lo)
            done.start = c->clip_lo;
        if (done.end > c->clip_hi)
            done.end = c->clip_hi;
        if (done.end > done.start) {
            *out = done;
            return true;
        }
    }
}

static void line_cursor_free(line_cursor *c)
{
    free(c->seq);
}

static void clip_segments(segments *s, uint64_t lo, uint64_t hi)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        segment g = s->v[i];
        if (g.start < lo)
            g.start = lo;
        if (g.end > hi)
            g.end = hi;
        if (g.end > g.start)
            s->v[n++] = g;
    }
    s->n = n;
}

typedef struct {
    segments *out;
    const debuginfo *di;
} flatten_job;

static void *flatten_scopes_thread(void *arg)
{
    flatten_job *job = arg;
    flatten_scopes(job->out, job->di);
    return NULL;
}

/* ---- output tables ---------------------------------------------------------------------- */

typedef struct {
    uint32_t scope; /* output scope, or SYMC_NONE */
    uint32_t file;  /* index into the file table, or SYMC_NONE */
    uint32_t line;  /* 0 = unknown */
} range_info;

typedef struct {
    uint32_t start; /* offset from the base address (a span over 4 GiB fails the build) */
    range_info info;
} out_range;

/* The output's function names as scopes first use them: references to debuginfo strings,
 * not copies, and not yet deduplicated (the debuginfo strings hold a name once per reader
 * thread). write_names sorts them, folds equal contents into one name and gives each
 * reference the rank of its name: nothing is hashed or copied while merging. */
#define NAME_UNKNOWN UINT32_MAX /* the "??" of a scope DWARF names nothing for */

typedef struct {
    const strtab *src;  /* the debuginfo strings */
    const strtab *extra; /* the builder's own names (scope-qualified, SYMC_SCOPE_MARK form):
                            id src->count + i is its string i */
    uint32_t *ids;      /* reference -> debuginfo string id, or NAME_UNKNOWN */
    size_t count, cap;
    size_t bytes;       /* total length of the referenced strings, a NUL each included */
} name_list;

static const char *name_str(const name_list *t, uint32_t ref, size_t *len)
{
    uint32_t id = t->ids[ref];
    if (id == NAME_UNKNOWN) {
        *len = 2;
        return "??";
    }
    if (id >= t->src->count) {
        *len = strtab_len(t->extra, id - (uint32_t)t->src->count);
        return strtab_get(t->extra, id - (uint32_t)t->src->count);
    }
    *len = strtab_len(t->src, id);
    return strtab_get(t->src, id);
}

/* Room for `expect` references (an upper bound; more are still taken). */
static void name_list_init(name_list *t, const strtab *src, const strtab *extra, size_t expect)
{
    memset(t, 0, sizeof *t);
    t->src = src;
    t->extra = extra;
    if ((t->ids = reserve(expect, sizeof *t->ids)) != NULL)
        t->cap = expect;
}

/* A new reference to debuginfo string `id` (NAME_UNKNOWN or an invalid id: "??"). */
static uint32_t name_list_add(name_list *t, uint32_t id)
{
    if (id != NAME_UNKNOWN && id >= t->src->count + t->extra->count)
        id = NAME_UNKNOWN;
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->ids = xreallocarray(t->ids, t->cap, sizeof *t->ids);
    }
    uint32_t ref = (uint32_t)t->count++;
    t->ids[ref] = id;
    size_t len;
    name_str(t, ref, &len);
    t->bytes += len + 1;
    return ref;
}

typedef struct {
    const debuginfo *di;
    strtab strings;        /* paths and the image name the file references, in order of first use */
    name_list names;       /* function names, in order of first use (sorted when written) */
    uint32_t unknown_name; /* the reference to "??", SYMC_NONE until one is needed */
    uint32_t *scope_map;   /* debuginfo scope -> output scope (SYMC_NONE = not yet) */
    uint32_t *symbol_map;  /* debuginfo symbol -> output scope */
    uint32_t *name_map;    /* debuginfo string id -> output name id (SYMC_NONE = not yet) */
    strtab qual_names;     /* stored forms of scope-qualified names ("P" SYMC_SCOPE_MARK "N") */
    uint32_t *qual_map;    /* debuginfo string id of a qualified name -> output name id + 1
                              (0 = not yet); NULL while unused */
    uint32_t *file_map;    /* debuginfo string id -> file index (SYMC_NONE = not yet) */
    symc_scope *scopes;
    size_t nscopes, cap_scopes;
    out_range *ranges;
    size_t nranges, cap_ranges;
    uint32_t *file_of_id;  /* output string id -> file index + 1 (0 = not a file yet) */
    size_t cap_file_of_id;
    uint32_t *files;       /* file index -> string offset */
    size_t nfiles, cap_files;
    uint64_t base;
} builder;

/* Output name of debuginfo string `id`. Each debuginfo id is interned once: the merged
 * debuginfo strings hold a name once per reader thread, and interning compares whole names. */
static uint32_t out_name(builder *b, uint32_t id)
{
    if (id >= b->di->strings.count) {
        if (b->unknown_name == SYMC_NONE)
            b->unknown_name = name_list_add(&b->names, NAME_UNKNOWN);
        return b->unknown_name;
    }
    if (b->name_map[id] == SYMC_NONE)
        b->name_map[id] = name_list_add(&b->names, id);
    return b->name_map[id];
}

/* Output name of a scope named `name` (debuginfo string id, DW_AT_name) whose
 * scope-qualified name is `qual`: the stored form "<prefix>" SYMC_SCOPE_MARK "<name>"
 * (symcache_format.h), the prefix being `qual` without `name` at its end. A qualified name
 * that does not end in the name, or a part holding the mark, keeps the plain name. */
static uint32_t out_qualified_name(builder *b, uint32_t name, uint32_t qual)
{
    const strtab *t = &b->di->strings;
    if (name >= t->count || qual >= t->count)
        return out_name(b, name);
    if (b->qual_map == NULL)
        b->qual_map = xcalloc(t->count, sizeof *b->qual_map);
    if (b->qual_map[qual] != 0)
        return b->qual_map[qual] - 1;
    const char *n = strtab_get(t, name), *q = strtab_get(t, qual);
    size_t ln = strtab_len(t, name), lq = strtab_len(t, qual);
    if (lq <= ln || memcmp(q + lq - ln, n, ln) != 0 || memchr(q, SYMC_SCOPE_MARK, lq) != NULL ||
        t->count + b->qual_names.count >= NAME_UNKNOWN)
        return out_name(b, name);
    char *stored = xmalloc(lq + 1);
    memcpy(stored, q, lq - ln);
    stored[lq - ln] = SYMC_SCOPE_MARK;
    memcpy(stored + lq - ln + 1, n, ln);
    uint32_t id = strtab_intern(&b->qual_names, stored, lq + 1);
    free(stored);
    if (id == STRTAB_NONE)
        return out_name(b, name);
    uint32_t ref = name_list_add(&b->names, (uint32_t)t->count + id);
    b->qual_map[qual] = ref + 1;
    return ref;
}

/* The scope-qualified name of debuginfo scope `id` (debuginfo.qualified, by scope), or
 * STRTAB_NONE. */
static uint32_t qualified_of(const debuginfo *di, uint32_t id)
{
    size_t lo = 0, hi = di->nqualified;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (di->qualified[mid].scope < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < di->nqualified && di->qualified[lo].scope == id ? di->qualified[lo].name : STRTAB_NONE;
}

static uint32_t out_file_slow(builder *b, uint32_t id);

/* File-table index of debuginfo string `id` (a source path), adding it on first use; called
 * for every range, so memoized per debuginfo id. */
static uint32_t out_file(builder *b, uint32_t id)
{
    if (id >= b->di->strings.count)
        return out_file_slow(b, id);
    if (b->file_map[id] == SYMC_NONE)
        b->file_map[id] = out_file_slow(b, id);
    return b->file_map[id];
}

static uint32_t out_file_slow(builder *b, uint32_t id)
{
    uint32_t sid = strtab_copy(&b->strings, &b->di->strings, id);
    if (sid >= b->cap_file_of_id) {
        size_t cap = b->cap_file_of_id ? b->cap_file_of_id : 1024;
        while (cap <= sid)
            cap *= 2;
        b->file_of_id = xreallocarray(b->file_of_id, cap, sizeof *b->file_of_id);
        memset(b->file_of_id + b->cap_file_of_id, 0, (cap - b->cap_file_of_id) * sizeof *b->file_of_id);
        b->cap_file_of_id = cap;
    }
    if (b->file_of_id[sid] == 0) {
        if (b->nfiles == b->cap_files) {
            b->cap_files = b->cap_files ? b->cap_files * 2 : 256;
            b->files = xreallocarray(b->files, b->cap_files, sizeof *b->files);
        }
        b->files[b->nfiles++] = strtab_offset(&b->strings, sid);
        b->file_of_id[sid] = (uint32_t)b->nfiles;
    }
    return b->file_of_id[sid] - 1;
}

/* OR the low `width` (<= 32) bits of v into the little-endian bit string p at bit `at`: one
 * 64-bit read-modify-write, so p needs 8 bytes of room from byte at / 8. */
static inline void put_bits(uint8_t *p, uint64_t at, uint64_t v, unsigned width)
{
    uint64_t w;
    v &= (1ull << width) - 1;
    memcpy(&w, p + at / 8, 8);
    w = htole64(le64toh(w) | v << (at % 8));
    memcpy(p + at / 8, &w, 8);
}

/* ---- names: sorted, zstd-compressed in blocks ------------------------------------------- */

/* zstd level. On the benchmark's 39 MB of names (64 a block): level 3 gives 11.4x, level 9
 * with a dictionary trained on the blocks barely more at several times the build time. */
#define NAMES_LEVEL 3

typedef struct {
    const char *s;
    uint32_t id;
    uint32_t len;   /* strlen(s) (names are shorter than 4 GiB: strtab offsets are 32-bit) */
    uint64_t key;   /* 8 bytes of s from the depth being sorted, big-endian */
} name_ref;

static int cmp_name_ref(const void *pa, const void *pb)
{
    const name_ref *x = pa, *y = pb;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int cmp_key_id(const void *pa, const void *pb)
{
    const name_ref *x = pa, *y = pb;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Bytes depth .. depth+7 of r's name as a big-endian number (so that numeric order is
 * strcmp's byte order), zero past the end (a name holds no NUL). */
static uint64_t name_key(const name_ref *r, size_t depth)
{
    uint64_t k = 0;
    if (depth + 8 <= r->len) {
        memcpy(&k, r->s + depth, 8);
        return __builtin_bswap64(k);
    }
    for (size_t i = depth; i < depth + 8; i++)
        k = k << 8 | (i < r->len ? (uint8_t)r->s[i] : 0);
    return k;
}

DEFINE_RADIX_SORT(sort_refs_by_key, name_ref, key)

/* Sort v[0..n), given in id order, by (name, id): most significant 8 bytes first. A group of
 * names equal so far is ordered by its next 8 bytes as numbers (radix sort, stable, so equal
 * keys stay in id order), and only groups still equal and not yet ended go on. Far fewer
 * string reads than comparing whole names that share long prefixes (C++ namespaces); groups
 * still tied after 1 KiB fall back to comparing whole names. */
static void sort_names_msd(name_ref *v, size_t n)
{
    typedef struct {
        size_t lo, hi, depth;
    } group;
    size_t cap = 64, top = 0;
    group *stack = xmalloc(cap * sizeof *stack);
    stack[top++] = (group){0, n, 0};
    while (top > 0) {
        group g = stack[--top];
        size_t m = g.hi - g.lo;
        if (m < 2)
            continue;
        if (g.depth >= 1024) {
            qsort(v + g.lo, m, sizeof *v, cmp_name_ref);
            continue;
        }
        for (size_t i = g.lo; i < g.hi; i++)
            v[i].key = name_key(&v[i], g.depth);
        if (m >= 1024)
            sort_refs_by_key(v + g.lo, m);
        else
            qsort(v + g.lo, m, sizeof *v, cmp_key_id);
        for (size_t i = g.lo, j; i < g.hi; i = j) {
            for (j = i + 1; j < g.hi && v[j].key == v[i].key; j++)
                ;
            if (j - i > 1 && (v[i].key & 0xff) != 0) { /* tied and not ended: next 8 bytes */
                if (top == cap) {
                    cap *= 2;
                    stack = xreallocarray(stack, cap, sizeof *stack);
                }
                stack[top++] = (group){i, j, g.depth + 8};
            }
        }
    }
    free(stack);
}

typedef struct {
    name_ref *v;
    size_t n;
} sort_job;

static void *sort_names_thread(void *arg)
{
    sort_job *j = arg;
    sort_names_msd(j->v, j->n);
    return NULL;
}

/* Sort v[0..n) (in id order) by (name, id): with two threads or more, each half on its own
 * thread, then one merge. The order is total (ids are unique), so the result is the same either way. */
static void sort_names(name_ref *v, size_t n, unsigned threads)
{
    size_t half = n / 2;
    sort_job job = {v + half, n - half};
    pthread_t tid;
    if (threads < 2 || n < 4096 || pthread_create(&tid, NULL, sort_names_thread, &job) != 0) {
        sort_names_msd(v, n);
        return;
    }
    sort_names_msd(v, half);
    pthread_join(tid, NULL);
    name_ref *merged = xmalloc(n * sizeof *merged);
    size_t i = 0, j = half, k = 0;
    while (i < half && j < n)
        merged[k++] = cmp_name_ref(&v[j], &v[i]) < 0 ? v[j++] : v[i++];
    while (i < half)
        merged[k++] = v[i++];
    while (j < n)
        merged[k++] = v[j++];
    memcpy(v, merged, n * sizeof *v);
    free(merged);
}

typedef struct {
    const uint8_t *plain;     /* the names in sorted order, NUL-terminated, back to back */
    const size_t *bounds;     /* block k is plain[bounds[k] .. bounds[k + 1]) */
    size_t first, last;       /* blocks [first, last) */
    buf out;                  /* compressed blocks back to back */
    size_t *sizes;            /* compressed size of each of this job's blocks */
    bool failed;
} names_job;

static void *compress_names(void *arg)
{
    names_job *j = arg;
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    if (cc == NULL) {
        j->failed = true;
        return NULL;
    }
    for (size_t k = j->first; k < j->last; k++) {
        size_t len = j->bounds[k + 1] - j->bounds[k], cap = ZSTD_compressBound(len);
        buf_reserve(&j->out, cap);
        size_t n = ZSTD_compressCCtx(cc, j->out.data + j->out.len, cap, j->plain + j->bounds[k], len,
                                     NAMES_LEVEL);
        if (ZSTD_isError(n)) {
            j->failed = true;
            break;
        }
        j->out.len += n;
        j->sizes[k - j->first] = n;
    }
    ZSTD_freeCCtx(cc);
    return NULL;
}

/* The "DISP" section (symcache_format.h): each distinct name's raw and display forms, made
 * here once so that batches of lookups of this file demangle nothing and decode no name
 * block. Groups are demangled and compressed on up to
 * `threads` threads, each taking the next group from a shared counter (demangling costs differ
 * a lot between names: sorted names put the long C++ templates together); the bytes do not
 * depend on the thread count. */
typedef struct {
    const char *plain;     /* the sorted distinct names, NUL-terminated, back to back */
    const size_t *off;     /* off[i]: where name i starts in plain (off[n]: plain's end) */
    size_t n, ngroups;
    atomic_size_t next;    /* the next group to take */
    buf *frames;           /* frames[g]: group g compressed */
    atomic_bool failed;
} display_job;

static void *display_thread(void *arg)
{
    display_job *j = arg;
    void *hc = xmalloc((size_t)LZ4_sizeofStateHC()); /* LZ4HC's state, reused for every group */
    buf blk, shown_text;
    buf_init(&blk);
    buf_init(&shown_text);
    for (size_t g; (g = atomic_fetch_add(&j->next, 1)) < j->ngroups;) {
        size_t from = g * SYMC_DISPLAY_GROUP, to = from + SYMC_DISPLAY_GROUP < j->n ? from + SYMC_DISPLAY_GROUP : j->n;
        size_t count = to - from;
        blk.len = 0;
        shown_text.len = 0;
        buf_reserve(&blk, count * 9);
        memset(blk.data, 0, count * 9);
        blk.len = count * 9; /* raw_len, display_len, flags: filled below (appends move blk.data) */
        for (size_t i = from; i < to; i++) {
            const char *stored = j->plain + j->off[i];
            size_t stored_len = j->off[i + 1] - j->off[i] - 1;
            /* what lookups give as the raw name: after the mark of a scope-qualified one */
            const char *mark = memchr(stored, SYMC_SCOPE_MARK, stored_len);
            const char *raw = mark ? mark + 1 : stored;
            size_t raw_len = stored_len - (size_t)(raw - stored);
            bool raw_plain = symc_text_plain(raw, raw_len);
            uint32_t flags = raw_plain ? SYMC_NAME_RAW_PLAIN : 0;
            uint32_t display_len = SYMC_DISPLAY_SAME;
            buf_append(&blk, raw, raw_len + 1);
            char *shown = demangle_name(raw, DEMANGLE_SIMPLIFIED); /* as derive_display at lookup */
            if (shown != NULL) {
                size_t len = strlen(shown);
                display_len = (uint32_t)len;
                flags |= symc_text_plain(shown, len) ? SYMC_NAME_DISPLAY_PLAIN : 0;
                buf_append(&shown_text, shown, len + 1);
                free(shown);
            } else {
                flags |= raw_plain ? SYMC_NAME_DISPLAY_PLAIN : 0;
            }
            size_t k = i - from;
            uint8_t le[4];
            for (int b = 0; b < 4; b++)
                le[b] = (uint8_t)((uint32_t)raw_len >> (8 * b));
            memcpy(blk.data + 4 * k, le, 4);
            for (int b = 0; b < 4; b++)
                le[b] = (uint8_t)(display_len >> (8 * b));
            memcpy(blk.data + 4 * count + 4 * k, le, 4);
            blk.data[8 * count + k] = (uint8_t)flags;
        }
        /* the raw names, then the display forms: each kind beside its own kind compresses
         * better and decodes faster than pairs */
        buf_append(&blk, shown_text.data, shown_text.len);
        /* the group: its size, the check word of its LZ4 block, the block */
        buf *f = &j->frames[g];
        if (blk.len > (size_t)LZ4_MAX_INPUT_SIZE) {
            atomic_store(&j->failed, true);
            break;
        }
        int cap = LZ4_compressBound((int)blk.len);
        buf_reserve(f, SYMC_DISPLAY_GROUP_HEADER + (size_t)cap);
        int got = LZ4_compress_HC_extStateHC(hc, (const char *)blk.data, (char *)f->data + SYMC_DISPLAY_GROUP_HEADER,
                                             (int)blk.len, cap, SYMC_DISPLAY_LEVEL);
        if (got <= 0) {
            atomic_store(&j->failed, true);
            break;
        }
        uint32_t head[2] = {(uint32_t)blk.len,
                            symc_display_check(f->data + SYMC_DISPLAY_GROUP_HEADER, (size_t)got)};
        for (int w = 0; w < 2; w++)
            for (int b = 0; b < 4; b++)
                f->data[4 * w + b] = (uint8_t)(head[w] >> (8 * b));
        f->len = SYMC_DISPLAY_GROUP_HEADER + (size_t)got;
    }
    buf_reset(&blk);
    buf_reset(&shown_text);
    free(hc);
    return NULL;
}

/* Append the "DISP" section body of the n sorted distinct names at plain (off: as in
 * display_job) to `body`. */
static err_code write_display(buf *body, const char *plain, const size_t *off, size_t n, unsigned threads,
                              err_info *err)
{
    size_t ngroups = (n + SYMC_DISPLAY_GROUP - 1) / SYMC_DISPLAY_GROUP;
    display_job j = {.plain = plain, .off = off, .n = n, .ngroups = ngroups};
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, false);
    j.frames = xcalloc(ngroups ? ngroups : 1, sizeof *j.frames);
    unsigned nthreads = threads > 1 ? (threads < 16 ? threads : 16) : 1;
    pthread_t tids[16];
    bool started[16] = {false};
    for (unsigned t = 1; t < nthreads; t++)
        started[t] = pthread_create(&tids[t], NULL, display_thread, &j) == 0;
    display_thread(&j);
    for (unsigned t = 1; t < nthreads; t++)
        if (started[t])
            pthread_join(tids[t], NULL);
    err_code rc = ERR_OK;
    if (atomic_load(&j.failed)) {
        rc = err_set(err, ERR_INTERNAL, "lz4 could not compress the display names (a group over 2 GiB)");
    } else {
        size_t total = 0;
        for (size_t g = 0; g < ngroups; g++)
            total += j.frames[g].len;
        if (total > UINT32_MAX / 2)
            rc = err_set(err, ERR_UNSUPPORTED, "compressed display names over 2 GiB");
        buf_append_u32le(body, DEMANGLE_REVISION);
        buf_append_u32le(body, (uint32_t)n);
        buf_append_u32le(body, SYMC_DISPLAY_GROUP);
        buf_append_u32le(body, 0);
        size_t at = 0;
        for (size_t g = 0; rc == ERR_OK && g <= ngroups; g++) {
            buf_append_u32le(body, (uint32_t)at);
            if (g < ngroups)
                at += j.frames[g].len;
        }
        for (size_t g = 0; rc == ERR_OK && g < ngroups; g++)
            buf_append(body, j.frames[g].data, j.frames[g].len);
    }
    for (size_t g = 0; g < ngroups; g++)
        buf_reset(&j.frames[g]);
    free(j.frames);
    return rc;
}

/* Sort the name references, fold equal names into one, write the block index and the
 * compressed blocks (layout in symcache_format.h); *rank_out (owned by the caller) maps a
 * reference to its name's sorted position, *count_out gets the number of distinct names.
 * Sorting uses two threads and blocks are compressed on up to `threads`; the bytes do not
 * depend on that number. `display` non-NULL: the "DISP" section's body is appended to it. */
static err_code write_names(buf *index, buf *data, buf *display, uint32_t **rank_out, size_t *count_out,
                            const name_list *names, unsigned threads, err_info *err)
{
    size_t n = names->count;
    name_ref *v = xcalloc(n ? n : 1, sizeof *v);
    uint32_t *rank = xcalloc(n ? n : 1, sizeof *rank);
    size_t *bounds = xcalloc(n / SYMC_NAMES_PER_BLOCK + 2, sizeof *bounds);
    err_code rc = ERR_OK;
    buf plain;
    buf_init(&plain);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *str = name_str(names, (uint32_t)i, &len);
        v[i] = (name_ref){str, (uint32_t)i, (uint32_t)len, 0};
    }
    sort_names(v, n, threads);
    buf_reserve(&plain, names->bytes);
    size_t distinct = 0, prev_len = 0;
    const char *prev = NULL;
    size_t *starts = display != NULL ? xmalloc((n + 1) * sizeof *starts) : NULL; /* of each distinct name */
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *str = name_str(names, v[i].id, &len);
        if (prev == NULL || len != prev_len || memcmp(str, prev, len) != 0) {
            if (distinct % SYMC_NAMES_PER_BLOCK == 0)
                bounds[distinct / SYMC_NAMES_PER_BLOCK] = plain.len;
            if (starts != NULL)
                starts[distinct] = plain.len;
            buf_append(&plain, str, len + 1);
            distinct++;
            prev = str;
            prev_len = len;
        }
        rank[v[i].id] = (uint32_t)(distinct - 1);
    }
    size_t nblk = (distinct + SYMC_NAMES_PER_BLOCK - 1) / SYMC_NAMES_PER_BLOCK;
    bounds[nblk] = plain.len;
    size_t *sizes = xcalloc(nblk ? nblk : 1, sizeof *sizes);
    *count_out = distinct;

    unsigned nthreads = threads > 1 ? threads : 1;
    if (nthreads > 16)
        nthreads = 16;
    names_job jobs[16];
    pthread_t tids[16];
    bool started[16] = {false};
    for (unsigned t = 0; t < nthreads; t++) {
        jobs[t] = (names_job){(const uint8_t *)plain.data, bounds, nblk * t / nthreads, nblk * (t + 1) / nthreads,
                              {0}, NULL, false};
        buf_init(&jobs[t].out);
        jobs[t].sizes = sizes + jobs[t].first;
        if (t > 0)
            started[t] = pthread_create(&tids[t], NULL, compress_names, &jobs[t]) == 0;
    }
    compress_names(&jobs[0]);
    for (unsigned t = 1; t < nthreads; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            compress_names(&jobs[t]);
    }
    size_t off = 0;
    for (unsigned t = 0; t < nthreads; t++) {
        if (jobs[t].failed && rc == ERR_OK)
            rc = err_set(err, ERR_INTERNAL, "zstd could not compress the function names");
        buf_append(data, jobs[t].out.data, jobs[t].out.len);
        buf_reset(&jobs[t].out);
    }
    if (rc == ERR_OK && data->len > UINT32_MAX)
        rc = err_set(err, ERR_UNSUPPORTED, "compressed function names over 4 GiB");
    for (size_t k = 0; rc == ERR_OK && k <= nblk; k++) {
        buf_append_u32le(index, (uint32_t)off);
        if (k < nblk)
            off += sizes[k];
    }
    if (rc == ERR_OK && starts != NULL) {
        starts[distinct] = plain.len;
        rc = write_display(display, (const char *)plain.data, starts, distinct, threads, err);
    }
    free(starts);
    buf_reset(&plain);
    free(bounds);
    free(sizes);
    free(v);
    if (rc != ERR_OK) {
        free(rank);
        rank = NULL;
    }
    *rank_out = rank;
    return rc;
}

static uint32_t new_scope(builder *b, symc_scope s)
{
    if (b->nscopes == b->cap_scopes) {
        b->cap_scopes = b->cap_scopes ? b->cap_scopes * 2 : 1024;
        b->scopes = xreallocarray(b->scopes, b->cap_scopes, sizeof *b->scopes);
    }
    b->scopes[b->nscopes] = s;
    return (uint32_t)b->nscopes++;
}

/* Output index of debuginfo scope `id`, adding it and its callers on first use. */
static uint32_t out_scope(builder *b, uint32_t id)
{
    if (b->scope_map[id] != SYMC_NONE)
        return b->scope_map[id];
    const debuginfo_scope *s = &b->di->scopes[id];
    symc_scope o = {0};
    /* a caller DWARF names nothing for (rare, corrupt) still needs a printable name */
    uint32_t qual = b->di->nqualified > 0 ? qualified_of(b->di, id) : STRTAB_NONE;
    o.name = qual != STRTAB_NONE ? out_qualified_name(b, s->name, qual) : out_name(b, s->name); /* STRTAB_NONE: "??" */
    o.parent = SYMC_NONE;
    bool inlinee = s->parent != DEBUGINFO_NONE && s->parent < b->di->nscopes && s->parent != id;
    if (inlinee) {
        o.c = s->call_file == STRTAB_NONE ? SYMC_NONE : out_file(b, s->call_file);
        o.d = s->call_line;
    } else {
        o.c = SYMC_KIND_DWARF;
        o.d = s->entry >= b->base && s->entry - b->base <= UINT32_MAX ? (uint32_t)(s->entry - b->base) : 0;
    }
    uint32_t idx = new_scope(b, o);
    b->scope_map[id] = idx;
    if (inlinee) {
        uint32_t parent = out_scope(b, s->parent);
        b->scopes[idx].parent = parent;
    }
    return idx;
}

static uint32_t out_symbol(builder *b, size_t i)
{
    if (b->symbol_map[i] != SYMC_NONE)
        return b->symbol_map[i];
    const debuginfo_range *sym = &b->di->symbols[i];
    /* the raw name (one Mach-O underscore removed), like DWARF's linkage names */
    symc_scope o = {out_name(b, sym->scope), SYMC_NONE, SYMC_KIND_SYMTAB,
                    (uint32_t)(sym->start - b->base)};
    return b->symbol_map[i] = new_scope(b, o);
}

static void push_out(builder *b, uint64_t start, uint32_t scope, uint32_t file, uint32_t line)
{
    if (b->nranges > 0) {
        out_range *last = &b->ranges[b->nranges - 1];
        if (last->info.scope == scope && last->info.file == file && last->info.line == line)
            return;
        if (last->start == (uint32_t)(start - b->base)) { /* zero-length predecessor: replace it */
            last->info = (range_info){scope, file, line};
            return;
        }
    }
    if (b->nranges == b->cap_ranges) {
        b->cap_ranges = b->cap_ranges ? b->cap_ranges * 2 : 1024;
        b->ranges = xreallocarray(b->ranges, b->cap_ranges, sizeof *b->ranges);
    }
    b->ranges[b->nranges++] = (out_range){(uint32_t)(start - b->base), {scope, file, line}};
}

/* ---- granules (layout in symcache_format.h) ---------------------------------------------- */

/* Bits needed to hold every value 0..max (0 for max 0: the field is then absent). */
static unsigned bits0(uint64_t max)
{
    unsigned n = 0;
    while (n < 64 && (max >> n) != 0)
        n++;
    return n;
}

/* Granules [first, last) of the ranges, appended to `data`; index[g] gets where granule g
 * begins in `data`. Two jobs split the granules in halves; each has its own marks. */
typedef struct {
    const builder *b;
    const uint32_t *rank;  /* name reference -> name id */
    unsigned w_name, unit_shift;
    size_t first, last;    /* granules */
    uint32_t *index;       /* out: granule -> offset in data (the caller rebases it) */
    buf data;              /* out */
    err_code rc;           /* ERR_UNSUPPORTED: a granule needs over 65535 scopes */
} granules_job;

DEFINE_COUNT_AT_MOST(ranges_starting_at_most, out_range, start)

static void *encode_granules_thread(void *arg)
{
    granules_job *j = arg;
    const builder *b = j->b;
    const out_range *r = b->ranges;
    size_t n = b->nranges;
    unsigned gshift = j->unit_shift + SYMC_GRANULE_UNIT_BITS;
    /* epoch[s] == granule + 1 once scope s is in the granule's local table, at local[s] */
    uint32_t *epoch = xcalloc(b->nscopes ? b->nscopes : 1, sizeof *epoch);
    uint32_t *local = xcalloc(b->nscopes ? b->nscopes : 1, sizeof *local);
    uint32_t *list = NULL; /* the granule's scopes in local order */
    size_t cap_list = 0;
    buf_init(&j->data);
    /* the range covering the first granule's start */
    size_t lo = ranges_starting_at_most(r, n, (uint64_t)j->first << gshift);
    size_t k = lo > 0 ? lo - 1 : 0;
    for (size_t g = j->first; g < j->last; g++) {
        uint64_t gstart = (uint64_t)g << gshift, gend = gstart + ((uint64_t)1 << gshift);
        while (k + 1 < n && r[k + 1].start <= gstart)
            k++;
        size_t end = k + 1;
        while (end < n && r[end].start < gend)
            end++;
        uint32_t nrec = (uint32_t)(end - k); /* 1..128: starts are distinct multiples of the unit */
        /* local scopes: each record's chain, innermost first, each scope once */
        uint32_t nl = 0;
        uint32_t mark = (uint32_t)(g + 1);
        for (size_t i = k; i < end; i++)
            for (uint32_t s = r[i].info.scope; s != SYMC_NONE && epoch[s] != mark; s = b->scopes[s].parent) {
                if (nl == cap_list) {
                    cap_list = cap_list ? cap_list * 2 : 256;
                    list = xreallocarray(list, cap_list, sizeof *list);
                }
                epoch[s] = mark;
                local[s] = nl;
                list[nl++] = s;
            }
        if (nl > UINT16_MAX) {
            j->rc = ERR_UNSUPPORTED;
            break;
        }
        /* field widths: granule-local bases keep them narrow */
        uint32_t fbase = UINT32_MAX, fmax = 0, lbase = UINT32_MAX, lmax = 0, xmax = 0, ymax = 0;
        for (size_t i = k; i < end; i++) {
            uint32_t file1 = r[i].info.file == SYMC_NONE ? 0 : r[i].info.file + 1;
            fbase = file1 < fbase ? file1 : fbase;
            fmax = file1 > fmax ? file1 : fmax;
            lbase = r[i].info.line < lbase ? r[i].info.line : lbase;
            lmax = r[i].info.line > lmax ? r[i].info.line : lmax;
        }
        for (uint32_t i = 0; i < nl; i++) {
            const symc_scope *sp = &b->scopes[list[i]];
            uint32_t x = sp->parent == SYMC_NONE ? sp->c : (sp->c == SYMC_NONE ? 0 : sp->c + 1);
            uint32_t y = sp->parent == SYMC_NONE ? (uint32_t)(gend - sp->d) : sp->d;
            xmax = x > xmax ? x : xmax;
            ymax = y > ymax ? y : ymax;
        }
        unsigned w_ls = bits0(nl), w_file = bits0(fmax - fbase), w_line = bits0(lmax - lbase);
        unsigned w_x = bits0(xmax), w_y = bits0(ymax);
        unsigned w_rec = w_ls + w_file + w_line, w_sc = j->w_name + w_ls + w_x + w_y;
        size_t rec_bytes = ((size_t)nrec * w_rec + 7) / 8, sc_bytes = ((size_t)nl * w_sc + 7) / 8;
        size_t size = SYMC_GRANULE_HEADER + (nrec - 1) + rec_bytes + sc_bytes;
        j->index[g - j->first] = (uint32_t)j->data.len; /* rebased by the caller */
        buf_reserve(&j->data, size + 8);
        uint8_t *p = j->data.data + j->data.len;
        memset(p, 0, size + 8);
        p[0] = (uint8_t)(nrec - 1);
        p[1] = (uint8_t)nl;
        p[2] = (uint8_t)(nl >> 8);
        p[3] = (uint8_t)w_ls;
        p[4] = (uint8_t)w_file;
        p[5] = (uint8_t)w_line;
        p[6] = (uint8_t)w_x;
        p[7] = (uint8_t)w_y;
        for (int q = 0; q < 4; q++) {
            p[8 + q] = (uint8_t)(fbase >> (8 * q));
            p[12 + q] = (uint8_t)(lbase >> (8 * q));
        }
        uint8_t *offs = p + SYMC_GRANULE_HEADER, *recs = offs + (nrec - 1), *scs = recs + rec_bytes;
        for (size_t i = k + 1; i < end; i++)
            offs[i - k - 1] = (uint8_t)((r[i].start - gstart) >> j->unit_shift);
        for (size_t i = k; i < end; i++) {
            uint64_t at = (uint64_t)(i - k) * w_rec;
            uint32_t file1 = r[i].info.file == SYMC_NONE ? 0 : r[i].info.file + 1;
            put_bits(recs, at, r[i].info.scope == SYMC_NONE ? 0 : local[r[i].info.scope] + 1, w_ls);
            put_bits(recs, at + w_ls, file1 - fbase, w_file);
            put_bits(recs, at + w_ls + w_file, r[i].info.line - lbase, w_line);
        }
        for (uint32_t i = 0; i < nl; i++) {
            const symc_scope *sp = &b->scopes[list[i]];
            uint64_t at = (uint64_t)i * w_sc;
            uint32_t x = sp->parent == SYMC_NONE ? sp->c : (sp->c == SYMC_NONE ? 0 : sp->c + 1);
            uint32_t y = sp->parent == SYMC_NONE ? (uint32_t)(gend - sp->d) : sp->d;
            put_bits(scs, at, j->rank[sp->name], j->w_name);
            put_bits(scs, at + j->w_name, sp->parent == SYMC_NONE ? 0 : local[sp->parent] + 1, w_ls);
            put_bits(scs, at + j->w_name + w_ls, x, w_x);
            put_bits(scs, at + j->w_name + w_ls + w_x, y, w_y);
        }
        j->data.len += size;
    }
    free(list);
    free(epoch);
    free(local);
    return NULL;
}

err_code symcache_build(buf *out, symcache_build_stats *stats, const macho_image *img,
                        const debuginfo *di, const char *image_name, unsigned threads,
                        err_info *err)
{
    return symcache_build_extra(out, stats, img, di, image_name, threads, NULL, err);
}

err_code symcache_build_extra(buf *out, symcache_build_stats *stats, const macho_image *img,
                              const debuginfo *di, const char *image_name, unsigned threads,
                              const symcache_extra *extra, err_info *err)
{
    segments scopes = {0}, syms = {0};
    line_cursor lines;
    memset(&lines, 0, sizeof lines);
    builder b = {0};
    err_code rc = ERR_OK;
    if (!img->has_uuid)
        return err_set(err, ERR_INVALID, "Mach-O image has no LC_UUID: cannot be matched to reports");
    phase_clock clock;
    phase_start(&clock);
    /* the two flattenings are independent: scopes on a second thread, lines here */
    flatten_job job = {&scopes, di};
    pthread_t tid;
    bool threaded = threads > 1 && pthread_create(&tid, NULL, flatten_scopes_thread, &job) == 0;
    if (!threaded)
        flatten_scopes(&scopes, di);
    /* Code lives in __TEXT: DWARF that points elsewhere (address 0 for dead-stripped code,
     * addresses a broken linker left unrelocated) describes nothing a report can hit. */
    bool clip = img->has_text && img->text_vmsize > 0;
    line_cursor_init(&lines, di, clip ? img->text_vmaddr : 0, clip ? img->text_vmaddr + img->text_vmsize : UINT64_MAX);
    for (size_t i = 0; i < di->nsymbols; i++)
        seg_push(&syms, di->symbols[i].start, di->symbols[i].end, (uint32_t)i, 0);
    if (clip)
        clip_segments(&syms, img->text_vmaddr, img->text_vmaddr + img->text_vmsize);
    /* the builder's tables, while the scopes are flattened */
    b.di = di;
    strtab_init(&b.strings);
    strtab_init(&b.qual_names);
    name_list_init(&b.names, &di->strings, &b.qual_names, (size_t)di->nscopes + di->nsymbols + 1);
    b.unknown_name = SYMC_NONE;
    /* Upper bounds: a scope per DWARF scope or symbol; a range per boundary of the scope,
     * line and symbol segments (each row at most one line segment). */
    size_t max_scopes = (size_t)di->nscopes + di->nsymbols + 1;
    size_t max_ranges = 2 * (2 * di->nranges + di->nrows + di->nsymbols) + 2;
    if ((b.scopes = reserve(max_scopes, sizeof *b.scopes)) != NULL)
        b.cap_scopes = max_scopes;
    if ((b.ranges = reserve(max_ranges, sizeof *b.ranges)) != NULL)
        b.cap_ranges = max_ranges;
    b.scope_map = xcalloc(di->nscopes ? di->nscopes : 1, sizeof *b.scope_map);
    memset(b.scope_map, 0xff, (di->nscopes ? di->nscopes : 1) * sizeof *b.scope_map);
    b.symbol_map = xcalloc(di->nsymbols ? di->nsymbols : 1, sizeof *b.symbol_map);
    memset(b.symbol_map, 0xff, (di->nsymbols ? di->nsymbols : 1) * sizeof *b.symbol_map);
    b.name_map = xmalloc((di->strings.count ? di->strings.count : 1) * sizeof *b.name_map);
    memset(b.name_map, 0xff, (di->strings.count ? di->strings.count : 1) * sizeof *b.name_map);
    b.file_map = xmalloc((di->strings.count ? di->strings.count : 1) * sizeof *b.file_map);
    memset(b.file_map, 0xff, (di->strings.count ? di->strings.count : 1) * sizeof *b.file_map);
    if (threaded)
        pthread_join(tid, NULL);
    if (clip)
        clip_segments(&scopes, img->text_vmaddr, img->text_vmaddr + img->text_vmsize);
    phase_mark(&clock, "build.flatten");

    uint32_t name_off = strtab_offset(&b.strings, strtab_intern(&b.strings, image_name ? image_name : "",
                                                                image_name ? strlen(image_name) : 0));

    /* The table spans [lo, hi): from the first segment's start to the last one's end. Scope
     * and symbol segments are arrays; line segments come from their cursor, whose first
     * segment is read here and whose last end is known once it runs out. */
    segment line;
    bool has_line = line_next(&lines, &line);
    uint64_t lo = UINT64_MAX, hi = 0, line_end = 0;
    const segments *arr[2] = {&scopes, &syms};
    for (int k = 0; k < 2; k++)
        if (arr[k]->n > 0) {
            if (arr[k]->v[0].start < lo)
                lo = arr[k]->v[0].start;
            if (arr[k]->v[arr[k]->n - 1].end > hi)
                hi = arr[k]->v[arr[k]->n - 1].end;
        }
    if (has_line && line.start < lo)
        lo = line.start;
    if (lo == UINT64_MAX)
        lo = hi = img->has_text ? img->text_vmaddr : 0;
    b.base = lo;

    /* three-way merge over the boundaries of the scope, line and symbol segments; it runs to
     * the last end of any of them (line segments are sorted and disjoint: while one is left,
     * the end is not reached) */
    size_t i[2] = {0, 0};
    uint64_t at = lo;
    for (;;) {
        while (has_line && line.end <= at) {
            line_end = line.end;
            has_line = line_next(&lines, &line);
        }
        if (!(at < hi || has_line))
            break;
        const segment *act[3] = {NULL, NULL, NULL};
        uint64_t next = UINT64_MAX;
        for (int k = 0; k < 2; k++) {
            while (i[k] < arr[k]->n && arr[k]->v[i[k]].end <= at)
                i[k]++;
            if (i[k] < arr[k]->n) {
                const segment *s = &arr[k]->v[i[k]];
                if (s->start <= at) {
                    act[k == 0 ? 0 : 2] = s;
                    if (s->end < next)
                        next = s->end;
                } else if (s->start < next) {
                    next = s->start;
                }
            }
        }
        if (has_line) {
            if (line.start <= at) {
                act[1] = &line;
                if (line.end < next)
                    next = line.end;
            } else if (line.start < next) {
                next = line.start;
            }
        }
        if (next == UINT64_MAX)
            break;
        uint32_t scope = SYMC_NONE, file = SYMC_NONE, line_no = 0;
        /* An inlinee DWARF names nothing for (Apple's bitcode recompilation: an
         * abstract_origin to a bare DW_TAG_subprogram) is still a frame of the chain, as
         * llvm-symbolizer prints it ("??"); an unnamed concrete function gives way to the
         * symbol table. */
        if (act[0] != NULL && (di->scopes[act[0]->a].name != STRTAB_NONE ||
                               di->scopes[act[0]->a].parent != DEBUGINFO_NONE))
            scope = out_scope(&b, act[0]->a);
        else if (act[2] != NULL)
            scope = out_symbol(&b, act[2]->a);
        if (act[1] != NULL) {
            file = act[1]->a == STRTAB_NONE ? SYMC_NONE : out_file(&b, act[1]->a);
            line_no = act[1]->b;
        }
        push_out(&b, at, scope, file, line_no);
        at = next;
    }
    if (line_end > hi)
        hi = line_end;
    if (hi - lo > UINT32_MAX) {
        rc = err_set(err, ERR_UNSUPPORTED, "code spans %llu bytes; symcaches cover at most 4 GiB",
                     (unsigned long long)(hi - lo));
        goto done;
    }
    push_out(&b, hi, SYMC_NONE, SYMC_NONE, 0); /* sentinel */
    phase_mark(&clock, "build.merge");
    if (b.nranges >= UINT32_MAX || b.nscopes >= UINT32_MAX) {
        rc = err_set(err, ERR_UNSUPPORTED, "too many ranges for one symcache");
        goto done;
    }
    if (b.strings.full) {
        rc = err_set(err, ERR_TOO_LARGE, "symcache strings over 4 GiB");
        goto done;
    }

    /* names: sorted (neighbours share most bytes), then compressed in blocks */
    uint32_t *rank = NULL;
    buf names_index, names_data, display;
    buf_init(&names_index);
    buf_init(&names_data);
    buf_init(&display);
    size_t nnames = 0;
    granules_job gj[2];
    memset(gj, 0, sizeof gj);
    uint32_t *gindex = NULL;
    bool with_display = extra != NULL && extra->display_names;
    rc = write_names(&names_index, &names_data, with_display ? &display : NULL, &rank, &nnames, &b.names, threads,
                     err);
    if (rc != ERR_OK)
        goto done_names;
    phase_mark(&clock, "build.names");

    /* granules, two halves on two threads: range starts that are all 4-aligned (arm64) are
     * counted in 4-byte units */
    unsigned unit_shift = 2;
    for (size_t k = 0; k < b.nranges && unit_shift > 0; k++)
        if (b.ranges[k].start % 4 != 0)
            unit_shift = 0;
    unsigned gshift = unit_shift + SYMC_GRANULE_UNIT_BITS;
    size_t ngranules = ((size_t)b.ranges[b.nranges - 1].start >> gshift) + 1;
    unsigned w_name = bits0(nnames > 0 ? nnames - 1 : 0);
    gindex = xcalloc(ngranules + 1, sizeof *gindex);
    unsigned halves = threads > 1 && ngranules > 1 ? 2 : 1;
    pthread_t gtid;
    bool gthreaded = false;
    for (unsigned h = 0; h < halves; h++) {
        gj[h] = (granules_job){&b, rank, w_name, unit_shift, ngranules * h / halves, ngranules * (h + 1) / halves,
                               gindex + ngranules * h / halves, {0}, ERR_OK};
        buf_init(&gj[h].data);
    }
    if (halves == 2)
        gthreaded = pthread_create(&gtid, NULL, encode_granules_thread, &gj[1]) == 0;
    encode_granules_thread(&gj[0]);
    if (halves == 2) {
        if (gthreaded)
            pthread_join(gtid, NULL);
        else
            encode_granules_thread(&gj[1]);
    }
    size_t gsize = gj[0].data.len + (halves == 2 ? gj[1].data.len : 0);
    if (gj[0].rc != ERR_OK || gj[1].rc != ERR_OK)
        rc = err_set(err, ERR_UNSUPPORTED, "a granule needs more than 65535 functions");
    else if (gsize > UINT32_MAX)
        rc = err_set(err, ERR_UNSUPPORTED, "range records over 4 GiB");
    if (rc != ERR_OK)
        goto done_names;
    for (size_t g = gj[1].first; halves == 2 && g < ngranules; g++)
        gindex[g] += (uint32_t)gj[0].data.len;
    gindex[ngranules] = (uint32_t)gsize;
    phase_mark(&clock, "build.granules");

    /* header */
    uint8_t hdr[8] = {0};
    memcpy(hdr, SYMC_MAGIC, sizeof SYMC_MAGIC);
    buf_append(out, hdr, 8);
    buf_append_u32le(out, SYMCACHE_VERSION);
    buf_append_u32le(out, (di->nranges > 0 || di->nrows > 0 ? SYMC_FLAG_DWARF : 0) |
                              (di->hidden.left > 0 ? SYMC_FLAG_HIDDEN : 0) |
                              (di->revealed ? SYMC_FLAG_REVEALED : 0) |
                              (extra != NULL && extra->breakpad ? SYMC_FLAG_BREAKPAD : 0));
    buf_append(out, img->uuid, 16);
    buf_append_u32le(out, img->cputype);
    buf_append_u32le(out, img->cpusubtype);
    buf_append_u64le(out, img->has_text ? img->text_vmaddr : 0);
    buf_append_u64le(out, b.base);
    buf_append_u32le(out, (uint32_t)b.nranges);
    buf_append_u32le(out, (uint32_t)b.nscopes);
    buf_append_u32le(out, (uint32_t)b.strings.bytes.len);
    buf_append_u32le(out, name_off);
    buf_append_u32le(out, (uint32_t)b.nfiles);
    buf_append_u32le(out, (uint32_t)ngranules);
    buf_append_u32le(out, (uint32_t)nnames);
    buf_append_u32le(out, unit_shift | w_name << 8);
    buf_append_u32le(out, (uint32_t)names_data.len);
    buf_append_u32le(out, (uint32_t)gsize);
    /* tables */
    buf_reserve(out, (ngranules + 1) * 4 + b.nfiles * 4 + names_index.len + names_data.len + gsize +
                         SYMC_GRANULE_PAD + b.strings.bytes.len);
    for (size_t g = 0; g <= ngranules; g++)
        buf_append_u32le(out, gindex[g]);
    for (size_t k = 0; k < b.nfiles; k++)
        buf_append_u32le(out, b.files[k]);
    buf_append(out, names_index.data, names_index.len);
    buf_append(out, names_data.data, names_data.len);
    for (unsigned h = 0; h < halves; h++)
        buf_append(out, gj[h].data.data, gj[h].data.len);
    static const uint8_t pad[SYMC_GRANULE_PAD];
    buf_append(out, pad, sizeof pad);
    buf_append(out, b.strings.bytes.data, b.strings.bytes.len);
    if (with_display)
        symcache_section_append(out, SYMC_TAG_DISPLAY, display.data, display.len);
done_names:
    buf_reset(&gj[0].data);
    buf_reset(&gj[1].data);
    free(gindex);
    buf_reset(&names_index);
    buf_reset(&names_data);
    buf_reset(&display);
    free(rank);
    if (rc != ERR_OK)
        goto done;
    if (stats != NULL) {
        stats->functions = (uint32_t)b.nscopes;
        stats->ranges = (uint32_t)b.nranges;
    }
done:
    free(scopes.v);
    line_cursor_free(&lines);
    free(syms.v);
    free(b.scope_map);
    free(b.symbol_map);
    free(b.name_map);
    free(b.qual_map);
    strtab_reset(&b.qual_names);
    free(b.file_map);
    free(b.scopes);
    free(b.ranges);
    free(b.files);
    free(b.file_of_id);
    strtab_reset(&b.strings);
    free(b.names.ids);
    phase_mark(&clock, "build.write");
    return rc;
}
