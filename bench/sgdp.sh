#!/usr/bin/env bash
# bench/sgdp.sh - SGDP (papers/sgdp.txt) on the zoo, 2 x v100-nvlink (prints Markdown):
#   1. SGDP-one (a fresh policy trained on each graph for $SGDP_BUDGET s)
#      against expert, m-etf and celeritas (whichever are registered), as the
#      paper's Table 1 on RNNLM-2, GNMT-2, Transformer-XL-2, Inception-V3, WaveNet;
#   2. generalisation: for each seed in $SEEDS, SGDP-one on the held-out
#      family ($HELD_OUT) with that seed, batch training on the other
#      families (minus $EXCLUDE: validation runs) for $TRAIN_BUDGET s (or
#      $TRAIN_ITERS iterations), then zero-shot placement of the held-out
#      family: the default command (policy-guided search) and fine-tuned
#      ($FINETUNE iterations); each against an untrained policy of the same
#      seed placed the same way (the control: what the trained weights add);
#   3. training throughput (simulated rollouts per second);
#   4. MPI: the same SGDP-one training (--slots 2, fixed iterations) on 1 and
#      2 ranks: rollouts/s and whether the results are identical.
# SGDP runs with its defaults, i.e. with the reference/warm start that goes
# beyond the paper (src/placers/sgdp/sgdp_warm.c); the reference column names the
# heuristic it started from.
# Total time about 5 x SGDP_BUDGET + 3 x TRAIN_BUDGET + fine-tuning (< 25 min
# with the defaults).  Baselines run with --best-effort so an OOM placement
# still reports a step time (marked *).
# PARTS (default "one gen mpi") picks the parts: "gen" trains SGDP-one on
# $HELD_OUT per seed for the comparison (unless HELD_ONE lists its step
# times in ms, one per seed).  TRAIN_ITERS and ONE_ITERS fix the training
# lengths in iterations, so the weights do not depend on the machine's load.
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
ONE_ITERS=${ONE_ITERS:-}       # set: SGDP-one in the gen part runs this many iterations (not SGDP_BUDGET s)
EXCLUDE=${EXCLUDE:-}           # families also left out of batch training (validation runs)
WEIGHTS_DIR=${WEIGHTS_DIR:-}   # reuse batch$s.bin from here (trained by the same command)
# what `place --algo sgdp --weights W` does by default (src/placers/sgdp/sgdp.c)
DEFAULT_ROUNDS=20   # guided search
DEFAULT_TOP_K=64
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

for m in $MODELS; do "$BIN" zoo "$m" --size small -o "$TMP/$m.json"; done

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
# training families: the zoo's five minus the held-out one and $EXCLUDE,
# plus a second size of rnnlm and gnmt (the paper perturbs layers/sizes)
# when their family is trained on
TRAIN=""; TRAIN_NAMES=""
for m in $MODELS rnnlm3 gnmt3; do
  fam=$m; case $m in rnnlm3) fam=rnnlm;; gnmt3) fam=gnmt;; esac
  [ "$fam" = "$HELD_OUT" ] && continue
  case " $EXCLUDE " in *" $fam "*) continue;; esac
  TRAIN="$TRAIN $TMP/$m.json"; TRAIN_NAMES="$TRAIN_NAMES $m"
