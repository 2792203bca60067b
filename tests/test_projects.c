/*
 * test_projects - projects and DSN keys against a real Postgres (STACKSIFT_TEST_DATABASE_URL,
 * databases of its own): migration 0008 moves existing reports, issues and call sites to the
 * default project; projects are created, listed and found; a DSN key maps to its project
 * only, from the in-memory table (auth_dsn_key_check); a rotated key works during its grace
 * period and not after; the same crash in two projects is two issues, both when processed at
 * intake (store_intake) and by the workers (store_work_commit + grouping_decide).
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/auth.h"
#include "base/arena.h"
#include "harness.h"
#include "ingest/grouping.h"
#include "server_harness.h"
#include "store/store.h"
#include "store/store_intake.h"
#include "store/store_projects.h"
#include "store/store_queue.h"
#include "store/store_reports.h"

static char *db_url;
static const char *source_dir;

static store *open_store(const char *url, unsigned pool)
{
    store *s = NULL;
    err_info err = {0};
    if (store_open(&s, url, pool, 5000, &err) != ERR_OK)
        fprintf(stderr, "store_open: %s\n", err.msg);
    return s;
}

/* One value of `sql` on `url` (malloc'd; NULL for no row / SQL NULL / error). */
static char *query1(const char *url, const char *sql)
{
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQexec(c, sql);
    char *out = NULL;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) >= 1 && !PQgetisnull(r, 0, 0))
        out = strdup(PQgetvalue(r, 0, 0));
    else if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
        fprintf(stderr, "query failed: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return out;
}

static bool exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "exec failed: %.120s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok;
}

/* A store of its own (NULL, checked as a failure, if it cannot open) with two new projects
 * `slug_x` and `slug_y` in *x and *y, their DSN keys in kx and ky. */
static store *open_with_two_projects(store_project *x, char kx[AUTH_DSN_KEY_MAX],
                                     const char *slug_x, store_project *y,
                                     char ky[AUTH_DSN_KEY_MAX], const char *slug_y)
{
    store *s = open_store(db_url, 2);
    CHECK(s != NULL);
    if (!s)
        return NULL;
    err_info err = {0};
    CHECK_EQ_INT(auth_project_create(x, kx, s, slug_x, NULL, &err), ERR_OK);
    CHECK_EQ_INT(auth_project_create(y, ky, s, slug_y, NULL, &err), ERR_OK);
    return s;
}

