/*
 * stacksift serve - the HTTP service. Configuration comes from the environment
 * (config/config.c; `stacksift serve --help` lists it); SIGTERM or SIGINT stops it gracefully.
 * Nodes share nothing but Postgres: DATA_DIR holds this node's symcache cache and scratch
 * space only, and may start empty.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ingest/regroup.h"
#include "config/config.h"
#include "http/http.h"
#include "ingest/alerts.h"
#include "ingest/callsites.h"
#include "ingest/ingest.h"
#include "ingest/maintain.h"
#include "ingest/pipeline.h"
#include "ingest/symfiles.h"
#include "log/log.h"
#include "store/store.h"
#include "store/store_sessions.h"
#include "store/store_blobs.h"

/* `url` with application_name = `node` (checked: [A-Za-z0-9._-]), so that the database knows
 * which node a connection belongs to: reports.received_by defaults to it. Settings inside
 * the URL win over store.c's defaults. malloc'd. */
static char *url_for_node(const char *url, const char *node)
{
    buf b;
    buf_init(&b);
    bool uri = strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0;
    buf_printf(&b, "%s%sapplication_name=%s", url, uri ? (strchr(url, '?') ? "&" : "?") : " ",
               node);
    return (char *)b.data;
}

/* Rows recorded before symcaches lived in Postgres (migration 0006) whose file this node has
 * in the old place, symcache_dir/<UUID>.symc: store it, so that every node can use it. */
static void backfill_legacy(store *s, symfiles *files, const char *dir)
{
    arena *a = arena_new(0);
    store_dsym_unstored *rows;
    size_t n = 0, done = 0;
    err_info err = {0};
    if (store_dsyms_unstored(&rows, &n, s, 100000, a, &err) != ERR_OK)
        log_event(LOG_WARN, "backfill_failed", "message=%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        char path[4200], sha[65];
        bool attached = false;
        snprintf(path, sizeof path, "%.4096s/%s.symc", dir, rows[i].uuid);
        if (access(path, R_OK) != 0 || ingest_sha256_file_hex(sha, path, &err) != ERR_OK ||
            strcmp(sha, rows[i].sha256) != 0)
            continue;
        store_blob_file f = {sha, path};
        if (store_dsym_symcache_backfill(&attached, s, rows[i].uuid, &f, &err) != ERR_OK) {
            log_event(LOG_WARN, "backfill_failed", "uuid=%s message=%s", rows[i].uuid, err.msg);
            continue;
        }
        symfiles_add(files, rows[i].uuid, sha, path);
        (void)unlink(path);   /* ignored: a leftover is a stale copy nobody reads */
        done += attached;
    }
    if (done)
        log_event(LOG_INFO, "symcaches_backfilled", "count=%zu", done);
    arena_free(a);
}

static void serve_usage(FILE *f)
{
    size_t n;
    const config_doc *docs = config_docs(&n);
    fprintf(f, "usage: stacksift serve\n\nenvironment:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-30s %-16s %s\n", docs[i].name,
                docs[i].default_value ? docs[i].default_value : "(required)", docs[i].doc);
}


/* ---- a start while the database is away ------------------------------------------------ */

/* The schema check a node started without Postgres makes once it answers (schema_watch_main):
 * the same rule as at start, but a mismatch found then stops the node (SIGTERM to itself,
 * exit status 1) since it has been taking requests meanwhile. The legacy backfill runs then
 * too. */
typedef struct {
    store *s;
    symfiles *files;
    const char *symcache_dir;
    int need;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, started;
    bool mismatch;      /* read after the thread was joined */
} schema_watch;

static bool schema_ok(int version, int need)
{
    if (version < need)
        log_event(LOG_ERROR, "schema_outdated", "schema=%d needed=%d message=%s", version, need,
                  "the database schema is older than this server: run `stacksift migrate` "
                  "with the same STACKSIFT_DATABASE_URL, then start again");
    else if (version > need)
        log_event(LOG_ERROR, "schema_too_new", "schema=%d needed=%d message=%s", version, need,
                  "the database schema is newer than this server: run a newer stacksift");
    return version == need;
}

