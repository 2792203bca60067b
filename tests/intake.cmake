# Durable ingest: the group commit of new reports against a real Postgres.
stacksift_unit_test(test_store_intake SOURCES test_store_intake.c server_harness.c
  LIBS store PkgConfig::LIBPQ PkgConfig::JANSSON Threads::Threads LABELS db)
set_tests_properties(test_store_intake PROPERTIES TIMEOUT 120)
