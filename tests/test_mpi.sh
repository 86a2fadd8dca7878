#!/usr/bin/env bash
# The auto portfolio and refinement under MPI: the same answer with
# 1 and 2 ranks for a fixed seed and iteration-bounded refinement (which
# runs one stream whatever the rank count).  Args: OPPLACE_BIN DATA_DIR
set -euo pipefail
bin=$1
if ! command -v mpirun > /dev/null; then
  echo "test_mpi: skipped (mpirun not installed)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" zoo synthetic --ops 600 --width 12 -o "$tmp/g.json"
# Open MPI's own allocations are not ours to leak-check.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers without CMA
run() {
  mpirun --allow-run-as-root --oversubscribe -np "$1" "$bin" place "$tmp/g.json" --algo auto \
    --preset v100-pcie --gpus 4 --seed 5 --refine-iters 150 \
    -o "$tmp/p$1.json" --json
}
one=$(run 1 | grep step_time_us)
two=$(run 2 | grep step_time_us)
s1=$(echo "$one" | sed 's/.*"step_time_us": \([0-9.e+-]*\).*/\1/')
s2=$(echo "$two" | sed 's/.*"step_time_us": \([0-9.e+-]*\).*/\1/')
echo "1 rank: $s1 us, 2 ranks: $s2 us"
[ -n "$s1" ] && [ "$s1" = "$s2" ] || { echo "FAIL: results differ"; exit 1; }
# both ranks agree on the placement written by rank 0
cmp <(grep -v placement_seconds "$tmp/p1.json") <(grep -v placement_seconds "$tmp/p2.json") \
  || { echo "FAIL: placements differ"; exit 1; }
"$bin" simulate "$tmp/g.json" --preset v100-pcie --gpus 4 --placement "$tmp/p2.json" --json \
  | grep -q "\"step_time_us\": $s2" || { echo "FAIL: simulate disagrees"; exit 1; }
echo "test_mpi: passed"
