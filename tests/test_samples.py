#!/usr/bin/env python3
"""test_samples - privacy-API samples and call sites through the real server and
Postgres: POST /api/v1/samples, GET /api/v1/callsites (filters, sorts, pages), the CSV,
new-in-build, a retried batch counted once, a late dSYM, and every bad-input case of the
issue answered 4xx with the field named and nothing stored.

Exactly once: batches stored by a node without workers are counted by two more nodes at
once, one killed with SIGKILL mid-way; every call site's count must still be exact.

Stacks are made of real functions of the fixture app: `stacksift lookup --json` maps every
4th address of FixtureApp (arm64-O2) and FixtureKit; frames are return addresses one
instruction past a whole (not inlined) address of the function, so the expected call site is
known without trusting the server's symbolication.
"""
import csv
import gzip
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_instance import Instance, check, checks_done, free_port  # noqa: E402

CL_UUID = "A1B2C3D4-0000-4000-8000-00000000C01A"   # CoreLocation: a system image, no dSYM
CL_LOAD = 0x1A0000000
APP_LOAD = 0x104000000
KIT_LOAD = 0x105000000


def manifest_fixture(fixtures, name):
    with open(os.path.join(fixtures, "manifest.json")) as f:
        man = json.load(f)
    for fx in man["fixtures"]:
        if fx["name"] == name:
            return fx
    raise SystemExit(f"fixture {name} missing from manifest.json")


def norm(name):
    """The signature's normalization of the fixtures' plain names: C++ loses its argument
    list, Objective-C is kept as is."""
    return name if name[:2] in ("-[", "+[") else name.split("(")[0]


def whole_functions(bin_path, fx, tmp):
    """{function: [file offsets from __TEXT]} for addresses that map to one frame only."""
    sl = fx["slices"][0]
    vm, size = int(sl["text_vmaddr"], 16), int(sl["text_vmsize"], 16)
    dwarf = os.path.join(os.environ["STACKSIFT_FIXTURES"], fx["dwarf"])
    addrs = "".join(f"0x{a:x}\n" for a in range(vm, vm + size, 4))
    out = subprocess.run([bin_path, "lookup", "--json", "-o", dwarf], input=addrs, text=True,
                         capture_output=True, check=True, timeout=120).stdout
    funcs = {}
    for line in out.splitlines():
        j = json.loads(line)
        frames = j.get("frames") or []
        if len(frames) != 1 or not frames[0].get("function"):
            continue
        fn = frames[0]["function"]
        if fn.startswith("_mh_") or fn == "main" or "block_invoke" in fn or "lambda" in fn:
            continue
        if "abort" in fn or "throw" in fn or "<" in fn or "operator" in fn:
            continue
        funcs.setdefault(fn, []).append(int(j["address"], 16) - vm)
    return {f: offs for f, offs in funcs.items() if len(offs) >= 2}


def app_image(uuid):
    return {"name": "FixtureApp", "uuid": uuid, "arch": "arm64", "load_address": hex(APP_LOAD),
            "size": 0x8000,
            "path": "/private/var/containers/Bundle/Application/0A1B/FixtureApp.app/FixtureApp"}


def kit_image(uuid):
    return {"name": "FixtureKit", "uuid": uuid, "arch": "arm64", "load_address": hex(KIT_LOAD),
            "size": 0x8000,
            "path": "/private/var/containers/Bundle/Application/0A1B/FixtureApp.app/"
                    "Frameworks/FixtureKit.framework/FixtureKit"}


CL_IMAGE = {"name": "CoreLocation", "uuid": CL_UUID, "arch": "arm64",
            "load_address": hex(CL_LOAD), "size": 0x100000,
            "path": "/System/Library/Frameworks/CoreLocation.framework/CoreLocation"}


def batch(build, device, images, samples, batch_id=None, version="1.4"):
    b = {"format_version": 1,
         "app": {"name": "FixtureApp", "bundle_id": "com.example.fixture", "version": version,
                 "build": build},
         "os": {"name": "iOS", "version": "17.4", "build": "21E219"},
         "device": {"model": "iPhone15,2", "id": device}, "arch": "arm64",
         "images": images, "samples": samples}
    if batch_id:
        b["batch_id"] = batch_id
    return b


