/*
 * stacksift symcache build INPUT -o OUTDIR [--threads N] [--symbol-maps DIR]
 * One JSON line per slice on stdout: {"uuid","arch","name","functions","ranges","bytes",
 * "dwarf_bytes","ms","warnings"}, plus "hidden" (names and paths that read `__hidden#N_`),
 * "still_hidden" (of those, left so), "revealed" and "symbol_map" (the UUID of the BCSymbolMap it needs) for an App Store
 * (bitcode) dSYM. Its maps are read from the input (a bundle's UUID maps, an archive's
 * BCSymbolMaps/), from beside a Mach-O file given alone, and from --symbol-maps DIR.
 *
 * An executable or dylib gives its unwind info to the symcache (its "unwind" key: compact
 * unwind entries, __eh_frame bytes); a dSYM and its executable built into the same OUTDIR, in
 * either order, make one symcache with the dSYM's names and the executable's unwind info.
 *
 * stacksift symcache unwind FILE.symc
 * The unwind info a symcache carries, one JSON object: {"uuid","arch","text_vmaddr",
 * "entries": [[func_start, func_end, encoding], ...] (offsets from text_vmaddr, as
 * llvm-objdump --unwind-info lists the compact unwind table), "stack_sizes": [[func_start,
 * imm32], ...], "eh_frame": {"vmaddr","bytes"} or null, "debug_frame": {"vmaddr","bytes",
 * "fdes"} or null (fdes: the FDEs the walker indexes, unwind_debug_frame_list),
 * "breakpad_cfi": {"bytes","inits"} or null (a .sym's STACK CFI table: its INIT records)}.
 * Exit 1 when it has none or cannot be read.
 *
 * stacksift symcache rebuild [--uuid UUID] [--threads N]
 * Re-derive the stored symcaches from the stored original uploads (STACKSIFT_DATABASE_URL;
 * safe while nodes serve). One JSON line per debug file: {"uuid","status","sha256"[,"error"]}
 * with status rebuilt, unchanged, changed (replaced by someone else meanwhile) or failed;
 * exit status 1 if any failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "base/buf.h"
#include "breakpad/breakpad.h"
#include "base/jsonw.h"
#include "cli/cli.h"
#include "cli/cli_tmpdir.h"
#include "config/config.h"
#include "ingest/ingest.h"
#include "log/log.h"
#include "store/store.h"
#include "dsym/dsym.h"
#include "macho/macho.h"
#include "symcache/symcache.h"
#include "unwind/unwind.h"

static void print_built(const dsym_built *b, void *ctx)
{
    (void)ctx;
    buf out;
    buf_init(&out);
    jsonw w;
    jsonw_init(&w, &out);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "uuid", b->uuid);
    jsonw_kstr(&w, "arch", b->arch);
    jsonw_kstr(&w, "name", b->name);
    jsonw_kuint(&w, "functions", b->functions);
    jsonw_kuint(&w, "ranges", b->ranges);
    jsonw_kuint(&w, "bytes", b->bytes);
    jsonw_kuint(&w, "dwarf_bytes", b->dwarf_bytes);
    jsonw_key(&w, "ms");
    char ms[32];
    snprintf(ms, sizeof ms, "%.1f", b->ms);
    jsonw_raw(&w, ms);   /* a number, one decimal */
    jsonw_key(&w, "warnings"); /* what of the DWARF was left out as unreadable */
    jsonw_array_begin(&w);
    if (b->warnings > 0)
        jsonw_str(&w, b->warning);
    jsonw_array_end(&w);
    if (b->hidden > 0) {
        jsonw_kuint(&w, "hidden", b->hidden);
        jsonw_kuint(&w, "still_hidden", b->hidden_left);
        jsonw_key(&w, "revealed");
        jsonw_bool(&w, b->revealed);
        jsonw_kstr(&w, "symbol_map", b->map_uuid);
    }
    jsonw_object_end(&w);
    buf_putc(&out, '\n');
    if (b->warnings > 0)
        fprintf(stderr, "stacksift: warning: %s (%s): %s\n", b->name, b->arch, b->warning);
    fwrite(out.data, 1, out.len, stdout);
    fflush(stdout);
    buf_reset(&out);
}

