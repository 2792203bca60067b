#!/usr/bin/env python3
"""test_sentry - the Sentry SDK endpoints through the real server and Postgres (ctest
sentry_ingest, labels db;fixtures): POST /api/{project}/envelope/ and /store/.

- Crashes generated from the fixture app (symbolicate_reports.py's generator: random slides,
  app, framework and system frames, PAC bits) are sent as sentry-cocoa events (macho images)
  and as the older SDKs' events (apple images, arm64 addresses cut to 32 bits) in gzip'd
  envelopes; with the app's and the framework's dSYMs uploaded first, every app frame of the
  stored report symbolicates exactly as llvm-symbolizer says, system frames keep the names the
  SDK gave, and the report groups with the same crash sent as an .ips (same fingerprint).
- The answer is 200 {"id": "<event_id>"} and GET /api/v1/reports/<event_id> finds it, in the
  project of the DSN; ?format=text renders it as Apple crash text.
- Auth as Relay takes it: X-Sentry-Auth, Authorization: Sentry, ?sentry_key=, the envelope
  header's dsn; deflate as well as gzip; the store endpoint; attachments and unknown item
  types accepted and counted in /metrics; sessions recorded for the release view (a session
  item that does not parse is dropped, not the event beside it); an event without frames (a
  message) stored.
- The real sentry-cli (tests/sentry_cli's pinned @sentry/cli-linux-x64) sends a crash event
  with `send-envelope --raw` and another with `send-event --raw` to the project's DSN: both
  are stored, symbolicated and grouped as above.
- Resends of one event (16 at once, on two nodes sharing the database, then one later): each
  answered 200 with the event's id, the event stored once per project and counted once.
- Bad input, each a 4xx with a JSON error body and nothing stored: no key, a wrong key,
  another project's key, a malformed auth header, bad gzip, a truncated envelope, a length
  past the end, an event over the size limit, 10,000 items, nesting 10,000 deep, two events,
  an event_id that is no UUID, a project id that is no number.
"""
import concurrent.futures
import gzip
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lookup_oracle as lo  # noqa: E402
import symbolicate_reports as sr  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "sentry_cli"))
from run import npm_ci  # noqa: E402  (the pinned @sentry/cli-linux-x64, tests/sentry_cli)
from web_instance import Instance, SecondNode, check, checks_done, project_create  # noqa: E402



def envelope(items, header=None):
    """An envelope: header line, then (item header, payload) pairs, each with its length."""
    out = json.dumps(header or {}).encode() + b"\n"
    for h, payload in items:
        h = dict(h)
        h.setdefault("length", len(payload))
        out += json.dumps(h).encode() + b"\n" + payload + b"\n"
    return out


def post_envelope(inst, pid, body, key=None, how="x-sentry-auth", encoding="gzip", path=None):
    headers = {"Content-Type": "application/x-sentry-envelope"}
    url = path or f"/api/{pid}/envelope/"
    if key is not None:
        if how == "x-sentry-auth":
            headers["X-Sentry-Auth"] = (f"Sentry sentry_version=7, sentry_key={key}, "
                                        "sentry_client=sentry.cocoa/8.40.1")
        elif how == "authorization":
            headers["Authorization"] = f"Sentry sentry_key={key}, sentry_version=7"
        elif how == "query":
            url += f"?sentry_key={key}"
    if encoding == "gzip":
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    elif encoding == "deflate":
        body = zlib.compress(body)
        headers["Content-Encoding"] = "deflate"
    return inst.request("POST", url, body, headers=headers)


def wait_processed(inst, rid, secs=60):
    deadline = time.time() + secs
    while time.time() < deadline:
        r = inst.request("GET", f"/api/v1/reports/{rid}", token=inst.tokens["read"])
        if r.status == 200 and r.json()["status"] in ("processed", "pending_dsym", "failed"):
            return r.json()
        time.sleep(0.1)
    return None


def uuid_of(eid):
    return f"{eid[:8]}-{eid[8:12]}-{eid[12:16]}-{eid[16:20]}-{eid[20:]}"


