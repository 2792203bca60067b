/*
 * swift_print - the Swift demangler's node tree as text, in two forms:
 *   full        what `swift demangle` prints: module-qualified names, entity types,
 *               specialization arguments, unmangled suffixes;
 *   simplified  what `swift demangle --simplified`, atos and Xcode's crash reports print:
 *               no modules, argument labels instead of types (`bar.bas(zim:)`), `specialized`,
 *               `thunk for`, `partial apply for`, `closure #1 in f()`.
 * The forms differ only in the options below (Swift's DemangleOptions and its
 * SimplifiedUIDemangleOptions()), plus the Swift 3-era simplified style for Swift 3's "_T"
 * names (print3, swift_print_swift3); the output is cut off at the caller's capacity, which
 * counts as failure, and recursion is bounded.
 */
#include "demangle/swift_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_PRINT_DEPTH 192

typedef struct {
    bool module_names;          /* print "Swift." etc. */
    bool extension_contexts;    /* "(extension in M):" */
    bool unmangled_suffix;      /* ` with unmangled suffix "..."` */
    bool generic_specializations;
    bool protocol_conformances;
    bool where_clauses;
    bool entity_types;          /* ` : Type` after variables */
    bool function_arg_types;    /* `(Swift.Int) -> ()` rather than `(_:)` */
    bool shorten_partial_apply, shorten_thunk, shorten_value_witness;
    bool private_discriminators;
    bool async_resume_partial;
    bool swift3;                /* Swift 3-era simplified style (print3) */
} options;

typedef struct {
    char *buf;
    size_t cap, len;
    bool bad;
    int depth;
    bool spec_prefix_printed;
    options o;
} printer;

static void out(printer *p, const char *s, size_t n)
{
    if (p->bad)
        return;
    if (p->len + n >= p->cap) {
        p->bad = true;
        return;
    }
    memcpy(p->buf + p->len, s, n);
    p->len += n;
}

static void outs(printer *p, const char *s)
{
    out(p, s, strlen(s));
}

static void outc(printer *p, char c)
{
    out(p, &c, 1);
}

static void outu(printer *p, uint64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    out(p, b, (size_t)n);
}

static void text(printer *p, const swift_node *n)
{
    if (n->has_text)
        out(p, n->text, n->text_len);
}

static const swift_node *child(const swift_node *n, uint32_t i)
{
    return n != NULL && i < n->nchildren ? n->child[i] : NULL;
}

static const swift_node *child_of_kind(const swift_node *n, swift_kind k)
{
    for (uint32_t i = 0; n != NULL && i < n->nchildren; i++)
        if (n->child[i]->kind == k)
            return n->child[i];
    return NULL;
}

static bool text_is(const swift_node *n, const char *s)
{
    return n != NULL && n->has_text && n->text_len == strlen(s) && memcmp(n->text, s, n->text_len) == 0;
}

static const swift_node *print(printer *p, const swift_node *n, bool as_prefix);

static void print_children(printer *p, const swift_node *n, const char *sep)
{
    for (uint32_t i = 0; n != NULL && i < n->nchildren; i++) {
        if (i > 0 && sep != NULL)
            outs(p, sep);
        print(p, n->child[i], false);
    }
}

/* ---- types ------------------------------------------------------------------------------ */

static const swift_node *skip_type(const swift_node *n)
{
    while (n != NULL && n->kind == K_Type && n->nchildren > 0)
        n = n->child[0];
    return n;
}

static bool is_simple_type(const swift_node *n)
{
    n = skip_type(n);
    if (n == NULL)
        return false;
    switch (n->kind) {
    case K_AssociatedTypeRef: case K_BoundGenericClass: case K_BoundGenericEnum:
    case K_BoundGenericStructure: case K_BoundGenericProtocol: case K_BoundGenericOtherNominalType:
    case K_BoundGenericTypeAlias: case K_BuiltinTypeName: case K_Class: case K_DependentGenericType:
    case K_DependentMemberType: case K_DependentGenericParamType: case K_DynamicSelf: case K_Enum:
    case K_ErrorType: case K_ExistentialMetatype: case K_Metatype: case K_MetatypeRepresentation:
    case K_Module: case K_Tuple: case K_Protocol: case K_ProtocolSymbolicReference:
    case K_ReturnType: case K_SILBoxType: case K_Structure: case K_OtherNominalType:
    case K_TupleElementName: case K_TypeAlias: case K_TypeList: case K_TypeSymbolicReference:
    case K_OpaqueType: case K_OpaqueReturnType: case K_Identifier:
        return true;
    case K_ProtocolList:
        return child(child(n, 0), 0) == NULL || child(n, 0)->nchildren <= 1;
    default:
        return false;
    }
}

static bool need_space_before_type(const swift_node *n)
{
    n = skip_type(n);
    if (n == NULL)
        return true;
    switch (n->kind) {
    case K_FunctionType: case K_NoEscapeFunctionType: case K_UncurriedFunctionType:
    case K_DependentGenericType:
        return false;
    default:
        return true;
    }
}

static bool is_swift_named(const swift_node *nominal, const char *name)
{
    /* nominal: Structure/Enum with children (Module "Swift", Identifier name) */
    return nominal != NULL && nominal->nchildren >= 2 && nominal->child[0]->kind == K_Module &&
           text_is(nominal->child[0], "Swift") && text_is(nominal->child[1], name);
}

static void print_bound_generic_no_sugar(printer *p, const swift_node *n)
{
    print(p, child(n, 0), false);
    outc(p, '<');
    print_children(p, child(n, 1), ", ");
    outc(p, '>');
}

static void print_bound_generic(printer *p, const swift_node *n)
{
    if (n->nchildren < 2)
        return;
    if (n->nchildren != 2 || n->kind == K_BoundGenericClass) {
        print_bound_generic_no_sugar(p, n);
        return;
    }
    if (n->kind == K_BoundGenericProtocol) {
        print_children(p, child(n, 1), NULL);
        outs(p, " as ");
        print(p, child(n, 0), false);
        return;
    }
    const swift_node *unbound = skip_type(child(n, 0));
    const swift_node *args = child(n, 1);
    if (unbound != NULL && unbound->kind == K_Enum && args->nchildren == 1 &&
        (is_swift_named(unbound, "Optional") || is_swift_named(unbound, "ImplicitlyUnwrappedOptional"))) {
        const swift_node *t = child(args, 0);
        bool parens = !is_simple_type(t);
        if (parens)
            outc(p, '(');
        print(p, t, false);
        if (parens)
            outc(p, ')');
        outc(p, is_swift_named(unbound, "Optional") ? '?' : '!');
        return;
    }
    if (unbound != NULL && unbound->kind == K_Structure && args->nchildren == 1 &&
        is_swift_named(unbound, "Array")) {
        outc(p, '[');
        print(p, child(args, 0), false);
        outc(p, ']');
        return;
    }
    if (unbound != NULL && unbound->kind == K_Structure && args->nchildren == 2 &&
        is_swift_named(unbound, "Dictionary")) {
        outc(p, '[');
        print(p, child(args, 0), false);
        outs(p, " : ");
        print(p, child(args, 1), false);
        outc(p, ']');
        return;
    }
    print_bound_generic_no_sugar(p, n);
}

static void print_function_parameters(printer *p, const swift_node *labels, const swift_node *argtuple,
                                      bool show_types)
{
    if (argtuple == NULL || argtuple->kind != K_ArgumentTuple) {
        p->bad = true;
        return;
    }
    const swift_node *params = skip_type(child(argtuple, 0));
    if (params == NULL) {
        p->bad = true;
        return;
    }
    if (params->kind != K_Tuple) {
        if (show_types) {
            outc(p, '(');
            print(p, params, false);
            outc(p, ')');
        } else {
            outs(p, "(_:)");
        }
        return;
    }
    bool has_labels = labels != NULL && labels->nchildren > 0;
    outc(p, '(');
    for (uint32_t i = 0; i < params->nchildren; i++) {
        const swift_node *param = params->child[i];
        if (i > 0 && show_types)
            outs(p, ", ");
        if (has_labels) {
            const swift_node *l = child(labels, i);
            if (l != NULL && l->kind == K_Identifier)
                text(p, l);
            else
                outc(p, '_');
            outc(p, ':');
        } else if (!show_types) {
            const swift_node *l = child_of_kind(param, K_TupleElementName);
            if (l != NULL)
                text(p, l);
            else
                outc(p, '_');
            outc(p, ':');
        }
        if (has_labels && show_types)
            outc(p, ' ');
        if (show_types)
            print(p, param, false);
    }
    outc(p, ')');
}

static void print_function_type(printer *p, const swift_node *labels, const swift_node *fn)
{
    uint32_t i = 0;
    bool sendable = false, async = false, sending_result = false;
    const swift_node *diff = NULL, *thrown = NULL, *self_dependence = NULL;
    for (; i < fn->nchildren; i++) {
        const swift_node *c = fn->child[i];
        if (c->kind == K_SelfLifetimeDependence)
            self_dependence = c;
        else if (c->kind == K_SendingResultFunctionType)
            sending_result = true;
        else if (c->kind == K_IsolatedAnyFunctionType || c->kind == K_GlobalActorFunctionType)
            print(p, c, false);
        else if (c->kind == K_DifferentiableFunctionType)
            diff = c;
        else if (c->kind == K_ThrowsAnnotation || c->kind == K_TypedThrowsAnnotation)
            thrown = c;
        else if (c->kind == K_ConcurrentFunctionType)
            sendable = true;
        else if (c->kind == K_AsyncAnnotation)
            async = true;
        else
            break;
    }
    if (diff != NULL)
        text(p, diff);
    if (sendable)
        outs(p, "@Sendable ");
    if (self_dependence != NULL && p->o.function_arg_types) {
        outs(p, "(self lifetime dependence: ");
        text(p, self_dependence);
        outs(p, ") ");
    }
    print_function_parameters(p, labels, child(fn, i), p->o.function_arg_types);
    if (!p->o.function_arg_types)
        return;
    if (async)
        outs(p, " async");
    if (thrown != NULL)
        print(p, thrown, false);
    outs(p, " -> ");
    if (sending_result)
        outs(p, "transferring ");
    print(p, child(fn, i + 1), false);
}

