#!/usr/bin/env python3
"""dsym_unwind - executables and dylibs uploaded as debug files keep their unwind info (ctest
dsym_unwind, labels db and fixtures), through a real `stacksift serve` and Postgres.

1. The shared x86_64 executable (../shared/minidumps/macos-x86_64-breakpad/crash) through
   POST /api/v1/dsyms: a symbol table and its unwind info, stored; the symcache in Postgres
   decodes to llvm-objdump-14 --unwind-info's entries and keeps __eh_frame. Then its dSYM as a
   zip: DWARF replaces the names ("updated"), the unwind info stays. The shared Breakpad dump
   walked with that stored symcache alone (`minidump walk --symcache-dir`) gives the frames the
   walk from the executable and dSYM files gives (which tests/minidump_walk.py holds to
   Breakpad's minidump_stackwalk).
2. A fixture dSYM first, then its executable (raw Mach-O): the names stay the dSYM's, the
   stored symcache gains the executable's unwind info ("updated"); the executable again
   changes nothing ("exists"), and `stacksift symcache rebuild` (from the stored dSYM) keeps
   the merged symcache as it is.
3. One zip holding the .app and the .dSYM of a fixture: one row, DWARF and unwind info.
4. A dSYM and its executable posted at the same moment: DWARF names and unwind info.
sentry-cli's route is checked in tests/sentry_cli/run.py.
Prints "N passed, N failed" like tests/harness.h.
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_instance import Instance, check, checks_done  # noqa: E402
import unwind_oracle  # noqa: E402

BREAKPAD_UUID = "67E9247C-814E-392B-A027-DBDE6748FCBF"


def zip_tree(root, names):
    """A zip of the files under root/<name> for each name, paths relative to root."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as z:
        for name in names:
            top = os.path.join(root, name)
            if os.path.isfile(top):
                z.write(top, name)
                continue
            for d, _, files in os.walk(top):
                for f in files:
                    full = os.path.join(d, f)
                    z.write(full, os.path.relpath(full, root))
    return data.getvalue()


def upload(inst, body, what, query=""):
    r = inst.request("POST", "/api/v1/dsyms" + query, body, token=inst.tokens["upload"],
                     timeout=120)
    check(r.status in (200, 201), f"{what}: {r.status} {r.body[:300]!r}")
    return r.json().get("files", []) if r.status in (200, 201) else []


def file_for(files, uuid):
    return next((f for f in files if f.get("uuid", "").upper() == uuid.upper()), None)


def stored_unwind(inst, uuid):
    symc = unwind_oracle.stored_symcache(inst, uuid)
    return symc, (unwind_oracle.unwind_of(inst.bin, symc) if symc else None)


