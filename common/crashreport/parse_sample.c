/*
 * parse_sample.c - macOS `sample` and spindump text: a call tree per thread.
 *
 * sample (/usr/bin/sample, Activity Monitor's "Sample Process"):
 *
 *     Sampling process 93419 for 3 seconds with 1 millisecond of run time between samples
 *     Analysis of sampling App (pid 93419) every 1 millisecond
 *     Process:         App [93419]                       header keys as in crash reports
 *     Code Type:       X86-64
 *     Call graph:
 *         2843 Thread_2293744   DispatchQueue_1: com.apple.main-thread  (serial)
 *         + 2843 start  (in libdyld.dylib) + 1  [0x7fff70df52a5]
 *         +   2843 ???  (in App)  load address 0x1072e7000 + 0xe30  [0x1072e7e30]
 *         +     2843 main (in App) (main.m:57) [0x1072e7e30]        (symbolicated form)
 *         +     ! 12 foo  (in App) + 4  [0x1072e7e34]  main.m:12    (with line info)
 *     Total number in stack ...                           (ignored)
 *     Binary Images:
 *            0x1072e7000 -        0x1072e7fff +App (0) <3457264D-...> /path/App
 *
 * spindump (hang reports, `spindump PID`), heavy or timeline format, first process only:
 *
 *     Command: App / Duration: 2.10s / Steps: 21 (100ms sampling interval)
 *     Process:          App [93419]
 *       Thread 0x1b4c3    DispatchQueue "com.apple.main-thread"(1)    21 samples (1-21)
 *       21  start + 1 (libdyld.dylib + 92165) [0x7fff6b1c5405]
 *         21  ??? (App + 5234) [0x10d0a3472]
 *          *21  ??? (kernel + 12345) [0xffffff80002a1c3a]           ("*": kernel frame)
 *       Binary Images:
 *              0x10d09e000 -        0x10d0a5fff  com.example.App 1.0 (1) <UUID> /path/App
 *
 * The tree comes from indentation: a line indented deeper than the one before is its callee,
 * one at the same column its sibling, a shallower one returns to the ancestor at that column
 * ("+ ! : |" are drawing characters, read as blanks). Every frame line is matched by pcre2
 * (patterns compiled once per process). Bad input never stops the parse: a dedent to a
 * column no ancestor has, callees counting more samples than their caller, or a report that
 * ends inside the call graph are noted in errors and mark the report partial; the frames
 * read so far stay. Memory: the report's arena plus one column stack per thread, bounded by
 * the line length (each level is at least one column deeper).
 *
 * Source: sample(1) and spindump(8) manual pages; the reports in
 * ../shared/real-xcode/macsymbolicator-2021-03/Samples/ and their atos-symbolicated copies.
 */
#include <pthread.h>

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "crashreport/crashreport_internal.h"
#include "crashreport/text_internal.h"

/* "SYMBOL  (in IMAGE) + OFF  [0xADDR]", "???  (in IMAGE)  load address 0xL + 0xOFF  [0xADDR]",
 * "SYMBOL (in IMAGE) (FILE:LINE) [0xADDR]", each optionally followed by "  FILE:LINE". */
static const char PAT_SAMPLE_FRAME[] =
    "^(.+?)[ \\t]+\\(in ([^()]+)\\)"
    "(?:[ \\t]+\\+[ \\t]+([0-9]{1,19})"
    "|[ \\t]+load address 0x([0-9a-fA-F]{1,16}) \\+ 0x([0-9a-fA-F]{1,16})"
    "|[ \\t]+\\(([^()]*):([0-9]{1,9})\\))?"
    "[ \\t]+\\[0x([0-9a-fA-F]{1,16})(?:,0x[0-9a-fA-F]{1,16})*\\]"
    "(?:[ \\t]+(\\S.*):([0-9]{1,9}))?$";

/* spindump: "SYMBOL + OFF (IMAGE + OFF) [0xADDR]", "??? (IMAGE + OFF) [0xADDR]", timeline
 * format adds " 50-72". */
