#!/usr/bin/env python3
"""test_docs - README.md and docs/ say only what the code does (ctest test_docs, label unit).

1. Settings: every STACKSIFT_* variable the code reads (the table in server/config/config.c,
   getenv() in server/ and common/, the deploy scripts and tests/run.sh) is documented, and
   every STACKSIFT_* name the docs mention is read somewhere (the tests' own variables and
   CMake options count as read; they need not be documented). Each row of the table in
   docs/operations.md "Configuration" names a variable of config.c with config.c's default,
   and every variable of config.c has a row.
2. Links: every relative link and image in README.md and docs/ resolves to a file of the
   repository, and a #fragment to a heading of that file (GitHub's heading anchors).
3. Commands: every `stacksift COMMAND` the docs name is a command `stacksift` lists, and
   every --option written after it is one its usage names; every ctest the docs name (a
   `test_*`, `real_*`, `reliability_*`, `releases_*`, `bench_*` word) is one `ctest -N`
   lists, or a test source of that name.
4. Routes: every `METHOD /path` the docs name is an operation of docs/openapi.yaml (whose
   routes test_openapi holds to the server's).
5. Files: every repository path the docs name in backticks (tests/..., deploy/..., server/...,
   common/..., migrations/..., docs/..., .ci/...) exists (globs must match something).
6. The README stays a README: at most ~150 lines, it names the two commands (which exist and
   which CI runs), links every page of docs/, and shows a small screenshot; each client
   family's page has a copy-paste example and the settings a team changes.
7. Examples: the JSON stack of docs/clients/json-stacks.md parses as stacksift's format; a
   minidump parses and a broken one is refused as docs/clients/minidumps.md says.

Environment: STACKSIFT_SOURCE_DIR, STACKSIFT_BIN, STACKSIFT_BUILD_DIR (tests/web.cmake sets them).
"""
import glob
import os
import re
import subprocess
import sys

import yaml

SRC = os.environ.get("STACKSIFT_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("STACKSIFT_BIN") or os.path.join(SRC, "build/server/stacksift")
BUILD = os.environ.get("STACKSIFT_BUILD_DIR") or os.path.join(SRC, "build")
SHARED = os.path.join(os.path.dirname(SRC), "shared")

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)
    return ok


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def doc_files():
    """README.md and every Markdown page under docs/, as paths relative to the source dir."""
    files = ["README.md"]
    for path in sorted(glob.glob(os.path.join(SRC, "docs", "**", "*.md"), recursive=True)):
        files.append(os.path.relpath(path, SRC))
    return files


DOCS = {rel: read(rel) for rel in doc_files()}


def prose(text):
    """The text without fenced code blocks' fence lines (their content stays: commands and
    routes in examples count too)."""
    return re.sub(r"^\s*```.*$", "", text, flags=re.M)


def code_spans(text):
    """Contents of inline `code` spans and of fenced blocks, line by line."""
    spans = []
    in_fence = False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            spans.append(line)
        else:
            spans.extend(re.findall(r"`([^`]+)`", line))
    return spans


# 1. Settings ------------------------------------------------------------------------------

def config_table():
    """{name: default or None} of the settings table in server/config/config.c."""
    text = read("server/config/config.c")
    table = {}
    for m in re.finditer(r'\{\s*"(STACKSIFT_[A-Z0-9_]+)",\s*(NULL|"((?:[^"\\]|\\.)*)")', text):
        table[m.group(1)] = None if m.group(2) == "NULL" else m.group(3)
    return table


