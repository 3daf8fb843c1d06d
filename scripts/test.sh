#!/usr/bin/env bash
# The README's second command, and what CI runs (.ci/run): install what is missing, build with
# warnings as errors, and run every test with ctest (the fault run, the disk-full and damaged-store
# tests and the fuzz corpora replays included). Then, in CI (CI=true) or with --all:
#   - the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrent ones
#     under ThreadSanitizer (scripts/test-sanitizers.sh);
#   - every libFuzzer target for HOTROW_FUZZ_SECONDS (default 60) each (scripts/fuzz.sh).
# In CI the builds run one after another in the foreground (ASan first, then Release, TSan and the
# fuzzers); each test phase starts in the background as soon as its build is done and runs beside the builds and test phases after it: the suites mostly
# wait (on brokers, group sessions, child processes). (ctest's --test-load is no guard here: two
# compiler jobs and the fuzzers keep the load above any useful bound, and it then starts no test
# at all.) The log ends with the 20 slowest objects and tests and one table: phase, seconds, CPU
# seconds, tests run, passed (scripts/ci-phases.sh). HOTROW_TEST_JOBS tests run at once in each
# phase (default 4).
set -euo pipefail
cd "$(dirname "$0")/.."
all=false
if [[ ${CI:-} == true || ${1:-} == --all ]]; then all=true; fi
source scripts/ci-phases.sh

deps_env=(HOTROW_WITH_BROWSER=1)  # Chromium (and Node.js when missing) for tests/browser/
if $all; then deps_env+=(HOTROW_WITH_CLANG=1); fi  # the sanitizer and fuzz builds
release_tests=(ctest --test-dir build --output-on-failure -j"${HOTROW_TEST_JOBS:-4}" --timeout 900)

{
  phase deps env "${deps_env[@]}" bash scripts/install-deps.sh || { phase_summary; exit 1; }
  if ! $all; then
    phase build bash scripts/build.sh -DHOTROW_WERROR=ON || { phase_summary; exit 1; }
    phase tests "${release_tests[@]}" || true
    phase_summary
    exit
  fi
  started=()
  # The ASan tests are the longest phase (CPU-bound: each test runs two to five times slower), so
  # their build goes first; the Release tests mostly wait and fit beside them.
  if phase "asan build" bash scripts/test-sanitizers.sh address build; then
    started+=("asan tests")
    phase_bg "asan tests" bash scripts/test-sanitizers.sh address test
  fi
  if phase build bash scripts/build.sh -DHOTROW_WERROR=ON; then
    started+=(tests)
    phase_bg tests "${release_tests[@]}"
  fi
  if phase "tsan build" bash scripts/test-sanitizers.sh thread build; then
    started+=("tsan tests")
    phase_bg "tsan tests" bash scripts/test-sanitizers.sh thread test
  fi
  if phase "fuzz build" env HOTROW_FUZZ_STEP=build bash scripts/fuzz.sh; then
    phase fuzzing env HOTROW_FUZZ_STEP=run bash scripts/fuzz.sh "${HOTROW_FUZZ_SECONDS:-60}" || true
  fi
  for name in "${started[@]}"; do phase_wait "$name"; done
  phase_summary
}
