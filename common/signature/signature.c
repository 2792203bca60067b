/*
 * signature.c - the grouping rules of signature.h: stack choice, skip table, in-app images,
 * name normalization, fallbacks, SHA-256 fingerprint (OpenSSL EVP).
 */
#include "signature/signature.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonw.h"
#include "demangle/demangle.h"

/* ---- the skip table (rule 3) ------------------------------------------------------------ */

typedef enum { MATCH_EXACT, MATCH_PREFIX } match_kind;

typedef struct {
    const char *name;  /* normalized function name */
    match_kind match;
} skip_entry;

/* Error-raising machinery: frames that are where a crash was reported, never why. Names are
 * compared after signature_normalize_symbol, so "abort + 28" and "std::terminate()" match. */
static const skip_entry SIGNATURE_SKIP[] = {
    /* Objective-C exceptions */
    {"objc_exception_throw", MATCH_EXACT},
    {"objc_exception_rethrow", MATCH_EXACT},
    {"objc_terminate", MATCH_EXACT},
    {"_objc_terminate", MATCH_EXACT},
    {"__exceptionPreprocess", MATCH_EXACT},
    {"_CFThrowFormattedException", MATCH_EXACT},
    {"+[NSException raise:format:]", MATCH_EXACT},
    {"+[NSException raise:format:arguments:]", MATCH_EXACT},
    {"-[NSException raise]", MATCH_EXACT},
    {"_NSExceptionRaise", MATCH_EXACT},
    /* C++ exceptions and terminate */
    {"__cxa_throw", MATCH_EXACT},
    {"__cxa_rethrow", MATCH_EXACT},
    {"__cxa_bad_cast", MATCH_EXACT},
    {"__cxa_bad_typeid", MATCH_EXACT},
    {"__cxa_pure_virtual", MATCH_EXACT},
    {"std::terminate", MATCH_EXACT},
    {"std::__terminate", MATCH_EXACT},
    {"__cxxabiv1::__terminate", MATCH_EXACT},
    {"std::__1::__throw_", MATCH_PREFIX},
    {"std::__throw_", MATCH_PREFIX},
    {"demangling_terminate_handler", MATCH_EXACT},
    /* abort, signals, assertions */
    {"abort", MATCH_EXACT},
    {"__abort", MATCH_EXACT},
    {"__abort_message", MATCH_EXACT},
    {"abort_message", MATCH_EXACT},
    {"__pthread_kill", MATCH_EXACT},
    {"pthread_kill", MATCH_EXACT},
    {"raise", MATCH_EXACT},
    {"__assert_rtn", MATCH_EXACT},
    {"__assert", MATCH_EXACT},
    {"__assert_fail", MATCH_EXACT},
    {"__stack_chk_fail", MATCH_EXACT},
    {"__chk_fail", MATCH_EXACT},
    {"__chk_fail_overflow", MATCH_EXACT},
    {"_os_crash", MATCH_EXACT},
    {"_os_crash_msg", MATCH_EXACT},
    {"_sigtramp", MATCH_EXACT},
    {"__sigtramp", MATCH_EXACT},
    {"_dispatch_assert_queue_fail", MATCH_EXACT},
    {"__DISPATCH_WAIT_FOR_QUEUE__", MATCH_EXACT},
    {"malloc_error_break", MATCH_EXACT},
    {"malloc_vreport", MATCH_EXACT},
    {"malloc_report", MATCH_EXACT},
    {"___BUG_IN_CLIENT_OF_LIBMALLOC_POINTER_BEING_FREED_WAS_NOT_ALLOCATED", MATCH_EXACT},
    /* Swift assertions and runtime failure traps */
    {"_assertionFailure", MATCH_EXACT},
    {"Swift._assertionFailure", MATCH_PREFIX},
    {"_fatalErrorMessage", MATCH_EXACT},
    {"Swift._fatalErrorMessage", MATCH_PREFIX},
    {"fatalError", MATCH_EXACT},
    {"Swift.fatalError", MATCH_PREFIX},
    {"preconditionFailure", MATCH_EXACT},
    {"Swift.preconditionFailure", MATCH_PREFIX},
    {"assertionFailure", MATCH_EXACT},
    {"Swift.assertionFailure", MATCH_PREFIX},
    {"$ss17_assertionFailure", MATCH_PREFIX},
    {"$ss18_fatalErrorMessage", MATCH_PREFIX},
    {"Swift runtime failure", MATCH_PREFIX},
    {"swift_unexpectedError", MATCH_EXACT},
    {"swift_errorInMain", MATCH_EXACT},
    {"swift::fatalError", MATCH_EXACT},
    {"swift::fatalErrorv", MATCH_EXACT},
    {"swift::swift_abortRetainUnowned", MATCH_EXACT},
    {"swift_reportError", MATCH_EXACT},
    {"_swift_stdlib_reportFatalError", MATCH_PREFIX},
    {"_swift_stdlib_reportUnimplementedInitializer", MATCH_PREFIX},
    {"_unimplementedInitializer", MATCH_EXACT},
    {"_preconditionFailure", MATCH_EXACT},
    {"swift_abortRetainOverflow", MATCH_EXACT},
    {"swift_abortUnownedRetainOverflow", MATCH_EXACT},
    {"swift_abortWeakRetainOverflow", MATCH_EXACT},
    {"swift::swift_abortRetainOverflow", MATCH_EXACT},
    {"swift_unknownObjectRetainUnowned", MATCH_EXACT},
    {"_swift_runtime_on_report", MATCH_EXACT},
    {"swift_dynamicCastFailure", MATCH_EXACT},
    {"swift::swift_dynamicCastFailure", MATCH_EXACT},
    {"swift_deletedMethodError", MATCH_EXACT},
};

bool signature_is_skipped(const char *name)
{
    for (size_t i = 0; i < sizeof SIGNATURE_SKIP / sizeof SIGNATURE_SKIP[0]; i++) {
        const skip_entry *e = &SIGNATURE_SKIP[i];
        if (name[0] != e->name[0])   /* most names part here, before a call */
            continue;
        if (e->match == MATCH_EXACT ? strcmp(name, e->name) == 0
                                    : strncmp(name, e->name, strlen(e->name)) == 0)
            return true;
    }
    return false;
}

/* ---- in-app images ------------------------------------------------------------------------ */

/* Crash-reporter SDKs: as images (frameworks in the bundle) and as functions (linked in). */
static const char *const SDK_IMAGES[] = {
    "KSCrash", "KSCrashCore", "KSCrashRecording", "KSCrashRecordingCore", "KSCrashFilters",
    "KSCrashInstallations", "KSCrashReportingCore", "CrashReporter", "PLCrashReporter",
    "Sentry", "SentrySwiftUI", "SentryPrivate", "Bugsnag", "BSGCrashReporter",
};
static const char *const SDK_FUNCTION_PREFIXES[] = {
    "KSCrash", "kscrash", "kscm_", "ksmc_", "kssc_", "ksbt_", "kssym", "ksfu_", "kscrs_",
    "-[KSCrash", "+[KSCrash", "PLCrash", "plcrash", "-[PLCrash", "+[PLCrash",
    "SentryCrash", "sentrycrash", "-[SentryCrash", "+[SentryCrash", "-[Sentry", "+[Sentry",
    "Sentry.", "sentry_", "bsg_ksc", "bsg_kscrash", "-[BSG_KSCrash", "-[BugsnagCrash",
};

