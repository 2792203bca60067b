/*
 * samplebatch - parse, check and canonicalize sample batches (see samplebatch.h).
 *
 * A batch is read by a JSON scanner of its own instead of a DOM library: a batch is hundreds
 * of kilobytes of small values, and building a tree of them (one allocation per value) cost
 * about 90% of a POST /api/v1/samples in profiles. The scanner checks the whole document
 * against RFC 8259 (strings: escapes, UTF-8 without overlongs or surrogates, no raw control
 * characters; numbers; nesting at most JSON_MAX_DEPTH) while it records where each known
 * member's value is (a span); the fields are then read from their spans in a fixed order, so
 * the first problem reported does not depend on the order of members. Unknown members are
 * checked and ignored. A member given twice: the last one counts. Frames are matched to images
 * by a binary search over the images sorted by load address, after all of them are read.
 */
#include "samplebatch/samplebatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define JSON_MAX_DEPTH 512

typedef struct {
    uint64_t load_addr;
    uint32_t index;     /* into samplebatch.images */
} image_pos;

typedef struct {
    samplebatch *b;
    char *field;        /* SAMPLEBATCH_FIELD_MAX bytes */
    arena *a;
    err_info *err;
    const char *doc;    /* the document: byte offsets in syntax errors */
    image_pos *order;   /* images sorted by load address */
} parser;

/* A JSON value's bytes [p, end); p == NULL: the member is absent. */
typedef struct {
    const char *p, *end;
} span;

