# remat plot: memory over one training iteration.
# Numbers in 3block-if-memory.dat (bytes, seconds). Restyle freely and redraw with: gnuplot 3block-if-memory.gp  (in this folder)
# output: gnuplot -e "outfile='other.svg'" 3block-if-memory.gp writes elsewhere (terminal below decides the format)
if (!exists("outfile")) outfile = "3block-if-memory.png"
set terminal pngcairo size 1280,720 noenhanced font "DejaVu Sans,10" background rgb "white"
set output outfile
dat = "3block-if-memory.dat"
# units: data / yscale is drawn, in ylab
yscale = 1048576
ylab = "MiB"
xscale = 1
xlab = "s"
ytop = 375809638.40000004 / yscale
xmax = 10.642198325999743 / xscale
c1 = "#1f5fbf"   # colour of trace 1
c2 = "#d6451b"   # colour of trace 2
phase_bg(p) = p==0 ? 0xe6e6e6 : p==1 ? 0xdbe8f8 : p==2 ? 0xfde6cf : p==3 ? 0xece0f5 : p==4 ? 0xdcf1dc : p==5 ? 0xfbf1c4 : 0xf0f0f0
phase_fg(p) = p==0 ? 0xa6a6a6 : p==1 ? 0x6fa3e0 : p==2 ? 0xf29a4a : p==3 ? 0xa77cc9 : p==4 ? 0x6cbf6c : p==5 ? 0xd9b92e : 0xcccccc
set style textbox opaque fc rgb "white" noborder margins 2,1
set multiplot
set lmargin at screen 0.1156
set rmargin at screen 0.9781

# ---- curve panel
set label 1000 "Memory over training iteration 1 - model 3block-if (T=16, N=512)" at screen 0.5, screen 0.9750 center font ",13"
set tmargin at screen 0.8861
set bmargin at screen 0.1961
set key at screen 0.1156, screen 0.9528 left top vertical maxrows 2 Left reverse samplen 3 spacing 1.15 width 2
set xrange [0:xmax]
set yrange [0:ytop]
set format x ""
unset xlabel
set ylabel "memory (".ylab.")"
set format y "%g"
set grid xtics ytics lc rgb "#d0d0d0" lt 1 lw 0.6
set tics out nomirror
set border 3
set label 1 "" at first 2.68019182/xscale, first 271622144/yscale point pt 7 ps 1.3 lc rgb c1 front
set label 2 "peak 259.0 MiB at b3/fc3b, backward" at graph 0.2557, graph 0.8064 left front boxed tc rgb "#1f5fbf"
set label 3 "" at first 6.3131697/xscale, first 172005376/yscale point pt 7 ps 1.3 lc rgb c2 front
set label 4 "peak 164.0 MiB at b2/if2b, recompute" at graph 0.5970, graph 0.5413 left front boxed tc rgb "#d6451b"
set label 5 "" at first 0/xscale, first 293601280/yscale point pt 6 ps 1.3 lc rgb c1 front
set label 6 "reserved peak 280.0 MiB" at graph 0.0050, graph 0.8205 left front boxed tc rgb "#1f5fbf"
set label 7 "" at first 2.42746253/xscale, first 184549376/yscale point pt 6 ps 1.3 lc rgb c2 front
set label 8 "reserved peak 176.0 MiB" at graph 0.2319, graph 0.5303 left front boxed tc rgb "#d6451b"
plot \
  dat index 0 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c1 title "baseline: live", \
  dat index 3 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c2 title "ckpt b1 b2 (bit) b3 (bit, k=4): live", \
  dat index 1 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c1 title "baseline: reserved", \
  dat index 4 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c2 title "ckpt b1 b2 (bit) b3 (bit, k=4): reserved"

# ---- phase strip (one row per trace)
unset label
unset arrow
set tmargin at screen 0.1822
set bmargin at screen 0.1167
set yrange [1.5:-0.5]
set ytics ("baseline" 0, "ckpt b1 b2 (bit..." 1) scale 0
unset ylabel
set format x "%g"
set border 1
unset grid
set xlabel "time since the start of the iteration (".xlab.")" offset 0,0.4
set key at screen 0.5, screen 0.0056 center bottom horizontal maxcols 8 maxrows 1 samplen 1.2 spacing 1 width 1
plot \
  dat index 2 using (($1+$2)/2/xscale):4:(($2-$1)/2/xscale):(0.4):(phase_fg($3)) with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
  dat index 5 using (($1+$2)/2/xscale):4:(($2-$1)/2/xscale):(0.4):(phase_fg($3)) with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \
  NaN with boxes fs solid 1.0 noborder lc rgb "#6fa3e0" title "forward", \
  NaN with boxes fs solid 1.0 noborder lc rgb "#f29a4a" title "recompute", \
  NaN with boxes fs solid 1.0 noborder lc rgb "#a77cc9" title "loss", \
  NaN with boxes fs solid 1.0 noborder lc rgb "#6cbf6c" title "backward"
unset multiplot
