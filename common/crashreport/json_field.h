/*
 * json_field - the field readers every JSON parser of this folder uses (parse_json.c,
 * parse_bugsnag.c, parse_sentry.c, parse_metrickit.c) over a jsonr tree (base/jsonr.h): one
 * definition of "a string field", "a number or hex address", "an array's length", and the one
 * way a parser writes a piece of the document back out as JSON (the split payloads, MetricKit's
 * diagnostic data). Not for use outside common/crashreport/.
 *
 * The tree is parsed into the arena the report is built in, so its strings live as long as
 * the report: a parser stores them in the model as they are, without a copy.
 */
#ifndef STACKSIFT_CRASHREPORT_JSON_FIELD_H
#define STACKSIFT_CRASHREPORT_JSON_FIELD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/jsonr.h"
#include "crashreport/crashreport_internal.h"

/* cr_json_string - v as a borrowed string (it lives as long as the tree's arena); NULL when
 * v is NULL, no string, or the empty string. */
static inline const char *cr_json_string(const jsonr_value *v)
{
    return jsonr_is_string(v) && v->n > 0 ? v->u.s : NULL;
}

/* cr_json_str - cr_json_string of o[key]; NULL also when o is not an object or the key is
 * missing. */
static inline const char *cr_json_str(const jsonr_value *o, const char *key)
{
    return cr_json_string(jsonr_get(o, key)); /* inline: a literal key's length folds away */
}

/* cr_json_get_u64 - cr_json_u64 (crashreport_internal.h) of o[key]; false when missing. */
static inline bool cr_json_get_u64(const jsonr_value *o, const char *key, uint64_t *out)
{
    return cr_json_u64(jsonr_get(o, key), out);
}

/* A member name cr_json_fields looks for, with its length: CR_JSON_KEY("symbol"). */
typedef struct {
    const char *name;
    uint32_t len;
} cr_json_key;
#define CR_JSON_KEY(s) {s, sizeof s - 1}

/* The jsonr flags every report's JSON is read with: a string that is no UTF-8 (raw bytes, a
 * lone surrogate escape) is kept with U+FFFD in place of each invalid sequence, never a reason
 * to refuse the report. */
#define CR_JSONR_FLAGS JSONR_REPLACE_INVALID

/* cr_json_fields - several members of object o in one pass over its members, for an object of
 * which a parser reads many (a frame: one jsonr_get scan each cost more than the rest of its
 * reading): out[k] = o[keys[k].name] (the last one when a key repeats, as jsonr_get answers),
 * NULL when absent or when o is no object. out has nkeys slots. */
void cr_json_fields(const jsonr_value **out, const jsonr_value *o, const cr_json_key *keys,
                    size_t nkeys);

/* cr_json_array_size - elements of an array; 0 for anything else (an object too, unlike
 * jsonr_size). */
static inline size_t cr_json_array_size(const jsonr_value *v)
{
    return jsonr_is_array(v) ? v->n : 0;
}

/* One member of an object as cr_json_members gives it. */
typedef struct {
    const char *key;           /* NUL-terminated, borrowed from the tree */
    uint32_t key_len;          /* bytes */
    const jsonr_value *value;  /* borrowed */
} cr_json_kv;

/* cr_json_members - the members of object `o` as jansson holds them: in document order, a key
 * that repeats once, at its first place, with its last value (jsonr_get's answer). *out is
 * xmalloc'd (free() it; NULL when there are none); returns the count, 0 when o is no object.
 * Cost: O(n log n) for n members. */
size_t cr_json_members(cr_json_kv **out, const jsonr_value *o);

/* cr_json_write - append v as compact JSON to `out`, written as jansson's json_dumps with
 * JSON_COMPACT writes it (keys in document order, a repeated key once; reals with 17
 * significant digits, always with a '.' or an exponent), strings escaped as
 * buf_append_json_str escapes them. Recursive, as deep as the tree (JSONR_MAX_DEPTH at most). */
void cr_json_write(buf *out, const jsonr_value *v);

/* cr_json_parse_error - err_set for a jsonr_parse failure of `what` ("report", ".ips body"):
 * ERR_INVALID "<what> is not valid UTF-8" or "<what> is not valid JSON: <text> at line L
 * column C" (lines counted from line_base + 1), ERR_TOO_LARGE over the arena's budget. */
err_code cr_json_parse_error(err_info *err, const char *what, const jsonr_error *e, int line_base);

#endif