static int mkdir_p(const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static void print_rebuilt(const ingest_rebuilt *r, void *ctx)
{
    (void)ctx;
    buf out;
    buf_init(&out);
    buf_printf(&out, "{\"uuid\":\"%s\",\"status\":\"%s\",\"sha256\":\"%s\"", r->uuid,
               r->status, r->sha256);
    if (r->err.code != ERR_OK) {
        buf_append_str(&out, ",\"error\":");
        buf_append_json_str(&out, r->err.msg, strlen(r->err.msg));
    }
    buf_append_str(&out, "}\n");
    fwrite(out.data, 1, out.len, stdout);
    fflush(stdout);
    buf_reset(&out);
}

static int symcache_rebuild(int argc, char **argv)
{
    const char *uuid = NULL;
    dsym_options opts = {0};
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--uuid") == 0 && i + 1 < argc)
            uuid = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            opts.threads = (unsigned)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: stacksift symcache rebuild [--uuid UUID] [--threads N]\n");
            return 2;
        }
    }
    config cfg;
    if (config_load_logged(&cfg) != ERR_OK)
        return 2;
    log_set_level(cfg.log_level);
    opts.max_unpacked_bytes = cfg.max_unpacked_bytes;
    opts.max_ratio = cfg.max_zip_ratio;
    store *s = NULL;
    err_info err = {0};
    char work[4096] = "";
    unsigned failed = 0;
    int status = 1;
    if (cli_tmpdir_make(work, sizeof work, "rebuild") != 0) {
        fprintf(stderr, "stacksift symcache rebuild: cannot create a scratch directory: %s\n",
                strerror(errno));
        goto done;
    }
    if (store_open(&s, cfg.database_url, 1, cfg.db_timeout_ms, &err) != ERR_OK ||
        ingest_symcache_rebuild(&failed, s, uuid, work, &opts, print_rebuilt, NULL, &err) !=
            ERR_OK) {
        fprintf(stderr, "stacksift symcache rebuild: %s\n", err.msg);
        goto done;
    }
    status = failed ? 1 : 0;
done:
    cli_tmpdir_remove(work);
    store_close(s);
    config_reset(&cfg);
    return status;
}

static void print_skipped(const char *name, const char *arch, const char *why, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "stacksift: warning: %s: slice %s left out, the others are built: %s\n", name,
            arch, why);
}