/* An impl function type prints as `attrs (inputs) -> (results)`: this opens the next
 * parenthesized section, the inputs (after the attributes and any `@substituted` pattern) or
 * the results (after ` -> ` and any `sending`). */
static void impl_open_section(printer *p, bool inputs, const swift_node *pattern,
                              const swift_node *sending)
{
    if (inputs) {
        if (pattern != NULL) {
            outs(p, "@substituted ");
            print(p, child(pattern, 0), false);
            outc(p, ' ');
        }
    } else {
        outs(p, ") -> ");
        if (sending != NULL) {
            text(p, sending);
            outc(p, ' ');
        }
    }
    outc(p, '(');
}

static void print_impl_function_type(printer *p, const swift_node *fn)
{
    const swift_node *pattern = NULL, *invocation = NULL, *sending = NULL;
    enum { ATTRS, INPUTS, RESULTS } state = ATTRS;
    for (uint32_t i = 0; i < fn->nchildren; i++) {
        const swift_node *c = fn->child[i];
        int target = -1;
        if (c->kind == K_ImplParameter)
            target = INPUTS;
        else if (c->kind == K_ImplResult || c->kind == K_ImplYield || c->kind == K_ImplErrorResult)
            target = RESULTS;
        if (target >= 0) {
            if ((int)state == target)
                outs(p, ", ");
            for (; (int)state < target; state++)
                impl_open_section(p, state == ATTRS, pattern, sending);
            print(p, c, false);
        } else if (c->kind == K_ImplPatternSubstitutions) {
            pattern = c;
        } else if (c->kind == K_ImplInvocationSubstitutions) {
            invocation = c;
        } else if (c->kind == K_ImplSendingResult) {
            sending = c;
        } else {
            print(p, c, false);
            outc(p, ' ');
        }
    }
    for (; state < RESULTS; state++)
        impl_open_section(p, state == ATTRS, pattern, sending);
    outc(p, ')');
    if (pattern != NULL) {
        outs(p, " for <");
        print_children(p, child(pattern, 1), NULL);
        outc(p, '>');
    }
    if (invocation != NULL) {
        outs(p, " for <");
        print_children(p, child(invocation, 0), NULL);
        outc(p, '>');
    }
}

/* ---- entities --------------------------------------------------------------------------- */

typedef enum { NO_TYPE, WITH_COLON, FUNCTION_STYLE } type_printing;

static bool should_print_context(printer *p, const swift_node *ctx)
{
    (void)p;
    if (ctx->kind == K_Module && ctx->text_len >= 14 && memcmp(ctx->text, "__lldb_expr_", 12) == 0)
        return true;
    return true;
}

static void print_entity_type(printer *p, const swift_node *entity, const swift_node *type,
                              const swift_node *generic_args)
{
    const swift_node *labels = child_of_kind(entity, K_LabelList);
    if (labels != NULL && labels->nchildren == 0 && generic_args == NULL && type->kind != K_FunctionType &&
        type->kind != K_NoEscapeFunctionType && type->kind != K_DependentGenericType)
        labels = NULL;   /* e.g. a variable of @convention(c) function type keeps its convention */
    if (labels != NULL || generic_args != NULL) {
        if (generic_args != NULL) {
            outc(p, '<');
            print_children(p, generic_args, ", ");
            outc(p, '>');
        }
        if (type->kind == K_DependentGenericType) {
            if (generic_args == NULL)
                print(p, child(type, 0), false);
            const swift_node *dep = child(type, 1);
            if (need_space_before_type(dep))
                outc(p, ' ');
            type = skip_type(dep);
            if (type == NULL) {
                p->bad = true;
                return;
            }
        }
        if (type->kind != K_FunctionType && type->kind != K_NoEscapeFunctionType &&
            type->kind != K_UncurriedFunctionType && type->kind != K_CFunctionPointer &&
            type->kind != K_ThinFunctionType) {
            print(p, type, false);
            return;
        }
        print_function_type(p, labels, type);
    } else {
        print(p, type, false);
    }
}

static const swift_node *print_entity(printer *p, const swift_node *entity, bool as_prefix,
                                      type_printing tp, bool has_name, const char *extra_name,
                                      int64_t extra_index, const char *overwrite_name)
{
    const swift_node *generic_args = NULL;
    if (entity->kind == K_BoundGenericFunction) {
        generic_args = child(entity, 1);
        entity = child(entity, 0);
        if (entity == NULL) {
            p->bad = true;
            return NULL;
        }
    }
    if (tp == FUNCTION_STYLE && !p->o.function_arg_types && !p->o.entity_types) {
        /* simplified: functions keep their labels "(x:)", closures nothing */
    }
    bool multi_word = extra_name != NULL && strchr(extra_name, ' ') != NULL;
    bool local_name = has_name && child(entity, 1) != NULL && child(entity, 1)->kind == K_LocalDeclName;
    if (local_name)
        multi_word = true;
    if (as_prefix && (tp != NO_TYPE || multi_word))
        return entity;
    const swift_node *postfix = NULL;
    const swift_node *ctx = child(entity, 0);
    if (ctx == NULL) {
        p->bad = true;
        return NULL;
    }
    if (should_print_context(p, ctx)) {
        if (multi_word) {
            postfix = ctx;
        } else {
            size_t at = p->len;
            postfix = print(p, ctx, true);
            if (p->len != at)
                outc(p, '.');
        }
    }
    if (has_name || overwrite_name != NULL) {
        if (extra_name != NULL && multi_word) {
            outs(p, extra_name);
            if (extra_index >= 0)
                outu(p, (uint64_t)extra_index);
            outs(p, " of ");
            extra_name = NULL;
            extra_index = -1;
        }
        size_t at = p->len;
        if (overwrite_name != NULL) {
            outs(p, overwrite_name);
        } else {
            const swift_node *name = child(entity, 1);
            if (name == NULL) {
                p->bad = true;
                return NULL;
            }
            if (name->kind != K_PrivateDeclName)
                print(p, name, false);
            const swift_node *priv = child_of_kind(entity, K_PrivateDeclName);
            if (priv != NULL)
                print(p, priv, false);
        }
        if (p->len != at && extra_name != NULL)
            outc(p, '.');
    }
    if (extra_name != NULL) {
        outs(p, extra_name);
        if (extra_index >= 0)
            outu(p, (uint64_t)extra_index);
    }
    if (tp != NO_TYPE) {
        const swift_node *type = child_of_kind(entity, K_Type);
        if (type == NULL || type->nchildren < 1) {
            p->bad = true;
            return NULL;
        }
        type = type->child[0];
        if (tp == FUNCTION_STYLE) {
            const swift_node *t = type;
            while (t != NULL && t->kind == K_DependentGenericType)
                t = skip_type(child(t, 1));
            if (t == NULL || (t->kind != K_FunctionType && t->kind != K_NoEscapeFunctionType &&
                              t->kind != K_UncurriedFunctionType && t->kind != K_CFunctionPointer &&
                              t->kind != K_ThinFunctionType))
                tp = WITH_COLON;
        }
        if (tp == WITH_COLON) {
            if (p->o.entity_types) {
                outs(p, " : ");
                print_entity_type(p, entity, type, generic_args);
            }
        } else {
            if (multi_word || need_space_before_type(type))
                outc(p, ' ');
            print_entity_type(p, entity, type, generic_args);
        }
    }
    if (!as_prefix && postfix != NULL) {
        if (entity->kind == K_DefaultArgumentInitializer || entity->kind == K_Initializer ||
            entity->kind == K_PropertyWrapperBackingInitializer ||
            entity->kind == K_PropertyWrapperInitFromProjectedValue)
            outs(p, " of ");
        else
            outs(p, " in ");
        print(p, postfix, false);
        postfix = NULL;
    }
    return postfix;
}

static const swift_node *print_storage(printer *p, const swift_node *n, bool as_prefix, const char *extra)
{
    if (n == NULL) {
        p->bad = true;
        return NULL;
    }
    if (n->kind == K_Variable)
        return print_entity(p, n, as_prefix, WITH_COLON, true, extra, -1, NULL);
    if (n->kind == K_Subscript)
        return print_entity(p, n, as_prefix, WITH_COLON, false, extra, -1, "subscript");
    print(p, n, false);
    outc(p, '.');
    outs(p, extra);
    return NULL;
}

static void print_spec_prefix(printer *p, const swift_node *n, const char *what)
{
    if (!p->o.generic_specializations) {
        if (!p->spec_prefix_printed) {
            outs(p, "specialized ");
            p->spec_prefix_printed = true;
        }
        return;
    }
    outs(p, what);
    outs(p, " <");
    const char *sep = "";
    int arg = 0;
    for (uint32_t i = 0; i < n->nchildren; i++) {
        const swift_node *c = n->child[i];
        switch (c->kind) {
        case K_SpecializationPassID:
            break;
        case K_IsSerialized:
            outs(p, sep);
            sep = ", ";
            outs(p, "serialized");
            break;
        default:
            if (c->nchildren > 0) {
                outs(p, sep);
                sep = ", ";
                if (c->kind == K_FunctionSignatureSpecializationParam) {
                    outs(p, "Arg[");
                    outu(p, (uint64_t)arg);
                    outs(p, "] = ");
                    print(p, c, false);
                } else if (c->kind == K_FunctionSignatureSpecializationReturn) {
                    outs(p, "Return = ");
                    print(p, c, false);
                } else {
                    print(p, c, false);
                }
            }
            arg++;
            break;
        }
    }
    outs(p, "> of ");
}

