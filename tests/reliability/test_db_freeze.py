#!/usr/bin/python3
"""test_db_freeze - a hung database fails fast and the server recovers (issue 16, point 4;
ctest reliability_db_freeze, labels reliability;db).

The test starts a Postgres cluster of its own (tests/pg.sh, so that freezing it stops no
other test), a `stacksift serve` on it, and then stops every process of that cluster with
SIGSTOP for FREEZE_S seconds: the sockets stay open, the kernel still accepts connections,
nothing answers, as with a hung database host. Meanwhile:
  - /healthz, polled every 50 ms, answers 200 within 100 ms every time;
  - waves of requests that need the database (GET /api/v1/issues, GET /api/v1/dsyms,
    GET /readyz, POST /api/v1/reports) each answer 503 with Retry-After and a JSON error
    body within 5 s, including requests that were sent before the freeze began and requests
    that arrive while every pooled connection is stuck; GET /metrics answers within 5 s;
  - after SIGCONT the same requests succeed again within 10 s, and a report posted then is
    processed.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import Instance, check, checks_done, exchange, figure  # noqa: E402

FREEZE_S = 12
BOUND_503_S = 5.0
HEALTHZ_BOUND_S = 0.100


def cluster_pids(pgdir):
    """The postmaster of the cluster in pgdir and all its children."""
    with open(os.path.join(pgdir, "data", "postmaster.pid")) as f:
        master = int(f.readline())
    pids = [master]
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == master:
            pids.append(int(name))
    return pids


def is_stopped(pid):
    """True once the kernel has really stopped `pid` (state T), or it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "Tt"


def freeze(pgdir):
    """SIGSTOP the postmaster (no new backends from then on), then every backend, scanning
    until no unstopped one is left; returns the pids for SIGCONT. kill() returns before the
    target stops, so a busy postmaster can still fork a backend after a scan: each round
    waits until every pid it signalled is in state T before it scans again."""
    master = cluster_pids(pgdir)[0]
    stopped = set()
    new = [master]
    while new:
        signal_all(new, signal.SIGSTOP)
        stopped.update(new)
        deadline = time.monotonic() + 5
        while not all(is_stopped(p) for p in stopped) and time.monotonic() < deadline:
            time.sleep(0.001)
        new = [p for p in cluster_pids(pgdir) if p not in stopped]
    return sorted(stopped)


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def db_request(inst, kind):
    """(label, raw request) of one request that needs the database."""
    tok = inst.tokens
    if kind == "issues":
        return "GET /api/v1/issues", b"GET /api/v1/issues HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" \
            b"Authorization: Bearer " + tok["read"].encode() + b"\r\n\r\n"
    if kind == "dsyms":
        return "GET /api/v1/dsyms", b"GET /api/v1/dsyms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" \
            b"Authorization: Bearer " + tok["read"].encode() + b"\r\n\r\n"
    if kind == "readyz":
        return "GET /readyz", b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    if kind == "metrics":
        return "GET /metrics", b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" \
            b"Authorization: Bearer " + tok["read"].encode() + b"\r\n\r\n"
    body = json.dumps({"kind": "hang", "app": {"name": "Freeze", "version": "1"},
                       "images": [], "threads": [{"frames": ["0x1000"]}]}).encode()
    return "POST /api/v1/reports", b"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" \
        b"Authorization: Bearer " + tok["ingest"].encode() + b"\r\nContent-Type: application/json\r\n" \
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


KINDS = ["issues", "dsyms", "readyz", "reports", "issues", "reports", "dsyms", "issues", "metrics"]


def wave(inst, results, tag):
    """All KINDS at once, each on its own connection; appends (tag, label, resp, seconds)."""
    def one(kind):
        label, req = db_request(inst, kind)
        try:
            resp, elapsed, _ = exchange(inst.port, req, timeout=30)
        except OSError:
            resp, elapsed = None, 30.0
        results.append((tag, label, resp, elapsed))
    threads = [threading.Thread(target=one, args=(k,)) for k in KINDS]
    for t in threads:
        t.start()
    return threads


class HealthzPoller(threading.Thread):
    def __init__(self, inst):
        super().__init__(daemon=True)
        self.inst = inst
        self.stop = threading.Event()
        self.samples = []   # (seconds, status)

    def run(self):
        req = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        while not self.stop.is_set():
            try:
                resp, elapsed, _ = exchange(self.inst.port, req, timeout=10)
                self.samples.append((elapsed, resp.status if resp else None))
            except OSError:
                self.samples.append((10.0, None))
            self.stop.wait(0.05)


def sample_report(body_app):
    return {"kind": "hang", "app": {"name": body_app, "version": "1"}, "images": [],
            "threads": [{"frames": ["0x1000"]}]}


