/*
 * stacksift retention run [--force] - one retention run now, with the settings `serve` uses
 * (STACKSIFT_RETENTION_DAYS, STACKSIFT_AGGREGATE_RETENTION_DAYS, STACKSIFT_DSYM_RETENTION_DAYS):
 * report partitions made ahead and expired ones dropped, old aggregates and unused dSYMs
 * deleted. Without --force it does nothing when a node ran it within
 * STACKSIFT_MAINTENANCE_INTERVAL_S; it never runs beside another run (advisory lock).
 * Prints one JSON object of what it did.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_db.h"
#include "store/store.h"
#include "store/store_maintain.h"

int cli_retention(int argc, char **argv)
{
    bool force = false;
    if (argc < 2 || strcmp(argv[1], "run") != 0 ||
        (argc == 3 && !(force = strcmp(argv[2], "--force") == 0)) || argc > 3) {
        fprintf(stderr, "usage: stacksift retention run [--force]\n");
        return 2;
    }
    cli_db db;
    err_info err = {0};
    int status = cli_db_open(&db, &err);
    if (status == 2)
        return 2;
    const config *cfg = &db.cfg;
    char host[64] = "cli";
    if (!cfg->node_name && gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "cli");
    store_retention_options o = {
        .node = cfg->node_name ? cfg->node_name : host,
        .report_days = cfg->retention_days,
        .aggregate_days = cfg->aggregate_retention_days,
        .dsym_days = cfg->dsym_retention_days,
        .interval_s = cfg->maintenance_interval_s,
        .ahead_days = 7,
        .force = force,
    };
    store_retention_result r;
    if (status != 0 || store_retention_run(&r, db.s, &o, &err) != ERR_OK) {
        status = 1;
        fprintf(stderr, "stacksift retention: %s\n", err.msg);
        goto done;
    }
    printf("{\"ran\":%s,\"partitions_created\":%u,\"partitions_dropped\":%u,"
           "\"reports_expired\":%lld,\"issues_expired\":%lld,\"issue_days_expired\":%lld,"
           "\"dsyms_expired\":%lld,\"blobs_deleted\":%lld,\"ms\":%.1f}\n",
           r.ran ? "true" : "false", r.partitions_created, r.partitions_dropped,
           (long long)r.reports_expired, (long long)r.issues_expired,
           (long long)r.issue_days_expired, (long long)r.dsyms_expired,
           (long long)r.blobs_deleted, r.ms);
    status = 0;
done:
    cli_db_close(&db);
    return status;
}