static const char PAT_SPINDUMP_FRAME[] =
    "^(.+?)(?:[ \\t]+\\+[ \\t]+([0-9]{1,19}))?[ \\t]+\\(([^()]+?) \\+ ([0-9]{1,19})\\)"
    "[ \\t]+\\[0x([0-9a-fA-F]{1,16})\\](?:[ \\t]+[0-9]+(?:-[0-9]+)?)?$";

/* no image at all: "??? [0xADDR]" */
static const char PAT_BARE_FRAME[] = "^(.+?)[ \\t]+\\[0x([0-9a-fA-F]{1,16})\\]$";

static pcre2_code *re_sample, *re_spin, *re_bare;
static pthread_once_t patterns_once = PTHREAD_ONCE_INIT;
static bool patterns_ok;

static void compile_patterns(void)
{
    re_sample = cr_regex_compile(PAT_SAMPLE_FRAME);
    re_spin = cr_regex_compile(PAT_SPINDUMP_FRAME);
    re_bare = cr_regex_compile(PAT_BARE_FRAME);
    patterns_ok = re_sample != NULL && re_spin != NULL && re_bare != NULL;
}

/* "3 seconds", "2.10s", "1500ms", "1.5 min" -> ms; 0 if unreadable */
static uint64_t duration_ms(const char *s, size_t n)
{
    uint64_t whole = 0, frac = 0, scale = 1;
    size_t i = cr_parse_dec(s, n, &whole);
    if (i == 0 || whole > UINT64_MAX / 3600000u)
        return 0;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (scale < 1000000) {
                frac = frac * 10 + (uint64_t)(s[i] - '0');
                scale *= 10;
            }
            i++;
        }
    }
    while (i < n && cr_is_blank(s[i]))
        i++;
    uint64_t unit = 1000; /* seconds unless said otherwise */
    if (cr_starts(s + i, n - i, "ms") || cr_starts(s + i, n - i, "milli"))
        unit = 1;
    else if (cr_starts(s + i, n - i, "min"))
        unit = 60000;
    return whole * unit + frac * unit / scale;
}

/* ---- the parser ------------------------------------------------------------------------------ */

typedef struct {
    size_t column; /* where the count starts */
    int32_t frame; /* index in the thread's frames */
} level;

typedef enum {
    S_HEADER,  /* keys until the call graph or the first spindump thread */
    S_GRAPH,   /* call-graph lines (thread headers and frames) */
    S_AFTER,   /* after the graph: summaries we do not read */
    S_IMAGES,  /* Binary Images lines */
    S_DONE,    /* a second spindump process: the rest is other processes */
} sample_state;

typedef struct {
    cr_builder *b;
    pcre2_match_data *md;
    const char *text;
    sample_state state;
    bool spindump;
    size_t lineno;
    size_t processes;       /* "Process:" lines seen */
    size_t thread_i;        /* current thread (index into r->threads), valid if in_thread */
    bool in_thread;
    level *stack;           /* the open ancestors of the next frame, malloc'd */
    size_t depth, cap;
    uint64_t *child_sum;    /* per frame of the current thread: samples of its callees */
    size_t cap_sum;
    bool counts_noted, jump_noted;
    size_t graph_lines;     /* frame and thread lines read */
} sample_parser;

static void set_meta(cr_builder *b, const char **slot, const char *v, size_t n)
{
    if (*slot == NULL && n > 0)
        *slot = cr_strndup(b, v, n);
}

