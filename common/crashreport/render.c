/*
 * render.c - print a report back: as JSON (the model) and as Apple crash-report text.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashreport/crashreport.h"

/* ---- JSON -------------------------------------------------------------------------------------- */

static void json_str_or_null(buf *o, const char *s)
{
    if (s == NULL)
        buf_append_str(o, "null");
    else
        buf_append_json_str(o, s, strlen(s));
}

static void json_key(buf *o, const char *key, bool *first)
{
    if (!*first)
        buf_putc(o, ',');
    *first = false;
    buf_append_json_str(o, key, strlen(key));
    buf_putc(o, ':');
}

static void json_kv_str(buf *o, const char *key, const char *v, bool *first)
{
    json_key(o, key, first);
    json_str_or_null(o, v);
}

static void json_addr(buf *o, uint64_t a)
{
    buf_printf(o, "\"0x%" PRIx64 "\"", a);
}

static void json_symbols(buf *o, const crashreport_symbol *s, size_t n)
{
    buf_putc(o, '[');
    for (size_t i = 0; i < n; i++) {
        bool first = true;
        if (i > 0)
            buf_putc(o, ',');
        buf_putc(o, '{');
        json_kv_str(o, "function", s[i].function, &first);
        json_kv_str(o, "mangled", s[i].mangled, &first);
        json_kv_str(o, "file", s[i].file, &first);
        json_key(o, "line", &first);
        if (s[i].line > 0)
            buf_printf(o, "%u", s[i].line);
        else
            buf_append_str(o, "null");
        json_key(o, "inlined", &first);
        buf_append_str(o, s[i].inlined ? "true" : "false");
        json_key(o, "offset", &first);
        buf_printf(o, "%" PRIu64, s[i].offset);
        buf_putc(o, '}');
    }
    buf_putc(o, ']');
}

static void json_frames(buf *o, const crashreport *r, const crashreport_frame *fs, size_t n)
{
    buf_putc(o, '[');
    for (size_t i = 0; i < n; i++) {
        const crashreport_frame *f = &fs[i];
        bool first = true;
        if (i > 0)
            buf_putc(o, ',');
        buf_putc(o, '{');
        json_key(o, "index", &first);
        buf_printf(o, "%u", f->index);
        json_kv_str(o, "image", f->image_name, &first);
        json_key(o, "image_index", &first);
        if (f->image >= 0)
            buf_printf(o, "%d", f->image);
        else
            buf_append_str(o, "null");
        json_key(o, "address", &first);
        json_addr(o, f->addr);
        json_kv_str(o, "symbol", f->symbol, &first);
        json_kv_str(o, "mangled", f->symbol_mangled, &first);
        json_key(o, "symbol_offset", &first);
        if (f->has_symbol_offset)
            buf_printf(o, "%" PRIu64, f->symbol_offset);
        else
            buf_append_str(o, "null");
        json_kv_str(o, "file", f->file, &first);
        json_key(o, "line", &first);
        if (f->line > 0)
            buf_printf(o, "%u", f->line);
        else
            buf_append_str(o, "null");
        if (f->ngiven_inlines > 0) {
            json_key(o, "report_inlines", &first);
            json_symbols(o, f->given_inlines, f->ngiven_inlines);
        }
        if (r->symbolicated) {
            json_kv_str(o, "symbolicated", crashreport_sym_status_name(f->sym_status), &first);
            json_key(o, "lookup_address", &first);
            if (f->sym_status == CRASHREPORT_SYM_OK || f->sym_status == CRASHREPORT_SYM_NOT_FOUND)
                json_addr(o, f->lookup_addr);
            else
                buf_append_str(o, "null");
            json_key(o, "symbols", &first);
            json_symbols(o, f->symbols, f->nsymbols);
        }
        buf_putc(o, '}');
    }
    buf_putc(o, ']');
}

