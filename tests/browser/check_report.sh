#!/usr/bin/env bash
# check_report.sh REPORT.html N_DEVICES N_CHANNELS
#
# Loads an opplace HTML report in headless Chromium and checks what a person
# would see: the page's scripts ran to the end (body data-render="done"), no
# script error happened (the page records window errors, rejected promises
# and console.error into #report-error / data-errors, and Chromium's own log
# shows no console error or uncaught exception), there is one timeline track
# per device and per channel used, every device track that has ops drew
# blocks, and there is one memory chart per device with a line.
# Exit 0: all good; 1: a check failed; 77: no chromium installed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/chromium_env.sh"
report=$1 ndev=$2 nchan=$3
[ -n "$CHROMIUM" ] || { echo "check_report: chromium not installed"; exit 77; }
[ -s "$report" ] || { echo "check_report: $report missing or empty"; exit 1; }
url="file://$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
dom=$(mktemp) log=$(mktemp)
timeout 120 "$CHROMIUM" "${CHROMIUM_FLAGS[@]}" --enable-logging=stderr --v=0 \
  --virtual-time-budget=3000 --window-size=1400,1000 --dump-dom "$url" > "$dom" 2> "$log"
rc=$?
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
check "chromium exited 0 (rc=$rc)" '[ $rc -eq 0 ]'
check "the page rendered to the end" 'grep -q "data-render=\"done\"" "$dom"'
check "no error recorded by the page" '! grep -q "id=\"report-error\"" "$dom" && ! grep -q "data-errors=" "$dom"'
check "no console error or uncaught exception in chromium's log" \
  '! grep -E "CONSOLE.*(Uncaught|rror)|Uncaught " "$log"'
tracks_dev=$(grep -o '<g class="track" data-kind="device"' "$dom" | wc -l)
tracks_chan=$(grep -o '<g class="track" data-kind="channel"' "$dom" | wc -l)
check "one track per device ($tracks_dev of $ndev)" '[ "$tracks_dev" -eq "$ndev" ]'
check "one track per channel used ($tracks_chan of $nchan)" '[ "$tracks_chan" -eq "$nchan" ]'
drawn=$(grep -o 'class="\(op\|agg\)"' "$dom" | wc -l)
check "device tracks hold drawn ops ($drawn blocks)" '[ "$drawn" -gt 0 ]'
if [ "$nchan" -gt 0 ]; then
  xf=$(grep -o 'class="\(xfer\|agg\)"' "$dom" | wc -l)
  check "channel tracks hold drawn transfers" '[ "$xf" -gt 0 ]'
fi
mems=$(grep -o '<g class="mem"' "$dom" | wc -l)
lines=$(grep -o 'class="memline"' "$dom" | wc -l)
check "one memory chart per device with its line ($mems charts, $lines lines)" \
  '[ "$mems" -eq "$ndev" ] && [ "$lines" -eq "$ndev" ]'
check "the graph drawing is there" 'grep -q "<svg[^>]*class=\"graph\"" "$dom"'
if [ $fail -ne 0 ]; then
  echo "--- chromium log (tail) ---"; tail -20 "$log"
  grep -o '<pre id="report-error">[^<]*' "$dom" | head -5
fi
rm -f "$dom" "$log"
exit $fail
