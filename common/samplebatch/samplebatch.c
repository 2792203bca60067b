/*
 * samplebatch - parse, check and canonicalize sample batches (see samplebatch.h).
 *
 * The grammar is base/jsonr's, the JSON reader of every ingest path: jsonr_check holds the
 * whole document to it first (RFC 8259 as jansson reads it: escapes, UTF-8, no "\u0000",
 * nesting to JSONR_MAX_DEPTH, reals within double's range), building nothing. The batch is
 * then read from the checked text without a tree: a batch is hundreds of kilobytes of small
 * values, and a tree of them (even jsonr's, about twice the batch's size for the moment of the
 * parse) is memory that every thread parsing batches keeps for its next one. Reading checked
 * text needs no grammar: a value is crossed by its quotes and brackets (skip_checked), a
 * member picked by its name (members), and the few values kept are decoded by jsonr too (a
 * string with escapes, a number that is not a plain run of digits).
 *
 * The fields are read in a fixed order, so the first problem reported does not depend on the
 * order of members. Unknown members are checked and ignored; a member given twice: the last
 * one counts (both as jansson). Frames are matched to images by a binary search over the
 * images sorted by load address, after all of them are read. The path of the field being
 * read is kept in parts and printed only when a problem is reported: printing it for every
 * field cost more than reading the field.
 */
#include "samplebatch/samplebatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonr.h"

#define NO_INDEX SIZE_MAX

typedef struct {
    uint64_t load_addr;
    uint32_t index;     /* into samplebatch.images */
} image_pos;

/* The field being read: head, then "[i]", ".key", "[j]" where set. head NULL: the document. */
typedef struct {
    const char *head;   /* "samples", "app", "format_version", ... */
    const char *key;    /* NULL if none */
    size_t i, j;        /* NO_INDEX if none */
} path;

typedef struct {
    samplebatch *b;
    char *field;        /* SAMPLEBATCH_FIELD_MAX bytes */
    arena *a;           /* the caller's: the batch and its strings */
    err_info *err;
    path at;            /* the field being read */
    image_pos *order;   /* images sorted by load address */
} parser;

/* A value's bytes [p, end) in the checked document; p == NULL: the member is absent. */
typedef struct {
    const char *p, *end;
} span;

static void at(parser *p, const char *head, size_t i, const char *key, size_t j)
{
    p->at = (path){.head = head, .key = key, .i = i, .j = j};
}

/* p->at printed into p->field ("" for the document). */
static void render_field(parser *p)
{
    const path *f = &p->at;
    char i[24] = "", j[24] = "";
    if (f->head == NULL) {
        p->field[0] = '\0';
        return;
    }
    if (f->i != NO_INDEX)
        snprintf(i, sizeof i, "[%zu]", f->i);
    if (f->j != NO_INDEX)
        snprintf(j, sizeof j, "[%zu]", f->j);
    snprintf(p->field, SAMPLEBATCH_FIELD_MAX, "%s%s%s%s%s", f->head, i, f->key ? "." : "",
             f->key ? f->key : "", j);
}

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
    render_field(p);
    if (p->field[0])
        return err_set(p->err, code, "%s: %s", p->field, why);
    return err_set(p->err, code, "%s", why);
}

/* ---- walking the checked document ------------------------------------------------------ */

static const char *ws(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
        s++;
    return s;
}

/* Past the string at s (its '"'): the next quote that no backslash escapes. */
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

/* Past the value at s: only strings and nesting matter, so containers are crossed by looking
 * at the five bytes that can change them. */
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

/* Whether the member name whose quotes are [q, after) is `name`. A name written with escapes
 * is compared as jsonr decodes it (rare: in a small arena of its own). */
static bool name_is(const char *q, const char *after, const char *name)
{
    size_t raw = (size_t)(after - q) - 2, n = strlen(name);
    if (memchr(q + 1, '\\', raw) == NULL)
        return raw == n && memcmp(q + 1, name, n) == 0;
    if (raw > 6 * n)   /* each byte of a name is at most a 6-byte escape */
        return false;
    arena *t = arena_new(0);
    const jsonr_value *k = jsonr_parse(t, q, raw + 2, JSONR_DECODE_ANY, NULL, NULL);
    bool same = jsonr_string_length(k) == n && memcmp(jsonr_string(k), name, n) == 0;
    arena_free(t);
    return same;
}

