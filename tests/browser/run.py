#!/usr/bin/python3
"""run.py - the dashboard's browser test (ctest test_browser, labels db;browser).

1. `npm ci` of tests/browser/package-lock.json (playwright-core) into
   $STACKSIFT_BUILD_DIR/browser-node (skipped while the lock file is unchanged);
2. a real `stacksift serve` on a database of its own (tests/web_instance.py), loaded by
   deploy/demo.sh exactly as a newcomer would: fixture dSYMs, generated reports, the real
   corpus;
3. tests/browser/dashboard.test.js in Debian's headless Chromium (/usr/bin/chromium).
Screenshots: $STACKSIFT_BUILD_DIR/test-artifacts/dashboard-*.png (paths printed).
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from web_instance import Instance, env_or_die  # noqa: E402


def npm_ci(build):
    """node_modules for the test in build/browser-node, reinstalled when the lock changes."""
    dest = os.path.join(build, "browser-node")
    os.makedirs(dest, exist_ok=True)
    lock = open(os.path.join(HERE, "package-lock.json"), "rb").read()
    stamp = os.path.join(dest, ".lock-installed")
    if os.path.exists(stamp) and open(stamp, "rb").read() == lock and \
            os.path.isdir(os.path.join(dest, "node_modules", "playwright-core")):
        return dest
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(os.path.join(HERE, name), os.path.join(dest, name))
    t0 = time.time()
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=dest,
                   check=True, timeout=300)
    with open(stamp, "wb") as f:
        f.write(lock)
    print(f"npm ci: {time.time() - t0:.1f} s")
    return dest


def main():
    build = env_or_die("STACKSIFT_BUILD_DIR")
    source = env_or_die("STACKSIFT_SOURCE_DIR")
    for tool, why in (("node", "Node.js runs playwright-core"), ("npm", "npm installs playwright-core"),
                      ("/usr/bin/chromium", "Debian's chromium (deploy/install-deps.sh)")):
        if not shutil.which(tool):
            print(f"test_browser: {tool} not found: {why}", file=sys.stderr)
            return 1
    node_dir = npm_ci(build)
    artifacts = os.path.join(build, "test-artifacts")
    os.makedirs(artifacts, exist_ok=True)
    with open(os.path.join(env_or_die("STACKSIFT_FIXTURES"), "manifest.json")) as f:
        d5 = next(x for x in json.load(f)["fixtures"] if x["name"] == "dwarf5")["slices"][0]["uuid"]

    with Instance("browser", workers=2) as inst:
        env = dict(os.environ, STACKSIFT_URL=inst.url, INGEST_TOKEN=inst.tokens["ingest"],
                   UPLOAD_TOKEN=inst.tokens["upload"], READ_TOKEN=inst.tokens["read"],
                   ADMIN_TOKEN=inst.tokens["admin"], DEMO_WAIT_S="120",
                   STACKSIFT_DATABASE_URL=inst.db_url)   # the demo makes its Bugsnag project
        t0 = time.time()
        demo = subprocess.run([os.path.join(source, "deploy/demo.sh")], env=env, capture_output=True,
                              text=True, timeout=300)
        print(demo.stdout.strip())
        if demo.returncode != 0 or "demo loaded" not in demo.stdout:
            print(demo.stderr[-3000:], file=sys.stderr)
            print("test_browser: deploy/demo.sh failed\n0 passed, 1 failed")
            return 1
        print(f"deploy/demo.sh: {time.time() - t0:.1f} s")
        # the corpus's Bugsnag event went where bugsnag-cocoa sends it, with a project's key
        if "Bugsnag notifier payloads: 1 accepted at /bugsnag/notify" not in demo.stderr:
            print(demo.stderr[-3000:], file=sys.stderr)
            print("test_browser: the demo's Bugsnag event did not go to /bugsnag/notify\n"
                  "0 passed, 1 failed")
            return 1
        env.update(NODE_PATH=os.path.join(node_dir, "node_modules"), ARTIFACT_DIR=artifacts,
                   MISSING_UUID=d5,
                   SAMPLE_REPORT=os.path.join(source, "../shared/real-xcode/macsymbolicator-2021-03/"
                                              "Samples/multithread-sample.txt"))
        t0 = time.time()
        test = subprocess.run(["node", os.path.join(HERE, "dashboard.test.js")], env=env, timeout=300)
        print(f"dashboard.test.js: {time.time() - t0:.1f} s")
        if test.returncode != 0:
            print("server log tail:\n" + inst.tail_log(), file=sys.stderr)
        return test.returncode


if __name__ == "__main__":
    sys.exit(main())
