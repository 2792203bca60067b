/*
 * stacksift migrate - bring the database schema up to what this binary needs, applying the
 * migrations compiled in from migrations/NNNN_name.sql (store_migrate); then, when the stored
 * fingerprints were made by older grouping rules, regroups them (`stacksift regroup`).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_db.h"
#include "cli/cli_regroup.h"
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
    cli_db db;
    err_info err = {0};
    int applied = 0, version = 0;
    int status = cli_db_open(&db, &err);
    if (status == 2)
        return 2;
    if (status != 0 || store_migrate(&applied, db.s, on_applied, NULL, &err) != ERR_OK ||
        store_schema_version(&version, db.s, &err) != ERR_OK) {
        status = 1;
        log_event(LOG_ERROR, "migrate_failed", "applied=%d message=%s", applied, err.msg);
        fprintf(stderr, "stacksift migrate: %s\n", err.msg);
        goto done;
    }
    printf("schema at version %d (%d applied now)\n", version, applied);
    fflush(stdout);
    /* stored fingerprints made by older grouping rules are brought to this binary's */
    status = cli_regroup_store(&db.cfg, db.s, true, 0);
done:
    cli_db_close(&db);
    return status;
}
