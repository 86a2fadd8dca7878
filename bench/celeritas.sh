#!/usr/bin/env bash
# bench/celeritas.sh - Celeritas on the zoo (prints Markdown):
#   1. Table 2 of the paper: nodes and CCR before and after Optimal Operation
#      Fusion (opplace coarsen --algo celeritas, default R=200, M=M_dev/4);
#   2. simulated step time of celeritas, order-place, dfs-topo and every
#      other registered fast placer (not auto: its 10 s budget per run would
#      dominate), on 2 and 4 GPUs of each preset in PRESETS (default:
#      v100-pcie, the paper's testbed, and v100-nvlink), with --best-effort
#      so a placer that cannot fit the graph still reports a step (marked *);
#   3. per table, celeritas against min(m-topo, m-etf, m-sct) and expert,
#      ranked as the placers rank best-effort results: OOM-free first, then
#      the smaller overflow (GiB above capacity, summed over devices; shown
#      in brackets), then the step time;
#   4. placement time of celeritas on 36,000-op graphs (synthetic, and the
#      zoo Transformer with 29 layers);
#   5. the paper's own models at its settings (zoo --paper celeritas) on
#      4 x v100-pcie, every Baechi heuristic, expert and single beside it,
#      and celeritas --paper (the paper's Algorithm 2 alone).
# Sections 1-3 use the zoo's small settings (--size small) to stay quick.
# usage: [PRESETS="v100-pcie v100-nvlink"] bash bench/celeritas.sh [path/to/opplace] [models...]
set -euo pipefail
BIN=${1:-./build/opplace}
shift || true
MODELS=${*:-"rnnlm nmt gnmt transformer transformer_xl inception_v3 nasnet pnasnet amoebanet wavenet tensor_holography"}
PRESETS=${PRESETS:-"v100-pcie v100-nvlink"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ALGOS=$("$BIN" algos | awk '{print $1}' | grep -v -E '^(auto|sgdp|pesto|trinity|round-robin)$' | tr '\n' ' ')

num() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d['$1'])"; }

echo "### Table 2: nodes and CCR before and after fusion (R = 200, M = 8 GiB; 4 x v100-nvlink reference link)"
echo
echo "| model | nodes | CCR | nodes after | CCR after | fusion s |"
echo "|---|---:|---:|---:|---:|---:|"
for m in $MODELS; do
  "$BIN" zoo "$m" --size small -o "$TMP/$m.json"
  j=$("$BIN" coarsen "$TMP/$m.json" --algo celeritas --json)
  python3 - "$m" "$j" <<'PY'
import json, sys
d = json.loads(sys.argv[2])
print(f"| {sys.argv[1]} | {d['nodes_before']} | {d['ccr_before']:.3f} | {d['nodes_after']} | {d['ccr_after']:.3f} | {d['seconds']:.3f} |")
PY
done
echo
for preset in $PRESETS; do
  for gpus in 2 4; do
    : > "$TMP/rows.tsv"
    "$BIN" cluster --preset "$preset" --gpus "$gpus" -o "$TMP/cluster.json"
    for m in $MODELS; do
      for a in $ALGOS; do
        if out=$("$BIN" place "$TMP/$m.json" --algo "$a" --cluster "$TMP/cluster.json" --best-effort --json --quiet 2>/dev/null); then
          python3 - "$out" "$m" "$a" "$TMP/cluster.json" >> "$TMP/rows.tsv" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
cap = {x["name"]: x["memory_bytes"] for x in json.load(open(sys.argv[4]))["devices"]}
over = sum(max(0, b - cap[k]) for k, b in d["peak_memory_bytes"].items()) / 2**30
print("%s\t%s\t%.2f\t%d\t%.2f" % (sys.argv[2], sys.argv[3], d["step_time_us"] / 1e3, d["oom"], over))
PY
        else
          printf "%s\t%s\tfail\t0\t0\n" "$m" "$a" >> "$TMP/rows.tsv"
        fi
      done
    done
    python3 - "$TMP/rows.tsv" "$preset" "$gpus" "$ALGOS" <<'PY'
import math, sys
rows, preset, gpus, algos = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
t = {}
models = []
for line in open(rows):
    m, a, ms, oom, over = line.rstrip("\n").split("\t")
    if m not in models:
        models.append(m)
    t[m, a] = (float("inf") if ms == "fail" else float(ms), int(oom), float(over))
def cell(x):
    return "%.2f" % x[0] + (" * (+%.2f)" % x[2] if x[1] else "")
def show(x):
    return "%.2f ms" % x[0] + (" * +%.2f GiB" % x[2] if x[1] else "")
