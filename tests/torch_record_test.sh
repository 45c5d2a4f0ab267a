#!/usr/bin/env bash
# torch_record_test.sh - remat_torch.record (python/remat_torch/record.py) and `remat
# simulate` on the recorded PyTorch step (python/tests/test_record.py), and the CUDA event
# source's snapshot conversion (python/tests/test_record_cuda.py). Needs Debian's
# python3-torch and python3-h5py (setup.sh installs them); SpikingJelly from
# ../shared/third_party/spikingjelly, skipped with the reason when absent.
set -u
remat="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
py=/usr/bin/python3
if ! "$py" -c "import torch, h5py" 2>/dev/null; then
  echo "FAIL: $py cannot import torch and h5py (setup.sh installs python3-torch python3-h5py)"; exit 1
fi
sj=""
for d in "${REMAT_SHARED:-}" "$(dirname "$(readlink -f tests/torch_record_test.sh 2>/dev/null || echo .)")/../../shared" /work/shared; do
  if [ -n "$d" ] && [ -d "$d/third_party/spikingjelly/spikingjelly" ]; then sj="$d/third_party/spikingjelly"; break; fi
done
[ -z "$sj" ] && echo "SKIP (visible): SpikingJelly not found under ../shared/third_party; the recorder tests need it"
export PYTHONPATH="$PWD/python:$PWD/python/tests:$PWD/bench/pytorch${sj:+:$sj}"
export REMAT="$remat" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec "$py" -m unittest -v test_record test_record_cuda
