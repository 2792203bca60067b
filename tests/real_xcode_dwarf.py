#!/usr/bin/env python3
"""real_xcode_dwarf.py - `stacksift lookup` agrees with llvm-symbolizer-14 on every byte of
__TEXT,__text of every slice of the real Xcode-built dSYMs in ../shared/real-xcode/ (ctest:
real_xcode_dwarf, label fixtures).

Env: STACKSIFT_BIN, STACKSIFT_SOURCE_DIR (../shared is found beside it; STACKSIFT_REAL_XCODE
overrides the folder). Options: --stride N (bytes between sampled addresses, default 1),
--show N (mismatches printed).

These dSYMs come from Xcode 11-12 / Swift 5 (see the folder's SOURCE.md): Swift nests its
functions as DW_TAG_compile_unit > DW_TAG_module > DW_TAG_structure_type > DW_TAG_subprogram,
with @objc thunks (DW_AT_artificial) that inline the method through a DW_AT_abstract_origin to
a sibling declaration. Every address is looked up two ways: `-o <dSYM bundle> --arch A` and
`-o <UUID>.symc` from `stacksift symcache build`. Expected frames come from

    llvm-symbolizer-14 --inlines --functions=linkage --no-demangle --output-style=JSON

(innermost first), compared on the inline chain (count and order), file, line and function.
Function names: a C++ linkage name is compared in the system demangler's spelling (as
lookup_oracle.py does); a Swift linkage name ($s..., _T0...) is compared in the simplified
form `stacksift demangle --simplified` gives it (Apple's names are checked against Apple's own
symbolicated reports by test_real_xcode_names), else accepted as the linkage name itself or as
the DW_AT_name llvm-symbolizer reports for the same frame (--functions=short); each such frame
is counted ("swift-short"). Raw names: every frame's "mangled" (else its "function") must be
llvm-symbolizer's --no-demangle name exactly ("swift-raw" counts the Swift ones).
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lookup_oracle as lo  # noqa: E402  (llvm-symbolizer, demangling, stacksift lookup)

SWIFT_PREFIXES = ("$s", "$S", "$e", "_T0", "_$s", "_$S")


def fail(msg):
    print(f"real_xcode_dwarf: {msg}", file=sys.stderr)
    sys.exit(2)


def real_xcode_dir():
    d = os.environ.get("STACKSIFT_REAL_XCODE")
    if not d:
        src = os.environ.get("STACKSIFT_SOURCE_DIR") or os.path.dirname(HERE)
        d = os.path.join(src, "..", "shared", "real-xcode")
    if not os.path.isdir(d):
        fail(f"no real Xcode material at {d}")
    return os.path.abspath(d)


def dsyms(root):
    """[(bundle, dwarf file)] of every .dSYM under root."""
    out = []
    for dirpath, dirnames, _ in os.walk(root):
        for dn in sorted(dirnames):
            if dn.endswith(".dSYM"):
                dw = os.path.join(dirpath, dn, "Contents", "Resources", "DWARF")
                for f in sorted(os.listdir(dw)):
                    out.append((os.path.join(dirpath, dn), os.path.join(dw, f)))
        dirnames[:] = [d for d in dirnames if not d.endswith(".dSYM")]
    return sorted(out)


def slices(dwarf):
    """[(arch, uuid)] from llvm-dwarfdump --uuid."""
    out = []
    for line in lo.run([lo.DWARFDUMP, "--uuid", dwarf]).splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "UUID:":
            out.append((parts[2].strip("()"), parts[1].upper()))
    return out


def short_names(dwarf, arch, addrs):
    """{addr: [DW_AT_name per frame]} (llvm-symbolizer --functions=short)."""
    out = lo.run([lo.SYMBOLIZER, "--inlines", "--functions=short", "--output-style=JSON",
                  f"--obj={dwarf}:{arch}"], stdin="".join(f"0x{a:x}\n" for a in addrs))
    res = {}
    for line in out.splitlines():
        rec = json.loads(line)
        res[int(rec["Address"], 16)] = [s["FunctionName"] for s in rec["Symbol"]]
    return res


SWIFT_DISPLAY = {}


def swift_display(linkage):
    """The simplified display form stacksift's Swift demangler gives `linkage`."""
    if linkage not in SWIFT_DISPLAY:
        out = lo.run([os.environ["STACKSIFT_BIN"], "demangle", "--simplified", linkage])
        SWIFT_DISPLAY[linkage] = out.strip()
    return SWIFT_DISPLAY[linkage]


