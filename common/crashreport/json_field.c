/*
 * json_field - jansson field readers shared by the JSON parsers (json_field.h).
 */
#include <math.h>

#include "crashreport/json_field.h"

const char *cr_json_str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    return s != NULL && s[0] != '\0' ? s : NULL;
}

const char *cr_json_dup(cr_builder *b, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) == 0)
        return NULL;
    return cr_strndup(b, json_string_value(v), json_string_length(v));
}

/* "0x" and 1 to 16 hex digits (either case). */
static bool hex_u64(const char *s, size_t n, uint64_t *out)
{
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
        x = (x << 4) | (uint64_t)d;
    }
    *out = x;
    return true;
}

bool cr_json_u64(const void *jv, uint64_t *out)
{
    const json_t *v = jv;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0)
            return false;
        *out = (uint64_t)i;
        return true;
    }
    if (json_is_real(v)) {
        /* reals only where jansson fell back to them (integers past int64): exact ones */
        double d = json_real_value(v);
        if (!(d >= 0 && d < 9007199254740992.0) || d != floor(d))
            return false;
        *out = (uint64_t)d;
        return true;
    }
    if (json_is_string(v))
        return hex_u64(json_string_value(v), json_string_length(v), out);
    return false;
}

bool cr_json_get_u64(const json_t *o, const char *key, uint64_t *out)
{
    return cr_json_u64(json_object_get(o, key), out);
}