bool signature_function_in_app(const char *name)
{
    for (size_t i = 0; i < sizeof SDK_FUNCTION_PREFIXES / sizeof SDK_FUNCTION_PREFIXES[0]; i++)
        if (name[0] == SDK_FUNCTION_PREFIXES[i][0] &&
            strncmp(name, SDK_FUNCTION_PREFIXES[i], strlen(SDK_FUNCTION_PREFIXES[i])) == 0)
            return false;
    return true;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool name_in(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}

static bool is_sdk_name(const char *name)
{
    return name != NULL && name_in(name, SDK_IMAGES, sizeof SDK_IMAGES / sizeof SDK_IMAGES[0]);
}

/* Apple's system images by name: the OS's frameworks and libraries, never the app's code.
 * Used where a report gives an image's name without its path (stack excerpts, Bugsnag and
 * Raygun displays, JSON stacks); with a path, the path rules decide (a team's own framework
 * may well be called "Network"). SYSTEM_IMAGE_PREFIXES hold everywhere, path or not: the
 * Swift runtime that old apps embed (libswiftCore.dylib in X.app/Frameworks/) is Apple's. */
static const char *const SYSTEM_IMAGE_NAMES[] = {
    "UIKit", "UIKitCore", "UIFoundation", "Foundation", "CoreFoundation", "GraphicsServices",
    "QuartzCore", "CoreGraphics", "CoreText", "CoreImage", "CoreVideo", "CoreMedia", "CoreAudio",
    "AudioToolbox", "AVFoundation", "AVFAudio", "MediaToolbox", "CFNetwork", "Security",
    "SystemConfiguration", "CoreServices", "MobileCoreServices", "LaunchServices", "IOKit",
    "ImageIO", "Metal", "MetalKit", "OpenGLES", "GLKit", "WebKit", "WebCore", "JavaScriptCore",
    "WebKitLegacy", "SafariServices", "AppKit", "HIToolbox", "Carbon", "SwiftUI", "Combine",
    "CoreData", "CloudKit", "CoreLocation", "MapKit", "StoreKit", "Photos", "PhotosUI",
    "Contacts", "ContactsUI", "EventKit", "UserNotifications", "MessageUI", "GameKit",
    "SpriteKit", "SceneKit", "ARKit", "RealityKit", "Vision", "CoreML", "Accelerate",
    "CoreMotion", "CoreBluetooth", "CoreTelephony", "HealthKit", "HomeKit", "AuthenticationServices",
    "LocalAuthentication", "FrontBoardServices", "BackBoardServices", "BaseBoard",
    "RunningBoardServices", "AssertionServices", "SpringBoardServices", "TextInput",
    "DocumentManager", "Swift", "_Concurrency", "dyld", "dyld_sim", "libdyld.dylib",
};
static const char *const SYSTEM_IMAGE_PREFIXES[] = {
    "libsystem_", "libswift", "libobjc.", "libobjc-", "libdispatch.", "libc++", "libxpc.",
    "libunwind.", "libcompiler_rt.", "libmacho.", "libcommonCrypto.", "libcorecrypto.",
    "libnetwork.", "liblaunch.", "libremovefile.", "libkeymgr.", "libcopyfile.", "libcache.",
    "libsqlite3.", "libz.", "libc.", "libicucore.", "libMobileGestalt.", "libBacktraceRecording.",
    "libRosetta", "libGPUSupport", "libGLImage.", "libCoreVMClient.", "com.apple.",
};

static bool has_prefix_in(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (name[0] == list[i][0] && strncmp(name, list[i], strlen(list[i])) == 0)
            return true;
    return false;
}

bool signature_system_image(const char *name, bool have_path)
{
    if (name == NULL || name[0] == '\0')
        return false;
    if (has_prefix_in(name, SYSTEM_IMAGE_PREFIXES,
                      sizeof SYSTEM_IMAGE_PREFIXES / sizeof SYSTEM_IMAGE_PREFIXES[0]))
        return true;
    return !have_path &&
           name_in(name, SYSTEM_IMAGE_NAMES, sizeof SYSTEM_IMAGE_NAMES / sizeof SYSTEM_IMAGE_NAMES[0]);
}

/* Whether `name` (an image name a report gives) names the app itself: the process, the app's
 * name, the executable of the process path, or the last part of the bundle identifier. */
static bool names_the_app(const crashreport *r, const char *name)
{
    const crashreport_metadata *m = &r->meta;
    if (name == NULL || name[0] == '\0')
        return false;
    if ((m->process != NULL && strcmp(name, m->process) == 0) ||
        (m->app_name != NULL && strcmp(name, m->app_name) == 0) ||
        (m->process_path != NULL && strcmp(name, base_name(m->process_path)) == 0))
        return true;
    if (m->bundle_id != NULL) {
        const char *dot = strrchr(m->bundle_id, '.');
        if (strcmp(name, dot ? dot + 1 : m->bundle_id) == 0)
            return true;
    }
    return false;
}

bool signature_image_in_app(const crashreport *r, size_t index)
{
    if (index >= r->nimages)
        return false;
    const crashreport_image *im = &r->images[index];
    const char *path = im->path;
    const char *name = im->name ? im->name : path ? base_name(path) : NULL;
    if (im->in_app != CRASHREPORT_IN_APP_UNKNOWN) /* decided already: by the sender or a pass */
        return im->in_app == CRASHREPORT_IN_APP_YES;
    if (is_sdk_name(name) || (path != NULL && is_sdk_name(base_name(path))))
        return false;
    if (signature_system_image(name, path != NULL) ||
        (path != NULL && signature_system_image(base_name(path), true)))
        return false;
    if (path != NULL) {
        if (r->meta.process_path != NULL && strcmp(path, r->meta.process_path) == 0)
            return true;
        /* A simulator app lives under ~/Library/Developer/CoreSimulator/Devices/.../Bundle/ */
        if (strstr(path, "/CoreSimulator/Devices/") != NULL && strstr(path, "/Bundle/") != NULL)
            return true;
        if (strncmp(path, "/System/", 8) == 0 || strstr(path, "/System/Library/") != NULL ||
            strncmp(path, "/usr/lib/", 9) == 0 || strstr(path, "/Developer/") != NULL)
            return false;
        if (strstr(path, "/var/containers/Bundle/Application/") != NULL ||
            strstr(path, ".app/") != NULL)
            return true;
        return false;
    }
    if (names_the_app(r, im->name))
        return true;
    return im->user;
}

bool signature_frame_in_app(const crashreport *r, const crashreport_frame *f, const char *file,
                            uint32_t line)
{
    if (f->image >= 0 && (size_t)f->image < r->nimages)
        return signature_image_in_app(r, (size_t)f->image);
    /* No Binary Images entry for the frame (a stack excerpt, a service's display): what the
     * frame line itself says. */
    const char *name = f->image_name;
    if (is_sdk_name(name) || signature_system_image(name, false))
        return false;
    if (names_the_app(r, name))
        return true;
    /* a source file and line: symbolicated from the team's own dSYM (Apple ships none) */
    return file != NULL && file[0] != '\0' && line > 0;
}

/* ---- name normalization (rule 6) ---------------------------------------------------------- */

typedef struct {
    char *p;
    size_t n, cap;
} out_str;

static void put(out_str *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n && o->n + 1 < o->cap; i++)
        o->p[o->n++] = s[i];
    o->p[o->n] = '\0';
}

