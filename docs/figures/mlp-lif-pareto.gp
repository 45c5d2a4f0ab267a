# remat plot --pareto: predicted peak against predicted time overhead of the plans of a search.
# Numbers in mlp-lif-pareto.dat. Restyle freely and redraw with: gnuplot mlp-lif-pareto.gp  (in this folder)
# output: gnuplot -e "outfile='other.svg'" mlp-lif-pareto.gp writes elsewhere (terminal below decides the format)
if (!exists("outfile")) outfile = "mlp-lif-pareto.png"
set terminal pngcairo size 1280,720 noenhanced font "DejaVu Sans,10" background rgb "white"
set output outfile
dat = "mlp-lif-pareto.dat"
yscale = 1048576
ylab = "MiB"
ytop = 125495203.59999999 / yscale
set title "mlp-lif: plans found by remat search --budget 80MiB" font ",13"
set xrange [-1.99240565:43.168789]
set yrange [0:ytop]
set xlabel "predicted step-time overhead over the baseline (%)"
set ylabel "predicted peak live memory (".ylab.")"
set format y "%g"
set format x "%g"
set grid xtics ytics lc rgb "#d0d0d0" lt 1 lw 0.6
set tics out nomirror
set border 3
set key bottom left Left reverse samplen 2 spacing 1.2 box lc rgb "#cccccc" opaque
set style textbox opaque fc rgb "white" noborder margins 2,1
set label 10 "chosen: b2:none/k8\n79.82 MiB at +21.6 %" at first 21.6135947, first 83698296/yscale offset 1.5,-1.9 left boxed front tc rgb "#b03010"
set label 11 "baseline: 104.1 MiB" at first 0, first 109126264/yscale offset 0,1.5 left boxed front tc rgb "#202020"
# to name every point: add  dat index 0 using 1:($2/yscale):5 with labels offset 1,0.6 left font ",8" notitle
plot \
  dat index 1 using 1:($2/yscale) with steps lw 2 lc rgb "#1f5fbf" title "Pareto front (lower peak costs more time)", \
  dat index 0 using 1:($2/yscale) with points pt 6 ps 1.1 lc rgb "#6f8fbf" title "plans evaluated (10)", \
  dat index 2 using 1:($2/yscale) with points pt 7 ps 2.2 lc rgb "#d6451b" title "chosen plan", \
  dat index 3 using 1:($2/yscale) with points pt 5 ps 1.8 lc rgb "#202020" title "baseline (no checkpointing)"
