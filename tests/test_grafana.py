#!/usr/bin/python3
"""test_grafana - deploy/grafana's queries run on the real schema (ctest test_grafana, label db).

A real server (tests/web_instance.py) gets the fixture dSYMs and generated reports
(deploy/demo_reports.py), its workers group them; then every SQL query of the dashboard
JSON (panels and template variables) runs in Postgres with Grafana's macros expanded the
way Grafana expands them, must succeed and return rows, and the stats_* views of
migrations/0003 must agree with the issues API (the same totals). The provisioning files
must name the datasource uid the panels use. Grafana itself is not started here: its
image is not in Debian's packages.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_instance import Instance, check, checks_done  # noqa: E402



def expand(sql, apps):
    """Grafana's macros as its Postgres datasource expands them, for the last 30 days."""
    sql = re.sub(r"\$__timeFilter\(([^)]+)\)",
                 r"\1 BETWEEN now() - interval '30 days' AND now()", sql)
    return sql.replace("$app", ", ".join("'" + a.replace("'", "''") + "'" for a in apps))


def main():
    source = os.environ["STACKSIFT_SOURCE_DIR"]
    gdir = os.path.join(source, "deploy/grafana")
    with open(os.path.join(gdir, "dashboards/stacksift.json")) as f:
        dash = json.load(f)
    with open(os.path.join(gdir, "provisioning/datasources/stacksift.yaml")) as f:
        ds = yaml.safe_load(f)["datasources"]
    uids = {d["uid"] for d in ds}
    queries = []
    for p in dash["panels"]:
        check(p["datasource"]["uid"] in uids, f"panel {p['title']}: datasource provisioned")
        for t in p["targets"]:
            queries.append((p["title"], t["rawSql"]))
    variables = [(v["name"], v["query"]) for v in dash["templating"]["list"] if v["type"] == "query"]
    check(len(queries) >= 6, f"{len(queries)} panel queries")

    with Instance("grafana") as inst:
        T = inst.tokens
        with open(os.path.join(inst.fixtures, "FixtureApp-dSYMs.zip"), "rb") as f:
            r = inst.request("POST", "/api/v1/dsyms", body=f.read(), token=T["upload"],
                             headers={"Content-Type": "application/zip"})
        check(r.status == 201, f"dSYM upload: {r.status}")
        gen = tempfile.mkdtemp(prefix="stacksift-grafana-reports.")
        subprocess.run([sys.executable, os.path.join(source, "deploy/demo_reports.py"), inst.bin,
                        inst.fixtures, gen, "11"], check=True, capture_output=True, timeout=120)
        for path in sorted(glob.glob(os.path.join(gen, "*")))[::5]:
            with open(path, "rb") as f:
                data = f.read()
            r = inst.request("POST", "/api/v1/reports", body=data, token=T["ingest"], headers={
                "Content-Type": "application/json" if data[:1] == b"{" else "text/plain"})
            check(r.status == 202, f"report {os.path.basename(path)}: {r.status}")
        check(inst.wait_processed(60), "reports processed")

        apps = inst.psql(inst.db_url, variables[0][1]).split()
        check("FixtureApp" in apps, f"variable {variables[0][0]} lists FixtureApp: {apps}")
        for title, sql in queries:
            try:
                out = inst.psql(inst.db_url, expand(sql, apps))
                check(out.strip() != "", f"{title}: returns rows")
            except subprocess.CalledProcessError as e:
                check(False, f"{title}: {e.stderr.strip()}")

        issues = inst.request("GET", "/api/v1/issues?limit=200&status=", token=T["read"]).json()["issues"]
        total = sum(i["count"] for i in issues)
        q = lambda sql: inst.psql(inst.db_url, sql).strip()
        check(q("SELECT sum(reports) FROM stats_issue_daily") == str(total), "stats_issue_daily total = issue counts")
        check(q("SELECT sum(reports) FROM stats_daily") == str(total), "stats_daily total = issue counts")
        check(q("SELECT sum(reports) FROM stats_version_daily") == str(total), "stats_version_daily total = issue counts")
        check(q("SELECT count(*) FROM stats_issues") == str(len(issues)), "stats_issues: one row per issue")
        check(q("SELECT sum(new_issues) FROM stats_daily") == str(len(issues)), "every issue is new on one day")
        check(q("SELECT reports FROM stats_queue WHERE status = 'processed'") ==
              q("SELECT count(*) FROM reports WHERE status = 'processed'"), "stats_queue counts processed reports")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
