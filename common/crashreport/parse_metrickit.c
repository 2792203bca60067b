/*
 * parse_metrickit.c - MetricKit diagnostics (MXDiagnosticPayload.jsonRepresentation()).
 *
 *     {"timeStampBegin": "...", "timeStampEnd": "...",
 *      "crashDiagnostics": [D...], "hangDiagnostics": [D...],
 *      "cpuExceptionDiagnostics": [D...], "diskWriteExceptionDiagnostics": [D...]}
 *     D = {"version": "1.0.0", "diagnosticMetaData": {...}, "callStackTree": T}
 *     T = {"callStackPerThread": true, "callStacks": [{"threadAttributed": true,
 *          "callStackRootFrames": [F...]}]}
 *     F = {"binaryUUID": "...", "binaryName": "App", "offsetIntoBinaryTextSegment": 123,
 *          "address": 4295000000, "sampleCount": 1, "subFrames": [F...]}
 *
 * One payload gives one report per diagnostic (crash -> kind crash, hang -> hang, CPU and
 * disk-write exceptions -> sample); a single diagnostic D or a bare tree T (or {"callStackTree":
 * T}) gives one. Orientation: a root frame is the innermost frame (the sampled instruction)
 * and subFrames are its callers, down to dyld's start (Apple's example in the
 * MXCallStackTree.jsonRepresentation() documentation; Sentry's recorded payload in
 * ../shared/corpus/reports/other/ shows the same). The model wants callers first, so every
 * path from a root frame to the end of its subFrames is one stack, and the stacks of a call
 * stack are merged into a caller-first call tree (stacksift's tree: crashreport.tree) whose
 * counts are the sampleCounts of the stacks; a per-thread stack is a chain.
 *
 * Images: one per binaryUUID. A frame's runtime address is "address" when given, else the
 * image is placed at 0 and the address is the offset (file address = offset + __TEXT vmaddr
 * either way: offsetIntoBinaryTextSegment counts from the __TEXT segment). MetricKit gives no
 * image paths: images named like system libraries (lib*.dylib, dyld, Apple's frameworks in
 * SYSTEM_IMAGES) are not "user" images, every other one is.
 *
 * Bounds: jansson refuses nesting deeper than 2048 JSON levels (about 1,000 frames) with a
 * clear error; a payload keeps at most CRASHREPORT_MAX_TREE_FRAMES frames per report and
 * MAX_DIAGNOSTICS reports, and the stack merge does at most MAX_MERGE_STEPS steps; beyond
 * that the report is partial (noted in errors).
 */
#include <jansson.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "crashreport/json_field.h"

#define MAX_DIAGNOSTICS 1000
#define MAX_MERGE_STEPS 20000000u

/* ---- small helpers -------------------------------------------------------------------------- */

static bool ju64(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 9007199254740992.0) {
        *out = (uint64_t)json_real_value(v);
        return true;
    }
    return false;
}

/* "20 sec", "1.5 s", "500 ms", "2 min", or a number of seconds -> ms; 0 if unreadable */
static uint64_t duration_ms(const json_t *v)
{
    if (json_is_number(v)) {
        double d = json_number_value(v);
        return d > 0 && d < 1e12 ? (uint64_t)(d * 1000.0 + 0.5) : 0;
    }
    if (!json_is_string(v))
        return 0;
    const char *s = json_string_value(v);
    char *end;
    double d = strtod(s, &end);
    if (end == s || !(d > 0 && d < 1e12))
        return 0;
    while (*end == ' ')
        end++;
    double unit = 1000.0;
    if (strncmp(end, "ms", 2) == 0 || strncmp(end, "milli", 5) == 0)
        unit = 1.0;
    else if (strncmp(end, "min", 3) == 0)
        unit = 60000.0;
    else if (strncmp(end, "h", 1) == 0)
        unit = 3600000.0;
    return (uint64_t)(d * unit + 0.5);
}

