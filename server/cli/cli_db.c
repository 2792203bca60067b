/*
 * cli_db.c - the configuration and one database connection for the database subcommands.
 */
#include "cli/cli_db.h"

#include <string.h>

#include "log/log.h"

int cli_db_open(cli_db *out, err_info *err)
{
    memset(out, 0, sizeof *out);
    if (config_load_logged(&out->cfg) != ERR_OK)
        return 2;
    log_set_level(out->cfg.log_level);
    if (store_open(&out->s, out->cfg.database_url, 1, out->cfg.db_timeout_ms, err) != ERR_OK)
        return 1;
    return 0;
}

void cli_db_close(cli_db *db)
{
    store_close(db->s);
    db->s = NULL;
    config_reset(&db->cfg);
}
