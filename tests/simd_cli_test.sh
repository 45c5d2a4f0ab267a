#!/usr/bin/env bash
# simd_cli_test.sh - the reference backend's SIMD paths (GEMM and element-wise kernels)
# from the command line:
# `remat --version` names the path in use; REMAT_SIMD forces one (a bad value, or a path
# this CPU lacks, exits 2 with one line); and every path this CPU has gives gradient
# dumps bit-identical to the scalar path's (remat verify --dump A --dump B), for the
# tiny models (linear and convolutional), on 1 and 2 threads, and 2 threads give 1
# thread's dumps.
set -u
remat="$1"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
tmp="${TEST_TMPDIR:-/tmp}/simd_cli.$$"
mkdir -p "$tmp"
fails=0 passes=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

out=$(env -u REMAT_SIMD "$remat" --version) || fail "remat --version exited $?"
echo "$out"
line=$(echo "$out" | grep '^simd: ') || fail "--version: no 'simd:' line"
in_use=$(echo "$line" | sed -E 's/^simd: ([a-z0-9]+) .*/\1/')
paths=$(echo "$line" | sed -E 's/.*this CPU:([a-z0-9 ]+);.*/\1/')
widest=$(echo $paths | awk '{print $NF}')
[ "$in_use" = "$widest" ] && passes=$((passes+1)) || fail "default path $in_use is not the widest ($widest)"
case " $paths " in *" scalar "*) passes=$((passes+1)) ;; *) fail "scalar not listed: $paths" ;; esac

for p in $paths; do
  got=$(REMAT_SIMD=$p "$remat" --version | grep '^simd: ' | awk '{print $2}')
  [ "$got" = "$p" ] && passes=$((passes+1)) || fail "REMAT_SIMD=$p: --version says $got"
done

expect2() { # expect2 <value>: REMAT_SIMD=<value> exits 2 with one line naming REMAT_SIMD
  REMAT_SIMD="$1" "$remat" run --model data/models/tiny-mlp-lif.json >/dev/null 2>"$tmp/err"; local code=$?
  if [ "$code" != 2 ] || [ "$(wc -l < "$tmp/err")" -ne 1 ] || ! grep -q "REMAT_SIMD" "$tmp/err"; then
    fail "REMAT_SIMD=$1: exit $code, stderr: $(cat "$tmp/err")"
  else
    passes=$((passes+1))
  fi
}
expect2 avx1024
expect2 AVX2
for p in avx2 avx512; do
  case " $paths " in *" $p "*) ;; *) expect2 "$p" ;; esac
done

for m in tiny-3block-if tiny-mlp-lif tiny-resnet-bn tiny-vgg-dvs tiny-sew-resnet tiny-plif; do
  for thr in 1 2; do
    REMAT_SIMD=scalar "$remat" run --model data/models/$m.json --threads $thr --dump "$tmp/$m-scalar-$thr.h5" \
      >/dev/null || { fail "$m scalar run"; continue; }
    for p in $paths; do
      [ "$p" = scalar ] && continue
      REMAT_SIMD=$p "$remat" run --model data/models/$m.json --threads $thr --dump "$tmp/$m-$p-$thr.h5" \
        >/dev/null || { fail "$m $p run"; continue; }
      if "$remat" verify --dump "$tmp/$m-scalar-$thr.h5" --dump "$tmp/$m-$p-$thr.h5" > "$tmp/v.txt"; then
        passes=$((passes+1))
      else
        fail "$m threads $thr: $p dump differs from scalar: $(tail -1 "$tmp/v.txt")"
      fi
    done
  done
  # and the thread count changes no bit either (GEMMs, neurons, batch norm, add, dropout)
  if "$remat" verify --dump "$tmp/$m-scalar-1.h5" --dump "$tmp/$m-scalar-2.h5" > "$tmp/v.txt"; then
    passes=$((passes+1))
  else
    fail "$m: 2 threads' dump differs from 1 thread's: $(tail -1 "$tmp/v.txt")"
  fi
done

rm -rf "$tmp"
echo "simd_cli_test: $passes passed, $fails failed (paths on this CPU:$paths)"
[ "$fails" = 0 ]
