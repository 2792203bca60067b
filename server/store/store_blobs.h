/*
 * store_blobs - content-addressed blobs in Postgres: symcaches and the original
 * dSYM uploads they were built from, so that Postgres is the only state nodes share.
 *
 * A blob is one `blobs` row (hex SHA-256, size, chunk count) and its `blob_chunks` rows of
 * STORE_BLOB_CHUNK_BYTES each (bytea; the last one shorter), written in one transaction, so a
 * blob row is never visible without all of its chunks. dsyms.symcache_blob and
 * dsyms.original_blob reference blobs by foreign key: no row can point at a missing blob.
 * Why bytea chunks and not large objects: server/store/README.md.
 *
 * Errors as in store.h (ERR_STORE, ERR_INVALID, ERR_NOT_FOUND, ERR_INTERNAL), plus ERR_IO for
 * the local file being read or written.
 */
#ifndef STACKSIFT_STORE_STORE_BLOBS_H
#define STACKSIFT_STORE_STORE_BLOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

#define STORE_BLOB_CHUNK_BYTES (1u << 20) /* 1 MiB: one round trip, bounded memory */

/* Receives a blob's bytes in order; returns ERR_OK to go on, anything else stops the fetch
 * and is returned by store_blob_fetch. */
typedef err_code (*store_blob_sink)(void *ctx, const uint8_t *data, size_t len, err_info *err);

/* store_blob_fetch - stream blob `sha256` (hex) to `sink`, chunk by chunk, from one
 * consistent snapshot; *bytes = its size as recorded. The caller checks the content (SHA-256):
 * this only checks that the chunks add up to the recorded size.
 * Errors ERR_NOT_FOUND (no such blob, e.g. expired meanwhile), ERR_INTERNAL (chunks missing or
 * sizes that do not add up), ERR_STORE, or the sink's error. */
err_code store_blob_fetch(uint64_t *bytes, store *s, const char *sha256, store_blob_sink sink,
                          void *ctx, err_info *err);

/* A file to store as a blob: its hex SHA-256 (computed by the caller) and where it is. */
typedef struct {
    const char *sha256;
    const char *path;
} store_blob_file;

#endif
