/*
 * fuzz_envelope - libFuzzer target for Sentry envelope framing (common/envelope): the parser
 * returns an envelope or a clean error; every item has a type and a payload inside the input;
 * an event payload then goes through crashreport_parse like the server does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "crashreport/crashreport.h"
#include "envelope/envelope.h"
#include "fuzz_require.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    /* a copy of exactly len bytes, so that ASan sees any read past the end */
    char *in = malloc(len ? len : 1);
    REQUIRE(in != NULL);
    if (len)
        memcpy(in, data, len);
    arena *a = arena_new((size_t)64 << 20);
    err_info err = {0};
    envelope *e = NULL;
    envelope_limits lim = {100, 1 << 20};
    err_code rc = envelope_parse(&e, in, len, &lim, a, &err);
    REQUIRE(rc == ERR_OK || rc == ERR_INVALID || rc == ERR_TOO_LARGE);
    REQUIRE((rc == ERR_OK) == (e != NULL));
    REQUIRE(rc == ERR_OK || err.msg[0] != '\0');
    if (e != NULL) {
        REQUIRE(e->nitems <= lim.max_items);
        for (size_t i = 0; i < e->nitems; i++) {
            const envelope_item *it = &e->items[i];
            REQUIRE(it->type != NULL && it->type[0] != '\0');
            REQUIRE(it->payload >= in && it->payload_len <= len &&
                    (size_t)(it->payload - in) <= len - it->payload_len);
            REQUIRE(it->payload_len <= lim.max_item_bytes);
            if (strcmp(it->type, "event") == 0) {
                crashreport *r = NULL;
                err_info perr = {0};
                err_code prc = crashreport_parse(&r, it->payload, it->payload_len, a, &perr);
                REQUIRE((prc == ERR_OK) == (r != NULL));
            }
        }
    }
    arena_free(a);
    free(in);
    return 0;
}
