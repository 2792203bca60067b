#!/usr/bin/env python3
"""bench_formats_gen.py FIXTURES OUTDIR COUNT - COUNT crashes of the fixture app written once per
format for tests/bench/bench_formats.sh, each as its client sends it:

  report-N.crash    Apple text (the body of POST /api/v1/reports, text/plain)
  report-N.kscrash  KSCrashReportSinkStandard's multipart/form-data body: one part "reports"
                    (reports.json) holding a JSON array with this one KSCrash report
  report-N.bugsnag  bugsnag-cocoa's notify payload: {apiKey, notifier, payloadVersion, events:[EVENT]}
  report-N.plcrash  PLCrashReporter's own protobuf file
  report-N.ips      the .ips JSON of macOS 12+ / iOS 15+ (header line, then the body)
  report-N.envelope sentry-cocoa's event in a Sentry envelope (not gzip'd: the event_id is
                    EVENT_SLOT, 32 characters, replaced per request so that the length holds;
                    no Last Exception Backtrace, which a Sentry event does not carry)
  report-N.dmp      a minidump as Crashpad writes it on arm64 (minidump_report below): the
                    same images as modules, each thread's frames as a frame-pointer chain in
                    its captured stack, so that the server's walk finds them again

The crashes are tests/symbolicate_reports.py's (the fixture app arm64-O2 with FixtureKit, random
slides, 3-5 threads of app, framework and system frames, an NSException's backtrace), the text
and .plcrash forms as tests/plcrash_reports.py writes them for test_plcrash_server: the same
threads, frames, images and exception in every format. The multipart boundary is
BOUNDARY below; the KSCrash report.id is ID_SLOT, replaced per request; the Bugsnag apiKey is a
placeholder (the bench sends the project's key in the Bugsnag-Api-Key header, which wins).
"""
import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import lookup_oracle as lo  # noqa: E402
import minidump_write  # noqa: E402
import plcrash_reports as pr  # noqa: E402
import symbolicate_reports as sr  # noqa: E402
from test_plcrash_server import text_twin  # noqa: E402

BOUNDARY = "stacksift-bench-5d1c0a"
ID_SLOT = "@@REPORT_ID@@"
EVENT_SLOT = "@@EVENT_ID_SLOT_00000000000000@@"   # 32 characters, as an event_id


def sentry_envelope(imgs, threads, leb, crashed, arch):
    """sentry-cocoa's envelope of one event (symbolicate_reports.sentry_report, compact as
    NSJSONSerialization writes it): the envelope header, the item header with its length,
    the event."""
    event = json.loads(sr.sentry_report(imgs, threads, leb, crashed, arch, False))
    event["event_id"] = EVENT_SLOT
    payload = json.dumps(event, separators=(",", ":")).encode()
    head = json.dumps({"event_id": EVENT_SLOT, "sent_at": "2024-06-01T12:00:01Z"},
                      separators=(",", ":")).encode()
    item = json.dumps({"type": "event", "length": len(payload)}, separators=(",", ":")).encode()
    return head + b"\n" + item + b"\n" + payload + b"\n"


def kscrash_sink_body(imgs, threads, leb, crashed, arch):
    """The sink's multipart body: KSCrash's report (symbolicate_reports.kscrash_report) with the
    NSException in crash.error as KSCrash records it."""
    rep = json.loads(sr.kscrash_report(imgs, threads, leb, crashed, arch))
    # each report sent is a crash of its own: tests/bench/bench_formats.lua puts a new
    # report.id here per request (the sink's reports are stored once per id)
    rep["report"]["id"] = ID_SLOT
    rep["crash"]["error"] = {"type": "nsexception", "reason": pr.EXC_REASON,
                             "nsexception": {"name": pr.EXC_NAME},
                             "signal": {"name": "SIGABRT", "signal": 6},
                             "mach": {"exception_name": "EXC_CRASH", "exception": 10,
                                      "code": 0, "subcode": 0}}
    part = json.dumps([rep]).encode()
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"reports\"; "
            f"filename=\"reports.json\"\r\nContent-Type: application/json\r\n\r\n").encode() + \
        part + f"\r\n--{BOUNDARY}--\r\n".encode()


