#!/usr/bin/env bash
# ctest symcache_roundtrip: every (address -> frames) answer of the current .symc format equals
# the version-1 format's (tests/symcache_roundtrip.c), at every __TEXT byte of every fixture
# (each dSYM's DWARF file and each binary, for the symbol-table path) and of the real Xcode
# dSYMs in ../shared/real-xcode when present.
# Env: SYMCACHE_ROUNDTRIP (the tool), STACKSIFT_FIXTURES, STACKSIFT_SOURCE_DIR.
set -euo pipefail
tool=${SYMCACHE_ROUNDTRIP:?}
fixtures=${STACKSIFT_FIXTURES:?}
inputs=()
while IFS= read -r f; do inputs+=("$fixtures/$f"); done < <(python3 - "$fixtures/manifest.json" <<'PY'
import json, sys
seen = set()
for fx in json.load(open(sys.argv[1]))["fixtures"]:
    for key in ("dwarf", "binary"):
        if fx.get(key) and fx[key] not in seen:
            seen.add(fx[key])
            print(fx[key])
PY
)
shared=${STACKSIFT_SOURCE_DIR:-.}/../shared/real-xcode
if [ -d "$shared" ]; then
  while IFS= read -r f; do inputs+=("$f"); done < <(find "$shared" -path '*.dSYM/Contents/Resources/DWARF/*' -type f | sort)
fi
[ ${#inputs[@]} -gt 3 ] || { echo "symcache_roundtrip: too few inputs (${#inputs[@]})" >&2; exit 1; }
for f in "${inputs[@]}"; do
  [ -f "$f" ] || { echo "symcache_roundtrip: missing $f" >&2; exit 1; }
  "$tool" "$f"
done
echo "symcache_roundtrip: ${#inputs[@]} inputs, every answer equal"
