/*
 * symcache reader: mmap, validate once at open, then lock-free lookups.
 */
#include "symcache/symcache.h"

#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/xalloc.h"
#include "macho/macho.h"
#include "symcache/symcache_format.h"

struct symcache {
    bytes map;              /* owned mapping, or zeroed when opened over caller bytes */
    const uint8_t *data;
    size_t len;
    uint32_t version, flags, cputype, cpusubtype;
    uint8_t uuid[16];
    uint64_t text_vmaddr, base;
    uint32_t nranges, nscopes, strings_size, image_name;
    const uint8_t *starts;  /* u32[nranges] */
    const uint8_t *infos;   /* symc_range[nranges], 12 bytes each */
    const uint8_t *scopes;  /* symc_scope[nscopes], SYMC_SCOPE_SIZE bytes each */
    const char *strings;
    /* every SYMC_INDEX_STRIDE-th range start, in memory: the first steps of a lookup's binary
     * search stay in cache instead of missing on each probe of a large mapped table */
    uint32_t *index;
    uint32_t nindex;
};

#define SYMC_INDEX_STRIDE 64u

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static err_code check(symcache *sc, err_info *err)
{
    const uint8_t *d = sc->data;
    if (sc->len < SYMC_HEADER_SIZE || memcmp(d, SYMC_MAGIC, 8) != 0)
        return err_set(err, ERR_INVALID, "not a symcache: bad magic or %zu-byte file", sc->len);
    sc->version = rd32(d + 8);
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
    uint64_t need = SYMC_HEADER_SIZE + (uint64_t)sc->nranges * 16 + (uint64_t)sc->nscopes * SYMC_SCOPE_SIZE +
                    sc->strings_size;
    if (need != sc->len)
        return err_set(err, ERR_INVALID, "corrupt symcache: tables need %llu bytes, file has %zu",
                       (unsigned long long)need, sc->len);
    if (sc->nranges == 0 || sc->strings_size == 0)
        return err_set(err, ERR_INVALID, "corrupt symcache: no ranges or no strings");
    sc->starts = d + SYMC_HEADER_SIZE;
    sc->infos = sc->starts + (size_t)sc->nranges * 4;
    sc->scopes = sc->infos + (size_t)sc->nranges * 12;
    sc->strings = (const char *)sc->scopes + (size_t)sc->nscopes * SYMC_SCOPE_SIZE;
    if (sc->strings[sc->strings_size - 1] != '\0')
        return err_set(err, ERR_INVALID, "corrupt symcache: string table is not terminated");
    if (sc->image_name >= sc->strings_size)
        return err_set(err, ERR_INVALID, "corrupt symcache: image name offset %u out of range",
                       sc->image_name);
    /* One pass over each table, so that lookups can trust what they follow: ordered range
     * starts for the binary search, and every scope index and string offset in range. */
    uint32_t prev = rd32(sc->starts);
    for (uint32_t i = 1; i < sc->nranges; i++) {
        uint32_t s = rd32(sc->starts + (size_t)i * 4);
        if (s <= prev)
            return err_set(err, ERR_INVALID, "corrupt symcache: range %u is out of order", i);
        prev = s;
    }
    for (uint32_t i = 0; i < sc->nranges; i++) {
        const uint8_t *info = sc->infos + (size_t)i * 12;
        uint32_t scope = rd32(info), file = rd32(info + 4);
        if ((scope != SYMC_NONE && scope >= sc->nscopes) || (file != SYMC_NONE && file >= sc->strings_size))
            return err_set(err, ERR_INVALID, "corrupt symcache: range %u points outside its tables", i);
    }
    for (uint32_t i = 0; i < sc->nscopes; i++) {
        const uint8_t *s = sc->scopes + (size_t)i * SYMC_SCOPE_SIZE;
        uint32_t name = rd32(s), parent = rd32(s + 4), c = rd32(s + 8);
        bool bad = name >= sc->strings_size || parent == i ||
                   (parent != SYMC_NONE && parent >= sc->nscopes) ||
                   (parent != SYMC_NONE ? c != SYMC_NONE && c >= sc->strings_size
                                        : c != SYMC_KIND_DWARF && c != SYMC_KIND_SYMTAB);
        if (bad)
            return err_set(err, ERR_INVALID, "corrupt symcache: scope %u points outside its tables", i);
    }
    sc->nindex = (sc->nranges + SYMC_INDEX_STRIDE - 1) / SYMC_INDEX_STRIDE;
    sc->index = xmalloc(sc->nindex * sizeof *sc->index);
    for (uint32_t k = 0; k < sc->nindex; k++)
        sc->index[k] = rd32(sc->starts + (size_t)k * SYMC_INDEX_STRIDE * 4);
    return ERR_OK;
}

err_code symcache_open_bytes(symcache **out, const uint8_t *data, size_t len, err_info *err)
{
    symcache *sc = xcalloc(1, sizeof *sc);
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
    symcache *sc = xcalloc(1, sizeof *sc);
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
    bytes_unmap(&sc->map);
    free(sc->index);
    free(sc);
}

static const char *string_at(const symcache *sc, uint32_t off)
{
    return off < sc->strings_size ? sc->strings + off : NULL;
}

size_t symcache_lookup(symcache_frame *out, size_t cap, const symcache *sc, uint64_t file_addr)
{
    if (cap == 0 || file_addr < sc->base || file_addr - sc->base > UINT32_MAX)
        return 0;
    uint32_t rel = (uint32_t)(file_addr - sc->base);
    /* last range whose start <= rel: first in the in-memory index, then within one block */
    uint32_t lo = 0, hi = sc->nindex;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sc->index[mid] <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    hi = lo * SYMC_INDEX_STRIDE < sc->nranges ? lo * SYMC_INDEX_STRIDE : sc->nranges;
    lo = (lo - 1) * SYMC_INDEX_STRIDE;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (rd32(sc->starts + (size_t)mid * 4) <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const uint8_t *info = sc->infos + (size_t)(lo - 1) * 12;
    uint32_t scope = rd32(info), file = rd32(info + 4), line = rd32(info + 8);
    if (scope == SYMC_NONE && file == SYMC_NONE)
        return 0;
    if (scope == SYMC_NONE) {
        out[0] = (symcache_frame){"??", string_at(sc, file), line, false, false, file_addr};
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
        out[n].file = string_at(sc, file);
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
        file = rd32(s + 8);
        line = rd32(s + 12);
        scope = parent;
    }
    return n;
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
