# Sentry SDK endpoints through the real server and Postgres (tests/test_sentry.py), and the disk
# spool across a Postgres outage and a kill -9 (tests/reliability/test_spool.py).
add_test(NAME sentry_ingest COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_sentry.py)
set_tests_properties(sentry_ingest PROPERTIES LABELS "db;fixtures" TIMEOUT 600
  ENVIRONMENT "${STACKSIFT_TEST_ENV};STACKSIFT_BUILD_DIR=${PROJECT_BINARY_DIR}")
add_test(NAME reliability_spool
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reliability/test_spool.py)
set_tests_properties(reliability_spool PROPERTIES LABELS "reliability;db" TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")
# The Sentry intake below HTTP and the disk spool, without a database.
stacksift_unit_test(test_ingest_sentry SOURCES test_ingest_sentry.c LIBS ingest PkgConfig::ZLIB)
