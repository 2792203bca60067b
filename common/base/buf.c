#include "base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/xalloc.h"

void buf_init(buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
}

void buf_reset(buf *b)
{
    free(b->data);
    buf_init(b);
}

void buf_reserve(buf *b, size_t extra)
{
    if (b->cap - b->len > extra)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= extra)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf_append(buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

void buf_append_str(buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_putc(buf *b, char c)
{
    buf_append(b, &c, 1);
}

void buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_append_u32le(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_append(b, x, 4);
}

void buf_append_u64le(buf *b, uint64_t v)
{
    buf_append_u32le(b, (uint32_t)v);
    buf_append_u32le(b, (uint32_t)(v >> 32));
}

/* Bytes a JSON string holds as they are: printable ASCII but '"' (0x22) and '\\' (0x5c). */
static const bool JSON_PLAIN[256] = {
    [0x20 ... 0x21] = true, [0x23 ... 0x5b] = true, [0x5d ... 0x7f] = true,
};

/* The end of the run of JSON_PLAIN bytes of p[i..n): eight at a time, then one by one. */
static size_t plain_run(const unsigned char *p, size_t i, size_t n)
{
    for (uint64_t w; n - i >= 8 && (memcpy(&w, p + i, 8), utf8_json_plain8(w));)
        i += 8;
    while (i < n && JSON_PLAIN[p[i]])
        i++;
    return i;
}

void buf_append_json_str(buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    buf_reserve(b, n + 2);
    /* most strings (names, paths) need no escaping: quoted in one copy into the room above */
    size_t plain = plain_run(p, 0, n);
    if (plain == n) {
        char *d = (char *)b->data + b->len;
        d[0] = '"';
        memcpy(d + 1, s, n);
        d[n + 1] = '"';
        b->len += n + 2;
        b->data[b->len] = 0;
        return;
    }
    buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        /* copy the run of bytes that need no escaping in one go */
        size_t run = plain_run(p, i, n);
        if (run > i) {
            buf_append(b, p + i, run - i);
            i = run;
            continue;
        }
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            buf_append(b, esc, 2);
            i++;
        } else if (c == '\n') {
            buf_append(b, "\\n", 2), i++;
        } else if (c == '\t') {
            buf_append(b, "\\t", 2), i++;
        } else if (c == '\r') {
            buf_append(b, "\\r", 2), i++;
        } else if (c < 0x20) {
            buf_printf(b, "\\u%04x", c), i++;
        } else {
            size_t len = utf8_seq_len(s + i, n - i);
            if (len == 0) {
                buf_printf(b, "\\u%04x", c); /* keep the byte visible, stay valid JSON */
                i++;
            } else {
                buf_append(b, p + i, len);
                i += len;
            }
        }
    }
    buf_putc(b, '"');
}
