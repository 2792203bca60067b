#!/usr/bin/python3
"""test_kill_nodes - kill -9 a node while it writes a dSYM upload into Postgres, and right
after it acknowledged reports (ctest reliability_kill_nodes).

Two nodes share the database and nothing else: node A (web_instance.Instance) and node K,
started here with its own data directory. Each round K receives a dSYM upload (a zip holding
the fixture app's dSYM with a fresh UUID beside 32 MB of incompressible padding, so that the
upload's transaction writes ~33 chunks) and is killed with SIGKILL the moment Postgres shows
it inserting blob chunks. Then, checked in the database:
  - no dsyms row for that UUID (its transaction died with the node), no blob whose chunks do
    not add up, no dsyms row pointing at a missing or incomplete blob;
and node A, which went on serving, takes the same upload (201) and symbolicates with it.
Last, K accepts 20 reports and is killed right after the last 202: node A's workers process
every one (nothing acknowledged is lost).
"""
import json
import os
import signal
import subprocess
import sys
import time
import uuid as uuidlib
import zipfile
import io
import random

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import Instance, check, checks_done, figure  # noqa: E402
from test_upload_race import frame_symbols, function_address, patch_uuid, symbolicate  # noqa: E402
from web_instance import free_port  # noqa: E402

ROUNDS = 3


def start_node(inst, name, workers=1):
    """`stacksift serve` as node `name` on inst's database, own data directory; (proc, port)."""
    port = free_port()
    env = inst.env()
    env.update({"STACKSIFT_LISTEN": f"127.0.0.1:{port}", "STACKSIFT_NODE_NAME": name,
                "STACKSIFT_DATA_DIR": os.path.join(inst.tmp, f"data-{name}"),
                "STACKSIFT_WORKERS": str(workers)})
    log = open(os.path.join(inst.tmp, f"serve-{name}.log"), "ab")
    proc = subprocess.Popen([inst.bin, "serve"], env=env, stdout=log, stderr=log)
    saved = inst.port
    inst.port = port
    try:
        deadline = time.time() + 20
        while time.time() < deadline and proc.poll() is None:
            try:
                if inst.request("GET", "/readyz").status == 200:
                    return proc, port
            except OSError:
                pass
            time.sleep(0.05)
    finally:
        inst.port = saved
    raise RuntimeError(f"node {name} did not start")


def sql(inst, q):
    return inst.psql(inst.db_url, q).strip()


def big_upload(dwarf, u):
    """A zip of the dSYM (UUID `u`) and 32 MB of padding, stored."""
    buf = io.BytesIO()
    pad = 32 << 20
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp", patch_uuid(dwarf, u.bytes))
        z.writestr("FixtureApp.app.dSYM/Contents/Resources/padding.bin", random.randbytes(pad))
    return buf.getvalue()


