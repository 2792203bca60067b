/*
 * json_field - field readers shared by the JSON parsers over jsonr trees (json_field.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#include "crashreport/json_field.h"

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

bool cr_json_u64(const jsonr_value *v, uint64_t *out)
{
    switch (jsonr_typeof(v)) {
    case JSONR_INTEGER:
        if (v->u.i < 0)
            return false;
        *out = (uint64_t)v->u.i;
        return true;
    case JSONR_REAL: {
        /* reals where the number is past int64 (or written as one): exact ones only */
        double d = v->u.d;
        if (!(d >= 0 && d < 9007199254740992.0) || d != floor(d))
            return false;
        *out = (uint64_t)d;
        return true;
    }
    case JSONR_STRING:
        return hex_u64(v->u.s, v->n, out);
    default:
        return false;
    }
}

/* A member and its place, sorted by key, then by place. */
typedef struct {
    const jsonr_member *m;
    uint32_t pos;
} member_ref;

static int ref_cmp(const void *x, const void *y)
{
    const member_ref *a = x, *b = y;
    uint32_t n = a->m->key_len < b->m->key_len ? a->m->key_len : b->m->key_len;
    int c = memcmp(a->m->key, b->m->key, n);
    if (c != 0)
        return c;
    if (a->m->key_len != b->m->key_len)
        return a->m->key_len < b->m->key_len ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static bool same_key(const jsonr_member *a, const jsonr_member *b)
{
    return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

void cr_json_fields(const jsonr_value **out, const jsonr_value *o, const cr_json_key *keys,
                    size_t nkeys)
{
    for (size_t k = 0; k < nkeys; k++)
        out[k] = NULL;
    const jsonr_member *m;
    for (size_t i = 0; (m = jsonr_member_at(o, i)) != NULL; i++)
        for (size_t k = 0; k < nkeys; k++)
            if (m->key_len == keys[k].len && m->key[0] == keys[k].name[0] &&
                memcmp(m->key, keys[k].name, m->key_len) == 0) {
                out[k] = &m->value;
                break;
            }
}

size_t cr_json_members(cr_json_kv **out, const jsonr_value *o)
{
    *out = NULL;
    size_t n = jsonr_is_object(o) ? o->n : 0;
    if (n == 0)
        return 0;
    const jsonr_member *ms = o->u.members;
    /* value_of[i]: the member whose value goes at place i; n for a repeat that is dropped */
    size_t *value_of = xreallocarray(NULL, n, sizeof *value_of);
    for (size_t i = 0; i < n; i++)
        value_of[i] = i;
    if (n <= 16) {
        for (size_t i = 1; i < n; i++)
            for (size_t k = 0; k < i; k++)
                if (value_of[k] != n && same_key(&ms[k], &ms[i])) {
                    value_of[k] = i;
                    value_of[i] = n;
                    break;
                }
    } else {
        member_ref *refs = xreallocarray(NULL, n, sizeof *refs);
        for (size_t i = 0; i < n; i++)
            refs[i] = (member_ref){&ms[i], (uint32_t)i};
        qsort(refs, n, sizeof *refs, ref_cmp);
        for (size_t g = 0; g < n;) {
            size_t e = g + 1;
            while (e < n && same_key(refs[g].m, refs[e].m))
                e++;
            for (size_t k = g + 1; k < e; k++)
                value_of[refs[k].pos] = n;
            value_of[refs[g].pos] = refs[e - 1].pos;
            g = e;
        }
        free(refs);
    }
    cr_json_kv *kv = xreallocarray(NULL, n, sizeof *kv);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (value_of[i] != n)
            kv[w++] = (cr_json_kv){ms[i].key, ms[i].key_len, &ms[value_of[i]].value};
    free(value_of);
    *out = kv;
    return w;
}

/* A real as jansson writes it: %.17g, a ".0" when that looks like an integer, the exponent
 * without '+' and leading zeros (1e+19 -> 1e19). */
static void write_real(buf *out, double d)
{
    char s[40];
    int n = snprintf(s, sizeof s, "%.17g", d);
    if (n < 0 || (size_t)n >= sizeof s)
        return; /* cannot happen for a finite double */
    if (strchr(s, '.') == NULL && strchr(s, 'e') == NULL) {
        buf_append(out, s, (size_t)n);
        buf_append(out, ".0", 2);
        return;
    }
    char *e = strchr(s, 'e');
    if (e != NULL) {
        char *start = e + 1, *end = e + 1;
        if (*end == '+')
            end++;
        else if (*end == '-')
            start++, end++;
        while (*end == '0' && end[1] != '\0')
            end++;
        memmove(start, end, strlen(end) + 1);
    }
    buf_append_str(out, s);
}

void cr_json_write(buf *out, const jsonr_value *v)
{
    switch (jsonr_typeof(v)) {
    case JSONR_NULL: buf_append(out, "null", 4); return;
    case JSONR_FALSE: buf_append(out, "false", 5); return;
    case JSONR_TRUE: buf_append(out, "true", 4); return;
    case JSONR_INTEGER: buf_printf(out, "%" PRId64, v->u.i); return;
    case JSONR_REAL: write_real(out, v->u.d); return;
    case JSONR_STRING: buf_append_json_str(out, v->u.s, v->n); return;
    case JSONR_ARRAY:
        buf_putc(out, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i > 0)
                buf_putc(out, ',');
            cr_json_write(out, &v->u.items[i]);
        }
        buf_putc(out, ']');
        return;
    case JSONR_OBJECT: {
        cr_json_kv *kv;
        size_t n = cr_json_members(&kv, v);
        buf_putc(out, '{');
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                buf_putc(out, ',');
            buf_append_json_str(out, kv[i].key, kv[i].key_len);
            buf_putc(out, ':');
            cr_json_write(out, kv[i].value);
        }
        buf_putc(out, '}');
        free(kv);
        return;
    }
    }
}

err_code cr_json_parse_error(err_info *err, const char *what, const jsonr_error *e, int line_base)
{
    switch (e->code) {
    case JSONR_ERR_UTF8:
        return err_set(err, ERR_INVALID, "%s is not valid UTF-8", what);
    case JSONR_ERR_TOO_LARGE:
        return err_set(err, ERR_TOO_LARGE, "%s too large: its JSON needs more memory than the "
                       "budget allows", what);
    case JSONR_OK:
    case JSONR_ERR_SYNTAX:
    case JSONR_ERR_DEPTH:
        break;
    }
    return err_set(err, ERR_INVALID, "%s is not valid JSON: %s at line %d column %d", what, e->text,
                   e->line + line_base, e->column);
}