/* CHECK that the one value of the query (printf-style `fmt`) on db_url is `want`. */
static void check_query(const char *want, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void check_query(const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char sql[1024];
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    char *v = query1(db_url, sql);
    CHECK_EQ_STR(v, want);
    free(v);
}

/* Data made before projects existed (migrations 0001-0007 applied from migrations/ as
 * `stacksift migrate` would, then rows in them) is in the default project after 0008. */
static void migration_moves_existing_rows_to_default(void)
{
    e2e_env env;
    if (!e2e_env_load(&env, "test_projects"))
        return;
    char *name = xsprintf("stacksift_projects_mig_%d", (int)getpid());
    char *url = create_database(env.base_url, name);
    CHECK(url != NULL);
    if (!url) {
        free(name);
        return;
    }
    PGconn *c = PQconnectdb(url);
    CHECK(exec_ok(c, "CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
                     "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"));
    static const char *const before[] = {"0001_create_core", "0002_create_issues",
                                         "0003_create_stats_views", "0005_create_callsites",
                                         "0006_partition_reports_store_blobs", "0007_reports_lz4"};
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
        char *path = xsprintf("%s/migrations/%s.sql", source_dir, before[i]);
        char *sql = read_file(path, NULL);
        CHECK(sql != NULL);
        if (sql) {
            CHECK(exec_ok(c, "BEGIN"));
            CHECK(exec_ok(c, sql));
            char *mark = xsprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')",
                                  atoi(before[i]), before[i] + 5);
            CHECK(exec_ok(c, mark));
            CHECK(exec_ok(c, "COMMIT"));
            free(mark);
        }
        free(sql);
        free(path);
    }
    /* an issue with two reports, one report still queued, a call site with a day */
    CHECK(exec_ok(c, "INSERT INTO issues (id, app, kind, fingerprint, title, culprit, exception, "
                     "basis, provisional, frames, first_seen, last_seen, count) VALUES "
                     "(7, 'Old', 'crash', 'f00d', 't', 'c', 'e', 'in_app', false, '[]', now(), "
                     "now(), 2)"));
    CHECK(exec_ok(c, "INSERT INTO reports (status, format, content_type, raw, raw_bytes, app, "
                     "issue_id, fingerprint) VALUES ('processed', 'json', 'application/json', "
                     "'x', 1, 'Old', 7, 'f00d'), ('processed', 'json', 'application/json', 'y', "
                     "1, 'Old', 7, 'f00d'), ('received', 'json', 'application/json', 'z', 1, "
                     "'Old', NULL, NULL)"));
    CHECK(exec_ok(c, "INSERT INTO callsites (id, app, tag, key, frames, stack, first_build, "
                     "first_seen, last_seen, count) VALUES (3, 'Old', 'api', 'k1', '[]', '[]', "
                     "'1', now(), now(), 5)"));
    CHECK(exec_ok(c, "INSERT INTO sample_batches (app, batch_id, sha256, build, device, samples, "
                     "calls) VALUES ('Old', 'b1', 'aa', '1', 'd', 1, 5)"));
    PQfinish(c);

    store *s = open_store(url, 1);
    CHECK(s != NULL);
    int applied = 0;
    err_info err = {0};
    if (s) {
        CHECK_EQ_INT(store_migrate(&applied, s, NULL, NULL, &err), ERR_OK);
        CHECK(applied >= 1);
    }
    char *v;
    CHECK_EQ_STR(v = query1(url, "SELECT id || ' ' || slug FROM projects"), "1 default");
    free(v);
    CHECK_EQ_STR(v = query1(url, "SELECT count(*) || ' ' || min(project_id) || max(project_id) "
                                 "FROM reports"), "3 11");
    free(v);
    CHECK_EQ_STR(v = query1(url, "SELECT project_id || ' ' || count FROM issues WHERE id = 7"),
                 "1 2");
    free(v);
    CHECK_EQ_STR(v = query1(url, "SELECT project_id::text FROM callsites WHERE id = 3"), "1");
    free(v);
    CHECK_EQ_STR(v = query1(url, "SELECT project_id::text FROM sample_batches"), "1");
    free(v);
    /* the next project gets id 2, and the same (app, fingerprint) may exist in it */
    if (s) {
        store_project p;
        char key[AUTH_DSN_KEY_MAX];
        CHECK_EQ_INT(auth_project_create(&p, key, s, "second", NULL, &err), ERR_OK);
        CHECK_EQ_INT(p.id, 2);
    }
    CHECK_EQ_STR(v = query1(url, "INSERT INTO issues (project_id, app, kind, fingerprint, title, "
                                 "culprit, exception, basis, provisional, frames, first_seen, "
                                 "last_seen, count) VALUES (2, 'Old', 'crash', 'f00d', 't', 'c', "
                                 "'e', 'in_app', false, '[]', now(), now(), 1) RETURNING "
                                 "project_id::text"), "2");
    free(v);
    /* a partition made after 0008 has the column and the foreign key */
    CHECK_EQ_STR(v = query1(url, "SELECT stacksift_reports_partition_create("
                                 "((now() AT TIME ZONE 'UTC')::date + 30))::text"), "true");
    free(v);
    CHECK_EQ_STR(v = query1(url, "INSERT INTO reports (status, format, content_type, raw, "
                                 "raw_bytes, received_at, project_id) VALUES ('received', 'json', "
                                 "'application/json', 'w', 1, now() + interval '30 days', 2) "
                                 "RETURNING project_id::text"), "2");
    free(v);
    CHECK(query1(url, "INSERT INTO reports (status, format, content_type, raw, raw_bytes, "
                      "received_at, project_id) VALUES ('received', 'json', 'application/json', "
                      "'w', 1, now() + interval '30 days', 99) RETURNING 1") == NULL);
    store_close(s);

    PGconn *admin = PQconnectdb(env.base_url);
    char *drop = xsprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    PQclear(PQexec(admin, drop));
    PQfinish(admin);
    free(drop);
    free(url);
    free(name);
}

