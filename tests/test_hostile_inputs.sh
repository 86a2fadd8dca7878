#!/usr/bin/env bash
# test_hostile_inputs.sh OPPLACE DATA_DIR - giant and hostile inputs fail
# cleanly (issue 10, item 3): exit code 1 with a message, no crash, no
# sanitizer report, and bounded memory (ulimit -v; skipped under ASan, which
# reserves terabytes of address space).
#   - JSON nested 100,000 deep
#   - integers past int64 and sizes past any machine, alone and summed
#   - a long string value (HOSTILE_STRING_MB, default 100): rejected before
#     parsing (strings are capped at 1 MiB), within 12x the file size in memory
#   - a 10^7-op graph streamed through a pipe under a 1 GB limit: exit 1
set -uo pipefail
opplace=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/opplace-hostile.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
asan=0
ldd "$opplace" 2>/dev/null | grep -q libasan && asan=1
fail=0
# expect NAME CODES PATTERN CMD... : exit code in CODES (e.g. "1" or "0 1"),
# first line of output matching PATTERN (empty: anything)
expect() {
  local name=$1 codes=$2 pat=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if ! grep -qw -- "$rc" <<< "$codes" || grep -qE 'runtime error|Sanitizer|Segmentation' <<< "$out" ||
     { [ -n "$pat" ] && ! grep -qE -- "$pat" <<< "$out"; }; then
    echo "FAIL $name: exit $rc (want $codes, /$pat/)"; echo "$out" | tail -3 | cut -c1-300; fail=1
  else
    echo "ok   $name: exit $rc: $(grep -m1 . <<< "$out" | cut -c1-150)"
  fi
}
limited() { # KB CMD...: run under a virtual memory limit unless ASan
  local kb=$1; shift
  if [ $asan -eq 1 ]; then "$@"; else (ulimit -v "$kb"; "$@"); fi
}
head='{"format":"opplace-graph","version":1,'

{ printf '%s"ops":' "$head"; printf '[%.0s' $(seq 100000); printf ']%.0s' $(seq 100000); printf '}'; } > "$tmp/nested.json"
expect "JSON nested 100000 deep" 1 "depth" limited 1000000 "$opplace" info "$tmp/nested.json"
printf '{"a":%s1%s}' "$(printf '{"a":%.0s' $(seq 50000))" "$(printf '}%.0s' $(seq 50000))" > "$tmp/nested_cluster.json"
expect "cluster nested 50000 deep" 1 "" limited 1000000 "$opplace" place "$2/good_graph.json" --cluster "$tmp/nested_cluster.json"

op() { printf '{"name":"%s","time_us":%s,"output_bytes":%s,"param_bytes":%s}' "$@"; }
printf '%s"ops":[%s]}' "$head" "$(op a 1 18446744073709551616 0)" > "$tmp/o1.json"
expect "output_bytes past uint64" 1 "too big|too large" "$opplace" info "$tmp/o1.json"
printf '%s"ops":[%s]}' "$head" "$(op a 1 0 9223372036854775807)" > "$tmp/o2.json"
expect "param_bytes at INT64_MAX" 1 "too large" "$opplace" info "$tmp/o2.json"
printf '%s"ops":[%s]}' "$head" "$(op a 1e308 1e300 0)" > "$tmp/o3.json"
expect "1e300 bytes, 1e308 us" 1 "too large|from 0 to 1e\+12" "$opplace" info "$tmp/o3.json"
printf '%s"ops":[%s]}' "$head" "$(op a -1 0 0)" > "$tmp/o4.json"
expect "negative time" 1 "from 0 to" "$opplace" info "$tmp/o4.json"
# sizes that each pass (2^50 is the per-value cap) but add up past 2^60
ops=""; for i in $(seq 0 1099); do ops="$ops${ops:+,}$(op "p$i" 1 1125899906842624 1125899906842624)"; done
printf '%s"ops":[%s],"edges":[{"src":"p0","dst":"p1"}]}' "$head" "$ops" > "$tmp/o5.json"
# each size passes on its own; the graph's totals are bounded (2^60) so no
# sum taken later can overflow
expect "sizes whose sums overflow: info" 1 "2\\^60" "$opplace" info "$tmp/o5.json"
expect "sizes whose sums overflow: place" 1 "2\\^60" "$opplace" place "$tmp/o5.json" --algo m-etf --quiet
printf '{"format":"opplace-cluster","version":1,"devices":[{"name":"g","kind":"gpu","memory_bytes":1e40,"speed":1}]}' > "$tmp/c1.json"
expect "cluster memory 1e40 bytes" 1 "" "$opplace" place "$2/good_graph.json" --cluster "$tmp/c1.json"
printf '{"format":"opplace-cluster","version":1,"devices":[{"name":"g","kind":"gpu","memory_bytes":1,"speed":1e-320}]}' > "$tmp/c2.json"
expect "cluster speed 1e-320" "1 3" "" "$opplace" place "$2/good_graph.json" --cluster "$tmp/c2.json"

mb=${HOSTILE_STRING_MB:-100}
{ printf '%s"ops":[{"name":"' "$head"; head -c $((mb << 20)) /dev/zero | tr '\0' x; printf '","time_us":1}]}'; } > "$tmp/long.json"
expect "a ${mb} MB string value" 1 "up to 1048576 bytes" limited $(( (mb << 10) * 12 + 200000 )) "$opplace" info "$tmp/long.json"

if [ $asan -eq 1 ]; then
  echo "skip 10^7-op graph under a memory limit (ASan build)"
else
  gen() { awk 'BEGIN{printf "{\"format\":\"opplace-graph\",\"version\":1,\"ops\":[";
    for(i=0;i<10000000;i++) printf "%s{\"name\":\"o%d\",\"time_us\":1}", (i?",":""), i; printf "]}"}'; }
  expect "10^7-op graph in 1 GB" 1 "" limited 1000000 bash -c "$(declare -f gen); gen | '$opplace' info /dev/stdin"
fi
exit $fail
