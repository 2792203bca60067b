#!/usr/bin/env python3
"""test_utf8_server - reports whose strings are not UTF-8, through the real server and Postgres.

A macOS process whose heap was corrupted sends a report whose process name, OS build and app
version are 0xAB bytes. Every format is accepted (202), stored, and shown with each invalid
sequence replaced by U+FFFD, exactly as Python's bytes.decode("utf-8", "replace") gives it
(the rule of common/base/utf8.h); GET .../raw gives the bytes as they were sent:
- a .plcrash file built here (tests/plcrash_encode.py) with 0xAB strings;
- an Apple text report with 0xAB header fields and a Latin-1 path;
- a KSCrash JSON report with raw 0xAB bytes and lone surrogate escapes;
- a Sentry event (/store/) with garbage in its tags, contexts, release and frames;
- a KSCrash report of a multipart batch (the "reports" part) with 0xAB bytes.

Then what the database refuses: a CHECK added to this test's own database refuses one app
version. That report, sent among 30 others at once (one group commit), is answered 500
`internal` with the request id and neither SQL nor the database's words; the 30 others are
202 and stored; the server's log has the database's message under that request id. A
conflict the database finds (a foreign key) is a 409 without the database's words.
"""
import json
import os
import re
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plcrash_encode as pe  # noqa: E402
from web_instance import Instance, check, checks_done, project_create  # noqa: E402

AB = b"\xab"
FFFD = "\ufffd"


def shown(b):
    """What the server must show for the bytes b: U+FFFD per maximal subpart."""
    return b.decode("utf-8", "replace")


def post(inst, body, ctype):
    return inst.request("POST", "/api/v1/reports", body=body, headers={"Content-Type": ctype},
                        token=inst.tokens["ingest"])


def report_of(inst, rid):
    r = inst.request("GET", f"/api/v1/reports/{rid}", token=inst.tokens["read"])
    check(r.status == 200, f"GET report {rid}: {r.status} {r.body[:200]!r}")
    return r.json() if r.status == 200 else {}


def raw_is(inst, label, rid, sent):
    raw = inst.request("GET", f"/api/v1/reports/{rid}/raw", token=inst.tokens["read"])
    check(raw.status == 200 and raw.body == sent,
          f"{label}: raw download {raw.status}, {len(raw.body)} bytes, not the {len(sent)} sent")


def text_is_utf8(inst, label, rid, want):
    t = inst.request("GET", f"/api/v1/reports/{rid}?format=text", token=inst.tokens["read"])
    try:
        body = t.body.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, f"{label}: ?format=text is not UTF-8: {e}")
        return
    check(t.status == 200 and want in body, f"{label}: ?format=text {t.status}, no {want!r} in "
          f"{body[:300]!r}")


def plcrash_with_garbage():
    os_build, version, marketing, process = AB * 8, AB * 3, AB * 4, AB * 6
    data = pe.encode(
        system={"os": 0, "os_version": "10.15.7", "os_build": os_build, "arch": 1},
        app={"identifier": "com.example.Heap", "version": version,
             "marketing_version": marketing},
        threads=[{"number": 0, "crashed": True, "frames": [{"pc": 0x100001000}],
                  "registers": [("rip", 0x100001000)]}],
        images=[{"base": 0x100000000, "size": 0x4000, "name": b"/Applications/" + AB + b".app/x",
                 "uuid": "6F8A2C1E-1111-4222-8333-944455556666", "cpu": (0x01000007, 3)}],
        signal={"name": "SIGSEGV", "code": "SEGV_MAPERR", "address": 8},
        process={"name": process, "pid": 4242})
    return data, {"app_version": shown(marketing), "os_build": shown(os_build),
                  "process": shown(process)}


APPLE_TEXT = (b"Process:               " + AB * 4 + b" [4242]\n"
              b"Path:                  /Applications/Caf\xe9.app/Contents/MacOS/Caf\xe9\n"
              b"Identifier:            com.example.cafe\n"
              b"Version:               " + AB * 2 + b" (" + AB + b")\n"
              b"Code Type:             X86-64 (Native)\n"
              b"OS Version:            Mac OS X 10.15.7 (" + AB * 5 + b")\n"
              b"\n"
              b"Thread 0 Crashed:\n"
              b"0   libsystem_kernel.dylib        0x00007fff6b8a233a __pthread_kill + 10\n"
              b"1   Caf\xe9                          0x0000000100001000 main + 16\n"
              b"\n"
              b"Binary Images:\n"
              b"0x100000000 - 0x100003fff +Caf\xe9 (1.0) <6F8A2C1E-1111-4222-8333-944455556666> "
              b"/Applications/Caf\xe9.app/Contents/MacOS/Caf\xe9\n"
              b"0x7fff6b87b000 - 0x7fff6b8a9ff7  libsystem_kernel.dylib (6153.141.2) "
              b"<A2A0D5F8-F2EE-3E5F-9B7A-1A2D0FD2D5B0> /usr/lib/system/libsystem_kernel.dylib\n")


