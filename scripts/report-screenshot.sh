#!/usr/bin/env bash
# Opens an `ember report` in a real headless browser (Debian's chromium)
# and checks that the screenshot is not blank. Usage:
#   scripts/report-screenshot.sh [OUT_DIR]     (default target/report-check)
# Leaves OUT_DIR/report.html and OUT_DIR/report.png to look at.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/report-check}
mkdir -p "$out"
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq chromium
fi
cargo build --release --locked -p ember-cli
ember=target/release/ember
"$ember" gen text --size 64MiB -o "$out/text.txt"
"$ember" wordcount "$out/text.txt" --trace "$out/trace.json" \
  --stats-json "$out/stats.json" >/dev/null
"$ember" report "$out/trace.json" "$out/stats.json" -o "$out/report.html"
# No network: the page must render from the file alone.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1100,1900 --screenshot="$out/report.png" \
  "file://$(realpath "$out/report.html")" 2>/dev/null
python3 scripts/check_png.py "$out/report.png"
