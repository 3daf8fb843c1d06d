#!/usr/bin/env bash
# The README's second command, and what CI runs: install what is missing, build with warnings as
# errors, and run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/build.sh -DHOTROW_WERROR=ON
echo "build: $(( $(date +%s) - start ))s"
ctest --test-dir build --output-on-failure -j"${HOTROW_TEST_JOBS:-2}" --timeout 900
echo "tests: $(( $(date +%s) - start ))s in all"
