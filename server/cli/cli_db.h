/*
 * cli_db - what the subcommands that work on the database share (`migrate`, `regroup`,
 * `token`, `project`, `alert`, `retention`): the configuration from STACKSIFT_* (the database
 * URL required), the log level it sets, and one connection to the database.
 */
#ifndef STACKSIFT_CLI_DB_H
#define STACKSIFT_CLI_DB_H

#include "base/err.h"
#include "config/config.h"
#include "store/store.h"

typedef struct {
    config cfg; /* config_load_logged; reset by cli_db_close */
    store *s;   /* one connection (cfg.db_timeout_ms); NULL until open */
} cli_db;

/*
 * cli_db_open - loads the configuration (each bad variable logged as "config_invalid"), sets
 * the log level from it and opens one connection to the database.
 * Returns the exit status so far: 0 with out->s open; 2 when the configuration is bad;
 * 1 when the database cannot be opened, `err` saying why (store_open's ERR_STORE / ERR_INVALID)
 * for the caller to report. cli_db_close(out) is safe after every outcome.
 */
int cli_db_open(cli_db *out, err_info *err);

/* cli_db_close - closes the connection and frees the configuration; safe on a failed open. */
void cli_db_close(cli_db *db);

#endif
