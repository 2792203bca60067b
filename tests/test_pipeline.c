/*
 * test_pipeline - grouping end to end: the real `stacksift serve` (workers on), real Postgres
 * (STACKSIFT_TEST_DATABASE_URL, a database of its own), the real fixtures over HTTP.
 *
 * Crash sites are functions picked from the fixture app's own symbol tables: for the -O0 and
 * the -O2 build, `stacksift lookup --json` maps every 4th address of __TEXT; a site is a
 * function that owns whole (not inlined) addresses in both builds. Reports are generated in
 * both formats (Apple text, .ips) with random ASLR slides, system-frame noise, a random
 * crashed thread, versions and devices, posted from several threads at once:
 *   1. -O2 dSYMs are uploaded first; -O0 reports wait as pending_dsym (provisional issues);
 *   2. the -O0 dSYM is uploaded: they regroup by themselves;
 *   3. every site is exactly one issue across both builds, no two sites share one, and
 *      every count (issue, per-day, API) is exact;
 * then the query API, status changes and regressions, synchronous symbolication, and every
 * real corpus report (processed, pending or cleanly failed, never stuck).
 *
 * Two nodes: two server processes with separate data directories share nothing
 * but the database. dSYMs are uploaded to node A, reports posted to node B (which has never
 * seen a dSYM file: it fetches symcaches from Postgres), and POST /api/v1/symbolicate on node
 * B answers every frame; a third, empty node serves at once, throws away a half-written
 * download and a corrupt cache file, and retention drops old partitions while keeping the
 * aggregates.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "server_harness.h"
#include "signature/signature.h"

#define MAX_SITES 12
#define REPORTS_PER_SITE 20      /* 12 sites x 20 = 240 generated reports */
#define POST_THREADS 4

/* ---- HTTP (the client is in server_harness.h) ---------------------------------------- */

static int port;
static char *token;

/* One request to the server on `on_port` with the test's token and Content-Type `ctype`. */
static http_resp http_at(int on_port, const char *method, const char *path, const char *ctype,
                         const void *body, size_t len)
{
    char *headers = xsprintf("Authorization: Bearer %s\r\n%s%s%s", token ? token : "",
                             ctype ? "Content-Type: " : "", ctype ? ctype : "",
                             ctype ? "\r\n" : "");
    http_resp out = http_req(on_port, method, path, headers, body, len, false);
    free(headers);
    return out;
}

/* The same to node A (`port`). */
static http_resp http(const char *method, const char *path, const char *ctype, const void *body,
                      size_t len)
{
    return http_at(port, method, path, ctype, body, len);
}

static http_resp get(const char *path)
{
    return http("GET", path, NULL, NULL, 0);
}

/* ---- processes and the database -------------------------------------------------------- */

static e2e_env e2e;        /* bin, fixtures, source_dir, base_url */
static char *db_url, *tmp_root;
static PGconn *db;

/* Run argv to completion (at most 120 s): stdin from in_path, stdout to out_path (or dropped). */
static int run_cmd(char *const argv[], const char *in_path, const char *out_path, char **env)
{
    return wait_exit(spawn(argv, env, in_path, out_path ? out_path : "/dev/null", NULL), 120);
}

static char *env_db;

/* The environment of node `node` ('a', 'b', ...: its name and its own data directory),
 * listening on `listen_port` (a static array, rebuilt each call). */
static char **server_env(int listen_port, char node)
{
    static char *env[16];
    static char listen[64], data[4200], name[64];
    size_t n = 0;
    snprintf(listen, sizeof listen, "STACKSIFT_LISTEN=127.0.0.1:%d", listen_port);
    snprintf(data, sizeof data, "STACKSIFT_DATA_DIR=%s/data-%c", tmp_root, node);
    snprintf(name, sizeof name, "STACKSIFT_NODE_NAME=node-%c", node);
    env[n++] = env_db;
    env[n++] = data;
    env[n++] = name;
    env[n++] = listen;
    env[n++] = "STACKSIFT_WORKERS=2";
    env[n++] = "STACKSIFT_WORKER_BATCH=32";
    env[n++] = "STACKSIFT_HTTP_THREADS=4";
    env[n++] = "STACKSIFT_DB_POOL_SIZE=8";
    env[n++] = "STACKSIFT_LOG_LEVEL=warn";
    env[n] = NULL;
    return env;
}

static pid_t server_pid = -1, second_pid = -1;
static int second_port;   /* node B */

/* `stacksift serve` as node `node` on `listen_port` (the same database, its own directory),
 * with `extra` ("K=V" or NULL) added to its environment. */
static pid_t start_server_with(int listen_port, char node, char *extra)
{
    char **base = server_env(listen_port, node);
    char *env[24];
    size_t n = 0;
    while (base[n] && n < 20) {
        env[n] = base[n];
        n++;
    }
    if (extra)
        env[n++] = extra;
    env[n] = NULL;
    char *log = xsprintf("%s/serve-%c.log", tmp_root, node);
    pid_t pid = serve_start(e2e.bin, env, log, listen_port, "/readyz");
    free(log);
    return pid;
}

static pid_t start_server(int listen_port, char node)
{
    return start_server_with(listen_port, node, NULL);
}

static long long sql_int(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    long long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        v = atoll(PQgetvalue(r, 0, 0));
    else
        fprintf(stderr, "sql failed: %s: %s", sql, PQerrorMessage(db));
    PQclear(r);
    return v;
}

/* Wait until no report is 'received' (the workers are done), at most `secs`. */
static bool drain(double secs)
{
    for (double end = now_s() + secs; now_s() < end; sleep_ms(100))
        if (sql_int("SELECT count(*) FROM reports WHERE status = 'received'") == 0)
            return true;
    return false;
}

/* ---- crash sites from the fixtures' symbol tables ------------------------------------- */

typedef struct {
    char uuid[37];
    uint64_t text_vmaddr, text_vmsize;
    char *dwarf;               /* the dSYM's DWARF file */
    /* address -> single function name, for addresses that are not inlined */
    uint64_t *addr;
    char **func;
    char **mangled;            /* its raw linkage name ("mangled" in lookup --json), or NULL */
    size_t n;
} build;

typedef struct {
    char function[256];        /* as the symcache names it */
    char mangled[256];         /* its raw linkage name when that differs, else "" */
    char norm[256];
    uint64_t off[2][8];        /* per build: offsets from __TEXT of whole addresses */
    size_t noff[2];
    int style;                 /* 0 abort (EXC_CRASH/SIGABRT), 1 EXC_BAD_ACCESS, 2 trap */
} site;

static build builds[2];        /* 0 = arm64-O0, 1 = arm64-O2 */
static site sites[MAX_SITES];
static size_t nsites;
static uint64_t main_off[2][4];
static size_t nmain[2];
static char kit_uuid[37];

static bool manifest_slice(const json_t *man, const char *name, build *b)
{
    json_t *fx = json_object_get(man, "fixtures");
    for (size_t i = 0; i < json_array_size(fx); i++) {
        json_t *f = json_array_get(fx, i);
        if (strcmp(json_string_value(json_object_get(f, "name")), name) != 0)
            continue;
        json_t *s = json_array_get(json_object_get(f, "slices"), 0);
        snprintf(b->uuid, sizeof b->uuid, "%s", json_string_value(json_object_get(s, "uuid")));
        b->text_vmaddr = strtoull(json_string_value(json_object_get(s, "text_vmaddr")), NULL, 16);
        b->text_vmsize = strtoull(json_string_value(json_object_get(s, "text_vmsize")), NULL, 16);
        b->dwarf = xsprintf("%s/%s", e2e.fixtures, json_string_value(json_object_get(f, "dwarf")));
        return true;
    }
    return false;
}

/* Every 4th address of __TEXT through `stacksift lookup --json`; keep single-frame ones. */
static bool map_build(build *b, int index)
{
    char *in = xsprintf("%s/addrs-%d.txt", tmp_root, index);
    char *out = xsprintf("%s/lookup-%d.jsonl", tmp_root, index);
    FILE *f = fopen(in, "w");
    for (uint64_t a = b->text_vmaddr; a < b->text_vmaddr + b->text_vmsize; a += 4)
        fprintf(f, "0x%llx\n", (unsigned long long)a);
    fclose(f);
    char *argv[] = {(char *)e2e.bin, "lookup", "--json", "-o", b->dwarf, NULL};
    int st = run_cmd(argv, in, out, NULL);
    size_t len;
    char *text = st == 0 ? read_file(out, &len) : NULL;
    size_t cap = b->text_vmsize / 4 + 1;
    b->addr = calloc(cap, sizeof *b->addr);
    b->func = calloc(cap, sizeof *b->func);
    b->mangled = calloc(cap, sizeof *b->mangled);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        json_t *j = json_loads(line, 0, NULL);
        json_t *frames = json_object_get(j, "frames");
        const char *fn0 = json_string_value(json_object_get(json_array_get(frames, 0), "function"));
        if (json_array_size(frames) == 1 && b->n < cap && fn0 && strncmp(fn0, "_mh_", 4) != 0) {
            b->addr[b->n] = strtoull(json_string_value(json_object_get(j, "address")), NULL, 16);
            b->func[b->n] = strdup(json_string_value(
                json_object_get(json_array_get(frames, 0), "function")));
            const char *raw = json_string_value(json_object_get(json_array_get(frames, 0), "mangled"));
            b->mangled[b->n] = raw ? strdup(raw) : NULL;
            b->n++;
        }
        json_decref(j);
    }
    free(text);
    free(in);
    free(out);
    return st == 0 && b->n > 100;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sites: functions with whole addresses in both builds, distinct once normalized. */
static void pick_sites(void)
{
    char *names[4096];
    size_t nn = 0;
    for (size_t i = 0; i < builds[1].n && nn < 4096; i++)
        names[nn++] = builds[1].func[i];
    qsort(names, nn, sizeof *names, cmp_str);
    char nbuf[SIGNATURE_MAX_NAME];
    for (size_t i = 0; i < nn && nsites < MAX_SITES; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
            continue;
        const char *fn = names[i];
        signature_normalize_symbol(nbuf, sizeof nbuf, fn);
        if (strncmp(fn, "_mh_", 4) == 0 || strcmp(nbuf, "main") == 0 || nbuf[0] == 0 || strlen(nbuf) > 200 ||
            signature_is_skipped(nbuf) || strstr(fn, "block_invoke") || strlen(fn) > 200)
            continue;
        bool dup = false;
        for (size_t k = 0; k < nsites && !dup; k++)
            dup = strcmp(sites[k].norm, nbuf) == 0;
        if (dup)
            continue;
        site *s = &sites[nsites];
        memset(s, 0, sizeof *s);
        for (int b = 0; b < 2; b++)
            for (size_t k = 0; k < builds[b].n && s->noff[b] < 8; k++)
                if (strcmp(builds[b].func[k], fn) == 0)
                    s->off[b][s->noff[b]++] = builds[b].addr[k] - builds[b].text_vmaddr;
        if (s->noff[0] == 0 || s->noff[1] == 0)
            continue;
        snprintf(s->function, sizeof s->function, "%s", fn);
        for (size_t k = 0; k < builds[1].n; k++)
            if (strcmp(builds[1].func[k], fn) == 0 && builds[1].mangled[k] != NULL) {
                snprintf(s->mangled, sizeof s->mangled, "%s", builds[1].mangled[k]);
                break;
            }
        snprintf(s->norm, sizeof s->norm, "%.200s", nbuf);
        s->style = (int)(nsites % 3);
        nsites++;
    }
    for (int b = 0; b < 2; b++)
        for (size_t k = 0; k < builds[b].n && nmain[b] < 4; k++)
            if (strcmp(builds[b].func[k], "main") == 0)
                main_off[b][nmain[b]++] = builds[b].addr[k] - builds[b].text_vmaddr;
}

/* ---- report generation ----------------------------------------------------------------- */

typedef struct {
    const char *name, *path, *uuid;
    uint64_t size;
} sys_image;

static const sys_image SYS[] = {
    {"libsystem_kernel.dylib", "/usr/lib/system/libsystem_kernel.dylib",
     "A1111111-1111-1111-1111-111111111111", 0x40000},
    {"libsystem_pthread.dylib", "/usr/lib/system/libsystem_pthread.dylib",
     "A2222222-2222-2222-2222-222222222222", 0x10000},
    {"libsystem_c.dylib", "/usr/lib/system/libsystem_c.dylib",
     "A3333333-3333-3333-3333-333333333333", 0x80000},
    {"libobjc.A.dylib", "/usr/lib/libobjc.A.dylib", "A4444444-4444-4444-4444-444444444444",
     0x40000},
    {"CoreFoundation", "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation",
     "A5555555-5555-5555-5555-555555555555", 0x400000},
    {"UIKitCore", "/System/Library/PrivateFrameworks/UIKitCore.framework/UIKitCore",
     "A6666666-6666-6666-6666-666666666666", 0x1000000},
};
#define NSYS (sizeof SYS / sizeof SYS[0])

/* A system frame: image index into SYS, symbol as the report gives it. */
typedef struct {
    int sys;            /* -1: the app */
    uint64_t off;       /* from the image's load address */
    const char *symbol; /* system frames: name; app frames: NULL (unsymbolicated) */
    uint64_t sym_off;
} gframe;

