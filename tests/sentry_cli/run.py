#!/usr/bin/python3
"""run.py - the real `sentry-cli debug-files upload` against stacksift (ctest test_sentry_cli,
label db).

1. `npm ci` of tests/sentry_cli/package-lock.json (@sentry/cli-linux-x64, pinned) into
   $STACKSIFT_BUILD_DIR/sentry-cli-node (skipped while the lock file is unchanged);
2. a real `stacksift serve` on a database of its own (tests/web_instance.py);
3. sentry-cli, as a CI job runs it (SENTRY_URL, SENTRY_AUTH_TOKEN = a stacksift token with
   scope upload, SENTRY_ORG, SENTRY_PROJECT; HOME empty so no ~/.sentryclirc applies),
   uploads the fixture app's dSYMs and executables with --wait:
   - an executable alone first, then its dSYM, then the executable again: DWARF wins;
   - three uploads at once whose files overlap (fat and thin, executables and dSYMs of the
     same UUIDs: sentry-cli splits fat files into thin slices);
   then every slice is stored with DWARF and with its executable's unwind info (as
   llvm-objdump-14 --unwind-info lists it: tests/unwind_oracle.py), and POST /api/v1/symbolicate, which reads the
   symcaches stored in Postgres, agrees with llvm-symbolizer-14 on addresses sampled over each
   slice's __text (tests/lookup_oracle.py's sampling and comparison rules);
4. every file assembled from the node's own copies of its chunks (none from Postgres), which
   are gone afterwards; the chunks of a file an assemble request named first are written at
   their offsets into the file (in any order, no local copy) and a placed file whose bytes
   went bad is put together again from Postgres; a local copy changed on disk or missing is
   read from Postgres; the chunk options; a poll right after the request that started an
   assembly waits for its outcome;
5. bad input on the three routes, each a 4xx with a JSON body (and `detail`, which
   sentry-cli prints) or an assemble "error", with nothing half stored;
6. with STACKSIFT_CHUNK_COMPRESSION=none the options offer no compression and sentry-cli
   sends its chunks as they are (stored plain), and the upload works the same.
Prints "N passed, N failed" like tests/harness.h.
"""
import fcntl
import gzip
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from web_instance import Instance, check, checks_done, env_or_die  # noqa: E402
import lookup_oracle  # noqa: E402
import unwind_oracle  # noqa: E402

CLI_PACKAGE = "@sentry/cli-linux-x64"
CHUNKS = "/api/0/organizations/acme/chunk-upload/"
ASSEMBLE = "/api/0/projects/acme/default/files/difs/assemble/"


