#!/usr/bin/env python3
"""test_regroup - when the grouping rules change, stored reports move with them.

Through the real server and Postgres: reports are grouped by today's rules, then the database
is put back into the state older rules left (issues keyed by other fingerprints: one bug split
in two issues across CPUs, one of them resolved and holding reports retention expired; another
issue lumping two other bugs' reports into its own; signature_rules at the older version), and
`stacksift migrate` (which regroups when the stored rules are older) must bring every report to
the issue of its fingerprint by today's rules:
  - the split bug is one issue again: the one with more reports kept (its id, status and
    resolved-in), counts summed with the expired reports', per-day counts and versions merged;
  - the lumping issue keeps its own bug, gives up the other's report, and a third bug that has
    no issue yet gets a new one, split off with the lumping issue's status;
  - no new-issue alert fires; signature_rules names today's rules; a second run does nothing.
Then the same for names an older demangler left (demangler_revision).
"""
import json
import os
import subprocess
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from web_instance import Instance, check, checks_done  # noqa: E402


def report(process, version, exception, frames):
    lines = [f"Process:             {process} [1]", f"Identifier:          com.example.{process}",
             f"Version:             {version} (1)", "Code Type:           ARM-64",
             f"Exception Type:  {exception}", "", "Thread 0 Crashed:"]
    for i, (image, addr, sym) in enumerate(frames):
        lines.append(f"{i:<4}{image:<24} 0x{addr:016x} {sym}")
    return ("\n".join(lines) + "\n").encode()


BUG_X = [("libsystem_platform.dylib", 0x18f3b8ea4, "_platform_memmove + 324"),
         ("DemoApp", 0x1000e7414, "-[Cart addItem:] (Cart.m:45)"),
         ("DemoApp", 0x1000103a8, "-[CartViewController tap] (CartViewController.m:53)")]
BUG_X_ARMV7 = [("libsystem_platform.dylib", 0x451a31a4, "_platform_memmove$VARIANT$CortexA9"),
               ("DemoApp", 0x1e745b, "-[Cart addItem:] (Cart.m:45)"),
               ("DemoApp", 0xd3e03, "-[CartViewController tap] (CartViewController.m:53)")]
BUG_Y = [("DemoApp", 0x1000e8000, "-[Checkout pay] (Checkout.m:10)"),
         ("DemoApp", 0x1000103b0, "-[CartViewController buy] (CartViewController.m:70)")]
BUG_Z = [("DemoApp", 0x1000e9000, "-[Profile load] (Profile.m:7)"),
         ("DemoApp", 0x1000103c0, "-[ProfileViewController show] (ProfileViewController.m:9)")]


BUG_CXX = [("DemoApp", 0x1000ea000, "_ZN6Widget4drawEv + 12"),
           ("DemoApp", 0x1000103d0, "_ZN6Screen7refreshEi + 40")]


def demangler_revision():
    """Names stored with issues (title, culprit, frames) are the demangler's display forms:
    when its output changes (DEMANGLE_REVISION raised), the stored reports are regrouped as
    for new grouping rules, and every stored name is today's again. The database is put back
    into the state an older demangler left (its display forms: the raw names; signature_rules
    at an older revision, grouping rules unchanged), and `stacksift migrate` must regroup:
    today's names again, the revision recorded, a second run does nothing."""
    with Instance("regroup_demangle", workers=1) as inst:
        sql = lambda q: inst.psql(inst.db_url, q).strip()  # noqa: E731
        r = inst.request("POST", "/api/v1/reports",
                         report("DemoApp", "1.0", "EXC_BAD_ACCESS (SIGSEGV)", BUG_CXX),
                         token=inst.tokens["ingest"], headers={"Content-Type": "text/plain"})
        check(r.status == 202, f"POST: {r.status} {r.body[:200]!r}")
        check(inst.wait_processed(120), "report processed")
        row = lambda: sql("SELECT title || '|' || culprit || '|' || frames::text FROM issues")  # noqa: E731
        today = row()
        title = sql("SELECT title FROM issues")
        check(title.endswith(": Widget::draw"), f"the issue shows the demangled name: {today}")
        rev = sql("SELECT demangle_revision FROM signature_rules")
        check(rev.isdigit() and int(rev) >= 1, f"signature_rules records the demangler: {rev!r}")
        sql("UPDATE issues SET title = replace(title, 'Widget::draw', '_ZN6Widget4drawEv'), "
            "culprit = replace(culprit, 'Widget::draw', '_ZN6Widget4drawEv'), "
            "frames = replace(frames::text, 'Widget::draw', '_ZN6Widget4drawEv')::jsonb; "
            f"UPDATE signature_rules SET demangle_revision = {int(rev or 1) - 1}")
        check(sql("SELECT title FROM issues").endswith(": _ZN6Widget4drawEv"),
              f"the older demangler's state: {row()}")
        out = subprocess.run([inst.bin, "migrate"], env=inst.env(), capture_output=True,
                             text=True, timeout=300)
        line = [x for x in out.stdout.splitlines() if x.startswith("{")]
        res = json.loads(line[-1]) if line else {}
        check(out.returncode == 0 and res.get("regrouped") is True and res.get("reports") == 1,
              f"migrate regroups the names of an older demangler: {out.stdout} {out.stderr}")
        check(row() == today, f"the issue's names are today's again: {row()} (want {today})")
        check(sql("SELECT demangle_revision FROM signature_rules") == rev,
              "signature_rules records today's demangler")
        again = subprocess.run([inst.bin, "regroup", "--if-needed"], env=inst.env(),
                               capture_output=True, text=True, timeout=120)
        check(again.returncode == 0 and '"regrouped":false' in again.stdout,
              f"a second run does nothing: {again.stdout} {again.stderr}")


