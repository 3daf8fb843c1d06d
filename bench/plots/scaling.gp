# Store size scaling: the write rate of each step and latest-10 p50/p99 against the events in the
# store (log x). Reads bench/out/scaling.csv (bench/scaling_bench), writes docs/img/scaling.png.
# Run from the repo root (bench/run does).
system "mkdir -p docs/img"
set terminal pngcairo size 900,540 font ",10"
set output "docs/img/scaling.png"
set datafile separator ","
set title "hotrow store: write rate and latest-10 latency as the store grows (one hot window)"
set xlabel "events in the store"
set logscale x
set format x "%.0s%c"
set ylabel "latest-10 latency (us, log)"
set logscale y
set y2label "write rate (k events/s)"
set y2range [0:*]
set ytics nomirror
set y2tics
set grid
set key below
# Columns: 1 events, 3 write_events_per_s, 4 latest10_p50_us, 5 latest10_p99_us.
plot "bench/out/scaling.csv" every ::1 using 1:4 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "latest-10 p50", \
     ""                      every ::1 using 1:5 with linespoints lw 2 pt 7 dt 2 lc rgb "#1f77b4" title "latest-10 p99", \
     ""                      every ::1 using 1:($3/1000) axes x1y2 with linespoints lw 2 pt 5 lc rgb "#2ca02c" title "write rate of the step"
