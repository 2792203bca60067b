/*
 * test_server_units - the server's pieces that need no database: config parsing (every row
 * checked, every bad variable reported), err_code -> HTTP status, JSON log lines, the
 * crash-report admission budget.
 */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "config/config.h"
#include "harness.h"
#include "http/admission.h"
#include "http/http.h"
#include "log/log.h"

static void clear_env(void)
{
    size_t n;
    const config_doc *docs = config_docs(&n);
    for (size_t i = 0; i < n; i++)
        unsetenv(docs[i].name);
}

static void config_defaults(void)
{
    clear_env();
    setenv("STACKSIFT_DATABASE_URL", "postgresql://x@127.0.0.1/db", 1);
    config c;
    err_info err = {0};
    CHECK_EQ_INT(config_load(&c, 1, NULL, &err), ERR_OK);
    CHECK_EQ_STR(c.listen_host, "127.0.0.1");
    CHECK_EQ_INT(c.listen_port, 8080);
    CHECK_EQ_STR(c.data_dir, "./data");
    CHECK_EQ_U64(c.max_report_bytes, 5u << 20);
    CHECK_EQ_U64(c.max_upload_bytes, 2ull << 30);
    CHECK_EQ_INT(c.http_threads, 4);
    CHECK_EQ_INT(c.log_level, LOG_INFO);
    config_reset(&c);
}

static void config_values_parse(void)
{
    clear_env();
    setenv("STACKSIFT_DATABASE_URL", "host=/tmp dbname=x", 1);
    setenv("STACKSIFT_LISTEN", "[::1]:9090", 1);
    setenv("STACKSIFT_MAX_REPORT_BYTES", "512K", 1);
    setenv("STACKSIFT_MAX_UPLOAD_BYTES", "1000", 1);
    setenv("STACKSIFT_LOG_LEVEL", "warn", 1);
    config c;
    err_info err = {0};
    CHECK_EQ_INT(config_load(&c, 1, NULL, &err), ERR_OK);
    CHECK_EQ_STR(c.listen_host, "::1");
    CHECK_EQ_INT(c.listen_port, 9090);
    CHECK_EQ_U64(c.max_report_bytes, 512u << 10);
    CHECK_EQ_U64(c.max_upload_bytes, 1000);
    CHECK_EQ_INT(c.log_level, LOG_WARN);
    CHECK_EQ_STR(c.database_url, "host=/tmp dbname=x");
    config_reset(&c);
}

static void config_reports_every_bad_variable(void)
{
    clear_env();
    setenv("STACKSIFT_LISTEN", "localhost", 1);              /* no port */
    setenv("STACKSIFT_MAX_REPORT_BYTES", "5 MB", 1);
    setenv("STACKSIFT_HTTP_THREADS", "0", 1);
    setenv("STACKSIFT_LOG_LEVEL", "loud", 1);
    config c;
    err_info err = {0};
    buf problems;
    buf_init(&problems);
    CHECK_EQ_INT(config_load(&c, 1, &problems, &err), ERR_INVALID);
    const char *p = problems.data ? (const char *)problems.data : "";
    CHECK(strstr(p, "STACKSIFT_LISTEN: ") != NULL);
    CHECK(strstr(p, "STACKSIFT_DATABASE_URL: is required") != NULL);
    CHECK(strstr(p, "STACKSIFT_MAX_REPORT_BYTES: ") != NULL);
    CHECK(strstr(p, "STACKSIFT_HTTP_THREADS: ") != NULL);
    CHECK(strstr(p, "STACKSIFT_LOG_LEVEL: ") != NULL);
    CHECK(strstr(err.msg, "STACKSIFT_LISTEN") != NULL);   /* the first bad one */
    CHECK(c.listen_host == NULL);                          /* nothing half-loaded */
    buf_reset(&problems);
    clear_env();
}

static void status_mapping(void)
{
    CHECK_EQ_INT(http_status_for(ERR_OK), 200);
    CHECK_EQ_INT(http_status_for(ERR_INVALID), 400);
    CHECK_EQ_INT(http_status_for(ERR_UNAUTHORIZED), 401);
    CHECK_EQ_INT(http_status_for(ERR_FORBIDDEN), 403);
    CHECK_EQ_INT(http_status_for(ERR_NOT_FOUND), 404);
    CHECK_EQ_INT(http_status_for(ERR_CONFLICT), 409);
    CHECK_EQ_INT(http_status_for(ERR_TOO_LARGE), 413);
    CHECK_EQ_INT(http_status_for(ERR_UNSUPPORTED), 422);
    CHECK_EQ_INT(http_status_for(ERR_IO), 500);
    CHECK_EQ_INT(http_status_for(ERR_INTERNAL), 500);
    CHECK_EQ_INT(http_status_for(ERR_STORE), 503);
}

