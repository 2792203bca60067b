#!/usr/bin/env python3
"""test_bugsnag_server - a Bugsnag event with chained exceptions through the real server and
Postgres: the causes (exceptions[1...]) are symbolicated like the threads they share frames
with, an image only a cause's stack names counts among the report's missing UUIDs, and the
report's text shows each cause after the backtrace.

The crash is symbolicate_reports.py's (the fixture app arm64-O2 with FixtureKit, dSYMs
uploaded first), written as bugsnag-cocoa's payload by tests/bench/bench_formats_gen.py; the
first cause's stack is the crashed thread's frames plus one frame in an image no other stack
names (no dSYM: it must be listed missing), the second cause has no stack.
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "bench"))
import bench_formats_gen as bg  # noqa: E402
import lookup_oracle as lo  # noqa: E402
import symbolicate_reports as sr  # noqa: E402
from web_instance import Instance, check, checks_done  # noqa: E402

ORPHAN_UUID = "0A1B2C3D-4E5F-4061-8293-A4B5C6D7E8F9"


def main():
    with Instance("bugsnag", workers=1) as inst:
        manifest = lo.load_manifest(inst.fixtures)
        for name in ("arm64-O2", "kit"):
            inst.upload_dsym(next(f for f in manifest["fixtures"] if f["name"] == name))

        rng = random.Random(20261127)
        app = sr.fixture_image(inst.fixtures, manifest, "arm64-O2", rng, 0x100000000)
        kit = sr.fixture_image(inst.fixtures, manifest, "kit", rng, 0x110000000)
        imgs = [app, kit] + sr.system_images(rng, app.arch)
        threads, leb, crashed = sr.make_crash(rng, imgs, [app, kit], app.arch)
        payload = json.loads(bg.bugsnag_payload(imgs, threads, leb, crashed, app.arch))
        event = payload["events"][0]
        crashed_stack = event["threads"][crashed]["stacktrace"]
        orphan = {"frameAddress": "0x1f0000120", "machoLoadAddress": "0x1f0000000",
                  "machoUUID": ORPHAN_UUID, "machoFile": "/usr/lib/libOrphan.dylib",
                  "machoVMAddress": "0x1f0000000"}
        event["exceptions"] += [
            {"errorClass": "NSGenericException", "message": "inner", "type": "cocoa",
             "stacktrace": crashed_stack + [orphan]},
            {"errorClass": "NSError", "message": "root cause", "type": "cocoa"}]
        r = inst.request("POST", "/api/v1/reports", json.dumps(payload).encode(),
                         headers={"Content-Type": "application/json"}, token=inst.tokens["ingest"])
        check(r.status == 202 and r.json().get("format") == "bugsnag",
              f"POST: {r.status} {r.body[:300]!r}")
        rid = r.json()["id"]
        check(inst.wait_processed(120), "report processed")

        rep = inst.request("GET", f"/api/v1/reports/{rid}", token=inst.tokens["read"]).json()
        sym = rep.get("symbolicated") or {}
        causes = sym.get("causes") or []
        check(len(causes) == 2, f"symbolicated model has {len(causes)} causes")
        if len(causes) == 2:
            check(causes[0]["type"] == "NSGenericException" and causes[0]["reason"] == "inner",
                  f"cause 0: {causes[0]['type']} {causes[0]['reason']}")
            check(causes[1]["reason"] == "root cause" and causes[1]["frames"] == [],
                  f"cause 1: {causes[1]}")
            # the cause's frames are the crashed thread's (plus one): symbolicated alike
            tframes = next(t for t in sym["threads"] if t["crashed"])["frames"]
            cframes = causes[0]["frames"]
            check(len(cframes) == len(tframes) + 1, f"{len(cframes)} cause frames")
            n_ok = 0
            for k, (tf, cf) in enumerate(zip(tframes, cframes)):
                check(cf.get("symbolicated") == tf.get("symbolicated") and
                      cf.get("symbols") == tf.get("symbols"),
                      f"cause frame {k}: {cf.get('symbolicated')} {cf.get('symbols')} vs the "
                      f"thread's {tf.get('symbolicated')} {tf.get('symbols')}")
                n_ok += cf.get("symbolicated") == "ok"
            check(n_ok > 0, "no cause frame symbolicated")
            check(cframes[-1].get("symbolicated") == "missing",
                  f"the orphan frame: {cframes[-1].get('symbolicated')}")
        # every image frames fell in without a dSYM (the symbolicated model's list; the
        # report's column holds the in-app ones, which a dSYM upload would resolve)
        missing = [u.upper() for u in sym.get("missing_uuids") or []]
        check(ORPHAN_UUID in missing, f"the cause's own image is not among missing {missing}")

        t = inst.request("GET", f"/api/v1/reports/{rid}?format=text", token=inst.tokens["read"])
        body = t.body.decode("utf-8", "replace")
        check(t.status == 200 and "Caused by: NSGenericException: inner\n" in body and
              "Caused by: NSError: root cause\n" in body, f"?format=text: {body[:400]!r}")
        after = body.split("Caused by: NSGenericException: inner\n", 1)[-1]
        check(any(ext in after.split("\n\n", 1)[0] for ext in (".c:", ".m:", ".cpp:", ".swift:")),
              "the cause's frames in the text are not symbolicated")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
