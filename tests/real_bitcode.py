#!/usr/bin/env python3
"""real_bitcode.py - App Store (bitcode) dSYMs revealed with their UUID maps and BCSymbolMaps
by `stacksift symcache build` and `stacksift lookup` (ctest: real_bitcode, label fixtures).

Env: STACKSIFT_BIN, STACKSIFT_SOURCE_DIR (../shared is found beside it; STACKSIFT_REAL_DSYMS
overrides the folder).

Data (../shared/real-dsyms/SOURCE.md): symbolic-bitcode/ holds a hidden dSYM's DWARF file,
its UUID map (DBGOriginalUUID C8374B6D-...) and that build's BCSymbolMap, side by side;
crashprobe-2017-release/ holds App Store dSYM bundles with their UUID maps and no map.

The oracle is the map itself and llvm-nm-14: every function symbol the dSYM names
`__hidden#N_` must come out of a lookup at its address named by line N of the map (after the
header line, from 0; one Mach-O underscore less), and no looked-up function or file may read
`__hidden#` any more. Then the same with the map found each way a user gives it: beside a
Mach-O file, in --symbol-maps DIR, inside an .xcarchive folder (dSYMs/ + BCSymbolMaps/) and a
zip of it; without a map nothing is revealed and the build says which map it needs; a map
too short for the dSYM given with it (another build's) is refused.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from real_dsyms import real_dsyms_dir  # noqa: E402

DWARF = "2d10c42f-591d-3265-b147-78ba0868073f.dwarf-hidden"
UUID = "2D10C42F-591D-3265-B147-78BA0868073F"
PLIST = "2d10c42f-591d-3265-b147-78ba0868073f.plist"
MAP = "c8374b6d-6e96-34d8-ae38-efaa5fec424f.bcsymbolmap"
ORIGINAL = "C8374B6D-6E96-34D8-AE38-EFAA5FEC424F"

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")
    return cond


def run(args, ok=True):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        print(f"FAIL: {' '.join(args)} exited {p.returncode}: {p.stderr[-1500:]}")
        sys.exit(1)
    return p


def build(binpath, inp, out, *extra, ok=True):
    p = run([binpath, "symcache", "build", inp, "-o", out, *extra], ok=ok)
    return p, [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


def hidden_symbols(path):
    """{address: N} of the function symbols (llvm-nm type t/T) named __hidden#N_."""
    out = {}
    for line in run(["llvm-nm-14", path]).stdout.splitlines():
        m = re.match(r"^([0-9a-f]+) [tT] __hidden#(\d+)_$", line)
        if m:
            out[int(m.group(1), 16)] = int(m.group(2))
    return out


def lookup(binpath, symc, addrs):
    p = subprocess.run([binpath, "lookup", "-o", symc, "--json", "-i"],
                       input="".join(f"0x{a:x}\n" for a in addrs), capture_output=True,
                       text=True, timeout=300)
    if p.returncode != 0:
        print(f"FAIL: lookup exited {p.returncode}: {p.stderr[-800:]}")
        sys.exit(1)
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


def check_revealed(binpath, symc, syms, names, what):
    """Every hidden function symbol's address looks up as its map line; nothing hidden left."""
    addrs = sorted(syms)
    rows = lookup(binpath, symc, addrs)
    bad = []
    for addr, row in zip(addrs, rows):
        frames = row.get("frames") or []
        want = names[syms[addr]]
        want = want[1:] if want.startswith("_") else want
        outer = frames[-1] if frames else {}
        got = outer.get("mangled") or outer.get("function")
        if got != want:
            bad.append((hex(addr), syms[addr], got, want))
    check(not bad, f"{what}: {len(bad)} of {len(addrs)} hidden symbols not named by their map "
          f"line, e.g. {bad[:3]}")
    left = [r for r in rows for f in r.get("frames") or []
            if "hidden#" in (f.get("function") or "") + (f.get("file") or "")]
    check(not left, f"{what}: {len(left)} lookups still read __hidden#, e.g. {left[:2]}")
    files = {f.get("file") for r in rows for f in r.get("frames") or [] if f.get("file")}
    check(any(f.startswith("/Users/") and f.endswith(".m") for f in files),
          f"{what}: no revealed absolute source path among {sorted(files)[:5]}")
    return len(addrs)


