/*
 * log - JSON lines on stderr. See log.h for the field format.
 */
#include "log/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"

static atomic_int log_min_level = LOG_INFO;
static atomic_int log_fd = 2;

static const char *const LEVEL_NAMES[] = {"debug", "info", "warn", "error"};

void log_set_level(int level)
{
    atomic_store(&log_min_level, level);
}

void log_set_fd(int fd)
{
    atomic_store(&log_fd, fd);
}

int log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, LEVEL_NAMES[i]) == 0)
            return i;
    return -1;
}

/* Append one "key": value pair for the conversion at *p (just after '%'); advances *p. */
static void log_append_value(buf *b, const char **p, va_list *ap)
{
    const char *s = *p;
    int precision = -1, longs = 0, size_t_arg = 0;
    if (*s == '.') {
        precision = 0;
        for (s++; *s >= '0' && *s <= '9'; s++)
            precision = precision * 10 + (*s - '0');
    }
    for (; *s == 'l'; s++)
        longs++;
    if (*s == 'z') {
        size_t_arg = 1;
        s++;
    }
    char conv = *s ? *s++ : 's';
    *p = s;
    switch (conv) {
    case 's': {
        const char *v = va_arg(*ap, const char *);
        if (v)
            buf_append_json_str(b, v, strlen(v));
        else
            buf_append_str(b, "null");
        break;
    }
    case 'd':
    case 'i':
        if (size_t_arg)
            buf_printf(b, "%zd", va_arg(*ap, ssize_t));
        else if (longs >= 2)
            buf_printf(b, "%lld", va_arg(*ap, long long));
        else if (longs == 1)
            buf_printf(b, "%ld", va_arg(*ap, long));
        else
            buf_printf(b, "%d", va_arg(*ap, int));
        break;
    case 'u':
        if (size_t_arg)
            buf_printf(b, "%zu", va_arg(*ap, size_t));
        else if (longs >= 2)
            buf_printf(b, "%llu", va_arg(*ap, unsigned long long));
        else if (longs == 1)
            buf_printf(b, "%lu", va_arg(*ap, unsigned long));
        else
            buf_printf(b, "%u", va_arg(*ap, unsigned));
        break;
    case 'f':
    case 'g': {
        double v = va_arg(*ap, double);
        if (v != v || v > 1e300 || v < -1e300)   /* NaN and inf are not JSON */
            buf_append_str(b, "null");
        else if (conv == 'f')
            buf_printf(b, "%.*f", precision < 0 ? 3 : precision, v);
        else
            buf_printf(b, "%g", v);
        break;
    }
    default:
        buf_append_str(b, "null");   /* the format attribute rejects these at compile time */
        break;
    }
}

void log_event(int level, const char *event, const char *fields, ...)
{
    if (level < atomic_load(&log_min_level))
        return;
    if (level < LOG_DEBUG || level > LOG_ERROR)
        level = LOG_ERROR;

    struct timeval tv;
    struct tm tm;
    char ts[96];   /* room for any int the compiler imagines in the fields */
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(tv.tv_usec / 1000));

    buf b;
    buf_init(&b);
    buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"event\":", ts, LEVEL_NAMES[level]);
    buf_append_json_str(&b, event, strlen(event));

    va_list ap;
    va_start(ap, fields);
    const char *p = fields ? fields : "";
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *key = p;
        while (*p && *p != '=' && *p != ' ')
            p++;
        size_t key_len = (size_t)(p - key);
        buf_putc(&b, ',');
        buf_append_json_str(&b, key, key_len);
        buf_putc(&b, ':');
        if (p[0] == '=' && p[1] == '%') {
            p += 2;
            log_append_value(&b, &p, &ap);
        } else {
            buf_append_str(&b, "null");   /* a key without a value: keep the line valid */
            if (*p == '=')
                p++;
        }
        while (*p && *p != ' ')   /* literal text after a conversion is not part of JSON */
            p++;
    }
    va_end(ap);
    buf_append_str(&b, "}\n");

    /* One write per line: POSIX keeps writes to one file from interleaving for pipes up to
     * PIPE_BUF and, in practice, for regular files opened O_APPEND. */
    size_t off = 0;
    int fd = atomic_load(&log_fd);
    while (off < b.len) {
        ssize_t n = write(fd, b.data + off, b.len - off);
        if (n <= 0)
            break;   /* nowhere left to report a failed log write */
        off += (size_t)n;
    }
    buf_reset(&b);
}
