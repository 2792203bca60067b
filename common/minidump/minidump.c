/*
 * minidump - the reader. Every read goes through span_ok()/rd*() on offsets checked against
 * the dump's length; counts are bounded by the bytes of their stream before anything is
 * allocated. Layouts: README.md.
 */
#include "minidump/minidump.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define MDMP_SIGNATURE 0x504d444du /* "MDMP" little-endian */
#define MDMP_VERSION 0xa793u       /* low 16 bits of Version */
#define HEADER_SIZE 32
#define DIRENT_SIZE 12
#define THREAD_SIZE 48
#define MODULE_SIZE 108
#define MEMDESC_SIZE 16
#define MEMDESC64_SIZE 16
#define THREAD_NAME_SIZE 12
#define EXCEPTION_STREAM_SIZE 168
#define SYSTEM_INFO_SIZE 56
#define MAX_NOTES 64
#define MAX_STRING_BYTES 16384 /* longer strings are cut: names and annotations, not data */
/* Many entries may name the same string or annotation list: what is produced is bounded by
 * the input's size, not by entries times string length. */
#define STRING_BUDGET_SLACK (1u << 20)
#define MAX_ANNOTATION_ENTRIES 65536

#define CONTEXT_AMD64 0x00100000u
#define CONTEXT_ARM64 0x00400000u      /* Crashpad, and Microsoft's CONTEXT_ARM64 */
#define CONTEXT_ARM64_OLD 0x80000000u  /* Breakpad's MD_CONTEXT_ARM64 before Crashpad's */
#define AMD64_CONTEXT_REGS_END 0x100   /* through Rip */
#define ARM64_CONTEXT_REGS_END 272     /* flags, cpsr, x0..x30, sp, pc */
#define ARM64_OLD_CONTEXT_REGS_END 276 /* flags (8), x0..x28, fp, lr, sp, pc, cpsr */

#define CPU_ARCH_AMD64 9u
#define CPU_ARCH_ARM64 12u
#define CPU_ARCH_ARM64_OLD 0x8003u

#define CV_SIGNATURE_RSDS 0x53445352u /* "RSDS" */

typedef struct {
    const uint8_t *data;
    size_t len;
    minidump *md;
    arena *a;
    err_info *err;
    size_t string_budget; /* UTF-8 bytes strings may still take: 2 * len + STRING_BUDGET_SLACK */
    size_t entries_left;  /* annotation entries still to visit, of MAX_ANNOTATION_ENTRIES */
    bool strings_cut;     /* the string budget ran out (noted once) */
    bool entries_cut;     /* the annotation entry budget ran out (noted once) */
} reader;

/* ---- bounded reads --------------------------------------------------------------------- */

static bool span_ok(const reader *r, uint64_t off, uint64_t n)
{
    return off <= r->len && n <= r->len - off;
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

/* note - record one line about a part of the dump that was skipped; ERR_TOO_LARGE only when
 * the arena is exhausted. At most MAX_NOTES lines are kept (a hostile dump could make one per
 * entry); the last says more were dropped. */
static err_code note(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static err_code note(reader *r, const char *fmt, ...)
{
    minidump *md = r->md;
    if (md->nnotes >= MAX_NOTES)
        return ERR_OK;
    char line[256];
    if (md->nnotes == MAX_NOTES - 1) {
        snprintf(line, sizeof line, "more unreadable parts not listed");
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
    }
    const char **grown = arena_grow(r->a, md->notes, md->nnotes * sizeof *md->notes,
                                    (md->nnotes + 1) * sizeof *md->notes, r->err);
    if (grown == NULL)
        return ERR_TOO_LARGE;
    md->notes = grown;
    /* names from the dump are valid UTF-8, but the cut at 256 bytes may split one */
    char valid[256];
    md->notes[md->nnotes] = arena_strdup(r->a, utf8_repair(valid, sizeof valid, line), r->err);
    if (md->notes[md->nnotes] == NULL)
        return ERR_TOO_LARGE;
    md->nnotes++;
    return ERR_OK;
}

/* ---- strings --------------------------------------------------------------------------- */

/* string_spent - charge `n` bytes to the string budget; true (noted once) when it is spent:
 * the string is then read as "". */
static bool string_spent(reader *r, size_t n, err_code *rc)
{
    *rc = ERR_OK;
    if (n <= r->string_budget) {
        r->string_budget -= n;
        return false;
    }
    if (!r->strings_cut) {
        r->strings_cut = true;
        *rc = note(r, "strings: more text than the dump's size allows: further strings empty");
    }
    return true;
}

/* utf16_string - MINIDUMP_STRING at `rva` (u32 byte length, then UTF-16LE without the NUL) as
 * UTF-8 in the arena; unpaired surrogates become U+FFFD, an embedded NUL ends the string.
 * *out NULL (no error) when the string lies outside the dump. */
static err_code utf16_string(const char **out, reader *r, uint64_t rva)
{
    *out = NULL;
    if (!span_ok(r, rva, 4))
        return ERR_OK;
    uint64_t nbytes = rd32(r->data + rva);
    if (!span_ok(r, rva + 4, nbytes))
        return ERR_OK;
    if (nbytes > MAX_STRING_BYTES)
        nbytes = MAX_STRING_BYTES;
    size_t units = (size_t)nbytes / 2;
    const uint8_t *p = r->data + rva + 4;
    err_code rc;
    if (string_spent(r, units * 3 + 1, &rc)) {
        *out = "";
        return rc;
    }
    char *s = arena_alloc_uninit(r->a, units * 3 + 1, r->err); /* 3 bytes per unit at most */
    if (s == NULL)
        return ERR_TOO_LARGE;
    size_t o = 0;
    for (size_t i = 0; i < units; i++) {
        unsigned cp = rd16(p + 2 * i);
        if (cp == 0)
            break;
        if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < units) {
            unsigned lo = rd16(p + 2 * i + 2);
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                i++;
            } else {
                cp = 0xfffd;
            }
        } else if (cp >= 0xd800 && cp <= 0xdfff) {
            cp = 0xfffd;
        }
        /* a surrogate pair takes 2 units and 4 bytes: still within 3 bytes per unit */
        o += utf8_encode(s + o, cp);
    }
    s[o] = '\0';
    *out = s;
    return ERR_OK;
}

