#!/usr/bin/env bash
# torch_export.sh - opplace.torch export (shapes on the meta device, roofline
# times of the v100 profile) of the export benchmark's model set, loaded by `opplace info`,
# then ONNX import of inception_v3 and resnet50 for comparison:
# ops, edges, colocation groups, export wall time and peak RSS, as Markdown.
# usage: bash bench/torch_export.sh [path/to/opplace]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
opplace=${1:-$here/build/opplace}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH=$here/python
py=/usr/bin/python3
echo "| model | parameters | ops | edges | colocation groups | export wall (s) | peak RSS (MiB) | command |"
echo "|---|---|---|---|---|---|---|---|"
run() {
  local name=$1; shift
  local log=$tmp/$name.log
  if ! /usr/bin/time -f "%e %M" -o "$tmp/$name.time" \
       $py -m opplace.torch export "$@" -o "$tmp/$name.json" 2>"$log"; then
    printf '| %s | FAILED: %s | | | | | | `%s` |\n' "$name" "$(tail -1 "$log")" "$*"
    return
  fi
  local info params
  info=$("$opplace" info "$tmp/$name.json" --json)
  params=$(sed -n 's/.*built [^:]*:[^:]*: \([0-9.e+]*\) parameters.*/\1/p' "$log")
  read -r wall rss < "$tmp/$name.time"
  printf '| %s | %s | %s | %s | %s | %s | %d | `python3 -m opplace.torch export %s` |\n' "$name" "$params" \
    "$(echo "$info" | sed 's/.*"ops": \([0-9]*\).*/\1/')" \
    "$(echo "$info" | sed 's/.*"edges": \([0-9]*\).*/\1/')" \
    "$(echo "$info" | sed 's/.*"colocation_groups": \([0-9]*\).*/\1/')" \
    "$wall" "$((rss / 1024))" "$*"
}
run vit_b_16 torchvision.models:vit_b_16 --input 32x3x224x224 --loss cross_entropy
run swin_t torchvision.models:swin_t --input 32x3x224x224 --loss cross_entropy
run resnet50 torchvision.models:resnet50 --input 32x3x224x224 --loss cross_entropy
run inception_v3 torchvision.models:inception_v3 --input 32x3x299x299
run nn.Transformer opplace.torch.examples:transformer --input 32x32x512 --input 32x32x512 --loss mse
run lstm_seq2seq opplace.torch.examples:seq2seq --input 64x40:int64 --input 64x40:int64 --loss cross_entropy
run gpt2_small opplace.torch.examples:gpt --input 8x1024:int64 --loss cross_entropy
run gpt_10b opplace.torch.examples:gpt_10b --input 8x2048:int64 --loss cross_entropy

# ONNX import of two of the models (real torch.onnx.export on the CPU: minutes and GBs) (torch.onnx.export, then shape inference when python3-onnx exists)
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
