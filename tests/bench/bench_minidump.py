#!/usr/bin/env python3
"""bench_minidump.py [ROUNDS] - walking and symbolicating minidumps, against Breakpad's
minidump_stackwalk on the same dumps and symbols, in the same run.

Dumps: ../shared/minidumps/ (SOURCE.md): the Electron Crashpad dump (17 threads, 200+
modules, no debug files: both walkers unwind by frame pointers and stack scans) and the
Breakpad dump of the small macOS program with its symbols: stacksift from the symcaches of
the executable and its dSYM (built once beforehand, as the server keeps them), or of crash.sym
alone; minidump_stackwalk from crash.sym laid out as SYMBOLS/crash/<id>/crash.sym (it reads
the text on every run: that is how it works). Each case runs `stacksift minidump walk --json`
and `minidump_stackwalk -m` (machine-readable output, the same work: every thread walked and
symbolicated) in turns, ROUNDS times (default 20), and takes the median CPU time of each
(user + system of the child, from wait4). Both are processes, and a process's start is not
the walk: stacksift's start (43 shared libraries to bind: ~7 ms of CPU here) is several times
minidump_stackwalk's (~1 ms), so the floor of each (each without arguments:
its usage), measured in the same turns, is subtracted, and the
ratio of what is left is the walk's. The target: stacksift's walk at most a fifth of
minidump_stackwalk's (ratio <= 0.20); the raw ratios (floors included) are printed too.
Beside them, the walk as the server's workers run it: in one long-running process with its
symcaches open (build/tests/bench_walk: the dump walked, looked up and written as JSON 200
times; the median per walk, in that thread's CPU time), against minidump_stackwalk's time past
its start (the "in-process ratio"); it must walk to as many frames as the CLI. With
BENCH_STRICT=1 an in-process ratio over 0.20 exits 1: the process ratios say what the CLI
costs, but two start-ups of ~7 ms, measured apart and subtracted, leave a noisy difference
that is mostly the dynamic loader, not the walk.
minidump_stackwalk comes from the npm package minidump@0.26.0, installed as
tests/minidump_walk.py installs it (into BUILD_DIR/minidump-node).
Env: BUILD_DIR (build), BENCH_STRICT (0).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "tests"))
BUILD = os.environ.get("BUILD_DIR", "build")
if not os.path.isabs(BUILD):
    BUILD = os.path.join(SRC, BUILD)
os.environ.setdefault("STACKSIFT_BUILD_DIR", BUILD)
import minidump_walk  # noqa: E402  (the oracle's installer)

SHARED = os.path.join(os.path.dirname(SRC), "shared", "minidumps")
BREAKPAD = os.path.join(SHARED, "macos-x86_64-breakpad")
BIN = os.path.join(BUILD, "server", "stacksift")
WALK = os.path.join(BUILD, "tests", "bench_walk")


def cpu_of(cmd, ok=(0,)):
    """CPU seconds (user + system) of running cmd to completion, its output discarded."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=null)
        _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) not in ok:
        sys.exit(f"bench_minidump: {' '.join(cmd)} exited {status}")
    return ru.ru_utime + ru.ru_stime


