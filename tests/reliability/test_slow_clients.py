#!/usr/bin/python3
"""test_slow_clients - slow, idle and half-closed clients hold no slot a normal client needs,
and SIGTERM ends the server whatever the clients do (ctest
reliability_slow_clients, labels reliability;db).

The server runs with its default limits. Attackers connect from other loopback addresses
than the normal client (127.0.0.1), as real ones would:
  idle        2,000 connections that send nothing, spread over 8 addresses;
  slowloris   1,500 connections that send a request line and then one header line every
              5 s, spread over 6 addresses, plus 400 more from one address (the per-IP limit);
  half-close  uploads that stop half way and shut down their sending side;
  slow body   an upload that sends 20 bytes a second.
While each attack holds its connections open, a normal client sends one request every
100 ms on a new connection (GET /healthz and GET /api/v1/issues in turn); at least 95% must
be answered (200) within ANSWER_BOUND_S. Then: the slowloris connections are closed by the
server after the header timeout, the half-closed requests end within ANSWER_BOUND_S, the slow
body is dropped by the minimum transfer rate, and SIGTERM with attackers connected exits
within SIGTERM_BOUND_S.
Each bound is what must hold on a loaded machine, below what the failure it catches would
take (a slot held until the 10 s header timeout, a request left to the 60 s request timeout,
a server that never exits); the measured figures (answers within 1 s, the slowest answer,
the time to exit) are printed as FIGURE lines.
"""
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import (Instance, check, checks_done, connect_from, exchange, figure,  # noqa: E402
                         raise_fd_limit, sanitized)

IDLE = 2000
SLOWLORIS = 1500
SLOWLORIS_ONE_IP = 400
HEADER_TIMEOUT_S = 10       # the server's default STACKSIFT_HEADER_TIMEOUT_S
ANSWER_BOUND_S = 5.0        # half the header timeout: an answer that waited on a held slot fails
# The server promises to exit within ~10 s of SIGTERM (8 s drain, STACKSIFT_SHUTDOWN_TIMEOUT_MS);
# 20 s leaves room for a loaded machine and still catches one that waits for its clients.
SIGTERM_BOUND_S = 20.0


def open_many(port, n, sources):
    """n connections spread over `sources`; the ones the kernel or the server refused at once
    are left out (a server at its limit may close them: that is its right)."""
    socks = []
    for i in range(n):
        try:
            socks.append(connect_from(port, sources[i % len(sources)], timeout=2))
        except OSError:
            pass
    return socks


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


def normal_client(inst, seconds, label):
    """One request every 100 ms for `seconds`; returns (answered within ANSWER_BOUND_S,
    sent)."""
    sent = answered = fast = 0
    worst = 0.0
    end = time.monotonic() + seconds
    paths = ["/healthz", "/api/v1/issues?limit=1"]
    while time.monotonic() < end:
        t0 = time.monotonic()
        path = paths[sent % 2]
        req = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
               f"Authorization: Bearer {inst.tokens['read']}\r\n\r\n").encode()
        sent += 1
        try:
            resp, elapsed, _ = exchange(inst.port, req, timeout=ANSWER_BOUND_S)
        except OSError:
            resp, elapsed = None, ANSWER_BOUND_S
        if resp is not None and resp.status == 200 and elapsed < ANSWER_BOUND_S:
            answered += 1
            fast += elapsed < 1.0
        worst = max(worst, elapsed)
        time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
    ratio = answered / sent if sent else 0.0
    check(ratio >= 0.95, f"{label}: normal client got {answered}/{sent} answers within "
                         f"{ANSWER_BOUND_S} s")
    figure(f"normal client answered during {label}",
           f"{answered}/{sent} ({100 * ratio:.0f}%) within {ANSWER_BOUND_S} s, {fast} within 1 s, "
           f"slowest {worst * 1000:.0f} ms")
    return answered, sent


def closed_by_server(s):
    """True if the server has closed `s` (EOF or reset), without waiting."""
    s.setblocking(False)
    try:
        data = s.recv(4096)
        return data == b"" or data.startswith(b"HTTP/1.1 4")
    except BlockingIOError:
        return False
    except OSError:
        return True


