# Release health and alerts (tests/releases/, Python 3 standard library) against a real
# `stacksift serve`, Postgres and, for alerts, a webhook receiver on loopback.
set(_releases_env "${STACKSIFT_TEST_ENV}")
foreach(t sessions alerts alert_isolation)
  add_test(NAME releases_${t}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/releases/test_${t}.py)
  set_tests_properties(releases_${t} PROPERTIES LABELS "releases;db" TIMEOUT 300
    ENVIRONMENT "${_releases_env}")
endforeach()

# The node-local cache of devices known stored (server/store/store_devcache.c), on its own.
stacksift_unit_test(test_store_devcache SOURCES test_store_devcache.c
  ${PROJECT_SOURCE_DIR}/server/store/store_devcache.c LIBS base Threads::Threads)
target_include_directories(test_store_devcache PRIVATE ${PROJECT_SOURCE_DIR}/server)
# The session parsers (server/ingest/sessions.c) without a database: times against timegm,
# refusals naming their field.
stacksift_unit_test(test_sessions_parse SOURCES test_sessions_parse.c LIBS ingest)
