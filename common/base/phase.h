/*
 * phase - per-phase timing of long jobs (the symcache build), for finding where time and
 * memory go. Off unless the environment variable STACKSIFT_PHASES is set (to anything
 * non-empty); then each phase_mark prints one line to stderr:
 *   phase debuginfo.walk: 612.3 ms wall, 1190.0 ms cpu (user+sys, all threads), 41.2 ms sys, 20480 faults
 * figures counted since the previous mark of the same clock. Costs one getenv at phase_start
 * when off.
 */
#ifndef STACKSIFT_BASE_PHASE_H
#define STACKSIFT_BASE_PHASE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool on;
    double wall_ms, user_ms, sys_ms; /* at the previous mark */
    long minflt;                     /* minor page faults at the previous mark */
} phase_clock;

/* phase_start - start counting (reads STACKSIFT_PHASES once). */
void phase_start(phase_clock *c);

/* phase_mark - print what was spent since the previous mark, as phase `name`, and restart
 * the count; a no-op when tracing is off. */
void phase_mark(phase_clock *c, const char *name);

#endif
