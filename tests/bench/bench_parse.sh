#!/usr/bin/env bash
# tests/bench/bench_parse.sh [ARGS] - crash report parse and symbolication rates (not a test;
# run by hand). Builds the bench_parse target in $BUILD_DIR (default build/), makes sure the
# fixtures exist (the symbolication run uses the arm64-O2 dSYM), and runs
#   bench_parse [--seconds S] [--check]
# which prints reports/s per core for a generated 100-frame Apple text report and the same
# crash as .ips, .plcrash and a sentry-cocoa event, beside peers run in the same process (a memchr line scan, a pcre2-per-line
# scan, jansson's bare load, raw symcache lookups) and the ratio to each; then the whole
# corpus in MB/s. --check exits 1 when the 20,000 reports/s target is missed.
# Env: BUILD_DIR, STACKSIFT_FIXTURES (default build-fixtures/).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-$root/build}
export STACKSIFT_FIXTURES=${STACKSIFT_FIXTURES:-$root/build-fixtures}
export STACKSIFT_SOURCE_DIR=$root
[ -d "$build" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target bench_parse -j2 >/dev/null
"$root/tests/fixtures/build.sh" "$STACKSIFT_FIXTURES" >/dev/null
exec "$build/tests/bench_parse" "$@"
