/*
 * crashreport.c - format detection, the shared builder, address helpers.
 */
#include "crashreport/crashreport_internal.h"
#include "crashreport/text_internal.h"
#include "base/hex.h"
#include "base/utf8.h"
#include "demangle/demangle.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *crashreport_format_name(crashreport_format f)
{
    switch (f) {
    case CRASHREPORT_FORMAT_APPLE_TEXT: return "apple-text";
    case CRASHREPORT_FORMAT_IPS:        return "ips";
    case CRASHREPORT_FORMAT_KSCRASH:    return "kscrash";
    case CRASHREPORT_FORMAT_JSON:       return "json";
    case CRASHREPORT_FORMAT_SAMPLE:     return "sample";
    case CRASHREPORT_FORMAT_METRICKIT:  return "metrickit";
    case CRASHREPORT_FORMAT_BUGSNAG:    return "bugsnag";
    case CRASHREPORT_FORMAT_PLCRASH:    return "plcrash";
    case CRASHREPORT_FORMAT_SENTRY:     return "sentry";
    case CRASHREPORT_FORMAT_MINIDUMP:   return "minidump";
    }
    return "unknown";
}

const char *crashreport_kind_name(crashreport_kind k)
{
    switch (k) {
    case CRASHREPORT_KIND_CRASH:  return "crash";
    case CRASHREPORT_KIND_HANG:   return "hang";
    case CRASHREPORT_KIND_SAMPLE: return "sample";
    }
    return "unknown";
}

const char *crashreport_sym_status_name(crashreport_sym_status s)
{
    switch (s) {
    case CRASHREPORT_SYM_NONE:      return "none";
    case CRASHREPORT_SYM_OK:        return "ok";
    case CRASHREPORT_SYM_NO_IMAGE:  return "no_image";
    case CRASHREPORT_SYM_MISSING:   return "missing";
    case CRASHREPORT_SYM_NOT_FOUND: return "not_found";
    }
    return "unknown";
}

/* ---- builder ---------------------------------------------------------------------------- */

bool cr_builder_init(cr_builder *b, crashreport_format format, arena *a, err_info *err)
{
    memset(b, 0, sizeof *b);
    b->a = a;
    b->err = err;
    b->r = arena_alloc(a, sizeof *b->r, err);
    if (b->r == NULL) {
        b->failed = true;
        return false;
    }
    b->r->format = format;
    b->r->kind = CRASHREPORT_KIND_CRASH;
    b->r->meta.crashed_thread = -1;
    return true;
}

void *cr_push(cr_builder *b, void **arr, size_t *n, size_t elsize)
{
    size_t count = *n;
    if (b->failed)
        return NULL;
    /* capacity is implicit: 8, 16, 32, ... so the arrays need no capacity field */
    if (count == 0 || (count >= 8 && (count & (count - 1)) == 0)) {
        size_t newcap = count == 0 ? 8 : count * 2;
        void *p = arena_grow_uninit(b->a, *arr, count * elsize, newcap * elsize, b->err); /* each element is zeroed when pushed */
        if (p == NULL) {
            b->failed = true;
            return NULL;
        }
        *arr = p;
    }
    *n = count + 1;
    void *el = (char *)*arr + count * elsize;
    memset(el, 0, elsize);
    return el;
}

crashreport_thread *cr_add_thread(cr_builder *b)
{
    return cr_push(b, (void **)&b->r->threads, &b->r->nthreads, sizeof(crashreport_thread));
}

static void frame_init(crashreport_frame *f)
{
    f->image = -1;
    f->parent = -1;
}

crashreport_frame *cr_add_frame(cr_builder *b, crashreport_thread *t)
{
    crashreport_frame *f = cr_push(b, (void **)&t->frames, &t->nframes, sizeof *f);
    if (f != NULL)
        frame_init(f);
    return f;
}

crashreport_frame *cr_add_leb_frame(cr_builder *b)
{
    crashreport_frame *f = cr_push(b, (void **)&b->r->leb, &b->r->nleb, sizeof *f);
    if (f != NULL)
        frame_init(f);
    return f;
}

crashreport_cause *cr_add_cause(cr_builder *b)
{
    return cr_push(b, (void **)&b->r->causes, &b->r->ncauses, sizeof(crashreport_cause));
}

crashreport_frame *cr_add_cause_frame(cr_builder *b, crashreport_cause *c)
{
    crashreport_frame *f = cr_push(b, (void **)&c->frames, &c->nframes, sizeof *f);
    if (f != NULL)
        frame_init(f);
    return f;
}

