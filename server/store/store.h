/*
 * store - everything the service keeps in Postgres: the connection pool, migrations, tokens,
 * debug files and reports. All SQL text of the server lives in store.c; statements are
 * prepared once per connection and every value travels as a parameter, never in SQL text.
 *
 * Errors returned by every function here:
 *   ERR_STORE     the database is unreachable, the connection broke, or the pool had no free
 *                 connection within the timeout (the server answers 503 + Retry-After)
 *   ERR_CONFLICT  a uniqueness rule was violated
 *   ERR_INVALID   a value the database refused (e.g. a malformed UUID)
 *   ERR_NOT_FOUND the row asked for does not exist
 *   ERR_INTERNAL  any other SQL error (a bug: the message carries the SQLSTATE)
 * A statement that fails because its connection broke is retried once on a new connection.
 * Thread-safe: one store is shared by every request thread.
 */
#ifndef STACKSIFT_STORE_STORE_H
#define STACKSIFT_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"

typedef struct store store;

typedef struct {
    unsigned size;    /* most connections the pool opens */
    unsigned open;    /* connections open now (idle + in use) */
    unsigned idle;    /* open and waiting in the pool */
    unsigned waiting; /* callers waiting for a connection */
} store_pool_stats;

/* store_open - a pool of at most `pool_size` connections to `url` (libpq URI or conninfo).
 * One connection is made now so that a bad URL or a database that is down is reported at
 * once; the others are made on demand. `timeout_ms` bounds connecting and waiting for a
 * pooled connection. Owned by the caller: store_close(). Errors ERR_STORE, ERR_INVALID. */
err_code store_open(store **out, const char *url, unsigned pool_size, unsigned timeout_ms,
                    err_info *err);

/* store_close - close every connection; callers must have returned theirs. NULL is a no-op. */
void store_close(store *s);

void store_pool_stats_get(store_pool_stats *out, store *s);

/* ---- schema ---------------------------------------------------------------------------- */

/* store_schema_required - the highest migration version compiled into this binary. */
int store_schema_required(void);

/* store_schema_version - the highest applied migration version; 0 for an empty database. */
err_code store_schema_version(int *out, store *s, err_info *err);

/* store_migrate_fn - called once per migration applied now. */
typedef void (*store_migrate_fn)(int version, const char *name, double ms, void *ctx);

/* store_migrate - apply, in order, each migration compiled in from migrations/NNNN_name.sql
 * that schema_migrations does not list yet; each in its own transaction together with its
 * schema_migrations row, under an advisory lock so that two migrate runs do not race.
 * *applied = how many were applied now. Errors ERR_STORE, ERR_INTERNAL (a migration failed:
 * it is rolled back and the message names it). */
err_code store_migrate(int *applied, store *s, store_migrate_fn fn, void *ctx, err_info *err);

/* ---- tokens ---------------------------------------------------------------------------- */

typedef struct {
    uint8_t token_sha256[32]; /* SHA-256 of the whole token */
    char name[128];           /* what it is for, as given at creation */
    char scopes[64];          /* comma-separated: ingest,upload,read,admin */
    bool revoked;
} store_token;

/* store_token_insert - store a new token's public id, hash, name and scopes (comma-separated).
 * Errors ERR_CONFLICT (public id taken), ERR_INVALID (unknown scope), ERR_STORE. */
err_code store_token_insert(store *s, const char *public_id, const uint8_t token_sha256[32],
                            const char *name, const char *scopes, err_info *err);

/* store_token_get - the token whose public id is `public_id`. Errors ERR_NOT_FOUND, ERR_STORE. */
err_code store_token_get(store_token *out, store *s, const char *public_id, err_info *err);

/* ---- debug files ----------------------------------------------------------------------- */

typedef struct {
    char uuid[37];          /* upper-case with dashes */
    char arch[16];
    char name[256];         /* image name */
    bool has_dwarf;
    int64_t dwarf_bytes;
    int64_t symcache_bytes;
    int32_t functions;
    char sha256[65];        /* hex SHA-256 of the symcache */
    char uploaded_at[32];   /* RFC 3339 UTC; filled by the store */
} store_dsym;

/* What store_dsyms_insert did with one row. */
typedef enum {
    STORE_DSYM_EXISTS,   /* the UUID was recorded already: the stored record is read back */
    STORE_DSYM_CREATED,  /* a new row */
    STORE_DSYM_UPGRADED, /* the stored row came from a symbol table only and this one has
                            DWARF: the row now describes the new debug file */
} store_dsym_outcome;

/* store_dsyms_insert - record `n` debug files in one transaction. A UUID already recorded is
 * left as it is (idempotent re-upload) unless the stored one has no DWARF and the new one
 * has. outcome[i] says which; rows[i] is overwritten with the stored record.
 * Errors ERR_STORE, ERR_INVALID. */
err_code store_dsyms_insert(store_dsym_outcome *outcome, store_dsym *rows, size_t n, store *s,
                            err_info *err);

/* store_dsym_get - the row for `uuid` (any case, dashes). Errors ERR_NOT_FOUND, ERR_STORE. */
err_code store_dsym_get(store_dsym *out, store *s, const char *uuid, err_info *err);

/* store_dsyms_list - rows matching `uuid` and `name` (each NULL = any), newest first, at most
 * `limit`; *out is allocated in `a`. Errors ERR_INVALID (malformed uuid), ERR_STORE. */
err_code store_dsyms_list(store_dsym **out, size_t *n, store *s, const char *uuid,
                          const char *name, size_t limit, arena *a, err_info *err);

/* ---- reports --------------------------------------------------------------------------- */

/* What intake stores for a new report. Strings are NUL-terminated; NULL = unknown. */
typedef struct {
    const char *status;       /* "received" (to be processed) or "failed" */
    const char *format;       /* "apple_text", "ips", "json" */
    const char *content_type; /* media type as sent, without parameters */
    const uint8_t *raw;       /* the report, decoded from any Content-Encoding */
    size_t raw_len;
    const char *parsed_json;  /* parsed model as JSON text, or NULL */
    const char *app;          /* summary fields of the parsed model, or NULL */
    const char *app_version;
    const char *os_version;
    const char *missing_uuids_json; /* JSON array of UUID strings, or NULL */
    const char *error;        /* why it failed, or NULL */
} store_report_new;

/* A stored report; strings allocated in the caller's arena, NULL when the column is NULL. */
typedef struct {
    char id[37];
    const char *status;
    const char *format;
    const char *content_type;
    const char *received_at;   /* RFC 3339 UTC */
    const char *updated_at;
    int64_t raw_bytes;
    const char *parsed_json;
    const char *app;
    const char *app_version;
    const char *os_version;
    const char *missing_uuids_json; /* JSON array */
    const char *error;
} store_report;

/* store_report_insert - commit a new report and write its id (a UUID) to id_out. When this
 * returns ERR_OK the row is durable. Errors ERR_STORE, ERR_INVALID. */
err_code store_report_insert(char id_out[37], store *s, const store_report_new *r, err_info *err);

/* store_report_get - the report `id`, strings in `a`. Errors ERR_NOT_FOUND (also for an id
 * that is not a UUID), ERR_STORE. */
err_code store_report_get(store_report *out, store *s, const char *id, arena *a, err_info *err);

/* store_reports_count - how many reports have `status` (NULL = all); for tests and metrics. */
err_code store_reports_count(int64_t *out, store *s, const char *status, err_info *err);

#endif
