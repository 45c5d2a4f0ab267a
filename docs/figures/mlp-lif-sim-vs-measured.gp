# remat plot: memory over one training iteration.
# Numbers in mlp-lif-sim-vs-measured.dat (bytes, seconds). Restyle freely and redraw with: gnuplot mlp-lif-sim-vs-measured.gp  (in this folder)
# output: gnuplot -e "outfile='other.svg'" mlp-lif-sim-vs-measured.gp writes elsewhere (terminal below decides the format)
if (!exists("outfile")) outfile = "mlp-lif-sim-vs-measured.png"
set terminal pngcairo size 1280,720 noenhanced font "DejaVu Sans,10" background rgb "white"
set output outfile
dat = "mlp-lif-sim-vs-measured.dat"
# units: data / yscale is drawn, in ylab
yscale = 1048576
ylab = "MiB"
xscale = 0.001
xlab = "ms"
ytop = 163745628.16 / yscale
xmax = 0.92101300503178507 / xscale
c1 = "#1f5fbf"   # colour of trace 1
c2 = "#d6451b"   # colour of trace 2
c3 = "#2a9d3f"   # colour of trace 3
phase_bg(p) = p==0 ? 0xe6e6e6 : p==1 ? 0xdbe8f8 : p==2 ? 0xfde6cf : p==3 ? 0xece0f5 : p==4 ? 0xdcf1dc : p==5 ? 0xfbf1c4 : 0xf0f0f0
phase_fg(p) = p==0 ? 0xa6a6a6 : p==1 ? 0x6fa3e0 : p==2 ? 0xf29a4a : p==3 ? 0xa77cc9 : p==4 ? 0x6cbf6c : p==5 ? 0xd9b92e : 0xcccccc
set style textbox opaque fc rgb "white" noborder margins 2,1
set multiplot
set lmargin at screen 0.0992
set rmargin at screen 0.9781

# ---- curve panel
set label 1000 "Memory over training iteration 1 - model mlp-lif (T=64, N=128)" at screen 0.5, screen 0.9750 center font ",13"
set tmargin at screen 0.8597
set bmargin at screen 0.2028
set key at screen 0.0992, screen 0.9528 left top vertical maxrows 3 Left reverse samplen 3 spacing 1.15 width 2
set xrange [0:xmax]
set yrange [0:ytop]
set format x ""
unset xlabel
set ylabel "memory (".ylab.")"
set format y "%g"
set grid xtics ytics lc rgb "#d0d0d0" lt 1 lw 0.6
set tics out nomirror
set border 3
set label 1 "" at first 0.259693501/xscale, first 109126264/yscale point pt 7 ps 1.3 lc rgb c1 front
set label 2 "peak 104.1 MiB at b2/lif2, backward" at graph 0.2857, graph 0.7074 left front boxed tc rgb "#1f5fbf"
set label 3 "" at first 0.336263239/xscale, first 74130040/yscale point pt 7 ps 1.3 lc rgb c2 front
set label 4 "peak 70.70 MiB at b2/lif2, recompute" at graph 0.3688, graph 0.4937 left front boxed tc rgb "#d6451b"
set label 5 "" at first 0.315544398/xscale, first 74130040/yscale point pt 7 ps 1.3 lc rgb c3 front
set label 6 "peak 70.70 MiB at b2/lif2, recompute" at graph 0.3463, graph 0.3185 left front boxed tc rgb "#2a9d3f"
set arrow 3 from graph 0.3463, graph 0.3407 to first 0.315544398/xscale, first 74130040/yscale nohead lc rgb c3 lw 0.8 back
set label 7 "" at first 0.234727961/xscale, first 127926272/yscale point pt 6 ps 1.3 lc rgb c1 front
set label 8 "reserved peak 122.0 MiB" at graph 0.2586, graph 0.8222 left front boxed tc rgb "#1f5fbf"
set label 9 "" at first 0.272222135/xscale, first 90177536/yscale point pt 6 ps 1.3 lc rgb c2 front
set label 10 "reserved peak 86.00 MiB" at graph 0.2993, graph 0.5917 left front boxed tc rgb "#d6451b"
set label 11 "" at first 0.239537347/xscale, first 90177536/yscale point pt 6 ps 1.3 lc rgb c3 front
set label 12 "reserved peak 86.00 MiB" at graph 0.2563, graph 0.5917 right front boxed tc rgb "#2a9d3f"
plot \
  dat index 0 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c1 title "baseline: live", \
  dat index 3 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c2 title "plan, simulated: live", \
  dat index 6 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c3 title "plan, measured: live", \
  dat index 1 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c1 title "baseline: reserved", \
  dat index 4 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c2 title "plan, simulated: reserved", \
  dat index 7 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c3 title "plan, measured: reserved"

# ---- phase strip (one row per trace)
unset label
unset arrow
set tmargin at screen 0.1889
set bmargin at screen 0.1167
set yrange [2.5:-0.5]
set ytics ("baseline" 0, "plan, simulated" 1, "plan, measured" 2) scale 0
unset ylabel
set format x "%g"
set border 1
unset grid
set xlabel "time since the start of the iteration (".xlab.")" offset 0,0.4
set key at screen 0.5, screen 0.0056 center bottom horizontal maxcols 8 maxrows 1 samplen 1.2 spacing 1 width 1
plot \
  dat index 2 using (($1+$2)/2/xscale):4:(($2-$1)/2/xscale):(0.4):(phase_fg($3)) with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
  dat index 5 using (($1+$2)/2/xscale):4:(($2-$1)/2/xscale):(0.4):(phase_fg($3)) with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
  dat index 8 using (($1+$2)/2/xscale):4:(($2-$1)/2/xscale):(0.4):(phase_fg($3)) with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
  NaN with boxes fs solid 1.0 noborder lc rgb "#6fa3e0" title "forward", \
  NaN with boxes fs solid 1.0 noborder lc rgb "#f29a4a" title "recompute", \
  NaN with boxes fs solid 1.0 noborder lc rgb "#a77cc9" title "loss", \
  NaN with boxes fs solid 1.0 noborder lc rgb "#6cbf6c" title "backward"
unset multiplot
