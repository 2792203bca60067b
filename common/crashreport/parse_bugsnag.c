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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashreport/json_field.h"

#define MAX_EVENTS 1000 /* events of one payload; more is ERR_TOO_LARGE */

bool cr_is_bugsnag(const jsonr_value *root)
{
    if (!jsonr_is_object(root))
        return false;
    return jsonr_is_array(jsonr_get(root, "events")) ||
           (jsonr_is_array(jsonr_get(root, "exceptions")) &&
            jsonr_get(root, "report") == NULL) ||
           (jsonr_get(root, "apiKey") != NULL && jsonr_get(root, "report") == NULL &&
            jsonr_get(root, "crash") == NULL);
}

/* The image of one frame (`where`[fi]): found among those seen so far by load address and
 * UUID, else added; -1 when the frame names no Mach-O. */
static int32_t frame_image(cr_builder *b, const jsonr_value *jf, const char *where, size_t fi,
                           err_info *err, err_code *rc)
{
    uint64_t load;
    const jsonr_value *jl = jsonr_get(jf, "machoLoadAddress");
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
    im->path = cr_json_str(jf, "machoFile");
    if (im->path != NULL)
        im->name = cr_basename(im->path);
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
static err_code read_stack(cr_builder *b, const jsonr_value *st, stack_dest dest, size_t di,
                           const char *where, err_info *err)
{
    if (!jsonr_is_array(st))
        return err_set(err, ERR_INVALID, "%s must be an array", where);
    for (size_t i = 0; i < cr_json_array_size(st); i++) {
        const jsonr_value *jf = jsonr_at(st, i);
        /* the field's path is formatted only for a message: per frame it costs as much as
         * reading the frame */
        if (!jsonr_is_object(jf))
            return err_set(err, ERR_INVALID, "%s[%zu] must be an object", where, i);
        uint64_t addr = 0, sym = 0;
        const jsonr_value *ja = jsonr_get(jf, "frameAddress");
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
        f->symbol = cr_json_str(jf, "method");
        if (f->symbol != NULL && cr_json_u64(jsonr_get(jf, "symbolAddress"), &sym) && sym <= addr &&
            ja != NULL) {
            f->symbol_offset = addr - sym;
            f->has_symbol_offset = true;
        }
        f->file = cr_json_str(jf, "file");
        const jsonr_value *ln = jsonr_get(jf, "lineNumber");
        if (jsonr_is_integer(ln) && jsonr_integer(ln) > 0 && jsonr_integer(ln) <= UINT32_MAX)
            f->line = (uint32_t)jsonr_integer(ln);
    }
    return b->failed ? ERR_TOO_LARGE : ERR_OK;
}

/* Whether two stacktrace[] arrays hold the same frame addresses. */
static bool same_stack(const jsonr_value *x, const jsonr_value *y)
{
    size_t n = cr_json_array_size(x);
    if (n != cr_json_array_size(y))
        return false;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = 0, c = 0;
        bool ha = cr_json_u64(jsonr_get(jsonr_at(x, i), "frameAddress"), &a);
        bool hc = cr_json_u64(jsonr_get(jsonr_at(y, i), "frameAddress"), &c);
        if (ha != hc || a != c)
            return false;
    }
    return true;
}

