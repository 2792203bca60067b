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