static void puts_(out_str *o, const char *s)
{
    put(o, s, strlen(s));
}

/* `prefix` is a non-empty literal; the first byte decides most calls (the structural pass
 * asks several prefixes at every character of every frame's name). */
static inline bool starts(const char *s, const char *prefix)
{
    return s[0] == prefix[0] && strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* Index just past the bracket that closes s[i] (an opening `open`), or strlen(s) if none.
 * For '<', "->" inside does not close, and parentheses nest independently. */
static size_t skip_balanced(const char *s, size_t i, char open, char close)
{
    int depth = 0, paren = 0;
    for (; s[i]; i++) {
        char c = s[i];
        if (open == '<' && c == '(')
            paren++;
        else if (open == '<' && c == ')' && paren > 0)
            paren--;
        else if (paren > 0)
            continue;
        else if (c == open)
            depth++;
        else if (c == close && !(c == '>' && i > 0 && s[i - 1] == '-')) {
            if (--depth == 0)
                return i + 1;
        }
    }
    return i;
}

/* Drop " + 123", " (in Image)" and " (file.c:12)" suffixes, as report frame lines have them. */
static size_t strip_location_suffixes(const char *s, size_t n)
{
    for (;;) {
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            n--;
        size_t k = n;
        while (k > 0 && isdigit((unsigned char)s[k - 1]))
            k--;
        if (k < n && k >= 3 && s[k - 1] == ' ' && s[k - 2] == '+' && s[k - 3] == ' ') {
            n = k - 3;
            continue;
        }
        if (n > 0 && s[n - 1] == ')') {
            size_t open = n - 1;
            while (open > 0 && s[open] != '(')
                open--;
            if (open >= 1 && s[open] == '(' && s[open - 1] == ' ') {
                const char *in = s + open + 1;
                size_t len = n - 1 - (open + 1);
                bool loc = len > 3 && strncmp(in, "in ", 3) == 0;
                if (!loc) {
                    /* "file:line" or "file:line:col" */
                    size_t d = len;
                    while (d > 0 && (isdigit((unsigned char)in[d - 1]) || in[d - 1] == ':'))
                        d--;
                    loc = d > 0 && d < len && in[d] == ':' && memchr(in, ' ', d) == NULL;
                }
                if (loc) {
                    n = open - 1;
                    continue;
                }
            }
        }
        return n;
    }
}

static bool is_address(const char *s, size_t n)
{
    if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return false;
    for (size_t i = 2; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* Compiler-made suffixes: the function is the same one, only split or specialized; and
 * libsystem's CPU-specific variants ("_platform_memmove$VARIANT$CortexA9", "$VARIANT$Haswell",
 * "$VARIANT$mp"): one function, the copy dyld picked for the CPU.
 * `s` is NUL-terminated; returns the length to keep. */
static size_t strip_clone_suffixes(const char *s, size_t n)
{
    static const char *const MARKS[] = {".cold", ".llvm.", ".constprop.", ".isra.", ".part.",
                                        " [clone ", "$VARIANT$"};
    if (memchr(s, '.', n) == NULL && memchr(s, '[', n) == NULL && memchr(s, '$', n) == NULL)
        return n;   /* the usual case: nothing to look for */
    size_t cut = n;
    for (size_t m = 0; m < sizeof MARKS / sizeof MARKS[0]; m++) {
        const char *hit = strstr(s, MARKS[m]);
        if (hit != NULL && (size_t)(hit - s) < cut)
            cut = (size_t)(hit - s);
    }
    return cut;
}

/* After a parameter list: " const", " volatile", " &", " &&", " noexcept", " override". */
static size_t skip_qualifiers(const char *s, size_t i)
{
    static const char *const QUALS[] = {"const", "volatile", "&&", "&", "noexcept", "override",
                                        "final", "restrict"};
    for (;;) {
        size_t j = i;
        while (s[j] == ' ')
            j++;
        bool hit = false;
        for (size_t q = 0; q < sizeof QUALS / sizeof QUALS[0] && !hit; q++) {
            if (s[j] != QUALS[q][0])
                continue;
            size_t len = strlen(QUALS[q]);
            if (strncmp(s + j, QUALS[q], len) == 0 && (QUALS[q][0] == '&' || !is_ident(s[j + len]))) {
                i = j + len;
                hit = true;
            }
        }
        if (!hit)
            return i;
    }
}

/* The structural pass: template arguments, parameter lists, lambdas, anonymous namespaces. */
static void normalize_structure(out_str *o, const char *s)
{
    size_t i = 0;
    while (s[i]) {
        if (starts(s + i, "(anonymous namespace)")) {
            puts_(o, "(anonymous namespace)");
            i += strlen("(anonymous namespace)");
        } else if (starts(s + i, "`anonymous namespace'")) {
            puts_(o, "(anonymous namespace)");
            i += strlen("`anonymous namespace'");
        } else if (starts(s + i, "{anonymous}")) {
            puts_(o, "(anonymous namespace)");
            i += strlen("{anonymous}");
        } else if (starts(s + i, "operator") && (i == 0 || !is_ident(s[i - 1])) &&
                   !is_ident(s[i + 8])) {
            /* operator(), operator<, operator<<, operator-> ...: the symbol is the name */
            puts_(o, "operator");
            i += 8;
            if (starts(s + i, "()")) {
                puts_(o, "()");
                i += 2;
            } else if (starts(s + i, "[]")) {
                puts_(o, "[]");
                i += 2;
            } else {
                while (s[i] && strchr("+-*/%^&|~!=<>,", s[i]) != NULL)
                    put(o, s + i++, 1);
            }
        } else if (starts(s + i, "[abi:")) {
            /* libc++ ABI tags ("find[abi:ne200100]") change with the toolchain, not the code */
            const char *close = strchr(s + i, ']');
            i = close ? (size_t)(close - s) + 1 : strlen(s);
        } else if (s[i] == '<') {
            puts_(o, "<T>");
            i = skip_balanced(s, i, '<', '>');
        } else if (s[i] == '(') {
            i = skip_balanced(s, i, '(', ')');
            i = skip_qualifiers(s, i);
        } else if (s[i] == '{') {
            size_t end = skip_balanced(s, i, '{', '}');
            if (starts(s + i, "{lambda"))
                puts_(o, "lambda");
            else if (starts(s + i, "{unnamed type"))
                puts_(o, "unnamed");
            else
                put(o, s + i, end - i);
            i = end;
        } else if (s[i] == '\'' && (starts(s + i, "'lambda") || starts(s + i, "'unnamed"))) {
            puts_(o, s[i + 1] == 'l' ? "lambda" : "unnamed");
            const char *close = strchr(s + i + 1, '\'');
            i = close ? (size_t)(close - s) + 1 : strlen(s);
        } else if (s[i] == '$' && s[i + 1] == '_' && isdigit((unsigned char)s[i + 2])) {
            puts_(o, "lambda");
            i += 2;
            while (isdigit((unsigned char)s[i]))
                i++;
        } else {
            put(o, s + i, 1);
            i++;
        }
    }
}

/* "int fx::max<T>" -> "fx::max<T>": a C++ return type before the qualified name. */
static void strip_return_type(char *s)
{
    if (strstr(s, "::") == NULL || strstr(s, " in ") != NULL || s[0] == '@')
        return;
    int angle = 0;
    char *last = NULL;
    for (char *p = s; *p; p++) {
        if (*p == '<')
            angle++;
        else if (*p == '>' && angle > 0)
            angle--;
        else if (starts(p, "(anonymous namespace)"))
            p += strlen("(anonymous namespace)") - 1;
        else if (*p == ' ' && angle == 0 && !(p - s >= 8 && strncmp(p - 8, "operator", 8) == 0))
            last = p;
    }
    if (last != NULL)
        memmove(s, last + 1, strlen(last + 1) + 1);
}

/* "..._block_invoke_2" -> "..._block_invoke" (also inside a longer name). */
static void block_invoke_numbers(char *s)
{
    char *p = s;
    while ((p = strstr(p, "block_invoke_")) != NULL) {
        char *num = p + strlen("block_invoke_");
        char *end = num;
        while (isdigit((unsigned char)*end))
            end++;
        if (end > num && !is_ident(*end))
            memmove(num - 1, end, strlen(end) + 1);
        p = num - 1;
    }
}

static void collapse_spaces(char *s)
{
    char *w = s;
    bool space = false;
    for (char *p = s; *p; p++) {
        if (*p == ' ' || *p == '\t') {
            space = w > s;
            continue;
        }
        if (space)
            *w++ = ' ';
        space = false;
        *w++ = *p;
    }
    *w = '\0';
}

/* Swift wrappers of a function: the same bug whichever of them crashed (rule 6). Removed from
 * the front, repeatedly: "@objc ", "@nonobjc ", "specialized ", "merged ", "dynamic ",
 * "partial apply for ", the full form's "generic specialization <...> of " and its kin, and
 * async continuation fragments "(N) await resume partial function for ". */
static void swift_unwrap(char *s)
{
    static const char *const PLAIN[] = {
        "@objc ", "@nonobjc ", "specialized ", "merged ", "dynamic ", "partial apply for ",
        "partial apply forwarder for ", "partial apply ObjC forwarder for ",
        "distributed thunk ", "back deployment thunk for ", "back deployment fallback for ",
    };
    static const char *const ANGLED[] = {
        "generic specialization <", "generic not re-abstracted specialization <",
        "generic pre-specialization <", "inlined generic function <",
        "function signature specialization <", "partial generic specialization <",
    };
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < sizeof PLAIN / sizeof PLAIN[0]; i++) {
            if (s[0] != PLAIN[i][0])
                continue;
            size_t k = strlen(PLAIN[i]);
            if (strncmp(s, PLAIN[i], k) == 0 && s[k] != '\0') {
                memmove(s, s + k, strlen(s + k) + 1);
                again = true;
            }
        }
        for (size_t i = 0; i < sizeof ANGLED / sizeof ANGLED[0]; i++) {
            if (s[0] != ANGLED[i][0])
                continue;
            size_t k = strlen(ANGLED[i]);
            if (strncmp(s, ANGLED[i], k) != 0)
                continue;
            size_t end = skip_balanced(s, k - 1, '<', '>');
            if (strncmp(s + end, " of ", 4) == 0 && s[end + 4] != '\0') {
                memmove(s, s + end + 4, strlen(s + end + 4) + 1);
                again = true;
            }
        }
        if (s[0] == '(') {
            /* "(1) await resume partial function for f()" */
            const char *close = strchr(s, ')');
            static const char *const ASYNC[] = {") await resume partial function for ",
                                                ") suspend resume partial function for "};
            for (size_t i = 0; close != NULL && i < 2; i++) {
                size_t k = strlen(ASYNC[i]);
                if (strncmp(close, ASYNC[i], k) == 0 && close[k] != '\0') {
                    memmove(s, close + k, strlen(close + k) + 1);
                    again = true;
                    break;
                }
            }
        }
    }
}

