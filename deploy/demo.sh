#!/usr/bin/env bash
# Load a running stacksift with demo data and print the dashboard URL:
#   1. the fixture app's dSYMs (built by tests/fixtures/build.sh from tests/fixtures/src):
#      FixtureApp-dSYMs.zip (the -O2 app and FixtureKit) and the -O0 app's DWARF file;
#   2. crash and hang reports of that app made by deploy/demo_reports.py (two versions,
#      random slides, system frames, devices), grouped into a handful of real issues;
#   3. every real report in ../shared/corpus/reports/ (refused ones are listed with the reason:
#      only what is no crash report or is cut short); the KSCrash JSON reports go in one batch
#      the way KSCrash's standard sink sends them (multipart "reports", ?token= in the URL), the
#      Bugsnag events to /bugsnag/notify the way bugsnag-cocoa's notifier sends them (a project's
#      DSN key as the Bugsnag API key, Bugsnag-Payload-Version, Bugsnag-Integrity);
#   4. privacy-API sample batches of two builds from six test devices (deploy/demo_samples.py).
# Then it waits until the workers have processed the queue and counted the samples.
#
#   deploy/demo.sh                 after deploy/quickstart.sh: URL and tokens from ./.data
#   STACKSIFT_URL=http://127.0.0.1:8080 UPLOAD_TOKEN=... INGEST_TOKEN=... READ_TOKEN=... deploy/demo.sh
# Environment: STACKSIFT_URL, UPLOAD_TOKEN, INGEST_TOKEN, READ_TOKEN (default: .data/listen and
# .data/tokens.env as quickstart.sh leaves them), STACKSIFT_BIN (default build/server/stacksift),
# STACKSIFT_FIXTURES (default build-fixtures), STACKSIFT_CORPUS (default
# ../shared/corpus/reports), DEMO_WAIT_S (default 120: longest wait for the queue),
# BUGSNAG_API_KEY (a project's DSN key for the Bugsnag events; default: the key of a project
# "demo-bugsnag" made, or its key rotated, with `stacksift project` on STACKSIFT_DATABASE_URL,
# default the database deploy/quickstart.sh runs; with neither, the events go to
# POST /api/v1/reports with the ingest token).
# Running it twice posts the reports twice (counts double) but the KSCrash sink batch (stored
# once: the sink's retries name the same reports); the dSYMs are stored once.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { echo "demo: $*" >&2; }
die() { log "$*"; exit 1; }

if [ -f "$root/.data/tokens.env" ]; then
  while IFS='=' read -r k v; do   # the environment wins over the file
    case $k in INGEST_TOKEN|UPLOAD_TOKEN|READ_TOKEN) [ -n "${!k:-}" ] || printf -v "$k" %s "$v" ;; esac
  done <"$root/.data/tokens.env"
fi
if [ -z "${STACKSIFT_URL:-}" ] && [ -f "$root/.data/listen" ]; then
  STACKSIFT_URL=http://$(cat "$root/.data/listen")
fi
[ -n "${STACKSIFT_URL:-}" ] || die "no STACKSIFT_URL and no .data/listen: run deploy/quickstart.sh first"
for t in UPLOAD_TOKEN INGEST_TOKEN READ_TOKEN; do
  [ -n "${!t:-}" ] || die "no $t (deploy/quickstart.sh writes them to .data/tokens.env)"
done
url=${STACKSIFT_URL%/}
bin=${STACKSIFT_BIN:-$root/build/server/stacksift}
fixtures=${STACKSIFT_FIXTURES:-$root/build-fixtures}
corpus=${STACKSIFT_CORPUS:-$root/../shared/corpus/reports}
[ -x "$bin" ] || die "no stacksift binary at $bin (deploy/quickstart.sh builds it)"
[ -d "$corpus" ] || die "no report corpus at $corpus"
curl -fsS "$url/readyz" >/dev/null || die "$url/readyz does not answer 200: is the server running?"

