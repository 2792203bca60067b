/*
 * render.c - print a report back: as JSON (the model) and as Apple crash-report text.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "crashreport/crashreport.h"
#include "crashreport/crashreport_internal.h"

/* ---- JSON -------------------------------------------------------------------------------------- */

/* An optional number, after its key: null when absent. */
static void json_opt_uint(jsonw *w, bool present, uint64_t v)
{
    if (present)
        jsonw_uint(w, v);
    else
        jsonw_null(w);
}

static void json_symbols(jsonw *w, const crashreport_symbol *s, size_t n)
{
    jsonw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(w);
        jsonw_kstr_lit(w, "function", s[i].function);
        jsonw_kstr_lit(w, "mangled", s[i].mangled);
        jsonw_kstr_lit(w, "file", s[i].file);
        jsonw_key_lit(w, "line");
        json_opt_uint(w, s[i].line > 0, s[i].line);
        jsonw_kbool_lit(w, "inlined", s[i].inlined);
        jsonw_kuint_lit(w, "offset", s[i].offset);
        jsonw_object_end(w);
    }
    jsonw_array_end(w);
}

static void json_frames(jsonw *w, const crashreport *r, const crashreport_frame *fs, size_t n)
{
    jsonw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        const crashreport_frame *f = &fs[i];
        jsonw_object_begin(w);
        jsonw_kuint_lit(w, "index", f->index);
        jsonw_kstr_lit(w, "image", f->image_name);
        jsonw_key_lit(w, "image_index");
        if (f->image >= 0)
            jsonw_int(w, f->image);
        else
            jsonw_null(w);
        jsonw_khex_lit(w, "address", f->addr);
        jsonw_kstr_lit(w, "symbol", f->symbol);
        jsonw_kstr_lit(w, "mangled", f->symbol_mangled);
        jsonw_key_lit(w, "symbol_offset");
        json_opt_uint(w, f->has_symbol_offset, f->symbol_offset);
        jsonw_kstr_lit(w, "file", f->file);
        jsonw_key_lit(w, "line");
        json_opt_uint(w, f->line > 0, f->line);
        if (r->tree) {
            jsonw_key_lit(w, "parent");
            if (f->parent >= 0)
                jsonw_int(w, f->parent);
            else
                jsonw_null(w);
            jsonw_kuint_lit(w, "depth", f->depth);
            jsonw_kuint_lit(w, "sample_count", f->sample_count);
        }
        if (f->found != CRASHREPORT_FOUND_GIVEN) /* minidumps: how the walk found it */
            jsonw_kstr_lit(w, "found", crashreport_found_name(f->found));
        if (f->ngiven_inlines > 0) {
            jsonw_key_lit(w, "report_inlines");
            json_symbols(w, f->given_inlines, f->ngiven_inlines);
        }
        if (r->symbolicated) {
            jsonw_kstr_lit(w, "symbolicated", crashreport_sym_status_name(f->sym_status));
            jsonw_key_lit(w, "lookup_address");
            if (f->sym_status == CRASHREPORT_SYM_OK || f->sym_status == CRASHREPORT_SYM_NOT_FOUND)
                jsonw_hex(w, f->lookup_addr);
            else
                jsonw_null(w);
            jsonw_key_lit(w, "symbols");
            json_symbols(w, f->symbols, f->nsymbols);
        }
        jsonw_object_end(w);
    }
    jsonw_array_end(w);
}

/* An array of strings, after its key. */
static void json_strings(jsonw *w, const char *const *v, size_t n)
{
    jsonw_array_begin(w);
    for (size_t i = 0; i < n; i++)
        jsonw_str(w, v[i]);
    jsonw_array_end(w);
}

