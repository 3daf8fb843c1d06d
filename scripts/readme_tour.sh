#!/usr/bin/env bash
# The README's 5-minute tour, run as a test (ctest -L slow) so that the README cannot drift from
# what hotrow does. Every command below is one the README shows, with the README's
# http://127.0.0.1:8080 replaced by the free port the demo picked here.
#
#   scripts/readme_tour.sh [path/to/hotrow]      (default: build/hotrow)
#
# Exit 0 when every step gives what the README promises, 1 when one does not (the step and the
# demo's log are printed), 77 when curl is missing (ctest reports the test as skipped).
set -euo pipefail

hotrow=${1:-build/hotrow}
if ! command -v curl >/dev/null 2>&1; then
  echo "readme_tour: curl is not installed; it is the tour's HTTP client" >&2
  exit 77
fi
if [[ ! -x $hotrow ]]; then
  echo "readme_tour: no hotrow binary at $hotrow" >&2
  exit 1
fi

workdir=$(mktemp -d "${TMPDIR:-/tmp}/hotrow-tour-XXXXXX")
demo_pid=
cleanup() {
  if [[ -n $demo_pid ]] && kill -0 "$demo_pid" 2>/dev/null; then
    # Give the demo its chance to remove its own data, then insist.
    kill -TERM "$demo_pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$demo_pid" 2>/dev/null || true
  fi
  rm -rf "$workdir"
}
trap cleanup EXIT

fail() {
  echo "readme_tour: FAILED: $*" >&2
  echo "--- demo stdout" >&2
  cat "$workdir/demo.out" >&2 || true
  echo "--- demo log (last 30 lines)" >&2
  tail -n 30 "$workdir/demo.log" >&2 || true
  exit 1
}

step() { echo "readme_tour: $*"; }

# README: build/hotrow demo
# (The README's demo listens on 127.0.0.1:8080; here on any free port, read from its output.)
step "starting the demo"
"$hotrow" demo --listen 127.0.0.1:0 --rate 5000 >"$workdir/demo.out" 2>"$workdir/demo.log" &
demo_pid=$!

# The demo prints its address and curl lines once they answer; wait for them, 90 s at most.
for _ in $(seq 1 180); do
  grep -q "Stop with Ctrl-C" "$workdir/demo.out" && break
  kill -0 "$demo_pid" 2>/dev/null || fail "the demo exited before printing its curl lines"
  sleep 0.5