def main():
    with Instance("regroup", workers=1) as inst:
        sql = lambda q: inst.psql(inst.db_url, q).strip()  # noqa: E731
        subprocess.run([inst.bin, "alert", "add", "--kind", "new_issue", "--url",
                        "http://127.0.0.1:9/hook"], env=inst.env(), check=True,
                       capture_output=True, timeout=30)
        posts = {
            "x1": report("DemoApp", "1.0", "EXC_BAD_ACCESS (SIGSEGV)", BUG_X),
            "x2": report("DemoApp", "1.1", "EXC_BAD_ACCESS (SIGBUS)", BUG_X_ARMV7),
            "x3": report("DemoApp", "1.2", "EXC_BAD_ACCESS (SIGSEGV)", BUG_X),
            "y1": report("DemoApp", "1.0", "EXC_CRASH (SIGABRT)", BUG_Y),
            "y2": report("DemoApp", "1.1", "EXC_CRASH (SIGABRT)", BUG_Y),
            "z1": report("DemoApp", "1.1", "EXC_BREAKPOINT (SIGTRAP)", BUG_Z),
        }
        ids = {}
        for k, body in posts.items():
            r = inst.request("POST", "/api/v1/reports", body, token=inst.tokens["ingest"],
                             headers={"Content-Type": "text/plain"})
            check(r.status == 202, f"POST {k}: {r.status} {r.body[:200]!r}")
            ids[k] = r.json()["id"]
        check(inst.wait_processed(120), "reports processed")
        issue_of = {k: sql(f"SELECT issue_id FROM reports WHERE id = '{v}'") for k, v in ids.items()}
        fp_of = {k: sql(f"SELECT fingerprint FROM reports WHERE id = '{v}'") for k, v in ids.items()}
        check(len({issue_of[k] for k in ("x1", "x2", "x3")}) == 1,
              f"today's rules group bug X across CPUs: {issue_of}")
        check(len(set(issue_of.values())) == 3, f"three bugs, three issues: {issue_of}")
        ix, iy, iz = issue_of["x1"], issue_of["y1"], issue_of["z1"]
        events_before = int(sql("SELECT count(*) FROM alert_events WHERE kind = 'new_issue'"))
        check(events_before == 3, f"one new-issue event per issue: {events_before}")

        # What older rules left: bug X split by CPU (the armv7 issue resolved in 1.0 and holding
        # 5 reports retention expired), bug Y's issue lumping x3 and z1 in, Z without an issue.
        day = sql(f"SELECT (received_at AT TIME ZONE 'UTC')::date FROM reports WHERE id = '{ids['x2']}'")
        sql(f"""BEGIN;
            INSERT INTO issues (id, project_id, app, kind, fingerprint, title, culprit, exception,
                basis, provisional, frames, first_seen, last_seen, count, versions, status,
                resolved_in, resolved_at)
              SELECT 900001, project_id, app, kind, 'v1-x-armv7', title, culprit, exception, basis,
                provisional, frames, first_seen - interval '3 days', last_seen, 6, '{{1.0,1.1}}',
                'resolved', '1.0', now() FROM issues WHERE id = {ix};
            UPDATE reports SET issue_id = 900001, fingerprint = 'v1-x-armv7' WHERE id = '{ids['x2']}';
            INSERT INTO issue_days VALUES (900001, '{day}'::date - 3, 5), (900001, '{day}', 1);
            INSERT INTO issue_breakdowns VALUES (900001, 0, '0.9', 5), (900001, 1, 'iOS 9', 5),
                (900001, 2, 'iPhone5,1', 5);
            UPDATE reports SET issue_id = {iy}, fingerprint = 'v1-y' WHERE id IN ('{ids['x3']}', '{ids['z1']}', '{ids['y1']}', '{ids['y2']}');
            UPDATE reports SET fingerprint = 'v1-x-arm64' WHERE id = '{ids['x1']}';
            UPDATE issues SET fingerprint = 'v1-x-arm64', count = 1, versions = '{{1.0}}' WHERE id = {ix};
            UPDATE issue_days SET count = 1 WHERE issue_id = {ix};
            UPDATE issues SET fingerprint = 'v1-y', count = 4, status = 'ignored',
                title = 'Stale older title', culprit = 'stale older culprit' WHERE id = {iy};
            UPDATE issue_days SET count = 4 WHERE issue_id = {iy};
            DELETE FROM issues WHERE id = {iz};
            UPDATE signature_rules SET version = 'stacksift-signature-v1';
            COMMIT;""")
        check(sql("SELECT count(*) FROM issues") == "3", "the older rules' state: three issues")
        events_before = int(sql("SELECT count(*) FROM alert_events WHERE kind = 'new_issue'"))

        out = subprocess.run([inst.bin, "migrate"], env=inst.env(), capture_output=True,
                             text=True, timeout=300)
        check(out.returncode == 0, f"migrate: {out.returncode} {out.stderr}")
        line = [l for l in out.stdout.splitlines() if l.startswith("{")]
        res = json.loads(line[-1]) if line else {}
        print("regroup:", res)
        check(res.get("regrouped") is True and res.get("from") == "stacksift-signature-v1",
              f"migrate regrouped: {out.stdout}")
        check(res.get("reports") == 6 and res.get("merged") == 1 and res.get("created") == 1,
              f"regroup figures: {res}")

        now_issue = {k: sql(f"SELECT issue_id FROM reports WHERE id = '{v}'") for k, v in ids.items()}
        now_fp = {k: sql(f"SELECT fingerprint FROM reports WHERE id = '{v}'") for k, v in ids.items()}
        check(now_fp == fp_of, f"every report has today's fingerprint again: {now_fp} vs {fp_of}")
        check(now_issue["x1"] == now_issue["x2"] == now_issue["x3"] == "900001",
              f"bug X is one issue, the one with more reports kept: {now_issue}")
        check(now_issue["y1"] == now_issue["y2"] == iy, f"bug Y stays in its issue: {now_issue}")
        z = now_issue["z1"]
        check(z not in ("", ix, iy, "900001"), f"bug Z split off into a new issue: {now_issue}")
        check(sql("SELECT count(*) FROM issues") == "3", "three issues after")
        check(sql(f"SELECT count(*) FROM issues WHERE id = {ix}") == "0", "the merged issue is gone")
        x = sql("SELECT count || '|' || status || '|' || coalesce(resolved_in, '') || '|' || "
                "array_to_string(versions, ',') || '|' || fingerprint FROM issues WHERE id = 900001")
        check(x == f"8|resolved|1.0|1.0,1.1,1.2|{fp_of['x1']}",
              f"bug X: 3 reports + 5 expired, status and resolved-in carried, versions merged: {x}")
        days = sql("SELECT sum(count) FROM issue_days WHERE issue_id = 900001")
        check(days == "8", f"bug X's per-day counts sum to its count: {days}")
        first = sql("SELECT first_seen < (SELECT min(received_at) FROM reports) FROM issues WHERE id = 900001")
        check(first == "t", "first seen carried from the merged history")
        y = sql(f"SELECT count || '|' || status || '|' || fingerprint FROM issues WHERE id = {iy}")
        check(y == f"2|ignored|{fp_of['y1']}", f"bug Y: its two reports, status kept: {y}")
        ydays = sql(f"SELECT sum(count) FROM issue_days WHERE issue_id = {iy}")
        check(ydays == "2", f"bug Y's per-day counts: {ydays}")
        zrow = sql(f"SELECT count || '|' || status || '|' || fingerprint FROM issues WHERE id = {z}")
        check(zrow == f"1|ignored|{fp_of['z1']}", f"bug Z: split with the status it had: {zrow}")
        events = int(sql("SELECT count(*) FROM alert_events WHERE kind = 'new_issue'"))
        check(events == events_before, f"no new-issue alert for a regroup: {events} events")
        check(sql("SELECT version FROM signature_rules") == "stacksift-signature-v3",
              "signature_rules names today's rules")
        check(sql("SELECT count(*) FROM regroup_reports") == "0", "the work list is emptied")

        # the API shows it, breakdowns included: the merged issue's expired reports' counters
        # went along, the moved reports' moved with them
        r = inst.request("GET", "/api/v1/issues/900001", token=inst.tokens["read"])
        check(r.status == 200 and r.json().get("count") == 8, f"GET issue: {r.status} {r.body[:200]!r}")
        bd = r.json().get("breakdowns", {}) if r.status == 200 else {}
        apps = {c["value"]: c["count"] for c in bd.get("app_version", [])}
        check(apps == {"0.9": 5, "1.0": 1, "1.1": 1, "1.2": 1}, f"bug X by app version: {apps}")
        for dim in ("app_version", "os_version", "hardware_model"):
            total = sum(c["count"] for c in bd.get(dim, []))
            check(total == 8, f"bug X's {dim} breakdown sums to its count: {total}")
        r = inst.request("GET", f"/api/v1/issues/{iy}", token=inst.tokens["read"])
        apps = {c["value"]: c["count"] for c in r.json().get("breakdowns", {}).get("app_version", [])}
        check(apps == {"1.0": 1, "1.1": 1}, f"bug Y by app version, x3 and z1 gone: {apps}")
        zero = sql("SELECT count(*) FROM issue_breakdowns WHERE count < 0")
        check(zero == "0", f"no counter below zero: {zero}")

        # search reads issue_search (migration 0025): it follows the regroup's renames, its
        # split and merged issues; the API's answers are the issues whose title or culprit
        # contains the text, ignoring case, as read from the issues themselves
        check(sql("SELECT count(*) FROM issues i FULL JOIN issue_search s ON s.issue_id = i.id "
                  "WHERE s.issue_id IS NULL OR i.id IS NULL OR s.title <> i.title "
                  "OR s.culprit <> i.culprit") == "0", "issue_search holds every issue's text")
        for text in ("stale older", "Checkout", "cart.M", "PROFILE", "addItem", "%", "_", "zz-none"):
            r = inst.request("GET", "/api/v1/issues?limit=100&q=" + urllib.parse.quote(text),
                             token=inst.tokens["read"])
            got = sorted(str(i["id"]) for i in r.json().get("issues", [])) if r.status == 200 else None
            lit = text.lower().replace("'", "''")
            want = sorted(sql("SELECT id FROM issues WHERE strpos(lower(title), '" + lit + "') > 0 "
                              "OR strpos(lower(culprit), '" + lit + "') > 0").split())
            check(got == want, f"q={text!r}: {got} vs {want}")
            if text in ("Checkout", "cart.M", "PROFILE"):
                check(len(want) >= 1, f"q={text!r} finds an issue")
            if text == "Checkout":
                check(iy in want, f"q={text!r} finds bug Y by its title after the rename: {want}")
            if text == "stale older":
                check(want == [], f"the old title is found no more: {want}")

        again = subprocess.run([inst.bin, "regroup", "--if-needed"], env=inst.env(),
                               capture_output=True, text=True, timeout=120)
        check(again.returncode == 0 and '"regrouped":false' in again.stdout,
              f"a second run does nothing: {again.stdout} {again.stderr}")
        # by hand it re-signs again and changes nothing
        hand = subprocess.run([inst.bin, "regroup"], env=inst.env(), capture_output=True,
                              text=True, timeout=120)
        check(hand.returncode == 0 and '"moved":0' in hand.stdout and '"merged":0' in hand.stdout,
              f"regroup by hand on regrouped data moves nothing: {hand.stdout} {hand.stderr}")
        check(sql("SELECT count || '|' || status FROM issues WHERE id = 900001") == "8|resolved",
              "and keeps the counts")
        bad = subprocess.run([inst.bin, "regroup", "--page", "0"], env=inst.env(),
                             capture_output=True, text=True, timeout=30)
        check(bad.returncode == 2 and "--page" in bad.stderr, f"bad --page: {bad.stderr}")
    demangler_revision()
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
