#!/usr/bin/env bash
# Run every Criterion test executable under valgrind memcheck (the rule
# "all tests pass under ASan/UBSan and valgrind").  Criterion runs each test
# in a child process, so valgrind follows children and writes one log per
# process; a test program is clean when it passes and no log reports an
# error or a definite/indirect leak.  Programs the tests start from /bin,
# /usr/bin or /usr/lib (bash, python3, chromium) are not traced.
# Usage: bash bench/valgrind.sh [BUILD_DIR] [TEST...]   (default: build, all)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  for t in "$build"/tests/test_*; do [ -x "$t" ] && tests+=("$(basename "$t")"); done
fi
logs=$(mktemp -d)
echo "| test | result | valgrind errors | definitely/indirectly lost bytes | seconds |"
echo "|---|---|---|---|---|"
bad=0
for t in "${tests[@]}"; do
  mkdir -p "$logs/$t"
  start=$(date +%s)
  # follow Criterion's workers and opplace itself, not the shells and tools
  # some tests start (their leaks are not ours)
  out=$(valgrind -q --trace-children=yes --trace-children-skip='/bin/*,/usr/bin/*,/usr/lib/*' \
        --leak-check=full --show-leak-kinds=definite,indirect \
        --log-file="$logs/$t/vg.%p" "$build/tests/$t" --jobs 1 2>&1 | tail -1)
  secs=$(( $(date +%s) - start ))
  errs=$(cat "$logs/$t"/vg.* 2>/dev/null |
         grep -cE "^==[0-9]+== (Invalid|Conditional|Mismatched|Source and destination|Use of uninitialised|Syscall param)")
  lost=$(cat "$logs/$t"/vg.* 2>/dev/null | grep -E "(definitely|indirectly) lost in" | awk '{s += $2} END {print s + 0}')
  result=$(echo "$out" | sed 's/.*Synthesis: //; s/ | /, /g')
  echo "| $t | $result | $errs | $lost | $secs |"
  { [ "$errs" -eq 0 ] && [ "$lost" -eq 0 ] && echo "$out" | grep -q "Failing: 0 | Crashing: 0"; } || bad=1
done
rm -rf "$logs"
exit $bad
