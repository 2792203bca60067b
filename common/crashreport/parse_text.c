/*
 * parse_text.c - Apple text crash reports.
 *
 * The report is read line by line with a small state machine. Lines are classified by a
 * cheap prefix check first; pcre2 (patterns compiled once per process, JIT-compiled where
 * the platform allows) only sees the lines that need it: thread headers and Binary Images
 * lines. Frame lines, the most common kind, are split by hand:
 *
 *     INDEX  IMAGE-NAME (may hold spaces)  0xADDRESS  SYMBOL-TEXT
 *
 * and SYMBOL-TEXT is one of
 *     0xLOAD + OFFSET                     unsymbolicated
 *     0xLOAD + OFFSET (symbol + OFFSET)   KSCrash
 *     0xLOAD + 0xOFFSET // symbol + 0xOFF jailbreak-era CrashReporter (ashikase's, whose
 *                                         image names carry "+ " and " (*)" marks)
 *     N + OFFSET                          unknown image ("0 + 25369818789377")
 *     symbol + OFFSET [(file:line)]       symbolicated
 *     symbol (file:line)                  symbolicated by symbolicatecrash
 *     ???                                 nothing known
 * A frame line may also come without its address, as services display stacks (Bugsnag:
 * "2  CrashProbe  -[CRLCrashAsyncSafeThread crash] (CRLCrashAsyncSafeThread.m:41)"): the image
 * name ends at the first run of two or more blanks (else at the column where the symbols of
 * the list's earlier such lines start, else at the first blank), and the frame has address 0.
 * Stack excerpts are reports: frame lines without a "Thread N Crashed:" header, starting at
 * frame 0, are the crashed thread. Pasted or annotated stacks carry noise, which is dropped:
 * HTML tags around lines (of the elements in HTML_ELEMENTS, on lines that close one), and a
 * frame line's trailing " | note" (a Markdown table cell or an annotation).
 * Anything the parser does not understand is kept (rendering copies every line) and, if it
 * looked like it mattered (a frame line without an address or symbol, a malformed image
 * line), noted in crashreport.errors.
 *
 * The Binary Images list is one "Binary Images:" section, or (CrashReporter) several named ones,
 * "Binary Images (dpkg):", "(App Store):", "(Other):", whose lines may end in the package's
 * JSON description after the path.
 *
 * Source: Apple TN2151 "Understanding and Analyzing Application Crash Reports"; Apple's
 * "Examining the fields in a crash report"; the samples in ../shared/corpus/reports/;
 * tests/golden/crashreport/jailbreak-sections.crash for CrashReporter's shape.
 */
#include <pthread.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crashreport/crashreport_internal.h"
#include "crashreport/text_internal.h"

/* ---- patterns ------------------------------------------------------------------------------ */

/* "Thread 0 Crashed:: Dispatch queue: q", "Thread 3:", "Thread 1 Crashed: Name",
 * "Thread 0 name:  Dispatch queue: q". Not "Thread 0 crashed with ARM Thread State". */
static const char PAT_THREAD[] =
    "^Thread[ \\t]+([0-9]{1,9})(?:( Crashed)?(:{1,2})[ \\t]*(.*?)|[ \\t]+name:[ \\t]*(.*?))[ \\t]*$";

/* "  0x100970000 -  0x101a23fff +Name arch (version) <uuid> /path" (arch, version, "+"
 * optional; group 4 holds "name [arch] [(version)]", split in C; the UUID is checked in C,
 * jailbreak tweaks print "<(null)>"). */
static const char PAT_IMAGE[] =
    "^[ \\t]*(?:0x)?([0-9a-fA-F]{1,16})[ \\t]*-[ \\t]*(?:(?:0x)?([0-9a-fA-F]{1,16})|\\?\\?\\?)"
    "[ \\t]+(\\+)?[ \\t]*(.+?)[ \\t]*<([^<>]{0,40})>[ \\t]*(.*?)[ \\t]*$";

static pcre2_code *re_thread, *re_image;
static pthread_once_t patterns_once = PTHREAD_ONCE_INIT;
static bool patterns_ok;
/* cr_parse_apple_text's match data, one per thread and kept between reports (freed when the
 * thread ends): made and freed for each report, it was a malloc and a free a parse. */
static pthread_key_t md_key;
static bool md_key_ok;

static void md_free(void *md)
{
    pcre2_match_data_free(md);
}

static void compile_patterns(void)
{
    re_thread = cr_regex_compile(PAT_THREAD);
    re_image = cr_regex_compile(PAT_IMAGE);
    patterns_ok = re_thread != NULL && re_image != NULL;
    md_key_ok = pthread_key_create(&md_key, md_free) == 0;
}

/* This thread's match data for 8 pairs (the patterns above have fewer groups); NULL when
 * pcre2 cannot allocate. Borrowed: the caller never frees it. */
static pcre2_match_data *thread_match_data(bool *owned)
{
    *owned = false;
    pcre2_match_data *md = md_key_ok ? pthread_getspecific(md_key) : NULL;
    if (md != NULL)
        return md;
    md = pcre2_match_data_create(8, NULL);
    if (md == NULL)
        return NULL;
    if (!md_key_ok || pthread_setspecific(md_key, md) != 0)
        *owned = true;   /* not kept: the caller frees it */
    return md;
}

/* ---- frame lines ----------------------------------------------------------------------------- */

typedef struct {
    uint32_t index;
    const char *name;   /* image name, NULL if the line has none */
    size_t name_len;
    uint64_t addr;
    size_t sym_off;     /* offset of the symbol text in the line */
    const char *sym;    /* symbol text, trimmed */
    size_t sym_len;
} frame_line;

typedef enum { FL_NOT_FRAME, FL_OK, FL_NO_ADDRESS } frame_line_rc;

static frame_line_rc split_frame_line(frame_line *fl, const char *s, size_t n)
{
    size_t i = 0;
    uint64_t idx;
    size_t digits = cr_parse_dec(s, n, &idx);
    if (digits == 0 || digits > 9 || digits >= n || !cr_is_blank(s[digits]))
        return FL_NOT_FRAME;
    i = digits;
    while (i < n && cr_is_blank(s[i]))
        i++;
    size_t name_start = i;
    /* the address: the first "0x<hex>" that starts a whitespace-delimited token */
    for (size_t j = i; j + 2 < n; j++) {
        const char *zero = memchr(s + j, '0', n - 2 - j);
        if (zero == NULL)
            break;
        j = (size_t)(zero - s);
        if (s[j + 1] != 'x' && s[j + 1] != 'X')
            continue;
        if (j > name_start && !cr_is_blank(s[j - 1]))
            continue;
        uint64_t addr;
        size_t h = cr_parse_hex(s + j + 2, n - j - 2, &addr);
        size_t end = j + 2 + h;
        if (h == 0 || (end < n && !cr_is_blank(s[end])))
            continue;
        size_t name_end = j;
        while (name_end > name_start && cr_is_blank(s[name_end - 1]))
            name_end--;
        fl->index = (uint32_t)idx;
        fl->name = name_end > name_start ? s + name_start : NULL;
        fl->name_len = name_end - name_start;
        fl->addr = addr;
        while (end < n && cr_is_blank(s[end]))
            end++;
        fl->sym_off = end;
        fl->sym = s + end;
        fl->sym_len = n - end;
        cr_trim(&fl->sym, &fl->sym_len);
        return FL_OK;
    }
    return FL_NO_ADDRESS;
}

