/*
 * routes_sentry - the Sentry SDK endpoints: POST /api/{project_id}/envelope/ and the legacy
 * POST /api/{project_id}/store/, answered as Relay answers them: 200 {"id":"<event_id>"}
 * once the event is durable (committed to Postgres, or fsync'd into this node's disk spool
 * while Postgres is unreachable), a JSON error otherwise.
 *
 * Auth as Relay takes it, first found wins: X-Sentry-Auth ("Sentry sentry_key=KEY, ..."),
 * Authorization ("Sentry sentry_key=KEY, ..."), ?sentry_key=, then the envelope header's
 * "dsn" (server/auth parses them all). The key must be a DSN key of the path's project.
 *
 * The event goes to the group commit as POST /api/v1/reports' rows do (store_intake_submit):
 * parsed on the libmicrohttpd thread that read it (a small body) or on a handler thread
 * (server.c, "handler threads"), which hands the suspended connection to the commit and
 * moves on; the commit's verdict resumes it (event_committed), and the answer is sent then.
 * What waits (sessions written to Postgres, the spool's fsync) never runs on a
 * libmicrohttpd thread: an envelope parsed there that needs it goes on on a handler thread
 * (handler_offload, sentry_resume).
 *
 * The spool (ingest/spool.h): an envelope whose commit fails with ERR_STORE is written to
 * STACKSIFT_DATA_DIR/spool (on a handler thread again: handler_requeue) and answered 200; a replay thread commits spooled envelopes
 * oldest first once Postgres answers again and removes each after its commit. While the spool
 * holds entries and Postgres is known to be down, new envelopes go straight to the spool
 * (order kept, no client waits for a doomed commit). A full spool answers 429 + Retry-After.
 * DSN keys are checked against the in-memory key table, so a key is checked before its
 * envelope is spooled even while Postgres is down.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/xalloc.h"
#include "http/http_internal.h"
#include "http/metrics.h"
#include "ingest/ingest_sentry.h"
#include "ingest/sessions.h"
#include "ingest/spool.h"
#include "log/log.h"

#define REPLAY_BACKOFF_MAX_MS 5000

struct sentry_state {
    spool *sp;
    pthread_t replay;
    bool replay_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    atomic_bool db_down;      /* the last commit (live or replay) failed with ERR_STORE */
    atomic_uint_fast64_t spooled, replayed, dropped;
};

/* ---- auth ------------------------------------------------------------------------------- */

