#!/usr/bin/python3
"""app_store.py - App Store (bitcode) dSYMs with the real `sentry-cli debug-files upload`
(ctest test_sentry_cli_app_store, label db).

The pinned sentry-cli (run.py's npm ci) against a real `stacksift serve`, on the real data of
../shared/real-dsyms (SOURCE.md): crashprobe-2017-release (App Store dSYM bundles, each with a
UUID map `Contents/Resources/<UUID>.plist`, no BCSymbolMap) and symbolic-bitcode (a dSYM
whose names read `__hidden#N_`, its UUID map and the BCSymbolMap of its original build).

1. The chunk options announce bcsymbolmaps; sentry-cli uploads the App Store dSYM folder and
   exits 0, the UUID maps stored beside the dSYMs.
2. Whichever of dSYM, UUID map and BCSymbolMap arrives last, a crash report whose in-app image
   is the hidden dSYM waits (pending_dsym) and is symbolicated again and regrouped by itself
   once the last one arrives: its frames, its issue's title and POST /api/v1/symbolicate then
   read line N of the map (after its header, from 0) where the dSYM says `__hidden#N_`
   (one Mach-O underscore less for a symbol-table name). Three orders, each on a database of
   its own: map last (three separate sentry-cli runs), UUID map last, dSYM last (an
   .xcarchive folder holding all three, in one run).
3. Bad input for the new kinds on POST /api/v1/dsyms: a truncated map, a map for another
   build (shorter than the stored dSYM needs; named for one UUID, sent for another), a plist
   that is not a UUID map, a 1 GB map (413 from the headers), a bundle with a broken UUID map:
   each a 4xx with a JSON error, and nothing stored.
4. `stacksift symcache rebuild` keeps dsyms.hidden_names / hidden_max / revealed_by with the
   symcache it stores, hidden again when the map is gone and revealed when it is back (the
   report that waited then released).
Prints "N passed, N failed" like tests/harness.h.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from web_instance import Instance, check, checks_done, env_or_die  # noqa: E402
from run import CHUNKS, Cli, checks_failed, npm_ci  # noqa: E402

DWARF = "2d10c42f-591d-3265-b147-78ba0868073f.dwarf-hidden"
UUID = "2D10C42F-591D-3265-B147-78BA0868073F"
PLIST = "2d10c42f-591d-3265-b147-78ba0868073f.plist"
MAP = "c8374b6d-6e96-34d8-ae38-efaa5fec424f.bcsymbolmap"
ORIGINAL = "C8374B6D-6E96-34D8-AE38-EFAA5FEC424F"
LOAD = 0x104000000


def real_dsyms():
    d = os.environ.get("STACKSIFT_REAL_DSYMS") or os.path.join(
        env_or_die("STACKSIFT_SOURCE_DIR"), "..", "shared", "real-dsyms")
    return os.path.abspath(d)


def hidden_functions(path):
    """{address: N} of the function symbols named __hidden#N_ (llvm-nm-14)."""
    out = {}
    nm = subprocess.run(["llvm-nm-14", path], capture_output=True, text=True, check=True).stdout
    for line in nm.splitlines():
        m = re.match(r"^([0-9a-f]+) [tT] __hidden#(\d+)_$", line)
        if m:
            out[int(m.group(1), 16)] = int(m.group(2))
    return out


def q(inst, sql):
    return inst.psql(inst.db_url, sql).strip()


def stored(inst):
    """Rows of every table an upload of the new kinds writes."""
    return q(inst, "SELECT (SELECT count(*) FROM uuid_maps), (SELECT count(*) FROM symbol_maps), "
                   "(SELECT count(*) FROM dsyms), (SELECT count(*) FROM blobs)")


def post_dsym(inst, data, name=None, uuid=None, ctype="application/octet-stream"):
    path = "/api/v1/dsyms"
    args = [f"name={name}"] if name else []
    args += [f"uuid={uuid}"] if uuid else []
    if args:
        path += "?" + "&".join(args)
    return inst.request("POST", path, body=data, token=inst.tokens["upload"],
                        headers={"Content-Type": ctype}, timeout=120)


