#!/usr/bin/env bash
# cli_symbolication - the contract of `stacksift symcache build` and `stacksift lookup` as a
# user (or a script wrapping atos) meets it: output formats, exit codes, one-line errors,
# stdin, fat inputs, zip inputs, -l. Addresses and expected names come from the fixtures'
# symbol tables (llvm-nm-14), never hard-coded. Prints "N passed, N failed".
set -u
bin=${STACKSIFT_BIN:?STACKSIFT_BIN not set}
fx=${STACKSIFT_FIXTURES:?STACKSIFT_FIXTURES not set}
tmp=$(mktemp -d /tmp/stacksift-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { # check NAME COND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name" >&2; fi
}
sym_addr() { # sym_addr FILE ARCH SYMBOL -> hex address of an exported function
  llvm-nm-14 --arch="$2" --defined-only "$1" | awk -v s="$3" '$3 == s { print "0x" $1; exit }'
}

o0=$fx/arm64-O0/FixtureApp.app.dSYM
o0bin=$fx/arm64-O0/FixtureApp.app/FixtureApp
main=$(sym_addr "$o0bin" arm64 _main)
check "main found in the fixture" test -n "$main"

# symcache build: one JSON line per slice with the documented keys; files named <UUID>.symc
out=$("$bin" symcache build "$fx/fat/FixtureApp.app.dSYM" -o "$tmp/fat")
check "fat dSYM gives two lines" test "$(printf '%s\n' "$out" | wc -l)" -eq 2
for key in uuid arch name functions ranges bytes dwarf_bytes ms; do
  check "build line has $key" python3 -c "import json,sys; [json.loads(l)['$key'] for l in sys.stdin]" <<<"$out"
done
uuid=$(printf '%s\n' "$out" | python3 -c "import json,sys; print([json.loads(l) for l in sys.stdin if json.loads(l)['arch']=='arm64'][0]['uuid'])")
check "symcache named by upper-case UUID" test -f "$tmp/fat/$uuid.symc"
check "UUID is upper-case with dashes" grep -Eq '^[0-9A-F]{8}-([0-9A-F]{4}-){3}[0-9A-F]{12}$' <<<"$uuid"
zip_lines=$("$bin" symcache build "$fx/FixtureApp-dSYMs.zip" -o "$tmp/zip" | wc -l)
check "zip of two bundles gives two slices" test "$zip_lines" -eq 2

# lookup, plain atos output
line=$("$bin" lookup -o "$o0" "$main")
check "atos line for main" grep -Eq '^main \(in FixtureApp\) \(main\.c:[0-9]+\)$' <<<"$line"
line=$("$bin" lookup -o "$o0" -l 0x104000000 "$(printf '0x%x' $((main - 0x100000000 + 0x104000000)))")
check "-l converts a runtime address" grep -Eq '^main \(in FixtureApp\) \(main\.c:[0-9]+\)$' <<<"$line"
line=$("$bin" lookup -o "$o0" 0x10)
check "uncovered address printed as given" test "$line" = "0x10"
line=$("$bin" lookup -o "$o0bin" "$(printf '0x%x' $((main + 8)))")
check "symbol table only: name + offset" test "$line" = "main (in FixtureApp) + 8"
# addresses from stdin, blank lines skipped, one answer each
n=$(printf '%s\n\n%s\n' "$main" "$main" | "$bin" lookup -o "$o0" | wc -l)
check "stdin: one line per address" test "$n" -eq 2

# -i on an inlined address of the O2 build: more lines than without -i, innermost first
o2=$fx/arm64-O2/FixtureApp.app.dSYM
found=0
for a in $(llvm-nm-14 --defined-only "$fx/arm64-O2/FixtureApp.app/FixtureApp" | awk '$2 ~ /[Tt]/ {print $1}' | head -60); do
  for off in 0 4 8 12 16 20 24 28 32 40 48 56 64; do
    addr=$(printf '0x%x' $((0x$a + off)))
    json=$("$bin" lookup -o "$o2" --json "$addr")
    nf=$(python3 -c "import json,sys; print(len(json.loads(sys.stdin.read())['frames']))" <<<"$json")
    if [ "$nf" -ge 2 ]; then
      ni=$("$bin" lookup -o "$o2" -i "$addr" | wc -l)
      n1=$("$bin" lookup -o "$o2" "$addr" | wc -l)
      check "-i prints every inlined frame" test "$ni" -eq "$nf"
      check "without -i one line" test "$n1" -eq 1
      last=$(python3 -c "import json,sys; f=json.loads(sys.stdin.read())['frames']; print(f[-1]['function'], f[-1]['inlined'], f[0]['inlined'])" <<<"$json")
      check "outermost frame is not inlined, innermost is" grep -Eq ' False True$' <<<"$last"
      found=1
      break 2
    fi
  done
done
check "an inlined address exists at -O2" test "$found" -eq 1

# a big batch (two threads, answers formatted a block at a time): every answer in input order
# and equal to that address's own lookup, in --json -i and plain -i output
nm_addrs=$(llvm-nm-14 --defined-only "$fx/arm64-O2/FixtureApp.app/FixtureApp" | awk '$2 ~ /[Tt]/ {print $1}' | head -40)
python3 - "$tmp/batch" $nm_addrs <<'PY'
import random, sys
base = [int(a, 16) for a in sys.argv[2:]]
addrs = [a + off for a in base for off in (0, 4, 8, 12, 16, 24, 32)] + [0x10]
rng = random.Random(15)
batch = [rng.choice(addrs) for _ in range(9000)]
open(sys.argv[1], "w").write("".join(f"0x{a:x}\n" for a in batch))
open(sys.argv[1] + ".distinct", "w").write("".join(f"0x{a:x}\n" for a in sorted(set(batch))))
PY
"$bin" lookup -o "$o2" --json -i <"$tmp/batch" >"$tmp/batch.json"
"$bin" lookup -o "$o2" -i <"$tmp/batch" >"$tmp/batch.txt"
ok=1
while read -r a; do
  "$bin" lookup -o "$o2" --json -i "$a" >>"$tmp/single.json"
  printf '%s\t%s\n' "$a" "$("$bin" lookup -o "$o2" -i "$a" | tr '\n' '\v')" >>"$tmp/single.txt"
done <"$tmp/batch.distinct"
check "batch: one JSON answer per address, in input order, each equal to its own lookup" \
  python3 - "$tmp/batch" "$tmp/batch.json" "$tmp/single.json" <<'PY'
import json, sys
inp = open(sys.argv[1]).read().split()
got = [json.loads(l) for l in open(sys.argv[2])]
single = {int(r["address"], 16): r for r in map(json.loads, open(sys.argv[3]))}
assert len(got) == len(inp) == 9000, (len(got), len(inp))
for a, r in zip(inp, got):
    assert int(r["address"], 16) == int(a, 16), (a, r["address"])
    assert r == single[int(a, 16)], a
assert sum(1 for r in got if r["frames"]) > 8000
PY
check "batch: plain -i lines in input order, equal to each address's own lookup" \
  python3 - "$tmp/batch" "$tmp/batch.txt" "$tmp/single.txt" <<'PY'
import sys
inp = open(sys.argv[1]).read().split()
single = dict(l.rstrip("\n").split("\t", 1) for l in open(sys.argv[3]))
want = "".join(single[a].replace("\v", "\n") for a in inp)
assert open(sys.argv[2]).read() == want
PY

# raw names: a C++ function's linkage name from the symbol table (llvm-nm-14, Mach-O's extra
# underscore removed) is what --mangled prints and what "mangled" holds; "function" is its
# demangling by c++filt (the same system demangler); a C name has no "mangled"
o0nm=$(llvm-nm-14 --defined-only "$o0bin" | awk '$3 ~ /^__ZN/ && $3 !~ /C[12]E/ {print $1, $3; exit}')
cxx_addr=0x${o0nm%% *} cxx_raw=${o0nm#* _}
check "a C++ function in the fixture" grep -q '^_ZN' <<<"$cxx_raw"
line=$("$bin" lookup -o "$o0" --mangled "$cxx_addr")
check "--mangled prints the raw name (atos line)" grep -Eq "^${cxx_raw} \(in FixtureApp\) \([a-z_]+\.cpp:[0-9]+\)$" <<<"$line"
line=$("$bin" lookup -o "$o0" "$cxx_addr")
check "without --mangled the demangled name" test "${line%% (in *}" = "$(c++filt "$cxx_raw")"
json=$("$bin" lookup -o "$o0" --json "$cxx_addr")
check "--json: mangled beside function" python3 -c "
import json, sys; f = json.loads(sys.stdin.read())['frames'][-1]
assert f['mangled'] == sys.argv[1] and f['function'] == sys.argv[2], f" "$cxx_raw" "$(c++filt "$cxx_raw")" <<<"$json"
json=$("$bin" lookup -o "$o0" --json --mangled "$cxx_addr")
check "--json --mangled: function is the raw name" python3 -c "
import json, sys; f = json.loads(sys.stdin.read())['frames'][-1]
assert f['function'] == sys.argv[1] == f['mangled'], f" "$cxx_raw" <<<"$json"
json=$("$bin" lookup -o "$o0" --json "$main")
check "--json: a C name has no mangled" python3 -c "
import json, sys; f = json.loads(sys.stdin.read())['frames'][-1]
assert f['function'] == 'main' and 'mangled' not in f, f" <<<"$json"
line=$("$bin" lookup -o "$o0bin" --mangled "$(printf '0x%x' $((cxx_addr + 4)))")
check "--mangled from the symbol table only" test "$line" = "$cxx_raw (in FixtureApp) + 4"

# fat input: arm64 chosen without --arch; --arch picks the slice; a missing arch is an error
fat=$fx/fat/FixtureApp.app.dSYM
x86main=$(sym_addr "$fx/fat/FixtureApp.app/FixtureApp" x86_64 _main)
line=$("$bin" lookup -o "$fat" --arch x86_64 "$x86main")
check "--arch x86_64 slice" grep -Eq '^main \(in FixtureApp\)' <<<"$line"
err=$("$bin" lookup -o "$fat" --arch armv7 0x1000 2>&1 >/dev/null); rc=$?
check "missing arch exits 1" test "$rc" -eq 1
check "missing arch names the slices" grep -q "x86_64" <<<"$err"

# --json escapes names and paths as JSON requires: a quote, a backslash, a tab, a control
# byte, an invalid UTF-8 byte (\u00ff) and valid UTF-8 (as it is), alone and in a batch big
# enough for the two-thread path, where each distinct name is escaped once
mkdir -p "$tmp/esc"
printf '%s\n' 'long q1(long x) __asm__("_odd\"quote\\\\back\tslash");' 'long q1(long x) { return x * 7 + 1; }' \
  'long q2(long x) __asm__("_ctl\001byte\377bad\303\251ok");' 'long q2(long x) { return x * 5 - q1(x); }' \
  'int main(int c, char **v) { return (int)q2(c); }' >"$tmp/esc/esc\"d.c"
( cd "$tmp/esc" && clang-14 -target arm64-apple-ios14.0 -O0 -g -c 'esc"d.c' -o esc.o 2>/dev/null \
  && ld64.lld-14 -arch arm64 -platform_version ios 14.0 14.0 -o esc esc.o \
  && dsymutil-14 esc -o esc.dSYM )
check "escape fixture built" test -d "$tmp/esc/esc.dSYM"
# (by prefix: a tab splits the first name into two awk fields)
q1=$(llvm-nm-14 --defined-only "$tmp/esc/esc" | awk '$3 ~ /^_odd/ { print "0x" $1; exit }')
q2=$(llvm-nm-14 --defined-only "$tmp/esc/esc" | awk '$3 ~ /^_ctl/ { print "0x" $1; exit }')
check "escape fixture symbols found" test -n "$q1" -a -n "$q2"
one=$("$bin" lookup -o "$tmp/esc/esc.dSYM" --json "$q1" "$q2")
many=$(for i in $(seq 3000); do echo "$q1"; echo "$q2"; done | "$bin" lookup -o "$tmp/esc/esc.dSYM" --json | sort -u)
check "escaped names: same in a batch" test "$(sort -u <<<"$one")" = "$many"
check "escaped names decode to the raw bytes" python3 -c '
import json, sys
a, b = [json.loads(l)["frames"][0] for l in sys.stdin.read().splitlines()]
assert a["function"] == "_odd\"quote\\\\back\tslash", a
assert b["function"] == "_ctl\x01byte\u00ffbad\u00e9ok", b
assert a["file"].endswith("/esc\"d.c") and b["file"] == a["file"], a
' <<<"$one"
check "escapes spelled as the shared escaper does" grep -qF '"_ctl\u0001byte\u00ffbad' <<<"$one"

# errors: one line on stderr, documented exit codes
err=$("$bin" lookup -o "$o0" zzz 2>&1 >/dev/null); rc=$?
check "bad address exits 1" test "$rc" -eq 1
check "bad address: one line" test "$(printf '%s\n' "$err" | wc -l)" -eq 1
"$bin" lookup 0x1000 >/dev/null 2>&1; rc=$?
check "no -o is a usage error (2)" test "$rc" -eq 2
err=$("$bin" lookup -o /nonexistent 0x1 2>&1 >/dev/null); rc=$?
check "missing input exits 1" test "$rc" -eq 1
check "missing input named" grep -q "/nonexistent" <<<"$err"
printf 'not a mach-o' >"$tmp/junk"
err=$("$bin" symcache build "$tmp/junk" -o "$tmp/junkout" 2>&1 >/dev/null); rc=$?
check "junk input exits 1" test "$rc" -eq 1
check "junk input: says not Mach-O" grep -q "not a Mach-O" <<<"$err"
cp "$tmp/fat/$uuid.symc" "$tmp/bad.symc"
printf '\x63' | dd of="$tmp/bad.symc" bs=1 seek=8 conv=notrunc 2>/dev/null
err=$("$bin" lookup -o "$tmp/bad.symc" 0x1 2>&1 >/dev/null); rc=$?
check "unknown symcache version exits 1" test "$rc" -eq 1
check "unknown version named" grep -q "version 99" <<<"$err"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