/* A frame line without an address: "INDEX  IMAGE-NAME  SYMBOL-TEXT". The image name ends at the
 * first run of two or more blanks; with none, at `column` (where an earlier such line's symbol
 * started) when a blank ends there, else at the first blank. FL_NOT_FRAME without both. */
static frame_line_rc split_frame_line_noaddr(frame_line *fl, const char *s, size_t n,
                                             size_t column)
{
    uint64_t idx;
    size_t digits = cr_parse_dec(s, n, &idx);
    if (digits == 0 || digits > 9 || digits >= n || !cr_is_blank(s[digits]))
        return FL_NOT_FRAME;
    size_t i = digits;
    while (i < n && cr_is_blank(s[i]))
        i++;
    size_t name_start = i, name_end = 0, sym = 0;
    for (size_t j = name_start; j + 1 < n && name_end == 0; j++)
        if (cr_is_blank(s[j]) && (cr_is_blank(s[j + 1]) || s[j] == '\t'))
            name_end = j;
    if (name_end == 0 && column > name_start && column < n && cr_is_blank(s[column - 1]) &&
        !cr_is_blank(s[column]))
        name_end = column - 1;
    if (name_end == 0) {
        const char *blank = memchr(s + name_start, ' ', n - name_start);
        if (blank != NULL)
            name_end = (size_t)(blank - s);
    }
    if (name_end <= name_start)
        return FL_NOT_FRAME;
    sym = name_end;
    while (sym < n && cr_is_blank(s[sym]))
        sym++;
    /* "0x..." where the address goes, unreadable (wider than 64 bits): not an address-less line */
    if (sym >= n || (sym + 1 < n && s[sym] == '0' && (s[sym + 1] == 'x' || s[sym + 1] == 'X')))
        return FL_NOT_FRAME;
    fl->index = (uint32_t)idx;
    fl->name = s + name_start;
    fl->name_len = name_end - name_start;
    fl->addr = 0;
    fl->sym_off = sym;
    fl->sym = s + sym;
    fl->sym_len = n - sym;
    cr_trim(&fl->sym, &fl->sym_len);
    return fl->sym_len > 0 ? FL_OK : FL_NOT_FRAME;
}

/* ---- noise around pasted stacks -------------------------------------------------------------- */

/* Elements that services and people wrap around the lines of a stack they show or annotate
 * (CrashProbe's data marks wrong frames <span class="cp-wrong">...</span>). */
static const char *const HTML_ELEMENTS[] = {
    "span", "div", "a", "p", "b", "i", "em", "strong", "code", "pre", "font", "mark", "small",
    "del", "ins", "s", "u", "tt", "kbd", "samp", "li", "td", "th", "tr", "br", "details",
    "summary", "blockquote",
};

/* The length of the element name of a tag at s[0] ('<' or "</"), 0 if not one of ours. */
static size_t html_tag_name(const char *s, size_t n)
{
    if (n < 2)
        return 0;
    size_t i = s[1] == '/' ? 2 : 1;
    for (size_t e = 0; e < sizeof HTML_ELEMENTS / sizeof HTML_ELEMENTS[0]; e++) {
        size_t k = strlen(HTML_ELEMENTS[e]);
        if (i + k < n && strncasecmp(s + i, HTML_ELEMENTS[e], k) == 0 &&
            (s[i + k] == '>' || s[i + k] == ' ' || s[i + k] == '/'))
            return i + k;
    }
    return 0;
}

/* Blank the HTML tags in s[0..n) in place (offsets into the text stay valid), on a line that
 * closes one of HTML_ELEMENTS: "Foo<a>::f" alone is a template, not markup. True if any. */
static bool blank_html_tags(char *s, size_t n)
{
    bool closes = false;
    for (const char *lt = memchr(s, '<', n); lt != NULL && !closes;
         lt = memchr(lt + 1, '<', n - (size_t)(lt + 1 - s)))
        closes = lt + 1 < s + n && lt[1] == '/' && html_tag_name(lt, n - (size_t)(lt - s)) > 0;
    if (!closes)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '<' || html_tag_name(s + i, n - i) == 0)
            continue;
        const char *gt = memchr(s + i, '>', n - i);
        if (gt == NULL)
            break;
        memset(s + i, ' ', (size_t)(gt - (s + i)) + 1);
        i = (size_t)(gt - s);
    }
    return true;
}

/* A frame line's trailing " | note": the length to keep. */
static size_t cut_annotation(const char *s, size_t n)
{
    for (size_t i = 0; i + 2 < n; i++)
        if (s[i] == ' ' && s[i + 1] == '|' && s[i + 2] == ' ') {
            while (i > 0 && cr_is_blank(s[i - 1]))
                i--;
            return i;
        }
    return n;
}

/* " + 123" or " + 0x7b" at the end of s[0..*n): strip it, store the number. */
static bool strip_plus_offset(const char *s, size_t *n, uint64_t *off)
{
    size_t e = *n, d = 0;
    while (d < e && s[e - 1 - d] >= '0' && s[e - 1 - d] <= '9')
        d++;
    if (d > 0 && d <= 20 && e - d >= 3 && memcmp(s + e - d - 3, " + ", 3) == 0) {
        if (cr_parse_dec(s + e - d, d, off) != d)
            return false;
    } else {
        d = 0;
        while (d < e && cr_hex_digit(s[e - 1 - d]) >= 0)
            d++;
        if (d == 0 || d > 16 || e - d < 5 || memcmp(s + e - d - 5, " + 0x", 5) != 0)
            return false;
        cr_parse_hex(s + e - d, d, off);
        d += 2; /* the "0x" */
    }
    *n = e - d - 3;
    while (*n > 0 && cr_is_space(s[*n - 1]))
        (*n)--;
    return true;
}

