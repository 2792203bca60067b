/*
 * bench_samplebatch [--samples N] [--rounds R] [--reps K] - the sample batch parser alone, on
 * one core: a batch shaped as tests/bench/bench_samples.py posts them (N samples, default
 * 1,000, of 16 "0x..." frames over 5 images, a tag and a thread each) is read by
 * samplebatch_parse K times (default 100) per round, R rounds (default 3). Prints one JSON
 * line: the batch's bytes, the best round's CPU microseconds per batch and MB/s, the arena bytes
 * one parse leaves, and the process's peak RSS. Not a test (run it by hand, beside main's
 * build, alternating); the end-to-end rate is tests/bench/bench_samples.sh's.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/buf.h"
#include "samplebatch/samplebatch.h"

/* CPU seconds of this thread: on a shared machine, time spent waiting for a core is not the
 * parser's. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A batch of n samples into b (deterministic: the same bytes every run). */
static void make_batch(buf *b, int n)
{
    buf_append_str(b, "{\"format_version\":1,\"batch_id\":\"b1-d42\",\"app\":{\"name\":\"FixtureApp\","
                      "\"bundle_id\":\"com.example.fixture\",\"version\":\"1.0\",\"build\":\"101\"},"
                      "\"os\":{\"name\":\"iOS\",\"version\":\"17.4\",\"build\":\"21E219\"},"
                      "\"device\":{\"model\":\"iPhone15,2\",\"id\":\"device-0042\"},\"arch\":\"arm64\","
                      "\"images\":[");
    for (int i = 0; i < 5; i++)
        buf_printf(b, "%s{\"name\":\"Img%d\",\"uuid\":\"%08X-0000-4000-8000-%012X\",\"arch\":\"arm64\","
                   "\"load_address\":\"0x%llx\",\"size\":4194304,"
                   "\"path\":\"/System/Library/Frameworks/Img%d.framework/Img%d\"}",
                   i ? "," : "", i, 0xA0 + i, 0x5D + i, 0x100000000ull + 0x10000000ull * (unsigned)i, i, i);
    buf_append_str(b, "],\"samples\":[");
    uint64_t x = 13;
    for (int s = 0; s < n; s++) {
        buf_printf(b, "%s{\"tag\":\"CLLocationManager.requestLocation\",\"thread\":\"main\",\"frames\":[",
                   s ? "," : "");
        for (int k = 0; k < 16; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;   /* an LCG: no libc rand */
            buf_printf(b, "%s\"0x%llx\"", k ? "," : "",
                       0x100000000ull + 0x10000000ull * (unsigned)(k % 5) + ((x >> 33) & 0xFFFFF));
        }
        buf_printf(b, "],\"count\":%d}", 1 + (int)((x >> 40) % 3));
    }
    buf_append_str(b, "]}");
}

int main(int argc, char **argv)
{
    int samples = 1000, rounds = 3, reps = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--samples") == 0 && v > 0)
            samples = v;
        else if (strcmp(argv[i], "--rounds") == 0 && v > 0)
            rounds = v;
        else if (strcmp(argv[i], "--reps") == 0 && v > 0)
            reps = v;
        else {
            fprintf(stderr, "usage: bench_samplebatch [--samples N] [--rounds R] [--reps K]\n");
            return 2;
        }
    }
    buf doc;
    buf_init(&doc);
    make_batch(&doc, samples);
    double best = 0;
    size_t used = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        for (int k = 0; k < reps; k++) {
            arena *a = arena_new(0);
            char field[SAMPLEBATCH_FIELD_MAX];
            err_info err = {0};
            samplebatch *b;
            if (samplebatch_parse(&b, field, (const char *)doc.data, doc.len, SAMPLEBATCH_SENT, a,
                                  &err) != ERR_OK) {
                fprintf(stderr, "bench_samplebatch: %s\n", err.msg);
                return 1;
            }
            used = arena_used(a);
            arena_free(a);
        }
        double t = (now_s() - t0) / reps;
        if (best == 0 || t < best)
            best = t;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"bench\":\"samplebatch\",\"batch_bytes\":%zu,\"samples\":%d,\"us_per_batch\":%.1f,"
           "\"mb_per_s\":%.1f,\"arena_bytes\":%zu,\"rss_peak_kb\":%ld}\n",
           doc.len, samples, best * 1e6, (double)doc.len / best / 1e6, used, ru.ru_maxrss);
    buf_reset(&doc);
    return 0;
}
