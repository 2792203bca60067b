# Symbol names (issue #11): C++ through the system's demangler, Swift through ours.
stacksift_unit_test(test_demangle SOURCES test_demangle.c LIBS demangle)