static const char *const SYSTEM_IMAGES[] = {
    "dyld", "UIKitCore", "UIKit", "CoreFoundation", "Foundation", "GraphicsServices", "QuartzCore",
    "CFNetwork", "SwiftUI", "AppKit", "CoreGraphics", "CoreData", "WebKit", "JavaScriptCore",
    "Security", "AVFoundation", "MapKit", "CoreText", "IOKit", "FrontBoardServices",
    "BackBoardServices", "RunningBoardServices", "BaseBoard", "AttributeGraph", "Combine",
    "CoreAnimation", "Metal", "ImageIO", "CoreMedia", "CoreServices", "Network",
};

static bool system_image(const char *name)
{
    if (name == NULL)
        return false;
    size_t n = strlen(name);
    if (strncmp(name, "lib", 3) == 0 && n > 6 && strcmp(name + n - 6, ".dylib") == 0)
        return true;
    for (size_t i = 0; i < sizeof SYSTEM_IMAGES / sizeof SYSTEM_IMAGES[0]; i++)
        if (strcmp(name, SYSTEM_IMAGES[i]) == 0)
            return true;
    return false;
}

/* Mach exception types (<mach/exception_types.h>) and signals (<sys/signal.h>) by number. */
static const char *exception_name(uint64_t t)
{
    static const char *const N[] = {NULL, "EXC_BAD_ACCESS", "EXC_BAD_INSTRUCTION", "EXC_ARITHMETIC",
                                    "EXC_EMULATION", "EXC_SOFTWARE", "EXC_BREAKPOINT", "EXC_SYSCALL",
                                    "EXC_MACH_SYSCALL", "EXC_RPC_ALERT", "EXC_CRASH", "EXC_RESOURCE",
                                    "EXC_GUARD", "EXC_CORPSE_NOTIFY"};
    return t < sizeof N / sizeof N[0] ? N[t] : NULL;
}

static const char *signal_name(uint64_t s)
{
    static const char *const N[] = {NULL, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT",
                                    "SIGEMT", "SIGFPE", "SIGKILL", "SIGBUS", "SIGSEGV", "SIGSYS",
                                    "SIGPIPE", "SIGALRM", "SIGTERM"};
    return s < sizeof N / sizeof N[0] ? N[s] : NULL;
}

/* ---- the call tree ---------------------------------------------------------------------------- */

typedef struct {
    int32_t parent, first_child, last_child, next_sibling;
    int32_t image;   /* index into r->images, -1 none */
    uint64_t offset; /* offset into the image's __TEXT, or the address when image is -1 */
    uint64_t count;
} node;

typedef struct {
    node *nodes;      /* nodes[0]: the thread (sentinel root) */
    size_t n, cap;
    int32_t *slots;   /* hash (parent, image, offset) -> node, -1 empty */
    size_t nslots;
} tree;

static size_t slot_of(const tree *t, int32_t parent, int32_t image, uint64_t offset)
{
    uint64_t h = ((uint64_t)(uint32_t)parent * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(uint32_t)image * 0xC2B2AE3D27D4EB4Full) ^ (offset * 0x165667B19E3779F9ull);
    h ^= h >> 29;
    return (size_t)h & (t->nslots - 1);
}

static void tree_rehash(tree *t)
{
    size_t ns = t->nslots ? t->nslots * 2 : 1024;
    free(t->slots);
    t->slots = xmalloc(ns * sizeof *t->slots);
    memset(t->slots, 0xff, ns * sizeof *t->slots);
    t->nslots = ns;
    for (size_t i = 1; i < t->n; i++) {
        size_t j = slot_of(t, t->nodes[i].parent, t->nodes[i].image, t->nodes[i].offset);
        while (t->slots[j] >= 0)
            j = (j + 1) & (t->nslots - 1);
        t->slots[j] = (int32_t)i;
    }
}

/* The child of `parent` for (image, offset), made if new. */
static int32_t tree_child(tree *t, int32_t parent, int32_t image, uint64_t offset)
{
    if ((t->n + 1) * 2 > t->nslots)
        tree_rehash(t);
    size_t j = slot_of(t, parent, image, offset);
    for (; t->slots[j] >= 0; j = (j + 1) & (t->nslots - 1)) {
        const node *c = &t->nodes[t->slots[j]];
        if (c->parent == parent && c->image == image && c->offset == offset)
            return t->slots[j];
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->nodes = xreallocarray(t->nodes, t->cap, sizeof *t->nodes);
    }
    int32_t id = (int32_t)t->n++;
    t->nodes[id] = (node){parent, -1, -1, -1, image, offset, 0};
    node *p = &t->nodes[parent];
    if (p->last_child < 0)
        p->first_child = id;
    else
        t->nodes[p->last_child].next_sibling = id;
    p->last_child = id;
    t->slots[j] = id;
    return id;
}