/* utf8_bytes - `n` bytes at `p` as a NUL-terminated valid UTF-8 string in the arena (bytes
 * that start no valid sequence become U+FFFD; an embedded NUL ends it). */
static err_code utf8_bytes(const char **out, reader *r, const uint8_t *p, size_t n)
{
    if (n > MAX_STRING_BYTES)
        n = MAX_STRING_BYTES;
    err_code rc;
    if (string_spent(r, n * 3 + 1, &rc)) {
        *out = "";
        return rc;
    }
    char *s = arena_alloc_uninit(r->a, n * 3 + 1, r->err);
    if (s == NULL)
        return ERR_TOO_LARGE;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (p[i] == 0)
            break;
        size_t k = utf8_seq_len((const char *)p + i, n - i);
        if (k == 0) {
            o += utf8_encode(s + o, 0xfffd);
            i++;
        } else {
            memcpy(s + o, p + i, k);
            o += k;
            i += k;
        }
    }
    s[o] = '\0';
    *out = s;
    return ERR_OK;
}

/* crashpad_utf8 - MinidumpUTF8String at `rva` (u32 length, bytes, NUL); NULL if outside. */
static err_code crashpad_utf8(const char **out, reader *r, uint64_t rva)
{
    *out = NULL;
    if (!span_ok(r, rva, 4))
        return ERR_OK;
    uint64_t n = rd32(r->data + rva);
    if (!span_ok(r, rva + 4, n))
        return ERR_OK;
    return utf8_bytes(out, r, r->data + rva + 4, (size_t)n);
}

/* ---- lists ----------------------------------------------------------------------------- */

/* list_entries - the count and first entry of a list stream: u32 count, then `entry_size`
 * entries. Breakpad's macOS writer puts 4 bytes of padding after the count (its structs are
 * 8-byte aligned): the stream size tells, being 8 + count * entry_size then. A count that
 * does not fit is cut to the entries that do, with a note. */
static err_code list_entries(size_t *count, uint64_t *first, reader *r, const char *what,
                             uint64_t rva, uint64_t size, uint64_t entry_size)
{
    *count = 0;
    *first = rva + 4;
    if (size < 4)
        return note(r, "%s: stream of %llu bytes has no count", what, (unsigned long long)size);
    uint64_t n = rd32(r->data + rva);
    uint64_t room = size - 4;
    if (room >= 4 && room - 4 == n * entry_size && room != n * entry_size) {
        *first = rva + 8;
        room -= 4;
    }
    if (n * entry_size > room) {
        uint64_t fit = room / entry_size;
        err_code rc = note(r, "%s: count %llu needs %llu bytes, stream has %llu: read %llu", what,
                           (unsigned long long)n, (unsigned long long)(n * entry_size),
                           (unsigned long long)room, (unsigned long long)fit);
        if (rc != ERR_OK)
            return rc;
        n = fit;
    }
    *count = (size_t)n;
    return ERR_OK;
}

/* ---- contexts -------------------------------------------------------------------------- */

