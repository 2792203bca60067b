#!/usr/bin/env python3
"""gen_big_cpp.py OUTDIR [--unique U] [--tus N] [--funcs F] [--wide W] [--swift S] [--seed S]
- write a large C++ code base: U unique translation units, N in the program.

Each translation unit tu_bigmKKKKK.cpp has its own namespace big::bigmKKKKK::inventory_sync_service,
its own record types, class templates instantiated on them (so no two TUs share a template
instantiation that the linker or dsymutil's ODR uniquing would fold), virtual methods, lambdas
and F function templates, each instantiated once on nested allocator and policy types, whose
bodies call chains of small inline templates. At -O2 -g that is lots of DW_TAG_subprogram,
DW_TAG_inlined_subroutine (nested 3-4 deep), line-table rows, template parameter and type
DIEs: the shape of a big app's DWARF. The names are as long as real C++ names: a function's
demangled name spells out its template arguments (~460 characters on average, its lambdas'
and inlined templates' names as long). Each TU also has S functions named as Swift names them
(asm labels: `$s9bigmKKKKK15CheckoutSessionC...F` methods with generic, optional, array,
dictionary and Result arguments, and inlined into them a closure and a generic specialization
of a closure, whose names repeat the method's signature): a Swift app's DW_AT_linkage_names,
which `stacksift demangle` demangles (llvm-symbolizer-14 prints them raw). common.hpp holds the
templates all TUs share; main.cpp calls one function per TU so nothing is dead-stripped.
Deterministic for a seed.

Compiling hundreds of such TUs at -O2 -g takes hours on two shared cores, so only the U
unique ones are compiled; `--replicate OBJDIR` then writes the other N - U objects: object
K is a byte-for-byte copy of object K mod U with its marker "bigmJJJJJ" replaced by
"bigmKKKKK" (same length, so every offset stays valid). The marker is in every symbol,
mangled name, namespace and type name and in the file name, so each copy has its own
names, its own types (no ODR folding in dsymutil) and, once linked, its own addresses:
what compiling N distinct TUs would give, minus the distinct code.
"""
import argparse
import os
import random
import sys

COMMON = r"""// common.hpp - templates every generated TU instantiates on its own types.
#ifndef BIG_COMMON_HPP
#define BIG_COMMON_HPP
namespace big {

template <typename T, int N>
struct Ring {
    T slots[N];
    int head = 0;
    int size = 0;
    inline void put(const T &v) { slots[(head + size) % N] = v; if (size < N) size++; else head = (head + 1) % N; }
    inline const T &get(int i) const { return slots[(head + i) % N]; }
    template <typename F>
    inline long reduce(long init, F fn) const { for (int i = 0; i < size; i++) init = fn(init, get(i)); return init; }
};

template <typename T>
inline long weigh(const T &v) { return (long)v.a * 3 + (long)v.b - (long)v.c; }

template <typename T>
inline T blend(const T &x, const T &y) { T r = x; r.a = x.a + y.b; r.b = x.b ^ y.a; r.c = x.c - y.c; return r; }

template <typename T>
inline long score(const T &x, const T &y, int k) { T m = blend(x, y); return weigh(m) * k + weigh(blend(m, x)); }

template <typename T, typename U>
struct Pair {
    T first;
    U second;
    inline long mix() const { return weigh(first) ^ (weigh(second) << 1); }
};

// Policy and allocator templates that fn<N>'s are instantiated on, so that their names and their
// lambdas' names spell out nested template arguments as real C++ (std::, boost::, app
// frameworks) does: hundreds of characters each once demangled.
namespace storage { namespace detail {
template <typename T> struct Allocator { using value_type = T; };
template <typename K, typename V, typename A = Allocator<Pair<K, V>>> struct Policy { using alloc = A; };
template <typename... Ts> struct TypeList {};
}} // namespace storage::detail

struct Base {
    virtual ~Base() {}
    virtual long run(int k) = 0;
    virtual long cost() const { return 1; }
};

} // namespace big
#endif
"""


def marker(k):
    return f"bigm{k:05d}"


# Inner namespace of each TU: app code sits a few namespaces deep, and every record type's
# name carries the whole path.
INNER = "inventory_sync_service"

