/*
 * cli_symcaches.c - symcaches by UUID for the CLI commands that symbolicate (cli_symcaches.h).
 */
#include "cli/cli_symcaches.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "cli/cli_tmpdir.h"
#include "dsym/dsym.h"

void cli_symcaches_init(cli_symcaches *s)
{
    memset(s, 0, sizeof *s);
}

void cli_symcaches_symbol_maps(cli_symcaches *s, int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--symbol-maps") == 0)
            s->symbol_maps = argv[++i];
}

int cli_symcaches_add(cli_symcaches *s, const char *opt, const char *path, const char *cmd)
{
    bool is_dsym = strcmp(opt, "--dsym") == 0;
    if (strcmp(opt, "--symbol-maps") == 0)
        return 0;   /* taken by cli_symcaches_symbol_maps */
    if (s->ndirs == CLI_SYMCACHES_MAX_DIRS) {
        fprintf(stderr, "stacksift %s: at most %d --dsym and --symcache-dir options\n", cmd,
                CLI_SYMCACHES_MAX_DIRS);
        return 1;
    }
    if (!is_dsym) {
        s->dirs[s->ndirs++] = path;
        return 0;
    }
    if (s->tmp[0] == '\0') {
        if (cli_tmpdir_make(s->tmp, sizeof s->tmp, cmd) != 0) {
            s->tmp[0] = '\0';
            fprintf(stderr, "stacksift %s: creating a temporary directory failed: %s\n", cmd,
                    strerror(errno));
            return 1;
        }
        /* --dsym symcaches come first, whatever the order of the options */
        memmove(s->dirs + 1, s->dirs, s->ndirs * sizeof s->dirs[0]);
        s->dirs[0] = s->tmp;
        s->ndirs++;
    }
    err_info err = {0};
    /* an App Store dSYM's hidden names: its maps in it, beside it, or in --symbol-maps */
    dsym_options opts = {.maps_beside = true, .symbol_maps_dir = s->symbol_maps};
    if (dsym_build_symcaches(path, s->tmp, &opts, NULL, NULL, &err) != ERR_OK) {
        fprintf(stderr, "stacksift %s: --dsym %s: %s\n", cmd, path, err.msg);
        return 1;
    }
    return 0;
}

const symcache *cli_symcaches_resolve(void *ctx, const char *uuid, const char *arch)
{
    cli_symcaches *s = ctx;
    (void)arch; /* a UUID names one slice already */
    for (size_t i = 0; i < s->nopen; i++)
        if (strcmp(s->open[i].uuid, uuid) == 0)
            return s->open[i].sc;
    symcache *sc = NULL;
    for (size_t d = 0; d < s->ndirs && sc == NULL; d++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.symc", s->dirs[d], uuid);
        err_info err = {0};
        err_code rc = symcache_open(&sc, path, &err);
        if (rc != ERR_OK && rc != ERR_NOT_FOUND && !s->failed) {
            s->err = err;
            s->failed = true;
        }
    }
    s->open = xreallocarray(s->open, s->nopen + 1, sizeof *s->open);
    snprintf(s->open[s->nopen].uuid, sizeof s->open[0].uuid, "%s", uuid);
    s->open[s->nopen].sc = sc;
    s->nopen++;
    return sc;
}

void cli_symcaches_reset(cli_symcaches *s)
{
    for (size_t i = 0; i < s->nopen; i++)
        symcache_close(s->open[i].sc);
    free(s->open);
    if (s->tmp[0] != '\0')
        cli_tmpdir_remove(s->tmp);
    memset(s, 0, sizeof *s);
}
