/*
 * utf8 - checking and repairing UTF-8 (RFC 3629: no overlongs, no surrogates, nothing past
 * U+10FFFF). For text that came from outside and goes into JSON or a database.
 *
 * The one rule for text that is not UTF-8 (utf8_sanitize, utf8_repair): each invalid
 * sequence becomes U+FFFD, where a sequence is the "maximal subpart" of Unicode's section
 * 3.9 ("U+FFFD Substitution of Maximal Subparts"): a byte that starts no sequence is one, and
 * a lead byte with the continuation bytes that could still have completed it is one. That is
 * what the WHATWG decoder, ICU and Python's bytes.decode("utf-8", "replace") do, so a client
 * can compute what it will be shown. Valid text is never copied.
 */
#ifndef STACKSIFT_BASE_UTF8_H
#define STACKSIFT_BASE_UTF8_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "base/arena.h"
#include "base/err.h"

/* utf8_seq_len - bytes in the valid UTF-8 sequence starting at s (n bytes readable, n >= 1),
 * 1 for ASCII; 0 if s[0] does not start a valid sequence. */
size_t utf8_seq_len(const char *s, size_t n);

/* utf8_bad_len - where utf8_seq_len(s, n) is 0: the bytes of the invalid sequence there (its
 * maximal subpart, 1 to 3), which one U+FFFD replaces. */
size_t utf8_bad_len(const char *s, size_t n);

/* utf8_invalid_at - offset of the first byte of s[0..n) that starts no valid sequence, n if
 * all of it is valid UTF-8 (NUL counts as valid). ASCII runs go 8 bytes a step. */
size_t utf8_invalid_at(const char *s, size_t n);

/* utf8_valid - true if the n bytes at s are valid UTF-8 throughout (NUL counts as valid). */
bool utf8_valid(const char *s, size_t n);

/* utf8_encode - code point `cp` (< 0x110000, no surrogate: the caller has checked) as UTF-8
 * in out[0..3]; returns the bytes written, 1 to 4. */
size_t utf8_encode(char out[4], unsigned cp);

/*
 * utf8_sanitize - the `n` bytes at s as valid UTF-8: s itself when they are (nothing copied:
 * one utf8_invalid_at pass), else a NUL-terminated copy in `a` with each invalid sequence
 * replaced by U+FFFD (EF BF BD). Bytes are otherwise kept as they are (NUL included).
 * *out_len (may be NULL) gets the result's length.
 * Errors  NULL + ERR_TOO_LARGE when the arena's budget runs out.
 */
const char *utf8_sanitize(size_t *out_len, const char *s, size_t n, arena *a, err_info *err);

/* utf8_repair - write `s` (a C string) to out[cap] as valid UTF-8, each invalid sequence
 * replaced by U+FFFD as utf8_sanitize does; cut at a character boundary so that the result
 * and its NUL fit. Returns out. cap >= 4. */
char *utf8_repair(char *out, size_t cap, const char *s);

/* utf8_json_plain8 - whether each of the 8 bytes of `w` (any byte order) is ASCII that a JSON
 * string holds as it is: none is '"' or '\\', below 0x20 or above 0x7f (RFC 8259 section 7).
 * The zero-byte and less-than tests of "Bit Twiddling Hacks" (haszero, hasless) on each kind:
 * a borrow starts only at a byte that matches, so a word without one is never taken for one
 * with one. For scanning a string eight bytes a step. */
static inline bool utf8_json_plain8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');
    uint64_t stop = ((quote - ones) & ~quote) | ((bslash - ones) & ~bslash) |
                    ((w - ones * 0x20) & ~w) | w;
    return (stop & highs) == 0;
}

#endif
