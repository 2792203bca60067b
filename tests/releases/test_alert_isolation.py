"""test_alert_isolation - a webhook that never answers delays no other. Two new_issue rules
through the real server and Postgres: one to a black hole on loopback (accepts, reads the
request, never answers), one to a healthy receiver; STACKSIFT_ALERT_TIMEOUT_MS is 30 s and
twelve new issues come one a second. Checks:
  - every event reaches the healthy receiver within 5 s of its created_at (a bound for a
    loaded machine, far below the black hole's 30 s: a delivery thread that waited on the
    black hole would hold them ~30 s); the figures are printed;
  - the black hole holds at most its own slots: before the first of its requests times out,
    it has 2 to 4 connections (deliveries side by side, at most 4 per URL), not one per event;
  - the retry delay counts from the failed attempt: a black-hole event that timed out is due
    again no sooner than 30 s (its attempt) + 5 s (STACKSIFT_ALERT_RETRY_MS) after its
    request arrived, not 5 s after it was claimed;
  - SIGTERM with black-hole deliveries in flight: the server exits within its shutdown time
    (2 s here) rather than the 30 s timeout, and releases them: pending, no claim left, no
    attempt counted (attempts counted = requests the black hole got - deliveries released).
"""
import datetime
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_alerts import Receiver, add_rule, post_report, sql, wait_for  # noqa: E402
from web_instance import Instance, check, checks_done, free_port  # noqa: E402

TIMEOUT_S = 30
RETRY_S = 5
HEALTHY_BOUND_S = 5.0
ISSUES = 12
ENV = {"STACKSIFT_ALERT_POLL_MS": "100", "STACKSIFT_ALERT_RETRY_MS": str(RETRY_S * 1000),
       "STACKSIFT_ALERT_TIMEOUT_MS": str(TIMEOUT_S * 1000), "STACKSIFT_ALERT_SWEEP_S": "60",
       "STACKSIFT_SHUTDOWN_TIMEOUT_MS": "2000"}


class BlackHole:
    """Accepts connections on 127.0.0.1:port, reads each request's head and never answers;
    keeps the sockets open. `arrivals` lists (time, event id) per connection."""

    def __init__(self):
        self.port = free_port()
        self.lock = threading.Lock()
        self.arrivals = []
        self.socks = []
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", self.port))
        self.srv.listen(64)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            at = time.time()
            with self.lock:
                self.socks.append(c)
            threading.Thread(target=self.read_head, args=(c, at), daemon=True).start()

    def read_head(self, c, at):
        data = b""
        c.settimeout(10)
        try:
            while b"\r\n\r\n" not in data:
                chunk = c.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        eid = ""
        for line in data.split(b"\r\n"):
            if line.lower().startswith(b"x-stacksift-event:"):
                eid = line.split(b":", 1)[1].strip().decode()
        with self.lock:
            self.arrivals.append((at, eid))

    def got(self):
        with self.lock:
            return sorted(self.arrivals)

    def close(self):
        self.srv.close()
        with self.lock:
            for c in self.socks:
                c.close()


