/*
 * test_signature - every grouping rule of common/signature, one test each: name normalization,
 * the skip table, in-app images, stack choice, fallbacks, fingerprint stability.
 * Reports are real Apple-text reports parsed by crashreport_parse.
 */
#include "harness.h"

#include "base/arena.h"
#include "crashreport/crashreport.h"
#include "signature/signature.h"

static char nbuf[SIGNATURE_MAX_NAME];

static const char *norm(const char *name)
{
    return signature_normalize_symbol(nbuf, sizeof nbuf, name);
}

/* norm2 - a second buffer, for comparing two normalized names */
static char nbuf2[SIGNATURE_MAX_NAME];

static const char *norm2(const char *name)
{
    return signature_normalize_symbol(nbuf2, sizeof nbuf2, name);
}

/* ---- normalization: one rule per test ----------------------------------------------------- */

static void normalize_strips_offset_and_args(void)
{
    CHECK_EQ_STR(norm("Foo::bar(int) + 128"), "Foo::bar");
    CHECK_EQ_STR(norm("main + 0"), "main");
    CHECK_EQ_STR(norm("compute(int, char const*)"), "compute");
}

static void normalize_strips_location_suffixes(void)
{
    CHECK_EQ_STR(norm("Widget::draw() const (shapes.cpp:42)"), "Widget::draw");
    CHECK_EQ_STR(norm("helper (in FixtureApp) (calc.c:17)"), "helper");
    CHECK_EQ_STR(norm("helper (calc.c:17:3)"), "helper");
}

static void normalize_bare_address_is_empty(void)
{
    CHECK_EQ_STR(norm("0x0000000100001234"), "");
    CHECK_EQ_STR(norm("  0x1f  "), "");
}

static void normalize_drops_abi_tags(void)
{
    CHECK_EQ_STR(norm("std::__1::unordered_map<int, int>::find[abi:ne200100](int const&)"),
                 "std::__1::unordered_map<T>::find");
    CHECK_EQ_STR(norm("fx::name[abi:cxx11]()"), "fx::name");
}

static void normalize_placeholder_is_empty(void)
{
    CHECK_EQ_STR(norm("<deduplicated_symbol>"), "");
    CHECK_EQ_STR(norm("<redacted> + 12"), "");
}

static void normalize_drops_cv_ref_qualifiers(void)
{
    CHECK_EQ_STR(norm("Box::get() const &"), "Box::get");
    CHECK_EQ_STR(norm("Box::take() &&"), "Box::take");
    CHECK_EQ_STR(norm("Box::size() const noexcept"), "Box::size");
}

static void normalize_collapses_templates(void)
{
    CHECK_EQ_STR(norm("fx::Box<int>::get() const"), "fx::Box<T>::get");
    CHECK_EQ_STR(norm("std::__1::vector<std::__1::pair<int, float>, std::__1::allocator<"
                      "std::__1::pair<int, float> > >::push_back(std::__1::pair<int, float>&&)"),
                 "std::__1::vector<T>::push_back");
    /* a function pointer type with "->"-free parentheses inside a template */
    CHECK_EQ_STR(norm("std::function<void (int)>::operator()(int) const"),
                 "std::function<T>::operator()");
}

static void normalize_strips_cxx_return_type(void)
{
    CHECK_EQ_STR(norm("int fx::max<int>(int, int)"), "fx::max<T>");
    CHECK_EQ_STR(norm("std::__1::basic_string<char> fx::name<char>()"), "fx::name<T>");
}

static void normalize_keeps_operators(void)
{
    CHECK_EQ_STR(norm("fx::Vec::operator<(fx::Vec const&) const"), "fx::Vec::operator<");
    CHECK_EQ_STR(norm("fx::Vec::operator<<(int)"), "fx::Vec::operator<<");
    CHECK_EQ_STR(norm("fx::Ptr::operator->() const"), "fx::Ptr::operator->");
    CHECK_EQ_STR(norm("fx::Fn::operator()(int)"), "fx::Fn::operator()");
    CHECK_EQ_STR(norm("operator new(unsigned long)"), "operator new");
}

static void normalize_clang_lambda(void)
{
    CHECK_EQ_STR(norm("Widget::draw()::$_0::operator()() const"), "Widget::draw::lambda::operator()");
    CHECK_EQ_STR(norm("Widget::draw()::$_12::operator()(int) const"),
                 "Widget::draw::lambda::operator()");
    CHECK_EQ_STR(norm("Widget::draw()::'lambda'(int)::operator()(int) const"),
                 "Widget::draw::lambda::operator()");
    CHECK_EQ_STR(norm("Widget::draw()::'lambda0'()::operator()() const"),
                 "Widget::draw::lambda::operator()");
}

static void normalize_gcc_lambda(void)
{
    CHECK_EQ_STR(norm("Widget::draw()::{lambda(int)#1}::operator()(int) const"),
                 "Widget::draw::lambda::operator()");
    CHECK_EQ_STR(norm("Widget::draw()::{lambda()#2}::operator()() const"),
                 "Widget::draw::lambda::operator()");
}

static void normalize_anonymous_namespace_one_spelling(void)
{
    CHECK_EQ_STR(norm("(anonymous namespace)::parse(char const*)"), "(anonymous namespace)::parse");
    CHECK_EQ_STR(norm("`anonymous namespace'::parse(char const*)"), "(anonymous namespace)::parse");
    CHECK_EQ_STR(norm("{anonymous}::parse(char const*)"), "(anonymous namespace)::parse");
}

static void normalize_drops_cold_and_clone_suffixes(void)
{
    CHECK_EQ_STR(norm("compute.cold.1"), "compute");
    CHECK_EQ_STR(norm("compute.cold"), "compute");
    CHECK_EQ_STR(norm("compute(int) [clone .constprop.0]"), "compute");
    CHECK_EQ_STR(norm("compute.llvm.1234567890"), "compute");
    CHECK_EQ_STR(norm("compute.isra.0"), "compute");
    CHECK_EQ_STR(norm("compute.part.3"), "compute");
}

static void normalize_block_invoke_number(void)
{
    CHECK_EQ_STR(norm("__main_block_invoke_2"), "main_block_invoke");
    CHECK_EQ_STR(norm("__29-[Foo bar:]_block_invoke_3"), "-[Foo bar:]_block_invoke");
    CHECK_EQ_STR(norm("__main_block_invoke"), "main_block_invoke");
}

/* A block's name as the symbol table has it and as dladdr-based SDKs show it (one leading
 * underscore less: Bugsnag's "_31-[...]") is one name, apart from its method's. */
static void normalize_block_invoke_underscores(void)
{
    CHECK_EQ_STR(norm("__31-[CRLCrashReleasedObject crash]_block_invoke (CRLCrashReleasedObject.m:53)"),
                 norm2("_31-[CRLCrashReleasedObject crash]_block_invoke"));
    CHECK_EQ_STR(norm("___31-[CRLCrashReleasedObject crash]_block_invoke_2 + 12"),
                 "-[CRLCrashReleasedObject crash]_block_invoke");
    CHECK(strcmp(norm("__31-[CRLCrashReleasedObject crash]_block_invoke"),
                 norm2("-[CRLCrashReleasedObject crash]")) != 0);
    CHECK_EQ_STR(norm("_main_block_invoke"), norm2("__main_block_invoke"));
}

/* libsystem's CPU variants are the function; Sentry's "[inlined] f" is f. */
static void normalize_cpu_variants_and_inlined_mark(void)
{
    CHECK_EQ_STR(norm("_platform_memmove$VARIANT$CortexA9"), "_platform_memmove");
    CHECK_EQ_STR(norm("_platform_memmove$VARIANT$Haswell + 12"), "_platform_memmove");
    CHECK_EQ_STR(norm("OSAtomicAdd32$VARIANT$mp"), "OSAtomicAdd32");
    CHECK_EQ_STR(norm("[inlined] pthread_getname_np"), "pthread_getname_np");
    /* only the "$VARIANT$" mark goes: another '$' is part of a name */
    CHECK_EQ_STR(norm("objc_msgSend$stub"), "objc_msgSend$stub");
}

