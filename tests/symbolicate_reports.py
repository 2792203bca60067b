#!/usr/bin/env python3
"""symbolicate_reports.py - crash reports generated from the symbolication-core fixtures
symbolicate exactly as llvm-symbolizer says for every app frame (ctest: symbolicate_reports,
label fixtures).

Env: STACKSIFT_BIN, STACKSIFT_FIXTURES (tests/fixtures/build.sh output; built if missing).
Options: --seed N, --rounds N (reports per fixture and format), --keep DIR (write the
generated reports there).

Each round builds one crash in the fixture app (arm64-O2 with the FixtureKit framework,
arm64-O0, x86_64-O2): a random slide for every image, several threads mixing app, framework
and system frames (system images with made-up UUIDs and no dSYM), a crashed thread, a Last
Exception Backtrace, and on arm64 some return addresses carrying pointer-authentication bits.
The same crash is written in seven forms: Apple text (frame-line and parenthesised-list Last
Exception Backtrace), .ips JSON, KSCrash JSON, stacksift JSON, and Sentry events as
sentry-cocoa sends them (macho images, image_vmaddr given for some) and as the older
KSCrash-based SDKs did (apple images, image_vmaddr "0x0", arm64 addresses cut to 32 bits).
Then

    stacksift symbolicate --dsym <app dSYM> [--dsym <kit dSYM>] --json REPORT

must give, for every frame in a fixture image, exactly the frames of

    llvm-symbolizer-14 --inlines --functions=linkage --output-style=JSON

at the file address the documented rules give (frame 0 of each thread and of the Last
Exception Backtrace as is; callers (ra & ~3) - 4 on arm64, ra - 1 on x86_64; PAC bits above
bit 47 cleared; file address = address - load address + __TEXT vmaddr), compared on function,
file, line and inlined flag; every system frame must stay "missing" with the report's symbol;
"missing_uuids" must list exactly the system UUIDs frames fell in. Names are compared as
lookup_oracle.py does (the system demangler's spelling, see its header). The text output of
each Apple text report must keep every line that is not an app frame and replace each app
frame line with "<same prefix><function> (<file>:<line>)" lines, inlined ones first.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lookup_oracle as lo  # noqa: E402  (shared oracle helpers: llvm-symbolizer, demangling)

SYSTEM_IMAGES = [
    ("libsystem_kernel.dylib", "/usr/lib/system/libsystem_kernel.dylib",
     ["__pthread_kill", "mach_msg2_trap", "__psynch_cvwait"]),
    ("CoreFoundation", "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation",
     ["__exceptionPreprocess", "CFRunLoopRunSpecific", "__CFRunLoopRun"]),
    ("libdyld.dylib", "/usr/lib/system/libdyld.dylib", ["start"]),
]


def fail(msg, prog="symbolicate_reports"):
    print(f"{prog}: {msg}", file=sys.stderr)
    sys.exit(2)


class Image:
    def __init__(self, name, path, uuid, arch, load, size, text_vmaddr=None, dwarf=None,
                 dsym=None, symbols=None):
        self.name, self.path, self.uuid, self.arch = name, path, uuid, arch
        self.load, self.size = load, size
        self.text_vmaddr, self.dwarf, self.dsym = text_vmaddr, dwarf, dsym
        self.symbols = symbols or []
        self.fixture = dwarf is not None


class Frame:
    def __init__(self, image, addr, symbol=None, sym_off=None, lookup=None):
        self.image, self.addr = image, addr
        self.symbol, self.sym_off = symbol, sym_off
        self.lookup = lookup  # expected file address looked up (fixture images)


def code_addresses(fixtures_dir, fx, sl):
    """File addresses usable as code: every line-table row inside __text (no end_sequence)."""
    dwarf = os.path.join(fixtures_dir, fx["dwarf"])
    text_addr, text_size = lo.text_section(dwarf, sl["arch"])
    rows = sorted({a for a, end in lo.line_rows(dwarf, sl["arch"]) if not end
                   and text_addr + 8 <= a < text_addr + text_size - 8})
    return rows, (text_addr, text_addr + text_size)


def fixture_image(fixtures_dir, manifest, name, rng, load_hint):
    fx = next(f for f in manifest["fixtures"] if f["name"] == name)
    sl = fx["slices"][0]
    vm = int(sl["text_vmaddr"], 16)
    size = int(sl["text_vmsize"], 16)
    load = load_hint + rng.randrange(0, 0x4000) * 0x4000  # random slide, page aligned
    img = Image(fx["image"], f"/private/var/containers/Bundle/Application/X/{fx['image']}",
                sl["uuid"].upper(), sl["arch"], load, size, vm,
                os.path.join(fixtures_dir, fx["dwarf"]), os.path.join(fixtures_dir, fx["dsym"]))
    img.rows, img.text = code_addresses(fixtures_dir, fx, sl)
    return img


def system_images(rng, arch):
    out = []
    base = 0x180000000 if arch.startswith("arm") else 0x7ff800000000
    for i, (name, path, syms) in enumerate(SYSTEM_IMAGES):
        uuid = "-".join("".join(rng.choice("0123456789ABCDEF") for _ in range(n))
                        for n in (8, 4, 4, 4, 12))
        out.append(Image(name, path, uuid, "arm64e" if arch.startswith("arm") else arch,
                         base + i * 0x10000000 + rng.randrange(0, 0x100) * 0x10000, 0x400000,
                         symbols=syms))
    return out


def app_frame(img, rng, caller, arch, pac):
    """A frame in a fixture image: (runtime address as the report shows it, file address the
    rules must look up)."""
    a = rng.choice(img.rows)
    if arch == "x86_64":
        a += rng.randrange(0, 3)  # any byte of an instruction
    if not caller:
        return img.load + (a - img.text_vmaddr), a
    if arch == "x86_64":
        ra = a + 1  # ra - 1 == a
    else:
        ra = a + 4  # (ra & ~3) - 4 == a
    rt = img.load + (ra - img.text_vmaddr)
    if pac:
        rt |= rng.choice([0x002d000000000000, 0x6c1f000000000000, 0x0000800000000000])
    return rt, a


def make_crash(rng, imgs, fixtures, arch):
    """threads: [(name, queue, crashed, [Frame])], leb: [Frame]."""
    system = [i for i in imgs if not i.fixture]

    def frames(n):
        out = []
        for k in range(n):
            if rng.random() < 0.35:
                s = rng.choice(system)
                off = rng.randrange(0x100, s.size - 0x100)
                sym = rng.choice(s.symbols)
                out.append(Frame(s, s.load + off, sym, rng.randrange(4, 400)))
            else:
                img = rng.choice(fixtures)
                pac = arch != "x86_64" and k > 0 and rng.random() < 0.2
                rt, look = app_frame(img, rng, k > 0, arch, pac)
                out.append(Frame(img, rt, lookup=look))
        return out

    nthreads = rng.randrange(3, 6)
    crashed = rng.randrange(nthreads)
    threads = []
    for t in range(nthreads):
        threads.append((f"worker-{t}" if t else None, "com.apple.main-thread" if t == 0 else None,
                        t == crashed, frames(rng.randrange(3, 12))))
    return threads, frames(rng.randrange(3, 8)), crashed


# --- writers ------------------------------------------------------------------------------

CODE_TYPE = {"arm64": "ARM-64 (Native)", "x86_64": "X86-64 (Native)"}


def text_report(imgs, threads, leb, crashed, arch, leb_list):
    lines = [
        "Incident Identifier: 6F8A2C1E-1111-4222-8333-944455556666",
        "Hardware Model:      iPhone14,2",
        "Process:             FixtureApp [4242]",
        "Path:                /private/var/containers/Bundle/Application/X/FixtureApp",
        "Identifier:          com.example.FixtureApp",
        "Version:             1.0 (7)",
        f"Code Type:           {CODE_TYPE[arch]}",
        "Parent Process:      launchd [1]",
        "",
        "Date/Time:           2024-06-01 12:00:00.0000 +0000",
        "OS Version:          iPhone OS 17.5 (21F79)",
        "Report Version:      104",
        "",
        "Exception Type:  EXC_CRASH (SIGABRT)",
        "Exception Codes: 0x0000000000000000, 0x0000000000000000",
        f"Triggered by Thread:  {crashed}",
        "",
        "Last Exception Backtrace:",
    ]
    if leb_list:
        lines.append("(" + " ".join(f"0x{f.addr:x}" for f in leb) + ")")
    else:
        lines += [frame_line(i, f) for i, f in enumerate(leb)]
    lines.append("")
    for t, (name, queue, cr, frames) in enumerate(threads):
        if queue:
            lines.append(f"Thread {t} name:   Dispatch queue: {queue}")
        elif name:
            lines.append(f"Thread {t} name:  {name}")
        lines.append(f"Thread {t}{' Crashed' if cr else ''}:")
        lines += [frame_line(i, f) for i, f in enumerate(frames)]
        lines.append("")
    lines.append(f"Thread {crashed} crashed with ARM Thread State (64-bit):")
    lines.append("    x0: 0x0000000000000000   x1: 0x0000000000000000")
    lines.append("")
    lines.append("Binary Images:")
    for im in imgs:
        lines.append(f"{im.load:#18x} - {im.load + im.size - 1:#18x} {im.name} {im.arch}  "
                     f"<{im.uuid.replace('-', '').lower()}> {im.path}")
    lines.append("")
    lines.append("EOF")
    return "\n".join(lines) + "\n"


def frame_line(i, f):
    if f.symbol:
        sym = f"{f.symbol} + {f.sym_off}"
    else:
        sym = f"0x{f.image.load:x} + {f.addr - f.image.load}"
    return f"{i:<4}{f.image.name:<30}\t0x{f.addr:016x} {sym}"


def ips_report(imgs, threads, leb, crashed, arch):
    idx = {id(im): k for k, im in enumerate(imgs)}

    def fr(f):
        d = {"imageOffset": f.addr - f.image.load, "imageIndex": idx[id(f.image)]}
        if f.symbol:
            d.update(symbol=f.symbol, symbolLocation=f.sym_off)
        return d
    header = {"app_name": "FixtureApp", "timestamp": "2024-06-01 12:00:00.00 +0000",
              "app_version": "1.0", "build_version": "7", "bundleID": "com.example.FixtureApp",
              "bug_type": "309", "os_version": "iPhone OS 17.5 (21F79)", "name": "FixtureApp",
              "incident_id": "6F8A2C1E-1111-4222-8333-944455556666"}
    body = {
        "incident": header["incident_id"], "procName": "FixtureApp",
        "cpuType": "ARM-64" if arch == "arm64" else "X86-64",
        "exception": {"type": "EXC_CRASH", "signal": "SIGABRT",
                      "codes": "0x0000000000000000, 0x0000000000000000"},
        "faultingThread": crashed,
        "lastExceptionBacktrace": [fr(f) for f in leb],
        "threads": [dict({"frames": [fr(f) for f in frames]},
                         **({"triggered": True} if cr else {}),
                         **({"queue": q} if q else {}), **({"name": n} if n and not q else {}))
                    for n, q, cr, frames in threads],
        "usedImages": [{"source": "P", "arch": im.arch, "base": im.load, "size": im.size,
                        "uuid": im.uuid.lower(), "path": im.path, "name": im.name}
                       for im in imgs],
    }
    return json.dumps(header) + "\n" + json.dumps(body, indent=2) + "\n"


CPU = {"arm64": (0x0100000C, 0), "arm64e": (0x0100000C, 2), "x86_64": (0x01000007, 3)}


def kscrash_report(imgs, threads, leb, crashed, arch):
    def fr(f):
        d = {"instruction_addr": f.addr, "object_addr": f.image.load, "object_name": f.image.name}
        if f.symbol:
            d.update(symbol_name=f.symbol, symbol_addr=f.addr - f.sym_off)
        return d
    return json.dumps({
        "report": {"id": "6F8A2C1E-1111-4222-8333-944455556666", "process_name": "FixtureApp",
                   "type": "standard", "version": "3.2.0"},
        "system": {"CFBundleIdentifier": "com.example.FixtureApp", "cpu_arch": arch,
                   "system_name": "iOS", "system_version": "17.5"},
        "binary_images": [{"image_addr": im.load, "image_size": im.size, "name": im.path,
                           "uuid": im.uuid, "cpu_type": CPU[im.arch][0],
                           "cpu_subtype": CPU[im.arch][1]} for im in imgs],
        "crash": {"error": {"type": "signal", "signal": {"name": "SIGABRT", "signal": 6}},
                  "threads": [{"index": t, "crashed": cr, "name": n, "dispatch_queue": q,
                               "backtrace": {"contents": [fr(f) for f in frames]}}
                              for t, (n, q, cr, frames) in enumerate(threads)]},
    }, indent=1) + "\n"


def stack_report(imgs, threads, leb, crashed, arch):
    def fr(f):
        return {"address": f"0x{f.addr:x}", "symbol": f.symbol} if f.symbol else f"0x{f.addr:x}"
    return json.dumps({
        "format_version": 1, "kind": "crash", "arch": arch,
        "app": {"name": "FixtureApp", "bundle_id": "com.example.FixtureApp", "version": "1.0",
                "build": "7"},
        "os": {"name": "iOS", "version": "17.5", "build": "21F79"},
        "device": {"model": "iPhone14,2"},
        "images": [{"name": im.name, "uuid": im.uuid, "arch": im.arch,
                    "load_address": f"0x{im.load:x}", "size": im.size, "path": im.path}
                   for im in imgs],
        "threads": [{"name": n, "queue": q, "crashed": cr, "frames": [fr(f) for f in frames]}
                    for n, q, cr, frames in threads],
        "last_exception_backtrace": [fr(f) for f in leb],
    }, indent=1) + "\n"


def sentry_report(imgs, threads, leb, crashed, arch, legacy):
    """A Sentry event: sentry-cocoa's (macho images, image_vmaddr given or left out) or, with
    `legacy`, the KSCrash-based SDKs' (apple images with cpu_type, image_vmaddr "0x0", arm64
    addresses cut to 32 bits). Frames caller first; no Last Exception Backtrace."""
    cut = (lambda a: a & 0xFFFFFFFF) if legacy and arch != "x86_64" else (lambda a: a)

    def fr(f):
        d = {"instruction_addr": f"0x{cut(f.addr):x}", "image_addr": f"0x{cut(f.image.load):x}",
             "package": f.image.path, "function": f.symbol or "<redacted>"}
        if f.symbol:
            d["symbol_addr"] = f"0x{cut(f.addr - f.sym_off):x}"
        return d

    def image(im):
        if legacy:
            return {"type": "apple", "uuid": im.uuid, "name": im.path, "image_addr":
                    f"0x{cut(im.load):x}", "image_size": im.size, "image_vmaddr": "0x0",
                    "cpu_type": CPU[im.arch][0], "cpu_subtype": CPU[im.arch][1]}
        d = {"type": "macho", "debug_id": im.uuid.lower(), "code_file": im.path,
             "image_addr": f"0x{im.load:x}", "image_size": im.size}
        if im.text_vmaddr is not None and int(im.uuid[:2], 16) % 2 == 0:
            d["image_vmaddr"] = f"0x{im.text_vmaddr:x}"  # given for some, the dSYM's otherwise
        return d
    return json.dumps({
        "event_id": "6f8a2c1e11114222833394445555666" + ("1" if legacy else "0"),
        "platform": "cocoa", "level": "fatal", "release": "com.example.FixtureApp@1.0+7",
        "sdk": {"name": "sentry-swift" if legacy else "sentry.cocoa", "version": "8.40.1"},
        "contexts": {"os": {"name": "iOS", "version": "17.5", "build": "21F79"},
                     "device": {"model": "iPhone14,2", "arch": arch}},
        "exception": {"values": [{"type": "EXC_CRASH", "value": "abort", "thread_id": crashed,
                                  "mechanism": {"type": "mach", "meta": {
                                      "signal": {"number": 6, "name": "SIGABRT"},
                                      "mach_exception": {"exception": 10, "code": 0,
                                                         "subcode": 0, "name": "EXC_CRASH"}}}}]},
        "threads": {"values": [{"id": t, "name": n, "crashed": cr,
                                "stacktrace": {"frames": [fr(f) for f in reversed(frames)]}}
                               for t, (n, q, cr, frames) in enumerate(threads)]},
        "debug_meta": {"images": [image(im) for im in imgs]},
    }, indent=1) + "\n"


# --- checking -------------------------------------------------------------------------------

class Checker:
    def __init__(self):
        self.app_frames = 0
        self.system_frames = 0
        self.symbols = 0
        self.mismatches = []
        self.rules = {}

    def rule(self, name):
        self.rules[name] = self.rules.get(name, 0) + 1

    def bad(self, msg):
        self.mismatches.append(msg)

    def ask_oracle(self, reports):
        """One llvm-symbolizer run per fixture slice for every address the reports look up."""
        wanted = {}
        for _, _, _, threads, leb, _, _ in reports:
            for f in [f for _, _, _, fr in threads for f in fr] + leb:
                if f.image.fixture:
                    wanted.setdefault((f.image.dwarf, f.image.arch), set()).add(f.lookup)
        self.oracle = {k: lo.symbolize(k[0], k[1], sorted(v)) for k, v in wanted.items()}

    def finish(self, prog, summary, min_app_frames):
        """Print the summary line and the mismatches; the exit status (fails, exit 2, when
        fewer than min_app_frames app frames were checked)."""
        print(f"{prog}: {summary}")
        if self.mismatches:
            for m in self.mismatches[:30]:
                print("MISMATCH", m, file=sys.stderr)
            print(f"{prog}: {len(self.mismatches)} mismatches", file=sys.stderr)
            return 1
        if self.app_frames < min_app_frames:
            fail(f"only {self.app_frames} app frames were checked", prog)
        return 0


# The fixture apps a crash is made of: the app, and the other fixtures loaded beside it.
SETUPS = [("arm64-O2", ["kit"]), ("arm64-O0", []), ("x86_64-O2", [])]


def oracle_setup(doc, default_seed, default_rounds, prog):
    """The command line and environment every oracle script takes: returns (args, fixtures
    directory, stacksift binary, fixtures manifest, seeded random.Random)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("ORACLE_SEED", str(default_seed))))
    ap.add_argument("--rounds", type=int, default=default_rounds)
    ap.add_argument("--keep")
    args = ap.parse_args()
    fixtures_dir = os.environ.get("STACKSIFT_FIXTURES") or fail("STACKSIFT_FIXTURES is not set",
                                                               prog)
    binpath = os.environ.get("STACKSIFT_BIN")
    if not (binpath and os.access(binpath, os.X_OK)):
        fail("STACKSIFT_BIN is not set or not executable", prog)
    return args, fixtures_dir, binpath, lo.load_manifest(fixtures_dir), random.Random(args.seed)