def main():
    source = os.environ["STACKSIFT_SOURCE_DIR"]
    pgdir = tempfile.mkdtemp(prefix="stacksift-freeze-pg.")
    pids = []
    try:
        url = subprocess.run([os.path.join(source, "tests/pg.sh"), "start", pgdir], check=True,
                             capture_output=True, text=True, timeout=120).stdout.strip()
        os.environ["STACKSIFT_TEST_DATABASE_URL"] = url
        with Instance("db_freeze") as inst:
            r = inst.request("POST", "/api/v1/reports", body=sample_report("Before"),
                             token=inst.tokens["ingest"])
            check(r.status == 202, f"report before the freeze: {r.status}")
            poller = HealthzPoller(inst)
            poller.start()
            results = []
            threads = []
            # a wave in flight as the database stops
            threads += wave(inst, results, "at freeze")
            pids = freeze(pgdir)
            t_freeze = time.monotonic()
            for at in (1.0, 4.0, 7.5):
                while time.monotonic() - t_freeze < at:
                    time.sleep(0.05)
                threads += wave(inst, results, f"freeze+{at:.0f}s")
            while time.monotonic() - t_freeze < FREEZE_S:
                time.sleep(0.05)
            for t in threads:
                t.join(30)
            frozen_healthz = list(poller.samples)
            signal_all(pids, signal.SIGCONT)
            t_thaw = time.monotonic()
            pids = []

            answered_503 = 0
            worst_503 = 0.0
            for tag, label, resp, elapsed in results:
                what = f"{label} ({tag})"
                status = resp.status if resp else None
                check(resp is not None and elapsed < BOUND_503_S,
                      f"{what}: answered {status} after {elapsed:.2f} s")
                if label == "GET /metrics":
                    check(status in (200, 503), f"{what}: status {status}")
                    continue
                if tag == "at freeze" and status in (200, 202):
                    continue   # done before the database stopped
                ok = check(status == 503, f"{what}: status {status}")
                if resp is not None and status == 503:
                    ok &= check(resp.headers.get("retry-after", "").isdigit(),
                                f"{what}: Retry-After {resp.headers.get('retry-after')!r}")
                    try:
                        err = json.loads(resp.body)["error"]
                        ok &= check(err["code"] == "store_unavailable", f"{what}: {err}")
                    except (ValueError, KeyError, TypeError):
                        ok &= check(False, f"{what}: body {resp.body[:200]!r}")
                    worst_503 = max(worst_503, elapsed)
                answered_503 += ok
            n_db = sum(1 for t, label, _, _ in results if label != "GET /metrics" and t != "at freeze")
            figure("503 + Retry-After under a frozen database",
                   f"{answered_503} requests, slowest {worst_503 * 1000:.0f} ms "
                   f"(bound {BOUND_503_S:.0f} s; {n_db} sent during the freeze)")
            slow = [s for s, st in frozen_healthz if s >= HEALTHZ_BOUND_S or st != 200]
            worst_h = max((s for s, _ in frozen_healthz), default=0.0)
            check(len(frozen_healthz) > 50, f"only {len(frozen_healthz)} /healthz samples")
            check(not slow, f"{len(slow)}/{len(frozen_healthz)} /healthz answers were not 200 "
                            f"within 100 ms (slowest {worst_h * 1000:.0f} ms)")
            figure("/healthz during the freeze",
                   f"{len(frozen_healthz) - len(slow)}/{len(frozen_healthz)} within 100 ms, "
                   f"slowest {worst_h * 1000:.1f} ms")

            # recovery
            recovered = None
            while time.monotonic() - t_thaw < 10:
                ok = True
                for kind in ("issues", "readyz", "reports"):
                    _, req = db_request(inst, kind)
                    resp, _, _ = exchange(inst.port, req, timeout=5)
                    ok &= resp is not None and resp.status in (200, 202)
                if ok:
                    recovered = time.monotonic() - t_thaw
                    break
                time.sleep(0.2)
            check(recovered is not None, "no recovery within 10 s of SIGCONT")
            figure("recovery after SIGCONT (s)", f"{recovered:.2f}" if recovered else "none")
            r = inst.request("POST", "/api/v1/reports", body=sample_report("After"),
                             token=inst.tokens["ingest"])
            check(r.status == 202, f"report after the freeze: {r.status}")
            check(inst.wait_processed(30), "reports are processed again after the freeze")
            poller.stop.set()
            poller.join()
            if any(resp is None for _, _, resp, _ in results):
                print("server log (requests without an answer):\n" + inst.tail_log(60),
                      file=sys.stderr)
    finally:
        if pids:
            signal_all(pids, signal.SIGCONT)
        subprocess.run([os.path.join(source, "tests/pg.sh"), "stop", pgdir], timeout=60)
        subprocess.run(["rm", "-rf", pgdir])
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
