#!/usr/bin/env bash
# tests/bench/demangle.sh - demangler throughput (not a test; run by hand): names/s of
# common/demangle (build/tests/bench_demangle) beside `c++filt` as the peer, on the same
# machine in the same run.
#   C++    every mangled name libstdc++ exports (nm -D), as c++filt reads them from stdin
#          (best of 3 whole runs, process start included: c++filt is run on BENCH_CXX_COPIES
#          copies of the list so that start-up is noise)
#   Swift  the linkage names of the real Xcode dSYMs (../shared/real-xcode, llvm-nm-14) and
#          the Swift project's vectors (../shared/swift-demangle), full and simplified form:
#          no peer on Linux (no Debian package ships swift-demangle), the rate is given alone
# Env: BENCH_DEMANGLE_BIN (default build/tests/bench_demangle), BENCH_CXX_COPIES (20).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=${BENCH_DEMANGLE_BIN:-$root/build/tests/bench_demangle}
copies=${BENCH_CXX_COPIES:-20}
[ -x "$bin" ] || { echo "bench: $bin not built" >&2; exit 1; }
for tool in c++filt nm llvm-nm-14 python3; do
  command -v "$tool" >/dev/null || { echo "bench: required tool '$tool' not found" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/stacksift-demangle-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

lib=$(ls /usr/lib/*/libstdc++.so.6 | head -1)
nm -D --defined-only "$lib" | awk '$3 ~ /^_Z/ {print $3}' | sort -u > "$tmp/cxx.txt"
shared=$(cd "$root/.." && pwd)/shared
{
  find "$shared/real-xcode" -path '*/DWARF/*' -type f -exec llvm-nm-14 --no-sort {} \; 2>/dev/null |
    awk '{print $NF}' | sed -n 's/^_\(\$s\)/\1/p'
  sed -n 's/ *--->.*//p' "$shared/swift-demangle/manglings.txt" | grep -E '^(_?\$[sSe]|_T0)'
} | sort -u > "$tmp/swift.txt"

ncxx=$(wc -l < "$tmp/cxx.txt")
for i in $(seq "$copies"); do cat "$tmp/cxx.txt"; done > "$tmp/cxx-copies.txt"
best=""
for r in 1 2 3; do
  s=$(date +%s.%N)
  c++filt < "$tmp/cxx-copies.txt" > /dev/null
  e=$(date +%s.%N)
  rate=$(python3 -c "print(round($ncxx * $copies / ($e - $s)))")
  if [ -z "$best" ] || [ "$rate" -gt "$best" ]; then best=$rate; fi
done
ours=$("$bin" "$tmp/cxx.txt" | sed 's/.*names_per_s=//')
echo "C++ ($ncxx names from $(basename "$lib")): stacksift $ours names/s, c++filt $best names/s," \
  "ratio $(python3 -c "print(f'{$ours / $best:.2f}')")x"
full=$("$bin" "$tmp/swift.txt")
simple=$("$bin" "$tmp/swift.txt" simplified)
echo "Swift ($(wc -l < "$tmp/swift.txt") names): full: $full; simplified: $simple"
