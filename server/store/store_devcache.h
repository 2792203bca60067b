/*
 * store_devcache - a node-local set of the devices this process has seen committed to
 * release_users: (release_envs id, 16-byte device hash) -> stored, and whether stored as
 * crashed. A sessions batch asks it before sending a device's upsert and skips the upsert
 * when its outcome is already durable (the row exists, and is crashed if this batch would
 * mark it crashed); see store_sessions.c for why that stays exact across nodes.
 *
 * Only ever holds what a committed transaction wrote (or found) in Postgres, and forgets
 * everything when told it talks to another database (or the same after a Postgres restart,
 * which a restore from a backup implies). Bounded: at most `max_devices` entries, then it
 * starts again empty. Thread-safe (one mutex).
 */
#ifndef STACKSIFT_STORE_STORE_DEVCACHE_H
#define STACKSIFT_STORE_STORE_DEVCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct store_devcache store_devcache;

/* What the cache knows about a device of a release. */
typedef enum {
    STORE_DEVCACHE_UNKNOWN,   /* nothing: send the upsert */
    STORE_DEVCACHE_STORED,    /* its release_users row exists */
    STORE_DEVCACHE_CRASHED,   /* its row exists with crashed = true */
} store_devcache_state;

/* store_devcache_new - an empty cache of at most `max_devices` (> 0) entries, grown on
 * demand (24-byte slots, at most 3/4 used: 1,000,000 devices take 48 MiB at most).
 * Owned: store_devcache_free(). */
store_devcache *store_devcache_new(size_t max_devices);

/* store_devcache_free - NULL is a no-op. */
void store_devcache_free(store_devcache *c);

/* store_devcache_check_db - `identity` names the database and the Postgres run the caller's
 * transaction sees (any text; the first 127 bytes count); a different one than last time
 * empties the cache. Returns the generation to pass to lookups and adds of this
 * transaction: they are ignored once the identity changed again (another thread, another
 * database). */
uint64_t store_devcache_check_db(store_devcache *c, const char *identity);

/* store_devcache_lookup - what is known of device `uid` of release_envs row `renv` (> 0);
 * UNKNOWN when `gen` is not the current generation. */
store_devcache_state store_devcache_lookup(store_devcache *c, uint64_t gen, int64_t renv,
                                           const uint8_t uid[16]);

/* store_devcache_add - record that device `uid` of `renv` is stored (`crashed`: with
 * crashed = true), after the transaction that stored or found it committed (`gen` from that
 * transaction's check; ignored if the generation moved on). A crashed entry stays crashed. */
void store_devcache_add(store_devcache *c, uint64_t gen, int64_t renv, const uint8_t uid[16],
                        bool crashed);

/* store_devcache_count - entries held (for tests and logs). */
size_t store_devcache_count(store_devcache *c);

#endif