/* One "Key: value" header line (sample and spindump keys). */
static void header_line(sample_parser *p, const char *s, size_t n)
{
    cr_builder *b = p->b;
    crashreport_metadata *m = &b->r->meta;
    if (cr_starts(s, n, "Sampling process ")) {
        /* "Sampling process 93419 for 3 seconds with 1 millisecond of run time ..." */
        const char *f = memmem(s, n, " for ", 5);
        if (f != NULL && m->hang_duration_ms == 0)
            m->hang_duration_ms = duration_ms(f + 5, (size_t)(s + n - f - 5));
        return;
    }
    const char *colon = memchr(s, ':', n < 40 ? n : 40);
    if (colon == NULL)
        return;
    size_t kn = (size_t)(colon - s);
    const char *v = colon + 1;
    size_t vn = n - kn - 1;
    cr_trim(&v, &vn);
#define KEY(k) (kn == sizeof k - 1 && memcmp(s, k, kn) == 0)
    if (KEY("Process")) {
        if (++p->processes > 1 && p->spindump) {
            p->state = S_DONE; /* the next process of a system-wide spindump */
            return;
        }
        size_t pn = vn;
        const char *open = memchr(v, '[', vn);
        if (open != NULL)
            pn = (size_t)(open - v);
        while (pn > 0 && cr_is_blank(v[pn - 1]))
            pn--;
        set_meta(b, &m->process, v, pn);
    } else if (KEY("Command")) {
        set_meta(b, &m->process, v, vn);
    } else if (KEY("Path")) {
        set_meta(b, &m->process_path, v, vn);
    } else if (KEY("Identifier")) {
        set_meta(b, &m->bundle_id, v, vn);
    } else if (KEY("Version")) {
        set_meta(b, &m->version_text, v, vn);
        const char *open = memchr(v, '(', vn);
        size_t an = open ? (size_t)(open - v) : vn;
        while (an > 0 && cr_is_blank(v[an - 1]))
            an--;
        if (an > 0 && !cr_starts(v, an, "???"))
            set_meta(b, &m->app_version, v, an);
        if (open != NULL && vn > 0 && v[vn - 1] == ')' && (size_t)(v + vn - 1 - open - 1) > 0)
            set_meta(b, &m->build, open + 1, (size_t)(v + vn - 1 - open - 1));
    } else if (KEY("Code Type") || KEY("Architecture")) {
        if (m->code_type == NULL) {
            set_meta(b, &m->code_type, v, vn);
            const char *arch = cr_arch_from_code_type(m->code_type);
            if (arch == NULL)
                arch = cr_arch_normalize(v, vn);
            if (m->arch == NULL)
                m->arch = arch;
        }
    } else if (KEY("Parent Process") || KEY("Parent")) {
        set_meta(b, &m->parent_process, v, vn);
    } else if (KEY("Date/Time")) {
        set_meta(b, &m->date, v, vn);
    } else if (KEY("OS Version")) {
        set_meta(b, &m->os_version, v, vn);
    } else if (KEY("Report Version")) {
        set_meta(b, &m->report_version, v, vn);
    } else if (KEY("Hardware model") || KEY("Hardware Model") || KEY("Model")) {
        set_meta(b, &m->hardware_model, v, vn);
    } else if (KEY("Incident Identifier")) {
        set_meta(b, &m->incident_id, v, vn);
    } else if (KEY("Duration")) {
        m->hang_duration_ms = duration_ms(v, vn);
    } else if (KEY("Steps") || KEY("Data Source")) {
        p->spindump = true;
    }
#undef KEY
}

/* "Thread_2293744   DispatchQueue_1: com.apple.main-thread  (serial)",
 * "Thread_2293744: Main Thread   DispatchQueue_1: ...", spindump
 * "Thread 0x1b4c3    DispatchQueue \"com.apple.main-thread\"(1)    21 samples (1-21) ...",
 * "Thread 0x1b4c4    Thread name \"worker\"    21 samples (1-21)". */
