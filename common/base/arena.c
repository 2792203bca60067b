#include "base/arena.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define ARENA_ALIGN 16
#define ARENA_CHUNK (64 * 1024)

typedef struct chunk {
    struct chunk *prev;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
} chunk;

typedef struct deferred {
    struct deferred *prev;
    void (*fn)(void *);
    void *p;
} deferred;

struct arena {
    chunk *head;
    deferred *defers;
    size_t budget, used;
    void *last;       /* most recent allocation, so arena_grow can extend in place */
    size_t last_size; /* its size, rounded to ARENA_ALIGN */
};

arena *arena_new(size_t budget_bytes)
{
    arena *a = xcalloc(1, sizeof *a);
    a->budget = budget_bytes ? budget_bytes : SIZE_MAX;
    return a;
}

void arena_free(arena *a)
{
    if (a == NULL)
        return;
    for (deferred *d = a->defers; d != NULL;) {
        deferred *prev = d->prev;
        d->fn(d->p);
        free(d);
        d = prev;
    }
    for (chunk *c = a->head; c != NULL;) {
        chunk *prev = c->prev;
        free(c);
        c = prev;
    }
    free(a);
}

void *arena_alloc(arena *a, size_t n, err_info *err)
{
    void *p = arena_alloc_uninit(a, n, err);
    if (p != NULL)
        memset(p, 0, a->last_size);
    return p;
}

void *arena_alloc_uninit(arena *a, size_t n, err_info *err)
{
    if (n > SIZE_MAX - ARENA_ALIGN)
        return err_set(err, ERR_TOO_LARGE, "allocation of %zu bytes is too large", n), NULL;
    size_t size = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size == 0)
        size = ARENA_ALIGN;
    if (size > a->budget - a->used) {
        err_set(err, ERR_TOO_LARGE, "input needs more than the %zu-byte memory budget", a->budget);
        return NULL;
    }
    chunk *c = a->head;
    if (c == NULL || c->cap - c->used < size) {
        size_t cap = size > ARENA_CHUNK / 2 ? size : ARENA_CHUNK;
        c = xmalloc(sizeof *c + cap);
        c->cap = cap;
        c->used = 0;
        /* a big block gets its own chunk behind the current one, so the current keeps filling */
        if (size > ARENA_CHUNK / 2 && a->head != NULL) {
            c->prev = a->head->prev;
            a->head->prev = c;
        } else {
            c->prev = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += size;
    a->used += size;
    a->last = p;
    a->last_size = size;
    return p;
}

void *arena_alloc_array(arena *a, size_t count, size_t size, err_info *err)
{
    if (size != 0 && count > SIZE_MAX / size)
        return err_set(err, ERR_TOO_LARGE, "array of %zu x %zu bytes is too large", count, size), NULL;
    return arena_alloc(a, count * size, err);
}

/* arena_grow and arena_grow_uninit: with `zero`, the bytes past old_n are zeroed. */
static void *grow(arena *a, void *p, size_t old_n, size_t new_n, bool zero, err_info *err)
{
    if (p == NULL)
        return zero ? arena_alloc(a, new_n, err) : arena_alloc_uninit(a, new_n, err);
    if (new_n <= old_n)
        return p;
    chunk *c = a->head;
    size_t new_size = (new_n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (p == a->last && c != NULL && (unsigned char *)p + a->last_size == c->data + c->used &&
        new_size - a->last_size <= c->cap - c->used && new_size - a->last_size <= a->budget - a->used) {
        size_t extra = new_size - a->last_size;
        if (zero)
            memset((unsigned char *)p + a->last_size, 0, extra);
        c->used += extra;
        a->used += extra;
        a->last_size = new_size;
        return p;
    }
    void *q = arena_alloc_uninit(a, new_n, err);
    if (q == NULL)
        return NULL;
    memcpy(q, p, old_n);
    if (zero)
        memset((unsigned char *)q + old_n, 0, a->last_size - old_n);
    return q;
}

void *arena_grow(arena *a, void *p, size_t old_n, size_t new_n, err_info *err)
{
    return grow(a, p, old_n, new_n, true, err);
}

void *arena_grow_uninit(arena *a, void *p, size_t old_n, size_t new_n, err_info *err)
{
    return grow(a, p, old_n, new_n, false, err);
}

char *arena_strndup(arena *a, const char *s, size_t n, err_info *err)
{
    /* not zeroed first: the copy and its NUL are all that is read (the JSON a report is
     * stored as is copied here whole) */
    char *p = arena_alloc_uninit(a, n + 1, err);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *arena_strdup(arena *a, const char *s, err_info *err)
{
    return arena_strndup(a, s, strlen(s), err);
}

char *arena_sprintf(arena *a, err_info *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return err_set(err, ERR_INVALID, "cannot format string"), NULL;
    char *p = arena_alloc_uninit(a, (size_t)n + 1, err);   /* vsnprintf writes it whole */
    if (p == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void arena_defer(arena *a, void (*fn)(void *), void *p)
{
    deferred *d = xmalloc(sizeof *d);
    d->fn = fn;
    d->p = p;
    d->prev = a->defers;
    a->defers = d;
}

size_t arena_used(const arena *a)
{
    return a->used;
}

size_t arena_left(const arena *a)
{
    return a->budget - a->used;
}
