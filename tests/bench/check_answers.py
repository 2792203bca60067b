#!/usr/bin/env python3
"""check_answers.py STACKSIFT SYMC DWARF ARCH ADDRS [N] - the benchmark's answers are right:
`stacksift lookup -o SYMC --json -i` must agree with llvm-symbolizer-14 (the oracle of
tests/lookup_oracle.py, same comparison rules) on the first N (default 5000) file addresses of
ADDRS (hex, one per line). Prints the counts; exits 1 on any mismatch.

Swift names (the generator's asm-labelled functions: `$s...` linkage names): llvm-symbolizer-14
has no Swift demangler and prints them raw, so their display name is compared in the form
`stacksift demangle --simplified` gives it, as real_xcode_dwarf.py does ("swift" counts them);
their raw name must still equal llvm-symbolizer's --no-demangle name byte for byte."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import lookup_oracle as lo  # noqa: E402


SWIFT_PREFIXES = ("$s", "$S", "$e", "_T0", "_$s", "_$S")


def swift_display(stacksift, names):
    """{linkage: the simplified display form} of Swift linkage names, one stacksift process."""
    if not names:
        return {}
    out = subprocess.run([stacksift, "demangle", "--simplified"], input="".join(n + "\n" for n in names),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != len(names):
        sys.exit(f"check_answers: stacksift demangle printed {len(out)} lines for {len(names)} names")
    return dict(zip(names, out))


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    stacksift, symc, dwarf, arch, addrs_path = sys.argv[1:6]
    n = int(sys.argv[6]) if len(sys.argv) == 7 else 5000
    addrs = []
    with open(addrs_path) as f:
        for line in f:
            if line.strip():
                addrs.append(int(line, 16))
            if len(addrs) == n:
                break
    addrs = sorted(set(addrs))
    want = lo.symbolize(dwarf, arch, addrs)
    swift = sorted({fn for a in addrs for fn, _, _ in want[a] if fn.startswith(SWIFT_PREFIXES)})
    shown = swift_display(stacksift, swift)
    canon = lo.canon
    counts = {}

    def canon_swift(name, c=None):
        if name in shown:
            counts["swift"] = counts.get("swift", 0) + 1
            return shown[name]
        return canon(name, c)
    lo.canon = canon_swift  # frame_matches compares display names through lo.canon
    got = lo.stacksift_lookup(stacksift, ["-o", symc, "-i"], addrs)
    st = lo.Stats(show=5)
    lo.compare("bench", "symc", {a: (want[a], False) for a in addrs}, got, lambda a: a, st)
    rules = dict(sorted({**st.rules, **counts}.items()))
    print(f"check_answers: {st.addresses} addresses, {st.frames} frames vs llvm-symbolizer-14: "
          f"{len(st.mismatches)} mismatches {rules}")
    for m in st.mismatches[:5]:
        print("  " + m[:400])
    if st.addresses == 0 or st.frames == 0:
        sys.exit("check_answers: nothing compared")
    sys.exit(1 if st.mismatches else 0)


if __name__ == "__main__":
    main()