static const char *const X86_64_NAMES[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                           "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                           "r12", "r13", "r14", "r15", "rip"};
/* MINIDUMP_CONTEXT_AMD64 stores Rax, Rcx, Rdx, Rbx, Rsp, Rbp, Rsi, Rdi, R8..R15, Rip: their
 * DWARF numbers in that order. */
static const uint8_t AMD64_FILE_TO_DWARF[17] = {0, 2, 1, 3, 7, 6, 4, 5, 8,
                                                9, 10, 11, 12, 13, 14, 15, 16};

/* read_context - the register context at (rva, size). `hint` is the system info's arch
 * (UNKNOWN when absent: the context's size decides then). Unreadable: arch stays UNKNOWN and
 * a note names `what`. */
static err_code read_context(minidump_context *out, reader *r, const char *what, uint64_t rva,
                             uint64_t size, minidump_arch hint)
{
    memset(out, 0, sizeof *out);
    if (size == 0)
        return note(r, "%s: no context", what);
    if (!span_ok(r, rva, size))
        return note(r, "%s: context rva 0x%llx + %llu bytes outside the dump (%zu bytes)", what,
                    (unsigned long long)rva, (unsigned long long)size, r->len);
    const uint8_t *p = r->data + rva;
    minidump_arch arch = hint;
    if (arch == MINIDUMP_ARCH_UNKNOWN) {
        if (size >= 0x34 && (rd32(p + 0x30) & CONTEXT_AMD64) && size >= 1232)
            arch = MINIDUMP_ARCH_X86_64;
        else if (size >= 4 && (rd32(p) & (CONTEXT_ARM64 | CONTEXT_ARM64_OLD)))
            arch = MINIDUMP_ARCH_ARM64;
    }
    if (arch == MINIDUMP_ARCH_X86_64) {
        if (size < AMD64_CONTEXT_REGS_END)
            return note(r, "%s: amd64 context of %llu bytes is too short", what,
                        (unsigned long long)size);
        out->flags = rd32(p + 0x30);
        if (!(out->flags & CONTEXT_AMD64))
            return note(r, "%s: context flags 0x%x are not amd64", what, out->flags);
        out->status = rd32(p + 0x44);
        for (unsigned i = 0; i < 17; i++)
            out->regs[AMD64_FILE_TO_DWARF[i]] = rd64(p + 0x78 + 8 * i);
        out->nregs = 17;
        out->arch = arch;
        return ERR_OK;
    }
    if (arch == MINIDUMP_ARCH_ARM64) {
        uint32_t flags = size >= 4 ? rd32(p) : 0;
        if ((flags & CONTEXT_ARM64_OLD) && size >= ARM64_OLD_CONTEXT_REGS_END) {
            /* u64 flags, x0..x28, fp, lr, sp, pc, u32 cpsr */
            for (unsigned i = 0; i < 33; i++)
                out->regs[i] = rd64(p + 8 + 8 * i);
            out->status = rd32(p + 8 + 33 * 8);
        } else if ((flags & CONTEXT_ARM64) && size >= ARM64_CONTEXT_REGS_END) {
            /* u32 flags, u32 cpsr, x0..x28, fp, lr, sp, pc */
            out->status = rd32(p + 4);
            for (unsigned i = 0; i < 33; i++)
                out->regs[i] = rd64(p + 8 + 8 * i);
        } else {
            return note(r, "%s: arm64 context of %llu bytes with flags 0x%x is not a layout read",
                        what, (unsigned long long)size, flags);
        }
        out->flags = flags;
        out->nregs = 33;
        out->arch = arch;
        return ERR_OK;
    }
    return note(r, "%s: context of %llu bytes for an unsupported cpu", what,
                (unsigned long long)size);
}

/* ---- streams --------------------------------------------------------------------------- */

static err_code read_system(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    if (size < SYSTEM_INFO_SIZE - 24) /* the CPU_INFORMATION union is not read */
        return note(r, "system info: stream of %llu bytes is too short", (unsigned long long)size);
    const uint8_t *p = r->data + rva;
    minidump_system *s = &md->system;
    s->cpu_arch_raw = rd16(p);
    s->cpu_count = p[6];
    s->os_major = rd32(p + 8);
    s->os_minor = rd32(p + 12);
    s->os_build = rd32(p + 16);
    s->platform_id = rd32(p + 20);
    if (s->cpu_arch_raw == CPU_ARCH_AMD64)
        s->arch = MINIDUMP_ARCH_X86_64;
    else if (s->cpu_arch_raw == CPU_ARCH_ARM64 || s->cpu_arch_raw == CPU_ARCH_ARM64_OLD)
        s->arch = MINIDUMP_ARCH_ARM64;
    err_code rc = utf16_string(&s->csd_version, r, rd32(p + 24));
    if (rc != ERR_OK)
        return rc;
    if (s->csd_version == NULL) {
        s->csd_version = "";
        if (rd32(p + 24) != 0) {
            rc = note(r, "system info: CSDVersion rva 0x%x outside the dump", rd32(p + 24));
            if (rc != ERR_OK)
                return rc;
        }
    }
    md->has_system = true;
    return ERR_OK;
}

/* memory_view - MINIDUMP_MEMORY_DESCRIPTOR at p (start, size, rva) as a view; data NULL when
 * the bytes lie outside the dump. */
static void memory_view(minidump_memory *out, const reader *r, const uint8_t *p)
{
    out->start_addr = rd64(p);
    out->size = rd32(p + 8);
    uint32_t rva = rd32(p + 12);
    out->data = span_ok(r, rva, out->size) ? r->data + rva : NULL;
}

static err_code read_threads(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    size_t n;
    uint64_t first;
    err_code rc = list_entries(&n, &first, r, "thread list", rva, size, THREAD_SIZE);
    if (rc != ERR_OK || n == 0)
        return rc;
    md->threads = arena_alloc_array(r->a, n, sizeof *md->threads, r->err);
    if (md->threads == NULL)
        return ERR_TOO_LARGE;
    minidump_arch hint = md->has_system ? md->system.arch : MINIDUMP_ARCH_UNKNOWN;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = r->data + first + i * THREAD_SIZE;
        minidump_thread *t = &md->threads[i];
        t->thread_id = rd32(p);
        memory_view(&t->stack, r, p + 24);
        /* "thread ID", by hand: only a note reads it, and snprintf per thread showed in
         * the server's profile */
        char what[32] = "thread ", digits[10];
        size_t nd = 0, at = 7;
        uint32_t id = t->thread_id;
        do {
            digits[nd++] = (char)('0' + id % 10);
            id /= 10;
        } while (id != 0);
        while (nd > 0)
            what[at++] = digits[--nd];
        what[at] = '\0';
        if (t->stack.data == NULL && t->stack.size > 0) {
            rc = note(r, "%s: stack rva 0x%x + %llu bytes outside the dump", what, rd32(p + 36),
                      (unsigned long long)t->stack.size);
            if (rc != ERR_OK)
                return rc;
        }
        rc = read_context(&t->context, r, what, rd32(p + 44), rd32(p + 40), hint);
        if (rc != ERR_OK)
            return rc;
    }
    md->nthreads = n;
    return ERR_OK;
}

