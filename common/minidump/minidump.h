/*
 * minidump - read a minidump (Microsoft's MINIDUMP format as Breakpad and Crashpad write it on
 * macOS): system info, threads with their register contexts and stack memory, the exception,
 * loaded modules (images) with their Mach-O UUIDs, memory ranges, thread names and the
 * Breakpad / Crashpad info streams.
 *
 * The input is hostile: every RVA, size and count is checked against the bytes given before it
 * is read, no allocation is larger than the input allows, and a stream that cannot be read is
 * named in `notes` while the rest of the dump is still used. Only a missing or broken header
 * or stream directory fails the whole parse.
 *
 * Layouts, writers met and sources: README.md beside this file.
 */
#ifndef STACKSIFT_MINIDUMP_MINIDUMP_H
#define STACKSIFT_MINIDUMP_MINIDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"

/* Stream types (MINIDUMP_STREAM_TYPE, plus Breakpad's and Crashpad's own). */
#define MINIDUMP_STREAM_THREAD_LIST 3u
#define MINIDUMP_STREAM_MODULE_LIST 4u
#define MINIDUMP_STREAM_MEMORY_LIST 5u
#define MINIDUMP_STREAM_EXCEPTION 6u
#define MINIDUMP_STREAM_SYSTEM_INFO 7u
#define MINIDUMP_STREAM_MEMORY64_LIST 9u
#define MINIDUMP_STREAM_MISC_INFO 15u
#define MINIDUMP_STREAM_THREAD_NAMES 24u
#define MINIDUMP_STREAM_BREAKPAD_INFO 0x47670001u
#define MINIDUMP_STREAM_CRASHPAD_INFO 0x43500001u

/* Mach exception types (<mach/exception_types.h>) used to unwrap EXC_CRASH. */
#define MINIDUMP_EXC_BAD_ACCESS 1u
#define MINIDUMP_EXC_CRASH 10u

/* Register sets: the CPU of a context. */
typedef enum {
    MINIDUMP_ARCH_UNKNOWN = 0,
    MINIDUMP_ARCH_X86_64, /* MINIDUMP_CONTEXT_AMD64 */
    MINIDUMP_ARCH_ARM64,  /* Crashpad CONTEXT_ARM64 or Breakpad's older ARM64 layout */
} minidump_arch;

/* Registers are indexed by their DWARF number, so that CFI rules index them directly:
 * x86_64: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8..15 r8..r15, 16 rip;
 * arm64: 0..28 x0..x28, 29 fp, 30 lr, 31 sp, 32 pc. */
#define MINIDUMP_MAX_REGS 33
#define MINIDUMP_X86_64_RBP 6
#define MINIDUMP_X86_64_RSP 7
#define MINIDUMP_X86_64_RIP 16
#define MINIDUMP_ARM64_FP 29
#define MINIDUMP_ARM64_LR 30
#define MINIDUMP_ARM64_SP 31
#define MINIDUMP_ARM64_PC 32

/* A thread's register state at the time of the dump. */
typedef struct {
    minidump_arch arch;  /* MINIDUMP_ARCH_UNKNOWN: the context was absent or unreadable */
    uint32_t flags;      /* context flags as written (low 32 bits for Breakpad's old ARM64) */
    uint32_t nregs;      /* 17 (x86_64) or 33 (arm64) entries of regs are meaningful */
    uint64_t regs[MINIDUMP_MAX_REGS]; /* DWARF numbering, see above */
    uint64_t status;     /* rflags (x86_64) or cpsr (arm64) */
} minidump_context;

/* A memory range captured in the dump. */
typedef struct {
    uint64_t start_addr;  /* address in the crashed process */
    uint64_t size;        /* bytes */
    const uint8_t *data;  /* `size` bytes inside the dump; NULL if the range was unreadable */
} minidump_memory;

typedef struct {
    uint32_t thread_id;       /* the OS thread id (mach port name / thread id as written) */
    const char *name;         /* from ThreadNames, or NULL */
    minidump_memory stack;    /* the captured stack (data NULL when unreadable) */
    minidump_context context; /* registers; arch UNKNOWN when unreadable */
} minidump_thread;

typedef struct {
    const char *key, *value; /* UTF-8, NUL-terminated, in the arena */
} minidump_annotation;

typedef struct {
    uint64_t load_addr;     /* BaseOfImage: where the image's __TEXT starts in the process */
    uint64_t size;          /* SizeOfImage, bytes */
    const char *name;       /* full path, UTF-8 (from UTF-16LE); "" if unreadable */
    bool has_uuid;          /* a CodeView RSDS record was read */
    uint8_t uuid[16];       /* Mach-O LC_UUID byte order (the GUID's fields made big-endian) */
    uint32_t cv_age;        /* RSDS age (0 on macOS) */
    /* Crashpad module annotations (MinidumpModuleCrashpadInfo): list annotations as
     * key NULL, simple annotations and string annotation objects as key/value. */
    size_t nannotations;
    minidump_annotation *annotations;
} minidump_module;

