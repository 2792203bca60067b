/*
 * config - every environment variable the service reads, in one table (STYLE §10).
 */
#include "config/config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "log/log.h"

typedef int (*config_parse_fn)(void *field, const char *value, const char **why);

typedef struct {
    const char *name;
    const char *default_value;   /* NULL: unset stays unset (checked by the caller) */
    config_parse_fn parse;
    size_t offset;               /* of the field in config */
    const char *doc;
} config_var;

static int parse_str(void *field, const char *value, const char **why)
{
    if (value[0] == '\0') {
        *why = "must not be empty";
        return 0;
    }
    *(char **)field = xstrdup(value);
    return 1;
}

static int parse_u64_range(uint64_t *out, const char *value, uint64_t min, uint64_t max)
{
    char *end;
    errno = 0;
    if (value[0] < '0' || value[0] > '9')
        return 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return 0;
    *out = v;
    return 1;
}

/* A byte count: digits, optionally followed by K, M or G (binary units). */
static int parse_size(void *field, const char *value, const char **why)
{
    char digits[32];
    size_t n = strlen(value);
    uint64_t mult = 1, v;
    if (n > 0 && n < sizeof digits) {
        char last = value[n - 1];
        mult = last == 'K' ? 1ull << 10 : last == 'M' ? 1ull << 20 : last == 'G' ? 1ull << 30 : 1;
        memcpy(digits, value, n + 1);
        if (mult != 1)
            digits[n - 1] = '\0';
        if (parse_u64_range(&v, digits, 1, UINT64_MAX / mult)) {
            *(uint64_t *)field = v * mult;
            return 1;
        }
    }
    *why = "must be a positive byte count like 5242880, 512K, 5M or 2G";
    return 0;
}

static int parse_count(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 1, 1024)) {
        *why = "must be a whole number from 1 to 1024";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_users_exact(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 1, 1000000000)) {
        *why = "must be a whole number from 1 to 1000000000";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_device_cache(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 100000000)) {
        *why = "must be a whole number from 0 to 100000000";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_count0(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 1024)) {
        *why = "must be a whole number from 0 to 1024";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_gather_us(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 100000)) {
        *why = "must be a whole number of microseconds from 0 to 100000";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_nice(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 19)) {
        *why = "must be a whole number from 0 to 19";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_frames(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 1, 16)) {
        *why = "must be a whole number from 1 to 16";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_ms(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 1, 3600000)) {
        *why = "must be milliseconds from 1 to 3600000";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_seconds(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 1, 86400)) {
        *why = "must be seconds from 1 to 86400";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_grace(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 31536000)) {
        *why = "must be seconds from 0 to 31536000 (a year)";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_connections(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 16, 1000000)) {
        *why = "must be a whole number from 16 to 1000000";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_connections0(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 1000000)) {
        *why = "must be a whole number from 0 to 1000000";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_ratio(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 2, 100000)) {
        *why = "must be a whole number from 2 to 100000";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_level(void *field, const char *value, const char **why)
{
    int level = log_level_parse(value);
    if (level < 0) {
        *why = "must be one of debug, info, warn, error";
        return 0;
    }
    *(int *)field = level;
    return 1;
}

static int parse_chunk_compression(void *field, const char *value, const char **why)
{
    if (strcmp(value, "gzip") != 0 && strcmp(value, "none") != 0) {
        *why = "must be gzip or none";
        return 0;
    }
    *(int *)field = strcmp(value, "gzip") == 0;
    return 1;
}

static int parse_days(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 36500)) {
        *why = "must be a whole number of days from 0 (keep forever) to 36500";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

static int parse_megabytes(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 0, 1u << 24)) {
        *why = "must be a whole number of MiB from 0 to 16777216";
        return 0;
    }
    *(uint64_t *)field = v << 20;
    return 1;
}

