/*
 * jsonr - see jsonr.h. Grammar: RFC 8259 sections 2-8. Text: RFC 3629 (via base/utf8).
 *
 * The parser is a loop over an explicit stack, so depth costs heap, not C stack. A
 * container's members collect on a scratch stack (one malloc'd array, reused for the whole
 * parse) and move to the arena in one piece when the container closes, so every array and
 * object is contiguous and sized exactly.
 */
#include "base/jsonr.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/xalloc.h"

typedef struct {
    uint32_t type;  /* JSONR_ARRAY or JSONR_OBJECT */
    size_t base;    /* its first member on the scratch stack */
} frame;

typedef struct {
    arena *a;
    const char *start, *end;
    char *copy;            /* the whole input copied into the arena (one value, used NULL):
                              each string is decoded in place there, at its own offset, so
                              that a string costs no allocation; NULL: each string is
                              allocated on its own (input past the value, which a copy of
                              the rest would make quadratic for a stream of values) */
    unsigned flags;
    jsonr_error *e;
    jsonr_member *scratch; /* members of the open containers, innermost last */
    size_t nscratch, capscratch;
    frame *frames;
    size_t nframes, capframes;
} parser;

/* Error at `at`: line and column counted there (columns in characters, as jansson does). */
static jsonr_value *fail(parser *p, const char *at, jsonr_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static jsonr_value *fail(parser *p, const char *at, jsonr_error_code code, const char *fmt, ...)
{
    jsonr_error *e = p->e;
    if (e == NULL)
        return NULL;
    e->code = code;
    e->position = (size_t)(at - p->start);
    e->line = 1;
    e->column = 0;
    for (const char *s = p->start; s < at; s++) {
        if (*s == '\n')
            e->line++, e->column = 0;
        else if (((unsigned char)*s & 0xC0) != 0x80)
            e->column++;
    }
    e->column++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    return NULL;
}

/* "near 'x'" for a syntax error: the offending character, or the end of input. */
static jsonr_value *expected(parser *p, const char *at, const char *what)
{
    if (at >= p->end)
        return fail(p, at, JSONR_ERR_SYNTAX, "%s expected near end of file", what);
    unsigned char c = (unsigned char)*at;
    /* a word (a misspelt literal, a number's run) is shown whole, as jansson's lexer does */
    size_t n = 0;
    while (at + n < p->end && n < 24 &&
           ((at[n] >= 'a' && at[n] <= 'z') || (at[n] >= 'A' && at[n] <= 'Z') ||
            (at[n] >= '0' && at[n] <= '9') || at[n] == '-' || at[n] == '+' || at[n] == '.'))
        n++;
    if (n > 1)
        return fail(p, at, JSONR_ERR_SYNTAX, "%s expected near '%.*s'", what, (int)n, at);
    if (c >= 0x20 && c < 0x7F)
        return fail(p, at, JSONR_ERR_SYNTAX, "%s expected near '%c'", what, c);
    return fail(p, at, JSONR_ERR_SYNTAX, "%s expected near byte 0x%02x", what, c);
}

static jsonr_value *too_large(parser *p, const char *at)
{
    return fail(p, at, JSONR_ERR_TOO_LARGE, "input needs more than the memory budget");
}

/* n bytes of the arena, not zeroed: every allocation here is written whole at once. */
static void *alloc(parser *p, size_t n)
{
    return arena_alloc_uninit(p->a, n, NULL);   /* the caller reports a failure */
}

static const char *skip_blanks(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
        s++;
    return s;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Four hex digits at s (end not passed) -> *cp. */
static bool hex4(const char *s, const char *end, unsigned *cp)
{
    if (end - s < 4)
        return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hexval(s[i]);
        if (d < 0)
            return false;
        v = (v << 4) | (unsigned)d;
    }
    *cp = v;
    return true;
}

/* The escape at s (s[0] == '\\') decoded to out; returns the byte after it, NULL on error
 * (reported). *outp advances past what was written. */
static const char *unescape(parser *p, const char *s, char **outp)
{
    const char *end = p->end;
    char *out = *outp;
    if (s + 1 >= end)
        return fail(p, s, JSONR_ERR_SYNTAX, "premature end of input in a string"), NULL;
    char c = s[1];
    switch (c) {
    case '"': case '\\': case '/': *out++ = c; break;
    case 'b': *out++ = '\b'; break;
    case 'f': *out++ = '\f'; break;
    case 'n': *out++ = '\n'; break;
    case 'r': *out++ = '\r'; break;
    case 't': *out++ = '\t'; break;
    case 'u': {
        unsigned cp, lo;
        if (!hex4(s + 2, end, &cp))
            return fail(p, s, JSONR_ERR_SYNTAX, "invalid escape '\\u' in a string"), NULL;
        s += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            if (!(p->flags & JSONR_REPLACE_INVALID))
                return fail(p, s, JSONR_ERR_SYNTAX, "invalid Unicode '\\u%04X'", cp), NULL;
            cp = 0xFFFD; /* a lone low surrogate */
        } else if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - s >= 8 && s[2] == '\\' && s[3] == 'u' && hex4(s + 4, end, &lo) &&
                lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                s += 6;
            } else if (p->flags & JSONR_REPLACE_INVALID) {
                cp = 0xFFFD; /* a lone high surrogate; what follows is read on its own */
            } else {
                return fail(p, s, JSONR_ERR_SYNTAX, "invalid Unicode '\\u%04X'", cp), NULL;
            }
        }
        if (cp == 0) {
            if (!(p->flags & JSONR_REPLACE_INVALID))
                return fail(p, s, JSONR_ERR_SYNTAX, "\\u0000 is not allowed"), NULL;
            cp = 0xFFFD; /* a C string (and Postgres's text) cannot hold it */
        }
        out += utf8_encode(out, cp);
        break;
    }
    default:
        return fail(p, s, JSONR_ERR_SYNTAX, "invalid escape '\\%c' in a string",
                    c >= 0x20 && c < 0x7F ? c : '?'), NULL;
    }
    *outp = out;
    return s + 2;
}

