#!/usr/bin/env python3
"""minidump_rules - what the stack walk takes from a dSYM's __debug_frame, the stack scan's
rule, and a .sym's CFI kept beside a dSYM, through `stacksift minidump walk` and a real
server (Postgres, HTTP, the report workers). ctest minidump_rules, labels db and fixtures.

The dump is made here (tests/minidump_write.py) over the fixture DebugFrameKit (an x86_64
dylib built without compact unwind: its only CFI is its dSYM's __debug_frame; its addresses
are taken from `llvm-dwarfdump-14 --debug-frame`, not written in): frame 0 in a frameless
function (CFA = rsp + its frame), its caller in a frame-pointer function, that one's caller,
whose frame pointer is 0, then on the stack a stale word pointing past the dylib's functions
(into its stubs) and above it a return address.

1. CLI with the dSYM: the callers by CFI ("cfi", __debug_frame), then by scan the return
   address, the stale word passed over (it lies in no function the dSYM knows); each frame
   named by the dSYM. Without debug files: the frame pointer skips the frameless frame, and
   the scan takes the stale word (nothing known about the module).
2. The same through the server: the dylib itself uploaded first (POST /api/v1/dsyms; a symbol
   table, no unwind info): the dump posted (application/x-dmp) walks by the frame pointer and
   the scan, which passes over the stale word (no symbol's function holds it); then its dSYM
   (a zip): the worker's walk gives the frames, pcs and `found` of the CLI's. Each dump is
   walked once by the worker (stacksift_minidump_walks_total), its images' debug files asked
   for when the walk reaches them.
3. The shared Breakpad dump (../shared/minidumps/macos-x86_64-breakpad) with crash.sym
   uploaded alone: its STACK CFI is stored ("BPC1", `stacksift symcache unwind` of the stored
   symcache) and the walk says the image has unwind info; then the dSYM uploaded separately:
   names from the dSYM (DWARF ranks above a .sym), the .sym's STACK CFI kept in the stored
   symcache, and the dump walks to the same frames as `stacksift minidump walk` does from
   crash.sym + the dSYM; a dump of our own through a function crash.sym gives STACK CFI for
   (and the executable's compact unwind does not: never uploaded) walks by that CFI.
4. The other order on a fresh server: the dSYM, then crash.sym: the names stay the dSYM's,
   crash.sym's STACK CFI joins the stored symcache and walks the STACK CFI dump.
Prints "N passed, N failed" like tests/harness.h.
"""
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import minidump_write  # noqa: E402
import unwind_oracle  # noqa: E402
from web_instance import Instance, check, checks_done  # noqa: E402

DWARFDUMP = "llvm-dwarfdump-14"
LOAD = 0x10A000000        # DebugFrameKit's load address in the dump
STACK = 0x7FF7BFEF0000    # the thread's stack
BREAKPAD_UUID = "67E9247C-814E-392B-A027-DBDE6748FCBF"


