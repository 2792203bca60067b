/*
 * harness - the tiny test harness every tests/test_<module>.c uses.
 *
 *   static void parses_thin_arm64(void) { CHECK_EQ_INT(n, 1); }
 *   int main(void) { RUN(parses_thin_arm64); return harness_done(); }
 *
 * A failed CHECK prints file:line and the values, and marks the current test failed; the
 * test goes on. harness_done() prints "N passed, N failed" and returns the exit status.
 */
#ifndef STACKSIFT_TESTS_HARNESS_H
#define STACKSIFT_TESTS_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((unused)) static int harness_passed, harness_failed, harness_current_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            harness_current_failed = 1;                                              \
        }                                                                            \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                  \
    do {                                                                                    \
        long long ha_ = (long long)(a), hb_ = (long long)(b);                               \
        if (ha_ != hb_) {                                                                   \
            fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s == %lld, expected %s == %lld\n", \
                    __FILE__, __LINE__, #a, ha_, #b, hb_);                                  \
            harness_current_failed = 1;                                                     \
        }                                                                                   \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                   \
    do {                                                                                     \
        uint64_t ha_ = (uint64_t)(a), hb_ = (uint64_t)(b);                                   \
        if (ha_ != hb_) {                                                                    \
            fprintf(stderr, "%s:%d: CHECK_EQ_U64 failed: %s == 0x%" PRIx64 ", expected 0x%" PRIx64 "\n", \
                    __FILE__, __LINE__, #a, ha_, hb_);                                       \
            harness_current_failed = 1;                                                      \
        }                                                                                    \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                 \
    do {                                                                                   \
        const char *ha_ = (a), *hb_ = (b);                                                 \
        if (ha_ == NULL || hb_ == NULL ? ha_ != hb_ : strcmp(ha_, hb_) != 0) {             \
            fprintf(stderr, "%s:%d: CHECK_EQ_STR failed: %s == \"%s\", expected \"%s\"\n", \
                    __FILE__, __LINE__, #a, ha_ ? ha_ : "(null)", hb_ ? hb_ : "(null)");   \
            harness_current_failed = 1;                                                    \
        }                                                                                  \
    } while (0)

#define RUN(fn)                                                      \
    do {                                                             \
        harness_current_failed = 0;                                  \
        fn();                                                        \
        if (harness_current_failed) {                                \
            harness_failed++;                                        \
            fprintf(stderr, "FAIL %s\n", #fn);                       \
        } else {                                                     \
            harness_passed++;                                        \
            fprintf(stderr, "ok   %s\n", #fn);                       \
        }                                                            \
    } while (0)

static inline int harness_done(void)
{
    printf("%d passed, %d failed\n", harness_passed, harness_failed);
    return harness_failed ? 1 : 0;
}

#endif