/* The string whose opening quote is at s -> *str, *n (arena copy, NUL-terminated); returns
 * the byte after the closing quote, NULL on error (reported). */
static const char *string(parser *p, const char *s, const char **str, uint32_t *n)
{
    const char *end = p->end, *q = s + 1;
    bool plain = true, repair = false; /* repair: raw bytes that are no UTF-8 (flag set) */
    /* Pass 1: find the closing quote, checking control characters and UTF-8. */
    for (;;) {
        uint64_t w;
        while (end - q >= 8 && (memcpy(&w, q, 8), utf8_json_plain8(w)))
            q += 8;
        while (q < end && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80 && *q != '"' &&
               *q != '\\')
            q++;
        if (q >= end)
            return fail(p, q, JSONR_ERR_SYNTAX, "premature end of input in a string"), NULL;
        unsigned char c = (unsigned char)*q;
        if (c == '"')
            break;
        if (c == '\\') {
            plain = false;
            q += q + 1 < end ? 2 : 1;
        } else if (c < 0x20) {
            return fail(p, q, JSONR_ERR_SYNTAX, "control character 0x%x in a string", c), NULL;
        } else {
            size_t len = utf8_seq_len(q, (size_t)(end - q));
            if (len == 0) {
                if (!(p->flags & JSONR_REPLACE_INVALID))
                    return fail(p, q, JSONR_ERR_UTF8, "invalid UTF-8 in a string"), NULL;
                plain = false;
                repair = true;
                len = utf8_bad_len(q, (size_t)(end - q));
            }
            q += len;
        }
    }
    if (p->a == NULL) {   /* jsonr_check: the escapes are checked, nothing is kept */
        for (const char *r = s + 1; !plain && (r = memchr(r, '\\', (size_t)(q - r))) != NULL;) {
            char tmp[4], *w = tmp;
            if ((r = unescape(p, r, &w)) == NULL)
                return NULL;
        }
        *str = NULL;
        *n = 0;
        return q + 1;
    }
    size_t raw = (size_t)(q - (s + 1));
    if (raw >= (repair ? UINT32_MAX / 3 : UINT32_MAX))
        return too_large(p, s), NULL;
    /* In the copy, the string's bytes sit where its source does and the closing quote's place
     * takes the NUL; the parse reads only the source, so nothing it has yet to read moves.
     * A string to repair may grow (a byte becomes U+FFFD's three): it gets its own room. */
    char *out = p->copy != NULL && !repair ? p->copy + (s + 1 - p->start)
                : alloc(p, repair ? 3 * raw + 1 : raw + 1);
    if (out == NULL)
        return too_large(p, s), NULL;
    if (plain) {
        if (p->copy == NULL)
            memcpy(out, s + 1, raw);
        out[raw] = '\0';
        *str = out;
        *n = (uint32_t)raw;
        return q + 1;
    }
    /* Pass 2: decode the escapes (a decoded escape is never longer than its source). */
    char *w = out;
    for (const char *r = s + 1; r < q;) {
        if (*r != '\\') {
            size_t len = repair && (unsigned char)*r >= 0x80 ? utf8_seq_len(r, (size_t)(q - r)) : 1;
            if (len == 0) {
                memcpy(w, "\xEF\xBF\xBD", 3); /* U+FFFD */
                w += 3;
                r += utf8_bad_len(r, (size_t)(q - r));
                continue;
            }
            memcpy(w, r, len);
            w += len;
            r += len;
            continue;
        }
        r = unescape(p, r, &w);
        if (r == NULL)
            return NULL;
    }
    *w = '\0';
    *str = out;
    *n = (uint32_t)(w - out);
    return q + 1;
}

