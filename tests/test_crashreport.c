/*
 * test_crashreport - the report parsers and renderers (common/crashreport).
 *
 * - Every file of ../shared/corpus/reports/ is listed in CORPUS below: it either parses, with
 *   format, thread/frame/image/LEB counts and the crashed thread asserted (counts cross-checked
 *   against an independent count of the files, samples checked by hand in the tests after), or
 *   is rejected with the asserted error code and message. A corpus file missing from the
 *   table fails the test.
 * - Golden files: tests/golden/crashreport/<case>.<ext> -> <case>.expected.json (the model,
 *   pretty-printed); UPDATE_GOLDEN=1 rewrites them (review the diff).
 * - Malformed input: truncation at many offsets, garbage bytes, a 100 MB line, JSON nested
 *   100,000 deep, invalid UTF-8, NUL bytes, absurd addresses, tiny arena budgets: each must
 *   give a report or a clean error, never a crash or a hang.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "crashreport/crashreport.h"
#include "base/utf8.h"
#include "harness.h"

/* The Binary Images fast path is a static helper: test it against the pattern directly
 * (STYLE §8: include the .c; the library's parse_text.o is then not linked). */
#include "crashreport/parse_text.c"

static char corpus_dir[4096], golden_dir[4096];

/* ---- helpers ------------------------------------------------------------------------------ */

typedef struct {
    char *data;
    size_t len;
} file_data;

/* The whole file at `path`, NUL-terminated. On failure: a message naming the file on stderr,
 * an empty (but freeable) buffer, false; callers CHECK it and skip what needs the data. */
static bool read_file(file_data *out, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
        out->data = calloc(1, 1);
        out->len = 0;
        return false;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->data = malloc((size_t)n + 1);
    out->len = fread(out->data, 1, (size_t)n, f);
    out->data[out->len] = '\0';
    fclose(f);
    return out->len == (size_t)n;
}

static size_t total_frames(const crashreport *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nthreads; i++)
        n += r->threads[i].nframes;
    return n;
}

static const crashreport_thread *crashed_thread(const crashreport *r)
{
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].crashed)
            return &r->threads[i];
    return NULL;
}

/* Parse s; the arena comes back through *a (free it). */
static err_code parse_str(crashreport **r, arena **a, const char *s, size_t n, err_info *err)
{
    *a = arena_new(0);
    err_clear(err);
    return crashreport_parse(r, s, n, *a, err);
}

/* The model renders as valid JSON whose top level has the documented keys. */
static void check_json_shape(const crashreport *r, const char *what)
{
    buf o;
    buf_init(&o);
    crashreport_render_json(&o, r);
    json_error_t e;
    json_t *j = json_loadb((const char *)o.data, o.len, 0, &e);
    if (j == NULL)
        fprintf(stderr, "%s: rendered JSON does not parse: %s\n", what, e.text);
    CHECK(j != NULL);
    if (j != NULL) {
        static const char *const KEYS[] = {"format", "kind", "metadata", "threads",
                                           "last_exception_backtrace", "images", "errors"};
        for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++)
            CHECK(json_object_get(j, KEYS[i]) != NULL);
        CHECK_EQ_INT(json_array_size(json_object_get(j, "threads")), r->nthreads);
        CHECK_EQ_INT(json_array_size(json_object_get(j, "images")), r->nimages);
        json_decref(j);
    }
    buf_reset(&o);
}

/* ---- the corpus ------------------------------------------------------------------------- */

typedef struct {
    const char *file;
    const char *format;  /* NULL: rejected */
    int threads, frames, images, leb; /* leb -1: no Last Exception Backtrace */
    int crashed;         /* crashed thread number, -1 none */
    int errors;          /* non-fatal parse errors listed */
    err_code code;       /* rejected: the error code */
    const char *message; /* rejected: the whole message */
} corpus_row;

#define OK(f, fmt, t, fr, im, leb, cr, e) {f, fmt, t, fr, im, leb, cr, e, ERR_OK, NULL}
#define REJ(f, code, msg) {f, NULL, 0, 0, 0, 0, 0, 0, code, msg}

