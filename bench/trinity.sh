#!/usr/bin/env bash
# bench/trinity.sh - Trinity (papers/trinity.txt) against expert, SGDP and
# celeritas on the paper's models (Inception-V3, GNMT-2, NMT-2, NASNet,
# PNASNet) on 2 and 4 x v100-nvlink, in the columns of the paper's Table 4:
# simulated step time, peak communication (max over devices of bytes sent +
# received, formats.md 5 rule 3), peak memory (max over devices), and
# search time (wall seconds of the placer).  Prints Markdown.
#   trinity:      a fresh policy trained on the graph for $TRINITY_BUDGET s
#                 with the placer's defaults: reference placement expert,
#                 priors centred on it, 256 decision units, tolerances =
#                 the reference's peaks, result = fastest placement seen
#                 within them (src/learn/trinity_warm.c; beyond the paper);
#   trinity-none: the same budget with --heuristics none (no reference:
#                 METIS-centred priors, 8 GiB tolerances as in the paper);
#   sgdp:         SGDP-one, a fresh policy trained for $SGDP_BUDGET s.
# "target" is the issue's: trinity's step time below expert's with its peak
# communication and peak memory at most expert's (exact bytes).
# Total: 10 configurations x (2 x TRINITY_BUDGET + SGDP_BUDGET + set-up),
# about 20 min with the defaults (35 s each).  Every placer runs with
# --best-effort so an OOM placement still reports numbers (marked *).
# usage: bash bench/trinity.sh [path/to/opplace]
set -euo pipefail
BIN=${1:-./build/opplace}
TRINITY_BUDGET=${TRINITY_BUDGET:-35}
SGDP_BUDGET=${SGDP_BUDGET:-35}
SEED=${SEED:-1}
GPUS=${GPUS:-"2 4"}
MODELS=${MODELS:-"inception_v3 gnmt nmt nasnet pnasnet"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

zoo_args() {
  case $1 in
    gnmt|nmt) echo "--layers 2" ;;
    *) echo "" ;;
  esac
}

# place GRAPH GPUS ALGO [opts]: prints "step_ms peak_comm_MiB peak_mem_GiB seconds
# step_us:comm_bytes:mem_bytes" (the last field exact, for the comparisons)
place() {
  local g=$1 n=$2 a=$3; shift 3
  local t0 t1
  t0=$(date +%s.%N)
  if ! "$BIN" place "$g" --preset v100-nvlink --gpus "$n" --algo "$a" --seed "$SEED" \
        --best-effort --quiet --json -o "$TMP/p.json" "$@" > "$TMP/m.json" 2>/dev/null; then
    echo "fail - - - -"; return
  fi
  t1=$(date +%s.%N)
  python3 - "$g" "$TMP/p.json" "$TMP/m.json" "$t0" "$t1" <<'PY'
import json, sys
g = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2])); m = json.load(open(sys.argv[3]))
dev = p["device_of"]; out = {o["name"]: o.get("output_bytes", 0) for o in g["ops"]}
best = {}  # (src op, dst device) -> largest edge bytes (formats.md 5, rule 3)
for e in g["edges"]:
    s, d = e["src"], e["dst"]
    if dev[s] == dev[d]: continue
    b = e.get("bytes", out[s]); k = (s, dev[d])
    best[k] = max(best.get(k, 0), b)
load = {}
for (s, d), b in best.items():
    load[dev[s]] = load.get(dev[s], 0) + b; load[d] = load.get(d, 0) + b
comm = max(load.values()) if load else 0
mem = max(m["peak_memory_bytes"].values())
star = "*" if m.get("oom") else ""
print(f"{m['step_time_us']/1000:.2f}{star} {comm/2**20:.1f} {mem/2**30:.2f} {float(sys.argv[5])-float(sys.argv[4]):.1f} {m['step_time_us']!r}:{comm}:{mem}")
PY
}

echo "### Trinity vs expert, SGDP and celeritas (Table 4 columns), v100-nvlink"
echo
echo "Each cell: step time (ms) / peak communication (MiB) / peak memory (GiB) / search time (s)."
echo "trinity: fresh policy, ${TRINITY_BUDGET} s of PPO, placer defaults (reference expert, tolerances = its peaks);"
echo "trinity-none: the same with --heuristics none; sgdp: SGDP-one, ${SGDP_BUDGET} s; seed ${SEED}."
echo
echo "| model | ops | GPUs | expert | celeritas | sgdp | trinity | trinity-none | trinity vs expert (step, comm, mem) | target |"
echo "|---|---:|---:|---|---|---|---|---|---|---|"
for m in $MODELS; do
  g="$TMP/$m.json"
  "$BIN" zoo "$m" $(zoo_args "$m") -o "$g" >/dev/null
  ops=$("$BIN" info "$g" | awk '/^ops/ {print $4}')
  for n in $GPUS; do
    e=$(place "$g" "$n" expert)
    c=$(place "$g" "$n" celeritas)
    s=$(place "$g" "$n" sgdp --budget-seconds "$SGDP_BUDGET")
    t=$(place "$g" "$n" trinity --budget-seconds "$TRINITY_BUDGET")
    tt=$(place "$g" "$n" trinity --budget-seconds "$TRINITY_BUDGET" --heuristics none)
    cmp=$(python3 -c "
e = '$e'.split(); t = '$t'.split()
if 'fail' in (e[0], t[0]):
    print('- | -'); raise SystemExit
es, ec, em = map(float, e[4].split(':')); ts, tc, tm = map(float, t[4].split(':'))
w = lambda a, b: 'less' if a < b else 'more' if a > b else 'equal'
met = 'yes' if ts < es and tc <= ec and tm <= em else 'no'
print(f'{(ts / es - 1) * 100:+.2f}%, {w(tc, ec)}, {w(tm, em)} | {met}')")
    fmt() { echo "$1" | awk '{printf "%s / %s / %s / %s", $1, $2, $3, $4}'; }
    echo "| $m | $ops | $n | $(fmt "$e") | $(fmt "$c") | $(fmt "$s") | $(fmt "$t") | $(fmt "$tt") | $cmp |"
  done
done
