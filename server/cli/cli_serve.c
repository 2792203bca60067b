/*
 * stacksift serve - the HTTP service. Configuration comes from the environment
 * (config/config.c; `stacksift serve --help` lists it); SIGTERM or SIGINT stops it gracefully.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "config/config.h"
#include "http/http.h"
#include "ingest/pipeline.h"
#include "log/log.h"
#include "store/store.h"

static void serve_usage(FILE *f)
{
    size_t n;
    const config_doc *docs = config_docs(&n);
    fprintf(f, "usage: stacksift serve\n\nenvironment:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-30s %-16s %s\n", docs[i].name,
                docs[i].default_value ? docs[i].default_value : "(required)", docs[i].doc);
}

int cli_serve(int argc, char **argv)
{
    if (argc > 1) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        serve_usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    config cfg;
    if (config_load_logged(&cfg) != ERR_OK)
        return 2;
    log_set_level(cfg.log_level);

    /* Block the stop signals before any thread exists, so that only sigwait() sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    int status = 1;
    store *s = NULL, *work_store = NULL;
    pipeline *pipe = NULL;
    http_server *srv = NULL;
    char symcache_dir[4096];
    err_info err = {0};
    int version = 0, need = store_schema_required();
    if (store_open(&s, cfg.database_url, cfg.db_pool_size, cfg.db_timeout_ms, &err) != ERR_OK) {
        log_event(LOG_ERROR, "database_unreachable", "message=%s", err.msg);
        goto done;
    }
    if (store_schema_version(&version, s, &err) != ERR_OK) {
        log_event(LOG_ERROR, "schema_check_failed", "message=%s", err.msg);
        goto done;
    }
    if (version < need) {
        log_event(LOG_ERROR, "schema_outdated", "schema=%d needed=%d message=%s", version, need,
                  "the database schema is older than this server: run `stacksift migrate` "
                  "with the same STACKSIFT_DATABASE_URL, then start again");
        goto done;
    }
    if (version > need) {
        log_event(LOG_ERROR, "schema_too_new", "schema=%d needed=%d message=%s", version, need,
                  "the database schema is newer than this server: run a newer stacksift");
        goto done;
    }
    /* Workers hold a connection for a whole batch: they get their own pool. */
    if (cfg.workers > 0 && store_open(&work_store, cfg.database_url, cfg.workers,
                                      cfg.db_timeout_ms, &err) != ERR_OK) {
        log_event(LOG_ERROR, "database_unreachable", "message=%s", err.msg);
        goto done;
    }
    snprintf(symcache_dir, sizeof symcache_dir, "%s/symcaches", cfg.data_dir);
    pipeline_options po = {
        .symcache_dir = symcache_dir,
        .workers = cfg.workers,
        .batch = cfg.worker_batch,
        .symcache_max_open = cfg.symcache_open_max,
        .stack_cache_bytes = cfg.stack_cache_bytes,
        .signature_frames = cfg.signature_frames,
        .max_report_bytes = cfg.max_report_bytes,
        .idle_poll_ms = 50,
    };
    if (pipeline_new(&pipe, work_store, &po, &err) != ERR_OK) {
        log_event(LOG_ERROR, "pipeline_failed", "message=%s", err.msg);
        goto done;
    }
    if (http_server_start(&srv, &cfg, s, pipe, &err) != ERR_OK) {
        log_event(LOG_ERROR, "listen_failed", "message=%s", err.msg);
        goto done;
    }
    if (pipeline_start(pipe, &err) != ERR_OK) {
        log_event(LOG_ERROR, "pipeline_failed", "message=%s", err.msg);
        goto done;
    }
    log_event(LOG_INFO, "server_started", "listen=%s port=%u http_threads=%u db_pool=%u "
              "workers=%u data_dir=%s schema=%d", cfg.listen_host, (unsigned)cfg.listen_port,
              cfg.http_threads, cfg.db_pool_size, cfg.workers, cfg.data_dir, version);

    int sig = 0;
    sigwait(&stop, &sig);
    log_event(LOG_INFO, "server_stopping", "signal=%s timeout_ms=%u",
              sig == SIGTERM ? "SIGTERM" : "SIGINT", cfg.shutdown_timeout_ms);
    unsigned left = http_server_stop(srv);
    srv = NULL;
    pipeline_stop(pipe);   /* a batch in progress is committed or rolled back */
    log_event(left ? LOG_WARN : LOG_INFO, "server_stopped", "unfinished_requests=%u", left);
    status = left ? 1 : 0;
done:
    http_server_stop(srv);
    pipeline_free(pipe);
    store_close(work_store);
    store_close(s);
    config_reset(&cfg);
    return status;
}