def bugsnag_payload(imgs, threads, leb, crashed, arch):
    """bugsnag-cocoa's payload with one event: threads[] with the error reporting thread,
    exceptions[0].stacktrace the NSException's backtrace, frames as BugsnagStackframe writes
    them (hex strings, machoUUID, machoLoadAddress, machoVMAddress, machoFile, method and
    symbolAddress where the device symbolicated them)."""
    def fr(k, f):
        d = {"frameAddress": f"0x{f.addr:x}", "machoLoadAddress": f"0x{f.image.load:x}",
             "machoUUID": f.image.uuid, "machoFile": f.image.path,
             "machoVMAddress": f"0x{f.image.text_vmaddr or 0x180000000:x}"}
        if f.symbol:
            d.update(method=f.symbol, symbolAddress=f"0x{f.addr - f.sym_off:x}")
        if k == 0:
            d["isPC"] = True
        return d
    event = {
        "exceptions": [{"errorClass": pr.EXC_NAME, "message": pr.EXC_REASON, "type": "cocoa",
                        "stacktrace": [fr(k, f) for k, f in enumerate(leb)]}],
        "threads": [{"id": str(t), "name": n or q or "", "type": "cocoa",
                     "errorReportingThread": cr,
                     "stacktrace": [fr(k, f) for k, f in enumerate(frames)]}
                    for t, (n, q, cr, frames) in enumerate(threads)],
        "app": {"id": "com.example.FixtureApp", "version": "1.0", "bundleVersion": "7",
                "binaryArch": arch, "releaseStage": "production", "type": "iOS"},
        "device": {"osName": "iOS", "osVersion": "17.5", "model": "iPhone14,2",
                   "runtimeVersions": {"osBuild": "21F79"}, "time": "2024-06-01T12:00:00Z"},
        "metaData": {"app": {"name": "FixtureApp"},
                     "error": {"type": "nsexception", "reason": pr.EXC_REASON,
                               "nsexception": {"name": pr.EXC_NAME},
                               "signal": {"name": "SIGABRT", "signal": 6},
                               "mach": {"exception_name": "EXC_CRASH", "exception": 10,
                                        "code": 0, "subcode": 0}}},
        "severity": "error", "unhandled": True,
        "severityReason": {"type": "unhandledException"},
    }
    return json.dumps({"apiKey": "0" * 32, "payloadVersion": "4.0",
                       "notifier": {"name": "iOS Bugsnag Notifier", "version": "6.28.0",
                                    "url": "https://github.com/bugsnag/bugsnag-cocoa"},
                       "events": [event]}).encode()


def minidump_report(imgs, threads, leb, crashed, arch, main_image=None):
    """A Crashpad-style arm64 minidump of the crash (Microsoft's layout, Crashpad's
    CONTEXT_ARM64): SystemInfo (iOS), ThreadList (each thread's registers and a stack whose
    frame records [fp] = caller's fp, [fp + 8] = return address link its frames), ModuleList
    (base, size, UTF-16 path, CodeView RSDS with the UUID as a GUID), Exception (EXC_CRASH
    wrapping SIGABRT, on the crashed thread). The module list starts with `main_image`, the
    process's executable, as Crashpad writes it (the reader takes the first module as the
    process)."""
    del leb  # a dump holds no exception backtrace
    ctx_size = 912
    dump_threads = []
    for t, (_, _, _, frames) in enumerate(threads):
        sp = 0x16f000000 + t * 0x100000
        words = [0, 0]  # sp: two spare words, then a frame record per caller
        fp = sp + 16
        chain = []
        for k in range(1, len(frames) + 1):
            nxt = fp + 16 if k < len(frames) else 0
            ret = frames[k].addr if k < len(frames) else 0
            chain += [nxt, ret]
            fp = nxt
        words += chain
        stack = struct.pack(f"<{len(words)}Q", *words)
        regs = [0x1000 + i for i in range(29)] + [sp + 16, frames[1].addr if len(frames) > 1 else 0]
        ctx = struct.pack("<II", 0x00400003, 0x60000000) + struct.pack("<31Q", *regs) + \
            struct.pack("<QQ", sp, frames[0].addr)
        ctx += b"\0" * (ctx_size - len(ctx))
        dump_threads.append((0x1000 + t, sp, stack, ctx))
    modules = [(im.path, im.load, im.size, im.uuid)   # stable: the rest in order
               for im in sorted(imgs, key=lambda im: im is not main_image)]
    # ARM64 (12), 6 processors, iOS 17.5 (platform 0x8102), CSD version "21F79"; EXC_CRASH (10)
    # wrapping SIGABRT (6 << 24) as Breakpad and Crashpad write it, on the crashed thread's context
    return minidump_write.layout((12, 8, 6, 17, 5, 0, 0x8102, "21F79"), dump_threads, modules,
                                 (0x1000 + crashed, 10, 6 << 24, threads[crashed][3][0].addr, None),
                                 memory_list=False, time_date_stamp=1717243200)


def main():
    fixtures, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    manifest = lo.load_manifest(fixtures)
    rng = random.Random(7)
    for i in range(count):
        app = sr.fixture_image(fixtures, manifest, "arm64-O2", rng, 0x100000000)
        kit = sr.fixture_image(fixtures, manifest, "kit", rng, 0x110000000)
        imgs = [app, kit] + sr.system_images(rng, app.arch)
        rng.shuffle(imgs)
        crash = sr.make_crash(rng, imgs, [app, kit], app.arch)
        args = (imgs,) + crash + (app.arch,)
        bodies = {"crash": text_twin(*args).encode(), "kscrash": kscrash_sink_body(*args),
                  "bugsnag": bugsnag_payload(*args), "plcrash": pr.plcrash_report(*args),
                  "dmp": minidump_report(*args, main_image=app), "ips": sr.ips_report(*args).encode(),
                  "envelope": sentry_envelope(*args)}
        for ext, body in bodies.items():
            with open(os.path.join(out, f"report-{i}.{ext}"), "wb") as f:
                f.write(body)


if __name__ == "__main__":
    main()
