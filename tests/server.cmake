# The service end to end: real `stacksift serve`, real Postgres (STACKSIFT_TEST_DATABASE_URL
# from tests/run.sh + tests/pg.sh), real fixtures over a loopback HTTP socket.
stacksift_unit_test(test_server SOURCES test_server.c server_harness.c
  LIBS PkgConfig::LIBPQ PkgConfig::JANSSON PkgConfig::ZLIB PkgConfig::LIBCRYPTO LABELS db)
set_tests_properties(test_server PROPERTIES TIMEOUT 600)

# Server pieces without a database: config table, err -> status, JSON log lines.
stacksift_unit_test(test_server_units SOURCES test_server_units.c
  LIBS config log http PkgConfig::JANSSON)