static void projects_created_listed_found(void)
{
    store *s = open_store(db_url, 1);
    CHECK(s != NULL);
    if (!s)
        return;
    err_info err = {0};
    store_project p, q;
    char key[AUTH_DSN_KEY_MAX];
    CHECK_EQ_INT(auth_project_create(&p, key, s, "ios-app", "iOS App", &err), ERR_OK);
    CHECK(p.id > 1);
    CHECK_EQ_STR(p.slug, "ios-app");
    CHECK_EQ_STR(p.name, "iOS App");
    CHECK_EQ_INT(p.keys, 1);
    CHECK_EQ_INT(strlen(key), AUTH_DSN_KEY_HEX);
    CHECK_EQ_INT(strspn(key, "0123456789abcdef"), AUTH_DSN_KEY_HEX);
    CHECK_EQ_INT(strlen(p.created_at), 24);
    /* the key itself is stored nowhere */
    char *sql = xsprintf("SELECT count(*) FROM dsn_keys WHERE encode(key_sha256, 'hex') LIKE "
                         "'%%%s%%' OR encode(key_sha256, 'escape') LIKE '%%%s%%'", key, key);
    char *v = query1(db_url, sql);
    CHECK_EQ_STR(v, "0");
    free(v);
    free(sql);

    CHECK_EQ_INT(store_project_find_slug(&q, s, "ios-app", &err), ERR_OK);
    CHECK_EQ_INT(q.id, p.id);
    CHECK_EQ_STR(q.name, "iOS App");
    CHECK_EQ_INT(store_project_find_id(&q, s, p.id, &err), ERR_OK);
    CHECK_EQ_STR(q.slug, "ios-app");
    CHECK_EQ_INT(store_project_find_id(&q, s, 1, &err), ERR_OK);
    CHECK_EQ_STR(q.slug, "default");
    CHECK_EQ_INT(store_project_find_slug(&q, s, "nope", &err), ERR_NOT_FOUND);
    CHECK_EQ_INT(store_project_find_slug(&q, s, "Bad Slug", &err), ERR_NOT_FOUND);
    CHECK_EQ_INT(store_project_find_id(&q, s, 9999, &err), ERR_NOT_FOUND);

    /* refusals: taken slug, bad slug, overlong name; nothing stored for them */
    CHECK_EQ_INT(auth_project_create(&q, key, s, "ios-app", NULL, &err), ERR_CONFLICT);
    CHECK(strstr(err.msg, "ios-app") != NULL);
    CHECK_EQ_STR(key, "");
    CHECK_EQ_INT(auth_project_create(&q, key, s, "Not Valid", NULL, &err), ERR_INVALID);
    char name[260];
    memset(name, 'n', 250);
    name[250] = '\0';
    CHECK_EQ_INT(auth_project_create(&q, key, s, "long-name", name, &err), ERR_INVALID);

    store_project *list;
    size_t n;
    CHECK_EQ_INT(store_projects_list(&list, &n, s, &err), ERR_OK);
    CHECK(n >= 2);
    if (n >= 2) {
        CHECK_EQ_STR(list[0].slug, "default");
        CHECK_EQ_INT(list[0].keys, 0);
        bool found = false;
        for (size_t i = 0; i < n; i++)
            found |= strcmp(list[i].slug, "ios-app") == 0 && list[i].id == p.id;
        CHECK(found);
        for (size_t i = 1; i < n; i++)
            CHECK(list[i].id > list[i - 1].id);
    }
    free(list);
    store_close(s);
}

/* auth_dsn_key_check of `key` until it gives `want`, for at most 10 s: the key table
 * reloads every AUTH_TOKENS_REFRESH_MS, later on a loaded machine. Returns the last result. */
static err_code key_check_until(int64_t *pid, auth_tokens *t, const char *key, err_code want,
                                err_info *err)
{
    err_code rc = auth_dsn_key_check(pid, t, key, err);
    for (double end = now_s() + 10; rc != want && now_s() < end;) {
        sleep_ms(50);
        rc = auth_dsn_key_check(pid, t, key, err);
    }
    return rc;
}

/* A key maps to its own project and no other; a wrong, malformed or other project's key
 * is refused; a rotated key works during the grace period and not after. */
