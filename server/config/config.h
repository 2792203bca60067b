/*
 * config - the service configuration, read from environment variables in one place
 * (config.c, STYLE §10). The rest of the server gets a `const config *`; only config.c calls
 * getenv. docs/operations.md's "Configuration" table lists the same rows (tests/test_docs.py).
 */
#ifndef STACKSIFT_CONFIG_CONFIG_H
#define STACKSIFT_CONFIG_CONFIG_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

typedef struct {
    char *listen_host;             /* STACKSIFT_LISTEN host part: IPv4/IPv6 literal or name */
    uint16_t listen_port;          /* STACKSIFT_LISTEN port part */
    char *database_url;            /* STACKSIFT_DATABASE_URL: libpq conninfo or URI; NULL if unset */
    char *data_dir;                /* STACKSIFT_DATA_DIR: symcaches/ and tmp/ live here */
    uint64_t max_report_bytes;     /* STACKSIFT_MAX_REPORT_BYTES: per report, after gunzip */
    uint64_t max_upload_bytes;     /* STACKSIFT_MAX_UPLOAD_BYTES: per dSYM upload body */
    uint64_t max_unpacked_bytes;   /* STACKSIFT_MAX_UNPACKED_BYTES: zip contents per upload */
    uint32_t max_zip_ratio;        /* STACKSIFT_MAX_ZIP_RATIO: uncompressed/compressed per entry */
    uint32_t http_threads;         /* STACKSIFT_HTTP_THREADS: libmicrohttpd thread pool */
    uint32_t request_threads;      /* STACKSIFT_REQUEST_THREADS: threads running handlers */
    uint32_t ingest_inflight;      /* STACKSIFT_INGEST_INFLIGHT: ingest requests admitted and
                                      not yet answered; more are answered 429 */
    int metrics_public;            /* STACKSIFT_METRICS_PUBLIC: /metrics without a token */
    char *metrics_host;            /* STACKSIFT_METRICS_LISTEN host (loopback); NULL = none */
    uint16_t metrics_port;         /* STACKSIFT_METRICS_LISTEN port */
    uint32_t db_pool_size;         /* STACKSIFT_DB_POOL_SIZE: Postgres connections */
    uint32_t intake_commits;       /* STACKSIFT_INTAKE_COMMITS: group commits at once (0:
                                      1 with processing at intake, else 4) */
    uint32_t intake_gather_us;     /* STACKSIFT_INTAKE_GATHER_US: a commit's longest wait for
                                      the last batch's clients (0: none) */
    uint32_t db_timeout_ms;        /* STACKSIFT_DB_TIMEOUT_MS: connect and pool wait timeout */
    uint32_t dsym_threads;         /* STACKSIFT_DSYM_THREADS: DWARF conversion threads per upload */
    uint32_t chunk_expiry_s;       /* STACKSIFT_CHUNK_EXPIRY_S: sentry-cli chunks kept this long */
    int chunk_gzip;                /* STACKSIFT_CHUNK_COMPRESSION: 1 = offer gzip, 0 = none */
    uint32_t shutdown_timeout_ms;  /* STACKSIFT_SHUTDOWN_TIMEOUT_MS: wait for in-flight requests */
    uint32_t request_timeout_s;    /* STACKSIFT_REQUEST_TIMEOUT_S: no progress in a body or an
                                      answer for this long closes the connection */
    uint32_t header_timeout_s;     /* STACKSIFT_HEADER_TIMEOUT_S: complete headers due within */
    uint32_t max_connections;      /* STACKSIFT_MAX_CONNECTIONS: open connections, in total */
    uint32_t max_connections_per_ip; /* STACKSIFT_MAX_CONNECTIONS_PER_IP: 0 = no limit */
    uint64_t min_body_rate;        /* STACKSIFT_MIN_BODY_RATE: bytes/s a body must average */
    int log_level;                 /* STACKSIFT_LOG_LEVEL: debug|info|warn|error (log.h LOG_*) */
    uint32_t workers;              /* STACKSIFT_WORKERS: report processing threads (0 = none) */
    uint32_t worker_batch;         /* STACKSIFT_WORKER_BATCH: reports per worker transaction */
    uint32_t worker_nice;          /* STACKSIFT_WORKER_NICE: added to the workers' nice value */
    int intake_processing;         /* STACKSIFT_INTAKE_PROCESSING: process at intake when warm */
    int offline_start;             /* STACKSIFT_OFFLINE_START: start while Postgres is away */
    uint32_t symcache_open_max;    /* STACKSIFT_SYMCACHE_OPEN_MAX: symcaches kept mapped */
    uint64_t stack_cache_bytes;    /* STACKSIFT_STACK_CACHE_BYTES: symbolicated-stack cache */
    uint32_t signature_frames;     /* STACKSIFT_SIGNATURE_FRAMES: frames in a fingerprint */
    char *node_name;               /* STACKSIFT_NODE_NAME: [A-Za-z0-9._-]; NULL = host name */
    uint64_t symcache_cache_bytes; /* STACKSIFT_SYMCACHE_CACHE_MB (in bytes): local symcaches */
    uint32_t retention_days;       /* STACKSIFT_RETENTION_DAYS: reports, raw bodies; 0 = keep */
    uint32_t aggregate_retention_days; /* STACKSIFT_AGGREGATE_RETENTION_DAYS: issues, counts */
    uint32_t dsym_retention_days;  /* STACKSIFT_DSYM_RETENTION_DAYS: unused dSYMs; 0 = keep */
    uint32_t maintenance_interval_s; /* STACKSIFT_MAINTENANCE_INTERVAL_S: retention runs */
    uint32_t release_users_exact;  /* STACKSIFT_RELEASE_USERS_EXACT: exact devices per release */
    uint32_t sessions_device_cache; /* STACKSIFT_SESSIONS_DEVICE_CACHE: devices remembered as
                                      stored (0 = off) */
    char *public_url;              /* STACKSIFT_PUBLIC_URL: dashboard links and the DSNs' host;
                                      NULL = from listen */
    int alerts;                    /* STACKSIFT_ALERTS: this node delivers alert webhooks */
    uint32_t alert_poll_ms;        /* STACKSIFT_ALERT_POLL_MS: idle look for due events */
    uint32_t alert_retry_ms;       /* STACKSIFT_ALERT_RETRY_MS: first retry delay */
    uint32_t alert_give_up_s;      /* STACKSIFT_ALERT_GIVE_UP_S: then failed */
    uint32_t alert_timeout_ms;     /* STACKSIFT_ALERT_TIMEOUT_MS: one webhook request */
    uint32_t alert_sweep_s;        /* STACKSIFT_ALERT_SWEEP_S: spike rules evaluated */
    uint32_t dsn_grace_s;          /* STACKSIFT_DSN_GRACE_S: a rotated DSN key's grace period */
    uint64_t spool_bytes;          /* STACKSIFT_SPOOL_MB (in bytes): Sentry envelopes spooled
                                      while Postgres is unreachable */
} config;

/* One row of the table: what `stacksift serve --help` and docs/operations.md print. */
typedef struct {
    const char *name;          /* environment variable */
    const char *default_value; /* NULL: no default */
    const char *doc;           /* one line */
} config_doc;

/* config_load - fill *out from the environment, checking every variable. Each bad variable
 * adds one line "NAME: why" to `problems` (may be NULL). Free with config_reset().
 * `require_database` makes an unset STACKSIFT_DATABASE_URL a problem.
 * Errors  ERR_INVALID (one or more bad variables; err names the first). */
err_code config_load(config *out, int require_database, buf *problems, err_info *err);

/* config_load_logged - config_load requiring the database URL, logging one "config_invalid"
 * event per bad variable. For the subcommands. Errors ERR_INVALID. */
err_code config_load_logged(config *out);

/* config_reset - free what config_load allocated; *c is zeroed. */
void config_reset(config *c);

/* config_docs - the table, `*n` rows; static storage. */
const config_doc *config_docs(size_t *n);

#endif
