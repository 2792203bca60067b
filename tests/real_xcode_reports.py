#!/usr/bin/env python3
"""real_xcode_reports.py - every report of ../shared/real-xcode/ symbolicates as Apple's own
symbolicated copy says (ctest: real_xcode_reports, label fixtures).

Env: STACKSIFT_BIN, STACKSIFT_SOURCE_DIR (../shared is found beside it; STACKSIFT_REAL_XCODE
overrides the folder). Option: --verbose (one line per compared frame).

For each REPORT beside REPORT_symbolicated (crash reports and `sample` reports), run

    stacksift symbolicate --dsym <every dSYM of the folder> --json REPORT

and compare every frame line Apple's copy changed (the app frames atos symbolicated) with the
frame of the same thread position (crash) or call-graph line (sample) in stacksift's model:

  function   Apple runs atos without -i: it prints the concrete function, so stacksift's
             outermost symbol (the last of the frame's inline chain) is compared. Apple prints
             Swift names demangled; a name that is the same text counts "exact". Until the
             Swift demangler prints Apple's spelling, a Swift function (its linkage name, from
             llvm-symbolizer at the same address, starts with $s) also matches by structure:
             stacksift's name is an identifier of Apple's name and every camel-case word of
             Apple's identifiers occurs in the mangled linkage name ("swift-structure").
  file:line  the outermost symbol's file base name and line, as Apple prints "(file:line)".
  address    callers are looked up at the return address minus one instruction (llvm-
             symbolizer's answer, stacksift's rule). Where Apple's atos answered for the return
             address itself, the frame must match `stacksift lookup` at that address instead;
             exactly that one difference is accepted and counted ("return-address").

  raw name  the symbol's "mangled" (else its "function") is llvm-symbolizer's --no-demangle
             linkage name at the looked-up address, and `stacksift symbolicate --mangled
             --json` prints exactly that as the function; for Swift ($s...) frames whose
             display name is Apple's, this shows the raw name demangles to what Apple prints
             ("swift-raw").

A frame whose image has no dSYM in the folder (the samples were recorded from another build:
their UUID is not among the dSYMs) cannot be compared: it must stay unsymbolicated ("missing")
and is counted apart. The agreement figure is printed; any other difference fails the test.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lookup_oracle as lo  # noqa: E402
import real_xcode_dwarf as rx  # noqa: E402

SWIFT_WORDS = {"static", "specialized", "closure", "in", "of", "implicit", "partial", "apply",
               "forwarder", "for", "thunk", "reabstraction", "merged", "function", "signature",
               "objc", "dynamic", "init", "deinit", "getter", "setter", "modify", "Swift"}

# "0   App   0x00000001012f3afa -[MyClass crashingMethod] (in App) (main.m:73)"
CRASH_FRAME = re.compile(r"^(\d+)\s+(.+?)\s+(0x[0-9a-fA-F]+)\s+(.*)$")
# "        2843 main (in App) (main.m:57) [0x1072e7e30]" (tree drawing before the count)
SAMPLE_FRAME = re.compile(r"^([ +!:|]*)(\d+)\s+(.*?)\s+\[(0x[0-9a-fA-F]+)\]\s*$")
APPLE_SYMBOL = re.compile(r"^(.*) \(in (.+?)\)(?: \((.+):(\d+)\))?(?: \+ (\d+))?$")


def fail(msg):
    print(f"real_xcode_reports: {msg}", file=sys.stderr)
    sys.exit(2)


def apple_frames(orig_path, sym_path):
    """[(line number, key, address, function, file, line)] of the lines Apple changed."""
    with open(orig_path, errors="replace") as f:
        orig = f.read().split("\n")
    with open(sym_path, errors="replace") as f:
        sym = f.read().split("\n")
    if len(orig) != len(sym):
        fail(f"{sym_path} has {len(sym)} lines, {orig_path} {len(orig)}: not a line-for-line copy")
    out = []
    for i, (a, b) in enumerate(zip(orig, sym)):
        if a == b:
            continue
        m = SAMPLE_FRAME.match(b)
        if m:
            text, addr = m.group(3), int(m.group(4), 16)
        else:
            m = CRASH_FRAME.match(b)
            if not m:
                fail(f"{sym_path}:{i + 1}: changed line is no frame line: {b!r}")
            text, addr = m.group(4), int(m.group(3), 16)
        s = APPLE_SYMBOL.match(text.strip())
        if not s:
            fail(f"{sym_path}:{i + 1}: cannot read Apple's symbol {text!r}")
        out.append((i, addr, s.group(1), s.group(3), int(s.group(4)) if s.group(4) else 0))
    return out


def model_frames(model):
    """{address: [frames]} of the rendered model, in report order: the Nth changed line with
    an address is matched with the Nth frame of that address."""
    by_addr = {}
    for t in model["threads"]:
        for f in t["frames"]:
            by_addr.setdefault(int(f["address"], 16), []).append(f)
    return by_addr


def outer(frame):
    syms = frame.get("symbols") or []
    return syms[-1] if syms else None


def identifiers(name):
    return [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", name) if w not in SWIFT_WORDS]


class Stats:
    def __init__(self):
        self.compared = self.exact = self.structure = self.ra = self.missing = self.swift_raw = 0
        self.mismatches = []


def linkage_name(dwarf, arch, addr):
    out = lo.run([lo.SYMBOLIZER, "--functions=linkage", "--no-demangle", "--no-inlines",
                  "--output-style=JSON", f"--obj={dwarf}:{arch}"], stdin=f"0x{addr:x}\n")
    rec = json.loads(out.splitlines()[0])
    return rec["Symbol"][0]["FunctionName"] if rec["Symbol"] else ""


def name_agrees(ours, apple, linkage, counts):
    if ours == apple:
        counts.append("exact")
        return True
    if linkage.startswith(rx.SWIFT_PREFIXES):
        # Swift mangling spells an identifier as its words, later ones often by substitution
        # ("06pleaseC0" is please + Crash): every camel-case word must occur
        words = identifiers(apple)
        parts = [p for w in words for p in re.findall(r"[A-Z]+[a-z0-9_]*|[a-z0-9_]+", w)]
        if ours in words and all(p in linkage for p in parts):
            counts.append("structure")
            return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    binpath = os.environ.get("STACKSIFT_BIN")
    if not (binpath and os.access(binpath, os.X_OK)):
        fail("STACKSIFT_BIN is not set or not executable")
    root = rx.real_xcode_dir()
    bundles = rx.dsyms(root)
    dsym_by_uuid = {}
    for bundle, dwarf in bundles:
        for arch, uuid in rx.slices(dwarf):
            dsym_by_uuid[uuid] = (bundle, dwarf, arch)
    reports = []
    for dirpath, _, files in os.walk(root):
        if ".dSYM" in dirpath:
            continue
        for fn in sorted(files):
            base, ext = os.path.splitext(fn)
            if base.endswith("_symbolicated"):
                orig = os.path.join(dirpath, base[: -len("_symbolicated")] + ext)
                if os.path.exists(orig):
                    reports.append((orig, os.path.join(dirpath, fn)))
    if not reports:
        fail(f"no REPORT / REPORT_symbolicated pairs under {root}")
    st = Stats()
    dsym_args = [a for b, _ in bundles for a in ("--dsym", b)]
    for orig, sym in sorted(reports):
        name = os.path.relpath(orig, root)
        p = subprocess.run([binpath, "symbolicate", *dsym_args, "--json", orig], capture_output=True,
                           text=True, timeout=300)
        if p.returncode != 0:
            st.mismatches.append(f"{name}: stacksift symbolicate exited {p.returncode}: {p.stderr.strip()}")
            continue
        model = json.loads(p.stdout.splitlines()[0])
        by_addr = model_frames(model)
        p = subprocess.run([binpath, "symbolicate", *dsym_args, "--json", "--mangled", orig],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            st.mismatches.append(f"{name}: stacksift symbolicate --mangled exited {p.returncode}: "
                                 f"{p.stderr.strip()}")
            continue
        by_addr_raw = model_frames(json.loads(p.stdout.splitlines()[0]))
        p = subprocess.run([binpath, "symbolicate", *dsym_args, "--mangled", orig],
                           capture_output=True, text=True, timeout=300)
        raw_text = p.stdout if p.returncode == 0 else ""
        if p.returncode != 0:
            st.mismatches.append(f"{name}: stacksift symbolicate --mangled exited {p.returncode}")
        used = {}
        for lineno, addr, fn, file, line in apple_frames(orig, sym):
            k = used.get(addr, 0)
            used[addr] = k + 1
            cands = by_addr.get(addr, [])
            where = f"{name}:{lineno + 1} 0x{addr:x}"
            if k >= len(cands):
                st.mismatches.append(f"{where}: no frame at this address in stacksift's model")
                continue
            f = cands[k]
            img = model["images"][f["image_index"]] if f.get("image_index") is not None else None
            if f.get("symbolicated") == "missing" and img and img["uuid"] not in dsym_by_uuid:
                st.missing += 1
                if args.verbose:
                    print(f"  {where}: no dSYM for {img['uuid']} ({img['name']}): Apple says {fn}")
                continue
            st.compared += 1
            o = outer(f)
            if f.get("symbolicated") != "ok" or o is None:
                st.mismatches.append(f"{where}: stacksift left it {f.get('symbolicated')}, Apple: {fn}")
                continue
            bundle, dwarf, arch = dsym_by_uuid[img["uuid"]]
            lookup = int(f["lookup_address"], 16)
            counts = []
            link = linkage_name(dwarf, arch, lookup)
            raw = o.get("mangled") or o["function"]
            o_raw = outer(by_addr_raw.get(addr, [])[k]) if k < len(by_addr_raw.get(addr, [])) else None
            if raw != link or o_raw is None or o_raw["function"] != link:
                st.mismatches.append(f"{where}: raw name {raw!r}, --mangled "
                                     f"{o_raw and o_raw['function']!r}, llvm-symbolizer {link!r}")
                continue
            ok = (name_agrees(o["function"], fn, link, counts)
                  and (os.path.basename(o["file"] or "") == (file or "")) and (o["line"] or 0) == line)
            ra = False
            if not ok:
                # Apple's atos answered for the return address itself?
                ra_addr = return_file_address(f, img)
                got = lo.stacksift_lookup(binpath, ["-o", bundle, "--arch", arch], [ra_addr]).get(ra_addr) or []
                o2 = got[-1] if got else None
                counts = []
                if ra_addr != lookup and o2 is not None and name_agrees(o2["function"], fn, linkage_name(dwarf, arch, ra_addr),
                                                            counts) \
                        and os.path.basename(o2["file"] or "") == (file or "") and (o2["line"] or 0) == line:
                    ok = ra = True
            if not ok:
                st.mismatches.append(f"{where}: stacksift {o['function']} ({o['file']}:{o['line']}), "
                                     f"Apple {fn} ({file}:{line})")
                continue
            st.ra += ra
            st.exact += counts == ["exact"]
            st.swift_raw += counts == ["exact"] and not ra and link.startswith(rx.SWIFT_PREFIXES)
            if link != o["function"] and link not in raw_text:  # the text form prints it too
                st.mismatches.append(f"{where}: symbolicate --mangled (text) does not print {link}")
            st.structure += counts == ["structure"]
            if args.verbose:
                print(f"  {where}: {counts[0]}{' return-address' if ra else ''}: {fn} ({file}:{line})")
    render_check(binpath, dsym_args, reports, st)
    agree = st.compared - len([m for m in st.mismatches if "no frame" not in m])
    print(f"real_xcode_reports: {len(reports)} reports, {st.compared} app frames compared with Apple's "
          f"symbolicated copies: {agree}/{st.compared} agree ({st.exact} exact names, "
          f"{st.structure} Swift names by structure; {st.ra} only at the return address itself, "
          f"as Apple's atos looked them up); {st.missing} frames without a dSYM of their UUID "
          f"(left unsymbolicated, as they must be); raw names: every compared frame's equals "
          f"llvm-symbolizer --no-demangle, {st.swift_raw} Swift ones demangling to Apple's name")
    for m in st.mismatches:
        print("  " + m)
    return 1 if st.mismatches else 0


def render_check(binpath, dsym_args, reports, st):
    """The sample renderer against Apple's text: our spindump (tests/golden/crashreport/
    spindump.txt) loads CrashingAndHangingTest where multi-target-crash.crash has it, so the
    call-graph line of an address Apple symbolicated in that crash must read, after the count,
    exactly as Apple's symbolicated line does ("main (in CrashingAndHangingTest) (main.m:84)")."""
    apple = {}
    for orig, sym in reports:
        if os.path.basename(orig) == "multi-target-crash.crash":
            for _, addr, fn, file, line in apple_frames(orig, sym):
                apple[addr] = f"{fn} (in CrashingAndHangingTest) ({file}:{line})"
    spin = os.path.join(os.path.dirname(HERE), "tests", "golden", "crashreport", "spindump.txt")
    p = subprocess.run([binpath, "symbolicate", *dsym_args, spin], capture_output=True, text=True, timeout=300)
    checked = 0
    for line in p.stdout.splitlines():
        m = SAMPLE_FRAME.match(line)
        if m and int(m.group(4), 16) in apple and "(in CrashingAndHangingTest)" in line:
            checked += 1
            want = f"{apple[int(m.group(4), 16)]}"
            if m.group(3) != want:
                st.mismatches.append(f"spindump.txt rendered {m.group(3)!r}, Apple's text is {want!r}")
    if checked == 0:
        st.mismatches.append("spindump.txt: no rendered call-graph line to hold against Apple's text")
    print(f"real_xcode_reports: sample rendering: {checked} call-graph lines read as Apple's symbolicated text")


def return_file_address(frame, img):
    """The file address of the frame's own (return) address: lookup_address = address - load
    + __TEXT vmaddr - (0 for frame 0, a few bytes for callers), and vmaddr is page-aligned."""
    runtime = int(frame["address"], 16) - int(img["load_address"], 16)
    lookup = int(frame["lookup_address"], 16)
    vmaddr = (lookup - runtime + 4095) // 4096 * 4096
    return runtime + vmaddr


if __name__ == "__main__":
    sys.exit(main())