def main():
    binpath = os.environ.get("STACKSIFT_BIN")
    if not (binpath and os.access(binpath, os.X_OK)):
        print("FAIL: STACKSIFT_BIN is not set or not executable")
        return 1
    root = real_dsyms_dir()
    src = os.path.join(root, "symbolic-bitcode")
    names = open(os.path.join(src, MAP), encoding="utf-8").read().split("\n")
    check(names[0].startswith("BCSymbolMap Version: 2"), "map header")
    names = names[1:-1]   # after the header, without the empty string after the last newline
    syms = hidden_symbols(os.path.join(src, DWARF))
    check(len(syms) > 1000, f"llvm-nm finds {len(syms)} hidden function symbols")
    tmp = tempfile.mkdtemp(prefix="real-bitcode-")
    try:
        # 1. beside a Mach-O file (the shared folder's layout, names in lower case)
        _, built = build(binpath, os.path.join(src, DWARF), os.path.join(tmp, "beside"))
        b = built[0] if built else {}
        check(b.get("uuid") == UUID and b.get("revealed") is True and b.get("still_hidden") == 0
              and b.get("hidden", 0) > 3000 and b.get("symbol_map") == ORIGINAL,
              f"beside: built {b}")
        symc = os.path.join(tmp, "beside", UUID + ".symc")
        n = check_revealed(binpath, symc, syms, names, "beside")
        print(f"beside: {n} hidden symbols revealed, {b.get('hidden')} hidden strings")
        # lookup straight from the DWARF file reveals too (maps beside it)
        rows = lookup(binpath, os.path.join(src, DWARF), [min(syms)])
        want = names[syms[min(syms)]].lstrip("_")
        check(rows and rows[0]["frames"] and rows[0]["frames"][-1].get("function") == want,
              f"lookup -o DWARF file: {rows[:1]} != {want}")

        # 2. alone: nothing to reveal with; the build says which map it needs
        alone = os.path.join(tmp, "alone")
        os.makedirs(alone)
        shutil.copy(os.path.join(src, DWARF), os.path.join(alone, "App"))
        _, built = build(binpath, os.path.join(alone, "App"), os.path.join(tmp, "out-alone"))
        b = built[0] if built else {}
        check(b.get("revealed") is False and b.get("still_hidden") == b.get("hidden") > 3000
              and b.get("symbol_map") == UUID, f"alone (no UUID map: its own UUID): {b}")
        rows = lookup(binpath, os.path.join(tmp, "out-alone", UUID + ".symc"), [min(syms)])
        check("hidden#" in rows[0]["frames"][-1]["function"], f"alone stays hidden: {rows[0]}")

        # 3. --symbol-maps DIR, upper-case names, as an .xcarchive's BCSymbolMaps/ holds them
        maps = os.path.join(tmp, "maps")
        os.makedirs(maps)
        shutil.copy(os.path.join(src, PLIST), os.path.join(maps, UUID + ".plist"))
        shutil.copy(os.path.join(src, MAP), os.path.join(maps, ORIGINAL + ".bcsymbolmap"))
        _, built = build(binpath, os.path.join(alone, "App"), os.path.join(tmp, "out-dir"),
                         "--symbol-maps", maps)
        check(built and built[0].get("revealed") is True, f"--symbol-maps: {built}")
        check_revealed(binpath, os.path.join(tmp, "out-dir", UUID + ".symc"), syms, names,
                       "--symbol-maps")
        p = run([binpath, "lookup", "-o", os.path.join(alone, "App"), "--symbol-maps", maps,
                 f"0x{min(syms):x}"])
        check(p.stdout.startswith(names[syms[min(syms)]].lstrip("_")),
              f"lookup --symbol-maps: {p.stdout!r}")

        # 4. an .xcarchive folder: the UUID map in the bundle, the map in BCSymbolMaps/
        arch = os.path.join(tmp, "App.xcarchive")
        res = os.path.join(arch, "dSYMs", "App.app.dSYM", "Contents", "Resources")
        os.makedirs(os.path.join(res, "DWARF"))
        os.makedirs(os.path.join(arch, "BCSymbolMaps"))
        shutil.copy(os.path.join(src, DWARF), os.path.join(res, "DWARF", "App"))
        shutil.copy(os.path.join(src, PLIST), os.path.join(res, UUID + ".plist"))
        shutil.copy(os.path.join(src, MAP), os.path.join(arch, "BCSymbolMaps",
                                                         ORIGINAL + ".bcsymbolmap"))
        _, built = build(binpath, arch, os.path.join(tmp, "out-arch"))
        check(built and built[0].get("revealed") is True and built[0].get("name") == "App",
              f"xcarchive: {built}")
        check_revealed(binpath, os.path.join(tmp, "out-arch", UUID + ".symc"), syms, names,
                       "xcarchive")
        # the same archive zipped, the map entry last
        zpath = os.path.join(tmp, "App.zip")
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
            for dp, _, fns in sorted(os.walk(arch)):
                for fn in sorted(fns):
                    if not fn.endswith(".bcsymbolmap"):
                        z.write(os.path.join(dp, fn), os.path.relpath(os.path.join(dp, fn), tmp))
            z.write(os.path.join(arch, "BCSymbolMaps", ORIGINAL + ".bcsymbolmap"),
                    "App.xcarchive/BCSymbolMaps/" + ORIGINAL + ".bcsymbolmap")
        _, built = build(binpath, zpath, os.path.join(tmp, "out-zip"))
        check(built and built[0].get("revealed") is True, f"zip: {built}")
        for other in ("out-arch", "out-dir"):   # both name the image App
            same = open(os.path.join(tmp, "out-zip", UUID + ".symc"), "rb").read() == \
                open(os.path.join(tmp, other, UUID + ".symc"), "rb").read()
            check(same, f"the zipped archive gives the symcache bytes of {other}")

        # 5. a map too short for the dSYM it came with: another build's, refused
        cut = "\n".join(["BCSymbolMap Version: 2.0"] + names[:100]) + "\n"
        open(os.path.join(arch, "BCSymbolMaps", ORIGINAL + ".bcsymbolmap"), "w").write(cut)
        p, _ = build(binpath, arch, os.path.join(tmp, "out-short"), ok=False)
        check(p.returncode == 1 and "map of another build" in p.stderr,
              f"short map refused: {p.returncode} {p.stderr!r}")
        # a map cut mid-line
        open(os.path.join(arch, "BCSymbolMaps", ORIGINAL + ".bcsymbolmap"), "w").write(
            cut[:-5])
        p, _ = build(binpath, arch, os.path.join(tmp, "out-cut"), ok=False)
        check(p.returncode == 1 and "cut short" in p.stderr, f"cut map refused: {p.stderr!r}")

        # 6. App Store dSYM bundles with UUID maps and no map: built, hidden, map named
        rel = os.path.join(root, "crashprobe-2017-release")
        for bundle in sorted(os.listdir(rel)):
            path = os.path.join(rel, bundle)
            res = os.path.join(path, "Contents", "Resources")
            plist = [f for f in os.listdir(res) if f.endswith(".plist")][0]
            original = re.search(r"<string>([0-9A-Fa-f-]{36})</string>",
                                 open(os.path.join(res, plist)).read()).group(1).upper()
            _, built = build(binpath, path, os.path.join(tmp, "out-rel"))
            check(len(built) == 1, f"{bundle}: one slice built: {built}")
            for b in built:
                if b.get("hidden"):
                    check(b.get("revealed") is False and b.get("symbol_map") == original,
                          f"{bundle}: needs the map of its DBGOriginalUUID {original}: {b}")
                    print(f"{bundle}: {b['hidden']} hidden strings, needs {original}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