/* unwrap_exception - fill the Apple view of the exception (mach_type, mach_code, signal,
 * wrapped). Breakpad writes the Mach exception type as ExceptionCode and code[0] as
 * ExceptionFlags, EXC_CRASH included; Crashpad writes EXC_CRASH's original exception as
 * ExceptionCode and keeps the raw [type, code[0], ...] in ExceptionInformation. EXC_CRASH's
 * code[0] packs signal << 24 | original exception << 20 | original code (20 bits), as
 * <mach/exception_types.h> and xnu's task_exception_notify/proc_exit write it. */
static void unwrap_exception(minidump_exception *e)
{
    uint64_t code0;
    e->mach_type = e->code;
    e->mach_code = e->flags;
    if (e->nparams >= 2 && e->params[0] == e->code)
        e->mach_code = e->params[1]; /* Crashpad keeps the 64-bit code */
    if (e->code == MINIDUMP_EXC_CRASH)
        code0 = e->flags;
    else if (e->nparams >= 2 && e->params[0] == MINIDUMP_EXC_CRASH)
        code0 = e->params[1];
    else
        return;
    e->wrapped = true;
    e->signal = (uint32_t)(code0 >> 24) & 0xff;
    e->mach_type = (uint32_t)(code0 >> 20) & 0xf;
    e->mach_code = code0 & 0xfffff;
}

static err_code read_exception(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    minidump_exception *e = &md->exception;
    if (size < EXCEPTION_STREAM_SIZE)
        return note(r, "exception: stream of %llu bytes is too short", (unsigned long long)size);
    const uint8_t *p = r->data + rva;
    e->thread_id = rd32(p);
    e->code = rd32(p + 8);
    e->flags = rd32(p + 12);
    e->address = rd64(p + 24);
    uint32_t nparams = rd32(p + 32);
    err_code rc;
    if (nparams > 15) {
        rc = note(r, "exception: NumberParameters %u is over 15: parameters ignored", nparams);
        if (rc != ERR_OK)
            return rc;
        nparams = 0;
    }
    e->nparams = nparams;
    for (uint32_t i = 0; i < nparams; i++)
        e->params[i] = rd64(p + 40 + 8 * i);
    e->present = true;
    unwrap_exception(e);
    minidump_arch hint = md->has_system ? md->system.arch : MINIDUMP_ARCH_UNKNOWN;
    return read_context(&e->context, r, "exception", rd32(p + 164), rd32(p + 160), hint);
}

/* mach_uuid - an RSDS GUID as the Mach-O UUID: Breakpad and Crashpad store the UUID's first
 * three fields as the GUID's little-endian Data1 (u32), Data2 and Data3 (u16); Data4 keeps
 * the UUID's byte order. */
static void mach_uuid(uint8_t out[16], const uint8_t *guid)
{
    out[0] = guid[3], out[1] = guid[2], out[2] = guid[1], out[3] = guid[0];
    out[4] = guid[5], out[5] = guid[4];
    out[6] = guid[7], out[7] = guid[6];
    memcpy(out + 8, guid + 8, 8);
}

static err_code read_modules(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    size_t n;
    uint64_t first;
    err_code rc = list_entries(&n, &first, r, "module list", rva, size, MODULE_SIZE);
    if (rc != ERR_OK || n == 0)
        return rc;
    md->modules = arena_alloc_array(r->a, n, sizeof *md->modules, r->err);
    if (md->modules == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = r->data + first + i * MODULE_SIZE;
        minidump_module *m = &md->modules[i];
        m->load_addr = rd64(p);
        m->size = rd32(p + 8);
        uint32_t name_rva = rd32(p + 20);
        rc = utf16_string(&m->name, r, name_rva);
        if (rc != ERR_OK)
            return rc;
        if (m->name == NULL) {
            m->name = "";
            rc = note(r, "module list: entry %zu: name rva 0x%x outside the dump", i, name_rva);
            if (rc != ERR_OK)
                return rc;
        }
        uint32_t cv_size = rd32(p + 76), cv_rva = rd32(p + 80);
        if (cv_size == 0)
            continue;
        if (!span_ok(r, cv_rva, cv_size) || cv_size < 24) {
            rc = note(r, "module %s: CodeView record rva 0x%x + %u bytes unreadable", m->name,
                      cv_rva, cv_size);
            if (rc != ERR_OK)
                return rc;
            continue;
        }
        const uint8_t *cv = r->data + cv_rva;
        if (rd32(cv) != CV_SIGNATURE_RSDS) {
            rc = note(r, "module %s: CodeView signature 0x%08x is not RSDS: no UUID", m->name,
                      rd32(cv));
            if (rc != ERR_OK)
                return rc;
            continue;
        }
        mach_uuid(m->uuid, cv + 4);
        m->cv_age = rd32(cv + 20);
        m->has_uuid = true;
    }
    md->nmodules = n;
    return ERR_OK;
}

