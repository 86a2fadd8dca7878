#!/usr/bin/env bash
# Trinity training under MPI: with a fixed number of rollout
# batches per iteration (--slots 2) and of iterations, 1 and 2 ranks give
# bit-identical weights and the same best placement; only rank 0 prints and
# writes.  Both runs use single-threaded OpenBLAS: Trinity's results depend
# on the BLAS thread count (bench/RESULTS.md, "## Trinity", "### MPI").
# Both commands run with their defaults beyond the paper (reference expert,
# decision units, uniform exploration, tolerances from the reference,
# rollouts judged by a list schedule, the placer's final choice over its pool).
# Args: OPPLACE_BIN DATA_DIR
set -euo pipefail
bin=$1
if ! command -v mpirun > /dev/null; then
  echo "test_trinity_mpi: skipped (mpirun not installed)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" zoo synthetic --ops 300 --width 8 -o "$tmp/g.json"
# Open MPI's own allocations are not ours to leak-check.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers without CMA
export OPENBLAS_NUM_THREADS=1
common=(--preset v100-nvlink --gpus 2 --slots 2 --samples 6 --groups 8 --seed 4 --quiet)
train() {
  mpirun --allow-run-as-root --oversubscribe -np "$1" "$bin" train trinity \
    --graphs "$tmp/g.json" --weights "$tmp/w$1.bin" --iterations 3 --hidden 16 "${common[@]}"
}
place() {
  mpirun --allow-run-as-root --oversubscribe -np "$1" "$bin" place "$tmp/g.json" --algo trinity \
    --iterations 2 -o "$tmp/p$1.json" "${common[@]}" > /dev/null
}
one=$(train 1)
two=$(train 2)
echo "$one"
[ "$(echo "$two" | grep -c '^trained')" = 1 ] || { echo "FAIL: not exactly one rank printed"; exit 1; }
b1=$(echo "$one" | sed -n 2p)
b2=$(echo "$two" | sed -n 2p)
echo "best: 1 rank: $b1"
echo "best: 2 ranks: $b2"
[ -n "$b1" ] && [ "$b1" = "$b2" ] || { echo "FAIL: best placements differ"; exit 1; }
cmp "$tmp/w1.bin" "$tmp/w2.bin" || { echo "FAIL: weights differ between 1 and 2 ranks"; exit 1; }
# the placer trains the same way: identical placements for 1 and 2 ranks
place 1
place 2
# (the files differ only in the wall time "placement_seconds")
untimed() { sed -E 's/"placement_seconds": [-+.0-9eE]+//' "$1"; }
untimed "$tmp/p1.json" > "$tmp/p1.untimed"
untimed "$tmp/p2.json" > "$tmp/p2.untimed"
grep -q '"device_of"' "$tmp/p1.untimed" || { echo "FAIL: no placement written"; exit 1; }
cmp "$tmp/p1.untimed" "$tmp/p2.untimed" ||
  { echo "FAIL: placements differ between 1 and 2 ranks"; exit 1; }
# the weights written under MPI place the graph (zero-shot) without MPI
"$bin" place "$tmp/g.json" --preset v100-nvlink --gpus 2 --algo trinity --weights "$tmp/w2.bin" \
  --samples 2 --quiet > /dev/null || { echo "FAIL: zero-shot with the MPI weights"; exit 1; }
echo "test_trinity_mpi: passed"