static void print_fsp_kind(printer *p, uint64_t raw)
{
    static const struct { uint64_t bit; const char *name; } flags[] = {
        {1 << 10, "Existential To Protocol Constrained Generic"}, {1 << 6, "Dead"},
        {1 << 7, "Owned To Guaranteed"}, {1 << 9, "Guaranteed To Owned"}, {1 << 8, "Exploded"},
    };
    bool any = false;
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (raw & flags[i].bit) {
            if (any)
                outs(p, " and ");
            outs(p, flags[i].name);
            any = true;
        }
    if (any)
        return;
    static const char *const kinds[] = {
        "Constant Propagated Function", "Constant Propagated Global", "Constant Propagated Integer",
        "Constant Propagated Float", "Constant Propagated String", "Closure Propagated",
        "Value Promoted from Box", "Box To Stack", "In Out To Out", "Constant Propagated KeyPath",
    };
    if (raw < sizeof kinds / sizeof *kinds)
        outs(p, kinds[raw]);
}

/* payload: a mangled name is shown demangled (in the full form, as Swift does) */
static void print_payload(printer *p, const swift_node *n)
{
    static _Thread_local int nesting;   /* payloads may nest: bound the recursion */
    char tmp[2048];
    char name[1024];
    if (n->text_len < sizeof name && nesting < 4) {
        memcpy(name, n->text, n->text_len);
        name[n->text_len] = '\0';
        nesting++;
        size_t k = swift_demangle_buf(tmp, sizeof tmp, name, n->text_len, false);
        nesting--;
        if (k > 0) {
            outs(p, tmp);
            return;
        }
    }
    text(p, n);
}

static void print_fsp_param(printer *p, const swift_node *n)
{
    uint32_t i = 0;
    while (i < n->nchildren) {
        const swift_node *k = n->child[i];
        uint64_t v = k->index;
        switch (v) {
        case 6: case 7: case 8:
            print(p, n->child[i++], false);
            break;
        case 0: case 1:
            outc(p, '[');
            print(p, n->child[i++], false);
            outs(p, " : ");
            if (i < n->nchildren)
                print_payload(p, n->child[i++]);
            outc(p, ']');
            break;
        case 2: case 3:
            outc(p, '[');
            print(p, n->child[i++], false);
            outs(p, " : ");
            if (i < n->nchildren)
                text(p, n->child[i++]);
            outc(p, ']');
            break;
        case 4:
            outc(p, '[');
            print(p, n->child[i++], false);
            outs(p, " : ");
            if (i < n->nchildren)
                text(p, n->child[i++]);
            outc(p, '\'');
            if (i < n->nchildren)
                print_payload(p, n->child[i++]);
            outs(p, "']");
            break;
        case 9:
            outc(p, '[');
            print(p, n->child[i++], false);
            outs(p, " : ");
            if (i < n->nchildren)
                text(p, n->child[i++]);
            outc(p, '<');
            for (bool first = true; i < n->nchildren && n->child[i]->kind == K_Type; first = false) {
                if (!first)
                    outc(p, ',');
                print(p, n->child[i++], false);
            }
            outs(p, ">]");
            break;
        case 5:
            outc(p, '[');
            print(p, n->child[i++], false);
            outs(p, " : ");
            if (i < n->nchildren)
                print_payload(p, n->child[i++]);
            outs(p, ", Argument Types : [");
            while (i < n->nchildren && n->child[i]->kind == K_Type) {
                print(p, n->child[i++], false);
                if (i < n->nchildren && n->child[i]->has_text)
                    outs(p, ", ");
            }
            outc(p, ']');   /* sic: swift-demangle leaves the outer '[' open here */
            break;
        default:
            print(p, n->child[i++], false);
            break;
        }
    }
}

static void print_prefixed(printer *p, const char *what, const swift_node *n)
{
    outs(p, what);
    print(p, child(n, 0), false);
}

static void print_generic_signature(printer *p, const swift_node *n)
{
    uint32_t depth = 0;
    if (n->nchildren == 0 || n->child[0]->kind != K_DependentGenericParamCount)
        outc(p, '<');
    for (; depth < n->nchildren && n->child[depth]->kind == K_DependentGenericParamCount; depth++) {
        outs(p, depth == 0 ? "<" : "><");
        uint64_t count = n->child[depth]->index;
        for (uint64_t i = 0; i < count; i++) {
            if (i != 0)
                outs(p, ", ");
            if (i >= 128) {
                outs(p, "...");
                break;
            }
            char name[32];
            size_t k = 0;
            uint64_t x = i;
            do {
                name[k++] = (char)('A' + x % 26);
                x /= 26;
            } while (x && k < 16);
            out(p, name, k);
            if (depth != 0)
                outu(p, depth);
        }
    }
    if (depth != n->nchildren && !p->o.where_clauses && p->o.swift3)
        outs(p, " where ...");
    if (depth != n->nchildren && p->o.where_clauses) {
        outs(p, " where ");
        for (uint32_t i = depth; i < n->nchildren; i++) {
            if (i > depth)
                outs(p, ", ");
            print(p, n->child[i], false);
        }
    }
    outc(p, '>');
}

static const char *layout_name(char c)
{
    switch (c) {
    case 'U': return "_UnknownLayout";
    case 'R': return "_RefCountedObject";
    case 'N': return "_NativeRefCountedObject";
    case 'C': return "AnyObject";
    case 'D': return "_NativeClass";
    case 'T': case 'E': case 'e': return "_Trivial";
    case 'M': case 'm': return "_TrivialAtMost";
    case 'B': return "_BridgeObject";
    case 'S': return "_TrivialStride";
    default: return "";
    }
}

static bool is_class_type(const swift_node *n)
{
    return n != NULL && n->kind == K_Class;
}

/* ---- Swift 3 simplified style -------------------------------------------------------------
 * Only Swift 3 compilers emitted the "_T" mangling (not "_T0"), and the tools of that era
 * (`swift-demangle --simplified`, Xcode 8's atos and crash reports) printed such names in a
 * style of their own: entity types kept but no modules ("bar.bas(zim : zim) -> ()"), a context
 * that has a type in parentheses before the entity ("(f(i : Int) -> ()).(closure #1)"),
 * "thunk", one "specialized " per specialization pass, "<A where ...>". That style is what a
 * reader of a Swift 3-era report expects, and what the Swift project's simplified-manglings.txt
 * records; print3 prints it for the node kinds whose spelling differs and leaves every other kind
 * to print(), which comes back here for their children. */

static bool print3(printer *p, const swift_node *n, bool as_context, bool suppress_type);

/* print3_node - one node in the Swift 3 style, with the context/type flags print() lacks */
static void print3_node(printer *p, const swift_node *n, bool as_context, bool suppress_type)
{
    if (n == NULL || p->bad) {
        p->bad = true;
        return;
    }
    if (++p->depth > MAX_PRINT_DEPTH) {
        p->bad = true;
        return;
    }
    bool done = print3(p, n, as_context, suppress_type);
    p->depth--;
    if (!done)
        print(p, n, false);
}

static bool is_function_type(const swift_node *t)
{
    t = skip_type(t);
    while (t != NULL && t->kind == K_DependentGenericType)
        t = skip_type(child(t, 1));
    return t != NULL && (t->kind == K_FunctionType || t->kind == K_UncurriedFunctionType ||
                         t->kind == K_CFunctionPointer || t->kind == K_ThinFunctionType);
}

/* s3_colon_type - the entity's type would follow a " : " (not shown in the simplified style)
 * rather than its name (a function's signature) */
static bool s3_colon_type(swift_kind entity, const swift_node *type)
{
    switch (entity) {
    case K_Subscript: case K_Function: case K_ExplicitClosure: case K_ImplicitClosure:
    case K_Allocator: case K_Constructor: case K_Destructor: case K_Deallocator: case K_IVarDestroyer:
        return !is_function_type(type);
    default:
        return true;
    }
}

/* s3_entity - context, '(' when a typed entity is itself a context, name, extra, type, ')' */
static void s3_entity(printer *p, const swift_node *entity, swift_kind rule, bool as_context,
                      bool suppress_type, bool has_name, bool has_type, const char *extra)
{
    const swift_node *ctx = child(entity, 0);
    if (ctx == NULL) {
        p->bad = true;
        return;
    }
    print3_node(p, ctx, true, false);
    if (skip_type(ctx) == NULL || skip_type(ctx)->kind != K_Module || p->o.module_names)
        outc(p, '.');
    bool print_type = has_type && !suppress_type;
    bool parens = print_type && as_context;
    if (parens)
        outc(p, '(');
    if (has_name)
        print3_node(p, child(entity, 1), false, false);
    outs(p, extra);
    if (print_type) {
        const swift_node *type = child_of_kind(entity, K_Type);
        if (type == NULL) {
            p->bad = true;
            return;
        }
        if (!s3_colon_type(rule, type))
            print3_node(p, type, false, false);
    }
    if (parens)
        outc(p, ')');
}

static const char *s3_accessor_name(swift_kind k)
{
    static const struct { swift_kind k; const char *name; } names[] = {
        {K_Getter, "getter"}, {K_GlobalGetter, "getter"}, {K_Setter, "setter"},
        {K_MaterializeForSet, "materializeForSet"}, {K_WillSet, "willset"}, {K_DidSet, "didset"},
        {K_UnsafeAddressor, "unsafeAddressor"}, {K_UnsafeMutableAddressor, "unsafeMutableAddressor"},
        {K_OwningAddressor, "owningAddressor"}, {K_OwningMutableAddressor, "owningMutableAddressor"},
        {K_NativeOwningAddressor, "nativeOwningAddressor"},
        {K_NativeOwningMutableAddressor, "nativeOwningMutableAddressor"},
        {K_NativePinningAddressor, "nativePinningAddressor"},
        {K_NativePinningMutableAddressor, "nativePinningMutableAddressor"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].k == k)
            return names[i].name;
    return "";
}