def make_reports(fixtures_dir, manifest, rng, rounds):
    """rounds crashes of each SETUPS entry at random load addresses: a list of (label,
    images, fixture images, threads, last exception backtrace, crashed thread, arch)."""
    reports = []
    for app_name, extra in SETUPS:
        for rnd in range(rounds):
            app = fixture_image(fixtures_dir, manifest, app_name, rng, 0x100000000)
            fx = [app] + [fixture_image(fixtures_dir, manifest, e, rng, 0x110000000)
                          for e in extra]
            imgs = fx + system_images(rng, app.arch)
            rng.shuffle(imgs)
            threads, leb, crashed = make_crash(rng, imgs, fx, app.arch)
            reports.append((f"{app_name}-{rnd}", imgs, fx, threads, leb, crashed, app.arch))
    return reports


def expected_symbols(img, file_addr, oracle):
    return oracle[(img.dwarf, img.arch)][file_addr]


def check_frame(ck, where, f, got, oracle, with_leb_symbols=True):
    if f.image.fixture:
        ck.app_frames += 1
        want = expected_symbols(f.image, f.lookup, oracle)
        status = "ok" if want else "not_found"
        if got.get("symbolicated") != status:
            return ck.bad(f"{where}: status {got.get('symbolicated')}, want {status}")
        if int(got["lookup_address"], 16) != f.lookup:
            return ck.bad(f"{where}: looked up {got['lookup_address']}, want 0x{f.lookup:x}")
        syms = got["symbols"]
        if len(syms) != len(want):
            return ck.bad(f"{where} 0x{f.lookup:x}: {len(syms)} symbols, want {len(want)}: "
                          f"{want} got {syms}")
        for i, ((fn, file, line), s) in enumerate(zip(want, syms)):
            ck.symbols += 1
            inl = i < len(want) - 1
            if lo.canon(s["function"] or "") != lo.canon(fn):
                return ck.bad(f"{where} 0x{f.lookup:x}: function {s['function']!r}, want "
                              f"{lo.canon(fn)!r}")
            if (s["line"] or 0) != line or s["inlined"] != inl:
                return ck.bad(f"{where} 0x{f.lookup:x}: line/inlined {s['line']}/{s['inlined']}"
                              f", want {line}/{inl}")
            if file == "":
                if s["file"] is not None:
                    return ck.bad(f"{where}: file {s['file']}, want none")
                ck.rule("symtab")
            elif s["file"] != file:
                if line == 0 and s["file"] is None:
                    ck.rule("line0-file")
                else:
                    return ck.bad(f"{where}: file {s['file']}, want {file}")
    else:
        ck.system_frames += 1
        if got.get("symbolicated") != "missing" or got["symbols"]:
            return ck.bad(f"{where}: system frame {got.get('symbolicated')} {got['symbols']}")
        if with_leb_symbols and got.get("symbol") != f.symbol:
            return ck.bad(f"{where}: system frame symbol {got.get('symbol')}, want {f.symbol}")


