#!/usr/bin/env bash
# scripts/setup-python.sh - the Python environment the opplace.torch tests run
# on PyTorch 2.x: a virtual environment at <repo>/.venv with the pinned set of
# python/requirements-torch2.txt, then python/requirements-torch2-nodeps.txt
# (torchaudio, with --no-deps), then this package (pip install -e ./python).
#
# Quick when already done: a stamp file in the venv holds the hash of the
# requirement files, pyproject.toml and this script; while it matches, nothing
# is installed.  When one of them changes, the pins are installed over the
# existing venv (a broken venv is made anew).
#
# Environment:
#   OPPLACE_VENV=DIR          where the venv goes (default <repo>/.venv)
#   OPPLACE_VENV_PYTHON=PY    the Python that creates it (default python3)
#   OPPLACE_SKIP_VENV=1       do nothing: the tests then run on /usr/bin/python3
#                             (Debian's torch 1.13) only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${OPPLACE_VENV:-$root/.venv}
base=${OPPLACE_VENV_PYTHON:-python3}
req=$root/python/requirements-torch2.txt
nodeps=$root/python/requirements-torch2-nodeps.txt
stamp=$venv/.opplace-setup-stamp

say() { echo "setup-python: $*"; }
die() { echo "setup-python: ERROR: $*" >&2; exit 1; }

if [ "${OPPLACE_SKIP_VENV:-0}" = 1 ]; then
  say "OPPLACE_SKIP_VENV=1: no venv; the Python tests run on /usr/bin/python3 only"
  exit 0
fi
for f in "$req" "$nodeps" "$root/python/pyproject.toml"; do
  [ -f "$f" ] || die "$f is missing (is this an opplace checkout?)"
done
hash=$(cat "$req" "$nodeps" "$root/python/pyproject.toml" "$0" | sha256sum | cut -d' ' -f1)

py=$venv/bin/python
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] && "$py" -c '' 2>/dev/null; then
  say "$venv is up to date (stamp $(cut -c1-12 "$stamp")); nothing to do"
  exit 0
fi

start=$(date +%s)
if [ -e "$venv" ] && ! "$py" -c 'import sys; assert sys.prefix != sys.base_prefix' 2>/dev/null; then
  say "$venv exists but its Python does not run (moved, or its base Python changed): making it anew"
  rm -rf "$venv"
fi
if [ ! -e "$venv" ]; then
  command -v "$base" > /dev/null ||
    die "'$base' not found: install Python 3 (Debian: python3 python3-venv, see scripts/debian-packages.txt) or set OPPLACE_VENV_PYTHON"
  say "creating $venv with $("$base" --version 2>&1) ($(command -v "$base"))"
  "$base" -m venv "$venv" ||
    die "'$base -m venv $venv' failed; on Debian install python3-venv (scripts/install-deps.sh does)"
fi
"$py" -m pip --version > /dev/null 2>&1 ||
  die "$venv has no pip ('$py -m pip' fails); remove $venv and run this again"

pip=("$py" -m pip install --disable-pip-version-check --progress-bar off)
say "installing the pins of python/requirements-torch2.txt (torch, torchvision, timm, transformers; several GB on a first run)"
"${pip[@]}" -q -r "$req" ||
  die "pip could not install python/requirements-torch2.txt (see pip's message above; it needs PyPI or the wheels on this machine's disk)"
say "installing python/requirements-torch2-nodeps.txt with --no-deps (torchaudio)"
"${pip[@]}" -q --no-deps -r "$nodeps" ||
  die "pip could not install python/requirements-torch2-nodeps.txt"
say "installing the opplace package (pip install -e ./python)"
"${pip[@]}" -q --no-deps --no-build-isolation -e "$root/python" ||
  die "pip install -e $root/python failed"

versions=$("$py" -c '
import torch, torchvision, torchaudio, timm, transformers, opplace.torch._profiles as p
p.profile("v100")
print("torch %s, torchvision %s, torchaudio %s, timm %s, transformers %s" % (torch.__version__,
      torchvision.__version__, torchaudio.__version__, timm.__version__, transformers.__version__))
') || die "the venv's packages do not import (see the traceback above)"
echo "$hash" > "$stamp"
say "done in $(( $(date +%s) - start )) s: $venv has $versions and opplace (editable)"
