#!/usr/bin/python3
"""test_db_outage - the database stops answering under ordinary traffic, and no request waits
for it (ctest reliability_db_freeze, reliability_db_kill, reliability_db_drop; labels
reliability;db).

    test_db_outage.py --mode freeze|kill|drop

The test starts a Postgres cluster of its own (tests/pg.sh, so that the outage stops no other
test) and a `stacksift serve` on it, uploads dSYMs (the fixture app with fresh UUIDs) and lets
the node see half of them (a report naming them is processed, so their symcaches are open and
their rows cached), then takes the database away for OUTAGE_S seconds:
  freeze  every process of the cluster gets SIGSTOP: sockets stay open, the kernel still
          accepts connections, nothing answers (a hung database host); SIGCONT after
  kill    every process of the cluster gets SIGKILL: connections are reset, new ones refused;
          started again after (crash recovery)
  drop    the server reaches Postgres through a TCP proxy on loopback that the test controls;
          the proxy stops relaying in both directions and relays nothing new (packets to the
          database dropped); it relays again after
Throughout, POSTERS threads post what devices post, one request after another: stacksift
JSON reports naming 1, 8 and 32 images (symcaches the node has open, has never seen, or that
do not exist), KSCrash and .ips reports from ../shared/corpus, and reads that need the
database (issues, readyz, metrics); and /healthz is polled every 50 ms. Pass:
  - every request is answered within BOUND_S: its normal answer, or 503 with Retry-After and
    a JSON error body; none goes unanswered;
  - /healthz answers 200 within HEALTHZ_BOUND_S every time;
  - once the database is back, a report POST and /readyz succeed within RECOVERY_S.
The bounds are what must hold on a loaded machine, each well below what the failure it
catches would take (a request that waited for the database to come back: the OUTAGE_S
outage); the measured figures (slowest answer, slowest /healthz, recovery time) are printed
as FIGURE lines for the benchmark's record.
  - every report answered 202 (before, during or after the outage) is in the database;
  - the circuit breaker opened (/metrics stacksift_db_breaker_opened_total) and the log says
    so, and says when it closed.
"""
import argparse
import glob
import json
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid as uuidlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import Instance, check, checks_done, exchange, figure  # noqa: E402
from test_upload_race import function_address, patch_uuid, upload_request  # noqa: E402

OUTAGE_S = 20
POSTERS = 6
# Every answer within half the outage: a request that waited for the database to come back
# would take up to OUTAGE_S (the server's own database deadline is STACKSIFT_DB_TIMEOUT_MS,
# 3 s; the slowest answer is printed).
BOUND_S = 10.0
# /healthz touches no database: half the 3 s database deadline catches any wait on it, with
# room for a loaded machine and the ASan/UBSan build (measured: a few ms; printed).
HEALTHZ_BOUND_S = 1.5
# Recovery must happen, and soon: 10 s is for a loaded machine (measured: ~1 s; printed).
RECOVERY_S = 10.0
N_SEEN = 16      # dSYMs a report named before the outage (open symcaches, cached rows)
N_UNSEEN = 16    # dSYMs uploaded but never used by this node


# ---- the cluster ----------------------------------------------------------------------------

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
    return stat[stat.rindex(")") + 2] in "TtZ"


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop_cluster(pgdir, sig):
    """Send `sig` (SIGSTOP or SIGKILL) to the postmaster first (no new backends from then on),
    then to every backend, scanning until none is left that did not get it; returns the pids.
    kill() returns before the target stops, so a busy postmaster can still fork a backend after
    a scan: each round waits until every pid it signalled is stopped or gone."""
    master = cluster_pids(pgdir)[0]
    done = set()
    new = [master]
    while new:
        signal_all(new, sig)
        done.update(new)
        deadline = time.monotonic() + 5
        while not all(is_stopped(p) for p in done) and time.monotonic() < deadline:
            time.sleep(0.001)
        try:
            new = [p for p in cluster_pids(pgdir) if p not in done]
        except (OSError, ValueError):
            new = []   # killed: postmaster.pid may be stale, its children are gone with it
    return sorted(done)