/* add_memory - append `n` ranges to md->memory (grown in the arena). */
static minidump_memory *add_memory(reader *r, size_t n)
{
    minidump *md = r->md;
    minidump_memory *grown = arena_grow(r->a, md->memory, md->nmemory * sizeof *md->memory,
                                        (md->nmemory + n) * sizeof *md->memory, r->err);
    if (grown == NULL)
        return NULL;
    md->memory = grown;
    md->nmemory += n;
    return grown + md->nmemory - n;
}

static err_code read_memory_list(reader *r, uint64_t rva, uint64_t size)
{
    size_t n;
    uint64_t first;
    err_code rc = list_entries(&n, &first, r, "memory list", rva, size, MEMDESC_SIZE);
    if (rc != ERR_OK || n == 0)
        return rc;
    minidump_memory *m = add_memory(r, n);
    if (m == NULL)
        return ERR_TOO_LARGE;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        memory_view(&m[i], r, r->data + first + i * MEMDESC_SIZE);
        bad += m[i].data == NULL && m[i].size > 0;
    }
    if (bad > 0)
        return note(r, "memory list: %zu of %zu ranges lie outside the dump", bad, n);
    return ERR_OK;
}

/* Memory64List: u64 count, u64 BaseRva, then (start, u64 size) descriptors; the ranges' bytes
 * follow each other from BaseRva. */
static err_code read_memory64_list(reader *r, uint64_t rva, uint64_t size)
{
    if (size < 16)
        return note(r, "memory64 list: stream of %llu bytes is too short", (unsigned long long)size);
    uint64_t n = rd64(r->data + rva), base = rd64(r->data + rva + 8);
    if (n > (size - 16) / MEMDESC64_SIZE) {
        uint64_t fit = (size - 16) / MEMDESC64_SIZE;
        err_code rc = note(r, "memory64 list: count %llu does not fit the stream: read %llu",
                           (unsigned long long)n, (unsigned long long)fit);
        if (rc != ERR_OK)
            return rc;
        n = fit;
    }
    if (n == 0)
        return ERR_OK;
    minidump_memory *m = add_memory(r, (size_t)n);
    if (m == NULL)
        return ERR_TOO_LARGE;
    size_t bad = 0;
    uint64_t off = base;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *p = r->data + rva + 16 + i * MEMDESC64_SIZE;
        m[i].start_addr = rd64(p);
        m[i].size = rd64(p + 8);
        m[i].data = off != UINT64_MAX && span_ok(r, off, m[i].size) ? r->data + off : NULL;
        bad += m[i].data == NULL && m[i].size > 0;
        off = m[i].size <= UINT64_MAX - off ? off + m[i].size : UINT64_MAX;
    }
    if (bad > 0)
        return note(r, "memory64 list: %zu of %llu ranges lie outside the dump", bad,
                    (unsigned long long)n);
    return ERR_OK;
}

static err_code read_misc(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    if (size < 24)
        return note(r, "misc info: stream of %llu bytes is too short", (unsigned long long)size);
    const uint8_t *p = r->data + rva;
    uint32_t flags1 = rd32(p + 4);
    md->has_process_id = flags1 & 0x1; /* MINIDUMP_MISC1_PROCESS_ID */
    md->process_id = md->has_process_id ? rd32(p + 8) : 0;
    md->has_process_create_time = flags1 & 0x2; /* MINIDUMP_MISC1_PROCESS_TIMES */
    md->process_create_time = md->has_process_create_time ? rd32(p + 12) : 0;
    return ERR_OK;
}

static int thread_by_id(const void *x, const void *y)
{
    uint32_t a = (*(minidump_thread *const *)x)->thread_id, b = (*(minidump_thread *const *)y)->thread_id;
    return a < b ? -1 : a > b;
}

/* ThreadNames: u32 count, then packed (u32 ThreadId, u64 RvaOfThreadName) entries. Threads are
 * found through an index sorted by id: both lists can be long in a hostile dump. */
static err_code read_thread_names(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    size_t n;
    uint64_t first;
    err_code rc = list_entries(&n, &first, r, "thread names", rva, size, THREAD_NAME_SIZE);
    if (rc != ERR_OK || n == 0 || md->nthreads == 0)
        return rc;
    minidump_thread **index = arena_alloc_array(r->a, md->nthreads, sizeof *index, r->err);
    if (index == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < md->nthreads; i++)
        index[i] = &md->threads[i];
    qsort(index, md->nthreads, sizeof *index, thread_by_id);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = r->data + first + i * THREAD_NAME_SIZE;
        uint32_t id = rd32(p);
        uint64_t name_rva = rd64(p + 4);
        minidump_thread key = {.thread_id = id}, *keyp = &key;
        minidump_thread **found = bsearch(&keyp, index, md->nthreads, sizeof *index, thread_by_id);
        if (found == NULL || (*found)->name != NULL)
            continue;
        minidump_thread *t = *found;
        rc = utf16_string(&t->name, r, name_rva);
        if (rc != ERR_OK)
            return rc;
        if (t->name == NULL) {
            rc = note(r, "thread names: thread %u: name rva 0x%llx outside the dump", id,
                      (unsigned long long)name_rva);
            if (rc != ERR_OK)
                return rc;
        }
    }
    return ERR_OK;
}