/* The number at s -> *v; returns the byte after it, NULL on error (reported). */
static const char *number(parser *p, const char *s, jsonr_value *v)
{
    const char *end = p->end, *q = s;
    bool neg = false, is_int = true;
    if (*q == '-')
        neg = true, q++;
    if (q >= end || *q < '0' || *q > '9')
        return fail(p, s, JSONR_ERR_SYNTAX, "invalid number"), NULL;
    uint64_t mag = 0;
    bool overflow = false;
    if (*q == '0') {
        q++;
        if (q < end && *q >= '0' && *q <= '9')
            return fail(p, s, JSONR_ERR_SYNTAX, "invalid number: leading zero"), NULL;
    } else {
        for (; q < end && *q >= '0' && *q <= '9'; q++) {
            unsigned d = (unsigned)(*q - '0');
            if (mag > (UINT64_MAX - d) / 10)
                overflow = true;
            else
                mag = mag * 10 + d;
        }
    }
    if (q < end && *q == '.') {
        is_int = false;
        q++;
        if (q >= end || *q < '0' || *q > '9')
            return fail(p, s, JSONR_ERR_SYNTAX, "invalid number: digit expected after '.'"),
                   NULL;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        is_int = false;
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q >= end || *q < '0' || *q > '9')
            return fail(p, s, JSONR_ERR_SYNTAX, "invalid number: digit expected in exponent"),
                   NULL;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
    }
    if (is_int && !overflow && (neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= INT64_MAX)) {
        v->type = JSONR_INTEGER;
        v->u.i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        return q;
    }
    /* A real, or an integer past int64: strtod wants a C string. A long one (rare) is copied
     * to the heap, not the arena, so that jsonr_check needs no arena. */
    size_t n = (size_t)(q - s);
    char small[64], *text = n < sizeof small ? small : xmalloc(n + 1);
    memcpy(text, s, n);
    text[n] = '\0';
    errno = 0;
    double d = strtod(text, NULL);
    if (text != small)
        free(text);
    if (errno == ERANGE && (d > 1.0 || d < -1.0))
        return fail(p, s, JSONR_ERR_SYNTAX, "real number overflow"), NULL;
    v->type = JSONR_REAL;
    v->u.d = d;
    return q;
}

/* A new member on the scratch stack; false (reported) when the members collected so far
 * would not fit the arena's budget: each becomes at least a value there, so that bound keeps
 * the scratch stack within twice the budget. */
static bool push_member(parser *p, const char *at, const char *key, uint32_t key_len)
{
    if (p->a == NULL)   /* jsonr_check: members are not kept */
        return true;
    if (p->nscratch == p->capscratch) {
        if ((p->nscratch + 1) * sizeof(jsonr_value) > arena_left(p->a))
            return too_large(p, at), false;
        p->capscratch = p->capscratch ? p->capscratch * 2 : 64;
        p->scratch = xrealloc(p->scratch, p->capscratch * sizeof *p->scratch);
    }
    jsonr_member *m = &p->scratch[p->nscratch++];
    m->key = key;
    m->key_len = key_len;
    m->value.type = JSONR_NULL;
    m->value.n = 0;
    return true;
}

