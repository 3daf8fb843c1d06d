#!/usr/bin/env bash
# Builds hotrow and its tests with sanitizers and runs the tests there. Any report fails the test
# (or the child process) that triggered it.
#   address: AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/, every test but those
#            labelled `e2e` (multi-process end-to-end runs of the Release binary: they test the
#            processes' choreography, and every piece inside them is covered in-process here).
#            Their executables are not built here; ctest lists each as <group>_NOT_BUILT, skipped.
#   thread:  ThreadSanitizer in build-tsan/, the tests labelled `concurrent` (ingest pipeline, query
#            pool, HTTP server, serve end to end, the fault run): the single-threaded suites gain
#            nothing from it and the query oracle alone would take ten minutes.
# Usage: scripts/test-sanitizers.sh [address|thread|all] [build|test|both]   (default: all both)
# scripts/test.sh builds one sanitizer while the previous one's tests run (they mostly wait).
set -euo pipefail
cd "$(dirname "$0")/.."
HOTROW_WITH_CLANG=1 bash scripts/install-deps.sh
source scripts/build-env.sh
which=${1:-all}
step=${2:-both}

# clang (installed for the fuzzers): it compiles the instrumented builds in about a third less CPU
# than GCC (tests/http/http_device_test.cc under ASan+UBSan: 18-21 s against 28-29 s), and its
# sanitizers are the upstream ones GCC's are taken from. -O1 -g1: -O1 compiles in 60 % of the time
# of RelWithDebInfo's -O2, and line tables only (-g1) cost a quarter less CPU than -g. Line tables
# keep the inlined frames, so a report's stack is the same; only the variables are gone, which a
# report does not print. The Release build stays with GCC: it is what bench/run measures.
configure_and_build() {  # dir sanitizers [target]
  CC=clang CXX=clang++ hotrow_configure "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOTROW_SANITIZE="$2" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DHOTROW_BUILD_BENCH=OFF
  hotrow_compile "$1" ${3:+"$3"}
}

if [[ $which == address || $which == all ]]; then
  if [[ $step != test ]]; then configure_and_build build-asan address,undefined; fi
  if [[ $step != build ]]; then
    # One round of each query oracle parameter (the Release run makes three): under ASan a round
    # of the 16-salt parameters took 40-70 s, and its memory is the same in every round.
    HOTROW_ORACLE_ROUNDS=${HOTROW_ORACLE_ROUNDS:-1} \
    ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
    LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan -LE e2e -E '_NOT_BUILT$' --output-on-failure -j"${HOTROW_TEST_JOBS:-4}" \
      --timeout 900
  fi
fi

if [[ $which == thread || $which == all ]]; then
  if [[ $step != test ]]; then configure_and_build build-tsan thread concurrent_tests; fi
  if [[ $step != build ]]; then
    # scripts/tsan.supp says why the uninstrumented RocksDB and librdkafka are suppressed.
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=7 suppressions=$PWD/scripts/tsan.supp" \
      ctest --test-dir build-tsan -L concurrent --output-on-failure -j"${HOTROW_TEST_JOBS:-4}" \
      --timeout 900
  fi
fi
