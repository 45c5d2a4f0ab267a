# remat plot: memory over one training iteration.
# Numbers in vgg-dvs-memory.dat (bytes, event counts). Restyle freely and redraw with: gnuplot vgg-dvs-memory.gp  (in this folder)
# output: gnuplot -e "outfile='other.svg'" vgg-dvs-memory.gp writes elsewhere (terminal below decides the format)
if (!exists("outfile")) outfile = "vgg-dvs-memory.png"
set terminal pngcairo size 1280,720 noenhanced font "DejaVu Sans,10" background rgb "white"
set output outfile
dat = "vgg-dvs-memory.dat"
# units: data / yscale is drawn, in ylab
yscale = 1048576
ylab = "MiB"
xscale = 1
xlab = "events"
ytop = 1183800360.96 / yscale
xmax = 404 / xscale
c1 = "#1f5fbf"   # colour of trace 1
c2 = "#d6451b"   # colour of trace 2
c3 = "#2a9d3f"   # colour of trace 3
phase_bg(p) = p==0 ? 0xe6e6e6 : p==1 ? 0xdbe8f8 : p==2 ? 0xfde6cf : p==3 ? 0xece0f5 : p==4 ? 0xdcf1dc : p==5 ? 0xfbf1c4 : 0xf0f0f0
phase_fg(p) = p==0 ? 0xa6a6a6 : p==1 ? 0x6fa3e0 : p==2 ? 0xf29a4a : p==3 ? 0xa77cc9 : p==4 ? 0x6cbf6c : p==5 ? 0xd9b92e : 0xcccccc
set style textbox opaque fc rgb "white" noborder margins 2,1
set multiplot
set lmargin at screen 0.1156
set rmargin at screen 0.9781

# ---- curve panel
set label 1000 "Memory over training iteration 1 - model vgg-dvs (T=10, N=8)" at screen 0.5, screen 0.9750 center font ",13"
set tmargin at screen 0.8597
set bmargin at screen 0.2028
set key at screen 0.1156, screen 0.9528 left top vertical maxrows 3 Left reverse samplen 3 spacing 1.15 width 2
set xrange [0:xmax]
set yrange [0:ytop]
set format x ""
unset xlabel
set ylabel "memory (".ylab.")"
set format y "%g"
set grid xtics ytics lc rgb "#d0d0d0" lt 1 lw 0.6
set tics out nomirror
set border 3
set label 1 "" at first 73/xscale, first 887797144/yscale point pt 7 ps 1.3 lc rgb c1 front
set label 2 "peak 846.7 MiB at b6/sn6, forward" at graph 0.1845, graph 0.8376 left front boxed tc rgb "#1f5fbf"
set label 3 "" at first 354/xscale, first 570505112/yscale point pt 7 ps 1.3 lc rgb c2 front
set label 4 "peak 544.1 MiB at b2/sn2, recompute" at graph 0.8724, graph 0.4409 right front boxed tc rgb "#d6451b"
set label 5 "" at first 77/xscale, first 604680088/yscale point pt 7 ps 1.3 lc rgb c3 front
set label 6 "peak 576.7 MiB at b6/sn6, forward" at graph 0.1944, graph 0.5518 left front boxed tc rgb "#2a9d3f"
set label 7 "" at first 79/xscale, first 924844032/yscale point pt 6 ps 1.3 lc rgb c1 front
set label 8 "reserved peak 882.0 MiB" at graph 0.1993, graph 0.6936 left front boxed tc rgb "#1f5fbf"
set label 9 "" at first 0/xscale, first 610271232/yscale point pt 6 ps 1.3 lc rgb c2 front
set label 10 "reserved peak 582.0 MiB" at graph 0.0050, graph 0.5565 left front boxed tc rgb "#d6451b"
set label 11 "" at first 237/xscale, first 876609536/yscale point pt 6 ps 1.3 lc rgb c3 front
set label 12 "reserved peak 836.0 MiB" at graph 0.5904, graph 0.6995 left front boxed tc rgb "#2a9d3f"
plot \
  dat index 0 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c1 title "plain backpropagation: live", \
  dat index 3 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c2 title "every block checkpointed (bit where spikes): live", \
  dat index 6 using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c3 title "searched, budget 600 MB: live", \
  dat index 1 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c1 title "plain backpropagation: reserved", \
  dat index 4 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c2 title "every block checkpointed (bit where spikes): reserved", \
  dat index 7 using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c3 title "searched, budget 600 MB: reserved"

# ---- phase strip (one row per trace)
unset label
unset arrow
set tmargin at screen 0.1889
set bmargin at screen 0.1167
set yrange [2.5:-0.5]
set ytics ("plain backpropa..." 0, "every block che..." 1, "searched, budge..." 2) scale 0
unset ylabel
set format x "%g"
set border 1
unset grid
set xlabel "allocation events since the start of the iteration" offset 0,0.4
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