/* s3_accessor - "ctx.name.getter": the accessor wraps its Variable (or Subscript) */
static void s3_accessor(printer *p, const swift_node *n, bool as_context, bool suppress_type)
{
    const char *what = s3_accessor_name((swift_kind)n->kind);
    const swift_node *storage = child(n, 0);
    if (storage == NULL || (storage->kind != K_Variable && storage->kind != K_Subscript)) {
        p->bad = true;
        return;
    }
    char extra[64];
    bool named = storage->nchildren > 1 && child(storage, 1)->kind != K_Type;
    snprintf(extra, sizeof extra, "%s.%s", named ? "" : "subscript", what);
    s3_entity(p, storage, (swift_kind)n->kind, as_context, suppress_type, named, true, extra);
}

static void s3_function_type(printer *p, const swift_node *fn)
{
    const swift_node *args = child_of_kind(fn, K_ArgumentTuple);
    const swift_node *result = child_of_kind(fn, K_ReturnType);
    if (args == NULL || result == NULL) {
        p->bad = true;
        return;
    }
    print3_node(p, args, false, false);
    if (child_of_kind(fn, K_ThrowsAnnotation) != NULL)
        outs(p, " throws");
    /* A Swift 1-2 method is a curried function, `f Self F Args Result`: the tools of that era
     * printed the self level glued to the rest, `(ViewController)(AnyObject) -> ()`. Swift 3
     * methods have no self level, their uncurried result is never a function type. */
    const swift_node *rt = skip_type(child(result, 0));
    if (fn->kind == K_UncurriedFunctionType && result->nchildren == 1 && rt != NULL &&
        rt->kind == K_FunctionType) {
        print3_node(p, rt, false, false);
        return;
    }
    print3_node(p, result, false, false);
}

static bool print3(printer *p, const swift_node *n, bool as_context, bool suppress_type)
{
    char extra[64];
    switch ((swift_kind)n->kind) {
    case K_Global:
        for (uint32_t i = 0; i < n->nchildren; i++)
            print3_node(p, n->child[i], false, false);
        return true;
    case K_Type:
        print3_node(p, child(n, 0), as_context, false);
        return true;
    case K_Static:
        outs(p, "static ");
        print3_node(p, child(n, 0), as_context, suppress_type);
        return true;
    case K_Extension:
        print3_node(p, child(n, 1), as_context, false);
        if (n->nchildren == 3)
            print3_node(p, child(n, 2), true, false);
        return true;
    case K_Function: case K_Variable:
        s3_entity(p, n, (swift_kind)n->kind, as_context, suppress_type, true, true, "");
        return true;
    case K_Subscript: {
        bool named = n->nchildren > 1 && child(n, 1)->kind != K_Type;
        s3_entity(p, n, K_Subscript, as_context, suppress_type, named, true, named ? "" : "subscript");
        return true;
    }
    case K_ExplicitClosure: case K_ImplicitClosure:
        snprintf(extra, sizeof extra, "(%sclosure #%llu)", n->kind == K_ImplicitClosure ? "implicit " : "",
                 (unsigned long long)(child(n, 1) ? child(n, 1)->index + 1 : 0));
        s3_entity(p, n, (swift_kind)n->kind, as_context, suppress_type, false, false, extra);
        return true;
    case K_Initializer:
        s3_entity(p, n, K_Initializer, as_context, suppress_type, false, false,
                  "(variable initialization expression)");
        return true;
    case K_DefaultArgumentInitializer:
        snprintf(extra, sizeof extra, "(default argument %llu)",
                 (unsigned long long)(child(n, 1) ? child(n, 1)->index : 0));
        s3_entity(p, n, K_DefaultArgumentInitializer, as_context, suppress_type, false, false, extra);
        return true;
    case K_Class: case K_Structure: case K_Enum: case K_Protocol: case K_TypeAlias:
        s3_entity(p, n, (swift_kind)n->kind, as_context, suppress_type, true, false, "");
        return true;
    case K_Allocator: case K_Constructor:
        s3_entity(p, n, (swift_kind)n->kind, as_context, suppress_type, false, true,
                  n->kind == K_Allocator && is_class_type(child(n, 0)) ? "__allocating_init" : "init");
        return true;
    case K_Destructor: case K_Deallocator: case K_IVarInitializer: case K_IVarDestroyer:
        s3_entity(p, n, (swift_kind)n->kind, as_context, suppress_type, false, false,
                  n->kind == K_Destructor ? "deinit"
                  : n->kind == K_Deallocator ? (is_class_type(child(n, 0)) ? "__deallocating_deinit" : "deinit")
                  : n->kind == K_IVarInitializer ? "__ivar_initializer" : "__ivar_destroyer");
        return true;
    case K_Getter: case K_GlobalGetter: case K_Setter: case K_MaterializeForSet: case K_WillSet:
    case K_DidSet: case K_UnsafeAddressor: case K_UnsafeMutableAddressor: case K_OwningAddressor:
    case K_OwningMutableAddressor: case K_NativeOwningAddressor: case K_NativeOwningMutableAddressor:
    case K_NativePinningAddressor: case K_NativePinningMutableAddressor:
        s3_accessor(p, n, as_context, suppress_type);
        return true;
    case K_LocalDeclName:
        outc(p, '(');
        print3_node(p, child(n, 1), false, false);
        outs(p, " #");
        outu(p, (child(n, 0) ? child(n, 0)->index : 0) + 1);
        outc(p, ')');
        return true;
    case K_PrivateDeclName:
        if (n->nchildren < 2) {
            p->bad = true;
            return true;
        }
        outc(p, '(');
        print3_node(p, child(n, 1), false, false);
        outs(p, " in ");
        text(p, child(n, 0));
        outc(p, ')');
        return true;
    case K_FunctionType: case K_UncurriedFunctionType:
        s3_function_type(p, n);
        return true;
    case K_AutoClosureType: case K_ThinFunctionType: case K_CFunctionPointer: case K_ObjCBlock:
        outs(p, n->kind == K_AutoClosureType ? "@autoclosure " : n->kind == K_ThinFunctionType ? "@convention(thin) "
              : n->kind == K_CFunctionPointer ? "@convention(c) " : "@convention(block) ");
        s3_function_type(p, n);
        return true;
    case K_ArgumentTuple: {
        const swift_node *t = skip_type(child(n, 0));
        bool parens = t == NULL || t->kind != K_Tuple;
        if (parens)
            outc(p, '(');
        print3_node(p, child(n, 0), false, false);
        if (parens)
            outc(p, ')');
        return true;
    }
    case K_Tuple:
        outc(p, '(');
        for (uint32_t i = 0; i < n->nchildren; i++) {
            if (i > 0)
                outs(p, ", ");
            print3_node(p, n->child[i], false, false);
        }
        outc(p, ')');
        return true;
    case K_TupleElement: {
        const swift_node *label = child_of_kind(n, K_TupleElementName);
        if (label != NULL) {
            text(p, label);
            outs(p, " : ");
        }
        print3_node(p, child_of_kind(n, K_Type), false, false);
        if (child_of_kind(n, K_VariadicMarker) != NULL)
            outs(p, "...");
        return true;
    }
    case K_ReturnType:
        outs(p, " -> ");
        for (uint32_t i = 0; i < n->nchildren; i++)
            print3_node(p, n->child[i], false, false);
        return true;
    case K_DependentGenericType:
        print3_node(p, child(n, 0), false, false);
        outc(p, ' ');
        print3_node(p, child(n, 1), false, false);
        return true;
    case K_GenericSpecialization: case K_GenericSpecializationNotReAbstracted:
    case K_FunctionSignatureSpecialization:
        outs(p, "specialized ");
        return true;
    case K_ReabstractionThunk: case K_ReabstractionThunkHelper:
        outs(p, "thunk");
        return true;
    default:
        return false;
    }
}

/* print - one node; returns the context left to print in suffix form ("in ...") when asked to
 * print as a prefix context and the entity cannot be printed that way. */
