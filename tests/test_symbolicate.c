/*
 * test_symbolicate - report symbolication (common/symbolicate): the address rules, and a
 * report against a real symcache built from the arm64-O2 fixture dSYM (STACKSIFT_FIXTURES):
 * frame statuses, the resolver called once per image, missing UUIDs listed once, PAC bits.
 * Exact symbol agreement with llvm-symbolizer is tests/symbolicate_reports.py's job.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "crashreport/crashreport.h"
#include "dsym/dsym.h"
#include "harness.h"
#include "symbolicate/symbolicate.h"
#include "symcache/symcache.h"

static void caller_rules(void)
{
    CHECK_EQ_U64(symbolicate_caller_addr(0x104cd0a1c, "arm64"), 0x104cd0a18);
    CHECK_EQ_U64(symbolicate_caller_addr(0x104cd0a1e, "arm64"), 0x104cd0a18);
    CHECK_EQ_U64(symbolicate_caller_addr(0x104cd0a1c, "arm64e"), 0x104cd0a18);
    CHECK_EQ_U64(symbolicate_caller_addr(0x4cd0a1c, "arm64_32"), 0x4cd0a18);
    CHECK_EQ_U64(symbolicate_caller_addr(0x7fff61bc85be, "x86_64"), 0x7fff61bc85bd);
    CHECK_EQ_U64(symbolicate_caller_addr(0x1000, "i386"), 0xfff);
    CHECK_EQ_U64(symbolicate_caller_addr(0x3625cbf9, "armv7"), 0x3625cbf6);
    CHECK_EQ_U64(symbolicate_caller_addr(0x3625cbf8, "armv7"), 0x3625cbf6);
    CHECK_EQ_U64(symbolicate_caller_addr(0x1000, NULL), 0xfff);
    CHECK_EQ_U64(symbolicate_caller_addr(0, "arm64"), 0);
    CHECK_EQ_U64(symbolicate_caller_addr(2, "arm64"), 0);
}

typedef struct {
    const symcache *sc;
    char uuid[37];
    int calls;
    int calls_for_app;
} resolver_ctx;

static const symcache *resolve(void *ctx, const char *uuid, const char *arch)
{
    resolver_ctx *c = ctx;
    c->calls++;
    if (strcmp(uuid, c->uuid) == 0) {
        c->calls_for_app++;
        CHECK_EQ_STR(arch, "arm64");
        return c->sc;
    }
    return NULL;
}


/* Sentry events (crashreport format "sentry") of the same crash: frames caller first; file
 * address = instruction_addr - image_addr + (image_vmaddr if non-zero, else the dSYM's);
 * the KSCrash-based SDKs' arm64 addresses cut to 32 bits, one wrapped past 2^32 inside its
 * image; a frame the SDK named keeps that name where no dSYM covers it, `<redacted>` is none. */
