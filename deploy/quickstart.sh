#!/usr/bin/env bash
# Run stacksift on this machine: install what is missing, build, start a private Postgres
# cluster under ./.data, migrate, create tokens, start the server, print the URL and tokens.
# Running it again reuses the cluster, the tokens and a server that is still up.
#   deploy/quickstart.sh          start (or show) everything
#   deploy/quickstart.sh stop     stop the server and the cluster (data stays in ./.data)
# Environment: STACKSIFT_LISTEN (default 127.0.0.1:8080, or a free port if that is taken),
# and any other STACKSIFT_* variable `stacksift serve --help` lists.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
state=$root/.data
pgdir=$state/pg
bin=$root/build/server/stacksift

log() { echo "quickstart: $*" >&2; }

pg_bindir() {
  for v in 17 16 15 14 13; do
    if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then echo "/usr/lib/postgresql/$v/bin"; return; fi
  done
  log "no Postgres server binaries found (deploy/install-deps.sh installs postgresql)"
  exit 1
}

# initdb refuses to run as root: the cluster then belongs to the postgres user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

port_free() {
  python3 -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

server_running() {
  [ -f "$state/stacksift.pid" ] && kill -0 "$(cat "$state/stacksift.pid")" 2>/dev/null
}

if [ "${1:-}" = stop ]; then
  if server_running; then
    kill -TERM "$(cat "$state/stacksift.pid")"
    for _ in $(seq 1 100); do server_running || break; sleep 0.1; done
    log "server stopped"
  fi
  rm -f "$state/stacksift.pid"
  if [ -f "$pgdir/data/PG_VERSION" ]; then
    as_pg "$(pg_bindir)/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null 2>&1 || true
    log "Postgres stopped (data kept in $pgdir)"
  fi
  exit 0
fi

# 1. Packages and build.
deploy/install-deps.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target stacksift >&2

# 2. A private Postgres cluster with a password, on a loopback port.
bindir=$(pg_bindir)
mkdir -p "$pgdir"
chmod 700 "$state" 2>/dev/null || true
if [ "$(id -u)" -eq 0 ]; then
  # The postgres user must reach $pgdir: every parent needs o+x, the state dir is its own.
  chmod 711 "$state"
  chown postgres: "$pgdir"
fi
if [ ! -f "$pgdir/data/PG_VERSION" ]; then
  log "creating a Postgres cluster in $pgdir"
  python3 -c 'import secrets; print(secrets.token_hex(16))' >"$pgdir/password"
  chmod 600 "$pgdir/password"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$pgdir/password"
  as_pg "$bindir/initdb" -D "$pgdir/data" -U stacksift --pwfile="$pgdir/password" \
    --auth=scram-sha-256 -E UTF8 >"$pgdir/initdb.log" 2>&1 || { cat "$pgdir/initdb.log" >&2; exit 1; }
fi
password=$(cat "$pgdir/password")
if ! as_pg "$bindir/pg_ctl" -D "$pgdir/data" status >/dev/null 2>&1; then
  pgport=""
  if [ -f "$pgdir/port" ] && port_free "$(cat "$pgdir/port")"; then pgport=$(cat "$pgdir/port"); fi
  [ -n "$pgport" ] || pgport=$(free_port)
  echo "$pgport" >"$pgdir/port"
  as_pg "$bindir/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $pgport -c unix_socket_directories=$pgdir" start >/dev/null
  log "Postgres listening on 127.0.0.1:$pgport"
fi
pgport=$(cat "$pgdir/port")
admin_url="postgresql://stacksift:$password@127.0.0.1:$pgport/postgres"
if [ "$(psql "$admin_url" -Atc "SELECT 1 FROM pg_database WHERE datname = 'stacksift'")" != 1 ]; then
  psql "$admin_url" -qc "CREATE DATABASE stacksift" >/dev/null
fi
export STACKSIFT_DATABASE_URL="postgresql://stacksift:$password@127.0.0.1:$pgport/stacksift"
export STACKSIFT_DATA_DIR=${STACKSIFT_DATA_DIR:-$state/store}

# 3. Schema and tokens (created once, kept in .data/tokens.env).
"$bin" migrate >&2
if [ ! -f "$state/tokens.env" ]; then
  (
  umask 077
  {
    echo "INGEST_TOKEN=$("$bin" token create --name quickstart-devices --scopes ingest | tail -n 1)"
    echo "UPLOAD_TOKEN=$("$bin" token create --name quickstart-ci --scopes upload | tail -n 1)"
    echo "READ_TOKEN=$("$bin" token create --name quickstart-dashboard --scopes read | tail -n 1)"
    echo "ADMIN_TOKEN=$("$bin" token create --name quickstart-admin --scopes admin | tail -n 1)"
  } >"$state/tokens.env.new"
  )
  mv "$state/tokens.env.new" "$state/tokens.env"
fi
# shellcheck disable=SC1091
. "$state/tokens.env"

# 4. The server.
if server_running; then
  listen=$(cat "$state/listen")
  log "server already running (pid $(cat "$state/stacksift.pid"))"
else
  listen=${STACKSIFT_LISTEN:-127.0.0.1:8080}
  if [ -z "${STACKSIFT_LISTEN:-}" ] && ! port_free 8080; then listen=127.0.0.1:$(free_port); fi
  echo "$listen" >"$state/listen"
  STACKSIFT_LISTEN=$listen nohup "$bin" serve >>"$state/stacksift.log" 2>&1 &
  echo $! >"$state/stacksift.pid"
  for _ in $(seq 1 100); do
    curl -fsS "http://$listen/readyz" >/dev/null 2>&1 && break
    server_running || { tail -n 20 "$state/stacksift.log" >&2; log "server failed to start"; exit 1; }
    sleep 0.1
  done
  curl -fsS "http://$listen/readyz" >/dev/null || { log "server not ready: see $state/stacksift.log"; exit 1; }
fi

cat <<EOF
stacksift is running at http://$listen   (log: .data/stacksift.log, stop: deploy/quickstart.sh stop)

  INGEST_TOKEN=$INGEST_TOKEN
  UPLOAD_TOKEN=$UPLOAD_TOKEN
  READ_TOKEN=$READ_TOKEN
  ADMIN_TOKEN=$ADMIN_TOKEN
  STACKSIFT_DATABASE_URL=$STACKSIFT_DATABASE_URL

  curl -H "Authorization: Bearer \$UPLOAD_TOKEN" -F file=@App.dSYM.zip http://$listen/api/v1/dsyms
  curl -H "Authorization: Bearer \$INGEST_TOKEN" -H 'Content-Type: text/plain' --data-binary @App.crash http://$listen/api/v1/reports

  Dashboard: http://$listen/  (asks for READ_TOKEN once)
  Load demo data (fixture dSYMs, generated reports, the real corpus): deploy/demo.sh
EOF