def kscrash(name, version, symbol, rid=None):
    """A KSCrash report as bytes: `name`, `version` and `symbol` go in as given (bytes, raw
    or with JSON escapes)."""
    return (b'{"report":{"id":"' + (rid or "k1").encode() + b'","process_name":"' + name +
            b'"},"system":{"CFBundleShortVersionString":"' + version +
            b'","system_name":"iOS","system_version":"17.5","os_version":"21F79",'
            b'"CFBundleExecutable":"App","CFBundleIdentifier":"com.example.App"},'
            b'"binary_images":[{"image_addr":4294967296,"image_size":16384,"name":"/x/App",'
            b'"uuid":"6F8A2C1E-1111-4222-8333-944455556666","cpu_type":16777228,'
            b'"cpu_subtype":0}],"crash":{"threads":[{"index":0,"crashed":true,"backtrace":'
            b'{"contents":[{"instruction_addr":4294971392,"symbol_name":"' + symbol +
            b'","object_name":"App","object_addr":4294967296}]}}]}}')


def sentry_event(eid):
    return (b'{"event_id":"' + eid.encode() + b'","platform":"cocoa","level":"fatal",'
            b'"release":"com.example.App@' + AB * 2 + b'","tags":{"' + AB + b'":"' + AB * 3 +
            b'","screen":"Caf\xe9"},"contexts":{"os":{"name":"iOS","version":"17.5",'
            b'"build":"' + AB * 4 + b'"},"app":{"app_version":"' + AB + b'\\ud800"}},'
            b'"exception":{"values":[{"type":"EXC_BAD_ACCESS","value":"at ' + AB + b'",'
            b'"stacktrace":{"frames":[{"function":"main' + AB + b'",'
            b'"instruction_addr":"0x100001000"}]}}]}}')


def accepted_and_shown(inst):
    # .plcrash
    data, want = plcrash_with_garbage()
    r = post(inst, data, "application/x-plcrashreporter")
    check(r.status == 202 and r.json().get("format") == "plcrash", f"plcrash: {r.status} {r.body[:300]!r}")
    sent = []
    if r.status == 202:
        sent.append(("plcrash", r.json()["id"], data))
    # Apple text, 0xAB header fields, a Latin-1 path
    r = post(inst, APPLE_TEXT, "text/plain")
    check(r.status == 202, f"apple text: {r.status} {r.body[:300]!r}")
    if r.status == 202:
        sent.append(("text", r.json()["id"], APPLE_TEXT))
    # KSCrash JSON: raw bytes and lone surrogate escapes
    ks = kscrash(AB * 2, AB + b"\\udc00", b"f\\ud800" + AB)
    r = post(inst, ks, "application/json")
    check(r.status == 202 and r.json().get("format") == "kscrash", f"kscrash: {r.status} {r.body[:300]!r}")
    if r.status == 202:
        sent.append(("kscrash", r.json()["id"], ks))
    # KSCrash's standard sink: a multipart batch
    batch = b"[" + kscrash(AB * 5, b"2.0", b"g" + AB, rid="batch-1") + b"]"
    r = inst.multipart("/api/v1/reports", "reports", "reports.json", batch, inst.tokens["ingest"])
    j = r.json() if r.status in (200, 202) else {}
    ok = check(r.status == 202 and j.get("accepted") == 1,
               f"multipart batch: {r.status} {r.body[:300]!r}")
    if ok:
        sent.append(("batch", j["reports"][0]["id"], batch[1:-1]))
    check(inst.wait_processed(120), "reports processed")

    for label, rid, body in sent:
        rep = report_of(inst, rid)
        if not rep:
            continue
        doc = json.dumps(rep, ensure_ascii=False)
        check(FFFD in doc, f"{label}: no U+FFFD in what the API shows")
        raw_is(inst, label, rid, body)
        model = rep.get("report") or {}
        meta = model.get("metadata") or {}
        if label == "plcrash":
            check(rep["app_version"] == want["app_version"], f"plcrash app_version {rep['app_version']!r}")
            check(want["os_build"] in (rep["os_version"] or ""), f"plcrash os_version {rep['os_version']!r}")
            check(meta.get("process") == want["process"], f"plcrash process {meta.get('process')!r}")
            text_is_utf8(inst, label, rid, want["process"])
        elif label == "text":
            check(meta.get("process") == FFFD * 4, f"text process {meta.get('process')!r}")
            check(rep["app_version"] == FFFD * 2, f"text app_version {rep['app_version']!r}")
            check(FFFD * 5 in (rep["os_version"] or ""), f"text os_version {rep['os_version']!r}")
            check(meta.get("process_path") == shown(b"/Applications/Caf\xe9.app/Contents/MacOS/Caf\xe9"),
                  f"text process_path {meta.get('process_path')!r}")
            text_is_utf8(inst, label, rid, "Process:               " + FFFD * 4)
        elif label == "kscrash":
            check(meta.get("process") == FFFD * 2, f"kscrash process {meta.get('process')!r}")
            check(rep["app_version"] == FFFD * 2, f"kscrash app_version {rep['app_version']!r}")
            frames = [f for t in model.get("threads", []) for f in t["frames"]]
            check(frames and frames[0].get("symbol") == "f" + FFFD * 2,
                  f"kscrash symbol {frames[:1]}")
        elif label == "batch":
            check(meta.get("process") == FFFD * 5, f"batch process {meta.get('process')!r}")

    # a Sentry event to the store endpoint
    key, pid = project_create(inst, "heap")
    eid = "0123456789abcdef0123456789abcdef"
    ev = sentry_event(eid)
    r = inst.request("POST", f"/api/{pid}/store/", ev,
                     headers={"Content-Type": "application/json",
                              "X-Sentry-Auth": f"Sentry sentry_version=7, sentry_key={key}"})
    check(r.status == 200, f"sentry store: {r.status} {r.body[:300]!r}")
    check(inst.wait_processed(120), "sentry event processed")
    rep = report_of(inst, eid)
    if rep:
        model = rep.get("report") or {}
        meta = model.get("metadata") or {}
        check(meta.get("release") == "com.example.App@" + FFFD * 2, f"sentry release {meta.get('release')!r}")
        check(FFFD * 4 in (rep["os_version"] or ""), f"sentry os_version {rep['os_version']!r}")
        check(meta.get("exception_reason") == "at " + FFFD, f"sentry reason {meta.get('exception_reason')!r}")
        raw_is(inst, "sentry", eid, ev)
    # and what Postgres holds is what the API shows
    n = inst.psql(inst.db_url, "SELECT count(*) FROM reports WHERE position(E'\\uFFFD' IN "
                               "coalesce(app_version, '') || coalesce(os_version, '')) > 0")
    check(int(n) >= 4, f"{n.strip()} rows with U+FFFD in their summary columns")