static const swift_node *print(printer *p, const swift_node *n, bool as_prefix)
{
    if (n == NULL || p->bad) {
        p->bad = true;
        return NULL;
    }
    if (++p->depth > MAX_PRINT_DEPTH) {
        p->bad = true;
        return NULL;
    }
    if (p->o.swift3 && print3(p, n, as_prefix, false)) {
        p->depth--;
        return NULL;
    }
    const swift_node *r = NULL;
    switch ((swift_kind)n->kind) {
    case K_Global:
        print_children(p, n, NULL);
        break;
    case K_Type: case K_TypeMangling: case K_DeclContext:
        print(p, child(n, 0), false);
        break;
    case K_Suffix:
        if (p->o.unmangled_suffix) {
            outs(p, " with unmangled suffix \"");
            text(p, n);
            outc(p, '"');
        }
        break;
    case K_Module:
        if (p->o.module_names)
            text(p, n);
        break;
    case K_Identifier: case K_BuiltinTypeName: case K_DependentGenericParamType:
    case K_ImplConvention: case K_ImplFunctionAttribute: case K_ImplFunctionConvention:
    case K_ImplDifferentiabilityKind: case K_ImplErasedIsolation: case K_ImplParameterAttr:
    case K_MetatypeRepresentation: case K_FunctionSignatureSpecializationParamPayload:
        text(p, n);
        break;
    case K_Index: case K_Number:
        outu(p, n->index);
        break;
    case K_InfixOperator: text(p, n); outs(p, " infix"); break;
    case K_PrefixOperator: text(p, n); outs(p, " prefix"); break;
    case K_PostfixOperator: text(p, n); outs(p, " postfix"); break;
    case K_LocalDeclName:
        print(p, child(n, 1), false);
        outs(p, " #");
        outu(p, (child(n, 0) ? child(n, 0)->index : 0) + 1);
        break;
    case K_PrivateDeclName:
        if (n->nchildren > 1) {
            if (p->o.private_discriminators)
                outc(p, '(');
            print(p, child(n, 1), false);
            if (p->o.private_discriminators) {
                outs(p, " in ");
                text(p, child(n, 0));
                outc(p, ')');
            }
        } else if (p->o.private_discriminators) {
            outs(p, "(in ");
            text(p, child(n, 0));
            outc(p, ')');
        }
        break;
    case K_RelatedEntityDeclName:
        outs(p, "related decl '");
        text(p, child(n, 0));
        outs(p, "' for ");
        print(p, child(n, 1), false);
        break;
    case K_Class: case K_Structure: case K_Enum: case K_Protocol: case K_TypeAlias:
    case K_OtherNominalType:
        r = print_entity(p, n, as_prefix, NO_TYPE, true, NULL, -1, NULL);
        break;
    case K_Function: case K_BoundGenericFunction:
        r = print_entity(p, n, as_prefix, FUNCTION_STYLE, true, NULL, -1, NULL);
        break;
    case K_Macro:
        r = print_entity(p, n, as_prefix, FUNCTION_STYLE, true, NULL, -1, NULL);
        break;
    case K_GenericTypeParamDecl:
        r = print_entity(p, n, as_prefix, NO_TYPE, true, NULL, -1, NULL);
        break;
    case K_Subscript:
        r = print_entity(p, n, as_prefix, FUNCTION_STYLE, false, NULL, -1, "subscript");
        break;
    case K_ExplicitClosure: case K_ImplicitClosure:
        r = print_entity(p, n, as_prefix, p->o.function_arg_types ? FUNCTION_STYLE : NO_TYPE, false,
                         n->kind == K_ExplicitClosure ? "closure #" : "implicit closure #",
                         (int64_t)(child(n, 1) ? child(n, 1)->index : 0) + 1, NULL);
        break;
    case K_Initializer:
        r = print_entity(p, n, as_prefix, NO_TYPE, false, "variable initialization expression", -1, NULL);
        break;
    case K_PropertyWrapperBackingInitializer:
        r = print_entity(p, n, as_prefix, NO_TYPE, false, "property wrapper backing initializer", -1, NULL);
        break;
    case K_PropertyWrapperInitFromProjectedValue:
        r = print_entity(p, n, as_prefix, NO_TYPE, false, "property wrapper init from projected value", -1, NULL);
        break;
    case K_DefaultArgumentInitializer:
        r = print_entity(p, n, as_prefix, NO_TYPE, false, "default argument ",
                         (int64_t)(child(n, 1) ? child(n, 1)->index : 0), NULL);
        break;
    case K_Variable:
        r = print_entity(p, n, as_prefix, WITH_COLON, true, NULL, -1, NULL);
        break;
    case K_Allocator:
        r = print_entity(p, n, as_prefix, FUNCTION_STYLE, false,
                         is_class_type(child(n, 0)) ? "__allocating_init" : "init", -1, NULL);
        break;
    case K_Constructor:
        r = print_entity(p, n, as_prefix, FUNCTION_STYLE, n->nchildren > 2, "init", -1, NULL);
        break;
    case K_Destructor:
        r = print_entity(p, n, as_prefix, NO_TYPE, false, "deinit", -1, NULL);
        break;
    case K_Deallocator:
        r = print_entity(p, n, as_prefix, NO_TYPE, false,
                         is_class_type(child(n, 0)) ? "__deallocating_deinit" : "deinit", -1, NULL);
        break;
    case K_IVarInitializer:
        r = print_entity(p, n, as_prefix, NO_TYPE, false, "__ivar_initializer", -1, NULL);
        break;
    case K_IVarDestroyer:
        r = print_entity(p, n, as_prefix, NO_TYPE, false, "__ivar_destroyer", -1, NULL);
        break;
    case K_Getter: r = print_storage(p, child(n, 0), as_prefix, "getter"); break;
    case K_GlobalGetter: r = print_storage(p, child(n, 0), as_prefix, "getter"); break;
    case K_Setter: r = print_storage(p, child(n, 0), as_prefix, "setter"); break;
    case K_MaterializeForSet: r = print_storage(p, child(n, 0), as_prefix, "materializeForSet"); break;
    case K_WillSet: r = print_storage(p, child(n, 0), as_prefix, "willset"); break;
    case K_DidSet: r = print_storage(p, child(n, 0), as_prefix, "didset"); break;
    case K_ReadAccessor: r = print_storage(p, child(n, 0), as_prefix, "read"); break;
    case K_ModifyAccessor: r = print_storage(p, child(n, 0), as_prefix, "modify"); break;
    case K_InitAccessor: r = print_storage(p, child(n, 0), as_prefix, "init"); break;
    case K_UnsafeAddressor: r = print_storage(p, child(n, 0), as_prefix, "unsafeAddressor"); break;
    case K_UnsafeMutableAddressor: r = print_storage(p, child(n, 0), as_prefix, "unsafeMutableAddressor"); break;
    case K_OwningAddressor: r = print_storage(p, child(n, 0), as_prefix, "owningAddressor"); break;
    case K_OwningMutableAddressor: r = print_storage(p, child(n, 0), as_prefix, "owningMutableAddressor"); break;
    case K_NativeOwningAddressor: r = print_storage(p, child(n, 0), as_prefix, "nativeOwningAddressor"); break;
    case K_NativeOwningMutableAddressor: r = print_storage(p, child(n, 0), as_prefix, "nativeOwningMutableAddressor"); break;
    case K_NativePinningAddressor: r = print_storage(p, child(n, 0), as_prefix, "nativePinningAddressor"); break;
    case K_NativePinningMutableAddressor: r = print_storage(p, child(n, 0), as_prefix, "nativePinningMutableAddressor"); break;
    case K_Static:
        outs(p, "static ");
        print(p, child(n, 0), false);
        break;
    case K_AnonymousContext:
        /* "M.(unknown context at $10016c2d8)<Args>"; nothing in the simplified form */
        if (p->o.extension_contexts) {
            print(p, child(n, 1), false);
            outs(p, ".(unknown context at ");
            print(p, child(n, 0), false);
            outc(p, ')');
            if (child(n, 2) != NULL && child(n, 2)->nchildren > 0) {
                outc(p, '<');
                print(p, child(n, 2), false);
                outc(p, '>');
            }
        }
        break;
    case K_Extension:
        if (p->o.extension_contexts) {
            outs(p, "(extension in ");
            size_t at = p->len;
            bool saved = p->o.module_names;
            p->o.module_names = true;
            print(p, child(n, 0), true);
            p->o.module_names = saved;
            (void)at;
            outs(p, "):");
        }
        print(p, child(n, 1), false);
        if (n->nchildren == 3)
            print(p, child(n, 2), false);
        break;
    case K_FreestandingMacroExpansion: {
        const swift_node *priv = child(n, 3);
        r = print_entity(p, n, as_prefix, NO_TYPE, true, "freestanding macro expansion #",
                         (int64_t)(child(n, 2) ? child(n, 2)->index : 0) + 1, NULL);
        (void)priv;
        break;
    }
    case K_MacroExpansionUniqueName:
        r = print_entity(p, n, as_prefix, NO_TYPE, true, "unique name #",
                         (int64_t)(child(n, 2) ? child(n, 2)->index : 0) + 1, NULL);
        break;
    case K_PeerAttachedMacroExpansion: case K_MemberAttachedMacroExpansion:
    case K_AccessorAttachedMacroExpansion: case K_MemberAttributeAttachedMacroExpansion:
    case K_ConformanceAttachedMacroExpansion: case K_ExtensionAttachedMacroExpansion:
    case K_BodyAttachedMacroExpansion: case K_PreambleAttachedMacroExpansion: {
        const char *what = n->kind == K_PeerAttachedMacroExpansion ? "peer"
                         : n->kind == K_MemberAttachedMacroExpansion ? "member"
                         : n->kind == K_AccessorAttachedMacroExpansion ? "accessor"
                         : n->kind == K_MemberAttributeAttachedMacroExpansion ? "member attribute"
                         : n->kind == K_ConformanceAttachedMacroExpansion ? "conformance"
                         : n->kind == K_ExtensionAttachedMacroExpansion ? "extension"
                         : n->kind == K_BodyAttachedMacroExpansion ? "body" : "preamble";
        char buf[256];
        const swift_node *macro = child(n, 2);
        snprintf(buf, sizeof buf, "%s macro @%.*s expansion #", what,
                 macro ? (int)macro->text_len : 0, macro ? macro->text : "");
        r = print_entity(p, n, as_prefix, NO_TYPE, true, buf,
                         (int64_t)(child(n, 3) ? child(n, 3)->index : 0) + 1, NULL);
        break;
    }
    case K_LabelList: case K_EmptyList: case K_FirstElementMarker: case K_VariadicMarker:
    case K_RetroactiveConformance: case K_AnyConformance: case K_ConformanceRef:
    case K_SpecializationPassID: case K_MetatypeParamsRemoved:
        break;
    case K_IsSerialized:
        outs(p, "serialized");
        break;
    case K_Tuple:
        outc(p, '(');
        print_children(p, n, ", ");
        outc(p, ')');
        break;
    case K_TupleElement: {
        const swift_node *label = child_of_kind(n, K_TupleElementName);
        if (label != NULL) {
            text(p, label);
            outs(p, ": ");
        }
        print(p, child_of_kind(n, K_Type), false);
        if (child_of_kind(n, K_VariadicMarker) != NULL)
            outs(p, "...");
        break;
    }
    case K_TupleElementName:
        text(p, n);
        outs(p, ": ");
        break;
    case K_ReturnType: case K_ArgumentTuple:
        print_children(p, n, NULL);
        break;
    case K_TypeList:
        print_children(p, n, NULL);
        break;
    case K_BoundGenericClass: case K_BoundGenericStructure: case K_BoundGenericEnum:
    case K_BoundGenericProtocol: case K_BoundGenericOtherNominalType: case K_BoundGenericTypeAlias:
        print_bound_generic(p, n);
        break;
    case K_FunctionType: case K_UncurriedFunctionType: case K_NoEscapeFunctionType:
        print_function_type(p, NULL, n);
        break;
    case K_AutoClosureType: case K_EscapingAutoClosureType:
        outs(p, "@autoclosure ");
        print_function_type(p, NULL, n);
        break;
    case K_ThinFunctionType:
        outs(p, "@convention(thin) ");
        print_function_type(p, NULL, n);
        break;
    case K_CFunctionPointer:
        outs(p, "@convention(c) ");
        print_function_type(p, NULL, n);
        break;
    case K_ObjCBlock:
        outs(p, "@convention(block) ");
        print_function_type(p, NULL, n);
        break;
    case K_EscapingObjCBlock:
        outs(p, "@escaping @convention(block) ");
        print_function_type(p, NULL, n);
        break;
    case K_ImplFunctionType:
        print_impl_function_type(p, n);
        break;
    case K_ImplParameter: case K_ImplResult:
        print_children(p, n, " ");
        break;
    case K_ImplYield:
        outs(p, "@yields ");
        print_children(p, n, " ");
        break;
    case K_ImplErrorResult:
        outs(p, "@error ");
        print_children(p, n, " ");
        break;
    case K_ImplEscaping:
        outs(p, "@escaping");
        break;
    case K_ImplSendingResult:
        text(p, n);
        break;
    case K_DependentPseudogenericSignature: case K_DependentGenericSignature:
        print_generic_signature(p, n);
        break;
    case K_DependentGenericConformanceRequirement:
        print(p, child(n, 0), false);
        outs(p, ": ");
        print(p, child(n, 1), false);
        break;
    case K_DependentGenericSameTypeRequirement:
        print(p, child(n, 0), false);
        outs(p, " == ");
        print(p, child(n, 1), false);
        break;
    case K_DependentGenericLayoutRequirement: {
        print(p, child(n, 0), false);
        outs(p, ": ");
        const swift_node *l = child(n, 1);
        outs(p, layout_name(l && l->text_len ? l->text[0] : 0));
        if (n->nchildren > 2) {
            outc(p, '(');
            print(p, child(n, 2), false);
            if (n->nchildren > 3) {
                outs(p, ", ");
                print(p, child(n, 3), false);
            }
            outc(p, ')');
        }
        break;
    }
    case K_DependentGenericType: {
        print(p, child(n, 0), false);
        const swift_node *dep = child(n, 1);
        if (need_space_before_type(dep))
            outc(p, ' ');
        print(p, dep, false);
        break;
    }
    case K_DependentMemberType:
        print(p, child(n, 0), false);
        outc(p, '.');
        print(p, child(n, 1), false);
        break;
    case K_DependentAssociatedTypeRef:
        if (n->nchildren > 0) {
            print(p, child(n, 0), false);
            outc(p, '.');
        }
        text(p, n);
        break;
    case K_AssociatedTypeRef:
        print(p, child(n, 0), false);
        outc(p, '.');
        print(p, child(n, 1), false);
        break;
    case K_ProtocolList: {
        const swift_node *tl = child(n, 0);
        if (tl == NULL || tl->nchildren == 0)
            outs(p, "Any");
        else
            print_children(p, tl, " & ");
        break;
    }
    case K_ProtocolListWithClass:
        print(p, child(n, 1), false);
        outs(p, " & ");
        print_children(p, child(child(n, 0), 0), " & ");
        break;
    case K_ProtocolListWithAnyObject: {
        const swift_node *tl = child(child(n, 0), 0);
        if (tl != NULL && tl->nchildren > 0) {
            print_children(p, tl, " & ");
            outs(p, " & ");
        }
        if (p->o.module_names)
            outs(p, "Swift.");
        outs(p, "AnyObject");
        break;
    }
    case K_ConstrainedExistential:
        outs(p, "any ");
        print(p, child(n, 0), false);
        outc(p, '<');
        print(p, child(n, 1), false);
        outc(p, '>');
        break;
    case K_AssocTypePath:
        print_children(p, n, ".");
        break;
    case K_ConstrainedExistentialRequirementList:
        print_children(p, n, ", ");
        break;
    case K_ConstrainedExistentialSelf:
        outs(p, "Self");
        break;
    case K_Metatype: case K_ExistentialMetatype: {
        uint32_t idx = 0;
        if (n->nchildren == 2) {
            print(p, child(n, 0), false);
            outc(p, ' ');
            idx = 1;
        }
        const swift_node *t = skip_type(child(n, idx));
        if (n->kind == K_Metatype) {
            bool parens = !is_simple_type(t);
            if (parens)
                outc(p, '(');
            print(p, t, false);
            if (parens)
                outc(p, ')');
            bool existential = t != NULL && (t->kind == K_ExistentialMetatype || t->kind == K_ProtocolList ||
                                             t->kind == K_ProtocolListWithClass ||
                                             t->kind == K_ProtocolListWithAnyObject);
            outs(p, existential ? ".Protocol" : ".Type");
        } else {
            print(p, t, false);
            outs(p, ".Type");
        }
        break;
    }
    case K_InOut: print_prefixed(p, "inout ", n); break;
    case K_Shared: print_prefixed(p, "__shared ", n); break;
    case K_Owned: print_prefixed(p, "__owned ", n); break;
    case K_Isolated: print_prefixed(p, "isolated ", n); break;
    case K_CompileTimeConst: print_prefixed(p, "_const ", n); break;
    case K_NoDerivative: print_prefixed(p, "@noDerivative ", n); break;
    case K_Sending: print_prefixed(p, "transferring ", n); break;
    case K_LifetimeDependence:
        outs(p, "lifetime dependence: ");
        text(p, n);
        print_prefixed(p, " ", n);
        break;
    case K_Weak: print_prefixed(p, "weak ", n); break;
    case K_Unowned: print_prefixed(p, "unowned ", n); break;
    case K_Unmanaged: print_prefixed(p, "unowned(unsafe) ", n); break;
    case K_SILBoxType: print_prefixed(p, "@box ", n); break;
    case K_SILBoxTypeWithLayout:
        /* "<A> { var A } <Builtin.Int32>": signature, layout, generic arguments */
        if (n->nchildren == 3) {
            print(p, child(n, 1), false);
            outc(p, ' ');
        }
        print(p, child(n, 0), false);
        if (n->nchildren == 3) {
            outs(p, " <");
            print_children(p, child(n, 2), ", ");
            outc(p, '>');
        }
        break;
    case K_SILBoxLayout:
        outc(p, '{');
        for (uint32_t i = 0; i < n->nchildren; i++) {
            if (i > 0)
                outc(p, ',');
            outc(p, ' ');
            print(p, n->child[i], false);
        }
        outs(p, " }");
        break;
    case K_SILBoxMutableField: print_prefixed(p, "var ", n); break;
    case K_SILBoxImmutableField: print_prefixed(p, "let ", n); break;
    case K_DynamicSelf: outs(p, "Self"); break;
    case K_ErrorType: outs(p, "<ERROR TYPE>"); break;
    case K_AsyncAnnotation: outs(p, " async"); break;
    case K_ThrowsAnnotation: outs(p, " throws"); break;
    case K_TypedThrowsAnnotation:
        outs(p, " throws(");
        print(p, child(n, 0), false);
        outc(p, ')');
        break;
    case K_ConcurrentFunctionType: outs(p, "@Sendable "); break;
    case K_IsolatedAnyFunctionType: outs(p, "@isolated(any) "); break;
    case K_GlobalActorFunctionType:
        outc(p, '@');
        print(p, child(n, 0), false);
        outc(p, ' ');
        break;
    case K_DifferentiableFunctionType: text(p, n); break;
    case K_OpaqueReturnType: outs(p, "some"); break;
    case K_OpaqueReturnTypeOf:
        outs(p, "<<opaque return type of ");
        print_children(p, n, NULL);
        outs(p, ">>");
        break;
    case K_OpaqueType:
        print(p, child(n, 0), false);
        outc(p, '.');
        print(p, child(n, 1), false);
        break;
    case K_ObjCAttribute: outs(p, "@objc "); break;
    case K_NonObjCAttribute: outs(p, "@nonobjc "); break;
    case K_DynamicAttribute: outs(p, "dynamic "); break;
    case K_MergedFunction: if (!p->o.shorten_thunk) outs(p, "merged "); break;
    case K_DistributedThunk: if (!p->o.shorten_thunk) outs(p, "distributed thunk "); break;
    case K_DistributedAccessor: if (!p->o.shorten_thunk) outs(p, "distributed accessor for "); break;
    case K_DynamicallyReplaceableFunctionKey:
        if (!p->o.shorten_thunk) outs(p, "dynamically replaceable key for ");
        break;
    case K_DynamicallyReplaceableFunctionImpl:
        if (!p->o.shorten_thunk) outs(p, "dynamically replaceable thunk for ");
        break;
    case K_DynamicallyReplaceableFunctionVar:
        if (!p->o.shorten_thunk) outs(p, "dynamically replaceable variable for ");
        break;
    case K_BackDeploymentThunk: if (!p->o.shorten_thunk) outs(p, "back deployment thunk for "); break;
    case K_BackDeploymentFallback: if (!p->o.shorten_thunk) outs(p, "back deployment fallback for "); break;
    case K_HasSymbolQuery: outs(p, "#_hasSymbol query for "); break;
    case K_AsyncFunctionPointer: outs(p, "async function pointer to "); break;
    case K_AccessibleFunctionRecord:
        if (!p->o.shorten_thunk) outs(p, "accessible function runtime record for ");
        break;
    case K_AsyncAwaitResumePartialFunction: case K_AsyncSuspendResumePartialFunction:
        if (p->o.async_resume_partial) {
            outc(p, '(');
            print(p, child(n, 0), false);
            outc(p, ')');
            outs(p, n->kind == K_AsyncAwaitResumePartialFunction ? " await resume partial function for "
                                                                 : " suspend resume partial function for ");
        }
        break;
    case K_PartialApplyForwarder: case K_PartialApplyObjCForwarder:
        if (p->o.shorten_partial_apply)
            outs(p, "partial apply");
        else
            outs(p, n->kind == K_PartialApplyForwarder ? "partial apply forwarder" : "partial apply ObjC forwarder");
        if (n->nchildren > 0) {
            outs(p, " for ");
            print_children(p, n, NULL);
        }
        break;
    case K_CurryThunk: print_prefixed(p, "curry thunk of ", n); break;
    case K_DispatchThunk: print_prefixed(p, "dispatch thunk of ", n); break;
    case K_MethodDescriptor: print_prefixed(p, "method descriptor for ", n); break;
    case K_MethodLookupFunction: print_prefixed(p, "method lookup function for ", n); break;
    case K_ObjCMetadataUpdateFunction: print_prefixed(p, "ObjC metadata update function for ", n); break;
    case K_OutlinedBridgedMethod:
        outs(p, "outlined bridged method (");
        text(p, n);
        outs(p, ") of ");
        break;
    case K_OutlinedCopy: case K_OutlinedConsume: case K_OutlinedRetain: case K_OutlinedRelease:
    case K_OutlinedInitializeWithTake: case K_OutlinedInitializeWithCopy:
    case K_OutlinedAssignWithTake: case K_OutlinedAssignWithCopy: case K_OutlinedDestroy: {
        const char *w = n->kind == K_OutlinedCopy ? "outlined copy of "
                      : n->kind == K_OutlinedConsume ? "outlined consume of "
                      : n->kind == K_OutlinedRetain ? "outlined retain of "
                      : n->kind == K_OutlinedRelease ? "outlined release of "
                      : n->kind == K_OutlinedInitializeWithTake ? "outlined init with take of "
                      : n->kind == K_OutlinedInitializeWithCopy ? "outlined init with copy of "
                      : n->kind == K_OutlinedAssignWithTake ? "outlined assign with take of "
                      : n->kind == K_OutlinedAssignWithCopy ? "outlined assign with copy of "
                                                             : "outlined destroy of ";
        outs(p, w);
        print(p, child(n, 0), false);
        if (n->nchildren > 1)
            print(p, child(n, 1), false);
        break;
    }
    case K_OutlinedVariable: case K_OutlinedReadOnlyObject:
        outs(p, n->kind == K_OutlinedVariable ? "outlined variable #" : "outlined read-only object #");
        outu(p, n->index);
        outs(p, " of ");
        break;
    case K_CoroutineContinuationPrototype: print_prefixed(p, "coroutine continuation prototype for ", n); break;
    case K_ReabstractionThunk: case K_ReabstractionThunkHelper: case K_ReabstractionThunkHelperWithSelf: {
        if (p->o.shorten_thunk) {
            outs(p, "thunk for ");
            print(p, child(n, n->nchildren - 1), false);
            break;
        }
        outs(p, "reabstraction thunk ");
        if (n->kind != K_ReabstractionThunk)
            outs(p, "helper ");
        uint32_t idx = 0;
        if (n->kind == K_ReabstractionThunkHelperWithSelf) {
            /* (sig?) self to from */
            if (n->nchildren == 4) {
                print(p, child(n, 0), false);
                outc(p, ' ');
                idx = 1;
            }
            outs(p, "with self ");
            print(p, child(n, idx), false);
            outc(p, ' ');
            idx++;
        } else if (n->nchildren == 3) {
            print(p, child(n, 0), false);
            outc(p, ' ');
            idx = 1;
        }
        outs(p, "from ");
        print(p, child(n, idx + 1), false);
        outs(p, " to ");
        print(p, child(n, idx), false);
        break;
    }
    case K_ProtocolWitness:
        outs(p, "protocol witness for ");
        print(p, child(n, 1), false);
        outs(p, " in conformance ");
        print(p, child(n, 0), false);
        break;
    case K_ProtocolSelfConformanceWitness: print_prefixed(p, "protocol self-conformance witness for ", n); break;
    case K_ProtocolConformance:
        print(p, child(n, 0), false);
        if (p->o.protocol_conformances) {
            outs(p, " : ");
            print(p, child(n, 1), false);
            outs(p, " in ");
            print(p, child(n, 2), false);
        }
        break;
    case K_VTableThunk:
        outs(p, "vtable thunk for ");
        print(p, child(n, 1), false);
        outs(p, " dispatching to ");
        print(p, child(n, 0), false);
        break;
    case K_GenericSpecialization: case K_GenericSpecializationInResilienceDomain:
        print_spec_prefix(p, n, "generic specialization");
        break;
    case K_GenericSpecializationPrespecialized:
        print_spec_prefix(p, n, "generic pre-specialization");
        break;
    case K_GenericSpecializationNotReAbstracted:
        print_spec_prefix(p, n, "generic not re-abstracted specialization");
        break;
    case K_InlinedGenericFunction:
        print_spec_prefix(p, n, "inlined generic function");
        break;
    case K_GenericPartialSpecialization:
        print_spec_prefix(p, n, "partial generic specialization");
        break;
    case K_GenericPartialSpecializationNotReAbstracted:
        print_spec_prefix(p, n, "partial generic specialization not re-abstracted");
        break;
    case K_FunctionSignatureSpecialization:
        print_spec_prefix(p, n, "function signature specialization");
        break;
    case K_GenericSpecializationParam:
        print(p, child(n, 0), false);
        for (uint32_t i = 1; i < n->nchildren; i++) {
            outs(p, i == 1 ? " with " : " and ");
            print(p, child(n, i), false);
        }
        break;
    case K_FunctionSignatureSpecializationParam: case K_FunctionSignatureSpecializationReturn:
        print_fsp_param(p, n);
        break;
    case K_FunctionSignatureSpecializationParamKind:
        print_fsp_kind(p, n->index);
        break;
    case K_TypeMetadata: print_prefixed(p, "type metadata for ", n); break;
    case K_FullTypeMetadata: print_prefixed(p, "full type metadata for ", n); break;
    case K_TypeMetadataAccessFunction: print_prefixed(p, "type metadata accessor for ", n); break;
    case K_TypeMetadataInstantiationCache: print_prefixed(p, "type metadata instantiation cache for ", n); break;
    case K_TypeMetadataInstantiationFunction: print_prefixed(p, "type metadata instantiation function for ", n); break;
    case K_TypeMetadataSingletonInitializationCache: print_prefixed(p, "type metadata singleton initialization cache for ", n); break;
    case K_TypeMetadataCompletionFunction: print_prefixed(p, "type metadata completion function for ", n); break;
    case K_TypeMetadataDemanglingCache: print_prefixed(p, "demangling cache variable for type metadata for ", n); break;
    case K_TypeMetadataLazyCache: print_prefixed(p, "lazy cache variable for type metadata for ", n); break;
    case K_Metaclass: print_prefixed(p, "metaclass for ", n); break;
    case K_NominalTypeDescriptor: print_prefixed(p, "nominal type descriptor for ", n); break;
    case K_NominalTypeDescriptorRecord: print_prefixed(p, "nominal type descriptor runtime record for ", n); break;
    case K_OpaqueTypeDescriptor: print_prefixed(p, "opaque type descriptor for ", n); break;
    case K_OpaqueTypeDescriptorRecord: print_prefixed(p, "opaque type descriptor runtime record for ", n); break;
    case K_ProtocolDescriptor: print_prefixed(p, "protocol descriptor for ", n); break;
    case K_ProtocolDescriptorRecord: print_prefixed(p, "protocol descriptor runtime record for ", n); break;
    case K_ProtocolConformanceDescriptor: print_prefixed(p, "protocol conformance descriptor for ", n); break;
    case K_ProtocolConformanceDescriptorRecord: print_prefixed(p, "protocol conformance descriptor runtime record for ", n); break;
    case K_ProtocolRequirementsBaseDescriptor: print_prefixed(p, "protocol requirements base descriptor for ", n); break;
    case K_ProtocolSelfConformanceDescriptor: print_prefixed(p, "protocol self-conformance descriptor for ", n); break;
    case K_ProtocolSelfConformanceWitnessTable: print_prefixed(p, "protocol self-conformance witness table for ", n); break;
    case K_GenericTypeMetadataPattern: print_prefixed(p, "generic type metadata pattern for ", n); break;
    case K_ClassMetadataBaseOffset: print_prefixed(p, "class metadata base offset for ", n); break;
    case K_PropertyDescriptor: print_prefixed(p, "property descriptor for ", n); break;
    case K_ValueWitnessTable: print_prefixed(p, "value witness table for ", n); break;
    case K_WitnessTableOffset: print_prefixed(p, "witness table offset for ", n); break;
    case K_ProtocolWitnessTable: print_prefixed(p, "protocol witness table for ", n); break;
    case K_ProtocolWitnessTablePattern: print_prefixed(p, "protocol witness table pattern for ", n); break;
    case K_GenericProtocolWitnessTable: print_prefixed(p, "generic protocol witness table for ", n); break;
    case K_GenericProtocolWitnessTableInstantiationFunction:
        print_prefixed(p, "instantiation function for generic protocol witness table for ", n);
        break;
    case K_ResilientProtocolWitnessTable: print_prefixed(p, "resilient protocol witness table for ", n); break;
    case K_ProtocolWitnessTableAccessor: print_prefixed(p, "protocol witness table accessor for ", n); break;
    case K_ReflectionMetadataBuiltinDescriptor: print_prefixed(p, "reflection metadata builtin descriptor ", n); break;
    case K_ReflectionMetadataFieldDescriptor: print_prefixed(p, "reflection metadata field descriptor ", n); break;
    case K_ReflectionMetadataAssocTypeDescriptor: print_prefixed(p, "reflection metadata associated type descriptor ", n); break;
    case K_ReflectionMetadataSuperclassDescriptor: print_prefixed(p, "reflection metadata superclass descriptor ", n); break;
    case K_AssociatedTypeDescriptor: print_prefixed(p, "associated type descriptor for ", n); break;
    case K_AutoDiffFunction: case K_AutoDiffDerivativeVTableThunk: {
        uint32_t end = 0;
        while (end < n->nchildren && n->child[end]->kind != K_AutoDiffFunctionKind)
            end++;
        if (end + 2 >= n->nchildren) {
            p->bad = true;
            break;
        }
        if (n->kind == K_AutoDiffDerivativeVTableThunk)
            outs(p, "vtable thunk for ");
        print(p, n->child[end], false);
        outs(p, " of ");
        const swift_node *sig = NULL;
        for (uint32_t i = 0; i < end; i++) {
            if (i == end - 1 && n->child[i]->kind == K_DependentGenericSignature) {
                sig = n->child[i];
                break;
            }
            print(p, n->child[i], false);
        }
        if (p->o.shorten_thunk)
            break;
        outs(p, " with respect to parameters ");
        print(p, n->child[end + 1], false);
        outs(p, " and results ");
        print(p, n->child[end + 2], false);
        if (sig != NULL && p->o.where_clauses) {
            outs(p, " with ");
            print(p, sig, false);
        }
        break;
    }
    case K_AutoDiffSubsetParametersThunk: {
        /* children: from-function [sig] [type] kind params results to-params */
        if (n->nchildren < 5) {
            p->bad = true;
            break;
        }
        uint32_t i = n->nchildren - 4;
        outs(p, "autodiff subset parameters thunk for ");
        print(p, n->child[i], false);
        outs(p, " from ");
        if (i == 1)
            print(p, n->child[0], false);
        else
            for (uint32_t k = 0; k + 1 < i; k++)
                print(p, n->child[k], false);
        outs(p, " with respect to parameters ");
        print(p, n->child[i + 1], false);
        outs(p, " and results ");
        print(p, n->child[i + 2], false);
        outs(p, " to parameters ");
        print(p, n->child[i + 3], false);
        if (i > 1) {
            outs(p, " of type ");
            print(p, n->child[i - 1], false);
        }
        break;
    }
    case K_AutoDiffSelfReorderingReabstractionThunk: {
        const swift_node *kind = child(n, n->nchildren - 1);
        outs(p, "autodiff self-reordering reabstraction thunk ");
        if (kind != NULL && kind->kind == K_AutoDiffFunctionKind) {
            outs(p, "for ");
            print(p, kind, false);
            outc(p, ' ');
        }
        outs(p, "from ");
        print(p, child(n, 0), false);
        outs(p, " to ");
        print(p, child(n, 1), false);
        if (n->nchildren == 4 && p->o.where_clauses) {
            outs(p, " with ");
            print(p, child(n, 2), false);
        }
        break;
    }
    case K_AutoDiffFunctionKind:
        outs(p, n->index == 'f' ? "forward-mode derivative" : n->index == 'r' ? "reverse-mode derivative"
              : n->index == 'd' ? "differential" : "pullback");
        break;
    case K_IndexSubset: {
        outc(p, '{');
        bool any = false;
        for (uint32_t i = 0; i < n->text_len; i++) {
            if (n->text[i] != 'S')
                continue;
            if (any)
                outs(p, ", ");
            outu(p, i);
            any = true;
        }
        outc(p, '}');
        break;
    }
    case K_DifferentiabilityWitness: {
        bool has_sig = n->nchildren > 0 && n->child[n->nchildren - 1]->kind == K_DependentGenericSignature;
        uint32_t ki = 0;
        while (ki < n->nchildren && n->child[ki]->kind != K_Index)
            ki++;
        if (ki + 2 >= n->nchildren) {
            p->bad = true;
            break;
        }
        uint64_t k = n->child[ki]->index;
        outs(p, k == 'f' ? "forward-mode" : k == 'r' ? "reverse-mode" : k == 'd' ? "normal" : "linear");
        outs(p, " differentiability witness for ");
        for (uint32_t i = 0; i < ki; i++)
            print(p, n->child[i], false);
        outs(p, " with respect to parameters ");
        print(p, n->child[ki + 1], false);
        outs(p, " and results ");
        print(p, n->child[ki + 2], false);
        if (has_sig && ki + 3 < n->nchildren) {
            outs(p, " with ");
            print(p, n->child[n->nchildren - 1], false);
        }
        break;
    }
    case K_ModuleDescriptor: {
        /* the module is the whole point here: named even in the simplified form */
        outs(p, "module descriptor ");
        text(p, child(n, 0));
        break;
    }
    case K_ExtensionDescriptor: print_prefixed(p, "extension descriptor ", n); break;
    case K_AnonymousDescriptor: print_prefixed(p, "anonymous descriptor ", n); break;
    case K_EnumCase: print_prefixed(p, "enum case for ", n); break;
    case K_LazyProtocolWitnessTableAccessor: case K_LazyProtocolWitnessTableCacheVariable:
        outs(p, n->kind == K_LazyProtocolWitnessTableAccessor ? "lazy protocol witness table accessor for type "
                                                              : "lazy protocol witness table cache variable for type ");
        print(p, child(n, 0), false);
        outs(p, " and conformance ");
        print(p, child(n, 1), false);
        break;
    case K_AssociatedTypeMetadataAccessor:
        outs(p, "associated type metadata accessor for ");
        print(p, child(n, 1), false);
        outs(p, " in ");
        print(p, child(n, 0), false);
        break;
    case K_AssociatedTypeWitnessTableAccessor:
        outs(p, "associated type witness table accessor for ");
        print(p, child(n, 1), false);
        outs(p, " : ");
        print(p, child(n, 2), false);
        outs(p, " in ");
        print(p, child(n, 0), false);
        break;
    case K_BaseWitnessTableAccessor:
        outs(p, "base witness table accessor for ");
        print(p, child(n, 1), false);
        outs(p, " in ");
        print(p, child(n, 0), false);
        break;
    case K_AssociatedConformanceDescriptor: case K_DefaultAssociatedConformanceAccessor:
        outs(p, n->kind == K_AssociatedConformanceDescriptor ? "associated conformance descriptor for "
                                                             : "default associated conformance accessor for ");
        print(p, child(n, 0), false);
        outc(p, '.');
        print(p, child(n, 1), false);
        outs(p, ": ");
        print(p, child(n, 2), false);
        break;
    case K_FieldOffset:
        print(p, child(n, 0), false);
        outs(p, "field offset for ");
        print(p, child(n, 1), false);
        break;
    case K_Directness:
        outs(p, n->index == 0 ? "direct " : "indirect ");
        break;
    case K_ValueWitness:
        text(p, child(n, 0));
        outs(p, p->o.shorten_value_witness ? " for " : " value witness for ");
        print(p, child(n, 1), false);
        break;
    case K_KeyPathGetterThunkHelper: case K_KeyPathSetterThunkHelper: {
        outs(p, n->kind == K_KeyPathGetterThunkHelper ? "key path getter for " : "key path setter for ");
        print(p, child(n, 0), false);
        outs(p, " : ");
        for (uint32_t i = 1; i < n->nchildren; i++) {
            if (n->child[i]->kind == K_IsSerialized)
                outs(p, ", ");
            print(p, n->child[i], false);
        }
        break;
    }
    default:
        /* a node this printer does not know: refuse rather than print something wrong */
        p->bad = true;
        break;
    }
    p->depth--;
    return r;
}

