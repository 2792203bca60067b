/*
 * symcache_v1 reader: mmap, validate once at open, then lock-free lookups.
 */
#include "symcache_v1.h"

#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/xalloc.h"
#include "macho/macho.h"
#include "symcache_v1_format.h"

struct symcache_v1 {
    bytes map;              /* owned mapping, or zeroed when opened over caller bytes */
    const uint8_t *data;
    size_t len;
    uint32_t version, flags, cputype, cpusubtype;
    uint8_t uuid[16];
    uint64_t text_vmaddr, base;
    uint32_t nranges, nscopes, strings_size, image_name, nfiles, nblocks;
    const uint8_t *blocks;  /* symc_block[nblocks] */
    const uint8_t *files;   /* u32[nfiles] string offsets */
    const uint8_t *scopes;  /* symc_scope[nscopes], SYMC_SCOPE_SIZE bytes each */
    const uint8_t *records; /* block_data */
    size_t records_len;
    const char *strings;
};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
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
    } else {
        if (!get_uleb(p, end, &delta) || !get_uleb(p, end, &scope) || !get_uleb(p, end, &file) ||
            !get_uleb(p, end, &line) || delta == 0 || delta > UINT32_MAX - r->start)
            return false;
        r->start += (uint32_t)delta;
        r->scope1 = (uint64_t)((int64_t)r->scope1 + unzigzag(scope));
        r->line = (uint64_t)((int64_t)r->line + unzigzag(line));
    }
    r->file1 = file;
    return true;
}

static uint32_t block_start(const symcache_v1 *sc, uint32_t b)
{
    return rd32(sc->blocks + (size_t)b * SYMC_BLOCK_SIZE);
}

static uint32_t block_records(const symcache_v1 *sc, uint32_t b)
{
    return rd32(sc->blocks + (size_t)b * SYMC_BLOCK_SIZE + 4);
}

static uint32_t block_count(const symcache_v1 *sc, uint32_t b)
{
    return b + 1 < sc->nblocks ? SYMC_BLOCK_RANGES : sc->nranges - b * SYMC_BLOCK_RANGES;
}

