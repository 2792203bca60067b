/*
 * assemble - put a chunk-uploaded debug file together and ingest it (see assemble.h).
 *
 * One job per file: its chunks are put together in order into a scratch file, hashed with
 * SHA-1 on the way, and only a file whose SHA-1 is the one the client named it by goes on to
 * ingest_dsym_upload, the same ingest as POST /api/v1/dsyms. A chunk comes from this node's
 * local copy when it has one (see "local chunk copies" below), else from Postgres (gunzipped
 * when stored as gzip).
 *
 * Local chunk copies: Postgres holds every chunk (any node may assemble any file), but
 * fetching and inflating a 300 MB file's chunks back out of it cost as much as the rest of
 * the assembly. So the node that receives a chunk also keeps its uncompressed bytes in
 * <tmp_dir>/chunks/<sha1> (written to a temporary name and renamed; no fsync: the copy is a
 * cache, Postgres is the record). The assembly reads a local copy only if its bytes still hash
 * to its name, deletes the copies of a file it assembled, and the sweep deletes copies older
 * than the chunk expiry; <tmp_dir> is emptied when the server starts. sentry-cli sends the executable and the dSYM of one image as two
 * files with the same debug id, concurrently and in any order: ingest_dsym_upload's
 * transaction keeps the one with DWARF whichever comes first.
 *
 * Chunks put in place: sentry-cli names every file and its chunks (an assemble request)
 * before it sends the chunks the server lacks. The node that answers such a request keeps
 * the file's chunk list ("expected", at most EXPECT_MAX files) and writes each chunk it then
 * receives for it straight at its offset in <tmp_dir>/files/<sha1> (chunk i at i *
 * ASSEMBLE_CHUNK_BYTES: sentry-cli cuts files at the chunkSize the server gave it) instead of
 * into a local copy. Its assembly then only fills in the chunks it did not receive (a local
 * copy, else Postgres), hashes the file once and ingests it where it is: copying 300 MB of
 * chunks into a scratch file had cost a second of the assembly. A placed file whose SHA-1 is
 * not the one named is put together again the sequential way, from Postgres.
 */
#include "ingest/assemble.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/arena.h"
#include "base/xalloc.h"
#include "ingest/ingest.h"
#include "log/log.h"
#include "store/store_chunks.h"

#define QUEUE_MAX 1024
#define EXPECT_MAX 64   /* files this node places chunks for at once */
#define PLACE_MAX 4     /* places one received chunk is written to, at most (a chunk listed
                           many times is read from a local copy for the others) */
#define SWEEP_EVERY_S 300   /* at most; a short expiry is swept at a quarter of it */

typedef struct job {
    struct job *next;
    char sha1[41];
    char name[256];
    char debug_id[64];
    size_t n;
    char (*chunks)[41];
} job;

/* A file an assemble request named before all its chunks were stored: the chunks received
 * here are written at their offsets in <file_dir>/<sha1>. */
typedef struct expected {
    struct expected *next;
    char sha1[41];
    size_t n;
    char (*chunks)[41];
    bool *placed;         /* per chunk: its bytes are at its offset */
    int fd;               /* <file_dir>/<sha1>, read-write */
    unsigned writers;     /* chunk writes under way (the assembly and the sweep wait) */
    bool broken;          /* a write failed, or a chunk before the last one was short */
    time_t created;
} expected;

struct ingest_assembler {
    ingest_assembler_options o;
    char *tmp_dir;
    char *chunk_dir;      /* local chunk copies: <tmp_dir>/chunks */
    char *file_dir;       /* files whose chunks are put in place: <tmp_dir>/files */
    expected *expect;     /* newest first */
    unsigned nexpect;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_cond_t done_cv;   /* broadcast when a job ends (ingest_assembler_wait) and when
                                 a chunk write into an expected file ends */
    char (*running)[41];  /* per thread: the SHA-1 of the file it assembles, "" = none */
    job *head, *tail;
    unsigned queued;
    bool stop;
    pthread_t *threads;
    unsigned nthreads;
    time_t last_sweep;
    unsigned sweep_s;   /* seconds between sweeps */
};

/* ---- one file -------------------------------------------------------------------------- */

typedef struct {
    int fd;
    const char *path;
    EVP_MD_CTX *sha1;
    uint64_t written, max;
    z_stream z;
    uint8_t *out;         /* inflate's output buffer */
    uint8_t *chunk;       /* ASSEMBLE_CHUNK_BYTES for a local copy */
    size_t local;         /* chunks taken from local copies */
} assembly;

