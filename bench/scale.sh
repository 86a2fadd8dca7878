#!/usr/bin/env bash
# Beyond the papers: incremental vs full re-simulation, the auto
# portfolio on 1 and 2 MPI ranks, and auto on a 1,000,000-op graph.
# Usage: bash bench/scale.sh [BUILD_DIR]   (default: build; takes ~10 min)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" -j2 --target opplace bench_incremental > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin="$build/opplace"

echo "### Incremental re-simulation after moving one op (4 x v100-nvlink, one core)"
echo
echo "| ops | moves | checkpoints | record ms | full ms/move | incremental ms/move | speed-up | with cutoff ms/move | speed-up | moves not cut |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in 10000 100000; do
  "$bin" zoo synthetic --ops "$n" --width 32 -o "$tmp/s$n.json"
  moves=200; [ "$n" -ge 100000 ] && moves=50
  taskset -c 0 "$build/bench/bench_incremental" "$tmp/s$n.json" 4 "$moves" 16
done

echo
echo "### auto's portfolio on 1 and 2 MPI ranks (no refinement, no ILP)"
echo
echo "| model | ops | ranks | wall s | step time ms | winner |"
echo "|---|---|---|---|---|---|"
mpi=(mpirun --allow-run-as-root --oversubscribe)
for model in transformer nasnet gnmt; do
  "$bin" zoo "$model" --size small -o "$tmp/$model.json"
  ops=$("$bin" info "$tmp/$model.json" --json | sed 's/.*"ops": \([0-9]*\).*/\1/')
  for np in 1 2; do
    start=$(date +%s.%N)
    out=$(ASAN_OPTIONS=detect_leaks=0 "${mpi[@]}" -np "$np" "$bin" place "$tmp/$model.json" \
          --preset v100-pcie --gpus 4 --algo auto --refine-seconds 0 --best-effort 2>/dev/null)
    end=$(date +%s.%N)
    step=$(echo "$out" | sed -n 's/^step time *\([0-9.]*\) \(m\?s\).*/\1 \2/p')
    algo=$(echo "$out" | sed -n 's/^algorithm *//p')
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    printf '| %s | %s | %s | %s | %s | %s |\n' "$model" "$ops" "$np" "$wall" "$step" "$algo"
  done
done

echo
echo "### auto with two refinement streams on 1 and 2 MPI ranks (300 candidates each, no ILP)"
echo
echo "| model | ops | ranks | wall s | step time ms | winner |"
echo "|---|---|---|---|---|---|"
for model in gnmt transformer_xl; do
  "$bin" zoo "$model" --size small -o "$tmp/$model.json"
  ops=$("$bin" info "$tmp/$model.json" --json | sed 's/.*"ops": \([0-9]*\).*/\1/')
  for np in 1 2; do
    start=$(date +%s.%N)
    out=$(ASAN_OPTIONS=detect_leaks=0 "${mpi[@]}" -np "$np" "$bin" place "$tmp/$model.json" \
          --preset v100-pcie --gpus 4 --algo auto --refine-iters 300 \
          --seed 1 --best-effort 2>/dev/null)
    end=$(date +%s.%N)
    step=$(echo "$out" | sed -n 's/^step time *\([0-9.]*\) \(m\?s\).*/\1 \2/p')
    algo=$(echo "$out" | sed -n 's/^algorithm *//p')
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    printf '| %s | %s | %s | %s | %s | %s |\n' "$model" "$ops" "$np" "$wall" "$step" "$algo"
  done
done

echo
echo "### auto on a 1,000,000-op synthetic graph (4 x v100-nvlink, --budget-seconds 120)"
echo
"$bin" zoo synthetic --ops 1000000 --width 64 -o "$tmp/g1m.json"
/usr/bin/time -v "$bin" place "$tmp/g1m.json" --algo auto --budget-seconds 120 --best-effort \
  > "$tmp/1m.out" 2> "$tmp/1m.err" || true
echo '```'
grep -E "^(algorithm|step time|placed in)" "$tmp/1m.out"
grep -E "Elapsed|Maximum resident" "$tmp/1m.err"
echo '```'
