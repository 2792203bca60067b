/*
 * test_store_devcache - the node-local set of devices known stored (store_devcache.h):
 * lookups after adds, crashed stays crashed, growth keeps every entry, a full cache starts
 * again empty, another database identity forgets everything and voids older generations.
 */
#include <string.h>

#include "harness.h"
#include "store/store_devcache.h"

static void uid_of(uint8_t out[16], uint32_t i)
{
    /* spread like SHA-256 prefixes: the cache hashes the first 8 bytes */
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ 0x5bd1e995u;
    memcpy(out, &x, 8);
    memcpy(out + 8, &i, 4);
    memset(out + 12, 0xab, 4);
}

static void add_lookup_crashed(void)
{
    store_devcache *c = store_devcache_new(1000);
    uint64_t g = store_devcache_check_db(c, "16384 1700000000.1");
    uint8_t u[16], v[16];
    uid_of(u, 1);
    uid_of(v, 2);
    CHECK_EQ_INT(store_devcache_lookup(c, g, 7, u), STORE_DEVCACHE_UNKNOWN);
    store_devcache_add(c, g, 7, u, false);
    CHECK_EQ_INT(store_devcache_lookup(c, g, 7, u), STORE_DEVCACHE_STORED);
    CHECK_EQ_INT(store_devcache_lookup(c, g, 8, u), STORE_DEVCACHE_UNKNOWN);  /* other release */
    CHECK_EQ_INT(store_devcache_lookup(c, g, 7, v), STORE_DEVCACHE_UNKNOWN);
    store_devcache_add(c, g, 7, u, true);
    CHECK_EQ_INT(store_devcache_lookup(c, g, 7, u), STORE_DEVCACHE_CRASHED);
    store_devcache_add(c, g, 7, u, false);                 /* crashed stays crashed */
    CHECK_EQ_INT(store_devcache_lookup(c, g, 7, u), STORE_DEVCACHE_CRASHED);
    CHECK_EQ_INT(store_devcache_count(c), 1);
    store_devcache_free(c);
}

static void grows_then_starts_again(void)
{
    store_devcache *c = store_devcache_new(20000);
    uint64_t g = store_devcache_check_db(c, "db");
    uint8_t u[16];
    for (uint32_t i = 0; i < 20000; i++) {
        uid_of(u, i);
        store_devcache_add(c, g, 1 + i % 3, u, i % 5 == 0);
    }
    CHECK_EQ_INT(store_devcache_count(c), 20000);
    int wrong = 0;
    for (uint32_t i = 0; i < 20000; i++) {
        uid_of(u, i);
        store_devcache_state want = i % 5 == 0 ? STORE_DEVCACHE_CRASHED : STORE_DEVCACHE_STORED;
        wrong += store_devcache_lookup(c, g, 1 + i % 3, u) != want;
    }
    CHECK_EQ_INT(wrong, 0);
    /* past its size it forgets everything rather than grow */
    for (uint32_t i = 20000; i < 60000; i++) {
        uid_of(u, i);
        store_devcache_add(c, g, 1, u, false);
    }
    CHECK(store_devcache_count(c) <= 20000);
    uid_of(u, 59999);
    CHECK_EQ_INT(store_devcache_lookup(c, g, 1, u), STORE_DEVCACHE_STORED);
    store_devcache_free(c);
}

static void another_database_forgets(void)
{
    store_devcache *c = store_devcache_new(100);
    uint64_t g1 = store_devcache_check_db(c, "16384 1700000000.1");
    uint8_t u[16];
    uid_of(u, 9);
    store_devcache_add(c, g1, 3, u, true);
    CHECK_EQ_U64(store_devcache_check_db(c, "16384 1700000000.1"), g1);   /* same: kept */
    CHECK_EQ_INT(store_devcache_lookup(c, g1, 3, u), STORE_DEVCACHE_CRASHED);
    uint64_t g2 = store_devcache_check_db(c, "16384 1700000500.7");       /* restarted */
    CHECK(g2 != g1);
    CHECK_EQ_INT(store_devcache_count(c), 0);
    CHECK_EQ_INT(store_devcache_lookup(c, g2, 3, u), STORE_DEVCACHE_UNKNOWN);
    store_devcache_add(c, g1, 3, u, false);        /* a transaction of the old generation */
    CHECK_EQ_INT(store_devcache_count(c), 0);
    CHECK_EQ_INT(store_devcache_lookup(c, g1, 3, u), STORE_DEVCACHE_UNKNOWN);
    store_devcache_free(c);
    store_devcache_free(NULL);
}

int main(void)
{
    RUN(add_lookup_crashed);
    RUN(grows_then_starts_again);
    RUN(another_database_forgets);
    return harness_done();
}
