#!/usr/bin/env bash
# fuzz.sh [SECONDS_EACH] [TARGET...] - run the libFuzzer harnesses of fuzz/.
#
#   bash bench/fuzz.sh 600                 # >= 10 minutes each
#   bash bench/fuzz.sh 60 graph cluster    # a quick look at two readers
#
# Builds libopplace with clang, -fsanitize=fuzzer-no-link,address,undefined
# (in $FUZZ_BUILD, default build-fuzz/), links each fuzz/fuzz_<target>.c
# with -fsanitize=fuzzer,address,undefined, seeds a corpus from tests/data
# (good files, the bad-input catalogue, earlier crashes, ONNX examples when
# python3-onnx is installed), and runs each target for SECONDS_EACH seconds
# (default 60) on one core.  Prints a Markdown table: target, seconds,
# inputs tried (libFuzzer's execution count), corpus size, crashes.  A crash
# input lands in $FUZZ_BUILD/artifacts/<target>/; copy it to
# tests/data/fuzz-regressions/<target>/ once fixed, where
# tests/test_fuzz_regressions.sh replays it in every test run.
# Not part of the default tests.  Needs clang (Debian: apt-get install clang;
# this script installs it when missing and it runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(graph cluster placement onnx weights)
build=${FUZZ_BUILD:-$root/build-fuzz}

if ! command -v clang > /dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang
  else
    echo "fuzz.sh: clang is needed (sudo apt-get install clang)"; exit 1
  fi
fi

# FUZZ_SAN_EXTRA: extra flags, e.g. -fno-sanitize=nonnull-attribute to look
# past a known finding while its fix is pending.
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer ${FUZZ_SAN_EXTRA:-}"
# The project builds with gcc -Werror; clang warns about a few things gcc
# does not, which must not stop a fuzz run (the -Wno-error=X flags outlast
# the project's later -Werror).
nowerr="-Wno-error=sometimes-uninitialized -Wno-error=uninitialized -Wno-error=unused-but-set-variable -Wno-error=unused-function -Wno-error=conditional-uninitialized"
echo "fuzz.sh: building libopplace with clang in $build" >&2
cmake -S "$root" -B "$build/lib" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DOPPLACE_TESTS=OFF -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link $san $nowerr" > /dev/null
cmake --build "$build/lib" --target opplace_lib -j"$(nproc)" > "$build/lib-build.log" 2>&1 ||
  { tail -30 "$build/lib-build.log"; exit 1; }
deps=$(pkg-config --libs jansson openblas cbc libprotobuf-c)

onnx_examples=$(python3 -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "examples"))' 2>/dev/null || true)

seed_corpus() { # target dir
  local t=$1 dir=$2
  mkdir -p "$dir"
  case $t in
    graph) cp tests/data/good_graph.json tests/data/bad/graph_*.json "$dir"/ 2>/dev/null || true ;;
    cluster) cp tests/data/good_cluster.json tests/data/bad/cluster_*.json "$dir"/ 2>/dev/null || true ;;
    placement) cp tests/data/good_placement.json tests/data/bad/placement_*.json "$dir"/ 2>/dev/null || true ;;
    weights) python3 - "$dir" <<'PY' || true
import struct, sys, zlib
def entry(name, rows, cols, vals):
    b = name.encode()
    return struct.pack('<I', len(b)) + b + struct.pack('<II', rows, cols) + b''.join(struct.pack('<d', v) for v in vals)
body = b'OPNN' + struct.pack('<II', 1, 2) + entry('sgdp.arch', 1, 4, [1, 2, 3, 4]) + entry('w', 2, 2, [0.5, -1, 2, 0])
open(sys.argv[1] + '/valid.bin', 'wb').write(body + struct.pack('<I', zlib.crc32(body)))
PY
      ;;
    onnx) [ -n "$onnx_examples" ] && find "$onnx_examples" -name '*.onnx' -size -256k \
            -exec cp {} "$dir"/ \; 2>/dev/null || true ;;
  esac
  [ -d "tests/data/fuzz-regressions/$t" ] && cp tests/data/fuzz-regressions/"$t"/* "$dir"/ 2>/dev/null || true
}

echo "| target | seconds | inputs tried | exec/s | corpus files | crashes |"
echo "|---|---:|---:|---:|---:|---:|"
status=0
for t in "${targets[@]}"; do
  src=fuzz/fuzz_$t.c
  [ -f "$src" ] || { echo "fuzz.sh: no $src" >&2; exit 2; }
  bin=$build/fuzz_$t
  clang -O1 -g -fsanitize=fuzzer $san -I include -I src -I "$build/lib/generated/onnx" \
    -DOPPLACE_TEST_DATA="\"$root/tests/data\"" "$src" "$build/lib/libopplace.a" \
    $deps -lmetis -lm -o "$bin"
  corpus=$build/corpus/$t artifacts=$build/artifacts/$t/
  seed_corpus "$t" "$corpus"
  mkdir -p "$artifacts"
  log=$build/fuzz_$t.log
  start=$(date +%s)
  set +e
  "$bin" "$corpus" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$artifacts" -print_final_stats=1 > "$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  eps=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crashes=$(find "$artifacts" -type f | wc -l)
  echo "| $t | $took | ${runs:-?} | ${eps:-?} | $(find "$corpus" -type f | wc -l) | $crashes |"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    echo "fuzz.sh: $t stopped with exit code $rc; see $log and $artifacts" >&2
    grep -m3 -E 'ERROR|SUMMARY' "$log" >&2 || true
  fi
done
exit $status