/* Record the failing field's path and the message ("<path>: <why>"); returns code. */
static err_code fail(parser *p, err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static err_code fail(parser *p, err_code code, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (p->field[0])
        return err_set(p->err, code, "%s: %s", p->field, why);
    return err_set(p->err, code, "%s", why);
}

static void set_field(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_field(parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->field, SAMPLEBATCH_FIELD_MAX, fmt, ap);
    va_end(ap);
}

/* ---- the scanner ----------------------------------------------------------------------- */

static err_code syntax(parser *p, const char *at, const char *what)
{
    p->field[0] = '\0';
    return err_set(p->err, ERR_INVALID, "malformed JSON at byte %zu: %s", (size_t)(at - p->doc),
                   what);
}

static const char *ws(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
        s++;
    return s;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/*
 * The string starting at s (its '"'): checked, and decoded into out (may be NULL; room for
 * the raw length is enough) with *out_len its decoded length. Returns the byte after the
 * closing quote, or NULL after reporting a syntax error.
 */
static const char *scan_string(parser *p, const char *s, const char *end, char *out,
                               size_t *out_len)
{
    size_t n = 0;
    s++;
    for (;;) {
        const char *run = s;   /* plain ASCII, the common case */
        while (s < end && (unsigned char)*s >= 0x20 && *s != '"' && *s != '\\' &&
               (unsigned char)*s < 0x80)
            s++;
        if (out)
            memcpy(out + n, run, (size_t)(s - run));
        n += (size_t)(s - run);
        if (s == end)
            return syntax(p, s, "unterminated string"), NULL;
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            break;
        if (c < 0x20)
            return syntax(p, s, "control character in a string"), NULL;
        if (c >= 0x80) {
            size_t k = utf8_seq_len(s, (size_t)(end - s));
            if (k == 0)
                return syntax(p, s, "invalid UTF-8 in a string"), NULL;
            if (out)
                memcpy(out + n, s, k);
            n += k;
            s += k;
            continue;
        }
        /* an escape */
        if (s + 1 >= end)
            return syntax(p, s, "unterminated string"), NULL;
        char e = s[1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != '\0' && simple != NULL) {
            static const char TO[] = "\"\\/\b\f\n\r\t";
            if (out)
                out[n] = TO[simple - "\"\\/bfnrt"];
            n++;
            s += 2;
            continue;
        }
        if (e != 'u')
            return syntax(p, s, "invalid escape in a string"), NULL;
        unsigned cp = 0;
        for (int i = 2; i < 6; i++) {
            int d = s + i < end ? hexval(s[i]) : -1;
            if (d < 0)
                return syntax(p, s, "invalid \\u escape in a string"), NULL;
            cp = cp << 4 | (unsigned)d;
        }
        s += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return syntax(p, s - 6, "lone low surrogate in a string"), NULL;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo = 0;
            if (end - s < 6 || s[0] != '\\' || s[1] != 'u')
                return syntax(p, s - 6, "lone high surrogate in a string"), NULL;
            for (int i = 2; i < 6; i++) {
                int d = hexval(s[i]);
                if (d < 0)
                    return syntax(p, s, "invalid \\u escape in a string"), NULL;
                lo = lo << 4 | (unsigned)d;
            }
            if (lo < 0xDC00 || lo > 0xDFFF)
                return syntax(p, s - 6, "lone high surrogate in a string"), NULL;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            s += 6;
        }
        if (cp == 0)
            return syntax(p, s - 6, "\\u0000 in a string"), NULL;
        char tmp[4];
        size_t k = utf8_encode(tmp, cp);
        if (out)
            memcpy(out + n, tmp, k);
        n += k;
    }
    *out_len = n;
    return s + 1;
}

/* The number at s: checked (RFC 8259 grammar); *is_int = no fraction or exponent and it fits
 * an int64 (*value then holds it). Returns the byte after it, or NULL (syntax error). */
static const char *scan_number(parser *p, const char *s, const char *end, bool *is_int,
                               int64_t *value)
{
    const char *start = s;
    bool neg = false, fits = true;
    uint64_t v = 0;
    if (*s == '-') {
        neg = true;
        s++;
    }
    if (s == end || *s < '0' || *s > '9')
        return syntax(p, start, "invalid number"), NULL;
    if (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9')
        return syntax(p, start, "number with a leading zero"), NULL;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10)
            fits = false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    bool integral = true;
    if (s < end && *s == '.') {
        integral = false;
        s++;
        if (s == end || *s < '0' || *s > '9')
            return syntax(p, start, "invalid number"), NULL;
        while (s < end && *s >= '0' && *s <= '9')
            s++;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        integral = false;
        s++;
        if (s < end && (*s == '+' || *s == '-'))
            s++;
        if (s == end || *s < '0' || *s > '9')
            return syntax(p, start, "invalid number"), NULL;
        while (s < end && *s >= '0' && *s <= '9')
            s++;
    }
    *is_int = integral && fits && v <= (uint64_t)INT64_MAX;
    *value = *is_int ? (neg ? -(int64_t)v : (int64_t)v) : 0;
    return s;
}

/* Skip (and check) the value at s; returns the byte after it, or NULL (syntax error). */
static const char *scan_value(parser *p, const char *s, const char *end, int depth)
{
    s = ws(s, end);
    if (s == end)
        return syntax(p, s, "a value is missing"), NULL;
    if (depth > JSON_MAX_DEPTH)
        return syntax(p, s, "nested deeper than 512 levels"), NULL;
    size_t n;
    bool is_int;
    int64_t v;
    switch (*s) {
    case '"':
        return scan_string(p, s, end, NULL, &n);
    case '{':
    case '[': {
        char close = *s == '{' ? '}' : ']';
        bool object = *s == '{';
        s = ws(s + 1, end);
        if (s < end && *s == close)
            return s + 1;
        for (;;) {
            if (object) {
                if (s == end || *s != '"')
                    return syntax(p, s, "expected a member name"), NULL;
                if ((s = scan_string(p, s, end, NULL, &n)) == NULL)
                    return NULL;
                s = ws(s, end);
                if (s == end || *s != ':')
                    return syntax(p, s, "expected ':'"), NULL;
                s++;
            }
            if ((s = scan_value(p, s, end, depth + 1)) == NULL)
                return NULL;
            s = ws(s, end);
            if (s < end && *s == ',') {
                s = ws(s + 1, end);
                continue;
            }
            if (s < end && *s == close)
                return s + 1;
            return syntax(p, s, object ? "expected ',' or '}'" : "expected ',' or ']'"), NULL;
        }
    }
    case 't':
        if (end - s >= 4 && memcmp(s, "true", 4) == 0)
            return s + 4;
        break;
    case 'f':
        if (end - s >= 5 && memcmp(s, "false", 5) == 0)
            return s + 5;
        break;
    case 'n':
        if (end - s >= 4 && memcmp(s, "null", 4) == 0)
            return s + 4;
        break;
    default:
        if (*s == '-' || (*s >= '0' && *s <= '9'))
            return scan_number(p, s, end, &is_int, &v);
    }
    return syntax(p, s, "unexpected character"), NULL;
}

/* Past the string at s (its '"'), in a checked document: the next quote that no backslash
 * escapes. */
static const char *skip_string(const char *s, const char *end)
{
    for (s++;;) {
        const char *q = memchr(s, '"', (size_t)(end - s));
        const char *b = q;
        while (b > s && b[-1] == '\\')
            b--;
        if ((q - b) % 2 == 0)   /* an even run of backslashes escapes only itself */
            return q + 1;
        s = q + 1;
    }
}

/* Past the value at s, in a document scan_value checked already: only strings and nesting
 * matter, so containers are crossed by looking at the five bytes that can change them. */
static const char *skip_checked(const char *s, const char *end)
{
    static const unsigned char STOP[256] = {['"'] = 1, ['['] = 1, [']'] = 1, ['{'] = 1,
                                            ['}'] = 1};
    s = ws(s, end);
    if (*s == '"')
        return skip_string(s, end);
    if (*s != '{' && *s != '[') {   /* a number or a literal */
        while (s < end && *s != ',' && *s != '}' && *s != ']' && *s != ' ' && *s != '\n' &&
               *s != '\r' && *s != '\t')
            s++;
        return s;
    }
    int depth = 0;
    do {
        while (!STOP[(unsigned char)*s])
            s++;
        if (*s == '"')
            s = skip_string(s, end);
        else {
            char c = *s++;
            depth += c == '{' || c == '[' ? 1 : -1;
        }
    } while (depth > 0);
    return s;
}

/* The members named in `names` (NULL-terminated) of the object at v (already checked by
 * scan_value): spans[i] for names[i], absent ones {NULL, NULL}. */
static void members(span *spans, const char *const *names, span v, parser *p)
{
    size_t count = 0;
    while (names[count])
        count++;
    memset(spans, 0, count * sizeof *spans);
    const char *s = ws(v.p + 1, v.end), *end = v.end;
    if (*s == '}')
        return;
    for (;;) {
        char key[32];
        size_t n = 0;
        const char *q = s + 1;
        /* member names we look for are short and plain; anything else is skipped */
        const char *after = scan_string(p, s, end, NULL, &n);
        bool plain = n < sizeof key && (size_t)(after - q - 1) == n;
        if (plain) {
            memcpy(key, q, n);
            key[n] = '\0';
        }
        s = ws(ws(after, end) + 1, end);   /* past ':' */
        const char *vend = skip_checked(s, end);
        for (size_t i = 0; plain && i < count; i++)
            if (strcmp(key, names[i]) == 0) {
                spans[i].p = s;
                spans[i].end = vend;
            }
        s = ws(vend, end);
        if (*s == '}')
            return;
        s = ws(s + 1, end);   /* past ',' */
    }
}

static bool is_null(span v)
{
    return v.p == NULL || *v.p == 'n';
}

/* The elements of the array at v, one by one: *it starts at v.p; false after the last. */
static bool next_element(span *elem, const char **it, span v)
{
    if (**it == ']')
        return false;
    const char *s = ws(*it + 1, v.end);   /* past '[' or ',' */
    if (*s == ']') {
        *it = s;
        return false;
    }
    elem->p = s;
    elem->end = skip_checked(s, v.end);
    *it = ws(elem->end, v.end);
    return true;
}

/* ---- fields ---------------------------------------------------------------------------- */

/* A string field (path already set): *out = arena copy, or NULL when absent/null and
 * optional. 1..max bytes, no control characters. */
static err_code get_str(parser *p, const char **out, span v, bool required, size_t max)
{
    *out = NULL;
    if (is_null(v))
        return required ? fail(p, ERR_INVALID, "missing") : ERR_OK;
    if (*v.p != '"')
        return fail(p, ERR_INVALID, "must be a string");
    size_t raw = (size_t)(v.end - v.p);
    char *s = arena_alloc(p->a, raw, p->err);
    if (s == NULL)
        return ERR_TOO_LARGE;
    size_t n = 0;
    scan_string(p, v.p, v.end, s, &n);   /* checked already */
    s[n] = '\0';
    if (n == 0)
        return required ? fail(p, ERR_INVALID, "must not be empty") : ERR_OK;
    if (n > max)
        return fail(p, ERR_INVALID, "longer than %zu bytes (%zu)", max, n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20)
            return fail(p, ERR_INVALID, "holds a control character at byte %zu", i);
    *out = s;
    return ERR_OK;
}

/* An address or size: a non-negative JSON integer or a "0x..." hex string (1..16 digits). */
static bool get_u64(parser *p, span v, uint64_t *out)
{
    if (v.p == NULL)
        return false;
    if (*v.p == '-' || (*v.p >= '0' && *v.p <= '9')) {
        bool is_int;
        int64_t i;
        scan_number(p, v.p, v.end, &is_int, &i);
        if (!is_int || i < 0)
            return false;
        *out = (uint64_t)i;
        return true;
    }
    if (*v.p != '"' || v.end - v.p > 64)
        return false;
    char s[64];
    size_t n = 0;
    scan_string(p, v.p, v.end, s, &n);
    if (n < 3 || n > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return false;
    uint64_t x = 0;
    for (size_t i = 2; i < n; i++) {
        int d = hexval(s[i]);
        if (d < 0)
            return false;
        x = x << 4 | (uint64_t)d;
    }
    *out = x;
    return true;
}

/* 32 hex digits (dashes allowed) -> upper case, dashed; false if malformed or all zero. */
static bool uuid_norm(char out[37], const char *s, size_t n)
{
    char hex[32];
    size_t k = 0;
    bool nonzero = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '-')
            continue;
        if (c >= 'a' && c <= 'f')
            c = (char)(c - 'a' + 'A');
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F')) || k == 32)
            return false;
        nonzero |= c != '0';
        hex[k++] = c;
    }
    if (k != 32 || !nonzero)
        return false;
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
    return true;
}

