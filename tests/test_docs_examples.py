#!/usr/bin/env python3
"""test_docs_examples - the docs' copy-paste examples work against a real server (ctest
test_docs_examples, label db).

1. docs/getting-started.md, "Your first dSYM and your first report": its shell block runs
   as written with bash, in a checkout-like directory whose .data/tokens.env and
   .data/listen are what deploy/quickstart.sh leaves (the tokens and address of a real
   server, tests/web_instance.py), build-fixtures/ the built fixtures and ../shared the test
   data. The upload creates the fixture dSYMs, the report is received as apple-text, and it
   is grouped into an issue (provisionally: its app's dSYM is not there) that the API lists.
2. docs/clients/json-stacks.md: the JSON example POSTed as the page says is a 202 of format
   json and is processed into a hang issue.

Environment: as tests/web_instance.py (tests/run.sh and ctest set it).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_instance import Instance, check, checks_done  # noqa: E402

SRC = os.environ.get("STACKSIFT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(SRC), "shared")


def section_block(rel, heading, lang):
    """The first ```lang block after `heading` in docs file `rel`."""
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        text = f.read()
    at = text.find("\n" + heading + "\n")
    assert at >= 0, f"{rel} has no heading {heading!r}"
    m = re.search(r"```" + lang + r"\n(.*?)```", text[at:], re.S)
    assert m, f"{rel}: no ```{lang} block under {heading!r}"
    return m.group(1)


def wait_processed(inst, report_id, timeout_s=30):
    """The report's JSON once it is processed (or whatever it is at the timeout)."""
    deadline = time.time() + timeout_s
    body = {}
    while time.time() < deadline:
        r = inst.request("GET", "/api/v1/reports/" + report_id, token=inst.tokens["read"])
        body = r.json() if r.status == 200 else {}
        if body.get("status") in ("processed", "pending_dsym", "failed"):
            return body
        time.sleep(0.2)
    return body


def first_report(inst):
    block = section_block("docs/getting-started.md", "## Your first dSYM and your first report", "sh")
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "stacksift")
        os.makedirs(os.path.join(repo, ".data"))
        with open(os.path.join(repo, ".data", "tokens.env"), "w") as f:
            for scope in ("ingest", "upload", "read", "admin"):
                f.write(f"{scope.upper()}_TOKEN={inst.tokens[scope]}\n")
        with open(os.path.join(repo, ".data", "listen"), "w") as f:
            f.write(f"127.0.0.1:{inst.port}\n")
        os.symlink(inst.fixtures, os.path.join(repo, "build-fixtures"))
        os.symlink(SHARED, os.path.join(tmp, "shared"))
        out = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=repo, capture_output=True,
                             text=True, timeout=120)
    check(out.returncode == 0, f"getting-started's block exits 0 ({out.returncode}): {out.stderr[-500:]}")
    answers = []                     # curl adds no newline: the answers run together
    decoder, rest = json.JSONDecoder(), out.stdout.strip()
    while rest.startswith("{"):
        value, end = decoder.raw_decode(rest)
        answers.append(value)
        rest = rest[end:].strip()
    if not check(len(answers) == 3, f"three JSON answers (upload, report, issues): {out.stdout[:500]}"):
        return
    upload, report, issues = answers
    names = {f.get("name"): f.get("status") for f in upload.get("files", [])}
    check(names.get("FixtureApp") == "created" and names.get("FixtureKit") == "created",
          f"the fixture dSYMs are created: {names}")
    check(report.get("status") == "received" and report.get("format") == "apple-text" and report.get("id"),
          f"the corpus report is received as apple-text: {report}")
    check("issues" in issues, f"the issue list answers: {str(issues)[:200]}")
    model = wait_processed(inst, report.get("id", ""))
    # a real app's report without its dSYM: grouped provisionally, waiting for it
    check(model.get("status") in ("processed", "pending_dsym") and model.get("issue_id"),
          f"the report is grouped into an issue: {model.get('status')} {model.get('error')}")
    listed = inst.request("GET", "/api/v1/issues?sort=count&limit=50", token=inst.tokens["read"]).json()
    check(any(i["id"] == model.get("issue_id") for i in listed.get("issues", [])),
          "its issue is in the list the page's last command asks for")


def json_stack(inst):
    with open(os.path.join(SRC, "docs/clients/json-stacks.md"), encoding="utf-8") as f:
        example = re.search(r"```json\n(.*?)```", f.read(), re.S).group(1)
    r = inst.request("POST", "/api/v1/reports", body=example.encode(),
                     headers={"Content-Type": "application/json"}, token=inst.tokens["ingest"])
    body = r.json() if r.status == 202 else {}
    check(r.status == 202 and body.get("format") == "json", f"json-stacks.md's example: {r.status} {r.body[:200]}")
    model = wait_processed(inst, body.get("id", ""))
    check(model.get("status") in ("processed", "pending_dsym") and model.get("issue_id"),
          f"json-stacks.md's example is grouped: {model.get('status')} {model.get('error')}")
    if model.get("issue_id"):
        issue = inst.request("GET", f"/api/v1/issues/{model['issue_id']}", token=inst.tokens["read"]).json()
        check(issue.get("kind") == "hang", f"its issue is a hang: {issue.get('kind')}")


def main():
    with Instance("docs_examples") as inst:
        first_report(inst)
        json_stack(inst)
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