/* "(file:line)" at the end: strip it (and the blank before), store file and line. */
static bool strip_file_line(const char *s, size_t *n, const char **file, size_t *file_len,
                            uint32_t *line)
{
    size_t e = *n;
    if (e < 5 || s[e - 1] != ')')
        return false;
    size_t d = 0;
    while (d + 1 < e && s[e - 2 - d] >= '0' && s[e - 2 - d] <= '9')
        d++;
    if (d == 0 || d > 9 || e < d + 3 || s[e - 2 - d] != ':')
        return false;
    size_t colon = e - 2 - d;
    size_t open = colon;
    while (open > 0 && s[open - 1] != '(' && s[open - 1] != ')')
        open--;
    if (open == 0 || s[open - 1] != '(' || open == colon)
        return false;
    uint64_t ln = 0;
    cr_parse_dec(s + colon + 1, d, &ln);
    *file = s + open;
    *file_len = colon - open;
    *line = (uint32_t)ln;
    *n = open - 1;
    while (*n > 0 && cr_is_blank(s[*n - 1]))
        (*n)--;
    return true;
}

/* Fill the symbol fields of f from the symbol text of a frame line; true if the text ends
 * in " [inlined]" (Apple's mark for a function inlined into the next frame line). */
static bool parse_symbol_text(cr_builder *b, crashreport_frame *f, const char *s, size_t n)
{
    static const char INLINED[] = " [inlined]";
    bool inlined = false;
    f->raw = cr_strndup(b, s, n);
    f->symbol = f->file = NULL;
    f->line = 0;
    f->symbol_offset = 0;
    f->has_symbol_offset = false;
    if (n >= sizeof INLINED - 1 && memcmp(s + n - (sizeof INLINED - 1), INLINED,
                                          sizeof INLINED - 1) == 0) {
        inlined = true;
        n -= sizeof INLINED - 1;
        while (n > 0 && cr_is_space(s[n - 1]))
            n--;
    }
    if (n == 0 || (n == 3 && memcmp(s, "???", 3) == 0))
        return inlined;
    /* "0xLOAD + OFF", "0xLOAD + OFF (symbol + OFF)", "0xLOAD + 0xOFF // symbol + 0xOFF",
     * "N + OFF" */
    size_t i = 0;
    uint64_t v;
    if (cr_starts(s, n, "0x"))
        i = 2 + cr_parse_hex(s + 2, n - 2, &v);
    else
        i = cr_parse_dec(s, n, &v);
    if (i > 0 && (i > 2 || s[0] != '0' || s[1] != 'x') && n - i >= 3 &&
        memcmp(s + i, " + ", 3) == 0) {
        size_t k = i + 3;
        size_t d;
        if (cr_starts(s + k, n - k, "0x")) {
            d = cr_parse_hex(s + k + 2, n - k - 2, &v);
            d = d > 0 ? d + 2 : 0;
        } else {
            d = cr_parse_dec(s + k, n - k, &v);
        }
        if (d > 0 && (k + d == n || cr_is_blank(s[k + d]))) {
            k += d;
            while (k < n && cr_is_blank(s[k]))
                k++;
            if (k == n)
                return inlined; /* image-relative only: no symbol */
            if (n - k >= 2 && s[k] == '/' && s[k + 1] == '/') {
                /* CrashReporter: "// symbol + 0xOFF", or "// 0xADDR + 0xOFF" for none */
                const char *sym = s + k + 2;
                size_t sn = n - k - 2;
                uint64_t off;
                cr_trim(&sym, &sn);
                if (strip_plus_offset(sym, &sn, &off)) {
                    f->symbol_offset = off;
                    f->has_symbol_offset = true;
                }
                if (sn > 2 && cr_starts(sym, sn, "0x") && cr_parse_hex(sym + 2, sn - 2, &v) == sn - 2)
                    f->has_symbol_offset = false; /* an address, not a symbol */
                else if (sn > 0)
                    f->symbol = cr_strndup(b, sym, sn);
                return inlined;
            }
            if (s[k] == '(' && s[n - 1] == ')') {
                /* KSCrash: "(symbol + OFF)" */
                const char *sym = s + k + 1;
                size_t sn = n - k - 2;
                uint64_t off;
                if (strip_plus_offset(sym, &sn, &off)) {
                    f->symbol_offset = off;
                    f->has_symbol_offset = true;
                }
                if (sn > 0)
                    f->symbol = cr_strndup(b, sym, sn);
                return inlined;
            }
        }
    }
    const char *file = NULL;
    size_t file_len = 0;
    uint32_t line = 0;
    size_t sn = n;
    if (strip_file_line(s, &sn, &file, &file_len, &line)) {
        f->file = cr_strndup(b, file, file_len);
        f->line = line;
    }
    uint64_t off;
    if (strip_plus_offset(s, &sn, &off)) {
        f->symbol_offset = off;
        f->has_symbol_offset = true;
    }
    if (sn > 0 && !(sn == 3 && memcmp(s, "???", 3) == 0))
        f->symbol = cr_strndup(b, s, sn);
    return inlined;
}

/* ---- binary images ------------------------------------------------------------------------- */

/* The parts of a Binary Images line (PAT_IMAGE's groups), pointing into the line. */
typedef struct {
    const char *lo, *hi, *mid, *uuid, *path; /* hi NULL for "???" */
    size_t lo_n, hi_n, mid_n, uuid_n, path_n;
    uint64_t lo_v, hi_v;                     /* lo and hi as numbers (hi 0 for "???") */
    bool plus;
} image_fields;

/* PAT_IMAGE by pcre2: the definition of an image line. */
static bool image_fields_regex(image_fields *f, pcre2_match_data *md, const char *s, size_t n)
{
    if (pcre2_match(re_image, (PCRE2_SPTR)s, n, 0, 0, md, NULL) < 0)
        return false;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
#define GROUP(g, p, len)                                                   \
    f->p = ov[2 * (g)] == PCRE2_UNSET ? NULL : s + ov[2 * (g)];            \
    f->len = ov[2 * (g)] == PCRE2_UNSET ? 0 : ov[2 * (g) + 1] - ov[2 * (g)]
    GROUP(1, lo, lo_n);
    GROUP(2, hi, hi_n);
    GROUP(4, mid, mid_n);
    GROUP(5, uuid, uuid_n);
    GROUP(6, path, path_n);
#undef GROUP
    f->plus = ov[6] != PCRE2_UNSET;
    f->hi_v = 0;
    cr_parse_hex(f->lo, f->lo_n, &f->lo_v);
    if (f->hi != NULL)
        cr_parse_hex(f->hi, f->hi_n, &f->hi_v);
    return true;
}

/* The same split by hand for lines whose reading is unambiguous (every line a real report
 * has), about five times cheaper than the pattern; false means "ask the pattern". The test
 * checks that both agree on every image line of the corpus. */