static void normalize_swift_closure(void)
{
    /* a closure keeps its "closure #N in" context; each closure is its own function */
    CHECK_EQ_STR(norm("closure #1 in ViewController.viewDidLoad()"),
                 "closure #1 in ViewController.viewDidLoad");
    CHECK_EQ_STR(norm("closure #2 in closure #1 in Model.load()"),
                 "closure #2 in closure #1 in Model.load");
    CHECK_EQ_STR(norm("implicit closure #3 in Foo.bar()"), "implicit closure #3 in Foo.bar");
    CHECK(strcmp(norm("closure #1 in Model.load()"), norm2("closure #2 in Model.load()")) != 0);
    CHECK(strcmp(norm("closure #1 in Model.load()"), norm2("Model.load()")) != 0);
    /* a raw Swift closure symbol (closure #1 in main.Model.load()) groups as its display form */
    CHECK_EQ_STR(norm("$s4main5ModelC4loadyyFyycfU_"), "closure #1 in Model.load");
}

/* ---- Swift: wrappers collapse onto the function they wrap ---------------------- */

static void normalize_swift_mangled_demangled(void)
{
    /* a raw Swift name groups as its display form (atos's) */
    CHECK_EQ_STR(norm("$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyF + 52"),
                 "ViewController.viewDidLoad");
    CHECK_EQ_STR(norm("_$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyF"),
                 norm2("ViewController.viewDidLoad()"));
    CHECK_EQ_STR(norm("_ZN6Widget4drawEv"), "Widget::draw");
}

/* Names a client sent as dladdr or a symbol table gives them normalize as a dSYM's do: every
 * mangling prefix, with or without Mach-O's leading underscore. */
static void normalize_client_mangled_prefixes(void)
{
    const char *want = "CRLCrashSwift.crash";
    CHECK_EQ_STR(norm("$s10CrashProbe13CRLCrashSwiftC5crashyyF"), want);
    CHECK_EQ_STR(norm("_$s10CrashProbe13CRLCrashSwiftC5crashyyF"), want);
    CHECK_EQ_STR(norm("_T010CrashProbe13CRLCrashSwiftC5crashyyF"), want);
    CHECK_EQ_STR(norm("__T010CrashProbe13CRLCrashSwiftC5crashyyF"), want);
    CHECK_EQ_STR(norm("CRLCrashSwift.crash() -> ()"), want);
    CHECK_EQ_STR(norm("_ZN2ns1C1fEi"), "ns::C::f");
    CHECK_EQ_STR(norm("__ZN2ns1C1fEi + 12"), "ns::C::f");
    CHECK_EQ_STR(norm("ns::C::f(int)"), norm2("ns::C::f"));
    CHECK_EQ_STR(norm("_ZN12_GLOBAL__N_16helperEv"), norm2("(anonymous namespace)::helper"));
}

static void normalize_swift_objc_thunks(void)
{
    CHECK_EQ_STR(norm("@objc ViewController.viewDidLoad()"), "ViewController.viewDidLoad");
    CHECK_EQ_STR(norm("@nonobjc Gizmo.run(with:)"), "Gizmo.run");
    CHECK_EQ_STR(norm("$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyFTo"),
                 norm2("$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyF"));
}

static void normalize_swift_specializations(void)
{
    CHECK_EQ_STR(norm("specialized static CrashClass.pleaseCrash()"), "static CrashClass.pleaseCrash");
    CHECK_EQ_STR(norm("specialized Stack.push(_:)"), "Stack.push");
    CHECK_EQ_STR(norm("generic specialization <Swift.Int> of main.Stack.push(A) -> ()"), "main.Stack.push");
    CHECK_EQ_STR(norm("function signature specialization <Arg[0] = Dead> of main.f(Swift.Int) -> ()"),
                 "main.f");
    CHECK_EQ_STR(norm("Stack<Int>.push(_:)"), "Stack<T>.push");
    CHECK_EQ_STR(norm("$s4main5StackV4pushyyxFSi_Tg5"), norm2("$s4main5StackV4pushyyxF"));
}

static void normalize_swift_merged_and_partial_apply(void)
{
    CHECK_EQ_STR(norm("merged Model.load()"), "Model.load");
    CHECK_EQ_STR(norm("partial apply for closure #1 in Model.load()"), "closure #1 in Model.load");
    CHECK_EQ_STR(norm("partial apply for closure #1 in Model.load()"), norm2("closure #1 in Model.load()"));
    CHECK_EQ_STR(norm("(1) await resume partial function for Model.fetch()"), "Model.fetch");
    /* a wrapper word alone is a name, not a wrapper */
    CHECK_EQ_STR(norm("specialized "), "specialized");
}

static void skip_table_swift_traps(void)
{
    const char *skipped[] = {"_assertionFailure(_:_:file:line:flags:)", "fatalError(_:file:line:)",
                             "swift_unexpectedError", "_swift_stdlib_reportFatalErrorInFile",
                             "_swift_stdlib_reportFatalError", "swift_deletedMethodError",
                             "_unimplementedInitializer(className:initName:file:line:column:)",
                             "$ss17_assertionFailure__4file4line5flagss5NeverOs12StaticStringV_SSAHSus6UInt32VtF"};
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++) {
        if (!signature_is_skipped(norm(skipped[i])))
            fprintf(stderr, "not skipped: %s -> %s\n", skipped[i], norm(skipped[i]));
        CHECK(signature_is_skipped(norm(skipped[i])));
    }
    CHECK(!signature_is_skipped(norm("ViewController.fatalErrorButtonTapped()")));
}

static void normalize_objc_kept_as_is(void)
{
    CHECK_EQ_STR(norm("-[FXRoot crashWithIndex:count:] + 40"), "-[FXRoot crashWithIndex:count:]");
    CHECK_EQ_STR(norm("+[NSException raise:format:]"), "+[NSException raise:format:]");
    CHECK_EQ_STR(norm("-[FXRoot(Cat) run] (objc_root.m:12)"), "-[FXRoot(Cat) run]");
}

/* ---- the skip table and SDK functions ----------------------------------------------------- */

static void skip_table_matches_machinery(void)
{
    const char *skipped[] = {"objc_exception_throw", "__exceptionPreprocess",
                             "_CFThrowFormattedException", "__cxa_throw", "std::terminate",
                             "abort", "__abort_message", "__pthread_kill", "pthread_kill",
                             "raise", "__assert_rtn", "_assertionFailure",
                             "Swift._assertionFailure", "fatalError", "_sigtramp",
                             "Swift runtime failure: Unexpectedly found nil",
                             "std::__1::__throw_out_of_range"};
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++) {
        if (!signature_is_skipped(norm(skipped[i])))
            fprintf(stderr, "not skipped: %s\n", skipped[i]);
        CHECK(signature_is_skipped(norm(skipped[i])));
    }
    CHECK(signature_is_skipped(norm("std::terminate() + 12")));
    CHECK(!signature_is_skipped("objc_msgSend"));
    CHECK(!signature_is_skipped("abortion_handler"));
    CHECK(!signature_is_skipped("Widget::draw"));
}

static void sdk_functions_are_not_in_app(void)
{
    CHECK(!signature_function_in_app("kscrash_install"));
    CHECK(!signature_function_in_app("-[KSCrash install]"));
    CHECK(!signature_function_in_app("PLCrashReporterCallback"));
    CHECK(!signature_function_in_app("SentryCrashMonitor_start"));
    CHECK(!signature_function_in_app("-[SentryClient captureEvent:]"));
    CHECK(signature_function_in_app("-[AppDelegate crash]"));
}

