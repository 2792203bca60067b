/*
 * test_demangle - common/demangle: the one entry point for display names.
 */
#include "harness.h"

#include "demangle/demangle.h"

static void cxx_through_the_system_demangler(void)
{
    char *s = demangle_name("_ZN3foo3barEi", 0);
    CHECK_EQ_STR(s, "foo::bar(int)");
    free(s);
    s = demangle_name("__ZN3foo3barEi", 0); /* Mach-O symbol table spelling */
    CHECK_EQ_STR(s, "foo::bar(int)");
    free(s);
    CHECK(demangle_name("_ZN3foo3barEi", DEMANGLE_NO_CXX) == NULL);
    CHECK(demangle_name("_Zgarbage", 0) == NULL);
    CHECK(demangle_name("main", 0) == NULL);
    CHECK(demangle_name("", 0) == NULL);
}

static void buffer_variant_cuts_and_terminates(void)
{
    char buf[8];
    CHECK_EQ_INT(demangle_name_buf(buf, sizeof buf, "_ZN3foo3barEi", 0), 13);
    CHECK_EQ_STR(buf, "foo::ba");
    CHECK_EQ_INT(demangle_name_buf(buf, sizeof buf, "main", 0), 0);
    CHECK_EQ_STR(buf, "");
}

static void prefixes(void)
{
    CHECK(demangle_is_swift("$s4main3fooyyF"));
    CHECK(demangle_is_swift("_$s4main3fooyyF"));
    CHECK(demangle_is_swift("$S4main3fooyyF"));
    CHECK(demangle_is_swift("_T04main3fooyyF"));
    CHECK(demangle_is_swift("$e4main3fooyyF"));
    CHECK(!demangle_is_swift("_ZN3foo3barEi"));
    CHECK(!demangle_is_swift("main"));
    CHECK(demangle_is_cxx("_ZN3foo3barEi"));
    CHECK(demangle_is_cxx("__ZN3foo3barEi"));
    CHECK(!demangle_is_cxx("_main"));
}

/* ---- the Swift project's demangler test vectors (../shared/swift-demangle) ---------------- */

/* strip_classification - skip a "{T:...}" / "{C}" / "{T:...,C}" prefix (swift-demangle
 * -classify output) on the expected side */
static const char *strip_classification(const char *s)
{
    if (s[0] != '{')
        return s;
    const char *e = strchr(s, '}');
    if (e == NULL)
        return s;
    e++;
    while (*e == ' ')
        e++;
    return e;
}

/* today_spelling - the expected side of simplified-manglings.txt (an older revision of the
 * Swift project's file) in today's Swift spelling of two renamed things, into out (cap bytes):
 *   protocol<>           ->  Any              (Swift 3's SE-0095 composition syntax)
 *   protocol<A, B, ...>  ->  A & B & ...
 *   Builtin.FloatN, Builtin.VecMxFloatN  ->  Builtin.FPIEEEN, Builtin.VecMxFPIEEEN
 * Nothing else changes; a line agrees when the output matches the expected side as written or
 * in this spelling. Returns false when out is too small. */
static bool today_spelling(const char *want, char *out, size_t cap)
{
    size_t n = 0;
    int angle = 0;          /* depth of '<' inside a protocol<...> being rewritten, 0 outside */
    int proto_depth[64];    /* angle depths at which a protocol<...> opened */
    int nproto = 0;
    for (const char *s = want; *s != '\0';) {
        char buf[32];
        const char *put = NULL;
        size_t adv = 1;
        if (strncmp(s, "protocol<>", 10) == 0) {
            put = "Any";
            adv = 10;
        } else if (strncmp(s, "protocol<", 9) == 0 && nproto < 64) {
            proto_depth[nproto++] = ++angle;
            put = "";
            adv = 9;
        } else if (*s == '<') {
            angle++;
        } else if (*s == '>' && nproto > 0 && proto_depth[nproto - 1] == angle) {
            nproto--;
            angle--;
            put = "";
        } else if (*s == '>') {
            angle--;
        } else if (*s == ',' && s[1] == ' ' && nproto > 0 && proto_depth[nproto - 1] == angle) {
            put = " & ";
            adv = 2;
        } else if (strncmp(s, "Builtin.", 8) == 0) {
            const char *t = s + 8;
            if (strncmp(t, "Vec", 3) == 0) {
                const char *u = t + 3;
                while (*u >= '0' && *u <= '9')
                    u++;
                if (*u == 'x' && u > t + 3)
                    t = u + 1;
            }
            if (strncmp(t, "Float", 5) == 0 && t[5] >= '0' && t[5] <= '9' && (size_t)(t - s) < 24) {
                snprintf(buf, sizeof buf, "%.*sFPIEEE", (int)(t - s), s);
                put = buf;
                adv = (size_t)(t + 5 - s);
            }
        }
        if (put == NULL) {
            if (n + 1 >= cap)
                return false;
            out[n++] = *s;
        } else {
            size_t k = strlen(put);
            if (n + k >= cap)
                return false;
            memcpy(out + n, put, k);
            n += k;
        }
        s += adv;
    }
    out[n] = '\0';
    return true;
}

