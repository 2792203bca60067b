# Projects and DSN keys: how a request's key is found (unit), and projects, keys, rotation and
# per-project grouping against a real Postgres (db).
stacksift_unit_test(test_auth_dsn SOURCES test_auth_dsn.c LIBS auth)
stacksift_unit_test(test_projects SOURCES test_projects.c server_harness.c
  LIBS auth store ingest PkgConfig::LIBPQ PkgConfig::JANSSON Threads::Threads LABELS db)
set_tests_properties(test_projects PROPERTIES TIMEOUT 180)
