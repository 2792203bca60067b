#!/usr/bin/python3
"""test_upload_race - a binary and its dSYM uploaded at the same moment
(ctest reliability_upload_race, labels reliability;db).

Each of 30 rounds gives the fixture app (tests/fixtures, arm64 -O2) a fresh LC_UUID, patched
into both the app binary (symbol table only) and its dSYM's DWARF file, then sends both
uploads on two connections released together: every byte but the last of each request is
sent first, then both last bytes at once. Round by round, what a user sees must hold
whichever upload wins, without looking at any file the server keeps (symcaches may live on
disk or in Postgres):
  - both answers are 2xx JSON naming the UUID; the dSYM's answer says has_dwarf=true;
  - one answer says "created", the other "updated" (it merged with the first: one symcache
    with the dSYM's names and the binary's unwind info) with has_dwarf=true;
  - GET /api/v1/dsyms/{uuid} says has_dwarf=true with the SHA-256 the "updated" answer gave;
  - POST /api/v1/symbolicate of an address inside a function gives that function with its
    source file and line (only the DWARF symcache has them), and the same answer on a repeat.
Then a third upload of the binary alone must leave all of that unchanged ("exists").
"""
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid as uuidlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability import Instance, check, checks_done, figure, parse_answer  # noqa: E402

ROUNDS = 30
LC_UUID = 0x1B


def patch_uuid(data, new_uuid):
    """The Mach-O bytes with every slice's LC_UUID set to `new_uuid` (16 bytes); thin 64-bit
    little-endian or fat (big-endian fat header) files, as tests/fixtures builds them."""
    data = bytearray(data)
    magic_be = struct.unpack_from(">I", data, 0)[0]
    if magic_be in (0xCAFEBABE, 0xCAFEBABF):
        nfat = struct.unpack_from(">I", data, 4)[0]
        wide = magic_be == 0xCAFEBABF
        for i in range(nfat):
            if wide:
                _, _, off, _, _, _ = struct.unpack_from(">IIQQII", data, 8 + i * 32)
            else:
                _, _, off, _, _ = struct.unpack_from(">IIIII", data, 8 + i * 20)
            patch_thin(data, off, new_uuid)
    else:
        patch_thin(data, 0, new_uuid)
    return bytes(data)


def patch_thin(data, base, new_uuid):
    magic = struct.unpack_from("<I", data, base)[0]
    assert magic in (0xFEEDFACF, 0xFEEDFACE), f"not a little-endian Mach-O: {magic:#x}"
    ncmds = struct.unpack_from("<I", data, base + 16)[0]
    off = base + (32 if magic == 0xFEEDFACF else 28)
    found = False
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, off)
        if cmd == LC_UUID:
            data[off + 8:off + 24] = new_uuid
            found = True
        off += size
    assert found, "no LC_UUID"


