# Breakpad .sym files: the parser, the STACK CFI evaluator and the symcache a .sym becomes, on
# the shared crash.sym (../shared/minidumps/, never copied here) and hostile text; the walker
# with the .sym's CFI against the executable's own compact unwind and __eh_frame.
stacksift_unit_test(test_breakpad SOURCES test_breakpad.c LIBS breakpad dsym unwind minidump macho symcache LABELS "unit")