def post_in_background(port, token, data):
    """Send the upload to 127.0.0.1:port from a child process (it dies with the node)."""
    code = ("import socket,sys\n"
            "d=sys.stdin.buffer.read()\n"
            f"s=socket.create_connection(('127.0.0.1',{port}))\n"
            f"s.sendall(b'POST /api/v1/dsyms HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer {token}"
            "\\r\\nContent-Type: application/zip\\r\\nConnection: close\\r\\nContent-Length: '"
            "+str(len(d)).encode()+b'\\r\\n\\r\\n'+d)\n"
            "s.recv(65536)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p.stdin.write(data)
    p.stdin.close()
    return p


def consistent(inst, what):
    broken_blobs = sql(inst, "SELECT count(*) FROM blobs b WHERE b.chunks <> (SELECT count(*) "
                             "FROM blob_chunks c WHERE c.sha256 = b.sha256) OR b.bytes <> "
                             "(SELECT coalesce(sum(length(c.data)), 0) FROM blob_chunks c "
                             "WHERE c.sha256 = b.sha256)")
    dangling = sql(inst, "SELECT count(*) FROM dsyms d WHERE (d.symcache_blob IS NOT NULL AND "
                         "NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = d.symcache_blob)) "
                         "OR (d.original_blob IS NOT NULL AND NOT EXISTS (SELECT 1 FROM blobs b "
                         "WHERE b.sha256 = d.original_blob))")
    check(broken_blobs == "0", f"{what}: {broken_blobs} blobs whose chunks do not add up")
    check(dangling == "0", f"{what}: {dangling} dsyms rows point at missing blobs")


def main():
    fixtures = os.environ["STACKSIFT_FIXTURES"]
    manifest = json.load(open(os.path.join(fixtures, "manifest.json")))
    fx = next(f for f in manifest["fixtures"] if f["name"] == "arm64-O2")
    dwarf = open(os.path.join(fixtures, fx["dwarf"]), "rb").read()
    func, faddr = function_address(os.path.join(fixtures, fx["binary"]))
    rnd = random.Random(1414)
    with Instance("kill_nodes", extra_env={"STACKSIFT_NODE_NAME": "node-a"}) as inst:
        killed_mid_write = 0
        for r in range(ROUNDS):
            u = uuidlib.UUID(int=rnd.getrandbits(128))
            ustr = str(u).upper()
            data = big_upload(dwarf, u)
            proc, port = start_node(inst, f"k{r}", workers=0)
            sender = post_in_background(port, inst.tokens["upload"], data)
            seen = False
            deadline = time.time() + 20
            while time.time() < deadline and not seen and sender.poll() is None:
                seen = sql(inst, "SELECT count(*) FROM pg_stat_activity WHERE application_name "
                                 f"= 'k{r}' AND query LIKE 'INSERT INTO blob_chunks%'") != "0"
                if not seen:
                    time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            sender.kill()
            sender.wait(10)
            killed_mid_write += seen
            # Postgres ends the dead node's session (and rolls its transaction back) once it
            # notices the closed connection.
            deadline = time.time() + 10
            while time.time() < deadline and sql(
                    inst, f"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'k{r}'") != "0":
                time.sleep(0.05)
            what = f"round {r} ({ustr})"
            if seen:   # else the upload was done before the kill (a slow poll): nothing to see
                check(sql(inst, f"SELECT count(*) FROM dsyms WHERE uuid = '{ustr}'") == "0",
                      f"{what}: a dsyms row survived the killed upload")
            consistent(inst, what)
            check(inst.request("GET", "/healthz").status == 200, f"{what}: node A stopped serving")
            # Node A takes the same upload and uses it at once.
            resp = inst.request("POST", "/api/v1/dsyms", body=data, token=inst.tokens["upload"],
                                headers={"Content-Type": "application/zip"}, timeout=120)
            check(resp.status in ((201,) if seen else (200, 201)),
                  f"{what}: upload to node A answered {resp.status}")
            syms = frame_symbols(symbolicate(inst, ustr, faddr + 4))
            check(bool(syms) and syms[0].get("function") == func and syms[0].get("line"),
                  f"{what}: node A symbolicated {func}+4 as {syms}")
            consistent(inst, what + " after the retry")
        figure("uploads killed while writing chunks", f"{killed_mid_write}/{ROUNDS}")
        # Polling Postgres through psql can miss a short write (a loaded machine, sanitizers);
        # at least one kill must have landed inside the upload's transaction.
        check(killed_mid_write >= 1, "a kill landed while the upload wrote its chunks")

        # Reports acknowledged by a node killed right after: node A's workers take them.
        corpus = os.path.join(inst.source, "..", "shared", "corpus", "reports", "apple-text")
        names = sorted(os.listdir(corpus))[:5] if os.path.isdir(corpus) else []
        body = open(os.path.join(corpus, names[0]), "rb").read() if names else None
        check(body is not None, "a corpus report to post")
        if body:
            proc, port = start_node(inst, "k-reports", workers=0)
            saved, inst.port = inst.port, port
            acked = sum(inst.request("POST", "/api/v1/reports", body=body, token=inst.tokens["ingest"],
                                     headers={"Content-Type": "text/plain"}).status == 202
                        for _ in range(20))
            inst.port = saved
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            check(acked == 20, f"node K acknowledged {acked} of 20 reports")
            check(sql(inst, "SELECT count(*) FROM reports WHERE received_by = 'k-reports'") == "20",
                  "the 20 acknowledged reports are in the database")
            check(inst.wait_processed(60), "node A's workers processed them")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