void crashreport_render_json(buf *o, const crashreport *r)
{
    const crashreport_metadata *m = &r->meta;
    bool first = true;
    buf_putc(o, '{');
    json_kv_str(o, "format", crashreport_format_name(r->format), &first);
    json_kv_str(o, "kind", crashreport_kind_name(r->kind), &first);
    json_key(o, "metadata", &first);
    {
        bool f = true;
        buf_putc(o, '{');
        json_kv_str(o, "incident_id", m->incident_id, &f);
        json_kv_str(o, "process", m->process, &f);
        json_kv_str(o, "process_path", m->process_path, &f);
        json_kv_str(o, "app_name", m->app_name, &f);
        json_kv_str(o, "bundle_id", m->bundle_id, &f);
        json_kv_str(o, "app_version", m->app_version, &f);
        json_kv_str(o, "build", m->build, &f);
        json_kv_str(o, "version_text", m->version_text, &f);
        json_kv_str(o, "code_type", m->code_type, &f);
        json_kv_str(o, "arch", m->arch, &f);
        json_kv_str(o, "os_version", m->os_version, &f);
        json_kv_str(o, "hardware_model", m->hardware_model, &f);
        json_kv_str(o, "date", m->date, &f);
        json_kv_str(o, "report_version", m->report_version, &f);
        json_kv_str(o, "parent_process", m->parent_process, &f);
        json_kv_str(o, "exception_type", m->exception_type, &f);
        json_kv_str(o, "exception_codes", m->exception_codes, &f);
        json_kv_str(o, "exception_subtype", m->exception_subtype, &f);
        json_kv_str(o, "exception_reason", m->exception_reason, &f);
        json_kv_str(o, "signal", m->signal, &f);
        json_kv_str(o, "termination_reason", m->termination_reason, &f);
        json_kv_str(o, "app_specific_info", m->app_specific_info, &f);
        json_key(o, "crashed_thread", &f);
        if (m->crashed_thread >= 0)
            buf_printf(o, "%d", m->crashed_thread);
        else
            buf_append_str(o, "null");
        buf_putc(o, '}');
    }
    json_key(o, "threads", &first);
    buf_putc(o, '[');
    for (size_t i = 0; i < r->nthreads; i++) {
        const crashreport_thread *t = &r->threads[i];
        bool f = true;
        if (i > 0)
            buf_putc(o, ',');
        buf_putc(o, '{');
        json_key(o, "index", &f);
        buf_printf(o, "%u", t->index);
        json_kv_str(o, "name", t->name, &f);
        json_kv_str(o, "queue", t->queue, &f);
        json_key(o, "crashed", &f);
        buf_append_str(o, t->crashed ? "true" : "false");
        json_key(o, "frames", &f);
        json_frames(o, r, t->frames, t->nframes);
        buf_putc(o, '}');
    }
    buf_putc(o, ']');
    json_key(o, "last_exception_backtrace", &first);
    if (r->has_leb)
        json_frames(o, r, r->leb, r->nleb);
    else
        buf_append_str(o, "null");
    json_key(o, "images", &first);
    buf_putc(o, '[');
    for (size_t i = 0; i < r->nimages; i++) {
        const crashreport_image *im = &r->images[i];
        bool f = true;
        if (i > 0)
            buf_putc(o, ',');
        buf_putc(o, '{');
        json_kv_str(o, "name", im->name, &f);
        json_kv_str(o, "uuid", im->uuid[0] ? im->uuid : NULL, &f);
        json_kv_str(o, "arch", im->arch, &f);
        json_key(o, "load_address", &f);
        json_addr(o, im->load_addr);
        json_key(o, "end_address", &f);
        if (im->end_addr != 0)
            json_addr(o, im->end_addr);
        else
            buf_append_str(o, "null");
        json_kv_str(o, "path", im->path, &f);
        json_kv_str(o, "version", im->version, &f);
        json_key(o, "user", &f);
        buf_append_str(o, im->user ? "true" : "false");
        json_key(o, "in_app", &f);
        buf_append_str(o, im->in_app == CRASHREPORT_IN_APP_YES  ? "true"
                          : im->in_app == CRASHREPORT_IN_APP_NO ? "false"
                                                                : "null");
        buf_putc(o, '}');
    }
    buf_putc(o, ']');
    json_key(o, "errors", &first);
    buf_putc(o, '[');
    for (size_t i = 0; i < r->nerrors; i++) {
        if (i > 0)
            buf_putc(o, ',');
        json_str_or_null(o, r->errors[i]);
    }
    buf_putc(o, ']');
    if (r->symbolicated) {
        json_key(o, "missing_uuids", &first);
        buf_putc(o, '[');
        for (size_t i = 0; i < r->nmissing_uuids; i++) {
            if (i > 0)
                buf_putc(o, ',');
            json_str_or_null(o, r->missing_uuids[i]);
        }
        buf_putc(o, ']');
    }
    buf_putc(o, '}');
}

/* ---- text ----------------------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s != NULL && s[1] != '\0' ? s + 1 : path;
}

/* symbolicatecrash style: "function (File.m:42)", "function + 12" without a file. */
static void symbol_text(buf *o, const crashreport_symbol *s, bool from_symbolication)
{
    buf_append_str(o, s->function);
    if (s->file != NULL) {
        buf_printf(o, " (%s", base_name(s->file));
        if (s->line > 0)
            buf_printf(o, ":%u", s->line);
        buf_putc(o, ')');
    } else if (!s->inlined && (s->offset > 0 || !from_symbolication)) {
        buf_printf(o, " + %" PRIu64, s->offset);
    }
    if (s->inlined)
        buf_append_str(o, " [inlined]");
}

