#!/usr/bin/env bash
# bench/real.sh - the benchmark of record on real PyTorch training graphs:
# every placer, the trivial lower bound (opplace info), and Baechi's own placers side
# by side, all judged by the contract simulator (`opplace simulate`).
#
# Usage: bash bench/real.sh [path/to/opplace]          (prints Markdown)
# Environment:
#   EXPORTER  the exporter command, ONE place to switch it (default
#             "/usr/bin/python3 -m opplace.torch export", the project's
#             own exporter, python/opplace)
#   GRAPHS    directory that caches exported graphs (default bench/out/real)
#   MODELS    space-separated subset of the model keys below
#   ALGOS     placers to run (default: every placer that answers in seconds;
#             add sgdp,trinity,pesto for the learned/ILP ones)
#   BUDGET    --budget-seconds for auto (default 10)
#   BAECHI_DIR  a checkout of beomyeol/baechi: adds Baechi's m-TOPO, m-ETF,
#             m-SCT (run by bench/baechi_run.py, never part of opplace)
# Clusters: "16GB": 4 GPUs x 16 GiB, every link 12 us + 1e-4 us/byte
# (10 GB/s); "tight": the same 4 GPUs with memory = 45% of the model's peak
# on one device (the simulator's), so no single device holds it.
set -euo pipefail
BIN=${1:-./build/opplace}
EXPORTER=${EXPORTER:-/usr/bin/python3 -m opplace.torch export}
GRAPHS=${GRAPHS:-bench/out/real}
BUDGET=${BUDGET:-10}
ALGOS=${ALGOS:-single round-robin expert metis m-topo m-etf m-sct heft celeritas order-place dfs-topo auto}
MODELS=${MODELS:-resnet50 resnet152 densenet121 inception_v3 mobilenet_v2 vgg16 transformer gpt12 lstm gnmt}
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$HERE/../python${PYTHONPATH:+:$PYTHONPATH}" # the opplace.torch package
mkdir -p "$GRAPHS"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# export_model KEY OUT: the one place that knows both exporters' arguments
export_model() {
    local key=$1 out=$2
    case "$EXPORTER" in
    *export_torch.py*)
        case $key in
        transformer) $EXPORTER transformer --batch 32 --estimate v100 -o "$out" ;;
        gpt12 | lstm | gnmt) return 1 ;; # the old exporter has no decoder/LSTM
        *) $EXPORTER "$key" --batch 32 --estimate v100 -o "$out" ;;
        esac ;;
    *)
        local t=(--times estimate:v100)
        case $key in
        transformer) $EXPORTER opplace.torch.examples:transformer --input 32x32x512 \
                         --input 32x32x512 --loss mse "${t[@]}" -o "$out" ;;
        gpt12) $EXPORTER opplace.torch.examples:gpt --kwargs '{"layers":12,"seq":512}' \
                   --input 8x512:int64 --loss cross_entropy "${t[@]}" -o "$out" ;;
        lstm) $EXPORTER opplace.torch.examples:seq2seq --kwargs '{"layers":4,"dim":1024}' \
                  --input 64x32:int64 --input 64x32:int64 --loss cross_entropy "${t[@]}" -o "$out" ;;
        gnmt) $EXPORTER opplace.torch.examples:gnmt --kwargs '{"layers":4,"dim":1024}' \
                  --input 64x32:int64 --input 64x32:int64 --loss cross_entropy "${t[@]}" -o "$out" ;;
        inception_v3) $EXPORTER torchvision.models:inception_v3 --input 32x3x299x299 \
                          --kwargs '{"aux_logits": false, "init_weights": false}' \
                          --loss cross_entropy "${t[@]}" -o "$out" ;;
        *) $EXPORTER "torchvision.models:$key" --input 32x3x224x224 --loss cross_entropy \
               "${t[@]}" -o "$out" ;;
        esac ;;
    esac
}

cluster() { # cluster MEMORY_BYTES OUT
    {
        echo '{"format": "opplace-cluster", "version": 1, "devices": ['
        for i in 0 1 2 3; do
            [ $i -gt 0 ] && echo ','
            echo "{\"name\": \"gpu:$i\", \"kind\": \"gpu\", \"memory_bytes\": $1, \"speed\": 1.0}"
        done
        echo '], "links": [], "default_link": {"latency_us": 12.0, "us_per_byte": 1.0e-4}}'
    } >"$2"
}

