/*
 * test_server - the real `stacksift serve` process against a real Postgres, driven over HTTP
 * on a loopback socket (the HTTP/1.1 client of server_harness.h). Needs
 * STACKSIFT_TEST_DATABASE_URL (tests/run.sh starts a cluster with tests/pg.sh and sets it),
 * STACKSIFT_BIN and the built fixtures in STACKSIFT_FIXTURES. Each run creates its own
 * database; the outage test starts a second private cluster with tests/pg.sh, because it
 * stops Postgres.
 */
#include <ctype.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <zlib.h>

#include "harness.h"
#include "server_harness.h"

/* ---- small utilities (the rest are in server_harness.h) ------------------------------ */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* Entries of the scratch directory `tmp` (data_dir/tmp) besides chunks/ and files/, the
 * sentry-cli chunk copies and files put together in place, which must hold nothing either
 * (-1 if one is missing). */
static int count_scratch(const char *tmp)
{
    char *chunks = xsprintf("%s/chunks", tmp), *files = xsprintf("%s/files", tmp);
    int n = count_entries(tmp), c = count_entries(chunks), f = count_entries(files);
    free(chunks);
    free(files);
    return n < 2 || c < 0 || f < 0 ? -1 : n - 2 + c + f;
}

static char *tmp_root;

/* Run argv to completion; its stdout and stderr are kept under tmp_root. */
static run_result run(char *const *argv, char *const *env, double timeout_s)
{
    return run_in(tmp_root, argv, env, timeout_s);
}

/* ---- HTTP helpers (the client is in server_harness.h) ---------------------------------- */

static char *auth(const char *token, const char *more)
{
    return xsprintf("Authorization: Bearer %s\r\n%s", token, more ? more : "");
}

static const char *err_code_of(const http_resp *r)
{
    json_t *e = r->json ? json_object_get(r->json, "error") : NULL;
    return e ? json_string_value(json_object_get(e, "code")) : NULL;
}

