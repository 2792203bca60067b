#!/usr/bin/env bash
# tests/bench/bench_sentry.sh [SECONDS] - Sentry envelopes beside POST /api/v1/reports, same run.
#
# A private Postgres (tests/pg.sh), `stacksift serve` with its workers, the -O2 fixture app's
# dSYM uploaded (warm symcaches), a project with its DSN key. 64 30-frame crashes of the
# fixture app (tests/bench/bench_ingest_gen.py) are posted for SECONDS (default 20) each way
# with wrk and the same connections:
#   1. as Apple-text reports to POST /api/v1/reports (the peer: bench_ingest.sh's load), then
#   2. as sentry-cocoa events in gzip'd envelopes to POST /api/{project}/envelope/
#      (tests/bench/bench_sentry_gen.py: the same frames; each envelope a distinct event_id,
#      sent once, ENVELOPES_PER_S x SECONDS of them: an event_id sent again is stored once),
# and after each phase the queue is drained. Prints one JSON line: accepted/s, p50 and p99 of
# each phase (wrk), the server CPU time per report of each phase (until drained), reports
# processed, and envelope/report ratios. Both answer only once the
# report is committed (202 / 200). Targets (issue): the envelope rate at the reports rate of
# the same run, >= 5000/s, p99 < 25 ms with 8 connections.
# Env: BUILD_DIR (default build), STACKSIFT_FIXTURES (default build-fixtures), CONNECTIONS (8),
# HTTP_THREADS (4), WORKERS (2), POOL (8).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-20}
build=${BUILD_DIR:-build}
bin=$root/$build/server/stacksift
fixtures=${STACKSIFT_FIXTURES:-$root/build-fixtures}
conns=${CONNECTIONS:-8}
command -v wrk >/dev/null || { echo "bench_sentry: wrk is missing (deploy/install-deps.sh)" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench_sentry: build first ($bin)" >&2; exit 1; }
tests/fixtures/build.sh "$fixtures" >/dev/null

work=$(mktemp -d /tmp/stacksift-bench-sentry.XXXXXX)
chmod 755 "$work"   # as root, the cluster belongs to postgres, which must reach pg/
pgdir=$work/pg
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

url=$(tests/pg.sh start "$pgdir")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export STACKSIFT_DATABASE_URL=$url STACKSIFT_DATA_DIR=$work/data STACKSIFT_LISTEN=127.0.0.1:$port
export STACKSIFT_LOG_LEVEL=warn STACKSIFT_HTTP_THREADS=${HTTP_THREADS:-4} STACKSIFT_WORKERS=${WORKERS:-2}
export STACKSIFT_DB_POOL_SIZE=${POOL:-8}
"$bin" migrate >/dev/null
token=$("$bin" token create --name bench --scopes ingest,upload,read,admin | tail -1)
dsn=$("$bin" project create bench | sed -n 's/^DSN=//p')
key=$(echo "$dsn" | sed -E 's#^[a-z]+://([^@:]+).*#\1#')
project=${dsn##*/}
"$bin" serve 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
curl -fs -H "Authorization: Bearer $token" -F "file=@$fixtures/FixtureApp-dSYMs.zip" \
  "http://127.0.0.1:$port/api/v1/dsyms" >/dev/null

count=64
# Every envelope is sent once (an event_id sent again is stored once): enough for the run at
# up to ENVELOPES_PER_S (default 6000, above the 5000/s target).
copies=$(( (secs * ${ENVELOPES_PER_S:-6000} + count - 1) / count ))
python3 tests/bench/bench_ingest_gen.py "$bin" "$fixtures" "$work/reports" $count
python3 tests/bench/bench_sentry_gen.py "$bin" "$work/reports" $copies
export BENCH_DIR=$work/reports BENCH_TOKEN=$token BENCH_KEY=$key BENCH_PROJECT=$project
export BENCH_THREADS=2   # wrk -t below

drain() {
  for _ in $(seq 1200); do
    q=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'received'")
    [ "$q" = 0 ] && break; sleep 0.1
  done
}
ms() { awk -v p="$1" '$1 == p { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }' "$2"; }

# warm up both paths (symcaches mapped, stack cache filled, connections pooled)
BENCH_COUNT=$count wrk -t2 -c4 -d2s -s tests/bench/bench_ingest.lua "http://127.0.0.1:$port/api/v1/reports" >/dev/null
BENCH_COUNT=$((count * copies)) wrk -t2 -c4 -d2s -s tests/bench/bench_sentry.lua "http://127.0.0.1:$port/" >/dev/null
drain
psql "$url" -qc "TRUNCATE issues CASCADE; DELETE FROM reports; DELETE FROM report_claims" >/dev/null
psql "$url" -qc "CHECKPOINT" >/dev/null

# the server's CPU time (user + system, clock ticks) so far: per report it moves far less with
# the machine's other load than the rate does
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
tick_hz=$(getconf CLK_TCK)
c0=$(cpu_ticks)
BENCH_COUNT=$count wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/bench_ingest.lua \
  "http://127.0.0.1:$port/api/v1/reports" >"$work/wrk-reports.txt" 2>"$work/wrk.err"
drain
c1=$(cpu_ticks)
n_reports=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'processed'")
psql "$url" -qc "CHECKPOINT" >/dev/null
c2=$(cpu_ticks)
BENCH_COUNT=$((count * copies)) wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/bench_sentry.lua \
  "http://127.0.0.1:$port/" >"$work/wrk-sentry.txt" 2>>"$work/wrk.err"
drain
c3=$(cpu_ticks)
n_total=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'processed'")
n_sentry=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'processed' AND format = 'sentry'")
bad=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status <> 'processed'")
same=$(psql "$url" -Atc "SELECT count(DISTINCT fingerprint) FROM reports")
cat "$work/wrk.err" >&2 || true

r_rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk-reports.txt")
s_rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk-sentry.txt")
r50=$(ms 50% "$work/wrk-reports.txt"); r99=$(ms 99% "$work/wrk-reports.txt")
s50=$(ms 50% "$work/wrk-sentry.txt"); s99=$(ms 99% "$work/wrk-sentry.txt")
r_non=$(awk '/Non-2xx/ {print $5}' "$work/wrk-reports.txt"); s_non=$(awk '/Non-2xx/ {print $5}' "$work/wrk-sentry.txt")
ratio=$(python3 -c "print(round($s_rps / $r_rps, 2) if $r_rps > 0 else 0)")
r_cpu=$(awk -v c="$((c1 - c0))" -v hz="$tick_hz" -v n="$n_reports" 'BEGIN { printf "%.1f", n ? c * 1e6 / hz / n : 0 }')
s_cpu=$(awk -v c="$((c3 - c2))" -v hz="$tick_hz" -v n="$n_sentry" 'BEGIN { printf "%.1f", n ? c * 1e6 / hz / n : 0 }')
printf '{"bench":"sentry","seconds":%s,"connections":%s,"reports_rps":%s,"reports_p50_ms":%s,"reports_p99_ms":%s,' \
  "$secs" "$conns" "$r_rps" "$r50" "$r99"
printf '"envelopes_rps":%s,"envelopes_p50_ms":%s,"envelopes_p99_ms":%s,"rate_ratio":%s,' "$s_rps" "$s50" "$s99" "$ratio"
printf '"reports_cpu_us":%s,"envelopes_cpu_us":%s,"load":"%s",' "$r_cpu" "$s_cpu" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '"processed_reports":%s,"processed_envelopes":%s,"not_processed":%s,"fingerprints":%s,"non_2xx":"%s/%s"}\n' \
  "$n_reports" "$n_sentry" "$bad" "$same" "${r_non:-0}" "${s_non:-0}"
echo "POST /api/v1/reports (Apple text): $r_rps/s, p50 $r50 ms, p99 $r99 ms, server CPU $r_cpu us/report"
echo "POST /api/$project/envelope/ (gzip): $s_rps/s, p50 $s50 ms, p99 $s99 ms, server CPU $s_cpu us/envelope (ratio $ratio)"
