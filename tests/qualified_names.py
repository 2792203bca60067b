#!/usr/bin/env python3
"""qualified_names.py - one function groups alike whether its dSYM has linkage names or not
(ctest: qualified_names, label fixtures).

Builds tests/qualified/scopes.cpp (namespaces, a class, an anonymous namespace, inlined
methods) for arm64-apple-ios with clang-14 -O2 -g, links it with ld64.lld-14 and makes its
dSYM with dsymutil-14, three times from one object's code:
  linkage    as compiled: every function has DW_AT_linkage_name
  plain      the same object with DW_AT_linkage_name renamed to DW_AT_description in
             .debug_abbrev (clang-14 has no switch that drops them all: -dwarf-linkage-names
             knows only All and Abstract), as an App Store Swift build names functions by
             DW_AT_name alone
  swift      plain, with the unit's DW_AT_language set to DW_LANG_Swift (0x1e)
Checks, on every address of __text where llvm-symbolizer gives an inlined frame:
  - `stacksift signature` of a report crashing there gives the same fingerprint and frames
    with the linkage and the plain dSYM;
  - the plain dSYM's frames are qualified by their namespaces and class
    ("ns::Widget::area", "ns::(anonymous namespace)::helper") while showing the name as DWARF
    gives it ("area"), and a Swift unit joins them with ".";
and runs tests/lookup_oracle.py over the three dSYMs (llvm-symbolizer display parity).
With the test cluster (STACKSIFT_TEST_DATABASE_URL), a server given the plain dSYM groups one
report posted four times into one issue, the later ones served from its stack cache.
Env: STACKSIFT_BIN (web_instance's STACKSIFT_SOURCE_DIR and STACKSIFT_FIXTURES for the server).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CC, LD, DSYMUTIL, SYMBOLIZER = "clang-14", "ld64.lld-14", "dsymutil-14", "llvm-symbolizer-14"
DW_AT_linkage_name, DW_AT_description, DW_AT_language = 0x6E, 0x5A, 0x13
DW_LANG_Swift = 0x1E
failures = []


def fail(msg):
    print(f"qualified_names: FAIL {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        failures.append(msg)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if p.returncode not in (0, 1) or (p.returncode == 1 and not kw.get("ok1")):
        fail(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[:400]}")
    return p.stdout


def uleb(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def sleb_skip(b, i):
    while b[i] & 0x80:
        i += 1
    return i + 1


def sections(obj):
    """{name: (file offset, size)} of a 64-bit Mach-O object's sections."""
    magic, _, _, _, ncmds, _, _, _ = struct.unpack_from("<8I", obj, 0)
    if magic != 0xFEEDFACF:
        fail("not a 64-bit Mach-O object")
    out, at = {}, 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<2I", obj, at)
        if cmd == 0x19:  # LC_SEGMENT_64
            nsects = struct.unpack_from("<I", obj, at + 64)[0]
            for k in range(nsects):
                s = at + 72 + 80 * k
                name = obj[s:s + 16].rstrip(b"\0").decode()
                _, ssize, off = struct.unpack_from("<QQI", obj, s + 32)
                out[name] = (off, ssize)
        at += size
    return out


def abbrevs(obj, off, size):
    """{code: [(attr, form, attr byte offset)]} of the one abbreviation table."""
    table, i, end = {}, off, off + size
    while i < end:
        code, i = uleb(obj, i)
        if code == 0:
            continue
        _, i = uleb(obj, i)
        i += 1  # children
        specs = []
        while True:
            at_pos = i
            attr, i = uleb(obj, i)
            form, i = uleb(obj, i)
            if attr == 0 and form == 0:
                break
            if form == 0x21:  # DW_FORM_implicit_const
                i = sleb_skip(obj, i)
            specs.append((attr, form, at_pos))
        table[code] = specs
    return table


FIXED = {0x0E: 4, 0x05: 2, 0x0B: 1, 0x06: 4, 0x07: 8, 0x17: 4, 0x01: 8, 0x19: 0, 0x0C: 1,
         0x25: 1, 0x26: 2, 0x28: 4, 0x1B: 8, 0x11: 1, 0x12: 2, 0x13: 4}


def edit_object(src, dst, swift):
    """Copy object `src` to `dst` without linkage names (and as a Swift unit if `swift`)."""
    obj = bytearray(open(src, "rb").read())
    secs = sections(obj)
    aoff, asize = secs["__debug_abbrev"]
    table = abbrevs(obj, aoff, asize)
    renamed = 0
    for specs in table.values():
        for attr, _, pos in specs:
            if attr == DW_AT_linkage_name:
                obj[pos] = DW_AT_description  # one byte each: 0x6e and 0x5a are < 0x80
                renamed += 1
    if renamed == 0:
        fail(f"{src} has no DW_AT_linkage_name to remove")
    if swift:
        ioff, _ = secs["__debug_info"]
        version = struct.unpack_from("<H", obj, ioff + 4)[0]
        if version != 4:
            fail(f"expected a DWARF 4 unit, got version {version}")
        code, i = uleb(obj, ioff + 11)
        for attr, form, _ in table[code]:
            if attr == DW_AT_language:
                if form != 0x05:
                    fail(f"DW_AT_language has form {form:#x}, not data2")
                struct.pack_into("<H", obj, i, DW_LANG_Swift)
                break
            if form not in FIXED:
                fail(f"unit DIE form {form:#x} before DW_AT_language")
            i += FIXED[form]
        else:
            fail("unit DIE has no DW_AT_language")
    open(dst, "wb").write(obj)


