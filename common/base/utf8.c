/*
 * utf8 - see utf8.h. Source: RFC 3629 section 4 (the byte sequences that are UTF-8); Unicode
 * 15.0 section 3.9, table 3-8 (the maximal subparts U+FFFD replaces).
 */
#include "base/utf8.h"

#include <stdint.h>
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

size_t utf8_bad_len(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* the second byte's range (RFC 3629 section 4) */
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 1; /* 80..C1, F5..FF: starts nothing */
    size_t k = 1;
    while (k < need && k < n) {
        unsigned b = s[k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
            break;
        k++;
    }
    return k < need ? k : 1; /* k == need would be valid: not called for that */
}

size_t utf8_invalid_at(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        /* eight ASCII bytes at a time: no high bit set */
        while (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if ((w & 0x8080808080808080ull) != 0)
                break;
            i += 8;
        }
        if (i == n)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = utf8_seq_len(str + i, n - i);
        if (len == 0)
            return i;
        i += len;
    }
    return n;
}

bool utf8_valid(const char *s, size_t n)
{
    return utf8_invalid_at(s, n) == n;
}

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

const char *utf8_sanitize(size_t *out_len, const char *s, size_t n, arena *a, err_info *err)
{
    size_t i = utf8_invalid_at(s, n);
    if (i == n) {
        if (out_len)
            *out_len = n;
        return s;
    }
    /* at most 3 bytes for each byte from the first invalid one on */
    if (n - i > (SIZE_MAX - 1) / 3 - i) {
        err_set(err, ERR_TOO_LARGE, "text of %zu bytes is too large to repair", n);
        return NULL;
    }
    char *out = arena_alloc_uninit(a, i + 3 * (n - i) + 1, err);
    if (out == NULL)
        return NULL;
    memcpy(out, s, i);
    size_t o = i;
    while (i < n) {
        size_t good = utf8_invalid_at(s + i, n - i);
        memcpy(out + o, s + i, good);
        o += good;
        i += good;
        if (i == n)
            break;
        memcpy(out + o, REPLACEMENT, 3);
        o += 3;
        i += utf8_bad_len(s + i, n - i);
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}

char *utf8_repair(char *out, size_t cap, const char *s)
{
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(s + i, n - i);
        const char *piece = len ? s + i : REPLACEMENT;
        size_t piece_len = len ? len : 3;
        if (o + piece_len + 1 > cap)
            break;
        memcpy(out + o, piece, piece_len);
        o += piece_len;
        i += len ? len : utf8_bad_len(s + i, n - i);
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