static err_code read_breakpad_info(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    if (size < 12)
        return note(r, "breakpad info: stream of %llu bytes is too short", (unsigned long long)size);
    const uint8_t *p = r->data + rva;
    uint32_t validity = rd32(p);
    md->has_dump_thread_id = validity & 0x1;
    md->dump_thread_id = md->has_dump_thread_id ? rd32(p + 4) : 0;
    md->has_requesting_thread_id = validity & 0x2;
    md->requesting_thread_id = md->has_requesting_thread_id ? rd32(p + 8) : 0;
    return ERR_OK;
}

/* ---- Crashpad annotations -------------------------------------------------------------- */

typedef struct {
    minidump_annotation *items;
    size_t n, cap;
} annotations;

/* add_annotation - append; the array doubles, so a long list costs linear memory even though
 * the strings allocated in between keep arena_grow from extending in place. */
static err_code add_annotation(annotations *out, reader *r, const char *key, const char *value)
{
    if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 8;
        minidump_annotation *grown = arena_grow(r->a, out->items, out->cap * sizeof *out->items,
                                                cap * sizeof *out->items, r->err);
        if (grown == NULL)
            return ERR_TOO_LARGE;
        out->items = grown;
        out->cap = cap;
    }
    out->items[out->n].key = key;
    out->items[out->n].value = value;
    out->n++;
    return ERR_OK;
}

/* entry_spent - count one annotation entry; true (noted once) when MAX_ANNOTATION_ENTRIES
 * have been visited: the rest are skipped. */
static bool entry_spent(reader *r, err_code *rc)
{
    *rc = ERR_OK;
    if (r->entries_left > 0) {
        r->entries_left--;
        return false;
    }
    if (!r->entries_cut) {
        r->entries_cut = true;
        *rc = note(r, "crashpad annotations: over %d entries: the rest skipped",
                   MAX_ANNOTATION_ENTRIES);
    }
    return true;
}

/* location - a MINIDUMP_LOCATION_DESCRIPTOR (u32 size, u32 rva) at p; false if it is empty or
 * lies outside the dump. */
static bool location(uint64_t *rva, uint64_t *size, const reader *r, const uint8_t *p)
{
    *size = rd32(p);
    *rva = rd32(p + 4);
    return *size > 0 && span_ok(r, *rva, *size);
}

/* MinidumpSimpleStringDictionary: u32 count, then (key rva, value rva) of UTF-8 strings. */
static err_code read_simple_dict(annotations *out, reader *r, const char *what, const uint8_t *loc)
{
    uint64_t rva, size;
    if (!location(&rva, &size, r, loc))
        return rd32(loc) == 0 ? ERR_OK : note(r, "%s: simple annotations unreadable", what);
    size_t n;
    uint64_t first;
    err_code rc = list_entries(&n, &first, r, what, rva, size, 8);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const char *k, *v;
        if (entry_spent(r, &rc))
            break;
        rc = crashpad_utf8(&k, r, rd32(r->data + first + 8 * i));
        if (rc == ERR_OK)
            rc = crashpad_utf8(&v, r, rd32(r->data + first + 8 * i + 4));
        if (rc == ERR_OK && k != NULL && v != NULL)
            rc = add_annotation(out, r, k, v);
    }
    return rc;
}

/* MinidumpRVAList of UTF-8 strings (a module's list annotations): keys are NULL. */
static err_code read_string_list(annotations *out, reader *r, const char *what, const uint8_t *loc)
{
    uint64_t rva, size;
    if (!location(&rva, &size, r, loc))
        return rd32(loc) == 0 ? ERR_OK : note(r, "%s: list annotations unreadable", what);
    size_t n;
    uint64_t first;
    err_code rc = list_entries(&n, &first, r, what, rva, size, 4);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const char *v;
        if (entry_spent(r, &rc))
            break;
        rc = crashpad_utf8(&v, r, rd32(r->data + first + 4 * i));
        if (rc == ERR_OK && v != NULL)
            rc = add_annotation(out, r, NULL, v);
    }
    return rc;
}

/* MinidumpAnnotationList: u32 count, then (name rva, u16 type, u16 reserved, value rva);
 * only string annotations (type 1, the value a u32-length byte array) are read. */
static err_code read_annotation_objects(annotations *out, reader *r, const char *what,
                                        const uint8_t *loc)
{
    uint64_t rva, size;
    if (!location(&rva, &size, r, loc))
        return rd32(loc) == 0 ? ERR_OK : note(r, "%s: annotation objects unreadable", what);
    size_t n;
    uint64_t first;
    err_code rc = list_entries(&n, &first, r, what, rva, size, 12);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const uint8_t *p = r->data + first + 12 * i;
        if (entry_spent(r, &rc))
            break;
        if (rd16(p + 4) != 1) /* kString; other types are the app's own binary data */
            continue;
        const char *k, *v = NULL;
        rc = crashpad_utf8(&k, r, rd32(p));
        uint32_t vrva = rd32(p + 8);
        if (rc == ERR_OK && span_ok(r, vrva, 4) && span_ok(r, (uint64_t)vrva + 4, rd32(r->data + vrva)))
            rc = utf8_bytes(&v, r, r->data + vrva + 4, rd32(r->data + vrva));
        if (rc == ERR_OK && k != NULL && v != NULL)
            rc = add_annotation(out, r, k, v);
    }
    return rc;
}

