/*
 * jsonr - the JSON reader of the ingest paths: one pass over a body into a read-only tree
 * that lives in the request's arena (RFC 8259).
 *
 * Why not jansson here: a report, an envelope's event or a batch of sessions is parsed once,
 * read once and dropped with the request. jansson builds a hash table per object and mallocs
 * every key, string and node, then frees them one by one; on the ingest paths that was most
 * of the server's CPU per request. This reader allocates from the arena only (one bump per
 * string and one per container, nothing freed one by one), keeps each container's members in
 * one array in document order and finds a key by a scan from the end (the last duplicate
 * wins, as with jansson's default). jansson stays where trees are built or edited.
 *
 * Accepted as jansson accepts it, so that moving a parser between them changes no verdict:
 * strict RFC 8259 (no comments, no trailing commas, no leading zeros, no NaN), valid UTF-8
 * only (RFC 3629, as base/utf8 checks it), escapes checked (a lone surrogate is an error),
 * "\u0000" refused (every string is a whole C string), nesting to JSONR_MAX_DEPTH, and by
 * default an object or array at the top (JSONR_REPLACE_INVALID relaxes the UTF-8 rules). Integers outside int64 become reals (jansson needs
 * JSON_DECODE_INT_AS_REAL for that); a real outside double's range is an error.
 *
 *   jsonr_error e;
 *   jsonr_value *root = jsonr_parse(a, body, len, 0, NULL, &e);
 *   const char *name = jsonr_string(jsonr_get(jsonr_get(root, "app"), "name"));
 *
 * Every accessor takes NULL and a value of the wrong type, answering NULL, 0 or false, so a
 * path can be followed without checking each step.
 */
#ifndef STACKSIFT_BASE_JSONR_H
#define STACKSIFT_BASE_JSONR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/arena.h"

#define JSONR_MAX_DEPTH 2048 /* nested arrays and objects, as jansson's default */

typedef enum {
    JSONR_NULL,
    JSONR_FALSE,
    JSONR_TRUE,
    JSONR_INTEGER,
    JSONR_REAL,
    JSONR_STRING,
    JSONR_ARRAY,
    JSONR_OBJECT,
} jsonr_type;

typedef struct jsonr_value jsonr_value;
typedef struct jsonr_member jsonr_member;

/* One value. Read it through the accessors below; the fields are here for their inlining. */
struct jsonr_value {
    uint32_t type;  /* jsonr_type */
    uint32_t n;     /* string: bytes (NUL not counted); array, object: members */
    union {
        int64_t i;              /* JSONR_INTEGER */
        double d;               /* JSONR_REAL */
        const char *s;          /* JSONR_STRING: NUL-terminated, valid UTF-8, no NUL inside */
        jsonr_value *items;     /* JSONR_ARRAY: n values in document order */
        jsonr_member *members;  /* JSONR_OBJECT: n members in document order */
    } u;
};

/* One member of an object. */
struct jsonr_member {
    const char *key;    /* NUL-terminated, valid UTF-8 */
    uint32_t key_len;   /* bytes */
    jsonr_value value;
};

/* Flags of jsonr_parse. */
enum {
    JSONR_DECODE_ANY = 1u << 0,         /* any value at the top, not only an object or array */
    JSONR_REJECT_DUPLICATES = 1u << 1,  /* a key twice in one object is an error */
    JSONR_REPLACE_INVALID = 1u << 2,    /* text that is no UTF-8 is no error: in strings and
                                           keys, each invalid sequence, each lone surrogate
                                           escape ("\\uD800") and "\\u0000" becomes U+FFFD,
                                           the rule of base/utf8 (reports: what a corrupted
                                           heap wrote is still shown) */
};

typedef enum {
    JSONR_OK,
    JSONR_ERR_SYNTAX,     /* not JSON (text says what was expected) */
    JSONR_ERR_UTF8,       /* a byte sequence that is not UTF-8 */
    JSONR_ERR_DEPTH,      /* nested deeper than JSONR_MAX_DEPTH */
    JSONR_ERR_TOO_LARGE,  /* the arena's budget ran out (the server's 413) */
} jsonr_error_code;

/* Where and why a parse failed. line and column are 1-based (column in characters). */
typedef struct {
    jsonr_error_code code;
    int line, column;
    size_t position;  /* bytes before the offending one */
    char text[96];    /* e.g. "string or '}' expected near ']'" */
} jsonr_error;

/* jsonr_parse - parse the `len` bytes at `data` into a tree allocated from `a` (it lives as
 * long as the arena; `data` may go). With `used` NULL the whole input must be one value
 * (blanks around it allowed); with `used` set, parsing stops after the first value and
 * *used is the bytes it took (trailing blanks included). NULL on error, with *e filled
 * (e may be NULL). Cost: one pass; memory about 16 bytes a value plus the strings. */