static bool thread_line(sample_parser *p, const char *s, size_t n, uint64_t count, bool has_count)
{
    cr_builder *b = p->b;
    bool sample = cr_starts(s, n, "Thread_");
    if (!sample && !cr_starts(s, n, "Thread 0x"))
        return false;
    crashreport_thread *t = cr_add_thread(b);
    if (t == NULL)
        return true;
    t->index = (uint32_t)(b->r->nthreads - 1);
    t->sample_count = has_count ? count : 0;
    p->thread_i = b->r->nthreads - 1;
    p->in_thread = true;
    p->depth = 0;
    p->graph_lines++;
    size_t i = sample ? 7 : 9;
    while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != ':')
        i++;
    const char *rest = s + i;
    size_t rn = n - i;
    if (sample) {
        /* name: after "Thread_N:" up to "DispatchQueue_"; queue after "DispatchQueue_N:" */
        const char *dq = memmem(rest, rn, "DispatchQueue_", 14);
        const char *name = rest;
        size_t nn = dq ? (size_t)(dq - rest) : rn;
        if (nn > 0 && name[0] == ':')
            name++, nn--;
        cr_trim(&name, &nn);
        if (nn > 0)
            t->name = cr_strndup(b, name, nn);
        if (dq != NULL) {
            const char *c = memchr(dq, ':', (size_t)(s + n - dq));
            if (c != NULL) {
                const char *q = c + 1;
                size_t qn = (size_t)(s + n - q);
                const char *paren = memmem(q, qn, "  (", 3);
                if (paren != NULL)
                    qn = (size_t)(paren - q);
                cr_trim(&q, &qn);
                if (qn > 0)
                    t->queue = cr_strndup(b, q, qn);
            }
        }
    } else {
        const char *dq = memmem(rest, rn, "DispatchQueue \"", 15);
        if (dq != NULL) {
            const char *q = dq + 15;
            const char *e = memchr(q, '"', (size_t)(s + n - q));
            if (e != NULL && e > q)
                t->queue = cr_strndup(b, q, (size_t)(e - q));
        }
        const char *tn = memmem(rest, rn, "Thread name \"", 13);
        if (tn != NULL) {
            const char *q = tn + 13;
            const char *e = memchr(q, '"', (size_t)(s + n - q));
            if (e != NULL && e > q)
                t->name = cr_strndup(b, q, (size_t)(e - q));
        }
        const char *smp = memmem(rest, rn, " samples (", 10);
        if (smp != NULL) {
            const char *d = smp;
            while (d > rest && d[-1] >= '0' && d[-1] <= '9')
                d--;
            uint64_t c;
            if (d < smp && cr_parse_dec(d, (size_t)(smp - d), &c) == (size_t)(smp - d))
                t->sample_count = c;
        }
    }
    return true;
}

static void note_partial(sample_parser *p, bool *once, const char *what)
{
    p->b->r->partial = true;
    if (!*once)
        cr_note(p->b, "line %zu: %s", p->lineno, what);
    *once = true;
}

/* The frame text after the count: fills f; false if no pattern reads it. */
static bool frame_text(sample_parser *p, crashreport_frame *f, const char *s, size_t n)
{
    cr_builder *b = p->b;
    const char *g = NULL;
    size_t gn = 0;
    uint64_t v;
    const char *sym = NULL;
    size_t symn = 0;
    if (pcre2_match(re_sample, (PCRE2_SPTR)s, n, 0, 0, p->md, NULL) >= 0) {
        cr_regex_group(p->md, 1, s, &sym, &symn);
        if (cr_regex_group(p->md, 2, s, &g, &gn))
            f->image_name = cr_strndup(b, g, gn);
        if (cr_regex_group(p->md, 3, s, &g, &gn) && cr_parse_dec(g, gn, &v) == gn) {
            f->symbol_offset = v;
            f->has_symbol_offset = true;
        }
        if (cr_regex_group(p->md, 6, s, &g, &gn) && gn > 0) {
            f->file = cr_strndup(b, g, gn);
            if (cr_regex_group(p->md, 7, s, &g, &gn) && cr_parse_dec(g, gn, &v) == gn && v < UINT32_MAX)
                f->line = (uint32_t)v;
        } else if (cr_regex_group(p->md, 9, s, &g, &gn)) {
            f->file = cr_strndup(b, g, gn);
            if (cr_regex_group(p->md, 10, s, &g, &gn) && cr_parse_dec(g, gn, &v) == gn && v < UINT32_MAX)
                f->line = (uint32_t)v;
        }
        cr_regex_group(p->md, 8, s, &g, &gn);
        (void)cr_parse_hex(g, gn, &f->addr); /* the pattern took 1-16 hex digits */
    } else if (pcre2_match(re_spin, (PCRE2_SPTR)s, n, 0, 0, p->md, NULL) >= 0) {
        cr_regex_group(p->md, 1, s, &sym, &symn);
        if (cr_regex_group(p->md, 2, s, &g, &gn) && cr_parse_dec(g, gn, &v) == gn) {
            f->symbol_offset = v;
            f->has_symbol_offset = true;
        }
        if (cr_regex_group(p->md, 3, s, &g, &gn))
            f->image_name = cr_strndup(b, g, gn);
        cr_regex_group(p->md, 5, s, &g, &gn);
        (void)cr_parse_hex(g, gn, &f->addr); /* the pattern took 1-16 hex digits */
    } else if (pcre2_match(re_bare, (PCRE2_SPTR)s, n, 0, 0, p->md, NULL) >= 0) {
        cr_regex_group(p->md, 1, s, &sym, &symn);
        cr_regex_group(p->md, 2, s, &g, &gn);
        (void)cr_parse_hex(g, gn, &f->addr); /* the pattern took 1-16 hex digits */
    } else {
        return false;
    }
    cr_trim(&sym, &symn);
    if (symn > 0 && !(symn == 3 && memcmp(sym, "???", 3) == 0))
        f->symbol = cr_strndup(b, sym, symn);
    return true;
}

