"""test_sessions - release health through the real server and Postgres: POST /api/v1/sessions
counted as Sentry counts sessions (server/ingest/sessions.h), checked against an independent
model of the rules written here; retried batches, concurrent batches, bad input, old
sessions, and the distinct-users sample above STACKSIFT_RELEASE_USERS_EXACT.
"""
import datetime
import gzip
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from web_instance import Instance, check, checks_done, free_port  # noqa: E402

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def ts(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Model:
    """The counting rules, independently: per session, fixed attributes from its first
    update, counted at init, first final status wins, errored before it."""

    def __init__(self):
        self.s = {}

    def update(self, u):
        if datetime.datetime.fromisoformat(u["started"].replace("Z", "+00:00")) < \
                NOW - datetime.timedelta(days=5):
            return
        st = self.s.get(u["sid"])
        if st is None:
            st = self.s[u["sid"]] = {"release": u["release"],
                                     "env": u.get("environment") or "production",
                                     "did": u.get("did"), "counted": False, "errored": False,
                                     "final": None}
        st["counted"] |= u.get("init", True)
        if st["final"] is None:
            if u.get("errors", 0) > 0 or u.get("status") == "errored":
                st["errored"] = True
            if u.get("status") in ("exited", "crashed", "abnormal"):
                st["final"] = u["status"]

    def totals(self, release, env=None):
        t = {"sessions": 0, "crashed": 0, "abnormal": 0, "errored": 0}
        users, crashed_users = set(), set()
        for st in self.s.values():
            if st["release"] != release or (env and st["env"] != env) or not st["counted"]:
                continue
            t["sessions"] += 1
            if st["final"] == "crashed":
                t["crashed"] += 1
            elif st["final"] == "abnormal":
                t["abnormal"] += 1
            elif st["errored"]:
                t["errored"] += 1
            if st["did"]:
                users.add((st["env"], st["did"]))
                if st["final"] == "crashed":
                    crashed_users.add((st["env"], st["did"]))
        t["users"] = len(users)
        t["crashed_users"] = len(crashed_users)
        return t


def db_totals(inst, release, env=None):
    where = f"e.release = '{release}'" + (f" AND e.environment = '{env}'" if env else "")
    row = inst.psql(inst.db_url,
                    "SELECT coalesce(sum(h.sessions),0), coalesce(sum(h.crashed),0), "
                    "coalesce(sum(h.abnormal),0), coalesce(sum(h.errored),0) "
                    f"FROM release_envs e JOIN session_hours h ON h.renv = e.id WHERE {where}")
    s, c, a, e = (int(x) for x in row.strip().split("|"))
    u = inst.psql(inst.db_url, "SELECT coalesce(sum(user_rows),0), coalesce(sum(crashed_rows),0) "
                  f"FROM release_envs e WHERE {where}")
    nu, nc = (int(x) for x in u.strip().split("|"))
    return {"sessions": s, "crashed": c, "abnormal": a, "errored": e, "users": nu,
            "crashed_users": nc}


def post(inst, sessions, gz=False, token=None, raw=None):
    body = raw if raw is not None else json.dumps({"sessions": sessions}).encode()
    headers = {"Content-Type": "application/json"}
    if gz:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return inst.request("POST", "/api/v1/sessions", body=body, headers=headers,
                        token=token or inst.tokens["ingest"], timeout=120)


def session(rng, release, status, errors=0, did=None, env="production", init=True, sid=None,
            started=None):
    return {"sid": sid or str(uuid.UUID(int=rng.getrandbits(128))), "did": did,
            "release": release, "environment": env,
            "started": ts(started or NOW - datetime.timedelta(minutes=rng.randrange(1, 600))),
            "duration_s": rng.randrange(0, 3600), "status": status, "errors": errors,
            "init": init}


def every_status(inst):
    """One batch of complete sessions of every status, some with errors, on 40 devices; then
    Sentry-style updates of open sessions in later batches (init, then exit or crash)."""
    rng = random.Random(7)
    model = Model()
    batch = []
    for i in range(600):
        status = ["ok", "exited", "crashed", "abnormal", "errored"][i % 5]
        errors = (i // 5) % 3
        batch.append(session(rng, "app@1.0+1", status, errors, did=f"device-{i % 40}"))
    for u in batch:
        model.update(u)
    r = post(inst, batch, gz=True)
    check(r.status == 202, f"every status: {r.status} {r.body[:200]!r}")
    check(r.json().get("accepted") == 600 if r.status == 202 else False, f"accepted {r.body!r}")
    # open sessions updated later, in order, across three batches, duplicates included
    opens = [session(rng, "app@1.0+1", "ok", 0, did=f"late-{i % 7}") for i in range(60)]
    later1, later2 = [], []
    for i, o in enumerate(opens):
        u = dict(o, init=False, errors=i % 2)
        u["release"] = "app@9.9+9"      # attributes are fixed by the first update
        later1.append(u)
        fin = dict(u, status=["exited", "crashed", "abnormal"][i % 3])
        later2.append(fin)
    for b in (opens, later1, later2, later2, opens):   # later2 and opens sent twice
        for u in b:
            model.update(u)
        r = post(inst, b)
        check(r.status == 202, f"updates: {r.status} {r.body[:200]!r}")
    want = model.totals("app@1.0+1")
    got = db_totals(inst, "app@1.0+1")
    check(got == want, f"every status: stored {got}, model {want}")
    check(db_totals(inst, "app@9.9+9")["sessions"] == 0, "a later update moved a session")
    # Sentry: crash after errors counts as crashed only; errored excludes crashed/abnormal
    check(want["crashed"] > 0 and want["abnormal"] > 0 and want["errored"] > 0,
          f"the data exercises every class: {want}")
    return model


def retried_and_concurrent(inst):
    """The same batch twice in a row and eight batches with overlapping sessions at once:
    every session counted once."""
    rng = random.Random(11)
    model = Model()
    base = [session(rng, "app@2.0+1", "ok", did=f"d{i % 50}") for i in range(400)]
    finals = [dict(u, init=False, status=rng.choice(["exited", "crashed", "abnormal"]),
                   errors=rng.randrange(0, 2)) for u in base]
    for u in base + finals:
        model.update(u)
    r = post(inst, base)
    check(r.status == 202, f"base: {r.status}")
    r = post(inst, base)   # a retry
    check(r.status == 202, f"retry: {r.status}")
    chunks = [finals[i::8] + base[i::8] for i in range(8)]
    results = []

    def send(c):
        results.append(post(inst, c).status)
    threads = [threading.Thread(target=send, args=(c,)) for c in chunks + chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(results == [202] * 16, f"concurrent batches: {results}")
    want, got = model.totals("app@2.0+1"), db_totals(inst, "app@2.0+1")
    check(got == want, f"retried/concurrent: stored {got}, model {want}")


def old_sessions_ignored(inst):
    rng = random.Random(3)
    old = [session(rng, "app@3.0", "crashed", started=NOW - datetime.timedelta(days=6))
           for _ in range(5)]
    new = [session(rng, "app@3.0", "exited") for _ in range(3)]
    r = post(inst, old + new)
    body = r.json() if r.status == 202 else {}
    check(body == {"accepted": 3, "ignored": 5}, f"old sessions: {r.status} {body}")
    check(db_totals(inst, "app@3.0")["sessions"] == 3, "old sessions counted")


def server_backends(inst):
    """Pids of the server's connections to its database (not this psql's)."""
    out = inst.psql(inst.db_url, "SELECT pid FROM pg_stat_activity WHERE datname = "
                    "current_database() AND pid <> pg_backend_pid() AND backend_type = "
                    "'client backend' ORDER BY pid")
    return {int(x) for x in out.split()}


def large_batches_keep_connections(inst):
    """Batches above 5,000 sessions run without the statement timeout for their transaction
    only: their connections go back to the pool (a new one per batch cost Postgres a fork,
    cold caches and every statement prepared again), and are counted like any other. The
    pool never closes a healthy idle connection, so the server's backends stay the same."""
    rng = random.Random(23)
    model = Model()
    sent = [session(rng, "app@5.0+1", "exited", did="warm")]
    r = post(inst, sent)
    check(r.status == 202, f"warm-up batch: {r.status}")
    before = server_backends(inst)
    for k in range(2):
        batch = [session(rng, "app@5.0+1", rng.choice(["exited", "crashed", "errored"]),
                         did=f"big-{i % 300}") for i in range(6000)]
        sent += batch
        r = post(inst, batch, gz=True)
        check(r.status == 202, f"large batch {k}: {r.status} {r.body[:200]!r}")
    after = server_backends(inst)
    check(before and after == before, f"large batches closed connections: before "
          f"{sorted(before)}, after {sorted(after)}")
    for u in sent:
        model.update(u)
    want, got = model.totals("app@5.0+1"), db_totals(inst, "app@5.0+1")
    check(got == want, f"large batches: stored {got}, model {want}")


def bad_input(inst):
    """4xx naming the field and its index; nothing of the batch counted."""
    rng = random.Random(5)
    good = [session(rng, "app@bad", "exited") for _ in range(10)]

    def expect(batch, field, status=400, gz=False, what=""):
        r = post(inst, batch, gz=gz)
        err = r.json().get("error", {}) if r.content_type == "application/json" else {}
        check(r.status == status, f"{what}: status {r.status}, want {status}: {r.body[:200]!r}")
        check(err.get("field") == field, f"{what}: field {err.get('field')!r}, want {field!r}")
        check(field.split(".")[0] in err.get("message", ""), f"{what}: message {err!r}")

    b = list(good)
    b[4] = dict(b[4], status="exploded")
    expect(b, "sessions[4].status", what="unknown status")
    b = list(good)
    b[7] = dict(b[7], duration_s=-1)
    expect(b, "sessions[7].duration_s", what="negative duration")
    b = list(good)
    b[2] = dict(b[2], did="x" * 257)
    expect(b, "sessions[2].did", what="did over 256 bytes")
    b = list(good)
    b[9] = dict(b[9], errors=-3)
    expect(b, "sessions[9].errors", what="negative errors")
    b = list(good)
    b[1] = {k: v for k, v in b[1].items() if k != "release"}
    expect(b, "sessions[1].release", what="no release")
    b = list(good)
    b[3] = dict(b[3], started="yesterday")
    expect(b, "sessions[3].started", what="bad time")
    many = [dict(good[0], sid=str(i)) for i in range(100001)]
    expect(many, "sessions[100000]", status=413, gz=True, what="100,001 sessions")
    r = post(inst, None, raw=b"{\"sessions\": [")
    check(r.status == 400 and r.json()["error"].get("field") == "body", f"bad JSON: {r.body!r}")
    r = inst.request("POST", "/api/v1/sessions", body=b"{}", token=inst.tokens["read"])
    check(r.status == 403, f"read token may not ingest: {r.status}")
    check(db_totals(inst, "app@bad")["sessions"] == 0, "a refused batch was partly counted")
    # exactly 100,000 is accepted
    ok = [dict(good[0], sid=f"max-{i}") for i in range(100000)]
    r = post(inst, ok, gz=True)
    check(r.status == 202, f"100,000 sessions: {r.status} {r.body[:200]!r}")
    check(db_totals(inst, "app@bad")["sessions"] == 100000, "100,000 sessions counted")


def users_above_exact_limit():
    """STACKSIFT_RELEASE_USERS_EXACT=200: 3,000 devices keep at most 200 rows, the estimate
    (rows * 2^level) lands near 3,000 and the crashed share near the true one."""
    with Instance("sessions_cap", extra_env={"STACKSIFT_RELEASE_USERS_EXACT": "200"}) as inst:
        rng = random.Random(13)
        batch = [session(rng, "cap@1", "crashed" if i % 4 == 0 else "exited", did=f"dev-{i}")
                 for i in range(3000)]
        r = post(inst, batch)
        check(r.status == 202, f"cap batch: {r.status} {r.body[:200]!r}")
        row = inst.psql(inst.db_url, "SELECT user_rows, crashed_rows, user_level, "
                        "(SELECT count(*) FROM release_users) FROM release_envs")
        rows, crashed, level, actual = (int(x) for x in row.strip().split("|"))
        check(rows == actual and rows <= 200, f"rows {rows} kept, {actual} stored")
        est = rows * 2 ** level
        check(level >= 4 and 1500 <= est <= 6000, f"estimate {est} (level {level}) for 3000")
        check(0.1 <= crashed / max(rows, 1) <= 0.45, f"crashed share {crashed}/{rows}")
        # the same devices again (new sessions): the kept ones are skipped by the node's
        # cache, the dropped ones stay out of the sample; the row counts still match
        again = [session(rng, "cap@1", "crashed" if i % 3 == 0 else "exited", did=f"dev-{i}")
                 for i in range(3000)]
        r = post(inst, again)
        check(r.status == 202, f"cap batch again: {r.status} {r.body[:200]!r}")
        row = inst.psql(inst.db_url, "SELECT user_rows, crashed_rows, user_level, "
                        "(SELECT count(*) FROM release_users), "
                        "(SELECT count(*) FROM release_users WHERE crashed) FROM release_envs")
        rows2, crashed2, level2, actual2, actual_crashed2 = (int(x) for x in
                                                             row.strip().split("|"))
        check(rows2 == actual2 and crashed2 == actual_crashed2 and rows2 <= 200 and
              level2 >= level, f"again: rows {rows2}/{actual2}, crashed {crashed2}/"
              f"{actual_crashed2}, level {level2}")
        share = sum(1 for i in range(3000) if i % 4 == 0 or i % 3 == 0) / 3000
        check(abs(crashed2 / max(rows2, 1) - share) <= 0.2, f"crashed share {crashed2}/{rows2}"
              f" vs {share:.2f}")


def start_second_node(inst):
    """Another `stacksift serve` on the same database: (process, port)."""
    port = free_port()
    env = inst.env()
    env.update({"STACKSIFT_LISTEN": f"127.0.0.1:{port}", "STACKSIFT_NODE_NAME": "b",
                "STACKSIFT_DATA_DIR": os.path.join(inst.tmp, "data-b")})
    log = open(os.path.join(inst.tmp, "serve-b.log"), "ab")
    proc = subprocess.Popen([inst.bin, "serve"], env=env, stdout=log, stderr=log)
    saved, inst.port = inst.port, port
    try:
        for _ in range(400):
            try:
                if proc.poll() is None and inst.request("GET", "/readyz").status == 200:
                    return proc, port
            except OSError:
                pass
            time.sleep(0.05)
    finally:
        inst.port = saved
    proc.kill()
    raise RuntimeError("the second node did not start")


def post_to(inst, port, sessions):
    saved, inst.port = inst.port, port
    try:
        return post(inst, sessions)
    finally:
        inst.port = saved


def device_cache_two_nodes(inst):
    """Each node remembers the devices it saw stored and skips their upserts: the counts stay
    exact when another node stores or crashes the same devices in between, and release_users
    holds exactly the rows release_envs counts."""
    rng = random.Random(19)
    model = Model()
    rel = "cache@1.0"
    proc, port_b = start_second_node(inst)
    try:
        rounds = [
            # node A stores devices 0-49, not crashed (and remembers them)
            ("a", [session(rng, rel, "exited", did=f"cd-{i}") for i in range(50)]),
            # node B crashes 0-9 and adds 50-59
            ("b", [session(rng, rel, "crashed", did=f"cd-{i}") for i in range(10)] +
                  [session(rng, rel, "exited", did=f"cd-{i}") for i in range(50, 60)]),
            # node A: crashes 0-19 (0-9 already crashed elsewhere, 10-19 new crashes), more
            # clean sessions of 0-59 (all stored: skipped by its cache for 0-49)
            ("a", [session(rng, rel, "crashed", did=f"cd-{i}") for i in range(20)] +
                  [session(rng, rel, "exited", did=f"cd-{i}") for i in range(60)]),
            # node B: its cache knows 0-9 crashed, 50-59 stored; new devices 60-69, and an
            # open session that crashes in a later batch (state change, not a new session)
            ("b", [session(rng, rel, "crashed", did=f"cd-{i}") for i in range(10)] +
                  [session(rng, rel, "exited", did=f"cd-{i}") for i in range(50, 70)] +
                  [session(rng, rel, "ok", did="cd-65", sid="cache-open-1")]),
            ("a", [dict(session(rng, rel, "crashed", did="cd-65", sid="cache-open-1"),
                        init=False)] +
                  [session(rng, rel, "exited", did=f"cd-{i}") for i in range(0, 70, 3)]),
        ]
        open_started = None
        for node, batch in rounds:
            for u in batch:
                if u["sid"] == "cache-open-1":   # the same start in every update
                    open_started = open_started or u["started"]
                    u["started"] = open_started
                model.update(u)
            r = post(inst, batch) if node == "a" else post_to(inst, port_b, batch)
            check(r.status == 202, f"device cache, node {node}: {r.status} {r.body[:200]!r}")
        want, got = model.totals(rel), db_totals(inst, rel)
        check(got == want, f"device cache across nodes: stored {got}, model {want}")
        check(want["users"] == 70 and want["crashed_users"] == 21, f"the data: {want}")
        rows = inst.psql(inst.db_url, "SELECT count(*), count(*) FILTER (WHERE crashed) "
                         "FROM release_users u JOIN release_envs e ON e.id = u.renv "
                         f"WHERE e.release = '{rel}'").strip()
        check(rows == "70|21", f"release_users rows (all, crashed): {rows}")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def frac(num, den):
    return None if den == 0 else num / den


def releases_api(inst, model):
    """GET /api/v1/releases and /api/v1/releases/{release}: the model's counts, exact rates
    (the double nearest each fraction), adoption over the last 24 hours, pagination."""
    r = inst.request("GET", "/api/v1/releases?limit=1000", token=inst.tokens["read"])
    check(r.status == 200, f"releases: {r.status} {r.body[:200]!r}")
    rows = {x["release"]: x for x in r.json()["releases"]} if r.status == 200 else {}
    keys = {"release", "sessions", "crashed", "abnormal", "errored", "users", "crashed_users",
            "crash_free_sessions", "crash_free_users", "first_seen", "last_seen",
            "new_issues", "adoption"}
    check(all(set(x) == keys for x in rows.values()), f"release fields: {list(rows.values())[:1]}")
    want = model.totals("app@1.0+1")
    got = rows.get("app@1.0+1", {})
    for k, v in want.items():
        check(got.get(k) == v, f"releases {k}: {got.get(k)} want {v}")
    check(got.get("crash_free_sessions") == frac(want["sessions"] - want["crashed"],
                                                 want["sessions"]),
          f"crash_free_sessions {got.get('crash_free_sessions')!r}")
    check(got.get("crash_free_users") == frac(want["users"] - want["crashed_users"],
                                              want["users"]),
          f"crash_free_users {got.get('crash_free_users')!r}")
    # every session of every release here started within the last 10 hours: adoption is the
    # release's share of all counted sessions
    total = sum(x["sessions"] for x in rows.values())
    check(got.get("adoption") == frac(want["sessions"], total),
          f"adoption {got.get('adoption')!r} want {want['sessions']}/{total}")
    check(all(0 <= x[k] <= 1 for x in rows.values() for k in
              ("crash_free_sessions", "crash_free_users", "adoption") if x[k] is not None),
          "rates in [0, 1]")
    # pagination: one at a time gives the same releases, newest first
    seen, cursor = [], None
    for _ in range(50):
        q = "/api/v1/releases?limit=1" + (f"&cursor={cursor}" if cursor else "")
        page = inst.request("GET", q, token=inst.tokens["read"]).json()
        seen += [x["release"] for x in page["releases"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    check(sorted(seen) == sorted(rows), f"paged {seen} vs {sorted(rows)}")
    r = inst.request("GET", "/api/v1/releases?environment=staging", token=inst.tokens["read"])
    check(r.status == 200 and r.json()["releases"] == [], f"no staging releases: {r.body[:100]!r}")
    r = inst.request("GET", "/api/v1/releases?cursor=nonsense", token=inst.tokens["read"])
    check(r.status == 400, f"bad cursor: {r.status}")
    # one release: the same fields, its days summing to its totals, its version
    r = inst.request("GET", "/api/v1/releases/app%401.0%2B1", token=inst.tokens["read"])
    check(r.status == 200, f"release get: {r.status} {r.body[:200]!r}")
    one = r.json() if r.status == 200 else {}
    check(all(one.get(k) == got.get(k) for k in keys), "one release = its list row")
    check(one.get("version") == "1.0", f"version {one.get('version')!r}")
    days = one.get("daily", [])
    check(sum(d["sessions"] for d in days) == want["sessions"] and
          sum(d["crashed"] for d in days) == want["crashed"], f"daily sums: {days}")
    check(isinstance(one.get("issues"), list), "issues listed")
    r = inst.request("GET", "/api/v1/releases/nothing%401", token=inst.tokens["read"])
    check(r.status == 404, f"unknown release: {r.status}")


def release_issues(inst):
    """A release's new issues and top issues, from reports of several versions: an issue is
    new in its lowest version by version_key (1.2 < 1.9 < 1.10, not text order), and its
    reports from a version are counted per release."""
    rng = random.Random(23)
    sent = {"0x1000": ["1.10", "1.10", "1.9", "1.2", "1.2", "1.2"],   # A: new in 1.2
            "0x2000": ["1.10"],                                        # B: new in 1.10
            "0x3000": ["1.9", "1.9"]}                                  # C: new in 1.9
    for frame, versions in sent.items():
        for v in versions:
            body = {"kind": "hang", "app": {"name": "relapp", "version": v}, "images": [],
                    "threads": [{"frames": [frame]}]}
            r = inst.request("POST", "/api/v1/reports", body=body, token=inst.tokens["ingest"])
            check(r.status == 202, f"report {frame} {v}: {r.status} {r.body[:120]!r}")
    total = sum(len(v) for v in sent.values())

    def grouped():
        r = inst.request("GET", "/api/v1/issues?app=relapp&limit=10", token=inst.tokens["read"])
        return r.status == 200 and sum(i["count"] for i in r.json()["issues"]) == total
    deadline = time.time() + 30
    while not grouped() and time.time() < deadline:
        time.sleep(0.2)
    check(grouped(), "the release reports were grouped")
    r = post(inst, [session(rng, f"relapp@{v}+1", "exited", sid=str(uuid.uuid4()))
                    for v in ("1.2", "1.9", "1.10")])
    check(r.status == 202, f"sessions: {r.status} {r.body[:120]!r}")
    rows = {}
    deadline = time.time() + 30
    while time.time() < deadline:
        r = inst.request("GET", "/api/v1/releases?limit=1000", token=inst.tokens["read"])
        rows = {x["release"]: x for x in r.json()["releases"]} if r.status == 200 else {}
        if all(f"relapp@{v}+1" in rows for v in ("1.2", "1.9", "1.10")):
            break
        time.sleep(0.2)
    got = {v: rows.get(f"relapp@{v}+1", {}).get("new_issues") for v in ("1.2", "1.9", "1.10")}
    check(got == {"1.2": 1, "1.9": 1, "1.10": 1}, f"new issues per release: {got} of {sorted(rows)}")
    r = inst.request("GET", "/api/v1/releases/relapp%401.10%2B1", token=inst.tokens["read"])
    top = r.json().get("issues", []) if r.status == 200 else []
    check([x["reports"] for x in top] == [2, 1], f"top issues of 1.10 by its reports: {top}")
    check([x["count"] for x in top] == [6, 1], f"top issues' counts: {top}")


def projects(inst):
    """Sessions of another project (by slug) count there only."""
    inst.psql(inst.db_url, "INSERT INTO projects (slug, name) VALUES ('second', 'Second')")
    rng = random.Random(17)
    batch = [session(rng, "app@1.0+1", "crashed", did="p2") for _ in range(3)]
    r = inst.request("POST", "/api/v1/sessions?project=second", token=inst.tokens["ingest"],
                     body={"sessions": batch})
    check(r.status == 202, f"project by slug: {r.status} {r.body[:120]!r}")
    r = inst.request("GET", "/api/v1/releases?project=second", token=inst.tokens["read"])
    rows = r.json()["releases"] if r.status == 200 else []
    check([(x["release"], x["sessions"], x["crashed"], x["users"]) for x in rows] ==
          [("app@1.0+1", 3, 3, 1)], f"the second project's releases: {rows}")
    r = inst.request("POST", "/api/v1/sessions?project=nowhere", token=inst.tokens["ingest"],
                     body={"sessions": batch})
    check(r.status == 400 and r.json()["error"].get("field") == "project",
          f"unknown project: {r.status} {r.body[:120]!r}")


def main():
    with Instance("sessions") as inst:
        model = every_status(inst)
        releases_api(inst, model)
        projects(inst)
        retried_and_concurrent(inst)
        old_sessions_ignored(inst)
        large_batches_keep_connections(inst)
        bad_input(inst)
        device_cache_two_nodes(inst)
        release_issues(inst)   # last: its sessions are not in the other tests' models
    users_above_exact_limit()
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
