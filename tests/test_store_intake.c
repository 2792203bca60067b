/*
 * test_store_intake - the group commit of new reports (server/store/store_intake.c) against a
 * real Postgres (STACKSIFT_TEST_DATABASE_URL, a database of its own): concurrent reports
 * share commits and each comes back with its own durable row; ids are UUIDv7; a value the
 * database refuses fails only its own report; a broken connection is retried; a database
 * that is gone is ERR_STORE, never a false "committed".
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/arena.h"
#include "harness.h"
#include "server_harness.h"
#include "store/store.h"
#include "store/store_intake.h"
#include "store/store_reports.h"

#define THREADS 12
#define PER_THREAD 40

static char *db_url;

static store *open_store(unsigned pool)
{
    store *s = NULL;
    err_info err = {0};
    if (store_open(&s, db_url, pool, 3000, &err) != ERR_OK)
        fprintf(stderr, "store_open: %s\n", err.msg);
    return s;
}

/* What one thread posts: a raw body that names the thread and the sequence number, so that
 * reading a row back shows that each id got its own bytes. */
static void raw_for(char *out, size_t cap, int thread, int seq)
{
    snprintf(out, cap, "Incident Identifier: T%02d-S%03d\nbinary \x01\x02 bytes\n", thread, seq);
}

typedef struct {
    store_intake *q;
    int thread;
    char ids[PER_THREAD][37];
    err_code rc[PER_THREAD];
} poster;

static void *post_many(void *arg)
{
    poster *p = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char raw[96];
        raw_for(raw, sizeof raw, p->thread, i);
        store_report_new row = {.status = "received", .format = "apple-text",
                                .content_type = "text/plain", .raw = (const uint8_t *)raw,
                                .raw_len = strlen(raw), .app = "Intake", .app_version = "1.0"};
        err_info err = {0};
        p->rc[i] = store_intake_insert(p->ids[i], p->q, &row, &err);
        if (p->rc[i] != ERR_OK)
            fprintf(stderr, "insert: %s\n", err.msg);
    }
    return NULL;
}

static int64_t count_reports(store *s)
{
    int64_t n = -1;
    err_info err;
    if (store_reports_count(&n, s, NULL, &err) != ERR_OK)
        fprintf(stderr, "count: %s\n", err.msg);
    return n;
}

