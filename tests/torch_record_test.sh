#!/usr/bin/env bash
# torch_record_test.sh - remat_torch.record (python/remat_torch/record.py) and `remat
# simulate` on the recorded PyTorch step (python/tests/test_record.py), and the CUDA event
# source's snapshot conversion (python/tests/test_record_cuda.py). Needs Debian's
# python3-torch and python3-h5py (setup.sh installs them); SpikingJelly from
# ../shared/third_party/spikingjelly, skipped with the reason when absent.
set -u
remat="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
. tests/torch_env.sh
torch_env_python torch_record_test || exit 1
torch_env_shared torch_record_test
export PYTHONPATH="$PWD/python:$PWD/python/tests:$PWD/bench/pytorch${sj:+:$sj}"
export REMAT="$remat" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec "$py" -m unittest -v test_record test_record_cuda
