/*
 * samplebatch - parse, check and canonicalize sample batches (see samplebatch.h).
 *
 * jansson reads the document (bounded nesting, UTF-8 checked); every field is then checked
 * in document order and the first problem is answered with its path, so a client learns
 * exactly which sample or image to fix. Frames are matched to images by a binary search over
 * the images sorted by load address.
 */
#include "samplebatch/samplebatch.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t load_addr;
    uint32_t index;     /* into samplebatch.images */
} image_pos;

typedef struct {
    samplebatch *b;
    char *field;        /* SAMPLEBATCH_FIELD_MAX bytes */
    arena *a;
    err_info *err;
    image_pos *order;   /* images sorted by load address */
} parser;

static void release_json(void *j)
{
    json_decref(j);
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

/* A string member `key` of `o` (field path already set by the caller): *out = arena copy, or
 * NULL when absent and optional. 1..max bytes, no control characters. */
static err_code get_str(parser *p, const char **out, const json_t *o, const char *key,
                        bool required, size_t max)
{
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        if (required)
            return fail(p, ERR_INVALID, "missing");
        return ERR_OK;
    }
    if (!json_is_string(v))
        return fail(p, ERR_INVALID, "must be a string");
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (n == 0 && required)
        return fail(p, ERR_INVALID, "must not be empty");
    if (n == 0)
        return ERR_OK;
    if (n > max)
        return fail(p, ERR_INVALID, "longer than %zu bytes (%zu)", max, n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20)
            return fail(p, ERR_INVALID, "holds a control character at byte %zu", i);
    *out = arena_strndup(p->a, s, n, p->err);
    return *out ? ERR_OK : ERR_TOO_LARGE;
}

