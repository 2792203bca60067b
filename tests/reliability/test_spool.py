#!/usr/bin/python3
"""test_spool - Sentry envelopes survive a Postgres outage and a kill -9 of the node (ctest
reliability_spool, labels reliability;db).

The test runs its own Postgres cluster (tests/pg.sh) so that stopping it stops no other test,
and a `stacksift serve` with STACKSIFT_SPOOL_MB=1 on it. Then:
  - with Postgres up, an event is committed directly (no spool file);
  - Postgres is stopped; 20 events are posted in order: each is answered 200 {"id"} (within
    the bound: spooling waits for no database), and the spool holds 20 entries;
  - larger events are posted until the spool is full: then 429 with Retry-After and a JSON
    error, and a refused event is not stored later;
  - the node is killed with SIGKILL while Postgres is still down: every accepted envelope is
    in the spool directory;
  - the node starts again while Postgres is still down: tokens and DSN keys are checked
    against the table it kept on disk (a wrong key 401, the right one spooled), requests that need the database 503, /readyz 503;
  - Postgres starts again: the same node stores every accepted event, in the order it was
    posted (received_at), none twice, the spool empties, and a spooled event is processed like
    any.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from reliability import Instance, check, checks_done, figure  # noqa: E402
from test_sentry import envelope, event_id, post_envelope, project_create  # noqa: E402

ANSWER_BOUND_S = 5.0


def message_event(eid, pad=0):
    return json.dumps({"event_id": eid, "level": "error", "message": "offline " + "x" * pad,
                       "exception": {"values": [{"type": "SpoolTest", "value": eid}]},
                       "threads": {"values": [{"id": 0, "crashed": True, "stacktrace": {
                           "frames": [{"function": "main"}, {"function": "crashHere"}]}}]}
                       }).encode()


def send(inst, pid, key, eid, pad=0):
    body = envelope([({"type": "event"}, message_event(eid, pad))], {"event_id": eid})
    t0 = time.monotonic()
    r = post_envelope(inst, pid, body, key)
    return r, time.monotonic() - t0


def spool_files(inst):
    d = os.path.join(inst.tmp, "data", "spool")
    return sorted(f for f in os.listdir(d) if f.endswith(".spool")) if os.path.isdir(d) else []


def metric(inst, name):
    r = inst.request("GET", "/metrics", token=inst.tokens["read"])
    m = re.search(rf"^{name} (\d+)$", r.body.decode(), re.M) if r.status == 200 else None
    return int(m.group(1)) if m else None


def restart(inst):
    """Start the (killed) node again on the same data directory and port."""
    inst.proc = subprocess.Popen([inst.bin, "serve"], env=inst.env(), stdout=inst.log,
                                 stderr=inst.log)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            if inst.request("GET", "/healthz").status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def main():
    source = os.environ["STACKSIFT_SOURCE_DIR"]
    pg = os.path.join(source, "tests/pg.sh")
    pgdir = tempfile.mkdtemp(prefix="stacksift-spool-pg.")
    try:
        url = subprocess.run([pg, "start", pgdir], check=True, capture_output=True, text=True,
                             timeout=120).stdout.strip()
        os.environ["STACKSIFT_TEST_DATABASE_URL"] = url
        with Instance("spool", extra_env={"STACKSIFT_SPOOL_MB": "1", "STACKSIFT_LOG_LEVEL": "info",
                                          "STACKSIFT_DB_TIMEOUT_MS": "1000"}) as inst:
            key, pid = project_create(inst, "offline")
            r, _ = send(inst, pid, key, event_id(1))
            check(r.status == 200 and r.json() == {"id": event_id(1)}, f"online: {r.status}")
            check(spool_files(inst) == [], "online: nothing spooled")

            subprocess.run([pg, "stop", pgdir], check=True, capture_output=True, timeout=60)
            accepted, worst = [], 0.0
            for k in range(2, 22):
                r, dt = send(inst, pid, key, event_id(k))
                worst = max(worst, dt)
                if check(r.status == 200 and r.json() == {"id": event_id(k)},
                         f"offline event {k}: {r.status} {r.body[:200]!r}"):
                    accepted.append(event_id(k))
            figure("spool_answer_worst_s", f"{worst:.3f}")
            check(worst < ANSWER_BOUND_S, f"offline answers within {ANSWER_BOUND_S} s: {worst:.2f}")
            check(len(spool_files(inst)) == 20, f"20 spool entries: {len(spool_files(inst))}")

            # fill the 1 MiB spool with ~100 kB events: 429 + Retry-After once full
            full = None
            for k in range(100, 130):
                r, _ = send(inst, pid, key, event_id(k), pad=100_000)
                if r.status == 200:
                    accepted.append(event_id(k))
                    continue
                full = (k, r)
                break
            ok = check(full is not None, "the spool filled up")
            if ok:
                k, r = full
                check(r.status == 429 and r.headers.get("retry-after", "").isdigit() and
                      r.json().get("error", {}).get("code") == "busy",
                      f"full spool: {r.status} {r.headers} {r.body[:200]!r}")
                refused = event_id(k)
            figure("spool_accepted_before_full", len(accepted))

            # kill -9 while Postgres is still down: every accepted envelope is on disk
            inst.proc.send_signal(signal.SIGKILL)
            inst.proc.wait()
            check(len(spool_files(inst)) == len(accepted),
                  f"spool after SIGKILL: {len(spool_files(inst))} entries, want {len(accepted)}")
            # the node starts again while Postgres is still down (STACKSIFT_OFFLINE_START):
            # tokens and DSN keys come from the table it kept on disk, requests that need the
            # database answer 503, the spool is kept, and it replays once Postgres is back
            t0 = time.monotonic()
            check(restart(inst), "node restarted after SIGKILL while Postgres is down")
            figure("offline_start_s", f"{time.monotonic() - t0:.3f}")
            with open(inst.log_path, "rb") as f:
                log = f.read()
            check(b"database_unreachable_at_start" in log and b"tokens_from_cache" in log,
                  "the log says it started without the database, with the cached token table")
            r = inst.request("GET", "/readyz")
            check(r.status == 503, f"/readyz while Postgres is down: 503 (got {r.status})")
            r = inst.request("GET", "/api/v1/issues", token=inst.tokens["read"])
            check(r.status == 503 and r.headers.get("retry-after", "").isdigit(),
                  f"a read token (from the cache) meets the missing database: 503 + Retry-After "
                  f"(got {r.status} {r.body[:200]!r})")
            r, _ = send(inst, pid, "0" * len(key), event_id(200))
            check(r.status == 401, f"an unknown DSN key: 401 (got {r.status})")
            r, _ = send(inst, pid, key, event_id(201))   # small: fits beside the big ones
            if check(r.status == 200 and r.json() == {"id": event_id(201)},
                     f"the project's key is known from the cache: its event is spooled, 200 "
                     f"(got {r.status} {r.body[:200]!r})"):
                accepted.append(event_id(201))
            check(len(spool_files(inst)) == len(accepted),
                  f"spool while offline: {len(spool_files(inst))} entries, want {len(accepted)}")
            subprocess.run([pg, "start", pgdir], check=True, capture_output=True, timeout=120)
            deadline = time.time() + 60
            while time.time() < deadline and spool_files(inst):
                time.sleep(0.2)
            check(spool_files(inst) == [], f"spool drained: {len(spool_files(inst))} left")
            deadline = time.time() + 10
            while time.time() < deadline and b"database_reachable" not in open(inst.log_path, "rb").read():
                time.sleep(0.1)
            check(b"database_reachable" in open(inst.log_path, "rb").read(),
                  "the node checked the schema once Postgres answered (log database_reachable)")
            rows = inst.psql(inst.db_url, "SELECT replace(id::text, '-', '') FROM reports "
                             "ORDER BY received_at, id").split()
            want = [event_id(1)] + accepted
            check(rows == want, f"stored in posting order, once each: {len(rows)} rows, "
                  f"first difference at {next((i for i, (a, b) in enumerate(zip(rows, want)) if a != b), None)}")
            if ok:
                check(refused not in rows, "the event refused with 429 was not stored")
            r = inst.request("GET", f"/api/v1/reports/{event_id(5)}", token=inst.tokens["read"])
            deadline = time.time() + 30
            while time.time() < deadline and (r.status != 200 or r.json()["status"] != "processed"):
                time.sleep(0.2)
                r = inst.request("GET", f"/api/v1/reports/{event_id(5)}", token=inst.tokens["read"])
            check(r.status == 200 and r.json()["status"] == "processed" and
                  r.json()["format"] == "sentry", f"a spooled event is processed: {r.status}")
            check(metric(inst, "stacksift_spool_replayed_total") == len(accepted),
                  f"replayed {metric(inst, 'stacksift_spool_replayed_total')}")
    finally:
        subprocess.run([pg, "stop", pgdir], capture_output=True, timeout=60)
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
