# Grouping and the processing pipeline (issue #5): signature unit tests; the end-to-end
# pipeline test drives the real `stacksift serve` with real Postgres and fixtures (label db).
stacksift_unit_test(test_signature SOURCES test_signature.c LIBS signature crashreport)