static void event_metadata(cr_builder *b, const jsonr_value *ev, const jsonr_value *ex)
{
    crashreport_metadata *m = &b->r->meta;
    const jsonr_value *app = jsonr_get(ev, "app");
    const jsonr_value *dev = jsonr_get(ev, "device");
    const jsonr_value *md = jsonr_get(ev, "metaData");
    if (md == NULL)
        md = jsonr_get(ev, "metadata");
    const jsonr_value *error = jsonr_get(md, "error");
    m->bundle_id = cr_json_str(app, "id");
    m->app_name = cr_json_str(jsonr_get(md, "app"), "name");
    m->process = cr_json_str(app, "executable"); /* not in every notifier version */
    if (m->process == NULL)
        m->process = m->app_name;
    m->app_version = cr_json_str(app, "version");
    m->build = cr_json_str(app, "bundleVersion");
    const char *arch = cr_json_str(app, "binaryArch");
    if (arch != NULL)
        m->arch = cr_arch_normalize(arch, strlen(arch));
    m->hardware_model = cr_json_str(dev, "model");
    m->date = cr_json_str(dev, "time");
    const char *osn = cr_json_str(dev, "osName"), *osv = cr_json_str(dev, "osVersion");
    const char *osb = cr_json_str(jsonr_get(dev, "runtimeVersions"), "osBuild");
    m->os_version = cr_os_version(b, osn, osv, osb);
    /* the crash as KSCrash recorded it (metaData.error), else the error as Bugsnag names it */
    const jsonr_value *mach = jsonr_get(error, "mach");
    m->exception_type = cr_json_str(mach, "exception_name");
    m->signal = cr_json_str(jsonr_get(error, "signal"), "name");
    if (m->exception_type == NULL)
        m->exception_type = m->signal;
    const char *cls = cr_json_str(ex, "errorClass"), *msg = cr_json_str(ex, "message");
    if (m->exception_type == NULL && cls != NULL)
        m->exception_type = cr_strdup(b, cls);
    int64_t code = 0, sub = 0;
    if (jsonr_is_integer(jsonr_get(mach, "code")) && jsonr_is_integer(jsonr_get(mach, "subcode"))) {
        code = jsonr_integer(jsonr_get(mach, "code"));
        sub = jsonr_integer(jsonr_get(mach, "subcode"));
        m->exception_codes = cr_sprintf(b, "0x%016" PRIx64 ", 0x%016" PRIx64, (uint64_t)code,
                                        (uint64_t)sub);
    }
    m->exception_subtype = cr_json_str(mach, "code_name");
    if (cls != NULL || msg != NULL)
        m->exception_reason = cr_sprintf(b, "%s%s%s", cls ? cls : "", cls && msg ? ": " : "",
                                         msg ? msg : "");
    /* how Bugsnag classed it: "error" + unhandled is a crash, "warning"/"info" a handled one */
    const char *sev = cr_json_str(ev, "severity");
    const char *why = cr_json_str(jsonr_get(ev, "severityReason"), "type");
    const jsonr_value *unh = jsonr_get(ev, "unhandled");
    const char *ctx = cr_json_str(ev, "context");
    if (sev != NULL || why != NULL || jsonr_is_boolean(unh) || ctx != NULL)
        m->app_specific_info = cr_sprintf(
            b, "Bugsnag: severity %s%s%s%s%s%s%s", sev ? sev : "?",
            jsonr_is_boolean(unh) ? (jsonr_is_true(unh) ? ", unhandled" : ", handled") : "",
            why ? " (" : "", why ? why : "", why ? ")" : "", ctx ? ", context " : "",
            ctx ? ctx : "");
    if ((why != NULL && strcmp(why, "appHang") == 0) || (cls != NULL && strcmp(cls, "App Hang") == 0))
        b->r->kind = CRASHREPORT_KIND_HANG;
}

/* exceptions[1...]: the errors exceptions[0] was caused by, each the cause of the one before
 * (BugsnagError: the notifiers list an error's causes after it), with their own stacks. */
