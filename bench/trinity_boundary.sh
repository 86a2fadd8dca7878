#!/usr/bin/env bash
# bench/trinity_boundary.sh - the layer-boundary neighbourhood of expert's
# placement (src/placers/trinity/trinity_boundary.c): is there an admissible
# placement (peak communication and peak memory at most expert's, no more
# out of memory) faster than expert + order?  For each model and GPU count
# it runs Trinity with its boundary moves (--order-search all, 4 chunks per
# layer scope) and $TRINITY_ITERATIONS PPO
# iterations (the boundary search does not depend on them: it starts from
# the reference), and prints the search's own account: candidates judged,
# how many are within expert's peak communication, how many are
# admissible, the reference + order, the best admissible candidate and its
# gap, and what the final choice returned.  (The column "faster at any
# peaks" needed a diagnostic option that is gone; it prints "-".)  Prints
# Markdown.
# usage: bash bench/trinity_boundary.sh [path/to/opplace]
set -euo pipefail
BIN=${1:-./build/opplace}
EXTRA=${EXTRA:-}  # more trinity options
TRINITY_ITERATIONS=${TRINITY_ITERATIONS:-1}
SEED=${SEED:-1}
GPUS=${GPUS:-"2 4"}
MODELS=${MODELS:-"gnmt nmt nasnet pnasnet inception_v3"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

zoo_args() {
  case $1 in
    gnmt|nmt) echo "--layers 2" ;;
    *) echo "" ;;
  esac
}

echo "### Layer-boundary moves around expert (--order-search all: 4 chunks per layer scope, $TRINITY_ITERATIONS PPO iterations, seed $SEED)"
echo
echo "| model | GPUs | blocks | candidates (single / swap / pair; rounds) | within expert's comm | admissible | reference + order (ms) | best admissible (ms) | gap | fastest within comm, any memory (ms) | faster at any peaks: count; least comm (x expert's), step | result | search s |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|"
for m in $MODELS; do
  g="$TMP/$m.json"
  "$BIN" zoo "$m" --size small $(zoo_args "$m") -o "$g" >/dev/null
  for n in $GPUS; do
    "$BIN" place "$g" --preset v100-nvlink --gpus "$n" --algo trinity --seed "$SEED" \
      --iterations "$TRINITY_ITERATIONS" --order-search all $EXTRA --best-effort --progress \
      -o "$TMP/p.json" > /dev/null 2> "$TMP/err" || { echo "| $m | $n | fail |"; continue; }
    python3 - "$m" "$n" "$TMP/err" <<'PY'
import re, sys
m, n, path = sys.argv[1:4]
text = open(path).read()
b = re.search(r"boundary moves \(\d+ chunks per layer, (\d+) rounds\): (\d+) blocks, (\d+) candidates \((\d+) single, (\d+) swaps, (\d+) pairs\), (\d+) within the communication bound, (\d+) admissible, (\d+) faster than the reference \+ order \(([\d.inf]+) ms\); best admissible (\w+) ([\d.inf]+) ms; fastest within the communication bound ([\d.inf]+) ms; ([\d.]+) s", text)
fc = re.search(r"final choice among \d+ placements \(.*?\): (.*?) placement .*?: ([\d.]+) ms", text)
if not b:
    print(f"| {m} | {n} | no boundary line |"); raise SystemExit
rounds, blocks, cand, si, sw, pa, cok, adm, fast, ref, what, best, fany, secs = b.groups()
gap = f"{(float(best) / float(ref) - 1) * 100:+.2f}%" if best != "inf" and ref != "inf" else "-"
res = f"{fc.group(1)}, {fc.group(2)}" if fc else "?"
a = re.search(r"at any peaks: (\d+)(?:; the least communication among them ([\d.]+) MiB \(([\d.]+)x the bound\), ([\d.]+) ms)?", text)
anyp = "-" if not a else a.group(1) if not a.group(2) else f"{a.group(1)}; {a.group(2)} MiB ({a.group(3)}x), {a.group(4)} ms"
print(f"| {m} | {n} | {blocks} | {cand} ({si} / {sw} / {pa}; {rounds} rounds) | {cok} | {adm} | {ref} | {best} ({what}) | {gap} | {fany} | {anyp} | {res} | {secs} |")
PY
  done
done
