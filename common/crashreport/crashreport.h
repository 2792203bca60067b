/*
 * crashreport - one model for every crash and stack report stacksift reads, the parsers that
 * fill it, and the renderers that print it back (Apple text, JSON).
 *
 * Formats (auto-detected by crashreport_parse; docs/report-formats.md has the details):
 *   apple-text  Apple's text crash report, every variant from iOS 4 to macOS 26 (threads,
 *               "Last Exception Backtrace" as frame lines or as a parenthesised address list,
 *               Binary Images), also with a one-line .ips JSON header (iOS 8-14 bug_type 109),
 *               KSCrash's and PLCrashReporter's Apple-style text, and "Translated Report"
 *               text (parsing stops at the "Full Report" banner).
 *   ips         iOS 15+/macOS 12+ JSON .ips: one-line JSON header, then a JSON body with
 *               usedImages, threads[].frames[] (imageIndex/imageOffset), faultingThread,
 *               exception, termination, lastExceptionBacktrace, asi.
 *   kscrash     KSCrash / SentryCrash / Bugsnag-KSCrash JSON (report, crash, binary_images).
 *   json        stacksift's own JSON stack format for crashes, hangs and samples.
 *   sample      macOS `sample` text ("Analysis of sampling ...", "Call graph:" tree of
 *               "COUNT FUNCTION (in IMAGE) + OFF [ADDR]" lines, Binary Images) and spindump
 *               text ("COUNT FUNCTION + OFF (IMAGE + OFF) [ADDR]" per thread): a call tree.
 *   metrickit   MetricKit MXDiagnosticPayload JSON (crash, hang, CPU and disk-write exception
 *               diagnostics with a callStackTree), or one diagnostic or a bare callStackTree:
 *               a call tree per call stack; crashreport_parse_all gives every diagnostic.
 *   bugsnag     Bugsnag notifier JSON (bugsnag-cocoa): a payload {"apiKey","events":[...]} or
 *               one event: exceptions[].stacktrace[] and threads[] of frames with
 *               frameAddress / machoUUID / machoLoadAddress / machoFile / method;
 *               crashreport_parse_all gives every event.
 *   plcrash     PLCrashReporter's own binary report (.plcrash: "plcrash", version byte 1, then
 *               a protobuf CrashReport): threads with registers, images, exception, signal.
 *   sentry      a Sentry event as SDKs send it (sentry-cocoa's `macho` images, the older
 *               `apple` images of the KSCrash-based SDKs; exception, threads, debug_meta,
 *               contexts), also events without native images (handled errors, messages).
 *   minidump    a minidump as Breakpad and Crashpad write it on macOS ("MDMP" magic): read by
 *               common/minidump, every thread's stack walked by common/unwind; each frame
 *               records how the walk found it (crashreport_frame.found).
 *
 * Everything a parser produces lives in the caller's arena and stays valid until
 * arena_free(). Addresses are runtime addresses exactly as the report gives them
 * (pointer-authentication bits included); crashreport_strip_pac() clears those.
 */
#ifndef STACKSIFT_CRASHREPORT_CRASHREPORT_H
#define STACKSIFT_CRASHREPORT_CRASHREPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"

typedef enum {
    CRASHREPORT_FORMAT_APPLE_TEXT, /* "apple-text" */
    CRASHREPORT_FORMAT_IPS,        /* "ips" */
    CRASHREPORT_FORMAT_KSCRASH,    /* "kscrash" */
    CRASHREPORT_FORMAT_JSON,       /* "json": stacksift's own stack format */
    CRASHREPORT_FORMAT_SAMPLE,     /* "sample": macOS sample / spindump text (a call tree) */
    CRASHREPORT_FORMAT_METRICKIT,  /* "metrickit": one MetricKit diagnostic (a call tree) */
    CRASHREPORT_FORMAT_BUGSNAG,    /* "bugsnag": one event of a Bugsnag notifier payload */
    CRASHREPORT_FORMAT_PLCRASH,    /* "plcrash": PLCrashReporter's protobuf .plcrash file */
    CRASHREPORT_FORMAT_SENTRY,     /* "sentry": a Sentry SDK event (sentry-cocoa and older) */
    CRASHREPORT_FORMAT_MINIDUMP,   /* "minidump": a Breakpad / Crashpad minidump, walked here */
} crashreport_format;

