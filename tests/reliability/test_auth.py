#!/usr/bin/python3
"""test_auth - tokens and the answers' headers (ctest reliability_auth,
labels reliability;db).

Two `stacksift serve` nodes share one database (node B also runs with
STACKSIFT_METRICS_PUBLIC=1 and a STACKSIFT_METRICS_LISTEN loopback listener):
  - `stacksift token create` makes a token both nodes accept within CHANGE_BOUND_S, `token
    list` shows it (id, scopes, name; never the secret), `token revoke ID` makes both refuse
    it within CHANGE_BOUND_S (the nodes reload tokens every 500 ms: measured well under 1 s,
    printed; the bound is for a loaded machine, and catches a node that never reloads);
  - an unknown token id and a wrong secret get the same status and the same message, and the
    same time (medians of alternating requests within 0.5 ms, or a fifth of the faster median
    on a loaded machine, of each other: a database lookup on one path only would show);
  - GET /metrics: 401 without a token and 403 with an ingest token on node A, 200 with a read
    token; 200 without a token on node B and on B's metrics listener (which serves nothing
    else);
  - X-Content-Type-Options: nosniff on answers of every kind; a raw report is
    text/plain; charset=utf-8 with Content-Disposition: attachment.
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import Instance, check, checks_done, exchange, figure  # noqa: E402
from web_instance import free_port  # noqa: E402


def get(port, path, token=None):
    h = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if token:
        h += f"Authorization: Bearer {token}\r\n"
    resp, elapsed, _ = exchange(port, (h + "\r\n").encode(), timeout=10)
    return resp, elapsed


def cli(inst, *args):
    return subprocess.run([inst.bin, "token", *args], env=inst.env(), capture_output=True,
                          text=True, timeout=30)


CHANGE_BOUND_S = 5.0


def until(pred, limit_s):
    """Seconds until pred() holds (polled every 20 ms), or None after limit_s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if pred():
            return time.monotonic() - t0
        time.sleep(0.02)
    return None