print(f"### Simulated step time (ms) on {gpus} x {preset}; * = out of memory (+GiB over capacity, summed)")
print()
print("| model | " + " | ".join(algos) + " |")
print("|---|" + "---:|" * len(algos))
for m in models:
    print(f"| {m} | " + " | ".join(cell(t[m, a]) for a in algos) + " |")
print()
key = lambda x: (x[1], x[2] if x[1] else 0, x[0])  # OOM-free first, then overflow, then step
lose_b, lose_e, log_e, both_fit = [], [], [], []
for m in models:
    c = t[m, "celeritas"]
    b = min((t[m, a] for a in ("m-topo", "m-etf", "m-sct")), key=key)
    if key(c) > key(b):
        lose_b.append(f"{m} ({show(c)} vs {show(b)})")
    e = t[m, "expert"]
    log_e.append(math.log(c[0] / e[0]))
    if not c[1] and not e[1]:
        both_fit.append(math.log(c[0] / e[0]))
    if key(c) > key(e):
        lose_e.append(f"{m} ({show(c)} vs {show(e)})")
gm = lambda v: math.exp(sum(v) / len(v)) if v else float("nan")
print(f"celeritas vs best Baechi heuristic: worse on {len(lose_b)} of {len(models)}"
      + (": " + ", ".join(lose_b) if lose_b else "") + ".  ")
print(f"celeritas vs expert: worse on {len(lose_e)} of {len(models)}"
      + (": " + ", ".join(lose_e) if lose_e else "")
      + f".  Geometric mean of celeritas / expert step time: {gm(log_e):.3f} over all"
      + f" {len(log_e)} models, {gm(both_fit):.3f} over the {len(both_fit)} where both fit.")
print()
PY
  done
done
echo "### Placement time (s) on large graphs (4 x v100-pcie)"
echo
echo "| graph | ops | celeritas s | order-place s |"
echo "|---|---:|---:|---:|"
"$BIN" zoo synthetic --ops 36000 -o "$TMP/s36k.json"
"$BIN" zoo transformer --layers 29 -o "$TMP/transformer29.json"
for g in s36k transformer29 transformer; do
  [ -f "$TMP/$g.json" ] || continue
  n=$("$BIN" info "$TMP/$g.json" | awk '/ops \/ edges/ {print $4}')
  c=$("$BIN" place "$TMP/$g.json" --algo celeritas --preset v100-pcie --gpus 4 --best-effort --json --quiet | num placement_seconds)
  o=$("$BIN" place "$TMP/$g.json" --algo order-place --preset v100-pcie --gpus 4 --best-effort --json --quiet | num placement_seconds)
  printf "| %s | %s | %.3f | %.3f |\n" "$g" "$n" "$c" "$o"
done
echo
echo "### At the paper's settings (section 6.1) on 4 x v100-pcie, without --best-effort (refused: exit 3)"
echo
echo "| graph | ops | single | expert | m-topo | m-etf | m-sct | celeritas --paper | celeritas | celeritas place s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
"$BIN" cluster --preset v100-pcie --gpus 4 -o "$TMP/pcie4.json"
"$BIN" zoo inception_v3 --paper celeritas -o "$TMP/p_inception_b512.json"
"$BIN" zoo nmt --paper celeritas --seq-len 40 -o "$TMP/p_nmt4x2048_b512_t40.json"
"$BIN" zoo nmt --paper celeritas -o "$TMP/p_nmt4x2048_b512_t75.json"
"$BIN" zoo transformer --paper celeritas -o "$TMP/p_transformer12_b256.json"
"$BIN" zoo tensor_holography --paper celeritas -o "$TMP/p_tensor_holography.json"
for g in p_inception_b512 p_nmt4x2048_b512_t40 p_nmt4x2048_b512_t75 p_transformer12_b256 p_tensor_holography; do
  n=$("$BIN" info "$TMP/$g.json" | awk '/ops \/ edges/ {print $4}')
  row="| ${g#p_} | $n |"
  for a in single expert m-topo m-etf m-sct "celeritas --paper" celeritas; do
    # shellcheck disable=SC2086 # "celeritas --paper": the algorithm and its flag
    if "$BIN" place "$TMP/$g.json" --algo $a --cluster "$TMP/pcie4.json" --json --quiet >"$TMP/r.json" 2>/dev/null; then
      v=$(python3 -c "import json; d=json.load(open('$TMP/r.json')); print('%.1f ms%s' % (d['step_time_us'] / 1e3, ' OOM' if d.get('oom') else ''))")
      [ "$a" = celeritas ] && s=$(python3 -c "import json; print('%.2f' % json.load(open('$TMP/r.json'))['placement_seconds'])")
    else
      v="refused"; [ "$a" = celeritas ] && s="-"
    fi
    row="$row $v |"
  done
  echo "$row $s |"
done
