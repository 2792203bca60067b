# Real Xcode-built artifacts, read from ../shared/real-xcode/ (never copied here).
# real_xcode_dwarf: every byte of __text of every real dSYM slice looks up as
# llvm-symbolizer-14 --inlines says (Swift modules, types, @objc thunks with inlinees).
find_program(STACKSIFT_PYTHON3 python3 REQUIRED)
add_test(NAME real_xcode_dwarf
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/real_xcode_dwarf.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(real_xcode_dwarf PROPERTIES LABELS fixtures TIMEOUT 120
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")

# Call-tree report formats (sample, spindump, MetricKit): model, bad input, bounds, goldens.
stacksift_unit_test(test_crashreport_tree SOURCES test_crashreport_tree.c LIBS crashreport PkgConfig::JANSSON)
set_tests_properties(test_crashreport_tree PROPERTIES TIMEOUT 300)

# real_xcode_reports: every crash and sample report of ../shared/real-xcode/ symbolicates as
# Apple's symbolicated copy says (function, file:line; return-address lookups counted apart).
add_test(NAME real_xcode_reports
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/real_xcode_reports.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(real_xcode_reports PROPERTIES LABELS fixtures TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")

# real_dsyms: every slice of the real dSYMs of ../shared/real-dsyms/ (Xcode 7 to Xcode 26,
# DWARF 2-5, fat, zipped, bare and App Store bitcode recompilations) builds a symcache that
# agrees with llvm-symbolizer-14 on every sampled lookup, inline chains included, the sample
# reaching into compiler-generated code (100% per slice, at most 12,000 addresses a slice;
# the documented policy differences counted apart).
add_test(NAME real_dsyms
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/real_dsyms.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(real_dsyms PROPERTIES LABELS fixtures TIMEOUT 900
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")

# real_bitcode: App Store (bitcode) dSYMs of ../shared/real-dsyms/ revealed by `symcache build`
# and `lookup` with their UUID maps and BCSymbolMaps (beside the file, --symbol-maps, an
# .xcarchive folder, a zip); the map's own lines are the oracle for every hidden symbol.
add_test(NAME real_bitcode
  COMMAND ${STACKSIFT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/real_bitcode.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(real_bitcode PROPERTIES LABELS fixtures TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")