static err_code read_causes(cr_builder *b, const jsonr_value *exs, const char *where, err_info *err)
{
    for (size_t i = 1; i < cr_json_array_size(exs); i++) {
        const jsonr_value *ex = jsonr_at(exs, i);
        if (!jsonr_is_object(ex))
            return err_set(err, ERR_INVALID, "Bugsnag %s.exceptions[%zu] must be an object", where,
                           i);
        crashreport_cause *c = cr_add_cause(b);
        if (c == NULL)
            return ERR_TOO_LARGE;
        c->type = cr_json_str(ex, "errorClass");
        c->reason = cr_json_str(ex, "message");
        const jsonr_value *st = jsonr_get(ex, "stacktrace");
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
static err_code parse_event(crashreport **out, const jsonr_value *ev, const char *where, arena *a,
                            err_info *err)
{
    *out = NULL;
    if (!jsonr_is_object(ev))
        return err_set(err, ERR_INVALID, "Bugsnag %s must be an object", where);
    const jsonr_value *exs = jsonr_get(ev, "exceptions");
    if (!jsonr_is_array(exs) || cr_json_array_size(exs) == 0)
        return err_set(err, ERR_INVALID, "Bugsnag %s.exceptions must be a non-empty array", where);
    const jsonr_value *ex = jsonr_at(exs, 0);
    if (!jsonr_is_object(ex))
        return err_set(err, ERR_INVALID, "Bugsnag %s.exceptions[0] must be an object", where);
    const jsonr_value *threads = jsonr_get(ev, "threads");
    if (threads != NULL && !jsonr_is_array(threads))
        return err_set(err, ERR_INVALID, "Bugsnag %s.threads must be an array", where);
    cr_builder b;
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_BUGSNAG, a, err))
        return ERR_TOO_LARGE;
    event_metadata(&b, ev, ex);
    if (b.failed)
        return ERR_TOO_LARGE;
    char w[128];
    err_code rc = ERR_OK;
    const jsonr_value *crashed_stack = NULL;
    for (size_t i = 0; i < cr_json_array_size(threads) && rc == ERR_OK; i++) {
        const jsonr_value *jt = jsonr_at(threads, i);
        snprintf(w, sizeof w, "Bugsnag %s.threads[%zu]", where, i);
        if (!jsonr_is_object(jt))
            return err_set(err, ERR_INVALID, "%s must be an object", w);
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            return ERR_TOO_LARGE;
        uint64_t id;
        const jsonr_value *jid = jsonr_get(jt, "id");
        if (jsonr_is_string(jid) && sscanf(jsonr_string(jid), "%" SCNu64, &id) == 1 &&
            id <= UINT32_MAX)
            t->index = (uint32_t)id;
        else if (jsonr_is_integer(jid) && jsonr_integer(jid) >= 0 &&
                 jsonr_integer(jid) <= UINT32_MAX)
            t->index = (uint32_t)jsonr_integer(jid);
        else
            t->index = (uint32_t)i;
        t->name = cr_json_str(jt, "name");
        t->crashed = jsonr_is_true(jsonr_get(jt, "errorReportingThread"));
        if (t->crashed && crashed_stack == NULL) {
            crashed_stack = jsonr_get(jt, "stacktrace");
            b.r->meta.crashed_thread = (int32_t)t->index;
        }
        char sw[160];
        snprintf(sw, sizeof sw, "%s.stacktrace", w);
        const jsonr_value *st = jsonr_get(jt, "stacktrace");
        if (st != NULL)
            rc = read_stack(&b, st, TO_THREAD, b.r->nthreads - 1, sw, err);
    }
    if (rc != ERR_OK)
        return rc;
    const jsonr_value *est = jsonr_get(ex, "stacktrace");
    snprintf(w, sizeof w, "Bugsnag %s.exceptions[0].stacktrace", where);
    static const jsonr_value EMPTY = {.type = JSONR_ARRAY};
    if (est == NULL)
        est = &EMPTY; /* none given: the threads say it all */
    if (b.r->nthreads == 0) {
        /* no threads sent: the exception's stack is the crashed thread */
        crashreport_thread *t = cr_add_thread(&b);
        if (t == NULL)
            return ERR_TOO_LARGE;
        t->crashed = true;
        b.r->meta.crashed_thread = 0;
        rc = read_stack(&b, est, TO_THREAD, 0, w, err);
    } else if (crashed_stack == NULL || !same_stack(est, crashed_stack)) {
        /* an NSException's backtrace (or a handled error's stack) beside the threads */
        if (cr_json_array_size(est) > 0) {
            b.r->has_leb = true;
            rc = read_stack(&b, est, TO_LEB, 0, w, err);
        } else if (!jsonr_is_array(est)) {
            rc = err_set(err, ERR_INVALID, "%s must be an array", w);
        }
    }
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

err_code cr_parse_bugsnag(crashreport ***out, size_t *n, const jsonr_value *root, arena *a,
                          err_info *err)
{
    *out = NULL;
    *n = 0;
    const jsonr_value *events = jsonr_get(root, "events");
    bool payload = events != NULL || jsonr_get(root, "exceptions") == NULL;
    if (payload && !jsonr_is_array(events))
        return err_set(err, ERR_INVALID, "Bugsnag payload: \"events\" must be an array");
    size_t total = payload ? cr_json_array_size(events) : 1;
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
        err_code rc = parse_event(&list[i], payload ? jsonr_at(events, i) : root, where, a, err);
        if (rc != ERR_OK)
            return rc;
    }
    *out = list;
    *n = total;
    return ERR_OK;
}

err_code cr_bugsnag_split(const char ***docs, size_t **lens, size_t *n, const jsonr_value *root,
                          arena *a, err_info *err)
{
    const jsonr_value *events = jsonr_get(root, "events");
    size_t total = cr_json_array_size(events);
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
    /* the payload's own keys (apiKey, notifier, payloadVersion) and one event each */
    cr_json_kv *kv;
    size_t nkv = cr_json_members(&kv, root);
    buf text;
    buf_init(&text);
    err_code rc = ERR_OK;
    for (size_t i = 0; i < total && rc == ERR_OK; i++) {
        text.len = 0; /* the buffer reused */
        buf_putc(&text, '{');
        for (size_t k = 0; k < nkv; k++) {
            if (strcmp(kv[k].key, "events") == 0)
                continue;
            buf_append_json_str(&text, kv[k].key, kv[k].key_len);
            buf_putc(&text, ':');
            cr_json_write(&text, kv[k].value);
            buf_putc(&text, ',');
        }
        buf_append_str(&text, "\"events\":[");
        cr_json_write(&text, jsonr_at(events, i));
        buf_append_str(&text, "]}");
        d[i] = arena_strndup(a, (const char *)text.data, text.len, err);
        l[i] = text.len;
        if (d[i] == NULL)
            rc = ERR_TOO_LARGE;
    }
    buf_reset(&text);
    free(kv);
    if (rc != ERR_OK)
        return rc;
    *docs = d;
    *lens = l;
    *n = total;
    return ERR_OK;
}
