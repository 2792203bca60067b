/*
 * stacksift regroup [--page N] [--if-needed]
 *
 * Brings the stored reports to this binary's grouping rules (SIGNATURE_VERSION): every grouped
 * report is re-signed and its issue merged or split as the rules now say (regroup_run), with
 * counts, first/last seen, versions, status and resolved-in carried and no new-issue alert.
 * --if-needed: only when the stored fingerprints were made by other rules, or their names by
 * another demangler revision (DEMANGLE_REVISION: its output changed), which is what `stacksift
 * migrate` does after its migrations. Symcaches come from the store, cached in
 * STACKSIFT_DATA_DIR as `serve` keeps them. Prints one JSON object of what it did.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cli_db.h"
#include "cli/cli_regroup.h"
#include "config/config.h"
#include "ingest/pipeline.h"
#include "ingest/regroup.h"
#include "ingest/symfiles.h"
#include "base/arena.h"
#include "store/store_regroup.h"
#include "demangle/demangle.h"
#include "log/log.h"
#include "signature/signature.h"
#include "store/store.h"

int cli_regroup_store(const config *cfg, store *s, bool if_needed, size_t page)
{
    err_info err = {0};
    char stored[128] = "";
    bool needed = false;
    symfiles *files = NULL;
    pipeline *p = NULL;
    int status = 1;
    char symcache_dir[4200], scratch_dir[4200];
    if (regroup_needed(&needed, stored, sizeof stored, s, &err) != ERR_OK)
        goto done;
    if (if_needed && !needed) {
        printf("{\"regrouped\":false,\"rules\":\"%s\"}\n", SIGNATURE_VERSION);
        status = 0;
        goto done;
    }
    /* a database without grouped reports (a new one) has nothing to re-sign: no symcaches */
    arena *probe = arena_new(64u << 20);
    store_claimed *first = NULL;
    size_t nfirst = 0;
    err_code prc = store_regroup_page(&first, &nfirst, s, NULL, NULL, 1, probe, &err);
    arena_free(probe);
    if (prc != ERR_OK)
        goto done;
    if (nfirst == 0) {
        store_regroup_stats none;
        if (store_regroup_apply(&none, s, SIGNATURE_VERSION, DEMANGLE_REVISION, &err) != ERR_OK)
            goto done;
        printf("{\"regrouped\":true,\"from\":\"%s\",\"rules\":\"%s\",\"reports\":0,"
               "\"moved\":0,\"issues_before\":0,\"issues_after\":0,\"merged\":0,"
               "\"created\":0}\n", stored, SIGNATURE_VERSION);
        fflush(stdout);
        status = 0;
        goto done;
    }
    snprintf(symcache_dir, sizeof symcache_dir, "%s/symcaches", cfg->data_dir);
    snprintf(scratch_dir, sizeof scratch_dir, "%s/tmp", cfg->data_dir);
    if (mkdir(cfg->data_dir, 0755) != 0 && errno != EEXIST) {
        err_set(&err, ERR_IO, "creating %s: %s", cfg->data_dir, strerror(errno));
        goto done;
    }
    if (symfiles_open(&files, s, symcache_dir, cfg->symcache_cache_bytes, &err) != ERR_OK)
        goto done;
    pipeline_options po = {
        .files = files,
        .symcache_dir = symcache_dir,
        .scratch_dir = scratch_dir,
        .workers = 0,
        .symcache_max_open = cfg->symcache_open_max,
        .stack_cache_bytes = cfg->stack_cache_bytes,
        .signature_frames = cfg->signature_frames,
        .max_report_bytes = cfg->max_report_bytes,
    };
    if (pipeline_new(&p, NULL, &po, &err) != ERR_OK)
        goto done;
    store_regroup_stats st;
    if (regroup_run(&st, s, p, page, NULL, NULL, &err) != ERR_OK)
        goto done;
    printf("{\"regrouped\":true,\"from\":\"%s\",\"rules\":\"%s\",\"reports\":%lld,"
           "\"moved\":%lld,\"issues_before\":%lld,\"issues_after\":%lld,\"merged\":%lld,"
           "\"created\":%lld}\n",
           stored, SIGNATURE_VERSION, (long long)st.reports, (long long)st.moved,
           (long long)st.issues_before, (long long)st.issues_after, (long long)st.merged,
           (long long)st.created);
    fflush(stdout);
    status = 0;
done:
    if (status != 0)
        fprintf(stderr, "stacksift regroup: %s\n", err.msg);
    pipeline_free(p);
    symfiles_close(files);
    return status;
}

int cli_regroup(int argc, char **argv)
{
    bool if_needed = false;
    size_t page = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--if-needed") == 0) {
            if_needed = true;
        } else if (strcmp(argv[i], "--page") == 0 && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > 10000) {
                fprintf(stderr, "stacksift regroup: --page takes 1..10000\n");
                return 2;
            }
            page = v;
        } else {
            int help = strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
            fprintf(help ? stdout : stderr,
                    "usage: stacksift regroup [--page N] [--if-needed]   (database from "
                    "STACKSIFT_DATABASE_URL)\n");
            return help ? 0 : 2;
        }
    }
    cli_db db;
    err_info err = {0};
    int status = cli_db_open(&db, &err);
    if (status == 1)
        fprintf(stderr, "stacksift regroup: %s\n", err.msg);
    else if (status == 0)
        status = cli_regroup_store(&db.cfg, db.s, if_needed, page);
    cli_db_close(&db);
    return status;
}
