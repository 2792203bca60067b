/*
 * stacksift demangle [--simplified] [--no-swift|--no-cxx] [NAME...]
 *
 * Names as arguments: one output line each, the display form (common/demangle) or the name
 * unchanged when it does not demangle. No names: a filter over stdin like c++filt and
 * `swift demangle`: every mangled Swift or C++ name inside the text is replaced and everything
 * else passes through byte for byte, one output line per input line (so
 * `stacksift demangle --simplified < crash.txt` reads a whole report).
 * --simplified prints Swift names as atos and Xcode's crash reports do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "demangle/demangle.h"

/* A symbol is a run of these; '.' joins Swift's ".suffix" and C++'s ".cold" clones. */
static bool symbol_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.' || c == '@';
}

static bool starts_mangled(const char *s, size_t n)
{
    static const char *const prefixes[] = {"_Z", "__Z", "$s", "$S", "$e", "_$s", "_$S", "_$e", "_T0",
                                           "@__swiftmacro_", "_T"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t k = strlen(prefixes[i]);
        if (n > k && memcmp(s, prefixes[i], k) == 0)
            return true;
    }
    return false;
}

/* filter_line - write `line` (len bytes, may hold NULs) with each mangled name replaced */
static void filter_line(FILE *out, const char *line, size_t len, unsigned flags)
{
    size_t i = 0;
    char tok[DEMANGLE_MAX_OUTPUT];
    while (i < len) {
        bool boundary = i == 0 || !symbol_char((unsigned char)line[i - 1]);
        if (boundary && symbol_char((unsigned char)line[i])) {
            size_t j = i;
            while (j < len && symbol_char((unsigned char)line[j]))
                j++;
            size_t n = j - i;
            while (n > 0 && line[i + n - 1] == '.')   /* a sentence's full stop is not ours */
                n--;
            if (n > 0 && n < sizeof tok && starts_mangled(line + i, n) && memchr(line + i, '\0', n) == NULL) {
                memcpy(tok, line + i, n);
                tok[n] = '\0';
                char *d = demangle_name(tok, flags);
                if (d != NULL) {
                    fputs(d, out);
                    free(d);
                    i += n;
                    continue;
                }
            }
            fwrite(line + i, 1, j - i, out);
            i = j;
            continue;
        }
        fputc(line[i], out);
        i++;
    }
}

int cli_demangle(int argc, char **argv)
{
    unsigned flags = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (strcmp(argv[i], "--simplified") == 0) {
            flags |= DEMANGLE_SIMPLIFIED;
        } else if (strcmp(argv[i], "--no-swift") == 0) {
            flags |= DEMANGLE_NO_SWIFT;
        } else if (strcmp(argv[i], "--no-cxx") == 0) {
            flags |= DEMANGLE_NO_CXX;
        } else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: stacksift demangle [--simplified] [--no-swift|--no-cxx] [NAME...]\n"
                   "  names as arguments, or a filter over stdin replacing every mangled Swift\n"
                   "  or C++ name in the text (everything else unchanged)\n");
            return 0;
        } else {
            fprintf(stderr, "stacksift demangle: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (i < argc) {
        for (; i < argc; i++) {
            char *d = demangle_name(argv[i], flags);
            puts(d ? d : argv[i]);
            free(d);
        }
        return 0;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        filter_line(stdout, line, (size_t)n, flags);
        fflush(stdout);   /* a filter: each line as soon as it is read */
    }
    free(line);
    return ferror(stdin) ? 1 : 0;
}