def build(tmp):
    """The three builds: {variant: (dsym, binary, uuid)}."""
    obj = os.path.join(tmp, "scopes.o")
    run([CC, "-target", "arm64-apple-ios14.0", "-O2", "-g", "-gdwarf-4", "-x", "c++", "-std=c++17",
         "-nostdinc++", "-fno-omit-frame-pointer", "-c", os.path.join(HERE, "qualified", "scopes.cpp"),
         "-o", obj])
    out = {}
    for variant in ("linkage", "plain", "swift"):
        d = os.path.join(tmp, variant)
        os.makedirs(os.path.join(d, "Scopes.app"))
        vobj = os.path.join(d, "scopes.o")
        if variant == "linkage":
            shutil.copy(obj, vobj)
        else:
            edit_object(obj, vobj, variant == "swift")
        binary = os.path.join(d, "Scopes.app", "Scopes")
        run([LD, "-arch", "arm64", "-platform_version", "ios", "14.0", "14.0", "-undefined",
             "dynamic_lookup", "-o", binary, vobj])
        dsym = os.path.join(d, "Scopes.app.dSYM")
        run([DSYMUTIL, binary, "-o", dsym])
        dwarf = os.path.join(dsym, "Contents", "Resources", "DWARF", "Scopes")
        uuid = None
        for line in run(["llvm-dwarfdump-14", "--uuid", dwarf]).splitlines():
            if line.startswith("UUID:"):
                uuid = line.split()[1]
        if uuid is None:
            fail(f"{dwarf}: no UUID")
        out[variant] = (dsym, dwarf, binary, uuid)
    return out


def text_section(dwarf):
    for line in run(["llvm-objdump-14", "--macho", "--section-headers", dwarf]).splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] == "__text":
            return int(parts[3], 16), int(parts[2], 16)
    fail(f"{dwarf} has no __text")


def inlined_addresses(dwarf):
    """Addresses of __text (every 4 bytes) where llvm-symbolizer gives an inlined frame."""
    start, size = text_section(dwarf)
    addrs = [start + k for k in range(0, size, 4)]
    out = run([SYMBOLIZER, "--inlines", "--output-style=JSON", "--obj", dwarf] + [hex(a) for a in addrs])
    answers = []
    for line in out.splitlines():  # one array, or one object a line
        v = json.loads(line)
        answers.extend(v if isinstance(v, list) else [v])
    return [int(a["Address"], 16) for a in answers if len(a.get("Symbol", [])) > 1]


def report(path, uuid, addr):
    """An Apple crash report whose crashed thread has one frame, in Scopes at `addr`."""
    app = "/private/var/containers/Bundle/Application/AAAA/Scopes.app/Scopes"
    text = ("Incident Identifier: 11111111-2222-3333-4444-555555555555\n"
            "Hardware Model:      iPhone14,5\nProcess:             Scopes [1]\n"
            f"Path:                {app}\nIdentifier:          com.example.scopes\n"
            "Version:             1.0 (1)\nCode Type:           ARM-64 (Native)\n"
            "OS Version:          iPhone OS 17.0 (21A329)\nReport Version:      104\n\n"
            "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\n\nThread 0 Crashed:\n"
            f"0   Scopes  \t{addr:#018x} 0x100000000 + {addr - 0x100000000}\n\n"
            "Binary Images:\n"
            f"0x100000000 - 0x100007fff Scopes arm64  <{uuid.replace('-', '').lower()}> {app}\n")
    with open(path, "w") as f:
        f.write(text)


def signature(binpath, dsym, path):
    out = run([binpath, "signature", "--dsym", dsym, path])
    return json.loads(out.splitlines()[0])