/* The project id of the path ("/api/42/envelope/"): decimal, > 0. */
static bool path_project(int64_t *out, const char *param)
{
    if (param == NULL || *param == '\0' || strlen(param) > 18)
        return false;
    int64_t v = 0;
    for (const char *p = param; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return v > 0;
}

/* ERR_OK when `key` is a live DSN key of project `pid` (the in-memory key table: no database
 * round trip, so it works while Postgres is down). Errors ERR_UNAUTHORIZED (unknown,
 * malformed, expired), ERR_FORBIDDEN (another project's key). */
static err_code key_check(http_server *srv, int64_t pid, const char *key, err_info *err)
{
    int64_t kp = 0;
    err_code rc = auth_dsn_key_check(&kp, srv->tokens, key, err);
    if (rc != ERR_OK)
        return rc;
    if (kp != pid)
        return err_set(err, ERR_FORBIDDEN, "this DSN key belongs to project %" PRId64 ", not to "
                       "project %" PRId64 " of the path", kp, pid);
    return ERR_OK;
}

/* The preamble of the upload routes: the path's project id into *pid (`route` names the
 * path's last segment for the 404 message), then a DSN key from X-Sentry-Auth, Authorization
 * or ?sentry_key= (Relay's order), checked against that project before the body is read.
 * *have_key is false, and ERR_OK is returned, when none of them carries a key: the caller
 * decides (an envelope's header may name one; a minidump has none). Errors into r->err:
 * ERR_NOT_FOUND (path), ERR_UNAUTHORIZED (malformed, unknown, expired key), ERR_FORBIDDEN
 * (another project's key). */
static err_code sentry_auth_resolve(int64_t *pid, bool *have_key, http_request *r,
                                    const char *route)
{
    *have_key = false;
    if (!path_project(pid, r->param))
        return err_set(&r->err, ERR_NOT_FOUND, "no such project: the path must be "
                       "/api/{numeric project id}/%s/", route);
    char key[AUTH_DSN_KEY_MAX];
    err_code rc = auth_sentry_key_find(
        key, MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Sentry-Auth"),
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        request_arg(r, "sentry_key"), &r->err);
    if (rc == ERR_NOT_FOUND)
        return ERR_OK;
    if (rc != ERR_OK)
        return rc;
    *have_key = true;
    return key_check(r->srv, *pid, key, &r->err);
}

/* ---- answers ------------------------------------------------------------------------------ */

/* 200 {"id":"<event_id>"} (32 hex digits, as Sentry writes it), {} for an envelope without
 * an event (sessions only), as Relay answers. */
static enum MHD_Result sentry_answer(http_request *r, const ingest_sentry_result *res)
{
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    if (res->has_event)
        jsonw_kstr(&w, "id", res->event_id);
    jsonw_object_end(&w);
    metrics_sentry_answered(res->has_event);
    return respond_json(r, 200, &body);
}

static enum MHD_Result sentry_refused(http_request *r, err_code rc)
{
    metrics_sentry_refused(rc);
    return respond_err(r, &r->err);
}

/* The envelope's session items into the release view (ingest/sessions.h): every `session`
 * update in one call, each `sessions` aggregate in its own. A session item that does not parse
 * is dropped and counted (stacksift_sentry_sessions_dropped_total), never a reason to refuse
 * the event beside it. Errors ERR_STORE (Postgres unreachable: the caller spools the envelope;
 * updates are idempotent, aggregates are not and are then counted again at replay). */
static err_code sentry_sessions_record(http_server *srv, int64_t pid, const ingest_sentry_result *res,
                                       arena *a, err_info *err)
{
    if (res->nsessions == 0)
        return ERR_OK;
    session_update *upd = arena_alloc_array(a, res->nsessions, sizeof *upd, err);
    if (upd == NULL)
        return ERR_TOO_LARGE;
    size_t nupd = 0;
    char field[SESSIONS_FIELD_MAX];
    sessions_result sr;
    for (size_t i = 0; i < res->nsessions; i++) {
        const ingest_sentry_session *it = &res->sessions[i];
        err_info perr = {0};
        err_code rc;
        if (!it->aggregate) {
            rc = sessions_parse_sentry_session(&upd[nupd], field, (const char *)it->payload,
                                               it->len, a, &perr);
            if (rc == ERR_OK)
                nupd++;
        } else {
            session_aggregate *ag;
            size_t n;
            rc = sessions_parse_sentry_aggregates(&ag, &n, field, (const char *)it->payload,
                                                  it->len, a, &perr);
            if (rc == ERR_OK)
                rc = sessions_ingest_aggregates(&sr, field, srv->store, pid, ag, n, "aggregates",
                                                0, &perr);
            if (rc == ERR_STORE)
                return err_set(err, ERR_STORE, "%s", perr.msg);
        }
        if (rc != ERR_OK) {
            metrics_sentry_session_dropped();
            log_event(LOG_INFO, "sentry_session_dropped", "project=%" PRId64 " message=%s", pid,
                      perr.msg);
        }
    }
    if (nupd == 0)
        return ERR_OK;
    err_info ierr = {0};
    err_code rc = sessions_ingest(&sr, field, srv->store, pid, upd, nupd, "session", 0, &ierr);
    if (rc == ERR_STORE)
        return err_set(err, ERR_STORE, "%s", ierr.msg);
    if (rc != ERR_OK) {
        metrics_sentry_session_dropped();
        log_event(LOG_INFO, "sentry_session_dropped", "project=%" PRId64 " message=%s", pid,
                  ierr.msg);
    }
    return ERR_OK;
}

/* ---- commit -------------------------------------------------------------------------------- */

/* A spooled envelope's content, committed for project `pid`: its sessions, then its event
 * (an event stored already, because the spool entry outlived its commit in a crash, is not
 * stored again: report_claims). Blocking: for the replay thread. Errors ERR_STORE (Postgres
 * unreachable: nothing half stored that a replay would not redo), others as
 * store_intake_insert. */
static err_code commit_result(http_server *srv, int64_t pid, ingest_sentry_result *res,
                              arena *a, err_info *err)
{
    err_code rc = sentry_sessions_record(srv, pid, res, a, err);
    if (rc != ERR_OK)
        return rc;
    if (!res->has_event)
        return ERR_OK;
    res->row.id = res->id;
    char id[37];
    return store_intake_insert(id, srv->intake, &res->row, err);
}

/* ---- replay ------------------------------------------------------------------------------ */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One spool entry: ERR_STORE leaves it for later; anything else removes it. */
static err_code replay_one(http_server *srv, sentry_state *st, const spool_entry *e, arena *a)
{
    err_info err = {0};
    ingest_sentry_input in = {
        .body = e->body,
        .len = e->len,
        .store_endpoint = strcmp(e->kind, "store") == 0,
        .max_body_bytes = e->len + 1,
        .max_event_bytes = srv->cfg->max_report_bytes,
        .pipe = srv->pipe,
        .project_id = e->project_id,
    };
    ingest_sentry_result res;
    err_code rc = ingest_sentry_prepare(&res, &in, a, &err);
    if (rc == ERR_OK)
        rc = commit_result(srv, e->project_id, &res, a, &err);
    if (rc == ERR_STORE)
        return rc;
    if (rc == ERR_OK) {
        atomic_fetch_add(&st->replayed, 1);
        log_event(LOG_INFO, "sentry_spool_replayed", "seq=%" PRIu64 " project=%" PRId64,
                  e->seq, e->project_id);
    } else {
        atomic_fetch_add(&st->dropped, 1);
        log_event(LOG_WARN, "sentry_spool_dropped", "seq=%" PRIu64 " error=%s message=%s",
                  e->seq, err_name(rc), err.msg);
    }
    err_info rerr = {0};
    if (spool_remove(st->sp, e->seq, &rerr) != ERR_OK)
        log_event(LOG_ERROR, "sentry_spool_remove_failed", "message=%s", rerr.msg);
    return ERR_OK;
}

static void *replay_main(void *arg)
{
    http_server *srv = arg;
    sentry_state *st = srv->sentry;
    unsigned backoff = 0;
    for (;;) {
        pthread_mutex_lock(&st->mu);
        if (st->stop) {
            pthread_mutex_unlock(&st->mu);
            break;
        }
        uint64_t entries, bytes;
        spool_stats(st->sp, &entries, &bytes);
        if (entries == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&st->cv, &st->mu, &ts);
            pthread_mutex_unlock(&st->mu);
            continue;
        }
        pthread_mutex_unlock(&st->mu);
        if (backoff > 0)
            sleep_ms(backoff);
        arena *a = arena_new((size_t)srv->cfg->max_report_bytes * 24 + (16u << 20));
        spool_entry e;
        err_info err = {0};
        err_code rc = spool_oldest(&e, st->sp, a, &err);
        if (rc == ERR_INVALID) {
            log_event(LOG_WARN, "sentry_spool_dropped", "seq=%" PRIu64 " message=%s", e.seq,
                      err.msg);
            atomic_fetch_add(&st->dropped, 1);
            spool_remove(st->sp, e.seq, &err);
        } else if (rc == ERR_OK) {
            rc = replay_one(srv, st, &e, a);
        }
        arena_free(a);
        if (rc == ERR_STORE) {
            atomic_store(&st->db_down, true);
            backoff = backoff == 0 ? 250 : backoff * 2 > REPLAY_BACKOFF_MAX_MS
                                               ? REPLAY_BACKOFF_MAX_MS : backoff * 2;
        } else {
            if (rc == ERR_OK)
                atomic_store(&st->db_down, false);
            backoff = rc == ERR_OK || rc == ERR_INVALID ? 0 : 1000;
        }
    }
    return NULL;
}

