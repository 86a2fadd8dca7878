#!/usr/bin/env bash
# bench/celeritas.sh - Celeritas on the zoo (prints Markdown):
#   1. Table 2 of the paper: nodes and CCR before and after Optimal Operation
#      Fusion (opplace coarsen --method celeritas, default R=200, M=M_dev/4);
#   2. simulated step time of celeritas, order-place, dfs-topo and every
#      other registered fast placer, on 2 and 4 x v100-nvlink (--best-effort,
#      so a placer that cannot fit the graph still reports a step, marked OOM);
#   3. placement time of celeritas on a 36,000-op graph.
# usage: bash bench/celeritas.sh [path/to/opplace] [models...]
set -euo pipefail
BIN=${1:-./build/opplace}
shift || true
MODELS=${*:-"rnnlm nmt gnmt transformer transformer_xl"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ALGOS=$("$BIN" algos | awk '{print $1}' | grep -v -E '^(sgdp|pesto|trinity|round-robin)$' | tr '\n' ' ')

num() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d['$1'])"; }

echo "### Table 2: nodes and CCR before and after fusion (4 x v100-nvlink reference link)"
echo
echo "| model | nodes | CCR | nodes after | CCR after | fusion s |"
echo "|---|---:|---:|---:|---:|---:|"
for m in $MODELS; do
  "$BIN" zoo "$m" -o "$TMP/$m.json"
  j=$("$BIN" coarsen "$TMP/$m.json" --method celeritas --json)
  python3 - "$m" "$j" <<'PY'
import json, sys
d = json.loads(sys.argv[2])
print(f"| {sys.argv[1]} | {d['nodes_before']} | {d['ccr_before']:.3f} | {d['nodes_after']} | {d['ccr_after']:.3f} | {d['seconds']:.3f} |")
PY
done
echo
for gpus in 2 4; do
  echo "### Simulated step time (ms) on $gpus x v100-nvlink; * = out of memory"
  echo
  printf "| model |"; for a in $ALGOS; do printf " %s |" "$a"; done; echo
  printf "|---|"; for a in $ALGOS; do printf -- "---:|"; done; echo
  for m in $MODELS; do
    printf "| %s |" "$m"
    for a in $ALGOS; do
      if out=$("$BIN" place "$TMP/$m.json" --algo "$a" --gpus "$gpus" --best-effort --json --quiet 2>/dev/null); then
        python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(' %.2f%s |' % (d['step_time_us']/1e3, '*' if d['oom'] else ''), end='')" "$out"
      else
        printf " fail |"
      fi
    done
    echo
  done
  echo
done
echo "### Placement time (s) of celeritas on large graphs (4 x v100-nvlink)"
echo
echo "| graph | ops | celeritas s | order-place s |"
echo "|---|---:|---:|---:|"
"$BIN" zoo synthetic --ops 36000 -o "$TMP/s36k.json"
for g in s36k transformer; do
  [ -f "$TMP/$g.json" ] || continue
  n=$("$BIN" info "$TMP/$g.json" | awk '/ops \/ edges/ {print $4}')
  c=$("$BIN" place "$TMP/$g.json" --algo celeritas --best-effort --json --quiet | num placement_seconds)
  o=$("$BIN" place "$TMP/$g.json" --algo order-place --best-effort --json --quiet | num placement_seconds)
  printf "| %s | %s | %.3f | %.3f |\n" "$g" "$n" "$c" "$o"
done