/* A node name goes into metric labels and the database: letters, digits, '.', '_', '-'. */
static int parse_node_name(void *field, const char *value, const char **why)
{
    size_t n = strlen(value);
    *why = "must be 1 to 63 characters of A-Z a-z 0-9 . _ -";
    if (n == 0 || n > 63 || strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789._-") != n)
        return 0;
    *(char **)field = xstrdup(value);
    return 1;
}

static int parse_interval(void *field, const char *value, const char **why)
{
    uint64_t v;
    if (!parse_u64_range(&v, value, 1, 86400)) {
        *why = "must be seconds from 1 to 86400";
        return 0;
    }
    *(uint32_t *)field = (uint32_t)v;
    return 1;
}

/* Split HOST:PORT or [IPV6]:PORT: *host (not NUL-terminated) and *host_len, *port in 1..65535.
 * 0 if it is neither. */
static int split_host_port(const char *value, const char **host, size_t *host_len, uint16_t *port)
{
    const char *colon = strrchr(value, ':');
    uint64_t p;
    if (!colon || colon == value || !parse_u64_range(&p, colon + 1, 1, 65535))
        return 0;
    *host = value;
    *host_len = (size_t)(colon - value);
    if (value[0] == '[') {
        if (*host_len < 3 || value[*host_len - 1] != ']')
            return 0;
        (*host)++;
        *host_len -= 2;
    }
    *port = (uint16_t)p;
    return 1;
}

/* HOST:PORT, [IPV6]:PORT; the listen address is written into listen_host and listen_port. */
static int parse_listen(void *field, const char *value, const char **why)
{
    config *c = (config *)((char *)field - offsetof(config, listen_host));
    const char *host;
    size_t host_len;
    uint16_t port;
    *why = "must be HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080";
    if (!split_host_port(value, &host, &host_len, &port))
        return 0;
    c->listen_host = xstrndup(host, host_len);
    c->listen_port = port;
    return 1;
}

static int parse_bool(void *field, const char *value, const char **why)
{
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
        *why = "must be 0 or 1";
        return 0;
    }
    *(int *)field = value[0] == '1';
    return 1;
}

/* HOST:PORT of a loopback address only: what it serves needs no token. */
static int parse_metrics_listen(void *field, const char *value, const char **why)
{
    config *c = (config *)((char *)field - offsetof(config, metrics_host));
    const char *host;
    size_t host_len;
    uint16_t port;
    *why = "must be a loopback HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464";
    if (!split_host_port(value, &host, &host_len, &port))
        return 0;
    bool loopback = (host_len > 4 && strncmp(host, "127.", 4) == 0) ||
                    (host_len == 3 && strncmp(host, "::1", 3) == 0) ||
                    (host_len == 9 && strncmp(host, "localhost", 9) == 0);
    if (!loopback)
        return 0;
    c->metrics_host = xstrndup(host, host_len);
    c->metrics_port = port;
    return 1;
}

