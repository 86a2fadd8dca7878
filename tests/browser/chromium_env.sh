# chromium_env.sh - sourced by the browser scripts: finds Debian's chromium
# and sets the flags for a headless, offline, throw-away run.
#   CHROMIUM       the browser binary, empty when none is installed
#   CHROMIUM_FLAGS an array of flags (a fresh profile directory each time)
CHROMIUM=""
for c in chromium chromium-browser; do
  if command -v "$c" > /dev/null 2>&1; then CHROMIUM=$(command -v "$c"); break; fi
done
CHROMIUM_PROFILE=$(mktemp -d "${TMPDIR:-/tmp}/opplace-chromium.XXXXXX")
trap 'rm -rf "$CHROMIUM_PROFILE"' EXIT
CHROMIUM_FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-dev-shm-usage --hide-scrollbars --mute-audio
  --user-data-dir="$CHROMIUM_PROFILE")
