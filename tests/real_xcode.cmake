# Real Xcode-built artifacts, read from ../shared/real-xcode/ (never copied here).
# real_xcode_dwarf: every byte of __text of every real dSYM slice looks up as
# llvm-symbolizer-14 --inlines says (Swift modules, types, @objc thunks with inlinees).
find_program(STACKSIFT_PYTHON3 python3 REQUIRED)
add_test(NAME real_xcode_dwarf
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/real_xcode_dwarf.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(real_xcode_dwarf PROPERTIES LABELS fixtures TIMEOUT 120
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")
