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
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "auth/auth.h"
#include "base/buf.h"
#include "base/xalloc.h"
#include "log/log.h"
#include "store/store_projects.h"
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

err_code auth_integrity_check(const char *header, const void *body, size_t len, err_info *err)
{
    /* "sha1 <hex>"; the algorithm's name in any case, one space or more */
    if (strncasecmp(header, "sha1 ", 5) != 0)
        return err_set(err, ERR_INVALID, "Bugsnag-Integrity '%.40s' is not \"sha1 \" and a hex "
                       "digest (the only kind of digest Bugsnag's clients send)", header);
    const char *hex = header + 5;
    while (*hex == ' ')
        hex++;
    size_t n = strlen(hex);
    while (n > 0 && (hex[n - 1] == ' ' || hex[n - 1] == '\t'))
        n--;
    bool ok = n == 40;
    for (size_t i = 0; ok && i < n; i++)
        ok = isxdigit((unsigned char)hex[i]) != 0;
    if (!ok)
        return err_set(err, ERR_INVALID, "Bugsnag-Integrity: the SHA-1 must be 40 hex digits");
    uint8_t md[20];
    unsigned mdn = sizeof md;
    if (EVP_Digest(body, len, md, &mdn, EVP_sha1(), NULL) != 1)
        return err_set(err, ERR_INTERNAL, "Bugsnag-Integrity: OpenSSL's SHA-1 failed");
    char got[41];
    hex_encode(got, md, sizeof md);
    if (strncasecmp(got, hex, 40) != 0)
        return err_set(err, ERR_INVALID, "Bugsnag-Integrity: the body's SHA-1 is %s, the header "
                       "says %.40s (the body changed on its way)", got, hex);
    return ERR_OK;
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
    pthread_rwlock_t lock;   /* entries/n, keys/nkeys: readers check, the refresher swaps */
    tok_entry *entries;      /* sorted by id */
    size_t n;
    store_dsn_key *keys;     /* DSN keys not expired at the last reload, sorted by hash */
    size_t nkeys;
    uint8_t dummy[32];       /* compared against when the id is unknown: same work either way */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, failing;
    pthread_t thread;
    char *cache_path;            /* where the table is kept for a start without the database;
                                    NULL: nowhere */
    uint8_t cache_digest[32];    /* SHA-256 of the cache file last written or read */
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

static int key_cmp(const void *a, const void *b)
{
    return memcmp(((const store_dsn_key *)a)->key_sha256, ((const store_dsn_key *)b)->key_sha256,
                  32);
}

/* Load the tokens that are not revoked and the DSN keys that have not expired, and swap them
 * in together. */
static err_code tokens_reload(auth_tokens *t, err_info *err)
{
    store_token_row *rows;
    size_t n, nkeys;
    store_dsn_key *keys;
    err_code rc = store_dsn_keys_list(&keys, &nkeys, t->s, err);
    if (rc != ERR_OK)
        return rc;
    if (nkeys > 1)   /* keys is NULL when there are none: not for qsort */
        qsort(keys, nkeys, sizeof *keys, key_cmp);
    rc = store_tokens_list(&rows, &n, t->s, true, err);
    if (rc != ERR_OK) {
        free(keys);
        return rc;
    }
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
    store_dsn_key *old_keys = t->keys;
    t->entries = e;
    t->n = k;
    t->keys = keys;
    t->nkeys = nkeys;
    pthread_rwlock_unlock(&t->lock);
    free(old);
    free(old_keys);
    return ERR_OK;
}

/* ---- the table on disk: a node that starts while the database is away ----------------------
 *
 * After each reload that changed it, the table is written to the node's data directory (the
 * same hashes the database holds, never a token or key; mode 0600; write, fsync, rename): a
 * node started while Postgres is unreachable checks tokens and DSN keys against it, so it can
 * take the Sentry envelopes it spools. Lines:
 *   stacksift-auth-cache 1
 *   t <public id> <sha256 hex> <scope bits>
 *   k <sha256 hex> <project id> <expires, unix s, 0 = current>
 */

#define AUTH_CACHE_MAGIC "stacksift-auth-cache 1\n"

/* The cache file's text of the table now, in `b` (buf_init'd by the caller). */
static void cache_render(buf *b, const auth_tokens *t)
{
    buf_append_str(b, AUTH_CACHE_MAGIC);
    char hex[65];
    for (size_t i = 0; i < t->n; i++) {
        hex_encode(hex, t->entries[i].hash, 32);
        buf_printf(b, "t %s %s %u\n", t->entries[i].id, hex, t->entries[i].scopes);
    }
    for (size_t i = 0; i < t->nkeys; i++) {
        hex_encode(hex, t->keys[i].key_sha256, 32);
        buf_printf(b, "k %s %" PRId64 " %" PRId64 "\n", hex, t->keys[i].project_id,
                   t->keys[i].expires_unix);
    }
}

/* Write the table (held by the caller's read lock or the only thread) if it changed. */
static void cache_write(auth_tokens *t)
{
    buf text;
    buf_init(&text);
    cache_render(&text, t);
    uint8_t digest[32];
    sha256(digest, text.data, text.len);
    if (memcmp(digest, t->cache_digest, 32) == 0) {
        buf_reset(&text);
        return;
    }
    size_t pl = strlen(t->cache_path) + 8;
    char *tmp = xmalloc(pl);
    snprintf(tmp, pl, "%s.tmp", t->cache_path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, text.data, text.len) == (ssize_t)text.len && fsync(fd) == 0;
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    ok = ok && rename(tmp, t->cache_path) == 0;
    if (ok)
        memcpy(t->cache_digest, digest, 32);
    else
        log_event(LOG_WARN, "tokens_cache_write_failed", "path=%s message=%s", t->cache_path,
                  strerror(errno));
    if (!ok)
        unlink(tmp);
    free(tmp);
    buf_reset(&text);
}

static bool hex32_decode(uint8_t out[32], const char *hex)
{
    if (strlen(hex) != 64)
        return false;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (!isxdigit((unsigned char)hex[2 * i]) || !isxdigit((unsigned char)hex[2 * i + 1]) ||
            sscanf(hex + 2 * i, "%2x", &v) != 1)
            return false;
        out[i] = (uint8_t)v;
    }
    return true;
}

