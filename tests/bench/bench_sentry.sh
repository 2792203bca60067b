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
# each phase from emptied tables and followed by draining the queue, in ROUNDS rounds (default 3)
# whose order alternates. Prints each phase (stderr): accepted/s, p50 and p99 (wrk), the server's
# and Postgres's CPU time per report (until drained), reports per commit and the share processed
# at intake; then one JSON line: the median of the rounds' envelope/report rate ratios, each
# round's figures, and the checks (every report processed, both forms of each crash in one
# group, no non-2xx). Both answer only once the report is committed (202 / 200). Targets
# (issue): the envelope rate at the reports rate of the same run, >= 5000/s, p99 < 25 ms with 8
# connections. Env: BUILD_DIR (default build; relative to the repo root, or absolute),
# STACKSIFT_FIXTURES (default build-fixtures), ROUNDS (3), CONNECTIONS (8), HTTP_THREADS (4),
# WORKERS (2), POOL (8), PERF_DIR (when set: `perf record -g` of the server during each phase
# into PERF_DIR/perf-reports.data and perf-envelopes.data, and of Postgres's backends into
# perf-pg-reports.data and perf-pg-envelopes.data; the last round's), CONTROL=1 (the Apple text
# in both phases: how far apart two phases of the same load come out).
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
# the intake's counters: commits (one INSERT statement each) and reports processed at intake
# (the rest go through the workers: a second read and write). Postgres's cost per report moves
# with the reports per commit (each statement has a fixed cost), which moves with the load.
intake() {
  curl -fs -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics" |
    awk '$1 == "stacksift_intake_commits_total" { c = $2 } $1 == "stacksift_intake_reports_total" { r = $2 }
         $1 == "stacksift_intake_processed_total" { p = $2 } END { print c + 0, r + 0, p + 0 }'
}
# "reports per commit, share processed at intake" between two intake() readings
per_commit() {
  python3 -c 'import sys; c0, r0, p0, c1, r1, p1 = map(float, sys.argv[1:]); dc, dr = c1 - c0, r1 - r0
print("%.1f %.3f" % (dr / dc if dc else 0, (p1 - p0) / dr if dr else 0))' $1 $2
}
tick_hz=$(getconf CLK_TCK)
per_item() { awk -v c="$1" -v hz="$tick_hz" -v n="$2" 'BEGIN { printf "%.1f", n ? c * 1e6 / hz / n : 0 }'; }

# One phase: NAME (reports or envelopes, or reports again with CONTROL=1) from emptied tables
# for $secs seconds, then drained. Sets ph_rps, ph_p50, ph_p99, ph_non2xx, ph_cpu, ph_pg,
# ph_n (reports stored processed), ph_bad (any other), ph_pc, ph_at.
phase() {
  local name=$1 out=$work/wrk-$1.txt lua=tests/bench/bench_ingest.lua
  local target=api/v1/reports n=$count
  if [ "$name" = envelopes ] && [ "${CONTROL:-0}" != 1 ]; then
    lua=tests/bench/bench_sentry.lua; target=""; n=$((count * copies))
  fi
  reset
  local i0 c0 p0 i1 c1 p1
  i0=$(intake); c0=$(cpu_ticks); p0=$(pg_ticks)
  perf_start "$name"
  BENCH_COUNT=$n wrk -t2 -c"$conns" -d"${secs}s" --latency -s "$lua" \
    "http://127.0.0.1:$port/$target" >"$out" 2>>"$work/wrk.err"
  drain
  perf_stop
  c1=$(cpu_ticks); p1=$(pg_ticks); i1=$(intake)
  ph_rps=$(awk '/^Requests\/sec/ {print $2}' "$out")
  ph_p50=$(ms 50% "$out"); ph_p99=$(ms 99% "$out")
  ph_non2xx=$(awk '/Non-2xx/ {print $5}' "$out"); ph_non2xx=${ph_non2xx:-0}
  ph_n=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'processed'")
  ph_bad=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status <> 'processed'")
  ph_cpu=$(per_item $((c1 - c0)) "$ph_n"); ph_pg=$(per_item $((p1 - p0)) "$ph_n")
  read -r ph_pc ph_at <<<"$(per_commit "$i0" "$i1")"
  # both forms of a crash must land in one group: every phase's fingerprints are kept aside
  psql "$url" -qc "INSERT INTO bench_fingerprints SELECT DISTINCT fingerprint FROM reports"
}

# Rounds of both phases, the order alternating (text first in odd rounds): the rate of one
# phase swings with what else the two cores do in its seconds (±15% between phases of the
# same load, CONTROL=1), so the ratio is the median of the rounds' ratios.
rounds=${ROUNDS:-3}
ratios=() r_all=() s_all=() bad=0 non2xx=0
for round in $(seq "$rounds"); do
  order="reports envelopes"
  [ $((round % 2)) = 0 ] && order="envelopes reports"
  for ph in $order; do
    phase "$ph"
    bad=$((bad + ph_bad)); non2xx=$((non2xx + ph_non2xx))
    printf -v line '%s/s, p50 %s ms, p99 %s ms, server CPU %s us, Postgres %s us, %s per commit, %s at intake' \
      "$ph_rps" "$ph_p50" "$ph_p99" "$ph_cpu" "$ph_pg" "$ph_pc" "$ph_at"
    if [ "$ph" = reports ]; then r_rps=$ph_rps r_line=$line r_json=$(printf '{"rps":%s,"p50_ms":%s,"p99_ms":%s,"cpu_us":%s,"pg_cpu_us":%s,"per_commit":%s,"at_intake":%s,"processed":%s}' "$ph_rps" "$ph_p50" "$ph_p99" "$ph_cpu" "$ph_pg" "$ph_pc" "$ph_at" "$ph_n")
    else s_rps=$ph_rps s_line=$line s_json=$(printf '{"rps":%s,"p50_ms":%s,"p99_ms":%s,"cpu_us":%s,"pg_cpu_us":%s,"per_commit":%s,"at_intake":%s,"processed":%s}' "$ph_rps" "$ph_p50" "$ph_p99" "$ph_cpu" "$ph_pg" "$ph_pc" "$ph_at" "$ph_n"); fi
  done
  ratio=$(python3 -c "print(round($s_rps / $r_rps, 2) if $r_rps > 0 else 0)")
  ratios+=("$ratio"); r_all+=("$r_json"); s_all+=("$s_json")
  echo "round $round (load $(cut -d' ' -f1-3 /proc/loadavg)): ratio $ratio" >&2
  echo "  POST /api/v1/reports (Apple text): $r_line" >&2
  echo "  POST /api/$project/envelope/ (gzip): $s_line" >&2
done
same=$(psql "$url" -Atc "SELECT count(DISTINCT fingerprint) FROM bench_fingerprints")
cat "$work/wrk.err" >&2 || true
median=$(python3 -c 'import statistics, sys; print(statistics.median(map(float, sys.argv[1:])))' "${ratios[@]}")
join() { local IFS=,; echo "$*"; }
printf '{"bench":"sentry","seconds":%s,"connections":%s,"rounds":%s,"rate_ratio_median":%s,"rate_ratios":[%s],' \
  "$secs" "$conns" "$rounds" "$median" "$(join "${ratios[@]}")"
printf '"reports":[%s],"envelopes":[%s],' "$(join "${r_all[@]}")" "$(join "${s_all[@]}")"
printf '"load":"%s","not_processed":%s,"fingerprints":%s,"non_2xx":%s}\n' \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$bad" "$same" "$non2xx"
echo "envelopes/reports rate ratio: median $median of $rounds rounds (${ratios[*]})"
