#!/usr/bin/env bash
# tests/bench/bench_formats.sh [SECONDS] [ROUNDS] - each SDK format's ingest beside POST
# /api/v1/reports of the same crashes as Apple text, in one run on one server (not a test; run
# by hand).
#
# A private Postgres (tests/pg.sh), one `stacksift serve` with its workers, the fixture dSYMs
# uploaded (warm symcaches), a project with a DSN key, 64 crashes written four ways by
# tests/bench/bench_formats_gen.py, then ROUNDS (default 3) of alternating wrk runs of SECONDS
# (default 10) each, one report per request, every request as its client sends it:
#   text     POST /api/v1/reports, Authorization: Bearer, text/plain (the reference)
#   kscrash  POST /api/v1/reports?token=..., KSCrashReportSinkStandard's multipart "reports"
#   bugsnag  POST /bugsnag/notify, Bugsnag-Api-Key (the project's DSN key), payload version 4.0
#   plcrash  POST /api/v1/reports, Authorization: Bearer, application/x-plcrashreporter
#   minidump POST /api/v1/reports, Authorization: Bearer, application/x-dmp (a Crashpad-style
#            arm64 dump of the same crash: the server walks its stacks)
#   ips      POST /api/v1/reports, Authorization: Bearer, application/json (the .ips JSON)
#   sentry   POST /api/{project}/envelope/, X-Sentry-Auth with the DSN key, sentry-cocoa's
#            event in an envelope (not gzip'd; a Sentry event carries no exception backtrace)
# Alternating rounds on the same server keep a busy shared machine from favouring one side; the
# queue is drained between runs, so each run starts with no backlog. Prints each run's
# reports/s, p50/p99, non-2xx and the server's CPU time per report (until drained: a cost that
# other load on the machine moves much less than throughput), then each format's ratio to text
# by the medians and by the means of its rounds' throughput (target >= 0.8) and by the median
# CPU per report (text's / the format's), and the load average before and after.
# Env: BUILD_DIR (default build), STACKSIFT_FIXTURES (default build-fixtures), CONNECTIONS (8),
# WORKERS (2), FORMATS (default "text kscrash bugsnag plcrash minidump ips sentry"; text is
# always run).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-10}
rounds=${2:-3}
bin=$root/${BUILD_DIR:-build}/server/stacksift
fixtures=${STACKSIFT_FIXTURES:-$root/build-fixtures}
conns=${CONNECTIONS:-8}
formats=${FORMATS:-text kscrash bugsnag plcrash minidump ips sentry}
case " $formats " in *" text "*) ;; *) formats="text $formats" ;; esac
command -v wrk >/dev/null || { echo "bench_formats: wrk is missing (deploy/install-deps.sh)" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench_formats: build first ($bin)" >&2; exit 1; }
tests/fixtures/build.sh "$fixtures" >/dev/null

work=$(mktemp -d /tmp/stacksift-bench-formats.XXXXXX)
chmod 755 "$work"
pgdir=$work/pg
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
url=$(tests/pg.sh start "$pgdir")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export STACKSIFT_DATABASE_URL=$url STACKSIFT_DATA_DIR=$work/data STACKSIFT_LISTEN=127.0.0.1:$port
export STACKSIFT_LOG_LEVEL=warn STACKSIFT_WORKERS=${WORKERS:-2}
"$bin" migrate >/dev/null
token=$("$bin" token create --name bench --scopes ingest,upload,read,admin | tail -1)
itoken=$("$bin" token create --name devices --scopes ingest | tail -1)
dsn=$("$bin" project create bench --name Bench | tail -1)
key=${dsn#*://}
key=${key%%@*}
project_id=${dsn##*/}
"$bin" serve 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
curl -fs -H "Authorization: Bearer $token" -F "file=@$fixtures/FixtureApp-dSYMs.zip" \
  "http://127.0.0.1:$port/api/v1/dsyms" >/dev/null

count=64
python3 tests/bench/bench_formats_gen.py "$fixtures" "$work/reports" $count
export BENCH_DIR=$work/reports BENCH_COUNT=$count

run() { # run FORMAT SECONDS OUT
  local ext path type hdr
  case $1 in
    text) ext=crash path=/api/v1/reports type=text/plain hdr="Authorization: Bearer $itoken" ;;
    kscrash) ext=kscrash path="/api/v1/reports?token=$itoken" hdr=""
      type="multipart/form-data; boundary=stacksift-bench-5d1c0a" ;;
    bugsnag) ext=bugsnag path=/bugsnag/notify type=application/json
      hdr="Bugsnag-Api-Key: $key|Bugsnag-Payload-Version: 4.0|Bugsnag-Sent-At: 2024-06-01T12:00:01Z" ;;
    plcrash) ext=plcrash path=/api/v1/reports type=application/x-plcrashreporter
      hdr="Authorization: Bearer $itoken" ;;
    minidump) ext=dmp path=/api/v1/reports type=application/x-dmp
      hdr="Authorization: Bearer $itoken" ;;
    ips) ext=ips path=/api/v1/reports type=application/json hdr="Authorization: Bearer $itoken" ;;
    sentry) ext=envelope path="/api/$project_id/envelope/" type=application/x-sentry-envelope
      hdr="X-Sentry-Auth: Sentry sentry_version=7, sentry_key=$key, sentry_client=sentry.cocoa/8.40.1" ;;
    *) echo "bench_formats: unknown format $1" >&2; exit 2 ;;
  esac
  BENCH_EXT=$ext BENCH_PATH=$path BENCH_TYPE=$type BENCH_HEADERS=$hdr BENCH_RUN=$(date +%s%N) \
    wrk -t2 -c"$conns" -d"$2s" --latency -s tests/bench/bench_formats.lua \
    "http://127.0.0.1:$port" >"$3" 2>>"$work/wrk.err"
}
drain() {
  for _ in $(seq 600); do
    q=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'received'")
    [ "$q" = 0 ] && break; sleep 0.1
  done
}
# warm up every path: symcaches mapped, stack cache filled, connections pooled
for f in $formats; do run "$f" 2 /dev/null; done
drain
ms() { awk -v p="$1" '$1 == p { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }' "$2"; }
# the server's CPU time (user + system, clock ticks) so far
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
tick_hz=$(getconf CLK_TCK)
results=$work/results.txt
: >"$results"
for r in $(seq "$rounds"); do
  for f in $formats; do
    c0=$(cpu_ticks)
    run "$f" "$secs" "$work/$f.txt"
    drain
    c1=$(cpu_ticks)
    rps=$(awk '/^Requests\/sec/ {print $2}' "$work/$f.txt")
    reqs=$(awk '/requests in/ {print $1}' "$work/$f.txt")
    non2xx=$(awk '/Non-2xx/ {print $5}' "$work/$f.txt")
    # server CPU per report, until the queue is drained: what a format costs whatever the
    # other load on the machine (throughput swings with the scheduler's share)
    cpu_us=$(awk -v c="$((c1 - c0))" -v hz="$tick_hz" -v n="$reqs" 'BEGIN { printf "%.1f", c * 1e6 / hz / n }')
    printf 'round %s %-8s %9.1f reports/s  p50 %6.2f ms  p99 %6.2f ms  non-2xx %s  server CPU %s us/report\n' \
      "$r" "$f" "$rps" "$(ms 50% "$work/$f.txt")" "$(ms 99% "$work/$f.txt")" "${non2xx:-0}" "$cpu_us"
    echo "$f $rps $cpu_us" >>"$results"
  done
