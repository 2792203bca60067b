/*
 * auth - API tokens and their check, SHA-256 and randomness through OpenSSL's libcrypto.
 *
 * A token is "ss_" + 12 hex digits (public id: finds the row) + "_" + 64 hex digits (secret).
 * The database holds only SHA-256(token); the comparison uses CRYPTO_memcmp, so its time does
 * not depend on how many leading bytes match.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth/auth.h"
#include "store/store_tokens.h"

#define PUBLIC_ID_HEX 12
#define SECRET_HEX 64
#define TOKEN_LEN (3 + PUBLIC_ID_HEX + 1 + SECRET_HEX)

static const struct {
    const char *name;
    unsigned bit;
} SCOPES[] = {
    {"ingest", AUTH_SCOPE_INGEST},
    {"upload", AUTH_SCOPE_UPLOAD},
    {"read", AUTH_SCOPE_READ},
    {"admin", AUTH_SCOPE_ADMIN},
};

err_code auth_scopes_parse(unsigned *out, const char *csv, err_info *err)
{
    *out = 0;
    const char *p = csv;
    if (!p || !*p)
        return err_set(err, ERR_INVALID, "no scopes given: use some of ingest,upload,read,admin");
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof SCOPES / sizeof SCOPES[0]; i++)
            if (strlen(SCOPES[i].name) == len && strncmp(SCOPES[i].name, p, len) == 0)
                bit = SCOPES[i].bit;
        if (!bit)
            return err_set(err, ERR_INVALID, "unknown scope '%.*s': use some of "
                           "ingest,upload,read,admin", (int)(len > 32 ? 32 : len), p);
        *out |= bit;
        p += len;
        if (*p == ',')
            p++;
    }
    return ERR_OK;
}

static void hex_encode(char *out, const uint8_t *in, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static void sha256(uint8_t out[32], const void *data, size_t len)
{
    unsigned n = 32;
    /* EVP_Digest fails only on allocation failure inside OpenSSL; the hash is then all
     * zero, which no stored token matches. */
    memset(out, 0, 32);
    (void)EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

err_code auth_token_create(char token_out[AUTH_TOKEN_MAX], store *s, const char *name,
                           const char *scopes_csv, err_info *err)
{
    unsigned scopes;
    uint8_t rnd[PUBLIC_ID_HEX / 2 + SECRET_HEX / 2], hash[32];
    char scopes_norm[64] = "";
    token_out[0] = '\0';
    if (!name || !*name)
        return err_set(err, ERR_INVALID, "a token needs a name (--name)");
    err_code rc = auth_scopes_parse(&scopes, scopes_csv, err);
    if (rc != ERR_OK)
        return rc;
    for (size_t i = 0; i < sizeof SCOPES / sizeof SCOPES[0]; i++)
        if (scopes & SCOPES[i].bit) {
            if (scopes_norm[0])
                strcat(scopes_norm, ",");
            strcat(scopes_norm, SCOPES[i].name);
        }
    if (RAND_bytes(rnd, sizeof rnd) != 1)
        return err_set(err, ERR_INTERNAL, "no random bytes from OpenSSL for a new token");
    char public_id[PUBLIC_ID_HEX + 1], secret[SECRET_HEX + 1];
    hex_encode(public_id, rnd, PUBLIC_ID_HEX / 2);
    hex_encode(secret, rnd + PUBLIC_ID_HEX / 2, SECRET_HEX / 2);
    char token[AUTH_TOKEN_MAX];
    snprintf(token, sizeof token, "ss_%s_%s", public_id, secret);
    sha256(hash, token, strlen(token));
    rc = store_token_insert(s, public_id, hash, name, scopes_norm, err);
    if (rc != ERR_OK)
        return rc;
    memcpy(token_out, token, strlen(token) + 1);
    return ERR_OK;
}

/* A tiny cache of checked tokens: without it every API request costs a database round trip. */
#define CACHE_SLOTS 64
typedef struct {
    char public_id[PUBLIC_ID_HEX + 1];
    uint8_t hash[32];
    unsigned scopes;
    time_t expires;
} cache_entry;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_entry cache[CACHE_SLOTS];

