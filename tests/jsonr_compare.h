/*
 * jsonr_compare - does a jsonr tree say what jansson's tree of the same text says? Used by
 * test_jsonr and fuzz_jsonr, which hold the reader to jansson's verdicts (jansson is the
 * oracle: it decides what JSON is on every path that has not moved to jsonr).
 */
#ifndef STACKSIFT_TESTS_JSONR_COMPARE_H
#define STACKSIFT_TESTS_JSONR_COMPARE_H

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "base/jsonr.h"

/* jansson's tree of data (flags as jsonr's: DECODE_ANY, REJECT_DUPLICATES); integers past
 * int64 as reals, which jsonr does by itself. NULL when jansson refuses the text. */
static inline json_t *jsonr_compare_jansson(const char *data, size_t len, unsigned flags)
{
    size_t jf = 0;
    if (flags & JSONR_DECODE_ANY)
        jf |= JSON_DECODE_ANY;
    if (flags & JSONR_REJECT_DUPLICATES)
        jf |= JSON_REJECT_DUPLICATES;
    json_error_t e;
    json_t *j = json_loadb(data, len, jf, &e);
    if (j == NULL && json_error_code(&e) == json_error_numeric_overflow)
        j = json_loadb(data, len, jf | JSON_DECODE_INT_AS_REAL, &e);
    return j;
}

/* True when r and j are the same value: same type and scalar, same strings byte for byte,
 * arrays element by element, objects with the same keys (jsonr's last duplicate being the
 * one jansson keeps). */
static inline bool jsonr_compare_equal(const jsonr_value *r, const json_t *j)
{
    switch (jsonr_typeof(r)) {
    case JSONR_NULL:
        return json_is_null(j);
    case JSONR_TRUE:
        return json_is_true(j);
    case JSONR_FALSE:
        return json_is_false(j);
    case JSONR_INTEGER:
        /* a text with an integer past int64 was read again by jansson with every integer
         * as a real (JSON_DECODE_INT_AS_REAL) */
        return json_is_integer(j) ? json_integer_value(j) == jsonr_integer(r)
                                  : json_is_real(j) && json_real_value(j) == (double)jsonr_integer(r);
    case JSONR_REAL:
        return json_is_real(j) && (json_real_value(j) == jsonr_real(r) ||
                                   (isnan(json_real_value(j)) && isnan(jsonr_real(r))));
    case JSONR_STRING:
        return json_is_string(j) && json_string_length(j) == jsonr_string_length(r) &&
               memcmp(json_string_value(j), jsonr_string(r), jsonr_string_length(r)) == 0;
    case JSONR_ARRAY:
        if (!json_is_array(j) || json_array_size(j) != jsonr_size(r))
            return false;
        for (size_t i = 0; i < jsonr_size(r); i++)
            if (!jsonr_compare_equal(jsonr_at(r, i), json_array_get(j, i)))
                return false;
        return true;
    case JSONR_OBJECT: {
        if (!json_is_object(j))
            return false;
        size_t distinct = 0;
        for (size_t i = 0; i < jsonr_size(r); i++) {
            const jsonr_member *m = jsonr_member_at(r, i);
            if (jsonr_getn(r, m->key, m->key_len) != &m->value)
                continue; /* a key repeated later: the later one counts */
            distinct++;
            if (strlen(m->key) != m->key_len ||
                !jsonr_compare_equal(&m->value, json_object_get(j, m->key)))
                return false;
        }
        return distinct == json_object_size(j);
    }
    }
    return false;
}

#endif
