/*
 * auth - API tokens: creating them (`stacksift token create`) and checking a request's
 * "Authorization: Bearer" header against a route's scope; DSN keys: the ingest-only
 * credentials of one project, as Sentry SDKs present them. Tokens and keys are stored as
 * SHA-256 only (store_tokens, store_projects); OpenSSL's libcrypto gives the hash, the
 * randomness and the constant-time comparison. No HTTP here: server/http passes header values
 * and maps the err_code.
 */
#ifndef STACKSIFT_AUTH_AUTH_H
#define STACKSIFT_AUTH_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "store/store.h"
#include "store/store_projects.h"

enum { /* the scopes a token grants and a route needs */
    AUTH_SCOPE_INGEST = 1 << 0, /* POST reports */
    AUTH_SCOPE_UPLOAD = 1 << 1, /* POST dSYMs */
    AUTH_SCOPE_READ = 1 << 2,   /* GET the API */
    AUTH_SCOPE_ADMIN = 1 << 3,  /* everything */
};

#define AUTH_TOKEN_MAX 96 /* bytes of a token, NUL included */

/* auth_scopes_parse - "ingest,upload,read,admin" (any subset, any order, no blanks) ->
 * AUTH_SCOPE_* bits. Errors ERR_INVALID naming the unknown or missing scope. */
err_code auth_scopes_parse(unsigned *out, const char *csv, err_info *err);

/*
 * auth_token_create - make a new token "ss_<12 hex id>_<64 hex secret>" from 32 bytes of
 * OpenSSL's CSPRNG, store its id, SHA-256, `name` and scopes; write it to `token_out`. The
 * token itself is stored nowhere. Errors ERR_INVALID (scopes, empty name), ERR_STORE,
 * ERR_INTERNAL (no randomness).
 */
err_code auth_token_create(char token_out[AUTH_TOKEN_MAX], store *s, const char *name,
                           const char *scopes_csv, err_info *err);

/* auth_tokens - every token that is not revoked and every DSN key that has not expired, in
 * memory: a request's check never waits for the database. Reloaded every
 * AUTH_TOKENS_REFRESH_MS on a thread of its own, so a new or revoked token (a new or rotated
 * key) takes effect within that on every node; while the database is away the last table
 * stays in force (a key's expiry is checked against the clock at each use all the same). */
typedef struct auth_tokens auth_tokens;
#define AUTH_TOKENS_REFRESH_MS 500

/* auth_tokens_open - load the table now (ERR_STORE if the database does not answer) and start
 * reloading it. Owned by the caller: auth_tokens_close() (NULL is a no-op). */
err_code auth_tokens_open(auth_tokens **out, store *s, err_info *err);

/* auth_tokens_open_cached - the same, keeping the table in the file `cache_path` (hashes
 * only, as the database holds them; mode 0600) after every reload that changed it. When the
 * database does not answer now, the table is read from that file instead (log line
 * tokens_from_cache) and reloaded from the database once it answers: a node can start, check
 * tokens and DSN keys, and spool Sentry envelopes while Postgres is away. Errors ERR_STORE
 * (no database and no usable file). */
err_code auth_tokens_open_cached(auth_tokens **out, store *s, const char *cache_path,
                                 err_info *err);
void auth_tokens_close(auth_tokens *t);

/*
 * auth_token_check - authenticate a bearer token against the table: find it by its id,
 * compare SHA-256 in constant time (CRYPTO_memcmp); an unknown or revoked id is compared
 * against a dummy hash, so it costs the same and gets the same message as a wrong secret.
 * *scopes = AUTH_SCOPE_* bits (admin implies all).
 * Errors  ERR_UNAUTHORIZED (malformed; or unknown, revoked or wrong: one message).
 */
err_code auth_token_check(unsigned *scopes, auth_tokens *t, const char *token, err_info *err);

/* auth_token_revoke - revoke the token whose id (12 hex digits) is `id_or_token`, or the
 * whole token given. Errors ERR_INVALID (neither), ERR_NOT_FOUND (no such active token),
 * ERR_STORE. */
err_code auth_token_revoke(store *s, const char *id_or_token, err_info *err);

/*
 * auth_check_url_token - may a request with `token` in its URL (?token=, for crash reporters
 * that can set no header, like KSCrash's standard sink) use a route that needs `need_scope`?
 * Only ingest routes take a token from the URL, and only a token whose one scope is ingest: a
 * URL ends up in device settings and proxy logs, so it must not carry more.
 * Errors  ERR_UNAUTHORIZED (not an ingest route; malformed, unknown, revoked or wrong token),
 *         ERR_FORBIDDEN (a valid token with another scope than ingest alone).
 */
err_code auth_check_url_token(auth_tokens *t, const char *token, unsigned need_scope,
                              err_info *err);

/* auth_scope_name - "ingest", "upload", "read" or "admin" for one AUTH_SCOPE_* bit. */
const char *auth_scope_name(unsigned scope);

/*
 * auth_check_header - may a request with this Authorization header value (NULL = none) use a
 * route that needs `need_scope` (one AUTH_SCOPE_* bit; 0 = no token needed)?
 * Errors  ERR_UNAUTHORIZED (no, malformed, unknown, revoked or wrong token),
 *         ERR_FORBIDDEN (a valid token without the scope).
 */
err_code auth_check_header(auth_tokens *t, const char *authorization, unsigned need_scope,
                           err_info *err);

/* ---- DSN keys ------------------------------------------------------------------------- */

/* A DSN key is 32 hex digits (as Sentry's: 128 random bits), the user part of the project's
 * DSN http://KEY@HOST/ID. It only lets a client send reports into its one project. */
