/*
 * jsonw - see jsonw.h. Two bit sets track, per open container, whether it is an object and
 * whether it has a member already; that is all the state a comma needs.
 */
#include "base/jsonw.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

void jsonw_init(jsonw *w, buf *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
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
            buf_putc(w->out, ',');
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
    buf_putc(w->out, c);
}

static void close_container(jsonw *w, char c, bool object)
{
    assert(w->depth > 0 && !w->after_key);
    assert(((w->is_object >> (w->depth - 1)) & 1) == (uint64_t)object);
    (void)object;
    w->depth--;
    buf_putc(w->out, c);
}

void jsonw_object_begin(jsonw *w) { open_container(w, '{', true); }
void jsonw_object_end(jsonw *w) { close_container(w, '}', true); }
void jsonw_array_begin(jsonw *w) { open_container(w, '[', false); }
void jsonw_array_end(jsonw *w) { close_container(w, ']', false); }

void jsonw_key(jsonw *w, const char *key)
{
    assert(w->depth > 0 && (w->is_object >> (w->depth - 1) & 1) && !w->after_key);
    uint64_t bit = UINT64_C(1) << (w->depth - 1);
    if (w->has_items & bit)
        buf_putc(w->out, ',');
    w->has_items |= bit;
    buf_append_json_str(w->out, key, strlen(key));
    buf_putc(w->out, ':');
    w->after_key = true;
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

void jsonw_int(jsonw *w, int64_t v)
{
    before_value(w);
    buf_printf(w->out, "%" PRId64, v);
}

void jsonw_uint(jsonw *w, uint64_t v)
{
    before_value(w);
    buf_printf(w->out, "%" PRIu64, v);
}

void jsonw_bool(jsonw *w, bool v)
{
    before_value(w);
    buf_append_str(w->out, v ? "true" : "false");
}

void jsonw_null(jsonw *w)
{
    before_value(w);
    buf_append_str(w->out, "null");
}

void jsonw_hex(jsonw *w, uint64_t v)
{
    before_value(w);
    buf_printf(w->out, "\"0x%" PRIx64 "\"", v);
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