/* ---- one diagnostic ------------------------------------------------------------------------- */

typedef struct {
    cr_builder *b;
    tree t;
    const json_t **path; /* JSON frames from a root frame (innermost) to the current one */
    size_t *next_child;  /* per path entry: next subFrame to visit */
    size_t cap_path;
    uint64_t steps;
    bool full;           /* a bound was hit: the rest is dropped */
    const json_t *images_by_uuid; /* object: uuid -> image index (integer) */
} mk_ctx;

/* The image of a JSON frame, added on first sight; -1 without a binaryUUID. */
static int32_t frame_image(mk_ctx *c, json_t *uuids, const json_t *f)
{
    cr_builder *b = c->b;
    const json_t *ju = json_object_get(f, "binaryUUID");
    if (!json_is_string(ju))
        return -1;
    char uuid[37];
    if (!cr_uuid_set(uuid, json_string_value(ju), json_string_length(ju)))
        return -1;
    const json_t *known = json_object_get(uuids, uuid);
    int32_t idx;
    if (known != NULL) {
        idx = (int32_t)json_integer_value(known);
    } else {
        crashreport_image *im = cr_add_image(b);
        if (im == NULL)
            return -1;
        idx = (int32_t)(b->r->nimages - 1);
        memcpy(im->uuid, uuid, sizeof uuid);
        im->name = cr_json_dup(b, f, "binaryName");
        im->user = !system_image(im->name);
        json_object_set_new(uuids, uuid, json_integer(idx));
    }
    crashreport_image *im = &b->r->images[idx];
    uint64_t addr, off;
    if (im->load_addr == 0 && ju64(json_object_get(f, "address"), &addr) &&
        ju64(json_object_get(f, "offsetIntoBinaryTextSegment"), &off) && addr >= off)
        im->load_addr = addr - off;
    if (im->name == NULL)
        im->name = cr_json_dup(b, f, "binaryName");
    return idx;
}

/* Add the stack path[0..depth) (innermost first) with `count` samples, callers first. */
static void add_stack(mk_ctx *c, json_t *uuids, size_t depth, uint64_t count)
{
    int32_t cur = 0;
    for (size_t k = depth; k > 0 && !c->full; k--) {
        const json_t *f = c->path[k - 1];
        if (++c->steps > MAX_MERGE_STEPS || c->t.n >= CRASHREPORT_MAX_TREE_FRAMES) {
            c->full = true;
            break;
        }
        int32_t image = frame_image(c, uuids, f);
        uint64_t off = 0;
        if (!ju64(json_object_get(f, "offsetIntoBinaryTextSegment"), &off) || image < 0) {
            uint64_t addr;
            if (ju64(json_object_get(f, "address"), &addr))
                off = addr, image = -1;
        }
        cur = tree_child(&c->t, cur, image, off);
        c->t.nodes[cur].count += count;
    }
    c->t.nodes[0].count += count;
}

static uint64_t sample_count(const json_t *f)
{
    uint64_t n;
    return ju64(json_object_get(f, "sampleCount"), &n) ? n : 1;
}