def stored_as_received(inst, label, eid, envelope_body, event):
    """A gzip'd envelope smaller than its event is kept as received (content type
    application/x-sentry-envelope, its gzip size in Postgres; raw_bytes still the event's
    size); the raw download still gives the event's bytes exactly."""
    row = inst.psql(inst.db_url, "SELECT content_type, raw_bytes, octet_length(raw), "
                                 "get_byte(raw, 0), get_byte(raw, 1) FROM reports "
                                 f"WHERE id = '{uuid_of(eid)}'").strip().split("|")
    check(row[0] == "application/x-sentry-envelope" and row[3:] == ["31", "139"] and
          int(row[1]) == len(event) and int(row[2]) < len(event) and
          int(row[2]) < len(envelope_body),
          f"{label}: stored as {row} for a {len(event)}-byte event")
    raw = inst.request("GET", f"/api/v1/reports/{eid}/raw", token=inst.tokens["read"])
    check(raw.status == 200 and raw.body == event,
          f"{label}: raw download {raw.status}, {len(raw.body)} bytes, want the event's {len(event)}")


def late_crash(fixtures, manifest):
    """A crash of the -O0 fixture app, whose dSYM the test uploads only after the event."""
    rng = random.Random(11)
    app = sr.fixture_image(fixtures, manifest, "arm64-O0", rng, 0x100000000)
    imgs = [app] + sr.system_images(rng, "arm64")
    threads, _leb, crashed = sr.make_crash(rng, imgs, [app], "arm64")
    return imgs, threads, crashed


def late_dsym(inst, pid, key, fixtures, manifest, ck, crash):
    """An event whose app has no dSYM yet waits (pending_dsym) in its gzip'd row; the dSYM's
    upload has a worker read the event back out of that row and symbolicate it exactly."""
    imgs, threads, crashed = crash
    eid = event_id(0x5f0001)
    ev = json.loads(sr.sentry_report(imgs, threads, [], crashed, "arm64", False))
    ev["event_id"] = eid
    event = json.dumps(ev).encode()
    body = envelope([({"type": "event"}, event)], {"event_id": eid})
    r = post_envelope(inst, pid, body, key)
    check(r.status == 200 and r.json() == {"id": eid}, f"late dSYM event: {r.status}")
    rep = wait_processed(inst, eid)
    check(rep is not None and rep["status"] == "pending_dsym",
          f"late dSYM event before its dSYM: {rep and rep['status']}")
    stored_as_received(inst, "late dSYM event", eid, body, event)
    fx = next(f for f in manifest["fixtures"] if f["name"] == "arm64-O0")
    with open(os.path.join(fixtures, fx["dwarf"]), "rb") as f:
        r = inst.request("POST", f"/api/v1/dsyms?name={fx['image']}", f.read(),
                         token=inst.tokens["upload"])
    check(r.status in (200, 201), f"late dSYM upload: {r.status} {r.body[:200]!r}")
    deadline = time.time() + 60
    while time.time() < deadline:
        rep = wait_processed(inst, eid)
        if rep is not None and rep["status"] == "processed":
            break
        time.sleep(0.2)
    if check(rep is not None and rep["status"] == "processed",
             f"late dSYM event after its dSYM: {rep and rep['status']} {rep and rep['error']}"):
        sr.check_json(ck, "late dSYM event", json.dumps(rep["symbolicated"]), imgs, threads, None,
                      False)


def report_count(inst):
    return int(inst.psql(inst.db_url, "SELECT count(*) FROM reports").strip())


def event_id(k):
    return f"{k:032x}"