/* ---- whole reports ---------------------------------------------------------------------- */

#define HEADER                                                                                     \
    "Incident Identifier: 11111111-2222-3333-4444-555555555555\n"                                  \
    "Hardware Model:      iPhone14,5\n"                                                            \
    "Process:             FixtureApp [123]\n"                                                      \
    "Path:                /private/var/containers/Bundle/Application/AAAA/FixtureApp.app/"         \
    "FixtureApp\n"                                                                                 \
    "Identifier:          com.example.fixture\n"                                                   \
    "Version:             1.0 (1)\n"                                                               \
    "Code Type:           ARM-64 (Native)\n"                                                       \
    "OS Version:          iPhone OS 17.0 (21A329)\n"                                               \
    "Report Version:      104\n\n"

#define IMAGES                                                                                     \
    "\nBinary Images:\n"                                                                           \
    "0x100000000 - 0x100007fff FixtureApp arm64  <4c4c442255553144a12fa2d87ee12f80> "             \
    "/private/var/containers/Bundle/Application/AAAA/FixtureApp.app/FixtureApp\n"                  \
    "0x100100000 - 0x100107fff FixtureKit arm64  <5c4c442255553144a12fa2d87ee12f80> "             \
    "/private/var/containers/Bundle/Application/AAAA/FixtureApp.app/Frameworks/"                   \
    "FixtureKit.framework/FixtureKit\n"                                                            \
    "0x100200000 - 0x100207fff KSCrash arm64  <6c4c442255553144a12fa2d87ee12f80> "                \
    "/private/var/containers/Bundle/Application/AAAA/FixtureApp.app/Frameworks/"                   \
    "KSCrash.framework/KSCrash\n"                                                                  \
    "0x1e0000000 - 0x1e0ffffff libsystem_kernel.dylib arm64e  <11111111111111111111111111111111> " \
    "/usr/lib/system/libsystem_kernel.dylib\n"                                                     \
    "0x1e1000000 - 0x1e1ffffff libsystem_pthread.dylib arm64e  <21111111111111111111111111111111> " \
    "/usr/lib/system/libsystem_pthread.dylib\n"                                                    \
    "0x1e2000000 - 0x1e2ffffff libsystem_c.dylib arm64e  <31111111111111111111111111111111> "      \
    "/usr/lib/system/libsystem_c.dylib\n"                                                          \
    "0x1e3000000 - 0x1e3ffffff UIKitCore arm64e  <41111111111111111111111111111111> "              \
    "/System/Library/PrivateFrameworks/UIKitCore.framework/UIKitCore\n"                            \
    "0x1e4000000 - 0x1e4ffffff CoreFoundation arm64e  <51111111111111111111111111111111> "         \
    "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation\n"                         \
    "0x1e5000000 - 0x1e5ffffff libobjc.A.dylib arm64e  <61111111111111111111111111111111> "        \
    "/usr/lib/libobjc.A.dylib\n"

#define ABORT_FRAMES                                                                               \
    "0   libsystem_kernel.dylib        \t0x00000001e0001000 __pthread_kill + 8\n"                   \
    "1   libsystem_pthread.dylib       \t0x00000001e1001000 pthread_kill + 208\n"                   \
    "2   libsystem_c.dylib             \t0x00000001e2001000 abort + 124\n"

static arena *A;

static crashreport *parse(const char *text)
{
    crashreport *r = NULL;
    err_info err = {0};
    if (crashreport_parse(&r, text, strlen(text), A, &err) != ERR_OK) {
        fprintf(stderr, "parse failed: %s\n", err.msg);
        return NULL;
    }
    return r;
}

static signature sig_of(const char *text, unsigned max)
{
    signature s;
    memset(&s, 0, sizeof s);
    crashreport *r = parse(text);
    err_info err = {0};
    signature_options opts = {max};
    if (r == NULL || signature_compute(&s, r, &opts, A, &err) != ERR_OK)
        fprintf(stderr, "signature failed: %s\n", err.msg);
    return s;
}

static void in_app_images_by_path(void)
{
    crashreport *r = parse(HEADER "Exception Type:  EXC_CRASH (SIGABRT)\n\nThread 0 Crashed:\n"
                           "0   FixtureApp  \t0x0000000100001234 0x100000000 + 4660\n" IMAGES);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_INT(r->nimages, 9);
    CHECK(signature_image_in_app(r, 0));  /* main executable */
    CHECK(signature_image_in_app(r, 1));  /* .app/Frameworks/ */
    CHECK(!signature_image_in_app(r, 2)); /* crash-reporter SDK framework */
    CHECK(!signature_image_in_app(r, 3)); /* /usr/lib/ */
    CHECK(!signature_image_in_app(r, 6)); /* /System/ */
    CHECK(!signature_image_in_app(r, 99));
}

static void in_app_simulator_and_macos_paths(void)
{
    crashreport r;
    crashreport_image ims[4];
    memset(&r, 0, sizeof r);
    memset(ims, 0, sizeof ims);
    ims[0].path = "/Users/me/Library/Developer/CoreSimulator/Devices/1A2B/data/Containers/Bundle/"
                  "Application/3C4D/Demo.app/Demo";
    ims[1].path = "/Applications/Xcode.app/Contents/Developer/Platforms/iPhoneSimulator.platform/"
                  "Developer/Library/lib.dylib";
    ims[2].path = "/Library/Developer/CoreSimulator/Profiles/Runtimes/iOS.simruntime/Contents/"
                  "Resources/RuntimeRoot/System/Library/Frameworks/UIKit.framework/UIKit";
    ims[3].path = "/Applications/Demo.app/Contents/Frameworks/Engine.framework/Engine";
    r.images = ims;
    r.nimages = 4;
    CHECK(signature_image_in_app(&r, 0));
    CHECK(!signature_image_in_app(&r, 1));
    CHECK(!signature_image_in_app(&r, 2));
    CHECK(signature_image_in_app(&r, 3));
    /* a decision the report made itself (stacksift JSON "in_app") wins over the path rules */
    ims[0].in_app = CRASHREPORT_IN_APP_NO;
    ims[1].in_app = CRASHREPORT_IN_APP_YES;
    CHECK(!signature_image_in_app(&r, 0));
    CHECK(signature_image_in_app(&r, 1));
}

static void skips_machinery_and_system_frames(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_CRASH (SIGABRT)\n\nThread 0 Crashed:\n"
                         ABORT_FRAMES
                         "3   FixtureApp  \t0x0000000100001234 fx_crash + 20 (crash.cpp:12)\n"
                         "4   FixtureApp  \t0x0000000100002234 Widget::draw(int) const + 20\n"
                         "5   UIKitCore   \t0x00000001e3001000 UIApplicationMain + 100\n"
                         "6   FixtureApp  \t0x0000000100003234 main + 20\n" IMAGES, 3);
    CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_IN_APP);
    CHECK_EQ_INT(s.nframes, 3);
    if (s.nframes == 3) {
        CHECK_EQ_STR(s.frames[0].function, "fx_crash");
        CHECK_EQ_STR(s.frames[1].function, "Widget::draw");
        CHECK_EQ_STR(s.frames[2].function, "main");
        CHECK(s.frames[0].in_app);
    }
    CHECK_EQ_STR(s.exception, "EXC_CRASH/SIGABRT");
    CHECK_EQ_STR(s.title, "EXC_CRASH: fx_crash");
    CHECK_EQ_STR(s.culprit, "fx_crash (crash.cpp:12)");
    CHECK_EQ_STR(s.kind, "crash");
    CHECK(!s.provisional);
    CHECK_EQ_INT(strlen(s.fingerprint), 64);
}

/* A minidump walk's scanned frames are shown, never signed: marking a frame `scan` takes it
 * out of the signature, whatever its name; other ways of finding it leave it in. */
