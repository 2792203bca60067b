/*
 * store_blobs - blobs and their chunks (see store_blobs.h); the dSYM rows that point at them
 * are written by store_dsyms.c, in the same transaction, through store_blob_put.
 */
#include "store/store_blobs.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "store/store_internal.h"

/* ---- writing a blob (inside the caller's transaction) ---------------------------------- */

static err_code write_chunks(pconn *c, const char *sha, int fd, const char *path,
                             uint64_t bytes, err_info *err)
{
    uint8_t *chunk = xmalloc(STORE_BLOB_CHUNK_BYTES);
    err_code rc = ERR_OK;
    uint64_t done = 0;
    for (unsigned seq = 0; rc == ERR_OK && done < bytes; seq++) {
        size_t want = bytes - done < STORE_BLOB_CHUNK_BYTES ? (size_t)(bytes - done)
                                                            : STORE_BLOB_CHUNK_BYTES;
        size_t got = 0;
        while (got < want) {
            ssize_t r = pread(fd, chunk + got, want - got, (off_t)(done + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                rc = err_set(err, ERR_IO, "reading %s for the database: %s", path,
                             r < 0 ? strerror(errno) : "file shrank");
                break;
            }
            got += (size_t)r;
        }
        if (rc != ERR_OK)
            break;
        char seq_s[16];
        snprintf(seq_s, sizeof seq_s, "%u", seq);
        const char *values[3] = {sha, seq_s, (const char *)chunk};
        const int lengths[3] = {0, 0, (int)want};
        const int formats[3] = {0, 0, 1};
        PGresult *res;
        rc = store_exec_sql_params(&res, c, "storing a blob chunk",
                                   "INSERT INTO blob_chunks (sha256, seq, data) "
                                   "VALUES ($1, $2, $3)",
                                   3, values, lengths, formats, 0, err);
        PQclear(res);
        done += want;
    }
    free(chunk);
    return rc;
}

err_code store_blob_put(pconn *c, const store_blob_file *f, err_info *err)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, ERR_IO, "opening %s: %s", f->path, strerror(errno));
    struct stat st;
    err_code rc = ERR_OK;
    if (fstat(fd, &st) != 0) {
        rc = err_set(err, ERR_IO, "reading %s: %s", f->path, strerror(errno));
        goto done;
    }
    uint64_t bytes = (uint64_t)st.st_size;
    char bytes_s[24], chunks_s[24];
    snprintf(bytes_s, sizeof bytes_s, "%llu", (unsigned long long)bytes);
    snprintf(chunks_s, sizeof chunks_s, "%llu",
             (unsigned long long)((bytes + STORE_BLOB_CHUNK_BYTES - 1) / STORE_BLOB_CHUNK_BYTES));
    const char *values[3] = {f->sha256, bytes_s, chunks_s};
    /* A blob can be deleted (retention) between a failed insert and the lock: try again. */
    for (int attempt = 0; attempt < 3; attempt++) {
        PGresult *res;
        rc = store_exec_sql_params(&res, c, "storing a blob",
                                   "INSERT INTO blobs (sha256, bytes, chunks) VALUES ($1, $2, $3) "
                                   "ON CONFLICT (sha256) DO NOTHING RETURNING 1",
                                   3, values, NULL, NULL, 0, err);
        if (rc != ERR_OK)
            goto done;
        int inserted = PQntuples(res) == 1;
        PQclear(res);
        if (inserted) {
            rc = write_chunks(c, f->sha256, fd, f->path, bytes, err);
            goto done;
        }
        /* Stored already: hold it (KEY SHARE blocks a concurrent DELETE) and reuse it. */
        rc = store_exec_sql_params(&res, c, "locking a blob",
                                   "SELECT 1 FROM blobs WHERE sha256 = $1 FOR KEY SHARE", 1, values,
                                   NULL, NULL, 0, err);
        if (rc != ERR_OK)
            goto done;
        int found = PQntuples(res) == 1;
        PQclear(res);
        if (found)
            goto done;
    }
    rc = err_set(err, ERR_STORE, "blob %.16s... kept disappearing while being stored", f->sha256);
done:
    close(fd);
    return rc;
}

/* ---- reading a blob -------------------------------------------------------------------- */

err_code store_blob_fetch(uint64_t *bytes, store *s, const char *sha256, store_blob_sink sink,
                          void *ctx, err_info *err)
{
    pconn *c;
    *bytes = 0;
    /* Not store_run: the sink has seen bytes by the time a connection could break. */
    err_code rc = store_acquire(&c, s, err);
    if (rc != ERR_OK)
        return rc;
    PGresult *res = NULL;
    rc = store_command(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "fetching a blob",
                       err);
    if (rc != ERR_OK)
        goto done;
    const char *values[2] = {sha256, NULL};
    rc = store_exec_sql_params(&res, c, "fetching a blob",
                               "SELECT bytes, chunks FROM blobs WHERE sha256 = $1", 1, values, NULL,
                               NULL, 0, err);
    if (rc != ERR_OK)
        goto done;
    if (PQntuples(res) != 1) {
        rc = err_set(err, ERR_NOT_FOUND, "no blob %s", sha256);
        goto done;
    }
    uint64_t want = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    long chunks = strtol(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    res = NULL;
    uint64_t got = 0;
    for (long seq = 0; seq < chunks; seq++) {
        char seq_s[24];
        snprintf(seq_s, sizeof seq_s, "%ld", seq);
        values[1] = seq_s;
        /* binary results: the chunk arrives as its bytes, no hex decoding */
        rc = store_exec_sql_params(&res, c, "fetching a blob chunk",
                                   "SELECT data FROM blob_chunks WHERE sha256 = $1 AND seq = "
                                   "$2::int",
                                   2, values, NULL, NULL, 1, err);
        if (rc != ERR_OK)
            goto done;
        if (PQntuples(res) != 1) {
            rc = err_set(err, ERR_INTERNAL, "blob %s lacks chunk %ld of %ld", sha256, seq, chunks);
            goto done;
        }
        size_t len = (size_t)PQgetlength(res, 0, 0);
        rc = sink(ctx, (const uint8_t *)PQgetvalue(res, 0, 0), len, err);
        if (rc != ERR_OK)
            goto done;
        got += len;
        PQclear(res);
        res = NULL;
    }
    if (got != want) {
        rc = err_set(err, ERR_INTERNAL, "blob %s has %llu bytes in its chunks, %llu recorded",
                     sha256, (unsigned long long)got, (unsigned long long)want);
        goto done;
    }
    rc = store_command(c, "COMMIT", "fetching a blob", err);
    *bytes = got;
done:
    PQclear(res);
    store_release(s, c);   /* rolls back a transaction an error left open */
    return rc;
}

