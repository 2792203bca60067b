/*
 * store_projects - projects (numeric id, slug, name) and their DSN keys (store_projects.c).
 * A DSN key is stored as its SHA-256 only; server/auth makes keys, hashes what a client
 * presents and keeps the table of usable keys in memory. Errors as in store.h.
 */
#ifndef STACKSIFT_STORE_STORE_PROJECTS_H
#define STACKSIFT_STORE_STORE_PROJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "store/store.h"

#define STORE_PROJECT_SLUG_MAX 64   /* bytes of a slug, NUL excluded */
#define STORE_PROJECT_NAME_MAX 200  /* bytes of a name, NUL excluded */

typedef struct {
    int64_t id;                              /* projects.id; 1 = the default project */
    char slug[STORE_PROJECT_SLUG_MAX + 1];   /* [a-z0-9][a-z0-9_-]*, unique */
    char name[STORE_PROJECT_NAME_MAX + 1];   /* free text, shown in the dashboard */
    char created_at[32];                     /* RFC 3339 UTC */
    int keys;                                /* DSN keys accepted now (current + in grace) */
} store_project;

/* store_project_slug_valid - the one rule for a slug: 1..64 bytes of lower-case ASCII
 * letters, digits, '-' and '_', starting with a letter or digit (migration 0008 checks the
 * same). */
bool store_project_slug_valid(const char *slug);

/*
 * store_project_create - a new project `slug` named `name` (NULL or "" = the slug) with its
 * first DSN key (SHA-256 `key_sha256`), in one transaction; *out = the stored project.
 * Errors  ERR_INVALID (slug or name breaks the rules), ERR_CONFLICT (slug taken), ERR_STORE.
 */
err_code store_project_create(store_project *out, store *s, const char *slug, const char *name,
                              const uint8_t key_sha256[32], err_info *err);

/* store_projects_list - every project, by id; *out is malloc'd (free() it; NULL when none).
 * Errors ERR_STORE. */
err_code store_projects_list(store_project **out, size_t *n, store *s, err_info *err);

/* store_project_find_slug / store_project_find_id - one project. Errors ERR_NOT_FOUND,
 * ERR_STORE. */
err_code store_project_find_slug(store_project *out, store *s, const char *slug, err_info *err);
err_code store_project_find_id(store_project *out, store *s, int64_t id, err_info *err);

/* store_dsn_key_add - another DSN key (SHA-256) for project `project_id`, current (no
 * expiry). Errors ERR_NOT_FOUND (no such project), ERR_CONFLICT (hash exists), ERR_STORE. */
err_code store_dsn_key_add(store *s, int64_t project_id, const uint8_t key_sha256[32],
                           err_info *err);

/*
 * store_dsn_key_rotate - in one transaction: every current key of project `project_id` gets
 * an expiry `grace_s` seconds from now (keys already expiring sooner keep theirs) and
 * `key_sha256` becomes its current key. *expires_at = that expiry (RFC 3339 UTC; "" when the
 * project had no current key). Errors ERR_NOT_FOUND, ERR_CONFLICT, ERR_STORE.
 */
err_code store_dsn_key_rotate(char expires_at[32], store *s, int64_t project_id,
                              const uint8_t key_sha256[32], unsigned grace_s, err_info *err);

/* One usable DSN key (store_dsn_keys_list). */
typedef struct {
    uint8_t key_sha256[32];
    int64_t project_id;
    int64_t expires_unix;   /* seconds since 1970 UTC when it stops working; 0 = current */
} store_dsn_key;

/* store_dsn_keys_list - every key not expired yet; *out is malloc'd (free() it; NULL when
 * none). Errors ERR_STORE. */
err_code store_dsn_keys_list(store_dsn_key **out, size_t *n, store *s, err_info *err);

/* store_dsn_key_lookup - the project of the unexpired key whose SHA-256 is `key_sha256`,
 * asked of the database (auth_dsn_key_check answers from memory instead).
 * Errors ERR_NOT_FOUND (no such key, or expired), ERR_STORE. */
err_code store_dsn_key_lookup(int64_t *project_id, store *s, const uint8_t key_sha256[32],
                              err_info *err);

#endif
