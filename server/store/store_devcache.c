/*
 * store_devcache - devices known to be in release_users (see store_devcache.h): an
 * open-addressing hash table with linear probing. The key is already a SHA-256 prefix, so
 * its first 8 bytes (mixed with the release_envs id) are the hash.
 */
#include "store/store_devcache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define MIN_SLOTS 4096

typedef struct {
    uint64_t tag;      /* renv << 1 | crashed; 0 = empty slot (renv ids start at 1) */
    uint8_t uid[16];
} slot;

struct store_devcache {
    pthread_mutex_t mu;
    slot *slots;
    size_t nslots;     /* power of two */
    size_t n;          /* entries held */
    size_t max;        /* entries allowed */
    uint64_t gen;      /* bumped when the database identity changes */
    char identity[128];
};

store_devcache *store_devcache_new(size_t max_devices)
{
    store_devcache *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->max = max_devices ? max_devices : 1;
    c->gen = 1;
    return c;
}

void store_devcache_free(store_devcache *c)
{
    if (c == NULL)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->slots);
    free(c);
}

static void clear_locked(store_devcache *c)
{
    if (c->slots)
        memset(c->slots, 0, c->nslots * sizeof *c->slots);
    c->n = 0;
}

uint64_t store_devcache_check_db(store_devcache *c, const char *identity)
{
    pthread_mutex_lock(&c->mu);
    if (strncmp(c->identity, identity, sizeof c->identity - 1) != 0) {
        snprintf(c->identity, sizeof c->identity, "%s", identity);
        clear_locked(c);
        c->gen++;
    }
    uint64_t gen = c->gen;
    pthread_mutex_unlock(&c->mu);
    return gen;
}

static size_t slot_of(const store_devcache *c, int64_t renv, const uint8_t uid[16])
{
    uint64_t h;
    memcpy(&h, uid, sizeof h);
    h ^= (uint64_t)renv * 0x9e3779b97f4a7c15ull;
    return (size_t)(h & (c->nslots - 1));
}

/* The slot holding (renv, uid), or the empty slot where it would go. */
static slot *find_locked(const store_devcache *c, int64_t renv, const uint8_t uid[16])
{
    for (size_t i = slot_of(c, renv, uid);; i = (i + 1) & (c->nslots - 1)) {
        slot *s = &c->slots[i];
        if (s->tag == 0 || ((s->tag >> 1) == (uint64_t)renv && memcmp(s->uid, uid, 16) == 0))
            return s;
    }
}

store_devcache_state store_devcache_lookup(store_devcache *c, uint64_t gen, int64_t renv,
                                           const uint8_t uid[16])
{
    store_devcache_state st = STORE_DEVCACHE_UNKNOWN;
    pthread_mutex_lock(&c->mu);
    if (gen == c->gen && c->n > 0) {
        const slot *s = find_locked(c, renv, uid);
        if (s->tag != 0)
            st = (s->tag & 1) ? STORE_DEVCACHE_CRASHED : STORE_DEVCACHE_STORED;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* Twice the slots, every entry placed again. */
static void grow_locked(store_devcache *c)
{
    slot *old = c->slots;
    size_t nold = c->nslots;
    c->nslots = nold ? nold * 2 : MIN_SLOTS;
    c->slots = xcalloc(c->nslots, sizeof *c->slots);
    for (size_t i = 0; i < nold; i++)
        if (old[i].tag != 0)
            *find_locked(c, (int64_t)(old[i].tag >> 1), old[i].uid) = old[i];
    free(old);
}

void store_devcache_add(store_devcache *c, uint64_t gen, int64_t renv, const uint8_t uid[16],
                        bool crashed)
{
    pthread_mutex_lock(&c->mu);
    if (gen != c->gen || renv <= 0)
        goto done;
    /* at most `max` entries (a full cache starts again empty) and slots at most 3/4 used */
    if (c->n + 1 > c->max)
        clear_locked(c);
    else if (4 * (c->n + 1) > 3 * c->nslots)
        grow_locked(c);
    slot *s = find_locked(c, renv, uid);
    if (s->tag == 0) {
        s->tag = (uint64_t)renv << 1;
        memcpy(s->uid, uid, 16);
        c->n++;
    }
    if (crashed)
        s->tag |= 1;
done:
    pthread_mutex_unlock(&c->mu);
}

size_t store_devcache_count(store_devcache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->n;
    pthread_mutex_unlock(&c->mu);
    return n;
}
