#!/usr/bin/python3
"""test_hostile - every hostile URL and header gets an answer (ctest
reliability_hostile, labels reliability;db).

Generated cases, each on a new loopback connection to a real `stacksift serve`:
  - every route's path segments and query values replaced by hostile text: percent-escapes
    that decode to invalid UTF-8 (lone continuation bytes, overlongs, surrogates, truncated
    sequences, > U+10FFFF), raw bytes >= 0x80, NUL, CR LF, quotes and backslashes, a 6 KB
    value, escapes that are not escapes ("%", "%zz");
  - hostile header values (Content-Type, Content-Encoding, Authorization, Host, others) on
    the body routes, and hostile bodies (invalid UTF-8 JSON, random bytes, bad gzip).
Each answer must be an HTTP status (400 for invalid UTF-8 in the URL; otherwise a 4xx, or
200/202 where the hostile part is legitimately ignored), Content-Type application/json, a
body that is valid UTF-8 JSON ({"error":{"code","message"}} for a 4xx) whatever the request
echoed, X-Content-Type-Options: nosniff, within ANSWER_BOUND_S (5 s: no wait for a timeout; the
slowest answer is printed). The server log must hold no
libmicrohttpd "internal error" line, and every log line must be one JSON object.

Transport-level garbage that never reaches a route (a request line that is not HTTP, a
header block over libmicrohttpd's buffer) is answered by libmicrohttpd itself: those cases
only require a 4xx/5xx status or a closed connection within ANSWER_BOUND_S.
"""
import gzip
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import (ANSWER_BOUND_S, Instance, check, check_json_answer,  # noqa: E402
                         checks_done, exchange, figure, slowest_answer)

# Percent-escapes that decode to bytes that are not UTF-8, or to NUL.
INVALID = [
    "%ff", "%fe%ff", "%ff%fe", "%c3%28", "%c0%af", "%c1%bf", "%e0%80%af", "%ed%a0%80",
    "%ed%bf%bf", "%f4%90%80%80", "%f8%88%80%80%80", "%fc%84%80%80%80%80", "%80", "%bf",
    "%e2%82", "%f0%9f%98", "a%ffb", "%ce%bb%ff", "%e2%28%a1", "%f0%28%8c%bc",
    "x" * 10 + "%ff" * 2000,
    "%00", "a%00b",   # NUL would cut the value short: refused like invalid UTF-8
]
# Raw bytes in the request line (not escaped at all).
RAW_INVALID = [b"\xff", b"\x80abc", b"\xc3\x28", b"\xed\xa0\x80", b"caf\xe9"]
# Valid UTF-8, still hostile: must reach the routes and be answered like any bad value.
ODD = [
    "%0d%0a", "%0aSet-Cookie:%20x", "%22", "%5c", "%5c%22", "%25", "%",
    "%zz", "%2", "..%2f..%2fetc%2fpasswd", "%2e%2e", "%7f", "%1b%5b31m", "%e2%80%ae",
    "%f0%9f%98%80", "%ef%bf%bf", "'%20OR%201=1--", "%3cscript%3e", "-1", "0",
    "99999999999999999999999", "0x10", "%20", "%09",
]

# (template, token scope or None, statuses allowed for ODD values). {x} is replaced.
TEMPLATES = [
    ("/{x}", None, {404}),
    ("/ui/{x}", None, {404}),
    ("/api/v1/{x}", "read", {404}),
    ("/api/v1/reports/{x}", "read", {400, 404}),
    ("/api/v1/reports/{x}/raw", "read", {400, 404}),
    ("/api/v1/reports/{x}?format=text", "read", {400, 404}),
    ("/api/v1/reports/00000000-0000-0000-0000-000000000000?format={x}", "read", {400, 404}),
    ("/api/v1/dsyms/{x}", "read", {400, 404}),
    ("/api/v1/dsyms?uuid={x}", "read", {200, 400}),
    ("/api/v1/dsyms?name={x}", "read", {200, 400}),
    ("/api/v1/dsyms?limit={x}", "read", {200, 400}),
    ("/api/v1/dsyms/missing?limit={x}", "read", {200, 400}),
    ("/api/v1/issues/{x}", "read", {400, 404}),
    ("/api/v1/issues/{x}/reports", "read", {400, 404}),
    ("/api/v1/issues/1/reports?cursor={x}", "read", {400, 404}),
    ("/api/v1/issues?cursor={x}", "read", {200, 400}),
    ("/api/v1/issues?sort={x}", "read", {200, 400}),
    ("/api/v1/issues?q={x}&app={x}", "read", {200, 400}),
    ("/api/v1/issues?since={x}", "read", {200, 400}),
    ("/api/v1/issues?{x}={x}", "read", {200, 400}),
    ("/api/v1/daily?issues={x}&days={x}", "read", {200, 400}),
    ("/api/v1/daily?cursor={x}", "read", {200, 400}),
    ("/api/v1/issues?cursor={x}", None, {401}),
    ("/api/v1/reports/{x}", None, {401, 404}),
    ("/healthz?{x}", None, {200}),
    ("/metrics?{x}={x}", "read", {200}),
]