def refused_value_costs_only_itself(inst):
    """A CHECK refuses app version "poison": that report alone fails, 500 internal with the
    request id and no database text; the 30 sent with it are stored."""
    inst.psql(inst.db_url, "ALTER TABLE reports ADD CONSTRAINT utf8_test_poison "
                           "CHECK (app_version IS DISTINCT FROM 'poison')")
    results = {}

    def one(i):
        version = "poison" if i == 13 else f"3.{i}"
        body = kscrash(b"Batchy", version.encode(), b"h", rid=f"poison-{i}")
        results[i] = post(inst, body, "application/json")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(31)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = results[13]
    check(bad.status == 500, f"the refused report: {bad.status} {bad.body[:300]!r}")
    err = (bad.json().get("error") or {}) if bad.status == 500 else {}
    msg = err.get("message", "")
    req = bad.headers.get("x-request-id", "")
    check(err.get("code") == "internal" and req and req in msg,
          f"the refused report's answer: {err} (request id {req!r})")
    for word in ("SQLSTATE", "constraint", "violates", "reports_intake", "INSERT", "utf8_test"):
        check(word.lower() not in msg.lower(), f"the answer carries {word!r}: {msg!r}")
    others = [i for i in results if i != 13]
    good = [i for i in others if results[i].status == 202]
    check(len(good) == 30, f"{len(good)} of 30 others accepted: "
          f"{[(i, results[i].status, results[i].body[:120]) for i in others if i not in good]}")
    n = inst.psql(inst.db_url, "SELECT count(*) FROM reports WHERE app_version LIKE '3.%'")
    check(int(n) == 30, f"{n.strip()} of the 30 others stored")
    with open(inst.log_path, "rb") as f:
        log = f.read().decode("utf-8", "replace")
    lines = [ln for ln in log.splitlines() if req and req in ln]
    check(any(re.search(r"violates check constraint|SQLSTATE 23514", ln) for ln in lines),
          f"the log has no database message under request {req}: {lines[-3:]}")
    inst.psql(inst.db_url, "ALTER TABLE reports DROP CONSTRAINT utf8_test_poison")
    # a conflict the database finds (an alert rule for a project that does not exist: its
    # foreign key) is a 409 that says what, not the database's words
    r = inst.request("POST", "/api/v1/alerts", {"kind": "new_issue", "project": 987654,
                                                 "url": "http://127.0.0.1:9/hook"},
                     token=inst.tokens["admin"])
    err = (r.json().get("error") or {}) if r.status >= 400 else {}
    msg = err.get("message", "")
    check(r.status == 409 and err.get("code") == "conflict", f"alert rule: {r.status} {r.body[:200]!r}")
    check("conflicts with what is stored" in msg, f"the 409 does not say what: {msg!r}")
    for word in ("violates", "foreign key", "constraint", "Key (", "SQLSTATE"):
        check(word not in msg, f"the 409 carries {word!r}: {msg!r}")


def main():
    with Instance("utf8", workers=1) as inst:
        accepted_and_shown(inst)
        refused_value_costs_only_itself(inst)
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
