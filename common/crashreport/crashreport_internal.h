/*
 * crashreport_internal - what the parsers of this folder share: a builder that grows the
 * model's arrays in the arena, records non-fatal errors, and finishes a report (images of
 * frames, crashed thread, sanity checks). Not for use outside common/crashreport/.
 */
#ifndef STACKSIFT_CRASHREPORT_INTERNAL_H
#define STACKSIFT_CRASHREPORT_INTERNAL_H

#include <stdarg.h>

#include "base/jsonr.h"
#include "crashreport/crashreport.h"

typedef struct {
    crashreport *r;
    arena *a;
    err_info *err;     /* the first allocation failure is recorded here */
    bool failed;       /* sticky: an arena allocation failed (ERR_TOO_LARGE) */
    size_t dropped_errors; /* notes beyond CRASHREPORT_MAX_ERRORS */
    bool frameless_ok; /* the report says what crashed without a stack (a KSCrash report of
                          only `crash.error`): no frames at all is then no error */
} cr_builder;

/* cr_builder_init - a new empty report in `a`; false (err set) if the arena is exhausted. */
bool cr_builder_init(cr_builder *b, crashreport_format format, arena *a, err_info *err);

/* cr_push - append one zeroed element to an arena array (*arr, *n) whose capacity is
 * implicit (8, then doubling at powers of two); NULL (b->failed) over budget. */
void *cr_push(cr_builder *b, void **arr, size_t *n, size_t elsize);

crashreport_thread *cr_add_thread(cr_builder *b);
crashreport_frame *cr_add_frame(cr_builder *b, crashreport_thread *t);
crashreport_frame *cr_add_leb_frame(cr_builder *b);
crashreport_cause *cr_add_cause(cr_builder *b);
crashreport_frame *cr_add_cause_frame(cr_builder *b, crashreport_cause *c);
crashreport_image *cr_add_image(cr_builder *b);

/* cr_strndup - arena copy of n bytes + NUL; NULL (b->failed) over budget. */
char *cr_strndup(cr_builder *b, const char *s, size_t n);
char *cr_strdup(cr_builder *b, const char *s);          /* NULL s gives NULL */
/* cr_text - as cr_strndup, for the strings of a binary format (protobuf): valid UTF-8 in the
 * model, each invalid sequence replaced by U+FFFD (utf8_sanitize). Text formats are repaired
 * as a whole before they are parsed (crashreport.c, doc_text). */
