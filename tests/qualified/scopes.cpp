// Functions in namespaces, a class and an anonymous namespace, some inlined at -O2: built by
// tests/qualified_names.py with and without DWARF linkage names (the same code both times).
namespace ns {

struct Widget {
    int scale;
    __attribute__((noinline)) int draw(int x);
    int area(int x) { return x * scale + 1; } // inlined into draw
};

int Widget::draw(int x)
{
    return area(x) * 3 + x;
}

namespace {
inline __attribute__((always_inline)) int helper(int v)
{
    volatile int k = v;
    return k * 7;
}
} // namespace

__attribute__((noinline)) int run(int v)
{
    return helper(v) + 2;
}

} // namespace ns

extern "C" int main(int argc, char **argv)
{
    (void)argv;
    ns::Widget w{argc};
    return w.draw(argc) + ns::run(argc);
}
