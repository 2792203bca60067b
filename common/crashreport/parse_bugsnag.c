/*
 * parse_bugsnag.c - Bugsnag's notifier JSON (bugsnag-cocoa, payload version 4.0 and 5.0): a
 * payload {"apiKey","notifier","payloadVersion","events":[EVENT...]} as the notifier POSTs it
 * to its `endpoints.notify` URL, or one EVENT alone (what BugsnagEvent toJson writes, as the
 * notifier stores it on the device). One report per event.
 *
 * EVENT: exceptions[] ({errorClass, message, type, stacktrace[]}), threads[] ({id, name,
 * errorReportingThread, stacktrace[]}), app ({id, version, bundleVersion, binaryArch,
 * dsymUUIDs}), device ({osName, osVersion, runtimeVersions.osBuild, model, time}),
 * metaData.error (KSCrash's error: mach, signal, nsexception, reason, type), metaData.app.name,
 * severity, unhandled, severityReason.type, context.
 * FRAME: frameAddress, symbolAddress, machoLoadAddress, machoVMAddress (hex strings), machoUUID,
 * machoFile, method, isPC, isLR; frames of other runtimes (React Native JS) carry method, file,
 * lineNumber and no address.
 *
 * The model: the threads as given (the error reporting thread is the crashed one); the first
 * exception's stacktrace is the crashed thread when the event has no threads, and its Last
 * Exception Backtrace when it differs from the crashed thread's stack (an NSException's
 * backtrace); every further exception is a cause (crashreport_cause: errorClass, message,
 * its own stacktrace), in order; images are the distinct Mach-O files the frames name (machoLoadAddress,
 * machoUUID, machoFile). App hangs (severityReason "appHang" or errorClass "App Hang") are hang
 * reports, everything else crashes.
 *
 * Sources: bugsnag/bugsnag-cocoa BugsnagEvent, BugsnagError, BugsnagThread, BugsnagStackframe
 * (toJson / toDictionary) and BSGEventUploadOperation (the payload); the real event
 * ../shared/corpus/reports/other/bugsnag-event-1.json.
 */
#include <jansson.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashreport/json_field.h"

#define MAX_EVENTS 1000 /* events of one payload; more is ERR_TOO_LARGE */

bool cr_is_bugsnag(const void *root_v)
{
    const json_t *root = root_v;
    if (!json_is_object(root))
        return false;
    return json_is_array(json_object_get(root, "events")) ||
           (json_is_array(json_object_get(root, "exceptions")) &&
            json_object_get(root, "report") == NULL) ||
           (json_object_get(root, "apiKey") != NULL && json_object_get(root, "report") == NULL &&
            json_object_get(root, "crash") == NULL);
}

/* The image of one frame (`where`[fi]): found among those seen so far by load address and
 * UUID, else added; -1 when the frame names no Mach-O. */
static int32_t frame_image(cr_builder *b, const json_t *jf, const char *where, size_t fi,
                           err_info *err, err_code *rc)
{
    uint64_t load;
    const json_t *jl = json_object_get(jf, "machoLoadAddress");
    if (jl == NULL)
        return -1;
    if (!cr_json_u64(jl, &load)) {
        *rc = err_set(err, ERR_INVALID, "%s[%zu].machoLoadAddress must be a \"0x...\" hex string",
                      where, fi);
        return -1;
    }
    const char *uuid = cr_json_str(jf, "machoUUID");
    char norm[37] = "";
    if (uuid != NULL && !cr_uuid_set(norm, uuid, strlen(uuid)) &&
        strspn(uuid, "0-") != strlen(uuid)) {
        *rc = err_set(err, ERR_INVALID, "%s[%zu].machoUUID is not a UUID", where, fi);
        return -1;
    }
    crashreport *r = b->r;
    for (size_t i = r->nimages; i > 0; i--)
        if (r->images[i - 1].load_addr == load && strcmp(r->images[i - 1].uuid, norm) == 0)
            return (int32_t)(i - 1);
    crashreport_image *im = cr_add_image(b);
    if (im == NULL)
        return -1;
    im->load_addr = load;
    memcpy(im->uuid, norm, sizeof norm);
    im->path = cr_json_dup(b, jf, "machoFile");
    if (im->path != NULL)
        im->name = cr_strdup(b, cr_basename(im->path));
    return (int32_t)(r->nimages - 1);
}

