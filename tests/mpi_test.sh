#!/usr/bin/env bash
# mpi_test.sh - data-parallel steps under a real mpirun (docs/mpi.md), on a remat built
# with --config=mpi:   bash tests/mpi_test.sh bazel-bin/tools/remat
# test.sh runs it as its own step. On the tiny models (dense, batch norm + dropout, conv,
# SEW), fp32 and bf16: `mpirun -np R remat run --reduce-blocks 8 --json` for R = 2, 4, 8
# prints the same loss of every step and the same state CRC-32 (every parameter,
# running statistic and gradient after the steps, bit for bit) as one process; R = 3 is
# refused; only rank 0 prints; simulate --ranks predicts every rank's peaks to the byte;
# `mpirun -np R remat verify --grid` (R = 2, 3) prints the one-process report byte for
# byte; `mpirun -np R remat run --dump` (R = 2, 4) writes the one-process dump byte for byte;
# `--trace` under mpirun is rank 0's, and simulate replays it to the byte; an unwritable output
# is reported once. Oversubscribed (CI has 2 cores) and allowed as root.
set -u
remat="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
tmp="${TMPDIR:-/tmp}/mpi_test.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
# MPI_TEST_LAUNCHER=mpirun.mpich with a --config=mpich build: the same checks on MPICH (whose
# launcher oversubscribes by itself and runs as root as it is)
launcher="${MPI_TEST_LAUNCHER:-mpirun}"
over=(--oversubscribe); [ "$launcher" = mpirun ] || over=()
mpi() { local np="$1"; shift; timeout 300 "$launcher" "${over[@]}" -np "$np" "$remat" "$@"; }

if ! command -v "$launcher" >/dev/null; then echo "SKIP: no $launcher (install openmpi-bin)"; exit 0; fi
"$remat" --version | grep -q "^mpi: built in" || { echo "FAIL: $remat --version does not say MPI is built in"; exit 1; }

# the fields that must agree: each step's loss, the state CRC, the world's N
key() { python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join([repr(s["loss"]) for s in d["steps"]] + [d["state_crc32"], str(sum(r["N"] for r in d["ranks"]))]))' "$1"; }

if [ "${MPI_TEST_CUDA_ONLY:-0}" != 1 ]; then  # test.sh's second build checks the CUDA ranks alone
for prec in fp32 bf16; do
  for spec in "tiny-mlp-lif:8:data/plans/tiny-mlp-lif-ckpt.json" "tiny-resnet-bn:8:data/plans/tiny-resnet-bn-ckpt.json" \
              "tiny-vgg-dvs:8:" "tiny-sew-resnet:4:"; do
    IFS=: read -r name n plan <<< "$spec"
    model="$tmp/$name-$prec.json"
    sed "0,/{/s//{\"precision\": \"$prec\", /" "data/models/$name.json" > "$model"
    blocks=$n
    "$remat" run --model "$model" --N "$n" --reduce-blocks "$blocks" --iters 2 --json > "$tmp/one.json" \
      || { fail "$name $prec: one process"; continue; }
    want=$(key "$tmp/one.json")
    for R in 2 4 8; do
      [ $((blocks % R)) -eq 0 ] || continue
      planarg=(); [ -n "$plan" ] && [ "$R" = 2 ] && planarg=(--plan "$plan")  # a checkpoint plan on the ranks
      if ! mpi "$R" run --model "$model" --N "$n" --reduce-blocks "$blocks" --iters 2 --json "${planarg[@]}" \
           > "$tmp/r.json" 2> "$tmp/r.err"; then
        fail "$name $prec R=$R: mpirun failed: $(head -3 "$tmp/r.err")"; continue
      fi
      [ "$(wc -l < "$tmp/r.json")" = 1 ] || { fail "$name $prec R=$R: more than rank 0 printed"; continue; }
      got=$(key "$tmp/r.json")
      if [ "$got" = "$want" ]; then passes=$((passes+1)); else fail "$name $prec R=$R ${planarg[*]}: '$got' != one process '$want'"; fi
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [r["rank"] for r in d["ranks"]] == list(range(int(sys.argv[2])))' \
        "$tmp/r.json" "$R" || fail "$name $prec R=$R: ranks array"
    done
  done
done

