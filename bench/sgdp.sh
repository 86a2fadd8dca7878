#!/usr/bin/env bash
# bench/sgdp.sh - SGDP (papers/sgdp.txt) on the zoo, 2 x v100-nvlink (prints Markdown):
#   1. SGDP-one (a fresh policy trained on each graph for $SGDP_BUDGET s)
#      against expert, m-etf and celeritas (whichever are registered), as the
#      paper's Table 1 on RNNLM-2, GNMT-2, Transformer-XL-2, Inception-V3, WaveNet;
#   2. generalisation: for each seed in $SEEDS, batch training on the other
#      families for $TRAIN_BUDGET s, then zero-shot (the default command,
#      1 round, and the uniform exploration floor instead of calibrated
#      proposals) and fine-tuned ($FINETUNE iterations) placement of the
#      held-out family ($HELD_OUT), against SGDP-one on it (the same run,
#      seed $SEED) and against an untrained policy of the same seed placed
#      the same way (the control: what the trained weights add);
#   3. training throughput (simulated rollouts per second);
#   4. MPI: the same SGDP-one training (--slots 2, fixed iterations) on 1 and
#      2 ranks: rollouts/s and whether the results are identical.
# SGDP runs with its defaults, i.e. with the reference/warm start that goes
# beyond the paper (src/learn/sgdp_warm.c); the reference column names the
# heuristic it started from.
# Total time about 5 x SGDP_BUDGET + 3 x TRAIN_BUDGET + fine-tuning (< 25 min
# with the defaults).  Baselines run with --best-effort so an OOM placement
# still reports a step time (marked *).
# PARTS (default "one gen mpi") picks the parts: "gen" alone also trains
# SGDP-one on $HELD_OUT for the comparison (unless HELD_ONE gives its step
# time in ms).  TRAIN_ITERS fixes batch training's length in iterations, so
# its weights do not depend on the machine's load.
# usage: bash bench/sgdp.sh [path/to/opplace]
set -euo pipefail
BIN=${1:-./build/opplace}
SGDP_BUDGET=${SGDP_BUDGET:-120}
TRAIN_BUDGET=${TRAIN_BUDGET:-180}
FINETUNE=${FINETUNE:-20}
HELD_OUT=${HELD_OUT:-transformer_xl}
SEED=${SEED:-1}
SEEDS=${SEEDS:-1 2 3}
TRAIN_ITERS=${TRAIN_ITERS:-}   # set: batch training runs this many iterations (not TRAIN_BUDGET s)
# what `place --algo sgdp --weights W` does by default (src/placers/sgdp.c)
DEFAULT_ROUNDS=10
DEFAULT_MOVES=2
PARTS=${PARTS:-one gen mpi}
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
MODELS="rnnlm gnmt transformer_xl inception_v3 wavenet"
CL="--preset v100-nvlink --gpus 2"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BASELINES=""
for a in expert m-etf celeritas; do
  if "$BIN" algos | awk '{print $1}' | grep -qx "$a"; then BASELINES="$BASELINES $a"; fi
done

# step time (ms) from `place --json`, "*" appended when out of memory
step() {
  python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"{d['step_time_us']/1000:.2f}{'*' if d.get('oom') else ''}\")"
}
place() { # graph algo [options...]
  local g=$1 a=$2; shift 2
  "$BIN" place "$g" $CL --algo "$a" --json --quiet --best-effort --seed "$SEED" "$@" 2>/dev/null | step || echo "fail"
}

for m in $MODELS; do "$BIN" zoo "$m" -o "$TMP/$m.json"; done

# SGDP-one on graph $1: sets ONE_BEST, ONE_REF, ONE_IT, ONE_RPS, ONE_WALL
sgdp_one() {
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$("$BIN" train sgdp --graphs "$1" $CL --weights "$TMP/one-$(basename "$1" .json).bin" --budget-seconds "$SGDP_BUDGET" --seed "$SEED" --quiet)
  t1=$(date +%s.%N)
  ONE_BEST=$(echo "$out" | awk 'NR==2 {print $3}')
  ONE_REF=$(echo "$out" | awk '/^reference/ {print $3, $4}')
  ONE_IT=$(echo "$out" | awk '/^trained/ {print $2}')
  ONE_RPS=$(echo "$out" | awk '/^trained/ {gsub(/\(/,""); print $10}')
  ONE_WALL=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
}