static const gframe NOISE[] = {
    {4, 0x1234, "__CFRunLoopDoObservers", 400}, {4, 0x2234, "__CFRunLoopRun", 1200},
    {3, 0x3234, "objc_msgSend", 32},            {5, 0x4234, "-[UIView layoutSubviews]", 88},
    {5, 0x5234, "-[UIApplication sendEvent:]", 240},
};
static const gframe BOTTOM[] = {
    {4, 0x6234, "CFRunLoopRunSpecific", 600}, {5, 0x7234, "UIApplicationMain", 300},
};
static const gframe ABORT[] = {
    {0, 0x1008, "__pthread_kill", 8}, {1, 0x2008, "pthread_kill", 268}, {2, 0x3008, "abort", 180},
};
static const char *const MODELS[] = {"iPhone14,5", "iPhone15,2", "iPad13,1", "iPhone12,1"};
static const char *const OSES[] = {"17.5 (21F79)", "18.1 (22B83)", "16.7 (20H19)"};

static unsigned rng = 12345;
static unsigned rnd(unsigned n)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) % n;
}

typedef struct {
    int site;            /* -1: not generated from a site */
    int b;               /* build */
    bool ips;
    char *body;
    size_t len;
    char id[40];
    int status;          /* HTTP status of the POST */
} gen_report;

typedef struct {
    uint64_t app_load, sys_load[NSYS];
    gframe threads[3][16];
    size_t nframes[3];
    int crashed;
    const char *model, *os, *version;
    int style;
} scene;

static void make_scene(scene *sc, int s, int b)
{
    const site *st = &sites[s];
    memset(sc, 0, sizeof *sc);
    sc->app_load = 0x100000000ull + (uint64_t)rnd(4096) * 0x4000;
    for (size_t i = 0; i < NSYS; i++)
        sc->sys_load[i] = 0x180000000ull + (uint64_t)i * 0x2000000 + (uint64_t)rnd(256) * 0x4000;
    sc->crashed = (int)rnd(3);
    sc->model = MODELS[rnd(4)];
    sc->os = OSES[rnd(3)];
    sc->version = b == 0 ? "1.0" : "2.0";
    sc->style = st->style;
    for (int t = 0; t < 3; t++) {
        gframe *f = sc->threads[t];
        size_t n = 0;
        if (t == sc->crashed) {
            if (st->style == 0)
                for (size_t k = 0; k < 3; k++)
                    f[n++] = ABORT[k];
            f[n++] = (gframe){-1, st->off[b][rnd((unsigned)st->noff[b])], NULL, 0};
            for (unsigned k = rnd(3); k > 0; k--)
                f[n++] = NOISE[rnd(sizeof NOISE / sizeof NOISE[0])];
            f[n++] = (gframe){-1, main_off[b][rnd((unsigned)nmain[b])], NULL, 0};
        } else {
            f[n++] = (gframe){0, 0x1100, "mach_msg2_trap", 8};
            for (unsigned k = rnd(3); k > 0; k--)
                f[n++] = NOISE[rnd(sizeof NOISE / sizeof NOISE[0])];
        }
        for (size_t k = 0; k < 2; k++)
            f[n++] = BOTTOM[k];
        sc->nframes[t] = n;
    }
}

/* The runtime address of frame i of a thread: frame 0 is the PC, the others return
 * addresses, one instruction past the call that the whole address stands for. */
static uint64_t frame_addr(const scene *sc, const gframe *f, size_t i)
{
    uint64_t base = f->sys < 0 ? sc->app_load : sc->sys_load[f->sys];
    return base + f->off + (i > 0 && f->sys < 0 ? 4 : 0);
}

static const char *EXC_TYPE[] = {"EXC_CRASH", "EXC_BAD_ACCESS", "EXC_BREAKPOINT"};
static const char *EXC_SIG[] = {"SIGABRT", "SIGSEGV", "SIGTRAP"};

static void lower_hex32(char out[33], const char *uuid)
{
    size_t n = 0;
    for (const char *p = uuid; *p && n < 32; p++)
        if (*p != '-')
            out[n++] = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    out[n] = '\0';
}

static char *apple_text(const scene *sc, const build *b)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    const char *app_path = "/private/var/containers/Bundle/Application/"
                           "6F1C2B3A-0000-4000-8000-00000000AAAA/FixtureApp.app/FixtureApp";
    fprintf(f, "Incident Identifier: %08X-1111-2222-3333-444455556666\n"
               "Hardware Model:      %s\nProcess:             FixtureApp [4242]\n"
               "Path:                %s\nIdentifier:          com.stacksift.FixtureApp\n"
               "Version:             %s (1)\nCode Type:           ARM-64 (Native)\n"
               "Parent Process:      launchd [1]\n\n"
               "Date/Time:           2026-11-20 10:00:00.000 +0000\n"
               "OS Version:          iPhone OS %s\nReport Version:      104\n\n"
               "Exception Type:  %s (%s)\nException Codes: 0x0000000000000000, 0x0\n"
               "Triggered by Thread:  %d\n\n",
            rnd(1u << 30), sc->model, app_path, sc->version, sc->os, EXC_TYPE[sc->style],
            EXC_SIG[sc->style], sc->crashed);
    for (int t = 0; t < 3; t++) {
        fprintf(f, t == sc->crashed ? "Thread %d Crashed:\n" : "Thread %d:\n", t);
        for (size_t i = 0; i < sc->nframes[t]; i++) {
            const gframe *g = &sc->threads[t][i];
            uint64_t a = frame_addr(sc, g, i);
            if (g->sys < 0)
                fprintf(f, "%-4zu%-30s\t0x%016llx 0x%llx + %llu\n", i, "FixtureApp",
                        (unsigned long long)a, (unsigned long long)sc->app_load,
                        (unsigned long long)(a - sc->app_load));
            else
                fprintf(f, "%-4zu%-30s\t0x%016llx %s + %llu\n", i, SYS[g->sys].name,
                        (unsigned long long)a, g->symbol, (unsigned long long)g->sym_off);
        }
        fprintf(f, "\n");
    }
    char hex[33];
    lower_hex32(hex, b->uuid);
    fprintf(f, "Binary Images:\n0x%llx - 0x%llx FixtureApp arm64  <%s> %s\n",
            (unsigned long long)sc->app_load,
            (unsigned long long)(sc->app_load + b->text_vmsize - 1), hex, app_path);
    lower_hex32(hex, kit_uuid);
    fprintf(f, "0x%llx - 0x%llx FixtureKit arm64  <%s> /private/var/containers/Bundle/"
               "Application/6F1C2B3A-0000-4000-8000-00000000AAAA/FixtureApp.app/Frameworks/"
               "FixtureKit.framework/FixtureKit\n",
            (unsigned long long)(sc->app_load + 0x1000000),
            (unsigned long long)(sc->app_load + 0x1000000 + 0x7fff), hex);
    for (size_t i = 0; i < NSYS; i++) {
        lower_hex32(hex, SYS[i].uuid);
        fprintf(f, "0x%llx - 0x%llx %s arm64e  <%s> %s\n", (unsigned long long)sc->sys_load[i],
                (unsigned long long)(sc->sys_load[i] + SYS[i].size - 1), SYS[i].name, hex,
                SYS[i].path);
    }
    fclose(f);
    return s;
}

static char *ips(const scene *sc, const build *b)
{
    json_t *head = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "app_name", "FixtureApp",
                             "app_version", sc->version, "build_version", "1", "bug_type",
                             "309", "os_version", "iPhone OS 17.5", "bundleID",
                             "com.stacksift.FixtureApp", "name", "FixtureApp");
    json_t *images = json_array();
    char lower[37];
    snprintf(lower, sizeof lower, "%s", b->uuid);
    for (char *p = lower; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    json_array_append_new(images, json_pack(
        "{s:s,s:I,s:I,s:s,s:s,s:s,s:s}", "source", "P", "base", (json_int_t)sc->app_load,
        "size", (json_int_t)b->text_vmsize, "uuid", lower, "name", "FixtureApp", "arch", "arm64",
        "path", "/private/var/containers/Bundle/Application/6F1C2B3A-0000-4000-8000-"
                "00000000AAAA/FixtureApp.app/FixtureApp"));
    for (size_t i = 0; i < NSYS; i++)
        json_array_append_new(images, json_pack("{s:s,s:I,s:I,s:s,s:s,s:s,s:s}", "source", "S",
                                                "base", (json_int_t)sc->sys_load[i], "size",
                                                (json_int_t)SYS[i].size, "uuid", SYS[i].uuid,
                                                "name", SYS[i].name, "arch", "arm64e", "path",
                                                SYS[i].path));
    json_t *threads = json_array();
    for (int t = 0; t < 3; t++) {
        json_t *frames = json_array();
        for (size_t i = 0; i < sc->nframes[t]; i++) {
            const gframe *g = &sc->threads[t][i];
            uint64_t a = frame_addr(sc, g, i);
            json_t *fr;
            if (g->sys < 0)
                fr = json_pack("{s:i,s:I}", "imageIndex", 0, "imageOffset",
                               (json_int_t)(a - sc->app_load));
            else
                fr = json_pack("{s:i,s:I,s:s,s:I}", "imageIndex", g->sys + 1, "imageOffset",
                               (json_int_t)(a - sc->sys_load[g->sys]), "symbol", g->symbol,
                               "symbolLocation", (json_int_t)g->sym_off);
            json_array_append_new(frames, fr);
        }
        json_t *th = json_pack("{s:i,s:o}", "id", 1000 + t, "frames", frames);
        if (t == sc->crashed)
            json_object_set_new(th, "triggered", json_true());
        json_array_append_new(threads, th);
    }
    json_t *body = json_pack(
        "{s:s,s:s,s:s,s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s,s:s},s:i,s:o,s:o,s:s}",
        "procName", "FixtureApp", "procPath",
        "/private/var/containers/Bundle/Application/6F1C2B3A-0000-4000-8000-00000000AAAA/"
        "FixtureApp.app/FixtureApp",
        "cpuType", "ARM-64", "bundleInfo", "CFBundleShortVersionString", sc->version,
        "CFBundleIdentifier", "com.stacksift.FixtureApp", "osVersion", "train",
        sc->os[0] == '1' && sc->os[1] == '8' ? "iPhone OS 18.1" : "iPhone OS 17.5", "build",
        "21F79", "exception", "type", EXC_TYPE[sc->style], "signal", EXC_SIG[sc->style], "codes",
        "0x0000000000000000, 0x0000000000000000", "faultingThread", sc->crashed, "threads",
        threads, "usedImages", images, "modelCode", sc->model);
    char *h = json_dumps(head, JSON_COMPACT), *bd = json_dumps(body, JSON_INDENT(1));
    char *out = xsprintf("%s\n%s\n", h, bd);
    free(h);
    free(bd);
    json_decref(head);
    json_decref(body);
    return out;
}

static gen_report *reports;
static size_t nreports;

static void generate(void)
{
    reports = calloc(nsites * REPORTS_PER_SITE, sizeof *reports);
    for (size_t s = 0; s < nsites; s++)
        for (int k = 0; k < REPORTS_PER_SITE; k++) {
            gen_report *g = &reports[nreports++];
            g->site = (int)s;
            g->b = k % 2;
            g->ips = (k / 2) % 2 == 1;
            scene sc;
            make_scene(&sc, (int)s, g->b);
            g->body = g->ips ? ips(&sc, &builds[g->b]) : apple_text(&sc, &builds[g->b]);
            g->len = strlen(g->body);
        }
}

typedef struct {
    size_t from, step;
    int build;   /* post only reports of this build */
} post_job;

static void *post_worker(void *arg)
{
    post_job *j = arg;
    for (size_t i = j->from; i < nreports; i += j->step) {
        gen_report *g = &reports[i];
        if (g->b != j->build)
            continue;
        /* to node B: the dSYMs went to node A */
        http_resp r = http_at(second_port, "POST", "/api/v1/reports",
                              g->ips ? "application/json" : "text/plain", g->body, g->len);
        g->status = r.status;
        const char *id = r.json ? json_string_value(json_object_get(r.json, "id")) : NULL;
        if (id)
            snprintf(g->id, sizeof g->id, "%s", id);
        else
            fprintf(stderr, "post failed (%d): %s\n", r.status, r.body ? r.body : "");
        resp_free(&r);
    }
    return NULL;
}

/* Post every report of `build` from POST_THREADS threads at once. */
static void post_parallel(int b)
{
    pthread_t th[POST_THREADS];
    post_job jobs[POST_THREADS];
    for (size_t t = 0; t < POST_THREADS; t++) {
        jobs[t] = (post_job){t, POST_THREADS, b};
        pthread_create(&th[t], NULL, post_worker, &jobs[t]);
    }
    for (size_t t = 0; t < POST_THREADS; t++)
        pthread_join(th[t], NULL);
}

static http_resp upload(const char *path, const char *name)
{
    size_t len;
    char *data = read_file(path, &len);
    char *url = xsprintf("/api/v1/dsyms%s%s", name ? "?name=" : "", name ? name : "");
    http_resp r = http("POST", url, "application/octet-stream", data ? data : "", data ? len : 0);
    free(url);
    free(data);
    return r;
}

/* report id -> issue id, status (from the database) */
static long long report_issue(const char *id, char *status_out)
{
    const char *v[1] = {id};
    PGresult *r = PQexecParams(db, "SELECT coalesce(issue_id, 0), status FROM reports WHERE id = $1",
                               1, NULL, v, NULL, NULL, 0);
    long long issue = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        issue = atoll(PQgetvalue(r, 0, 0));
        if (status_out)
            snprintf(status_out, 16, "%s", PQgetvalue(r, 0, 1));
    }
    PQclear(r);
    return issue;
}

/* ---- the tests ------------------------------------------------------------------------- */

