/*
 * stacksift minidump walk [--json] [--symcache-dir DIR]... DUMP [DEBUG_FILE...]
 *
 * Reads a minidump (common/minidump), walks every thread's stack (common/unwind: compact
 * unwind of the executables and dylibs given, frame pointers, stack scan) and prints the
 * frames, symbolicated with the debug files given. A DEBUG_FILE is a dSYM bundle, a zip or
 * directory of bundles, a Mach-O or a Breakpad .sym; each is built into a symcache
 * (dsym_build_symcaches), one per UUID: an executable or dylib gives its
 * `__TEXT,__unwind_info` and `__TEXT,__eh_frame` (the symcache's unwind section), a dSYM its
 * DWARF, a .sym its names, lines and STACK CFI ("BPC1"), and all given give one symcache
 * (DWARF wins over a .sym over a symbol table). --symcache-dir DIR adds DIR/<UUID>.symc files (the
 * server's stored symcaches, `stacksift symcache build` output), searched after the debug
 * files. The walk takes each module's unwind info from its symcache (symcache_unwind_image),
 * matched by UUID. The thread Breakpad's
 * handler ran on (BreakpadInfo's dump thread) is skipped. Frame 0 is looked up at its pc,
 * callers at their call instruction (symbolicate_caller_addr), as everywhere else.
 *
 * Text: one block per thread, one line per frame:
 *   Thread 0 (id 775, crashed)
 *    0  0x0000000109ba8c15  crash + 0xdc15  main (main.cpp:21)  [context]
 * --json: {"arch", "os", "exception": {...}, "notes": [...], "threads": [{"id", "name",
 * "crashed", "frames": [{"pc", "module", "uuid", "rel_addr", "found", "symbols": [{"function",
 * "file", "line"}, ...innermost first]}]}]}.
 * Exit 0, 1 when the dump or a debug file cannot be read, 2 on usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/bytes.h"
#include "base/jsonw.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/cli_symcaches.h"
#include "macho/macho.h"
#include "minidump/minidump.h"
#include "symbolicate/symbolicate.h"
#include "symcache/symcache.h"
#include "unwind/walk.h"

#define MAX_DEBUG_FILES 64

static void usage(FILE *f)
{
    fprintf(f, "usage: stacksift minidump walk [--json] [--symcache-dir DIR]... DUMP [DEBUG_FILE...]\n");
}

/* unwind_images - the unwind info of every module of the dump with a symcache
 * (symcache_unwind_image: compact unwind and __eh_frame of the executables and dylibs given,
 * a Breakpad .sym's STACK CFI; one symcache per UUID holds all of them and the dSYM's names),
 * or found in a --symcache-dir, and its symbols for the stack scan. *out in `a`. */
