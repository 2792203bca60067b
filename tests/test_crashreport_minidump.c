/*
 * test_crashreport_minidump - minidumps as crash reports (crashreport_parse_minidump): the
 * real dumps of ../shared/minidumps/ (never copied here) read into the model as Apple's
 * reports would show the same crash, frames marked by how the walk found them, the event a
 * dump is sent with, broken and truncated dumps refused or read without a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "crashreport/crashreport.h"
#include "harness.h"

static char shared_path[4096];

/* dump_path - ../shared/minidumps/<rel> beside the source tree. */
static const char *dump_path(const char *rel)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    snprintf(shared_path, sizeof shared_path, "%s/../shared/minidumps/%s", src && *src ? src : "..",
             rel);
    return shared_path;
}

static bool load(bytes *b, const char *rel)
{
    err_info err = {0};
    if (bytes_map_file(b, dump_path(rel), &err) != ERR_OK) {
        fprintf(stderr, "cannot map %s: %s\n", shared_path, err.msg);
        return false;
    }
    return true;
}

static const char *annotation(const crashreport *r, const char *key)
{
    for (size_t i = 0; i < r->nannotations; i++)
        if (strcmp(r->annotations[i].key, key) == 0)
            return r->annotations[i].value;
    return NULL;
}

static void breakpad_dump_reads_as_apple_shows_it(void)
{
    bytes b = {0};
    CHECK(load(&b, "macos-x86_64-breakpad/macos.dmp"));
    arena *a = arena_new(0);
    crashreport *r = NULL;
    err_info err = {0};
    /* crashreport_parse recognizes the magic */
    CHECK_EQ_INT(crashreport_parse(&r, (const char *)b.data, b.len, a, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(crashreport_format_name(r->format), "minidump");
        CHECK_EQ_STR(r->meta.exception_type, "EXC_BAD_ACCESS");
        CHECK_EQ_STR(r->meta.exception_subtype, "KERN_INVALID_ADDRESS at 0x0000000000000045");
        CHECK_EQ_STR(r->meta.os_version, "macOS 10.12.6 (16G29)");
        CHECK_EQ_STR(r->meta.arch, "x86_64");
        CHECK_EQ_STR(r->meta.process, "crash");
        CHECK_EQ_INT(r->nthreads, 1);
        CHECK(r->nimages > 0);
        if (r->nimages > 0) {
            CHECK_EQ_STR(r->images[0].uuid, "67E9247C-814E-392B-A027-DBDE6748FCBF");
            CHECK_EQ_STR(r->images[0].name, "crash");
        }
        if (r->nthreads == 1 && r->threads[0].nframes > 0) {
            const crashreport_thread *t = &r->threads[0];
            CHECK(t->crashed);
            CHECK(t->nregisters >= 17);
            CHECK_EQ_INT(t->frames[0].found, CRASHREPORT_FOUND_CONTEXT);
            CHECK_EQ_INT(t->frames[0].image, 0);
            for (size_t k = 1; k < t->nframes; k++)
                CHECK(t->frames[k].found != CRASHREPORT_FOUND_GIVEN &&
                      t->frames[k].found != CRASHREPORT_FOUND_CONTEXT);
        }
        buf o;
        buf_init(&o);
        crashreport_render_json(&o, r);
        CHECK(strstr((const char *)o.data, "\"found\":\"context\"") != NULL);
        buf_reset(&o);
        buf_init(&o);
        crashreport_render_text(&o, r);
        CHECK(strstr((const char *)o.data, "[context]") != NULL);
        buf_reset(&o);
    }
    arena_free(a);
    bytes_unmap(&b);
}

static void crashpad_dump_with_its_event(void)
{
    bytes b = {0};
    CHECK(load(&b, "crashpad/simple-crashpad.dmp"));
    arena *a = arena_new(0);
    crashreport *r = NULL;
    err_info err = {0};
    static const char event[] =
        "{\"event_id\":\"4b7c1a0e9d2f4e3a8b6c5d4e3f2a1b0c\",\"release\":\"crashy@3.1.4+77\","
        "\"environment\":\"staging\",\"tags\":{\"backend\":\"crashpad\"},\"user\":{\"id\":\"u7\"},"
        "\"extra\":{\"prod\":\"Crashy\"},\"contexts\":{\"device\":{\"model\":\"MacBookPro16,1\"}}}";
    crashreport_minidump_options o = {.event_json = event, .event_len = sizeof event - 1};
    CHECK_EQ_INT(crashreport_parse_minidump(&r, b.data, b.len, &o, a, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_STR(r->meta.exception_type, "EXC_CRASH");
        CHECK_EQ_STR(r->meta.signal, "SIGABRT");
        CHECK(r->meta.app_specific_info && strstr(r->meta.app_specific_info, "abort() called"));
        CHECK_EQ_STR(annotation(r, "hello"), "world");  /* the dump's own */
        CHECK_EQ_STR(annotation(r, "environment"), "staging");
        CHECK_EQ_STR(annotation(r, "tags.backend"), "crashpad");
        CHECK_EQ_STR(annotation(r, "user.id"), "u7");
        CHECK_EQ_STR(annotation(r, "prod"), "Crashy");
        CHECK_EQ_STR(r->meta.release, "crashy@3.1.4+77");
        CHECK_EQ_STR(r->meta.app_version, "3.1.4");
        CHECK_EQ_STR(r->meta.hardware_model, "MacBookPro16,1");
        CHECK_EQ_STR(r->meta.app_name, "Crashy"); /* Crashpad's prod, the event naming none */
        CHECK_EQ_STR(r->meta.incident_id, "4b7c1a0e9d2f4e3a8b6c5d4e3f2a1b0c");
    }
    /* a malformed event is noted, the dump still read */
    r = NULL;
    crashreport_minidump_options bad = {.event_json = "{not json", .event_len = 9};
    CHECK_EQ_INT(crashreport_parse_minidump(&r, b.data, b.len, &bad, a, &err), ERR_OK);
    CHECK(r != NULL && r->nerrors > 0);
    arena_free(a);
    bytes_unmap(&b);
}

/* A walk_if that answers `answer` and notes what the report held when it was asked. */
struct walk_gate {
    bool answer;
    int calls;
    size_t images_seen, threads_seen;
};

static bool walk_gate_ask(void *ctx, const crashreport *r)
{
    struct walk_gate *g = ctx;
    g->calls++;
    g->images_seen = r->nimages;
    g->threads_seen = r->nthreads;
    return g->answer;
}

static void electron_dump_every_thread(void)
{
    bytes b = {0};
    CHECK(load(&b, "crashpad/electron-1.4.3-mac.dmp"));
    arena *a = arena_new(0);
    crashreport *r = NULL;
    err_info err = {0};
    CHECK_EQ_INT(crashreport_parse_minidump(&r, b.data, b.len, NULL, a, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(r->nthreads, 17);
        CHECK_EQ_INT(r->nimages, 217);
        CHECK_EQ_STR(r->meta.app_version, "1.4.3"); /* Crashpad's ver */
        CHECK_EQ_STR(r->meta.signal, "SIGILL");
        size_t walked = 0;
        for (size_t t = 0; t < r->nthreads; t++)
            walked += r->threads[t].nframes > 0;
        CHECK_EQ_INT(walked, 17);
        /* context_only: the same threads and metadata, each with the walk's frame 0 only */
        crashreport *c = NULL;
        crashreport_minidump_options o = {.context_only = true};
        CHECK_EQ_INT(crashreport_parse_minidump(&c, b.data, b.len, &o, a, &err), ERR_OK);
        if (c != NULL) {
            CHECK_EQ_INT(c->nthreads, r->nthreads);
            CHECK_EQ_INT(c->nimages, r->nimages);
            CHECK_EQ_STR(c->meta.app_version, r->meta.app_version);
            CHECK_EQ_STR(c->meta.signal, r->meta.signal);
            for (size_t t = 0; t < c->nthreads && t < r->nthreads; t++) {
                CHECK_EQ_INT(c->threads[t].nframes, r->threads[t].nframes > 0);
                if (c->threads[t].nframes > 0 && r->threads[t].nframes > 0)
                    CHECK(c->threads[t].frames[0].addr == r->threads[t].frames[0].addr);
            }
        }
        /* walk_if: asked once, with the images read and no thread yet; false reads as
         * context_only does, true walks as without it */
        for (int answer = 0; answer < 2; answer++) {
            struct walk_gate g = {.answer = answer != 0};
            crashreport_minidump_options wo = {.walk_if = walk_gate_ask, .image_unwind_ctx = &g};
            crashreport *w = NULL;
            CHECK_EQ_INT(crashreport_parse_minidump(&w, b.data, b.len, &wo, a, &err), ERR_OK);
            CHECK_EQ_INT(g.calls, 1);
            CHECK_EQ_INT(g.images_seen, 217);
            CHECK_EQ_INT(g.threads_seen, 0);
            if (w == NULL || (answer ? r : c) == NULL)
                continue;
            const crashreport *want = answer ? r : c;
            CHECK_EQ_INT(w->nthreads, want->nthreads);
            for (size_t t = 0; t < w->nthreads && t < want->nthreads; t++)
                CHECK_EQ_INT(w->threads[t].nframes, want->threads[t].nframes);
        }
    }
    arena_free(a);
    bytes_unmap(&b);
}

static void broken_dumps_are_refused_with_the_reason(void)
{
    static const char *const rel[] = {"invalid/invalid-range.dmp", "invalid/invalid-record-count.dmp"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        bytes b = {0};
        if (!load(&b, rel[i])) {
            CHECK(false);
            continue;
        }
        arena *a = arena_new(0);
        crashreport *r = NULL;
        err_info err = {0};
        CHECK_EQ_INT(crashreport_parse_minidump(&r, b.data, b.len, NULL, a, &err), ERR_INVALID);
        CHECK(strncmp(err.msg, "minidump: ", 10) == 0);
        arena_free(a);
        bytes_unmap(&b);
    }
}

/* Every prefix of a real dump (in steps) reads or is refused; none crashes. */
static void truncated_dumps_never_crash(void)
{
    bytes b = {0};
    CHECK(load(&b, "macos-x86_64-breakpad/macos.dmp"));
    size_t ok = 0;
    for (size_t n = 0; n <= b.len; n += 61) {
        arena *a = arena_new(0);
        crashreport *r = NULL;
        err_info err = {0};
        err_code rc = crashreport_parse_minidump(&r, b.data, n, NULL, a, &err);
        CHECK(rc == ERR_OK || rc == ERR_INVALID);
        ok += rc == ERR_OK;
        arena_free(a);
    }
    CHECK(ok > 0);
    bytes_unmap(&b);
}

int main(void)
{
    RUN(breakpad_dump_reads_as_apple_shows_it);
    RUN(crashpad_dump_with_its_event);
    RUN(electron_dump_every_thread);
    RUN(broken_dumps_are_refused_with_the_reason);
    RUN(truncated_dumps_never_crash);
    return harness_done();
}
