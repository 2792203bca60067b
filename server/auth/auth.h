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

/*
 * auth_token_check - authenticate a bearer token: find it by its id, compare SHA-256 in
 * constant time (CRYPTO_memcmp). *scopes = AUTH_SCOPE_* bits (admin implies all).
 * Checked tokens are cached in memory for a few seconds, so a revocation takes effect
 * within AUTH_TOKEN_CACHE_S.
 * Errors  ERR_UNAUTHORIZED (malformed, unknown, revoked or wrong token), ERR_STORE.
 */
#define AUTH_TOKEN_CACHE_S 10
err_code auth_token_check(unsigned *scopes, store *s, const char *token, err_info *err);

/* auth_scope_name - "ingest", "upload", "read" or "admin" for one AUTH_SCOPE_* bit. */
const char *auth_scope_name(unsigned scope);

/*
 * auth_check_header - may a request with this Authorization header value (NULL = none) use a
 * route that needs `need_scope` (one AUTH_SCOPE_* bit; 0 = no token needed)?
 * Errors  ERR_UNAUTHORIZED (no, malformed, unknown, revoked or wrong token; the message says
 *         which), ERR_FORBIDDEN (a valid token without the scope), ERR_STORE.
 */
err_code auth_check_header(store *s, const char *authorization, unsigned need_scope,
                           err_info *err);

#endif