typedef enum {
    CRASHREPORT_KIND_CRASH,  /* "crash": the process died */
    CRASHREPORT_KIND_HANG,   /* "hang": a watchdog / hang monitor sampled a stuck thread */
    CRASHREPORT_KIND_SAMPLE, /* "sample": any other stack sample (privacy API use, CPU) */
} crashreport_kind;

/* What symbolication made of one frame (set by symbolicate_report, see symbolicate.h). */
typedef enum {
    CRASHREPORT_SYM_NONE,      /* "none": not symbolicated (yet) */
    CRASHREPORT_SYM_OK,        /* "ok": `symbols` holds the symcache's answer */
    CRASHREPORT_SYM_NO_IMAGE,  /* "no_image": the address lies in no binary image */
    CRASHREPORT_SYM_MISSING,   /* "missing": the image has no symcache (UUID in missing_uuids) */
    CRASHREPORT_SYM_NOT_FOUND, /* "not_found": the symcache has nothing at this address */
} crashreport_sym_status;

/* One function at a frame's address; a frame with inlined calls has several, innermost first. */
typedef struct {
    const char *function; /* demangled name as the source gives it; never NULL */
    const char *file;     /* source file (path as given), NULL if unknown */
    uint32_t line;        /* 1-based, 0 = unknown */
    bool inlined;         /* true: inlined into the next symbol of the same frame */
    uint64_t offset;      /* bytes from the function's start to the looked-up address */
    const char *mangled;  /* the linkage name `function` was demangled from, NULL if unknown */
    const char *qualified; /* symbolicated: `function` qualified by its namespaces and types
                              where the dSYM gave no linkage name (symcache_frame.qualified,
                              "ns::Widget::draw"); what grouping reads then. NULL otherwise */
} crashreport_symbol;

/* One binary image (Mach-O) loaded in the process. */
typedef struct {
    const char *name;    /* as the report gives it ("App", "libobjc.A.dylib", or a bundle id
                            like "com.apple.CoreFoundation" in macOS reports); NULL if none */
    const char *path;    /* full path, NULL if unknown */
    const char *arch;    /* "arm64", "arm64e", "armv7", "x86_64", ...; NULL if not given */
    const char *version; /* version text the report gives ("1.0 - 1", "*"), NULL if none */
    char uuid[37];       /* LC_UUID, upper-case with dashes; "" if unknown or all zero */
    uint64_t load_addr;  /* runtime address of the image's first byte (__TEXT start) */
    uint64_t end_addr;   /* runtime address of its last byte, inclusive as Apple prints it;
                            0 = size unknown */
    uint64_t vmaddr;     /* the image's __TEXT vmaddr as the report gives it (Sentry's
                            image_vmaddr); 0 = not given: symbolication uses the symcache's */
    bool user;           /* Apple text "+" prefix: not part of the OS */
    uint8_t in_app;      /* CRASHREPORT_IN_APP_*: whether this is the app's own code; the
                            parsers leave UNKNOWN unless the report says (stacksift JSON),
                            the ingest pipeline decides the rest by the signature rules */
    bool has_unwind;     /* minidumps: the walk had this image's unwind info (its executable
                            was uploaded); false: frame pointers and the scan only */
} crashreport_image;

#define CRASHREPORT_IN_APP_UNKNOWN 0 /* zero: a zeroed image is undecided */
#define CRASHREPORT_IN_APP_YES 1
#define CRASHREPORT_IN_APP_NO 2