static bool image_fields_fast(image_fields *f, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && cr_is_blank(s[i]))
        i++;
    if (i + 1 < n && s[i] == '0' && s[i + 1] == 'x')
        i += 2;
    f->lo = s + i;
    f->lo_n = cr_parse_hex(s + i, n - i, &f->lo_v);
    if (f->lo_n == 0)
        return false;
    i += f->lo_n;
    while (i < n && cr_is_blank(s[i]))
        i++;
    if (i == n || s[i] != '-')
        return false;
    i++;
    while (i < n && cr_is_blank(s[i]))
        i++;
    if (i + 2 < n && s[i] == '?' && s[i + 1] == '?' && s[i + 2] == '?') {
        f->hi = NULL;
        f->hi_n = 0;
        f->hi_v = 0;
        i += 3;
    } else {
        if (i + 1 < n && s[i] == '0' && s[i + 1] == 'x')
            i += 2;
        f->hi = s + i;
        f->hi_n = cr_parse_hex(s + i, n - i, &f->hi_v);
        if (f->hi_n == 0)
            return false;
        i += f->hi_n;
    }
    if (i == n || !cr_is_blank(s[i]))
        return false;
    while (i < n && cr_is_blank(s[i]))
        i++;
    f->plus = i < n && s[i] == '+';
    if (f->plus)
        i++;
    while (i < n && cr_is_blank(s[i]))
        i++;
    const char *lt = memchr(s + i, '<', n - i);
    if (lt == NULL || lt == s + i)
        return false;
    const char *gt = memchr(lt + 1, '>', (size_t)(s + n - lt - 1));
    if (gt == NULL || gt - lt - 1 > 40 || memchr(lt + 1, '<', (size_t)(gt - lt - 1)) != NULL)
        return false;
    f->mid = s + i;
    f->mid_n = (size_t)(lt - f->mid);
    while (f->mid_n > 0 && cr_is_blank(f->mid[f->mid_n - 1]))
        f->mid_n--;
    if (f->mid_n == 0)
        return false;
    f->uuid = lt + 1;
    f->uuid_n = (size_t)(gt - lt - 1);
    i = (size_t)(gt - s) + 1;
    while (i < n && cr_is_blank(s[i]))
        i++;
    f->path = s + i;
    f->path_n = n - i;
    while (f->path_n > 0 && cr_is_blank(f->path[f->path_n - 1]))
        f->path_n--;
    return true;
}

static bool image_line(cr_builder *b, pcre2_match_data *md, const char *s, size_t n)
{
    image_fields fl = {0};
    if (!image_fields_fast(&fl, s, n) && !image_fields_regex(&fl, md, s, n))
        return false;
    const char *mid_s = fl.mid, *uuid_s = fl.uuid, *path_s = fl.path;
    size_t mid_n = fl.mid_n, uuid_n = fl.uuid_n, path_n = fl.path_n;
    crashreport_image *im = cr_add_image(b);
    if (im == NULL)
        return true;
    im->load_addr = fl.lo_v;
    im->end_addr = fl.hi_v;
    im->user = fl.plus;
    cr_uuid_set(im->uuid, uuid_s, uuid_n);
    /* CrashReporter appends the dpkg package as JSON: "/usr/lib/x.dylib {"name":...}" */
    if (path_n > 0 && path_s[path_n - 1] == '}') {
        for (size_t k = 0; k + 2 < path_n; k++)
            if (cr_is_blank(path_s[k]) && path_s[k + 1] == '{' && path_s[k + 2] == '"') {
                path_n = k;
                while (path_n > 0 && cr_is_blank(path_s[path_n - 1]))
                    path_n--;
                break;
            }
    }
    if (path_n > 0 && !(path_n == 3 && memcmp(path_s, "???", 3) == 0))
        im->path = cr_strndup(b, path_s, path_n);

    /* mid = "name [arch] [(version)]", "name (arch)", "name arch (version)" */
    size_t m = mid_n;
    if (m > 0 && mid_s[m - 1] == ')') {
        size_t open = m - 1, depth = 0;
        while (open > 0) {
            open--;
            if (mid_s[open] == ')')
                depth++;
            else if (mid_s[open] == '(' && depth-- == 0)
                break;
        }
        if (mid_s[open] == '(' && open > 0 && cr_is_blank(mid_s[open - 1])) {
            const char *inner = mid_s + open + 1;
            size_t inner_n = m - open - 2;
            const char *arch = cr_arch_normalize(inner, inner_n);
            if (arch != NULL)
                im->arch = arch;
            else if (!(inner_n == 1 && inner[0] == '*'))
                im->version = cr_strndup(b, inner, inner_n);
            m = open;
            while (m > 0 && cr_is_blank(mid_s[m - 1]))
                m--;
        }
    }
    size_t w = m;
    while (w > 0 && !cr_is_blank(mid_s[w - 1]))
        w--;
    if (w > 0) {
        const char *word = mid_s + w;
        size_t wn = m - w;
        const char *arch = cr_arch_normalize(word, wn);
        if (arch != NULL || (wn == 12 && memcmp(word, "unknown-arch", 12) == 0)) {
            if (arch != NULL)
                im->arch = arch;
            m = w;
            while (m > 0 && cr_is_blank(mid_s[m - 1]))
                m--;
        }
    }
    if (m > 0)
        im->name = cr_strndup(b, mid_s, m);
    return true;
}

bool cr_text_image_line(cr_builder *b, const char *s, size_t n)
{
    pthread_once(&patterns_once, compile_patterns);
    image_fields fl = {0};
    if (image_fields_fast(&fl, s, n))
        return image_line(b, NULL, s, n);
    if (!patterns_ok)
        return false;
    pcre2_match_data *md = pcre2_match_data_create(8, NULL);
    if (md == NULL)
        return false;
    bool ok = image_line(b, md, s, n);
    pcre2_match_data_free(md);
    return ok;
}

/* ---- header keys ----------------------------------------------------------------------------- */

typedef enum {
    K_STRING,   /* store as given */
    K_PROCESS,  /* "Name [pid]" */
    K_VERSION,  /* "1.0 (12)" */
    K_CODETYPE,
    K_EXCTYPE,  /* "EXC_CRASH (SIGABRT)" */
    K_THREAD,   /* "5" or "0  Dispatch queue: ..." */
    K_APPINFO,  /* block follows */
} key_kind;

typedef struct {
    const char *key;
    size_t len;   /* strlen(key) */
    key_kind kind;
    size_t field; /* offsetof(crashreport_metadata, ...) for K_STRING */
} key_row;

