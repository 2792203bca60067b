"""test_alerts - alert rules and their webhooks through the real server, Postgres and a real
HTTP receiver on loopback (http.server): every rule kind yields one event per cause, bodies
signed X-Stacksift-Signature: sha256=HMAC(secret, body) with a Slack-compatible `text`; the
receiver down for a while then up (every event arrives, none twice by id); an event that
never gets through is marked failed and listed; three nodes deliver without a duplicate; a
node killed with SIGKILL mid-delivery loses nothing (another node sends the same id once the
dead node's lease lapses).
"""
import hashlib
import hmac
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
from web_instance import Instance, check, checks_done, free_port  # noqa: E402

ENV = {"STACKSIFT_ALERT_POLL_MS": "100", "STACKSIFT_ALERT_RETRY_MS": "200",
       "STACKSIFT_ALERT_SWEEP_S": "1", "STACKSIFT_ALERT_TIMEOUT_MS": "4000",
       "STACKSIFT_ALERT_GIVE_UP_S": "8", "STACKSIFT_PUBLIC_URL": "https://stacksift.example"}


class Receiver:
    """A webhook receiver on 127.0.0.1:port: records every POST (path, headers, body, whether
    its signature checked out with the path's secret); `hold` makes the first request of each
    event id on that path wait `hold_s` before answering."""

    def __init__(self):
        self.port = free_port()
        self.lock = threading.Lock()
        self.got = []          # (path, event id, body dict, signature ok, user agent)
        self.secrets = {}      # path -> secret
        self.hold = {}         # path -> seconds
        self.held = set()
        self.server = None

    def start(self):
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                path = self.path
                secret = rec.secrets.get(path, "")
                want = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                hold = 0
                with rec.lock:
                    if rec.hold.get(path) and body.get("id") not in rec.held:
                        rec.held.add(body.get("id"))
                        hold = rec.hold[path]
                        rec.got.append((path + "#held", body.get("id"), body, False, ""))
                if hold:
                    time.sleep(hold)
                    return   # no answer: the sender died meanwhile (or times out)
                with rec.lock:
                    rec.got.append((path, body.get("id"), body,
                                    hmac.compare_digest(want, self.headers.get("X-Stacksift-Signature", "")),
                                    self.headers.get("User-Agent", "")))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def events(self, path):
        with self.lock:
            return [g for g in self.got if g[0] == path]

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"


def wait_for(cond, timeout_s=20, step=0.1):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def report(app, version="1"):
    return {"kind": "hang", "app": {"name": app, "version": version}, "images": [],
            "threads": [{"frames": ["0x1000"]}]}


def post_report(inst, app, version="1", port=None):
    saved = inst.port
    inst.port = port or saved
    try:
        r = inst.request("POST", "/api/v1/reports", body=report(app, version),
                         token=inst.tokens["ingest"])
    finally:
        inst.port = saved
    check(r.status == 202, f"report {app}: {r.status} {r.body[:120]!r}")
    return r


def add_rule(inst, rec, path, kind, **extra):
    body = dict(kind=kind, url=rec.url(path), **extra)
    r = inst.request("POST", "/api/v1/alerts", body=body, token=inst.tokens["admin"])
    check(r.status == 201, f"rule {kind}: {r.status} {r.body[:200]!r}")
    rule = r.json() if r.status == 201 else {}
    rec.secrets[path] = rule.get("secret", "")
    return rule


def sql(inst, q):
    return inst.psql(inst.db_url, q).strip()


def start_node(inst, name):
    port = free_port()
    env = inst.env()
    env.update({"STACKSIFT_LISTEN": f"127.0.0.1:{port}", "STACKSIFT_NODE_NAME": name,
                "STACKSIFT_DATA_DIR": os.path.join(inst.tmp, f"data-{name}")})
    log = open(os.path.join(inst.tmp, f"serve-{name}.log"), "ab")
    proc = subprocess.Popen([inst.bin, "serve"], env=env, stdout=log, stderr=log)
    saved = inst.port
    inst.port = port
    try:
        ok = wait_for(lambda: proc.poll() is None and ready(inst), 20, 0.05)
    finally:
        inst.port = saved
    if not ok:
        raise RuntimeError(f"node {name} did not start")
    return proc, port


def ready(inst):
    try:
        return inst.request("GET", "/readyz").status == 200
    except OSError:
        return False


