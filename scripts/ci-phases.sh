# Sourced by scripts/test.sh: phases that are timed, logged and summed up in one table.
#
#   phase NAME CMD...        runs CMD now, its output on the terminal and in $ci_logs/NAME.log
#   phase_bg NAME CMD...     starts CMD in the background, its output in $ci_logs/NAME.log only
#   phase_wait NAME          waits for a background phase and prints its log's end (all of it when
#                            it failed)
#   phase_summary            the table (phase, seconds, CPU seconds, tests run, passed), the 20 slowest objects
#                            of every build and the 20 slowest tests; returns 1 when a phase failed
#
# A test phase overlaps a build: the suites mostly wait (on brokers, sessions, child processes),
# and a build keeps both cores busy meanwhile.

ci_logs=${HOTROW_CI_LOGS:-$PWD/ci-logs}
rm -rf "$ci_logs"
mkdir -p "$ci_logs"
ci_start=$(date +%s)
ci_phases=()
ci_failed=0

_phase_record() {  # name seconds rc
  echo "$2 $3" >"$ci_logs/$1.result"
}

# _phase_cpu FILE CMD...: runs CMD and writes the CPU seconds (user + system) that it and every
# process it waited for used into FILE: what a phase costs the machine, beside its wall time.
_phase_cpu() {
  local file=$1 rc=0
  shift
  "$@" || rc=$?
  times >"$file.times"  # a builtin in this shell: in a pipe it would see no children
  awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
                 printf "%.0f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$file.times" >"$file"
  return "$rc"
}

phase() {
  local name=$1
  shift
  ci_phases+=("$name")
  echo "== $name: started at $(($(date +%s) - ci_start)) s"
  local begin rc=0
  begin=$(date +%s)
  _phase_cpu "$ci_logs/$name.cpu" "$@" 2>&1 | tee "$ci_logs/$name.log" || rc=${PIPESTATUS[0]}
  _phase_record "$name" $(($(date +%s) - begin)) "$rc"
  echo "== $name: $([[ $rc == 0 ]] && echo done || echo "FAILED (exit $rc)") in $(($(date +%s) - begin)) s"
  if [[ $rc != 0 ]]; then ci_failed=1; fi
  return "$rc"
}

phase_bg() {
  local name=$1
  shift
  ci_phases+=("$name")
  echo "== $name: started at $(($(date +%s) - ci_start)) s, in the background ($ci_logs/$name.log)"
  (
    begin=$(date +%s)
    rc=0
    _phase_cpu "$ci_logs/$name.cpu" "$@" >"$ci_logs/$name.log" 2>&1 || rc=$?
    _phase_record "$name" $(($(date +%s) - begin)) "$rc"
  ) &
  echo $! >"$ci_logs/$name.pid"
}

phase_wait() {
  local name=$1
  wait "$(cat "$ci_logs/$name.pid")" || true
  local seconds rc
  read -r seconds rc <"$ci_logs/$name.result"
  if [[ $rc == 0 ]]; then
    echo "== $name: done in $seconds s; the end of its log:"
    tail -n 12 "$ci_logs/$name.log"
  else
    ci_failed=1
    echo "== $name: FAILED (exit $rc) in $seconds s; its log:"
    cat "$ci_logs/$name.log"
  fi
}

# "tests run" and "passed" of a phase, from ctest's closing line, or from the fuzzers' table.
_phase_counts() {
  local log=$ci_logs/$1.log
  local line
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [[ -n $line ]]; then
    local failed total skipped
    failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    # ctest counts a skipped test as passed; say how many were skipped apart.
    skipped=$(grep -cE '^\s+[0-9]+ - .* \(Skipped\)' "$log" || true)
    if ((skipped > 0)); then
      echo "$total $((total - failed - skipped)) (and $skipped skipped)"
    else
      echo "$total $((total - failed))"
    fi
    return
  fi
  local targets ok
  targets=$(grep -cE '^[a-z_]+ +[0-9-]+ +[0-9-]+ +[0-9-]+  (ok|FAILED)' "$log" || true)
  if ((targets > 0)); then
    ok=$(grep -cE '^[a-z_]+ +[0-9-]+ +[0-9-]+ +[0-9-]+  ok' "$log" || true)
    echo "$targets $ok"
    return
  fi
  echo "- -"
}

phase_summary() {
  echo
  echo "== the 20 slowest objects (seconds of wall time while both cores compiled)"
  for dir in build build-asan build-tsan build-fuzz; do
    [[ -f $dir/.ninja_log ]] || continue
    awk -v dir="$dir" -F'\t' '!/^#/ && $4 ~ /\.o$/ { t[$4] = ($2 - $1) / 1000 }
      END { for (o in t) printf "%7.1f  %s/%s\n", t[o], dir, o }' "$dir/.ninja_log" || true
  done | sort -rn | head -n 20 | while read -r seconds object; do
    # A unity batch (cmake/unity.cmake) is named by the files it includes.
    local unity="${object%%/CMakeFiles/*}/unity/$(basename "${object%.o}")"
    if [[ $object == */unity/* && -f $unity ]]; then
      object="$object ($(sed -nE 's|^#include ".*/([^/]+)"$|\1|p' "$unity" | paste -sd' '))"
    fi
    printf '%7.1f  %s\n' "$seconds" "$object"
  done || true
  echo
  echo "== the 20 slowest tests (seconds)"
  for name in "${ci_phases[@]}"; do
    grep -hE 'Test +#[0-9]+: ' "$ci_logs/$name.log" 2>/dev/null |
      sed -nE "s/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec.*/\2  $name: \1/p" || true
  done | sort -rn | head -n 20 || true
  echo
  echo "== summary ($(($(date +%s) - ci_start)) s in all)"
  printf '%-18s %8s %8s %10s %s\n' phase seconds "cpu s" "tests run" passed
  for name in "${ci_phases[@]}"; do
    local seconds=- rc=- cpu=-
    if [[ -f $ci_logs/$name.result ]]; then read -r seconds rc <"$ci_logs/$name.result"; fi
    if [[ -s $ci_logs/$name.cpu ]]; then cpu=$(<"$ci_logs/$name.cpu"); fi
    local counts run passed
    counts=$(_phase_counts "$name")
    run=${counts%% *}
    passed=${counts#* }
    [[ $run == "-" ]] && passed="-"
    if [[ $rc != 0 ]]; then passed="$passed FAILED (exit $rc)"; fi
    printf '%-18s %8s %8s %10s %s\n' "$name" "$seconds" "$cpu" "$run" "$passed"
  done
  return "$ci_failed"
}
