/*
 * cli_tmpdir - a private scratch directory for subcommands that convert dSYMs on the fly
 * (`lookup`, `symbolicate`): made under $TMPDIR (default /tmp), removed with all it holds.
 */
#ifndef STACKSIFT_CLI_TMPDIR_H
#define STACKSIFT_CLI_TMPDIR_H

#include <stddef.h>

/* cli_tmpdir_make - create "$TMPDIR/stacksift-<what>.XXXXXX" (mode 0700) into out (`cap`
 * bytes); 0 on success, -1 with errno set (out is then ""). */
int cli_tmpdir_make(char *out, size_t cap, const char *what);

/* cli_tmpdir_remove - delete `dir` and everything below it; errors are ignored (best effort
 * cleanup of our own scratch space). "" is a no-op. */
void cli_tmpdir_remove(const char *dir);

#endif
