/*
 * envelope.c - Sentry envelope framing (envelope.h has the grammar and the bounds).
 */
#include "envelope/envelope.h"

#include "base/jsonr.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A header line [p, p + n) as a JSON object in the arena; NULL + err on failure. */
static jsonr_value *header_json(const char *p, size_t n, const char *what, arena *a,
                                err_info *err)
{
    if (n > ENVELOPE_MAX_HEADER) {
        err_set(err, ERR_TOO_LARGE, "%s is %zu bytes, over the limit of %d", what, n,
                ENVELOPE_MAX_HEADER);
        return NULL;
    }
    jsonr_error e;
    /* text that is no UTF-8 is no reason to refuse an event: U+FFFD, as in the event itself */
    jsonr_value *j =
        jsonr_parse(a, p, n, JSONR_REJECT_DUPLICATES | JSONR_REPLACE_INVALID, NULL, &e);
    if (j == NULL) {
        err_set(err, e.code == JSONR_ERR_TOO_LARGE ? ERR_TOO_LARGE : ERR_INVALID,
                "%s is not valid JSON: %s", what, e.text);
        return NULL;
    }
    if (!jsonr_is_object(j)) {
        err_set(err, ERR_INVALID, "%s is not a JSON object", what);
        return NULL;
    }
    return j;
}

/* A string member (in the arena, as the whole tree is); NULL if absent or not a string. */
static const char *member(const jsonr_value *o, const char *key)
{
    return jsonr_string(jsonr_get(o, key));
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
    *out = NULL;
    envelope *env = arena_alloc(a, sizeof *env, err);
    if (env == NULL)
        return ERR_TOO_LARGE;
    memset(env, 0, sizeof *env);
    if (len == 0)
        return err_set(err, ERR_INVALID, "envelope is empty");

    size_t i = 0, end = line_end(data, len, 0);
    jsonr_value *h = header_json(data, end, "envelope header", a, err);
    if (h == NULL)
        return err->code;
    env->event_id = member(h, "event_id");
    env->dsn = member(h, "dsn");
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
        jsonr_value *ih = header_json(data + i, end - i, what, a, err);
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
        it->type = member(ih, "type");
        it->content_type = member(ih, "content_type");
        it->filename = member(ih, "filename");
        it->attachment_type = member(ih, "attachment_type");
        if (it->type == NULL || it->type[0] == '\0')
            return err_set(err, ERR_INVALID, "item %zu header has no \"type\"", k);
        size_t p = end < len ? end + 1 : len; /* payload start */
        const jsonr_value *jl = jsonr_get(ih, "length");
        size_t plen;
        if (jl != NULL && !jsonr_is_null(jl)) {
            if (!jsonr_is_integer(jl) || jsonr_integer(jl) < 0)
                return err_set(err, ERR_INVALID,
                               "item %zu: \"length\" must be a non-negative integer", k);
            int64_t want = jsonr_integer(jl);
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