def created_s(ts):
    """An API timestamp (2026-01-07T10:31:02.114Z) as Unix seconds."""
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def main():
    rec = Receiver()
    rec.start()
    arrived = {}   # event id -> when the healthy receiver first got it
    rec.got = StampedList(rec.got, lambda item: arrived.setdefault(item[1], time.time()))
    hole = BlackHole()
    with Instance("alert_isolation", extra_env=ENV) as inst:
        r = inst.request("POST", "/api/v1/alerts", token=inst.tokens["admin"],
                         body={"kind": "new_issue", "url": f"http://127.0.0.1:{hole.port}/hook"})
        check(r.status == 201, f"black-hole rule: {r.status} {r.body[:160]!r}")
        add_rule(inst, rec, "/ok", "new_issue")

        for i in range(ISSUES):
            post_report(inst, f"Isolated{i}")
            time.sleep(1)
        check(wait_for(lambda: len(rec.events("/ok")) >= ISSUES, 20),
              f"healthy receiver: {len(rec.events('/ok'))} of {ISSUES} events")
        lags = []
        for _, eid, body, sig_ok, _ in rec.events("/ok"):
            lags.append(arrived[eid] - created_s(body["created_at"]))
            check(sig_ok, "healthy receiver: signature checks out")
        lags.sort()
        if lags:
            print(f"FIGURE healthy webhook lag beside a black hole (s): median "
                  f"{lags[len(lags) // 2]:.3f}, max {lags[-1]:.3f} over {len(lags)} events",
                  flush=True)
        check(lags and lags[-1] <= HEALTHY_BOUND_S,
              f"every healthy event within {HEALTHY_BOUND_S} s of its creation: {lags}")

        # the black hole's first requests time out TIMEOUT_S after they began; until then
        # every connection it accepted is still open
        got = hole.got()
        check(got, "the black hole was tried")
        t0 = got[0][0] if got else time.time()
        wait_for(lambda: time.time() > t0 + TIMEOUT_S - 2, TIMEOUT_S)
        held = [a for a in hole.got() if a[0] < t0 + TIMEOUT_S - 2]
        print(f"FIGURE black-hole connections open at once: {len(held)} "
              f"({ISSUES} events due for it)", flush=True)
        check(2 <= len(held) <= 4, f"the black hole holds 2 to 4 slots, not more: {len(held)}")

        # its first attempts time out and are recorded; the retry is due RETRY_S after that
        eid = got[0][1] if got else ""
        check(wait_for(lambda: sql(inst, f"SELECT attempts FROM alert_events WHERE id = '{eid}'")
                       == "1", 20), f"black-hole event {eid} failed once")
        due = float(sql(inst, f"SELECT extract(epoch FROM next_at) FROM alert_events "
                              f"WHERE id = '{eid}'") or 0)
        print(f"FIGURE black-hole retry due {due - t0:.2f} s after its request arrived "
              f"(timeout {TIMEOUT_S} s + retry {RETRY_S} s)", flush=True)
        check(due >= t0 + TIMEOUT_S + RETRY_S - 1,
              f"the retry delay counts from the failed attempt: due {due - t0:.2f} s after it "
              f"began, want >= {TIMEOUT_S + RETRY_S - 1}")

        # the next black-hole events are in flight: SIGTERM releases them within the
        # shutdown time
        check(wait_for(lambda: len(hole.got()) > len(held), 20),
              "the next black-hole deliveries started")
        time.sleep(0.5)
        inflight = int(sql(inst, "SELECT count(*) FROM alert_events WHERE claim IS NOT NULL"))
        check(inflight >= 1, f"deliveries in flight before SIGTERM: {inflight}")
        stop_at = time.time()
        inst.proc.send_signal(signal.SIGTERM)
        try:
            inst.proc.wait(timeout=TIMEOUT_S)
        except Exception:   # noqa: BLE001 - reported by the check below
            pass
        took = time.time() - stop_at
        print(f"FIGURE exit after SIGTERM with black-hole deliveries in flight: {took:.2f} s",
              flush=True)
        check(inst.proc.poll() is not None and took < 15,
              f"SIGTERM: exited in {took:.1f} s (shutdown time 2 s, black hole {TIMEOUT_S} s)")
        left = sql(inst, "SELECT count(*) FROM alert_events WHERE claim IS NOT NULL")
        check(left == "0", f"no claim left after the stop: {left}")
        # every request the black hole got either timed out (an attempt, counted) or was cut
        # off by the stop (released: not counted); none arrives after the exit
        time.sleep(0.5)
        with open(inst.log_path, "rb") as f:
            released = f.read().count(b'"alert_released"')
        arrivals = len(hole.got())
        counted = int(sql(inst, "SELECT coalesce(sum(e.attempts), 0) FROM alert_events e "
                                f"JOIN alert_rules r ON r.id = e.rule_id "
                                f"WHERE r.url LIKE '%:{hole.port}/%'"))
        print(f"black hole: {arrivals} requests, {counted} attempts counted, {released} "
              "released by the stop", flush=True)
        check(released >= 1 and counted == arrivals - released,
              f"attempts counted {counted} = requests {arrivals} - released {released}")
        st = sql(inst, "SELECT string_agg(DISTINCT e.status, ',') FROM alert_events e "
                       f"JOIN alert_rules r ON r.id = e.rule_id WHERE r.url LIKE '%:{hole.port}/%'")
        check(st == "pending", f"black-hole events pending again: {st}")
    hole.close()
    rec.stop()
    return checks_done()


class StampedList(list):
    """The receiver's list of deliveries, calling `stamp` on each append (arrival times)."""

    def __init__(self, items, stamp):
        super().__init__(items)
        self.stamp = stamp

    def append(self, item):
        self.stamp(item)
        super().append(item)


if __name__ == "__main__":
    sys.exit(main())
