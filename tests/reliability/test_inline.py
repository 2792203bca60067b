#!/usr/bin/python3
"""test_inline - small crash reports run on the HTTP thread that read them, and nothing that
waits for the database does (ctest reliability_inline, labels reliability;db).

A `stacksift serve` with ONE libmicrohttpd thread (STACKSIFT_HTTP_THREADS=1) on a Postgres
cluster of its own (tests/pg.sh), so that anything that held that thread would hold /healthz
with it. Then:
  - Postgres up: a small Apple text report, the same gzip'd, and a small gzip'd Sentry
    envelope with an event and a session item are handled inline
    (stacksift_ingest_inline_total counts each); a report over 64 KiB, and the same gzip'd to
    a few kB (its decoded size read from the gzip trailer), are not. Each is stored (202 /
    200), the envelope's session recorded. A small gzip body whose trailer says less than it
    decodes to is refused (400) one byte past what it said.
  - Postgres frozen (SIGSTOP): a small report (inline, its connection waiting suspended for
    the group commit) and a small envelope with a session item (its sessions need Postgres:
    handed from the HTTP thread to a handler thread) are posted; while they wait, /healthz
    answers every time within HEALTHZ_BOUND_S, far below the 3 s database deadline that a
    wait on the one HTTP thread would add. The report is answered 503 with Retry-After, the
    envelope 200 (spooled) within ANSWER_BOUND_S.
  - Postgres thawed (SIGCONT): the spooled envelope's event is stored.
"""
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid as uuidlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
from reliability import Instance, check, checks_done, figure  # noqa: E402
from test_db_outage import stop_cluster, signal_all  # noqa: E402
from test_sentry import envelope, post_envelope  # noqa: E402
from web_instance import project_create  # noqa: E402

# /healthz touches no database: the 3 s database deadline is what a wait on the HTTP thread
# would add to it; a third of it leaves room for a loaded machine and the ASan/UBSan build.
HEALTHZ_BOUND_S = 1.0
ANSWER_BOUND_S = 10.0   # the 3 s deadline, then the spool's write: with room
INLINE_MAX = 64 << 10


def corpus(name):
    source = os.environ["STACKSIFT_SOURCE_DIR"]
    with open(os.path.join(source, "..", "shared", "corpus", "reports", name), "rb") as f:
        return f.read()


def metric(inst, name):
    r = inst.request("GET", "/metrics", token=inst.tokens["read"])
    m = re.search(rf"^{re.escape(name)} (\S+)$", r.body.decode(), re.M)
    return float(m.group(1)) if m else None


def post_report(inst, body, gz=False):
    headers = {"Content-Type": "text/plain"}
    if gz:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return inst.request("POST", "/api/v1/reports", body, headers=headers,
                        token=inst.tokens["ingest"])


def event_and_session(eid, sid, release):
    event = json.dumps({"event_id": eid, "level": "error", "platform": "cocoa",
                        "release": release, "message": "inline " + eid}).encode()
    session = json.dumps({"sid": sid, "init": True, "started": "2026-11-28T10:00:00Z",
                          "status": "ok", "attrs": {"release": release}}).encode()
    return envelope([({"type": "event"}, event), ({"type": "session"}, session)],
                    {"event_id": eid})


def inline_delta(inst, what, fn, expect_inline):
    """Run fn(); check that it ran inline exactly when expected; its result."""
    before = metric(inst, "stacksift_ingest_inline_total")
    out = fn()
    after = metric(inst, "stacksift_ingest_inline_total")
    check(before is not None and after is not None, f"{what}: stacksift_ingest_inline_total "
          "in /metrics")
    if before is not None and after is not None:
        want = 1 if expect_inline else 0
        check(after - before == want, f"{what}: inline count +{after - before:.0f}, want +{want}")
    return out