static const corpus_row CORPUS[] = {
    OK("apple-text/acrp-spaces-1.crash", "apple-text", 1, 17, 17, -1, -1, 0),
    REJ("apple-text/acrp-xcode16-1.crash", ERR_INVALID, "apple crash report has no stack frames"),
    OK("apple-text/crabyface-1.crash", "apple-text", 12, 43, 20, 120, 0, 0),
    OK("apple-text/eatfit-1.crash", "apple-text", 12, 79, 16, 15, 5, 0),
    OK("apple-text/eatfit-2.crash", "apple-text", 14, 81, 16, 15, 3, 0),
    OK("apple-text/eatfit-3.crash", "apple-text", 18, 85, 16, 15, 10, 0),
    OK("apple-text/fuzzmanager-1.crash", "apple-text", 3, 26, 137, -1, 0, 0),
    OK("apple-text/fuzzmanager-2.crash", "apple-text", 2, 16, 0, -1, 0, 1),
    OK("apple-text/ips2crashlog-2.crash", "apple-text", 27, 331, 36, -1, 13, 0),
    OK("apple-text/issue-onionbrowser-excerpt-1.crash", "apple-text", 1, 1, 0, -1, 0, 1),
    OK("apple-text/kscrash-example-1.crash", "apple-text", 8, 44, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-10.crash", "apple-text", 7, 37, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-2.crash", "apple-text", 8, 37, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-3.crash", "apple-text", 7, 58, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-4.crash", "apple-text", 8, 44, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-5.crash", "apple-text", 8, 37, 123, -1, 0, 1),
    OK("apple-text/kscrash-example-6.crash", "apple-text", 7, 32, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-7.crash", "apple-text", 8, 48, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-8.crash", "apple-text", 7, 70, 123, -1, 0, 0),
    OK("apple-text/kscrash-example-9.crash", "apple-text", 7, 31, 123, -1, 0, 0),
    OK("apple-text/macsym-1.crash", "apple-text", 7, 65, 444, -1, 0, 0),
    OK("apple-text/macsym-3.crash", "apple-text", 1, 4, 4, -1, 0, 0),
    OK("apple-text/macsym-4.crash", "apple-text", 8, 129, 17, -1, 0, 0),
    OK("apple-text/mobiledev-1.crash", "apple-text", 3, 45, 11, -1, 0, 0),
    OK("apple-text/pycrashreport-1.ips", "apple-text", 9, 39, 371, -1, 7, 0),
    OK("apple-text/xlsn0w-1.ips", "apple-text", 31, 254, 369, -1, 0, 0),
    OK("apple-text/xlsn0w-2.crash", "apple-text", 1, 27, 0, -1, 0, 1),
    OK("ips/ips2crashlog-1.ips", "ips", 27, 331, 36, -1, 13, 0),
    OK("ips/lldb-1.ips", "ips", 1, 15, 8, 7, 0, 0),
    OK("ips/macsym-5.ips", "ips", 8, 129, 17, -1, 0, 0),
    OK("ips/macsym-7.ips", "ips", 1, 4, 4, -1, 0, 0),
    OK("ips/matchtalk-1.ips", "ips", 21, 117, 43, 15, 8, 0),
    OK("ips/osaurus-1.ips", "ips", 12, 101, 44, -1, 2, 0),
    OK("ips/pycrashreport-3.ips", "ips", 1, 4, 4, -1, 0, 0),
    OK("ips/slack-ext-1.ips", "ips", 10, 52, 18, -1, 0, 0),
    OK("kscrash-json/bugsnag-1.json", "kscrash", 20, 59, 377, -1, 0, 0),
    OK("kscrash-json/bugsnag-2.json", "kscrash", 1, 24, 1, -1, 0, 0),
    OK("kscrash-json/bugsnag-3.json", "kscrash", 9, 52, 149, -1, 0, 0),
    OK("kscrash-json/kscrash-example-1.json", "kscrash", 8, 44, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-10.json", "kscrash", 7, 37, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-2.json", "kscrash", 8, 37, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-3.json", "kscrash", 7, 58, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-4.json", "kscrash", 8, 44, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-5.json", "kscrash", 8, 37, 123, -1, 0, 1),
    OK("kscrash-json/kscrash-example-6.json", "kscrash", 7, 32, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-7.json", "kscrash", 8, 48, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-8.json", "kscrash", 7, 70, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-example-9.json", "kscrash", 7, 31, 123, -1, 0, 0),
    OK("kscrash-json/kscrash-test-1.json", "kscrash", 0, 0, 0, -1, -1, 1),
    REJ("kscrash-json/kscrash-test-2.json", ERR_INVALID,
        "report is not valid JSON: string or '}' expected near '}' at line 2565 column 9"),
    OK("kscrash-json/kscrash-test-3.json", "kscrash", 6, 50, 220, -1, 0, 0),
    OK("kscrash-json/sentrycocoa-1.json", "kscrash", 12, 68, 385, -1, 0, 0),
    OK("kscrash-json/sentrycocoa-2.json", "kscrash", 13, 59, 399, -1, 0, 0),
    OK("kscrash-json/sentrycocoa-3.json", "kscrash", 12, 68, 491, -1, 0, 0),
    OK("kscrash-json/sentrycocoa-4.json", "kscrash", 11, 66, 250, -1, 0, 0),
    OK("kscrash-json/sentrycocoa-5.json", "kscrash", 0, 0, 0, -1, -1, 1),
    OK("kscrash-json/sentrycocoa-6.json", "kscrash", 0, 0, 0, -1, -1, 1),
    OK("kscrash-json/sentrycocoa-7.json", "kscrash", 1, 1, 0, -1, 3, 1),
    OK("kscrash-json/sentrycocoa-8.json", "kscrash", 9, 60, 320, -1, 0, 0),
    OK("kscrash-json/sentrycocoa-9.json", "kscrash", 13, 121, 254, -1, 5, 0),
    OK("other/bugsnag-event-1.json", "bugsnag", 7, 48, 10, -1, 0, 0),
    REJ("other/pycrashreport-panic-1.ips", ERR_UNSUPPORTED,
        "kernel panic report (bug_type 151) is not an app crash report"),
    OK("other/sentrycocoa-metrickit-1.json", "metrickit", 16, 92, 11, -1, 0, 0),
    OK("other/symbolic-crashprobe-1.json", "sentry", 11, 63, 327, -1, 0, 0),
    OK("other/symbolic-crashprobe-2.json", "sentry", 12, 67, 239, -1, 0, 0),
    OK("other/symbolic-crashprobe-3.json", "sentry", 12, 73, 299, -1, 0, 0),
    OK("other/symbolic-crashprobe-4.json", "sentry", 12, 143, 327, -1, 0, 0),
    OK("plcrash-text/acrp-bruno-1.txt", "apple-text", 55, 452, 272, -1, 5, 0),
    OK("plcrash-text/acrp-handcrafted-1.txt", "apple-text", 2, 17, 5, -1, 5, 0),
    OK("plcrash-text/acrp-xcdyoutubekit-1.txt", "apple-text", 18, 113, 244, -1, 0, 0),
};

static const corpus_row *corpus_find(const char *rel)
{
    for (size_t i = 0; i < sizeof CORPUS / sizeof CORPUS[0]; i++)
        if (strcmp(CORPUS[i].file, rel) == 0)
            return &CORPUS[i];
    return NULL;
}

/* Parse one corpus file; *a gets the arena (caller frees). */
static crashreport *corpus_parse(const char *rel, arena **a, err_info *err, file_data *fd)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", corpus_dir, rel);
    file_data local;
    file_data *d = fd ? fd : &local;
    if (!read_file(d, path)) {
        free(d->data);
        d->data = NULL;
        d->len = 0;
        err_set(err, ERR_IO, "cannot read %s", path);
        *a = NULL;
        return NULL;
    }
    crashreport *r = NULL;
    parse_str(&r, a, d->data, d->len, err);
    if (fd == NULL)
        free(local.data);
    return r;
}

static void check_corpus_file(const char *rel, const corpus_row *row, size_t *parsed,
                              size_t *rejected)
{
    arena *a;
    err_info err;
    file_data fd;
    crashreport *r = corpus_parse(rel, &a, &err, &fd);
    if (row->format == NULL) {
        if (r != NULL)
            fprintf(stderr, "%s: parsed, expected rejection\n", rel);
        CHECK(r == NULL);
        CHECK_EQ_STR(err_name(err.code), err_name(row->code));
        CHECK_EQ_STR(err.msg, row->message);
        (*rejected)++;
    } else if (r == NULL) {
        fprintf(stderr, "%s: rejected: %s\n", rel, err.msg);
        CHECK(r != NULL);
    } else {
        (*parsed)++;
        if (strcmp(crashreport_format_name(r->format), row->format) != 0 ||
            (int)r->nthreads != row->threads || (int)total_frames(r) != row->frames ||
            (int)r->nimages != row->images || (r->has_leb ? (int)r->nleb : -1) != row->leb ||
            r->meta.crashed_thread != row->crashed || (int)r->nerrors != row->errors)
            fprintf(stderr, "%s: got %s %zu threads %zu frames %zu images leb %d crashed %d "
                            "errors %zu\n",
                    rel, crashreport_format_name(r->format), r->nthreads, total_frames(r),
                    r->nimages, r->has_leb ? (int)r->nleb : -1, r->meta.crashed_thread,
                    r->nerrors);
        CHECK_EQ_STR(crashreport_format_name(r->format), row->format);
        CHECK_EQ_INT(r->nthreads, row->threads);
        CHECK_EQ_INT(total_frames(r), row->frames);
        CHECK_EQ_INT(r->nimages, row->images);
        CHECK_EQ_INT(r->has_leb ? (int)r->nleb : -1, row->leb);
        CHECK_EQ_INT(r->meta.crashed_thread, row->crashed);
        CHECK_EQ_INT(r->nerrors, row->errors);
        /* exactly one thread is marked crashed when the report names one */
        size_t ncrashed = 0;
        for (size_t i = 0; i < r->nthreads; i++)
            ncrashed += r->threads[i].crashed;
        CHECK_EQ_INT(ncrashed, row->crashed >= 0 ? 1 : 0);
        check_json_shape(r, rel);
        /* unsymbolicated apple-text renders back byte for byte */
        if (r->format == CRASHREPORT_FORMAT_APPLE_TEXT) {
            buf o;
            buf_init(&o);
            crashreport_render_text(&o, r);
            size_t skip = fd.len >= 3 && memcmp(fd.data, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
            CHECK_EQ_INT(o.len, fd.len - skip);
            CHECK(o.len == fd.len - skip && memcmp(o.data, fd.data + skip, o.len) == 0);
            buf_reset(&o);
        } else {
            buf o;
            buf_init(&o);
            crashreport_render_text(&o, r);
            CHECK(o.len > 0 && strstr((const char *)o.data, "Binary Images:\n") != NULL);
            buf_reset(&o);
        }
    }
    free(fd.data);
    arena_free(a);
}

static void corpus_every_file_parses_or_is_rejected(void)
{
    static const char *const DIRS[] = {"apple-text", "ips", "kscrash-json", "plcrash-text",
                                       "other"};
    size_t seen = 0, parsed = 0, rejected = 0;
    for (size_t d = 0; d < sizeof DIRS / sizeof DIRS[0]; d++) {
        char dir[8192];
        snprintf(dir, sizeof dir, "%s/%s", corpus_dir, DIRS[d]);
        DIR *dh = opendir(dir);
        CHECK(dh != NULL);
        if (dh == NULL)
            continue;
        struct dirent *e;
        while ((e = readdir(dh)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char rel[600];
            snprintf(rel, sizeof rel, "%s/%s", DIRS[d], e->d_name);
            const corpus_row *row = corpus_find(rel);
            if (row == NULL)
                fprintf(stderr, "corpus file %s is not in the CORPUS table\n", rel);
            CHECK(row != NULL);
            if (row != NULL)
                check_corpus_file(rel, row, &parsed, &rejected);
            seen++;
        }
        closedir(dh);
    }
    CHECK_EQ_INT(seen, sizeof CORPUS / sizeof CORPUS[0]);
    fprintf(stderr, "corpus: %zu files, %zu parsed, %zu rejected\n", seen, parsed, rejected);
}

/* ---- samples checked by hand ------------------------------------------------------------- */

/* Mangled names a report gives are shown demangled (simplified Swift), the raw name kept. */
static void mangled_symbols_shown_demangled(void)
{
    arena *a;
    err_info err;
    crashreport *r = corpus_parse("kscrash-json/sentrycocoa-1.json", &a, &err, NULL);
    CHECK(r != NULL);
    if (r == NULL)
        return;
    size_t seen = 0;
    for (size_t t = 0; t < r->nthreads; t++)
        for (size_t i = 0; i < r->threads[t].nframes; i++) {
            const crashreport_frame *f = &r->threads[t].frames[i];
            if (f->symbol_mangled == NULL)
                continue;
            seen++;
            CHECK(f->symbol != NULL && f->symbol[0] != '$');
            if (strcmp(f->symbol_mangled, "$s9iOS_Swift14ViewControllerC14captureMessageyyypF") == 0)
                CHECK_EQ_STR(f->symbol, "ViewController.captureMessage(_:)");
            if (strcmp(f->symbol_mangled, "$s9iOS_Swift14ViewControllerC14captureMessageyyypFTo") == 0)
                CHECK_EQ_STR(f->symbol, "@objc ViewController.captureMessage(_:)");
        }
    CHECK(seen >= 3);
    buf o;
    buf_init(&o);
    crashreport_render_json(&o, r);
    buf_putc(&o, '\0');
    CHECK(strstr((const char *)o.data, "\"mangled\":\"$s9iOS_Swift14ViewControllerC14captureMessageyyypF\"") != NULL);
    buf_reset(&o);
    arena_free(a);
}

static void eatfit_by_hand(void)
{
    arena *a;
    err_info err;
    crashreport *r = corpus_parse("apple-text/eatfit-1.crash", &a, &err, NULL);
    CHECK(r != NULL);
    if (r == NULL)
        return;
    const crashreport_metadata *m = &r->meta;
    CHECK_EQ_STR(m->incident_id, "C4F96507-F369-43E3-B19D-28881BF8E4D2");
    CHECK_EQ_STR(m->process, "EatFitByMax");
    CHECK_EQ_STR(m->bundle_id, "com.eatfitbymax.app");
    CHECK_EQ_STR(m->app_version, "1.0.0");
    CHECK_EQ_STR(m->build, "12");
    CHECK_EQ_STR(m->arch, "arm64");
    CHECK_EQ_STR(m->os_version, "iPhone OS 18.5 (22F76)");
    CHECK_EQ_STR(m->hardware_model, "iPhone14,5");
    CHECK_EQ_STR(m->date, "2025-07-19 17:26:12.2595 +0200");
    CHECK_EQ_STR(m->exception_type, "EXC_CRASH");
    CHECK_EQ_STR(m->signal, "SIGABRT");
    CHECK_EQ_STR(m->exception_codes, "0x0000000000000000, 0x0000000000000000");
    CHECK_EQ_STR(m->termination_reason, "SIGNAL 6 Abort trap: 6");
    CHECK_EQ_STR(m->app_specific_info, "abort() called");
    CHECK_EQ_INT(r->kind, CRASHREPORT_KIND_CRASH);
    /* Last Exception Backtrace, frame 1 and 3 */
    CHECK_EQ_STR(r->leb[1].image_name, "libobjc.A.dylib");
    CHECK_EQ_U64(r->leb[1].addr, 0x19e48dabc);
    CHECK_EQ_STR(r->leb[1].symbol, "objc_exception_throw");
    CHECK_EQ_U64(r->leb[1].symbol_offset, 87);
    CHECK(r->leb[3].symbol == NULL);
    CHECK_EQ_STR(r->leb[3].raw, "0x100970000 + 311840");
    CHECK_EQ_INT(r->leb[3].image, 0);
    /* crashed thread 5 on its queue */
    const crashreport_thread *t = crashed_thread(r);
    CHECK(t != NULL && t->index == 5);
    if (t != NULL) {
        CHECK_EQ_STR(t->queue, "expo.controller.errorRecoveryQueue");
        CHECK_EQ_INT(t->nframes, 23);
        CHECK_EQ_STR(t->frames[4].symbol, "demangling_terminate_handler()");
        CHECK_EQ_U64(t->frames[4].symbol_offset, 343);
        CHECK_EQ_U64(t->frames[11].addr, 0x1009bc220);
        CHECK_EQ_STR(t->frames[11].image_name, "EatFitByMax");
    }
    CHECK_EQ_STR(r->threads[8].name, "com.apple.uikit.eventfetch-thread");
    /* images: the app, the "???" placeholder, a system library */
    CHECK_EQ_STR(r->images[0].name, "EatFitByMax");
    CHECK_EQ_STR(r->images[0].arch, "arm64");
    CHECK_EQ_STR(r->images[0].uuid, "7249D370-EEFB-3DA1-9008-1B8AF09D2987");
    CHECK_EQ_U64(r->images[0].load_addr, 0x100970000);
    CHECK_EQ_U64(r->images[0].end_addr, 0x101a23fff);
    CHECK_EQ_STR(r->images[8].name, "???");
    CHECK_EQ_STR(r->images[8].uuid, "");
    CHECK_EQ_STR(r->images[3].arch, "arm64e");
    CHECK_EQ_STR(r->images[3].path, "/usr/lib/system/libsystem_kernel.dylib");
    CHECK_EQ_INT(crashreport_image_at(r, 0x1f21021dc), 3);
    CHECK_EQ_INT(crashreport_image_at(r, 0x5), -1);
    arena_free(a);
}

/* Jailbreak-era CrashReporter: images in "Binary Images (dpkg):", "(App Store):"
 * and "(Other):" sections with the package JSON after the path; frames "0xLOAD + 0xOFF //
 * symbol + 0xOFF"; "+ Name (*)" image marks. */
static void jailbreak_sections_by_hand(void)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/jailbreak-sections.crash", golden_dir);
    file_data fd;
    if (!read_file(&fd, path)) {
        CHECK(!"jailbreak-sections.crash is readable");
        free(fd.data);
        return;
    }
    arena *a;
    err_info err;
    crashreport *r = NULL;
    CHECK_EQ_INT(parse_str(&r, &a, fd.data, fd.len, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->nimages, 10); /* 2 dpkg + 1 App Store + 7 Other */
        CHECK_EQ_INT(r->nerrors, 0);
        CHECK_EQ_STR(r->images[0].name, "NoteTweak.dylib");
        CHECK_EQ_STR(r->images[0].path, "/Library/MobileSubstrate/DynamicLibraries/NoteTweak.dylib");
        CHECK_EQ_STR(r->images[0].uuid, "9C2E41B0-7D3A-35F8-A6E1-0B4C2D7F8E19");
        CHECK(r->images[0].user);
        CHECK_EQ_STR(r->images[2].name, "Notes");
        CHECK_EQ_STR(r->images[9].name, "UIKitCore");
        CHECK_EQ_INT(r->nthreads, 2);
        CHECK_EQ_INT(r->meta.crashed_thread, 0);
        CHECK_EQ_INT(r->nleb, 5);
        const crashreport_thread *t = &r->threads[0];
        CHECK_EQ_INT(t->nframes, 7);
        if (t->nframes == 7) {
            CHECK_EQ_STR(t->frames[0].symbol, "__pthread_kill");
            CHECK_EQ_U64(t->frames[0].symbol_offset, 8);
            CHECK_EQ_STR(t->frames[1].symbol, "pthread_kill$VARIANT$mp");
            CHECK_EQ_U64(t->frames[1].symbol_offset, 0x17c);
            CHECK_EQ_STR(t->frames[3].image_name, "NoteTweak.dylib");
            CHECK_EQ_STR(r->images[t->frames[3].image].name, "NoteTweak.dylib");
            CHECK_EQ_STR(t->frames[3].symbol, "-[NTEditorHook applyTheme:toView:]");
            CHECK_EQ_U64(t->frames[3].symbol_offset, 0x1c8);
            /* "// 0x000114a0 + 0x58": an address, no symbol */
            CHECK(t->frames[4].symbol == NULL && !t->frames[4].has_symbol_offset);
            CHECK_EQ_STR(r->images[t->frames[4].image].name, "Notes");
            /* decimal offset, no comment */
            CHECK(t->frames[5].symbol == NULL);
            CHECK_EQ_U64(t->frames[5].addr, 0x100a61c3c);
            CHECK_EQ_STR(t->frames[6].symbol, "start");
        }
        CHECK_EQ_STR(r->leb[2].image_name, "NoteTweak.dylib");
        CHECK(r->leb[0].symbol == NULL);
        /* every frame found its image by address */
        for (size_t i = 0; i < t->nframes; i++)
            CHECK(t->frames[i].image >= 0);
        for (size_t i = 0; i < r->nleb; i++)
            CHECK(r->leb[i].image >= 0);
    }
    arena_free(a);
    free(fd.data);
}

static void text_variants_by_hand(void)
{
    arena *a;
    err_info err;
    /* KSCrash text: "0xADDR 0xBASE + off (symbol + off)", "+" user image */
    crashreport *r = corpus_parse("apple-text/kscrash-example-1.crash", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        const crashreport_frame *f = &r->threads[0].frames[2];
        CHECK_EQ_STR(f->image_name, "Crash-Tester");
        CHECK_EQ_U64(f->addr, 0x668a8);
        CHECK_EQ_STR(f->symbol, "-[Crasher doAbort]");
        CHECK_EQ_U64(f->symbol_offset, 8);
        CHECK_EQ_STR(r->threads[0].queue, "apple.main-thread");
        CHECK(r->images[0].user);
        CHECK_EQ_STR(r->images[0].arch, "armv7");
        CHECK_EQ_STR(r->meta.arch, "armv7");
        /* "<(null)>" UUID of a jailbreak tweak: image kept, UUID unknown */
        bool tweak = false;
        for (size_t i = 0; i < r->nimages; i++)
            if (r->images[i].name && strcmp(r->images[i].name, "WinterBoard.dylib") == 0)
                tweak = r->images[i].uuid[0] == '\0' && strcmp(r->images[i].arch, "arm") == 0;
        CHECK(tweak);
    }
    arena_free(a);
    /* macOS 26 translated report: bundle ids as image names, frames found by address,
     * "???" frames, Swift file:line, stop at "Full Report" */
    r = corpus_parse("apple-text/crabyface-1.crash", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        const crashreport_frame *f = &r->leb[4];
        CHECK_EQ_STR(f->symbol, "LocationService.setupLocationManager()");
        CHECK_EQ_U64(f->symbol_offset, 328);
        CHECK_EQ_STR(f->file, "LocationService.swift");
        CHECK_EQ_INT(f->line, 40);
        CHECK_EQ_STR(r->images[f->image].name, "JubileeMobileBay.debug.dylib");
        CHECK_EQ_STR(r->leb[9].image_name, "SwiftUI");
        CHECK_EQ_STR(r->images[r->leb[9].image].name, "com.apple.SwiftUI");
        CHECK_EQ_STR(r->images[r->leb[9].image].version, "6.5.4");
        CHECK_EQ_INT(r->leb[118].image, -1); /* "118 ??? 0x1024213d4 ???" */
        CHECK(r->leb[118].symbol == NULL && r->leb[118].image_name == NULL);
        CHECK_EQ_STR(r->meta.termination_reason, "Namespace SIGNAL, Code 6, Abort trap: 6");
        CHECK_EQ_STR(r->threads[5].name, "com.apple.uikit.eventfetch-thread");
    }
    arena_free(a);
    /* names with spaces on both the frame and the image line */
    r = corpus_parse("apple-text/acrp-spaces-1.crash", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->threads[0].frames[0].image_name, "App Namespace");
        CHECK_EQ_STR(r->images[0].name, "App Namespace");
        CHECK_EQ_INT(r->threads[0].frames[0].image, 0);
        CHECK_EQ_STR(r->images[0].uuid, "DEBEFF4E-2653-4F38-E59B-C9DE7B8DAADE");
    }
    arena_free(a);
    /* "[inlined]" frame lines and a symbol broken over two lines fold into one frame */
    r = corpus_parse("apple-text/ips2crashlog-2.crash", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        const crashreport_thread *t = crashed_thread(r);
        CHECK(t != NULL && t->index == 13 && t->nframes == 31);
        if (t != NULL && t->nframes > 1) {
            CHECK_EQ_INT(t->frames[0].ngiven_inlines, 1);
            CHECK(t->frames[0].given_inlines != NULL &&
                  strstr(t->frames[0].given_inlines[0].function, "assertion __n < size()"));
            CHECK_EQ_STR(t->frames[0].file, "vector");
            CHECK_EQ_INT(t->frames[0].line, 1393);
            CHECK_EQ_INT(t->frames[1].index, 2);
        }
    }
    arena_free(a);
    /* PLCrashReporter text: "Thread 1 Crashed: Name", "main (main.m:16)" */
    r = corpus_parse("plcrash-text/acrp-handcrafted-1.txt", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->threads[1].name, "Test Thread Name");
        CHECK(r->threads[1].crashed);
        const crashreport_frame *f = &r->threads[0].frames[13];
        CHECK_EQ_STR(f->symbol, "main");
        CHECK(!f->has_symbol_offset);
        CHECK_EQ_STR(f->file, "main.m");
        CHECK_EQ_INT(f->line, 16);
        CHECK_EQ_STR(r->meta.exception_type, "SIGSEGV");
        CHECK_EQ_STR(r->meta.app_specific_info,
                     "objc_msgSend() selector name: respondsToSelector:\n  more information here");
    }
    arena_free(a);
    /* iOS 14 .ips: JSON header + text body */
    r = corpus_parse("apple-text/pycrashreport-1.ips", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(crashreport_format_name(r->format), "apple-text");
        CHECK_EQ_STR(r->meta.process, "itunescloudd");
        CHECK_EQ_STR(r->meta.arch, "arm64"); /* Code Type: ARM-64 */
        CHECK_EQ_STR(r->images[0].arch, "arm64e");
    }
    arena_free(a);
    /* two reports in one file (KSCrash "recrash"): the first is parsed, the rest noted */
    r = corpus_parse("apple-text/kscrash-example-5.crash", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK(strstr(r->errors[0], "a second report follows the Binary Images") != NULL);
        CHECK_EQ_STR(r->meta.exception_type, "EXC_BAD_ACCESS");
        CHECK_EQ_STR(r->meta.signal, "SIGSEGV");
    }
    arena_free(a);
}

static void json_formats_by_hand(void)
{
    arena *a;
    err_info err;
    /* .ips: addresses from usedImages[imageIndex].base + imageOffset, inline frames fold */
    crashreport *r = corpus_parse("ips/osaurus-1.ips", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        const crashreport_thread *t = crashed_thread(r);
        CHECK(t != NULL && t->index == 2);
        if (t != NULL) {
            const crashreport_frame *f = &t->frames[1];
            CHECK_EQ_U64(f->addr, 4366024704ull + 27706484ull); /* usedImages[0].base + imageOffset */
            CHECK_EQ_INT(f->ngiven_inlines, 1);
            CHECK_EQ_STR(f->file, "custom_kernel.cpp");
            CHECK_EQ_INT(f->line, 367);
            CHECK_EQ_INT(f->given_inlines[0].line, 1393);
            CHECK(f->given_inlines[0].inlined);
        }
        CHECK_EQ_STR(r->meta.exception_subtype, "KERN_INVALID_ADDRESS at 0x0000000000000008");
        CHECK_EQ_STR(r->meta.os_version, "macOS 26.3 (25D125)");
        CHECK_EQ_STR(r->meta.hardware_model, "Mac16,5");
        CHECK_EQ_STR(r->meta.bundle_id, "com.dinoki.osaurus");
        CHECK_EQ_STR(r->images[0].uuid, "2F5CCAC7-CF4F-3F87-8689-7C673E90E595");
    }
    arena_free(a);
    r = corpus_parse("ips/lldb-1.ips", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->leb[0].symbol, "__exceptionPreprocess");
        CHECK_EQ_U64(r->leb[0].symbol_offset, 164);
        CHECK_EQ_STR(r->leb[0].image_name, "CoreFoundation");
        CHECK(strstr(r->meta.app_specific_info, "NSRangeException") != NULL);
    }
    arena_free(a);
    /* ips with integers beyond int64 in threadState (jansson needs INT_AS_REAL) */
    r = corpus_parse("ips/matchtalk-1.ips", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.app_version, "1.1.3");
        CHECK_EQ_STR(r->meta.build, "30");
        CHECK(r->leb[3].symbol == NULL && r->leb[3].image == 0);
    }
    arena_free(a);
    /* KSCrash JSON: object_name, symbol offset = instruction_addr - symbol_addr */
    r = corpus_parse("kscrash-json/kscrash-example-1.json", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        const crashreport_frame *f = &r->threads[0].frames[2];
        CHECK_EQ_STR(f->symbol, "-[Crasher doAbort]");
        CHECK_EQ_U64(f->addr, 420008);
        CHECK_EQ_U64(f->symbol_offset, 8);
        CHECK_EQ_STR(f->image_name, "Crash-Tester");
        CHECK_EQ_STR(r->images[f->image].uuid, "5425B875-D142-3832-BE8C-3B7DD8130813");
        CHECK_EQ_STR(r->images[0].arch, "armv7");
        CHECK_EQ_STR(r->meta.os_version, "iPhone OS 4.3.3 (8J2)");
        CHECK_EQ_STR(r->meta.signal, "SIGABRT");
    }
    arena_free(a);
    r = corpus_parse("kscrash-json/sentrycocoa-8.json", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL)
        CHECK_EQ_STR(r->meta.exception_reason, "ablblblblb: this is the reason");
    arena_free(a);
    /* KSCrash reports of only crash.error: kept without stacks, the crash told by metadata */
    r = corpus_parse("kscrash-json/kscrash-test-1.json", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.exception_type, "SIGKILL");
        CHECK_EQ_STR(r->meta.termination_reason, "memory_termination (memory level terminal)");
        CHECK_EQ_STR(r->meta.crash_image, "xctest");
    }
    arena_free(a);
    r = corpus_parse("kscrash-json/sentrycocoa-5.json", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.exception_type, "EXC_BAD_ACCESS");
        CHECK_EQ_STR(r->meta.signal, "SIGBUS");
        CHECK_EQ_STR(r->meta.exception_subtype, "EXC_ARM_DA_ALIGN");
        CHECK_EQ_STR(r->meta.crash_image, "iOS-Swift");
        CHECK(r->meta.termination_reason == NULL);
    }
    arena_free(a);
    /* an error.address inside a binary image names that image */
    static const char ONE_IMAGE[] =
        "{\"report\":{\"process_name\":\"App\"},\"binary_images\":[{\"image_addr\":4096,"
        "\"image_size\":4096,\"name\":\"/x/Kit.framework/Kit\"}],\"crash\":{\"error\":"
        "{\"type\":\"mach\",\"address\":5000,\"mach\":{\"exception_name\":\"EXC_BAD_ACCESS\"}}}}";
    CHECK_EQ_INT(parse_str(&r, &a, ONE_IMAGE, strlen(ONE_IMAGE), &err), ERR_OK);
    if (r != NULL)
        CHECK_EQ_STR(r->meta.crash_image, "Kit");
    arena_free(a);
    /* an error that says nothing is still no report */
    static const char EMPTY_ERROR[] = "{\"report\":{},\"crash\":{\"error\":{}}}";
    CHECK_EQ_INT(parse_str(&r, &a, EMPTY_ERROR, strlen(EMPTY_ERROR), &err), ERR_INVALID);
    CHECK_EQ_STR(err.msg, "KSCrash report has no stack frames");
    arena_free(a);
}