def shared_executable(inst, shared):
    exe = os.path.join(shared, "crash")
    files = upload(inst, open(exe, "rb").read(), "the shared executable")
    f = file_for(files, BREAKPAD_UUID)
    check(f is not None and f["status"] == "created" and f["has_dwarf"] is False,
          f"the executable alone: a symbol table ({f})")
    symc, unwind = stored_unwind(inst, BREAKPAD_UUID)
    why = unwind_oracle.matches_executable(unwind, exe)
    check(why == "", f"the stored executable's unwind info: {why}")
    check(unwind is not None and len(unwind["stack_sizes"]) > 0,
          "the x86_64 indirect stack sizes are kept")
    files = upload(inst, zip_tree(shared, ["crash.dSYM"]), "its dSYM as a zip")
    f = file_for(files, BREAKPAD_UUID)
    check(f is not None and f["status"] == "updated" and f["has_dwarf"] is True,
          f"the dSYM after it: DWARF names ({f})")
    symc, unwind = stored_unwind(inst, BREAKPAD_UUID)
    why = unwind_oracle.matches_executable(unwind, exe)
    check(why == "", f"the executable's unwind info stays when its dSYM arrives: {why}")
    # the walk from the stored symcache alone, against the walk from the files
    work = tempfile.mkdtemp(prefix="stacksift-dsym-unwind-")
    try:
        with open(os.path.join(work, f"{BREAKPAD_UUID}.symc"), "wb") as out:
            out.write(symc or b"")
        dump = os.path.join(shared, "macos.dmp")
        stored = subprocess.run([inst.bin, "minidump", "walk", "--json", "--symcache-dir", work, dump],
                                capture_output=True, text=True, timeout=120)
        files_walk = subprocess.run([inst.bin, "minidump", "walk", "--json", dump, exe,
                                     os.path.join(shared, "crash.dSYM")],
                                    capture_output=True, text=True, timeout=120)
        check(stored.returncode == 0 and files_walk.returncode == 0,
              f"walks: {stored.stderr} {files_walk.stderr}")
        if stored.returncode == 0 and files_walk.returncode == 0:
            a, b = json.loads(stored.stdout), json.loads(files_walk.stdout)
            check(a == b, "the walk from the stored symcache is the walk from the files")
            frames = a["threads"][0]["frames"]
            check(len(frames) > 1 and frames[1]["found"] == "cfi"
                  and frames[0]["symbols"] and frames[0]["symbols"][0]["file"],
                  f"the stored symcache gives CFI and DWARF names: {frames[:2]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def dsym_then_executable(inst, fixtures, fx):
    uuid = fx["slices"][0]["uuid"]
    exe = os.path.join(fixtures, fx["binary"])
    files = upload(inst, open(os.path.join(fixtures, fx["dwarf"]), "rb").read(),
                   f"{fx['name']} dSYM", f"?name={fx['image']}")
    f = file_for(files, uuid)
    check(f is not None and f["status"] == "created" and f["has_dwarf"] is True, f"dSYM first ({f})")
    _, unwind = stored_unwind(inst, uuid)
    check(unwind is None, f"{fx['name']}: a dSYM alone has no unwind info")
    before = f
    files = upload(inst, open(exe, "rb").read(), f"{fx['name']} executable")
    f = file_for(files, uuid)
    check(f is not None and f["status"] == "updated" and f["has_dwarf"] is True
          and before is not None and f["name"] == before["name"]
          and f["functions"] == before["functions"] and f["sha256"] != before["sha256"],
          f"the executable after the dSYM adds its unwind info, the names stay ({before} -> {f})")
    symc, unwind = stored_unwind(inst, uuid)
    why = unwind_oracle.matches_executable(unwind, exe)
    check(why == "", f"{fx['name']}: stored unwind info: {why}")
    row = inst.request("GET", f"/api/v1/dsyms/{uuid}", token=inst.tokens["read"]).json()
    check(f is not None and row.get("sha256") == f["sha256"], "the row points at the merged symcache")
    files = upload(inst, open(exe, "rb").read(), f"{fx['name']} executable again")
    g = file_for(files, uuid)
    check(g is not None and g["status"] == "exists" and f is not None and g["sha256"] == f["sha256"],
          f"the executable again changes nothing ({g})")
    # `stacksift symcache rebuild` re-derives it from the row's original (the dSYM) and keeps
    # the unwind info the executable added: the same bytes
    out = subprocess.run([inst.bin, "symcache", "rebuild", "--uuid", uuid], env=inst.env(),
                         capture_output=True, text=True, timeout=120)
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
    check(out.returncode == 0 and len(lines) == 1 and lines[0]["status"] == "unchanged",
          f"symcache rebuild keeps the merged symcache: {out.stdout} {out.stderr[-500:]}")
    _, unwind = stored_unwind(inst, uuid)
    why = unwind_oracle.matches_executable(unwind, exe)
    check(why == "", f"{fx['name']}: stored unwind info after a rebuild: {why}")


def app_and_dsym_in_one_zip(inst, fixtures, fx):
    uuid = fx["slices"][0]["uuid"]
    root = os.path.join(fixtures, fx["name"])
    files = upload(inst, zip_tree(root, sorted(os.listdir(root))), f"{fx['name']} .app and .dSYM zipped")
    mine = [f for f in files if f.get("uuid", "").upper() == uuid.upper()]
    check(len(mine) == 1 and mine[0]["has_dwarf"] is True and mine[0]["status"] == "created",
          f"one row with DWARF ({mine})")
    _, unwind = stored_unwind(inst, uuid)
    why = unwind_oracle.matches_executable(unwind, os.path.join(fixtures, fx["binary"]))
    check(why == "", f"{fx['name']} zipped with its dSYM: stored unwind info: {why}")


def at_once(inst, fixtures, fx):
    """The dSYM and the executable of one UUID posted at the same moment: whichever commits
    second merges with the first (or finds the row changed and merges again)."""
    uuid = fx["slices"][0]["uuid"]
    bodies = [open(os.path.join(fixtures, fx["dwarf"]), "rb").read(),
              open(os.path.join(fixtures, fx["binary"]), "rb").read()]
    results = [None, None]

    def post(i):
        results[i] = inst.request("POST", "/api/v1/dsyms", bodies[i], token=inst.tokens["upload"],
                                  timeout=120)
    threads = [threading.Thread(target=post, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(all(r is not None and r.status in (200, 201) for r in results),
          f"{fx['name']} dSYM and executable at once: {[r and r.status for r in results]}")
    row = inst.request("GET", f"/api/v1/dsyms/{uuid}", token=inst.tokens["read"]).json()
    check(row.get("has_dwarf") is True, f"{fx['name']} at once: DWARF names ({row})")
    _, unwind = stored_unwind(inst, uuid)
    why = unwind_oracle.matches_executable(unwind, os.path.join(fixtures, fx["binary"]))
    check(why == "", f"{fx['name']} at once: stored unwind info: {why}")


def main():
    with Instance("dsym_unwind") as inst:
        shared = os.path.join(os.path.dirname(inst.source), "shared", "minidumps",
                              "macos-x86_64-breakpad")
        manifest = json.load(open(os.path.join(inst.fixtures, "manifest.json")))
        fx = {f["name"]: f for f in manifest["fixtures"]}
        shared_executable(inst, shared)
        dsym_then_executable(inst, inst.fixtures, fx["arm64-O2"])
        app_and_dsym_in_one_zip(inst, inst.fixtures, fx["x86_64-O2"])
        at_once(inst, inst.fixtures, fx["dwarf5"])
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