static void sites_come_from_both_builds(void)
{
    CHECK(builds[0].n > 100 && builds[1].n > 100);
    CHECK(nsites >= 10);
    CHECK(nmain[0] > 0 && nmain[1] > 0);
    for (size_t s = 0; s < nsites; s++)
        fprintf(stderr, "site %zu: %s (style %d)\n", s, sites[s].function, sites[s].style);
}

static void generated_reports_parse(void)
{
    /* Every generated report parses and names the right crashed thread (stacksift parse). */
    for (size_t i = 0; i < 4 && i < nreports; i++) {
        char *path = xsprintf("%s/gen-%zu.%s", tmp_root, i, reports[i].ips ? "ips" : "crash");
        char *out = xsprintf("%s/gen-%zu.json", tmp_root, i);
        FILE *f = fopen(path, "w");
        fwrite(reports[i].body, 1, reports[i].len, f);
        fclose(f);
        char *argv[] = {(char *)e2e.bin, "parse", "--json", path, NULL};
        CHECK_EQ_INT(run_cmd(argv, NULL, out, NULL), 0);
        free(path);
        free(out);
    }
}

static size_t count_build(int b)
{
    size_t n = 0;
    for (size_t i = 0; i < nreports; i++)
        n += reports[i].b == b;
    return n;
}

static void reports_wait_for_their_dsym(void)
{
    /* -O2 build and the framework (the Xcode archive zip); -O0 not yet. */
    char *zip = xsprintf("%s/FixtureApp-dSYMs.zip", e2e.fixtures);
    http_resp r = upload(zip, NULL);
    CHECK(r.status == 201 || r.status == 200);
    resp_free(&r);
    free(zip);
    post_parallel(1);
    post_parallel(0);
    for (size_t i = 0; i < nreports; i++)
        CHECK_EQ_INT(reports[i].status, 202);
    CHECK(drain(60));
    size_t pending = 0, o2_done = 0;
    for (size_t i = 0; i < nreports; i++) {
        char st[16] = "";
        long long issue = report_issue(reports[i].id, st);
        if (reports[i].b == 0) {
            pending += strcmp(st, "pending_dsym") == 0 && issue > 0;
        } else {
            o2_done += strcmp(st, "processed") == 0 && issue > 0;
        }
    }
    CHECK_EQ_INT(pending, count_build(0));
    CHECK_EQ_INT(o2_done, count_build(1));

    /* The API lists the UUID they wait for, with the count. */
    r = get("/api/v1/dsyms/missing");
    CHECK_EQ_INT(r.status, 200);
    json_t *m = r.json ? json_object_get(r.json, "missing") : NULL;
    bool found = false;
    for (size_t i = 0; i < json_array_size(m); i++) {
        json_t *e = json_array_get(m, i);
        if (strcmp(json_string_value(json_object_get(e, "uuid")), builds[0].uuid) == 0) {
            found = true;
            CHECK_EQ_INT(json_integer_value(json_object_get(e, "reports")), count_build(0));
            CHECK_EQ_STR(json_string_value(json_object_get(e, "name")), "FixtureApp");
        }
    }
    CHECK(found);
    resp_free(&r);
    /* Provisional issues are marked as such. */
    CHECK(sql_int("SELECT count(*) FROM issues WHERE provisional") > 0);
}

static void dsym_upload_regroups_waiting_reports(void)
{
    char *dwarf = builds[0].dwarf;
    http_resp r = upload(dwarf, "FixtureApp");
    CHECK_EQ_INT(r.status, 201);
    resp_free(&r);
    CHECK(drain(60));
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM reports WHERE status = 'pending_dsym'"), 0);
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM issues WHERE provisional"), 0);
    r = get("/api/v1/dsyms/missing");
    CHECK(r.json && json_array_size(json_object_get(r.json, "missing")) == 0);
    resp_free(&r);
}

static long long site_issue[MAX_SITES];

static void every_site_is_one_issue(void)
{
    size_t per_site[MAX_SITES] = {0};
    for (size_t s = 0; s < nsites; s++)
        site_issue[s] = 0;
    for (size_t i = 0; i < nreports; i++) {
        char st[16] = "";
        long long issue = report_issue(reports[i].id, st);
        CHECK_EQ_STR(st, "processed");
        int s = reports[i].site;
        if (site_issue[s] == 0)
            site_issue[s] = issue;
        if (issue != site_issue[s])
            fprintf(stderr, "site %d (%s): report %s in issue %lld, others in %lld\n", s,
                    sites[s].function, reports[i].id, issue, site_issue[s]);
        CHECK_EQ_INT(issue, site_issue[s]);
        per_site[s]++;
    }
    for (size_t a = 0; a < nsites; a++) {
        CHECK(site_issue[a] > 0);
        for (size_t b = a + 1; b < nsites; b++)
            CHECK(site_issue[a] != site_issue[b]);
        char *sql = xsprintf("SELECT count FROM issues WHERE id = %lld", site_issue[a]);
        CHECK_EQ_INT(sql_int(sql), per_site[a]);   /* exact under parallel posting */
        free(sql);
        sql = xsprintf("SELECT sum(count) FROM issue_days WHERE issue_id = %lld", site_issue[a]);
        CHECK_EQ_INT(sql_int(sql), per_site[a]);
        free(sql);
        /* the signature's top frame is the site's function */
        sql = xsprintf("/api/v1/issues/%lld", site_issue[a]);
        http_resp r = get(sql);
        free(sql);
        CHECK_EQ_INT(r.status, 200);
        json_t *frames = r.json ? json_object_get(r.json, "frames") : NULL;
        const char *top = json_string_value(json_object_get(json_array_get(frames, 0), "function"));
        CHECK_EQ_STR(top, sites[a].norm);
        const char *title = json_string_value(json_object_get(r.json, "title"));
        CHECK(title && strstr(title, EXC_TYPE[sites[a].style]) == title);
        /* both builds' versions were seen */
        json_t *versions = json_object_get(r.json, "versions");
        CHECK_EQ_INT(json_array_size(versions), 2);
        resp_free(&r);
    }
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM issues"), nsites);
    CHECK_EQ_INT(sql_int("SELECT sum(count) FROM issues"), nreports);
}

static void issue_list_pages_through_everything(void)
{
    const char *sorts[] = {"last_seen", "first_seen", "count"};
    for (size_t so = 0; so < 3; so++) {
        long long seen[64];
        size_t nseen = 0;
        char *cursor = NULL;
        long long prev_count = -1;
        for (int page = 0; page < 20; page++) {
            char *url = xsprintf("/api/v1/issues?limit=5&sort=%s%s%s", sorts[so],
                                 cursor ? "&cursor=" : "", cursor ? cursor : "");
            http_resp r = get(url);
            free(url);
            CHECK_EQ_INT(r.status, 200);
            json_t *list = r.json ? json_object_get(r.json, "issues") : NULL;
            CHECK(json_array_size(list) <= 5);
            for (size_t i = 0; i < json_array_size(list); i++) {
                json_t *it = json_array_get(list, i);
                long long id = json_integer_value(json_object_get(it, "id"));
                for (size_t k = 0; k < nseen; k++)
                    CHECK(seen[k] != id);
                if (nseen < 64)
                    seen[nseen++] = id;
                long long c = json_integer_value(json_object_get(it, "count"));
                if (so == 2 && prev_count >= 0)
                    CHECK(c <= prev_count);
                prev_count = c;
                CHECK(json_string_value(json_object_get(it, "culprit")) != NULL);
                CHECK(json_is_array(json_object_get(it, "versions")));
            }
            free(cursor);
            json_t *nc = r.json ? json_object_get(r.json, "next_cursor") : NULL;
            cursor = json_is_string(nc) ? strdup(json_string_value(nc)) : NULL;
            resp_free(&r);
            if (!cursor)
                break;
        }
        CHECK_EQ_INT(nseen, nsites);
        free(cursor);
    }
    /* filters */
    http_resp r = get("/api/v1/issues?version=1.0&kind=crash&status=open&app=FixtureApp");
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_INT(r.json ? json_array_size(json_object_get(r.json, "issues")) : 0, nsites);
    resp_free(&r);
    r = get("/api/v1/issues?version=9.9");
    CHECK_EQ_INT(r.json ? json_array_size(json_object_get(r.json, "issues")) : 99, 0);
    resp_free(&r);
    char *q = xsprintf("/api/v1/issues?q=%s", sites[1].norm);
    for (char *p = q; *p; p++)
        if (*p == ' ' || *p == '[' || *p == ']' || *p == ':' || *p == '<' || *p == '>' ||
            *p == '(' || *p == ')' || *p == '*' || *p == ',' || *p == '&')
            *p = '_';   /* keep the query simple: cut at the first odd character */
    char *cut = strchr(q + strlen("/api/v1/issues?q="), '_');
    if (cut)
        *cut = '\0';
    r = get(q);
    CHECK_EQ_INT(r.status, 200);
    CHECK(r.json && json_array_size(json_object_get(r.json, "issues")) >= 1);
    resp_free(&r);
    /* search ignores case, and the text's own '%' and '_' are not wildcards */
    for (char *p = q + strlen("/api/v1/issues?q="); *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    r = get(q);
    CHECK(r.json && json_array_size(json_object_get(r.json, "issues")) >= 1);
    resp_free(&r);
    free(q);
    r = get("/api/v1/issues?q=%25%25%25");
    CHECK_EQ_INT(r.json ? json_array_size(json_object_get(r.json, "issues")) : 99, 0);
    resp_free(&r);
    r = get("/api/v1/issues?q=_%25_");
    CHECK_EQ_INT(r.json ? json_array_size(json_object_get(r.json, "issues")) : 99, 0);
    resp_free(&r);
    CHECK_STATUS(get("/api/v1/issues?sort=bogus"), 400);
    CHECK_STATUS(get("/api/v1/issues?cursor=nonsense"), 400);
    CHECK_STATUS(get("/api/v1/issues?since=yesterday-ish"), 400);
}

static void issue_detail_has_breakdowns_daily_and_sample(void)
{
    char *url = xsprintf("/api/v1/issues/%lld", site_issue[0]);
    http_resp r = get(url);
    free(url);
    CHECK_EQ_INT(r.status, 200);
    json_t *j = r.json;
    long long count = json_integer_value(json_object_get(j, "count"));
    json_t *daily = json_object_get(j, "daily");
    CHECK_EQ_INT(json_array_size(daily), 30);
    long long sum = 0;
    for (size_t i = 0; i < json_array_size(daily); i++)
        sum += json_integer_value(json_object_get(json_array_get(daily, i), "count"));
    CHECK_EQ_INT(sum, count);
    json_t *bd = json_object_get(j, "breakdowns");
    const char *keys[] = {"app_version", "os_version", "hardware_model"};
    for (size_t k = 0; k < 3; k++) {
        json_t *list = json_object_get(bd, keys[k]);
        long long total = 0;
        for (size_t i = 0; i < json_array_size(list); i++)
            total += json_integer_value(json_object_get(json_array_get(list, i), "count"));
        CHECK_EQ_INT(total, count);
    }
    json_t *sample = json_object_get(j, "latest_sample");
    CHECK(json_is_object(sample));
    CHECK(json_is_object(json_object_get(sample, "report")));
    resp_free(&r);

    CHECK_STATUS(get("/api/v1/issues/999999999"), 404);
    CHECK_STATUS(get("/api/v1/issues/abc"), 404);
}

static void issue_reports_page_newest_first(void)
{
    size_t total = 0;
    char *cursor = NULL;
    for (int page = 0; page < 50; page++) {
        char *url = xsprintf("/api/v1/issues/%lld/reports?limit=7%s%s", site_issue[2],
                             cursor ? "&cursor=" : "", cursor ? cursor : "");
        http_resp r = get(url);
        free(url);
        CHECK_EQ_INT(r.status, 200);
        total += r.json ? json_array_size(json_object_get(r.json, "reports")) : 0;
        free(cursor);
        json_t *nc = r.json ? json_object_get(r.json, "next_cursor") : NULL;
        cursor = json_is_string(nc) ? strdup(json_string_value(nc)) : NULL;
        resp_free(&r);
        if (!cursor)
            break;
    }
    CHECK_EQ_INT(total, REPORTS_PER_SITE);
}

static void report_has_symbolicated_model_and_text(void)
{
    const gen_report *g = &reports[0];
    char *url = xsprintf("/api/v1/reports/%s", g->id);
    http_resp r = get(url);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_INT(json_integer_value(json_object_get(r.json, "issue_id")), site_issue[g->site]);
    json_t *sym = json_object_get(r.json, "symbolicated");
    CHECK(json_is_object(sym));
    CHECK(r.body && strstr(r.body, "\"symbolicated\":\"ok\"") != NULL);
    resp_free(&r);
    char *turl = xsprintf("%s?format=text", url);
    r = get(turl);
    CHECK_EQ_INT(r.status, 200);
    /* symbolicatecrash-style: the site's function replaced the bare offset */
    char fn[64];
    snprintf(fn, sizeof fn, "%.40s", sites[g->site].function);
    CHECK(r.body && strstr(r.body, fn) != NULL);
    resp_free(&r);
    free(turl);
    turl = xsprintf("%s?format=pdf", url);
    CHECK_STATUS(get(turl), 400);
    free(turl);
    free(url);
}

/* A stack served from the stack cache gives the same symbols as when it was first symbolicated,
 * linkage names ("mangled") included: the cache keeps its own copy of every string of a symbol
 * (the report's arena that held the original is gone by the next hit). A report with a C++
 * frame is posted again four times, each processed alone (with the original, five over two
 * nodes' workers: some node symbolicates that stack a third time). Under ASan a dangling
 * name is a use-after-free. */
static void cached_stacks_keep_linkage_names(void)
{
    /* a report with a C++ frame: its symbol has a linkage name */
    const gen_report *g = NULL;
    for (size_t i = 0; i < nreports && !g; i++) {
        char *sql = xsprintf("SELECT count(*) FROM reports WHERE id = '%s' AND "
                             "symbolicated ~ '\"mangled\":\"_Z'", reports[i].id);
        if (reports[i].status == 202 && sql_int(sql) == 1)
            g = &reports[i];
        free(sql);
    }
    CHECK(g != NULL);
    if (!g)
        return;
    char ids[4][40];
    for (int i = 0; i < 4; i++) {
        http_resp r = http_at(port, "POST", "/api/v1/reports",
                              g->ips ? "application/json" : "text/plain", g->body, g->len);
        CHECK_EQ_INT(r.status, 202);
        const char *id = r.json ? json_string_value(json_object_get(r.json, "id")) : NULL;
        snprintf(ids[i], sizeof ids[i], "%s", id ? id : "00000000-0000-0000-0000-000000000000");
        resp_free(&r);
        CHECK(drain(60));   /* one batch each: a hit's source arena is freed by then */
    }
    for (int i = 0; i < 4; i++) {
        char *sql = xsprintf(
            "SELECT count(*) FROM reports a, reports b WHERE a.id = '%s' AND b.id = '%s' AND "
            "jsonb_path_query_array(a.symbolicated::jsonb, '$.threads[*].frames[*].symbols') = "
            "jsonb_path_query_array(b.symbolicated::jsonb, '$.threads[*].frames[*].symbols')",
            g->id, ids[i]);
        CHECK_EQ_INT(sql_int(sql), 1);
        free(sql);
    }
}

/* Migration 0007: a processed report's symbolicated model is stored lz4-compressed (it was
 * three quarters of a report's WAL uncompressed, and every durable intake commit waits for
 * the WAL before it to reach the disk), and a day's partition made from now on keeps lz4 for
 * the model and the raw bytes. Read back as JSON and as text above all the same. */
static void stored_models_are_lz4_compressed(void)
{
    const gen_report *g = &reports[0];
    char *sql = xsprintf("SELECT count(*) FROM reports WHERE id = '%s' AND status = 'processed' "
                         "AND pg_column_compression(symbolicated) = 'lz4'", g->id);
    CHECK_EQ_INT(sql_int(sql), 1);
    free(sql);
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM reports WHERE symbolicated IS NOT NULL AND "
                         "pg_column_compression(symbolicated) IS DISTINCT FROM 'lz4'"), 0);
    CHECK_EQ_INT(sql_int("SELECT stacksift_reports_partition_create('2999-01-01')::int"), 1);
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM pg_attribute WHERE attrelid = "
                         "'reports_p29990101'::regclass AND attname IN ('raw', 'symbolicated') "
                         "AND attcompression = 'l' AND attstorage = 'x'"), 2);
    PQclear(PQexec(db, "DROP TABLE reports_p29990101"));
}

