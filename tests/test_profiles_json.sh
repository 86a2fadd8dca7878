#!/usr/bin/env bash
# test_profiles_json.sh OPPLACE DATA_DIR - the device profiles shipped with the
# Python package (python/opplace/torch/profiles.json) are exactly what
# `opplace cluster --profiles` prints from the C table (src/cost/profiles.c).
set -euo pipefail
opplace=$1
root=$(cd "$(dirname "$0")/.." && pwd)
json="$root/python/opplace/torch/profiles.json"
if ! diff -u "$json" <("$opplace" cluster --profiles); then
  echo "FAIL: $json differs from 'opplace cluster --profiles' (src/cost/profiles.c changed?);"
  echo "      regenerate it: ./build/opplace cluster --profiles > python/opplace/torch/profiles.json"
  exit 1
fi
echo "ok: profiles.json matches opplace cluster --profiles"
