/*
 * hex.c - bytes as hexadecimal text.
 */
#include "base/hex.h"

#include <stddef.h>

void hex_uuid_format(char out[37], const uint8_t u[16], bool upper)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    size_t k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[k++] = '-';
        out[k++] = digits[u[i] >> 4];
        out[k++] = digits[u[i] & 15];
    }
    out[k] = '\0';
}
