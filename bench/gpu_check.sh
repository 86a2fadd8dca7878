#!/usr/bin/env bash
# gpu_check.sh - issue 31 item 6: real runs against the simulator on a
# machine with a GPU and real cores (the lent GPU machine: one GPU, 16
# cores), in one call:
#   gpu_cpu  cuda:0 + one cpu rank of 8 threads (calibrate --gpus 1; op
#            times exported on each kind and merged)
#   cpu4x4   4 cpu ranks x 4 threads (calibrate --gpus 0)
# each model x the fast placers and auto through bench/fidelity_real.py, one
# model per invocation (results.json gathers them, so a model cut off by the
# deadline leaves the others' rows), most telling first, under one deadline.
# usage: bash bench/gpu_check.sh OUTDIR [SECONDS (default 540)] [STAGE:MODEL,...]
#   (default gpu_cpu:branches,cpu4x4:branches,gpu_cpu:inception,
#   cpu4x4:inception,cpu4x4:transformer; the environment passes through to
#   the ranks, e.g. OMP_WAIT_POLICY=PASSIVE)
#   env: PYTHON (default python3, the one with CUDA torch), OPPLACE (default
#   build/opplace; scripts/bundle-engine.sh makes one for a machine without
#   the engine's Debian packages)
# Writes OUTDIR/machine.txt (what ran, each stage's exit and seconds),
# OUTDIR/{gpu_cpu,cpu4x4}.md (fidelity_real's tables) and .log, and
# OUTDIR/results.tar.gz (results.json, graphs, clusters, placements, runs).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: gpu_check.sh OUTDIR [SECONDS]}
budget=${2:-540}
stages=${3:-gpu_cpu:branches,cpu4x4:branches,gpu_cpu:inception,cpu4x4:inception,cpu4x4:transformer}
py=${PYTHON:-python3}
export OPPLACE=${OPPLACE:-$here/build/opplace}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
deadline=$(( $(date +%s) + budget - 25 ))  # leaves time for the tables and the tarball
{
  date -u
  echo "cores: $(nproc); $(lscpu | sed -n 's/^Model name: *//p')"
  nvidia-smi -L 2>&1
  "$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
  "$OPPLACE" --version
  echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-} stages $stages"
} > "$out/machine.txt" 2>&1

declare -A args=(
  [gpu_cpu]="--ranks 2 --gpus 1 --threads 8 --placers single,expert,m-etf,heft,auto"
  [cpu4x4]="--ranks 4 --gpus 0 --threads 4 --placers single,expert,round-robin,m-topo,m-etf,m-sct,heft,metis,auto"
)

stage() {  # stage NAME MODEL MAX_SECONDS
  local name=$1 model=$2 left=$(( deadline - $(date +%s) ))
  local t=$(( $3 < left ? $3 : left )) s=$(date +%s) rc
  if [ "$t" -lt 20 ]; then
    echo "$name $model: skipped (deadline)" >> "$out/machine.txt"
    return
  fi
  # shellcheck disable=SC2086
  timeout -k 5 "$t" "$py" "$here/bench/fidelity_real.py" ${args[$name]} --models "$model" \
    --steps 10 --seconds 0 --warmup 3 --python "$py" --opplace "$OPPLACE" --out "$out/$name" \
    >> "$out/$name.md" 2>> "$out/$name.log"
  rc=$?
  echo "$name $model: exit $rc, $(( $(date +%s) - s )) s" >> "$out/machine.txt"
}

declare -A limit=([branches]=110 [inception]=150 [transformer]=150)
for sm in ${stages//,/ }; do
  stage "${sm%%:*}" "${sm#*:}" "${limit[${sm#*:}]:-150}"
done
for name in gpu_cpu cpu4x4; do
  if [ -f "$out/$name/results.json" ]; then
    timeout 20 "$py" "$here/bench/fidelity_real.py" ${args[$name]} --report-only \
      --python "$py" --opplace "$OPPLACE" --out "$out/$name" > "$out/$name.md" 2>> "$out/$name.log"
  fi
done
tar -czf "$out/results.tar.gz" -C "$out" --exclude='*.cluster_q*' \
  $(cd "$out" && ls -d gpu_cpu cpu4x4 2>/dev/null)
date -u >> "$out/machine.txt"