/* Where read_stack puts the frames it reads: thread `i`, the Last Exception Backtrace, or
 * cause `i` (indexes: the arrays move as they grow). */
typedef enum { TO_THREAD, TO_LEB, TO_CAUSE } stack_dest;

static crashreport_frame *dest_frame(cr_builder *b, stack_dest dest, size_t i)
{
    switch (dest) {
    case TO_THREAD: return cr_add_frame(b, &b->r->threads[i]);
    case TO_LEB: return cr_add_leb_frame(b);
    case TO_CAUSE: return cr_add_cause_frame(b, &b->r->causes[i]);
    }
    return NULL;
}

/* One stacktrace[] into `dest` (thread or cause `di`). */
static err_code read_stack(cr_builder *b, const json_t *st, stack_dest dest, size_t di,
                           const char *where, err_info *err)
{
    if (!json_is_array(st))
        return err_set(err, ERR_INVALID, "%s must be an array", where);
    for (size_t i = 0; i < json_array_size(st); i++) {
        const json_t *jf = json_array_get(st, i);
        /* the field's path is formatted only for a message: per frame it costs as much as
         * reading the frame */
        if (!json_is_object(jf))
            return err_set(err, ERR_INVALID, "%s[%zu] must be an object", where, i);
        uint64_t addr = 0, sym = 0;
        const json_t *ja = json_object_get(jf, "frameAddress");
        if (ja != NULL && !cr_json_u64(ja, &addr))
            return err_set(err, ERR_INVALID, "%s[%zu].frameAddress must be a \"0x...\" hex string",
                           where, i);
        err_code rc = ERR_OK;
        int32_t im = frame_image(b, jf, where, i, err, &rc);
        if (rc != ERR_OK)
            return rc;
        if (b->failed)
            return ERR_TOO_LARGE;
        crashreport_frame *f = dest_frame(b, dest, di);
        if (f == NULL)
            return ERR_TOO_LARGE;
        f->index = (uint32_t)i;
        f->addr = addr;
        f->image = im;
        f->symbol = cr_json_dup(b, jf, "method");
        if (f->symbol != NULL && cr_json_u64(json_object_get(jf, "symbolAddress"), &sym) && sym <= addr &&
            ja != NULL) {
            f->symbol_offset = addr - sym;
            f->has_symbol_offset = true;
        }
        f->file = cr_json_dup(b, jf, "file");
        const json_t *ln = json_object_get(jf, "lineNumber");
        if (json_is_integer(ln) && json_integer_value(ln) > 0 && json_integer_value(ln) <= UINT32_MAX)
            f->line = (uint32_t)json_integer_value(ln);
    }
    return b->failed ? ERR_TOO_LARGE : ERR_OK;
}

/* Whether two stacktrace[] arrays hold the same frame addresses. */
static bool same_stack(const json_t *x, const json_t *y)
{
    size_t n = json_array_size(x);
    if (n != json_array_size(y))
        return false;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = 0, c = 0;
        bool ha = cr_json_u64(json_object_get(json_array_get(x, i), "frameAddress"), &a);
        bool hc = cr_json_u64(json_object_get(json_array_get(y, i), "frameAddress"), &c);
        if (ha != hc || a != c)
            return false;
    }
    return true;
}