static int by_load_addr(const void *x, const void *y)
{
    const image_pos *a = x, *b = y;
    return a->load_addr < b->load_addr ? -1 : a->load_addr > b->load_addr;
}

/* The image holding `addr`, -1 if none (the last image starting at or below it decides). */
static long image_of(const parser *p, uint64_t addr)
{
    const samplebatch *b = p->b;
    size_t lo = 0, hi = b->nimages;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->order[mid].load_addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    uint32_t i = p->order[lo - 1].index;
    return addr <= b->images[i].end_addr ? (long)i : -1;
}

enum { M_FORMAT_VERSION, M_BATCH_ID, M_APP, M_OS, M_DEVICE, M_ARCH, M_IMAGES, M_SAMPLES, M_N };
static const char *const TOP[] = {"format_version", "batch_id", "app", "os", "device", "arch",
                                  "images", "samples", NULL};

static err_code parse_header(parser *p, const span *top)
{
    samplebatch *b = p->b;
    err_code rc;
    set_field(p, "format_version");
    span fv = top[M_FORMAT_VERSION];
    if (fv.p == NULL)
        return fail(p, ERR_INVALID, "missing (this server reads format_version 1)");
    if (fv.end - fv.p != 1 || *fv.p != '1')
        return fail(p, ERR_UNSUPPORTED, "unsupported (this server reads format_version 1)");
    set_field(p, "batch_id");
    if ((rc = get_str(p, &b->batch_id, top[M_BATCH_ID], false, SAMPLEBATCH_MAX_ID)) != ERR_OK)
        return rc;

    static const char *const APP[] = {"name", "bundle_id", "version", "build", NULL};
    static const char *const OS[] = {"name", "version", "build", NULL};
    static const char *const DEVICE[] = {"model", "id", NULL};
    static const struct {
        int member;
        const char *object;
        const char *const *keys;
        bool needed;
    } OBJECTS[] = {{M_APP, "app", APP, true}, {M_OS, "os", OS, false},
                   {M_DEVICE, "device", DEVICE, true}};
    static const struct {
        int object, key; /* into OBJECTS and its keys */
        bool required;
        size_t offset, max;
    } STRS[] = {
        {0, 0, true, offsetof(samplebatch, app_name), 1024},
        {0, 1, false, offsetof(samplebatch, bundle_id), 1024},
        {0, 2, false, offsetof(samplebatch, app_version), SAMPLEBATCH_MAX_ID},
        {0, 3, true, offsetof(samplebatch, build), SAMPLEBATCH_MAX_ID},
        {1, 0, false, offsetof(samplebatch, os_name), SAMPLEBATCH_MAX_ID},
        {1, 1, false, offsetof(samplebatch, os_version), SAMPLEBATCH_MAX_ID},
        {1, 2, false, offsetof(samplebatch, os_build), SAMPLEBATCH_MAX_ID},
        {2, 0, false, offsetof(samplebatch, device_model), SAMPLEBATCH_MAX_ID},
        {2, 1, true, offsetof(samplebatch, device_id), SAMPLEBATCH_MAX_ID},
    };
    span fields[3][4];
    for (size_t o = 0; o < 3; o++) {
        span v = top[OBJECTS[o].member];
        memset(fields[o], 0, sizeof fields[o]);
        if (v.p == NULL && !OBJECTS[o].needed)
            continue;   /* an optional object that is absent */
        if (v.p == NULL || *v.p != '{') {
            set_field(p, "%s", OBJECTS[o].object);
            return fail(p, ERR_INVALID, v.p ? "must be an object" : "missing");
        }
        members(fields[o], OBJECTS[o].keys, v, p);
        for (size_t i = 0; i < sizeof STRS / sizeof STRS[0]; i++) {
            if (STRS[i].object != (int)o)
                continue;
            set_field(p, "%s.%s", OBJECTS[o].object, OBJECTS[o].keys[STRS[i].key]);
            rc = get_str(p, (const char **)((char *)b + STRS[i].offset), fields[o][STRS[i].key],
                         STRS[i].required, STRS[i].max);
            if (rc != ERR_OK)
                return rc;
        }
    }
    set_field(p, "arch");
    return get_str(p, &b->arch, top[M_ARCH], false, 32);
}

