#!/usr/bin/env python3
"""demo_reports.py - write crash and hang reports of the fixture app for deploy/demo.sh.

    deploy/demo_reports.py STACKSIFT_BIN FIXTURES_DIR OUT_DIR [SEED]

The reports are made the way a device makes them, from the fixture app that
tests/fixtures/build.sh compiled: crash sites are real functions of FixtureApp, their
addresses come from `stacksift lookup --json` over the app's own dSYMs (every 4th address
of __TEXT), each report gets a random ASLR slide, system frames around the app's, a random
crashed thread, a device and an OS version. Version 1.0 is the -O0 build, 2.0 the -O2
build (other UUIDs, other addresses): the same site must group into one issue across both.
A few hangs of the DWARF 5 app (FixtureD5) are written too; demo.sh does not upload that
app's dSYM, so they show on the dashboard's missing-dSYMs page.

Files: OUT_DIR/NNNN-<site>.crash (Apple text) and OUT_DIR/NNNN-<site>.json (stacksift
JSON stack format, docs/report-formats.md). Prints one summary line. Python 3 stdlib only.
"""
import json
import os
import random
import subprocess
import sys

APP_PATH = ("/private/var/containers/Bundle/Application/6F1C2B3A-0000-4000-8000-00000000AAAA/"
            "FixtureApp.app/FixtureApp")

# name, path, uuid, size
SYSTEM = [
    ("libsystem_kernel.dylib", "/usr/lib/system/libsystem_kernel.dylib",
     "B1F0C8A2-6A51-3C3B-9B57-2C8E4D0F1101", 0x40000),
    ("libsystem_pthread.dylib", "/usr/lib/system/libsystem_pthread.dylib",
     "B1F0C8A2-6A51-3C3B-9B57-2C8E4D0F1102", 0x10000),
    ("libsystem_c.dylib", "/usr/lib/system/libsystem_c.dylib",
     "B1F0C8A2-6A51-3C3B-9B57-2C8E4D0F1103", 0x80000),
    ("libobjc.A.dylib", "/usr/lib/libobjc.A.dylib",
     "B1F0C8A2-6A51-3C3B-9B57-2C8E4D0F1104", 0x40000),
    ("CoreFoundation", "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation",
     "B1F0C8A2-6A51-3C3B-9B57-2C8E4D0F1105", 0x400000),
    ("UIKitCore", "/System/Library/PrivateFrameworks/UIKitCore.framework/UIKitCore",
     "B1F0C8A2-6A51-3C3B-9B57-2C8E4D0F1106", 0x1000000),
]
KERNEL, PTHREAD, LIBC, OBJC, CF, UIKIT = range(6)

NOISE = [(CF, 0x1234, "__CFRunLoopDoObservers", 400), (CF, 0x2234, "__CFRunLoopRun", 1200),
         (OBJC, 0x3234, "objc_msgSend", 32), (UIKIT, 0x4234, "-[UIView layoutSubviews]", 88),
         (UIKIT, 0x5234, "-[UIApplication sendEvent:]", 240)]
BOTTOM = [(CF, 0x6234, "CFRunLoopRunSpecific", 600), (UIKIT, 0x7234, "UIApplicationMain", 300)]
ABORT = [(KERNEL, 0x1008, "__pthread_kill", 8), (PTHREAD, 0x2008, "pthread_kill", 268),
         (LIBC, 0x3008, "abort", 180)]
IDLE = [(KERNEL, 0x1100, "mach_msg2_trap", 8)]