/* ---- Bugsnag ------------------------------------------------------------------------------- */

/* One Bugsnag frame as the notifier writes it. */
#define BSG_FRAME(addr, sym, method, load, uuid, file)                                           \
    "{\"frameAddress\":\"" addr "\",\"symbolAddress\":\"" sym "\",\"method\":\"" method          \
    "\",\"machoLoadAddress\":\"" load "\",\"machoVMAddress\":\"0x100000000\",\"machoUUID\":\""  \
    uuid "\",\"machoFile\":\"" file "\"}"
#define BSG_APP_FRAME(addr) BSG_FRAME(addr, "0x104000100", "-[VC crash]", "0x104000000",       \
                                      "4c4c4463-5555-3144-a17a-b29b2f88553e",                    \
                                      "/var/containers/Bundle/Application/X/App.app/App")
#define BSG_EVENT(cls, stack, threads)                                                         \
    "{\"exceptions\":[{\"errorClass\":\"" cls "\",\"message\":\"boom 42\",\"type\":\"cocoa\","  \
    "\"stacktrace\":[" stack "]}],\"threads\":[" threads "],\"severity\":\"error\","           \
    "\"unhandled\":true,\"severityReason\":{\"type\":\"unhandledException\"},"                  \
    "\"app\":{\"id\":\"com.example.app\",\"version\":\"2.1\",\"bundleVersion\":\"7\","          \
    "\"binaryArch\":\"arm64\"},\"device\":{\"osName\":\"iOS\",\"osVersion\":\"17.4\","          \
    "\"runtimeVersions\":{\"osBuild\":\"21E219\"},\"model\":\"iPhone15,2\"},"                   \
    "\"metaData\":{\"app\":{\"name\":\"Example\"}}}"

