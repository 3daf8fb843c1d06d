#!/usr/bin/env bash
# Builds hotrow and its tests with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ and
# runs every test there. Any report fails the test that triggered it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOTROW_SANITIZE=address,undefined \
  -DHOTROW_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"${HOTROW_JOBS:-2}"
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j"${HOTROW_TEST_JOBS:-2}" --timeout 900
