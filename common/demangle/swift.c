/*
 * swift - Swift symbol demangler: mangled name -> node tree (printed by swift_print.c).
 *
 * Follows the grammar of the Swift repository's docs/ABI/Mangling.rst for the Swift 4.0 (_T0),
 * 4.2 ($S) and 5+ ($s, $e) manglings: a postfix language where each operator pops its operands
 * off a node stack and pushes its result, with substitutions ('A'/'S') and word substitutions
 * inside identifiers. Everything lives in one per-call arena; the node count, the stack, the
 * substitution table and the recursion depth are bounded, so hostile input fails cleanly.
 */
#include "demangle/swift_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 16384      /* nodes per name */
#define MAX_DEPTH 256        /* recursion of the parser's nested productions */
#define MAX_REPEAT 2048      /* substitution repeat count, as Swift's SubstitutionMerging */
#define MAX_WORDS 26

typedef struct arena_block arena_block;
struct arena_block {
    arena_block *next;
    size_t used, cap;
    char data[];
};

typedef struct {
    const char *text;
    size_t len, pos;
    arena_block *mem;
    swift_node **stack;
    size_t nstack, capstack;
    swift_node **subst;
    size_t nsubst, capsubst;
    const char *words[MAX_WORDS];
    uint32_t word_len[MAX_WORDS];
    int nwords;
    unsigned nnodes;
    int depth;
    bool failed;
    bool old_fn_labels;   /* _T0: argument labels live in the parameter tuple */
    bool swift3;          /* Swift 3's "_T" mangling (simplified: printed in that era's style) */
} dm;

/* ---- memory ------------------------------------------------------------------------- */

