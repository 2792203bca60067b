/*
 * search - binary search of an array of structs sorted by one unsigned 64-bit field, as a macro
 * that defines the function (as base/radix.h does for the sort):
 * DEFINE_COUNT_AT_MOST(name, type, field) gives
 *   `static size_t name(const type *v, size_t n, uint64_t key)`:
 * how many of v[0..n) lead with v[i].field <= key, so the index of the first element whose
 * field is above `key` (n if none). v must be sorted by `field`, ascending; O(log n).
 * By start: the element covering an address is the one before that index. By end: that index
 * is the first element ending after an address.
 */
#ifndef STACKSIFT_BASE_SEARCH_H
#define STACKSIFT_BASE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#define DEFINE_COUNT_AT_MOST(fn, type, field)                                    \
    static size_t fn(const type *v, size_t n, uint64_t key)                      \
    {                                                                            \
        size_t lo = 0, hi = n;                                                   \
        while (lo < hi) {                                                        \
            size_t mid = lo + (hi - lo) / 2;                                     \
            if (v[mid].field <= key)                                             \
                lo = mid + 1;                                                    \
            else                                                                 \
                hi = mid;                                                        \
        }                                                                        \
        return lo;                                                               \
    }

#endif