def request(method, path, inst, token=None, headers=None, body=b""):
    """Raw request bytes; `path` may be bytes (raw octets) or str."""
    if isinstance(path, str):
        path = path.encode("latin-1")
    h = [b"Host: 127.0.0.1", b"Connection: close"]
    if token:
        h.append(b"Authorization: Bearer " + inst.tokens[token].encode())
    for k, v in (headers or {}).items():
        h.append(k.encode() + b": " + (v if isinstance(v, bytes) else v.encode("latin-1")))
    if body or method in ("POST", "PATCH"):
        h.append(b"Content-Length: " + str(len(body)).encode())
    return method.encode() + b" " + path + b" HTTP/1.1\r\n" + b"\r\n".join(h) + b"\r\n\r\n" + body


def run_case(inst, counts, what, data, statuses):
    resp, elapsed, _ = exchange(inst.port, data)
    counts["cases"] += 1
    if resp is not None and resp.status == 200 and 200 in statuses and \
            b" /metrics" in data[:12]:
        # Prometheus text is the one 200 that is not JSON
        ok = check(resp.content_type == "text/plain", f"{what}: {resp.content_type}")
        ok &= check(elapsed < ANSWER_BOUND_S, f"{what}: answered after {elapsed:.2f} s")
        counts["answered"] += ok
        return
    if check_json_answer(resp, elapsed, what, statuses=statuses):
        counts["answered"] += 1


def url_cases(inst, counts):
    for template, scope, odd_statuses in TEMPLATES:
        for x in INVALID:
            path = template.replace("{x}", x)
            run_case(inst, counts, f"GET {path[:90]}", request("GET", path, inst, scope), {400})
        for x in RAW_INVALID:
            path = template.encode().replace(b"{x}", x)
            run_case(inst, counts, f"GET {path[:90]!r}", request("GET", path, inst, scope), {400})
        for x in ODD:
            path = template.replace("{x}", x)
            run_case(inst, counts, f"GET {path[:90]}", request("GET", path, inst, scope),
                     odd_statuses)


def header_cases(inst, counts):
    report = json.dumps({"kind": "hang", "images": [], "threads": []}).encode()
    bad_values = [b"\xff", b"text/\xff", b"\xff\xfe", b"application/json; charset=\xff",
                  b"\xc0\xaf", b"\xed\xa0\x80", b"a" * 4000 + b"\xff", b"\"\\\x7f"]
    for v in bad_values:
        for route, scope in (("/api/v1/reports", "ingest"), ("/api/v1/symbolicate", "read")):
            run_case(inst, counts, f"POST {route} Content-Type {v[:40]!r}",
                     request("POST", route, inst, scope, {"Content-Type": v}, report),
                     set(range(400, 500)))
            run_case(inst, counts, f"POST {route} Content-Encoding {v[:40]!r}",
                     request("POST", route, inst, scope,
                             {"Content-Type": "application/json", "Content-Encoding": v}, report),
                     set(range(400, 500)))
        for route in ("/api/v1/issues", "/api/v1/reports/x"):
            for auth in (b"Bearer " + v, v, b"Bearer ss_" + v + b"_" + v, b"Basic " + v):
                run_case(inst, counts, f"GET {route} Authorization {auth[:40]!r}",
                         request("GET", route, inst, None, {"Authorization": auth}), {401})
        run_case(inst, counts, f"POST /api/v1/dsyms Content-Type multipart boundary {v[:40]!r}",
                 request("POST", "/api/v1/dsyms", inst, "upload",
                         {"Content-Type": b"multipart/form-data; boundary=" + v}, b"--x\r\n"),
                 set(range(400, 500)))
        # headers nobody reads: the request goes through
        run_case(inst, counts, f"GET /api/v1/issues X-Junk {v[:40]!r}",
                 request("GET", "/api/v1/issues", inst, "read",
                         {"X-Junk": v, "User-Agent": v, "Accept": v}), {200})
    # wrong-scope and malformed tokens: one error shape
    for scope, route in (("ingest", "/api/v1/issues"), ("read", "/api/v1/reports")):
        method = "POST" if route == "/api/v1/reports" else "GET"
        run_case(inst, counts, f"{method} {route} with a {scope} token",
                 request(method, route, inst, scope, {"Content-Type": "application/json"},
                         report if method == "POST" else b""), {403})


