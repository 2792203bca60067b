/*
 * server_harness - what the end-to-end tests (test_server, test_pipeline) share to drive the
 * real `stacksift serve`: small utilities, child processes, a tiny HTTP/1.1 client over a
 * loopback socket and a private Postgres database. Link server_harness.c into the test (see
 * tests/server.cmake, tests/pipeline.cmake); it needs libpq and jansson.
 *
 * Every wait is bounded (the timeouts are given below); nothing here calls CHECK: the tests
 * assert on what these functions return.
 */
#ifndef STACKSIFT_TESTS_SERVER_HARNESS_H
#define STACKSIFT_TESTS_SERVER_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- small utilities ------------------------------------------------------------------- */

/* xsprintf - vasprintf that aborts on failure; the caller frees the result. */
char *xsprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* now_s - CLOCK_MONOTONIC in seconds. */
double now_s(void);

/* sleep_ms - sleep `ms` milliseconds. */
void sleep_ms(int ms);

/*
 * read_file - the whole file, NUL-terminated, malloc'd (caller frees); *len (if given) is its
 * size in bytes without the NUL. NULL if the file cannot be opened or read completely.
 */
char *read_file(const char *path, size_t *len);

/* free_port - a TCP port on 127.0.0.1 that was free a moment ago; -1 if none was found. */
int free_port(void);

/* ---- child processes ------------------------------------------------------------------- */

/*
 * spawn - fork and execv(argv[0], argv). `env` (NULL-terminated "K=V" strings, or NULL) is
 * added to the inherited environment in order, so a later entry overrides an earlier one.
 * stdin comes from `in_path`, stdout goes to `out_path` (truncated), stderr is appended to
 * `err_path`; a NULL path leaves that stream as it is. The child gets SIGKILL when the test
 * dies (PR_SET_PDEATHSIG), so a crashed test leaves no server behind.
 */
pid_t spawn(char *const *argv, char *const *env, const char *in_path, const char *out_path,
            const char *err_path);

/* wait_exit - the exit status of `pid`; after `timeout_s` it is killed and -1 returned
 * (also -1 when it died of a signal). */
int wait_exit(pid_t pid, double timeout_s);

typedef struct {
    int status;   /* exit status, -1 if killed/timeout */
    char *out;    /* stdout, never NULL ("" if none) */
    char *err;    /* stderr, never NULL */
} run_result;

/*
 * run_in - run argv to completion (at most `timeout_s`), capturing stdout and stderr in files
 * under `dir` (kept there for a look). Free the result with run_free(). Not thread-safe.
 */
run_result run_in(const char *dir, char *const *argv, char *const *env, double timeout_s);
void run_free(run_result *r);

/*
 * token_create - `bin token create --name NAME --scopes SCOPES` with `env`; returns the token
 * (the last line of its stdout, malloc'd) or NULL after printing why to stderr.
 */
char *token_create(const char *dir, const char *bin, char *const *env, const char *name,
                   const char *scopes);

/*
 * serve_start - `bin serve` with `env`, stderr appended to `log_path`; waits (at most 15 s)
 * until GET `ready_path` on 127.0.0.1:`port` answers 200. Returns the pid, or -1 (the server
 * exited or never got ready; it is killed then).
 */
pid_t serve_start(const char *bin, char *const *env, const char *log_path, int port,
                  const char *ready_path);

/* ---- HTTP client ----------------------------------------------------------------------- */

typedef struct {
    int status;     /* 0: no response */
    char *headers;  /* raw header block, without the blank line */
    char *body;     /* NUL-terminated */
    size_t body_len;
    json_t *json;   /* body parsed, or NULL */
} http_resp;

/* resp_free - free what `r` holds and zero it. */
void resp_free(http_resp *r);

/* CHECK_STATUS - make the request `call` (an expression giving an http_resp), check its
 * status, free it. A macro, so that a failure names the test's own line (needs harness.h). */
#define CHECK_STATUS(call, want)                \
    do {                                        \
        http_resp check_status_r_ = (call);     \
        CHECK_EQ_INT(check_status_r_.status, want); \
        resp_free(&check_status_r_);            \
    } while (0)

/* send_all - send `n` bytes (no SIGPIPE); 0, or -1 if the peer went away. */
int send_all(int fd, const void *p, size_t n);

/* connect_port - a socket connected to 127.0.0.1:`port`, or -1. */
int connect_port(int port);

/* read_response - read until EOF (Connection: close; at most 30 s) and split status,
 * headers and body into `out` (status stays 0 if no HTTP response came). */
void read_response(int fd, http_resp *out);

/*
 * http_req - one request on a new connection to 127.0.0.1:`port`. `headers` is extra header
 * lines, each ending in "\r\n" (or NULL). expect_continue: send the headers first and the body
 * only after "100 Continue" (what curl does for large bodies), so an early answer arrives
 * without the body. Thread-safe. Free the result with resp_free().
 */
http_resp http_req(int port, const char *method, const char *path, const char *headers,
                   const void *body, size_t body_len, bool expect_continue);

/* ---- environment and database ---------------------------------------------------------- */

typedef struct {
    const char *base_url;    /* STACKSIFT_TEST_DATABASE_URL: the cluster's conninfo */
    const char *bin;         /* STACKSIFT_BIN: the stacksift executable */
    const char *fixtures;    /* STACKSIFT_FIXTURES: built fixtures (manifest.json inside) */
    const char *source_dir;  /* STACKSIFT_SOURCE_DIR */
} e2e_env;

/*
 * e2e_env_load - read the variables above (borrowed from the environment). false after
 * printing, prefixed with `test_name`, what is missing and which script provides it.
 */
bool e2e_env_load(e2e_env *out, const char *test_name);

/*
 * create_database - (re)create database `name` (an SQL identifier, not quoted) on the cluster
 * of conninfo `url`; returns a malloc'd conninfo for it, or NULL after printing why.
 */
char *create_database(const char *url, const char *name);

#endif