/* The report workers run STACKSIFT_WORKER_NICE (default 10) below the HTTP threads, so a busy
 * CPU serves the requests first (/proc/PID/task/TID: comm and field 19 of stat, the nice).
 * Relative to the server's own nice (the tests may run under `nice`): HTTP threads keep it,
 * workers add 10, capped at 19 as setpriority caps it. */
static void workers_yield_the_cpu_to_requests(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)server_pid);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    int workers = 0, workers_nice10 = 0, http = 0, http_nice0 = 0;
    errno = 0;
    int base = getpriority(PRIO_PROCESS, 0); /* the server inherits this test's nice */
    CHECK(errno == 0);
    int worker_nice = base + 10 > 19 ? 19 : base + 10;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[384], comm[32] = "", stat[1024] = "";
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = '\0';
            fclose(f);
        }
        comm[strcspn(comm, "\n")] = '\0';
        snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
        f = fopen(path, "r");
        if (f) {
            if (!fgets(stat, sizeof stat, f))
                stat[0] = '\0';
            fclose(f);
        }
        const char *p = strrchr(stat, ')');   /* the fields after "(comm)" start at 3 */
        int nice = -100;
        if (p) {
            p += 2;
            for (int field = 3; field < 19 && p; field++) {
                p = strchr(p, ' ');
                if (p)
                    p++;
            }
            if (p)
                nice = atoi(p);
        }
        if (strcmp(comm, "report-worker") == 0) {
            workers++;
            workers_nice10 += nice == worker_nice;
        } else if (strcmp(comm, "MHD-worker") == 0) {
            http++;
            http_nice0 += nice == base;
        }
    }
    closedir(d);
    CHECK_EQ_INT(workers, 2);           /* STACKSIFT_WORKERS=2 */
    CHECK_EQ_INT(workers_nice10, 2);
    CHECK(http >= 4);                   /* STACKSIFT_HTTP_THREADS=4 */
    CHECK_EQ_INT(http_nice0, http);
}

/* A report id as its 32 hex digits (no dashes, upper case) names the same report as the
 * dashed form everywhere: the JSON with its issue and symbolicated model, ?format=text and
 * /raw. */
static void report_by_32_hex_digit_id(void)
{
    const gen_report *g = &reports[1];
    char hex[33];
    lower_hex32(hex, g->id);
    for (char *p = hex; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    CHECK_EQ_INT((int)strlen(hex), 32);
    char *url = xsprintf("/api/v1/reports/%s", hex);
    http_resp r = get(url);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_STR(json_string_value(json_object_get(r.json, "id")), g->id);
    CHECK_EQ_INT(json_integer_value(json_object_get(r.json, "issue_id")), site_issue[g->site]);
    CHECK(json_is_object(json_object_get(r.json, "symbolicated")));
    CHECK(json_is_string(json_object_get(r.json, "fingerprint")));
    CHECK(json_is_string(json_object_get(r.json, "processed_at")));
    resp_free(&r);
    char *turl = xsprintf("%s?format=text", url);
    r = get(turl);
    CHECK_EQ_INT(r.status, 200);
    char fn[64];
    snprintf(fn, sizeof fn, "%.40s", sites[g->site].function);
    CHECK(r.body && strstr(r.body, fn) != NULL);
    resp_free(&r);
    free(turl);
    char *rurl = xsprintf("%s/raw", url);
    r = get(rurl);
    CHECK_EQ_INT(r.status, 200);
    CHECK(r.body && r.body_len == g->len && memcmp(r.body, g->body, g->len) == 0);
    resp_free(&r);
    free(rurl);
    free(url);
    /* 31 or 33 digits, or a stray character, name no report */
    CHECK_STATUS(get("/api/v1/reports/0123456789abcdef0123456789abcde"), 404);
    CHECK_STATUS(get("/api/v1/reports/0123456789abcdef0123456789abcdef0"), 404);
    CHECK_STATUS(get("/api/v1/reports/0123456789abcdef0123456789abcdeg"), 404);
}

static void resolved_issue_regresses_in_newer_version(void)
{
    char *url = xsprintf("/api/v1/issues/%lld", site_issue[3]);
    http_resp r = http("PATCH", url, "application/json",
                  "{\"status\":\"resolved\",\"resolved_in\":\"3.0\"}", 41);
    CHECK_EQ_INT(r.status, 200);
    CHECK_EQ_STR(r.json ? json_string_value(json_object_get(r.json, "status")) : NULL,
                 "resolved");
    resp_free(&r);
    CHECK_STATUS(http("PATCH", url, "application/json", "{\"status\":\"closed\"}", 19), 400);

    /* An old version (2.0 < 3.0) does not reopen it; 3.0.1 does, flagged as a regression. */
    const char *versions[2] = {"2.0", "3.0.1"};
    for (int k = 0; k < 2; k++) {
        scene sc;
        make_scene(&sc, 3, 1);
        sc.version = versions[k];
        char *body = apple_text(&sc, &builds[1]);
        http_resp p = http("POST", "/api/v1/reports", "text/plain", body, strlen(body));
        CHECK_EQ_INT(p.status, 202);
        resp_free(&p);
        free(body);
        CHECK(drain(30));
        r = get(url);
        CHECK_EQ_STR(r.json ? json_string_value(json_object_get(r.json, "status")) : NULL,
                     k == 0 ? "resolved" : "open");
        CHECK(r.json && json_is_boolean(json_object_get(r.json, "regressed")) &&
              json_boolean_value(json_object_get(r.json, "regressed")) == (k == 1));
        resp_free(&r);
    }
    /* ignored stays ignored, and counts go on */
    CHECK_STATUS(http("PATCH", url, "application/json", "{\"status\":\"ignored\"}", 20), 200);
    /* a read token cannot change status */
    free(url);
}

static void symbolicate_endpoint_stores_nothing(void)
{
    long long before = sql_int("SELECT count(*) FROM reports");
    const site *s = &sites[0];
    uint64_t load = 0x104000000ull;
    char *body = xsprintf("{\"images\":[{\"uuid\":\"%s\",\"arch\":\"arm64\",\"load_address\":"
                          "\"0x%llx\",\"name\":\"FixtureApp\"}],\"stacks\":[[\"0x%llx\","
                          "\"0x%llx\"],[\"0x1\"]]}",
                          builds[1].uuid, (unsigned long long)load,
                          (unsigned long long)(load + s->off[1][0]),
                          (unsigned long long)(load + main_off[1][0] + 4));
    /* on node B, which never received a dSYM upload */
    http_resp r = http_at(second_port, "POST", "/api/v1/symbolicate", "application/json", body,
                          strlen(body));
    free(body);
    CHECK_EQ_INT(r.status, 200);
    json_t *st = r.json ? json_object_get(r.json, "stacks") : NULL;
    json_t *f0 = json_array_get(json_array_get(st, 0), 0);
    json_t *f1 = json_array_get(json_array_get(st, 0), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(f0, "status")), "ok");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(json_object_get(f0, "symbols"), 0), "function")),
                 s->function);
    CHECK_EQ_STR(json_string_value(json_object_get(f1, "status")), "ok");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(json_object_get(f1, "symbols"), 0), "function")),
                 "main");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(json_array_get(st, 1), 0), "status")),
                 "no_image");
    resp_free(&r);
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM reports"), before);
    CHECK_STATUS(http("POST", "/api/v1/symbolicate", "application/json", "{\"images\":3}", 12), 400);
}

/* The symbol named `function` anywhere in a report model's threads, or NULL. */
static json_t *model_symbol(json_t *model, const char *function)
{
    json_t *threads = json_object_get(model, "threads");
    for (size_t t = 0; t < json_array_size(threads); t++) {
        json_t *frames = json_object_get(json_array_get(threads, t), "frames");
        for (size_t i = 0; i < json_array_size(frames); i++) {
            json_t *syms = json_object_get(json_array_get(frames, i), "symbols");
            for (size_t k = 0; k < json_array_size(syms); k++) {
                const char *fn = json_string_value(json_object_get(json_array_get(syms, k), "function"));
                if (fn != NULL && strcmp(fn, function) == 0)
                    return json_array_get(syms, k);
            }
        }
    }
    return NULL;
}

/* Every JSON frame a server answer gives for a C++ function carries its raw
 * linkage name ("mangled", what `stacksift lookup --json` gives for it): POST
 * /api/v1/symbolicate, the issue's signature frames and the stored model of its sample. */
static void server_json_carries_mangled(void)
{
    size_t s = nsites;
    for (size_t k = 0; k < nsites && s == nsites; k++)
        if (sites[k].mangled[0] != '\0')
            s = k;
    CHECK(s < nsites); /* the fixture has C++ functions */
    if (s == nsites)
        return;
    const site *si = &sites[s];
    CHECK(strncmp(si->mangled, "_Z", 2) == 0 && strcmp(si->mangled, si->function) != 0);
    uint64_t load = 0x104000000ull;
    char *body = xsprintf("{\"images\":[{\"uuid\":\"%s\",\"arch\":\"arm64\",\"load_address\":"
                          "\"0x%llx\",\"name\":\"FixtureApp\"}],\"stacks\":[[\"0x%llx\"]]}",
                          builds[1].uuid, (unsigned long long)load, (unsigned long long)(load + si->off[1][0]));
    http_resp r = http("POST", "/api/v1/symbolicate", "application/json", body, strlen(body));
    free(body);
    CHECK_EQ_INT(r.status, 200);
    json_t *sym0 = json_array_get(json_object_get(json_array_get(json_array_get(
                                      r.json ? json_object_get(r.json, "stacks") : NULL, 0), 0), "symbols"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(sym0, "function")), si->function);
    CHECK_EQ_STR(json_string_value(json_object_get(sym0, "mangled")), si->mangled);
    resp_free(&r);

    char *url = xsprintf("/api/v1/issues/%lld", site_issue[s]);
    r = get(url);
    free(url);
    CHECK_EQ_INT(r.status, 200);
    json_t *top = json_array_get(r.json ? json_object_get(r.json, "frames") : NULL, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(top, "raw")), si->function);
    CHECK_EQ_STR(json_string_value(json_object_get(top, "mangled")), si->mangled);
    /* the sample's model (or the report row holding it as "symbolicated") */
    json_t *report = json_object_get(r.json ? json_object_get(r.json, "latest_sample") : NULL, "report");
    json_t *sym = model_symbol(report, si->function);
    if (sym == NULL)
        sym = model_symbol(json_object_get(report, "symbolicated"), si->function);
    CHECK(sym != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(sym, "mangled")), si->mangled);
    resp_free(&r);
}