def name_matches(got, linkage, short, counts):
    if got == lo.canon(linkage):
        return True
    if linkage.startswith(SWIFT_PREFIXES) and got == swift_display(linkage):
        counts["swift-demangled"] = counts.get("swift-demangled", 0) + 1
        counts["swift-raw"] = counts.get("swift-raw", 0) + 1  # compare() checked got's raw name
        return True
    if linkage.startswith(SWIFT_PREFIXES) and got in (linkage, short):
        counts["swift-short"] = counts.get("swift-short", 0) + 1
        return True
    return False


def compare(label, addrs, exp, shorts, got, counts, mismatches):
    for a in addrs:
        frames, g = exp[a], got.get(a)
        ok = isinstance(g, list) and len(g) == len(frames)
        for i, (fn, file, line) in enumerate(frames):
            if not ok:
                break
            gf = g[i]
            raw = gf.get("mangled") or gf.get("function") or ""
            ok = (raw == fn and name_matches(gf.get("function") or "", fn, shorts[a][i], counts)
                  and gf.get("line") == line and (gf.get("file") or "") == file
                  and bool(gf.get("inlined")) == (i < len(frames) - 1))
        if ok:
            counts["frames"] = counts.get("frames", 0) + len(frames)
            if len(frames) > 1:
                counts["inlined addresses"] = counts.get("inlined addresses", 0) + 1
        else:
            mismatches.append(f"{label} 0x{a:x}: want {[(lo.canon(f), fl, ln) for f, fl, ln in frames]} "
                              f"got {[(x.get('function'), x.get('file'), x.get('line')) for x in (g or [])]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--show", type=int, default=20)
    args = ap.parse_args()
    binpath = os.environ.get("STACKSIFT_BIN")
    if not (binpath and os.access(binpath, os.X_OK)):
        fail("STACKSIFT_BIN is not set or not executable")
    root = real_xcode_dir()
    counts, mismatches = {}, []
    total = nslices = 0
    with tempfile.TemporaryDirectory(prefix="stacksift-realx.") as tmp:
        for bundle, dwarf in dsyms(root):
            outdir = os.path.join(tmp, os.path.basename(bundle))
            os.makedirs(outdir)
            symcs = lo.build_symcaches(binpath, bundle, outdir)
            for arch, uuid in slices(dwarf):
                text_addr, text_size = lo.text_section(dwarf, arch)
                addrs = list(range(text_addr, text_addr + text_size, args.stride))
                exp = lo.symbolize(dwarf, arch, addrs)
                shorts = short_names(dwarf, arch, addrs)
                label = f"{os.path.basename(bundle)}/{arch}"
                nslices += 1
                total += len(addrs)
                compare(label + " dsym", addrs, exp, shorts,
                        lo.stacksift_lookup(binpath, ["-o", bundle, "--arch", arch], addrs), counts, mismatches)
                symc = symcs.get((uuid, arch))
                if symc is None:
                    mismatches.append(f"{label}: symcache build wrote no symcache for {uuid}")
                    continue
                compare(label + " symc", addrs, exp, shorts, lo.stacksift_lookup(binpath, ["-o", symc], addrs),
                        counts, mismatches)
    if nslices == 0:
        fail(f"no dSYM slices found under {root}")
    looked = 2 * total
    agree = looked - len(mismatches)
    print(f"real_xcode_dwarf: {nslices} slices, {total} addresses (stride {args.stride}), "
          f"{looked} lookups, {counts.get('frames', 0)} frames; "
          f"{counts.get('inlined addresses', 0)} lookups with inlined frames")
    print(f"real_xcode_dwarf: agreement with llvm-symbolizer-14: {agree}/{looked} "
          f"({100.0 * agree / looked:.2f}%); Swift names demangled: {counts.get('swift-demangled', 0)} (raw $s... names equal to llvm-symbolizer --no-demangle: {counts.get('swift-raw', 0)}), "
          f"as linkage or DW_AT_name: {counts.get('swift-short', 0)}")
    for m in mismatches[:args.show]:
        print("  " + m)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