static const char *jstr(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* ---- the environment under test -------------------------------------------------------- */

static e2e_env e2e;        /* bin, fixtures, source_dir, base_url */
static char *db_url;        /* this test's own database on the shared cluster */
static char *data_dir;
static int port;
static pid_t server_pid = -1;
static char *server_log;
static char *tok_ingest, *tok_upload, *tok_read, *tok_admin;
static char *report_id_text;

static char *env_db, *env_data, *env_listen, *env_report_max, *env_upload_max, *env_log;

static void set_env(const char *url, const char *dir, int p)
{
    free(env_db), free(env_data), free(env_listen);
    env_db = xsprintf("STACKSIFT_DATABASE_URL=%s", url);
    env_data = xsprintf("STACKSIFT_DATA_DIR=%s", dir);
    env_listen = xsprintf("STACKSIFT_LISTEN=127.0.0.1:%d", p);
}

static char **server_env(void)
{
    static char *env[16];
    size_t n = 0;
    env[n++] = env_db;
    env[n++] = env_data;
    env[n++] = env_listen;
    env[n++] = env_report_max;
    env[n++] = env_upload_max;
    env[n++] = env_log;
    env[n++] = "STACKSIFT_DB_TIMEOUT_MS=2000";
    env[n++] = "STACKSIFT_HTTP_THREADS=2";
    env[n++] = "STACKSIFT_WORKERS=0";   /* intake only: test_pipeline covers processing */
    env[n++] = "STACKSIFT_SHUTDOWN_TIMEOUT_MS=10000";
    env[n] = NULL;
    return env;
}

/* Start `stacksift serve`, wait until /healthz answers (at most 15 s). */
static pid_t start_server(int p)
{
    return serve_start(e2e.bin, server_env(), server_log, p, "/healthz");
}

static int stop_server(pid_t pid)
{
    if (pid <= 0)
        return -1;
    kill(pid, SIGTERM);
    return wait_exit(pid, 30);
}

static char *create_token(const char *name, const char *scopes)
{
    return token_create(tmp_root, e2e.bin, server_env(), name, scopes);
}

static char *corpus(const char *rel)
{
    return xsprintf("%s/../shared/corpus/reports/%s", e2e.source_dir, rel);
}

static char *fixture(const char *rel)
{
    return xsprintf("%s/%s", e2e.fixtures, rel);
}

static http_resp post_file(const char *path_url, const char *token, const char *headers,
                           const char *file)
{
    size_t len = 0;
    char *data = read_file(file, &len);
    char *h = auth(token, headers);
    http_resp r = http_req(port, "POST", path_url, h, data ? data : "", len, false);
    if (!data)
        fprintf(stderr, "missing file %s\n", file);
    free(h);
    free(data);
    return r;
}

/* ---- tests ----------------------------------------------------------------------------- */

static void serve_refuses_unmigrated_schema(void)
{
    char *argv[] = {(char *)e2e.bin, "serve", NULL};
    run_result r = run(argv, server_env(), 30);
    CHECK(r.status != 0);
    CHECK(strstr(r.err, "stacksift migrate") != NULL);
    CHECK(strstr(r.err, "\"event\":\"schema_outdated\"") != NULL);
    run_free(&r);
}

static void migrate_applies_once(void)
{
    char *argv[] = {(char *)e2e.bin, "migrate", NULL};
    run_result r = run(argv, server_env(), 60);
    CHECK_EQ_INT(r.status, 0);
    CHECK(strstr(r.out, "applied 0001_create_core") != NULL);
    run_free(&r);
    r = run(argv, server_env(), 60);
    CHECK_EQ_INT(r.status, 0);
    CHECK(strstr(r.out, "(0 applied now)") != NULL);
    CHECK(strstr(r.out, "applied 0001") == NULL);
    run_free(&r);
}

static void tokens_are_created(void)
{
    tok_ingest = create_token("device", "ingest");
    tok_upload = create_token("ci", "upload");
    tok_read = create_token("dashboard", "read");
    tok_admin = create_token("ops", "admin");
    CHECK(tok_ingest && strncmp(tok_ingest, "ss_", 3) == 0);
    CHECK(tok_upload && tok_read && tok_admin);
    CHECK(tok_ingest && tok_read && strcmp(tok_ingest, tok_read) != 0);
    char *argv[] = {(char *)e2e.bin, "token", "create", "--name", "x", "--scopes", "ingest,root",
                    NULL};
    run_result r = run(argv, server_env(), 30);
    CHECK_EQ_INT(r.status, 2);
    CHECK(strstr(r.err, "unknown scope 'root'") != NULL);
    run_free(&r);
}

static void server_starts_and_is_ready(void)
{
    server_pid = start_server(port);
    CHECK(server_pid > 0);
    http_resp r = http_req(port, "GET", "/healthz", NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 200);
    resp_free(&r);
    r = http_req(port, "GET", "/readyz", NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 200);
    CHECK(r.json && json_integer_value(json_object_get(r.json, "schema")) >= 1);
    resp_free(&r);
    r = http_req(port, "GET", "/nope", NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 404);
    CHECK_EQ_STR(err_code_of(&r), "not_found");
    resp_free(&r);
}

static void auth_failures_are_401_and_403(void)
{
    const char *body = "{}";
    http_resp r = http_req(port, "POST", "/api/v1/reports", "Content-Type: application/json\r\n",
                           body, 2, false);
    CHECK_EQ_INT(r.status, 401);
    CHECK_EQ_STR(err_code_of(&r), "unauthorized");
    CHECK(r.headers && strstr(r.headers, "WWW-Authenticate: Bearer"));
    resp_free(&r);

    char *bad = strdup(tok_ingest);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';   /* wrong secret */
    char *h = auth(bad, "Content-Type: application/json\r\n");
    CHECK_STATUS(http_req(port, "POST", "/api/v1/reports", h, body, 2, false), 401);
    free(h);
    free(bad);

    h = auth("ss_000000000000_00", NULL);
    CHECK_STATUS(http_req(port, "GET", "/api/v1/dsyms", h, NULL, 0, false), 401);
    free(h);

    h = auth(tok_read, "Content-Type: application/json\r\n");   /* read may not ingest */
    r = http_req(port, "POST", "/api/v1/reports", h, body, 2, false);
    CHECK_EQ_INT(r.status, 403);
    CHECK_EQ_STR(err_code_of(&r), "forbidden");
    resp_free(&r);
    free(h);

    h = auth(tok_ingest, "Content-Type: application/zip\r\n");   /* ingest may not upload */
    CHECK_STATUS(http_req(port, "POST", "/api/v1/dsyms", h, "PK", 2, false), 403);
    free(h);

    h = auth(tok_upload, NULL);   /* upload may not read */
    CHECK_STATUS(http_req(port, "GET", "/api/v1/dsyms", h, NULL, 0, false), 403);
    free(h);

    h = auth(tok_admin, NULL);    /* admin may do all */
    CHECK_STATUS(http_req(port, "GET", "/api/v1/dsyms", h, NULL, 0, false), 200);
    free(h);
}

static long long sql_count(const char *sql);

static void reports_are_accepted_and_readable(void)
{
    char *text = corpus("apple-text/eatfit-1.crash");
    http_resp r = post_file("/api/v1/reports", tok_ingest, "Content-Type: text/plain; charset=utf-8\r\n", text);
    CHECK_EQ_INT(r.status, 202);
    CHECK(r.json && jstr(r.json, "id") && strlen(jstr(r.json, "id")) == 36);
    CHECK_EQ_STR(r.json ? jstr(r.json, "format") : NULL, "apple-text");
    if (r.json && jstr(r.json, "id"))
        report_id_text = strdup(jstr(r.json, "id"));
    resp_free(&r);

    char *ips = corpus("ips/ips2crashlog-1.ips");
    r = post_file("/api/v1/reports", tok_admin, "Content-Type: application/json\r\n", ips);
    CHECK_EQ_INT(r.status, 202);
    CHECK_EQ_STR(r.json ? jstr(r.json, "format") : NULL, "ips");
    resp_free(&r);

    /* The same text report gzip-compressed. */
    size_t len;
    char *raw = read_file(text, &len);
    uLong cap = compressBound(len) + 64;
    unsigned char *gz = malloc(cap);
    z_stream zs = {0};
    deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (Bytef *)raw;
    zs.avail_in = (uInt)len;
    zs.next_out = gz;
    zs.avail_out = (uInt)cap;
    CHECK_EQ_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t gz_len = zs.total_out;
    deflateEnd(&zs);
    char *h = auth(tok_ingest, "Content-Type: text/plain\r\nContent-Encoding: gzip\r\n");
    r = http_req(port, "POST", "/api/v1/reports", h, gz, gz_len, false);
    CHECK_EQ_INT(r.status, 202);
    char *gz_id = r.json && jstr(r.json, "id") ? strdup(jstr(r.json, "id")) : NULL;
    resp_free(&r);
    free(h);

    /* Read it back: raw size is the decoded size, the parsed model is there. */
    if (gz_id) {
        char *path = xsprintf("/api/v1/reports/%s", gz_id);
        h = auth(tok_read, NULL);
        r = http_req(port, "GET", path, h, NULL, 0, false);
        CHECK_EQ_INT(r.status, 200);
        CHECK_EQ_STR(r.json ? jstr(r.json, "status") : NULL, "received");
        CHECK_EQ_INT(r.json ? json_integer_value(json_object_get(r.json, "raw_bytes")) : 0, len);
        CHECK_EQ_STR(r.json ? jstr(r.json, "app") : NULL, "EatFitByMax");
        CHECK(r.json && json_is_object(json_object_get(r.json, "report")));
        resp_free(&r);
        free(path);
        /* kept gzip'd in Postgres (smaller than the report), downloaded as the report */
        path = xsprintf("/api/v1/reports/%s/raw", gz_id);
        r = http_req(port, "GET", path, h, NULL, 0, false);
        CHECK_EQ_INT(r.status, 200);
        CHECK(r.body_len == len && memcmp(r.body, raw, len) == 0);
        resp_free(&r);
        free(path);
        free(h);
        char *sql = xsprintf("SELECT count(*) FROM reports WHERE id = '%s' AND "
                             "octet_length(raw) < raw_bytes AND get_byte(raw, 0) = 31", gz_id);
        CHECK_EQ_INT(sql_count(sql), 1);
        free(sql);
    }
    free(gz_id);
    free(gz);
    free(raw);
    free(text);
    free(ips);
}

static void malformed_reports_are_refused(void)
{
    struct {
        const char *headers, *body;
        int status;
        const char *code;
    } cases[] = {
        {"Content-Type: text/plain\r\n", "hello, this is not a crash report\n", 400, "invalid_input"},
        {"Content-Type: application/json\r\n", "{\"incident\": ", 400, "invalid_input"},
        {"Content-Type: text/plain\r\n", "", 400, "invalid_input"},
        {"Content-Type: image/png\r\n", "\x89PNG", 422, "unsupported"},
        {"", "Incident Identifier: x\n", 422, "unsupported"},
        {"Content-Type: text/plain\r\nContent-Encoding: gzip\r\n", "not gzip at all", 400,
         "invalid_input"},
        {"Content-Type: text/plain\r\nContent-Encoding: br\r\n", "x", 422, "unsupported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *h = auth(tok_ingest, cases[i].headers);
        http_resp r = http_req(port, "POST", "/api/v1/reports", h, cases[i].body,
                               strlen(cases[i].body), false);
        if (r.status != cases[i].status)
            fprintf(stderr, "case %zu: %d %s\n", i, r.status, r.body ? r.body : "");
        CHECK_EQ_INT(r.status, cases[i].status);
        CHECK_EQ_STR(err_code_of(&r), cases[i].code);
        resp_free(&r);
        free(h);
    }
    /* The parser's reason reaches the client. */
    char *h = auth(tok_ingest, "Content-Type: application/json\r\n");
    http_resp r = http_req(port, "POST", "/api/v1/reports", h, "{\"a\":", 5, false);
    json_t *e = r.json ? json_object_get(r.json, "error") : NULL;
    CHECK(e && jstr(e, "message") && strlen(jstr(e, "message")) > 10);
    resp_free(&r);
    free(h);

    /* a kernel panic is no app crash report: 422 naming it (Sentry events are reports now:
     * tests/test_sentry.py) */
    char *panic = corpus("other/pycrashreport-panic-1.ips");
    CHECK_STATUS(post_file("/api/v1/reports", tok_ingest, "Content-Type: application/json\r\n", panic), 422);
    free(panic);

    h = auth(tok_read, NULL);
    CHECK_STATUS(http_req(port, "GET", "/api/v1/reports/00000000-0000-0000-0000-000000000000", h, NULL, 0, false), 404);
    CHECK_STATUS(http_req(port, "GET", "/api/v1/reports/not-a-uuid", h, NULL, 0, false), 404);
    free(h);
}

/* ---- KSCrash's standard sink ------------------------------------------------------------ */

/* A multipart body as KSCrashReportSinkStandard sends it: one part named "reports"
 * (filename reports.json, application/json) holding `json`. *len gets its size. */
static char *sink_body(const char *json, size_t json_len, size_t *len)
{
    const char *boundary = "0xKhTmLbOuNdArY-KSCrash";
    char *pre = xsprintf("--%s\r\nContent-Disposition: form-data; name=\"reports\"; "
                         "filename=\"reports.json\"\r\nContent-Type: application/json\r\n\r\n",
                         boundary);
    char *post = xsprintf("\r\n--%s--\r\n", boundary);
    *len = strlen(pre) + json_len + strlen(post);
    char *body = malloc(*len);
    memcpy(body, pre, strlen(pre));
    memcpy(body + strlen(pre), json, json_len);
    memcpy(body + strlen(pre) + json_len, post, strlen(post));
    free(pre);
    free(post);
    return body;
}

static http_resp sink_post(const char *path, const char *json)
{
    size_t len;
    char *body = sink_body(json, strlen(json), &len);
    http_resp r = http_req(port, "POST", path, "Content-Type: multipart/form-data; "
                           "boundary=0xKhTmLbOuNdArY-KSCrash\r\nUser-Agent: KSCrashReporter\r\n",
                           body, len, false);
    free(body);
    return r;
}

/* The JSON text of `s` (a JSON string literal), malloc'd. */
static char *json_quoted(const char *s)
{
    json_t *j = json_string(s);
    char *out = json_dumps(j, JSON_ENCODE_ANY);
    json_decref(j);
    return out;
}

static void kscrash_sink_batch_is_taken_report_by_report(void)
{
    char *f1 = corpus("kscrash-json/kscrash-example-1.json");
    char *f2 = corpus("kscrash-json/sentrycocoa-5.json");
    char *f3 = corpus("kscrash-json/kscrash-test-2.json");   /* trailing comma: not JSON */
    char *f4 = corpus("apple-text/kscrash-example-7.crash");
    char *r1 = read_file(f1, NULL), *r2 = read_file(f2, NULL), *r3 = read_file(f3, NULL);
    char *r4 = read_file(f4, NULL);
    char *text = r4 ? json_quoted(r4) : NULL;
    /* as the sink writes it: reports in a JSON array, a string for an Apple-format report */
    char *json = xsprintf("[%s,%s,{\"hello\":1},%s,%s]", r1 ? r1 : "{}", r2 ? r2 : "{}",
                          r3 ? r3 : "{}", text ? text : "\"\"");
    char *path = xsprintf("/api/v1/reports?token=%s", tok_ingest);
    http_resp r = sink_post(path, json);
    CHECK_EQ_INT(r.status, 202);
    json_t *reps = r.json ? json_object_get(r.json, "reports") : NULL;
    CHECK_EQ_INT(json_array_size(reps), 5);
    CHECK_EQ_INT(r.json ? json_integer_value(json_object_get(r.json, "accepted")) : -1, 3);
    CHECK_EQ_INT(r.json ? json_integer_value(json_object_get(r.json, "refused")) : -1, 2);
    static const char *const FORMAT[5] = {"kscrash", "kscrash", NULL, NULL, "apple-text"};
    char *h = auth(tok_read, NULL);
    for (size_t i = 0; i < json_array_size(reps) && i < 5; i++) {
        json_t *e = json_array_get(reps, i);
        CHECK_EQ_INT(json_integer_value(json_object_get(e, "index")), i);
        if (FORMAT[i] == NULL) {
            json_t *er = json_object_get(e, "error");
            CHECK_EQ_STR(jstr(er, "code"), "invalid_input");
            CHECK(jstr(er, "message") != NULL && strlen(jstr(er, "message")) > 10);
            continue;
        }
        CHECK_EQ_STR(jstr(e, "format"), FORMAT[i]);
        /* each report is stored as its own document, readable as sent */
        const char *id = jstr(e, "id");
        CHECK(id != NULL && strlen(id) == 36);
        char *raw = xsprintf("/api/v1/reports/%s/raw", id ? id : "x");
        http_resp g = http_req(port, "GET", raw, h, NULL, 0, false);
        CHECK_EQ_INT(g.status, 200);
        /* the report's own bytes: the file's (a JSON value ends at its last brace) */
        const char *want = i == 0 ? r1 : i == 1 ? r2 : r4;
        size_t wlen = want ? strlen(want) : 0;
        while (i < 2 && wlen > 0 && isspace((unsigned char)want[wlen - 1]))
            wlen--;
        if (!(g.body_len == wlen && want && memcmp(g.body, want, wlen) == 0))
            fprintf(stderr, "report %zu: %zu bytes stored, %zu sent\n", i, g.body_len, wlen);
        CHECK(want != NULL && g.body != NULL && g.body_len == wlen &&
              memcmp(g.body, want, g.body_len) == 0);
        resp_free(&g);
        free(raw);
    }
    free(h);
    resp_free(&r);
    /* the token never reaches the log */
    size_t loglen = 0;
    char *log = read_file(server_log, &loglen);
    CHECK(log != NULL && strstr(log, tok_ingest + 20) == NULL);
    free(log);
    free(path);
    free(json);
    free(text);
    free(r1), free(r2), free(r3), free(r4);
    free(f1), free(f2), free(f3), free(f4);
}

static void kscrash_sink_refusals(void)
{
    char *path = xsprintf("/api/v1/reports?token=%s", tok_ingest);
    /* a truncated array, no array, no "reports" part, nothing acceptable: 4xx naming it */
    http_resp r = sink_post(path, "[{\"report\":{},\"crash\":{\"threads\":[");
    CHECK_EQ_INT(r.status, 400);
    json_t *e = r.json ? json_object_get(r.json, "error") : NULL;
    CHECK(e && strstr(jstr(e, "message") ? jstr(e, "message") : "", "truncated") != NULL);
    resp_free(&r);
    r = sink_post(path, "{\"report\":{}}");
    CHECK_EQ_INT(r.status, 400);
    resp_free(&r);
    r = sink_post(path, "[{\"a\":1},\"not a crash report\"]");
    CHECK_EQ_INT(r.status, 400);
    CHECK_EQ_INT(r.json ? json_integer_value(json_object_get(r.json, "refused")) : -1, 2);
    CHECK_EQ_INT(r.json ? json_array_size(json_object_get(r.json, "reports")) : 0, 2);
    resp_free(&r);
    const char *other = "--bnd42\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n"
                        "--bnd42--\r\n";
    r = http_req(port, "POST", path, "Content-Type: multipart/form-data; boundary=bnd42\r\n", other,
                 strlen(other), false);
    CHECK_EQ_INT(r.status, 400);
    e = r.json ? json_object_get(r.json, "error") : NULL;
    if (!(e && strstr(jstr(e, "message") ? jstr(e, "message") : "", "\"reports\"") != NULL))
        fprintf(stderr, "no reports part: %s\n", r.body ? r.body : "");
    CHECK(e && strstr(jstr(e, "message") ? jstr(e, "message") : "", "\"reports\"") != NULL);
    resp_free(&r);
    free(path);
    /* the URL token: ingest-only tokens, ingest routes only, a bad one is 401 */
    path = xsprintf("/api/v1/reports?token=%s", tok_admin);
    r = sink_post(path, "[]");
    CHECK_EQ_INT(r.status, 403);
    resp_free(&r);
    free(path);
    r = sink_post("/api/v1/reports?token=ss_000000000000_00", "[]");
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    r = sink_post("/api/v1/reports", "[]");
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    path = xsprintf("/api/v1/dsyms?token=%s", tok_read);
    r = http_req(port, "GET", path, NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    free(path);
}

/* A project's DSN key in the URL (?sentry_key=) puts the sink's reports into that project. */
#define TEST_DSN_KEY "0123456789abcdef0123456789ABCDEF"
static long long test_project_id;

static void dsn_project_create(void)
{
    PGconn *db = PQconnectdb(db_url);
    PGresult *res = PQexec(db, "INSERT INTO projects (slug, name) VALUES ('ios-sdks', 'iOS') "
                               "RETURNING id");
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        test_project_id = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    char *sql = xsprintf("INSERT INTO dsn_keys (project_id, key_sha256) VALUES (%lld, "
                         "sha256(lower('%s')::bytea))", test_project_id, TEST_DSN_KEY);
    res = PQexec(db, sql);
    CHECK(PQresultStatus(res) == PGRES_COMMAND_OK);
    PQclear(res);
    free(sql);
    PQfinish(db);
    CHECK(test_project_id > 1);
}

static void kscrash_sink_with_dsn_key_goes_to_its_project(void)
{
    dsn_project_create();
    char *f1 = corpus("kscrash-json/kscrash-example-2.json");
    char *r1 = read_file(f1, NULL);
    char *json = xsprintf("[%s]", r1 ? r1 : "{}");
    http_resp r = sink_post("/api/v1/reports?sentry_key=" TEST_DSN_KEY, json);
    /* The key table reloads every AUTH_TOKENS_REFRESH_MS: until then the new key is refused
     * (and nothing stored). 10 s is for a loaded machine. */
    for (double end = now_s() + 10; r.status == 401 && now_s() < end;) {
        resp_free(&r);
        sleep_ms(100);
        r = sink_post("/api/v1/reports?sentry_key=" TEST_DSN_KEY, json);
    }
    CHECK_EQ_INT(r.status, 202);
    json_t *e = r.json ? json_array_get(json_object_get(r.json, "reports"), 0) : NULL;
    const char *id = e ? jstr(e, "id") : NULL;
    CHECK(id != NULL);
    if (id != NULL) {
        PGconn *db = PQconnectdb(db_url);
        const char *v[1] = {id};
        PGresult *res = PQexecParams(db, "SELECT project_id FROM reports WHERE id = $1", 1, NULL,
                                     v, NULL, NULL, 0);
        CHECK(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
              atoll(PQgetvalue(res, 0, 0)) == test_project_id);
        PQclear(res);
        PQfinish(db);
    }
    resp_free(&r);
    /* a wrong key is 401; a DSN key does not open other routes */
    r = sink_post("/api/v1/reports?sentry_key=ffffffffffffffffffffffffffffffff", json);
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    r = http_req(port, "GET", "/api/v1/issues?sentry_key=" TEST_DSN_KEY, NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    free(json);
    free(r1);
    free(f1);
}

/* A KSCrash report naming itself `id`, with one frame. */
static char *ks_report(const char *id, unsigned addr)
{
    return xsprintf("{\"report\":{\"id\":\"%s\",\"process_name\":\"App\",\"type\":\"standard\"},"
                    "\"binary_images\":[{\"image_addr\":4294967296,\"image_size\":65536,"
                    "\"name\":\"/private/var/containers/Bundle/Application/X/App.app/App\","
                    "\"uuid\":\"4C4C4463-5555-3144-A17A-B29B2F88553E\",\"cpu_type\":16777228,"
                    "\"cpu_subtype\":0}],\"crash\":{\"error\":{\"type\":\"signal\",\"signal\":"
                    "{\"name\":\"SIGSEGV\"}},\"threads\":[{\"index\":0,\"crashed\":true,\"backtrace\":"
                    "{\"contents\":[{\"instruction_addr\":%llu}]}}]}}", id, 4294967296ull + addr);
}

static long long sql_count(const char *sql)
{
    PGconn *db = PQconnectdb(db_url);
    PGresult *res = PQexec(db, sql);
    long long n = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1
                      ? atoll(PQgetvalue(res, 0, 0)) : -1;
    PQclear(res);
    PQfinish(db);
    return n;
}

/* The id of report i of a sink answer, "" if none. */
static const char *sink_id(const http_resp *r, size_t i)
{
    json_t *e = r->json ? json_array_get(json_object_get(r->json, "reports"), i) : NULL;
    const char *id = e ? jstr(e, "id") : NULL;
    return id ? id : "";
}

/* The sink sends a batch again until it gets a 2xx (an answer lost on the way): the reports
 * stored the first time are not stored again, and the answer names the same ids. A report's
 * id is made of its own (report.id, a UUID or not) and its project; a repeat inside one batch
 * is stored once. */
static void kscrash_sink_batch_sent_again_is_stored_once(void)
{
    char *a = ks_report("2D0F8C44-7E51-4C8B-9E5A-0A1B2C3D4E5F", 0x1000);
    char *b = ks_report("in-house-crash-42", 0x2000);
    char *c = ks_report("9A3E1D77-0C2B-4F61-8D44-112233445566", 0x3000);
    char *json = xsprintf("[%s,%s,%s]", a, b, a);
    char *path = xsprintf("/api/v1/reports?token=%s", tok_ingest);
    long long before = sql_count("SELECT count(*) FROM reports");
    http_resp r1 = sink_post(path, json);
    CHECK_EQ_INT(r1.status, 202);
    CHECK_EQ_INT(r1.json ? json_integer_value(json_object_get(r1.json, "accepted")) : -1, 3);
    CHECK(strlen(sink_id(&r1, 0)) == 36 && strlen(sink_id(&r1, 1)) == 36);
    CHECK_EQ_STR(sink_id(&r1, 2), sink_id(&r1, 0));
    CHECK(strcmp(sink_id(&r1, 0), sink_id(&r1, 1)) != 0);
    CHECK_EQ_INT(sql_count("SELECT count(*) FROM reports"), before + 2);
    /* the same batch again: the same ids, nothing stored */
    http_resp r2 = sink_post(path, json);
    CHECK_EQ_INT(r2.status, 202);
    CHECK_EQ_INT(r2.json ? json_integer_value(json_object_get(r2.json, "accepted")) : -1, 3);
    for (size_t i = 0; i < 3; i++)
        CHECK_EQ_STR(sink_id(&r2, i), sink_id(&r1, i));
    json_t *e0 = r2.json ? json_array_get(json_object_get(r2.json, "reports"), 0) : NULL;
    CHECK_EQ_STR(e0 ? jstr(e0, "format") : NULL, "kscrash");
    CHECK(e0 && jstr(e0, "status") != NULL);
    CHECK_EQ_INT(sql_count("SELECT count(*) FROM reports"), before + 2);
    /* a later batch with one of them and a new one: only the new one is stored */
    char *json3 = xsprintf("[%s,%s]", c, b);
    http_resp r3 = sink_post(path, json3);
    CHECK_EQ_INT(r3.status, 202);
    CHECK_EQ_STR(sink_id(&r3, 1), sink_id(&r1, 1));
    CHECK(strlen(sink_id(&r3, 0)) == 36 && strcmp(sink_id(&r3, 0), sink_id(&r1, 0)) != 0);
    CHECK_EQ_INT(sql_count("SELECT count(*) FROM reports"), before + 3);
    /* the same report in another project is another report */
    http_resp r4 = sink_post("/api/v1/reports?sentry_key=" TEST_DSN_KEY, json);
    CHECK_EQ_INT(r4.status, 202);
    CHECK(strlen(sink_id(&r4, 0)) == 36 && strcmp(sink_id(&r4, 0), sink_id(&r1, 0)) != 0);
    CHECK_EQ_INT(sql_count("SELECT count(*) FROM reports"), before + 5);
    resp_free(&r1), resp_free(&r2), resp_free(&r3), resp_free(&r4);
    free(json3), free(path), free(json), free(a), free(b), free(c);
}

/* ---- Bugsnag ----------------------------------------------------------------------------- */

/* POST path with Bugsnag-Api-Key `key` (NULL: none) and `extra` headers. */
static http_resp bugsnag_post(const char *path, const char *key, const char *extra, const char *body,
                              size_t len)
{
    char *h = xsprintf("Content-Type: application/json\r\n%s%s%s%s", key ? "Bugsnag-Api-Key: " : "",
                       key ? key : "", key ? "\r\n" : "", extra ? extra : "");
    http_resp r = http_req(port, "POST", path, h, body, len, false);
    free(h);
    return r;
}

static void bugsnag_notify_stores_each_event_in_the_key_project(void)
{
    char *f = corpus("other/bugsnag-event-1.json");
    size_t elen = 0;
    char *ev = read_file(f, &elen);
    /* the payload as BSGEventUploadOperation wraps the event, here with the event twice */
    char *payload = xsprintf("{\"apiKey\":\"%s\",\"notifier\":{\"name\":\"iOS Bugsnag Notifier\","
                             "\"version\":\"6.28.0\"},\"payloadVersion\":\"4.0\",\"events\":[%s,%s]}",
                             TEST_DSN_KEY, ev ? ev : "{}", ev ? ev : "{}");
    const char *hdr = "Bugsnag-Payload-Version: 4.0\r\nBugsnag-Sent-At: 2021-01-19T11:16:26.000Z\r\n";
    http_resp r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, hdr, payload, strlen(payload));
    CHECK_EQ_INT(r.status, 202);
    CHECK_EQ_STR(r.json ? jstr(r.json, "format") : NULL, "bugsnag");
    json_t *reps = r.json ? json_object_get(r.json, "reports") : NULL;
    CHECK_EQ_INT(json_array_size(reps), 2);
    const char *id = r.json ? jstr(r.json, "id") : NULL;
    if (id != NULL) {
        PGconn *db = PQconnectdb(db_url);
        const char *v[1] = {id};
        PGresult *res = PQexecParams(db, "SELECT project_id, format, app FROM reports WHERE id = $1",
                                     1, NULL, v, NULL, NULL, 0);
        CHECK(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1);
        if (PQntuples(res) == 1) {
            CHECK_EQ_INT(atoll(PQgetvalue(res, 0, 0)), test_project_id);
            CHECK_EQ_STR(PQgetvalue(res, 0, 1), "bugsnag");
            CHECK_EQ_STR(PQgetvalue(res, 0, 2), "Bugsnag Test App");
        }
        PQclear(res);
        PQfinish(db);
    }
    resp_free(&r);
    /* no header: the payload's apiKey */
    r = bugsnag_post("/bugsnag/notify", NULL, NULL, payload, strlen(payload));
    CHECK_EQ_INT(r.status, 202);
    resp_free(&r);
    /* refusals: no key, a wrong key, another payload version, not a Bugsnag payload, a bad field */
    r = bugsnag_post("/bugsnag/notify", NULL, NULL, ev ? ev : "{}", elen);
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    r = bugsnag_post("/bugsnag/notify", "ffffffffffffffffffffffffffffffff", NULL, payload, strlen(payload));
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, "Bugsnag-Payload-Version: 3.0\r\n", payload,
                     strlen(payload));
    CHECK_EQ_INT(r.status, 422);
    resp_free(&r);
    char *ks = corpus("kscrash-json/kscrash-example-3.json");
    size_t klen = 0;
    char *kd = read_file(ks, &klen);
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, NULL, kd ? kd : "", klen);
    CHECK_EQ_INT(r.status, 400);
    CHECK(r.body && strstr(r.body, "takes bugsnag reports; this is a kscrash report") != NULL);
    resp_free(&r);
    const char *bad = "{\"events\":[{\"exceptions\":[{\"stacktrace\":[{\"frameAddress\":7.5}]}]}]}";
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, NULL, bad, strlen(bad));
    CHECK_EQ_INT(r.status, 400);
    CHECK(r.body && strstr(r.body, "events[0].exceptions[0].stacktrace[0].frameAddress") != NULL);
    resp_free(&r);
    free(kd), free(ks), free(payload), free(ev), free(f);
}