/* A counter's value in a /metrics body (0 when absent). */
static long long metric_value(const char *body, const char *key)
{
    const char *at = body ? strstr(body, key) : NULL;
    return at ? atoll(at + strlen(key)) : 0;
}

#define PROCESSED_KEY "stacksift_reports_processed_total{status=\"processed\"} "
#define FRAME_HITS_KEY "stacksift_symbol_cache_frames_total{result=\"hit\"} "

/* /metrics of the server on `on_port` (it must be running). */
static http_resp metrics_of(int on_port)
{
    int saved = port;
    port = on_port;
    http_resp m = get("/metrics");
    port = saved;
    return m;
}

/* POST reports[0..3) to the server on `on_port` and wait until they are processed. */
static void post_three_and_drain(int on_port)
{
    int saved = port;
    port = on_port;
    for (int k = 0; k < 3; k++) {
        http_resp r = http("POST", "/api/v1/reports", reports[k].ips ? "application/json" : "text/plain",
                           reports[k].body, reports[k].len);
        CHECK_EQ_INT(r.status, 202);
        resp_free(&r);
    }
    port = saved;
    CHECK(drain(30));
}

/* Stop node `name` (SIGSTOP) and wait until none of its database sessions is running a
 * statement: a claim it sent just before it stopped has then finished (on an empty queue,
 * locking nothing), and a stopped process sends no new one. Checked twice, 100 ms apart. */
static void pause_node(pid_t pid, const char *name)
{
    kill(pid, SIGSTOP);
    char *sql = xsprintf("SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s' "
                         "AND state = 'active'", name);
    int quiet = 0;
    for (double end = now_s() + 30; quiet < 2 && now_s() < end; sleep_ms(100))
        quiet = sql_int(sql) == 0 ? quiet + 1 : 0;
    CHECK(quiet == 2);
    free(sql);
}

/* Each process of the two on the shared queue works alone in turn: the other one is paused
 * with the queue empty, so it holds no claimed report and only the running one's workers can
 * take what is posted. Each posts the same three reports twice: the second round is served by
 * that process's stack cache. */
static void metrics_show_cache_hit_rate(void)
{
    CHECK(drain(30));
    int ports[2] = {port, second_port};
    pid_t pids[2] = {server_pid, second_pid};
    const char *names[2] = {"node-a", "node-b"};
    for (int k = 0; k < 2; k++) {
        pid_t other = pids[1 - k];
        pause_node(other, names[1 - k]);
        http_resp before = metrics_of(ports[k]);
        post_three_and_drain(ports[k]);
        http_resp middle = metrics_of(ports[k]);
        post_three_and_drain(ports[k]);   /* the same stacks again */
        /* A worker counts a batch just after its COMMIT, which drain() sees: wait for it. */
        http_resp after = {0};
        long long processed = 0;
        for (double end = now_s() + 10; processed < 6 && now_s() < end; sleep_ms(50)) {
            resp_free(&after);
            after = metrics_of(ports[k]);
            processed = metric_value(after.body, PROCESSED_KEY) -
                        metric_value(before.body, PROCESSED_KEY);
        }
        kill(other, SIGCONT);
        CHECK_EQ_INT(after.status, 200);
        long long hits = metric_value(after.body, FRAME_HITS_KEY) -
                         metric_value(middle.body, FRAME_HITS_KEY);
        fprintf(stderr, "server %d alone: processed %lld, frame cache hits in round 2: %lld\n",
                k + 1, processed, hits);
        CHECK(processed >= 6);   /* its own work: the other process was stopped */
        CHECK(hits > 0);
        CHECK(after.body && strstr(after.body, "\nstacksift_symbol_cache_hit_ratio ") != NULL);
        /* every batch committed whole: no fallback to one report at a time was needed */
        CHECK(after.body && strstr(after.body, "\nstacksift_worker_batch_failures_total 0\n") != NULL);
        const char *ratio = after.body ? strstr(after.body, "\nstacksift_symbol_cache_hit_ratio ") : NULL;
        if (ratio)
            fprintf(stderr, "cache: %.50s\n", ratio + 1);
        resp_free(&before);
        resp_free(&middle);
        resp_free(&after);
    }
}


/* ---- processing at intake ------------------------------------------------- */

/* A single SQL text value (malloc'd), NULL for none or SQL NULL. */
static char *sql_str(const char *sql, const char *param)
{
    const char *v[1] = {param};
    PGresult *r = PQexecParams(db, sql, param ? 1 : 0, NULL, param ? v : NULL, NULL, NULL, 0);
    char *out = NULL;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        out = strdup(PQgetvalue(r, 0, 0));
    else if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "sql failed: %s: %s", sql, PQerrorMessage(db));
    PQclear(r);
    return out;
}

/* "SELECT count FROM issues WHERE id = N" in a static buffer. */
static const char *issue_count_sql(long long issue)
{
    static char sql[96];
    snprintf(sql, sizeof sql, "SELECT count FROM issues WHERE id = %lld", issue);
    return sql;
}

/* "libunknown_N.dylib" in a static buffer per call (two at most in one expression). */
static const char *unknown_lib_name(int i)
{
    static char names[2][32];
    static int k;
    k ^= 1;
    snprintf(names[k], sizeof names[k], "libunknown_%d.dylib", i);
    return names[k];
}

/* POST `body` (Apple text) to the node on `on_port`; the new report's id, malloc'd. */
static char *post_text(int on_port, const char *body)
{
    http_resp r = http_at(on_port, "POST", "/api/v1/reports", "text/plain", body, strlen(body));
    CHECK_EQ_INT(r.status, 202);
    /* the answer is the same on both paths: the report is durable and received */
    CHECK_EQ_STR(r.json ? json_string_value(json_object_get(r.json, "status")) : NULL,
                 "received");
    const char *id = r.json ? json_string_value(json_object_get(r.json, "id")) : NULL;
    char *out = strdup(id ? id : "");
    resp_free(&r);
    return out;
}

/* How report `id` was stored: "<status> <issue_id> <attempts> <inline>", inline = whether it
 * was processed in the transaction that received it (processed_at = received_at). */
static char *stored_as(const char *id)
{
    char *v = sql_str("SELECT status || ' ' || coalesce(issue_id, 0) || ' ' || attempts || ' ' || "
                      "coalesce(processed_at = received_at, false) FROM reports WHERE id = $1",
                      id);
    return v ? v : strdup("(none)");
}

static long long metric_of(int on_port, const char *key)
{
    http_resp m = metrics_of(on_port);
    long long v = metric_value(m.body, key);
    resp_free(&m);
    return v;
}

#define INTAKE_PROCESSED_KEY "\nstacksift_intake_processed_total "
#define REGRESSIONS_KEY "\nstacksift_issue_regressions_total "

/* The same report through both paths gives the same row and the same issue counts: posted to
 * node A, whose symcaches for it are open (a GET ?format=text symbolicates it there first),
 * it is stored processed by the commit that answers the POST: its issue is counted before the
 * 202 (no drain); posted to node C, started with STACKSIFT_INTAKE_PROCESSING=0, it is queued
 * and processed by a worker later. Then a regression, reopened on each path. */
static void intake_processing_matches_the_workers(void)
{
    const gen_report *g = &reports[0];
    long long issue = site_issue[g->site];
    int port_c = free_port();
    pid_t pid_c = start_server_with(port_c, 'c', "STACKSIFT_INTAKE_PROCESSING=0");
    CHECK(pid_c > 0);
    if (pid_c <= 0)
        return;
    char *url = xsprintf("/api/v1/reports/%s?format=text", g->id);
    CHECK_STATUS(get(url), 200);   /* node A opens the symcaches of g's images */
    free(url);
    CHECK(drain(30));

    char *isql = xsprintf("SELECT count FROM issues WHERE id = %lld", issue);
    char *dsql = xsprintf("SELECT sum(count) FROM issue_days WHERE issue_id = %lld", issue);
    long long count0 = sql_int(isql), days0 = sql_int(dsql);
    long long at_a0 = metric_of(port, INTAKE_PROCESSED_KEY);

    char *id_a = post_text(port, g->body);
    char *how = stored_as(id_a);
    char *want = xsprintf("processed %lld 1 true", issue);
    CHECK_EQ_STR(how, want);                        /* at once, before any worker */
    CHECK_EQ_INT(sql_int(isql), count0 + 1);
    CHECK_EQ_INT(sql_int(dsql), days0 + 1);
    CHECK_EQ_INT(metric_of(port, INTAKE_PROCESSED_KEY), at_a0 + 1);
    free(how);

    char *id_c = post_text(port_c, g->body);
    CHECK(drain(30));
    how = stored_as(id_c);
    free(want);
    want = xsprintf("processed %lld 1 false", issue);
    CHECK_EQ_STR(how, want);                        /* by a worker, in a later transaction */
    CHECK_EQ_INT(metric_of(port_c, INTAKE_PROCESSED_KEY), 0);
    free(how);
    free(want);

    /* One row shape: the model, signature, summary and missing UUIDs of both equal those of
     * the original report (processed by the workers long ago). */
    char *ids = xsprintf("{%s,%s,%s}", g->id, id_a, id_c);
    char *n3 = sql_str("SELECT count(*)::text FROM reports WHERE id = ANY($1::uuid[])", ids);
    CHECK_EQ_STR(n3, "3");
    free(n3);
    char *distinct = sql_str("SELECT count(DISTINCT (status, issue_id, fingerprint, kind, "
                             "hardware_model, symbolicated, missing_uuids, app, app_version, "
                             "os_version, format, error))::text FROM reports "
                             "WHERE id = ANY($1::uuid[])", ids);
    CHECK_EQ_STR(distinct, "1");
    free(distinct);
    CHECK_EQ_INT(sql_int(isql), count0 + 2);
    CHECK_EQ_INT(sql_int(dsql), days0 + 2);
    /* the issue's newest report and last seen are the last one's */
    char *last = sql_str("SELECT (i.last_report = r.id AND i.last_seen = r.received_at)::text "
                         "FROM issues i JOIN reports r ON r.issue_id = i.id WHERE r.id = $1",
                         id_c);
    CHECK_EQ_STR(last, "true");
    free(last);
    free(ids);

    /* Regressions: resolved in 5.0, seen in 5.0.1 on node A (at intake: reopened before the
     * 202); resolved again in 6.0, seen in 6.0.1 on node C (by a worker). */
    const gen_report *h = NULL;
    for (size_t i = 0; i < nreports && !h; i++)
        if (reports[i].site == 4 && reports[i].b == 1 && !reports[i].ips)
            h = &reports[i];
    CHECK(h != NULL);
    if (h) {
        url = xsprintf("/api/v1/reports/%s?format=text", h->id);
        CHECK_STATUS(get(url), 200);
        free(url);
        long long reissue = site_issue[4];
        char *iurl = xsprintf("/api/v1/issues/%lld", reissue);
        char *state_sql = xsprintf("SELECT status || ' ' || regressed FROM issues WHERE id = %lld",
                                   reissue);
        const char *fixed[2] = {"5.0", "6.0"}, *seen[2] = {"5.0.1", "6.0.1"};
        int ports[2] = {port, port_c};
        for (int k = 0; k < 2; k++) {
            char *patch = xsprintf("{\"status\":\"resolved\",\"resolved_in\":\"%s\"}", fixed[k]);
            CHECK_STATUS(http("PATCH", iurl, "application/json", patch, strlen(patch)), 200);
            free(patch);
            long long reg0 = metric_of(ports[k], REGRESSIONS_KEY);
            scene sc;
            make_scene(&sc, 4, 1);
            sc.version = seen[k];
            char *body = apple_text(&sc, &builds[1]);
            char *id = post_text(ports[k], body);
            free(body);
            if (k == 1)
                CHECK(drain(30));
            how = stored_as(id);
            want = xsprintf("processed %lld 1 %s", reissue, k == 0 ? "true" : "false");
            CHECK_EQ_STR(how, want);
            char *state = sql_str(state_sql, NULL);
            CHECK_EQ_STR(state, "open true");
            if (k == 0)   /* a worker counts its batch just after COMMIT: node C's may lag */
                CHECK_EQ_INT(metric_of(ports[k], REGRESSIONS_KEY), reg0 + 1);
            free(state);
            free(how);
            free(want);
            free(id);
        }
        free(state_sql);
        free(iurl);
    }
    kill(pid_c, SIGTERM);
    CHECK_EQ_INT(wait_exit(pid_c, 30), 0);
    free(isql);
    free(dsql);
    free(id_a);
    free(id_c);
}

/* Report g's text with a fourth thread of `n` frames, each in an image of its own that no node
 * has heard of (random UUIDs), listed among the binary images. malloc'd. */
static char *with_unknown_images(const gen_report *g, int n)
{
    const char *images = strstr(g->body, "Binary Images:\n");
    if (images == NULL)
        return NULL;
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    fwrite(g->body, 1, (size_t)(images - g->body), f);
    fprintf(f, "Thread 3:\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-4d%-30s\t0x%016llx helper_%d + 16\n", i, unknown_lib_name(i),
                0x1c0000000ull + (unsigned long long)i * 0x100000 + 0x1010, i);
    fprintf(f, "\n%s", "Binary Images:\n");
    fputs(images + strlen("Binary Images:\n"), f);
    unsigned salt = (unsigned)getpid() ^ (unsigned)time(NULL);
    for (int i = 0; i < n; i++)
        fprintf(f, "0x%llx - 0x%llx %s arm64e  <%08x%08x%08x%08x> /usr/lib/%s\n",
                0x1c0000000ull + (unsigned long long)i * 0x100000,
                0x1c0000000ull + (unsigned long long)i * 0x100000 + 0xffff,
                unknown_lib_name(i), 0xc0de0000u + (unsigned)i, salt, rnd(1u << 30),
                rnd(1u << 30), unknown_lib_name(i));
    fclose(f);
    return s;
}