static const config_var VARS[] = {
    {"STACKSIFT_LISTEN", "127.0.0.1:8080", parse_listen, offsetof(config, listen_host),
     "address and port the HTTP server listens on"},
    {"STACKSIFT_DATABASE_URL", NULL, parse_str, offsetof(config, database_url),
     "Postgres: libpq URI or conninfo (required)"},
    {"STACKSIFT_DATA_DIR", "./data", parse_str, offsetof(config, data_dir),
     "symcaches/ and upload scratch space tmp/"},
    {"STACKSIFT_MAX_REPORT_BYTES", "5M", parse_size, offsetof(config, max_report_bytes),
     "largest report body, after gzip decoding (413 above)"},
    {"STACKSIFT_MAX_UPLOAD_BYTES", "2G", parse_size, offsetof(config, max_upload_bytes),
     "largest dSYM upload body (413 above)"},
    {"STACKSIFT_MAX_UNPACKED_BYTES", "8G", parse_size, offsetof(config, max_unpacked_bytes),
     "total uncompressed bytes of one uploaded zip"},
    {"STACKSIFT_MAX_ZIP_RATIO", "200", parse_ratio, offsetof(config, max_zip_ratio),
     "largest uncompressed/compressed ratio of a zip entry"},
    {"STACKSIFT_HTTP_THREADS", "4", parse_count, offsetof(config, http_threads),
     "HTTP worker threads (libmicrohttpd thread pool, epoll)"},
    {"STACKSIFT_METRICS_PUBLIC", "0", parse_bool, offsetof(config, metrics_public),
     "1: GET /metrics needs no token (else a read-scoped one)"},
    {"STACKSIFT_METRICS_LISTEN", NULL, parse_metrics_listen, offsetof(config, metrics_host),
     "a loopback HOST:PORT serving GET /metrics without a token (default: none)"},
    {"STACKSIFT_REQUEST_THREADS", "16", parse_count, offsetof(config, request_threads),
     "threads that run request handlers (database, symbolication, dSYM conversion), so "
     "that the HTTP threads never wait"},
    {"STACKSIFT_INGEST_INFLIGHT", "32", parse_count, offsetof(config, ingest_inflight),
     "crash-report requests (POST /api/v1/reports, Sentry envelope, store and minidump, "
     "Bugsnag notify) taken and not yet answered; once as many are in progress, more are answered "
     "429 with Retry-After at once (load shedding) rather than queued"},
    {"STACKSIFT_DB_POOL_SIZE", "8", parse_count, offsetof(config, db_pool_size),
     "Postgres connections in the pool (the intake commits and the request handlers)"},
    {"STACKSIFT_INTAKE_COMMITS", "0", parse_count0, offsetof(config, intake_commits),
     "group commits of POSTed reports running at once (one pooled connection each); 0: 1 "
     "when reports are processed at intake (commits that upsert issues wait on each other's "
     "issue rows, and one at a time takes the most reports per commit), else 4"},
    {"STACKSIFT_INTAKE_GATHER_US", "2000", parse_gather_us, offsetof(config, intake_gather_us),
     "before a group commit, how long (microseconds) a lone committer may wait for as many "
     "more reports as its last commit had (their clients, just answered, are sending again), "
     "so that they share one commit; 0: commit at once"},
    {"STACKSIFT_DB_TIMEOUT_MS", "3000", parse_ms, offsetof(config, db_timeout_ms),
     "connect timeout and longest wait for a pooled connection"},
    {"STACKSIFT_DSYM_THREADS", "1", parse_count, offsetof(config, dsym_threads),
     "DWARF conversion threads per upload"},
    {"STACKSIFT_CHUNK_EXPIRY_S", "3600", parse_seconds, offsetof(config, chunk_expiry_s),
     "sentry-cli upload chunks are deleted this long after upload (or after an assemble "
     "request last counted on them)"},
    {"STACKSIFT_CHUNK_COMPRESSION", "gzip", parse_chunk_compression,
     offsetof(config, chunk_gzip),
     "what sentry-cli is told it may compress chunks with: gzip, or none (it then sends them "
     "as they are: no gzip on the client, more bytes on the wire and in Postgres)"},
    {"STACKSIFT_SHUTDOWN_TIMEOUT_MS", "8000", parse_ms, offsetof(config, shutdown_timeout_ms),
     "on SIGTERM, how long in-flight requests may still run"},
    {"STACKSIFT_REQUEST_TIMEOUT_S", "60", parse_seconds, offsetof(config, request_timeout_s),
     "close a connection whose body or answer makes no progress for this long"},
    {"STACKSIFT_HEADER_TIMEOUT_S", "10", parse_seconds, offsetof(config, header_timeout_s),
     "close a connection that has not sent complete request headers this long after it "
     "connected or got its last answer (idle keep-alive included)"},
    {"STACKSIFT_MAX_CONNECTIONS", "4096", parse_connections, offsetof(config, max_connections),
     "open HTTP connections in total (more are refused; capped by the open-file limit)"},
    {"STACKSIFT_MAX_CONNECTIONS_PER_IP", "256", parse_connections0,
     offsetof(config, max_connections_per_ip),
     "open HTTP connections from one client address (0: no per-address limit)"},
    {"STACKSIFT_MIN_BODY_RATE", "1K", parse_size, offsetof(config, min_body_rate),
     "bytes/s a request body must average once it has taken the header timeout"},
    {"STACKSIFT_LOG_LEVEL", "info", parse_level, offsetof(config, log_level),
     "debug, info, warn or error"},
    {"STACKSIFT_WORKERS", "2", parse_count0, offsetof(config, workers),
     "report processing threads (0: this process only serves HTTP)"},
    {"STACKSIFT_WORKER_BATCH", "64", parse_count, offsetof(config, worker_batch),
     "reports a worker claims and commits in one transaction"},
    {"STACKSIFT_WORKER_NICE", "10", parse_nice, offsetof(config, worker_nice),
     "nice value added to the report and call-site processing threads (0..19): they yield "
     "the CPUs to the HTTP threads and the intake, so POST latency holds under load"},
    {"STACKSIFT_INTAKE_PROCESSING", "1", parse_bool, offsetof(config, intake_processing),
     "1: a POSTed report whose symcaches this node has open is processed before its commit "
     "and stored processed with its issue (one write, no queue); 0: every report is queued "
     "for the workers (needs STACKSIFT_WORKERS > 0 either way)"},
    {"STACKSIFT_OFFLINE_START", "1", parse_bool, offsetof(config, offline_start),
     "1: a node whose database is unreachable at start starts all the same (requests that "
     "need it answer 503, Sentry envelopes are spooled to disk, tokens and DSN keys are "
     "checked against the table the node last saw, kept in STACKSIFT_DATA_DIR/auth-table); "
     "0: it exits with status 1, as for a bad URL"},
    {"STACKSIFT_SYMCACHE_OPEN_MAX", "64", parse_count, offsetof(config, symcache_open_max),
     "symcaches kept memory-mapped (least recently used closed first)"},
    {"STACKSIFT_STACK_CACHE_BYTES", "64M", parse_size, offsetof(config, stack_cache_bytes),
     "memory for symbolicated stacks, so a repeated stack is symbolicated once"},
    {"STACKSIFT_SIGNATURE_FRAMES", "3", parse_frames, offsetof(config, signature_frames),
     "top in-app frames that make an issue's fingerprint"},
    {"STACKSIFT_NODE_NAME", NULL, parse_node_name, offsetof(config, node_name),
     "this node's name in /metrics and the database (default: the host name)"},
    {"STACKSIFT_SYMCACHE_CACHE_MB", "4096", parse_megabytes,
     offsetof(config, symcache_cache_bytes),
     "local cache of symcaches fetched from Postgres (least recently used evicted; 0: only "
     "the one in use)"},
    {"STACKSIFT_RETENTION_DAYS", "90", parse_days, offsetof(config, retention_days),
     "days reports and their raw bodies are kept (daily partitions dropped; 0 = forever)"},
    {"STACKSIFT_AGGREGATE_RETENTION_DAYS", "400", parse_days,
     offsetof(config, aggregate_retention_days),
     "days issues and per-day counts are kept after they were last seen (0 = forever)"},
    {"STACKSIFT_DSYM_RETENTION_DAYS", "180", parse_days, offsetof(config, dsym_retention_days),
     "days a dSYM is kept after its last use, with its symcache and upload (0 = forever)"},
    {"STACKSIFT_MAINTENANCE_INTERVAL_S", "3600", parse_interval,
     offsetof(config, maintenance_interval_s),
     "retention runs at most this often, on one node at a time"},
    {"STACKSIFT_RELEASE_USERS_EXACT", "1000000", parse_users_exact,
     offsetof(config, release_users_exact),
     "devices per release and environment counted exactly; above, one in 2^k is kept and "
     "counts 2^k (docs/release-health.md)"},
    {"STACKSIFT_SESSIONS_DEVICE_CACHE", "1000000", parse_device_cache,
     offsetof(config, sessions_device_cache),
     "(release, device) pairs this node remembers as stored, so that a device's sessions "
     "skip its upsert; at most ~50 bytes each, 0 = off (docs/release-health.md)"},
    {"STACKSIFT_PUBLIC_URL", NULL, parse_str, offsetof(config, public_url),
     "this server's address as people and SDKs reach it (e.g. https://crash.example.com): "
     "links in alerts, and the host of the DSNs `stacksift project` prints (default: "
     "http://STACKSIFT_LISTEN)"},
    {"STACKSIFT_ALERTS", "1", parse_bool, offsetof(config, alerts),
     "1: this node delivers alert webhooks (any number of nodes may)"},
    {"STACKSIFT_ALERT_POLL_MS", "1000", parse_ms, offsetof(config, alert_poll_ms),
     "how often a node looks for alert events to deliver (at once when a delivery ends)"},
    {"STACKSIFT_ALERT_RETRY_MS", "1000", parse_ms, offsetof(config, alert_retry_ms),
     "first retry of a failed webhook, counted from the failed attempt; doubles each time, "
     "at most an hour"},
    {"STACKSIFT_ALERT_GIVE_UP_S", "86400", parse_seconds, offsetof(config, alert_give_up_s),
     "an alert event not delivered this long after it was made is marked failed"},
    {"STACKSIFT_ALERT_TIMEOUT_MS", "10000", parse_ms, offsetof(config, alert_timeout_ms),
     "one webhook request (connect included); a receiver that never answers holds only its "
     "own URL's 4 delivery slots this long"},
    {"STACKSIFT_ALERT_SWEEP_S", "60", parse_seconds, offsetof(config, alert_sweep_s),
     "how often spike rules are evaluated"},
    {"STACKSIFT_DSN_GRACE_S", "86400", parse_grace, offsetof(config, dsn_grace_s),
     "after `stacksift project key rotate`, the old DSN key keeps working this many seconds "
     "(0..31536000; 0: it stops at once)"},
    {"STACKSIFT_SPOOL_MB", "1024", parse_megabytes, offsetof(config, spool_bytes),
     "disk spool (STACKSIFT_DATA_DIR/spool) for Sentry envelopes accepted while Postgres is "
     "unreachable; full (or 0): 429 + Retry-After"},
};