void crashreport_render_json(buf *o, const crashreport *r)
{
    const crashreport_metadata *m = &r->meta;
    jsonw w;
    jsonw_init(&w, o);
    jsonw_object_begin(&w);
    jsonw_kstr_lit(&w, "format", crashreport_format_name(r->format));
    jsonw_kstr_lit(&w, "kind", crashreport_kind_name(r->kind));
    if (r->tree) {
        jsonw_kbool_lit(&w, "tree", true);
        jsonw_kbool_lit(&w, "partial", r->partial);
    }
    jsonw_key_lit(&w, "metadata");
    jsonw_object_begin(&w);
    jsonw_kstr_lit(&w, "incident_id", m->incident_id);
    jsonw_kstr_lit(&w, "process", m->process);
    jsonw_kstr_lit(&w, "process_path", m->process_path);
    jsonw_kstr_lit(&w, "app_name", m->app_name);
    jsonw_kstr_lit(&w, "bundle_id", m->bundle_id);
    jsonw_kstr_lit(&w, "app_version", m->app_version);
    jsonw_kstr_lit(&w, "build", m->build);
    jsonw_kstr_lit(&w, "version_text", m->version_text);
    jsonw_kstr_lit(&w, "code_type", m->code_type);
    jsonw_kstr_lit(&w, "arch", m->arch);
    jsonw_kstr_lit(&w, "os_version", m->os_version);
    jsonw_kstr_lit(&w, "hardware_model", m->hardware_model);
    jsonw_kstr_lit(&w, "date", m->date);
    jsonw_kstr_lit(&w, "report_version", m->report_version);
    jsonw_kstr_lit(&w, "parent_process", m->parent_process);
    jsonw_kstr_lit(&w, "exception_type", m->exception_type);
    jsonw_kstr_lit(&w, "exception_codes", m->exception_codes);
    jsonw_kstr_lit(&w, "exception_subtype", m->exception_subtype);
    jsonw_kstr_lit(&w, "exception_reason", m->exception_reason);
    jsonw_kstr_lit(&w, "signal", m->signal);
    jsonw_kstr_lit(&w, "termination_reason", m->termination_reason);
    jsonw_kstr_lit(&w, "app_specific_info", m->app_specific_info);
    jsonw_key_lit(&w, "crashed_thread");
    if (m->crashed_thread >= 0)
        jsonw_int(&w, m->crashed_thread);
    else
        jsonw_null(&w);
    /* keys only hangs and MetricKit reports have: present only when known */
    if (m->hang_duration_ms > 0)
        jsonw_kuint_lit(&w, "hang_duration_ms", m->hang_duration_ms);
    if (m->diagnostic != NULL)
        jsonw_kstr_lit(&w, "diagnostic", m->diagnostic);
    if (m->exception_detail != NULL)
        jsonw_kraw_lit(&w, "exception_detail", m->exception_detail); /* JSON made by the parser */
    if (m->crash_image != NULL)
        jsonw_kstr_lit(&w, "crash_image", m->crash_image);
    if (m->release != NULL)
        jsonw_kstr_lit(&w, "release", m->release);
    if (m->dist != NULL)
        jsonw_kstr_lit(&w, "dist", m->dist);
    jsonw_object_end(&w);
    jsonw_key_lit(&w, "threads");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < r->nthreads; i++) {
        const crashreport_thread *t = &r->threads[i];
        jsonw_object_begin(&w);
        jsonw_kuint_lit(&w, "index", t->index);
        jsonw_kstr_lit(&w, "name", t->name);
        jsonw_kstr_lit(&w, "queue", t->queue);
        jsonw_kbool_lit(&w, "crashed", t->crashed);
        if (r->tree)
            jsonw_kuint_lit(&w, "sample_count", t->sample_count);
        if (t->nregisters > 0) { /* only reports that give registers (plcrash) */
            jsonw_key_lit(&w, "registers");
            jsonw_object_begin(&w);
            for (size_t k = 0; k < t->nregisters; k++)
                jsonw_khex(&w, t->registers[k].name, t->registers[k].value);
            jsonw_object_end(&w);
        }
        jsonw_key_lit(&w, "frames");
        json_frames(&w, r, t->frames, t->nframes);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_key_lit(&w, "last_exception_backtrace");
    if (r->has_leb)
        json_frames(&w, r, r->leb, r->nleb);
    else
        jsonw_null(&w);
    if (r->ncauses > 0) { /* only reports that chain errors */
        jsonw_key_lit(&w, "causes");
        jsonw_array_begin(&w);
        for (size_t i = 0; i < r->ncauses; i++) {
            jsonw_object_begin(&w);
            jsonw_kstr_lit(&w, "type", r->causes[i].type);
            jsonw_kstr_lit(&w, "reason", r->causes[i].reason);
            jsonw_key_lit(&w, "frames");
            json_frames(&w, r, r->causes[i].frames, r->causes[i].nframes);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
    }
    jsonw_key_lit(&w, "images");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < r->nimages; i++) {
        const crashreport_image *im = &r->images[i];
        jsonw_object_begin(&w);
        jsonw_kstr_lit(&w, "name", im->name);
        jsonw_kstr_lit(&w, "uuid", im->uuid[0] ? im->uuid : NULL);
        jsonw_kstr_lit(&w, "arch", im->arch);
        jsonw_khex_lit(&w, "load_address", im->load_addr);
        jsonw_key_lit(&w, "end_address");
        if (im->end_addr != 0)
            jsonw_hex(&w, im->end_addr);
        else
            jsonw_null(&w);
        jsonw_kstr_lit(&w, "path", im->path);
        jsonw_kstr_lit(&w, "version", im->version);
        jsonw_kbool_lit(&w, "user", im->user);
        if (im->vmaddr != 0)
            jsonw_khex_lit(&w, "vmaddr", im->vmaddr);
        jsonw_key_lit(&w, "in_app");
        if (im->in_app == CRASHREPORT_IN_APP_YES || im->in_app == CRASHREPORT_IN_APP_NO)
            jsonw_bool(&w, im->in_app == CRASHREPORT_IN_APP_YES);
        else
            jsonw_null(&w);
        if (r->format == CRASHREPORT_FORMAT_MINIDUMP) /* whether the walk had its unwind info */
            jsonw_kbool_lit(&w, "unwind", im->has_unwind);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_key_lit(&w, "errors");
    json_strings(&w, (const char *const *)r->errors, r->nerrors);
    if (r->nannotations > 0) { /* only minidumps carry annotations */
        jsonw_key_lit(&w, "annotations");
        jsonw_array_begin(&w);
        for (size_t i = 0; i < r->nannotations; i++) {
            jsonw_object_begin(&w);
            jsonw_kstr_lit(&w, "key", r->annotations[i].key);
            jsonw_kstr_lit(&w, "value", r->annotations[i].value);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
    }
    if (r->symbolicated) {
        jsonw_key_lit(&w, "missing_uuids");
        json_strings(&w, (const char *const *)r->missing_uuids, r->nmissing_uuids);
    }
    jsonw_object_end(&w);
}

/* ---- text ----------------------------------------------------------------------------------- */

/* symbolicatecrash style: "function (File.m:42)", "function + 12" without a file. */
static void symbol_text(buf *o, const crashreport_symbol *s, bool from_symbolication)
{
    buf_append_str(o, s->function);
    if (s->file != NULL) {
        buf_printf(o, " (%s", cr_basename(s->file));
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
            buf_printf(o, " (%s", cr_basename(f->file));
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

/* The end of a frame's line: how a minidump's walk found it ("  [scan]"), as
 * minidump_stackwalk shows its trust; nothing for frames the report gave. */
static void found_text(buf *o, const crashreport_frame *f)
{
    if (f->found != CRASHREPORT_FOUND_GIVEN)
        buf_printf(o, "  [%s]", crashreport_found_name(f->found));
}

/* Every line of one frame, synthesized (no source text). */
static void frame_lines(buf *o, const crashreport *r, const crashreport_frame *f)
{
    if (f->sym_status == CRASHREPORT_SYM_OK && f->nsymbols > 0) {
        for (uint32_t j = 0; j < f->nsymbols; j++) {
            frame_prefix(o, f);
            symbol_text(o, &f->symbols[j], true);
            if (j + 1 == f->nsymbols)
                found_text(o, f);
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
    found_text(o, f);
    buf_putc(o, '\n');
}

/* A call-tree frame as Apple's symbolicated sample files print it (atos without -i: the
 * concrete function with its own file:line), "FUNC (in IMAGE) (FILE:LINE) [0xADDR]"; a frame
 * nobody symbolicated keeps what the report gave. */
static void sample_frame_text(buf *o, const crashreport *r, const crashreport_frame *f)
{
    const char *image = f->image_name;
    if (image == NULL && f->image >= 0)
        image = r->images[f->image].name;
    if (f->sym_status == CRASHREPORT_SYM_OK && f->nsymbols > 0) {
        const crashreport_symbol *s = &f->symbols[f->nsymbols - 1]; /* the concrete function */
        buf_printf(o, "%s (in %s)", s->function, image ? image : "???");
        if (s->file != NULL) {
            buf_printf(o, " (%s", cr_basename(s->file));
            if (s->line > 0)
                buf_printf(o, ":%u", s->line);
            buf_putc(o, ')');
        } else {
            buf_printf(o, " + %" PRIu64, s->offset);
        }
    } else {
        buf_printf(o, "%s  (in %s)", f->symbol ? f->symbol : "???", image ? image : "???");
        if (f->has_symbol_offset)
            buf_printf(o, " + %" PRIu64, f->symbol_offset);
        else if (f->image >= 0 && f->addr >= r->images[f->image].load_addr)
            buf_printf(o, "  load address 0x%" PRIx64 " + 0x%" PRIx64, r->images[f->image].load_addr,
                       f->addr - r->images[f->image].load_addr);
    }
    buf_printf(o, " [0x%" PRIx64 "]", f->addr);
}

/* A call tree without source text (MetricKit): sample's "Call graph:" layout. */
static void render_tree_synth(buf *o, const crashreport *r)
{
    buf_append_str(o, "Call graph:\n");
    for (size_t t = 0; t < r->nthreads; t++) {
        const crashreport_thread *th = &r->threads[t];
        buf_printf(o, "    %" PRIu64 " Thread_%u", th->sample_count, th->index);
        if (th->crashed)
            buf_append_str(o, "   (attributed)");
        if (th->queue != NULL)
            buf_printf(o, "   DispatchQueue_1: %s", th->queue);
        buf_putc(o, '\n');
        for (size_t i = 0; i < th->nframes; i++) {
            const crashreport_frame *f = &th->frames[i];
            buf_append_str(o, "    ");
            for (uint32_t d = 0; d <= f->depth && d < 4096; d++)
                buf_append_str(o, d == 0 ? "+ " : "  ");
            buf_printf(o, "%" PRIu64 " ", f->sample_count);
            sample_frame_text(o, r, f);
            buf_putc(o, '\n');
        }
    }
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
    for (size_t c = 0; c < r->ncauses; c++)
        n += r->causes[c].nframes;
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
    for (size_t c = 0; c < r->ncauses; c++)
        for (size_t i = 0; i < r->causes[c].nframes; i++, k++)
            fs[k] = (src_frame){&r->causes[c].frames[i], k};
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
        if (r->format == CRASHREPORT_FORMAT_SAMPLE) {
            sample_frame_text(o, r, f);
            pos = f->src_end;
            continue;
        }
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

static void render_synth_header(buf *o, const crashreport *r)
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
    if (m->hang_duration_ms > 0)
        buf_printf(o, "%-20s %" PRIu64 " ms\n", "Hang Duration:", m->hang_duration_ms);
    if (m->diagnostic != NULL)
        header_line(o, "MetricKit:", m->diagnostic);
    if (m->exception_detail != NULL)
        header_line(o, "Diagnostic Data:", m->exception_detail);
    if (m->hang_duration_ms > 0 || m->diagnostic != NULL)
        buf_putc(o, '\n');
    if (m->app_specific_info != NULL)
        buf_printf(o, "Application Specific Information:\n%s\n\n", m->app_specific_info);
}

static void render_images(buf *o, const crashreport *r);

/* The crashed thread's registers (else the first thread's that has any), four a line in the
 * shape Apple prints them: "Thread 0 crashed with ARM Thread State (64-bit):". */
static void render_registers(buf *o, const crashreport *r)
{
    const crashreport_thread *th = NULL;
    for (size_t t = 0; t < r->nthreads && (th == NULL || !th->crashed); t++)
        if (r->threads[t].nregisters > 0 && (th == NULL || r->threads[t].crashed))
            th = &r->threads[t];
    if (th == NULL)
        return;
    const char *arch = r->meta.arch ? r->meta.arch : "";
    const char *state = strncmp(arch, "arm64", 5) == 0 ? "ARM Thread State (64-bit)"
                        : strncmp(arch, "arm", 3) == 0 ? "ARM Thread State (32-bit)"
                        : strncmp(arch, "x86_64", 6) == 0 ? "X86 Thread State (64-bit)"
                        : "Thread State";
    buf_printf(o, "Thread %u%s with %s:\n", th->index, th->crashed ? " crashed" : "", state);
    for (size_t k = 0; k < th->nregisters; k++)
        buf_printf(o, "%6s: 0x%016" PRIx64 "%s", th->registers[k].name, th->registers[k].value,
                   k % 4 == 3 || k + 1 == th->nregisters ? "\n" : "  ");
    buf_putc(o, '\n');
}

/* The errors the exception was caused by, after its backtrace, nearest first, each as
 * "Caused by: Type: reason" and its own frames as backtrace lines (how Sentry and Java-style
 * traces chain them; Apple's format has no place for them). */
static void render_causes(buf *o, const crashreport *r)
{
    for (size_t c = 0; c < r->ncauses; c++) {
        const crashreport_cause *k = &r->causes[c];
        buf_printf(o, "Caused by: %s%s%s\n", k->type ? k->type : "",
                   k->type && k->reason ? ": " : "", k->reason ? k->reason : "");
        for (size_t i = 0; i < k->nframes; i++)
            frame_lines(o, r, &k->frames[i]);
        buf_putc(o, '\n');
    }
}

static void render_synth(buf *o, const crashreport *r)
{
    render_synth_header(o, r);
    if (r->has_leb) {
        buf_append_str(o, "Last Exception Backtrace:\n");
        for (size_t i = 0; i < r->nleb; i++)
            frame_lines(o, r, &r->leb[i]);
        buf_putc(o, '\n');
    }
    render_causes(o, r);
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
    render_registers(o, r);
    render_images(o, r);
}

static void render_images(buf *o, const crashreport *r)
{
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
    if ((r->format == CRASHREPORT_FORMAT_APPLE_TEXT || r->format == CRASHREPORT_FORMAT_SAMPLE) &&
        r->text != NULL) {
        render_source(o, r);
    } else if (r->tree) {
        render_synth_header(o, r);
        render_tree_synth(o, r);
        render_images(o, r);
    } else {
        render_synth(o, r);
    }
}
