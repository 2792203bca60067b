#!/usr/bin/python3
"""test_early_answers - a request answered before its body is read (no token, a wrong token, a
declared body over the limit, no such endpoint) is answered to a client that writes its whole
body before it reads (ctest reliability_early_answers, labels reliability;db).

The server sends such an answer at once and then closes the connection. Closing a socket that
still holds unread bytes makes the kernel send a reset, and a reset makes the client's kernel
drop whatever it had received and not yet handed to the client: a client that writes first and
reads after (most HTTP libraries) would see "connection reset" instead of 401 or 413. The
server lingers instead (reads and discards for a while after the answer, as nginx's lingering
close does), so every case below must end with the whole answer read: status, JSON error body.
Bodies of 4 and 12 MiB, far more than the socket buffers hold, each case several times.
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import Instance, check, checks_done, figure, parse_answer  # noqa: E402

ROUNDS = 4


def write_then_read(port, head, body_len):
    """Send `head` and then `body_len` bytes of body in full before reading anything; then read
    until the server closes. Returns (Response or None, what went wrong or None, seconds)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    t0 = time.monotonic()
    problem = None
    try:
        s.sendall(head)
        chunk = b"x" * 65536
        left = body_len
        while left > 0:
            n = s.send(chunk[:min(left, len(chunk))])
            left -= n
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except ConnectionResetError:
        problem, data = "connection reset", b""
    except BrokenPipeError:
        problem, data = "broken pipe while writing the body", b""
    except socket.timeout:
        problem, data = "timeout", b""
    finally:
        s.close()
    return parse_answer(data) if data else None, problem, time.monotonic() - t0


def main():
    limit = 1 << 20
    with Instance("early_answers", extra_env={"STACKSIFT_MAX_REPORT_BYTES": str(limit)}) as inst:
        tok = inst.tokens
        big = 4 << 20
        cases = [
            ("POST /api/v1/reports without a token", 401,
             f"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             f"Content-Length: {big}\r\n\r\n", big),
            ("POST /api/v1/reports with a wrong token", 401,
             f"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ss_000000000000_"
             f"{'0' * 64}\r\nContent-Type: application/json\r\nContent-Length: {big}\r\n\r\n", big),
            ("POST /api/v1/reports over the size limit", 413,
             f"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {tok['ingest']}\r\n"
             f"Content-Type: application/json\r\nContent-Length: {big}\r\n\r\n", big),
            ("POST /api/v1/dsyms with a read token", 403,
             f"POST /api/v1/dsyms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {tok['read']}\r\n"
             f"Content-Length: {3 * big}\r\n\r\n", 3 * big),
            ("POST /no/such/endpoint", 404,
             f"POST /no/such/endpoint HTTP/1.1\r\nHost: x\r\nContent-Length: {big}\r\n\r\n", big),
        ]
        answered = total = 0
        worst = 0.0
        for what, want, head, n in cases:
            for _ in range(ROUNDS):
                total += 1
                resp, problem, secs = write_then_read(inst.port, head.encode(), n)
                worst = max(worst, secs)
                ok = check(resp is not None, f"{what}: no answer ({problem})")
                if resp is None:
                    continue
                ok &= check(resp.status == want, f"{what}: status {resp.status}, want {want}")
                try:
                    err = json.loads(resp.body)["error"]
                    ok &= check(isinstance(err.get("code"), str), f"{what}: {err}")
                except (ValueError, KeyError, TypeError):
                    ok &= check(False, f"{what}: body {resp.body[:120]!r}")
                answered += ok
        figure("early answers read by clients that write their whole body first",
               f"{answered}/{total} (bodies of 4-12 MiB, slowest exchange {worst:.2f} s)")
        # the server is still fine: a normal request right after
        r = inst.request("GET", "/healthz")
        check(r.status == 200, f"/healthz after: {r.status}")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
