#!/usr/bin/env bash
# cli_run_test.sh - `remat run` end to end: exit codes and one-line errors of
# docs/interfaces.md, JSON keys, trace and dump files written whole.
set -u
remat="$1"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
tmp="${TEST_TMPDIR:-/tmp}/cli_run.$$"
mkdir -p "$tmp"
fails=0 passes=0

expect() { # expect <code> <stderr-pattern> -- command...
  local want="$1" pat="$2"; shift 3
  local out err code
  out=$("$@" 2>"$tmp/err"); code=$?
  err=$(cat "$tmp/err")
  if [ "$code" != "$want" ]; then
    echo "FAIL: '$*' exited $code, expected $want; stderr: $err"; fails=$((fails+1)); return
  fi
  if [ -n "$pat" ] && ! grep -qE -- "$pat" "$tmp/err"; then
    echo "FAIL: '$*' stderr does not match /$pat/: $err"; fails=$((fails+1)); return
  fi
  if [ "$want" = 2 ] && [ "$(wc -l < "$tmp/err")" -ne 1 ]; then
    echo "FAIL: '$*' printed more than one error line: $err"; fails=$((fails+1)); return
  fi
  passes=$((passes+1))
}

M=data/models/tiny-mlp-lif.json
expect 0 "" -- "$remat" run --help
expect 0 "" -- "$remat" --help
expect 2 "unknown command" -- "$remat" frobnicate
expect 2 "--model" -- "$remat" run
expect 2 "no-such.json" -- "$remat" run --model "$tmp/no-such.json"
printf '{"name": "x", "T": 4,' > "$tmp/trunc.json"
expect 2 "trunc.json" -- "$remat" run --model "$tmp/trunc.json"
expect 2 "k" -- "$remat" run --model $M --plan data/plans/tiny-mlp-lif-invalid-k-divisor.json
expect 2 "blocks" -- "$remat" run --model $M --plan data/plans/tiny-mlp-lif-invalid-unknown-block.json
expect 2 "backend" -- "$remat" run --model $M --backend tpu
expect 2 "iters" -- "$remat" run --model $M --iters 0
# data parallelism (docs/mpi.md): blocks must divide N; a launcher's world needs an MPI build
expect 2 "reduce-blocks.*divide" -- "$remat" run --model $M --reduce-blocks 3
expect 2 "reduce-blocks" -- "$remat" run --model $M --reduce-blocks 0
expect 2 "built without MPI" -- env OMPI_COMM_WORLD_SIZE=2 "$remat" run --model $M
expect 0 "" -- "$remat" run --model $M --reduce-blocks 8 --json
if ! "$remat" run --model $M --reduce-blocks 8 --json | grep -q '"ranks":\[{"rank":0,"N":8,'; then
  echo "FAIL: run --reduce-blocks --json has no ranks array"; fails=$((fails+1)); fi
if ! "$remat" --version | grep -q '^mpi: not built in'; then
  echo "FAIL: --version does not say MPI is not built in"; fails=$((fails+1)); fi
expect 2 "dump" -- "$remat" run --model $M --iters 2 --dump "$tmp/d.h5"
expect 2 "" -- "$remat" run --model $M --seed notanumber
# cuda without a device (or without CUDA) is a device error, exit 1, never a crash
expect 1 "CUDA" -- "$remat" run --model $M --backend cuda

# a good run: JSON keys, trace and dump written, no temp files left
expect 0 "" -- "$remat" run --model $M --plan data/plans/tiny-mlp-lif-ckpt.json --iters 2 --trace "$tmp/t.h5" --json
out=$("$remat" run --model $M --plan data/plans/tiny-mlp-lif-ckpt.json --json)
for key in peak_live_bytes peak_reserved_bytes end_of_forward_bytes step_time_s events threads simd; do
  if ! echo "$out" | grep -q "\"$key\":"; then echo "FAIL: --json lacks $key: $out"; fails=$((fails+1)); else passes=$((passes+1)); fi