# Swift-style words for the Swift-named functions (types, methods, argument labels).
SW_TYPES = ["FeedStorage", "CheckoutSession", "ProfileViewModel", "SyncCoordinator", "MediaUploader",
            "NotificationRouter", "PaymentSheetController", "SearchIndexer"]
SW_ITEMS = ["Item", "Receipt", "Cart", "Attachment", "Participant", "Token", "Snapshot", "Section"]
SW_METHODS = ["fetch", "reload", "applyDiscount", "resolveConflicts", "render", "upload", "merge", "schedule"]
SW_LABELS = ["from", "to", "limit", "options", "completion", "filter", "at", "priority", "context", "policy"]


def sw_ident(s):
    """A Swift mangling identifier: its length, then its text."""
    return f"{len(s)}{s}"


def sw_type(rng, depth=0):
    """A Swift type's mangling: standard types, arrays, dictionaries, optionals and the module's
    own structs (AA: the module, substitution 0), nested up to 3 deep."""
    leaf = ["Si", "SS", "Sb", "Sd", "s5Int64V", "10Foundation4DateV", "10Foundation3URLV"]
    pick = rng.randrange(7 if depth < 3 else 3)
    if pick == 0:
        return rng.choice(leaf)
    if pick == 1:
        return f"AA{sw_ident(rng.choice(SW_ITEMS))}V"
    if pick == 2:
        return f"AA{sw_ident(rng.choice(SW_ITEMS))}V"
    if pick == 3:
        return f"Say{sw_type(rng, depth + 1)}G"
    if pick == 4:
        return f"SDy{rng.choice(['SS', 'Si', 's6UInt64V'])}{sw_type(rng, depth + 1)}G"
    if pick == 5:
        return f"{sw_type(rng, depth + 1)}Sg"
    return f"s6ResultOy{sw_type(rng, depth + 1)}s5Error_pG"


def sw_func(module, owner, kind, method, rng, generic=False):
    """The mangling of a method of module.owner (kind V struct, C class) with 2-4 labelled
    arguments of random types: `$s9bigmKKKKK15CheckoutSessionC13applyDiscount2to7options...tF`.
    Demangled: bigmKKKKK.CheckoutSession.applyDiscount(to: [Swift.String : ...], ...) -> ...
    generic: the first argument is of the method's generic parameter A."""
    n = rng.randrange(2, 5)
    labels = rng.sample(SW_LABELS, n)
    if rng.randrange(3) == 0:
        labels[0] = "_"
    lab = "".join("_" if l == "_" else sw_ident(l) for l in labels)
    types = [sw_type(rng) for _ in range(n)]
    if generic:
        types[0] = "x"
    params = "".join(t + ("_" if i == 0 else "") for i, t in enumerate(types)) + "t"
    result = rng.choice(["y", "Sb", sw_type(rng, 1)])
    throws = "K" if rng.randrange(2) else ""
    sig = "l" if generic else ""
    return f"$s{sw_ident(module)}{sw_ident(owner)}{kind}{sw_ident(method)}{lab}{result}{params}{throws}{sig}F"


def gen_swift(ns, k, nswift, rng):
    """nswift Swift-named functions (asm labels: their DWARF linkage names and symbols are Swift
    manglings of module `ns`, as a Swift app's dSYM has them), each calling two inlined
    Swift-named helpers that call the common templates: inline chains of Swift names."""
    out = []
    for i in range(nswift):
        owner = rng.choice(SW_TYPES)
        kind = rng.choice("VC")
        top = sw_func(ns, owner, kind, f"{rng.choice(SW_METHODS)}{i}", rng)
        # closure #1 in the method, and a generic specialization of a closure in it
        helper1 = f"{top}{rng.choice(['Sb', 'Si', 'y'])}{sw_type(rng, 2)}cfU_"
        helper2 = (f"{sw_func(ns, owner, kind, rng.choice(SW_METHODS) + 'Impl' + str(i), rng, True)}"
                   f"{rng.choice(['Sb', 'Si'])}{sw_type(rng, 2)}cfU0_{sw_type(rng, 1)}_Tg5")
        a = rng.randrange(40)
        out.append(f'static inline __attribute__((always_inline)) long swh{i}b(long q) __asm__("{helper2}");')
        out.append(f"static inline long swh{i}b(long q) {{ Rec{a} v{{(int)q, {i}, {k}}}; return weigh(blend(v, v)) + q; }}")
        out.append(f'static inline __attribute__((always_inline)) long swh{i}a(long q) __asm__("{helper1}");')
        out.append(f"static inline long swh{i}a(long q) {{ Rec{a} v{{(int)q, 3, {i}}}; return score(v, v, (int)q) ^ swh{i}b(q + 1); }}")
        out.append(f'__attribute__((noinline)) long sw{i}(int s, int k) __asm__("{top}");')
        out.append(f"__attribute__((noinline)) long sw{i}(int s, int k) {{ long acc = 0; "
                   f"for (int j = 0; j < k % 5 + 1; j++) acc += swh{i}a(s + j) * {rng.randrange(2, 9)}; return acc; }}")
        out.append("")
    return out