static err_code check(symcache_v1 *sc, err_info *err)
{
    const uint8_t *d = sc->data;
    if (sc->len < SYMC_HEADER_SIZE || memcmp(d, SYMC_MAGIC, 8) != 0)
        return err_set(err, ERR_INVALID, "not a symcache_v1: bad magic or %zu-byte file", sc->len);
    sc->version = rd32(d + 8);
    /* older: rebuild it from the dSYM (a distinct code the server acts on); newer: unknown */
    if (sc->version < SYMCACHE_VERSION)
        return err_set(err, ERR_OUTDATED,
                       "symcache_v1 format version %u is outdated (this build reads %u): rebuild it from the dSYM",
                       sc->version, SYMCACHE_VERSION);
    if (sc->version != SYMCACHE_VERSION)
        return err_set(err, ERR_UNSUPPORTED, "symcache_v1 format version %u is not supported (this build reads %u)",
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
    if (sc->nranges == 0 || sc->strings_size == 0)
        return err_set(err, ERR_INVALID, "corrupt symcache_v1: no ranges or no strings");
    if (sc->nblocks != (sc->nranges + SYMC_BLOCK_RANGES - 1) / SYMC_BLOCK_RANGES)
        return err_set(err, ERR_INVALID, "corrupt symcache_v1: %u blocks cannot hold %u ranges", sc->nblocks,
                       sc->nranges);
    uint64_t fixed = SYMC_HEADER_SIZE + (uint64_t)sc->nblocks * SYMC_BLOCK_SIZE + (uint64_t)sc->nfiles * 4 +
                     (uint64_t)sc->nscopes * SYMC_SCOPE_SIZE + sc->strings_size;
    if (fixed > sc->len)
        return err_set(err, ERR_INVALID, "corrupt symcache_v1: tables need %llu bytes, file has %zu",
                       (unsigned long long)fixed, sc->len);
    sc->blocks = d + SYMC_HEADER_SIZE;
    sc->files = sc->blocks + (size_t)sc->nblocks * SYMC_BLOCK_SIZE;
    sc->scopes = sc->files + (size_t)sc->nfiles * 4;
    sc->records = sc->scopes + (size_t)sc->nscopes * SYMC_SCOPE_SIZE;
    sc->records_len = sc->len - (size_t)fixed;
    sc->strings = (const char *)sc->records + sc->records_len;
    if (sc->strings[sc->strings_size - 1] != '\0')
        return err_set(err, ERR_INVALID, "corrupt symcache_v1: string table is not terminated");
    if (sc->image_name >= sc->strings_size)
        return err_set(err, ERR_INVALID, "corrupt symcache_v1: image name offset %u out of range",
                       sc->image_name);
    /* One pass over every table, so that lookups can trust what they follow: ordered starts
     * for the binary searches, every record decodable inside its block, every scope index,
     * file index and string offset in range. */
    for (uint32_t i = 0; i < sc->nfiles; i++)
        if (rd32(sc->files + (size_t)i * 4) >= sc->strings_size)
            return err_set(err, ERR_INVALID, "corrupt symcache_v1: file %u points outside the strings", i);
    const uint8_t *end = sc->records + sc->records_len;
    for (uint32_t b = 0; b < sc->nblocks; b++) {
        uint32_t off = block_records(sc, b);
        if (off >= sc->records_len || (b > 0 && off <= block_records(sc, b - 1)))
            return err_set(err, ERR_INVALID, "corrupt symcache_v1: block %u has a bad record offset", b);
        const uint8_t *p = sc->records + off;
        record r = {block_start(sc, b), 0, 0, 0};
        for (uint32_t k = 0; k < block_count(sc, b); k++) {
            if (!next_record(&p, end, k == 0, &r) || r.scope1 > sc->nscopes || r.file1 > sc->nfiles ||
                r.line > UINT32_MAX)
                return err_set(err, ERR_INVALID, "corrupt symcache_v1: range record %u of block %u is malformed",
                               k, b);
        }
        if (b + 1 < sc->nblocks && block_start(sc, b + 1) <= r.start)
            return err_set(err, ERR_INVALID, "corrupt symcache_v1: block %u is out of order", b + 1);
    }
    for (uint32_t i = 0; i < sc->nscopes; i++) {
        const uint8_t *s = sc->scopes + (size_t)i * SYMC_SCOPE_SIZE;
        uint32_t name = rd32(s), parent = rd32(s + 4), c = rd32(s + 8);
        bool bad = name >= sc->strings_size || parent == i ||
                   (parent != SYMC_NONE && parent >= sc->nscopes) ||
                   (parent != SYMC_NONE ? c != SYMC_NONE && c >= sc->strings_size
                                        : c != SYMC_KIND_DWARF && c != SYMC_KIND_SYMTAB);
        if (bad)
            return err_set(err, ERR_INVALID, "corrupt symcache_v1: scope %u points outside its tables", i);
    }
    return ERR_OK;
}

err_code symcache_v1_open_bytes(symcache_v1 **out, const uint8_t *data, size_t len, err_info *err)
{
    symcache_v1 *sc = xcalloc(1, sizeof *sc);
    *out = NULL;
    sc->data = data;
    sc->len = len;
    err_code rc = check(sc, err);
    if (rc != ERR_OK) {
        symcache_v1_close(sc);
        return rc;
    }
    *out = sc;
    return ERR_OK;
}

err_code symcache_v1_open(symcache_v1 **out, const char *path, err_info *err)
{
    symcache_v1 *sc = xcalloc(1, sizeof *sc);
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
    symcache_v1_close(sc);
    return rc;
}

void symcache_v1_close(symcache_v1 *sc)
{
    if (sc == NULL)
        return;
    bytes_unmap(&sc->map);
    free(sc);
}

static const char *string_at(const symcache_v1 *sc, uint32_t off)
{
    return off < sc->strings_size ? sc->strings + off : NULL;
}

size_t symcache_v1_lookup(symcache_frame *out, size_t cap, const symcache_v1 *sc, uint64_t file_addr)
{
    if (cap == 0 || file_addr < sc->base || file_addr - sc->base > UINT32_MAX)
        return 0;
    uint32_t rel = (uint32_t)(file_addr - sc->base);
    /* the last block whose first start <= rel */
    uint32_t lo = 0, hi = sc->nblocks;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (block_start(sc, mid) <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    uint32_t b = lo - 1;
    /* then the last record of that block starting at or before rel (checked at open) */
    const uint8_t *p = sc->records + block_records(sc, b), *end = sc->records + sc->records_len;
    record r = {block_start(sc, b), 0, 0, 0}, hit;
    uint32_t n_in_block = block_count(sc, b);
    if (!next_record(&p, end, true, &r))
        return 0;
    hit = r;
    for (uint32_t k = 1; k < n_in_block; k++) {
        if (!next_record(&p, end, false, &r) || r.start > rel)
            break;
        hit = r;
    }
    uint32_t scope = hit.scope1 == 0 ? SYMC_NONE : (uint32_t)(hit.scope1 - 1);
    const char *file = hit.file1 == 0 ? NULL : string_at(sc, rd32(sc->files + (size_t)(hit.file1 - 1) * 4));
    uint32_t line = (uint32_t)hit.line;
    if (scope == SYMC_NONE && file == NULL)
        return 0;
    if (scope == SYMC_NONE) {
        out[0] = (symcache_frame){"??", file, line, false, false, file_addr, NULL, NULL};
        return 1;
    }
    /* Indexes were checked at open; a parent cycle in a crafted file ends at the frame cap.
     * The inlinees' entry address is not stored: frames of one chain share the concrete
     * function's entry, written once the walk reaches it. */
    size_t n = 0;
    while (n < cap && n < SYMCACHE_MAX_FRAMES) {
        const uint8_t *s = sc->scopes + (size_t)scope * SYMC_SCOPE_SIZE;
        uint32_t parent = rd32(s + 4);
        const char *name = string_at(sc, rd32(s));
        out[n].function = name ? name : "??";
        out[n].file = file;
        out[n].line = line;
        out[n].inlined = parent != SYMC_NONE;
        out[n].from_symtab = false;
        out[n].sym_addr = 0;
        n++;
        if (parent == SYMC_NONE) {
            uint64_t entry = sc->base + rd32(s + 12);
            out[n - 1].from_symtab = rd32(s + 8) == SYMC_KIND_SYMTAB;
            for (size_t k = 0; k < n; k++)
                out[k].sym_addr = entry;
            break;
        }
        uint32_t call_file = rd32(s + 8);
        file = call_file == SYMC_NONE ? NULL : string_at(sc, call_file);
        line = rd32(s + 12);
        scope = parent;
    }
    return n;
}

const uint8_t *symcache_v1_uuid(const symcache_v1 *sc)
{
    return sc->uuid;
}

uint32_t symcache_v1_cputype(const symcache_v1 *sc)
{
    return sc->cputype;
}

uint32_t symcache_v1_cpusubtype(const symcache_v1 *sc)
{
    return sc->cpusubtype;
}

const char *symcache_v1_arch(const symcache_v1 *sc)
{
    return macho_arch_name(sc->cputype, sc->cpusubtype);
}

const char *symcache_v1_image_name(const symcache_v1 *sc)
{
    return sc->strings + sc->image_name;
}

uint64_t symcache_v1_text_vmaddr(const symcache_v1 *sc)
{
    return sc->text_vmaddr;
}

bool symcache_v1_has_dwarf(const symcache_v1 *sc)
{
    return (sc->flags & SYMC_FLAG_DWARF) != 0;
}

uint32_t symcache_v1_range_count(const symcache_v1 *sc)
{
    return sc->nranges;
}

uint32_t symcache_v1_function_count(const symcache_v1 *sc)
{
    return sc->nscopes;
}
