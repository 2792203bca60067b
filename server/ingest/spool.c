/*
 * spool.c - the disk spool (spool.h): one file per entry, written with the
 * write-fsync-rename-fsync(dir) sequence that makes a file appear whole or not at all.
 */
#include "ingest/spool.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"

#define SPOOL_SUFFIX ".spool"
#define SPOOL_TMP_SUFFIX ".tmp"

struct spool {
    pthread_mutex_t mu;
    char *dir;
    uint64_t max_bytes;
    uint64_t bytes;      /* of the entry files on disk */
    uint64_t entries;
    uint64_t next_seq;   /* the next entry's number */
    uint64_t reserved;   /* bytes of writes under way (counted before they land) */
};

/* mkdir -p */
static err_code make_dirs(const char *path, err_info *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return err_set(err, ERR_IO, "spool directory path is too long");
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
            return err_set(err, ERR_IO, "spool: cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return err_set(err, ERR_IO, "spool: cannot create %s: %s", tmp, strerror(errno));
    return ERR_OK;
}

static bool has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n > k && strcmp(name + n - k, suffix) == 0;
}

/* The sequence number of an entry file name ("00000000000000a3.spool"), false if none. */
static bool seq_of(const char *name, uint64_t *seq)
{
    if (strlen(name) != 16 + strlen(SPOOL_SUFFIX) || !has_suffix(name, SPOOL_SUFFIX))
        return false;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = name[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v = (v << 4) | (uint64_t)d;
    }
    *seq = v;
    return true;
}

static void entry_path(char *out, size_t cap, const spool *s, uint64_t seq, const char *suffix)
{
    snprintf(out, cap, "%s/%016" PRIx64 "%s", s->dir, seq, suffix);
}

static err_code fsync_dir(const char *dir, err_info *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return err_set(err, ERR_IO, "spool: cannot open %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0)
        return err_set(err, ERR_IO, "spool: fsync of %s failed: %s", dir, strerror(e));
    return ERR_OK;
}

err_code spool_open(spool **out, const char *dir, uint64_t max_bytes, err_info *err)
{
    *out = NULL;
    err_code rc = make_dirs(dir, err);
    if (rc != ERR_OK)
        return rc;
    DIR *d = opendir(dir);
    if (d == NULL)
        return err_set(err, ERR_IO, "spool: cannot read %s: %s", dir, strerror(errno));
    spool *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->dir = xstrdup(dir);
    s->max_bytes = max_bytes;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        uint64_t seq;
        if (has_suffix(e->d_name, SPOOL_TMP_SUFFIX)) {
            unlink(path); /* an interrupted write: its client never heard 200 */
            continue;
        }
        struct stat st;
        if (!seq_of(e->d_name, &seq) || stat(path, &st) != 0)
            continue;
        s->entries++;
        s->bytes += (uint64_t)st.st_size;
        if (seq >= s->next_seq)
            s->next_seq = seq + 1;
    }
    closedir(d);
    *out = s;
    return ERR_OK;
}

void spool_close(spool *s)
{
    if (s == NULL)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->dir);
    free(s);
}

static err_code write_all(int fd, const void *p, size_t n, const char *path, err_info *err)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return err_set(err, ERR_IO, "spool: write to %s failed: %s", path, strerror(errno));
        b += w;
        n -= (size_t)w;
    }
    return ERR_OK;
}

