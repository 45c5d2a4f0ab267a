# remat plot --scaling: how the peak grows with T, with fitted ~T and ~sqrt(T) references.
# Numbers in mlp-lif-scaling.dat. Restyle freely and redraw with: gnuplot mlp-lif-scaling.gp  (in this folder)
# output: gnuplot -e "outfile='other.svg'" mlp-lif-scaling.gp writes elsewhere (terminal below decides the format)
if (!exists("outfile")) outfile = "mlp-lif-scaling.png"
set terminal pngcairo size 1280,720 noenhanced font "DejaVu Sans,10" background rgb "white"
set output outfile
dat = "mlp-lif-scaling.dat"
yscale = 1048576
ylab = "MiB"
ytop = 487253923.59999996 / yscale
xmax = 271.36000000000001
set title "mlp-lif: peak against T (remat simulate --T on one baseline trace)" font ",13"
set xrange [0:xmax]
set yrange [0:ytop]
set samples 400
set xlabel "T (simulation time steps)"
set ylabel "peak live memory (".ylab.")"
set format y "%g"
set format x "%g"
set grid xtics ytics lc rgb "#d0d0d0" lt 1 lw 0.6
set tics out nomirror
set border 3
set key top left Left reverse samplen 3 spacing 1.25 box lc rgb "#cccccc" opaque
fit1_a = 4268664   # bytes
fit1_b = 1638400   # bytes per T
fit1(x) = (fit1_a + fit1_b * x) / yscale
fit2_a = -65438412.5421983   # bytes
fit2_b = 18440389.89125333   # bytes per sqrt of T
fit2(x) = (fit2_a + fit2_b * sqrt(x)) / yscale
set style textbox opaque fc rgb "white" noborder margins 2,1
set label 1 "404.1 MiB" at first 256, first 423699064/yscale offset -1,1 right boxed tc rgb "#1f5fbf" front
set label 2 "232.1 MiB" at first 256, first 243343992/yscale offset -1,1 right boxed tc rgb "#d6451b" front
plot \
  dat index 0 using 1:($2/yscale) with linespoints pt 7 ps 1.2 lw 2 lc rgb "#1f5fbf" title "baseline", \
  dat index 1 using 1:($2/yscale) with linespoints pt 7 ps 1.2 lw 2 lc rgb "#d6451b" title "every block checkpointed (bit, k ~ sqrt T)", \
  fit1(x) with lines dt (5,5) lw 1.5 lc rgb "#1f5fbf" title "∝ T, fit to baseline: 4.071 MiB + 1.562 MiB × T", \
  fit2(x) with lines dt (5,5) lw 1.5 lc rgb "#d6451b" title "∝ √T, fit to every block checkpointed (bit, k ~ sqrt T): -62.41 MiB + 17.59 MiB × √T"
