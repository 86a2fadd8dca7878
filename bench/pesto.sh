#!/usr/bin/env bash
# bench/pesto.sh - Pesto vs Celeritas vs the baselines on the zoo models.
#
# usage: bash bench/pesto.sh [OPPLACE_BIN] [TIME_LIMIT_S] [TARGET] [MODELS...]
# Prints a Markdown table: per model and GPU count, each algorithm's
# simulated step time and placement time, Pesto's ILP incumbent, bound and
# gap on the coarse graph (every placer with --best-effort; "(OOM +X GiB)"
# marks a placement that overflows, by X GiB summed over devices), and every algorithm's step time over the ILP's
# bound (the bound is a lower bound of the coarse ILP model only: the
# original graph can do better than any coarse schedule, so ratios below 1
# are possible and mean the coarsening cost more than the ILP gained).
set -u
BIN=${1:-./build/opplace}
TL=${2:-20}
TARGET=${3:-40}
shift 3 2>/dev/null || shift $#
MODELS=${*:-"rnnlm nmt gnmt transformer transformer_xl inception_v3 nasnet pnasnet amoebanet wavenet tensor_holography"}
ALGOS="single expert m-topo m-etf heft celeritas auto pesto"
TMP=$(mktemp -d /tmp/bench-pesto-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

echo "| model | GPUs | ops -> coarse | algorithm | step ms | place s | step / ILP bound |"
echo "|---|---|---|---|---|---|---|"
for m in $MODELS; do
    "$BIN" zoo "$m" --size small -o "$TMP/g.json" || continue
    for gpus in 2 4; do
        "$BIN" cluster --preset v100-nvlink --gpus "$gpus" -o "$TMP/c.json"
        "$BIN" place "$TMP/g.json" --cluster "$TMP/c.json" --algo pesto --time-limit "$TL" --best-effort \
            --target "$TARGET" --progress --json >"$TMP/pesto.json" 2>"$TMP/pesto.log"
        bound=$(sed -n 's/.*ILP .* incumbent \([0-9.]*\) us, bound \([0-9.]*\) us, gap \([0-9.]*\)%.*/\2/p' "$TMP/pesto.log" | tail -1)
        inc=$(sed -n 's/.*ILP .* incumbent \([0-9.]*\) us, bound .*/\1/p' "$TMP/pesto.log" | tail -1)
        gap=$(sed -n 's/.*ILP .* gap \([0-9.]*\)%.*/\1/p' "$TMP/pesto.log" | tail -1)
        from=$(sed -n 's/^pesto: result from \([^:]*\):.*/\1/p' "$TMP/pesto.log" | tail -1)
        coarse=$(sed -n 's/^pesto: coarsened \([0-9]*\) ops to \([0-9]*\).*/\1 -> \2/p' "$TMP/pesto.log")
        ilpx=$(sed -n 's/^pesto: ilp expanded: \([0-9.]*\) us with its order, \([0-9.]*\) us first-ready.*/\1 \2/p' "$TMP/pesto.log" |
            awk '{ m = $1 < $2 ? $1 : $2; printf "%.3f", m / 1000 }')
        for a in $ALGOS; do
            if [ "$a" = pesto ]; then
                out=$(cat "$TMP/pesto.json")
            else
                out=$("$BIN" place "$TMP/g.json" --cluster "$TMP/c.json" --algo "$a" --best-effort --json 2>/dev/null) || out=""
            fi
            step=$(echo "$out" | sed -n 's/.*"step_time_us": \([0-9.e+-]*\).*/\1/p')
            secs=$(echo "$out" | sed -n 's/.*"placement_seconds": \([0-9.e+-]*\).*/\1/p')
            oom=$(echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
cap = {x["name"]: x["memory_bytes"] for x in json.load(open(sys.argv[1]))["devices"]}
over = sum(max(0, b - cap[k]) for k, b in d["peak_memory_bytes"].items()) / 2**30
print(" (OOM +%.2f GiB)" % over if d["oom"] else "")' "$TMP/c.json")
            if [ -z "$step" ]; then
                echo "| $m | $gpus | $coarse | $a | failed | | |"
                continue
            fi
            ratio=$(awk -v s="$step" -v b="${bound:-0}" 'BEGIN { if (b > 0) printf "%.3f", s / b; }')
            label=$a
            [ "$a" = pesto ] && label="pesto (from ${from:-?}; ILP's own placement ${ilpx:-none} ms; ILP inc ${inc:-?} us, bound ${bound:-?} us, gap ${gap:-?}%)"
            printf "| %s | %s | %s | %s | %.3f%s | %.2f | %s |\n" "$m" "$gpus" "$coarse" "$label" \
                "$(awk -v s="$step" 'BEGIN { print s / 1000 }')" "$oom" "$secs" "$ratio"
        done
    done
done
