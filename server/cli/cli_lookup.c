/*
 * stacksift lookup -o INPUT [--arch ARCH] [-l LOAD_ADDRESS] [-i] [--json] ADDRESS...
 *
 * atos-compatible. INPUT is a .symc, a dSYM bundle, a zip of bundles or a Mach-O; anything but
 * a .symc is converted into a temp directory first. With -l the addresses are runtime
 * addresses of the image loaded at LOAD_ADDRESS (file address = address - load address +
 * __TEXT vmaddr); without it they are file addresses. No addresses on the command line:
 * read them from stdin, one per line.
 *
 * Plain output, one line per frame as atos prints it:
 *   function (in Image) (file:line)      DWARF knows the address
 *   function (in Image) + offset         only the symbol table does
 *   0x1000                               nothing covers the address
 * Without -i only the concrete function is named (with the innermost line); -i prints every
 * inlined frame, innermost first. --json prints one object per address with all frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/cli_tmpdir.h"
#include "dsym/dsym.h"
#include "macho/macho.h"
#include "symcache/symcache.h"

typedef struct {
    char paths[MACHO_MAX_SLICES * 4][4096];
    char arches[MACHO_MAX_SLICES * 4][16];
    size_t n;
} built_list;

static void remember(const dsym_built *b, void *ctx)
{
    built_list *l = ctx;
    if (l->n < sizeof l->paths / sizeof l->paths[0]) {
        snprintf(l->paths[l->n], sizeof l->paths[0], "%s", b->path);
        snprintf(l->arches[l->n], sizeof l->arches[0], "%s", b->arch);
        l->n++;
    }
}

static bool is_symcache_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[8] = {0};
    if (f == NULL)
        return false;
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == 8 && memcmp(magic, "STKSYMC", 8) == 0;
}

/* Open the symcache for INPUT/--arch; converts non-.symc input into tmp_dir. */
static int open_input(symcache **out, const char *input, const char *arch, char *tmp_dir)
{
    err_info err = {0};
    if (is_symcache_file(input)) {
        if (symcache_open(out, input, &err) != ERR_OK) {
            fprintf(stderr, "stacksift: %s\n", err.msg);
            return 1;
        }
        if (arch != NULL && strcmp(symcache_arch(*out), arch) != 0) {
            fprintf(stderr, "stacksift: %s is %s, not %s\n", input, symcache_arch(*out), arch);
            symcache_close(*out);
            *out = NULL;
            return 1;
        }
        return 0;
    }
    if (cli_tmpdir_make(tmp_dir, 4096, "lookup") != 0) {
        fprintf(stderr, "stacksift: cannot create a temp directory: %s\n", strerror(errno));
        return 1;
    }
    built_list *l = calloc(1, sizeof *l);
    int status = 1;
    if (l == NULL)
        abort();
    if (dsym_build_symcaches(input, tmp_dir, NULL, remember, l, &err) != ERR_OK) {
        fprintf(stderr, "stacksift: %s\n", err.msg);
        goto done;
    }
    size_t pick = l->n;
    for (size_t i = 0; i < l->n; i++) {
        if (arch != NULL ? strcmp(l->arches[i], arch) == 0 : (l->n == 1 || strcmp(l->arches[i], "arm64") == 0)) {
            pick = i;
            break;
        }
    }
    if (pick == l->n && arch == NULL && l->n > 0)
        pick = 0; /* no arm64 slice: the first one, as atos takes the first match */
    if (pick == l->n) {
        fprintf(stderr, "stacksift: %s has no %s slice (has:", input, arch ? arch : "matching");
        for (size_t i = 0; i < l->n; i++)
            fprintf(stderr, " %s", l->arches[i]);
        fprintf(stderr, ")\n");
        goto done;
    }
    if (symcache_open(out, l->paths[pick], &err) != ERR_OK) {
        fprintf(stderr, "stacksift: %s\n", err.msg);
        goto done;
    }
    status = 0;
done:
    free(l);
    return status;
}