# Crash sites: the crashing function, then its in-app callers (outermost last), the
# exception, and how often it happens (reports per site, before versions are split).
SITES = [
    ("crashsite::deref_null(crashsite::Node*)",
     ["crashsite::level3(crashsite::Node*)", "crashsite::level2(crashsite::Node*)",
      "crashsite::level1(crashsite::Node*)", "crash_run", "main"],
     ("EXC_BAD_ACCESS", "SIGSEGV", "KERN_INVALID_ADDRESS at 0x0000000000000000"), 46),
    ("-[FXWorker runTask:]", ["-[FXWorker(Extras) extraWork:]", "objc_run", "main"],
     ("EXC_CRASH", "SIGABRT", None), 31),
    ("crashsite::trap_now(int)", ["crashsite::divide(int, int)", "crash_run", "main"],
     ("EXC_BREAKPOINT", "SIGTRAP", None), 22),
    ("crashsite::write_oob(int*, int)", ["crash_run", "main"],
     ("EXC_BAD_ACCESS", "SIGBUS", "KERN_PROTECTION_FAILURE at 0x000000016f5a3ff8"), 14),
    ("geo::Rect::area() const", ["geo::detail::total_area(geo::Shape* const*, int)",
                                 "shapes_run", "main"],
     ("EXC_BAD_ACCESS", "SIGSEGV", "KERN_INVALID_ADDRESS at 0x0000000000000010"), 9),
    ("crashsite::call_through(int (*)(int), int)", ["crash_run", "main"],
     ("EXC_BAD_ACCESS", "SIGSEGV", "KERN_INVALID_ADDRESS at 0x0000000000000000"), 5),
    ("bridge::with_blocks(int)", ["bridge_run", "main"], ("EXC_CRASH", "SIGABRT", None), 3),
    # Inlined into calc_run at -O2: one address there stands for four functions.
    ("calc_factorial", ["apply", "calc_apply_all", "calc_run", "main"],
     ("EXC_BREAKPOINT", "SIGTRAP", None), 12),
]
# Hangs (stacksift JSON, kind "hang"): the main thread stuck in these.
HANGS = [("calc_fib", ["calc_run", "main"], 12),
         ("fx_clamp", ["-[FXRoot computeWith:and:]", "-[FXWorker runTask:]", "objc_run", "main"], 6)]
MODELS = ["iPhone14,5", "iPhone15,2", "iPhone16,1", "iPad13,1", "iPhone12,1"]
OSES = [("17.5", "21F79"), ("18.1", "22B83"), ("18.5", "22F76"), ("16.7", "20H19")]
BUILDS = [("arm64-O0", "1.0", "100"), ("arm64-O2", "2.0", "200")]


def fixture(manifest, name):
    for f in manifest["fixtures"]:
        if f["name"] == name:
            return f
    sys.exit(f"demo_reports: fixture {name} not in manifest.json")


def map_functions(stacksift, fixtures, fx):
    """function name -> whole (not inlined) addresses, as offsets from __TEXT."""
    sl = fx["slices"][0]
    base, size = int(sl["text_vmaddr"], 16), int(sl["text_vmsize"], 16)
    addrs = "\n".join(hex(a) for a in range(base, base + size, 4))
    out = subprocess.run([stacksift, "lookup", "--json", "-o", os.path.join(fixtures, fx["dwarf"])],
                         input=addrs, capture_output=True, text=True, check=True).stdout
    funcs = {}
    for line in out.splitlines():
        j = json.loads(line)
        # One function, or a chain of inlined ones (innermost first) at the same address.
        key = tuple(fr["function"] for fr in j["frames"])
        if len(key) == 1:
            key = key[0]
        if key:
            funcs.setdefault(key, []).append(int(j["address"], 16) - base)
    return funcs, sl["uuid"], size


class Scene:
    """One process at crash time: load addresses, threads as (image, offset, symbol) lists."""

    def __init__(self, rng, text_size):
        self.app_load = 0x100000000 + rng.randrange(4096) * 0x4000
        self.app_size = text_size
        self.sys_load = [0x180000000 + i * 0x2000000 + rng.randrange(256) * 0x4000
                         for i in range(len(SYSTEM))]
        self.model = rng.choice(MODELS)
        self.os = rng.choice(OSES)


