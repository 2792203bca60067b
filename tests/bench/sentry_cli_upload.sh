#!/usr/bin/env bash
# tests/bench/sentry_cli_upload.sh - the benchmark dSYM through `sentry-cli debug-files upload
# --wait` against `POST /api/v1/dsyms` of the same file, in the same run (not a timed test).
#
# The input is tests/bench/symbolication.sh's BigApp.app.dSYM (>= 300 MB of DWARF) from
# $BENCH_DIR (default build-bench/; run symbolication.sh first to make it). A private Postgres
# (tests/pg.sh) and, for every measurement, a fresh database and a fresh `stacksift serve`, so
# that each upload does the whole work (nothing known before):
#   post   curl --data-binary @DWARF /api/v1/dsyms?name=BigApp, until its answer (the symcache
#          built and stored)
#   cli    the pinned sentry-cli (tests/sentry_cli/package-lock.json, installed into
#          $BUILD_DIR/sentry-cli-node like test_sentry_cli does) `debug-files upload --wait
#          BigApp.app.dSYM`: hashing, gzip, chunk POSTs, assemble, polling until ok
# alternately, BENCH_REPEAT times each (default 2); the fastest of each counts. Prints both,
# their ratio (target <= 1.5x) and where each upload's time went: the CPU of the client (curl
# or sentry-cli), of the server and of Postgres (its processes, live and exited, over the
# run), and for sentry-cli its three phases from the server's log: preparing (start to its
# first assemble request: it reads and hashes every file before sending anything), sending
# the chunks (to the second assemble request) and the assembly (to its end). The preparing
# phase plus the assembly, which is the POST's ingest, is a floor no answer of the server
# lowers.
# Env: BUILD_DIR (build), BENCH_DIR (build-bench), BENCH_REPEAT (2), BENCH_LOGS (a directory
# to keep the servers' logs and sentry-cli's output in; default: not kept); the servers'
# settings pass through (STACKSIFT_CHUNK_COMPRESSION=none: sentry-cli sends chunks as they are).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build}
bin=$root/$build/server/stacksift
bench=${BENCH_DIR:-$root/build-bench}
repeat=${BENCH_REPEAT:-2}
dsym=$bench/BigApp.app.dSYM
dwarf=$dsym/Contents/Resources/DWARF/BigApp
[ -x "$bin" ] || { echo "sentry_cli_upload: build first ($bin)" >&2; exit 1; }
[ -f "$dwarf" ] || { echo "sentry_cli_upload: no $dwarf: run tests/bench/symbolication.sh (same BENCH_DIR) first" >&2; exit 1; }

# The pinned client, as test_sentry_cli installs it.
node_dir=$root/$build/sentry-cli-node
cli=$node_dir/node_modules/@sentry/cli-linux-x64/bin/sentry-cli
if ! cmp -s "$root/tests/sentry_cli/package-lock.json" "$node_dir/.lock-installed" || [ ! -x "$cli" ]; then
  mkdir -p "$node_dir"
  cp "$root/tests/sentry_cli/package.json" "$root/tests/sentry_cli/package-lock.json" "$node_dir/"
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$root/tests/sentry_cli/package-lock.json" "$node_dir/.lock-installed"
fi

work=$(mktemp -d /tmp/stacksift-bench-cli.XXXXXX)
chmod 755 "$work"   # as root, the cluster belongs to postgres, which must reach pg/
pgdir=$work/pg
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  tests/pg.sh stop "$pgdir" >/dev/null 2>&1 || true
  if [ -n "${BENCH_LOGS:-}" ]; then
    mkdir -p "$BENCH_LOGS" && cp "$work"/serve-*.log "$work"/cli-*.out "$BENCH_LOGS"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
base=$(tests/pg.sh start "$pgdir")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export STACKSIFT_LISTEN=127.0.0.1:$port STACKSIFT_LOG_LEVEL=info STACKSIFT_MAX_UPLOAD_BYTES=4G
export PGOPTIONS="-c client_min_messages=warning"

now_ms() { date +%s%3N; }
tck=$(getconf CLK_TCK)
# CPU seconds (user + system) of process $1 so far.
cpu_of() { awk -v t="$tck" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }
# CPU seconds of the Postgres cluster so far: its live processes and the backends the
# postmaster has reaped (they exit when the server closes its connections).
pg_cpu() {
  local pm total p
  pm=$(head -1 "$pgdir/data/postmaster.pid")
  total=$(awk '{print $16 + $17}' "/proc/$pm/stat")
  for p in $(pgrep -P "$pm") "$pm"; do
    total=$(( total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0) ))
  done
  python3 -c "print(f'{$total / $tck:.2f}')"
}
TIMEFORMAT='%U %S'

