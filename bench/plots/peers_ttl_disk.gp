# Disk of hotrow and of RocksDB DBWithTTL, second by second, while each takes the same steady
# 50k events/s with a 20 s window (bench/ttl_bench): hotrow's levels off after one window as whole
# buckets are dropped; DBWithTTL's keeps what no compaction has rewritten yet.
# Reads bench/out/ttl_disk.csv, writes docs/img/peers_ttl_disk.png. Run from the repo root (bench/run does).
system "mkdir -p docs/img"
set terminal pngcairo size 900,480 font ",10"
set output "docs/img/peers_ttl_disk.png"
set datafile separator ","
set title "disk during a steady 50k events/s, 20 s window: hotrow buckets vs DBWithTTL"
set xlabel "seconds into the run"
set ylabel "disk (MiB)"
set yrange [0:*]
set grid
set key top left
# Columns: 1 seconds, 2 hotrow_mib, 3 dbwithttl_mib.
plot "bench/out/ttl_disk.csv" every ::1 using 1:2 with lines lw 2 lc rgb "#1f77b4" title "hotrow (bucket 2 s, dropped whole)", \
     ""                       every ::1 using 1:3 with lines lw 2 lc rgb "#d62728" title "DBWithTTL (expired only when compacted)"
