/*
 * strtab - an interned string table: each distinct string is stored once and named by a
 * dense 32-bit id (0, 1, 2, ... in order of first interning). Not thread-safe; one per thread,
 * merged later.
 */
#ifndef STACKSIFT_DEBUGINFO_STRTAB_H
#define STACKSIFT_DEBUGINFO_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define STRTAB_NONE UINT32_MAX /* "no string" */

typedef struct {
    buf bytes;         /* NUL-terminated strings back to back */
    uint32_t *offsets; /* offsets[id] = start of string id in bytes; count entries */
    uint32_t *hashes;  /* hashes[id], to skip most comparisons */
    size_t count, cap; /* strings interned; room in offsets/hashes */
    uint64_t *slots;   /* open-addressing hash set: hash << 32 | (id + 1), 0 = empty (the hash
                          beside the id spares a probe a second cache miss) */
    size_t nslots;     /* power of two */
    bool full;         /* an add would have passed 4 GiB: it returned STRTAB_NONE and added
                          nothing; the caller reports ERR_TOO_LARGE (checked once, at the end) */
} strtab;

void strtab_init(strtab *t);
void strtab_reset(strtab *t);
/* strtab_intern - id of `s` (`len` bytes, no NUL inside), adding it if new. A table that would
 * pass 4 GiB (ids and offsets are 32-bit) adds nothing, returns STRTAB_NONE and sets t->full;
 * so do strtab_add and strtab_append. */
uint32_t strtab_intern(strtab *t, const char *s, size_t len);
/* strtab_copy - intern string `id` of `from` into `t` (reusing its hash); returns its id in t. */
uint32_t strtab_copy(strtab *t, const strtab *from, uint32_t id);
/* strtab_hash - the hash strtab keeps for `s` (`len` bytes): what t->hashes[id] holds. */
uint32_t strtab_hash(const char *s, size_t len);
/* strtab_intern_hashed - strtab_intern with the hash already known (internal to strtab users
 * that move strings between tables). */
uint32_t strtab_intern_hashed(strtab *t, const char *s, size_t len, uint32_t hash);
/* strtab_append - add every string of `from` to `t` as new ids, without looking for them
 * first: returns the id `from`'s id 0 got (id i of `from` is that + i). Strings added this way
 * are not found by a later strtab_intern, so `t` may then hold a string twice; use it where
 * only ids matter (merging per-thread tables whose users dedupe later). */
uint32_t strtab_append(strtab *t, const strtab *from);
/* strtab_add - add `s` as a new id without looking for it (see strtab_append). */
uint32_t strtab_add(strtab *t, const char *s, size_t len);
/* strtab_get - the string with id `id` (borrowed; invalidated by the next strtab_intern). */
const char *strtab_get(const strtab *t, uint32_t id);
/* strtab_len - length in bytes of string `id`. */
size_t strtab_len(const strtab *t, uint32_t id);
/* strtab_offset - byte offset of string `id` in t->bytes (what a file format stores). */
uint32_t strtab_offset(const strtab *t, uint32_t id);

#endif
