/*
 * cfi - the STACK CFI table of a symcache section and the postfix rule evaluator
 * (breakpad.h). The rule language follows Breakpad's description of STACK CFI records
 * (docs/symbol_files.md): `REG: EXPR` pairs, `.cfa` and `.ra` the canonical frame address and
 * the return address, EXPR a postfix expression.
 */
#include "breakpad/breakpad.h"

#include <stdlib.h>
#include <string.h>

#define INIT_SIZE 24u
#define ROW_SIZE 12u
#define HEADER_SIZE 16u
#define MAX_INIT_SIZE UINT32_MAX

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* ---- encoding -------------------------------------------------------------------------- */

typedef struct {
    const breakpad_cfi_init *init;
    size_t order; /* file order, to keep the first of equal addresses */
} init_ref;

static int by_addr(const void *x, const void *y)
{
    const init_ref *a = x, *b = y;
    if (a->init->addr != b->init->addr)
        return a->init->addr < b->init->addr ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Rule texts stored once: an open-addressing table of offsets into `rules`. */
typedef struct {
    buf *rules;
    uint32_t *slots; /* offset + 1, 0 = empty */
    size_t cap;
} rule_set;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static uint32_t rule_offset(rule_set *rs, const char *text)
{
    size_t mask = rs->cap - 1;
    for (size_t i = hash_str(text) & mask;; i = (i + 1) & mask) {
        if (rs->slots[i] == 0) {
            uint32_t off = (uint32_t)rs->rules->len;
            buf_append(rs->rules, text, strlen(text) + 1);
            rs->slots[i] = off + 1;
            return off;
        }
        if (strcmp((const char *)rs->rules->data + rs->slots[i] - 1, text) == 0)
            return rs->slots[i] - 1;
    }
}

size_t breakpad_cfi_encode(buf *out, const breakpad_sym *sym)
{
    init_ref *refs = calloc(sym->ncfi ? sym->ncfi : 1, sizeof *refs);
    size_t n = 0, nrows = 0;
    for (size_t i = 0; i < sym->ncfi; i++) {
        const breakpad_cfi_init *c = &sym->cfi[i];
        if (c->size == 0 || c->addr + c->size < c->addr)
            continue;
        refs[n].init = c;
        refs[n].order = i;
        n++;
    }
    if (n > 1)
        qsort(refs, n, sizeof *refs, by_addr);
    /* overlapping INITs: the first in address order keeps its range */
    size_t k = 0;
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && refs[i].init->addr < end)
            continue;
        uint64_t size = refs[i].init->size > MAX_INIT_SIZE ? MAX_INIT_SIZE : refs[i].init->size;
        end = refs[i].init->addr + size;
        refs[k++] = refs[i];
        nrows += 1 + refs[i].init->ndeltas;
    }
    n = k;
    buf rules;
    buf_init(&rules);
    rule_set rs = {.rules = &rules, .cap = 64};
    while (rs.cap < 2 * nrows)
        rs.cap *= 2;
    rs.slots = calloc(rs.cap, sizeof *rs.slots);
    buf table;
    buf_init(&table);
    buf rows;
    buf_init(&rows);
    uint32_t row = 0;
    for (size_t i = 0; i < n; i++) {
        const breakpad_cfi_init *c = refs[i].init;
        uint64_t size = c->size > MAX_INIT_SIZE ? MAX_INIT_SIZE : c->size;
        /* rows: the INIT's own, then its deltas inside its range in address order (a delta
         * before an earlier one is left out: rows are applied up to the address) */
        uint32_t first = row, count = 0;
        buf_append_u64le(&rows, c->addr);
        buf_append_u32le(&rows, rule_offset(&rs, c->rules));
        count++;
        uint64_t last = c->addr;
        for (size_t d = 0; d < c->ndeltas; d++) {
            const breakpad_cfi_delta *dl = &sym->deltas[c->first_delta + d];
            if (dl->addr < last || dl->addr - c->addr >= size)
                continue;
            last = dl->addr;
            buf_append_u64le(&rows, dl->addr);
            buf_append_u32le(&rows, rule_offset(&rs, dl->rules));
            count++;
        }
        row += count;
        buf_append_u64le(&table, c->addr);
        buf_append_u32le(&table, (uint32_t)size);
        buf_append_u32le(&table, 0);
        buf_append_u32le(&table, first);
        buf_append_u32le(&table, count);
    }
    if (rules.len == 0)
        buf_putc(&rules, '\0'); /* the table's rules always end with a NUL */
    buf_append(out, "BPC1", 4);
    buf_append_u32le(out, (uint32_t)n);
    buf_append_u32le(out, row);
    buf_append_u32le(out, (uint32_t)rules.len);
    buf_append(out, table.data, table.len);
    buf_append(out, rows.data, rows.len);
    buf_append(out, rules.data, rules.len);
    buf_reset(&table);
    buf_reset(&rows);
    buf_reset(&rules);
    free(rs.slots);
    free(refs);
    return n;
}

