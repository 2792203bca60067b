#include "base/bytes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"

err_code bytes_map_file(bytes *out, const char *path, err_info *err)
{
    struct stat st;
    err_code rc = ERR_OK;
    out->data = NULL;
    out->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = err_set(err, ERR_IO, "cannot stat %s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = err_set(err, ERR_IO, "%s is not a regular file", path);
        goto done;
    }
    if (st.st_size == 0)
        goto done;
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        rc = err_set(err, ERR_IO, "cannot map %s: %s", path, strerror(errno));
        goto done;
    }
    out->data = p;
    out->len = (size_t)st.st_size;
done:
    close(fd);
    return rc;
}

void bytes_unmap(bytes *b)
{
    if (b->data != NULL)
        munmap((void *)b->data, b->len);
    b->data = NULL;
    b->len = 0;
}

err_code bytes_read_fd(uint8_t **out, size_t *out_len, int fd, size_t max_len, err_info *err)
{
    size_t cap = 64 * 1024, len = 0;
    uint8_t *buf = xmalloc(cap);
    *out = NULL;
    *out_len = 0;
    for (;;) {
        if (len == cap) {
            if (cap > max_len) {
                free(buf);
                return err_set(err, ERR_TOO_LARGE, "input is larger than %zu bytes", max_len);
            }
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return err_set(err, ERR_IO, "cannot read input: %s", strerror(errno));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > max_len) {
        free(buf);
        return err_set(err, ERR_TOO_LARGE, "input is larger than %zu bytes", max_len);
    }
    *out = buf;
    *out_len = len;
    return ERR_OK;
}
