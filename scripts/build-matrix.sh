#!/usr/bin/env bash
# The build-type matrix of CI (called by scripts/test.sh): Debug, Release,
# RelWithDebInfo and MinSizeRel with gcc and clang, warnings as errors
# (-DOPPLACE_WERROR=ON), each in build-matrix/COMPILER-TYPE.  Builds only;
# the tests run in test.sh's two builds (gcc RelWithDebInfo, plain and
# ASan+UBSan), which is why that pair is left out here.
#   MATRIX_TESTS=0   build the library and the command only, not the tests
#                    (about 4 min instead of 10 on 2 cores)
#   MATRIX_CC="gcc clang"  MATRIX_TYPES="Debug Release ..."  narrow it down
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
tests=${MATRIX_TESTS:-1}
compilers=${MATRIX_CC:-"gcc clang"}
types=${MATRIX_TYPES:-"Debug Release RelWithDebInfo MinSizeRel"}
on=OFF
[ "$tests" = 1 ] && on=ON
status=0
mkdir -p build-matrix
for cc in $compilers; do
  if ! command -v "$cc" > /dev/null; then
    echo "build-matrix: WARNING: $cc is not installed, its builds are skipped (apt-get install $cc)"
    continue
  fi
  for type in $types; do
    [ "$cc" = gcc ] && [ "$type" = RelWithDebInfo ] && [ "$tests" = 1 ] && continue
    dir=build-matrix/$cc-$type
    start=$(date +%s)
    if CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DOPPLACE_WERROR=ON \
         -DOPPLACE_TESTS=$on > "$dir.log" 2>&1 &&
       cmake --build "$dir" -j"$jobs" >> "$dir.log" 2>&1; then
      echo "build-matrix: $cc $type ok ($(($(date +%s) - start)) s)"
    else
      echo "build-matrix: $cc $type FAILED ($(($(date +%s) - start)) s); the end of $dir.log:"
      tail -30 "$dir.log"
      status=1
    fi
  done
done
exit $status