def check_json(ck, label, out, imgs, threads, leb, leb_symbols):
    j = json.loads(out)
    if len(j["threads"]) != len(threads):
        return ck.bad(f"{label}: {len(j['threads'])} threads, want {len(threads)}")
    for t, ((_, _, cr, frames), jt) in enumerate(zip(threads, j["threads"])):
        if jt["crashed"] != cr or len(jt["frames"]) != len(frames):
            return ck.bad(f"{label}: thread {t} crashed/frames differ")
        for k, (f, g) in enumerate(zip(frames, jt["frames"])):
            check_frame(ck, f"{label} thread {t} frame {k}", f, g, ck.oracle)
    if leb is not None:
        jl = j["last_exception_backtrace"] or []
        if len(jl) != len(leb):
            return ck.bad(f"{label}: LEB has {len(jl)} frames, want {len(leb)}")
        for k, (f, g) in enumerate(zip(leb, jl)):
            check_frame(ck, f"{label} LEB frame {k}", f, g, ck.oracle, leb_symbols)
    used = {id(f.image) for _, _, _, fr in threads for f in fr} | \
           ({id(f.image) for f in leb} if leb is not None else set())
    want_missing = [im.uuid for im in imgs if not im.fixture and id(im) in used]
    if j.get("missing_uuids") != want_missing:
        ck.bad(f"{label}: missing_uuids {j.get('missing_uuids')}, want {want_missing}")