# ---- the proxy (drop mode) ------------------------------------------------------------------

class Proxy(threading.Thread):
    """A TCP relay on 127.0.0.1 to the database port. While `dropped` is set it reads and
    writes nothing and connects nothing new (packets to the database lost); cleared, it goes
    on where it stood, as TCP does after a network outage."""

    def __init__(self, upstream_port):
        super().__init__(daemon=True)
        self.upstream = upstream_port
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(256)
        self.port = self.lsock.getsockname()[1]
        self.dropped = threading.Event()
        self.stop = threading.Event()
        self.pairs = {}   # socket -> its other end

    def run(self):
        pending = []   # accepted while dropped: connected upstream once relaying again
        while not self.stop.is_set():
            if self.dropped.is_set():
                time.sleep(0.01)
                continue
            for c in pending:
                self.connect(c)
            pending = []
            socks = [self.lsock] + list(self.pairs)
            readable, _, _ = select.select(socks, [], [], 0.01)
            for s in readable:
                if self.dropped.is_set():
                    break
                if s is self.lsock:
                    c, _ = self.lsock.accept()
                    self.connect(c)
                    continue
                if s not in self.pairs:
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                other = self.pairs[s]
                if not data:
                    self.close(s)
                    continue
                try:
                    other.sendall(data)
                except OSError:
                    self.close(s)

    def connect(self, c):
        try:
            u = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
        except OSError:
            c.close()
            return
        self.pairs[c] = u
        self.pairs[u] = c

    def close(self, s):
        other = self.pairs.pop(s, None)
        if other is not None:
            self.pairs.pop(other, None)
            other.close()
        s.close()


# ---- what devices post ----------------------------------------------------------------------

def stack_report(app, images, func_off):
    """A stacksift JSON hang report naming `images` (uuid strings or None for a UUID that
    has no dSYM), one frame in each, in a main thread and a second one."""
    ims, frames = [], []
    for i, u in enumerate(images):
        base = 0x100000000 + i * 0x1000000
        ims.append({"uuid": u, "name": f"Lib{i}", "arch": "arm64", "load_address": hex(base),
                    "size": "0x100000", "in_app": i == 0})
        frames.append(hex(base + func_off))
    return json.dumps({"kind": "hang", "app": {"name": app, "version": "1"}, "images": ims,
                       "threads": [{"crashed": True, "frames": frames},
                                   {"frames": list(reversed(frames))}]}).encode()


def corpus_bodies(kind, pattern):
    """(label, content type, bytes) of the corpus reports of one kind (read from ../shared)."""
    source = os.environ["STACKSIFT_SOURCE_DIR"]
    d = os.path.join(source, "..", "shared", "corpus", "reports", kind)
    out = []
    for p in sorted(glob.glob(os.path.join(d, pattern))):
        with open(p, "rb") as f:
            out.append((f"{kind}/{os.path.basename(p)}", "application/json", f.read()))
    return out


def post_request(inst, body, ctype="application/json"):
    return (b"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Authorization: Bearer " + inst.tokens["ingest"].encode() +
            b"\r\nContent-Type: " + ctype.encode() +
            b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def get_request(inst, path, token="read"):
    auth = b"Authorization: Bearer " + inst.tokens[token].encode() + b"\r\n" if token else b""
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + auth + b"\r\n"


class Traffic:
    """The posters: each thread sends one request after another from the mix until stopped;
    every answer is kept as (label, t_sent, seconds, status, retry-after, id, error code)."""

    def __init__(self, inst, mix):
        self.inst = inst
        self.mix = mix
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.results = []
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(POSTERS)]

    def run(self, i):
        rnd = random.Random(i)
        while not self.stop.is_set():
            label, req = rnd.choice(self.mix)
            t = time.monotonic()
            try:
                resp, elapsed, _ = exchange(self.inst.port, req, timeout=15)
            except OSError:
                resp, elapsed = None, time.monotonic() - t
            rid = code = None
            if resp is not None:
                try:
                    body = json.loads(resp.body)
                    if isinstance(body, dict):
                        rid = body.get("id") if resp.status == 202 else None
                        err = body.get("error")
                        code = err.get("code") if isinstance(err, dict) else None
                except ValueError:
                    pass
            with self.lock:
                self.results.append((label, t, elapsed, resp.status if resp else None,
                                     resp.headers.get("retry-after") if resp else None, rid, code))
            time.sleep(0.02)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)


