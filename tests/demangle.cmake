# Symbol names: C++ through the system's demangler, Swift through ours.
stacksift_unit_test(test_demangle SOURCES test_demangle.c LIBS demangle)

# tests/bench/bench_demangle: names/s (not a test; run tests/bench/demangle.sh).
add_executable(bench_demangle ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_demangle.c)
target_include_directories(bench_demangle PRIVATE ${COMMON_INCLUDE})
target_link_libraries(bench_demangle PRIVATE demangle)