def read_settings():
    """Every STACKSIFT_* variable some code reads: {name: where}."""
    found = {}
    for name in config_table():
        found[name] = "server/config/config.c"
    for pattern in ("server/**/*.c", "common/**/*.c"):
        for path in glob.glob(os.path.join(SRC, pattern), recursive=True):
            with open(path, encoding="utf-8") as f:
                for m in re.finditer(r'getenv\("(STACKSIFT_[A-Z0-9_]+)"\)', f.read()):
                    found.setdefault(m.group(1), os.path.relpath(path, SRC))
    scripts = glob.glob(os.path.join(SRC, "deploy", "*.sh")) + [os.path.join(SRC, "tests/run.sh")]
    for path in scripts:
        with open(path, encoding="utf-8") as f:
            for m in re.finditer(r"\$\{(STACKSIFT_[A-Z0-9_]+)", f.read()):
                found.setdefault(m.group(1), os.path.relpath(path, SRC))
    # what only the tests, the demo's helpers and the build read (a test's own knobs, a CMake
    # option): documenting them is fine, but they need not be documented
    optional = {}
    readers = [(r"getenv\(\"(STACKSIFT_[A-Z0-9_]+)\"\)", "tests/**/*.c"),
               (r"environ(?:\.get\(|\[)\"(STACKSIFT_[A-Z0-9_]+)\"", "tests/**/*.py"),
               (r"environ(?:\.get\(|\[)\"(STACKSIFT_[A-Z0-9_]+)\"", "deploy/**/*.py"),
               (r"process\.env\.(STACKSIFT_[A-Z0-9_]+)", "tests/**/*.js"),
               (r"\$\{?(STACKSIFT_[A-Z0-9_]+)", "tests/**/*.sh"),
               (r"option\((STACKSIFT_[A-Z0-9_]+)", "CMakeLists.txt")]
    for pattern, files in readers:
        for path in glob.glob(os.path.join(SRC, files), recursive=True):
            if "/node_modules/" in path:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for m in re.finditer(pattern, f.read()):
                    if m.group(1) not in found:
                        optional.setdefault(m.group(1), os.path.relpath(path, SRC))
    return found, optional


def check_settings():
    table = config_table()
    check(len(table) >= 40, f"config.c table parsed: {len(table)} settings")
    read_by, optional = read_settings()
    documented = {}
    for rel, text in DOCS.items():
        for name in re.findall(r"STACKSIFT_[A-Z0-9_]*[A-Z0-9]", text):
            documented.setdefault(name, rel)
    for name, where in sorted(read_by.items()):
        check(name in documented, f"{name} (read in {where}) is documented nowhere in README.md or docs/")
    for name, rel in sorted(documented.items()):
        check(name in read_by or name in optional, f"{rel} documents {name}, which no code reads")

    ops = DOCS["docs/operations.md"]
    section = ops.split("\n## Configuration\n", 1)
    if not check(len(section) == 2, "docs/operations.md has no '## Configuration' section"):
        return
    rows = {}
    for m in re.finditer(r"^\| `(STACKSIFT_[A-Z0-9_]+)` \| ([^|]*) \|", section[1].split("\n## ", 1)[0], re.M):
        rows[m.group(1)] = m.group(2).strip()
    for name, default in sorted(table.items()):
        if not check(name in rows, f"docs/operations.md's configuration table has no row for {name}"):
            continue
        if default is not None:
            check(rows[name] == f"`{default}`",
                  f"docs/operations.md: {name} default {rows[name]}, config.c says `{default}`")
    for name in rows:
        check(name in table, f"docs/operations.md's configuration table lists {name}, which config.c does not read")


# 2. Links ---------------------------------------------------------------------------------

