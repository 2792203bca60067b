#!/usr/bin/env python3
"""test_minidump_server - minidumps through the real server and Postgres, in the shapes their
clients send them (the real dumps of ../shared/minidumps/, read from there):

- POST /api/v1/reports with a bare dump: application/x-dmp, gzip'd application/octet-stream,
  and recognized by its "MDMP" magic under text/plain;
- a multipart body as Crashpad's uploader builds it (form fields, then the dump in the
  `upload_file_minidump` file part as application/octet-stream, the whole body gzip'd) on
  POST /api/v1/reports and on Sentry's POST /api/{project_id}/minidump/?sentry_key=KEY, the
  form fields kept as Sentry reads them (sentry[release], sentry[environment],
  sentry[tags][k], sentry[user][id]; the rest as annotations of their own name);
- a Sentry envelope as sentry-native sends it: an event item (release, environment, tags,
  contexts) and an attachment item with attachment_type event.minidump.

Each is stored (one id), processed and grouped (the same dump sent two ways is one issue);
its frames say how the walk found them (`found`), the Breakpad dump's app frame is
symbolicated from its uploaded dSYM, and its raw bytes come back byte for byte as
application/x-dmp. Malformed dumps (the shared invalid ones, a truncated dump, a dump that is
no dump, a multipart body without the dump, a missing DSN key) get a 4xx that says why, and
nothing is stored for them.
"""
import gzip
import io
import json
import os
import re
import sys
import uuid
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from web_instance import Instance, check, checks_done, project_create  # noqa: E402

# ../shared beside the source tree (test data is read from there, never copied)
SHARED = os.path.join(os.path.dirname(os.environ.get("STACKSIFT_SOURCE_DIR", os.path.dirname(HERE))),
                      "shared")
MD = os.path.join(SHARED, "minidumps")


def read(*parts):
    with open(os.path.join(MD, *parts), "rb") as f:
        return f.read()



def crashpad_body(fields, dump, boundary):
    """A multipart body as Crashpad's HTTPMultipartBuilder writes it: one part per form field,
    then the file part (application/octet-stream)."""
    out = b""
    for k, v in fields:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n"
                f"{v}\r\n").encode()
    out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"upload_file_minidump\"; "
            f"filename=\"dump.dmp\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    out += dump + f"\r\n--{boundary}--\r\n".encode()
    return out


def post_multipart(inst, path, fields, dump, token=None, gz=True, headers=None):
    boundary = "---MultipartBoundary-5f1e3c9a0b7d4e2f8a6c1b3d5e7f9a0b---"
    body = crashpad_body(fields, dump, boundary)
    h = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    if gz:
        body = gzip.compress(body)
        h["Content-Encoding"] = "gzip"
    h.update(headers or {})
    return inst.request("POST", path, body=body, headers=h, token=token)


def post_raw(inst, body, ctype, gz=False):
    h = {"Content-Type": ctype}
    if gz:
        body = gzip.compress(body)
        h["Content-Encoding"] = "gzip"
    return inst.request("POST", "/api/v1/reports", body=body, headers=h, token=inst.tokens["ingest"])


def native_envelope(event_id, event, dump, dsn):
    """An envelope as sentry-native writes it for a crash: the event, then the minidump."""
    ev = json.dumps(event).encode()
    head = json.dumps({"event_id": event_id, "dsn": dsn}).encode()
    att = json.dumps({"type": "attachment", "length": len(dump), "attachment_type": "event.minidump",
                      "filename": "c7b0f9e2.dmp"}).encode()
    return (head + b"\n" + json.dumps({"type": "event", "length": len(ev)}).encode() + b"\n" + ev +
            b"\n" + att + b"\n" + dump + b"\n")


def message(r):
    try:
        return r.json().get("error", {}).get("message", "")
    except ValueError:
        return ""


def report_count(inst):
    return int(inst.psql(inst.db_url, "SELECT count(*) FROM reports").strip())


def frames_of(rep, key="symbolicated"):
    model = rep.get(key) or rep.get("report") or {}
    return [f for t in model.get("threads", []) for f in t["frames"]]


