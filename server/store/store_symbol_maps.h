/*
 * store_symbol_maps - UUID maps and BCSymbolMaps of App Store (bitcode) dSYMs
 * (migrations/0017): what reveals a dSYM's `__hidden#N_` names (common/symbolmap).
 * Errors as in store.h, plus ERR_IO for a blob's local file.
 */
#ifndef STACKSIFT_STORE_STORE_SYMBOL_MAPS_H
#define STACKSIFT_STORE_STORE_SYMBOL_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"
#include "store/store_blobs.h"
#include "store/store_dsyms.h"

typedef struct {
    char uuid[37];       /* the App Store dSYM slice */
    char original[37];   /* its DBGOriginalUUID */
} store_uuid_map;

typedef struct {
    char uuid[37];          /* the archived build */
    uint32_t names;         /* lines after the header */
    int64_t bytes;
    store_blob_file file;   /* its bytes: SHA-256 and a local file */
    bool created;           /* out: a new row (false: that UUID's map was stored already) */
} store_symbol_map;

/*
 * store_symbol_maps_record - in ONE transaction: each UUID map inserted or, for a known dSYM
 * UUID, pointed at its new original; each BCSymbolMap inserted with its blob (a UUID stored
 * already keeps its map: maps[i].created = false).
 * Errors ERR_STORE, ERR_IO, ERR_INVALID (a malformed UUID).
 */
err_code store_symbol_maps_record(const store_uuid_map *uuidmaps, size_t nu,
                                  store_symbol_map *maps, size_t nm, store *s, err_info *err);

/*
 * store_symbol_map_short - a stored hidden dSYM that needs BCSymbolMap `uuid` (its UUID map
 * names it, or it is its own UUID) and refers to more than `names` names: the map cannot be
 * its. *found says whether there is one; then dsym_uuid and *need (the lines it needs).
 * Errors ERR_STORE.
 */
err_code store_symbol_map_short(bool *found, char dsym_uuid[37], uint32_t *need, store *s,
                                const char *uuid, uint32_t names, err_info *err);

/*
 * store_symbol_map_find - for dSYM slice `uuid`: `original` (in: "" = look up its stored UUID
 * map; out: the original UUID, "" when none is stored) and the blob `sha256` of the stored
 * BCSymbolMap of coalesce(original, uuid).
 * Errors ERR_NOT_FOUND (no such map), ERR_STORE.
 */
err_code store_symbol_map_find(char original[37], char sha256[65], store *s, const char *uuid,
                               err_info *err);

/* store_dsyms_to_reveal - every stored dSYM with hidden names whose BCSymbolMap (through its
 * UUID map, else its own UUID) is stored and long enough, in `a`. Errors ERR_STORE,
 * ERR_TOO_LARGE. */
err_code store_dsyms_to_reveal(store_dsym_original **out, size_t *n, store *s, arena *a,
                               err_info *err);

/*
 * store_dsym_reveal - in ONE transaction: point dSYM `uuid` at its revealed symcache `file`
 * (if its symcache is still `expect_sha256`), record what is still hidden and the map used,
 * and release the reports and call sites that wait for it (back to the queue: they are
 * symbolicated and grouped again by themselves). *done = false when the row changed meanwhile.
 * Errors ERR_STORE, ERR_IO.
 */
err_code store_dsym_reveal(bool *done, store *s, const char *uuid, const char *expect_sha256,
                           const store_blob_file *file, int64_t symcache_bytes,
                           int32_t functions, uint32_t hidden_names, const char *revealed_by,
                           err_info *err);

#endif