const char *cr_text(cr_builder *b, const char *s, size_t n);
char *cr_sprintf(cr_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cr_basename - the file name of a '/' path (borrowed from `path`); the path itself when it
 * has no '/' or ends in one. */
const char *cr_basename(const char *path);

/* cr_os_version - "iOS 17.5 (21F79)" from its parts as every format gives them apart (name and
 * build may be NULL); NULL when version is NULL, or b->failed over budget. */
const char *cr_os_version(cr_builder *b, const char *name, const char *version, const char *build);

/* cr_note - record a non-fatal parse error (one line, like err messages). */
void cr_note(cr_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cr_finish - resolve each frame's image (by the index the report gives, else by address),
 * mark the crashed thread from metadata, build the image lookup order, and check that the
 * report holds at least one frame (unless b->frameless_ok).
 * ERR_INVALID "<what> has no stack frames", ERR_TOO_LARGE. */
err_code cr_finish(cr_builder *b, const char *what);

/* cr_arch_normalize - "arm64", "arm64e", ... for an arch token (case-insensitive), NULL if
 * the token is not an architecture name. Static strings. */
const char *cr_arch_normalize(const char *s, size_t n);

/* cr_arch_from_code_type - arch for an Apple "Code Type" / ips cpuType ("ARM-64 (Native)",
 * "X86-64", "ARM", "ARM64_32"), NULL if unknown. */
const char *cr_arch_from_code_type(const char *s);

/* cr_arch_from_cpu - arch for a Mach-O cputype/cpusubtype pair, NULL if unknown. */
const char *cr_arch_from_cpu(uint64_t cputype, uint64_t cpusubtype);

/* cr_uuid_set - normalize 32 hex digits (dashes, braces allowed) into out (upper-case,
 * dashed); an all-zero or malformed UUID gives "". Returns true if a UUID was set. */
bool cr_uuid_set(char out[37], const char *s, size_t n);

/* cr_uuid_from_bytes - a binary UUID's 16 bytes (minidump CodeView records, PLCrashReporter's
 * protobuf) into out as cr_uuid_set writes it (upper-case, dashed); all zero gives "".
 * Returns true if a UUID was set. */
bool cr_uuid_from_bytes(char out[37], const uint8_t u[16]);

/* Format parsers; `data` is valid UTF-8 without NUL bytes (checked by crashreport_parse). */
err_code cr_parse_apple_text(crashreport **out, const char *data, size_t len, arena *a,
                             err_info *err);
err_code cr_parse_json(crashreport **out, const char *data, size_t len, arena *a,
                       err_info *err);

/* cr_text_image_line - add the image of one Apple "Binary Images:" line
 * ("0x1000 - 0x1fff +Name (1.0) <UUID> /path", any variant crash reports print); false if
 * the line is not one. Shared by the crash text and sample parsers. */
bool cr_text_image_line(cr_builder *b, const char *s, size_t n);

/* cr_parse_sample - macOS sample / spindump text (parse_sample.c). */
err_code cr_parse_sample(crashreport **out, const char *data, size_t len, arena *a,
                         err_info *err);

/* cr_looks_like_sample - whether text (the first bytes of a report) is sample/spindump. */
bool cr_looks_like_sample(const char *data, size_t len);

/* The JSON formats read a jsonr tree (base/jsonr.h) parsed into the arena `a` they build the
 * report in: the model keeps the tree's strings without copying them. */

/* cr_is_metrickit - whether a parsed JSON document (jsonr tree) is a MetricKit payload, one
 * diagnostic or a bare call-stack tree. */
bool cr_is_metrickit(const jsonr_value *root);

/* cr_parse_metrickit - every diagnostic of a MetricKit document (jsonr tree) as one report each
 * (parse_metrickit.c); *out is an arena array of *n reports. */
err_code cr_parse_metrickit(crashreport ***out, size_t *n, const jsonr_value *root, arena *a,
                            err_info *err);

/* cr_is_bugsnag - whether a parsed JSON document (jsonr tree) is a Bugsnag notifier payload
 * ("events") or one Bugsnag event ("exceptions", "apiKey"). */
bool cr_is_bugsnag(const jsonr_value *root);

/* cr_parse_bugsnag - every event of a Bugsnag document (jsonr tree) as one report each
 * (parse_bugsnag.c); *out is an arena array of *n reports. Errors ERR_INVALID naming the
 * field ("events[1].exceptions[0].stacktrace[3].frameAddress must be ..."), ERR_TOO_LARGE. */
err_code cr_parse_bugsnag(crashreport ***out, size_t *n, const jsonr_value *root, arena *a,
                          err_info *err);

/* cr_bugsnag_split - a Bugsnag payload (jsonr tree) of two or more events as one payload per
 * event (crashreport_split); *n = 0 for fewer. Errors ERR_TOO_LARGE. */
err_code cr_bugsnag_split(const char ***docs, size_t **lens, size_t *n, const jsonr_value *root,
                          arena *a, err_info *err);

/* cr_parse_json_all - a JSON document: one report, or one per MetricKit diagnostic. */
err_code cr_parse_json_all(crashreport ***out, size_t *n, const char *data, size_t len, arena *a,
                           err_info *err);

/* cr_is_sentry - whether a parsed JSON object (jsonr tree), none of the formats tried before, is
 * a Sentry event: it has `event_id`, `sdk`, `debug_meta`, `platform`, `logentry`, `message`,
 * an `exception` list or `threads.values`, and no Bugsnag key (`apiKey`, `exceptions`). */
bool cr_is_sentry(const jsonr_value *root);

/* cr_parse_sentry - a Sentry event (jsonr tree) as one report (parse_sentry.c). */
err_code cr_parse_sentry(crashreport **out, const jsonr_value *root, arena *a, err_info *err);

/* cr_sentry_event_metadata - the metadata of a Sentry event (jsonr object) into b->r->meta:
 * event_id, timestamp, release, dist, contexts os/device/app, message (parse_sentry.c); also
 * what a minidump sent with an event takes from it (parse_minidump.c). */
void cr_sentry_event_metadata(cr_builder *b, const jsonr_value *root);

/* cr_json_u64 - a non-negative integer from a JSON value: an integer, an exact real (< 2^53)
 * or a "0x..." hex string of at most 16 digits; false otherwise. */
bool cr_json_u64(const jsonr_value *v, uint64_t *out);

/* cr_parse_ips_header_into - fill empty metadata of `b->r` from a one-line .ips JSON header
 * (apple-text with a JSON header line). Malformed headers are noted, not fatal. */
void cr_parse_ips_header_into(cr_builder *b, const char *line, size_t len);

/* PLCrashReporter's file header: the magic, then one version byte (parse_plcrash.c). */
#define CR_PLCRASH_MAGIC "plcrash"
#define CR_PLCRASH_MAGIC_LEN 7

/* cr_is_plcrash - whether `data` starts with the .plcrash magic. */
bool cr_is_plcrash(const char *data, size_t len);

/* cr_parse_plcrash - a .plcrash file (magic, version 1, protobuf CrashReport); bytes, not
 * text. ERR_INVALID names the field ("plcrash report: threads[2].frames[7]: ..."),
 * ERR_UNSUPPORTED another version, ERR_TOO_LARGE over the caps or the arena budget. */
err_code cr_parse_plcrash(crashreport **out, const char *data, size_t len, arena *a,
                          err_info *err);

#endif