static size_t cache_slot(const char *public_id)
{
    size_t h = 5381;
    for (const char *p = public_id; *p; p++)
        h = h * 33 + (unsigned char)*p;
    return h % CACHE_SLOTS;
}

static unsigned scopes_from_csv(const char *csv)
{
    unsigned bits = 0;
    err_info ignored;
    if (auth_scopes_parse(&bits, csv, &ignored) != ERR_OK)
        bits = 0;   /* a scope this build does not know grants nothing */
    return bits;
}

err_code auth_token_check(unsigned *scopes, store *s, const char *token, err_info *err)
{
    *scopes = 0;
    size_t len = token ? strlen(token) : 0;
    if (len != TOKEN_LEN || strncmp(token, "ss_", 3) != 0 || token[3 + PUBLIC_ID_HEX] != '_')
        return err_set(err, ERR_UNAUTHORIZED, "malformed token: expected ss_<id>_<secret>");
    char public_id[PUBLIC_ID_HEX + 1];
    memcpy(public_id, token + 3, PUBLIC_ID_HEX);
    public_id[PUBLIC_ID_HEX] = '\0';
    for (int i = 0; i < PUBLIC_ID_HEX; i++)
        if (!((public_id[i] >= '0' && public_id[i] <= '9') ||
              (public_id[i] >= 'a' && public_id[i] <= 'f')))
            return err_set(err, ERR_UNAUTHORIZED, "malformed token: expected ss_<id>_<secret>");

    uint8_t hash[32];
    sha256(hash, token, len);
    time_t now = time(NULL);
    size_t slot = cache_slot(public_id);
    pthread_mutex_lock(&cache_mu);
    cache_entry hit = cache[slot];
    pthread_mutex_unlock(&cache_mu);
    if (!(strcmp(hit.public_id, public_id) == 0 && hit.expires > now)) {
        store_token t;
        err_code rc = store_token_get(&t, s, public_id, err);
        if (rc == ERR_NOT_FOUND)
            return err_set(err, ERR_UNAUTHORIZED, "unknown token %s", public_id);
        if (rc != ERR_OK)
            return rc;
        if (t.revoked)
            return err_set(err, ERR_UNAUTHORIZED, "token %s is revoked", public_id);
        memcpy(hit.public_id, public_id, sizeof public_id);
        memcpy(hit.hash, t.token_sha256, 32);
        hit.scopes = scopes_from_csv(t.scopes);
        hit.expires = now + AUTH_TOKEN_CACHE_S;
        pthread_mutex_lock(&cache_mu);
        cache[slot] = hit;
        pthread_mutex_unlock(&cache_mu);
    }
    if (CRYPTO_memcmp(hash, hit.hash, 32) != 0)
        return err_set(err, ERR_UNAUTHORIZED, "wrong secret for token %s", public_id);
    *scopes = hit.scopes & AUTH_SCOPE_ADMIN
                  ? AUTH_SCOPE_INGEST | AUTH_SCOPE_UPLOAD | AUTH_SCOPE_READ | AUTH_SCOPE_ADMIN
                  : hit.scopes;
    return ERR_OK;
}

const char *auth_scope_name(unsigned scope)
{
    switch (scope) {
    case AUTH_SCOPE_INGEST: return "ingest";
    case AUTH_SCOPE_UPLOAD: return "upload";
    case AUTH_SCOPE_READ: return "read";
    default: return "admin";
    }
}

err_code auth_check_header(store *s, const char *authorization, unsigned need_scope,
                           err_info *err)
{
    if (need_scope == 0)
        return ERR_OK;
    if (!authorization)
        return err_set(err, ERR_UNAUTHORIZED, "missing Authorization: Bearer token");
    if (strncasecmp(authorization, "Bearer ", 7) != 0)
        return err_set(err, ERR_UNAUTHORIZED, "Authorization must be 'Bearer TOKEN'");
    const char *token = authorization + 7;
    while (*token == ' ')
        token++;
    unsigned scopes;
    err_code rc = auth_token_check(&scopes, s, token, err);
    if (rc != ERR_OK)
        return rc;
    if (!(scopes & need_scope))
        return err_set(err, ERR_FORBIDDEN, "token lacks the '%s' scope",
                       auth_scope_name(need_scope));
    return ERR_OK;
}
