#!/usr/bin/python3
"""test_openapi - docs/openapi.yaml and the server agree (ctest test_openapi, label db).

1. Every route of ROUTES (server/http/server.c) is documented, and every documented
   operation is a route: same methods, same paths ({param} segments compared by position).
2. A real `stacksift serve` on a database of its own (tests/web_instance.py) gets the fixture
   app's dSYMs, generated reports (deploy/demo_reports.py) and a real corpus report; then
   every documented operation is called, with good and bad input, without a token and with a
   token of the wrong scope. Each answer's status must be documented for that operation, its
   Content-Type documented for that status, and its body must validate against the
   documented schema (JSON Schema 2020-12, python3-jsonschema).
3. Every documented (operation, status) is produced at least once, except the few listed in
   NOT_PRODUCED with the reason.

Runs with Debian's python3 (python3-yaml, python3-jsonschema from deploy/install-deps.sh).
Prints "N passed, N failed" like tests/harness.h.
"""
import copy
import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback

import jsonschema
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_instance import Instance, check, checks_done, project_create  # noqa: E402

MAX_REPORT = 1 << 20
MAX_UPLOAD = 1 << 20

# Documented answers this test does not provoke, and why.
NOT_PRODUCED = {
    ("get", "/readyz", "503"): "needs Postgres down (test_server's outage test covers it)",
    ("post", "/api/{project_id}/envelope/", "429"): "needs Postgres down and a full spool "
                                                    "(reliability_spool covers it)",
    ("post", "/api/{project_id}/store/", "429"): "needs Postgres down and a full spool "
                                                 "(reliability_spool covers it)",
    ("post", "/", "201"): "the same upload as POST /bugsnag/dsym's 201, made there first",
    ("post", "/api/{project_id}/minidump/", "429"): "needs Postgres down and a full spool "
                                                    "(the envelope's spool, reliability_spool)",
    ("post", "/api/v1/reports", "429"): "needs more crash reports in progress than "
                                        "STACKSIFT_INGEST_INFLIGHT (reliability_storm covers it)",
    ("post", "/bugsnag/notify", "429"): "needs more crash reports in progress than "
                                        "STACKSIFT_INGEST_INFLIGHT (the same budget as "
                                        "reliability_storm's routes)",
}

produced = set()


# ---- the document ------------------------------------------------------------------------

def resolve(node, root, depth=0):
    """A copy of `node` with every local $ref replaced by its target (the spec has no cycles)."""
    assert depth < 50, "$ref cycle in docs/openapi.yaml"
    if isinstance(node, dict):
        if "$ref" in node:
            target = root
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            merged = copy.deepcopy(target)
            extra = {k: v for k, v in node.items() if k != "$ref"}
            if extra and isinstance(merged, dict):
                merged = {"allOf": [merged, extra]} if "type" in merged or "properties" in merged else {**merged, **extra}
            return resolve(merged, root, depth + 1)
        return {k: resolve(v, root, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(v, root, depth + 1) for v in node]
    return node


def template_key(path):
    return re.sub(r"\{[^}]+\}", "{}", path)


def server_routes(source):
    """(method, path template) of each row of ROUTES in server/http/server.c."""
    text = open(os.path.join(source, "server/http/server.c")).read()
    table = re.search(r"static const route ROUTES\[\] = \{(.*?)\n\};", text, re.S)
    assert table, "ROUTES not found in server/http/server.c"
    rows = re.findall(r'\{"([A-Z]+)",\s*"([^"]+)",\s*(true|false),', table.group(1))
    out = set()
    for method, path, has_param in rows:
        if has_param == "true":
            path = path.replace("*", "{}") if "*" in path else path + "{}"
        out.add((method.lower(), path))
    return out


# ---- checking one answer -----------------------------------------------------------------

class Checker:
    def __init__(self, spec):
        self.spec = spec
        self.paths = {}
        for path, item in spec["paths"].items():
            for method, op in item.items():
                if method in ("get", "post", "put", "patch", "delete"):
                    self.paths[(method, template_key(path))] = (path, resolve(op, spec))

    def op(self, method, template):
        return self.paths[(method, template_key(template))]

    def answer(self, method, template, resp, expect):
        """Check one answer against the document; `expect` is the status the case wants."""
        path, op = self.op(method, template)
        name = f"{method.upper()} {template} -> {resp.status}"
        ok = check(resp.status == expect, f"{name}: expected {expect}; body {resp.body[:300]!r}")
        responses = op["responses"]
        doc = responses.get(str(resp.status))
        if not check(doc is not None, f"{name}: status not documented"):
            return False
        produced.add((method, path, str(resp.status)))
        if resp.status == 401:
            check(resp.headers.get("www-authenticate") == "Bearer", f"{name}: WWW-Authenticate")
        content = doc.get("content")
        if not content:
            return check(resp.body == b"", f"{name}: documented without a body, got {len(resp.body)} bytes") and ok
        ctype = resp.content_type
        if not check(ctype in content, f"{name}: Content-Type {ctype!r} not documented ({list(content)})"):
            return False
        schema = content[ctype].get("schema", {})
        if ctype == "application/json":
            try:
                body = json.loads(resp.body)
            except ValueError as e:
                return check(False, f"{name}: not JSON: {e}")
        else:
            body = resp.body.decode("utf-8", "replace")
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(body), key=str)
        for e in errors[:3]:
            print(f"  {name}: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}", file=sys.stderr)
        return check(not errors, f"{name}: body does not match the documented schema") and ok