static void log_lines_are_json(void)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    log_set_fd(fds[1]);
    log_set_level(LOG_INFO);
    const char *none = getenv("STACKSIFT_TEST_NEVER_SET");   /* NULL, unknown to the compiler */
    log_event(LOG_DEBUG, "dropped", "x=%d", 1);
    log_event(LOG_INFO, "request", "req=%s status=%u dur_ms=%.2f bytes=%llu neg=%d none=%s size=%zu",
              "ab\"c\n", 202u, 1.5, 12345678901ull, -3, none, (size_t)7);
    log_event(LOG_ERROR, "bare", NULL);
    log_set_fd(2);
    close(fds[1]);
    char text[2048] = {0};
    ssize_t n = read(fds[0], text, sizeof text - 1);
    close(fds[0]);
    CHECK(n > 0);
    char *save = NULL, *line1 = strtok_r(text, "\n", &save), *line2 = strtok_r(NULL, "\n", &save);
    CHECK(strtok_r(NULL, "\n", &save) == NULL);   /* the debug line was dropped */
    json_t *j = line1 ? json_loads(line1, 0, NULL) : NULL;
    CHECK(j != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "event")), "request");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "level")), "info");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "req")), "ab\"c\n");
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "status")), 202);
    CHECK(json_real_value(json_object_get(j, "dur_ms")) == 1.5);
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "bytes")), 12345678901ll);
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "neg")), -3);
    CHECK(json_is_null(json_object_get(j, "none")));
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "size")), 7);
    CHECK(line1 && strncmp(line1, "{\"ts\":\"", 7) == 0);   /* ts, level, event first */
    json_decref(j);
    j = line2 ? json_loads(line2, 0, NULL) : NULL;
    CHECK_EQ_STR(json_string_value(json_object_get(j, "event")), "bare");
    json_decref(j);
}

/* At most max_inflight requests and max bytes at once (one always, whatever its size); a
 * refusal's Retry-After is refused / taken over the last windows, 1 to 60 s. */
static void admission_budget(void)
{
    admission *a = admission_new(2, 1000);
    unsigned retry = 99;
    double t = 1000;
    CHECK(admission_enter(&retry, a, 5000, t));   /* alone: taken whatever its size */
    CHECK_EQ_INT(retry, 0);
    CHECK(!admission_enter(&retry, a, 10, t));    /* over the bytes */
    CHECK_EQ_INT(retry, 1);                       /* 1 refused, 1 taken */
    admission_leave(a, 5000, t);
    CHECK_EQ_INT(admission_inflight(a), 0);
    CHECK(admission_enter(&retry, a, 10, t));
    CHECK(admission_enter(&retry, a, 10, t));
    for (int i = 0; i < 6; i++)                   /* over the count: 7 refused, 3 taken */
        CHECK(!admission_enter(&retry, a, 10, t));
    CHECK_EQ_INT(retry, 3);
    CHECK_EQ_INT(admission_inflight(a), 2);
    admission_leave(a, 10, t + 10);
    admission_leave(a, 10, t + 10);
    /* three seconds later the old windows are forgotten; nothing answered since, and the
     * two taken now stay in progress: the next refusal says 1 s (2 taken, 1 refused) */
    t += 3000;
    CHECK(admission_enter(&retry, a, 10, t));
    CHECK(admission_enter(&retry, a, 10, t));
    CHECK(!admission_enter(&retry, a, 10, t));
    CHECK_EQ_INT(retry, 1);
    /* a database that answers nothing: two windows later, every refusal says 60 s */
    t += 2500;
    CHECK(!admission_enter(&retry, a, 10, t));
    CHECK_EQ_INT(retry, 60);
    admission_free(a);
}

int main(void)
{
    RUN(config_defaults);
    RUN(config_values_parse);
    RUN(config_reports_every_bad_variable);
    RUN(status_mapping);
    RUN(log_lines_are_json);
    RUN(admission_budget);
    return harness_done();
}