/* ---- reading --------------------------------------------------------------------------- */

err_code breakpad_cfi_open(breakpad_cfi *out, const uint8_t *data, size_t len, err_info *err)
{
    memset(out, 0, sizeof *out);
    if (len < HEADER_SIZE || memcmp(data, "BPC1", 4) != 0)
        return err_set(err, ERR_INVALID, "breakpad CFI table: bad magic or %zu bytes", len);
    uint32_t ninit = rd32(data + 4), nrows = rd32(data + 8), rules_size = rd32(data + 12);
    uint64_t need = HEADER_SIZE + (uint64_t)ninit * INIT_SIZE + (uint64_t)nrows * ROW_SIZE + rules_size;
    if (need != len || rules_size == 0 || data[len - 1] != '\0')
        return err_set(err, ERR_INVALID, "breakpad CFI table: sizes do not add up to %zu bytes",
                       len);
    out->init = data + HEADER_SIZE;
    out->rows = out->init + (size_t)ninit * INIT_SIZE;
    out->rules = (const char *)out->rows + (size_t)nrows * ROW_SIZE;
    out->ninit = ninit;
    out->nrows = nrows;
    out->rules_size = rules_size;
    return ERR_OK;
}

size_t breakpad_cfi_find(const char **out, size_t cap, const breakpad_cfi *cfi, uint64_t rel_addr)
{
    /* the last INIT at or below rel_addr */
    size_t lo = 0, hi = cfi->ninit;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd64(cfi->init + mid * INIT_SIZE) <= rel_addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const uint8_t *e = cfi->init + (lo - 1) * INIT_SIZE;
    uint64_t addr = rd64(e);
    uint32_t size = rd32(e + 8), first = rd32(e + 16), count = rd32(e + 20);
    if (rel_addr - addr >= size || first > cfi->nrows || count > cfi->nrows - first)
        return 0;
    size_t n = 0;
    for (uint32_t i = 0; i < count && n < cap; i++) {
        const uint8_t *r = cfi->rows + (size_t)(first + i) * ROW_SIZE;
        uint32_t off = rd32(r + 8);
        if (i > 0 && rd64(r) > rel_addr)
            break;
        if (off >= cfi->rules_size)
            continue; /* corrupt: the rule is left out */
        out[n++] = cfi->rules + off;
    }
    return n;
}

/* ---- evaluation ------------------------------------------------------------------------ */

typedef struct {
    const char *s;
    size_t n;
} token;

#define VAR_CFA (-2)
#define VAR_RA (-3)
#define VAR_NONE (-1)

static bool tok_is(const token *t, const char *w)
{
    return t->n == strlen(w) && memcmp(t->s, w, t->n) == 0;
}

