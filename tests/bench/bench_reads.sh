#!/usr/bin/env bash
# tests/bench/bench_reads.sh [BIG_REPORTS] [SMALL_ISSUES] - the dashboard's reads over a large
# store: every read stays under 50 ms at p95 whatever the size of the issue it shows.
#
# A private Postgres (tests/pg.sh) and `stacksift serve`; two real crashes of the -O2 fixture
# app posted and grouped by the server (two issues, their models as the workers wrote them);
# then tests/bench/bench_reads.py loads, in SQL, BIG_REPORTS (default 1,000,000) copies of the
# first crash's report into its issue over the last 30 days (20 app versions, 6 OS versions,
# 8 device models) and SMALL_ISSUES (default 10,000) copies of the second issue with 20
# reports each, their counts and breakdown counters set from the rows as the intake and the
# workers keep them, plus sessions for the 20 releases; then times, through the HTTP API with a keep-alive
# connection, every read the dashboard (server/web/app.js) makes: issue list (each sort, a
# filter, a search, a deep cursor page), sparklines, the big and a small issue's page and its
# reports (first and deep pages), a report (JSON, text, raw), releases and a release page,
# call sites, missing dSYMs, projects. Prints p50/p95/max per read and one JSON line; exits
# 1 if a read's p95 is over TARGET_MS (default 50).
# Env: BUILD_DIR (build), STACKSIFT_FIXTURES (build-fixtures), SAMPLES (30 timed requests a
# read), TARGET_MS (50), HOLD=1 (keep the server and Postgres running afterwards, printing
# their URLs, until interrupted: to EXPLAIN a slow read on the loaded store).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
big=${1:-1000000}
small=${2:-10000}
build=${BUILD_DIR:-build}
case $build in /*) bin=$build/server/stacksift ;; *) bin=$root/$build/server/stacksift ;; esac
fixtures=${STACKSIFT_FIXTURES:-$root/build-fixtures}
[ -x "$bin" ] || { echo "bench_reads: build first ($bin)" >&2; exit 1; }
tests/fixtures/build.sh "$fixtures" >/dev/null

work=$(mktemp -d /tmp/stacksift-reads.XXXXXX)
chmod 755 "$work"   # as root, the cluster belongs to postgres, which must reach pg/
pgdir=$work/pg
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 130" INT TERM

url=$(tests/pg.sh start "$pgdir")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export STACKSIFT_DATABASE_URL=$url STACKSIFT_DATA_DIR=$work/data STACKSIFT_LISTEN=127.0.0.1:$port
export STACKSIFT_LOG_LEVEL=warn
"$bin" migrate >/dev/null
token=$("$bin" token create --name bench --scopes ingest,upload,read,admin | tail -1)
"$bin" serve 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
curl -fs -H "Authorization: Bearer $token" -F "file=@$fixtures/FixtureApp-dSYMs.zip" \
  "http://127.0.0.1:$port/api/v1/dsyms" >/dev/null
python3 tests/bench/bench_ingest_gen.py "$bin" "$fixtures" "$work/reports" 2
rc=0
python3 tests/bench/bench_reads.py --url "http://127.0.0.1:$port" --token "$token" \
  --pg "$url" --reports "$work/reports" --big "$big" --small "$small" \
  --samples "${SAMPLES:-30}" --target-ms "${TARGET_MS:-50}" || rc=$?
if [ "${HOLD:-0}" = 1 ]; then
  echo "bench_reads: holding: psql '$url'; http://127.0.0.1:$port (token $token)" >&2
  while kill -0 "$server_pid" 2>/dev/null; do sleep 5; done
fi
exit "$rc"
