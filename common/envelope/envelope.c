/*
 * envelope.c - Sentry envelope framing (envelope.h has the grammar and the bounds).
 */
#include "envelope/envelope.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void release_json(void *j)
{
    json_decref(j);
}

/* A header line [p, p + n) as a JSON object, deferred to the arena; NULL + err on failure. */
static json_t *header_json(const char *p, size_t n, const char *what, arena *a, err_info *err)
{
    if (n > ENVELOPE_MAX_HEADER) {
        err_set(err, ERR_TOO_LARGE, "%s is %zu bytes, over the limit of %d", what, n,
                ENVELOPE_MAX_HEADER);
        return NULL;
    }
    json_error_t e;
    json_t *j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &e);
    if (j == NULL) {
        err_set(err, ERR_INVALID, "%s is not valid JSON: %s", what, e.text);
        return NULL;
    }
    arena_defer(a, release_json, j);
    if (!json_is_object(j)) {
        err_set(err, ERR_INVALID, "%s is not a JSON object", what);
        return NULL;
    }
    return j;
}

/* A string member copied into the arena; NULL if absent or not a string. */
static const char *member(const json_t *o, const char *key, arena *a, err_info *err, bool *failed)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return NULL;
    const char *s = arena_strndup(a, json_string_value(v), json_string_length(v), err);
    if (s == NULL)
        *failed = true;
    return s;
}

/* The end of the line starting at `i`: the offset of its "\n", or len. */
static size_t line_end(const char *data, size_t len, size_t i)
{
    const char *nl = memchr(data + i, '\n', len - i);
    return nl != NULL ? (size_t)(nl - data) : len;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

err_code envelope_parse(envelope **out, const char *data, size_t len, const envelope_limits *lim,
                        arena *a, err_info *err)
{
    size_t max_items = lim && lim->max_items ? lim->max_items : ENVELOPE_DEFAULT_MAX_ITEMS;
    size_t max_bytes = lim && lim->max_item_bytes ? lim->max_item_bytes
                                                  : ENVELOPE_DEFAULT_MAX_ITEM_BYTES;
    bool failed = false;
    *out = NULL;
    envelope *env = arena_alloc(a, sizeof *env, err);
    if (env == NULL)
        return ERR_TOO_LARGE;
    memset(env, 0, sizeof *env);
    if (len == 0)
        return err_set(err, ERR_INVALID, "envelope is empty");

    size_t i = 0, end = line_end(data, len, 0);
    json_t *h = header_json(data, end, "envelope header", a, err);
    if (h == NULL)
        return err->code;
    env->event_id = member(h, "event_id", a, err, &failed);
    env->dsn = member(h, "dsn", a, err, &failed);
    if (failed)
        return ERR_TOO_LARGE;
    i = end < len ? end + 1 : len;

    size_t cap = 0;
    while (i < len) {
        end = line_end(data, len, i);
        if (blank(data + i, end - i)) { /* blank lines between items and at the end */
            i = end < len ? end + 1 : len;
            continue;
        }
        size_t k = env->nitems;
        if (k >= max_items)
            return err_set(err, ERR_TOO_LARGE, "envelope has more than %zu items", max_items);
        char what[48];
        snprintf(what, sizeof what, "item %zu header", k);
        json_t *ih = header_json(data + i, end - i, what, a, err);
        if (ih == NULL)
            return err->code;
        if (k == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            envelope_item *grown = arena_grow(a, env->items, cap * sizeof *grown,
                                              ncap * sizeof *grown, err);
            if (grown == NULL)
                return ERR_TOO_LARGE;
            env->items = grown;
            cap = ncap;
        }
        envelope_item *it = &env->items[k];
        memset(it, 0, sizeof *it);
        it->type = member(ih, "type", a, err, &failed);
        it->content_type = member(ih, "content_type", a, err, &failed);
        it->filename = member(ih, "filename", a, err, &failed);
        it->attachment_type = member(ih, "attachment_type", a, err, &failed);
        if (failed)
            return ERR_TOO_LARGE;
        if (it->type == NULL || it->type[0] == '\0')
            return err_set(err, ERR_INVALID, "item %zu header has no \"type\"", k);
        size_t p = end < len ? end + 1 : len; /* payload start */
        const json_t *jl = json_object_get(ih, "length");
        size_t plen;
        if (jl != NULL && !json_is_null(jl)) {
            if (!json_is_integer(jl) || json_integer_value(jl) < 0)
                return err_set(err, ERR_INVALID,
                               "item %zu: \"length\" must be a non-negative integer", k);
            json_int_t want = json_integer_value(jl);
            if ((uint64_t)want > (uint64_t)(len - p))
                return err_set(err, ERR_INVALID,
                               "item %zu: length %lld runs past the end of the envelope (%zu "
                               "bytes left)",
                               k, (long long)want, len - p);
            plen = (size_t)want;
            if (plen > max_bytes)
                return err_set(err, ERR_TOO_LARGE, "item %zu (%s) is %zu bytes, over the limit "
                               "of %zu", k, it->type, plen, max_bytes);
            /* after the payload: a newline or the end */
            size_t q = p + plen;
            if (q < len && data[q] != '\n' && !(data[q] == '\r' && q + 1 < len && data[q + 1] == '\n'))
                return err_set(err, ERR_INVALID,
                               "item %zu: payload of length %zu is not followed by a newline", k,
                               plen);
            i = q < len ? q + (data[q] == '\r' ? 2 : 1) : len;
        } else {
            size_t q = line_end(data, len, p);
            plen = q - p;
            if (plen > max_bytes)
                return err_set(err, ERR_TOO_LARGE, "item %zu (%s) is %zu bytes, over the limit "
                               "of %zu", k, it->type, plen, max_bytes);
            i = q < len ? q + 1 : len;
        }
        it->payload = data + p;
        it->payload_len = plen;
        env->nitems = k + 1;
    }
    *out = env;
    return ERR_OK;
}
