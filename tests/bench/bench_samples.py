#!/usr/bin/env python3
"""bench_samples.py [--devices N] [--samples N] [--builds N] [--paths N] [--depth N] [--threads N]
                   [--runs N] [--min-rate R]

Privacy-API samples at fleet volume, end to end through a real `stacksift serve`
and Postgres (tests/web_instance.py: its own database in STACKSIFT_TEST_DATABASE_URL's
cluster, FixtureApp's and FixtureKit's dSYMs uploaded first):

  DEVICES x SAMPLES stack samples per build, BUILDS builds, 5 API tags; each device's samples
  of a build are one gzip batch (format of docs/report-formats.md "Sample batches"), its own
  ASLR slide; stacks come from a pool per tag: PATHS call paths (each a call site) through
  the fixture app's real functions, symbolicated through its uploaded dSYM, DEPTH in-app
  frames deep below the API's frame, each path with variants below the top frames, every
  later build adding a path; then system frames (no dSYM) down to the run loop, as a user's
  stack has. Most stacks repeat, as on a real fleet. THREADS client threads post the batches
  (keep-alive).

Measured per run: samples/s posted until visible, from the first POST until GET
/api/v1/callsites shows every call site with exactly the expected count (and the totals per
tag match); the split: post_s (until the last batch is answered 202) and count_lag_s (from
then until every count is exact); the CPU time the server, the whole Postgres cluster and this
client spent meanwhile, per sample; callsites_get_ms, the median of 5 reads of every call site
once all are counted; the machine's load: /proc/loadavg's 1-minute figure before
and after, and other_cores, the cores that every other process kept busy during the run
(/proc/stat's busy time less ours): on a shared machine the rate swings with that load far more
than the CPU per sample does. The server's peak RSS.

RUNS runs (default 1), each on a fresh instance and database (the same batches): one JSON line
per run, then a summary line (the last) with the median, min and max rate and the median CPU
per sample. Exits 1 when a count is not exact, or the median rate is under --min-rate.
Defaults are the issue's size (100 x 1,000 x 4 builds, 24 paths a tag: 135 call sites, 12
in-app frames, 4 threads); the ctest runs it tiny.
"""
import argparse
import gzip
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from web_instance import Instance  # noqa: E402
from proc_cpu import TICK, cluster_cpu_s, proc_cpu_s  # noqa: E402

TAGS = ["CLLocationManager.requestLocation", "UIPasteboard.string",
        "PHPhotoLibrary.requestAuthorization", "CNContactStore.enumerateContacts",
        "ASIdentifierManager.advertisingIdentifier"]
SYS = [("CoreLocation", "/System/Library/Frameworks/CoreLocation.framework/CoreLocation"),
       ("UIKitCore", "/System/Library/PrivateFrameworks/UIKitCore.framework/UIKitCore"),
       ("CoreFoundation", "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation"),
       ("libdispatch.dylib", "/usr/lib/system/libdispatch.dylib")]
SYS_SIZE = 0x400000


def whole_functions(bin_path, fixtures, fx):
    """{function: [offsets from __TEXT]} of addresses that map to one plain-named function."""
    sl = fx["slices"][0]
    vm, size = int(sl["text_vmaddr"], 16), int(sl["text_vmsize"], 16)
    addrs = "".join(f"0x{a:x}\n" for a in range(vm, vm + size, 4))
    out = subprocess.run([bin_path, "lookup", "--json", "-o", os.path.join(fixtures, fx["dwarf"])],
                         input=addrs, text=True, capture_output=True, check=True,
                         timeout=120).stdout
    funcs = {}
    for line in out.splitlines():
        j = json.loads(line)
        fr = j.get("frames") or []
        if len(fr) != 1 or not fr[0].get("function"):
            continue
        fn = fr[0]["function"]
        if (fn.startswith("_mh_") or fn == "main" or "block_invoke" in fn or "lambda" in fn or
                "anonymous" in fn or "<" in fn or "operator" in fn or "abort" in fn or
                "throw" in fn or fn.startswith("(")):
            continue
        funcs.setdefault(fn, []).append(int(j["address"], 16) - vm)
    return {f: o for f, o in funcs.items() if len(o) >= 2}


