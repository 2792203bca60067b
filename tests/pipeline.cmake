# Grouping and the processing pipeline: signature unit tests; the end-to-end
# pipeline test drives the real `stacksift serve` with real Postgres and fixtures (label db).
stacksift_unit_test(test_signature SOURCES test_signature.c LIBS signature crashreport)
stacksift_unit_test(test_pipeline SOURCES test_pipeline.c server_harness.c
  LIBS signature PkgConfig::LIBPQ PkgConfig::JANSSON Threads::Threads LABELS db)
set_tests_properties(test_pipeline PROPERTIES TIMEOUT 600)
