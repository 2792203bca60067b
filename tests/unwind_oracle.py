"""unwind_oracle - what a stored symcache's unwind section must hold, for the upload tests
(tests/dsym_unwind.py, tests/sentry_cli/run.py): the compact unwind entries of the executable
as `llvm-objdump-14 --unwind-info` lists them, compared with `stacksift symcache unwind` of the
symcache stored in Postgres (its blob chunks, read with psql)."""
import json
import os
import re
import subprocess
import tempfile

OBJDUMP = "llvm-objdump-14"
_ENTRY = re.compile(r"function offset=0x([0-9a-f]+), encoding(?:\[\d+\])?=0x([0-9a-f]+)")


def objdump_entries(path):
    """[(function offset, encoding)] of every second-level entry of the Mach-O at `path`."""
    out = subprocess.run([OBJDUMP, "--unwind-info", path], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return [(int(m.group(1), 16), int(m.group(2), 16)) for m in _ENTRY.finditer(out)]


def eh_frame_size(path):
    """Bytes of __TEXT,__eh_frame in the Mach-O at `path`, 0 without one."""
    out = subprocess.run([OBJDUMP, "-h", path], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] == "__eh_frame":
            return int(f[2], 16)
    return 0


def stored_symcache(inst, uuid):
    """The bytes of the symcache Postgres holds for `uuid` (dsyms.symcache_blob), or None."""
    sha = inst.psql(inst.db_url, f"SELECT symcache_blob FROM dsyms WHERE uuid = '{uuid}'").strip()
    if not sha:
        return None
    hexes = inst.psql(inst.db_url, f"SELECT encode(data, 'hex') FROM blob_chunks "
                      f"WHERE sha256 = '{sha}' ORDER BY seq")
    return bytes.fromhex("".join(hexes.split()))


def unwind_of(bin_path, symc):
    """`stacksift symcache unwind` of the symcache bytes `symc`: its JSON, or None (exit 1:
    no unwind info)."""
    with tempfile.NamedTemporaryFile(suffix=".symc") as f:
        f.write(symc)
        f.flush()
        out = subprocess.run([bin_path, "symcache", "unwind", f.name], capture_output=True,
                             text=True, timeout=60)
    return json.loads(out.stdout) if out.returncode == 0 else None


def matches_executable(unwind, exe):
    """'' when `unwind` (unwind_of's JSON) holds what the executable at `exe` does, else what
    differs."""
    if unwind is None:
        return "no unwind info"
    want = objdump_entries(exe)
    got = [(e[0], e[2]) for e in unwind["entries"]]
    if not want or got != want:
        return f"{len(got)} entries, llvm-objdump lists {len(want)} (first differing: " \
               f"{next(((g, w) for g, w in zip(got, want) if g != w), None)})"
    eh = eh_frame_size(exe)
    have = unwind["eh_frame"]["bytes"] if unwind["eh_frame"] else 0
    if eh != have:
        return f"__eh_frame {have} bytes, the executable's {eh}"
    return ""
