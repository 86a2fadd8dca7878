#!/usr/bin/env bash
# bench/reorder.sh - what a priority execution order (opplace/search.h,
# `opplace place --order`) adds to each placer's placement (prints
# Markdown).  For every model and placer on 2 and 4 GPUs of PRESET: the
# placer's step time as it comes (its own schedule, mostly the simulator's
# first-ready-first), with `--order fit` (fastest order that fits) and
# with `--order peak` (no higher peak memory); then per placer the
# geometric mean of the ratios.  With AUTO_BUDGET=B > 0 also auto without
# its order stage (--order none) and as it is, B seconds each; ALGOS="" skips the placers' tables.
# usage: [PRESET=v100-nvlink] [AUTO_BUDGET=0] bash bench/reorder.sh [path/to/opplace] [models...]
set -euo pipefail
BIN=${1:-./build/opplace}
shift || true
MODELS=${*:-"rnnlm nmt gnmt transformer transformer_xl inception_v3 nasnet pnasnet amoebanet wavenet tensor_holography"}
PRESET=${PRESET:-v100-nvlink}
AUTO_BUDGET=${AUTO_BUDGET:-0}
ALGOS=${ALGOS-"single expert metis m-topo m-etf m-sct heft celeritas"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for m in $MODELS; do "$BIN" zoo "$m" --size small -o "$TMP/$m.json"; done

# one placement: "step_ms peak_gib oom"
run() {
  "$BIN" place "$TMP/$1.json" --preset "$PRESET" --gpus "$2" --best-effort --json "${@:3}" \
    2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
print(f\"{d['step_time_us']/1000:.2f} {max(d['peak_memory_bytes'].values())/2**30:.2f} {int(d['oom'])}\")"
}

for g in 2 4; do
  [ -n "$ALGOS" ] || break
  echo "#### $g x $PRESET: step time (ms) as placed / --order fit / --order peak; * = out of memory"
  echo
  printf '| model |'; for a in $ALGOS; do printf ' %s |' "$a"; done; echo
  printf '|---|'; for a in $ALGOS; do printf -- '---:|'; done; echo
  : > "$TMP/ratios.$g"
  for m in $MODELS; do
    printf '| %s |' "$m"
    for a in $ALGOS; do
      read -r s0 p0 o0 < <(run "$m" "$g" --algo "$a")
      read -r s1 p1 o1 < <(run "$m" "$g" --algo "$a" --order fit)
      read -r s2 p2 o2 < <(run "$m" "$g" --algo "$a" --order peak)
      star() { [ "$1" = 1 ] && printf '*'; true; }
      printf ' %s%s / %s%s / %s%s |' "$s0" "$(star "$o0")" "$s1" "$(star "$o1")" "$s2" "$(star "$o2")"
      echo "$a $s0 $s1 $s2 $p0 $p1 $p2" >> "$TMP/ratios.$g"
    done
    echo
  done
  echo
  echo "Geometric mean over the models, $g GPUs (peak memory: largest device's, GiB):"
  echo
  echo "| placer | fit / as placed | peak / as placed | peak memory fit / as placed | models faster with fit |"
  echo "|---|---:|---:|---:|---:|"
  python3 - "$TMP/ratios.$g" $ALGOS <<'PY'
import math, sys
rows = [l.split() for l in open(sys.argv[1])]
for a in sys.argv[2:]:
    r = [list(map(float, x[1:])) for x in rows if x[0] == a]
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
    print(f"| {a} | {gm([x[1]/x[0] for x in r]):.3f} | {gm([x[2]/x[0] for x in r]):.3f} | "
          f"{gm([x[4]/x[3] for x in r]):.3f} | {sum(x[1] < x[0] for x in r)} of {len(r)} |")
PY
  echo
done

if [ "$AUTO_BUDGET" != 0 ]; then
  echo "#### auto, --budget-seconds $AUTO_BUDGET: without its order stage, and as it is (default): step time (ms)"
  echo
  echo "| model | GPUs | auto --order none | auto | auto / none | winner |"
  echo "|---|---:|---:|---:|---:|---|"
  : > "$TMP/auto.ratios"
  for g in 2 4; do
    for m in $MODELS; do
      read -r s0 _ o0 < <(run "$m" "$g" --budget-seconds "$AUTO_BUDGET" --order none)
      read -r s2 _ o2 < <(run "$m" "$g" --budget-seconds "$AUTO_BUDGET" -o "$TMP/auto.json")
      w=$(python3 -c "import json; print(json.load(open('$TMP/auto.json'))['algorithm'])")
      q=$(python3 -c "print(f'{$s2/$s0:.3f}')")
      echo "$s0 $s2" >> "$TMP/auto.ratios"
      star() { [ "$1" = 1 ] && printf '*'; true; }
      echo "| $m | $g | $s0$(star "$o0") | $s2$(star "$o2") | $q | $w |"
    done
  done
  echo
  python3 - "$TMP/auto.ratios" <<'PY'
import math, sys
r = [list(map(float, l.split())) for l in open(sys.argv[1])]
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"auto / auto --order none: geometric mean {gm([x[1] / x[0] for x in r]):.3f}")
PY
fi