/* Load the table from the cache file. Errors ERR_NOT_FOUND (no file), ERR_INVALID. */
static err_code cache_read(auth_tokens *t, err_info *err)
{
    FILE *f = fopen(t->cache_path, "re");
    if (f == NULL)
        return err_set(err, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO, "%s: %s", t->cache_path,
                       strerror(errno));
    char line[256];
    size_t n = 0, nkeys = 0, cap = 16, kcap = 16;
    tok_entry *e = xcalloc(cap, sizeof *e);
    store_dsn_key *keys = xcalloc(kcap, sizeof *keys);
    bool ok = fgets(line, sizeof line, f) != NULL && strcmp(line, AUTH_CACHE_MAGIC) == 0;
    while (ok && fgets(line, sizeof line, f) != NULL) {
        char id[PUBLIC_ID_HEX + 2], hex[66];
        unsigned scopes;
        int64_t project, expires;
        if (line[0] == 't' && sscanf(line, "t %13s %65s %u", id, hex, &scopes) == 3 &&
            strlen(id) == PUBLIC_ID_HEX) {
            if (n == cap)
                e = xrealloc(e, (cap *= 2) * sizeof *e);
            memcpy(e[n].id, id, PUBLIC_ID_HEX + 1);
            e[n].scopes = scopes;
            ok = hex32_decode(e[n++].hash, hex);
        } else if (line[0] == 'k' && sscanf(line, "k %65s %" SCNd64 " %" SCNd64, hex, &project,
                                            &expires) == 3) {
            if (nkeys == kcap)
                keys = xrealloc(keys, (kcap *= 2) * sizeof *keys);
            keys[nkeys].project_id = project;
            keys[nkeys].expires_unix = expires;
            ok = hex32_decode(keys[nkeys++].key_sha256, hex);
        } else {
            ok = false;
        }
    }
    fclose(f);
    if (!ok) {
        free(e);
        free(keys);
        return err_set(err, ERR_INVALID, "%s: not a token table this build wrote",
                       t->cache_path);
    }
    qsort(e, n, sizeof *e, entry_cmp);
    qsort(keys, nkeys, sizeof *keys, key_cmp);
    pthread_rwlock_wrlock(&t->lock);
    free(t->entries);
    free(t->keys);
    t->entries = e;
    t->n = n;
    t->keys = keys;
    t->nkeys = nkeys;
    pthread_rwlock_unlock(&t->lock);
    buf text;
    buf_init(&text);
    cache_render(&text, t);
    sha256(t->cache_digest, text.data, text.len);
    buf_reset(&text);
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
        if (rc == ERR_OK && t->cache_path != NULL)
            cache_write(t);   /* only this thread swaps the table: no lock needed to read it */
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
    return auth_tokens_open_cached(out, s, NULL, err);
}