# per-rank memory: simulate --ranks R from a one-process trace against each rank's measured peaks,
# exact to the byte (live and reserved), with and without a checkpoint plan
for spec in "tiny-mlp-lif:8:b1/k3" "tiny-resnet-bn:8:" "tiny-vgg-dvs:8:" "tiny-sew-resnet:4:"; do
  IFS=: read -r name n plan <<< "$spec"
  "$remat" run --model "data/models/$name.json" --N "$n" --iters 2 --trace "$tmp/$name.h5" > /dev/null \
    || { fail "$name: recording"; continue; }
  for R in 2 4; do
    planarg=(); [ -n "$plan" ] && planarg=(--plan "$plan")
    pred=$("$remat" simulate --trace "$tmp/$name.h5" --ranks "$R" --reduce-blocks "$n" "${planarg[@]}" --json | python3 -c '
import json, sys; d = json.load(sys.stdin); print(" ".join("%d:%d:%d" % (r["N"], r["peak_live_bytes"], r["peak_reserved_bytes"]) for r in d["ranks"]))')
    meas=$(mpi "$R" run --model "data/models/$name.json" --N "$n" --iters 2 --reduce-blocks "$n" "${planarg[@]}" --json 2>/dev/null | python3 -c '
import json, sys; d = json.load(sys.stdin); print(" ".join("%d:%d:%d" % (r["N"], r["peak_live_bytes"], r["peak_reserved_bytes"]) for r in d["ranks"]))')
    if [ -n "$pred" ] && [ "$pred" = "$meas" ]; then passes=$((passes+1)); else fail "$name R=$R ${planarg[*]}: predicted '$pred', measured '$meas'"; fi
  done
done

# the verify grid dealt over ranks: byte-identical --json (--no-times) for R = 1, 2, 3, a sampled
# grid of the batch-norm + dropout model and the conv model, fp32 and bf16
for prec in fp32 bf16; do
  for name in tiny-resnet-bn tiny-vgg-dvs; do
    model="$tmp/$name-$prec.json"
    "$remat" verify --model "$model" --grid --sample 24 --equivalence-only --json --no-times > "$tmp/g1.json" 2>/dev/null \
      || { fail "verify grid $name $prec: one process"; continue; }
    for R in 2 3; do
      mpi "$R" verify --model "$model" --grid --sample 24 --equivalence-only --json --no-times > "$tmp/gR.json" 2>/dev/null
      code=$?
      if [ "$code" = 0 ] && cmp -s "$tmp/g1.json" "$tmp/gR.json"; then passes=$((passes+1));
      else fail "verify grid $name $prec R=$R: exit $code, report differs from one process"; fi
    done
  done
done

# the gradient dump of a data-parallel step: rank 0 writes the global batch's dump (input and its
# gradient gathered, labels, dropout masks, reduced gradients, running statistics), byte for byte
# the one-process --dump with the same --reduce-blocks; batch norm + dropout under a checkpoint
# plan, the conv model, a bf16 model
for spec in "tiny-resnet-bn-fp32:data/plans/tiny-resnet-bn-ckpt.json" "tiny-vgg-dvs-fp32:" "tiny-mlp-lif-bf16:"; do
  IFS=: read -r name plan <<< "$spec"
  planarg=(); [ -n "$plan" ] && planarg=(--plan "$plan")
  "$remat" run --model "$tmp/$name.json" --N 8 --reduce-blocks 8 "${planarg[@]}" --dump "$tmp/d1.h5" > /dev/null \
    || { fail "dump $name: one process"; continue; }
  for R in 2 4; do
    rm -f "$tmp/dR.h5"
    if ! mpi "$R" run --model "$tmp/$name.json" --N 8 --reduce-blocks 8 "${planarg[@]}" --dump "$tmp/dR.h5" \
         > "$tmp/d.out" 2> "$tmp/d.err"; then
      fail "dump $name R=$R: mpirun failed: $(head -3 "$tmp/d.err")"; continue
    fi
    if cmp -s "$tmp/d1.h5" "$tmp/dR.h5" && [ "$(grep -c 'gradient dump written' "$tmp/d.out")" = 1 ]; then
      passes=$((passes+1))
    else fail "dump $name R=$R: not the one-process dump byte for byte (or not one line from rank 0)"; fi
  done
done
# --trace under mpirun: rank 0 writes its own trace (its share, the reduction's buffers, the world in
# the ranks and reduce_blocks attributes); simulate replays it as it ran, to the byte of every rank's
# measured peaks, and predicts R = 4 from it as from a one-process trace
for name in tiny-resnet-bn tiny-vgg-dvs; do
  rm -f "$tmp/t2.h5"
  mpi 2 run --model "data/models/$name.json" --N 8 --reduce-blocks 8 --iters 2 --trace "$tmp/t2.h5" --json \
    > "$tmp/t2.json" 2> "$tmp/et" || { fail "--trace under mpirun $name: $(head -2 "$tmp/et")"; continue; }
  rk() { python3 -c 'import json,sys; print(json.load(sys.stdin)["ranks"])'; }
  meas=$(rk < "$tmp/t2.json")
  pred=$("$remat" simulate --trace "$tmp/t2.h5" --json | rk)
  p4=$("$remat" simulate --trace "$tmp/t2.h5" --ranks 4 --reduce-blocks 8 --json | rk)
  w4=$("$remat" simulate --trace "$tmp/$name.h5" --ranks 4 --reduce-blocks 8 --json | rk)
  if [ -n "$meas" ] && [ "$pred" = "$meas" ] && [ "$p4" = "$w4" ]; then passes=$((passes+1));
  else fail "--trace under mpirun $name: replayed '$pred' measured '$meas'; R=4 '$p4' against '$w4'"; fi
done
# an output rank 0 cannot write: rank 0 alone says so, once, and every rank exits 2
for flag in --dump --trace; do
  mpi 2 run --model data/models/tiny-mlp-lif.json --reduce-blocks 8 $flag "$tmp/missing/x.h5" > /dev/null 2> "$tmp/ew"
  code=$?
  n=$(grep -c "^remat run: $flag" "$tmp/ew")
  if [ "$code" = 2 ] && [ "$n" = 1 ]; then passes=$((passes+1)); else fail "$flag unwritable under mpirun: exit $code, $n lines: $(head -3 "$tmp/ew")"; fi
done

fi

# the CUDA backend (a build with --config=cudaemu too: its CPU emulator) over host copies: two
# ranks on it end with the one-process reference backend's state
if "$remat" run --model data/models/tiny-mlp-lif.json --backend cuda --json > /dev/null 2>&1; then
  for name in tiny-mlp-lif tiny-resnet-bn; do
    "$remat" run --model "data/models/$name.json" --reduce-blocks 8 --iters 2 --json > "$tmp/one.json" || { fail "$name: one process"; continue; }
    mpi 2 run --model "data/models/$name.json" --reduce-blocks 8 --iters 2 --backend cuda --json > "$tmp/r.json" 2>/dev/null
    if [ "$(key "$tmp/one.json")" = "$(key "$tmp/r.json")" ]; then passes=$((passes+1)); else fail "$name: 2 ranks on the CUDA backend differ from one reference process"; fi
  done
  # and the dump of two CUDA ranks is the one-process CUDA dump byte for byte
  "$remat" run --model data/models/tiny-resnet-bn.json --N 8 --reduce-blocks 8 --backend cuda --dump "$tmp/c1.h5" > /dev/null \
    && mpi 2 run --model data/models/tiny-resnet-bn.json --N 8 --reduce-blocks 8 --backend cuda --dump "$tmp/c2.h5" > /dev/null 2>&1 \
    && cmp -s "$tmp/c1.h5" "$tmp/c2.h5" && passes=$((passes+1)) || fail "dump of 2 CUDA ranks differs from one CUDA process"
else
  echo "(no CUDA backend in this build: the CUDA ranks are checked by the --config=mpi --config=cudaemu build)"
fi

# a world size that does not divide the blocks: exit 2, one line per rank naming the flag
mpi 3 run --model data/models/tiny-mlp-lif.json --reduce-blocks 8 > /dev/null 2> "$tmp/e3"
code=$?
if [ "$code" = 2 ] && grep -q -- "--reduce-blocks" "$tmp/e3"; then passes=$((passes+1)); else fail "R=3 with 8 blocks: exit $code: $(cat "$tmp/e3")"; fi

echo "mpi_test: $passes passed, $fails failed"
[ "$fails" = 0 ]