/* Walk the frames of one call stack (iteratively: depth is bounded by jansson, not by us). */
static void walk_stack(mk_ctx *c, json_t *uuids, const json_t *roots)
{
    for (size_t r = 0; r < json_array_size(roots) && !c->full; r++) {
        size_t depth = 0;
        const json_t *f = json_array_get(roots, r);
        if (!json_is_object(f))
            continue;
        if (c->cap_path == 0) {
            c->cap_path = 64;
            c->path = xreallocarray(NULL, c->cap_path, sizeof *c->path);
            c->next_child = xreallocarray(NULL, c->cap_path, sizeof *c->next_child);
        }
        c->path[0] = f;
        c->next_child[0] = 0;
        depth = 1;
        while (depth > 0 && !c->full) {
            const json_t *top = c->path[depth - 1];
            const json_t *subs = json_object_get(top, "subFrames");
            size_t nsub = json_is_array(subs) ? json_array_size(subs) : 0;
            size_t i = c->next_child[depth - 1];
            if (i < nsub) {
                c->next_child[depth - 1] = i + 1;
                const json_t *child = json_array_get(subs, i);
                if (!json_is_object(child))
                    continue;
                if (depth == c->cap_path) {
                    c->cap_path *= 2;
                    c->path = xreallocarray(c->path, c->cap_path, sizeof *c->path);
                    c->next_child = xreallocarray(c->next_child, c->cap_path, sizeof *c->next_child);
                }
                c->path[depth] = child;
                c->next_child[depth] = 0;
                depth++;
                continue;
            }
            /* all callers seen: the samples that stop here are one stack */
            uint64_t own = sample_count(top), below = 0;
            for (size_t k = 0; k < nsub; k++)
                if (json_is_object(json_array_get(subs, k)))
                    below += sample_count(json_array_get(subs, k));
            if (nsub == 0 || own > below)
                add_stack(c, uuids, depth, nsub == 0 ? own : own - below);
            depth--;
        }
    }
}

/* The tree in pre-order into thread t; sample_count of the thread from the sentinel. */
static void emit_tree(mk_ctx *c, size_t thread_i)
{
    cr_builder *b = c->b;
    tree *t = &c->t;
    if (t->n <= 1)
        return;
    int32_t *map = xmalloc(t->n * sizeof *map); /* node -> frame index */
    int32_t *stack = xmalloc(t->n * sizeof *stack);
    size_t sp = 0;
    /* roots pushed in reverse so that the first root comes out first */
    for (int32_t k = t->nodes[0].first_child; k >= 0; k = t->nodes[k].next_sibling)
        stack[sp++] = k;
    for (size_t i = 0, j = sp - 1; sp > 0 && i < j; i++, j--) {
        int32_t tmp = stack[i];
        stack[i] = stack[j];
        stack[j] = tmp;
    }
    b->r->threads[thread_i].sample_count = t->nodes[0].count;
    while (sp > 0 && !b->failed) {
        int32_t id = stack[--sp];
        const node *nd = &t->nodes[id];
        crashreport_frame *f = cr_add_frame(b, &b->r->threads[thread_i]);
        if (f == NULL)
            break;
        size_t fi = b->r->threads[thread_i].nframes - 1;
        map[id] = (int32_t)fi;
        f->index = (uint32_t)fi;
        f->image = nd->image;
        f->addr = nd->image >= 0 ? b->r->images[nd->image].load_addr + nd->offset : nd->offset;
        if (nd->image >= 0) {
            f->image_name = b->r->images[nd->image].name;
            f->symbol_offset = 0;
        }
        f->sample_count = nd->count;
        f->leaf = nd->first_child < 0;
        f->parent = nd->parent > 0 ? map[nd->parent] : -1;
        f->depth = f->parent >= 0 ? b->r->threads[thread_i].frames[f->parent].depth + 1 : 0;
        /* children in order: push in reverse */
        size_t mark = sp;
        for (int32_t ch = nd->first_child; ch >= 0; ch = t->nodes[ch].next_sibling)
            stack[sp++] = ch;
        for (size_t i = mark, j = sp > mark ? sp - 1 : mark; i < j; i++, j--) {
            int32_t tmp = stack[i];
            stack[i] = stack[j];
            stack[j] = tmp;
        }
    }
    free(map);
    free(stack);
}

static void tree_reset(tree *t)
{
    t->n = 0;
    if (t->nslots)
        memset(t->slots, 0xff, t->nslots * sizeof *t->slots);
    if (t->cap == 0) {
        t->cap = 256;
        t->nodes = xreallocarray(NULL, t->cap, sizeof *t->nodes);
    }
    t->nodes[t->n++] = (node){-1, -1, -1, -1, -1, 0, 0};
}

