/*
 * signature - what makes two crash reports "the same issue": frames -> normalized frames ->
 * SHA-256 fingerprint, plus a title and a culprit for people.
 *
 * The rules (docs/grouping.md "Signature rules" lists them for users; each has a unit test in
 * tests/test_signature.c):
 *   1. Stack: the Last Exception Backtrace of an uncaught exception, else the crashed thread
 *      (crashed flag, else meta.crashed_thread), else thread 0; thread 0 for hangs; the only
 *      stack of a sample. A call tree (sample/spindump, MetricKit; the parsers put the main
 *      or attributed thread first) gives its heaviest path: from the roots, the callee with
 *      the most samples at each level (the first on a tie), read innermost first.
 *   2. Inlined frames are expanded (a frame with symbols A inlined into B gives A, then B).
 *   3. Error-raising machinery (objc_exception_throw, __cxa_throw, abort, pthread_kill, Swift
 *      assertion and runtime-failure traps, ...) is dropped: SIGNATURE_SKIP in signature.c is
 *      the one table of them. So are frames a minidump walk found by stack scanning
 *      (crashreport_frame.found == CRASHREPORT_FOUND_SCAN).
 *   4. Frames of in-app images (signature_image_in_app; a frame without a Binary Images entry:
 *      signature_frame_in_app) that have a function name, top N
 *      (opts->max_frames, default 3) after consecutive duplicates (recursion) are collapsed.
 *   5. Fallbacks: no in-app image on the stack -> the top N frames of any image that has a
 *      function name; in-app frames without any function name (their dSYM has not arrived)
 *      or no named frame at all -> "<image>+0x<offset>" of the crashing frame, provisional;
 *      no frames -> exception type + termination reason + reason (the exception's, else the
 *      subtype; numbers masked) + crashing image (meta.crash_image: KSCrash reports of only
 *      `crash.error`).
 *   6. Function names are normalized (signature_normalize_symbol).
 *   7. fingerprint = hex SHA-256 of SIGNATURE_VERSION, kind, basis and the normalized frames;
 *      for every basis but in_app also the fault class (signature_fault_class) and the
 *      exception's name (NSRangeException): where in-app frames decide they alone do, since
 *      the same fault is named differently by CPU and by service, and some send no name.
 *      title = "<exception class>: <top function>", culprit = "<function> (<file>:<line>)".
 */
#ifndef STACKSIFT_SIGNATURE_SIGNATURE_H
#define STACKSIFT_SIGNATURE_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "crashreport/crashreport.h"

/* The rules' version, hashed first: a change of the rules that moves fingerprints changes it,
 * and `stacksift regroup` re-fingerprints the stored reports. */
#define SIGNATURE_VERSION "stacksift-signature-v3"

#define SIGNATURE_DEFAULT_FRAMES 3
#define SIGNATURE_MAX_FRAMES 16
#define SIGNATURE_MAX_NAME 1024 /* bytes of a normalized name, NUL included; longer is cut */

/* Which rule produced the signature frames. */
typedef enum {
    SIGNATURE_BASIS_IN_APP,      /* "in_app": in-app frames with function names */
    SIGNATURE_BASIS_ANY_SYMBOL,  /* "any_symbol": no in-app image on the stack */
    SIGNATURE_BASIS_OFFSET,      /* "offset": image + offset of the crashing frame (provisional) */
    SIGNATURE_BASIS_EXCEPTION,   /* "exception": no frames, exception type + termination */
} signature_basis;

/* One frame of the signature; strings in the arena. */
typedef struct {
    const char *function; /* normalized name (or "<image>+0x<offset>" for BASIS_OFFSET) */
    const char *raw;      /* the name as symbolicated or given, NULL for BASIS_OFFSET */
    const char *image;    /* image name, NULL if unknown */
    const char *file;     /* source file as the symcache or the report gives it, or NULL */
    uint32_t line;        /* 0 = unknown */
    bool in_app;
    const char *mangled;  /* raw linkage name of `raw` (`_ZN...`, `$s...`) when it differs
                             from `raw`, else NULL */
} signature_frame;

typedef struct {
    char fingerprint[65];      /* lower-case hex SHA-256 */
    const char *kind;          /* "crash", "hang", "sample" (static) */
    const char *exception;     /* exception class: "EXC_BAD_ACCESS/SIGSEGV",
                                  "EXC_CRASH/SIGABRT/NSInvalidArgumentException", "hang" */
    const char *title;         /* "EXC_BAD_ACCESS: Widget::draw" */
    const char *culprit;       /* "Widget::draw (shapes.cpp:42)" */
    signature_frame *frames;   /* at most max_frames */
    size_t nframes;
    signature_basis basis;
    bool provisional;          /* BASIS_OFFSET: regrouped once the dSYM arrives */
    int32_t thread;            /* thread index used, -1 = Last Exception Backtrace or none */
    const crashreport_frame *stack; /* the stack the rules read (the report's, or for a call
                                       tree its heaviest path in the arena); NULL if none */
    size_t nstack;
    size_t span;               /* stack[0..span) decided the signature: up to the frame of
                                  the last signature frame when all max_frames were found,
                                  the whole stack otherwise (a frame below could have joined) */
} signature;

/*
 * signature_waits_for - whether a missing dSYM can change the signature: a frame in
 * s->stack[0..span) of an in-app image (signature_image_in_app) whose symcache is missing
 * (sym_status CRASHREPORT_SYM_MISSING). Its grouping is provisional only then; a missing
 * dSYM of an image below the span, or of a system image, changes only how the report reads
 * (the report still waits for it, pending_dsym, to be symbolicated when it comes).
 */
bool signature_waits_for(const signature *s, const crashreport *r);

