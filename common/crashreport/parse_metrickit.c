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
 * Bounds: jsonr refuses nesting deeper than JSONR_MAX_DEPTH (2048) JSON levels (about 1,000
 * frames) with a clear error; a payload keeps at most CRASHREPORT_MAX_TREE_FRAMES frames per
 * report and MAX_DIAGNOSTICS reports, and the stack merge does at most MAX_MERGE_STEPS steps;
 * beyond that the report is partial (noted in errors).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "crashreport/json_field.h"

#define MAX_DIAGNOSTICS 1000
#define MAX_MERGE_STEPS 20000000u

/* ---- small helpers -------------------------------------------------------------------------- */

static bool ju64(const jsonr_value *v, uint64_t *out)
{
    if (jsonr_is_integer(v) && jsonr_integer(v) >= 0) {
        *out = (uint64_t)jsonr_integer(v);
        return true;
    }
    if (jsonr_is_real(v) && jsonr_real(v) >= 0 && jsonr_real(v) < 9007199254740992.0) {
        *out = (uint64_t)jsonr_real(v);
        return true;
    }
    return false;
}

/* "20 sec", "1.5 s", "500 ms", "2 min", or a number of seconds -> ms; 0 if unreadable */
static uint64_t duration_ms(const jsonr_value *v)
{
    if (jsonr_is_number(v)) {
        double d = jsonr_number(v);
        return d > 0 && d < 1e12 ? (uint64_t)(d * 1000.0 + 0.5) : 0;
    }
    if (!jsonr_is_string(v))
        return 0;
    const char *s = jsonr_string(v);
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
    const jsonr_value **path; /* JSON frames from a root frame (innermost) to the current one */
    size_t *next_child;  /* per path entry: next subFrame to visit */
    size_t cap_path;
    uint64_t steps;
    bool full;           /* a bound was hit: the rest is dropped */
    int32_t *image_slots; /* hash of the report's images by UUID: image index, -1 empty */
    size_t nimage_slots;  /* a power of two, at least twice the images */
} mk_ctx;

static size_t uuid_slot(const mk_ctx *c, const char *uuid)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (const char *p = uuid; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)(h ^ (h >> 32)) & (c->nimage_slots - 1);
}

/* The image of `uuid` (normalized) seen before, -1 if none; *slot: where it goes if new. */
static int32_t image_by_uuid(const mk_ctx *c, const char *uuid, size_t *slot)
{
    const crashreport *r = c->b->r;
    size_t j = uuid_slot(c, uuid);
    for (; c->image_slots[j] >= 0; j = (j + 1) & (c->nimage_slots - 1))
        if (strcmp(r->images[c->image_slots[j]].uuid, uuid) == 0)
            return c->image_slots[j];
    *slot = j;
    return -1;
}

/* Room in the hash for one more image (every image of the report is in it). */
static void image_slots_grow(mk_ctx *c)
{
    const crashreport *r = c->b->r;
    if ((r->nimages + 1) * 2 <= c->nimage_slots)
        return;
    size_t ns = c->nimage_slots ? c->nimage_slots * 2 : 64;
    free(c->image_slots);
    c->image_slots = xreallocarray(NULL, ns, sizeof *c->image_slots);
    memset(c->image_slots, 0xff, ns * sizeof *c->image_slots);
    c->nimage_slots = ns;
    for (size_t i = 0; i < r->nimages; i++) {
        size_t j = uuid_slot(c, r->images[i].uuid);
        while (c->image_slots[j] >= 0)
            j = (j + 1) & (ns - 1);
        c->image_slots[j] = (int32_t)i;
    }
}

/* The image of a JSON frame, added on first sight; -1 without a binaryUUID. */
static int32_t frame_image(mk_ctx *c, const jsonr_value *f)
{
    cr_builder *b = c->b;
    const jsonr_value *ju = jsonr_get(f, "binaryUUID");
    if (!jsonr_is_string(ju))
        return -1;
    char uuid[37];
    if (!cr_uuid_set(uuid, jsonr_string(ju), jsonr_string_length(ju)))
        return -1;
    image_slots_grow(c);
    size_t slot = 0;
    int32_t idx = image_by_uuid(c, uuid, &slot);
    if (idx < 0) {
        crashreport_image *im = cr_add_image(b);
        if (im == NULL)
            return -1;
        idx = (int32_t)(b->r->nimages - 1);
        memcpy(im->uuid, uuid, sizeof uuid);
        im->name = cr_json_str(f, "binaryName");
        im->user = !system_image(im->name);
        c->image_slots[slot] = idx;
    }
    crashreport_image *im = &b->r->images[idx];
    uint64_t addr, off;
    if (im->load_addr == 0 && ju64(jsonr_get(f, "address"), &addr) &&
        ju64(jsonr_get(f, "offsetIntoBinaryTextSegment"), &off) && addr >= off)
        im->load_addr = addr - off;
    if (im->name == NULL)
        im->name = cr_json_str(f, "binaryName");
    return idx;
}