crashreport_image *cr_add_image(cr_builder *b)
{
    return cr_push(b, (void **)&b->r->images, &b->r->nimages, sizeof(crashreport_image));
}

char *cr_strndup(cr_builder *b, const char *s, size_t n)
{
    if (b->failed)
        return NULL;
    char *p = arena_strndup(b->a, s, n, b->err);
    if (p == NULL)
        b->failed = true;
    return p;
}

const char *cr_text(cr_builder *b, const char *s, size_t n)
{
    if (b->failed)
        return NULL;
    size_t clean_len;
    const char *clean = utf8_sanitize(&clean_len, s, n, b->a, b->err);
    if (clean == NULL) {
        b->failed = true;
        return NULL;
    }
    return clean != s ? clean : cr_strndup(b, s, n);
}

char *cr_strdup(cr_builder *b, const char *s)
{
    return s == NULL ? NULL : cr_strndup(b, s, strlen(s));
}

pcre2_code *cr_regex_compile(const char *pattern)
{
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &errcode,
                                   &erroff, NULL);
    if (re != NULL)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* no JIT: the interpreter still works */
    return re;
}

const char *cr_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

const char *cr_os_version(cr_builder *b, const char *name, const char *version, const char *build)
{
    if (version == NULL)
        return NULL;
    return cr_sprintf(b, "%s%s%s%s%s%s", name ? name : "", name ? " " : "", version,
                      build ? " (" : "", build ? build : "", build ? ")" : "");
}

char *cr_sprintf(cr_builder *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    if ((size_t)n < sizeof small)
        return (char *)cr_text(b, small, (size_t)n); /* "%.60s" may cut a character */
    if (b->failed)
        return NULL;
    char *p = arena_alloc(b->a, (size_t)n + 1, b->err);
    if (p == NULL) {
        b->failed = true;
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return utf8_valid(p, (size_t)n) ? p : (char *)cr_text(b, p, (size_t)n);
}

void cr_note(cr_builder *b, const char *fmt, ...)
{
    if (b->r->nerrors >= CRASHREPORT_MAX_ERRORS) {
        b->dropped_errors++;
        return;
    }
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char **slot = cr_push(b, (void **)&b->r->errors, &b->r->nerrors, sizeof *slot);
    if (slot != NULL)
        *slot = cr_text(b, msg, strlen(msg)); /* a quote cut at 256 bytes stays UTF-8 */
}

/* ---- architecture and address helpers ------------------------------------------------------ */

static const char *const ARCHES[] = {
    "arm64", "arm64e", "arm64_32", "armv7", "armv7s", "armv7k", "armv7f", "armv6", "armv6m",
    "armv7m", "armv7em", "arm", "x86_64", "x86_64h", "i386", "ppc", "ppc64",
};

const char *cr_arch_normalize(const char *s, size_t n)
{
    /* called for the last word of every Binary Images line: reject most words by length and
     * first letter before comparing */
    if (n < 3 || n > 8)
        return NULL;
    char c0 = (char)(s[0] | 0x20);
    if (c0 != 'a' && c0 != 'x' && c0 != 'i' && c0 != 'p')
        return NULL;
    for (size_t i = 0; i < sizeof ARCHES / sizeof ARCHES[0]; i++)
        if (ARCHES[i][0] == c0 && strlen(ARCHES[i]) == n && strncasecmp(ARCHES[i], s, n) == 0)
            return ARCHES[i];
    if (n == 3 && strncasecmp(s, "x86", 3) == 0)
        return "i386";
    return NULL;
}

const char *cr_arch_from_code_type(const char *s)
{
    if (s == NULL)
        return NULL;
    /* "ARM-64 (Native)", "X86-64 (Translated)": the part before the first space */
    size_t n = strcspn(s, " (");
    static const struct { const char *code, *arch; } MAP[] = {
        {"ARM-64", "arm64"}, {"ARM64", "arm64"}, {"ARM64E", "arm64e"}, {"ARM-64E", "arm64e"},
        {"ARM64_32", "arm64_32"}, {"ARM-64_32", "arm64_32"}, {"ARM", "armv7"},
        {"ARMV7", "armv7"}, {"ARMV7S", "armv7s"}, {"ARMV7K", "armv7k"},
        {"X86-64", "x86_64"}, {"X86_64", "x86_64"}, {"X86", "i386"}, {"I386", "i386"},
        {"PPC", "ppc"},
    };
    for (size_t i = 0; i < sizeof MAP / sizeof MAP[0]; i++)
        if (strlen(MAP[i].code) == n && strncasecmp(MAP[i].code, s, n) == 0)
            return MAP[i].arch;
    return NULL;
}

const char *cr_arch_from_cpu(uint64_t cputype, uint64_t cpusubtype)
{
    cpusubtype &= 0x00ffffffu; /* capability bits (e.g. arm64e's ptrauth ABI) */
    switch (cputype) {
    case 7:           return "i386";
    case 0x01000007u: return cpusubtype == 8 ? "x86_64h" : "x86_64";
    case 12:
        switch (cpusubtype) {
        case 6:  return "armv6";
        case 9:  return "armv7";
        case 10: return "armv7f";
        case 11: return "armv7s";
        case 12: return "armv7k";
        default: return "arm";
        }
    case 0x0100000cu: return cpusubtype == 2 ? "arm64e" : "arm64";
    case 0x0200000cu: return "arm64_32";
    }
    return NULL;
}

/* UUID characters: a hex digit maps to its upper-case self, a separator to '-', anything
 * else to 0 (a table: one load per character instead of a chain of compares) */
static const char UUID_CHAR[256] = {
    ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4', ['5'] = '5', ['6'] = '6',
    ['7'] = '7', ['8'] = '8', ['9'] = '9', ['a'] = 'A', ['b'] = 'B', ['c'] = 'C', ['d'] = 'D',
    ['e'] = 'E', ['f'] = 'F', ['A'] = 'A', ['B'] = 'B', ['C'] = 'C', ['D'] = 'D', ['E'] = 'E',
    ['F'] = 'F', ['-'] = '-', ['<'] = '-', ['>'] = '-', ['{'] = '-', ['}'] = '-',
};

bool cr_uuid_set(char out[37], const char *s, size_t n)
{
    char hex[32];
    size_t k = 0;
    unsigned nonzero = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char c = UUID_CHAR[(unsigned char)s[i]];
        if (c == '-')
            continue;
        if (c == 0 || k == 32)
            return false;
        nonzero |= (unsigned)(c ^ '0');
        hex[k++] = c;
    }
    if (k != 32 || !nonzero)
        return false;
    static const int GROUPS[] = {8, 4, 4, 4, 12};
    size_t o = 0, h = 0;
    for (int g = 0; g < 5; g++) {
        if (g > 0)
            out[o++] = '-';
        memcpy(out + o, hex + h, (size_t)GROUPS[g]);
        o += (size_t)GROUPS[g];
        h += (size_t)GROUPS[g];
    }
    out[o] = '\0';
    return true;
}