/* The intake spends a bounded number of Postgres round trips on symcache rows it does not
 * know recently (INTAKE_ROW_ASKS in pipeline.c): a report whose frames name 40 images no
 * node has seen is stored received, not processed while its client waits, and the workers
 * process it as before. */
static void many_unknown_images_go_to_the_queue(void)
{
    const gen_report *g = &reports[0];
    char *url = xsprintf("/api/v1/reports/%s?format=text", g->id);
    CHECK_STATUS(get(url), 200);   /* node A opens the symcaches of g's images */
    free(url);
    CHECK(drain(30));
    char *body = with_unknown_images(g, 40);
    CHECK(body != NULL);
    if (!body)
        return;
    char *id = post_text(port, body);
    char *how = stored_as(id);
    /* not processed at intake: still received, or already done by a worker */
    CHECK(strcmp(how, "received 0 0 false") == 0 || strncmp(how, "processed ", 10) == 0);
    CHECK(strstr(how, " true") == NULL);
    free(how);
    CHECK(drain(30));
    how = stored_as(id);
    char *want = xsprintf("processed %lld 1 false", site_issue[g->site]);
    CHECK_EQ_STR(how, want);   /* the extra thread does not change its issue */
    free(want);
    free(how);
    free(id);
    free(body);
}

/* When the issue upsert of a commit with reports processed at intake fails, the reports are
 * still stored (as received) before their 202: never lost to their issue. A trigger makes
 * every change of one issue fail; a report of that issue is posted to node A (warm for it),
 * answered 202 all the same, and its row is there; a worker then fails it on the same upsert,
 * with the reason. */
static void failed_issue_upsert_still_stores_the_report(void)
{
    const gen_report *g = NULL;
    for (size_t i = 0; i < nreports && !g; i++)
        if (reports[i].site == 5 && reports[i].b == 1 && !reports[i].ips)
            g = &reports[i];
    CHECK(g != NULL);
    if (!g)
        return;
    long long issue = site_issue[5];
    char *url = xsprintf("/api/v1/reports/%s?format=text", g->id);
    CHECK_STATUS(get(url), 200);   /* node A opens its symcaches */
    free(url);
    CHECK(drain(30));
    char *sql = xsprintf(
        "CREATE FUNCTION test_refuse_issue() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF OLD.id = %lld THEN RAISE EXCEPTION 'issue %lld refused by the test'; END IF; "
        "RETURN NEW; END $$; CREATE TRIGGER test_refuse_issue BEFORE UPDATE ON issues "
        "FOR EACH ROW EXECUTE FUNCTION test_refuse_issue()", issue, issue);
    PGresult *r = PQexec(db, sql);
    CHECK_EQ_INT(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    free(sql);
    long long count0 = sql_int(issue_count_sql(issue));
    long long fallbacks0 = metric_of(port, "\nstacksift_intake_processed_fallbacks_total ");

    char *id = post_text(port, g->body);
    char *how = stored_as(id);
    /* stored as received by the fallback; a worker may already have failed it */
    CHECK(strcmp(how, "received 0 0 false") == 0 || strncmp(how, "failed 0 1", 10) == 0);
    free(how);
    CHECK_EQ_INT(metric_of(port, "\nstacksift_intake_processed_fallbacks_total "), fallbacks0 + 1);
    CHECK(drain(30));
    char *error = sql_str("SELECT status || ': ' || coalesce(error, '') FROM reports WHERE id = $1",
                          id);
    CHECK(error && strncmp(error, "failed: ", 8) == 0 && strstr(error, "refused by the test"));
    free(error);
    CHECK_EQ_INT(sql_int(issue_count_sql(issue)), count0);
    PQclear(PQexec(db, "DROP TRIGGER test_refuse_issue ON issues; DROP FUNCTION test_refuse_issue()"));
    free(id);
}

/* ---- shared-nothing nodes -------------------------------------------------- */

static int has_name(const char *dir, const char *name)
{
    char *path = xsprintf("%s/%s", dir, name);
    struct stat st;
    int ok = stat(path, &st) == 0 && st.st_size > 0;
    free(path);
    return ok;
}

/* SHA-256 (hex) of the symcache Postgres holds for `uuid`, "" if none. Caller frees. */
static char *row_symcache_sha(const char *uuid)
{
    const char *v[1] = {uuid};
    PGresult *r = PQexecParams(db, "SELECT coalesce(symcache_blob, '') FROM dsyms "
                               "WHERE uuid = $1::uuid", 1, NULL, v, NULL, NULL, 0);
    char *out = strdup(PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return out;
}

static void node_b_fetched_symcaches_from_postgres(void)
{
    /* Node B never got an upload: what it used came from Postgres into its own cache,
     * named by content; no <UUID>.symc anywhere. */
    char *dir_b = xsprintf("%s/data-b/symcaches", tmp_root);
    for (int b = 0; b < 2; b++) {
        char *sha = row_symcache_sha(builds[b].uuid);
        char *name = xsprintf("%s.symc", sha);
        CHECK(strlen(sha) == 64);
        CHECK(has_name(dir_b, name));
        free(name);
        free(sha);
        char *legacy = xsprintf("%s.symc", builds[b].uuid);
        CHECK(!has_name(dir_b, legacy));
        free(legacy);
    }
    free(dir_b);
    /* No pending/received ping-pong: a report is processed at most twice (once waiting for
     * its dSYM, once regrouped when it came). */
    long long most = sql_int("SELECT max(attempts) FROM reports");
    CHECK(most <= 2);
    if (most > 2) { /* which one, and how it ended: the server log has its processing */
        char *which = sql_str("SELECT string_agg(id || ' ' || status || ' attempts=' || attempts || "
                              "' content_type=' || coalesce(content_type, '') || ' error=' || coalesce(error, ''), "
                              "'; ') FROM reports WHERE attempts > 2", NULL);
        fprintf(stderr, "test_pipeline: processed more than twice: %s\n", which ? which : "?");
        free(which);
    }
    CHECK(sql_int("SELECT count(*) FROM reports WHERE received_by = 'node-b'") >= (long long)nreports);
    http_resp m = http_at(second_port, "GET", "/metrics", NULL, NULL, 0);
    CHECK_EQ_INT(m.status, 200);
    CHECK(metric_value(m.body, "\nstacksift_symcache_downloads_total ") >= 2);
    CHECK(m.body && strstr(m.body, "\nstacksift_symcache_file_cache_hit_ratio ") != NULL);
    CHECK(metric_value(m.body, "\nstacksift_node_up{node=\"node-a\"} ") == 1);
    CHECK(metric_value(m.body, "\nstacksift_node_up{node=\"node-b\"} ") == 1);
    CHECK(m.body && strstr(m.body, "\nstacksift_node_queue_depth{node=\"node-b\"} ") != NULL);
    CHECK(m.body && strstr(m.body, "\nstacksift_node_symcache_cache_hit_ratio{node=\"node-b\"} "));
    resp_free(&m);
}

/* The symbolicate body of symbolicate_endpoint_stores_nothing for build `b`. */
static char *symbolicate_body(int b)
{
    uint64_t load = 0x104000000ull;
    return xsprintf("{\"images\":[{\"uuid\":\"%s\",\"arch\":\"arm64\",\"load_address\":"
                    "\"0x%llx\",\"name\":\"FixtureApp\"}],\"stacks\":[[\"0x%llx\",\"0x%llx\"]]}",
                    builds[b].uuid, (unsigned long long)load,
                    (unsigned long long)(load + sites[0].off[b][0]),
                    (unsigned long long)(load + main_off[b][0] + 4));
}

/* Both frames of symbolicate_body(b) answered by the node on `on_port`; *ms = how long. */
static bool symbolicates_all(int on_port, int b, double *ms)
{
    char *body = symbolicate_body(b);
    double t0 = now_s();
    http_resp r = http_at(on_port, "POST", "/api/v1/symbolicate", "application/json", body,
                          strlen(body));
    *ms = (now_s() - t0) * 1000;
    json_t *st = r.json ? json_array_get(json_object_get(r.json, "stacks"), 0) : NULL;
    bool ok = r.status == 200 && json_array_size(st) == 2;
    for (size_t i = 0; ok && i < 2; i++)
        ok = strcmp(json_string_value(json_object_get(json_array_get(st, i), "status")) ?: "",
                    "ok") == 0;
    resp_free(&r);
    free(body);
    return ok;
}

static void cold_node_serves_at_once(void)
{
    /* Node C starts with what a kill -9 can leave: a half-written download, and a cache file
     * whose content does not match its name. Neither may ever be used. */
    char *dir = xsprintf("%s/data-c/symcaches", tmp_root);
    char *parent = xsprintf("%s/data-c", tmp_root);
    mkdir(parent, 0700);
    mkdir(dir, 0700);
    char *sha = row_symcache_sha(builds[1].uuid);
    char *part = xsprintf("%s/.part-%s-1-0", dir, sha);
    char *bad = xsprintf("%s/%s.symc", dir, sha);
    FILE *f = fopen(part, "w");
    fputs("half a symcache", f);
    fclose(f);
    f = fopen(bad, "w");
    fputs("not the symcache its name promises", f);
    fclose(f);
    int port_c = free_port();
    double t0 = now_s();
    pid_t pid = start_server(port_c, 'c');
    double start_ms = (now_s() - t0) * 1000;
    CHECK(pid > 0);
    double cold_ms = 0, warm_ms = 0;
    CHECK(symbolicates_all(port_c, 1, &cold_ms));   /* downloads, checks, answers */
    CHECK(symbolicates_all(port_c, 1, &warm_ms));
    fprintf(stderr, "cold node: ready in %.0f ms; first lookup (symcache download) %.1f ms, "
            "next %.1f ms\n", start_ms, cold_ms, warm_ms);
    struct stat st;
    CHECK(stat(part, &st) != 0);                      /* the partial file was deleted */
    char *argv[] = {"/usr/bin/env", "sha256sum", bad, NULL};
    run_result r = run_in(tmp_root, argv, NULL, 30);
    CHECK(r.status == 0 && strncmp(r.out, sha, 64) == 0); /* re-fetched, matches its name */
    run_free(&r);
    if (pid > 0) {
        kill(pid, SIGKILL);   /* no graceful stop needed: it holds nothing but a cache */
        waitpid(pid, NULL, 0);
    }
    free(dir), free(parent), free(sha), free(part), free(bad);
}

/* Point build `b`'s row at a copy of its symcache that says format version 0 (what an older
 * stacksift would have stored); returns that copy's SHA-256 ("" on failure). Caller frees. */
static char *store_outdated_symcache(int b, const char *sha)
{
    char *path = xsprintf("%s/data-a/symcaches/%s.symc", tmp_root, sha);
    size_t len = 0;
    char *data = read_file(path, &len);
    free(path);
    if (!data || len < 16 || len > (1u << 20))
        return strdup("");
    memset(data + 8, 0, 4);   /* the version field (common/symcache/symcache_format.h) */
    const char *v[2] = {data, builds[b].uuid};
    int lengths[2] = {(int)len, 0}, formats[2] = {1, 0};
    PGresult *r = PQexecParams(db,
        "WITH h AS (SELECT encode(sha256($1::bytea), 'hex') AS s, $1::bytea AS d), "
        "b AS (INSERT INTO blobs (sha256, bytes, chunks) SELECT s, length(d), 1 FROM h "
        "ON CONFLICT DO NOTHING), c AS (INSERT INTO blob_chunks (sha256, seq, data) "
        "SELECT s, 0, d FROM h ON CONFLICT DO NOTHING) "
        "UPDATE dsyms SET symcache_blob = h.s, sha256 = h.s FROM h WHERE uuid = $2::uuid "
        "RETURNING h.s", 2, NULL, v, lengths, formats, 0);
    char *out = strdup(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                           ? PQgetvalue(r, 0, 0) : "");
    if (!*out)
        fprintf(stderr, "storing an outdated symcache: %s", PQerrorMessage(db));
    PQclear(r);
    free(data);
    return out;
}

static void outdated_symcache_is_rebuilt(void)
{
    char *sha = row_symcache_sha(builds[1].uuid);
    char *old = store_outdated_symcache(1, sha);
    CHECK(strlen(old) == 64 && strcmp(old, sha) != 0);

    /* `stacksift symcache rebuild`: that row is rebuilt from the stored upload (the same
     * bytes as at upload time), every other one is unchanged. */
    char *argv[] = {(char *)e2e.bin, "symcache", "rebuild", NULL};
    run_result r = run_in(tmp_root, argv, server_env(port, 'a'), 120);
    CHECK_EQ_INT(r.status, 0);
    size_t rebuilt = 0, unchanged = 0, lines = 0;
    for (char *line = r.out, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        json_t *j = json_loads(line, 0, NULL);
        const char *st = json_string_value(json_object_get(j, "status"));
        const char *uuid = json_string_value(json_object_get(j, "uuid"));
        lines++;
        if (st && uuid && strcmp(uuid, builds[1].uuid) == 0) {
            CHECK_EQ_STR(st, "rebuilt");
            CHECK_EQ_STR(json_string_value(json_object_get(j, "sha256")), sha);
            rebuilt++;
        } else {
            unchanged += st && strcmp(st, "unchanged") == 0;
        }
        json_decref(j);
    }
    run_free(&r);
    CHECK_EQ_INT(rebuilt, 1);
    CHECK(lines >= 3);   /* -O0, -O2, the framework */
    CHECK_EQ_INT(unchanged, lines - 1);
    char *now = row_symcache_sha(builds[1].uuid);
    CHECK_EQ_STR(now, sha);
    free(now);

    /* On demand: a node that meets the outdated symcache rebuilds it itself and answers. */
    free(store_outdated_symcache(1, sha));
    int port_d = free_port();
    pid_t pid = start_server(port_d, 'd');
    double ms = 0;
    CHECK(pid > 0);
    CHECK(symbolicates_all(port_d, 1, &ms));
    fprintf(stderr, "outdated symcache rebuilt on demand and used in %.0f ms\n", ms);
    now = row_symcache_sha(builds[1].uuid);
    CHECK_EQ_STR(now, sha);
    free(now);
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    free(sha);
    free(old);
}

static void cache_budget_evicts_least_recently_used(void)
{
    /* A node whose cache may hold only the symcache in use: each build's lookup evicts the
     * other's file, and a lookup of an evicted one fetches it again. */
    int port_e = free_port();
    pid_t pid = start_server_with(port_e, 'e', "STACKSIFT_SYMCACHE_CACHE_MB=0");
    CHECK(pid > 0);
    char *dir = xsprintf("%s/data-e/symcaches", tmp_root);
    char *sha[2] = {row_symcache_sha(builds[0].uuid), row_symcache_sha(builds[1].uuid)};
    char *name[2] = {xsprintf("%s.symc", sha[0]), xsprintf("%s.symc", sha[1])};
    double ms;
    CHECK(symbolicates_all(port_e, 1, &ms));
    CHECK(has_name(dir, name[1]));
    CHECK(symbolicates_all(port_e, 0, &ms));
    CHECK(has_name(dir, name[0]));
    CHECK(!has_name(dir, name[1]));   /* least recently used: gone */
    CHECK(symbolicates_all(port_e, 1, &ms));   /* fetched again */
    CHECK(has_name(dir, name[1]));
    CHECK(!has_name(dir, name[0]));
    http_resp m = http_at(port_e, "GET", "/metrics", NULL, NULL, 0);
    CHECK(metric_value(m.body, "\nstacksift_symcache_evictions_total ") >= 2);
    CHECK(metric_value(m.body, "\nstacksift_symcache_downloads_total ") >= 3);
    resp_free(&m);
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    for (int k = 0; k < 2; k++)
        free(sha[k]), free(name[k]);
    free(dir);
}

static void legacy_symcache_file_is_backfilled(void)
{
    /* A row recorded before symcaches lived in Postgres (symcache_blob NULL) and a node that
     * has its file where it used to be, <UUID>.symc: at start the node stores it and moves
     * it into its cache under its hash. */
    char *sha = row_symcache_sha(builds[0].uuid);
    char *dir = xsprintf("%s/data-f/symcaches", tmp_root);
    char *parent = xsprintf("%s/data-f", tmp_root);
    char *src = xsprintf("%s/data-a/symcaches/%s.symc", tmp_root, sha);
    char *legacy = xsprintf("%s/%s.symc", dir, builds[0].uuid);
    mkdir(parent, 0700);
    mkdir(dir, 0700);
    size_t len = 0;
    char *data = read_file(src, &len);
    CHECK(data != NULL && len > 0);
    FILE *f = fopen(legacy, "wb");
    if (f && data)
        fwrite(data, 1, len, f);
    if (f)
        fclose(f);
    char sql[512];
    snprintf(sql, sizeof sql, "UPDATE dsyms SET symcache_blob = NULL WHERE uuid = '%s' "
             "RETURNING 1", builds[0].uuid);
    CHECK_EQ_INT(sql_int(sql), 1);
    int port_f = free_port();
    pid_t pid = start_server(port_f, 'f');
    CHECK(pid > 0);
    char *now = row_symcache_sha(builds[0].uuid);
    CHECK_EQ_STR(now, sha);   /* attached again, to the same content */
    char *name = xsprintf("%s.symc", sha);
    CHECK(has_name(dir, name));
    struct stat st;
    CHECK(stat(legacy, &st) != 0);
    double ms;
    CHECK(symbolicates_all(port_f, 0, &ms));
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    free(sha), free(dir), free(parent), free(src), free(legacy), free(data), free(now), free(name);
}

/* `stacksift retention run --force` with the given settings; its JSON answer (or NULL). */
static json_t *retention_run(const char *days, const char *aggregate_days, const char *dsym_days)
{
    char **base = server_env(port, 'a');
    char *env[24];
    size_t n = 0;
    while (base[n] && n < 16) {
        env[n] = base[n];
        n++;
    }
    char *e1 = xsprintf("STACKSIFT_RETENTION_DAYS=%s", days);
    char *e2 = xsprintf("STACKSIFT_AGGREGATE_RETENTION_DAYS=%s", aggregate_days);
    char *e3 = xsprintf("STACKSIFT_DSYM_RETENTION_DAYS=%s", dsym_days);
    env[n++] = e1, env[n++] = e2, env[n++] = e3;
    env[n] = NULL;
    char *argv[] = {(char *)e2e.bin, "retention", "run", "--force", NULL};
    run_result r = run_in(tmp_root, argv, env, 60);
    json_t *j = r.status == 0 ? json_loads(r.out, 0, NULL) : NULL;
    if (!j)
        fprintf(stderr, "retention run failed (%d): %s%s\n", r.status, r.out, r.err);
    run_free(&r);
    free(e1), free(e2), free(e3);
    return j;
}

static long long jint(json_t *j, const char *key)
{
    return (long long)json_integer_value(json_object_get(j, key));
}

static void retention_drops_partitions_keeps_aggregates(void)
{
    /* 40 days ago: five more reports of site 0's issue, in that day's own partition, with the
     * issue's counts as the workers would have kept them. 500 days ago: an issue nobody has
     * seen since. The framework's dSYM: unused for 200 days. */
    long long issue = site_issue[0];
    char sql[1024];
    CHECK(issue > 0);
    CHECK(sql_int("SELECT stacksift_reports_partition_create("
                  "(now() AT TIME ZONE 'UTC')::date - 40)::int") == 1);
    snprintf(sql, sizeof sql,
             "WITH i AS (INSERT INTO reports (received_at, status, format, content_type, raw, "
             "raw_bytes, issue_id) SELECT now() - interval '40 days', 'processed', 'json', "
             "'application/json', '\\x00', 1, %lld FROM generate_series(1, 5) RETURNING 1) "
             "SELECT count(*) FROM i", issue);
    CHECK_EQ_INT(sql_int(sql), 5);
    snprintf(sql, sizeof sql, "WITH d AS (INSERT INTO issue_days (issue_id, day, count) VALUES "
             "(%lld, (now() AT TIME ZONE 'UTC')::date - 40, 5) RETURNING 1), u AS (UPDATE issues "
             "SET count = count + 5 WHERE id = %lld RETURNING count) SELECT count FROM u, d",
             issue, issue);
    long long count = sql_int(sql);
    CHECK(sql_int("WITH i AS (INSERT INTO issues (app, kind, fingerprint, title, culprit, "
                  "exception, basis, provisional, frames, first_seen, last_seen, count) VALUES "
                  "('OldApp', 'crash', repeat('0', 64), 't', 'c', 'e', 'in_app', false, '[]', "
                  "now() - interval '500 days', now() - interval '500 days', 1) RETURNING id) "
                  "SELECT count(*) FROM i") == 1);
    snprintf(sql, sizeof sql, "UPDATE dsyms SET last_used_at = now() - interval '200 days' "
             "WHERE uuid = '%s' RETURNING 1", kit_uuid);
    CHECK_EQ_INT(sql_int(sql), 1);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM blobs WHERE sha256 = (SELECT original_blob "
             "FROM dsyms WHERE uuid = '%s')", kit_uuid);
    CHECK_EQ_INT(sql_int(sql), 1);   /* the zip: shared with the -O2 app's row */
    long long reports_before = sql_int("SELECT count(*) FROM reports");
    /* blobs nothing points at already (an outdated symcache replaced by a rebuild) go too */
    long long orphans = sql_int("SELECT count(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM "
                                "dsyms d WHERE b.sha256 IN (d.symcache_blob, d.original_blob))");

    json_t *j = retention_run("30", "400", "180");
    CHECK(j != NULL);
    CHECK(json_is_true(json_object_get(j, "ran")));
    CHECK_EQ_INT(jint(j, "partitions_dropped"), 1);
    CHECK_EQ_INT(jint(j, "reports_expired"), 5);
    CHECK_EQ_INT(jint(j, "issues_expired"), 1);
    CHECK_EQ_INT(jint(j, "dsyms_expired"), 1);
    /* its symcache and the orphans; the zip stays (shared with the -O2 row) */
    CHECK_EQ_INT(jint(j, "blobs_deleted"), orphans + 1);
    json_decref(j);

    /* Reports and raw bodies of that day are gone, with their partition ... */
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM reports"), reports_before - 5);
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM pg_class WHERE relname = 'reports_p' || "
                         "to_char((now() AT TIME ZONE 'UTC')::date - 40, 'YYYYMMDD')"), 0);
    /* ... the aggregates stay: the issue's count and its per-day row of that day ... */
    snprintf(sql, sizeof sql, "SELECT count FROM issues WHERE id = %lld", issue);
    CHECK_EQ_INT(sql_int(sql), count);
    snprintf(sql, sizeof sql, "SELECT count FROM issue_days WHERE issue_id = %lld AND day = "
             "(now() AT TIME ZONE 'UTC')::date - 40", issue);
    CHECK_EQ_INT(sql_int(sql), 5);
    /* ... except past the aggregate retention. */
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM issues WHERE app = 'OldApp'"), 0);
    /* The unused dSYM went with its symcache; every remaining row's blobs are complete. */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM dsyms WHERE uuid = '%s'", kit_uuid);
    CHECK_EQ_INT(sql_int(sql), 0);
    CHECK_EQ_INT(sql_int("SELECT count(*) FROM dsyms d WHERE NOT EXISTS (SELECT 1 FROM blobs b "
                         "WHERE b.sha256 = d.symcache_blob AND b.chunks = (SELECT count(*) FROM "
                         "blob_chunks c WHERE c.sha256 = b.sha256))"), 0);
    /* A second run right away has nothing left to do; the nodes' /metrics show the expiry. */
    j = retention_run("30", "400", "180");
    CHECK(j && jint(j, "partitions_dropped") == 0 && jint(j, "dsyms_expired") == 0);
    json_decref(j);
    http_resp m = http_at(second_port, "GET", "/metrics", NULL, NULL, 0);
    CHECK(metric_value(m.body, "\nstacksift_retention_partitions_dropped_total ") >= 1);
    CHECK(metric_value(m.body, "\nstacksift_retention_dsyms_expired_total ") >= 1);
    CHECK(metric_value(m.body, "\nstacksift_retention_runs_total ") >= 2);
    resp_free(&m);
}

