/*
 * symbolmap - the two files that undo the name hiding of an App Store (bitcode) dSYM.
 *
 * When App Store Connect recompiles an app's bitcode, the dSYM it hands out names every
 * function, symbol, file and directory `__hidden#N_`, and holds a UUID map
 * (`Contents/Resources/<dSYM UUID>.plist`) whose `DBGOriginalUUID` names the build the
 * developer archived. That build's BCSymbolMap (`<.xcarchive>/BCSymbolMaps/<original
 * UUID>.bcsymbolmap`) is a text file: a header line `BCSymbolMap Version: 2.0`, then one
 * string a line; `__hidden#N_` is line N after the header, counting from 0.
 *
 * A Mach-O symbol-table name is the map's line as the linker wrote it (`_addJSONData`, with
 * the C underscore; `-[Foo bar]`), so debuginfo (which strips one leading underscore from
 * symbol-table names) reads a hidden symbol as `_hidden#N_`: symbolmap_reveal takes that
 * form too, when it is the whole string, and strips the underscore from what it reveals.
 *
 * Sources: getsentry/symbolic symbolic-debuginfo (macho/bcsymbolmap.rs), the fixtures in
 * ../shared/real-dsyms/symbolic-bitcode and crashprobe-2017-release.
 */
#ifndef STACKSIFT_SYMBOLMAP_SYMBOLMAP_H
#define STACKSIFT_SYMBOLMAP_SYMBOLMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

#define SYMBOLMAP_HEADER "BCSymbolMap Version: "
#define SYMBOLMAP_MAX_UUIDMAP_BYTES (1u << 20) /* a UUID map is a few hundred bytes */

typedef struct symbolmap symbolmap; /* opaque: a parsed BCSymbolMap */

/*
 * symbolmap_parse - parse a BCSymbolMap: `len` bytes (no NUL needed), copied, so `data` may
 * go away after the call. Lines end in "\n" (a "\r" before it is dropped).
 * out     owned by the caller: symbolmap_free().
 * Errors  ERR_INVALID (no `BCSymbolMap Version:` header line; a NUL byte; a last line without
 *         its newline: the file was cut short), ERR_UNSUPPORTED (a version other than 2.x),
 *         ERR_TOO_LARGE (over `max_bytes`, or 2^32 lines).
 */
err_code symbolmap_parse(symbolmap **out, const uint8_t *data, size_t len, uint64_t max_bytes,
                         err_info *err);

/* symbolmap_test - true when `data` starts like a BCSymbolMap (its header). */
bool symbolmap_test(const uint8_t *data, size_t len);

/* symbolmap_count - the strings after the header line. */
uint32_t symbolmap_count(const symbolmap *m);

/* symbolmap_line - string `n` (0-based after the header), *len its bytes; NULL past the end.
 * Borrowed from `m`, NUL-terminated. */
const char *symbolmap_line(const symbolmap *m, uint32_t n, size_t *len);

/* symbolmap_free - NULL is a no-op. */
void symbolmap_free(symbolmap *m);

/* What symbolmap_reveal saw in one string. */
typedef struct {
    uint32_t hidden;     /* `__hidden#N_` references in it */
    uint32_t revealed;   /* of those, how many the map had a line for */
    uint32_t max_index;  /* the largest N + 1 seen, 0 = none */
} symbolmap_reveal_stats;

/*
 * symbolmap_reveal - write `s` (`len` bytes) to `out` with every `__hidden#N_` replaced by
 * line N of `m` (`m` NULL, or N past its end: the reference stays as it is). A whole string
 * `_hidden#N_` (a symbol-table name whose Mach-O underscore debuginfo stripped) becomes line
 * N without one leading underscore. Returns true when `s` holds a hidden reference at all;
 * `stats` (may be NULL) is added to. Nothing is written to `out` when it returns false.
 */
bool symbolmap_reveal(buf *out, const symbolmap *m, const char *s, size_t len,
                      symbolmap_reveal_stats *stats);

/* symbolmap_has_hidden - true when `s` (`len` bytes) holds a hidden reference in either form
 * symbolmap_reveal replaces. */
bool symbolmap_has_hidden(const char *s, size_t len);

/*
 * symbolmap_uuidmap_parse - the `DBGOriginalUUID` of a UUID map (an XML property list), into
 * `original` as upper case with dashes.
 * Errors  ERR_INVALID (not an XML property list, no DBGOriginalUUID key, its value not a
 *         UUID string), ERR_UNSUPPORTED (a binary property list), ERR_TOO_LARGE (over
 *         SYMBOLMAP_MAX_UUIDMAP_BYTES).
 */
err_code symbolmap_uuidmap_parse(char original[37], const uint8_t *data, size_t len,
                                 err_info *err);

/* symbolmap_uuidmap_test - true when `data` starts like an XML document (`<?xml` or `<plist`,
 * after a BOM or blanks): what a UUID map is, among the files of a dSYM. */
bool symbolmap_uuidmap_test(const uint8_t *data, size_t len);

/* symbolmap_uuid_from_name - the UUID a map's file name carries: `<UUID><ext>` (any case),
 * into `out` as upper case with dashes; the directory part of `name` is ignored. False when
 * the name is not a UUID followed by `ext` (e.g. Info.plist). */
bool symbolmap_uuid_from_name(char out[37], const char *name, const char *ext);

/* symbolmap_uuid_normalize - `s` (36 characters, 8-4-4-4-12 hex with dashes, any case, or 32
 * hex digits) into `out` upper case with dashes; false when it is not a UUID. */
bool symbolmap_uuid_normalize(char out[37], const char *s, size_t len);

#endif