def post_raw(port, pid, key, body):
    """A gzip'd envelope POST to the node on `port`: (status, JSON answer or None)."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/{pid}/envelope/", data=gzip.compress(body), method="POST",
        headers={"Content-Type": "application/x-sentry-envelope", "Content-Encoding": "gzip",
                 "X-Sentry-Auth": f"Sentry sentry_version=7, sentry_key={key}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def resends(inst, pid_a, key_a, pid_b, key_b, fixtures, manifest):
    """An SDK that resends an event whose 200 it never saw: 16 copies at once, half to each
    of two nodes on the same database, then one more later, each answered 200 with the same
    id; the event is stored once, counted once in its issue and its day, and processed; the
    same event_id in another project is that project's own event."""
    rng = random.Random(7)
    app = sr.fixture_image(fixtures, manifest, "arm64-O2", rng, 0x100000000)
    imgs = [app] + sr.system_images(rng, "arm64")
    threads, _leb, crashed = sr.make_crash(rng, imgs, [app], "arm64")
    eid = event_id(0x5d0001)
    ev = json.loads(sr.sentry_report(imgs, threads, [], crashed, "arm64", False))
    ev["event_id"] = eid
    body = envelope([({"type": "event", "content_type": "application/json"},
                      json.dumps(ev).encode())], {"event_id": eid})
    with SecondNode(inst) as node2:
        ports = [inst.port, node2.port] * 8
        with concurrent.futures.ThreadPoolExecutor(len(ports)) as pool:
            answers = list(pool.map(lambda port: post_raw(port, pid_a, key_a, body), ports))
    check(all(a == (200, {"id": eid}) for a in answers),
          f"16 resends at once on two nodes: each 200 with the id: {sorted(set(map(str, answers)))}")
    r = post_envelope(inst, pid_a, body, key_a)
    check(r.status == 200 and r.json() == {"id": eid}, f"a resend later: {r.status} {r.body[:200]!r}")
    rep = wait_processed(inst, eid)
    check(rep is not None and rep["status"] == "processed", f"the event is processed: {rep and rep['status']}")
    uuid = f"{eid[:8]}-{eid[8:12]}-{eid[12:16]}-{eid[16:20]}-{eid[20:]}"
    got = inst.psql(inst.db_url, f"SELECT count(*), min(project_id), max(issue_id) FROM reports "
                                 f"WHERE id = '{uuid}'").strip()
    check(got.startswith(f"1|{pid_a}|"), f"stored once, in its project: {got!r}")
    issue = got.split("|")[2]
    if issue:
        counts = inst.psql(inst.db_url, f"SELECT i.count, (SELECT sum(count) FROM issue_days d "
                                        f"WHERE d.issue_id = i.id) FROM issues i "
                                        f"WHERE i.id = {issue}").strip()
        check(counts == "1|1", f"counted once in its issue and its day: {counts!r}")
    r = post_envelope(inst, pid_b, body, key_b)
    check(r.status == 200 and r.json() == {"id": eid}, f"the same id in another project: {r.status}")
    got = inst.psql(inst.db_url, f"SELECT string_agg(project_id::text, ',' ORDER BY project_id) "
                                 f"FROM reports WHERE id = '{uuid}'").strip()
    check(got == f"{min(pid_a, pid_b)},{max(pid_a, pid_b)}", f"one in each project: {got!r}")


