/* server_harness - see server_harness.h. */
#include "server_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- small utilities ------------------------------------------------------------------- */

char *xsprintf(const char *fmt, ...)
{
    va_list ap;
    char *out = NULL;
    va_start(ap, fmt);
    if (vasprintf(&out, fmt, ap) < 0)
        abort();
    va_end(ap);
    return out;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0) {
        fclose(f);
        return NULL;
    }
    char *data = malloc((size_t)n + 1);
    if (fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        fclose(f);
        return NULL;
    }
    data[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return data;
}

int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- child processes ------------------------------------------------------------------- */

pid_t spawn(char *const *argv, char *const *env, const char *in_path, const char *out_path,
            const char *err_path)
{
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a crashed test leaves no server behind */
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        if (in_path) {
            int fd = open(in_path, O_RDONLY);
            dup2(fd, 0);
        }
        if (out_path) {
            int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(fd, 1);
        }
        if (err_path) {
            int fd = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
            dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

int wait_exit(pid_t pid, double timeout_s)
{
    double end = now_s() + timeout_s;
    int st;
    while (now_s() < end) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        sleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

run_result run_in(const char *dir, char *const *argv, char *const *env, double timeout_s)
{
    static int n;
    char *o = xsprintf("%s/run-%d.out", dir, n), *e = xsprintf("%s/run-%d.err", dir, n);
    n++;
    pid_t pid = spawn(argv, env, NULL, o, e);
    run_result r = {wait_exit(pid, timeout_s), NULL, NULL};
    r.out = read_file(o, NULL);
    r.err = read_file(e, NULL);
    if (!r.out)
        r.out = strdup("");
    if (!r.err)
        r.err = strdup("");
    free(o);
    free(e);
    return r;
}

void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
}

char *token_create(const char *dir, const char *bin, char *const *env, const char *name,
                   const char *scopes)
{
    char *argv[] = {(char *)bin, "token", "create", "--name", (char *)name, "--scopes",
                    (char *)scopes, NULL};
    run_result r = run_in(dir, argv, env, 30);
    char *token = NULL;
    if (r.status == 0) {
        char *last = r.out + strlen(r.out);
        while (last > r.out && last[-1] == '\n')
            *--last = '\0';
        char *nl = strrchr(r.out, '\n');
        token = strdup(nl ? nl + 1 : r.out);
    } else {
        fprintf(stderr, "token create failed (%d): %s\n", r.status, r.err);
    }
    run_free(&r);
    return token;
}

pid_t serve_start(const char *bin, char *const *env, const char *log_path, int port,
                  const char *ready_path)
{
    char *argv[] = {(char *)bin, "serve", NULL};
    pid_t pid = spawn(argv, env, NULL, NULL, log_path);
    for (double end = now_s() + 15; now_s() < end; sleep_ms(50)) {
        http_resp r = http_req(port, "GET", ready_path, NULL, NULL, 0, false);
        int st = r.status;
        resp_free(&r);
        if (st == 200)
            return pid;
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            fprintf(stderr, "server exited at start; log %s\n", log_path);
            return -1;
        }
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* ---- HTTP client ----------------------------------------------------------------------- */

void resp_free(http_resp *r)
{
    free(r->headers);
    free(r->body);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

int send_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void read_response(int fd, http_resp *out)
{
    size_t cap = 65536, len = 0;
    char *s = malloc(cap);
    double end = now_s() + 30;
    while (now_s() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 1000) <= 0)
            continue;
        if (len + 4096 > cap)
            s = realloc(s, cap *= 2);
        ssize_t n = recv(fd, s + len, cap - len - 1, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    s[len] = '\0';
    char *sep = strstr(s, "\r\n\r\n");
    if (!sep || sscanf(s, "HTTP/1.%*d %d", &out->status) != 1) {
        free(s);
        return;
    }
    out->headers = strndup(s, (size_t)(sep - s));
    out->body_len = len - (size_t)(sep + 4 - s);
    out->body = malloc(out->body_len + 1);
    memcpy(out->body, sep + 4, out->body_len);
    out->body[out->body_len] = '\0';
    out->json = json_loadb(out->body, out->body_len, 0, NULL);
    free(s);
}

http_resp http_req(int port, const char *method, const char *path, const char *headers,
                   const void *body, size_t body_len, bool expect_continue)
{
    http_resp out = {0};
    int fd = connect_port(port);
    if (fd < 0)
        return out;
    char *head = xsprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s"
                          "Content-Length: %zu\r\n\r\n", method, path, headers ? headers : "",
                          expect_continue ? "Expect: 100-continue\r\n" : "", body_len);
    send_all(fd, head, strlen(head));
    free(head);
    if (expect_continue) {
        char buf[64] = {0};
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) == 1) {
            ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_PEEK);
            if (n > 12 && strncmp(buf, "HTTP/1.1 100", 12) == 0) {
                char *end = NULL;
                char line[64];
                n = recv(fd, line, sizeof line - 1, MSG_PEEK);
                line[n > 0 ? n : 0] = '\0';
                end = strstr(line, "\r\n\r\n");
                if (end)   /* consume exactly the interim response */
                    (void)!recv(fd, line, (size_t)(end + 4 - line), 0);
                send_all(fd, body, body_len);
            }
        }
    } else if (body_len) {
        send_all(fd, body, body_len);
    }
    read_response(fd, &out);
    close(fd);
    return out;
}

/* ---- environment and database ---------------------------------------------------------- */

bool e2e_env_load(e2e_env *out, const char *test_name)
{
    out->base_url = getenv("STACKSIFT_TEST_DATABASE_URL");
    out->bin = getenv("STACKSIFT_BIN");
    out->fixtures = getenv("STACKSIFT_FIXTURES");
    out->source_dir = getenv("STACKSIFT_SOURCE_DIR");
    if (!out->base_url || !*out->base_url) {
        fprintf(stderr, "%s: STACKSIFT_TEST_DATABASE_URL is not set: run the tests with "
                        "tests/run.sh, which starts Postgres with tests/pg.sh and sets it\n",
                test_name);
        return false;
    }
    if (!out->bin || !out->fixtures || !out->source_dir) {
        fprintf(stderr, "%s: STACKSIFT_BIN, STACKSIFT_FIXTURES and STACKSIFT_SOURCE_DIR "
                        "must be set (ctest sets them)\n", test_name);
        return false;
    }
    char *manifest = xsprintf("%s/manifest.json", out->fixtures);
    bool ok = access(manifest, R_OK) == 0;
    if (!ok)
        fprintf(stderr, "%s: no fixtures at %s: tests/fixtures/build.sh builds them "
                        "(tests/run.sh does)\n", test_name, out->fixtures);
    free(manifest);
    return ok;
}

static void quiet_notice(void *ctx, const char *msg)
{
    (void)ctx, (void)msg;
}

char *create_database(const char *url, const char *name)
{
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to %s: %s", url, PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    /* DROP ... IF EXISTS notices are expected, not news */
    PQsetNoticeProcessor(c, quiet_notice, NULL);
    char *drop = xsprintf("DROP DATABASE IF EXISTS %s", name);
    char *create = xsprintf("CREATE DATABASE %s", name);
    PQclear(PQexec(c, drop));
    PGresult *r = PQexec(c, create);
    char *out = NULL;
    if (PQresultStatus(r) == PGRES_COMMAND_OK)
        out = xsprintf("host=%s port=%s user=%s dbname=%s", PQhost(c), PQport(c), PQuser(c), name);
    else
        fprintf(stderr, "%s: %s", create, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    free(drop);
    free(create);
    return out;
}
