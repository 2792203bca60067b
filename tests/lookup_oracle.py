#!/usr/bin/env python3
"""lookup_oracle.py - `stacksift lookup --json` must agree with llvm-symbolizer-14 on every
fixture (ctest: lookup_oracle, label fixtures).

Env: STACKSIFT_BIN (the stacksift executable), STACKSIFT_FIXTURES (tests/fixtures/build.sh
output; built here if its manifest is missing), ORACLE_SKIP (comma-separated fixture names not
to compare, e.g. "dwarf5"; each skip is printed, so it is never silent). Options: --llvm-only checks only the oracle
side (address sampling + llvm-symbolizer), --seed N, --show N (mismatches printed), --quiet.

For every slice of every fixture in manifest.json it samples addresses over the whole
__TEXT,__text section: every line-table row address, the middle of every row's range, an
unaligned byte inside it, the return-address style address (row - 4 on arm64, - 1 on x86),
every end_sequence (just past a function) and the next instruction, every symbol start and
its middle, the section's edges and addresses outside any function. Expected frames come from

    llvm-symbolizer-14 --inlines --functions=linkage --no-demangle --output-style=JSON

(innermost first; every frame but the last is inlined). They are compared on function, file
and line with `stacksift lookup` run five ways:
    dsym    -o <.dSYM bundle> --arch A                    file addresses
    dwarf   -o <DWARF file inside the bundle> --arch A    file addresses
    symc    -o <UUID>.symc from `stacksift symcache build <bundle>`
    slide   -o <UUID>.symc -l LOAD, runtime addresses = file - __TEXT vmaddr + LOAD, LOAD random
    zip     -o <UUID>.symc from `stacksift symcache build FixtureApp-dSYMs.zip`

The only differences tolerated, each applied the same way to both sides and counted:
  demangler   names are compared in the system demangler's spelling: llvm-symbolizer's
              linkage name is demangled with libstdc++'s __cxa_demangle (what stacksift uses)
              instead of LLVM's demangler, whose spelling differs ('lambda'(int) vs
              {lambda(int)#1}, return types of local entities, substitutions). A still-mangled
              name on either side is demangled the same way.
  block       "___Z<mangled>_block_invoke[_N]" (a block in a C++ function, which
              __cxa_demangle rejects) is spelled as LLVM does: "invocation function for block
              in <demangled>".
  unknown     llvm-symbolizer's empty function ("??") means no frames; an empty file ("??")
              means file null; line 0 means line 0.
  line0-file  a frame at line 0 (compiler-generated code) may have file null in stacksift
              where llvm-symbolizer still names the file of the line-table row.
  header      an address in __TEXT before __text (the Mach-O header and load commands, no
              code) may get no frames where llvm-symbolizer names __mh_execute_header.
Raw names: each stacksift frame's raw linkage name ("mangled", else "function" when the
name does not demangle) must equal llvm-symbolizer's --no-demangle name byte for byte, with no
tolerance: symcaches store raw names since format 3 and demangle them at lookup ("raw-exact"
counts the frames whose raw name differs from their display name).
Where no DWARF covers an address llvm-symbolizer answers from the dSYM's symbol table (nearest
preceding symbol, file "??", line 0), and so must stacksift (file null, line 0): counted as
"symtab" (nodebug.c's functions have no DWARF at all, x86_64 has padding between functions).
"""
import argparse
import ctypes
import json
import os
import random
import re
import subprocess
import sys
import tempfile

SYMBOLIZER = "llvm-symbolizer-14"
DWARFDUMP = "llvm-dwarfdump-14"
NM = "llvm-nm-14"
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print(f"lookup_oracle: {msg}", file=sys.stderr)
    sys.exit(2)


def run(args, stdin=None, timeout=300):
    p = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        fail(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()[:2000]}")
    return p.stdout


# --- demangling: the system's __cxa_demangle, as stacksift uses it -----------------------

_libstdcxx = ctypes.CDLL("libstdc++.so.6")
_cxa = _libstdcxx.__cxa_demangle
_cxa.restype = ctypes.c_void_p
_cxa.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
BLOCK_RE = re.compile(r"^_{1,3}(_Z.+?)_block_invoke(_\d+)?$")
_canon_cache = {}


def cxa_demangle(name):
    status = ctypes.c_int(0)
    p = _cxa(name.encode(), None, None, ctypes.byref(status))
    if not p or status.value != 0:
        return None
    try:
        return ctypes.cast(p, ctypes.c_char_p).value.decode()
    finally:
        _libc.free(p)


_llvm_cache = {}


