#!/usr/bin/env bash
# tests/bench/bench_alerts.sh [SECONDS] [PAIRS] - what alert rules cost report intake:
# tests/bench/bench_ingest.sh SECONDS (default 15) with no alert rule and with ten (two of
# each kind, posting to a receiver on loopback), alternating, PAIRS times (default 2), on the
# same machine in the same run, in ABBA order (none first in odd pairs, ten first in even
# ones) so that a drift of the machine's load does not favour one side. Prints each run's
# JSON line, then per pair the end-to-end and accepted reports/s and the ratio ten/none.
# Target: within 5% (ratio >= 0.95).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-15}
pairs=${2:-2}
out=()
for p in $(seq "$pairs"); do
  order="0 10"
  [ $((p % 2)) = 0 ] && order="10 0"
  for rules in $order; do
    line=$(ALERT_RULES=$rules tests/bench/bench_ingest.sh "$secs" | grep '^{"bench":"ingest"')
    echo "$line"
    out+=("$line")
  done
done
python3 - "${out[@]}" <<'PY'
import json, sys
runs = [json.loads(x) for x in sys.argv[1:]]
for i in range(0, len(runs) - 1, 2):
    a, b = sorted(runs[i:i + 2], key=lambda r: r["alert_rules"])
    print(f"pair {i // 2 + 1}: no rules {a['e2e_rps']} reports/s e2e ({a['post_rps']} accepted/s, "
          f"p99 {a['post_p99_ms']} ms); ten rules {b['e2e_rps']} e2e ({b['post_rps']} accepted/s, "
          f"p99 {b['post_p99_ms']} ms, {b['alert_events']} alert events); "
          f"ratio e2e {b['e2e_rps'] / a['e2e_rps']:.3f}, accepted {b['post_rps'] / a['post_rps']:.3f}")
PY