static void *dm_alloc(dm *d, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    arena_block *b = d->mem;
    if (b == NULL || b->cap - b->used < n) {
        size_t cap = n > 32768 ? n : 32768;
        arena_block *nb = malloc(sizeof *nb + cap);
        if (nb == NULL) {
            d->failed = true;
            return NULL;
        }
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        d->mem = b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

static void dm_free(dm *d)
{
    arena_block *b = d->mem;
    while (b != NULL) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    d->mem = NULL;
}

static swift_node *mk(dm *d, swift_kind k)
{
    if (d->failed || ++d->nnodes > MAX_NODES) {
        d->failed = true;
        return NULL;
    }
    swift_node *n = dm_alloc(d, sizeof *n);
    if (n == NULL)
        return NULL;
    memset(n, 0, sizeof *n);
    n->kind = (uint16_t)k;
    return n;
}

static swift_node *mk_text(dm *d, swift_kind k, const char *s, size_t len)
{
    swift_node *n = mk(d, k);
    if (n == NULL)
        return NULL;
    char *t = dm_alloc(d, len + 1);
    if (t == NULL)
        return NULL;
    memcpy(t, s, len);
    t[len] = '\0';
    n->text = t;
    n->text_len = (uint32_t)len;
    n->has_text = true;
    return n;
}

static swift_node *mk_str(dm *d, swift_kind k, const char *s)
{
    return mk_text(d, k, s, strlen(s));
}

static swift_node *mk_index(dm *d, swift_kind k, uint64_t index)
{
    swift_node *n = mk(d, k);
    if (n != NULL) {
        n->index = index;
        n->has_index = true;
    }
    return n;
}

/* add - append `c` to `n`; a NULL child makes the whole result NULL (the Swift demangler's
 * "createWithChildren" convention), so malformed operands propagate as failure. */
static swift_node *add(dm *d, swift_node *n, swift_node *c)
{
    if (n == NULL || c == NULL)
        return NULL;
    if (n->nchildren == n->cap) {
        uint32_t cap = n->cap ? n->cap * 2 : 4;
        swift_node **ch = dm_alloc(d, cap * sizeof *ch);
        if (ch == NULL)
            return NULL;
        if (n->nchildren)
            memcpy(ch, n->child, n->nchildren * sizeof *ch);
        n->child = ch;
        n->cap = cap;
    }
    n->child[n->nchildren++] = c;
    return n;
}

/* add_opt - append `c` when it is there; `n` stays as it is otherwise. */
static swift_node *add_opt(dm *d, swift_node *n, swift_node *c)
{
    if (n != NULL && c != NULL)
        add(d, n, c);
    return n;
}

static swift_node *with1(dm *d, swift_kind k, swift_node *a)
{
    if (a == NULL)
        return NULL;
    return add(d, mk(d, k), a);
}

static swift_node *with2(dm *d, swift_kind k, swift_node *a, swift_node *b)
{
    if (a == NULL || b == NULL)
        return NULL;
    return add(d, add(d, mk(d, k), a), b);
}

static swift_node *with3(dm *d, swift_kind k, swift_node *a, swift_node *b, swift_node *c)
{
    if (a == NULL || b == NULL || c == NULL)
        return NULL;
    return add(d, add(d, add(d, mk(d, k), a), b), c);
}

static swift_node *type_of(dm *d, swift_node *n)
{
    return with1(d, K_Type, n);
}

static void reverse_children(swift_node *n, size_t from)
{
    if (n == NULL || n->nchildren < 2)
        return;
    for (size_t i = from, j = n->nchildren - 1; i < j; i++, j--) {
        swift_node *t = n->child[i];
        n->child[i] = n->child[j];
        n->child[j] = t;
    }
}

static swift_node *change_kind(dm *d, swift_node *n, swift_kind k)
{
    if (n == NULL)
        return NULL;
    swift_node *c = mk(d, k);
    if (c == NULL)
        return NULL;
    swift_kind keep = (swift_kind)c->kind;
    *c = *n;
    c->kind = (uint16_t)keep;
    /* children are shared; copy the array so that later adds do not alias */
    if (n->nchildren) {
        c->child = dm_alloc(d, n->nchildren * sizeof *c->child);
        if (c->child == NULL)
            return NULL;
        memcpy(c->child, n->child, n->nchildren * sizeof *c->child);
        c->cap = n->nchildren;
    }
    return c;
}

/* ---- stack and substitutions -------------------------------------------------------- */

static bool grow(dm *d, swift_node ***arr, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    if (need > MAX_NODES) {
        d->failed = true;
        return false;
    }
    size_t ncap = *cap ? *cap * 2 : 32;
    while (ncap < need)
        ncap *= 2;
    swift_node **n = dm_alloc(d, ncap * sizeof *n);
    if (n == NULL)
        return false;
    if (*cap)
        memcpy(n, *arr, *cap * sizeof *n);
    *arr = n;
    *cap = ncap;
    return true;
}

static void push(dm *d, swift_node *n)
{
    if (n == NULL || !grow(d, &d->stack, &d->capstack, d->nstack + 1))
        return;
    d->stack[d->nstack++] = n;
}

static swift_node *pop(dm *d)
{
    return d->nstack ? d->stack[--d->nstack] : NULL;
}

static swift_node *pop_kind(dm *d, swift_kind k)
{
    if (d->nstack && d->stack[d->nstack - 1]->kind == k)
        return d->stack[--d->nstack];
    return NULL;
}

static swift_node *pop_if(dm *d, bool (*pred)(swift_kind))
{
    if (d->nstack && pred((swift_kind)d->stack[d->nstack - 1]->kind))
        return d->stack[--d->nstack];
    return NULL;
}

static void add_subst(dm *d, swift_node *n)
{
    if (n == NULL || !grow(d, &d->subst, &d->capsubst, d->nsubst + 1))
        return;
    d->subst[d->nsubst++] = n;
}

/* ---- kind classes ------------------------------------------------------------------- */

static bool is_decl_name(swift_kind k)
{
    switch (k) {
    case K_Identifier: case K_LocalDeclName: case K_PrivateDeclName: case K_RelatedEntityDeclName:
    case K_PrefixOperator: case K_PostfixOperator: case K_InfixOperator:
    case K_TypeSymbolicReference: case K_ProtocolSymbolicReference:
        return true;
    default:
        return false;
    }
}

static bool is_any_generic(swift_kind k)
{
    switch (k) {
    case K_Structure: case K_Class: case K_Enum: case K_Protocol: case K_ProtocolSymbolicReference:
    case K_OtherNominalType: case K_TypeAlias: case K_TypeSymbolicReference:
        return true;
    default:
        return false;
    }
}

static bool is_entity(swift_kind k)
{
    /* Swift's isEntity: a type or any context node */
    switch (k) {
    case K_Type: case K_Allocator: case K_AnonymousContext: case K_Class: case K_Constructor:
    case K_Deallocator: case K_DefaultArgumentInitializer: case K_Destructor: case K_DidSet:
    case K_Enum: case K_ExplicitClosure: case K_Extension: case K_Function: case K_Getter:
    case K_GlobalGetter: case K_IVarInitializer: case K_IVarDestroyer: case K_ImplicitClosure:
    case K_Initializer: case K_MaterializeForSet: case K_ModifyAccessor: case K_Module:
    case K_NativeOwningAddressor: case K_NativeOwningMutableAddressor:
    case K_NativePinningAddressor: case K_NativePinningMutableAddressor: case K_OtherNominalType:
    case K_OwningAddressor: case K_OwningMutableAddressor: case K_Protocol:
    case K_PropertyWrapperBackingInitializer: case K_PropertyWrapperInitFromProjectedValue:
    case K_ReadAccessor: case K_Setter: case K_Static: case K_Structure: case K_Subscript:
    case K_TypeAlias: case K_UnsafeAddressor: case K_UnsafeMutableAddressor: case K_Variable:
    case K_WillSet: case K_InitAccessor: case K_Macro: case K_FreestandingMacroExpansion:
    case K_BoundGenericFunction: case K_GenericTypeParamDecl:
    case K_TypeSymbolicReference: case K_ProtocolSymbolicReference:
    case K_PeerAttachedMacroExpansion: case K_MemberAttachedMacroExpansion:
    case K_AccessorAttachedMacroExpansion: case K_MemberAttributeAttachedMacroExpansion:
    case K_ConformanceAttachedMacroExpansion: case K_ExtensionAttachedMacroExpansion:
    case K_BodyAttachedMacroExpansion: case K_PreambleAttachedMacroExpansion:
    case K_MacroExpansionUniqueName: case K_AutoDiffFunction: case K_AutoDiffDerivativeVTableThunk:
        return true;
    default:
        return false;
    }
}

static bool is_context(swift_kind k)
{
    return k != K_Type && is_entity(k);
}

static bool is_requirement(swift_kind k)
{
    return k == K_DependentGenericSameTypeRequirement || k == K_DependentGenericLayoutRequirement ||
           k == K_DependentGenericConformanceRequirement;
}

static bool is_function_attr(swift_kind k)
{
    switch (k) {
    case K_FunctionSignatureSpecialization: case K_GenericSpecialization:
    case K_GenericSpecializationPrespecialized: case K_InlinedGenericFunction:
    case K_GenericSpecializationNotReAbstracted: case K_GenericPartialSpecialization:
    case K_GenericPartialSpecializationNotReAbstracted: case K_GenericSpecializationInResilienceDomain:
    case K_ObjCAttribute: case K_NonObjCAttribute: case K_DynamicAttribute:
    case K_PartialApplyForwarder: case K_PartialApplyObjCForwarder: case K_OutlinedVariable:
    case K_OutlinedReadOnlyObject: case K_OutlinedBridgedMethod: case K_MergedFunction:
    case K_DistributedThunk: case K_DistributedAccessor: case K_DynamicallyReplaceableFunctionImpl:
    case K_DynamicallyReplaceableFunctionKey: case K_DynamicallyReplaceableFunctionVar:
    case K_AsyncFunctionPointer: case K_AsyncAwaitResumePartialFunction:
    case K_AsyncSuspendResumePartialFunction: case K_AccessibleFunctionRecord:
    case K_BackDeploymentThunk: case K_BackDeploymentFallback: case K_HasSymbolQuery:
        return true;
    default:
        return false;
    }
}

/* ---- lexing -------------------------------------------------------------------------- */

static char peek(dm *d)
{
    return d->pos < d->len ? d->text[d->pos] : '\0';
}

static char next(dm *d)
{
    return d->pos < d->len ? d->text[d->pos++] : '\0';
}

static bool next_if(dm *d, char c)
{
    if (peek(d) != c || d->pos >= d->len)
        return false;
    d->pos++;
    return true;
}

static void push_back(dm *d)
{
    if (d->pos > 0)
        d->pos--;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

/* natural - a decimal number; -1000 when there is none or it overflows */
static int64_t natural(dm *d)
{
    if (!is_digit(peek(d)))
        return -1000;
    int64_t n = 0;
    while (is_digit(peek(d))) {
        n = n * 10 + (next(d) - '0');
        if (n > 0x7fffffff)
            return -1000;
    }
    return n;
}

/* index ::= '_' (0) | natural '_' (natural + 1) */
static int64_t demangle_index(dm *d)
{
    if (next_if(d, '_'))
        return 0;
    if (is_digit(peek(d))) {
        int64_t n = natural(d);
        if (n >= 0 && next_if(d, '_'))
            return n + 1;
    }
    return -1000;
}

static swift_node *index_node(dm *d)
{
    int64_t i = demangle_index(d);
    if (i < 0)
        return NULL;
    return mk_index(d, K_Number, (uint64_t)i);
}

/* ---- punycode (Swift's variant: digits a-z then A-J, delimiter '_') --------------------- */

static int puny_digit(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'J')
        return c - 'A' + 26;
    return -1;
}

static int puny_adapt(int delta, int numpoints, bool first)
{
    delta = first ? delta / 700 : delta / 2;
    delta += delta / numpoints;
    int k = 0;
    while (delta > ((36 - 1) * 26) / 2) {
        delta /= 36 - 1;
        k += 36;
    }
    return k + (36 * delta) / (delta + 38);
}

static size_t utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* puny_decode - RFC 3492 with Swift's digit alphabet; the basic code points come before the
 * last '_'. Writes UTF-8 to a new arena string; NULL when malformed. */
static char *puny_decode(dm *d, const char *in, size_t len, size_t *out_len)
{
    uint32_t cps[256];
    size_t n = 0;
    size_t delim = len;
    for (size_t i = len; i-- > 0;)
        if (in[i] == '_') {
            delim = i;
            break;
        }
    size_t pos = 0;
    if (delim < len) {
        for (size_t i = 0; i < delim; i++) {
            if ((unsigned char)in[i] >= 0x80 || n >= 256)
                return NULL;
            cps[n++] = (unsigned char)in[i];
        }
        pos = delim + 1;
    }
    uint32_t code = 0x80;
    int bias = 72;
    uint32_t i = 0;
    while (pos < len) {
        uint32_t oldi = i, w = 1;
        for (int k = 36;; k += 36) {
            if (pos >= len)
                return NULL;
            int digit = puny_digit(in[pos++]);
            if (digit < 0)
                return NULL;
            if ((uint64_t)digit * w > 0x7fffffffu - i)
                return NULL;
            i += (uint32_t)digit * w;
            int t = k <= bias ? 1 : (k >= bias + 26 ? 26 : k - bias);
            if (digit < t)
                break;
            if ((uint64_t)w * (36 - t) > 0x7fffffffu)
                return NULL;
            w *= (uint32_t)(36 - t);
        }
        bias = puny_adapt((int)(i - oldi), (int)n + 1, oldi == 0);
        if (i / (n + 1) > 0x10FFFF - code)
            return NULL;
        code += i / (uint32_t)(n + 1);
        i %= (uint32_t)(n + 1);
        if (code > 0x10FFFF || n >= 256)
            return NULL;
        memmove(cps + i + 1, cps + i, (n - i) * sizeof *cps);
        cps[i] = code;
        n++;
        i++;
    }
    char *out = dm_alloc(d, n * 4 + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t k = 0; k < n; k++)
        o += utf8_put(out + o, cps[k]);
    out[o] = '\0';
    *out_len = o;
    return out;
}

/* ---- identifiers ------------------------------------------------------------------------ */

static bool word_start(char c)
{
    return c != '\0' && !is_digit(c) && c != '_';
}

static bool word_end(char c, char prev)
{
    return c == '_' || c == '\0' || (!is_upper(prev) && is_upper(c));
}

static swift_node *demangle_identifier(dm *d)
{
    bool words = false, puny = false;
    char c = peek(d);
    if (!is_digit(c))
        return NULL;
    if (c == '0') {
        next(d);
        if (peek(d) == '0') {
            next(d);
            puny = true;
        } else {
            words = true;
        }
    }
    char buf[1024];
    size_t blen = 0;
    do {
        while (words && (is_lower(peek(d)) || is_upper(peek(d)))) {
            char w = next(d);
            int idx;
            if (is_lower(w)) {
                idx = w - 'a';
            } else {
                idx = w - 'A';
                words = false;
            }
            if (idx >= d->nwords || blen + d->word_len[idx] > sizeof buf)
                return NULL;
            memcpy(buf + blen, d->words[idx], d->word_len[idx]);
            blen += d->word_len[idx];
        }
        if (next_if(d, '0'))
            break;
        int64_t n = natural(d);
        if (n <= 0)
            return NULL;
        if (puny)
            next_if(d, '_');
        if ((size_t)n > d->len - d->pos)
            return NULL;
        const char *slice = d->text + d->pos;
        if (puny) {
            size_t plen = 0;
            char *p = puny_decode(d, slice, (size_t)n, &plen);
            if (p == NULL || blen + plen > sizeof buf)
                return NULL;
            memcpy(buf + blen, p, plen);
            blen += plen;
        } else {
            if (blen + (size_t)n > sizeof buf)
                return NULL;
            memcpy(buf + blen, slice, (size_t)n);
            blen += (size_t)n;
            int start = -1;
            for (int i = 0; i <= (int)n; i++) {
                char ch = i < n ? slice[i] : '\0';
                if (start >= 0 && word_end(ch, slice[i - 1])) {
                    if (i - start >= 2 && d->nwords < MAX_WORDS) {
                        d->words[d->nwords] = slice + start;
                        d->word_len[d->nwords] = (uint32_t)(i - start);
                        d->nwords++;
                    }
                    start = -1;
                }
                if (start < 0 && word_start(ch))
                    start = i;
            }
        }
        d->pos += (size_t)n;
    } while (words);
    if (blen == 0)
        return NULL;
    swift_node *id = mk_text(d, K_Identifier, buf, blen);
    add_subst(d, id);
    return id;
}

/* ---- helpers that pop composite operands ---------------------------------------------- */

static swift_node *pop_module(dm *d)
{
    swift_node *id = pop_kind(d, K_Identifier);
    if (id != NULL)
        return change_kind(d, id, K_Module);
    return pop_kind(d, K_Module);
}

static swift_node *pop_context(dm *d)
{
    swift_node *m = pop_module(d);
    if (m != NULL)
        return m;
    swift_node *ty = pop_kind(d, K_Type);
    if (ty != NULL) {
        if (ty->nchildren != 1 || !is_context((swift_kind)ty->child[0]->kind))
            return NULL;
        return ty->child[0];
    }
    return pop_if(d, is_context);
}

static swift_node *pop_type_and_get_child(dm *d)
{
    swift_node *ty = pop_kind(d, K_Type);
    if (ty == NULL || ty->nchildren != 1)
        return NULL;
    return ty->child[0];
}

static swift_node *pop_type_and_get_any_generic(dm *d)
{
    swift_node *c = pop_type_and_get_child(d);
    if (c != NULL && is_any_generic((swift_kind)c->kind))
        return c;
    return NULL;
}

static bool is_protocol_type(const swift_node *ty)
{
    /* Type -> Protocol (or a protocol symbolic reference) */
    while (ty != NULL && ty->kind == K_Type && ty->nchildren == 1)
        ty = ty->child[0];
    return ty != NULL && (ty->kind == K_Protocol || ty->kind == K_ProtocolSymbolicReference);
}

static swift_node *pop_protocol(dm *d)
{
    swift_node *ty = pop_kind(d, K_Type);
    if (ty != NULL) {
        if (ty->nchildren < 1 || !is_protocol_type(ty))
            return NULL;
        return ty;
    }
    swift_node *name = pop_if(d, is_decl_name);
    swift_node *ctx = pop_context(d);
    return type_of(d, with2(d, K_Protocol, ctx, name));
}

static swift_node *dependent_param(dm *d, uint64_t depth, uint64_t index)
{
    char name[32];
    size_t n = 0;
    uint64_t i = index;
    do {
        name[n++] = (char)('A' + i % 26);
        i /= 26;
    } while (i && n < 16);
    if (depth != 0)
        n += (size_t)snprintf(name + n, sizeof name - n, "%llu", (unsigned long long)depth);
    swift_node *p = mk_text(d, K_DependentGenericParamType, name, n);
    add(d, p, mk_index(d, K_Index, depth));
    add(d, p, mk_index(d, K_Index, index));
    return p;
}

static swift_node *generic_param_index(dm *d)
{
    if (next_if(d, 'd')) {
        int64_t depth = demangle_index(d) + 1;
        int64_t index = demangle_index(d);
        if (depth < 1 || index < 0)
            return NULL;
        return dependent_param(d, (uint64_t)depth, (uint64_t)index);
    }
    if (next_if(d, 'z'))
        return dependent_param(d, 0, 0);
    if (next_if(d, 's'))
        return mk(d, K_ConstrainedExistentialSelf);
    int64_t index = demangle_index(d);
    if (index < 0)
        return NULL;
    return dependent_param(d, 0, (uint64_t)index + 1);
}

static swift_node *pop_assoc_type_name(dm *d)
{
    swift_node *proto = pop_kind(d, K_Type);
    if (proto != NULL && !is_protocol_type(proto))
        return NULL;
    swift_node *id = pop_kind(d, K_Identifier);
    swift_node *at = change_kind(d, id, K_DependentAssociatedTypeRef);
    if (at != NULL && proto != NULL)
        add(d, at, proto);
    return at;
}

/* assoc-type-list ::= assoc-type-name '_' assoc-type-name* (popped last name first) */
static swift_node *pop_assoc_type_path(dm *d)
{
    swift_node *path = mk(d, K_AssocTypePath);
    bool first;
    do {
        first = pop_kind(d, K_FirstElementMarker) != NULL;
        path = add(d, path, pop_assoc_type_name(d));
    } while (path != NULL && !first);
    reverse_children(path, 0);
    return path;
}

static swift_node *assoc_simple(dm *d, swift_node *param)
{
    swift_node *name = pop_assoc_type_name(d);
    swift_node *base = param ? type_of(d, param) : pop_kind(d, K_Type);
    return type_of(d, with2(d, K_DependentMemberType, base, name));
}

static swift_node *assoc_compound(dm *d, swift_node *param)
{
    swift_node *names[64];
    size_t n = 0;
    bool first;
    do {
        first = pop_kind(d, K_FirstElementMarker) != NULL;
        swift_node *nm = pop_assoc_type_name(d);
        if (nm == NULL || n == 64)
            return NULL;
        names[n++] = nm;
    } while (!first);
    swift_node *base = param ? type_of(d, param) : pop_kind(d, K_Type);
    while (n > 0)
        base = type_of(d, with2(d, K_DependentMemberType, base, names[--n]));
    return base;
}

static swift_node *pop_type_list(dm *d)
{
    swift_node *root = mk(d, K_TypeList);
    if (pop_kind(d, K_EmptyList) == NULL) {
        bool first;
        do {
            first = pop_kind(d, K_FirstElementMarker) != NULL;
            swift_node *ty = pop_kind(d, K_Type);
            if (ty == NULL)
                return NULL;
            add(d, root, ty);
        } while (!first);
        reverse_children(root, 0);
    }
    return root;
}

static swift_node *pop_protocol_conformance(dm *d)
{
    swift_node *sig = pop_kind(d, K_DependentGenericSignature);
    swift_node *module = pop_module(d);
    swift_node *proto = pop_protocol(d);
    swift_node *ty = pop_kind(d, K_Type);
    swift_node *ident = NULL;
    if (ty == NULL) {
        ident = pop_kind(d, K_Identifier);
        ty = pop_kind(d, K_Type);
    }
    if (sig != NULL)
        ty = type_of(d, with2(d, K_DependentGenericType, sig, ty));
    swift_node *conf = with3(d, K_ProtocolConformance, ty, proto, module);
    return add_opt(d, conf, ident);
}

/* pop_retroactive_conformances - the 'g' conformances that follow a bound generic's args */
static swift_node *pop_retroactive_conformances(dm *d)
{
    swift_node *list = NULL;
    swift_node *c;
    while ((c = pop_kind(d, K_RetroactiveConformance)) != NULL) {
        if (list == NULL)
            list = mk(d, K_TypeList);
        add(d, list, c);
    }
    if (list != NULL)
        reverse_children(list, 0);
    return list;
}

static bool demangle_bound_generics(dm *d, swift_node **lists, size_t *nlists, size_t cap,
                                    swift_node **retro)
{
    *retro = pop_retroactive_conformances(d);
    *nlists = 0;
    for (;;) {
        if (*nlists == cap)
            return false;
        swift_node *tl = mk(d, K_TypeList);
        if (tl == NULL)
            return false;
        lists[(*nlists)++] = tl;
        swift_node *ty;
        while ((ty = pop_kind(d, K_Type)) != NULL)
            add(d, tl, ty);
        reverse_children(tl, 0);
        if (pop_kind(d, K_EmptyList) != NULL)
            break;
        if (pop_kind(d, K_FirstElementMarker) == NULL)
            return false;
    }
    return true;
}

static swift_node *bound_generic_args(dm *d, swift_node *nominal, swift_node **lists, size_t nlists,
                                      size_t idx)
{
    /* a context without children (a module) has no generic arguments to take: more type
     * lists than generic levels is malformed */
    if (nominal == NULL || idx >= nlists || nominal->nchildren == 0 || ++d->depth > MAX_DEPTH)
        return NULL;
    swift_node *ctx = nominal->child[0];
    bool consumes;
    switch (nominal->kind) {
    case K_Variable: case K_Subscript: case K_ImplicitClosure: case K_ExplicitClosure:
    case K_DefaultArgumentInitializer: case K_Initializer: case K_PropertyWrapperBackingInitializer:
    case K_PropertyWrapperInitFromProjectedValue: case K_Static:
        consumes = false;   /* these take the generic arguments of their context */
        break;
    default:
        consumes = true;
        break;
    }
    swift_node *args = lists[idx];
    if (consumes)
        idx++;
    if (idx < nlists) {
        swift_node *parent;
        if (ctx->kind == K_Extension) {
            if (ctx->nchildren < 2)
                return NULL;
            parent = bound_generic_args(d, ctx->child[1], lists, nlists, idx);
            parent = with2(d, K_Extension, ctx->child[0], parent);
            if (ctx->nchildren == 3)
                add(d, parent, ctx->child[2]);
        } else {
            parent = bound_generic_args(d, ctx, lists, nlists, idx);
        }
        swift_node *nn = with1(d, (swift_kind)nominal->kind, parent);
        if (nn == NULL)
            return NULL;
        for (uint32_t i = 1; i < nominal->nchildren; i++)
            add(d, nn, nominal->child[i]);
        nominal = nn;
    }
    d->depth--;
    if (!consumes || args->nchildren == 0)
        return nominal;
    swift_kind k;
    switch (nominal->kind) {
    case K_Class: k = K_BoundGenericClass; break;
    case K_Structure: k = K_BoundGenericStructure; break;
    case K_Enum: k = K_BoundGenericEnum; break;
    case K_Protocol: k = K_BoundGenericProtocol; break;
    case K_OtherNominalType: k = K_BoundGenericOtherNominalType; break;
    case K_TypeAlias: k = K_BoundGenericTypeAlias; break;
    case K_Function: case K_Constructor:
        return with2(d, K_BoundGenericFunction, nominal, args);
    default:
        return NULL;
    }
    return with2(d, k, type_of(d, nominal), args);
}

static swift_node *demangle_bound_generic_type(dm *d)
{
    swift_node *lists[16];
    size_t n;
    swift_node *retro;
    if (!demangle_bound_generics(d, lists, &n, 16, &retro))
        return NULL;
    swift_node *nominal = pop_type_and_get_any_generic(d);
    swift_node *b = bound_generic_args(d, nominal, lists, n, 0);
    if (b == NULL)
        return NULL;
    add_opt(d, b, retro);
    swift_node *t = type_of(d, b);
    add_subst(d, t);
    return t;
}

static swift_node *swift_type(dm *d, swift_kind k, const char *name)
{
    return type_of(d, with2(d, k, mk_str(d, K_Module, "Swift"), mk_str(d, K_Identifier, name)));
}

/* ---- function types ------------------------------------------------------------------- */

static swift_node *pop_function_params(dm *d, swift_kind k)
{
    swift_node *params;
    if (pop_kind(d, K_EmptyList) != NULL)
        params = type_of(d, mk(d, K_Tuple));
    else
        params = pop_kind(d, K_Type);
    if (params == NULL)
        return NULL;
    swift_node *n = with1(d, k, params);
    if (n != NULL && k == K_ArgumentTuple) {
        const swift_node *p = params->child[0];
        n->index = p->kind == K_Tuple ? p->nchildren : 1;
        n->has_index = true;
    }
    return n;
}

static swift_node *pop_function_type(dm *d, swift_kind k)
{
    swift_node *f = mk(d, k);
    add_opt(d, f, pop_kind(d, K_SelfLifetimeDependence));
    add_opt(d, f, pop_kind(d, K_SendingResultFunctionType));
    add_opt(d, f, pop_kind(d, K_IsolatedAnyFunctionType));
    add_opt(d, f, pop_kind(d, K_GlobalActorFunctionType));
    add_opt(d, f, pop_kind(d, K_DifferentiableFunctionType));
    swift_node *thr = pop_kind(d, K_ThrowsAnnotation);
    if (thr == NULL)
        thr = pop_kind(d, K_TypedThrowsAnnotation);
    add_opt(d, f, thr);
    add_opt(d, f, pop_kind(d, K_ConcurrentFunctionType));
    add_opt(d, f, pop_kind(d, K_AsyncAnnotation));
    f = add(d, f, pop_function_params(d, K_ArgumentTuple));
    f = add(d, f, pop_function_params(d, K_ReturnType));
    return type_of(d, f);
}

static uint32_t fn_first_param_child(const swift_node *fn)
{
    uint32_t i = 0;
    while (i < fn->nchildren) {
        switch (fn->child[i]->kind) {
        case K_GlobalActorFunctionType: case K_IsolatedAnyFunctionType:
        case K_SendingResultFunctionType: case K_DifferentiableFunctionType:
        case K_ThrowsAnnotation: case K_TypedThrowsAnnotation: case K_ConcurrentFunctionType:
        case K_AsyncAnnotation: case K_SelfLifetimeDependence:
            i++;
            continue;
        default:
            return i;
        }
    }
    return i;
}

static swift_node *pop_function_param_labels(dm *d, swift_node *type)
{
    if (!d->old_fn_labels && pop_kind(d, K_EmptyList) != NULL)
        return mk(d, K_LabelList);
    if (type == NULL || type->kind != K_Type || type->nchildren < 1)
        return NULL;
    swift_node *fn = type->child[0];
    if (fn->kind == K_DependentGenericType) {
        if (fn->nchildren < 2 || fn->child[1]->nchildren < 1)
            return NULL;
        fn = fn->child[1]->child[0];
    }
    if (fn->kind != K_FunctionType && fn->kind != K_NoEscapeFunctionType)
        return NULL;
    uint32_t first = fn_first_param_child(fn);
    if (first >= fn->nchildren)
        return NULL;
    swift_node *argtuple = fn->child[first];
    if (argtuple->kind != K_ArgumentTuple || argtuple->nchildren < 1)
        return NULL;
    swift_node *ptype = argtuple->child[0];
    if (ptype->nchildren < 1)
        return NULL;
    swift_node *params = ptype->child[0];
    uint32_t nparams = params->kind == K_Tuple ? params->nchildren : 1;
    if (nparams == 0)
        return NULL;
    swift_node *list = mk(d, K_LabelList);
    if (d->old_fn_labels && params->kind != K_Tuple)
        return list;
    bool has_labels = false;
    for (uint32_t i = 0; i < nparams; i++) {
        swift_node *label;
        if (d->old_fn_labels) {
            swift_node *param = params->child[i];
            label = NULL;
            for (uint32_t j = 0; j < param->nchildren; j++) {
                if (param->child[j]->kind == K_TupleElementName) {
                    label = mk_text(d, K_Identifier, param->child[j]->text, param->child[j]->text_len);
                    memmove(param->child + j, param->child + j + 1,
                            (param->nchildren - j - 1) * sizeof *param->child);
                    param->nchildren--;
                    break;
                }
            }
            if (label == NULL)
                label = mk(d, K_FirstElementMarker);
        } else {
            label = pop(d);
        }
        if (label == NULL || (label->kind != K_Identifier && label->kind != K_FirstElementMarker))
            return NULL;
        add(d, list, label);
        has_labels |= label->kind != K_FirstElementMarker;
    }
    if (!has_labels)
        return mk(d, K_LabelList);
    if (!d->old_fn_labels)
        reverse_children(list, 0);
    return list;
}

static swift_node *pop_tuple(dm *d)
{
    swift_node *root = mk(d, K_Tuple);
    if (pop_kind(d, K_EmptyList) == NULL) {
        bool first;
        do {
            first = pop_kind(d, K_FirstElementMarker) != NULL;
            swift_node *el = mk(d, K_TupleElement);
            add_opt(d, el, pop_kind(d, K_VariadicMarker));
            swift_node *id = pop_kind(d, K_Identifier);
            if (id != NULL)
                add(d, el, mk_text(d, K_TupleElementName, id->text, id->text_len));
            swift_node *ty = pop_kind(d, K_Type);
            if (ty == NULL)
                return NULL;
            add(d, el, ty);
            add(d, root, el);
        } while (!first);
        reverse_children(root, 0);
    }
    return type_of(d, root);
}

/* ---- entities -------------------------------------------------------------------------- */

static swift_node *demangle_entity(dm *d, swift_kind k)
{
    swift_node *type = pop_kind(d, K_Type);
    swift_node *labels = pop_function_param_labels(d, type);
    swift_node *name = pop_if(d, is_decl_name);
    swift_node *ctx = pop_context(d);
    if (labels != NULL)
        return add(d, with3(d, k, ctx, name, labels), type);
    return with3(d, k, ctx, name, type);
}

static swift_node *demangle_accessor(dm *d, swift_node *child)
{
    swift_kind k;
    switch (next(d)) {
    case 'm': k = K_MaterializeForSet; break;
    case 's': k = K_Setter; break;
    case 'g': k = K_Getter; break;
    case 'G': k = K_GlobalGetter; break;
    case 'w': k = K_WillSet; break;
    case 'W': k = K_DidSet; break;
    case 'r': k = K_ReadAccessor; break;
    case 'M': k = K_ModifyAccessor; break;
    case 'i': k = K_InitAccessor; break;
    case 'a':
        switch (next(d)) {
        case 'O': k = K_OwningMutableAddressor; break;
        case 'o': k = K_NativeOwningMutableAddressor; break;
        case 'p': k = K_NativePinningMutableAddressor; break;
        case 'u': k = K_UnsafeMutableAddressor; break;
        default: return NULL;
        }
        break;
    case 'l':
        switch (next(d)) {
        case 'O': k = K_OwningAddressor; break;
        case 'o': k = K_NativeOwningAddressor; break;
        case 'p': k = K_NativePinningAddressor; break;
        case 'u': k = K_UnsafeAddressor; break;
        default: return NULL;
        }
        break;
    case 'p':
        return child;
    default:
        return NULL;
    }
    return with1(d, k, child);
}

static swift_node *demangle_subscript(dm *d)
{
    swift_node *priv = pop_kind(d, K_PrivateDeclName);
    swift_node *type = pop_kind(d, K_Type);
    swift_node *labels = pop_function_param_labels(d, type);
    swift_node *ctx = pop_context(d);
    if (type == NULL)
        return NULL;
    swift_node *s = with1(d, K_Subscript, ctx);
    add_opt(d, s, labels);
    s = add(d, s, type);
    add_opt(d, s, priv);
    return demangle_accessor(d, s);
}

static swift_node *demangle_function_entity(dm *d)
{
    enum { NONE, TYPE_PRIV, TYPE_INDEX, INDEX } args = NONE;
    swift_kind k;
    switch (next(d)) {
    case 'D': k = K_Deallocator; break;
    case 'd': k = K_Destructor; break;
    case 'Z': k = K_Deallocator; break;   /* isolated deallocator prints alike */
    case 'E': k = K_IVarDestroyer; break;
    case 'e': k = K_IVarInitializer; break;
    case 'i': k = K_Initializer; break;
    case 'C': args = TYPE_PRIV; k = K_Allocator; break;
    case 'c': args = TYPE_PRIV; k = K_Constructor; break;
    case 'U': args = TYPE_INDEX; k = K_ExplicitClosure; break;
    case 'u': args = TYPE_INDEX; k = K_ImplicitClosure; break;
    case 'A': args = INDEX; k = K_DefaultArgumentInitializer; break;
    case 'm': return demangle_entity(d, K_Macro);
    case 'p': return demangle_entity(d, K_GenericTypeParamDecl);
    case 'P': k = K_PropertyWrapperBackingInitializer; break;
    case 'W': k = K_PropertyWrapperInitFromProjectedValue; break;
    case 'M': {
        /* macro expansions: fM{f,p,m,r,a,e,c,b,q,u} */
        char c = next(d);
        swift_kind mk_k;
        switch (c) {
        case 'f': mk_k = K_FreestandingMacroExpansion; break;
        case 'p': mk_k = K_PeerAttachedMacroExpansion; break;
        case 'm': mk_k = K_MemberAttachedMacroExpansion; break;
        case 'r': mk_k = K_MemberAttributeAttachedMacroExpansion; break;
        case 'a': mk_k = K_AccessorAttachedMacroExpansion; break;
        case 'e': mk_k = K_ExtensionAttachedMacroExpansion; break;
        case 'c': mk_k = K_ConformanceAttachedMacroExpansion; break;
        case 'b': mk_k = K_BodyAttachedMacroExpansion; break;
        case 'q': mk_k = K_PreambleAttachedMacroExpansion; break;
        case 'u': mk_k = K_MacroExpansionUniqueName; break;
        default: return NULL;
        }
        swift_node *idx = index_node(d);
        swift_node *name = pop_kind(d, K_Identifier);
        if (mk_k == K_FreestandingMacroExpansion) {
            swift_node *priv = pop_kind(d, K_PrivateDeclName);
            swift_node *ctx = pop_context(d);
            swift_node *r = with3(d, mk_k, ctx, name, idx);
            return add_opt(d, r, priv);
        }
        if (mk_k == K_MacroExpansionUniqueName) {
            swift_node *priv = pop_kind(d, K_PrivateDeclName);
            swift_node *ctx = pop_context(d);
            swift_node *r = with3(d, mk_k, ctx, name, idx);
            return add_opt(d, r, priv);
        }
        swift_node *attached = pop_if(d, is_decl_name);
        swift_node *ctx = pop_context(d);
        return add(d, with3(d, mk_k, ctx, attached, name), idx);
    }
    default: return NULL;
    }
    swift_node *name_or_index = NULL, *ptype = NULL, *labels = NULL;
    switch (args) {
    case NONE:
        break;
    case TYPE_PRIV:
        name_or_index = pop_kind(d, K_PrivateDeclName);
        ptype = pop_kind(d, K_Type);
        labels = pop_function_param_labels(d, ptype);
        break;
    case TYPE_INDEX:
        name_or_index = index_node(d);
        ptype = pop_kind(d, K_Type);
        break;
    case INDEX:
        name_or_index = index_node(d);
        break;
    }
    swift_node *e = with1(d, k, pop_context(d));
    switch (args) {
    case NONE:
        break;
    case INDEX:
        e = add(d, e, name_or_index);
        break;
    case TYPE_PRIV:
        add_opt(d, e, labels);
        e = add(d, e, ptype);
        add_opt(d, e, name_or_index);
        break;
    case TYPE_INDEX:
        e = add(d, e, name_or_index);
        e = add(d, e, ptype);
        break;
    }
    return e;
}

static swift_node *demangle_plain_function(dm *d)
{
    swift_node *sig = pop_kind(d, K_DependentGenericSignature);
    swift_node *type = pop_function_type(d, K_FunctionType);
    swift_node *labels = pop_function_param_labels(d, type);
    if (sig != NULL)
        type = type_of(d, with2(d, K_DependentGenericType, sig, type));
    swift_node *name = pop_if(d, is_decl_name);
    swift_node *ctx = pop_context(d);
    if (labels != NULL)
        return add(d, with3(d, K_Function, ctx, name, labels), type);
    return with3(d, K_Function, ctx, name, type);
}

/* ---- generics ------------------------------------------------------------------------- */

static swift_node *demangle_generic_signature(dm *d, bool has_counts)
{
    swift_node *sig = mk(d, K_DependentGenericSignature);
    if (sig == NULL)
        return NULL;
    if (has_counts) {
        while (!next_if(d, 'l')) {
            int64_t count = 0;
            if (!next_if(d, 'z'))
                count = demangle_index(d) + 1;
            if (count < 0 || d->pos >= d->len)
                return NULL;
            add(d, sig, mk_index(d, K_DependentGenericParamCount, (uint64_t)count));
        }
    } else {
        add(d, sig, mk_index(d, K_DependentGenericParamCount, 1));
    }
    size_t ncounts = sig->nchildren;
    swift_node *req;
    while ((req = pop_if(d, is_requirement)) != NULL)
        add(d, sig, req);
    reverse_children(sig, ncounts);
    return sig;
}

static swift_node *demangle_generic_requirement(dm *d)
{
    enum { GENERIC, ASSOC, COMPOUND, SUBST } tk;
    enum { PROTO, BASECLASS, SAMETYPE, LAYOUT, SAMESHAPE } ck;
    switch (next(d)) {
    case 'c': ck = BASECLASS; tk = ASSOC; break;
    case 'C': ck = BASECLASS; tk = COMPOUND; break;
    case 'b': ck = BASECLASS; tk = GENERIC; break;
    case 'B': ck = BASECLASS; tk = SUBST; break;
    case 't': ck = SAMETYPE; tk = ASSOC; break;
    case 'T': ck = SAMETYPE; tk = COMPOUND; break;
    case 's': ck = SAMETYPE; tk = GENERIC; break;
    case 'S': ck = SAMETYPE; tk = SUBST; break;
    case 'm': ck = LAYOUT; tk = ASSOC; break;
    case 'M': ck = LAYOUT; tk = COMPOUND; break;
    case 'l': ck = LAYOUT; tk = GENERIC; break;
    case 'L': ck = LAYOUT; tk = SUBST; break;
    case 'p': ck = PROTO; tk = ASSOC; break;
    case 'P': ck = PROTO; tk = COMPOUND; break;
    case 'Q': ck = PROTO; tk = SUBST; break;
    case 'h': ck = SAMESHAPE; tk = GENERIC; break;
    default: ck = PROTO; tk = GENERIC; push_back(d); break;
    }
    swift_node *ty = NULL;
    switch (tk) {
    case GENERIC: ty = type_of(d, generic_param_index(d)); break;
    case ASSOC: ty = assoc_simple(d, generic_param_index(d)); add_subst(d, ty); break;
    case COMPOUND: ty = assoc_compound(d, generic_param_index(d)); add_subst(d, ty); break;
    case SUBST: ty = pop_kind(d, K_Type); break;
    }
    switch (ck) {
    case PROTO:
        return with2(d, K_DependentGenericConformanceRequirement, ty, pop_protocol(d));
    case BASECLASS:
        return with2(d, K_DependentGenericConformanceRequirement, ty, pop_kind(d, K_Type));
    case SAMETYPE:
        return with2(d, K_DependentGenericSameTypeRequirement, ty, pop_kind(d, K_Type));
    case SAMESHAPE:
        return with2(d, K_DependentGenericSameTypeRequirement, ty, type_of(d, generic_param_index(d)));
    case LAYOUT: {
        char c = next(d);
        swift_node *size = NULL, *align = NULL;
        char name[2] = {c, 0};
        switch (c) {
        case 'U': case 'R': case 'N': case 'C': case 'D': case 'T': case 'B':
            break;
        case 'E': case 'M':
            size = index_node(d);
            align = index_node(d);
            if (size == NULL || align == NULL)
                return NULL;
            break;
        case 'e': case 'm': case 'S':
            size = index_node(d);
            if (size == NULL)
                return NULL;
            break;
        default:
            return NULL;
        }
        swift_node *r = with2(d, K_DependentGenericLayoutRequirement, ty, mk_str(d, K_Identifier, name));
        add_opt(d, r, size);
        add_opt(d, r, align);
        return r;
    }
    }
    return NULL;
}

static swift_node *demangle_archetype(dm *d)
{
    swift_node *t;
    switch (next(d)) {
    case 'a': {
        swift_node *id = pop_kind(d, K_Identifier);
        swift_node *arch = pop_type_and_get_child(d);
        t = type_of(d, with2(d, K_AssociatedTypeRef, arch, id));
        add_subst(d, t);
        return t;
    }
    case 'O':
        return with1(d, K_OpaqueReturnTypeOf, pop_context(d));
    case 'o': {
        int64_t index = demangle_index(d);
        swift_node *lists[16];
        size_t n;
        swift_node *retro;
        if (index < 0 || !demangle_bound_generics(d, lists, &n, 16, &retro))
            return NULL;
        swift_node *name = pop(d);
        swift_node *opaque = with2(d, K_OpaqueType, name, mk_index(d, K_Index, (uint64_t)index));
        swift_node *tl = mk(d, K_TypeList);
        for (size_t i = n; i-- > 0;)
            add(d, tl, lists[i]);
        opaque = add(d, opaque, tl);
        add_opt(d, opaque, retro);
        t = type_of(d, opaque);
        add_subst(d, t);
        return t;
    }
    case 'r':
        return type_of(d, mk(d, K_OpaqueReturnType));
    case 'R': {
        int64_t ord = demangle_index(d);
        if (ord < 0)
            return NULL;
        return type_of(d, with1(d, K_OpaqueReturnType, mk_index(d, K_OpaqueReturnTypeIndex, (uint64_t)ord)));
    }
    case 'x': t = assoc_simple(d, NULL); break;
    case 'X': t = assoc_compound(d, NULL); break;
    case 'y': t = assoc_simple(d, generic_param_index(d)); break;
    case 'Y': t = assoc_compound(d, generic_param_index(d)); break;
    case 'z': t = assoc_simple(d, dependent_param(d, 0, 0)); break;
    case 'Z': t = assoc_compound(d, dependent_param(d, 0, 0)); break;
    default: return NULL;
    }
    add_subst(d, t);
    return t;
}

/* ---- standard types ------------------------------------------------------------------- */

static swift_node *standard_subst(dm *d, char c, bool second)
{
    static const struct { char c; swift_kind k; const char *name; } first_level[] = {
        {'A', K_Structure, "AutoreleasingUnsafeMutablePointer"}, {'a', K_Structure, "Array"},
        {'b', K_Structure, "Bool"}, {'D', K_Structure, "Dictionary"}, {'d', K_Structure, "Double"},
        {'f', K_Structure, "Float"}, {'h', K_Structure, "Set"}, {'I', K_Structure, "DefaultIndices"},
        {'i', K_Structure, "Int"}, {'J', K_Structure, "Character"}, {'N', K_Structure, "ClosedRange"},
        {'n', K_Structure, "Range"}, {'O', K_Structure, "ObjectIdentifier"},
        {'P', K_Structure, "UnsafePointer"}, {'p', K_Structure, "UnsafeMutablePointer"},
        {'R', K_Structure, "UnsafeBufferPointer"}, {'r', K_Structure, "UnsafeMutableBufferPointer"},
        {'S', K_Structure, "String"}, {'s', K_Structure, "Substring"}, {'u', K_Structure, "UInt"},
        {'V', K_Structure, "UnsafeRawPointer"}, {'v', K_Structure, "UnsafeMutableRawPointer"},
        {'W', K_Structure, "UnsafeRawBufferPointer"}, {'w', K_Structure, "UnsafeMutableRawBufferPointer"},
        {'q', K_Enum, "Optional"},
        {'B', K_Protocol, "BinaryFloatingPoint"}, {'E', K_Protocol, "Encodable"},
        {'e', K_Protocol, "Decodable"}, {'F', K_Protocol, "FloatingPoint"},
        {'G', K_Protocol, "RandomNumberGenerator"}, {'H', K_Protocol, "Hashable"},
        {'j', K_Protocol, "Numeric"}, {'K', K_Protocol, "BidirectionalCollection"},
        {'k', K_Protocol, "RandomAccessCollection"}, {'L', K_Protocol, "Comparable"},
        {'l', K_Protocol, "Collection"}, {'M', K_Protocol, "MutableCollection"},
        {'m', K_Protocol, "RangeReplaceableCollection"}, {'Q', K_Protocol, "Equatable"},
        {'T', K_Protocol, "Sequence"}, {'t', K_Protocol, "IteratorProtocol"},
        {'U', K_Protocol, "UnsignedInteger"}, {'X', K_Protocol, "RangeExpression"},
        {'x', K_Protocol, "Strideable"}, {'Y', K_Protocol, "RawRepresentable"},
        {'y', K_Protocol, "StringProtocol"}, {'Z', K_Protocol, "SignedInteger"},
        {'z', K_Protocol, "BinaryInteger"},
    };
    static const struct { char c; swift_kind k; const char *name; } second_level[] = {
        {'A', K_Protocol, "Actor"}, {'C', K_Structure, "CheckedContinuation"},
        {'c', K_Structure, "UnsafeContinuation"}, {'E', K_Structure, "CancellationError"},
        {'e', K_Structure, "UnownedSerialExecutor"}, {'F', K_Protocol, "Executor"},
        {'f', K_Protocol, "SerialExecutor"}, {'G', K_Structure, "TaskGroup"},
        {'g', K_Structure, "ThrowingTaskGroup"}, {'h', K_Protocol, "TaskExecutor"},
        {'I', K_Protocol, "AsyncIteratorProtocol"}, {'i', K_Protocol, "AsyncSequence"},
        {'J', K_Structure, "UnownedJob"}, {'M', K_Class, "MainActor"},
        {'P', K_Structure, "TaskPriority"}, {'S', K_Structure, "AsyncStream"},
        {'s', K_Structure, "AsyncThrowingStream"}, {'T', K_Structure, "Task"},
        {'t', K_Structure, "UnsafeCurrentTask"},
    };
    if (second) {
        for (size_t i = 0; i < sizeof second_level / sizeof *second_level; i++)
            if (second_level[i].c == c)
                return swift_type(d, second_level[i].k, second_level[i].name);
    } else {
        for (size_t i = 0; i < sizeof first_level / sizeof *first_level; i++)
            if (first_level[i].c == c)
                return swift_type(d, first_level[i].k, first_level[i].name);
    }
    return NULL;
}

static swift_node *demangle_standard_substitution(dm *d)
{
    char c = next(d);
    switch (c) {
    case 'o':
        return mk_str(d, K_Module, "__C");
    case 'C':
        return mk_str(d, K_Module, "__C_Synthesized");
    case 'g': {
        swift_node *tl = with1(d, K_TypeList, pop_kind(d, K_Type));
        swift_node *opt = type_of(d, with2(d, K_BoundGenericEnum, swift_type(d, K_Enum, "Optional"), tl));
        add_subst(d, opt);
        return opt;
    }
    default: {
        push_back(d);
        int64_t repeat = natural(d);
        if (repeat > MAX_REPEAT)
            return NULL;
        bool second = next_if(d, 'c');
        swift_node *n = standard_subst(d, next(d), second);
        if (n == NULL)
            return NULL;
        while (repeat-- > 1)
            push(d, n);
        return n;
    }
    }
}

static swift_node *demangle_multi_substitutions(dm *d)
{
    int64_t repeat = -1;
    for (;;) {
        char c = next(d);
        if (c == '\0')
            return NULL;
        if (is_lower(c) || is_upper(c)) {
            size_t idx = (size_t)(is_lower(c) ? c - 'a' : c - 'A');
            if (idx >= d->nsubst || repeat > MAX_REPEAT)
                return NULL;
            swift_node *n = d->subst[idx];
            while (repeat-- > 1)
                push(d, n);
            if (is_upper(c))
                return n;
            push(d, n);
            repeat = -1;
            continue;
        }
        if (c == '_') {
            int64_t idx = repeat + 27;
            if (repeat < 0 || (size_t)idx >= d->nsubst)
                return NULL;
            return d->subst[idx];
        }
        push_back(d);
        repeat = natural(d);
        if (repeat < 0)
            return NULL;
    }
}

/* ---- builtins, special types ------------------------------------------------------------ */

static swift_node *builtin(dm *d, const char *name)
{
    return type_of(d, mk_str(d, K_BuiltinTypeName, name));
}

static swift_node *demangle_builtin_type(dm *d)
{
    char buf[64];
    switch (next(d)) {
    case 'b': return builtin(d, "Builtin.BridgeObject");
    case 'B': return builtin(d, "Builtin.UnsafeValueBuffer");
    case 'e': return builtin(d, "Builtin.Executor");
    case 'd': return builtin(d, "Builtin.DefaultActorStorage");
    case 'c': return builtin(d, "Builtin.RawUnsafeContinuation");
    case 'D': return builtin(d, "Builtin.Job");
    case 'j': return builtin(d, "Builtin.Job");
    case 'f': {
        int64_t size = natural(d);
        if (size <= 0 || size > 4096 || !next_if(d, '_'))
            return NULL;
        snprintf(buf, sizeof buf, "Builtin.FPIEEE%lld", (long long)size);
        return builtin(d, buf);
    }
    case 'i': {
        int64_t size = natural(d);
        if (size <= 0 || size > 4096 || !next_if(d, '_'))
            return NULL;
        snprintf(buf, sizeof buf, "Builtin.Int%lld", (long long)size);
        return builtin(d, buf);
    }
    case 'I': return builtin(d, "Builtin.IntLiteral");
    case 'v': {
        int64_t elts = natural(d);
        if (elts <= 0 || elts > 4096 || !next_if(d, '_'))
            return NULL;
        swift_node *et = pop_type_and_get_child(d);
        if (et == NULL || et->kind != K_BuiltinTypeName || et->text_len < 8 ||
            memcmp(et->text, "Builtin.", 8) != 0)
            return NULL;
        snprintf(buf, sizeof buf, "Builtin.Vec%lldx%.*s", (long long)elts, (int)(et->text_len - 8),
                 et->text + 8);
        return builtin(d, buf);
    }
    case 'O': return builtin(d, "Builtin.UnknownObject");
    case 'o': return builtin(d, "Builtin.NativeObject");
    case 'p': return builtin(d, "Builtin.RawPointer");
    case 't': return builtin(d, "Builtin.SILToken");
    case 'w': return builtin(d, "Builtin.Word");
    case 'P': return builtin(d, "Builtin.PackIndex");
    default: return NULL;
    }
}

/* SIL box types: `type-list 'Xx'` (fields) and `type-list type-list generic-signature 'XX'`
 * (fields, generic arguments, signature); a field mangled inout ('z') is a `var`, else a `let` */
static swift_node *sil_box_with_layout(dm *d, bool generic)
{
    swift_node *sig = NULL, *args = NULL;
    if (generic) {
        sig = pop_kind(d, K_DependentGenericSignature);
        args = sig ? pop_type_list(d) : NULL;
        if (args == NULL)
            return NULL;
    }
    swift_node *fields = pop_type_list(d);
    if (fields == NULL)
        return NULL;
    swift_node *layout = mk(d, K_SILBoxLayout);
    for (uint32_t i = 0; layout != NULL && i < fields->nchildren; i++) {
        swift_node *ty = fields->child[i];
        bool var = ty->nchildren == 1 && ty->child[0]->kind == K_InOut && ty->child[0]->nchildren == 1;
        if (var)
            ty = type_of(d, ty->child[0]->child[0]);
        layout = add(d, layout, with1(d, var ? K_SILBoxMutableField : K_SILBoxImmutableField, ty));
    }
    swift_node *box = with1(d, K_SILBoxTypeWithLayout, layout);
    if (generic) {
        box = add(d, box, sig);
        box = add(d, box, args);
    }
    return type_of(d, box);
}

static swift_node *demangle_special_type(dm *d)
{
    char c = next(d);
    switch (c) {
    case 'E': return pop_function_type(d, K_NoEscapeFunctionType);
    case 'A': return pop_function_type(d, K_EscapingAutoClosureType);
    case 'f': return pop_function_type(d, K_ThinFunctionType);
    case 'K': return pop_function_type(d, K_AutoClosureType);
    case 'U': return pop_function_type(d, K_UncurriedFunctionType);
    case 'L': return pop_function_type(d, K_EscapingObjCBlock);
    case 'B': return pop_function_type(d, K_ObjCBlock);
    case 'C': return pop_function_type(d, K_CFunctionPointer);
    case 'o': return type_of(d, with1(d, K_Unowned, pop_kind(d, K_Type)));
    case 'u': return type_of(d, with1(d, K_Unmanaged, pop_kind(d, K_Type)));
    case 'w': return type_of(d, with1(d, K_Weak, pop_kind(d, K_Type)));
    case 'b': return type_of(d, with1(d, K_SILBoxType, pop_kind(d, K_Type)));
    case 'D': return type_of(d, with1(d, K_DynamicSelf, pop_kind(d, K_Type)));
    case 'M': case 'm': {
        const char *repr;
        switch (next(d)) {
        case 't': repr = "@thin"; break;
        case 'T': repr = "@thick"; break;
        case 'o': repr = "@objc_metatype"; break;
        default: return NULL;
        }
        swift_node *ty = pop_kind(d, K_Type);
        return type_of(d, with2(d, c == 'M' ? K_Metatype : K_ExistentialMetatype,
                               mk_str(d, K_MetatypeRepresentation, repr), ty));
    }
    case 'p':
        return type_of(d, with1(d, K_ExistentialMetatype, pop_kind(d, K_Type)));
    case 'P': {
        /* constrained existential: base type, then same-type requirements */
        swift_node *reqs = mk(d, K_ConstrainedExistentialRequirementList);
        bool first;
        do {
            first = pop_kind(d, K_FirstElementMarker) != NULL;
            reqs = add(d, reqs, pop_if(d, is_requirement));
        } while (reqs != NULL && !first);
        reverse_children(reqs, 0);
        swift_node *base = pop_kind(d, K_Type);
        return type_of(d, with2(d, K_ConstrainedExistential, base, reqs));
    }
    case 'c': {
        swift_node *super = pop_kind(d, K_Type);
        swift_node *protos = mk(d, K_TypeList);
        if (pop_kind(d, K_EmptyList) == NULL) {
            bool first;
            do {
                first = pop_kind(d, K_FirstElementMarker) != NULL;
                swift_node *p = pop_protocol(d);
                if (p == NULL)
                    return NULL;
                add(d, protos, p);
            } while (!first);
            reverse_children(protos, 0);
        }
        return type_of(d, with2(d, K_ProtocolListWithClass, with1(d, K_ProtocolList, protos), super));
    }
    case 'l': {
        swift_node *protos = mk(d, K_TypeList);
        if (pop_kind(d, K_EmptyList) == NULL) {
            bool first;
            do {
                first = pop_kind(d, K_FirstElementMarker) != NULL;
                swift_node *p = pop_protocol(d);
                if (p == NULL)
                    return NULL;
                add(d, protos, p);
            } while (!first);
            reverse_children(protos, 0);
        }
        return type_of(d, with1(d, K_ProtocolListWithAnyObject, with1(d, K_ProtocolList, protos)));
    }
    case 'e':
        return type_of(d, mk(d, K_ErrorType));
    case 'Z': {
        /* context ::= entity identifier type-list 'XZ' (an unknown runtime context) */
        swift_node *types = pop_type_list(d);
        swift_node *name = pop_kind(d, K_Identifier);
        swift_node *parent = pop_context(d);
        return with3(d, K_AnonymousContext, name, parent, types);
    }
    case 'x': return sil_box_with_layout(d, false);
    case 'X': return sil_box_with_layout(d, true);
    default:
        return NULL;
    }
}

/* lifetime dependence (Swift 6.0's ~Escapable prototype, in the vectors of that time): 'Yl' KIND
 * marks a parameter type, 'YL' KIND the function (the dependence of its result on `self`);
 * KIND 's' scope, 'i' inherit */
static swift_node *lifetime_dependence(dm *d, bool self)
{
    const char *kind;
    switch (next(d)) {
    case 's': kind = "scope"; break;
    case 'i': kind = "inherit"; break;
    default: return NULL;
    }
    if (self)
        return mk_str(d, K_SelfLifetimeDependence, kind);
    swift_node *n = with1(d, K_LifetimeDependence, pop_type_and_get_child(d));
    if (n == NULL)
        return NULL;
    n->text = kind;
    n->text_len = (uint32_t)strlen(kind);
    n->has_text = true;
    return type_of(d, n);
}

static swift_node *demangle_type_annotation(dm *d)
{
    switch (next(d)) {
    case 'a': return mk(d, K_AsyncAnnotation);
    case 'A': return mk(d, K_IsolatedAnyFunctionType);
    case 'b': return mk(d, K_ConcurrentFunctionType);
    case 'c': return with1(d, K_GlobalActorFunctionType, pop_type_and_get_child(d));
    case 'i': return type_of(d, with1(d, K_Isolated, pop_type_and_get_child(d)));
    case 'j': {
        const char *kind;
        switch (next(d)) {
        case 'f': kind = "@differentiable(_forward) "; break;
        case 'r': kind = "@differentiable(reverse) "; break;
        case 'd': kind = "@differentiable "; break;
        case 'l': kind = "@differentiable(_linear) "; break;
        default: return NULL;
        }
        return mk_str(d, K_DifferentiableFunctionType, kind);
    }
    case 'k': return type_of(d, with1(d, K_NoDerivative, pop_type_and_get_child(d)));
    case 'K': return with1(d, K_TypedThrowsAnnotation, pop_type_and_get_child(d));
    case 'l': return lifetime_dependence(d, false);
    case 'L': return lifetime_dependence(d, true);
    case 't': return type_of(d, with1(d, K_CompileTimeConst, pop_type_and_get_child(d)));
    case 'T': return mk(d, K_SendingResultFunctionType);
    case 'u': return type_of(d, with1(d, K_Sending, pop_type_and_get_child(d)));
    default: return NULL;
    }
}

/* ---- SIL function types (thunks) ---------------------------------------------------------- */

static swift_node *impl_param(dm *d, swift_kind k)
{
    const char *a;
    switch (next(d)) {
    case 'i': a = "@in"; break;
    case 'c': a = "@in_constant"; break;
    case 'l': a = "@inout"; break;
    case 'b': a = "@inout_aliasable"; break;
    case 'n': a = "@in_guaranteed"; break;
    case 'X': a = "@in_cxx"; break;
    case 'x': a = "@owned"; break;
    case 'g': a = "@guaranteed"; break;
    case 'e': a = "@deallocating"; break;
    case 'y': a = "@unowned"; break;
    case 'v': a = "@pack_owned"; break;
    case 'p': a = "@pack_guaranteed"; break;
    case 'm': a = "@pack_inout"; break;
    default: push_back(d); return NULL;
    }
    return with1(d, k, mk_str(d, K_ImplConvention, a));
}

static swift_node *impl_result(dm *d, swift_kind k)
{
    const char *a;
    switch (next(d)) {
    case 'r': a = "@out"; break;
    case 'o': a = "@owned"; break;
    case 'd': a = "@unowned"; break;
    case 'u': a = "@unowned_inner_pointer"; break;
    case 'a': a = "@autoreleased"; break;
    case 'k': a = "@pack_out"; break;
    default: push_back(d); return NULL;
    }
    return with1(d, k, mk_str(d, K_ImplConvention, a));
}

static swift_node *demangle_impl_function_type(dm *d)
{
    swift_node *type = mk(d, K_ImplFunctionType);
    if (next_if(d, 's')) {
        swift_node *lists[16];
        size_t n;
        swift_node *retro;
        if (!demangle_bound_generics(d, lists, &n, 16, &retro) || n < 1)
            return NULL;
        swift_node *sig = pop_kind(d, K_DependentGenericSignature);
        if (sig == NULL)
            return NULL;
        swift_node *subs = with2(d, K_ImplPatternSubstitutions, sig, lists[0]);
        add_opt(d, subs, retro);
        add(d, type, subs);
    }
    if (next_if(d, 'I')) {
        swift_node *lists[16];
        size_t n;
        swift_node *retro;
        if (!demangle_bound_generics(d, lists, &n, 16, &retro) || n < 1)
            return NULL;
        swift_node *subs = with1(d, K_ImplInvocationSubstitutions, lists[0]);
        add_opt(d, subs, retro);
        add(d, type, subs);
    }
    swift_node *sig = pop_kind(d, K_DependentGenericSignature);
    if (sig != NULL && next_if(d, 'P'))
        sig = change_kind(d, sig, K_DependentPseudogenericSignature);
    if (next_if(d, 'e'))
        add(d, type, mk(d, K_ImplEscaping));
    if (next_if(d, 'A'))
        add(d, type, mk_str(d, K_ImplErasedIsolation, "@isolated(any)"));
    switch (peek(d)) {
    case 'd': next(d); add(d, type, mk_str(d, K_ImplDifferentiabilityKind, "@differentiable")); break;
    case 'f': next(d); add(d, type, mk_str(d, K_ImplDifferentiabilityKind, "@differentiable(_forward)")); break;
    case 'r': next(d); add(d, type, mk_str(d, K_ImplDifferentiabilityKind, "@differentiable(reverse)")); break;
    case 'l': next(d); add(d, type, mk_str(d, K_ImplDifferentiabilityKind, "@differentiable(_linear)")); break;
    default: break;
    }
    const char *callee;
    switch (next(d)) {
    case 'y': callee = "@callee_unowned"; break;
    case 'g': callee = "@callee_guaranteed"; break;
    case 'x': callee = "@callee_owned"; break;
    case 't': callee = "@convention(thin)"; break;
    default: return NULL;
    }
    add(d, type, mk_str(d, K_ImplConvention, callee));
    const char *conv = NULL;
    switch (next(d)) {
    case 'B': conv = "@convention(block)"; break;
    case 'C': conv = "@convention(c)"; break;
    case 'M': conv = "@convention(method)"; break;
    case 'O': conv = "@convention(objc_method)"; break;
    case 'K': conv = "@convention(closure)"; break;
    case 'W': conv = "@convention(witness_method)"; break;
    default: push_back(d); break;
    }
    if (conv != NULL)
        add(d, type, mk_str(d, K_ImplFunctionConvention, conv));
    if (next_if(d, 'A'))
        add(d, type, mk_str(d, K_ImplFunctionAttribute, "@yield_once"));
    else if (next_if(d, 'G'))
        add(d, type, mk_str(d, K_ImplFunctionAttribute, "@yield_many"));
    if (next_if(d, 'h'))
        add(d, type, mk_str(d, K_ImplFunctionAttribute, "@Sendable"));
    if (next_if(d, 'H'))
        add(d, type, mk_str(d, K_ImplFunctionAttribute, "@async"));
    if (next_if(d, 'T'))
        add(d, type, mk_str(d, K_ImplSendingResult, "transferring"));
    add_opt(d, type, sig);
    int ntypes = 0;
    swift_node *p;
    while ((p = impl_param(d, K_ImplParameter)) != NULL) {
        if (next_if(d, 'w'))
            add(d, p, mk_str(d, K_ImplParameterAttr, "@noDerivative"));
        if (next_if(d, 'T'))
            add(d, p, mk_str(d, K_ImplParameterAttr, "transferring"));
        add(d, type, p);
        ntypes++;
    }
    while ((p = impl_result(d, K_ImplResult)) != NULL) {
        if (next_if(d, 'w'))
            add(d, p, mk_str(d, K_ImplParameterAttr, "@noDerivative"));
        add(d, type, p);
        ntypes++;
    }
    while (next_if(d, 'Y')) {
        p = impl_param(d, K_ImplYield);
        if (p == NULL)
            return NULL;
        add(d, type, p);
        ntypes++;
    }
    if (next_if(d, 'z')) {
        p = impl_result(d, K_ImplErrorResult);
        if (p == NULL)
            return NULL;
        add(d, type, p);
        ntypes++;
    }
    if (!next_if(d, '_') || type == NULL)
        return NULL;
    for (int i = 0; i < ntypes; i++) {
        swift_node *ty = pop_kind(d, K_Type);
        if (ty == NULL)
            return NULL;
        add(d, type->child[type->nchildren - (uint32_t)i - 1], ty);
    }
    return type_of(d, type);
}

/* ---- thunks, specializations, witnesses, metadata ------------------------------------------ */

static swift_node *spec_attributes(dm *d, swift_kind k)
{
    bool metatype_removed = next_if(d, 'm');
    bool serialized = next_if(d, 'q');
    bool async_removed = next_if(d, 'a');
    int pass = next(d) - '0';
    if (pass < 0 || pass > 9)
        return NULL;
    swift_node *s = mk(d, k);
    if (metatype_removed)
        add(d, s, mk(d, K_MetatypeParamsRemoved));
    if (serialized)
        add(d, s, mk(d, K_IsSerialized));
    (void)async_removed;
    add(d, s, mk_index(d, K_SpecializationPassID, (uint64_t)pass));
    return s;
}

static swift_node *demangle_generic_specialization(dm *d, swift_kind k)
{
    swift_node *spec = spec_attributes(d, k);
    swift_node *tl = pop_type_list(d);
    if (spec == NULL || tl == NULL)
        return NULL;
    for (uint32_t i = 0; i < tl->nchildren; i++)
        add(d, spec, with1(d, K_GenericSpecializationParam, tl->child[i]));
    return spec;
}

/* FunctionSigSpecializationParamKind values (Swift's Demangle.h): a kind in the low bits,
 * option flags above. */
enum {
    FSP_CONST_FUNCTION = 0, FSP_CONST_GLOBAL = 1, FSP_CONST_INT = 2, FSP_CONST_FLOAT = 3,
    FSP_CONST_STRING = 4, FSP_CLOSURE = 5, FSP_BOX_TO_VALUE = 6, FSP_BOX_TO_STACK = 7,
    FSP_INOUT_TO_OUT = 8, FSP_CONST_KEYPATH = 9,
    FSP_DEAD = 1 << 6, FSP_OWNED_TO_GUARANTEED = 1 << 7, FSP_SROA = 1 << 8,
    FSP_GUARANTEED_TO_OWNED = 1 << 9, FSP_EXISTENTIAL_TO_GENERIC = 1 << 10,
};

static swift_node *fsp_kind(dm *d, uint64_t v)
{
    return mk_index(d, K_FunctionSignatureSpecializationParamKind, v);
}

static swift_node *fsp_param(dm *d, swift_kind k)
{
    swift_node *p = mk(d, k);
    uint64_t v;
    switch (next(d)) {
    case 'n':
        return p;
    case 'c':
        return add(d, p, fsp_kind(d, FSP_CLOSURE));
    case 'p':
        switch (next(d)) {
        case 'f': return add(d, p, fsp_kind(d, FSP_CONST_FUNCTION));
        case 'g': return add(d, p, fsp_kind(d, FSP_CONST_GLOBAL));
        case 'k': return add(d, p, fsp_kind(d, FSP_CONST_KEYPATH));
        case 'i': case 'd': {
            add(d, p, fsp_kind(d, d->text[d->pos - 1] == 'i' ? FSP_CONST_INT : FSP_CONST_FLOAT));
            size_t start = d->pos;
            while (is_digit(peek(d)))
                next(d);
            if (d->pos == start)
                return NULL;
            return add(d, p, mk_text(d, K_FunctionSignatureSpecializationParamPayload, d->text + start,
                                     d->pos - start));
        }
        case 's': {
            const char *enc;
            switch (next(d)) {
            case 'b': enc = "u8"; break;
            case 'w': enc = "u16"; break;
            case 'c': enc = "objc"; break;
            default: return NULL;
            }
            add(d, p, fsp_kind(d, FSP_CONST_STRING));
            return add(d, p, mk_str(d, K_FunctionSignatureSpecializationParamPayload, enc));
        }
        default:
            return NULL;
        }
    case 'e':
        v = FSP_EXISTENTIAL_TO_GENERIC;
        if (next_if(d, 'D')) v |= FSP_DEAD;
        if (next_if(d, 'G')) v |= FSP_OWNED_TO_GUARANTEED;
        if (next_if(d, 'O')) v |= FSP_GUARANTEED_TO_OWNED;
        if (next_if(d, 'X')) v |= FSP_SROA;
        return add(d, p, fsp_kind(d, v));
    case 'd':
        v = FSP_DEAD;
        if (next_if(d, 'G')) v |= FSP_OWNED_TO_GUARANTEED;
        if (next_if(d, 'O')) v |= FSP_GUARANTEED_TO_OWNED;
        if (next_if(d, 'X')) v |= FSP_SROA;
        return add(d, p, fsp_kind(d, v));
    case 'g':
        v = FSP_OWNED_TO_GUARANTEED;
        if (next_if(d, 'X')) v |= FSP_SROA;
        return add(d, p, fsp_kind(d, v));
    case 'o':
        v = FSP_GUARANTEED_TO_OWNED;
        if (next_if(d, 'X')) v |= FSP_SROA;
        return add(d, p, fsp_kind(d, v));
    case 'x': return add(d, p, fsp_kind(d, FSP_SROA));
    case 'i': return add(d, p, fsp_kind(d, FSP_BOX_TO_VALUE));
    case 's': return add(d, p, fsp_kind(d, FSP_BOX_TO_STACK));
    case 'r': return add(d, p, fsp_kind(d, FSP_INOUT_TO_OUT));
    default: return NULL;
    }
}

/* function signature specialization: 'Tf' spec-attrs param* '_' ('n' | return-param); the
 * payloads of constant/closure parameters come first in the mangling and are popped here,
 * last parameter first. */
static swift_node *demangle_function_specialization(dm *d)
{
    swift_node *spec = spec_attributes(d, K_FunctionSignatureSpecialization);
    while (spec != NULL && !next_if(d, '_')) {
        if (d->pos >= d->len)
            return NULL;
        spec = add(d, spec, fsp_param(d, K_FunctionSignatureSpecializationParam));
    }
    if (spec != NULL && !next_if(d, 'n'))
        spec = add(d, spec, fsp_param(d, K_FunctionSignatureSpecializationReturn));
    if (spec == NULL)
        return NULL;
    for (uint32_t i = spec->nchildren; i-- > 0;) {
        swift_node *param = spec->child[i];
        if (param->kind != K_FunctionSignatureSpecializationParam || param->nchildren == 0)
            continue;
        uint64_t kind = param->child[0]->index;
        if (kind != FSP_CONST_FUNCTION && kind != FSP_CONST_GLOBAL && kind != FSP_CONST_STRING &&
            kind != FSP_CONST_KEYPATH && kind != FSP_CLOSURE)
            continue;
        uint32_t fixed = param->nchildren;
        swift_node *ty;
        while ((ty = pop_kind(d, K_Type)) != NULL) {
            if (kind != FSP_CLOSURE && kind != FSP_CONST_KEYPATH)
                return NULL;
            add(d, param, ty);
        }
        swift_node *name = pop_kind(d, K_Identifier);
        if (name == NULL)
            return NULL;
        const char *t = name->text;
        size_t tl = name->text_len;
        if (kind == FSP_CONST_STRING && tl > 0 && t[0] == '_') {
            t++;
            tl--;
        }
        add(d, param, mk_text(d, K_FunctionSignatureSpecializationParamPayload, t, tl));
        reverse_children(param, fixed);
    }
    return spec;
}

/* index-subset ::= [SU]+ : which parameters/results (S = selected) */
static swift_node *index_subset(dm *d)
{
    size_t start = d->pos;
    while (peek(d) == 'S' || peek(d) == 'U')
        next(d);
    if (d->pos == start)
        return NULL;
    return mk_text(d, K_IndexSubset, d->text + start, d->pos - start);
}

/* autodiff-function ::= entity generic-signature? 'TJ' kind index-subset 'p' index-subset 'r'
 * (and 'TJV' for derivative vtable thunks): the operands are all that is on the stack. */
static swift_node *demangle_autodiff(dm *d, swift_kind k)
{
    swift_node *r = mk(d, k);
    swift_node *n;
    while (r != NULL && (n = pop(d)) != NULL)
        add(d, r, n);
    reverse_children(r, 0);
    char kind = next(d);
    if (kind != 'f' && kind != 'r' && kind != 'd' && kind != 'p')
        return NULL;
    r = add(d, r, mk_index(d, K_AutoDiffFunctionKind, (uint64_t)(unsigned char)kind));
    r = add(d, r, index_subset(d));
    if (!next_if(d, 'p'))
        return NULL;
    r = add(d, r, index_subset(d));
    if (!next_if(d, 'r'))
        return NULL;
    return r;
}

static swift_node *demangle_thunk_or_specialization(dm *d)
{
    char c = next(d);
    switch (c) {
    case 'c': return with1(d, K_CurryThunk, pop_if(d, is_entity));
    case 'j': return with1(d, K_DispatchThunk, pop_if(d, is_entity));
    case 'q': return with1(d, K_MethodDescriptor, pop_if(d, is_entity));
    case 'o': return mk(d, K_ObjCAttribute);
    case 'O': return mk(d, K_NonObjCAttribute);
    case 'D': return mk(d, K_DynamicAttribute);
    case 'E': return mk(d, K_DistributedThunk);
    case 'F': return mk(d, K_DistributedAccessor);
    case 'a': return mk(d, K_PartialApplyObjCForwarder);
    case 'A': return mk(d, K_PartialApplyForwarder);
    case 'm': return mk(d, K_MergedFunction);
    case 'X': return mk(d, K_DynamicallyReplaceableFunctionVar);
    case 'x': return mk(d, K_DynamicallyReplaceableFunctionKey);
    case 'I': return mk(d, K_DynamicallyReplaceableFunctionImpl);
    case 'u': return mk(d, K_AsyncFunctionPointer);
    case 'Y': case 'Q': {
        swift_node *disc = index_node(d);
        return with1(d, c == 'Q' ? K_AsyncAwaitResumePartialFunction : K_AsyncSuspendResumePartialFunction, disc);
    }
    case 'C':
        return with1(d, K_CoroutineContinuationPrototype, pop_kind(d, K_Type));
    case 'V': {
        swift_node *base = pop_if(d, is_entity);
        swift_node *derived = pop_if(d, is_entity);
        return with2(d, K_VTableThunk, derived, base);
    }
    case 'W': {
        swift_node *entity = pop_if(d, is_entity);
        swift_node *conf = pop_protocol_conformance(d);
        return with2(d, K_ProtocolWitness, conf, entity);
    }
    case 'S':
        return with1(d, K_ProtocolSelfConformanceWitness, pop_if(d, is_entity));
    case 'R': case 'r': case 'y': {
        swift_node *t = mk(d, c == 'R' ? K_ReabstractionThunkHelper
                                        : c == 'y' ? K_ReabstractionThunkHelperWithSelf : K_ReabstractionThunk);
        swift_node *sig = pop_kind(d, K_DependentGenericSignature);
        add_opt(d, t, sig);
        if (c == 'y')
            t = add(d, t, pop_kind(d, K_Type));
        t = add(d, t, pop_kind(d, K_Type));
        t = add(d, t, pop_kind(d, K_Type));
        return t;
    }
    case 'g': return demangle_generic_specialization(d, K_GenericSpecialization);
    case 'G': return demangle_generic_specialization(d, K_GenericSpecializationNotReAbstracted);
    case 'B': return demangle_generic_specialization(d, K_GenericSpecializationInResilienceDomain);
    case 's': return demangle_generic_specialization(d, K_GenericSpecializationPrespecialized);
    case 'i': return demangle_generic_specialization(d, K_InlinedGenericFunction);
    case 'P': case 'p': {
        swift_node *spec = spec_attributes(d, c == 'P' ? K_GenericPartialSpecializationNotReAbstracted
                                                      : K_GenericPartialSpecialization);
        return add(d, spec, with1(d, K_GenericSpecializationParam, pop_kind(d, K_Type)));
    }
    case 'f': return demangle_function_specialization(d);
    case 'K': case 'k': {
        swift_kind k = c == 'K' ? K_KeyPathGetterThunkHelper : K_KeyPathSetterThunkHelper;
        bool serialized = next_if(d, 'q');
        swift_node *types[64];
        size_t n = 0;
        swift_node *nd = pop(d);
        if (nd == NULL || nd->kind != K_Type)
            return NULL;
        do {
            if (n == 64)
                return NULL;
            types[n++] = nd;
            nd = pop(d);
        } while (nd != NULL && nd->kind == K_Type);
        if (nd == NULL)
            return NULL;
        swift_node *r;
        if (nd->kind == K_DependentGenericSignature)
            r = with2(d, k, pop(d), nd);
        else
            r = with1(d, k, nd);
        while (n > 0)
            r = add(d, r, types[--n]);
        if (serialized)
            r = add(d, r, mk(d, K_IsSerialized));
        return r;
    }
    case 'l': {
        return with1(d, K_AssociatedTypeDescriptor, pop_assoc_type_name(d));
    }
    case 'L':
        return with1(d, K_ProtocolRequirementsBaseDescriptor, pop_protocol(d));
    case 'n': case 'N': {
        swift_node *req = pop_protocol(d);
        swift_node *conforming = pop_assoc_type_path(d);
        swift_node *proto = pop_kind(d, K_Type);
        return with3(d, c == 'n' ? K_AssociatedConformanceDescriptor : K_DefaultAssociatedConformanceAccessor,
                     proto, conforming, req);
    }
    case 'v': {
        int64_t idx = demangle_index(d);
        if (idx < 0)
            return NULL;
        if (next_if(d, 'r'))
            return mk_index(d, K_OutlinedReadOnlyObject, (uint64_t)idx);
        return mk_index(d, K_OutlinedVariable, (uint64_t)idx);
    }
    case 'e': {
        size_t start = d->pos;
        while (peek(d) != '_' && d->pos < d->len)
            next(d);
        if (!next_if(d, '_') || d->pos - 1 == start)
            return NULL;
        return mk_text(d, K_OutlinedBridgedMethod, d->text + start, d->pos - 1 - start);
    }
    case 'J':
        if (next_if(d, 'V'))
            return demangle_autodiff(d, K_AutoDiffDerivativeVTableThunk);
        if (next_if(d, 'S')) {
            /* subset parameters thunk: ... kind params 'p' results 'r' to-params 'P' */
            swift_node *r = demangle_autodiff(d, K_AutoDiffSubsetParametersThunk);
            r = add(d, r, index_subset(d));
            return r != NULL && next_if(d, 'P') ? r : NULL;
        }
        if (next_if(d, 'O')) {
            /* self-reordering reabstraction thunk: from-type to-type sig? 'TJO' kind */
            swift_node *r = mk(d, K_AutoDiffSelfReorderingReabstractionThunk);
            swift_node *sig = pop_kind(d, K_DependentGenericSignature);
            swift_node *to = pop_kind(d, K_Type);
            swift_node *from = pop_kind(d, K_Type);
            r = add(d, add(d, r, from), to);
            add_opt(d, r, sig);
            char kind = next(d);
            if (kind != 'f' && kind != 'r' && kind != 'd' && kind != 'p')
                return NULL;
            return add(d, r, mk_index(d, K_AutoDiffFunctionKind, (uint64_t)(unsigned char)kind));
        }
        return demangle_autodiff(d, K_AutoDiffFunction);
    case 'w':
        switch (next(d)) {
        case 'b': return mk(d, K_BackDeploymentThunk);
        case 'B': return mk(d, K_BackDeploymentFallback);
        case 'S': return mk(d, K_HasSymbolQuery);
        default: return NULL;
        }
    default:
        return NULL;
    }
}

static swift_node *demangle_witness(dm *d)
{
    char c = next(d);
    switch (c) {
    case 'C': return with1(d, K_EnumCase, pop_if(d, is_entity));
    case 'V': return with1(d, K_ValueWitnessTable, pop_kind(d, K_Type));
    case 'v': {
        uint64_t dir;
        switch (next(d)) {
        case 'd': dir = 0; break;
        case 'i': dir = 1; break;
        default: return NULL;
        }
        return with2(d, K_FieldOffset, mk_index(d, K_Directness, dir), pop_if(d, is_entity));
    }
    case 'S': return with1(d, K_ProtocolSelfConformanceWitnessTable, pop_protocol(d));
    case 'P': return with1(d, K_ProtocolWitnessTable, pop_protocol_conformance(d));
    case 'p': return with1(d, K_ProtocolWitnessTablePattern, pop_protocol_conformance(d));
    case 'G': return with1(d, K_GenericProtocolWitnessTable, pop_protocol_conformance(d));
    case 'I': return with1(d, K_GenericProtocolWitnessTableInstantiationFunction, pop_protocol_conformance(d));
    case 'r': return with1(d, K_ResilientProtocolWitnessTable, pop_protocol_conformance(d));
    case 'l': case 'L': {
        swift_node *conf = pop_protocol_conformance(d);
        swift_node *ty = pop_kind(d, K_Type);
        return with2(d, c == 'l' ? K_LazyProtocolWitnessTableAccessor : K_LazyProtocolWitnessTableCacheVariable,
                     ty, conf);
    }
    case 'a': return with1(d, K_ProtocolWitnessTableAccessor, pop_protocol_conformance(d));
    case 't': {
        swift_node *name = pop_if(d, is_decl_name);
        swift_node *conf = pop_protocol_conformance(d);
        return with2(d, K_AssociatedTypeMetadataAccessor, conf, name);
    }
    case 'T': {
        /* protocol-conformance assoc-type-list protocol 'WT' */
        swift_node *proto = pop_kind(d, K_Type);
        swift_node *conforming = pop_assoc_type_path(d);
        swift_node *conf = pop_protocol_conformance(d);
        return with3(d, K_AssociatedTypeWitnessTableAccessor, conf, conforming, proto);
    }
    case 'b': {
        swift_node *proto = pop_protocol(d);
        swift_node *conf = pop_protocol_conformance(d);
        return with2(d, K_BaseWitnessTableAccessor, conf, proto);
    }
    case 'J': {
        swift_node *sig = pop_kind(d, K_DependentGenericSignature);
        swift_node *r = mk(d, K_DifferentiabilityWitness);
        swift_node *n;
        while (r != NULL && (n = pop(d)) != NULL)
            add(d, r, n);
        reverse_children(r, 0);
        char kind = next(d);
        if (kind != 'f' && kind != 'r' && kind != 'd' && kind != 'l')
            return NULL;
        r = add(d, r, mk_index(d, K_Index, (uint64_t)(unsigned char)kind));
        r = add(d, r, index_subset(d));
        if (!next_if(d, 'p'))
            return NULL;
        r = add(d, r, index_subset(d));
        if (!next_if(d, 'r'))
            return NULL;
        return add_opt(d, r, sig);
    }
    case 'O': {
        swift_kind k;
        switch (next(d)) {
        case 'y': k = K_OutlinedCopy; break;
        case 'e': k = K_OutlinedConsume; break;
        case 'r': k = K_OutlinedRetain; break;
        case 's': k = K_OutlinedRelease; break;
        case 'b': case 'B': k = K_OutlinedInitializeWithTake; break;
        case 'c': case 'C': k = K_OutlinedInitializeWithCopy; break;
        case 'd': case 'D': k = K_OutlinedAssignWithTake; break;
        case 'f': case 'F': k = K_OutlinedAssignWithCopy; break;
        case 'h': case 'H': k = K_OutlinedDestroy; break;
        default: return NULL;
        }
        swift_node *sig = pop_kind(d, K_DependentGenericSignature);
        swift_node *r = with1(d, k, pop_kind(d, K_Type));
        return add_opt(d, r, sig);
    }
    default:
        return NULL;
    }
}

static swift_node *demangle_metatype(dm *d)
{
    swift_kind k;
    switch (next(d)) {
    case 'a': k = K_TypeMetadataAccessFunction; break;
    case 'A': return with1(d, K_ReflectionMetadataAssocTypeDescriptor, pop_protocol_conformance(d));
    case 'B': return with1(d, K_ReflectionMetadataBuiltinDescriptor, pop_kind(d, K_Type));
    case 'c': return with1(d, K_ProtocolConformanceDescriptor, pop_protocol_conformance(d));
    case 'C': {
        swift_node *c = pop_type_and_get_child(d);
        if (c == NULL || !is_any_generic((swift_kind)c->kind))
            return NULL;
        return with1(d, K_ReflectionMetadataSuperclassDescriptor, c);
    }
    case 'D': k = K_TypeMetadataDemanglingCache; break;
    case 'f': k = K_FullTypeMetadata; break;
    case 'F': return with1(d, K_ReflectionMetadataFieldDescriptor, pop_kind(d, K_Type));
    case 'i': k = K_TypeMetadataInstantiationFunction; break;
    case 'I': k = K_TypeMetadataInstantiationCache; break;
    case 'l': k = K_TypeMetadataSingletonInitializationCache; break;
    case 'L': k = K_TypeMetadataLazyCache; break;
    case 'm': k = K_Metaclass; break;
    case 'n': k = K_NominalTypeDescriptor; break;
    case 'o': k = K_ClassMetadataBaseOffset; break;
    case 'p': return with1(d, K_ProtocolDescriptor, pop_protocol(d));
    case 'P': k = K_GenericTypeMetadataPattern; break;
    case 'Q': return with1(d, K_OpaqueTypeDescriptor, pop(d));
    case 'r': k = K_TypeMetadataCompletionFunction; break;
    case 'S': return with1(d, K_ProtocolSelfConformanceDescriptor, pop_protocol(d));
    case 'u': k = K_MethodLookupFunction; break;
    case 'U': k = K_ObjCMetadataUpdateFunction; break;
    case 'V': return with1(d, K_PropertyDescriptor, pop_if(d, is_entity));
    case 'X':
        switch (next(d)) {
        case 'M': return with1(d, K_ModuleDescriptor, pop_module(d));
        case 'E': return with1(d, K_ExtensionDescriptor, pop_context(d));
        case 'X': return with1(d, K_AnonymousDescriptor, pop_context(d));
        case 'Y': {
            swift_node *disc = pop(d);
            return with2(d, K_AnonymousDescriptor, pop_context(d), disc);
        }
        default: return NULL;
        }
    default: return NULL;
    }
    return with1(d, k, pop_kind(d, K_Type));
}

static swift_node *demangle_operator_identifier(dm *d)
{
    swift_node *id = pop_kind(d, K_Identifier);
    if (id == NULL)
        return NULL;
    static const char table[] = "& @/= >    <*!|+?%-~   ^ .";
    char buf[1024];
    if (id->text_len >= sizeof buf)
        return NULL;
    for (uint32_t i = 0; i < id->text_len; i++) {
        signed char c = (signed char)id->text[i];
        if (c < 0) {
            buf[i] = (char)c;
            continue;
        }
        if (!is_lower(c))
            return NULL;
        char o = table[c - 'a'];
        if (o == ' ')
            return NULL;
        buf[i] = o;
    }
    switch (next(d)) {
    case 'i': return mk_text(d, K_InfixOperator, buf, id->text_len);
    case 'p': return mk_text(d, K_PrefixOperator, buf, id->text_len);
    case 'P': return mk_text(d, K_PostfixOperator, buf, id->text_len);
    default: return NULL;
    }
}

static swift_node *demangle_local_identifier(dm *d)
{
    if (next_if(d, 'L')) {
        swift_node *disc = pop_kind(d, K_Identifier);
        swift_node *name = pop_if(d, is_decl_name);
        return with2(d, K_PrivateDeclName, disc, name);
    }
    if (next_if(d, 'l')) {
        swift_node *disc = pop_kind(d, K_Identifier);
        return with1(d, K_PrivateDeclName, disc);
    }
    char c = peek(d);
    if ((c >= 'a' && c <= 'j') || (c >= 'A' && c <= 'J')) {
        next(d);
        swift_node *name = pop(d);
        return with2(d, K_RelatedEntityDeclName, mk_text(d, K_Identifier, &c, 1), name);
    }
    swift_node *disc = index_node(d);
    swift_node *name = pop_if(d, is_decl_name);
    return with2(d, K_LocalDeclName, disc, name);
}

static swift_node *demangle_extension(dm *d)
{
    swift_node *sig = pop_kind(d, K_DependentGenericSignature);
    swift_node *module = pop_module(d);
    swift_node *type = pop_type_and_get_any_generic(d);
    swift_node *ext = with2(d, K_Extension, module, type);
    return add_opt(d, ext, sig);
}

static swift_node *pop_any_conformance(dm *d)
{
    return pop_kind(d, K_AnyConformance);
}

static swift_node *demangle_retroactive_conformance(dm *d)
{
    swift_node *idx = index_node(d);
    swift_node *conf = pop_any_conformance(d);
    return with2(d, K_RetroactiveConformance, idx, conf);
}

/* Protocol conformances inside types ('H' operators, Mangling.rst "Protocol conformances"):
 * only retroactive conformances and records use them, and no printed form shows them, so
 * they are parsed to keep the stack right and kept as opaque AnyConformance nodes. */
static swift_node *demangle_conformance_h(dm *d)
{
    char c = next(d);
    switch (c) {
    case 'P': case 'p':
        return with1(d, K_ConformanceRef, pop_protocol(d));
    case 'C': {
        swift_node *list = mk(d, K_TypeList);
        if (pop_kind(d, K_EmptyList) == NULL) {
            bool first;
            do {
                first = pop_kind(d, K_FirstElementMarker) != NULL;
                swift_node *a = pop_any_conformance(d);
                if (a == NULL)
                    return NULL;
                add(d, list, a);
            } while (!first);
        }
        swift_node *ref = pop_kind(d, K_ConformanceRef);
        if (ref == NULL) {
            swift_node *module = pop_module(d);
            ref = with2(d, K_ConformanceRef, pop_protocol(d), module);
        }
        swift_node *ty = pop_kind(d, K_Type);
        return with3(d, K_AnyConformance, ty, ref, list);
    }
    case 'D': {
        swift_node *idx = index_node(d);
        swift_node *proto = pop_protocol(d);
        swift_node *ty = pop_kind(d, K_Type);
        return with3(d, K_AnyConformance, ty, proto, idx);
    }
    case 'I': {
        swift_node *idx = index_node(d);
        swift_node *proto = pop_protocol(d);
        swift_node *nested = pop_any_conformance(d);
        return with3(d, K_AnyConformance, nested, proto, idx);
    }
    case 'A': {
        swift_node *idx = index_node(d);
        swift_node *proto = pop_protocol(d);
        swift_node *ty = pop_kind(d, K_Type);
        swift_node *nested = pop_any_conformance(d);
        return add(d, with3(d, K_AnyConformance, nested, ty, proto), idx);
    }
    case 'c': return with1(d, K_ProtocolConformanceDescriptorRecord, pop_protocol_conformance(d));
    case 'r': return with1(d, K_ProtocolDescriptorRecord, pop_protocol(d));
    case 'n': return with1(d, K_NominalTypeDescriptorRecord, pop_kind(d, K_Type));
    case 'o': return with1(d, K_OpaqueTypeDescriptorRecord, pop(d));
    case 'F': return mk(d, K_AccessibleFunctionRecord);
    default: return NULL;
    }
}

static swift_node *demangle_operator(dm *d);

/* The value witness a two-letter code names (Mangling.rst, "value-witness-kind"), or NULL.
 * The old (Swift 3) mangling has all but the last two, the single-payload enum witnesses. */
static const char *value_witness_name(char a, char b, bool old_mangling)
{
    static const char *const names[][2] = {
        {"al", "allocateBuffer"}, {"ca", "assignWithCopy"}, {"ta", "assignWithTake"},
        {"de", "deallocateBuffer"}, {"xx", "destroy"}, {"XX", "destroyBuffer"},
        {"Xx", "destroyArray"}, {"CP", "initializeBufferWithCopyOfBuffer"},
        {"Cp", "initializeBufferWithCopy"}, {"cp", "initializeWithCopy"},
        {"Tk", "initializeBufferWithTake"}, {"tk", "initializeWithTake"},
        {"pr", "projectBuffer"}, {"TK", "initializeBufferWithTakeOfBuffer"},
        {"Cc", "initializeArrayWithCopy"}, {"Tt", "initializeArrayWithTakeFrontToBack"},
        {"tT", "initializeArrayWithTakeBackToFront"}, {"xs", "storeExtraInhabitant"},
        {"xg", "getExtraInhabitantIndex"}, {"ug", "getEnumTag"},
        {"up", "destructiveProjectEnumData"}, {"ui", "destructiveInjectEnumTag"},
        {"et", "getEnumTagSinglePayload"}, {"st", "storeEnumTagSinglePayload"},
    };
    size_t n = sizeof names / sizeof *names - (old_mangling ? 2 : 0);
    for (size_t i = 0; i < n; i++)
        if (names[i][0][0] == a && names[i][0][1] == b)
            return names[i][1];
    return NULL;
}

static swift_node *demangle_operator(dm *d)
{
    if (++d->depth > MAX_DEPTH)
        return NULL;
    swift_node *r = NULL;
    char c = next(d);
    switch (c) {
    case 'A': r = demangle_multi_substitutions(d); break;
    case 'B': r = demangle_builtin_type(d); break;
    case 'C': r = NULL; {
        swift_node *name = pop_if(d, is_decl_name);
        swift_node *ctx = pop_context(d);
        r = type_of(d, with2(d, K_Class, ctx, name));
        add_subst(d, r);
    } break;
    case 'D': r = with1(d, K_TypeMangling, pop_kind(d, K_Type)); break;
    case 'E': r = demangle_extension(d); break;
    case 'F': r = demangle_plain_function(d); break;
    case 'G': r = demangle_bound_generic_type(d); break;
    case 'H': r = demangle_conformance_h(d); break;
    case 'I': r = demangle_impl_function_type(d); break;
    case 'K': r = mk(d, K_ThrowsAnnotation); break;
    case 'L': r = demangle_local_identifier(d); break;
    case 'M': r = demangle_metatype(d); break;
    case 'N': r = with1(d, K_TypeMetadata, pop_kind(d, K_Type)); break;
    case 'O': case 'P': case 'V': case 'a': {
        swift_kind k = c == 'O' ? K_Enum : c == 'P' ? K_Protocol : c == 'V' ? K_Structure : K_TypeAlias;
        swift_node *name = pop_if(d, is_decl_name);
        swift_node *ctx = pop_context(d);
        r = type_of(d, with2(d, k, ctx, name));
        add_subst(d, r);
        break;
    }
    case 'Q': r = demangle_archetype(d); break;
    case 'R': r = demangle_generic_requirement(d); break;
    case 'S': r = demangle_standard_substitution(d); break;
    case 'T': r = demangle_thunk_or_specialization(d); break;
    case 'W': r = demangle_witness(d); break;
    case 'X': r = demangle_special_type(d); break;
    case 'Y': r = demangle_type_annotation(d); break;
    case 'Z': r = with1(d, K_Static, pop_if(d, is_entity)); break;
    case 'c': r = pop_function_type(d, K_FunctionType); break;
    case 'd': r = mk(d, K_VariadicMarker); break;
    case 'f': r = demangle_function_entity(d); break;
    case 'g': r = demangle_retroactive_conformance(d); break;
    case 'h': r = type_of(d, with1(d, K_Shared, pop_type_and_get_child(d))); break;
    case 'i': r = demangle_subscript(d); break;
    case 'l': r = demangle_generic_signature(d, false); break;
    case 'm': r = type_of(d, with1(d, K_Metatype, pop_kind(d, K_Type))); break;
    case 'n': r = type_of(d, with1(d, K_Owned, pop_type_and_get_child(d))); break;
    case 'o': r = demangle_operator_identifier(d); break;
    case 'p': {
        swift_node *tl = mk(d, K_TypeList);
        if (pop_kind(d, K_EmptyList) == NULL) {
            bool first;
            do {
                first = pop_kind(d, K_FirstElementMarker) != NULL;
                swift_node *p = pop_protocol(d);
                if (p == NULL) {
                    tl = NULL;
                    break;
                }
                add(d, tl, p);
            } while (!first);
            reverse_children(tl, 0);
        }
        r = type_of(d, with1(d, K_ProtocolList, tl));
        break;
    }
    case 'q': r = type_of(d, generic_param_index(d)); break;
    case 'r': r = demangle_generic_signature(d, true); break;
    case 's': r = mk_str(d, K_Module, "Swift"); break;
    case 't': r = pop_tuple(d); break;
    case 'u': {
        swift_node *sig = pop_kind(d, K_DependentGenericSignature);
        swift_node *ty = pop_kind(d, K_Type);
        r = type_of(d, with2(d, K_DependentGenericType, sig, ty));
        break;
    }
    case 'v': r = demangle_accessor(d, demangle_entity(d, K_Variable)); break;
    case 'w': {
        /* value witness: two letters */
        char a = next(d), b = next(d);
        const char *name = value_witness_name(a, b, false);
        if (name != NULL)
            r = with2(d, K_ValueWitness, mk_str(d, K_Identifier, name), pop_kind(d, K_Type));
        break;
    }
    case 'x': r = type_of(d, dependent_param(d, 0, 0)); break;
    case 'y': r = mk(d, K_EmptyList); break;
    case 'z': r = type_of(d, with1(d, K_InOut, pop_type_and_get_child(d))); break;
    case '_': r = mk(d, K_FirstElementMarker); break;
    case '.':
        push_back(d);
        r = mk_text(d, K_Suffix, d->text + d->pos, d->len - d->pos);
        d->pos = d->len;
        break;
    default:
        push_back(d);
        r = demangle_identifier(d);
        break;
    }
    d->depth--;
    return r;
}

/* ---- Swift 3 mangling ("_T", Mangling.rst's "old mangling") ------------------------------
 * A recursive-descent grammar (no node stack) over the same node kinds, so one printer serves
 * both. Recursion depth is bounded by d->depth. */

static swift_node *o_type(dm *d);
static swift_node *o_type_impl(dm *d);
static swift_node *o_context(dm *d);
static swift_node *o_entity(dm *d);
static swift_node *o_global(dm *d);
static swift_node *o_protocol_name(dm *d);
static swift_node *o_generic_signature(dm *d, bool pseudo);

static bool o_index(dm *d, uint64_t *out)
{
    if (next_if(d, '_')) {
        *out = 0;
        return true;
    }
    if (is_digit(peek(d))) {
        int64_t n = natural(d);
        if (n < 0 || !next_if(d, '_'))
            return false;
        *out = (uint64_t)n + 1;
        return true;
    }
    return false;
}

static swift_node *o_index_node(dm *d)
{
    uint64_t i;
    return o_index(d, &i) ? mk_index(d, K_Number, i) : NULL;
}

static swift_node *o_swift_type(dm *d, swift_kind k, const char *name)
{
    return with2(d, k, mk_str(d, K_Module, "Swift"), mk_str(d, K_Identifier, name));
}

static swift_node *o_identifier(dm *d, swift_kind k)
{
    bool puny = next_if(d, 'X');
    bool op = false;
    if (next_if(d, 'o')) {
        op = true;
        if (k != K_Identifier)
            return NULL;
        switch (next(d)) {
        case 'p': k = K_PrefixOperator; break;
        case 'P': k = K_PostfixOperator; break;
        case 'i': k = K_InfixOperator; break;
        default: return NULL;
        }
    }
    int64_t n = natural(d);
    if (n < 0 || (size_t)n > d->len - d->pos)
        return NULL;
    const char *t = d->text + d->pos;
    size_t tl = (size_t)n;
    d->pos += (size_t)n;
    if (puny) {
        t = puny_decode(d, t, tl, &tl);
        if (t == NULL)
            return NULL;
    }
    if (tl == 0)
        return NULL;
    if (op) {
        static const char table[] = "& @/= >    <*!|+?%-~   ^ .";
        char buf[1024];
        if (tl >= sizeof buf)
            return NULL;
        for (size_t i = 0; i < tl; i++) {
            signed char c = (signed char)t[i];
            if (c < 0) {
                buf[i] = (char)c;
                continue;
            }
            if (c < 'a' || c > 'z' || table[c - 'a'] == ' ')
                return NULL;
            buf[i] = table[c - 'a'];
        }
        return mk_text(d, k, buf, tl);
    }
    return mk_text(d, k, t, tl);
}

static swift_node *o_substitution(dm *d)
{
    static const struct { char c; swift_kind k; const char *name; } std[] = {
        {'a', K_Structure, "Array"}, {'b', K_Structure, "Bool"}, {'c', K_Structure, "UnicodeScalar"},
        {'d', K_Structure, "Double"}, {'f', K_Structure, "Float"}, {'i', K_Structure, "Int"},
        {'V', K_Structure, "UnsafeRawPointer"}, {'v', K_Structure, "UnsafeMutableRawPointer"},
        {'P', K_Structure, "UnsafePointer"}, {'p', K_Structure, "UnsafeMutablePointer"},
        {'q', K_Enum, "Optional"}, {'Q', K_Enum, "ImplicitlyUnwrappedOptional"},
        {'R', K_Structure, "UnsafeBufferPointer"}, {'r', K_Structure, "UnsafeMutableBufferPointer"},
        {'S', K_Structure, "String"}, {'u', K_Structure, "UInt"},
    };
    if (next_if(d, 'o'))
        return mk_str(d, K_Module, "__C");
    if (next_if(d, 'C'))
        return mk_str(d, K_Module, "__C_Synthesized");
    /* Swift 1-2 named the standard library module "Ss" (Swift 3 mangles it as a bare 's');
     * no Swift 3 name has an 's' after a substitution 'S', so reading it changes none. */
    if (next_if(d, 's'))
        return mk_str(d, K_Module, "Swift");
    for (size_t i = 0; i < sizeof std / sizeof *std; i++)
        if (next_if(d, std[i].c))
            return o_swift_type(d, std[i].k, std[i].name);
    uint64_t idx;
    if (!o_index(d, &idx) || idx >= d->nsubst)
        return NULL;
    return d->subst[idx];
}

static swift_node *o_module(dm *d)
{
    if (next_if(d, 's'))
        return mk_str(d, K_Module, "Swift");
    if (next_if(d, 'S')) {
        swift_node *m = o_substitution(d);
        return m != NULL && m->kind == K_Module ? m : NULL;
    }
    swift_node *m = o_identifier(d, K_Module);
    add_subst(d, m);
    return m;
}

static swift_node *o_decl_name(dm *d)
{
    if (next_if(d, 'L')) {
        swift_node *disc = o_index_node(d);
        swift_node *name = o_identifier(d, K_Identifier);
        return with2(d, K_LocalDeclName, disc, name);
    }
    if (next_if(d, 'P')) {
        swift_node *disc = o_identifier(d, K_Identifier);
        swift_node *name = o_identifier(d, K_Identifier);
        return with2(d, K_PrivateDeclName, disc, name);
    }
    return o_identifier(d, K_Identifier);
}

static swift_node *o_declaration(dm *d, swift_kind k)
{
    swift_node *ctx = o_context(d);
    swift_node *name = ctx ? o_decl_name(d) : NULL;
    swift_node *decl = with2(d, k, ctx, name);
    add_subst(d, decl);
    return decl;
}

static swift_node *o_protocol_given_context(dm *d, swift_node *ctx)
{
    swift_node *name = o_decl_name(d);
    swift_node *p = with2(d, K_Protocol, ctx, name);
    add_subst(d, p);
    return p;
}

static swift_node *o_protocol_name(dm *d)
{
    swift_node *p;
    if (next_if(d, 'S')) {
        swift_node *sub = o_substitution(d);
        if (sub == NULL)
            return NULL;
        if (sub->kind == K_Protocol)
            p = sub;
        else if (sub->kind == K_Module)
            p = o_protocol_given_context(d, sub);
        else
            return NULL;
    } else if (next_if(d, 's')) {
        p = o_protocol_given_context(d, mk_str(d, K_Module, "Swift"));
    } else {
        p = o_declaration(d, K_Protocol);
    }
    return type_of(d, p);
}

static swift_node *o_nominal_type(dm *d)
{
    if (next_if(d, 'S'))
        return o_substitution(d);
    if (next_if(d, 'V'))
        return o_declaration(d, K_Structure);
    if (next_if(d, 'O'))
        return o_declaration(d, K_Enum);
    if (next_if(d, 'C'))
        return o_declaration(d, K_Class);
    if (next_if(d, 'P'))
        return o_declaration(d, K_Protocol);
    return NULL;
}

static swift_node *o_bound_generic_args(dm *d, swift_node *nominal)
{
    if (nominal == NULL || nominal->nchildren == 0 || ++d->depth > MAX_DEPTH)
        return NULL;
    swift_node *parent = nominal->child[0];
    if (parent->kind != K_Module && parent->kind != K_Function && parent->kind != K_Extension) {
        parent = o_bound_generic_args(d, parent);
        if (parent == NULL || nominal->nchildren < 2)
            return NULL;
        nominal = with2(d, (swift_kind)nominal->kind, parent, nominal->child[1]);
        if (nominal == NULL)
            return NULL;
    }
    swift_node *args = mk(d, K_TypeList);
    while (!next_if(d, '_')) {
        swift_node *t = o_type(d);
        if (t == NULL || d->pos >= d->len)
            return NULL;
        add(d, args, t);
    }
    d->depth--;
    if (args == NULL || args->nchildren == 0)
        return nominal;
    swift_kind k;
    switch (nominal->kind) {
    case K_Class: k = K_BoundGenericClass; break;
    case K_Structure: k = K_BoundGenericStructure; break;
    case K_Enum: k = K_BoundGenericEnum; break;
    default: return NULL;
    }
    return with2(d, k, type_of(d, nominal), args);
}

static swift_node *o_bound_generic_type(dm *d)
{
    return o_bound_generic_args(d, o_nominal_type(d));
}

static bool is_entity_start(char c)
{
    return c == 'F' || c == 'I' || c == 'v' || c == 'P' || c == 's' || c == 'Z' || c == 'C' || c == 'V' ||
           c == 'O';
}

static swift_node *o_context(dm *d)
{
    if (d->pos >= d->len || ++d->depth > MAX_DEPTH)
        return NULL;
    swift_node *r;
    if (next_if(d, 'E')) {
        swift_node *m = o_module(d);
        swift_node *t = m ? o_context(d) : NULL;
        r = with2(d, K_Extension, m, t);
    } else if (next_if(d, 'e')) {
        swift_node *m = o_module(d);
        swift_node *sig = m ? o_generic_signature(d, false) : NULL;
        swift_node *t = sig ? o_context(d) : NULL;
        r = with3(d, K_Extension, m, t, sig);
    } else if (next_if(d, 'S')) {
        r = o_substitution(d);
    } else if (next_if(d, 's')) {
        r = mk_str(d, K_Module, "Swift");
    } else if (next_if(d, 'G')) {
        r = o_bound_generic_type(d);
    } else if (is_entity_start(peek(d))) {
        r = o_entity(d);
    } else {
        r = o_module(d);
    }
    d->depth--;
    return r;
}

static swift_node *o_function_type(dm *d, swift_kind k)
{
    bool throws = next_if(d, 'z');
    bool concurrent = next_if(d, 'y');
    bool async = next_if(d, 'Z');
    swift_node *in = o_type(d);
    swift_node *out = in ? o_type(d) : NULL;
    if (out == NULL)
        return NULL;
    swift_node *f = mk(d, k);
    if (throws)
        add(d, f, mk(d, K_ThrowsAnnotation));
    if (concurrent)
        add(d, f, mk(d, K_ConcurrentFunctionType));
    if (async)
        add(d, f, mk(d, K_AsyncAnnotation));
    f = add(d, f, with1(d, K_ArgumentTuple, in));
    return add(d, f, with1(d, K_ReturnType, out));
}

static swift_node *o_tuple(dm *d, bool variadic)
{
    swift_node *tuple = mk(d, K_Tuple);
    swift_node *el = NULL;
    while (!next_if(d, '_')) {
        if (d->pos >= d->len)
            return NULL;
        el = mk(d, K_TupleElement);
        char c = peek(d);
        if (is_digit(c) || c == 'X' || c == 'o')
            el = add(d, el, o_identifier(d, K_TupleElementName));
        el = add(d, el, o_type(d));
        if (el == NULL)
            return NULL;
        add(d, tuple, el);
    }
    if (variadic && el != NULL)
        add(d, el, mk(d, K_VariadicMarker));
    return tuple;
}

static swift_node *o_generic_param_index(dm *d)
{
    uint64_t depth, index;
    if (next_if(d, 'd')) {
        if (!o_index(d, &depth) || !o_index(d, &index))
            return NULL;
        depth += 1;
    } else if (next_if(d, 'x')) {
        depth = 0;
        index = 0;
    } else {
        if (!o_index(d, &index))
            return NULL;
        depth = 0;
        index += 1;
    }
    return dependent_param(d, depth, index);
}

static swift_node *o_member_type_name(dm *d, swift_node *base)
{
    swift_node *assoc;
    if (next_if(d, 'S')) {
        assoc = o_substitution(d);
        if (assoc == NULL || assoc->kind != K_DependentAssociatedTypeRef)
            return NULL;
    } else {
        swift_node *proto = NULL;
        if (next_if(d, 'P')) {
            proto = o_protocol_name(d);
            if (proto == NULL)
                return NULL;
        }
        swift_node *id = o_identifier(d, K_Identifier);
        if (id == NULL)
            return NULL;
        assoc = mk_text(d, K_DependentAssociatedTypeRef, id->text, id->text_len);
        add_opt(d, assoc, proto);
        add_subst(d, assoc);
    }
    return with2(d, K_DependentMemberType, base, assoc);
}

static swift_node *o_assoc_simple(dm *d)
{
    swift_node *base = o_generic_param_index(d);
    return base ? o_member_type_name(d, type_of(d, base)) : NULL;
}

static swift_node *o_assoc_compound(dm *d)
{
    swift_node *base = o_generic_param_index(d);
    while (base != NULL && !next_if(d, '_')) {
        if (d->pos >= d->len)
            return NULL;
        base = o_member_type_name(d, type_of(d, base));
    }
    return base;
}

static swift_node *o_requirement(dm *d)
{
    swift_node *ty;
    if (next_if(d, 'w'))
        ty = o_assoc_simple(d);
    else if (next_if(d, 'W'))
        ty = o_assoc_compound(d);
    else
        ty = o_generic_param_index(d);
    if (ty == NULL)
        return NULL;
    if (next_if(d, 'z'))
        return with2(d, K_DependentGenericSameTypeRequirement, ty, o_type(d));
    if (next_if(d, 'l')) {
        char c = next(d);
        int64_t size = -1, align = -1;
        switch (c) {
        case 'U': case 'R': case 'N': case 'T':
            break;
        case 'E': case 'M':
            size = natural(d);
            if (size < 0 || !next_if(d, '_'))
                return NULL;
            align = natural(d);
            if (align < 0)
                return NULL;
            break;
        case 'e': case 'm':
            size = natural(d);
            if (size < 0)
                return NULL;
            break;
        default:
            return NULL;
        }
        char name[2] = {c, 0};
        swift_node *r = with2(d, K_DependentGenericLayoutRequirement, ty, mk_str(d, K_Identifier, name));
        if (size >= 0)
            r = add(d, r, mk_index(d, K_Number, (uint64_t)size));
        if (align >= 0)
            r = add(d, r, mk_index(d, K_Number, (uint64_t)align));
        return r;
    }
    swift_node *constraint;
    char c = peek(d);
    if (c == 'C') {
        constraint = o_type(d);
    } else if (c == 'S') {
        next(d);
        swift_node *sub = o_substitution(d);
        if (sub == NULL)
            return NULL;
        swift_node *name;
        if (sub->kind == K_Protocol || sub->kind == K_Class)
            name = sub;
        else if (sub->kind == K_Module)
            name = o_protocol_given_context(d, sub);
        else
            return NULL;
        constraint = type_of(d, name);
    } else {
        constraint = o_protocol_name(d);
    }
    return with2(d, K_DependentGenericConformanceRequirement, ty, constraint);
}

static swift_node *o_generic_signature(dm *d, bool pseudo)
{
    swift_node *sig = mk(d, pseudo ? K_DependentPseudogenericSignature : K_DependentGenericSignature);
    bool any = false;
    while (peek(d) != 'R' && peek(d) != 'r') {
        uint64_t count = 0;
        if (next_if(d, 'z')) {
            count = 0;
        } else if (next_if(d, '_')) {
            count = 1;
        } else if (is_digit(peek(d))) {
            /* Swift 3's demangler reads the count as an unsigned 64-bit number that wraps; the
             * printer names at most 128 parameters, so a huge count costs nothing */
            while (is_digit(peek(d)))
                count = count * 10 + (uint64_t)(next(d) - '0');
            if (!next_if(d, '_'))
                return NULL;
            count += 2;
        } else {
            return NULL;
        }
        add(d, sig, mk_index(d, K_DependentGenericParamCount, count));
        any = true;
    }
    if (!any)
        add(d, sig, mk_index(d, K_DependentGenericParamCount, 1));
    if (next_if(d, 'r'))
        return sig;
    if (!next_if(d, 'R'))
        return NULL;
    while (!next_if(d, 'r')) {
        if (d->pos >= d->len)
            return NULL;
        sig = add(d, sig, o_requirement(d));
        if (sig == NULL)
            return NULL;
    }
    return sig;
}

static swift_node *o_archetype(dm *d)
{
    if (next_if(d, 'Q')) {
        swift_node *root = o_archetype(d);
        swift_node *name = root ? o_identifier(d, K_Identifier) : NULL;
        swift_node *a = with2(d, K_AssociatedTypeRef, root, name);
        add_subst(d, a);
        return a;
    }
    if (next_if(d, 'S')) {
        swift_node *sub = o_substitution(d);
        if (sub == NULL || sub->kind == K_Protocol)
            return NULL;
        swift_node *name = o_identifier(d, K_Identifier);
        swift_node *a = with2(d, K_AssociatedTypeRef, sub, name);
        add_subst(d, a);
        return a;
    }
    if (next_if(d, 's')) {
        swift_node *name = o_identifier(d, K_Identifier);
        swift_node *a = with2(d, K_AssociatedTypeRef, mk_str(d, K_Module, "Swift"), name);
        add_subst(d, a);
        return a;
    }
    if (next_if(d, 'd')) {
        uint64_t depth, index;
        if (!o_index(d, &depth) || !o_index(d, &index))
            return NULL;
        return dependent_param(d, depth + 1, index);
    }
    uint64_t index;
    if (!o_index(d, &index))
        return NULL;
    return dependent_param(d, 0, index);
}

static const char *o_convention(dm *d, int ctx)   /* ctx: 0 parameter, 1 result */
{
    switch (next(d)) {
    case 'a': return ctx == 1 ? "@autoreleased" : NULL;
    case 'd': return "@unowned";
    case 'D': return ctx == 1 ? "@unowned_inner_pointer" : NULL;
    case 'g': return ctx == 0 ? "@guaranteed" : NULL;
    case 'e': return ctx == 0 ? "@deallocating" : NULL;
    case 'i': return ctx == 0 ? "@in" : "@out";
    case 'l': return ctx == 0 ? "@inout" : NULL;
    case 'o': return "@owned";
    default: return NULL;
    }
}

static swift_node *o_impl_param(dm *d, swift_kind k)
{
    if (next_if(d, 'z')) {
        if (k != K_ImplResult)
            return NULL;
        k = K_ImplErrorResult;
    }
    const char *conv = o_convention(d, k == K_ImplParameter ? 0 : 1);
    if (conv == NULL)
        return NULL;
    swift_node *t = o_type(d);
    return with2(d, k, mk_str(d, K_ImplConvention, conv), t);
}

static swift_node *o_impl_function_type(dm *d)
{
    swift_node *type = mk(d, K_ImplFunctionType);
    const char *callee;
    switch (next(d)) {
    case 't': callee = "@convention(thin)"; break;
    case 'o': callee = "@callee_owned"; break;
    case 'd': callee = "@callee_unowned"; break;
    case 'g': callee = "@callee_guaranteed"; break;
    default: return NULL;
    }
    add(d, type, mk_str(d, K_ImplConvention, callee));
    if (next_if(d, 'C')) {
        const char *conv;
        switch (next(d)) {
        case 'b': conv = "@convention(block)"; break;
        case 'c': conv = "@convention(c)"; break;
        case 'm': conv = "@convention(method)"; break;
        case 'O': conv = "@convention(objc_method)"; break;
        case 'w': conv = "@convention(witness_method)"; break;
        default: return NULL;
        }
        add(d, type, mk_str(d, K_ImplFunctionConvention, conv));
    }
    if (next_if(d, 'h'))
        add(d, type, mk_str(d, K_ImplFunctionAttribute, "@Sendable"));
    if (next_if(d, 'H'))
        add(d, type, mk_str(d, K_ImplFunctionAttribute, "@async"));
    bool pseudo = false;
    if (next_if(d, 'G') || (pseudo = next_if(d, 'g')))
        type = add(d, type, o_generic_signature(d, pseudo));
    if (type == NULL || !next_if(d, '_'))
        return NULL;
    while (!next_if(d, '_')) {
        type = add(d, type, o_impl_param(d, K_ImplParameter));
        if (type == NULL)
            return NULL;
    }
    while (!next_if(d, '_')) {
        type = add(d, type, o_impl_param(d, K_ImplResult));
        if (type == NULL)
            return NULL;
    }
    return type;
}

static swift_node *o_builtin(dm *d)
{
    char buf[64];
    if (next_if(d, 'b')) return mk_str(d, K_BuiltinTypeName, "Builtin.BridgeObject");
    if (next_if(d, 'B')) return mk_str(d, K_BuiltinTypeName, "Builtin.UnsafeValueBuffer");
    if (next_if(d, 'f') || next_if(d, 'i')) {
        bool fp = d->text[d->pos - 1] == 'f';
        int64_t size = natural(d);
        if (size <= 0 || size > 4096 || !next_if(d, '_'))
            return NULL;
        snprintf(buf, sizeof buf, "Builtin.%s%lld", fp ? "FPIEEE" : "Int", (long long)size);
        return mk_str(d, K_BuiltinTypeName, buf);
    }
    if (next_if(d, 'v')) {
        int64_t elts = natural(d);
        if (elts <= 0 || elts > 4096 || !next_if(d, 'B'))
            return NULL;
        if (next_if(d, 'i') || next_if(d, 'f')) {
            bool fp = d->text[d->pos - 1] == 'f';
            int64_t size = natural(d);
            if (size <= 0 || size > 4096 || !next_if(d, '_'))
                return NULL;
            snprintf(buf, sizeof buf, "Builtin.Vec%lldx%s%lld", (long long)elts, fp ? "FPIEEE" : "Int",
                     (long long)size);
            return mk_str(d, K_BuiltinTypeName, buf);
        }
        if (next_if(d, 'p')) {
            snprintf(buf, sizeof buf, "Builtin.Vec%lldxRawPointer", (long long)elts);
            return mk_str(d, K_BuiltinTypeName, buf);
        }
        return NULL;
    }
    if (next_if(d, 'O')) return mk_str(d, K_BuiltinTypeName, "Builtin.UnknownObject");
    if (next_if(d, 'o')) return mk_str(d, K_BuiltinTypeName, "Builtin.NativeObject");
    if (next_if(d, 'p')) return mk_str(d, K_BuiltinTypeName, "Builtin.RawPointer");
    if (next_if(d, 't')) return mk_str(d, K_BuiltinTypeName, "Builtin.SILToken");
    if (next_if(d, 'w')) return mk_str(d, K_BuiltinTypeName, "Builtin.Word");
    return NULL;
}

/* 'XM' / 'XPM' representation type: a metatype with its representation spelled out (SIL's
 * thin, thick and Objective-C metatypes), as Swift 3's old demangler reads them. */
static swift_node *o_metatype_repr(dm *d, swift_kind k)
{
    const char *repr;
    switch (next(d)) {
    case 't': repr = "@thin"; break;
    case 'T': repr = "@thick"; break;
    case 'o': repr = "@objc_metatype"; break;
    default: return NULL;
    }
    swift_node *ty = o_type(d);
    return with2(d, k, mk_str(d, K_MetatypeRepresentation, repr), ty);
}

static swift_node *o_type_impl(dm *d)
{
    if (d->pos >= d->len || ++d->depth > MAX_DEPTH)
        return NULL;
    swift_node *r = NULL;
    char c = next(d);
    switch (c) {
    case 'B': r = o_builtin(d); break;
    case 'a': r = o_declaration(d, K_TypeAlias); break;
    case 'b': r = o_function_type(d, K_ObjCBlock); break;
    case 'c': r = o_function_type(d, K_CFunctionPointer); break;
    case 'D': r = with1(d, K_DynamicSelf, o_type(d)); break;
    case 'E': r = next_if(d, 'R') && next_if(d, 'R') ? mk(d, K_ErrorType) : NULL; break;
    case 'F': r = o_function_type(d, K_FunctionType); break;
    case 'f': r = o_function_type(d, K_UncurriedFunctionType); break;
    case 'G': r = o_bound_generic_type(d); break;
    case 'X':
        if (next_if(d, 'b')) r = with1(d, K_SILBoxType, o_type(d));
        else if (next_if(d, 'o')) r = with1(d, K_Unowned, o_type(d));
        else if (next_if(d, 'u')) r = with1(d, K_Unmanaged, o_type(d));
        else if (next_if(d, 'w')) r = with1(d, K_Weak, o_type(d));
        else if (next_if(d, 'F')) r = o_impl_function_type(d);
        else if (next_if(d, 'M')) r = o_metatype_repr(d, K_Metatype);
        else if (next_if(d, 'P') && next_if(d, 'M')) r = o_metatype_repr(d, K_ExistentialMetatype);
        break;
    case 'K': r = o_function_type(d, K_AutoClosureType); break;
    case 'M': r = with1(d, K_Metatype, o_type(d)); break;
    case 'P':
        if (next_if(d, 'M')) {
            r = with1(d, K_ExistentialMetatype, o_type(d));
        } else {
            swift_node *tl = mk(d, K_TypeList);
            while (tl != NULL && !next_if(d, '_')) {
                if (d->pos >= d->len)
                    tl = NULL;
                else
                    tl = add(d, tl, o_protocol_name(d));
            }
            r = with1(d, K_ProtocolList, tl);
        }
        break;
    case 'Q':
        r = next_if(d, 'u') ? mk(d, K_OpaqueReturnType) : o_archetype(d);
        break;
    case 'q': {
        char p = peek(d);
        if (p != 'd' && p != '_' && !is_digit(p)) {
            swift_node *base = o_type(d);
            r = base ? o_member_type_name(d, base) : NULL;
        } else {
            r = o_generic_param_index(d);
        }
        break;
    }
    case 'x': r = dependent_param(d, 0, 0); break;
    case 'w': r = o_assoc_simple(d); break;
    case 'W': r = o_assoc_compound(d); break;
    case 'R': r = with1(d, K_InOut, o_type_impl(d)); break;
    case 'k': r = with1(d, K_NoDerivative, o_type_impl(d)); break;
    case 'S': r = o_substitution(d); break;
    case 'T': r = o_tuple(d, false); break;
    case 't': r = o_tuple(d, true); break;
    case 'u': {
        swift_node *sig = o_generic_signature(d, false);
        r = with2(d, K_DependentGenericType, sig, sig ? o_type(d) : NULL);
        break;
    }
    case 'C': r = o_declaration(d, K_Class); break;
    case 'V': r = o_declaration(d, K_Structure); break;
    case 'O': r = o_declaration(d, K_Enum); break;
    default: break;
    }
    d->depth--;
    return r;
}

static swift_node *o_type(dm *d)
{
    return type_of(d, o_type_impl(d));
}

static swift_node *o_entity(dm *d)
{
    if (++d->depth > MAX_DEPTH)
        return NULL;
    bool is_static = next_if(d, 'Z');
    swift_kind basic;
    if (next_if(d, 'F'))
        basic = K_Function;
    else if (next_if(d, 'v'))
        basic = K_Variable;
    else if (next_if(d, 'I'))
        basic = K_Initializer;
    else if (next_if(d, 'i'))
        basic = K_Subscript;
    else {
        swift_node *n = o_nominal_type(d);
        d->depth--;
        return n;
    }
    swift_node *ctx = o_context(d);
    if (ctx == NULL)
        return NULL;
    swift_kind k;
    bool has_type = true, wrap = false;
    swift_node *name = NULL;
    if (next_if(d, 'D')) { k = K_Deallocator; has_type = false; }
    else if (next_if(d, 'd')) { k = K_Destructor; has_type = false; }
    else if (next_if(d, 'e')) { k = K_IVarInitializer; has_type = false; }
    else if (next_if(d, 'E')) { k = K_IVarDestroyer; has_type = false; }
    else if (next_if(d, 'C')) k = K_Allocator;
    else if (next_if(d, 'c')) k = K_Constructor;
    else if (next_if(d, 'a') || next_if(d, 'l')) {
        bool mut = d->text[d->pos - 1] == 'a';
        wrap = true;
        switch (next(d)) {
        case 'O': k = mut ? K_OwningMutableAddressor : K_OwningAddressor; break;
        case 'o': k = mut ? K_NativeOwningMutableAddressor : K_NativeOwningAddressor; break;
        case 'p': k = mut ? K_NativePinningMutableAddressor : K_NativePinningAddressor; break;
        case 'u': k = mut ? K_UnsafeMutableAddressor : K_UnsafeAddressor; break;
        default: return NULL;
        }
        name = o_decl_name(d);
        if (name == NULL)
            return NULL;
    } else if (next_if(d, 'g') || next_if(d, 'G') || next_if(d, 's') || next_if(d, 'm') ||
               next_if(d, 'w') || next_if(d, 'W')) {
        char a = d->text[d->pos - 1];
        wrap = true;
        k = a == 'g' ? K_Getter : a == 'G' ? K_GlobalGetter : a == 's' ? K_Setter
          : a == 'm' ? K_MaterializeForSet : a == 'w' ? K_WillSet : K_DidSet;
        name = o_decl_name(d);
        if (name == NULL)
            return NULL;
    } else if (next_if(d, 'U') || next_if(d, 'u')) {
        k = d->text[d->pos - 1] == 'U' ? K_ExplicitClosure : K_ImplicitClosure;
        name = o_index_node(d);
        if (name == NULL)
            return NULL;
    } else if (basic == K_Initializer) {
        if (next_if(d, 'A')) {
            k = K_DefaultArgumentInitializer;
            name = o_index_node(d);
            if (name == NULL)
                return NULL;
        } else if (next_if(d, 'i')) {
            k = K_Initializer;
        } else {
            return NULL;
        }
        has_type = false;
    } else {
        k = basic;
        name = o_decl_name(d);
        if (name == NULL)
            return NULL;
    }
    swift_node *e = mk(d, k);
    if (wrap) {
        bool sub = basic == K_Subscript;
        swift_node *w = with1(d, sub ? K_Subscript : K_Variable, ctx);
        if (!sub)
            w = add(d, w, name);
        if (has_type)
            w = add(d, w, o_type(d));
        e = add(d, e, w);
    } else {
        e = add(d, e, ctx);
        if (name != NULL)
            e = add(d, e, name);
        if (has_type)
            e = add(d, e, o_type(d));
    }
    if (is_static)
        e = with1(d, K_Static, e);
    d->depth--;
    return e;
}

static swift_node *o_conformance(dm *d)
{
    swift_node *t = o_type(d);
    swift_node *p = t ? o_protocol_name(d) : NULL;
    swift_node *c = p ? o_context(d) : NULL;
    return with3(d, K_ProtocolConformance, t, p, c);
}

static bool o_fsp_constant(dm *d, swift_node *param)
{
    if (peek(d) == 'f' && d->pos + 1 < d->len && d->text[d->pos + 1] == 'r') {
        d->pos += 2;
        swift_node *name = o_identifier(d, K_Identifier);
        if (name == NULL || !next_if(d, '_'))
            return false;
        add(d, param, fsp_kind(d, FSP_CONST_FUNCTION));
        add(d, param, mk_text(d, K_FunctionSignatureSpecializationParamPayload, name->text, name->text_len));
        return true;
    }
    if (next_if(d, 'g')) {
        swift_node *name = o_identifier(d, K_Identifier);
        if (name == NULL || !next_if(d, '_'))
            return false;
        add(d, param, fsp_kind(d, FSP_CONST_GLOBAL));
        add(d, param, mk_text(d, K_FunctionSignatureSpecializationParamPayload, name->text, name->text_len));
        return true;
    }
    if (next_if(d, 'i') || (peek(d) == 'f' && d->pos + 1 < d->len && d->text[d->pos + 1] == 'l' && (d->pos += 2))) {
        bool integer = d->text[d->pos - 1] == 'i';
        size_t start = d->pos;
        while (d->pos < d->len && peek(d) != '_')
            next(d);
        if (!next_if(d, '_') || d->pos - 1 == start)
            return false;
        add(d, param, fsp_kind(d, integer ? FSP_CONST_INT : FSP_CONST_FLOAT));
        add(d, param, mk_text(d, K_FunctionSignatureSpecializationParamPayload, d->text + start, d->pos - 1 - start));
        return true;
    }
    if (next_if(d, 's')) {
        if (!next_if(d, 'e'))
            return false;
        const char *enc;
        if (next_if(d, '0'))
            enc = "u8";
        else if (next_if(d, '1'))
            enc = "u16";
        else
            return false;
        next_if(d, 'v');   /* a 'v' pads the encoding from the identifier's length */
        swift_node *str = o_identifier(d, K_Identifier);
        if (str == NULL || !next_if(d, '_'))
            return false;
        add(d, param, fsp_kind(d, FSP_CONST_STRING));
        add(d, param, mk_str(d, K_FunctionSignatureSpecializationParamPayload, enc));
        add(d, param, mk_text(d, K_FunctionSignatureSpecializationParamPayload, str->text, str->text_len));
        return true;
    }
    return false;
}

static swift_node *o_specialization(dm *d)
{
    bool not_reabstracted = false;
    if (next_if(d, 'g') || (not_reabstracted = next_if(d, 'r'))) {
        swift_node *spec = mk(d, not_reabstracted ? K_GenericSpecializationNotReAbstracted : K_GenericSpecialization);
        if (next_if(d, 'q'))
            add(d, spec, mk(d, K_IsSerialized));
        int pass = next(d) - '0';
        if (pass < 0 || pass > 9)
            return NULL;
        add(d, spec, mk_index(d, K_SpecializationPassID, (uint64_t)pass));
        while (!next_if(d, '_')) {
            if (d->pos >= d->len)
                return NULL;
            swift_node *param = with1(d, K_GenericSpecializationParam, o_type(d));
            while (param != NULL && !next_if(d, '_')) {
                if (d->pos >= d->len)
                    return NULL;
                param = add(d, param, o_conformance(d));
            }
            spec = add(d, spec, param);
            if (spec == NULL)
                return NULL;
        }
        return spec;
    }
    if (next_if(d, 'f')) {
        swift_node *spec = mk(d, K_FunctionSignatureSpecialization);
        if (next_if(d, 'q'))
            add(d, spec, mk(d, K_IsSerialized));
        int pass = next(d) - '0';
        if (pass < 0 || pass > 9)
            return NULL;
        add(d, spec, mk_index(d, K_SpecializationPassID, (uint64_t)pass));
        uint64_t count = 0;
        while (!next_if(d, '_')) {
            if (d->pos >= d->len || count > 64)
                return NULL;
            swift_node *param = mk_index(d, K_FunctionSignatureSpecializationParam, count);
            if (param == NULL)
                return NULL;
            if (next_if(d, 'n')) {
                if (!next_if(d, '_'))
                    return NULL;
            } else if (peek(d) == 'c' && d->pos + 1 < d->len && d->text[d->pos + 1] == 'p') {
                d->pos += 2;
                if (!o_fsp_constant(d, param))
                    return NULL;
            } else if (peek(d) == 'c' && d->pos + 1 < d->len && d->text[d->pos + 1] == 'l') {
                d->pos += 2;
                swift_node *name = o_identifier(d, K_Identifier);
                if (name == NULL)
                    return NULL;
                add(d, param, fsp_kind(d, FSP_CLOSURE));
                add(d, param, mk_text(d, K_FunctionSignatureSpecializationParamPayload, name->text, name->text_len));
                swift_node *t;
                while (peek(d) != '_' && (t = o_type(d)) != NULL)
                    add(d, param, t);
                if (!next_if(d, '_'))
                    return NULL;
            } else if (next_if(d, 'i')) {
                if (!next_if(d, '_'))
                    return NULL;
                add(d, param, fsp_kind(d, FSP_BOX_TO_VALUE));
            } else if (next_if(d, 'k')) {
                if (!next_if(d, '_'))
                    return NULL;
                add(d, param, fsp_kind(d, FSP_BOX_TO_STACK));
            } else if (next_if(d, 'r')) {
                if (!next_if(d, '_'))
                    return NULL;
                add(d, param, fsp_kind(d, FSP_INOUT_TO_OUT));
            } else {
                uint64_t v = 0;
                if (next_if(d, 'd')) v |= FSP_DEAD;
                if (next_if(d, 'g')) v |= FSP_OWNED_TO_GUARANTEED;
                if (next_if(d, 'o')) v |= FSP_GUARANTEED_TO_OWNED;
                if (next_if(d, 's')) v |= FSP_SROA;
                if (!next_if(d, '_') || v == 0)
                    return NULL;
                add(d, param, fsp_kind(d, v));
            }
            add(d, spec, param);
            count++;
        }
        return spec;
    }
    return NULL;
}

static bool o_reabstract_signature(dm *d, swift_node *thunk)
{
    if (next_if(d, 'G')) {
        if (add(d, thunk, o_generic_signature(d, false)) == NULL)
            return false;
    }
    swift_node *src = o_type(d);
    swift_node *dst = src ? o_type(d) : NULL;
    return dst != NULL && add(d, add(d, thunk, src), dst) != NULL;
}

static swift_node *o_global(dm *d)
{
    if (++d->depth > MAX_DEPTH)
        return NULL;
    swift_node *r = NULL;
    if (next_if(d, 'M')) {
        swift_kind k = K_TypeMetadata;
        if (next_if(d, 'P')) k = K_GenericTypeMetadataPattern;
        else if (next_if(d, 'a')) k = K_TypeMetadataAccessFunction;
        else if (next_if(d, 'L')) k = K_TypeMetadataLazyCache;
        else if (next_if(d, 'm')) k = K_Metaclass;
        else if (next_if(d, 'n')) k = K_NominalTypeDescriptor;
        else if (next_if(d, 'f')) k = K_FullTypeMetadata;
        else if (next_if(d, 'p')) k = K_ProtocolDescriptor;
        r = with1(d, k, k == K_ProtocolDescriptor ? o_protocol_name(d) : o_type(d));
    } else if (peek(d) == 'P' && d->pos + 1 < d->len && d->text[d->pos + 1] == 'A') {
        d->pos += 2;
        swift_kind k = next_if(d, 'o') ? K_PartialApplyObjCForwarder : K_PartialApplyForwarder;
        r = mk(d, k);
        if (d->len - d->pos >= 3 && memcmp(d->text + d->pos, "__T", 3) == 0) {
            d->pos += 3;
            r = add(d, r, o_global(d));
        }
    } else if (next_if(d, 't')) {
        r = with1(d, K_TypeMangling, o_type(d));
    } else if (next_if(d, 'w')) {
        char a = next(d), b = next(d);
        const char *name = value_witness_name(a, b, true);
        if (name != NULL)
            r = with2(d, K_ValueWitness, mk_str(d, K_Identifier, name), o_type(d));
    } else if (next_if(d, 'W')) {
        char c = next(d);
        switch (c) {
        case 'V': r = with1(d, K_ValueWitnessTable, o_type(d)); break;
        case 'o': r = with1(d, K_WitnessTableOffset, o_entity(d)); break;
        case 'v': {
            uint64_t dir;
            if (next_if(d, 'd'))
                dir = 0;
            else if (next_if(d, 'i'))
                dir = 1;
            else
                break;
            r = with2(d, K_FieldOffset, mk_index(d, K_Directness, dir), o_entity(d));
            break;
        }
        case 'P': r = with1(d, K_ProtocolWitnessTable, o_conformance(d)); break;
        case 'G': r = with1(d, K_GenericProtocolWitnessTable, o_conformance(d)); break;
        case 'I': r = with1(d, K_GenericProtocolWitnessTableInstantiationFunction, o_conformance(d)); break;
        case 'l': case 'L': {
            swift_node *t = o_type(d);
            r = with2(d, c == 'l' ? K_LazyProtocolWitnessTableAccessor : K_LazyProtocolWitnessTableCacheVariable,
                      t, t ? o_conformance(d) : NULL);
            break;
        }
        case 'a': r = with1(d, K_ProtocolWitnessTableAccessor, o_conformance(d)); break;
        case 't': {
            swift_node *conf = o_conformance(d);
            r = with2(d, K_AssociatedTypeMetadataAccessor, conf, conf ? o_decl_name(d) : NULL);
            break;
        }
        case 'T': {
            swift_node *conf = o_conformance(d);
            swift_node *name = conf ? o_decl_name(d) : NULL;
            r = with3(d, K_AssociatedTypeWitnessTableAccessor, conf, name, name ? o_protocol_name(d) : NULL);
            break;
        }
        default: break;
        }
    } else if (next_if(d, 'T')) {
        if (next_if(d, 'R') || next_if(d, 'r')) {
            swift_node *t = mk(d, d->text[d->pos - 1] == 'R' ? K_ReabstractionThunkHelper : K_ReabstractionThunk);
            r = t != NULL && o_reabstract_signature(d, t) ? t : NULL;
        } else if (next_if(d, 'W')) {
            swift_node *conf = o_conformance(d);
            r = with2(d, K_ProtocolWitness, conf, conf ? o_entity(d) : NULL);
        }
    } else {
        r = o_entity(d);
    }
    d->depth--;
    return r;
}

static swift_node *demangle_old_symbol(dm *d)
{
    d->pos = 2;   /* "_T" */
    d->swift3 = true;
    swift_node *top = mk(d, K_Global);
    if (top == NULL)
        return NULL;
    if (d->len - d->pos >= 2 && memcmp(d->text + d->pos, "TS", 2) == 0) {
        d->pos += 2;
        do {
            top = add(d, top, o_specialization(d));
            if (top == NULL)
                return NULL;
            d->nsubst = 0;   /* the specialization header shares no substitutions */
            if (d->len - d->pos >= 4 && memcmp(d->text + d->pos, "_TTS", 4) == 0)
                d->pos += 4;
            else
                break;
        } while (1);
        if (d->len - d->pos < 2 || memcmp(d->text + d->pos, "_T", 2) != 0)
            return NULL;
        d->pos += 2;
    } else if (d->len - d->pos >= 2 && d->text[d->pos] == 'T') {
        char c = d->text[d->pos + 1];
        swift_kind k = c == 'o' ? K_ObjCAttribute : c == 'O' ? K_NonObjCAttribute : c == 'D' ? K_DynamicAttribute : K__COUNT;
        if (k != K__COUNT) {
            d->pos += 2;
            add(d, top, mk(d, k));
        }
    }
    top = add(d, top, o_global(d));
    if (top == NULL || d->failed)
        return NULL;
    if (d->pos < d->len)
        add(d, top, mk_text(d, K_Suffix, d->text + d->pos, d->len - d->pos));
    return d->failed ? NULL : top;
}

/* ---- symbols ------------------------------------------------------------------------------ */

/* prefix_len - length of the Swift mangling prefix of `s`, 0 if none */
static size_t prefix_len(const char *s, size_t len, bool *old_labels)
{
    *old_labels = false;
    if (len >= 3 && memcmp(s, "_T0", 3) == 0) {
        *old_labels = true;
        return 3;
    }
    if (len >= 3 && s[0] == '_' && s[1] == '$' && (s[2] == 's' || s[2] == 'S' || s[2] == 'e'))
        return 3;
    if (len >= 2 && s[0] == '$' && (s[1] == 's' || s[1] == 'S' || s[1] == 'e'))
        return 2;
    if (len >= 14 && memcmp(s, "@__swiftmacro_", 14) == 0)
        return 14;
    return 0;
}

static swift_node *demangle_symbol(dm *d)
{
    bool old = false;
    size_t p = prefix_len(d->text, d->len, &old);
    if (p == 0) {
        if (d->len >= 3 && d->text[0] == '_' && d->text[1] == 'T')
            return demangle_old_symbol(d);
        return NULL;
    }
    d->old_fn_labels = old;
    bool macro = p == 14;
    d->pos = p;
    /* a symbol may end in ".suffix" or a clang-generated "$..." is not ours */
    while (d->pos < d->len && !d->failed) {
        swift_node *n = demangle_operator(d);
        if (n == NULL)
            return NULL;
        push(d, n);
    }
    if (d->failed)
        return NULL;
    swift_node *top = mk(d, K_Global);
    swift_node *parent = top;
    swift_node *attr;
    while ((attr = pop_if(d, is_function_attr)) != NULL) {
        add(d, parent, attr);
        if (attr->kind == K_PartialApplyForwarder || attr->kind == K_PartialApplyObjCForwarder)
            parent = attr;
    }
    for (size_t i = 0; i < d->nstack; i++) {
        swift_node *n = d->stack[i];
        if (n->kind == K_Type && n->nchildren == 1)
            add(d, parent, n->child[0]);
        else
            add(d, parent, n);
    }
    (void)macro;
    if (top == NULL || top->nchildren == 0 || d->failed)
        return NULL;
    return top;
}

size_t swift_demangle_buf(char *buf, size_t cap, const char *name, size_t len, bool simplified)
{
    dm d;
    memset(&d, 0, sizeof d);
    d.text = name;
    d.len = len;
    swift_node *root = demangle_symbol(&d);
    size_t n = 0;
    if (root != NULL)
        n = simplified && d.swift3 ? swift_print_swift3(buf, cap, root) : swift_print(buf, cap, root, simplified);
    dm_free(&d);
    return n;
}
