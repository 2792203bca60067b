#!/usr/bin/env python3
"""real_dsyms.py - every slice of the real Apple-built dSYMs in ../shared/real-dsyms/ builds a
symcache, and its lookups agree with llvm-symbolizer-14 (ctest: real_dsyms, label fixtures).

Env: STACKSIFT_BIN, STACKSIFT_SOURCE_DIR (../shared is found beside it; STACKSIFT_REAL_DSYMS
overrides the folder), REAL_DSYMS_CAP (default of --cap). Options: --seed N, --show N
(mismatches printed), --min PERCENT (default 100), --cap N (addresses per slice, default 12000).

The folder (see its SOURCE.md) holds dSYMs from Xcode 7 to Xcode 26: DWARF 2-5, empty compile
units of 2017's dsymutil, DW_AT_MIPS_linkage_name, C++ methods whose DWARF has no linkage name
(-dwarf-linkage-names=Abstract), fat files, zips, bare DWARF files (any Mach-O file of type
MH_DSYM, whatever its name) and App Store dSYMs of bitcode recompiled by Apple (line-0 rows,
several rows at one address, inlinees with no name or call line, units whose ranges leave out
code their functions describe). Each is given to `stacksift symcache build` as it is (a zip, a
bundle or a file); every slice (llvm-dwarfdump --uuid) must come out as a symcache. A hidden
App Store dSYM whose UUID map and BCSymbolMap lie beside it (symbolic-bitcode) is built
revealed, so llvm-symbolizer's `__hidden#N_` answers are revealed with the same map before
they are compared (`reveal`: line N of the map, docs/app-store-dsyms.md). Addresses
are sampled as lookup_oracle.py samples them (every line-table row and the address before it,
row and symbol midpoints, symbol starts, random __text addresses, and some outside __text),
plus addresses inside compiler-generated code (every instruction of a line-0 row, up to 32 a
row, and the one after it; the instruction after every address holding several rows); at
most --cap a slice, half of them from compiler-generated code where there are that many (a
seeded draw: the same addresses every run). They are looked up with `stacksift lookup -o
<UUID>.symc`; expected frames come from

    llvm-symbolizer-14 --inlines --functions=linkage --no-demangle --output-style=JSON

(innermost first), compared on the inline chain, function, file and line the way
real_xcode_dwarf.py compares them; a frame llvm names "" in JSON (an inlinee whose DWARF names
nothing) is its text output's "??", which stacksift prints. An address agrees when every
frame matches, or when it differs only by one of these policies, each counted apart and
printed (neither is a difference in what the DWARF or the symbol table says):
  - "outside-text": an address outside __text (sampled like lookup_oracle.py samples) that
    llvm-symbolizer names by a data symbol (GCC_except_table1, a constant string) where
    stacksift, whose symbol table holds only functions, answers nothing;
  - "padding": llvm-symbolizer answers nothing and stacksift names the symbol-table function
    whose range the address falls in (Mach-O symbols have no size: the bytes after a function's
    last line-table row up to the next symbol are padding, ours run to the next symbol).
Each slice must agree on every address (--min 100); the per-slice table is printed.
"""
import argparse
import json
import os
import random
import re
import struct
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lookup_oracle as lo  # noqa: E402
import real_xcode_dwarf as rx  # noqa: E402  (name comparison, llvm --functions=short)

# Swift 2-3 linkage names (_TF..., _TTo..., _TTS...) are Swift names too: compared in the form
# `stacksift demangle --simplified` gives them, like $s... names
rx.SWIFT_PREFIXES = rx.SWIFT_PREFIXES + ("_T",)
_rx_name_matches = rx.name_matches


def name_matches(got, linkage, short, counts):
    """real_xcode_dwarf's rules, and lookup_oracle's canonical spelling on both sides (a block
    in a C++ function, ___Z..._block_invoke, is "invocation function for block in ...")."""
    if _rx_name_matches(got, linkage, short, counts):
        return True
    if lo.canon(got) == lo.canon(linkage):
        counts["canon"] = counts.get("canon", 0) + 1
        return True
    return False


rx.name_matches = name_matches


def fail(msg):
    print(f"real_dsyms: {msg}", file=sys.stderr)
    sys.exit(2)