/* The frame's symbol as the report gave it, for synthesized text. */
static void given_text(buf *o, const crashreport *r, const crashreport_frame *f)
{
    if (f->symbol != NULL) {
        buf_append_str(o, f->symbol);
        if (f->has_symbol_offset)
            buf_printf(o, " + %" PRIu64, f->symbol_offset);
        if (f->file != NULL) {
            buf_printf(o, " (%s", base_name(f->file));
            if (f->line > 0)
                buf_printf(o, ":%u", f->line);
            buf_putc(o, ')');
        }
    } else if (f->image >= 0 && f->addr >= r->images[f->image].load_addr) {
        const crashreport_image *im = &r->images[f->image];
        buf_printf(o, "0x%" PRIx64 " + %" PRIu64, im->load_addr, f->addr - im->load_addr);
    } else {
        buf_append_str(o, "???");
    }
}

static void frame_prefix(buf *o, const crashreport_frame *f)
{
    const char *name = f->image_name != NULL ? f->image_name : "???";
    buf_printf(o, "%-3u %-30s 0x%016" PRIx64 " ", f->index, name, f->addr);
}

/* Every line of one frame, synthesized (no source text). */
static void frame_lines(buf *o, const crashreport *r, const crashreport_frame *f)
{
    if (f->sym_status == CRASHREPORT_SYM_OK && f->nsymbols > 0) {
        for (uint32_t j = 0; j < f->nsymbols; j++) {
            frame_prefix(o, f);
            symbol_text(o, &f->symbols[j], true);
            buf_putc(o, '\n');
        }
        return;
    }
    for (uint32_t j = 0; j < f->ngiven_inlines; j++) {
        frame_prefix(o, f);
        symbol_text(o, &f->given_inlines[j], false);
        buf_putc(o, '\n');
    }
    frame_prefix(o, f);
    given_text(o, r, f);
    buf_putc(o, '\n');
}

typedef struct {
    const crashreport_frame *f;
    size_t order;
} src_frame;

static int src_cmp(const void *x, const void *y)
{
    const src_frame *a = x, *b = y;
    if (a->f->src_line != b->f->src_line)
        return a->f->src_line < b->f->src_line ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* apple-text: the original text with symbolicated frames' symbol text replaced. */
static void render_source(buf *o, const crashreport *r)
{
    size_t n = r->nleb;
    for (size_t t = 0; t < r->nthreads; t++)
        n += r->threads[t].nframes;
    src_frame *fs = malloc((n ? n : 1) * sizeof *fs);
    size_t k = 0;
    if (fs == NULL) {
        buf_append(o, r->text, r->text_len); /* no memory for the merge: print unchanged */
        return;
    }
    for (size_t i = 0; i < r->nleb; i++, k++)
        fs[k] = (src_frame){&r->leb[i], k};
    for (size_t t = 0; t < r->nthreads; t++)
        for (size_t i = 0; i < r->threads[t].nframes; i++, k++)
            fs[k] = (src_frame){&r->threads[t].frames[i], k};
    qsort(fs, n, sizeof *fs, src_cmp);
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        const crashreport_frame *f = fs[i].f;
        if (f->src_end == 0 || f->src_line < pos)
            continue;
        if (f->src_list) {
            /* one parenthesised address list: one line per frame in its place */
            size_t j = i;
            buf_append(o, r->text + pos, f->src_line - pos);
            for (; j < n && fs[j].f->src_list && fs[j].f->src_line == f->src_line; j++) {
                frame_lines(o, r, fs[j].f);
            }
            if (o->len > 0 && o->data[o->len - 1] == '\n')
                o->len--; /* the list line's own newline follows */
            pos = f->src_end;
            i = j - 1;
            continue;
        }
        if (f->sym_status != CRASHREPORT_SYM_OK || f->nsymbols == 0) {
            /* a symbolicated report shows a mangled name the report gave in its display
             * form, in its place (a parsed report renders back byte for byte) */
            size_t m = r->symbolicated && f->symbol_mangled != NULL ? strlen(f->symbol_mangled) : 0;
            if (m > 0 && f->src_sym >= pos && f->src_sym + m <= f->src_end &&
                memcmp(r->text + f->src_sym, f->symbol_mangled, m) == 0) {
                buf_append(o, r->text + pos, f->src_sym - pos);
                buf_append_str(o, f->symbol);
                pos = f->src_sym + m;
            }
            continue;
        }
        buf_append(o, r->text + pos, f->src_sym - pos);
        for (uint32_t j = 0; j < f->nsymbols; j++) {
            if (j > 0) {
                buf_putc(o, '\n');
                buf_append(o, r->text + f->src_line, f->src_sym - f->src_line);
            }
            symbol_text(o, &f->symbols[j], true);
        }
        pos = f->src_end;
    }
    buf_append(o, r->text + pos, r->text_len - pos);
    free(fs);
}