#define META(f) offsetof(crashreport_metadata, f)
static const key_row KEYS[] = {
    {"Incident Identifier", sizeof "Incident Identifier" - 1, K_STRING, META(incident_id)},
    {"Hardware Model", sizeof "Hardware Model" - 1, K_STRING, META(hardware_model)},
    {"Process", sizeof "Process" - 1, K_PROCESS, 0},
    {"Path", sizeof "Path" - 1, K_STRING, META(process_path)},
    {"Identifier", sizeof "Identifier" - 1, K_STRING, META(bundle_id)},
    {"Version", sizeof "Version" - 1, K_VERSION, 0},
    {"Code Type", sizeof "Code Type" - 1, K_CODETYPE, 0},
    {"Parent Process", sizeof "Parent Process" - 1, K_STRING, META(parent_process)},
    {"Date/Time", sizeof "Date/Time" - 1, K_STRING, META(date)},
    {"OS Version", sizeof "OS Version" - 1, K_STRING, META(os_version)},
    {"Report Version", sizeof "Report Version" - 1, K_STRING, META(report_version)},
    {"Exception Type", sizeof "Exception Type" - 1, K_EXCTYPE, 0},
    {"Exception Codes", sizeof "Exception Codes" - 1, K_STRING, META(exception_codes)},
    {"Exception Subtype", sizeof "Exception Subtype" - 1, K_STRING, META(exception_subtype)},
    {"Exception Message", sizeof "Exception Message" - 1, K_STRING, META(exception_reason)},
    {"Exception Reason", sizeof "Exception Reason" - 1, K_STRING, META(exception_reason)},
    {"Termination Reason", sizeof "Termination Reason" - 1, K_STRING, META(termination_reason)},
    {"Triggered by Thread", sizeof "Triggered by Thread" - 1, K_THREAD, 0},
    {"Crashed Thread", sizeof "Crashed Thread" - 1, K_THREAD, 0},
    {"Application Specific Information", sizeof "Application Specific Information" - 1, K_APPINFO, 0},
};
#undef META

static const char **meta_slot(crashreport_metadata *m, size_t off)
{
    return (const char **)((char *)m + off);
}

static void set_meta(cr_builder *b, const char **slot, const char *v, size_t n)
{
    if (*slot == NULL && n > 0)
        *slot = cr_strndup(b, v, n);
}

typedef enum { H_NONE, H_KEY, H_BLOCK } header_rc;

/* A "Key: value" header line. H_BLOCK: "Application Specific Information:" (lines follow). */
static header_rc header_line(cr_builder *b, const char *s, size_t n)
{
    if (n == 0 || s[0] < 'A' || s[0] > 'Z')
        return H_NONE;
    const char *colon = memchr(s, ':', n < 40 ? n : 40);
    if (colon == NULL)
        return H_NONE;
    size_t klen = (size_t)(colon - s);
    const key_row *row = NULL;
    for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++)
        if (KEYS[i].len == klen && memcmp(KEYS[i].key, s, klen) == 0) {
            row = &KEYS[i];
            break;
        }
    if (row == NULL)
        return H_NONE;
    const char *v = colon + 1;
    size_t vn = n - klen - 1;
    cr_trim(&v, &vn);
    crashreport_metadata *m = &b->r->meta;
    switch (row->kind) {
    case K_STRING:
        set_meta(b, meta_slot(m, row->field), v, vn);
        break;
    case K_PROCESS: {
        size_t pn = vn;
        if (pn > 0 && v[pn - 1] == ']') {
            const char *open = memchr(v, '[', pn);
            if (open != NULL)
                pn = (size_t)(open - v);
            while (pn > 0 && cr_is_blank(v[pn - 1]))
                pn--;
        }
        set_meta(b, &m->process, v, pn);
        break;
    }
    case K_VERSION: {
        set_meta(b, &m->version_text, v, vn);
        /* Modern reports print "CFBundleShortVersionString (CFBundleVersion)". */
        if (vn == 0 || cr_starts(v, vn, "???"))
            break;
        const char *open = memchr(v, '(', vn);
        size_t an = open ? (size_t)(open - v) : vn;
        while (an > 0 && cr_is_blank(v[an - 1]))
            an--;
        set_meta(b, &m->app_version, v, an);
        if (open != NULL && v[vn - 1] == ')') {
            const char *bv = open + 1;
            size_t bn = (size_t)(v + vn - 1 - bv);
            if (!(bn == 3 && memcmp(bv, "???", 3) == 0))
                set_meta(b, &m->build, bv, bn);
        }
        break;
    }
    case K_CODETYPE:
        if (m->code_type == NULL) {
            set_meta(b, &m->code_type, v, vn);
            if (m->code_type != NULL && m->arch == NULL)
                m->arch = cr_arch_from_code_type(m->code_type);
        }
        break;
    case K_EXCTYPE: {
        if (m->exception_type != NULL)
            break;
        /* "EXC_CRASH (SIGABRT)", "SIGSEGV", "0 (0)" */
        const char *open = memchr(v, '(', vn);
        size_t tn = open ? (size_t)(open - v) : vn;
        while (tn > 0 && cr_is_blank(v[tn - 1]))
            tn--;
        set_meta(b, &m->exception_type, v, tn);
        if (open != NULL) {
            const char *close = memchr(open, ')', (size_t)(v + vn - open));
            if (close != NULL && cr_starts(open + 1, (size_t)(close - open - 1), "SIG"))
                set_meta(b, &m->signal, open + 1, (size_t)(close - open - 1));
        } else if (cr_starts(v, vn, "SIG")) {
            set_meta(b, &m->signal, v, tn);
        }
        break;
    }
    case K_THREAD: {
        uint64_t t;
        if (m->crashed_thread < 0 && cr_parse_dec(v, vn, &t) > 0 && t < INT32_MAX)
            m->crashed_thread = (int32_t)t;
        break;
    }
    case K_APPINFO:
        return H_BLOCK;
    }
    return H_KEY;
}

/* ---- the state machine ----------------------------------------------------------------------- */

typedef enum {
    S_GENERAL,
    S_THREAD,     /* frame lines of a thread */
    S_LEB,        /* after "Last Exception Backtrace:": frame lines or "(0x... 0x...)" */
    S_LEB_LIST,   /* inside a parenthesised address list spanning lines */
    S_CAUSE,      /* after "Caused by: Type: reason": the cause's frame lines */
    S_APPINFO,    /* "Application Specific Information:" block */
    S_IMAGES,     /* Binary Images lines */
    S_AFTER,      /* after the Binary Images section */
    S_DONE,       /* "Full Report" banner, or a second report: ignore the rest */
} text_state;