static void scanned_frames_leave_the_signature(void)
{
    const char *text = HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                       "0   FixtureApp  \t0x0000000100001234 a + 20\n"
                       "1   FixtureApp  \t0x0000000100002234 stale + 20\n"
                       "2   FixtureApp  \t0x0000000100003234 b + 20\n"
                       "3   FixtureApp  \t0x0000000100004234 c + 20\n" IMAGES;
    crashreport *r = parse(text);
    CHECK(r != NULL && r->nthreads == 1 && r->threads[0].nframes == 4);
    if (r == NULL || r->nthreads != 1 || r->threads[0].nframes != 4)
        return;
    signature_options opts = {3};
    err_info err = {0};
    signature given, walked, scanned;
    crashreport_frame *f = r->threads[0].frames;
    CHECK_EQ_INT(signature_compute(&given, r, &opts, A, &err), ERR_OK);
    f[0].found = CRASHREPORT_FOUND_CONTEXT;
    f[1].found = CRASHREPORT_FOUND_CFI;
    f[2].found = CRASHREPORT_FOUND_FRAME_POINTER;
    f[3].found = CRASHREPORT_FOUND_FRAME_POINTER;
    CHECK_EQ_INT(signature_compute(&walked, r, &opts, A, &err), ERR_OK);
    CHECK_EQ_STR(walked.fingerprint, given.fingerprint);
    f[1].found = CRASHREPORT_FOUND_SCAN;
    CHECK_EQ_INT(signature_compute(&scanned, r, &opts, A, &err), ERR_OK);
    CHECK_EQ_INT(scanned.nframes, 3);
    if (scanned.nframes == 3) {
        CHECK_EQ_STR(scanned.frames[0].function, "a");
        CHECK_EQ_STR(scanned.frames[1].function, "b");
        CHECK_EQ_STR(scanned.frames[2].function, "c");
    }
    CHECK(strcmp(scanned.fingerprint, given.fingerprint) != 0);
}

static void top_n_is_configurable(void)
{
    const char *text = HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                       "0   FixtureApp  \t0x0000000100001234 a + 20\n"
                       "1   FixtureApp  \t0x0000000100002234 b + 20\n"
                       "2   FixtureApp  \t0x0000000100003234 c + 20\n" IMAGES;
    signature one = sig_of(text, 1), three = sig_of(text, 3);
    CHECK_EQ_INT(one.nframes, 1);
    CHECK_EQ_INT(three.nframes, 3);
    CHECK(strcmp(one.fingerprint, three.fingerprint) != 0);
}

static void recursion_is_collapsed(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100001234 fx_recurse(int) + 20\n"
                         "1   FixtureApp  \t0x0000000100001334 fx_recurse(int) + 276\n"
                         "2   FixtureApp  \t0x0000000100001334 fx_recurse(int) + 276\n"
                         "3   FixtureApp  \t0x0000000100002234 fx_start + 8\n" IMAGES, 3);
    CHECK_EQ_INT(s.nframes, 2);
    if (s.nframes == 2) {
        CHECK_EQ_STR(s.frames[0].function, "fx_recurse");
        CHECK_EQ_STR(s.frames[1].function, "fx_start");
    }
}

static void same_crash_other_addresses_same_fingerprint(void)
{
    /* Another build (other addresses, offsets, lines), same functions: one issue. */
    signature a = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100001234 Widget::draw(int) const + 20 (a.cpp:4)\n"
                         "1   FixtureApp  \t0x0000000100002234 main + 20\n" IMAGES, 3);
    signature b = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100004000 Widget::draw(int) const + 96 (a.cpp:9)\n"
                         "1   FixtureApp  \t0x0000000100005000 main + 44\n" IMAGES, 3);
    CHECK_EQ_STR(a.fingerprint, b.fingerprint);
}

/* Swift closures: two closures of one function are two issues, and so are a closure and the function
 * that encloses it; the same closure in another build (other address, offset) is one. */
static void swift_closures_keep_their_number_in_the_fingerprint(void)
{
#define CLOSURE_CRASH(frame0)                                                                   \
    HEADER "Exception Type:  EXC_BREAKPOINT (SIGTRAP)\n\nThread 0 Crashed:\n"                    \
           "0   FixtureApp  \t0x0000000100001234 " frame0 "\n"                                    \
           "1   FixtureApp  \t0x0000000100002234 @objc ViewController.viewDidLoad() + 20\n" IMAGES
    signature c1 = sig_of(CLOSURE_CRASH("closure #1 in ViewController.viewDidLoad() + 20"), 3);
    signature c1b = sig_of(CLOSURE_CRASH("closure #1 in ViewController.viewDidLoad() + 96"), 3);
    signature c2 = sig_of(CLOSURE_CRASH("closure #2 in ViewController.viewDidLoad() + 20"), 3);
    signature f = sig_of(CLOSURE_CRASH("ViewController.viewDidLoad() + 20"), 3);
#undef CLOSURE_CRASH
    CHECK_EQ_INT(strlen(c1.fingerprint), 64);
    CHECK_EQ_STR(c1.fingerprint, c1b.fingerprint);
    CHECK(strcmp(c1.fingerprint, c2.fingerprint) != 0);
    CHECK(strcmp(c1.fingerprint, f.fingerprint) != 0);
    CHECK(strcmp(c2.fingerprint, f.fingerprint) != 0);
    if (c2.nframes > 0)
        CHECK_EQ_STR(c2.frames[0].function, "closure #2 in ViewController.viewDidLoad");
    CHECK_EQ_STR(c2.title, "EXC_BREAKPOINT: closure #2 in ViewController.viewDidLoad");
}

/* The fault class table: one class per fault, whatever the CPU named it. */
static void fault_classes(void)
{
    CHECK_EQ_STR(signature_fault_class("EXC_BAD_ACCESS", "SIGSEGV"), "bad_access");
    CHECK_EQ_STR(signature_fault_class("EXC_BAD_ACCESS", "SIGBUS"), "bad_access");
    CHECK_EQ_STR(signature_fault_class("SIGSEGV", NULL), "bad_access");
    CHECK_EQ_STR(signature_fault_class(NULL, "SIGBUS"), "bad_access");
    CHECK_EQ_STR(signature_fault_class("EXC_BREAKPOINT", "SIGTRAP"), "trap");
    CHECK_EQ_STR(signature_fault_class("EXC_BAD_INSTRUCTION", "SIGILL"), "trap");
    CHECK_EQ_STR(signature_fault_class("SIGILL", NULL), "trap");
    CHECK_EQ_STR(signature_fault_class("EXC_CRASH", "SIGABRT"), "abort");
    CHECK_EQ_STR(signature_fault_class("EXC_CRASH", "SIGKILL"), "killed");
    CHECK_EQ_STR(signature_fault_class("EXC_ARITHMETIC", "SIGFPE"), "arithmetic");
    CHECK_EQ_STR(signature_fault_class("EXC_GUARD", "SIGKILL"), "guard");
    CHECK_EQ_STR(signature_fault_class("EXC_WEIRD", NULL), "EXC_WEIRD");
    CHECK(signature_fault_class(NULL, NULL) == NULL);
}

/* Where in-app frames decide, the exception's names do not split (a trap is EXC_BREAKPOINT on
 * arm64, EXC_BAD_INSTRUCTION on x86_64; some services send no exception at all); without
 * in-app frames the fault class does, and only the class. */
