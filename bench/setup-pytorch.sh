#!/usr/bin/env bash
# bench/setup-pytorch.sh - install what the PyTorch comparison (bench/pytorch/) needs:
# Debian's python3-torch (1.13 on Debian 12). Idempotent: does nothing when torch imports.
# Only the benchmark's own set-up installs it; setup.sh never does.
set -euo pipefail
# Debian's package installs into Debian's interpreter; another python3 earlier on PATH
# (pyenv, a virtual environment) would not see it, so the benchmarks call /usr/bin/python3.
PY=/usr/bin/python3
if "$PY" -c 'import torch' >/dev/null 2>&1; then
    "$PY" -c 'import torch; print("bench/setup-pytorch.sh: torch", torch.__version__, "already installed")'
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends python3-torch python3-numpy; then
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends python3-torch python3-numpy
fi
"$PY" -c 'import torch; print("bench/setup-pytorch.sh: torch", torch.__version__, "installed")'
