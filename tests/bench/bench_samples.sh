#!/usr/bin/env bash
# tests/bench/bench_samples.sh [INGEST_SECONDS] - privacy-API samples at fleet volume beside
# the reports-ingest rate, in the same run on the same machine.
#
# 1. tests/bench/bench_samples.py at the issue's size: 100 devices x 1,000 samples per build,
#    4 builds, 5 tags, 135 call sites (12 in-app frames symbolicated through the uploaded
#    dSYM, then system frames), gzip batches of 1,000 from 4 client threads, into a real
#    `stacksift serve` on a private Postgres (tests/pg.sh); samples/s posted until visible
#    (from the first POST until GET /api/v1/callsites shows every call site with its exact
#    count), split into posting and counting lag; CPU per sample of the server, Postgres and
#    the client; the machine's load meanwhile (1-minute load average before and after, and
#    the cores other processes kept busy); server peak RSS. RUNS runs (default 3), each on a
#    fresh instance: a JSON line each, then the summary (median, min, max).
# 2. tests/bench/bench_ingest.sh INGEST_SECONDS (default 10): reports/s end to end.
# Prints the JSON lines, then the two rates side by side. Targets: a median >= 50,000
# samples/s, RSS < 200 MB. Env: RUNS, BUILD_DIR (default build), STACKSIFT_FIXTURES (default
# build-fixtures).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-10}
build=${BUILD_DIR:-build}
export STACKSIFT_BIN=$root/$build/server/stacksift STACKSIFT_SOURCE_DIR=$root
export STACKSIFT_FIXTURES=${STACKSIFT_FIXTURES:-$root/build-fixtures}
[ -x "$STACKSIFT_BIN" ] || { echo "bench_samples: build first ($STACKSIFT_BIN)" >&2; exit 1; }
tests/fixtures/build.sh "$STACKSIFT_FIXTURES" >/dev/null

work=$(mktemp -d /tmp/stacksift-bench-samples.XXXXXX)
chmod 755 "$work"   # as root, the cluster belongs to postgres, which must reach pg/
cleanup() {
  tests/pg.sh stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
STACKSIFT_TEST_DATABASE_URL=$(tests/pg.sh start "$work/pg")
export STACKSIFT_TEST_DATABASE_URL

samples_out=$(python3 tests/bench/bench_samples.py --runs "${RUNS:-3}" --min-rate 50000) ||
  status=$?
tests/pg.sh stop "$work/pg" >/dev/null 2>&1 || true
echo "$samples_out"
samples_json=$(echo "$samples_out" | tail -1)
ingest_json=$(tests/bench/bench_ingest.sh "$secs" | grep '^{"bench":"ingest"')
echo "$ingest_json"
python3 - "$samples_json" "$ingest_json" <<'PY'
import json, sys
s, i = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"samples: median {s['samples_per_s']:.0f} samples/s posted until visible "
      f"({s['samples_per_s_min']:.0f}-{s['samples_per_s_max']:.0f} in {s['runs']} runs; "
      f"{s['samples_total']} samples, {s['calls']} calls, {s['callsites']} call sites, "
      f"exact={s['exact']}), CPU a sample: server {s['cpu_us_per_sample']['server']} us, "
      f"Postgres {s['cpu_us_per_sample']['postgres']} us; load {s['load1'][0]}-{s['load1'][1]}, "
      f"other processes {s['other_cores'][0]}-{s['other_cores'][1]} cores; "
      f"server peak RSS {s['rss_peak_mb']:.0f} MB (targets >= 50000/s, < 200 MB)")
print(f"reports: {i['e2e_rps']:.0f} reports/s end to end ({i['post_rps']} accepted/s)")
print(f"ratio: {s['samples_per_s'] / i['e2e_rps']:.1f} samples per report-time "
      "(a sample costs that much less than a report)" if i['e2e_rps'] else "ratio: n/a")
PY
exit "${status:-0}"
