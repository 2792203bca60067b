/*
 * cli_report - reading a report from a file or stdin, shared by `stacksift parse` and
 * `stacksift symbolicate` (cli_parse.c).
 */
#ifndef STACKSIFT_CLI_REPORT_H
#define STACKSIFT_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/bytes.h"
#include "base/err.h"
#include "crashreport/crashreport.h"

typedef struct {
    const char *data; /* the report bytes */
    size_t len;
    bytes map;        /* a mapped FILE */
    uint8_t *heap;    /* or stdin read into memory */
} cli_report_input;

/* cli_report_read - map FILE, or read all of stdin for "-". Release with cli_report_release.
 * Errors as bytes_map_file / bytes_read_fd. */
err_code cli_report_read(cli_report_input *in, const char *path, err_info *err);
void cli_report_release(cli_report_input *in);

/* cli_report_parse - crashreport_parse into a new arena (*a, freed by the caller even on
 * error). */
err_code cli_report_parse(crashreport **out, arena **a, const cli_report_input *in,
                          err_info *err);

#endif