err_code sentry_start(http_server *srv, err_info *err)
{
    sentry_state *st = xcalloc(1, sizeof *st);
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/spool", srv->cfg->data_dir);
    err_code rc = spool_open(&st->sp, dir, srv->cfg->spool_bytes, err);
    if (rc != ERR_OK) {
        free(st);
        return rc;
    }
    srv->sentry = st;
    uint64_t entries, bytes;
    spool_stats(st->sp, &entries, &bytes);
    if (entries > 0)
        log_event(LOG_INFO, "sentry_spool_found", "entries=%" PRIu64 " bytes=%" PRIu64,
                  entries, bytes);
    if (pthread_create(&st->replay, NULL, replay_main, srv) != 0) {
        sentry_free(srv);
        return err_set(err, ERR_INTERNAL, "cannot start the spool replay thread");
    }
    st->replay_started = true;
    return ERR_OK;
}

void sentry_stop(http_server *srv)
{
    sentry_state *st = srv->sentry;
    if (st == NULL || !st->replay_started)
        return;
    pthread_mutex_lock(&st->mu);
    st->stop = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    pthread_join(st->replay, NULL);
    st->replay_started = false;
}

void sentry_free(http_server *srv)
{
    sentry_state *st = srv->sentry;
    if (st == NULL)
        return;
    sentry_stop(srv);
    spool_close(st->sp);
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    free(st);
    srv->sentry = NULL;
}

