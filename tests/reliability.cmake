# Hostile requests, the upload race, slow clients and a database that stops answering against
# a real `stacksift serve` (tests/reliability/, Python 3 standard library, loopback only).
# Run by both CI runs (plain and ASan+UBSan); each test is bounded to well under a minute.
# The timing tests (slow clients; the database frozen, killed, cut off) run alone. Their
# bounds are correctness bounds that hold on a loaded machine (an answer within 5-10 s, /healthz
# within 1.5 s, recovery within 10 s: each well below the wait it catches); the tight figures
# are printed as FIGURE lines, for the record rather than the verdict.
set(_rel_env "${STACKSIFT_TEST_ENV}")
foreach(t hostile upload_race slow_clients kill_nodes auth early_answers)
  add_test(NAME reliability_${t}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reliability/test_${t}.py)
  set_tests_properties(reliability_${t} PROPERTIES LABELS "reliability;db" TIMEOUT 180
    ENVIRONMENT "${_rel_env}")
endforeach()
# test_db_outage.py --mode: SIGSTOP (freeze), SIGKILL and restart (kill), a proxy that stops
# relaying (drop).
foreach(mode freeze kill drop)
  add_test(NAME reliability_db_${mode}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reliability/test_db_outage.py --mode ${mode})
  set_tests_properties(reliability_db_${mode} PROPERTIES LABELS "reliability;db" TIMEOUT 240
    ENVIRONMENT "${_rel_env}" RUN_SERIAL TRUE)
endforeach()
set_tests_properties(reliability_slow_clients PROPERTIES RUN_SERIAL TRUE)
# test_inline.py: one HTTP thread; small crash reports run on it, nothing that waits for the
# database does (a frozen cluster of its own; /healthz timed).
add_test(NAME reliability_inline
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reliability/test_inline.py)
set_tests_properties(reliability_inline PROPERTIES LABELS "reliability;db" TIMEOUT 180
  ENVIRONMENT "${_rel_env}" RUN_SERIAL TRUE)
# A crash storm (test_storm.py): 5x the sustainable rate of reports of one new crash, on a
# fixed schedule from 200 connections, by storm_client (C, epoll: a load generator that costs
# little next to the server). STACKSIFT_STORM_SECONDS (default 20) sets the storm's length.
add_executable(storm_client ${CMAKE_CURRENT_SOURCE_DIR}/reliability/storm_client.c)
add_test(NAME reliability_storm
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reliability/test_storm.py)
set_tests_properties(reliability_storm PROPERTIES LABELS "reliability;db" TIMEOUT 300
  ENVIRONMENT "${_rel_env};STORM_CLIENT=$<TARGET_FILE:storm_client>" RUN_SERIAL TRUE)