/* One stack frame. */
typedef struct {
    uint32_t index;          /* frame number as the report prints it (0 = innermost) */
    int32_t image;           /* index into crashreport.images, -1 if no image matched */
    uint64_t addr;           /* runtime address as given */
    const char *image_name;  /* image name as the frame line gives it (else the image's name),
                                NULL if unknown */
    const char *symbol;      /* function as the report gives it, NULL if it gives none; a
                                mangled Swift or C++ name is given in its display form (Swift
                                simplified, as atos prints it) and kept in symbol_mangled */
    const char *symbol_mangled; /* the mangled name the report gave, NULL if it gave none */
    uint64_t symbol_offset;  /* the "+ N" after `symbol` (bytes), valid if has_symbol_offset */
    bool has_symbol_offset;
    const char *file;        /* source file as given, NULL if none */
    uint32_t line;           /* source line as given, 0 = none */
    const char *raw;         /* apple-text: the text after the address as given; else NULL */
    const crashreport_symbol *given_inlines; /* .ips: inline frames the report folded into
                                this frame (innermost first); NULL if none */
    uint32_t ngiven_inlines;
    /* Where the frame came from in crashreport.text (apple-text only, else all 0): the line
     * spans [src_line, src_end), the symbol text starts at src_sym. src_list: the frame came
     * from a parenthesised "Last Exception Backtrace" address list on that line. */
    size_t src_line, src_sym, src_end;
    bool src_list;
    /* Symbolication result (symbolicate.h); symbols innermost first, strings in the arena. */
    crashreport_sym_status sym_status;
    uint64_t lookup_addr;    /* the image file address that was looked up (0 if none) */
    const crashreport_symbol *symbols;
    uint32_t nsymbols;
    /* Call trees (crashreport.tree): the thread's frames are the tree's nodes in pre-order,
     * a caller before its callees. Stacks leave parent -1, depth 0, sample_count 0. */
    int32_t parent;          /* index of the calling frame in the same thread, -1 for a root */
    uint32_t depth;          /* 0 for a root */
    uint64_t sample_count;   /* samples whose stack passed through this frame */
    bool leaf;               /* no callees: the sampled instruction, not a return address */
    uint8_t found;           /* CRASHREPORT_FOUND_*: how a stack walk found the frame
                                (minidumps); GIVEN (0) when the report gave its stack */
} crashreport_frame;

/* How a frame was found (crashreport_frame.found): given by the report, or by the server's
 * walk of a minidump stack (common/unwind: registers, call-frame information, the frame
 * pointer chain, or a stack scan, the least trusted). */
#define CRASHREPORT_FOUND_GIVEN 0
#define CRASHREPORT_FOUND_CONTEXT 1
#define CRASHREPORT_FOUND_CFI 2
#define CRASHREPORT_FOUND_FRAME_POINTER 3
#define CRASHREPORT_FOUND_SCAN 4

/* crashreport_found_name - "context", "cfi", "frame_pointer", "scan"; NULL for GIVEN. */
const char *crashreport_found_name(uint8_t found);

/* One key/value annotation a report carries beside its stacks (a minidump's Crashpad
 * annotations, the form fields or Sentry event it was uploaded with); strings in the arena. */
typedef struct {
    const char *key;   /* "prod", "ver", "environment", "tags.k", ...; never NULL */
    const char *value; /* never NULL */
} crashreport_annotation;

/* One register of a thread's saved state, as the report gives it (plcrash). */
typedef struct {
    const char *name; /* "x0", "fp", "pc", "rip", ... */
    uint64_t value;
} crashreport_register;