done
grep -q "Stop with Ctrl-C" "$workdir/demo.out" || fail "no curl lines after 90 s"
base=$(sed -n 's/^ *HTTP API: *//p' "$workdir/demo.out")
[[ $base == http://127.0.0.1:* ]] || fail "no 'HTTP API: http://127.0.0.1:PORT' line"
step "demo ready at $base"

# README: the status page at http://127.0.0.1:8080/ (tests/browser/ drives it in Chromium).
step "status page"
answer=$(curl --silent --show-error --fail "$base/") || fail "status page"
grep -q 'id="stat-ingested"' <<<"$answer" || fail "status page: ${answer:0:300}"
grep -q "^ *Status page: *$base/ " "$workdir/demo.out" || fail "no 'Status page: $base/' line"

# README: paste the three curl lines the demo printed.
mapfile -t lines < <(sed -n "s/^ *\(curl '.*'\)$/\1/p" "$workdir/demo.out")
[[ ${#lines[@]} -eq 3 ]] || fail "expected 3 curl lines, found ${#lines[@]}"
for line in "${lines[@]}"; do
  step "$line"
  answer=$(eval "$line --silent --show-error --fail") || fail "$line"
  grep -q '"event_id":"dev-' <<<"$answer" || fail "no event from: $line"
done

# README: curl 'http://127.0.0.1:8080/v1/events/dev-000000/latest?n=3'
step "latest of dev-000000"
answer=$(curl --silent --show-error --fail "$base/v1/events/dev-000000/latest?n=3") || fail "latest"
grep -q '"events":\[{"event_id":"dev-000000"' <<<"$answer" || fail "latest: $answer"

# README: build/hotrow query latest dev-000000 -n 3
step "hotrow query latest dev-000000 -n 3"
"$hotrow" query latest dev-000000 -n 3 --server "$base" >"$workdir/query.out" || fail "hotrow query"
[[ $(grep -c '"event_id":"dev-000000"' "$workdir/query.out") -eq 3 ]] ||
  fail "hotrow query printed: $(cat "$workdir/query.out")"

# README: now=$(date +%s%3N); the last minute of dev-000000 oldest first, then a scan of it
now=$(date +%s%3N)
step "range of dev-000000 over the last minute, oldest first"
answer=$(curl --silent --show-error --fail "$base/v1/events/dev-000000?from=$((now-60000))&to=$now&order=asc&limit=5") || fail "range"
grep -q '"events":\[{"event_id":"dev-000000"' <<<"$answer" || fail "range: ${answer:0:300}"
step "scan of the last minute"
answer=$(curl --silent --show-error --fail "$base/v1/scan?from=$((now-60000))&to=$now&limit=5") || fail "scan"
[[ $(grep -c '"event_id":"dev-' <<<"$answer") -eq 5 ]] || fail "scan: ${answer:0:300}"

# README: build/hotrow keys explain <a key>
step "keys explain"
"$hotrow" keys explain 039ae16a3b2f90404ffffffe655258e97ffffffffffffdffffffffffffffd5 >"$workdir/explain.out" ||
  fail "keys explain"
grep -q '^partition: 2$' "$workdir/explain.out" && grep -q '^offset: 42$' "$workdir/explain.out" ||
  fail "keys explain printed: $(cat "$workdir/explain.out")"

# README: curl 'http://127.0.0.1:8080/v1/latest?prefix=dev-00000&limit=3'
step "latest of every device, a page"
answer=$(curl --silent --show-error --fail "$base/v1/latest?prefix=dev-00000&limit=3") || fail "latest of every id"
grep -q '"events":\[{"event_id":"dev-00000' <<<"$answer" && grep -q '"next":"dev-00000' <<<"$answer" ||
  fail "latest of every id: ${answer:0:300}"

# README: curl 'http://127.0.0.1:8080/v1/latest?ids=dev-000000,dev-000001,dev-000002&n=1'
step "latest of three devices"
answer=$(curl --silent --show-error --fail "$base/v1/latest?ids=dev-000000,dev-000001,dev-000002&n=1") ||
  fail "latest of many ids"
for id in dev-000000 dev-000001 dev-000002; do
  grep -q "\"$id\":\[{\"event_id\":\"$id\"" <<<"$answer" || fail "latest of many ids: no $id in ${answer:0:300}"
done

# README: curl ".../v1/events/dev-000000/series?field=temp&from=$((now-60000))&to=$now&step=10s"
step "series of dev-000000's temp"
now=$(date +%s%3N)
answer=$(curl --silent --show-error --fail \
  "$base/v1/events/dev-000000/series?field=temp&from=$((now-60000))&to=$now&step=10s") || fail "series"
grep -q '"step_ms":10000,"points":\[{"t":' <<<"$answer" || fail "series: ${answer:0:300}"

# README: curl http://127.0.0.1:8080/v1/stats
step "stats"
answer=$(curl --silent --show-error --fail "$base/v1/stats") || fail "stats"
grep -q '"ingested":[1-9]' <<<"$answer" || fail "stats: ${answer:0:300}"

# README: curl -s http://127.0.0.1:8080/metrics | grep hotrow_events_stored_total
step "metrics"
answer=$(curl --silent --show-error --fail "$base/metrics") || fail "metrics"
grep -q '^hotrow_events_stored_total [1-9]' <<<"$answer" || fail "metrics: no hotrow_events_stored_total"

# README: Ctrl-C stops the demo; it exits 0 and removes its temporary data.
step "stopping the demo"
data_dir=$(sed -n 's/^ *Data: *\([^ ]*\).*/\1/p' "$workdir/demo.out")
kill -INT "$demo_pid"
rc=0
wait "$demo_pid" || rc=$?
demo_pid=
[[ $rc -eq 0 ]] || fail "the demo exited with $rc after Ctrl-C"
[[ ! -e $data_dir ]] || fail "the demo left its data in $data_dir"
step "ok"
