#!/usr/bin/env bash
# screenshot.sh REPORT.html OUT.png [WIDTHxHEIGHT]
# A PNG of an opplace HTML report (or SVG) as headless Chromium draws it, to
# look at by eye: e.g. after changing the report's layout or scripts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/chromium_env.sh"
[ $# -ge 2 ] || { echo "usage: screenshot.sh REPORT.html OUT.png [1400x2400]"; exit 2; }
[ -n "$CHROMIUM" ] || { echo "screenshot: chromium not installed (apt-get install chromium)"; exit 77; }
size=${3:-1400x2400}
url="file://$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
out="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
timeout 120 "$CHROMIUM" "${CHROMIUM_FLAGS[@]}" --virtual-time-budget=3000 \
  --window-size="${size/x/,}" --screenshot="$out" "$url" 2> /dev/null
[ -s "$out" ] && echo "screenshot: $out"
