#!/usr/bin/env python3
"""plcrash_reports.py - .plcrash files made from the fixture app's crashes symbolicate exactly
as llvm-symbolizer says, and render as Apple text that reads back the same (ctest:
plcrash_reports, label fixtures).

Env: STACKSIFT_BIN, STACKSIFT_FIXTURES (tests/fixtures/build.sh output).
Options: --seed N, --rounds N (crashes per fixture setup), --keep DIR (write the files there).

The crashes are symbolicate_reports.py's (real Mach-O fixtures built at test time, a random
slide per image, app, framework and system frames, PAC bits on arm64, a Last Exception
Backtrace), written by plcrash_encode.py as PLCrashReporter writes them: images with their
UUID bytes and Mach cpu type, each thread's pc list, the crashed thread's registers, system
frames with the symbol PLCrashReporter's client-side symbolication gives, the exception's own
frames, a Mach exception and its signal. Then for each file

    stacksift symbolicate --dsym <app dSYM> [--dsym <kit dSYM>] --json FILE

must give, frame by frame, exactly what symbolicate_reports.py checks for the other formats
(llvm-symbolizer-14 at the documented file address; system frames "missing" with their
symbol; missing_uuids exact), `stacksift parse --json` the metadata the file holds, and the
Apple text `stacksift symbolicate` prints must parse back (as apple-text) to the same threads,
frame addresses, images and exception.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plcrash_encode as pe  # noqa: E402
import symbolicate_reports as sr  # noqa: E402

INCIDENT = "6F8A2C1E-1111-4222-8333-944455556666"
EXC_NAME, EXC_REASON = "NSInvalidArgumentException", "-[FixtureThing frob:]: unrecognized selector"
PROCESS_PATH = "/private/var/containers/Bundle/Application/X/FixtureApp"


def pl_frame(f):
    d = {"pc": f.addr}
    if f.symbol:
        d["symbol"] = (f.symbol, f.addr - f.sym_off)
    return d


def plcrash_report(imgs, threads, leb, crashed, arch):
    """The crash as a .plcrash file (bytes)."""
    regs = [(f"x{i}", 0x1000 + i) for i in range(29)] + [("fp", 0x16f000), ("lr", 0x100004000),
                                                          ("sp", 0x16eff0), ("pc", 0x100004004)]
    if arch == "x86_64":
        regs = [("rax", 1), ("rbx", 2), ("rip", 0x100004004), ("rsp", 0x7ff0)]
    return pe.encode(
        system={"os": 1, "os_version": "17.5", "os_build": "21F79", "timestamp": 1717243200},
        app={"identifier": "com.example.FixtureApp", "version": "7", "marketing_version": "1.0"},
        threads=[{"number": t, "crashed": cr, "frames": [pl_frame(f) for f in frames],
                  "registers": regs if cr else []}
                 for t, (_, _, cr, frames) in enumerate(threads)],
        images=[{"base": im.load, "size": im.size, "name": im.path, "uuid": im.uuid,
                 "cpu": sr.CPU[im.arch]} for im in imgs],
        exception={"name": EXC_NAME, "reason": EXC_REASON, "frames": [pl_frame(f) for f in leb]},
        signal={"name": "SIGABRT", "code": "#0", "address": 0, "mach": (10, [0, 0])},
        process={"name": "FixtureApp", "pid": 4242, "path": PROCESS_PATH,
                 "parent_name": "launchd", "parent_pid": 1},
        machine={"model": "iPhone14,2", "cpu": sr.CPU[arch]},
        report={"uuid": INCIDENT})


def check_model(ck, label, j, imgs, threads, leb, crashed, arch):
    m = j["metadata"]
    want = {"incident_id": INCIDENT, "process": "FixtureApp", "process_path": PROCESS_PATH,
            "bundle_id": "com.example.FixtureApp", "app_version": "1.0", "build": "7",
            "os_version": "iPhone OS 17.5 (21F79)", "hardware_model": "iPhone14,2", "arch": arch,
            "exception_type": "EXC_CRASH", "signal": "SIGABRT",
            "exception_codes": "0x0000000000000000, 0x0000000000000000",
            "exception_reason": f"{EXC_NAME}: {EXC_REASON}", "crashed_thread": crashed,
            "parent_process": "launchd [1]", "date": "2024-06-01 12:00:00 +0000"}
    for k, v in want.items():
        if m.get(k) != v:
            ck.bad(f"{label}: metadata {k} {m.get(k)!r}, want {v!r}")
    if j["format"] != "plcrash" or j["kind"] != "crash":
        ck.bad(f"{label}: format/kind {j['format']}/{j['kind']}")
    if len(j["images"]) != len(imgs):
        return ck.bad(f"{label}: {len(j['images'])} images, want {len(imgs)}")
    for im, g in zip(imgs, j["images"]):
        got = (g["name"], g["uuid"], g["arch"], int(g["load_address"], 16),
               int(g["end_address"], 16), g["path"])
        exp = (im.name, im.uuid, im.arch, im.load, im.load + im.size - 1, im.path)
        if got != exp:
            ck.bad(f"{label}: image {got}, want {exp}")
    for t, (jt, (_, _, cr, frames)) in enumerate(zip(j["threads"], threads)):
        if [int(f["address"], 16) for f in jt["frames"]] != [f.addr for f in frames]:
            ck.bad(f"{label}: thread {t} addresses differ")
        if cr != ("registers" in jt):
            ck.bad(f"{label}: thread {t} registers {'registers' in jt}, crashed {cr}")
    ck.rule("model")


def check_text_roundtrip(ck, binpath, label, text_out, j_plcrash, tmp):
    """The Apple text rendering parses back (apple-text) to the same crash."""
    path = os.path.join(tmp, f"{label}.rendered.crash")
    with open(path, "w") as f:
        f.write(text_out)
    p = subprocess.run([binpath, "parse", "--json", path], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        return ck.bad(f"{label}: rendered text does not parse: {p.stderr.strip()}")
    back = json.loads(p.stdout)
    if back["format"] != "apple-text":
        return ck.bad(f"{label}: rendered text parsed as {back['format']}")
    for k in ("exception_type", "signal", "crashed_thread", "bundle_id", "hardware_model"):
        if back["metadata"][k] != j_plcrash["metadata"][k]:
            ck.bad(f"{label}: text {k} {back['metadata'][k]!r}, plcrash "
                   f"{j_plcrash['metadata'][k]!r}")
    if "Thread " not in text_out or "crashed with" not in text_out:
        ck.bad(f"{label}: rendered text lacks the register state")
    # symbolicated frames print one line per symbol (inlines first): compare the addresses of
    # each thread's frames with the symbolicated lines collapsed
    for t, (bt, pt) in enumerate(zip(back["threads"], j_plcrash["threads"])):
        got = []
        for f in bt["frames"]:
            if not got or got[-1][0] != f["index"]:
                got.append((f["index"], f["address"]))
        want = [(f["index"], f["address"]) for f in pt["frames"]]
        if [int(a, 16) for _, a in got] != [int(a, 16) for _, a in want]:
            ck.bad(f"{label}: rendered thread {t} frames differ")
    if len(back["images"]) != len(j_plcrash["images"]):
        ck.bad(f"{label}: rendered text has {len(back['images'])} images")
    ck.rule("text-roundtrip")


def main():
    args, fixtures_dir, binpath, manifest, rng = sr.oracle_setup(__doc__, 20240611, 2,
                                                                 "plcrash_reports")
    ck = sr.Checker()
    reports = sr.make_reports(fixtures_dir, manifest, rng, args.rounds)
    ck.ask_oracle(reports)

    with tempfile.TemporaryDirectory(prefix="stacksift-plcrash.") as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        for label, imgs, fx, threads, leb, crashed, arch in reports:
            path = os.path.join(out_dir, f"{label}.plcrash")
            with open(path, "wb") as f:
                f.write(plcrash_report(imgs, threads, leb, crashed, arch))
            dsyms = [im.dsym for im in fx]
            out = sr.run_symbolicate(binpath, dsyms, path, True)
            sr.check_json(ck, f"{label}.plcrash", out, imgs, threads, leb, True)
            p = subprocess.run([binpath, "parse", "--json", path], capture_output=True,
                               text=True, timeout=120)
            if p.returncode != 0:
                ck.bad(f"{label}: parse exited {p.returncode}: {p.stderr.strip()}")
                continue
            check_model(ck, label, json.loads(p.stdout), imgs, threads, leb, crashed, arch)
            text_out = sr.run_symbolicate(binpath, dsyms, path, False)
            check_text_roundtrip(ck, binpath, label, text_out, json.loads(out), tmp)
    return ck.finish("plcrash_reports",
                     f"{len(reports)} crashes, {ck.app_frames} app frames "
                     f"({ck.symbols} symbols incl. inlined), {ck.system_frames} system frames; "
                     f"checks: {ck.rules}", 50)

if __name__ == "__main__":
    sys.exit(main())
