/*
 * maintain - heartbeat and retention thread (see maintain.h).
 */
#include "ingest/maintain.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/xalloc.h"
#include "log/log.h"

#define RETENTION_TRY_S 60

struct maintain {
    maintain_options o;
    char *node;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
};

static void heartbeat(maintain *m, bool starting)
{
    pipeline_stats ps;
    symfiles_stats fs = {0};
    pipeline_stats_get(&ps, m->o.pipe);
    if (m->o.files)
        symfiles_stats_get(&fs, m->o.files);
    store_node_beat b = {
        .name = m->node,
        .workers = ps.workers,
        .in_progress = (unsigned)ps.in_progress,
        .processed = ps.processed + ps.pending + ps.failed,
        .cache_hits = fs.hits,
        .cache_misses = fs.misses,
    };
    err_info err = {0};
    if (store_node_heartbeat(m->o.store, &b, starting, &err) != ERR_OK)
        log_event(LOG_WARN, "heartbeat_failed", "node=%s message=%s", m->node, err.msg);
}

static void retention(maintain *m)
{
    store_retention_result r;
    err_info err = {0};
    err_code rc = store_retention_run(&r, m->o.store, &m->o.retention, &err);
    if (rc != ERR_OK) {
        log_event(LOG_WARN, "retention_failed", "node=%s error=%s message=%s", m->node,
                  err_name(rc), err.msg);
        return;
    }
    if (r.ran)
        log_event(LOG_INFO, "retention_done", "node=%s partitions_created=%u "
                  "partitions_dropped=%u reports_expired=%lld issues_expired=%lld "
                  "issue_days_expired=%lld dsyms_expired=%lld blobs_deleted=%lld ms=%.1f",
                  m->node, r.partitions_created, r.partitions_dropped,
                  (long long)r.reports_expired, (long long)r.issues_expired,
                  (long long)r.issue_days_expired, (long long)r.dsyms_expired,
                  (long long)r.blobs_deleted, r.ms);
}

/* Sleep up to `s` seconds; false once stopping. */
static bool nap(maintain *m, unsigned s)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += s;
    pthread_mutex_lock(&m->mu);
    if (!m->stopping)
        pthread_cond_timedwait(&m->cv, &m->mu, &dl);
    bool go_on = !m->stopping;
    pthread_mutex_unlock(&m->mu);
    return go_on;
}

static void *maintain_main(void *arg)
{
    maintain *m = arg;
    /* Retention is tried at once (a node that was down for a day catches up), then every
     * minute; store_retention_run skips while another node runs it or it ran recently. */
    unsigned since_retention = RETENTION_TRY_S;
    for (;;) {
        if (since_retention >= RETENTION_TRY_S) {
            retention(m);
            since_retention = 0;
        }
        if (!nap(m, MAINTAIN_HEARTBEAT_S))
            break;
        since_retention += MAINTAIN_HEARTBEAT_S;
        heartbeat(m, false);
    }
    return NULL;
}

err_code maintain_start(maintain **out, const maintain_options *o, err_info *err)
{
    maintain *m = xcalloc(1, sizeof *m);
    m->o = *o;
    m->node = xstrdup(o->node);
    m->o.retention.node = m->node;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    heartbeat(m, true);
    int e = pthread_create(&m->thread, NULL, maintain_main, m);
    if (e != 0) {
        pthread_mutex_destroy(&m->mu);
        pthread_cond_destroy(&m->cv);
        free(m->node);
        free(m);
        *out = NULL;
        return err_set(err, ERR_INTERNAL, "starting the maintenance thread: %s", strerror(e));
    }
    *out = m;
    return ERR_OK;
}

void maintain_stop(maintain *m)
{
    if (m == NULL)
        return;
    pthread_mutex_lock(&m->mu);
    m->stopping = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m->node);
    free(m);
}

void maintain_metrics_render(buf *out, maintain *m)
{
    if (m == NULL)
        return;
    if (m->o.files)
        symfiles_metrics_render(out, m->o.files);
    err_info err = {0};
    if (store_nodes_metrics(out, m->o.store, MAINTAIN_STALE_S, &err) != ERR_OK)
        log_event(LOG_WARN, "node_metrics_failed", "message=%s", err.msg);
}