def llvm_demangle(name):
    """LLVM's spelling (llvm-cxxfilt-14), for the report only."""
    if name not in _llvm_cache:
        _llvm_cache[name] = run(["llvm-cxxfilt-14", name]).strip()
    return _llvm_cache[name]


def canon(name, counts=None):
    """The comparison spelling of a function name (see the header: demangler, block)."""
    if name in _canon_cache:
        out, rule = _canon_cache[name]
    else:
        out, rule = name, None
        m = BLOCK_RE.match(name)
        if m:
            inner = cxa_demangle(m.group(1))
            if inner is not None:
                out, rule = f"invocation function for block in {inner}", "block"
        elif name.startswith("_Z"):
            d = cxa_demangle(name)
            if d is not None:
                out, rule = d, "demangler"
        _canon_cache[name] = (out, rule)
    if counts is not None and rule:
        counts[rule] = counts.get(rule, 0) + 1
    return out


# --- the fixtures and their addresses ---------------------------------------------------------

def load_manifest(fixtures_dir):
    path = os.path.join(fixtures_dir, "manifest.json")
    if not os.path.exists(path):
        build = os.path.join(HERE, "fixtures", "build.sh")
        subprocess.run([build, fixtures_dir], check=True, timeout=600)
    with open(path) as f:
        return json.load(f)


def text_section(dwarf, arch):
    """(addr, size) of __TEXT,__text from the dSYM's load commands."""
    out = run(["llvm-objdump-14", "--macho", "--section-headers", f"--arch={arch}", dwarf])
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] == "__text":
            return int(parts[3], 16), int(parts[2], 16)
    fail(f"{dwarf} ({arch}) has no __text section")


def line_rows(dwarf, arch):
    """[(address, end_sequence)] of every line-table row."""
    rows = []
    out = run([DWARFDUMP, "--debug-line", f"--arch={arch}", dwarf])
    for line in out.splitlines():
        if line.startswith("0x") and len(line.split()) >= 6:
            rows.append((int(line.split()[0], 16), "end_sequence" in line))
    return rows


def symbol_starts(path, arch):
    """{address: name} of the defined symbols in __TEXT,__text (from the Mach-O symtab)."""
    out = run([NM, f"--arch={arch}", "--defined-only", "--no-sort", "-m", path])
    syms = {}
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) \(__TEXT,__text\) .*? (\S+)$", line)
        if m:
            syms[int(m.group(1), 16)] = m.group(2)
    return syms