def real_dsyms_dir():
    d = os.environ.get("STACKSIFT_REAL_DSYMS")
    if not d:
        src = os.environ.get("STACKSIFT_SOURCE_DIR") or os.path.dirname(HERE)
        d = os.path.join(src, "..", "shared", "real-dsyms")
    if not os.path.isdir(d):
        fail(f"no real dSYMs at {d}")
    return os.path.abspath(d)


MH_DSYM = 0xA


def is_dsym_file(path):
    """A Mach-O dSYM companion file (filetype MH_DSYM; of a fat file, its first slice), whatever
    its name: a bare DWARF file (`-dwarf`, `.dwarf-hidden`), not the executable beside a bundle."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if len(head) < 16:
        return False
    magic = struct.unpack_from("<I", head, 0)[0]
    if magic in (0xFEEDFACE, 0xFEEDFACF):
        return struct.unpack_from("<I", head, 12)[0] == MH_DSYM
    if struct.unpack_from(">I", head, 0)[0] in (0xCAFEBABE, 0xCAFEBABF) and struct.unpack_from(">I", head, 4)[0] >= 1:
        fat64 = struct.unpack_from(">I", head, 0)[0] == 0xCAFEBABF
        off = struct.unpack_from(">Q", head, 16)[0] if fat64 else struct.unpack_from(">I", head, 16)[0]
        with open(path, "rb") as f:
            f.seek(off)
            sub = f.read(16)
        return len(sub) == 16 and struct.unpack_from("<I", sub, 12)[0] == MH_DSYM
    return False


def inputs(root, tmp):
    """[(label, what to give `symcache build`, [DWARF files in it])]: each .dSYM bundle, each
    zip (unpacked here to find its DWARF files for llvm), each bare DWARF file. Mach-O
    binaries beside a bundle (the executable the dSYM belongs to) are not dSYMs: left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for dn in list(dirnames):
            if dn.endswith(".dSYM"):
                dw = os.path.join(dirpath, dn, "Contents", "Resources", "DWARF")
                files = [os.path.join(dw, f) for f in sorted(os.listdir(dw))]
                out.append((os.path.relpath(os.path.join(dirpath, dn), root), os.path.join(dirpath, dn), files))
        dirnames[:] = [d for d in dirnames if not d.endswith(".dSYM")]
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            if fn.endswith(".zip"):
                dest = os.path.join(tmp, "unzipped", fn)
                with zipfile.ZipFile(p) as z:
                    z.extractall(dest)
                files = []
                for dp, _, fns in os.walk(dest):
                    if os.path.basename(dp) == "DWARF":
                        files += [os.path.join(dp, f) for f in sorted(fns)]
                out.append((os.path.relpath(p, root), p, sorted(files)))
            elif is_dsym_file(p):
                out.append((os.path.relpath(p, root), p, [p]))
    return sorted(out)


def line_table(dwarf, arch):
    """[(address, line, end_sequence)] of every line-table row, in program order."""
    rows = []
    for line in lo.run([lo.DWARFDUMP, "--debug-line", f"--arch={arch}", dwarf]).splitlines():
        parts = line.split()
        if line.startswith("0x") and len(parts) >= 6:
            rows.append((int(parts[0], 16), int(parts[1]), "end_sequence" in line))
    return rows


def generated_code_addresses(dwarf, arch, text):
    """Addresses inside compiler-generated code: every instruction of a line-table row with
    line 0 (up to 32 per row: prologue and epilogue code, spills, outlined and merged code,
    Apple's bitcode recompilation), the instruction after it, and the instruction after every
    address that holds several rows (a line-0 row and a real one)."""
    step = 1 if arch.startswith(("x86", "i386")) else 4
    rows = line_table(dwarf, arch)
    out = set()
    for i, (a, line, end) in enumerate(rows[:-1]):
        nxt = rows[i + 1][0]
        if end or not (text[0] <= a < text[1]):
            continue
        if nxt == a:
            out.update((a, a + step))
        elif line == 0 and nxt > a:
            out.update(range(a, min(nxt, a + 32 * step), step))
            out.update((nxt - step, nxt))
    return out