static err_code unwind_images(unwind_image **out, size_t *n, const minidump *md, cli_symcaches *sc,
                              arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    unwind_image *images = arena_alloc_array(a, md->nmodules ? md->nmodules : 1, sizeof *images, err);
    if (images == NULL)
        return ERR_TOO_LARGE;
    const char *arch = minidump_arch_name(md->system.arch);
    size_t k = 0;
    for (size_t i = 0; i < md->nmodules; i++) {
        if (!md->modules[i].has_uuid)
            continue;
        char uuid[37];
        macho_uuid_format(uuid, md->modules[i].uuid);
        const symcache *c = cli_symcaches_resolve(sc, uuid, arch);
        err_info uerr = {0};
        if (c == NULL)
            continue;
        /* no unwind info: its symbols still bound the stack scan */
        if (symcache_scan_image(&images[k], c, &uerr) != ERR_OK)
            fprintf(stderr, "stacksift minidump: %s: %s: unwind info skipped\n", uuid, uerr.msg);
        k++;
    }
    *out = images;
    *n = k;
    return ERR_OK;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The symbols of one frame, innermost first (0 when no symcache covers it). */
static size_t frame_symbols(symcache_frame *out, size_t cap, const minidump *md,
                            const unwind_frame *f, bool first, cli_symcaches *sc)
{
    if (f->module < 0 || !md->modules[f->module].has_uuid)
        return 0;
    const minidump_module *m = &md->modules[f->module];
    char uuid[37];
    macho_uuid_format(uuid, m->uuid);
    const char *arch = minidump_arch_name(md->system.arch);
    const symcache *c = cli_symcaches_resolve(sc, uuid, arch);
    if (c == NULL)
        return 0;
    uint64_t addr = first ? f->pc : symbolicate_caller_addr(f->pc, arch);
    return symcache_lookup(out, cap, c, addr - m->load_addr + symcache_text_vmaddr(c));
}

/* The context a thread is walked from: the exception's for the crashed thread. */
static const minidump_context *thread_context(const minidump *md, const minidump_thread *t,
                                              bool *crashed)
{
    *crashed = md->exception.present && md->exception.thread_id == t->thread_id;
    if (*crashed && md->exception.context.arch != MINIDUMP_ARCH_UNKNOWN)
        return &md->exception.context;
    return &t->context;
}

static void print_exception_json(jsonw *j, const minidump *md)
{
    const minidump_exception *e = &md->exception;
    jsonw_key(j, "exception");
    if (!e->present) {
        jsonw_null(j);
        return;
    }
    jsonw_object_begin(j);
    jsonw_kuint(j, "thread_id", e->thread_id);
    jsonw_kstr(j, "type", e->wrapped ? "EXC_CRASH" : minidump_mach_exception_name(e->mach_type));
    jsonw_kstr(j, "original_type", e->wrapped ? minidump_mach_exception_name(e->mach_type) : NULL);
    jsonw_khex(j, "code", e->mach_code);
    jsonw_kstr(j, "signal", e->wrapped ? minidump_signal_name(e->signal) : NULL);
    jsonw_khex(j, "address", e->address);
    jsonw_object_end(j);
}

static int walk_dump(const char *dump_path, char **debug, int ndebug, char **dirs, int ndirs,
                     bool json)
{
    int status = 1;
    arena *a = arena_new(0);
    bytes b = {0};
    err_info err = {0};
    cli_symcaches sc;
    unwind_image *images = NULL;
    size_t nimages = 0;
    buf o;
    buf_init(&o);
    cli_symcaches_init(&sc);
    minidump *md;
    if (bytes_map_file(&b, dump_path, &err) != ERR_OK ||
        minidump_parse(&md, b.data, b.len, a, &err) != ERR_OK) {
        fprintf(stderr, "stacksift minidump: %s: %s\n", dump_path, err.msg);
        goto done;
    }
    for (int i = 0; i < ndebug; i++)
        if (cli_symcaches_add(&sc, "--dsym", debug[i], "minidump") != 0)
            goto done;
    for (int i = 0; i < ndirs; i++)
        if (cli_symcaches_add(&sc, "--symcache-dir", dirs[i], "minidump") != 0)
            goto done;
    if (unwind_images(&images, &nimages, md, &sc, a, &err) != ERR_OK) {
        fprintf(stderr, "stacksift minidump: %s\n", err.msg);
        goto done;
    }
    jsonw j;
    jsonw_init(&j, &o);
    if (json) {
        jsonw_object_begin(&j);
        jsonw_kstr(&j, "arch", minidump_arch_name(md->system.arch));
        char os[96];
        snprintf(os, sizeof os, "%u.%u.%u %s", md->system.os_major, md->system.os_minor,
                 md->system.os_build, md->system.csd_version ? md->system.csd_version : "");
        jsonw_kstr(&j, "os", md->has_system ? os : NULL);
        print_exception_json(&j, md);
        jsonw_key(&j, "notes");
        jsonw_array_begin(&j);
        for (size_t i = 0; i < md->nnotes; i++)
            jsonw_str(&j, md->notes[i]);
        jsonw_array_end(&j);
        jsonw_key(&j, "threads");
        jsonw_array_begin(&j);
    } else {
        for (size_t i = 0; i < md->nnotes; i++)
            buf_printf(&o, "note: %s\n", md->notes[i]);
    }
    symcache_frame *syms = xmalloc(SYMCACHE_MAX_FRAMES * sizeof *syms);
    size_t shown = 0;
    /* one walker for every thread: each image's __debug_frame indexed once per dump (NULL
     * when the arena is full: every thread then shows no frames, as a failed walk does) */
    unwind_walker *walker = NULL;
    err_info nerr = {0};
    if (unwind_walker_new(&walker, md, images, nimages, NULL, NULL, a, &nerr) != ERR_OK)
        walker = NULL;
    for (size_t ti = 0; ti < md->nthreads; ti++) {
        const minidump_thread *t = &md->threads[ti];
        if (md->has_dump_thread_id && t->thread_id == md->dump_thread_id)
            continue; /* Breakpad's handler thread: not part of the crash */
        bool crashed;
        const minidump_context *ctx = thread_context(md, t, &crashed);
        unwind_frame *frames = NULL;
        size_t n = 0;
        err_info werr = {0};
        if (walker == NULL || unwind_walker_walk(&frames, &n, walker, ctx, &werr) != ERR_OK)
            n = 0;
        if (json) {
            jsonw_object_begin(&j);
            jsonw_kuint(&j, "id", t->thread_id);
            jsonw_kstr(&j, "name", t->name);
            jsonw_kbool(&j, "crashed", crashed);
            if (werr.code != ERR_OK)
                jsonw_kstr(&j, "error", werr.msg);
            jsonw_key(&j, "frames");
            jsonw_array_begin(&j);
        } else {
            buf_printf(&o, "%sThread %zu (id %u%s%s%s)\n", shown ? "\n" : "", ti, t->thread_id,
                       crashed ? ", crashed" : "", t->name ? ", " : "", t->name ? t->name : "");
            if (werr.code != ERR_OK)
                buf_printf(&o, "  %s\n", werr.msg);
        }
        shown++;
        for (size_t k = 0; k < n; k++) {
            const unwind_frame *f = &frames[k];
            size_t ns = frame_symbols(syms, SYMCACHE_MAX_FRAMES, md, f, k == 0, &sc);
            const minidump_module *m = f->module >= 0 ? &md->modules[f->module] : NULL;
            if (json) {
                symbolicate_walk_frame_write(&j, md, f, syms, ns);
            } else {
                buf_printf(&o, "%2zu  0x%016llx  ", k, (unsigned long long)f->pc);
                if (m)
                    buf_printf(&o, "%s + 0x%llx", base_name(m->name),
                               (unsigned long long)f->rel_addr);
                else
                    buf_printf(&o, "???");
                if (ns > 0) {
                    /* the concrete function, at the innermost line */
                    buf_printf(&o, "  %s", syms[ns - 1].function);
                    if (syms[0].file != NULL)
                        buf_printf(&o, " (%s:%u)", base_name(syms[0].file), syms[0].line);
                }
                buf_printf(&o, "  [%s]\n", unwind_found_name(f->found));
            }
        }
        if (json) {
            jsonw_array_end(&j);
            jsonw_object_end(&j);
        }
    }
    free(syms);
    if (json) {
        jsonw_array_end(&j);
        jsonw_object_end(&j);
        buf_putc(&o, '\n');
    }
    if (sc.failed) {
        fprintf(stderr, "stacksift minidump: %s\n", sc.err.msg);
        goto done;
    }
    fwrite(o.data, 1, o.len, stdout);
    status = 0;
done:
    buf_reset(&o);
    cli_symcaches_reset(&sc);
    bytes_unmap(&b);
    arena_free(a);
    return status;
}

int cli_minidump(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "walk") != 0) {
        usage(argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? stdout
                                                                                           : stderr);
        return argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? 0 : 2;
    }
    bool json = false;
    char *files[MAX_DEBUG_FILES + 1], *dirs[CLI_SYMCACHES_MAX_DIRS];
    int nfiles = 0, ndirs = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--symcache-dir") == 0) {
            if (i + 1 == argc || ndirs == CLI_SYMCACHES_MAX_DIRS - 1) {
                usage(stderr);
                return 2;
            }
            dirs[ndirs++] = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "stacksift minidump: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (nfiles == MAX_DEBUG_FILES + 1) {
            fprintf(stderr, "stacksift minidump: at most %d debug files\n", MAX_DEBUG_FILES);
            return 2;
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (nfiles == 0) {
        usage(stderr);
        return 2;
    }
    return walk_dump(files[0], files + 1, nfiles - 1, dirs, ndirs, json);
}
