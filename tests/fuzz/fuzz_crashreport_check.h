/*
 * fuzz_crashreport_check - what every crash report fuzz target checks after a parse: the
 * parser either returns a report or a clean error (a known code and a message), every index
 * in the model points inside its array, both renderers run, the JSON rendering is valid
 * JSON, and symbolicating with no symcaches marks each frame without touching its symbol;
 * every string of the model and every message is valid UTF-8 (never a refusal for it).
 * Included by tests/fuzz/fuzz_crashreport_*.c (one target per parser).
 */
#ifndef STACKSIFT_FUZZ_CRASHREPORT_CHECK_H
#define STACKSIFT_FUZZ_CRASHREPORT_CHECK_H

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/utf8.h"
#include "crashreport/crashreport.h"
#include "fuzz_require.h"

static void check_frames(const crashreport *r, const crashreport_frame *fs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        REQUIRE(fs[i].image >= -1 && (fs[i].image < 0 || (size_t)fs[i].image < r->nimages));
        REQUIRE(fs[i].src_line <= fs[i].src_sym && fs[i].src_sym <= fs[i].src_end);
        REQUIRE(fs[i].src_end <= r->text_len);
        for (uint32_t k = 0; k < fs[i].ngiven_inlines; k++)
            REQUIRE(fs[i].given_inlines[k].function != NULL);
    }
}

/* Call trees: every parent precedes its callee, depths follow, leaves have no callee. */
static void check_tree(const crashreport_thread *t)
{
    for (size_t i = 0; i < t->nframes; i++) {
        const crashreport_frame *f = &t->frames[i];
        bool has_child = i + 1 < t->nframes && t->frames[i + 1].parent == (int32_t)i;
        REQUIRE(f->leaf == !has_child);
        REQUIRE(f->parent >= -1 && f->parent < (int32_t)i);
        REQUIRE(f->parent < 0 ? f->depth == 0 : f->depth == t->frames[f->parent].depth + 1);
    }
}

/* Whether JSON that jsonw wrote escapes a byte that is not UTF-8 ("\u00ab": jsonw writes a
 * valid character as it is, and only such a byte as an escape of 0x80..0xff). */
static bool has_byte_escape(const char *s, size_t n)
{
    for (size_t i = 0; i + 5 < n; i++) {
        if (s[i] != '\\')
            continue;
        char h = s[i + 4];
        if (s[i + 1] == 'u' && s[i + 2] == '0' && s[i + 3] == '0' &&
            ((h >= '8' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
            return true;
        i++; /* the escaped character: "\\\\" is one backslash */
    }
    return false;
}

static void check_report(const crashreport *r)
{
    for (size_t t = 0; t < r->nthreads; t++) {
        check_frames(r, r->threads[t].frames, r->threads[t].nframes);
        if (r->tree)
            check_tree(&r->threads[t]);
    }
    check_frames(r, r->leb, r->nleb);
    REQUIRE(r->nerrors <= CRASHREPORT_MAX_ERRORS);
    buf o;
    buf_init(&o);
    crashreport_render_json(&o, r);
    json_error_t e;
    json_t *j = json_loadb((const char *)o.data, o.len, 0, &e);
    REQUIRE(j != NULL);
    json_decref(j);
    REQUIRE(!has_byte_escape((const char *)o.data, o.len));
    buf_reset(&o);
    buf_init(&o);
    crashreport_render_text(&o, r);
    REQUIRE(utf8_valid((const char *)o.data, o.len));
    buf_reset(&o);
}

/* Parse `len` bytes of `data` (with an optional fixed prefix) and check the result: every
 * report of the document (crashreport_parse_all: a MetricKit payload holds several). */
static void fuzz_crashreport_one(const char *prefix, const uint8_t *data, size_t len)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    char *input = malloc(plen + len + 1);
    REQUIRE(input != NULL);
    if (plen)
        memcpy(input, prefix, plen);
    if (len)
        memcpy(input + plen, data, len);
    arena *a = arena_new((size_t)64 << 20);
    err_info err = {0};
    crashreport **rs = NULL;
    size_t n = 0;
    err_code rc = crashreport_parse_all(&rs, &n, input, plen + len, a, &err);
    REQUIRE((rc == ERR_OK) == (rs != NULL && n > 0));
    REQUIRE(rc == ERR_OK || rc == ERR_INVALID || rc == ERR_UNSUPPORTED || rc == ERR_TOO_LARGE);
    REQUIRE(rc == ERR_OK || err.msg[0] != '\0');
    REQUIRE(utf8_valid(err.msg, strlen(err.msg)));
    for (size_t i = 0; rc == ERR_OK && i < n; i++)
        check_report(rs[i]);
    arena_free(a);
    free(input);
}

#endif