static void fault_names_do_not_split_one_bug(void)
{
    const char *in_app = "\nThread 0 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100001234 Widget::draw(int) const + 20\n" IMAGES;
    const char *system = "\nThread 0 Crashed:\n"
                         "0   libobjc.A.dylib \t0x00000001e5001000 objc_msgSend + 16\n" IMAGES;
    const char *types[] = {"EXC_BREAKPOINT (SIGTRAP)", "EXC_BAD_INSTRUCTION (SIGILL)",
                           "EXC_BAD_ACCESS (SIGSEGV)", "EXC_BAD_ACCESS (SIGBUS)", "SIGSEGV"};
    signature in[5], sys[5];
    for (size_t i = 0; i < 5; i++) {
        char t[8192];
        snprintf(t, sizeof t, "%sException Type:  %s\n%s", HEADER, types[i], in_app);
        in[i] = sig_of(t, 3);
        snprintf(t, sizeof t, "%sException Type:  %s\n%s", HEADER, types[i], system);
        sys[i] = sig_of(t, 3);
    }
    char bare[8192];
    snprintf(bare, sizeof bare, "%s%s", HEADER, in_app); /* no exception at all */
    signature none = sig_of(bare, 3);
    for (size_t i = 1; i < 5; i++)
        CHECK_EQ_STR(in[i].fingerprint, in[0].fingerprint);
    CHECK_EQ_STR(none.fingerprint, in[0].fingerprint);
    CHECK_EQ_STR(in[0].exception, "EXC_BREAKPOINT/SIGTRAP"); /* shown as reported */
    CHECK_EQ_INT(sys[0].basis, SIGNATURE_BASIS_ANY_SYMBOL);
    CHECK_EQ_STR(sys[0].fingerprint, sys[1].fingerprint);          /* trap = trap */
    CHECK_EQ_STR(sys[2].fingerprint, sys[3].fingerprint);          /* SEGV = BUS */
    CHECK_EQ_STR(sys[2].fingerprint, sys[4].fingerprint);          /* signal as the type */
    CHECK(strcmp(sys[0].fingerprint, sys[2].fingerprint) != 0);    /* trap != bad access */
}

static void exception_class_is_in_fingerprint(void)
{
    const char *frames = "\nThread 0 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100001234 Widget::draw(int) const + 20\n" IMAGES;
    char t1[8192], t2[8192];
    snprintf(t1, sizeof t1, "%sException Type:  EXC_BAD_ACCESS (SIGSEGV)\n%s", HEADER, frames);
    snprintf(t2, sizeof t2, "%sException Type:  EXC_BREAKPOINT (SIGTRAP)\n%s", HEADER, frames);
    signature a = sig_of(t1, 3), b = sig_of(t2, 3);
    /* in-app frames decide: the class is shown, not hashed */
    CHECK_EQ_STR(a.fingerprint, b.fingerprint);
    CHECK_EQ_STR(a.exception, "EXC_BAD_ACCESS/SIGSEGV");
    CHECK_EQ_STR(b.exception, "EXC_BREAKPOINT/SIGTRAP");
    /* an exception name tells system-only stacks apart */
    const char *sys = "\nThread 0 Crashed:\n"
                      "0   libobjc.A.dylib \t0x00000001e5001000 objc_msgSend + 16\n" IMAGES;
    snprintf(t1, sizeof t1, "%sException Type:  EXC_CRASH (SIGABRT)\nApplication Specific "
             "Information:\n*** Terminating app due to uncaught exception 'NSRangeException', "
             "reason: 'x'\n%s", HEADER, sys);
    snprintf(t2, sizeof t2, "%sException Type:  EXC_CRASH (SIGABRT)\nApplication Specific "
             "Information:\n*** Terminating app due to uncaught exception 'NSGenericException', "
             "reason: 'x'\n%s", HEADER, sys);
    a = sig_of(t1, 3);
    b = sig_of(t2, 3);
    CHECK_EQ_INT(a.basis, SIGNATURE_BASIS_ANY_SYMBOL);
    CHECK(strcmp(a.fingerprint, b.fingerprint) != 0);
}

/* Without a Binary Images section (a stack excerpt, a service's display): Apple's system images
 * are never in-app; a frame with a source file and line, or in an image named as the process,
 * is; so the app's crashing function is chosen, not the system frame on top. */
static void in_app_without_binary_images(void)
{
    crashreport *r = parse("Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\n"
                           "0   libsystem_platform.dylib 0x000000018f3b8ea4 _platform_memmove + 324\n"
                           "1   UIKit                    0x00000001964630ec -[UIApplication sendAction:to:from:forEvent:] + 96\n"
                           "2   CrashLibiOS              0x00000001000e7414 -[CRLCrashAsyncSafeThread crash] (CRLCrashAsyncSafeThread.m:45)\n"
                           "3   MyKit                    0x00000001000e8000 helper + 8\n"
                           "4   Network                  0x00000001000e9000 nw_connection_start + 8\n"
                           "5   libswiftCore.dylib       0x00000001000ea000 swift_retain (Heap.cpp:10)\n");
    CHECK(r != NULL);
    if (r == NULL)
        return;
    CHECK_EQ_INT(r->nimages, 0);
    CHECK_EQ_INT(r->nthreads, 1);
    CHECK_EQ_INT(r->threads[0].nframes, 6);
    if (r->threads[0].nframes < 6)
        return;
    const crashreport_frame *f = r->threads[0].frames;
    CHECK(!signature_frame_in_app(r, &f[0], NULL, 0));
    CHECK(!signature_frame_in_app(r, &f[1], NULL, 0));
    CHECK(signature_frame_in_app(r, &f[2], f[2].file, f[2].line));
    CHECK(!signature_frame_in_app(r, &f[3], NULL, 0));        /* nothing says it is the app's */
    CHECK(!signature_frame_in_app(r, &f[4], NULL, 0));        /* a system framework's name */
    CHECK(!signature_frame_in_app(r, &f[5], f[5].file, 10));  /* the Swift runtime, even so */
    r->meta.process = "MyKit";                                 /* the process's own image */
    CHECK(signature_frame_in_app(r, &f[3], NULL, 0));
    signature s;
    err_info err = {0};
    CHECK_EQ_INT(signature_compute(&s, r, NULL, A, &err), ERR_OK);
    CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_IN_APP);
    CHECK(s.nframes >= 1);
    if (s.nframes >= 1)
        CHECK_EQ_STR(s.frames[0].function, "-[CRLCrashAsyncSafeThread crash]");
    CHECK(signature_system_image("libsystem_pthread.dylib", true));
    CHECK(signature_system_image("libswiftFoundation.dylib", true));
    CHECK(signature_system_image("UIKit", false));
    CHECK(!signature_system_image("UIKit", true)); /* with a path, the path decides */
    CHECK(!signature_system_image("CrashLibiOS", false));
}

/* A missing dSYM makes the grouping provisional only when its image's frames decided the
 * signature: below the signature's frames, or a system image's, it does not. */
static void missing_dsym_provisional_only_within_the_signature(void)
{
#define WAIT_CRASH(F1, F3)                                                                      \
    HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"                     \
           "0   libsystem_kernel.dylib \t0x00000001e0001000 0x1e0000000 + 4096\n"                \
           "1   " F1 "\n"                                                                         \
           "2   FixtureApp  \t0x0000000100001400 Widget::render() + 8\n"                          \
           "3   " F3 "\n"                                                                         \
           "4   FixtureApp  \t0x0000000100001500 main + 8\n" IMAGES
#define APP1 "FixtureApp  \t0x0000000100001300 Widget::paint() + 8"
#define KIT "FixtureKit  \t0x0000000100101000 0x100100000 + 4096"
#define APP3 "FixtureApp  \t0x0000000100001600 Widget::draw() + 8"
    static const char *const texts[2] = {WAIT_CRASH(APP1, KIT), WAIT_CRASH(KIT, APP3)};
    bool waits[2];
    for (int k = 0; k < 2; k++) {
        crashreport *r = parse(texts[k]);
        CHECK(r != NULL);
        if (r == NULL)
            return;
        /* as symbolicate_report leaves them: no symcache for the kit nor for libsystem */
        for (size_t i = 0; i < r->threads[0].nframes; i++) {
            crashreport_frame *f = &r->threads[0].frames[i];
            if (f->image >= 0 && (strcmp(r->images[f->image].name, "FixtureKit") == 0 ||
                                  strcmp(r->images[f->image].name, "libsystem_kernel.dylib") == 0))
                f->sym_status = CRASHREPORT_SYM_MISSING;
        }
        signature s;
        err_info err = {0};
        signature_options o = {2};
        CHECK_EQ_INT(signature_compute(&s, r, &o, A, &err), ERR_OK);
        CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_IN_APP);
        waits[k] = signature_waits_for(&s, r);
    }
    CHECK(!waits[0]); /* the kit's frame lies below Widget::paint, Widget::render */
    CHECK(waits[1]);  /* the kit's frame is above Widget::render: its names may join */