/* An address or size: a non-negative JSON integer or a "0x..." hex string (1..16 digits). */
static bool get_u64(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0)
            return false;
        *out = (uint64_t)i;
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n < 3 || n > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return false;
    uint64_t x = 0;
    for (size_t i = 2; i < n; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
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

static err_code parse_header(parser *p, const json_t *root, samplebatch_origin origin)
{
    samplebatch *b = p->b;
    err_code rc;
    set_field(p, "format_version");
    const json_t *fv = json_object_get(root, "format_version");
    if (fv == NULL)
        return fail(p, ERR_INVALID, "missing (this server reads format_version 1)");
    if (!json_is_integer(fv) || json_integer_value(fv) != 1)
        return fail(p, ERR_UNSUPPORTED, "unsupported (this server reads format_version 1)");
    set_field(p, "batch_id");
    if ((rc = get_str(p, &b->batch_id, root, "batch_id", false, SAMPLEBATCH_MAX_ID)) != ERR_OK)
        return rc;

    static const struct {
        const char *object, *key;
        bool required;
        size_t offset;
        size_t max;
    } STRS[] = {
        {"app", "name", true, offsetof(samplebatch, app_name), 1024},
        {"app", "bundle_id", false, offsetof(samplebatch, bundle_id), 1024},
        {"app", "version", false, offsetof(samplebatch, app_version), SAMPLEBATCH_MAX_ID},
        {"app", "build", true, offsetof(samplebatch, build), SAMPLEBATCH_MAX_ID},
        {"os", "name", false, offsetof(samplebatch, os_name), SAMPLEBATCH_MAX_ID},
        {"os", "version", false, offsetof(samplebatch, os_version), SAMPLEBATCH_MAX_ID},
        {"os", "build", false, offsetof(samplebatch, os_build), SAMPLEBATCH_MAX_ID},
        {"device", "model", false, offsetof(samplebatch, device_model), SAMPLEBATCH_MAX_ID},
        {"device", "id", true, offsetof(samplebatch, device_id), SAMPLEBATCH_MAX_ID},
    };
    for (size_t i = 0; i < sizeof STRS / sizeof STRS[0]; i++) {
        const json_t *o = json_object_get(root, STRS[i].object);
        bool needed = strcmp(STRS[i].object, "os") != 0;
        if (o == NULL && !needed)
            continue;
        if (!json_is_object(o)) {
            set_field(p, "%s", STRS[i].object);
            return fail(p, ERR_INVALID, o ? "must be an object" : "missing");
        }
        set_field(p, "%s.%s", STRS[i].object, STRS[i].key);
        rc = get_str(p, (const char **)((char *)b + STRS[i].offset), o, STRS[i].key,
                     STRS[i].required, STRS[i].max);
        if (rc != ERR_OK)
            return rc;
    }
    set_field(p, "arch");
    (void)origin;
    return get_str(p, &b->arch, root, "arch", false, 32);
}

static err_code parse_images(parser *p, const json_t *root)
{
    samplebatch *b = p->b;
    const json_t *arr = json_object_get(root, "images");
    set_field(p, "images");
    if (!json_is_array(arr))
        return fail(p, ERR_INVALID, arr ? "must be an array" : "missing");
    size_t n = json_array_size(arr);
    if (n == 0)
        return fail(p, ERR_INVALID, "must list the images the frames lie in");
    if (n > SAMPLEBATCH_MAX_IMAGES)
        return fail(p, ERR_TOO_LARGE, "more than %d images (%zu)", SAMPLEBATCH_MAX_IMAGES, n);
    b->images = arena_alloc_array(p->a, n, sizeof *b->images, p->err);
    p->order = arena_alloc_array(p->a, n, sizeof *p->order, p->err);
    if (b->images == NULL || p->order == NULL)
        return ERR_TOO_LARGE;
    b->nimages = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(arr, i);
        crashreport_image *im = &b->images[i];
        err_code rc;
        memset(im, 0, sizeof *im);
        set_field(p, "images[%zu]", i);
        if (!json_is_object(o))
            return fail(p, ERR_INVALID, "must be an object");
        set_field(p, "images[%zu].path", i);
        if ((rc = get_str(p, &im->path, o, "path", false, 4096)) != ERR_OK)
            return rc;
        set_field(p, "images[%zu].name", i);
        if ((rc = get_str(p, &im->name, o, "name", im->path == NULL, 1024)) != ERR_OK)
            return rc;
        if (im->name == NULL) {   /* the path's last component */
            const char *slash = strrchr(im->path, '/');
            im->name = slash && slash[1] ? slash + 1 : im->path;
        }
        set_field(p, "images[%zu].uuid", i);
        const json_t *u = json_object_get(o, "uuid");
        if (u == NULL || json_is_null(u))
            return fail(p, ERR_INVALID, "missing (a dSYM is matched by its UUID)");
        if (!json_is_string(u) || !uuid_norm(im->uuid, json_string_value(u), json_string_length(u)))
            return fail(p, ERR_INVALID, "not a UUID (32 hex digits, not all zero)");
        set_field(p, "images[%zu].arch", i);
        if ((rc = get_str(p, &im->arch, o, "arch", false, 32)) != ERR_OK)
            return rc;
        if (im->arch == NULL)
            im->arch = b->arch;
        set_field(p, "images[%zu].load_address", i);
        const json_t *la = json_object_get(o, "load_address");
        if (la == NULL)
            return fail(p, ERR_INVALID, "missing");
        if (!get_u64(la, &im->load_addr))
            return fail(p, ERR_INVALID, "must be a \"0x...\" hex string or a non-negative integer");
        set_field(p, "images[%zu].size", i);
        const json_t *sz = json_object_get(o, "size");
        uint64_t size = 0;
        if (sz == NULL)
            return fail(p, ERR_INVALID, "missing (bytes of the image's __TEXT)");
        if (!get_u64(sz, &size) || size == 0 || size > (1ull << 36) ||
            im->load_addr > UINT64_MAX - size)
            return fail(p, ERR_INVALID, "must be a positive byte count below 2^36");
        im->end_addr = im->load_addr + size - 1;
        set_field(p, "images[%zu].in_app", i);
        const json_t *ia = json_object_get(o, "in_app");
        if (ia != NULL && !json_is_null(ia)) {
            if (!json_is_boolean(ia))
                return fail(p, ERR_INVALID, "must be true or false");
            im->in_app = json_is_true(ia) ? CRASHREPORT_IN_APP_YES : CRASHREPORT_IN_APP_NO;
        }
        im->user = im->in_app == CRASHREPORT_IN_APP_YES;
        p->order[i].load_addr = im->load_addr;
        p->order[i].index = (uint32_t)i;
    }
    qsort(p->order, n, sizeof *p->order, by_load_addr);
    return ERR_OK;
}

