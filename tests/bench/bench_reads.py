#!/usr/bin/env python3
"""bench_reads.py - load a large store and time the dashboard's reads (see bench_reads.sh).

The server groups two real crashes first (--reports: a directory of Apple-text reports, the
first two are posted), so every copied row carries a model, an issue and a signature as the
workers wrote them. The copies are made in SQL, in statements of 100,000 rows; the issues'
counts, breakdown counters, days, versions and latest samples are then set from the rows,
as the intake and the workers keep them.
"""
import argparse
import gzip
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from urllib.parse import urlparse, quote

BATCH = 100_000
VERSIONS = 20   # app versions 1.0 .. 1.19
OS_VERSIONS = 6
DEVICES = 8
DAYS = 30


def breakdowns_backfill_sql():
    """Migration 0016's backfill statement (migrations are never edited after merge): every
    report with an issue counted into issue_breakdowns per (issue, dimension, value), read
    from the migration so that the bench counts as the schema does."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "migrations",
                        "0016_create_issue_breakdowns.sql")
    with open(path) as f:
        m = re.search(r"^INSERT INTO issue_breakdowns \(issue_id, dim, value, count\)\nSELECT .*?;",
                      f.read(), re.M | re.S)
    if m is None:
        sys.exit(f"bench_reads: no backfill INSERT INTO issue_breakdowns in {path}")
    return m.group(0)


def psql(pg, sql):
    """Run SQL (one or more statements) and return its unaligned, tab-separated output."""
    r = subprocess.run(["psql", pg, "-v", "ON_ERROR_STOP=1", "-AtqF", "\t", "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_reads: SQL failed: {r.stderr.strip()}\n{sql[:400]}")
    return r.stdout.strip()


class Api:
    def __init__(self, base, token):
        u = urlparse(base)
        self.host, self.port = u.hostname, u.port
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        self.headers = {"Authorization": f"Bearer {token}"}

    def call(self, method, path, body=None, headers=None):
        h = dict(self.headers)
        h.update(headers or {})
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (ConnectionError, http.client.HTTPException):
                # the server closed the idle keep-alive connection (during the load): reconnect
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
                if attempt:
                    raise

    def get_json(self, path):
        st, data = self.call("GET", path)
        if st != 200:
            sys.exit(f"bench_reads: GET {path}: {st} {data[:300]!r}")
        return json.loads(data)


def post_reports(api, pg, directory):
    names = sorted(os.listdir(directory))[:2]
    ids = []
    for n in names:
        with open(os.path.join(directory, n), "rb") as f:
            st, data = api.call("POST", "/api/v1/reports", f.read(), {"Content-Type": "text/plain"})
        if st != 202:
            sys.exit(f"bench_reads: POST {n}: {st} {data[:300]!r}")
        ids.append(json.loads(data)["id"])
    for _ in range(600):
        done = psql(pg, "SELECT count(*) FROM reports WHERE status = 'processed' AND id IN (%s)"
                    % ",".join(f"'{i}'" for i in ids))
        if int(done) == len(ids):
            break
        time.sleep(0.1)
    else:
        sys.exit("bench_reads: the two crashes were not processed within 60 s")
    rows = psql(pg, "SELECT id, issue_id FROM reports WHERE id IN (%s) ORDER BY received_at"
                % ",".join(f"'{i}'" for i in ids)).splitlines()
    pairs = [r.split("\t") for r in rows]
    if len({p[1] for p in pairs}) != 2:
        sys.exit(f"bench_reads: the two crashes should make two issues: {pairs}")
    return pairs  # [(report id, issue id)] * 2


def columns(pg):
    cols = psql(pg, "SELECT attname FROM pg_attribute WHERE attrelid = 'reports'::regclass "
                    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum").split("\n")
    return [c for c in cols if c]


def copy_rows(pg, cols, template, lo, hi, issue_expr, source):
    """INSERT copies g = lo..hi of report `template`; issue_expr chooses the issue per g."""
    overrides = {
        "id": "gen_random_uuid()",
        "received_at": f"now() - ((g % {DAYS}) * interval '1 day') - ((g % 86389) * interval '1 second')",
        "updated_at": "now()",
        "app_version": f"'1.' || (g % {VERSIONS})",
        "os_version": f"'17.' || (g % {OS_VERSIONS})",
        "hardware_model": f"'iPhone1' || (g % {DEVICES}) || ',1'",
        "issue_id": issue_expr,
    }
    sel = ", ".join(overrides.get(c, f"t.{c}") for c in cols)
    psql(pg, f"INSERT INTO reports ({', '.join(cols)}) SELECT {sel} "
             f"FROM reports t, {source} WHERE t.id = '{template}'")


def load(pg, pairs, big, small):
    (big_report, big_issue), (small_report, small_issue) = pairs
    cols = columns(pg)
    t0 = time.time()
    # Day partitions for the month the copies span (retention's own function).
    psql(pg, f"SELECT stacksift_reports_partition_create((now() - make_interval(days => d))::date) "
             f"FROM generate_series(0, {DAYS + 1}) d")
    for lo in range(1, big + 1, BATCH):
        hi = min(big, lo + BATCH - 1)
        copy_rows(pg, cols, big_report, lo, hi, big_issue, f"generate_series({lo}, {hi}) g")
        print(f"  big issue: {hi:,} reports ({time.time() - t0:.0f} s)", flush=True)
    # Small issues: copies of the second issue's row, then 20 reports each.
    icols = [c for c in psql(pg, "SELECT attname FROM pg_attribute WHERE attrelid = "
                                 "'issues'::regclass AND attnum > 0 AND NOT attisdropped "
                                 "ORDER BY attnum").split("\n") if c and c != "id"]
    iover = {"fingerprint": "encode(sha256(('bench-' || i)::bytea), 'hex')",
             "title": "t.title || ' #' || i", "culprit": "t.culprit || ' #' || i"}
    isel = ", ".join(iover.get(c, f"t.{c}") for c in icols)
    first = int(psql(pg, "SELECT max(id) FROM issues")) + 1
    psql(pg, f"INSERT INTO issues ({', '.join(icols)}) SELECT {isel} FROM issues t, "
             f"generate_series(1, {small}) i WHERE t.id = {small_issue}")
    per = 20
    total = small * per
    for lo in range(0, total, BATCH):
        hi = min(total, lo + BATCH) - 1
        # g -> the (g / per)-th bench issue, in id order
        src = (f"generate_series({lo}, {hi}) g JOIN (SELECT id AS iid, row_number() OVER "
               f"(ORDER BY id) - 1 AS k FROM issues WHERE id >= {first}) s ON s.k = g / {per}")
        copy_rows(pg, cols, small_report, lo, hi, "s.iid", src)
        print(f"  small issues: {hi + 1:,} reports ({time.time() - t0:.0f} s)", flush=True)
    # Counts, days, versions and the latest sample, as the workers keep them.
    # Breakdown counters: an insert of reports that already have an issue keeps none
    # (migration 0023: the intake keeps its own), so they are counted here, by 0016's backfill.
    psql(pg, "DELETE FROM issue_breakdowns;\n" + breakdowns_backfill_sql())
    psql(pg, """
        UPDATE issues i SET count = s.n, first_seen = s.f, last_seen = s.l FROM (
            SELECT issue_id, count(*) AS n, min(received_at) AS f, max(received_at) AS l
            FROM reports WHERE issue_id IS NOT NULL GROUP BY issue_id) s WHERE s.issue_id = i.id;
        UPDATE issues i SET versions = v.vs FROM (
            SELECT issue_id, array_agg(value ORDER BY value) AS vs FROM issue_breakdowns
            WHERE dim = 0 GROUP BY issue_id) v WHERE v.issue_id = i.id;
        UPDATE issues i SET last_report = (SELECT r.id FROM reports r WHERE r.issue_id = i.id
            ORDER BY r.received_at DESC, r.id DESC LIMIT 1);
        DELETE FROM issue_days;
        INSERT INTO issue_days (issue_id, day, count)
            SELECT issue_id, (received_at AT TIME ZONE 'UTC')::date, count(*) FROM reports
            WHERE issue_id IS NOT NULL GROUP BY 1, 2;""")
    psql(pg, "VACUUM ANALYZE")
    print(f"  loaded in {time.time() - t0:.0f} s: "
          f"{psql(pg, 'SELECT count(*) FROM reports')} reports, "
          f"{psql(pg, 'SELECT count(*) FROM issues')} issues, "
          f"{psql(pg, 'SELECT pg_size_pretty(pg_database_size(current_database()))')}", flush=True)


def post_sessions(api):
    now = time.time()
    sessions = []
    for v in range(VERSIONS):
        for k in range(500):
            sessions.append({
                "sid": str(uuid.uuid4()), "did": f"device-{v}-{k}", "release": f"1.{v}",
                "environment": "production",
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 3600 * (k % 48))),
                "duration_s": 30, "status": "crashed" if k % 50 == 0 else "exited", "errors": 0})
    body = gzip.compress(json.dumps({"sessions": sessions}).encode())
    st, data = api.call("POST", "/api/v1/sessions", body,
                        {"Content-Type": "application/json", "Content-Encoding": "gzip"})
    if st not in (200, 202):
        sys.exit(f"bench_reads: POST sessions: {st} {data[:300]!r}")


def reads(api, big_issue, small_issue):
    """(name, path) for every read the dashboard makes, with real ids and cursors."""
    out = [("issues", "/api/v1/issues?limit=50")]
    for sort in ("last_seen", "first_seen", "count"):
        out.append((f"issues sort={sort}", f"/api/v1/issues?limit=50&sort={sort}"))
    out.append(("issues status=open version=1.7", "/api/v1/issues?limit=50&status=open&version=1.7"))
    out.append(("issues q=", "/api/v1/issues?limit=50&q=" + quote("#4242")))
    # a deep cursor page: follow 40 pages of 50 (issue 2,000 onwards)
    path = "/api/v1/issues?limit=50&sort=count"
    for _ in range(40):
        page = api.get_json(path)
        if not page.get("next_cursor"):
            break
        path = "/api/v1/issues?limit=50&sort=count&cursor=" + quote(page["next_cursor"])
    out.append(("issues page 41 (sort=count)", path))
    ids = [str(it["id"]) for it in api.get_json("/api/v1/issues?limit=50")["issues"]]
    out.append(("daily (50 sparklines)", "/api/v1/daily?issues=" + ",".join(ids)))
    for label, iid in (("big", big_issue), ("small", small_issue)):
        out.append((f"issue ({label})", f"/api/v1/issues/{iid}"))
        out.append((f"issue reports ({label})", f"/api/v1/issues/{iid}/reports?limit=20"))
    # the big issue's reports, 200 pages of 20 deep
    path = f"/api/v1/issues/{big_issue}/reports?limit=20"
    for _ in range(200):
        page = api.get_json(path)
        if not page.get("next_cursor"):
            break
        path = f"/api/v1/issues/{big_issue}/reports?limit=20&cursor=" + quote(page["next_cursor"])
    out.append(("issue reports page 201 (big)", path))
    rep = api.get_json(f"/api/v1/issues/{big_issue}/reports?limit=1")["reports"][0]["id"]
    out.append(("report", f"/api/v1/reports/{rep}"))
    out.append(("report text", f"/api/v1/reports/{rep}?format=text"))
    out.append(("report raw", f"/api/v1/reports/{rep}/raw"))
    out.append(("releases", "/api/v1/releases?limit=200"))
    out.append(("release 1.7", "/api/v1/releases/1.7"))
    out.append(("callsites", "/api/v1/callsites?limit=1000"))
    out.append(("dsyms", "/api/v1/dsyms"))
    out.append(("dsyms missing", "/api/v1/dsyms/missing?limit=1000"))
    out.append(("projects", "/api/v1/projects"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--pg", required=True)
    ap.add_argument("--reports", required=True)
    ap.add_argument("--big", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--target-ms", type=float, default=50.0)
    a = ap.parse_args()

    api = Api(a.url, a.token)
    pairs = post_reports(api, a.pg, a.reports)
    print(f"bench_reads: loading {a.big:,} reports into one issue and {a.small:,} issues "
          f"of 20 reports", flush=True)
    load(a.pg, pairs, a.big, a.small)
    post_sessions(api)
    big_issue, small_issue = int(pairs[0][1]), int(pairs[1][1])
    got = api.get_json(f"/api/v1/issues/{big_issue}")
    if got["count"] != a.big + 1:
        sys.exit(f"bench_reads: the big issue counts {got['count']}, not {a.big + 1}")
    results = []
    failed = []
    for name, path in reads(api, big_issue, small_issue):
        api.call("GET", path)  # warm: plans prepared, pages cached
        times = []
        for _ in range(a.samples):
            t = time.perf_counter()
            st, _ = api.call("GET", path)
            times.append((time.perf_counter() - t) * 1000)
            if st != 200:
                sys.exit(f"bench_reads: GET {path}: {st}")
        times.sort()
        p50 = statistics.median(times)
        p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
        results.append({"read": name, "p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                        "max_ms": round(times[-1], 2)})
        mark = "" if p95 <= a.target_ms else "  OVER TARGET"
        print(f"  {name:34s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  max {times[-1]:7.2f} ms{mark}",
              flush=True)
        if p95 > a.target_ms:
            failed.append(name)
    print(json.dumps({"bench": "reads", "big_reports": a.big, "small_issues": a.small,
                      "target_ms": a.target_ms, "reads": results, "over_target": failed}))
    if failed:
        print(f"bench_reads: p95 over {a.target_ms} ms: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
