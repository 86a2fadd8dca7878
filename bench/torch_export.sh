#!/usr/bin/env bash
# torch_export.sh - opplace.torch export (shapes on the meta device, roofline
# times of the v100 profile) of the issue-17 model set, loaded by `opplace info`:
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
