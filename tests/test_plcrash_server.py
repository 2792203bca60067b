#!/usr/bin/env python3
"""test_plcrash_server - PLCrashReporter's .plcrash files through the real server and Postgres:
POST /api/v1/reports as application/x-plcrashreporter, application/octet-stream (gzip too)
and sniffed by the magic under text/plain; each lands in the same issue as the Apple text
PLCrashReporter's formatter would have sent for the same crash, symbolicated frames and all;
GET ?format=text renders it; its raw bytes come back as sent; bad input gets a 4xx that names
the field and nothing is stored.

Crashes are symbolicate_reports.py's (the fixture app arm64-O2 with FixtureKit, dSYMs
uploaded first), written by plcrash_reports.plcrash_report; the Apple-text twin is
symbolicate_reports.text_report with the "Application Specific Information" block
PLCrashReporter's text formatter prints for an uncaught exception.
"""
import gzip
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lookup_oracle as lo  # noqa: E402
import plcrash_encode as pe  # noqa: E402
import plcrash_reports as pr  # noqa: E402
import symbolicate_reports as sr  # noqa: E402
from web_instance import Instance, check, checks_done  # noqa: E402

PLCRASH_TYPE = "application/x-plcrashreporter"


def text_twin(imgs, threads, leb, crashed, arch):
    text = sr.text_report(imgs, threads, leb, crashed, arch, False)
    asi = ("Application Specific Information:\n*** Terminating app due to uncaught exception "
           f"'{pr.EXC_NAME}', reason: '{pr.EXC_REASON}'\n\n")
    return text.replace("Last Exception Backtrace:", asi + "Last Exception Backtrace:", 1)


def post(inst, body, ctype, gz=False):
    headers = {"Content-Type": ctype}
    if gz:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return inst.request("POST", "/api/v1/reports", body=body, headers=headers,
                        token=inst.tokens["ingest"])


def report_count(inst):
    return int(inst.psql(inst.db_url, "SELECT count(*) FROM reports").strip())


