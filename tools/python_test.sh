#!/usr/bin/env bash
# python_test.sh - the Python bridge's tests (python/tests) on Debian's torch, against the
# optimised remat binary: bash tools/python_test.sh [REMAT_BIN]. test.sh runs it right after
# the optimised build. SpikingJelly comes from ../shared/third_party/spikingjelly (tests
# that need it skip, with the reason, where it is absent).
set -uo pipefail
cd "$(dirname "$0")/.."
remat_bin="${1:-bazel-bin/tools/remat}"
[ -x "$remat_bin" ] || bazel build //tools:remat || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c "import torch, h5py" 2>/dev/null; then
  echo "python_test: $py cannot import torch and h5py (setup.sh installs python3-torch, python3-h5py)" >&2
  exit 1
fi
export REMAT_BIN="$PWD/$remat_bin"
export PYTHONPATH="$PWD/python:$PWD/python/tests${PYTHONPATH:+:$PYTHONPATH}"
sj="$PWD/../shared/third_party/spikingjelly"   # a test dependency, not part of the project
if [ -d "$sj/spikingjelly" ]; then export PYTHONPATH="$PYTHONPATH:$sj"; else echo "python_test: $sj absent: the SpikingJelly tests skip"; fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
exec "$py" -W ignore::DeprecationWarning python/tests/run_all.py
