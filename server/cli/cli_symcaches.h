/*
 * cli_symcaches - the symcaches a CLI command symbolicates with, shared by `stacksift
 * symbolicate` and `stacksift signature`: --dsym PATH (a dSYM bundle, a directory or zip of
 * bundles, or a Mach-O, converted by dsym_build_symcaches into a temporary directory removed
 * by cli_symcaches_reset) and --symcache-dir DIR (DIR/<UUID>.symc), looked up by image UUID,
 * --dsym ones first. Each UUID is opened once and kept open until reset. An App Store dSYM's
 * hidden names are revealed with the UUID maps and BCSymbolMaps in its --dsym input, beside it
 * or in --symbol-maps DIR (that option counts wherever it stands among the others).
 */
#ifndef STACKSIFT_CLI_SYMCACHES_H
#define STACKSIFT_CLI_SYMCACHES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "symcache/symcache.h"

#define CLI_SYMCACHES_MAX_DIRS 64

typedef struct {
    char uuid[37];
    symcache *sc; /* NULL: looked for, not found */
} cli_symcache_open;

typedef struct {
    const char *dirs[CLI_SYMCACHES_MAX_DIRS + 1]; /* searched in order */
    size_t ndirs;
    char tmp[4096];          /* where --dsym symcaches are built; "" until the first */
    cli_symcache_open *open; /* every UUID looked for */
    size_t nopen;
    err_info err;            /* the first symcache that exists but cannot be opened */
    bool failed;
    const char *symbol_maps; /* --symbol-maps DIR, NULL = none */
} cli_symcaches;

void cli_symcaches_init(cli_symcaches *s);

/* cli_symcaches_symbol_maps - take --symbol-maps DIR from the command's arguments
 * `argv[1..argc)` before any --dsym is converted (wherever it stands among them). */
void cli_symcaches_symbol_maps(cli_symcaches *s, int argc, char **argv);

/*
 * cli_symcaches_add - one option: `opt` is "--dsym" (PATH converted now), "--symcache-dir" or
 * "--symbol-maps" (taken by cli_symcaches_symbol_maps already). Returns 0, or 1 after printing
 * "stacksift CMD: why" on stderr.
 */
int cli_symcaches_add(cli_symcaches *s, const char *opt, const char *path, const char *cmd);

/* cli_symcaches_resolve - symbolicate_report's resolver (ctx: cli_symcaches *). */
const symcache *cli_symcaches_resolve(void *ctx, const char *uuid, const char *arch);

/* cli_symcaches_reset - close every symcache and remove the temporary directory. */
void cli_symcaches_reset(cli_symcaches *s);

#endif