typedef struct {
    uint32_t index;            /* thread number as the report gives it (ips: position) */
    const char *name;          /* thread name, NULL if none */
    const char *queue;         /* dispatch queue, NULL if none */
    bool crashed;              /* the crashed (triggered / faulting) thread */
    crashreport_frame *frames; /* innermost first; call trees: pre-order (see frame.parent) */
    size_t nframes;
    uint64_t sample_count;     /* call trees: samples of this thread (0 if not given) */
    crashreport_register *registers; /* saved registers in report order, NULL if none given */
    size_t nregisters;
} crashreport_thread;

/* Report metadata; every string is as the report gives it, NULL if absent. */
typedef struct {
    const char *incident_id;        /* "C4F96507-F369-43E3-B19D-28881BF8E4D2" */
    const char *process;            /* process name, "EatFitByMax" */
    const char *process_path;       /* executable path */
    const char *bundle_id;          /* "com.eatfitbymax.app" */
    const char *app_name;           /* app name if the report names it apart from the process */
    const char *app_version;        /* CFBundleShortVersionString, "1.0.0" */
    const char *build;              /* CFBundleVersion, "12" */
    const char *version_text;       /* the "Version:" line as given, "1.0.0 (12)" */
    const char *code_type;          /* "ARM-64 (Native)", "X86-64" */
    const char *arch;               /* normalized process arch: "arm64", "x86_64", "armv7" ... */
    const char *os_version;         /* "iPhone OS 18.5 (22F76)", "macOS 12.4 (21F79)" */
    const char *hardware_model;     /* "iPhone14,5", "MacBookPro18,3" */
    const char *date;               /* crash time as given */
    const char *report_version;     /* "104" */
    const char *parent_process;     /* "launchd [1]" */
    const char *exception_type;     /* "EXC_CRASH" */
    const char *exception_codes;    /* "0x0000000000000000, 0x0000000000000000" */
    const char *exception_subtype;  /* "KERN_INVALID_ADDRESS at 0x0000000000000008" */
    const char *exception_reason;   /* NSException / C++ exception name and reason */
    const char *signal;             /* "SIGABRT" */
    const char *termination_reason; /* "SIGNAL 6 Abort trap: 6", "Namespace SIGNAL, Code 6" */
    const char *app_specific_info;  /* "Application Specific Information" / asi, lines joined */
    int32_t crashed_thread;         /* thread number of the crashed thread, -1 if unknown */
    uint64_t hang_duration_ms;      /* hangs: how long the app was unresponsive (ms) as the
                                       report gives it (spindump "Duration:", MetricKit
                                       hangDuration, sample's sampling time); 0 = not given */
    const char *diagnostic;         /* metrickit: "crash", "hang", "cpu_exception",
                                       "disk_write_exception"; NULL otherwise */
    const char *exception_detail;   /* metrickit: the diagnostic's own measurements, as JSON
                                       text ({"totalCPUTime":"20 sec",...}); NULL if none */
    const char *crash_image;        /* the image the crash happened in, when the report says so
                                       apart from its stacks (a KSCrash report of only
                                       `crash.error`: the image holding error.address, else
                                       the main executable); NULL otherwise */
    const char *release;            /* sentry: "com.example.App@1.2+34" as the SDK sends it */
    const char *dist;               /* sentry: the distribution ("34"), NULL if none */
} crashreport_metadata;

/* An error the reported exception was caused by, as a report chains them (a Bugsnag event's
 * exceptions[1...], each the cause of the one before it; the "Caused by:" blocks of
 * stacksift's own Apple-style rendering); strings and frames in the arena. */
typedef struct {
    const char *type;          /* "NSGenericException" (Bugsnag errorClass); NULL if none */
    const char *reason;        /* its message; NULL if none */
    crashreport_frame *frames; /* its own stack, innermost first; none (0) when not given */
    size_t nframes;
} crashreport_cause;