static void concurrent_reports_share_commits(void)
{
    store *s = open_store(4);
    CHECK(s != NULL);
    if (!s)
        return;
    int64_t before = count_reports(s);
    store_intake *q;
    err_info err = {0};
    store_intake_options o = {.max_inflight = 1};
    CHECK_EQ_INT(store_intake_new(&q, s, &o, &err), ERR_OK);
    static poster posters[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        posters[t] = (poster){.q = q, .thread = t};
        pthread_create(&th[t], NULL, post_many, &posters[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    store_intake_stats st;
    store_intake_stats_get(&st, q);
    store_intake_free(q);

    CHECK_EQ_INT(st.reports, THREADS * PER_THREAD);
    CHECK_EQ_INT(st.failures, 0);
    /* one committer and twelve posters: reports queued while a commit ran share the next */
    CHECK(st.batches < (uint64_t)THREADS * PER_THREAD);
    CHECK(st.largest > 1);
    CHECK_EQ_INT(count_reports(s) - before, THREADS * PER_THREAD);

    /* every id is distinct and its row holds the bytes its poster sent */
    arena *a = arena_new(0);
    int wrong = 0, dup = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            CHECK_EQ_INT(posters[t].rc[i], ERR_OK);
            const uint8_t *raw;
            size_t len;
            char want[96];
            raw_for(want, sizeof want, t, i);
            if (store_report_raw_get(&raw, &len, s, posters[t].ids[i], a, &err) != ERR_OK ||
                len != strlen(want) || memcmp(raw, want, len) != 0)
                wrong++;
            for (int u = 0; u <= t; u++)
                for (int j = 0; j < (u == t ? i : PER_THREAD); j++)
                    dup += strcmp(posters[u].ids[j], posters[t].ids[i]) == 0;
        }
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(dup, 0);

    /* the row reads back as intake wrote it: status, format, summary, size, no model */
    store_report rep;
    CHECK_EQ_INT(store_report_get(&rep, s, posters[3].ids[7], a, &err), ERR_OK);
    CHECK_EQ_STR(rep.status, "received");
    CHECK_EQ_STR(rep.format, "apple-text");
    CHECK_EQ_STR(rep.app, "Intake");
    CHECK_EQ_STR(rep.app_version, "1.0");
    CHECK(rep.os_version == NULL);
    CHECK(rep.parsed_json == NULL);
    char want[96];
    raw_for(want, sizeof want, 3, 7);
    CHECK_EQ_INT(rep.raw_bytes, strlen(want));
    arena_free(a);
    store_close(s);
}

static void ids_are_uuidv7_in_time_order(void)
{
    store *s = open_store(2);
    CHECK(s != NULL);
    if (!s)
        return;
    store_intake *q;
    err_info err = {0};
    CHECK_EQ_INT(store_intake_new(&q, s, NULL, &err), ERR_OK);
    char prev[37] = "";
    for (int i = 0; i < 5; i++) {
        char id[37];
        store_report_new row = {.status = "received", .format = "json",
                                .content_type = "application/json",
                                .raw = (const uint8_t *)"{}", .raw_len = 2};
        CHECK_EQ_INT(store_intake_insert(id, q, &row, &err), ERR_OK);
        CHECK_EQ_INT(strlen(id), 36);
        CHECK(id[14] == '7');                        /* version 7 */
        CHECK(strchr("89ab", id[19]) != NULL);       /* RFC 9562 variant */
        CHECK(strncmp(prev, id, 13) <= 0);           /* the 48-bit ms prefix never goes back */
        memcpy(prev, id, sizeof id);
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    store_intake_free(q);
    store_close(s);
}

/* Submitted all at once, so that they can share a commit: the bad one must fail alone. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
    err_code rc[8];
    char id[8][37];
} verdicts;

typedef struct {
    verdicts *v;
    int i;
} verdict_slot;

static void on_done(void *ctx, err_code rc, const char *id, const err_info *err)
{
    verdict_slot *slot = ctx;
    verdicts *v = slot->v;
    (void)err;
    pthread_mutex_lock(&v->mu);
    v->rc[slot->i] = rc;
    snprintf(v->id[slot->i], 37, "%s", id);
    v->left--;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

static void refused_value_fails_only_its_report(void)
{
    store *s = open_store(2);
    CHECK(s != NULL);
    if (!s)
        return;
    store_intake *q;
    err_info err = {0};
    store_intake_options o = {.max_inflight = 1};
    CHECK_EQ_INT(store_intake_new(&q, s, &o, &err), ERR_OK);
    verdicts v = {.left = 8};
    pthread_mutex_init(&v.mu, NULL);
    pthread_cond_init(&v.cv, NULL);
    verdict_slot slots[8];
    store_report_new rows[8];
    /* The table locked meanwhile: the first COPY waits, so the others queue behind it and
     * the bad report is committed together with good ones. */
    PGconn *locker = PQconnectdb(db_url);
    PQclear(PQexec(locker, "BEGIN"));
    PQclear(PQexec(locker, "LOCK TABLE reports IN ACCESS EXCLUSIVE MODE"));
    for (int i = 0; i < 8; i++) {
        slots[i] = (verdict_slot){.v = &v, .i = i};
        /* row 5's app is not UTF-8: Postgres refuses it (SQLSTATE 22021) */
        rows[i] = (store_report_new){.status = "received", .format = "json",
                                     .content_type = "application/json",
                                     .raw = (const uint8_t *)"{}", .raw_len = 2,
                                     .app = i == 5 ? "bad \xff\xfe app" : "Good"};
        CHECK_EQ_INT(store_intake_submit(q, &rows[i], on_done, &slots[i], &err), ERR_OK);
    }
    sleep_ms(200);
    PQclear(PQexec(locker, "COMMIT"));
    PQfinish(locker);
    pthread_mutex_lock(&v.mu);
    while (v.left > 0)
        pthread_cond_wait(&v.cv, &v.mu);
    pthread_mutex_unlock(&v.mu);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(v.rc[i], i == 5 ? ERR_INVALID : ERR_OK);
        CHECK_EQ_INT(strlen(v.id[i]), i == 5 ? 0 : 36);
    }
    store_intake_stats st;
    store_intake_stats_get(&st, q);
    CHECK_EQ_INT(st.failures, 1);
    CHECK_EQ_INT(st.reports, 7);
    CHECK(st.splits >= 1);   /* the bad report did share a batch */
    store_intake_free(q);
    pthread_cond_destroy(&v.cv);
    pthread_mutex_destroy(&v.mu);
    store_close(s);
}

/* Terminate the server side of every connection of this database but the caller's. */
static void terminate_backends(const char *dbname)
{
    PGconn *c = PQconnectdb(db_url);
    const char *values[1] = {dbname};
    PQclear(PQexecParams(c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = $1 AND pid <> pg_backend_pid()",
                         1, NULL, values, NULL, NULL, 0));
    PQfinish(c);
}

static void broken_connection_is_retried_and_gone_database_is_err_store(void)
{
    store *s = open_store(1);
    CHECK(s != NULL);
    if (!s)
        return;
    store_intake *q;
    err_info err = {0};
    CHECK_EQ_INT(store_intake_new(&q, s, NULL, &err), ERR_OK);
    char id[37];
    store_report_new row = {.status = "received", .format = "json",
                            .content_type = "application/json",
                            .raw = (const uint8_t *)"{}", .raw_len = 2};
    CHECK_EQ_INT(store_intake_insert(id, q, &row, &err), ERR_OK);   /* a pooled connection */

    PGconn *admin = PQconnectdb(db_url);
    char *dbname = xsprintf("%s", PQdb(admin));
    PQfinish(admin);
    terminate_backends(dbname);
    int64_t before = count_reports(s);
    err_clear(&err);
    CHECK_EQ_INT(store_intake_insert(id, q, &row, &err), ERR_OK);     /* on a fresh connection */
    CHECK_EQ_INT(count_reports(s), before + 1);

    /* The database is gone: the answer is ERR_STORE (a 503), never an id. */
    char *other = create_database(getenv("STACKSIFT_TEST_DATABASE_URL"), "stacksift_intake_gone");
    CHECK(other != NULL);
    store *gone = NULL;
    if (other && store_open(&gone, other, 1, 2000, &err) == ERR_OK) {
        store_intake *gq;
        CHECK_EQ_INT(store_intake_new(&gq, gone, NULL, &err), ERR_OK);
        PGconn *c = PQconnectdb(getenv("STACKSIFT_TEST_DATABASE_URL"));
        PQclear(PQexec(c, "DROP DATABASE stacksift_intake_gone WITH (FORCE)"));
        PQfinish(c);
        err_clear(&err);
        CHECK_EQ_INT(store_intake_insert(id, gq, &row, &err), ERR_STORE);
        CHECK_EQ_STR(id, "");
        CHECK(err.msg[0] != '\0');
        store_intake_free(gq);
        store_close(gone);
    }
    free(other);
    free(dbname);
    store_intake_free(q);
    store_close(s);
}

int main(void)
{
    e2e_env env;
    if (!e2e_env_load(&env, "test_store_intake"))
        return 1;
    char *dbname = xsprintf("stacksift_intake_%d", (int)getpid());
    db_url = create_database(env.base_url, dbname);
    if (!db_url)
        return 1;
    store *s = open_store(1);
    err_info err = {0};
    int applied;
    if (!s || store_migrate(&applied, s, NULL, NULL, &err) != ERR_OK) {
        fprintf(stderr, "test_store_intake: migrate: %s\n", err.msg);
        return 1;
    }
    store_close(s);

    RUN(concurrent_reports_share_commits);
    RUN(ids_are_uuidv7_in_time_order);
    RUN(refused_value_fails_only_its_report);
    RUN(broken_connection_is_retried_and_gone_database_is_err_store);

    PGconn *c = PQconnectdb(env.base_url);
    char *drop = xsprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
    PQclear(PQexec(c, drop));
    PQfinish(c);
    free(drop);
    free(dbname);
    free(db_url);
    return harness_done();
}