def function_address(binary):
    """(name, address) of a global function of the fixture app, by llvm-nm-14."""
    out = subprocess.run(["llvm-nm-14", "--defined-only", "-n", binary], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        addr, kind, name = line.split(None, 2)
        if kind == "T" and name.startswith("_calc_"):
            return name[1:], int(addr, 16)
    raise RuntimeError("no _calc_ function in the fixture app")


def upload_request(inst, data, name):
    head = (f"POST /api/v1/dsyms?name={name} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {inst.tokens['upload']}\r\nConnection: close\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {len(data)}\r\n\r\n")
    return head.encode() + data


def race(inst, requests):
    """Send each request on its own connection: all but the last byte first, then the last
    bytes together; returns the answers in order (None where none came)."""
    socks = [socket.create_connection(("127.0.0.1", inst.port), timeout=60) for _ in requests]
    for s, req in zip(socks, requests):
        s.sendall(req[:-1])
    time.sleep(0.02)   # let the server read the bodies so far
    barrier = threading.Barrier(len(requests))
    answers = [None] * len(requests)

    def finish(i):
        barrier.wait()
        socks[i].sendall(requests[i][-1:])
        data = b""
        while True:
            chunk = socks[i].recv(65536)
            if not chunk:
                break
            data += chunk
        socks[i].close()
        answers[i] = parse_answer(data)

    threads = [threading.Thread(target=finish, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    return answers


def symbolicate(inst, uuid_s, addr):
    body = {"images": [{"uuid": uuid_s, "arch": "arm64", "name": "FixtureApp",
                        "load_address": "0x100000000"}],
            "stacks": [[hex(addr)]]}
    return inst.request("POST", "/api/v1/symbolicate", body=body, token=inst.tokens["read"])


def frame_symbols(resp):
    try:
        return resp.json()["stacks"][0][0]["symbols"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def main():
    fixtures = os.environ["STACKSIFT_FIXTURES"]
    manifest = json.load(open(os.path.join(fixtures, "manifest.json")))
    fx = next(f for f in manifest["fixtures"] if f["name"] == "arm64-O2")
    binary = open(os.path.join(fixtures, fx["binary"]), "rb").read()
    dwarf = open(os.path.join(fixtures, fx["dwarf"]), "rb").read()
    func, faddr = function_address(os.path.join(fixtures, fx["binary"]))
    rnd = random.Random(1616)
    clean = 0
    with Instance("upload_race") as inst:
        for rnd_i in range(ROUNDS):
            u = uuidlib.UUID(int=rnd.getrandbits(128))
            ustr = str(u).upper()
            bin_u, dwarf_u = patch_uuid(binary, u.bytes), patch_uuid(dwarf, u.bytes)
            reqs = [upload_request(inst, bin_u, "FixtureApp"),
                    upload_request(inst, dwarf_u, "FixtureApp")]
            order = [0, 1] if rnd_i % 2 == 0 else [1, 0]   # who connects first alternates
            got = race(inst, [reqs[i] for i in order])
            answers = [None, None]
            for slot, i in enumerate(order):
                answers[i] = got[slot]
            what = f"round {rnd_i} ({ustr})"
            ok = True
            rows = []
            for kind, a in zip(("binary", "dSYM"), answers):
                ok &= check(a is not None and a.status in (200, 201),
                            f"{what}: {kind} upload answered {a.status if a else None}: "
                            f"{a.body[:200] if a else b''!r}")
                try:
                    row = a.json()["files"][0]
                except (AttributeError, ValueError, KeyError, IndexError):
                    row = {}
                ok &= check(row.get("uuid") == ustr, f"{what}: {kind} answer names {row.get('uuid')}")
                rows.append(row)
            ok &= check(rows[1].get("has_dwarf") is True, f"{what}: the dSYM answer {rows[1]}")
            got_row = inst.request("GET", f"/api/v1/dsyms/{ustr}", token=inst.tokens["read"])
            stored = got_row.json() if got_row.status == 200 else {}
            ok &= check(stored.get("has_dwarf") is True, f"{what}: stored row {stored}")
            # one symcache per UUID: the upload that committed second merged with the first
            # (the dSYM's names, the binary's unwind info) and answered "updated" with it
            statuses = sorted(r.get("status", "") for r in rows)
            last = next((r for r in rows if r.get("status") == "updated"), {})
            ok &= check(statuses == ["created", "updated"],
                        f"{what}: one upload created the row, the other merged with it: {statuses}")
            ok &= check(last.get("has_dwarf") is True and stored.get("sha256") == last.get("sha256"),
                        f"{what}: stored sha256 {stored.get('sha256')} is not the merged one "
                        f"{last.get('sha256')} (dSYM's answer {rows[1].get('sha256')}, binary's "
                        f"{rows[0].get('sha256')})")
            for attempt in range(2):
                syms = frame_symbols(symbolicate(inst, ustr, faddr + 4))
                ok &= check(bool(syms) and syms[-1]["function"] == func and
                            syms[-1]["file"] is not None and syms[-1]["line"] is not None,
                            f"{what}: lookup {attempt} of {func}+4 gave {syms}")
            clean += ok
        # a late binary upload changes nothing
        again = inst.request("POST", f"/api/v1/dsyms?name=FixtureApp", body=bin_u,
                             token=inst.tokens["upload"],
                             headers={"Content-Type": "application/octet-stream"})
        check(again.status == 200 and again.json()["files"][0].get("status") == "exists",
              f"a late binary upload: {again.status} {again.body[:200]!r}")
        syms = frame_symbols(symbolicate(inst, ustr, faddr + 4))
        check(bool(syms) and syms[-1]["file"] is not None, f"after the late binary: {syms}")
        stored2 = inst.request("GET", f"/api/v1/dsyms/{ustr}", token=inst.tokens["read"]).json()
        check(stored2.get("sha256") == stored.get("sha256") and stored2.get("has_dwarf") is True,
              f"after the late binary: {stored2}")
    figure("upload race rounds clean", f"{clean}/{ROUNDS}")
    return checks_done()


if __name__ == "__main__":
    sys.exit(main())