def main():
    fixtures = os.environ["STACKSIFT_FIXTURES"]
    manifest = lo.load_manifest(fixtures)
    rng = random.Random(20261127)
    ck = sr.Checker()
    crashes = []
    for rnd in range(3):
        app = sr.fixture_image(fixtures, manifest, "arm64-O2", rng, 0x100000000)
        kit = sr.fixture_image(fixtures, manifest, "kit", rng, 0x110000000)
        imgs = [app, kit] + sr.system_images(rng, "arm64")
        rng.shuffle(imgs)
        threads, _leb, crashed = sr.make_crash(rng, imgs, [app, kit], "arm64")
        crashes.append((imgs, threads, crashed))
    late = late_crash(fixtures, manifest)
    wanted = {}
    for imgs, threads, _ in crashes + [late]:
        for f in [f for _, _, _, fr in threads for f in fr]:
            if f.image.fixture:
                wanted.setdefault((f.image.dwarf, f.image.arch), set()).add(f.lookup)
    ck.oracle = {k: lo.symbolize(k[0], k[1], sorted(v)) for k, v in wanted.items()}

    with Instance("sentry", workers=1) as inst:
        key_a, pid_a = project_create(inst, "ios-app")
        key_b, pid_b = project_create(inst, "other-app")
        check(pid_a != pid_b and key_a != key_b, "two projects, two keys")
        for name in ("arm64-O2", "kit"):
            fx = next(f for f in manifest["fixtures"] if f["name"] == name)
            with open(os.path.join(fixtures, fx["dwarf"]), "rb") as f:
                r = inst.request("POST", f"/api/v1/dsyms?name={fx['image']}", f.read(),
                                 token=inst.tokens["upload"])
            check(r.status in (200, 201), f"dSYM {name}: {r.status} {r.body[:200]!r}")

        # ---- events of the fixture crashes: symbolicated, grouped like the .ips ----------
        n = 0
        for ci, (imgs, threads, crashed) in enumerate(crashes):
            for legacy in (False, True):
                n += 1
                ev = json.loads(sr.sentry_report(imgs, threads, [], crashed, "arm64", legacy))
                eid = event_id(0x5e000 + n)
                ev["event_id"] = eid
                body = envelope([({"type": "event", "content_type": "application/json"},
                                  json.dumps(ev).encode())], {"event_id": eid})
                r = post_envelope(inst, pid_a, body, key_a)
                label = f"crash {ci} {'legacy' if legacy else 'macho'}"
                if not check(r.status == 200 and r.json() == {"id": eid},
                             f"{label}: {r.status} {r.body[:300]!r}"):
                    continue
                rep = wait_processed(inst, eid)
                if not check(rep is not None and rep["status"] == "processed",
                             f"{label}: not processed: {rep and rep['status']} {rep and rep['error']}"):
                    continue
                check(rep["format"] == "sentry", f"{label}: format {rep['format']}")
                sr.check_json(ck, label, json.dumps(rep["symbolicated"]), imgs, threads, None,
                              False)
                # the same crash as an .ips (no Last Exception Backtrace): the same group key
                ips = sr.ips_report(imgs, threads, [], crashed, "arm64")
                r2 = inst.request("POST", "/api/v1/reports", ips.encode(),
                                  headers={"Content-Type": "application/json"},
                                  token=inst.tokens["ingest"])
                check(r2.status == 202, f"{label}: .ips POST {r2.status}")
                rep2 = wait_processed(inst, r2.json()["id"]) if r2.status == 202 else None
                check(rep2 is not None and rep2["fingerprint"] == rep["fingerprint"],
                      f"{label}: fingerprint {rep['fingerprint']} vs .ips "
                      f"{rep2 and rep2['fingerprint']}")
                t = inst.request("GET", f"/api/v1/reports/{eid}?format=text",
                                 token=inst.tokens["read"])
                check(t.status == 200 and b"Binary Images:" in t.body and
                      b"Report Format:       sentry" in t.body, f"{label}: text {t.status}")
                stored_as_received(inst, label, eid, body, json.dumps(ev).encode())
        # ---- the real sentry-cli: send-envelope --raw and send-event --raw -----------------
        exe = npm_ci(os.environ["STACKSIFT_BUILD_DIR"])
        cli_env = {k: v for k, v in os.environ.items() if not k.startswith("SENTRY_")}
        cli_env.update(HOME=inst.tmp, SENTRY_DSN=f"http://{key_a}@127.0.0.1:{inst.port}/{pid_a}")
        imgs, threads, crashed = crashes[0]
        for k, cmd in enumerate(("send-envelope", "send-event")):
            eid = event_id(0x5c000 + k)
            ev = json.loads(sr.sentry_report(imgs, threads, [], crashed, "arm64", k == 1))
            ev["event_id"] = eid
            path = os.path.join(inst.tmp, f"{cmd}.txt")
            with open(path, "wb") as f:
                if cmd == "send-envelope":
                    f.write(envelope([({"type": "event"}, json.dumps(ev).encode())],
                                     {"event_id": eid}))
                else:
                    f.write(json.dumps(ev).encode())
            p = subprocess.run([exe, cmd, "--raw", path], env=cli_env, capture_output=True,
                               text=True, timeout=120)
            check(p.returncode == 0, f"sentry-cli {cmd}: exit {p.returncode}: {p.stderr[-500:]}")
            rep = wait_processed(inst, eid)
            if not check(rep is not None and rep["status"] == "processed",
                         f"sentry-cli {cmd}: event {eid} not stored and processed"):
                continue
            sr.check_json(ck, f"sentry-cli {cmd}", json.dumps(rep["symbolicated"]), imgs, threads,
                          None, False)

        late_dsym(inst, pid_a, key_a, fixtures, manifest, ck, late)
        check(ck.app_frames >= 30 and not ck.mismatches,
              f"symbolication: {ck.app_frames} app frames, mismatches {ck.mismatches[:5]}")

        # ---- the four ways to give the key, encodings, the store endpoint ---------------
        msg = lambda eid: json.dumps({"event_id": eid, "level": "error", "platform": "cocoa",
                                      "message": {"formatted": "checkout failed"},
                                      "exception": {"values": [{"type": "NSURLErrorDomain",
                                                                "value": "Code=-1009"}]},
                                      "threads": {"values": [{"id": 0, "current": True,
                                                              "stacktrace": {"frames": [
                                                                  {"function": "main"},
                                                                  {"function": "-[Cart pay]"}]}}]}
                                      }).encode()
        variants = [("x-sentry-auth", "gzip"), ("authorization", "gzip"), ("query", "identity"),
                    ("dsn", "deflate")]
        for i, (how, enc) in enumerate(variants):
            eid = event_id(0xa0000 + i)
            hdr = {"event_id": eid}
            if how == "dsn":
                hdr["dsn"] = f"http://{key_a}@127.0.0.1:{inst.port}/{pid_a}"
            body = envelope([({"type": "event"}, msg(eid))], hdr)
            r = post_envelope(inst, pid_a, body, None if how == "dsn" else key_a, how, enc)
            check(r.status == 200 and r.json() == {"id": eid},
                  f"key by {how}, {enc}: {r.status} {r.body[:200]!r}")
        eid = event_id(0xb0001)
        r = inst.request("POST", f"/api/{pid_a}/store/", gzip.compress(msg(eid)),
                         headers={"Content-Type": "application/json", "Content-Encoding": "gzip",
                                  "X-Sentry-Auth": f"Sentry sentry_key={key_a}"})
        check(r.status == 200 and r.json() == {"id": eid}, f"store endpoint: {r.status} {r.body!r}")
        rep = wait_processed(inst, eid)
        check(rep is not None and rep["status"] == "processed" and rep["format"] == "sentry",
              f"handled error stored and processed: {rep and rep['status']}")
        # grouped by exception type and function names: the four variants share one issue
        ids = [event_id(0xa0000 + i) for i in range(4)] + [eid]
        fps = {(wait_processed(inst, x) or {}).get("fingerprint") for x in ids}
        check(len(fps) == 1 and None not in fps, f"handled errors group together: {fps}")
        # a message without any frame
        eid = event_id(0xb0002)
        body = envelope([({"type": "event"}, json.dumps({"event_id": eid, "message": "low disk",
                                                         "level": "warning"}).encode())],
                        {"event_id": eid})
        r = post_envelope(inst, pid_a, body, key_a)
        check(r.status == 200, f"message event: {r.status} {r.body!r}")
        rep = wait_processed(inst, eid)
        check(rep is not None and rep["status"] == "processed", "message event processed")

        # ---- sessions, attachments, unknown items beside an event; nothing else ----------
        eid = event_id(0xc0001)
        body = envelope([
            ({"type": "event"}, msg(eid)),
            ({"type": "attachment", "filename": "log.txt", "attachment_type": "event.attachment"},
             b"line 1\nline 2\n\x00binary"),
            ({"type": "session"}, json.dumps({"sid": "2f8e2b5c-4c1d-4a57-9c6e-0c6f8f7c1a11",
                                              "init": True, "started": "2026-11-27T00:00:00Z",
                                              "status": "ok", "attrs": {"release": "a@1"}}).encode()),
            ({"type": "client_report"}, b'{"discarded_events":[]}'),
            ({"type": "totally_new_item"}, b"whatever"),
        ], {"event_id": eid})
        r = post_envelope(inst, pid_a, body, key_a)
        check(r.status == 200 and r.json() == {"id": eid}, f"mixed envelope: {r.status} {r.body!r}")
        body = envelope([({"type": "sessions"}, json.dumps({
            "aggregates": [{"started": "2026-11-27T00:00:00Z", "exited": 3}],
            "attrs": {"release": "a@1"}}).encode())])
        r = post_envelope(inst, pid_a, body, key_a)
        check(r.status == 200 and r.json() == {}, f"sessions-only envelope: {r.status} {r.body!r}")
        # recorded for the release view: one session (init) and an aggregate of 3 exited
        n_sessions = inst.psql(inst.db_url, "SELECT coalesce(sum(h.sessions), 0) FROM session_hours h "
                               f"JOIN release_envs r ON r.id = h.renv WHERE r.project_id = {pid_a} "
                               "AND r.release = 'a@1'").strip()
        check(n_sessions == "4", f"sessions recorded for release a@1: {n_sessions}, want 4")
        # a session item that does not parse is dropped; the event beside it is stored
        eid = event_id(0xc0002)
        body = envelope([({"type": "event"}, msg(eid)), ({"type": "session"}, b'{"sid": 12}')],
                        {"event_id": eid})
        r = post_envelope(inst, pid_a, body, key_a)
        check(r.status == 200 and r.json() == {"id": eid}, f"bad session beside an event: {r.status}")
        m = inst.request("GET", "/metrics", token=inst.tokens["read"]).body.decode()
        got = re.search(r"^stacksift_sentry_sessions_dropped_total (\d+)$", m, re.M)
        check(got is not None and int(got.group(1)) >= 1, f"/metrics sessions dropped: {got and got.group(1)}")
        for typ, at_least in (("event", 12), ("session", 2), ("attachment", 1), ("ignored", 1),
                              ("unknown", 1)):
            got = re.search(rf'^stacksift_sentry_items_total{{type="{typ}"}} (\d+)$', m, re.M)
            check(got is not None and int(got.group(1)) >= at_least,
                  f"/metrics items {typ}: {got and got.group(1)}")

        # ---- resends: one event stored once per project, under concurrency, on two nodes --
        resends(inst, pid_a, key_a, pid_b, key_b, fixtures, manifest)

        # ---- bad input: a 4xx with a JSON error, nothing stored ---------------------------
        good = lambda eid: envelope([({"type": "event"}, msg(eid))], {"event_id": eid})
        deep = b"[" * 10000 + b"]" * 10000
        many = b"{}\n" + b'{"type":"session","length":2}\n{}\n' * 10000
        big_event = json.dumps({"event_id": event_id(0xd0009), "message": "x" * (6 << 20)}).encode()
        bad = [
            ("no key", lambda: post_envelope(inst, pid_a, good(event_id(0xd0001)), None), 401),
            ("wrong key", lambda: post_envelope(inst, pid_a, good(event_id(0xd0002)), "0" * 32), 401),
            ("other project's key",
             lambda: post_envelope(inst, pid_a, good(event_id(0xd0003)), key_b), 403),
            ("malformed auth header",
             lambda: inst.request("POST", f"/api/{pid_a}/envelope/", good(event_id(0xd0004)),
                                  headers={"X-Sentry-Auth": "Sentry sentry_key"}), 401),
            ("bad gzip",
             lambda: inst.request("POST", f"/api/{pid_a}/envelope/", b"\x1f\x8b\x08\x00garbage",
                                  headers={"X-Sentry-Auth": f"Sentry sentry_key={key_a}",
                                           "Content-Encoding": "gzip"}), 400),
            ("truncated envelope",
             lambda: post_envelope(inst, pid_a, good(event_id(0xd0005))[:-40], key_a), 400),
            ("length past the end",
             lambda: post_envelope(inst, pid_a, b'{}\n{"type":"event","length":999999}\n{}\n',
                                   key_a), 400),
            ("event over the size limit",
             lambda: post_envelope(inst, pid_a, envelope([({"type": "event"}, big_event)]), key_a),
             413),
            ("10,000 items", lambda: post_envelope(inst, pid_a, many, key_a), 413),
            ("nesting 10,000 deep in an item header",
             lambda: post_envelope(inst, pid_a, b'{}\n{"type":"event","x":' + deep + b'}\n{}\n',
                                   key_a), 400),
            ("nesting 10,000 deep in the event",
             lambda: post_envelope(inst, pid_a, envelope([({"type": "event"}, b'{"a":' + deep + b"}")]),
                                   key_a), 400),
            ("two events",
             lambda: post_envelope(inst, pid_a, envelope([({"type": "event"}, msg(event_id(0xd0006))),
                                                          ({"type": "event"}, msg(event_id(0xd0007)))]),
                                   key_a), 400),
            ("event_id not a UUID",
             lambda: post_envelope(inst, pid_a, envelope([({"type": "event"}, msg("zz"))],
                                                         {"event_id": "not-a-uuid"}), key_a), 400),
            ("project id not a number",
             lambda: post_envelope(inst, pid_a, good(event_id(0xd0008)), key_a,
                                   path="/api/abc/envelope/"), 404),
            ("unknown content encoding",
             lambda: inst.request("POST", f"/api/{pid_a}/envelope/", good(event_id(0xd000a)),
                                  headers={"X-Sentry-Auth": f"Sentry sentry_key={key_a}",
                                           "Content-Encoding": "br"}), 422),
        ]
        before = report_count(inst)
        for what, send, status in bad:
            r = send()
            body = None
            try:
                body = r.json()
            except ValueError:
                pass
            check(r.status == status and isinstance(body, dict) and "error" in body,
                  f"{what}: {r.status} (want {status}) {r.body[:200]!r}")
        time.sleep(0.5)
        check(report_count(inst) == before, f"bad input stored reports: {before} -> {report_count(inst)}")
        for k in range(1, 0xb):
            r = inst.request("GET", f"/api/v1/reports/{event_id(0xd0000 + k)}", token=inst.tokens["read"])
            check(r.status == 404, f"refused event {k} is not stored: {r.status}")
    print(f"test_sentry: {n} crash events, {ck.app_frames} app frames "
          f"({ck.symbols} symbols), {ck.system_frames} system frames, {len(bad)} bad inputs")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