static err_code put_bytes(assembly *as, const uint8_t *data, size_t len, err_info *err)
{
    as->written += len;
    if (as->written > as->max)
        return err_set(err, ERR_TOO_LARGE, "the assembled file is larger than the limit of "
                       "%llu bytes", (unsigned long long)as->max);
    EVP_DigestUpdate(as->sha1, data, len);
    while (len > 0) {
        ssize_t n = write(as->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_set(err, ERR_IO, "writing %s: %s", as->path, strerror(errno));
        data += n;
        len -= (size_t)n;
    }
    return ERR_OK;
}

/* store_chunk_sink: one stored chunk, gunzipped if need be, appended and hashed. */
static err_code put_chunk(void *ctx, const uint8_t *data, size_t len, bool gzip, uint32_t bytes,
                          err_info *err)
{
    assembly *as = ctx;
    uint64_t before = as->written;
    err_code rc = ERR_OK;
    if (!gzip) {
        rc = put_bytes(as, data, len, err);
    } else {
        enum { OUT = 1 << 16 };
        if (inflateReset2(&as->z, 16 + MAX_WBITS) != Z_OK)
            return err_set(err, ERR_INTERNAL, "zlib: cannot reset the inflater");
        as->z.next_in = (Bytef *)data;
        as->z.avail_in = (uInt)len;
        int zr = Z_OK;
        while (rc == ERR_OK && zr != Z_STREAM_END) {
            as->z.next_out = as->out;
            as->z.avail_out = OUT;
            zr = inflate(&as->z, Z_NO_FLUSH);
            if (zr != Z_OK && zr != Z_STREAM_END)
                return err_set(err, ERR_INVALID, "a stored chunk is not valid gzip (zlib %d)", zr);
            rc = put_bytes(as, as->out, OUT - as->z.avail_out, err);
            if (zr == Z_OK && as->z.avail_in == 0 && as->z.avail_out != 0)
                return err_set(err, ERR_INVALID, "a stored chunk is truncated gzip");
        }
    }
    if (rc == ERR_OK && as->written - before != bytes)
        rc = err_set(err, ERR_INTERNAL, "a stored chunk has %llu bytes, %u recorded",
                     (unsigned long long)(as->written - before), (unsigned)bytes);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    (void)remove(path);   /* ignored: a leftover is reported by the directory's removal */
    return 0;
}

/* The name the file gets on disk (a bare Mach-O's image is named after it): the base name,
 * [A-Za-z0-9._+-] only, no leading dot; "debug-file" if nothing is left. */
static void disk_name(char *out, size_t cap, const char *given)
{
    const char *base = given;
    for (const char *p = given; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    while (*base == '.')
        base++;
    if (!*base)
        base = "debug-file";
    size_t n = strnlen(base, cap - 1);
    memcpy(out, base, n);
    out[n] = '\0';
    for (char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '+' || *p == '-'))
            *p = '_';
}

/* <dir>/<sha1> of a chunk's local copy. */
static void chunk_path(char *out, size_t cap, const char *dir, const char *sha1)
{
    snprintf(out, cap, "%s/%s", dir, sha1);
}

/* 40 lower-case hex digits of a SHA-1 digest. */
static void sha1_hex(char out[41], const uint8_t md[20])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 20; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[40] = '\0';
}

/* The local copy of chunk `sha1` into `buf` (ASSEMBLE_CHUNK_BYTES): its length, or -1 when
 * there is none or it is not the chunk any more (short, too long, other bytes). */