def outside_text(frames, got, addr, text):
    """An address outside __text that llvm-symbolizer names by a symbol that is not code
    (GCC_except_table1, a constant): stacksift's symbol table holds functions only."""
    return not (text[0] <= addr < text[1]) and got == [] and len(frames) == 1 and frames[0][2] == 0


def padding(frames, got, syms, addr):
    """llvm-symbolizer knows nothing of `addr`; stacksift names the symbol it falls after."""
    if frames or not isinstance(got, list) or len(got) != 1:
        return False
    starts = [s for s in syms if s <= addr]
    return bool(starts) and (got[0].get("mangled") or got[0].get("function")) in (
        syms[max(starts)], syms[max(starts)].lstrip("_"))


HIDDEN = re.compile(r"__hidden#(\d+)_")


def maps_beside(given, uuid):
    """The BCSymbolMap `stacksift symcache build` finds beside a bare DWARF file `given` for
    slice `uuid` (docs/app-store-dsyms.md): its UUID map `<uuid>.plist` names the original
    build, whose `<original>.bcsymbolmap` holds one string a line after its header. The lines,
    or None (no maps there: a bundle or zip carries its own and none of these has a map)."""
    if not os.path.isfile(given):
        return None
    d = os.path.dirname(given)

    def find(u, ext):
        for name in (u.upper() + ext, u.lower() + ext):
            if os.path.isfile(os.path.join(d, name)):
                return os.path.join(d, name)
        return None
    key = uuid
    plist = find(uuid, ".plist")
    if plist:
        m = re.search(r"<key>DBGOriginalUUID</key>\s*<string>([0-9A-Fa-f-]{36})</string>",
                      open(plist, encoding="utf-8").read())
        key = m.group(1) if m else uuid
    path = find(key, ".bcsymbolmap")
    return open(path, encoding="utf-8").read().split("\n")[1:-1] if path else None


def reveal(name, lines):
    """`name` as llvm-symbolizer gives it, revealed by the map's `lines` the way the reveal is
    specified: every `__hidden#N_` is line N; a whole `_hidden#N_` (a symbol-table name whose
    Mach-O underscore llvm strips too) is line N less one leading underscore."""
    if not name:
        return name
    m = re.fullmatch(r"_hidden#(\d+)_", name)
    if m and int(m.group(1)) < len(lines):
        line = lines[int(m.group(1))]
        return line[1:] if line.startswith("_") else line
    return HIDDEN.sub(lambda h: lines[int(h.group(1))] if int(h.group(1)) < len(lines)
                      else h.group(0), name)