typedef struct {
    cr_builder *b;
    pcre2_match_data *md;
    const char *text;   /* the arena copy of the report */
    text_state state;
    crashreport_thread *thread; /* current thread in S_THREAD */
    size_t thread_i;            /* its index in r->threads (the array may move) */
    int64_t pending_name_index; /* "Thread N name:" seen for N, -1 none */
    const char *pending_name, *pending_queue;
    char *appinfo;              /* accumulated Application Specific Information */
    size_t appinfo_len;
    size_t lineno;
    size_t known_lines;         /* lines that looked like a crash report at all */
    bool last_inlined;          /* the last frame line ended in " [inlined]" */
    size_t noaddr_column;       /* where the symbol of the last address-less frame line began */
    bool line_markup;           /* the current line had HTML tags (blanked) */
} text_parser;

static void set_name_or_queue(text_parser *p, const char *v, size_t n, const char **name,
                              const char **queue)
{
    static const char DQ[] = "Dispatch queue:";
    if (cr_starts(v, n, DQ)) {
        const char *q = v + sizeof DQ - 1;
        size_t qn = n - (sizeof DQ - 1);
        cr_trim(&q, &qn);
        if (qn > 0)
            *queue = cr_strndup(p->b, q, qn);
    } else if (n > 0) {
        *name = cr_strndup(p->b, v, n);
    }
}

/* A "Thread ..." line: true if it was a thread header or a name line. */
static bool thread_line(text_parser *p, const char *s, size_t n)
{
    int rc = pcre2_match(re_thread, (PCRE2_SPTR)s, n, 0, 0, p->md, NULL);
    if (rc < 0)
        return false;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
    uint64_t idx = 0;
    cr_parse_dec(s + ov[2], ov[3] - ov[2], &idx);
    if (rc >= 6 && ov[10] != PCRE2_UNSET) {
        /* "Thread N name: X" */
        p->pending_name_index = (int64_t)idx;
        p->pending_name = p->pending_queue = NULL;
        set_name_or_queue(p, s + ov[10], ov[11] - ov[10], &p->pending_name, &p->pending_queue);
        return true;
    }
    if (p->state == S_AFTER || p->state == S_IMAGES) {
        cr_note(p->b, "line %zu: a second report follows the Binary Images; it was ignored",
                p->lineno);
        p->state = S_DONE;
        return true;
    }
    crashreport_thread *t = cr_add_thread(p->b);
    if (t == NULL)
        return true;
    t->index = (uint32_t)idx;
    t->crashed = ov[4] != PCRE2_UNSET;
    if (ov[8] != PCRE2_UNSET && ov[9] > ov[8])
        set_name_or_queue(p, s + ov[8], ov[9] - ov[8], &t->name, &t->queue);
    if (p->pending_name_index == (int64_t)idx) {
        if (t->name == NULL)
            t->name = p->pending_name;
        if (t->queue == NULL)
            t->queue = p->pending_queue;
    }
    p->pending_name_index = -1;
    p->thread_i = p->b->r->nthreads - 1;
    p->state = S_THREAD;
    p->last_inlined = false;
    return true;
}

/* The frame the last frame line made in the current list (thread or LEB), NULL if none. */
static crashreport_frame *last_frame(text_parser *p)
{
    crashreport *r = p->b->r;
    if (p->state == S_LEB)
        return r->nleb > 0 ? &r->leb[r->nleb - 1] : NULL;
    if (p->state == S_CAUSE) {
        crashreport_cause *c = &r->causes[r->ncauses - 1];
        return c->nframes > 0 ? &c->frames[c->nframes - 1] : NULL;
    }
    if (p->state == S_THREAD && p->thread_i < r->nthreads && r->threads[p->thread_i].nframes > 0)
        return &r->threads[p->thread_i].frames[r->threads[p->thread_i].nframes - 1];
    return NULL;
}

/* The previous frame line was "[inlined]" into this one (same address): keep one frame for
 * the address, with the inlined function under given_inlines, as .ips reports have it. */
static bool fold_inlined(text_parser *p, crashreport_frame *prev, const frame_line *fl,
                         size_t line_off, size_t line_len)
{
    cr_builder *b = p->b;
    void *arr = (void *)prev->given_inlines;
    size_t n = prev->ngiven_inlines;
    crashreport_symbol *s = cr_push(b, &arr, &n, sizeof *s);
    if (s == NULL)
        return false;
    s->function = prev->symbol != NULL ? prev->symbol : prev->raw;
    s->file = prev->file;
    s->line = prev->line;
    s->offset = prev->symbol_offset;
    s->inlined = true;
    prev->given_inlines = arr;
    prev->ngiven_inlines = (uint32_t)n;
    prev->src_end = line_off + line_len;
    p->last_inlined = parse_symbol_text(b, prev, fl->sym, fl->sym_len);
    return true;
}

/* A frame line of the current list (p->state: a thread, the LEB or a cause). */
static crashreport_frame *frame_from_line(text_parser *p, const frame_line *fl, size_t line_off,
                                          size_t line_len)
{
    cr_builder *b = p->b;
    crashreport_frame *prev = last_frame(p);
    if (p->last_inlined && prev != NULL && prev->addr == fl->addr && !prev->src_list)
        return fold_inlined(p, prev, fl, line_off, line_len) ? prev : NULL;
    crashreport_frame *f = p->state == S_LEB ? cr_add_leb_frame(b)
                           : p->state == S_CAUSE
                               ? cr_add_cause_frame(b, &b->r->causes[b->r->ncauses - 1])
                               : cr_add_frame(b, &b->r->threads[p->thread_i]);
    if (f == NULL)
        return NULL;
    f->index = fl->index;
    f->addr = fl->addr;
    const char *name = fl->name;
    size_t name_len = fl->name_len;
    /* CrashReporter marks images not from the OS "+ Name" and the blamed one "Name (*)" */
    if (name != NULL && name_len > 2 && name[0] == '+' && cr_is_blank(name[1])) {
        name += 2;
        name_len -= 2;
        while (name_len > 0 && cr_is_blank(name[0]))
            name++, name_len--;
    }
    if (name != NULL && name_len > 4 && memcmp(name + name_len - 4, " (*)", 4) == 0) {
        name_len -= 4;
        while (name_len > 0 && cr_is_blank(name[name_len - 1]))
            name_len--;
    }
    if (name != NULL && name_len > 0 && !(name_len == 3 && memcmp(name, "???", 3) == 0))
        f->image_name = cr_strndup(b, name, name_len);
    f->src_line = line_off;
    f->src_sym = line_off + fl->sym_off;
    f->src_end = line_off + line_len;
    p->last_inlined = parse_symbol_text(b, f, fl->sym, fl->sym_len);
    return f;
}

/* An indented line right after a frame line: the frame's symbol text went on (a symbol
 * holding a newline, as assertion messages turned into symbols do). */
static bool continue_frame(text_parser *p, size_t line_off, size_t line_len)
{
    crashreport_frame *f = last_frame(p);
    if (f == NULL || f->src_list || f->src_end == 0)
        return false;
    f->src_end = line_off + line_len;
    const char *sym = p->text + f->src_sym;
    size_t n = f->src_end - f->src_sym;
    cr_trim(&sym, &n);
    p->last_inlined = parse_symbol_text(p->b, f, sym, n);
    return true;
}