static int by_key(const void *x, const void *y)
{
    const jsonr_member *a = *(const jsonr_member *const *)x, *b = *(const jsonr_member *const *)y;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return memcmp(a->key, b->key, a->key_len);
}

/* The duplicate key among n members, NULL if none: sorted pointers, so n log n. */
static const jsonr_member *duplicate(const jsonr_member *m, size_t n)
{
    if (n < 2)
        return NULL;
    const jsonr_member **sorted = xmalloc(n * sizeof *sorted);
    for (size_t i = 0; i < n; i++)
        sorted[i] = &m[i];
    qsort(sorted, n, sizeof *sorted, by_key);
    const jsonr_member *dup = NULL;
    for (size_t i = 1; i < n && dup == NULL; i++)
        if (by_key(&sorted[i - 1], &sorted[i]) == 0)
            dup = sorted[i];
    free(sorted);
    return dup;
}

/* Close the innermost container: its members move from the scratch stack to the arena and it
 * becomes the value *v. false on error (reported). */
static bool close_container(parser *p, const char *at, jsonr_value *v)
{
    frame *f = &p->frames[--p->nframes];
    if (p->a == NULL) {   /* jsonr_check: nothing to move */
        *v = (jsonr_value){.type = f->type};
        return true;
    }
    size_t n = p->nscratch - f->base;
    jsonr_member *m = n > 0 ? p->scratch + f->base : NULL;   /* no stack yet: [] or {} */
    if (n >= UINT32_MAX)
        return too_large(p, at), false;
    v->type = f->type;
    v->n = (uint32_t)n;
    if (f->type == JSONR_OBJECT) {
        const jsonr_member *dup;
        if ((p->flags & JSONR_REJECT_DUPLICATES) && (dup = duplicate(m, n)) != NULL)
            return fail(p, at, JSONR_ERR_SYNTAX, "duplicate object key '%.40s'", dup->key), false;
        v->u.members = NULL;
        if (n > 0) {
            if ((v->u.members = alloc(p, n * sizeof *m)) == NULL)
                return too_large(p, at), false;
            memcpy(v->u.members, m, n * sizeof *m);
        }
    } else {
        v->u.items = NULL;
        if (n > 0) {
            if ((v->u.items = alloc(p, n * sizeof *v->u.items)) == NULL)
                return too_large(p, at), false;
            for (size_t i = 0; i < n; i++)
                v->u.items[i] = m[i].value;
        }
    }
    p->nscratch = f->base;
    return true;
}

