/*
 * jsonw - see jsonw.h. Two bit sets track, per open container, whether it is an object and
 * whether it has a member already; that is all the state a comma needs. Keys and numbers are
 * written straight into the buffer (no printf): a report's model is mostly keys and numbers,
 * and it is written once per report on the ingest path.
 */
#include "base/jsonw.h"

#include <assert.h>
#include <string.h>

void jsonw_init(jsonw *w, buf *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
}

/* Room for `n` more bytes; returns where they go. Callers advance b->len and keep the NUL. */
static inline char *room(buf *b, size_t n)
{
    if (b->cap - b->len <= n)   /* buf_reserve's own test, without the call when it fits */
        buf_reserve(b, n);
    return (char *)b->data + b->len;
}

static void put(buf *b, const char *p, size_t n)
{
    char *d = room(b, n);
    memcpy(d, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

/* The length of key `k` and whether its bytes can be copied without escaping (keys are
 * names from the code), in one pass: a model has some 600 keys. */
static size_t key_len(const char *k, bool *plain)
{
    size_t n = 0;
    bool ok = true;
    for (unsigned char c; (c = (unsigned char)k[n]) != 0; n++)
        ok &= c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
    *plain = ok;
    return n;
}

/* Before any value: the comma between array elements (members get theirs in jsonw_key). */
static void before_value(jsonw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    assert(w->depth == 0 || !(w->is_object >> (w->depth - 1) & 1)); /* a member needs a key */
    if (w->depth > 0) {
        uint64_t bit = UINT64_C(1) << (w->depth - 1);
        if (w->has_items & bit)
            put(w->out, ",", 1);
        w->has_items |= bit;
    }
}

static void open_container(jsonw *w, char c, bool object)
{
    before_value(w);
    assert(w->depth < JSONW_MAX_DEPTH);
    uint64_t bit = UINT64_C(1) << w->depth;
    w->has_items &= ~bit;
    if (object)
        w->is_object |= bit;
    else
        w->is_object &= ~bit;
    w->depth++;
    put(w->out, &c, 1);
}

static void close_container(jsonw *w, char c, bool object)
{
    assert(w->depth > 0 && !w->after_key);
    assert(((w->is_object >> (w->depth - 1)) & 1) == (uint64_t)object);
    (void)object;
    w->depth--;
    put(w->out, &c, 1);
}

void jsonw_object_begin(jsonw *w) { open_container(w, '{', true); }
void jsonw_object_end(jsonw *w) { close_container(w, '}', true); }
void jsonw_array_begin(jsonw *w) { open_container(w, '[', false); }
void jsonw_array_end(jsonw *w) { close_container(w, ']', false); }

void jsonw_key(jsonw *w, const char *key)
{
    assert(w->depth > 0 && (w->is_object >> (w->depth - 1) & 1) && !w->after_key);
    uint64_t bit = UINT64_C(1) << (w->depth - 1);
    bool comma = (w->has_items & bit) != 0;
    w->has_items |= bit;
    w->after_key = true;
    bool plain;
    size_t n = key_len(key, &plain);
    if (!plain) {
        if (comma)
            put(w->out, ",", 1);
        buf_append_json_str(w->out, key, n);
        put(w->out, ":", 1);
        return;
    }
    buf *b = w->out;
    char *d = room(b, n + 4), *p = d;   /* ,"key": */
    if (comma)
        *p++ = ',';
    *p++ = '"';
    memcpy(p, key, n);
    p += n;
    *p++ = '"';
    *p++ = ':';
    b->len += (size_t)(p - d);
    b->data[b->len] = 0;
}

void jsonw_str(jsonw *w, const char *s)
{
    if (s == NULL) {
        jsonw_null(w);
        return;
    }
    jsonw_strn(w, s, strlen(s));
}

void jsonw_strn(jsonw *w, const char *s, size_t n)
{
    before_value(w);
    buf_append_json_str(w->out, s, n);
}

/* Decimal digits of v, written backwards from the end of `end`; returns the first. */
static char *digits_u64(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

void jsonw_int(jsonw *w, int64_t v)
{
    char tmp[24], *end = tmp + sizeof tmp;
    /* the magnitude as unsigned: -INT64_MIN does not fit an int64_t */
    char *p = digits_u64(end, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--p = '-';
    before_value(w);
    put(w->out, p, (size_t)(end - p));
}

void jsonw_uint(jsonw *w, uint64_t v)
{
    char tmp[24], *end = tmp + sizeof tmp;
    char *p = digits_u64(end, v);
    before_value(w);
    put(w->out, p, (size_t)(end - p));
}

void jsonw_bool(jsonw *w, bool v)
{
    before_value(w);
    if (v)
        put(w->out, "true", 4);
    else
        put(w->out, "false", 5);
}

void jsonw_null(jsonw *w)
{
    before_value(w);
    put(w->out, "null", 4);
}

void jsonw_hex(jsonw *w, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[24], *end = tmp + sizeof tmp, *p = end;
    *--p = '"';
    do {
        *--p = hex[v & 15];
        v >>= 4;
    } while (v);
    *--p = 'x';
    *--p = '0';
    *--p = '"';
    before_value(w);
    put(w->out, p, (size_t)(end - p));
}

void jsonw_raw(jsonw *w, const char *json)
{
    before_value(w);
    buf_append_str(w->out, json ? json : "null");
}

void jsonw_kstr(jsonw *w, const char *key, const char *s) { jsonw_key(w, key); jsonw_str(w, s); }
void jsonw_kint(jsonw *w, const char *key, int64_t v) { jsonw_key(w, key); jsonw_int(w, v); }
void jsonw_kuint(jsonw *w, const char *key, uint64_t v) { jsonw_key(w, key); jsonw_uint(w, v); }
void jsonw_kbool(jsonw *w, const char *key, bool v) { jsonw_key(w, key); jsonw_bool(w, v); }
void jsonw_knull(jsonw *w, const char *key) { jsonw_key(w, key); jsonw_null(w); }
void jsonw_khex(jsonw *w, const char *key, uint64_t v) { jsonw_key(w, key); jsonw_hex(w, v); }
void jsonw_kraw(jsonw *w, const char *key, const char *json)
{
    jsonw_key(w, key);
    jsonw_raw(w, json);
}
