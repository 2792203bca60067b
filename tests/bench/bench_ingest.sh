#!/usr/bin/env bash
# tests/bench/bench_ingest.sh [SECONDS] - sustained end-to-end ingest: POST -> grouped issue.
#
# A private Postgres (tests/pg.sh), `stacksift serve` with its workers, the -O2 fixture app's
# dSYM uploaded (warm symcaches), then wrk posting 30-frame Apple-text reports (64 distinct
# ones, random slides; tests/bench/bench_ingest_gen.py) with tests/bench/bench_ingest.lua for
# SECONDS (default 20). Prints, as one JSON line and readable lines:
#   reports/s accepted (wrk), p50/p99 POST latency (wrk), reports/s processed end to end
#   (first receipt to last processed), time from receipt to processed (p50/p99/max, from the
#   rows), the server's peak RSS, the stack-cache hit ratio, reports per group commit and
#   reports processed at intake (/metrics), CPU per report of the server and of Postgres
#   (/proc, from the POST phase's start until its reports are processed; the peer's server
#   CPU per request apart), WAL bytes, full-page
#   images and flushes per report and checkpoints during the run (pg_stat_wal,
#   pg_stat_bgwriter; a CHECKPOINT comes first), and the same-run peer: wrk on GET /healthz with the same connections (the
#   HTTP floor: req/s, p50, p99), as ratios.
# Every 202 is sent after the report's commit (store_intake's group commit). The private
# Postgres runs with fsync=off like the tests' (commits acknowledged, WAL written, not forced
# to disk); PG_FSYNC=on measures with every commit flushed to this machine's disk, where
# 8 connections can never exceed 8 reports per WAL flush.
# Targets: >= 5000 reports/s, p99 POST < 25 ms, server RSS < 150 MB.
# NODES=2 starts a second `stacksift serve` with its own data directory on the same
# Postgres (nothing shared but the database: it fetches the symcache from Postgres) and splits
# the connections between the two (two wrk processes at once); compare with NODES=1.
# Env: BUILD_DIR (default build), STACKSIFT_FIXTURES (default build-fixtures), CONNECTIONS (8),
# HTTP_THREADS (4), WORKERS (2), POOL (8), BATCH (64), NODES (1), PG_FSYNC (off),
# ALERT_RULES (0): that many alert rules (the five kinds in turn) posting to a receiver on
# loopback that answers 200, active during the run (tests/bench/bench_alerts.sh compares),
# PERF_DIR (when set: `perf record -g` of the server and of Postgres's backends during the
# POST phase into PERF_DIR/perf-server.data and perf-pg.data, and, when PG_OPTS loads
# pg_stat_statements, the phase's statements by total time into PERF_DIR/statements.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-20}
build=${BUILD_DIR:-build}
bin=$root/$build/server/stacksift
fixtures=${STACKSIFT_FIXTURES:-$root/build-fixtures}
conns=${CONNECTIONS:-8}
nodes=${NODES:-1}
command -v wrk >/dev/null || { echo "bench_ingest: wrk is missing (deploy/install-deps.sh)" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench_ingest: build first ($bin)" >&2; exit 1; }
tests/fixtures/build.sh "$fixtures" >/dev/null

work=$(mktemp -d /tmp/stacksift-bench.XXXXXX)
chmod 755 "$work"   # as root, the cluster belongs to postgres, which must reach pg/
pgdir=$work/pg
server_pid=""
second_pid=""
hook_pid=""
cleanup() {
  [ -n "$hook_pid" ] && kill "$hook_pid" 2>/dev/null && wait "$hook_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  [ -n "$second_pid" ] && kill "$second_pid" 2>/dev/null && wait "$second_pid" 2>/dev/null || true
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

url=$(tests/pg.sh start "$pgdir")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export STACKSIFT_DATABASE_URL=$url STACKSIFT_DATA_DIR=$work/data STACKSIFT_LISTEN=127.0.0.1:$port
export STACKSIFT_LOG_LEVEL=warn STACKSIFT_HTTP_THREADS=${HTTP_THREADS:-4} STACKSIFT_WORKERS=${WORKERS:-2}
export STACKSIFT_DB_POOL_SIZE=${POOL:-8} STACKSIFT_WORKER_BATCH=${BATCH:-64}
"$bin" migrate >/dev/null
token=$("$bin" token create --name bench --scopes ingest,upload,read,admin | tail -1)
if [ "${ALERT_RULES:-0}" -gt 0 ]; then
  hook_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$hook_port" &
  hook_pid=$!
  kinds=(new_issue regression spike crash_free new_callsite)
  for i in $(seq 0 $((ALERT_RULES - 1))); do
    "$bin" alert add --kind "${kinds[i % 5]}" --url "http://127.0.0.1:$hook_port/rule$i" >/dev/null
  done
fi
STACKSIFT_NODE_NAME=bench-a "$bin" serve 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
port2=$port
if [ "$nodes" = 2 ]; then
  port2=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  STACKSIFT_NODE_NAME=bench-b STACKSIFT_DATA_DIR=$work/data-b STACKSIFT_LISTEN=127.0.0.1:$port2 \
    "$bin" serve 2>"$work/serve-b.log" &
  second_pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port2/readyz" >/dev/null && break; sleep 0.1; done
fi
curl -fs -H "Authorization: Bearer $token" -F "file=@$fixtures/FixtureApp-dSYMs.zip" \
  "http://127.0.0.1:$port/api/v1/dsyms" >/dev/null

count=64
python3 tests/bench/bench_ingest_gen.py "$bin" "$fixtures" "$work/reports" $count
export BENCH_DIR=$work/reports BENCH_TOKEN=$token BENCH_COUNT=$count
# Warm up: symcaches mapped, stack cache filled once, connections pooled.
wrk -t2 -c4 -d2s -s tests/bench/bench_ingest.lua "http://127.0.0.1:$port/api/v1/reports" >/dev/null
if [ "$nodes" = 2 ]; then
  wrk -t2 -c4 -d2s -s tests/bench/bench_ingest.lua "http://127.0.0.1:$port2/api/v1/reports" >/dev/null
fi
for _ in $(seq 300); do
  q=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'received'")
  [ "$q" = 0 ] && break; sleep 0.1
done
psql "$url" -qc "TRUNCATE issues CASCADE; DELETE FROM reports" >/dev/null
psql "$url" -qc "CHECKPOINT" >/dev/null
# WAL written during the run (pg_stat_wal): bytes and full-page images per report, and how
# many times it was flushed (wal_sync: one per group of commits that waited on the disk).
wal_stats() {
  psql "$url" -AtF' ' -c "SELECT wal_bytes, wal_fpi, wal_sync FROM pg_stat_wal"
}
# Checkpoints (each one's writes and fsyncs compete with the WAL flushes the 202s wait for).
checkpoints() {
  psql "$url" -Atc "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter" 2>/dev/null ||
    psql "$url" -Atc "SELECT num_timed + num_requested FROM pg_stat_checkpointer"
}
ckpt0=$(checkpoints)
read -r wal_bytes0 wal_fpi0 wal_sync0 < <(wal_stats)
# CPU time (ms) of the server process and of every Postgres process (the postmaster's
# children: backends, WAL writer, checkpointer), from /proc.
cpu_ms() {
  local tck pids
  tck=$(getconf CLK_TCK)
  pids="$1"
  [ "$2" = pg ] && pids=$(pgrep -P "$(head -1 "$pgdir/data/postmaster.pid")" | tr '\n' ' ')
  for p in $pids; do cat "/proc/$p/stat" 2>/dev/null; done |
    awk -v t="$tck" '{ sub(/^.*\) /, ""); s += $12 + $13 } END { printf "%.0f", s * 1000 / t }'
}

# The server's own view of POST latency (first callback to answer sent): its histogram before
# and after the run; the difference gives this run's requests only.
post_hist() {
  curl -fs -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics" |
    awk -F'le="' '/^stacksift_http_request_duration_seconds_bucket\{route="reports_post"/ {
      split($2, a, "\""); split($2, b, "} "); print a[1], b[2] }'
}
hist0=$(post_hist)

# The peer: the same connections on the cheapest route. Its CPU is measured on its own: the
# reports' CPU is read around the POST phase only (a /healthz is ~1/20 of a report's work, but
# the peer phase sends ~25x as many requests).
perf_start() {
  perf_pid=""
  [ -n "${PERF_DIR:-}" ] || return 0
  mkdir -p "$PERF_DIR"
  psql "$url" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
    -c "SELECT pg_stat_statements_reset()" >/dev/null 2>&1 || true
  perf record -g -p "$server_pid" -o "$PERF_DIR/perf-server.data" 2>/dev/null &
  perf_pid=$!
  perf record -g -p "$(pgrep -P "$(head -1 "$pgdir/data/postmaster.pid")" | paste -sd,)" \
    -o "$PERF_DIR/perf-pg.data" 2>/dev/null &
  perf_pg_pid=$!
}
perf_stop() {
  [ -n "$perf_pid" ] || return 0
  kill -INT "$perf_pid" "$perf_pg_pid"
  wait "$perf_pid" "$perf_pg_pid" || true
  psql "$url" -c "SELECT calls, round(total_exec_time::numeric, 1) AS total_ms,
      round(mean_exec_time::numeric, 3) AS mean_ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 160) AS query
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 30" \
    >"$PERF_DIR/statements.txt" 2>/dev/null || true
}
peer_cpu0=$(cpu_ms "$server_pid" srv)
wrk -t2 -c"$conns" -d"$((secs / 4 + 1))s" --latency "http://127.0.0.1:$port/healthz" >"$work/peer.txt"
peer_cpu1=$(cpu_ms "$server_pid" srv)
srv_cpu0=$(cpu_ms "$server_pid" srv)
pg_cpu0=$(cpu_ms "" pg)

