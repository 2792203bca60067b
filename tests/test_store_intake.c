/*
 * test_store_intake - the group commit of new reports (server/store/store_intake.c) against a
 * real Postgres (STACKSIFT_TEST_DATABASE_URL, a database of its own): concurrent reports
 * share commits and each comes back with its own durable row; ids are UUIDv7; a value the
 * database refuses fails only its own report (ERR_INTERNAL), the others of its commit stored; a broken connection is retried; a database
 * that is gone is ERR_STORE, never a false "committed"; reports processed at intake group
 * into their issues (counts, days, breakdown counters) in the commit that stores them; with a gather window, the clients of a
 * commit that send again share the next one.
 */
#include <assert.h>
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

/* A store of `pool` connections (open_store) and its intake with options `o` (NULL: the
 * defaults), both CHECKed. false when either cannot be had: nothing is held then. */
static bool intake_open(store **s, store_intake **q, unsigned pool, const store_intake_options *o)
{
    err_info err = {0};
    *q = NULL;
    *s = open_store(pool);
    CHECK(*s != NULL);
    if (*s == NULL)
        return false;
    CHECK_EQ_INT(store_intake_new(q, *s, o, &err), ERR_OK);
    if (*q == NULL) {
        store_close(*s);
        return false;
    }
    return true;
}

static void intake_close(store *s, store_intake *q)
{
    store_intake_free(q);
    store_close(s);
}

/* A transaction on a connection of its own that holds the reports table locked (ACCESS
 * EXCLUSIVE) until the caller commits it: commits of the intake wait meanwhile. */