static err_code parse_image(parser *p, crashreport_image *im, span o, size_t i)
{
    static const char *const KEYS[] = {"path", "name", "uuid", "arch", "load_address", "size",
                                       "in_app", NULL};
    enum { K_PATH, K_NAME, K_UUID, K_ARCH, K_LOAD, K_SIZE, K_IN_APP };
    err_code rc;
    span f[7];
    memset(im, 0, sizeof *im);
    set_field(p, "images[%zu]", i);
    if (*o.p != '{')
        return fail(p, ERR_INVALID, "must be an object");
    members(f, KEYS, o, p);
    set_field(p, "images[%zu].path", i);
    if ((rc = get_str(p, &im->path, f[K_PATH], false, 4096)) != ERR_OK)
        return rc;
    set_field(p, "images[%zu].name", i);
    if ((rc = get_str(p, &im->name, f[K_NAME], im->path == NULL, 1024)) != ERR_OK)
        return rc;
    if (im->name == NULL) {   /* the path's last component */
        const char *slash = strrchr(im->path, '/');
        im->name = slash && slash[1] ? slash + 1 : im->path;
    }
    set_field(p, "images[%zu].uuid", i);
    if (is_null(f[K_UUID]))
        return fail(p, ERR_INVALID, "missing (a dSYM is matched by its UUID)");
    const char *uuid = NULL;
    if (*f[K_UUID].p != '"' || get_str(p, &uuid, f[K_UUID], false, 64) != ERR_OK ||
        uuid == NULL || !uuid_norm(im->uuid, uuid, strlen(uuid)))
        return fail(p, ERR_INVALID, "not a UUID (32 hex digits, not all zero)");
    set_field(p, "images[%zu].arch", i);
    if ((rc = get_str(p, &im->arch, f[K_ARCH], false, 32)) != ERR_OK)
        return rc;
    if (im->arch == NULL)
        im->arch = p->b->arch;
    set_field(p, "images[%zu].load_address", i);
    if (f[K_LOAD].p == NULL)
        return fail(p, ERR_INVALID, "missing");
    if (!get_u64(p, f[K_LOAD], &im->load_addr))
        return fail(p, ERR_INVALID, "must be a \"0x...\" hex string or a non-negative integer");
    set_field(p, "images[%zu].size", i);
    uint64_t size = 0;
    if (f[K_SIZE].p == NULL)
        return fail(p, ERR_INVALID, "missing (bytes of the image's __TEXT)");
    if (!get_u64(p, f[K_SIZE], &size) || size == 0 || size > (1ull << 36) ||
        im->load_addr > UINT64_MAX - size)
        return fail(p, ERR_INVALID, "must be a positive byte count below 2^36");
    im->end_addr = im->load_addr + size - 1;
    set_field(p, "images[%zu].in_app", i);
    span ia = f[K_IN_APP];
    if (!is_null(ia)) {
        if (*ia.p != 't' && *ia.p != 'f')
            return fail(p, ERR_INVALID, "must be true or false");
        im->in_app = *ia.p == 't' ? CRASHREPORT_IN_APP_YES : CRASHREPORT_IN_APP_NO;
    }
    im->user = im->in_app == CRASHREPORT_IN_APP_YES;
    return ERR_OK;
}