/* "(0x1850f6d88 0x1842bb5ec ...)": one LEB frame per address. True when the list closed. */
static bool leb_list_line(text_parser *p, const char *s, size_t n, size_t line_off)
{
    cr_builder *b = p->b;
    size_t i = 0;
    while (i < n) {
        while (i < n && (cr_is_blank(s[i]) || s[i] == '('))
            i++;
        if (i < n && s[i] == ')')
            return true;
        if (i + 2 <= n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
            uint64_t a;
            size_t h = cr_parse_hex(s + i + 2, n - i - 2, &a);
            if (h == 0) {
                cr_note(b, "line %zu: unreadable address in the Last Exception Backtrace list",
                        p->lineno);
                return true;
            }
            crashreport_frame *f = cr_add_leb_frame(b);
            if (f == NULL)
                return true;
            f->index = (uint32_t)(b->r->nleb - 1);
            f->addr = a;
            f->src_line = line_off;
            f->src_sym = line_off;
            f->src_end = line_off + n;
            f->src_list = true;
            i += 2 + h;
        } else if (i < n) {
            cr_note(b, "line %zu: unexpected text in the Last Exception Backtrace list",
                    p->lineno);
            return true;
        }
    }
    return false;
}

static void appinfo_add(text_parser *p, const char *s, size_t n)
{
    /* keep at most 8 KiB: enough for any real message, bounded for hostile input */
    if (p->appinfo_len + n + 1 > 8192)
        return;
    if (p->appinfo == NULL) {
        p->appinfo = arena_alloc(p->b->a, 8193, p->b->err);
        if (p->appinfo == NULL) {
            p->b->failed = true;
            return;
        }
    }
    if (p->appinfo_len > 0)
        p->appinfo[p->appinfo_len++] = '\n';
    memcpy(p->appinfo + p->appinfo_len, s, n);
    p->appinfo_len += n;
    p->appinfo[p->appinfo_len] = '\0';
}

typedef enum { IH_NONE, IH_PLAIN, IH_NAMED } images_heading_kind;

/* "Binary Images:" (IH_PLAIN) or CrashReporter's "Binary Images (dpkg):" (IH_NAMED: any
 * parenthesised name up to 40 bytes). */
static images_heading_kind images_heading(const char *s, size_t n)
{
    static const char H[] = "Binary Images";
    if (!cr_starts(s, n, H))
        return IH_NONE;
    size_t i = sizeof H - 1;
    if (i < n && s[i] == ':')
        return IH_PLAIN;
    if (i + 1 < n && s[i] == ' ' && s[i + 1] == '(') {
        const char *close = memchr(s + i + 2, ')', n - i - 2);
        if (close != NULL && close - (s + i + 2) <= 40 && close + 1 < s + n && close[1] == ':')
            return IH_NAMED;
    }
    return IH_NONE;
}

/* What stacksift's own Apple-style rendering adds for reports that chain errors (Bugsnag's
 * exceptions[1...], Sentry's earlier exception values): "Caused by: Type: reason", then that
 * error's frame lines, one such block per cause, nearest first (render.c's render_causes).
 * Apple's own reports have none; reading them back keeps a rendered report whole. */
static const char CAUSED_BY[] = "Caused by:";

/* The rest of a "Caused by:" line: a new cause, its type up to the first ": " (the whole text
 * when there is none), its reason after; its frame lines follow. */
static void cause_line(text_parser *p, const char *s, size_t n)
{
    crashreport_cause *c = cr_add_cause(p->b);
    if (c == NULL)
        return;
    cr_trim(&s, &n);
    const char *sep = NULL;
    for (size_t i = 0; i + 1 < n && sep == NULL; i++)
        if (s[i] == ':' && s[i + 1] == ' ')
            sep = s + i;
    size_t tn = sep ? (size_t)(sep - s) : n;
    if (tn > 0)
        c->type = cr_strndup(p->b, s, tn);
    if (sep != NULL) {
        const char *r = sep + 2;
        size_t rn = n - tn - 2;
        cr_trim(&r, &rn);
        if (rn > 0)
            c->reason = cr_strndup(p->b, r, rn);
    }
    p->state = S_CAUSE;
    p->last_inlined = false;
    p->known_lines++;
}

static void general_line(text_parser *p, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (s[0] == 'T' && cr_starts(s, n, "Thread ")) {
        if (n <= CRASHREPORT_MAX_LINE && thread_line(p, s, n))
            p->known_lines++;
        return;
    }
    if (images_heading(s, n) == IH_NAMED) {
        /* CrashReporter's further image sections ("(App Store):", "(Other):") */
        p->state = S_IMAGES;
        p->known_lines++;
        return;
    }
    if (p->state == S_AFTER)
        return; /* metadata after the images belongs to appended sections, not the report */
    if (cr_starts(s, n, "Last Exception Backtrace:") ||
        (cr_starts(s, n, "Application Specific Backtrace ") && !p->b->r->has_leb)) {
        if (p->b->r->has_leb) {
            cr_note(p->b, "line %zu: a second Last Exception Backtrace was ignored", p->lineno);
            return;
        }
        p->b->r->has_leb = true;
        p->state = S_LEB;
        p->last_inlined = false;
        p->known_lines++;
        return;
    }
    if (cr_starts(s, n, CAUSED_BY)) {
        cause_line(p, s + sizeof CAUSED_BY - 1, n - (sizeof CAUSED_BY - 1));
        return;
    }
    if (images_heading(s, n) == IH_PLAIN) {
        p->state = S_IMAGES;
        p->known_lines++;
        return;
    }
    header_rc h = header_line(p->b, s, n);
    if (h != H_NONE)
        p->known_lines++;
    if (h == H_BLOCK)
        p->state = S_APPINFO;
}

/* A frame line with its address, else one without (split_frame_line_noaddr, remembering its
 * symbol column for the lines after it). */
static frame_line_rc split_any_frame_line(text_parser *p, frame_line *fl, const char *s, size_t n)
{
    frame_line_rc rc = split_frame_line(fl, s, n);
    if (rc == FL_NO_ADDRESS && split_frame_line_noaddr(fl, s, n, p->noaddr_column) == FL_OK) {
        p->noaddr_column = fl->sym_off;
        return FL_OK;
    }
    return rc;
}

/* A stack excerpt: frame 0 of a report that has shown no thread yet starts the crashed thread
 * (index 0), as services display the crashing stack alone. True if the line was that. */