if has one; then
echo "### SGDP-one vs baselines: simulated step time (ms), 2 x v100-nvlink"
echo
echo "SGDP-one: a fresh policy trained on the graph alone for ${SGDP_BUDGET} s (seed $SEED), best placement seen."
echo
printf "| model | ops | lower bound |"; for a in $BASELINES; do printf " %s |" "$a"; done; echo " reference | sgdp-one | vs expert | iterations | rollouts/s |"
printf "|---|---:|---:|"; for a in $BASELINES; do printf -- "---:|"; done; echo "---|---:|---:|---:|---:|"
for m in $MODELS; do
  g="$TMP/$m.json"
  ops=$("$BIN" info "$g" | awk '/^ops/ {print $4}')
  printf "| %s | %s |" "$m" "$ops"
  # lower bound as printed by place (same for every algorithm)
  lb=$("$BIN" place "$g" $CL --algo round-robin --quiet 2>/dev/null | awk '/^step time/ {gsub(/[(,]/,""); print $7, $8}')
  printf " %s |" "$lb"
  ex=""
  for a in $BASELINES; do v=$(place "$g" "$a"); [ "$a" = expert ] && ex=$v; printf " %s |" "$v"; done
  sgdp_one "$g"
  best=$ONE_BEST
  [ "$m" = "$HELD_OUT" ] && HELD_ONE=$best
  vs=$(python3 -c "e='$ex'.rstrip('*'); print(f'{100*($best/float(e)-1):+.1f} %' if e and e!='fail' else '-')")
  printf " %s ms | %s | %s | %s | %s |\n" "$ONE_REF" "$best" "$vs" "$ONE_IT" "$ONE_RPS"
done
echo
fi

if has gen; then
echo "### Generalisation: held-out family ${HELD_OUT}"
echo
TRAIN=""
for m in $MODELS; do
  [ "$m" = "$HELD_OUT" ] && continue
  TRAIN="$TRAIN $TMP/$m.json"
done
# augment: a second size of the training families (the paper perturbs layers/sizes)
"$BIN" zoo rnnlm --layers 3 --hidden 1024 -o "$TMP/rnnlm3.json"; TRAIN="$TRAIN $TMP/rnnlm3.json"
"$BIN" zoo gnmt --layers 3 -o "$TMP/gnmt3.json"; TRAIN="$TRAIN $TMP/gnmt3.json"
g="$TMP/$HELD_OUT.json"
if [ -z "${HELD_ONE:-}" ]; then sgdp_one "$g"; HELD_ONE=$ONE_BEST; HELD_WALL=$ONE_WALL; HELD_IT=$ONE_IT; fi
# per seed s: batch training with --seed s, and an untrained policy of seed s
# (lr 0, no cloning: the initial weights) as the control; every placement
# of the held-out graph runs with --seed s
declare -A V
for s in $SEEDS; do
  if [ -n "$TRAIN_ITERS" ]; then LIMIT="--iterations $TRAIN_ITERS"; LIMIT_TXT="$TRAIN_ITERS iterations"
  else LIMIT="--budget-seconds $TRAIN_BUDGET"; LIMIT_TXT="${TRAIN_BUDGET} s"; fi
  out=$("$BIN" train sgdp --graphs $TRAIN $CL --weights "$TMP/batch$s.bin" $LIMIT --seed "$s" --quiet)
  echo "Batch training (seed $s) on$(for t in $TRAIN; do printf ' %s' "$(basename "$t" .json)"; done) for ${LIMIT_TXT}:"
  echo
  echo '```'
  echo "$out"
  echo '```'
  echo
  "$BIN" train sgdp --graphs "$TMP/wavenet.json" $CL --weights "$TMP/untrained$s.bin" --iterations 1 --samples 1 --lr 0 --warm-start 0 --seed "$s" --quiet > /dev/null
  pl() { "$BIN" place "$g" $CL --algo sgdp --json --quiet --best-effort --seed "$s" "$@" 2>/dev/null | step || echo "fail"; }
  V[zs1,$s]=$(pl --weights "$TMP/batch$s.bin" --rounds 1)
  V[zsR,$s]=$(pl --weights "$TMP/batch$s.bin")
  V[ft,$s]=$(pl --weights "$TMP/batch$s.bin" --finetune "$FINETUNE")
  V[un1,$s]=$(pl --weights "$TMP/untrained$s.bin" --rounds 1)
  V[unR,$s]=$(pl --weights "$TMP/untrained$s.bin")
  V[zsU,$s]=$(pl --weights "$TMP/batch$s.bin" --moves 0)
  V[unU,$s]=$(pl --weights "$TMP/untrained$s.bin" --moves 0)