# 1. Fixtures (a stamp makes this a no-op when they are current) and their dSYMs.
tests/fixtures/build.sh "$fixtures" >&2
upload() {   # upload FILE [NAME]: one dSYM upload, the answer's statuses on stderr
  local code
  code=$(curl -sS -o "$work/upload.json" -w '%{http_code}' -H "Authorization: Bearer $UPLOAD_TOKEN" \
    -F "file=@$1${2:+;filename=$2}" "$url/api/v1/dsyms")
  case "$code" in
    200|201) log "dSYM $(basename "$1"): $(jq -r '[.files[] | "\(.name) \(.arch) \(.uuid) \(.status)"] | join(", ")' "$work/upload.json")" ;;
    *) die "uploading $1 answered $code: $(cat "$work/upload.json")" ;;
  esac
}
work=$(mktemp -d /tmp/stacksift-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
upload "$fixtures/FixtureApp-dSYMs.zip"
upload "$fixtures/arm64-O0/FixtureApp.app.dSYM/Contents/Resources/DWARF/FixtureApp" FixtureApp

# 2 + 3. Reports: generated ones, then the real corpus.
python3 deploy/demo_reports.py "$bin" "$fixtures" "$work/reports" >&2
accepted=0 refused=0
post() {   # post FILE: one report; Content-Type from its first byte
  local ctype=text/plain code
  [ "$(head -c 1 "$1")" = "{" ] && ctype=application/json
  code=$(curl -sS -o "$work/post.json" -w '%{http_code}' -H "Authorization: Bearer $INGEST_TOKEN" \
    -H "Content-Type: $ctype" --data-binary "@$1" "$url/api/v1/reports")
  if [ "$code" = 202 ]; then
    accepted=$((accepted + 1))
  else
    refused=$((refused + 1))
    log "refused ($code) ${1#"$corpus/"}: $(jq -r '.error.message // .' "$work/post.json" 2>/dev/null | head -c 160)"
  fi
}
# Bugsnag: the project whose DSN key is the Bugsnag API key (docs/clients/bugsnag.md).
if [ -z "${STACKSIFT_DATABASE_URL:-}" ] && [ -f "$root/.data/pg/password" ] && [ -f "$root/.data/pg/port" ]; then
  STACKSIFT_DATABASE_URL="postgresql://stacksift:$(cat "$root/.data/pg/password")@127.0.0.1:$(cat "$root/.data/pg/port")/stacksift"
  export STACKSIFT_DATABASE_URL
fi
bugsnag_key=${BUGSNAG_API_KEY:-}
if [ -z "$bugsnag_key" ] && [ -n "${STACKSIFT_DATABASE_URL:-}" ]; then
  dsn=$("$bin" project create demo-bugsnag --name "Bugsnag demo" 2>/dev/null ||
        "$bin" project key rotate demo-bugsnag --grace 0 2>/dev/null || true)
  dsn=$(printf '%s\n' "$dsn" | sed -n 's/^DSN=[a-z]*:\/\/\([0-9a-fA-F]*\)@.*/\1/p' | tail -n 1)
  bugsnag_key=$dsn
  [ -z "$bugsnag_key" ] || sleep 1.2   # the server reads new keys twice a second
fi
[ -n "$bugsnag_key" ] || log "no Bugsnag API key (BUGSNAG_API_KEY, or STACKSIFT_DATABASE_URL to make one): Bugsnag events go to /api/v1/reports"
post_bugsnag() {   # post_bugsnag FILE: an event or payload as bugsnag-cocoa's notifier sends it
  local code sha
  sha=$(sha1sum "$1" | cut -d' ' -f1)
  code=$(curl -sS -o "$work/post.json" -w '%{http_code}' -H "Bugsnag-Api-Key: $bugsnag_key" \
    -H 'Bugsnag-Payload-Version: 4.0' -H "Bugsnag-Integrity: sha1 $sha" \
    -H 'Content-Type: application/json' --data-binary "@$1" "$url/bugsnag/notify")
  if [ "$code" = 202 ]; then
    accepted=$((accepted + $(jq '.reports // [1] | length' "$work/post.json")))
    bugsnag=$((bugsnag + 1))
  else
    refused=$((refused + 1))
    log "refused ($code, /bugsnag/notify) ${1#"$corpus/"}: $(jq -r '.error.message // .' "$work/post.json" 2>/dev/null | head -c 160)"
  fi
}
is_bugsnag() {   # a Bugsnag payload ("events") or event ("exceptions")
  [ "$(head -c 1 "$1")" = "{" ] && jq -e 'type == "object" and (has("exceptions") or (has("events") and has("apiKey")))' "$1" >/dev/null 2>&1
}
bugsnag=0
for f in "$work"/reports/*; do post "$f"; done
log "generated reports: $accepted accepted"
gen=$accepted
# KSCrash's standard sink: every pending report in one multipart body, the token in the URL.
ksfiles=()
while IFS= read -r f; do ksfiles+=("$f"); done < <(find "$corpus/kscrash-json" -type f -name '*.json' | sort)
if [ ${#ksfiles[@]} -gt 0 ]; then
  # the files as they are, one after the other in a JSON array (no re-encoding)
  { printf '['; sep=''; for f in "${ksfiles[@]}"; do printf '%s' "$sep"; cat "$f"; sep=','; done; printf ']'; } >"$work/reports.json"
  code=$(curl -sS -o "$work/sink.json" -w '%{http_code}' -H 'User-Agent: KSCrashReporter' \
    -F "reports=@$work/reports.json;type=application/json;filename=reports.json" \
    "$url/api/v1/reports?token=$INGEST_TOKEN")
  case "$code" in
    202|400) ;;
    *) die "KSCrash sink batch answered $code: $(cat "$work/sink.json")" ;;
  esac
  accepted=$((accepted + $(jq '.accepted' "$work/sink.json")))
  refused=$((refused + $(jq '.refused' "$work/sink.json")))
  for i in $(jq -r '.reports[] | select(.error) | .index' "$work/sink.json"); do
    log "refused (KSCrash sink) ${ksfiles[$i]#"$corpus/"}: $(jq -r ".reports[$i].error.message" "$work/sink.json" | head -c 160)"
  done
  log "KSCrash sink batch of ${#ksfiles[@]}: $(jq '.accepted' "$work/sink.json") accepted, $(jq '.refused' "$work/sink.json") refused"
fi
while IFS= read -r f; do
  if [ -n "$bugsnag_key" ] && is_bugsnag "$f"; then post_bugsnag "$f"; else post "$f"; fi
done < <(find "$corpus" -mindepth 2 -type f -not -path "$corpus/kscrash-json/*" | sort)
[ -z "$bugsnag_key" ] || log "Bugsnag notifier payloads: $bugsnag accepted at /bugsnag/notify (project demo-bugsnag or BUGSNAG_API_KEY's)"
log "corpus reports: $((accepted - gen)) accepted, $refused refused (not crash reports, or cut short: reasons above)"

# 4. Privacy-API samples, gzip as a device sends them.
sample_calls=$(python3 deploy/demo_samples.py "$bin" "$fixtures" "$work/samples")
for f in "$work"/samples/*.json; do
  gzip -c "$f" >"$f.gz"
  code=$(curl -sS -o "$work/post.json" -w '%{http_code}' -H "Authorization: Bearer $INGEST_TOKEN" \
    -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary "@$f.gz" \
    "$url/api/v1/samples")
  [ "$code" = 202 ] || die "sample batch $(basename "$f") answered $code: $(cat "$work/post.json")"
done
log "sample batches: $(ls "$work"/samples/*.json | wc -l) accepted, $sample_calls calls"

# Wait for the workers.
deadline=$(( $(date +%s) + ${DEMO_WAIT_S:-120} ))
while :; do
  queued=$(curl -fsS -H "Authorization: Bearer $READ_TOKEN" "$url/metrics" | awk '$1 == "stacksift_reports_queued" {print $2}')
  [ "${queued:-1}" = 0 ] && break
  [ "$(date +%s)" -lt "$deadline" ] || die "still $queued reports queued after ${DEMO_WAIT_S:-120} s (STACKSIFT_WORKERS=0?)"
  sleep 0.5
done
while :; do
  counted=$(curl -fsS -H "Authorization: Bearer $READ_TOKEN" "$url/api/v1/callsites?limit=1000" \
    | jq '[.callsites[].count] | add // 0')
  [ "$counted" -ge "$sample_calls" ] && break
  [ "$(date +%s)" -lt "$deadline" ] || die "only $counted of $sample_calls sampled calls counted after ${DEMO_WAIT_S:-120} s"
  sleep 0.5
done
issues=$(curl -fsS -H "Authorization: Bearer $READ_TOKEN" "$url/api/v1/issues?limit=200" | jq '.issues | length')
missing=$(curl -fsS -H "Authorization: Bearer $READ_TOKEN" "$url/api/v1/dsyms/missing" | jq '.missing | length')
cat <<EOF
demo loaded: $accepted reports accepted, $refused refused, $issues issues, $missing UUIDs waiting for a dSYM, $sample_calls privacy-API calls

  Dashboard: $url/   (paste the read token once: $READ_TOKEN)
EOF