static long long metric_value(const char *name)
{
    char *h = auth(tok_read, NULL);
    http_resp r = http_req(port, "GET", "/metrics", h, NULL, 0, false);
    free(h);
    long long v = -1;
    char *want = xsprintf("\n%s ", name);
    const char *p = r.body ? strstr(r.body, want) : NULL;
    if (p)
        v = atoll(p + strlen(want));
    free(want);
    resp_free(&r);
    return v;
}

static void bugsnag_sessions_are_counted(void)
{
    long long before = metric_value("stacksift_bugsnag_sessions_total");
    char now[32];
    time_t t = time(NULL) - 60;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%S.259Z", gmtime(&t));
    /* as BSGSessionUploader sends one */
    char *one = xsprintf("{\"app\":{\"version\":\"1.0\",\"releaseStage\":\"production\"},\"device\":"
                         "{\"id\":\"dev-1\",\"osName\":\"iOS\"},\"notifier\":{\"name\":\"iOS Bugsnag Notifier\"},"
                         "\"sessions\":[{\"id\":\"5C5C6908-726F-4CCE-A081-23BDA1157911\","
                         "\"startedAt\":\"%s\",\"user\":{}}]}", now);
    http_resp r = bugsnag_post("/bugsnag/sessions", TEST_DSN_KEY, "Bugsnag-Payload-Version: 1.0\r\n",
                               one, strlen(one));
    CHECK_EQ_INT(r.status, 202);
    resp_free(&r);
    char *counts = xsprintf("{\"app\":{\"version\":\"1.0\"},\"sessionCounts\":[{\"startedAt\":"
                            "\"%.19sZ\",\"sessionsStarted\":4}]}", now);
    r = bugsnag_post("/bugsnag/sessions", TEST_DSN_KEY, NULL, counts, strlen(counts));
    CHECK_EQ_INT(r.status, 202);
    resp_free(&r);
    CHECK_EQ_INT(metric_value("stacksift_bugsnag_sessions_total"), before + 5);
    const char *bad = "{\"app\":{\"version\":\"1.0\"},\"sessions\":[{\"id\":\"x\",\"startedAt\":\"yesterday\"}]}";
    r = bugsnag_post("/bugsnag/sessions", TEST_DSN_KEY, NULL, bad, strlen(bad));
    CHECK_EQ_INT(r.status, 400);
    CHECK(r.body && strstr(r.body, "sessions[0].startedAt") != NULL);
    resp_free(&r);
    r = bugsnag_post("/bugsnag/sessions", NULL, NULL, one, strlen(one));
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    CHECK_EQ_INT(metric_value("stacksift_bugsnag_sessions_total"), before + 5);
    /* counted as release health: 5 sessions of release 1.0 in the key's project */
    PGconn *db = PQconnectdb(db_url);
    char *sql = xsprintf("SELECT coalesce(sum(h.sessions), 0) FROM session_hours h JOIN release_envs e "
                         "ON e.id = h.renv WHERE e.project_id = %lld AND e.release = '1.0'",
                         test_project_id);
    PGresult *res = PQexec(db, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(db));
    CHECK(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && atoll(PQgetvalue(res, 0, 0)) == 5);
    PQclear(res);
    PQfinish(db);
    free(sql);
    free(one);
    free(counts);
}

