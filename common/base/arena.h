/*
 * arena - bump allocator for request-lifetime memory (STYLE §6).
 *
 * Everything allocated from an arena is freed at once by arena_free(); nothing is freed one
 * by one. An arena has a byte budget: an allocation that would exceed it fails with
 * ERR_TOO_LARGE, which the server maps to HTTP 413. Not thread-safe: one arena per request.
 */
#ifndef STACKSIFT_BASE_ARENA_H
#define STACKSIFT_BASE_ARENA_H

#include <stddef.h>

#include "base/err.h"

typedef struct arena arena;

/* arena_new - a new arena that hands out at most `budget_bytes` in total (0 = unlimited).
 * Owned by the caller: arena_free(). */
arena *arena_new(size_t budget_bytes);

/* arena_free - run deferred callbacks (last registered first), then release all memory.
 * NULL is a no-op. */
void arena_free(arena *a);

/* arena_alloc - `n` bytes, zeroed, aligned for any type; NULL + ERR_TOO_LARGE over budget. */
void *arena_alloc(arena *a, size_t n, err_info *err);

/* arena_alloc_uninit - as arena_alloc, but the bytes are not zeroed: for memory the caller
 * writes whole at once (copied strings, arrays filled from a scratch stack). */
void *arena_alloc_uninit(arena *a, size_t n, err_info *err);

/* arena_alloc_array - `count` * `size` bytes, zeroed; ERR_TOO_LARGE on overflow or budget. */
void *arena_alloc_array(arena *a, size_t count, size_t size, err_info *err);

/* arena_grow - resize an array allocated by this arena (old contents kept, new part zeroed);
 * cheap when `p` is the last allocation. NULL + ERR_TOO_LARGE over budget. */
void *arena_grow(arena *a, void *p, size_t old_n, size_t new_n, err_info *err);
/* arena_grow_uninit - as arena_grow, but the new part is not zeroed: for a buffer the caller
 * fills as it grows (a request body, an array whose elements are written when added). */
void *arena_grow_uninit(arena *a, void *p, size_t old_n, size_t new_n, err_info *err);

/* arena_strndup - copy of the first `n` bytes of `s` plus a NUL; NULL + ERR_TOO_LARGE. */
char *arena_strndup(arena *a, const char *s, size_t n, err_info *err);

/* arena_strdup - copy of the NUL-terminated `s`; NULL + ERR_TOO_LARGE. */
char *arena_strdup(arena *a, const char *s, err_info *err);

/* arena_sprintf - formatted string in the arena; NULL + ERR_TOO_LARGE. */
char *arena_sprintf(arena *a, err_info *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* arena_defer - call fn(p) in arena_free, last registered first (json_t, PGresult, fds). */
void arena_defer(arena *a, void (*fn)(void *), void *p);

/* arena_used - bytes handed out so far (what the budget counts). */
size_t arena_used(const arena *a);

/* arena_left - bytes the budget still allows (SIZE_MAX - used when unlimited). */
size_t arena_left(const arena *a);

#endif
