#!/usr/bin/env bash
# SGDP training under MPI: with a fixed number of rollout
# batches per iteration (--slots 2) and of iterations, 1 and 2 ranks give
# bit-identical weights and the same best placement; only rank 0 prints and
# writes.  Two graphs (batch training), so the varied reference inputs and
# the relabelled cloning (sgdp_train.c) are covered too.
# Args: OPPLACE_BIN DATA_DIR
set -euo pipefail
bin=$1
if ! command -v mpirun > /dev/null; then
  echo "test_sgdp_mpi: skipped (mpirun not installed)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" zoo synthetic --ops 300 --width 8 -o "$tmp/g.json"
"$bin" zoo synthetic --ops 200 --width 4 --seed 7 -o "$tmp/h.json"
# Open MPI's own allocations are not ours to leak-check.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers without CMA
run() {
  mpirun --allow-run-as-root --oversubscribe -np "$1" "$bin" train sgdp --graphs "$tmp/g.json" \
    "$tmp/h.json" --preset v100-nvlink --gpus 2 --weights "$tmp/w$1.bin" --slots 2 --iterations 3 \
    --samples 6 --hidden 16 --seed 4 --quiet
}
one=$(run 1)
two=$(run 2)
echo "$one"
[ "$(echo "$two" | grep -c '^trained')" = 1 ] || { echo "FAIL: not exactly one rank printed"; exit 1; }
b1=$(echo "$one" | awk 'NR==2 || NR==3 {printf "%s ", $3}')
b2=$(echo "$two" | awk 'NR==2 || NR==3 {printf "%s ", $3}')
echo "best: 1 rank $b1 ms, 2 ranks $b2 ms"
[ -n "$b1" ] && [ "$b1" = "$b2" ] || { echo "FAIL: best placements differ"; exit 1; }
cmp "$tmp/w1.bin" "$tmp/w2.bin" || { echo "FAIL: weights differ between 1 and 2 ranks"; exit 1; }
# the weights written under MPI place the graph (zero-shot) without MPI
"$bin" place "$tmp/g.json" --preset v100-nvlink --gpus 2 --algo sgdp --weights "$tmp/w2.bin" \
  --samples 2 --quiet > /dev/null || { echo "FAIL: zero-shot with the MPI weights"; exit 1; }
echo "test_sgdp_mpi: passed"
