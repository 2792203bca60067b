#include "debuginfo/strtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

/* FNV-1a, 64-bit: short keys, no adversary beyond a hostile dSYM (which only slows us). */
static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

void strtab_init(strtab *t)
{
    buf_init(&t->bytes);
    t->nslots = 1024;
    t->slots = xcalloc(t->nslots, sizeof *t->slots);
    t->count = 0;
}

void strtab_reset(strtab *t)
{
    buf_reset(&t->bytes);
    free(t->slots);
    t->slots = NULL;
    t->nslots = t->count = 0;
}

static void grow(strtab *t)
{
    size_t n = t->nslots * 2;
    uint32_t *slots = xcalloc(n, sizeof *slots);
    for (size_t i = 0; i < t->nslots; i++) {
        uint32_t v = t->slots[i];
        if (v == 0)
            continue;
        const char *s = (const char *)t->bytes.data + (v - 1);
        size_t j = hash_bytes(s, strlen(s)) & (n - 1);
        while (slots[j] != 0)
            j = (j + 1) & (n - 1);
        slots[j] = v;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
}

uint32_t strtab_intern(strtab *t, const char *s, size_t len)
{
    if ((t->count + 1) * 2 > t->nslots)
        grow(t);
    size_t j = hash_bytes(s, len) & (t->nslots - 1);
    for (;;) {
        uint32_t v = t->slots[j];
        if (v == 0)
            break;
        const char *cand = (const char *)t->bytes.data + (v - 1);
        if (strncmp(cand, s, len) == 0 && cand[len] == '\0')
            return v - 1;
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->bytes.len + len + 2 >= UINT32_MAX) {
        fprintf(stderr, "stacksift: string table over 4 GiB\n");
        abort();
    }
    uint32_t id = (uint32_t)t->bytes.len;
    buf_append(&t->bytes, s, len);
    buf_putc(&t->bytes, '\0');
    t->slots[j] = id + 1;
    t->count++;
    return id;
}

const char *strtab_get(const strtab *t, uint32_t id)
{
    return (const char *)t->bytes.data + id;
}
