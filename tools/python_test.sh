#!/usr/bin/env bash
# python_test.sh - the Python bridge's tests (python/tests) on Debian's torch, against the
# optimised remat binary: bash tools/python_test.sh [REMAT_BIN]. test.sh runs it right after
# the optimised build. SpikingJelly comes from ../shared/third_party/spikingjelly (tests
# that need it skip, with the reason, where it is absent).
set -uo pipefail
cd "$(dirname "$0")/.."
remat_bin="${1:-bazel-bin/tools/remat}"
[ -x "$remat_bin" ] || bazel build //tools:remat || exit 1
. tests/torch_env.sh
torch_env_python python_test || exit 1
torch_env_shared python_test   # SpikingJelly: a test dependency, not part of the project
export REMAT_BIN="$PWD/$remat_bin"
export PYTHONPATH="$PWD/python:$PWD/python/tests${PYTHONPATH:+:$PYTHONPATH}${sj:+:$sj}"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
exec "$py" -W ignore::DeprecationWarning python/tests/run_all.py
