#!/usr/bin/env bash
# First command of the README: install dependencies (Debian packages, and the
# Python venv of scripts/setup-python.sh), build, and run opplace
# on its built-in default (no input files needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/setup-python.sh   # .venv: PyTorch 2.x for the Python tests (quick when done)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j"$(nproc)" --target opplace
./build/opplace "$@"