static void set_meta_json(cr_builder *b, const json_t *md, const char *kind)
{
    crashreport_metadata *m = &b->r->meta;
    if (!json_is_object(md))
        return;
    m->app_version = cr_json_dup(b, md, "appVersion");
    m->build = cr_json_dup(b, md, "appBuildVersion");
    m->os_version = cr_json_dup(b, md, "osVersion");
    m->hardware_model = cr_json_dup(b, md, "deviceType");
    m->bundle_id = cr_json_dup(b, md, "bundleIdentifier");
    m->app_name = m->bundle_id; /* MetricKit names no process: the bundle id names the app */
    const char *arch = cr_json_dup(b, md, "platformArchitecture");
    if (arch != NULL) {
        m->code_type = arch;
        m->arch = cr_arch_normalize(arch, strlen(arch));
    }
    if (m->app_version != NULL)
        m->version_text = m->build ? cr_sprintf(b, "%s (%s)", m->app_version, m->build) : m->app_version;
    uint64_t v;
    if (ju64(json_object_get(md, "exceptionType"), &v)) {
        const char *n = exception_name(v);
        m->exception_type = n ? n : cr_sprintf(b, "%" PRIu64, v);
    }
    if (ju64(json_object_get(md, "exceptionCode"), &v))
        m->exception_codes = cr_sprintf(b, "0x%016" PRIx64, v);
    if (ju64(json_object_get(md, "signal"), &v)) {
        const char *n = signal_name(v);
        m->signal = n ? n : cr_sprintf(b, "signal %" PRIu64, v);
    }
    m->termination_reason = cr_json_dup(b, md, "terminationReason");
    m->exception_subtype = cr_json_dup(b, md, "virtualMemoryRegionInfo");
    const json_t *reason = json_object_get(md, "exceptionReason");
    if (json_is_object(reason)) {
        const char *name = cr_json_dup(b, reason, "exceptionName");
        const char *msg = cr_json_dup(b, reason, "composedMessage");
        if (name != NULL || msg != NULL)
            m->exception_reason = cr_sprintf(b, "%s%s%s", name ? name : "", name && msg ? ": " : "",
                                             msg ? msg : "");
    }
    m->hang_duration_ms = duration_ms(json_object_get(md, "hangDuration"));
    if (strcmp(kind, "crash") != 0) {
        /* what is particular to this diagnostic (hangDuration, totalCPUTime, writesCaused,
         * ...): the metadata minus the keys every diagnostic carries */
        static const char *const COMMON[] = {"appBuildVersion", "appVersion", "regionFormat", "osVersion",
                                             "deviceType", "platformArchitecture", "bundleIdentifier",
                                             "isTestFlightApp", "lowPowerModeEnabled", "pid"};
        json_t *own = json_deep_copy(md);
        for (size_t i = 0; own != NULL && i < sizeof COMMON / sizeof COMMON[0]; i++)
            json_object_del(own, COMMON[i]);
        char *text = own != NULL && json_object_size(own) > 0 ? json_dumps(own, JSON_COMPACT | JSON_SORT_KEYS)
                                                               : NULL;
        json_decref(own);
        if (text != NULL) {
            m->exception_detail = cr_strdup(b, text);
            free(text);
        }
    }
}

