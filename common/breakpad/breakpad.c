/*
 * breakpad - the `.sym` parser (record layouts in breakpad.h).
 */
#include "breakpad/breakpad.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_PARENT UINT32_MAX

/* A growable array in the arena: doubled, old copies left to the arena. */
typedef struct {
    void *v;
    size_t n, cap;
} vec;

static void *vec_push(vec *g, size_t size, arena *a, err_info *err)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        if (cap > SIZE_MAX / size) {
            err_set(err, ERR_TOO_LARGE, "breakpad symbol file: too many records");
            return NULL;
        }
        void *p = arena_grow(a, g->v, g->cap * size, cap * size, err);
        if (p == NULL)
            return NULL;
        g->v = p;
        g->cap = cap;
    }
    return (char *)g->v + size * g->n++;
}

/* A cursor over one line's fields. */
typedef struct {
    const char *p, *end;
} cursor;

/* next_field - the next space-separated field (runs of spaces count as one). */
static bool next_field(const char **f, size_t *flen, cursor *c)
{
    while (c->p < c->end && *c->p == ' ')
        c->p++;
    if (c->p == c->end)
        return false;
    const char *s = c->p;
    while (c->p < c->end && *c->p != ' ')
        c->p++;
    *f = s;
    *flen = (size_t)(c->p - s);
    return true;
}