/* Make room for the child-sample sums of frames 0..n-1 of the current thread. */
static void sums_reserve(sample_parser *p, size_t n)
{
    if (n <= p->cap_sum)
        return;
    size_t cap = p->cap_sum ? p->cap_sum * 2 : 256;
    while (cap < n)
        cap *= 2;
    p->child_sum = xreallocarray(p->child_sum, cap, sizeof *p->child_sum);
    memset(p->child_sum + p->cap_sum, 0, (cap - p->cap_sum) * sizeof *p->child_sum);
    p->cap_sum = cap;
}

/* One frame line: `column` where its count starts, the text after the count at s[0..n). */
static void frame_line(sample_parser *p, size_t column, uint64_t count, const char *s, size_t n,
                       size_t line_off, size_t line_len)
{
    cr_builder *b = p->b;
    if (!p->in_thread) {
        /* frames before any thread header: one anonymous thread holds them */
        crashreport_thread *t = cr_add_thread(b);
        if (t == NULL)
            return;
        t->index = (uint32_t)(b->r->nthreads - 1);
        p->thread_i = b->r->nthreads - 1;
        p->in_thread = true;
        p->depth = 0;
        cr_note(b, "line %zu: call-graph frames before any thread line", p->lineno);
    }
    crashreport_thread *t = &b->r->threads[p->thread_i];
    /* pop to this line's caller: the deepest open level left of this column */
    while (p->depth > 0 && p->stack[p->depth - 1].column >= column)
        p->depth--;
    crashreport_frame *f = cr_add_frame(b, t);
    if (f == NULL)
        return;
    /* cr_add_frame may move t->frames: index, not pointer, from here on */
    size_t fi = t->nframes - 1;
    if (!frame_text(p, f, s, n)) {
        t->nframes--;
        cr_note(b, "line %zu: unreadable call-graph line", p->lineno);
        return;
    }
    f->index = (uint32_t)fi;
    f->sample_count = count;
    f->leaf = true;
    f->parent = p->depth > 0 ? p->stack[p->depth - 1].frame : -1;
    f->depth = (uint32_t)p->depth;
    f->src_line = line_off;
    f->src_sym = line_off + (size_t)(s - (p->text + line_off));
    f->src_end = line_off + line_len;
    sums_reserve(p, fi + 1);
    p->child_sum[fi] = 0;
    if (f->parent >= 0) {
        crashreport_frame *parent = &t->frames[f->parent];
        parent->leaf = false;
        p->child_sum[f->parent] += count;
        if (p->child_sum[f->parent] > parent->sample_count)
            note_partial(p, &p->counts_noted, "callees count more samples than their caller");
    } else if (t->sample_count > 0) {
        uint64_t roots = 0;
        for (size_t i = 0; i <= fi; i++)
            if (t->frames[i].parent < 0)
                roots += t->frames[i].sample_count;
        if (roots > t->sample_count)
            note_partial(p, &p->counts_noted, "frames count more samples than their thread");
    }
    if (p->depth == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->stack = xreallocarray(p->stack, p->cap, sizeof *p->stack);
    }
    p->stack[p->depth++] = (level){column, (int32_t)fi};
    p->graph_lines++;
}

/* The column where a call-graph line's count starts ("+ ! : |" and "*" read as blanks), and
 * the count; false if the line is not "<drawing>COUNT<blank>TEXT". */