typedef struct {
    unsigned max_frames; /* frames in the fingerprint: 1..SIGNATURE_MAX_FRAMES, 0 = default 3 */
} signature_options;

/*
 * signature_compute - the signature of a parsed (and, where dSYMs exist, symbolicated) report.
 * Frames symbolicated by symbolicate_report use their symbols; other frames use the symbol
 * text the report gives. `opts` may be NULL (defaults).
 * out     strings allocated in `a`, valid until arena_free(a).
 * Errors  ERR_TOO_LARGE (arena budget).
 */
err_code signature_compute(signature *out, const crashreport *r, const signature_options *opts,
                           arena *a, err_info *err);

/*
 * signature_image_in_app - whether image `index` of `r` is the app's own code: the main
 * executable (its path is the process path, or its name the process name) or an image inside
 * the app bundle (/var/containers/Bundle/Application/..., /private/var/containers/...,
 * simulator .../CoreSimulator/Devices/.../Bundle/..., anything inside "X.app/", such as
 * X.app/Frameworks/), and not under /System/, /usr/lib/ or /Developer/; crash-reporter SDK
 * images (KSCrash, PLCrashReporter/CrashReporter, Sentry) are not in-app. With no path, the
 * apple-text "+" (user) flag decides. An image whose `in_app` is already decided (0 or 1, e.g.
 * given by a stacksift JSON stack: `in_app`) keeps that decision.
 */
bool signature_image_in_app(const crashreport *r, size_t index);

/*
 * signature_frame_in_app - whether frame `f` of `r` is the app's own code. A frame with a
 * Binary Images entry: signature_image_in_app. Without one (stack excerpts, services' displays,
 * frames whose address matched no image): its image name decides when it names an Apple
 * system image (signature_system_image) or a crash-reporter SDK (no), or the app itself
 * (process name, app name, executable of the process path, last part of the bundle id: yes);
 * else a source `file` and `line` (> 0), as symbolicated or given, mean the team's dSYM
 * symbolicated it: yes. Otherwise no.
 */
bool signature_frame_in_app(const crashreport *r, const crashreport_frame *f, const char *file,
                            uint32_t line);

/*
 * signature_system_image - whether image `name` (a file name: "UIKit", "libobjc.A.dylib") is
 * one of Apple's system images, never in-app: the Swift runtime (libswift*, embedded in old
 * apps too), libsystem_*, libobjc, libdispatch, libdyld, libc++, com.apple.* bundle ids and
 * the other prefixes of SYSTEM_IMAGE_PREFIXES wherever the image is; and, when the report
 * gives no path (`have_path` false), the framework names of SYSTEM_IMAGE_NAMES (UIKit,
 * Foundation, CoreFoundation, GraphicsServices, ...). With a path, /System/ and /usr/lib/
 * decide in signature_image_in_app. Lists: common/signature/signature.c.
 */
bool signature_system_image(const char *name, bool have_path);

/*
 * signature_fault_class - the class of a fault, the same whatever CPU or service reported it:
 *   bad_access  EXC_BAD_ACCESS, SIGSEGV, SIGBUS
 *   trap        EXC_BREAKPOINT, EXC_BAD_INSTRUCTION, SIGTRAP, SIGILL
 *   abort       SIGABRT (EXC_CRASH with SIGABRT)
 *   arithmetic  EXC_ARITHMETIC, SIGFPE
 *   guard       EXC_GUARD          resource  EXC_RESOURCE
 *   killed      SIGKILL            terminated SIGTERM
 *   bad_syscall SIGSYS             broken_pipe SIGPIPE
 * The Mach exception type decides, else the signal (a signal written where the type goes,
 * "Exception Type: SIGSEGV", counts as the signal); anything else is its own class (the
 * type, else the signal, as given). NULL when both are NULL. Static or borrowed.
 */
const char *signature_fault_class(const char *exception_type, const char *signal);

/* signature_function_in_app - false for functions of crash-reporter SDKs linked into the app
 * (KSCrash*, kscrash_*, PLCrash*, SentryCrash*, -[Sentry...], ...): they are the reporter,
 * never the crash. */
bool signature_function_in_app(const char *normalized);

/*
 * signature_normalize_symbol - `name` (NUL-terminated) normalized into buf (cap bytes, cut
 * when longer) and returned: no offset ("+ 128"), no "(in Image)" / "(file:line)" suffix, no
 * argument lists or C++ return types or cv/ref qualifiers; C++ template arguments -> "<T>";
 * clang lambdas "$_N" and "'lambda'(...)", gcc "{lambda(...)#N}" -> "lambda";
 * "(anonymous namespace)" spelled one way (also for "`anonymous namespace'", "{anonymous}");
 * ".cold.N", ".llvm.N", ".constprop.N", ".isra.N", ".part.N", " [clone ...]" dropped;
 * "block_invoke_N" -> "block_invoke"; Swift "closure #N in X" kept (each closure is its own
 * function);
 * libc++ ABI tags "[abi:...]" dropped; Objective-C "-[Class sel:]" kept as is. A bare address
 * ("0x1234") or a placeholder ("<deduplicated_symbol>", "<redacted>") becomes "".
 */
const char *signature_normalize_symbol(char *buf, size_t cap, const char *name);

/* signature_is_skipped - whether the normalized name is error-raising machinery (rule 3). */
bool signature_is_skipped(const char *normalized);

/* signature_basis_name - "in_app", "any_symbol", "offset", "exception" (static). */
const char *signature_basis_name(signature_basis b);

/* signature_render_frames_json - append the frames as a JSON array:
 * [{"function","raw","image","file","line","in_app"}] (null for unknown values). */
void signature_render_frames_json(buf *out, const signature *s);

#endif