/* MinidumpCrashpadInfo: version, report and client UUIDs, simple annotations, module list of
 * (module index, MinidumpModuleCrashpadInfo location); each module info has list annotations,
 * simple annotations and (version >= 1 and long enough) annotation objects. */
static err_code read_crashpad_info(reader *r, uint64_t rva, uint64_t size)
{
    minidump *md = r->md;
    if (size < 52)
        return note(r, "crashpad info: stream of %llu bytes is too short", (unsigned long long)size);
    const uint8_t *p = r->data + rva;
    md->has_crashpad_info = true;
    annotations proc = {0};
    err_code rc = read_simple_dict(&proc, r, "crashpad info", p + 36);
    if (rc != ERR_OK)
        return rc;
    md->annotations = proc.items;
    md->nannotations = proc.n;
    uint64_t lrva, lsize;
    if (!location(&lrva, &lsize, r, p + 44))
        return rd32(p + 44) == 0 ? ERR_OK : note(r, "crashpad info: module list unreadable");
    size_t n;
    uint64_t first;
    rc = list_entries(&n, &first, r, "crashpad module list", lrva, lsize, 12);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        const uint8_t *link = r->data + first + 12 * i;
        uint32_t index = rd32(link);
        uint64_t mrva, msize;
        if (index >= md->nmodules || !location(&mrva, &msize, r, link + 4) || msize < 20) {
            rc = note(r, "crashpad module list: entry %zu (module %u) unreadable", i, index);
            continue;
        }
        minidump_module *m = &md->modules[index];
        annotations ann = {m->annotations, m->nannotations, m->nannotations};
        const uint8_t *mi = r->data + mrva;
        char what[64];
        snprintf(what, sizeof what, "crashpad module %u", index);
        rc = read_string_list(&ann, r, what, mi + 4);
        if (rc == ERR_OK)
            rc = read_simple_dict(&ann, r, what, mi + 12);
        if (rc == ERR_OK && msize >= 28)
            rc = read_annotation_objects(&ann, r, what, mi + 20);
        m->annotations = ann.items;
        m->nannotations = ann.n;
    }
    return rc;
}

/* ---- the dump -------------------------------------------------------------------------- */

typedef err_code (*stream_reader)(reader *r, uint64_t rva, uint64_t size);

/* In the order they are read: system info first (it says how to read contexts), threads
 * before the streams that name threads, modules before Crashpad's module annotations. */
static const struct {
    uint32_t type;
    const char *name;
    stream_reader read;
} STREAMS[] = {
    {MINIDUMP_STREAM_SYSTEM_INFO, "system info", read_system},
    {MINIDUMP_STREAM_THREAD_LIST, "thread list", read_threads},
    {MINIDUMP_STREAM_EXCEPTION, "exception", read_exception},
    {MINIDUMP_STREAM_MODULE_LIST, "module list", read_modules},
    {MINIDUMP_STREAM_MEMORY_LIST, "memory list", read_memory_list},
    {MINIDUMP_STREAM_MEMORY64_LIST, "memory64 list", read_memory64_list},
    {MINIDUMP_STREAM_MISC_INFO, "misc info", read_misc},
    {MINIDUMP_STREAM_THREAD_NAMES, "thread names", read_thread_names},
    {MINIDUMP_STREAM_BREAKPAD_INFO, "breakpad info", read_breakpad_info},
    {MINIDUMP_STREAM_CRASHPAD_INFO, "crashpad info", read_crashpad_info},
};

err_code minidump_parse(minidump **out, const uint8_t *data, size_t len, arena *a, err_info *err)
{
    reader r = {data, len, NULL, a, err, 0, MAX_ANNOTATION_ENTRIES, false, false};
    r.string_budget = len <= (SIZE_MAX - STRING_BUDGET_SLACK) / 2 ? 2 * len + STRING_BUDGET_SLACK
                                                                 : SIZE_MAX;
    *out = NULL;
    if (len < HEADER_SIZE)
        return err_set(err, ERR_INVALID, "minidump header needs %d bytes, the dump has %zu",
                       HEADER_SIZE, len);
    if (rd32(data) != MDMP_SIGNATURE)
        return err_set(err, ERR_INVALID, "not a minidump: signature 0x%08x is not \"MDMP\"",
                       rd32(data));
    uint32_t version = rd32(data + 4);
    if ((version & 0xffff) != MDMP_VERSION)
        return err_set(err, ERR_INVALID, "minidump version 0x%04x is not 0xa793", version & 0xffff);
    uint32_t nstreams = rd32(data + 8), dir = rd32(data + 12);
    if (!span_ok(&r, dir, (uint64_t)nstreams * DIRENT_SIZE))
        return err_set(err, ERR_INVALID,
                       "minidump stream directory (%u entries at rva 0x%x) lies outside the dump "
                       "(%zu bytes)", nstreams, dir, len);
    minidump *md = arena_alloc(a, sizeof *md, err);
    if (md == NULL)
        return ERR_TOO_LARGE;
    r.md = md;
    md->version = version;
    md->nstreams = nstreams;
    md->timestamp = rd32(data + 20);

    err_code rc = ERR_OK;
    for (size_t s = 0; rc == ERR_OK && s < sizeof STREAMS / sizeof STREAMS[0]; s++) {
        bool seen = false;
        for (uint32_t i = 0; rc == ERR_OK && i < nstreams; i++) {
            const uint8_t *e = data + dir + (size_t)i * DIRENT_SIZE;
            if (rd32(e) != STREAMS[s].type)
                continue;
            uint32_t size = rd32(e + 4), rva = rd32(e + 8);
            if (seen)
                rc = note(&r, "%s: another stream of this type ignored", STREAMS[s].name);
            else if (!span_ok(&r, rva, size))
                rc = note(&r, "%s: stream at rva 0x%x + %u bytes lies outside the dump (%zu bytes)",
                          STREAMS[s].name, rva, size, len);
            else
                rc = STREAMS[s].read(&r, rva, size);
            seen = true;
        }
    }
    if (rc != ERR_OK)
        return rc;
    /* Without threads, modules or an exception there is nothing to walk or to group by: the
     * directory was garbage (or the dump holds only streams this reader does not know). */
    if (md->nthreads == 0 && md->nmodules == 0 && !md->exception.present)
        return err_set(err, ERR_INVALID,
                       "minidump has no readable thread list, module list or exception stream "
                       "(%u directory entries%s%s)", nstreams, md->nnotes ? "; first problem: " : "",
                       md->nnotes ? md->notes[0] : "");
    *out = md;
    return ERR_OK;
}