# The /healthz probe runs as a process of its own: timed in this one, a sample would include
# the waits of its thread for the interpreter lock the posters hold, not only the server's.
HEALTHZ_PROBE = r"""
import select, socket, sys, time
port = int(sys.argv[1])
req = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
while True:
    status = None
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        t0 = time.monotonic()
        s.sendall(req)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        elapsed = time.monotonic() - t0
        s.close()
        if data.startswith(b"HTTP/1.1 ") and data[9:12].isdigit():
            status = int(data[9:12])
    except OSError:
        elapsed = 10.0
    print(f"{elapsed:.6f} {status}", flush=True)
    if select.select([sys.stdin], [], [], 0.05)[0]:   # stdin closed: stop
        break
"""


class HealthzPoller:
    """GET /healthz every 50 ms on a new connection, from its own process; `samples` holds
    (seconds from the request sent to the close, status or None) once finish() returned."""

    def __init__(self, inst):
        self.port = inst.port
        self.samples = []
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", HEALTHZ_PROBE, str(self.port)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def finish(self):
        out, _ = self.proc.communicate(input="", timeout=30)   # stdin closed: it stops
        for line in out.splitlines():
            elapsed, status = line.split()
            self.samples.append((float(elapsed), None if status == "None" else int(status)))


def metric(inst, name):
    r = inst.request("GET", "/metrics", token=inst.tokens["read"])
    m = re.search(rf"^{re.escape(name)} (\S+)$", r.body.decode(), re.M)
    return float(m.group(1)) if m else None


# ---- the run --------------------------------------------------------------------------------

