#!/usr/bin/env python3
"""bench_sentry_gen.py STACKSIFT DIR COPIES - for the report-N.crash files of DIR
(bench_ingest_gen.py's 30-frame Apple-text reports), envelope-M.bin files: the same crashes as
sentry-cocoa events (macho images, frames caller first, mach exception) in gzip'd envelopes, as
the SDK sends them, COPIES of each with distinct event_ids (M = copy * reports + N): an event_id sent twice is
stored once, so a run sends each envelope once (bench_post.lua's `unique`) and needs as many
as it sends. Reads each report through
`stacksift parse --json`, so both forms hold the same frames.
"""
import gzip
import json
import os
import subprocess
import sys
import uuid

stacksift, d, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
events = []
n = 0
while os.path.exists(os.path.join(d, f"report-{n}.crash")):
    model = json.loads(subprocess.run([stacksift, "parse", "--json", os.path.join(d, f"report-{n}.crash")],
                                      capture_output=True, text=True, check=True).stdout)
    images = model["images"]

    def frame(f):
        im = images[f["image_index"]] if f["image_index"] is not None else None
        out = {"instruction_addr": f["address"], "in_app": im is not None and im["name"] == "FixtureApp"}
        if im is not None:
            out.update(image_addr=im["load_address"], package=im["path"])
        if f["symbol"]:
            out["function"] = f["symbol"]
        return out
    m = model["metadata"]
    event = {
        "event_id": "", "platform": "cocoa", "level": "fatal", "release": "com.stacksift.FixtureApp@2.0+1",
        "timestamp": 1764201600 + n, "sdk": {"name": "sentry.cocoa", "version": "8.40.1"},
        "contexts": {"os": {"name": "iOS", "version": "17.5", "build": "21F79"},
                     "device": {"model": m["hardware_model"], "arch": "arm64"},
                     "app": {"app_identifier": m["bundle_id"], "app_name": "FixtureApp",
                             "app_version": "2.0", "app_build": "1"}},
        "exception": {"values": [{"type": "EXC_BAD_ACCESS", "value": "KERN_INVALID_ADDRESS", "thread_id": 0,
                                  "mechanism": {"type": "mach", "handled": False, "meta": {
                                      "mach_exception": {"exception": 1, "code": 1, "subcode": 8,
                                                         "name": "EXC_BAD_ACCESS"},
                                      "signal": {"number": 11, "code": 0, "name": "SIGSEGV"}}}}]},
        "threads": {"values": [{"id": t["index"], "crashed": t["crashed"],
                                "stacktrace": {"frames": [frame(f) for f in reversed(t["frames"])]}}
                               for t in model["threads"]]},
        "debug_meta": {"images": [{"type": "macho", "debug_id": im["uuid"].lower(), "code_file": im["path"],
                                   "image_addr": im["load_address"],
                                   "image_size": int(im["end_address"], 16) - int(im["load_address"], 16) + 1}
                                  for im in images]},
    }
    events.append(event)
    n += 1
# The payload is serialized once per crash, with a placeholder where each copy's id goes.
for k, event in enumerate(events):
    event["event_id"] = "EVENT-ID-PLACEHOLDER-0123456789AB"   # 32 characters, as an id
    # compact, as sentry-cocoa's NSJSONSerialization writes it (no blanks after ',' and ':')
    events[k] = json.dumps(event, separators=(",", ":")).encode()
for c in range(copies):
    for k, template in enumerate(events):
        m = c * len(events) + k
        eid = uuid.UUID(int=(0x5e << 120) | m).hex
        payload = template.replace(b"EVENT-ID-PLACEHOLDER-0123456789AB", eid.encode())
        env = (json.dumps({"event_id": eid, "sent_at": "2026-11-27T00:00:00Z"},
                          separators=(",", ":")).encode() + b"\n" +
               json.dumps({"type": "event", "length": len(payload)}, separators=(",", ":")).encode() +
               b"\n" + payload + b"\n")
        with open(os.path.join(d, f"envelope-{m}.bin"), "wb") as f:
            f.write(gzip.compress(env, 6))
print(f"bench_sentry_gen: {copies * len(events)} envelopes", file=sys.stderr)
