/*
 * store_tokens - the tokens table (see store_tokens.h). Only the SHA-256 of a token is
 * stored; server/auth creates and checks tokens.
 */
#include "store/store_tokens.h"

#include <string.h>

#include "store/store_internal.h"

static const store_stmt ST_TOKEN_INSERT = {
    "token_insert", "INSERT INTO tokens (public_id, token_sha256, name, scopes) "
                    "VALUES ($1, $2, $3, string_to_array($4, ','))"};
static const store_stmt ST_TOKEN_GET = {
    "token_get", "SELECT encode(token_sha256, 'hex'), name, array_to_string(scopes, ','), "
                 "revoked_at IS NOT NULL FROM tokens WHERE public_id = $1"};

typedef struct {
    const char *public_id, *name, *scopes;
    const uint8_t *sha;
    store_token *out;
} token_ctx;

static err_code do_token_insert(pconn *c, void *vctx, err_info *err)
{
    token_ctx *t = vctx;
    const char *values[4] = {t->public_id, (const char *)t->sha, t->name, t->scopes};
    const int lengths[4] = {0, 32, 0, 0};
    const int formats[4] = {0, 1, 0, 0};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_TOKEN_INSERT, 4, values, lengths, formats, err);
    PQclear(res);
    return rc;
}

err_code store_token_insert(store *s, const char *public_id, const uint8_t token_sha256[32],
                            const char *name, const char *scopes, err_info *err)
{
    token_ctx t = {public_id, name, scopes, token_sha256, NULL};
    return store_run(s, do_token_insert, &t, err);
}

static int hex_nibble(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static err_code do_token_get(pconn *c, void *vctx, err_info *err)
{
    token_ctx *t = vctx;
    const char *values[1] = {t->public_id};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_TOKEN_GET, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return err_set(err, ERR_NOT_FOUND, "no token with id %s", t->public_id);
    }
    const char *hex = PQgetvalue(res, 0, 0);
    if (strlen(hex) != 64) {
        PQclear(res);
        return err_set(err, ERR_INTERNAL, "token %s has a malformed hash", t->public_id);
    }
    for (int i = 0; i < 32; i++)
        t->out->token_sha256[i] = (uint8_t)(hex_nibble(hex[2 * i]) << 4 | hex_nibble(hex[2 * i + 1]));
    store_copy(t->out->name, sizeof t->out->name, res, 0, 1);
    store_copy(t->out->scopes, sizeof t->out->scopes, res, 0, 2);
    t->out->revoked = PQgetvalue(res, 0, 3)[0] == 't';
    PQclear(res);
    return ERR_OK;
}

err_code store_token_get(store_token *out, store *s, const char *public_id, err_info *err)
{
    token_ctx t = {public_id, NULL, NULL, NULL, out};
    memset(out, 0, sizeof *out);
    return store_run(s, do_token_get, &t, err);
}
