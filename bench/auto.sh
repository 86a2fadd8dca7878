#!/usr/bin/env bash
# auto vs every fast placer on the zoo: `opplace bench` with the
# fast portfolio, then, per setting, auto's step time next to the best
# individual placer's (placements that fit in memory rank first).
# Usage: bash bench/auto.sh [BUILD_DIR] [PRESET] [GPUS]   (~5 min)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
preset=${2:-v100-pcie}
gpus=${3:-2,4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the zoo at its small settings (--size small): the papers' scale would take far longer
"$build/opplace" bench --models rnnlm:size=small,nmt:size=small,gnmt:size=small,transformer:size=small,transformer_xl:size=small,inception_v3:size=small,nasnet:size=small,pnasnet:size=small,amoebanet:size=small,wavenet:size=small,tensor_holography:size=small --gpus "$gpus" --preset "$preset" --algo fast \
  -o "$tmp/b.csv" > /dev/null 2> "$tmp/progress.txt"
echo "| model | GPUs | auto ms | auto fits | best other | its ms | it fits | auto / best |"
echo "|---|---|---|---|---|---|---|---|"
python3 - "$tmp/b.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
settings = {}
for r in rows:
    settings.setdefault((r["model"], r["devices"]), []).append(r)
better = ties = worse = 0
for (model, dev), rs in settings.items():
    a = next((r for r in rs if r["algorithm"] == "auto" and r["ok"] == "1"), None)
    others = [r for r in rs if r["algorithm"] != "auto" and r["ok"] == "1"]
    if not a or not others:
        continue
    key = lambda r: (int(r["oom"]), float(r["step_time_us"]))
    b = min(others, key=key)
    ratio = float(a["step_time_us"]) / float(b["step_time_us"])
    if key(a) < key(b) and ratio < 0.999: better += 1
    elif ratio <= 1.001 and key(a) <= key(b): ties += 1
    else: worse += 1
    print(f"| {model} | {dev} | {float(a['step_time_us'])/1000:.2f} | {'no' if a['oom']=='1' else 'yes'} "
          f"| {b['algorithm']} | {float(b['step_time_us'])/1000:.2f} | {'no' if b['oom']=='1' else 'yes'} | {ratio:.3f} |")
print()
print(f"auto better than the best fast placer in {better} settings, equal in {ties}, worse in {worse}.")
PY
