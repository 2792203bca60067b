#include "debuginfo/demangle.h"

#include <stddef.h>
#include <string.h>

/* libstdc++ / libc++abi: Itanium C++ ABI, section 3.4 "Demangler API" */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *demangle_symbol(const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return NULL;
    int status = 0;
    char *out = __cxa_demangle(name, NULL, NULL, &status);
    return status == 0 ? out : NULL;
}

bool demangle_is_swift(const char *name)
{
    if (name[0] == '_')
        name++;
    return strncmp(name, "$s", 2) == 0 || strncmp(name, "$S", 2) == 0 ||
           strncmp(name, "$e", 2) == 0 || strncmp(name, "T0", 2) == 0;
}
