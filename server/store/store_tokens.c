/*
 * store_tokens - the tokens table (see store_tokens.h). Only the SHA-256 of a token is
 * stored; server/auth creates and checks tokens.
 */
#include "store/store_tokens.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#include "store/store_internal.h"

static const store_stmt ST_TOKEN_INSERT = {
    "token_insert", "INSERT INTO tokens (public_id, token_sha256, name, scopes) "
                    "VALUES ($1, $2, $3, string_to_array($4, ','))"};
static const store_stmt ST_TOKEN_LIST = {
    "token_list", "SELECT public_id, encode(token_sha256, 'hex'), name, "
                  "array_to_string(scopes, ','), revoked_at IS NOT NULL, "
                  STORE_TS("created_at") ", coalesce(" STORE_TS("revoked_at") ", '') "
                  "FROM tokens WHERE NOT $1::boolean OR revoked_at IS NULL ORDER BY id"};
static const store_stmt ST_TOKEN_REVOKE = {
    "token_revoke", "UPDATE tokens SET revoked_at = now() "
                    "WHERE public_id = $1 AND revoked_at IS NULL RETURNING id"};
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

static void sha_from_hex(uint8_t out[32], const char *hex)
{
    for (int i = 0; i < 32; i++)
        out[i] = (uint8_t)(hex_nibble(hex[2 * i]) << 4 | hex_nibble(hex[2 * i + 1]));
}

typedef struct {
    bool active_only;
    store_token_row *rows;
    size_t n;
} list_ctx;

static err_code do_tokens_list(pconn *c, void *vctx, err_info *err)
{
    list_ctx *l = vctx;
    const char *values[1] = {l->active_only ? "t" : "f"};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_TOKEN_LIST, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res);
    store_token_row *rows = n ? xcalloc(n, sizeof *rows) : NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        int row = (int)i;
        store_token_row *t = &rows[kept];
        if (PQgetlength(res, row, 1) != 64)
            continue;   /* a malformed hash matches no token */
        store_copy(t->public_id, sizeof t->public_id, res, row, 0);
        sha_from_hex(t->token.token_sha256, PQgetvalue(res, row, 1));
        store_copy(t->token.name, sizeof t->token.name, res, row, 2);
        store_copy(t->token.scopes, sizeof t->token.scopes, res, row, 3);
        t->token.revoked = PQgetvalue(res, row, 4)[0] == 't';
        store_copy(t->created_at, sizeof t->created_at, res, row, 5);
        store_copy(t->revoked_at, sizeof t->revoked_at, res, row, 6);
        kept++;
    }
    PQclear(res);
    free(l->rows);   /* a retried run starts over */
    l->rows = rows;
    l->n = kept;
    return ERR_OK;
}

err_code store_tokens_list(store_token_row **out, size_t *n, store *s, bool active_only,
                           err_info *err)
{
    list_ctx l = {active_only, NULL, 0};
    err_code rc = store_run(s, do_tokens_list, &l, err);
    if (rc != ERR_OK) {
        free(l.rows);
        l.rows = NULL;
        l.n = 0;
    }
    *out = l.rows;
    *n = l.n;
    return rc;
}

static err_code do_token_revoke(pconn *c, void *vctx, err_info *err)
{
    const char *values[1] = {vctx};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_TOKEN_REVOKE, 1, values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0)
        rc = err_set(err, ERR_NOT_FOUND, "no active token with id %.40s", (const char *)vctx);
    PQclear(res);
    return rc;
}

err_code store_token_revoke(store *s, const char *public_id, err_info *err)
{
    return store_run(s, do_token_revoke, (void *)public_id, err);
}