done
cat "$work/wrk.err" >&2 || true
# how many were processed at intake (the rest by the workers), and the minidumps' walks
curl -fs -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics" |
  grep -E '^stacksift_(intake_processed_total|intake_reports_total|minidump_)' >&2 || true
stored=$(psql "$url" -Atc "SELECT format, count(*) FROM reports GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
python3 - "$results" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "$stored" <<'PY'
import json, statistics, sys
rps, cpu = {}, {}
for line in open(sys.argv[1]):
    f, v, c = line.split()
    rps.setdefault(f, []).append(float(v))
    cpu.setdefault(f, []).append(float(c))
t, tc = rps["text"], statistics.median(cpu["text"])
out = {"bench": "formats_ingest", "rps": rps, "cpu_us_per_report": cpu,
       "load_before": sys.argv[2], "load_after": sys.argv[3],
       "stored_by_format": sys.argv[4].strip(), "ratios": {}}
for f, v in rps.items():
    if f == "text":
        continue
    med, mean = statistics.median(v) / statistics.median(t), sum(v) / sum(t)
    out["ratios"][f] = {"median": round(med, 3), "mean": round(mean, 3),
                        "cpu": round(tc / statistics.median(cpu[f]), 3)}
print(json.dumps(out))
print(f"text: median {statistics.median(t):.1f} reports/s, {tc:.0f} us server CPU/report; load "
      f"average {sys.argv[2]} before, {sys.argv[3]} after")
for f, r in out["ratios"].items():
    print(f"{f}/text: median {statistics.median(rps[f]):.1f} reports/s, ratio {r['median']:.2f} "
          f"by medians, {r['mean']:.2f} by means ({'meets' if r['mean'] >= 0.8 else 'misses'} "
          f"the 0.8 target); by server CPU per report {r['cpu']:.2f}")
PY