typedef struct {
    crashreport_format format;
    crashreport_kind kind;
    crashreport_metadata meta;
    crashreport_thread *threads;
    size_t nthreads;
    bool tree;                     /* threads hold call trees (sample, metrickit) */
    bool partial;                  /* the tree could not be read completely (truncated,
                                      counts or indentation that do not add up); errors
                                      says what. The frames read so far are kept. */
    bool has_leb;                  /* a Last Exception Backtrace is present */
    crashreport_frame *leb;        /* its frames, innermost (the throw) first */
    size_t nleb;
    crashreport_cause *causes;     /* the errors the exception was caused by, nearest first;
                                      NULL (0) when the report chains none */
    size_t ncauses;
    crashreport_image *images;     /* in report order (.ips: imageIndex order) */
    size_t nimages;
    const char **errors;           /* non-fatal problems met while parsing, one line each */
    size_t nerrors;
    crashreport_annotation *annotations; /* minidumps: key/value annotations in the order met
                                      (the dump's, then the upload's); NULL (0) otherwise */
    size_t nannotations;
    const char *text;              /* apple-text: the report text (rendering keeps its lines) */
    size_t text_len;
    /* Set by symbolicate_report: */
    bool symbolicated;
    const char **missing_uuids;    /* UUIDs of images frames fell in that had no symcache */
    size_t nmissing_uuids;
    const void *image_order_;      /* private: images sorted by address, crashreport_image_at */
} crashreport;

/* Upper bounds that keep a hostile report from costing more than its size suggests. */
#define CRASHREPORT_MAX_LINE 65536     /* text lines longer than this are not interpreted */
#define CRASHREPORT_MAX_ERRORS 100     /* further non-fatal errors are counted, not listed */
#define CRASHREPORT_MAX_TREE_FRAMES 200000 /* frames of one call-tree report; more: partial */

/*
 * crashreport_parse - detect the format of `len` bytes of report and parse it.
 * data    text (no NUL needed; an initial BOM is skipped), or a binary .plcrash file
 *         (recognized by its "plcrash" magic). Not referenced afterwards.
 * out     allocated in `a`, valid until arena_free(a).
 * Strings  every string of the model is valid UTF-8: where the report's are not, each invalid
 *          sequence is replaced by U+FFFD (base/utf8.h, utf8_sanitize), never refused.
 * Errors  ERR_INVALID   a NUL byte in text, malformed JSON, no stack frames at all,
 *                       or not a crash report of any known format (the message says which);
 *         ERR_UNSUPPORTED a recognized document that is not an app crash/stack report
 *                       (kernel panic, Bugsnag event JSON, ...);
 *         ERR_TOO_LARGE the arena's budget ran out.
 * Problems that still leave a usable report (a truncated report, an unreadable frame line,
 * a frame whose imageIndex is out of range) are listed in out->errors instead.
 * Thread-safe: any number of parses may run at once (each with its own arena).
 */
err_code crashreport_parse(crashreport **out, const char *data, size_t len, arena *a,
                           err_info *err);

/*
 * crashreport_parse_all - as crashreport_parse, for documents that hold several reports: a
 * MetricKit payload gives one report per diagnostic (crash, hang, CPU and disk-write
 * exception, in that order), a Bugsnag payload one per event; every other format gives one.
 * out     an array of *n (>= 1) reports, all in `a`, valid until arena_free(a).
 * Errors  as crashreport_parse; ERR_TOO_LARGE also for more than 1,000 diagnostics or
 *         events.
 */
err_code crashreport_parse_all(crashreport ***out, size_t *n, const char *data, size_t len, arena *a,
                               err_info *err);

/*
 * crashreport_split - a MetricKit payload of two or more diagnostics as one standalone
 * payload per diagnostic (the payload's timestamps and that one diagnostic, compact JSON), or
 * a Bugsnag payload of two or more events as one payload per event (the payload's other keys
 * and that one event), in the order crashreport_parse_all gives them; what a server stores as
 * one report each.
 * out     *n documents in `a` (docs[i] of lens[i] bytes, NUL-terminated); *n = 0 when `data`
 *         is anything else (the caller stores it as it is).
 * Errors  ERR_TOO_LARGE (arena budget, or more than 1,000 diagnostics or events).
 */
