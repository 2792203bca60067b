#!/usr/bin/env python3
"""bench_ingest_gen.py STACKSIFT FIXTURES OUTDIR COUNT - COUNT Apple-text crash reports of the
-O2 fixture app, 30 frames on the crashed thread (in-app frames from the fixture's own symbol
table through `stacksift lookup`, plus system frames), random ASLR slides, for bench_ingest.sh.
"""
import json
import os
import random
import subprocess
import sys

stacksift, fixtures, out, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
man = json.load(open(os.path.join(fixtures, "manifest.json")))
fx = next(f for f in man["fixtures"] if f["name"] == "arm64-O2")
sl = fx["slices"][0]
vm, size = int(sl["text_vmaddr"], 16), int(sl["text_vmsize"], 16)
addrs = "\n".join(hex(a) for a in range(vm, vm + size, 4))
res = subprocess.run([stacksift, "lookup", "--json", "-o", os.path.join(fixtures, fx["dwarf"])],
                     input=addrs, capture_output=True, text=True, check=True).stdout
whole = {}
for line in res.splitlines():
    d = json.loads(line)
    if len(d["frames"]) == 1 and not d["frames"][0]["function"].startswith("_mh_"):
        whole.setdefault(d["frames"][0]["function"], []).append(int(d["address"], 16) - vm)
funcs = sorted(whole)
uuid = sl["uuid"].replace("-", "").lower()
SYS = [("libsystem_kernel.dylib", "/usr/lib/system/libsystem_kernel.dylib", ["mach_msg2_trap", "__pthread_kill"]),
       ("CoreFoundation", "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation",
        ["__CFRunLoopRun", "CFRunLoopRunSpecific", "__CFRunLoopDoObservers"]),
       ("UIKitCore", "/System/Library/PrivateFrameworks/UIKitCore.framework/UIKitCore",
        ["UIApplicationMain", "-[UIApplication sendEvent:]"]),
       ("libobjc.A.dylib", "/usr/lib/libobjc.A.dylib", ["objc_msgSend"])]
rnd = random.Random(7)
os.makedirs(out, exist_ok=True)
for n in range(count):
    app = 0x100000000 + rnd.randrange(4096) * 0x4000
    sysload = [0x180000000 + i * 0x2000000 + rnd.randrange(256) * 0x4000 for i in range(len(SYS))]
    site = funcs[n % len(funcs)]
    lines = []

    def thread(idx, crashed, nframes):
        lines.append(f"Thread {idx}{' Crashed' if crashed else ''}:")
        for i in range(nframes):
            if crashed and i == 0:
                off = rnd.choice(whole[site])
            elif rnd.random() < 0.5:
                off = rnd.choice(whole[rnd.choice(funcs)]) + 4
            else:
                k = rnd.randrange(len(SYS))
                name, _, syms = SYS[k]
                lines.append(f"{i:<4}{name:<30}\t0x{sysload[k] + 0x1000 + 16 * i:016x} {rnd.choice(syms)} + {16 * i}")
                continue
            lines.append(f"{i:<4}{'FixtureApp':<30}\t0x{app + off:016x} 0x{app:x} + {off}")
        lines.append("")

    thread(0, True, 30)
    thread(1, False, 10)
    thread(2, False, 10)
    path = "/private/var/containers/Bundle/Application/6F1C2B3A-0000-4000-8000-00000000AAAA/FixtureApp.app/FixtureApp"
    head = (f"Incident Identifier: {rnd.getrandbits(32):08X}-1111-2222-3333-444455556666\n"
            f"Hardware Model:      iPhone14,5\nProcess:             FixtureApp [4242]\n"
            f"Path:                {path}\nIdentifier:          com.stacksift.FixtureApp\n"
            f"Version:             2.0 (1)\nCode Type:           ARM-64 (Native)\n\n"
            f"OS Version:          iPhone OS 17.5 (21F79)\nReport Version:      104\n\n"
            f"Exception Type:  EXC_BAD_ACCESS (SIGSEGV)\nTriggered by Thread:  0\n\n")
    images = [f"0x{app:x} - 0x{app + size - 1:x} FixtureApp arm64  <{uuid}> {path}"]
    for k, (name, p, _) in enumerate(SYS):
        images.append(f"0x{sysload[k]:x} - 0x{sysload[k] + 0xffffff:x} {name} arm64e  <{k + 1:032x}> {p}")
    with open(os.path.join(out, f"report-{n}.crash"), "w") as f:
        f.write(head + "\n".join(lines) + "\nBinary Images:\n" + "\n".join(images) + "\n")