def gen_tu(k, funcs, wide, rng, nswift=40):
    ns = marker(k)
    ntypes = 40
    out = [f'// tu_{k}.cpp - generated by gen_big_cpp.py', '#include "common.hpp"',
           f"namespace big {{ namespace {ns} {{ namespace {INNER} {{",
           "using storage::detail::Allocator; using storage::detail::Policy; using storage::detail::TypeList;", ""]
    for t in range(ntypes):
        # Wide records with nested types and methods: the type DIEs a real app's DWARF has.
        kinds = ["int", "long", "double", "unsigned short", "char", "float", "long long"]
        fields = "".join(f" {rng.choice(kinds)} f{j};" for j in range(rng.randrange(8, 30)))
        out.append(f"struct Rec{t} {{ int a; int b; int c;{fields}")
        out.append(f"    struct Meta{t} {{ int tag; const char *label; double w; }} meta;")
        out.append(f"    enum Kind{t} {{ K{t}_A, K{t}_B, K{t}_C, K{t}_D }} kind;")
        out.append(f"    long sum{t}() const {{ return a + b + c; }}")
        out.append("};")
    out.append("")
    for t in range(3):
        out.append(f"""class Worker{t} : public Base {{
public:
    explicit Worker{t}(int s) : seed_(s) {{}}
    long run(int k) override {{ Ring<Rec{t}, {4 + t}> r; for (int i = 0; i < k; i++) {{ Rec{t} v{{i, seed_, k}}; r.put(v); }}
        return r.reduce(0, [this](long acc, const Rec{t} &v) {{ return acc + weigh(v) + seed_; }}); }}
    long cost() const override {{ return seed_ * {t + 2}; }}
private:
    int seed_;
}};""")
    out.append("")
    for i in range(funcs):
        a, b = rng.randrange(ntypes), rng.randrange(ntypes)
        n = rng.randrange(3, 9)
        # Each fn<i> is a template instantiated once on nested policy types (explicitly, below):
        # its name, and its inlined lambdas' and templates' names, are a few hundred characters.
        c, d, e = (rng.randrange(ntypes) for _ in range(3))
        alloc = f"Allocator<Pair<Rec{a}, Ring<Rec{b}, {n}>>>"
        policy = f"Policy<Ring<Rec{a}, {n}>, Pair<Rec{b}, Rec{c}>, Allocator<TypeList<Rec{c}, Rec{d}, Rec{e}>>>"
        body = ["template <typename Alloc, typename Pol>",
                f"__attribute__((noinline)) long fn{i}(int s, int k) {{",
                f"    Ring<Rec{a}, {n}> ring;",
                f"    Pair<Rec{a}, Rec{b}> p{{Rec{a}{{s, k, {i}}}, Rec{b}{{k, s, {i + 1}}}}};",
                "    long acc = p.mix();",
                f"    for (int i = 0; i < k % {n + 3} + 2; i++) {{",
                f"        Rec{a} v{{s + i, k ^ i, {rng.randrange(100)}}};",
                "        ring.put(blend(v, p.first));",
                "        acc += score(v, p.first, i);",
                "    }"]
        for j in range(rng.randrange(1, 4)):
            body.append(f"    auto l{j} = [&](long q) {{ return q * {rng.randrange(2, 9)} + weigh(ring.get({j})) + acc; }};")
            body.append(f"    acc ^= l{j}(s + {j});")
        if i % 5 == 0:
            body.append(f"    Worker{i % 3} w(s); acc += w.run(k & 7) + w.cost();")
        body.append(f"    return acc + ring.reduce({i}, [k](long x, const Rec{a} &r) {{ return x + weigh(r) * k; }});")
        body.append("}")
        body.append(f"template long fn{i}<{alloc}, {policy}>(int s, int k);")
        body.append(f"using fn{i}_t = long (*)(int, int);")
        body.append(f"static const fn{i}_t fn{i}_p = fn{i}<{alloc}, {policy}>;")
        out.extend(body)
        out.append("")
    out.extend(gen_swift(ns, k, nswift, rng))
    # Wide plain records reached only through pointers: cheap to compile, but Darwin's
    # standalone debug info emits every one in full (real apps' DWARF is half types).
    for w in range(wide):
        kinds = ["int", "long", "double", "unsigned", "char", "float", "short", "bool"]
        fields = " ".join(f"{rng.choice(kinds)} w{j};" for j in range(rng.randrange(20, 60)))
        out.append(f"struct Wide{w} {{ {fields} }};")
    for g in range(0, wide, 10):
        params = ", ".join(f"Wide{w} *p{w}" for w in range(g, min(g + 10, wide)))
        uses = " + ".join(f"(long)(p{w} != 0)" for w in range(g, min(g + 10, wide)))
        out.append(f"__attribute__((noinline)) long touch{g}({params}) {{ return {uses}; }}")
    out.append("")
    calls = " + ".join(f"fn{i}_p(s, k)" for i in range(0, funcs, max(1, funcs // 8)))
    calls += "".join(f" + sw{i}(s, k)" for i in range(0, nswift, max(1, nswift // 4)))
    out.append(f"}} // namespace {INNER}")
    out.append(f"long entry(int s, int k) {{ using namespace {INNER}; return {calls}; }}")
    out.append(f"}} }} // namespace big::{ns}")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--tus", type=int, default=500, help="TUs in the program")
    ap.add_argument("--unique", type=int, default=50, help="TUs actually compiled")
    ap.add_argument("--replicate", metavar="OBJDIR", help="write the copies of the compiled objects")
    ap.add_argument("--funcs", type=int, default=120)
    ap.add_argument("--wide", type=int, default=100, help="pointer-only wide record types per TU")
    ap.add_argument("--swift", type=int, default=40, help="Swift-named functions per TU")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.outdir, exist_ok=True)
    if args.replicate:
        replicate(args.replicate, args.tus, args.unique)
        return

    def write(name, text):
        path = os.path.join(args.outdir, name)
        if not os.path.exists(path) or open(path).read() != text:
            with open(path, "w") as f:
                f.write(text)

    write("common.hpp", COMMON)
    for k in range(args.unique):
        write(f"tu_{marker(k)}.cpp", gen_tu(k, args.funcs, args.wide, rng, args.swift))
    decls = "\n".join(f"namespace big {{ namespace {marker(k)} {{ long entry(int s, int k); }} }}"
                      for k in range(args.tus))
    calls = "\n".join(f"    t += big::{marker(k)}::entry(argc, {k});" for k in range(args.tus))
    write("main.cpp", f"{decls}\nint main(int argc, char **) {{\n    long t = 0;\n{calls}\n    return (int)(t & 0x7f);\n}}\n")


def replicate(objdir, tus, unique):
    """Write objdir/tu_bigmKKKKK.o for K in [unique, tus) from the compiled unique objects."""
    for k in range(unique, tus):
        src = os.path.join(objdir, f"tu_{marker(k % unique)}.o")
        dst = os.path.join(objdir, f"tu_{marker(k)}.o")
        if os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src):
            continue
        data = open(src, "rb").read()
        old, new = marker(k % unique).encode(), marker(k).encode()
        if data.count(old) == 0:
            sys.exit(f"gen_big_cpp: {src} has no {old!r}")
        with open(dst + ".tmp", "wb") as f:
            f.write(data.replace(old, new))
        os.replace(dst + ".tmp", dst)


if __name__ == "__main__":
    main()