err_code auth_tokens_open_cached(auth_tokens **out, store *s, const char *cache_path,
                                 err_info *err)
{
    *out = NULL;
    auth_tokens *t = xcalloc(1, sizeof *t);
    t->s = s;
    t->cache_path = cache_path ? xstrdup(cache_path) : NULL;
    pthread_rwlock_init(&t->lock, NULL);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (RAND_bytes(t->dummy, sizeof t->dummy) != 1)
        memset(t->dummy, 0xa5, sizeof t->dummy);   /* no token hashes to this either */
    err_code rc = tokens_reload(t, err);
    if (rc == ERR_OK && t->cache_path != NULL) {
        cache_write(t);
    } else if (rc == ERR_STORE && t->cache_path != NULL) {
        /* the database is away: the table this node last saw, until it answers */
        err_info cerr = {0};
        if (cache_read(t, &cerr) == ERR_OK) {
            log_event(LOG_WARN, "tokens_from_cache", "tokens=%zu dsn_keys=%zu message=%s", t->n,
                      t->nkeys, err->msg);
            t->failing = true;
            rc = ERR_OK;
        } else {
            log_event(LOG_WARN, "tokens_cache_unusable", "message=%s", cerr.msg);
        }
    }
    if (rc == ERR_OK && pthread_create(&t->thread, NULL, tokens_main, t) != 0)
        rc = err_set(err, ERR_INTERNAL, "cannot start the token table's thread");
    if (rc != ERR_OK) {
        t->stop = true;   /* no thread to join */
        free(t->entries);
        free(t->keys);
        free(t->cache_path);
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
    free(t->keys);
    free(t->cache_path);
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
    /* The last token this thread hashed, and its hash: a client sends the same token with
     * every request, and each EVP_Digest (a context allocated, SHA-256 looked up) was ~3% of
     * a report's CPU. The token is compared in constant time, as the hashes are below. */
    static _Thread_local struct {
        bool set;
        char token[TOKEN_LEN];
        uint8_t hash[32];
    } last;
    uint8_t hash[32];
    if (last.set && CRYPTO_memcmp(last.token, token, TOKEN_LEN) == 0) {
        memcpy(hash, last.hash, 32);
    } else {
        sha256(hash, token, len);
        memcpy(last.token, token, TOKEN_LEN);
        memcpy(last.hash, hash, 32);
        last.set = true;
    }
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

/* ---- DSN keys ------------------------------------------------------------------------- */

/* A fresh key: AUTH_DSN_KEY_HEX lower-case hex digits from the CSPRNG, and its SHA-256. */
static err_code dsn_key_new(char key[AUTH_DSN_KEY_MAX], uint8_t hash[32], err_info *err)
{
    uint8_t rnd[AUTH_DSN_KEY_HEX / 2];
    if (RAND_bytes(rnd, sizeof rnd) != 1)
        return err_set(err, ERR_INTERNAL, "no random bytes from OpenSSL for a new DSN key");
    hex_encode(key, rnd, sizeof rnd);
    sha256(hash, key, AUTH_DSN_KEY_HEX);
    return ERR_OK;
}

err_code auth_project_create(store_project *out, char key_out[AUTH_DSN_KEY_MAX], store *s,
                             const char *slug, const char *name, err_info *err)
{
    char key[AUTH_DSN_KEY_MAX];
    uint8_t hash[32];
    key_out[0] = '\0';
    memset(out, 0, sizeof *out);
    err_code rc = dsn_key_new(key, hash, err);
    if (rc == ERR_OK)
        rc = store_project_create(out, s, slug, name, hash, err);
    if (rc == ERR_OK)
        memcpy(key_out, key, sizeof key);
    return rc;
}

err_code auth_dsn_key_rotate(store_project *project, char key_out[AUTH_DSN_KEY_MAX],
                             char expires_at[32], store *s, const char *slug, unsigned grace_s,
                             err_info *err)
{
    char key[AUTH_DSN_KEY_MAX];
    uint8_t hash[32];
    key_out[0] = '\0';
    expires_at[0] = '\0';
    err_code rc = store_project_find_slug(project, s, slug, err);
    if (rc == ERR_OK)
        rc = dsn_key_new(key, hash, err);
    if (rc == ERR_OK)
        rc = store_dsn_key_rotate(expires_at, s, project->id, hash, grace_s, err);
    if (rc == ERR_OK)
        memcpy(key_out, key, sizeof key);
    return rc;
}

err_code auth_dsn_key_check(int64_t *project_id, auth_tokens *t, const char *key, err_info *err)
{
    *project_id = 0;
    char norm[AUTH_DSN_KEY_MAX];
    size_t len = key ? strlen(key) : 0;
    if (len != AUTH_DSN_KEY_HEX)
        return err_set(err, ERR_UNAUTHORIZED, "malformed DSN key: expected %d hex digits",
                       AUTH_DSN_KEY_HEX);
    for (size_t i = 0; i < len; i++) {
        if (!isxdigit((unsigned char)key[i]))
            return err_set(err, ERR_UNAUTHORIZED, "malformed DSN key: expected %d hex digits",
                           AUTH_DSN_KEY_HEX);
        norm[i] = (char)tolower((unsigned char)key[i]);
    }
    norm[len] = '\0';
    store_dsn_key want = {0};
    sha256(want.key_sha256, norm, len);
    /* Found by its hash: the search's timing can tell at most how many leading bytes of
     * SHA-256(key) some stored hash shares, which says nothing usable about any key. The
     * constant-time compare then checks the whole hash (against a dummy when not found, so
     * both paths do the same work). */
    pthread_rwlock_rdlock(&t->lock);
    const store_dsn_key *e = t->nkeys == 0 ? NULL   /* keys is NULL then: not for bsearch */
                           : bsearch(&want, t->keys, t->nkeys, sizeof want, key_cmp);
    int differ = CRYPTO_memcmp(want.key_sha256, e ? e->key_sha256 : t->dummy, 32);
    int64_t project = e ? e->project_id : 0, expires = e ? e->expires_unix : 0;
    pthread_rwlock_unlock(&t->lock);
    if (differ != 0 || !e || (expires != 0 && (int64_t)time(NULL) >= expires))
        return err_set(err, ERR_UNAUTHORIZED, "DSN key not accepted: unknown, expired or wrong");
    *project_id = project;
    return ERR_OK;
}

/* Copy [p, p+n) to out[cap] if it fits; false if not. */
static bool copy_span(char *out, size_t cap, const char *p, size_t n)
{
    if (n >= cap)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

err_code auth_sentry_header_parse(auth_sentry *out, const char *value, err_info *err)
{
    memset(out, 0, sizeof *out);
    const char *p = value ? value : "";
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, "Sentry", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
        return err_set(err, ERR_UNAUTHORIZED, "Sentry auth must be 'Sentry sentry_key=KEY, "
                       "sentry_version=7, ...'");
    p += 6;
    bool too_long = false;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (eq) {
            const char *n0 = p, *n1 = eq, *v0 = eq + 1, *v1 = end;
            while (n0 < n1 && (*n0 == ' ' || *n0 == '\t'))
                n0++;
            while (n1 > n0 && (n1[-1] == ' ' || n1[-1] == '\t'))
                n1--;
            while (v0 < v1 && (*v0 == ' ' || *v0 == '\t'))
                v0++;
            while (v1 > v0 && (v1[-1] == ' ' || v1[-1] == '\t'))
                v1--;
            size_t nlen = (size_t)(n1 - n0), vlen = (size_t)(v1 - v0);
            if (nlen > 7 && strncmp(n0, "sentry_", 7) == 0) {
                n0 += 7;
                nlen -= 7;
            }
            if (nlen == 3 && strncmp(n0, "key", 3) == 0) {
                if (!copy_span(out->key, sizeof out->key, v0, vlen))
                    too_long = true;
            } else if (nlen == 7 && strncmp(n0, "version", 7) == 0) {
                char num[16];
                if (copy_span(num, sizeof num, v0, vlen) && vlen > 0 &&
                    strspn(num, "0123456789") == vlen)
                    out->version = atoi(num);
            } else if (nlen == 6 && strncmp(n0, "client", 6) == 0) {
                size_t n = vlen < sizeof out->client ? vlen : sizeof out->client - 1;
                memcpy(out->client, v0, n);
                out->client[n] = '\0';
            }
        }
        p = *end ? end + 1 : end;
    }
    if (too_long)
        return err_set(err, ERR_UNAUTHORIZED, "malformed DSN key: expected %d hex digits",
                       AUTH_DSN_KEY_HEX);
    if (!out->key[0])
        return err_set(err, ERR_UNAUTHORIZED, "Sentry auth header has no sentry_key");
    return ERR_OK;
}

/* Is `value` an Authorization header of scheme "Sentry"? */
static bool sentry_scheme(const char *value)
{
    while (*value == ' ' || *value == '\t')
        value++;
    return strncasecmp(value, "Sentry", 6) == 0 && (value[6] == ' ' || value[6] == '\t');
}

err_code auth_sentry_key_find(char key_out[AUTH_DSN_KEY_MAX], const char *x_sentry_auth,
                              const char *authorization, const char *query_sentry_key,
                              err_info *err)
{
    key_out[0] = '\0';
    const char *header = x_sentry_auth ? x_sentry_auth
                       : authorization && sentry_scheme(authorization) ? authorization : NULL;
    if (header) {
        auth_sentry a;
        err_code rc = auth_sentry_header_parse(&a, header, err);
        if (rc != ERR_OK)
            return rc;
        memcpy(key_out, a.key, sizeof a.key);
        return ERR_OK;
    }
    if (query_sentry_key) {
        if (!query_sentry_key[0] ||
            !copy_span(key_out, AUTH_DSN_KEY_MAX, query_sentry_key, strlen(query_sentry_key)))
            return err_set(err, ERR_UNAUTHORIZED, "malformed DSN key: expected %d hex digits",
                           AUTH_DSN_KEY_HEX);
        return ERR_OK;
    }
    return err_set(err, ERR_NOT_FOUND, "no DSN key: send X-Sentry-Auth: Sentry sentry_key=KEY, "
                   "Authorization: Sentry sentry_key=KEY or ?sentry_key=KEY");
}

err_code auth_dsn_parse(char key_out[AUTH_DSN_KEY_MAX], int64_t *project_id, const char *dsn,
                        size_t len, err_info *err)
{
    key_out[0] = '\0';
    *project_id = 0;
    const char *p = dsn, *end = dsn + len;
    const char *scheme_end = NULL;
    for (const char *q = p; q + 2 < end; q++)
        if (q[0] == ':' && q[1] == '/' && q[2] == '/') {
            scheme_end = q;
            break;
        }
    if (!scheme_end || scheme_end == p)
        return err_set(err, ERR_INVALID, "DSN is not of the form SCHEME://KEY@HOST/PROJECT_ID");
    const char *auth0 = scheme_end + 3;
    const char *slash = memchr(auth0, '/', (size_t)(end - auth0));
    const char *authority_end = slash ? slash : end;
    const char *at = NULL;
    for (const char *q = auth0; q < authority_end; q++)
        if (*q == '@')
            at = q;   /* the last '@' ends the user part */
    if (!at || at == auth0)
        return err_set(err, ERR_INVALID, "DSN has no key: expected SCHEME://KEY@HOST/PROJECT_ID");
    const char *colon = memchr(auth0, ':', (size_t)(at - auth0));
    const char *key_end = colon ? colon : at;
    if (key_end == auth0 || !copy_span(key_out, AUTH_DSN_KEY_MAX, auth0, (size_t)(key_end - auth0)))
        return err_set(err, ERR_INVALID, "DSN key is empty or longer than %d characters",
                       AUTH_DSN_KEY_HEX);
    if (at + 1 == authority_end || !slash) {
        key_out[0] = '\0';
        return err_set(err, ERR_INVALID, "DSN has no host or no project id: expected "
                       "SCHEME://KEY@HOST/PROJECT_ID");
    }
    /* the project id is the last path segment (a trailing slash allowed) */
    const char *e = end;
    if (e > slash + 1 && e[-1] == '/')
        e--;
    const char *s0 = e;
    while (s0 > slash + 1 && s0[-1] != '/')
        s0--;
    int64_t id = 0;
    bool ok = s0 < e && e - s0 <= 18;
    for (const char *q = s0; ok && q < e; q++) {
        ok = *q >= '0' && *q <= '9';
        id = id * 10 + (*q - '0');
    }
    if (!ok || id <= 0) {
        key_out[0] = '\0';
        return err_set(err, ERR_INVALID, "DSN project id '%.*s' is not a positive number",
                       (int)(e - s0 > 40 ? 40 : e - s0), s0);
    }
    *project_id = id;
    return ERR_OK;
}

int auth_dsn_format(char *out, size_t cap, const char *public_url, const char *key,
                    int64_t project_id)
{
    const char *u = public_url ? public_url : "";
    const char *sep = strstr(u, "://");
    const char *scheme = "http";
    int scheme_len = 4;
    const char *host = u;
    if (sep) {
        scheme = u;
        scheme_len = (int)(sep - u);
        host = sep + 3;
    }
    size_t hl = strlen(host);
    while (hl > 0 && host[hl - 1] == '/')
        hl--;
    return snprintf(out, cap, "%.*s://%s@%.*s/%lld", scheme_len, scheme, key, (int)hl, host,
                    (long long)project_id);
}
err_code auth_check_url_token(auth_tokens *t, const char *token, unsigned need_scope,
                              err_info *err)
{
    if (need_scope != AUTH_SCOPE_INGEST)
        return err_set(err, ERR_UNAUTHORIZED, "a token in the URL (?token=) is accepted by the "
                       "ingest routes only: send \"Authorization: Bearer TOKEN\"");
    unsigned scopes;
    err_code rc = auth_token_check(&scopes, t, token, err);
    if (rc != ERR_OK)
        return rc;
    if (scopes != AUTH_SCOPE_INGEST)
        return err_set(err, ERR_FORBIDDEN, "a token in the URL (?token=) must have the ingest "
                       "scope and no other (a URL ends up in app settings and logs): create one "
                       "with --scopes ingest");
    return ERR_OK;
}
