#!/usr/bin/env bash
# test_bundle.sh OPPLACE DATA_DIR - scripts/bundle-engine.sh: the bundled
# wrapper prints what the binary prints, loads the bundle's copies of the
# engine's libraries (not the system's), and leaves glibc to the machine.
# (grep -q reads here-strings, never a pipe: an early exit of grep -q kills
# the writer with SIGPIPE, which pipefail reports as a failure.)
set -euo pipefail
opplace=$1
data=$2
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$root/scripts/bundle-engine.sh" "$tmp/b" "$opplace" > /dev/null
fail=0
args=(simulate "$data/good_graph.json" --placement "$data/good_placement.json"
      --cluster "$data/good_cluster.json" --json)
if [ "$("$tmp/b/opplace" "${args[@]}")" = "$("$opplace" "${args[@]}")" ]; then
  echo "ok   the bundle's simulate prints the binary's"
else
  echo "FAIL the bundle's simulate differs from the binary's"; fail=1
fi
loaded=$(LD_DEBUG=libs "$tmp/b/opplace" --help 2>&1 > /dev/null | grep "calling init:" || true)
if grep -q "calling init: $tmp/b/lib/libjansson" <<< "$loaded"; then
  echo "ok   jansson loads from the bundle"
else
  echo "FAIL jansson does not load from the bundle: $loaded"; fail=1
fi
if grep -Eq '^(libc\.so|libm\.so|ld-linux)' <<< "$(ls "$tmp/b/lib")"; then
  echo "FAIL glibc in the bundle: $(ls "$tmp/b/lib")"; fail=1
else
  echo "ok   glibc left to the machine ($(ls "$tmp/b/lib" | wc -l) files bundled)"
fi
exit $fail
