/*
 * bench_lookup SYMC ADDRS [ROUNDS] - in-process symcache_lookup rate on one core.
 *
 * Opens SYMC, reads the file addresses in ADDRS (hex, one per line, in that order), then:
 *   cold   one pass over them on a freshly opened symcache (name blocks decompressed as they
 *          are first touched)
 *   warm   ROUNDS (default 5) more passes; the fastest counts (the machine is shared)
 *   sorted the same addresses in address order, as `stacksift lookup` answers a batch (and as
 *          a crash report's frames cluster): neighbouring lookups share cache lines
 *   lookup_many  warm and sorted again through symcache_lookup_many, 256 addresses a call
 *          (its frames must add up to symcache_lookup's)
 * Every pass asks for all frames (inline chain) and reads every frame's function name and
 * source path, so what a caller would print was really found. Prints one line:
 *   bench_lookup: N addresses, F frames/pass; cold X lookups/s; warm Y lookups/s; sorted Z lookups/s;
 *   lookup_many random A lookups/s, address order B lookups/s (1 thread)
 * where a second is a second of this thread's CPU time.
 * Not a test: tests/bench/symbolication.sh prints it beside llvm-symbolizer's rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symcache/symcache.h"

/* CPU time of this thread: the figure is per core, and the machine is shared (wall time
 * would count other processes' turns). */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* One pass: returns frames found; *sink accumulates name and path bytes so nothing is optimized
 * out. */
static size_t pass(const symcache *sc, const uint64_t *addrs, size_t n, size_t *sink)
{
    symcache_frame f[SYMCACHE_MAX_FRAMES];
    size_t frames = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = symcache_lookup(f, SYMCACHE_MAX_FRAMES, sc, addrs[i]);
        frames += k;
        for (size_t j = 0; j < k; j++)
            *sink += (unsigned char)f[j].function[0] + (f[j].file != NULL ? (unsigned char)f[j].file[0] : 0u);
    }
    return frames;
}

/* The same pass through symcache_lookup_many, BATCH_ADDRS addresses a call (as a caller with a
 * report or a stdin batch would), every frame read the same way. */
#define BATCH_ADDRS 256
#define BATCH_FRAMES (BATCH_ADDRS * 8)

static size_t pass_many(const symcache *sc, const uint64_t *addrs, size_t n, size_t *sink)
{
    static symcache_frame f[BATCH_FRAMES];
    static size_t ends[BATCH_ADDRS];
    size_t frames = 0;
    for (size_t i = 0; i < n;) {
        size_t m = n - i < BATCH_ADDRS ? n - i : BATCH_ADDRS;
        size_t got = symcache_lookup_many(f, BATCH_FRAMES, ends, sc, addrs + i, m);
        size_t k = got > 0 ? ends[got - 1] : 0;
        for (size_t j = 0; j < k; j++)
            *sink += (unsigned char)f[j].function[0] + (f[j].file != NULL ? (unsigned char)f[j].file[0] : 0u);
        frames += k;
        i += got; /* got > 0: BATCH_FRAMES holds any one address's frames */
    }
    return frames;
}

typedef size_t (*pass_fn)(const symcache *sc, const uint64_t *addrs, size_t n, size_t *sink);

/* The fastest of `rounds` passes, in seconds; *frames gets the frames of one pass. */
static double best_of(pass_fn fn, int rounds, const symcache *sc, const uint64_t *addrs, size_t n, size_t *sink,
                      size_t *frames)
{
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        *frames = fn(sc, addrs, n, sink);
        double t = now_s() - t0;
        if (r == 0 || t < best)
            best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: bench_lookup SYMC ADDRS [ROUNDS]\n");
        return 2;
    }
    int rounds = argc == 4 ? atoi(argv[3]) : 5;
    FILE *f = fopen(argv[2], "r");
    if (f == NULL) {
        fprintf(stderr, "bench_lookup: cannot open %s\n", argv[2]);
        return 2;
    }
    size_t n = 0, cap = 1024;
    uint64_t *addrs = malloc(cap * sizeof *addrs);
    char line[128];
    while (addrs != NULL && fgets(line, sizeof line, f) != NULL) {
        char *end;
        uint64_t a = strtoull(line, &end, 16);
        if (end == line)
            continue;
        if (n == cap) {
            uint64_t *more = realloc(addrs, (cap *= 2) * sizeof *addrs);
            if (more == NULL)
                break;
            addrs = more;
        }
        addrs[n++] = a;
    }
    fclose(f);
    if (addrs == NULL || n == 0) {
        fprintf(stderr, "bench_lookup: no addresses in %s\n", argv[2]);
        free(addrs);
        return 2;
    }
    symcache *sc = NULL;
    err_info err = {0};
    if (symcache_open(&sc, argv[1], &err) != ERR_OK) {
        fprintf(stderr, "bench_lookup: %s\n", err.msg);
        free(addrs);
        return 2;
    }
    size_t sink = 0, frames = 0, again = 0;
    double t0 = now_s();
    frames = pass(sc, addrs, n, &sink);
    double cold = now_s() - t0;
    double warm = best_of(pass, rounds, sc, addrs, n, &sink, &again);
    double many = best_of(pass_many, rounds, sc, addrs, n, &sink, &again);
    if (rounds > 0 && again != frames) {
        fprintf(stderr, "bench_lookup: symcache_lookup_many found %zu frames, symcache_lookup %zu\n", again, frames);
        return 1;
    }
    qsort(addrs, n, sizeof *addrs, cmp_u64);
    double sorted = best_of(pass, rounds, sc, addrs, n, &sink, &again);
    double many_sorted = best_of(pass_many, rounds, sc, addrs, n, &sink, &again);
#define RATE(t) (rounds > 0 ? (double)n / (t) : 0.0)
    printf("bench_lookup: %zu addresses, %zu frames/pass; cold %.0f lookups/s; warm %.0f lookups/s; sorted %.0f "
           "lookups/s; lookup_many random %.0f lookups/s, address order %.0f lookups/s (1 thread)%s\n",
           n, frames, (double)n / cold, RATE(warm), RATE(sorted), RATE(many), RATE(many_sorted),
           sink == 0 ? " (no frames)" : "");
    symcache_close(sc);
    free(addrs);
    return frames > 0 ? 0 : 1;
}