typedef struct {
    bool present;               /* the dump has an exception stream */
    uint32_t thread_id;         /* the thread that crashed */
    uint32_t code;              /* ExceptionCode: the Mach exception type as the writer gave it */
    uint32_t flags;             /* ExceptionFlags: the first Mach code as the writer gave it */
    uint64_t address;           /* ExceptionAddress (the faulting address for EXC_BAD_ACCESS) */
    uint32_t nparams;           /* ExceptionInformation entries kept (at most 15) */
    uint64_t params[15];        /* Crashpad: [exception type, code[0], code[1]...] */
    minidump_context context;   /* the crashed thread's registers at the exception */
    /* The exception as Apple's reports show it: EXC_CRASH unwrapped. */
    uint32_t mach_type;         /* e.g. 1 EXC_BAD_ACCESS; EXC_CRASH's original exception */
    uint64_t mach_code;         /* the (original) first code, e.g. 1 KERN_INVALID_ADDRESS */
    uint32_t signal;            /* from EXC_CRASH: the signal number (6 SIGABRT); 0 = unknown */
    bool wrapped;               /* the exception came wrapped in EXC_CRASH */
} minidump_exception;

typedef struct {
    uint16_t cpu_arch_raw;  /* ProcessorArchitecture: 9 AMD64, 12 ARM64, 0x8003 Breakpad ARM64 */
    minidump_arch arch;     /* the register set that arch implies */
    uint32_t platform_id;   /* 0x8101 macOS, 0x8102 iOS, ... */
    uint32_t os_major, os_minor, os_build; /* MajorVersion, MinorVersion, BuildNumber */
    const char *csd_version; /* CSDVersion (the OS build, e.g. "16G29"); "" if absent */
    uint32_t cpu_count;     /* NumberOfProcessors */
} minidump_system;

typedef struct {
    uint32_t version;   /* header Version, low 16 bits 0xa793 */
    uint32_t timestamp; /* TimeDateStamp, seconds since the epoch */
    uint32_t nstreams;  /* directory entries */

    bool has_system;
    minidump_system system;

    size_t nthreads;
    minidump_thread *threads;

    size_t nmodules;
    minidump_module *modules; /* in the order written (the main executable first) */

    size_t nmemory;
    minidump_memory *memory; /* MemoryList then Memory64List ranges; thread stacks not here */

    minidump_exception exception;

    bool has_process_id;
    uint32_t process_id;        /* MiscInfo ProcessId */
    bool has_process_create_time;
    uint32_t process_create_time; /* MiscInfo ProcessCreateTime, seconds since the epoch */

    /* Breakpad's info stream: the handler's own thread (dump_thread_id) is not part of the
     * crash and is skipped by walkers; requesting_thread_id asked for the dump. */
    bool has_dump_thread_id;
    uint32_t dump_thread_id;
    bool has_requesting_thread_id;
    uint32_t requesting_thread_id;

    /* Crashpad's info stream: process simple annotations. */
    bool has_crashpad_info;
    size_t nannotations;
    minidump_annotation *annotations;

    /* One line for each part that could not be read and was skipped, e.g.
     * "module list: entry 3: name rva 0x1234 outside the dump (18552 bytes)". */
    size_t nnotes;
    const char **notes;
} minidump;

/*
 * minidump_parse - read the minidump in `data` (`len` bytes).
 * out     allocated in `a`, valid until arena_free(a); memory views point into `data`, which
 *         must outlive the result.
 * Errors  ERR_INVALID (no MDMP signature, header or stream directory outside the bytes),
 *         ERR_TOO_LARGE (the arena's budget). Anything else unreadable goes to out->notes.
 * Source  Microsoft minidumpapiset.h; Breakpad minidump_format.h; Crashpad minidump_extensions.h.
 */
err_code minidump_parse(minidump **out, const uint8_t *data, size_t len, arena *a, err_info *err);

/* minidump_memory_find - a pointer to `n` bytes at `addr` of the crashed process if one
 * captured range (a thread stack, MemoryList, Memory64List) holds all of them, else NULL.
 * Borrowed from the dump's bytes. */
const uint8_t *minidump_memory_find(const minidump *md, uint64_t addr, size_t n);

/* minidump_thread_find - the thread with id `thread_id`, or NULL. */
const minidump_thread *minidump_thread_find(const minidump *md, uint32_t thread_id);

/* minidump_crashed_thread - the thread the exception names, else Breakpad's requesting thread,
 * else NULL. */
const minidump_thread *minidump_crashed_thread(const minidump *md);

/* minidump_reg_name - "rax".."rip" or "x0".."pc" for DWARF register `reg` of `arch`; NULL if
 * out of range. Static string. */
const char *minidump_reg_name(minidump_arch arch, unsigned reg);

/* minidump_arch_name - "x86_64", "arm64" or "unknown". Static string. */
const char *minidump_arch_name(minidump_arch arch);

/* minidump_mach_exception_name - "EXC_BAD_ACCESS", "EXC_CRASH", ...; NULL if unknown. */
const char *minidump_mach_exception_name(uint32_t type);

/* minidump_signal_name - "SIGABRT", "SIGSEGV", ... (Darwin numbering); NULL if unknown. */
const char *minidump_signal_name(uint32_t signal);

#endif