def github_anchor(heading):
    """GitHub's anchor of a Markdown heading: lower case, markup and punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(rel):
    text = read(rel)
    seen = {}
    result = set()
    in_fence = False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not in_fence:
            a = github_anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            result.add(a if n == 0 else f"{a}-{n}")
    return result


def check_links():
    count = 0
    for rel, text in DOCS.items():
        base = os.path.dirname(rel)
        for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)\)", prose(text)):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue            # http(s), mailto: not ours to check
            count += 1
            path, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(base, path)) if path else rel
            full = os.path.join(SRC, dest)
            if not check(os.path.exists(full), f"{rel}: link {target} -> {dest} does not exist"):
                continue
            if fragment:
                if not check(dest.endswith(".md"), f"{rel}: link {target} has a fragment into a non-Markdown file"):
                    continue
                check(fragment in anchors(dest), f"{rel}: link {target}: {dest} has no heading #{fragment}")
    check(count >= 60, f"relative links checked: {count}")


# 3. Commands ------------------------------------------------------------------------------

def command_usages():
    """{command: its usage text}: the top-level usage's line of each command plus what
    `stacksift COMMAND --help` prints."""
    out = subprocess.run([BIN], capture_output=True, text=True)
    usage = out.stdout + out.stderr
    usages = {}
    for m in re.finditer(r"^  ([a-z]+)(.*)$", usage, re.M):
        usages[m.group(1)] = usages.get(m.group(1), "") + m.group(2) + "\n"
    for name in usages:
        if name == "serve":
            continue        # serve --help prints the settings, checked above
        helped = subprocess.run([BIN, name, "--help"], capture_output=True, text=True)
        usages[name] += helped.stdout + helped.stderr
    return usages


def check_commands():
    usages = command_usages()
    check({"serve", "migrate", "lookup", "symcache", "project", "token"} <= set(usages),
          f"stacksift's usage lists {sorted(usages)}")
    named = options = 0
    for rel, text in DOCS.items():
        for span in code_spans(text):
            for m in re.finditer(r"(?:^|[\s(|;$])stacksift ([a-z][a-z-]*)([^|;#`)]*)", span):
                named += 1
                name = m.group(1)
                if not check(name in usages, f"{rel}: `stacksift {name}` is not a command stacksift lists"):
                    continue
                for opt in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(2)):
                    options += 1
                    check(opt in usages[name], f"{rel}: `stacksift {name} ... {opt}`: its usage has no {opt}")
    check(named >= 30, f"stacksift commands named in the docs: {named}")
    check(options >= 10, f"stacksift options named in the docs: {options}")

    listing = subprocess.run(["ctest", "-N"], cwd=BUILD, capture_output=True, text=True).stdout
    registered = set(re.findall(r"Test +#\d+: (\S+)", listing))
    check(len(registered) >= 40, f"ctests registered: {len(registered)}")
    tests_named = 0
    for rel, text in DOCS.items():
        for span in code_spans(text):
            if not re.fullmatch(r"(test|real|reliability|releases|bench)_[a-z0-9_]+", span):
                continue
            tests_named += 1
            known = (span in registered or glob.glob(os.path.join(SRC, "tests", "**", span + ".*"), recursive=True))
            check(known, f"{rel}: `{span}` is no ctest and no test source")
    check(tests_named >= 30, f"ctests named in the docs: {tests_named}")


# 4. Routes --------------------------------------------------------------------------------

ROUTE_PREFIXES = ("/api/", "/bugsnag/", "/healthz", "/readyz", "/metrics", "/ui/")


def route_key(path):
    """A path with every parameter segment replaced by '*', without query or trailing slash."""
    path = path.split("?", 1)[0].rstrip("/") or "/"
    segments = []
    for seg in path.split("/"):
        if re.fullmatch(r"\{[^}]*\}|<[^>]*>|[A-Z][A-Z_]*|\d+|[0-9a-f-]{8,}|\.\.\.", seg):
            seg = "*"
        segments.append(seg)
    return "/".join(segments)


def check_routes():
    spec = yaml.safe_load(read("docs/openapi.yaml"))
    documented = set()
    for path, ops in spec["paths"].items():
        for method in ops:
            if method in ("get", "post", "put", "patch", "delete"):
                documented.add((method.upper(), route_key(path)))
    named = 0
    for rel, text in DOCS.items():
        if rel.endswith("openapi.yaml"):
            continue
        for span in code_spans(text):
            for m in re.finditer(r"\b(GET|POST|PUT|PATCH|DELETE)(?:/(GET|POST|PUT|PATCH|DELETE))? (/[^\s`,)]*)", span):
                path = m.group(3)
                if not path.startswith(ROUTE_PREFIXES) and path != "/":
                    continue
                for method in filter(None, (m.group(1), m.group(2))):
                    named += 1
                    check((method, route_key(path)) in documented,
                          f"{rel}: `{method} {path}` is not an operation of docs/openapi.yaml")
    check(named >= 40, f"routes named in the docs: {named}")


# 5. Files ---------------------------------------------------------------------------------

PATH_RE = re.compile(r"(?<![\w./-])((?:tests|deploy|server|common|migrations|docs|\.ci|cmake)/[\w./*+-]*)")


def check_files():
    named = 0
    for rel, text in DOCS.items():
        for span in code_spans(text):
            for m in PATH_RE.finditer(span):
                path = m.group(1).rstrip(".,:")
                if "NNNN" in path or path.endswith("/..."):
                    continue
                named += 1
                if "*" in path:
                    check(glob.glob(os.path.join(SRC, path)), f"{rel}: `{path}` matches no file")
                else:
                    check(os.path.exists(os.path.join(SRC, path)), f"{rel}: `{path}` does not exist")
    check(named >= 60, f"repository paths named in the docs: {named}")


# 6. The README ----------------------------------------------------------------------------

def check_readme():
    readme = DOCS["README.md"]
    lines = readme.count("\n")
    check(lines <= 160, f"README.md has {lines} lines (a README a newcomer reads in five minutes: ~150)")
    for cmd in ("deploy/quickstart.sh", "tests/run.sh"):
        check(f"\n{cmd} " in readme, f"README.md's two commands do not include {cmd}")
        check(os.access(os.path.join(SRC, cmd), os.X_OK), f"{cmd} is not executable")
    check(re.search(r"^tests/run\.sh\s*$", read(".ci/run"), re.M), ".ci/run does not run tests/run.sh")
    linked = set(re.findall(r"\]\((docs/[^)#\s]+)", readme))
    for rel in DOCS:
        if rel.startswith("docs/"):
            check(rel in linked, f"README.md does not link {rel}")
    check("docs/openapi.yaml" in linked, "README.md does not link docs/openapi.yaml")
    # each client family's page: the settings a team changes and a copy-paste example
    for rel, text in DOCS.items():
        if rel.startswith("docs/clients/"):
            check(re.search(r"^```(sh|swift|objc|json)$", text, re.M), f"{rel} has no copy-paste example")
            check(re.search(r"^\| .* \|$", text, re.M) or "Content-Type" in text,
                  f"{rel} names no settings (a table of what to change)")
    shot = re.search(r"!\[[^\]]+\]\((docs/[^)]+\.png)\)", readme)
    if check(shot, "README.md shows no screenshot"):
        path = os.path.join(SRC, shot.group(1))
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{shot.group(1)} is not a PNG")
            check(len(data) < 100 * 1024, f"{shot.group(1)} is {len(data)} bytes: keep the README's screenshot small")


# 7. Examples ------------------------------------------------------------------------------

def check_examples():
    import tempfile
    text = DOCS["docs/clients/json-stacks.md"]
    m = re.search(r"```json\n(.*?)```", text, re.S)
    if check(m, "docs/clients/json-stacks.md has no JSON example"):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(m.group(1))
        out = subprocess.run([BIN, "parse", f.name], capture_output=True, text=True)
        os.unlink(f.name)
        check(out.returncode == 0 and re.search(r"^format:\s+json$", out.stdout, re.M),
              f"the JSON example of docs/clients/json-stacks.md does not parse as json: {out.stdout}{out.stderr}")
    dumps = sorted(glob.glob(os.path.join(SHARED, "minidumps", "*", "*.dmp")))
    if check(dumps, f"no minidumps under {SHARED}/minidumps"):
        doc = DOCS["docs/clients/minidumps.md"]
        bad = [d for d in dumps if "/invalid/" in d]
        good = [d for d in dumps if "/invalid/" not in d]
        for d in good:
            out = subprocess.run([BIN, "parse", d], capture_output=True, text=True)
            check(out.returncode == 0 and re.search(r"^format:\s+minidump$", out.stdout, re.M),
                  f"{d} does not parse as a minidump as docs/clients/minidumps.md says: "
                  f"{out.returncode} {out.stderr}")
        m = re.search(r"e\.g\. `(minidump: [^`]+)`", doc)
        if check(m, "docs/clients/minidumps.md quotes no refusal of a broken dump"):
            msgs = [subprocess.run([BIN, "parse", d], capture_output=True, text=True) for d in bad]
            quoted = " ".join(m.group(1).split())   # the page wraps its lines
            check(any(o.returncode == 1 and quoted in o.stderr for o in msgs),
                  f"no broken dump is refused with the message docs/clients/minidumps.md quotes: "
                  f"{[o.stderr for o in msgs]}")


def main():
    for step in (check_settings, check_links, check_commands, check_routes, check_files,
                 check_readme, check_examples):
        step()
    for f in failures:
        print("FAIL:", f)
    print(f"test_docs: {len(DOCS)} pages, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
