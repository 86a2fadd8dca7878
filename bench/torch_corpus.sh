#!/usr/bin/env bash
# torch_corpus.sh - the third-party PyTorch model corpus (issue 32, item 4): every
# torchvision classification model, 41 timm models, torchaudio (wav2vec2, HuBERT,
# Conformer, Emformer, ConvTasNet, DeepSpeech, WaveRNN, ...) and 48 Hugging Face
# transformers architectures built from small configs with random weights (nothing
# downloaded).  Each model: export (estimate:v100) -> opplace info -> opplace place
# --algo auto --budget-seconds 2 on 4 x V100 -> apply with every device on the CPU ->
# one training step whose loss and gradients equal the unplaced model's.
# A benchmark, not part of the default test run (about 30 min on 2 cores); ctest
# runs a few models of each family (tests/python/test_torch_corpus_small.py).
#
# usage: bash bench/torch_corpus.sh [path/to/opplace] [FILTER] [-- torch_corpus.py options]
#   FILTER: torchvision | timm | torchaudio | transformers | a model name (tv.resnet18,
#           hf.llama, ta.Conformer) or part of one, comma-separated; empty: all
#   PYTHON: the interpreter (default: <repo>/.venv/bin/python, made by
#           scripts/setup-python.sh, else python3; it needs torch 2.x and the model
#           libraries: torchvision, torchaudio, timm, transformers)
#   OUT:    the JSON lines result file (default bench/out/torch_corpus.jsonl)
# The 7B benchmark (a Llama-2-7B-shaped decoder on the meta device, export under
# 2 min and 4 GB): LLAMA7B=1 bash bench/torch_corpus.sh [path/to/opplace] runs
# bench/llama7b.py after the corpus (LLAMA7B=only: the 7B benchmark alone).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
opplace=$(readlink -f "${1:-$here/build/opplace}")
filter=${2:-}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x "$here/.venv/bin/python" ]; then py=$here/.venv/bin/python; else py=python3; fi
fi
out=${OUT:-$here/bench/out/torch_corpus.jsonl}
mkdir -p "$(dirname "$out")"
export OPPLACE=$opplace PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH} HF_HUB_OFFLINE=1 \
       TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1
if [ "${LLAMA7B:-}" != only ]; then
  "$py" "$here/bench/torch_corpus.py" --opplace "$opplace" --filter "$filter" --out "$out" "$@"
fi
if [ -n "${LLAMA7B:-}" ]; then
  echo
  "$py" "$here/bench/llama7b.py" --opplace "$opplace"
fi