def main():
    breakpad = read("macos-x86_64-breakpad", "macos.dmp")
    simple = read("crashpad", "simple-crashpad.dmp")
    electron = read("crashpad", "electron-1.4.3-mac.dmp")
    with Instance("minidump", workers=1) as inst:
        key, pid = project_create(inst, "electron-app")
        sent = {}   # name -> (report id, dump bytes)
        # the Breakpad dump before its debug files: it waits for its dSYM (pending_dsym), and
        # their upload has the workers walk (with the executable's unwind info) and symbolicate
        # it again
        r = post_raw(inst, breakpad, "application/x-dmp")
        if check(r.status == 202, f"breakpad before its dSYM: {r.status} {r.body[:300]!r}"):
            sent["breakpad-xdmp"] = (r.json()["id"], breakpad)
            check(inst.wait_processed(60), "the dump processed")
            early = inst.request("GET", f"/api/v1/reports/{r.json()['id']}", token=inst.tokens["read"]).json()
            check(early["status"] == "pending_dsym" and
                  "67E9247C-814E-392B-A027-DBDE6748FCBF" in [u.upper() for u in early["missing_uuids"]],
                  f"breakpad waits for crash's dSYM: {early['status']} {early['missing_uuids']}")
        # the Breakpad dump's executable and its dSYM in one zip: names from the dSYM, unwind
        # info from the executable (the workers walk with it)
        zbuf = io.BytesIO()
        base = os.path.join(MD, "macos-x86_64-breakpad")
        with zipfile.ZipFile(zbuf, "w") as z:
            for root, _, files in os.walk(os.path.join(base, "crash.dSYM")):
                for name in files:
                    path = os.path.join(root, name)
                    z.write(path, os.path.relpath(path, base))
            z.write(os.path.join(base, "crash"), "crash")
        r = inst.request("POST", "/api/v1/dsyms", zbuf.getvalue(), token=inst.tokens["upload"],
                         headers={"Content-Type": "application/zip"})
        check(r.status in (200, 201), f"dSYM + executable upload: {r.status} {r.body[:200]!r}")

        for name, body, ctype, gz in (("breakpad-gzip", breakpad, "application/octet-stream", True),
                                      ("simple-sniffed", simple, "text/plain", False)):
            r = post_raw(inst, body, ctype, gz)
            if check(r.status == 202, f"{name}: {r.status} {r.body[:300]!r}"):
                j = r.json()
                check(j.get("format") == "minidump", f"{name}: 202 says {j}")
                sent[name] = (j["id"], body)

        fields = [("prod", "Electron"), ("ver", "1.4.3"), ("_productName", "Slack Helper"),
                  ("sentry[release]", "slack-helper@4.2.0"), ("sentry[environment]", "production"),
                  ("sentry[tags][channel]", "beta"), ("sentry[user][id]", "u-42")]
        r = post_multipart(inst, "/api/v1/reports", fields, electron, token=inst.tokens["ingest"])
        if check(r.status == 202, f"multipart on /api/v1/reports: {r.status} {r.body[:300]!r}"):
            check(r.json().get("format") == "minidump", f"multipart: {r.json()}")
            sent["electron-reports"] = (r.json()["id"], electron)
        r = post_multipart(inst, f"/api/{pid}/minidump/?sentry_key={key}", fields, electron)
        if check(r.status == 200 and re.fullmatch(r"[0-9a-f]{32}", r.json().get("id", "")),
                 f"multipart on /api/{pid}/minidump/: {r.status} {r.body[:300]!r}"):
            sent["electron-sentry"] = (str(uuid.UUID(r.json()["id"])), electron)

        eid = uuid.uuid4().hex
        event = {"event_id": eid, "level": "fatal", "platform": "native",
                 "release": "crashy@3.1.4+77", "environment": "staging",
                 "tags": {"backend": "breakpad"}, "user": {"id": "u-7"},
                 "contexts": {"os": {"name": "macOS", "version": "10.15.7", "build": "19H114"},
                              "device": {"model": "MacBookPro16,1", "arch": "x86_64"}},
                 "sdk": {"name": "sentry.native", "version": "0.7.0"}}
        env = native_envelope(eid, event, simple, f"http://{key}@127.0.0.1:{inst.port}/{pid}")
        r = inst.request("POST", f"/api/{pid}/envelope/", body=env,
                         headers={"Content-Type": "application/x-sentry-envelope",
                                  "X-Sentry-Auth": f"Sentry sentry_version=7, sentry_key={key}"})
        if check(r.status == 200 and r.json() == {"id": eid}, f"envelope: {r.status} {r.body[:300]!r}"):
            sent["native-envelope"] = (str(uuid.UUID(eid)), simple)

        # ---- malformed: refused with the reason, nothing stored --------------------------------
        before = report_count(inst)
        bad = [("invalid-range", read("invalid", "invalid-range.dmp"), "application/x-dmp"),
               ("invalid-record-count", read("invalid", "invalid-record-count.dmp"), "application/x-dmp"),
               ("truncated", breakpad[:200], "application/x-dmp"),
               ("header only", breakpad[:32], "application/octet-stream"),
               ("not a dump", b"hello, this is no minidump\n", "application/x-dmp")]
        for name, body, ctype in bad:
            r = post_raw(inst, body, ctype)
            ok = check(400 <= r.status < 500, f"{name}: {r.status} {r.body[:300]!r}")
            if ok:
                e = r.json().get("error", {})
                check(e.get("code") == "invalid_input" and
                      ("minidump" in e.get("message", "") or "MDMP" in e.get("message", "")),
                      f"{name}: the error does not say why: {e}")
        r = post_multipart(inst, "/api/v1/reports", fields, read("invalid", "invalid-range.dmp"),
                           token=inst.tokens["ingest"])
        check(r.status == 400 and "minidump" in message(r),
              f"multipart with a broken dump: {r.status} {r.body[:300]!r}")
        r = post_multipart(inst, f"/api/{pid}/minidump/?sentry_key={key}", fields, b"MZ not a dump")
        check(r.status == 400 and "MDMP" in message(r),
              f"minidump route, no dump: {r.status} {r.body[:300]!r}")
        boundary = "b0undary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"prod\"\r\n\r\nx\r\n"
                f"--{boundary}--\r\n").encode()
        r = inst.request("POST", f"/api/{pid}/minidump/?sentry_key={key}", body=body,
                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        check(r.status == 400 and "upload_file_minidump" in message(r),
              f"minidump route without the file part: {r.status} {r.body[:300]!r}")
        r = post_multipart(inst, f"/api/{pid}/minidump/", fields, simple)
        check(r.status == 401, f"minidump route without a key: {r.status} {r.body[:200]!r}")
        r = post_multipart(inst, f"/api/{pid}/minidump/?sentry_key={key}",
                           [(f"f{i}", "v") for i in range(300)], simple)
        check(r.status == 413, f"300 form fields: {r.status} {r.body[:200]!r}")
        check(report_count(inst) == before, "a refused dump stored something")

        check(inst.wait_processed(120), "reports processed")

        # ---- stored, grouped, frames and trust, raw bytes -------------------------------------
        got = {}
        for name, (rid, dump) in sent.items():
            r = inst.request("GET", f"/api/v1/reports/{rid}", token=inst.tokens["read"])
            if not check(r.status == 200, f"{name}: GET {rid}: {r.status} {r.body[:200]!r}"):
                continue
            rep = r.json()
            got[name] = rep
            # processed, or grouped provisionally while an in-app image waits for its dSYM
            check(rep["format"] == "minidump" and rep["status"] in ("processed", "pending_dsym"),
                  f"{name}: {rep['format']} {rep['status']} {rep.get('error')}")
            check(rep["issue_id"] is not None and rep["fingerprint"], f"{name}: not grouped")
            frames = frames_of(rep)
            check(frames and all(f.get("found") in ("context", "cfi", "frame_pointer", "scan")
                                 for f in frames), f"{name}: frames without `found`")
            check(any(f.get("found") == "context" for f in frames), f"{name}: no context frame")
            raw = inst.request("GET", f"/api/v1/reports/{rid}/raw", token=inst.tokens["read"])
            check(raw.status == 200 and raw.body == dump,
                  f"{name}: raw differs ({raw.status}, {len(raw.body)} of {len(dump)} bytes)")
            check(raw.content_type == "application/x-dmp" and
                  raw.headers.get("content-disposition", "").endswith(f'filename="report-{rid}.dmp"'),
                  f"{name}: raw served as {raw.content_type!r}")
            t = inst.request("GET", f"/api/v1/reports/{rid}?format=text", token=inst.tokens["read"])
            check(t.status == 200 and b"Binary Images:" in t.body, f"{name}: ?format=text {t.status}")

        if "breakpad-xdmp" in got and "breakpad-gzip" in got:
            a, b = got["breakpad-xdmp"], got["breakpad-gzip"]
            check(a["issue_id"] == b["issue_id"], "the same dump sent two ways: two issues")
            rep = a
            check(rep["status"] == "processed", f"breakpad with its dSYM: {rep['status']}")
            check(rep["report"]["metadata"]["exception_type"] == "EXC_BAD_ACCESS" and
                  "KERN_INVALID_ADDRESS at 0x0000000000000045" in rep["report"]["metadata"]["exception_subtype"],
                  f"breakpad exception: {rep['report']['metadata']}")
            top = frames_of(rep)[0]
            names = [s["function"] for s in top.get("symbols", [])]
            check(top.get("symbolicated") == "ok" and any("main" in n for n in names),
                  f"breakpad frame 0 from the dSYM: {top}")
            # walked by the workers with the executable's unwind info: frame 1 (crash's caller,
            # main inlined, returns into libdyld's start) by CFI
            sym = rep["symbolicated"]
            check(sym["images"][0].get("unwind") is True, f"crash's unwind info: {sym['images'][0]}")
            fr = frames_of(rep)
            check(len(fr) > 1 and fr[1].get("found") == "cfi" and fr[1]["image"] == "libdyld.dylib",
                  f"breakpad frame 1 by CFI: {fr[1:2]}")
            check(rep["os_version"] == "macOS 10.12.6 (16G29)", f"breakpad os: {rep['os_version']}")
        if "electron-reports" in got and "electron-sentry" in got:
            a, b = got["electron-reports"], got["electron-sentry"]
            check(a["fingerprint"] == b["fingerprint"], "one Electron dump by two routes: two fingerprints")
            ann = {x["key"]: x["value"] for x in a["report"].get("annotations", [])}
            for k, v in (("prod", "Electron"), ("ver", "1.4.3"), ("environment", "production"),
                         ("tags.channel", "beta"), ("user.id", "u-42")):
                check(ann.get(k) == v, f"electron annotation {k}: {ann.get(k)!r}")
            md = a["report"]["metadata"]
            check(md.get("release") == "slack-helper@4.2.0" and a["app_version"] == "4.2.0",
                  f"electron release: {md.get('release')} {a['app_version']}")
            check(md["exception_type"] == "EXC_CRASH" and md["signal"] == "SIGILL",
                  f"electron exception: {md['exception_type']} {md['signal']}")
            check(len(a["report"]["threads"]) == 17, f"electron threads: {len(a['report']['threads'])}")
            check(not any(im.get("unwind") for im in a["symbolicated"]["images"]),
                  "electron: unwind info for an image nobody uploaded")
        if "native-envelope" in got:
            rep = got["native-envelope"]
            md = rep["report"]["metadata"]
            check(md.get("release") == "crashy@3.1.4+77" and rep["app_version"] == "3.1.4" and
                  md.get("hardware_model") == "MacBookPro16,1",
                  f"envelope event metadata: {md.get('release')} {rep['app_version']} {md.get('hardware_model')}")
            ann = {x["key"]: x["value"] for x in rep["report"].get("annotations", [])}
            check(ann.get("tags.backend") == "breakpad" and ann.get("environment") == "staging" and
                  ann.get("hello") == "world", f"envelope annotations: {ann}")
            check("abort() called" in (md.get("app_specific_info") or ""),
                  f"__crash_info message: {md.get('app_specific_info')!r}")
            if "simple-sniffed" in got:
                check(got["simple-sniffed"]["fingerprint"] == rep["fingerprint"],
                      "the same Crashpad dump alone and in an envelope: two issues")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
