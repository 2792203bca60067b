"""plcrash_encode - a tiny encoder of PLCrashReporter's .plcrash files, for tests.

No device is at hand to make real ones, so the tests write them: the 7-byte magic "plcrash",
the version byte 1, then a protobuf `plcrash.CrashReport` (proto2) with the field numbers of
microsoft/plcrashreporter's Source/PLCrashReport.proto (listed in
common/crashreport/parse_plcrash.c). Standard library only.

    data = encode(system={"os": 1, "os_version": "17.5", "os_build": "21F79", "timestamp": 0},
                  app={"identifier": "com.example.App", "version": "7", "marketing_version": "1.0"},
                  threads=[{"number": 0, "crashed": True, "frames": [{"pc": 0x1000}],
                            "registers": [("pc", 0x1000)]}],
                  images=[{"base": 0x1000, "size": 0x4000, "name": "/path/App",
                           "uuid": "6F8A2C1E-...", "cpu": (0x0100000C, 0)}],
                  signal={"name": "SIGABRT", "code": "#0", "address": 0, "mach": (10, [0, 0])})

The low-level helpers (varint, field_*) are there for hand-made malformed files.
"""

MAGIC = b"plcrash"
VERSION = 1


def varint(n):
    """Base-128 varint of a non-negative integer < 2^64 (negative: two's complement)."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number, wire):
    return varint(number << 3 | wire)


def field_varint(number, value):
    return tag(number, 0) + varint(int(value))


def field_bytes(number, data):
    return tag(number, 2) + varint(len(data)) + data


def field_str(number, s):
    """A string field: str as UTF-8, bytes as they are (strings that are not UTF-8, as a
    corrupted heap leaves them)."""
    return field_bytes(number, s if isinstance(s, bytes) else s.encode("utf-8"))


def field_msg(number, parts):
    return field_bytes(number, b"".join(parts))


def uuid_bytes(u):
    return bytes.fromhex(u.replace("-", "")) if isinstance(u, str) else u


def processor(cpu):
    ctype, sub = cpu
    return [field_varint(1, 1), field_varint(2, ctype), field_varint(3, sub)]  # 1 = Mach


def frame(fr):
    parts = [field_varint(3, fr["pc"])]
    if fr.get("symbol"):
        name, start = fr["symbol"]
        parts.append(field_msg(6, [field_str(1, name), field_varint(2, start)]))
    return parts


def encode(system, app, threads=(), images=(), signal=None, exception=None, process=None,
           machine=None, report=None, version=VERSION):
    """The bytes of one .plcrash file; every argument a dict as in the module doc (keys
    left out are not written)."""
    msg = []
    s = [field_varint(1, system.get("os", 1)), field_str(2, system["os_version"]),
         field_varint(3, system.get("arch", 6)), field_varint(4, system.get("timestamp", 0))]
    if system.get("os_build"):
        s.append(field_str(5, system["os_build"]))
    msg.append(field_msg(1, s))
    a = [field_str(1, app["identifier"]), field_str(2, app["version"])]
    if app.get("marketing_version"):
        a.append(field_str(3, app["marketing_version"]))
    msg.append(field_msg(2, a))
    for t in threads:
        parts = [field_varint(1, t["number"])]
        parts += [field_msg(2, frame(f)) for f in t["frames"]]
        parts.append(field_varint(3, 1 if t.get("crashed") else 0))
        parts += [field_msg(4, [field_str(1, n), field_varint(2, v)]) for n, v in t.get("registers", ())]
        msg.append(field_msg(3, parts))
    for im in images:
        parts = [field_varint(1, im["base"]), field_varint(2, im["size"]), field_str(3, im["name"])]
        if im.get("uuid"):
            parts.append(field_bytes(4, uuid_bytes(im["uuid"])))
        if im.get("cpu"):
            parts.append(field_msg(5, processor(im["cpu"])))
        msg.append(field_msg(4, parts))
    if exception is not None:
        parts = [field_str(1, exception["name"]), field_str(2, exception["reason"])]
        parts += [field_msg(3, frame(f)) for f in exception.get("frames", ())]
        msg.append(field_msg(5, parts))
    if signal is not None:
        parts = [field_str(1, signal["name"]), field_str(2, signal["code"]),
                 field_varint(3, signal.get("address", 0))]
        if signal.get("mach"):
            mtype, codes = signal["mach"]
            parts.append(field_msg(4, [field_varint(1, mtype)] + [field_varint(2, c) for c in codes]))
        msg.append(field_msg(6, parts))
    if process is not None:
        parts = []
        if process.get("name"):
            parts.append(field_str(1, process["name"]))
        parts.append(field_varint(2, process.get("pid", 0)))
        if process.get("path"):
            parts.append(field_str(3, process["path"]))
        if process.get("parent_name"):
            parts.append(field_str(4, process["parent_name"]))
        parts += [field_varint(5, process.get("parent_pid", 0)),
                  field_varint(6, 1 if process.get("native", True) else 0)]
        msg.append(field_msg(7, parts))
    if machine is not None:
        parts = []
        if machine.get("model"):
            parts.append(field_str(1, machine["model"]))
        parts += [field_msg(2, processor(machine["cpu"])), field_varint(3, machine.get("ncpu", 6)),
                  field_varint(4, machine.get("ncpu", 6))]
        msg.append(field_msg(8, parts))
    if report is not None:
        parts = [field_varint(1, 1 if report.get("user_requested") else 0)]
        if report.get("uuid"):
            parts.append(field_bytes(2, uuid_bytes(report["uuid"])))
        msg.append(field_msg(9, parts))
    return MAGIC + bytes([version]) + b"".join(msg)
