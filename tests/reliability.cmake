# Hostile requests, the upload race, slow clients and a frozen database against a
# real `stacksift serve` (tests/reliability/, Python 3 standard library, loopback only).
# Run by both CI runs (plain and ASan+UBSan); each test is bounded to well under a minute.
# The two timing tests (slow clients, frozen database) run alone: their bounds (1 s, 100 ms)
# are about the server, not about CPU taken by tests running beside them.
set(_rel_env "${STACKSIFT_TEST_ENV}")
foreach(t hostile upload_race slow_clients kill_nodes db_freeze auth)
  add_test(NAME reliability_${t}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reliability/test_${t}.py)
  set_tests_properties(reliability_${t} PROPERTIES LABELS "reliability;db" TIMEOUT 180
    ENVIRONMENT "${_rel_env}")
endforeach()
set_tests_properties(reliability_slow_clients reliability_db_freeze PROPERTIES RUN_SERIAL TRUE)
