#!/usr/bin/env bash
# The README's second command, and what CI runs: install what is missing, build with warnings as
# errors, and run every test with ctest (the fault run, the disk-full and damaged-store tests and the
# fuzz corpora replays included). Then, in CI (CI=true) or with --all:
#   - the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrent ones
#     under ThreadSanitizer (scripts/test-sanitizers.sh);
#   - every libFuzzer target for HOTROW_FUZZ_SECONDS (default 60) each (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { echo "== $1: $(( $(date +%s) - start ))s in all"; }
# HOTROW_WITH_BROWSER: install-deps adds Chromium (and Node.js when missing) for tests/browser/.
HOTROW_WITH_BROWSER=1 bash scripts/build.sh -DHOTROW_WERROR=ON
step build
ctest --test-dir build --output-on-failure -j"${HOTROW_TEST_JOBS:-2}" --timeout 900
step tests
if [[ "${CI:-}" == true || "${1:-}" == --all ]]; then
  bash scripts/test-sanitizers.sh address
  step "ASan+UBSan tests"
  bash scripts/test-sanitizers.sh thread
  step "TSan tests"
  bash scripts/fuzz.sh "${HOTROW_FUZZ_SECONDS:-60}"
  step "fuzzing"
fi