static void expected_side_in_todays_spelling(void)
{
    char out[256];
    static const char *const cases[][2] = {
        {"protocol<>", "Any"},
        {"protocol<>.Type", "Any.Type"},
        {"protocol<bar, bas>", "bar & bas"},
        {"(protocol<bar, bas>, bas, protocol<bas, zim, bar>)", "(bar & bas, bas, bas & zim & bar)"},
        {"f(x : protocol<A, B>) -> [A<B, C>]", "f(x : A & B) -> [A<B, C>]"},
        {"Builtin.Float80", "Builtin.FPIEEE80"},
        {"Builtin.Vec4xFloat16", "Builtin.Vec4xFPIEEE16"},
        {"Float80 Builtin.Int32 <A, B>", "Float80 Builtin.Int32 <A, B>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK(today_spelling(cases[i][0], out, sizeof out));
        CHECK_EQ_STR(out, cases[i][1]);
    }
    CHECK(!today_spelling("protocol<bar, bas>", out, 4));
}

/* score_file - demangle every "MANGLED ---> EXPECTED" line of `file`; returns the number of
 * lines that agree, sets *total; misses go to stderr */
static int score_file(const char *file, unsigned flags, int *total)
{
    const char *src = getenv("STACKSIFT_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/../shared/swift-demangle/%s", src ? src : "..", file);
    FILE *f = fopen(path, "r");
    *total = 0;
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return 0;
    }
    char line[65536];
    int ok = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *arrow = strstr(line, " --->");
        if (arrow == NULL)
            continue;
        char *want = arrow + 5;
        while (*want == ' ')
            want++;
        char *end = arrow;
        while (end > line && end[-1] == ' ')
            end--;
        *end = '\0';
        want = (char *)strip_classification(want);
        (*total)++;
        char *got = demangle_name(line, flags);
        const char *shown = got ? got : line;   /* a name that does not demangle stays as it is */
        char today[65536];
        if (strcmp(shown, want) == 0 ||
            (today_spelling(want, today, sizeof today) && strcmp(shown, today) == 0))
            ok++;
        else
            fprintf(stderr, "MISS %s\n  got  %s\n  want %s\n", line, shown, want);
        free(got);
    }
    fclose(f);
    return ok;
}

static void swift_vectors(void)
{
    int total_full = 0, total_simple = 0;
    int full = score_file("manglings.txt", 0, &total_full);
    int simple = score_file("simplified-manglings.txt", DEMANGLE_SIMPLIFIED, &total_simple);
    printf("swift vectors: full %d/%d (%.1f%%), simplified %d/%d (%.1f%%)\n", full, total_full,
           total_full ? 100.0 * full / total_full : 0.0, simple, total_simple,
           total_simple ? 100.0 * simple / total_simple : 0.0);
    CHECK(total_full > 400);
    CHECK(total_simple > 150);
    /* Floors against regressions, both at the 99%. Simplified: every line of
     * simplified-manglings.txt is a Swift 3 "_T" name, printed in the style of that era's tools
     * (swift_print_swift3). */
    CHECK(full * 100 >= total_full * 99);
    CHECK(simple * 100 >= total_simple * 99);
}

/* The names of the real Xcode-built app in ../shared/real-xcode, as Apple's own symbolicated
 * reports print them (Crashes/ *_symbolicated.crash). */
