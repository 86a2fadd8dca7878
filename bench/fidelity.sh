#!/usr/bin/env bash
# fidelity.sh - measured vs simulated training step on this CPU.
# Each model is exported with per-op times measured on the CPU (one thread),
# placed with `single` on a cluster whose only device that can run it is
# cpu:0, applied with opplace.torch.apply and run for real (median of the
# timed steps, Adam); the simulated step is `opplace simulate` of the same
# graph, cluster and placement.
# usage: bash bench/fidelity.sh [path/to/opplace]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
opplace=${1:-$here/build/opplace}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH=$here/python:$here/tests/python OPPLACE=$opplace OMP_NUM_THREADS=1
py=/usr/bin/python3
"$opplace" cluster --preset v100-nvlink --gpus 1 --cpu -o "$tmp/c.json"
echo "| model | ops | simulated step (us) | measured step (us) | measured / simulated | forward: graph / measured (us) | backward: graph / measured | updates: graph / measured | command |"
echo "|---|---|---|---|---|---|---|---|---|"
run() {
  local name=$1; shift
  $py -m opplace.torch export "$@" --times measure --clock cpu --repeat 5 -o "$tmp/$name.json" 2>/dev/null
  "$opplace" place "$tmp/$name.json" --cluster "$tmp/c.json" --algo single -o "$tmp/$name.p.json" --quiet >/dev/null
  local r ops
  r=$($py -m opplace.torch measure "$@" --graph "$tmp/$name.json" --placement "$tmp/$name.p.json" \
      --cluster "$tmp/c.json" --steps 7 --warmup 2 --clock cpu 2>/dev/null)
  ops=$($py -c "import json,sys; print(len(json.load(open(sys.argv[1]))['ops']))" "$tmp/$name.json")
  $py - "$r" "$name" "$ops" "$*" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
g, m = r["graph_phase_us"], r["measured_phase_us"]
ph = " | ".join("%.0f / %.0f" % (g[k], m[k]) for k in ("forward", "backward", "update"))
print("| %s | %s | %.0f | %.0f | %.2f | %s | `%s` |" % (sys.argv[2], sys.argv[3],
      r["simulated_step_us"], r["measured_step_us"], r["ratio"], ph, sys.argv[4]))
PY
}
run resnet18_b8 torchvision.models:resnet18 --input 8x3x112x112 --loss cross_entropy
run roundtrip roundtrip_model:RoundTrip --input 8x16:int64 --input 8x3x32x32
run seq2seq opplace.torch.examples:seq2seq --input 16x20:int64 --input 16x20:int64 --kwargs '{"vocab": 2000, "dim": 128}' --loss cross_entropy
run gpt_mini opplace.torch.examples:gpt --input 4x64:int64 --kwargs '{"layers": 2, "d_model": 128, "heads": 4, "vocab": 2000, "seq": 64}' --loss cross_entropy