static void keys_map_to_their_project_and_rotate(void)
{
    store_project a, b;
    char ka[AUTH_DSN_KEY_MAX], kb[AUTH_DSN_KEY_MAX];
    store *s = open_with_two_projects(&a, ka, "proj-a", &b, kb, "proj-b");
    if (!s)
        return;
    err_info err = {0};
    CHECK(a.id != b.id);
    CHECK(strcmp(ka, kb) != 0);

    auth_tokens *t = NULL;
    CHECK_EQ_INT(auth_tokens_open(&t, s, &err), ERR_OK);
    if (!t) {
        store_close(s);
        return;
    }
    int64_t pid = -1;
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, ka, &err), ERR_OK);
    CHECK_EQ_INT(pid, a.id);
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, kb, &err), ERR_OK);
    CHECK_EQ_INT(pid, b.id);
    /* any case: SDKs pass the DSN's user part as written */
    char upper[AUTH_DSN_KEY_MAX];
    for (int i = 0; i < AUTH_DSN_KEY_MAX; i++)
        upper[i] = (char)(ka[i] >= 'a' && ka[i] <= 'f' ? ka[i] - 32 : ka[i]);
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, upper, &err), ERR_OK);
    CHECK_EQ_INT(pid, a.id);
    /* wrong by one digit, malformed, empty, NULL */
    char wrong[AUTH_DSN_KEY_MAX];
    memcpy(wrong, ka, sizeof wrong);
    wrong[31] = wrong[31] == '0' ? '1' : '0';
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, wrong, &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(pid, 0);
    CHECK(strstr(err.msg, "not accepted") != NULL);
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, "zz", &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, "", &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, NULL, &err), ERR_UNAUTHORIZED);

    /* a new key reaches the table within its refresh interval */
    store_project c;
    char kc[AUTH_DSN_KEY_MAX];
    CHECK_EQ_INT(auth_project_create(&c, kc, s, "proj-c", NULL, &err), ERR_OK);
    CHECK_EQ_STR(c.name, "proj-c");
    CHECK_EQ_INT(key_check_until(&pid, t, kc, ERR_OK, &err), ERR_OK);
    CHECK_EQ_INT(pid, c.id);

    /* rotate A with a 6 s grace: old and new both work, then only the new one (the grace
     * leaves a loaded machine time to see the new key before the old one expires) */
    store_project ra;
    char ka2[AUTH_DSN_KEY_MAX], expires[32];
    double rotated = now_s();
    CHECK_EQ_INT(auth_dsn_key_rotate(&ra, ka2, expires, s, "proj-a", 6, &err), ERR_OK);
    CHECK_EQ_INT(ra.id, a.id);
    CHECK(strcmp(ka2, ka) != 0);
    CHECK_EQ_INT(strlen(expires), 24);
    CHECK_EQ_INT(key_check_until(&pid, t, ka2, ERR_OK, &err), ERR_OK);
    CHECK_EQ_INT(pid, a.id);
    fprintf(stderr, "rotated key known after %.2f s\n", now_s() - rotated);
    CHECK(now_s() - rotated < 5);   /* so the old key is still in its grace: */
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, ka, &err), ERR_OK);
    CHECK_EQ_INT(pid, a.id);
    store_project fa;
    CHECK_EQ_INT(store_project_find_slug(&fa, s, "proj-a", &err), ERR_OK);
    CHECK_EQ_INT(fa.keys, 2);
    /* the grace ends 6 s after the rotation: the old key is refused then (not before the
     * grace is over: checked above), polled for up to 10 s more */
    CHECK_EQ_INT(key_check_until(&pid, t, ka, ERR_UNAUTHORIZED, &err), ERR_UNAUTHORIZED);
    fprintf(stderr, "old key refused %.2f s after the rotation (grace 6 s)\n", now_s() - rotated);
    CHECK(now_s() - rotated >= 6 - 0.5);
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, ka2, &err), ERR_OK);
    CHECK_EQ_INT(pid, a.id);
    CHECK_EQ_INT(store_project_find_slug(&fa, s, "proj-a", &err), ERR_OK);
    CHECK_EQ_INT(fa.keys, 1);
    /* B was not touched */
    CHECK_EQ_INT(auth_dsn_key_check(&pid, t, kb, &err), ERR_OK);
    CHECK_EQ_INT(pid, b.id);
    /* rotating with no grace stops the old key at once */
    char kb2[AUTH_DSN_KEY_MAX];
    store_project rb;
    CHECK_EQ_INT(auth_dsn_key_rotate(&rb, kb2, expires, s, "proj-b", 0, &err), ERR_OK);
    CHECK_EQ_INT(key_check_until(&pid, t, kb, ERR_UNAUTHORIZED, &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(key_check_until(&pid, t, kb2, ERR_OK, &err), ERR_OK);
    CHECK_EQ_INT(pid, b.id);
    CHECK_EQ_INT(auth_dsn_key_rotate(&rb, kb2, expires, s, "no-such", 10, &err), ERR_NOT_FOUND);
    CHECK_EQ_STR(kb2, "");
    auth_tokens_close(t);
    store_close(s);
}

/* The same crash (app, fingerprint) processed at intake into two projects: two issues, each
 * with its own report; the default project (project_id 0) is project 1. */
static void same_crash_two_projects_at_intake(void)
{
    store_project x, y;
    char kx[AUTH_DSN_KEY_MAX], ky[AUTH_DSN_KEY_MAX];
    store *s = open_with_two_projects(&x, kx, "intake-x", &y, ky, "intake-y");
    if (!s)
        return;
    err_info err = {0};
    store_intake *q;
    CHECK_EQ_INT(store_intake_new(&q, s, NULL, &err), ERR_OK);
    static const char FP[] = "cafe000000000000000000000000000000000000000000000000000000000009";
    store_report_processed pr = {.issue_app = "Same", .fingerprint = FP, .kind = "crash",
                                 .title = "EXC_CRASH: s", .culprit = "s()", .exception = "EXC_CRASH",
                                 .basis = "in_app", .frames_json = "[]",
                                 .symbolicated_json = "{}"};
    int64_t projects[5] = {x.id, y.id, x.id, 0, STORE_PROJECT_DEFAULT};
    char ids[5][37];
    for (int i = 0; i < 5; i++) {
        store_report_new row = {.status = "received", .format = "json",
                                .content_type = "application/json", .raw = (const uint8_t *)"{}",
                                .raw_len = 2, .app = "Same", .app_version = "1.0",
                                .processed = &pr, .project_id = projects[i]};
        CHECK_EQ_INT(store_intake_insert(ids[i], q, &row, &err), ERR_OK);
    }
    char want[64];
    snprintf(want, sizeof want, "1:2,%lld:2,%lld:1", (long long)x.id, (long long)y.id);
    check_query(want, "SELECT string_agg(project_id || ':' || count, ',' ORDER BY project_id) "
                "FROM issues WHERE fingerprint = '%s'", FP);
    /* each report in its project and in its project's issue */
    for (int i = 0; i < 5; i++) {
        long long p = projects[i] ? projects[i] : STORE_PROJECT_DEFAULT;
        snprintf(want, sizeof want, "%lld %lld", p, p);
        check_query(want, "SELECT r.project_id || ' ' || i.project_id FROM reports r JOIN "
                    "issues i ON i.id = r.issue_id WHERE r.id = '%s'", ids[i]);
        store_report rep;
        arena *a = arena_new(1 << 20);
        CHECK_EQ_INT(store_report_get(&rep, s, ids[i], a, &err), ERR_OK);
        CHECK_EQ_INT(rep.project_id, p);
        arena_free(a);
    }
    /* store_report_insert (the blocking, unbatched path) too */
    char one[37];
    store_report_new plain = {.status = "failed", .format = "json",
                              .content_type = "application/json", .raw = (const uint8_t *)"{}",
                              .raw_len = 2, .error = "bad", .project_id = y.id};
    CHECK_EQ_INT(store_intake_insert(one, q, &plain, &err), ERR_OK);
    snprintf(want, sizeof want, "%lld", (long long)y.id);
    check_query(want, "SELECT project_id::text FROM reports WHERE id = '%s'", one);
    store_intake_free(q);
    store_close(s);
}

/* The workers' path: received reports of two projects with the same signature, claimed in
 * one batch, grouped by grouping_decide and committed: one issue per project. */
static void same_crash_two_projects_by_workers(void)
{
    store_project x, y;
    char kx[AUTH_DSN_KEY_MAX], ky[AUTH_DSN_KEY_MAX];
    store *s = open_with_two_projects(&x, kx, "work-x", &y, ky, "work-y");
    if (!s)
        return;
    err_info err = {0};
    /* nothing else queued: earlier tests left received reports; take them out of the way */
    char *v = query1(db_url, "UPDATE reports SET status = 'failed' WHERE status = 'received' "
                             "RETURNING 1");
    free(v);
    int64_t projects[4] = {x.id, y.id, y.id, x.id};
    for (int i = 0; i < 4; i++) {
        char id[37];
        store_report_new row = {.status = "received", .format = "json",
                                .content_type = "application/json", .raw = (const uint8_t *)"{}",
                                .raw_len = 2, .app = "Work", .project_id = projects[i],
                                .error = NULL};
        CHECK_EQ_INT(store_report_insert(id, s, &row, &err), ERR_OK);
    }
    store_work *w = NULL;
    const store_claimed *rows;
    size_t n = 0;
    arena *a = arena_new(8 << 20);
    CHECK_EQ_INT(store_work_claim(&w, &rows, &n, s, 16, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 4);
    if (w && n == 4) {
        static const char FP[] = "beef000000000000000000000000000000000000000000000000000000000007";
        store_outcome out[4];
        for (size_t i = 0; i < n; i++) {
            CHECK_EQ_INT(rows[i].project_id, projects[i]);
            out[i] = (store_outcome){.status = "processed", .symbolicated_json = "{}",
                                     .kind = "crash", .app = "Work", .app_version = "2.0",
                                     .grouped = true, .fingerprint = FP, .title = "t",
                                     .culprit = "c", .exception = "e", .basis = "in_app",
                                     .frames_json = "[]"};
        }
        store_group *groups;
        size_t ng;
        CHECK_EQ_INT(grouping_decide(&groups, &ng, out, rows, n, a, &err), ERR_OK);
        CHECK_EQ_INT(ng, 2);
        unsigned regressions = 0;
        CHECK_EQ_INT(store_work_commit(w, out, groups, ng, &regressions, &err), ERR_OK);
        char want[64];
        snprintf(want, sizeof want, "%lld:2,%lld:2", (long long)x.id, (long long)y.id);
        check_query(want, "SELECT string_agg(project_id || ':' || count, ',' ORDER BY "
                    "project_id) FROM issues WHERE fingerprint = '%s'", FP);
        check_query("4", "SELECT count(*) FROM reports r JOIN issues i ON i.id = r.issue_id "
                    "WHERE r.app = 'Work' AND r.project_id = i.project_id");
    } else {
        store_work_abort(w);
    }
    arena_free(a);
    store_close(s);
}

/* The last line of `out` that starts with `prefix`, its rest copied to dst[cap]; false if
 * none. */
static bool line_after(char *dst, size_t cap, const char *out, const char *prefix)
{
    bool found = false;
    for (const char *p = out; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        size_t pl = strlen(prefix);
        if (len >= pl && strncmp(p, prefix, pl) == 0 && len - pl < cap) {
            memcpy(dst, p + pl, len - pl);
            dst[len - pl] = '\0';
            found = true;
        }
        p = nl ? nl + 1 : NULL;
    }
    return found;
}

static e2e_env e2e;

/* `stacksift project create | list | key rotate` against the database: the DSN printed on a
 * line of its own, HOST from STACKSIFT_PUBLIC_URL or the listen address, the key it carries
 * accepted for that project; a rotation with --grace 0 stops the old key. */
static void cli_create_list_rotate(void)
{
    char dir[] = "/tmp/stacksift-projects-cli.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *env_db = xsprintf("STACKSIFT_DATABASE_URL=%s", db_url);
    char *env_pub[] = {env_db, "STACKSIFT_PUBLIC_URL=https://crash.example.com/", NULL};
    char *env_listen[] = {env_db, "STACKSIFT_LISTEN=127.0.0.1:9931", NULL};
    char *create[] = {(char *)e2e.bin, "project", "create", "cli-app", "--name", "CLI App", NULL};
    run_result r = run_in(dir, create, env_pub, 30);
    CHECK_EQ_INT(r.status, 0);
    char dsn[300] = "", key[AUTH_DSN_KEY_MAX];
    int64_t id = 0;
    err_info err = {0};
    CHECK(line_after(dsn, sizeof dsn, r.out, "DSN="));
    CHECK(strncmp(dsn, "https://", 8) == 0 && strstr(dsn, "@crash.example.com/") != NULL);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, dsn, strlen(dsn), &err), ERR_OK);
    run_free(&r);
    store *s = open_store(db_url, 2);
    store_project p;
    CHECK(s != NULL);
    if (!s)
        goto out;
    CHECK_EQ_INT(store_project_find_slug(&p, s, "cli-app", &err), ERR_OK);
    CHECK_EQ_INT(p.id, id);
    CHECK_EQ_STR(p.name, "CLI App");
    auth_tokens *t = NULL;
    CHECK_EQ_INT(auth_tokens_open(&t, s, &err), ERR_OK);
    int64_t pid = 0;
    if (t) {
        CHECK_EQ_INT(auth_dsn_key_check(&pid, t, key, &err), ERR_OK);
        CHECK_EQ_INT(pid, id);
    }

    /* default HOST: the listen address; a taken slug and a bad slug fail with the reason */
    char *create2[] = {(char *)e2e.bin, "project", "create", "cli-two", NULL};
    r = run_in(dir, create2, env_listen, 30);
    CHECK_EQ_INT(r.status, 0);
    CHECK(line_after(dsn, sizeof dsn, r.out, "DSN="));
    CHECK(strncmp(dsn, "http://", 7) == 0 && strstr(dsn, "@127.0.0.1:9931/") != NULL);
    run_free(&r);
    r = run_in(dir, create2, env_listen, 30);
    CHECK_EQ_INT(r.status, 1);
    CHECK(strstr(r.err, "cli-two") != NULL && strstr(r.err, "exists") != NULL);
    CHECK(strstr(r.out, "DSN=") == NULL);
    run_free(&r);
    char *create_bad[] = {(char *)e2e.bin, "project", "create", "No Good", NULL};
    r = run_in(dir, create_bad, env_listen, 30);
    CHECK_EQ_INT(r.status, 1);
    CHECK(strstr(r.err, "not valid") != NULL);
    run_free(&r);
    char *usage[] = {(char *)e2e.bin, "project", "create", NULL};
    r = run_in(dir, usage, env_listen, 30);
    CHECK_EQ_INT(r.status, 2);
    run_free(&r);

    char *list[] = {(char *)e2e.bin, "project", "list", NULL};
    r = run_in(dir, list, env_listen, 30);
    CHECK_EQ_INT(r.status, 0);
    CHECK(strstr(r.out, "default") != NULL && strstr(r.out, "cli-app") != NULL &&
          strstr(r.out, "CLI App") != NULL);
    CHECK(strstr(r.out, key) == NULL);   /* never a key */
    run_free(&r);

    char *rotate[] = {(char *)e2e.bin, "project", "key", "rotate", "cli-app", "--grace", "0", NULL};
    r = run_in(dir, rotate, env_pub, 30);
    CHECK_EQ_INT(r.status, 0);
    char dsn2[300] = "", key2[AUTH_DSN_KEY_MAX];
    int64_t id2 = 0;
    CHECK(line_after(dsn2, sizeof dsn2, r.out, "DSN="));
    CHECK_EQ_INT(auth_dsn_parse(key2, &id2, dsn2, strlen(dsn2), &err), ERR_OK);
    CHECK_EQ_INT(id2, id);
    CHECK(strcmp(key2, key) != 0);
    run_free(&r);
    if (t) {
        CHECK_EQ_INT(key_check_until(&pid, t, key, ERR_UNAUTHORIZED, &err), ERR_UNAUTHORIZED);
        CHECK_EQ_INT(key_check_until(&pid, t, key2, ERR_OK, &err), ERR_OK);
        CHECK_EQ_INT(pid, id);
    }
    /* the default grace (STACKSIFT_DSN_GRACE_S): the old key still works */
    char *rotate_default[] = {(char *)e2e.bin, "project", "key", "rotate", "cli-app", NULL};
    r = run_in(dir, rotate_default, env_pub, 30);
    CHECK_EQ_INT(r.status, 0);
    CHECK(strstr(r.out, "86400 s") != NULL);
    run_free(&r);
    if (t) {
        sleep_ms(AUTH_TOKENS_REFRESH_MS * 3);
        CHECK_EQ_INT(auth_dsn_key_check(&pid, t, key2, &err), ERR_OK);
    }
    char *rotate_bad[] = {(char *)e2e.bin, "project", "key", "rotate", "cli-app", "--grace", "-5",
                          NULL};
    r = run_in(dir, rotate_bad, env_pub, 30);
    CHECK_EQ_INT(r.status, 2);
    run_free(&r);
    char *rotate_none[] = {(char *)e2e.bin, "project", "key", "rotate", "no-such", NULL};
    r = run_in(dir, rotate_none, env_pub, 30);
    CHECK_EQ_INT(r.status, 1);
    CHECK(strstr(r.err, "no-such") != NULL);
    run_free(&r);
    auth_tokens_close(t);
    store_close(s);
out:
    free(env_db);
}

