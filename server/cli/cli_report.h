/*
 * cli_report - reading and parsing a report from a file or stdin and writing what was
 * rendered from it, shared by `stacksift parse` and `stacksift symbolicate` (cli_parse.c).
 */
#ifndef STACKSIFT_CLI_REPORT_H
#define STACKSIFT_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "base/err.h"
#include "crashreport/crashreport.h"

typedef struct {
    const char *data;     /* the report bytes */
    size_t len;
    bytes map;            /* a mapped FILE */
    uint8_t *heap;        /* or stdin read into memory */
    arena *arena;         /* the model's memory */
    crashreport *report;  /* the parsed model (in arena); NULL until loaded */
    crashreport **reports; /* every report of the document (a MetricKit payload holds one per
                              diagnostic); reports[0] == report */
    size_t nreports;
} cli_report_input;

/*
 * cli_report_load - map FILE (or read all of stdin for "-") and crashreport_parse_all it
 * into in->reports (in->report is the first). On failure prints "stacksift CMD: PATH: why" on stderr and returns the error
 * (as bytes_map_file / bytes_read_fd / crashreport_parse). Release with cli_report_release
 * either way.
 */
err_code cli_report_load(cli_report_input *in, const char *cmd, const char *path);
void cli_report_release(cli_report_input *in);

/*
 * cli_report_write - write the rendered output `o` to stdout and flush. Returns the exit
 * status: 0, or 1 after printing "stacksift CMD: writing the output failed: why".
 */
int cli_report_write(const buf *o, const char *cmd);

#endif
