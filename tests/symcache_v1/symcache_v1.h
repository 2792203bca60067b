/*
 * symcache_v1 - the version-1 symcache builder and reader, frozen as they were when version 2
 * replaced them (common/symcache at the commit before), kept only so that
 * tests/symcache_roundtrip.c can check that every (address -> frames) answer of the new format
 * equals the old one. Not part of the product: nothing outside that test links it.
 */
#ifndef STACKSIFT_TESTS_SYMCACHE_V1_H
#define STACKSIFT_TESTS_SYMCACHE_V1_H

#include "base/buf.h"
#include "symcache/symcache.h"
#include "symcache/symcache_build.h"

typedef struct symcache_v1 symcache_v1;

err_code symcache_v1_build(buf *out, symcache_build_stats *stats, const macho_image *img,
                           const debuginfo *di, const char *image_name, unsigned threads,
                           err_info *err);
err_code symcache_v1_open_bytes(symcache_v1 **out, const uint8_t *data, size_t len, err_info *err);
err_code symcache_v1_open(symcache_v1 **out, const char *path, err_info *err);
void symcache_v1_close(symcache_v1 *sc);
size_t symcache_v1_lookup(symcache_frame *out, size_t cap, const symcache_v1 *sc, uint64_t file_addr);
const char *symcache_v1_image_name(const symcache_v1 *sc);
uint64_t symcache_v1_text_vmaddr(const symcache_v1 *sc);
uint32_t symcache_v1_range_count(const symcache_v1 *sc);

#endif
