#!/usr/bin/env bash
# tests/bench/bench_alerts.sh [SECONDS] [ROUNDS] - what alert rules cost report intake, on one
# server: a private Postgres (tests/pg.sh), one `stacksift serve`, a webhook receiver on
# loopback answering 200, the -O2 fixture app's dSYM uploaded, then ROUNDS (default 8, even)
# rounds of wrk posting the Apple-text reports of tests/bench/bench_ingest.sh for SECONDS
# (default 5) each, with no alert rule and with ten (two of each kind, posting to the
# receiver) in turn, in ABBA order (none, ten, ten, none, ...) so that a drift of the
# machine's load favours neither side. Before each round the reports and issues are deleted,
# so every round creates the same 64 issues: with ten rules that is 128 new-issue events made
# in the reports' transactions and delivered during the round, as in production.
# Per round: accepted reports/s (wrk), POST p99, reports/s end to end (first POST until every
# report is processed), CPU per report of the server and of Postgres (/proc), alert events
# made and delivered. Then per kind the medians, and the ratios ten/none: rates (>= 0.95
# means within 5%) and CPU per report (<= 1.05). On a shared machine the rates swing with the
# other load; CPU per report swings much less.
# NEW_ISSUES=0 keeps the issues from round to round (only the reports are deleted): no new
# issue, so no event but the spike sweep's first ones, the rules' cost on every report alone.
# Env: BUILD_DIR (build), STACKSIFT_FIXTURES (build-fixtures), CONNECTIONS (8), NEW_ISSUES (1).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-5}
rounds=${2:-8}
build=${BUILD_DIR:-build}
bin=$root/$build/server/stacksift
fixtures=${STACKSIFT_FIXTURES:-$root/build-fixtures}
conns=${CONNECTIONS:-8}
command -v wrk >/dev/null || { echo "bench_alerts: wrk is missing (deploy/install-deps.sh)" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench_alerts: build first ($bin)" >&2; exit 1; }
tests/fixtures/build.sh "$fixtures" >/dev/null

work=$(mktemp -d /tmp/stacksift-bench-alerts.XXXXXX)
chmod 755 "$work"   # as root, the cluster belongs to postgres, which must reach pg/
pgdir=$work/pg
server_pid=""
hook_pid=""
cleanup() {
  [ -n "$hook_pid" ] && kill "$hook_pid" 2>/dev/null && wait "$hook_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
url=$(tests/pg.sh start "$pgdir")
port=$(free_port)
export STACKSIFT_DATABASE_URL=$url STACKSIFT_DATA_DIR=$work/data STACKSIFT_LISTEN=127.0.0.1:$port
export STACKSIFT_LOG_LEVEL=warn STACKSIFT_HTTP_THREADS=4 STACKSIFT_WORKERS=2
export STACKSIFT_DB_POOL_SIZE=8 STACKSIFT_WORKER_BATCH=64
# deliver as soon as an event is due (the default poll is 1 s when idle)
export STACKSIFT_ALERT_POLL_MS=100
export PGOPTIONS="-c client_min_messages=warning"   # no NOTICE of the TRUNCATE cascades
"$bin" migrate >/dev/null
token=$("$bin" token create --name bench --scopes ingest,upload,read,admin | tail -1)

hook_port=$(free_port)
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$hook_port" &
hook_pid=$!

STACKSIFT_NODE_NAME=bench-alerts "$bin" serve 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
curl -fs -H "Authorization: Bearer $token" -F "file=@$fixtures/FixtureApp-dSYMs.zip" \
  "http://127.0.0.1:$port/api/v1/dsyms" >/dev/null
count=64
python3 tests/bench/bench_ingest_gen.py "$bin" "$fixtures" "$work/reports" $count
export BENCH_DIR=$work/reports BENCH_TOKEN=$token BENCH_COUNT=$count

drain() {
  for _ in $(seq 1200); do
    q=$(psql "$url" -Atc "SELECT count(*) FROM reports WHERE status = 'received'")
    [ "$q" = 0 ] && return; sleep 0.05
  done
}
# CPU time (ms) of the server; or (pg) of the whole Postgres cluster: the postmaster with
# the children it reaped (backends that exited) and its live children
cpu_ms() {
  local tck pm
  tck=$(getconf CLK_TCK)
  if [ "$1" != pg ]; then
    awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.0f", ($12 + $13) * 1000 / t }' "/proc/$1/stat"
    return
  fi
  pm=$(head -1 "$pgdir/data/postmaster.pid")
  { sed 's/^.*) //' "/proc/$pm/stat" | awk '{ print $12 + $13 + $14 + $15 }'
    for p in $(pgrep -P "$pm"); do
      sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }'
    done; } | awk -v t="$tck" '{ s += $1 } END { printf "%.0f", s * 1000 / t }'
}
set_rules() {   # set_rules N: exactly N rules, the five kinds in turn
  psql "$url" -qc "DELETE FROM alert_rules" >/dev/null
  local kinds=(new_issue regression spike crash_free new_callsite)
  for i in $(seq 0 $(($1 - 1))); do
    "$bin" alert add --kind "${kinds[i % 5]}" --url "http://127.0.0.1:$hook_port/rule$i" >/dev/null
  done
}

# Warm up: symcaches mapped, stack cache filled, connections pooled; the receiver reached.
set_rules 10
wrk -t2 -c4 -d2s -s tests/bench/bench_ingest.lua "http://127.0.0.1:$port/api/v1/reports" >/dev/null
drain

lines=()
for r in $(seq "$rounds"); do
  # ABBA: rounds 1, 4, 5, 8, ... without rules; 2, 3, 6, 7, ... with ten
  case $((r % 4)) in 1 | 0) n=0 ;; *) n=10 ;; esac
  set_rules "$n"
  if [ "${NEW_ISSUES:-1}" = 1 ]; then
    psql "$url" -qc "TRUNCATE issues CASCADE; DELETE FROM reports; DELETE FROM alert_events" >/dev/null
  else
    psql "$url" -qc "DELETE FROM reports; DELETE FROM alert_events" >/dev/null
  fi
  psql "$url" -qc "CHECKPOINT" >/dev/null
  srv0=$(cpu_ms "$server_pid")
  pg0=$(cpu_ms pg)
  t0=$(date +%s.%N)
  wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/bench_ingest.lua \
    "http://127.0.0.1:$port/api/v1/reports" >"$work/wrk.txt" 2>"$work/wrk.err"
  drain
  # the round ends when its alert events are delivered too (none pending)
  for _ in $(seq 600); do
    p=$(psql "$url" -Atc "SELECT count(*) FROM alert_events WHERE status = 'pending'")
    [ "$p" = 0 ] && break; sleep 0.05
  done
  t1=$(date +%s.%N)
  srv1=$(cpu_ms "$server_pid")
  pg1=$(cpu_ms pg)
  read -r total processed span made delivered < <(psql "$url" -AtF' ' -c "
    SELECT count(*), count(*) FILTER (WHERE status = 'processed'),
           extract(epoch FROM max(processed_at) - min(received_at)),
           (SELECT count(*) FROM alert_events),
           (SELECT count(*) FROM alert_events WHERE status = 'delivered')
    FROM reports")
  rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.txt")
  p99=$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }' "$work/wrk.txt")
  line=$(python3 -c "
import json, os, sys
total, processed, span = int('$total'), int('$processed'), float('${span:-0}' or 0)
print(json.dumps({'round': $r, 'alert_rules': $n, 'post_rps': float('$rps'), 'post_p99_ms': float('$p99'),
  'e2e_rps': round(processed / span, 1) if span > 0 else 0, 'posted': total, 'processed': processed,
  'round_s': round($t1 - $t0, 2),
  'server_cpu_us_per_report': round(($srv1 - $srv0) * 1000 / max(total, 1), 1),
  'pg_cpu_us_per_report': round(($pg1 - $pg0) * 1000 / max(total, 1), 1),
  'alert_events': int('$made'), 'delivered': int('$delivered'),
  'load_avg': round(os.getloadavg()[0], 1)}))")
  echo "$line"
  lines+=("$line")
done

python3 - "${lines[@]}" <<'PY'
import json, statistics, sys
runs = [json.loads(x) for x in sys.argv[1:]]
none = [r for r in runs if r["alert_rules"] == 0]
ten = [r for r in runs if r["alert_rules"] > 0]
def med(rs, k):
    return statistics.median(r[k] for r in rs)
keys = ["post_rps", "e2e_rps", "post_p99_ms", "server_cpu_us_per_report", "pg_cpu_us_per_report"]
out = {"bench": "alerts", "rounds": len(runs),
       "none": {k: med(none, k) for k in keys}, "ten": {k: med(ten, k) for k in keys},
       "ten_events_per_round": med(ten, "alert_events"),
       "ten_delivered_per_round": med(ten, "delivered"),
       "e2e_rps_range": {"none": [min(r["e2e_rps"] for r in none), max(r["e2e_rps"] for r in none)],
                         "ten": [min(r["e2e_rps"] for r in ten), max(r["e2e_rps"] for r in ten)]}}
out["ratio_ten_none"] = {k: round(out["ten"][k] / out["none"][k], 3) if out["none"][k] else None
                         for k in keys}
cpu = lambda r: r["server_cpu_us_per_report"] + r["pg_cpu_us_per_report"]
out["ratio_ten_none"]["cpu_us_per_report"] = round(statistics.median(map(cpu, ten)) /
                                                   statistics.median(map(cpu, none)), 3)
print(json.dumps(out))
r = out["ratio_ten_none"]
print(f"ten rules / none (medians of {len(ten)} and {len(none)} rounds): accepted {r['post_rps']}, "
      f"end to end {r['e2e_rps']}, CPU per report {r['cpu_us_per_report']} "
      f"(server {r['server_cpu_us_per_report']}, Postgres {r['pg_cpu_us_per_report']}); "
      f"{out['ten_events_per_round']} alert events made and {out['ten_delivered_per_round']} "
      f"delivered per ten-rule round; end-to-end rates of single rounds {out['e2e_rps_range']}")
PY