/* reg_number - the DWARF number of a register name (with or without `$`), or VAR_NONE. */
static int reg_number(const token *t, breakpad_arch arch)
{
    static const char *const x86[17] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                        "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
    if (tok_is(t, ".cfa"))
        return VAR_CFA;
    if (tok_is(t, ".ra"))
        return VAR_RA;
    const char *s = t->s;
    size_t n = t->n;
    if (n > 0 && s[0] == '$')
        s++, n--;
    if (n == 0 || n > 3)
        return VAR_NONE;
    if (arch == BREAKPAD_ARCH_X86_64) {
        for (int i = 0; i < 17; i++)
            if (strlen(x86[i]) == n && memcmp(x86[i], s, n) == 0)
                return i;
        return VAR_NONE;
    }
    if (n == 2 && memcmp(s, "sp", 2) == 0)
        return 31;
    if (n == 2 && memcmp(s, "pc", 2) == 0)
        return 32;
    if (n == 2 && memcmp(s, "fp", 2) == 0)
        return 29;
    if (n == 2 && memcmp(s, "lr", 2) == 0)
        return 30;
    if (s[0] != 'x' || n < 2)
        return VAR_NONE;
    int v = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return VAR_NONE;
        v = v * 10 + (s[i] - '0');
    }
    if (n == 3 && s[1] == '0')
        return VAR_NONE; /* "x01" */
    return v <= 30 ? v : VAR_NONE;
}

/* parse_number - decimal (optionally negative) or 0x hex; wraps to 64 bits as two's
 * complement. */
static bool parse_number(uint64_t *out, const token *t)
{
    const char *s = t->s;
    size_t n = t->n, i = 0;
    bool neg = false;
    if (n > 0 && s[0] == '-')
        neg = true, i = 1;
    if (i == n)
        return false;
    uint64_t v = 0;
    if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        if (n - i - 2 > 16)
            return false;
        for (i += 2; i < n; i++) {
            char c = s[i];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                return false;
            v = v << 4 | (uint64_t)d;
        }
    } else {
        if (n - i > 20)
            return false;
        for (; i < n; i++) {
            if (s[i] < '0' || s[i] > '9')
                return false;
            uint64_t d = (uint64_t)(s[i] - '0');
            if (v > (UINT64_MAX - d) / 10)
                return false;
            v = v * 10 + d;
        }
    }
    *out = neg ? (uint64_t)0 - v : v;
    return true;
}

typedef struct {
    breakpad_arch arch;
    const breakpad_regs *cur;
    bool has_cfa;
    uint64_t cfa;
    breakpad_read_fn read;
    void *ctx;
} eval_env;

/* eval - the value of the postfix expression tok[0..n). */
static bool eval(uint64_t *out, const token *tok, size_t n, const eval_env *env)
{
    uint64_t st[BREAKPAD_STACK_MAX];
    size_t sp = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        const token *t = &tok[i];
        if (t->n == 1 && strchr("+-*/%@", t->s[0]) != NULL) {
            if (sp < 2)
                return false;
            uint64_t b = st[--sp], a = st[--sp], r;
            switch (t->s[0]) {
            case '+': r = a + b; break;
            case '-': r = a - b; break;
            case '*': r = a * b; break;
            case '/':
                if (b == 0)
                    return false;
                r = a / b;
                break;
            case '%':
                if (b == 0)
                    return false;
                r = a % b;
                break;
            default: /* '@': align a down to a multiple of b (a power of two) */
                if (b == 0 || (b & (b - 1)) != 0)
                    return false;
                r = a & ~(b - 1);
                break;
            }
            st[sp++] = r;
            continue;
        }
        if (t->n == 1 && t->s[0] == '^') {
            if (sp < 1 || env->read == NULL || !env->read(&st[sp - 1], st[sp - 1], env->ctx))
                return false;
            continue;
        }
        uint64_t v;
        if (sp == BREAKPAD_STACK_MAX)
            return false;
        if (parse_number(&v, t)) {
            st[sp++] = v;
            continue;
        }
        int r = reg_number(t, env->arch);
        if (r == VAR_CFA) {
            if (!env->has_cfa)
                return false;
            st[sp++] = env->cfa;
        } else if (r >= 0 && r < BREAKPAD_REGS && ((env->cur->valid >> r) & 1)) {
            st[sp++] = env->cur->regs[r];
        } else {
            return false; /* unknown token, .ra, or a register the frame does not know */
        }
    }
    if (sp != 1)
        return false;
    *out = st[0];
    return true;
}