err_code spool_put(spool *s, int64_t project_id, const char *kind, const uint8_t *body,
                   size_t len, err_info *err)
{
    char head[96];
    int hn = snprintf(head, sizeof head, "stacksift-spool 1 %" PRId64 " %s\n", project_id, kind);
    uint64_t need = (uint64_t)hn + len;
    pthread_mutex_lock(&s->mu);
    if (s->bytes + s->reserved + need > s->max_bytes) {
        uint64_t used = s->bytes + s->reserved;
        pthread_mutex_unlock(&s->mu);
        return err_set(err, ERR_BUSY, "the database is unreachable and this node's spool is "
                       "full (%" PRIu64 " of %" PRIu64 " bytes): retry later", used, s->max_bytes);
    }
    uint64_t seq = s->next_seq++;
    s->reserved += need;
    pthread_mutex_unlock(&s->mu);

    char tmp[4200], path[4200];
    entry_path(tmp, sizeof tmp, s, seq, SPOOL_TMP_SUFFIX);
    entry_path(path, sizeof path, s, seq, SPOOL_SUFFIX);
    err_code rc = ERR_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = err_set(err, ERR_IO, "spool: cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    rc = write_all(fd, head, (size_t)hn, tmp, err);
    if (rc == ERR_OK)
        rc = write_all(fd, body, len, tmp, err);
    if (rc == ERR_OK && fsync(fd) != 0)
        rc = err_set(err, ERR_IO, "spool: fsync of %s failed: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == ERR_OK)
        rc = err_set(err, ERR_IO, "spool: close of %s failed: %s", tmp, strerror(errno));
    if (rc == ERR_OK && rename(tmp, path) != 0)
        rc = err_set(err, ERR_IO, "spool: rename to %s failed: %s", path, strerror(errno));
    if (rc == ERR_OK)
        rc = fsync_dir(s->dir, err); /* the rename itself is durable only then */
    if (rc != ERR_OK)
        unlink(tmp);
done:
    pthread_mutex_lock(&s->mu);
    s->reserved -= need;
    if (rc == ERR_OK) {
        s->bytes += need;
        s->entries++;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

err_code spool_oldest(spool_entry *out, spool *s, arena *a, err_info *err)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(s->dir);
    if (d == NULL)
        return err_set(err, ERR_IO, "spool: cannot read %s: %s", s->dir, strerror(errno));
    bool found = false;
    uint64_t best = 0, seq;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (seq_of(e->d_name, &seq) && (!found || seq < best)) {
            best = seq;
            found = true;
        }
    closedir(d);
    if (!found)
        return err_set(err, ERR_NOT_FOUND, "spool is empty");
    out->seq = best;
    char path[4200];
    entry_path(path, sizeof path, s, best, SPOOL_SUFFIX);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return err_set(err, ERR_IO, "spool: cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return err_set(err, ERR_IO, "spool: cannot stat %s: %s", path, strerror(errno));
    }
    size_t n = (size_t)st.st_size;
    uint8_t *data = arena_alloc(a, n + 1, err);
    if (data == NULL) {
        fclose(f);
        return ERR_TOO_LARGE;
    }
    size_t got = fread(data, 1, n, f);
    fclose(f);
    if (got != n)
        return err_set(err, ERR_IO, "spool: short read of %s", path);
    data[n] = '\0';
    out->file_bytes = n;
    const uint8_t *nl = memchr(data, '\n', n < 96 ? n : 96);
    char kind[16];
    long long pid;
    if (nl == NULL || sscanf((const char *)data, "stacksift-spool 1 %lld %15s", &pid, kind) != 2)
        return err_set(err, ERR_INVALID, "spool: %s is not a spool entry", path);
    out->project_id = pid;
    snprintf(out->kind, sizeof out->kind, "%s", kind);
    out->body = nl + 1;
    out->len = n - (size_t)(nl + 1 - data);
    return ERR_OK;
}

err_code spool_remove(spool *s, uint64_t seq, err_info *err)
{
    char path[4200];
    entry_path(path, sizeof path, s, seq, SPOOL_SUFFIX);
    struct stat st;
    uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
    if (unlink(path) != 0)
        return err_set(err, ERR_IO, "spool: cannot remove %s: %s", path, strerror(errno));
    /* best effort: an entry that comes back after a crash is replayed again, and replay
     * skips reports already stored */
    (void)fsync_dir(s->dir, err);
    err_clear(err);
    pthread_mutex_lock(&s->mu);
    s->bytes -= size <= s->bytes ? size : s->bytes;
    if (s->entries > 0)
        s->entries--;
    pthread_mutex_unlock(&s->mu);
    return ERR_OK;
}

void spool_stats(spool *s, uint64_t *entries, uint64_t *bytes)
{
    pthread_mutex_lock(&s->mu);
    *entries = s->entries;
    *bytes = s->bytes;
    pthread_mutex_unlock(&s->mu);
}