static void bugsnag_payload_gives_one_report_per_event(void)
{
    static const char PAYLOAD[] =
        "{\"apiKey\":\"0192837465afbecd0192837465afbecd\",\"payloadVersion\":\"4.0\","
        "\"notifier\":{\"name\":\"iOS Bugsnag Notifier\"},\"events\":["
        BSG_EVENT("NSRangeException", BSG_APP_FRAME("0x104000120") "," BSG_APP_FRAME("0x104000200"), "")
        "," BSG_EVENT("App Hang", BSG_APP_FRAME("0x104000300"),
                      "{\"id\":\"0\",\"name\":\"main\",\"errorReportingThread\":true,"
                      "\"stacktrace\":[" BSG_APP_FRAME("0x104000300") "]},"
                      "{\"id\":\"3\",\"stacktrace\":[" BSG_APP_FRAME("0x104000400") "]}") "]}";
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport **rs = NULL;
    size_t n = 0;
    CHECK_EQ_INT(crashreport_parse_all(&rs, &n, PAYLOAD, strlen(PAYLOAD), a, &err), ERR_OK);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        const crashreport *r = rs[0];
        CHECK_EQ_STR(crashreport_format_name(r->format), "bugsnag");
        CHECK_EQ_INT(r->kind, CRASHREPORT_KIND_CRASH);
        /* no threads sent: the exception's stack is the crashed thread */
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK(r->threads[0].crashed);
        CHECK_EQ_INT(r->threads[0].nframes, 2);
        CHECK_EQ_U64(r->threads[0].frames[0].addr, 0x104000120);
        CHECK_EQ_U64(r->threads[0].frames[0].symbol_offset, 0x20);
        CHECK_EQ_STR(r->threads[0].frames[0].symbol, "-[VC crash]");
        CHECK_EQ_INT(r->nimages, 1);
        CHECK_EQ_STR(r->images[0].uuid, "4C4C4463-5555-3144-A17A-B29B2F88553E");
        CHECK_EQ_STR(r->images[0].name, "App");
        CHECK_EQ_U64(r->images[0].load_addr, 0x104000000);
        CHECK_EQ_INT(r->threads[0].frames[1].image, 0);
        CHECK_EQ_STR(r->meta.exception_reason, "NSRangeException: boom 42");
        CHECK_EQ_STR(r->meta.app_name, "Example");
        CHECK_EQ_STR(r->meta.bundle_id, "com.example.app");
        CHECK_EQ_STR(r->meta.app_version, "2.1");
        CHECK_EQ_STR(r->meta.build, "7");
        CHECK_EQ_STR(r->meta.arch, "arm64");
        CHECK_EQ_STR(r->meta.os_version, "iOS 17.4 (21E219)");
        CHECK_EQ_STR(r->meta.hardware_model, "iPhone15,2");
        CHECK_EQ_STR(r->meta.app_specific_info,
                     "Bugsnag: severity error, unhandled (unhandledException)");
        /* an App Hang is a hang; its crashed thread is the error reporting one */
        const crashreport *h = rs[1];
        CHECK_EQ_INT(h->kind, CRASHREPORT_KIND_HANG);
        CHECK_EQ_INT(h->nthreads, 2);
        CHECK_EQ_INT(h->meta.crashed_thread, 0);
        CHECK_EQ_INT(h->threads[1].index, 3);
        CHECK(!h->has_leb); /* the exception's stack is the crashed thread's */
        check_json_shape(h, "bugsnag hang");
    }
    /* stored as one payload per event, each parsing to its own event */
    const char **docs;
    size_t *lens, nd = 0;
    CHECK_EQ_INT(crashreport_split(&docs, &lens, &nd, PAYLOAD, strlen(PAYLOAD), a, &err), ERR_OK);
    CHECK_EQ_INT(nd, 2);
    for (size_t i = 0; i < nd && i < 2; i++) {
        crashreport *one = NULL;
        CHECK_EQ_INT(crashreport_parse(&one, docs[i], lens[i], a, &err), ERR_OK);
        CHECK(one != NULL && one->kind == (i == 0 ? CRASHREPORT_KIND_CRASH : CRASHREPORT_KIND_HANG));
        CHECK(strstr(docs[i], "\"apiKey\":\"0192837465afbecd0192837465afbecd\"") != NULL);
    }
    /* crashreport_parse alone reads the first and says there are more */
    crashreport *first = NULL;
    CHECK_EQ_INT(crashreport_parse(&first, PAYLOAD, strlen(PAYLOAD), a, &err), ERR_OK);
    CHECK(first != NULL && first->nerrors == 1 && strstr(first->errors[0], "2 events") != NULL);
    arena_free(a);
}

/* Every exception of an event is read: exceptions[1...] are the causes of exceptions[0], in
 * order, with their own stacks; rendered after the backtrace as "Caused by:" blocks (JSON:
 * "causes"), and the text still reads back as the same crash. */
static void bugsnag_chained_exceptions_are_causes(void)
{
    static const char EVENT[] =
        "{\"exceptions\":[{\"errorClass\":\"NSInvalidArgumentException\",\"message\":\"outer\","
        "\"stacktrace\":[" BSG_APP_FRAME("0x104000120") "," BSG_APP_FRAME("0x104000200") "]},"
        "{\"errorClass\":\"NSGenericException\",\"message\":\"inner\",\"stacktrace\":["
        BSG_APP_FRAME("0x104000500") "," BSG_FRAME("0x1a0000010", "0x1a0000000", "objc_exception_throw",
                                                  "0x1a0000000", "11111111-2222-3333-4444-555555555555",
                                                  "/usr/lib/libobjc.A.dylib") "]},"
        "{\"errorClass\":\"NSError\",\"message\":\"root cause\"}],"
        "\"threads\":[{\"id\":\"0\",\"errorReportingThread\":true,\"stacktrace\":["
        BSG_APP_FRAME("0x104000700") "]}],\"app\":{\"binaryArch\":\"arm64\"}}";
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport **rs = NULL;
    size_t n = 0;
    CHECK_EQ_INT(crashreport_parse_all(&rs, &n, EVENT, strlen(EVENT), a, &err), ERR_OK);
    CHECK_EQ_INT(n, 1);
    const crashreport *r = n == 1 ? rs[0] : NULL;
    CHECK(r != NULL && r->ncauses == 2);
    if (r != NULL && r->ncauses == 2) {
        CHECK_EQ_STR(r->meta.exception_reason, "NSInvalidArgumentException: outer");
        CHECK(r->has_leb && r->nleb == 2); /* exceptions[0]'s own stack */
        CHECK_EQ_STR(r->causes[0].type, "NSGenericException");
        CHECK_EQ_STR(r->causes[0].reason, "inner");
        CHECK_EQ_INT(r->causes[0].nframes, 2);
        CHECK_EQ_U64(r->causes[0].frames[0].addr, 0x104000500);
        CHECK_EQ_INT(r->causes[0].frames[0].image, 0); /* the app, shared with the threads */
        CHECK_EQ_STR(r->causes[0].frames[1].symbol, "objc_exception_throw");
        CHECK(r->causes[0].frames[1].image >= 0 &&
              strcmp(r->images[r->causes[0].frames[1].image].name, "libobjc.A.dylib") == 0);
        CHECK_EQ_STR(r->causes[1].type, "NSError");
        CHECK_EQ_STR(r->causes[1].reason, "root cause");
        CHECK_EQ_INT(r->causes[1].nframes, 0);
        CHECK_EQ_INT(r->nerrors, 0);
        check_json_shape(r, "bugsnag causes");
        buf o;
        buf_init(&o);
        crashreport_render_json(&o, r);
        json_t *j = json_loadb((const char *)o.data, o.len, 0, NULL);
        const json_t *causes = json_object_get(j, "causes");
        CHECK_EQ_INT(json_array_size(causes), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(causes, 1), "reason")),
                     "root cause");
        CHECK_EQ_INT(json_array_size(json_object_get(json_array_get(causes, 0), "frames")), 2);
        json_decref(j);
        buf_reset(&o);
        crashreport_render_text(&o, r);
        buf_putc(&o, '\0');
        const char *text = (const char *)o.data;
        const char *c1 = strstr(text, "Caused by: NSGenericException: inner\n0   App ");
        const char *c2 = strstr(text, "\nCaused by: NSError: root cause\n\n");
        CHECK(c1 != NULL && c2 != NULL && c1 < c2 && strstr(text, "Last Exception Backtrace:") < c1);
        crashreport *back = NULL;
        CHECK_EQ_INT(crashreport_parse(&back, text, strlen(text), a, &err), ERR_OK);
        CHECK(back != NULL && back->nthreads == 1 && back->threads[0].nframes == 1 &&
              back->nleb == 2 && back->nimages == r->nimages);
        /* the "Caused by:" blocks read back as the same causes, frames and all */
        CHECK(back != NULL && back->ncauses == 2);
        if (back != NULL && back->ncauses == 2) {
            for (size_t c = 0; c < 2; c++) {
                CHECK_EQ_STR(back->causes[c].type, r->causes[c].type);
                CHECK_EQ_STR(back->causes[c].reason, r->causes[c].reason);
                CHECK_EQ_INT(back->causes[c].nframes, r->causes[c].nframes);
                for (size_t i = 0; i < back->causes[c].nframes && i < r->causes[c].nframes; i++) {
                    const crashreport_frame *bf = &back->causes[c].frames[i];
                    const crashreport_frame *rf = &r->causes[c].frames[i];
                    CHECK_EQ_U64(bf->addr, rf->addr);
                    CHECK(bf->image >= 0 && rf->image >= 0 &&
                          strcmp(back->images[bf->image].name, r->images[rf->image].name) == 0);
                }
            }
            CHECK_EQ_STR(back->causes[0].frames[1].symbol, "objc_exception_throw");
            CHECK_EQ_INT(back->nerrors, 0);
            /* and render back byte for byte (the apple-text renderer copies the text) */
            buf again;
            buf_init(&again);
            crashreport_render_text(&again, back);
            CHECK(again.len == strlen(text) && memcmp(again.data, text, again.len) == 0);
            buf_reset(&again);
        }
        buf_reset(&o);
    }
    arena_free(a);
}

