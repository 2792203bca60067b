/*
 * store_projects - the projects and dsn_keys tables (see store_projects.h). Creating a project
 * with its first key and rotating a key are each one statement (data-modifying CTEs): one
 * transaction without BEGIN/COMMIT round trips.
 */
#include "store/store_projects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "store/store_internal.h"

#define PROJECT_COLUMNS(p)                                                                    \
    p "id::text, " p "slug, " p "name, " STORE_TS(p "created_at") ", "                        \
    "(SELECT count(*) FROM dsn_keys k WHERE k.project_id = " p "id "                          \
    "AND (k.expires_at IS NULL OR k.expires_at > now()))::text"

static const store_stmt ST_PROJECT_CREATE = {
    "project_create",
    "WITH p AS (INSERT INTO projects (slug, name) VALUES ($1, $2) RETURNING *), "
    "k AS (INSERT INTO dsn_keys (project_id, key_sha256) SELECT p.id, $3 FROM p) "
    "SELECT p.id::text, p.slug, p.name, " STORE_TS("p.created_at") ", '1' FROM p"};
static const store_stmt ST_PROJECT_LIST = {
    "project_list", "SELECT " PROJECT_COLUMNS("p.") " FROM projects p ORDER BY p.id"};
static const store_stmt ST_PROJECT_BY_SLUG = {
    "project_by_slug", "SELECT " PROJECT_COLUMNS("p.") " FROM projects p WHERE p.slug = $1"};
static const store_stmt ST_PROJECT_BY_ID = {
    "project_by_id", "SELECT " PROJECT_COLUMNS("p.") " FROM projects p WHERE p.id = $1::int8"};
static const store_stmt ST_DSN_KEY_ADD = {
    "dsn_key_add", "INSERT INTO dsn_keys (project_id, key_sha256) "
                   "SELECT id, $2 FROM projects WHERE id = $1::int8 RETURNING id"};
/* The new key is inserted in the same statement as the old ones get their expiry: an SDK
 * never sees a moment with no key of the project accepted. */
static const store_stmt ST_DSN_KEY_ROTATE = {
    "dsn_key_rotate",
    "WITH e AS (UPDATE dsn_keys SET expires_at = now() + make_interval(secs => $3::int8) "
    "WHERE project_id = $1::int8 AND expires_at IS NULL "
    "AND EXISTS (SELECT 1 FROM projects WHERE id = $1::int8) RETURNING expires_at), "
    "k AS (INSERT INTO dsn_keys (project_id, key_sha256) "
    "SELECT id, $2 FROM projects WHERE id = $1::int8 RETURNING id) "
    "SELECT (SELECT count(*) FROM k)::text, "
    "coalesce((SELECT " STORE_TS("max(expires_at)") " FROM e), '')"};
static const store_stmt ST_DSN_KEY_LIST = {
    "dsn_key_list", "SELECT encode(key_sha256, 'hex'), project_id::text, "
                    "coalesce(ceil(extract(epoch FROM expires_at))::int8, 0)::text "
                    "FROM dsn_keys WHERE expires_at IS NULL OR expires_at > now()"};
static const store_stmt ST_DSN_KEY_LOOKUP = {
    "dsn_key_lookup", "SELECT project_id::text FROM dsn_keys WHERE key_sha256 = $1 "
                      "AND (expires_at IS NULL OR expires_at > now())"};

