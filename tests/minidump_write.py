"""minidump_write - minimal macOS minidumps as Breakpad and Crashpad lay them out: layout() from
the parts (header, SystemInfo, ThreadList with each thread's stack and context, Exception,
ModuleList with name and RSDS CodeView record carrying the Mach-O UUID, MemoryList of the
stacks, stream directory), used by tests/bench/bench_formats_gen.py for its arm64 dumps; and
write(), an x86_64 dump of one thread (its stack and AMD64 context; the exception on that thread
with its own copy of the context), for tests that need a stack of their own making
(tests/minidump_rules.py). Layouts: Microsoft's minidumpapiset.h (MINIDUMP_HEADER,
MINIDUMP_DIRECTORY, MINIDUMP_SYSTEM_INFO, MINIDUMP_THREAD, MINIDUMP_EXCEPTION_STREAM,
MINIDUMP_MODULE, MINIDUMP_MEMORY_DESCRIPTOR) and winnt.h's CONTEXT_AMD64 (1232 bytes; Rax..Rip
from offset 0x78)."""
import struct
import uuid as uuidlib

THREAD_LIST, MODULE_LIST, MEMORY_LIST, EXCEPTION, SYSTEM_INFO = 3, 4, 5, 6, 7
CONTEXT_AMD64_FULL = 0x0010000B  # CONTEXT_AMD64 | CONTROL | INTEGER | SEGMENTS
# CONTEXT_AMD64 stores Rax, Rcx, Rdx, Rbx, Rsp, Rbp, Rsi, Rdi, R8..R15, Rip in this order
AMD64_ORDER = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11",
               "r12", "r13", "r14", "r15", "rip"]


def amd64_context(regs):
    """CONTEXT_AMD64 (1232 bytes) with the registers of `regs` ({"rip": ...}), others 0."""
    ctx = bytearray(1232)
    struct.pack_into("<I", ctx, 0x30, CONTEXT_AMD64_FULL)
    for i, name in enumerate(AMD64_ORDER):
        struct.pack_into("<Q", ctx, 0x78 + 8 * i, regs.get(name, 0))
    return bytes(ctx)


def guid_of(mach_uuid):
    """The RSDS GUID bytes of a Mach-O UUID: Data1, Data2, Data3 little-endian, Data4 as is."""
    return uuidlib.UUID(mach_uuid).bytes_le


def layout(system, threads, modules, exception, memory_list=True, time_date_stamp=0):
    """A dump's bytes from its parts: SystemInfo, ThreadList, Exception, ModuleList and (with
    `memory_list`) a MemoryList of the threads' stacks, the stream directory last.
    system: (ProcessorArchitecture: 9 AMD64, 12 ARM64; ProcessorLevel; NumberOfProcessors;
             MajorVersion, MinorVersion, BuildNumber; PlatformId; CSD version string)
    threads: [(thread id, stack address, stack bytes, CONTEXT bytes)]
    modules: [(path, load address, size, Mach-O UUID string)]: an RSDS CodeView record with the
             UUID as its GUID and the path's file name
    exception: (thread id, ExceptionCode, ExceptionFlags, ExceptionAddress, CONTEXT bytes of its
               own, or None: that thread's context record)"""
    out = bytearray(32)  # the header, written last
    streams = []

    def blob(data):
        while len(out) % 8:
            out.append(0)
        rva = len(out)
        out.extend(data)
        return rva

    def utf16(s):
        b = s.encode("utf-16-le")
        return blob(struct.pack("<I", len(b)) + b + b"\0\0")

    contexts, records, memory = {}, [], []
    for thread_id, stack_addr, stack, ctx in threads:
        ctx_rva = blob(ctx)
        stack_rva = blob(stack)
        contexts[thread_id] = (len(ctx), ctx_rva)
        records.append(struct.pack("<IIIIQQIIII", thread_id, 0, 0, 0, 0, stack_addr, len(stack),
                                   stack_rva, len(ctx), ctx_rva))
        memory.append(struct.pack("<QII", stack_addr, len(stack), stack_rva))
    arch, level, ncpu, major, minor, build, platform, csd_version = system
    csd = utf16(csd_version)
    si = struct.pack("<HHHBBIIIII", arch, level, 0, ncpu, 1, major, minor, build, platform,
                     csd) + b"\0" * 28
    streams.append((SYSTEM_INFO, blob(si), len(si)))
    tl = struct.pack("<I", len(records)) + b"".join(records)
    streams.append((THREAD_LIST, blob(tl), len(tl)))
    thread_id, exc_code, exc_flags, exc_addr, exc_ctx = exception
    exc_ctx_len, exc_ctx_rva = contexts[thread_id] if exc_ctx is None else (len(exc_ctx), blob(exc_ctx))
    # Breakpad's shape: the Mach exception type as ExceptionCode, code[0] as ExceptionFlags
    exc = struct.pack("<IIIIQQII", thread_id, 0, exc_code, exc_flags, 0, exc_addr, 0, 0)
    exc += b"\0" * 120
    exc += struct.pack("<II", exc_ctx_len, exc_ctx_rva)
    streams.append((EXCEPTION, blob(exc), len(exc)))
    mods = b""
    for path, load, size, mach_uuid in modules:
        name_rva = utf16(path)
        cv = b"RSDS" + guid_of(mach_uuid) + struct.pack("<I", 0) + path.rsplit("/", 1)[-1].encode() + b"\0"
        cv_rva = blob(cv)
        mods += (struct.pack("<QIIII", load, size, 0, 0, name_rva) + b"\0" * 52 +
                 struct.pack("<IIIIQQ", len(cv), cv_rva, 0, 0, 0, 0))
    ml = struct.pack("<I", len(modules)) + mods
    streams.append((MODULE_LIST, blob(ml), len(ml)))
    if memory_list:
        mem = struct.pack("<I", len(memory)) + b"".join(memory)
        streams.append((MEMORY_LIST, blob(mem), len(mem)))
    dir_rva = blob(b"".join(struct.pack("<III", t, size, rva) for t, rva, size in streams))
    struct.pack_into("<IIIIIIQ", out, 0, 0x504D444D, 0xA793, len(streams), dir_rva, 0,
                     time_date_stamp, 0)
    return bytes(out)


def write(modules, stack_addr, stack, regs, thread_id=0x303, exc_code=1, exc_flags=1,
          exc_addr=0x45):
    """A dump's bytes. modules: [(path, load address, size, Mach-O UUID string)]; the thread's
    stack `stack` (bytes) at `stack_addr`; `regs` its registers ({"rip", "rsp", "rbp", ...}),
    also the exception's context (EXC_BAD_ACCESS / KERN_INVALID_ADDRESS at exc_addr)."""
    ctx = amd64_context(regs)
    # AMD64 (9), 4 processors, macOS 10.15.7 (platform 0x8101), CSD version "19H2"
    return layout((9, 6, 4, 10, 15, 7, 0x8101, "19H2"), [(thread_id, stack_addr, stack, ctx)],
                  modules, (thread_id, exc_code, exc_flags, exc_addr, ctx))
