/*
 * buf - a growable byte buffer on the heap (xalloc: never fails), for writers and output.
 */
#ifndef STACKSIFT_BASE_BUF_H
#define STACKSIFT_BASE_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data; /* `len` bytes, always followed by a NUL so text can be used as a C string */
    size_t len;    /* bytes written */
    size_t cap;    /* bytes allocated */
} buf;

void buf_init(buf *b);                                  /* empty buffer; free with buf_reset */
void buf_reset(buf *b);                                 /* free the memory; *b is empty again */
void buf_reserve(buf *b, size_t extra);                 /* room for `extra` more bytes + NUL */
void buf_append(buf *b, const void *p, size_t n);
void buf_append_str(buf *b, const char *s);
void buf_putc(buf *b, char c);
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_append_u32le(buf *b, uint32_t v);
void buf_append_u64le(buf *b, uint64_t v);
/* buf_append_json_str - append `s` (n bytes) as a JSON string literal, quotes included;
 * control characters and invalid UTF-8 bytes are escaped as \u00XX. */
void buf_append_json_str(buf *b, const char *s, size_t n);

#endif