def app_frames(rng, funcs, names):
    """One frame per named function, innermost first; where the build inlined a run of them
    (-O2), one frame at an address of that inlined chain stands for the whole run. Callers
    get + 4: a return address."""
    out = []
    i = 0
    while i < len(names):
        for k in range(len(names) - i, 0, -1):
            offs = funcs.get(tuple(names[i:i + k]) if k > 1 else names[i])
            if offs:
                break
        if not offs:
            return None
        out.append((-1, rng.choice(offs) + (4 if out else 0), None, 0))
        i += k
    return out


def threads_for(rng, crashing, nthreads=3):
    crashed = rng.randrange(nthreads)
    threads = []
    for t in range(nthreads):
        if t == crashed:
            fr = list(crashing)
        else:
            fr = list(IDLE) + [rng.choice(NOISE) for _ in range(rng.randrange(3))]
        threads.append(fr + BOTTOM)
    return threads, crashed


def hang_threads(rng, stuck):
    """The main thread stuck in `stuck`, two idle threads."""
    idle = [list(IDLE) + [rng.choice(NOISE) for _ in range(rng.randrange(3))] + BOTTOM
            for _ in range(2)]
    return [list(stuck) + BOTTOM] + idle


def addr(sc, f):
    img, off, _, _ = f
    return (sc.app_load if img < 0 else sc.sys_load[img]) + off


def apple_text(rng, sc, threads, crashed, exc, uuid, version, build, app="FixtureApp"):
    etype, sig, sub = exc
    lines = [
        f"Incident Identifier: {rng.getrandbits(32):08X}-1111-4222-8333-{rng.getrandbits(48):012X}",
        f"Hardware Model:      {sc.model}",
        f"Process:             {app} [{rng.randrange(300, 9000)}]",
        f"Path:                {APP_PATH}",
        "Identifier:          com.stacksift.FixtureApp",
        f"Version:             {version} ({build})",
        "Code Type:           ARM-64 (Native)",
        "Parent Process:      launchd [1]",
        "",
        f"Date/Time:           2026-11-{rng.randrange(1, 28):02d} 10:{rng.randrange(60):02d}:00.000 +0000",
        f"OS Version:          iPhone OS {sc.os[0]} ({sc.os[1]})",
        "Report Version:      104",
        "",
        f"Exception Type:  {etype} ({sig})",
        "Exception Codes: 0x0000000000000001, 0x0000000000000000",
    ]
    if sub:
        lines.append(f"Exception Subtype: {sub}")
    if sig == "SIGABRT":
        lines += ["", "Application Specific Information:",
                  "*** Terminating app due to uncaught exception 'NSInternalInconsistencyException', "
                  "reason: 'task queue is empty'"]
    lines += [f"Triggered by Thread:  {crashed}", ""]
    for t, frames in enumerate(threads):
        lines.append(f"Thread {t} Crashed:" if t == crashed else f"Thread {t}:")
        for i, f in enumerate(frames):
            a = addr(sc, f)
            if f[0] < 0:
                lines.append(f"{i:<4}{app:<30}\t0x{a:016x} 0x{sc.app_load:x} + {a - sc.app_load}")
            else:
                lines.append(f"{i:<4}{SYSTEM[f[0]][0]:<30}\t0x{a:016x} {f[2]} + {f[3]}")
        lines.append("")
    lines.append("Binary Images:")
    lines.append(f"0x{sc.app_load:x} - 0x{sc.app_load + sc.app_size - 1:x} {app} arm64  "
                 f"<{uuid.replace('-', '').lower()}> {APP_PATH}")
    for i, (name, path, u, size) in enumerate(SYSTEM):
        lines.append(f"0x{sc.sys_load[i]:x} - 0x{sc.sys_load[i] + size - 1:x} {name} arm64e  "
                     f"<{u.replace('-', '').lower()}> {path}")
    return "\n".join(lines) + "\n"