done
[ -s "$tmp/t.h5" ] && passes=$((passes+1)) || { echo "FAIL: no trace written"; fails=$((fails+1)); }
# the reference backend's threads and SIMD path: in --json, in the summary line, and in
# the trace (shown by simulate)
out=$(REMAT_SIMD=scalar "$remat" run --model $M --threads 2 --json)
echo "$out" | grep -q '"threads":2,"simd":"scalar"' && passes=$((passes+1)) || { echo "FAIL: --json threads/simd: $out"; fails=$((fails+1)); }
REMAT_SIMD=scalar "$remat" run --model $M | head -1 | grep -q '(1 thread, simd scalar)' && passes=$((passes+1)) || { echo "FAIL: summary lacks threads/simd"; fails=$((fails+1)); }
REMAT_SIMD=scalar "$remat" run --model $M --threads 2 --trace "$tmp/s.h5" >/dev/null
"$remat" simulate --trace "$tmp/s.h5" | grep -q '^recorded on  *ref backend, 2 threads, simd scalar$' && passes=$((passes+1)) || { echo "FAIL: simulate lacks the recorded path"; fails=$((fails+1)); }
"$remat" simulate --trace "$tmp/s.h5" --json | grep -q '"threads":2,"simd":"scalar"}' && passes=$((passes+1)) || { echo "FAIL: simulate --json lacks the recorded path"; fails=$((fails+1)); }
# REMAT_CLOCK: thread-cpu times a one-thread run by its CPU time (a trace simulate reads);
# any other value than wall or thread-cpu exits 2 naming it
REMAT_CLOCK=thread-cpu "$remat" run --model $M --iters 2 --trace "$tmp/cpu.h5" >/dev/null &&
  "$remat" simulate --trace "$tmp/cpu.h5" --N 4 | grep -q '^step-time trust .*from a trace with a probe' &&
  passes=$((passes+1)) || { echo "FAIL: REMAT_CLOCK=thread-cpu run, or its trace's probe"; fails=$((fails+1)); }
