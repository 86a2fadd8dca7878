#!/usr/bin/env bash
# bench/trinity.sh - Trinity (papers/trinity.txt) against expert, expert
# with a priority execution order, and (FULL=1) SGDP and celeritas on the
# paper's models (Inception-V3, GNMT-2, NMT-2, NASNet, PNASNet) on 2 and
# 4 x v100-nvlink, in the columns of the paper's Table 4: simulated step
# time, peak communication (max over devices of bytes sent + received,
# formats.md 5 rule 3), peak memory (max over devices), and search time
# (wall seconds of the placer).  Prints Markdown.
#   expert:         the expert placer, first-ready-first (FIFO) execution;
#   expert + order: `--algo expert --order peak` (opplace/search.h): expert's
#                   placement with the fastest priority list-schedule order
#                   that keeps its peak memory (the same list schedules
#                   Trinity's final choice tries);
#   trinity:        a fresh policy trained on the graph for $TRINITY_ITERATIONS
#                   PPO iterations (fixed, so the numbers do not depend on the
#                   load; TRINITY_ITERATIONS=0 uses $TRINITY_BUDGET seconds)
#                   with the placer's defaults: reference expert, tolerances =
#                   its peaks, rollouts judged by a list schedule
#                   (--order-search all), final choice over the search's pool
#                   and the reference with every order (src/placers/trinity/trinity.c);
#   FULL=1 adds: celeritas; sgdp (SGDP-one, $SGDP_BUDGET s); trinity-none
#                   (the same as trinity --paper).
# "target" is the issue's: trinity's step time below expert's with its peak
# communication and peak memory at most expert's (exact bytes).  "learnt
# beats expert + order": trinity's step below expert + order's with both
# peaks at most expert's, AND trinity's placement (device_of) is not
# expert's.  "placement" says whose device_of trinity returned: expert's, a
# learnt one (the search's pool) or a layer-boundary move around expert's
# (--order-search all, src/placers/trinity/trinity_boundary.c; its final choice says so).
# Every placer runs with --best-effort so an OOM placement still reports
# numbers (marked *).
# usage: bash bench/trinity.sh [path/to/opplace]
set -euo pipefail
BIN=${1:-./build/opplace}
TRINITY_ITERATIONS=${TRINITY_ITERATIONS:-40}
TRINITY_BUDGET=${TRINITY_BUDGET:-35}
SGDP_BUDGET=${SGDP_BUDGET:-35}
SEED=${SEED:-1}
FULL=${FULL:-0}
TRINITY_ARGS=${TRINITY_ARGS:-}  # extra trinity options, e.g. "--order-search final"
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

if [ "$TRINITY_ITERATIONS" -gt 0 ]; then
  TRINITY_STOP=(--iterations "$TRINITY_ITERATIONS")
  TRINITY_SAYS="${TRINITY_ITERATIONS} PPO iterations"
else
  TRINITY_STOP=(--budget-seconds "$TRINITY_BUDGET")
  TRINITY_SAYS="${TRINITY_BUDGET} s of PPO"
fi

