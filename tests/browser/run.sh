#!/usr/bin/env bash
# ctest's entry to the browser test (label e2e): installs playwright-core as pinned by
# package-lock.json into OUT_DIR with `npm ci` (again only when the lock file changed), then runs
# status_page_test.js in Debian's headless Chromium against `hotrow demo`.
#   tests/browser/run.sh HOTROW_BIN OUT_DIR
# Never skips: without npm, the npm registry or /usr/bin/chromium it fails and says what is missing
# (scripts/test.sh installs Chromium through HOTROW_WITH_BROWSER=1 scripts/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
hotrow=${1:?usage: run.sh HOTROW_BIN OUT_DIR}
out=${2:?usage: run.sh HOTROW_BIN OUT_DIR}
mkdir -p "$out"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "browser test: $tool is missing (HOTROW_WITH_BROWSER=1 scripts/install-deps.sh)"; exit 1; }
done
if [[ ! -x /usr/bin/chromium ]]; then
  echo "browser test: /usr/bin/chromium is missing (HOTROW_WITH_BROWSER=1 scripts/install-deps.sh)"
  exit 1
fi
if ! cmp -s "$here/package-lock.json" "$out/package-lock.json" || [[ ! -d $out/node_modules/playwright-core ]]; then
  cp "$here/package.json" "$here/package-lock.json" "$out/"
  # Three tries: a registry that drops one request on a busy CI machine is not a failed test.
  installed=false
  for try in 1 2 3; do
    if (cd "$out" && npm ci --no-audit --no-fund --loglevel=error); then installed=true; break; fi
    echo "browser test: npm ci failed (try $try of 3)"
  done
  if ! $installed; then
    rm -f "$out/package-lock.json"  # so that the next run tries again
    echo "browser test: npm ci of playwright-core failed (see above)"
    exit 1
  fi
fi
NODE_PATH="$out/node_modules" exec node "$here/status_page_test.js" "$hotrow" "$out"
