/* test_samplebatch - sample batches: every field checked with its path, canonical merging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "harness.h"
#include "samplebatch/samplebatch.h"

#define HEAD "{\"format_version\":1,\"batch_id\":\"b-1\"," \
             "\"app\":{\"name\":\"App\",\"bundle_id\":\"com.example.app\",\"version\":\"1.4\",\"build\":\"103\"}," \
             "\"os\":{\"name\":\"iOS\",\"version\":\"17.4\",\"build\":\"21E219\"}," \
             "\"device\":{\"model\":\"iPhone15,2\",\"id\":\"device-0042\"},\"arch\":\"arm64\","
#define IMAGES "\"images\":[{\"name\":\"App\",\"uuid\":\"0123456789abcdef0123456789ABCDEF\",\"load_address\":\"0x100000000\",\"size\":65536,\"path\":\"/var/containers/Bundle/Application/X/App.app/App\"}," \
               "{\"name\":\"CoreLocation\",\"uuid\":\"11111111-2222-3333-4444-555555555555\",\"load_address\":\"0x1a0000000\",\"size\":\"0x10000\"}],"

static samplebatch *parse(const char *json, samplebatch_origin origin, arena *a, char *field,
                          err_info *err, err_code *rc)
{
    samplebatch *b = NULL;
    *rc = samplebatch_parse(&b, field, json, strlen(json), origin, a, err);
    return b;
}

static void parses_a_batch(void)
{
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(HEAD IMAGES "\"samples\":["
                           "{\"tag\":\"CLLocationManager.requestLocation\",\"thread\":\"main\","
                           "\"frames\":[\"0x1a0001234\",\"0x100000f1c\",\"0x100001000\"],\"count\":3},"
                           "{\"tag\":\"UIPasteboard.string\",\"frames\":[\"0x1a0000010\",4294971392]}]}",
                           SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    if (b == NULL) {
        fprintf(stderr, "%s\n", err.msg);
        arena_free(a);
        return;
    }
    CHECK_EQ_STR(b->batch_id, "b-1");
    CHECK_EQ_STR(b->app_name, "App");
    CHECK_EQ_STR(b->build, "103");
    CHECK_EQ_STR(b->device_id, "device-0042");
    CHECK_EQ_STR(b->os_build, "21E219");
    CHECK_EQ_INT(b->nimages, 2);
    CHECK_EQ_STR(b->images[0].uuid, "01234567-89AB-CDEF-0123-456789ABCDEF");
    CHECK_EQ_U64(b->images[1].end_addr, 0x1a000ffffull);
    CHECK_EQ_STR(b->images[1].arch, "arm64");
    CHECK_EQ_INT(b->nsamples, 2);
    CHECK_EQ_INT(b->samples[0].nframes, 3);
    CHECK_EQ_INT(b->samples[0].frames[0].image, 1);
    CHECK_EQ_INT(b->samples[0].frames[1].image, 0);
    CHECK_EQ_U64(b->samples[0].frames[1].addr, 0x100000f1cull);
    CHECK_EQ_STR(b->samples[0].thread, "main");
    CHECK_EQ_INT(b->samples[1].count, 1);        /* count defaults to 1 */
    CHECK_EQ_U64(b->samples[1].frames[1].addr, 0x100001000ull);
    CHECK_EQ_INT(b->calls, 4);
    arena_free(a);
}

/* One bad batch: its error code, field path and a word of its message. */
static void check_bad(const char *json, err_code want, const char *want_field, const char *word)
{
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(json, SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK(b == NULL);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_STR(field, want_field);
    if (strstr(err.msg, word) == NULL) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.msg, word);
        CHECK(0);
    }
    if (want_field[0] && strncmp(err.msg, want_field, strlen(want_field)) != 0) {
        fprintf(stderr, "message \"%s\" does not start with its field\n", err.msg);
        CHECK(0);
    }
    arena_free(a);
}

#define ONE(sample) HEAD IMAGES "\"samples\":[{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"]}," sample "]}"