/* "Bugsnag-Integrity: sha1 <hex>\r\n" for `len` bytes at body, the hex in upper case with
 * `upper`, one digit changed with `wrong`. */
static char *integrity_header(const char *body, size_t len, bool upper, bool wrong)
{
    uint8_t md[20];
    unsigned n = sizeof md;
    EVP_Digest(body, len, md, &n, EVP_sha1(), NULL);
    char hex[41];
    for (int i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, upper ? "%02X" : "%02x", md[i]);
    if (wrong)
        hex[7] = hex[7] == '0' ? '1' : '0';
    return xsprintf("Bugsnag-Integrity: sha1 %s\r\n", hex);
}

/* Bugsnag-Integrity (the SHA-1 of the body as sent, on events and sessions): a match is taken
 * (either case), a body that changed on its way is 400 naming both digests, and so is a
 * malformed header; nothing of a refused payload is stored. */
static void bugsnag_integrity_is_checked(void)
{
    char *f = corpus("other/bugsnag-event-1.json");
    size_t elen = 0;
    char *ev = read_file(f, &elen);
    char *sql = xsprintf("SELECT count(*) FROM reports WHERE project_id = %lld", test_project_id);
    long long before = sql_count(sql);
    char *h = integrity_header(ev ? ev : "", elen, false, false);
    http_resp r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, h, ev ? ev : "", elen);
    CHECK_EQ_INT(r.status, 202);
    resp_free(&r);
    free(h);
    h = integrity_header(ev ? ev : "", elen, true, false);
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, h, ev ? ev : "", elen);
    CHECK_EQ_INT(r.status, 202);
    resp_free(&r);
    CHECK_EQ_INT(sql_count(sql), before + 2);
    /* the body changed on its way: one byte more than was digested */
    char *changed = xsprintf("%s ", ev ? ev : "");
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, h, changed, elen + 1);
    CHECK_EQ_INT(r.status, 400);
    CHECK_EQ_STR(err_code_of(&r), "invalid_input");
    CHECK(r.body && strstr(r.body, "Bugsnag-Integrity: the body's SHA-1 is ") != NULL);
    resp_free(&r);
    free(h);
    h = integrity_header(ev ? ev : "", elen, false, true);
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, h, ev ? ev : "", elen);
    CHECK_EQ_INT(r.status, 400);
    resp_free(&r);
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, "Bugsnag-Integrity: sha1 abc\r\n", ev ? ev : "",
                     elen);
    CHECK_EQ_INT(r.status, 400);
    CHECK(r.body && strstr(r.body, "40 hex digits") != NULL);
    resp_free(&r);
    r = bugsnag_post("/bugsnag/notify", TEST_DSN_KEY, "Bugsnag-Integrity: md5 0123\r\n", ev ? ev : "",
                     elen);
    CHECK_EQ_INT(r.status, 400);
    resp_free(&r);
    CHECK_EQ_INT(sql_count(sql), before + 2);
    /* sessions too */
    const char *sess = "{\"app\":{\"version\":\"7.7\"},\"sessionCounts\":[{\"startedAt\":"
                       "\"2024-06-01T12:00:00Z\",\"sessionsStarted\":2}]}";
    free(h);
    h = integrity_header(sess, strlen(sess), false, true);
    r = bugsnag_post("/bugsnag/sessions", TEST_DSN_KEY, h, sess, strlen(sess));
    CHECK_EQ_INT(r.status, 400);
    resp_free(&r);
    free(h);
    h = integrity_header(sess, strlen(sess), false, false);
    r = bugsnag_post("/bugsnag/sessions", TEST_DSN_KEY, h, sess, strlen(sess));
    CHECK_EQ_INT(r.status, 202);
    resp_free(&r);
    free(h), free(changed), free(sql), free(ev), free(f);
}

