/*
 * spool - a node's disk spool of accepted Sentry envelopes that could not be committed
 * because Postgres was unreachable (sentry-cocoa deletes an envelope on any answer, so a 5xx
 * would lose a crash). Each entry is one file, written durably before the client hears 200:
 * a temporary file is written and fsync'd, renamed into place, and the directory fsync'd, so
 * an entry is either wholly there or absent after kill -9 or a power loss. Entries are named
 * by a sequence number and replayed oldest first; an entry is removed only once its report
 * is durable in Postgres. Bounded by `max_bytes` (STACKSIFT_SPOOL_MB): spool_put refuses
 * with ERR_BUSY when an entry would not fit. Thread-safe.
 *
 * Entry file: "stacksift-spool 1 <project id> <kind>\n" then the decoded body as received
 * (kind "envelope" or "store"). Only envelopes whose DSN key was checked are spooled.
 */
#ifndef STACKSIFT_INGEST_SPOOL_H
#define STACKSIFT_INGEST_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"

typedef struct spool spool;

/* One entry read back by spool_oldest; body in the caller's arena. */
typedef struct {
    uint64_t seq;        /* its sequence number (the file name) */
    int64_t project_id;  /* the project it was accepted for */
    char kind[16];       /* "envelope" or "store" */
    const uint8_t *body; /* the decoded body */
    size_t len;
    size_t file_bytes;   /* the file's size, as counted against max_bytes */
} spool_entry;

/* spool_open - the spool in directory `dir` (created if missing, parents included), bounded
 * by `max_bytes` of entry files. Leftover temporary files of an interrupted write are
 * removed; the entries found are counted. Owned: spool_close(). Errors ERR_IO. */
err_code spool_open(spool **out, const char *dir, uint64_t max_bytes, err_info *err);

/* spool_close - NULL is a no-op. Entries stay on disk for the next start. */
void spool_close(spool *s);

/* spool_put - write one entry durably (fsync'd file and directory) before returning ERR_OK.
 * Errors ERR_BUSY (it would not fit in max_bytes: nothing written), ERR_IO. */
err_code spool_put(spool *s, int64_t project_id, const char *kind, const uint8_t *body,
                   size_t len, err_info *err);

/* spool_oldest - the oldest entry, read into `a`. Errors ERR_NOT_FOUND (empty), ERR_IO, and
 * ERR_INVALID for a file that is no spool entry (its seq is set: remove it). */
err_code spool_oldest(spool_entry *out, spool *s, arena *a, err_info *err);

/* spool_remove - delete entry `seq` (after its report is durable). Errors ERR_IO. */
err_code spool_remove(spool *s, uint64_t seq, err_info *err);

/* spool_stats - entries and bytes on disk now. */
void spool_stats(spool *s, uint64_t *entries, uint64_t *bytes);

#endif