/* One diagnostic (or bare tree) into *out. */
static err_code parse_one(crashreport **out, const json_t *diag, const json_t *tree_json, const char *kind,
                          const json_t *payload, arena *a, err_info *err)
{
    cr_builder b;
    mk_ctx c = {0};
    err_code rc = ERR_OK;
    *out = NULL;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_METRICKIT, a, err))
        return ERR_TOO_LARGE;
    c.b = &b;
    crashreport *r = b.r;
    r->tree = true;
    r->kind = strcmp(kind, "crash") == 0  ? CRASHREPORT_KIND_CRASH
              : strcmp(kind, "hang") == 0 ? CRASHREPORT_KIND_HANG
                                          : CRASHREPORT_KIND_SAMPLE;
    r->meta.diagnostic = kind;
    if (diag != NULL)
        set_meta_json(&b, json_object_get(diag, "diagnosticMetaData"), kind);
    if (payload != NULL) {
        r->meta.date = cr_json_dup(&b, payload, "timeStampEnd");
        if (r->meta.date == NULL)
            r->meta.date = cr_json_dup(&b, payload, "timeStampBegin");
    }
    if (json_is_object(json_object_get(tree_json, "callStackTree")))
        tree_json = json_object_get(tree_json, "callStackTree");
    const json_t *stacks = json_object_get(tree_json, "callStacks");
    if (!json_is_array(stacks)) {
        rc = err_set(err, ERR_INVALID, "MetricKit %s diagnostic has no callStackTree.callStacks array",
                     kind);
        goto done;
    }
    json_t *uuids = json_object();
    for (size_t i = 0; i < json_array_size(stacks) && !b.failed && !c.full; i++) {
        const json_t *cs = json_array_get(stacks, i);
        if (!json_is_object(cs)) {
            cr_note(&b, "callStacks[%zu] is not an object", i);
            continue;
        }
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            break;
        t->index = (uint32_t)i;
        t->crashed = json_is_true(json_object_get(cs, "threadAttributed"));
        tree_reset(&c.t);
        walk_stack(&c, uuids, json_object_get(cs, "callStackRootFrames"));
        emit_tree(&c, r->nthreads - 1); /* may move r->threads: t is stale from here */
    }
    json_decref(uuids);
    if (c.full) {
        r->partial = true;
        cr_note(&b, "MetricKit call tree too large: kept the first %zu frames", (size_t)c.t.n);
    }
    /* the attributed thread first: the signature reads thread 0 of a hang */
    for (size_t i = 1; i < r->nthreads; i++)
        if (r->threads[i].crashed) {
            crashreport_thread th = r->threads[i];
            memmove(&r->threads[1], &r->threads[0], i * sizeof th);
            r->threads[0] = th;
            for (size_t k = 0; k <= i; k++)
                r->threads[k].index = (uint32_t)k;
            break;
        }
    rc = cr_finish(&b, "MetricKit diagnostic");
    if (rc == ERR_OK)
        *out = r;
done:
    free(c.t.nodes);
    free(c.t.slots);
    free(c.path);
    free(c.next_child);
    return rc;
}

static const struct {
    const char *key, *kind;
} DIAGNOSTICS[] = {
    {"crashDiagnostics", "crash"},
    {"hangDiagnostics", "hang"},
    {"cpuExceptionDiagnostics", "cpu_exception"},
    {"diskWriteExceptionDiagnostics", "disk_write_exception"},
};

bool cr_is_metrickit(const void *root_v)
{
    const json_t *root = root_v;
    if (!json_is_object(root))
        return false;
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++)
        if (json_object_get(root, DIAGNOSTICS[k].key) != NULL)
            return true;
    return json_object_get(root, "callStacks") != NULL || json_object_get(root, "callStackTree") != NULL;
}

