#!/usr/bin/env bash
# The README's second command, and what CI runs: install what is missing, build with warnings as
# errors, and run every test with ctest. Then, in CI (CI=true) or with --sanitizers, build the
# same tests with AddressSanitizer + UndefinedBehaviorSanitizer and run them again.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/build.sh -DHOTROW_WERROR=ON
echo "build: $(( $(date +%s) - start ))s"
ctest --test-dir build --output-on-failure -j"${HOTROW_TEST_JOBS:-2}" --timeout 900
echo "tests: $(( $(date +%s) - start ))s in all"
if [[ "${CI:-}" == true || "${1:-}" == --sanitizers ]]; then
  bash scripts/test-sanitizers.sh
  echo "sanitizer tests: $(( $(date +%s) - start ))s in all"
fi
