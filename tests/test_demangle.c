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

int main(void)
{
    RUN(cxx_through_the_system_demangler);
    RUN(buffer_variant_cuts_and_terminates);
    RUN(prefixes);
    return harness_done();
}
