#!/usr/bin/env python3
"""test_minidump_rewalk - debug files that come after the minidumps that need them, through the
real server and Postgres (the shared Breakpad dump of ../shared/minidumps/ and its executable,
dSYM and .sym, read from there).

A dump walked without its app's unwind info (frames found by the frame pointer or the scan)
records the app's UUID as lacking unwind info: GET /api/v1/reports/{id} `unwind_uuids`,
GET /api/v1/dsyms/missing `needs: ["unwind_info"]` (beside "debug_info" while the names are
missing too). The upload of a debug file with that UUID walks the dump again from its stored
bytes and regroups it:

- the executable alone (unwind info and a symbol table's names; a new dsyms row): the caller of
  the crashing frame is then found by CFI, the names change the signature, the report moves to
  another issue (the old one, left empty, is gone), the UUID is no longer listed;
- the dSYM first (names: the report is re-symbolicated but still lacks unwind info, listed as
  needing "unwind_info" only), then the executable (the same row, its symcache replaced): the
  report is walked again, frames by CFI, the UUID no longer listed;
- the executable committed after the dSYM while the dump is being walked (its worker read the
  dSYM's symcache; the upload's trigger found the report neither processed nor lacking it
  yet): the worker's commit sees the row changed since its walk and sends the report back,
  which is walked again;
- at intake: with crash's dSYM uploaded and its symcache open on the node, a dump is walked and
  processed on the intake's thread (stacksift_intake_processed_total), to the frames, signature,
  issue and unwind_uuids a worker's walk gave the same dump; then the executable committed on a
  second node, whose trigger reached no report: this node's row cache still names the dSYM's
  symcache, its intake walks the next dump without unwind info, and the commit's check (the
  row changed since the walk saw it) stores it received, so the workers walk it again by CFI
  (test_store_intake checks that rule of the commit alone);
- the Breakpad .sym alone (names, STACK CFI, and functions that bound the scan): walked again
  (crash.sym has no CFI for main, so main's caller is still found by the scan, as
  minidump_stackwalk finds it, but the scan now passes over the stale word in crash that the
  first walk took for a frame), regrouped by its names, no longer listed.
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from web_instance import Instance, SecondNode, check, checks_done  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.environ.get("STACKSIFT_SOURCE_DIR", os.path.dirname(HERE))),
                      "shared")
BASE = os.path.join(SHARED, "minidumps", "macos-x86_64-breakpad")
UUID = "67E9247C-814E-392B-A027-DBDE6748FCBF"   # crash, the dump's executable


def read(*parts):
    with open(os.path.join(BASE, *parts), "rb") as f:
        return f.read()


def frames_of(rep):
    model = rep.get("symbolicated") or {}
    return [f for t in model.get("threads", []) for f in t["frames"]]


def report(inst, rid):
    r = inst.request("GET", f"/api/v1/reports/{rid}", token=inst.tokens["read"])
    return r.json() if r.status == 200 else {}


def missing(inst):
    """GET /api/v1/dsyms/missing as {uuid: entry}."""
    r = inst.request("GET", "/api/v1/dsyms/missing", token=inst.tokens["read"])
    check(r.status == 200, f"GET /api/v1/dsyms/missing: {r.status} {r.body[:200]!r}")
    return {m["uuid"].upper(): m for m in r.json().get("missing", [])} if r.status == 200 else {}


def upload(inst, body, name, what):
    r = inst.request("POST", f"/api/v1/dsyms?name={name}", body, token=inst.tokens["upload"],
                     timeout=120)
    check(r.status in (200, 201), f"{what} upload: {r.status} {r.body[:300]!r}")
    return r


def post_dump(inst, label):
    """The dump before any debug file of its UUID: walked without unwind info, listed as
    needing it (and its names). Returns the report."""
    r = inst.request("POST", "/api/v1/reports", read("macos.dmp"), token=inst.tokens["ingest"],
                     headers={"Content-Type": "application/x-dmp"})
    if not check(r.status == 202, f"{label}: dump: {r.status} {r.body[:300]!r}"):
        return {}
    check(inst.wait_processed(60), f"{label}: the dump processed")
    rep = report(inst, r.json()["id"])
    check(rep.get("status") == "pending_dsym" and UUID in [u.upper() for u in rep.get("missing_uuids", [])],
          f"{label}: waits for crash's dSYM: {rep.get('status')} {rep.get('missing_uuids')}")
    check([u.upper() for u in rep.get("unwind_uuids") or []] == [UUID],
          f"{label}: crash lacks unwind info: unwind_uuids {rep.get('unwind_uuids')}")
    img = next((im for im in (rep.get("symbolicated") or {}).get("images", [])
                if im.get("uuid", "").upper() == UUID), {})
    check(img.get("unwind") is False, f"{label}: crash's image says unwind {img.get('unwind')}")
    found = [f.get("found") for f in frames_of(rep)]
    check("cfi" not in found and "scan" in found and found[:1] == ["context"],
          f"{label}: walked without CFI, callers by scanning: {found}")
    m = missing(inst).get(UUID)
    check(m is not None and m.get("needs") == ["debug_info", "unwind_info"] and
          m.get("reports") == 1 and m.get("name") == "crash",
          f"{label}: missing lists crash as needing names and unwind info: {m}")
    return rep


def caller_in_libdyld(rep):
    """Whether frame 1 (main's caller) is libdyld's start, not a stale word of crash's."""
    fr = frames_of(rep)
    return len(fr) > 1 and fr[1].get("image") == "libdyld.dylib"


def wait_rewalked(inst, rid, label, timeout_s=60):
    """The report once its walk found main's caller in libdyld (the workers walked it again
    with crash's unwind info: by CFI, or by a scan that the .sym's functions bound)."""
    deadline = time.time() + timeout_s
    rep = {}
    while time.time() < deadline:
        rep = report(inst, rid)
        if rep.get("status") in ("processed", "pending_dsym", "failed") and caller_in_libdyld(rep):
            return rep
        time.sleep(0.1)
    check(False, f"{label}: not walked again in {timeout_s} s: {rep.get('status')} "
                 f"{[(f.get('image'), f.get('found')) for f in frames_of(rep)]} {inst.tail_log()}")
    return rep


def check_rewalked(inst, rep, label, found="cfi"):
    """After the upload of what carries crash's unwind info: main's caller in libdyld found as
    `found` says, crash no longer listed."""
    fr = frames_of(rep)
    check(caller_in_libdyld(rep) and fr[1].get("found") == found,
          f"{label}: frame 1 (main's caller in libdyld) by {found}: {fr[1:2]}")
    check(rep.get("unwind_uuids") == [], f"{label}: still lacks unwind info: {rep.get('unwind_uuids')}")
    img = next((im for im in rep["symbolicated"]["images"] if im.get("uuid", "").upper() == UUID), {})
    check(img.get("unwind") is True, f"{label}: crash's image says unwind {img.get('unwind')}")
    check(rep.get("status") == "processed", f"{label}: status {rep.get('status')} {rep.get('error')}")
    top = fr[0] if fr else {}
    check(any("main" in s.get("function", "") for s in top.get("symbols", [])),
          f"{label}: frame 0 named main: {top}")
    check(UUID not in missing(inst), f"{label}: crash still listed as missing")


def metric(inst, name):
    """A counter of GET /metrics (-1 when it is not there)."""
    body = inst.request("GET", "/metrics", token=inst.tokens["read"]).body.decode()
    m = re.search(rf"^{name} (\d+)$", body, re.M)
    return int(m.group(1)) if m else -1


def post_id(inst, label):
    """POST the dump; its report id ('' when refused)."""
    r = inst.request("POST", "/api/v1/reports", read("macos.dmp"), token=inst.tokens["ingest"],
                     headers={"Content-Type": "application/x-dmp"})
    check(r.status == 202, f"{label}: {r.status} {r.body[:300]!r}")
    return r.json().get("id", "") if r.status == 202 else ""


def walk_of(rep):
    """What a walk made of the dump: each frame's address, how it was found, its names."""
    return [(f.get("address"), f.get("found"), [s.get("function") for s in f.get("symbols", [])])
            for f in frames_of(rep)]


def intake(exe, dsym):
    with Instance("rewalk_intake", workers=1) as inst, SecondNode(inst) as node2:
        upload(inst, dsym, "crash", "intake: dSYM")
        # the first dump: the symcache not open on this node yet, walked by the worker
        rid = post_id(inst, "intake: first dump")
        check(inst.wait_processed(60), "intake: the first dump processed")
        by_worker = report(inst, rid)
        check(by_worker.get("status") == "processed",
              f"intake: the first dump: {by_worker.get('status')} {by_worker.get('error')}")
        # then the intake walks the next one itself (the node may still be reading the row
        # the upload changed in the background: a dump or two more at most)
        at_intake = {}
        for attempt in range(5):
            done, walks = (metric(inst, "stacksift_intake_processed_total"),
                           metric(inst, "stacksift_minidump_walks_total"))
            rid = post_id(inst, "intake: second dump")
            if metric(inst, "stacksift_intake_processed_total") == done + 1:
                at_intake = report(inst, rid)
                break
            check(inst.wait_processed(60), "intake: a dump not processed at intake, processed")
        check(at_intake, f"intake: five dumps, none processed at intake: {inst.tail_log(40)}")
        check(metric(inst, "stacksift_minidump_walks_total") == walks + 1,
              f"intake: the dump walked {metric(inst, 'stacksift_minidump_walks_total') - walks} times")
        check(at_intake.get("status") == "processed" and
              [u.upper() for u in at_intake.get("unwind_uuids") or []] == [UUID],
              f"intake: the dump: {at_intake.get('status')} {at_intake.get('unwind_uuids')}")
        check(walk_of(at_intake) and walk_of(at_intake) == walk_of(by_worker),
              f"intake: the intake's walk {walk_of(at_intake)[:3]}, the worker's {walk_of(by_worker)[:3]}")
        check(at_intake.get("fingerprint") == by_worker.get("fingerprint") and
              at_intake.get("issue_id") == by_worker.get("issue_id"),
              f"intake: grouped apart from the worker's: {at_intake.get('issue_id')} {by_worker.get('issue_id')}")
        r = issue(inst, by_worker.get("issue_id"))
        n = int(inst.psql(inst.db_url, "SELECT count(*) FROM reports").strip())
        check(r.status == 200 and r.json().get("count") == n, f"intake: the issue of {n}: {r.status} {r.body[:200]!r}")
        # the executable committed on another node, its trigger out of these reports' reach
        # (as for an upload that commits before the next dump's row exists)
        inst.psql(inst.db_url, "UPDATE reports SET unwind_uuids = '{}'")
        r = node2.request("POST", "/api/v1/dsyms?name=crash", exe, token=inst.tokens["upload"],
                          timeout=120)
        check(r.status in (200, 201), f"intake: the executable on node 2: {r.status} {r.body[:300]!r}")
        done = metric(inst, "stacksift_intake_processed_total")
        rid = post_id(inst, "intake: third dump")
        if metric(inst, "stacksift_intake_processed_total") != done + 1:
            # the node had read the row again already (test_store_intake checks the commit's
            # rule alone): the workers' walk of it is what is checked then
            print("note: the third dump was not walked at intake", flush=True)
        rep = wait_rewalked(inst, rid, "intake: the row changed since the walk")
        check_rewalked(inst, rep, "intake: the row changed since the walk")


def issue(inst, iid):
    return inst.request("GET", f"/api/v1/issues/{iid}", token=inst.tokens["read"])


def main():
    exe, sym = read("crash"), read("crash.sym")
    dsym = read("crash.dSYM", "Contents", "Resources", "DWARF", "crash")

    # ---- the executable alone, after the dump --------------------------------------------
    with Instance("rewalk_exe", workers=1) as inst:
        early = post_dump(inst, "executable")
        if early:
            upload(inst, exe, "crash", "executable")
            rep = wait_rewalked(inst, early["id"], "executable")
            check_rewalked(inst, rep, "executable")
            check(rep.get("fingerprint") and rep["fingerprint"] != early["fingerprint"],
                  f"executable: the names did not change the signature: {rep.get('fingerprint')}")
            check(rep.get("issue_id") not in (None, early["issue_id"]),
                  f"executable: not regrouped: issue {rep.get('issue_id')} (was {early['issue_id']})")
            check(issue(inst, early["issue_id"]).status == 404,
                  "executable: the issue the report left (now empty) is still there")
            r = issue(inst, rep["issue_id"])
            check(r.status == 200 and r.json().get("count") == 1 and "main" in r.json().get("title", ""),
                  f"executable: the new issue: {r.status} {r.body[:300]!r}")

    # ---- the dSYM, then the executable -----------------------------------------------------
    with Instance("rewalk_dsym_exe", workers=1) as inst:
        early = post_dump(inst, "dSYM then executable")
        if early:
            upload(inst, dsym, "crash", "dSYM")
            check(inst.wait_processed(60), "dSYM: the dump processed again")
            named = report(inst, early["id"])
            fr = frames_of(named)
            check(named.get("status") == "processed" and fr and
                  any("main" in s.get("function", "") for s in fr[0].get("symbols", [])),
                  f"dSYM: re-symbolicated: {named.get('status')} {fr[:1]}")
            check("cfi" not in [f.get("found") for f in fr],
                  f"dSYM: a dSYM without __debug_frame gave CFI: {[f.get('found') for f in fr]}")
            check([u.upper() for u in named.get("unwind_uuids") or []] == [UUID],
                  f"dSYM: crash still lacks unwind info: {named.get('unwind_uuids')}")
            m = missing(inst).get(UUID)
            check(m is not None and m.get("needs") == ["unwind_info"] and m.get("reports") == 1,
                  f"dSYM: missing lists crash as needing unwind info only: {m}")
            r = upload(inst, exe, "crash", "executable after the dSYM")
            rep = wait_rewalked(inst, early["id"], "dSYM then executable")
            check_rewalked(inst, rep, "dSYM then executable")
            check(rep.get("processed_at") and rep["processed_at"] != named.get("processed_at"),
                  "dSYM then executable: not processed again")
            # names from the dSYM kept (the executable adds its unwind info to the same symcache)
            top = frames_of(rep)[0]
            check(any(s.get("line") for s in top.get("symbols", [])),
                  f"dSYM then executable: frame 0 lost the dSYM's lines: {top}")
            r = issue(inst, rep.get("issue_id"))
            check(r.status == 200 and r.json().get("count") == 1,
                  f"dSYM then executable: the report's issue: {r.status} {r.body[:300]!r}")

    # ---- the executable committed while the dump is being walked ----------------------------
    with Instance("rewalk_race", workers=1) as inst:
        early = post_dump(inst, "race")
        if early:
            rid, db = early["id"], inst.db_url
            # names first: the report then waits for nothing but unwind info (not pending_dsym,
            # whose own recheck would send it back)
            upload(inst, dsym, "crash", "race: dSYM")
            check(inst.wait_processed(60), "race: the dump processed again")
            named = report(inst, rid)
            check(named.get("status") == "processed" and named.get("unwind_uuids"),
                  f"race: named, still lacking unwind info: {named.get('status')} {named.get('unwind_uuids')}")

            def waiting(sql):
                deadline = time.time() + 20
                while time.time() < deadline:
                    if inst.psql(db, sql).strip() not in ("", "0"):
                        return True
                    time.sleep(0.05)
                return False

            # the report as before its first walk (nothing recorded), grouped elsewhere so that
            # its commit upserts its issue, whose row this session holds: the commit waits
            inst.psql(db, f"UPDATE reports SET unwind_uuids = '{{}}', fingerprint = 'other' "
                          f"WHERE id = '{rid}'")
            blocker = subprocess.Popen(["psql", db, "-v", "ON_ERROR_STOP=1", "-qAt"],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
            try:
                blocker.stdin.write(f"BEGIN; SELECT id FROM issues WHERE id = {named['issue_id']} "
                                    "FOR UPDATE;\n")
                blocker.stdin.flush()
                check(waiting("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND state = 'idle in transaction' AND query LIKE '%FOR UPDATE%'"),
                      "race: the issue's row not locked")
                inst.psql(db, f"UPDATE reports SET status = 'received' WHERE id = '{rid}'")
                check(waiting("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND wait_event_type = 'Lock'"),
                      "race: the worker's commit does not wait for the issue's row")
                # committed while the worker holds the report (the stored row's symcache
                # replaced): the trigger finds it 'received' and leaves it
                upload(inst, exe, "crash", "race: executable")
            finally:
                blocker.stdin.write("COMMIT;\n")
                blocker.stdin.close()
                blocker.wait(timeout=30)
            rep = wait_rewalked(inst, rid, "race")
            check_rewalked(inst, rep, "race")

    # ---- at intake ---------------------------------------------------------------------------
    intake(exe, dsym)

    # ---- the Breakpad .sym alone -----------------------------------------------------------
    with Instance("rewalk_sym", workers=1) as inst:
        early = post_dump(inst, ".sym")
        if early:
            upload(inst, sym, "crash", ".sym")
            rep = wait_rewalked(inst, early["id"], ".sym")
            # crash.sym has no STACK CFI record for main: its caller is found by the scan
            # (as minidump_stackwalk finds it), which now passes over the word in crash that
            # no FUNC of the .sym covers (the first walk's frame 1)
            check_rewalked(inst, rep, ".sym", found="scan")
            check(len(frames_of(rep)) == len(frames_of(early)) - 1,
                  f".sym: the walk did not change: {[(f.get('image'), f.get('found')) for f in frames_of(rep)]}")
            check(rep.get("fingerprint") and rep["fingerprint"] != early["fingerprint"] and
                  rep.get("issue_id") != early["issue_id"],
                  f".sym: not regrouped: {rep.get('issue_id')} {early['issue_id']}")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
