/*
 * utf8 - see utf8.h. Source: RFC 3629 section 4 (the byte sequences that are UTF-8).
 */
#include "base/utf8.h"

#include <string.h>

size_t utf8_seq_len(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        len = 2, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        len = 3, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    unsigned cp = c & (0x3F >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

bool utf8_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = utf8_seq_len(s + i, n - i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

char *utf8_repair(char *out, size_t cap, const char *s)
{
    static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(s + i, n - i);
        const char *piece = len ? s + i : REPLACEMENT;
        size_t piece_len = len ? len : 3;
        if (o + piece_len + 1 > cap)
            break;
        memcpy(out + o, piece, piece_len);
        o += piece_len;
        i += len ? len : 1;
    }
    out[o] = '\0';
    return out;
}

size_t utf8_encode(char out[4], unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
