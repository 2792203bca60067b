#include "base/err.h"

#include "base/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A message quotes what came from outside and is cut at a byte count: it must stay UTF-8
 * (it goes into JSON answers, logs and text columns), base/utf8's rule. */
static void msg_repair(char *msg, size_t cap)
{
    size_t n = strlen(msg);
    if (utf8_valid(msg, n))
        return;
    char tmp[sizeof ((err_info *)0)->msg];
    utf8_repair(tmp, cap < sizeof tmp ? cap : sizeof tmp, msg);
    memcpy(msg, tmp, strlen(tmp) + 1);
}

err_code err_set(err_info *err, err_code code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    msg_repair(err->msg, sizeof err->msg);
    return code;
}

err_code err_prefix(err_info *err, const char *fmt, ...)
{
    char prefix[128], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* truncation is fine: the message stays one line and NUL-terminated */
    size_t n = strlen(prefix);
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t rest = sizeof err->msg - n - 3;
    size_t old_len = strnlen(old, rest);
    memcpy(err->msg + n + 2, old, old_len);
    err->msg[n + 2 + old_len] = '\0';
    msg_repair(err->msg, sizeof err->msg);
    return err->code;
}

const char *err_name(err_code code)
{
#define ERR_AS_CASE(c, name) \
    case c:                  \
        return name;
    switch (code) {
        ERR_CODES(ERR_AS_CASE)
    }
#undef ERR_AS_CASE
    return "internal";
}

void err_clear(err_info *err)
{
    err->code = ERR_OK;
    err->msg[0] = '\0';
}
