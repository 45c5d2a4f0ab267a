#!/usr/bin/env bash
# cuda_cli_test.sh - `remat --backend cuda` end to end: verify a sample of each tiny
# model's plan grid bit for bit on the CUDA backend, run the shipped plans with a trace
# and check that the simulator, given the CUDA baseline's trace, predicts the CUDA
# run's peak live and reserved bytes exactly (as it does for the reference backend);
# that the driver's view recorded in the trace is the device overhead search counts; and
# that a blocked (data-parallel) step has the reference backend's bits.
# Where remat has no usable CUDA backend (the default build), it says why and passes;
# under --config=cudaemu it runs on the CPU emulator, under --config=cuda on the GPU.
set -u
remat="$1"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
tmp="${TEST_TMPDIR:-/tmp}/cuda_cli.$$"
mkdir -p "$tmp"
fails=0 passes=0

if ! "$remat" run --model data/models/tiny-mlp-lif.json --backend cuda --json >"$tmp/probe.json" 2>"$tmp/probe.err"; then
  if grep -q "no CUDA device" "$tmp/probe.err"; then
    echo "SKIPPED: $(cat "$tmp/probe.err")"
    exit 0
  fi
  echo "FAIL: remat run --backend cuda: $(cat "$tmp/probe.err")"
  exit 1
fi
grep -o '"device":"[^"]*"' "$tmp/probe.json"

field() { # field <json file> <key>: the first number of "key":
  grep -o "\"$2\":[0-9.e+-]*" "$1" | head -1 | cut -d: -f2
}

for model in tiny-mlp-lif tiny-3block-if tiny-resnet-bn tiny-vgg-dvs tiny-plif; do
  M=data/models/$model.json P=data/plans/$model-ckpt.json
  # 1. a sample of the grid, bit for bit against plain backpropagation on the device
  if "$remat" verify --model "$M" --grid --sample 24 --equivalence-only --backend cuda >"$tmp/grid.txt" 2>&1 &&
     grep -q "^verdict: IDENTICAL" "$tmp/grid.txt"; then
    passes=$((passes+1)); tail -1 "$tmp/grid.txt"
  else
    echo "FAIL: verify --grid --backend cuda on $model:"; tail -5 "$tmp/grid.txt"; fails=$((fails+1))
  fi
  # 2. the shipped plan: identical, and it recomputes something
  if "$remat" verify --model "$M" --plan "$P" --backend cuda --json >"$tmp/one.json" 2>"$tmp/one.err"; then
    passes=$((passes+1))
  else
    echo "FAIL: verify --plan $P --backend cuda: $(cat "$tmp/one.err") $(head -c 400 "$tmp/one.json")"; fails=$((fails+1))
  fi
  # 3. the simulator on the CUDA baseline's trace against the CUDA run of the plan
  if ! "$remat" run --model "$M" --backend cuda --trace "$tmp/base.h5" >/dev/null 2>"$tmp/err" ||
     ! "$remat" run --model "$M" --plan "$P" --backend cuda --iters 2 --json >"$tmp/run.json" 2>>"$tmp/err"; then
    echo "FAIL: run on $model: $(cat "$tmp/err")"; fails=$((fails+1)); continue
  fi
  rec=$(field "$tmp/run.json" recomputed_layers)
  for alloc in exact caching; do
    if ! "$remat" simulate --trace "$tmp/base.h5" --plan "$P" --allocator "$alloc" --json >"$tmp/sim.json" 2>"$tmp/err"; then
      echo "FAIL: simulate on $model: $(cat "$tmp/err")"; fails=$((fails+1)); continue
    fi
    key=peak_live_bytes
    [ "$alloc" = caching ] && key=peak_reserved_bytes
    got=$(field "$tmp/run.json" "$key") want=$(field "$tmp/sim.json" "$key")
    if [ -n "$got" ] && [ "$got" = "$want" ] && [ "${rec:-0}" -gt 0 ]; then
      passes=$((passes+1)); echo "$model $alloc: $key predicted $want, CUDA run $got, $rec layers recomputed"
    else
      echo "FAIL: $model $alloc: $key predicted '$want', CUDA run '$got' (recomputed '$rec')"; fails=$((fails+1))
    fi
  done
done

# 4. the driver's view the CUDA run records in its trace is the device overhead a search
# counts by default (total - free at init, as `run --json` reports it)
if "$remat" run --model data/models/tiny-3block-if.json --backend cuda --trace "$tmp/dev.h5" --json >"$tmp/dev.json" 2>"$tmp/err" &&
   "$remat" search --trace "$tmp/dev.h5" --budget 8GiB --json >"$tmp/dsearch.json" 2>>"$tmp/err"; then
  want=$(field "$tmp/dev.json" device_overhead_bytes) got=$(field "$tmp/dsearch.json" device_overhead_bytes)
  if [ -n "$want" ] && [ "$want" = "$got" ] && grep -q '"device_overhead_source":"trace"' "$tmp/dsearch.json"; then
    passes=$((passes+1)); echo "device overhead: measured $want B, counted by search $got B"
  else
    echo "FAIL: device overhead: run measured '$want', search counted '$got'"; fails=$((fails+1))
  fi
else
  echo "FAIL: device overhead run/search: $(cat "$tmp/err")"; fails=$((fails+1))
fi

# data parallelism over host copies (docs/mpi.md): the blocked step on the CUDA backend has
# the reference backend's bits (loss and the state CRC-32 of every parameter and gradient)
for model in tiny-mlp-lif tiny-resnet-bn tiny-vgg-dvs tiny-plif; do
  a=$("$remat" run --model data/models/$model.json --N 4 --reduce-blocks 4 --iters 2 --json | grep -o '"state_crc32":"[0-9a-f]*"')
  b=$("$remat" run --model data/models/$model.json --N 4 --reduce-blocks 4 --iters 2 --backend cuda --json | grep -o '"state_crc32":"[0-9a-f]*"')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then passes=$((passes+1)); else echo "FAIL: $model --reduce-blocks 4: ref $a, cuda $b"; fails=$((fails+1)); fi
done
echo "cuda_cli_test: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