/* A multipart dSYM upload the way bugsnag-cli (POST /dsym) and bugsnag-dsym-upload (POST /,
 * curl -F) send it: apiKey, overwrite and the file field "dsym". */
static http_resp bugsnag_dsym_post(const char *path, const char *key, const char *overwrite,
                                   const char *file)
{
    size_t len = 0;
    char *data = read_file(file, &len);
    const char *boundary = "c3bc5fa7e1b1a3a59aa7aa9b3c8b0d2f";
    char *pre = xsprintf("%s%s%s%s%s%s--%s\r\nContent-Disposition: form-data; name=\"dsym\"; "
                         "filename=\"FixtureD5\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                         key ? "--" : "", key ? boundary : "",
                         key ? "\r\nContent-Disposition: form-data; name=\"apiKey\"\r\n\r\n" : "",
                         key ? key : "", key ? "\r\n" : "",
                         overwrite ? "" : "", boundary);
    char *ow = overwrite ? xsprintf("\r\n--%s\r\nContent-Disposition: form-data; name=\"overwrite\""
                                    "\r\n\r\n%s", boundary, overwrite)
                         : xsprintf("%s", "");
    char *post = xsprintf("%s\r\n--%s--\r\n", ow, boundary);
    size_t total = strlen(pre) + len + strlen(post);
    char *body = malloc(total);
    memcpy(body, pre, strlen(pre));
    memcpy(body + strlen(pre), data ? data : "", len);
    memcpy(body + strlen(pre) + len, post, strlen(post));
    char *ct = xsprintf("Content-Type: multipart/form-data; boundary=%s\r\n", boundary);
    http_resp r = http_req(port, "POST", path, ct, body, total, false);
    free(ct), free(body), free(post), free(ow), free(pre), free(data);
    return r;
}

static void bugsnag_dsym_upload_and_duplicate(void)
{
    /* the DWARF 5 app's DWARF file: not uploaded by the tests before this one */
    char *dwarf = fixture("dwarf5/FixtureD5.app.dSYM/Contents/Resources/DWARF/FixtureD5");
    http_resp r = bugsnag_dsym_post("/bugsnag/dsym", TEST_DSN_KEY, NULL, dwarf);
    CHECK(r.status == 201 || r.status == 200);
    CHECK(r.json && json_array_size(json_object_get(r.json, "files")) >= 1);
    resp_free(&r);
    /* again: a duplicate, 409 as bugsnag-cli expects; with overwrite=true, 200 */
    r = bugsnag_dsym_post("/bugsnag/dsym", TEST_DSN_KEY, NULL, dwarf);
    CHECK_EQ_INT(r.status, 409);
    CHECK_EQ_STR(err_code_of(&r), "conflict");
    resp_free(&r);
    r = bugsnag_dsym_post("/", TEST_DSN_KEY, "true", dwarf);
    CHECK_EQ_INT(r.status, 200);
    resp_free(&r);
    r = bugsnag_dsym_post("/", TEST_DSN_KEY, NULL, dwarf);
    CHECK_EQ_INT(r.status, 409);
    resp_free(&r);
    /* no key, a wrong key */
    r = bugsnag_dsym_post("/bugsnag/dsym", NULL, NULL, dwarf);
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    r = bugsnag_dsym_post("/bugsnag/dsym", "ffffffffffffffffffffffffffffffff", NULL, dwarf);
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    /* GET / is still the dashboard */
    r = http_req(port, "GET", "/", NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 200);
    resp_free(&r);
    free(dwarf);
}

/* The server process's bytes written so far (write(2) and the like: /proc/PID/io wchar). */
static long long server_wchar(void)
{
    char *path = xsprintf("/proc/%d/io", (int)server_pid);
    FILE *f = fopen(path, "r"); /* a /proc file has no size: read as a stream */
    char line[128];
    long long n = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "wchar: ", 7) == 0)
            n = atoll(line + 7);
    if (f != NULL)
        fclose(f);
    free(path);
    return n;
}

/* A dSYM upload whose apiKey field comes before the file (as bugsnag-cli and curl -F send it)
 * and is not accepted: 401, and nothing of the file written to disk (a right key: it is). */
static void bugsnag_dsym_wrong_key_first_spools_nothing(void)
{
    char *dir = xsprintf("%s/bugsnag-big", data_dir);
    mkdir(dir, 0700);
    char *big = xsprintf("%s/App", dir);
    FILE *fp = fopen(big, "wb");
    static char zeros[65536];
    for (int i = 0; fp != NULL && i < 64; i++) /* 4 MiB */
        fwrite(zeros, 1, sizeof zeros, fp);
    if (fp != NULL)
        fclose(fp);
    long long w0 = server_wchar();
    http_resp r = bugsnag_dsym_post("/bugsnag/dsym", "ffffffffffffffffffffffffffffffff", NULL, big);
    CHECK_EQ_INT(r.status, 401);
    resp_free(&r);
    long long w1 = server_wchar();
    if (!(w0 >= 0 && w1 - w0 < 1024 * 1024))
        fprintf(stderr, "wrong key: the server wrote %lld bytes\n", w1 - w0);
    CHECK(w0 >= 0 && w1 - w0 < 1024 * 1024);
    /* the right key: the file is spooled (and then refused: zeros are no Mach-O) */
    r = bugsnag_dsym_post("/bugsnag/dsym", TEST_DSN_KEY, NULL, big);
    CHECK(r.status >= 400 && r.status < 500 && r.status != 401);
    resp_free(&r);
    long long w2 = server_wchar();
    if (w2 - w1 < 4 * 1024 * 1024)
        fprintf(stderr, "right key: the server wrote %lld bytes\n", w2 - w1);
    CHECK(w2 - w1 >= 4 * 1024 * 1024);
    unlink(big);
    rmdir(dir);
    free(big), free(dir);
}

static void report_limits_are_413(void)
{
    /* STACKSIFT_MAX_REPORT_BYTES is 1M for this server. */
    size_t big = (1u << 20) + 1;
    char *body = malloc(big);
    memset(body, 'A', big);
    char *h = auth(tok_ingest, "Content-Type: text/plain\r\n");
    http_resp r = http_req(port, "POST", "/api/v1/reports", h, body, big, true);
    CHECK_EQ_INT(r.status, 413);
    CHECK_EQ_STR(err_code_of(&r), "too_large");
    resp_free(&r);
    free(h);

    /* A gzip bomb: 16 MiB of zeros in a few KiB stops at the limit. */
    size_t raw_len = 16u << 20;
    char *zeros = calloc(1, raw_len);
    uLong cap = compressBound(raw_len) + 64;
    unsigned char *gz = malloc(cap);
    z_stream zs = {0};
    deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
    zs.next_in = (Bytef *)zeros;
    zs.avail_in = (uInt)raw_len;
    zs.next_out = gz;
    zs.avail_out = (uInt)cap;
    deflate(&zs, Z_FINISH);
    size_t gz_len = zs.total_out;
    deflateEnd(&zs);
    CHECK(gz_len < 64 * 1024);
    h = auth(tok_ingest, "Content-Type: text/plain\r\nContent-Encoding: gzip\r\n");
    CHECK_STATUS(http_req(port, "POST", "/api/v1/reports", h, gz, gz_len, false), 413);
    free(h);
    free(gz);
    free(zeros);
    free(body);
}

/* UUID of fixture `name`'s `arch` slice, from STACKSIFT_FIXTURES/manifest.json (UUIDs change
 * with the fixture sources, so none is written here). Static storage; "" if not found. */
static const char *fixture_uuid(const char *name, const char *arch)
{
    static char out[4][37];
    static int next;
    char *path = xsprintf("%s/manifest.json", e2e.fixtures);
    json_t *m = json_load_file(path, 0, NULL);
    char *slot = out[next++ % 4];
    slot[0] = '\0';
    json_t *list = json_object_get(m, "fixtures");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *f = json_array_get(list, i);
        if (!jstr(f, "name") || strcmp(jstr(f, "name"), name) != 0)
            continue;
        json_t *slices = json_object_get(f, "slices");
        for (size_t j = 0; j < json_array_size(slices); j++) {
            json_t *sl = json_array_get(slices, j);
            if (jstr(sl, "arch") && strcmp(jstr(sl, "arch"), arch) == 0 && jstr(sl, "uuid"))
                snprintf(slot, 37, "%s", jstr(sl, "uuid"));
        }
    }
    json_decref(m);
    free(path);
    return slot;
}

static json_t *files_of(const http_resp *r)
{
    return r->json ? json_object_get(r->json, "files") : NULL;
}

/* SHA-256 (hex) of the symcache stored in Postgres for `uuid`, computed by Postgres over its
 * chunks, if it equals the row's symcache_blob and sha256; "" otherwise. Caller frees. */
