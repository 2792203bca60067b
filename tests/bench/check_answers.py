#!/usr/bin/env python3
"""check_answers.py STACKSIFT SYMC DWARF ARCH ADDRS [N] - the benchmark's answers are right:
`stacksift lookup -o SYMC --json -i` must agree with llvm-symbolizer-14 (the oracle of
tests/lookup_oracle.py, same comparison rules) on the first N (default 5000) file addresses of
ADDRS (hex, one per line). Prints the counts; exits 1 on any mismatch."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import lookup_oracle as lo  # noqa: E402


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
    got = lo.stacksift_lookup(stacksift, ["-o", symc, "-i"], addrs)
    st = lo.Stats(show=5)
    lo.compare("bench", "symc", {a: (want[a], False) for a in addrs}, got, lambda a: a, st)
    print(f"check_answers: {st.addresses} addresses, {st.frames} frames vs llvm-symbolizer-14: "
          f"{len(st.mismatches)} mismatches {dict(sorted(st.rules.items()))}")
    for m in st.mismatches[:5]:
        print("  " + m[:400])
    if st.addresses == 0 or st.frames == 0:
        sys.exit("check_answers: nothing compared")
    sys.exit(1 if st.mismatches else 0)


if __name__ == "__main__":
    main()
