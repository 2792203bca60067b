/*
 * unwind - the compact unwind table and its encodings (see unwind.h for the layout).
 */
#include "unwind/unwind.h"

#include <string.h>

#define PAGE_REGULAR 2u
#define PAGE_COMPRESSED 3u

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static bool span_ok(size_t len, uint64_t off, uint64_t n)
{
    return off <= len && n <= len - off;
}

err_code unwind_compact_list(unwind_entry **out, size_t *n, const uint8_t *sect, size_t len,
                             arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    if (len < 28)
        return err_set(err, ERR_INVALID, "__unwind_info of %zu bytes has no header", len);
    uint32_t version = rd32(sect);
    if (version != 1)
        return err_set(err, ERR_INVALID, "__unwind_info version %u is not 1", version);
    uint32_t common_off = rd32(sect + 4), common_n = rd32(sect + 8);
    uint32_t index_off = rd32(sect + 20), index_n = rd32(sect + 24);
    if (!span_ok(len, common_off, (uint64_t)common_n * 4))
        return err_set(err, ERR_INVALID, "__unwind_info common encodings (%u at 0x%x) outside "
                       "the section (%zu bytes)", common_n, common_off, len);
    if (!span_ok(len, index_off, (uint64_t)index_n * 12))
        return err_set(err, ERR_INVALID, "__unwind_info index (%u entries at 0x%x) outside the "
                       "section (%zu bytes)", index_n, index_off, len);
    /* First pass: count, checking every page; second: fill. Entries are bounded by the
     * section's bytes (4 at least each), so the array is too. */
    size_t total = 0;
    unwind_entry *list = NULL;
    for (int pass = 0; pass < 2; pass++) {
        size_t k = 0;
        for (uint32_t i = 0; i + 1 < index_n; i++) {
            const uint8_t *ix = sect + index_off + 12 * i;
            uint32_t base = rd32(ix), page = rd32(ix + 4);
            uint32_t next_base = rd32(ix + 12);
            if (page == 0)
                continue;
            if (!span_ok(len, page, 8))
                return err_set(err, ERR_INVALID, "__unwind_info page at 0x%x outside the section",
                               page);
            uint32_t kind = rd32(sect + page);
            uint32_t entries_off = page + rd16(sect + page + 4), count = rd16(sect + page + 6);
            if (kind == PAGE_REGULAR) {
                if (!span_ok(len, entries_off, (uint64_t)count * 8))
                    return err_set(err, ERR_INVALID, "__unwind_info regular page at 0x%x: %u "
                                   "entries outside the section", page, count);
                for (uint32_t e = 0; pass == 1 && e < count; e++) {
                    list[k + e].func_start = rd32(sect + entries_off + 8 * e);
                    list[k + e].encoding = rd32(sect + entries_off + 8 * e + 4);
                }
            } else if (kind == PAGE_COMPRESSED) {
                if (!span_ok(len, page, 12))
                    return err_set(err, ERR_INVALID, "__unwind_info page at 0x%x outside the "
                                   "section", page);
                uint32_t enc_off = page + rd16(sect + page + 8), enc_n = rd16(sect + page + 10);
                if (!span_ok(len, entries_off, (uint64_t)count * 4) ||
                    !span_ok(len, enc_off, (uint64_t)enc_n * 4))
                    return err_set(err, ERR_INVALID, "__unwind_info compressed page at 0x%x: "
                                   "entries or encodings outside the section", page);
                for (uint32_t e = 0; pass == 1 && e < count; e++) {
                    uint32_t v = rd32(sect + entries_off + 4 * e);
                    uint32_t idx = v >> 24, enc = 0;
                    if (idx < common_n)
                        enc = rd32(sect + common_off + 4 * idx);
                    else if (idx - common_n < enc_n)
                        enc = rd32(sect + enc_off + 4 * (idx - common_n));
                    else
                        return err_set(err, ERR_INVALID, "__unwind_info compressed page at 0x%x: "
                                       "encoding index %u out of range", page, idx);
                    list[k + e].func_start = base + (v & 0xffffff);
                    list[k + e].encoding = enc;
                }
            } else {
                return err_set(err, ERR_INVALID, "__unwind_info page at 0x%x has kind %u", page,
                               kind);
            }
            /* each page's last function ends where the next index entry starts */
            for (uint32_t e = 0; pass == 1 && e < count; e++)
                list[k + e].func_end = e + 1 < count ? list[k + e + 1].func_start : next_base;
            k += count;
        }
        if (pass == 0) {
            total = k;
            if (total == 0)
                return ERR_OK;
            list = arena_alloc_array(a, total, sizeof *list, err);
            if (list == NULL)
                return ERR_TOO_LARGE;
        }
    }
    /* Address order is the format's promise; a table that breaks it cannot be searched. */
    for (size_t i = 1; i < total; i++)
        if (list[i].func_start < list[i - 1].func_start)
            return err_set(err, ERR_INVALID, "__unwind_info functions out of order at 0x%x",
                           list[i].func_start);
    *out = list;
    *n = total;
    return ERR_OK;
}

