/*
 * dSYM inputs -> symcaches. Directory walks are sorted for a stable order; zip entries are
 * streamed to a private temp file in OUTDIR (never to a path derived from the entry name),
 * mapped, converted and unlinked.
 */
#include "dsym/dsym.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>

#include "base/buf.h"
#include "base/bytes.h"
#include "base/xalloc.h"
#include "breakpad/breakpad.h"
#include "debuginfo/debuginfo.h"
#include "dsym/dsym_breakpad.h"
#include "macho/macho.h"
#include "symcache/symcache.h"
#include "symcache/symcache_build.h"
#include "base/phase.h"

#define DEFAULT_MAX_UNPACKED (8ull << 30)
#define DEFAULT_MAX_RATIO 200u
#define DEFAULT_MAX_ENTRIES 100000u
#define MAX_DIR_DEPTH 16

/* A UUID map: slice `uuid` was built from `original`. */
typedef struct {
    char uuid[37], original[37];
} uuid_entry;

/* A BCSymbolMap for `uuid`; from_input: brought by the input (not a folder or the lookup). */
typedef struct {
    char uuid[37];
    symbolmap *map;
    bool from_input;
} map_entry;

typedef struct {
    const char *out_dir;
    dsym_options opts;
    dsym_built_fn fn;
    void *ctx;
    size_t built;
    size_t maps_found;     /* UUID maps and BCSymbolMaps the input brought */
    uuid_entry *uuidmaps;  /* xmalloc'd */
    size_t nuuidmaps;
    map_entry *maps;       /* xmalloc'd; the maps owned */
    size_t nmaps;
    char beside_dir[4096]; /* opts.maps_beside: the input file's folder; "" = none */
    dsym_built *done;      /* xmalloc'd: every slice reported so far, for merges */
    size_t ndone;
} job;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool is_macho_magic(const uint8_t *p, size_t n)
{
    if (n < 4)
        return false;
    uint32_t le = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    uint32_t be = (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
    return le == 0xfeedfaceu || le == 0xfeedfacfu || be == 0xcafebabeu || be == 0xcafebabfu;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Write `b` to OUTDIR/<uuid>.symc through a temp file and rename: readers never see half. */
static err_code write_atomically(const char *path, const buf *b, err_info *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_set(err, ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(fd, b->data + off, b->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return err_set(err, ERR_IO, "cannot write %s: %s", tmp, strerror(e));
        }
        off += (size_t)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return err_set(err, ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return err_set(err, ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return ERR_OK;
}

/* What merge_existing decided. */
typedef enum {
    MERGE_NEW,       /* no usable symcache there: write the new one as it is */
    MERGE_NEW_BASE,  /* the new one's names, with sections of the old one it lacked */
    MERGE_OLD_BASE,  /* the old one's names (DWARF over this symbol table), with new sections */
    MERGE_UNCHANGED, /* the old one's names, and the new one brings no section it lacks */
} merge_outcome;

/* names_rank - whose names a merge keeps: DWARF (2) over a Breakpad .sym's (1) over a
 * symbol table's (0) */
static int names_rank(const symcache *sc)
{
    return symcache_has_dwarf(sc) ? (symcache_from_breakpad(sc) ? 1 : 2) : 0;
}

/* merge_existing - the symcache of the same UUID already at `path` (built before from this
 * input, e.g. a dSYM and its executable in one zip in either order, or by an earlier run
 * into the same folder) and the new one in `out` become one: a symbol-table-only build never
 * replaces DWARF names, nor a Breakpad .sym's, and a .sym's never replaces DWARF (an outdated
 * or unreadable file is replaced), and each file's sections (unwind info: the executable's,
 * the .sym's STACK CFI) are kept. `out` is replaced by the merge. */
static merge_outcome merge_existing(buf *out, const char *path)
{
    symcache *old = NULL, *cur = NULL;
    err_info err = {0};
    merge_outcome m = MERGE_NEW;
    if (symcache_open(&old, path, &err) != ERR_OK)
        return MERGE_NEW; /* missing, outdated or corrupt: replace it */
    if (symcache_open_bytes(&cur, out->data, out->len, &err) != ERR_OK)
        goto done;
    bool old_base = names_rank(old) > names_rank(cur);
    buf merged;
    buf_init(&merged);
    if (symcache_merge(&merged, old_base ? old : cur, old_base ? cur : old, &err) != ERR_OK) {
        buf_reset(&merged);
        m = old_base ? MERGE_UNCHANGED : MERGE_NEW; /* another image: as before sections */
        goto done;
    }
    symcache_close(cur); /* it reads `out` */
    cur = NULL;
    if (old_base && merged.len == symcache_size(old)) {
        m = MERGE_UNCHANGED;
        buf_reset(&merged);
        goto done;
    }
    buf_reset(out);
    *out = merged;
    m = old_base ? MERGE_OLD_BASE : MERGE_NEW_BASE;
done:
    symcache_close(cur);
    symcache_close(old);
    return m;
}

/* A slice built: counted, kept for later merges (done_for) and reported to the caller's
 * callback, which gets `b` itself. */
static void job_report(job *j, const dsym_built *b)
{
    j->built++;
    j->done = xreallocarray(j->done, j->ndone + 1, sizeof *j->done);
    j->done[j->ndone++] = *b;
    if (j->fn != NULL)
        j->fn(b, j->ctx);
}

/* The slice reported before for `uuid` in this job, or NULL. */
static const dsym_built *done_for(const job *j, const char *uuid)
{
    for (size_t i = j->ndone; i-- > 0;)
        if (strcmp(j->done[i].uuid, uuid) == 0)
            return &j->done[i];
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- UUID maps and BCSymbolMaps ----------------------------------------------------------- */

static bool has_suffix(const char *name, const char *ext)
{
    size_t n = strlen(name), e = strlen(ext);
    return n >= e && strcasecmp(name + n - e, ext) == 0;
}

static uint64_t max_map_bytes(const job *j)
{
    return j->opts.max_map_bytes ? j->opts.max_map_bytes : DSYM_DEFAULT_MAX_MAP_BYTES;
}

static const char *uuidmap_original(const job *j, const char *uuid)
{
    for (size_t i = 0; i < j->nuuidmaps; i++)
        if (strcmp(j->uuidmaps[i].uuid, uuid) == 0)
            return j->uuidmaps[i].original;
    return NULL;
}

static map_entry *map_for(const job *j, const char *uuid)
{
    for (size_t i = 0; i < j->nmaps; i++)
        if (strcmp(j->maps[i].uuid, uuid) == 0)
            return &j->maps[i];
    return NULL;
}

static void keep_map(job *j, const char *uuid, symbolmap *m, bool from_input)
{
    map_entry *old = map_for(j, uuid);
    if (old != NULL) {          /* the same map twice (a fat archive's copies): keep one */
        symbolmap_free(old->map);
        old->map = m;
        old->from_input |= from_input;
        return;
    }
    j->maps = xreallocarray(j->maps, j->nmaps + 1, sizeof *j->maps);
    map_entry *e = &j->maps[j->nmaps++];
    snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
    e->map = m;
    e->from_input = from_input;
}

static void keep_uuidmap(job *j, const char *uuid, const char *original)
{
    for (size_t i = 0; i < j->nuuidmaps; i++)
        if (strcmp(j->uuidmaps[i].uuid, uuid) == 0) {
            snprintf(j->uuidmaps[i].original, 37, "%s", original);
            return;
        }
    j->uuidmaps = xreallocarray(j->uuidmaps, j->nuuidmaps + 1, sizeof *j->uuidmaps);
    uuid_entry *e = &j->uuidmaps[j->nuuidmaps++];
    snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
    snprintf(e->original, sizeof e->original, "%s", original);
}

/* A file that may be a map: named *.bcsymbolmap or *.plist, or (`alone`: the whole input)
 * starting like one. */
static bool looks_like_map(const char *name, const uint8_t *data, size_t len, bool alone)
{
    if (has_suffix(name, ".bcsymbolmap") || has_suffix(name, ".plist"))
        return true;
    return alone && (symbolmap_test(data, len) || symbolmap_uuidmap_test(data, len));
}

/* Read map file `name` (`data`, `len`) into the job and tell opts.map_found. `alone`: the
 * file is the whole input (a plist not named for a UUID is then an error, not an Info.plist
 * to pass by). */
static err_code add_map(job *j, const char *name, const uint8_t *data, size_t len, bool alone,
                        err_info *err)
{
    dsym_map m;
    memset(&m, 0, sizeof m);
    m.name = name;
    m.data = data;
    m.len = len;
    char named[37] = "", given[37] = "";
    if (j->opts.map_uuid && j->opts.map_uuid[0] &&
        !symbolmap_uuid_normalize(given, j->opts.map_uuid, strlen(j->opts.map_uuid)))
        return err_set(err, ERR_INVALID, "%s: debug id \"%.64s\" is not a UUID", name,
                       j->opts.map_uuid);
    bool bcsymbolmap = has_suffix(name, ".bcsymbolmap") || symbolmap_test(data, len);
    const char *ext = bcsymbolmap ? ".bcsymbolmap" : ".plist";
    bool has_name = symbolmap_uuid_from_name(named, name, ext);
    if (!has_name && !bcsymbolmap && !alone)
        return ERR_OK;   /* Info.plist and other property lists inside a bundle */
    if (!alone)
        given[0] = '\0'; /* map_uuid is for a map sent alone */
    if (has_name && given[0] && strcmp(named, given) != 0)
        return err_set(err, ERR_INVALID, "%s is named for UUID %s but was sent for %s: a map "
                       "for another build", name, named, given);
    if (!has_name && !given[0])
        return err_set(err, ERR_INVALID, "%s is not named for a UUID (<UUID>%s), and no UUID "
                       "was given for it", name, ext);
    snprintf(m.uuid, sizeof m.uuid, "%s", has_name ? named : given);
    err_code rc;
    if (bcsymbolmap) {
        symbolmap *parsed = NULL;
        rc = symbolmap_parse(&parsed, data, len, max_map_bytes(j), err);
        if (rc != ERR_OK)
            return err_prefix(err, "%s", name);
        m.kind = DSYM_MAP_BCSYMBOLMAP;
        m.names = symbolmap_count(parsed);
        keep_map(j, m.uuid, parsed, true);
    } else {
        rc = symbolmap_uuidmap_parse(m.original, data, len, err);
        if (rc != ERR_OK)
            return err_prefix(err, "%s", name);
        m.kind = DSYM_MAP_UUIDMAP;
        keep_uuidmap(j, m.uuid, m.original);
    }
    j->maps_found++;
    if (j->opts.map_found != NULL)
        return j->opts.map_found(&m, j->opts.map_found_ctx, err);
    return ERR_OK;
}

/* Map file `path` (named `name`) into the job when it looks like a map; a file over the map
 * limit is refused before it is read. */
static err_code add_map_file(job *j, const char *path, const char *name, bool alone,
                             err_info *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    uint64_t limit = has_suffix(name, ".plist") ? SYMBOLMAP_MAX_UUIDMAP_BYTES : max_map_bytes(j);
    if ((uint64_t)st.st_size > limit)
        return err_set(err, ERR_TOO_LARGE, "%s has %lld bytes, over the limit of %llu for a %s",
                       name, (long long)st.st_size, (unsigned long long)limit,
                       has_suffix(name, ".plist") ? "UUID map" : "BCSymbolMap");
    if (st.st_size == 0)
        return alone ? err_set(err, ERR_INVALID, "%s is empty", name) : ERR_OK;
    bytes b;
    err_code rc = bytes_map_file(&b, path, err);
    if (rc != ERR_OK)
        return rc;
    rc = add_map(j, name, b.data, b.len, alone, err);
    bytes_unmap(&b);
    return rc;
}

static err_code walk_dir(job *j, const char *dir, int depth, bool maps_only, err_info *err);

/* Before any slice: every map under `dir` (the same sorted walk as the slices'). */
static err_code collect_maps_dir(job *j, const char *dir, int depth, err_info *err)
{
    return walk_dir(j, dir, depth, true, err);
}

/* A map in folder `dir`: `<uuid><ext>`, the UUID upper or lower case. Loaded into the job
 * (not from the input); false when there is none or it does not parse (`why` says). */
static bool load_from_dir(job *j, const char *dir, const char *uuid, bool bcsymbolmap,
                          char *why, size_t why_cap)
{
    for (int lower = 0; lower < 2; lower++) {
        char u[37], path[4200];
        for (size_t i = 0; i < 37; i++)
            u[i] = lower ? (char)tolower((unsigned char)uuid[i]) : uuid[i];
        snprintf(path, sizeof path, "%s/%s%s", dir, u, bcsymbolmap ? ".bcsymbolmap" : ".plist");
        bytes b;
        err_info e = {0};
        if (bytes_map_file(&b, path, &e) != ERR_OK)
            continue;
        err_code rc;
        if (bcsymbolmap) {
            symbolmap *m = NULL;
            rc = symbolmap_parse(&m, b.data, b.len, max_map_bytes(j), &e);
            if (rc == ERR_OK)
                keep_map(j, uuid, m, false);
        } else {
            char original[37];
            rc = symbolmap_uuidmap_parse(original, b.data, b.len, &e);
            if (rc == ERR_OK)
                keep_uuidmap(j, uuid, original);
        }
        bytes_unmap(&b);
        if (rc == ERR_OK)
            return true;
        int w = snprintf(why, why_cap, "%.*s", (int)(why_cap > 1 ? why_cap - 1 : 0), e.msg);
        (void)w;   /* truncated to the caller's line: the message says which map it was */
        return false;
    }
    return false;
}

/* The folders a map may sit in besides the input: opts.symbol_maps_dir, the input's own. */
static bool load_from_dirs(job *j, const char *uuid, bool bcsymbolmap, char *why, size_t cap)
{
    const char *dirs[2] = {j->opts.symbol_maps_dir, j->beside_dir[0] ? j->beside_dir : NULL};
    for (int i = 0; i < 2; i++)
        if (dirs[i] && load_from_dir(j, dirs[i], uuid, bcsymbolmap, why, cap))
            return true;
    return false;
}

/* Reveal the hidden names of slice `uuid` (`di`, just loaded) with its BCSymbolMap, if there
 * are any and the map is found. map_uuid = the map's UUID when the slice is hidden; `warning`
 * says why a found map was not applied. A map the input brought that is too short for the
 * slice is an error (it is some other build's); one from elsewhere is a warning. */
static err_code reveal_slice(debuginfo *di, char map_uuid[37], char *warning, size_t cap,
                             job *j, const char *uuid, const char *name, err_info *err)
{
    debuginfo_hidden h;
    err_code rc = debuginfo_reveal(di, NULL, &h, err);
    if (rc != ERR_OK || h.hidden == 0)
        return rc;
    char original[37] = "";
    const char *known = uuidmap_original(j, uuid);
    if (known == NULL && load_from_dirs(j, uuid, false, warning, cap))
        known = uuidmap_original(j, uuid);
    if (known)
        snprintf(original, sizeof original, "%s", known);
    const char *key = original[0] ? original : uuid;
    map_entry *e = map_for(j, key);
    const symbolmap *m = e ? e->map : NULL;
    bool from_input = e && e->from_input;
    if (m == NULL && load_from_dirs(j, key, true, warning, cap) && (e = map_for(j, key)))
        m = e->map;
    if (m == NULL && j->opts.lookup != NULL) {
        m = j->opts.lookup(uuid, original, j->opts.lookup_ctx);
        key = original[0] ? original : uuid;
    }
    snprintf(map_uuid, 37, "%s", key);
    if (m == NULL)
        return ERR_OK;
    warning[0] = '\0';
    if (symbolmap_count(m) < h.max_index) {
        if (from_input)
            return err_set(err, ERR_INVALID, "BCSymbolMap %s has %u names but %s (%s) refers "
                           "to __hidden#%u_: it is the map of another build", key,
                           symbolmap_count(m), name, uuid, h.max_index - 1);
        snprintf(warning, cap, "BCSymbolMap %s has %u names but the slice refers to "
                 "__hidden#%u_: not applied", key, symbolmap_count(m), h.max_index - 1);
        return ERR_OK;
    }
    return debuginfo_reveal(di, m, &h, err);
}

static err_code build_slice(job *j, const uint8_t *data, size_t len, const char *name, err_info *err)
{
    double t0 = now_ms();
    phase_clock clock;
    phase_start(&clock);
    macho_image *img = xmalloc(sizeof *img);
    debuginfo di = {0};
    buf out;
    buf_init(&out);
    err_code rc = macho_parse(img, data, len, err);
    if (rc != ERR_OK)
        goto done;
    if (!img->has_uuid) {
        rc = err_set(err, ERR_INVALID, "%s (%s) has no LC_UUID", name,
                     macho_arch_name(img->cputype, img->cpusubtype));
        goto done;
    }
    phase_mark(&clock, "macho");
    rc = debuginfo_load(&di, img, j->opts.threads, err);
    if (rc != ERR_OK)
        goto done;
    char uuid[37], map_uuid[37] = "", map_warning[200] = "";
    macho_uuid_format(uuid, img->uuid);
    rc = reveal_slice(&di, map_uuid, map_warning, sizeof map_warning, j, uuid, name, err);
    if (rc != ERR_OK)
        goto done;
    symcache_build_stats stats;
    unsigned threads = j->opts.threads;
    if (threads == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        threads = ncpu > 0 ? (unsigned)ncpu : 1;
    }
    symcache_extra extra = {.display_names = j->opts.display_names};
    rc = symcache_build_extra(&out, &stats, img, &di, name, threads, &extra, err);
    if (rc != ERR_OK)
        goto done;
    phase_clock wclock;
    phase_start(&wclock);
    dsym_built b;
    memset(&b, 0, sizeof b);
    macho_uuid_format(b.uuid, img->uuid);
    snprintf(b.arch, sizeof b.arch, "%s", macho_arch_name(img->cputype, img->cpusubtype));
    snprintf(b.name, sizeof b.name, "%s", name);
    if ((size_t)snprintf(b.path, sizeof b.path, "%s/%s.symc", j->out_dir, b.uuid) >= sizeof b.path) {
        rc = err_set(err, ERR_INVALID, "output directory path is too long");
        goto done;
    }
    b.has_dwarf = di.nscopes > 0 || di.nrows > 0;
    /* what unwinding needs: an executable's or dylib's compact unwind and __eh_frame, a
     * dSYM's __debug_frame; unreadable unwind info costs only itself (a warning) */
    err_info uerr = {0};
    char unwind_warning[300] = "";
    if (symcache_unwind_append(&out, img, &uerr) != ERR_OK)
        snprintf(unwind_warning, sizeof unwind_warning, "unwind info left out: %s", uerr.msg);
    merge_outcome merged = merge_existing(&out, b.path);
    if (merged == MERGE_UNCHANGED) {
        j->built++; /* handled: the better symcache already there stays */
        goto done;
    }
    rc = write_atomically(b.path, &out, err);
    if (rc != ERR_OK)
        goto done;
    phase_mark(&wclock, "write_file");
    const dsym_built *prev = merged == MERGE_OLD_BASE ? done_for(j, b.uuid) : NULL;
    if (prev != NULL) {
        /* the names (and so every figure of the row) are the earlier slice's */
        char path[sizeof b.path];
        memcpy(path, b.path, sizeof path);
        b = *prev;
        memcpy(b.path, path, sizeof path);
    } else if (merged == MERGE_OLD_BASE) {
        /* built by an earlier run into this folder: what the file itself says */
        symcache *sc = NULL;
        err_info oerr = {0};
        if (symcache_open_bytes(&sc, out.data, out.len, &oerr) == ERR_OK) {
            b.has_dwarf = symcache_has_dwarf(sc);
            b.functions = symcache_function_count(sc);
            b.ranges = symcache_range_count(sc);
            snprintf(b.name, sizeof b.name, "%s", symcache_image_name(sc));
            symcache_close(sc);
        }
    } else {
        b.functions = stats.functions;
        b.ranges = stats.ranges;
        b.dwarf_bytes = di.dwarf_bytes;
        b.warnings = debuginfo_warnings_count(&di.warnings);
        debuginfo_warnings_text(&di.warnings, b.warning, sizeof b.warning);
        if (map_warning[0]) {
            size_t used = strlen(b.warning);
            snprintf(b.warning + used, sizeof b.warning - used, "%s%s", used ? "; " : "",
                     map_warning);
            b.warnings++;
        }
        b.hidden = di.hidden.hidden;
        b.hidden_left = di.hidden.left;
        b.hidden_max = di.hidden.max_index;
        b.revealed = di.revealed;
        snprintf(b.map_uuid, sizeof b.map_uuid, "%s", map_uuid);
    }
    if (unwind_warning[0]) {
        size_t used = strlen(b.warning);
        snprintf(b.warning + used, sizeof b.warning - used, "%s%s", used ? "; " : "",
                 unwind_warning);
        b.warnings++;
    }
    b.bytes = out.len;
    b.ms = now_ms() - t0;
    job_report(j, &b);
done:
    phase_start(&clock);
    buf_reset(&out);
    debuginfo_reset(&di);
    free(img);
    phase_mark(&clock, "free");
    return rc;
}

static err_code build_macho(job *j, const uint8_t *data, size_t len, const char *name, err_info *err)
{
    macho_slice slices[MACHO_MAX_SLICES];
    size_t n = 0;
    err_code rc = macho_slices(slices, &n, data, len, err);
    if (rc != ERR_OK)
        return err_prefix(err, "%s", name);
    /* one slice of a fat file that cannot be read costs only itself; the file fails when no
     * slice builds (or on an error that is not about the slice's content) */
    err_code first = ERR_OK;
    err_info first_err = {0};
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        const char *arch = macho_arch_name(slices[i].cputype, slices[i].cpusubtype);
        err_info serr = {0};
        rc = build_slice(j, data + slices[i].offset, (size_t)slices[i].size, name, &serr);
        if (rc == ERR_OK) {
            ok++;
            continue;
        }
        if (n == 1) {
            err_prefix(&serr, "%s", name);
            if (err != NULL)
                *err = serr;
            return rc;
        }
        err_prefix(&serr, "%s slice %s", name, arch);
        if (rc != ERR_INVALID) {
            if (err != NULL)
                *err = serr;
            return rc;
        }
        if (first == ERR_OK) {
            first = rc;
            first_err = serr;
        }
        if (j->opts.skipped != NULL)
            j->opts.skipped(name, arch, serr.msg, j->opts.skipped_ctx);
    }
    if (ok == 0 && first != ERR_OK) {
        if (err != NULL)
            *err = first_err;
        return first;
    }
    return ERR_OK;
}

/* build_breakpad - OUTDIR/<UUID>.symc of a Breakpad .sym, merged with a symcache of the UUID
 * built there before (merge_existing): DWARF names stay, the .sym's STACK CFI section joins
 * them; a .sym's names replace a symbol table's. */
static err_code build_breakpad(job *j, const uint8_t *data, size_t len, const char *name, err_info *err)
{
    double t0 = now_ms();
    arena *a = arena_new(0);
    buf out;
    buf_init(&out);
    breakpad_sym *sym;
    err_code rc = breakpad_parse(&sym, data, len, a, err);
    if (rc != ERR_OK) {
        err_prefix(err, "%s", name);
        goto done;
    }
    unsigned threads = j->opts.threads;
    if (threads == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        threads = ncpu > 0 ? (unsigned)ncpu : 1;
    }
    symcache_build_stats stats;
    rc = dsym_breakpad_build(&out, &stats, sym, threads, err);
    if (rc != ERR_OK) {
        err_prefix(err, "%s", name);
        goto done;
    }
    dsym_built b;
    memset(&b, 0, sizeof b);
    macho_uuid_format(b.uuid, sym->uuid);
    snprintf(b.name, sizeof b.name, "%s", sym->name);
    if ((size_t)snprintf(b.path, sizeof b.path, "%s/%s.symc", j->out_dir, b.uuid) >= sizeof b.path) {
        rc = err_set(err, ERR_INVALID, "output directory path is too long");
        goto done;
    }
    symcache *built = NULL;
    err_info oerr = {0};
    if (symcache_open_bytes(&built, out.data, out.len, &oerr) == ERR_OK) {
        snprintf(b.arch, sizeof b.arch, "%s", symcache_arch(built));
        symcache_close(built);
    }
    /* the dSYM of the UUID built here before keeps its names, with the .sym's CFI added */
    merge_outcome merged = merge_existing(&out, b.path);
    if (merged == MERGE_UNCHANGED) {
        j->built++;
        goto done;
    }
    rc = write_atomically(b.path, &out, err);
    if (rc != ERR_OK)
        goto done;
    b.functions = stats.functions;
    b.ranges = stats.ranges;
    b.has_dwarf = sym->nfuncs > 0 || sym->nlines > 0;
    if (merged == MERGE_OLD_BASE) {
        /* the names (and every figure of the row) are the earlier file's */
        const dsym_built *prev = done_for(j, b.uuid);
        symcache *sc = NULL;
        if (prev != NULL) {
            char path[sizeof b.path];
            memcpy(path, b.path, sizeof path);
            b = *prev;
            memcpy(b.path, path, sizeof path);
        } else if (symcache_open_bytes(&sc, out.data, out.len, &oerr) == ERR_OK) {
            b.has_dwarf = symcache_has_dwarf(sc);
            b.functions = symcache_function_count(sc);
            b.ranges = symcache_range_count(sc);
            snprintf(b.name, sizeof b.name, "%s", symcache_image_name(sc));
            symcache_close(sc);
        }
    }
    b.bytes = out.len;
    b.breakpad = merged != MERGE_OLD_BASE; /* the names are the .sym's */
    b.cfi = (uint32_t)(sym->ncfi > UINT32_MAX ? UINT32_MAX : sym->ncfi);
    if (sym->skipped > 0) {
        b.warnings = sym->skipped > UINT32_MAX ? UINT32_MAX : (uint32_t)sym->skipped;
        snprintf(b.warning, sizeof b.warning, "skipped %llu malformed records (first: line %llu: %s)",
                 (unsigned long long)sym->skipped, (unsigned long long)sym->first_skipped_line,
                 sym->first_skipped);
    }
    b.ms = now_ms() - t0;
    job_report(j, &b);
done:
    buf_reset(&out);
    arena_free(a);
    return rc;
}

static err_code build_file(job *j, const char *path, const char *name, bool must_be_macho, err_info *err)
{
    bytes b;
    err_code rc = bytes_map_file(&b, path, err);
    if (rc != ERR_OK)
        return rc;
    if (breakpad_test(b.data, b.len)) {
        rc = build_breakpad(j, b.data, b.len, name, err);
        bytes_unmap(&b);
        return rc;
    }
    if (!is_macho_magic(b.data, b.len)) {
        /* the input itself: a UUID map or BCSymbolMap given alone */
        if (must_be_macho && looks_like_map(name, b.data, b.len, true)) {
            bytes_unmap(&b);
            return add_map_file(j, path, name, true, err);
        }
        bytes_unmap(&b);
        if (must_be_macho)
            return err_set(err, ERR_INVALID, "%s is not a Mach-O file (nor a UUID map or "
                           "BCSymbolMap)", name);
        return ERR_OK; /* Info.plist and friends inside a bundle (maps are read before) */
    }
    rc = build_macho(j, b.data, b.len, name, err);
    bytes_unmap(&b);
    return rc;
}

/* Every regular file under `dir`, in sorted name order, to depth MAX_DIR_DEPTH: built as a
 * Mach-O (build_file), or with `maps_only` read as a map when its name says it is one. */
static err_code walk_dir(job *j, const char *dir, int depth, bool maps_only, err_info *err)
{
    if (depth > MAX_DIR_DEPTH)
        return ERR_OK;
    DIR *d = opendir(dir);
    if (d == NULL)
        return err_set(err, ERR_IO, "cannot read directory %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = xreallocarray(names, cap, sizeof *names);
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    err_code rc = ERR_OK;
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
            continue;
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            rc = walk_dir(j, path, depth + 1, maps_only, err);
        else if (S_ISREG(st.st_mode) && !maps_only)
            rc = build_file(j, path, names[i], false, err);
        else if (S_ISREG(st.st_mode) && looks_like_map(names[i], NULL, 0, false))
            rc = add_map_file(j, path, names[i], false, err);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* An entry name that could escape a directory if someone ever used it as a path. */
static bool hostile_entry_name(const char *name)
{
    if (name[0] == '/' || name[0] == '\\' || strchr(name, '\\') != NULL)
        return true;
    const char *p = name;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return true;
        if (!slash)
            break;
        p = slash + 1;
    }
    return false;
}

static err_code extract_entry(zip_t *z, zip_uint64_t index, const zip_stat_t *st, const char *tmp_path,
                              bool *is_macho, err_info *err)
{
    *is_macho = false;
    zip_file_t *zf = zip_fopen_index(z, index, 0);
    if (zf == NULL)
        return err_set(err, ERR_INVALID, "cannot read zip entry %s: %s", st->name, zip_strerror(z));
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        zip_fclose(zf);
        return err_set(err, ERR_IO, "cannot create %s: %s", tmp_path, strerror(errno));
    }
    err_code rc = ERR_OK;
    uint8_t chunk[1 << 16];
    zip_uint64_t total = 0;
    for (;;) {
        zip_int64_t n = zip_fread(zf, chunk, sizeof chunk);
        if (n < 0) {
            rc = err_set(err, ERR_INVALID, "corrupt zip entry %s: %s", st->name, zip_file_strerror(zf));
            break;
        }
        if (n == 0)
            break;
        if (total == 0 && !is_macho_magic(chunk, (size_t)n))
            break; /* not a Mach-O: skip the rest of this entry */
        total += (zip_uint64_t)n;
        if (total > st->size) {
            rc = err_set(err, ERR_INVALID, "zip entry %s holds more than its declared %llu bytes",
                         st->name, (unsigned long long)st->size);
            break;
        }
        if (write(fd, chunk, (size_t)n) != n) {
            rc = err_set(err, ERR_IO, "cannot write %s: %s", tmp_path, strerror(errno));
            break;
        }
        *is_macho = true;
    }
    zip_fclose(zf);
    close(fd);
    return rc;
}

/* Zip entry `index` (a map by its name) read into memory and added to the job. */
static err_code read_zip_map(job *j, zip_t *z, zip_uint64_t index, const zip_stat_t *st,
                             err_info *err)
{
    const char *name = base_name(st->name);
    uint64_t limit = has_suffix(name, ".plist") ? SYMBOLMAP_MAX_UUIDMAP_BYTES : max_map_bytes(j);
    if (st->size > limit)
        return err_set(err, ERR_TOO_LARGE, "zip entry %s has %llu bytes, over the limit of %llu "
                       "for a %s", st->name, (unsigned long long)st->size,
                       (unsigned long long)limit,
                       has_suffix(name, ".plist") ? "UUID map" : "BCSymbolMap");
    if (st->size == 0)
        return ERR_OK;
    zip_file_t *zf = zip_fopen_index(z, index, 0);
    if (zf == NULL)
        return err_set(err, ERR_INVALID, "cannot read zip entry %s: %s", st->name,
                       zip_strerror(z));
    uint8_t *data = xmalloc((size_t)st->size + 1);
    err_code rc = ERR_OK;
    zip_uint64_t total = 0;
    for (;;) {
        /* one byte more than declared: an entry that holds more is refused */
        zip_int64_t got = zip_fread(zf, data + total, st->size + 1 - total);
        if (got < 0) {
            rc = err_set(err, ERR_INVALID, "corrupt zip entry %s: %s", st->name,
                         zip_file_strerror(zf));
            break;
        }
        if (got == 0)
            break;
        total += (zip_uint64_t)got;
        if (total > st->size) {
            rc = err_set(err, ERR_INVALID, "zip entry %s holds more than its declared %llu bytes",
                         st->name, (unsigned long long)st->size);
            break;
        }
    }
    zip_fclose(zf);
    if (rc == ERR_OK)
        rc = add_map(j, name, data, (size_t)total, false, err);
    free(data);
    return rc;
}

static err_code build_zip(job *j, const char *path, err_info *err)
{
    int zerr = 0;
    zip_t *z = zip_open(path, ZIP_RDONLY, &zerr);
    if (z == NULL) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        err_set(err, ERR_INVALID, "cannot open zip: %s", zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return ERR_INVALID;
    }
    err_code rc = ERR_OK;
    uint64_t max_unpacked = j->opts.max_unpacked_bytes ? j->opts.max_unpacked_bytes : DEFAULT_MAX_UNPACKED;
    uint32_t max_ratio = j->opts.max_ratio ? j->opts.max_ratio : DEFAULT_MAX_RATIO;
    uint32_t max_entries = j->opts.max_entries ? j->opts.max_entries : DEFAULT_MAX_ENTRIES;
    zip_int64_t n = zip_get_num_entries(z, 0);
    if (n < 0 || (uint64_t)n > max_entries) {
        rc = err_set(err, ERR_TOO_LARGE, "zip has %lld entries (at most %u allowed)", (long long)n, max_entries);
        goto done;
    }
    /* check every entry before extracting any, so a bad archive leaves nothing behind */
    uint64_t total = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t st;
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0) {
            rc = err_set(err, ERR_INVALID, "corrupt zip entry %lld: %s", (long long)i, zip_strerror(z));
            goto done;
        }
        if (!(st.valid & ZIP_STAT_NAME) || hostile_entry_name(st.name)) {
            rc = err_set(err, ERR_INVALID, "zip entry name %s escapes the archive",
                         (st.valid & ZIP_STAT_NAME) ? st.name : "(none)");
            goto done;
        }
        if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE))
            continue;
        total += st.size;
        if (total > max_unpacked) {
            rc = err_set(err, ERR_TOO_LARGE, "zip unpacks to more than %llu bytes",
                         (unsigned long long)max_unpacked);
            goto done;
        }
        if (st.size > 1024 * 1024 && st.size / (st.comp_size ? st.comp_size : 1) > max_ratio) {
            rc = err_set(err, ERR_TOO_LARGE, "zip entry %s expands %llu-fold (at most %u allowed)",
                         st.name, (unsigned long long)(st.size / (st.comp_size ? st.comp_size : 1)),
                         max_ratio);
            goto done;
        }
    }
    /* the maps first, so that every slice finds them whatever the entries' order */
    for (zip_int64_t i = 0; i < n && rc == ERR_OK; i++) {
        zip_stat_t st;
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
            continue;
        if (strncmp(st.name, "__MACOSX/", 9) == 0 || strncmp(base_name(st.name), "._", 2) == 0 ||
            !looks_like_map(base_name(st.name), NULL, 0, false))
            continue;
        rc = read_zip_map(j, z, (zip_uint64_t)i, &st, err);
    }
    for (zip_int64_t i = 0; i < n && rc == ERR_OK; i++) {
        zip_stat_t st;
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
            continue;
        size_t name_len = strlen(st.name);
        if (name_len == 0 || st.name[name_len - 1] == '/' || st.size < 28)
            continue;
        /* skip resource forks and AppleDouble files that macOS zips carry */
        if (strncmp(st.name, "__MACOSX/", 9) == 0 || strncmp(base_name(st.name), "._", 2) == 0)
            continue;
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s/.zip-entry.%ld.%lld", j->out_dir, (long)getpid(), (long long)i);
        bool is_macho = false;
        rc = extract_entry(z, (zip_uint64_t)i, &st, tmp, &is_macho, err);
        if (rc == ERR_OK && is_macho)
            rc = build_file(j, tmp, base_name(st.name), true, err);
        unlink(tmp);
    }
done:
    zip_discard(z);
    return rc;
}

err_code dsym_build_symcaches(const char *input, const char *out_dir, const dsym_options *opts,
                              dsym_built_fn fn, void *ctx, err_info *err)
{
    job j;
    memset(&j, 0, sizeof j);
    j.out_dir = out_dir;
    j.fn = fn;
    j.ctx = ctx;
    if (opts != NULL)
        j.opts = *opts;
    err_code rc;
    struct stat st;
    if (stat(input, &st) != 0) {
        rc = err_set(err, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO, "cannot open %s: %s", input,
                     strerror(errno));
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = collect_maps_dir(&j, input, 0, err);
        if (rc == ERR_OK)
            rc = walk_dir(&j, input, 0, false, err);
        if (rc == ERR_OK && j.built == 0 && j.maps_found == 0)
            rc = err_set(err, ERR_INVALID, "no Mach-O debug file found in %s", input);
        goto done;
    }
    uint8_t head[4] = {0};
    int fd = open(input, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = err_set(err, ERR_IO, "cannot open %s: %s", input, strerror(errno));
        goto done;
    }
    ssize_t got = read(fd, head, sizeof head);
    close(fd);
    if (got == 4 && memcmp(head, "PK\x03\x04", 4) == 0) {
        rc = build_zip(&j, input, err);
        if (rc == ERR_OK && j.built == 0 && j.maps_found == 0)
            rc = err_set(err, ERR_INVALID, "zip holds no Mach-O debug file");
        goto done;
    }
    if (got == 4 && memcmp(head, "PK\x05\x06", 4) == 0) {
        rc = err_set(err, ERR_INVALID, "zip is empty");
        goto done;
    }
    if (j.opts.maps_beside) {
        const char *slash = strrchr(input, '/');
        if (slash == NULL)
            snprintf(j.beside_dir, sizeof j.beside_dir, ".");
        else
            snprintf(j.beside_dir, sizeof j.beside_dir, "%.*s", (int)(slash - input + (slash == input)),
                     input);
    }
    rc = build_file(&j, input, base_name(input), true, err);
done:
    for (size_t i = 0; i < j.nmaps; i++)
        symbolmap_free(j.maps[i].map);
    free(j.maps);
    free(j.done);
    free(j.uuidmaps);
    return rc;
}
