/*
 * symfiles - this node's cache of symcache files. Postgres holds every symcache
 * (store_blobs.h); a node keeps local copies in DATA_DIR/symcaches/<sha256>.symc, fetched on
 * first use and evicted least-recently-used first beyond a byte budget.
 *
 *   symfiles_get(uuid) --row cache--> sha256 of the UUID's current symcache (Postgres row,
 *                                     re-read after SYMFILES_ROW_TTL_MS; a missing UUID is
 *                                     remembered for SYMFILES_MISS_TTL_MS)
 *                      --file cache-> <sha256>.symc, downloaded once per node even when many
 *                                     threads ask at once (the others wait for it), written
 *                                     to tmp/ and renamed only after its SHA-256 matched
 *
 * A file found on disk at start is adopted but checked (SHA-256) before its first use; a
 * temporary file left by a killed process is deleted. Evicting a file a reader still has
 * mapped is safe: the mapping outlives the name. Content-addressed names mean a replaced
 * symcache (DWARF after a symbol table, `stacksift symcache rebuild`) is a new file, never
 * an overwrite.
 * Thread-safe.
 */
#ifndef STACKSIFT_INGEST_SYMFILES_H
#define STACKSIFT_INGEST_SYMFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "store/store.h"

#define SYMFILES_ROW_TTL_MS 10000 /* a UUID's row is re-read this often (rebuilds, upgrades) */
#define SYMFILES_MISS_TTL_MS 2000 /* "no dSYM" is believed this long, unless asked `fresh` */
#define SYMFILES_INTAKE_STALE_MS 60000 /* symfiles_known answers from a row this old at most
                                          (while the refresher re-reads it) */
#define SYMFILES_WANTED_MAX 4096  /* rows waiting for the refresher at most */

typedef struct symfiles symfiles;

/* symfiles_open - the cache in `dir` (created if missing) holding at most `max_bytes` of
 * symcache files, fetching through `s`, and its refresher thread (symfiles_known). Scans
 * `dir`: adopts <sha256>.symc files, deletes temporary ones. Owned by the caller:
 * symfiles_close(). Errors ERR_IO, ERR_INTERNAL (no thread). */
err_code symfiles_open(symfiles **out, store *s, const char *dir, uint64_t max_bytes,
                       err_info *err);

/* symfiles_close - free the index (files stay on disk for the next start). NULL is a no-op. */
void symfiles_close(symfiles *f);

/*
 * symfiles_get - the local path of the current symcache of debug file `uuid` (upper case,
 * dashes) and its hex SHA-256, downloading and checking it first if needed. `fresh` re-reads
 * the row even if a recent answer said there is none (a report about to wait for a dSYM).
 * Errors  ERR_NOT_FOUND (no dSYM with that UUID, or none stored yet), ERR_STORE, ERR_IO,
 *         ERR_INTERNAL (a stored blob that does not match its hash: never used).
 */
err_code symfiles_get(char path[4096], char sha256[65], symfiles *f, const char *uuid,
                      bool fresh, err_info *err);

/* symfiles_known - what the row cache knows of `uuid`, from memory alone (never Postgres,
 * never a file: for the intake's processing, on a request's thread): 1 (sha256 of its
 * current symcache written), 0 (it has none), -1 (never read, or not for
 * SYMFILES_INTAKE_STALE_MS). A row older than the TTLs above is still answered from, and is
 * handed to the cache's refresher thread, which reads it again from Postgres in the
 * background: a request never waits for that, and in steady state the rows the intake uses
 * stay as current as the workers' (a replaced symcache is noticed a TTL later, plus one
 * read; while the database is away, up to SYMFILES_INTAKE_STALE_MS). */
int symfiles_known(char sha256[65], symfiles *f, const char *uuid);

/*
 * symfiles_add - put a symcache this node just built and committed (its SHA-256 known) into
 * the cache by hard link, so that the uploading node's first lookup needs no download, and
 * forget what was known of `uuid`'s row (the next get reads it: a concurrent upload may have
 * committed after this one).
 * Best effort: errors are ignored (the file is fetched on first use instead).
 */
void symfiles_add(symfiles *f, const char *uuid, const char *sha256, const char *path);

/* symfiles_on_add - call fn(ctx) at each symfiles_add (a dSYM this node stored: reports that
 * waited for it were sent back to the queue in the same commit). Set it before any thread
 * adds (it is read without a lock); fn runs on the adding thread. */
void symfiles_on_add(symfiles *f, void (*fn)(void *ctx), void *ctx);

/* symfiles_forget - drop what is known about `uuid`'s row: the next get reads it again. */
void symfiles_forget(symfiles *f, const char *uuid);

/* symfiles_store - the store it fetches through (borrowed). */
store *symfiles_store(symfiles *f);

typedef struct {
    uint64_t hits;        /* symfiles_get answered from a local file */
    uint64_t misses;      /* ... after downloading it */
    uint64_t downloads, download_bytes, download_failures;
    uint64_t evictions;
    uint64_t files, bytes; /* in the cache now */
    uint64_t max_bytes;
} symfiles_stats;

void symfiles_stats_get(symfiles_stats *out, symfiles *f);

/* symfiles_metrics_render - append the cache's metrics (Prometheus text). */
void symfiles_metrics_render(buf *out, symfiles *f);

#endif
