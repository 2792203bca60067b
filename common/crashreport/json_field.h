/*
 * json_field - the jansson field readers every JSON parser of this folder uses (parse_json.c,
 * parse_bugsnag.c, parse_sentry.c, parse_metrickit.c): one definition of "a string field",
 * "a number or hex address", "the file name of a path". Not for use outside common/crashreport/.
 */
#ifndef STACKSIFT_CRASHREPORT_JSON_FIELD_H
#define STACKSIFT_CRASHREPORT_JSON_FIELD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "crashreport/crashreport_internal.h"

/* cr_json_str - o[key] as a borrowed string (valid while `o` lives); NULL when o is not an
 * object, the key is missing, its value is no string, or the string is empty. */
const char *cr_json_str(const json_t *o, const char *key);

/* cr_json_dup - o[key] copied into b's arena (embedded NULs kept by length); NULL as for
 * cr_json_str, or with b->failed set when the arena is exhausted. */
const char *cr_json_dup(cr_builder *b, const json_t *o, const char *key);

/* cr_json_get_u64 - cr_json_u64 (crashreport_internal.h) of o[key]; false when missing. */
bool cr_json_get_u64(const json_t *o, const char *key, uint64_t *out);

#endif
