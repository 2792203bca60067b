/*
 * err - the one error vocabulary of stacksift.
 *
 * Expected failures (bad input, missing file, database down) return an err_code and fill an
 * err_info with one line: lower case, no final period, what was attempted, why, the value.
 * Misuse (a forbidden NULL, a broken invariant) is an assert, not an err_code.
 */
#ifndef STACKSIFT_BASE_ERR_H
#define STACKSIFT_BASE_ERR_H

#define ERR_CODES(X)                                                                              \
    X(ERR_OK, "ok")                                                                               \
    X(ERR_INVALID, "invalid_input")                                                               \
    X(ERR_UNSUPPORTED, "unsupported")                                                             \
    X(ERR_NOT_FOUND, "not_found")                                                                 \
    X(ERR_TOO_LARGE, "too_large")                                                                 \
    X(ERR_IO, "io_error")                                                                         \
    X(ERR_STORE, "store_unavailable")                                                             \
    X(ERR_UNAUTHORIZED, "unauthorized")                                                           \
    X(ERR_FORBIDDEN, "forbidden")                                                                 \
    X(ERR_CONFLICT, "conflict")                                                                   \
    X(ERR_INTERNAL, "internal")                                                                   \
    X(ERR_OUTDATED, "outdated")                                                                   \
    X(ERR_BUSY, "busy")

/* ERR_BUSY: a bounded resource is full for now (a node's disk spool while the database is
 * unreachable); the client should retry later (HTTP 429 with Retry-After). */
/* ERR_OUTDATED: a derived file (a .symc) was written by an older format version that this
 * build no longer reads; rebuild it from its source (the stored dSYM), do not retry as is. */
#define ERR_AS_ENUM(code, name) code,
typedef enum { ERR_CODES(ERR_AS_ENUM) } err_code;
#undef ERR_AS_ENUM

typedef struct {
    err_code code; /* ERR_OK until err_set is called */
    char msg[256]; /* one line, NUL-terminated, truncated if longer */
} err_info;

/* err_set - record `code` and a printf-formatted message in `err` (may be NULL); returns code. */
err_code err_set(err_info *err, err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* err_prefix - prepend "prefix: " to err->msg (context added by a caller); returns err->code. */
err_code err_prefix(err_info *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* err_name - stable snake_case name of `code`, for JSON bodies and logs; never NULL. */
const char *err_name(err_code code);

/* err_clear - reset `err` to ERR_OK with an empty message. */
void err_clear(err_info *err);

#endif
