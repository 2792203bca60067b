/*
 * fuzz_require - REQUIRE(cond): a promise of the code under fuzzing. A false `cond` aborts, so
 * libFuzzer reports it as a crash and keeps the input. Included by every tests/fuzz target.
 */
#ifndef STACKSIFT_FUZZ_REQUIRE_H
#define STACKSIFT_FUZZ_REQUIRE_H

#include <stdlib.h>

#define REQUIRE(cond) \
    do {              \
        if (!(cond))  \
            abort();  \
    } while (0)

#endif
