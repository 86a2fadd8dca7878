#!/usr/bin/env bash
# Core speed: load + validate + simulate synthetic layered DAGs (the
# benchmark).  Usage: bash bench/core.sh [BUILD_DIR]  (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" -j2 --target opplace bench_core > /dev/null
tmp=$(mktemp -d)
echo "| ops | edges | load+validate s | bind s | simulate ms (4-GPU round-robin) | transfers | simulate ms (1 device) | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|"
for n in 10000 100000 1000000; do
  "$build/opplace" zoo synthetic --ops "$n" --width 32 -o "$tmp/g$n.json"
  runs=21; [ "$n" -ge 1000000 ] && runs=5
  taskset -c 0 "$build/bench/bench_core" "$tmp/g$n.json" 4 "$runs"
done
rm -rf "$tmp"