def main():
    with Instance("plcrash", workers=1) as inst:
        manifest = lo.load_manifest(inst.fixtures)
        for name in ("arm64-O2", "kit"):
            inst.upload_dsym(next(f for f in manifest["fixtures"] if f["name"] == name))

        rng = random.Random(20240612)
        crashes = []
        for _ in range(4):
            app = sr.fixture_image(inst.fixtures, manifest, "arm64-O2", rng, 0x100000000)
            kit = sr.fixture_image(inst.fixtures, manifest, "kit", rng, 0x110000000)
            imgs = [app, kit] + sr.system_images(rng, app.arch)
            rng.shuffle(imgs)
            threads, leb, crashed = sr.make_crash(rng, imgs, [app, kit], app.arch)
            crashes.append((pr.plcrash_report(imgs, threads, leb, crashed, app.arch),
                            text_twin(imgs, threads, leb, crashed, app.arch).encode(), threads))

        # every way of sending one: its own type, octet-stream gzip'd, sniffed under text/plain
        ways = [(PLCRASH_TYPE, False), ("application/octet-stream", True), ("text/plain", False)]
        sent = []   # (crash index, kind, report id)
        for i, (plc, text, _) in enumerate(crashes):
            r = post(inst, text, "text/plain")
            check(r.status == 202, f"crash {i} text: {r.status} {r.body[:200]!r}")
            if r.status == 202:
                sent.append((i, "text", r.json()["id"]))
            ctype, gz = ways[i % len(ways)]
            r = post(inst, plc, ctype, gz)
            ok = check(r.status == 202, f"crash {i} plcrash as {ctype} gzip={gz}: {r.status} "
                       f"{r.body[:300]!r}")
            if ok:
                j = r.json()
                check(j.get("format") == "plcrash", f"crash {i}: 202 says format {j}")
                sent.append((i, "plcrash", j["id"]))
        check(inst.wait_processed(120), "reports processed")

        issue = {}
        for i, kind, rid in sent:
            r = inst.request("GET", f"/api/v1/reports/{rid}", token=inst.tokens["read"])
            if not check(r.status == 200, f"GET report {rid}: {r.status}"):
                continue
            rep = r.json()
            check(rep["status"] == "processed", f"crash {i} {kind}: status {rep['status']} "
                  f"{rep.get('error')} {rep.get('missing_uuids')}")
            check(rep["format"] == ("plcrash" if kind == "plcrash" else "apple-text"),
                  f"crash {i} {kind}: format {rep['format']}")
            issue[(i, kind)] = (rep["issue_id"], rep["fingerprint"])
            if kind == "plcrash":
                check(rep["app_version"] == "1.0" and rep["os_version"] == "iPhone OS 17.5 (21F79)",
                      f"crash {i}: summary columns {rep['app_version']} {rep['os_version']}")
                sym = rep["symbolicated"] or {}
                n_ok = sum(1 for t in sym.get("threads", []) for f in t["frames"]
                           if f.get("symbolicated") == "ok")
                check(n_ok > 0, f"crash {i}: no frame symbolicated")
                t = inst.request("GET", f"/api/v1/reports/{rid}?format=text",
                                 token=inst.tokens["read"])
                body = t.body.decode("utf-8", "replace")
                check(t.status == 200 and "Crashed:" in body and "Binary Images:" in body and
                      "crashed with ARM Thread State (64-bit):" in body and
                      "Exception Type:      EXC_CRASH (SIGABRT)" in body,
                      f"crash {i}: ?format=text {t.status} {body[:300]!r}")
                check(any(ext in body for ext in (".c:", ".m:", ".cpp:", ".swift:")),
                      f"crash {i}: ?format=text has no symbolicated file:line")
                raw = inst.request("GET", f"/api/v1/reports/{rid}/raw", token=inst.tokens["read"])
                check(raw.status == 200 and raw.body == crashes[i][0],
                      f"crash {i}: raw bytes differ ({raw.status}, {len(raw.body)} bytes)")
                # served back as the type PLCrashReporter's files are sent as, whatever the
                # type it came in as; a download named .plcrash
                disp = raw.headers.get("content-disposition", "")
                check(raw.content_type == PLCRASH_TYPE and disp.endswith(f'filename="report-{rid}.plcrash"'),
                      f"crash {i}: raw served as {raw.content_type!r}, {disp!r}")
            else:
                raw = inst.request("GET", f"/api/v1/reports/{rid}/raw", token=inst.tokens["read"])
                disp = raw.headers.get("content-disposition", "")
                check(raw.status == 200 and raw.content_type == "text/plain" and raw.body == crashes[i][1]
                      and disp.endswith(f'filename="report-{rid}.txt"'),
                      f"crash {i}: text raw served as {raw.status} {raw.content_type!r}, {disp!r}")
        for i in range(len(crashes)):
            a, b = issue.get((i, "text")), issue.get((i, "plcrash"))
            check(a is not None and b is not None and a[0] is not None and a == b,
                  f"crash {i}: plcrash grouped {b}, its Apple-text twin {a}")

        # bad input: a 4xx naming the problem, nothing stored
        before = report_count(inst)
        plc = crashes[0][0]
        bad = [
            (plc[:len(plc) // 2], PLCRASH_TYPE, 400, "plcrash report: "),
            (plc[:len(plc) - 3], PLCRASH_TYPE, 400, "plcrash report: report_info: "),
            (plc[:8] + b"\x1a\x03\x12\x09\x18", PLCRASH_TYPE, 400,
             "plcrash report: threads[0]: length 9 at offset 11"),
            (b"plcrash\x02" + plc[8:], PLCRASH_TYPE, 422, "version 2"),
            (b"plcrash", "application/octet-stream", 400, "truncated"),
            (b"Incident Identifier: x\n", PLCRASH_TYPE, 400, "plcrash"),
            (pe.encode(system={"os_version": "1"}, app={"identifier": "a", "version": "1"},
                       threads=[{"number": 0, "frames": [{"pc": 1}]}]), PLCRASH_TYPE, 400,
             "no signal (field 6)"),
            (pe.MAGIC + b"\x01" + pe.field_msg(1, [pe.field_varint(2, 5)]), PLCRASH_TYPE, 400,
             "system_info.os_version: wire type 0"),
        ]
        for body, ctype, status, words in bad:
            r = post(inst, body, ctype)
            msg = r.json()["error"]["message"] if r.content_type == "application/json" else ""
            check(r.status == status and words in msg,
                  f"bad {body[:24]!r} as {ctype}: {r.status} {r.body[:200]!r}, want {status} "
                  f"naming {words!r}")
        r = post(inst, b"\x1f\x8b\x08\x00broken", PLCRASH_TYPE)
        check(r.status == 400, f"non-gzip'd garbage: {r.status}")
        check(report_count(inst) == before, "bad input stored nothing")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