bool store_project_slug_valid(const char *slug)
{
    size_t n = slug ? strlen(slug) : 0;
    if (n == 0 || n > STORE_PROJECT_SLUG_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = slug[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                  (i > 0 && (ch == '-' || ch == '_'));
        if (!ok)
            return false;
    }
    return true;
}

/* Row `row` of a PROJECT_COLUMNS result into *p. */
static void project_from_row(store_project *p, PGresult *res, int row)
{
    memset(p, 0, sizeof *p);
    p->id = strtoll(PQgetvalue(res, row, 0), NULL, 10);
    store_copy(p->slug, sizeof p->slug, res, row, 1);
    store_copy(p->name, sizeof p->name, res, row, 2);
    store_copy(p->created_at, sizeof p->created_at, res, row, 3);
    p->keys = atoi(PQgetvalue(res, row, 4));
}

/* A list statement: its rows, each parsed into an element of `size` bytes by `row` (false:
 * the row is skipped). */
typedef struct {
    const store_stmt *st;
    size_t size;
    bool (*row)(void *out, PGresult *res, int row);
} list_kind;

typedef struct {
    const char *slug, *name;
    int64_t id;
    const uint8_t *sha;
    unsigned grace_s;
    store_project *out;
    char *expires_at;
    const list_kind *list;
    void *rows;         /* the list's result, xmalloc'd */
    size_t n;
} project_ctx;

static err_code do_list(pconn *c, void *vctx, err_info *err)
{
    project_ctx *x = vctx;
    PGresult *res;
    err_code rc = store_exec(&res, c, x->list->st, 0, NULL, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = (size_t)PQntuples(res), kept = 0;
    uint8_t *rows = n ? xcalloc(n, x->list->size) : NULL;
    for (size_t i = 0; i < n; i++)
        kept += x->list->row(rows + kept * x->list->size, res, (int)i);
    PQclear(res);
    free(x->rows);   /* a retried run starts over */
    x->rows = rows;
    x->n = kept;
    return ERR_OK;
}

/* Run list `kind`: *out (the caller frees it) and *n, or NULL and 0 on error. */
static err_code run_list(void **out, size_t *n, store *s, const list_kind *kind, err_info *err)
{
    project_ctx x = {.list = kind};
    err_code rc = store_run(s, do_list, &x, err);
    if (rc != ERR_OK) {
        free(x.rows);
        x.rows = NULL;
        x.n = 0;
    }
    *out = x.rows;
    *n = x.n;
    return rc;
}

static err_code do_project_create(pconn *c, void *vctx, err_info *err)
{
    project_ctx *x = vctx;
    const char *values[3] = {x->slug, x->name, (const char *)x->sha};
    const int lengths[3] = {0, 0, 32};
    const int formats[3] = {0, 0, 1};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_PROJECT_CREATE, 3, values, lengths, formats, err);
    if (rc == ERR_CONFLICT)   /* the slug is the only key a new project can collide on in
                                 practice (a 256-bit random key's hash does not repeat) */
        return err_set(err, ERR_CONFLICT, "a project with slug '%s' exists already", x->slug);
    if (rc != ERR_OK)
        return rc;
    project_from_row(x->out, res, 0);
    PQclear(res);
    return ERR_OK;
}

err_code store_project_create(store_project *out, store *s, const char *slug, const char *name,
                              const uint8_t key_sha256[32], err_info *err)
{
    memset(out, 0, sizeof *out);
    if (!store_project_slug_valid(slug))
        return err_set(err, ERR_INVALID, "project slug '%.80s' is not valid: 1 to %d of a-z, "
                       "0-9, '-' and '_', starting with a letter or digit",
                       slug ? slug : "", STORE_PROJECT_SLUG_MAX);
    if (!name || !*name)
        name = slug;
    if (strlen(name) > STORE_PROJECT_NAME_MAX)
        return err_set(err, ERR_INVALID, "project name is longer than %d bytes",
                       STORE_PROJECT_NAME_MAX);
    project_ctx x = {.slug = slug, .name = name, .sha = key_sha256, .out = out};
    return store_run(s, do_project_create, &x, err);
}

static bool project_row(void *out, PGresult *res, int row)
{
    project_from_row(out, res, row);
    return true;
}

static const list_kind LIST_PROJECTS = {&ST_PROJECT_LIST, sizeof(store_project), project_row};

err_code store_projects_list(store_project **out, size_t *n, store *s, err_info *err)
{
    void *rows;
    err_code rc = run_list(&rows, n, s, &LIST_PROJECTS, err);
    *out = rows;
    return rc;
}

static err_code do_project_find(pconn *c, void *vctx, err_info *err)
{
    project_ctx *x = vctx;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)x->id);
    const char *values[1] = {x->slug ? x->slug : id};
    PGresult *res;
    err_code rc = store_exec(&res, c, x->slug ? &ST_PROJECT_BY_SLUG : &ST_PROJECT_BY_ID, 1,
                             values, NULL, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        if (x->slug)
            return err_set(err, ERR_NOT_FOUND, "no project with slug '%.80s'", x->slug);
        return err_set(err, ERR_NOT_FOUND, "no project with id %lld", (long long)x->id);
    }
    project_from_row(x->out, res, 0);
    PQclear(res);
    return ERR_OK;
}

err_code store_project_find_slug(store_project *out, store *s, const char *slug, err_info *err)
{
    memset(out, 0, sizeof *out);
    /* an invalid slug names no project: no need to ask */
    if (!store_project_slug_valid(slug))
        return err_set(err, ERR_NOT_FOUND, "no project with slug '%.80s'", slug ? slug : "");
    project_ctx x = {.slug = slug, .out = out};
    return store_run(s, do_project_find, &x, err);
}