def check_text(ck, label, report, out, j):
    """Every line that is not a symbolicated frame line is kept byte for byte; each
    symbolicated frame line becomes one line per symbol with the same prefix."""
    src = report.split("\n")
    got = out.split("\n")
    ordered = list(j["last_exception_backtrace"] or []) + [g for jt in j["threads"]
                                                           for g in jt["frames"]]
    gi = 0
    for line in src:
        parts = line.split()
        is_frame = len(parts) >= 3 and parts[0].isdigit() and parts[2].startswith("0x")
        g = ordered.pop(0) if is_frame else None
        if g is None or g["symbolicated"] != "ok":
            if gi >= len(got) or got[gi] != line:
                return ck.bad(f"{label}: line {gi} changed: "
                              f"{got[gi] if gi < len(got) else None!r}, want {line!r}")
            gi += 1
            continue
        prefix = line[:line.index(parts[2]) + len(parts[2]) + 1]
        for s in g["symbols"]:
            want = prefix + s["function"]
            if s["file"]:
                want += f" ({os.path.basename(s['file'])}" + \
                    (f":{s['line']}" if s["line"] else "") + ")"
            elif not s["inlined"] and s["offset"]:
                want += f" + {s['offset']}"
            if s["inlined"]:
                want += " [inlined]"
            if gi >= len(got) or got[gi] != want:
                return ck.bad(f"{label}: symbolicated line "
                              f"{got[gi] if gi < len(got) else None!r}, want {want!r}")
            gi += 1
            ck.rule("text-lines")
    if gi != len(got) or ordered:
        ck.bad(f"{label}: {len(got) - gi} extra text lines, {len(ordered)} frames unmatched")