def norm(fn):
    """The signature's normalization of the fixtures' plain names: C++ loses its argument
    list, Objective-C is kept as is."""
    return fn if fn[:2] in ("-[", "+[") else fn.split("(")[0]


def plan(args, funcs):
    """The workload: per build, per device, a list of (tag, path, variant) samples; and the
    expected count per call site (tag, top-3 normalized names)."""
    names = sorted(funcs)
    rnd = random.Random(13)
    paths = {}   # tag -> list of (first build index, [in-app functions, top first])
    for t, tag in enumerate(TAGS):
        ps = []
        for p in range(args.paths + args.builds - 1):
            first = 0 if p < args.paths else p - args.paths + 1
            ps.append((first, rnd.sample(names, 3) +
                       [rnd.choice(names) for _ in range(args.depth - 3 + 2)]))
        paths[tag] = ps
    expected = {}
    work = []   # (build, device, [(tag, path index, variant, count)])
    for b in range(args.builds):
        for d in range(args.devices):
            samples = []
            for _ in range(args.samples):
                tag = TAGS[rnd.randrange(len(TAGS))]
                live = [i for i, (first, _) in enumerate(paths[tag]) if first <= b]
                # most calls come from a few hot paths, as on a real device, and every path
                # is taken now and then
                p = live[int(len(live) * rnd.random() ** 3)]
                count = 1 if rnd.random() < 0.8 else rnd.randrange(2, 4)
                samples.append((tag, p, rnd.randrange(3), count))
                top = tuple(norm(f) for f in paths[tag][p][1][:3])
                expected[(tag, top)] = expected.get((tag, top), 0) + count
            work.append((b, d, samples))
    return paths, expected, work


def make_batches(args, funcs, app_uuid, paths, work):
    rnd = random.Random(42)
    out = []
    for b, d, samples in work:
        app_load = 0x100000000 + rnd.randrange(1, 4096) * 0x4000
        sys_load = [0x180000000 + i * 0x10000000 + rnd.randrange(256) * 0x4000
                    for i in range(len(SYS))]
        images = [{"name": "FixtureApp", "uuid": app_uuid, "arch": "arm64",
                   "load_address": hex(app_load), "size": 0x8000,
                   "path": "/private/var/containers/Bundle/Application/B/FixtureApp.app/FixtureApp"}]
        for i, (name, path) in enumerate(SYS):
            images.append({"name": name, "uuid": "%08X-0000-4000-8000-%012X" % (0xA0 + i, 0x5D + i),
                           "arch": "arm64", "load_address": hex(sys_load[i]), "size": SYS_SIZE,
                           "path": path})
        ret = lambda fn, k=0: hex(app_load + funcs[fn][k % len(funcs[fn])] + 4)   # noqa: E731
        body = []
        for tag, p, variant, count in samples:
            fns = paths[tag][p][1]
            api = TAGS.index(tag) % len(SYS)
            frames = [hex(sys_load[api] + 0x1000 + 0x40 * TAGS.index(tag))]
            frames += [ret(f) for f in fns[:3]]
            # variants below the top: a path's deeper in-app frames, called from two places
            frames += [ret(f, variant) for f in fns[3 + variant % 2:len(fns) - 1 + variant % 2]]
            frames += [hex(sys_load[1] + 0x2000 + 0x10 * k + 4) for k in range(6)]
            frames += [hex(sys_load[2] + 0x3000 + 0x10 * k + 4) for k in range(4)]
            frames += [hex(sys_load[3] + 0x100 + 4)]
            s = {"tag": tag, "thread": "main", "frames": frames}
            if count != 1:
                s["count"] = count
            body.append(s)
        doc = {"format_version": 1, "batch_id": f"b{b}-d{d}",
               "app": {"name": "FixtureApp", "bundle_id": "com.example.fixture",
                       "version": "1.%d" % (b // 2), "build": str(100 + b)},
               "os": {"name": "iOS", "version": "17.4", "build": "21E219"},
               "device": {"model": "iPhone15,2", "id": "device-%04d" % d}, "arch": "arm64",
               "images": images, "samples": body}
        out.append(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), 6))
    return out