def cap_sample(addrs, generated, cap, rng):
    """At most `cap` addresses of the sample and the compiler-generated ones together, half of
    them (when there are that many) generated, the rest drawn from the usual sample; sorted."""
    gen = sorted(generated)
    rest = sorted(set(addrs) - generated)
    if len(gen) + len(rest) <= cap:
        return sorted(gen + rest)
    ngen = min(len(gen), max(cap // 2, cap - len(rest)))
    pick = rng.sample(gen, ngen) + rng.sample(rest, min(len(rest), cap - ngen))
    return sorted(pick)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ORACLE_SEED", "20240601")))
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--min", type=float, default=100.0)
    ap.add_argument("--cap", type=int, default=int(os.environ.get("REAL_DSYMS_CAP", "12000")),
                    help="addresses sampled per slice at most")
    args = ap.parse_args()
    binpath = os.environ.get("STACKSIFT_BIN")
    if not (binpath and os.access(binpath, os.X_OK)):
        fail("STACKSIFT_BIN is not set or not executable")
    root = real_dsyms_dir()
    rows, shown, bad = [], [], []
    totals = {"addresses": 0, "agree": 0}
    policy = {}
    names = {}  # frames, inlined addresses, and frames matched by each name rule
    with tempfile.TemporaryDirectory(prefix="stacksift-realdsyms.") as tmp:
        for label, given, dwarfs in inputs(root, tmp):
            outdir = os.path.join(tmp, "symc", label.replace("/", "_"))
            os.makedirs(outdir)
            symcs = lo.build_symcaches(binpath, given, outdir)
            for dwarf in dwarfs:
                for arch, uuid in rx.slices(dwarf):
                    name = f"{label}/{arch}"
                    symc = symcs.get((uuid, arch))
                    if symc is None:
                        bad.append(f"{name}: symcache build wrote no symcache for {uuid}")
                        rows.append((name, 0, 0, {}, 0))
                        continue
                    rng = random.Random(f"{args.seed}:{uuid}")
                    text_addr, text_size = lo.text_section(dwarf, arch)
                    if text_size > 0:
                        addrs, _ = lo.sample_addresses(dwarf, arch, rng)
                        gen = generated_code_addresses(dwarf, arch, (text_addr, text_addr + text_size))
                        addrs = cap_sample(addrs, gen, args.cap, rng)
                        ngen = len(gen & set(addrs))
                    else:  # no code (an empty framework slice): it must still answer nothing
                        addrs, ngen = [0, 1, text_addr, text_addr + 0x100], 0
                    exp = lo.symbolize(dwarf, arch, addrs)
                    for frames in exp.values():  # llvm's JSON "" is the "??" of its text output
                        frames[:] = [(fn or "??", file, line) for fn, file, line in frames]
                    shorts = rx.short_names(dwarf, arch, addrs)
                    syms = lo.symbol_starts(dwarf, arch)
                    # an App Store dSYM with its maps beside it is built revealed: llvm's
                    # hidden answers are revealed with the same map for the comparison
                    lines = maps_beside(given, uuid)
                    if lines is not None:
                        for a in exp:
                            exp[a] = [(reveal(fn, lines), reveal(file, lines), line)
                                      for fn, file, line in exp[a]]
                            shorts[a] = [reveal(n, lines) for n in shorts.get(a, [])]
                        syms = {a: reveal(n, lines) for a, n in syms.items()}
                        names["revealed-by-map"] = names.get("revealed-by-map", 0) + len(exp)
                    got = lo.stacksift_lookup(binpath, ["-o", symc], addrs)
                    counts, mism = {}, []
                    rx.compare(name, addrs, exp, shorts, got, counts, mism)
                    for k, v in counts.items():
                        names[k] = names.get(k, 0) + v
                    pol = {}
                    left = []
                    for m in mism:
                        a = int(m.split(" 0x")[1].split(":")[0], 16)
                        if padding(exp[a], got.get(a), syms, a):
                            pol["padding"] = pol.get("padding", 0) + 1
                        elif outside_text(exp[a], got.get(a), a, (text_addr, text_addr + text_size)):
                            pol["outside-text"] = pol.get("outside-text", 0) + 1
                        else:
                            left.append(m)
                    for k, v in pol.items():
                        policy[k] = policy.get(k, 0) + v
                    agree = len(addrs) - len(left)
                    totals["addresses"] += len(addrs)
                    totals["agree"] += agree
                    rows.append((name, len(addrs), agree, pol, ngen))
                    shown += left
                    if 100.0 * agree / len(addrs) < args.min:
                        bad.append(f"{name}: {agree}/{len(addrs)} agree, under {args.min}%")
    print(f"real_dsyms: frames, addresses with inlined frames, and the name rules used: " + ", ".join(f"{k} {v}" for k, v in sorted(names.items())))
    print(f"real_dsyms: {len(rows)} slices, {totals['addresses']} addresses; per slice "
          f"(agree/sampled, policy differences counted apart):")
    for name, n, agree, pol, ngen in rows:
        pct = f"{100.0 * agree / n:7.3f}%" if n else "   none"
        extra = ", ".join(f"{k} {v}" for k, v in sorted(pol.items()))
        print(f"  {name:70s} {agree:6d}/{n:<6d} {pct}  ({ngen} in generated code"
              + (f"; {extra})" if extra else ")"))
    if totals["addresses"]:
        print(f"real_dsyms: agreement with llvm-symbolizer-14: {totals['agree']}/{totals['addresses']} "
              f"({100.0 * totals['agree'] / totals['addresses']:.3f}%); policy differences: "
              + (", ".join(f"{k} {v}" for k, v in sorted(policy.items())) or "none"))
    for m in shown[:args.show]:
        print("  " + m)
    for b in bad:
        print("real_dsyms: FAIL " + b)
    if not rows:
        fail(f"no dSYM slices under {root}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