void sentry_metrics_render(buf *out, http_server *srv)
{
    sentry_state *st = srv->sentry;
    uint64_t entries = 0, bytes = 0;
    if (st != NULL)
        spool_stats(st->sp, &entries, &bytes);
    metrics_sentry_render(out, entries, bytes, st ? atomic_load(&st->spooled) : 0,
                          st ? atomic_load(&st->replayed) : 0, st ? atomic_load(&st->dropped) : 0);
}

/* ---- the endpoints ----------------------------------------------------------------------- */

/* Spool the request's decoded body: 200 once it is on disk, 429 when the spool is full. */
static enum MHD_Result spool_and_answer(http_request *r, int64_t pid, bool store_endpoint,
                                        const ingest_sentry_result *res)
{
    sentry_state *st = r->srv->sentry;
    err_info err = {0};
    /* ERR_BUSY: 429 with Retry-After (server.c) */
    err_code rc = spool_put(st->sp, pid, store_endpoint ? "store" : "envelope", res->decoded,
                            res->decoded_len, &err);
    if (rc == ERR_BUSY) {
        metrics_sentry_spool_full();
        return respond_err(r, &err);
    }
    if (rc != ERR_OK) {
        log_event(LOG_ERROR, "sentry_spool_failed", "req=%s message=%s", r->id, err.msg);
        return respond_err(r, &err);
    }
    atomic_fetch_add(&st->spooled, 1);
    pthread_mutex_lock(&st->mu);
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return sentry_answer(r, res);
}

/* An envelope whose event is with the group commit: what its answer needs. Also a prepared
 * envelope handed from the libmicrohttpd thread to a handler thread (sentry_accept), with
 * r->intake still INTAKE_NONE: what the handler goes on with there. */
struct sentry_pending {
    ingest_sentry_result res;
    int64_t pid;
    bool store_endpoint;
};

/* The group commit's verdict on the event, on a committer thread. Committed (or refused):
 * hand the connection back to libmicrohttpd, which calls the handler again to answer.
 * Postgres unreachable: the envelope goes to the spool, which writes and fsyncs, so the
 * handler runs again on a handler thread (handler_requeue) rather than on a committer's or
 * libmicrohttpd's. `r` may be gone as soon as either takes it. */
static void event_committed(void *ctx, err_code rc, const char *id, const err_info *err)
{
    http_request *r = ctx;
    (void)id;   /* the event's own id, which res holds already */
    r->intake_rc = rc;
    if (rc != ERR_OK)
        r->err = *err;
    r->intake = INTAKE_DONE;
    if (rc == ERR_STORE && handler_requeue(r))
        return;
    MHD_resume_connection(r->conn);
}

/* The answer once the commit has given its verdict (event_committed). */
static enum MHD_Result event_answer(http_request *r)
{
    struct sentry_pending *p = r->sentry;
    if (r->intake_rc == ERR_STORE) {
        /* on a handler thread (handler_requeue), or here when none could take it */
        atomic_store(&r->srv->sentry->db_down, true);
        err_clear(&r->err);
        return spool_and_answer(r, p->pid, p->store_endpoint, &p->res);
    }
    if (r->intake_rc != ERR_OK)
        return sentry_refused(r, r->intake_rc);
    return sentry_answer(r, &p->res);
}

/* Hand the event to the group commit and the suspended connection with it (handler_detach
 * on a handler thread): no thread waits for the commit, as for POST /api/v1/reports; the
 * verdict comes to event_committed. `r` may be gone when this returns. */
