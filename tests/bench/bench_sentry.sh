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
# and after each phase the queue is drained. Prints one JSON line: accepted/s, p50 and p99 of each
# phase (wrk), the server CPU time per report of each phase (until drained) and Postgres's,
# reports processed, and envelope/report ratios. Both answer only once the report is committed
# (202 / 200). Targets (issue): the envelope rate at the reports rate of the same run, >= 5000/s,
# p99 < 25 ms with 8 connections. Env: BUILD_DIR (default build; relative to the repo root, or
# absolute), STACKSIFT_FIXTURES (default build-fixtures), CONNECTIONS (8), HTTP_THREADS (4),
# WORKERS (2), POOL (8), PERF_DIR (when set: `perf record -g` of the server during each phase into
# PERF_DIR/perf-reports.data and perf-envelopes.data, and of Postgres's backends into
# perf-pg-reports.data and perf-pg-envelopes.data), CONTROL=1 (the Apple text in both phases: how
# far apart two phases of the same load come out).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-20}
build=${BUILD_DIR:-build}
case $build in /*) bin=$build/server/stacksift ;; *) bin=$root/$build/server/stacksift ;; esac
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
# Each phase starts from the same empty tables: the second would otherwise pay for the first's
# (its 64 issues updated tens of thousands of times leave as many dead row versions to prune,
# its reports deeper indexes): with the Apple text in both phases, the second ran at 0.87 of
# the first, Postgres's CPU per report +15%. The first's fingerprints are kept aside (both forms
# of a crash must land in one group).
reset() {
  psql "$url" -qc "TRUNCATE issues, reports, report_claims CASCADE" >/dev/null
  psql "$url" -qc "CHECKPOINT" >/dev/null
}
psql "$url" -qc "CREATE TABLE bench_fingerprints (fingerprint text)"
reset

# the server's CPU time (user + system, clock ticks) so far: per report it moves far less with
# the machine's other load than the rate does
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
# Postgres's: the postmaster, its live children and the children it has reaped (it shares the
# cores with the server, so its work per report counts as much)
pg_ticks() {
  python3 - "$(head -1 "$pgdir/data/postmaster.pid")" <<'PY'
import glob, sys
pm, total = sys.argv[1], 0
for f in glob.glob("/proc/[0-9]*/stat"):
    try:
        s = open(f).read()
    except OSError:
        continue
    pid, rest = s.split(" ", 1)
    v = rest[rest.rindex(")") + 2:].split()
    if pid == pm:
        total += sum(int(x) for x in v[11:15])
    elif v[1] == pm:
        total += int(v[11]) + int(v[12])
print(total)
PY
}
perf_start() {
  perf_pid=""
  [ -n "${PERF_DIR:-}" ] || return 0
  mkdir -p "$PERF_DIR"
  pgpids=$(pgrep -P "$(head -1 "$pgdir/data/postmaster.pid")" | paste -sd,)
  perf record -g -p "$server_pid" -o "$PERF_DIR/perf-$1.data" 2>/dev/null &
  perf_pid=$!
  perf record -g -p "$pgpids" -o "$PERF_DIR/perf-pg-$1.data" 2>/dev/null &
  perf_pg_pid=$!
}
perf_stop() {
  [ -z "$perf_pid" ] || { kill -INT "$perf_pid" "$perf_pg_pid"; wait "$perf_pid" "$perf_pg_pid" || true; }
}
tick_hz=$(getconf CLK_TCK)
c0=$(cpu_ticks); p0=$(pg_ticks)
perf_start reports
BENCH_COUNT=$count wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/bench_ingest.lua \
  "http://127.0.0.1:$port/api/v1/reports" >"$work/wrk-reports.txt" 2>"$work/wrk.err"
drain
perf_stop
c1=$(cpu_ticks); p1=$(pg_ticks)
n_reports=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'processed'")
bad_reports=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status <> 'processed'")
psql "$url" -qc "INSERT INTO bench_fingerprints SELECT DISTINCT fingerprint FROM reports"
reset
c2=$(cpu_ticks); p2=$(pg_ticks)
perf_start envelopes
if [ "${CONTROL:-0}" = 1 ]; then
  BENCH_COUNT=$count wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/bench_ingest.lua \
    "http://127.0.0.1:$port/api/v1/reports" >"$work/wrk-sentry.txt" 2>>"$work/wrk.err"
else
  BENCH_COUNT=$((count * copies)) wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/bench_sentry.lua \
    "http://127.0.0.1:$port/" >"$work/wrk-sentry.txt" 2>>"$work/wrk.err"
fi
drain
perf_stop
c3=$(cpu_ticks); p3=$(pg_ticks)
n_sentry=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'processed' AND (format = 'sentry' OR ${CONTROL:-0} = 1)")
bad=$(( bad_reports + $(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status <> 'processed'") ))
same=$(psql "$url" -Atc "SELECT count(DISTINCT f) FROM (SELECT fingerprint FROM reports UNION ALL SELECT fingerprint FROM bench_fingerprints) AS u(f)")
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
r_pg=$(awk -v c="$((p1 - p0))" -v hz="$tick_hz" -v n="$n_reports" 'BEGIN { printf "%.1f", n ? c * 1e6 / hz / n : 0 }')
s_pg=$(awk -v c="$((p3 - p2))" -v hz="$tick_hz" -v n="$n_sentry" 'BEGIN { printf "%.1f", n ? c * 1e6 / hz / n : 0 }')
printf '"reports_cpu_us":%s,"envelopes_cpu_us":%s,"reports_pg_cpu_us":%s,"envelopes_pg_cpu_us":%s,' \
  "$r_cpu" "$s_cpu" "$r_pg" "$s_pg"
printf '"load":"%s",' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '"processed_reports":%s,"processed_envelopes":%s,"not_processed":%s,"fingerprints":%s,"non_2xx":"%s/%s"}\n' \
  "$n_reports" "$n_sentry" "$bad" "$same" "${r_non:-0}" "${s_non:-0}"
echo "POST /api/v1/reports (Apple text): $r_rps/s, p50 $r50 ms, p99 $r99 ms, server CPU $r_cpu us/report, Postgres $r_pg us"
echo "POST /api/$project/envelope/ (gzip): $s_rps/s, p50 $s50 ms, p99 $s99 ms, server CPU $s_cpu us/envelope, Postgres $s_pg us (ratio $ratio)"