static void corpus_reports_are_processed_or_cleanly_failed(void)
{
    const char *dirs[] = {"apple-text", "ips", "kscrash-json", "plcrash-text", "other"};
    size_t accepted = 0, rejected = 0;
    char ids[256][40];
    size_t nids = 0;
    for (size_t d = 0; d < 5; d++) {
        char *dir = xsprintf("%s/../shared/corpus/reports/%s", e2e.source_dir, dirs[d]);
        DIR *dh = opendir(dir);
        for (struct dirent *e; dh && (e = readdir(dh));) {
            if (e->d_name[0] == '.')
                continue;
            char *path = xsprintf("%s/%s", dir, e->d_name);
            size_t len;
            char *data = read_file(path, &len);
            bool json = data && len > 0 && data[0] == '{';
            http_resp r = http("POST", "/api/v1/reports", json ? "application/json" : "text/plain",
                          data ? data : "", data ? len : 0);
            if (r.status == 202 && nids < 256) {
                accepted++;
                snprintf(ids[nids++], 40, "%s", json_string_value(json_object_get(r.json, "id")));
            } else {
                /* refused at intake: a clear 4xx with an error code, never a 5xx */
                CHECK(r.status == 400 || r.status == 413 || r.status == 422);
                CHECK(r.json && json_object_get(r.json, "error") != NULL);
                rejected++;
            }
            resp_free(&r);
            free(data);
            free(path);
        }
        if (dh)
            closedir(dh);
        free(dir);
    }
    fprintf(stderr, "corpus: %zu accepted, %zu refused at intake\n", accepted, rejected);
    CHECK(accepted >= 40);
    CHECK(drain(60));
    size_t grouped = 0, failed = 0;
    for (size_t i = 0; i < nids; i++) {
        char st[16] = "";
        long long issue = report_issue(ids[i], st);
        if (strcmp(st, "failed") == 0) {
            failed++;
            const char *v[1] = {ids[i]};
            PGresult *res = PQexecParams(db, "SELECT error FROM reports WHERE id = $1", 1, NULL,
                                         v, NULL, NULL, 0);
            CHECK(PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) && *PQgetvalue(res, 0, 0));
            PQclear(res);
        } else {
            CHECK(strcmp(st, "processed") == 0 || strcmp(st, "pending_dsym") == 0);
            CHECK(issue > 0);
            grouped += issue > 0;
        }
    }
    fprintf(stderr, "corpus: %zu grouped, %zu failed\n", grouped, failed);
    CHECK_EQ_INT(grouped + failed, nids);
}