static bool graph_prefix(const char *s, size_t n, size_t *column, uint64_t *count, size_t *text)
{
    size_t i = 0;
    while (i < n && (cr_is_blank(s[i]) || s[i] == '+' || s[i] == '!' || s[i] == ':' || s[i] == '|' ||
                     s[i] == '*'))
        i++;
    size_t d = cr_parse_dec(s + i, n - i, count);
    if (d == 0 || i + d >= n || !cr_is_blank(s[i + d]))
        return false;
    *column = i;
    size_t k = i + d;
    while (k < n && cr_is_blank(s[k]))
        k++;
    *text = k;
    return k < n;
}

static void graph_line(sample_parser *p, const char *s, size_t n, size_t off)
{
    size_t column, text;
    uint64_t count;
    const char *t = s;
    size_t tn = n;
    cr_trim(&t, &tn);
    if (tn == 0) {
        p->in_thread = false; /* spindump: threads are separated by blank lines */
        if (!p->spindump)
            p->state = S_AFTER;
        return;
    }
    if (cr_starts(t, tn, "Thread_") || cr_starts(t, tn, "Thread 0x")) {
        thread_line(p, t, tn, 0, false);
        return;
    }
    if (graph_prefix(s, n, &column, &count, &text)) {
        const char *rest = s + text;
        size_t rn = n - text;
        cr_trim(&rest, &rn);
        if (cr_starts(rest, rn, "Thread_")) {
            thread_line(p, rest, rn, count, true);
            return;
        }
        /* a dedent must land on the column of an open ancestor (or of the roots) */
        if (p->in_thread && p->depth > 0 && p->stack[p->depth - 1].column > column) {
            bool found = false;
            for (size_t k = p->depth; k > 0 && !found; k--)
                found = p->stack[k - 1].column == column;
            if (!found)
                note_partial(p, &p->jump_noted, "call-graph indentation jumps to a column no caller has");
        }
        frame_line(p, column, count, rest, rn, off, n);
        return;
    }
    if (cr_starts(t, tn, "Binary Images:")) {
        p->state = S_IMAGES;
        return;
    }
    /* "Total number in stack", "Sort by top of stack", spindump thread notes: the graph
     * (sample) or this thread (spindump) is over */
    p->in_thread = false;
    if (!p->spindump)
        p->state = S_AFTER;
    else if (t[0] != '<')
        header_line(p, t, tn); /* a second "Process:" ends the parse */
}

static void sample_line(sample_parser *p, const char *s, size_t n, size_t off)
{
    const char *t = s;
    size_t tn = n;
    cr_trim(&t, &tn);
    switch (p->state) {
    case S_DONE:
        return;
    case S_HEADER:
        if (tn == 11 && memcmp(t, "Call graph:", 11) == 0) {
            p->state = S_GRAPH;
            return;
        }
        if (p->spindump && (cr_starts(t, tn, "Thread 0x"))) {
            p->state = S_GRAPH;
            graph_line(p, s, n, off);
            return;
        }
        if (cr_starts(t, tn, "Binary Images:")) {
            p->state = S_IMAGES;
            return;
        }
        header_line(p, t, tn);
        return;
    case S_GRAPH:
        graph_line(p, s, n, off);
        return;
    case S_AFTER:
        if (cr_starts(t, tn, "Binary Images:"))
            p->state = S_IMAGES;
        else if (p->spindump && cr_starts(t, tn, "Thread 0x"))
            graph_line(p, s, n, off), p->state = S_GRAPH;
        else if (p->spindump)
            header_line(p, t, tn);
        return;
    case S_IMAGES:
        if (tn == 0) {
            p->state = S_AFTER;
            return;
        }
        if (!cr_text_image_line(p->b, t, tn)) {
            if (cr_is_blank(s[0]) || s[0] == '0') {
                cr_note(p->b, "line %zu: unreadable Binary Images line", p->lineno);
                return;
            }
            /* "Sample analysis of process ... written to file", a spindump "Process:" */
            p->state = S_AFTER;
            if (p->spindump)
                header_line(p, t, tn);
        }
        return;
    }
}

