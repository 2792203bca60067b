/*
 * stacksift symbolicate --dsym PATH [--dsym PATH...] [--symcache-dir DIR] [--json] [--mangled] FILE|-
 *
 * Parses one report (a MetricKit payload: each of its diagnostics), symbolicates every frame whose image has a symcache, and prints the
 * report as Apple crash-report text (symbolicatecrash style, crashreport_render_text) or,
 * with --json, the symbolicated model. Symcaches come from
 *   --dsym PATH         a dSYM bundle, a directory or zip of bundles, or a Mach-O; converted
 *                       with dsym_build_symcaches into a temporary directory removed at exit
 *   --symcache-dir DIR  DIR/<UUID>.symc files (what `stacksift symcache build` writes)
 * looked up by image UUID (--dsym ones first). --mangled prints raw linkage names (`_ZN...`,
 * `$s...`) where function names go, text and JSON (crashreport_use_raw_names). Images without a symcache keep the report's
 * symbols and are listed under "missing_uuids" (--json) or on stderr ("missing: UUID name").
 * Exit 0 on success, 1 when the report or a dSYM cannot be read, 2 on usage errors.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/cli_tmpdir.h"
#include "cli/cli_report.h"
#include "crashreport/crashreport.h"
#include "dsym/dsym.h"
#include "symbolicate/symbolicate.h"
#include "symcache/symcache.h"

#define MAX_DIRS 64

typedef struct {
    char uuid[37];
    symcache *sc; /* NULL: looked for, not found */
} opened;

typedef struct {
    const char *dirs[MAX_DIRS + 1];
    size_t ndirs;
    opened *open;
    size_t nopen;
    err_info err;     /* a symcache that exists but cannot be opened */
    bool failed;
} resolver;

static const symcache *resolve(void *ctx, const char *uuid, const char *arch)
{
    resolver *rs = ctx;
    (void)arch; /* a UUID names one slice already */
    for (size_t i = 0; i < rs->nopen; i++)
        if (strcmp(rs->open[i].uuid, uuid) == 0)
            return rs->open[i].sc;
    symcache *sc = NULL;
    for (size_t d = 0; d < rs->ndirs && sc == NULL; d++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.symc", rs->dirs[d], uuid);
        err_info err = {0};
        err_code rc = symcache_open(&sc, path, &err);
        if (rc != ERR_OK && rc != ERR_NOT_FOUND && !rs->failed) {
            rs->err = err;
            rs->failed = true;
        }
    }
    rs->open = xreallocarray(rs->open, rs->nopen + 1, sizeof *rs->open);
    snprintf(rs->open[rs->nopen].uuid, sizeof rs->open[0].uuid, "%s", uuid);
    rs->open[rs->nopen].sc = sc;
    rs->nopen++;
    return sc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: stacksift symbolicate --dsym PATH [--dsym PATH...] [--symcache-dir DIR] "
               "[--json] [--mangled] FILE|-\n");
}

/* Symbolicate one report and render it into o; 0, or 1 after printing why. */
static int symbolicate_one(buf *o, crashreport *r, resolver *rs, arena *a, bool json, bool mangled,
                           const char *path)
{
    err_info err = {0};
    if (symbolicate_report(r, resolve, rs, a, &err) != ERR_OK) {
        fprintf(stderr, "stacksift symbolicate: %s: %s\n", path, err.msg);
        return 1;
    }
    if (rs->failed) {
        fprintf(stderr, "stacksift symbolicate: %s\n", rs->err.msg);
        return 1;
    }
    if (mangled)
        crashreport_use_raw_names(r);
    if (json) {
        crashreport_render_json(o, r);
        buf_putc(o, '\n');
        return 0;
    }
    crashreport_render_text(o, r);
    for (size_t i = 0; i < r->nmissing_uuids; i++) {
        const char *name = "";
        for (size_t k = 0; k < r->nimages; k++)
            if (strcmp(r->images[k].uuid, r->missing_uuids[i]) == 0 && r->images[k].name)
                name = r->images[k].name;
        fprintf(stderr, "missing: %s %s\n", r->missing_uuids[i], name);
    }
    return 0;
}

int cli_symbolicate(int argc, char **argv)
{
    const char *dsyms[MAX_DIRS], *symdirs[MAX_DIRS];
    size_t ndsyms = 0, nsymdirs = 0;
    bool json = false, mangled = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--dsym") == 0 || strcmp(a, "--symcache-dir") == 0) && i + 1 < argc) {
            bool is_dsym = a[2] == 'd';
            if ((is_dsym ? ndsyms : nsymdirs) == MAX_DIRS) {
                fprintf(stderr, "stacksift symbolicate: at most %d %s options\n", MAX_DIRS, a);
                return 2;
            }
            if (is_dsym)
                dsyms[ndsyms++] = argv[++i];
            else
                symdirs[nsymdirs++] = argv[++i];
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--mangled") == 0) {
            mangled = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "stacksift symbolicate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (path == NULL) {
            path = a;
        } else {
            fprintf(stderr, "stacksift symbolicate: only one report at a time\n");
            return 2;
        }
    }
    if (path == NULL || (ndsyms == 0 && nsymdirs == 0)) {
        usage(stderr);
        return 2;
    }

    err_info err = {0};
    cli_report_input in;
    resolver rs = {0};
    char tmp[4096] = "";
    bool have_tmp = false;
    buf o;
    int status = 1;
    buf_init(&o);
    if (cli_report_load(&in, "symbolicate", path) != ERR_OK)
        goto done;
    if (ndsyms > 0) {
        if (cli_tmpdir_make(tmp, sizeof tmp, "symbolicate") != 0) {
            fprintf(stderr, "stacksift symbolicate: creating a temporary directory failed: %s\n",
                    strerror(errno));
            goto done;
        }
        have_tmp = true;
        rs.dirs[rs.ndirs++] = tmp;
        for (size_t i = 0; i < ndsyms; i++) {
            if (dsym_build_symcaches(dsyms[i], tmp, NULL, NULL, NULL, &err) != ERR_OK) {
                fprintf(stderr, "stacksift symbolicate: --dsym %s: %s\n", dsyms[i], err.msg);
                goto done;
            }
        }
    }
    for (size_t i = 0; i < nsymdirs; i++)
        rs.dirs[rs.ndirs++] = symdirs[i];
    for (size_t i = 0; i < in.nreports; i++) {
        /* a MetricKit payload holds one report per diagnostic: each is printed in turn */
        if (!json && i > 0)
            buf_putc(&o, '\n');
        if (symbolicate_one(&o, in.reports[i], &rs, in.arena, json, mangled, path) != 0)
            goto done;
    }
    status = cli_report_write(&o, "symbolicate");
done:
    buf_reset(&o);
    for (size_t i = 0; i < rs.nopen; i++)
        symcache_close(rs.open[i].sc);
    free(rs.open);
    if (have_tmp)
        cli_tmpdir_remove(tmp);
    cli_report_release(&in);
    return status;
}