def run_symbolicate(binpath, dsyms, path, json_out):
    args = [binpath, "symbolicate"]
    for d in dsyms:
        args += ["--dsym", d]
    if json_out:
        args.append("--json")
    p = subprocess.run(args + [path], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"{' '.join(args)} {path} exited {p.returncode}: {p.stderr.strip()[:2000]}")
    return p.stdout


def check_cli(ck, binpath, tmp, report_path, dsyms):
    """The CLI contract: exit 0 and output on success, exit 1 with one stderr line when the
    report cannot be read, exit 2 on usage errors; stdin as "-"; --symcache-dir."""
    def run(args, stdin=None):
        return subprocess.run([binpath] + args, input=stdin, capture_output=True, text=True,
                              timeout=300)
    p = run(["parse", "--json", report_path])
    if p.returncode != 0 or json.loads(p.stdout)["format"] != "apple-text":
        ck.bad(f"parse --json {report_path}: exit {p.returncode}")
    with open(report_path) as f:
        text = f.read()
    p = run(["parse", "-"], stdin=text)
    if p.returncode != 0 or "format:" not in p.stdout or "contents:" not in p.stdout:
        ck.bad(f"parse - (stdin): exit {p.returncode}: {p.stdout[:200]}")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"debug_meta": {}, "exception": {}}')
    for args in (["parse", bad], ["symbolicate", "--dsym", dsyms[0], bad],
                 ["parse", os.path.join(tmp, "no-such-file")]):
        p = run(args)
        lines = p.stderr.strip().split("\n")
        if p.returncode != 1 or len(lines) != 1 or not lines[0].startswith(f"stacksift {args[0]}: "):
            ck.bad(f"{' '.join(args)}: exit {p.returncode}, stderr {p.stderr!r}")
    for args in (["parse"], ["parse", "--frobnicate", report_path], ["symbolicate", report_path]):
        if run(args).returncode != 2:
            ck.bad(f"{' '.join(args)}: not a usage error")
    p = run(["symbolicate", "--dsym", os.path.join(tmp, "missing.dSYM"), report_path])
    if p.returncode != 1 or "--dsym" not in p.stderr:
        ck.bad(f"symbolicate with a missing dSYM: exit {p.returncode}, {p.stderr!r}")
    # --symcache-dir gives the same answer as --dsym
    cache = os.path.join(tmp, "symcaches")
    os.makedirs(cache, exist_ok=True)
    for d in dsyms:
        subprocess.run([binpath, "symcache", "build", d, "-o", cache], check=True,
                       capture_output=True, timeout=300)
    a = run(["symbolicate", "--symcache-dir", cache, "--json", report_path])
    b = run(["symbolicate"] + [x for d in dsyms for x in ("--dsym", d)] + ["--json", report_path])
    if a.returncode != 0 or a.stdout != b.stdout:
        ck.bad("symbolicate --symcache-dir differs from --dsym")
    ck.rule("cli")