# place GRAPH GPUS ALGO TAG [opts]: prints "step_ms peak_comm_MiB peak_mem_GiB seconds
# step_us:comm_bytes:mem_bytes" (the last field exact, for the comparisons);
# keeps the placement in $TMP/TAG.json and the progress lines in $TMP/TAG.err
place() {
  local g=$1 n=$2 a=$3 tag=$4; shift 4
  local t0 t1
  t0=$(date +%s.%N)
  if ! "$BIN" place "$g" --preset v100-nvlink --gpus "$n" --algo "$a" --seed "$SEED" \
        --best-effort --progress --json -o "$TMP/$tag.json" "$@" > "$TMP/m.json" \
        2> "$TMP/$tag.err"; then
    echo "fail - - - -"; return
  fi
  t1=$(date +%s.%N)
  python3 - "$g" "$TMP/$tag.json" "$TMP/m.json" "$t0" "$t1" <<'PY'
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

echo "### Trinity vs expert and expert + order (Table 4 columns), v100-nvlink"
echo
echo "Each cell: step time (ms) / peak communication (MiB) / peak memory (GiB) / search time (s)."
echo "trinity: fresh policy, ${TRINITY_SAYS}, placer defaults (reference expert, tolerances = its peaks,"
echo "--order-search all: rollouts judged by a list schedule, final choice over the pool, boundary moves${TRINITY_ARGS:+; extra: $TRINITY_ARGS}); expert + order: --algo expert --order peak; seed ${SEED}."
[ "$FULL" = 1 ] && echo "sgdp: SGDP-one, ${SGDP_BUDGET} s; trinity-none: trinity --paper (the paper's method)."
echo
hdr="| model | ops | GPUs | expert | expert + order |"
sep="|---|---:|---:|---|---|"
if [ "$FULL" = 1 ]; then
  hdr="$hdr celeritas | sgdp | trinity-none |"
  sep="$sep---|---|---|"
fi
echo "$hdr trinity | placement | vs expert (step, comm, mem) | target | vs expert + order (step, comm, mem) | learnt beats expert + order |"
echo "$sep---|---|---|---|---|---|"
for m in $MODELS; do
  g="$TMP/$m.json"
  "$BIN" zoo "$m" --size small $(zoo_args "$m") -o "$g" >/dev/null
  ops=$("$BIN" info "$g" | awk '/^ops/ {print $4}')
  for n in $GPUS; do
    e=$(place "$g" "$n" expert expert)
    eo=$(place "$g" "$n" expert expert-order --order peak)
    extra=""
    if [ "$FULL" = 1 ]; then
      c=$(place "$g" "$n" celeritas celeritas)
      s=$(place "$g" "$n" sgdp sgdp --budget-seconds "$SGDP_BUDGET")
      tt=$(place "$g" "$n" trinity trinity-none "${TRINITY_STOP[@]}" --paper)
    fi
    t=$(place "$g" "$n" trinity trinity "${TRINITY_STOP[@]}" $TRINITY_ARGS)
    cmp=$(python3 - "$e" "$eo" "$t" "$TMP/expert.json" "$TMP/trinity.json" "$TMP/trinity.err" <<'PY'
import json, sys
e, eo, t = (a.split() for a in sys.argv[1:4])
boundary = 'a boundary-move placement' in open(sys.argv[6]).read()
if 'fail' in (e[0], eo[0], t[0]):
    print('- | - | - | - | -'); raise SystemExit
es, ec, em = map(float, e[4].split(':')); os_, oc, om = map(float, eo[4].split(':'))
ts, tc, tm = map(float, t[4].split(':'))
same = json.load(open(sys.argv[4]))["device_of"] == json.load(open(sys.argv[5]))["device_of"]
w = lambda a, b: 'less' if a < b else 'more' if a > b else 'equal'
met = 'yes' if ts < es and tc <= ec and tm <= em else 'no'
learnt = 'yes' if not same and ts < os_ and tc <= ec and tm <= em else 'no'
print(f"{'expert' if same else 'boundary move' if boundary else 'learnt'} | {(ts / es - 1) * 100:+.2f}%, {w(tc, ec)}, {w(tm, em)} | {met}"
      f" | {(ts / os_ - 1) * 100:+.2f}%, {w(tc, oc)}, {w(tm, om)} | {learnt}")
PY
)
    fmt() { echo "$1" | awk '{printf "%s / %s / %s / %s", $1, $2, $3, $4}'; }
    if [ "$FULL" = 1 ]; then
      extra=" $(fmt "$c") | $(fmt "$s") | $(fmt "$tt") |"
    fi
    echo "| $m | $ops | $n | $(fmt "$e") | $(fmt "$eo") |$extra $(fmt "$t") | $cmp |"
    # Trinity's own account of its final choice (stderr of the placer)
    grep -E '^trinity: (final choice|reference \+ order|rollouts judged|boundary moves)' "$TMP/trinity.err" \
      | sed "s/^/    <!-- $m x $n: /; s/\$/ -->/" >&2 || true
  done
done
