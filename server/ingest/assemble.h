/*
 * assemble - sentry-cli's chunked debug-file uploads, the assembly side: a file whose chunks
 * are all stored (store_chunks.h) is put together on a few background threads, its SHA-1
 * checked against the one the client named it by, and then ingested exactly like
 * `POST /api/v1/dsyms` (ingest_dsym_upload: a symcache per slice, idempotent, DWARF replaces
 * a symbol table and never the reverse). The outcome goes to dif_assemblies, where the
 * client's polls read it on any node. The same threads expire old chunks.
 * The protocol follows sentry-cli's src/utils/chunks and src/api/data_types/chunking.
 */
#ifndef STACKSIFT_INGEST_ASSEMBLE_H
#define STACKSIFT_INGEST_ASSEMBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "dsym/dsym.h"
#include "ingest/symfiles.h"
#include "store/store.h"

#define ASSEMBLE_CHUNK_BYTES (8u << 20)     /* chunkSize offered to clients */
#define ASSEMBLE_STALE_S 900                /* an assembly unfinished this long is restarted
                                               (its node died) */
#define ASSEMBLE_ERROR_S 60                 /* an error is kept this long before a new
                                               assemble request may try the file again */

typedef struct ingest_assembler ingest_assembler;

typedef struct {
    store *store;               /* shared; not owned */
    symfiles *cache;            /* this node's symcache cache, or NULL */
    dsym_options dsym;          /* as for POST /api/v1/dsyms */
    const char *tmp_dir;        /* scratch directories are made here (copied) */
    unsigned threads;           /* assembly threads; 0 = 2 */
    unsigned chunk_ttl_s;       /* chunks older than this are deleted (checked every quarter
                                   of it, at most every 5 minutes); 0 = 3600 */
    uint64_t max_file_bytes;    /* largest file assembled (the upload limit) */
} ingest_assembler_options;

/* One part of a chunk upload: a chunk in a scratch file, as received. */
typedef struct {
    const char *path;   /* the part's bytes */
    bool gzip;          /* sent as `file_gzip`: one gzip member; else `file`: the bytes */
    const char *sha1;   /* the name it was sent with: SHA-1 of the uncompressed bytes, 40 hex
                           digits, any case (lower-cased copies are stored) */
} ingest_chunk_part;

/*
 * ingest_assembler_chunks_store - check every part (a SHA-1 name, gzip that inflates, at most
 * ASSEMBLE_CHUNK_BYTES uncompressed, bytes that hash to the name), then store them all
 * (store_chunk_put: content addressed, a chunk stored already is kept). Nothing is stored in
 * Postgres unless every part is right. The uncompressed bytes of each checked part are also
 * kept on this node: at their offsets in the files expecting them (ingest_assembler_expect),
 * else in <tmp_dir>/chunks (a cache the assembly reads before Postgres).
 * *created = chunks new to the store.
 * Errors  ERR_INVALID (a name that is not a SHA-1, corrupt gzip, a SHA-1 that differs: the
 *         message names the part), ERR_TOO_LARGE (a chunk over ASSEMBLE_CHUNK_BYTES),
 *         ERR_IO, ERR_STORE.
 */
err_code ingest_assembler_chunks_store(unsigned *created, ingest_assembler *as,
                                       const ingest_chunk_part *parts, size_t n, err_info *err);

/*
 * ingest_assembler_expect - file `sha1` (40 lower-case hex digits) is made of the `n` chunks
 * `chunks` (SHA-1s, in order), some not stored yet: this node writes each of them it receives
 * from now on (ingest_assembler_chunks_store) at its offset in the file, chunk i at i *
 * ASSEMBLE_CHUNK_BYTES, and the file's assembly here starts from that file. A file expected
 * already is left as it is; at most 64 files are expected at once (the oldest gives way), each
 * until it is assembled or for the chunk expiry. Everything is copied. Nothing is reported:
 * without it the chunks are kept as local copies.
 */
void ingest_assembler_expect(ingest_assembler *as, const char *sha1, const char *const *chunks,
                             size_t n);

/* ingest_assembler_new - make <tmp_dir>/chunks and <tmp_dir>/files, start the threads. Owned by the caller:
 * ingest_assembler_free. Errors ERR_IO (the directory), ERR_INTERNAL (no thread started). */
err_code ingest_assembler_new(ingest_assembler **out, const ingest_assembler_options *o,
                              err_info *err);

/*
 * ingest_assembler_submit - queue the assembly of file `sha1` (40 lower-case hex digits),
 * which the caller claimed (store_assembly_begin), from its `n` chunks (SHA-1s, in order,
 * all stored). `name` is the client's file name (it names a bare Mach-O's image),
 * `debug_id` the debug id the client gave (NULL or "" = none): of the slices ingested, the
 * one with that UUID is reported. Everything is copied. False when the queue is full or the
 * assembler stops: the caller records the error.
 */
bool ingest_assembler_submit(ingest_assembler *as, const char *sha1, const char *name,
                             const char *debug_id, const char *const *chunks, size_t n);

/*
 * ingest_assembler_wait - wait until file `sha1` (40 lower-case hex digits), queued or being
 * assembled on this node, is done, for at most `timeout_ms`. True if it was here and is done
 * now (its outcome is in dif_assemblies); false at once if this node has no such job (it runs
 * on another node, or ended already), or when the time is up.
 */
bool ingest_assembler_wait(ingest_assembler *as, const char *sha1, unsigned timeout_ms);

/* ingest_assembler_free - stop taking work, let each thread finish the file it has, record
 * files still queued as failed ("the server stopped"), join. NULL is a no-op. */
void ingest_assembler_free(ingest_assembler *as);

#endif