bool cr_uuid_from_bytes(char out[37], const uint8_t u[16])
{
    uint8_t any = 0;
    for (int i = 0; i < 16; i++)
        any |= u[i];
    out[0] = '\0';
    if (any == 0)
        return false;
    hex_uuid_format(out, u, true);
    return true;
}

/* "arm64" and its variants ("arm64e"): by its bytes, called for every frame */
static bool arch_is_arm64(const char *arch)
{
    return arch == NULL ||
           (arch[0] == 'a' && arch[1] == 'r' && arch[2] == 'm' && arch[3] == '6' && arch[4] == '4');
}

uint64_t crashreport_strip_pac(uint64_t addr, const char *arch)
{
    /* User space on iOS/macOS arm64 ends below 2^47; anything above is PAC or tag bits. */
    if (arch_is_arm64(arch) && (addr >> 47) != 0)
        return addr & ((UINT64_C(1) << 47) - 1);
    return addr;
}

const char *crashreport_frame_arch(const crashreport *r, const crashreport_frame *f)
{
    if (f->image >= 0 && (size_t)f->image < r->nimages && r->images[f->image].arch != NULL)
        return r->images[f->image].arch;
    return r->meta.arch;
}

/* Address lookup: the images with a known range, sorted by load address (built by cr_finish,
 * kept in crashreport.image_order_). */
typedef struct {
    uint64_t load, end;
    int32_t index;
} image_span;

typedef struct {
    size_t n;
    image_span spans[];
} image_order;

static const image_order *order_of(const crashreport *r)
{
    return r->image_order_;
}

