# Symbolication core: Mach-O reader and symcache. Fixture-based tests need
# tests/fixtures/build.sh to have run (tests/run.sh does it first).
stacksift_unit_test(test_macho SOURCES test_macho.c LIBS macho PkgConfig::JANSSON LABELS "unit;fixtures")
stacksift_unit_test(test_symcache SOURCES test_symcache.c LIBS symcache dsym unwind PkgConfig::JANSSON Threads::Threads LABELS "unit;fixtures")
# Our DWARF reader against libdwarf as an independent implementation (test-only dependency).
stacksift_unit_test(test_debuginfo SOURCES test_debuginfo.c LIBS debuginfo macho libdwarf::libdwarf PkgConfig::JANSSON LABELS "unit;fixtures")
# The CLI contract of symcache build / lookup (atos output, exit codes, fat and zip inputs).
add_test(NAME cli_symbolication COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_symbolication.sh)
set_tests_properties(cli_symbolication PROPERTIES LABELS fixtures TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV}")
# Format round trip: the current .symc answers every address as the version-1 format did
# (tests/symcache_v1/ is the frozen old builder and reader, linked only here).
add_executable(symcache_roundtrip symcache_roundtrip.c symcache_v1/symcache_v1.c symcache_v1/symcache_v1_build.c)
target_include_directories(symcache_roundtrip PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${COMMON_INCLUDE})
target_link_libraries(symcache_roundtrip PRIVATE symcache debuginfo macho demangle Threads::Threads)
add_test(NAME symcache_roundtrip COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/symcache_roundtrip.sh)
set_tests_properties(symcache_roundtrip PROPERTIES LABELS "unit;fixtures" TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV};SYMCACHE_ROUNDTRIP=$<TARGET_FILE:symcache_roundtrip>")
# The same round trip through the reader's portable path: common/symcache compiled without
# SSE2 (__SSE2__ undefined), as on CPUs where the granule's record is found 8 bytes at a time.
add_executable(symcache_roundtrip_portable symcache_roundtrip.c symcache_v1/symcache_v1.c
  symcache_v1/symcache_v1_build.c ${PROJECT_SOURCE_DIR}/common/symcache/symcache.c
  ${PROJECT_SOURCE_DIR}/common/symcache/symcache_build.c)
target_compile_options(symcache_roundtrip_portable PRIVATE -U__SSE2__)
target_include_directories(symcache_roundtrip_portable PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${COMMON_INCLUDE})
target_link_libraries(symcache_roundtrip_portable PRIVATE debuginfo macho unwind demangle base PkgConfig::ZSTD PkgConfig::LZ4 Threads::Threads)
add_test(NAME symcache_roundtrip_portable COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/symcache_roundtrip.sh)
set_tests_properties(symcache_roundtrip_portable PROPERTIES LABELS "unit;fixtures" TIMEOUT 300
  ENVIRONMENT "${STACKSIFT_TEST_ENV};SYMCACHE_ROUNDTRIP=$<TARGET_FILE:symcache_roundtrip_portable>")
# tests/bench/bench_lookup: in-process lookups/s on one core (run by tests/bench/symbolication.sh).
add_executable(bench_lookup ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_lookup.c)
target_include_directories(bench_lookup PRIVATE ${COMMON_INCLUDE})
target_link_libraries(bench_lookup PRIVATE symcache)
# The symbolication benchmark at a tiny size: it runs, and its answers agree with
# llvm-symbolizer-14 and with the version-1 format (times are not checked).
add_test(NAME bench_symbolication COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench/symbolication.sh)
set_tests_properties(bench_symbolication PROPERTIES LABELS bench TIMEOUT 600
  ENVIRONMENT "${STACKSIFT_TEST_ENV};BENCH_TOOLS=${CMAKE_CURRENT_BINARY_DIR};BENCH_DIR=${CMAKE_BINARY_DIR}/bench-tiny;BENCH_TUS=3;BENCH_UNIQUE=2;BENCH_FUNCS=6;BENCH_WIDE=2;BENCH_SWIFT=6;BENCH_LOOKUPS=3000;BENCH_CHECK=1000;BENCH_REPEAT=1;BENCH_MIN_MB=0")
