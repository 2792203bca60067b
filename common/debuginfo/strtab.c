#include "debuginfo/strtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

/* A word-at-a-time multiply-mix hash: names are long (demangled C++), so hashing 8 bytes a
 * step matters; no adversary beyond a hostile dSYM, which can only make us slower. */
static uint32_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    memcpy(&tail, s + i, len - i);
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return (uint32_t)h;
}

uint32_t strtab_hash(const char *s, size_t len)
{
    return hash_bytes(s, len);
}

void strtab_init(strtab *t)
{
    memset(t, 0, sizeof *t);
    buf_init(&t->bytes);
    t->nslots = 1024;
    t->slots = xcalloc(t->nslots, sizeof *t->slots);
}

void strtab_reset(strtab *t)
{
    buf_reset(&t->bytes);
    free(t->slots);
    free(t->offsets);
    free(t->hashes);
    memset(t, 0, sizeof *t);
}

static void grow(strtab *t)
{
    /* strtab_append can add many ids at once: size for all of them, half full at most */
    size_t n = t->nslots * 2;
    while ((t->count + 1) * 2 > n)
        n *= 2;
    uint64_t *slots = xcalloc(n, sizeof *slots);
    for (size_t id = 0; id < t->count; id++) {
        size_t j = t->hashes[id] & (n - 1);
        while (slots[j] != 0)
            j = (j + 1) & (n - 1);
        slots[j] = (uint64_t)t->hashes[id] << 32 | ((uint32_t)id + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
}

/* Store `s` as the next id (no lookup, no hash-set entry). */
static uint32_t add_new(strtab *t, const char *s, size_t len, uint32_t hash)
{
    if (t->bytes.len + len + 2 >= UINT32_MAX || t->count >= UINT32_MAX - 1) {
        t->full = true;
        return STRTAB_NONE;
    }
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->offsets = xreallocarray(t->offsets, t->cap, sizeof *t->offsets);
        t->hashes = xreallocarray(t->hashes, t->cap, sizeof *t->hashes);
    }
    uint32_t id = (uint32_t)t->count++;
    t->offsets[id] = (uint32_t)t->bytes.len;
    t->hashes[id] = hash;
    buf_append(&t->bytes, s, len);
    buf_putc(&t->bytes, '\0');
    return id;
}

uint32_t strtab_intern(strtab *t, const char *s, size_t len)
{
    return strtab_intern_hashed(t, s, len, hash_bytes(s, len));
}

uint32_t strtab_copy(strtab *t, const strtab *from, uint32_t id)
{
    if (id >= from->count)
        return STRTAB_NONE;
    return strtab_intern_hashed(t, strtab_get(from, id), strtab_len(from, id), from->hashes[id]);
}

uint32_t strtab_intern_hashed(strtab *t, const char *s, size_t len, uint32_t h)
{
    if ((t->count + 1) * 2 > t->nslots)
        grow(t);
    size_t j = h & (t->nslots - 1);
    for (;;) {
        uint64_t v = t->slots[j];
        if (v == 0)
            break;
        uint32_t id = (uint32_t)v - 1;
        if ((uint32_t)(v >> 32) == h && strtab_len(t, id) == len &&
            memcmp(t->bytes.data + t->offsets[id], s, len) == 0)
            return id;
        j = (j + 1) & (t->nslots - 1);
    }
    uint32_t id = add_new(t, s, len, h);
    if (id != STRTAB_NONE)
        t->slots[j] = (uint64_t)h << 32 | (id + 1);
    return id;
}

uint32_t strtab_add(strtab *t, const char *s, size_t len)
{
    return add_new(t, s, len, hash_bytes(s, len));
}

uint32_t strtab_append(strtab *t, const strtab *from)
{
    if (t->bytes.len + from->bytes.len >= UINT32_MAX || t->count + from->count >= UINT32_MAX - 1) {
        t->full = true;
        return STRTAB_NONE;
    }
    uint32_t base = (uint32_t)t->count, shift = (uint32_t)t->bytes.len;
    if (t->count + from->count > t->cap) {
        t->cap = t->count + from->count;
        t->offsets = xreallocarray(t->offsets, t->cap, sizeof *t->offsets);
        t->hashes = xreallocarray(t->hashes, t->cap, sizeof *t->hashes);
    }
    for (size_t i = 0; i < from->count; i++)
        t->offsets[t->count + i] = from->offsets[i] + shift;
    if (from->count > 0)
        memcpy(t->hashes + t->count, from->hashes, from->count * sizeof *t->hashes);
    buf_append(&t->bytes, from->bytes.data, from->bytes.len);
    t->count += from->count;
    return base;
}

const char *strtab_get(const strtab *t, uint32_t id)
{
    if (id >= t->count)   /* STRTAB_NONE from a full table: "" until the caller sees t->full */
        return "";
    return (const char *)t->bytes.data + t->offsets[id];
}

size_t strtab_len(const strtab *t, uint32_t id)
{
    if (id >= t->count)
        return 0;
    uint32_t end = id + 1 < t->count ? t->offsets[id + 1] : (uint32_t)t->bytes.len;
    return end - t->offsets[id] - 1;
}

uint32_t strtab_offset(const strtab *t, uint32_t id)
{
    if (id >= t->count)
        return 0;
    return t->offsets[id];
}
