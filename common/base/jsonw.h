/*
 * jsonw - the one way stacksift writes JSON: a small streaming writer that appends to a buf.
 * It places the commas and colons, escapes strings (buf_append_json_str: control characters
 * and invalid UTF-8 as \u00XX) and writes NULL strings as null, so that a caller states only
 * the shape. Used by every JSON the project produces: the report model (crashreport),
 * signature frames, the store's batch parameters and every HTTP answer. Its reading
 * counterpart is jsonr.h.
 *
 * Why not jansson objects: a writer costs no allocation per value and no tree to free, which
 * matters where a report's model is written per report on the ingest path; one writer for
 * everything means one set of escaping rules (server/README.md, "JSON").
 *
 *   jsonw w;
 *   jsonw_init(&w, &out);
 *   jsonw_object_begin(&w);
 *   jsonw_kstr(&w, "id", id);            -> {"id":"...","count":3,"tags":[]}
 *   jsonw_kint(&w, "count", 3);
 *   jsonw_key(&w, "tags");
 *   jsonw_array_begin(&w);
 *   jsonw_array_end(&w);
 *   jsonw_object_end(&w);
 *
 * Misuse (a key outside an object, unbalanced ends, nesting deeper than JSONW_MAX_DEPTH) is
 * an assert: the shapes are fixed by the code, never by input.
 */
#ifndef STACKSIFT_BASE_JSONW_H
#define STACKSIFT_BASE_JSONW_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"

#define JSONW_MAX_DEPTH 64

typedef struct {
    buf *out;            /* appended to; owned by the caller */
    unsigned depth;      /* open objects and arrays */
    uint64_t has_items;  /* bit d: the container at depth d has a member already */
    uint64_t is_object;  /* bit d: the container at depth d is an object */
    bool after_key;      /* a key was written, its value comes next */
} jsonw;

/* jsonw_init - write to `out` (appended after what it holds). */
void jsonw_init(jsonw *w, buf *out);

void jsonw_object_begin(jsonw *w);
void jsonw_object_end(jsonw *w);
void jsonw_array_begin(jsonw *w);
void jsonw_array_end(jsonw *w);

/* jsonw_key - the next member's key (inside an object). */
void jsonw_key(jsonw *w, const char *key);

/* Values: as an array element, after jsonw_key, or alone at the top. */
void jsonw_str(jsonw *w, const char *s);             /* NULL -> null */
void jsonw_strn(jsonw *w, const char *s, size_t n);  /* `n` bytes, no NUL needed */
void jsonw_int(jsonw *w, int64_t v);
void jsonw_uint(jsonw *w, uint64_t v);
void jsonw_bool(jsonw *w, bool v);
void jsonw_null(jsonw *w);
void jsonw_hex(jsonw *w, uint64_t v);                /* "0x1f": addresses */
/* jsonw_raw - JSON text made elsewhere (a stored model, a signature's frames), copied as it
 * is: the caller vouches that it is one valid JSON value. NULL -> null. */
void jsonw_raw(jsonw *w, const char *json);

/* Key and value in one call. */
void jsonw_kstr(jsonw *w, const char *key, const char *s);
void jsonw_kint(jsonw *w, const char *key, int64_t v);
void jsonw_kuint(jsonw *w, const char *key, uint64_t v);
void jsonw_kbool(jsonw *w, const char *key, bool v);
void jsonw_knull(jsonw *w, const char *key);
void jsonw_khex(jsonw *w, const char *key, uint64_t v);
void jsonw_kraw(jsonw *w, const char *key, const char *json);

/*
 * jsonw_key_lit - jsonw_key for a key that is a string literal of plain characters (no '"',
 * '\\' or control bytes: a name from the code, never from input). Its quotes and colon are
 * added at compile time, so writing it is one copy of a known size, inlined: a report's model
 * has some 600 keys, and measuring and checking each one byte by byte was ~5% of the server's
 * CPU per report. The jsonw_k*_lit forms pair it with a value, as jsonw_k* do.
 */
#define jsonw_key_lit(w, lit) jsonw_key_quoted((w), "\"" lit "\":", sizeof("\"" lit "\":") - 1)
#define jsonw_kstr_lit(w, lit, s)  do { jsonw_key_lit(w, lit); jsonw_str(w, s); } while (0)
#define jsonw_kint_lit(w, lit, v)  do { jsonw_key_lit(w, lit); jsonw_int(w, v); } while (0)
#define jsonw_kuint_lit(w, lit, v) do { jsonw_key_lit(w, lit); jsonw_uint(w, v); } while (0)
#define jsonw_kbool_lit(w, lit, v) do { jsonw_key_lit(w, lit); jsonw_bool(w, v); } while (0)
#define jsonw_khex_lit(w, lit, v)  do { jsonw_key_lit(w, lit); jsonw_hex(w, v); } while (0)
#define jsonw_kraw_lit(w, lit, j)  do { jsonw_key_lit(w, lit); jsonw_raw(w, j); } while (0)

/* jsonw_key_quoted - the key as `n` bytes of `"key":`, already quoted (jsonw_key_lit makes
 * them); the comma before it is added here. */
static inline void jsonw_key_quoted(jsonw *w, const char *quoted, size_t n)
{
    assert(w->depth > 0 && (w->is_object >> (w->depth - 1) & 1) && !w->after_key);
    uint64_t bit = UINT64_C(1) << (w->depth - 1);
    size_t comma = (w->has_items & bit) != 0;
    w->has_items |= bit;
    w->after_key = true;
    buf *b = w->out;
    if (b->cap - b->len <= n + 1)
        buf_reserve(b, n + 1);
    char *d = (char *)b->data + b->len;
    d[0] = ',';               /* kept only when a member came before */
    memcpy(d + comma, quoted, n);
    b->len += n + comma;
    b->data[b->len] = 0;
}

#endif