static ssize_t local_chunk_read(uint8_t *buf, const char *dir, const char *sha1)
{
    char path[4096];
    chunk_path(path, sizeof path, dir, sha1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    bool bad = false;
    for (;;) {
        if (got == ASSEMBLE_CHUNK_BYTES) {   /* one byte more would be over the chunk size */
            uint8_t extra;
            bad = read(fd, &extra, 1) != 0;
            break;
        }
        ssize_t n = read(fd, buf + got, ASSEMBLE_CHUNK_BYTES - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            bad = true;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    uint8_t md[20];
    unsigned md_len = 20;
    char hex[41];
    if (bad || EVP_Digest(buf, got, md, &md_len, EVP_sha1(), NULL) != 1)
        return -1;
    sha1_hex(hex, md);
    return strcmp(hex, sha1) == 0 ? (ssize_t)got : -1;
}

/* Keep `len` uncompressed bytes of chunk `sha1` as its local copy. A copy that cannot be
 * written is only a cache miss later: nothing is reported. */
static void local_chunk_write(const char *dir, const char *sha1, const uint8_t *data, size_t len)
{
    char path[4096], tmp[4160];
    chunk_path(path, sizeof path, dir, sha1);
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return;
    bool ok = true;
    while (ok && len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        ok = n > 0;
        if (ok) {
            data += n;
            len -= (size_t)n;
        }
    }
    if (close(fd) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0)
        (void)unlink(tmp);   /* ignored: the sweep removes what is left */
}

/* ---- chunks put in place ---------------------------------------------------------------- */

static void expected_path(char *out, size_t cap, const ingest_assembler *asm_, const char *sha1)
{
    snprintf(out, cap, "%s/%s", asm_->file_dir, sha1);
}

/* Free `e`, taken off the list with no writer left, and delete its file. */
static void expected_drop(ingest_assembler *asm_, expected *e)
{
    if (!e)
        return;
    char path[4096];
    expected_path(path, sizeof path, asm_, e->sha1);
    (void)unlink(path);   /* ignored: gone once the assembly moved it; <tmp_dir> is emptied at start */
    if (e->fd >= 0)
        close(e->fd);
    free(e->chunks);
    free(e->placed);
    free(e);
}

void ingest_assembler_expect(ingest_assembler *asm_, const char *sha1, const char *const *chunks,
                             size_t n)
{
    if (n == 0)
        return;
    expected *old = NULL;
    pthread_mutex_lock(&asm_->mu);
    for (expected *e = asm_->expect; e; e = e->next)
        if (strcmp(e->sha1, sha1) == 0) {   /* expected already: keep what it has */
            pthread_mutex_unlock(&asm_->mu);
            return;
        }
    if (asm_->nexpect >= EXPECT_MAX) {   /* make room: the oldest one nobody writes into */
        expected **p = &asm_->expect, **victim = NULL;
        for (; *p; p = &(*p)->next)
            if ((*p)->writers == 0)
                victim = p;
        if (!victim) {
            pthread_mutex_unlock(&asm_->mu);
            return;
        }
        old = *victim;
        *victim = old->next;
        asm_->nexpect--;
    }
    expected *e = xcalloc(1, sizeof *e);
    snprintf(e->sha1, sizeof e->sha1, "%s", sha1);
    e->n = n;
    e->chunks = xcalloc(n, sizeof *e->chunks);
    e->placed = xcalloc(n, sizeof *e->placed);
    for (size_t i = 0; i < n; i++)
        snprintf(e->chunks[i], sizeof e->chunks[i], "%s", chunks[i]);
    e->created = time(NULL);
    char path[4096];
    expected_path(path, sizeof path, asm_, sha1);
    e->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (e->fd >= 0) {
        e->next = asm_->expect;
        asm_->expect = e;
        asm_->nexpect++;
        e = NULL;
    }
    pthread_mutex_unlock(&asm_->mu);
    expected_drop(asm_, old);
    if (e) {   /* no file: the chunks go to local copies as before */
        e->fd = -1;
        free(e->chunks);
        free(e->placed);
        free(e);
    }
}

static bool pwrite_all(int fd, const uint8_t *data, size_t len, off_t at)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, data, len, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
        at += n;
    }
    return true;
}

/* Write chunk `sha1` (`len` checked bytes) at its offset in the expected files that list it,
 * at most PLACE_MAX places. True if every place that wanted it has it now: no local copy is
 * needed then. */
static bool chunk_place(ingest_assembler *asm_, const char *sha1, const uint8_t *data,
                        size_t len)
{
    struct {
        expected *e;
        size_t i;
        bool ok;
    } to[PLACE_MAX];
    size_t nto = 0;
    bool all = true;
    pthread_mutex_lock(&asm_->mu);
    for (expected *e = asm_->expect; e && all; e = e->next)
        for (size_t i = 0; i < e->n && !e->broken && all; i++) {
            if (e->placed[i] || strcmp(e->chunks[i], sha1) != 0)
                continue;
            if (nto == PLACE_MAX) {
                all = false;
                break;
            }
            to[nto].e = e;
            to[nto++].i = i;
            e->writers++;
        }
    pthread_mutex_unlock(&asm_->mu);
    for (size_t k = 0; k < nto; k++) {
        expected *e = to[k].e;
        /* every chunk but the last is exactly the chunk size, or the offsets are wrong */
        to[k].ok = (to[k].i + 1 == e->n || len == ASSEMBLE_CHUNK_BYTES) &&
                   pwrite_all(e->fd, data, len, (off_t)to[k].i * ASSEMBLE_CHUNK_BYTES);
    }
    pthread_mutex_lock(&asm_->mu);
    for (size_t k = 0; k < nto; k++) {
        expected *e = to[k].e;
        if (to[k].ok)
            e->placed[to[k].i] = true;
        else
            e->broken = true;
        all = all && to[k].ok;
        e->writers--;
    }
    if (nto)
        pthread_cond_broadcast(&asm_->done_cv);
    pthread_mutex_unlock(&asm_->mu);
    return nto > 0 && all;
}

/* File `sha1`'s expected entry, off the list once nobody writes into it; NULL if none. */
static expected *expect_take(ingest_assembler *asm_, const char *sha1)
{
    pthread_mutex_lock(&asm_->mu);
    expected **p = &asm_->expect;
    while (*p && strcmp((*p)->sha1, sha1) != 0)
        p = &(*p)->next;
    expected *e = *p;
    if (e) {
        *p = e->next;
        asm_->nexpect--;
        while (e->writers > 0)
            pthread_cond_wait(&asm_->done_cv, &asm_->mu);
    }
    pthread_mutex_unlock(&asm_->mu);
    return e;
}

/* Drop expected files older than the chunk expiry (their upload was abandoned). */
static void expect_sweep(ingest_assembler *asm_)
{
    time_t cutoff = time(NULL) - (time_t)asm_->o.chunk_ttl_s;
    expected *gone = NULL;
    pthread_mutex_lock(&asm_->mu);
    for (expected **p = &asm_->expect; *p;) {
        expected *e = *p;
        if (e->created < cutoff && e->writers == 0) {
            *p = e->next;
            asm_->nexpect--;
            e->next = gone;
            gone = e;
        } else {
            p = &e->next;
        }
    }
    pthread_mutex_unlock(&asm_->mu);
    while (gone) {
        expected *next = gone->next;
        expected_drop(asm_, gone);
        gone = next;
    }
}

/* ---- putting a file together ------------------------------------------------------------ */

/* The chunks of job `j` in order into a new file at `as->path`, hashed on the way; *local =
 * chunks taken from local copies. Errors ERR_INVALID (the file's SHA-1 differs), as
 * store_chunks_fetch, ERR_IO. */
static err_code gather_sequential(size_t *local, ingest_assembler *asm_, const job *j,
                                  assembly *as, err_info *err)
{
    const char **chunks = xcalloc(j->n ? j->n : 1, sizeof *chunks);
    for (size_t i = 0; i < j->n; i++)
        chunks[i] = j->chunks[i];
    err_code rc = ERR_OK;
    as->fd = open(as->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (as->fd < 0) {
        rc = err_set(err, ERR_IO, "creating %s: %s", as->path, strerror(errno));
        goto done;
    }
    for (size_t i = 0; rc == ERR_OK && i < j->n; i++) {
        ssize_t len = local_chunk_read(as->chunk, asm_->chunk_dir, chunks[i]);
        if (len >= 0) {
            as->local++;
            rc = put_bytes(as, as->chunk, (size_t)len, err);
        } else {
            rc = store_chunks_fetch(asm_->o.store, &chunks[i], 1, put_chunk, as, err);
        }
    }
    if (rc != ERR_OK)
        goto done;
    int fd = as->fd;
    as->fd = -1;
    if (close(fd) != 0) {
        rc = err_set(err, ERR_IO, "writing %s: %s", as->path, strerror(errno));
        goto done;
    }
    uint8_t md[20];
    unsigned md_len = 20;
    if (EVP_DigestFinal_ex(as->sha1, md, &md_len) != 1) {
        rc = err_set(err, ERR_INTERNAL, "sha1: OpenSSL digest failed");
        goto done;
    }
    char hex[41];
    sha1_hex(hex, md);
    if (strcmp(hex, j->sha1) != 0)
        rc = err_set(err, ERR_INVALID, "the chunks put together have SHA-1 %s, not the checksum "
                     "%s the file was sent with", hex, j->sha1);
done:
    *local = as->local;
    free(chunks);
    return rc;
}

/* Job `j` from its expected file `e` (taken off the list): the chunks that were not put in
 * place are written at their offsets (a local copy, else Postgres), the whole file is hashed
 * and, if it is the file named, moved to `as->path`; `sha256_hex` = its SHA-256 (hashed in
 * the same pass: the ingest then need not read the file for it). *placed, *local = chunks
 * found in place, from local copies. ERR_NOT_FOUND when the file cannot be used as it is
 * (another chunk list, a chunk of another size, or another SHA-1): the caller puts it
 * together sequentially. */
static err_code gather_placed(size_t *placed, size_t *local, char sha256_hex[65],
                              ingest_assembler *asm_, const job *j, expected *e, assembly *as,
                              err_info *err)
{
    char from[4096];
    err_code rc = ERR_OK;
    *placed = 0;
    *local = 0;
    if (e->broken || e->n != j->n)
        return ERR_NOT_FOUND;
    for (size_t i = 0; i < j->n; i++)
        if (strcmp(e->chunks[i], j->chunks[i]) != 0)
            return ERR_NOT_FOUND;
    as->fd = e->fd;   /* borrowed: put_bytes writes the missing chunks through it */
    for (size_t i = 0; rc == ERR_OK && i < j->n; i++) {
        if (e->placed[i]) {
            (*placed)++;
            continue;
        }
        uint64_t before = as->written;
        if (lseek(e->fd, (off_t)i * ASSEMBLE_CHUNK_BYTES, SEEK_SET) < 0) {
            rc = err_set(err, ERR_IO, "seeking in %s: %s", e->sha1, strerror(errno));
            break;
        }
        ssize_t len = local_chunk_read(as->chunk, asm_->chunk_dir, j->chunks[i]);
        if (len >= 0) {
            (*local)++;
            rc = put_bytes(as, as->chunk, (size_t)len, err);
        } else {
            const char *one = j->chunks[i];
            rc = store_chunks_fetch(asm_->o.store, &one, 1, put_chunk, as, err);
        }
        if (rc == ERR_OK && i + 1 < j->n && as->written - before != ASSEMBLE_CHUNK_BYTES)
            rc = ERR_NOT_FOUND;
    }
    as->fd = -1;
    if (rc != ERR_OK)
        return rc;
    /* The whole file's SHA-1 (the check) and SHA-256 (its blob's name), in one pass over it
     * (the digest fed by put_bytes above is not used). */
    uint8_t md[20], md256[32];
    unsigned md_len = 20, md256_len = 32;
    EVP_MD_CTX *c1 = EVP_MD_CTX_new(), *c256 = EVP_MD_CTX_new();
    if (!c1 || !c256 || EVP_DigestInit_ex(c1, EVP_sha1(), NULL) != 1 ||
        EVP_DigestInit_ex(c256, EVP_sha256(), NULL) != 1)
        rc = err_set(err, ERR_INTERNAL, "sha1/sha256: cannot initialize OpenSSL digests");
    uint64_t total = 0;
    while (rc == ERR_OK) {
        ssize_t n = pread(e->fd, as->chunk, ASSEMBLE_CHUNK_BYTES, (off_t)total);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = err_set(err, ERR_IO, "reading %s: %s", e->sha1, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(c1, as->chunk, (size_t)n);
        EVP_DigestUpdate(c256, as->chunk, (size_t)n);
        total += (uint64_t)n;
        if (total > as->max)
            rc = err_set(err, ERR_TOO_LARGE, "the assembled file is larger than the limit of "
                         "%llu bytes", (unsigned long long)as->max);
    }
    if (rc == ERR_OK && (EVP_DigestFinal_ex(c1, md, &md_len) != 1 ||
                         EVP_DigestFinal_ex(c256, md256, &md256_len) != 1))
        rc = err_set(err, ERR_INTERNAL, "sha1/sha256: OpenSSL digest failed");
    EVP_MD_CTX_free(c1);
    EVP_MD_CTX_free(c256);
    if (rc != ERR_OK)
        return rc;
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        sha256_hex[2 * i] = digits[md256[i] >> 4];
        sha256_hex[2 * i + 1] = digits[md256[i] & 15];
    }
    sha256_hex[64] = '\0';
    char hex[41];
    sha1_hex(hex, md);
    if (strcmp(hex, j->sha1) != 0)
        return ERR_NOT_FOUND;
    expected_path(from, sizeof from, asm_, e->sha1);
    if (rename(from, as->path) != 0)
        return err_set(err, ERR_IO, "moving %s to %s: %s", from, as->path, strerror(errno));
    return ERR_OK;
}

/* Put together, check and ingest one file into `dir`; *file is the debug file to report,
 * *placed and *local the chunks found in place and in local copies. */
static err_code assemble_file(ingest_dsym_file *file, size_t *placed, size_t *local,
                              ingest_assembler *asm_, const job *j, const char *dir, arena *a,
                              err_info *err)
{
    const ingest_assembler_options *o = &asm_->o;
    char name[200], path[4096];
    disk_name(name, sizeof name, j->name);
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return err_set(err, ERR_IO, "scratch path too long in %s", dir);
    assembly as = {.fd = -1, .path = path, .max = o->max_file_bytes};
    err_code rc = ERR_OK;
    bool z_ready = false;
    expected *e = expect_take(asm_, j->sha1);
    *placed = 0;
    *local = 0;
    as.sha1 = EVP_MD_CTX_new();
    if (!as.sha1 || EVP_DigestInit_ex(as.sha1, EVP_sha1(), NULL) != 1) {
        rc = err_set(err, ERR_INTERNAL, "sha1: cannot initialize OpenSSL digest");
        goto done;
    }
    if (inflateInit2(&as.z, 16 + MAX_WBITS) != Z_OK) {
        rc = err_set(err, ERR_INTERNAL, "zlib: cannot initialize the inflater");
        goto done;
    }
    z_ready = true;
    as.out = xmalloc(1 << 16);
    as.chunk = xmalloc(ASSEMBLE_CHUNK_BYTES);
    char sha256_hex[65] = "";
    rc = e ? gather_placed(placed, local, sha256_hex, asm_, j, e, &as, err) : ERR_NOT_FOUND;
    bool in_place = rc == ERR_OK;
    if (rc == ERR_NOT_FOUND) {   /* not in place: in order, from local copies or Postgres */
        *placed = 0;
        as.written = 0;
        as.local = 0;
        rc = EVP_DigestInit_ex(as.sha1, EVP_sha1(), NULL) == 1
                 ? gather_sequential(local, asm_, j, &as, err)
                 : err_set(err, ERR_INTERNAL, "sha1: cannot initialize OpenSSL digest");
    }
    if (rc != ERR_OK)
        goto done;

    char work[4096];
    if (snprintf(work, sizeof work, "%s/work", dir) >= (int)sizeof work || mkdir(work, 0700) != 0) {
        rc = err_set(err, ERR_IO, "creating %s: %s", work, strerror(errno));
        goto done;
    }
    const char *inputs[1] = {path};
    ingest_dsym_file *files;
    size_t n;
    const char *sha256s[1] = {in_place ? sha256_hex : NULL};
    /* a UUID map or BCSymbolMap is sent under its debug id (sentry-cli: from its name) */
    dsym_options dopts = o->dsym;
    dopts.map_uuid = j->debug_id;
    rc = ingest_dsym_upload_hashed(&files, &n, o->store, inputs, sha256s, 1, work, o->cache,
                                   &dopts, a, err);
    if (rc != ERR_OK)
        goto done;
    *file = files[0];
    for (size_t i = 0; i < n; i++)
        if (j->debug_id[0] && strncasecmp(files[i].row.uuid, j->debug_id, 36) == 0)
            *file = files[i];
    /* The file is stored: its chunks' local copies are done with (another file sharing a
     * chunk reads it from Postgres). */
    for (size_t i = 0; i < j->n; i++) {
        char cpath[4096];
        chunk_path(cpath, sizeof cpath, asm_->chunk_dir, j->chunks[i]);
        (void)unlink(cpath);   /* ignored: most often already gone (a chunk used twice) */
    }
done:
    if (as.fd >= 0)
        close(as.fd);
    expected_drop(asm_, e);
    if (z_ready)
        inflateEnd(&as.z);
    free(as.chunk);
    free(as.out);
    EVP_MD_CTX_free(as.sha1);
    return rc;
}

static void run_job(ingest_assembler *asm_, const job *j)
{
    err_info err = {0};
    err_code rc;
    ingest_dsym_file file = {0};
    size_t placed = 0, local = 0;
    char dir[4096];
    arena *a = arena_new(64u << 20);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(dir, sizeof dir, "%s/assemble-XXXXXX", asm_->tmp_dir);
    if (!mkdtemp(dir))
        rc = err_set(&err, ERR_IO, "creating a scratch directory in %s: %s", asm_->tmp_dir,
                     strerror(errno));
    else
        rc = assemble_file(&file, &placed, &local, asm_, j, dir, a, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    err_info ferr;
    err_code frc;
    if (rc == ERR_OK) {
        log_event(LOG_INFO, "dif_assembled", "sha1=%s name=%s chunks=%zu placed_chunks=%zu "
                  "local_chunks=%zu uuid=%s arch=%s status=%s has_dwarf=%d ms=%.1f", j->sha1,
                  j->name, j->n, placed, local, file.row.uuid, file.row.arch, file.status, (int)file.row.has_dwarf, ms);
        frc = store_assembly_finish(asm_->o.store, j->sha1, "ok", NULL, file.row.uuid,
                                    file.row.arch, file.row.has_dwarf, &ferr);
    } else {
        log_event(LOG_WARN, "dif_assembly_failed", "sha1=%s name=%s chunks=%zu error=%s "
                  "message=%s ms=%.1f", j->sha1, j->name, j->n, err_name(rc), err.msg, ms);
        /* the detail is shown to the uploader: the server's own failures (their messages
         * may carry the database's words) are told apart only in the log line above */
        const char *detail = rc == ERR_STORE || rc == ERR_INTERNAL
                                 ? "the server failed to record the file: upload it again "
                                   "(the server's log has the details under its sha1)"
                                 : err.msg;
        frc = store_assembly_finish(asm_->o.store, j->sha1, "error", detail, NULL, NULL, false,
                                    &ferr);
    }
    if (frc != ERR_OK)   /* the row stays "assembling" and is restarted once stale */
        log_event(LOG_WARN, "dif_assembly_unrecorded", "sha1=%s error=%s message=%s", j->sha1,
                  err_name(frc), ferr.msg);
    if (dir[0] && strstr(dir, "XXXXXX") == NULL &&
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        log_event(LOG_WARN, "scratch_cleanup_failed", "dir=%s error=%s", dir, strerror(errno));
    arena_free(a);
}

static void sweep(ingest_assembler *asm_)
{
    unsigned chunks, assemblies;
    err_info err;
    expect_sweep(asm_);
    err_code rc = store_chunks_expire(&chunks, &assemblies, asm_->o.store, asm_->o.chunk_ttl_s,
                                      &err);
    if (rc != ERR_OK)
        log_event(LOG_WARN, "chunks_expire_failed", "error=%s message=%s", err_name(rc), err.msg);
    else if (chunks || assemblies)
        log_event(LOG_INFO, "chunks_expired", "chunks=%u assemblies=%u", chunks, assemblies);
    /* local copies of chunks no file was assembled from (the upload was abandoned) */
    DIR *d = opendir(asm_->chunk_dir);
    if (!d)
        return;
    time_t cutoff = time(NULL) - (time_t)asm_->o.chunk_ttl_s;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
            !S_ISREG(st.st_mode) || st.st_mtime >= cutoff)
            continue;
        (void)unlinkat(dirfd(d), e->d_name, 0);   /* ignored: a race with the assembly */
    }
    closedir(d);
}

static void job_free(job *j)
{
    if (j)
        free(j->chunks);
    free(j);
}

typedef struct {
    ingest_assembler *asm_;
    unsigned slot;        /* index into asm_->running */
} thread_arg;

static void *thread_main(void *varg)
{
    thread_arg *arg = varg;
    ingest_assembler *asm_ = arg->asm_;
    unsigned slot = arg->slot;
    free(arg);
    pthread_mutex_lock(&asm_->mu);
    while (!asm_->stop) {
        time_t now = time(NULL);
        if (now - asm_->last_sweep >= (time_t)asm_->sweep_s) {
            asm_->last_sweep = now;
            pthread_mutex_unlock(&asm_->mu);
            sweep(asm_);
            pthread_mutex_lock(&asm_->mu);
            continue;
        }
        job *j = asm_->head;
        if (!j) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += asm_->sweep_s;
            pthread_cond_timedwait(&asm_->cv, &asm_->mu, &until);
            continue;
        }
        asm_->head = j->next;
        if (!asm_->head)
            asm_->tail = NULL;
        asm_->queued--;
        memcpy(asm_->running[slot], j->sha1, sizeof asm_->running[slot]);
        pthread_mutex_unlock(&asm_->mu);
        run_job(asm_, j);
        job_free(j);
        pthread_mutex_lock(&asm_->mu);
        asm_->running[slot][0] = '\0';
        pthread_cond_broadcast(&asm_->done_cv);
    }
    pthread_mutex_unlock(&asm_->mu);
    return NULL;
}

err_code ingest_assembler_new(ingest_assembler **out, const ingest_assembler_options *o,
                              err_info *err)
{
    *out = NULL;
    ingest_assembler *asm_ = xcalloc(1, sizeof *asm_);
    asm_->o = *o;
    if (!asm_->o.threads)
        asm_->o.threads = 2;
    if (!asm_->o.chunk_ttl_s)
        asm_->o.chunk_ttl_s = 3600;
    asm_->sweep_s = asm_->o.chunk_ttl_s / 4;
    if (asm_->sweep_s > SWEEP_EVERY_S)
        asm_->sweep_s = SWEEP_EVERY_S;
    if (asm_->sweep_s == 0)
        asm_->sweep_s = 1;
    asm_->tmp_dir = xstrdup(o->tmp_dir);
    asm_->o.tmp_dir = asm_->tmp_dir;
    size_t dl = strlen(o->tmp_dir) + sizeof "/chunks";
    asm_->chunk_dir = xmalloc(dl);
    snprintf(asm_->chunk_dir, dl, "%s/chunks", o->tmp_dir);
    asm_->file_dir = xmalloc(dl);
    snprintf(asm_->file_dir, dl, "%s/files", o->tmp_dir);
    const char *dirs[2] = {asm_->chunk_dir, asm_->file_dir};
    for (unsigned i = 0; i < 2; i++)
        if (mkdir(dirs[i], 0700) != 0 && errno != EEXIST) {
            err_set(err, ERR_IO, "creating %s: %s", dirs[i], strerror(errno));
            free(asm_->file_dir);
            free(asm_->chunk_dir);
            free(asm_->tmp_dir);
            free(asm_);
            return ERR_IO;
        }
    pthread_mutex_init(&asm_->mu, NULL);
    pthread_cond_init(&asm_->cv, NULL);
    pthread_cond_init(&asm_->done_cv, NULL);
    asm_->last_sweep = 0;   /* the first thread sweeps at once */
    asm_->threads = xcalloc(asm_->o.threads, sizeof *asm_->threads);
    asm_->running = xcalloc(asm_->o.threads, sizeof *asm_->running);
    for (unsigned i = 0; i < asm_->o.threads; i++) {
        thread_arg *arg = xmalloc(sizeof *arg);
        arg->asm_ = asm_;
        arg->slot = i;
        if (pthread_create(&asm_->threads[i], NULL, thread_main, arg) != 0) {
            free(arg);
            break;
        }
        asm_->nthreads++;
    }
    if (asm_->nthreads == 0) {
        ingest_assembler_free(asm_);
        return err_set(err, ERR_INTERNAL, "cannot start a debug-file assembly thread");
    }
    *out = asm_;
    return ERR_OK;
}

bool ingest_assembler_submit(ingest_assembler *asm_, const char *sha1, const char *name,
                             const char *debug_id, const char *const *chunks, size_t n)
{
    job *j = xcalloc(1, sizeof *j);
    snprintf(j->sha1, sizeof j->sha1, "%s", sha1);
    snprintf(j->name, sizeof j->name, "%s", name);
    snprintf(j->debug_id, sizeof j->debug_id, "%s", debug_id ? debug_id : "");
    j->n = n;
    j->chunks = xcalloc(n ? n : 1, sizeof *j->chunks);
    for (size_t i = 0; i < n; i++)
        snprintf(j->chunks[i], sizeof j->chunks[i], "%s", chunks[i]);
    pthread_mutex_lock(&asm_->mu);
    bool ok = !asm_->stop && asm_->queued < QUEUE_MAX;
    if (ok) {
        if (asm_->tail)
            asm_->tail->next = j;
        else
            asm_->head = j;
        asm_->tail = j;
        asm_->queued++;
        pthread_cond_signal(&asm_->cv);
    }
    pthread_mutex_unlock(&asm_->mu);
    if (!ok)
        job_free(j);
    return ok;
}

void ingest_assembler_free(ingest_assembler *asm_)
{
    if (!asm_)
        return;
    pthread_mutex_lock(&asm_->mu);
    asm_->stop = true;
    pthread_cond_broadcast(&asm_->cv);
    pthread_cond_broadcast(&asm_->done_cv);
    pthread_mutex_unlock(&asm_->mu);
    for (unsigned i = 0; i < asm_->nthreads; i++)
        pthread_join(asm_->threads[i], NULL);
    for (job *j = asm_->head, *next; j; j = next) {
        next = j->next;
        err_info err;
        /* Ignored on failure: the row is restarted once stale (ASSEMBLE_STALE_S). */
        (void)store_assembly_finish(asm_->o.store, j->sha1, "error",
                                    "the server stopped before assembling this file: upload "
                                    "it again", NULL, NULL, false, &err);
        job_free(j);
    }
    while (asm_->expect) {   /* no chunk request runs any more: no writer */
        expected *e = asm_->expect;
        asm_->expect = e->next;
        expected_drop(asm_, e);
    }
    pthread_mutex_destroy(&asm_->mu);
    pthread_cond_destroy(&asm_->cv);
    pthread_cond_destroy(&asm_->done_cv);
    free(asm_->threads);
    free(asm_->running);
    free(asm_->chunk_dir);
    free(asm_->file_dir);
    free(asm_->tmp_dir);
    free(asm_);
}

/* True while file `sha1` is queued or being assembled here. Called with asm_->mu held. */
static bool pending_locked(const ingest_assembler *asm_, const char *sha1)
{
    for (const job *j = asm_->head; j; j = j->next)
        if (strcmp(j->sha1, sha1) == 0)
            return true;
    for (unsigned i = 0; i < asm_->nthreads; i++)
        if (strcmp(asm_->running[i], sha1) == 0)
            return true;
    return false;
}

bool ingest_assembler_wait(ingest_assembler *asm_, const char *sha1, unsigned timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&asm_->mu);
    bool was = pending_locked(asm_, sha1), pending = was;
    while (pending && !asm_->stop &&
           pthread_cond_timedwait(&asm_->done_cv, &asm_->mu, &until) == 0)
        pending = pending_locked(asm_, sha1);
    if (pending)
        pending = pending_locked(asm_, sha1);
    pthread_mutex_unlock(&asm_->mu);
    return was && !pending;
}