/* Add the stack path[0..depth) (innermost first) with `count` samples, callers first. */
static void add_stack(mk_ctx *c, size_t depth, uint64_t count)
{
    int32_t cur = 0;
    for (size_t k = depth; k > 0 && !c->full; k--) {
        const jsonr_value *f = c->path[k - 1];
        if (++c->steps > MAX_MERGE_STEPS || c->t.n >= CRASHREPORT_MAX_TREE_FRAMES) {
            c->full = true;
            break;
        }
        int32_t image = frame_image(c, f);
        uint64_t off = 0;
        if (!ju64(jsonr_get(f, "offsetIntoBinaryTextSegment"), &off) || image < 0) {
            uint64_t addr;
            if (ju64(jsonr_get(f, "address"), &addr))
                off = addr, image = -1;
        }
        cur = tree_child(&c->t, cur, image, off);
        c->t.nodes[cur].count += count;
    }
    c->t.nodes[0].count += count;
}

static uint64_t sample_count(const jsonr_value *f)
{
    uint64_t n;
    return ju64(jsonr_get(f, "sampleCount"), &n) ? n : 1;
}

/* Walk the frames of one call stack (iteratively: depth is bounded by jsonr, not by us). */
static void walk_stack(mk_ctx *c, const jsonr_value *roots)
{
    for (size_t r = 0; r < cr_json_array_size(roots) && !c->full; r++) {
        size_t depth = 0;
        const jsonr_value *f = jsonr_at(roots, r);
        if (!jsonr_is_object(f))
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
            const jsonr_value *top = c->path[depth - 1];
            const jsonr_value *subs = jsonr_get(top, "subFrames");
            size_t nsub = jsonr_is_array(subs) ? cr_json_array_size(subs) : 0;
            size_t i = c->next_child[depth - 1];
            if (i < nsub) {
                c->next_child[depth - 1] = i + 1;
                const jsonr_value *child = jsonr_at(subs, i);
                if (!jsonr_is_object(child))
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
                if (jsonr_is_object(jsonr_at(subs, k)))
                    below += sample_count(jsonr_at(subs, k));
            if (nsub == 0 || own > below)
                add_stack(c, depth, nsub == 0 ? own : own - below);
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

static int kv_cmp(const void *x, const void *y)
{
    return strcmp(((const cr_json_kv *)x)->key, ((const cr_json_kv *)y)->key);
}

static void set_meta_json(cr_builder *b, const jsonr_value *md, const char *kind)
{
    crashreport_metadata *m = &b->r->meta;
    if (!jsonr_is_object(md))
        return;
    m->app_version = cr_json_str(md, "appVersion");
    m->build = cr_json_str(md, "appBuildVersion");
    m->os_version = cr_json_str(md, "osVersion");
    m->hardware_model = cr_json_str(md, "deviceType");
    m->bundle_id = cr_json_str(md, "bundleIdentifier");
    m->app_name = m->bundle_id; /* MetricKit names no process: the bundle id names the app */
    const char *arch = cr_json_str(md, "platformArchitecture");
    if (arch != NULL) {
        m->code_type = arch;
        m->arch = cr_arch_normalize(arch, strlen(arch));
    }
    if (m->app_version != NULL)
        m->version_text = m->build ? cr_sprintf(b, "%s (%s)", m->app_version, m->build) : m->app_version;
    uint64_t v;
    if (ju64(jsonr_get(md, "exceptionType"), &v)) {
        const char *n = exception_name(v);
        m->exception_type = n ? n : cr_sprintf(b, "%" PRIu64, v);
    }
    if (ju64(jsonr_get(md, "exceptionCode"), &v))
        m->exception_codes = cr_sprintf(b, "0x%016" PRIx64, v);
    if (ju64(jsonr_get(md, "signal"), &v)) {
        const char *n = signal_name(v);
        m->signal = n ? n : cr_sprintf(b, "signal %" PRIu64, v);
    }
    m->termination_reason = cr_json_str(md, "terminationReason");
    m->exception_subtype = cr_json_str(md, "virtualMemoryRegionInfo");
    const jsonr_value *reason = jsonr_get(md, "exceptionReason");
    if (jsonr_is_object(reason)) {
        const char *name = cr_json_str(reason, "exceptionName");
        const char *msg = cr_json_str(reason, "composedMessage");
        if (name != NULL || msg != NULL)
            m->exception_reason = cr_sprintf(b, "%s%s%s", name ? name : "", name && msg ? ": " : "",
                                             msg ? msg : "");
    }
    m->hang_duration_ms = duration_ms(jsonr_get(md, "hangDuration"));
    if (strcmp(kind, "crash") != 0) {
        /* what is particular to this diagnostic (hangDuration, totalCPUTime, writesCaused,
         * ...): the metadata minus the keys every diagnostic carries */
        static const char *const COMMON[] = {"appBuildVersion", "appVersion", "regionFormat", "osVersion",
                                             "deviceType", "platformArchitecture", "bundleIdentifier",
                                             "isTestFlightApp", "lowPowerModeEnabled", "pid"};
        cr_json_kv *kv;
        size_t nkv = cr_json_members(&kv, md), w = 0;
        for (size_t i = 0; i < nkv; i++) {
            bool common = false;
            for (size_t k = 0; k < sizeof COMMON / sizeof COMMON[0] && !common; k++)
                common = strcmp(kv[i].key, COMMON[k]) == 0;
            if (!common)
                kv[w++] = kv[i];
        }
        if (w > 0) {
            /* sorted by key, as jansson's JSON_SORT_KEYS wrote it */
            qsort(kv, w, sizeof *kv, kv_cmp);
            buf text;
            buf_init(&text);
            buf_putc(&text, '{');
            for (size_t i = 0; i < w; i++) {
                if (i > 0)
                    buf_putc(&text, ',');
                buf_append_json_str(&text, kv[i].key, kv[i].key_len);
                buf_putc(&text, ':');
                cr_json_write(&text, kv[i].value);
            }
            buf_putc(&text, '}');
            m->exception_detail = cr_strndup(b, (const char *)text.data, text.len);
            buf_reset(&text);
        }
        free(kv);
    }
}

/* One diagnostic (or bare tree) into *out. */
static err_code parse_one(crashreport **out, const jsonr_value *diag, const jsonr_value *tree_json,
                          const char *kind, const jsonr_value *payload, arena *a,
                          err_info *err)
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
        set_meta_json(&b, jsonr_get(diag, "diagnosticMetaData"), kind);
    if (payload != NULL) {
        r->meta.date = cr_json_str(payload, "timeStampEnd");
        if (r->meta.date == NULL)
            r->meta.date = cr_json_str(payload, "timeStampBegin");
    }
    if (jsonr_is_object(jsonr_get(tree_json, "callStackTree")))
        tree_json = jsonr_get(tree_json, "callStackTree");
    const jsonr_value *stacks = jsonr_get(tree_json, "callStacks");
    if (!jsonr_is_array(stacks)) {
        rc = err_set(err, ERR_INVALID, "MetricKit %s diagnostic has no callStackTree.callStacks array",
                     kind);
        goto done;
    }
    for (size_t i = 0; i < cr_json_array_size(stacks) && !b.failed && !c.full; i++) {
        const jsonr_value *cs = jsonr_at(stacks, i);
        if (!jsonr_is_object(cs)) {
            cr_note(&b, "callStacks[%zu] is not an object", i);
            continue;
        }
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            break;
        t->index = (uint32_t)i;
        t->crashed = jsonr_is_true(jsonr_get(cs, "threadAttributed"));
        tree_reset(&c.t);
        walk_stack(&c, jsonr_get(cs, "callStackRootFrames"));
        emit_tree(&c, r->nthreads - 1); /* may move r->threads: t is stale from here */
    }
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
    free(c.image_slots);
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

bool cr_is_metrickit(const jsonr_value *root)
{
    if (!jsonr_is_object(root))
        return false;
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++)
        if (jsonr_get(root, DIAGNOSTICS[k].key) != NULL)
            return true;
    return jsonr_get(root, "callStacks") != NULL || jsonr_get(root, "callStackTree") != NULL;
}

err_code cr_parse_metrickit(crashreport ***out, size_t *n, const jsonr_value *root, arena *a,
                            err_info *err)
{
    *out = NULL;
    *n = 0;
    size_t total = 0;
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++) {
        const jsonr_value *arr = jsonr_get(root, DIAGNOSTICS[k].key);
        if (arr != NULL && !jsonr_is_array(arr))
            return err_set(err, ERR_INVALID, "MetricKit payload: %s must be an array", DIAGNOSTICS[k].key);
        total += cr_json_array_size(arr);
    }
    bool payload = total > 0;
    if (!payload) {
        for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++)
            if (jsonr_get(root, DIAGNOSTICS[k].key) != NULL)
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
        const jsonr_value *md = jsonr_get(root, "diagnosticMetaData");
        const char *kind = jsonr_get(md, "hangDuration") != NULL          ? "hang"
                           : jsonr_get(md, "totalCPUTime") != NULL        ? "cpu_exception"
                           : jsonr_get(md, "writesCaused") != NULL        ? "disk_write_exception"
                           : jsonr_get(md, "exceptionType") != NULL ||
                                     jsonr_get(md, "signal") != NULL ||
                                     jsonr_get(md, "terminationReason") != NULL
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
        const jsonr_value *arr = jsonr_get(root, DIAGNOSTICS[k].key);
        for (size_t i = 0; i < cr_json_array_size(arr); i++) {
            const jsonr_value *d = jsonr_at(arr, i);
            if (!jsonr_is_object(d))
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
    jsonr_error e;
    const jsonr_value *root = jsonr_parse(a, data + i, len - i, CR_JSONR_FLAGS, NULL, &e);
    if (root == NULL && e.code == JSONR_ERR_TOO_LARGE)
        return err_set(err, ERR_TOO_LARGE, "report too large: its JSON needs more memory than "
                       "the budget allows");
    if (root == NULL)
        return ERR_OK; /* not JSON (or not valid): the parser says why, later */
    size_t total = 0;
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++)
        total += cr_json_array_size(jsonr_get(root, DIAGNOSTICS[k].key));
    if (total == 0 && cr_is_bugsnag(root))
        return cr_bugsnag_split(docs, lens, n, root, a, err);
    if (total < 2)
        return ERR_OK;
    if (total > MAX_DIAGNOSTICS)
        return err_set(err, ERR_TOO_LARGE, "MetricKit payload holds %zu diagnostics (at most %d)",
                       total, MAX_DIAGNOSTICS);
    const char **d = arena_alloc_array(a, total, sizeof *d, err);
    size_t *l = arena_alloc_array(a, total, sizeof *l, err);
    if (d == NULL || l == NULL)
        return ERR_TOO_LARGE;
    /* {"timeStampBegin", "timeStampEnd", "<kind>Diagnostics": [the one diagnostic]} */
    static const char *const STAMPS[] = {"timeStampBegin", "timeStampEnd"};
    buf text;
    buf_init(&text);
    size_t w = 0;
    for (size_t k = 0; k < sizeof DIAGNOSTICS / sizeof DIAGNOSTICS[0]; k++) {
        const jsonr_value *arr = jsonr_get(root, DIAGNOSTICS[k].key);
        for (size_t j = 0; j < cr_json_array_size(arr); j++) {
            text.len = 0; /* the buffer reused */
            buf_putc(&text, '{');
            for (size_t s = 0; s < 2; s++) {
                const jsonr_value *v = jsonr_get(root, STAMPS[s]);
                if (v == NULL)
                    continue;
                buf_append_json_str(&text, STAMPS[s], strlen(STAMPS[s]));
                buf_putc(&text, ':');
                cr_json_write(&text, v);
                buf_putc(&text, ',');
            }
            buf_append_json_str(&text, DIAGNOSTICS[k].key, strlen(DIAGNOSTICS[k].key));
            buf_append_str(&text, ":[");
            cr_json_write(&text, jsonr_at(arr, j));
            buf_append_str(&text, "]}");
            d[w] = arena_strndup(a, (const char *)text.data, text.len, err);
            l[w] = text.len;
            if (d[w] == NULL) {
                buf_reset(&text);
                return ERR_TOO_LARGE;
            }
            w++;
        }
    }
    buf_reset(&text);
    *docs = d;
    *lens = l;
    *n = w;
    return ERR_OK;
}