static PGconn *lock_reports(void)
{
    PGconn *locker = PQconnectdb(db_url);
    PQclear(PQexec(locker, "BEGIN"));
    PQclear(PQexec(locker, "LOCK TABLE reports IN ACCESS EXCLUSIVE MODE"));
    return locker;
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
    store *s;
    store_intake *q;
    store_intake_options o = {.max_inflight = 1};
    if (!intake_open(&s, &q, 4, &o))
        return;
    int64_t before = count_reports(s);
    err_info err = {0};
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
            const char *ctype;
            char want[96];
            raw_for(want, sizeof want, t, i);
            if (store_report_raw_get(&raw, &len, &ctype, s, posters[t].ids[i], a, &err) != ERR_OK ||
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
    store *s;
    store_intake *q;
    if (!intake_open(&s, &q, 2, NULL))
        return;
    err_info err = {0};
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
    intake_close(s, q);
}

/* Submitted all at once, so that they can share a commit: the bad one must fail alone. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
    err_code rc[64];
    char id[64][37];
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

static void verdicts_init(verdicts *v)
{
    memset(v, 0, sizeof *v);
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
}

static void verdicts_reset(verdicts *v)
{
    pthread_cond_destroy(&v->cv);
    pthread_mutex_destroy(&v->mu);
}

/* Until every verdict asked for (v->left) has come. */
static void verdicts_wait(verdicts *v)
{
    pthread_mutex_lock(&v->mu);
    while (v->left > 0)
        pthread_cond_wait(&v->cv, &v->mu);
    pthread_mutex_unlock(&v->mu);
}

static char *query1(PGconn *c, const char *sql);
static void submit_all(store_intake *q, store_report_new *rows, int n, verdicts *v,
                       PGconn *locker);

/* One report the database refuses among many in flight (its app version is not UTF-8:
 * SQLSTATE 22021) costs no other report: the batch is committed again in halves, every other
 * report is stored (processed ones still processed, with their issue), each request hears its
 * own verdict, and the refused one hears ERR_INTERNAL (the server's fault, never
 * ERR_INVALID). */
#define POISON_N 40
#define POISON_AT 23

static void refused_value_fails_only_its_report(void)
{
    store *s;
    store_intake *q;
    store_intake_options o = {.max_inflight = 1};
    if (!intake_open(&s, &q, 2, &o))
        return;
    verdicts v;
    verdicts_init(&v);
    store_report_new rows[POISON_N];
    store_report_processed pp = {.issue_app = "Poison", .kind = "crash",
                                 .fingerprint = "cccc000000000000000000000000000000000000000000000000000000000003",
                                 .title = "EXC_CRASH: p", .culprit = "p()", .exception = "EXC_CRASH",
                                 .basis = "in_app", .frames_json = "[{\"function\":\"p\"}]",
                                 .symbolicated_json = "{\"model\":\"p\"}"};
    for (int i = 0; i < POISON_N; i++) {
        rows[i] = (store_report_new){.status = "received", .format = "json",
                                     .content_type = "application/json",
                                     .raw = (const uint8_t *)"{}", .raw_len = 2,
                                     .app = "Poison", .app_version = "1.0",
                                     .processed = i % 2 ? &pp : NULL};
        if (i == POISON_AT)
            rows[i].app_version = "\xab\xab\xab";
    }
    /* The table locked meanwhile: the first commit waits, so the others queue behind it and
     * the bad report is committed together with good ones. */
    PGconn *locker = lock_reports();
    submit_all(q, rows, POISON_N, &v, locker);
    for (int i = 0; i < POISON_N; i++) {
        CHECK_EQ_INT(v.rc[i], i == POISON_AT ? ERR_INTERNAL : ERR_OK);
        CHECK_EQ_INT(strlen(v.id[i]), i == POISON_AT ? 0 : 36);
    }
    store_intake_stats st;
    store_intake_stats_get(&st, q);
    CHECK_EQ_INT(st.failures, 1);
    CHECK_EQ_INT(st.reports, POISON_N - 1);
    CHECK(st.splits >= 1);   /* the bad report did share a batch */
    CHECK_EQ_INT(st.processed, POISON_N / 2 - (POISON_AT % 2)); /* processing was kept */
    char *got = query1(locker, "SELECT count(*) || ' ' || count(*) FILTER (WHERE status = "
                               "'processed') FROM reports WHERE app = 'Poison'");
    char *want = xsprintf("%d %d", POISON_N - 1, POISON_N / 2 - (POISON_AT % 2));
    CHECK_EQ_STR(got, want);
    free(got);
    free(want);
    got = query1(locker, "SELECT count FROM issues WHERE app = 'Poison'");
    want = xsprintf("%d", POISON_N / 2 - (POISON_AT % 2));
    CHECK_EQ_STR(got, want);
    free(got);
    free(want);
    /* the tests after this one count the issues and reports they make */
    PQclear(PQexec(locker, "DELETE FROM reports WHERE app = 'Poison'"));
    PQclear(PQexec(locker, "DELETE FROM issue_days WHERE issue_id IN "
                           "(SELECT id FROM issues WHERE app = 'Poison')"));
    PQclear(PQexec(locker, "DELETE FROM issues WHERE app = 'Poison'"));
    PQfinish(locker);
    intake_close(s, q);
    verdicts_reset(&v);
}

/* One text value of a query on `c` (malloc'd; NULL for none or SQL NULL). */
static char *query1(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    char *out = NULL;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        out = strdup(PQgetvalue(r, 0, 0));
    else if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "query failed: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return out;
}

/* Submit rows[0..n) and wait for every verdict. With `locker` (a transaction holding a lock
 * on reports): row 0 is committed alone, rows 1.. queue behind it and share the next commit,
 * which runs once `locker` commits. */
static void submit_all(store_intake *q, store_report_new *rows, int n, verdicts *v,
                       PGconn *locker)
{
    verdict_slot slots[sizeof v->rc / sizeof v->rc[0]];
    err_info err = {0};
    assert(n <= (int)(sizeof slots / sizeof slots[0]));
    v->left = n;
    for (int i = 0; i < n; i++) {
        slots[i] = (verdict_slot){.v = v, .i = i};
        CHECK_EQ_INT(store_intake_submit(q, &rows[i], on_done, &slots[i], &err), ERR_OK);
        if (i == 0 && locker)
            sleep_ms(100);   /* the committer takes row 0 alone and waits for the lock */
    }
    if (locker) {
        sleep_ms(200);
        PQclear(PQexec(locker, "COMMIT"));
    }
    verdicts_wait(v);
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* With a gather window (store_intake_options.gather_us), the clients of a commit of several
 * reports that send again within the window share one commit: the first report back waits
 * for as many as that commit had. A report after the window, or after a commit of one, is
 * committed at once. The window is long here (1 s) so that a loaded machine cannot make
 * the test pass or fail by timing. */
static void answered_clients_share_the_next_commit(void)
{
    store *s;
    store_intake *q;
    store_intake_options o = {.max_inflight = 1, .gather_us = 1000000};
    if (!intake_open(&s, &q, 2, &o))
        return;
    err_info err = {0};
    verdicts v;
    verdicts_init(&v);
    store_report_new rows[3];
    for (int i = 0; i < 3; i++)
        rows[i] = (store_report_new){.status = "received", .format = "json",
                                     .content_type = "application/json",
                                     .raw = (const uint8_t *)"{}", .raw_len = 2,
                                     .app = "Gather", .app_version = "1.0"};
    /* a commit of one (row 0, the table locked), then rows 1 and 2 together: two clients */
    PGconn *locker = lock_reports();
    submit_all(q, rows, 3, &v, locker);
    store_intake_stats st0, st1;
    store_intake_stats_get(&st0, q);
    CHECK_EQ_INT(st0.batches, 2);
    CHECK_EQ_INT(st0.largest, 2);

    /* they come back one after the other: the first waits for the second */
    verdict_slot slots[2] = {{.v = &v, .i = 0}, {.v = &v, .i = 1}};
    v.left = 2;
    CHECK_EQ_INT(store_intake_submit(q, &rows[0], on_done, &slots[0], &err), ERR_OK);
    sleep_ms(150);
    pthread_mutex_lock(&v.mu);
    CHECK_EQ_INT(v.left, 2);   /* not committed alone */
    pthread_mutex_unlock(&v.mu);
    CHECK_EQ_INT(store_intake_submit(q, &rows[1], on_done, &slots[1], &err), ERR_OK);
    verdicts_wait(&v);
    store_intake_stats_get(&st1, q);
    CHECK_EQ_INT(st1.batches - st0.batches, 1);
    CHECK_EQ_INT(st1.reports - st0.reports, 2);

    /* after the window: at once, alone */
    sleep_ms(1100);
    double t0 = mono_ms();
    v.left = 1;
    CHECK_EQ_INT(store_intake_submit(q, &rows[2], on_done, &slots[0], &err), ERR_OK);
    verdicts_wait(&v);
    CHECK(mono_ms() - t0 < 900);
    CHECK_EQ_INT(v.rc[0], ERR_OK);

    /* the previous commit had one report: the next one does not wait either */
    t0 = mono_ms();
    v.left = 1;
    CHECK_EQ_INT(store_intake_submit(q, &rows[2], on_done, &slots[0], &err), ERR_OK);
    verdicts_wait(&v);
    CHECK(mono_ms() - t0 < 900);

    PQclear(PQexec(locker, "DELETE FROM reports WHERE app = 'Gather'"));
    PQfinish(locker);
    intake_close(s, q);
    verdicts_reset(&v);
}

/* Reports processed at intake (store_report_processed) in one batch: grouped by (issue app,
 * fingerprint) in C, each group one upsert with its count, distinct versions and newest
 * report, per-day counts added, each report stored processed with its issue in the same
 * commit as its receipt; a received report in the same batch stays queued. A resolved
 * issue seen again in its fixed version reopens (a regression). */
static void processed_reports_group_in_their_commit(void)
{
    store *s;
    store_intake *q;
    store_intake_options o = {.max_inflight = 1};
    if (!intake_open(&s, &q, 2, &o))
        return;
    verdicts v;
    verdicts_init(&v);
    static const char FA[] = "aaaa000000000000000000000000000000000000000000000000000000000001";
    static const char FB[] = "bbbb000000000000000000000000000000000000000000000000000000000002";
    store_report_processed pa = {.issue_app = "Grp", .fingerprint = FA, .kind = "crash",
                                 .title = "EXC_CRASH: a", .culprit = "a()", .exception = "EXC_CRASH",
                                 .basis = "in_app", .frames_json = "[{\"function\":\"a\"}]",
                                 .hardware_model = "iPhone14,5",
                                 .symbolicated_json = "{\"model\":\"a\"}"};
    store_report_processed pb = pa, pe = pa;
    pb.fingerprint = FB;
    pb.title = "EXC_CRASH: b";
    pb.symbolicated_json = "{\"model\":\"b\"}";
    pe.issue_app = "";   /* a report without an app: issue app "" */
    /* row 0 commits alone (the table is locked meanwhile); rows 1-7 queue behind it and
     * share the next commit */
    struct { const store_report_processed *p; const char *version; } spec[8] = {
        {NULL, "1.0"}, {&pa, "1.10"}, {&pa, "1.9"}, {&pa, "1.10"}, {&pb, NULL},
        {NULL, "1.0"}, {&pe, "3.0"}, {&pb, "2.0"}};
    store_report_new rows[8];
    for (int i = 0; i < 8; i++)
        rows[i] = (store_report_new){.status = "received", .format = "apple-text",
                                     .content_type = "text/plain",
                                     .raw = (const uint8_t *)"raw", .raw_len = 3,
                                     .app = spec[i].p == &pe ? NULL : "Grp",
                                     .app_version = spec[i].version, .processed = spec[i].p};
    PGconn *locker = lock_reports();
    submit_all(q, rows, 8, &v, locker);
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(v.rc[i], ERR_OK);
    store_intake_stats st;
    store_intake_stats_get(&st, q);
    CHECK_EQ_INT(st.processed, 6);
    CHECK_EQ_INT(st.largest, 7);
    CHECK_EQ_INT(st.processed_fallbacks, 0);

    /* each row: status, issue fingerprint, attempts, processed in its receiving transaction */
    for (int i = 0; i < 8; i++) {
        char *sql = xsprintf("SELECT r.status || ' ' || coalesce(i.app || '/' || left(i.fingerprint, 4), "
                             "'-') || ' ' || r.attempts || ' ' || coalesce(r.processed_at = "
                             "r.received_at, false) || ' ' || coalesce(r.symbolicated, '-') || ' ' || "
                             "coalesce(r.hardware_model, '-') FROM reports r LEFT JOIN issues i "
                             "ON i.id = r.issue_id WHERE r.id = '%s'", v.id[i]);
        char *got = query1(locker, sql);
        const char *want = !spec[i].p ? "received - 0 false - -"
                         : spec[i].p == &pa ? "processed Grp/aaaa 1 true {\"model\":\"a\"} iPhone14,5"
                         : spec[i].p == &pb ? "processed Grp/bbbb 1 true {\"model\":\"b\"} iPhone14,5"
                                            : "processed /aaaa 1 true {\"model\":\"a\"} iPhone14,5";
        CHECK_EQ_STR(got, want);
        free(got);
        free(sql);
    }
    /* the issues: counts, versions (distinct, sorted as text), the first version (by
     * version_key: 1.9 before 1.10), newest report, days */
    char *sql = xsprintf("SELECT string_agg(app || '/' || left(fingerprint, 4) || ' ' || count || ' ' || "
                         "array_to_string(versions, ',') || ' ' || coalesce(first_version, '-') || "
                         "' ' || (first_seen = last_seen) || ' ' || "
                         "last_report::text || ' ' || (SELECT sum(count) FROM issue_days d "
                         "WHERE d.issue_id = i.id), '; ' ORDER BY app, fingerprint) FROM issues i");
    char *got = query1(locker, sql);
    char *want = xsprintf("/aaaa 1 3.0 3.0 true %s 1; Grp/aaaa 3 1.10,1.9 1.9 true %s 3; "
                          "Grp/bbbb 2 2.0 2.0 true %s 2", v.id[6], v.id[3], v.id[7]);
    CHECK_EQ_STR(got, want);
    free(got);
    free(want);
    free(sql);
    /* a new issue's frames are its first report's (group b's first commit made its issue) */
    got = query1(locker, "SELECT string_agg(left(fingerprint, 4) || ' ' || frames::text, '; ' "
                         "ORDER BY app, fingerprint) FROM issues");
    CHECK_EQ_STR(got, "aaaa [{\"function\": \"a\"}]; aaaa [{\"function\": \"a\"}]; "
                      "bbbb [{\"function\": \"a\"}]");
    free(got);

    /* resolved in 2.0, seen in 2.1: reopened, flagged, counted */
    PQclear(PQexec(locker, "UPDATE issues SET status = 'resolved', resolved_in = '2.0' "
                           "WHERE fingerprint LIKE 'bbbb%'"));
    store_report_new again = rows[7];
    again.app_version = "2.1";
    submit_all(q, &again, 1, &v, NULL);
    CHECK_EQ_INT(v.rc[0], ERR_OK);
    store_intake_stats_get(&st, q);
    CHECK_EQ_INT(st.regressions, 1);
    got = query1(locker, "SELECT status || ' ' || regressed || ' ' || count || ' ' || "
                         "array_to_string(versions, ',') FROM issues WHERE fingerprint LIKE 'bbbb%'");
    CHECK_EQ_STR(got, "open true 3 2.0,2.1");
    free(got);
    /* an upsert keeps the issue's frames */
    got = query1(locker, "SELECT frames::text FROM issues WHERE fingerprint LIKE 'bbbb%'");
    CHECK_EQ_STR(got, "[{\"function\": \"a\"}]");
    free(got);

    /* the breakdown counters, kept by the same statements (a version or OS not given is "") */
    got = query1(locker, "SELECT string_agg(i.app || '/' || left(i.fingerprint, 4) || ' ' || b.dim "
                         "|| ' ' || b.value || ' ' || b.count, '; ' ORDER BY i.app COLLATE \"C\", "
                         "i.fingerprint, b.dim, b.value COLLATE \"C\") FROM issue_breakdowns b "
                         "JOIN issues i ON i.id = b.issue_id");
    CHECK_EQ_STR(got, "/aaaa 0 3.0 1; /aaaa 1  1; /aaaa 2 iPhone14,5 1; "
                      "Grp/aaaa 0 1.10 2; Grp/aaaa 0 1.9 1; Grp/aaaa 1  3; Grp/aaaa 2 iPhone14,5 3; "
                      "Grp/bbbb 0  1; Grp/bbbb 0 2.0 1; Grp/bbbb 0 2.1 1; Grp/bbbb 1  3; "
                      "Grp/bbbb 2 iPhone14,5 3");
    free(got);
    PQfinish(locker);
    intake_close(s, q);
    verdicts_reset(&v);
}

/* A minidump processed at intake keeps the in-app images its walk went through without
 * unwind info (unwind_uuids) and is checked against what the walk saw of each one's stored
 * debug file: a row that changed since (another symcache, or one where the walk saw none)
 * stores it received, in its issue, for the workers to walk again; a row as seen keeps it
 * processed. */
static void processed_minidumps_check_their_unwind(void)
{
    store *s;
    store_intake *q;
    store_intake_options o = {.max_inflight = 1};
    if (!intake_open(&s, &q, 2, &o))
        return;
    PGconn *c = PQconnectdb(db_url);
    static const char SHA[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    static const char U1[] = "5a1e0000-0000-4000-8000-000000000001";   /* a symcache */
    static const char U2[] = "5a1e0000-0000-4000-8000-000000000002";   /* none */
    char *sql = xsprintf("INSERT INTO blobs (sha256, bytes, chunks) VALUES ('%s', 0, 0); "
                         "INSERT INTO dsyms (uuid, arch, name, has_dwarf, dwarf_bytes, "
                         "symcache_bytes, functions, sha256, symcache_blob) VALUES "
                         "('%s', 'arm64', 'Dump', true, 0, 0, 0, '%s', '%s'), "
                         "('%s', 'arm64', 'Dump2', true, 0, 0, 0, '%s', NULL)",
                         SHA, U1, SHA, SHA, U2, SHA);
    PQclear(PQexec(c, sql));
    free(sql);
    static const char FP[] = "dddd000000000000000000000000000000000000000000000000000000000004";
    store_report_processed base = {.issue_app = "Dump", .fingerprint = FP, .kind = "crash",
                                   .title = "SIGSEGV: d", .culprit = "d()", .exception = "SIGSEGV",
                                   .basis = "in_app",
                                   .frames_json = "[]", .symbolicated_json = "{}"};
    char uu[80];
    snprintf(uu, sizeof uu, "[\"%s\",\"%s\"]", U1, U2);
    /* seen (U1, U2): U1's symcache as stored and U2 none (its row has no symcache); U1
     * another; U1 none; U2 one that its row no longer names (no symcache: nothing to walk
     * with, no check) */
    static const char *const seen[4][2] = {{"0123456789abcdef", ""}, {"fedcba9876543210", ""},
                                           {"", ""}, {"0123456789abcdef", "0123456789abcdef"}};
    static const char *const want[4] = {"processed", "received", "received", "processed"};
    store_report_processed p[4];
    store_report_new rows[4];
    char checks[4][200];
    for (int i = 0; i < 4; i++) {
        snprintf(checks[i], sizeof checks[i], "[{\"uuid\":\"%s\",\"seen\":\"%s\"},"
                 "{\"uuid\":\"%s\",\"seen\":\"%s\"}]", U1, seen[i][0], U2, seen[i][1]);
        p[i] = base;
        p[i].unwind_uuids_json = uu;
        p[i].unwind_checks_json = checks[i];
        rows[i] = (store_report_new){.status = "received", .format = "minidump",
                                     .content_type = "application/x-dmp",
                                     .raw = (const uint8_t *)"MDMP", .raw_len = 4,
                                     .app = "Dump", .processed = &p[i]};
    }
    verdicts v;
    verdicts_init(&v);
    submit_all(q, rows, 4, &v, NULL);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(v.rc[i], ERR_OK);
        sql = xsprintf("SELECT r.status || ' ' || (r.issue_id IS NOT NULL) || ' ' || "
                       "array_to_string(r.unwind_uuids, ',') FROM reports r WHERE r.id = '%s'",
                       v.id[i]);
        char *got = query1(c, sql);
        char *w = xsprintf("%s true %s,%s", want[i], U1, U2);
        CHECK_EQ_STR(got, w);
        free(w);
        free(got);
        free(sql);
    }
    /* all four are counted in their issue, as an upload's trigger leaves the reports it
     * sends back */
    char *got = query1(c, "SELECT count FROM issues WHERE app = 'Dump'");
    CHECK_EQ_STR(got, "4");
    free(got);
    /* a report processed without unwind_uuids stores none */
    store_report_processed plain = base;
    store_report_new row = rows[0];
    row.processed = &plain;
    submit_all(q, &row, 1, &v, NULL);
    sql = xsprintf("SELECT status || ' ' || cardinality(unwind_uuids) FROM reports WHERE id = '%s'",
                   v.id[0]);
    got = query1(c, sql);
    CHECK_EQ_STR(got, "processed 0");
    free(got);
    free(sql);
    PQclear(PQexec(c, "DELETE FROM reports WHERE app = 'Dump'; DELETE FROM issue_days WHERE "
                      "issue_id IN (SELECT id FROM issues WHERE app = 'Dump'); DELETE FROM "
                      "issue_breakdowns WHERE issue_id IN (SELECT id FROM issues WHERE app = "
                      "'Dump'); DELETE FROM issues WHERE app = 'Dump'"));
    PQfinish(c);
    intake_close(s, q);
    verdicts_reset(&v);
}

/* A group's versions travel as an array's text form: versions with the characters that form
 * uses (quotes, backslashes, commas, braces, spaces) and a title with them arrive as sent,
 * in one commit of two reports of the group. */
static void odd_versions_arrive_as_sent(void)
{
    store *s;
    store_intake *q;
    if (!intake_open(&s, &q, 2, NULL))
        return;
    verdicts v;
    verdicts_init(&v);
    static const char FP[] = "cccc000000000000000000000000000000000000000000000000000000000003";
    store_report_processed p = {.issue_app = "Odd", .fingerprint = FP, .kind = "crash",
                                .title = "EXC \"odd\" {a,b} \\ end", .culprit = "c()",
                                .exception = "EXC_CRASH", .basis = "in_app",
                                .frames_json = "[]", .symbolicated_json = "{}"};
    const char *versions[2] = {"2.0 \"beta\",\\{x}", "NULL"};
    store_report_new rows[2];
    for (int i = 0; i < 2; i++)
        rows[i] = (store_report_new){.status = "received", .format = "apple-text",
                                     .content_type = "text/plain",
                                     .raw = (const uint8_t *)"raw", .raw_len = 3, .app = "Odd",
                                     .app_version = versions[i], .processed = &p};
    PGconn *locker = lock_reports();
    submit_all(q, rows, 2, &v, locker);
    CHECK_EQ_INT(v.rc[0], ERR_OK);
    CHECK_EQ_INT(v.rc[1], ERR_OK);
    /* the array's elements, one a line in order (NULL is a version here, not SQL NULL) */
    char *got = query1(locker, "SELECT array_to_string(versions, E'\\n') || E'\\n' || count || "
                               "E'\\n' || (first_version = versions_first(versions)) || E'\\n' || title "
                               "FROM issues WHERE app = 'Odd'");
    CHECK_EQ_STR(got, "2.0 \"beta\",\\{x}\nNULL\n2\ntrue\nEXC \"odd\" {a,b} \\ end");
    free(got);
    PQfinish(locker);
    intake_close(s, q);
    verdicts_reset(&v);
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
    store *s;
    store_intake *q;
    if (!intake_open(&s, &q, 1, NULL))
        return;
    err_info err = {0};
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
    intake_close(s, q);
}

/* issues.first_version, kept by a BEFORE trigger for every writer of `versions`: the earliest
 * version by version_key (1.10 after 1.9), NULL for none, the single version without a query,
 * and again when an upsert brings a version that sorts first. */
static void first_version_is_kept_on_insert_and_upsert(void)
{
    PGconn *c = PQconnectdb(db_url);
    CHECK(PQstatus(c) == CONNECTION_OK);
    /* `given`: the first_version a row brings (the intake's, one version; NULL: none): the
     * trigger is skipped only when that is the answer; a wrong one, or several versions, go
     * through it */
    static const struct {
        const char *fp, *versions, *given, *want; /* want NULL: first_version is NULL */
    } cases[] = {
        {"fv-none", "{}", NULL, NULL},
        {"fv-one", "{2.0}", NULL, "2.0"},
        {"fv-many", "{1.10,1.9,1.9b,10.0}", NULL, "1.9"},
        {"fv-text-tie", "{1.9b,1.9}", NULL, "1.9"},
        {"fv-brought", "{2.0}", "2.0", "2.0"},
        {"fv-brought-wrong", "{2.0}", "9.9", "2.0"},
        {"fv-brought-many", "{1.10,1.9}", "1.10", "1.9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *params[3] = {cases[i].fp, cases[i].versions, cases[i].given};
        PGresult *res = PQexecParams(
            c,
            "INSERT INTO issues (app, kind, fingerprint, title, culprit, exception, basis, "
            "provisional, frames, first_seen, last_seen, count, versions, first_version) VALUES "
            "('FV', 'crash', $1, 't', 'c', 'e', 'in_app', false, '[]', now(), now(), 1, "
            "$2::text[], $3) "
            "RETURNING first_version, first_version IS NOT DISTINCT FROM versions_first(versions)",
            3, NULL, params, NULL, NULL, 0);
        CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
        if (PQresultStatus(res) == PGRES_TUPLES_OK) {
            if (cases[i].want)
                CHECK_EQ_STR(PQgetvalue(res, 0, 0), cases[i].want);
            else
                CHECK(PQgetisnull(res, 0, 0));
            CHECK_EQ_STR(PQgetvalue(res, 0, 1), "t");
        } else {
            fprintf(stderr, "insert %s: %s\n", cases[i].fp, PQerrorMessage(c));
        }
        PQclear(res);
    }
    /* an upsert of one version goes through the insert trigger, then the update's */
    const char *up[2][2] = {{"fv-one", "{3.0}"}, {"fv-one", "{1.2}"}};
    const char *want_after[2] = {"2.0", "1.2"};
    for (int i = 0; i < 2; i++) {
        PGresult *res = PQexecParams(
            c,
            "INSERT INTO issues AS i (app, kind, fingerprint, title, culprit, exception, basis, "
            "provisional, frames, first_seen, last_seen, count, versions) VALUES ('FV', 'crash', "
            "$1, 't', 'c', 'e', 'in_app', false, '[]', now(), now(), 1, $2::text[]) "
            "ON CONFLICT (project_id, app, fingerprint) DO UPDATE SET count = i.count + 1, "
            "versions = ARRAY(SELECT DISTINCT v FROM unnest(i.versions || EXCLUDED.versions) v "
            "ORDER BY 1) RETURNING first_version, versions::text",
            2, NULL, up[i], NULL, NULL, 0);
        CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
        if (PQresultStatus(res) == PGRES_TUPLES_OK)
            CHECK_EQ_STR(PQgetvalue(res, 0, 0), want_after[i]);
        else
            fprintf(stderr, "upsert: %s\n", PQerrorMessage(c));
        PQclear(res);
    }
    PQclear(PQexec(c, "DELETE FROM issues WHERE app = 'FV'"));
    PQfinish(c);
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
    RUN(processed_reports_group_in_their_commit);
    RUN(odd_versions_arrive_as_sent);
    RUN(processed_minidumps_check_their_unwind);
    RUN(answered_clients_share_the_next_commit);
    RUN(broken_connection_is_retried_and_gone_database_is_err_store);
    RUN(first_version_is_kept_on_insert_and_upsert);

    PGconn *c = PQconnectdb(env.base_url);
    char *drop = xsprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
    PQclear(PQexec(c, drop));
    PQfinish(c);
    free(drop);
    free(dbname);
    free(db_url);
    return harness_done();
}