def body_cases(inst, counts):
    rnd = random.Random(16)
    bodies = [
        b'{"kind":"hang","images":[],"threads":[],"app":"\xff\xfe"}',
        b'{"\xc0\xaf":1}',
        b"\xff" * 100,
        b"Incident Identifier: \xff\nThread 0 Crashed:\n0 \xff 0x1 \xff\n",
        bytes(rnd.randrange(256) for _ in range(3000)),
        b"\x1f\x8b\x08\x00\xff\xff\xff\xff",
        b"{" * 5000,
        b"",
    ]
    for i, body in enumerate(bodies):
        # body 3 is a crash report whose strings are not UTF-8: stored with U+FFFD (202), never
        # refused for that (octet-stream is for .plcrash files only); the others are no report
        for ctype in ("application/json", "text/plain", "application/octet-stream"):
            report = i == 3 and ctype != "application/octet-stream"
            run_case(inst, counts, f"POST /api/v1/reports body {i} as {ctype}",
                     request("POST", "/api/v1/reports", inst, "ingest", {"Content-Type": ctype}, body),
                     {202} if report else set(range(400, 500)))
        run_case(inst, counts, f"POST /api/v1/symbolicate body {i}",
                 request("POST", "/api/v1/symbolicate", inst, "read",
                         {"Content-Type": "application/json"}, body), set(range(400, 500)))
        run_case(inst, counts, f"PATCH /api/v1/issues/1 body {i}",
                 request("PATCH", "/api/v1/issues/1", inst, "admin",
                         {"Content-Type": "application/json"}, body), set(range(400, 500)))
    run_case(inst, counts, "POST /api/v1/reports gzip of invalid UTF-8",
             request("POST", "/api/v1/reports", inst, "ingest",
                     {"Content-Type": "application/json", "Content-Encoding": "gzip"},
                     gzip.compress(b'{"kind":"\xff"}')), set(range(400, 500)))
    run_case(inst, counts, "POST /api/v1/dsyms?name=%ff",
             request("POST", "/api/v1/dsyms?name=%ff", inst, "upload", {}, b"\xff" * 64), {400})
    boundary = b"b0und"
    part = (b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\xff\xfe"
            b"\\\"../x\"\r\n\r\n" + b"\xff" * 64 + b"\r\n--" + boundary + b"--\r\n")
    run_case(inst, counts, "POST /api/v1/dsyms multipart with a hostile file name",
             request("POST", "/api/v1/dsyms", inst, "upload",
                     {"Content-Type": b"multipart/form-data; boundary=" + boundary}, part),
             set(range(400, 500)))


def transport_cases(inst, counts):
    """Requests libmicrohttpd answers (or drops) before any route sees them."""
    cases = [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET  HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(5000)) + b"\r\n",
        b"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",
        b"GET /\xff HTTP/1.1\r\nHost: x\r\nBad Header\xff\r\n\r\n",
    ]
    for data in cases:
        resp, elapsed, raw = exchange(inst.port, data, timeout=2 * ANSWER_BOUND_S)
        counts["transport"] += 1
        what = f"transport {data[:30]!r}"
        counts["transport_slowest"] = max(counts["transport_slowest"], elapsed)
        ok = check(elapsed < ANSWER_BOUND_S, f"{what}: {elapsed:.2f} s")
        if resp is not None:
            ok &= check(400 <= resp.status < 600, f"{what}: status {resp.status}")
        counts["transport_answered"] += ok and resp is not None


def main():
    counts = {"cases": 0, "answered": 0, "transport": 0, "transport_answered": 0,
              "transport_slowest": 0.0}
    with Instance("hostile") as inst:
        url_cases(inst, counts)
        header_cases(inst, counts)
        body_cases(inst, counts)
        transport_cases(inst, counts)
        # the server is still fine
        r = inst.request("GET", "/healthz")
        check(r.status == 200, f"/healthz after the cases: {r.status}")
        log = open(inst.log_path, "rb").read()
        check(b"internal error" not in log, "the log holds a libmicrohttpd internal error")
        bad_lines = 0
        for line in log.splitlines():
            try:
                json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                bad_lines += 1
        check(bad_lines == 0, f"{bad_lines} log lines are not UTF-8 JSON objects")
    figure("hostile requests answered with a JSON error", f"{counts['answered']}/{counts['cases']}")
    figure(f"transport-level cases answered by libmicrohttpd within {ANSWER_BOUND_S} s",
           f"{counts['transport_answered']}/{counts['transport']}, slowest "
           f"{counts['transport_slowest'] * 1000:.0f} ms")
    worst, what = slowest_answer()
    figure("slowest answer to a hostile request", f"{worst * 1000:.0f} ms ({what[:60]})")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
