# Symbolication core: Mach-O reader and symcache (issue #2). Fixture-based tests need
# tests/fixtures/build.sh to have run (tests/run.sh does it first).
stacksift_unit_test(test_macho SOURCES test_macho.c LIBS macho PkgConfig::JANSSON LABELS "unit;fixtures")
stacksift_unit_test(test_symcache SOURCES test_symcache.c LIBS symcache dsym PkgConfig::JANSSON Threads::Threads LABELS "unit;fixtures")
# Our DWARF reader against libdwarf as an independent implementation (test-only dependency).
stacksift_unit_test(test_debuginfo SOURCES test_debuginfo.c LIBS debuginfo macho libdwarf::libdwarf PkgConfig::JANSSON LABELS "unit;fixtures")
# The CLI contract of symcache build / lookup (atos output, exit codes, fat and zip inputs).
add_test(NAME cli_symbolication COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_symbolication.sh)
set_tests_properties(cli_symbolication PROPERTIES LABELS fixtures TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")
