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
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth/auth.h"
#include "base/xalloc.h"
#include "log/log.h"
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

/* ---- the token table: every usable token in memory, reloaded twice a second ------------- */

typedef struct {
    char id[PUBLIC_ID_HEX + 1];
    uint8_t hash[32];
    unsigned scopes;     /* AUTH_SCOPE_* bits, admin expanded to all */
} tok_entry;

struct auth_tokens {
    store *s;
    pthread_rwlock_t lock;   /* entries/n: readers check, the refresher swaps */
    tok_entry *entries;      /* sorted by id */
    size_t n;
    uint8_t dummy[32];       /* compared against when the id is unknown: same work either way */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, failing;
    pthread_t thread;
};

static unsigned scopes_from_csv(const char *csv)
{
    unsigned bits = 0;
    err_info ignored;
    if (auth_scopes_parse(&bits, csv, &ignored) != ERR_OK)
        bits = 0;   /* a scope this build does not know grants nothing */
    if (bits & AUTH_SCOPE_ADMIN)
        bits = AUTH_SCOPE_INGEST | AUTH_SCOPE_UPLOAD | AUTH_SCOPE_READ | AUTH_SCOPE_ADMIN;
    return bits;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const tok_entry *)a)->id, ((const tok_entry *)b)->id);
}

/* Load the tokens that are not revoked and swap them in. */
static err_code tokens_reload(auth_tokens *t, err_info *err)
{
    store_token_row *rows;
    size_t n;
    err_code rc = store_tokens_list(&rows, &n, t->s, true, err);
    if (rc != ERR_OK)
        return rc;
    tok_entry *e = xcalloc(n ? n : 1, sizeof *e);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strlen(rows[i].public_id) != PUBLIC_ID_HEX)
            continue;
        memcpy(e[k].id, rows[i].public_id, PUBLIC_ID_HEX + 1);
        memcpy(e[k].hash, rows[i].token.token_sha256, 32);
        e[k].scopes = scopes_from_csv(rows[i].token.scopes);
        k++;
    }
    free(rows);
    qsort(e, k, sizeof *e, entry_cmp);
    pthread_rwlock_wrlock(&t->lock);
    tok_entry *old = t->entries;
    t->entries = e;
    t->n = k;
    pthread_rwlock_unlock(&t->lock);
    free(old);
    return ERR_OK;
}

static void *tokens_main(void *arg)
{
    auth_tokens *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += AUTH_TOKENS_REFRESH_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->mu);
        err_info err = {0};
        err_code rc = tokens_reload(t, &err);
        pthread_mutex_lock(&t->mu);
        /* While the database is away the last table stays in force: tokens cannot be created
         * or revoked meanwhile anyway. One line when that starts and one when it ends. */
        if (rc != ERR_OK && !t->failing)
            log_event(LOG_WARN, "tokens_reload_failed", "message=%s", err.msg);
        else if (rc == ERR_OK && t->failing)
            log_event(LOG_INFO, "tokens_reloaded", "message=%s", "the token table is current again");
        t->failing = rc != ERR_OK;
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

err_code auth_tokens_open(auth_tokens **out, store *s, err_info *err)
{
    *out = NULL;
    auth_tokens *t = xcalloc(1, sizeof *t);
    t->s = s;
    pthread_rwlock_init(&t->lock, NULL);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (RAND_bytes(t->dummy, sizeof t->dummy) != 1)
        memset(t->dummy, 0xa5, sizeof t->dummy);   /* no token hashes to this either */
    err_code rc = tokens_reload(t, err);
    if (rc == ERR_OK && pthread_create(&t->thread, NULL, tokens_main, t) != 0)
        rc = err_set(err, ERR_INTERNAL, "cannot start the token table's thread");
    if (rc != ERR_OK) {
        t->stop = true;   /* no thread to join */
        free(t->entries);
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        pthread_rwlock_destroy(&t->lock);
        free(t);
        return rc;
    }
    *out = t;
    return ERR_OK;
}

void auth_tokens_close(auth_tokens *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    free(t->entries);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    pthread_rwlock_destroy(&t->lock);
    free(t);
}

err_code auth_token_check(unsigned *scopes, auth_tokens *t, const char *token, err_info *err)
{
    *scopes = 0;
    size_t len = token ? strlen(token) : 0;
    if (len != TOKEN_LEN || strncmp(token, "ss_", 3) != 0 || token[3 + PUBLIC_ID_HEX] != '_')
        return err_set(err, ERR_UNAUTHORIZED, "malformed token: expected ss_<id>_<secret>");
    tok_entry key = {0};
    memcpy(key.id, token + 3, PUBLIC_ID_HEX);
    for (int i = 0; i < PUBLIC_ID_HEX; i++)
        if (!((key.id[i] >= '0' && key.id[i] <= '9') || (key.id[i] >= 'a' && key.id[i] <= 'f')))
            return err_set(err, ERR_UNAUTHORIZED, "malformed token: expected ss_<id>_<secret>");
    uint8_t hash[32];
    sha256(hash, token, len);
    /* An unknown (or revoked) id is compared against the dummy hash: the same steps, the same
     * time and the same answer as a wrong secret, so neither tells which ids exist. */
    pthread_rwlock_rdlock(&t->lock);
    const tok_entry *e = bsearch(&key, t->entries, t->n, sizeof key, entry_cmp);
    const uint8_t *want = e ? e->hash : t->dummy;
    unsigned granted = e ? e->scopes : 0;
    int differ = CRYPTO_memcmp(hash, want, 32);
    pthread_rwlock_unlock(&t->lock);
    if (differ != 0 || !e)
        return err_set(err, ERR_UNAUTHORIZED, "token not accepted: unknown, revoked or wrong");
    *scopes = granted;
    return ERR_OK;
}

err_code auth_token_revoke(store *s, const char *id_or_token, err_info *err)
{
    char id[PUBLIC_ID_HEX + 1];
    const char *p = id_or_token ? id_or_token : "";
    if (strncmp(p, "ss_", 3) == 0)   /* a whole token: its id */
        p += 3;
    size_t n = strspn(p, "0123456789abcdef");
    if (n != PUBLIC_ID_HEX || (p[n] != '\0' && p[n] != '_'))
        return err_set(err, ERR_INVALID, "'%.40s' is not a token id (12 hex digits, as `stacksift "
                       "token list` shows) or a token", id_or_token ? id_or_token : "");
    memcpy(id, p, PUBLIC_ID_HEX);
    id[PUBLIC_ID_HEX] = '\0';
    return store_token_revoke(s, id, err);
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

err_code auth_check_header(auth_tokens *t, const char *authorization, unsigned need_scope,
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
    err_code rc = auth_token_check(&scopes, t, token, err);
    if (rc != ERR_OK)
        return rc;
    if (!(scopes & need_scope))
        return err_set(err, ERR_FORBIDDEN, "token lacks the '%s' scope",
                       auth_scope_name(need_scope));
    return ERR_OK;
}