def every_kind(inst, rec):
    """One rule per kind, each cause once."""
    rules = {k: add_rule(inst, rec, "/" + k, k, **extra) for k, extra in (
        ("new_issue", {}), ("regression", {}), ("spike", {"threshold": 3, "min_count": 6}),
        ("crash_free", {"threshold": 0.9, "min_count": 10}), ("new_callsite", {}))}
    # bad rules name their field
    for body, field in (({"kind": "sometimes", "url": rec.url("/x")}, "kind"),
                        ({"kind": "new_issue", "url": "ftp://x"}, "url"),
                        ({"kind": "crash_free", "url": rec.url("/x"), "threshold": 2}, "threshold"),
                        ({"kind": "new_issue", "url": rec.url("/x"), "min_count": 3}, "min_count")):
        r = inst.request("POST", "/api/v1/alerts", body=body, token=inst.tokens["admin"])
        check(r.status == 400 and r.json()["error"].get("field") == field,
              f"bad rule {body}: {r.status} {r.body[:160]!r}")
    r = inst.request("GET", "/api/v1/alerts", token=inst.tokens["read"])
    check(r.status == 403, f"alerts need admin: {r.status}")

    # a new issue; its regression (resolved in 1, seen in 2)
    post_report(inst, "Alpha", "1")
    check(wait_for(lambda: len(rec.events("/new_issue")) == 1), "new issue: one event")
    alpha = json.loads(sql(inst, "SELECT row_to_json(i) FROM issues i WHERE app = 'Alpha'"))
    r = inst.request("PATCH", f"/api/v1/issues/{alpha['id']}", token=inst.tokens["admin"],
                     body={"status": "resolved", "resolved_in": "1"})
    check(r.status == 200, f"resolve: {r.status}")
    post_report(inst, "Alpha", "2")
    post_report(inst, "Alpha", "2")
    check(wait_for(lambda: len(rec.events("/regression")) == 1), "regression: one event")
    # a spike: 7 reports of one issue in this hour (no history: any count beats 3x the mean,
    # the floor decides); Alpha's 3 stay below the floor of 6
    for _ in range(7):
        post_report(inst, "Spiky", "1")
    check(wait_for(lambda: len(rec.events("/spike")) == 1), "spike: one event")
    # crash-free sessions of the newest release below 0.9 (at least 10 sessions)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    sess = [{"sid": f"cf-{i}", "did": f"d{i}", "release": "Alpha@2+1", "started": now,
             "status": "crashed" if i < 5 else "exited"} for i in range(20)]
    r = inst.request("POST", "/api/v1/sessions", body={"sessions": sess}, token=inst.tokens["ingest"])
    check(r.status == 202, f"sessions: {r.status}")
    r = inst.request("POST", "/api/v1/sessions", token=inst.tokens["ingest"],
                     body={"sessions": [dict(s, sid="more-" + s["sid"]) for s in sess]})
    check(wait_for(lambda: len(rec.events("/crash_free")) == 1), "crash-free: one event")
    # a privacy-API call site first seen in a build
    with open(os.path.join(inst.fixtures, "FixtureApp-dSYMs.zip"), "rb") as f:
        r = inst.request("POST", "/api/v1/dsyms", body=f.read(), token=inst.tokens["upload"],
                         headers={"Content-Type": "application/zip"})
    check(r.status in (200, 201), f"dSYMs: {r.status}")
    with open(os.path.join(inst.fixtures, "manifest.json")) as f:
        o2 = next(x["slices"][0]["uuid"] for x in json.load(f)["fixtures"] if x["name"] == "arm64-O2")
    batch = {"format_version": 1, "batch_id": "alerts-1",
             "app": {"name": "FixtureApp", "version": "1.0", "build": "7"},
             "device": {"id": "device-1"}, "arch": "arm64",
             "images": [{"uuid": o2, "arch": "arm64", "load_address": "0x104000000",
                         "size": 32768, "name": "FixtureApp"},
                        {"uuid": "A1B2C3D4-0000-4000-8000-00000000C01A", "arch": "arm64",
                         "size": 65536, "load_address": "0x1a0000000", "name": "CoreLocation",
                         "path": "/System/Library/Frameworks/CoreLocation.framework/CoreLocation"}],
             "samples": [{"tag": "UIPasteboard.string", "frames": ["0x1a0001000", "0x104004004"],
                          "count": 2}]}
    r = inst.request("POST", "/api/v1/samples", body=batch, token=inst.tokens["ingest"])
    check(r.status == 202, f"samples: {r.status} {r.body[:120]!r}")
    check(wait_for(lambda: len(rec.events("/new_callsite")) == 1, 30), "new call site: one event")

    time.sleep(1.5)   # a sweep and a few polls more: nothing else may arrive
    counts = {k: len(rec.events("/" + k)) for k in rules}
    check(counts == {"new_issue": 2, "regression": 1, "spike": 1, "crash_free": 1,
                     "new_callsite": 1}, f"events per rule: {counts}")
    for path, eid, body, sig_ok, _ in rec.got:
        kind = path.strip("/")
        check(sig_ok, f"{kind}: signature checks out")
        check(isinstance(body.get("text"), str) and "<https://stacksift.example/#/" in body["text"],
              f"{kind}: Slack text with the link: {body.get('text')!r}")
        check(body.get("event") == kind and body.get("rule", {}).get("kind") == kind and
              body.get("project") == {"id": 1} and str(uuid.UUID(eid)) == eid,
              f"{kind}: id, event, rule, project: {body!r:.300}")
        subject = body.get("issue") or body.get("callsite") or body.get("release")
        check(isinstance(subject, dict), f"{kind}: what it is about")
        if "issue" in body or "callsite" in body:
            check(isinstance(subject.get("frames"), list) and len(subject["frames"]) <= 3,
                  f"{kind}: top frames {subject.get('frames')!r:.200}")
    cs = rec.events("/new_callsite")[0][2]["callsite"] if counts["new_callsite"] else {}
    check(cs.get("tag") == "UIPasteboard.string" and cs.get("build") == "7" and
          any(f.get("function") for f in cs.get("frames", [])), f"call site facts: {cs}")
    rel = rec.events("/crash_free")[0][2]["release"] if counts["crash_free"] else {}
    check(rel.get("release") == "Alpha@2+1" and rel.get("crash_free_sessions") == 0.75,
          f"crash-free facts: {rel}")
    st = sql(inst, "SELECT string_agg(DISTINCT status, ',') FROM alert_events")
    check(st == "delivered", f"all delivered: {st}")
    return rules


