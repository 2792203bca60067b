#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [TARGET...] - build every tests/fuzz/fuzz_*.c with libFuzzer and
# run each for SECONDS (-max_total_time), one after the other. Exits non-zero if a target
# fails to build or the fuzzer finds a crash, leak, timeout or sanitizer report; the input
# that did it is kept in build-fuzz/artifacts/.
#
# Adding a target: drop tests/fuzz/fuzz_<name>.c (defining LLVMFuzzerTestOneInput) and, as
# needed, these optional files beside it (one or more whitespace-separated items; # comments):
#   fuzz_<name>.srcs   C sources it links, globs relative to the repo root
#                      (default: common/base/*.c); compiled with -I common
#   fuzz_<name>.libs   extra link needs: pkg-config module names (e.g. "libpcre2-8 jansson"),
#                      or flags starting with "-" (e.g. -lz) passed as they are
#   fuzz_<name>.seeds  seed corpus globs, one a line; $FIXTURES (the built fixtures),
#                      $SYMCACHES (.symc files built from them with stacksift, when built),
#                      $CORPUS (../shared/corpus/reports) and $ROOT (repo root) are expanded
#   fuzz_<name>.dict   a libFuzzer dictionary (-dict=)
# Build: clang-14 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1.
# Env: STACKSIFT_BIN (for $SYMCACHES; default build/server/stacksift), FUZZ_DIR (build-fuzz),
# STACKSIFT_FIXTURES (default build-fixtures), FUZZ_CFLAGS (extra compile flags, all targets).
set -euo pipefail
if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [fuzz_NAME...]" >&2
  exit 2
fi
seconds=$1
shift
cd "$(dirname "$0")/../.."
ROOT=$PWD
out=${FUZZ_DIR:-$ROOT/build-fuzz}
FIXTURES=${STACKSIFT_FIXTURES:-$ROOT/build-fixtures}
CORPUS=$(cd "$ROOT/.." && pwd)/shared/corpus/reports
SYMCACHES=$out/symcaches
stacksift=${STACKSIFT_BIN:-$ROOT/build/server/stacksift}
command -v clang-14 >/dev/null || { echo "fuzz: clang-14 not found" >&2; exit 1; }
mkdir -p "$out/artifacts"

# Seeds: the real fixtures, and symcaches built from them when stacksift is there.
"$ROOT/tests/fixtures/build.sh" "$FIXTURES" >/dev/null
rm -rf "$SYMCACHES" && mkdir -p "$SYMCACHES"
if [ -x "$stacksift" ]; then
  for d in "$FIXTURES"/*/*.dSYM; do
    "$stacksift" symcache build "$d" -o "$SYMCACHES" >/dev/null
  done
else
  echo "fuzz: $stacksift not built: no .symc seeds" >&2
fi

# items FILE - the whitespace-separated items of FILE without comments (nothing if absent).
items() {
  [ -f "$1" ] && sed 's/#.*//' "$1" | tr -s ' \t' '\n\n' | grep -v '^$' || true
}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$ROOT"/tests/fuzz/fuzz_*.c; do targets+=("$(basename "${f%.c}")"); done
fi
failed=()
for name in "${targets[@]}"; do
  src=$ROOT/tests/fuzz/$name.c
  [ -f "$src" ] || { echo "fuzz: no $src" >&2; exit 2; }
  base=$ROOT/tests/fuzz/$name
  srcs=()
  if [ -f "$base.srcs" ]; then
    for g in $(items "$base.srcs"); do
      for f in $ROOT/$g; do [ -f "$f" ] || { echo "fuzz: $name.srcs: $g matches nothing" >&2; exit 1; }; srcs+=("$f"); done
    done
  else
    srcs=("$ROOT"/common/base/*.c)
  fi
  cflags=() ldflags=()
  for l in $(items "$base.libs"); do
    if [[ $l == -* ]]; then
      ldflags+=("$l")
    else
      read -r -a c <<<"$(pkg-config --cflags "$l")"; cflags+=("${c[@]}")
      read -r -a c <<<"$(pkg-config --libs "$l")"; ldflags+=("${c[@]}")
    fi
  done
  echo "== $name: build"
  clang-14 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
    -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I"$ROOT/common" ${cflags[@]+"${cflags[@]}"} ${FUZZ_CFLAGS:-} \
    "$src" "${srcs[@]}" ${ldflags[@]+"${ldflags[@]}"} -o "$out/$name"

  corpus=$out/corpus/$name
  rm -rf "$corpus" && mkdir -p "$corpus"
  nseeds=0
  while IFS= read -r g; do
    g=${g//'$FIXTURES'/$FIXTURES}; g=${g//'$SYMCACHES'/$SYMCACHES}; g=${g//'$CORPUS'/$CORPUS}; g=${g//'$ROOT'/$ROOT}
    for f in $g; do
      [ -f "$f" ] || continue
      cp "$f" "$corpus/seed-$nseeds-$(basename "$f")"
      nseeds=$((nseeds + 1))
    done
  done < <([ -f "$base.seeds" ] && sed 's/#.*//; /^[[:space:]]*$/d' "$base.seeds" || true)
  dict=()
  [ -f "$base.dict" ] && dict=(-dict="$base.dict")
  echo "== $name: fuzzing ${seconds}s from $nseeds seeds"
  # Seeds can be large (dSYMs): inputs may grow to the biggest seed plus 64 KiB.
  biggest=$(find "$corpus" -type f -printf '%s\n' | sort -n | tail -1)
  if "$out/$name" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=$(( ${biggest:-0} + 65536 )) \
      -artifact_prefix="$out/artifacts/$name-" -print_final_stats=1 ${dict[@]+"${dict[@]}"} \
      >"$out/$name.log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$out/$name.log" | tr '\n' ' '
    echo
    echo "== $name: ok"
  else
    tail -50 "$out/$name.log"
    echo "== $name: FAILED (log $out/$name.log, artifacts $out/artifacts/$name-*)"
    failed+=("$name")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets ok (${seconds}s each)"
