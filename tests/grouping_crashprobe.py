#!/usr/bin/env python3
"""One bug, one issue, wherever it was reported: ../shared/crashprobe-data (SOURCE.md there).

CrashProbe's crashes as six services displayed them (Apple, Bugsee, Bugsnag, HockeyApp, Raygun,
Sentry; arm64 and armv7): one folder is one bug. Every file goes through `stacksift signature`
(the server's grouping rules, no dSYMs: the reports are symbolicated already) and:
  - every file is read, or refused with a reason when it holds no frame line at all;
  - the complete stacks (data.json says `complete` and the stack holds the frames data.json
    expects for the file's arch) of a folder share one fingerprint, and no two folders share
    one: pairwise precision and recall 1.0; their signature is in-app frames whose first is the
    crashing function data.json names;
  - incomplete and wrong stacks are grouped by what they show, never with another folder's
    complete ones.
Prints, per folder, the issues its reports fell into.
"""
import collections
import glob
import html
import itertools
import json
import os
import re
import subprocess
import sys

ROOT = os.environ.get("STACKSIFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
DATA = os.path.join(ROOT, "..", "shared", "crashprobe-data", "ios")
BIN = os.environ.get("STACKSIFT_BIN", os.path.join(ROOT, "build", "server", "stacksift"))
FRAME_LINE = re.compile(r"^\s*(<[^>]*>)*\s*\d+\s+\S")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def expected_frames(data, arch):
    """The frame names data.json expects for `arch` (exception lines left out)."""
    out = []
    for e in data["expected"]:
        text = html.unescape(re.sub(r"<[^>]*>", "", e))
        m = re.match(r"^(ARMv7|ARM64): (.*)$", text)
        if m:
            if m.group(1).lower() != arch:
                continue
            text = m.group(2)
        name = re.sub(r" \([^()]*:[\d-]+\)$", "", text).strip()
        if name.startswith(("-[", "+[")) or name.endswith("_block_invoke"):
            out.append(name)
    return out


def main():
    if not os.path.isdir(DATA):
        print("SKIP: no " + DATA)
        return 77
    files = sorted(glob.glob(os.path.join(DATA, "*", "*.crash")))
    if len(files) < 100:
        fail("expected the whole set, found %d files" % len(files))
    proc = subprocess.run([BIN, "signature"] + files, capture_output=True, text=True, timeout=300)
    sigs = {}
    for line in proc.stdout.splitlines():
        j = json.loads(line)
        sigs.setdefault(j["file"], j)
    rows = []
    for f in files:
        folder = os.path.basename(os.path.dirname(f))
        service, arch = os.path.basename(f)[1:-len(".crash")].split("_")
        data = json.load(open(os.path.join(os.path.dirname(f), "data.json")))
        status = [v[arch] for k, v in data["probes"].items() if k.lower() == service][0]
        text = open(f, encoding="utf-8", errors="replace").read()
        j = sigs.get(f)
        if j is None:
            fail("%s: no answer" % f)
            continue
        if "error" in j:
            # refused: only a file without any frame line may be, and with a reason
            if any(FRAME_LINE.match(l) for l in text.splitlines()):
                fail("%s/%s: refused though it has frame lines: %s" % (folder, os.path.basename(f),
                                                                     j["error"]))
            reason = [l for l in proc.stderr.splitlines() if f in l]
            if not reason or not reason[0].split(": ")[-1]:
                fail("%s: refused without a reason" % f)
            print("refused %s/%s: %s" % (folder, os.path.basename(f),
                                         reason[0].split(f + ": ")[-1] if reason else "?"))
            continue
        want = expected_frames(data, arch)
        holds = all(w in text for w in want)
        complete = status == "complete" and holds
        if status == "complete" and not holds:
            print("note %s/%s: data.json calls it complete, but it lacks %s: grouped by what "
                  "it shows" % (folder, os.path.basename(f), [w for w in want if w not in text]))
        rows.append(dict(folder=folder, file=os.path.basename(f), service=service, arch=arch,
                         status=status, complete=complete, want=want, sig=j, text=text))

    complete = [r for r in rows if r["complete"]]
    tp = fp = fn = 0
    for a, b in itertools.combinations(complete, 2):
        same_bug = a["folder"] == b["folder"]
        same_issue = a["sig"]["fingerprint"] == b["sig"]["fingerprint"]
        tp += same_bug and same_issue
        fp += not same_bug and same_issue
        fn += same_bug and not same_issue
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print("complete stacks: %d, pairwise precision %.3f, recall %.3f" % (len(complete), precision,
                                                                         recall))
    if precision != 1.0 or recall != 1.0:
        fail("pairwise precision %.3f, recall %.3f on the complete stacks" % (precision, recall))
    for r in complete:
        frames = r["sig"]["frames"]
        if r["sig"]["basis"] != "in_app" or not frames:
            fail("%s/%s: basis %s, not in-app frames" % (r["folder"], r["file"], r["sig"]["basis"]))
            continue
        first = r["want"][0] if r["want"] else None
        if first and frames[0]["function"] not in first:
            fail("%s/%s: the signature starts at %s, not %s" % (r["folder"], r["file"],
                                                                frames[0]["function"], first))
    by_issue = collections.defaultdict(set)
    for r in complete:
        by_issue[r["sig"]["fingerprint"]].add(r["folder"])
    wants = {(r["folder"], r["arch"]): r["want"] for r in rows}
    for r in rows:
        if r["complete"]:
            continue
        others = by_issue.get(r["sig"]["fingerprint"], set()) - {r["folder"]}
        # a stack that is another folder's bug (the data set holds one such copy) belongs there
        shows = {x for x in others if wants.get((x, r["arch"])) and
                 all(w in r["text"] for w in wants[(x, r["arch"])])}
        if shows:
            print("note %s/%s shows folder %s's bug and is grouped there" % (
                r["folder"], r["file"], sorted(shows)))
        others -= shows
        if others:
            fail("%s/%s (%s) grouped with folder %s's complete stacks" % (
                r["folder"], r["file"], r["status"], sorted(others)))
    print("\nper folder: the issues its reports fell into")
    for folder in sorted({r["folder"] for r in rows}):
        issues = collections.defaultdict(list)
        for r in rows:
            if r["folder"] == folder:
                issues[r["sig"]["fingerprint"]].append(
                    "%s_%s%s" % (r["service"], r["arch"], "" if r["complete"] else "(" + r["status"] + ")"))
        print("%s: %d issue(s)" % (folder, len(issues)))
        for fpr, members in issues.items():
            top = next(r["sig"] for r in rows if r["sig"]["fingerprint"] == fpr)
            print("   %s %s [%s]: %s" % (fpr[:12], top["basis"],
                                         " / ".join(f["function"] for f in top["frames"]),
                                         ", ".join(members)))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