/* A bad field is refused with its path; nothing of the document is kept. */
static void bugsnag_bad_fields_are_named(void)
{
    static const struct {
        const char *doc, *msg;
    } CASES[] = {
        {"{\"apiKey\":\"k\",\"events\":{}}", "Bugsnag payload: \"events\" must be an array"},
        {"{\"apiKey\":\"k\",\"events\":[]}", "Bugsnag payload: \"events\" is empty"},
        {"{\"apiKey\":\"k\"}", "Bugsnag payload: \"events\" must be an array"},
        {"{\"events\":[7]}", "Bugsnag events[0] must be an object"},
        {"{\"events\":[{\"exceptions\":[]}]}", "Bugsnag events[0].exceptions must be a non-empty array"},
        {"{\"events\":[{\"exceptions\":[{\"stacktrace\":[{\"frameAddress\":\"zz\"}]}]}]}",
         "Bugsnag events[0].exceptions[0].stacktrace[0].frameAddress must be a \"0x...\" hex string"},
        {"{\"events\":[{\"exceptions\":[{\"stacktrace\":[{\"frameAddress\":\"0x1\","
         "\"machoLoadAddress\":12.5}]}]}]}",
         "Bugsnag events[0].exceptions[0].stacktrace[0].machoLoadAddress must be a \"0x...\" hex string"},
        {"{\"events\":[{\"exceptions\":[{\"stacktrace\":[{\"frameAddress\":\"0x1\","
         "\"machoLoadAddress\":\"0x0\",\"machoUUID\":\"nope\"}]}]}]}",
         "Bugsnag events[0].exceptions[0].stacktrace[0].machoUUID is not a UUID"},
        {"{\"events\":[{\"exceptions\":[{\"stacktrace\":[]}],\"threads\":{}}]}",
         "Bugsnag events[0].threads must be an array"},
        {"{\"events\":[{\"exceptions\":[{\"stacktrace\":[]}]}]}", "Bugsnag event has no stack frames"},
        {"{\"exceptions\":[{\"stacktrace\":7}]}", "Bugsnag event.exceptions[0].stacktrace must be an array"},
        {"{\"exceptions\":[{\"stacktrace\":[{\"frameAddress\":\"0x1\"}]},7]}",
         "Bugsnag event.exceptions[1] must be an object"},
        {"{\"exceptions\":[{\"stacktrace\":[{\"frameAddress\":\"0x1\"}]},{\"stacktrace\":"
         "[{\"frameAddress\":\"0x2\",\"machoUUID\":\"x\",\"machoLoadAddress\":\"0x0\"}]}]}",
         "Bugsnag event.exceptions[1].stacktrace[0].machoUUID is not a UUID"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        arena *a;
        err_info err;
        crashreport *r = NULL;
        err_code rc = parse_str(&r, &a, CASES[i].doc, strlen(CASES[i].doc), &err);
        CHECK_EQ_INT(rc, ERR_INVALID);
        CHECK_EQ_STR(err.msg, CASES[i].msg);
        arena_free(a);
    }
}

/* KSCrash's standard sink: a JSON array of reports, each element its own document. */
static void report_arrays_split_into_documents(void)
{
    static const char ARR[] = " [ {\"a\":\"x]}\\\"{\"} ,\n\"line 1\\nline \\\"2\\\"\", [1,[2]],{\"b\":{}}, "
                              "{\"p\":\"C:\\\\\",\"q\":\"\\\\\\\"]\"} ]\n";
    arena *a = arena_new(0);
    err_info err = {0};
    crashreport_doc *docs = NULL;
    size_t n = 0;
    CHECK_EQ_INT(crashreport_split_array(&docs, &n, ARR, strlen(ARR), 100, a, &err), ERR_OK);
    CHECK_EQ_INT(n, 5);
    if (n == 5) {
        CHECK(docs[0].len == 14 && memcmp(docs[0].data, "{\"a\":\"x]}\\\"{\"}", 14) == 0);
        CHECK(!docs[0].text);
        CHECK(docs[1].text && docs[1].len == 15 && memcmp(docs[1].data, "line 1\nline \"2\"", 15) == 0);
        CHECK(docs[2].len == 7 && memcmp(docs[2].data, "[1,[2]]", 7) == 0);
        CHECK(docs[3].len == 8 && memcmp(docs[3].data, "{\"b\":{}}", 8) == 0);
        /* strings ending in an escaped backslash, and a backslash before an escaped quote */
        CHECK(docs[4].len == 24 && memcmp(docs[4].data, "{\"p\":\"C:\\\\\",\"q\":\"\\\\\\\"]\"}", 24) == 0);
    }
    static const struct {
        const char *doc;
        err_code rc;
        const char *msg;
    } BAD[] = {
        {"{\"report\":{}}", ERR_INVALID, "reports must be a JSON array of reports"},
        {"[]", ERR_INVALID, "reports: the JSON array holds no report"},
        {"[{\"a\":1}", ERR_INVALID, "reports: the JSON array ends early (truncated?) after 1 reports"},
        {"[{\"a\":[1}]", ERR_INVALID, "reports: report 0 is not a complete JSON value (truncated?) at byte 1"},
        {"[{\"a\":\"1", ERR_INVALID, "reports: report 0 is not a complete JSON value (truncated?) at byte 1"},
        {"[{\"a\":\"x\\\"}]", ERR_INVALID, "reports: report 0 is not a complete JSON value (truncated?) at byte 1"},
        {"[{} {}]", ERR_INVALID, "reports: expected ',' or ']' after report 0 at byte 4"},
        {"[{}] x", ERR_INVALID, "reports: bytes after the JSON array at byte 5"},
        {"[{},{},{}]", ERR_TOO_LARGE, "reports: more than 2 reports in one array"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        err_clear(&err);
        CHECK_EQ_INT(crashreport_split_array(&docs, &n, BAD[i].doc, strlen(BAD[i].doc), 2, a, &err),
                     BAD[i].rc);
        CHECK_EQ_STR(err.msg, BAD[i].msg);
    }
    arena_free(a);
}

/* ---- stacksift JSON ------------------------------------------------------------------------ */

static void stack_json_valid(void)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/hang.json", golden_dir);
    file_data fd;
    if (!read_file(&fd, path)) {
        CHECK(!"hang.json is readable");
        free(fd.data);
        return;
    }
    arena *a;
    err_info err;
    crashreport *r = NULL;
    CHECK_EQ_INT(parse_str(&r, &a, fd.data, fd.len, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->kind, CRASHREPORT_KIND_HANG);
        CHECK_EQ_STR(crashreport_kind_name(r->kind), "hang");
        CHECK_EQ_STR(crashreport_format_name(r->format), "json");
        CHECK_EQ_STR(r->meta.os_version, "iOS 17.1.2 (21B101)");
        CHECK_EQ_STR(r->meta.hardware_model, "iPhone14,2");
        CHECK_EQ_STR(r->meta.app_version, "4.0");
        CHECK_EQ_INT(r->nthreads, 2);
        CHECK_EQ_INT(r->threads[0].frames[1].image, 0);
        CHECK_EQ_U64(r->images[0].end_addr, 0x102aa0000ull + 98304 - 1);
        CHECK_EQ_STR(r->images[1].uuid, "9E195BE1-1733-345E-A9BF-50D0D7059647");
        CHECK_EQ_STR(r->threads[0].frames[2].symbol, "Demo.View.body.getter");
        /* a PAC-signed return address still finds its image */
        CHECK_EQ_INT(r->threads[1].frames[1].image, 0);
        CHECK(!r->has_leb);
    }
    arena_free(a);
    free(fd.data);
}

static void expect_reject(const char *json, err_code code, const char *msg_part)
{
    arena *a;
    err_info err;
    crashreport *r = NULL;
    err_code rc = parse_str(&r, &a, json, strlen(json), &err);
    if (rc != code || strstr(err.msg, msg_part) == NULL)
        fprintf(stderr, "input %.80s: got %s \"%s\"\n", json, err_name(rc), err.msg);
    CHECK_EQ_STR(err_name(rc), err_name(code));
    CHECK(strstr(err.msg, msg_part) != NULL);
    CHECK(r == NULL);
    arena_free(a);
}

static void stack_json_invalid(void)
{
    expect_reject("{\"kind\":\"nap\",\"images\":[],\"threads\":[]}", ERR_INVALID,
                  "\"kind\" must be \"crash\", \"hang\" or \"sample\"");
    expect_reject("{\"kind\":\"hang\",\"threads\":[]}", ERR_INVALID,
                  "\"images\" must be an array");
    expect_reject("{\"kind\":\"hang\",\"images\":[],\"threads\":[]}", ERR_INVALID,
                  "stacksift JSON report has no stack frames");
    expect_reject("{\"kind\":\"hang\",\"images\":[],\"threads\":[{\"frames\":[\"0xZZ\"]}]}",
                  ERR_INVALID, "threads[0].frames[0]: address must be");
    expect_reject("{\"kind\":\"hang\",\"images\":[],\"threads\":[{\"frames\":"
                  "[\"0x12345678901234567\"]}]}",
                  ERR_INVALID, "at most 16 digits");
    expect_reject("{\"kind\":\"hang\",\"images\":[],\"threads\":[{\"frames\":[-4]}]}",
                  ERR_INVALID, "threads[0].frames[0]");
    expect_reject("{\"kind\":\"hang\",\"images\":[{\"name\":\"A\"}],\"threads\":[]}", ERR_INVALID,
                  "images[0].load_address");
    expect_reject("{\"kind\":\"hang\",\"images\":[{\"load_address\":\"0x1\",\"uuid\":\"xyz\"}],"
                  "\"threads\":[]}",
                  ERR_INVALID, "images[0].uuid is not a UUID");
    expect_reject("{\"format_version\":2,\"kind\":\"hang\",\"images\":[],\"threads\":[]}",
                  ERR_UNSUPPORTED, "format_version must be 1");
}

/* ---- detection and malformed input ---------------------------------------------------------- */

static void detection_rejects_unknown(void)
{
    expect_reject("", ERR_INVALID, "report is empty");
    expect_reject("  \n\t ", ERR_INVALID, "report is empty");
    expect_reject("hello world\nthis is not a crash\n", ERR_INVALID,
                  "not a crash report: neither JSON nor Apple crash report text");
    expect_reject("[1,2,3]", ERR_INVALID, "a crash report is a JSON object");
    expect_reject("{\"foo\":1}", ERR_INVALID, "not an .ips, KSCrash or stacksift report");
    expect_reject("{\"foo\":", ERR_INVALID, "report is not valid JSON");
    expect_reject("{\"bug_type\":\"309\"}\n{\"threads\":[", ERR_INVALID,
                  ".ips body is not valid JSON");
    expect_reject("{\"bug_type\":\"288\"}\n{\"processByPid\":{}}", ERR_UNSUPPORTED,
                  "bug_type 288 (stackshot)");
    expect_reject("{\"bug_type\":\"210\"}\nIncident Identifier: X\n", ERR_UNSUPPORTED,
                  "kernel panic report (bug_type 210)");
    expect_reject("Incident Identifier: 1\nProcess: X [1]\n\nThread 0:\n", ERR_INVALID,
                  "apple crash report has no stack frames");
}

/* The rendered model is valid UTF-8 and valid JSON, and names `want` somewhere. */
static void check_rendered_utf8(const crashreport *r, const char *want)
{
    buf o;
    buf_init(&o);
    crashreport_render_json(&o, r);
    CHECK(utf8_valid((const char *)o.data, o.len));
    CHECK(strstr((const char *)o.data, want) != NULL);
    json_error_t e;
    json_t *j = json_loadb((const char *)o.data, o.len, 0, &e);
    CHECK(j != NULL);
    json_decref(j);
    buf_reset(&o);
    crashreport_render_text(&o, r);
    CHECK(utf8_valid((const char *)o.data, o.len));
    buf_reset(&o);
}

#define FFFD "\xef\xbf\xbd"

/* Text that is no UTF-8 is read with each invalid sequence replaced by U+FFFD (base/utf8's
 * rule: one per maximal subpart); only a NUL byte refuses a report. */
static void invalid_utf8_replaced_nul_refused(void)
{
    static const struct {
        const char *text, *symbol;
    } CASES[] = {
        {"Thread 0:\n0   A   0x1000 f\xc3\x28 + 1\n", "f" FFFD "("},
        {"Thread 0:\n0   A   0x1000 g\xed\xa0\x80\n", "g" FFFD FFFD FFFD},
        {"Thread 0:\n0   A   0x1000 h\xc0\xaf\n", "h" FFFD FFFD},
        {"Thread 0:\n0   A   0x1000 i\xf4\x90\x80\x80\n", "i" FFFD FFFD FFFD FFFD},
        {"Thread 0:\n0   A   0x1000 j\xe2\x82", "j" FFFD},
    };
    arena *a;
    err_info err;
    crashreport *r = NULL;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        CHECK_EQ_INT(parse_str(&r, &a, CASES[i].text, strlen(CASES[i].text), &err), ERR_OK);
        if (r != NULL && r->nthreads == 1 && r->threads[0].nframes == 1) {
            CHECK_EQ_STR(r->threads[0].frames[0].symbol, CASES[i].symbol);
            check_rendered_utf8(r, "\"format\":\"apple-text\"");
        } else {
            CHECK(!"one thread of one frame");
        }
        arena_free(a);
    }
    /* a macOS report of a process whose heap was corrupted: its header fields are 0xAB
     * bytes, and a Latin-1 path (0xE9); the rest of the report is read as ever */
    static const char heap[] =
        "Process:               \xab\xab\xab\xab [4242]\n"
        "Path:                  /Applications/Caf\xe9.app/Contents/MacOS/Caf\xe9\n"
        "Identifier:            com.example.cafe\n"
        "Version:               \xab\xab (\xab)\n"
        "Code Type:             X86-64 (Native)\n"
        "OS Version:            Mac OS X 10.15.7 (\xab\xab\xab\xab\xab)\n"
        "\n"
        "Thread 0 Crashed:\n"
        "0   libsystem_kernel.dylib        0x00007fff6b8a233a __pthread_kill + 10\n"
        "\n"
        "Binary Images:\n"
        "0x7fff6b87b000 - 0x7fff6b8a9ff7  libsystem_kernel.dylib (6153.141.2) "
        "<A2A0D5F8-F2EE-3E5F-9B7A-1A2D0FD2D5B0> /usr/lib/system/libsystem_kernel.dylib\n";
    CHECK_EQ_INT(parse_str(&r, &a, heap, sizeof heap - 1, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.process, FFFD FFFD FFFD FFFD);
        CHECK_EQ_STR(r->meta.process_path, "/Applications/Caf" FFFD ".app/Contents/MacOS/Caf" FFFD);
        CHECK_EQ_STR(r->meta.app_version, FFFD FFFD);
        CHECK_EQ_STR(r->meta.build, FFFD);
        CHECK(r->meta.os_version != NULL && strstr(r->meta.os_version, FFFD FFFD FFFD FFFD FFFD));
        CHECK_EQ_INT(r->nimages, 1);
        CHECK(r->nthreads == 1 && r->threads[0].nframes == 1 && r->threads[0].frames[0].image == 0);
        check_rendered_utf8(r, "\"process\":\"" FFFD FFFD FFFD FFFD "\"");
    }
    arena_free(a);
    static const char nul[] = "Thread 0:\n0   A   0x1000 f\0oo\n";
    CHECK_EQ_INT(parse_str(&r, &a, nul, sizeof nul - 1, &err), ERR_INVALID);
    CHECK_EQ_STR(err.msg, "report holds a NUL byte at offset 26");
    arena_free(a);
    /* a NUL after an invalid byte is still found */
    static const char nul2[] = "Thread 0:\n0   A   0x1000 \xab\0oo\n";
    CHECK_EQ_INT(parse_str(&r, &a, nul2, sizeof nul2 - 1, &err), ERR_INVALID);
    CHECK_EQ_STR(err.msg, "report holds a NUL byte at offset 26");
    arena_free(a);
    /* a BOM is fine */
    static const char bom[] = "\xef\xbb\xbfThread 0:\n0   A   0x1000 f + 1\n";
    CHECK_EQ_INT(parse_str(&r, &a, bom, sizeof bom - 1, &err), ERR_OK);
    arena_free(a);
}

/* Stack excerpts are reports: frame lines alone (as Raygun and Bugsnag display them), frames
 * without addresses, with HTML or Markdown around, read as the crashed thread. */