err_code store_project_find_id(store_project *out, store *s, int64_t id, err_info *err)
{
    memset(out, 0, sizeof *out);
    project_ctx x = {.id = id, .out = out};
    return store_run(s, do_project_find, &x, err);
}

static err_code do_dsn_key_add(pconn *c, void *vctx, err_info *err)
{
    project_ctx *x = vctx;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)x->id);
    const char *values[2] = {id, (const char *)x->sha};
    const int lengths[2] = {0, 32};
    const int formats[2] = {0, 1};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSN_KEY_ADD, 2, values, lengths, formats, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0)
        rc = err_set(err, ERR_NOT_FOUND, "no project with id %lld", (long long)x->id);
    PQclear(res);
    return rc;
}

err_code store_dsn_key_add(store *s, int64_t project_id, const uint8_t key_sha256[32],
                           err_info *err)
{
    project_ctx x = {.id = project_id, .sha = key_sha256};
    return store_run(s, do_dsn_key_add, &x, err);
}

static err_code do_dsn_key_rotate(pconn *c, void *vctx, err_info *err)
{
    project_ctx *x = vctx;
    char id[24], grace[24];
    snprintf(id, sizeof id, "%lld", (long long)x->id);
    snprintf(grace, sizeof grace, "%u", x->grace_s);
    const char *values[3] = {id, (const char *)x->sha, grace};
    const int lengths[3] = {0, 32, 0};
    const int formats[3] = {0, 1, 0};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSN_KEY_ROTATE, 3, values, lengths, formats, err);
    if (rc != ERR_OK)
        return rc;
    if (strcmp(PQgetvalue(res, 0, 0), "1") != 0)
        rc = err_set(err, ERR_NOT_FOUND, "no project with id %lld", (long long)x->id);
    else
        store_copy(x->expires_at, 32, res, 0, 1);
    PQclear(res);
    return rc;
}

err_code store_dsn_key_rotate(char expires_at[32], store *s, int64_t project_id,
                              const uint8_t key_sha256[32], unsigned grace_s, err_info *err)
{
    expires_at[0] = '\0';
    project_ctx x = {.id = project_id, .sha = key_sha256, .grace_s = grace_s,
                     .expires_at = expires_at};
    return store_run(s, do_dsn_key_rotate, &x, err);
}

static int hex_nibble(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static bool dsn_key_row(void *out, PGresult *res, int row)
{
    store_dsn_key *key = out;
    const char *hex = PQgetvalue(res, row, 0);
    if (PQgetlength(res, row, 0) != 64)
        return false;   /* the CHECK forbids it; a malformed hash would match no key anyway */
    for (int b = 0; b < 32; b++)
        key->key_sha256[b] = (uint8_t)(hex_nibble(hex[2 * b]) << 4 | hex_nibble(hex[2 * b + 1]));
    key->project_id = strtoll(PQgetvalue(res, row, 1), NULL, 10);
    key->expires_unix = strtoll(PQgetvalue(res, row, 2), NULL, 10);
    return true;
}

static const list_kind LIST_DSN_KEYS = {&ST_DSN_KEY_LIST, sizeof(store_dsn_key), dsn_key_row};

err_code store_dsn_keys_list(store_dsn_key **out, size_t *n, store *s, err_info *err)
{
    void *keys;
    err_code rc = run_list(&keys, n, s, &LIST_DSN_KEYS, err);
    *out = keys;
    return rc;
}

static err_code do_dsn_key_lookup(pconn *c, void *vctx, err_info *err)
{
    project_ctx *x = vctx;
    const char *values[1] = {(const char *)x->sha};
    const int lengths[1] = {32};
    const int formats[1] = {1};
    PGresult *res;
    err_code rc = store_exec(&res, c, &ST_DSN_KEY_LOOKUP, 1, values, lengths, formats, err);
    if (rc != ERR_OK)
        return rc;
    if (PQntuples(res) == 0)
        rc = err_set(err, ERR_NOT_FOUND, "no such DSN key, or it expired");
    else
        x->id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return rc;
}

err_code store_dsn_key_lookup(int64_t *project_id, store *s, const uint8_t key_sha256[32],
                              err_info *err)
{
    project_ctx x = {.sha = key_sha256};
    *project_id = 0;
    err_code rc = store_run(s, do_dsn_key_lookup, &x, err);
    if (rc == ERR_OK)
        *project_id = x.id;
    return rc;
}