static void *schema_watch_main(void *arg)
{
    schema_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;   /* once a second: the breaker's own probes say when it is back */
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        if (w->stop)
            break;
        pthread_mutex_unlock(&w->mu);
        int version = 0;
        err_info err = {0};
        store_deadline_begin(store_timeout_ms(w->s));
        err_code rc = store_schema_version(&version, w->s, &err);
        store_deadline_end();
        pthread_mutex_lock(&w->mu);
        if (rc != ERR_OK)
            continue;
        log_event(LOG_INFO, "database_reachable", "schema=%d", version);
        if (!schema_ok(version, w->need)) {
            w->mismatch = true;
            kill(getpid(), SIGTERM);
        } else {
            pthread_mutex_unlock(&w->mu);
            backfill_legacy(w->s, w->files, w->symcache_dir);
            pthread_mutex_lock(&w->mu);
        }
        break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Open a pool; with `lazy` (the database was unreachable at start) without connecting now. */
static err_code pool_open(store **out, const config *cfg, unsigned size, bool lazy, err_info *err)
{
    return lazy ? store_open_lazy(out, cfg->database_url, size, cfg->db_timeout_ms, err)
                : store_open(out, cfg->database_url, size, cfg->db_timeout_ms, err);
}

/* The log lines of a pool's circuit breaker (store_on_breaker); `ctx` names the pool. */
static void log_breaker(void *ctx, bool opened, unsigned failures, double open_ms,
                        const char *why)
{
    if (opened)
        log_event(LOG_ERROR, "db_breaker_opened", "pool=%s failures=%u message=%s",
                  (const char *)ctx, failures, why);
    else
        log_event(LOG_WARN, "db_breaker_closed", "pool=%s open_ms=%.0f message=%s",
                  (const char *)ctx, open_ms, "a probe query was answered");
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
    schema_watch watch = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    store *s = NULL, *work_store = NULL, *count_store = NULL, *alert_store = NULL;
    alerts *deliverer = NULL;
    pipeline *pipe = NULL;
    symfiles *files = NULL;
    maintain *node = NULL;
    callsites *counters = NULL;
    http_server *srv = NULL;
    char symcache_dir[4096], scratch_dir[4096], host[64] = "";
    err_info err = {0};
    int version = 0, need = store_schema_required();
    if (!cfg.node_name) {
        /* host names of containers and machines fit the node-name rule; anything else is
         * replaced by '-' */
        if (gethostname(host, sizeof host - 1) != 0 || !host[0])
            snprintf(host, sizeof host, "node-%ld", (long)getpid());
        for (char *c = host; *c; c++)
            if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-", *c))
                *c = '-';
        cfg.node_name = strdup(host);
    }
    char *url = url_for_node(cfg.database_url, cfg.node_name);
    free(cfg.database_url);
    cfg.database_url = url;
    /* Postgres unreachable now (not a bad URL): the node starts all the same, its pools
     * connecting on demand. Until the database answers, requests that need it get 503 from
     * the breaker, Sentry envelopes go to the disk spool (tokens and DSN keys checked against
     * the table this node kept on disk), and the schema is checked when it first answers. */
    bool offline = false;
    if (store_open(&s, cfg.database_url, cfg.db_pool_size, cfg.db_timeout_ms, &err) != ERR_OK) {
        /* without the token table a node kept on disk (it never saw the database) it could
         * check no token: nothing to serve */
        char table[4200];
        snprintf(table, sizeof table, "%s/auth-table", cfg.data_dir);
        if (err.code != ERR_STORE || !cfg.offline_start || access(table, R_OK) != 0) {
            log_event(LOG_ERROR, "database_unreachable", "message=%s", err.msg);
            goto done;
        }
        log_event(LOG_WARN, "database_unreachable_at_start", "message=%s; starting without it: "
                  "requests that need it answer 503, Sentry envelopes are spooled", err.msg);
        err = (err_info){0};
        offline = true;
        if (pool_open(&s, &cfg, cfg.db_pool_size, true, &err) != ERR_OK) {
            log_event(LOG_ERROR, "database_unreachable", "message=%s", err.msg);
            goto done;
        }
    }
    store_sessions_configure(cfg.release_users_exact, cfg.sessions_device_cache);
    store_on_breaker(s, log_breaker, "requests");
    if (!offline) {
        if (store_schema_version(&version, s, &err) != ERR_OK) {
            log_event(LOG_ERROR, "schema_check_failed", "message=%s", err.msg);
            goto done;
        }
        if (!schema_ok(version, need))
            goto done;
        char rules[128] = "";
        bool older = false;
        if (regroup_needed(&older, rules, sizeof rules, s, &err) == ERR_OK && older)
            log_event(LOG_WARN, "grouping_rules_outdated", "stored=%s current=%s message=%s",
                      rules, SIGNATURE_VERSION,
                      "stored reports were grouped by other rules: run `stacksift regroup` "
                      "(or `stacksift migrate`) so that new reports join their issues");
        err = (err_info){0};
    }
    /* Workers hold a connection for a whole batch: they get their own pool. */
    if (cfg.workers > 0 && pool_open(&work_store, &cfg, cfg.workers, offline, &err) != ERR_OK) {
        log_event(LOG_ERROR, "database_unreachable", "message=%s", err.msg);
        goto done;
    }
    /* The call site workers likewise, as many as the report workers. */
    if (cfg.workers > 0 && pool_open(&count_store, &cfg, cfg.workers, offline, &err) != ERR_OK) {
        log_event(LOG_ERROR, "database_unreachable", "message=%s", err.msg);
        goto done;
    }
    if (work_store)
        store_on_breaker(work_store, log_breaker, "report_workers");
    if (count_store)
        store_on_breaker(count_store, log_breaker, "callsite_workers");
    /* A worker's batch statements may take longer than a request's; they still fail, rather
     * than hang, when the database does. */
    if (work_store)
        store_set_statement_timeout(work_store, 10 * cfg.db_timeout_ms);
    if (count_store)
        store_set_statement_timeout(count_store, 10 * cfg.db_timeout_ms);
    snprintf(symcache_dir, sizeof symcache_dir, "%s/symcaches", cfg.data_dir);
    snprintf(scratch_dir, sizeof scratch_dir, "%s/tmp", cfg.data_dir);
    if (mkdir(cfg.data_dir, 0755) != 0 && errno != EEXIST) {
        log_event(LOG_ERROR, "data_dir_unusable", "path=%s message=%s", cfg.data_dir,
                  strerror(errno));
        goto done;
    }
    if (symfiles_open(&files, s, symcache_dir, cfg.symcache_cache_bytes, &err) != ERR_OK) {
        log_event(LOG_ERROR, "data_dir_unusable", "message=%s", err.msg);
        goto done;
    }
    if (!offline)
        backfill_legacy(s, files, symcache_dir);
    pipeline_options po = {
        .files = files,
        .symcache_dir = symcache_dir,
        .scratch_dir = scratch_dir,
        .workers = cfg.workers,
        .batch = cfg.worker_batch,
        .symcache_max_open = cfg.symcache_open_max,
        .stack_cache_bytes = cfg.stack_cache_bytes,
        .signature_frames = cfg.signature_frames,
        .max_report_bytes = cfg.max_report_bytes,
        .idle_poll_ms = 50,
        .nice = cfg.worker_nice,
        .at_intake = cfg.intake_processing != 0,
    };
    if (pipeline_new(&pipe, work_store, &po, &err) != ERR_OK) {
        log_event(LOG_ERROR, "pipeline_failed", "message=%s", err.msg);
        goto done;
    }
    callsites_options co = {
        .workers = cfg.workers,
        .batch = cfg.worker_batch,
        .signature_frames = cfg.signature_frames,
        .idle_poll_ms = 50,
        .nice = cfg.worker_nice,
    };
    if (callsites_new(&counters, count_store, pipe, &co, &err) != ERR_OK) {
        log_event(LOG_ERROR, "pipeline_failed", "message=%s", err.msg);
        goto done;
    }
    maintain_options mo = {
        .node = cfg.node_name,
        .store = s,
        .pipe = pipe,
        .files = files,
        .retention = {
            .report_days = cfg.retention_days,
            .aggregate_days = cfg.aggregate_retention_days,
            .dsym_days = cfg.dsym_retention_days,
            .interval_s = cfg.maintenance_interval_s,
            .ahead_days = 7,
        },
    };
    if (maintain_start(&node, &mo, &err) != ERR_OK) {
        log_event(LOG_ERROR, "maintenance_failed", "message=%s", err.msg);
        goto done;
    }
    if (http_server_start(&srv, &cfg, s, pipe, node, counters, &err) != ERR_OK) {
        log_event(LOG_ERROR, "listen_failed", "message=%s", err.msg);
        goto done;
    }
    if (pipeline_start(pipe, &err) != ERR_OK || callsites_start(counters, &err) != ERR_OK) {
        log_event(LOG_ERROR, "pipeline_failed", "message=%s", err.msg);
        goto done;
    }
    if (cfg.alerts) {
        /* Webhook deliveries claim and record with statements of their own: one connection
         * of their own, never one of the request pool. */
        char public_url[300];
        if (cfg.public_url)
            snprintf(public_url, sizeof public_url, "%s", cfg.public_url);
        else
            snprintf(public_url, sizeof public_url, strchr(cfg.listen_host, ':') ? "http://[%s]:%u"
                     : "http://%s:%u", cfg.listen_host, (unsigned)cfg.listen_port);
        alerts_options ao = {
            .poll_ms = cfg.alert_poll_ms,
            .retry_base_ms = cfg.alert_retry_ms,
            .give_up_s = cfg.alert_give_up_s,
            .timeout_ms = cfg.alert_timeout_ms,
            .sweep_s = cfg.alert_sweep_s,
            .per_url = 4,
            .max_flights = 64,
            .stop_ms = cfg.shutdown_timeout_ms,
            .public_url = public_url,
        };
        if (pool_open(&alert_store, &cfg, 1, offline, &err) == ERR_OK)
            store_on_breaker(alert_store, log_breaker, "alerts");
        if (alert_store == NULL || alerts_new(&deliverer, alert_store, &ao, &err) != ERR_OK ||
            alerts_start(deliverer, &err) != ERR_OK) {
            log_event(LOG_ERROR, "alerts_failed", "message=%s", err.msg);
            goto done;
        }
    }
    log_event(LOG_INFO, "server_started", "node=%s listen=%s port=%u http_threads=%u "
              "db_pool=%u workers=%u data_dir=%s schema=%d", cfg.node_name, cfg.listen_host,
              (unsigned)cfg.listen_port, cfg.http_threads, cfg.db_pool_size, cfg.workers,
              cfg.data_dir, version);
    if (offline) {
        watch.s = s;
        watch.files = files;
        watch.symcache_dir = symcache_dir;
        watch.need = need;
        watch.started = pthread_create(&watch.thread, NULL, schema_watch_main, &watch) == 0;
        if (!watch.started) {
            log_event(LOG_ERROR, "server_failed", "message=%s", "cannot start the schema check");
            goto done;
        }
    }

    int sig = 0;
    sigwait(&stop, &sig);
    log_event(LOG_INFO, "server_stopping", "signal=%s timeout_ms=%u",
              sig == SIGTERM ? "SIGTERM" : "SIGINT", cfg.shutdown_timeout_ms);
    alerts_stop(deliverer);   /* webhooks in flight get the same time as requests, meanwhile */
    unsigned left = http_server_stop(srv);
    srv = NULL;
    pipeline_stop(pipe);   /* a batch in progress is committed or rolled back */
    alerts_free(deliverer);   /* deliveries still in flight are released for any node */
    deliverer = NULL;
    callsites_stop(counters);
    log_event(left ? LOG_WARN : LOG_INFO, "server_stopped", "unfinished_requests=%u", left);
    status = left ? 1 : 0;
done:
    if (watch.started) {
        pthread_mutex_lock(&watch.mu);
        watch.stop = true;
        pthread_cond_signal(&watch.cv);
        pthread_mutex_unlock(&watch.mu);
        pthread_join(watch.thread, NULL);
        if (watch.mismatch)
            status = 1;
    }
    pthread_mutex_destroy(&watch.mu);
    pthread_cond_destroy(&watch.cv);
    http_server_stop(srv);
    maintain_stop(node);
    alerts_free(deliverer);
    callsites_free(counters);   /* before the pipeline: its workers use the caches */
    pipeline_free(pipe);
    symfiles_close(files);
    store_close(alert_store);
    store_close(count_store);
    store_close(work_store);
    store_close(s);
    config_reset(&cfg);
    return status;
}
