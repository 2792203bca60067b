/* store_internal - shared between store.c and the generated migrations table. */
#ifndef STACKSIFT_STORE_STORE_INTERNAL_H
#define STACKSIFT_STORE_STORE_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

typedef struct {
    int version;      /* NNNN of migrations/NNNN_name.sql, from 1 without gaps */
    const char *name; /* the name part */
    const char *sql;  /* the whole file */
} store_migration;

extern const store_migration STORE_MIGRATIONS[];
extern const size_t STORE_MIGRATIONS_COUNT;

/* A pooled connection (store.c); other store_*.c files run SQL on it through these. */
typedef struct {
    PGconn *pg;
    uint32_t prepared; /* bit i: STMTS[i] of store.c is prepared on this connection */
} pconn;

typedef err_code (*store_fn)(pconn *c, void *ctx, err_info *err);

/* store_acquire / store_release - take a pooled connection and give it back (an open
 * transaction is rolled back, a broken connection closed). */
err_code store_acquire(pconn **out, store *s, err_info *err);
void store_release(store *s, pconn *c);
/* store_run - fn on a pooled connection, retried once on a fresh one if it broke. */
err_code store_run(store *s, store_fn fn, void *ctx, err_info *err);
/* store_translate - a failed result as err_code + message (see store.h). */
err_code store_translate(PGresult *res, pconn *c, const char *what, err_info *err);
/* store_command - run parameterless SQL (BEGIN, COMMIT, ...). */
err_code store_command(pconn *c, const char *sql, const char *what, err_info *err);
/* store_dup - column value copied into `a`, NULL for SQL NULL; *rc = ERR_TOO_LARGE if full. */
const char *store_dup(arena *a, PGresult *res, int row, int col, err_info *err, err_code *rc);

#endif
