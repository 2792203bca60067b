/*
 * radix - a stable LSD radix sort of an array of structs by one unsigned 64-bit field, as a
 * macro that defines the function: DEFINE_RADIX_SORT(name, type, field) gives
 * `static void name(type *v, size_t n)`. 8 passes of 8 bits, a pass skipped when every key
 * has the same byte there (the high bytes of addresses in one image): O(n) where qsort spent
 * most of a symcache build on millions of records. Needs <stdlib.h>, <string.h>, base/xalloc.h.
 */
#ifndef STACKSIFT_BASE_RADIX_H
#define STACKSIFT_BASE_RADIX_H

#define DEFINE_RADIX_SORT(fn, type, field)                                       \
    static void fn(type *v, size_t n)                                            \
    {                                                                            \
        if (n < 2)                                                               \
            return;                                                              \
        type *tmp = xmalloc(n * sizeof *tmp);                                    \
        type *src = v, *dst = tmp;                                               \
        for (unsigned shift = 0; shift < 64; shift += 8) {                       \
            size_t count[256] = {0};                                             \
            for (size_t i = 0; i < n; i++)                                       \
                count[(src[i].field >> shift) & 0xff]++;                         \
            if (count[(src[0].field >> shift) & 0xff] == n)                      \
                continue;                                                        \
            size_t pos = 0;                                                      \
            for (unsigned b = 0; b < 256; b++) {                                 \
                size_t c = count[b];                                             \
                count[b] = pos;                                                  \
                pos += c;                                                        \
            }                                                                    \
            for (size_t i = 0; i < n; i++)                                       \
                dst[count[(src[i].field >> shift) & 0xff]++] = src[i];           \
            type *t = src;                                                       \
            src = dst;                                                           \
            dst = t;                                                             \
        }                                                                        \
        if (src != v)                                                            \
            memcpy(v, src, n * sizeof *v);                                       \
        free(tmp);                                                               \
    }

#endif