static void stack_excerpts(void)
{
    arena *a;
    err_info err;
    crashreport *r = NULL;
    /* frame lines only, no header, no Binary Images */
    static const char only[] =
        "0   libsystem_platform.dylib            0x000000018317a334 _platform_memmove + 324\n"
        "1   CrashLibiOS                         0x00000001000c34b4 -[CRLCrashAsyncSafeThread crash] (CRLCrashAsyncSafeThread.m:41)\n"
        "2   CrashProbeiOS                       0x000000010006c898 -[CRLDetailViewController doCrash] (CRLDetailViewController.m:53)";
    CHECK_EQ_INT(parse_str(&r, &a, only, sizeof only - 1, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK(r->threads[0].crashed);
        CHECK_EQ_INT(r->threads[0].nframes, 3);
        if (r->threads[0].nframes == 3) {
            CHECK_EQ_U64(r->threads[0].frames[1].addr, 0x1000c34b4);
            CHECK_EQ_STR(r->threads[0].frames[1].image_name, "CrashLibiOS");
            CHECK_EQ_STR(r->threads[0].frames[1].symbol, "-[CRLCrashAsyncSafeThread crash]");
            CHECK_EQ_STR(r->threads[0].frames[1].file, "CRLCrashAsyncSafeThread.m");
            CHECK_EQ_INT(r->threads[0].frames[1].line, 41);
        }
    }
    arena_free(a);
    /* frames without addresses (Bugsnag): image names with spaces, a full column, noise */
    static const char noaddr[] =
        "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n"
        "Attempted to dereference garbage pointer 0x1.\n"
        "\n"
        "0  libsystem_platform.dylib _platform_memmove\n"
        "1  libsystem_pthread.dylib  pthread_getname_np\n"
        "2  CrashProbe               -[CRLCrashAsyncSafeThread crash] (CRLCrashAsyncSafeThread.m:41)\n"
        "3  CrashProbe iOS           -[CRLDetailViewController doCrash] (CRLDetailViewController.m:53)\n"
        "4  UIKit\n";
    CHECK_EQ_INT(parse_str(&r, &a, noaddr, sizeof noaddr - 1, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.exception_type, "EXC_BAD_ACCESS");
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK_EQ_INT(r->threads[0].nframes, 4);
        if (r->threads[0].nframes == 4) {
            CHECK_EQ_STR(r->threads[0].frames[0].image_name, "libsystem_platform.dylib");
            CHECK_EQ_STR(r->threads[0].frames[0].symbol, "_platform_memmove");
            CHECK_EQ_U64(r->threads[0].frames[0].addr, 0);
            CHECK_EQ_STR(r->threads[0].frames[3].image_name, "CrashProbe iOS");
            CHECK_EQ_STR(r->threads[0].frames[3].symbol, "-[CRLDetailViewController doCrash]");
            CHECK_EQ_INT(r->threads[0].frames[3].line, 53);
        }
        CHECK(r->nerrors >= 1); /* "4  UIKit": no symbol, noted */
    }
    arena_free(a);
    /* HTML around lines, an annotation between frames, a Markdown-style " | note" */
    static const char html[] =
        "Exception Type:  EXC_BAD_ACCESS (SIGBUS)\n\n"
        "Thread 0 Crashed:\n"
        "<span class=\"cp-wrong\">Missing frame that shows where the crash occured</span>\n"
        "<span class=\"cp-wrong\">0   CrashLibiOS      0x0000000100137a68 -[CRLCrashROPage crash] (CRLCrashROPage.m:39) | Wrong line number</span>\n"
        "1   CrashProbeiOS    0x00000001000383a8 std::vector<a>::at(int) + 8\n"
        "2   CrashProbeiOS    0x00000001000383b0 -[CRLDetailViewController doCrash] (CRLDetailViewController.m:53)\n";
    CHECK_EQ_INT(parse_str(&r, &a, html, sizeof html - 1, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK_EQ_INT(r->threads[0].nframes, 3);
        if (r->threads[0].nframes == 3) {
            CHECK_EQ_STR(r->threads[0].frames[0].symbol, "-[CRLCrashROPage crash]");
            CHECK_EQ_STR(r->threads[0].frames[0].file, "CRLCrashROPage.m");
            CHECK_EQ_INT(r->threads[0].frames[0].line, 39);
            CHECK_EQ_U64(r->threads[0].frames[0].addr, 0x100137a68);
            /* a template's <a> is not markup */
            CHECK_EQ_STR(r->threads[0].frames[1].symbol, "std::vector<a>::at(int)");
        }
        check_json_shape(r, "html excerpt");
    }
    arena_free(a);
    /* no frame at all: refused with the reason */
    static const char none[] = "<span class=\"cp-wrong\">No report</span>";
    CHECK(parse_str(&r, &a, none, sizeof none - 1, &err) == ERR_INVALID);
    CHECK(strstr(err.msg, "not a crash report") != NULL);
    arena_free(a);
    static const char header_only[] = "Exception Type:  EXC_CRASH (SIGABRT)\n\n1 item in cart\n";
    CHECK(parse_str(&r, &a, header_only, sizeof header_only - 1, &err) == ERR_INVALID);
    CHECK(strstr(err.msg, "no stack frames") != NULL);
    arena_free(a);
}

/* JSON reports: raw bytes that are no UTF-8 and lone surrogate escapes in strings become
 * U+FFFD, in every JSON format, through crashreport_parse and crashreport_parse_all. */
static void json_invalid_utf8_replaced(void)
{
    static const char kscrash[] =
        "{\"report\":{\"process_name\":\"\xab\xab\",\"id\":\"1\"},"
        "\"system\":{\"CFBundleShortVersionString\":\"\xab\\ud800\",\"os_version\":\"\xab\xab\xab\","
        "\"system_name\":\"iOS\",\"system_version\":\"17.5\",\"CFBundleExecutable\":\"\xab" "App\"},"
        "\"binary_images\":[{\"image_addr\":4096,\"image_size\":4096,\"name\":\"/x/\xab" "App\","
        "\"uuid\":\"11112222-3333-4444-5555-666677778888\"}],"
        "\"crash\":{\"threads\":[{\"index\":0,\"crashed\":true,\"backtrace\":{\"contents\":"
        "[{\"instruction_addr\":4200,\"symbol_name\":\"f\\udc00\xff\"}]}}]}}";
    arena *a;
    err_info err;
    crashreport *r = NULL;
    CHECK_EQ_INT(parse_str(&r, &a, kscrash, sizeof kscrash - 1, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->format, CRASHREPORT_FORMAT_KSCRASH);
        CHECK(r->nthreads == 1 && r->threads[0].nframes == 1);
        if (r->nthreads == 1 && r->threads[0].nframes == 1)
            CHECK_EQ_STR(r->threads[0].frames[0].symbol, "f" FFFD FFFD);
        CHECK(r->nimages == 1 && strcmp(r->images[0].path, "/x/" FFFD "App") == 0);
        check_rendered_utf8(r, "/x/" FFFD "App");
    } else {
        fprintf(stderr, "kscrash: %s\n", err.msg);
    }
    arena_free(a);
    /* a Sentry event whose tags, contexts and frames hold heap garbage */
    static const char sentry[] =
        "{\"event_id\":\"0123456789abcdef0123456789abcdef\",\"platform\":\"cocoa\","
        "\"tags\":{\"\xab\":\"\xab\xab\"},\"release\":\"com.example.App@\xab\\u0000\",\"contexts\":"
        "{\"os\":{\"name\":\"iOS\",\"version\":\"17.5\",\"build\":\"\xab\xab\"}},"
        "\"exception\":{\"values\":[{\"type\":\"EXC_BAD_ACCESS\",\"value\":\"at \\udfff\xab\","
        "\"stacktrace\":{\"frames\":[{\"function\":\"main\xab\",\"instruction_addr\":\"0x1000\"}]}}]}}";
    crashreport **all = NULL;
    size_t n = 0;
    a = arena_new(0);
    CHECK_EQ_INT(crashreport_parse_all(&all, &n, sentry, sizeof sentry - 1, a, &err), ERR_OK);
    if (n == 1) {
        r = all[0];
        CHECK_EQ_INT(r->format, CRASHREPORT_FORMAT_SENTRY);
        CHECK_EQ_STR(r->meta.release, "com.example.App@" FFFD FFFD); /* \u0000 too */
        CHECK_EQ_STR(r->meta.exception_reason, "at " FFFD FFFD);
        CHECK(r->meta.os_version != NULL && strstr(r->meta.os_version, FFFD FFFD) != NULL);
        check_rendered_utf8(r, "main" FFFD);
    } else {
        fprintf(stderr, "sentry: %s\n", err.msg);
    }
    arena_free(a);
}

static void absurd_addresses(void)
{
    arena *a;
    err_info err;
    crashreport *r = NULL;
    /* wider than 64 bits: not an address; all-ones: an address in no image */
    static const char txt[] =
        "Thread 0 Crashed:\n"
        "0   A   0x12345678901234567890 f + 1\n"
        "1   A   0xffffffffffffffff g + 99999999999999999999\n"
        "2   A   0x0000000000001000 h + 18446744073709551615\n"
        "99999999999   A   0x1000 i\n"
        "\n"
        "Binary Images:\n"
        "0xffffffffffff0000 - 0x10 A arm64 <11112222333344445555666677778888> /A\n"
        "0x1234567890123456789 - 0x2 B arm64 <11112222333344445555666677778888> /B\n";
    CHECK_EQ_INT(parse_str(&r, &a, txt, sizeof txt - 1, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->threads[0].nframes, 2);
        CHECK_EQ_U64(r->threads[0].frames[0].addr, UINT64_MAX);
        CHECK(!r->threads[0].frames[0].has_symbol_offset); /* offset overflowed: kept as text */
        CHECK_EQ_U64(r->threads[0].frames[1].symbol_offset, UINT64_MAX);
        CHECK_EQ_INT(r->threads[0].frames[0].image, -1);
        CHECK_EQ_INT(r->nimages, 1); /* end < load: kept, but holds no address */
        CHECK_EQ_INT(crashreport_image_at(r, 0xffffffffffff0001ull), -1);
        CHECK(r->nerrors >= 2);
    }
    arena_free(a);
    /* .ips: base + imageOffset overflows, imageIndex out of range, negative numbers */
    static const char ips[] =
        "{\"bug_type\":\"309\"}\n"
        "{\"threads\":[{\"frames\":[{\"imageIndex\":0,\"imageOffset\":18446744073709551615},"
        "{\"imageIndex\":7,\"imageOffset\":16},{\"imageIndex\":-1,\"imageOffset\":-5},"
        "{\"imageIndex\":0,\"imageOffset\":1e300},{\"imageIndex\":0,\"imageOffset\":32}]}],"
        "\"usedImages\":[{\"base\":18446744073709551000,\"size\":18446744073709551615,"
        "\"uuid\":\"not-a-uuid\"}]}";
    CHECK_EQ_INT(parse_str(&r, &a, ips, sizeof ips - 1, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->threads[0].nframes, 5);
        CHECK_EQ_U64(r->threads[0].frames[1].addr, 16);
        CHECK_EQ_INT(r->threads[0].frames[1].image, -1);
        CHECK_EQ_STR(r->images[0].uuid, "");
        CHECK(r->nerrors >= 3);
    }
    arena_free(a);
}

static void truncated_everywhere(void)
{
    static const char *const FILES[] = {
        "apple-text/eatfit-1.crash", "apple-text/macsym-3.crash", "ips/lldb-1.ips",
        "ips/macsym-7.ips", "kscrash-json/bugsnag-2.json", "apple-text/crabyface-1.crash",
        "plcrash-text/acrp-handcrafted-1.txt",
    };
    size_t attempts = 0, ok = 0;
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", corpus_dir, FILES[i]);
        file_data fd;
        if (!read_file(&fd, path)) {
            CHECK(!"the input file is readable");
            free(fd.data);
            continue;
        }
        /* every byte offset of small files; for larger ones every ~31st and each line end */
        size_t step = fd.len <= 10000 ? 1 : 31;
        for (size_t n = 0; n <= fd.len; n += step) {
            for (size_t k = 0; k < 2; k++) {
                size_t cut = n;
                if (k == 1) {
                    const char *nl = memchr(fd.data + n, '\n', fd.len - n);
                    if (nl == NULL || step == 1)
                        continue;
                    cut = (size_t)(nl - fd.data);
                }
                arena *a;
                err_info err;
                crashreport *r = NULL;
                err_code rc = parse_str(&r, &a, fd.data, cut, &err);
                attempts++;
                CHECK(rc == ERR_OK || rc == ERR_INVALID || rc == ERR_UNSUPPORTED);
                CHECK((rc == ERR_OK) == (r != NULL));
                CHECK(rc == ERR_OK || err.msg[0] != '\0');
                if (r != NULL) {
                    ok++;
                    buf o;
                    buf_init(&o);
                    crashreport_render_json(&o, r);
                    crashreport_render_text(&o, r);
                    buf_reset(&o);
                }
                arena_free(a);
            }
        }
        free(fd.data);
    }
    fprintf(stderr, "truncation: %zu cuts, %zu gave a report\n", attempts, ok);
    CHECK(ok > 0 && ok < attempts);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void garbage_and_mutations(void)
{
    char buf_[4096];
    size_t clean = 0;
    for (int round = 0; round < 2000; round++) {
        size_t n = rng() % sizeof buf_;
        for (size_t i = 0; i < n; i++)
            buf_[i] = (char)rng();
        arena *a;
        err_info err;
        crashreport *r = NULL;
        err_code rc = parse_str(&r, &a, buf_, n, &err);
        CHECK(rc == ERR_INVALID || rc == ERR_OK || rc == ERR_UNSUPPORTED);
        clean += rc != ERR_OK;
        arena_free(a);
    }
    CHECK(clean > 1900);
    /* byte flips in real reports: still a report or a clean error */
    static const char *const FILES[] = {"apple-text/macsym-3.crash", "ips/macsym-7.ips",
                                        "kscrash-json/sentrycocoa-7.json"};
    for (size_t f = 0; f < sizeof FILES / sizeof FILES[0]; f++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", corpus_dir, FILES[f]);
        file_data fd;
        if (!read_file(&fd, path)) {
            CHECK(!"the input file is readable");
            free(fd.data);
            continue;
        }
        for (int round = 0; round < 300; round++) {
            char *copy = malloc(fd.len);
            memcpy(copy, fd.data, fd.len);
            for (int k = 0; k < 1 + (int)(rng() % 8); k++)
                copy[rng() % fd.len] = "0x: +-{}[]\",\n\t9af(<>)"[rng() % 22];
            arena *a;
            err_info err;
            crashreport *r = NULL;
            err_code rc = parse_str(&r, &a, copy, fd.len, &err);
            CHECK(rc == ERR_INVALID || rc == ERR_OK || rc == ERR_UNSUPPORTED);
            if (r != NULL) {
                buf o;
                buf_init(&o);
                crashreport_render_text(&o, r);
                crashreport_render_json(&o, r);
                buf_reset(&o);
            }
            arena_free(a);
            free(copy);
        }
        free(fd.data);
    }
}

static void hundred_mb_line(void)
{
    const size_t big = (size_t)100 << 20;
    static const char head[] = "Incident Identifier: X\nThread 0 Crashed:\n0   App   0x1000 ";
    static const char tail[] = "\n1   App   0x2000 main + 4\n\nBinary Images:\n";
    size_t n = sizeof head - 1 + big + sizeof tail - 1;
    char *s = malloc(n);
    memcpy(s, head, sizeof head - 1);
    memset(s + sizeof head - 1, 'A', big);
    memcpy(s + sizeof head - 1 + big, tail, sizeof tail - 1);
    arena *a;
    err_info err;
    crashreport *r = NULL;
    CHECK_EQ_INT(parse_str(&r, &a, s, n, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK_EQ_INT(r->threads[0].nframes, 1); /* the long line is skipped and noted */
        CHECK(strstr(r->errors[0], "-byte line ignored") != NULL);
    }
    arena_free(a);
    /* within the arena budget or not: ERR_TOO_LARGE, not a crash */
    a = arena_new(1 << 20);
    err_clear(&err);
    CHECK_EQ_INT(crashreport_parse(&r, s, n, a, &err), ERR_TOO_LARGE);
    arena_free(a);
    /* a 100 MB JSON string */
    static const char jhead[] = "{\"kind\":\"sample\",\"app\":{\"name\":\"";
    static const char jtail[] = "\"},\"images\":[],\"threads\":[{\"frames\":[\"0x1\"]}]}";
    n = sizeof jhead - 1 + big + sizeof jtail - 1;
    memcpy(s, jhead, sizeof jhead - 1);
    memset(s + sizeof jhead - 1, 'B', big);
    memcpy(s + sizeof jhead - 1 + big, jtail, sizeof jtail - 1);
    CHECK_EQ_INT(parse_str(&r, &a, s, n, &err), ERR_OK);
    if (r != NULL)
        CHECK_EQ_INT(strlen(r->meta.app_name), big);
    arena_free(a);
    free(s);
}

static void deep_json(void)
{
    const size_t depth = 100000;
    char *s = malloc(2 * depth + 64);
    size_t n = 0;
    n += (size_t)sprintf(s, "{\"kind\":\"crash\",\"x\":");
    for (size_t i = 0; i < depth; i++)
        s[n++] = '[';
    for (size_t i = 0; i < depth; i++)
        s[n++] = ']';
    s[n++] = '}';
    arena *a;
    err_info err;
    crashreport *r = NULL;
    CHECK_EQ_INT(parse_str(&r, &a, s, n, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "maximum parsing depth reached") != NULL);
    arena_free(a);
    /* the same as an .ips body after a valid header */
    n = (size_t)sprintf(s, "{\"bug_type\":\"309\"}\n{\"threads\":");
    for (size_t i = 0; i < depth; i++)
        s[n++] = '[';
    CHECK_EQ_INT(parse_str(&r, &a, s, n, &err), ERR_INVALID);
    CHECK(strstr(err.msg, ".ips body is not valid JSON: maximum parsing depth reached") != NULL);
    arena_free(a);
    free(s);
}

static void tiny_budgets(void)
{
    static const char *const FILES[] = {"apple-text/eatfit-1.crash", "ips/lldb-1.ips",
                                        "kscrash-json/bugsnag-2.json"};
    char path[8192];
    snprintf(path, sizeof path, "%s/hang.json", golden_dir);
    for (size_t f = 0; f <= sizeof FILES / sizeof FILES[0]; f++) {
        if (f < sizeof FILES / sizeof FILES[0])
            snprintf(path, sizeof path, "%s/%s", corpus_dir, FILES[f]);
        else
            snprintf(path, sizeof path, "%s/hang.json", golden_dir);
        file_data fd;
        if (!read_file(&fd, path)) {
            CHECK(!"the input file is readable");
            free(fd.data);
            continue;
        }
        size_t too_large = 0, ok = 0;
        for (size_t budget = 16; budget < (size_t)1 << 20; budget = budget * 5 / 4 + 16) {
            arena *a = arena_new(budget);
            err_info err = {0};
            crashreport *r = NULL;
            err_code rc = crashreport_parse(&r, fd.data, fd.len, a, &err);
            CHECK(rc == ERR_OK || rc == ERR_TOO_LARGE);
            CHECK((rc == ERR_OK) == (r != NULL));
            too_large += rc == ERR_TOO_LARGE;
            ok += rc == ERR_OK;
            arena_free(a);
        }
        CHECK(too_large > 0 && ok > 0);
        free(fd.data);
    }
}

/* Every line the pattern reads as a Binary Images line, the hand-written fast path reads the
 * same way or leaves to the pattern; lines the pattern rejects it rejects too. */
static void image_fast_path_agrees_with_pattern(void)
{
    pthread_once(&patterns_once, compile_patterns);
    pcre2_match_data *md = pcre2_match_data_create(8, NULL);
    static const char *const EXTRA[] = {
        "0x1 - 0x2 a <11112222333344445555666677778888>",
        "0x1 - ??? a arm64 <x> /p",
        "   0x5f000 -    0xa3fff +Crash-Tester armv7  <5425b875d1423832be8c3b7dd8130813> /p",
        "0x1 - 0x2 <11112222333344445555666677778888> /p",
        "0x1 - 0x2 a <b <c> /p",
        "0x1 - 0x2 a <1111222233334444555566667777888899990000aaaa> /p",
        "0x1-0x2 a <u>",
        "0x1 -0x2 a <u>",
        "0x12345678901234567 - 0x2 a <u>",
        "0x1 - 0x2+a <u>",
        "0x1 - 0x2\t+\ta b (1.0) <u>\t/p q \t",
        "zz - 0x2 a <u>",
        "0x1 - 0x2 a <u",
        "0x1 - 0x2 a <> x > y",
    };
    size_t lines = 0, fast = 0;
    char path[8192];
    static const char *const DIRS[] = {"apple-text", "plcrash-text"};
    for (size_t d = 0; d < 3; d++) {
        DIR *dh = NULL;
        if (d < 2) {
            snprintf(path, sizeof path, "%s/%s", corpus_dir, DIRS[d]);
            dh = opendir(path);
            CHECK(dh != NULL);
        }
        struct dirent *e;
        size_t extra = 0;
        while (d < 2 ? (dh != NULL && (e = readdir(dh)) != NULL)
                     : extra < sizeof EXTRA / sizeof EXTRA[0]) {
            file_data fd;
            if (d < 2) {
                if (e->d_name[0] == '.')
                    continue;
                char fp[8600];
                snprintf(fp, sizeof fp, "%s/%s", path, e->d_name);
                if (!read_file(&fd, fp)) {
                    CHECK(!"the corpus file is readable");
                    free(fd.data);
                    continue;
                }
            } else {
                fd.data = strdup(EXTRA[extra++]);
                fd.len = strlen(fd.data);
            }
            for (char *s = fd.data, *end = fd.data + fd.len; s < end;) {
                char *nl = memchr(s, '\n', (size_t)(end - s));
                size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
                while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == ' '))
                    n--;
                image_fields a = {0}, b = {0};
                bool ra = image_fields_regex(&a, md, s, n);
                bool rb = image_fields_fast(&b, s, n);
                if (d < 2) {
                    lines += ra;
                    fast += rb && ra;
                }
                if (rb && !ra)
                    fprintf(stderr, "fast path accepts what the pattern rejects: %.*s\n",
                            (int)n, s);
                CHECK(!rb || ra);
                if (ra && rb) {
                    bool same = a.lo_v == b.lo_v && a.hi_v == b.hi_v && a.plus == b.plus &&
                                (a.hi == NULL) == (b.hi == NULL) && a.mid == b.mid &&
                                a.mid_n == b.mid_n && a.uuid == b.uuid && a.uuid_n == b.uuid_n &&
                                a.path == b.path && a.path_n == b.path_n;
                    if (!same)
                        fprintf(stderr, "fast path and pattern differ: %.*s\n", (int)n, s);
                    CHECK(same);
                }
                s += n + 1;
                if (nl != NULL)
                    s = nl + 1;
            }
            free(fd.data);
        }
        if (dh != NULL)
            closedir(dh);
    }
    fprintf(stderr, "corpus image lines: %zu read by the pattern, %zu of them by the fast path\n",
            lines, fast);
    CHECK(lines > 3000 && fast == lines);
    pcre2_match_data_free(md);
}

static void pac_and_image_lookup(void)
{
    CHECK_EQ_U64(crashreport_strip_pac(0x2c1d000104cd0a1cull, "arm64e"), 0x104cd0a1cull);
    CHECK_EQ_U64(crashreport_strip_pac(0x2c1d000104cd0a1cull, NULL), 0x104cd0a1cull);
    CHECK_EQ_U64(crashreport_strip_pac(0x7fff61bc85beull, "x86_64"), 0x7fff61bc85beull);
    CHECK_EQ_U64(crashreport_strip_pac(0xffff7fff61bc85beull, "x86_64"), 0xffff7fff61bc85beull);
    CHECK_EQ_U64(crashreport_strip_pac(0x00007fffffffffffull, "arm64"), 0x00007fffffffffffull);
}


/* Sentry events: the legacy KSCrash-based SDK's event of the corpus, sentry-cocoa's shape,
 * and events without native frames (handled errors, messages). */
static void sentry_events_by_hand(void)
{
    arena *a;
    err_info err;
    crashreport *r = corpus_parse("other/symbolic-crashprobe-1.json", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.incident_id, "77C57898523E45F3BDAB3B1C63BD1889");
        CHECK_EQ_STR(r->meta.exception_type, "EXC_BREAKPOINT");
        CHECK_EQ_STR(r->meta.signal, "SIGTRAP"); /* posix_signal.signal 5, no name given */
        CHECK_EQ_STR(r->meta.os_version, "iOS 10.2 (14C92)");
        CHECK_EQ_STR(r->meta.hardware_model, "iPhone9,4");
        CHECK_EQ_STR(r->meta.arch, "arm64");
        const crashreport_thread *t = &r->threads[0];
        CHECK(t->crashed);
        /* caller first in the event: frame 0 here is the event's last frame */
        CHECK_EQ_U64(t->frames[0].addr, 0x22d280);
        CHECK_EQ_STR(t->frames[0].symbol, "CRLFramelessDWARF_test");
        CHECK_EQ_U64(t->frames[0].symbol_offset, 0x22d280 - 0x22cf78);
        CHECK_EQ_STR(t->frames[0].image_name, "CrashLibiOS");
        CHECK_EQ_U64(t->frames[t->nframes - 1].addr, 0x805315b8);
        CHECK(t->frames[t->nframes - 1].symbol == NULL); /* "<redacted>" */
        CHECK_EQ_STR(r->images[0].uuid, "54039061-A983-3323-A49D-837A894D667F");
        CHECK_EQ_STR(r->images[0].arch, "arm64");
        CHECK_EQ_STR(r->images[0].name, "CrashProbeiOS");
        CHECK_EQ_U64(r->images[0].load_addr, 0xdc000);
        CHECK_EQ_U64(r->images[0].end_addr, 0xdc000 + 65536 - 1);
        CHECK_EQ_U64(r->images[0].vmaddr, 0); /* "0x0": the dSYM's */
        CHECK(t->frames[0].image >= 0 && strcmp(r->images[t->frames[0].image].name,
                                                "CrashLibiOS") == 0);
    }
    arena_free(a);
    r = corpus_parse("other/symbolic-crashprobe-2.json", &a, &err, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.exception_type, "EXC_CRASH");
        CHECK_EQ_STR(r->meta.signal, "SIGABRT");
        CHECK(strncmp(r->meta.exception_reason, "NSGenericException: ", 20) == 0);
        CHECK_EQ_U64(r->images[0].vmaddr, 0x4000); /* armv7: __TEXT at 0x4000, as given */
        CHECK_EQ_STR(r->images[0].arch, "armv7");
    }
    arena_free(a);

    /* sentry-cocoa: macho images, mechanism.meta, release/dist, epoch timestamp */
    char path[8192];
    snprintf(path, sizeof path, "%s/sentry-cocoa.json", golden_dir);
    file_data fd;
    CHECK(read_file(&fd, path));
    CHECK_EQ_INT(parse_str(&r, &a, fd.data, fd.len, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.exception_type, "EXC_CRASH");
        CHECK_EQ_STR(r->meta.signal, "SIGABRT");
        CHECK_EQ_STR(r->meta.release, "com.example.Shop@2.4.1+311");
        CHECK_EQ_STR(r->meta.dist, "311");
        CHECK_EQ_STR(r->meta.bundle_id, "com.example.Shop");
        CHECK_EQ_STR(r->meta.date, "2025-11-27 00:00:00.250 +0000");
        CHECK_EQ_INT(r->nimages, 6); /* the sourcemap image is skipped (noted) */
        CHECK_EQ_INT(r->nerrors, 1);
        CHECK_EQ_STR(r->images[0].uuid, "8C3F6A2E-1B4D-3E5F-A6B7-C8D9E0F1A2B3");
        CHECK_EQ_U64(r->images[0].vmaddr, 0x100000000);
        CHECK_EQ_STR(r->images[0].arch, "arm64e"); /* the device's */
        CHECK_EQ_INT(r->threads[1].index, 3);
        CHECK_EQ_STR(r->threads[1].frames[0].symbol, "mach_msg2_trap");
        buf o;
        buf_init(&o);
        crashreport_render_text(&o, r);
        CHECK(strstr((char *)o.data, "Exception Type:      EXC_CRASH (SIGABRT)\n") != NULL);
        CHECK(strstr((char *)o.data, "Thread 0 Crashed:\n0   CoreFoundation") != NULL);
        buf_reset(&o);
    }
    arena_free(a);

    /* every 3rd truncation of the sentry-cocoa event: a clean error (JSON cut short) */
    size_t cuts = 0;
    for (size_t n = 0; fd.data != NULL && n < fd.len; n += 3, cuts++) {
        err_code rc = parse_str(&r, &a, fd.data, n, &err);
        CHECK(rc == ERR_INVALID && r == NULL && err.msg[0] != '\0');
        arena_free(a);
    }
    CHECK(cuts > 1000);
    free(fd.data);

    /* bare arrays, a handled error without native frames, the exception's own stacktrace */
    static const char HANDLED[] =
        "{\"event_id\":\"aa\",\"level\":\"error\",\"exception\":[{\"type\":\"ValueError\","
        "\"value\":\"bad\",\"stacktrace\":{\"frames\":[{\"function\":\"main\",\"filename\":"
        "\"app.py\",\"lineno\":3},{\"function\":\"parse\",\"filename\":\"lib.py\","
        "\"lineno\":77}]}}]}";
    CHECK_EQ_INT(parse_str(&r, &a, HANDLED, strlen(HANDLED), &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK(r->threads[0].crashed);
        CHECK_EQ_INT(r->threads[0].nframes, 2);
        CHECK_EQ_STR(r->threads[0].frames[0].symbol, "parse");
        CHECK_EQ_STR(r->threads[0].frames[0].file, "lib.py");
        CHECK_EQ_INT(r->threads[0].frames[0].line, 77);
        CHECK_EQ_INT(r->threads[0].frames[0].image, -1);
        CHECK_EQ_STR(r->meta.exception_type, "ValueError");
        CHECK_EQ_STR(r->meta.exception_reason, "bad");
    }
    arena_free(a);
    /* chained exceptions, oldest to newest: the last value is the exception, the ones before
     * it its causes, nearest first, each with its own stack; they read back from the text */
    static const char CHAINED[] =
        "{\"event_id\":\"cc\",\"exception\":{\"values\":["
        "{\"type\":\"IOError\",\"value\":\"disk gone\",\"stacktrace\":{\"frames\":["
        "{\"function\":\"open_store\",\"instruction_addr\":\"0x1000\"},"
        "{\"function\":\"read_block\",\"instruction_addr\":\"0x1010\"}]}},"
        "{\"type\":\"CacheError\",\"value\":\"cache unusable\"},"
        "{\"type\":\"NSInvalidArgumentException\",\"value\":\"no cart\",\"stacktrace\":"
        "{\"frames\":[{\"function\":\"main\",\"instruction_addr\":\"0x2000\"},"
        "{\"function\":\"checkout\",\"instruction_addr\":\"0x2040\"}]}}]}}";
    CHECK_EQ_INT(parse_str(&r, &a, CHAINED, strlen(CHAINED), &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.exception_reason, "no cart");
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK_EQ_STR(r->threads[0].frames[0].symbol, "checkout");
        CHECK_EQ_INT(r->ncauses, 2);
        if (r->ncauses == 2) {
            CHECK_EQ_STR(r->causes[0].type, "CacheError");
            CHECK_EQ_STR(r->causes[0].reason, "cache unusable");
            CHECK_EQ_INT(r->causes[0].nframes, 0);
            CHECK_EQ_STR(r->causes[1].type, "IOError");
            CHECK_EQ_STR(r->causes[1].reason, "disk gone");
            CHECK_EQ_INT(r->causes[1].nframes, 2);
            CHECK_EQ_STR(r->causes[1].frames[0].symbol, "read_block"); /* innermost first */
            CHECK_EQ_U64(r->causes[1].frames[0].addr, 0x1010);
            CHECK_EQ_INT(r->causes[1].frames[1].index, 1);
        }
        check_json_shape(r, "chained Sentry exceptions");
        buf o;
        buf_init(&o);
        crashreport_render_text(&o, r);
        buf_putc(&o, '\0');
        const char *c1 = strstr((char *)o.data, "Caused by: CacheError: cache unusable\n");
        const char *c2 = strstr((char *)o.data, "Caused by: IOError: disk gone\n0   ");
        CHECK(c1 != NULL && c2 != NULL && c1 < c2);
        arena *a2 = arena_new(0);
        crashreport *back = NULL;
        CHECK_EQ_INT(crashreport_parse(&back, (char *)o.data, o.len - 1, a2, &err), ERR_OK);
        CHECK(back != NULL && back->ncauses == 2 && back->causes[1].nframes == 2 &&
              back->causes[1].frames[1].addr == 0x1000);
        arena_free(a2);
        buf_reset(&o);
    }
    arena_free(a);
    /* a message: no frames at all, still a report */
    static const char MESSAGE[] =
        "{\"event_id\":\"bb\",\"message\":{\"formatted\":\"cache miss storm\"},\"sdk\":{}}";
    CHECK_EQ_INT(parse_str(&r, &a, MESSAGE, strlen(MESSAGE), &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->nthreads, 0);
        CHECK_EQ_STR(r->meta.app_specific_info, "cache miss storm");
        buf o;
        buf_init(&o);
        crashreport_render_text(&o, r);
        CHECK(strstr((char *)o.data, "cache miss storm") != NULL);
        buf_reset(&o);
        check_json_shape(r, "message event");
    }
    arena_free(a);
    /* nothing to report: refused */
    static const char EMPTY[] = "{\"debug_meta\":{},\"exception\":{}}";
    CHECK_EQ_INT(parse_str(&r, &a, EMPTY, strlen(EMPTY), &err), ERR_INVALID);
    CHECK_EQ_STR(err.msg, "Sentry event has no stack frames, no exception and no message");
    arena_free(a);
    /* hostile values: wrong types everywhere give a report or a clean error */
    static const char *const ODD[] = {
        "{\"event_id\":1,\"threads\":7,\"exception\":{\"values\":[3]},\"debug_meta\":[]}",
        "{\"sdk\":{},\"threads\":[{\"stacktrace\":{\"frames\":[1,{\"instruction_addr\":\"0x\"}]}}]}",
        "{\"sdk\":{},\"threads\":{\"values\":[{\"id\":-1,\"stacktrace\":{\"frames\":["
        "{\"instruction_addr\":\"0xffffffffffffffff\",\"image_addr\":\"0xffffffffffffffff\"}]}}]},"
        "\"debug_meta\":{\"images\":[{\"type\":\"macho\",\"image_addr\":\"0xffffffffffffffff\","
        "\"image_size\":99999999999,\"debug_id\":\"zz\"}]}}",
    };
    for (size_t i = 0; i < sizeof ODD / sizeof ODD[0]; i++) {
        err_code rc = parse_str(&r, &a, ODD[i], strlen(ODD[i]), &err);
        CHECK(rc == ERR_OK || rc == ERR_INVALID);
        if (r != NULL)
            check_json_shape(r, ODD[i]);
        arena_free(a);
    }
}

