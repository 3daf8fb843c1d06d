#!/usr/bin/env bash
# Runs eventsource_test.js with the npm eventsource client installed (from package-lock.json) under
# OUT_DIR. Usage: run.sh HOTROW_BIN OUT_DIR
set -euo pipefail
hotrow=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "eventsource test: $tool is missing (HOTROW_WITH_BROWSER=1 scripts/install-deps.sh)"; exit 1; }
done
if ! cmp -s "$here/package-lock.json" "$out/package-lock.json" || [[ ! -d $out/node_modules/eventsource ]]; then
  cp "$here/package.json" "$here/package-lock.json" "$out/"
  if ! (cd "$out" && npm ci --no-audit --no-fund --loglevel=error); then
    rm -f "$out/package-lock.json"
    echo "eventsource test: npm ci of eventsource failed (see above)"
    exit 1
  fi
fi
NODE_PATH="$out/node_modules" exec node "$here/eventsource_test.js" "$hotrow" "$out"