static enum MHD_Result event_submit(http_request *r, int64_t pid, bool store_endpoint,
                                    const ingest_sentry_result *res)
{
    struct sentry_pending *p = arena_alloc(r->a, sizeof *p, &r->err);
    if (p == NULL)
        return sentry_refused(r, ERR_TOO_LARGE);
    *p = (struct sentry_pending){.res = *res, .pid = pid, .store_endpoint = store_endpoint};
    p->res.row.id = p->res.id;
    r->sentry = p;
    r->intake_rc = ERR_OK;
    r->intake = INTAKE_WAITING;
    /* suspended before the row is queued: the commit may finish (and resume it) at once */
    if (r->offloaded)
        handler_detach();
    else
        MHD_suspend_connection(r->conn);
    err_info err = {0};
    err_code rc = store_intake_submit(r->srv->intake, &p->res.row, event_committed, r, &err);
    if (rc != ERR_OK)   /* not queued: its verdict now */
        event_committed(r, rc, NULL, &err);
    return MHD_YES;
}

static enum MHD_Result sentry_accept(http_request *r, int64_t pid, bool store_endpoint,
                                     ingest_sentry_result *res_in);

/* A prepared envelope handed to this handler thread by sentry_accept: go on with it. */
static enum MHD_Result sentry_resume(http_request *r)
{
    struct sentry_pending *p = r->sentry;
    return sentry_accept(r, p->pid, p->store_endpoint, &p->res);
}

static enum MHD_Result sentry_post(http_request *r, bool store_endpoint)
{
    http_server *srv = r->srv;
    if (r->intake == INTAKE_DONE)
        return event_answer(r);
    if (r->sentry != NULL)
        return sentry_resume(r);
    /* A key in the headers or the query is checked before the body is read; else the
     * envelope header's dsn names it. */
    int64_t pid;
    bool have_key;
    err_code rc = sentry_auth_resolve(&pid, &have_key, r, "envelope");
    if (rc != ERR_OK)
        return sentry_refused(r, rc);
    ingest_sentry_input in = {
        .content_encoding = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING),
        .body = r->mem ? r->mem : (const uint8_t *)"",
        .len = (size_t)r->body_bytes,
        .store_endpoint = store_endpoint,
        .max_body_bytes = srv->cfg->max_report_bytes * 4,
        .max_event_bytes = srv->cfg->max_report_bytes,
        .pipe = srv->pipe,
        .project_id = pid,
    };
    ingest_sentry_result res;
    err_code prc = ingest_sentry_prepare(&res, &in, r->a, &r->err);
    if (!have_key) {
        /* the key of the envelope header's dsn; without any key, the body is not judged */
        char key[AUTH_DSN_KEY_MAX];
        int64_t dsn_pid;
        err_info kerr = {0};
        if (res.dsn == NULL)
            rc = err_set(&kerr, ERR_UNAUTHORIZED,
                         "missing DSN key: send X-Sentry-Auth: Sentry sentry_key=KEY, "
                         "?sentry_key=KEY, or an envelope header \"dsn\"");
        else if (auth_dsn_parse(key, &dsn_pid, res.dsn, strlen(res.dsn), &kerr) != ERR_OK)
            rc = err_set(&kerr, ERR_UNAUTHORIZED, "the envelope header's dsn is not a DSN");
        else
            rc = key_check(srv, pid, key, &kerr);
        if (rc != ERR_OK) {
            r->err = kerr;
            return sentry_refused(r, rc);
        }
    }
    if (prc != ERR_OK)
        return sentry_refused(r, prc);
    return sentry_accept(r, pid, store_endpoint, &res);
}

/* A prepared body's items into the store: sessions, then the event to the group commit (or
 * the spool while Postgres is down). `r` may be gone when this returns. */
static enum MHD_Result sentry_accept(http_request *r, int64_t pid, bool store_endpoint,
                                     ingest_sentry_result *res_in)
{
    http_server *srv = r->srv;
    ingest_sentry_result res = *res_in;
    err_code rc;
    sentry_state *st = srv->sentry;
    uint64_t entries, bytes;
    spool_stats(st->sp, &entries, &bytes);
    bool to_spool = entries > 0 && atomic_load(&st->db_down);
    /* Inline on the libmicrohttpd thread (a small body, server.c): sessions wait for
     * Postgres and the spool for the disk, so such an envelope goes on on a handler thread,
     * with what was prepared here (sentry_resume). */
    if (!r->offloaded && (to_spool || res.nsessions > 0)) {
        struct sentry_pending *p = arena_alloc(r->a, sizeof *p, &r->err);
        if (p == NULL)
            return sentry_refused(r, ERR_TOO_LARGE);
        *p = (struct sentry_pending){.res = res, .pid = pid, .store_endpoint = store_endpoint};
        r->sentry = p;
        if (handler_offload(r))
            return MHD_YES;   /* r may be the handler thread's already */
        r->sentry = NULL;
        err_set(&r->err, ERR_STORE, "every handler thread is busy: retry shortly");
        return sentry_refused(r, ERR_STORE);
    }
    metrics_sentry_items(res.items);
    /* Postgres known down with envelopes waiting: to the spool at once, behind them. */
    if (to_spool)
        return spool_and_answer(r, pid, store_endpoint, &res);
    /* The sessions first (they block, but are few), then the event to the group commit. */
    rc = sentry_sessions_record(srv, pid, &res, r->a, &r->err);
    if (rc == ERR_OK && res.has_event)
        return event_submit(r, pid, store_endpoint, &res);
    if (rc == ERR_STORE) {
        atomic_store(&st->db_down, true);
        err_clear(&r->err);
        return spool_and_answer(r, pid, store_endpoint, &res);
    }
    if (rc != ERR_OK)
        return sentry_refused(r, rc);
    return sentry_answer(r, &res);
}