jsonr_value *jsonr_parse(arena *a, const char *data, size_t len, unsigned flags, size_t *used,
                         jsonr_error *e);

/* jsonr_check - jsonr_parse's verdict on the same input (true where it would return a tree;
 * false with the same *e where it would fail), building nothing: for a reader that walks the
 * checked text itself instead of a tree. Same flags (but JSONR_REJECT_DUPLICATES, which needs
 * the keys kept, is ignored) and `used`. Never JSONR_ERR_TOO_LARGE: it allocates no arena
 * memory, only a stack of the open containers (16 bytes a level). Cost: one pass, about half
 * of jsonr_parse's time. */
bool jsonr_check(const char *data, size_t len, unsigned flags, size_t *used, jsonr_error *e);

static inline jsonr_type jsonr_typeof(const jsonr_value *v)
{
    return v != NULL ? (jsonr_type)v->type : JSONR_NULL;
}
static inline bool jsonr_is_object(const jsonr_value *v) { return v && v->type == JSONR_OBJECT; }
static inline bool jsonr_is_array(const jsonr_value *v) { return v && v->type == JSONR_ARRAY; }
static inline bool jsonr_is_string(const jsonr_value *v) { return v && v->type == JSONR_STRING; }
static inline bool jsonr_is_integer(const jsonr_value *v) { return v && v->type == JSONR_INTEGER; }
static inline bool jsonr_is_real(const jsonr_value *v) { return v && v->type == JSONR_REAL; }
static inline bool jsonr_is_true(const jsonr_value *v) { return v && v->type == JSONR_TRUE; }
static inline bool jsonr_is_false(const jsonr_value *v) { return v && v->type == JSONR_FALSE; }
static inline bool jsonr_is_null(const jsonr_value *v) { return v && v->type == JSONR_NULL; }
static inline bool jsonr_is_number(const jsonr_value *v)
{
    return v && (v->type == JSONR_INTEGER || v->type == JSONR_REAL);
}
static inline bool jsonr_is_boolean(const jsonr_value *v)
{
    return v && (v->type == JSONR_TRUE || v->type == JSONR_FALSE);
}

/* jsonr_get - o[key] (the last one when a key repeats), borrowed; NULL when o is no object
 * or has no such key. jsonr_getn takes the key by length. A scan of o's members: objects in
 * reports are small; read a large one once with jsonr_member_at. */
jsonr_value *jsonr_getn(const jsonr_value *o, const char *key, size_t key_len);
static inline jsonr_value *jsonr_get(const jsonr_value *o, const char *key)
{
    return jsonr_getn(o, key, strlen(key)); /* a literal key's length is folded when inlined */
}

/* jsonr_size - members of an array or object; 0 for anything else. */
static inline size_t jsonr_size(const jsonr_value *v)
{
    return v && (v->type == JSONR_ARRAY || v->type == JSONR_OBJECT) ? v->n : 0;
}

/* jsonr_at - element i of an array, borrowed; NULL when v is no array or i is past its end. */
static inline jsonr_value *jsonr_at(const jsonr_value *v, size_t i)
{
    return v && v->type == JSONR_ARRAY && i < v->n ? &v->u.items[i] : NULL;
}

/* jsonr_member_at - member i of an object in document order, borrowed; NULL as jsonr_at. */
static inline const jsonr_member *jsonr_member_at(const jsonr_value *v, size_t i)
{
    return v && v->type == JSONR_OBJECT && i < v->n ? &v->u.members[i] : NULL;
}

/* jsonr_string - the string's bytes, NUL-terminated, borrowed; NULL when v is no string. */
static inline const char *jsonr_string(const jsonr_value *v)
{
    return v && v->type == JSONR_STRING ? v->u.s : NULL;
}

/* jsonr_string_length - bytes of a string (0 when v is no string). */
static inline size_t jsonr_string_length(const jsonr_value *v)
{
    return v && v->type == JSONR_STRING ? v->n : 0;
}

/* jsonr_integer - an integer's value; 0 when v is no integer. */
static inline int64_t jsonr_integer(const jsonr_value *v)
{
    return v && v->type == JSONR_INTEGER ? v->u.i : 0;
}

/* jsonr_real - a real's value; 0 when v is no real. */
static inline double jsonr_real(const jsonr_value *v)
{
    return v && v->type == JSONR_REAL ? v->u.d : 0.0;
}

/* jsonr_number - an integer or real as a double; 0 when v is neither. */
static inline double jsonr_number(const jsonr_value *v)
{
    return jsonr_is_integer(v) ? (double)v->u.i : jsonr_real(v);
}

#endif
