# Grouping on real data: one bug, one issue, across CPUs, builds and services.
add_test(NAME grouping_crashprobe
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/grouping_crashprobe.py)
set_tests_properties(grouping_crashprobe PROPERTIES LABELS unit TIMEOUT 300
  SKIP_RETURN_CODE 77 ENVIRONMENT "${STACKSIFT_TEST_ENV}")

# Regrouping stored reports when the rules change: real server, Postgres and CLI.
add_test(NAME test_regroup COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/test_regroup.py)
set_tests_properties(test_regroup PROPERTIES LABELS db TIMEOUT 600
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")