static void event_metadata(cr_builder *b, const json_t *ev, const json_t *ex)
{
    crashreport_metadata *m = &b->r->meta;
    const json_t *app = json_object_get(ev, "app");
    const json_t *dev = json_object_get(ev, "device");
    const json_t *md = json_object_get(ev, "metaData");
    if (md == NULL)
        md = json_object_get(ev, "metadata");
    const json_t *error = json_object_get(md, "error");
    m->bundle_id = cr_json_dup(b, app, "id");
    m->app_name = cr_json_dup(b, json_object_get(md, "app"), "name");
    m->process = cr_json_dup(b, app, "executable"); /* not in every notifier version */
    if (m->process == NULL)
        m->process = m->app_name;
    m->app_version = cr_json_dup(b, app, "version");
    m->build = cr_json_dup(b, app, "bundleVersion");
    const char *arch = cr_json_str(app, "binaryArch");
    if (arch != NULL)
        m->arch = cr_arch_normalize(arch, strlen(arch));
    m->hardware_model = cr_json_dup(b, dev, "model");
    m->date = cr_json_dup(b, dev, "time");
    const char *osn = cr_json_str(dev, "osName"), *osv = cr_json_str(dev, "osVersion");
    const char *osb = cr_json_str(json_object_get(dev, "runtimeVersions"), "osBuild");
    m->os_version = cr_os_version(b, osn, osv, osb);
    /* the crash as KSCrash recorded it (metaData.error), else the error as Bugsnag names it */
    const json_t *mach = json_object_get(error, "mach");
    m->exception_type = cr_json_dup(b, mach, "exception_name");
    m->signal = cr_json_dup(b, json_object_get(error, "signal"), "name");
    if (m->exception_type == NULL)
        m->exception_type = m->signal;
    const char *cls = cr_json_str(ex, "errorClass"), *msg = cr_json_str(ex, "message");
    if (m->exception_type == NULL && cls != NULL)
        m->exception_type = cr_strdup(b, cls);
    json_int_t code = 0, sub = 0;
    if (json_is_integer(json_object_get(mach, "code")) && json_is_integer(json_object_get(mach, "subcode"))) {
        code = json_integer_value(json_object_get(mach, "code"));
        sub = json_integer_value(json_object_get(mach, "subcode"));
        m->exception_codes = cr_sprintf(b, "0x%016" PRIx64 ", 0x%016" PRIx64, (uint64_t)code,
                                        (uint64_t)sub);
    }
    m->exception_subtype = cr_json_dup(b, mach, "code_name");
    if (cls != NULL || msg != NULL)
        m->exception_reason = cr_sprintf(b, "%s%s%s", cls ? cls : "", cls && msg ? ": " : "",
                                         msg ? msg : "");
    /* how Bugsnag classed it: "error" + unhandled is a crash, "warning"/"info" a handled one */
    const char *sev = cr_json_str(ev, "severity");
    const char *why = cr_json_str(json_object_get(ev, "severityReason"), "type");
    const json_t *unh = json_object_get(ev, "unhandled");
    const char *ctx = cr_json_str(ev, "context");
    if (sev != NULL || why != NULL || json_is_boolean(unh) || ctx != NULL)
        m->app_specific_info = cr_sprintf(
            b, "Bugsnag: severity %s%s%s%s%s%s%s", sev ? sev : "?",
            json_is_boolean(unh) ? (json_is_true(unh) ? ", unhandled" : ", handled") : "",
            why ? " (" : "", why ? why : "", why ? ")" : "", ctx ? ", context " : "",
            ctx ? ctx : "");
    if ((why != NULL && strcmp(why, "appHang") == 0) || (cls != NULL && strcmp(cls, "App Hang") == 0))
        b->r->kind = CRASHREPORT_KIND_HANG;
}

/* exceptions[1...]: the errors exceptions[0] was caused by, each the cause of the one before
 * (BugsnagError: the notifiers list an error's causes after it), with their own stacks. */
