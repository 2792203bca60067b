#!/usr/bin/python3
"""breakpad.py - Breakpad .sym files uploaded to a real `stacksift serve` (ctest
test_sentry_cli_breakpad, label db).

The shared crash.sym, its executable and dSYM (../shared/minidumps/macos-x86_64-breakpad,
read from there; copied only into a temporary folder for sentry-cli to scan):

1. The pinned sentry-cli (run.py's npm ci) uploads a folder holding crash.sym with
   `debug-files upload --wait` and exits 0: the row for the MODULE id's UUID is x86_64, named
   `crash`, without DWARF (a .sym's names yield to a dSYM's); POST /api/v1/symbolicate
   through the stored symcache names `main` at main.cpp:21 for the crash's pc.
2. The dSYM posted to POST /api/v1/dsyms (a zip) replaces it ("updated", has_dwarf): the
   frame then reads as llvm-symbolizer-14 reads the dSYM (the inline chain crash.sym lacks).
   crash.sym posted again (raw body) changes nothing ("exists").
3. Bad .sym files on POST /api/v1/dsyms: a MODULE id that is not hex, a MODULE line with no
   name: each a 400 with a JSON error, nothing stored.
Prints "N passed, N failed" like tests/harness.h.
"""
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from web_instance import Instance, check, checks_done, env_or_die  # noqa: E402
from run import Cli, checks_failed, npm_ci  # noqa: E402

UUID = "67E9247C-814E-392B-A027-DBDE6748FCBF"
LOAD = 0x109B9B000      # the Breakpad dump's load address of `crash`
PC = LOAD + 0xdc15      # its crashing instruction, in main


def shared():
    src = env_or_die("STACKSIFT_SOURCE_DIR")
    return os.path.join(os.path.dirname(src), "shared", "minidumps", "macos-x86_64-breakpad")


def q(inst, sql):
    return inst.psql(inst.db_url, sql).strip()


def post_dsym(inst, data, name=None, ctype="application/octet-stream"):
    path = "/api/v1/dsyms" + (f"?name={name}" if name else "")
    return inst.request("POST", path, body=data, token=inst.tokens["upload"],
                        headers={"Content-Type": ctype}, timeout=120)


def row(inst):
    r = inst.request("GET", f"/api/v1/dsyms/{UUID}", token=inst.tokens["read"])
    return r.json() if r.status == 200 else None


def symbolicate(inst):
    body = {"images": [{"uuid": UUID, "arch": "x86_64", "name": "crash", "load_address": hex(LOAD)}],
            "stacks": [[hex(PC)]]}
    r = inst.request("POST", "/api/v1/symbolicate", body=body, token=inst.tokens["read"])
    if not check(r.status == 200, f"symbolicate: {r.status} {r.body[:300]!r}"):
        return []
    frame = r.json()["stacks"][0][0]
    return [(s.get("function"), s.get("file"), s.get("line")) for s in frame.get("symbols") or []]


def symbolizer(base):
    dwarf = os.path.join(base, "crash.dSYM", "Contents", "Resources", "DWARF", "crash")
    out = subprocess.run(["llvm-symbolizer-14", "--inlines", f"--obj={dwarf}", hex(0x100000000 + 0xdc15)],
                         capture_output=True, text=True, timeout=60).stdout.split("\n")
    want = []
    for i in range(0, len(out) - 1, 2):
        if out[i]:
            path, line = out[i + 1].rsplit(":", 2)[:2]
            want.append((out[i], path, int(line)))
    return want


def run(inst, cli, base, work):
    # 1. sentry-cli finds and uploads the .sym
    folder = os.path.join(work, "symbols")
    os.makedirs(folder)
    shutil.copy(os.path.join(base, "crash.sym"), folder)
    cli.upload([folder], "crash.sym with sentry-cli")
    r = row(inst)
    check(r is not None and r["arch"] == "x86_64" and r["name"] == "crash" and r["has_dwarf"] is False,
          f"crash.sym stored for its MODULE UUID, names below a dSYM's: {r}")
    got = symbolicate(inst)
    check(got and got[-1][0] == "main" and got[0][2] == 21 and got[0][1].endswith("main.cpp"),
          f"symbolicated from crash.sym: {got}")

    # 2. the dSYM replaces its names; the .sym again changes nothing
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        root = os.path.join(base, "crash.dSYM")
        for d, _, files in os.walk(root):
            for f in files:
                p = os.path.join(d, f)
                z.write(p, os.path.join("crash.dSYM", os.path.relpath(p, root)))
    r = post_dsym(inst, buf.getvalue(), ctype="application/zip")
    files = r.json().get("files", []) if r.status in (200, 201) else []
    check(any(f["uuid"] == UUID and f["status"] == "updated" and f["has_dwarf"] for f in files),
          f"the dSYM after the .sym: {r.status} {r.body[:400]!r}")
    want = symbolizer(base)
    got = symbolicate(inst)
    check(len(want) > 1 and got == want, f"after the dSYM: ours {got}, llvm-symbolizer {want}")
    sym = open(os.path.join(base, "crash.sym"), "rb").read()
    r = post_dsym(inst, sym, name="crash.sym")
    files = r.json().get("files", []) if r.status in (200, 201) else []
    check(any(f["uuid"] == UUID and f["status"] == "exists" for f in files),
          f"crash.sym after the dSYM: {r.status} {r.body[:400]!r}")
    check(row(inst)["has_dwarf"] is True and symbolicate(inst) == want, "the dSYM's names stay")

    # 3. bad .sym files
    before = q(inst, "SELECT (SELECT count(*) FROM dsyms), (SELECT count(*) FROM blobs)")
    for what, data in (("a MODULE id that is not hex", b"MODULE mac x86_64 ZZZZ247C814E392BA027DBDE6748FCBF0 x\n"),
                       ("a MODULE line without a name", b"MODULE mac x86_64 67E9247C814E392BA027DBDE6748FCBF0\n")):
        r = post_dsym(inst, data, name="bad.sym")
        error = (r.json() if r.body[:1] == b"{" else {}).get("error") or {}
        check(r.status == 400 and error.get("code") == "invalid_input" and "MODULE" in error.get("message", ""),
              f"{what}: {r.status} {r.body[:300]!r}")
    after = q(inst, "SELECT (SELECT count(*) FROM dsyms), (SELECT count(*) FROM blobs)")
    check(before == after, f"nothing stored by the bad files: {before} -> {after}")


def main():
    build = env_or_die("STACKSIFT_BUILD_DIR")
    for tool in ("node", "npm", "llvm-symbolizer-14"):
        if not shutil.which(tool):
            print(f"test_sentry_cli_breakpad: {tool} not found", file=sys.stderr)
            return 1
    base = shared()
    if not os.path.isdir(base):
        print(f"no {base}", file=sys.stderr)
        return 1
    exe = npm_ci(build)
    home = tempfile.mkdtemp(prefix="stacksift-sentry-cli-home.")
    work = tempfile.mkdtemp(prefix="stacksift-sentry-cli-breakpad.")
    try:
        with Instance("breakpad_sym", workers=1) as inst:
            try:
                run(inst, Cli(exe, inst, home), base, work)
            finally:
                if checks_failed():
                    print("server log tail:\n" + inst.tail_log(40), file=sys.stderr)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
