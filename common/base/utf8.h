/*
 * utf8 - checking and repairing UTF-8 (RFC 3629: no overlongs, no surrogates, nothing past
 * U+10FFFF). For text that came from outside and goes into JSON or a database.
 */
#ifndef STACKSIFT_BASE_UTF8_H
#define STACKSIFT_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* utf8_seq_len - bytes in the valid UTF-8 sequence starting at s (n bytes readable, n >= 1),
 * 1 for ASCII; 0 if s[0] does not start a valid sequence. */
size_t utf8_seq_len(const char *s, size_t n);

/* utf8_valid - true if the n bytes at s are valid UTF-8 throughout (NUL counts as valid). */
bool utf8_valid(const char *s, size_t n);

/* utf8_encode - code point `cp` (< 0x110000, no surrogate: the caller has checked) as UTF-8
 * in out[0..3]; returns the bytes written, 1 to 4. */
size_t utf8_encode(char out[4], unsigned cp);

/* utf8_repair - write `s` (a C string) to out[cap] as valid UTF-8, each byte that does not
 * start a valid sequence replaced by U+FFFD; cut at a character boundary so that the result
 * and its NUL fit. Returns out. cap >= 4. */
char *utf8_repair(char *out, size_t cap, const char *s);

#endif
