#!/usr/bin/env bash
# check_layers.sh - the layering check: every #include "..." between the
# folders of src/ (and the public headers of include/opplace/, each of
# which belongs to the layer that implements it) points down, and so does
# every call: given a build directory, no object file of the library uses
# a symbol that a higher or sibling layer defines.
#
# The layers, lowest first; a folder may include its own headers and those
# of lower layers, never those of a higher layer or of another folder on its
# own line:
#
#   0  core                  the data model, errors, files, the run context
#                            (clock, deadline, Ctrl-C, progress), the heap
#   1  cost nn coarsen sim   cost model and profiles; tensors and layers;
#                            coarse graphs; the simulator and list schedules
#                            (the judge)
#   2  io zoo                where graphs come from and results go: files
#                            (ONNX costed with cost/'s roofline, traces of
#                            sim/) and the model generators
#   3  solve                 the one LP/ILP runner (CBC in a killable child)
#                            and the Pesto ILP model
#   4  search bound          ranking, orders, refinement; the proven lower
#                            bound and the exact solve of small graphs
#   5  learn report          the learned placers' common parts (policies,
#                            PPO, node2vec); the HTML/SVG/DOT reports
#   6  placers               the algorithms, auto, the portfolio, the lists of
#                            placers and coarsening methods
#   7  cli                   the opplace command
#
# usage: bash tests/check_layers.sh [repository root [build directory]]
# (ctest: check_layers, with both)
set -euo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${2:-}
cd "$ROOT"

declare -A RANK=(
    [core]=0
    [cost]=1 [nn]=1 [coarsen]=1 [sim]=1
    [io]=2 [zoo]=2
    [solve]=3
    [search]=4 [bound]=4
    [learn]=5 [report]=5
    [placers]=6
    [cli]=7
)

# The layer of each public header include/opplace/NAME.h: where it is
# implemented.  opplace.h, the umbrella, is for library users only.
declare -A PUBLIC=(
    [error]=core [limits]=core [graph]=core [cluster]=core [options]=core
    [placement]=core [problem]=core [run_ctx]=core
    [estimate]=cost [profile]=cost
    [io]=io [zoo]=zoo
    [simulate]=sim [list_schedule]=sim
    [search]=search [bound]=bound
    [report]=report
    [placer]=placers
    [opplace]=cli
)

bad=0
complain() {
    echo "check_layers: $*" >&2
    bad=1
}

# The layer a file belongs to, from its path: sets $layer (no subshell, so
# the check stays fast).
layer_of_file() {
    case $1 in
    include/opplace/*)
        local name=${1#include/opplace/}
        layer=${PUBLIC[${name%.h}]:-?}
        ;;
    src/*)
        local rest=${1#src/}
        layer=${rest%%/*}
        ;;
    *) layer=? ;;
    esac
}

# The layer an include "inc" written in folder $1 reaches (a header without
# a folder is the includer's own): sets $layer.
layer_of_include() {
    local inc=$2
    case $inc in
    opplace/*)
        local name=${inc#opplace/}
        layer=${PUBLIC[${name%.h}]:-?}
        ;;
    */*) layer=${inc%%/*} ;;
    *) layer=$1 ;;
    esac
}

while IFS= read -r file; do
    layer_of_file "$file"
    [ -n "${RANK[$layer]+set}" ] ||
        complain "$file: folder or public header '$layer' has no layer (add it to tests/check_layers.sh)"
done < <(find src include/opplace -name '*.[ch]' | sort)

while IFS=: read -r file line inc; do
    layer_of_file "$file"
    from=$layer
    [ -n "${RANK[$from]+set}" ] || continue # reported above
    [ "$inc" = onnx.pb-c.h ] && continue    # generated in the build tree for io/
    layer_of_include "$from" "$inc"
    to=$layer
    [ "$to" = "$from" ] && continue
    if [ -z "${RANK[$to]+set}" ]; then
        complain "$file:$line: #include \"$inc\": '$to' has no layer"
    elif [ "${RANK[$to]}" -ge "${RANK[$from]}" ]; then
        complain "$file:$line: $from (layer ${RANK[$from]}) includes \"$inc\" of $to (layer ${RANK[$to]})"
    fi
done < <(grep -rn --include='*.[ch]' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src include/opplace |
         sed 's/^\([^:]*\):\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2:\3/' | sort)

# Calls: each undefined symbol of a library object against the layer of the
# object that defines it (CMake puts src/F/x.c's object at
# CMakeFiles/opplace_lib.dir/src/F/x.c.o; one whose source is gone is stale).
check_calls() {
    local objdir=$1/CMakeFiles/opplace_lib.dir/src ranks=""
    if [ ! -d "$objdir" ]; then
        echo "check_layers: no objects under $objdir: calls not checked"
        return
    fi
    for layer in "${!RANK[@]}"; do
        ranks+="$layer=${RANK[$layer]} "
    done
    local objs=()
    while IFS= read -r obj; do
        local rel=${obj#"$objdir"/}
        [ -f "src/${rel%.o}" ] && objs+=("$obj") # else left behind by a source moved away
    done < <(find "$objdir" -name '*.o' | sort)
    [ "${#objs[@]}" -gt 0 ] || return 0
    { nm -A -g --defined-only "${objs[@]}" | awk -v d="$objdir/" '{sub(":.*", "", $1); sub(d, "", $1); if (NF == 3) print "D", $3, $1}'
      nm -A -u "${objs[@]}" | awk -v d="$objdir/" '{sub(":.*", "", $1); sub(d, "", $1); print "U", $NF, $1}'
    } | awk -v ranks="$ranks" '
        BEGIN { n = split(ranks, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); rank[p[1]] = p[2] } }
        function layer(f) { sub(/\/.*/, "", f); return f }
        $1 == "D" { def[$2] = $3; next }
        { use[++m] = $2; by[m] = $3 }
        END {
            for (i = 1; i <= m; i++) {
                s = use[i]
                if (!(s in def)) continue
                from = layer(by[i]); to = layer(def[s])
                if (to != from && rank[to] >= rank[from])
                    printf "src/%s calls %s of src/%s: %s (layer %d) -> %s (layer %d)\n",
                        by[i], s, def[s], from, rank[from], to, rank[to]
            }
        }'
}

if [ -n "$BUILD" ]; then
    calls=$(check_calls "$BUILD")
    case $calls in
    "" | "check_layers: no objects"*) [ -n "$calls" ] && echo "$calls" ;;
    *) while IFS= read -r l; do complain "$l"; done <<< "$calls" ;;
    esac
fi

if [ "$bad" -ne 0 ]; then
    echo "check_layers: upward or sideways includes or calls (the layers are listed at the top of tests/check_layers.sh)" >&2
    exit 1
fi
echo "check_layers: every include${BUILD:+ and call} points down"