static err_code read_causes(cr_builder *b, const json_t *exs, const char *where, err_info *err)
{
    for (size_t i = 1; i < json_array_size(exs); i++) {
        const json_t *ex = json_array_get(exs, i);
        if (!json_is_object(ex))
            return err_set(err, ERR_INVALID, "Bugsnag %s.exceptions[%zu] must be an object", where,
                           i);
        crashreport_cause *c = cr_add_cause(b);
        if (c == NULL)
            return ERR_TOO_LARGE;
        c->type = cr_json_dup(b, ex, "errorClass");
        c->reason = cr_json_dup(b, ex, "message");
        const json_t *st = json_object_get(ex, "stacktrace");
        if (st != NULL) {
            char w[128];
            snprintf(w, sizeof w, "Bugsnag %s.exceptions[%zu].stacktrace", where, i);
            err_code rc = read_stack(b, st, TO_CAUSE, b->r->ncauses - 1, w, err);
            if (rc != ERR_OK)
                return rc;
        }
    }
    return b->failed ? ERR_TOO_LARGE : ERR_OK;
}

/* One event into a report. `where` names it in messages ("events[2]", "event"). */
static err_code parse_event(crashreport **out, const json_t *ev, const char *where, arena *a,
                            err_info *err)
{
    *out = NULL;
    if (!json_is_object(ev))
        return err_set(err, ERR_INVALID, "Bugsnag %s must be an object", where);
    const json_t *exs = json_object_get(ev, "exceptions");
    if (!json_is_array(exs) || json_array_size(exs) == 0)
        return err_set(err, ERR_INVALID, "Bugsnag %s.exceptions must be a non-empty array", where);
    const json_t *ex = json_array_get(exs, 0);
    if (!json_is_object(ex))
        return err_set(err, ERR_INVALID, "Bugsnag %s.exceptions[0] must be an object", where);
    const json_t *threads = json_object_get(ev, "threads");
    if (threads != NULL && !json_is_array(threads))
        return err_set(err, ERR_INVALID, "Bugsnag %s.threads must be an array", where);
    cr_builder b;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_BUGSNAG, a, err))
        return ERR_TOO_LARGE;
    event_metadata(&b, ev, ex);
    if (b.failed)
        return ERR_TOO_LARGE;
    char w[128];
    err_code rc = ERR_OK;
    const json_t *crashed_stack = NULL;
    for (size_t i = 0; i < json_array_size(threads) && rc == ERR_OK; i++) {
        const json_t *jt = json_array_get(threads, i);
        snprintf(w, sizeof w, "Bugsnag %s.threads[%zu]", where, i);
        if (!json_is_object(jt))
            return err_set(err, ERR_INVALID, "%s must be an object", w);
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            return ERR_TOO_LARGE;
        uint64_t id;
        const json_t *jid = json_object_get(jt, "id");
        if (json_is_string(jid) && sscanf(json_string_value(jid), "%" SCNu64, &id) == 1 &&
            id <= UINT32_MAX)
            t->index = (uint32_t)id;
        else if (json_is_integer(jid) && json_integer_value(jid) >= 0 &&
                 json_integer_value(jid) <= UINT32_MAX)
            t->index = (uint32_t)json_integer_value(jid);
        else
            t->index = (uint32_t)i;
        t->name = cr_json_dup(&b, jt, "name");
        t->crashed = json_is_true(json_object_get(jt, "errorReportingThread"));
        if (t->crashed && crashed_stack == NULL) {
            crashed_stack = json_object_get(jt, "stacktrace");
            b.r->meta.crashed_thread = (int32_t)t->index;
        }
        char sw[160];
        snprintf(sw, sizeof sw, "%s.stacktrace", w);
        const json_t *st = json_object_get(jt, "stacktrace");
        if (st != NULL)
            rc = read_stack(&b, st, TO_THREAD, b.r->nthreads - 1, sw, err);
    }
    if (rc != ERR_OK)
        return rc;
    const json_t *est = json_object_get(ex, "stacktrace");
    snprintf(w, sizeof w, "Bugsnag %s.exceptions[0].stacktrace", where);
    if (est == NULL)
        est = json_array(); /* none given: the threads say it all */
    else
        json_incref((json_t *)est);
    if (b.r->nthreads == 0) {
        /* no threads sent: the exception's stack is the crashed thread */
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL) {
            json_decref((json_t *)est);
            return ERR_TOO_LARGE;
        }
        t->crashed = true;
        b.r->meta.crashed_thread = 0;
        rc = read_stack(&b, est, TO_THREAD, 0, w, err);
    } else if (crashed_stack == NULL || !same_stack(est, crashed_stack)) {
        /* an NSException's backtrace (or a handled error's stack) beside the threads */
        if (json_array_size(est) > 0) {
            b.r->has_leb = true;
            rc = read_stack(&b, est, TO_LEB, 0, w, err);
        } else if (!json_is_array(est)) {
            rc = err_set(err, ERR_INVALID, "%s must be an array", w);
        }
    }
    json_decref((json_t *)est);
    if (rc != ERR_OK)
        return rc;
    rc = read_causes(&b, exs, where, err);
    if (rc != ERR_OK)
        return rc;
    rc = cr_finish(&b, "Bugsnag event");
    if (rc == ERR_OK)
        *out = b.r;
    return rc;
}

