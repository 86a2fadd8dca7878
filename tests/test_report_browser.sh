#!/usr/bin/env bash
# test_report_browser.sh OPPLACE DATA_DIR - the HTML report in a real browser.
#
# Places a zoo graph on 3 GPUs with --report, loads the page in Debian's
# headless chromium (tests/browser/check_report.sh): no script or console
# error, one timeline track per device and per channel used, a memory chart
# per device, the graph drawing.  Then the same for a 36k-op graph (the
# page must still render), and a negative control: a page with an injected
# script error must fail the check, so the check cannot pass vacuously.
# Skips (exit 0, "skipped") only when chromium is not installed.
set -uo pipefail
opplace=$1
here=$(cd "$(dirname "$0")" && pwd)
check="$here/browser/check_report.sh"
if ! command -v chromium > /dev/null 2>&1 && ! command -v chromium-browser > /dev/null 2>&1; then
  echo "test_report_browser: skipped (chromium is not installed; apt-get install chromium)"
  exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/opplace-browser.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail=0
step() { echo "== $*"; }

step "small graph on 3 GPUs"
"$opplace" zoo rnnlm --layers 2 --hidden 256 --seq-len 6 -o "$dir/g.json" || exit 1
"$opplace" place "$dir/g.json" --preset v100-pcie --gpus 3 --algo m-etf \
  --report "$dir/r.html,$dir/t.json" --quiet > /dev/null || exit 1
# channels used = distinct channel tracks in the Perfetto trace
nchan=$(grep -o '"pid": 2, "tid": [0-9]*, "name": "thread_name"' "$dir/t.json" | sort -u | wc -l)
bash "$check" "$dir/r.html" 3 "$nchan" || fail=1

step "36k-op graph on 4 GPUs"
"$opplace" zoo synthetic --ops 36000 --width 24 -o "$dir/big.json" || exit 1
start=$(date +%s)
"$opplace" place "$dir/big.json" --preset v100-nvlink --gpus 4 --algo round-robin \
  --report "$dir/big.html,$dir/bt.json" --quiet > /dev/null || exit 1
nchan=$(grep -o '"pid": 2, "tid": [0-9]*, "name": "thread_name"' "$dir/bt.json" | sort -u | wc -l)
size=$(stat -c %s "$dir/big.html")
echo "big.html: $size bytes, written in $(( $(date +%s) - start )) s"
[ "$size" -lt 20000000 ] || { echo "FAIL report of 36k ops is $size bytes"; fail=1; }
t0=$(date +%s)
bash "$check" "$dir/big.html" 4 "$nchan" || fail=1
echo "browser check of the 36k-op page: $(( $(date +%s) - t0 )) s"

step "negative control: an injected script error must be caught"
sed 's|</body>|<script>undefinedFunctionCalledOnPurpose();</script></body>|' "$dir/r.html" > "$dir/bad.html"
if bash "$check" "$dir/bad.html" 3 "$nchan" > "$dir/bad.log" 2>&1; then
  echo "FAIL the check passed a page with a script error"; cat "$dir/bad.log"; fail=1
else
  echo "ok   the check caught the injected error"
fi
exit $fail