static int symcache_unwind(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stacksift symcache unwind FILE.symc\n");
        return 2;
    }
    symcache *sc = NULL;
    err_info err = {0};
    unwind_image ui;
    if (symcache_open(&sc, argv[2], &err) != ERR_OK ||
        symcache_unwind_image(&ui, sc, &err) != ERR_OK) {
        fprintf(stderr, "stacksift symcache unwind: %s: %s\n", argv[2], err.msg);
        symcache_close(sc);
        return 1;
    }
    buf out;
    buf_init(&out);
    char uuid[37];
    macho_uuid_format(uuid, ui.uuid);
    buf_printf(&out, "{\"uuid\":\"%s\",\"arch\":\"%s\",\"text_vmaddr\":%llu,\"entries\":[", uuid,
               symcache_arch(sc), (unsigned long long)ui.text_vmaddr);
    for (size_t i = 0; i < ui.nentries; i++)
        buf_printf(&out, "%s[%u,%u,%u]", i ? "," : "", ui.entries[i].func_start,
                   ui.entries[i].func_end, ui.entries[i].encoding);
    buf_append_str(&out, "],\"stack_sizes\":[");
    for (size_t i = 0; i < ui.nstack_sizes; i++)
        buf_printf(&out, "%s[%u,%u]", i ? "," : "", ui.stack_sizes[i].func_start,
                   ui.stack_sizes[i].imm);
    buf_append_str(&out, "],\"eh_frame\":");
    if (ui.eh_frame)
        buf_printf(&out, "{\"vmaddr\":%llu,\"bytes\":%zu}", (unsigned long long)ui.eh_frame_vmaddr,
                   ui.eh_frame_len);
    else
        buf_append_str(&out, "null");
    buf_append_str(&out, ",\"debug_frame\":");
    if (ui.debug_frame) {
        arena *a = arena_new(0);
        unwind_fde *fdes = NULL;
        size_t nfdes = 0;
        /* over budget (a corrupt length) counts as no FDE: the walker reads it so too */
        if (unwind_debug_frame_list(&fdes, &nfdes, ui.debug_frame, ui.debug_frame_len, a, &err) != ERR_OK)
            nfdes = 0;
        buf_printf(&out, "{\"vmaddr\":%llu,\"bytes\":%zu,\"fdes\":%zu}",
                   (unsigned long long)ui.debug_frame_vmaddr, ui.debug_frame_len, nfdes);
        arena_free(a);
    } else {
        buf_append_str(&out, "null");
    }
    buf_append_str(&out, ",\"breakpad_cfi\":");
    breakpad_cfi cfi;
    if (ui.breakpad_cfi && breakpad_cfi_open(&cfi, ui.breakpad_cfi, ui.breakpad_cfi_len, &err) == ERR_OK)
        buf_printf(&out, "{\"bytes\":%zu,\"inits\":%u}", ui.breakpad_cfi_len, cfi.ninit);
    else
        buf_append_str(&out, "null");
    buf_append_str(&out, "}\n");
    fwrite(out.data, 1, out.len, stdout);
    buf_reset(&out);
    symcache_close(sc);
    return 0;
}

int cli_symcache(int argc, char **argv)
{
    const char *input = NULL, *out_dir = NULL;
    dsym_options opts = {0};
    bool no_display = false;
    if (argc >= 2 && strcmp(argv[1], "rebuild") == 0)
        return symcache_rebuild(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "unwind") == 0)
        return symcache_unwind(argc, argv);
    if (argc < 2 || strcmp(argv[1], "build") != 0) {
        fprintf(stderr, "usage: stacksift symcache build INPUT -o OUTDIR [--threads N] "
                        "[--symbol-maps DIR] [--no-display-names]\n"
                        "       stacksift symcache unwind FILE.symc\n"
                        "       stacksift symcache rebuild [--uuid UUID] [--threads N]\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out_dir = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            opts.threads = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--symbol-maps") == 0 && i + 1 < argc)
            opts.symbol_maps_dir = argv[++i];
        else if (strcmp(argv[i], "--no-display-names") == 0)
            no_display = true;
        else if (argv[i][0] != '-' && input == NULL)
            input = argv[i];
        else {
            fprintf(stderr, "stacksift symcache build: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (input == NULL || out_dir == NULL) {
        fprintf(stderr, "usage: stacksift symcache build INPUT -o OUTDIR [--threads N] "
                        "[--symbol-maps DIR] [--no-display-names]\n");
        return 2;
    }
    /* files kept to be looked up: each name demangled once here rather than at each lookup */
    opts.display_names = !no_display;
    if (mkdir_p(out_dir) != 0) {
        fprintf(stderr, "stacksift: cannot create %s: %s\n", out_dir, strerror(errno));
        return 1;
    }
    err_info err = {0};
    opts.skipped = print_skipped;
    opts.maps_beside = true;
    if (dsym_build_symcaches(input, out_dir, &opts, print_built, NULL, &err) != ERR_OK) {
        fprintf(stderr, "stacksift: %s\n", err.msg);
        return 1;
    }
    return 0;
}
