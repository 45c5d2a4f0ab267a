# torch_env.sh - sourced (not run) by the shell tests of the Python bridge on Debian's torch:
# tools/python_test.sh, tests/torch_record_test.sh, tests/torch_formula_test.sh. Source it
# from the repository root (or Bazel's runfiles root, where it is a link into the tree):
#
#   . tests/torch_env.sh
#   torch_env_python NAME || exit 1   # $py: the first of /usr/bin/python3, python3 that
#                                     # imports torch and h5py; else one FAIL line (setup.sh
#                                     # installs python3-torch and python3-h5py: CI has them)
#   torch_env_shared NAME             # $sj: ../shared/third_party/spikingjelly next to the
#                                     # repository, or empty after one visible SKIP line
#
# ../shared is found from this file's real path (Bazel's runfiles link back into the tree),
# or is $REMAT_SHARED when set; where it exists, $REMAT_SHARED is exported as its absolute
# path, for the Python tests' own fixtures (python/tests/test_record_cuda.py).

torch_env_python() {
  py=""
  local c
  for c in /usr/bin/python3 python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c "import torch, h5py" 2>/dev/null; then py="$c"; return 0; fi
  done
  echo "$1: FAIL: neither /usr/bin/python3 nor python3 imports torch and h5py (setup.sh installs python3-torch, python3-h5py)" >&2
  return 1
}

torch_env_shared() {
  local here shared
  here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
  shared="${REMAT_SHARED:-$here/../../shared}"
  sj=""
  if [ -d "$shared" ]; then
    REMAT_SHARED="$(cd "$shared" && pwd)"
    export REMAT_SHARED
  fi
  if [ -d "$shared/third_party/spikingjelly/spikingjelly" ]; then
    sj="$REMAT_SHARED/third_party/spikingjelly"
  else
    echo "$1: SKIP (visible): ../shared/third_party/spikingjelly is absent next to the repository: the SpikingJelly tests skip"
  fi
}
