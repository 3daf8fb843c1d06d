# Plots a bench/soak run: one panel per measure over time, the end of the first window (warm-up)
# and the two compared windows marked.
#
#   gnuplot -e "csv='bench/out/soak.csv'; out='docs/img/soak.png'; window=120; duration=900; \
#     rate=5000; conn='close'" bench/plots/soak.gp
#
# csv: the soak's CSV (header row, elapsed_s first); window and duration in seconds; conn: how
# the queries connected (close or keepalive), for the latency panel's title.

if (!exists("csv")) csv = 'bench/out/soak.csv'
if (!exists("out")) out = 'docs/img/soak.png'
if (!exists("window")) window = 120
if (!exists("duration")) duration = 900
if (!exists("rate")) rate = 0
if (!exists("conn")) conn = 'close'

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  set terminal pngcairo size 1400,1000 font "sans,10"
} else {
  set terminal png size 1400,1000
}
set output out
set datafile separator ","
set datafile missing "nan"
set key top left opaque box
set grid
set xrange [0:duration]
set xlabel "elapsed (min)"
set xtics 60
set format x "%.0f"
# Tick labels in minutes while the data stays in seconds.
set xtics ("0" 0)
do for [m = 1:int(duration / 60)] { set xtics add (sprintf("%d", m) m * 60) }

# The first full window after warm-up and the last window: the two the verdict compares.
first_to = (2 * window < duration) ? 2 * window : duration
last_from = (duration - window > window) ? duration - window : window
set object 1 rectangle from window, graph 0 to first_to, graph 1 behind fillcolor rgb "#e8f0ff" fillstyle solid noborder
set object 2 rectangle from last_from, graph 0 to duration, graph 1 behind fillcolor rgb "#fff0e0" fillstyle solid noborder
set arrow 1 from window, graph 0 to window, graph 1 nohead dashtype 2 linecolor rgb "#444444"
set label 1 "window full" at window, graph 0.05 offset 0.5,0 font ",8"

title_rate = (rate > 0) ? sprintf(", %d events/s", rate) : ""
set multiplot layout 3,2 title sprintf("hotrow soak: %.0f min, window %.0f s%s (blue: first window after warm-up, orange: last window)", duration / 60.0, window, title_rate)

set ylabel "MiB"
set yrange [0:*]
set title "serve RSS (VmRSS)"
plot csv using "elapsed_s":"rss_mib" with linespoints pt 7 ps 0.4 title "RSS"

set ylabel "count"
set title "open file descriptors and threads"
plot csv using "elapsed_s":"open_fds" with linespoints pt 7 ps 0.4 title "open fds", \
     csv using "elapsed_s":"threads" with linespoints pt 7 ps 0.4 title "threads"

set ylabel "MiB"
set title "store disk usage (du)"
plot csv using "elapsed_s":"disk_mib" with linespoints pt 7 ps 0.4 title "disk"

set ylabel "records"
set title "consumer lag (sum over partitions)"
plot csv using "elapsed_s":"lag" with linespoints pt 7 ps 0.4 title "lag"

set ylabel "ms"
set title (conn eq 'keepalive') ? "latest-10 over HTTP, curl, one keep-alive connection" : "latest-10 over HTTP, curl, a new connection per query"
plot csv using "elapsed_s":"p99_ms" with linespoints pt 7 ps 0.4 title "p99", \
     csv using "elapsed_s":"p50_ms" with linespoints pt 7 ps 0.4 title "p50"

set ylabel "events/s"
set y2label "events in store"
set ytics nomirror
set y2tics
set y2range [0:*]
set title "ingestion rate and events held"
set key bottom right
plot csv using "elapsed_s":"ingest_per_s" with linespoints pt 7 ps 0.4 title "ingested/s", \
     csv using "elapsed_s":"store_events" axes x1y2 with lines title "events in live buckets (right)"

unset multiplot
