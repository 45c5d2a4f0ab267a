#!/usr/bin/env bash
# elementwise_isa_test.sh - the element-wise kernels' per-path copies (core/ref/
# elem_kernel.h) are what their names say, in the built remat binary (objdump -d):
#  - every *_scalar copy holds packed SSE arithmetic (the baseline path is vectorised
#    4 wide) and no ymm / zmm register; every *_avx2 copy uses ymm and no zmm; every
#    *_avx512 copy uses zmm;
#  - no copy holds a fused multiply-add (vfmadd/vfmsub/vfnmadd/vfnmsub: the build's
#    -ffp-contract=off must keep the source's separate roundings) or an approximate
#    reciprocal (rcpps, rsqrtps, vrcp14ps, vrsqrt14ps: a division must stay a division).
# These are the conditions under which the copies give the same bits
# (tests/elementwise_simd_test.cc checks the bits on the paths this CPU runs; this
# checks the AVX-512 copy's instructions on any machine). Skipped (exit 0, with a note)
# for a sanitizer build, whose instrumentation reshapes the loops.
set -u
remat="$1"
command -v objdump >/dev/null || { echo "FAIL: objdump not found"; exit 1; }
if nm "$remat" 2>/dev/null | grep -q ' __asan_init'; then
  echo "SKIPPED: sanitizer build"
  exit 0
fi
tmp="${TEST_TMPDIR:-/tmp}/elementwise_isa.$$"
mkdir -p "$tmp"
objdump -d --no-show-raw-insn "$remat" > "$tmp/dis" || { echo "FAIL: objdump $remat"; exit 1; }
fails=0 passes=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# The instructions of every function named <kernel>_<path>, constant-propagated clones
# (name.constprop.N) included.
body() { awk -v f="$1" '/^[0-9a-f]+ <.*>:$/ { keep = ($2 ~ "^<" f "(\\.[a-z]+\\.[0-9]+)*>:$") } keep' "$tmp/dis"; }

for k in neuron_fwd_f32 neuron_bwd_f32 dropout_mask_f32 dropout_apply_f32_part add_f32_part bn_forward_part bn_backward_part pool_part sgd_part fill_part; do
  for p in scalar avx2 avx512; do
    b=$(body "${k}_$p")
    if [ -z "$b" ]; then fail "${k}_$p: not in the binary"; continue; fi
    n=$(echo "$b" | grep -c .)
    case $p in
      scalar)
        echo "$b" | grep -Eq '[yz]mm' && fail "${k}_$p uses ymm/zmm"
        # dropout's mask draw is 64-bit integer work: packed integer ops count.
        echo "$b" | grep -Eq '\s(addps|subps|mulps|divps|andps|pmuludq|cvtdq2ps)\s' || fail "${k}_$p: no packed SSE code"
        ;;
      avx2)
        echo "$b" | grep -q 'zmm' && fail "${k}_$p uses zmm"
        echo "$b" | grep -q 'ymm' || fail "${k}_$p: no ymm code"
        ;;
      avx512)
        echo "$b" | grep -q 'zmm' || fail "${k}_$p: no zmm code"
        ;;
    esac
    bad=$(echo "$b" | grep -Eo '\s(vfn?m(add|sub)[0-9a-z]*|v?rcp(14)?[ps]s|v?rsqrt(14)?[ps]s)\s' | sort -u | tr -d ' \t' | tr '\n' ' ')
    [ -n "$bad" ] && fail "${k}_$p holds $bad"
    passes=$((passes+1))
    echo "ok ${k}_$p ($n instructions)"
  done
done
echo "passes=$passes fails=$fails"
[ "$fails" = 0 ]