/* One `REG: EXPR` of the rules in force: the latest text that names REG wins. */
typedef struct {
    int reg;            /* DWARF number, VAR_CFA or VAR_RA */
    size_t first, n;    /* its expression's tokens */
} assignment;

bool breakpad_cfi_eval(breakpad_regs *out, uint64_t *cfa, uint64_t *ra, const char *const *rules,
                       size_t nrules, breakpad_arch arch, const breakpad_regs *cur, breakpad_read_fn read,
                       void *ctx)
{
    token tok[BREAKPAD_TOKENS_MAX];
    assignment as[BREAKPAD_REGS + 2];
    size_t ntok = 0, nas = 0;
    for (size_t r = 0; r < nrules; r++) {
        const char *s = rules[r];
        int target = VAR_NONE;
        size_t slot = SIZE_MAX;
        while (*s) {
            while (*s == ' ')
                s++;
            if (*s == '\0')
                break;
            const char *b = s;
            while (*s && *s != ' ')
                s++;
            size_t len = (size_t)(s - b);
            if (b[len - 1] == ':') {
                token name = {b, len - 1};
                target = reg_number(&name, arch);
                slot = SIZE_MAX;
                if (target == VAR_NONE)
                    continue; /* a register we do not track: its tokens are ignored */
                for (size_t i = 0; i < nas; i++)
                    if (as[i].reg == target)
                        slot = i;
                if (slot == SIZE_MAX) {
                    if (nas == sizeof as / sizeof as[0])
                        return false;
                    slot = nas++;
                    as[slot].reg = target;
                }
                as[slot].first = ntok;
                as[slot].n = 0;
                continue;
            }
            if (slot == SIZE_MAX)
                continue; /* tokens before any name, or of an untracked register */
            if (ntok == BREAKPAD_TOKENS_MAX)
                return false;
            if (as[slot].first + as[slot].n != ntok) {
                /* the register was named again in a later text: its expression restarts */
                as[slot].first = ntok;
                as[slot].n = 0;
            }
            tok[ntok].s = b;
            tok[ntok].n = len;
            ntok++;
            as[slot].n++;
        }
    }
    eval_env env = {.arch = arch, .cur = cur, .read = read, .ctx = ctx};
    const assignment *acfa = NULL, *ara = NULL;
    for (size_t i = 0; i < nas; i++) {
        if (as[i].reg == VAR_CFA)
            acfa = &as[i];
        else if (as[i].reg == VAR_RA)
            ara = &as[i];
    }
    if (acfa == NULL || ara == NULL || !eval(&env.cfa, tok + acfa->first, acfa->n, &env))
        return false;
    env.has_cfa = true;
    uint64_t ret;
    if (!eval(&ret, tok + ara->first, ara->n, &env))
        return false;
    for (size_t i = 0; i < nas; i++) {
        int r = as[i].reg;
        if (r < 0)
            continue;
        uint64_t v;
        if (eval(&v, tok + as[i].first, as[i].n, &env)) {
            out->regs[r] = v;
            out->valid |= 1ull << r;
        } else {
            out->valid &= ~(1ull << r);
        }
    }
    unsigned spn = arch == BREAKPAD_ARCH_X86_64 ? 7 : 31, pcn = arch == BREAKPAD_ARCH_X86_64 ? 16 : 32;
    out->regs[spn] = env.cfa;
    out->regs[pcn] = ret;
    out->valid |= 1ull << spn | 1ull << pcn;
    *cfa = env.cfa;
    *ra = ret;
    return true;
}