err_code crashreport_split(const char ***docs, size_t **lens, size_t *n, const char *data, size_t len,
                           arena *a, err_info *err);

/* One report of an array of reports (crashreport_split_array). */
typedef struct {
    const char *data; /* its bytes: a slice of the array's text (a JSON value), or, for a
                         report given as a JSON string, the decoded string in the arena */
    size_t len;
    bool text;        /* given as a JSON string (Apple text, as KSCrash's AppleFmt filter
                         makes), not as a JSON object */
} crashreport_doc;

/*
 * crashreport_split_array - the elements of a JSON array of reports, each a standalone
 * document: what KSCrash's standard sink (KSCrashReportSinkStandard) sends as its "reports"
 * part, KSCrash report objects or reports as JSON strings. Elements are found by a scanner
 * that matches strings and brackets (no element is parsed here: each is parsed on its own
 * later, so one bad report refuses only itself).
 * out     *n (>= 1) documents in `a` (slices of `data` or arena copies), valid while both are.
 * Errors  ERR_INVALID (not a JSON array, an element or the array unterminated: truncated,
 *         no element), ERR_TOO_LARGE (more than `max` elements, or the arena's budget).
 */
err_code crashreport_split_array(crashreport_doc **out, size_t *n, const char *data, size_t len,
                                 size_t max, arena *a, err_info *err);

/* Beside a minidump's bytes: what its upload said about it, and the unwind information of its
 * images (crashreport_parse_minidump). All borrowed for the parse only. */
struct unwind_image;
typedef struct {
    const char *event_json;   /* a Sentry event (JSON) the dump was sent with: release, dist,
                                 contexts (os, device, app), environment, tags, user, extra;
                                 NULL if none */
    size_t event_len;
    const struct unwind_image *images; /* unwind_image (unwind/walk.h) of the images whose
                                 debug files were uploaded, matched by UUID: their CFI, and
                                 their symbols for the stack scan (an image with symbols alone
                                 is not marked has_unwind); NULL (0): the walk uses frame
                                 pointers and the stack scan */
    size_t nimages;
    /* optional: the unwind info of image `index` (the dump's module `index`) when `images`
     * has none of its UUID, asked the first time a walk reaches the image (a frame's pc or a
     * scanned stack word in it) and at most once per UUID, with `image_unwind_ctx`; `r` is
     * the report as read so far (its images and metadata complete, its threads not). true
     * with *out filled (borrowed until the parse returns), false: none. So a dump is walked
     * once with what its images have, not first without any to learn which it reaches. */
    bool (*image_unwind)(struct unwind_image *out, void *ctx, const crashreport *r,
                         size_t index);
    void *image_unwind_ctx;
    /* optional: asked once, with `image_unwind_ctx`, when the images and metadata are read
     * and before any thread is walked: false reads the threads as `context_only` does. So a
     * caller that can use a walk only when its images allow (the intake: every in-app image's
     * symcache at hand) pays for no walk it would throw away. */
    bool (*walk_if)(void *ctx, const crashreport *r);
    bool context_only;        /* each thread's frame 0 only, from its registers, not walked,
                                 and no register list: the metadata and whether the dump has a
                                 stack at all (a walk has frames exactly when frame 0 is
                                 there), as intake needs */
} crashreport_minidump_options;

/*
 * crashreport_parse_minidump - a minidump (`len` bytes starting "MDMP") as a report: the
 * system info, exception (EXC_CRASH unwrapped: signal and original exception), modules as
 * binary images, every thread walked (common/unwind: frames marked by `found`; Breakpad's
 * handler thread skipped), the crashed thread's registers, Crashpad's annotations (and the
 * `__crash_info` messages as app_specific_info), and what the reader could not read as
 * errors. `opts` may be NULL. crashreport_parse calls it with none.
 * Errors  ERR_INVALID (no header or stream directory; no thread with a readable context: the
 *         message says why), ERR_TOO_LARGE (the arena's budget).
 * Source  common/minidump/README.md, common/unwind/README.md.
 */