def main():
    source = os.environ.get("STACKSIFT_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(source, "docs/openapi.yaml")) as f:
        spec = yaml.safe_load(f)
    check(spec.get("openapi", "").startswith("3."), "openapi: 3.x")
    c = Checker(spec)

    # 1. Route parity.
    routes = server_routes(source)
    documented = set(c.paths)
    for r in sorted(routes - documented):
        check(False, f"route {r[0].upper()} {r[1]} is not in docs/openapi.yaml")
    for r in sorted(documented - routes):
        check(False, f"docs/openapi.yaml documents {r[0].upper()} {r[1]}, which the server does not have")
    check(len(routes) >= 18, f"ROUTES parsed: {len(routes)} routes")
    for (method, _), (path, op) in c.paths.items():
        check("operationId" in op, f"{method} {path}: operationId")
        if path.startswith("/api/"):
            # "dsn": the Sentry endpoints take a project's DSN key, not a bearer token
            check(op.get("x-scope") in ("ingest", "upload", "read", "admin", "dsn"),
                  f"{method} {path}: x-scope")
            check("401" in op["responses"] and "403" in op["responses"], f"{method} {path}: 401 and 403 documented")

    env = {"STACKSIFT_MAX_REPORT_BYTES": str(MAX_REPORT), "STACKSIFT_MAX_UPLOAD_BYTES": str(MAX_UPLOAD)}
    with Instance("openapi", extra_env=env) as inst:
        try:
            run_cases(inst, c, source)
        except Exception:   # an answer so wrong that a case could not go on: one failure
            traceback.print_exc()
            check(False, "the cases stopped early (traceback above)")

    # 3. Coverage of the document.
    for (method, tkey), (path, op) in sorted(c.paths.items()):
        for status in op["responses"]:
            key = (method, path, status)
            if key in NOT_PRODUCED:
                continue
            check(key in produced, f"{method.upper()} {path} {status}: documented but never produced by this test")
    return checks_done()


def run_cases(inst, c, source):
    T = inst.tokens
    fixtures = inst.fixtures
    req = inst.request

    def call(method, template, path, expect, **kw):
        resp = req(method.upper(), path, **kw)
        c.answer(method, template, resp, expect)
        return resp

    # Every /api/v1 route without a token, and with a token lacking its scope.
    wrong = {"ingest": T["read"], "upload": T["read"], "read": T["ingest"], "admin": T["read"]}
    for (method, _), (path, op) in c.paths.items():
        if not path.startswith("/api/") or op["x-scope"] == "dsn":
            continue
        concrete = path.replace("{id}", "1").replace("{uuid}", "4C4C44B4-5555-3144-A19C-7D6EB1CD3545") \
            .replace("{org}", "acme").replace("{project}", "default")
        call(method, path, concrete, 401)
        call(method, path, concrete, 401, token="ss_000000000000_" + "0" * 64)
        call(method, path, concrete, 403, token=wrong[op["x-scope"]])

    # Service.
    call("get", "/healthz", "/healthz", 200)
    call("get", "/readyz", "/readyz", 200)

    # dSYMs: zip (new, then known), the -O0 app's DWARF as multipart, refusals.
    with open(os.path.join(fixtures, "FixtureApp-dSYMs.zip"), "rb") as f:
        zdata = f.read()
    r = call("post", "/api/v1/dsyms", "/api/v1/dsyms", 201, body=zdata, token=T["upload"],
             headers={"Content-Type": "application/zip"})
    check(r.status == 201 and {x["status"] for x in r.json()["files"]} == {"created"}, "zip upload: created")
    r = call("post", "/api/v1/dsyms", "/api/v1/dsyms", 200, body=zdata, token=T["upload"],
             headers={"Content-Type": "application/zip"})
    check(r.status == 200 and {x["status"] for x in r.json()["files"]} == {"exists"}, "zip again: exists")
    dwarf = os.path.join(fixtures, "arm64-O0/FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp")
    with open(dwarf, "rb") as f:
        r = inst.multipart("/api/v1/dsyms", "file", "FixtureApp", f.read(), T["upload"])
    c.answer("post", "/api/v1/dsyms", r, 201)
    call("post", "/api/v1/dsyms", "/api/v1/dsyms?name=notes.txt", 400, body=b"not a debug file\n", token=T["upload"])
    # an App Store dSYM's maps: a UUID map alone (answered in "maps"), a binary plist (422)
    um = (b'<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>'
          b'DBGOriginalUUID</key><string>C8374B6D-6E96-34D8-AE38-EFAA5FEC424F</string></dict>'
          b'</plist>')
    r = call("post", "/api/v1/dsyms", "/api/v1/dsyms?name=2D10C42F-591D-3265-B147-78BA0868073F.plist",
             201, body=um, token=T["upload"])
    check(r.status == 201 and r.json()["files"] == [] and r.json()["maps"][0]["kind"] == "uuidmap",
          f"a UUID map alone: {r.body[:200]!r}")
    call("post", "/api/v1/dsyms", "/api/v1/dsyms?name=2D10C42F-591D-3265-B147-78BA0868073F.plist",
         422, body=b"bplist00\x01", token=T["upload"])
    call("post", "/api/v1/dsyms", "/api/v1/dsyms?name=big", 413, body=b"\0" * (MAX_UPLOAD + 4096), token=T["upload"])
    r = call("get", "/api/v1/dsyms", "/api/v1/dsyms", 200, token=T["read"])
    dsyms = r.json()["dsyms"] if r.status == 200 else []
    check(len(dsyms) == 3, f"3 debug files listed, got {len(dsyms)}")
    uuid = dsyms[0]["uuid"] if dsyms else "0"
    r = call("get", "/api/v1/dsyms", f"/api/v1/dsyms?uuid={uuid}", 200, token=T["read"])
    check(r.status == 200 and [d["uuid"] for d in r.json()["dsyms"]] == [uuid], "dsyms?uuid= filters")
    call("get", "/api/v1/dsyms", "/api/v1/dsyms?limit=0", 400, token=T["read"])
    r = call("get", "/api/v1/dsyms/{uuid}", f"/api/v1/dsyms/{uuid}", 200, token=T["read"])
    call("get", "/api/v1/dsyms/{uuid}", "/api/v1/dsyms/00000000-0000-0000-0000-000000000000", 404, token=T["read"])

    # sentry-cli's chunked upload (tests/sentry_cli drives the real client): options, a chunk,
    # the assemble states, refusals.
    chunk_path = "/api/0/organizations/acme/chunk-upload/"
    assemble = "/api/0/projects/{org}/{project}/files/difs/assemble/"
    r = call("get", "/api/0/organizations/{org}/chunk-upload/", chunk_path, 200, token=T["upload"])
    check(r.status == 200 and r.json()["hashAlgorithm"] == "sha1", "chunk options: sha1")
    with open(os.path.join(fixtures, "x86_64-O2/FixtureApp.app/FixtureApp"), "rb") as f:
        exe = f.read()
    exe_sha = hashlib.sha1(exe).hexdigest()
    files = {exe_sha: {"name": "FixtureApp", "chunks": [exe_sha]}}
    r = call("post", assemble, "/api/0/projects/acme/default/files/difs/assemble/", 200,
             token=T["upload"], body=files)
    check(r.status == 200 and r.json()[exe_sha]["state"] == "not_found"
          and r.json()[exe_sha]["missingChunks"] == [exe_sha], "assemble: the chunk is missing")
    r = inst.multipart(chunk_path, "file_gzip", exe_sha, gzip.compress(exe), T["upload"])
    c.answer("post", "/api/0/organizations/{org}/chunk-upload/", r, 200)
    r = inst.multipart(chunk_path, "file", "0" * 40, exe, T["upload"])
    c.answer("post", "/api/0/organizations/{org}/chunk-upload/", r, 400)
    r = inst.multipart(chunk_path, "file", "0" * 40, b"\0" * ((8 << 20) + 1), T["upload"])
    c.answer("post", "/api/0/organizations/{org}/chunk-upload/", r, 413)
    state = None
    for _ in range(300):
        r = call("post", assemble, "/api/0/projects/acme/default/files/difs/assemble/", 200,
                 token=T["upload"], body=files)
        state = r.json()[exe_sha]["state"] if r.status == 200 else None
        if state in ("ok", "error"):
            break
        time.sleep(0.1)
    check(state == "ok" and r.json()[exe_sha]["dif"]["cpuName"] == "x86_64", f"assembled: {r.body[:300]!r}")
    call("post", assemble, "/api/0/projects/acme/default/files/difs/assemble/", 400,
         token=T["upload"], body=b"[1", headers={"Content-Type": "application/json"})
    call("post", assemble, "/api/0/projects/acme/Not-A-Slug/files/difs/assemble/", 404,
         token=T["upload"], body=files)
    call("post", assemble, "/api/0/projects/acme/default/files/difs/assemble/", 413,
         token=T["upload"], body={exe_sha: {"name": "big", "chunks": [exe_sha] * 2}})

    # Reports: generated ones of the fixture app, a real corpus report, refusals.
    gen = tempfile.mkdtemp(prefix="stacksift-openapi-reports.")
    subprocess.run([sys.executable, os.path.join(source, "deploy/demo_reports.py"), inst.bin, fixtures, gen, "7"],
                   check=True, capture_output=True, timeout=120)
    files = sorted(glob.glob(os.path.join(gen, "*.crash")))[:6] + sorted(glob.glob(os.path.join(gen, "*.json")))[:3]
    posted = {}
    for path in files + [os.path.join(source, "../shared/corpus/reports/apple-text/eatfit-1.crash")]:
        with open(path, "rb") as f:
            data = f.read()
        ctype = "application/json" if data[:1] == b"{" else "text/plain"
        r = call("post", "/api/v1/reports", "/api/v1/reports", 202, body=data, token=T["ingest"],
                 headers={"Content-Type": ctype})
        if r.status == 202:
            posted[r.json()["id"]] = data
    check(len(posted) == len(files) + 1, "every report accepted")
    call("post", "/api/v1/reports", "/api/v1/reports", 400, body=b"hello, not a crash report\n",
         token=T["ingest"], headers={"Content-Type": "text/plain"})
    call("post", "/api/v1/reports", "/api/v1/reports", 413, body=b"x" * (MAX_REPORT + 1),
         token=T["ingest"], headers={"Content-Type": "text/plain"})
    call("post", "/api/v1/reports", "/api/v1/reports", 422, body=b"\x89PNG", token=T["ingest"],
         headers={"Content-Type": "image/png"})
    check(inst.wait_processed(60), "the workers processed every report within 60 s")

    rid, raw = next(iter(posted.items()))
    r = call("get", "/api/v1/reports/{id}", f"/api/v1/reports/{rid}", 200, token=T["read"])
    check(r.status == 200 and r.json()["status"] == "processed" and r.json()["issue_id"], "report processed into an issue")
    r = call("get", "/api/v1/reports/{id}", f"/api/v1/reports/{rid}?format=text", 200, token=T["read"])
    check(b"crashsite::" in r.body or b"FXWorker" in r.body, "symbolicated text names fixture functions")
    call("get", "/api/v1/reports/{id}", f"/api/v1/reports/{rid}?format=xml", 400, token=T["read"])
    call("get", "/api/v1/reports/{id}", "/api/v1/reports/5e2c1a10-0000-4000-8000-000000000000", 404, token=T["read"])
    r = call("get", "/api/v1/reports/{id}/raw", f"/api/v1/reports/{rid}/raw", 200, token=T["read"])
    check(r.body == raw, "raw answers the bytes as posted")
    call("get", "/api/v1/reports/{id}/raw", "/api/v1/reports/5e2c1a10-0000-4000-8000-000000000000/raw", 404, token=T["read"])
    call("get", "/api/v1/reports/{id}/raw", "/api/v1/reports/not-a-uuid/raw", 404, token=T["read"])

    # Issues.
    r = call("get", "/api/v1/issues", "/api/v1/issues", 200, token=T["read"])
    issues = r.json()["issues"] if r.status == 200 else []
    check(len(issues) >= 3, f"at least 3 issues, got {len(issues)}")
    r = call("get", "/api/v1/issues", "/api/v1/issues?q=deref_null&status=open&sort=count", 200, token=T["read"])
    found = r.json()["issues"] if r.status == 200 else []
    check(found and all("deref_null" in (i["title"] + i["culprit"]) for i in found), "q= filters by title/culprit")
    r = call("get", "/api/v1/issues", "/api/v1/issues?kind=hang", 200, token=T["read"])
    check(r.status == 200 and r.json()["issues"] and all(i["kind"] == "hang" for i in r.json()["issues"]), "kind=hang filters")
    r = call("get", "/api/v1/issues", "/api/v1/issues?limit=1&sort=count", 200, token=T["read"])
    cur = r.json().get("next_cursor") if r.status == 200 else None
    check(cur, "a page of 1 has a next_cursor")
    r = call("get", "/api/v1/issues", f"/api/v1/issues?limit=1&sort=count&cursor={cur}", 200, token=T["read"])
    call("get", "/api/v1/issues", "/api/v1/issues?kind=meltdown", 400, token=T["read"])
    call("get", "/api/v1/issues", "/api/v1/issues?sort=alphabet", 400, token=T["read"])
    # Projects: every report so far went to the default project (bearer-token intake).
    r = call("get", "/api/v1/projects", "/api/v1/projects", 200, token=T["read"])
    check(r.status == 200 and r.json()["projects"][0]["slug"] == "default"
          and r.json()["projects"][0]["id"] == 1, "the default project is id 1")
    r = call("get", "/api/v1/issues", "/api/v1/issues?project=default", 200, token=T["read"])
    check(r.status == 200 and {i["id"] for i in r.json()["issues"]} == {i["id"] for i in issues}
          and all(i["project_id"] == 1 for i in r.json()["issues"]), "project=default: the same issues")
    r = call("get", "/api/v1/issues", "/api/v1/issues?project=no-such-project", 400, token=T["read"])
    check(r.status == 400 and "no-such-project" in r.body.decode(), "unknown project named in the 400")
    iid = issues[0]["id"] if issues else 1
    r = call("get", "/api/v1/issues/{id}", f"/api/v1/issues/{iid}", 200, token=T["read"])
    call("get", "/api/v1/issues/{id}", "/api/v1/issues/999999999", 404, token=T["read"])
    r = call("get", "/api/v1/issues/{id}/reports", f"/api/v1/issues/{iid}/reports?limit=2", 200, token=T["read"])
    call("get", "/api/v1/issues/{id}/reports", f"/api/v1/issues/{iid}/reports?limit=0", 400, token=T["read"])
    call("get", "/api/v1/issues/{id}/reports", "/api/v1/issues/999999999/reports", 404, token=T["read"])
    r = call("patch", "/api/v1/issues/{id}", f"/api/v1/issues/{iid}", 200, token=T["admin"],
             body={"status": "resolved", "resolved_in": "3.0"})
    check(r.status == 200 and r.json()["status"] == "resolved" and r.json()["resolved_in"] == "3.0", "PATCH resolves")
    call("patch", "/api/v1/issues/{id}", f"/api/v1/issues/{iid}", 400, token=T["admin"], body={"status": "fixed"})
    call("patch", "/api/v1/issues/{id}", f"/api/v1/issues/{iid}", 400, token=T["admin"], body=b"not json",
         headers={"Content-Type": "application/json"})
    call("patch", "/api/v1/issues/{id}", "/api/v1/issues/999999999", 404, token=T["admin"], body={"status": "open"})

    # Sparklines: one request for many issues; counts add up to each issue's count.
    ids = [i["id"] for i in issues]
    r = call("get", "/api/v1/daily", "/api/v1/daily?issues=" + ",".join(map(str, ids + [999999999])), 200, token=T["read"])
    if r.status == 200:
        d = r.json()
        check(len(d["days"]) == 30, "30 days by default")
        check(set(d["issues"]) == {str(i) for i in ids}, "every known id answered, unknown ids left out")
        check(all(sum(d["issues"][str(i["id"])]) == i["count"] for i in issues), "daily counts add up to count")
    r = call("get", "/api/v1/daily", f"/api/v1/daily?issues={iid}&days=7", 200, token=T["read"])
    check(r.status == 200 and len(r.json()["days"]) == 7 and len(r.json()["issues"][str(iid)]) == 7, "days=7")
    call("get", "/api/v1/daily", "/api/v1/daily?issues=1,x", 400, token=T["read"])
    call("get", "/api/v1/daily", "/api/v1/daily", 400, token=T["read"])
    call("get", "/api/v1/daily", f"/api/v1/daily?issues={iid}&days=91", 400, token=T["read"])
    call("get", "/api/v1/daily", "/api/v1/daily?issues=" + ",".join(["1"] * 201), 400, token=T["read"])

    call("get", "/api/v1/dsyms/missing", "/api/v1/dsyms/missing", 200, token=T["read"])
    call("get", "/api/v1/dsyms/missing", "/api/v1/dsyms/missing?limit=0", 400, token=T["read"])

    # Synchronous symbolication: an address of the -O2 app at a load address.
    # the UUIDs depend on where the fixtures were built: read them from the manifest
    with open(os.path.join(fixtures, "manifest.json")) as f:
        o2_uuid = next(fx["slices"][0]["uuid"] for fx in json.load(f)["fixtures"] if fx["name"] == "arm64-O2")
    o2 = next((d for d in dsyms if d["uuid"] == o2_uuid), {"uuid": o2_uuid}) if dsyms else {"uuid": "0"}
    body = {"images": [{"uuid": o2["uuid"], "arch": "arm64", "load_address": "0x104000000", "name": "FixtureApp"}],
            "stacks": [["0x104004000", "0x104004100"]]}
    r = call("post", "/api/v1/symbolicate", "/api/v1/symbolicate", 200, token=T["read"], body=body)
    check(r.status == 200 and any(f["symbols"] for f in r.json()["stacks"][0]), "symbolicate finds symbols")
    call("post", "/api/v1/symbolicate", "/api/v1/symbolicate", 400, token=T["read"], body={"stacks": 1})
    call("post", "/api/v1/symbolicate", "/api/v1/symbolicate", 413, token=T["read"],
         body={"images": [], "stacks": [[]] * 1025})

    # Privacy-API samples: a batch, its retry, a conflicting reuse of its id, refusals; then
    # the call sites it was counted into, as JSON and CSV.
    images = [{"uuid": o2["uuid"], "arch": "arm64", "load_address": "0x104000000", "size": 32768,
               "name": "FixtureApp"},
              {"uuid": "A1B2C3D4-0000-4000-8000-00000000C01A", "arch": "arm64", "size": 65536,
               "load_address": "0x1a0000000", "name": "CoreLocation",
               "path": "/System/Library/Frameworks/CoreLocation.framework/CoreLocation"}]
    batch = {"format_version": 1, "batch_id": "openapi-1",
             "app": {"name": "FixtureApp", "version": "1.0", "build": "7"},
             "device": {"id": "device-1"}, "arch": "arm64", "images": images,
             "samples": [{"tag": "UIPasteboard.string", "frames": ["0x1a0001000", "0x104004004"],
                          "count": 2}]}
    r = call("post", "/api/v1/samples", "/api/v1/samples", 202, token=T["ingest"], body=batch)
    check(r.status == 202 and r.json() == {"accepted": 1, "calls": 2}, "samples accepted")
    r = call("post", "/api/v1/samples", "/api/v1/samples", 202, token=T["ingest"], body=batch)
    check(r.status == 202 and r.json().get("duplicate") is True, "a retried batch is a duplicate")
    other = dict(batch, samples=[dict(batch["samples"][0], count=3)])
    call("post", "/api/v1/samples", "/api/v1/samples", 409, token=T["ingest"], body=other)
    bad = dict(batch, batch_id=None, samples=[dict(batch["samples"][0], count=0)])
    r = call("post", "/api/v1/samples", "/api/v1/samples", 400, token=T["ingest"], body=bad)
    check(r.status == 400 and r.json()["error"]["field"] == "samples[0].count", "the field is named")
    deep = dict(batch, batch_id=None, samples=[dict(batch["samples"][0], frames=["0x104004004"] * 1000)])
    call("post", "/api/v1/samples", "/api/v1/samples", 413, token=T["ingest"], body=deep)
    call("post", "/api/v1/samples", "/api/v1/samples", 422, token=T["ingest"], body=b"tag,frames\n",
         headers={"Content-Type": "text/csv"})
    sites = []
    for _ in range(300):
        r = call("get", "/api/v1/callsites", "/api/v1/callsites?tag=UIPasteboard.string", 200, token=T["read"])
        sites = r.json()["callsites"] if r.status == 200 else []
        if sites:
            break
        time.sleep(0.1)
    check(len(sites) == 1 and sites[0]["count"] == 2, f"the batch was counted once: {sites}")
    r = call("get", "/api/v1/callsites", "/api/v1/callsites?tag=UIPasteboard.string&project=default", 200, token=T["read"])
    check(r.status == 200 and r.json()["callsites"] == sites, "call sites of the default project")
    call("get", "/api/v1/callsites", "/api/v1/callsites?sort=alphabet", 400, token=T["read"])
    call("get", "/api/v1/callsites", "/api/v1/callsites?project=no-such-project", 400, token=T["read"])
    call("get", "/api/v1/callsites.csv", "/api/v1/callsites.csv?project=no-such-project", 400, token=T["read"])
    r = call("get", "/api/v1/callsites.csv", "/api/v1/callsites.csv?new_in_build=7", 200, token=T["read"])
    check(r.status == 200 and r.body.count(b"\r\n") == 2, "CSV: header and one row")
    call("get", "/api/v1/callsites.csv", "/api/v1/callsites.csv?limit=0", 400, token=T["read"])

    # Sessions: a batch, its retry (counted once), a bad field, too many, a wrong type.
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    sess = {"sessions": [{"sid": "openapi-s1", "did": "device-1", "release": "FixtureApp@1.0+7",
                          "started": now, "duration_s": 3, "status": "crashed", "errors": 1}]}
    r = call("post", "/api/v1/sessions", "/api/v1/sessions", 202, token=T["ingest"], body=sess)
    check(r.status == 202 and r.json() == {"accepted": 1, "ignored": 0}, f"sessions: {r.body!r}")
    call("post", "/api/v1/sessions", "/api/v1/sessions?project=1", 202, token=T["ingest"], body=sess)
    bad = {"sessions": [dict(sess["sessions"][0], status="fine")]}
    r = call("post", "/api/v1/sessions", "/api/v1/sessions", 400, token=T["ingest"], body=bad)
    check(r.status == 400 and r.json()["error"].get("field") == "sessions[0].status", "sessions: field named")
    call("post", "/api/v1/sessions", "/api/v1/sessions", 413, token=T["ingest"],
         body={"sessions": [{}] * 100001})
    call("post", "/api/v1/sessions", "/api/v1/sessions", 422, token=T["ingest"], body=b"sid,release\n",
         headers={"Content-Type": "text/csv"})

    r = call("get", "/api/v1/releases", "/api/v1/releases", 200, token=T["read"])
    rel = r.json()["releases"] if r.status == 200 else []
    check(len(rel) == 1 and rel[0]["sessions"] == 1 and rel[0]["crash_free_sessions"] == 0,
          f"releases: {rel}")
    call("get", "/api/v1/releases", "/api/v1/releases?limit=0", 400, token=T["read"])
    call("get", "/api/v1/releases/{release}", "/api/v1/releases/FixtureApp%401.0%2B7", 200, token=T["read"])
    call("get", "/api/v1/releases/{release}", "/api/v1/releases/FixtureApp%401.0%2B7?project=x", 400,
         token=T["read"])
    call("get", "/api/v1/releases/{release}", "/api/v1/releases/Other%401", 404, token=T["read"])

    # Alert rules: add (a receiver that is never called: no issue is new here after this),
    # list, refuse a bad one, remove.
    r = call("post", "/api/v1/alerts", "/api/v1/alerts", 201, token=T["admin"],
             body={"kind": "spike", "url": "http://127.0.0.1:9/hook", "threshold": 4, "min_count": 20})
    rid = r.json()["id"] if r.status == 201 else 0
    check(r.status == 201 and len(r.json()["secret"]) == 64, "alert rule: a generated secret")
    r = call("get", "/api/v1/alerts", "/api/v1/alerts", 200, token=T["admin"])
    check(r.status == 200 and [a["id"] for a in r.json()["alerts"]] == [rid], "alert rules listed")
    call("get", "/api/v1/alerts", "/api/v1/alerts?project=0", 400, token=T["admin"])
    r = call("post", "/api/v1/alerts", "/api/v1/alerts", 400, token=T["admin"],
             body={"kind": "spike", "url": "gopher://x"})
    check(r.status == 400 and r.json()["error"].get("field") == "url", "alert rule: field named")
    call("delete", "/api/v1/alerts/{id}", f"/api/v1/alerts/{rid}", 200, token=T["admin"])
    call("delete", "/api/v1/alerts/{id}", f"/api/v1/alerts/{rid}", 404, token=T["admin"])

    call("get", "/metrics", "/metrics", 401)
    call("get", "/metrics", "/metrics", 403, token=T["ingest"])
    r = call("get", "/metrics", "/metrics", 200, token=T["read"])
    check(b'route="dashboard"' in r.body or b"stacksift_reports_queued" in r.body, "metrics text")

    # Dashboard files, with revalidation.
    r = call("get", "/", "/", 200)
    etag = r.headers.get("etag", "")
    check(etag.startswith('"') and "default-src 'none'" in r.headers.get("content-security-policy", ""), "ETag and CSP")
    call("get", "/", "/", 304, headers={"If-None-Match": etag})
    for name in c.op("get", "/ui/{name}")[1]["parameters"][0]["schema"]["enum"]:
        r = call("get", "/ui/{name}", f"/ui/{name}", 200)
        check(len(r.body) > 100, f"/ui/{name} has a body")
        call("get", "/ui/{name}", f"/ui/{name}", 304, headers={"If-None-Match": r.headers.get("etag", "")})
    call("get", "/ui/{name}", "/ui/secret.txt", 404)

    # An undocumented path or method answers the documented error shape.
    for method, path in (("GET", "/api/v1/nothing"), ("DELETE", "/api/v1/issues/1"), ("GET", "/ui/a/b")):
        r = req(method, path, token=T["admin"])
        check(r.status == 404 and jsonschema.Draft202012Validator(
            resolve(c.spec["components"]["schemas"]["Error"], c.spec)).is_valid(r.json()), f"{method} {path}: 404 Error")

    # Sentry endpoints, last (their events go to other projects than the default one): DSN
    # keys, not tokens (tests/test_sentry.py has the rest).
    (key_a, pid_a), (key_b, _) = (project_create(inst, "openapi-a"), project_create(inst, "openapi-b"))
    def sentry_event(eid):
        return json.dumps({"event_id": eid, "message": "openapi", "threads": {"values": [
            {"stacktrace": {"frames": [{"function": "f"}]}}]}}).encode()
    eids = {"envelope": "0123456789abcdef0123456789abcde1", "store": "0123456789abcdef0123456789abcde2"}
    env = (b'{"event_id":"' + eids["envelope"].encode() + b'"}\n{"type":"event"}\n' +
           sentry_event(eids["envelope"]) + b"\n")
    for kind, body, ctype in (("envelope", env, "application/x-sentry-envelope"),
                              ("store", sentry_event(eids["store"]), "application/json")):
        tmpl = f"/api/{{project_id}}/{kind}/"
        url = f"/api/{pid_a}/{kind}/"
        auth = lambda key: {"X-Sentry-Auth": f"Sentry sentry_key={key}, sentry_version=7",
                            "Content-Type": ctype}
        call("post", tmpl, url, 401, body=body, headers={"Content-Type": ctype})
        call("post", tmpl, url, 401, body=body, headers=auth("0" * 32))
        call("post", tmpl, url, 403, body=body, headers=auth(key_b))
        call("post", tmpl, f"/api/x{pid_a}/{kind}/", 404, body=body, headers=auth(key_a))
        call("post", tmpl, url, 400, body=b"\x1f\x8b\x08\x00garbage",
             headers=dict(auth(key_a), **{"Content-Encoding": "gzip"}))
        call("post", tmpl, url, 422, body=body, headers=dict(auth(key_a), **{"Content-Encoding": "br"}))
        call("post", tmpl, url, 413, body=b"x" * (MAX_REPORT + 1), headers=auth(key_a))
        r = call("post", tmpl, url, 200, body=body, headers=auth(key_a))
        check(r.status == 200 and r.json() == {"id": eids[kind]},
              f"sentry {kind}: answer {r.body[:200]!r}")

    # Sentry's minidump endpoint (Crashpad's uploader): multipart with upload_file_minidump.
    with open(os.path.join(source, "../shared/minidumps/crashpad/simple-crashpad.dmp"), "rb") as f:
        dump = f.read()
    bnd = "openapi-minidump-boundary"
    mp = (f"--{bnd}\r\nContent-Disposition: form-data; name=\"sentry[release]\"\r\n\r\nopenapi@1\r\n"
          f"--{bnd}\r\nContent-Disposition: form-data; name=\"upload_file_minidump\"; filename=\"d.dmp\"\r\n"
          f"Content-Type: application/octet-stream\r\n\r\n").encode() + dump + f"\r\n--{bnd}--\r\n".encode()
    mph = {"Content-Type": f"multipart/form-data; boundary={bnd}"}
    tmpl, url = "/api/{project_id}/minidump/", f"/api/{pid_a}/minidump/"
    call("post", tmpl, url, 401, body=mp, headers=mph)
    call("post", tmpl, url + "?sentry_key=" + "0" * 32, 401, body=mp, headers=mph)
    call("post", tmpl, url + "?sentry_key=" + key_b, 403, body=mp, headers=mph)
    call("post", tmpl, f"/api/x{pid_a}/minidump/?sentry_key={key_a}", 404, body=mp, headers=mph)
    call("post", tmpl, url + "?sentry_key=" + key_a, 400, body=b"MDMP" + b"\0" * 28,
         headers={"Content-Type": "application/x-dmp"})
    call("post", tmpl, url + "?sentry_key=" + key_a, 422, body=dump,
         headers={"Content-Type": "application/x-dmp", "Content-Encoding": "br"})
    call("post", tmpl, url + "?sentry_key=" + key_a, 413, body=b"x" * (MAX_REPORT + 1), headers=mph)
    r = call("post", tmpl, url + "?sentry_key=" + key_a, 200, body=mp, headers=mph)
    check(r.status == 200 and re.fullmatch(r"[0-9a-f]{32}", r.json().get("id", "")),
          f"sentry minidump: answer {r.body[:200]!r}")

    # KSCrash's standard sink: a multipart "reports" array, each report on its own (last: the
    # Bugsnag cases put reports into a project of their own).
    ks = os.path.join(source, "../shared/corpus/reports/kscrash-json/kscrash-example-1.json")
    with open(ks, "rb") as f:
        ksdata = f.read()
    r = inst.multipart("/api/v1/reports?token=" + T["ingest"], "reports", "reports.json",
                       b"[" + ksdata + b",{\"not\":\"a report\"}]", None)
    c.answer("post", "/api/v1/reports", r, 202)
    check(r.status == 202 and r.json()["accepted"] == 1 and r.json()["refused"] == 1, "sink batch: 1 + 1")
    r = inst.multipart("/api/v1/reports?token=" + T["ingest"], "reports", "reports.json", b"[{}]", None)
    c.answer("post", "/api/v1/reports", r, 400)
    check(r.status == 400 and r.json()["refused"] == 1, "sink batch of nothing acceptable: 400 listing it")

    # Bugsnag's clients: the API key is a project's DSN key.
    key = "00112233445566778899aabbccddeeff"
    inst.psql(inst.db_url, "INSERT INTO projects (slug, name) VALUES ('bugsnag-app', 'Bugsnag app'); "
              "INSERT INTO dsn_keys (project_id, key_sha256) SELECT id, sha256('%s'::bytea) FROM projects "
              "WHERE slug = 'bugsnag-app'" % key)
    time.sleep(1.2)   # the key table reloads twice a second
    with open(os.path.join(source, "../shared/corpus/reports/other/bugsnag-event-1.json"), "rb") as f:
        event = f.read()
    payload = b'{"apiKey":"' + key.encode() + b'","payloadVersion":"4.0","events":[' + event + b"]}"
    bh = {"Content-Type": "application/json", "Bugsnag-Api-Key": key, "Bugsnag-Payload-Version": "4.0"}
    r = call("post", "/bugsnag/notify", "/bugsnag/notify", 202, body=payload, headers=bh)
    check(r.status == 202 and r.json()["format"] == "bugsnag", "notify: a bugsnag report")
    call("post", "/bugsnag/notify", "/bugsnag/notify", 400, body=ksdata, headers=bh)
    call("post", "/bugsnag/notify", "/bugsnag/notify", 401, body=event,
         headers={"Content-Type": "application/json"})
    call("post", "/bugsnag/notify", "/bugsnag/notify", 422, body=payload,
         headers=dict(bh, **{"Bugsnag-Payload-Version": "9.0"}))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    sess = {"app": {"version": "1.0"}, "sessions": [{"id": "s1", "startedAt": started}]}
    sh = {"Bugsnag-Api-Key": key, "Bugsnag-Payload-Version": "1.0"}
    call("post", "/bugsnag/sessions", "/bugsnag/sessions", 202, body=sess, headers=sh)
    call("post", "/bugsnag/sessions", "/bugsnag/sessions", 400, body={"sessions": 3}, headers=sh)
    call("post", "/bugsnag/sessions", "/bugsnag/sessions", 401, body=sess)
    d5 = os.path.join(fixtures, "dwarf5/FixtureD5.app.dSYM/Contents/Resources/DWARF/FixtureD5")
    with open(d5, "rb") as f:
        d5data = f.read()

    def bugsnag_dsym(path, fields, data):
        boundary = "bugsnag-test-boundary-5e1a"
        body = b""
        for k, v in fields.items():
            body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n").encode()
        if data is not None:
            body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"dsym\"; filename=\"FixtureD5\"\r\n"
                     "Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
        body += f"--{boundary}--\r\n".encode()
        return inst.request("POST", path, body=body,
                            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    c.answer("post", "/bugsnag/dsym", bugsnag_dsym("/bugsnag/dsym", {"apiKey": key}, d5data), 201)
    c.answer("post", "/bugsnag/dsym", bugsnag_dsym("/bugsnag/dsym", {"apiKey": key}, d5data), 409)
    c.answer("post", "/bugsnag/dsym", bugsnag_dsym("/bugsnag/dsym", {"apiKey": key, "overwrite": "true"}, d5data), 200)
    c.answer("post", "/bugsnag/dsym", bugsnag_dsym("/bugsnag/dsym", {"apiKey": key}, None), 400)
    c.answer("post", "/bugsnag/dsym", bugsnag_dsym("/bugsnag/dsym", {}, d5data), 401)
    c.answer("post", "/", bugsnag_dsym("/", {"apiKey": key}, d5data), 409)
    c.answer("post", "/", bugsnag_dsym("/", {"apiKey": key, "overwrite": "true"}, d5data), 200)
    c.answer("post", "/", bugsnag_dsym("/", {"apiKey": key}, None), 400)
    c.answer("post", "/", bugsnag_dsym("/", {"apiKey": "0" * 32}, d5data), 401)

if __name__ == "__main__":
    sys.exit(main())