/* Grow an arena array of `*cap` elements to twice as many (16 to start). */
static void *grow(parser *p, void *arr, size_t *cap, size_t elsize)
{
    size_t ncap = *cap ? *cap * 2 : 16;
    void *n = arena_grow(p->a, arr, *cap * elsize, ncap * elsize, p->err);
    if (n != NULL)
        *cap = ncap;
    return n;
}

static err_code parse_images(parser *p, span v)
{
    samplebatch *b = p->b;
    set_field(p, "images");
    if (v.p == NULL || *v.p != '[')
        return fail(p, ERR_INVALID, v.p ? "must be an array" : "missing");
    size_t cap = 0;
    span e;
    for (const char *it = v.p; next_element(&e, &it, v);) {
        if (b->nimages == SAMPLEBATCH_MAX_IMAGES) {
            set_field(p, "images");
            return fail(p, ERR_TOO_LARGE, "more than %d images", SAMPLEBATCH_MAX_IMAGES);
        }
        if (b->nimages == cap && (b->images = grow(p, b->images, &cap, sizeof *b->images)) == NULL)
            return ERR_TOO_LARGE;
        err_code rc = parse_image(p, &b->images[b->nimages], e, b->nimages);
        if (rc != ERR_OK)
            return rc;
        b->nimages++;
    }
    if (b->nimages == 0) {
        set_field(p, "images");
        return fail(p, ERR_INVALID, "must list the images the frames lie in");
    }
    p->order = arena_alloc_array(p->a, b->nimages, sizeof *p->order, p->err);
    if (p->order == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < b->nimages; i++) {
        p->order[i].load_addr = b->images[i].load_addr;
        p->order[i].index = (uint32_t)i;
    }
    qsort(p->order, b->nimages, sizeof *p->order, by_load_addr);
    return ERR_OK;
}