err_code cr_parse_bugsnag(crashreport ***out, size_t *n, const void *root_v, arena *a,
                          err_info *err)
{
    const json_t *root = root_v;
    *out = NULL;
    *n = 0;
    const json_t *events = json_object_get(root, "events");
    bool payload = events != NULL || json_object_get(root, "exceptions") == NULL;
    if (payload && !json_is_array(events))
        return err_set(err, ERR_INVALID, "Bugsnag payload: \"events\" must be an array");
    size_t total = payload ? json_array_size(events) : 1;
    if (total == 0)
        return err_set(err, ERR_INVALID, "Bugsnag payload: \"events\" is empty");
    if (total > MAX_EVENTS)
        return err_set(err, ERR_TOO_LARGE, "Bugsnag payload holds %zu events (at most %d)", total,
                       MAX_EVENTS);
    crashreport **list = arena_alloc_array(a, total, sizeof *list, err);
    if (list == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < total; i++) {
        char where[32];
        if (payload)
            snprintf(where, sizeof where, "events[%zu]", i);
        else
            snprintf(where, sizeof where, "event");
        err_code rc = parse_event(&list[i], payload ? json_array_get(events, i) : root, where, a, err);
        if (rc != ERR_OK)
            return rc;
    }
    *out = list;
    *n = total;
    return ERR_OK;
}

err_code cr_bugsnag_split(const char ***docs, size_t **lens, size_t *n, const void *root_v, arena *a,
                          err_info *err)
{
    const json_t *root = root_v;
    const json_t *events = json_object_get(root, "events");
    size_t total = json_array_size(events);
    *n = 0;
    if (total < 2)
        return ERR_OK;
    if (total > MAX_EVENTS)
        return err_set(err, ERR_TOO_LARGE, "Bugsnag payload holds %zu events (at most %d)", total,
                       MAX_EVENTS);
    const char **d = arena_alloc_array(a, total, sizeof *d, err);
    size_t *l = arena_alloc_array(a, total, sizeof *l, err);
    if (d == NULL || l == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < total; i++) {
        /* the payload's own keys (apiKey, notifier, payloadVersion) and this one event */
        json_t *one = json_object();
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)root, key, val) {
            if (strcmp(key, "events") != 0)
                json_object_set(one, key, val);
        }
        json_object_set_new(one, "events", json_pack("[O]", json_array_get(events, i)));
        char *text = json_dumps(one, JSON_COMPACT);
        json_decref(one);
        char *copy = text != NULL ? arena_strdup(a, text, err) : NULL;
        free(text);
        if (copy == NULL)
            return ERR_TOO_LARGE;
        d[i] = copy;
        l[i] = strlen(copy);
    }
    *docs = d;
    *lens = l;
    *n = total;
    return ERR_OK;
}