def cli_rules(inst, rec):
    """stacksift alert add|list|remove."""
    env = inst.env()
    out = subprocess.run([inst.bin, "alert", "add", "--kind", "spike", "--url", rec.url("/cli"),
                          "--threshold", "5", "--min-count", "50"], env=env, capture_output=True,
                         text=True, timeout=30)
    check(out.returncode == 0 and "secret" in out.stdout, f"alert add: {out.stdout} {out.stderr}")
    rid = out.stdout.split()[2].rstrip(":") if out.returncode == 0 else "0"
    out = subprocess.run([inst.bin, "alert", "list"], env=env, capture_output=True, text=True,
                         timeout=30)
    line = [x for x in out.stdout.splitlines() if x.startswith(rid + " ")]
    check(len(line) == 1 and "spike" in line[0] and rec.url("/cli") in line[0] and
          " 5 " in line[0] and " 50 " in line[0], f"alert list: {out.stdout}")
    out = subprocess.run([inst.bin, "alert", "add", "--kind", "nope", "--url", rec.url("/cli")],
                         env=env, capture_output=True, text=True, timeout=30)
    check(out.returncode == 1 and "kind" in out.stderr, f"alert add refuses: {out.stderr}")
    out = subprocess.run([inst.bin, "alert", "remove", rid], env=env, capture_output=True,
                         text=True, timeout=30)
    check(out.returncode == 0, f"alert remove: {out.stderr}")
    check(sql(inst, f"SELECT count(*) FROM alert_rules WHERE id = {int(rid)}") == "0", "removed")


def receiver_down_then_up(inst, rec):
    """Events made while the receiver is down are retried (backoff) and all arrive once."""
    before = {g[1] for g in rec.events("/new_issue")}
    rec.stop()
    for i in range(5):
        post_report(inst, f"Down{i}")
    check(wait_for(lambda: sql(inst, "SELECT count(*) FROM alert_events WHERE kind = 'new_issue' "
                               "AND status = 'pending' AND attempts >= 2") == "5", 10),
          "retried while the receiver is down")
    rec.start()   # the same port again
    check(wait_for(lambda: len({g[1] for g in rec.events("/new_issue")} - before) == 5, 20),
          "every event arrived once the receiver was up")
    ids = [g[1] for g in rec.events("/new_issue")]
    check(len(ids) == len(set(ids)), f"none twice: {len(ids)} deliveries, {len(set(ids))} ids")


