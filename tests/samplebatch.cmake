# Privacy-API sample batches: the batch parser and its canonical form.
stacksift_unit_test(test_samplebatch SOURCES test_samplebatch.c LIBS samplebatch base)
# The feature through the real server and Postgres (API, CSV, new-in-build, retries, late
# dSYM, bad input); web_instance.py starts the instance.
add_test(NAME test_samples COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_samples.py)
set_tests_properties(test_samples PROPERTIES LABELS db TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV};STACKSIFT_BUILD_DIR=${PROJECT_BINARY_DIR}")
# tests/bench/bench_samples.py at a tiny size: it runs, and every call site count is exact
# (the full-size rate is measured by tests/bench/bench_samples.sh, not by ctest).
add_test(NAME bench_samples_tiny COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_samples.py
  --devices 3 --samples 40 --builds 2 --threads 2 --timeout 60)
set_tests_properties(bench_samples_tiny PROPERTIES LABELS db TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV};STACKSIFT_BUILD_DIR=${PROJECT_BINARY_DIR}")
# tests/bench/bench_samplebatch: the parser alone on one core (not a test; run it by hand). The
# ctest runs it tiny: the generated batch parses, or it exits 1.
add_executable(bench_samplebatch ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_samplebatch.c)
target_include_directories(bench_samplebatch PRIVATE ${COMMON_INCLUDE})
target_link_libraries(bench_samplebatch PRIVATE samplebatch base)
add_test(NAME bench_samplebatch_tiny COMMAND bench_samplebatch --samples 10 --rounds 1 --reps 2)
set_tests_properties(bench_samplebatch_tiny PROPERTIES LABELS unit)