static void names_the_bad_field(void)
{
    check_bad("[1]", ERR_INVALID, "", "JSON object");
    check_bad("{\"format_version\":1,", ERR_INVALID, "", "malformed JSON");
    check_bad("{\"format_version\":2}", ERR_UNSUPPORTED, "format_version", "format_version 1");
    check_bad("{\"format_version\":1,\"app\":{\"name\":\"A\"}}", ERR_INVALID, "app.build", "missing");
    check_bad(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"],\"count\":0}"), ERR_INVALID,
              "samples[1].count", "from 1 to 1000000");
    check_bad(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"],\"count\":1000001}"), ERR_INVALID,
              "samples[1].count", "from 1 to 1000000");
    check_bad(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"],\"count\":-3}"), ERR_INVALID,
              "samples[1].count", "integer");
    check_bad(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\",\"0x200000000\"]}"), ERR_INVALID,
              "samples[1].frames[1]", "0x200000000 lies in no image");
    check_bad(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a00000zz\"]}"), ERR_INVALID,
              "samples[1].frames[0]", "hex");
    check_bad(ONE("{\"tag\":\"\",\"frames\":[\"0x1a0000010\"]}"), ERR_INVALID, "samples[1].tag",
              "empty");
    check_bad(ONE("{\"frames\":[\"0x1a0000010\"]}"), ERR_INVALID, "samples[1].tag", "missing");
    check_bad(ONE("{\"tag\":\"T\",\"frames\":[]}"), ERR_INVALID, "samples[1].frames", "at least");
    check_bad(HEAD "\"images\":[{\"name\":\"App\",\"load_address\":4096,\"size\":10}],"
              "\"samples\":[]}", ERR_INVALID, "images[0].uuid", "UUID");
    check_bad(HEAD "\"images\":[{\"name\":\"App\",\"uuid\":\"00000000-0000-0000-0000-000000000000\","
              "\"load_address\":4096,\"size\":10}],\"samples\":[]}", ERR_INVALID, "images[0].uuid",
              "not a UUID");
    check_bad(HEAD "\"images\":[{\"name\":\"App\",\"uuid\":\"0123456789abcdef0123456789ABCDEF\","
              "\"load_address\":4096}],\"samples\":[]}", ERR_INVALID, "images[0].size", "missing");
    check_bad(HEAD IMAGES "\"samples\":[]}", ERR_INVALID, "samples", "at least one");
    check_bad(HEAD IMAGES "\"samples\":[{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"]}],\"batch_id\":5}",
              ERR_INVALID, "batch_id", "string");
}

