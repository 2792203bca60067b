/*
 * store_tokens - API tokens: public id, SHA-256 of the token, name, scopes (store_tokens.c).
 * Errors as in store.h.
 */
#ifndef STACKSIFT_STORE_STORE_TOKENS_H
#define STACKSIFT_STORE_STORE_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

typedef struct {
    uint8_t token_sha256[32]; /* SHA-256 of the whole token */
    char name[128];           /* what it is for, as given at creation */
    char scopes[64];          /* comma-separated: ingest,upload,read,admin */
    bool revoked;
} store_token;

/* store_token_insert - store a new token's public id, hash, name and scopes (comma-separated).
 * Errors ERR_CONFLICT (public id taken), ERR_INVALID (unknown scope), ERR_STORE. */
err_code store_token_insert(store *s, const char *public_id, const uint8_t token_sha256[32],
                            const char *name, const char *scopes, err_info *err);

/* store_token_get - the token whose public id is `public_id`. Errors ERR_NOT_FOUND, ERR_STORE. */
err_code store_token_get(store_token *out, store *s, const char *public_id, err_info *err);

/* One row of store_tokens_list. */
typedef struct {
    char public_id[16];       /* the 12 hex digits after "ss_" */
    store_token token;
    char created_at[32];      /* RFC 3339 UTC */
    char revoked_at[32];      /* RFC 3339 UTC, "" if not revoked */
} store_token_row;

/* store_tokens_list - every token (`active_only`: not revoked), oldest first; *out is
 * malloc'd (free() it; NULL when none). Errors ERR_STORE. */
err_code store_tokens_list(store_token_row **out, size_t *n, store *s, bool active_only,
                           err_info *err);

/* store_token_revoke - mark the token `public_id` revoked now. Errors ERR_NOT_FOUND (no such
 * token, or revoked already), ERR_STORE. */
err_code store_token_revoke(store *s, const char *public_id, err_info *err);

#endif
