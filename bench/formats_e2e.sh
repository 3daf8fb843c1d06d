#!/bin/bash
# Input formats end to end (docs/BENCHMARKS.md "Input formats"): the same synthetic readings as
# JSON, Avro (unframed, schema file) and Protobuf (unframed, descriptor set), written by
# `hotrow produce` to the embedded broker, then read by `hotrow serve` (one writer), one format
# after the other, 3 alternated rounds. Per run: the serve process's CPU (/proc/PID/stat) and the
# wall time from its first stored event to its last, as events/s and CPU µs per event. N readings
# per format (default 300000), P partitions (default 4; the embedded broker keeps about 100k
# records per partition).
# Run from the repository root in a scratch directory: cd $(mktemp -d) && N=300000 $OLDPWD/bench/formats_e2e.sh
set -u
B=${HOTROW_BIN:-$(dirname "$0")/../build/hotrow}
N=${N:-300000}
$B embedded-kafka --partitions ${P:-4} > kafka.out 2> kafka.log &
KPID=$!
sleep 2
BOOT=$(sed -n 's/bootstrap=//p' kafka.out)
for f in json avro protobuf; do
  extra=()
  [[ $f != json ]] && extra=(--format $f --schema-file schema-$f)
  $B produce --brokers $BOOT --topic t-$f --count $N --devices 1000 --rate 0 "${extra[@]}" 2>>produce.log
done
measure() {  # format round
  f=$1; r=$2; port=$((19300 + r * 3 + ${#f}))
  sets=(--set kafka.brokers=$BOOT --set kafka.topics=[t-$f] --set kafka.group_id=g-$f-$r --set store.path=$PWD/store-$f-$r --set http.listen=127.0.0.1:$port --set ingest.writers=1 --set store.ttl=1h)
  [[ $f == avro ]] && sets+=(--set ingest.format=avro --set ingest.avro.schema_file=$PWD/schema-avro)
  [[ $f == protobuf ]] && sets+=(--set ingest.format=protobuf --set ingest.protobuf.descriptor_set=$PWD/schema-protobuf --set ingest.protobuf.message=hotrow.synthetic.Reading)
  $B serve "${sets[@]}" > serve-$f-$r.log 2>&1 &
  SPID=$!
  /usr/bin/python3 - $port $SPID $N $f <<'PY'
import json, sys, time, urllib.request
port, pid, n, f = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tick = 100.0
def cpu():
    parts = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / tick
def ingested():
    try:
        return json.load(urllib.request.urlopen('http://127.0.0.1:%d/v1/stats' % port, timeout=2))['ingested']
    except Exception:
        return -1
while ingested() <= 0: time.sleep(0.01)
t0, c0, i0 = time.time(), cpu(), ingested()
while ingested() < n: time.sleep(0.02)
t1, c1 = time.time(), cpu()
ev = n - i0
print("%s events %d wall %.2fs cpu %.2fs -> %.0f ev/s, %.2f cpu us/ev" % (f, ev, t1 - t0, c1 - c0, ev / (t1 - t0), (c1 - c0) * 1e6 / ev))
PY
  kill $SPID; wait $SPID 2>/dev/null
}
for r in 1 2 3; do for f in json avro protobuf; do measure $f $r; done; done
kill $KPID