static void sentry_events(resolver_ctx *ctx)
{
    static const struct {
        const char *image;  /* debug_meta.images[0] after "type" */
        const char *pc, *ra; /* instruction_addr of frame 0 and its caller */
        uint64_t want_pc, want_ra;
        crashreport_sym_status status;
    } CASES[] = {
        /* sentry-cocoa: macho, debug_id lower-case, no vmaddr */
        {"\"macho\",\"debug_id\":\"%s\",\"image_addr\":\"0x104c00000\",\"image_size\":32768,"
         "\"code_file\":\"/private/var/containers/Bundle/Application/X/FixtureApp.app/FixtureApp\"",
         "\"0x104c04010\"", "\"0x104c04014\"", 0x100004010, 0x100004010, CRASHREPORT_SYM_OK},
        /* the event's vmaddr wins over the dSYM's (here one that holds no code) */
        {"\"macho\",\"debug_id\":\"%s\",\"image_addr\":\"0x104c00000\",\"image_size\":32768,"
         "\"image_vmaddr\":\"0x200000000\",\"code_file\":\"/App\"",
         "\"0x104c04010\"", "\"0x104c04014\"", 0x200004010, 0x200004010,
         CRASHREPORT_SYM_NOT_FOUND},
        /* legacy apple image, addresses cut to 32 bits, image_vmaddr "0x0", integer address */
        {"\"apple\",\"uuid\":\"%s\",\"image_addr\":\"0x4c00000\",\"image_size\":32768,"
         "\"image_vmaddr\":\"0x0\",\"cpu_type\":16777228,\"cpu_subtype\":0,\"name\":\"/App\"",
         "79708176", "\"0x4c04014\"", 0x100004010, 0x100004010, CRASHREPORT_SYM_OK},
        /* cut, and the image crosses 2^32: its frames wrapped to small addresses */
        {"\"apple\",\"uuid\":\"%s\",\"image_addr\":\"0xffffc000\",\"image_size\":32768,"
         "\"image_vmaddr\":\"0x0\",\"cpu_type\":16777228,\"cpu_subtype\":0,\"name\":\"/App\"",
         "\"0x10\"", "\"0x14\"", 0x100004010, 0x100004010, CRASHREPORT_SYM_OK},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char image[1024], ev[4096];
        const char *load = i == 3 ? "0xffffc000" : i == 2 ? "0x4c00000" : "0x104c00000";
        snprintf(image, sizeof image, CASES[i].image, ctx->uuid);
        snprintf(ev, sizeof ev,
                 "{\"event_id\":\"0123456789abcdef0123456789abcdef\",\"platform\":\"cocoa\","
                 "\"contexts\":{\"device\":{\"arch\":\"arm64\"}},"
                 "\"exception\":{\"values\":[{\"type\":\"EXC_BAD_ACCESS\",\"thread_id\":0,"
                 "\"mechanism\":{\"type\":\"mach\"}}]},"
                 "\"threads\":{\"values\":[{\"id\":0,\"crashed\":true,\"stacktrace\":{\"frames\":["
                 "{\"instruction_addr\":\"0x1a0000030\",\"image_addr\":\"0x1a0000000\","
                 "\"function\":\"<redacted>\"},"
                 "{\"instruction_addr\":\"0x1a0000020\",\"image_addr\":\"0x1a0000000\","
                 "\"function\":\"mach_msg\"},"
                 "{\"instruction_addr\":%s,\"image_addr\":\"%s\",\"function\":\"given\"},"
                 "{\"instruction_addr\":%s,\"image_addr\":\"%s\",\"function\":\"<redacted>\"}"
                 "]}}]},"
                 "\"debug_meta\":{\"images\":[{\"type\":%s},{\"type\":\"macho\","
                 "\"debug_id\":\"9e195be1-1733-345e-a9bf-50d0d7059647\","
                 "\"image_addr\":\"0x1a0000000\",\"image_size\":1048576,"
                 "\"code_file\":\"/usr/lib/system/libsystem_kernel.dylib\"}]}}",
                 CASES[i].ra, load, CASES[i].pc, load, image);
        arena *a = arena_new(0);
        err_info err = {0};
        crashreport *r = NULL;
        CHECK_EQ_INT(crashreport_parse(&r, ev, strlen(ev), a, &err), ERR_OK);
        if (r == NULL) {
            fprintf(stderr, "case %zu: %s\n", i, err.msg);
            arena_free(a);
            continue;
        }
        CHECK_EQ_STR(crashreport_format_name(r->format), "sentry");
        CHECK_EQ_INT(symbolicate_report(r, resolve, ctx, a, &err), ERR_OK);
        const crashreport_frame *f = r->threads[0].frames;
        CHECK_EQ_INT(r->threads[0].nframes, 4);
        CHECK_EQ_INT(f[0].sym_status, CASES[i].status);
        CHECK_EQ_U64(f[0].lookup_addr, CASES[i].want_pc);
        CHECK_EQ_INT(f[1].sym_status, CASES[i].status);
        CHECK_EQ_U64(f[1].lookup_addr, CASES[i].want_ra);
        CHECK(f[0].symbol == NULL);                 /* <redacted>: no name */
        CHECK_EQ_STR(f[1].symbol, "given");
        if (CASES[i].status == CRASHREPORT_SYM_OK)
            CHECK_EQ_STR(f[1].symbols[f[1].nsymbols - 1].function,
                         f[0].symbols[f[0].nsymbols - 1].function);
        else
            CHECK_EQ_INT(f[0].nsymbols, 0);          /* nothing made up */
        CHECK_EQ_INT(f[2].sym_status, CRASHREPORT_SYM_MISSING);
        CHECK_EQ_STR(f[2].symbol, "mach_msg");     /* the SDK's name stays */
        CHECK_EQ_INT(f[3].sym_status, CRASHREPORT_SYM_MISSING);
        CHECK(f[3].symbol == NULL);
        CHECK_EQ_INT(r->nmissing_uuids, 1);
        arena_free(a);
    }
}