#undef WAIT_CRASH
#undef APP1
#undef KIT
#undef APP3
}

/* An embedded Swift runtime dylib inside the app bundle is Apple's code, not the app's. */
static void embedded_swift_runtime_is_not_in_app(void)
{
    crashreport *r = parse(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                           "0   libswiftCore.dylib \t0x0000000100301234 0x100300000 + 4660\n"
                           "1   FixtureApp  \t0x0000000100001234 Widget::draw(int) const + 20\n"
                           IMAGES
                           "0x100300000 - 0x100307fff libswiftCore.dylib arm64  <7c4c442255553144a12fa2d87ee12f80> "
                           "/private/var/containers/Bundle/Application/AAAA/FixtureApp.app/Frameworks/"
                           "libswiftCore.dylib\n");
    CHECK(r != NULL);
    if (r == NULL)
        return;
    size_t k = r->nimages;
    for (size_t i = 0; i < r->nimages; i++)
        if (r->images[i].name && strcmp(r->images[i].name, "libswiftCore.dylib") == 0)
            k = i;
    CHECK(k < r->nimages);
    CHECK(!signature_image_in_app(r, k));
    signature s;
    err_info err = {0};
    CHECK_EQ_INT(signature_compute(&s, r, NULL, A, &err), ERR_OK);
    CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_IN_APP);
    CHECK(!s.provisional);
}

static void last_exception_backtrace_is_used(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_CRASH (SIGABRT)\n\n"
                         "Application Specific Information:\n*** Terminating app due to uncaught "
                         "exception 'NSRangeException', reason: 'index 7 beyond bounds [0 .. 2]'\n\n"
                         "Last Exception Backtrace:\n"
                         "0   CoreFoundation \t0x00000001e4001000 __exceptionPreprocess + 164\n"
                         "1   libobjc.A.dylib \t0x00000001e5001000 objc_exception_throw + 60\n"
                         "2   CoreFoundation \t0x00000001e4002000 -[__NSArrayM objectAtIndex:] + 10\n"
                         "3   FixtureApp  \t0x0000000100001234 -[FXRoot crashWithIndex:] + 20\n"
                         "4   FixtureApp  \t0x0000000100002234 main + 20\n\n"
                         "Thread 0 Crashed:\n" ABORT_FRAMES
                         "3   FixtureApp  \t0x0000000100003234 other_function + 20\n" IMAGES, 3);
    CHECK_EQ_INT(s.thread, -1);
    CHECK_EQ_INT(s.nframes, 2);
    if (s.nframes >= 1)
        CHECK_EQ_STR(s.frames[0].function, "-[FXRoot crashWithIndex:]");
    CHECK_EQ_STR(s.exception, "EXC_CRASH/SIGABRT/NSRangeException");
}

static void crashed_thread_is_used(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\n"
                         "Thread 0:\n"
                         "0   FixtureApp  \t0x0000000100001234 idle_loop + 20\n\n"
                         "Thread 1 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100002234 worker_crash + 20\n" IMAGES, 3);
    CHECK_EQ_INT(s.thread, 1);
    if (s.nframes >= 1)
        CHECK_EQ_STR(s.frames[0].function, "worker_crash");
}

static void sdk_frames_are_skipped(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   KSCrash  \t0x0000000100201234 kscrash_handleSignal + 20\n"
                         "1   FixtureApp  \t0x0000000100001234 ksmc_copyContext + 20\n"
                         "2   FixtureApp  \t0x0000000100002234 real_culprit + 20\n" IMAGES, 3);
    CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_IN_APP);
    CHECK_EQ_INT(s.nframes, 1);
    if (s.nframes >= 1)
        CHECK_EQ_STR(s.frames[0].function, "real_culprit");
}

static void fallback_any_symbol_without_in_app_images(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   libobjc.A.dylib \t0x00000001e5001000 objc_msgSend + 16\n"
                         "1   UIKitCore \t0x00000001e3001000 -[UIView layoutSubviews] + 100\n" IMAGES, 3);
    CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_ANY_SYMBOL);
    CHECK_EQ_INT(s.nframes, 2);
    if (s.nframes >= 2)
        CHECK_EQ_STR(s.frames[1].function, "-[UIView layoutSubviews]");
    CHECK(!s.provisional);
}

static void fallback_offset_is_provisional(void)
{
    /* In-app frames without names (no dSYM yet): never lumped on a system function. */
    signature s = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   libobjc.A.dylib \t0x00000001e5001000 objc_msgSend + 16\n"
                         "1   FixtureApp  \t0x0000000100001234 0x100000000 + 4660\n" IMAGES, 3);
    CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_OFFSET);
    CHECK(s.provisional);
    CHECK_EQ_INT(s.nframes, 1);
    if (s.nframes == 1)
        CHECK_EQ_STR(s.frames[0].function, "FixtureApp+0x1234");
    CHECK_EQ_STR(s.title, "EXC_BAD_ACCESS: FixtureApp+0x1234");
}

static void fallback_exception_without_frames(void)
{
    crashreport *r = parse(HEADER "Exception Type:  EXC_CRASH (SIGKILL)\n"
                           "Termination Reason: FRONTBOARD 2343432205\n\nThread 0 Crashed:\n"
                           "0   FixtureApp  \t0x0000000100001234 main + 4\n" IMAGES);
    CHECK(r != NULL);
    if (!r)
        return;
    r->threads[0].nframes = 0; /* a report whose stacks were cut away */
    signature s;
    err_info err;
    CHECK_EQ_INT(signature_compute(&s, r, NULL, A, &err), ERR_OK);
    CHECK_EQ_INT(s.basis, SIGNATURE_BASIS_EXCEPTION);
    CHECK_EQ_INT(s.nframes, 0);
    CHECK(strstr(s.title, "EXC_CRASH: ") == s.title);
    CHECK(strstr(s.title, "FRONTBOARD") != NULL);
}

/* A KSCrash report of only crash.error, built from its parts. */
static const char *frameless(char *buf, size_t cap, const char *process, const char *error,
                             const char *images)
{
    snprintf(buf, cap,
             "{\"report\":{\"process_name\":\"%s\"},\"binary_images\":[%s],"
             "\"crash\":{\"error\":%s}}",
             process, images, error);
    return buf;
}

static signature sig_frameless(const char *process, const char *error, const char *images)
{
    char text[2048];
    signature s;
    memset(&s, 0, sizeof s);
    crashreport *r = parse(frameless(text, sizeof text, process, error, images));
    CHECK(r != NULL);
    err_info err = {0};
    if (r != NULL)
        CHECK_EQ_INT(signature_compute(&s, r, NULL, A, &err), ERR_OK);
    return s;
}

/* Rule 5, a report without any frame: exception type, reason (numbers masked), termination
 * reason and crashing image tell its crashes apart. */