/* " -> Ret" after a Swift full-form argument list: not part of the identity */
static void swift_return_type(char *s)
{
    int depth = 0;
    for (char *p = s; *p; p++) {
        if (*p == '(' || *p == '<' || *p == '[')
            depth++;
        else if ((*p == ')' || *p == '>' || *p == ']') && depth > 0 && !(*p == '>' && p > s && p[-1] == '-'))
            depth--;
        /* " -> " by its bytes: a strncmp call at every character was most of this loop */
        else if (depth == 0 && p[0] == ' ' && p[1] == '-' && p[2] == '>' && p[3] == ' ') {
            *p = '\0';
            return;
        }
    }
}

const char *signature_normalize_symbol(char *buf, size_t cap, const char *name)
{
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    if (name == NULL)
        return buf;
    while (isspace((unsigned char)*name))
        name++;
    /* Sentry's text rendering marks an inlined frame "[inlined] f": the function is f */
    if (strncmp(name, "[inlined] ", 10) == 0)
        name += 10;
    size_t n = strip_location_suffixes(name, strlen(name));
    /* Placeholders Apple writes instead of a name are no name. */
    if (is_address(name, n) || (n > 0 && name[0] == '<' && name[n - 1] == '>'))
        return buf;
    out_str o = {buf, 0, cap};

    /* A clang block is named "__<length><method>_block_invoke[_N]" ("__31-[X crash]_block_invoke")
     * or "__<function>_block_invoke"; symbol tables and dladdr differ in the leading
     * underscores (Bugsnag shows "_31-[X crash]_block_invoke"): the block of a method or
     * function reads as "<method>_block_invoke" whichever way it came. */
    if (n > 0 && name[0] == '_' && memmem(name, n, "_block_invoke", 13) != NULL) {
        size_t k = 0;
        while (k < n && name[k] == '_')
            k++;
        size_t d = k;
        while (d < n && isdigit((unsigned char)name[d]))
            d++;
        if (d > k && d + 1 < n && (name[d] == '-' || name[d] == '+') && name[d + 1] == '[')
            k = d;
        name += k;
        n -= k;
    }
    /* Objective-C: the method name is the identity, kept as is up to the ']' (and a block's
     * "_block_invoke" after it). */
    if ((name[0] == '-' || name[0] == '+') && name[1] == '[') {
        const char *close = memchr(name, ']', n);
        put(&o, name, close ? (size_t)(close - name) + 1 : n);
        if (close != NULL && (size_t)(close + 1 - name) + 13 <= n &&
            memcmp(close + 1, "_block_invoke", 13) == 0)
            puts_(&o, "_block_invoke");
        return buf;
    }
    char local[SIGNATURE_MAX_NAME]; /* the passes below read a NUL-terminated copy */
    if (n >= sizeof local)
        n = sizeof local - 1;
    memcpy(local, name, n);
    local[n] = '\0';
    /* A mangled name (a report that names raw Swift or C++ symbols: dladdr's `$s...`,
     * `_T0...`, `_Z...`, a symbol table's `_$s...`, `__T0...`, `__Z...`) groups as its display
     * form, so that it meets the same function symbolicated from a dSYM. */
    const char *mangled = strncmp(local, "__T0", 4) == 0 ? local + 1 : local; /* Mach-O's '_' */
    if (demangle_is_swift(mangled) || demangle_is_cxx(mangled)) {
        char shown[SIGNATURE_MAX_NAME];
        if (demangle_name_buf(shown, sizeof shown, mangled, DEMANGLE_SIMPLIFIED) > 0) {
            memcpy(local, shown, sizeof local);
            n = strlen(local);
        }
    }
    swift_unwrap(local);
    swift_return_type(local);
    n = strlen(local);
    local[strip_clone_suffixes(local, n)] = '\0';
    normalize_structure(&o, local);
    collapse_spaces(buf);
    strip_return_type(buf);
    block_invoke_numbers(buf);
    collapse_spaces(buf);
    return buf;
}

