#!/usr/bin/env bash
# Install every Debian package that building, testing and the fixtures need.
# Idempotent; run as root (or with sudo available). Used by .ci/run and deploy/quickstart.sh.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ca-certificates
  libmicrohttpd-dev libjansson-dev libpq-dev libpcre2-dev libdwarf-dev libelf-dev zlib1g-dev
  libzip-dev zip unzip libssl-dev libzstd-dev
  liblz4-dev   # symcache display names (common/symcache): LZ4 blocks decode ~4x faster than zstd
  libdeflate-dev   # gzip bodies in one call (server/ingest/ingest_report.c); zlib streams the rest
  libcurl4-openssl-dev   # alert webhooks (server/ingest/alerts.c): HTTPS to Slack and others
  postgresql postgresql-client
  clang-14 lld-14 llvm-14 libclang-rt-14-dev
  curl jq python3 time
  wrk
  python3-yaml python3-jsonschema chromium   # tests/test_openapi.py, tests/browser (dashboard)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
