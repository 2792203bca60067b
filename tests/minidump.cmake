# Minidumps: the reader (common/minidump) on the real dumps of ../shared/minidumps/ (never
# copied here), synthetic ARM64 dumps, and every truncation / bit flips of a real dump.
stacksift_unit_test(test_minidump SOURCES test_minidump.c LIBS minidump macho LABELS "unit")