/* ---- computing a signature ---------------------------------------------------------------- */

/* One frame after inlined frames are expanded. */
typedef struct {
    const char *raw;  /* function as symbolicated or given, NULL if none */
    const char *mangled; /* its raw linkage name when that differs, else NULL */
    const char *name; /* normalized; NULL if none (or it normalized to "") */
    const char *file;
    uint32_t line;
    const crashreport_frame *frame;
    bool in_app;
} xframe;

typedef struct {
    const crashreport *r;
    arena *a;
    err_info *err;
    bool *image_in_app; /* per image */
    xframe *x;
    size_t nx, cap;
} sig_ctx;

const char *signature_basis_name(signature_basis b)
{
    switch (b) {
    case SIGNATURE_BASIS_IN_APP: return "in_app";
    case SIGNATURE_BASIS_ANY_SYMBOL: return "any_symbol";
    case SIGNATURE_BASIS_OFFSET: return "offset";
    case SIGNATURE_BASIS_EXCEPTION: return "exception";
    }
    return "in_app";
}

/* Rule 1 for call trees (sample, MetricKit): the heaviest path of the thread, the callee
 * with the most samples at each level (the first on a tie), innermost first, copied into
 * the arena. */
static const crashreport_frame *heaviest_path(const crashreport_thread *t, size_t *n, arena *a,
                                              err_info *err)
{
    *n = 0;
    if (t->nframes == 0)
        return NULL;
    size_t cap = 0;
    for (size_t i = 0; i < t->nframes; i++)
        if (t->frames[i].depth + 1 > cap)
            cap = t->frames[i].depth + 1;
    crashreport_frame *path = arena_alloc_array(a, cap, sizeof *path, err);
    if (path == NULL)
        return NULL;
    /* Frames are in pre-order, each subtree contiguous: end[i] is one past frame i's subtree,
     * so a frame's callees are i+1, end[i+1], ... (linear in the frames, any shape). */
    size_t *end = arena_alloc_array(a, t->nframes, sizeof *end, err);
    if (end == NULL)
        return NULL;
    for (size_t i = 0; i < t->nframes; i++)
        end[i] = i + 1;
    for (size_t i = t->nframes; i > 0; i--) {
        int32_t p = t->frames[i - 1].parent;
        if (p >= 0 && (size_t)p < i - 1 && end[p] < end[i - 1])
            end[p] = end[i - 1];
    }
    int32_t parent = -1;
    size_t depth = 0;
    for (;;) {
        int32_t best = -1;
        size_t stop = parent < 0 ? t->nframes : end[parent];
        for (size_t i = parent < 0 ? 0 : (size_t)parent + 1; i < stop && i < t->nframes; i = end[i]) {
            const crashreport_frame *f = &t->frames[i];
            if (best < 0 || f->sample_count > t->frames[best].sample_count)
                best = (int32_t)i;
        }
        if (best < 0 || depth == cap)
            break;
        path[depth++] = t->frames[best];
        parent = best;
    }
    for (size_t i = 0; i < depth / 2; i++) {
        crashreport_frame tmp = path[i];
        path[i] = path[depth - 1 - i];
        path[depth - 1 - i] = tmp;
    }
    *n = depth;
    return path;
}

/* Rule 1: which stack the signature is taken from. */
static const crashreport_frame *pick_stack(const crashreport *r, size_t *n, int32_t *thread, arena *a,
                                           err_info *err)
{
    *n = 0;
    *thread = -1;
    if (r->kind == CRASHREPORT_KIND_CRASH && r->has_leb && r->nleb > 0) {
        *n = r->nleb;
        return r->leb;
    }
    const crashreport_thread *t = NULL;
    if (r->kind == CRASHREPORT_KIND_CRASH) {
        for (size_t i = 0; i < r->nthreads && t == NULL; i++)
            if (r->threads[i].crashed)
                t = &r->threads[i];
        for (size_t i = 0; i < r->nthreads && t == NULL && r->meta.crashed_thread >= 0; i++)
            if (r->threads[i].index == (uint32_t)r->meta.crashed_thread)
                t = &r->threads[i];
    } else if (r->kind == CRASHREPORT_KIND_HANG) {
        for (size_t i = 0; i < r->nthreads && t == NULL; i++)
            if (r->threads[i].index == 0)
                t = &r->threads[i];
    }
    if (t == NULL && r->nthreads > 0)
        t = &r->threads[0];
    if (t == NULL)
        return NULL;
    *thread = (int32_t)t->index;
    if (r->tree)
        return heaviest_path(t, n, a, err);
    *n = t->nframes;
    return t->frames;
}

static const char *frame_image_name(const crashreport *r, const crashreport_frame *f);

/* Whether `name` reads as a Swift name: dotted, not C++ ("::") or Objective-C ("-[X y]"). */
static bool swift_like(const char *name)
{
    return strchr(name, '.') != NULL && strstr(name, "::") == NULL &&
           !((name[0] == '-' || name[0] == '+') && name[1] == '[');
}