def post(inst, body, gz=False, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if gz:
        data = gzip.compress(data)
        headers["Content-Encoding"] = "gzip"
    return inst.request("POST", "/api/v1/samples", data, headers=headers,
                        token=inst.tokens["ingest"])


def get(inst, path):
    r = inst.request("GET", path, token=inst.tokens["read"])
    return r


def wait_counted(inst, secs=30):
    deadline = time.time() + secs
    while time.time() < deadline:
        n = inst.psql(inst.db_url, "SELECT count(*) FROM sample_batches WHERE status = 'received'")
        if n.strip() == "0":
            return True
        time.sleep(0.1)
    return False


def all_callsites(inst, query=""):
    r = get(inst, "/api/v1/callsites?limit=1000" + query)
    check(r.status == 200, f"GET callsites{query}: 200 (got {r.status} {r.body[:200]!r})")
    return r.json() if r.status == 200 else {"callsites": [], "pending": {}}


def find(sites, tag, names):
    for c in sites:
        if c["tag"] == tag and [f["function"] for f in c["frames"]] == names:
            return c
    return None


def start_node(inst, name, workers):
    """One more `stacksift serve` on the instance's database: its own port and data dir."""
    env = inst.env()
    port = free_port()
    env.update({"STACKSIFT_LISTEN": f"127.0.0.1:{port}", "STACKSIFT_WORKERS": str(workers),
                "STACKSIFT_WORKER_BATCH": "2", "STACKSIFT_NODE_NAME": name,
                "STACKSIFT_DATA_DIR": os.path.join(inst.tmp, "data-" + name)})
    log = open(os.path.join(inst.tmp, f"serve-{name}.log"), "ab")
    return subprocess.Popen([inst.bin, "serve"], env=env, stdout=log, stderr=log)


def exactly_once_across_crashes():
    """Batches stored by a node without workers are counted by two other nodes at once, one
    of which is killed (SIGKILL) while it counts: every call is counted exactly once, and every
    call site's distinct devices are exact. A quarter of the batches were received 500 days
    ago (their receipt moved back before counting): a retention run then drops their days,
    and each call site's count and devices are those of the recent batches."""
    with Instance("samples_crash", workers=0) as inst:
        app = manifest_fixture(inst.fixtures, "arm64-O2")
        app_uuid = app["slices"][0]["uuid"]
        funcs = whole_functions(inst.bin, app, inst.tmp)
        names = sorted(funcs)[:8]
        inst.upload_dsym(app)
        rnd = random.Random(5)
        pc = hex(CL_LOAD + 0x40)
        images = [app_image(app_uuid), CL_IMAGE]
        expected, recent = {}, {}   # key -> [calls, {devices}]
        old = lambda n: n % 4 == 0   # noqa: E731  batches received 500 days ago
        for n in range(60):
            samples = []
            for _ in range(50):
                top = rnd.sample(names, 3)
                count = rnd.randrange(1, 5)
                samples.append({"tag": "T%d" % rnd.randrange(3), "count": count,
                                "frames": [pc] + [hex(APP_LOAD + funcs[fn][0] + 4) for fn in top]})
                key = (samples[-1]["tag"], tuple(norm(fn) for fn in top))
                for want in (expected, recent) if not old(n) else (expected,):
                    e = want.setdefault(key, [0, set()])
                    e[0] += count
                    e[1].add("device-%02d" % (n % 7))
            b = batch(str(200 + n % 3), "device-%02d" % (n % 7), images, samples,
                      batch_id=f"crash-{n}")
            r = post(inst, b, gz=True)
            check(r.status == 202, f"crash test batch {n}: 202 ({r.status})")
        queued = inst.psql(inst.db_url, "SELECT count(*) FROM sample_batches WHERE status = 'received'")
        check(queued.strip() == "60", f"60 batches wait: nobody counts on this node ({queued.strip()})")
        inst.psql(inst.db_url, "UPDATE sample_batches SET received_at = received_at - "
                               "interval '500 days' WHERE batch_id IN (%s)" %
                  ",".join(f"'crash-{n}'" for n in range(60) if old(n)))
        victim = start_node(inst, "victim", 2)
        survivor = start_node(inst, "survivor", 2)
        deadline = time.time() + 20
        while time.time() < deadline:   # kill the victim once counting has begun
            left = int(inst.psql(inst.db_url, "SELECT count(*) FROM sample_batches "
                                              "WHERE status = 'received'").strip())
            if left < 55:
                break
            time.sleep(0.02)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        check(left > 0, f"the victim died while batches were left ({left})")
        ok = False
        deadline = time.time() + 60
        while time.time() < deadline and not ok:
            ok = inst.psql(inst.db_url, "SELECT count(*) FROM sample_batches "
                                        "WHERE status = 'received'").strip() == "0"
            time.sleep(0.1)
        check(ok, "the survivor counted every batch left")
        survivor.send_signal(signal.SIGTERM)
        survivor.wait(timeout=30)
        def counts():
            got = {}
            for c in all_callsites(inst)["callsites"]:
                key = (c["tag"], tuple(f["function"] for f in c["frames"]))
                check(key not in got, f"one row a call site: {key}")
                got[key] = (c["count"], c["devices"])
            return got

        got = counts()
        want = {k: (v[0], len(v[1])) for k, v in expected.items()}
        calls = sum(v[0] for v in want.values())
        check(sum(v[0] for v in got.values()) == calls,
              f"every call counted once: {sum(v[0] for v in got.values())} of {calls}")
        check(got == want, f"each call site exact, calls and devices ({len(got)} of {len(want)} "
                           f"call sites; differ: {[(k, got.get(k), v) for k, v in want.items() if got.get(k) != v][:3]})")
        r = subprocess.run([inst.bin, "retention", "run", "--force"], env=inst.env(),
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"retention run: {r.returncode} {r.stderr[-300:]}")
        got = counts()
        want = {k: (v[0], len(v[1])) for k, v in recent.items()}
        check(got == want, f"after retention, each call site as its recent batches, calls and "
                           f"devices ({len(got)} of {len(want)} call sites; differ: "
                           f"{[(k, got.get(k), v) for k, v in want.items() if got.get(k) != v][:3]})")



def batches_parsed_once():
    """A batch POSTed to a node with workers is parsed once, by its intake: the worker that
    claims its row counts the checked batch the intake handed over (callsites_counted says
    handed=), not the row's text parsed again, and the counts are those of the text: the
    same stacks merged within a batch, a gzip batch, a retried batch_id (not handed twice),
    two batches of identical content (one row each)."""
    with Instance("samples_once", workers=1,
                  extra_env={"STACKSIFT_LOG_LEVEL": "debug"}) as inst:
        app = manifest_fixture(inst.fixtures, "arm64-O2")
        funcs = whole_functions(inst.bin, app, inst.tmp)
        names = sorted(funcs)[:4]
        check(len(names) == 4, f"fixture functions found ({len(names)})")
        inst.upload_dsym(app)
        pc = hex(CL_LOAD + 0x1234)
        s1 = [pc] + [hex(APP_LOAD + funcs[f][0] + 4) for f in names[:3]]
        s2 = [pc] + [hex(APP_LOAD + funcs[f][0] + 4) for f in names[1:]]
        images = [app_image(app["slices"][0]["uuid"]), CL_IMAGE]
        T = "CLLocationManager.requestLocation"
        b1 = batch("7", "device-1", images, [{"tag": T, "frames": s1, "count": 2},
                                             {"tag": T, "thread": "bg", "frames": s1},
                                             {"tag": T, "frames": s2, "count": 4}])
        b2 = batch("7", "device-2", images, [{"tag": T, "frames": s2}], batch_id="once-2")
        for body, gz in ((b1, False), (b2, True), (b2, False), (b1, False)):
            r = post(inst, body, gz=gz)
            check(r.status == 202, f"batch: 202 (got {r.status} {r.body[:200]!r})")
        check(wait_counted(inst), "every batch counted")
        sites = all_callsites(inst)["callsites"]
        got = sorted((c["frames"][0]["function"], c["count"], c["devices"]) for c in sites)
        want = sorted([(norm(names[0]), 6, 1), (norm(names[1]), 9, 2)])
        check(got == want, f"counts of the batches as stored: {got} (want {want})")
        batches = handed = 0
        with open(inst.log_path, "rb") as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "callsites_counted":
                    batches += int(ev.get("batches", 0))
                    handed += int(ev.get("handed", 0))
        check(batches == 3 and handed == 3,
              f"3 rows counted, each from its intake's parse (batches={batches} handed={handed})")
        m = inst.request("GET", "/metrics", token=inst.tokens["read"]).body.decode()
        check("stacksift_sample_batches_counted_total 3\n" in m and
              "stacksift_sample_batches_handed_total 3\n" in m and
              "stacksift_callsite_commit_failures_total 0\n" in m,
              "/metrics: 3 batches counted, 3 of them handed over, no failed commit")


def version_key_per_build():
    """version_key (a build's sort key, 1.10 after 1.9) is computed once per distinct build of
    a commit or a read, not once per (call site, build) row: 12 call sites seen in 4 builds,
    one batch (and so one commit) per build, latest build first so that every commit moves
    every call site's first build; then one read of every call site. Postgres counts the
    function's calls (track_functions), read once the server has stopped and its sessions
    have flushed their statistics."""
    builds = ["10.0", "2.0", "1.10", "1.9"]
    tags = [f"API.number{i}" for i in range(12)]
    with Instance("samples_vkey", workers=1, db_settings={"track_functions": "all"}) as inst:
        app = manifest_fixture(inst.fixtures, "arm64-O2")
        funcs = whole_functions(inst.bin, app, inst.tmp)
        names = sorted(funcs)[:3]
        check(len(names) == 3, f"fixture functions found ({len(names)})")
        inst.upload_dsym(app)
        stack = [hex(CL_LOAD + 0x1234)] + [hex(APP_LOAD + funcs[f][0] + 4) for f in names]
        images = [app_image(app["slices"][0]["uuid"]), CL_IMAGE]
        for i, b in enumerate(builds):
            r = post(inst, batch(b, f"device-{i}", images,
                                 [{"tag": t, "frames": stack, "count": 1} for t in tags]))
            check(r.status == 202, f"batch of build {b}: 202 (got {r.status} {r.body[:200]!r})")
            check(wait_counted(inst), f"batch of build {b} counted")
        sites = all_callsites(inst)["callsites"]
        check(len(sites) == 12 and all(c["count"] == 4 for c in sites),
              f"12 call sites of 4 calls ({[(c['tag'], c['count']) for c in sites]})")
        check(all(c["builds"] == ["1.9", "1.10", "2.0", "10.0"] and c["first_seen_build"] == "1.9"
                  for c in sites), f"builds in version order, first seen in 1.9 "
              f"({[(c['builds'], c['first_seen_build']) for c in sites][:2]})")
        inst.proc.send_signal(signal.SIGTERM)
        inst.proc.wait(timeout=30)
        deadline = time.time() + 30
        while time.time() < deadline and inst.psql(
                inst.admin_url, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                f"'{inst.dbname}'").strip() != "0":
            time.sleep(0.1)
        calls = inst.psql(inst.db_url, "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions "
                                       "WHERE funcname = 'version_key'").strip()
        # per commit: its build and the first build stored (2); the read: its 4 builds. Per
        # row it was 12 a commit, 24 more for the first builds moved, 48 for the read.
        check(calls.isdigit() and 0 < int(calls) <= 4 * 2 + 4,
              f"version_key called once per distinct build: {calls} calls (at most 12)")


def main():
    batches_parsed_once()
    version_key_per_build()
    exactly_once_across_crashes()
    with Instance("samples", workers=1) as inst:
        bin_path = inst.bin
        app = manifest_fixture(inst.fixtures, "arm64-O2")
        kit = manifest_fixture(inst.fixtures, "kit")
        app_uuid, kit_uuid = app["slices"][0]["uuid"], kit["slices"][0]["uuid"]
        funcs = whole_functions(bin_path, app, inst.tmp)
        kfuncs = whole_functions(bin_path, kit, inst.tmp)
        names = sorted(funcs)
        check(len(names) >= 4 and len(kfuncs) >= 1, f"fixture functions found ({len(names)}, "
              f"{len(kfuncs)})")
        f1, f2, f3, f4 = names[:4]
        kf = sorted(kfuncs)[0]

        def ret(fn, k=0):   # a return address inside `fn`: one instruction past a whole address
            return hex(APP_LOAD + funcs[fn][k] + 4)

        def kret(fn):
            return hex(KIT_LOAD + kfuncs[fn][0] + 4)

        pc = hex(CL_LOAD + 0x1234)
        images = [app_image(app_uuid), CL_IMAGE]
        stack_a = [pc, ret(f1), ret(f2), ret(f3), ret(f4)]
        stack_a2 = [pc, ret(f1, 1), ret(f2, 1), ret(f3), ret(f4)]   # other addresses, same site
        stack_c = [pc, ret(f2), ret(f3), ret(f4)]
        stack_d = [pc, ret(f4), ret(f1), ret(f2)]
        T1, T2 = "CLLocationManager.requestLocation", "UIPasteboard.string"

        # ---- the dSYM of the app first ----
        inst.upload_dsym(app)

        # ---- accepted batches ----
        b1 = batch("100", "device-0001", images, [
            {"tag": T1, "thread": "main", "frames": stack_a, "count": 1},
            {"tag": T1, "frames": stack_a2, "count": 2},
            {"tag": T2, "frames": stack_a, "count": 5},
            {"tag": T1, "frames": stack_c}])
        r = post(inst, b1)
        check(r.status == 202, f"batch 1: 202 (got {r.status} {r.body[:300]!r})")
        check(r.status == 202 and r.json() == {"accepted": 4, "calls": 9},
              f"batch 1 answer: {r.body!r}")
        b2 = batch("101", "device-0002", images, [
            {"tag": T1, "frames": stack_a, "count": 4},
            {"tag": T1, "frames": stack_d, "count": 2}], batch_id="b2-device-0002")
        r = post(inst, b2, gz=True)
        check(r.status == 202 and r.json() == {"accepted": 2, "calls": 6},
              f"batch 2 (gzip): 202 (got {r.status} {r.body[:300]!r})")
        r = post(inst, b2, gz=True)
        check(r.status == 202 and r.json().get("duplicate") is True,
              f"batch 2 retried: 202 duplicate (got {r.status} {r.body!r})")
        b2x = json.loads(json.dumps(b2))
        b2x["samples"][0]["count"] = 5
        r = post(inst, b2x)
        check(r.status == 409 and r.json()["error"]["field"] == "batch_id",
              f"batch_id reused for other samples: 409 naming batch_id (got {r.status} {r.body!r})")
        # same stacks from a third device in build 101 (an unknown tag is fine too)
        odd_tag = "Custom API: " + "x" * 188
        b3 = batch("101", "device-0003", images, [
            {"tag": T1, "frames": stack_a, "count": 1},
            {"tag": odd_tag, "frames": stack_c, "count": 1}])
        r = post(inst, b3)
        check(r.status == 202, f"batch 3 (200-byte unknown tag): 202 (got {r.status} {r.body!r})")
        check(wait_counted(inst), "every batch counted within 30 s")

        # ---- the call sites ----
        got = all_callsites(inst)
        sites = got["callsites"]
        n1, n2, n3, n4 = norm(f1), norm(f2), norm(f3), norm(f4)
        a1 = find(sites, T1, [n1, n2, n3])
        check(a1 is not None, f"call site {T1} {n1}/{n2}/{n3} listed: {json.dumps(sites)[:800]}")
        if a1:
            check(a1["count"] == 1 + 2 + 4 + 1, f"its count 8 (got {a1['count']})")
            check(a1["devices"] == 3, f"its devices 3 (got {a1['devices']})")
            check(a1["builds"] == ["100", "101"], f"its builds (got {a1['builds']})")
            check(a1["first_seen_build"] == "100", f"first seen in 100 (got {a1['first_seen_build']})")
            check(a1["frames"][0]["image"] == "FixtureApp" and a1["frames"][0]["line"] > 0,
                  f"frames carry image and line: {a1['frames'][0]}")
            st = a1["stack"]
            check(st[0]["image"] == "CoreLocation" and st[0]["in_app"] is False and
                  st[0]["function"] is None, f"the stack starts in the API: {st[0]}")
            check(any(s["function"] and norm(s["function"]) == n1 and s["in_app"] for s in st),
                  f"the stack holds {n1} in-app")
            check(a1["first_seen"] <= a1["last_seen"], "first_seen <= last_seen")
        a2 = find(sites, T2, [n1, n2, n3])
        check(a2 is not None and a2["count"] == 5 and a2["devices"] == 1,
              f"same stack, other API: its own call site (count 5): {a2}")
        c1 = find(sites, T1, [n2, n3, n4])
        check(c1 is not None and c1["count"] == 1, f"stack C: count 1 ({c1})")
        d1 = find(sites, T1, [n4, n1, n2])
        check(d1 is not None and d1["count"] == 2 and d1["first_seen_build"] == "101",
              f"stack D: count 2, first in 101 ({d1})")
        o1 = find(sites, odd_tag, [n2, n3, n4])
        check(o1 is not None and o1["count"] == 1, "the unknown tag has its call site")
        total = sum(c["count"] for c in sites)
        check(total == 9 + 6 + 2, f"every accepted call counted once (total {total}, want 17)")
        check(len(sites) == 5, f"5 call sites (got {len(sites)})")
        counts = [c["count"] for c in sites]
        check(counts == sorted(counts, reverse=True), "sorted by count, descending")

        # ---- filters ----
        by_build = all_callsites(inst, "&build=101")["callsites"]
        a1b = find(by_build, T1, [n1, n2, n3])
        check(a1b is not None and a1b["count"] == 5 and a1b["devices"] == 2 and
              a1b["builds"] == ["101"], f"build=101 counts only build 101 ({a1b})")
        check(find(by_build, T2, [n1, n2, n3]) is None, "build=101 leaves out build-100-only sites")
        new = all_callsites(inst, "&new_in_build=101")["callsites"]
        check(sorted((c["tag"], c["frames"][0]["function"]) for c in new) ==
              sorted([(T1, n4), (odd_tag, n2)]),
              f"new_in_build=101: stack D and the new tag ({[(c['tag'][:20], c['frames'][0]['function']) for c in new]})")
        by_tag = all_callsites(inst, "&tag=UIPasteboard.string")["callsites"]
        check(len(by_tag) == 1 and by_tag[0]["tag"] == T2, "tag= filters by API")
        by_q = all_callsites(inst, "&q=" + n4.upper()[:12])["callsites"]
        check(len(by_q) == 3, f"q= finds frames case-insensitively (got {len(by_q)})")
        by_v = all_callsites(inst, "&version=9.9")["callsites"]
        check(by_v == [], "version=9.9: nothing")
        dev = all_callsites(inst, "&sort=devices")["callsites"]
        check([c["devices"] for c in dev] == sorted((c["devices"] for c in dev), reverse=True),
              "sort=devices")
        check(get(inst, "/api/v1/callsites?sort=bogus").status == 400, "sort=bogus: 400")
        check(get(inst, "/api/v1/callsites?cursor=zz").status == 400, "bad cursor: 400")
        check(inst.request("GET", "/api/v1/callsites").status == 401, "no token: 401")
        # pages of 2 give the same rows in the same order
        seen, cursor, pages = [], None, 0
        while pages < 10:
            q = "/api/v1/callsites?limit=2" + (f"&cursor={cursor}" if cursor else "")
            page = get(inst, q).json()
            seen += [c["id"] for c in page["callsites"]]
            cursor = page["next_cursor"]
            pages += 1
            if not cursor:
                break
        check(seen == [c["id"] for c in sites] and pages == 3, f"pages of 2: {seen} in {pages}")

        # ---- CSV ----
        r = get(inst, "/api/v1/callsites.csv")
        check(r.status == 200 and r.content_type == "text/csv", f"CSV: 200 text/csv ({r.status})")
        text = r.body.decode()
        check(text.endswith("\r\n") and "\r\n" in text.split("\n")[0] + "\n", "CSV lines end CRLF")
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        check(len(rows) == len(sites), f"CSV has every call site ({len(rows)})")
        check([int(x["id"]) for x in rows] == [c["id"] for c in sites], "CSV rows in API order")
        row = next((x for x in rows if x["tag"] == odd_tag), None)
        check(row is not None and row["frame_1"].startswith(n2) and row["count"] == "1",
              f"CSV row of the unknown tag: {row}")
        check(all(x["builds"] for x in rows) and rows[0]["first_seen_build"] in ("100", "101"),
              "CSV builds and first build")
        r = get(inst, "/api/v1/callsites.csv?build=100")
        rows100 = list(csv.DictReader(io.StringIO(r.body.decode(), newline="")))
        check(len(rows100) == 3, f"CSV honours filters ({len(rows100)} rows for build 100)")

        # ---- a late dSYM: FixtureKit frames wait, then count ----
        kit_images = [app_image(app_uuid), kit_image(kit_uuid), CL_IMAGE]
        stack_k = [pc, kret(kf), ret(f1), ret(f2)]
        bk = batch("102", "device-0001", kit_images, [{"tag": T1, "frames": stack_k, "count": 7}])
        check(post(inst, bk).status == 202, "batch with FixtureKit frames: 202")
        bk2 = batch("102", "device-0004", kit_images, [{"tag": T1, "frames": stack_k, "count": 3}])
        check(post(inst, bk2, gz=True).status == 202, "second one: 202")
        check(wait_counted(inst), "kit batches counted")
        got = all_callsites(inst)
        check(got["pending"] == {"stacks": 1, "calls": 10},
              f"one pending stack of 10 calls while FixtureKit has no dSYM ({got['pending']})")
        check(len(got["callsites"]) == 5, "nothing counted for it yet")
        m = inst.request("GET", "/metrics", token=inst.tokens["read"]).body.decode()
        check("stacksift_callsite_pending_calls 10\n" in m and
              "stacksift_sample_batches_queued 0\n" in m, "/metrics: 10 pending calls, no batch queued")
        r = inst.upload_dsym(kit)
        check(r.status == 201, f"FixtureKit dSYM upload: {r.status}")
        deadline, k1 = time.time() + 30, None
        while time.time() < deadline and k1 is None:
            k1 = find(all_callsites(inst)["callsites"], T1, [norm(kf), n1, n2])
            time.sleep(0.2)
        check(k1 is not None and k1["count"] == 10 and k1["devices"] == 2 and
              k1["builds"] == ["102"], f"after the dSYM: call site {norm(kf)}/{n1}/{n2} with 10 calls ({k1})")
        check(all_callsites(inst)["pending"] == {"stacks": 0, "calls": 0}, "nothing pending")

        # ---- projects: a batch sent with a project's DSN key counts in that project only ----
        p = subprocess.run([inst.bin, "project", "create", "privacy-qa"], env=inst.env(),
                           capture_output=True, text=True, timeout=30)
        m = re.search(r"^DSN=\w+://([0-9a-fA-F]+)@[^/]+/(\d+)$", p.stdout, re.M)
        check(p.returncode == 0 and m is not None, f"project create: {p.stdout!r} {p.stderr!r}")
        key, pid = m.group(1), int(m.group(2))
        # the same batch_id as a default-project batch: each project has its own batch ids
        bp = batch("100", "device-0100", images, [{"tag": T1, "frames": stack_a, "count": 6}],
                   batch_id="b2-device-0002")
        deadline = time.time() + 10
        while True:   # the server learns new keys at its next key-table reload
            r = inst.request("POST", f"/api/v1/samples?sentry_key={key}", json.dumps(bp).encode(),
                             headers={"Content-Type": "application/json"})
            if r.status != 401 or time.time() > deadline:
                break
            time.sleep(0.1)
        check(r.status == 202 and r.json() == {"accepted": 1, "calls": 6},
              f"batch with the project's DSN key: 202, not a duplicate (got {r.status} {r.body!r})")
        check(wait_counted(inst), "the project's batch counted")
        mine = all_callsites(inst, f"&project={pid}")["callsites"]
        check(len(mine) == 1 and mine[0]["count"] == 6 and mine[0]["devices"] == 1 and
              mine[0]["first_seen_build"] == "100",
              f"project {pid} has its own call site of 6 calls from 1 device ({mine})")
        a1d = find(all_callsites(inst, "&project=1")["callsites"], T1, [n1, n2, n3])
        check(a1d is not None and a1d["count"] == 8 and a1d["devices"] == 3,
              f"the default project's call site is unchanged (8 calls, 3 devices: {a1d})")
        owners = inst.psql(inst.db_url, "SELECT project_id FROM sample_batches WHERE "
                                        "batch_id = 'b2-device-0002' ORDER BY 1").split()
        check(owners == ["1", str(pid)], f"the batch rows belong to projects 1 and {pid} ({owners})")

        # ---- bad input: 4xx naming the field, nothing stored ----
        before = inst.psql(inst.db_url, "SELECT count(*) FROM sample_batches").strip()

        def bad(body, status, field, raw=None, gz=False, what=""):
            r = post(inst, body, gz=gz, raw=raw)
            ok = r.status == status
            try:
                err = r.json()["error"]
            except (ValueError, KeyError):
                err = {}
            check(ok and err.get("field") == (field or None) and err.get("message", "").startswith(field),
                  f"{what}: {status} naming {field} (got {r.status} {r.body[:200]!r})")

        ok_sample = {"tag": T1, "frames": stack_a}
        no_uuid = dict(app_image(app_uuid))
        del no_uuid["uuid"]
        bad(batch("103", "d", [no_uuid, CL_IMAGE], [ok_sample]), 400, "images[0].uuid",
            what="image without UUID")
        bad(batch("103", "d", images, [ok_sample, {"tag": T1, "frames": [pc, "0x7000000"]}]),
            400, "samples[1].frames[1]", what="frame in no image")
        bad(batch("103", "d", images, [ok_sample, {"tag": T1, "frames": stack_a, "count": 0}]),
            400, "samples[1].count", what="count 0")
        bad(batch("103", "d", images, [{"tag": T1, "frames": stack_a, "count": 1000001}]),
            400, "samples[0].count", what="count over 10^6")
        bad(batch("103", "d", images, [{"tag": T1, "frames": [pc] * 1000}]), 413,
            "samples[0].frames", what="1,000 frames")
        bad(batch("103", "d", images, [{"tag": "t" * 201, "frames": stack_a}]), 400,
            "samples[0].tag", what="tag of 201 bytes")
        bad(batch("103", "d", images, [{"tag": "t", "frames": [pc]}] * 100001), 413, "samples",
            gz=True, what="100,001 samples")
        r = inst.request("POST", "/api/v1/samples", b"\x1f\x8b\x08\x00\x00\x00\x00\x00garbage",
                         headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
                         token=inst.tokens["ingest"])
        check(r.status == 400 and r.json()["error"]["field"] == "body",
              f"bad gzip: 400 naming body (got {r.status} {r.body[:200]!r})")
        bad(None, 400, "", raw=b"{not json", what="malformed JSON")
        r = inst.request("POST", "/api/v1/samples", b"{}", token=inst.tokens["read"],
                         headers={"Content-Type": "application/json"})
        check(r.status == 403, f"read token cannot post samples ({r.status})")
        after = inst.psql(inst.db_url, "SELECT count(*) FROM sample_batches").strip()
        check(before == after, f"no bad batch stored ({before} -> {after})")

        # ---- a stored batch the workers cannot read (a bug) is skipped, not a stall ----
        inst.psql(inst.db_url, "INSERT INTO sample_batches (app, sha256, build, device, samples, "
                               "calls, canonical) VALUES ('com.example.fixture', 'x', '1', 'd', 1, 1, "
                               "'{\"format_version\":1')")
        r = post(inst, batch("104", "device-0009", images, [{"tag": "After.poison", "frames": stack_a}]))
        check(r.status == 202, "a batch after the unreadable one: 202")
        deadline, after_poison = time.time() + 30, []
        while time.time() < deadline and not after_poison:
            after_poison = all_callsites(inst, "&tag=After.poison")["callsites"]
            time.sleep(0.1)
        check(len(after_poison) == 1 and after_poison[0]["count"] == 1,
              "the batch behind an unreadable one is counted")
        left = inst.psql(inst.db_url, "SELECT count(*) FROM sample_batches WHERE status = 'received'")
        check(left.strip() == "1", f"the unreadable batch stays queued for a fixed server ({left.strip()})")
        with open(inst.log_path, "rb") as f:
            check(b"callsites_row_skipped" in f.read(), "and its skip is logged")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
