# The HTTP API document against the real server, the Grafana queries on the real schema,
# and the dashboard in headless Chromium.
# Both start a real `stacksift serve` on a database of their own in the tests' Postgres
# (STACKSIFT_TEST_DATABASE_URL, tests/run.sh) and use Debian's python3 with python3-yaml and
# python3-jsonschema (deploy/install-deps.sh).
set(_web_env "${STACKSIFT_TEST_ENV};STACKSIFT_BUILD_DIR=${PROJECT_BINARY_DIR}")

add_test(NAME test_openapi COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_openapi.py)
set_tests_properties(test_openapi PROPERTIES LABELS db TIMEOUT 300 ENVIRONMENT "${_web_env}")

# deploy/grafana's panel and variable queries on the real schema (migrations/0003 views).
add_test(NAME test_grafana COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_grafana.py)
set_tests_properties(test_grafana PROPERTIES LABELS db TIMEOUT 300 ENVIRONMENT "${_web_env}")
# npm ci of tests/browser/package-lock.json into the build dir, deploy/demo.sh into a fresh
# server, then tests/browser/dashboard.test.js; the screenshot lands in
# ${PROJECT_BINARY_DIR}/test-artifacts/ and its path is printed.
add_test(NAME test_browser COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/browser/run.py)
set_tests_properties(test_browser PROPERTIES LABELS "db;browser" TIMEOUT 600 ENVIRONMENT "${_web_env}")
# The real sentry-cli (npm ci of tests/sentry_cli/package-lock.json into the build dir)
# uploads the fixture dSYMs and executables with `debug-files upload --wait`; symbolication
# through what it stored is compared with llvm-symbolizer; bad input on the chunk routes.
add_test(NAME test_sentry_cli COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/sentry_cli/run.py)
set_tests_properties(test_sentry_cli PROPERTIES LABELS db TIMEOUT 600 ENVIRONMENT "${_web_env}")

# README.md and docs/ against the code: settings, links, commands, routes, paths, examples.
add_test(NAME test_docs COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_docs.py)
set_tests_properties(test_docs PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${_web_env}")
# The docs' copy-paste examples (docs/getting-started.md's first dSYM and report, the JSON
# stack of docs/clients/json-stacks.md) against a real server.
add_test(NAME test_docs_examples COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_docs_examples.py)
set_tests_properties(test_docs_examples PROPERTIES LABELS db TIMEOUT 300 ENVIRONMENT "${_web_env}")

# App Store (bitcode) dSYMs with the real sentry-cli: the UUID maps and BCSymbolMaps of
# ../shared/real-dsyms, in each order of arrival; reports revealed and regrouped; bad maps.
add_test(NAME test_sentry_cli_app_store
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/sentry_cli/app_store.py)
set_tests_properties(test_sentry_cli_app_store PROPERTIES LABELS db TIMEOUT 600
  ENVIRONMENT "${_web_env}")

# Breakpad .sym files uploaded with the real sentry-cli and POST /api/v1/dsyms: stored for
# their MODULE UUID, symbolicated, replaced by the dSYM of the same UUID; bad .sym files.
add_test(NAME test_sentry_cli_breakpad
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/sentry_cli/breakpad.py)
set_tests_properties(test_sentry_cli_breakpad PROPERTIES LABELS db TIMEOUT 600
  ENVIRONMENT "${_web_env}")
