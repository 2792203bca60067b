/*
 * stacksift migrate - bring the database schema up to what this binary needs, applying the
 * migrations compiled in from migrations/NNNN_name.sql (store_migrate); then, when the stored
 * fingerprints were made by older grouping rules, regroups them (`stacksift regroup`).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_regroup.h"
#include "config/config.h"
#include "log/log.h"
#include "store/store.h"

static void on_applied(int version, const char *name, double ms, void *ctx)
{
    (void)ctx;
    printf("applied %04d_%s (%.0f ms)\n", version, name, ms);
    fflush(stdout);
}

int cli_migrate(int argc, char **argv)
{
    if (argc > 1) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr, "usage: stacksift migrate   (database from "
                "STACKSIFT_DATABASE_URL)\n");
        return help ? 0 : 2;
    }
    config cfg;
    if (config_load_logged(&cfg) != ERR_OK)
        return 2;
    log_set_level(cfg.log_level);
    store *s = NULL;
    err_info err = {0};
    int applied = 0, version = 0, status = 1;
    if (store_open(&s, cfg.database_url, 1, cfg.db_timeout_ms, &err) != ERR_OK ||
        store_migrate(&applied, s, on_applied, NULL, &err) != ERR_OK ||
        store_schema_version(&version, s, &err) != ERR_OK) {
        log_event(LOG_ERROR, "migrate_failed", "applied=%d message=%s", applied, err.msg);
        fprintf(stderr, "stacksift migrate: %s\n", err.msg);
        goto done;
    }
    printf("schema at version %d (%d applied now)\n", version, applied);
    fflush(stdout);
    /* stored fingerprints made by older grouping rules are brought to this binary's */
    status = cli_regroup_store(&cfg, s, true, 0);
done:
    store_close(s);
    config_reset(&cfg);
    return status;
}