def server_cache_keeps_qualified_names(tmp, builds, addr):
    """The server's stack cache serves a stack of the plain dSYM grouped as when it was first
    symbolicated: its qualified names ("ns::Widget::area", made in the report's arena) are
    kept in the cache's own copy. The same report is posted four times, each processed before
    the next, so that the later ones are served from the cache after the first report's arena
    is gone: one issue of four reports, named with its scopes. A dangling name is a
    use-after-free under ASan, and another fingerprint (a second issue) when the freed bytes
    were reused. Needs the test cluster (STACKSIFT_TEST_DATABASE_URL); skipped without it."""
    if not os.environ.get("STACKSIFT_TEST_DATABASE_URL"):
        print("qualified_names: no STACKSIFT_TEST_DATABASE_URL, server check skipped")
        return
    sys.path.insert(0, HERE)
    import web_instance
    _, dwarf, _, uuid = builds["plain"]
    path = os.path.join(tmp, "server.crash")
    report(path, uuid, addr)
    body = open(path, "rb").read()
    with web_instance.Instance("qualified") as inst:
        with open(dwarf, "rb") as f:
            r = inst.request("POST", "/api/v1/dsyms?name=Scopes", f.read(),
                             token=inst.tokens["upload"], timeout=120)
        check(r.status in (200, 201), f"plain dSYM upload: {r.status} {r.body[:200]!r}")
        for i in range(4):
            r = inst.request("POST", "/api/v1/reports", body, token=inst.tokens["ingest"],
                             headers={"Content-Type": "text/plain"})
            check(r.status == 202, f"report {i + 1} of 4: {r.status} {r.body[:200]!r}")
            check(inst.wait_processed(60), f"report {i + 1} of 4 not processed within 60 s")
        got = inst.psql(inst.db_url, "SELECT count(DISTINCT issue_id), count(*) FROM reports "
                                     "WHERE status = 'processed'").strip()
        check(got == "1|4", f"four posts of one report: issues|processed reports {got}, want 1|4")
        frames = inst.psql(inst.db_url, "SELECT frames::text FROM issues").strip()
        check("ns::" in frames, f"the issue's frames lack their scopes: {frames[:300]}")
        if inst.proc.poll() is not None:
            check(False, f"the server exited: {inst.tail_log()}")


def main():
    binpath = os.environ.get("STACKSIFT_BIN")
    if not (binpath and os.access(binpath, os.X_OK)):
        fail("STACKSIFT_BIN is not set or not executable")
    for tool in (CC, LD, DSYMUTIL, SYMBOLIZER, "llvm-dwarfdump-14", "llvm-objdump-14"):
        if shutil.which(tool) is None:
            fail(f"required tool {tool} not found (deploy/install-deps.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="stacksift-qualified.") as tmp:
        builds = build(tmp)
        addrs = inlined_addresses(builds["linkage"][1])
        check(len(addrs) >= 2, f"only {len(addrs)} addresses with inlined frames")
        seen = set()
        for addr in addrs:
            sig = {}
            for variant, (dsym, _, _, uuid) in builds.items():
                path = os.path.join(tmp, f"{variant}-{addr:x}.crash")
                report(path, uuid, addr)
                sig[variant] = signature(binpath, dsym, path)
            lk, pl, sw = sig["linkage"], sig["plain"], sig["swift"]
            check(lk.get("basis") == "in_app", f"{addr:#x}: linkage build basis {lk.get('basis')}")
            names = [f["function"] for f in lk.get("frames", [])]
            check(lk.get("fingerprint") == pl.get("fingerprint"),
                  f"{addr:#x}: fingerprints differ: linkage {names}, plain "
                  f"{[f['function'] for f in pl.get('frames', [])]}")
            top = pl["frames"][0] if pl.get("frames") else {}
            # the inlined frame: DW_AT_name shown, the scopes in the signature's name
            check("::" in top.get("function", "") and "::" not in (top.get("raw") or "::"),
                  f"{addr:#x}: plain top frame {top}")
            seen.add(top.get("function"))
            stop = sw["frames"][0] if sw.get("frames") else {}
            check(stop.get("function") == top.get("function", "").replace("::", "."),
                  f"{addr:#x}: Swift unit's top frame {stop}, want {top.get('function')} with '.'")
        check({"ns::Widget::area", "ns::(anonymous namespace)::helper"} <= seen,
              f"inlined frames seen: {sorted(seen)}")
        if addrs:
            server_cache_keeps_qualified_names(tmp, builds, addrs[0])
        # display parity with llvm-symbolizer over the three dSYMs
        manifest = {"fixtures": []}
        for variant, (dsym, dwarf, binary, uuid) in builds.items():
            start, size = text_section(dwarf)
            manifest["fixtures"].append({
                "name": variant, "image": "Scopes", "opt": "O2", "dsym": os.path.relpath(dsym, tmp),
                "dwarf": os.path.relpath(dwarf, tmp), "binary": os.path.relpath(binary, tmp),
                "slices": [{"arch": "arm64", "uuid": uuid, "text_vmaddr": "0x100000000",
                            "text_vmsize": hex(start - 0x100000000 + size), "dwarf_versions": [4]}]})
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        env = dict(os.environ, STACKSIFT_FIXTURES=tmp)
        p = subprocess.run([sys.executable, os.path.join(HERE, "lookup_oracle.py")], env=env,
                           capture_output=True, text=True, timeout=600)
        print(p.stdout.strip())
        check(p.returncode == 0, f"lookup_oracle over the three builds: {p.stdout[-800:]} {p.stderr[-800:]}")
        print(f"qualified_names: {len(addrs)} addresses with inlined frames, names {sorted(seen)}")
    if failures:
        for f in failures[:20]:
            print(f"qualified_names: FAIL {f}", file=sys.stderr)
        sys.exit(1)
    print("qualified_names: ok")


if __name__ == "__main__":
    main()
