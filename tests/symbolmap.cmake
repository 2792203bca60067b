# common/symbolmap: BCSymbolMaps and UUID maps of App Store (bitcode) dSYMs, parsed and
# applied (edge cases here; the real files in real_bitcode and test_sentry_cli_app_store).
stacksift_unit_test(test_symbolmap SOURCES test_symbolmap.c LIBS symbolmap)
