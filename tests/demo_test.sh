#!/usr/bin/env bash
# demo_test.sh - `remat demo` end to end on a small model: every stage's file is
# written, the plan verifies identical, the prediction is exact, and with gnuplot
# installed the four figures exist (without it the demo says so and exits 1).
set -u
remat="$1"
out="${TEST_TMPDIR:-/tmp}/demo.$$"
fails=0
log=$("$remat" demo --model data/models/tiny-mlp-lif.json --budget 24KiB --budget-on live --out "$out" 2>&1); code=$?
check() { if ! eval "$1"; then echo "FAIL: $2"; fails=$((fails+1)); fi; }
if command -v gnuplot >/dev/null; then
  check '[ $code -eq 0 ]' "demo exited $code: $log"
  for f in memory breakdown pareto scaling; do check "[ -s $out/$f.png ] && [ -s $out/$f.gp ]" "no $f figure"; done
else
  check '[ $code -eq 1 ]' "without gnuplot the demo exits 1, got $code"
fi
for f in baseline.h5 plan.json pareto.json predicted.h5 plan.h5 scaling.json summary.txt; do
  check "[ -s $out/$f ]" "no $f"
done
check 'grep -q "verification: identical" "$out/summary.txt"' "plan not verified identical: $(cat "$out/summary.txt" 2>/dev/null)"
check 'grep -q "peak live exact to the byte" "$out/summary.txt"' "prediction not exact"
check '! ls "$out" | grep -q "\.tmp\$\|\.remat-"' "temp files left"
rm -rf "$out"
echo "demo: $(( 12 - fails )) passed, $fails failed"
[ "$fails" -eq 0 ]