/* The HTTP side: GET /api/v1/projects, and project= on the issues list and the call sites
 * (JSON and CSV) of a real `stacksift serve`: only that project's rows; an unknown slug is a
 * 400 naming it. Issues come from same_crash_two_projects_at_intake (intake-x, intake-y). */
static void api_filters_by_project(void)
{
    char dir[] = "/tmp/stacksift-projects-api.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    int port = free_port();
    char *env_db = xsprintf("STACKSIFT_DATABASE_URL=%s", db_url);
    char *env_data = xsprintf("STACKSIFT_DATA_DIR=%s/data", dir);
    char *env_listen = xsprintf("STACKSIFT_LISTEN=127.0.0.1:%d", port);
    char *env[] = {env_db, env_data, env_listen, "STACKSIFT_WORKERS=0",
                   "STACKSIFT_HTTP_THREADS=2", NULL};
    char *token = token_create(dir, e2e.bin, env, "projects-test", "read");
    CHECK(token != NULL);
    char *log_path = xsprintf("%s/serve.log", dir);
    pid_t pid = token ? serve_start(e2e.bin, env, log_path, port, "/healthz") : -1;
    CHECK(pid > 0);
    if (pid > 0) {
        char *auth = xsprintf("Authorization: Bearer %s\r\n", token);
        http_resp r = http_req(port, "GET", "/api/v1/projects", auth, NULL, 0, false);
        CHECK_EQ_INT(r.status, 200);
        json_t *ps = r.json ? json_object_get(r.json, "projects") : NULL;
        CHECK(json_is_array(ps) && json_array_size(ps) >= 3);
        int64_t x_id = 0, y_id = 0;
        for (size_t i = 0; ps && i < json_array_size(ps); i++) {
            json_t *p = json_array_get(ps, i);
            const char *slug = json_string_value(json_object_get(p, "slug"));
            if (slug && strcmp(slug, "intake-x") == 0)
                x_id = json_integer_value(json_object_get(p, "id"));
            if (slug && strcmp(slug, "intake-y") == 0)
                y_id = json_integer_value(json_object_get(p, "id"));
        }
        CHECK(x_id > 1 && y_id > 1);
        resp_free(&r);

        /* each project's issues only; the same crash is one issue in each */
        const char *slugs[2] = {"intake-x", "intake-y"};
        int64_t ids[2] = {x_id, y_id}, counts[2] = {2, 1};
        for (int k = 0; k < 2; k++) {
            char *path = xsprintf("/api/v1/issues?project=%s&app=Same", slugs[k]);
            r = http_req(port, "GET", path, auth, NULL, 0, false);
            CHECK_EQ_INT(r.status, 200);
            json_t *is = r.json ? json_object_get(r.json, "issues") : NULL;
            CHECK(json_is_array(is) && json_array_size(is) == 1);
            json_t *i0 = json_array_get(is, 0);
            CHECK_EQ_INT(json_integer_value(json_object_get(i0, "project_id")), ids[k]);
            CHECK_EQ_INT(json_integer_value(json_object_get(i0, "count")), counts[k]);
            resp_free(&r);
            free(path);
        }
        /* without project=: every project's */
        r = http_req(port, "GET", "/api/v1/issues?app=Same", auth, NULL, 0, false);
        CHECK_EQ_INT(r.status, 200);
        json_t *all = r.json ? json_object_get(r.json, "issues") : NULL;
        CHECK(json_is_array(all) && json_array_size(all) == 3);
        resp_free(&r);

        r = http_req(port, "GET", "/api/v1/issues?project=no-such", auth, NULL, 0, false);
        CHECK_EQ_INT(r.status, 400);
        CHECK(r.body && strstr(r.body, "no-such") != NULL);
        resp_free(&r);
        r = http_req(port, "GET", "/api/v1/callsites?project=intake-x", auth, NULL, 0, false);
        CHECK_EQ_INT(r.status, 200);
        json_t *cs = r.json ? json_object_get(r.json, "callsites") : NULL;
        CHECK(json_is_array(cs) && json_array_size(cs) == 0);
        resp_free(&r);
        r = http_req(port, "GET", "/api/v1/callsites.csv?project=no-such", auth, NULL, 0, false);
        CHECK_EQ_INT(r.status, 400);
        resp_free(&r);
        r = http_req(port, "GET", "/api/v1/callsites.csv?project=default", auth, NULL, 0, false);
        CHECK_EQ_INT(r.status, 200);
        resp_free(&r);
        free(auth);
        kill(pid, SIGTERM);
        CHECK_EQ_INT(wait_exit(pid, 20), 0);
    }
    free(log_path);
    free(token);
    free(env_listen);
    free(env_data);
    free(env_db);
}

int main(void)
{
    e2e_env env;
    if (!e2e_env_load(&env, "test_projects"))
        return 1;
    e2e = env;
    source_dir = env.source_dir;
    char *dbname = xsprintf("stacksift_projects_%d", (int)getpid());
    db_url = create_database(env.base_url, dbname);
    if (!db_url)
        return 1;
    store *s = open_store(db_url, 1);
    err_info err = {0};
    int applied;
    if (!s || store_migrate(&applied, s, NULL, NULL, &err) != ERR_OK) {
        fprintf(stderr, "test_projects: migrate: %s\n", err.msg);
        return 1;
    }
    store_close(s);

    RUN(migration_moves_existing_rows_to_default);
    RUN(projects_created_listed_found);
    RUN(keys_map_to_their_project_and_rotate);
    RUN(same_crash_two_projects_at_intake);
    RUN(same_crash_two_projects_by_workers);
    RUN(cli_create_list_rotate);
    RUN(api_filters_by_project);

    PGconn *c = PQconnectdb(env.base_url);
    char *drop = xsprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
    PQclear(PQexec(c, drop));
    PQfinish(c);
    free(drop);
    free(dbname);
    free(db_url);
    return harness_done();
}