static jsonr_value *run(parser *p, size_t *used)
{
    const char *s = skip_blanks(p->start, p->end), *end = p->end;
    jsonr_value v; /* the value just completed */
    if ((s >= end || (*s != '{' && *s != '[')) && !(p->flags & JSONR_DECODE_ANY))
        return expected(p, s, "'[' or '{'");
value:
    if (s >= end)
        return expected(p, s, "a value");
    switch (*s) {
    case '{':
    case '[':
        if (p->nframes == JSONR_MAX_DEPTH)
            return fail(p, s, JSONR_ERR_DEPTH, "maximum parsing depth reached");
        if (p->nframes == p->capframes) {
            p->capframes = p->capframes ? p->capframes * 2 : 32;
            p->frames = xrealloc(p->frames, p->capframes * sizeof *p->frames);
        }
        p->frames[p->nframes++] =
            (frame){.type = *s == '{' ? JSONR_OBJECT : JSONR_ARRAY, .base = p->nscratch};
        s = skip_blanks(s + 1, end);
        if (s < end && (*s == '}' || *s == ']') &&
            (*s == '}') == (p->frames[p->nframes - 1].type == JSONR_OBJECT)) {
            if (!close_container(p, s, &v))
                return NULL;
            s++;
            goto done;
        }
        if (p->frames[p->nframes - 1].type == JSONR_OBJECT)
            goto key;
        if (!push_member(p, s, NULL, 0))
            return NULL;
        goto value;
    case '"': {
        const char *str;
        uint32_t n;
        if ((s = string(p, s, &str, &n)) == NULL)
            return NULL;
        v.type = JSONR_STRING;
        v.n = n;
        v.u.s = str;
        goto done;
    }
    case 't':
        if (end - s < 4 || memcmp(s, "true", 4) != 0)
            return expected(p, s, "a value");
        v.type = JSONR_TRUE, v.n = 0, s += 4;
        goto done;
    case 'f':
        if (end - s < 5 || memcmp(s, "false", 5) != 0)
            return expected(p, s, "a value");
        v.type = JSONR_FALSE, v.n = 0, s += 5;
        goto done;
    case 'n':
        if (end - s < 4 || memcmp(s, "null", 4) != 0)
            return expected(p, s, "a value");
        v.type = JSONR_NULL, v.n = 0, s += 4;
        goto done;
    default:
        if (*s == '-' || (*s >= '0' && *s <= '9')) {
            v.n = 0;
            if ((s = number(p, s, &v)) == NULL)
                return NULL;
            goto done;
        }
        return expected(p, s, "a value");
    }

key:
    /* s is at the first byte of a key (blanks skipped) */
    if (s >= end || *s != '"')
        return expected(p, s, "string or '}'");
    {
        const char *str;
        uint32_t n;
        if ((s = string(p, s, &str, &n)) == NULL)
            return NULL;
        if (!push_member(p, s, str, n))
            return NULL;
    }
    s = skip_blanks(s, end);
    if (s >= end || *s != ':')
        return expected(p, s, "':'");
    s = skip_blanks(s + 1, end);
    goto value;

done:
    /* v is complete: it is the top value, or the newest member of the innermost container */
    if (p->nframes == 0) {
        s = skip_blanks(s, end);
        if (used != NULL)
            *used = (size_t)(s - p->start);
        else if (s < end)
            return expected(p, s, "end of file");
        if (p->a == NULL) {   /* jsonr_check: a checked document, no tree */
            static jsonr_value checked = {.type = JSONR_NULL};
            return &checked;
        }
        jsonr_value *top = alloc(p, sizeof *top);
        if (top == NULL)
            return too_large(p, s);
        *top = v;
        return top;
    }
    if (p->a != NULL)   /* jsonr_check keeps no members */
        p->scratch[p->nscratch - 1].value = v;
    s = skip_blanks(s, end);
    {
        bool object = p->frames[p->nframes - 1].type == JSONR_OBJECT;
        if (s < end && *s == ',') {
            s = skip_blanks(s + 1, end);
            if (object)
                goto key;
            if (!push_member(p, s, NULL, 0))
                return NULL;
            goto value;
        }
        if (s < end && *s == (object ? '}' : ']')) {
            if (!close_container(p, s, &v))
                return NULL;
            s++;
            goto done;
        }
        return expected(p, s, object ? "'}'" : "']'");
    }
}

/* jsonr_parse (a set) and jsonr_check (a NULL: nothing allocated, nothing kept). */
static jsonr_value *parse(arena *a, const char *data, size_t len, unsigned flags, size_t *used,
                          jsonr_error *e)
{
    parser p = {.a = a, .start = data, .end = data + len, .flags = flags, .e = e};
    if (e != NULL)
        memset(e, 0, sizeof *e);
    if (a != NULL && used == NULL && len > 0) {   /* jsonr_check decodes nothing */
        p.copy = alloc(&p, len);
        if (p.copy == NULL)
            return too_large(&p, data);
        memcpy(p.copy, data, len);
    }
    jsonr_value *v = run(&p, used);
    free(p.scratch);
    free(p.frames);
    return v;
}

jsonr_value *jsonr_parse(arena *a, const char *data, size_t len, unsigned flags, size_t *used,
                         jsonr_error *e)
{
    assert(a != NULL);
    return parse(a, data, len, flags, used, e);
}

bool jsonr_check(const char *data, size_t len, unsigned flags, size_t *used, jsonr_error *e)
{
    return parse(NULL, data, len, flags & ~(unsigned)JSONR_REJECT_DUPLICATES, used, e) != NULL;
}

jsonr_value *jsonr_getn(const jsonr_value *o, const char *key, size_t key_len)
{
    if (o == NULL || o->type != JSONR_OBJECT)
        return NULL;
    /* length and first byte before the call to memcmp: most members differ in one of them */
    for (size_t i = o->n; i-- > 0;) {
        jsonr_member *m = &o->u.members[i];
        if (m->key_len == key_len &&
            (key_len == 0 ||
             (m->key[0] == key[0] && memcmp(m->key + 1, key + 1, key_len - 1) == 0)))
            return &m->value;
    }
    return NULL;
}
