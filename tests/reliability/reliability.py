"""reliability - what tests/reliability/test_*.py share: raw HTTP exchanges with
timing, the checks every answer must pass, loopback source addresses, the fd limit.

    from reliability import Instance, check, checks_done, exchange, check_json_answer

Everything stays on loopback: clients connect to 127.0.0.1 and may bind a source address in
127.0.0.0/8 (Linux answers the whole /8 on `lo`), which is how a test plays several clients
("attackers" on 127.0.0.2.., the normal client on 127.0.0.1) for the per-IP limits.
Standard library only; the server comes from tests/web_instance.py.
"""
import json
import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from web_instance import Instance, Response, check, checks_done, env_or_die  # noqa: E402,F401

__all__ = ["Instance", "Response", "check", "checks_done", "env_or_die", "exchange",
           "parse_answer", "check_json_answer", "raise_fd_limit", "figure", "connect_from",
           "sanitized", "ANSWER_BOUND_S", "slowest_answer"]


# An answer that must come without waiting for anything (a refusal, an error): within this
# on a loaded machine. The server's shortest timeout a stuck request would run into is the
# 10 s header timeout (STACKSIFT_HEADER_TIMEOUT_S); the slowest answer is reported instead.
ANSWER_BOUND_S = 5.0
_slowest = [0.0, ""]


def slowest_answer():
    """(seconds, what) of the slowest answer check_json_answer saw."""
    return tuple(_slowest)


def sanitized():
    """True when the server binary is the ASan/UBSan build (tests/run.sh SANITIZE=1): sizes of
    generated load may shrink."""
    return "build-asan" in os.environ.get("STACKSIFT_BIN", "")


def figure(name, value):
    """One measured figure, printed as `FIGURE name: value` (the closing report quotes them)."""
    print(f"FIGURE {name}: {value}", flush=True)


def raise_fd_limit(want):
    """Raise RLIMIT_NOFILE to at least `want` (the hard limit too when we may, as root);
    returns the soft limit now in force. Child processes (the server) inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            pass
    new_soft = want if hard == resource.RLIM_INFINITY else min(max(soft, want), hard)
    if new_soft > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def connect_from(port, src="127.0.0.1", timeout=5.0):
    """A TCP connection to the server on 127.0.0.1:port from loopback address `src`."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src != "127.0.0.1":
        s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def parse_answer(data):
    """A Response from raw bytes, or None when they hold no complete HTTP answer head."""
    sep = data.find(b"\r\n\r\n")
    if sep < 0 or not data.startswith(b"HTTP/1."):
        return None
    lines = data[:sep].decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    payload = data[sep + 4:]
    if "content-length" in hdrs:
        payload = payload[:int(hdrs["content-length"])]
    return Response(status, hdrs, payload)


def exchange(port, data, src="127.0.0.1", timeout=10.0, shut_wr=False):
    """Send `data` (bytes, a whole request) on a new connection and read until the server
    closes it or one complete answer (by Content-Length) is in. Returns (Response or None,
    seconds from the first byte sent to the answer or the close, raw bytes)."""
    s = connect_from(port, src, timeout)
    t0 = time.monotonic()
    out = b""
    try:
        try:
            s.sendall(data)
            if shut_wr:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass   # answered before the whole request was read
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
            resp = parse_answer(out)
            if resp is not None and "content-length" in resp.headers and \
                    len(resp.body) >= int(resp.headers["content-length"]):
                break
    finally:
        s.close()
    return parse_answer(out), time.monotonic() - t0, out


def check_json_answer(resp, elapsed, what, statuses=range(400, 500), bound_s=ANSWER_BOUND_S):
    """The checks every answer to a hostile request must pass: answered at all, status in
    `statuses`, Content-Type application/json, a body that is valid UTF-8 and valid JSON,
    an error object {"error":{"code","message"}} for status >= 400, the nosniff header, and
    answered within `bound_s`. One check() per property; returns True if all held."""
    if not check(resp is not None, f"{what}: no HTTP answer"):
        return False
    ok = check(resp.status in statuses, f"{what}: status {resp.status}")
    ok &= check(resp.content_type == "application/json",
                f"{what}: Content-Type {resp.headers.get('content-type')!r}")
    ok &= check(resp.headers.get("x-content-type-options") == "nosniff",
                f"{what}: no X-Content-Type-Options: nosniff")
    if elapsed > _slowest[0]:
        _slowest[:] = [elapsed, what]
    ok &= check(elapsed < bound_s, f"{what}: answered after {elapsed:.2f} s (bound {bound_s} s)")
    try:
        body = json.loads(resp.body.decode("utf-8", errors="strict"))
    except (UnicodeDecodeError, ValueError) as e:
        check(False, f"{what}: body is not UTF-8 JSON ({e}): {resp.body[:120]!r}")
        return False
    if resp.status >= 400:
        err = body.get("error") if isinstance(body, dict) else None
        ok &= check(isinstance(err, dict) and isinstance(err.get("code"), str) and
                    isinstance(err.get("message"), str),
                    f"{what}: error body {body!r:.200}")
    return ok