err_code cr_parse_metrickit(crashreport ***out, size_t *n, const void *root_v, arena *a, err_info *err)
{
    const json_t *root = root_v;
    *out = NULL;
    *n = 0;
    size_t total = 0;
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++) {
        const json_t *arr = json_object_get(root, DIAGNOSTICS[k].key);
        if (arr != NULL && !json_is_array(arr))
            return err_set(err, ERR_INVALID, "MetricKit payload: %s must be an array", DIAGNOSTICS[k].key);
        total += json_array_size(arr);
    }
    bool payload = total > 0;
    if (!payload) {
        for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++)
            if (json_object_get(root, DIAGNOSTICS[k].key) != NULL)
                return err_set(err, ERR_INVALID, "MetricKit payload holds no diagnostics");
        total = 1; /* a single diagnostic or a bare tree */
    }
    if (total > MAX_DIAGNOSTICS)
        return err_set(err, ERR_TOO_LARGE, "MetricKit payload holds %zu diagnostics (at most %d)", total,
                       MAX_DIAGNOSTICS);
    crashreport **list = arena_alloc_array(a, total, sizeof *list, err);
    if (list == NULL)
        return ERR_TOO_LARGE;
    err_code rc = ERR_OK;
    if (!payload) {
        /* {"callStackTree":...,"diagnosticMetaData":...}: which kind it is, the keys tell */
        const json_t *md = json_object_get(root, "diagnosticMetaData");
        const char *kind = json_object_get(md, "hangDuration") != NULL          ? "hang"
                           : json_object_get(md, "totalCPUTime") != NULL        ? "cpu_exception"
                           : json_object_get(md, "writesCaused") != NULL        ? "disk_write_exception"
                           : json_object_get(md, "exceptionType") != NULL ||
                                     json_object_get(md, "signal") != NULL ||
                                     json_object_get(md, "terminationReason") != NULL
                               ? "crash"
                               : "hang";
        rc = parse_one(&list[0], md ? root : NULL, root, kind, NULL, a, err);
        if (rc != ERR_OK)
            return rc;
        *out = list;
        *n = 1;
        return ERR_OK;
    }
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++) {
        const json_t *arr = json_object_get(root, DIAGNOSTICS[k].key);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            const json_t *d = json_array_get(arr, i);
            if (!json_is_object(d))
                return err_set(err, ERR_INVALID, "MetricKit payload: %s[%zu] must be an object",
                               DIAGNOSTICS[k].key, i);
            rc = parse_one(&list[*n], d, d, DIAGNOSTICS[k].kind, root, a, err);
            if (rc != ERR_OK) {
                if (err != NULL && rc == ERR_INVALID) {
                    char msg[sizeof err->msg];
                    snprintf(msg, sizeof msg, "%s", err->msg);
                    err_set(err, rc, "%s[%zu]: %s", DIAGNOSTICS[k].key, i, msg);
                }
                return rc;
            }
            (*n)++;
        }
    }
    *out = list;
    return ERR_OK;
}

err_code crashreport_split(const char ***docs, size_t **lens, size_t *n, const char *data, size_t len,
                           arena *a, err_info *err)
{
    *docs = NULL;
    *lens = NULL;
    *n = 0;
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i == len || data[i] != '{')
        return ERR_OK;
    json_t *root = json_loadb(data + i, len - i, 0, NULL);
    if (root == NULL)
        return ERR_OK; /* not JSON (or not valid): the parser says why, later */
    size_t total = 0;
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++)
        total += json_array_size(json_object_get(root, DIAGNOSTICS[k].key));
    err_code rc = ERR_OK;
    if (total == 0 && cr_is_bugsnag(root)) {
        rc = cr_bugsnag_split(docs, lens, n, root, a, err);
        goto done;
    }
    if (total < 2)
        goto done;
    if (total > MAX_DIAGNOSTICS) {
        rc = err_set(err, ERR_TOO_LARGE, "MetricKit payload holds %zu diagnostics (at most %d)", total,
                     MAX_DIAGNOSTICS);
        goto done;
    }
    const char **d = arena_alloc_array(a, total, sizeof *d, err);
    size_t *l = arena_alloc_array(a, total, sizeof *l, err);
    if (d == NULL || l == NULL) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    static const char *const STAMPS[] = {"timeStampBegin", "timeStampEnd"};
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0] && rc == ERR_OK; k++) {
        json_t *arr = json_object_get(root, DIAGNOSTICS[k].key);
        for (size_t j = 0; j < json_array_size(arr) && rc == ERR_OK; j++) {
            json_t *one = json_object();
            for (size_t s = 0; s < 2; s++)
                if (json_object_get(root, STAMPS[s]) != NULL)
                    json_object_set(one, STAMPS[s], json_object_get(root, STAMPS[s]));
            json_object_set_new(one, DIAGNOSTICS[k].key, json_pack("[O]", json_array_get(arr, j)));
            char *text = json_dumps(one, JSON_COMPACT);
            json_decref(one);
            char *copy = text != NULL ? arena_strdup(a, text, err) : NULL;
            free(text);
            if (copy == NULL) {
                rc = ERR_TOO_LARGE;
                break;
            }
            d[*n] = copy;
            l[*n] = strlen(copy);
            (*n)++;
        }
    }
    if (rc == ERR_OK) {
        *docs = d;
        *lens = l;
    } else {
        *n = 0;
    }
done:
    json_decref(root);
    return rc;
}
