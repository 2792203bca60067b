#!/usr/bin/env python3
"""demo_samples.py STACKSIFT FIXTURES OUTDIR - privacy-API sample batches for deploy/demo.sh.

Six test devices run two builds (41 and 42) of the fixture app; each records the stacks of its
calls into four privacy-sensitive APIs and sends one batch per build (OUTDIR/batch-*.json, the
format of docs/report-formats.md "Sample batches"). The stacks go through real functions of
the -O2 fixture app (found with `stacksift lookup`, like demo_reports.py), below a system
framework frame; build 42 adds a call site that build 41 did not have, so the dashboard's
Privacy APIs view has something new to highlight. Prints the total of calls on stdout.
"""
import json
import os
import random
import subprocess
import sys

stacksift, fixtures, out = sys.argv[1], sys.argv[2], sys.argv[3]
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
    fn = d["frames"][0]["function"] if len(d["frames"]) == 1 else ""
    if fn and not fn.startswith("_mh_") and fn != "main" and "block_invoke" not in fn:
        whole.setdefault(fn, []).append(int(d["address"], 16) - vm)
funcs = sorted(f for f, offs in whole.items() if len(offs) >= 2)

APIS = [("CLLocationManager.requestLocation", "CoreLocation",
         "/System/Library/Frameworks/CoreLocation.framework/CoreLocation"),
        ("UIPasteboard.string", "UIKitCore",
         "/System/Library/PrivateFrameworks/UIKitCore.framework/UIKitCore"),
        ("PHPhotoLibrary.requestAuthorization", "Photos",
         "/System/Library/Frameworks/Photos.framework/Photos"),
        ("ASIdentifierManager.advertisingIdentifier", "AdSupport",
         "/System/Library/Frameworks/AdSupport.framework/AdSupport")]
rnd = random.Random(11)
# per API: call paths (in-app functions, top first); the last one is new in build 42
paths = {api: [rnd.sample(funcs, 4) for _ in range(3)] for api, _, _ in APIS}
os.makedirs(out, exist_ok=True)
calls = 0
for build in ("41", "42"):
    for device in range(6):
        app_load = 0x100000000 + rnd.randrange(1, 4096) * 0x4000
        images = [{"name": "FixtureApp", "uuid": sl["uuid"], "arch": "arm64",
                   "load_address": hex(app_load), "size": size,
                   "path": "/private/var/containers/Bundle/Application/DEMO/FixtureApp.app/FixtureApp"}]
        for i, (_, name, path) in enumerate(APIS):
            images.append({"name": name, "uuid": "%08X-DE00-4000-8000-%012X" % (0xD0 + i, 0x5A + i),
                           "arch": "arm64", "load_address": hex(0x190000000 + i * 0x1000000),
                           "size": 0x800000, "path": path})
        samples = []
        for i, (api, _, _) in enumerate(APIS):
            live = paths[api] if build == "42" else paths[api][:-1]
            for p, fns in enumerate(live):
                count = rnd.randrange(1, 40) * (3 - p if p < 3 else 1)
                frames = [hex(0x190000000 + i * 0x1000000 + 0x2340)]
                frames += [hex(app_load + whole[f][0] + 4) for f in fns]
                samples.append({"tag": api, "thread": "main", "frames": frames, "count": count})
                calls += count
        batch = {"format_version": 1, "batch_id": f"demo-{build}-{device}",
                 "app": {"name": "FixtureApp", "bundle_id": "com.example.fixture",
                         "version": "2.0", "build": build},
                 "os": {"name": "iOS", "version": "17.4", "build": "21E219"},
                 "device": {"model": "iPhone15,2", "id": f"test-device-{device:02d}"},
                 "arch": "arm64", "images": images, "samples": samples}
        with open(os.path.join(out, f"batch-{build}-{device}.json"), "w") as f:
            json.dump(batch, f)
print(calls)