if [ "$nodes" = 2 ]; then
  # half the connections to each node at the same time; rates add up, latencies are node A's
  wrk -t1 -c"$((conns / 2))" -d"${secs}s" --latency -s tests/bench/bench_ingest.lua \
    "http://127.0.0.1:$port2/api/v1/reports" >"$work/wrk-b.txt" 2>>"$work/wrk.err" &
  wrk_b=$!
  wrk -t1 -c"$((conns / 2))" -d"${secs}s" --latency -s tests/bench/bench_ingest.lua \
    "http://127.0.0.1:$port/api/v1/reports" >"$work/wrk.txt" 2>>"$work/wrk.err"
  wait "$wrk_b"
else
  perf_start
  wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/bench_ingest.lua \
    "http://127.0.0.1:$port/api/v1/reports" >"$work/wrk.txt" 2>"$work/wrk.err"
  perf_stop
fi
posted_end=$(date +%s.%N)
for _ in $(seq 1200); do
  q=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'received'")
  [ "$q" = 0 ] && break; sleep 0.1
done
drained=$(date +%s.%N)
read -r wal_bytes1 wal_fpi1 wal_sync1 < <(wal_stats)
ckpts=$(($(checkpoints) - ckpt0))
srv_cpu1=$(cpu_ms "$server_pid" srv)
pg_cpu1=$(cpu_ms "" pg)
rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
hist1=$(post_hist)
metrics=$(curl -fs -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics")
ratio=$(echo "$metrics" | awk '/^stacksift_symbol_cache_hit_ratio/ {print $2}')
stats=$(psql "$url" -AtF' ' -c "
  SELECT count(*),
         count(*) FILTER (WHERE status = 'processed'),
         extract(epoch FROM max(processed_at) - min(received_at)),
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)),
         percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)),
         extract(epoch FROM max(processed_at - received_at)),
         (SELECT count(*) FROM issues)
  FROM reports")
