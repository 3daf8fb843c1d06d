#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang, ASan and UBSan in build-fuzz/, and runs each
# for SECONDS (default 60). Fails on any crash, property violation, leak, timeout or sanitizer report
# and says where the reproducer is.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    # CI: scripts/fuzz.sh 60; a long run: scripts/fuzz.sh 3600
#
# Targets: key_decoder record_parser http_params time_format config_file config_set (default: all).
# Each run starts from a scratch copy of tests/fuzz/corpus/<target>/ (the repo's seeds are never
# written) plus tests/fuzz/regressions/<target>/. HOTROW_FUZZ_JOBS targets run at once (default 2);
# HOTROW_JOBS compile jobs (default 2). HOTROW_FUZZ_STEP=build builds the targets and stops
# (scripts/test.sh builds them while other tests run); =run runs targets already built.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

all_targets=(key_decoder record_parser http_params time_format config_file config_set avro_decoder
             protobuf_decoder)
seconds=${1:-60}
if [[ ! $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]; targets: ${all_targets[*]}" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=("${all_targets[@]}"); fi
for t in "${targets[@]}"; do
  if [[ ! -f tests/fuzz/${t}_fuzz.cc ]]; then
    echo "fuzz: unknown target $t; targets: ${all_targets[*]}" >&2
    exit 2
  fi
done

HOTROW_WITH_CLANG=1 bash scripts/install-deps.sh
source scripts/build-env.sh

build=$root/build-fuzz
CC=clang CXX=clang++ hotrow_configure "$build" -DHOTROW_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHOTROW_BUILD_BENCH=OFF
if [[ ${HOTROW_FUZZ_STEP:-all} != run ]]; then hotrow_compile "$build" "${targets[@]/#/fuzz_}"; fi
if [[ ${HOTROW_FUZZ_STEP:-all} == build ]]; then exit 0; fi

# The dictionary of a target, when it has one (the two config targets share theirs).
dict_for() {
  case $1 in
    config_file | config_set) echo "$root/tests/fuzz/config.dict" ;;
    *) if [[ -f $root/tests/fuzz/$1.dict ]]; then echo "$root/tests/fuzz/$1.dict"; fi ;;
  esac
}

scratch=$(mktemp -d /tmp/hotrow-fuzz.XXXXXX)

# Runs one target in $scratch/<target>/: corpus/ (grown by the run), log, rc, and any reproducer
# (crash-*, leak-*, timeout-*, oom-*) that libFuzzer writes.
run_target() {
  local t=$1 out=$scratch/$1
  mkdir -p "$out/corpus"
  cp -R "$root/tests/fuzz/corpus/$t/." "$out/corpus/"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048
              -print_final_stats=1 -artifact_prefix="$out/")
  local dict
  dict=$(dict_for "$t")
  if [[ -n $dict ]]; then args+=(-dict="$dict"); fi
  local dirs=("$out/corpus")
  if [[ -d $root/tests/fuzz/regressions/$t ]]; then dirs+=("$root/tests/fuzz/regressions/$t"); fi
  local rc=0
  ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz_$t" "${args[@]}" "${dirs[@]}" >"$out/log" 2>&1 || rc=$?
  echo "$rc" >"$out/rc"
}

echo "fuzz: ${#targets[@]} targets, ${seconds}s each, ${HOTROW_FUZZ_JOBS:-2} at once; work in $scratch"
running=0
for t in "${targets[@]}"; do
  if ((running >= ${HOTROW_FUZZ_JOBS:-2})); then
    wait -n
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait

failed=0
printf '%-14s %8s %10s %8s  %s\n' target cov execs/s corpus result
for t in "${targets[@]}"; do
  out=$scratch/$t
  rc=$(cat "$out/rc")
  cov=$(grep -o 'cov: [0-9]*' "$out/log" | tail -n 1 | cut -d' ' -f2 || true)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$out/log" | grep -o '[0-9]*$' || true)
  corpus=$(find "$out/corpus" -type f | wc -l)
  reproducers=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \))
  if [[ $rc == 0 && -z $reproducers ]]; then
    printf '%-14s %8s %10s %8s  %s\n' "$t" "${cov:--}" "${speed:--}" "$corpus" ok
    continue
  fi
  failed=1
  printf '%-14s %8s %10s %8s  %s\n' "$t" "${cov:--}" "${speed:--}" "$corpus" "FAILED (exit $rc)"
done

for t in "${targets[@]}"; do
  out=$scratch/$t
  reproducers=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \))
  if [[ $(cat "$out/rc") == 0 && -z $reproducers ]]; then continue; fi
  echo
  echo "=== $t failed; the end of its log ($out/log):"
  tail -n 40 "$out/log"
  for r in $reproducers; do
    echo "reproducer: $r"
    echo "  replay:   $build/tests/fuzz/fuzz_$t $r"
    echo "  keep it as a regression test: cp $r tests/fuzz/regressions/$t/"
  done
done

if ((failed)); then
  echo "fuzz: FAILED; logs and reproducers are kept in $scratch" >&2
  exit 1
fi
rm -rf "$scratch"
echo "fuzz: every target ran ${seconds}s without a finding"