def given_up(inst, rec):
    """A receiver that never answers 2xx: after STACKSIFT_ALERT_GIVE_UP_S the event is failed,
    listed by GET /api/v1/alerts."""
    dead = free_port()
    r = inst.request("POST", "/api/v1/alerts", token=inst.tokens["admin"],
                     body={"kind": "new_issue", "url": f"http://127.0.0.1:{dead}/gone"})
    rid = r.json().get("id") if r.status == 201 else None
    post_report(inst, "Unreachable")
    check(wait_for(lambda: sql(inst, f"SELECT status FROM alert_events WHERE rule_id = {rid}")
                   == "failed", 25), "marked failed after the give-up time")
    r = inst.request("GET", "/api/v1/alerts", token=inst.tokens["admin"])
    body = r.json() if r.status == 200 else {}
    failed = [e for e in body.get("failed", []) if e["rule"] == rid]
    check(len(failed) == 1 and failed[0]["attempts"] >= 3 and failed[0]["last_error"],
          f"failed event listed: {failed}")
    rule = [x for x in body.get("alerts", []) if x["id"] == rid]
    check(rule and rule[0]["events"]["failed"] == 1, f"rule counts: {rule}")
    r = inst.request("DELETE", f"/api/v1/alerts/{rid}", token=inst.tokens["admin"])
    check(r.status == 200, f"delete rule: {r.status}")
    r = inst.request("DELETE", f"/api/v1/alerts/{rid}", token=inst.tokens["admin"])
    check(r.status == 404, f"delete again: {r.status}")


def nodes_and_kill(inst, rec, rules):
    """Three nodes deliver 20 events: each id once. Then the node delivering an event is
    killed with SIGKILL while the receiver holds the request: another node sends it again."""
    procs = {}
    for name in ("b", "c"):
        procs[name] = start_node(inst, name)
    before = {g[1] for g in rec.events("/new_issue")}
    for i in range(20):
        post_report(inst, f"Many{i}", port=procs["b" if i % 2 else "c"][1])
    check(wait_for(lambda: len({g[1] for g in rec.events("/new_issue")} - before) == 20, 30),
          "three nodes: all 20 delivered")
    ids = [g[1] for g in rec.events("/new_issue")]
    check(len(ids) == len(set(ids)), f"three nodes: no id twice ({len(ids)} for {len(set(ids))})")
    n = sql(inst, "SELECT count(*) - count(DISTINCT (rule_id, cause)) FROM alert_events")
    check(n == "0", "one event per cause")

    # kill -9 mid-delivery: only the new_issue rule now, its receiver holds the first try
    for k, rule in rules.items():
        if k != "new_issue":
            inst.request("DELETE", f"/api/v1/alerts/{rule['id']}", token=inst.tokens["admin"])
    rec.hold["/new_issue"] = 30
    post_report(inst, "Killed")
    check(wait_for(lambda: any(g[0] == "/new_issue#held" for g in rec.got), 20),
          "a node is delivering")
    held = [g for g in rec.got if g[0] == "/new_issue#held"][0]
    # the node holding it: its claim names the node (claimed_by = its application_name)
    who = sql(inst, f"SELECT claimed_by FROM alert_events WHERE id = '{held[1]}' "
              "AND claim IS NOT NULL")
    check(who in ("a", "b", "c"), f"the delivering node is known: {who!r}")
    proc = {"a": inst.proc, "b": procs["b"][0], "c": procs["c"][0]}.get(who, inst.proc)
    print(f"killing node {who!r} (pid {proc.pid}) while it delivers {held[1]}", flush=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = time.time()
    # its lease (2 x the 4 s timeout + 10 s after the claim) lapses, then any node sends it
    check(wait_for(lambda: any(g[0] == "/new_issue" and g[1] == held[1] for g in rec.got), 40),
          f"after SIGKILL of {who or 'the main node'} the event arrived (same id)")
    print(f"resent {time.time() - killed_at:.1f} s after the kill", flush=True)
    check(wait_for(lambda: sql(inst, f"SELECT status FROM alert_events WHERE id = '{held[1]}'")
                   == "delivered", 10), "recorded delivered")
    for name, (p, _) in procs.items():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=15)


def main():
    rec = Receiver()
    rec.start()
    with Instance("alerts", extra_env=dict(ENV, STACKSIFT_NODE_NAME="a")) as inst:
        rules = every_kind(inst, rec)
        cli_rules(inst, rec)
        receiver_down_then_up(inst, rec)
        given_up(inst, rec)
        nodes_and_kill(inst, rec, rules)
    rec.stop()
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