static err_code parse_sample(parser *p, samplebatch_sample *s, span o, size_t i,
                             samplebatch_origin origin)
{
    static const char *const KEYS[] = {"tag", "thread", "count", "frames", NULL};
    enum { K_TAG, K_THREAD, K_COUNT, K_FRAMES };
    const samplebatch *b = p->b;
    err_code rc;
    span f[4];
    memset(s, 0, sizeof *s);
    set_field(p, "samples[%zu]", i);
    if (*o.p != '{')
        return fail(p, ERR_INVALID, "must be an object");
    members(f, KEYS, o, p);
    set_field(p, "samples[%zu].tag", i);
    if ((rc = get_str(p, &s->tag, f[K_TAG], true, SAMPLEBATCH_MAX_TAG)) != ERR_OK)
        return rc;
    set_field(p, "samples[%zu].thread", i);
    if ((rc = get_str(p, &s->thread, f[K_THREAD], false, 256)) != ERR_OK)
        return rc;

    set_field(p, "samples[%zu].count", i);
    uint64_t max = origin == SAMPLEBATCH_STORED
                       ? (uint64_t)SAMPLEBATCH_MAX_COUNT * SAMPLEBATCH_MAX_SAMPLES
                       : SAMPLEBATCH_MAX_COUNT;
    s->count = 1;
    if (f[K_COUNT].p != NULL) {
        bool is_int = false;
        int64_t v = 0;
        span c = f[K_COUNT];
        if (*c.p == '-' || (*c.p >= '0' && *c.p <= '9'))
            scan_number(p, c.p, c.end, &is_int, &v);
        if (!is_int || v < 1 || (uint64_t)v > max)
            return fail(p, ERR_INVALID, "must be an integer from 1 to %llu",
                        (unsigned long long)max);
        s->count = (uint64_t)v;
    }

    set_field(p, "samples[%zu].frames", i);
    span fs = f[K_FRAMES];
    if (fs.p == NULL || *fs.p != '[')
        return fail(p, ERR_INVALID, fs.p ? "must be an array" : "missing");
    size_t cap = 0;
    span e;
    for (const char *it = fs.p; next_element(&e, &it, fs);) {
        size_t k = s->nframes;
        if (k == SAMPLEBATCH_MAX_FRAMES) {
            size_t n = k;
            while (next_element(&e, &it, fs))
                n++;
            return fail(p, ERR_TOO_LARGE, "more than %d frames (%zu)", SAMPLEBATCH_MAX_FRAMES, n);
        }
        if (k == cap && (s->frames = grow(p, s->frames, &cap, sizeof *s->frames)) == NULL)
            return ERR_TOO_LARGE;
        uint64_t addr;
        if (!get_u64(p, e, &addr)) {
            set_field(p, "samples[%zu].frames[%zu]", i, k);
            return fail(p, ERR_INVALID, "must be a \"0x...\" hex string or a non-negative integer");
        }
        long im = image_of(p, crashreport_strip_pac(addr, b->arch));
        if (im < 0) {
            set_field(p, "samples[%zu].frames[%zu]", i, k);
            return fail(p, ERR_INVALID, "0x%llx lies in no image of \"images\"",
                        (unsigned long long)addr);
        }
        s->frames[k].addr = addr;
        s->frames[k].image = (uint32_t)im;
        s->nframes++;
    }
    if (s->nframes == 0)
        return fail(p, ERR_INVALID, "must hold at least the frame inside the API");
    return ERR_OK;
}