/* ---- lookups --------------------------------------------------------------------------- */

static const uint8_t *in_range(const minidump_memory *m, uint64_t addr, size_t n)
{
    if (m->data == NULL || addr < m->start_addr)
        return NULL;
    uint64_t off = addr - m->start_addr;
    if (off > m->size || n > m->size - off)
        return NULL;
    return m->data + off;
}

const uint8_t *minidump_memory_find(const minidump *md, uint64_t addr, size_t n)
{
    const uint8_t *p;
    for (size_t i = 0; i < md->nthreads; i++)
        if ((p = in_range(&md->threads[i].stack, addr, n)) != NULL)
            return p;
    for (size_t i = 0; i < md->nmemory; i++)
        if ((p = in_range(&md->memory[i], addr, n)) != NULL)
            return p;
    return NULL;
}

const minidump_thread *minidump_thread_find(const minidump *md, uint32_t thread_id)
{
    for (size_t i = 0; i < md->nthreads; i++)
        if (md->threads[i].thread_id == thread_id)
            return &md->threads[i];
    return NULL;
}

const minidump_thread *minidump_crashed_thread(const minidump *md)
{
    if (md->exception.present)
        return minidump_thread_find(md, md->exception.thread_id);
    if (md->has_requesting_thread_id)
        return minidump_thread_find(md, md->requesting_thread_id);
    return NULL;
}

const char *minidump_reg_name(minidump_arch arch, unsigned reg)
{
    static const char *const ARM64_NAMES[] = {
        "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
        "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
        "x22", "x23", "x24", "x25", "x26", "x27", "x28", "fp",  "lr",  "sp",  "pc"};
    if (arch == MINIDUMP_ARCH_X86_64 && reg < 17)
        return X86_64_NAMES[reg];
    if (arch == MINIDUMP_ARCH_ARM64 && reg < 33)
        return ARM64_NAMES[reg];
    return NULL;
}

const char *minidump_arch_name(minidump_arch arch)
{
    switch (arch) {
    case MINIDUMP_ARCH_X86_64: return "x86_64";
    case MINIDUMP_ARCH_ARM64: return "arm64";
    case MINIDUMP_ARCH_UNKNOWN: break;
    }
    return "unknown";
}

const char *minidump_mach_exception_name(uint32_t type)
{
    static const char *const NAMES[] = {NULL,           "EXC_BAD_ACCESS", "EXC_BAD_INSTRUCTION",
                                        "EXC_ARITHMETIC", "EXC_EMULATION", "EXC_SOFTWARE",
                                        "EXC_BREAKPOINT", "EXC_SYSCALL",  "EXC_MACH_SYSCALL",
                                        "EXC_RPC_ALERT", "EXC_CRASH",     "EXC_RESOURCE",
                                        "EXC_GUARD",     "EXC_CORPSE_NOTIFY"};
    return type < sizeof NAMES / sizeof NAMES[0] ? NAMES[type] : NULL;
}

const char *minidump_signal_name(uint32_t signal)
{
    /* Darwin's <sys/signal.h> numbering */
    static const char *const NAMES[] = {
        NULL,      "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT",
        "SIGEMT",  "SIGFPE",  "SIGKILL",   "SIGBUS",  "SIGSEGV",  "SIGSYS",  "SIGPIPE",
        "SIGALRM", "SIGTERM", "SIGURG",    "SIGSTOP", "SIGTSTP",  "SIGCONT", "SIGCHLD",
        "SIGTTIN", "SIGTTOU", "SIGIO",     "SIGXCPU", "SIGXFSZ",  "SIGVTALRM", "SIGPROF",
        "SIGWINCH", "SIGINFO", "SIGUSR1",  "SIGUSR2"};
    return signal < sizeof NAMES / sizeof NAMES[0] ? NAMES[signal] : NULL;
}
