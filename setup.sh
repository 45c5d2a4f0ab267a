#!/usr/bin/env bash
# setup.sh - installs every Debian package remat needs (idempotent), then builds.
# Run as root on a fresh Debian 12 machine:   bash setup.sh
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  bazel-bootstrap    # Bazel 4.2.3, the build (offline: see third_party/ and WORKSPACE)
  build-essential    # gcc, g++
  libhdf5-dev        # traces, dumps, predictions
  hdf5-tools         # h5dump, for looking into them
  libgtest-dev       # GoogleTest
  libcjson-dev       # model and plan files
  gnuplot-nox        # plots (pngcairo, svg)
  libopenblas-dev    # benchmarks only: the GEMM we compare against
  libsimde-dev       # tests only: the AVX-512 GEMM kernel on portable intrinsics
  clang              # fuzzers (libFuzzer)
  libclang-rt-14-dev # sanitizer and fuzzer runtimes for clang
  python3-torch      # the Python bridge (python/remat_torch) and its tests
  python3-torchvision # SpikingJelly's models import it (tests)
  python3-h5py       # the bridge's weights and dumps
  openmpi-bin        # mpirun, for data-parallel steps (bazel build --config=mpi; docs/mpi.md)
  libopenmpi-dev     # MPI headers and library for --config=mpi
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: packages missing and not root: run 'apt-get install ${missing[*]}' as root" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "setup: packages present; building remat" >&2
bazel build //tools:remat >&2
echo "setup: done; ./remat --help lists the commands" >&2