# A fresh database and server: sets $token; the log goes to $work/serve-$1.log.
fresh() {
  local db=bench_$1
  psql "$base" -qAtc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  export STACKSIFT_DATABASE_URL=${base%/*}/$db STACKSIFT_DATA_DIR=$work/data-$1
  "$bin" migrate >/dev/null
  token=$("$bin" token create --name bench --scopes upload,read | tail -1)
  "$bin" serve 2>"$work/serve-$1.log" &
  server_pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
}
stop() {
  server_cpu=$(cpu_of "$server_pid")
  kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
  server_pid=""
  sleep 0.2   # the backends exit and are reaped
  pg_used=$(python3 -c "print(f'{$(pg_cpu) - $pg0:.2f}')")
}
# Client CPU seconds from bash's `time` output in $1 ("user system").
client_cpu() { awk '{printf "%.2f", $1 + $2}' "$1"; }
check_stored() {
  local n
  n=$(curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/v1/dsyms" |
      python3 -c 'import json,sys; print(sum(1 for d in json.load(sys.stdin)["dsyms"] if d["has_dwarf"]))')
  [ "$n" -ge 1 ] || { echo "sentry_cli_upload: $1 stored no debug file with DWARF" >&2; exit 1; }
}

mb=$(( $(stat -c %s "$dwarf") / 1000000 ))
echo "bench: $dwarf ($mb MB), sentry-cli $("$cli" --version | awk '{print $2}'), $repeat runs each"
best_post=""
best_cli=""
for i in $(seq "$repeat"); do
  fresh "post$i"
  pg0=$(pg_cpu)
  t0=$(now_ms)
  { time curl -fsS -o /dev/null -H "Authorization: Bearer $token" --data-binary @"$dwarf" \
         "http://127.0.0.1:$port/api/v1/dsyms?name=BigApp" ; } 2>"$work/time-post$i"
  t=$(( $(now_ms) - t0 ))
  check_stored post
  stop
  echo "  post $i: $t ms (CPU: curl $(client_cpu "$work/time-post$i") s, server $server_cpu s, Postgres $pg_used s)"
  [ -z "$best_post" ] || [ "$t" -lt "$best_post" ] && best_post=$t

  fresh "cli$i"
  home=$work/home-$i
  mkdir -p "$home"
  pg0=$(pg_cpu)
  t0=$(now_ms)
  { time HOME=$home SENTRY_URL=http://127.0.0.1:$port SENTRY_AUTH_TOKEN=$token SENTRY_ORG=bench \
      SENTRY_PROJECT=default "$cli" debug-files upload --wait "$dsym" >"$work/cli-$i.out" 2>&1 ; } \
      2>"$work/time-cli$i" || { cat "$work/cli-$i.out" >&2; exit 1; }
  t1=$(now_ms)
  t=$(( t1 - t0 ))
  check_stored cli
  stop
  chunk_ms=$(grep '"event":"chunks_stored"' "$work/serve-cli$i.log" |
             python3 -c 'import json,sys; print(round(sum(json.loads(l)["ms"] for l in sys.stdin)))')
  asm_ms=$(grep '"event":"dif_assembled"' "$work/serve-cli$i.log" |
           python3 -c 'import json,sys; print(round(sum(json.loads(l)["ms"] for l in sys.stdin)))')
  phases=$(grep '"route":"sentry_difs_assemble"' "$work/serve-cli$i.log" | python3 -c '
import datetime, json, sys
t0, t1 = int(sys.argv[1]), int(sys.argv[2])
ts = [int(datetime.datetime.strptime(json.loads(l)["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
          .replace(tzinfo=datetime.timezone.utc).timestamp() * 1000) for l in sys.stdin]
print(f"preparing {ts[0] - t0} ms, chunks {ts[1] - ts[0]} ms, assembly {t1 - ts[1]} ms"
      if len(ts) >= 2 else "phases: fewer than two assemble requests logged")' "$t0" "$t1")
  echo "  cli  $i: $t ms ($phases; CPU: sentry-cli $(client_cpu "$work/time-cli$i") s, server $server_cpu s, Postgres $pg_used s; server log: chunk POSTs $chunk_ms ms summed over concurrent requests, assembly $asm_ms ms)"
  [ -z "$best_cli" ] || [ "$t" -lt "$best_cli" ] && best_cli=$t
done
ratio=$(python3 -c "print(f'{$best_cli / $best_post:.2f}')")
echo "bench: POST /api/v1/dsyms $best_post ms, sentry-cli upload --wait $best_cli ms: ${ratio}x (target <= 1.5x)"
printf '{"dwarf_mb":%s,"post_ms":%s,"cli_ms":%s,"ratio":%s}\n' "$mb" "$best_post" "$best_cli" "$ratio"
