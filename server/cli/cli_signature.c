/*
 * stacksift signature [--dsym PATH]... [--symcache-dir DIR]... [--symbol-maps DIR] [--frames N] FILE...
 *
 * What each report would group as: parses every FILE (any format crashreport_parse reads; a
 * MetricKit payload gives one line per diagnostic), symbolicates the frames whose image has a
 * symcache (as `stacksift symbolicate` does, dSYMs optional), computes the signature
 * (signature_compute, the server's grouping rules) and prints one JSON object per report:
 *   {"file","fingerprint","kind","exception","basis","provisional","title","culprit",
 *    "frames":[{"function","raw","mangled","image","file","line","in_app"}]}
 * A FILE that cannot be read prints {"file","error"} and makes the exit status 1; the other
 * files are still read. Exit 0 when every file was read, 1 otherwise, 2 on usage errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/cli_report.h"
#include "cli/cli_symcaches.h"
#include "crashreport/crashreport.h"
#include "signature/signature.h"
#include "symbolicate/symbolicate.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: stacksift signature [--dsym PATH]... [--symcache-dir DIR]... "
               "[--symbol-maps DIR] [--frames N] FILE...\n");
}

static void print_error(buf *o, const char *path, const char *msg)
{
    jsonw w;
    jsonw_init(&w, o);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "file", path);
    jsonw_kstr(&w, "error", msg);
    jsonw_object_end(&w);
    buf_putc(o, '\n');
}

/* One report's line into `o`; false after printing an error line. */
static bool signature_one(buf *o, crashreport *r, cli_symcaches *sc, const signature_options *so,
                          arena *a, const char *path)
{
    err_info err = {0};
    signature s;
    if (symbolicate_report(r, cli_symcaches_resolve, sc, a, &err) != ERR_OK ||
        signature_compute(&s, r, so, a, &err) != ERR_OK) {
        print_error(o, path, err.msg);
        return false;
    }
    jsonw w;
    jsonw_init(&w, o);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "file", path);
    jsonw_kstr(&w, "fingerprint", s.fingerprint);
    jsonw_kstr(&w, "kind", s.kind);
    jsonw_kstr(&w, "exception", s.exception);
    jsonw_kstr(&w, "basis", signature_basis_name(s.basis));
    jsonw_kbool(&w, "provisional", s.provisional);
    jsonw_kstr(&w, "title", s.title);
    jsonw_kstr(&w, "culprit", s.culprit);
    buf frames;
    buf_init(&frames);
    signature_render_frames_json(&frames, &s);
    buf_putc(&frames, '\0');
    jsonw_key(&w, "frames");
    jsonw_raw(&w, (const char *)frames.data);
    buf_reset(&frames);
    jsonw_object_end(&w);
    buf_putc(o, '\n');
    return true;
}

int cli_signature(int argc, char **argv)
{
    cli_symcaches sc;
    signature_options so = {0};
    cli_symcaches_init(&sc);
    cli_symcaches_symbol_maps(&sc, argc, argv);
    int first = 0, status = 2;
    for (int i = 1; i < argc && first == 0; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--dsym") == 0 || strcmp(a, "--symcache-dir") == 0 ||
             strcmp(a, "--symbol-maps") == 0) && i + 1 < argc) {
            if (cli_symcaches_add(&sc, a, argv[++i], "signature") != 0)
                goto done;
        } else if (strcmp(a, "--frames") == 0 && i + 1 < argc) {
            char *end;
            unsigned long n = strtoul(argv[++i], &end, 10);
            if (*end != '\0' || n < 1 || n > SIGNATURE_MAX_FRAMES) {
                fprintf(stderr, "stacksift signature: --frames takes 1..%d\n", SIGNATURE_MAX_FRAMES);
                goto done;
            }
            so.max_frames = (unsigned)n;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            status = 0;
            goto done;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "stacksift signature: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            goto done;
        } else {
            first = i;
        }
    }
    if (first == 0) {
        usage(stderr);
        goto done;
    }
    status = 0;
    buf o;
    buf_init(&o);
    for (int i = first; i < argc; i++) {
        cli_report_input in;
        o.len = 0;
        if (cli_report_load(&in, "signature", argv[i]) != ERR_OK) {
            print_error(&o, argv[i], "the report cannot be read (reason on stderr)");
            status = 1;
        }
        for (size_t k = 0; k < in.nreports; k++)
            if (!signature_one(&o, in.reports[k], &sc, &so, in.arena, argv[i]))
                status = 1;
        if (sc.failed) {
            fprintf(stderr, "stacksift signature: %s\n", sc.err.msg);
            status = 1;
        }
        cli_report_release(&in);
        if (cli_report_write(&o, "signature") != 0)
            status = 1;
    }
    buf_reset(&o);
done:
    cli_symcaches_reset(&sc);
    return status;
}