static bool excerpt_start(text_parser *p, const char *s, size_t n, size_t off)
{
    frame_line fl;
    size_t fn = cut_annotation(s, n);
    if (split_any_frame_line(p, &fl, s, fn) != FL_OK)
        return false;
    crashreport_thread *t = cr_add_thread(p->b);
    if (t == NULL)
        return true;
    t->index = 0;
    t->crashed = true;
    p->thread_i = p->b->r->nthreads - 1;
    p->state = S_THREAD;
    p->last_inlined = false;
    frame_from_line(p, &fl, off, fn);
    p->known_lines++;
    return true;
}

static void text_line(text_parser *p, const char *s, size_t n, size_t off)
{
    cr_builder *b = p->b;
    size_t tn = n;
    while (tn > 0 && cr_is_space(s[tn - 1]))
        tn--;
    if (tn == 11 && memcmp(s, "Full Report", 11) == 0) {
        p->state = S_DONE;
        return;
    }
    switch (p->state) {
    case S_DONE:
        return;
    case S_IMAGES:
        if (tn == 0) {
            p->state = S_AFTER;
            return;
        }
        if (tn <= CRASHREPORT_MAX_LINE && image_line(b, p->md, s, tn)) {
            p->known_lines++;
            return;
        }
        if (cr_is_space(s[0]) || s[0] == '0') {
            cr_note(b, "line %zu: unreadable Binary Images line", p->lineno);
            return;
        }
        p->state = S_AFTER;
        general_line(p, s, tn);
        return;
    case S_APPINFO:
        if (tn == 0) {
            if (p->appinfo != NULL && b->r->meta.app_specific_info == NULL)
                b->r->meta.app_specific_info = p->appinfo;
            p->appinfo = NULL;
            p->appinfo_len = 0;
            p->state = S_GENERAL;
            return;
        }
        appinfo_add(p, s, tn);
        return;
    case S_LEB_LIST:
        if (leb_list_line(p, s, tn, off))
            p->state = S_GENERAL;
        return;
    case S_LEB:
    case S_THREAD:
    case S_CAUSE:
        if (tn == 0) {
            if (p->state != S_LEB || b->r->nleb > 0)
                p->state = S_GENERAL;
            return;
        }
        if (p->state == S_LEB && s[0] == '(') {
            p->state = leb_list_line(p, s, tn, off) ? S_GENERAL : S_LEB_LIST;
            return;
        }
        if (cr_is_blank(s[0]) && continue_frame(p, off, tn))
            return;
        if (s[0] >= '0' && s[0] <= '9') {
            frame_line fl;
            size_t fn = cut_annotation(s, tn);
            frame_line_rc rc = split_any_frame_line(p, &fl, s, fn);
            if (rc == FL_OK) {
                frame_from_line(p, &fl, off, fn);
                p->known_lines++;
                return;
            }
            if (rc == FL_NO_ADDRESS) {
                cr_note(b, "line %zu: frame line without an address or a symbol (truncated?)",
                        p->lineno);
                return;
            }
        }
        if (p->line_markup)
            return; /* an annotation between frame lines ("<span>Missing frame</span>") */
        p->state = S_GENERAL;
        general_line(p, s, tn);
        return;
    case S_GENERAL:
        if (b->r->nthreads == 0 && s[0] == '0' && tn > 1 && cr_is_blank(s[1]) &&
            excerpt_start(p, s, tn, off))
            return;
        general_line(p, s, tn);
        return;
    case S_AFTER:
        general_line(p, s, tn);
        return;
    }
}

err_code cr_parse_apple_text(crashreport **out, const char *data, size_t len, arena *a,
                             err_info *err)
{
    cr_builder b;
    text_parser p = {0};
    err_code rc = ERR_OK;
    *out = NULL;
    pthread_once(&patterns_once, compile_patterns);
    if (!patterns_ok)
        return err_set(err, ERR_INTERNAL, "compiling the crash report patterns failed");
    if (!cr_builder_init(&b, CRASHREPORT_FORMAT_APPLE_TEXT, a, err))
        return ERR_TOO_LARGE;
    p.b = &b;
    p.pending_name_index = -1;
    bool md_owned;
    p.md = thread_match_data(&md_owned);
    if (p.md == NULL)
        return err_set(err, ERR_INTERNAL, "allocating pcre2 match data failed");

    /* The renderer needs the original text; keep one copy in the arena. */
    char *text = cr_strndup(&b, data, len);
    if (text == NULL) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    b.r->text = text;
    b.r->text_len = len;
    p.text = text;

    size_t off = 0;
    /* iOS 8-14 .ips: a one-line JSON header before the text */
    while (off < len && cr_is_space(text[off]))
        off++;
    if (off < len && text[off] == '{') {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t hn = nl ? (size_t)(nl - (text + off)) : len - off;
        cr_parse_ips_header_into(&b, text + off, hn);
        off += hn;
    } else {
        off = 0;
    }
    while (off < len && p.state != S_DONE && !b.failed) {
        const char *s = text + off;
        const char *nl = memchr(s, '\n', len - off);
        size_t n = nl ? (size_t)(nl - s) : len - off;
        p.lineno++;
        size_t line_off = off;
        /* markup around a pasted line is blanked; the line then starts where its text does */
        p.line_markup = n <= CRASHREPORT_MAX_LINE && memchr(s, '<', n) != NULL &&
                        blank_html_tags(text + off, n);
        if (p.line_markup) {
            size_t lead = 0;
            while (lead < n && cr_is_blank(s[lead]))
                lead++;
            s += lead;
            line_off += lead;
            n -= lead;
        }
        if (n > CRASHREPORT_MAX_LINE && (p.state == S_THREAD || p.state == S_LEB ||
                                         p.state == S_CAUSE || p.state == S_IMAGES)) {
            /* not a frame or image line any real report has; the section goes on */
            cr_note(&b, "line %zu: %zu-byte line ignored", p.lineno, n);
        } else {
            text_line(&p, s, n, line_off);
        }
        off = nl ? (size_t)(nl - text) + 1 : len;
    }
    if (p.appinfo != NULL && b.r->meta.app_specific_info == NULL)
        b.r->meta.app_specific_info = p.appinfo;
    if (b.failed) {
        rc = ERR_TOO_LARGE;
        goto done;
    }
    if (p.known_lines == 0) {
        rc = err_set(err, ERR_INVALID,
                     "not a crash report: neither JSON nor Apple crash report text");
        goto done;
    }
    if (b.r->nimages == 0 && b.r->nthreads > 0)
        cr_note(&b, "no Binary Images section (truncated report?)");
    rc = cr_finish(&b, "apple crash report");
    if (rc != ERR_OK)
        goto done;
    *out = b.r;
done:
    if (md_owned)
        pcre2_match_data_free(p.md);
    return rc;
}
