/*
 * stacksift parse [--json] FILE|-
 *
 * Parses one crash or stack report (any format crashreport_parse detects) and prints the
 * model: a short summary by default, the whole model as one JSON object with --json
 * (shape in docs/report-formats.md). A report that cannot be read exits 1 with one line on
 * stderr: "stacksift parse: <why>".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/cli_report.h"
#include "crashreport/crashreport.h"

/* Reports are small (Apple's are < 1 MB); these bounds only stop a runaway input. */
#define CLI_MAX_REPORT_BYTES ((size_t)512 << 20)
#define CLI_ARENA_BUDGET ((size_t)4 << 30)

err_code cli_report_load(cli_report_input *in, const char *cmd, const char *path)
{
    err_info err = {0};
    err_code rc;
    memset(in, 0, sizeof *in);
    if (strcmp(path, "-") == 0) {
        uint8_t *data = NULL;
        size_t len = 0;
        rc = bytes_read_fd(&data, &len, STDIN_FILENO, CLI_MAX_REPORT_BYTES, &err);
        if (rc != ERR_OK)
            err_prefix(&err, "reading stdin");
        in->heap = data;
        in->data = (const char *)data;
        in->len = len;
    } else {
        rc = bytes_map_file(&in->map, path, &err);
        in->data = (const char *)in->map.data;
        in->len = in->map.len;
    }
    if (rc == ERR_OK) {
        in->arena = arena_new(CLI_ARENA_BUDGET);
        rc = crashreport_parse_all(&in->reports, &in->nreports, in->data, in->len, in->arena, &err);
        if (rc == ERR_OK)
            in->report = in->reports[0];
    }
    if (rc != ERR_OK)
        fprintf(stderr, "stacksift %s: %s: %s\n", cmd, path, err.msg);
    return rc;
}

void cli_report_release(cli_report_input *in)
{
    arena_free(in->arena);
    bytes_unmap(&in->map);
    free(in->heap);
    memset(in, 0, sizeof *in);
}

int cli_report_write(const buf *o, const char *cmd)
{
    if (fwrite(o->data, 1, o->len, stdout) == o->len && fflush(stdout) == 0)
        return 0;
    fprintf(stderr, "stacksift %s: writing the output failed: %s\n", cmd, strerror(errno));
    return 1;
}

static void summary_line(buf *o, const char *key, const char *v)
{
    if (v != NULL)
        buf_printf(o, "%-19s %s\n", key, v);
}

static void print_summary(buf *o, const crashreport *r)
{
    const crashreport_metadata *m = &r->meta;
    size_t frames = 0;
    for (size_t i = 0; i < r->nthreads; i++)
        frames += r->threads[i].nframes;
    buf_printf(o, "%-19s %s\n", "format:", crashreport_format_name(r->format));
    buf_printf(o, "%-19s %s\n", "kind:", crashreport_kind_name(r->kind));
    summary_line(o, "incident:", m->incident_id);
    summary_line(o, "process:", m->process);
    summary_line(o, "bundle id:", m->bundle_id);
    if (m->app_version != NULL || m->build != NULL)
        buf_printf(o, "%-19s %s (%s)\n", "version:", m->app_version ? m->app_version : "?",
                   m->build ? m->build : "?");
    summary_line(o, "arch:", m->arch);
    summary_line(o, "os:", m->os_version);
    summary_line(o, "device:", m->hardware_model);
    summary_line(o, "date:", m->date);
    summary_line(o, "exception:", m->exception_type);
    summary_line(o, "signal:", m->signal);
    summary_line(o, "termination:", m->termination_reason);
    summary_line(o, "diagnostic:", m->diagnostic);
    if (m->hang_duration_ms > 0)
        buf_printf(o, "%-19s %llu ms\n", "hang duration:", (unsigned long long)m->hang_duration_ms);
    if (r->partial)
        buf_printf(o, "%-19s %s\n", "partial:", "yes (see parse errors)");
    if (m->crashed_thread >= 0)
        buf_printf(o, "%-19s %d\n", "crashed thread:", m->crashed_thread);
    buf_printf(o, "%-19s %zu threads, %zu frames, %zu images", "contents:", r->nthreads, frames,
               r->nimages);
    if (r->has_leb)
        buf_printf(o, ", last exception backtrace of %zu frames", r->nleb);
    buf_putc(o, '\n');
    for (size_t i = 0; i < r->nerrors; i++)
        buf_printf(o, "%-19s %s\n", i == 0 ? "parse errors:" : "", r->errors[i]);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: stacksift parse [--json] FILE|-\n");
}

int cli_parse(int argc, char **argv)
{
    bool json = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "stacksift parse: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (path == NULL) {
            path = argv[i];
        } else {
            fprintf(stderr, "stacksift parse: only one report at a time\n");
            return 2;
        }
    }
    if (path == NULL) {
        usage(stderr);
        return 2;
    }
    cli_report_input in;
    buf o;
    int status = 1;
    buf_init(&o);
    if (cli_report_load(&in, "parse", path) != ERR_OK)
        goto done;
    for (size_t i = 0; i < in.nreports; i++) {
        /* a MetricKit payload: one line (--json) or one summary per diagnostic */
        if (json) {
            crashreport_render_json(&o, in.reports[i]);
            buf_putc(&o, '\n');
        } else {
            if (i > 0)
                buf_putc(&o, '\n');
            print_summary(&o, in.reports[i]);
        }
    }
    status = cli_report_write(&o, "parse");
done:
    buf_reset(&o);
    cli_report_release(&in);
    return status;
}
