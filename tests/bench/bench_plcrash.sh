#!/usr/bin/env bash
# tests/bench/bench_plcrash.sh [SECONDS] [ROUNDS] - POST /api/v1/reports of .plcrash files beside
# the same crashes as Apple text, in one run (not a test; run by hand).
#
# A private Postgres (tests/pg.sh), one `stacksift serve` with its workers, the fixture dSYMs
# uploaded (warm symcaches), 64 crashes written both ways by tests/bench/bench_plcrash_gen.py,
# then ROUNDS (default 3) alternating wrk runs of SECONDS (default 10) each: Apple text as
# text/plain, then .plcrash as application/x-plcrashreporter (tests/bench/bench_plcrash.lua).
# Alternating rounds on the same server keep a busy shared machine from favouring one side.
# Prints each run's reports/s, p50/p99, and the plcrash/text ratio of the medians and of the
# means (the target: >= 0.8; on a busy machine the rounds swing, the mean of alternating rounds
# is the steadier figure). Env: BUILD_DIR (default build), STACKSIFT_FIXTURES (default build-fixtures),
# CONNECTIONS (8), WORKERS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-10}
rounds=${2:-3}
bin=$root/${BUILD_DIR:-build}/server/stacksift
fixtures=${STACKSIFT_FIXTURES:-$root/build-fixtures}
conns=${CONNECTIONS:-8}
command -v wrk >/dev/null || { echo "bench_plcrash: wrk is missing (deploy/install-deps.sh)" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench_plcrash: build first ($bin)" >&2; exit 1; }
tests/fixtures/build.sh "$fixtures" >/dev/null

work=$(mktemp -d /tmp/stacksift-bench-plcrash.XXXXXX)
chmod 755 "$work"
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
export STACKSIFT_LOG_LEVEL=warn STACKSIFT_WORKERS=${WORKERS:-2}
"$bin" migrate >/dev/null
token=$("$bin" token create --name bench --scopes ingest,upload,read,admin | tail -1)
"$bin" serve 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
curl -fs -H "Authorization: Bearer $token" -F "file=@$fixtures/FixtureApp-dSYMs.zip" \
  "http://127.0.0.1:$port/api/v1/dsyms" >/dev/null

count=64
python3 tests/bench/bench_plcrash_gen.py "$fixtures" "$work/reports" $count
export BENCH_DIR=$work/reports BENCH_TOKEN=$token BENCH_COUNT=$count

run() { # run EXT TYPE SECONDS OUT
  BENCH_EXT=$1 BENCH_TYPE=$2 wrk -t2 -c"$conns" -d"$3s" --latency -s tests/bench/bench_plcrash.lua \
    "http://127.0.0.1:$port/api/v1/reports" >"$4" 2>>"$work/wrk.err"
}
drain() {
  for _ in $(seq 600); do
    q=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'received'")
    [ "$q" = 0 ] && break; sleep 0.1
  done
}
# warm up both paths: symcaches mapped, stack cache filled, connections pooled
run crash text/plain 2 /dev/null
run plcrash application/x-plcrashreporter 2 /dev/null
drain
ms() { awk -v p="$1" '$1 == p { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }' "$2"; }
text_rps=() pl_rps=()
for r in $(seq "$rounds"); do
  for side in text plcrash; do
    if [ $side = text ]; then run crash text/plain "$secs" "$work/$side.txt"
    else run plcrash application/x-plcrashreporter "$secs" "$work/$side.txt"; fi
    rps=$(awk '/^Requests\/sec/ {print $2}' "$work/$side.txt")
    non2xx=$(awk '/Non-2xx/ {print $5}' "$work/$side.txt")
    printf 'round %s %-8s %9.1f reports/s  p50 %6.2f ms  p99 %6.2f ms  non-2xx %s\n' "$r" "$side" \
      "$rps" "$(ms 50% "$work/$side.txt")" "$(ms 99% "$work/$side.txt")" "${non2xx:-0}"
    if [ $side = text ]; then text_rps+=("$rps"); else pl_rps+=("$rps"); fi
    drain
  done
done
cat "$work/wrk.err" >&2 || true
python3 - "${text_rps[*]}" "${pl_rps[*]}" <<'PY'
import json, statistics, sys
t = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
mt, mp = statistics.median(t), statistics.median(p)
ratio_mean = sum(p) / sum(t)
print(json.dumps({"bench": "plcrash_ingest", "text_rps": t, "plcrash_rps": p,
                  "median_text_rps": mt, "median_plcrash_rps": mp,
                  "ratio_median": round(mp / mt, 3), "ratio_mean": round(ratio_mean, 3)}))
print(f"plcrash/text: medians {mp:.1f} / {mt:.1f} reports/s = {mp / mt:.2f}, means "
      f"{ratio_mean:.2f} ({'meets' if ratio_mean >= 0.8 else 'misses'} the 0.8 target)")
PY
