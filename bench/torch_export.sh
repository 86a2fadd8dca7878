#!/usr/bin/env bash
# torch_export.sh - PyTorch export (tools/export_torch.py) and ONNX import
# sizes and times, as the Markdown table of bench/RESULTS.md
# ("PyTorch export and ONNX import").
# usage: bash bench/torch_export.sh [path/to/opplace]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
opplace=${1:-$here/build/opplace}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
echo "| model | command | ops | edges | layers | colocation groups | export time (s) |"
echo "|---|---|---|---|---|---|---|"
run() {
  local name=$1; shift
  local cmd="tools/export_torch.py $*"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$here" && $py tools/export_torch.py "$@" -o "$tmp/$name.json" 2>/dev/null)
  t1=$(date +%s.%N)
  local info
  info=$("$opplace" info "$tmp/$name.json" --json)
  printf '| %s | `%s` | %s | %s | %s | %s | %.1f |\n' "$name" "$cmd" \
    "$(echo "$info" | sed 's/.*"ops": \([0-9]*\).*/\1/')" \
    "$(echo "$info" | sed 's/.*"edges": \([0-9]*\).*/\1/')" \
    "$(echo "$info" | sed 's/.*"layers": \([0-9]*\).*/\1/')" \
    "$(echo "$info" | sed 's/.*"colocation_groups": \([0-9]*\).*/\1/')" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')"
}
run inception_v3 inception_v3 --batch 32 --estimate v100
run resnet50 resnet50 --batch 32 --estimate v100
run transformer transformer --batch 32 --seq-len 32 --estimate v100
run resnet50_cpu resnet50 --batch 8 --measure --repeat 3
# ONNX import of the same models (torch.onnx.export, then shape inference when python3-onnx exists)
echo
echo "| ONNX model | ops | edges | import time (s) |"
echo "|---|---|---|---|"
for m in inception_v3 resnet50; do
  $py - "$m" "$tmp/$m.onnx" <<'PY' 2>/dev/null
import sys, torch, torchvision
name, path = sys.argv[1], sys.argv[2]
kw = {"weights": None}
size = 224
if name == "inception_v3":
    kw.update(aux_logits=False, init_weights=False); size = 299
m = getattr(torchvision.models, name)(**kw).eval()
torch.onnx.export(m, torch.randn(32, 3, size, size), path, opset_version=13)
try:
    import onnx
    onnx.save(onnx.shape_inference.infer_shapes(onnx.load(path)), path)
except ImportError:
    pass
PY
  t0=$(date +%s.%N)
  "$opplace" import "$tmp/$m.onnx" -o "$tmp/$m.onnx.json" 2>/dev/null
  t1=$(date +%s.%N)
  info=$("$opplace" info "$tmp/$m.onnx.json" --json)
  printf '| %s (batch 32) | %s | %s | %.2f |\n' "$m" \
    "$(echo "$info" | sed 's/.*"ops": \([0-9]*\).*/\1/')" \
    "$(echo "$info" | sed 's/.*"edges": \([0-9]*\).*/\1/')" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')"
done
