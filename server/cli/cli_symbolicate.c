/*
 * stacksift symbolicate --dsym PATH [--dsym PATH...] [--symcache-dir DIR] [--symbol-maps DIR] [--json] [--mangled] FILE|-
 *
 * Parses one report (a MetricKit payload: each of its diagnostics), symbolicates every frame whose image has a symcache, and prints the
 * report as Apple crash-report text (symbolicatecrash style, crashreport_render_text) or,
 * with --json, the symbolicated model. Symcaches come from
 *   --dsym PATH         a dSYM bundle, a directory or zip of bundles, or a Mach-O; converted
 *                       with dsym_build_symcaches into a temporary directory removed at exit
 *   --symcache-dir DIR  DIR/<UUID>.symc files (what `stacksift symcache build` writes)
 *   --symbol-maps DIR   UUID maps and BCSymbolMaps that reveal an App Store dSYM's hidden
 *                       names (also read from the --dsym input and from beside it)
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
#include "cli/cli_symcaches.h"
#include "cli/cli_report.h"
#include "crashreport/crashreport.h"
#include "symbolicate/symbolicate.h"
#include "symcache/symcache.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: stacksift symbolicate --dsym PATH [--dsym PATH...] [--symcache-dir DIR] "
               "[--symbol-maps DIR] [--json] [--mangled] FILE|-\n");
}

/* Symbolicate one report and render it into o; 0, or 1 after printing why. */
static int symbolicate_one(buf *o, crashreport *r, cli_symcaches *rs, arena *a, bool json, bool mangled,
                           const char *path)
{
    err_info err = {0};
    if (symbolicate_report(r, cli_symcaches_resolve, rs, a, &err) != ERR_OK) {
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
    cli_symcaches rs;
    bool json = false, mangled = false;
    const char *path = NULL;
    int status = 2;
    cli_symcaches_init(&rs);
    cli_symcaches_symbol_maps(&rs, argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--dsym") == 0 || strcmp(a, "--symcache-dir") == 0 ||
             strcmp(a, "--symbol-maps") == 0) && i + 1 < argc) {
            if (cli_symcaches_add(&rs, a, argv[++i], "symbolicate") != 0) {
                status = 1;
                goto out;
            }
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--mangled") == 0) {
            mangled = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            status = 0;
            goto out;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "stacksift symbolicate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            goto out;
        } else if (path == NULL) {
            path = a;
        } else {
            fprintf(stderr, "stacksift symbolicate: only one report at a time\n");
            goto out;
        }
    }
    if (path == NULL || rs.ndirs == 0) {
        usage(stderr);
        goto out;
    }

    cli_report_input in;
    buf o;
    status = 1;
    buf_init(&o);
    if (cli_report_load(&in, "symbolicate", path) != ERR_OK)
        goto done;
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
    cli_report_release(&in);
out:
    cli_symcaches_reset(&rs);
    return status;
}
