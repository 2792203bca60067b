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