#define AUTH_DSN_KEY_HEX 32
#define AUTH_DSN_KEY_MAX (AUTH_DSN_KEY_HEX + 1) /* bytes of a key, NUL included */
#define AUTH_DSN_GRACE_S_DEFAULT 86400          /* old key's life after a rotation: 24 h */

/*
 * auth_project_create - a new project `slug` (name `name`, NULL = the slug) with a fresh DSN
 * key (OpenSSL's CSPRNG), of which only the SHA-256 is stored; the key goes to key_out (shown
 * once: it cannot be recovered). *out = the project.
 * Errors  ERR_INVALID (slug, name), ERR_CONFLICT (slug taken), ERR_STORE, ERR_INTERNAL.
 */
err_code auth_project_create(store_project *out, char key_out[AUTH_DSN_KEY_MAX], store *s,
                             const char *slug, const char *name, err_info *err);

/*
 * auth_dsn_key_rotate - give project `slug` a fresh DSN key (key_out) and let its current
 * keys keep working for `grace_s` more seconds (0: they stop at once), then never again.
 * *project = the project; expires_at = when the old keys stop (RFC 3339 UTC; "" if none).
 * Errors  ERR_NOT_FOUND (no such project), ERR_STORE, ERR_INTERNAL.
 */
err_code auth_dsn_key_rotate(store_project *project, char key_out[AUTH_DSN_KEY_MAX],
                             char expires_at[32], store *s, const char *slug, unsigned grace_s,
                             err_info *err);

/*
 * auth_dsn_key_check - the project a presented DSN key `key` (NUL-terminated, as the client
 * sent it: 32 hex digits, any case) sends to: *project_id. Looked up by the key's SHA-256 in
 * the in-memory table (t; no database round trip), the hash then compared in constant time
 * (CRYPTO_memcmp); an expired key (rotated, grace period over) is refused at once, not at the
 * next reload. A route that has a project in its path must also check that it is this one.
 * Errors  ERR_UNAUTHORIZED (malformed, unknown or expired: one message).
 */
err_code auth_dsn_key_check(int64_t *project_id, auth_tokens *t, const char *key, err_info *err);

/*
 * auth_integrity_check - a body checked against the digest its client sent beside it: the
 * Bugsnag-Integrity header `header` ("sha1 " and the 40 hex digits of the SHA-1 of the body as
 * sent, any case: bugsnag-cocoa's BSGIntegrityHeaderValue) against `len` bytes at body.
 * Errors  ERR_INVALID: the header is malformed or names another algorithm, or the body's
 *         digest differs (the message gives both: a body changed on its way).
 */
err_code auth_integrity_check(const char *header, const void *body, size_t len, err_info *err);

/* What a Sentry auth header carries (auth_sentry_header_parse). */
typedef struct {
    char key[AUTH_DSN_KEY_MAX]; /* sentry_key: "" if absent (or too long: refused anyway) */
    int version;                /* sentry_version, 0 if absent or not a number */
    char client[128];           /* sentry_client ("sentry.cocoa/8.36.0"), "" if absent,
                                   truncated */
} auth_sentry;

/*
 * auth_sentry_header_parse - an "X-Sentry-Auth" or "Authorization" value of Sentry's form,
 * "Sentry sentry_key=KEY, sentry_version=7, sentry_client=NAME/VER[, ...]", read as Relay
 * reads it: the scheme "Sentry" in any case, then comma-separated name=value pairs, blanks
 * around them ignored, the "sentry_" prefix of a name optional, unknown names ignored (also
 * sentry_secret and sentry_timestamp). A sentry_key over AUTH_DSN_KEY_HEX characters is
 * refused.
 * Errors  ERR_UNAUTHORIZED (not of this form, or no sentry_key).
 */
err_code auth_sentry_header_parse(auth_sentry *out, const char *value, err_info *err);

/*
 * auth_sentry_key_find - the DSN key of a request, from the first of these that is present,
 * in Relay's order: the X-Sentry-Auth header, an Authorization header of scheme "Sentry"
 * (another scheme, e.g. Bearer, is skipped), the `sentry_key` query argument (pass the
 * decoded value). Each may be NULL. The key (not checked: auth_dsn_key_check) goes to key_out.
 * Errors  ERR_NOT_FOUND (none present: an envelope's "dsn" header may still name one, see
 *         auth_dsn_parse), ERR_UNAUTHORIZED (present but malformed).
 */
err_code auth_sentry_key_find(char key_out[AUTH_DSN_KEY_MAX], const char *x_sentry_auth,
                              const char *authorization, const char *query_sentry_key,
                              err_info *err);

/*
 * auth_dsn_parse - split a DSN string `dsn` (`len` bytes, no NUL needed) as Sentry SDKs write
 * it, "SCHEME://KEY[:SECRET]@HOST[:PORT][/PATH]/PROJECT_ID" (an envelope header's "dsn"), into
 * its key (key_out) and numeric project id (*project_id > 0).
 * Errors  ERR_INVALID (not of that form, key over AUTH_DSN_KEY_HEX characters, project id not
 *         a positive number).
 */
err_code auth_dsn_parse(char key_out[AUTH_DSN_KEY_MAX], int64_t *project_id, const char *dsn,
                        size_t len, err_info *err);

/* auth_dsn_format - "SCHEME://KEY@HOST/ID" into out[cap] (snprintf's truncation and return).
 * `public_url` is how clients reach the server ("http://crash.example.com:8080", a trailing
 * slash ignored; a bare "host:port" gets "http://"). */
int auth_dsn_format(char *out, size_t cap, const char *public_url, const char *key,
                    int64_t project_id);

#endif
