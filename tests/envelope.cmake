# Sentry envelope framing (common/envelope).
stacksift_unit_test(test_envelope SOURCES test_envelope.c LIBS envelope PkgConfig::JANSSON)
