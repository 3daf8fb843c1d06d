# latest-10 over HTTP: p50 and p99 against concurrent clients, with ingestion at 50% of the
# measured maximum and idle. Reads bench/out/http_load.csv (bench/http_load_bench), writes
# docs/img/http_load.png. Run from the repo root (bench/run does).
system "mkdir -p docs/img"
set terminal pngcairo size 900,540 font ",10"
set output "docs/img/http_load.png"
set datafile separator ","
set title "hotrow serve: latest-10 over HTTP, idle vs ingesting at 50% of max"
set xlabel "concurrent clients (keep-alive)"
set ylabel "latency (ms)"
set logscale xy
set xtics ("1" 1, "8" 8, "32" 32)
set xrange [0.8:40]
set grid
set key below
# Columns: 1 clients, 2 idle_p50_us, 3 idle_p99_us, 6 load_p50_us, 7 load_p99_us.
plot "bench/out/http_load.csv" every ::1 using 1:($2/1000) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "p50 idle", \
     ""                         every ::1 using 1:($3/1000) with linespoints lw 2 pt 7 dt 2 lc rgb "#1f77b4" title "p99 idle", \
     ""                         every ::1 using 1:($6/1000) with linespoints lw 2 pt 5 lc rgb "#d62728" title "p50 ingesting", \
     ""                         every ::1 using 1:($7/1000) with linespoints lw 2 pt 5 dt 2 lc rgb "#d62728" title "p99 ingesting"
