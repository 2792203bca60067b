#!/usr/bin/env python3
"""bench_sessions.py [--sessions N] [--batch N] [--threads N] [--devices N] [--min-rate R]

Release health at volume, end to end through a real `stacksift serve` and Postgres
(tests/web_instance.py: its own database in STACKSIFT_TEST_DATABASE_URL's cluster):
N complete sessions (one update each, as our own clients send them) of 3 releases, statuses
ok/exited/crashed/abnormal/errored in fixed shares, `errors` on some, DEVICES distinct
devices, in gzip batches of BATCH posted by THREADS client threads (keep-alive).

Measured: sessions/s from the first POST until GET /api/v1/releases shows every release
with exactly the expected sessions, crashed, abnormal, errored, users and crashed users; and
the CPU time spent meanwhile by the server and by the whole Postgres cluster (its postmaster
and every backend, live or exited: the cluster must run on this machine), per session. On a
shared machine the rate swings with the other load; the CPU microseconds a session costs
swing much less, so compare those between builds.
Prints one JSON line. Exits 1 when a count is not exact or the rate is under --min-rate.
"""
import argparse
import gzip
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from web_instance import Instance  # noqa: E402
from proc_cpu import cluster_cpu_s, proc_cpu_s  # noqa: E402

RELEASES = ["App@3.1+310", "App@3.2+320", "App@3.3+330"]
STATUSES = ["exited"] * 90 + ["crashed"] * 3 + ["abnormal"] * 2 + ["errored"] * 3 + ["ok"] * 2


def generate(n, devices, batch, seed=1):
    """The gzip bodies and the expected totals per release."""
    rng = random.Random(seed)
    now = time.time()
    exp = {r: {"sessions": 0, "crashed": 0, "abnormal": 0, "errored": 0, "users": set(),
               "crashed_users": set()} for r in RELEASES}
    bodies, cur = [], []
    for i in range(n):
        rel = RELEASES[i % 3]
        did = f"device-{rng.randrange(devices)}"
        st = rng.choice(STATUSES)
        errors = 1 if rng.random() < 0.05 else 0
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - rng.randrange(1, 4 * 3600)))
        cur.append({"sid": f"bench-{i}", "did": did, "release": rel, "environment": "production",
                    "started": started, "duration_s": rng.randrange(1, 600), "status": st,
                    "errors": errors})
        e = exp[rel]
        e["sessions"] += 1
        e["users"].add(did)
        if st == "crashed":
            e["crashed"] += 1
            e["crashed_users"].add(did)
        elif st == "abnormal":
            e["abnormal"] += 1
        elif st == "errored" or errors:
            e["errored"] += 1
        if len(cur) == batch:
            bodies.append(gzip.compress(json.dumps({"sessions": cur}).encode(), 6))
            cur = []
    if cur:
        bodies.append(gzip.compress(json.dumps({"sessions": cur}).encode(), 6))
    for e in exp.values():
        e["users"] = len(e["users"])
        e["crashed_users"] = len(e["crashed_users"])
    return bodies, exp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=500000)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--devices", type=int, default=100000)
    ap.add_argument("--min-rate", type=float, default=0)
    a = ap.parse_args()
    t0 = time.time()
    bodies, exp = generate(a.sessions, a.devices, a.batch)
    gen_s = time.time() - t0
    env = {"STACKSIFT_DB_TIMEOUT_MS": "30000", "STACKSIFT_WORKERS": "0",
           "STACKSIFT_MAX_REPORT_BYTES": "16M"}
    with Instance("bench_sessions", extra_env=env) as inst:
        tok = inst.tokens["ingest"]
        datadir = inst.psql(inst.db_url, "SHOW data_directory").strip()
        with open(os.path.join(datadir, "postmaster.pid")) as f:
            postmaster = int(f.readline())
        pg_cpu0, srv_cpu0 = cluster_cpu_s(postmaster), proc_cpu_s(inst.proc.pid)
        queue = list(range(len(bodies)))
        lock = threading.Lock()
        bad = []

        def client():
            conn = http.client.HTTPConnection("127.0.0.1", inst.port, timeout=300)
            while True:
                with lock:
                    if not queue:
                        break
                    i = queue.pop(0)
                conn.request("POST", "/api/v1/sessions", body=bodies[i],
                             headers={"Authorization": f"Bearer {tok}",
                                      "Content-Type": "application/json",
                                      "Content-Encoding": "gzip"})
                r = conn.getresponse()
                data = r.read()
                if r.status != 202:
                    bad.append((r.status, data[:200]))
            conn.close()

        start = time.time()
        threads = [threading.Thread(target=client) for _ in range(a.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        posted = time.time()
        exact = False
        while time.time() - posted < 120 and not bad:
            r = inst.request("GET", "/api/v1/releases", token=inst.tokens["read"])
            rows = {x["release"]: x for x in r.json()["releases"]} if r.status == 200 else {}
            got = {rel: {k: rows.get(rel, {}).get(k) for k in exp[rel]} for rel in exp}
            if got == exp:
                exact = True
                break
            time.sleep(0.05)
        end = time.time()
        pg_cpu, srv_cpu = cluster_cpu_s(postmaster) - pg_cpu0, proc_cpu_s(inst.proc.pid) - srv_cpu0
        rss = 0
        try:
            with open(f"/proc/{inst.proc.pid}/status") as f:
                rss = next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024
        except (OSError, StopIteration):
            pass
        sizes = inst.psql(inst.db_url, "SELECT pg_total_relation_size('session_states'), "
                          "pg_total_relation_size('session_hours'), "
                          "pg_total_relation_size('release_users')").strip().split("|")
    rate = a.sessions / (end - start)
    out = {"bench": "sessions", "sessions": a.sessions, "batch": a.batch, "threads": a.threads,
           "devices": a.devices, "sessions_per_s": round(rate), "post_s": round(posted - start, 2),
           "visible_s": round(end - start, 2), "exact": exact, "errors": bad[:3],
           "rss_peak_mb": round(rss, 1),
           "cpu_us_per_session": {"server": round(srv_cpu * 1e6 / a.sessions, 1),
                                  "postgres": round(pg_cpu * 1e6 / a.sessions, 1)},
           "load_avg": round(os.getloadavg()[0], 1), "generate_s": round(gen_s, 1),
           "bytes_per_session": {"states": round(int(sizes[0]) / a.sessions, 1),
                                 "hours_total": int(sizes[1]),
                                 "users_per_device": round(int(sizes[2]) / max(1, sum(
                                     e["users"] for e in exp.values())), 1)}}
    print(json.dumps(out))
    return 0 if exact and rate >= a.min_rate else 1


if __name__ == "__main__":
    sys.exit(main())