/* Drop the module `module` where it qualifies a Swift name ("App.Widget.draw" in image App ->
 * "Widget.draw"), in place: the form atos, Xcode and our symbolication print (simplified
 * demangling) has no module, the full form and other tools' text have it. Only the frame's
 * own image's module is known to be one (a dotted prefix may as well be a type). */
static void strip_own_module(char *s, const char *module)
{
    size_t k = module != NULL ? strlen(module) : 0;
    if (k == 0 || !swift_like(s))
        return;
    for (char *p = s; (p = strstr(p, module)) != NULL;) {
        bool starts_path = (p == s || !(is_ident(p[-1]) || p[-1] == '.')) && p[k] == '.' && is_ident(p[k + 1]);
        if (starts_path)
            memmove(p, p + k + 1, strlen(p + k + 1) + 1);
        else
            p += k;
    }
}

static err_code add_xframe(sig_ctx *c, const crashreport_frame *f, const char *raw,
                           const char *mangled, const char *qualified, const char *file, uint32_t line)
{
    if (c->nx == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        c->x = arena_grow(c->a, c->x, c->cap * sizeof *c->x, ncap * sizeof *c->x, c->err);
        if (c->x == NULL)
            return ERR_TOO_LARGE;
        c->cap = ncap;
    }
    xframe *x = &c->x[c->nx++];
    memset(x, 0, sizeof *x);
    x->raw = raw;
    x->mangled = mangled;
    x->file = file;
    x->line = line;
    x->frame = f;
    if (raw != NULL) {
        char tmp[SIGNATURE_MAX_NAME];
        /* a name the dSYM qualified by its scopes (no linkage name) groups as qualified, like
         * the same function named through a linkage name */
        signature_normalize_symbol(tmp, sizeof tmp, qualified != NULL ? qualified : raw);
        strip_own_module(tmp, frame_image_name(c->r, f));
        if (tmp[0] != '\0') {
            x->name = arena_strdup(c->a, tmp, c->err);
            if (x->name == NULL)
                return ERR_TOO_LARGE;
        }
    }
    bool image_in_app = f->image >= 0 && (size_t)f->image < c->r->nimages
                            ? c->image_in_app[f->image]
                            : signature_frame_in_app(c->r, f, file, line);
    x->in_app = image_in_app && (x->name == NULL || signature_function_in_app(x->name));
    return ERR_OK;
}

/* Rule 2: expand inlined frames, innermost first. */
static err_code expand(sig_ctx *c, const crashreport_frame *fs, size_t n)
{
    err_code rc = ERR_OK;
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        const crashreport_frame *f = &fs[i];
        if (f->sym_status == CRASHREPORT_SYM_OK && f->nsymbols > 0) {
            for (uint32_t k = 0; k < f->nsymbols && rc == ERR_OK; k++)
                rc = add_xframe(c, f, f->symbols[k].function, f->symbols[k].mangled, f->symbols[k].qualified,
                                f->symbols[k].file, f->symbols[k].line);
            continue;
        }
        for (uint32_t k = 0; k < f->ngiven_inlines && rc == ERR_OK; k++)
            rc = add_xframe(c, f, f->given_inlines[k].function, f->given_inlines[k].mangled, NULL,
                            f->given_inlines[k].file, f->given_inlines[k].line);
        if (rc == ERR_OK)
            rc = add_xframe(c, f, f->symbol, f->symbol_mangled, NULL, f->file, f->line);
    }
    return rc;
}

static const char *frame_image_name(const crashreport *r, const crashreport_frame *f)
{
    if (f->image >= 0 && (size_t)f->image < r->nimages && r->images[f->image].name != NULL)
        return r->images[f->image].name;
    if (f->image >= 0 && (size_t)f->image < r->nimages && r->images[f->image].path != NULL)
        return base_name(r->images[f->image].path);
    return f->image_name;
}

/* "FixtureApp+0x3a1c": where the crashing frame is, stable across ASLR slides. */
static const char *offset_name(sig_ctx *c, const crashreport_frame *f)
{
    const crashreport *r = c->r;
    const char *image = frame_image_name(r, f);
    uint64_t addr = crashreport_strip_pac(f->addr, crashreport_frame_arch(r, f));
    if (f->image >= 0 && (size_t)f->image < r->nimages && addr >= r->images[f->image].load_addr)
        return arena_sprintf(c->a, c->err, "%s+0x%llx", image ? image : "???",
                             (unsigned long long)(addr - r->images[f->image].load_addr));
    return arena_sprintf(c->a, c->err, "%s+0x%llx", image ? image : "???",
                         (unsigned long long)addr);
}

/* An identifier-like exception name ("NSInvalidArgumentException") from the reason texts,
 * never the free-form reason itself (it holds indexes, pointers, user data). */
static const char *exception_name(sig_ctx *c)
{
    const crashreport_metadata *m = &c->r->meta;
    const char *texts[2] = {m->exception_reason, m->app_specific_info};
    for (size_t t = 0; t < 2; t++) {
        const char *s = texts[t];
        if (s == NULL)
            continue;
        const char *q = strstr(s, "uncaught exception '");
        if (q != NULL) {
            q += strlen("uncaught exception '");
            size_t n = strcspn(q, "'");
            if (n > 0 && n < 128 && q[n] == '\'')
                return arena_strndup(c->a, q, n, c->err);
        }
        if (t == 0) {
            /* kscrash: "Name: reason" or just "Name" */
            size_t n = 0;
            while (s[n] && (is_ident(s[n]) || s[n] == '.' || s[n] == ':') &&
                   !(s[n] == ':' && s[n + 1] == ' '))
                n++;
            bool ends = s[n] == '\0' || (s[n] == ':' && s[n + 1] == ' ');
            if (n > 0 && n < 128 && ends && isalpha((unsigned char)s[0]) &&
                (memmem(s, n, "Exception", 9) != NULL || memmem(s, n, "Error", 5) != NULL))
                return arena_strndup(c->a, s, n, c->err);
        }
    }
    return NULL;
}

/* The first word of "EXC_BAD_ACCESS (SIGSEGV)". */
static const char *exception_type(sig_ctx *c, const char **signal_out)
{
    const char *t = c->r->meta.exception_type;
    *signal_out = c->r->meta.signal;
    if (t == NULL)
        return NULL;
    size_t n = strcspn(t, " (");
    if (*signal_out == NULL) {
        const char *sig = strstr(t, "(SIG");
        if (sig != NULL)
            *signal_out = arena_strndup(c->a, sig + 1, strcspn(sig + 1, ")"), c->err);
    }
    return n > 0 ? arena_strndup(c->a, t, n, c->err) : NULL;
}

/* The fault classes (rule 1): one fault, one class, whatever the CPU reported it as. A trap
 * (__builtin_trap, a Swift runtime check) is EXC_BREAKPOINT/SIGTRAP on arm64 and
 * EXC_BAD_INSTRUCTION/SIGILL on x86_64; a bad access is SIGSEGV on arm64 and often SIGBUS on
 * armv7. The Mach exception decides where it says more than the signal; EXC_CRASH carries
 * the signal that ended the process. */