err_code crashreport_parse_minidump(crashreport **out, const uint8_t *data, size_t len,
                                    const crashreport_minidump_options *opts, arena *a,
                                    err_info *err);

/* crashreport_is_minidump - whether `len` bytes start with the minidump magic "MDMP". */
bool crashreport_is_minidump(const uint8_t *data, size_t len);

/* crashreport_format_name / crashreport_kind_name / crashreport_sym_status_name - the
 * stable strings above ("apple-text", "crash", "ok", ...). Static strings. */
const char *crashreport_format_name(crashreport_format f);
const char *crashreport_kind_name(crashreport_kind k);
const char *crashreport_sym_status_name(crashreport_sym_status s);

/* crashreport_frame_arch - the architecture that decides how the frame's address is read:
 * its image's arch, else the report's, else NULL. */
const char *crashreport_frame_arch(const crashreport *r, const crashreport_frame *f);

/*
 * crashreport_strip_pac - `addr` without arm64e pointer-authentication bits.
 * On arm64 (arm64, arm64e, arm64_32, or an unknown arch) user-space addresses are below
 * 2^47 (the largest virtual address space iOS and macOS give a process), so bits 47-63
 * are cleared when any is set. Other archs: addr unchanged.
 */
uint64_t crashreport_strip_pac(uint64_t addr, const char *arch);

/* crashreport_image_at - index of the image whose [load_addr, end_addr] holds `addr`
 * (PAC bits already stripped), -1 if none. An image of unknown size (end_addr 0) reaches up
 * to the next image's load address, at most 4 GiB. */
int32_t crashreport_image_at(const crashreport *r, uint64_t addr);

/* crashreport_use_raw_names - make every frame of `r` show its raw linkage name where it has
 * one: `symbol` takes `symbol_mangled`, each symbolicated and given inline symbol's
 * `function` takes its `mangled` (the `--mangled` output of `stacksift symbolicate`). The
 * `mangled` fields stay as they were; frames without a raw name are unchanged. */
void crashreport_use_raw_names(crashreport *r);

/*
 * crashreport_render_json - append the model as one JSON object (no newline) to `out`:
 *   {"format","kind","metadata":{...},"threads":[{"index","name","queue","crashed",
 *    "frames":[{"index","image","image_index","address","symbol","symbol_offset","file",
 *    "line", ["symbolicated","symbols":[{"function","file","line","inlined","offset"}]]}]}],
 *    "last_exception_backtrace":[frames]|null,"images":[{"name","uuid","arch",
 *    "load_address","end_address","path","version","user"}],"errors":[...],
 *    ["missing_uuids":[...]]}
 * Addresses are "0x..." hex strings; unknown values are null. The symbolication keys appear
 * once symbolicate_report has run. docs/report-formats.md describes every key.
 */
void crashreport_render_json(buf *out, const crashreport *r);

/*
 * crashreport_render_text - append the report as Apple crash-report text to `out`.
 * apple-text reports keep every original line byte for byte, except that each symbolicated
 * frame's symbol text is replaced the way symbolicatecrash does it:
 *     3   App   0x0000000104cd0a1c -[Foo bar:] (Foo.m:42)
 * (function, then the source file's base name and line; "function + offset" when only a
 * symbol table knew the address), inlined functions first as extra lines with the same
 * number, image and address, marked " [inlined]", and a parenthesised Last Exception
 * Backtrace list is replaced by one line per frame. Other formats are rendered as a
 * synthesized Apple-style report (header, Last Exception Backtrace, threads, Binary Images).
 */
void crashreport_render_text(buf *out, const crashreport *r);

#endif
