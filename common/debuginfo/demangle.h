/*
 * demangle - symbol names as llvm-symbolizer --demangle prints them, using the system's
 * C++ demangler (libstdc++'s __cxa_demangle, Itanium C++ ABI).
 */
#ifndef STACKSIFT_DEBUGINFO_DEMANGLE_H
#define STACKSIFT_DEBUGINFO_DEMANGLE_H

#include <stdbool.h>

/* demangle_symbol - the demangled form of `name` (a linkage name as DWARF gives it, without
 * Mach-O's extra leading underscore) as a malloc'd string the caller frees, or NULL when the
 * name is not a mangled C++ name or does not demangle. */
char *demangle_symbol(const char *name);

/* demangle_is_swift - true for Swift-mangled names ($s..., _$s..., $S, _T0...). */
bool demangle_is_swift(const char *name);

#endif
