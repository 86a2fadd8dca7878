#!/usr/bin/env bash
# fidelity_real.sh - real runs against the simulator: 2 ranks x 1 thread
# under torchrun on this machine, a calibrated cluster, five models x every
# fast placer and auto (bench/fidelity_real.py says what is measured).
# Run it alone on the machine: the ranks share its cores.
# usage: bash bench/fidelity_real.sh [--models a,b] [--placers a,b] [--steps N]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${OPPLACE_PYTHON:-$here/.venv/bin/python}
[ -x "$py" ] || { echo "fidelity_real: $py missing: run scripts/setup-python.sh" >&2; exit 1; }
export OPPLACE=${OPPLACE:-$here/build/opplace}
exec "$py" "$here/bench/fidelity_real.py" "$@"
