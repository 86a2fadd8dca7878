#!/usr/bin/env bash
# bench/baselines.sh - the "## Baselines" tables of bench/RESULTS.md:
# (1) the baselines on the papers' zoo settings (2 and 4 V100 NVLink GPUs),
# (2) placement seconds on ~36,000-op graphs (median of 3 runs).
# Usage: bash bench/baselines.sh [path/to/opplace]   (prints Markdown)
set -euo pipefail
BIN=${1:-./build/opplace}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo '### Step time on the papers settings'
echo
echo '```'
echo "opplace bench --models inception_v3:size=small,gnmt:layers=2:size=small,gnmt:layers=4:size=small,gnmt:layers=8:size=small,rnnlm:layers=2:size=small,rnnlm:layers=4:size=small,rnnlm:layers=8:size=small,transformer:size=small,nasnet:size=small,wavenet:size=small,tensor_holography:size=small --gpus 2,4 --algo single,expert,metis,m-topo,m-etf,m-sct,heft"
echo '```'
echo
"$BIN" bench --models inception_v3:size=small,gnmt:layers=2:size=small,gnmt:layers=4:size=small,gnmt:layers=8:size=small,rnnlm:layers=2:size=small,rnnlm:layers=4:size=small,rnnlm:layers=8:size=small,transformer:size=small,nasnet:size=small,wavenet:size=small,tensor_holography:size=small \
    --gpus 2,4 --algo single,expert,metis,m-topo,m-etf,m-sct,heft 2>/dev/null

echo
echo '### Placement seconds on ~36,000-op graphs, 4 x V100 (median of 3)'
echo
"$BIN" zoo transformer --layers 29 -o "$TMP/tr.json"
"$BIN" zoo synthetic --ops 36000 -o "$TMP/syn.json"
echo '```'
echo "opplace zoo transformer --layers 29 -o tr.json; opplace zoo synthetic --ops 36000 -o syn.json"
echo "opplace place G --algo A --gpus 4 --best-effort   # 'placed in' line, median of 3"
echo '```'
echo
echo '| algorithm | transformer, 29 layers (35,965 ops) | synthetic (36,000 ops) | target |'
echo '|---|---:|---:|---:|'
median() {
    for i in 1 2 3; do
        "$BIN" place "$1" --algo "$2" --gpus 4 --best-effort "${@:3}" 2>/dev/null |
            awk '/placed in/ {print $3}'
    done | sort -g | sed -n 2p
}
for a in m-etf heft m-topo metis expert m-sct; do
    case $a in m-etf|heft) target='< 2 s';; m-topo|metis) target='< 0.5 s';; *) target='-';; esac
    echo "| $a | $(median "$TMP/tr.json" $a) s | $(median "$TMP/syn.json" $a) s | $target |"
done
# (m-sct's LP runs on graphs of up to 4,000 edges only, M_SCT_LP_MAX_EDGES in
# m_sct.c; the former --lp-max-edges row that forced it on these graphs is gone)
