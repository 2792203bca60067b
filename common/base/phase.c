#include "base/phase.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static void sample(phase_clock *c)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    c->wall_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    c->user_ms = (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3;
    c->sys_ms = (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
    c->minflt = ru.ru_minflt;
}

void phase_start(phase_clock *c)
{
    const char *e = getenv("STACKSIFT_PHASES");
    c->on = e != NULL && e[0] != '\0';
    if (c->on)
        sample(c);
}

void phase_mark(phase_clock *c, const char *name)
{
    if (!c->on)
        return;
    phase_clock now;
    sample(&now);
    fprintf(stderr, "phase %s: %.1f ms wall, %.1f ms cpu, %.1f ms sys, %ld faults\n", name,
            now.wall_ms - c->wall_ms, now.user_ms + now.sys_ms - c->user_ms - c->sys_ms,
            now.sys_ms - c->sys_ms, now.minflt - c->minflt);
    now.on = true;
    *c = now;
}
