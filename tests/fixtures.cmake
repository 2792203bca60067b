# Fixture-based tests (tests/fixtures/build.sh output in STACKSIFT_FIXTURES), label "fixtures".
# lookup_oracle: `stacksift lookup --json` agrees with llvm-symbolizer-14 on every sampled
# address of every fixture slice (see tests/lookup_oracle.py).
find_program(STACKSIFT_PYTHON3 python3 REQUIRED)
add_test(NAME lookup_oracle
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/lookup_oracle.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(lookup_oracle PROPERTIES LABELS fixtures TIMEOUT 600
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")

# qualified_names: a C++ file built with and without DWARF linkage names (and as a Swift unit)
# groups alike in both builds; display parity with llvm-symbolizer-14 on all three; a server
# given the plain dSYM groups a report served from its stack cache as the first (see
# tests/qualified_names.py). Builds its own binaries in a temp dir.
add_test(NAME qualified_names
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/qualified_names.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(qualified_names PROPERTIES LABELS "fixtures;db" TIMEOUT 600
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")
