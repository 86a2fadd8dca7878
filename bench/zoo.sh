#!/usr/bin/env bash
# bench/zoo.sh - the model zoo at the papers' settings (prints Markdown).
#
# For each setting a paper used: ops, edges, CCR (Celeritas eq. 1 on the
# 4 x v100-nvlink reference link), total compute, critical path, memory
# (parameters with Adam state, and the sum of all op outputs), and the
# generation time, next to the op counts the papers report.  Graphs are
# generated into a temporary directory and deleted.
# usage: bash bench/zoo.sh [path/to/opplace]
set -euo pipefail
BIN=${1:-./build/opplace}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# label | zoo arguments | ops reported by the papers
# Without --paper a model is built at its first paper's settings (src/zoo/papers.c);
# the papers do not give the RNNs' unrolled lengths: papers.c picks the --seq-len
# that brings our counts nearest the papers'.
SETTINGS=(
  "Inception-V3 b512 (default)|inception_v3|6,332 (Celeritas)"
  "Inception-V3 b64|inception_v3 --paper sgdp|24,713 (SGDP)"
  "Inception-V3 b64|inception_v3 --paper trinity|12,745 (Trinity)"
  "RNNLM 2x2048 b64 (default)|rnnlm|9,021 (SGDP)"
  "RNNLM 4x2048 b64|rnnlm --layers 4|-"
  "RNNLM 8x2048 b64|rnnlm --layers 8|>50,000 (SGDP)"
  "RNNLM 2x2048 b128|rnnlm --paper pesto|4,614 (Pesto)"
  "NMT 4x2048 b512 (default)|nmt|25,463 (Celeritas)"
  "NMT 2x1024 b128|nmt --paper pesto|30,060 (Pesto)"
  "NMT 2x1024 b64|nmt --paper trinity|16,432 (Trinity)"
  "GNMT 2 layers b64 (default)|gnmt|28,044 (SGDP)"
  "GNMT 4 layers b64|gnmt --layers 4|46,600 (SGDP)"
  "GNMT 8 layers b64|gnmt --layers 8|83,712 (SGDP)"
  "GNMT 2 layers b64|gnmt --paper trinity|8,738 (Trinity)"
  "Transformer 12x2048, 16 heads, b256 (default)|transformer|36,352 (Celeritas)"
  "Transformer 6x2048, 16 heads, b32|transformer --paper pesto|19,393 (Pesto)"
  "Transformer 10x1024, 8 heads, b32|transformer --layers 10 --hidden 1024 --heads 8 --batch 32|- (Pesto)"
  "Transformer-XL 2 layers (default)|transformer_xl|2,618 (SGDP)"
  "Transformer-XL 4 layers|transformer_xl --layers 4|-"
  "Transformer-XL 8 layers|transformer_xl --layers 8|-"
  "NASNet 6@168 b32 (Large, default)|nasnet|18,644 (Trinity)"
  "NASNet 4@212 b32|nasnet --paper pesto|16,901 (Pesto)"
  "PNASNet 4@216 b8 (Large, default)|pnasnet|14,063 (Trinity)"
  "AmoebaNet b64 (default)|amoebanet|9,430 (SGDP)"
  "WaveNet 2 stacks x 9 (default)|wavenet|- (SGDP)"
  "WaveNet 4 stacks x 9|wavenet --stacks 4|- (SGDP)"
  "WaveNet 5 stacks x 9|wavenet --stacks 5|4,374 (SGDP)"
  "WaveNet 10 stacks x 9|wavenet --stacks 10|8,516 (SGDP)"
  "Tensor Holography 30x24 b32 (default)|tensor_holography|3,810 (Celeritas)"
  "GNMT 2 layers b64, small (the default run)|gnmt --size small|-"
)

echo "| setting | command | ops | edges | CCR | compute | critical path | params+Adam | all outputs | gen s | papers' ops |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for s in "${SETTINGS[@]}"; do
  IFS='|' read -r label args paper <<<"$s"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$BIN" zoo $args -o "$TMP/g.json"
  t1=$(date +%s.%N)
  "$BIN" info "$TMP/g.json" --json >"$TMP/info.json"
  python3 - "$label" "$args" "$paper" "$t0" "$t1" "$TMP/info.json" <<'PY'
import json, sys
label, args, paper, t0, t1, path = sys.argv[1:]
d = json.load(open(path))
gib = 1024 ** 3
print(f"| {label} | `{args}` | {d['ops']:,} | {d['edges']:,} | {d['ccr']:.2f} "
      f"| {d['total_compute_us'] / 1e3:,.1f} ms | {d['critical_path_us'] / 1e3:,.1f} ms "
      f"| {d['param_bytes'] / gib:.2f} GiB | {d['output_bytes'] / gib:,.1f} GiB "
      f"| {float(t1) - float(t0):.2f} | {paper} |")
PY
done
