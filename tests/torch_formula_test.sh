#!/usr/bin/env bash
# torch_formula_test.sh - remat's layers against PyTorch's formulas (tests/torch_formula_check.py):
# one step of each model below, every gradient and running statistic compared with the
# same network in PyTorch (bench/pytorch/snn.py, float64). Needs Debian's python3-torch and
# python3-h5py (setup.sh installs them).
set -u
remat="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
. tests/torch_env.sh
torch_env_python torch_formula_test || exit 1
export PYTHONPATH="$PWD/python:$PWD/bench/pytorch" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# every shipped tiny model: tiny-vgg-dvs's dropout takes the dump's mask (remat's generator, not torch's)
exec "$py" tests/torch_formula_check.py "$remat" data/models/tiny-dvs-options.json data/models/tiny-shd-conv1d.json \
  data/models/tiny-vgg-dvs.json data/models/tiny-mlp-lif.json data/models/tiny-3block-if.json \
  data/models/tiny-resnet-bn.json data/models/tiny-sew-resnet.json data/models/tiny-plif.json