def post_all(inst, batches, threads, errors):
    token = inst.tokens["ingest"]

    def run(k):
        conn = http.client.HTTPConnection("127.0.0.1", inst.port, timeout=60)
        for i in range(k, len(batches), threads):
            conn.request("POST", "/api/v1/samples", batches[i],
                         {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                          "Content-Encoding": "gzip"})
            r = conn.getresponse()
            body = r.read()
            if r.status != 202:
                errors.append(f"batch {i}: {r.status} {body[:200]!r}")
        conn.close()

    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    return ts


def counts_now(inst):
    conn = http.client.HTTPConnection("127.0.0.1", inst.port, timeout=60)
    conn.request("GET", "/api/v1/callsites?limit=1000",
                 headers={"Authorization": f"Bearer {inst.tokens['read']}"})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    if r.status != 200:
        return None
    got = {}
    for c in json.loads(body)["callsites"]:
        got[(c["tag"], tuple(f["function"] for f in c["frames"]))] = c["count"]
    return got


def machine_busy_s():
    """CPU seconds all cores spent busy so far (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / TICK


def loadavg1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def rss_peak_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def one_run(args, fx, funcs, plan_, batches):
    """One run on a fresh instance: its JSON result (a dict)."""
    paths, expected, work = plan_
    nsamples = args.devices * args.samples * args.builds
    calls = sum(expected.values())
    env = {"STACKSIFT_HTTP_THREADS": "4", "STACKSIFT_LOG_LEVEL": "warn"}
    with Instance("bench_samples", extra_env=env, workers=args.workers) as inst:
        with open(os.path.join(inst.fixtures, fx["dwarf"]), "rb") as f:
            r = inst.request("POST", "/api/v1/dsyms?name=FixtureApp", f.read(),
                             token=inst.tokens["upload"], timeout=120)
        if r.status not in (200, 201):
            raise SystemExit(f"dSYM upload failed: {r.status} {r.body[:200]!r}")
        datadir = inst.psql(inst.db_url, "SHOW data_directory").strip()
        with open(os.path.join(datadir, "postmaster.pid")) as f:
            postmaster = int(f.readline())
        errors = []
        load0 = loadavg1()
        pg_cpu0, srv_cpu0 = cluster_cpu_s(postmaster), proc_cpu_s(inst.proc.pid)
        own0, busy0 = sum(os.times()[:2]), machine_busy_s()
        t0 = time.time()
        ts = post_all(inst, batches, args.threads, errors)
        for t in ts:
            t.join()
        posted = time.time() - t0
        exact, got = False, {}
        while time.time() - t0 < args.timeout and not errors:
            got = counts_now(inst) or {}
            if got == expected:
                exact = True
                break
            time.sleep(0.05)
        elapsed = time.time() - t0
        pg_cpu, srv_cpu = cluster_cpu_s(postmaster) - pg_cpu0, proc_cpu_s(inst.proc.pid) - srv_cpu0
        own, busy = sum(os.times()[:2]) - own0, machine_busy_s() - busy0
        load1 = loadavg1()
        # what one read of the call sites costs once everything is counted (the polls above
        # are part of the CPU figures)
        get_ms = []
        for _ in range(5 if exact else 0):
            g0 = time.time()
            counts_now(inst)
            get_ms.append((time.time() - g0) * 1e3)
        rss = rss_peak_mb(inst.proc.pid)
        log_tail = inst.tail_log() if not exact else ""
    per_tag_ok = all(sum(v for (t, _), v in got.items() if t == tag) ==
                     sum(v for (t, _), v in expected.items() if t == tag) for tag in TAGS)
    rate = nsamples / elapsed if exact else 0.0
    res = {"bench": "samples", "devices": args.devices, "samples": args.samples,
           "builds": args.builds, "paths": args.paths, "depth": args.depth,
           "threads": args.threads, "batches": len(batches),
           "samples_total": nsamples, "calls": calls, "callsites": len(expected),
           "exact": exact, "per_tag_exact": per_tag_ok, "post_s": round(posted, 2),
           "count_lag_s": round(elapsed - posted, 2), "visible_s": round(elapsed, 2),
           "samples_per_s": round(rate, 1),
           "cpu_us_per_sample": {"server": round(srv_cpu * 1e6 / nsamples, 2),
                                 "postgres": round(pg_cpu * 1e6 / nsamples, 2),
                                 "client": round(own * 1e6 / nsamples, 2)},
           "load1": [load0, load1],
           "other_cores": round(max(0.0, busy - srv_cpu - pg_cpu - own) / elapsed, 2),
           "callsites_get_ms": round(statistics.median(get_ms), 1) if get_ms else None,
           "rss_peak_mb": round(rss, 1), "errors": errors[:3]}
    if not exact:
        missing = {k: v for k, v in expected.items() if got.get(k) != v}
        print(f"bench_samples: counts not exact: {len(missing)} call sites differ, e.g. "
              f"{list(missing.items())[:2]} vs {[(k, got.get(k)) for k in list(missing)[:2]]}\n"
              f"{log_tail}", file=sys.stderr)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", type=int, default=100)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--builds", type=int, default=4)
    ap.add_argument("--paths", type=int, default=24)
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--min-rate", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()

    bin_path = os.environ.get("STACKSIFT_BIN")
    fixtures = os.environ.get("STACKSIFT_FIXTURES")
    if not bin_path or not fixtures:
        raise SystemExit("bench_samples: STACKSIFT_BIN and STACKSIFT_FIXTURES must be set "
                         "(tests/bench/bench_samples.sh sets them)")
    with open(os.path.join(fixtures, "manifest.json")) as f:
        man = json.load(f)
    fx = next(x for x in man["fixtures"] if x["name"] == "arm64-O2")
    funcs = whole_functions(bin_path, fixtures, fx)
    plan_ = plan(args, funcs)
    batches = make_batches(args, funcs, fx["slices"][0]["uuid"], plan_[0], plan_[2])

    runs = []
    for _ in range(max(1, args.runs)):
        res = one_run(args, fx, funcs, plan_, batches)
        print(json.dumps(res), flush=True)
        runs.append(res)
    exact = all(r["exact"] for r in runs)
    rates = [r["samples_per_s"] for r in runs]
    med = lambda key: round(statistics.median(r["cpu_us_per_sample"][key] for r in runs), 2)  # noqa: E731
    summary = dict(runs[0])
    summary.update({"runs": len(runs), "exact": exact,
                    "per_tag_exact": all(r["per_tag_exact"] for r in runs),
                    "samples_per_s": round(statistics.median(rates), 1),
                    "samples_per_s_min": min(rates), "samples_per_s_max": max(rates),
                    "post_s": round(statistics.median(r["post_s"] for r in runs), 2),
                    "count_lag_s": round(statistics.median(r["count_lag_s"] for r in runs), 2),
                    "visible_s": round(statistics.median(r["visible_s"] for r in runs), 2),
                    "cpu_us_per_sample": {k: med(k) for k in ("server", "postgres", "client")},
                    "load1": [min(r["load1"][0] for r in runs), max(r["load1"][1] for r in runs)],
                    "other_cores": [min(r["other_cores"] for r in runs),
                                    max(r["other_cores"] for r in runs)],
                    "rss_peak_mb": max(r["rss_peak_mb"] for r in runs),
                    "callsites_get_ms": statistics.median(r["callsites_get_ms"] or 0
                                                          for r in runs),
                    "errors": [e for r in runs for e in r["errors"]][:3]})
    summary["bench"] = "samples_summary"
    print(json.dumps(summary))
    if not exact:
        return 1
    if summary["samples_per_s"] < args.min_rate:
        print(f"bench_samples: median {summary['samples_per_s']:.0f} samples/s is under "
              f"{args.min_rate:.0f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
