/*
 * stacksift symcache build INPUT -o OUTDIR [--threads N] [--symbol-maps DIR]
 * One JSON line per slice on stdout: {"uuid","arch","name","functions","ranges","bytes",
 * "dwarf_bytes","ms","warnings"}, plus "hidden" (names and paths that read `__hidden#N_`),
 * "still_hidden" (of those, left so), "revealed" and "symbol_map" (the UUID of the BCSymbolMap it needs) for an App Store
 * (bitcode) dSYM. Its maps are read from the input (a bundle's UUID maps, an archive's
 * BCSymbolMaps/), from beside a Mach-O file given alone, and from --symbol-maps DIR.
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

#include "base/buf.h"
#include "base/jsonw.h"
#include "cli/cli.h"
#include "cli/cli_tmpdir.h"
#include "config/config.h"
#include "ingest/ingest.h"
#include "log/log.h"
#include "store/store.h"
#include "dsym/dsym.h"

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

int cli_symcache(int argc, char **argv)
{
    const char *input = NULL, *out_dir = NULL;
    dsym_options opts = {0};
    if (argc >= 2 && strcmp(argv[1], "rebuild") == 0)
        return symcache_rebuild(argc, argv);
    if (argc < 2 || strcmp(argv[1], "build") != 0) {
        fprintf(stderr, "usage: stacksift symcache build INPUT -o OUTDIR [--threads N] "
                        "[--symbol-maps DIR]\n"
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
        else if (argv[i][0] != '-' && input == NULL)
            input = argv[i];
        else {
            fprintf(stderr, "stacksift symcache build: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (input == NULL || out_dir == NULL) {
        fprintf(stderr, "usage: stacksift symcache build INPUT -o OUTDIR [--threads N] "
                        "[--symbol-maps DIR]\n");
        return 2;
    }
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