/* Tags are free text up to 200 bytes: 200 is fine, 201 is not. */
static void tag_limit_is_200_bytes(void)
{
    char tag[202];
    memset(tag, 'x', 201);
    tag[201] = '\0';
    char *json = malloc(4096);
    snprintf(json, 4096, ONE("{\"tag\":\"%s\",\"frames\":[\"0x1a0000010\"]}"), tag);
    check_bad(json, ERR_INVALID, "samples[1].tag", "longer than 200 bytes");
    tag[200] = '\0';
    snprintf(json, 4096, ONE("{\"tag\":\"%s\",\"frames\":[\"0x1a0000010\"]}"), tag);
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(json, SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK(b != NULL && strlen(b->samples[1].tag) == 200);
    arena_free(a);
    free(json);
}

/* Builds a batch of `n` samples with `frames` frames each. */
static char *big_batch(size_t n, size_t frames)
{
    buf b;
    buf_init(&b);
    buf_append_str(&b, HEAD IMAGES "\"samples\":[");
    for (size_t i = 0; i < n; i++) {
        buf_append_str(&b, i ? ",{\"tag\":\"T\",\"frames\":[" : "{\"tag\":\"T\",\"frames\":[");
        for (size_t k = 0; k < frames; k++)
            buf_printf(&b, "%s\"0x%llx\"", k ? "," : "", 0x100000000ull + 4 * k);
        buf_append_str(&b, "]}");
    }
    buf_append_str(&b, "]}");
    return (char *)b.data;   /* malloc'd by buf */
}

static void limits_are_named(void)
{
    char *json = big_batch(100001, 1);
    /* the message counts every sample and frame sent */
    check_bad(json, ERR_TOO_LARGE, "samples", "more than 100000 samples in one batch (100001)");
    free(json);
    json = big_batch(1, 1000);
    check_bad(json, ERR_TOO_LARGE, "samples[0].frames", "more than 512 frames (1000)");
    free(json);
    json = big_batch(100000, 1);     /* exactly the limit is fine */
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(json, SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK(b != NULL && b->calls == 100000);
    arena_free(a);
    free(json);
}

/* No tree of the document is built: the caller's arena holds the batch only (16 bytes a frame
 * and the arrays' growth, where a tree would add 32 bytes a frame to ~14 of JSON). */
static void caller_arena_keeps_only_the_batch(void)
{
    char *json = big_batch(1000, 16);
    size_t len = strlen(json);
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(json, SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK(b != NULL && b->nsamples == 1000 && b->samples[999].nframes == 16);
    if (arena_used(a) > len + len / 2) {
        fprintf(stderr, "arena holds %zu bytes after a %zu-byte batch\n", arena_used(a), len);
        CHECK(0);
    }
    arena_free(a);
    free(json);
}

/* arm64e return addresses carry PAC bits: the image is found without them. */
static void pac_bits_are_stripped_for_the_image(void)
{
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\",\"0x2d7f000100000f1c\"]}"),
                           SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    CHECK(b != NULL && b->samples[1].frames[1].image == 0);
    CHECK(b != NULL && b->samples[1].frames[1].addr == 0x2d7f000100000f1cull);
    arena_free(a);
}

static void canonical_merges_identical_stacks(void)
{
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    const char *json = HEAD IMAGES "\"samples\":["
        "{\"tag\":\"A\",\"frames\":[\"0x1a0000010\",\"0x100000f1c\"],\"count\":2},"
        "{\"tag\":\"B\",\"frames\":[\"0x1a0000010\",\"0x100000f1c\"]},"
        "{\"tag\":\"A\",\"thread\":\"bg\",\"frames\":[\"0x1a0000010\",\"0x100000f1c\"],\"count\":1000000},"
        "{\"tag\":\"A\",\"frames\":[\"0x1a0000010\",\"0x100000f20\"]}]}";
    samplebatch *b = parse(json, SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    if (b == NULL) {
        arena_free(a);
        return;
    }
    buf out;
    buf_init(&out);
    size_t stacks = 0;
    samplebatch_render_canonical(&out, &stacks, b);
    CHECK_EQ_INT(stacks, 3);
    samplebatch *c = parse((const char *)out.data, SAMPLEBATCH_STORED, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    if (c != NULL) {
        CHECK_EQ_INT(c->nsamples, 3);
        CHECK_EQ_INT(c->calls, b->calls);
        CHECK_EQ_INT(c->samples[0].count, 1000002);   /* above the per-sample limit: stored */
        CHECK_EQ_STR(c->samples[1].tag, "B");
        CHECK_EQ_STR(c->batch_id, "b-1");
        CHECK_EQ_STR(c->device_model, "iPhone15,2");
        CHECK_EQ_STR(c->images[0].uuid, b->images[0].uuid);
        CHECK_EQ_STR(c->images[0].path, b->images[0].path);
    }
    /* the stored form is not accepted from a client: its merged count is over the limit */
    samplebatch *d = parse((const char *)out.data, SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK(d == NULL);
    CHECK_EQ_STR(field, "samples[0].count");
    buf_reset(&out);
    arena_free(a);
}

/* Images no frame lies in are not kept. */
static void canonical_drops_unused_images(void)
{
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(HEAD IMAGES "\"samples\":[{\"tag\":\"A\",\"frames\":[\"0x100000f1c\"]}]}",
                           SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK(b != NULL);
    if (b == NULL) {
        arena_free(a);
        return;
    }
    buf out;
    buf_init(&out);
    samplebatch_render_canonical(&out, NULL, b);
    samplebatch *c = parse((const char *)out.data, SAMPLEBATCH_STORED, a, field, &err, &rc);
    CHECK(c != NULL && c->nimages == 1 && strcmp(c->images[0].name, "App") == 0);
    CHECK(strstr((const char *)out.data, "CoreLocation") == NULL);
    buf_reset(&out);
    arena_free(a);
}

static bool same_str(const char *x, const char *y)
{
    return (x == NULL && y == NULL) || (x != NULL && y != NULL && strcmp(x, y) == 0);
}

/* Every field a batch has, equal in x and y. */
static bool same_batch(const samplebatch *x, const samplebatch *y)
{
    if (!same_str(x->batch_id, y->batch_id) || !same_str(x->app_name, y->app_name) ||
        !same_str(x->bundle_id, y->bundle_id) || !same_str(x->app_version, y->app_version) ||
        !same_str(x->build, y->build) || !same_str(x->os_name, y->os_name) ||
        !same_str(x->os_version, y->os_version) || !same_str(x->os_build, y->os_build) ||
        !same_str(x->device_model, y->device_model) || !same_str(x->device_id, y->device_id) ||
        !same_str(x->arch, y->arch) || x->nimages != y->nimages || x->nsamples != y->nsamples ||
        x->calls != y->calls)
        return false;
    for (size_t i = 0; i < x->nimages; i++) {
        const crashreport_image *p = &x->images[i], *q = &y->images[i];
        if (!same_str(p->name, q->name) || !same_str(p->path, q->path) ||
            !same_str(p->arch, q->arch) || !same_str(p->version, q->version) ||
            strcmp(p->uuid, q->uuid) != 0 || p->load_addr != q->load_addr ||
            p->end_addr != q->end_addr || p->vmaddr != q->vmaddr || p->user != q->user ||
            p->in_app != q->in_app || p->has_unwind != q->has_unwind)
            return false;
    }
    for (size_t i = 0; i < x->nsamples; i++) {
        const samplebatch_sample *p = &x->samples[i], *q = &y->samples[i];
        if (!same_str(p->tag, q->tag) || !same_str(p->thread, q->thread) ||
            p->nframes != q->nframes || p->count != q->count)
            return false;
        for (uint32_t k = 0; k < p->nframes; k++)
            if (p->frames[k].addr != q->frames[k].addr || p->frames[k].image != q->frames[k].image)
                return false;
    }
    return true;
}

/* samplebatch_canonical gives, without text, what the stored canonical text reads back to:
 * merged stacks, dropped thread names and images, remapped image indexes, escaped strings,
 * optional fields absent, in_app kept; its strings outlive the arena of the batch it copies. */
static void canonical_batch_is_the_stored_one(void)
{
    const char *docs[] = {
        HEAD IMAGES "\"samples\":["
        "{\"tag\":\"A\",\"frames\":[\"0x1a0000010\",\"0x100000f1c\"],\"count\":2},"
        "{\"tag\":\"B\",\"thread\":\"main\",\"frames\":[\"0x1a0000010\",\"0x100000f1c\"]},"
        "{\"tag\":\"A\",\"thread\":\"bg\",\"frames\":[\"0x1a0000010\",\"0x100000f1c\"],\"count\":7},"
        "{\"tag\":\"A\",\"frames\":[\"0x1a0000010\",\"0x100000f20\"]}]}",
        /* an unused first image: the frames' indexes move */
        HEAD IMAGES "\"samples\":[{\"tag\":\"Caf\\u00e9 \\\"q\\\"\",\"frames\":[\"0x100000f1c\"]},"
        "{\"tag\":\"Caf\\u00e9 \\\"q\\\"\",\"frames\":[\"0x100000f1c\"],\"count\":3}]}",
        /* the least a batch has; images named by their path, in_app given */
        "{\"format_version\":1,\"app\":{\"name\":\"App\",\"build\":\"1\"},\"device\":{\"id\":\"d\"},"
        "\"images\":[{\"path\":\"/x/Kit\",\"uuid\":\"0123456789abcdef0123456789ABCDEF\","
        "\"arch\":\"arm64e\",\"load_address\":4096,\"size\":4096,\"in_app\":true},"
        "{\"name\":\"Sys\",\"uuid\":\"11111111-2222-3333-4444-555555555555\","
        "\"load_address\":\"0x100000\",\"size\":4096,\"in_app\":false}],"
        "\"samples\":[{\"tag\":\"T\",\"frames\":[\"0x100010\",\"0x1010\",4660]}]}",
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        arena *a = arena_new(0), *keep = arena_new(0);
        char field[SAMPLEBATCH_FIELD_MAX];
        err_info err = {0};
        err_code rc;
        samplebatch *b = parse(docs[d], SAMPLEBATCH_SENT, a, field, &err, &rc);
        CHECK_EQ_INT(rc, ERR_OK);
        if (b == NULL) {
            arena_free(a);
            arena_free(keep);
            continue;
        }
        buf out;
        buf_init(&out);
        samplebatch_render_canonical(&out, NULL, b);
        buf_putc(&out, '\0');
        samplebatch *stored = parse((const char *)out.data, SAMPLEBATCH_STORED, keep, field,
                                    &err, &rc);
        samplebatch *c = NULL;
        CHECK_EQ_INT(samplebatch_canonical(&c, b, keep, &err), ERR_OK);
        arena_free(a);   /* the copy keeps nothing of the batch it was made from */
        CHECK(stored != NULL && c != NULL && same_batch(stored, c));
        /* and it renders to the same text */
        buf again;
        buf_init(&again);
        if (c != NULL)
            samplebatch_render_canonical(&again, NULL, c);
        buf_putc(&again, '\0');
        CHECK_EQ_STR((const char *)again.data, (const char *)out.data);
        buf_reset(&again);
        buf_reset(&out);
        arena_free(keep);
    }
    /* over its arena's budget: ERR_TOO_LARGE, no batch */
    arena *a = arena_new(0), *tiny = arena_new(64);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse(docs[0], SAMPLEBATCH_SENT, a, field, &err, &rc);
    samplebatch *c = (samplebatch *)1;
    CHECK(b != NULL && samplebatch_canonical(&c, b, tiny, &err) == ERR_TOO_LARGE && c == NULL);
    arena_free(tiny);
    arena_free(a);
}

/* The scanner: escapes and UTF-8 decoded, member order free, unknown members skipped, the
 * last of a repeated member counts; broken JSON refused as malformed (never a crash). */
static void json_edges(void)
{
    arena *a = arena_new(0);
    char field[SAMPLEBATCH_FIELD_MAX];
    err_info err = {0};
    err_code rc;
    samplebatch *b = parse("{\"samples\":[{\"frames\":[\"0x100000010\",4294971392],\"extra\":{\"x\":[1,"
                           "{\"y\":null},true,false,-1.5e3,\"\\\"\"]},\"tag\":\"Caf\\u00e9 \\ud83d\\ude00\\/\","
                           "\"count\":2,\"count\":3}],\"device\":{\"id\":\"d\"},\"images\":[{\"name\":\"App\","
                           "\"uuid\":\"0123456789abcdef0123456789ABCDEF\",\"load_address\":4294967296,\"size\":65536}],"
                           " \"app\" : {\"name\":\"A\",\"build\":\"1\"}, \"format_version\" : 1 }\n",
                           SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK_EQ_INT(rc, ERR_OK);
    if (b != NULL) {
        CHECK_EQ_STR(b->samples[0].tag, "Caf\xc3\xa9 \xf0\x9f\x98\x80/");
        CHECK_EQ_INT(b->samples[0].count, 3);
        CHECK_EQ_INT(b->samples[0].frames[1].image, 0);
    } else {
        fprintf(stderr, "%s\n", err.msg);
    }
    static const char *const BROKEN[] = {
        "{\"format_version\":1} x",             /* more after the document */
        "{\"format_version\":1,}",              /* trailing comma */
        "{\"a\":\"\xff\"}",                     /* not UTF-8 */
        "{\"a\":\"\xc0\xaf\"}",                 /* overlong */
        "{\"a\":\"\xed\xa0\x80\"}",             /* a surrogate in UTF-8 */
        "{\"a\":\"\\ud800\"}",                  /* lone high surrogate */
        "{\"a\":\"\\udc00\"}",                  /* lone low surrogate */
        "{\"a\":\"\\u0000\"}",                  /* NUL */
        "{\"a\":\"tab\there\"}",                /* raw control character */
        "{\"a\":01}",                           /* leading zero */
        "{\"a\":1.}",
        "{\"a\":tru}",
        "{\"a\" 1}",
        "{\"a\":\"\\x\"}",
        "{\"a\":\"open",
        "",
        "   ",
    };
    for (size_t i = 0; i < sizeof BROKEN / sizeof BROKEN[0]; i++) {
        samplebatch *x = parse(BROKEN[i], SAMPLEBATCH_SENT, a, field, &err, &rc);
        if (x != NULL || rc != ERR_INVALID || strstr(err.msg, "malformed JSON") == NULL) {
            fprintf(stderr, "BROKEN[%zu] not refused as malformed: %s\n", i, err.msg);
            CHECK(0);
        }
    }
    /* nesting: as jansson (base/jsonr), 2048 levels inside an unknown member are read and
     * ignored, 2049 refused as malformed, not a stack overflow */
    for (int levels = 2048; levels <= 2049; levels++) {
        buf deep;
        buf_init(&deep);
        buf_append_str(&deep, ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"],\"x\":"));
        deep.len -= 2;   /* inside the last sample, before "]}" */
        /* the batch, its samples and the sample are three levels already */
        for (int i = 3; i < levels; i++)
            buf_putc(&deep, '[');
        for (int i = 3; i < levels; i++)
            buf_putc(&deep, ']');
        buf_append_str(&deep, "}]}");
        samplebatch *x = parse((const char *)deep.data, SAMPLEBATCH_SENT, a, field, &err, &rc);
        if (levels == 2048)
            CHECK(x != NULL && rc == ERR_OK);
        else
            CHECK(x == NULL && rc == ERR_INVALID && strstr(err.msg, "malformed JSON") != NULL &&
                  strstr(err.msg, "depth") != NULL && field[0] == '\0');
        buf_reset(&deep);
    }
    /* jansson's verdicts: a real outside double's range is malformed even where it is ignored;
     * a key written with escapes is the key it decodes to */
    samplebatch *x = parse(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"],\"x\":1e400}"),
                           SAMPLEBATCH_SENT, a, field, &err, &rc);
    CHECK(x == NULL && rc == ERR_INVALID && strstr(err.msg, "malformed JSON") != NULL);
    x = parse(ONE("{\"t\\u0061g\":\"T2\",\"frames\":[\"0x1a0000010\"]}"), SAMPLEBATCH_SENT, a,
              field, &err, &rc);
    CHECK(x != NULL && strcmp(x->samples[1].tag, "T2") == 0);
    /* a count must be a JSON integer */
    x = parse(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"],\"count\":3.0}"), SAMPLEBATCH_SENT, a,
              field, &err, &rc);
    CHECK(x == NULL && strcmp(field, "samples[1].count") == 0);
    x = parse(ONE("{\"tag\":\"T\",\"frames\":[\"0x1a0000010\"],\"count\":\"3\"}"), SAMPLEBATCH_SENT, a,
              field, &err, &rc);
    CHECK(x == NULL && strcmp(field, "samples[1].count") == 0);
    arena_free(a);
}

int main(void)
{
    RUN(parses_a_batch);
    RUN(names_the_bad_field);
    RUN(tag_limit_is_200_bytes);
    RUN(limits_are_named);
    RUN(caller_arena_keeps_only_the_batch);
    RUN(pac_bits_are_stripped_for_the_image);
    RUN(canonical_merges_identical_stacks);
    RUN(canonical_drops_unused_images);
    RUN(canonical_batch_is_the_stored_one);
    RUN(json_edges);
    return harness_done();
}