static bool parse_hex(const char *s, uint64_t *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (*s == '\0')
        return false;
    uint64_t v = 0;
    int digits = 0;
    for (; *s && *s != '\n' && *s != '\r' && *s != ' ' && *s != '\t'; s++) {
        int c = (unsigned char)*s, d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        if (++digits > 16)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    if (*s != '\0')
        return false;
    *out = v;
    return true;
}

/* "0x" + lower-case hex of v into out; returns the length */
static size_t format_hex(char *out, uint64_t v)
{
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    out[0] = '0', out[1] = 'x';
    for (size_t i = 0; i < n; i++)
        out[2 + i] = tmp[n - 1 - i];
    return n + 2;
}

/* decimal of v into out; returns the length */
static size_t format_u64(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

typedef struct {
    const symcache *sc;
    bool has_load, inlines, json;
    uint64_t load;
    buf out;
    int status;
} lookup_ctx;

static void emit_plain(lookup_ctx *c, const symcache_frame *f, uint64_t file_addr, const symcache_frame *loc)
{
    char num[24];
    buf_append_str(&c->out, f->function);
    buf_append(&c->out, " (in ", 5);
    buf_append_str(&c->out, symcache_image_name(c->sc));
    if (loc->file != NULL && !f->from_symtab) {
        const char *base = strrchr(loc->file, '/');
        buf_append(&c->out, ") (", 3);
        buf_append_str(&c->out, base ? base + 1 : loc->file);
        buf_putc(&c->out, ':');
        buf_append(&c->out, num, format_u64(num, loc->line));
        buf_append(&c->out, ")\n", 2);
    } else {
        buf_append(&c->out, ") + ", 4);
        buf_append(&c->out, num, format_u64(num, file_addr - f->sym_addr));
        buf_putc(&c->out, '\n');
    }
}

/* Look up one address and append its answer to c->out. */
static void lookup_one(lookup_ctx *c, uint64_t addr, uint64_t file_addr)
{
    symcache_frame frames[SYMCACHE_MAX_FRAMES];
    size_t n = symcache_lookup(frames, SYMCACHE_MAX_FRAMES, c->sc, file_addr);
    if (c->json) {
        /* hand-formatted: this loop is what a 100,000-address batch spends its time in */
        char num[32];
        buf_append(&c->out, "{\"address\":\"", 12);
        buf_append(&c->out, num, format_hex(num, addr));
        buf_append(&c->out, "\",\"frames\":[", 12);
        for (size_t i = 0; i < n; i++) {
            buf_append_str(&c->out, i ? ",{\"function\":" : "{\"function\":");
            buf_append_json_str(&c->out, frames[i].function, strlen(frames[i].function));
            buf_append_str(&c->out, ",\"file\":");
            if (frames[i].file)
                buf_append_json_str(&c->out, frames[i].file, strlen(frames[i].file));
            else
                buf_append_str(&c->out, "null");
            buf_append_str(&c->out, ",\"line\":");
            buf_append(&c->out, num, format_u64(num, frames[i].line));
            buf_append_str(&c->out, frames[i].inlined ? ",\"inlined\":true" : ",\"inlined\":false");
            if (frames[i].from_symtab)
                buf_printf(&c->out, ",\"symbol_offset\":%llu",
                           (unsigned long long)(file_addr - frames[i].sym_addr));
            buf_putc(&c->out, '}');
        }
        buf_append_str(&c->out, "]}\n");
    } else if (n == 0) {
        char num[24];
        buf_append(&c->out, num, format_hex(num, addr));
        buf_putc(&c->out, '\n');
    } else if (c->inlines) {
        for (size_t i = 0; i < n; i++)
            emit_plain(c, &frames[i], file_addr, &frames[i]);
    } else {
        emit_plain(c, &frames[n - 1], file_addr, &frames[0]);
    }
}

typedef struct {
    uint64_t addr, file_addr;
    size_t out_start, out_len; /* its answer in c->out */
} query;

typedef struct {
    uint64_t file_addr;
    size_t index; /* into the query array */
} query_key;

static int cmp_query_key(const void *a, const void *b)
{
    const query_key *x = a, *y = b;
    if (x->file_addr != y->file_addr)
        return x->file_addr < y->file_addr ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Answer every query, in address order (neighbouring lookups then share cache lines and
 * pages of the symcache: half the time of input order on 100,000 random addresses), and
 * print the answers in input order. */
static void lookup_all(lookup_ctx *c, query *q, size_t n)
{
    query_key *order = xcalloc(n ? n : 1, sizeof *order);
    for (size_t i = 0; i < n; i++) {
        q[i].file_addr = c->has_load ? q[i].addr - c->load + symcache_text_vmaddr(c->sc) : q[i].addr;
        order[i] = (query_key){q[i].file_addr, i};
    }
    if (n > 1)
        qsort(order, n, sizeof *order, cmp_query_key);
    buf_reserve(&c->out, n * 512); /* a --json -i answer of a C++ app is ~600 bytes */
    for (size_t i = 0; i < n; i++) {
        query *x = &q[order[i].index];
        x->out_start = c->out.len;
        lookup_one(c, x->addr, x->file_addr);
        x->out_len = c->out.len - x->out_start;
    }
    /* print the answers in input order through stdio's buffer: gathering them into a second
     * buffer first (tens of MB for 100,000 addresses) costs more in page faults than it saves */
    static char stdout_buf[1 << 20]; /* nothing was written to stdout before: allowed */
    setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
    for (size_t i = 0; i < n; i++)
        fwrite(c->out.data + q[i].out_start, 1, q[i].out_len, stdout);
    fflush(stdout);
    free(order);
}

/* Parse `text` as an address and queue it; a bad one is reported now and skipped. */
static void add_query(lookup_ctx *c, query **q, size_t *n, size_t *cap, const char *text)
{
    uint64_t addr;
    if (!parse_hex(text, &addr)) {
        fprintf(stderr, "stacksift: '%s' is not a hexadecimal address\n", text);
        c->status = 1;
        return;
    }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *q = xreallocarray(*q, *cap, sizeof **q);
    }
    (*q)[(*n)++] = (query){addr, 0, 0, 0};
}

int cli_lookup(int argc, char **argv)
{
    const char *input = NULL, *arch = NULL;
    lookup_ctx c = {0};
    int first_addr = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            input = argv[++i];
        else if ((strcmp(argv[i], "--arch") == 0 || strcmp(argv[i], "-arch") == 0) && i + 1 < argc)
            arch = argv[++i];
        else if (strcmp(argv[i], "-l") == 0 && i + 1 < argc) {
            if (!parse_hex(argv[++i], &c.load)) {
                fprintf(stderr, "stacksift lookup: bad load address '%s'\n", argv[i]);
                return 2;
            }
            c.has_load = true;
        } else if (strcmp(argv[i], "-i") == 0)
            c.inlines = true;
        else if (strcmp(argv[i], "--json") == 0)
            c.json = true;
        else if (argv[i][0] == '-' && argv[i][1] != '\0' && !(argv[i][1] >= '0' && argv[i][1] <= '9')) {
            fprintf(stderr, "stacksift lookup: unknown option '%s'\n", argv[i]);
            return 2;
        } else {
            first_addr = i;
            break;
        }
    }
    if (input == NULL) {
        fprintf(stderr, "usage: stacksift lookup -o INPUT [--arch ARCH] [-l LOAD_ADDRESS] [-i] [--json] ADDRESS...\n");
        return 2;
    }
    symcache *sc = NULL;
    char tmp_dir[4096] = "";
    int status = open_input(&sc, input, arch, tmp_dir);
    cli_tmpdir_remove(tmp_dir); /* the open symcache stays mapped after its file is unlinked */
    if (status != 0)
        return status;
    c.sc = sc;
    buf_init(&c.out);
    query *q = NULL;
    size_t nq = 0, capq = 0;
    if (first_addr < argc) {
        for (int i = first_addr; i < argc; i++)
            add_query(&c, &q, &nq, &capq, argv[i]);
    } else {
        char line[256];
        while (fgets(line, sizeof line, stdin) != NULL) {
            if (strchr(line, '\n') == NULL && !feof(stdin)) {
                int ch;
                while ((ch = getchar()) != EOF && ch != '\n')
                    ;
                fprintf(stderr, "stacksift: input line too long\n");
                c.status = 1;
                continue;
            }
            line[strcspn(line, "\r\n")] = '\0';
            if (line[0] == '\0')
                continue;
            add_query(&c, &q, &nq, &capq, line);
        }
    }
    lookup_all(&c, q, nq);
    free(q);
    buf_reset(&c.out);
    symcache_close(sc);
    return c.status;
}