class Slowloris:
    """Connections that send a request line, then one more header line every 5 s."""

    def __init__(self, port, n, sources):
        self.socks = open_many(port, n, sources)
        for s in self.socks:
            try:
                s.sendall(b"GET /api/v1/issues HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            except OSError:
                pass
        self.opened = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        k = 0
        while not self.stop.wait(5.0):
            k += 1
            for s in self.socks:
                try:
                    s.sendall(b"X-Slow-%d: %d\r\n" % (k, k))
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join()
        close_all(self.socks)


def upload_head(inst, route, length, scope):
    ctype = "application/octet-stream" if "dsyms" in route else "application/json"
    return (f"POST {route} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            f"Authorization: Bearer {inst.tokens[scope]}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def half_close_cases(inst):
    """Half a body, then FIN: the server must end the request (close or 4xx) within
    ANSWER_BOUND_S, not leave it to the request timeout."""
    ended, worst = 0, 0.0
    cases = [("/api/v1/reports", "ingest", 200000), ("/api/v1/dsyms?name=x", "upload", 400000),
             ("/api/v1/symbolicate", "read", 100000)]
    for route, scope, length in cases:
        data = upload_head(inst, route, length, scope) + b"{" + b" " * (length // 2)
        resp, elapsed, _ = exchange(inst.port, data, timeout=10, shut_wr=True)
        worst = max(worst, elapsed)
        ok = check(elapsed < ANSWER_BOUND_S,
                   f"half-closed {route}: the server took {elapsed:.2f} s to end it")
        if resp is not None:
            ok &= check(400 <= resp.status < 500, f"half-closed {route}: status {resp.status}")
        ended += ok
    figure(f"half-closed uploads ended within {ANSWER_BOUND_S} s",
           f"{ended}/{len(cases)}, slowest {worst * 1000:.0f} ms")


class SlowBody:
    """An upload that sends 20 bytes a second; records when the server dropped it."""

    def __init__(self, inst):
        self.sock = connect_from(inst.port, "127.0.0.60", timeout=2)
        self.sock.sendall(upload_head(inst, "/api/v1/reports", 1 << 20, "ingest"))
        self.t0 = time.monotonic()
        self.dropped_after = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while time.monotonic() - self.t0 < 60:
            try:
                self.sock.sendall(b" " * 20)
            except OSError:
                self.dropped_after = time.monotonic() - self.t0
                return
            if closed_by_server(self.sock):
                self.dropped_after = time.monotonic() - self.t0
                return
            self.sock.setblocking(True)
            time.sleep(1.0)


def main():
    have = raise_fd_limit(12000)
    check(have >= 8000, f"file descriptor limit {have}: the test needs 8000")
    idle_srcs = [f"127.0.0.{i}" for i in range(2, 10)]
    loris_srcs = [f"127.0.0.{i}" for i in range(10, 16)]
    with Instance("slow_clients") as inst:
        # 1. idle connections
        idle = open_many(inst.port, IDLE, idle_srcs)
        figure("idle connections opened", len(idle))
        time.sleep(0.5)
        normal_client(inst, 5, f"{len(idle)} idle connections")
        close_all(idle)

        # 2. slowloris (spread, and many from one address), a slow body, half-closed uploads
        loris = Slowloris(inst.port, SLOWLORIS, loris_srcs)
        loris_one = Slowloris(inst.port, SLOWLORIS_ONE_IP, ["127.0.0.20"])
        figure("slowloris connections opened", len(loris.socks) + len(loris_one.socks))
        slow = SlowBody(inst)
        time.sleep(0.5)
        normal_client(inst, 7, f"{len(loris.socks) + len(loris_one.socks)} slowloris connections")
        half_close_cases(inst)
        # the header timeout closes the slowloris connections (each still sends a line every
        # 5 s, so a server that only timed out idle connections would never close them):
        # 95% closed within the header timeout plus a margin for a loaded machine
        close_by = HEADER_TIMEOUT_S + 15
        while time.monotonic() - loris.opened < HEADER_TIMEOUT_S:
            time.sleep(0.2)
        while True:
            gone = sum(closed_by_server(s) for s in loris.socks)
            after = time.monotonic() - loris.opened
            if gone >= 0.95 * len(loris.socks) or after > close_by:
                break
            time.sleep(0.5)
        check(gone >= 0.95 * len(loris.socks),
              f"{gone}/{len(loris.socks)} slowloris connections closed by the server "
              f"{after:.1f} s after they opened (bound {close_by} s)")
        figure("slowloris connections closed by the server",
               f"{gone}/{len(loris.socks)} {after:.1f} s after they opened")
        loris.close()
        loris_one.close()
        slow.thread.join(60)
        check(slow.dropped_after is not None and slow.dropped_after < 45,
              f"a 20 B/s upload was dropped after {slow.dropped_after} s (bound 45 s; it sends "
              f"for 60 s)")
        figure("20 B/s upload dropped after (s)",
               f"{slow.dropped_after:.1f}" if slow.dropped_after else "never")

        # 3. SIGTERM with attackers of every kind connected
        idle = open_many(inst.port, 300, idle_srcs)
        loris = Slowloris(inst.port, 300, loris_srcs)
        stuck = connect_from(inst.port, "127.0.0.61")
        stuck.sendall(upload_head(inst, "/api/v1/reports", 100000, "ingest") + b"{" * 1000)
        half = connect_from(inst.port, "127.0.0.62")
        half.sendall(upload_head(inst, "/api/v1/reports", 100000, "ingest") + b"{" * 1000)
        half.shutdown(socket.SHUT_WR)
        time.sleep(0.3)
        t0 = time.monotonic()
        inst.proc.send_signal(signal.SIGTERM)
        try:
            code = inst.proc.wait(timeout=SIGTERM_BOUND_S + 10)
        except Exception:
            code = None
        took = time.monotonic() - t0
        check(code is not None and took < SIGTERM_BOUND_S,
              f"SIGTERM took {took:.1f} s (exit {code}, bound {SIGTERM_BOUND_S} s)")
        figure("SIGTERM to exit with attackers connected (s)", f"{took:.2f} (exit status {code})")
        loris.close()
        close_all(idle + [stuck, half])
        if sanitized():
            figure("build", "ASan+UBSan")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
