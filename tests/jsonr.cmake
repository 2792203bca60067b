# The JSON reader of the ingest paths, held to jansson's verdicts (jansson is its oracle).
stacksift_unit_test(test_jsonr SOURCES test_jsonr.c LIBS base PkgConfig::JANSSON m)