#define NVARS (sizeof VARS / sizeof VARS[0])

const config_doc *config_docs(size_t *n)
{
    static config_doc docs[NVARS];
    for (size_t i = 0; i < NVARS; i++)
        docs[i] = (config_doc){VARS[i].name, VARS[i].default_value, VARS[i].doc};
    *n = NVARS;
    return docs;
}

err_code config_load(config *out, int require_database, buf *problems, err_info *err)
{
    memset(out, 0, sizeof *out);
    err_code rc = ERR_OK;
    for (size_t i = 0; i < NVARS; i++) {
        const config_var *v = &VARS[i];
        const char *value = getenv(v->name);
        const char *why = NULL;
        if (value == NULL)
            value = v->default_value;
        if (value == NULL) {
            if (strcmp(v->name, "STACKSIFT_DATABASE_URL") == 0 && require_database)
                why = "is required (a libpq URI like postgresql://user@host:5432/stacksift)";
        } else if (!v->parse((char *)out + v->offset, value, &why)) {
            /* why was set by the parser */
        } else {
            continue;
        }
        if (why == NULL)
            continue;
        if (problems)
            buf_printf(problems, "%s: %s\n", v->name, why);
        if (rc == ERR_OK)
            rc = err_set(err, ERR_INVALID, "%s %s", v->name, why);
    }
    if (rc != ERR_OK)
        config_reset(out);
    return rc;
}

err_code config_load_logged(config *out)
{
    buf problems;
    err_info err;
    buf_init(&problems);
    err_code rc = config_load(out, 1, &problems, &err);
    char *save = NULL;
    if (rc != ERR_OK && problems.data)
        for (char *l = strtok_r((char *)problems.data, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save))
            log_event(LOG_ERROR, "config_invalid", "problem=%s", l);
    buf_reset(&problems);
    return rc;
}

void config_reset(config *c)
{
    free(c->listen_host);
    free(c->metrics_host);
    free(c->database_url);
    free(c->data_dir);
    free(c->node_name);
    free(c->public_url);
    memset(c, 0, sizeof *c);
}
