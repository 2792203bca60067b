/*
 * text_internal - what the line-oriented parsers of this folder (Apple text, sample/spindump)
 * share: byte-class tests, trimming, prefix tests and bounded number scanning over (pointer,
 * length) spans that are not NUL-terminated, and their pcre2 setup. Not for use outside
 * common/crashreport/.
 */
#ifndef STACKSIFT_CRASHREPORT_TEXT_INTERNAL_H
#define STACKSIFT_CRASHREPORT_TEXT_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A space or a tab: what separates the columns of a report line. */
static inline bool cr_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* isspace() of the C locale, without the ctype table call. */
static inline bool cr_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* cr_trim - narrow the span (*s, *n) past leading and trailing white space (cr_is_space). */
static inline void cr_trim(const char **s, size_t *n)
{
    while (*n > 0 && cr_is_space(**s))
        (*s)++, (*n)--;
    while (*n > 0 && cr_is_space((*s)[*n - 1]))
        (*n)--;
}

/* cr_starts - true if the n bytes at s begin with the NUL-terminated prefix. */
static inline bool cr_starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* Hex digit values + 1, 0 for any other byte (so that the default is "not a digit"). */
static const signed char CR_HEX1[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* cr_hex_digit - the value of a hex digit (either case), -1 for any other byte. */
static inline int cr_hex_digit(char c)
{
    return CR_HEX1[(unsigned char)c] - 1;
}

/* cr_parse_hex - the hex digits at the start of the n bytes at s (no "0x") into *out: the
 * number of digits read, 0 if there are none or more than 16 (wider than an address). */
static inline size_t cr_parse_hex(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    int d;
    while (i < n && (d = cr_hex_digit(s[i])) >= 0) {
        if (i == 16)
            return 0;
        v = (v << 4) | (uint64_t)d;
        i++;
    }
    *out = v;
    return i;
}

/* cr_parse_dec - the decimal digits at the start of the n bytes at s into *out: the number
 * of digits read, 0 if there are none or the value overflows 64 bits. */
static inline size_t cr_parse_dec(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
        i++;
    }
    *out = v;
    return i;
}

/* cr_regex_compile - a pattern of this folder (NUL-terminated, pcre2 syntax), JIT-compiled
 * where the platform allows (the interpreter serves where it does not); NULL if it does not
 * compile. Owned by the caller (pcre2_code_free); the parsers compile theirs once per
 * process. */
pcre2_code *cr_regex_compile(const char *pattern);

/* cr_regex_group - capture group g of the last match of md against s: *out and *n borrow
 * its span of s; false (outputs untouched) if the group did not take part in the match. */
static inline bool cr_regex_group(pcre2_match_data *md, int g, const char *s, const char **out,
                                  size_t *n)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    if (ov[2 * g] == PCRE2_UNSET)
        return false;
    *out = s + ov[2 * g];
    *n = ov[2 * g + 1] - ov[2 * g];
    return true;
}

#endif