def upload_dsyms(inst, dwarf, n):
    """Upload `n` copies of the fixture dSYM, each with a fresh UUID; returns the UUIDs."""
    out = []
    for _ in range(n):
        u = uuidlib.uuid4()
        req = upload_request(inst, patch_uuid(dwarf, u.bytes), "FixtureApp")
        resp, _, _ = exchange(inst.port, req, timeout=60)
        check(resp is not None and resp.status in (200, 201), f"dSYM upload: {resp and resp.status}")
        out.append(str(u).upper())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("freeze", "kill", "drop"), required=True)
    mode = ap.parse_args().mode
    source = os.environ["STACKSIFT_SOURCE_DIR"]
    fixtures = os.environ["STACKSIFT_FIXTURES"]
    pg = os.path.join(source, "tests/pg.sh")
    pgdir = tempfile.mkdtemp(prefix=f"stacksift-{mode}-pg.")
    stopped = []
    proxy = None
    try:
        url = subprocess.run([pg, "start", pgdir], check=True, capture_output=True, text=True,
                             timeout=120).stdout.strip()
        direct_url = url
        if mode == "drop":
            pg_port = int(re.search(r":(\d+)/", url).group(1))
            proxy = Proxy(pg_port)
            proxy.start()
            url = url.replace(f":{pg_port}/", f":{proxy.port}/")
        os.environ["STACKSIFT_TEST_DATABASE_URL"] = url
        manifest = json.load(open(os.path.join(fixtures, "manifest.json")))
        fx = next(f for f in manifest["fixtures"] if f["name"] == "arm64-O2")
        dwarf = open(os.path.join(fixtures, fx["dwarf"]), "rb").read()
        _, faddr = function_address(os.path.join(fixtures, fx["binary"]))
        func_off = faddr - 0x100000000

        with Instance(f"db_{mode}") as inst:
            direct_db = direct_url.rsplit("/", 1)[0] + "/" + inst.dbname
            seen = upload_dsyms(inst, dwarf, N_SEEN)
            unseen = upload_dsyms(inst, dwarf, N_UNSEEN)
            r = inst.request("POST", "/api/v1/reports", body=stack_report("Warm", seen, func_off),
                             token=inst.tokens["ingest"], headers={"Content-Type": "application/json"})
            check(r.status == 202, f"report naming the seen dSYMs: {r.status} {r.body[:300]!r}")
            check(inst.wait_processed(30), "the warm-up report is processed")

            none = lambda k: [str(uuidlib.uuid4()).upper() for _ in range(k)]  # noqa: E731
            mix = []
            for n in (1, 8, 32):
                q = max(1, n // 4)
                variants = {
                    "seen": seen[:n] + none(n - len(seen[:n])),
                    "unseen": unseen[:n] + none(n - len(unseen[:n])),
                    "mixed": seen[:q] + unseen[:q] + none(n - 2 * q) if n > 1 else none(1),
                }
                for name, images in variants.items():
                    mix.append((f"POST json {n} images {name}",
                                post_request(inst, stack_report(f"Outage{n}{name}", images, func_off))))
            for label, ctype, body in corpus_bodies("kscrash-json", "kscrash-example-*.json")[:4]:
                mix.append((f"POST {label}", post_request(inst, body, ctype)))
            for label, ctype, body in corpus_bodies("ips", "*.ips")[:4]:
                mix.append((f"POST {label}", post_request(inst, body, "application/json")))
            for path in ("/api/v1/issues", "/api/v1/dsyms", "/readyz", "/metrics"):
                mix.append((f"GET {path}", get_request(inst, path, None if path == "/readyz" else "read")))

            poller = HealthzPoller(inst)
            poller.start()
            traffic = Traffic(inst, mix)
            traffic.start()
            time.sleep(1.0)   # ordinary traffic first

            t_out = time.monotonic()
            if mode == "drop":
                proxy.dropped.set()
            else:
                stopped = stop_cluster(pgdir, signal.SIGSTOP if mode == "freeze" else signal.SIGKILL)
            while time.monotonic() - t_out < OUTAGE_S:
                time.sleep(0.05)

            if mode == "freeze":
                signal_all(stopped, signal.SIGCONT)
            elif mode == "kill":
                subprocess.run([pg, "start", pgdir], check=True, capture_output=True, timeout=120)
            else:
                proxy.dropped.clear()
            stopped = []
            t_back = time.monotonic()

            # recovery: a report POST and /readyz both succeed
            recovered = None
            while time.monotonic() - t_back < 2 * RECOVERY_S:
                ok = True
                for req in (post_request(inst, stack_report("Recovery", none(1), func_off)),
                            get_request(inst, "/readyz", None)):
                    resp, _, _ = exchange(inst.port, req, timeout=5)
                    ok &= resp is not None and resp.status in (200, 202)
                if ok:
                    recovered = time.monotonic() - t_back
                    break
                time.sleep(0.02)
            time.sleep(2.0)   # ordinary traffic after
            traffic.finish()
            poller.finish()

            # ---- the verdict ----
            res = traffic.results
            during = [x for x in res if t_out <= x[1] < t_back]
            unanswered = [x for x in res if x[3] is None]
            slow = [x for x in res if x[2] >= BOUND_S]
            bad = [x for x in res if x[3] is not None and x[3] not in (200, 202, 503)]
            no_retry = [x for x in res if x[3] == 503 and not (x[4] or "").isdigit()]
            not_store = [x for x in res if x[3] == 503 and x[6] != "store_unavailable"]
            worst = max((x[2] for x in res), default=0.0)
            worst_during = max((x[2] for x in during), default=0.0)
            n503 = sum(1 for x in during if x[3] == 503)
            n202 = [x[5] for x in res if x[3] == 202 and x[5]]
            check(len(during) >= 20, f"only {len(during)} requests during the outage")
            check(not unanswered, f"{len(unanswered)} requests got no answer: "
                                  f"{[(x[0], round(x[2], 2)) for x in unanswered[:5]]}")
            check(not slow, f"{len(slow)} requests answered after {BOUND_S} s or more: "
                            f"{[(x[0], x[3], round(x[2], 2)) for x in slow[:5]]}")
            check(not bad, f"unexpected statuses: {[(x[0], x[3]) for x in bad[:5]]}")
            check(not no_retry, f"{len(no_retry)} 503s without Retry-After")
            check(not not_store, f"{len(not_store)} 503s not store_unavailable: "
                                 f"{[(x[0], x[6]) for x in not_store[:5]]}")
            check(n503 > 0, "no 503 during the outage")
            hz = poller.samples
            hz_slow = [s for s, st in hz if s >= HEALTHZ_BOUND_S or st != 200]
            hz_worst = max((s for s, _ in hz), default=0.0)
            check(len(hz) > 20, f"only {len(hz)} /healthz samples")
            check(not hz_slow, f"{len(hz_slow)}/{len(hz)} /healthz answers were not 200 within "
                               f"{HEALTHZ_BOUND_S * 1000:.0f} ms (slowest {hz_worst * 1000:.0f} ms)")
            check(recovered is not None and recovered <= RECOVERY_S,
                  f"recovery after the database came back: {recovered}")

            # every 202 is in the database (asked directly, not through the proxy)
            ids = sorted(set(n202))
            stored = 0
            for i in range(0, len(ids), 200):
                chunk = ",".join(f"'{x}'" for x in ids[i:i + 200])
                stored += int(inst.psql(direct_db, f"SELECT count(*) FROM reports WHERE id IN ({chunk})"))
            check(stored == len(ids), f"{len(ids) - stored} of {len(ids)} reports answered 202 are not stored")
            opened = metric(inst, "stacksift_db_breaker_opened_total")
            check(opened is not None and opened >= 1, f"breaker opened {opened} times")
            log = open(inst.log_path, "rb").read().decode("utf-8", "replace")
            check('"event":"db_breaker_opened"' in log and '"event":"db_breaker_closed"' in log,
                  "the log says when the breaker opened and closed")

            figure(f"{mode}: requests", f"{len(res)} sent, {len(during)} during the {OUTAGE_S} s "
                   f"outage ({n503} answered 503), {len(unanswered)} unanswered, "
                   f"{len(ids)} answered 202 and {stored} of them stored")
            figure(f"{mode}: slowest answer", f"{worst * 1000:.0f} ms overall, "
                   f"{worst_during * 1000:.0f} ms during the outage (bound {BOUND_S * 1000:.0f} ms)")
            figure(f"{mode}: /healthz", f"{len(hz) - len(hz_slow)}/{len(hz)} within "
                   f"{HEALTHZ_BOUND_S * 1000:.0f} ms, slowest {hz_worst * 1000:.1f} ms")
            figure(f"{mode}: recovery", f"{recovered * 1000:.0f} ms" if recovered is not None else "none")
            figure(f"{mode}: breaker", f"opened {opened:.0f} time(s)" if opened is not None else "?")
            by_label = {}
            for x in during:
                by_label.setdefault(x[0], []).append(x[2])
            for label in sorted(by_label):
                v = by_label[label]
                print(f"  {label}: {len(v)} during, slowest {max(v) * 1000:.0f} ms", flush=True)
            if unanswered or slow:
                print("server log:\n" + inst.tail_log(60), file=sys.stderr)
    finally:
        if stopped:
            signal_all(stopped, signal.SIGCONT)
        if proxy:
            proxy.stop.set()
        subprocess.run([pg, "stop", pgdir], timeout=60)
        subprocess.run(["rm", "-rf", pgdir])
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
