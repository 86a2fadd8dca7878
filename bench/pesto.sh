#!/usr/bin/env bash
# bench/pesto.sh - pesto against auto with the same wall-clock budget, the
# stage that produced pesto's answer, the proven lower bound and the gaps.
#
# usage: bash bench/pesto.sh [OPPLACE_BIN] [BUDGET_S] [CLUSTER_JSON] GRAPH...
#   (defaults: ./build/opplace, 60, 4 x v100-pcie); PESTO_OPTS: more options
#   for pesto (e.g. "--refine-seconds 0": the LNS without refinement beside it)
# (auto runs no ILP; pesto starts from auto.)
# Per graph: auto's and pesto's simulated step (both --budget-seconds
# BUDGET_S), the incumbent pesto got from auto (three quarters of the budget),
# pesto's stage (pesto:auto = nothing beat auto's answer,
# pesto:ilp-lns = an exact CBC window of the LNS did, pesto:ilp-coarse = the
# coarse ILP did), the LNS windows solved, those that improved the incumbent
# (kept), those solved to optimality without a better placement (optimal at
# the incumbent: proven optimal within the window), those below the
# incumbent in the window's model but not in the simulator, `opplace bound`
# (10 s) and its method, each answer's certified gap to that bound
# ((step - bound) / step), and pesto's wall time.
set -u
BIN=${1:-./build/opplace}
B=${2:-60}
CL=${3:-}
shift 3 2>/dev/null || shift $#
TMP=$(mktemp -d /tmp/bench-pesto-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
if [ -z "$CL" ]; then
    CL=$TMP/c.json
    "$BIN" cluster --preset v100-pcie --gpus 4 -o "$CL"
fi
num() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p"; }
echo "| graph | ops | auto ms | pesto ms | pesto's incumbent (auto, 3B/4) ms | pesto stage | LNS windows | improved | optimal at the incumbent | model-only | bound ms (method) | auto gap | pesto gap | pesto wall s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for g in "$@"; do
    name=$(basename "$g" .json)
    ops=$("$BIN" info "$g" --cluster "$CL" | sed -n 's/^ops \/ edges *\([0-9]*\).*/\1/p')
    a=$("$BIN" place "$g" --cluster "$CL" --algo auto --budget-seconds "$B" --best-effort --json | num step_time_us)
    t0=$(date +%s.%N)
    p=$("$BIN" place "$g" --cluster "$CL" --algo pesto --budget-seconds "$B" --best-effort --progress ${PESTO_OPTS:-} \
        --json 2>"$TMP/p.log" | num step_time_us)
    t1=$(date +%s.%N)
    inc=$(sed -n 's/^pesto: incumbent from auto ([0-9.]* s): \([0-9.]*\) us.*/\1/p' "$TMP/p.log")
    stage=$(sed -n 's/^pesto: result from \([^:]*\):.*/\1/p' "$TMP/p.log")
    # "pesto: LNS W windows (O optimal, K kept, I optimal at the incumbent): ...; R below ..."
    lns=$(sed -n 's/^pesto: LNS \([0-9]*\) windows ([0-9]* optimal, \([0-9]*\) kept, \([0-9]*\) optimal at the incumbent)[^;]*; \([0-9]*\) below.*/\1 | \2 | \3 | \4/p' "$TMP/p.log")
    bj=$("$BIN" bound "$g" --cluster "$CL" --budget-seconds 10 --json)
    lb=$(echo "$bj" | num lower_bound_us)
    meth=$(echo "$bj" | sed -n 's/.*"method": "\([^"]*\)".*/\1/p')
    awk -v n="$name" -v ops="$ops" -v a="$a" -v p="$p" -v i="${inc:-0}" -v s="pesto:$stage" -v l="$lns" -v lb="$lb" \
        -v m="$meth" -v w="$(awk -v x="$t0" -v y="$t1" 'BEGIN { print y - x }')" 'BEGIN {
        if (l == "") l = "- | - | - | -" # no LNS: the incumbent reached the bound
        printf "| %s | %s | %.3f | %.3f | %.3f | %s | %s | %.3f (%s) | %.1f%% | %.1f%% | %.1f |\n",
            n, ops, a / 1000, p / 1000, i / 1000, s, l, lb / 1000, m, 100 * (a - lb) / a,
            100 * (p - lb) / p, w }'
done
