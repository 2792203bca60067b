#include "demangle/demangle.h"
#include "demangle/swift_internal.h"

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
    /* every Swift mangling below starts with one of these: most names end here (this runs
     * for every frame a signature normalizes) */
    if (name[0] != '@' && name[0] != '_' && name[0] != '$' && name[0] != 'T')
        return false;
    if (strncmp(name, "@__swiftmacro_", 14) == 0)
        return true;
    bool underscore = name[0] == '_';
    if (underscore)
        name++;
    if (strncmp(name, "$s", 2) == 0 || strncmp(name, "$S", 2) == 0 || strncmp(name, "$e", 2) == 0 ||
        strncmp(name, "T0", 2) == 0)
        return true;
    /* Swift 3's "_T" + a global's first operator (entity, thunk, metadata, witness...) */
    return underscore && name[0] == 'T' && name[1] != '\0' && strchr("FTvIiZMWwPt", name[1]) != NULL;
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
    if (!(flags & DEMANGLE_NO_SWIFT) && demangle_is_swift(name)) {
        char buf[DEMANGLE_MAX_OUTPUT + 1];
        size_t n = swift_demangle_buf(buf, sizeof buf, name, strlen(name), (flags & DEMANGLE_SIMPLIFIED) != 0);
        if (n == 0)
            return NULL;
        return strdup(buf);
    }
    return NULL;
}

size_t demangle_name_buf(char *buf, size_t cap, const char *name, unsigned flags)
{
    if (!(flags & DEMANGLE_NO_SWIFT) && !demangle_is_cxx(name) && demangle_is_swift(name)) {
        char tmp[DEMANGLE_MAX_OUTPUT + 1];
        size_t n = swift_demangle_buf(cap > DEMANGLE_MAX_OUTPUT ? buf : tmp,
                                      cap > DEMANGLE_MAX_OUTPUT ? cap : sizeof tmp, name, strlen(name),
                                      (flags & DEMANGLE_SIMPLIFIED) != 0);
        if (cap <= DEMANGLE_MAX_OUTPUT && cap > 0) {
            size_t k = n < cap ? n : cap - 1;
            memcpy(buf, tmp, k);
            buf[k] = '\0';
        }
        if (n == 0 && cap > 0)
            buf[0] = '\0';
        return n;
    }
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