done
"$BIN" zoo rnnlm --size small --layers 3 --hidden 1024 -o "$TMP/rnnlm3.json"
"$BIN" zoo gnmt --size small --layers 3 -o "$TMP/gnmt3.json"
g="$TMP/$HELD_OUT.json"
if [ -n "$TRAIN_ITERS" ]; then LIMIT="--iterations $TRAIN_ITERS"; LIMIT_TXT="$TRAIN_ITERS iterations"
else LIMIT="--budget-seconds $TRAIN_BUDGET"; LIMIT_TXT="${TRAIN_BUDGET} s"; fi
if [ -n "$ONE_ITERS" ]; then ONE_LIMIT="--iterations $ONE_ITERS"; else ONE_LIMIT="--budget-seconds $SGDP_BUDGET"; fi
echo "Batch training on${TRAIN_NAMES} for ${LIMIT_TXT} per seed; SGDP-one on ${HELD_OUT}: ${ONE_LIMIT#--} per seed."
echo
# per seed s: SGDP-one on the held-out graph (unless HELD_ONE lists its step
# times, ms, one per seed), batch training with --seed s (unless
# $WEIGHTS_DIR/batch$s.bin exists, made by the same command), and an
# untrained policy of seed s (lr 0, no cloning: the initial weights) as the
# control; every placement of the held-out graph runs with --seed s
declare -A V
i=0
for s in $SEEDS; do
  i=$((i + 1))
  if [ -n "${HELD_ONE:-}" ]; then V[one,$s]=$(echo $HELD_ONE | awk -v i=$i '{print $i}')
  else
    out=$("$BIN" train sgdp --graphs "$g" $CL --weights "$TMP/one$s.bin" $ONE_LIMIT --seed "$s" --quiet)
    V[one,$s]=$(echo "$out" | awk 'NR==2 {print $3}')
  fi
  if [ -n "$WEIGHTS_DIR" ] && [ -f "$WEIGHTS_DIR/batch$s.bin" ]; then
    cp "$WEIGHTS_DIR/batch$s.bin" "$TMP/batch$s.bin"
    echo "Batch training (seed $s): weights reused from $WEIGHTS_DIR/batch$s.bin."
  else
    out=$("$BIN" train sgdp --graphs $TRAIN $CL --weights "$TMP/batch$s.bin" $LIMIT --seed "$s" --quiet)
    echo "Batch training (seed $s):"
    echo
    echo '```'
    echo "$out"
    echo '```'
  fi
  echo
  "$BIN" train sgdp --graphs "$TMP/wavenet.json" $CL --weights "$TMP/untrained$s.bin" --iterations 0 --seed "$s" --quiet > /dev/null
  pl() { "$BIN" place "$g" $CL --algo sgdp --json --quiet --best-effort --seed "$s" "$@" 2>/dev/null | step || echo "fail"; }
  t0=$(date +%s.%N)
  V[zsG,$s]=$(pl --weights "$TMP/batch$s.bin")
  t1=$(date +%s.%N)
  V[wall,$s]=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
  V[unG,$s]=$(pl --weights "$TMP/untrained$s.bin")
  V[ft,$s]=$(pl --weights "$TMP/batch$s.bin" --finetune "$FINETUNE")
done
printf "| %s (held out), ms | " "$HELD_OUT"; for s in $SEEDS; do printf "seed %s | " "$s"; done; echo "mean |"
printf "|---|"; for s in $SEEDS; do printf -- "---:|"; done; echo "---:|"
row() { # key label: values, then their mean
  local vals="" v
  printf "| %s |" "$2"
  for s in $SEEDS; do v=${V[$1,$s]}; vals="$vals ${v%\*}"; printf " %s |" "$v"; done
  python3 -c "v=[float(x) for x in '$vals'.split() if x!='fail']; print(f' {sum(v)/len(v):.2f} |')"
}
rel() { # key label: per seed vs that seed's SGDP-one, then the mean's vs the mean
  local vals="" ones="" v
  printf "| %s vs SGDP-one |" "$2"
  for s in $SEEDS; do
    v=${V[$1,$s]}; v=${v%\*}; vals="$vals $v"; ones="$ones ${V[one,$s]}"
    python3 -c "print(f' {100*($v/${V[one,$s]}-1):+.1f} % |', end='')"
  done
  python3 -c "v=[float(x) for x in '$vals'.split()]; o=[float(x) for x in '$ones'.split()]; print(f' {100*(sum(v)/sum(o)-1):+.1f} % |')"
}
row one "SGDP-one (${ONE_LIMIT#--})"
row zsG "zero-shot, default (guided search: ${DEFAULT_ROUNDS} rounds, top ${DEFAULT_TOP_K} moves)"
row unG "untrained policy, same command (control)"
row ft "fine-tuned, ${FINETUNE} PPO iterations (then the guided search)"
rel zsG "zero-shot default"
rel unG "untrained control"
rel ft "fine-tuned"
row wall "zero-shot wall time, s (whole command)"
echo
printf "Baselines:"; for a in $BASELINES; do printf " %s %s ms;" "$a" "$(place "$g" "$a")"; done; echo
echo
fi

has mpi || exit 0
echo "### MPI: SGDP-one training on 1 and 2 ranks"
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