static int span_cmp(const void *x, const void *y)
{
    const image_span *a = x, *b = y;
    return a->load < b->load ? -1 : a->load > b->load ? 1 : 0;
}

int32_t crashreport_image_at(const crashreport *r, uint64_t addr)
{
    const image_order *o = order_of(r);
    if (o == NULL || o->n == 0)
        return -1;
    /* last span whose load <= addr */
    size_t lo = 0, hi = o->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->spans[mid].load <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* overlapping spans are rare; look back a few for one that holds addr */
    for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++) {
        const image_span *s = &o->spans[i - 1];
        if (addr >= s->load && addr <= s->end)
            return s->index;
    }
    return -1;
}

static bool build_image_order(cr_builder *b)
{
    crashreport *r = b->r;
    image_order *o = arena_alloc(b->a, sizeof *o + (r->nimages + 1) * sizeof(image_span), b->err);
    if (o == NULL)
        return false;
    for (size_t i = 0; i < r->nimages; i++) {
        const crashreport_image *im = &r->images[i];
        /* "0x0 - 0xffffffffffffffff ???" placeholders and inverted ranges hold no address */
        if ((im->end_addr != 0 && im->end_addr < im->load_addr) || im->end_addr == UINT64_MAX ||
            (im->end_addr == 0 && im->load_addr == 0))
            continue;
        o->spans[o->n++] = (image_span){im->load_addr, im->end_addr, (int32_t)i};
    }
    bool sorted = true;
    for (size_t i = 1; i < o->n && sorted; i++)
        sorted = o->spans[i - 1].load <= o->spans[i].load;
    if (!sorted)
        qsort(o->spans, o->n, sizeof o->spans[0], span_cmp);
    /* An image of unknown size reaches up to the next image (at most 4 GiB). */
    for (size_t i = 0; i < o->n; i++) {
        image_span *sp = &o->spans[i];
        if (sp->end != 0)
            continue;
        uint64_t cap = sp->load > UINT64_MAX - 0xffffffffu ? UINT64_MAX - 1 : sp->load + 0xffffffffu;
        sp->end = i + 1 < o->n && o->spans[i + 1].load > sp->load ? o->spans[i + 1].load - 1 : cap;
        if (sp->end > cap)
            sp->end = cap;
    }
    r->image_order_ = o;
    return true;
}

static void resolve_frames(cr_builder *b, crashreport_frame *frames, size_t n)
{
    crashreport *r = b->r;
    for (size_t i = 0; i < n; i++) {
        crashreport_frame *f = &frames[i];
        if (f->image < 0 || (size_t)f->image >= r->nimages) {
            f->image = -1;
            uint64_t a = crashreport_strip_pac(f->addr, r->meta.arch);
            /* by address only: a name match outside the image's range would mislead */
            f->image = crashreport_image_at(r, a);
        }
        if (f->image_name == NULL && f->image >= 0)
            f->image_name = r->images[f->image].name;
    }
}

err_code cr_finish(cr_builder *b, const char *what)
{
    crashreport *r = b->r;
    if (!b->failed && !build_image_order(b))
        b->failed = true;
    if (b->failed)
        return b->err != NULL && b->err->code != ERR_OK ? b->err->code : ERR_TOO_LARGE;

    size_t frames = r->nleb;
    bool any_crashed = false;
    for (size_t t = 0; t < r->nthreads; t++) {
        resolve_frames(b, r->threads[t].frames, r->threads[t].nframes);
        frames += r->threads[t].nframes;
        any_crashed |= r->threads[t].crashed;
    }
    resolve_frames(b, r->leb, r->nleb);
    for (size_t c = 0; c < r->ncauses; c++)
        resolve_frames(b, r->causes[c].frames, r->causes[c].nframes);
    if (!any_crashed && r->meta.crashed_thread >= 0)
        for (size_t t = 0; t < r->nthreads; t++)
            if (r->threads[t].index == (uint32_t)r->meta.crashed_thread)
                r->threads[t].crashed = true;
    if (r->meta.crashed_thread < 0)
        for (size_t t = 0; t < r->nthreads; t++)
            if (r->threads[t].crashed) {
                r->meta.crashed_thread = (int32_t)r->threads[t].index;
                break;
            }
    if (b->dropped_errors > 0) {
        size_t d = b->dropped_errors;
        b->dropped_errors = 0;
        r->nerrors--; /* make room for the summary line */
        cr_note(b, "%zu more errors not listed", d + 1);
    }
    if (b->failed)
        return b->err != NULL && b->err->code != ERR_OK ? b->err->code : ERR_TOO_LARGE;
    if (frames == 0 && !b->frameless_ok)
        return err_set(b->err, ERR_INVALID, "%s has no stack frames", what);
    return ERR_OK;
}