/* rest - the remainder of the line after one separating space (a name may hold spaces). */
static bool rest(const char **f, size_t *flen, cursor *c)
{
    if (c->p < c->end && *c->p == ' ')
        c->p++;
    if (c->p >= c->end)
        return false;
    *f = c->p;
    *flen = (size_t)(c->end - c->p);
    c->p = c->end;
    return true;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static bool parse_hex(uint64_t *out, const char *s, size_t n)
{
    if (n == 0 || n > 16)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hexval(s[i]);
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

static bool parse_dec32(uint32_t *out, const char *s, size_t n)
{
    if (n == 0 || n > 10)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool hex_field(uint64_t *out, cursor *c)
{
    const char *f;
    size_t n;
    return next_field(&f, &n, c) && parse_hex(out, f, n);
}

static bool dec_field(uint32_t *out, cursor *c)
{
    const char *f;
    size_t n;
    return next_field(&f, &n, c) && parse_dec32(out, f, n);
}

static bool is_word(const char *f, size_t n, const char *w)
{
    return n == strlen(w) && memcmp(f, w, n) == 0;
}

bool breakpad_test(const uint8_t *data, size_t len)
{
    return len > 8 && memcmp(data, "MODULE ", 7) == 0 && data[7] != ' ' && data[7] != '\n';
}

void breakpad_debug_id(char out[41], const uint8_t uuid[16], uint32_t age)
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02X", uuid[i]);
    snprintf(out + 32, 9, "%X", age);
}

/* The parser's state. */
typedef struct {
    breakpad_sym *sym;
    arena *a;
    vec files, origins, funcs, lines, inlines, ranges, publics, cfi, deltas;
    bool in_func;          /* a FUNC was read: line records and INLINEs belong to it */
    bool in_cfi;           /* a STACK CFI INIT was read: deltas belong to it */
    uint64_t lineno;
} parser;

static void skip(parser *p, const char *why)
{
    breakpad_sym *s = p->sym;
    if (s->skipped++ == 0) {
        s->first_skipped_line = p->lineno;
        snprintf(s->first_skipped, sizeof s->first_skipped, "%s", why);
    }
}

static char *dup(parser *p, const char *s, size_t n, err_info *err)
{
    return arena_strndup(p->a, s, n, err);
}

/* FILE n name / INLINE_ORIGIN n name */
static err_code read_named(parser *p, vec *v, cursor *c, const char *what, err_info *err)
{
    uint32_t id;
    const char *name;
    size_t n;
    if (!dec_field(&id, c) || !rest(&name, &n, c)) {
        skip(p, what);
        return ERR_OK;
    }
    breakpad_named *e = vec_push(v, sizeof *e, p->a, err);
    if (e == NULL)
        return ERR_TOO_LARGE;
    e->id = id;
    e->name = dup(p, name, n, err);
    return e->name ? ERR_OK : ERR_TOO_LARGE;
}

/* the optional `m` of FUNC and PUBLIC */
static bool multiple_flag(cursor *c)
{
    cursor save = *c;
    const char *f;
    size_t n;
    if (next_field(&f, &n, c) && is_word(f, n, "m"))
        return true;
    *c = save;
    return false;
}

static err_code read_func(parser *p, cursor *c, err_info *err)
{
    uint64_t addr, size, param;
    const char *name;
    size_t n;
    bool m = multiple_flag(c);
    p->in_func = false;
    if (!hex_field(&addr, c) || !hex_field(&size, c) || !hex_field(&param, c)) {
        skip(p, "FUNC record does not parse");
        return ERR_OK;
    }
    if (!rest(&name, &n, c)) {
        name = "";
        n = 0;
    }
    breakpad_func *f = vec_push(&p->funcs, sizeof *f, p->a, err);
    if (f == NULL)
        return ERR_TOO_LARGE;
    f->addr = addr;
    f->size = size;
    f->multiple = m;
    f->first_line = p->lines.n;
    f->first_inline = p->inlines.n;
    f->name = dup(p, name, n, err);
    if (f->name == NULL)
        return ERR_TOO_LARGE;
    p->in_func = true;
    return ERR_OK;
}

static err_code read_public(parser *p, cursor *c, err_info *err)
{
    uint64_t addr, param;
    const char *name;
    size_t n;
    bool m = multiple_flag(c);
    if (!hex_field(&addr, c) || !hex_field(&param, c)) {
        skip(p, "PUBLIC record does not parse");
        return ERR_OK;
    }
    if (!rest(&name, &n, c)) {
        name = "";
        n = 0;
    }
    breakpad_public *e = vec_push(&p->publics, sizeof *e, p->a, err);
    if (e == NULL)
        return ERR_TOO_LARGE;
    e->addr = addr;
    e->multiple = m;
    e->name = dup(p, name, n, err);
    return e->name ? ERR_OK : ERR_TOO_LARGE;
}

static err_code read_line(parser *p, cursor *c, err_info *err)
{
    uint64_t addr, size;
    uint32_t line, file;
    const char *f;
    size_t n;
    if (!p->in_func) {
        skip(p, "line record outside a FUNC");
        return ERR_OK;
    }
    if (!hex_field(&addr, c) || !hex_field(&size, c) || !dec_field(&line, c) || !dec_field(&file, c) ||
        next_field(&f, &n, c)) {
        skip(p, "line record does not parse");
        return ERR_OK;
    }
    breakpad_line *l = vec_push(&p->lines, sizeof *l, p->a, err);
    if (l == NULL)
        return ERR_TOO_LARGE;
    l->addr = addr;
    l->size = size;
    l->line = line;
    l->file = file;
    ((breakpad_func *)p->funcs.v)[p->funcs.n - 1].nlines++;
    return ERR_OK;
}

static err_code read_inline(parser *p, cursor *c, err_info *err)
{
    breakpad_inline in = {0};
    if (!p->in_func) {
        skip(p, "INLINE record outside a FUNC");
        return ERR_OK;
    }
    if (!dec_field(&in.depth, c) || !dec_field(&in.call_line, c) || !dec_field(&in.call_file, c) ||
        !dec_field(&in.origin, c)) {
        skip(p, "INLINE record does not parse");
        return ERR_OK;
    }
    breakpad_func *fn = &((breakpad_func *)p->funcs.v)[p->funcs.n - 1];
    if (in.depth > BREAKPAD_MAX_INLINE_DEPTH) {
        skip(p, "INLINE record nested too deep");
        return ERR_OK;
    }
    /* its parent: the latest INLINE of depth - 1 in the same function */
    in.parent = NO_PARENT;
    if (in.depth > 0) {
        const breakpad_inline *all = p->inlines.v;
        for (size_t i = fn->ninlines; i-- > 0;)
            if (all[fn->first_inline + i].depth == in.depth - 1) {
                in.parent = (uint32_t)i;
                break;
            }
        if (in.parent == NO_PARENT) {
            skip(p, "INLINE record without a parent of depth - 1");
            return ERR_OK;
        }
    }
    in.first_range = p->ranges.n;
    uint64_t addr, size;
    for (;;) {
        cursor save = *c;
        const char *f;
        size_t n;
        if (!next_field(&f, &n, c))
            break;
        *c = save;
        if (!hex_field(&addr, c) || !hex_field(&size, c)) {
            p->ranges.n = in.first_range; /* drop what this record added */
            skip(p, "INLINE record range does not parse");
            return ERR_OK;
        }
        breakpad_range *r = vec_push(&p->ranges, sizeof *r, p->a, err);
        if (r == NULL)
            return ERR_TOO_LARGE;
        r->addr = addr;
        r->size = size;
    }
    in.nranges = p->ranges.n - in.first_range;
    if (in.nranges == 0) {
        skip(p, "INLINE record without a range");
        return ERR_OK;
    }
    breakpad_inline *e = vec_push(&p->inlines, sizeof *e, p->a, err);
    if (e == NULL)
        return ERR_TOO_LARGE;
    *e = in;
    fn->ninlines++;
    return ERR_OK;
}

static err_code read_stack(parser *p, cursor *c, err_info *err)
{
    const char *f;
    size_t n;
    if (!next_field(&f, &n, c)) {
        skip(p, "STACK record does not parse");
        return ERR_OK;
    }
    if (is_word(f, n, "WIN")) {
        p->sym->stack_win++;
        return ERR_OK;
    }
    if (!is_word(f, n, "CFI")) {
        skip(p, "STACK record of an unknown kind");
        return ERR_OK;
    }
    cursor save = *c;
    bool init = next_field(&f, &n, c) && is_word(f, n, "INIT");
    if (!init)
        *c = save;
    uint64_t addr, size = 0;
    const char *rules;
    size_t rn;
    if (!hex_field(&addr, c) || (init && !hex_field(&size, c)) || !rest(&rules, &rn, c)) {
        p->in_cfi = p->in_cfi && !init;
        skip(p, "STACK CFI record does not parse");
        return ERR_OK;
    }
    char *text = dup(p, rules, rn, err);
    if (text == NULL)
        return ERR_TOO_LARGE;
    if (init) {
        breakpad_cfi_init *e = vec_push(&p->cfi, sizeof *e, p->a, err);
        if (e == NULL)
            return ERR_TOO_LARGE;
        e->addr = addr;
        e->size = size;
        e->rules = text;
        e->first_delta = p->deltas.n;
        e->ndeltas = 0;
        p->in_cfi = true;
        return ERR_OK;
    }
    if (!p->in_cfi) {
        skip(p, "STACK CFI record outside a STACK CFI INIT");
        return ERR_OK;
    }
    breakpad_cfi_delta *d = vec_push(&p->deltas, sizeof *d, p->a, err);
    if (d == NULL)
        return ERR_TOO_LARGE;
    d->addr = addr;
    d->rules = text;
    ((breakpad_cfi_init *)p->cfi.v)[p->cfi.n - 1].ndeltas++;
    return ERR_OK;
}

static err_code read_module(parser *p, cursor *c, err_info *err)
{
    const char *os, *arch, *id, *name;
    size_t osn, archn, idn, namen;
    if (!next_field(&os, &osn, c) || !next_field(&arch, &archn, c) || !next_field(&id, &idn, c) ||
        !rest(&name, &namen, c))
        return err_set(err, ERR_INVALID, "breakpad symbol file: the MODULE line needs os, arch, id "
                       "and name");
    if (idn < 33 || idn > 40)
        return err_set(err, ERR_INVALID, "breakpad symbol file: MODULE id has %zu characters, not "
                       "33-40 (32 hex digits and an age)", idn);
    breakpad_sym *s = p->sym;
    for (int i = 0; i < 16; i++) {
        int hi = hexval(id[2 * i]), lo = hexval(id[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return err_set(err, ERR_INVALID, "breakpad symbol file: MODULE id is not hex");
        s->uuid[i] = (uint8_t)(hi << 4 | lo);
    }
    uint64_t age;
    if (!parse_hex(&age, id + 32, idn - 32) || age > UINT32_MAX)
        return err_set(err, ERR_INVALID, "breakpad symbol file: MODULE id's age is not hex");
    s->age = (uint32_t)age;
    s->os = dup(p, os, osn, err);
    s->arch = dup(p, arch, archn, err);
    s->name = dup(p, name, namen, err);
    return s->os && s->arch && s->name ? ERR_OK : ERR_TOO_LARGE;
}

static err_code read_info(parser *p, cursor *c, err_info *err)
{
    const char *f, *v;
    size_t n, vn;
    if (next_field(&f, &n, c) && is_word(f, n, "CODE_ID") && next_field(&v, &vn, c)) {
        p->sym->code_id = dup(p, v, vn, err);
        return p->sym->code_id ? ERR_OK : ERR_TOO_LARGE;
    }
    return ERR_OK; /* GENERATOR and kinds we do not use */
}

static int by_id(const void *x, const void *y)
{
    const breakpad_named *a = x, *b = y;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return a < b ? -1 : a > b; /* stable: a later record of the same id sorts after */
}

/* sort by id, keep the last record of each id */
static size_t sort_named(breakpad_named *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, by_id);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && v[k - 1].id == v[i].id)
            v[k - 1] = v[i];
        else
            v[k++] = v[i];
    }
    return k;
}

static err_code read_record(parser *p, const char *line, size_t len, err_info *err)
{
    cursor c = {line, line + len};
    const char *f;
    size_t n;
    if (!next_field(&f, &n, &c))
        return ERR_OK; /* blank line */
    if (is_word(f, n, "FUNC"))
        return read_func(p, &c, err);
    if (is_word(f, n, "FILE"))
        return read_named(p, &p->files, &c, "FILE record does not parse", err);
    if (is_word(f, n, "INLINE_ORIGIN"))
        return read_named(p, &p->origins, &c, "INLINE_ORIGIN record does not parse", err);
    if (is_word(f, n, "INLINE"))
        return read_inline(p, &c, err);
    if (is_word(f, n, "PUBLIC")) {
        p->in_func = false;
        return read_public(p, &c, err);
    }
    if (is_word(f, n, "STACK"))
        return read_stack(p, &c, err);
    if (is_word(f, n, "INFO"))
        return read_info(p, &c, err);
    if (is_word(f, n, "MODULE")) {
        skip(p, "a second MODULE record");
        return ERR_OK;
    }
    c.p = line;
    return read_line(p, &c, err);
}

err_code breakpad_parse(breakpad_sym **out, const uint8_t *data, size_t len, arena *a,
                        err_info *err)
{
    *out = NULL;
    if (!breakpad_test(data, len))
        return err_set(err, ERR_INVALID, "not a breakpad symbol file: it does not start with "
                       "\"MODULE \"");
    parser p = {.a = a};
    p.sym = arena_alloc(a, sizeof *p.sym, err);
    if (p.sym == NULL)
        return ERR_TOO_LARGE;
    const char *s = (const char *)data, *end = s + len;
    err_code rc = ERR_OK;
    while (s < end && rc == ERR_OK) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        size_t n = (size_t)(e - s);
        if (n > 0 && s[n - 1] == '\r')
            n--;
        p.lineno++;
        if (p.lineno == 1) {
            cursor c = {s + 7, s + n}; /* after "MODULE " (breakpad_test) */
            rc = read_module(&p, &c, err);
        } else if (memchr(s, '\0', n) != NULL) {
            skip(&p, "a NUL byte in the line");
        } else {
            rc = read_record(&p, s, n, err);
        }
        s = nl ? nl + 1 : end;
    }
    if (rc != ERR_OK)
        return rc;
    breakpad_sym *sym = p.sym;
    sym->files = p.files.v;
    sym->nfiles = sort_named(sym->files, p.files.n);
    sym->origins = p.origins.v;
    sym->norigins = sort_named(sym->origins, p.origins.n);
    sym->funcs = p.funcs.v;
    sym->nfuncs = p.funcs.n;
    sym->lines = p.lines.v;
    sym->nlines = p.lines.n;
    sym->inlines = p.inlines.v;
    sym->ninlines = p.inlines.n;
    sym->ranges = p.ranges.v;
    sym->nranges = p.ranges.n;
    sym->publics = p.publics.v;
    sym->npublics = p.publics.n;
    sym->cfi = p.cfi.v;
    sym->ncfi = p.cfi.n;
    sym->deltas = p.deltas.v;
    sym->ndeltas = p.deltas.n;
    *out = sym;
    return ERR_OK;
}