static char *stored_symcache_sha(const char *uuid)
{
    PGconn *db = PQconnectdb(db_url);
    const char *v[1] = {uuid};
    PGresult *r = PQexecParams(db,
                               "SELECT encode(sha256(string_agg(c.data, ''::bytea ORDER BY c.seq)), "
                               "'hex') FROM dsyms d JOIN blob_chunks c ON c.sha256 = d.symcache_blob "
                               "WHERE d.uuid = $1::uuid AND d.symcache_blob = d.sha256 "
                               "GROUP BY d.symcache_blob HAVING encode(sha256(string_agg(c.data, "
                               "''::bytea ORDER BY c.seq)), 'hex') = d.symcache_blob",
                               1, NULL, v, NULL, NULL, 0);
    char *out = strdup(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                           ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    PQfinish(db);
    return out;
}

static void dsym_zip_upload_and_reupload(void)
{
    char *zip = fixture("FixtureApp-dSYMs.zip");
    http_resp r = post_file("/api/v1/dsyms", tok_upload, "Content-Type: application/zip\r\n", zip);
    CHECK_EQ_INT(r.status, 201);
    json_t *files = files_of(&r);
    CHECK_EQ_INT(json_array_size(files), 2);
    int app = 0, kit = 0;
    for (size_t i = 0; i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        CHECK_EQ_STR(jstr(f, "status"), "created");
        CHECK_EQ_STR(jstr(f, "arch"), "arm64");
        if (jstr(f, "name") && strcmp(jstr(f, "name"), "FixtureApp") == 0) {
            app++;
            CHECK_EQ_STR(jstr(f, "uuid"), fixture_uuid("arm64-O2", "arm64"));
        }
        if (jstr(f, "name") && strcmp(jstr(f, "name"), "FixtureKit") == 0)
            kit++;
        CHECK(json_integer_value(json_object_get(f, "functions")) > 0);
        CHECK(jstr(f, "sha256") && strlen(jstr(f, "sha256")) == 64);
    }
    CHECK_EQ_INT(app, 1);
    CHECK_EQ_INT(kit, 1);
    resp_free(&r);

    /* The symcache is in Postgres, and its chunks hash to the row's SHA-256. */
    char *sha = stored_symcache_sha(fixture_uuid("arm64-O2", "arm64"));
    CHECK(strlen(sha) == 64);
    /* The uploading node also keeps it in its cache, named by that hash. */
    char *symc = xsprintf("%s/symcaches/%s.symc", data_dir, sha);
    struct stat st;
    CHECK(stat(symc, &st) == 0 && st.st_size > 0);
    free(symc);
    free(sha);

    /* Again, as multipart: the same records come back as "exists". */
    r = post_file("/api/v1/dsyms", tok_upload, NULL, zip);   /* raw without content type */
    CHECK_EQ_INT(r.status, 200);
    files = files_of(&r);
    CHECK_EQ_INT(json_array_size(files), 2);
    for (size_t i = 0; i < json_array_size(files); i++)
        CHECK_EQ_STR(jstr(json_array_get(files, i), "status"), "exists");
    resp_free(&r);
    free(zip);
}

static void dsym_raw_macho_upload(void)
{
    /* The app binary first: a symbol table, no DWARF. */
    char *binary = fixture("arm64-O0/FixtureApp.app/FixtureApp");
    http_resp r = post_file("/api/v1/dsyms", tok_upload, NULL, binary);
    CHECK_EQ_INT(r.status, 201);
    json_t *f = json_array_get(files_of(&r), 0);
    CHECK_EQ_STR(f ? jstr(f, "uuid") : NULL, fixture_uuid("arm64-O0", "arm64"));
    CHECK_EQ_STR(f ? jstr(f, "status") : NULL, "created");
    CHECK(f && json_is_false(json_object_get(f, "has_dwarf")));
    resp_free(&r);
    free(binary);

    /* Then its dSYM: DWARF replaces the symbol-table record and symcache. */
    char *dwarf = fixture("arm64-O0/FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp");
    r = post_file("/api/v1/dsyms?name=FixtureApp", tok_upload,
                  "Content-Type: application/octet-stream\r\n", dwarf);
    CHECK_EQ_INT(r.status, 201);
    f = json_array_get(files_of(&r), 0);
    CHECK_EQ_STR(f ? jstr(f, "uuid") : NULL, fixture_uuid("arm64-O0", "arm64"));
    CHECK_EQ_STR(f ? jstr(f, "name") : NULL, "FixtureApp");
    CHECK_EQ_STR(f ? jstr(f, "status") : NULL, "updated");
    CHECK(f && json_is_true(json_object_get(f, "has_dwarf")));
    char *sha = stored_symcache_sha(fixture_uuid("arm64-O0", "arm64"));
    CHECK_EQ_STR(sha, f ? jstr(f, "sha256") : NULL);
    free(sha);
    resp_free(&r);

    /* And again: nothing changes. */
    r = post_file("/api/v1/dsyms", tok_upload, NULL, dwarf);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_STR(jstr(json_array_get(files_of(&r), 0), "status"), "exists");
    resp_free(&r);
    free(dwarf);

    /* A fat file: its arm64 slice is known (from the zip), its x86_64 slice is new. */
    char *fat = fixture("fat/FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp");
    r = post_file("/api/v1/dsyms", tok_upload, NULL, fat);
    CHECK_EQ_INT(r.status, 201);
    CHECK_EQ_INT(json_array_size(files_of(&r)), 2);
    int created = 0, exists = 0;
    for (size_t i = 0; i < json_array_size(files_of(&r)); i++) {
        const char *st = jstr(json_array_get(files_of(&r), i), "status");
        created += st && strcmp(st, "created") == 0;
        exists += st && strcmp(st, "exists") == 0;
    }
    CHECK_EQ_INT(created, 1);
    CHECK_EQ_INT(exists, 1);
    resp_free(&r);
    free(fat);
}

static void dsym_multipart_upload(void)
{
    char *zip = fixture("FixtureApp-dSYMs.zip");
    size_t len;
    char *data = read_file(zip, &len);
    const char *boundary = "----stacksift-test-boundary";
    char *pre = xsprintf("--%s\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nbuild 12\r\n"
                         "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
                         "filename=\"App.dSYM.zip\"\r\nContent-Type: application/zip\r\n\r\n",
                         boundary, boundary);
    char *post = xsprintf("\r\n--%s--\r\n", boundary);
    size_t total = strlen(pre) + len + strlen(post);
    char *body = malloc(total);
    memcpy(body, pre, strlen(pre));
    memcpy(body + strlen(pre), data, len);
    memcpy(body + strlen(pre) + len, post, strlen(post));
    char *ct = xsprintf("Content-Type: multipart/form-data; boundary=%s\r\n", boundary);
    char *h = auth(tok_upload, ct);
    http_resp r = http_req(port, "POST", "/api/v1/dsyms", h, body, total, false);
    CHECK_EQ_INT(r.status, 200);   /* both known from the zip upload */
    CHECK_EQ_INT(json_array_size(files_of(&r)), 2);
    resp_free(&r);

    /* Multipart without a file part. */
    char *nofile = xsprintf("--%s\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nx\r\n--%s--\r\n",
                            boundary, boundary);
    r = http_req(port, "POST", "/api/v1/dsyms", h, nofile, strlen(nofile), false);
    CHECK_EQ_INT(r.status, 400);
    CHECK_EQ_STR(err_code_of(&r), "invalid_input");
    resp_free(&r);
    free(nofile);
    free(h);
    free(ct);
    free(body);
    free(post);
    free(pre);
    free(data);
    free(zip);
}

static void dsym_queries(void)
{
    char *h = auth(tok_read, NULL);
    http_resp r = http_req(port, "GET", "/api/v1/dsyms", h, NULL, 0, false);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_INT(json_array_size(r.json ? json_object_get(r.json, "dsyms") : NULL), 4);
    resp_free(&r);
    r = http_req(port, "GET", "/api/v1/dsyms?name=FixtureKit", h, NULL, 0, false);
    CHECK_EQ_INT(json_array_size(r.json ? json_object_get(r.json, "dsyms") : NULL), 1);
    resp_free(&r);
    r = http_req(port, "GET", "/api/v1/dsyms?uuid=4c4c4435-nope", h, NULL, 0, false);
    CHECK_EQ_INT(r.status, 400);   /* not a UUID */
    resp_free(&r);
    char *lower = strdup(fixture_uuid("arm64-O0", "arm64"));
    for (char *p = lower; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    char *q = xsprintf("/api/v1/dsyms?uuid=%s", lower);
    r = http_req(port, "GET", q, h, NULL, 0, false);
    free(q);
    free(lower);
    json_t *list = r.json ? json_object_get(r.json, "dsyms") : NULL;
    CHECK_EQ_INT(json_array_size(list), 1);
    resp_free(&r);
    char *kit = xsprintf("/api/v1/dsyms/%s", fixture_uuid("kit", "arm64"));
    r = http_req(port, "GET", kit, h, NULL, 0, false);
    free(kit);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_STR(r.json ? jstr(r.json, "name") : NULL, "FixtureKit");
    resp_free(&r);
    CHECK_STATUS(http_req(port, "GET", "/api/v1/dsyms/00000000-0000-3144-A1D2-DE5BFD55F8D2", h, NULL, 0, false), 404);
    CHECK_STATUS(http_req(port, "GET", "/api/v1/dsyms/zzz", h, NULL, 0, false), 404);
    free(h);
}

static int dsym_count(void)
{
    char *h = auth(tok_read, NULL);
    http_resp r = http_req(port, "GET", "/api/v1/dsyms?limit=1000", h, NULL, 0, false);
    int n = r.json ? (int)json_array_size(json_object_get(r.json, "dsyms")) : -1;
    resp_free(&r);
    free(h);
    return n;
}

static void malformed_uploads_leave_nothing(void)
{
    int before = dsym_count();
    char *symcaches = xsprintf("%s/symcaches", data_dir), *tmp = xsprintf("%s/tmp", data_dir);
    int files_before = count_entries(symcaches);

    /* Not Mach-O, empty, truncated Mach-O, a zip with a path-traversal entry, a zip of text. */
    char *dwarf = fixture("x86_64-O2/FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp");
    size_t dlen;
    char *d = read_file(dwarf, &dlen);
    char *bad_zip = xsprintf("%s/evil.zip", tmp_root), *text_zip = xsprintf("%s/text.zip", tmp_root);
    char *script = xsprintf(
        "import zipfile, sys\n"
        "z = zipfile.ZipFile(sys.argv[1], 'w')\n"
        "z.writestr('../../evil.dSYM/Contents/Resources/DWARF/evil', open(sys.argv[3], 'rb').read())\n"
        "z.close()\n"
        "z = zipfile.ZipFile(sys.argv[2], 'w')\n"
        "z.writestr('App.dSYM/Contents/Resources/DWARF/App', 'not a mach-o' * 100)\n"
        "z.close()\n");
    char *argv[] = {"/usr/bin/env", "python3", "-c", script, bad_zip, text_zip, dwarf, NULL};
    run_result pr = run(argv, NULL, 30);
    CHECK_EQ_INT(pr.status, 0);
    run_free(&pr);

    char *h = auth(tok_upload, NULL);
    http_resp r = http_req(port, "POST", "/api/v1/dsyms", h, "hello world, not a debug file", 29, false);
    CHECK_EQ_INT(r.status, 400);
    resp_free(&r);
    CHECK_STATUS(http_req(port, "POST", "/api/v1/dsyms", h, "", 0, false), 400);
    r = http_req(port, "POST", "/api/v1/dsyms", h, d, dlen / 3, false);
    CHECK(r.status >= 400 && r.status < 500);
    resp_free(&r);
    r = post_file("/api/v1/dsyms", tok_upload, NULL, bad_zip);
    CHECK(r.status >= 400 && r.status < 500);
    resp_free(&r);
    r = post_file("/api/v1/dsyms", tok_upload, NULL, text_zip);
    CHECK(r.status >= 400 && r.status < 500);
    resp_free(&r);

    /* Over STACKSIFT_MAX_UPLOAD_BYTES (8M here): refused before the body is sent. */
    size_t big = (8u << 20) + 1;
    char *body = calloc(1, big);
    CHECK_STATUS(http_req(port, "POST", "/api/v1/dsyms", h, body, big, true), 413);
    free(body);

    CHECK_EQ_INT(dsym_count(), before);
    CHECK_EQ_INT(count_entries(symcaches), files_before);
    /* scratch dirs go when the request completes, just after the answer */
    for (double end = now_s() + 5; count_scratch(tmp) != 0 && now_s() < end;)
        sleep_ms(20);
    CHECK_EQ_INT(count_scratch(tmp), 0);
    struct stat st;
    char *escaped = xsprintf("%s/../evil.dSYM", data_dir);
    CHECK(stat(escaped, &st) != 0);
    free(escaped);
    free(h);
    free(script);
    free(bad_zip);
    free(text_zip);
    free(d);
    free(dwarf);
    free(symcaches);
    free(tmp);
}

/* A dSYM is never refused for what one unit holds: a real Apple LLVM 8 dSYM (read from
 * ../shared/real-dsyms) with an empty compile unit is stored, the skipped unit named in its
 * "warnings"; a fat file with one unreadable slice stores the other, the left-out slice named
 * in the answer's "warnings"; /metrics counts both. */
static void dsym_bad_parts_are_skipped_and_reported(void)
{
    char *real = xsprintf("%s/../shared/real-dsyms/crashprobe-2017-debug/arm64-CrashLibiOS.framework.dSYM/"
                          "Contents/Resources/DWARF/CrashLibiOS", e2e.source_dir);
    http_resp r = post_file("/api/v1/dsyms", tok_upload, NULL, real);
    CHECK_EQ_INT(r.status, 201);
    json_t *f = json_array_get(files_of(&r), 0);
    CHECK_EQ_STR(f ? jstr(f, "uuid") : NULL, "5DB9DD67-7626-3675-8C6A-606E8C7518F7");
    CHECK(f && json_is_true(json_object_get(f, "has_dwarf")));
    CHECK(f && json_integer_value(json_object_get(f, "functions")) > 1000);
    json_t *w = f ? json_object_get(f, "warnings") : NULL;
    CHECK(json_is_array(w) && json_array_size(w) == 1);
    const char *text = json_string_value(json_array_get(w, 0));
    CHECK(text && strstr(text, "skipped 1 DWARF unit") && strstr(text, "unit has no unit DIE"));
    CHECK(json_is_array(json_object_get(r.json, "warnings")) &&
          json_array_size(json_object_get(r.json, "warnings")) == 0);
    resp_free(&r);
    free(real);

    /* the fat fixture with its x86_64 slice's Mach-O magic zeroed */
    char *fat = fixture("fat/FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp");
    size_t len = 0;
    char *data = read_file(fat, &len);
    CHECK(data != NULL && len > 8);
    if (data == NULL)
        goto out;
    const uint8_t *u = (const uint8_t *)data;
    uint32_t nfat = (uint32_t)u[4] << 24 | (uint32_t)u[5] << 16 | (uint32_t)u[6] << 8 | u[7];
    int zeroed = 0;
    for (uint32_t i = 0; i < nfat && 8 + 20 * (i + 1) <= len; i++) {
        const uint8_t *e = u + 8 + 20 * i;
        uint32_t cpu = (uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 | (uint32_t)e[2] << 8 | e[3];
        uint32_t off = (uint32_t)e[8] << 24 | (uint32_t)e[9] << 16 | (uint32_t)e[10] << 8 | e[11];
        if (cpu == 0x01000007u && off + 4 <= len) {
            memset(data + off, 0, 4);
            zeroed++;
        }
    }
    CHECK_EQ_INT(zeroed, 1);
    char *bad = xsprintf("%s/fat-bad-slice", tmp_root);
    FILE *fp = fopen(bad, "wb");
    CHECK(fp != NULL);
    if (fp) {
        fwrite(data, 1, len, fp);
        fclose(fp);
    }
    r = post_file("/api/v1/dsyms", tok_upload, NULL, bad);
    CHECK_EQ_INT(r.status, 200); /* its arm64 slice is known already */
    CHECK_EQ_INT(json_array_size(files_of(&r)), 1);
    f = json_array_get(files_of(&r), 0);
    CHECK_EQ_STR(f ? jstr(f, "arch") : NULL, "arm64");
    w = json_object_get(r.json, "warnings");
    CHECK(json_is_array(w) && json_array_size(w) == 1);
    text = json_string_value(json_array_get(w, 0));
    CHECK(text && strstr(text, "slice x86_64 left out"));
    resp_free(&r);
    free(bad);

    char *auth = xsprintf("Authorization: Bearer %s\r\n", tok_read);
    r = http_req(port, "GET", "/metrics", auth, NULL, 0, false);
    free(auth);
    CHECK(r.body && strstr(r.body, "stacksift_dsym_parts_skipped_total{part=\"dwarf\"} 1\n"));
    CHECK(r.body && strstr(r.body, "stacksift_dsym_parts_skipped_total{part=\"slice\"} 1\n"));
    resp_free(&r);
out:
    free(data);
    free(fat);
}

static void metrics_count_requests(void)
{
    /* a read-scoped token: /metrics is not public unless STACKSIFT_METRICS_PUBLIC=1 */
    http_resp anon = http_req(port, "GET", "/metrics", NULL, NULL, 0, false);
    CHECK_EQ_INT(anon.status, 401);
    resp_free(&anon);
    char *auth = xsprintf("Authorization: Bearer %s\r\n", tok_read);
    http_resp r = http_req(port, "GET", "/metrics", auth, NULL, 0, false);
    free(auth);
    CHECK_EQ_INT(r.status, 200);
    CHECK(r.body && strstr(r.body, "stacksift_http_requests_total{route=\"reports_post\",status=\"202\"} 3"));
    CHECK(r.body && strstr(r.body, "stacksift_reports_accepted_total 3"));
    /* every 202 came out of a group commit */
    CHECK(r.body && strstr(r.body, "stacksift_intake_reports_total 3\n"));
    CHECK(r.body && strstr(r.body, "stacksift_intake_failures_total 0\n"));
    CHECK(r.body && strstr(r.body, "stacksift_dsyms_processed_total{status=\"created\"} 4"));
    CHECK(r.body && strstr(r.body, "stacksift_dsyms_processed_total{status=\"updated\"} 1"));
    CHECK(r.body && strstr(r.body, "stacksift_http_request_duration_seconds_bucket{route=\"dsyms_post\",le=\"+Inf\"}"));
    CHECK(r.body && strstr(r.body, "stacksift_db_pool_size 8"));   /* the default */
    CHECK(r.body && strstr(r.body, "stacksift_reports_queued 3"));
    resp_free(&r);
}

/* SIGTERM while a request is half sent: the request still completes, then the process exits 0. */
static void graceful_shutdown_finishes_in_flight(void)
{
    char *path = corpus("apple-text/eatfit-2.crash");
    size_t len;
    char *data = read_file(path, &len);
    int fd = connect_port(port);
    CHECK(fd >= 0 && data);
    char *head = xsprintf("POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                          "Authorization: Bearer %s\r\nContent-Type: text/plain\r\n"
                          "Content-Length: %zu\r\n\r\n", tok_ingest, len);
    send_all(fd, head, strlen(head));
    send_all(fd, data, len / 2);
    /* Wait until the server counts it in flight (the /metrics request itself is one). */
    bool in_flight = false;
    for (double end = now_s() + 15; now_s() < end && !in_flight; sleep_ms(20)) {
        char *auth = xsprintf("Authorization: Bearer %s\r\n", tok_read);
        http_resp m = http_req(port, "GET", "/metrics", auth, NULL, 0, false);
        free(auth);
        const char *v = m.body ? strstr(m.body, "\nstacksift_http_requests_in_flight ") : NULL;
        in_flight = v && atoi(v + strlen("\nstacksift_http_requests_in_flight ")) >= 2;
        resp_free(&m);
    }
    CHECK(in_flight);
    kill(server_pid, SIGTERM);
    sleep_ms(300);
    send_all(fd, data + len / 2, len - len / 2);
    http_resp r = {0};
    read_response(fd, &r);
    close(fd);
    CHECK_EQ_INT(r.status, 202);
    resp_free(&r);
    CHECK_EQ_INT(wait_exit(server_pid, 30), 0);
    server_pid = -1;
    /* and it no longer listens */
    CHECK(connect_port(port) < 0);
    free(head);
    free(data);
    free(path);
}

static void reports_survive_restart(void)
{
    server_pid = start_server(port);
    CHECK(server_pid > 0);
    CHECK(report_id_text != NULL);
    if (!report_id_text)
        return;
    char *url = xsprintf("/api/v1/reports/%s", report_id_text);
    char *h = auth(tok_read, NULL);
    http_resp r = http_req(port, "GET", url, h, NULL, 0, false);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_STR(r.json ? jstr(r.json, "id") : NULL, report_id_text);
    CHECK_EQ_STR(r.json ? jstr(r.json, "format") : NULL, "apple-text");
    resp_free(&r);
    free(h);
    free(url);
    CHECK_EQ_INT(stop_server(server_pid), 0);
    server_pid = -1;
}

/* A private cluster that this test stops and starts again under a running server. */
static void database_outage_gives_503_not_loss(void)
{
    char *pgdir = xsprintf("%s/pg", tmp_root);
    char *pgsh = xsprintf("%s/tests/pg.sh", e2e.source_dir);
    char *start_argv[] = {pgsh, "start", pgdir, NULL};
    char *stop_argv[] = {pgsh, "stop", pgdir, NULL};
    run_result pr = run(start_argv, NULL, 120);
    CHECK_EQ_INT(pr.status, 0);
    if (pr.status != 0) {
        fprintf(stderr, "pg.sh start: %s\n", pr.err);
        run_free(&pr);
        return;
    }
    char *url = strdup(strtok(pr.out, "\n"));
    run_free(&pr);
    char *dir2 = xsprintf("%s/data2", tmp_root);
    int port2 = free_port();
    set_env(url, dir2, port2);
    char *margv[] = {(char *)e2e.bin, "migrate", NULL};
    run_result mr = run(margv, server_env(), 60);
    CHECK_EQ_INT(mr.status, 0);
    run_free(&mr);
    char *tok = create_token("outage", "ingest,read,upload");
    CHECK(tok != NULL);
    int saved_port = port;
    port = port2;
    pid_t pid = start_server(port2);
    CHECK(pid > 0);

    char *h = auth(tok ? tok : "", "Content-Type: application/json\r\n");
    char *ips = corpus("ips/lldb-1.ips");
    size_t len;
    char *body = read_file(ips, &len);
    http_resp r = http_req(port2, "POST", "/api/v1/reports", h, body, len, false);
    CHECK_EQ_INT(r.status, 202);
    char *id = r.json && jstr(r.json, "id") ? strdup(jstr(r.json, "id")) : NULL;
    resp_free(&r);

    pr = run(stop_argv, NULL, 60);
    CHECK_EQ_INT(pr.status, 0);
    run_free(&pr);

    r = http_req(port2, "GET", "/readyz", NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 503);
    CHECK_EQ_STR(err_code_of(&r), "store_unavailable");
    resp_free(&r);
    for (int i = 0; i < 3; i++) {
        r = http_req(port2, "POST", "/api/v1/reports", h, body, len, false);
        CHECK_EQ_INT(r.status, 503);
        CHECK(r.headers && strstr(r.headers, "Retry-After: "));
        /* the answer names the request id (its log line has libpq's words), never them */
        json_t *e = r.json ? json_object_get(r.json, "error") : NULL;
        const char *msg = e ? jstr(e, "message") : NULL;
        const char *rid = r.headers ? strstr(r.headers, "X-Request-Id: ") : NULL;
        char req[64] = "";
        if (rid)
            sscanf(rid + 14, "%63[0-9a-f]", req);
        CHECK(msg != NULL && req[0] != '\0' && strstr(msg, req) != NULL);
        CHECK(msg != NULL && strstr(msg, "connect") == NULL && strstr(msg, "server") == NULL &&
              strstr(msg, "SQLSTATE") == NULL && strstr(msg, "reports_intake") == NULL);
        resp_free(&r);
    }
    r = http_req(port2, "GET", "/healthz", NULL, NULL, 0, false);
    CHECK_EQ_INT(r.status, 200);   /* the process itself is fine */
    resp_free(&r);

    /* A dSYM upload while the database is down: 503, and no symcache is left behind. */
    char *kit = fixture("kit/FixtureKit.framework.dSYM/Contents/Resources/DWARF/FixtureKit");
    size_t kit_len;
    char *kit_data = read_file(kit, &kit_len);
    char *hu = auth(tok ? tok : "", NULL);
    CHECK_STATUS(http_req(port2, "POST", "/api/v1/dsyms", hu, kit_data, kit_len, false), 503);
    char *symcaches2 = xsprintf("%s/symcaches", dir2), *tmp2 = xsprintf("%s/tmp", dir2);
    CHECK_EQ_INT(count_entries(symcaches2), 0);
    for (double end = now_s() + 5; count_scratch(tmp2) != 0 && now_s() < end;)
        sleep_ms(20);   /* removed when the request completes, just after the answer */
    CHECK_EQ_INT(count_scratch(tmp2), 0);
    free(symcaches2), free(tmp2), free(hu), free(kit_data), free(kit);

    /* A second server told not to start without its database (STACKSIFT_OFFLINE_START=0)
     * exits and says why; so does one whose data directory holds no token table (it never
     * saw the database: it could check no token). test_spool covers the offline start. */
    char *serve_argv[] = {(char *)e2e.bin, "serve", NULL};
    char **env = server_env();
    size_t nenv = 0;
    while (env[nenv])
        nenv++;
    env[nenv] = "STACKSIFT_OFFLINE_START=0";
    env[nenv + 1] = NULL;
    run_result sr = run(serve_argv, env, 30);
    CHECK_EQ_INT(sr.status, 1);
    CHECK(strstr(sr.err, "\"event\":\"database_unreachable\"") != NULL);
    run_free(&sr);
    char *fresh = xsprintf("STACKSIFT_DATA_DIR=%s/fresh-node", dir2);
    env = server_env();
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], "STACKSIFT_DATA_DIR=", 19) == 0)
            env[i] = fresh;
    sr = run(serve_argv, env, 30);
    CHECK_EQ_INT(sr.status, 1);
    CHECK(strstr(sr.err, "\"event\":\"database_unreachable\"") != NULL);
    run_free(&sr);
    free(fresh);

    pr = run(start_argv, NULL, 120);
    CHECK_EQ_INT(pr.status, 0);
    run_free(&pr);
    int ready = 0;
    for (double end = now_s() + 20; now_s() < end && !ready; sleep_ms(200)) {
        r = http_req(port2, "GET", "/readyz", NULL, NULL, 0, false);
        ready = r.status == 200;
        resp_free(&r);
    }
    CHECK(ready);
    CHECK_STATUS(http_req(port2, "POST", "/api/v1/reports", h, body, len, false), 202);
    if (id) {
        char *p = xsprintf("/api/v1/reports/%s", id);
        char *hr = auth(tok ? tok : "", NULL);
        CHECK_STATUS(http_req(port2, "GET", p, hr, NULL, 0, false), 200);
        free(hr);
        free(p);
    }
    CHECK_EQ_INT(stop_server(pid), 0);
    pr = run(stop_argv, NULL, 60);
    run_free(&pr);
    port = saved_port;
    free(id);
    free(body);
    free(ips);
    free(h);
    free(tok);
    free(dir2);
    free(url);
    free(pgsh);
    free(pgdir);
}

