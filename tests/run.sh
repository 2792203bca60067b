#!/usr/bin/env bash
# The test command (README): build, make the fixtures, start what the tests need, run ctest.
#   tests/run.sh                 normal build in build/
#   SANITIZE=1 tests/run.sh      ASan + UBSan build in build-asan/
# Extra arguments go to ctest (e.g. -L unit, -R lookup).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

"$root/deploy/install-deps.sh"

if [ "${SANITIZE:-0}" = 1 ]; then
  build=${BUILD_DIR:-build-asan}
  cmake_flags=(-DSTACKSIFT_SANITIZE=ON -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
else
  build=${BUILD_DIR:-build}
  cmake_flags=()
fi

# Real Mach-O/dSYM fixtures, built once per source change (stamp-checked) and shared by builds;
# the tests are told this directory at configure time.
export STACKSIFT_FIXTURES=${STACKSIFT_FIXTURES:-$root/build-fixtures}

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTACKSIFT_FIXTURES_DIR="$STACKSIFT_FIXTURES" "${cmake_flags[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"

if [ -x "$root/tests/fixtures/build.sh" ]; then
  "$root/tests/fixtures/build.sh" "$STACKSIFT_FIXTURES"
fi

# Postgres for the "db" tests: a private cluster in a temp dir on loopback, stopped on exit.
if [ -z "${STACKSIFT_TEST_DATABASE_URL:-}" ] && [ -x "$root/tests/pg.sh" ]; then
  pgdir=$(mktemp -d /tmp/stacksift-pg.XXXXXX)
  trap '"$root/tests/pg.sh" stop "$pgdir" || true; rm -rf "$pgdir"' EXIT
  STACKSIFT_TEST_DATABASE_URL=$("$root/tests/pg.sh" start "$pgdir")
  export STACKSIFT_TEST_DATABASE_URL
fi

cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