const unwind_entry *unwind_compact_find(const unwind_entry *entries, size_t n, uint32_t rel_addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first entry starting after rel_addr */
        size_t mid = lo + (hi - lo) / 2;
        if (entries[mid].func_start <= rel_addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const unwind_entry *e = &entries[lo - 1];
    return rel_addr < e->func_end ? e : NULL;
}

/* ---- x86_64 ---------------------------------------------------------------------------- */

/* Compact register numbers (1 rbx, 2 r12, 3 r13, 4 r14, 5 r15, 6 rbp) as DWARF numbers. */
static const int X86_64_DWARF[7] = {-1, 3, 12, 13, 14, 15, 6};

/* permutation - the order of `count` (1..6) registers saved by a frameless function: the
 * 10-bit field numbers the permutation in a factorial base (the k-th register is the n-th of
 * those not yet used), as Apple's header explains. False if a digit is out of range. */
static bool permutation(int out[6], unsigned count, uint32_t perm)
{
    static const uint32_t RADIX[7][6] = {
        {0},
        {1},
        {5, 1},
        {20, 4, 1},
        {60, 12, 3, 1},
        {120, 24, 6, 2, 1},
        {120, 24, 6, 2, 1, 1},
    };
    unsigned digit[6] = {0};
    for (unsigned i = 0; i < count; i++) {
        digit[i] = perm / RADIX[count][i];
        perm -= digit[i] * RADIX[count][i];
    }
    bool used[7] = {false};
    for (unsigned i = 0; i < count; i++) {
        unsigned rank = 0;
        int reg = -1;
        for (unsigned r = 1; r <= 6; r++) {
            if (used[r])
                continue;
            if (rank == digit[i]) {
                reg = (int)r;
                break;
            }
            rank++;
        }
        if (reg < 0)
            return false;
        used[reg] = true;
        out[i] = X86_64_DWARF[reg];
    }
    return true;
}

bool unwind_decode_x86_64(unwind_rule *out, uint32_t encoding)
{
    memset(out, 0, sizeof *out);
    switch ((encoding >> 24) & 0xf) {
    case 0:
        out->kind = UNWIND_KIND_NONE;
        return true;
    case 1: /* RBP frame: 5 slots of 3 bits, first at rbp - 8 * offset */
        out->kind = UNWIND_KIND_FRAME;
        out->saved_offset = ((encoding >> 16) & 0xff) * 8;
        out->nsaved = 5;
        for (unsigned i = 0; i < 5; i++) {
            unsigned r = (encoding >> (3 * i)) & 7;
            if (r > 6) {
                out->kind = UNWIND_KIND_UNKNOWN;
                return false;
            }
            out->saved[i] = X86_64_DWARF[r];
        }
        return true;
    case 2:
    case 3: {
        unsigned count = (encoding >> 10) & 7;
        if (((encoding >> 24) & 0xf) == 2) {
            out->kind = UNWIND_KIND_FRAMELESS;
            out->stack_size = ((encoding >> 16) & 0xff) * 8;
        } else {
            out->kind = UNWIND_KIND_FRAMELESS_INDIRECT;
            out->sub_offset = (encoding >> 16) & 0xff;
            out->stack_adjust = ((encoding >> 13) & 7) * 8;
        }
        if (count > 6 || !permutation(out->saved, count, encoding & 0x3ff)) {
            out->kind = UNWIND_KIND_UNKNOWN;
            return false;
        }
        out->nsaved = count;
        return true;
    }
    case 4:
        out->kind = UNWIND_KIND_DWARF;
        out->dwarf_offset = encoding & 0xffffff;
        return true;
    }
    out->kind = UNWIND_KIND_UNKNOWN;
    return false;
}

/* ---- arm64 ----------------------------------------------------------------------------- */

bool unwind_decode_arm64(unwind_rule *out, uint32_t encoding)
{
    memset(out, 0, sizeof *out);
    unsigned mode = (encoding >> 24) & 0xf;
    if (mode == 0) {
        out->kind = UNWIND_KIND_NONE;
        return true;
    }
    if (mode == 3) {
        out->kind = UNWIND_KIND_DWARF;
        out->dwarf_offset = encoding & 0xffffff;
        return true;
    }
    if (mode != 2 && mode != 4) {
        out->kind = UNWIND_KIND_UNKNOWN;
        return false;
    }
    out->kind = mode == 4 ? UNWIND_KIND_FRAME : UNWIND_KIND_FRAMELESS;
    if (mode == 2)
        out->stack_size = ((encoding >> 12) & 0xfff) * 16;
    /* x19/x20 .. x27/x28 pairs (bits 0..4), saved from the top down; the d8..d15 pairs
     * (bits 8..11) come below them and are not restored. */
    for (unsigned p = 0; p < 5; p++) {
        if (encoding & (1u << p)) {
            out->saved[out->nsaved++] = 19 + 2 * (int)p;
            out->saved[out->nsaved++] = 20 + 2 * (int)p;
        }
    }
    return true;
}

/* ---- x86_64 indirect stack sizes ------------------------------------------------------- */

err_code unwind_stack_sizes(unwind_stack_size **out, size_t *n, const unwind_entry *entries,
                            size_t nentries, const uint8_t *text, size_t text_len, arena *a,
                            err_info *err)
{
    *out = NULL;
    *n = 0;
    size_t count = 0;
    unwind_rule rule;
    for (size_t i = 0; i < nentries; i++)
        if (unwind_decode_x86_64(&rule, entries[i].encoding) &&
            rule.kind == UNWIND_KIND_FRAMELESS_INDIRECT)
            count++;
    if (count == 0 || text == NULL)
        return ERR_OK;
    unwind_stack_size *sizes = arena_alloc_array(a, count, sizeof *sizes, err);
    if (sizes == NULL)
        return ERR_TOO_LARGE;
    size_t k = 0;
    for (size_t i = 0; i < nentries; i++) {
        if (!unwind_decode_x86_64(&rule, entries[i].encoding) ||
            rule.kind != UNWIND_KIND_FRAMELESS_INDIRECT)
            continue;
        uint64_t at = (uint64_t)entries[i].func_start + rule.sub_offset;
        if (at > text_len || text_len - at < 4)
            continue; /* outside the bytes given: this function has no known size */
        const uint8_t *p = text + at;
        sizes[k].func_start = entries[i].func_start;
        sizes[k].imm = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                       (uint32_t)p[3] << 24;
        k++;
    }
    *out = k ? sizes : NULL;
    *n = k;
    return ERR_OK;
}

bool unwind_stack_size_find(uint32_t *imm, const unwind_stack_size *sizes, size_t n,
                            uint32_t func_start)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sizes[mid].func_start < func_start)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n || sizes[lo].func_start != func_start)
        return false;
    *imm = sizes[lo].imm;
    return true;
}