err_code samplebatch_parse(samplebatch **out, char field[SAMPLEBATCH_FIELD_MAX], const char *json,
                           size_t len, samplebatch_origin origin, arena *a, err_info *err)
{
    parser p = {.field = field, .a = a, .err = err, .doc = json};
    const char *end = json + len;
    *out = NULL;
    field[0] = '\0';
    /* 1. the whole document is checked once; the known members' spans are kept */
    const char *s = ws(json, end);
    const char *after = scan_value(&p, s, end, 0);
    if (after == NULL)
        return ERR_INVALID;
    if (ws(after, end) != end)
        return syntax(&p, ws(after, end), "more after the end of the document");
    if (*s != '{')
        return err_set(err, ERR_INVALID, "a sample batch must be a JSON object");
    span top[M_N];
    members(top, TOP, (span){s, after}, &p);

    /* 2. the fields, in a fixed order */
    p.b = arena_alloc(a, sizeof *p.b, err);
    if (p.b == NULL)
        return ERR_TOO_LARGE;
    memset(p.b, 0, sizeof *p.b);
    err_code rc = parse_header(&p, top);
    if (rc == ERR_OK)
        rc = parse_images(&p, top[M_IMAGES]);
    if (rc != ERR_OK)
        return rc;

    samplebatch *b = p.b;
    span v = top[M_SAMPLES];
    set_field(&p, "samples");
    if (v.p == NULL || *v.p != '[')
        return fail(&p, ERR_INVALID, v.p ? "must be an array" : "missing");
    size_t cap = 0;
    span e;
    for (const char *it = v.p; next_element(&e, &it, v);) {
        if (b->nsamples == SAMPLEBATCH_MAX_SAMPLES) {
            size_t n = b->nsamples;
            while (next_element(&e, &it, v))
                n++;
            set_field(&p, "samples");
            return fail(&p, ERR_TOO_LARGE, "more than %d samples in one batch (%zu): send "
                        "several", SAMPLEBATCH_MAX_SAMPLES, n);
        }
        if (b->nsamples == cap &&
            (b->samples = grow(&p, b->samples, &cap, sizeof *b->samples)) == NULL)
            return ERR_TOO_LARGE;
        rc = parse_sample(&p, &b->samples[b->nsamples], e, b->nsamples, origin);
        if (rc != ERR_OK)
            return rc;
        b->calls += b->samples[b->nsamples].count;
        b->nsamples++;
    }
    if (b->nsamples == 0) {
        set_field(&p, "samples");
        return fail(&p, ERR_INVALID, "must hold at least one sample");
    }
    field[0] = '\0';
    *out = b;
    return ERR_OK;
}

/* ---- canonical form -------------------------------------------------------------------- */

