#!/usr/bin/env bash
# bench/compare_zoo.sh - behaviour check for refactors: places every zoo
# model with every fast placer and with auto (fixed seed, refinement bounded
# by iterations, not time) and prints one line per run:
#   model gpus algo hash step_us algorithm-name
# auto gets --budget-seconds 59: long enough that its portfolio is not cut
# short, short of the 60 s at which older builds added Pesto's ILP.
# hash: the first 12 hex digits of sha256 over device_of and order (the
# placement without its metrics), so two builds place identically iff the
# hashes agree.  Compare two builds with
#   bash bench/compare_zoo.sh OLD/opplace > old.txt
#   bash bench/compare_zoo.sh NEW/opplace > new.txt; diff old.txt new.txt
# usage: [GPUS="2 4"] [ALGOS=...] [AUTO_ITERS=300] bash bench/compare_zoo.sh [path/to/opplace] [models...]
set -euo pipefail
BIN=${1:-./build/opplace}
shift || true
MODELS=${*:-"rnnlm nmt gnmt transformer transformer_xl inception_v3 nasnet pnasnet amoebanet wavenet tensor_holography"}
GPUS=${GPUS:-"2 4"}
ALGOS=${ALGOS-"single round-robin m-etf heft m-topo metis expert m-sct celeritas order-place dfs-topo"}
AUTO_ITERS=${AUTO_ITERS:-300}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

line() { # model gpus label placement.json
  python3 - "$@" <<'PY'
import hashlib, json, sys
m, g, label, path = sys.argv[1:5]
d = json.load(open(path))
key = json.dumps({"device_of": d["device_of"], "order": d.get("order")}, sort_keys=True)
h = hashlib.sha256(key.encode()).hexdigest()[:12]
print(f"{m} {g} {label} {h} {d['metrics']['step_time_us']:.1f} {d['algorithm']}")
PY
}

for m in $MODELS; do
  "$BIN" zoo "$m" -o "$TMP/$m.json"
  for g in $GPUS; do
    for a in $ALGOS auto; do
      extra=()
      [ "$a" = auto ] && extra=(--budget-seconds 59 --refine-iters "$AUTO_ITERS")
      if "$BIN" place "$TMP/$m.json" --preset v100-nvlink --gpus "$g" --algo "$a" --seed 1 \
          --best-effort --quiet "${extra[@]}" -o "$TMP/p.json" > /dev/null 2> "$TMP/err"; then
        line "$m" "$g" "$a" "$TMP/p.json"
      else
        echo "$m $g $a failed: $(tail -1 "$TMP/err")"
      fi
    done
  done
done
