/*
 * bench_demangle FILE [FLAGS] - names/s of common/demangle over FILE (one name per line), best
 * of 5 rounds of at least 0.3 s each. FLAGS: "simplified" for the atos form. Prints
 * "names=N demangled=D names_per_s=R". Run by tests/bench/demangle.sh beside c++filt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demangle/demangle.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_demangle FILE [simplified]\n");
        return 2;
    }
    unsigned flags = argc > 2 && strcmp(argv[2], "simplified") == 0 ? DEMANGLE_SIMPLIFIED : 0;
    FILE *f = fopen(argv[1], "r");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) > 0) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '\0')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            names = realloc(names, cap * sizeof *names);
            if (names == NULL)
                return 1;
        }
        names[n++] = strdup(line);
    }
    free(line);
    fclose(f);
    size_t demangled = 0;
    double best = 0;
    for (int round = 0; round < 5; round++) {
        size_t done = 0;
        double t0 = now_s(), t;
        do {
            demangled = 0;
            for (size_t i = 0; i < n; i++) {
                char *d = demangle_name(names[i], flags);
                demangled += d != NULL;
                free(d);
            }
            done += n;
            t = now_s() - t0;
        } while (t < 0.3);
        double rate = (double)done / t;
        if (rate > best)
            best = rate;
    }
    printf("names=%zu demangled=%zu names_per_s=%.0f\n", n, demangled, best);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return 0;
}