def stack_json(rng, sc, threads, crashed, uuid, version, build, app, reason):
    images = [{"name": app, "uuid": uuid, "arch": "arm64", "load_address": hex(sc.app_load),
               "size": sc.app_size, "path": APP_PATH.replace("FixtureApp", app), "in_app": True}]
    for i, (name, path, u, size) in enumerate(SYSTEM):
        images.append({"name": name, "uuid": u, "arch": "arm64e",
                       "load_address": hex(sc.sys_load[i]), "size": size, "path": path})
    ths = []
    for t, frames in enumerate(threads):
        ths.append({"name": "main" if t == 0 else f"worker {t}",
                    "queue": "com.apple.main-thread" if t == 0 else None,
                    "crashed": t == crashed,
                    "frames": [hex(addr(sc, f)) for f in frames]})
        if ths[-1]["queue"] is None:
            del ths[-1]["queue"]
    return json.dumps({
        "format_version": 1, "kind": "hang",
        "app": {"name": app, "bundle_id": f"com.stacksift.{app}", "version": version,
                "build": build},
        "os": {"name": "iOS", "version": sc.os[0], "build": sc.os[1]},
        "device": {"model": sc.model}, "arch": "arm64",
        "timestamp": f"2026-11-{rng.randrange(1, 28):02d}T12:00:00Z",
        "incident_id": f"{rng.getrandbits(32):08X}-0000-4000-8000-{rng.getrandbits(48):012X}",
        "reason": reason, "images": images, "threads": ths,
    }, indent=1) + "\n"


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.split("\n\n")[1])
    stacksift, fixtures, out_dir = sys.argv[1:4]
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) == 5 else 2026)
    with open(os.path.join(fixtures, "manifest.json")) as f:
        manifest = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    builds = []
    for name, version, build in BUILDS:
        funcs, uuid, size = map_functions(stacksift, fixtures, fixture(manifest, name))
        builds.append((funcs, uuid, size, version, build))
    written = {"crash": 0, "hang": 0}
    n = 0

    def write(name, ext, text):
        nonlocal n
        n += 1
        safe = "".join(c if c.isalnum() else "_" for c in name)[:40].strip("_")
        with open(os.path.join(out_dir, f"{n:04d}-{safe}.{ext}"), "w") as f:
            f.write(text)

    for func, callers, exc, count in SITES:
        for k in range(count):
            funcs, uuid, size, version, build = builds[k % 2 if k < 4 else rng.randrange(2)]
            sc = Scene(rng, size)
            app = app_frames(rng, funcs, [func] + callers)
            if app is None:
                continue   # not a whole function in this build: nothing to crash in
            top = list(ABORT) if exc[1] == "SIGABRT" else []
            crashing = top + app[:1] + [rng.choice(NOISE) for _ in range(rng.randrange(2))] + app[1:]
            threads, crashed = threads_for(rng, crashing)
            write(func, "crash", apple_text(rng, sc, threads, crashed, exc, uuid, version, build))
            written["crash"] += 1
    for func, callers, count in HANGS:
        for k in range(count):
            funcs, uuid, size, version, build = builds[k % 2]
            sc = Scene(rng, size)
            app = app_frames(rng, funcs, [func] + callers)
            if app is None:
                continue
            threads = hang_threads(rng, app)
            write("hang-" + func, "json",
                  stack_json(rng, sc, threads, 0, uuid, version, build, "FixtureApp",
                             "main thread blocked for %.1f s" % (2 + rng.random() * 6)))
            written["hang"] += 1
    # FixtureD5: its dSYM is not uploaded, so these wait for it (missing dSYMs page).
    d5 = fixture(manifest, "dwarf5")
    d5_uuid, d5_size = d5["slices"][0]["uuid"], int(d5["slices"][0]["text_vmsize"], 16)
    for k in range(4):
        sc = Scene(rng, d5_size)
        frames = [(-1, 0x3f00 + 0x40 * (k % 2), None, 0), (-1, 0x3a24, None, 0)]
        threads = hang_threads(rng, frames)
        write("hang-FixtureD5", "json",
              stack_json(rng, sc, threads, 0, d5_uuid, "0.9", "90", "FixtureD5",
                         "main thread blocked for 3.0 s"))
        written["hang"] += 1
    print(f"demo_reports: {written['crash']} crash reports, {written['hang']} hangs in {out_dir}")


if __name__ == "__main__":
    main()
