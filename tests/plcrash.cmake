# PLCrashReporter's .plcrash files: the protobuf reader and the parser (unit), reports made
# from the fixtures symbolicated as llvm-symbolizer says (fixtures), the server's intake (db).
find_program(STACKSIFT_PYTHON3 python3 REQUIRED)
stacksift_unit_test(test_crashreport_plcrash SOURCES test_crashreport_plcrash.c LIBS crashreport)

# .plcrash files written from the fixture app's crashes (tests/plcrash_encode.py) symbolicate
# as llvm-symbolizer-14 says, and render as Apple text that reads back the same.
add_test(NAME plcrash_reports
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/plcrash_reports.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(plcrash_reports PROPERTIES LABELS fixtures TIMEOUT 900
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")

# Through the real server and Postgres: every way of sending a .plcrash file, grouping with its
# Apple-text twin, ?format=text, raw bytes, bad input (web_instance.py starts the instance).
add_test(NAME test_plcrash_server COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/test_plcrash_server.py)
set_tests_properties(test_plcrash_server PROPERTIES LABELS db TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV};STACKSIFT_BUILD_DIR=${PROJECT_BINARY_DIR}")

# A Bugsnag event with chained exceptions through the real server: the causes symbolicated like
# the threads, a cause's own image among the missing UUIDs, "Caused by:" in the text.
add_test(NAME test_bugsnag_server COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/test_bugsnag_server.py)
set_tests_properties(test_bugsnag_server PROPERTIES LABELS db TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV};STACKSIFT_BUILD_DIR=${PROJECT_BINARY_DIR}")

# Strings that are not UTF-8 (0xAB heap garbage, Latin-1, lone surrogates) in a .plcrash, an
# Apple text, a KSCrash, a multipart batch and a Sentry report: accepted, shown with U+FFFD,
# raw bytes as sent; a value Postgres refuses fails its own report only (500, no SQL text).
add_test(NAME test_utf8_server COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/test_utf8_server.py)
set_tests_properties(test_utf8_server PROPERTIES LABELS db TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV};STACKSIFT_BUILD_DIR=${PROJECT_BINARY_DIR}")