done
printf "| %s (held out), ms | " "$HELD_OUT"; for s in $SEEDS; do printf "seed %s | " "$s"; done; echo "mean | vs SGDP-one ($HELD_ONE) |"
printf "|---|"; for s in $SEEDS; do printf -- "---:|"; done; echo "---:|---:|"
row() { # key label
  local vals="" v
  printf "| %s |" "$2"
  for s in $SEEDS; do v=${V[$1,$s]}; vals="$vals ${v%\*}"; printf " %s |" "$v"; done
  python3 -c "import sys; v=[float(x) for x in '$vals'.split() if x!='fail']; m=sum(v)/len(v); print(f' {m:.2f} | {100*(m/$HELD_ONE-1):+.1f} % (worst {100*(max(v)/$HELD_ONE-1):+.1f} %) |')"
}
row zsR "zero-shot, default (${DEFAULT_ROUNDS} rounds, calibrated ${DEFAULT_MOVES} moves)"
row unR "untrained policy, same command (control)"
row zs1 "zero-shot, 1 round"
row un1 "untrained policy, 1 round (control)"
row zsU "zero-shot, ${DEFAULT_ROUNDS} rounds, --moves 0 (uniform exploration floor)"
row unU "untrained policy, ${DEFAULT_ROUNDS} rounds, --moves 0"
row ft "fine-tuned, ${FINETUNE} PPO iterations (then ${DEFAULT_ROUNDS} rounds)"
echo
[ -n "${HELD_WALL:-}" ] && echo "SGDP-one on ${HELD_OUT}: ${HELD_ONE} ms in ${SGDP_BUDGET} s (${HELD_IT} iterations, seed ${SEED}, ${HELD_WALL} s wall)."
printf "Baselines:"; for a in $BASELINES; do printf " %s %s ms;" "$a" "$(place "$g" "$a")"; done; echo
echo
fi

has mpi || exit 0
echo "### MPI: SGDP-one training on 1 and 2 ranks (issue 9)"
echo
if ! command -v mpirun > /dev/null; then
  echo "(mpirun not installed: skipped)"
  exit 0
fi
MPI_MODEL=${MPI_MODEL:-gnmt}
MPI_ITERS=${MPI_ITERS:-20}
export OMPI_MCA_btl_vader_single_copy_mechanism=none
echo "\`opplace train sgdp --graphs $MPI_MODEL --slots 2 --iterations $MPI_ITERS\` (2 rollout batches of 33 per iteration):"
echo
echo "| ranks | best step | iterations | wall s | rollouts/s |"
echo "|---:|---:|---:|---:|---:|"
for np in 1 2; do
  t0=$(date +%s.%N)
  out=$(mpirun --allow-run-as-root --oversubscribe -np $np "$BIN" train sgdp --graphs "$TMP/$MPI_MODEL.json" $CL \
        --weights "$TMP/mpi$np.bin" --slots 2 --iterations "$MPI_ITERS" --seed "$SEED" --quiet)
  t1=$(date +%s.%N)
  best=$(echo "$out" | awk 'NR==2 {print $3}')
  it=$(echo "$out" | awk '/^trained/ {print $2}')
  rps=$(echo "$out" | awk '/^trained/ {gsub(/\(/,""); print $10}')
  printf "| %s | %s ms | %s | %.1f | %s |\n" "$np" "$best" "$it" "$(python3 -c "print($t1 - $t0)")" "$rps"
done
if cmp -s "$TMP/mpi1.bin" "$TMP/mpi2.bin"; then echo; echo "Weights after training: identical bytes for 1 and 2 ranks."
else echo; echo "Weights after training: DIFFER between 1 and 2 ranks."; fi
