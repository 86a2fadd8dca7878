#!/usr/bin/env bash
# test_fuzz_regressions.sh OPPLACE DATA_DIR - replay every input the fuzzers
# (bench/fuzz.sh) ever crashed on, kept in DATA_DIR/fuzz-regressions/<target>/,
# through the command that reads that kind of file.  Each must end with exit
# code 0 or 1 (read, or rejected with a message), never a signal, a
# sanitizer report or another code.
set -uo pipefail
opplace=$1 data=$2
dir="$data/fuzz-regressions"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/opplace-fuzzreg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for f in "$dir"/*/*; do
  [ -f "$f" ] || continue
  target=$(basename "$(dirname "$f")")
  case $target in
    graph) cmd=("$opplace" info "$f") ;;
    cluster) cmd=("$opplace" place "$data/good_graph.json" --cluster "$f" --algo single --quiet) ;;
    placement) cmd=("$opplace" simulate "$data/good_graph.json" --cluster "$data/good_cluster.json"
                    --placement "$f") ;;
    onnx) cmd=("$opplace" import "$f" -o "$tmp/out.json") ;;
    *) echo "FAIL unknown target directory $target"; fail=1; continue ;;
  esac
  out=$(timeout 60 "${cmd[@]}" 2>&1)
  rc=$?
  n=$((n + 1))
  if { [ $rc -ne 0 ] && [ $rc -ne 1 ]; } || grep -qE 'runtime error|Sanitizer' <<< "$out"; then
    echo "FAIL $target/$(basename "$f"): exit $rc"; echo "$out" | tail -5; fail=1
  else
    echo "ok   $target/$(basename "$f"): exit $rc: $(head -1 <<< "$out" | cut -c1-120)"
  fi
done
echo "$n inputs replayed"
exit $fail