static void frameless_grouped_by_exception_reason_and_image(void)
{
    static const char OOM[] = "{\"type\":\"memory_termination\",\"signal\":{\"name\":\"SIGKILL\"},"
                              "\"memory_termination\":{\"memory_level\":\"terminal\"}}";
    static const char TERM[] = "{\"type\":\"signal\",\"signal\":{\"name\":\"SIGTERM\"}}";
    static const char NS1[] = "{\"type\":\"nsexception\",\"reason\":\"index 5 beyond bounds [0 .. 2]\","
                              "\"nsexception\":{\"name\":\"NSRangeException\"}}";
    static const char NS2[] = "{\"type\":\"nsexception\",\"reason\":\"index 17 beyond bounds [0 .. 9]\","
                              "\"nsexception\":{\"name\":\"NSRangeException\"}}";
    static const char NS3[] = "{\"type\":\"nsexception\",\"reason\":\"key not found\","
                              "\"nsexception\":{\"name\":\"NSRangeException\"}}";
    static const char BAD[] = "{\"type\":\"mach\",\"address\":%s,\"mach\":{\"exception_name\":"
                              "\"EXC_BAD_ACCESS\",\"code_name\":\"KERN_INVALID_ADDRESS\"}}";
    static const char IMGS[] = "{\"image_addr\":4096,\"image_size\":4096,\"name\":\"/a/App\"},"
                               "{\"image_addr\":16384,\"image_size\":4096,\"name\":\"/a/Kit\"}";
    signature oom = sig_frameless("App", OOM, ""), oom2 = sig_frameless("App", OOM, "");
    signature term = sig_frameless("App", TERM, "");
    CHECK_EQ_INT(oom.basis, SIGNATURE_BASIS_EXCEPTION);
    CHECK_EQ_INT(oom.nframes, 0);
    CHECK_EQ_STR(oom.fingerprint, oom2.fingerprint);
    CHECK(strcmp(oom.fingerprint, term.fingerprint) != 0);
    CHECK_EQ_STR(oom.title, "SIGKILL: memory_termination (memory level terminal)");
    CHECK_EQ_STR(oom.culprit, "App");
    /* the same reason with other numbers is the same crash; another reason is not */
    signature ns1 = sig_frameless("App", NS1, ""), ns2 = sig_frameless("App", NS2, "");
    signature ns3 = sig_frameless("App", NS3, "");
    CHECK_EQ_STR(ns1.fingerprint, ns2.fingerprint);
    CHECK(strcmp(ns1.fingerprint, ns3.fingerprint) != 0);
    /* the crashing image: the one holding error.address */
    char e1[512], e2[512], e3[512];
    snprintf(e1, sizeof e1, BAD, "4200");
    snprintf(e2, sizeof e2, BAD, "4300");
    snprintf(e3, sizeof e3, BAD, "16500");
    signature in_app = sig_frameless("App", e1, IMGS), in_app2 = sig_frameless("App", e2, IMGS);
    signature in_kit = sig_frameless("App", e3, IMGS);
    CHECK_EQ_STR(in_app.fingerprint, in_app2.fingerprint);
    CHECK(strcmp(in_app.fingerprint, in_kit.fingerprint) != 0);
    CHECK_EQ_STR(in_kit.culprit, "Kit");
    CHECK_EQ_STR(in_kit.title, "EXC_BAD_ACCESS: KERN_INVALID_ADDRESS");
}

/* One frame in FixtureApp symbolicated as `syms` (as symbolicate_report leaves it): the
 * signature's first frame. */
static const char *top_of(const crashreport_symbol *syms, uint32_t n)
{
    crashreport *r = parse(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                           "0   FixtureApp  \t0x0000000100001234 0x100000000 + 4660\n" IMAGES);
    CHECK(r != NULL);
    if (!r)
        return "";
    r->threads[0].frames[0].sym_status = CRASHREPORT_SYM_OK;
    r->threads[0].frames[0].symbols = syms;
    r->threads[0].frames[0].nsymbols = n;
    signature s;
    err_info err;
    CHECK_EQ_INT(signature_compute(&s, r, NULL, A, &err), ERR_OK);
    CHECK(s.nframes >= 1);
    return s.nframes >= 1 ? s.frames[0].function : "";
}

/* A dSYM without linkage names (an App Store build) names an inlined method by DW_AT_name
 * alone; its scope-qualified name groups it as the debug build's linkage name does. */
static void qualified_name_groups_like_linkage_name(void)
{
    static const crashreport_symbol swift_release[2] = {
        {"crash", "CRLCrashSwift.swift", 12, true, 4, NULL, "CRLCrashSwift.crash"},
        {"@objc CRLCrashSwift.crash()", "CRLCrashSwift.swift", 0, false, 20,
         "$s10FixtureApp13CRLCrashSwiftC5crashyyFTo", NULL}};
    static const crashreport_symbol swift_debug[1] = {
        {"CRLCrashSwift.crash()", "CRLCrashSwift.swift", 12, false, 8, "$s10FixtureApp13CRLCrashSwiftC5crashyyF",
         NULL}};
    CHECK_EQ_STR(top_of(swift_release, 2), "CRLCrashSwift.crash");
    CHECK_EQ_STR(top_of(swift_debug, 1), "CRLCrashSwift.crash");
    static const crashreport_symbol cxx_plain[1] = {{"f", "scopes.cpp", 7, false, 8, NULL, "ns::C::f"}};
    static const crashreport_symbol cxx_linkage[1] = {{"ns::C::f(int)", "scopes.cpp", 7, false, 8, "_ZN2ns1C1fEi", NULL}};
    CHECK_EQ_STR(top_of(cxx_plain, 1), "ns::C::f");
    CHECK_EQ_STR(top_of(cxx_linkage, 1), "ns::C::f");
    /* the display name stays what the dSYM says; only grouping reads the qualified one */
    static const crashreport_symbol anon[1] = {{"helper", "scopes.cpp", 3, false, 8, NULL, "(anonymous namespace)::helper"}};
    CHECK_EQ_STR(top_of(anon, 1), "(anonymous namespace)::helper");
}

/* The full demangled form and other tools' text qualify a Swift name by its module; the
 * simplified form (atos, our symbolication) does not: the frame's own module is dropped. */
static void swift_own_module_dropped(void)
{
    static const crashreport_symbol full[1] = {
        {"FixtureApp.CRLCrashSwift.crash() -> ()", NULL, 0, false, 8, NULL, NULL}};
    static const crashreport_symbol closure[1] = {
        {"closure #1 in FixtureApp.CRLCrashSwift.crash()", NULL, 0, false, 8, NULL, NULL}};
    static const crashreport_symbol other[1] = {
        {"FixtureAppKit.Thing.run()", NULL, 0, false, 8, NULL, NULL}};
    CHECK_EQ_STR(top_of(full, 1), "CRLCrashSwift.crash");
    CHECK_EQ_STR(top_of(closure, 1), "closure #1 in CRLCrashSwift.crash");
    CHECK_EQ_STR(top_of(other, 1), "FixtureAppKit.Thing.run"); /* another module's name: kept */
}

static void inlined_frames_are_expanded(void)
{
    crashreport *r = parse(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                           "0   FixtureApp  \t0x0000000100001234 0x100000000 + 4660\n"
                           "1   FixtureApp  \t0x0000000100002234 0x100000000 + 8756\n" IMAGES);
    CHECK(r != NULL);
    if (!r)
        return;
    /* As symbolicate_report leaves it: frame 0 is fx_inner inlined into fx_outer. */
    static const crashreport_symbol f0[2] = {{"fx_inner(int)", "include/fx_inline.h", 7, true, 4, NULL, NULL},
                                             {"fx_outer()", "app/calc.c", 30, false, 20, NULL, NULL}};
    static const crashreport_symbol f1[1] = {{"main", "app/main.c", 12, false, 8, NULL, NULL}};
    r->threads[0].frames[0].sym_status = CRASHREPORT_SYM_OK;
    r->threads[0].frames[0].symbols = f0;
    r->threads[0].frames[0].nsymbols = 2;
    r->threads[0].frames[1].sym_status = CRASHREPORT_SYM_OK;
    r->threads[0].frames[1].symbols = f1;
    r->threads[0].frames[1].nsymbols = 1;
    signature s;
    err_info err;
    CHECK_EQ_INT(signature_compute(&s, r, NULL, A, &err), ERR_OK);
    CHECK_EQ_INT(s.nframes, 3);
    if (s.nframes == 3) {
        CHECK_EQ_STR(s.frames[0].function, "fx_inner");
        CHECK_EQ_STR(s.frames[1].function, "fx_outer");
        CHECK_EQ_STR(s.frames[2].function, "main");
    }
    CHECK_EQ_STR(s.culprit, "fx_inner (fx_inline.h:7)");
}

