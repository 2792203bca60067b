"""web_instance - a real stacksift instance for the Python and browser tests.

    with Instance("openapi") as inst:       # own database in STACKSIFT_TEST_DATABASE_URL's
        inst.request("GET", "/api/v1/issues", token=inst.tokens["read"])

Creates database stacksift_<name>_<pid> in the test cluster (tests/run.sh + tests/pg.sh),
runs `stacksift migrate`, creates one token per scope, starts `stacksift serve` on a free
loopback port with a private data dir, and on exit stops the server (SIGTERM, then SIGKILL
after 10 s) and drops the database. Standard library only; psql does the SQL.
check() and checks_done() count assertions and print "N passed, N failed" like
tests/harness.h; project_create(inst, slug) makes a project and returns its DSN key and id.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


_counts = {"passed": 0, "failed": 0}


def check(cond, what):
    """One assertion, counted like tests/harness.h's CHECK: a false `cond` prints
    "FAIL: <what>" on stderr and the test goes on. Returns `cond`."""
    if cond:
        _counts["passed"] += 1
    else:
        _counts["failed"] += 1
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def checks_done():
    """Print "N passed, N failed" (harness_done's line); return the exit status, 1 if any
    check failed."""
    print(f"{_counts['passed']} passed, {_counts['failed']} failed")
    return 1 if _counts["failed"] else 0


def env_or_die(name):
    v = os.environ.get(name)
    if not v:
        raise SystemExit(f"{name} is not set: run the tests with tests/run.sh (ctest sets "
                         "STACKSIFT_BIN, STACKSIFT_SOURCE_DIR, STACKSIFT_FIXTURES; run.sh starts "
                         "Postgres and sets STACKSIFT_TEST_DATABASE_URL)")
    return v


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def project_create(inst, slug):
    """(key, project id) of a new project, from the DSN `stacksift project create` prints."""
    p = subprocess.run([inst.bin, "project", "create", slug], env=inst.env(),
                       capture_output=True, text=True, timeout=30)
    m = re.search(r"^DSN=\w+://([0-9a-fA-F]+)@[^/]+/(\d+)$", p.stdout, re.M)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"project create {slug}: exit {p.returncode}, {p.stdout!r} {p.stderr!r}")
    key, pid = m.group(1), int(m.group(2))
    # the server learns new keys at its next key-table reload (twice a second): until then an
    # empty envelope is 401, after that 400
    deadline = time.time() + 10
    while time.time() < deadline:
        r = inst.request("POST", f"/api/{pid}/envelope/", b"",
                         headers={"X-Sentry-Auth": f"Sentry sentry_key={key}"})
        if r.status != 401:
            break
        time.sleep(0.1)
    return key, pid


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers          # lower-case names
        self.body = body                # bytes

    @property
    def content_type(self):
        return self.headers.get("content-type", "").split(";")[0].strip()

    def json(self):
        return json.loads(self.body)


class Instance:
    def __init__(self, name, extra_env=None, workers=1, db_settings=None):
        self.bin = env_or_die("STACKSIFT_BIN")
        self.source = env_or_die("STACKSIFT_SOURCE_DIR")
        self.fixtures = env_or_die("STACKSIFT_FIXTURES")
        base = env_or_die("STACKSIFT_TEST_DATABASE_URL")
        self.dbname = f"stacksift_{name}_{os.getpid()}"
        self.admin_url = base
        self.db_url = base.rsplit("/", 1)[0] + "/" + self.dbname
        self.extra_env = dict(extra_env or {})
        self.workers = workers
        self.db_settings = dict(db_settings or {})   # ALTER DATABASE .. SET, before any session
        self.proc = None
        self.tmp = None
        self.tokens = {}

    # ---- lifecycle ---------------------------------------------------------------------

    def psql(self, url, sql):
        return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], check=True,
                              capture_output=True, text=True, timeout=60).stdout

    def env(self):
        e = dict(os.environ)
        e.update({"STACKSIFT_DATABASE_URL": self.db_url, "STACKSIFT_LISTEN": f"127.0.0.1:{self.port}",
                  "STACKSIFT_DATA_DIR": os.path.join(self.tmp, "data"),
                  "STACKSIFT_WORKERS": str(self.workers), "STACKSIFT_LOG_LEVEL": "warn"})
        e.update(self.extra_env)
        return e

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="stacksift-web-test.")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.psql(self.admin_url, f"DROP DATABASE IF EXISTS {self.dbname}")
        self.psql(self.admin_url, f"CREATE DATABASE {self.dbname}")
        for k, v in self.db_settings.items():
            self.psql(self.admin_url, f"ALTER DATABASE {self.dbname} SET {k} = '{v}'")
        subprocess.run([self.bin, "migrate"], env=self.env(), check=True, capture_output=True,
                       timeout=60)
        for scope in ("ingest", "upload", "read", "admin"):
            out = subprocess.run([self.bin, "token", "create", "--name", f"test-{scope}",
                                  "--scopes", scope], env=self.env(), check=True,
                                 capture_output=True, text=True, timeout=30).stdout
            self.tokens[scope] = out.strip().splitlines()[-1]
        self.log_path = os.path.join(self.tmp, "serve.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([self.bin, "serve"], env=self.env(), stdout=self.log,
                                     stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stacksift serve exited: {self.tail_log()}")
            try:
                if self.request("GET", "/readyz").status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"stacksift serve not ready after 20 s: {self.tail_log()}")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
        try:
            self.psql(self.admin_url, f"DROP DATABASE IF EXISTS {self.dbname}")
        except subprocess.SubprocessError:
            pass   # the database goes with the test cluster anyway
        if exc[0] is None and self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def tail_log(self, n=20):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    # ---- HTTP ----------------------------------------------------------------------------

    def request(self, method, path, body=None, headers=None, token=None, timeout=30):
        """One request on a new connection (Connection: close); returns a Response, never
        raises on a status. A server that answers early (401, 413) and stops reading is
        fine: the answer is read after the body could not be sent."""
        h = {"Host": f"127.0.0.1:{self.port}", "Connection": "close"}
        h.update(headers or {})
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        body = body or b""
        if body or method in ("POST", "PUT", "PATCH"):
            h["Content-Length"] = str(len(body))
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            try:
                sock.sendall(head.encode() + body)
            except (BrokenPipeError, ConnectionResetError):
                pass   # answered before the whole body was read
            data = b""
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except ConnectionResetError:
                pass
        sep = data.find(b"\r\n\r\n")
        if sep < 0:
            raise OSError(f"{method} {path}: no HTTP answer ({len(data)} bytes)")
        lines = data[:sep].decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        payload = data[sep + 4:]
        if "content-length" in hdrs:
            payload = payload[:int(hdrs["content-length"])]
        return Response(status, hdrs, payload)

    def upload_dsym(self, fixture, name=None, timeout=120):
        """POST /api/v1/dsyms of a built fixture's DWARF file (`fixture`: its entry in the
        fixtures' manifest.json), named `name` (default: the fixture's image name); checks
        that it was stored (200 or 201) and returns the Response."""
        name = name or fixture["image"]
        with open(os.path.join(self.fixtures, fixture["dwarf"]), "rb") as f:
            r = self.request("POST", f"/api/v1/dsyms?name={name}", f.read(),
                             token=self.tokens["upload"], timeout=timeout)
        check(r.status in (200, 201), f"dSYM upload {fixture['name']}: {r.status} {r.body[:200]!r}")
        return r

    def wait_processed(self, timeout_s=60):
        """Until no report is 'received' (the workers are done)."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            n = self.psql(self.db_url, "SELECT count(*) FROM reports WHERE status = 'received'")
            if n.strip() == "0":
                return True
            time.sleep(0.1)
        return False

    def multipart(self, path, field, filename, data, token):
        boundary = "stacksift-test-boundary-7d3f"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; "
                f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
        body += data + f"\r\n--{boundary}--\r\n".encode()
        return self.request("POST", path, body=body, token=token,
                            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


class SecondNode:
    """Another `stacksift serve` on the same database as `inst` (its own port and data
    directory, its log serve-node2.log beside inst's), for what two nodes do:

        with SecondNode(inst) as node2:
            node2.request("POST", "/api/v1/dsyms?name=x", body, token=inst.tokens["upload"])
    """

    request = Instance.request   # uses self.port alone

    def __init__(self, inst):
        self.inst = inst

    def __enter__(self):
        self.port = free_port()
        env = self.inst.env()
        env.update(STACKSIFT_LISTEN=f"127.0.0.1:{self.port}",
                   STACKSIFT_DATA_DIR=os.path.join(self.inst.tmp, "data-node2"))
        self.log = open(os.path.join(self.inst.tmp, "serve-node2.log"), "ab")
        self.proc = subprocess.Popen([self.inst.bin, "serve"], env=env, stdout=self.log,
                                     stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if self.request("GET", "/readyz", timeout=5).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the second node did not start")

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
