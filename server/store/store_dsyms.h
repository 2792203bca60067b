/*
 * store_dsyms - debug files (dSYMs) and the UUIDs reports wait for (store_dsyms.c).
 * Errors as in store.h.
 */
#ifndef STACKSIFT_STORE_STORE_DSYMS_H
#define STACKSIFT_STORE_STORE_DSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

typedef struct {
    char uuid[37];          /* upper-case with dashes */
    char arch[16];
    char name[256];         /* image name */
    bool has_dwarf;
    int64_t dwarf_bytes;
    int64_t symcache_bytes;
    int32_t functions;
    char sha256[65];        /* hex SHA-256 of the symcache */
    char uploaded_at[32];   /* RFC 3339 UTC; filled by the store */
} store_dsym;

/* What store_dsyms_insert did with one row. */
typedef enum {
    STORE_DSYM_EXISTS,   /* the UUID was recorded already: the stored record is read back */
    STORE_DSYM_CREATED,  /* a new row */
    STORE_DSYM_UPGRADED, /* the stored row came from a symbol table only and this one has
                            DWARF: the row now describes the new debug file */
} store_dsym_outcome;

/* store_dsyms_insert - record `n` debug files in one transaction. A UUID already recorded is
 * left as it is (idempotent re-upload) unless the stored one has no DWARF and the new one
 * has. outcome[i] says which; rows[i] is overwritten with the stored record.
 * Errors ERR_STORE, ERR_INVALID. */
err_code store_dsyms_insert(store_dsym_outcome *outcome, store_dsym *rows, size_t n, store *s,
                            err_info *err);

/* store_dsym_get - the row for `uuid` (any case, dashes). Errors ERR_NOT_FOUND, ERR_STORE. */
err_code store_dsym_get(store_dsym *out, store *s, const char *uuid, err_info *err);

/* store_dsyms_list - rows matching `uuid` and `name` (each NULL = any), newest first, at most
 * `limit`; *out is allocated in `a`. Errors ERR_INVALID (malformed uuid), ERR_STORE. */
err_code store_dsyms_list(store_dsym **out, size_t *n, store *s, const char *uuid,
                          const char *name, size_t limit, arena *a, err_info *err);

/* store_dsyms_missing - {"missing":[{uuid,name,reports,first_received,last_received}]}: the
 * UUIDs pending_dsym reports wait for, most reports first. Errors ERR_STORE. */
err_code store_dsyms_missing(const char **json, store *s, unsigned limit, arena *a,
                             err_info *err);

#endif