static void hang_uses_thread_zero(void)
{
    crashreport *r = parse(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\n"
                           "Thread 0:\n"
                           "0   FixtureApp  \t0x0000000100001234 main_thread_work + 20\n\n"
                           "Thread 1 Crashed:\n"
                           "0   FixtureApp  \t0x0000000100002234 worker + 20\n" IMAGES);
    CHECK(r != NULL);
    if (!r)
        return;
    r->kind = CRASHREPORT_KIND_HANG;
    signature s;
    err_info err;
    CHECK_EQ_INT(signature_compute(&s, r, NULL, A, &err), ERR_OK);
    CHECK_EQ_INT(s.thread, 0);
    if (s.nframes >= 1)
        CHECK_EQ_STR(s.frames[0].function, "main_thread_work");
    CHECK_EQ_STR(s.kind, "hang");
}

/* A sample (call tree): the heaviest path of the main thread, the callee with the most
 * samples at each level, innermost first; the other branches and threads do not count. */
static void sample_uses_heaviest_path_of_main_thread(void)
{
    static const char SAMPLE[] =
        "Analysis of sampling FixtureApp (pid 1) every 1 millisecond\n"
        "Process:         FixtureApp [1]\n"
        "Path:            /Applications/FixtureApp.app/Contents/MacOS/FixtureApp\n"
        "Code Type:       X86-64\n\n"
        "Call graph:\n"
        "    50 Thread_7   DispatchQueue_9: worker  (serial)\n"
        "    + 50 busy_worker  (in FixtureApp) + 4  [0x100000104]\n"
        "    40 Thread_1   DispatchQueue_1: com.apple.main-thread  (serial)\n"
        "    + 40 main  (in FixtureApp) + 4  [0x100000204]\n"
        "    +   12 light_branch  (in FixtureApp) + 8  [0x100000308]\n"
        "    +   28 heavy_branch  (in FixtureApp) + 8  [0x100000408]\n"
        "    +     20 heavy_leaf  (in FixtureApp) + 8  [0x100000508]\n"
        "    +     8 other_leaf  (in FixtureApp) + 8  [0x100000608]\n"
        "\nBinary Images:\n"
        "       0x100000000 -        0x100003fff +FixtureApp (1.0) <11111111-2222-3333-4444-555555555555> "
        "/Applications/FixtureApp.app/Contents/MacOS/FixtureApp\n";
    signature s = sig_of(SAMPLE, 3);
    CHECK_EQ_STR(s.kind, "hang");
    CHECK_EQ_INT(s.thread, 0); /* the main thread comes first */
    CHECK_EQ_INT(s.nframes, 3);
    if (s.nframes == 3) {
        CHECK_EQ_STR(s.frames[0].function, "heavy_leaf");
        CHECK_EQ_STR(s.frames[1].function, "heavy_branch");
        CHECK_EQ_STR(s.frames[2].function, "main");
    }
}

static void frames_render_as_json(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100001234 say(\"hi\") + 20 (a.c:4)\n" IMAGES, 3);
    buf b;
    buf_init(&b);
    signature_render_frames_json(&b, &s);
    CHECK_EQ_STR((const char *)b.data, "[{\"function\":\"say\",\"raw\":\"say(\\\"hi\\\")\","
                                       "\"mangled\":null,\"image\":\"FixtureApp\",\"file\":\"a.c\",\"line\":4,"
                                       "\"in_app\":true}]");
    buf_reset(&b);
}

/* A mangled name the report gives is shown (and grouped) in its display form; the signature
 * frame keeps the raw linkage name beside it ("mangled"), a plain name has none. */
static void frames_keep_the_mangled_name(void)
{
    signature s = sig_of(HEADER "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
                         "0   FixtureApp  \t0x0000000100001234 $s15iOSCrashingTest14ViewControllerC11viewDidLoadyyF + 52\n"
                         "1   FixtureApp  \t0x0000000100001200 main + 8\n" IMAGES, 3);
    CHECK(s.nframes >= 2);
    CHECK_EQ_STR(s.frames[0].mangled, "$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyF");
    CHECK(s.frames[0].raw != NULL && strstr(s.frames[0].raw, "ViewController.viewDidLoad()") != NULL);
    CHECK(s.nframes >= 2 && s.frames[1].mangled == NULL);
    buf b;
    buf_init(&b);
    signature_render_frames_json(&b, &s);
    CHECK(strstr((const char *)b.data, "\"mangled\":\"$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyF\"") != NULL);
    buf_reset(&b);
}

int main(void)
{
    A = arena_new(0);
    RUN(normalize_strips_offset_and_args);
    RUN(normalize_strips_location_suffixes);
    RUN(normalize_bare_address_is_empty);
    RUN(normalize_drops_abi_tags);
    RUN(normalize_placeholder_is_empty);
    RUN(normalize_drops_cv_ref_qualifiers);
    RUN(normalize_collapses_templates);
    RUN(normalize_strips_cxx_return_type);
    RUN(normalize_keeps_operators);
    RUN(normalize_clang_lambda);
    RUN(normalize_gcc_lambda);
    RUN(normalize_anonymous_namespace_one_spelling);
    RUN(normalize_drops_cold_and_clone_suffixes);
    RUN(normalize_block_invoke_number);
    RUN(normalize_swift_closure);
    RUN(normalize_swift_mangled_demangled);
    RUN(normalize_swift_objc_thunks);
    RUN(normalize_client_mangled_prefixes);
    RUN(qualified_name_groups_like_linkage_name);
    RUN(swift_own_module_dropped);
    RUN(normalize_swift_specializations);
    RUN(normalize_swift_merged_and_partial_apply);
    RUN(skip_table_swift_traps);
    RUN(normalize_objc_kept_as_is);
    RUN(normalize_block_invoke_underscores);
    RUN(normalize_cpu_variants_and_inlined_mark);
    RUN(skip_table_matches_machinery);
    RUN(sdk_functions_are_not_in_app);
    RUN(in_app_images_by_path);
    RUN(in_app_simulator_and_macos_paths);
    RUN(skips_machinery_and_system_frames);
    RUN(scanned_frames_leave_the_signature);
    RUN(top_n_is_configurable);
    RUN(recursion_is_collapsed);
    RUN(same_crash_other_addresses_same_fingerprint);
    RUN(exception_class_is_in_fingerprint);
    RUN(fault_classes);
    RUN(fault_names_do_not_split_one_bug);
    RUN(in_app_without_binary_images);
    RUN(embedded_swift_runtime_is_not_in_app);
    RUN(missing_dsym_provisional_only_within_the_signature);
    RUN(swift_closures_keep_their_number_in_the_fingerprint);
    RUN(sample_uses_heaviest_path_of_main_thread);
    RUN(last_exception_backtrace_is_used);
    RUN(crashed_thread_is_used);
    RUN(sdk_frames_are_skipped);
    RUN(fallback_any_symbol_without_in_app_images);
    RUN(fallback_offset_is_provisional);
    RUN(fallback_exception_without_frames);
    RUN(frameless_grouped_by_exception_reason_and_image);
    RUN(inlined_frames_are_expanded);
    RUN(hang_uses_thread_zero);
    RUN(frames_render_as_json);
    RUN(frames_keep_the_mangled_name);
    arena_free(A);
    return harness_done();
}
