/* store_internal - shared between store.c and the generated migrations table. */
#ifndef STACKSIFT_STORE_STORE_INTERNAL_H
#define STACKSIFT_STORE_STORE_INTERNAL_H

#include <stddef.h>

typedef struct {
    int version;      /* NNNN of migrations/NNNN_name.sql, from 1 without gaps */
    const char *name; /* the name part */
    const char *sql;  /* the whole file */
} store_migration;

extern const store_migration STORE_MIGRATIONS[];
extern const size_t STORE_MIGRATIONS_COUNT;

#endif