/* ---- detection --------------------------------------------------------------------------- */

/* Offset of the first byte that is not valid UTF-8 (or is NUL), len if all valid. */
static size_t utf8_check(const unsigned char *p, size_t len)
{
    size_t i = 0;
    while (i < len) {
        /* eight ASCII bytes at a time: no high bit set and no zero byte */
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            const uint64_t hi = 0x8080808080808080ull, lo = 0x0101010101010101ull;
            if (((w & hi) | ((w - lo) & ~w & hi)) != 0)
                break;
            i += 8;
        }
        if (i == len)
            break;
        unsigned c = p[i];
        if (c >= 0x01 && c < 0x80) {
            i++;
            continue;
        }
        if (c == 0)
            return i;
        size_t n;
        unsigned min;
        if (c >= 0xc2 && c <= 0xdf)
            n = 1, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
            n = 2, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
            n = 3, min = 0x10000;
        else
            return i;
        if (len - i <= n)
            return i;
        unsigned cp = c & (0x3fu >> n);
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return i;
            cp = (cp << 6) | (p[i + k] & 0x3fu);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += n + 1;
    }
    return len;
}

/* Mangled names a report gives (Swift symbols from the symbol table, C++ from some SDKs)
 * reach people in their display form: the demangled name replaces the symbol and the raw one
 * is kept beside it (symbol_mangled / mangled). */
static err_code display_name(const char **name, const char **mangled, arena *a, err_info *err)
{
    if (*name == NULL || !(demangle_is_swift(*name) || demangle_is_cxx(*name)))
        return ERR_OK;
    char *shown = demangle_name(*name, DEMANGLE_SIMPLIFIED);
    if (shown == NULL)
        return ERR_OK;
    /* a demangled name may hold what its punycode says: UTF-8 by base/utf8's rule, too */
    size_t n = strlen(shown);
    const char *copy = utf8_sanitize(&n, shown, n, a, err);
    if (copy == shown)
        copy = arena_strndup(a, shown, n, err);
    free(shown);
    if (copy == NULL)
        return ERR_TOO_LARGE;
    *mangled = *name;
    *name = copy;
    return ERR_OK;
}

static err_code display_frames(crashreport_frame *fs, size_t n, arena *a, err_info *err)
{
    for (size_t i = 0; i < n; i++) {
        crashreport_frame *f = &fs[i];
        if (display_name(&f->symbol, &f->symbol_mangled, a, err) != ERR_OK)
            return ERR_TOO_LARGE;
        for (uint32_t k = 0; k < f->ngiven_inlines; k++) {
            crashreport_symbol *s = (crashreport_symbol *)&f->given_inlines[k];
            if (display_name(&s->function, &s->mangled, a, err) != ERR_OK)
                return ERR_TOO_LARGE;
        }
    }
    return ERR_OK;
}

static void raw_frames(crashreport_frame *fs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        crashreport_frame *f = &fs[i];
        if (f->symbol_mangled != NULL)
            f->symbol = f->symbol_mangled;
        for (uint32_t k = 0; k < f->ngiven_inlines; k++) {
            crashreport_symbol *s = (crashreport_symbol *)&f->given_inlines[k];
            if (s->mangled != NULL)
                s->function = s->mangled;
        }
        for (uint32_t k = 0; k < f->nsymbols; k++) {
            crashreport_symbol *s = (crashreport_symbol *)&f->symbols[k];
            if (s->mangled != NULL)
                s->function = s->mangled;
        }
    }
}

void crashreport_use_raw_names(crashreport *r)
{
    raw_frames(r->leb, r->nleb);
    for (size_t t = 0; t < r->nthreads; t++)
        raw_frames(r->threads[t].frames, r->threads[t].nframes);
    for (size_t c = 0; c < r->ncauses; c++)
        raw_frames(r->causes[c].frames, r->causes[c].nframes);
}