static err_code parse_sample(parser *p, samplebatch_sample *s, const json_t *o, size_t i,
                             samplebatch_origin origin)
{
    const samplebatch *b = p->b;
    err_code rc;
    set_field(p, "samples[%zu]", i);
    if (!json_is_object(o))
        return fail(p, ERR_INVALID, "must be an object");
    set_field(p, "samples[%zu].tag", i);
    if ((rc = get_str(p, &s->tag, o, "tag", true, SAMPLEBATCH_MAX_TAG)) != ERR_OK)
        return rc;
    set_field(p, "samples[%zu].thread", i);
    if ((rc = get_str(p, &s->thread, o, "thread", false, 256)) != ERR_OK)
        return rc;

    set_field(p, "samples[%zu].count", i);
    const json_t *c = json_object_get(o, "count");
    uint64_t max = origin == SAMPLEBATCH_STORED
                       ? (uint64_t)SAMPLEBATCH_MAX_COUNT * SAMPLEBATCH_MAX_SAMPLES
                       : SAMPLEBATCH_MAX_COUNT;
    s->count = 1;
    if (c != NULL) {
        json_int_t v = json_is_integer(c) ? json_integer_value(c) : 0;
        if (!json_is_integer(c) || v < 1 || (uint64_t)v > max)
            return fail(p, ERR_INVALID, "must be an integer from 1 to %llu",
                        (unsigned long long)max);
        s->count = (uint64_t)v;
    }

    set_field(p, "samples[%zu].frames", i);
    const json_t *fs = json_object_get(o, "frames");
    if (!json_is_array(fs))
        return fail(p, ERR_INVALID, fs ? "must be an array" : "missing");
    size_t n = json_array_size(fs);
    if (n == 0)
        return fail(p, ERR_INVALID, "must hold at least the frame inside the API");
    if (n > SAMPLEBATCH_MAX_FRAMES)
        return fail(p, ERR_TOO_LARGE, "more than %d frames (%zu)", SAMPLEBATCH_MAX_FRAMES, n);
    s->frames = arena_alloc_array(p->a, n, sizeof *s->frames, p->err);
    if (s->frames == NULL)
        return ERR_TOO_LARGE;
    s->nframes = (uint32_t)n;
    for (size_t k = 0; k < n; k++) {
        uint64_t addr;
        if (!get_u64(json_array_get(fs, k), &addr)) {
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
    }
    return ERR_OK;
}

err_code samplebatch_parse(samplebatch **out, char field[SAMPLEBATCH_FIELD_MAX], const char *json,
                           size_t len, samplebatch_origin origin, arena *a, err_info *err)
{
    parser p = {.field = field, .a = a, .err = err};
    *out = NULL;
    field[0] = '\0';
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (root == NULL)
        return err_set(err, ERR_INVALID, "malformed JSON at line %d column %d: %s", je.line,
                       je.column, je.text);
    arena_defer(a, release_json, root);
    if (!json_is_object(root))
        return err_set(err, ERR_INVALID, "a sample batch must be a JSON object");
    p.b = arena_alloc(a, sizeof *p.b, err);
    if (p.b == NULL)
        return ERR_TOO_LARGE;
    memset(p.b, 0, sizeof *p.b);
    err_code rc = parse_header(&p, root, origin);
    if (rc == ERR_OK)
        rc = parse_images(&p, root);
    if (rc != ERR_OK)
        return rc;

    const json_t *arr = json_object_get(root, "samples");
    set_field(&p, "samples");
    if (!json_is_array(arr))
        return fail(&p, ERR_INVALID, arr ? "must be an array" : "missing");
    size_t n = json_array_size(arr);
    if (n == 0)
        return fail(&p, ERR_INVALID, "must hold at least one sample");
    if (n > SAMPLEBATCH_MAX_SAMPLES)
        return fail(&p, ERR_TOO_LARGE, "more than %d samples in one batch (%zu): send several",
                    SAMPLEBATCH_MAX_SAMPLES, n);
    samplebatch *b = p.b;
    b->samples = arena_alloc_array(a, n, sizeof *b->samples, err);
    if (b->samples == NULL)
        return ERR_TOO_LARGE;
    b->nsamples = n;
    for (size_t i = 0; i < n; i++) {
        memset(&b->samples[i], 0, sizeof b->samples[i]);
        rc = parse_sample(&p, &b->samples[i], json_array_get(arr, i), i, origin);
        if (rc != ERR_OK)
            return rc;
        b->calls += b->samples[i].count;
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
            buf_printf(out, "%s\"0x%llx\"", k ? "," : "", (unsigned long long)s->frames[k].addr);
        buf_printf(out, "],\"count\":%llu}", (unsigned long long)sum[i]);
    }
    buf_append_str(out, "]}");
    if (nstacks)
        *nstacks = stacks;
    free(slots);
    free(sum);
    free(image_map);
}
