/*
 * auth - API tokens: creating them (`stacksift token create`) and checking a request's
 * "Authorization: Bearer" header against a route's scope. Tokens are stored as SHA-256 only
 * (store_tokens); OpenSSL's libcrypto gives the hash, the randomness and the constant-time
 * comparison. No HTTP here: server/http passes the header's value and maps the err_code.
 */
#ifndef STACKSIFT_AUTH_AUTH_H
#define STACKSIFT_AUTH_AUTH_H

#include "base/err.h"
#include "store/store.h"

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

/* auth_tokens - every token that is not revoked, in memory: a request's check never waits
 * for the database. Reloaded every AUTH_TOKENS_REFRESH_MS on a thread of its own, so a new
 * or revoked token takes effect within that on every node; while the database is away the
 * last table stays in force. */
typedef struct auth_tokens auth_tokens;
#define AUTH_TOKENS_REFRESH_MS 500

/* auth_tokens_open - load the table now (ERR_STORE if the database does not answer) and start
 * reloading it. Owned by the caller: auth_tokens_close() (NULL is a no-op). */
err_code auth_tokens_open(auth_tokens **out, store *s, err_info *err);
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

#endif