/* ---- chunks in ------------------------------------------------------------------------- */

/* The file at `path` into a malloc'd buffer (*out, *len), refusing more than `max` bytes. */
static err_code read_part(uint8_t **out, size_t *len, const char *path, size_t max,
                          err_info *err)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, ERR_IO, "opening %s: %s", path, strerror(errno));
    struct stat st;
    err_code rc = ERR_OK;
    if (fstat(fd, &st) != 0) {
        rc = err_set(err, ERR_IO, "reading %s: %s", path, strerror(errno));
    } else if ((uint64_t)st.st_size > max) {
        rc = err_set(err, ERR_TOO_LARGE, "a chunk of %lld bytes is over the chunk size of %u "
                     "bytes", (long long)st.st_size, ASSEMBLE_CHUNK_BYTES);
    } else {
        uint8_t *buf = xmalloc((size_t)st.st_size + 1);
        size_t got = 0;
        while (rc == ERR_OK && got < (size_t)st.st_size) {
            ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                rc = err_set(err, ERR_IO, "reading %s: %s", path,
                             n < 0 ? strerror(errno) : "file shrank");
            else
                got += (size_t)n;
        }
        if (rc == ERR_OK) {
            *out = buf;
            *len = got;
        } else {
            free(buf);
        }
    }
    close(fd);
    return rc;
}

