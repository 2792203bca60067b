/*
 * bytes - a read-only view of a whole file, memory-mapped (or an empty view for a 0-byte file).
 */
#ifndef STACKSIFT_BASE_BYTES_H
#define STACKSIFT_BASE_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct {
    const uint8_t *data; /* `len` readable bytes; NULL when len == 0 */
    size_t len;          /* file size in bytes */
} bytes;

/* bytes_map_file - map `path` read-only into *out. Unmap with bytes_unmap().
 * Errors  ERR_NOT_FOUND (no such file), ERR_IO (not a regular file, open/mmap failed). */
err_code bytes_map_file(bytes *out, const char *path, err_info *err);

/* bytes_unmap - release a mapping made by bytes_map_file; a zeroed view is a no-op. */
void bytes_unmap(bytes *b);

/* bytes_read_file - read all of `path` into a malloc'd buffer (caller frees *out); for small
 * files and pipes. Errors ERR_NOT_FOUND, ERR_IO, ERR_TOO_LARGE (over max_len bytes). */
err_code bytes_read_fd(uint8_t **out, size_t *out_len, int fd, size_t max_len, err_info *err);

#endif