/* ---- golden files ------------------------------------------------------------------------- */

static void golden_case(const char *name)
{
    char in_path[8192], exp_path[8192];
    snprintf(in_path, sizeof in_path, "%s/%s", golden_dir, name);
    const char *dot = strrchr(name, '.');
    snprintf(exp_path, sizeof exp_path, "%s/%.*s.expected.json", golden_dir,
             (int)(dot - name), name);
    file_data fd;
    if (!read_file(&fd, in_path)) {
        CHECK(!"the golden input is readable");
        free(fd.data);
        return;
    }
    arena *a;
    err_info err;
    crashreport *r = NULL;
    CHECK_EQ_INT(parse_str(&r, &a, fd.data, fd.len, &err), ERR_OK);
    if (r == NULL) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        arena_free(a);
        free(fd.data);
        return;
    }
    buf o;
    buf_init(&o);
    crashreport_render_json(&o, r);
    json_t *j = json_loadb((const char *)o.data, o.len, 0, NULL);
    CHECK(j != NULL);
    char *pretty = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    const char *update = getenv("UPDATE_GOLDEN");
    if (update != NULL && strcmp(update, "1") == 0) {
        FILE *f = fopen(exp_path, "w");
        CHECK(f != NULL);
        if (f != NULL) {
            fprintf(f, "%s\n", pretty);
            fclose(f);
        }
    } else {
        file_data want;
        CHECK(read_file(&want, exp_path));
        size_t pl = strlen(pretty);
        bool same = want.len == pl + 1 && memcmp(want.data, pretty, pl) == 0;
        if (!same)
            fprintf(stderr, "%s: model differs from %s (UPDATE_GOLDEN=1 rewrites it)\n", name,
                    exp_path);
        CHECK(same);
        free(want.data);
    }
    free(pretty);
    json_decref(j);
    buf_reset(&o);
    arena_free(a);
    free(fd.data);
}

