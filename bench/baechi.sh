#!/usr/bin/env bash
# bench/baechi.sh - "## Baechi ports side by side" of bench/RESULTS.md: opplace's
# m-TOPO, m-ETF, m-SCT and Celeritas against Baechi's own placers on the
# project's exports ("torch": every forward op colocated with its backward) and
# on the same graphs with TensorFlow's colocation ("tf": a weight with its
# update only, bench/tf_colocation.py), each also with its op order shuffled.
# Every placement is judged by `opplace simulate` on the 16GB cluster of
# bench/real.sh (4 GPUs x 16 GiB, links 12 us + 1e-4 us/byte).
#
# Usage: BAECHI_DIR=/path/to/baechi bash bench/baechi.sh [path/to/opplace]
# Environment:
#   GRAPHS  the exported graphs, MODEL.json (default bench/out/real, as
#           bench/real.sh writes them; export the missing ones with it)
#   MODELS  default "resnet50 inception_v3 vgg16 gpt12 lstm"
#   BAECHI_PYTHON  a python with networkx and cvxopt (default /usr/bin/python3;
#           bench/requirements-baechi.txt pins them)
#   SEEDS   shuffles of the op order per graph (default "1 2")
set -euo pipefail
BIN=${1:-./build/opplace}
GRAPHS=${GRAPHS:-bench/out/real}
MODELS=${MODELS:-resnet50 inception_v3 vgg16 gpt12 lstm}
PY=${BAECHI_PYTHON:-/usr/bin/python3}
SEEDS=${SEEDS:-1 2}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -n "${BAECHI_DIR:-}" ] || { echo "bench/baechi.sh: set BAECHI_DIR" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

{
    echo '{"format": "opplace-cluster", "version": 1, "devices": ['
    for i in 0 1 2 3; do
        [ $i -gt 0 ] && echo ','
        echo "{\"name\": \"gpu:$i\", \"kind\": \"gpu\", \"memory_bytes\": 17179869184, \"speed\": 1.0}"
    done
    echo '], "links": [], "default_link": {"latency_us": 12.0, "us_per_byte": 1.0e-4}}'
} >"$TMP/c.json"
C=$TMP/c.json

step() { # step JSON: step ms of a place/simulate --json answer, or oom
    /usr/bin/python3 -c 'import json,sys
d=json.load(sys.stdin); print("oom" if d.get("oom") else "%.1f" % (d["step_time_us"] / 1000.0))'
}
ours() { # ours GRAPH ALGO
    "$BIN" place "$1" --cluster "$C" --algo "$2" --json 2>/dev/null | step || echo fails
}
baechi() { # baechi GRAPH ALGO
    if "$PY" "$HERE/baechi_run.py" "$1" "$C" "$2" -o "$TMP/b.json" 2>/dev/null; then
        "$BIN" simulate "$1" --cluster "$C" --placement "$TMP/b.json" --json | step
    else
        echo fails
    fi
}
shuffle() { # shuffle GRAPH SEED OUT: the same graph, ops and edges in a random order
    /usr/bin/python3 -c 'import json,random,sys
g=json.load(open(sys.argv[1])); r=random.Random(int(sys.argv[2]))
r.shuffle(g["ops"]); r.shuffle(g["edges"]); json.dump(g, open(sys.argv[3], "w"))' "$1" "$2" "$3"
}
worst() { # worst ALGO FILES...: the slowest step of ALGO over the files
    local a=$1 w=0 s
    shift
    for f in "$@"; do
        s=$(ours "$f" "$a")
        case $s in [0-9]*) w=$(/usr/bin/python3 -c "print(max($w, $s))") ;; *) echo "$s"; return ;; esac
    done
    echo "$w"
}

echo '```'
echo "BAECHI_DIR=... bash bench/baechi.sh   # MODELS='$MODELS' SEEDS='$SEEDS'"
echo '```'
echo
echo "| model | graph | m-topo | Baechi | shuffled | m-etf | Baechi | shuffled | m-sct | Baechi | shuffled | celeritas | shuffled |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for m in $MODELS; do
    [ -s "$GRAPHS/$m.json" ] || { echo "| $m | missing $GRAPHS/$m.json |"; continue; }
    cp "$GRAPHS/$m.json" "$TMP/torch.json"
    /usr/bin/python3 "$HERE/tf_colocation.py" "$GRAPHS/$m.json" -o "$TMP/tf.json"
    for kind in torch tf; do
        g=$TMP/$kind.json
        shuf=()
        for s in $SEEDS; do shuffle "$g" "$s" "$TMP/$kind.$s.json"; shuf+=("$TMP/$kind.$s.json"); done
        row="| $m | $kind |"
        for a in m-topo m-etf m-sct; do
            row="$row $(ours "$g" $a) | $(baechi "$g" "${a/-/_}") | $(worst $a "${shuf[@]}") |"
        done
        row="$row $(ours "$g" celeritas) | $(worst celeritas "${shuf[@]}") |"
        echo "$row"
    done
done
echo
echo "Step ms (opplace simulate); 'shuffled': opplace's slowest over the op orders of SEEDS;"
echo "'fails': the placer raised or refused; 'oom': the simulator's peak exceeds a device."