static size_t print_root(char *buf, size_t cap, const swift_node *root, bool simplified, bool swift3)
{
    if (cap == 0)
        return 0;
    printer p;
    memset(&p, 0, sizeof p);
    p.buf = buf;
    p.cap = cap;
    bool full = !simplified;
    p.o.module_names = full;
    p.o.extension_contexts = full;
    p.o.unmangled_suffix = full;
    p.o.generic_specializations = full;
    p.o.protocol_conformances = full;
    p.o.where_clauses = full;
    p.o.entity_types = full;
    p.o.function_arg_types = full;
    p.o.shorten_partial_apply = simplified;
    p.o.shorten_thunk = simplified;
    p.o.shorten_value_witness = simplified;
    p.o.private_discriminators = full;
    p.o.async_resume_partial = full;
    p.o.swift3 = swift3;
    print(&p, root, false);
    if (p.bad || p.len == 0) {
        buf[0] = '\0';
        return 0;
    }
    buf[p.len] = '\0';
    return p.len;
}

size_t swift_print(char *buf, size_t cap, const swift_node *root, bool simplified)
{
    return print_root(buf, cap, root, simplified, false);
}

size_t swift_print_swift3(char *buf, size_t cap, const swift_node *root)
{
    return print_root(buf, cap, root, true, true);
}