static void golden_files(void)
{
    golden_case("macos-leb-list.crash");
    golden_case("ios-header-inlined.crash");
    golden_case("hang.json");
    golden_case("minimal.ips");
    golden_case("jailbreak-sections.crash");
    golden_case("sentry-cocoa.json");
}

int main(void)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    if (src == NULL)
        src = "..";
    snprintf(corpus_dir, sizeof corpus_dir, "%s/../shared/corpus/reports", src);
    snprintf(golden_dir, sizeof golden_dir, "%s/tests/golden/crashreport", src);
    struct stat st;
    if (stat(corpus_dir, &st) != 0)
        fprintf(stderr, "the corpus is missing: %s: %s (tests read ../shared beside the source "
                        "tree); every test that needs it fails\n", corpus_dir, strerror(errno));
    RUN(corpus_every_file_parses_or_is_rejected);
    RUN(eatfit_by_hand);
    RUN(mangled_symbols_shown_demangled);
    RUN(text_variants_by_hand);
    RUN(jailbreak_sections_by_hand);
    RUN(json_formats_by_hand);
    RUN(bugsnag_payload_gives_one_report_per_event);
    RUN(bugsnag_chained_exceptions_are_causes);
    RUN(bugsnag_bad_fields_are_named);
    RUN(sentry_events_by_hand);
    RUN(report_arrays_split_into_documents);
    RUN(stack_json_valid);
    RUN(stack_json_invalid);
    RUN(detection_rejects_unknown);
    RUN(invalid_utf8_replaced_nul_refused);
    RUN(json_invalid_utf8_replaced);
    RUN(absurd_addresses);
    RUN(stack_excerpts);
    RUN(truncated_everywhere);
    RUN(garbage_and_mutations);
    RUN(hundred_mb_line);
    RUN(deep_json);
    RUN(tiny_budgets);
    RUN(pac_and_image_lookup);
    RUN(image_fast_path_agrees_with_pattern);
    RUN(golden_files);
    return harness_done();
}