def sym_dir(tmp):
    """crash.sym laid out as minidump_stackwalk looks for it."""
    with open(os.path.join(BREAKPAD, "crash.sym")) as f:
        _, _, _, ident, name = f.readline().split(maxsplit=4)
    d = os.path.join(tmp, "symbols", name.strip(), ident)
    os.makedirs(d)
    shutil.copy(os.path.join(BREAKPAD, "crash.sym"), d)
    return os.path.join(tmp, "symbols")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    if not os.access(BIN, os.X_OK):
        sys.exit(f"bench_minidump: build first ({BIN})")
    oracle = minidump_walk.oracle_exe()
    tmp = tempfile.mkdtemp(prefix="stacksift-bench-md.")
    try:
        symbols = sym_dir(tmp)
        empty = os.path.join(tmp, "none")
        os.makedirs(empty)
        electron = os.path.join(SHARED, "crashpad", "electron-1.4.3-mac.dmp")
        breakpad = os.path.join(BREAKPAD, "macos.dmp")
        full, symonly = os.path.join(tmp, "full"), os.path.join(tmp, "sym")
        for folder, inputs in ((full, ("crash", "crash.dSYM")), (symonly, ("crash.sym",))):
            for f in inputs:
                subprocess.run([BIN, "symcache", "build", os.path.join(BREAKPAD, f), "-o", folder],
                               check=True, capture_output=True)
        def symcs(folder):
            return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".symc")]
        cases = [
            ("electron (Crashpad, no debug files)",
             [BIN, "minidump", "walk", "--json", electron], [oracle, "-m", electron, empty],
             [WALK, electron]),
            ("breakpad dump, executable + dSYM / .sym",
             [BIN, "minidump", "walk", "--json", "--symcache-dir", full, breakpad],
             [oracle, "-m", breakpad, symbols], [WALK, breakpad] + symcs(full)),
            ("breakpad dump, .sym alone",
             [BIN, "minidump", "walk", "--json", "--symcache-dir", symonly, breakpad],
             [oracle, "-m", breakpad, symbols], [WALK, breakpad] + symcs(symonly)),
        ]
        floor_ours, floor_theirs = [BIN], [oracle]
        out = []
        missed = []
        for name, ours, theirs, inproc in cases:
            # the work: threads and modules of the dump, from our own reading of it
            info = json.loads(subprocess.run(ours, capture_output=True, check=True).stdout)
            threads = len(info.get("threads", []))
            frames = sum(len(t.get("frames", [])) for t in info.get("threads", []))
            a, b, fa, fb = [], [], [], []
            for _ in range(rounds):
                a.append(cpu_of(ours))
                fa.append(cpu_of(floor_ours, ok=(2,)))
                b.append(cpu_of(theirs))
                fb.append(cpu_of(floor_theirs, ok=(0, 1)))
            ma, mb = statistics.median(a), statistics.median(b)
            wa = max(ma - statistics.median(fa), 0.0)
            wb = max(mb - statistics.median(fb), 1e-9)
            ratio = wa / wb
            walk = json.loads(subprocess.run(inproc + ["--rounds", "200"], capture_output=True,
                                             check=True, text=True).stdout)
            if walk["frames"] != frames:
                sys.exit(f"bench_minidump: {name}: bench_walk walked {walk['frames']} frames, "
                         f"the CLI {frames}")
            in_ratio = walk["median_us"] / 1000 / (wb * 1000)
            out.append({"case": name, "threads": threads, "frames": frames,
                        "stacksift_ms": round(ma * 1000, 2),
                        "minidump_stackwalk_ms": round(mb * 1000, 2),
                        "stacksift_walk_ms": round(wa * 1000, 2),
                        "minidump_stackwalk_walk_ms": round(wb * 1000, 2),
                        "ratio": round(ratio, 3), "raw_ratio": round(ma / mb, 3),
                        "in_process_us": walk["median_us"], "in_process_ratio": round(in_ratio, 4)})
            verdict = "meets" if ratio <= 0.20 else "misses"
            in_verdict = "meets" if in_ratio <= 0.20 else "MISSES"
            print(f"  {name}: {threads} threads, {frames} frames; CPU medians of {rounds}: "
                  f"stacksift {ma * 1000:.2f} ms ({wa * 1000:.2f} past its start), "
                  f"minidump_stackwalk {mb * 1000:.2f} ms ({wb * 1000:.2f} past its start): "
                  f"walk ratio {ratio:.3f} ({verdict} <= 0.20), raw {ma / mb:.3f}; in one process "
                  f"{walk['median_us']:.0f} us a walk: in-process ratio {in_ratio:.3f} ({in_verdict} <= 0.20)",
                  flush=True)
            if in_ratio > 0.20:
                missed.append(name)
        print(json.dumps({"bench": "minidump", "rounds": rounds, "cases": out}))
        if missed and os.environ.get("BENCH_STRICT") == "1":
            sys.exit(1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