def rows_of(dsym):
    """{fde start: (end, [(addr, cfa register, cfa offset)])} from llvm-dwarfdump's
    --debug-frame rows."""
    out = subprocess.run([DWARFDUMP, "--debug-frame", dsym], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    fdes, cur = {}, None
    for line in out.splitlines():
        if ".eh_frame contents" in line:
            break
        m = re.search(r" FDE cie=\w+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)", line)
        if m:
            cur = int(m.group(1), 16)
            fdes[cur] = (int(m.group(2), 16), [])
            continue
        m = re.match(r"\s+0x([0-9a-f]+): CFA=([A-Z0-9]+)([+-]\d+)?", line)
        if m and cur is not None:
            fdes[cur][1].append((int(m.group(1), 16), m.group(2), int(m.group(3) or 0)))
    return fdes


def uuid_of(path):
    out = subprocess.run([DWARFDUMP, "--uuid", path], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return re.search(r"UUID: ([0-9A-F-]{36})", out).group(1)


class Plan:
    """The dump's addresses, found from the dSYM's rows: a frameless row (leaf), a row with
    CFA = rbp + 16 past its function's start in another function (middle), one in a third
    (outer), a gap past the last FDE."""

    def __init__(self, dsym):
        fdes = rows_of(dsym)
        self.leaf = self.middle = self.outer = None
        for start, (end, rows) in sorted(fdes.items()):
            for addr, reg, off in rows:
                if reg == "RSP" and off > 16 and self.leaf is None:
                    self.leaf, self.leaf_cfa, self.leaf_fn = addr, off, start
                elif reg == "RBP" and off == 16 and addr > start:
                    if self.middle is None:
                        self.middle, self.middle_fn = addr, start
                    elif self.outer is None and start != self.middle_fn:
                        self.outer, self.outer_fn = addr, start
        self.gap = max(end for end, _ in fdes.values()) + 8
        self.ok = None not in (self.leaf, self.middle, self.outer)


def make_dump(plan, uuid):
    """The dump: frame 0 in the leaf, its return address into the middle function, the middle
    frame's record (caller fp 0, return address into the outer function), then the stale word
    (the gap) and a return address into the middle function again."""
    stack = bytearray(0x400)
    rbp = STACK + 0x200

    def put(addr, v):
        struct.pack_into("<Q", stack, addr - STACK, v)

    put(STACK + plan.leaf_cfa - 8, LOAD + plan.middle + 1)
    put(rbp, 0)
    put(rbp + 8, LOAD + plan.outer + 1)
    put(rbp + 16, LOAD + plan.gap)
    put(rbp + 24, LOAD + plan.middle + 1)
    regs = {"rip": LOAD + plan.leaf, "rsp": STACK, "rbp": rbp, "rbx": 0x1111}
    return minidump_write.write([("/Library/Frameworks/DebugFrameKit.framework/DebugFrameKit", LOAD,
                                  0x8000, uuid)], STACK, bytes(stack), regs)


def cli_walk(bin_path, dump, *debug):
    p = subprocess.run([bin_path, "minidump", "walk", "--json", dump, *debug], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, f"minidump walk {debug}: exit {p.returncode} {p.stderr}")
    return json.loads(p.stdout)["threads"][0]["frames"] if p.returncode == 0 else []


def shape(frames):
    return [(int(f["pc"], 16) if isinstance(f["pc"], str) else f["pc"], f["found"]) for f in frames]


def debug_frame_cli(bin_path, fx, work):
    dsym = os.path.join(fx, "debugframe", "DebugFrameKit.framework.dSYM")
    plan = Plan(dsym)
    if not check(plan.ok, f"DebugFrameKit's rows give a frameless, a middle and an outer function: "
                 f"{vars(plan)}"):
        return None
    uuid = uuid_of(dsym)
    dump = os.path.join(work, "debugframe.dmp")
    with open(dump, "wb") as f:
        f.write(make_dump(plan, uuid))
    want = [(LOAD + plan.leaf, "context"), (LOAD + plan.middle + 1, "cfi"),
            (LOAD + plan.outer + 1, "cfi"), (LOAD + plan.middle + 1, "scan")]
    frames = cli_walk(bin_path, dump, dsym)
    check(shape(frames)[:4] == want, f"walk with the dSYM's __debug_frame: {shape(frames)}, want {want}")
    names = [(f.get("symbols") or [{}])[0].get("function") for f in frames[:4]]
    check(names == ["df_leaf", "df_middle", "df_entry", "df_middle"], f"frames named by the dSYM: {names}")
    # nothing known of the module: the frame pointer skips the frameless frame, the stale word
    # is taken
    bare = shape(cli_walk(bin_path, dump))
    check(bare[:3] == [(LOAD + plan.leaf, "context"), (LOAD + plan.outer + 1, "frame_pointer"),
                       (LOAD + plan.gap, "scan")], f"walk without debug files: {bare}")
    return plan, uuid, dump, want


def zip_bundle(root, bundle):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for d, _, files in os.walk(os.path.join(root, bundle)):
            for name in files:
                path = os.path.join(d, name)
                z.write(path, os.path.relpath(path, root))
    return buf.getvalue()


def upload(inst, body, what, name=None, ctype="application/octet-stream"):
    r = inst.request("POST", "/api/v1/dsyms" + (f"?name={name}" if name else ""), body,
                     token=inst.tokens["upload"], headers={"Content-Type": ctype}, timeout=120)
    check(r.status in (200, 201), f"{what}: {r.status} {r.body[:300]!r}")
    return r.json().get("files", []) if r.status in (200, 201) else []


def post_dump(inst, data, what):
    r = inst.request("POST", "/api/v1/reports", body=data, headers={"Content-Type": "application/x-dmp"},
                     token=inst.tokens["ingest"])
    if not check(r.status == 202, f"{what}: {r.status} {r.body[:300]!r}"):
        return None
    check(inst.wait_processed(120), f"{what}: processed")
    r = inst.request("GET", f"/api/v1/reports/{r.json()['id']}", token=inst.tokens["read"])
    return r.json() if check(r.status == 200, f"{what}: GET {r.status}") else None


def server_frames(rep):
    model = rep.get("symbolicated") or rep.get("report") or {}
    return model["threads"][0]["frames"] if model.get("threads") else []


def server_shape(rep):
    return [(int(f["address"], 16) if isinstance(f.get("address"), str) else f.get("address"),
             f.get("found")) for f in server_frames(rep)]


def minidump_walks(inst):
    """The workers' minidump walks so far (GET /metrics, stacksift_minidump_walks_total)."""
    body = inst.request("GET", "/metrics", token=inst.tokens["read"]).body.decode()
    m = re.search(r"^stacksift_minidump_walks_total (\d+)$", body, re.M)
    return int(m.group(1)) if check(m is not None, "/metrics has stacksift_minidump_walks_total") else -1


def debug_frame_server(inst, fx, made):
    plan, uuid, dump, want = made
    # the executable first: no compact unwind, only its symbol table, which the worker's walk
    # holds scanned words against (the stale word lies in no symbol's function)
    exe = os.path.join(fx, "debugframe", "DebugFrameKit.framework", "DebugFrameKit")
    upload(inst, open(exe, "rb").read(), "DebugFrameKit's executable")
    # an upload hands the reports that wait for its image back to the workers: let them walk
    # before counting, so that the count is this dump's walks alone
    check(inst.wait_processed(120), "the reports waiting for the executable: processed")
    walks = minidump_walks(inst)
    rep = post_dump(inst, open(dump, "rb").read(), "the __debug_frame dump, executable alone")
    # the image's symbols are asked for when the walk first reaches it, not after a walk
    # without them: one walk, though its symbols change where the scan goes
    check(minidump_walks(inst) == walks + 1, f"the dump walked once by the worker: {minidump_walks(inst) - walks}")
    if rep is not None:
        got = server_shape(rep)
        sym_want = [(LOAD + plan.leaf, "context"), (LOAD + plan.outer + 1, "frame_pointer"),
                    (LOAD + plan.middle + 1, "scan")]
        check(got[:3] == sym_want, f"the worker's walk with symbols only: {got}, want {sym_want}")
        images = (rep.get("symbolicated") or {}).get("images", [])
        check(not any(im.get("unwind") for im in images), f"no unwind info from a symbol table: {images}")
    walks = minidump_walks(inst)
    upload(inst, zip_bundle(os.path.join(fx, "debugframe"), "DebugFrameKit.framework.dSYM"),
           "DebugFrameKit's dSYM", ctype="application/zip")
    symc = unwind_oracle.stored_symcache(inst, uuid)
    unwind = unwind_oracle.unwind_of(inst.bin, symc) if symc else None
    check(unwind is not None and unwind["debug_frame"] and unwind["debug_frame"]["fdes"] >= 3,
          f"the stored symcache keeps the dSYM's __debug_frame: {unwind}")
    # the dump above waited for this unwind info: the upload gives it back to the workers, who
    # walk it again, once; then this dump's walks are counted alone
    check(inst.wait_processed(120), "the dump waiting for the dSYM's unwind info: processed")
    check(minidump_walks(inst) == walks + 1,
          f"the waiting dump walked again once with the dSYM: {minidump_walks(inst) - walks}")
    walks = minidump_walks(inst)
    rep = post_dump(inst, open(dump, "rb").read(), "the __debug_frame dump")
    # a dSYM alone (no executable uploaded): its __debug_frame is read in the one walk
    check(minidump_walks(inst) == walks + 1, f"the dSYM's dump walked once by the worker: {minidump_walks(inst) - walks}")
    if rep is None:
        return
    got = server_shape(rep)
    check(got[:4] == want, f"the worker's walk: {got}, want {want} ({server_frames(rep)[:2]})")
    images = (rep.get("symbolicated") or {}).get("images", [])
    check(any(im.get("unwind") is True for im in images), f"DebugFrameKit has unwind info: {images}")


def breakpad_server(inst, bin_path, work):
    base = os.path.join(os.path.dirname(inst.source), "shared", "minidumps", "macos-x86_64-breakpad")
    dump = open(os.path.join(base, "macos.dmp"), "rb").read()
    upload(inst, open(os.path.join(base, "crash.sym"), "rb").read(), "crash.sym alone", name="crash.sym")
    unwind = unwind_oracle.unwind_of(inst.bin, unwind_oracle.stored_symcache(inst, BREAKPAD_UUID) or b"")
    check(unwind is not None and (unwind.get("breakpad_cfi") or {}).get("inits", 0) > 0,
          f"crash.sym's STACK CFI stored: {unwind and unwind.get('breakpad_cfi')}")
    rep = post_dump(inst, dump, "the Breakpad dump, crash.sym alone")
    cli_sym = shape(cli_walk(bin_path, os.path.join(base, "macos.dmp"), os.path.join(base, "crash.sym")))
    if rep is not None:
        check(server_shape(rep) == cli_sym, f"walk with crash.sym: {server_shape(rep)}, CLI {cli_sym}")
        crash = next((im for im in rep["symbolicated"]["images"] if im.get("name") == "crash"), {})
        check(crash.get("unwind") is True, f"crash has unwind info from crash.sym: {crash}")
    # crash.sym's CFI through a function it has STACK CFI for: the worker walks by it
    made = breakpad_cfi_dump(os.path.join(base, "crash.sym"))
    post_cfi_dump(inst, made, "crash.sym alone", "walked by crash.sym's CFI")
    # the dSYM after it, separately: DWARF names, the .sym's CFI kept
    files = upload(inst, zip_bundle(base, "crash.dSYM"), "crash.dSYM after crash.sym",
                   ctype="application/zip")
    f = next((x for x in files if x.get("uuid", "").upper() == BREAKPAD_UUID), {})
    check(f.get("status") == "updated" and f.get("has_dwarf") is True, f"the dSYM replaces the names: {f}")
    unwind = unwind_oracle.unwind_of(inst.bin, unwind_oracle.stored_symcache(inst, BREAKPAD_UUID) or b"")
    check(unwind is not None and (unwind.get("breakpad_cfi") or {}).get("inits", 0) > 0,
          f"crash.sym's STACK CFI kept once the dSYM arrived: {unwind and unwind.get('breakpad_cfi')}")
    rep = post_dump(inst, dump, "the Breakpad dump, crash.sym + dSYM")
    cli_both = shape(cli_walk(bin_path, os.path.join(base, "macos.dmp"), os.path.join(base, "crash.sym"),
                              os.path.join(base, "crash.dSYM")))
    if rep is not None:
        check(server_shape(rep) == cli_both, f"walk with crash.sym + dSYM: {server_shape(rep)}, CLI {cli_both}")
        top = server_frames(rep)[0]
        check(top.get("symbolicated") == "ok" and top["symbols"] and top["symbols"][0].get("file"),
              f"frame 0 named by the dSYM: {top}")
        crash = next((im for im in rep["symbolicated"]["images"] if im.get("name") == "crash"), {})
        check(crash.get("unwind") is True, f"crash keeps its unwind info: {crash}")
    post_cfi_dump(inst, made, "crash.sym + dSYM", "still walked by crash.sym's CFI after the dSYM")


def breakpad_after_dsym(inst):
    """The other order: crash.dSYM first, crash.sym after it. The names stay the dSYM's (the
    .sym ranks below DWARF), the .sym's STACK CFI joins the stored symcache."""
    base = os.path.join(os.path.dirname(inst.source), "shared", "minidumps", "macos-x86_64-breakpad")
    upload(inst, zip_bundle(base, "crash.dSYM"), "crash.dSYM alone", ctype="application/zip")
    files = upload(inst, open(os.path.join(base, "crash.sym"), "rb").read(), "crash.sym after the dSYM",
                   name="crash.sym")
    f = next((x for x in files if x.get("uuid", "").upper() == BREAKPAD_UUID), {})
    check(f.get("status") == "updated" and f.get("has_dwarf") is True,
          f"crash.sym after the dSYM adds its CFI, keeps the dSYM's names: {f}")
    unwind = unwind_oracle.unwind_of(inst.bin, unwind_oracle.stored_symcache(inst, BREAKPAD_UUID) or b"")
    check(unwind is not None and (unwind.get("breakpad_cfi") or {}).get("inits", 0) > 0,
          f"crash.sym's STACK CFI joins the dSYM's symcache: {unwind and unwind.get('breakpad_cfi')}")
    rep = post_cfi_dump(inst, breakpad_cfi_dump(os.path.join(base, "crash.sym")), "dSYM then crash.sym",
                        "walked by crash.sym's CFI")
    if rep is not None:
        top = server_frames(rep)[1]
        check(top.get("symbols") and top["symbols"][0].get("file"), f"frame 1 named by the dSYM: {top}")


CRASH_LOAD = 0x109B9B000


def post_cfi_dump(inst, made, debug_files, what):
    """Posts the dump through a STACK CFI function (`made`: breakpad_cfi_dump's (dump, want),
    or None) with `debug_files` uploaded, and checks its frames 0 and 1 against `want`; `what`
    names the check. The report, or None."""
    if made is None:
        return None
    data, want = made
    rep = post_dump(inst, data, f"a dump through a STACK CFI function, {debug_files}")
    if rep is not None:
        check(server_shape(rep)[:2] == want, f"{what}: {server_shape(rep)}, want {want}")
    return rep


def breakpad_cfi_dump(sym_path):
    """A dump through the crash module (its UUID, the Breakpad dump's load address) whose
    frame 0 lies at the first STACK CFI delta row of crash.sym that says `.cfa: $rsp N +`
    alone with N >= 16 (its INIT says `.ra: .cfa -8 + ^`): the caller is at [rsp + N - 8],
    and a decoy at [rsp], in crash too, is what a scan would take. (dump, [(pc, found)] of
    frames 0 and 1)."""
    with open(sym_path) as f:
        for line in f:
            m = re.match(r"STACK CFI ([0-9a-f]+) \.cfa: \$rsp (\d+) \+\s*$", line)
            if m and int(m.group(2)) >= 16:
                addr, n = int(m.group(1), 16), int(m.group(2))
                break
        else:
            check(False, "crash.sym has a STACK CFI row `.cfa: $rsp N +`, N >= 16")
            return None
    stack = bytearray(0x200)
    ra = CRASH_LOAD + 0xdc15 + 1          # some return address in crash (main)
    # a decoy below the CFI's slot, in crash too: a scan would take it first
    struct.pack_into("<Q", stack, 0, CRASH_LOAD + 0xdc15 + 1 - 0x20)
    struct.pack_into("<Q", stack, n - 8, ra)
    regs = {"rip": CRASH_LOAD + addr, "rsp": STACK, "rbp": 0}
    data = minidump_write.write([("/tmp/crash", CRASH_LOAD, 0x10000, BREAKPAD_UUID)], STACK,
                                bytes(stack), regs)
    return data, [(CRASH_LOAD + addr, "context"), (ra, "cfi")]


def main():
    fx = os.environ["STACKSIFT_FIXTURES"]
    bin_path = os.environ["STACKSIFT_BIN"]
    work = tempfile.mkdtemp(prefix="stacksift-minidump-rules-")
    try:
        made = debug_frame_cli(bin_path, fx, work)
        with Instance("minidump_rules", workers=1) as inst:
            if made is not None:
                debug_frame_server(inst, fx, made)
            breakpad_server(inst, bin_path, work)
        with Instance("minidump_rules_order", workers=1) as inst:
            breakpad_after_dsym(inst)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
