"""test_storm - a crash storm against a real `stacksift serve` and Postgres: a bad release
makes every device crash at once, and the node is offered five times what it can take.

1. The sustainable rate, measured here: 8 connections posting the same 30-frame Apple report
   of the fixture app (its dSYM uploaded, so reports are processed at intake) one after another
   for a few seconds (storm_client -r 0). Those rows are then removed, and two alert rules
   added (new_issue, spike), so that the storm's crash is a new issue.
2. The storm: 5x that rate on a fixed schedule from 200 connections (storm_client: open loop,
   each request timed from when it was due) for STACKSIFT_STORM_SECONDS (20 by default, 60 for
   the full figure), every report a new one (its own Incident Identifier) of one crash.
   Meanwhile /healthz and the dashboard's issue list are read every 100 ms.
3. Checked: every request answered, 202 or 429 with Retry-After (never a timeout or a reset);
   some shed (the storm did overload the node); p99 of answers from when each was due <= 1 s
   (STACKSIFT_STORM_P99_S); /healthz and the issue list answered 200 throughout, within their
   bounds; every 202 stored once, processed and grouped into the one issue, whose count is the
   number of 202s, no other report stored; the backlog drained within 60 s; one new-issue
   webhook and one spike webhook (two if the storm straddled an hour).
4. The Sentry endpoint in a storm of its own (5 s at the same offered rate, events of another
   project): 200 or 429, every 429 with Retry-After and X-Sentry-Rate-Limits in the
   form sentry-cocoa parses; every 200 stored once.

Figures (FIGURE lines): sustainable rate, accepted/s, shed/s, p50/p99 from due and from sent,
drain time, the server's peak RSS, /healthz and issue-list latencies.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "releases"))
from reliability import (Instance, check, checks_done, env_or_die, figure,  # noqa: E402
                         raise_fd_limit, sanitized)
from test_alerts import Receiver, wait_for  # noqa: E402
import web_instance  # noqa: E402

FACTOR = 5
CONNECTIONS = 200
STORM_S = float(os.environ.get("STACKSIFT_STORM_SECONDS", "20"))
CALIBRATE_S = float(os.environ.get("STACKSIFT_STORM_CALIBRATE_SECONDS", "4"))
P99_BOUND_S = float(os.environ.get("STACKSIFT_STORM_P99_S", "1.0"))
SENTRY_S = min(5.0, STORM_S)
SENTRY_FACTOR = 5
DRAIN_BOUND_S = 60.0
HEALTHZ_BOUND_S = 1.5      # the reliability tests' bound for /healthz on a loaded machine
ISSUES_BOUND_S = 2.0       # the dashboard's issue list, slowest of the storm
ENV = {"STACKSIFT_ALERT_POLL_MS": "100", "STACKSIFT_ALERT_RETRY_MS": "200",
       "STACKSIFT_ALERT_SWEEP_S": "1", "STACKSIFT_WORKERS": "2"}


def storm_client(args):
    """Run storm_client with `args`; its JSON summary."""
    out = subprocess.run([env_or_die("STORM_CLIENT")] + args, capture_output=True, text=True,
                         timeout=STORM_S + CALIBRATE_S + 120)
    if out.returncode != 0:
        raise RuntimeError(f"storm_client: exit {out.returncode}: {out.stderr}")
    sys.stderr.write(out.stderr)
    return json.loads(out.stdout)


def report_template(inst, tmp):
    """One 30-frame Apple report of the fixture app (tests/bench/bench_ingest_gen.py's first),
    its Incident Identifier's first 8 hex digits replaced by storm_client's placeholder."""
    gen = os.path.join(inst.source, "tests", "bench", "bench_ingest_gen.py")
    subprocess.run([sys.executable, gen, inst.bin, inst.fixtures, os.path.join(tmp, "gen"), "1"],
                   check=True, capture_output=True, timeout=120)
    text = open(os.path.join(tmp, "gen", "report-0.crash")).read()
    text, n = re.subn(r"^(Incident Identifier:\s+)[0-9A-F]{8}", r"\g<1>@@@@@@@@", text, count=1,
                      flags=re.M)
    assert n == 1, "the generated report has no Incident Identifier"
    path = os.path.join(tmp, "report.crash")
    with open(path, "w") as f:
        f.write(text)
    return path


def project_create(inst, slug):
    """(DSN key, project id) of a new project (`stacksift project create`), once the server's
    key table has it (reloaded twice a second)."""
    p = subprocess.run([inst.bin, "project", "create", slug], env=inst.env(),
                       capture_output=True, text=True, timeout=30, check=True)
    m = re.search(r"^DSN=\w+://([0-9a-fA-F]+)@[^/]+/(\d+)$", p.stdout, re.M)
    key, pid = m.group(1), int(m.group(2))
    wait_for(lambda: inst.request("POST", f"/api/{pid}/envelope/", b"", headers={
        "X-Sentry-Auth": f"Sentry sentry_key={key}"}).status != 401, 10)
    return key, pid


def sentry_template(tmp):
    """A Sentry envelope of one error event; the event_id's first 8 hex digits are the
    placeholder."""
    eid = "@@@@@@@@" + "5a7e0000c0de4000a0000000"
    event = {"event_id": eid, "level": "fatal", "platform": "cocoa",
             "exception": {"values": [{"type": "EXC_BAD_ACCESS", "value": "SIGSEGV"}]},
             "threads": {"values": [{"id": 0, "crashed": True, "current": True,
                                     "stacktrace": {"frames": [{"function": "main"},
                                                               {"function": "-[Storm crash]"}]}}]}}
    payload = json.dumps(event).encode()
    body = (json.dumps({"event_id": eid}).encode() + b"\n" +
            json.dumps({"type": "event", "length": len(payload)}).encode() + b"\n" + payload + b"\n")
    path = os.path.join(tmp, "envelope")
    with open(path, "wb") as f:
        f.write(body)
    return path


class Reader:
    """GET /healthz and GET /api/v1/issues every 100 ms on a thread of its own: (status,
    seconds) of each."""

    def __init__(self, inst):
        self.inst = inst
        self.healthz, self.issues = [], []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def one(self, path, token, into):
        t = time.monotonic()
        try:
            status = self.inst.request("GET", path, token=token, timeout=30).status
        except OSError:
            status = 0
        into.append((status, time.monotonic() - t))

    def run(self):
        while not self.stop.is_set():
            self.one("/healthz", None, self.healthz)
            self.one("/api/v1/issues?limit=20", self.inst.tokens["read"], self.issues)
            self.stop.wait(0.1)


class RssSampler:
    """The server's resident set, sampled every 200 ms (VmRSS), and its peak (VmHWM)."""

    def __init__(self, pid):
        self.pid = pid
        self.peak_kb = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def read(self, field):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def run(self):
        while not self.stop.is_set():
            self.peak_kb = max(self.peak_kb, self.read("VmRSS"))
            self.stop.wait(0.2)


def checks_failed():
    return web_instance._counts["failed"] > 0


def psql_script(inst, sql):
    return subprocess.run(["psql", inst.db_url, "-v", "ON_ERROR_STOP=1", "-qAt"], input=sql,
                          capture_output=True, text=True, check=True, timeout=120).stdout


def pct(values, q):
    v = sorted(values)
    return v[int((len(v) - 1) * q)] if v else 0.0


def check_answers(s, what, ok_status, sentry):
    """The checks every storm's answers pass."""
    check(s["timeouts"] == 0 and s["unsent"] == 0,
          f"{what}: {s['timeouts']} requests without an answer within 10 s, {s['unsent']} "
          "found no connection free within 10 s")
    check(s["resets"] == 0, f"{what}: {s['resets']} connections reset or closed under a request")
    check(s["malformed"] == 0, f"{what}: {s['malformed']} answers not understood")
    check(s["answered"] == s["requests"], f"{what}: {s['answered']} of {s['requests']} answered")
    others = {k: v for k, v in s["status"].items() if k not in (str(ok_status), "429")}
    check(not others, f"{what}: answers other than {ok_status} and 429: {others}")
    check(s["status"].get("429", 0) > 0, f"{what}: nothing shed at {s['rate']:.0f}/s: the "
          "storm did not overload the node")
    check(s["no_retry_after"] == 0, f"{what}: {s['no_retry_after']} 429s without Retry-After")
    check(s["retry_after_min"] >= 1 and s["retry_after_max"] <= 60,
          f"{what}: Retry-After from {s['retry_after_min']} to {s['retry_after_max']} s")
    if sentry:
        check(s["no_rate_limits"] == 0,
              f"{what}: {s['no_rate_limits']} 429s without X-Sentry-Rate-Limits")
        # sentry-cocoa's SentryRateLimitParser: "retry_after:categories:scope[:reason]", an
        # empty category list meaning every category
        m = re.fullmatch(r"(\d+):([a-z;]*):(\w+)(:\w+)?", s["rate_limits_example"])
        check(m is not None and 1 <= int(m.group(1)) <= 60 and m.group(2) == "",
              f"{what}: X-Sentry-Rate-Limits {s['rate_limits_example']!r}")


def main():
    raise_fd_limit(4096)
    rec = Receiver()
    rec.start()
    tmp = tempfile.mkdtemp(prefix="stacksift-storm.")
    with Instance("storm", extra_env=ENV, workers=2) as inst:
        man = json.load(open(os.path.join(inst.fixtures, "manifest.json")))
        inst.upload_dsym(next(f for f in man["fixtures"] if f["name"] == "arm64-O2"))
        body = report_template(inst, tmp)
        common = ["-p", str(inst.port), "-u", "/api/v1/reports", "-b", body,
                  "-H", f"Authorization: Bearer {inst.tokens['ingest']}",
                  "-H", "Content-Type: text/plain"]

        # ---- 1. the sustainable rate ----------------------------------------------------
        cal = storm_client(common + ["-c", "8", "-r", "0", "-d", str(CALIBRATE_S), "-s", "1"])
        sustained = cal["status"].get("202", 0) / cal["elapsed_s"]
        check(cal["answered"] == cal["requests"] and set(cal["status"]) == {"202"},
              f"calibration: every report 202 ({cal['status']}, {cal['timeouts']} timeouts)")
        figure("sustainable reports/s (8 connections, closed loop)", f"{sustained:.0f}")
        check(inst.wait_processed(60), "calibration reports processed")
        psql_script(inst, "TRUNCATE issues CASCADE; DELETE FROM reports; DELETE FROM report_claims;")
        for kind in ("new_issue", "spike"):
            subprocess.run([inst.bin, "alert", "add", "--kind", kind, "--url", rec.url(f"/{kind}")],
                           env=inst.env(), check=True, capture_output=True, timeout=30)

        # ---- 2. the storm ---------------------------------------------------------------
        rate = FACTOR * sustained
        reader = Reader(inst)
        rss = RssSampler(inst.proc.pid)
        reader.thread.start()
        rss.thread.start()
        ids_path = os.path.join(tmp, "ids")
        hour0 = time.gmtime().tm_hour
        s = storm_client(common + ["-c", str(CONNECTIONS), "-r", f"{rate:.1f}", "-d", str(STORM_S),
                                   "-t", "10", "-s", "2", "-i", ids_path])
        hour1 = time.gmtime().tm_hour
        ended = time.monotonic()
        print("storm:", json.dumps(s), flush=True)

        # drained: nothing waits for the workers, every acknowledged report counted
        acked = s["status"].get("202", 0)

        def drained():
            out = inst.psql(inst.db_url, "SELECT count(*) FILTER (WHERE status = 'received'), "
                            "count(*) FROM reports").split("|")
            return out[0].strip() == "0" and int(out[1]) >= acked
        is_drained = wait_for(drained, DRAIN_BOUND_S + 30, 0.2)
        drain_s = time.monotonic() - ended
        reader.stop.set()
        reader.thread.join()
        rss.stop.set()
        rss.thread.join()
        peak_kb = rss.read("VmHWM") or rss.peak_kb

        # ---- 3. checks --------------------------------------------------------------------
        check_answers(s, "storm", 202, False)
        p99_s = s["from_due_ms"]["p99"] / 1000
        check(p99_s <= P99_BOUND_S, f"storm: p99 from due {p99_s:.3f} s (bound {P99_BOUND_S} s)")
        check(is_drained and drain_s <= DRAIN_BOUND_S,
              f"backlog drained {drain_s:.1f} s after the storm (bound {DRAIN_BOUND_S:.0f} s)")
        hz = [t for st, t in reader.healthz if st == 200]
        check(len(hz) == len(reader.healthz) and len(hz) > 0,
              f"/healthz: {len(reader.healthz) - len(hz)} of {len(reader.healthz)} not 200")
        check(max(hz, default=0) <= HEALTHZ_BOUND_S,
              f"/healthz: slowest {max(hz, default=0):.3f} s (bound {HEALTHZ_BOUND_S} s)")
        iss = [t for st, t in reader.issues if st == 200]
        check(len(iss) == len(reader.issues) and len(iss) > 0,
              f"issue list: {len(reader.issues) - len(iss)} of {len(reader.issues)} not 200")
        check(max(iss, default=0) <= ISSUES_BOUND_S,
              f"issue list: slowest {max(iss, default=0):.3f} s (bound {ISSUES_BOUND_S} s)")

        ids = open(ids_path).read().split()
        check(len(ids) == acked, f"ids of 202s: {len(ids)} for {acked} answers")
        row = psql_script(inst, "CREATE TEMP TABLE acked (id uuid);\n"
                          "COPY acked FROM STDIN;\n" + "\n".join(ids) + "\n\\.\n"
                          "SELECT (SELECT count(*) FROM acked), (SELECT count(DISTINCT id) FROM acked), "
                          "(SELECT count(*) FROM acked a JOIN reports r ON r.id = a.id), "
                          "(SELECT count(*) FROM reports), "
                          "(SELECT count(*) FROM reports WHERE status = 'processed'), "
                          "(SELECT count(DISTINCT issue_id) FROM reports), "
                          "(SELECT count(*) FROM issues), (SELECT coalesce(sum(count), 0) FROM issues);"
                          ).strip().splitlines()[-1].split("|")
        n_ids, n_distinct, n_found, n_rows, n_processed, n_groups, n_issues, issue_count = map(int, row)
        check(n_distinct == n_ids, f"202s: {n_ids} ids, {n_distinct} distinct")
        check(n_found == n_ids, f"202s stored: {n_found} of {n_ids}")
        check(n_rows == acked, f"reports stored: {n_rows} for {acked} 202s (once each, nothing "
              "refused stored)")
        check(n_processed == n_rows, f"processed: {n_processed} of {n_rows}")
        check(n_groups == 1 and n_issues == 1, f"one crash, one issue: {n_groups} groups, "
              f"{n_issues} issues")
        check(issue_count == acked, f"the issue's count {issue_count}, 202s {acked}")
        hours = 1 if hour0 == hour1 else 2
        check(wait_for(lambda: len(rec.events("/new_issue")) >= 1 and
                       len(rec.events("/spike")) >= 1, 30),
              "webhooks: a new-issue and a spike event delivered")
        time.sleep(3)   # a second event of either kind would come by now (sweep every 1 s)
        check(len(rec.events("/new_issue")) == 1,
              f"new-issue webhooks: {len(rec.events('/new_issue'))}, want 1")
        check(1 <= len(rec.events("/spike")) <= hours,
              f"spike webhooks: {len(rec.events('/spike'))}, want {hours}")
        issue = next((e[2].get("issue") for e in rec.events("/new_issue")), None) or {}
        spike = next((e[2].get("spike") for e in rec.events("/spike")), None) or {}
        check(spike.get("count", 0) >= 10, f"spike event: {spike}")
        check(bool(issue.get("id")), f"new-issue event names the issue: {issue}")

        figure("storm seconds", f"{STORM_S:.0f}")
        figure("offered reports/s (5x, 200 connections, fixed schedule)", f"{rate:.0f}")
        figure("accepted reports/s (202)", f"{s['accepted_per_s']:.0f}")
        figure("shed reports/s (429)", f"{s['shed_per_s']:.0f}")
        figure("answers from due p50/p99/max ms", f"{s['from_due_ms']['p50']:.1f} / "
               f"{s['from_due_ms']['p99']:.1f} / {s['from_due_ms']['max']:.1f}")
        figure("answers from sent p50/p99 ms", f"{s['from_sent_ms']['p50']:.1f} / "
               f"{s['from_sent_ms']['p99']:.1f}")
        figure("Retry-After range s", f"{s['retry_after_min']}-{s['retry_after_max']}")
        figure("drain after the storm s", f"{drain_s:.1f}")
        figure("server peak RSS MB", f"{peak_kb / 1024:.0f}")
        figure("/healthz during the storm p50/max ms",
               f"{pct(hz, 0.5) * 1000:.1f} / {max(hz, default=0) * 1000:.1f} ({len(hz)} reads)")
        figure("issue list during the storm p50/p95/max ms",
               f"{pct(iss, 0.5) * 1000:.1f} / {pct(iss, 0.95) * 1000:.1f} / "
               f"{max(iss, default=0) * 1000:.1f} ({len(iss)} reads)")

        # ---- 4. the Sentry endpoint -------------------------------------------------------
        key, pid = project_create(inst, "storm-sentry")
        env_path = sentry_template(tmp)
        se = storm_client(["-p", str(inst.port), "-u", f"/api/{pid}/envelope/", "-b", env_path,
                           "-H", f"X-Sentry-Auth: Sentry sentry_version=7, sentry_key={key}, "
                           "sentry_client=sentry.cocoa/8.40.1",
                           "-H", "Content-Type: application/x-sentry-envelope",
                           "-c", str(CONNECTIONS), "-r", f"{SENTRY_FACTOR * sustained:.1f}",
                           "-d", str(SENTRY_S),
                           "-t", "10", "-s", "3"])
        print("sentry storm:", json.dumps(se), flush=True)
        check_answers(se, "sentry storm", 200, True)
        ok = se["status"].get("200", 0)
        check(wait_for(lambda: int(inst.psql(inst.db_url, "SELECT count(*) FROM reports WHERE "
                                             f"project_id = {pid}")) >= ok, 30),
              "sentry storm: events stored")
        stored = int(inst.psql(inst.db_url, f"SELECT count(*) FROM reports WHERE project_id = {pid}"))
        check(stored == ok, f"sentry storm: {stored} events stored for {ok} 200s")
        figure("sentry storm accepted/s, shed/s, p99 from due ms",
               f"{se['accepted_per_s']:.0f}, {se['shed_per_s']:.0f}, {se['from_due_ms']['p99']:.1f}")
        figure("X-Sentry-Rate-Limits", se["rate_limits_example"])
        if checks_failed():
            print("server log, warnings and errors:\n" + "".join(
                line for line in open(inst.log_path, errors="replace")
                if '"level":"warn"' in line or '"level":"error"' in line)[-6000:], flush=True)
    rec.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    if sanitized():
        print("(ASan/UBSan build: the same bounds)")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
