#!/usr/bin/env bash
# check_install.sh BUILD_DIR CC DATA_DIR [EXTRA_CFLAGS] - the install tree
# works for a library user: `cmake --install` into a temporary prefix puts
# the command, the library, the public headers, opplace.pc and the man page
# there; a C program (hello_opplace.c) compiles and links with nothing but
# `pkg-config --cflags --libs opplace`, and its step time for m-ETF on
# tests/data's graph equals what the installed command prints: 21 us, all
# four ops of good_graph.json in turn on gpu:0 (10 + 5 + 3 + 3).
set -euo pipefail
build=$1 cc=$2 data=$3 extra=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"
for f in bin/opplace include/opplace/opplace.h include/opplace/placer.h; do
  [ -f "$prefix/$f" ] || { echo "missing $prefix/$f"; cat "$tmp/install.log"; exit 1; }
done
lib=$(find "$prefix" -name libopplace.a)
pc=$(find "$prefix" -name opplace.pc)
man=$(find "$prefix" -path '*/man1/opplace.1')
[ -n "$lib" ] && [ -n "$pc" ] && [ -n "$man" ] || { echo "library, opplace.pc or man page missing"; find "$prefix"; exit 1; }

# the man page holds every command's --help and renders without warnings
for c in place simulate bound zoo; do
  grep -q "^\.SS opplace $c\$" "$man" || { echo "man page lacks the $c command"; exit 1; }
done
grep -q -- '--budget-seconds' "$man" || { echo "man page lacks place's options"; exit 1; }
if command -v groff > /dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
  [ -z "$warnings" ] || { echo "groff: $warnings"; exit 1; }
fi

# build against the installed tree only (the .pc's prefix is relative to itself)
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs opplace)
case "$flags" in *"$prefix"*) ;; *) echo "pkg-config does not point into the prefix: $flags"; exit 1;; esac
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $extra -o "$tmp/hello" "$here/hello_opplace.c" $flags

got=$("$tmp/hello" "$data/good_graph.json" "$data/good_cluster.json")
want=$("$prefix/bin/opplace" place "$data/good_graph.json" --cluster "$data/good_cluster.json" \
        --algo m-etf --json | sed -n 's/.*"step_time_us": \([0-9.e+-]*\),.*/\1/p')
echo "hello_opplace: $got; installed opplace: $want"
awk -v g="${got#step_time_us }" -v w="$want" 'BEGIN { exit !(g == w && g == 21) }' ||
  { echo "step times differ (or are not the hand-computed 21 us)"; exit 1; }
echo ok
