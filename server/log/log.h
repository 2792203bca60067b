/*
 * log - the server's structured log: one JSON object per line on stderr (STYLE §9).
 *
 *   log_event(LOG_INFO, "request", "req=%s route=%s status=%u dur_ms=%.2f", id, route, st, ms);
 *   {"ts":"2026-01-07T10:31:02.114Z","level":"info","event":"request","req":"9f3a",...}
 *
 * `fields` is a space-separated list of key=%conv pairs, checked by the compiler like a
 * printf format. %s becomes a JSON string (escaped; NULL becomes null), %d %u %ld %lu %lld
 * %llu %zu %zd %f %g (with optional precision) become JSON numbers. Each line is written with
 * one write(2), so lines from threads never interleave. Only server/ logs; common/ reports
 * through err_info.
 */
#ifndef STACKSIFT_LOG_LOG_H
#define STACKSIFT_LOG_LOG_H

enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* log_set_level - drop events below `level` (LOG_*); default LOG_INFO. */
void log_set_level(int level);

/* log_set_fd - write lines to `fd` instead of 2 (tests). */
void log_set_fd(int fd);

/* log_level_parse - "debug", "info", "warn", "error" -> LOG_*; -1 otherwise. */
int log_level_parse(const char *name);

/* log_event - write one line; `fields` may be NULL or "". */
void log_event(int level, const char *event, const char *fields, ...)
    __attribute__((format(printf, 3, 4)));

#endif