static void header_line(buf *o, const char *key, const char *v)
{
    if (v != NULL)
        buf_printf(o, "%-20s %s\n", key, v);
}

static void render_synth(buf *o, const crashreport *r)
{
    const crashreport_metadata *m = &r->meta;
    header_line(o, "Incident Identifier:", m->incident_id);
    header_line(o, "Hardware Model:", m->hardware_model);
    header_line(o, "Process:", m->process);
    header_line(o, "Path:", m->process_path);
    header_line(o, "Identifier:", m->bundle_id);
    if (m->app_version != NULL || m->build != NULL)
        buf_printf(o, "%-20s %s (%s)\n", "Version:", m->app_version ? m->app_version : "???",
                   m->build ? m->build : "???");
    header_line(o, "Code Type:", m->code_type ? m->code_type : m->arch);
    header_line(o, "Parent Process:", m->parent_process);
    buf_putc(o, '\n');
    header_line(o, "Date/Time:", m->date);
    header_line(o, "OS Version:", m->os_version);
    buf_printf(o, "%-20s %s (%s)\n", "Report Format:", crashreport_format_name(r->format),
               crashreport_kind_name(r->kind));
    buf_putc(o, '\n');
    if (m->exception_type != NULL) {
        if (m->signal != NULL && strcmp(m->signal, m->exception_type) != 0)
            buf_printf(o, "%-20s %s (%s)\n", "Exception Type:", m->exception_type, m->signal);
        else
            header_line(o, "Exception Type:", m->exception_type);
    }
    header_line(o, "Exception Codes:", m->exception_codes);
    header_line(o, "Exception Subtype:", m->exception_subtype);
    header_line(o, "Exception Reason:", m->exception_reason);
    header_line(o, "Termination Reason:", m->termination_reason);
    if (m->crashed_thread >= 0)
        buf_printf(o, "%-20s %d\n", "Triggered by Thread:", m->crashed_thread);
    buf_putc(o, '\n');
    if (m->app_specific_info != NULL)
        buf_printf(o, "Application Specific Information:\n%s\n\n", m->app_specific_info);
    if (r->has_leb) {
        buf_append_str(o, "Last Exception Backtrace:\n");
        for (size_t i = 0; i < r->nleb; i++)
            frame_lines(o, r, &r->leb[i]);
        buf_putc(o, '\n');
    }
    for (size_t t = 0; t < r->nthreads; t++) {
        const crashreport_thread *th = &r->threads[t];
        if (th->name != NULL)
            buf_printf(o, "Thread %u name:  %s\n", th->index, th->name);
        if (th->queue != NULL)
            buf_printf(o, "Thread %u name:  Dispatch queue: %s\n", th->index, th->queue);
        buf_printf(o, "Thread %u%s:\n", th->index, th->crashed ? " Crashed" : "");
        for (size_t i = 0; i < th->nframes; i++)
            frame_lines(o, r, &th->frames[i]);
        buf_putc(o, '\n');
    }
    buf_append_str(o, "Binary Images:\n");
    for (size_t i = 0; i < r->nimages; i++) {
        const crashreport_image *im = &r->images[i];
        char lo[24], hi[24];
        snprintf(lo, sizeof lo, "0x%" PRIx64, im->load_addr);
        snprintf(hi, sizeof hi, "0x%" PRIx64, im->end_addr);
        buf_printf(o, "%18s - %18s %s%s %s  <%s> %s\n", lo, hi, im->user ? "+" : "",
                   im->name ? im->name : "???", im->arch ? im->arch : "unknown-arch",
                   im->uuid[0] ? im->uuid : "00000000-0000-0000-0000-000000000000",
                   im->path ? im->path : "???");
    }
}

void crashreport_render_text(buf *o, const crashreport *r)
{
    if (r->format == CRASHREPORT_FORMAT_APPLE_TEXT && r->text != NULL)
        render_source(o, r);
    else
        render_synth(o, r);
}
