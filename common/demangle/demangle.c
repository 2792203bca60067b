#include "demangle/demangle.h"

#include <stdlib.h>
#include <string.h>

/* libstdc++ / libc++abi: Itanium C++ ABI, section 3.4 "Demangler API" */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

bool demangle_is_cxx(const char *name)
{
    if (name[0] == '_' && name[1] == '_' && name[2] == 'Z')
        name++;
    return name[0] == '_' && name[1] == 'Z';
}

bool demangle_is_swift(const char *name)
{
    if (name[0] == '_')
        name++;
    return strncmp(name, "$s", 2) == 0 || strncmp(name, "$S", 2) == 0 ||
           strncmp(name, "$e", 2) == 0 || strncmp(name, "T0", 2) == 0;
}

static char *demangle_cxx(const char *name)
{
    if (name[0] == '_' && name[1] == '_' && name[2] == 'Z')
        name++;
    int status = 0;
    char *out = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0)
        return NULL;
    if (strlen(out) > DEMANGLE_MAX_OUTPUT) {
        free(out);
        return NULL;
    }
    return out;
}

char *demangle_name(const char *name, unsigned flags)
{
    if (!(flags & DEMANGLE_NO_CXX) && demangle_is_cxx(name))
        return demangle_cxx(name);
    return NULL;
}

size_t demangle_name_buf(char *buf, size_t cap, const char *name, unsigned flags)
{
    char *s = demangle_name(name, flags);
    size_t n = s ? strlen(s) : 0;
    if (cap > 0) {
        size_t k = n < cap ? n : cap - 1;
        memcpy(buf, s ? s : "", k);
        buf[k] = '\0';
    }
    free(s);
    return n;
}
