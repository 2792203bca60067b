#!/usr/bin/env python3
"""minidump_walk - `stacksift minidump walk` against Breakpad's own walker (ctest minidump_walk,
label fixtures).

The oracle is Breakpad's `minidump_stackwalk`, prebuilt in the npm package minidump@0.26.0,
installed with `npm install --ignore-scripts` (its preinstall script builds Breakpad from git)
into $STACKSIFT_BUILD_DIR/minidump-node, once, under a file lock.

1. Every dump of ../shared/minidumps/ that is not malformed (the Breakpad dump and the two
   Crashpad dumps): every thread walks to the oracle's frames, in order: the same module and
   module offset (frames outside any module: the same address), or, where the oracle
   symbolicated a frame from crash.sym, the same function and line. The Breakpad dump is
   walked with the executable (its compact unwind) and its dSYM; the oracle with crash.sym
   (its STACK CFI) laid out as SYMBOLS/crash/<id>/crash.sym.
2. The Breakpad dump's frames in the app read as llvm-symbolizer-14 --inlines reads the dSYM
   (frame 0 at its pc, callers at pc - 1).
   The same walk from symcaches built from the executable and the dSYM into one folder (either
   order) with --symcache-dir gives the same JSON.
2b. The Breakpad dump walked from crash.sym alone (its names, lines and STACK CFI): the
   oracle's frames up to the last it found by CFI (or the context), the same module and offset;
   the app's frames name the concrete function and innermost line llvm-symbolizer-14 reads
   from the dSYM (crash.sym has no INLINE records).
3. Each frame says how it was found; frame 0 is "context" and the app's caller is found by
   "cfi" (compact unwind), the Crashpad dumps' by "frame_pointer" first.
Prints "N passed, N failed" like tests/harness.h.
"""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("STACKSIFT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("STACKSIFT_BIN") or os.path.join(SRC, "build/server/stacksift")
BUILD = os.environ.get("STACKSIFT_BUILD_DIR") or os.path.join(SRC, "build")
SHARED = os.path.join(os.path.dirname(SRC), "shared", "minidumps")
BREAKPAD = os.path.join(SHARED, "macos-x86_64-breakpad")
PACKAGE = "minidump@0.26.0"

passed = failed = 0


def check(ok, message):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL", message)
    return ok


def oracle_exe():
    """minidump_stackwalk of the pinned npm package, installed once under a lock."""
    dest = os.path.join(BUILD, "minidump-node")
    os.makedirs(dest, exist_ok=True)
    exe = os.path.join(dest, "node_modules", "minidump", "bin", "linux-x64", "minidump_stackwalk")
    stamp = os.path.join(dest, ".installed")
    with open(os.path.join(BUILD, "minidump-node.lock"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not (os.path.exists(stamp) and open(stamp).read() == PACKAGE and os.access(exe, os.X_OK)):
            subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
                            "--no-save", "--loglevel=error", PACKAGE], cwd=dest, check=True,
                           timeout=300)
            with open(stamp, "w") as f:
                f.write(PACKAGE)
    return exe


def oracle_frames(exe, dump, symbols):
    """{thread index: [(module, function, line, offset)]} from `minidump_stackwalk -m`."""
    out = subprocess.run([exe, "-m", dump, symbols], capture_output=True, text=True, timeout=120)
    threads = {}
    for line in out.stdout.splitlines():
        parts = line.split("|")
        if len(parts) != 7 or not parts[0].isdigit():
            continue
        t, _, module, function, _, src_line, offset = parts
        threads.setdefault(int(t), []).append((module, function, src_line, int(offset, 16)))
    return threads


def oracle_last_cfi(exe, dump, symbols):
    """{thread index: index of the last frame minidump_stackwalk found by call frame info (or
    the context frame)} from its text output."""
    out = subprocess.run([exe, dump, symbols], capture_output=True, text=True, timeout=120)
    last, thread, frame = {}, None, None
    for line in out.stdout.splitlines():
        words = line.split()
        if line.startswith("Thread ") and len(words) > 1 and words[1].isdigit():
            thread = int(words[1])
        elif thread is not None and len(words) > 1 and words[0].isdigit() and line.startswith(" "):
            frame = int(words[0])
        elif thread is not None and frame is not None and line.strip().startswith("Found by:"):
            if "call frame info" in line or "instruction pointer in context" in line:
                last[thread] = frame
    return last


def ours(dump, debug_files):
    out = subprocess.run([BIN, "minidump", "walk", "--json", dump] + debug_files,
                         capture_output=True, text=True, timeout=120)
    if not check(out.returncode == 0, f"stacksift minidump walk {dump}: {out.returncode} {out.stderr}"):
        return None
    return json.loads(out.stdout)


def compare(name, walked, oracle):
    threads = walked["threads"]
    check(len(threads) == len(oracle), f"{name}: {len(threads)} threads, oracle {len(oracle)}")
    agree = total = 0
    for ti, thread in enumerate(threads):
        want = oracle.get(ti, [])
        got = thread["frames"]
        check(len(got) == len(want),
              f"{name} thread {ti}: {len(got)} frames, oracle {len(want)}")
        for k, (w, g) in enumerate(zip(want, got)):
            module, function, src_line, offset = w
            total += 1
            if function:
                # symbolicated by the oracle from crash.sym: the concrete function, the
                # innermost line (Breakpad's FUNC and line records)
                syms = g["symbols"]
                ok = (g["module"] == module and syms and syms[-1]["function"] == function and
                      str(syms[0]["line"]) == src_line)
            elif module:
                ok = g["module"] == module and int(g["rel_addr"], 16) == offset
            else:
                ok = g["module"] is None and int(g["pc"], 16) == offset
            agree += ok
            check(ok, f"{name} thread {ti} frame {k}: ours {g['module']} {g['rel_addr']} "
                      f"{[s['function'] for s in g['symbols']]} ({g['found']}), oracle {w}")
    print(f"{name}: {agree}/{total} frames as minidump_stackwalk")


def compare_to_cfi(name, walked, oracle, last_cfi):
    """Each thread's frames up to the oracle's last frame found by CFI: the same module and
    module offset."""
    agree = total = 0
    for ti, thread in enumerate(walked["threads"]):
        want = oracle.get(ti, [])[:last_cfi.get(ti, -1) + 1]
        got = thread["frames"]
        check(len(got) >= len(want), f"{name} thread {ti}: {len(got)} frames, oracle's CFI frames {len(want)}")
        for k, (w, g) in enumerate(zip(want, got)):
            module, function, src_line, offset = w
            total += 1
            if function:
                # the oracle symbolicated it from crash.sym: its offset is then the line's
                syms = g["symbols"]
                ok = (g["module"] == module and syms and syms[-1]["function"] == function and
                      str(syms[0]["line"]) == src_line)
            else:
                ok = g["module"] == module and g["rel_addr"] is not None and int(g["rel_addr"], 16) == offset
            agree += ok
            check(ok, f"{name} thread {ti} frame {k}: ours {g['module']} {g['rel_addr']} ({g['found']}), oracle {w}")
    check(total > 0, f"{name}: the oracle found no frame by CFI or context")
    print(f"{name}: {agree}/{total} frames as minidump_stackwalk up to its last CFI frame")


def symbolizer_agrees(walked, concrete_only=False):
    dwarf = os.path.join(BREAKPAD, "crash.dSYM", "Contents", "Resources", "DWARF", "crash")
    text_vmaddr = 0x100000000  # the executable's __TEXT vmaddr (otool -l)
    n = 0
    for thread in walked["threads"]:
        for k, f in enumerate(thread["frames"]):
            if f["module"] != "crash":
                continue
            addr = int(f["rel_addr"], 16) - (0 if k == 0 else 1) + text_vmaddr
            out = subprocess.run(["llvm-symbolizer-14", "--inlines", f"--obj={dwarf}", hex(addr)],
                                 capture_output=True, text=True, timeout=60).stdout.split("\n")
            want = []
            for i in range(0, len(out) - 1, 2):
                if out[i]:
                    path, line = out[i + 1].rsplit(":", 2)[:2]
                    want.append((out[i], path, int(line)))
            got = [(s["function"], s["file"], s["line"]) for s in f["symbols"]]
            if concrete_only and want and got:
                # a .sym without INLINE records: the concrete function, at the innermost line
                want = [(want[-1][0], want[0][1], want[0][2])]
                got = [(got[-1][0], got[0][1], got[0][2])]
            check(got == want, f"crash frame {k} at {hex(addr)}: ours {got}, llvm-symbolizer {want}")
            n += 1
    check(n > 0, "no frame of the Breakpad dump fell in the app")


def main():
    if not os.path.isdir(SHARED):
        print(f"no {SHARED}")
        return 1
    exe = oracle_exe()
    tmp = tempfile.mkdtemp(prefix="stacksift-minidump-")
    try:
        symbols = os.path.join(tmp, "symbols")
        sym_dir = os.path.join(symbols, "crash", "67E9247C814E392BA027DBDE6748FCBF0")
        os.makedirs(sym_dir)
        shutil.copyfile(os.path.join(BREAKPAD, "crash.sym"), os.path.join(sym_dir, "crash.sym"))
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)

        dump = os.path.join(BREAKPAD, "macos.dmp")
        walked = ours(dump, [os.path.join(BREAKPAD, "crash"), os.path.join(BREAKPAD, "crash.dSYM")])
        if walked:
            compare("breakpad", walked, oracle_frames(exe, dump, symbols))
            frames = walked["threads"][0]["frames"]
            check(frames[0]["found"] == "context", f"frame 0 found by {frames[0]['found']}")
            check(len(frames) > 1 and frames[1]["found"] == "cfi",
                  "the app's caller is not found by compact unwind")
            symbolizer_agrees(walked)
        # the same walk from symcaches (`stacksift symcache build`, the server's stored form):
        # the executable's and the dSYM's into one folder, in either order, give one symcache
        # per UUID with the dSYM's names and the executable's unwind section
        exe_file, dsym = os.path.join(BREAKPAD, "crash"), os.path.join(BREAKPAD, "crash.dSYM")
        for order in ((exe_file, dsym), (dsym, exe_file)):
            symc = tempfile.mkdtemp(dir=tmp)
            for f in order:
                out = subprocess.run([BIN, "symcache", "build", f, "-o", symc], capture_output=True, text=True,
                                     timeout=120)
                check(out.returncode == 0, f"symcache build {f}: {out.stderr}")
            out = subprocess.run([BIN, "minidump", "walk", "--json", "--symcache-dir", symc, dump],
                                 capture_output=True, text=True, timeout=120)
            if check(out.returncode == 0, f"minidump walk --symcache-dir: {out.stderr}") and walked:
                from_symc = json.loads(out.stdout)
                check(from_symc == walked, "the walk from symcaches differs from the walk from the files "
                      f"(built {[os.path.basename(f) for f in order]})")
        # the .sym alone (names, lines and STACK CFI, no executable or dSYM): the oracle's
        # frames up to the last it found by CFI, and the app's frames as the dSYM reads
        walked = ours(dump, [os.path.join(BREAKPAD, "crash.sym")])
        if walked:
            oracle = oracle_frames(exe, dump, symbols)
            compare_to_cfi("breakpad from crash.sym", walked, oracle, oracle_last_cfi(exe, dump, symbols))
            # past the CFI frames too: the scan skips words whose call no FUNC covers
            compare("breakpad from crash.sym, every frame", walked, oracle)
            symbolizer_agrees(walked, concrete_only=True)
        # crash.sym first, then the executable and the dSYM: one symcache per UUID with the
        # dSYM's names (the inline chain), the executable's compact unwind and the .sym's CFI
        walked = ours(dump, [os.path.join(BREAKPAD, n) for n in ("crash.sym", "crash", "crash.dSYM")])
        if walked:
            compare("breakpad from crash.sym, crash and crash.dSYM", walked, oracle_frames(exe, dump, symbols))
            frames = walked["threads"][0]["frames"]
            check(len(frames) > 1 and frames[1]["found"] == "cfi",
                  "with crash.sym given first, the app's caller is not found by compact unwind")
            symbolizer_agrees(walked)
        # without the executable there is no CFI: the walk is what the oracle does without
        # symbols (frame pointer and scan)
        walked = ours(dump, [])
        if walked:
            compare("breakpad without unwind info", walked, oracle_frames(exe, dump, empty))
        for name in ("simple-crashpad.dmp", "electron-1.4.3-mac.dmp"):
            dump = os.path.join(SHARED, "crashpad", name)
            walked = ours(dump, [])
            if walked:
                compare(name, walked, oracle_frames(exe, dump, empty))
                check(any(f["found"] == "frame_pointer" for t in walked["threads"] for f in t["frames"]),
                      f"{name}: no frame found by frame pointer")
        out = subprocess.run([BIN, "minidump", "walk", os.path.join(SHARED, "invalid", "invalid-range.dmp")],
                             capture_output=True, text=True, timeout=60)
        check(out.returncode == 1 and "no readable thread list" in out.stderr,
              f"a malformed dump: {out.returncode} {out.stderr}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
