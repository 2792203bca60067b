/*
 * demangle - the display form of a linkage name, one entry point for every user.
 *
 *   C++    `_Z...` through the system's demangler (libstdc++'s __cxa_demangle, Itanium C++ ABI
 *          section 5.1), as llvm-symbolizer --demangle and c++filt print it.
 *   Swift  `$s`/`_$s` (Swift 5+), `$S`/`_$S` (4.2), `_T0` (4.0), `$e` (embedded) through our
 *          own demangler, after the Swift repository's docs/ABI/Mangling.rst: the full form is
 *          what `swift demangle` prints, DEMANGLE_SIMPLIFIED what `swift demangle --simplified`,
 *          atos and Xcode's crash reports print.
 *
 * Names come from untrusted reports and dSYMs: recursion depth, node count and output length
 * are bounded, and a name that does not demangle gives NULL (the caller shows it unchanged).
 */
#ifndef STACKSIFT_DEMANGLE_H
#define STACKSIFT_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

enum {
    DEMANGLE_SIMPLIFIED = 1u << 0, /* Swift: atos/Xcode form (no module prefixes, no types) */
    DEMANGLE_NO_SWIFT = 1u << 1,   /* leave Swift names alone */
    DEMANGLE_NO_CXX = 1u << 2,     /* leave C++ names alone */
};

/* DEMANGLE_REVISION - the revision of the display forms this code gives: raise it whenever a
 * change makes any name's display form differ (our Swift demangler, the C++ post-processing,
 * the flags' meaning). Symcaches store display forms made at build (common/symcache, the
 * "DISP" section) stamped with it; a reader of another revision demangles at lookup instead,
 * so a stored form is never older than the code that shows it. */
#define DEMANGLE_REVISION 1u

/* DEMANGLE_MAX_OUTPUT - longest display form produced (bytes, without the NUL); a longer one
 * counts as not demangled. */
#define DEMANGLE_MAX_OUTPUT 8192

/*
 * demangle_name - display form of the linkage name `name` (NUL-terminated; Mach-O's extra
 * leading underscore may be there or not).
 * Returns a malloc'd string the caller frees, or NULL when `name` is not a mangled name we
 * demangle under `flags` (show it unchanged).
 */
char *demangle_name(const char *name, unsigned flags);

/*
 * demangle_name_buf - demangle_name into the caller's `buf` of `cap` bytes (always
 * NUL-terminated when cap > 0). Returns the display form's length in bytes (it was cut if
 * that is >= cap), or 0 when `name` does not demangle (buf then holds "").
 */
size_t demangle_name_buf(char *buf, size_t cap, const char *name, unsigned flags);

/* demangle_is_swift - true when `name` carries a Swift mangling prefix ($s, _$s, $S, _$S,
 * $e, _$e, _T0, and Swift 3's _T when followed by a Swift entity). */
bool demangle_is_swift(const char *name);

/* demangle_is_cxx - true when `name` carries the Itanium C++ prefix (_Z, or __Z from Mach-O). */
bool demangle_is_cxx(const char *name);

#endif
