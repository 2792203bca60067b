# Crash and stack reports: parsers, renderers, report symbolication, CLI.

stacksift_unit_test(test_crashreport SOURCES test_crashreport.c LIBS crashreport PkgConfig::JANSSON)
set_tests_properties(test_crashreport PROPERTIES TIMEOUT 300)
stacksift_unit_test(test_symbolicate SOURCES test_symbolicate.c LIBS symbolicate dsym
  LABELS "unit;fixtures")

# Reports generated from the fixtures (seven forms) symbolicate as llvm-symbolizer-14 says.
find_program(STACKSIFT_PYTHON3 python3 REQUIRED)
add_test(NAME symbolicate_reports
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/symbolicate_reports.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(symbolicate_reports PROPERTIES LABELS fixtures TIMEOUT 900
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")

# tests/bench/bench_parse: parse and symbolication rates beside same-run peers (not a test;
# run tests/bench/bench_parse.sh).
add_executable(bench_parse ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_parse.c)
target_include_directories(bench_parse PRIVATE ${COMMON_INCLUDE})
target_link_libraries(bench_parse PRIVATE crashreport symbolicate dsym PkgConfig::JANSSON
  PkgConfig::PCRE2)