typedef struct {
    const char *name;   /* exception type or signal, as reports spell it */
    const char *cls;    /* the class */
} fault_row;

static const fault_row FAULT_TYPES[] = {
    {"EXC_BAD_ACCESS", "bad_access"}, {"EXC_BREAKPOINT", "trap"},
    {"EXC_BAD_INSTRUCTION", "trap"},  {"EXC_ARITHMETIC", "arithmetic"},
    {"EXC_GUARD", "guard"},           {"EXC_RESOURCE", "resource"},
};
static const fault_row FAULT_SIGNALS[] = {
    {"SIGSEGV", "bad_access"}, {"SIGBUS", "bad_access"}, {"SIGTRAP", "trap"},
    {"SIGILL", "trap"},        {"SIGABRT", "abort"},     {"SIGFPE", "arithmetic"},
    {"SIGKILL", "killed"},     {"SIGTERM", "terminated"}, {"SIGSYS", "bad_syscall"},
    {"SIGPIPE", "broken_pipe"},
};

static const char *fault_lookup(const fault_row *rows, size_t n, const char *name)
{
    for (size_t i = 0; name != NULL && i < n; i++)
        if (strcmp(name, rows[i].name) == 0)
            return rows[i].cls;
    return NULL;
}

const char *signature_fault_class(const char *exception_type, const char *signal)
{
    const char *cls = fault_lookup(FAULT_TYPES, sizeof FAULT_TYPES / sizeof FAULT_TYPES[0],
                                   exception_type);
    if (cls == NULL)
        cls = fault_lookup(FAULT_SIGNALS, sizeof FAULT_SIGNALS / sizeof FAULT_SIGNALS[0], signal);
    /* Bugsee and others write the signal where the exception type goes ("SIGSEGV") */
    if (cls == NULL)
        cls = fault_lookup(FAULT_SIGNALS, sizeof FAULT_SIGNALS / sizeof FAULT_SIGNALS[0],
                           exception_type);
    if (cls != NULL)
        return cls;
    return exception_type != NULL ? exception_type : signal;
}

/* `s` with every number masked ("0x1f" -> "0x#", "42" -> "#"): a reason's indexes, sizes and
 * addresses differ from crash to crash while the reason stays the same. */
static void mask_numbers(buf *o, const char *s)
{
    while (*s) {
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2])) {
            buf_append_str(o, "0x#");
            for (s += 2; isxdigit((unsigned char)*s); s++) {}
        } else if (isdigit((unsigned char)*s)) {
            buf_putc(o, '#');
            while (isdigit((unsigned char)*s))
                s++;
        } else {
            buf_putc(o, *s++);
        }
    }
}

/* Rule 5, no frames: what tells such crashes apart beside the exception class: the
 * termination reason, the reason (the exception's, else the subtype; numbers masked) and the
 * crashing image (crashreport_metadata.crash_image), one line each. NULL over budget. */
static const char *exception_extra(sig_ctx *c)
{
    const crashreport_metadata *m = &c->r->meta;
    buf t;
    buf_init(&t);
    buf_append_str(&t, m->termination_reason ? m->termination_reason : "");
    buf_putc(&t, '\n');
    mask_numbers(&t, m->exception_reason ? m->exception_reason
                     : m->exception_subtype ? m->exception_subtype : "");
    buf_putc(&t, '\n');
    buf_append_str(&t, m->crash_image ? m->crash_image : "");
    const char *out = arena_strndup(c->a, (const char *)t.data, t.len, c->err);
    buf_reset(&t);
    return out;
}

/* SHA-256 fetched once for the process: EVP_sha256() makes every EVP_DigestInit_ex fetch it
 * again from OpenSSL's provider (OpenSSL 3: a lock and a property lookup). */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);   /* kept for the process */
}

static err_code fingerprint(signature *s, const char *cls, const char *extra, err_info *err)
{
    static const char hex[] = "0123456789abcdef";
    pthread_once(&sha256_once, sha256_fetch);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    const char *basis = signature_basis_name(s->basis);
    if (md == NULL || sha256_md == NULL || EVP_DigestInit_ex(md, sha256_md, NULL) != 1) {
        EVP_MD_CTX_free(md);
        return err_set(err, ERR_INTERNAL, "sha-256: cannot initialize the digest");
    }
    /* Fields are separated by NUL bytes so that no two field lists hash the same text. */
    EVP_DigestUpdate(md, SIGNATURE_VERSION, strlen(SIGNATURE_VERSION) + 1);
    EVP_DigestUpdate(md, s->kind, strlen(s->kind) + 1);
    EVP_DigestUpdate(md, cls, strlen(cls) + 1);
    EVP_DigestUpdate(md, basis, strlen(basis) + 1);
    for (size_t i = 0; i < s->nframes; i++)
        EVP_DigestUpdate(md, s->frames[i].function, strlen(s->frames[i].function) + 1);
    if (extra != NULL)
        EVP_DigestUpdate(md, extra, strlen(extra) + 1);
    int ok = EVP_DigestFinal_ex(md, digest, &len);
    EVP_MD_CTX_free(md);
    if (ok != 1 || len != 32)
        return err_set(err, ERR_INTERNAL, "sha-256: digest failed");
    for (unsigned i = 0; i < 32; i++) {
        s->fingerprint[2 * i] = hex[digest[i] >> 4];
        s->fingerprint[2 * i + 1] = hex[digest[i] & 15];
    }
    s->fingerprint[64] = '\0';
    return ERR_OK;
}

static signature_frame to_sig_frame(sig_ctx *c, const xframe *x)
{
    signature_frame f = {x->name, x->raw, frame_image_name(c->r, x->frame), x->file, x->line,
                         x->in_app, x->mangled};
    return f;
}

/* Rule 4/5: the top `max` frames for which `want` holds, recursion collapsed. s->span: up to
 * the raw frame of the last one taken when `max` were found, else the whole stack. */
static size_t take_frames(signature *s, sig_ctx *c, unsigned max, bool in_app_only)
{
    size_t n = 0;
    s->span = s->nstack;
    for (size_t i = 0; i < c->nx && n < max; i++) {
        const xframe *x = &c->x[i];
        if (x->name == NULL || (in_app_only && !x->in_app))
            continue;
        if (n > 0 && strcmp(s->frames[n - 1].function, x->name) == 0)
            continue;
        s->frames[n++] = to_sig_frame(c, x);
        if (n == max && s->stack != NULL && x->frame >= s->stack &&
            x->frame < s->stack + s->nstack)
            s->span = (size_t)(x->frame - s->stack) + 1;
    }
    return n;
}