static bool is_sha1(const char *s)
{
    size_t n = strspn(s, "0123456789abcdefABCDEF");
    return n == 40 && s[40] == '\0';
}

/* Check one part: *bytes = its uncompressed size. `plain` is a buffer of
 * ASSEMBLE_CHUNK_BYTES for the inflated bytes. */
static err_code check_part(uint32_t *bytes, const ingest_chunk_part *p, const uint8_t *data,
                           size_t len, uint8_t *plain, err_info *err)
{
    const uint8_t *raw = data;
    size_t raw_len = len;
    if (p->gzip) {
        z_stream z = {0};
        if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
            return err_set(err, ERR_INTERNAL, "zlib: cannot initialize the inflater");
        z.next_in = (Bytef *)data;
        z.avail_in = (uInt)len;
        z.next_out = plain;
        z.avail_out = ASSEMBLE_CHUNK_BYTES;
        int zr = inflate(&z, Z_FINISH);
        size_t out = ASSEMBLE_CHUNK_BYTES - z.avail_out;
        inflateEnd(&z);
        if (zr != Z_STREAM_END && z.avail_out == 0)
            return err_set(err, ERR_TOO_LARGE, "chunk %s inflates to more than the chunk size "
                           "of %u bytes", p->sha1, ASSEMBLE_CHUNK_BYTES);
        if (zr != Z_STREAM_END)
            return err_set(err, ERR_INVALID, "chunk %s is not valid gzip (%s)", p->sha1,
                           zr == Z_BUF_ERROR ? "truncated" : "corrupt");
        raw = plain;
        raw_len = out;
    } else if (len > ASSEMBLE_CHUNK_BYTES) {
        return err_set(err, ERR_TOO_LARGE, "chunk %s of %zu bytes is over the chunk size of %u "
                       "bytes", p->sha1, len, ASSEMBLE_CHUNK_BYTES);
    }
    uint8_t md[20];
    unsigned md_len = 20;
    if (EVP_Digest(raw, raw_len, md, &md_len, EVP_sha1(), NULL) != 1)
        return err_set(err, ERR_INTERNAL, "sha1: OpenSSL digest failed");
    char hex[41];
    for (unsigned i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (strcasecmp(hex, p->sha1) != 0)
        return err_set(err, ERR_INVALID, "chunk %s: its bytes have SHA-1 %s (a chunk is named "
                       "by the SHA-1 of its uncompressed bytes)", p->sha1, hex);
    *bytes = (uint32_t)raw_len;
    return ERR_OK;
}

err_code ingest_assembler_chunks_store(unsigned *created, ingest_assembler *asm_,
                                       const ingest_chunk_part *parts, size_t n, err_info *err)
{
    store *s = asm_->o.store;
    /* what a gzip member of an incompressible chunk may take, with room for its header */
    const size_t max_part = ASSEMBLE_CHUNK_BYTES + (ASSEMBLE_CHUNK_BYTES >> 6) + 4096;
    uint8_t *plain = xmalloc(ASSEMBLE_CHUNK_BYTES);
    uint32_t *bytes = xcalloc(n ? n : 1, sizeof *bytes);
    err_code rc = ERR_OK;
    *created = 0;
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        if (!is_sha1(parts[i].sha1)) {
            rc = err_set(err, ERR_INVALID, "chunk part %zu is named \"%.64s\", not the SHA-1 of "
                         "its bytes (40 hex digits)", i, parts[i].sha1);
            break;
        }
        uint8_t *data;
        size_t len;
        rc = read_part(&data, &len, parts[i].path, max_part, err);
        if (rc == ERR_OK)
            rc = check_part(&bytes[i], &parts[i], data, len, plain, err);
        if (rc == ERR_OK) {   /* the uncompressed bytes, checked: in place, else a copy */
            char sha1[41];
            for (size_t k = 0; k < 40; k++)
                sha1[k] = (char)(parts[i].sha1[k] | 0x20);   /* hex digits: lower case */
            sha1[40] = '\0';
            const uint8_t *raw = parts[i].gzip ? plain : data;
            if (!chunk_place(asm_, sha1, raw, bytes[i]))
                local_chunk_write(asm_->chunk_dir, sha1, raw, bytes[i]);
        }
        free(data);
    }
    /* Every part is right: store them (read again: one part in memory at a time). */
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        char sha1[41];
        for (size_t k = 0; k < 40; k++)
            sha1[k] = (char)(parts[i].sha1[k] | 0x20);   /* hex digits: lower case */
        sha1[40] = '\0';
        uint8_t *data;
        size_t len;
        bool made = false;
        rc = read_part(&data, &len, parts[i].path, max_part, err);
        if (rc == ERR_OK)
            rc = store_chunk_put(&made, s, sha1, parts[i].gzip, bytes[i], data, len, err);
        free(data);
        *created += made;
    }
    free(bytes);
    free(plain);
    return rc;
}
