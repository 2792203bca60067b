#!/usr/bin/env bash
# tests/bench/bench_samples.sh [INGEST_SECONDS] - privacy-API samples at fleet volume beside
# the reports-ingest rate, in the same run on the same machine.
#
# 1. tests/bench/bench_samples.py at the issue's size: 100 devices x 1,000 samples per build,
#    4 builds, 5 tags, 135 call sites (12 in-app frames symbolicated through the uploaded
#    dSYM, then system frames), gzip batches of 1,000 from 4 client threads, into a real
#    `stacksift serve` on a private Postgres (tests/pg.sh); samples/s from the first POST
#    until GET /api/v1/callsites shows every call site with its exact count, split into
#    posting and counting lag; CPU per sample of the server and Postgres; server peak RSS.
# 2. tests/bench/bench_ingest.sh INGEST_SECONDS (default 10): reports/s end to end.
# Prints both JSON lines, then the two rates side by side. Targets: >= 50,000 samples/s,
# RSS < 200 MB. Env: BUILD_DIR (default build), STACKSIFT_FIXTURES (default build-fixtures).
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

samples_json=$(python3 tests/bench/bench_samples.py --min-rate 50000 | tail -1) || status=$?
tests/pg.sh stop "$work/pg" >/dev/null 2>&1 || true
echo "$samples_json"
ingest_json=$(tests/bench/bench_ingest.sh "$secs" | grep '^{"bench":"ingest"')
echo "$ingest_json"
python3 - "$samples_json" "$ingest_json" <<'PY'
import json, sys
s, i = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"samples: {s['samples_per_s']:.0f} samples/s ({s['samples_total']} samples, "
      f"{s['calls']} calls, {s['callsites']} call sites, exact={s['exact']}), "
      f"server peak RSS {s['rss_peak_mb']:.0f} MB (targets >= 50000/s, < 200 MB)")
print(f"reports: {i['e2e_rps']:.0f} reports/s end to end ({i['post_rps']} accepted/s)")
print(f"ratio: {s['samples_per_s'] / i['e2e_rps']:.1f} samples per report-time "
      "(a sample costs that much less than a report)" if i['e2e_rps'] else "ratio: n/a")
PY
exit "${status:-0}"