bool signature_waits_for(const signature *s, const crashreport *r)
{
    for (size_t i = 0; s->stack != NULL && i < s->span && i < s->nstack; i++) {
        const crashreport_frame *f = &s->stack[i];
        if (f->sym_status == CRASHREPORT_SYM_MISSING && f->image >= 0 &&
            (size_t)f->image < r->nimages && signature_image_in_app(r, (size_t)f->image))
            return true;
    }
    return false;
}

err_code signature_compute(signature *out, const crashreport *r, const signature_options *opts,
                           arena *a, err_info *err)
{
    unsigned max = opts && opts->max_frames ? opts->max_frames : SIGNATURE_DEFAULT_FRAMES;
    if (max > SIGNATURE_MAX_FRAMES)
        max = SIGNATURE_MAX_FRAMES;
    memset(out, 0, sizeof *out);
    sig_ctx c = {r, a, err, NULL, NULL, 0, 0};
    err_code rc = ERR_TOO_LARGE;
    c.image_in_app = arena_alloc_array(a, r->nimages ? r->nimages : 1, sizeof(bool), err);
    out->frames = arena_alloc_array(a, max, sizeof *out->frames, err);
    if (c.image_in_app == NULL || out->frames == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < r->nimages; i++)
        c.image_in_app[i] = signature_image_in_app(r, i);

    size_t n;
    const crashreport_frame *stack = pick_stack(r, &n, &out->thread, a, err);
    if (r->tree && stack == NULL && n == 0 && err != NULL && err->code == ERR_TOO_LARGE)
        return ERR_TOO_LARGE;
    out->stack = stack;
    out->nstack = stack ? n : 0;
    out->span = out->nstack;
    rc = expand(&c, stack, n);
    if (rc != ERR_OK)
        return rc;
    /* Rule 3: error-raising machinery goes, wherever it is; so do frames a minidump walk
     * found only by scanning the stack (a stale return address there would split or merge
     * issues by chance). */
    size_t w = 0;
    for (size_t i = 0; i < c.nx; i++)
        if ((c.x[i].name == NULL || !signature_is_skipped(c.x[i].name)) &&
            c.x[i].frame->found != CRASHREPORT_FOUND_SCAN)
            c.x[w++] = c.x[i];
    c.nx = w;

    bool any_in_app = false, any_named = false;
    const xframe *first_in_app = NULL;
    for (size_t i = 0; i < c.nx; i++) {
        any_named |= c.x[i].name != NULL;
        if (c.x[i].in_app && first_in_app == NULL)
            first_in_app = &c.x[i];
        any_in_app |= c.x[i].in_app && c.x[i].name != NULL;
    }
    const char *extra = NULL;
    if (any_in_app) {
        out->basis = SIGNATURE_BASIS_IN_APP;
        out->nframes = take_frames(out, &c, max, true);
    } else if (first_in_app == NULL && any_named) {
        out->basis = SIGNATURE_BASIS_ANY_SYMBOL;
        out->nframes = take_frames(out, &c, max, false);
    } else if (c.nx > 0) {
        /* In-app frames without names (no dSYM yet), or no name anywhere: where it crashed. */
        const xframe *x = first_in_app ? first_in_app : &c.x[0];
        if (stack != NULL && x->frame >= stack && x->frame < stack + n)
            out->span = (size_t)(x->frame - stack) + 1;
        out->basis = SIGNATURE_BASIS_OFFSET;
        out->provisional = true;
        out->frames[0] = to_sig_frame(&c, x);
        out->frames[0].function = offset_name(&c, x->frame);
        out->frames[0].raw = NULL;
        if (out->frames[0].function == NULL)
            return ERR_TOO_LARGE;
        out->nframes = 1;
    } else {
        out->basis = SIGNATURE_BASIS_EXCEPTION;
        extra = exception_extra(&c);
        if (extra == NULL)
            return ERR_TOO_LARGE;
    }

    out->kind = crashreport_kind_name(r->kind);
    const char *signal = NULL;
    const char *type = exception_type(&c, &signal);
    const char *objc = exception_name(&c);
    buf cls;
    buf_init(&cls);
    const char *parts[3] = {type, signal, objc};
    for (size_t i = 0; i < 3; i++)
        if (parts[i] != NULL && parts[i][0] != '\0')
            buf_printf(&cls, "%s%s", cls.len ? "/" : "", parts[i]);
    out->exception = arena_strdup(a, cls.len ? (const char *)cls.data : out->kind, err);
    buf_reset(&cls);
    if (out->exception == NULL)
        return ERR_TOO_LARGE;

    const char *head = type ? type : objc ? objc : out->kind;
    if (out->nframes > 0) {
        const signature_frame *top = &out->frames[0];
        out->title = arena_sprintf(a, err, "%s: %s", head, top->function);
        if (top->file != NULL && top->line > 0)
            out->culprit = arena_sprintf(a, err, "%s (%s:%u)", top->function,
                                         base_name(top->file), top->line);
        else if (top->file != NULL)
            out->culprit = arena_sprintf(a, err, "%s (%s)", top->function, base_name(top->file));
        else
            out->culprit = arena_strdup(a, top->function, err);
    } else {
        const crashreport_metadata *m = &r->meta;
        const char *what = m->termination_reason ? m->termination_reason
                           : m->exception_reason ? m->exception_reason
                           : m->exception_subtype ? m->exception_subtype
                                                   : "no stack frames";
        out->title = arena_sprintf(a, err, "%s: %s", head, what);
        out->culprit = arena_strdup(a, m->crash_image          ? m->crash_image
                                       : m->termination_reason ? m->termination_reason
                                                               : out->exception,
                                    err);
    }
    if (out->title == NULL || out->culprit == NULL)
        return ERR_TOO_LARGE;
    /* Rule 7: where in-app frames decide, they alone do; the exception's names differ by CPU
     * and by service for the same fault, and some services send none. Elsewhere the fault
     * class and the exception's name tell crashes apart. */
    const char *fault = "";
    if (out->basis != SIGNATURE_BASIS_IN_APP) {
        const char *fc = signature_fault_class(type, signal);
        fault = arena_sprintf(a, err, "%s/%s", fc ? fc : "", objc ? objc : "");
        if (fault == NULL)
            return ERR_TOO_LARGE;
    }
    return fingerprint(out, fault, extra, err);
}

void signature_render_frames_json(buf *out, const signature *s)
{
    jsonw w;
    jsonw_init(&w, out);
    jsonw_array_begin(&w);
    for (size_t i = 0; i < s->nframes; i++) {
        const signature_frame *f = &s->frames[i];
        jsonw_object_begin(&w);
        jsonw_kstr(&w, "function", f->function);
        jsonw_kstr(&w, "raw", f->raw);
        jsonw_kstr(&w, "mangled", f->mangled);
        jsonw_kstr(&w, "image", f->image);
        jsonw_kstr(&w, "file", f->file);
        jsonw_key(&w, "line");
        if (f->line > 0)
            jsonw_uint(&w, f->line);
        else
            jsonw_null(&w);
        jsonw_kbool(&w, "in_app", f->in_app);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
}