def is_error(r, status, words, what):
    try:
        body = r.json()
    except ValueError:
        body = None
    msg = body.get("error", {}).get("message", "") if isinstance(body, dict) else ""
    return check(r.status == status and msg and all(w in msg for w in words),
                 f"{what}: want {status} naming {words}, got {r.status} {r.body[:300]!r}")


def declared_only(inst, path, declared):
    """A POST that declares `declared` bytes and sends none: answered from the headers."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{inst.port}\r\nConnection: close\r\n"
            f"Authorization: Bearer {inst.tokens['upload']}\r\nContent-Length: {declared}\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n")
    with socket.create_connection(("127.0.0.1", inst.port), timeout=30) as sock:
        sock.sendall(head.encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def crash_report(syms, incident):
    """A crash in the hidden app: one thread through three hidden functions."""
    addrs = sorted(syms)[:3]
    return {
        "format_version": 1, "kind": "crash", "incident_id": incident,
        "app": {"name": "App", "bundle_id": "com.example.bitcode", "version": "1.0", "build": "1"},
        "os": "iOS 14.4 (18D52)", "arch": "arm64", "reason": "bitcode test",
        "images": [{"name": "App", "uuid": UUID, "arch": "arm64", "load_address": hex(LOAD),
                    "size": 0x80000, "path": "/private/var/containers/Bundle/Application/X/App.app/App",
                    "in_app": True}],
        "threads": [{"name": "main", "crashed": True,
                     "frames": [hex(LOAD + addrs[0])] + [hex(LOAD + a + 4) for a in addrs[1:]]}],
    }


def post_report(inst, report):
    r = inst.request("POST", "/api/v1/reports", body=report, token=inst.tokens["ingest"])
    check(r.status == 202, f"report accepted: {r.status} {r.body[:200]!r}")
    return r.json().get("id") if r.status == 202 else None


def wait_status(inst, rid, want, timeout_s=30):
    """Poll the report until its status is `want` (and, for processed, its model is there)."""
    deadline = time.time() + timeout_s
    while True:
        r = inst.request("GET", f"/api/v1/reports/{rid}", token=inst.tokens["read"])
        body = r.json() if r.status == 200 else {}
        if body.get("status") == want or time.time() > deadline:
            return body
        time.sleep(0.1)


def revealed_name(names, n):
    s = names[n]
    return s[1:] if s.startswith("_") else s


def check_revealed_report(inst, rid, syms, names, what):
    rep = wait_status(inst, rid, "processed")
    check(rep.get("status") == "processed", f"{what}: report processed after the last file: "
          f"{rep.get('status')} missing={rep.get('missing_uuids')}")
    model = json.dumps(rep.get("symbolicated"))
    want = revealed_name(names, syms[sorted(syms)[0]])
    check(json.dumps(want) in model and "hidden#" not in model,
          f"{what}: the symbolicated report reads the map ({want}): {model[:600]}")
    issue = rep.get("issue_id")
    if check(issue is not None, f"{what}: report grouped: {rep.get('issue_id')}"):
        r = inst.request("GET", f"/api/v1/issues/{issue}", token=inst.tokens["read"])
        title = json.dumps(r.json()) if r.status == 200 else ""
        check("hidden#" not in title and want in title,
              f"{what}: the issue reads the revealed name {want}: {title[:300]}")
    # POST /api/v1/symbolicate through the stored symcache: every hidden function revealed
    addrs = sorted(syms)
    bad = []
    for i in range(0, len(addrs), 1000):   # the route takes at most 1024 stacks a request
        batch = addrs[i:i + 1000]
        body = {"images": [{"uuid": UUID, "arch": "arm64", "name": "App",
                            "load_address": hex(LOAD)}],
                "stacks": [[hex(LOAD + a)] for a in batch]}
        r = inst.request("POST", "/api/v1/symbolicate", body=body, token=inst.tokens["read"])
        if not check(r.status == 200, f"{what}: symbolicate {r.status} {r.body[:200]!r}"):
            return
        for a, stack in zip(batch, r.json()["stacks"]):
            syms_ = stack[0].get("symbols") or []
            # the raw name where it demangles (a C++ static: _ZL10setEnabledb)
            got = (syms_[-1].get("mangled") or syms_[-1].get("function")) if syms_ else None
            if got != revealed_name(names, syms[a]):
                bad.append((hex(a), got, revealed_name(names, syms[a])))
    check(not bad, f"{what}: {len(bad)} of {len(addrs)} hidden functions not revealed through "
          f"POST /api/v1/symbolicate, e.g. {bad[:3]}")


def dsym_hidden(inst):
    return q(inst, f"SELECT hidden_names, hidden_max, coalesce(upper(revealed_by::text), '') "
                   f"FROM dsyms WHERE uuid = '{UUID}'")


def app_store_folder(inst, cli, rel):
    """1. The chunk options and the App Store dSYM folder."""
    opts = inst.request("GET", CHUNKS, token=inst.tokens["upload"]).json()
    check("bcsymbolmaps" in opts.get("accept", []) and "debug_files" in opts["accept"],
          f"chunk options accept: {opts.get('accept')}")
    rc, out, err = cli.upload([rel], "App Store dSYM folder")
    check(rc == 0, f"sentry-cli exits 0 on the App Store dSYM folder: {rc}\n{out}\n{err[-1500:]}")
    for bundle in sorted(os.listdir(rel)):
        res = os.path.join(rel, bundle, "Contents", "Resources")
        plist = [f for f in os.listdir(res) if f.endswith(".plist")][0]
        original = re.search(r"<string>([0-9A-Fa-f-]{36})</string>",
                             open(os.path.join(res, plist)).read()).group(1).upper()
        uuid = plist[:-6].upper()
        got = q(inst, f"SELECT upper(original_uuid::text) FROM uuid_maps WHERE uuid = '{uuid}'")
        check(got == original, f"{bundle}: UUID map stored: {got!r} != {original}")
        check(q(inst, f"SELECT count(*) FROM dsyms WHERE uuid = '{uuid}'") == "1",
              f"{bundle}: its dSYM stored")
    hidden = q(inst, "SELECT count(*) FROM dsyms WHERE hidden_names > 0 AND revealed_by IS NULL")
    check(int(hidden) >= 1, f"the hidden libswiftFoundation dSYM is known hidden: {hidden}")


def bad_input(inst, src, names):
    """3. Bad input for the new kinds: a 4xx each, nothing stored."""
    before = stored(inst)
    text = open(os.path.join(src, MAP), "rb").read()
    cut = len(text) // 2
    while text[cut - 1:cut] == b"\n":
        cut += 1
    is_error(post_dsym(inst, text[:cut], name=ORIGINAL + ".bcsymbolmap"), 400,
             ["cut short"], "a truncated BCSymbolMap")
    is_error(post_dsym(inst, text[:20], name=ORIGINAL + ".bcsymbolmap"), 400, ["BCSymbolMap"],
             "a map cut in its header")
    short = ("BCSymbolMap Version: 2.0\n" + "\n".join(names[:100]) + "\n").encode()
    is_error(post_dsym(inst, short, name=ORIGINAL + ".bcsymbolmap"), 400,
             ["another build", UUID], "a map shorter than the stored dSYM needs (another build's)")
    is_error(post_dsym(inst, text, name=ORIGINAL + ".bcsymbolmap",
                       uuid="11111111-2222-3333-4444-555555555555"), 400,
             ["another build"], "a map named for one UUID, sent for another")
    is_error(post_dsym(inst, b"BCSymbolMap Version: 3.0\nx\n", name=ORIGINAL + ".bcsymbolmap"),
             422, ["version"], "a BCSymbolMap of an unknown version")
    info = open(os.path.join(real_dsyms(), "crashprobe-2017-release",
                             "0285884D-3DE9-3051-B23A-63B48BF99F35.dSYM", "Contents",
                             "Info.plist"), "rb").read()
    is_error(post_dsym(inst, info, name=UUID + ".plist"), 400, ["not a UUID map"],
             "a plist that is not a UUID map")
    is_error(post_dsym(inst, b"bplist00\x01\x02", name=UUID + ".plist"), 422, ["binary"],
             "a binary property list")
    is_error(post_dsym(inst, open(os.path.join(src, PLIST), "rb").read(), name="Info.plist"), 400,
             ["not named for a UUID"], "a UUID map named for no UUID")
    status, body = declared_only(inst, f"/api/v1/dsyms?name={ORIGINAL}.bcsymbolmap", 1 << 30)
    check(status == 413 and b"over the limit" in body, f"a 1 GB map: {status} {body[:200]!r}")
    # a bundle whose UUID map is broken: the whole upload refused
    import io
    import zipfile
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.write(os.path.join(src, DWARF), "App.app.dSYM/Contents/Resources/DWARF/App")
        z.writestr(f"App.app.dSYM/Contents/Resources/{UUID}.plist", info)
    is_error(post_dsym(inst, zbuf.getvalue(), name="App.zip"), 400, ["not a UUID map"],
             "a zipped bundle with a broken UUID map")
    check(stored(inst) == before, f"bad input stored nothing: {before} -> {stored(inst)}")


def map_last(inst, cli, src, syms, names, work):
    """2a. The dSYM, then its UUID map, then the map, each a sentry-cli run of its own."""
    rid = post_report(inst, crash_report(syms, "0B5E1A1E-0000-4000-8000-00000000B001"))
    rep = wait_status(inst, rid, "pending_dsym")
    check(rep.get("status") == "pending_dsym" and UUID in json.dumps(rep.get("missing_uuids")),
          f"map last: the report waits for the dSYM: {rep.get('status')}")
    d = os.path.join(work, "dsym")
    os.makedirs(d)
    shutil.copy(os.path.join(src, DWARF), os.path.join(d, "App"))
    cli.upload([d], "the hidden dSYM alone")
    h = dsym_hidden(inst).split("|")
    check(int(h[0]) > 3000 and h[2] == "", f"stored hidden, no map: {h}")
    rep = wait_status(inst, rid, "pending_dsym")
    check(rep.get("status") == "pending_dsym" and UUID in json.dumps(rep.get("missing_uuids")),
          f"map last: with the hidden dSYM the report still waits (for its map): {rep.get('status')}")
    u = os.path.join(work, "uuidmap")
    os.makedirs(u)
    shutil.copy(os.path.join(src, PLIST), os.path.join(u, UUID + ".plist"))
    cli.upload([u], "the UUID map alone")
    check(q(inst, f"SELECT upper(original_uuid::text) FROM uuid_maps WHERE uuid = '{UUID}'")
          == ORIGINAL, "UUID map stored")
    bad_input(inst, src, names)   # the dSYM needs ORIGINAL's map now (its UUID map says so)
    m = os.path.join(work, "maps")
    os.makedirs(m)
    shutil.copy(os.path.join(src, MAP), os.path.join(m, ORIGINAL + ".bcsymbolmap"))
    rc, out, _ = cli.upload([m], "the BCSymbolMap last")
    check("bcsymbolmap" in out, f"sentry-cli names the kind: {out}")
    h = dsym_hidden(inst).split("|")
    check(h[0] == "0" and h[2] == ORIGINAL, f"revealed by {ORIGINAL}: {h}")
    check_revealed_report(inst, rid, syms, names, "map last")


def uuidmap_last(inst, src, syms, names):
    """2b. dSYM and map through POST /api/v1/dsyms, the UUID map last."""
    rid = post_report(inst, crash_report(syms, "0B5E1A1E-0000-4000-8000-00000000B002"))
    r = post_dsym(inst, open(os.path.join(src, DWARF), "rb").read(), name="App")
    check(r.status == 201 and r.json()["files"][0].get("symbol_map") == UUID,
          f"hidden dSYM alone: needs its own UUID's map until a UUID map says otherwise: "
          f"{r.status} {r.body[:300]!r}")
    r = post_dsym(inst, open(os.path.join(src, MAP), "rb").read(), name=MAP)
    check(r.status == 201 and r.json()["files"] == [] and
          r.json()["maps"][0].get("kind") == "bcsymbolmap" and
          r.json()["maps"][0].get("names") == len(names),
          f"the map alone: {r.status} {r.body[:300]!r}")
    rep = wait_status(inst, rid, "pending_dsym")
    check(rep.get("status") == "pending_dsym", f"uuid map last: still waiting: {rep.get('status')}")
    r = post_dsym(inst, open(os.path.join(src, PLIST), "rb").read(), name=PLIST)
    check(r.status == 201 and r.json()["maps"][0].get("kind") == "uuidmap" and
          r.json()["maps"][0].get("original_uuid") == ORIGINAL,
          f"the UUID map last: {r.status} {r.body[:300]!r}")
    h = dsym_hidden(inst).split("|")
    check(h[0] == "0" and h[2] == ORIGINAL, f"revealed by {ORIGINAL}: {h}")
    check_revealed_report(inst, rid, syms, names, "UUID map last")


def dsym_last(inst, cli, src, syms, names, work):
    """2c. The report first; then an .xcarchive folder with all three, in one sentry-cli run:
    the dSYM is built revealed at once."""
    rid = post_report(inst, crash_report(syms, "0B5E1A1E-0000-4000-8000-00000000B003"))
    wait_status(inst, rid, "pending_dsym")
    arch = os.path.join(work, "App.xcarchive")
    res = os.path.join(arch, "dSYMs", "App.app.dSYM", "Contents", "Resources")
    os.makedirs(os.path.join(res, "DWARF"))
    os.makedirs(os.path.join(arch, "BCSymbolMaps"))
    shutil.copy(os.path.join(src, DWARF), os.path.join(res, "DWARF", "App"))
    shutil.copy(os.path.join(src, PLIST), os.path.join(res, UUID + ".plist"))
    shutil.copy(os.path.join(src, MAP), os.path.join(arch, "BCSymbolMaps", ORIGINAL + ".bcsymbolmap"))
    rc, out, err = cli.upload([arch], "an .xcarchive with dSYM, UUID map and map")
    check(rc == 0, f"xcarchive: exit {rc}")
    h = dsym_hidden(inst).split("|")
    check(h[0] == "0" and h[2] == ORIGINAL, f"xcarchive: revealed by {ORIGINAL}: {h}")
    check_revealed_report(inst, rid, syms, names, "dSYM last")


def rebuild(inst, what):
    """`stacksift symcache rebuild --uuid UUID`: its one line."""
    p = subprocess.run([inst.bin, "symcache", "rebuild", "--uuid", UUID], env=inst.env(),
                       capture_output=True, text=True, timeout=300)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    check(p.returncode == 0 and len(lines) == 1,
          f"{what}: rebuild exits 0 with one line: {p.returncode} {p.stdout} {p.stderr[-500:]}")
    return lines[0] if lines else {}


def rebuild_hidden_columns(inst, src):
    """4. `stacksift symcache rebuild` keeps the hidden-name columns with the symcache it
    stores, either way: a revealed dSYM whose BCSymbolMap is no longer stored is rebuilt
    hidden (and says so: reports wait for it again), and once the map is back a rebuild
    reveals it (and releases the report that waited meanwhile); columns left stale beside a
    symcache a rebuild leaves as it is are corrected too. No workers: the report's status is
    what the store left."""
    r = post_dsym(inst, open(os.path.join(src, DWARF), "rb").read(), name="App")
    check(r.status == 201, f"rebuild: hidden dSYM stored: {r.status} {r.body[:200]!r}")
    for f in (PLIST, MAP):
        r = post_dsym(inst, open(os.path.join(src, f), "rb").read(), name=f)
        check(r.status == 201, f"rebuild: {f} stored: {r.status} {r.body[:200]!r}")
    h = dsym_hidden(inst).split("|")
    check(h[0] == "0" and h[2] == ORIGINAL, f"rebuild: revealed by the upload first: {h}")
    q(inst, "CREATE TABLE kept_maps AS SELECT * FROM symbol_maps; DELETE FROM symbol_maps")
    got = rebuild(inst, "map gone")
    check(got.get("status") == "rebuilt", f"map gone: the symcache is rebuilt hidden: {got}")
    h = dsym_hidden(inst).split("|")
    check(int(h[0]) > 3000 and int(h[1]) > 3000 and h[2] == "",
          f"map gone: the row says hidden, revealed by nothing: {h}")
    rid = post_report(inst, crash_report(hidden_functions(os.path.join(src, DWARF)),
                                         "0B5E1A1E-0000-4000-8000-00000000B004"))
    q(inst, f"UPDATE reports SET status = 'pending_dsym', missing_uuids = ARRAY['{UUID}'::uuid] "
            f"WHERE id = '{rid}'")
    q(inst, "INSERT INTO symbol_maps SELECT * FROM kept_maps")
    got = rebuild(inst, "map back")
    check(got.get("status") == "rebuilt", f"map back: the symcache is rebuilt revealed: {got}")
    h = dsym_hidden(inst).split("|")
    check(h[0] == "0" and h[2] == ORIGINAL, f"map back: the row says revealed by {ORIGINAL}: {h}")
    st = q(inst, f"SELECT status FROM reports WHERE id = '{rid}'")
    check(st == "received", f"map back: the report that waited is queued again: {st}")
    got = rebuild(inst, "again")
    h2 = dsym_hidden(inst).split("|")
    check(got.get("status") == "unchanged" and h2 == h, f"a second rebuild: unchanged: {got} {h2}")
    # columns an older rebuild left stale beside the same symcache: made right all the same
    q(inst, f"UPDATE dsyms SET hidden_names = 7, hidden_max = 7, revealed_by = NULL "
            f"WHERE uuid = '{UUID}'; UPDATE reports SET status = 'pending_dsym' WHERE id = '{rid}'")
    got = rebuild(inst, "stale columns")
    h3 = dsym_hidden(inst).split("|")
    st = q(inst, f"SELECT status FROM reports WHERE id = '{rid}'")
    check(got.get("status") == "unchanged" and h3 == h and st == "received",
          f"stale columns beside an unchanged symcache: corrected, the report released: "
          f"{got} {h3} {st}")


def log_on_failure(inst):
    if checks_failed():
        print("server log tail:\n" + inst.tail_log(40), file=sys.stderr)


def main():
    build = env_or_die("STACKSIFT_BUILD_DIR")
    env_or_die("STACKSIFT_SOURCE_DIR")
    for tool in ("node", "npm", "llvm-nm-14"):
        if not shutil.which(tool):
            print(f"test_sentry_cli_app_store: {tool} not found", file=sys.stderr)
            return 1
    exe = npm_ci(build)
    root = real_dsyms()
    src = os.path.join(root, "symbolic-bitcode")
    rel = os.path.join(root, "crashprobe-2017-release")
    names = open(os.path.join(src, MAP), encoding="utf-8").read().split("\n")[1:-1]
    syms = hidden_functions(os.path.join(src, DWARF))
    check(len(syms) > 1000, f"{len(syms)} hidden functions in the dSYM")
    home = tempfile.mkdtemp(prefix="stacksift-sentry-cli-home.")
    work = tempfile.mkdtemp(prefix="stacksift-sentry-cli-appstore.")
    try:
        with Instance("appstore_map_last", workers=1) as inst:
            cli = Cli(exe, inst, home)
            try:
                app_store_folder(inst, cli, rel)
                map_last(inst, cli, src, syms, names, os.path.join(work, "a"))
            finally:
                log_on_failure(inst)
        with Instance("appstore_uuidmap_last", workers=1) as inst:
            try:
                uuidmap_last(inst, src, syms, names)
            finally:
                log_on_failure(inst)
        with Instance("appstore_rebuild", workers=0) as inst:
            try:
                rebuild_hidden_columns(inst, src)
            finally:
                log_on_failure(inst)
        with Instance("appstore_dsym_last", workers=1) as inst:
            try:
                dsym_last(inst, Cli(exe, inst, home), src, syms, names, os.path.join(work, "c"))
            finally:
                log_on_failure(inst)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
