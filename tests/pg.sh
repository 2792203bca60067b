#!/usr/bin/env bash
# A private Postgres cluster for the tests, on loopback, with its unix socket inside DIR.
#   tests/pg.sh start DIR   initdb DIR/data if needed (reused on rerun), start it on a free
#                           loopback port (the previous one when still free), print its
#                           libpq URL on stdout and nothing else
#   tests/pg.sh stop DIR    fast shutdown; a stopped cluster is a no-op
# PG_FSYNC=on keeps fsync on (default off); PG_OPTS adds server options at start (e.g.
# "-c shared_preload_libraries=pg_stat_statements" to see what each statement costs).
# initdb refuses to run as root, so as root the cluster belongs to the `postgres` user.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: tests/pg.sh start|stop DIR" >&2
  exit 2
fi

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
  for v in 17 16 15 14 13; do
    if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then bindir=/usr/lib/postgresql/$v/bin; break; fi
  done
fi
if [ -z "$bindir" ]; then
  echo "pg.sh: no Postgres server binaries found (install postgresql)" >&2
  exit 1
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$dir"
  as_owner=(runuser -u postgres --)
fi

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# SO_REUSEADDR as Postgres sets it: connections in TIME_WAIT do not make the port busy.
port_free() {
  python3 -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

case "$cmd" in
start)
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    "${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync \
      >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  if "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    port=$(cat "$dir/port")
  else
    port=""
    if [ -f "$dir/port" ] && port_free "$(cat "$dir/port")"; then port=$(cat "$dir/port"); fi
    [ -n "$port" ] || port=$(free_port)
    echo "$port" >"$dir/port"
    # fsync off: test data need not survive a machine crash, and it keeps the tests fast.
    # PG_FSYNC=on keeps it on (tests/bench/bench_ingest.sh: durable means flushed to disk).
    "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir -c fsync=${PG_FSYNC:-off} -c max_connections=200 ${PG_OPTS:-}" \
      start >/dev/null || { tail -n 20 "$dir/server.log" >&2; exit 1; }
  fi
  echo "postgresql://postgres@127.0.0.1:$port/postgres"
  ;;
stop)
  if [ -f "$dir/data/PG_VERSION" ] && "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null
  fi
  ;;
*)
  echo "usage: tests/pg.sh start|stop DIR" >&2
  exit 2
  ;;
esac