static void swift_names_as_apple_prints_them(void)
{
    static const char *const pairs[][2] = {
        {"$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyFTo", "@objc ViewController.viewDidLoad()"},
        {"$s15iOSCrashingTest10CrashClassC06pleaseC0yyFZTf4d_n", "specialized static CrashClass.pleaseCrash()"},
        {"$s13AnotherTarget13CrashingClassC5crashyyFZTo", "@objc static CrashingClass.crash()"},
        {"$s13AnotherTarget13CrashingClassC5crashyyFZ", "static CrashingClass.crash()"},
        {"_$s13AnotherTarget13CrashingClassC5crashyyFZ", "static CrashingClass.crash()"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        char *d = demangle_name(pairs[i][0], DEMANGLE_SIMPLIFIED);
        CHECK_EQ_STR(d, pairs[i][1]);
        free(d);
    }
    char *d = demangle_name("$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyFTo", 0);
    CHECK_EQ_STR(d, "@objc iOSCrashingTest.ViewController.viewDidLoad() -> ()");
    free(d);
    CHECK(demangle_name("$s15iOSCrashingTest14ViewControllerC11viewDidLoadyyFTo", DEMANGLE_NO_SWIFT) == NULL);
}

/* The simplified style follows the mangling's era: a Swift 3 "_T" name as Swift 3-era tools
 * printed it, every later mangling as today's atos does; the full form is one style for all. */
static void simplified_style_follows_the_mangling_era(void)
{
    static const char *const cases[][3] = {
        /* mangled, simplified, full */
        {"_TF4main3fooFT_T_", "foo() -> ()", "main.foo() -> ()"},
        {"$s4main3fooyyF", "foo()", "main.foo() -> ()"},
        {"_T04main3fooyyF", "foo()", "main.foo() -> ()"},
        {"_TFC4main3Bar3bazfT1xSi_Si", "Bar.baz(x : Int) -> Int", "main.Bar.baz(x: Swift.Int) -> Swift.Int"},
        {"$s4main3BarC3baz1xS2i_tF", "Bar.baz(x:)", "main.Bar.baz(x: Swift.Int) -> Swift.Int"},
        {"_TFF4main3fooFT_T_U_FT_T_", "(foo() -> ()).(closure #1)", "closure #1 () -> () in main.foo() -> ()"},
        {"$s4main3fooyyFyycfU_", "closure #1 in foo()", "closure #1 () -> () in main.foo() -> ()"},
        {"_TWoFC4main3Bar3bazFSiSi", "witness table offset for Bar.baz(Int) -> Int",
         "witness table offset for main.Bar.baz(Swift.Int) -> Swift.Int"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *s = demangle_name(cases[i][0], DEMANGLE_SIMPLIFIED);
        CHECK_EQ_STR(s, cases[i][1]);
        free(s);
        char *f = demangle_name(cases[i][0], 0);
        CHECK_EQ_STR(f, cases[i][2]);
        free(f);
    }
}

/* Swift 2 and 3 manglings as Xcode 7-8 era binaries carry them: "Ss" for the Swift module
 * (Swift 3 writes 's'), a curried method's self level, function signature and generic
 * specialization prefixes ("_TTS...") before either, and "XM" metatypes. */
static void swift2_and_swift3_specializations(void)
{
    static const char *const cases[][3] = {
        /* mangled, simplified, full */
        {"_TTSf4dg_d___TFC12Swift_Tester14ViewController15onButtonPressedfS0_FPSs9AnyObject_T_",
         "specialized ViewController.onButtonPressed(ViewController)(AnyObject) -> ()",
         "function signature specialization <Arg[0] = Dead and Owned To Guaranteed, Arg[1] = Dead> of "
         "Swift_Tester.ViewController.onButtonPressed(Swift_Tester.ViewController) -> (Swift.AnyObject) -> ()"},
        {"_TFC3foo3bar3basfS0_FT3zimCS_3zim_T_", "bar.bas(bar)(zim : zim) -> ()",
         "foo.bar.bas(foo.bar) -> (zim: foo.zim) -> ()"},
        {"_TTSg5Si___TFSs5printFP_T_", "specialized print(Any) -> ()",
         "generic specialization <Swift.Int> of Swift.print(Any) -> ()"},
        {"_TtXMTC13CrashProbeiOS11SwiftHelper", "@thick SwiftHelper.Type", "@thick CrashProbeiOS.SwiftHelper.Type"},
        /* a Swift 3 method has no self level: unchanged */
        {"_TFC3foo3bar3basfT3zimCS_3zim_T_", "bar.bas(zim : zim) -> ()", "foo.bar.bas(zim: foo.zim) -> ()"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *s = demangle_name(cases[i][0], DEMANGLE_SIMPLIFIED);
        CHECK_EQ_STR(s, cases[i][1]);
        free(s);
        char *f = demangle_name(cases[i][0], 0);
        CHECK_EQ_STR(f, cases[i][2]);
        free(f);
    }
}

/* Manglings that the vectors check only in the full form read well in the simplified one too:
 * no lifetime-dependence or unknown-context clutter in a name a person reads. */
static void simplified_form_of_rarer_manglings(void)
{
    static const char *const cases[][2] = {
        {"$s28implicit_lifetime_dependence7WrapperV8getView1AA10BufferViewVyYLsF", "Wrapper.getView1()"},
        {"$s28implicit_lifetime_dependence10BufferViewVyA2ChYlscfC", "BufferView.init(_:)"},
        {"$s13__lldb_expr_110$10016c2d8yXZ1B10$10016c2e0LLC", "B"},
        {"_T04main5innerys5Int32Vz_yADctF25closure_with_box_argumentxz_Bi32__lXXTf1nc_n",
         "specialized inner(_:_:)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *s = demangle_name(cases[i][0], DEMANGLE_SIMPLIFIED);
        CHECK_EQ_STR(s, cases[i][1]);
        free(s);
    }
    /* a generic parameter count of any size prints at most 128 names, then "..." */
    char *s = demangle_name("_Ttu99999999999999999999999999999999999999_rx", 0);
    CHECK(s != NULL && strlen(s) < 1024 && strstr(s, ", ...>") != NULL);
    free(s);
    /* a generic SIL box without its signature, or a bound generic type with more type lists
     * than generic levels, is not a name */
    CHECK(demangle_name("$sxz_Bi32__XX", 0) == NULL);
    CHECK(demangle_name("$sSD5IndexVy__GD", 0) == NULL);
}

/* SIL box layouts beyond the one the vectors hold: a non-generic box ('Xx'), its mutable
 * ('z', var) and immutable (let) fields, and an empty one. */
static void sil_box_layouts(void)
{
    char *s = demangle_name("$sSiz_SSXxD", 0);
    CHECK_EQ_STR(s, "{ var Swift.Int, let Swift.String }");
    free(s);
    s = demangle_name("$syXxD", 0);
    CHECK_EQ_STR(s, "{ }");
    free(s);
}

/* Hostile names: never a crash or a hang, and they come back as not demangled. */
static void swift_hostile_names(void)
{
    char deep[20000];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "$s");
    while (n + 2 < sizeof deep) {
        deep[n++] = 'S';
        deep[n++] = 'q';
    }
    deep[n] = '\0';
    CHECK(demangle_name(deep, 0) == NULL);
    memset(deep + 2, 'G', sizeof deep - 3);
    deep[sizeof deep - 1] = '\0';
    CHECK(demangle_name(deep, 0) == NULL);
    /* a repeat count far beyond any real name */
    CHECK(demangle_name("$s999999999999Si", 0) == NULL);
    CHECK(demangle_name("$s", 0) == NULL);
    CHECK(demangle_name("_T", 0) == NULL);
}

int main(void)
{
    RUN(cxx_through_the_system_demangler);
    RUN(buffer_variant_cuts_and_terminates);
    RUN(prefixes);
    RUN(expected_side_in_todays_spelling);
    RUN(swift_vectors);
    RUN(swift_names_as_apple_prints_them);
    RUN(simplified_style_follows_the_mangling_era);
    RUN(simplified_form_of_rarer_manglings);
    RUN(swift2_and_swift3_specializations);
    RUN(sil_box_layouts);
    RUN(swift_hostile_names);
    return harness_done();
}