/* KSCrash reports of only crash.error (no thread list) are real crashes: stored, processed
 * and grouped by exception type, reason and crashing image; the same crash twice is one
 * issue, a SIGTERM and an EXC_BAD_ACCESS of the same app are two. */
static void frameless_kscrash_reports_are_grouped(void)
{
    const char *files[4] = {"kscrash-json/sentrycocoa-5.json", "kscrash-json/sentrycocoa-6.json",
                            "kscrash-json/kscrash-test-1.json", "kscrash-json/sentrycocoa-5.json"};
    char ids[4][40] = {"", "", "", ""};
    for (size_t i = 0; i < 4; i++) {
        char *path = xsprintf("%s/../shared/corpus/reports/%s", e2e.source_dir, files[i]);
        size_t len = 0;
        char *data = read_file(path, &len);
        http_resp r = http("POST", "/api/v1/reports", "application/json", data ? data : "", len);
        CHECK_EQ_INT(r.status, 202);
        if (r.status == 202)
            snprintf(ids[i], sizeof ids[i], "%s", json_string_value(json_object_get(r.json, "id")));
        resp_free(&r);
        free(data);
        free(path);
    }
    CHECK(drain(30));
    long long issue[4];
    for (size_t i = 0; i < 4; i++) {
        char st[16] = "";
        issue[i] = report_issue(ids[i], st);
        CHECK_EQ_STR(st, "processed");
        CHECK(issue[i] > 0);
    }
    CHECK_EQ_INT(issue[0], issue[3]);
    CHECK(issue[0] != issue[1] && issue[0] != issue[2] && issue[1] != issue[2]);
    char id[32];
    snprintf(id, sizeof id, "%lld", issue[2]);
    char *basis = sql_str("SELECT basis || ' ' || title FROM issues WHERE id = $1", id);
    CHECK_EQ_STR(basis, "exception SIGKILL: memory_termination (memory level terminal)");
    free(basis);
}

/* A real macOS `sample` report and our MetricKit payload (4 diagnostics) through
 * the real server into issues: the payload is stored as one report per diagnostic, the sample
 * becomes a hang issue, the payload's diagnostics crash / hang / sample issues, and with the
 * real iOS app's dSYM uploaded the crash diagnostic's frames carry Apple's Swift names. */
static void hangs_and_metrickit_flow_into_issues(void)
{
    const char *real = "../shared/real-xcode/macsymbolicator-2021-03";
    char *dsym = xsprintf("%s/%s/dSYMs/iOSCrashingTest.app.dSYM/Contents/Resources/DWARF/iOSCrashingTest",
                          e2e.source_dir, real);
    http_resp up = upload(dsym, "iOSCrashingTest");
    CHECK(up.status == 201 || up.status == 200);
    resp_free(&up);
    free(dsym);
    char *paths[2] = {xsprintf("%s/%s/Samples/multithread-sample.txt", e2e.source_dir, real),
                      xsprintf("%s/tests/golden/crashreport/metrickit-payload.json", e2e.source_dir)};
    char ids[5][40];
    const char *want_kind[5] = {"hang", "crash", "hang", "sample", "sample"};
    size_t nids = 0;
    for (int p = 0; p < 2; p++) {
        size_t len;
        char *data = read_file(paths[p], &len);
        CHECK(data != NULL);
        http_resp r = http("POST", "/api/v1/reports", p ? "application/json" : "text/plain", data ? data : "",
                           data ? len : 0);
        CHECK_EQ_INT(r.status, 202);
        const char *format = r.json ? json_string_value(json_object_get(r.json, "format")) : NULL;
        CHECK_EQ_STR(format, p ? "metrickit" : "sample");
        json_t *list = r.json ? json_object_get(r.json, "reports") : NULL;
        if (p == 0) {
            CHECK(list == NULL); /* one report: no list */
            if (r.json)
                snprintf(ids[nids++], 40, "%s", json_string_value(json_object_get(r.json, "id")));
        } else {
            CHECK_EQ_INT(json_array_size(list), 4);
            for (size_t i = 0; i < json_array_size(list) && nids < 5; i++)
                snprintf(ids[nids++], 40, "%s",
                         json_string_value(json_object_get(json_array_get(list, i), "id")));
        }
        resp_free(&r);
        free(data);
        free(paths[p]);
    }
    CHECK_EQ_INT(nids, 5);
    CHECK(drain(60));
    long long issues[5] = {0};
    for (size_t i = 0; i < nids; i++) {
        char st[16] = "";
        issues[i] = report_issue(ids[i], st);
        CHECK(strcmp(st, "processed") == 0 || strcmp(st, "pending_dsym") == 0);
        CHECK(issues[i] > 0);
        char *url = xsprintf("/api/v1/issues/%lld", issues[i]);
        http_resp r = get(url);
        const char *kind = r.json ? json_string_value(json_object_get(r.json, "kind")) : NULL;
        CHECK_EQ_STR(kind, want_kind[i]);
        /* the issue's hang duration over its one report: that report's own value */
        json_t *hd = r.json ? json_object_get(r.json, "hang_duration_ms") : NULL;
        char *rurl = xsprintf("/api/v1/reports/%s", ids[i]);
        http_resp rr = get(rurl);
        json_t *meta = rr.json ? json_object_get(json_object_get(rr.json, "symbolicated"), "metadata")
                               : NULL;
        json_int_t want = json_integer_value(json_object_get(meta, "hang_duration_ms"));
        if (strcmp(want_kind[i], "hang") == 0) {
            CHECK(want == (i == 0 ? 3000 : 3500)); /* "for 3 seconds"; "3.5 sec" */
            CHECK(json_is_object(hd));
            CHECK_EQ_INT(json_integer_value(json_object_get(hd, "median")), want);
            CHECK_EQ_INT(json_integer_value(json_object_get(hd, "p90")), want);
            CHECK_EQ_INT(json_integer_value(json_object_get(hd, "max")), want);
        } else if (strcmp(want_kind[i], "crash") == 0) {
            CHECK(json_is_null(hd));
        }
        resp_free(&rr);
        free(rurl);
        resp_free(&r);
        free(url);
    }
    /* five diagnostics of different kinds and stacks: five issues */
    for (size_t i = 0; i < nids; i++)
        for (size_t k = i + 1; k < nids; k++)
            CHECK(issues[i] != issues[k]);
    /* the crash diagnostic, symbolicated with the real dSYM: Apple's Swift names */
    char *url = xsprintf("/api/v1/reports/%s", ids[1]);
    http_resp r = get(url);
    char *text = r.json ? json_dumps(json_object_get(r.json, "symbolicated"), JSON_COMPACT) : NULL;
    CHECK(text != NULL && strstr(text, "ViewController.viewDidLoad()") != NULL);
    CHECK(text != NULL && strstr(text, "\"tree\":true") != NULL);
    free(text);
    resp_free(&r);
    free(url);
}

static void unprocessable_report_fails_without_blocking(void)
{
    /* Rows as intake would have stored them, but one is not a report any more (say, a parser
     * that got stricter): it fails with the reason; the ones behind it are processed. */
    const char *bodies[3] = {reports[5].body, "this is not a crash report\n", reports[6].body};
    char ids[3][40];
    for (int i = 0; i < 3; i++) {
        const char *v[1] = {bodies[i]};
        PGresult *r = PQexecParams(db, "INSERT INTO reports (format, content_type, raw, raw_bytes, app) "
                                   "VALUES ('apple-text', 'text/plain', convert_to($1, 'UTF8'), "
                                   "length($1), 'FixtureApp') RETURNING id",
                                   1, NULL, v, NULL, NULL, 0);
        CHECK_EQ_INT(PQresultStatus(r), PGRES_TUPLES_OK);
        snprintf(ids[i], sizeof ids[i], "%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
        PQclear(r);
    }
    CHECK(drain(30));
    for (int i = 0; i < 3; i++) {
        char st[16] = "";
        long long issue = report_issue(ids[i], st);
        CHECK_EQ_STR(st, i == 1 ? "failed" : "processed");
        CHECK(i == 1 ? issue == 0 : issue > 0);
    }
    char *url = xsprintf("/api/v1/reports/%s", ids[1]);
    http_resp r = get(url);
    const char *error = r.json ? json_string_value(json_object_get(r.json, "error")) : NULL;
    CHECK(error && strstr(error, "pars") != NULL);
    resp_free(&r);
    free(url);
}

static void server_stops_cleanly(void)
{
    kill(server_pid, SIGTERM);
    int st = -1;
    for (double end = now_s() + 30; now_s() < end; sleep_ms(20)) {
        if (waitpid(server_pid, &st, WNOHANG) == server_pid)
            break;
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    server_pid = -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);   /* best effort: a leftover temp file fails nothing */
    return 0;
}

int main(void)
{
    if (!e2e_env_load(&e2e, "test_pipeline"))
        return 1;
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/stacksift-pipeline.XXXXXX";
    tmp_root = strdup(mkdtemp(tmpl));
    char *dbname = xsprintf("stacksift_pipeline_%d", (int)getpid());
    db_url = create_database(e2e.base_url, dbname);
    if (!db_url)
        return 1;
    db = PQconnectdb(db_url);
    port = free_port();
    env_db = xsprintf("STACKSIFT_DATABASE_URL=%s", db_url);

    char *man_path = xsprintf("%s/manifest.json", e2e.fixtures);
    json_t *man = json_load_file(man_path, 0, NULL);
    build kit = {0};
    if (!man || !manifest_slice(man, "arm64-O0", &builds[0]) ||
        !manifest_slice(man, "arm64-O2", &builds[1]) || !manifest_slice(man, "kit", &kit)) {
        fprintf(stderr, "test_pipeline: cannot read %s\n", man_path);
        return 1;
    }
    snprintf(kit_uuid, sizeof kit_uuid, "%s", kit.uuid);
    if (!map_build(&builds[0], 0) || !map_build(&builds[1], 1)) {
        fprintf(stderr, "test_pipeline: stacksift lookup failed on the fixtures\n");
        return 1;
    }
    pick_sites();
    generate();

    char *migrate[] = {(char *)e2e.bin, "migrate", NULL};
    if (run_cmd(migrate, NULL, NULL, server_env(port, 'a')) != 0 ||
        !(token = token_create(tmp_root, e2e.bin, server_env(port, 'a'), "pipeline-test",
                               "ingest,upload,read,admin"))) {
        fprintf(stderr, "test_pipeline: migrate or token create failed\n");
        return 1;
    }
    free(man_path);
    free(kit.dwarf);
    server_pid = start_server(port, 'a');
    /* Node B: the same database, its own data directory; workers of both share the queue. */
    second_port = free_port();
    second_pid = start_server(second_port, 'b');
    if (server_pid < 0 || second_pid < 0) {
        fprintf(stderr, "test_pipeline: the server did not start (log in %s)\n", tmp_root);
        return 1;
    }

    double t0 = now_s();
    RUN(sites_come_from_both_builds);
    RUN(generated_reports_parse);
    RUN(reports_wait_for_their_dsym);
    RUN(dsym_upload_regroups_waiting_reports);
    RUN(every_site_is_one_issue);
    RUN(issue_list_pages_through_everything);
    RUN(issue_detail_has_breakdowns_daily_and_sample);
    RUN(issue_reports_page_newest_first);
    RUN(report_has_symbolicated_model_and_text);
    RUN(stored_models_are_lz4_compressed);
    RUN(workers_yield_the_cpu_to_requests);
    RUN(report_by_32_hex_digit_id);
    RUN(resolved_issue_regresses_in_newer_version);
    RUN(symbolicate_endpoint_stores_nothing);
    RUN(server_json_carries_mangled);
    RUN(metrics_show_cache_hit_rate);
    RUN(intake_processing_matches_the_workers);
    RUN(failed_issue_upsert_still_stores_the_report);
    RUN(many_unknown_images_go_to_the_queue);
    RUN(corpus_reports_are_processed_or_cleanly_failed);
    RUN(frameless_kscrash_reports_are_grouped);
    RUN(unprocessable_report_fails_without_blocking);
    RUN(hangs_and_metrickit_flow_into_issues);
    RUN(node_b_fetched_symcaches_from_postgres);
    RUN(cold_node_serves_at_once);
    RUN(outdated_symcache_is_rebuilt);
    RUN(cache_budget_evicts_least_recently_used);
    RUN(legacy_symcache_file_is_backfilled);
    RUN(retention_drops_partitions_keeps_aggregates);
    RUN(cached_stacks_keep_linkage_names);
    RUN(server_stops_cleanly);
    fprintf(stderr, "test_pipeline: %zu generated reports, %.1f s\n", nreports, now_s() - t0);
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
    }
    if (second_pid > 0) {
        kill(second_pid, SIGTERM);
        waitpid(second_pid, NULL, 0);
    }
    PQfinish(db);
    json_decref(man);
    if (harness_failed == 0) {
        /* Passed: leave nothing behind (on failure the database and the server log stay). */
        PGconn *c = PQconnectdb(e2e.base_url);
        char *drop = xsprintf("DROP DATABASE IF EXISTS %s", dbname);
        PQclear(PQexec(c, drop));
        PQfinish(c);
        free(drop);
        nftw(tmp_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    } else {
        fprintf(stderr, "test_pipeline: database %s and %s kept for a look\n", dbname, tmp_root);
    }
    free(dbname);
    return harness_done();
}