bool cr_looks_like_sample(const char *data, size_t len)
{
    size_t lim = len < 65536 ? len : 65536;
    bool steps = false, source = false;
    size_t off = 0;
    while (off < lim) {
        const char *s = data + off;
        const char *nl = memchr(s, '\n', lim - off);
        size_t n = nl ? (size_t)(nl - s) : lim - off;
        const char *t = s;
        size_t tn = n;
        cr_trim(&t, &tn);
        if ((tn == 11 && memcmp(t, "Call graph:", 11) == 0) || cr_starts(t, tn, "Analysis of sampling "))
            return true;
        steps |= cr_starts(t, tn, "Steps:");
        source |= cr_starts(t, tn, "Data Source:") || cr_starts(t, tn, "Command:");
        if (steps && source)
            return true;
        /* a crash report's thread list comes first: not a sample */
        if (cr_starts(t, tn, "Thread 0 Crashed") || cr_starts(t, tn, "Exception Type:"))
            return false;
        off += n + 1;
    }
    return false;
}

/* Overlapping Binary Images make frames ambiguous: note them (the first image wins). */
static void check_images(sample_parser *p)
{
    const crashreport *r = p->b->r;
    size_t noted = 0;
    for (size_t i = 0; i < r->nimages && noted < 3; i++)
        for (size_t k = i + 1; k < r->nimages && noted < 3; k++) {
            const crashreport_image *a = &r->images[i], *c = &r->images[k];
            if (a->end_addr == 0 || c->end_addr == 0)
                continue;
            if (a->load_addr <= c->end_addr && c->load_addr <= a->end_addr) {
                cr_note(p->b, "Binary Images overlap: %s and %s", a->name ? a->name : "???",
                        c->name ? c->name : "???");
                noted++;
            }
        }
}

err_code cr_parse_sample(crashreport **out, const char *data, size_t len, arena *a, err_info *err)
{
    cr_builder b;
    sample_parser p = {0};
    err_code rc = ERR_OK;
    *out = NULL;
    pthread_once(&patterns_once, compile_patterns);
    if (!patterns_ok)
        return err_set(err, ERR_INTERNAL, "compiling the sample report patterns failed");
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_SAMPLE, a, err))
        return ERR_TOO_LARGE;
    b.r->kind = CRASHREPORT_KIND_HANG;
    b.r->tree = true;
    p.b = &b;
    p.md = pcre2_match_data_create(12, NULL);
    if (p.md == NULL)
        return err_set(err, ERR_INTERNAL, "allocating pcre2 match data failed");
    char *text = cr_strndup(&b, data, len);
    if (text == NULL) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    b.r->text = text;
    b.r->text_len = len;
    p.text = text;
    size_t off = 0;
    while (off < len && p.state != S_DONE && !b.failed) {
        const char *s = text + off;
        const char *nl = memchr(s, '\n', len - off);
        size_t n = nl ? (size_t)(nl - s) : len - off;
        p.lineno++;
        if (n > CRASHREPORT_MAX_LINE)
            cr_note(&b, "line %zu: %zu-byte line ignored", p.lineno, n);
        else
            sample_line(&p, s, n, off);
        off += n + (nl ? 1 : 0);
    }
    if (b.failed) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    if (p.state == S_GRAPH && !p.spindump) {
        b.r->partial = true;
        cr_note(&b, "sample report ends inside the call graph (truncated)");
    }
    if (b.r->nimages == 0 && b.r->nthreads > 0) {
        b.r->partial = true;
        cr_note(&b, "no Binary Images section (truncated report?)");
    }
    check_images(&p);
    /* the main thread first: the signature reads thread 0 of a hang */
    for (size_t i = 0; i < b.r->nthreads; i++) {
        crashreport_thread *t = &b.r->threads[i];
        if (t->queue != NULL && strcmp(t->queue, "com.apple.main-thread") == 0 && i > 0) {
            crashreport_thread main = *t;
            memmove(&b.r->threads[1], &b.r->threads[0], i * sizeof *t);
            b.r->threads[0] = main;
            for (size_t k = 0; k <= i; k++)
                b.r->threads[k].index = (uint32_t)k;
            break;
        }
    }
    rc = cr_finish(&b, "sample report");
    if (rc != ERR_OK)
        goto done;
    *out = b.r;
done:
    free(p.stack);
    free(p.child_sum);
    pcre2_match_data_free(p.md);
    return rc;
}
