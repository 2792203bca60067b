#!/usr/bin/env python3
"""bench_plcrash_gen.py FIXTURES OUTDIR COUNT - COUNT crashes of the fixture app (arm64-O2 with
FixtureKit; tests/symbolicate_reports.py's generator: random slides, 3-5 threads of app,
framework and system frames, a Last Exception Backtrace) written twice for
tests/bench/bench_plcrash.sh: report-N.crash, the Apple text PLCrashReporter's formatter would
send, and report-N.plcrash, the same crash as PLCrashReporter's own file
(tests/plcrash_reports.py writes both the same way for test_plcrash_server).
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import lookup_oracle as lo  # noqa: E402
import plcrash_reports as pr  # noqa: E402
import symbolicate_reports as sr  # noqa: E402
from test_plcrash_server import text_twin  # noqa: E402

fixtures, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
manifest = lo.load_manifest(fixtures)
rng = random.Random(7)
for i in range(count):
    app = sr.fixture_image(fixtures, manifest, "arm64-O2", rng, 0x100000000)
    kit = sr.fixture_image(fixtures, manifest, "kit", rng, 0x110000000)
    imgs = [app, kit] + sr.system_images(rng, app.arch)
    rng.shuffle(imgs)
    threads, leb, crashed = sr.make_crash(rng, imgs, [app, kit], app.arch)
    with open(os.path.join(out, f"report-{i}.crash"), "w") as f:
        f.write(text_twin(imgs, threads, leb, crashed, app.arch))
    with open(os.path.join(out, f"report-{i}.plcrash"), "wb") as f:
        f.write(pr.plcrash_report(imgs, threads, leb, crashed, app.arch))
