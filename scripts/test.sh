#!/usr/bin/env bash
# Second command of the README: build and run the whole test suite, twice:
# an optimized build, then one under AddressSanitizer + UndefinedBehaviorSanitizer;
# then build the library and the command in every build type with gcc and clang
# (scripts/build-matrix.sh; MATRIX_TESTS=1 builds their tests too, OPPLACE_MATRIX=0
# skips it).  Warnings are errors here (OPPLACE_WERROR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/setup-python.sh   # .venv: PyTorch 2.x for the Python tests (quick when done)
jobs=$(nproc)
for variant in build build-asan; do
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPPLACE_WERROR=ON)
  [ "$variant" = build-asan ] && flags+=(-DOPPLACE_SANITIZE=ON)
  echo "== $variant =="
  cmake -S . -B "$variant" "${flags[@]}" > /dev/null
  cmake --build "$variant" -j"$jobs"
  (cd "$variant" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure --timeout 900)
done
if [ "${OPPLACE_MATRIX:-1}" != 0 ]; then
  echo "== build matrix =="
  MATRIX_TESTS=${MATRIX_TESTS:-0} bash scripts/build-matrix.sh
fi