static char built_path[4096];
static void remember(const dsym_built *b, void *ctx)
{
    (void)ctx;
    snprintf(built_path, sizeof built_path, "%s", b->path);
}

static void report_against_fixture(void)
{
    const char *fx = getenv("STACKSIFT_FIXTURES");
    CHECK(fx != NULL);
    if (fx == NULL)
        return;
    char dsym[4096], tmp[] = "/tmp/stacksift-test-symbolicate.XXXXXX";
    snprintf(dsym, sizeof dsym, "%s/arm64-O2/FixtureApp.app.dSYM", fx);
    CHECK(mkdtemp(tmp) != NULL);
    err_info err = {0};
    CHECK_EQ_INT(dsym_build_symcaches(dsym, tmp, NULL, remember, NULL, &err), ERR_OK);
    symcache *sc = NULL;
    CHECK_EQ_INT(symcache_open(&sc, built_path, &err), ERR_OK);
    if (sc == NULL) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    resolver_ctx ctx = {sc, "", 0, 0};
    const uint8_t *u = symcache_uuid(sc);
    char hex[33];
    for (int i = 0; i < 16; i++)
        sprintf(hex + 2 * i, "%02x", u[i]);
    snprintf(ctx.uuid, sizeof ctx.uuid, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
             hex + 16, hex + 20);
    for (char *p = ctx.uuid; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    CHECK_EQ_U64(symcache_text_vmaddr(sc), 0x100000000);

    /* app loaded at 0x104c00000: __text starts at file address 0x100004000 */
    char text[2048];
    snprintf(text, sizeof text,
             "Code Type: ARM-64 (Native)\n"
             "Last Exception Backtrace:\n"
             "(0x104c04014 0x104c04018 0x1a0000010)\n"
             "\n"
             "Thread 0 Crashed:\n"
             "0   FixtureApp  0x104c04010 0x104c00000 + 16400\n"
             "1   FixtureApp  0x2d00000104c04014 0x104c00000 + 16404\n"
             "2   libsystem_kernel.dylib  0x1a0000020 mach_msg + 4\n"
             "3   libsystem_kernel.dylib  0x1a0000030 mach_msg + 20\n"
             "4   FixtureApp  0x104c07ff0 0x104c00000 + 32752\n"
             "5   ???  0x5000 ???\n"
             "\n"
             "Binary Images:\n"
             "0x104c00000 - 0x104c07fff FixtureApp arm64 <%s> /App\n"
             "0x1a0000000 - 0x1a00fffff libsystem_kernel.dylib arm64e "
             "<9e195be11733345ea9bf50d0d7059647> /usr/lib/system/libsystem_kernel.dylib\n"
             "0x1b0000000 - 0x1b00fffff libunused.dylib arm64e "
             "<aaaabbbbccccddddeeeeffff00001111> /usr/lib/libunused.dylib\n",
             ctx.uuid);
    arena *a = arena_new(0);
    crashreport *r = NULL;
    CHECK_EQ_INT(crashreport_parse(&r, text, strlen(text), a, &err), ERR_OK);
    if (r != NULL) {
        CHECK_EQ_INT(symbolicate_report(r, resolve, &ctx, a, &err), ERR_OK);
        CHECK(r->symbolicated);
        const crashreport_frame *f = r->threads[0].frames;
        CHECK_EQ_INT(f[0].sym_status, CRASHREPORT_SYM_OK);
        CHECK_EQ_U64(f[0].lookup_addr, 0x100004010);
        CHECK(f[0].nsymbols >= 1 && f[0].symbols[0].function[0] != '\0');
        /* a caller: (ra & ~3) - 4 after the PAC bits went */
        CHECK_EQ_INT(f[1].sym_status, CRASHREPORT_SYM_OK);
        CHECK_EQ_U64(f[1].lookup_addr, 0x100004010);
        CHECK_EQ_STR(f[1].symbols[f[1].nsymbols - 1].function,
                     f[0].symbols[f[0].nsymbols - 1].function);
        CHECK_EQ_INT(f[2].sym_status, CRASHREPORT_SYM_MISSING);
        CHECK_EQ_STR(f[2].symbol, "mach_msg"); /* the report's symbol stays */
        CHECK_EQ_INT(f[3].sym_status, CRASHREPORT_SYM_MISSING);
        CHECK_EQ_INT(f[4].sym_status, CRASHREPORT_SYM_NOT_FOUND); /* past __text */
        CHECK_EQ_INT(f[5].sym_status, CRASHREPORT_SYM_NO_IMAGE);
        /* LEB: frame 0 exact, then callers */
        CHECK_EQ_U64(r->leb[0].lookup_addr, 0x100004014);
        CHECK_EQ_U64(r->leb[1].lookup_addr, 0x100004014);
        CHECK_EQ_INT(r->leb[2].sym_status, CRASHREPORT_SYM_MISSING);
        /* one resolver call per image that frames fell in; the unused image is not asked */
        CHECK_EQ_INT(ctx.calls, 2);
        CHECK_EQ_INT(ctx.calls_for_app, 1);
        CHECK_EQ_INT(r->nmissing_uuids, 1);
        CHECK_EQ_STR(r->missing_uuids[0], "9E195BE1-1733-345E-A9BF-50D0D7059647");
        /* the text keeps its lines and names the functions */
        buf o;
        buf_init(&o);
        crashreport_render_text(&o, r);
        CHECK(strstr((char *)o.data, "2   libsystem_kernel.dylib  0x1a0000020 mach_msg + 4\n"));
        CHECK(strstr((char *)o.data, "Last Exception Backtrace:\n0   FixtureApp"));
        CHECK(strstr((char *)o.data, "(0x104c04014") == NULL);
        char want[512];
        snprintf(want, sizeof want, "0   FixtureApp  0x104c04010 %s",
                 f[0].symbols[0].function);
        CHECK(strstr((char *)o.data, want) != NULL);
        buf_reset(&o);
        buf_init(&o);
        crashreport_render_json(&o, r);
        CHECK(strstr((char *)o.data, "\"missing_uuids\":[\"9E195BE1-1733-345E-A9BF-50D0D7059647\"]"));
        CHECK(strstr((char *)o.data, "\"symbolicated\":\"not_found\""));
        buf_reset(&o);
        /* a second run gives the same answer and asks again */
        CHECK_EQ_INT(symbolicate_report(r, resolve, &ctx, a, &err), ERR_OK);
        CHECK_EQ_INT(r->nmissing_uuids, 1);
        CHECK_EQ_INT(ctx.calls, 4);
    }
    arena_free(a);
    /* budgets that run out during parsing or symbolication: ERR_TOO_LARGE, not a crash */
    int sym_too_large = 0, sym_ok = 0;
    for (size_t budget = 1024; budget < 64 * 1024; budget += 512) {
        a = arena_new(budget);
        err_clear(&err);
        if (crashreport_parse(&r, text, strlen(text), a, &err) == ERR_OK) {
            err_code rc = symbolicate_report(r, resolve, &ctx, a, &err);
            CHECK(rc == ERR_OK || rc == ERR_TOO_LARGE);
            sym_too_large += rc == ERR_TOO_LARGE;
            sym_ok += rc == ERR_OK;
        }
        arena_free(a);
    }
    CHECK(sym_too_large > 0 && sym_ok > 0);
    sentry_events(&ctx);
    symcache_close(sc);
    unlink(built_path);
    rmdir(tmp);
}

int main(void)
{
    RUN(caller_rules);
    RUN(report_against_fixture);
    return harness_done();
}