enum MHD_Result handle_sentry_envelope(http_request *r)
{
    return sentry_post(r, false);
}

enum MHD_Result handle_sentry_store(http_request *r)
{
    return sentry_post(r, true);
}

/* POST /api/{project_id}/minidump/ as Sentry serves it to Crashpad's uploader: a multipart
 * body with the dump in its "upload_file_minidump" part and form fields beside it (or a bare
 * dump), gzip'd or not. The DSN key comes as for envelopes but from the headers or ?sentry_key=
 * only (the body has no envelope header). The upload becomes the envelope it is stored as
 * (ingest_minidump_envelope) and goes the envelope's way from there: the same commit, spool
 * and answer, {"id": "<event_id>"}. */
enum MHD_Result handle_sentry_minidump(http_request *r)
{
    http_server *srv = r->srv;
    if (r->intake == INTAKE_DONE)
        return event_answer(r);
    if (r->sentry != NULL)
        return sentry_resume(r);
    int64_t pid;
    bool have_key;
    err_code rc = sentry_auth_resolve(&pid, &have_key, r, "minidump");
    if (rc == ERR_OK && !have_key)
        rc = err_set(&r->err, ERR_UNAUTHORIZED, "missing DSN key: send ?sentry_key=KEY or "
                     "X-Sentry-Auth: Sentry sentry_key=KEY");
    if (rc != ERR_OK)
        return sentry_refused(r, rc);
    http_form form;
    memset(&form, 0, sizeof form);
    if (request_is_multipart(r)) {
        rc = http_form_read(&form, r, srv->cfg->max_report_bytes * 4);
        if (rc == ERR_OK && !form.has_dump)
            rc = err_set(&r->err, ERR_INVALID, "multipart/form-data body has no \""
                         INGEST_MINIDUMP_PART "\" file part (the minidump)");
    } else {
        /* a bare dump, as Sentry also takes it */
        const uint8_t *body = r->mem ? r->mem : (const uint8_t *)"";
        size_t len = (size_t)r->body_bytes;
        const char *enc = request_media_type(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
        rc = ERR_OK;
        if (strcmp(enc, "gzip") == 0) {
            uint8_t *dec;
            rc = ingest_gunzip(&dec, &len, body, len, srv->cfg->max_report_bytes, "minidump",
                               r->a, &r->err);
            body = dec;
        } else if (enc[0] != '\0' && strcmp(enc, "identity") != 0) {
            rc = err_set(&r->err, ERR_UNSUPPORTED, "content encoding '%s' is not accepted: send "
                         "gzip or identity", enc);
        }
        form.has_dump = true;
        form.dump = (uint8_t *)body;
        form.dump_len = len;
    }
    const uint8_t *env = NULL;
    size_t env_len = 0;
    if (rc == ERR_OK)
        rc = http_form_minidump_envelope(&env, &env_len, r, &form);
    if (rc != ERR_OK)
        return sentry_refused(r, rc);
    ingest_sentry_input in = {
        .body = env,
        .len = env_len,
        .max_body_bytes = srv->cfg->max_report_bytes * 4 + env_len,
        .max_event_bytes = srv->cfg->max_report_bytes,
        .pipe = srv->pipe,
        .project_id = pid,
    };
    ingest_sentry_result res;
    rc = ingest_sentry_prepare(&res, &in, r->a, &r->err);
    if (rc != ERR_OK)
        return sentry_refused(r, rc);
    return sentry_accept(r, pid, false, &res);
}
