#!/usr/bin/env bash
# Fuzzes ember's parsers and splitters with cargo fuzz (libFuzzer,
# coverage-guided), each target checking a property stronger than "does
# not crash" (docs/fuzzing.md):
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   fuzz (default 60 s each)
#   scripts/fuzz.sh --ci [SECONDS_PER_TARGET]          CI's short run
#
# Targets (fuzz/fuzz_targets): histogram (BMP files), linear_regression
# (points files), matrix (matrix files, PCA), sort (records files), text
# (word count and the inverted index), stream (the streaming contract's
# lines and escaping), splits (the Lines, Separator, Fixed and Custom
# splitters), size (the command line's byte sizes), report (the stats and
# trace files `ember report` reads). The first three bytes of most inputs
# pick the thread count and split size.
#
# Runs on the stable toolchain: `-s none` builds without a sanitizer, so
# cargo fuzz passes no -Z flag (AddressSanitizer needs nightly's
# -Zsanitizer: FUZZ_SANITIZER=address FUZZ_TOOLCHAIN=nightly asks for it).
# Debug assertions are on (-a), so integer overflow panics. Every run
# starts from the committed seeds (fuzz/seeds/TARGET) and the corpus kept
# from earlier runs (fuzz/corpus/TARGET, not committed). A failing input
# is left in fuzz/artifacts/TARGET and fails the script. --ci first
# replays the seeds, then fuzzes each target for SECONDS_PER_TARGET
# (default 20) from the seeds alone, in a temporary corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

ci=false
if [ "${1:-}" = --ci ]; then
  ci=true
  shift
fi
seconds=${1:-$($ci && echo 20 || echo 60)}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(histogram linear_regression matrix sort text stream splits size report)

sanitizer=${FUZZ_SANITIZER:-none}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked

# Optimised with debug assertions; CI's short run builds unoptimised
# (--dev): much quicker to build, several times fewer executions a second.
if $ci; then mode=(--dev -a); else mode=(-O -a); fi
# FUZZ_TARGET_DIR: another target folder (relative to fuzz/).
mode+=(${FUZZ_TARGET_DIR:+--target-dir "$FUZZ_TARGET_DIR"} -s "$sanitizer")

cd fuzz
# The default toolchain (stable here) unless FUZZ_TOOLCHAIN names one.
fuzz() { cargo ${FUZZ_TOOLCHAIN:+"+$FUZZ_TOOLCHAIN"} fuzz "$@"; }
start=$(date +%s)
fuzz build "${mode[@]}"
echo "fuzz.sh: built in $(( $(date +%s) - start )) s"

for t in "${targets[@]}"; do
  corpus=corpus/$t
  $ci && corpus=$(mktemp -d)
  mkdir -p "$corpus"
  if $ci; then
    # Replay: every seed once, no mutation.
    fuzz run "${mode[@]}" "$t" "seeds/$t" -- -runs=0 2>&1 | grep -E '^Done|INFO: seed corpus' || true
    [ -z "$(ls -A "artifacts/$t" 2>/dev/null)" ] || { echo "fuzz.sh: $t fails on a seed" >&2; exit 1; }
  fi
  echo "== $t: $seconds s"
  fuzz run "${mode[@]}" "$t" "$corpus" "seeds/$t" -- -max_total_time="$seconds" \
    -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 2>&1 |
    grep -E '^Done|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|panicked|deadly signal' || true
  if $ci; then rm -rf "$corpus"; fi
  if [ -n "$(ls -A "artifacts/$t" 2>/dev/null)" ]; then
    echo "fuzz.sh: $t found a failing input: fuzz/artifacts/$t" >&2
    exit 1
  fi
done