expect 2 'REMAT_CLOCK: expected "wall" or "thread-cpu", found "cpu"' -- env REMAT_CLOCK=cpu "$remat" run --model $M
# simulate --ranks: one rank's share and its reduction buffers; --ddp: DDP's buckets on top
# (tiny-mlp-lif's gradients are under DDP's 1 MiB first bucket: one bucket of all of them)
ranks=$("$remat" simulate --trace "$tmp/s.h5" --ranks 2 --reduce-blocks 8 --json)
one=$("$remat" simulate --trace "$tmp/s.h5" --N 4 --json)
ddp=$("$remat" simulate --trace "$tmp/s.h5" --ranks 2 --ddp --json)
view=$("$remat" simulate --trace "$tmp/s.h5" --ranks 2 --ddp --ddp-bucket-view --json)
python3 - "$ranks" "$one" "$ddp" "$view" <<'PY' && passes=$((passes+1)) || { echo "FAIL: simulate --ranks/--ddp figures"; fails=$((fails+1)); }
import json, sys
r, one, d, v = (json.loads(a) for a in sys.argv[1:5])
assert r["N"] == 8 and [x["N"] for x in r["ranks"]] == [4, 4] and r["reduce_blocks"] == 8
assert r["ranks"][0]["peak_live_bytes"] > one["peak_live_bytes"]          # the reduction's buffers
g = d["ddp"]
assert g["buckets"] == 1 and g["bucket_bytes"] == g["extra_live_bytes"] > 0 and g["extra_reserved_bytes"] >= g["bucket_bytes"]
assert d["ranks"][1]["peak_live_bytes"] == one["peak_live_bytes"] + g["bucket_bytes"]   # DDP: no remat buffers
assert v["ddp"]["extra_live_bytes"] == 0 and v["ranks"][0]["peak_live_bytes"] == one["peak_live_bytes"]
assert g["nccl_estimate_bytes"] == 2 * 2 * 4 * 2**20
PY
# tune --ranks: the largest share per rank, whose figures are simulate --ranks' at R x N
tn=$("$remat" tune --trace "$tmp/s.h5" --budget 100KiB --budget-on live --device-overhead 0 --ranks 2 --max 64 --json)
v=$(echo "$tn" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ranks"] == 2; print(d["plain"]["value"], d["plain"]["peak_live_bytes"])')
set -- $v
sim=$("$remat" simulate --trace "$tmp/s.h5" --N $(( $1 * 2 )) --ranks 2 --reduce-blocks 2 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["ranks"][0]["peak_live_bytes"])')
[ -n "$1" ] && [ "$1" -gt 1 ] && [ "$sim" = "$2" ] && passes=$((passes+1)) || { echo "FAIL: tune --ranks $v against simulate $sim"; fails=$((fails+1)); }
set --
# simulate --sweep with --ranks: every row is simulate --N v --ranks's rank, the batch v in blocks
sw=$("$remat" simulate --trace "$tmp/s.h5" --sweep N=8,16 --ranks 2 --reduce-blocks 8 --data-only --figure "$tmp/sw.png" --json)
s16=$("$remat" simulate --trace "$tmp/s.h5" --N 16 --ranks 2 --reduce-blocks 8 --json)
python3 - "$sw" "$ranks" "$s16" <<'PY' && passes=$((passes+1)) || { echo "FAIL: simulate --sweep --ranks rows"; fails=$((fails+1)); }
import json, sys
sw, r8, r16 = (json.loads(a) for a in sys.argv[1:4])
assert sw["ranks"] == 2 and sw["reduce_blocks"] == 8, sw
assert [(x["N"], x["rank_N"]) for x in sw["rows"]] == [(8, 4), (16, 8)], sw["rows"]
for row, one in zip(sw["rows"], (r8, r16)):
    assert row["baseline"]["peak_live_bytes"] == one["ranks"][0]["peak_live_bytes"], (row, one["ranks"][0])
    assert row["baseline"]["peak_reserved_bytes"] == one["ranks"][0]["peak_reserved_bytes"]
PY
expect 2 "reduce-blocks" -- "$remat" simulate --trace "$tmp/s.h5" --sweep N=8,12 --ranks 2 --reduce-blocks 8 --data-only --figure "$tmp/sw.png"
# a blocked run's trace (here one process; under mpirun rank 0's, tests/mpi_test.sh) records its
# world: simulate replays it as it ran (its peak), and predicts another world as from a plain trace
bl=$("$remat" run --model $M --reduce-blocks 8 --iters 2 --trace "$tmp/b.h5" --json)
rb=$("$remat" simulate --trace "$tmp/b.h5" --json)
r2=$("$remat" simulate --trace "$tmp/b.h5" --ranks 2 --reduce-blocks 8 --json)
python3 - "$bl" "$rb" "$r2" "$ranks" <<'PY' && passes=$((passes+1)) || { echo "FAIL: a blocked run's trace"; fails=$((fails+1)); }
import json, sys
run, rb, r2, want = (json.loads(a) for a in sys.argv[1:5])
assert rb["reduce_blocks"] == 8 and rb["ranks"][0]["peak_live_bytes"] == run["ranks"][0]["peak_live_bytes"], (rb, run)
assert r2["ranks"] == want["ranks"], (r2["ranks"], want["ranks"])
PY
expect 2 "ranks" -- "$remat" simulate --trace "$tmp/s.h5" --ddp
expect 2 "reduce-blocks" -- "$remat" simulate --trace "$tmp/s.h5" --ranks 3 --reduce-blocks 8
expect 0 "" -- "$remat" run --model $M --dump "$tmp/d.h5"
[ -s "$tmp/d.h5" ] && passes=$((passes+1)) || { echo "FAIL: no dump written"; fails=$((fails+1)); }
ls "$tmp" | grep -q '\.tmp$\|\.remat-' && { echo "FAIL: temp files left"; fails=$((fails+1)); } || passes=$((passes+1))
# a trace path in a missing folder: exit 2, nothing half written
expect 2 "" -- "$remat" run --model $M --trace "$tmp/missing/dir/t.h5"

rm -rf "$tmp"
echo "cli_run: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