read -r total processed span lag50 lag99 lagmax issues <<<"$stats"

rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.txt")
if [ "$nodes" = 2 ]; then
  rps=$(awk -v a="$rps" '/^Requests\/sec/ {print a + $2}' "$work/wrk-b.txt")
fi
peer_rps=$(awk '/^Requests\/sec/ {print $2}' "$work/peer.txt")
# wrk prints latency percentiles as e.g. "50%    3.21ms" / "99%  12.00ms" / "1.02s"
ms() { awk -v p="$1" '$1 == p { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }' "$2"; }
p50=$(ms 50% "$work/wrk.txt")
p99=$(ms 99% "$work/wrk.txt")
peer_p50=$(ms 50% "$work/peer.txt")
peer_p99=$(ms 99% "$work/peer.txt")
commits=$(echo "$metrics" | awk '/^stacksift_intake_commits_total/ {print $2}')
committed=$(echo "$metrics" | awk '/^stacksift_intake_reports_total/ {print $2}')
at_intake=$(echo "$metrics" | awk '/^stacksift_intake_processed_total/ {print $2}')
per_commit=$(awk -v a="${committed:-0}" -v b="${commits:-0}" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
# percentile of the histogram difference, linear within a bucket (ms)
read -r srv_p50 srv_p99 < <(python3 - "$hist0" "$hist1" <<'PY'
import sys
def parse(t):
    return {le: int(n) for le, n in (l.split() for l in t.splitlines() if l.strip())}
h0, h1 = parse(sys.argv[1]), parse(sys.argv[2])
les = sorted((float(k), k) for k in h1 if k != "+Inf")
total = h1.get("+Inf", 0) - h0.get("+Inf", 0)
def pct(q):
    want, lo, prev = q * total, 0.0, 0
    for le, k in les:
        c = h1[k] - h0.get(k, 0)
        if c >= want and c > prev:
            return 1000 * (lo + (le - lo) * (want - prev) / (c - prev))
        lo, prev = le, c
    return 1000 * les[-1][0]
print("%.2f %.2f" % (pct(0.5), pct(0.99)) if total else "0 0")
PY
)
e2e=$(python3 -c "print(round($processed / $span, 1) if $span > 0 else 0)")
non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.txt")

cat "$work/wrk.err" >&2 || true
printf '{"bench":"ingest","alert_rules":%s,"alert_events":%s,' "${ALERT_RULES:-0}" \
  "$(psql "$url" -Atc "SELECT count(*) FROM alert_events" 2>/dev/null || echo 0)"
printf '"nodes":%s,"seconds":%s,"connections":%s,"posted":%s,"processed":%s,"issues":%s,' \
  "$nodes" "$secs" "$conns" "$total" "$processed" "$issues"
printf '"post_rps":%s,"post_p50_ms":%s,"post_p99_ms":%s,"e2e_rps":%s,' "$rps" "$p50" "$p99" "$e2e"
printf '"lag_p50_s":%.3f,"lag_p99_s":%.3f,"lag_max_s":%.3f,"drain_after_post_s":%.2f,' \
  "$lag50" "$lag99" "$lagmax" "$(awk -v a="$drained" -v b="$posted_end" 'BEGIN { print a - b }')"
printf '"rss_peak_mb":%.1f,"stack_cache_hit_ratio":%s,"reports_per_commit":%s,"processed_at_intake":%s,' \
  "$(awk -v k="$rss_kb" 'BEGIN { print k / 1024 }')" "${ratio:-0}" "$per_commit" "${at_intake:-0}"
printf '"server_p50_ms":%s,"server_p99_ms":%s,' "$srv_p50" "$srv_p99"
wal_per_report=$(awk -v a="$wal_bytes0" -v b="$wal_bytes1" -v n="$total" 'BEGIN { printf "%.0f", (n > 0 ? (b - a) / n : 0) }')
fpi_per_report=$(awk -v a="$wal_fpi0" -v b="$wal_fpi1" -v n="$total" 'BEGIN { printf "%.3f", (n > 0 ? (b - a) / n : 0) }')
wal_flushes=$((wal_sync1 - wal_sync0))
srv_cpu_us=$(awk -v a="$srv_cpu0" -v b="$srv_cpu1" -v n="$total" 'BEGIN { printf "%.0f", (n > 0 ? (b - a) * 1000 / n : 0) }')
pg_cpu_us=$(awk -v a="$pg_cpu0" -v b="$pg_cpu1" -v n="$total" 'BEGIN { printf "%.0f", (n > 0 ? (b - a) * 1000 / n : 0) }')
peer_reqs=$(awk '/requests in/ {print $1}' "$work/peer.txt")
peer_cpu_us=$(awk -v a="$peer_cpu0" -v b="$peer_cpu1" -v n="${peer_reqs:-0}" 'BEGIN { printf "%.1f", (n > 0 ? (b - a) * 1000 / n : 0) }')
printf '"server_cpu_us_per_report":%s,"pg_cpu_us_per_report":%s,"peer_cpu_us_per_request":%s,' \
  "$srv_cpu_us" "$pg_cpu_us" "$peer_cpu_us"
printf '"wal_bytes_per_report":%s,"wal_fpi_per_report":%s,"wal_flushes":%s,"checkpoints":%s,' \
  "$wal_per_report" "$fpi_per_report" "$wal_flushes" "$ckpts"
printf '"pg_fsync":"%s","peer_healthz_rps":%s,"peer_p50_ms":%s,"peer_p99_ms":%s,' \
  "${PG_FSYNC:-off}" "$peer_rps" "$peer_p50" "$peer_p99"
printf '"post_vs_healthz":%.3f,"non_2xx":%s}\n' \
  "$(awk -v a="$rps" -v b="$peer_rps" 'BEGIN { print a / b }')" "${non2xx:-0}"
echo "POST: $rps reports/s, p50 ${p50} ms, p99 ${p99} ms, $per_commit reports per commit (target >= 5000/s, p99 < 25 ms)"
echo "server side (first callback -> answer sent): p50 ${srv_p50} ms, p99 ${srv_p99} ms"
echo "peer GET /healthz: $peer_rps req/s, p50 ${peer_p50} ms, p99 ${peer_p99} ms; POST/peer $(awk -v a="$rps" -v b="$peer_rps" 'BEGIN { printf "%.3f", a / b }')"
echo "end to end: $e2e reports/s processed; receipt -> processed p50 ${lag50}s p99 ${lag99}s; processed at intake since start (warm-up included): ${at_intake:-0} of ${committed:-0}"
echo "CPU per report (posted and processed): server $srv_cpu_us us, Postgres $pg_cpu_us us; server per GET /healthz $peer_cpu_us us"
echo "WAL: $wal_per_report bytes and $fpi_per_report full-page images per report; $wal_flushes flushes (posting and processing); $ckpts checkpoints"
echo "server peak RSS: $((rss_kb / 1024)) MiB (target < 150); stack cache hit ratio ${ratio:-0}"