int main(void)
{
    if (!e2e_env_load(&e2e, "test_server"))
        return 1;
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/stacksift-test-server.XXXXXX";
    tmp_root = mkdtemp(tmpl);
    /* The outage test's cluster runs as `postgres` when we are root: it must reach its dir. */
    chmod(tmp_root, 0755);
    char *dbname = xsprintf("stacksift_test_server_%d", (int)getpid());
    db_url = create_database(e2e.base_url, dbname);
    if (!db_url) {
        fprintf(stderr, "test_server: cannot create a database on %s\n", e2e.base_url);
        return 1;
    }
    data_dir = xsprintf("%s/data", tmp_root);
    server_log = xsprintf("%s/server.log", tmp_root);
    port = free_port();
    env_report_max = "STACKSIFT_MAX_REPORT_BYTES=1M";
    env_upload_max = "STACKSIFT_MAX_UPLOAD_BYTES=8M";
    env_log = "STACKSIFT_LOG_LEVEL=info";
    set_env(db_url, data_dir, port);

    RUN(serve_refuses_unmigrated_schema);
    RUN(migrate_applies_once);
    RUN(tokens_are_created);
    RUN(server_starts_and_is_ready);
    if (server_pid > 0) {
        RUN(auth_failures_are_401_and_403);
        RUN(reports_are_accepted_and_readable);
        RUN(malformed_reports_are_refused);
        RUN(report_limits_are_413);
        RUN(dsym_zip_upload_and_reupload);
        RUN(dsym_raw_macho_upload);
        RUN(dsym_multipart_upload);
        RUN(dsym_queries);
        RUN(malformed_uploads_leave_nothing);
        RUN(metrics_count_requests);
        RUN(dsym_bad_parts_are_skipped_and_reported);
        RUN(kscrash_sink_batch_is_taken_report_by_report);
        RUN(kscrash_sink_refusals);
        RUN(kscrash_sink_with_dsn_key_goes_to_its_project);
        RUN(kscrash_sink_batch_sent_again_is_stored_once);
        RUN(bugsnag_notify_stores_each_event_in_the_key_project);
        RUN(bugsnag_sessions_are_counted);
        RUN(bugsnag_dsym_upload_and_duplicate);
        RUN(bugsnag_integrity_is_checked);
        RUN(bugsnag_dsym_wrong_key_first_spools_nothing);
        RUN(graceful_shutdown_finishes_in_flight);
        RUN(reports_survive_restart);
    }
    if (server_pid > 0)
        stop_server(server_pid);
    RUN(database_outage_gives_503_not_loss);

    int failed = harness_failed;
    if (failed) {
        fprintf(stderr, "server log (%s):\n", server_log);
        char *log = read_file(server_log, NULL);
        if (log) {
            size_t n = strlen(log);
            fputs(n > 8000 ? log + n - 8000 : log, stderr);
        }
        free(log);
    } else if (!getenv("STACKSIFT_TEST_KEEP")) {
        char *argv[] = {"/bin/rm", "-rf", tmp_root, NULL};
        run_result r = run(argv, NULL, 60);
        run_free(&r);
    }
    free(tok_ingest), free(tok_upload), free(tok_read), free(tok_admin);
    free(report_id_text), free(db_url), free(dbname), free(data_dir), free(server_log);
    free(env_db), free(env_data), free(env_listen);
    return harness_done();
}