json_get() { # json_get KEY [GAP] < JSON: ms; with GAP, the certified gap beside it
    /usr/bin/python3 -c 'import json,sys
d=json.load(sys.stdin); v=d.get(sys.argv[1]); g=d.get("certified_gap")
s="oom" if d.get("oom") else ("%.1f" % (v / 1000.0) if v is not None else "-")
print(s + (" (%.1f%%)" % (100 * g) if len(sys.argv) > 2 and g is not None and s != "oom" else ""))' "$@"
}

ms() { # ms GRAPH CLUSTER ALGO...: step time in ms, or why not
    local out rc=0
    out=$("$BIN" place "$1" --cluster "$2" --algo "$3" --budget-seconds "$BUDGET" --json \
          2>"$TMP/err") || rc=$?
    case $rc in
    0) case $3 in # the searches that state their certified gap: beside the step
       auto | pesto) echo "$out" | json_get step_time_us gap ;;
       *) echo "$out" | json_get step_time_us ;;
       esac ;;
    3) echo "refused" ;;
    *) echo "error $rc" ;;
    esac
}

baechi_ms() { # baechi_ms GRAPH CLUSTER ALGO
    if /usr/bin/python3 "$HERE/baechi_run.py" "$1" "$2" "$3" -o "$TMP/b.json" 2>"$TMP/berr"; then
        "$BIN" simulate "$1" --cluster "$2" --placement "$TMP/b.json" --json | json_get step_time_us
    else
        echo "fails"
    fi
}

BAECHI=()
[ -n "${BAECHI_DIR:-}" ] && BAECHI=(m_topo m_etf m_sct)

cluster 17179869184 "$TMP/c16.json"
BIG=$((1024 * 1024 * 1024 * 1024))
cluster $BIG "$TMP/cbig.json"

echo '```'
echo "EXPORTER='$EXPORTER' BAECHI_DIR=${BAECHI_DIR:-(unset)} bash bench/real.sh"
echo '```'
echo
head="| model | ops | cluster | trivial bound |"
sep="|---|---|---|---|"
for a in $ALGOS; do head="$head $a |"; sep="$sep---|"; done
for b in "${BAECHI[@]}"; do head="$head Baechi ${b/_/-} |"; sep="$sep---|"; done
echo "$head"
echo "$sep"
for m in $MODELS; do
    g="$GRAPHS/$m.json"
    if [ ! -s "$g" ] && ! export_model "$m" "$g" >"$TMP/export.log" 2>&1; then
        rm -f "$g"
        echo "| $m | - | - | not exported by '$EXPORTER' |"
        continue
    fi
    nops=$("$BIN" info "$g" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ops"])')
    if ! peak=$("$BIN" place "$g" --cluster "$TMP/cbig.json" --algo single --json |
                /usr/bin/python3 -c 'import json,sys; print(max(json.load(sys.stdin)["peak_memory_bytes"].values()))'); then
        echo "| $m | $nops | - | no single-device peak (opplace place --algo single failed) |"
        continue
    fi
    cluster $((peak * 45 / 100)) "$TMP/ctight.json"
    for c in c16 ctight; do
        cf="$TMP/$c.json"
        lb=$("$BIN" info "$g" --cluster "$cf" --json | json_get lower_bound_us)
        name=16GB
        [ $c = ctight ] && name="tight ($((peak * 45 / 100 / 1048576)) MiB)"
        row="| $m | $nops | $name | $lb |"
        for a in $ALGOS; do row="$row $(ms "$g" "$cf" "$a") |"; done
        for b in "${BAECHI[@]}"; do row="$row $(baechi_ms "$g" "$cf" "$b") |"; done
        echo "$row"
    done
done
echo
echo "Step times in ms from the contract simulator (auto, pesto: the certified"
echo "gap to the bound proven in 5 % of the budget in parentheses); 'refused': the placer"
echo "reports the problem infeasible (exit 3); 'oom': the simulator's peak"
echo "exceeds a device; 'fails': Baechi's code raised (e.g. out of memory)."