def npm_ci(build):
    """The pinned sentry-cli in build/sentry-cli-node, reinstalled when the lock changes;
    returns the path of the sentry-cli executable."""
    dest = os.path.join(build, "sentry-cli-node")
    os.makedirs(dest, exist_ok=True)
    lock = open(os.path.join(HERE, "package-lock.json"), "rb").read()
    stamp = os.path.join(dest, ".lock-installed")
    exe = os.path.join(dest, "node_modules", CLI_PACKAGE, "bin", "sentry-cli")
    # ctest runs the tests that use the client in parallel: one installs, the others wait
    # (npm ci empties node_modules first, so a second install would pull it from under them).
    with open(os.path.join(build, "sentry-cli-node.lock"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not (os.path.exists(stamp) and open(stamp, "rb").read() == lock and
                os.access(exe, os.X_OK)):
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(os.path.join(HERE, name), os.path.join(dest, name))
            t0 = time.time()
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                           cwd=dest, check=True, timeout=300)
            with open(stamp, "wb") as f:
                f.write(lock)
            print(f"npm ci: {time.time() - t0:.1f} s")
    return exe


class Cli:
    """sentry-cli with the environment a CI job sets."""

    def __init__(self, exe, inst, home):
        self.exe = exe
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SENTRY_")}
        self.env.update(HOME=home, SENTRY_URL=inst.url, SENTRY_AUTH_TOKEN=inst.tokens["upload"],
                        SENTRY_ORG="acme", SENTRY_PROJECT="default")

    def start(self, paths, token=None):
        env = dict(self.env)
        if token is not None:
            env["SENTRY_AUTH_TOKEN"] = token
        return subprocess.Popen([self.exe, "debug-files", "upload", "--wait", *paths], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def upload(self, paths, what, token=None, expect_ok=True):
        p = self.start(paths, token)
        out, err = p.communicate(timeout=300)
        if expect_ok:
            ok = check(p.returncode == 0 and "ERROR" not in out,
                       f"{what}: sentry-cli exited {p.returncode}\n{out}\n{err[-2000:]}")
            if ok:
                print(f"{what}:\n{out.rstrip()}")
        return p.returncode, out, err


def dsym_row(inst, uuid):
    r = inst.request("GET", f"/api/v1/dsyms/{uuid}", token=inst.tokens["read"])
    return r.json() if r.status == 200 else None


def counts(inst):
    """Rows of the tables an upload writes."""
    out = inst.psql(inst.db_url, "SELECT (SELECT count(*) FROM upload_chunks), "
                    "(SELECT count(*) FROM dif_assemblies), (SELECT count(*) FROM dsyms), "
                    "(SELECT count(*) FROM blobs)")
    return tuple(int(x) for x in out.strip().split("|"))


def multipart(parts):
    """A multipart body of (field, filename, bytes) parts; returns (body, content type)."""
    boundary = "stacksift-sentry-cli-test-4f2a"
    body = b""
    for field, filename, data in parts:
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; "
                 f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
        body += data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def post_chunks(inst, parts, token=None):
    body, ctype = multipart(parts)
    return inst.request("POST", CHUNKS, body=body, token=token or inst.tokens["upload"],
                        headers={"Content-Type": ctype})


def assemble(inst, files, token=None, path=ASSEMBLE):
    return inst.request("POST", path, body=files, token=token or inst.tokens["upload"])


def wait_assembled(inst, files, timeout_s=60):
    """Poll like sentry-cli --wait until every file is ok or error; the last answer."""
    deadline = time.time() + timeout_s
    while True:
        r = assemble(inst, files)
        states = {k: v["state"] for k, v in r.json().items()} if r.status == 200 else {}
        if r.status != 200 or all(s in ("ok", "error") for s in states.values()) \
                or time.time() > deadline:
            return r
        time.sleep(0.2)


def is_json_error(r, status, what):
    """A 4xx with the stacksift error shape and Sentry's detail."""
    try:
        body = r.json()
    except ValueError:
        body = None
    return check(r.status == status and isinstance(body, dict) and body.get("error", {}).get("message")
                 and body.get("detail") == body["error"]["message"],
                 f"{what}: want {status} with a JSON error and detail, got {r.status} {r.body[:300]!r}")


# ---- symbolication against llvm-symbolizer -----------------------------------------------------

def compare_symbolication(inst, fixtures, manifest):
    """Each distinct slice: sampled addresses through POST /api/v1/symbolicate (the stored
    symcaches) against llvm-symbolizer on the dSYM."""
    rng = random.Random(20261127)
    st = lookup_oracle.Stats(20)
    done = set()
    for fx in manifest["fixtures"]:
        for sl in fx["slices"]:
            if sl["uuid"] in done:
                continue
            done.add(sl["uuid"])
            exp = lookup_oracle.expectations(fixtures, fx, sl, rng)
            vmaddr, vmsize = int(sl["text_vmaddr"], 16), int(sl["text_vmsize"], 16)
            exp = {a: e for a, e in exp.items() if vmaddr <= a < vmaddr + vmsize}
            load = 0x104000000 + rng.randrange(1 << 12) * 0x4000
            runtime_of = lambda a, load=load, vmaddr=vmaddr: a - vmaddr + load  # noqa: E731
            addrs = sorted(exp)
            got = {}
            for i in range(0, len(addrs), 1000):
                batch = addrs[i:i + 1000]
                body = {"images": [{"uuid": sl["uuid"], "arch": sl["arch"], "name": fx["image"],
                                    "load_address": hex(load)}],
                        "stacks": [[hex(runtime_of(a))] for a in batch]}   # each a pc: exact
                r = inst.request("POST", "/api/v1/symbolicate", body=body, token=inst.tokens["read"])
                if not check(r.status == 200, f"symbolicate {fx['name']}: {r.status} {r.body[:300]!r}"):
                    return
                for a, stack in zip(batch, r.json()["stacks"]):
                    # the API says line null where `stacksift lookup` (the oracle's other
                    # side) says 0: both mean no line
                    got[runtime_of(a)] = [dict(s, line=s["line"] or 0) for s in stack[0]["symbols"]]
            lookup_oracle.compare(fx["name"], "sentry-cli", exp, got, runtime_of, st)
    for m in st.mismatches[:st.show]:
        print(f"  mismatch: {m}", file=sys.stderr)
    check(st.addresses > 500 and not st.mismatches,
          f"symbolication through the uploaded symcaches matches llvm-symbolizer: "
          f"{len(st.mismatches)} of {st.addresses} addresses differ")
    print(f"symbolication: {st.addresses} addresses, {st.frames} frames over {len(done)} slices "
          f"match llvm-symbolizer (tolerated: {st.rules})")


# ---- local chunk copies, polls ------------------------------------------------------------------

def log_events(inst, event):
    out = []
    with open(inst.log_path, "rb") as f:
        for line in f:
            if f'"event":"{event}"'.encode() in line:
                out.append(json.loads(line))
    return out


def chunk_dir(inst):
    return os.path.join(inst.tmp, "data", "tmp", "chunks")


def send_file(inst, data):
    """`data` as sentry-cli sends a file: 8 MiB chunks, gzip; returns (file SHA-1, chunk
    SHA-1s)."""
    shas = []
    for at in range(0, len(data), 8 << 20):
        piece = data[at:at + (8 << 20)]
        shas.append(hashlib.sha1(piece).hexdigest())
        r = post_chunks(inst, [("file_gzip", shas[-1], gzip.compress(piece, 1))])
        check(r.status == 200, f"chunk {len(shas)} stored: {r.status} {r.body[:200]!r}")
    return hashlib.sha1(data).hexdigest(), shas


def poll_waits(inst, fixtures, fx):
    """The request that starts an assembly answers "created" at once (sentry-cli without
    --wait stops there); the next one, sent right after, waits on this node until the file
    is done and answers its outcome instead of "assembling"."""
    f = fx["arm64-O0"] if "arm64-O0" in fx else next(iter(fx.values()))
    dsym = os.path.join(fixtures, f["dsym"], "Contents", "Resources", "DWARF")
    path = os.path.join(dsym, os.listdir(dsym)[0])
    data = open(path, "rb").read() + b"\0" * 16   # a file the store has not seen
    sha, chunks = send_file(inst, data)
    files = {sha: {"name": "Waited", "chunks": chunks}}
    r = assemble(inst, files)
    check(r.status == 200 and r.json()[sha]["state"] == "created",
          f"the request that starts the assembly: created: {r.body[:200]!r}")
    t0 = time.time()
    r = assemble(inst, files)
    state = r.json()[sha]["state"] if r.status == 200 else None
    check(state == "ok", f"the poll right after waited for the outcome: {state} "
          f"after {time.time() - t0:.2f} s: {r.body[:300]!r}")


def files_dir(inst):
    return os.path.join(inst.tmp, "data", "tmp", "files")


def placed_checked(inst, fixtures, fx):
    """As sentry-cli does: an assemble request names a file and its chunks first, then the
    missing chunks come (here the last one first). Each is written at its offset into the
    file (tmp/files/<sha1>, no local copy), and the assembly ingests that file; one whose
    bytes went bad on disk is put together again from Postgres, still ok."""
    f = fx["arm64-O0"] if "arm64-O0" in fx else next(iter(fx.values()))
    dsym = os.path.join(fixtures, f["dsym"], "Contents", "Resources", "DWARF")
    path = os.path.join(dsym, os.listdir(dsym)[0])
    base = open(path, "rb").read()
    for tag, spoil in ((b"placed", False), (b"spoilt", True)):
        # two chunks: the Mach-O and trailing bytes past 8 MiB, which it does not use
        data = base + tag * ((9 << 20) // len(tag))
        pieces = [data[at:at + (8 << 20)] for at in range(0, len(data), 8 << 20)]
        shas = [hashlib.sha1(p).hexdigest() for p in pieces]
        sha = hashlib.sha1(data).hexdigest()
        files = {sha: {"name": "Placed", "chunks": shas}}
        r = assemble(inst, files)
        check(r.status == 200 and sorted(r.json()[sha]["missingChunks"]) == sorted(shas),
              f"{tag}: both chunks asked for: {r.body[:200]!r}")
        for i in reversed(range(len(pieces))):
            r = post_chunks(inst, [("file_gzip", shas[i], gzip.compress(pieces[i], 1))])
            check(r.status == 200, f"{tag}: chunk {i} stored: {r.body[:200]!r}")
        placed = os.path.join(files_dir(inst), sha)
        check(os.path.exists(placed) and open(placed, "rb").read() == data,
              f"{tag}: the chunks are at their offsets in {placed}")
        copies = [c for c in shas if os.path.exists(os.path.join(chunk_dir(inst), c))]
        check(copies == [], f"{tag}: no local copy of a chunk put in place: {copies}")
        if spoil:
            with open(placed, "r+b") as fh:
                fh.write(b"X" * 8)
        r = wait_assembled(inst, files)
        res = r.json().get(sha, {}) if r.status == 200 else {}
        check(res.get("state") == "ok", f"{tag}: assembled: {r.body[:300]!r}")
        ev = [e for e in log_events(inst, "dif_assembled") if e["sha1"] == sha]
        want = 0 if spoil else len(shas)
        check(len(ev) == 1 and ev[0]["placed_chunks"] == want and ev[0]["local_chunks"] == 0,
              f"{tag}: {want} chunks used in place, the others from Postgres: {ev}")
        check(not os.path.exists(placed), f"{tag}: the placed file is gone once stored")


def local_copy_checked(inst):
    """A local chunk copy is used only while its bytes hash to its name: a copy changed on
    disk is read from Postgres instead (the file's SHA-1 then checks), and a missing one too."""
    data = b"a chunk whose local copy goes bad " * 40
    sha = hashlib.sha1(data).hexdigest()
    r = post_chunks(inst, [("file_gzip", sha, gzip.compress(data))])
    check(r.status == 200, f"chunk stored: {r.body!r}")
    copy = os.path.join(chunk_dir(inst), sha)
    check(open(copy, "rb").read() == data, "the node keeps the chunk's uncompressed bytes")
    with open(copy, "r+b") as f:
        f.write(b"X" * 8)
    r = wait_assembled(inst, {sha: {"name": "notes.txt", "chunks": [sha]}})
    res = r.json().get(sha, {}) if r.status == 200 else {}
    # the whole file's SHA-1 checked (the bytes came from Postgres): only then "no Mach-O"
    check(res.get("state") == "error" and "Mach-O" in (res.get("detail") or ""),
          f"a changed local copy is not used: {r.body[:300]!r}")
    data2 = b"a chunk whose local copy is gone " * 40
    sha2 = hashlib.sha1(data2).hexdigest()
    post_chunks(inst, [("file", sha2, data2)])
    os.unlink(os.path.join(chunk_dir(inst), sha2))
    r = wait_assembled(inst, {sha2: {"name": "notes2.txt", "chunks": [sha2]}})
    res = r.json().get(sha2, {}) if r.status == 200 else {}
    check(res.get("state") == "error" and "Mach-O" in (res.get("detail") or ""),
          f"a missing local copy is read from Postgres: {r.body[:300]!r}")


# ---- bad input ---------------------------------------------------------------------------------

def raw_declared(inst, declared, token):
    """A chunk POST that declares `declared` bytes and sends none: the answer must come from
    the headers alone."""
    head = (f"POST {CHUNKS} HTTP/1.1\r\nHost: 127.0.0.1:{inst.port}\r\nConnection: close\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: {declared}\r\n"
            f"Content-Type: multipart/form-data; boundary=x\r\n\r\n")
    with socket.create_connection(("127.0.0.1", inst.port), timeout=30) as sock:
        sock.sendall(head.encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])

    class R:
        pass
    r = R()
    r.status, r.body = status, body
    r.json = lambda: json.loads(body)
    return r


def bad_input(inst, cli, fixtures):
    T = inst.tokens
    before = counts(inst)
    good = b"a chunk that is fine " * 100
    good_sha = hashlib.sha1(good).hexdigest()
    other = hashlib.sha1(b"something else").hexdigest()

    # A chunk whose SHA-1 differs, alone and next to a good one: nothing stored.
    r = post_chunks(inst, [("file_gzip", other, gzip.compress(good))])
    is_json_error(r, 400, "chunk whose SHA-1 differs (gzip)")
    r = post_chunks(inst, [("file", good_sha, good), ("file", other, good)])
    is_json_error(r, 400, "a good chunk and one whose SHA-1 differs")
    check(b"SHA-1" in r.body, "the message says the SHA-1 differs")
    check(counts(inst) == before, f"nothing stored for a bad chunk request: {before} -> {counts(inst)}")
    # Corrupt and truncated gzip, a name that is not a SHA-1, an unknown field, no parts.
    is_json_error(post_chunks(inst, [("file_gzip", good_sha, b"\x1f\x8b\x08garbage")]), 400, "corrupt gzip")
    is_json_error(post_chunks(inst, [("file_gzip", good_sha, gzip.compress(good)[:-12])]), 400,
                  "truncated gzip")
    is_json_error(post_chunks(inst, [("file", "../../etc/passwd", good)]), 400, "a name that is not a SHA-1")
    is_json_error(post_chunks(inst, [("data", good_sha, good)]), 400, "an unknown field")
    is_json_error(inst.request("POST", CHUNKS, body=b"just bytes", token=T["upload"],
                               headers={"Content-Type": "application/octet-stream"}), 400,
                  "not multipart")
    # Over the chunk size: declared 2 GiB (answered from the headers), sent 8 MiB + 1, and a
    # gzip that inflates past 8 MiB.
    is_json_error(raw_declared(inst, 2 << 30, T["upload"]), 413, "a 2 GiB declared chunk")
    big = b"\0" * ((8 << 20) + 1)
    is_json_error(post_chunks(inst, [("file", hashlib.sha1(big).hexdigest(), big)]), 413,
                  "a chunk over the chunk size")
    is_json_error(post_chunks(inst, [("file_gzip", hashlib.sha1(big).hexdigest(), gzip.compress(big))]),
                  413, "a gzip chunk that inflates past the chunk size")
    # Tokens: none, unknown, without scope upload; sentry-cli with a wrong token fails and
    # says why.
    is_json_error(post_chunks(inst, [("file", good_sha, good)], token="ss_000000000000_" + "0" * 64),
                  401, "unknown token")
    is_json_error(inst.request("GET", CHUNKS), 401, "no token")
    is_json_error(assemble(inst, {good_sha: {"name": "x", "chunks": [good_sha]}}, token=T["read"]),
                  403, "a read token")
    rc, out, err = cli.upload([os.path.join(fixtures, "kit")], "wrong token",
                              token="ss_000000000000_" + "0" * 64, expect_ok=False)
    check(rc != 0 and "401" in err, f"sentry-cli with a wrong token fails with 401: rc {rc} {err[-500:]}")
    check(counts(inst) == before, f"nothing stored by refused requests: {before} -> {counts(inst)}")

    # Assemble of unknown chunks: not_found naming exactly those, nothing recorded.
    fake = hashlib.sha1(b"a file nobody sent").hexdigest()
    r = assemble(inst, {fake: {"name": "Ghost", "chunks": [other, good_sha, other]}})
    body = r.json() if r.status == 200 else {}
    check(r.status == 200 and body.get(fake, {}).get("state") == "not_found"
          and sorted(body[fake]["missingChunks"]) == sorted({other, good_sha}),
          f"assemble of unknown chunks: not_found with both: {r.body[:300]!r}")
    check(counts(inst) == before, "nothing recorded for an assemble of unknown chunks")
    # Malformed assemble bodies and an unknown project slug.
    is_json_error(inst.request("POST", ASSEMBLE, body=b"{", token=T["upload"],
                               headers={"Content-Type": "application/json"}), 400, "assemble: not JSON")
    is_json_error(assemble(inst, {"not-a-sha1": {"name": "x", "chunks": []}}), 400, "assemble: key not a SHA-1")
    is_json_error(assemble(inst, {fake: {"name": "x", "chunks": ["zz"]}}), 400, "assemble: chunk not a SHA-1")
    is_json_error(assemble(inst, {fake: {"chunks": [good_sha]}}), 400, "assemble: no name")
    is_json_error(assemble(inst, {fake: {"name": "x", "chunks": [good_sha]}},
                           path="/api/0/projects/acme/No%20Such/files/difs/assemble/"), 404,
                  "assemble: not a project slug")
    is_json_error(assemble(inst, {fake: {"name": "x", "chunks": [good_sha]}},
                           path="/api/0/projects/acme/nosuchproject/files/difs/assemble/"), 404,
                  "assemble: a project that does not exist")
    check(counts(inst) == before, "nothing recorded for refused assemble requests")
    # Another project's slug is accepted once the project exists.
    inst.psql(inst.db_url, "INSERT INTO projects (slug, name) VALUES ('ios-app', 'iOS app')")
    r = assemble(inst, {fake: {"name": "x", "chunks": [other]}},
                 path="/api/0/projects/acme/ios-app/files/difs/assemble/")
    check(r.status == 200 and r.json()[fake]["state"] == "not_found",
          f"assemble into project ios-app: {r.status} {r.body[:200]!r}")

    # Chunks that are fine but do not make the file named: error, no debug file.
    r = post_chunks(inst, [("file", good_sha, good)])
    check(r.status == 200 and r.json() == {"chunks": 1, "created": 1}, f"a good chunk is stored: {r.body!r}")
    r = wait_assembled(inst, {fake: {"name": "Ghost", "chunks": [good_sha]}})
    res = r.json().get(fake, {}) if r.status == 200 else {}
    check(res.get("state") == "error" and "SHA-1" in (res.get("detail") or ""),
          f"chunks whose whole SHA-1 differs: error with detail: {r.body[:300]!r}")
    # A file that is whole but no debug file: error naming why.
    r = wait_assembled(inst, {good_sha: {"name": "notes.txt", "chunks": [good_sha]}})
    res = r.json().get(good_sha, {}) if r.status == 200 else {}
    check(res.get("state") == "error" and "Mach-O" in (res.get("detail") or "") and res.get("dif") is None,
          f"not a debug file: error with detail: {r.body[:300]!r}")
    after = counts(inst)
    check(after[2:] == before[2:], f"no debug file or blob from failed assemblies: {before} -> {after}")
    # An empty file (no chunks) is an error, never not_found with nothing missing (which
    # sentry-cli would take for done).
    empty = hashlib.sha1(b"").hexdigest()
    r = wait_assembled(inst, {empty: {"name": "Empty", "chunks": []}})
    res = r.json().get(empty, {}) if r.status == 200 else {}
    check(res.get("state") == "error", f"an empty file is an error: {r.body[:300]!r}")


def main():
    build = env_or_die("STACKSIFT_BUILD_DIR")
    env_or_die("STACKSIFT_SOURCE_DIR")
    for tool in ("node", "npm", lookup_oracle.SYMBOLIZER):
        if not shutil.which(tool):
            print(f"test_sentry_cli: {tool} not found", file=sys.stderr)
            return 1
    exe = npm_ci(build)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    print(f"client: {version}")
    fixtures = env_or_die("STACKSIFT_FIXTURES")
    manifest = lookup_oracle.load_manifest(fixtures)
    fx = {f["name"]: f for f in manifest["fixtures"]}
    home = tempfile.mkdtemp(prefix="stacksift-sentry-cli-home.")
    work = tempfile.mkdtemp(prefix="stacksift-sentry-cli-files.")
    try:
        # info: the dif_assembled events tell where each chunk came from
        with Instance("sentrycli", workers=1, extra_env={"STACKSIFT_LOG_LEVEL": "info"}) as inst:
            cli = Cli(exe, inst, home)
            try:
                run(inst, cli, fixtures, fx, manifest, work)
            finally:
                if checks_failed():
                    print("server log tail:\n" + inst.tail_log(40), file=sys.stderr)
        with Instance("sentrycli_expiry", extra_env={"STACKSIFT_CHUNK_EXPIRY_S": "2"}) as inst:
            expiry(inst)
        with Instance("sentrycli_plain", extra_env={"STACKSIFT_CHUNK_COMPRESSION": "none",
                                                    "STACKSIFT_LOG_LEVEL": "info"}) as inst:
            plain_chunks(inst, Cli(exe, inst, home), fixtures, fx)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return checks_done()


def plain_chunks(inst, cli, fixtures, fx):
    """STACKSIFT_CHUNK_COMPRESSION=none: no compression offered, so sentry-cli sends each chunk
    as it is (field `file`); the file is assembled and stored with DWARF as with gzip."""
    opts = inst.request("GET", CHUNKS, token=inst.tokens["upload"]).json()
    check(opts["compression"] == [], f"no compression offered: {opts}")
    f = fx["arm64-O0"] if "arm64-O0" in fx else next(iter(fx.values()))
    rc, out, _ = cli.upload([os.path.join(fixtures, f["dsym"])], "dSYM with plain chunks")
    for sl in f["slices"]:
        row = dsym_row(inst, sl["uuid"])
        check(row is not None and row["has_dwarf"], f"{f['name']} {sl['uuid']}: stored with DWARF ({row})")
    kinds = inst.psql(inst.db_url, "SELECT gzip, count(*) FROM upload_chunks GROUP BY 1").strip()
    check(kinds.startswith("f|") and "\n" not in kinds, f"every chunk came plain: {kinds!r}")
    # The file was put together in place and hashed once: its blob is named by its SHA-256.
    dwarf = os.path.join(fixtures, f["dsym"], "Contents", "Resources", "DWARF")
    want = hashlib.sha256(open(os.path.join(dwarf, os.listdir(dwarf)[0]), "rb").read()).hexdigest()
    got = inst.psql(inst.db_url, "SELECT DISTINCT original_blob FROM dsyms").strip()
    ev = log_events(inst, "dif_assembled")
    check(got == want and ev and all(e["placed_chunks"] == e["chunks"] for e in ev),
          f"the placed file's blob is named by its SHA-256: {got!r} vs {want}, {ev}")


def expiry(inst):
    """Chunks no file was assembled from are deleted after STACKSIFT_CHUNK_EXPIRY_S; a file
    that needs them then asks for them again."""
    data = b"a chunk nobody assembles " * 50
    sha = hashlib.sha1(data).hexdigest()
    r = post_chunks(inst, [("file_gzip", sha, gzip.compress(data))])
    check(r.status == 200 and counts(inst)[0] == 1, f"a chunk stored: {r.body!r}")
    deadline = time.time() + 20
    while counts(inst)[0] and time.time() < deadline:
        time.sleep(0.2)
    check(counts(inst)[0] == 0, "the unassembled chunk expired (STACKSIFT_CHUNK_EXPIRY_S=2)")
    file_sha = hashlib.sha1(b"x" + data).hexdigest()
    r = assemble(inst, {file_sha: {"name": "Late", "chunks": [sha]}})
    check(r.status == 200 and r.json()[file_sha]["missingChunks"] == [sha],
          f"an expired chunk is asked for again: {r.body[:200]!r}")


def checks_failed():
    from web_instance import _counts
    return _counts["failed"] > 0


def run(inst, cli, fixtures, fx, manifest, work):
    # 1. Executable alone, then its dSYM, then the executable again: the DWARF stays.
    kit = fx["kit"]
    kit_uuid = kit["slices"][0]["uuid"]
    exe_dir = os.path.join(work, "kit-exe", "FixtureKit.framework")
    os.makedirs(exe_dir)
    shutil.copy(os.path.join(fixtures, kit["binary"]), exe_dir)
    dsym_dir = os.path.join(work, "kit-dsym")
    shutil.copytree(os.path.join(fixtures, kit["dsym"]),
                    os.path.join(dsym_dir, os.path.basename(kit["dsym"])))
    cli.upload([os.path.dirname(exe_dir)], "kit executable alone")
    row = dsym_row(inst, kit_uuid)
    check(row is not None and row["has_dwarf"] is False, f"executable alone: a symbol table ({row})")
    cli.upload([dsym_dir], "kit dSYM after it")
    row = dsym_row(inst, kit_uuid)
    check(row is not None and row["has_dwarf"] is True, f"the dSYM replaced it ({row})")
    cli.upload([os.path.dirname(exe_dir)], "kit executable again")
    row2 = dsym_row(inst, kit_uuid)
    check(row2 == row, f"the executable again changes nothing ({row} -> {row2})")
    # the executable's unwind info stayed in the symcache when the dSYM replaced its names
    symc = unwind_oracle.stored_symcache(inst, kit_uuid)
    why = unwind_oracle.matches_executable(symc and unwind_oracle.unwind_of(inst.bin, symc),
                                           os.path.join(fixtures, kit["binary"]))
    check(why == "", f"kit: the stored symcache keeps the executable's unwind info: {why}")
    # One upload at a time so far: the local chunk copies are gone once their file is stored.
    left = os.listdir(chunk_dir(inst))
    check(left == [], f"no local chunk copy left once every file is stored: {left[:5]}")

    # 2. Three uploads at once, overlapping: fat (executable + dSYM, two slices each), the thin
    #    arm64 and x86_64 builds of the same UUIDs, and the rest.
    sets = [[os.path.join(fixtures, "fat")],
            [os.path.join(fixtures, "arm64-O2"), os.path.join(fixtures, "x86_64-O2")],
            [os.path.join(fixtures, n) for n in fx if n not in ("fat", "arm64-O2", "x86_64-O2", "kit")]]
    procs = [cli.start(paths) for paths in sets]
    for paths, p in zip(sets, procs):
        out, err = p.communicate(timeout=300)
        what = "concurrent upload of " + ", ".join(os.path.basename(x) for x in paths)
        if check(p.returncode == 0 and "ERROR" not in out, f"{what}: exited {p.returncode}\n{out}\n{err[-2000:]}"):
            print(f"{what}:\n{out.rstrip()}")
    for f in manifest["fixtures"]:
        for sl in f["slices"]:
            row = dsym_row(inst, sl["uuid"])
            check(row is not None and row["has_dwarf"] and row["arch"] == sl["arch"],
                  f"{f['name']} {sl['arch']} {sl['uuid']}: stored with DWARF ({row})")
    # concurrent uploads of executables and dSYMs of the same UUIDs: each stored symcache has
    # the DWARF names and its executable's unwind info, whichever was stored first
    for f in manifest["fixtures"]:
        binary = os.path.join(fixtures, f["binary"])
        for sl in f["slices"]:
            if len(f["slices"]) > 1:
                continue  # a fat file: its thin builds hold the same UUIDs and are checked
            symc = unwind_oracle.stored_symcache(inst, sl["uuid"])
            why = unwind_oracle.matches_executable(symc and unwind_oracle.unwind_of(inst.bin, symc),
                                                   binary)
            check(why == "", f"{f['name']} {sl['arch']}: stored unwind info: {why}")
    states = inst.psql(inst.db_url, "SELECT state, count(*) FROM dif_assemblies GROUP BY 1 ORDER BY 1")
    check(states.strip().startswith("ok|") and "\n" not in states.strip(),
          f"every assembly ok: {states.strip()!r}")

    # 3. Symbolication through what was stored.
    compare_symbolication(inst, fixtures, manifest)

    # Every file was put together from this node's own copies of its chunks, none fetched
    # back out of Postgres: in place (sentry-cli names each file before sending its chunks),
    # or local copies of chunks another file had asked for already.
    events = log_events(inst, "dif_assembled")
    check(events and all(e["placed_chunks"] + e["local_chunks"] == e["chunks"] for e in events)
          and sum(e["placed_chunks"] for e in events) > 0,
          f"assembled from this node's chunks: {[(e['name'], e['placed_chunks'], e['local_chunks'], e['chunks']) for e in events]}")

    # 4. The same upload again: nothing new, still success.
    before = counts(inst)
    rc, out, _ = cli.upload([os.path.join(fixtures, "fat")], "fat again")
    check(rc == 0 and counts(inst)[1:] == before[1:], f"a repeated upload stores nothing new: {out}")

    # 5. The answer's options, and a poll of a file assembling here waits for its outcome.
    opts = inst.request("GET", CHUNKS, token=inst.tokens["upload"]).json()
    check(opts["compression"] == ["gzip"] and opts["chunksPerRequest"] == 1
          and opts["concurrency"] == 8 and opts["chunkSize"] == 8 << 20,
          f"chunk options: {opts}")
    poll_waits(inst, fixtures, fx)
    placed_checked(inst, fixtures, fx)
    local_copy_checked(inst)

    # 6. Bad input.
    bad_input(inst, cli, fixtures)


if __name__ == "__main__":
    sys.exit(main())