/* Reads a member's value while members() crosses it, when it can: returns the end of the
 * value, or NULL to have it crossed (and read later) the usual way. */
typedef const char *quick_fn(void *ctx, const char *value, const char *end);

/* members_quick - as members, and the value of names[quick_index] is offered to `quick` (NULL:
 * none) first, which saves crossing it once to find its end and again to read it. */
static const char *members_quick(span *spans, const char *const *names, span v,
                                 size_t quick_index, quick_fn *quick, void *ctx);

/* The members named in `names` (NULL-terminated) of the object at v: spans[i] for names[i],
 * absent ones {NULL, NULL}; the last of a repeated name counts. */
static void members(span *spans, const char *const *names, span v)
{
    members_quick(spans, names, v, SIZE_MAX, NULL, NULL);
}

/* Returns the end of the object (past its '}'): v.end may be any bound past it. */
static const char *members_quick(span *spans, const char *const *names, span v,
                                 size_t quick_index, quick_fn *quick, void *ctx)
{
    size_t count = 0;
    while (names[count])
        count++;
    memset(spans, 0, count * sizeof *spans);
    const char *s = ws(v.p + 1, v.end), *end = v.end;
    if (*s == '}')
        return s + 1;
    for (;;) {
        const char *q = s, *after = skip_string(s, end);
        s = ws(ws(after, end) + 1, end);   /* past ':' */
        const char *vend = NULL;
        if (quick != NULL && name_is(q, after, names[quick_index]))
            vend = quick(ctx, s, end);
        if (vend == NULL)
            vend = skip_checked(s, end);
        for (size_t i = 0; i < count; i++)
            if (name_is(q, after, names[i])) {
                spans[i].p = s;
                spans[i].end = vend;
            }
        s = ws(vend, end);
        if (*s == '}')
            return s + 1;
        s = ws(s + 1, end);   /* past ',' */
    }
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

static bool is_null(span v)
{
    return v.p == NULL || *v.p == 'n';
}

/* The string or number at v decoded by jsonr into p->a; NULL when the budget ran out. */
static const jsonr_value *scalar(parser *p, span v)
{
    jsonr_error e;
    const jsonr_value *x =
        jsonr_parse(p->a, v.p, (size_t)(v.end - v.p), JSONR_DECODE_ANY, NULL, &e);
    if (x == NULL)   /* the document was checked: only the budget can fail */
        err_set(p->err, ERR_TOO_LARGE, "%s", e.text);
    return x;
}

/* The string at v (its '"'): *s, *n its bytes, NUL-terminated when it had escapes (decoded by
 * jsonr into p->a), else borrowed from the document between its quotes. false: no budget. */
static bool string_at(parser *p, span v, const char **s, size_t *n)
{
    size_t raw = (size_t)(v.end - v.p) - 2;
    if (memchr(v.p + 1, '\\', raw) == NULL) {
        *s = v.p + 1;
        *n = raw;
        return true;
    }
    const jsonr_value *x = scalar(p, v);
    *s = jsonr_string(x);
    *n = jsonr_string_length(x);
    return x != NULL;
}

/* A string field (path already set): *out = a copy in p->a, or NULL when absent/null and
 * optional. 1..max bytes, no control characters. */
static err_code get_str(parser *p, const char **out, span v, bool required, size_t max)
{
    *out = NULL;
    if (is_null(v))
        return required ? fail(p, ERR_INVALID, "missing") : ERR_OK;
    if (*v.p != '"')
        return fail(p, ERR_INVALID, "must be a string");
    const char *s;
    size_t n;
    if (!string_at(p, v, &s, &n))
        return ERR_TOO_LARGE;
    if (n == 0)
        return required ? fail(p, ERR_INVALID, "must not be empty") : ERR_OK;
    if (n > max)
        return fail(p, ERR_INVALID, "longer than %zu bytes (%zu)", max, n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20)
            return fail(p, ERR_INVALID, "holds a control character at byte %zu", i);
    char *copy = arena_strndup(p->a, s, n, p->err);
    if (copy == NULL)
        return ERR_TOO_LARGE;
    *out = copy;
    return ERR_OK;
}

/* An integer at v as jsonr reads it: *out; false for anything else (a real, a string, an
 * integer past int64). A plain run of up to 18 digits, the common case, is read here. */
static bool get_int(parser *p, span v, int64_t *out)
{
    size_t n = (size_t)(v.end - v.p);
    int64_t x = 0;
    size_t i = 0;
    while (i < n && i < 18 && v.p[i] >= '0' && v.p[i] <= '9')
        x = x * 10 + (v.p[i++] - '0');
    if (i == n && n > 0) {
        *out = x;
        return true;
    }
    if (*v.p != '-' && (*v.p < '0' || *v.p > '9'))
        return false;
    const jsonr_value *j = scalar(p, v);
    *out = jsonr_integer(j);
    return jsonr_is_integer(j);
}

/* 1 + the value of a hex digit; 0 for any other byte. */
static const unsigned char HEX[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* An address or size: a non-negative JSON integer or a "0x..." hex string (1..16 digits). */
static bool get_u64(parser *p, span v, uint64_t *out)
{
    if (v.p == NULL)
        return false;
    if (*v.p != '"') {
        int64_t i;
        if (!get_int(p, v, &i) || i < 0)
            return false;
        *out = (uint64_t)i;
        return true;
    }
    const char *s;
    size_t n;
    if (!string_at(p, v, &s, &n) || n < 3 || n > 18 || s[0] != '0' ||
        (s[1] != 'x' && s[1] != 'X'))
        return false;
    uint64_t x = 0;
    for (size_t i = 2; i < n; i++) {
        unsigned d = HEX[(unsigned char)s[i]];
        if (d == 0)
            return false;
        x = x << 4 | (d - 1);
    }
    *out = x;
    return true;
}

/* A frame as clients write it, "0x" and 1..16 hex digits without escapes, at s (checked
 * text): *out its value, returns the byte after the closing quote; NULL for anything else,
 * which get_u64 reads. */
static const char *quick_hex(const char *s, const char *end, uint64_t *out)
{
    if (end - s < 4 || s[0] != '"' || s[1] != '0' || (s[2] != 'x' && s[2] != 'X'))
        return NULL;
    const char *q = s + 3, *stop = end - s > 20 ? s + 20 : end;
    uint64_t x = 0;
    unsigned d;
    while (q < stop && (d = HEX[(unsigned char)*q]) != 0) {
        x = x << 4 | (d - 1);
        q++;
    }
    if (q == s + 3 || q - (s + 3) > 16 || q >= end || *q != '"')
        return NULL;
    *out = x;
    return q + 1;
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
    at(p, "format_version", NO_INDEX, NULL, NO_INDEX);
    span fv = top[M_FORMAT_VERSION];
    if (fv.p == NULL)
        return fail(p, ERR_INVALID, "missing (this server reads format_version 1)");
    if (fv.end - fv.p != 1 || *fv.p != '1')
        return fail(p, ERR_UNSUPPORTED, "unsupported (this server reads format_version 1)");
    at(p, "batch_id", NO_INDEX, NULL, NO_INDEX);
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
            at(p, OBJECTS[o].object, NO_INDEX, NULL, NO_INDEX);
            return fail(p, ERR_INVALID, v.p ? "must be an object" : "missing");
        }
        members(fields[o], OBJECTS[o].keys, v);
        for (size_t i = 0; i < sizeof STRS / sizeof STRS[0]; i++) {
            if (STRS[i].object != (int)o)
                continue;
            at(p, OBJECTS[o].object, NO_INDEX, OBJECTS[o].keys[STRS[i].key], NO_INDEX);
            rc = get_str(p, (const char **)((char *)b + STRS[i].offset), fields[o][STRS[i].key],
                         STRS[i].required, STRS[i].max);
            if (rc != ERR_OK)
                return rc;
        }
    }
    at(p, "arch", NO_INDEX, NULL, NO_INDEX);
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
    at(p, "images", i, NULL, NO_INDEX);
    if (*o.p != '{')
        return fail(p, ERR_INVALID, "must be an object");
    members(f, KEYS, o);
    at(p, "images", i, "path", NO_INDEX);
    if ((rc = get_str(p, &im->path, f[K_PATH], false, 4096)) != ERR_OK)
        return rc;
    at(p, "images", i, "name", NO_INDEX);
    if ((rc = get_str(p, &im->name, f[K_NAME], im->path == NULL, 1024)) != ERR_OK)
        return rc;
    if (im->name == NULL) {   /* the path's last component */
        const char *slash = strrchr(im->path, '/');
        im->name = slash && slash[1] ? slash + 1 : im->path;
    }
    at(p, "images", i, "uuid", NO_INDEX);
    if (is_null(f[K_UUID]))
        return fail(p, ERR_INVALID, "missing (a dSYM is matched by its UUID)");
    const char *uuid = NULL;
    if (*f[K_UUID].p != '"' || get_str(p, &uuid, f[K_UUID], false, 64) != ERR_OK ||
        uuid == NULL || !uuid_norm(im->uuid, uuid, strlen(uuid)))
        return fail(p, ERR_INVALID, "not a UUID (32 hex digits, not all zero)");
    at(p, "images", i, "arch", NO_INDEX);
    if ((rc = get_str(p, &im->arch, f[K_ARCH], false, 32)) != ERR_OK)
        return rc;
    if (im->arch == NULL)
        im->arch = p->b->arch;
    at(p, "images", i, "load_address", NO_INDEX);
    if (f[K_LOAD].p == NULL)
        return fail(p, ERR_INVALID, "missing");
    if (!get_u64(p, f[K_LOAD], &im->load_addr))
        return fail(p, ERR_INVALID, "must be a \"0x...\" hex string or a non-negative integer");
    at(p, "images", i, "size", NO_INDEX);
    uint64_t size = 0;
    if (f[K_SIZE].p == NULL)
        return fail(p, ERR_INVALID, "missing (bytes of the image's __TEXT)");
    if (!get_u64(p, f[K_SIZE], &size) || size == 0 || size > (1ull << 36) ||
        im->load_addr > UINT64_MAX - size)
        return fail(p, ERR_INVALID, "must be a positive byte count below 2^36");
    im->end_addr = im->load_addr + size - 1;
    at(p, "images", i, "in_app", NO_INDEX);
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
    at(p, "images", NO_INDEX, NULL, NO_INDEX);
    if (v.p == NULL || *v.p != '[')
        return fail(p, ERR_INVALID, v.p ? "must be an array" : "missing");
    size_t cap = 0;
    span e;
    for (const char *it = v.p; next_element(&e, &it, v);) {
        if (b->nimages == SAMPLEBATCH_MAX_IMAGES) {
            at(p, "images", NO_INDEX, NULL, NO_INDEX);
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
        at(p, "images", NO_INDEX, NULL, NO_INDEX);
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

/* A sample's frames read while its members are crossed (quick_fn): all of them "0x..." strings
 * (quick_hex), at most SAMPLEBATCH_MAX_FRAMES, else nothing is kept and the frames are read
 * element by element. */
typedef struct {
    parser *p;
    const char *at;             /* the frames value these are of; NULL: none */
    samplebatch_frame *frames;  /* in p->a; image not set yet */
    size_t n, cap;
} quick_frames;

static const char *quick_frames_read(void *ctx, const char *s, const char *end)
{
    quick_frames *q = ctx;
    q->at = NULL;
    q->n = 0;
    if (*s != '[')
        return NULL;
    const char *it = ws(s + 1, end);
    if (*it == ']')
        return NULL;   /* empty: the usual path reports it */
    for (;;) {
        uint64_t addr;
        const char *after = quick_hex(it, end, &addr);
        if (after == NULL || q->n == SAMPLEBATCH_MAX_FRAMES)
            return NULL;
        if (q->n == q->cap &&
            (q->frames = grow(q->p, q->frames, &q->cap, sizeof *q->frames)) == NULL)
            return NULL;
        q->frames[q->n++].addr = addr;
        it = ws(after, end);
        if (*it == ']') {
            q->at = s;
            return it + 1;
        }
        it = ws(it + 1, end);   /* past ',' */
    }
}

/* The sample whose object starts at o.p (o.end: a bound past it) -> *s; *after: past it. */
static err_code parse_sample(parser *p, samplebatch_sample *s, const char **after, span o,
                             size_t i, samplebatch_origin origin)
{
    static const char *const KEYS[] = {"tag", "thread", "count", "frames", NULL};
    enum { K_TAG, K_THREAD, K_COUNT, K_FRAMES };
    const samplebatch *b = p->b;
    err_code rc;
    span f[4];
    memset(s, 0, sizeof *s);
    at(p, "samples", i, NULL, NO_INDEX);
    if (*o.p != '{')
        return fail(p, ERR_INVALID, "must be an object");
    quick_frames qf = {.p = p};
    *after = members_quick(f, KEYS, o, K_FRAMES, quick_frames_read, &qf);
    at(p, "samples", i, "tag", NO_INDEX);
    if ((rc = get_str(p, &s->tag, f[K_TAG], true, SAMPLEBATCH_MAX_TAG)) != ERR_OK)
        return rc;
    at(p, "samples", i, "thread", NO_INDEX);
    if ((rc = get_str(p, &s->thread, f[K_THREAD], false, 256)) != ERR_OK)
        return rc;

    at(p, "samples", i, "count", NO_INDEX);
    uint64_t max = origin == SAMPLEBATCH_STORED
                       ? (uint64_t)SAMPLEBATCH_MAX_COUNT * SAMPLEBATCH_MAX_SAMPLES
                       : SAMPLEBATCH_MAX_COUNT;
    s->count = 1;
    if (f[K_COUNT].p != NULL) {
        int64_t v = 0;
        if (!get_int(p, f[K_COUNT], &v) || v < 1 || (uint64_t)v > max)
            return fail(p, ERR_INVALID, "must be an integer from 1 to %llu",
                        (unsigned long long)max);
        s->count = (uint64_t)v;
    }

    at(p, "samples", i, "frames", NO_INDEX);
    span fs = f[K_FRAMES];
    if (fs.p == NULL || *fs.p != '[')
        return fail(p, ERR_INVALID, fs.p ? "must be an array" : "missing");
    if (qf.at != NULL && qf.at == fs.p) {
        /* read already: only their images to find */
        s->frames = qf.frames;
        for (size_t k = 0; k < qf.n; k++) {
            uint64_t addr = s->frames[k].addr;
            long im = image_of(p, addr >> 47 ? crashreport_strip_pac(addr, b->arch) : addr);
            if (im < 0) {
                at(p, "samples", i, "frames", k);
                return fail(p, ERR_INVALID, "0x%llx lies in no image of \"images\"",
                            (unsigned long long)addr);
            }
            s->frames[k].image = (uint32_t)im;
        }
        s->nframes = (uint32_t)qf.n;
        return ERR_OK;
    }
    size_t cap = 0;
    span e;
    for (const char *it = fs.p;;) {
        /* the common frame read in one step; anything else element by element */
        uint64_t addr;
        const char *after = *it != ']' ? quick_hex(ws(it + 1, fs.end), fs.end, &addr) : NULL;
        if (after != NULL)
            it = ws(after, fs.end);
        else if (!next_element(&e, &it, fs))
            break;
        size_t k = s->nframes;
        if (k == SAMPLEBATCH_MAX_FRAMES) {
            size_t n = k + 1;
            while (next_element(&e, &it, fs))
                n++;
            return fail(p, ERR_TOO_LARGE, "more than %d frames (%zu)", SAMPLEBATCH_MAX_FRAMES, n);
        }
        if (k == cap && (s->frames = grow(p, s->frames, &cap, sizeof *s->frames)) == NULL)
            return ERR_TOO_LARGE;
        if (after == NULL && !get_u64(p, e, &addr)) {
            at(p, "samples", i, "frames", k);
            return fail(p, ERR_INVALID, "must be a \"0x...\" hex string or a non-negative integer");
        }
        /* only an address above 2^47 can carry PAC bits: the arch is looked at for those */
        long im = image_of(p, addr >> 47 ? crashreport_strip_pac(addr, b->arch) : addr);
        if (im < 0) {
            at(p, "samples", i, "frames", k);
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

/* The batch in the checked object `top` -> p->b. */
static err_code parse_batch(parser *p, span doc, samplebatch_origin origin)
{
    span top[M_N];
    members(top, TOP, doc);
    err_code rc = parse_header(p, top);
    if (rc == ERR_OK)
        rc = parse_images(p, top[M_IMAGES]);
    if (rc != ERR_OK)
        return rc;

    samplebatch *b = p->b;
    span v = top[M_SAMPLES];
    at(p, "samples", NO_INDEX, NULL, NO_INDEX);
    if (v.p == NULL || *v.p != '[')
        return fail(p, ERR_INVALID, v.p ? "must be an array" : "missing");
    size_t cap = 0;
    span e;
    for (const char *it = v.p;;) {
        /* as next_element, but a sample is crossed once, by reading it */
        const char *s0 = *it == ']' ? it : ws(it + 1, v.end);
        if (*s0 == ']')
            break;
        e = (span){s0, v.end};
        if (b->nsamples == SAMPLEBATCH_MAX_SAMPLES) {
            size_t n = b->nsamples;   /* the loop counts this one and the rest */
            while (next_element(&e, &it, v))
                n++;
            at(p, "samples", NO_INDEX, NULL, NO_INDEX);
            return fail(p, ERR_TOO_LARGE, "more than %d samples in one batch (%zu): send "
                        "several", SAMPLEBATCH_MAX_SAMPLES, n);
        }
        if (b->nsamples == cap &&
            (b->samples = grow(p, b->samples, &cap, sizeof *b->samples)) == NULL)
            return ERR_TOO_LARGE;
        const char *after = NULL;
        rc = parse_sample(p, &b->samples[b->nsamples], &after, e, b->nsamples, origin);
        if (rc != ERR_OK)
            return rc;
        it = ws(after, v.end);
        b->calls += b->samples[b->nsamples].count;
        b->nsamples++;
    }
    if (b->nsamples == 0) {
        at(p, "samples", NO_INDEX, NULL, NO_INDEX);
        return fail(p, ERR_INVALID, "must hold at least one sample");
    }
    return ERR_OK;
}

err_code samplebatch_parse(samplebatch **out, char field[SAMPLEBATCH_FIELD_MAX], const char *json,
                           size_t len, samplebatch_origin origin, arena *a, err_info *err)
{
    parser p = {.field = field, .a = a, .err = err};
    at(&p, NULL, NO_INDEX, NULL, NO_INDEX);
    *out = NULL;
    field[0] = '\0';
    /* 1. the whole document checked as jsonr reads JSON */
    jsonr_error je;
    if (!jsonr_check(json, len, JSONR_DECODE_ANY, NULL, &je))
        return err_set(err, ERR_INVALID, "malformed JSON at byte %zu: %s", je.position, je.text);
    const char *s = ws(json, json + len);
    if (*s != '{')
        return err_set(err, ERR_INVALID, "a sample batch must be a JSON object");
    /* 2. the fields, in a fixed order */
    p.b = arena_alloc(a, sizeof *p.b, err);
    if (p.b == NULL)
        return ERR_TOO_LARGE;
    err_code rc = parse_batch(&p, (span){s, skip_checked(s, json + len)}, origin);
    if (rc != ERR_OK) {
        render_field(&p);   /* as fail() does, for errors that did not pass through it */
        return rc;
    }
    field[0] = '\0';
    *out = p.b;
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

/* The merge both canonical forms make: sum[i] = the summed count of sample i's stack when i is
 * its first sample, else 0; image_map[i] = image i's index among the images a kept sample's
 * frame lies in (original order), -1 when none does. Both arrays from malloc (caller frees). */
static void merge_stacks(uint64_t **sum_out, int32_t **image_map_out, const samplebatch *b)
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
    free(slots);
    *sum_out = sum;
    *image_map_out = image_map;
}

/* A copy of `s` in `a` (NULL stays NULL); *ok = false when the budget ran out. */
static const char *copy_str(arena *a, const char *s, bool *ok, err_info *err)
{
    if (s == NULL)
        return NULL;
    char *c = arena_strdup(a, s, err);
    *ok &= c != NULL;
    return c;
}

err_code samplebatch_canonical(samplebatch **out, const samplebatch *b, arena *a, err_info *err)
{
    uint64_t *sum;
    int32_t *image_map;
    *out = NULL;
    merge_stacks(&sum, &image_map, b);
    err_code rc = ERR_TOO_LARGE;
    bool ok = true;
    size_t nimages = 0, nsamples = 0;
    for (size_t i = 0; i < b->nimages; i++)
        nimages += image_map[i] >= 0;
    for (size_t i = 0; i < b->nsamples; i++)
        nsamples += sum[i] > 0;
    samplebatch *c = arena_alloc(a, sizeof *c, err);
    if (c == NULL)
        goto done;
    memset(c, 0, sizeof *c);
    c->images = arena_alloc_array(a, nimages ? nimages : 1, sizeof *c->images, err);
    c->samples = arena_alloc_array(a, nsamples ? nsamples : 1, sizeof *c->samples, err);
    if (c->images == NULL || c->samples == NULL)
        goto done;
    c->batch_id = copy_str(a, b->batch_id, &ok, err);
    c->app_name = copy_str(a, b->app_name, &ok, err);
    c->bundle_id = copy_str(a, b->bundle_id, &ok, err);
    c->app_version = copy_str(a, b->app_version, &ok, err);
    c->build = copy_str(a, b->build, &ok, err);
    c->os_name = copy_str(a, b->os_name, &ok, err);
    c->os_version = copy_str(a, b->os_version, &ok, err);
    c->os_build = copy_str(a, b->os_build, &ok, err);
    c->device_model = copy_str(a, b->device_model, &ok, err);
    c->device_id = copy_str(a, b->device_id, &ok, err);
    c->arch = copy_str(a, b->arch, &ok, err);
    /* each image as samplebatch_parse reads the one the canonical text gives for it */
    for (size_t i = 0; ok && i < b->nimages; i++) {
        if (image_map[i] < 0)
            continue;
        const crashreport_image *im = &b->images[i];
        crashreport_image *ci = &c->images[c->nimages++];
        memset(ci, 0, sizeof *ci);
        memcpy(ci->uuid, im->uuid, sizeof ci->uuid);
        ci->name = copy_str(a, im->name, &ok, err);
        ci->path = copy_str(a, im->path, &ok, err);
        ci->arch = copy_str(a, im->arch, &ok, err);
        ci->load_addr = im->load_addr;
        ci->end_addr = im->end_addr;
        ci->in_app = im->in_app;
        ci->user = im->in_app == CRASHREPORT_IN_APP_YES;
    }
    /* the first sample of each stack with the summed count, its frames on the kept images */
    const char *last_tag = NULL, *last_copy = NULL;
    for (size_t i = 0; ok && i < b->nsamples; i++) {
        if (sum[i] == 0)
            continue;
        const samplebatch_sample *s = &b->samples[i];
        samplebatch_sample *cs = &c->samples[c->nsamples++];
        memset(cs, 0, sizeof *cs);
        /* a batch's samples share a few tags: one copy per run of the same tag */
        if (last_tag == NULL || strcmp(last_tag, s->tag) != 0) {
            last_tag = s->tag;
            last_copy = copy_str(a, s->tag, &ok, err);
        }
        cs->tag = last_copy;
        cs->count = sum[i];
        cs->nframes = s->nframes;
        cs->frames = arena_alloc_array(a, s->nframes, sizeof *cs->frames, err);
        if (cs->frames == NULL) {
            ok = false;
            break;
        }
        for (uint32_t k = 0; k < s->nframes; k++) {
            cs->frames[k].addr = s->frames[k].addr;
            cs->frames[k].image = (uint32_t)image_map[s->frames[k].image];
        }
        c->calls += sum[i];
    }
    if (!ok)
        goto done;
    *out = c;
    rc = ERR_OK;
done:
    free(sum);
    free(image_map);
    return rc;
}

void samplebatch_render_canonical(buf *out, size_t *nstacks, const samplebatch *b)
{
    uint64_t *sum;
    int32_t *image_map;
    merge_stacks(&sum, &image_map, b);

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
    free(sum);
    free(image_map);
}