static uint64_t sample_hash(const samplebatch_sample *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a, 64 bit */
    for (const char *c = s->tag; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    for (uint32_t k = 0; k < s->nframes; k++)
        h = (h ^ s->frames[k].addr) * 1099511628211ull;
    return h ^ h >> 29;
}

static bool same_stack(const samplebatch_sample *x, const samplebatch_sample *y)
{
    if (x->nframes != y->nframes || strcmp(x->tag, y->tag) != 0)
        return false;
    for (uint32_t k = 0; k < x->nframes; k++)
        if (x->frames[k].addr != y->frames[k].addr)
            return false;
    return true;
}

/* ,"0x<hex>" (the comma unless first): printf costs more than the rest of the rendering. */
static void put_hex_str(buf *out, uint64_t v, bool comma)
{
    char tmp[24];
    size_t n = sizeof tmp;
    tmp[--n] = '"';
    do {
        tmp[--n] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    tmp[--n] = 'x';
    tmp[--n] = '0';
    tmp[--n] = '"';
    if (comma)
        tmp[--n] = ',';
    buf_append(out, tmp + n, sizeof tmp - n);
}

static void put_kv(buf *out, const char *key, const char *value, bool *first)
{
    if (value == NULL)
        return;
    if (!*first)
        buf_putc(out, ',');
    *first = false;
    buf_printf(out, "\"%s\":", key);
    buf_append_json_str(out, value, strlen(value));
}

void samplebatch_render_canonical(buf *out, size_t *nstacks, const samplebatch *b)
{
    size_t cap = 16;
    while (cap < b->nsamples * 2)
        cap *= 2;
    /* slot -> 1 + index of the first sample with that stack; 0 = empty */
    size_t *slots = calloc(cap, sizeof *slots);
    uint64_t *sum = calloc(b->nsamples ? b->nsamples : 1, sizeof *sum);
    int32_t *image_map = malloc((b->nimages ? b->nimages : 1) * sizeof *image_map);
    if (slots == NULL || sum == NULL || image_map == NULL)
        abort();   /* as xmalloc: out of memory is not an error we answer */
    for (size_t i = 0; i < b->nsamples; i++) {
        const samplebatch_sample *s = &b->samples[i];
        size_t at = (size_t)sample_hash(s) & (cap - 1);
        while (slots[at] != 0 && !same_stack(&b->samples[slots[at] - 1], s))
            at = (at + 1) & (cap - 1);
        if (slots[at] == 0)
            slots[at] = i + 1;
        sum[slots[at] - 1] += s->count;
    }
    /* images that frames lie in, in their original order */
    for (size_t i = 0; i < b->nimages; i++)
        image_map[i] = -1;
    for (size_t i = 0; i < b->nsamples; i++)
        if (sum[i] > 0)
            for (uint32_t k = 0; k < b->samples[i].nframes; k++)
                image_map[b->samples[i].frames[k].image] = 0;
    int32_t next = 0;
    for (size_t i = 0; i < b->nimages; i++)
        if (image_map[i] == 0)
            image_map[i] = next++;

    bool first = true;
    buf_append_str(out, "{\"format_version\":1,");
    first = true;
    put_kv(out, "batch_id", b->batch_id, &first);
    buf_append_str(out, first ? "\"app\":{" : ",\"app\":{");
    first = true;
    put_kv(out, "name", b->app_name, &first);
    put_kv(out, "bundle_id", b->bundle_id, &first);
    put_kv(out, "version", b->app_version, &first);
    put_kv(out, "build", b->build, &first);
    buf_append_str(out, "},\"os\":{");
    first = true;
    put_kv(out, "name", b->os_name, &first);
    put_kv(out, "version", b->os_version, &first);
    put_kv(out, "build", b->os_build, &first);
    buf_append_str(out, "},\"device\":{");
    first = true;
    put_kv(out, "model", b->device_model, &first);
    put_kv(out, "id", b->device_id, &first);
    buf_putc(out, '}');
    first = false;
    put_kv(out, "arch", b->arch, &first);
    buf_append_str(out, ",\"images\":[");
    bool any = false;
    for (size_t i = 0; i < b->nimages; i++) {
        if (image_map[i] < 0)
            continue;
        const crashreport_image *im = &b->images[i];
        buf_append_str(out, any ? ",{" : "{");
        any = true;
        first = true;
        put_kv(out, "name", im->name, &first);
        put_kv(out, "uuid", im->uuid, &first);
        put_kv(out, "arch", im->arch, &first);
        put_kv(out, "path", im->path, &first);
        buf_printf(out, ",\"load_address\":\"0x%llx\",\"size\":%llu",
                   (unsigned long long)im->load_addr,
                   (unsigned long long)(im->end_addr - im->load_addr + 1));
        if (im->in_app != CRASHREPORT_IN_APP_UNKNOWN)
            buf_printf(out, ",\"in_app\":%s", im->in_app == CRASHREPORT_IN_APP_YES ? "true" : "false");
        buf_putc(out, '}');
    }
    buf_append_str(out, "],\"samples\":[");
    size_t stacks = 0;
    for (size_t i = 0; i < b->nsamples; i++) {
        if (sum[i] == 0)
            continue;
        const samplebatch_sample *s = &b->samples[i];
        buf_append_str(out, stacks ? ",{\"tag\":" : "{\"tag\":");
        stacks++;
        buf_append_json_str(out, s->tag, strlen(s->tag));
        buf_append_str(out, ",\"frames\":[");
        for (uint32_t k = 0; k < s->nframes; k++)
            put_hex_str(out, s->frames[k].addr, k > 0);
        buf_printf(out, "],\"count\":%llu}", (unsigned long long)sum[i]);
    }
    buf_append_str(out, "]}");
    if (nstacks)
        *nstacks = stacks;
    free(slots);
    free(sum);
    free(image_map);
}
