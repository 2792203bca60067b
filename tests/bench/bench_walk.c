/*
 * bench_walk DUMP [SYMC...] [--rounds N] - walking and symbolicating a minidump in one process,
 * as the server's workers do it (a long-running process: no start-up, symcaches already open).
 *
 * Opens each SYMC (a symcache: `stacksift symcache build` output), then ROUNDS times (default
 * 200): reads DUMP from memory (minidump_parse), takes each module's unwind info from the
 * symcache of its UUID (symcache_unwind_image; its symbols bound the stack scan), walks every
 * thread (unwind_walk), looks every frame up (frame 0 at its pc, callers at their call
 * instruction) and writes the frames as JSON, as `stacksift minidump walk --json` prints them.
 * Prints one line of JSON:
 *   {"bench":"walk","threads":T,"frames":F,"json_bytes":B,"rounds":N,"min_us":..,"median_us":..}
 * where a microsecond is one of this thread's CPU time (the machine is shared). Exit 1 when the
 * dump or a symcache cannot be read.
 * Not a test: tests/bench/bench_minidump.py sets it beside minidump_stackwalk's time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "base/jsonw.h"
#include "minidump/minidump.h"
#include "symbolicate/symbolicate.h"
#include "symcache/symcache.h"
#include "unwind/walk.h"

#define MAX_SYMCACHES 64

static double cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const symcache *symcache_of(symcache *const *scs, size_t n, const minidump_module *m)
{
    for (size_t i = 0; m->has_uuid && i < n; i++)
        if (memcmp(symcache_uuid(scs[i]), m->uuid, 16) == 0)
            return scs[i];
    return NULL;
}

/* One walk: the dump's threads walked and symbolicated into `out`. Returns frames written, or
 * -1 when the dump cannot be read. */
static long walk_once(buf *out, size_t *threads, const bytes *dump, symcache *const *scs, size_t nscs)
{
    long nframes = -1;
    arena *a = arena_new(0);
    err_info err = {0};
    minidump *md;
    if (minidump_parse(&md, dump->data, dump->len, a, &err) != ERR_OK) {
        fprintf(stderr, "bench_walk: %s\n", err.msg);
        goto done;
    }
    unwind_image *images = arena_alloc_array(a, md->nmodules ? md->nmodules : 1, sizeof *images, &err);
    if (images == NULL)
        goto done;
    size_t nimages = 0;
    for (size_t i = 0; i < md->nmodules; i++) {
        const symcache *c = symcache_of(scs, nscs, &md->modules[i]);
        if (c == NULL)
            continue;
        symcache_scan_image(&images[nimages++], c, &err); /* a corrupt section: symbols only */
    }
    const char *arch = minidump_arch_name(md->system.arch);
    jsonw j;
    jsonw_init(&j, out);
    jsonw_array_begin(&j);
    nframes = 0;
    *threads = 0;
    symcache_frame syms[SYMCACHE_MAX_FRAMES];
    unwind_walker *walker = NULL;   /* one per dump, as the server's workers have */
    if (unwind_walker_new(&walker, md, images, nimages, NULL, NULL, a, &err) != ERR_OK)
        walker = NULL;
    for (size_t ti = 0; ti < md->nthreads; ti++) {
        const minidump_thread *t = &md->threads[ti];
        if (md->has_dump_thread_id && t->thread_id == md->dump_thread_id)
            continue;
        bool crashed = md->exception.present && md->exception.thread_id == t->thread_id;
        const minidump_context *ctx = crashed && md->exception.context.arch != MINIDUMP_ARCH_UNKNOWN
                                          ? &md->exception.context : &t->context;
        unwind_frame *frames = NULL;
        size_t n = 0;
        err_info werr = {0};
        if (walker == NULL || unwind_walker_walk(&frames, &n, walker, ctx, &werr) != ERR_OK)
            n = 0;
        (*threads)++;
        jsonw_array_begin(&j);
        for (size_t k = 0; k < n; k++) {
            const unwind_frame *f = &frames[k];
            const minidump_module *m = f->module >= 0 ? &md->modules[f->module] : NULL;
            const symcache *c = m ? symcache_of(scs, nscs, m) : NULL;
            size_t ns = 0;
            if (c != NULL) {
                uint64_t addr = k == 0 ? f->pc : symbolicate_caller_addr(f->pc, arch);
                ns = symcache_lookup(syms, SYMCACHE_MAX_FRAMES, c,
                                     addr - m->load_addr + symcache_text_vmaddr(c));
            }
            symbolicate_walk_frame_write(&j, md, f, syms, ns);
            nframes++;
        }
        jsonw_array_end(&j);
    }
    jsonw_array_end(&j);
done:
    arena_free(a);
    return nframes;
}

int main(int argc, char **argv)
{
    int status = 1;
    const char *dump_path = NULL;
    const char *paths[MAX_SYMCACHES];
    symcache *scs[MAX_SYMCACHES];
    size_t npaths = 0, nscs = 0;
    long rounds = 200;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = strtol(argv[++i], NULL, 10);
        else if (dump_path == NULL)
            dump_path = argv[i];
        else if (npaths < MAX_SYMCACHES)
            paths[npaths++] = argv[i];
    }
    if (dump_path == NULL || rounds < 1) {
        fprintf(stderr, "usage: bench_walk DUMP [SYMC...] [--rounds N]\n");
        return 2;
    }
    bytes dump = {0};
    err_info err = {0};
    double *us = calloc((size_t)rounds, sizeof *us);
    buf out;
    buf_init(&out);
    if (us == NULL || bytes_map_file(&dump, dump_path, &err) != ERR_OK) {
        fprintf(stderr, "bench_walk: %s: %s\n", dump_path, us ? err.msg : "out of memory");
        goto done;
    }
    for (size_t i = 0; i < npaths; i++) {
        if (symcache_open(&scs[nscs], paths[i], &err) != ERR_OK) {
            fprintf(stderr, "bench_walk: %s: %s\n", paths[i], err.msg);
            goto done;
        }
        nscs++;
    }
    long frames = 0;
    size_t threads = 0, json_bytes = 0;
    for (long r = 0; r < rounds; r++) {
        out.len = 0;
        double t0 = cpu_us();
        frames = walk_once(&out, &threads, &dump, scs, nscs);
        us[r] = cpu_us() - t0;
        if (frames < 0)
            goto done;
        json_bytes = out.len;
    }
    qsort(us, (size_t)rounds, sizeof *us, cmp_double);
    printf("{\"bench\":\"walk\",\"threads\":%zu,\"frames\":%ld,\"json_bytes\":%zu,\"rounds\":%ld,"
           "\"min_us\":%.1f,\"median_us\":%.1f}\n",
           threads, frames, json_bytes, rounds, us[0], us[rounds / 2]);
    status = 0;
done:
    for (size_t i = 0; i < nscs; i++)
        symcache_close(scs[i]);
    buf_reset(&out);
    bytes_unmap(&dump);
    free(us);
    return status;
}