static err_code display_names(crashreport *r, arena *a, err_info *err)
{
    if (display_frames(r->leb, r->nleb, a, err) != ERR_OK)
        return ERR_TOO_LARGE;
    for (size_t t = 0; t < r->nthreads; t++)
        if (display_frames(r->threads[t].frames, r->threads[t].nframes, a, err) != ERR_OK)
            return ERR_TOO_LARGE;
    for (size_t c = 0; c < r->ncauses; c++)
        if (display_frames(r->causes[c].frames, r->causes[c].nframes, a, err) != ERR_OK)
            return ERR_TOO_LARGE;
    return ERR_OK;
}

static err_code parse_any(crashreport **out, const char *data, size_t len, arena *a, err_info *err);

/* A text document (after its BOM) as the parsers read it: valid UTF-8, each invalid sequence
 * replaced by U+FFFD (base/utf8's rule; a copy in `a` only then: Latin-1 text, heap garbage
 * in a field), so that every string the parsers take from it is UTF-8. Every byte that is
 * replaced is >= 0x80, so no line, quote or bracket moves. A NUL byte refuses the report. */
static err_code doc_text(const char **text, size_t *text_len, const char *data, size_t len,
                         arena *a, err_info *err)
{
    *text = data;
    *text_len = len;
    size_t bad = utf8_check((const unsigned char *)data, len);
    if (bad == len)
        return ERR_OK;
    const char *nul = memchr(data + bad, '\0', len - bad);
    if (nul != NULL)
        return err_set(err, ERR_INVALID, "report holds a NUL byte at offset %zu",
                       (size_t)(nul - data));
    *text = utf8_sanitize(text_len, data, len, a, err);
    return *text != NULL ? ERR_OK : ERR_TOO_LARGE;
}

err_code crashreport_parse_all(crashreport ***out, size_t *n, const char *data, size_t len, arena *a,
                               err_info *err)
{
    *out = NULL;
    *n = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        data += 3, len -= 3;
    size_t i = 0;
    while (i < len && isspace((unsigned char)data[i]))
        i++;
    if (i < len && (data[i] == '{' || data[i] == '[')) {
        err_code rc = doc_text(&data, &len, data, len, a, err);
        if (rc != ERR_OK)
            return rc;
        crashreport **list = NULL;
        size_t count = 0;
        rc = cr_parse_json_all(&list, &count, data + i, len - i, a, err);
        for (size_t k = 0; rc == ERR_OK && k < count; k++)
            if (display_names(list[k], a, err) != ERR_OK)
                return err_set(err, ERR_TOO_LARGE, "report too large: demangling its names");
        if (rc == ERR_OK) {
            *out = list;
            *n = count;
        }
        return rc;
    }
    crashreport *one;
    err_code rc = crashreport_parse(&one, data, len, a, err);
    if (rc != ERR_OK)
        return rc;
    crashreport **list = arena_alloc_array(a, 1, sizeof *list, err);
    if (list == NULL)
        return ERR_TOO_LARGE;
    list[0] = one;
    *out = list;
    *n = 1;
    return ERR_OK;
}

err_code crashreport_parse(crashreport **out, const char *data, size_t len, arena *a,
                           err_info *err)
{
    err_code rc = parse_any(out, data, len, a, err);
    if (rc == ERR_OK && *out != NULL) {
        rc = display_names(*out, a, err);
        if (rc != ERR_OK) {
            *out = NULL;
            return err_set(err, ERR_TOO_LARGE, "report too large: demangling its names");
        }
    }
    return rc;
}

static err_code parse_any(crashreport **out, const char *data, size_t len, arena *a, err_info *err)
{
    *out = NULL;
    if (cr_is_plcrash(data, len)) /* binary: before the UTF-8 check */
        return cr_parse_plcrash(out, data, len, a, err);
    if (crashreport_is_minidump((const uint8_t *)data, len))
        return crashreport_parse_minidump(out, (const uint8_t *)data, len, NULL, a, err);
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        data += 3, len -= 3;
    err_code rc = doc_text(&data, &len, data, len, a, err);
    if (rc != ERR_OK)
        return rc;
    size_t i = 0;
    while (i < len && isspace((unsigned char)data[i]))
        i++;
    if (i == len)
        return err_set(err, ERR_INVALID, "report is empty");
    if (data[i] == '{' || data[i] == '[') {
        /* A JSON document, or a one-line .ips JSON header followed by a text body. */
        return cr_parse_json(out, data + i, len - i, a, err);
    }
    if (cr_looks_like_sample(data + i, len - i))
        return cr_parse_sample(out, data + i, len - i, a, err);
    return cr_parse_apple_text(out, data, len, a, err);
}