def sample_addresses(dwarf, arch, rng):
    text_addr, text_size = text_section(dwarf, arch)
    text_end = text_addr + text_size
    step = 1 if arch.startswith(("x86", "i386")) else 4
    ret_back = 1 if step == 1 else 4
    rows = line_rows(dwarf, arch)
    syms = sorted(symbol_starts(dwarf, arch))
    addrs = {0, 1, text_addr - step, text_addr, text_end - step, text_end, text_end + 0x100,
             0xFFFFFFFFFFFFFFF0, text_addr + text_size // 2}
    for i, (a, end) in enumerate(rows):
        addrs.update((a, a - ret_back))
        if end:
            addrs.update((a + step, a + 2 * step))
        nxt = rows[i + 1][0] if i + 1 < len(rows) and not end else None
        if nxt is not None and nxt > a:
            mid = a + (nxt - a) // 2
            addrs.add(mid - mid % step)
            addrs.add(a + rng.randrange(nxt - a))
    for i, s in enumerate(syms):
        addrs.update((s, s + step))
        nxt = syms[i + 1] if i + 1 < len(syms) else text_end
        if nxt > s:
            addrs.add(s + (nxt - s) // 2)
            addrs.add(nxt - 1)
    for _ in range(200):
        addrs.add(text_addr + rng.randrange(text_size))
    return sorted(a for a in addrs if 0 <= a < 1 << 64), (text_addr, text_end)


# --- llvm-symbolizer, the oracle --------------------------------------------------------------

def symbolize(obj, arch, addrs):
    """{addr: [(function, file, line), ...] innermost first}; [] when nothing is known."""
    out = run([SYMBOLIZER, "--inlines", "--functions=linkage", "--no-demangle", "--output-style=JSON",
               f"--obj={obj}:{arch}"], stdin="".join(f"0x{a:x}\n" for a in addrs))
    result = {}
    for line in out.splitlines():
        rec = json.loads(line)
        frames = [(s["FunctionName"], s["FileName"], s["Line"]) for s in rec["Symbol"]]
        if len(frames) == 1 and frames[0][0] == "" and frames[0][2] == 0:
            frames = []
        result[int(rec["Address"], 16)] = frames
    if len(result) != len(set(addrs)):
        fail(f"llvm-symbolizer answered {len(result)} of {len(addrs)} addresses for {obj}")
    return result


def expectations(fixtures_dir, fx, sl, rng):
    """{file_addr: (frames, in_header)} for one slice; in_header marks __TEXT bytes before
    __text (Mach-O header and load commands: no code)."""
    dwarf = os.path.join(fixtures_dir, fx["dwarf"])
    addrs, (text_addr, _) = sample_addresses(dwarf, sl["arch"], rng)
    dw = symbolize(dwarf, sl["arch"], addrs)
    vmaddr = int(sl["text_vmaddr"], 16)
    return {a: (dw[a], vmaddr <= a < text_addr) for a in addrs}


# --- stacksift ----------------------------------------------------------------------------

def stacksift_lookup(binpath, args, addrs):
    out = run([binpath, "lookup", *args, "--json"], stdin="".join(f"0x{a:x}\n" for a in addrs))
    got = {}
    for line in out.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            got[int(rec["address"], 16)] = rec["frames"]
        except (ValueError, KeyError, TypeError) as e:
            fail(f"stacksift lookup {' '.join(args)} printed a bad line ({e}): {line[:300]}")
    return got


class Stats:
    def __init__(self, show):
        self.show = show
        self.addresses = 0
        self.frames = 0
        self.mismatches = []
        self.rules = {}
        self.modes = {}
        self.llvm_spelling_differs = 0
        self.raw_exact = 0  # frames whose raw name ("mangled") matched llvm's --no-demangle name

    def rule(self, name):
        self.rules[name] = self.rules.get(name, 0) + 1


def frame_matches(exp, got, inlined, st):
    """Compare one expected (function, file, line) with one stacksift frame dict."""
    if not isinstance(got, dict):
        return False
    fn, file, line = exp
    if canon(got.get("function") or "") != canon(fn):
        return False
    raw = got.get("mangled") or got.get("function")
    if fn and raw != fn:
        return False  # the raw name must be llvm-symbolizer's --no-demangle name exactly
    if fn and got.get("mangled") is not None:
        st.raw_exact += 1
    if got.get("line") != line or bool(got.get("inlined")) != inlined:
        return False
    gfile = got.get("file")
    if file == "":
        return gfile is None
    if gfile == file:
        return True
    if line == 0 and gfile is None:
        st.rule("line0-file")
        return True
    return False


def compare(fixture, mode, exp, got, runtime_of, st):
    st.modes[mode] = st.modes.get(mode, 0) + len(exp)
    for a, (frames, in_header) in exp.items():
        ra = runtime_of(a)
        st.addresses += 1
        st.frames += len(frames)
        g = got.get(ra)
        ok = isinstance(g, list) and len(g) == len(frames) and all(
            frame_matches(f, gf, i < len(frames) - 1, st) for i, (f, gf) in enumerate(zip(frames, g)))
        if ok and len(frames) == 1 and frames[0][1] == "" and frames[0][2] == 0:
            st.rule("symtab")
        if not ok and in_header and g == []:
            ok = True
            st.rule("header")
        if not ok:
            want = [[canon(fn), file, line] for fn, file, line in frames]
            st.mismatches.append(f"{fixture} {mode} 0x{ra:x} (file 0x{a:x}): want {want} got {g}")


def build_symcaches(binpath, inp, outdir):
    """{(uuid, arch): path} from `stacksift symcache build`'s JSON lines."""
    out = run([binpath, "symcache", "build", inp, "-o", outdir])
    built = {}
    for line in out.splitlines():
        if line.strip():
            rec = json.loads(line)
            built[(rec["uuid"].upper(), rec["arch"])] = os.path.join(outdir, rec["uuid"] + ".symc")
    return built


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llvm-only", action="store_true")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ORACLE_SEED", "20240601")))
    ap.add_argument("--show", type=int, default=20)
    args = ap.parse_args()
    fixtures_dir = os.environ.get("STACKSIFT_FIXTURES") or fail("STACKSIFT_FIXTURES is not set")
    binpath = os.environ.get("STACKSIFT_BIN")
    if not args.llvm_only and not (binpath and os.access(binpath, os.X_OK)):
        fail("STACKSIFT_BIN is not set or not executable")
    rng = random.Random(args.seed)
    manifest = load_manifest(fixtures_dir)
    st = Stats(args.show)
    by_uuid = {}
    nslices = 0
    with tempfile.TemporaryDirectory(prefix="stacksift-oracle.") as tmp:
        skip = {n for n in os.environ.get("ORACLE_SKIP", "").split(",") if n}
        for fx in manifest["fixtures"]:
            if fx["name"] in skip:
                print(f"lookup_oracle: SKIPPED fixture {fx['name']} (ORACLE_SKIP)")
                continue
            dsym = os.path.join(fixtures_dir, fx["dsym"])
            dwarf = os.path.join(fixtures_dir, fx["dwarf"])
            symcs = {}
            if not args.llvm_only:
                outdir = os.path.join(tmp, fx["name"])
                os.makedirs(outdir)
                symcs = build_symcaches(binpath, dsym, outdir)
                if len(symcs) != len(fx["slices"]):
                    st.mismatches.append(f"{fx['name']} symcache build wrote {len(symcs)} symcaches "
                                         f"for {len(fx['slices'])} slices: {sorted(symcs)}")
            for sl in fx["slices"]:
                nslices += 1
                name = f"{fx['name']}/{sl['arch']}"
                exp = expectations(fixtures_dir, fx, sl, rng)
                by_uuid[sl["uuid"]] = (name, exp, sl)
                ident = lambda a: a
                if args.llvm_only:
                    st.addresses += len(exp)
                    st.frames += sum(len(f) for f, _ in exp.values())
                    for f, _ in exp.values():
                        for fn, _, _ in f:
                            if fn.startswith("_Z") and canon(fn) != llvm_demangle(fn):
                                st.llvm_spelling_differs += 1
                    continue
                addrs = sorted(exp)
                arch = ["--arch", sl["arch"]]
                compare(name, "dsym", exp, stacksift_lookup(binpath, ["-o", dsym, *arch], addrs), ident, st)
                compare(name, "dwarf", exp, stacksift_lookup(binpath, ["-o", dwarf, *arch], addrs), ident, st)
                symc = symcs.get((sl["uuid"], sl["arch"]))
                if symc is None:
                    st.mismatches.append(f"{name}: no symcache built for {sl['uuid']} {sl['arch']}")
                    continue
                compare(name, "symc", exp, stacksift_lookup(binpath, ["-o", symc], addrs), ident, st)
                vmaddr = int(sl["text_vmaddr"], 16)
                load = 0x100000000 + rng.randrange(1, 1 << 20) * 0x4000
                slide = lambda a, load=load, vmaddr=vmaddr: (a - vmaddr + load) % (1 << 64)
                runtime = [slide(a) for a in addrs]
                compare(name, "slide", exp, stacksift_lookup(binpath, ["-o", symc, "-l", hex(load)], runtime),
                        slide, st)
        for z in manifest.get("zips", []):
            if args.llvm_only:
                break
            outdir = os.path.join(tmp, "zip-" + os.path.basename(z["path"]))
            os.makedirs(outdir)
            symcs = build_symcaches(binpath, os.path.join(fixtures_dir, z["path"]), outdir)
            want = {(sl["uuid"], sl["arch"]) for fx in manifest["fixtures"] if fx["name"] in z["fixtures"]
                    for sl in fx["slices"]}
            if set(symcs) != want:
                st.mismatches.append(f"zip {z['path']}: built {sorted(symcs)}, want {sorted(want)}")
            for (uuid, arch), symc in sorted(symcs.items()):
                if uuid in by_uuid:
                    name, exp, _ = by_uuid[uuid]
                    compare(name, "zip", exp, stacksift_lookup(binpath, ["-o", symc], sorted(exp)),
                            lambda a: a, st)

    inl = sum(1 for _, exp, _ in by_uuid.values() for f, _ in exp.values() if len(f) > 1)
    sym = sum(1 for _, exp, _ in by_uuid.values() for f, _ in exp.values()
              if len(f) == 1 and f[0][1] == "" and f[0][2] == 0)
    print(f"lookup_oracle: {len(manifest['fixtures'])} fixtures, {nslices} slices, "
          f"{len(by_uuid)} UUIDs, {sum(len(e) for _, e, _ in by_uuid.values())} sampled addresses "
          f"({inl} with inlined frames, {sym} from the symbol table only)")
    if args.llvm_only:
        print(f"lookup_oracle: llvm-only: {st.addresses} addresses, {st.frames} expected frames, "
              f"{st.llvm_spelling_differs} frames whose name LLVM's demangler spells differently")
        return 0
    print(f"lookup_oracle: {st.addresses} lookups compared ({', '.join(f'{k} {v}' for k, v in st.modes.items())}),"
          f" {st.frames} frames")
    print(f"lookup_oracle: tolerated: {', '.join(f'{k} {v}' for k, v in sorted(st.rules.items())) or 'none'}")
    print(f"lookup_oracle: raw names: {st.raw_exact} frames with a \"mangled\" name other than their "
          f"display name, all equal to llvm-symbolizer --no-demangle")
    print(f"lookup_oracle: {len(st.mismatches)} mismatches")
    for m in st.mismatches[:args.show]:
        print("  " + m)
    return 1 if st.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