def main():
    source = os.environ["STACKSIFT_SOURCE_DIR"]
    pg = os.path.join(source, "tests/pg.sh")
    pgdir = tempfile.mkdtemp(prefix="stacksift-inline-pg.")
    stopped = []
    try:
        url = subprocess.run([pg, "start", pgdir], check=True, capture_output=True, text=True,
                             timeout=120).stdout.strip()
        os.environ["STACKSIFT_TEST_DATABASE_URL"] = url
        env = {"STACKSIFT_HTTP_THREADS": "1", "STACKSIFT_DB_TIMEOUT_MS": "3000"}
        with Instance("inline", extra_env=env) as inst:
            key, pid = project_create(inst, "inline")
            small = corpus("apple-text/acrp-spaces-1.crash")
            large = corpus("apple-text/ips2crashlog-2.crash")
            check(len(small) <= INLINE_MAX < len(large), "corpus sizes around the bound")

            # ---- Postgres up: which ones run inline ----------------------------------------
            for what, body, gz, inline in (("small report", small, False, True),
                                           ("small report gzip'd", small, True, True),
                                           ("large report", large, False, False),
                                           ("large report gzip'd", large, True, False)):
                r = inline_delta(inst, what, lambda: post_report(inst, body, gz), inline)
                check(r.status == 202, f"{what}: {r.status} {r.body[:200]!r}")
            # a small gzip body whose trailer lies (4 MiB of zeros said to be 100 bytes): its
            # decoding stops one byte past what it said, 400, nothing stored
            bomb = bytearray(gzip.compress(b"\0" * (4 << 20)))
            bomb[-4:] = (100).to_bytes(4, "little")
            r = inline_delta(inst, "gzip body with a lying trailer", lambda: inst.request(
                "POST", "/api/v1/reports", bytes(bomb), headers={
                    "Content-Type": "text/plain", "Content-Encoding": "gzip"},
                token=inst.tokens["ingest"]), True)
            check(r.status == 400 and b"decodes to more than the 100 bytes its trailer gives"
                  in r.body, f"gzip body with a lying trailer: {r.status} {r.body[:200]!r}")
            eid = uuidlib.uuid4().hex
            sid = str(uuidlib.uuid4())
            r = inline_delta(inst, "envelope with a session", lambda: post_envelope(
                inst, pid, event_and_session(eid, sid, "inline@1"), key), True)
            check(r.status == 200 and r.json().get("id") == eid,
                  f"envelope with a session: {r.status} {r.body[:200]!r}")
            n = inst.psql(inst.db_url, "SELECT coalesce(sum(h.sessions), 0) FROM session_hours h "
                          f"JOIN release_envs r ON r.id = h.renv WHERE r.project_id = {pid} "
                          "AND r.release = 'inline@1'")
            check(n.strip() == "1", f"the envelope's session recorded: {n.strip()}")

            # ---- Postgres frozen: the one HTTP thread stays free ---------------------------
            answers = {}

            def post(name, fn):
                t0 = time.monotonic()
                try:
                    r = fn()
                    answers[name] = (r.status, r.headers.get("retry-after"), time.monotonic() - t0, r)
                except OSError as e:
                    answers[name] = (None, None, time.monotonic() - t0, e)

            eid2 = uuidlib.uuid4().hex
            stopped = stop_cluster(pgdir, signal.SIGSTOP)
            posters = [
                threading.Thread(target=post, args=("report", lambda: post_report(inst, small))),
                threading.Thread(target=post, args=("envelope", lambda: post_envelope(
                    inst, pid, event_and_session(eid2, str(uuidlib.uuid4()), "inline@2"), key))),
            ]
            for t in posters:
                t.start()
            time.sleep(0.3)   # both are in: the report with the commit, the envelope's sessions
            hz = []
            while any(t.is_alive() for t in posters) and len(hz) < 40:
                t0 = time.monotonic()
                r = inst.request("GET", "/healthz", timeout=10)
                hz.append((time.monotonic() - t0, r.status))
                time.sleep(0.05)
            for t in posters:
                t.join(30)
            check(len(hz) >= 5, f"/healthz read {len(hz)} times while the posts waited")
            slow = [s for s in hz if s[0] > HEALTHZ_BOUND_S or s[1] != 200]
            check(not slow, f"/healthz while the database is frozen: {slow} (bound "
                  f"{HEALTHZ_BOUND_S} s)")
            figure("inline: /healthz while posts wait for a frozen database, slowest ms",
                   f"{max(s[0] for s in hz) * 1e3:.1f} ({len(hz)} reads)" if hz else "none")
            st, ra, secs, _ = answers.get("report", (None, None, 0, None))
            check(st == 503 and ra is not None and secs <= ANSWER_BOUND_S,
                  f"report while frozen: {st} Retry-After {ra} in {secs:.2f} s")
            st, _, secs, resp = answers.get("envelope", (None, None, 0, None))
            check(st == 200 and secs <= ANSWER_BOUND_S,
                  f"envelope while frozen: {st} in {secs:.2f} s (spooled)")

            # ---- thawed: the spooled envelope is stored -------------------------------------
            signal_all(stopped, signal.SIGCONT)
            stopped = []
            stored = "0"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    stored = inst.psql(inst.db_url, "SELECT count(*) FROM reports WHERE id = "
                                       f"'{uuidlib.UUID(eid2)}'").strip()
                except subprocess.SubprocessError:
                    stored = "?"
                if stored == "1":
                    break
                time.sleep(0.2)
            check(stored == "1", f"the spooled envelope's event stored after the thaw: {stored}")
    finally:
        if stopped:
            signal_all(stopped, signal.SIGCONT)
        subprocess.run([pg, "stop", pgdir], capture_output=True, timeout=60)
        shutil.rmtree(pgdir, ignore_errors=True)
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
