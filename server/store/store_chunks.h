/*
 * store_chunks - sentry-cli's chunked debug-file uploads (migration 0009): the chunks, named
 * by the SHA-1 of their uncompressed bytes, and the state of each file an assemble request
 * started (dif_assemblies), which every node reads when the client polls.
 *
 * SHA-1s are 40 lower-case hex digits here; callers validate and normalize them first.
 * Errors as in store.h.
 */
#ifndef STACKSIFT_STORE_STORE_CHUNKS_H
#define STACKSIFT_STORE_STORE_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "store/store.h"

/* store_chunk_put - store chunk `sha1` unless it is stored already (the first copy wins: both
 * hold the same bytes): `data`, `len` bytes, one gzip member when `gzip`, whose uncompressed
 * size is `bytes`. The caller has checked that those bytes hash to `sha1`.
 * *created = it was inserted now. Errors ERR_STORE, ERR_INTERNAL. */
err_code store_chunk_put(bool *created, store *s, const char *sha1, bool gzip, uint32_t bytes,
                         const uint8_t *data, size_t len, err_info *err);

/* store_chunks_sizes - for each of the `n` SHA-1s (repeats allowed), the uncompressed size of
 * the stored chunk, or -1 when it is not stored; sizes[n] is the caller's. The stored ones
 * start a new expiry period (store_chunks_expire), so that an assembly relying on them finds
 * them. Errors ERR_STORE. */
err_code store_chunks_sizes(int64_t *sizes, store *s, const char *const *sha1s, size_t n,
                            err_info *err);

/* Receives one chunk as stored: its bytes (gzip when `gzip`) and uncompressed size. Returns
 * ERR_OK to go on; anything else stops store_chunks_fetch and is returned by it. */
typedef err_code (*store_chunk_sink)(void *ctx, const uint8_t *data, size_t len, bool gzip,
                                     uint32_t bytes, err_info *err);

/* store_chunks_fetch - the `n` chunks to `sink`, in order, one statement each (memory: one
 * chunk). Errors ERR_NOT_FOUND (a chunk is not stored, e.g. expired meanwhile), ERR_STORE, or
 * the sink's error. */
err_code store_chunks_fetch(store *s, const char *const *sha1s, size_t n, store_chunk_sink sink,
                            void *ctx, err_info *err);

/* One file's assembly as the client sees it (dif_assemblies). */
typedef struct {
    char state[16];      /* "assembling", "ok" or "error" */
    char detail[512];    /* why (error), or a note (ok); "" = none */
    char name[256];      /* the file name the client gave */
    char uuid[37];       /* ok: the debug file recorded, upper case; "" otherwise */
    char arch[16];       /* ok: its architecture */
    bool has_dwarf;      /* ok: the recorded debug file has DWARF */
    bool stale;          /* may be started over: assembling for longer than `stale_s` (its
                            node died), an error older than `error_s`, or ok while its debug
                            file is no longer stored (retention) */
} store_assembly;

/* store_assembly_get - the assembly of file `sha1`, with `stale` judged by `stale_s` and
 * `error_s` (seconds). Errors ERR_NOT_FOUND (none started), ERR_STORE. */
err_code store_assembly_get(store_assembly *out, store *s, const char *sha1, unsigned stale_s,
                            unsigned error_s, err_info *err);

/* store_assembly_begin - start assembling file `sha1` (state "assembling") unless another
 * request has it: *claimed = this caller must assemble it now; else *cur is the assembly
 * that exists (not stale). `name` is the client's file name, `project` its project slug.
 * Errors ERR_STORE. */
err_code store_assembly_begin(bool *claimed, store_assembly *cur, store *s, const char *sha1,
                              const char *name, const char *project, unsigned stale_s,
                              unsigned error_s, err_info *err);

/* store_assembly_finish - the outcome of file `sha1`: state "ok" (with the recorded debug
 * file's uuid, arch, has_dwarf) or "error" (uuid NULL); `detail` may be NULL. Errors
 * ERR_STORE. */
err_code store_assembly_finish(store *s, const char *sha1, const char *state, const char *detail,
                               const char *uuid, const char *arch, bool has_dwarf,
                               err_info *err);

/* store_chunks_expire - delete chunks older than `max_age_s` and assemblies nobody needs any
 * more (errors older than a day, ok ones whose debug file is gone); counts in *chunks and
 * *assemblies. Errors ERR_STORE. */
err_code store_chunks_expire(unsigned *chunks, unsigned *assemblies, store *s,
                             unsigned max_age_s, err_info *err);

#endif