def main():
    args, fixtures_dir, binpath, manifest, rng = oracle_setup(__doc__, 20240607, 3,
                                                              "symbolicate_reports")
    ck = Checker()
    reports = make_reports(fixtures_dir, manifest, rng, args.rounds)
    ck.ask_oracle(reports)

    with tempfile.TemporaryDirectory(prefix="stacksift-symrep.") as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        for label, imgs, fx, threads, leb, crashed, arch in reports:
            dsyms = [im.dsym for im in fx]
            variants = [
                ("crash", text_report(imgs, threads, leb, crashed, arch, False), True, True),
                ("list.crash", text_report(imgs, threads, leb, crashed, arch, True), False, False),
                ("ips", ips_report(imgs, threads, leb, crashed, arch), True, False),
                ("kscrash.json", kscrash_report(imgs, threads, leb, crashed, arch), None, False),
                ("json", stack_report(imgs, threads, leb, crashed, arch), True, False),
                ("sentry.json", sentry_report(imgs, threads, leb, crashed, arch, False), None,
                 False),
                ("sentry-legacy.json", sentry_report(imgs, threads, leb, crashed, arch, True),
                 None, False),
            ]
            for ext, text, leb_symbols, is_text in variants:
                path = os.path.join(out_dir, f"{label}.{ext}")
                with open(path, "w") as f:
                    f.write(text)
                out = run_symbolicate(binpath, dsyms, path, True)
                check_json(ck, f"{label}.{ext}", out, imgs, threads,
                           None if leb_symbols is None else leb, bool(leb_symbols))
                if is_text:
                    check_text(ck, f"{label}.{ext}", text,
                               run_symbolicate(binpath, dsyms, path, False), json.loads(out))
        label, imgs, fx = reports[0][0], reports[0][1], reports[0][2]
        check_cli(ck, binpath, tmp, os.path.join(out_dir, f"{label}.crash"),
                  [im.dsym for im in fx])
    return ck.finish("symbolicate_reports",
                     f"{len(reports)} crashes x 7 formats, {ck.app_frames} app frames "
                     f"({ck.symbols} symbols incl. inlined), {ck.system_frames} system frames; "
                     f"tolerated: {ck.rules}", 100)

if __name__ == "__main__":
    sys.exit(main())
