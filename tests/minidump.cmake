find_program(STACKSIFT_PYTHON3 python3 REQUIRED)
# Minidumps: the reader (common/minidump) on the real dumps of ../shared/minidumps/ (never
# copied here), synthetic ARM64 dumps, and every truncation / bit flips of a real dump.
stacksift_unit_test(test_minidump SOURCES test_minidump.c LIBS minidump macho LABELS "unit")

# Minidumps as crash reports (crashreport_parse_minidump): the shared dumps in the model, the
# event a dump is sent with, broken and truncated dumps.
stacksift_unit_test(test_crashreport_minidump SOURCES test_crashreport_minidump.c LIBS crashreport LABELS "unit")

# Compact unwind: every entry of the Mach-O files of ../shared/minidumps/ and the fixtures
# decodes as llvm-objdump-14 --unwind-info lists it; the stack walker on synthetic arm64 stacks.
stacksift_unit_test(test_unwind SOURCES test_unwind.c LIBS unwind minidump macho LABELS "unit;fixtures")

# minidump_walk: `stacksift minidump walk` walks the real dumps to the frames of Breakpad's
# minidump_stackwalk (npm minidump@0.26.0, installed into the build dir) and symbolicates the
# app's frames as llvm-symbolizer-14 reads the dSYM.
stacksift_py_test(minidump_walk LABELS fixtures TIMEOUT 600 BUILD_DIR
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})

# Through the real server and Postgres: the shared dumps sent raw, gzip'd, sniffed, as
# Crashpad's multipart upload (on /api/v1/reports and Sentry's /api/{id}/minidump/) and in a
# sentry-native envelope; stored, grouped, frames with how they were found, raw bytes back as
# sent; malformed dumps refused with the reason.
stacksift_py_test(test_minidump_server LABELS db TIMEOUT 300 BUILD_DIR)

# dsym_unwind: executables uploaded as debug files (POST /api/v1/dsyms, raw and zipped, before
# and after their dSYMs) keep their unwind info in the stored symcache, as llvm-objdump-14
# --unwind-info lists it, and the shared dump walks with the stored symcache as with the files.
stacksift_py_test(dsym_unwind LABELS db fixtures TIMEOUT 300)

# tests/bench/bench_walk: one dump walked and symbolicated in one process, as the server's workers
# do it (run by tests/bench/bench_minidump.py beside minidump_stackwalk; not a test).
add_executable(bench_walk ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_walk.c)
target_include_directories(bench_walk PRIVATE ${COMMON_INCLUDE})
target_link_libraries(bench_walk PRIVATE symbolicate symcache unwind minidump base)

# Debug files after the dumps that need them (the shared Breakpad dump): a dump walked without
# its app's unwind info lists the UUID as needing it (GET /api/v1/dsyms/missing, the report's
# unwind_uuids); the executable (alone, or after the dSYM) or the .sym walks it again from its
# stored bytes, frames by CFI, regrouped, no longer listed.
stacksift_py_test(test_minidump_rewalk LABELS db TIMEOUT 300 BUILD_DIR)

# minidump_rules: a dSYM's __debug_frame walks a dump of the fixture dylib that has no compact
# unwind (CLI and the server's worker), the stack scan passes over a stale word in no known
# function, and a .sym's STACK CFI stays beside a dSYM uploaded after it (the shared Breakpad
# dump walked from both, a dump through a STACK CFI function walked by it).
stacksift_py_test(minidump_rules LABELS db fixtures TIMEOUT 300)