def main():
    metrics_port = free_port()
    with Instance("auth") as a:
        b_port = free_port()
        env_b = a.env()
        env_b.update({"STACKSIFT_LISTEN": f"127.0.0.1:{b_port}",
                      "STACKSIFT_DATA_DIR": os.path.join(a.tmp, "data-b"),
                      "STACKSIFT_NODE_NAME": "node-b", "STACKSIFT_WORKERS": "0",
                      "STACKSIFT_METRICS_PUBLIC": "1",
                      "STACKSIFT_METRICS_LISTEN": f"127.0.0.1:{metrics_port}"})
        b_log = open(os.path.join(a.tmp, "serve-b.log"), "ab")
        b = subprocess.Popen([a.bin, "serve"], env=env_b, stdout=b_log, stderr=b_log)
        try:
            def b_ready():
                if b.poll() is not None:
                    return True
                try:
                    r, _ = get(b_port, "/healthz")
                    return r is not None and r.status == 200
                except OSError:
                    return False
            ready = until(b_ready, 20)
            check(ready is not None and b.poll() is None, "node B did not start")
            ports = {"A": a.port, "B": b_port}

            # a new token: accepted by both nodes within CHANGE_BOUND_S
            out = cli(a, "create", "--name", "revoke-me", "--scopes", "read")
            check(out.returncode == 0, f"token create: {out.stderr}")
            tok = out.stdout.strip().splitlines()[-1]
            tok_id = tok[3:15]
            worst = 0.0
            for n, p in ports.items():
                t = until(lambda: get(p, "/api/v1/issues", tok)[0].status == 200,
                          2 * CHANGE_BOUND_S)
                check(t is not None and t < CHANGE_BOUND_S,
                      f"node {n} accepted the new token after {t} s")
                worst = max(worst, t or 0.0)
            figure("new token accepted on both nodes after (s)", f"{worst:.2f}")
            out = cli(a, "list")
            line = [ln for ln in out.stdout.splitlines() if ln.startswith(tok_id)]
            check(out.returncode == 0 and len(line) == 1 and "revoke-me" in line[0] and
                  "read" in line[0] and tok[16:] not in out.stdout,
                  f"token list: {out.stdout!r} {out.stderr!r}")

            # revocation: refused by both nodes within CHANGE_BOUND_S
            out = cli(a, "revoke", tok_id)
            t_revoke = time.monotonic()
            check(out.returncode == 0, f"token revoke: {out.stdout} {out.stderr}")
            worst = 0.0
            for n, p in ports.items():
                t = until(lambda: get(p, "/api/v1/issues", tok)[0].status == 401,
                          2 * CHANGE_BOUND_S)
                took = time.monotonic() - t_revoke
                check(t is not None and took < CHANGE_BOUND_S,
                      f"node {n} refused the revoked token after {took:.2f} s")
                worst = max(worst, took)
            figure("revocation effective on both nodes after (s)", f"{worst:.2f}")
            out = cli(a, "revoke", tok_id)
            check(out.returncode != 0 and "no active token" in out.stderr,
                  f"revoking twice: {out.returncode} {out.stderr!r}")
            out = cli(a, "list")
            check(any(ln.startswith(tok_id) and re.search(r"\d{4}-\d\d-\d\dT", ln.split()[3] if
                      len(ln.split()) > 3 else "") for ln in out.stdout.splitlines()),
                  f"list shows the revocation time: {out.stdout!r}")

            # unknown id and wrong secret: same answer, same time
            good = a.tokens["read"]
            wrong_secret = good[:16] + ("0" if good[16] != "0" else "1") + good[17:]
            unknown_id = "ss_" + ("f" * 12 if good[3:15] != "f" * 12 else "e" * 12) + good[15:]
            answers = {}
            times = {"unknown": [], "wrong": []}
            for i in range(300):
                for kind, tk in (("unknown", unknown_id), ("wrong", wrong_secret)):
                    resp, elapsed = get(a.port, "/api/v1/issues", tk)
                    times[kind].append(elapsed)
                    answers[kind] = (resp.status, resp.body)
            check(answers["unknown"] == answers["wrong"],
                  f"unknown id and wrong secret differ: {answers}")
            check(answers["unknown"][0] == 401, f"status {answers['unknown'][0]}")
            med = {k: statistics.median(v) * 1000 for k, v in times.items()}
            allowed = max(0.5, 0.2 * min(med.values()))
            check(abs(med["unknown"] - med["wrong"]) < allowed,
                  f"median times differ by more than {allowed:.2f} ms: {med}")
            figure("median answer, unknown id vs wrong secret (ms)",
                   f"{med['unknown']:.3f} vs {med['wrong']:.3f}")

            # /metrics
            check(get(a.port, "/metrics")[0].status == 401, "A: /metrics without a token")
            check(get(a.port, "/metrics", a.tokens["ingest"])[0].status == 403,
                  "A: /metrics with an ingest token")
            r, _ = get(a.port, "/metrics", a.tokens["read"])
            check(r.status == 200 and b"stacksift_http_requests_total" in r.body,
                  f"A: /metrics with a read token: {r.status}")
            r, _ = get(b_port, "/metrics")
            check(r.status == 200, f"B (STACKSIFT_METRICS_PUBLIC=1): /metrics {r.status}")
            r, _ = get(metrics_port, "/metrics")
            check(r is not None and r.status == 200 and b"stacksift_http_requests_total" in r.body,
                  f"B's metrics listener: {r.status if r else None}")
            r, _ = get(metrics_port, "/api/v1/issues", a.tokens["read"])
            check(r is not None and r.status == 404, "the metrics listener serves /metrics only")

            # headers
            rep = {"kind": "hang", "app": {"name": "Raw", "version": "1"}, "images": [],
                   "threads": [{"frames": ["0x1000"]}]}
            r = a.request("POST", "/api/v1/reports", body=rep, token=a.tokens["ingest"])
            check(r.status == 202, f"report: {r.status}")
            rid = r.json().get("id", "") if r.status == 202 else ""
            raw, _ = get(a.port, f"/api/v1/reports/{rid}/raw", a.tokens["read"])
            check(raw.status == 200 and
                  raw.headers.get("content-type") == "text/plain; charset=utf-8" and
                  raw.headers.get("content-disposition", "").startswith("attachment"),
                  f"raw report headers: {raw.status} {raw.headers}")
            for path, tk in (("/healthz", None), ("/", None), ("/ui/app.js", None),
                             ("/api/v1/issues", a.tokens["read"]), ("/nope", None),
                             (f"/api/v1/reports/{rid}/raw", a.tokens["read"]),
                             ("/metrics", a.tokens["read"])):
                r, _ = get(a.port, path, tk)
                check(r is not None and r.headers.get("x-content-type-options") == "nosniff",
                      f"{path}: no nosniff ({r.status if r else None})")
        finally:
            b.send_signal(signal.SIGTERM)
            try:
                b.wait(timeout=15)
            except subprocess.TimeoutExpired:
                b.kill()
            b_log.close()
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
