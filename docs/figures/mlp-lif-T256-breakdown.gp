# remat plot --breakdown: the peak of each trace split by what the memory holds.
# Numbers in mlp-lif-T256-breakdown.dat (bytes). Restyle freely and redraw with: gnuplot mlp-lif-T256-breakdown.gp  (in this folder)
# output: gnuplot -e "outfile='other.svg'" mlp-lif-T256-breakdown.gp writes elsewhere (terminal below decides the format)
if (!exists("outfile")) outfile = "mlp-lif-T256-breakdown.png"
set terminal pngcairo size 1280,720 noenhanced font "DejaVu Sans,10" background rgb "white"
set output outfile
dat = "mlp-lif-T256-breakdown.dat"
yscale = 1048576
ylab = "MiB"
ytop = 474542951.68000007 / yscale
set title "What the peak holds - model mlp-lif (T=256, N=128)" font ",13"
set style data histograms
set style histogram rowstacked gap 1
set style fill solid 0.95 border rgb "white"
set boxwidth 0.60
set yrange [0:ytop]
set xrange [-0.6:1.6]
set ylabel "live bytes at the peak (".ylab.")"
set format y "%g"
set grid ytics lc rgb "#d0d0d0" lt 1 lw 0.6
set tics out nomirror
set border 3
set key outside right top vertical invert Left reverse samplen 2 spacing 1.2 title "role" left
set bmargin 4.5
set xtics ("baseline (simulated)\npeak at b2/lif2, backward" 0, "every block checkpointed, bit, k=16 (simulated)\npeak at b2/lif2, recompute" 1) scale 0
plot \
  dat index 0 using ($4/yscale) lc rgb "#4e79a7" title "parameters", \
  dat index 0 using ($5/yscale) lc rgb "#a0cbe8" title "gradients", \
  dat index 0 using ($6/yscale) lc rgb "#9c755f" title "optimizer state", \
  dat index 0 using ($7/yscale) lc rgb "#bab0ac" title "batch (input, labels)", \
  dat index 0 using ($8/yscale) lc rgb "#e15759" title "saved activations", \
  dat index 0 using ($9/yscale) lc rgb "#f28e2b" title "compressed inputs", \
  dat index 0 using ($10/yscale) lc rgb "#b07aa1" title "neuron state", \
  dat index 0 using ($11/yscale) lc rgb "#59a14f" title "activation gradients", \
  dat index 0 using ($12/yscale) lc rgb "#edc948" title "transient", \
  dat index 1 using 1:($2/yscale):3 with labels font ",9" tc rgb "#202020" notitle, \
  dat index 2 using 1:($2/yscale):3 with labels offset 0,0.8 font ",11" notitle
