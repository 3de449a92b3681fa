#!/usr/bin/env bash
# Fuzzes ember's input parsers, each against its sequential oracle, with
# cargo fuzz (libFuzzer; needs the nightly toolchain and cargo-fuzz):
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Targets (fuzz/fuzz_targets): histogram (BMP files), linear_regression
# (points files), matrix (matrix files, PCA), sort (records files), text
# (word count and the inverted index), stream (the streaming contract's
# lines and escaping). The first three bytes of each input pick the thread
# count and split size. Seeds are generated with `ember gen`; a crash
# leaves its input in fuzz/artifacts/TARGET and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(histogram linear_regression matrix sort text stream)

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz.sh: needs the nightly toolchain (rustup toolchain install nightly)" >&2
  exit 2
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

cargo build --release -p ember-cli
ember=target/release/ember
corpus=fuzz/corpus
mkdir -p "$corpus"/{histogram,matrix,sort,linear_regression,text,stream}
# Seeds: a small valid input of each kind, after three setup bytes
# (1 thread... 2 threads, a 65-byte split).
seed() { (printf '\x01\x40\x00'; cat) > "$1"; }
"$ember" gen histogram --width 7 --height 5 -o - | seed "$corpus/histogram/seed"
"$ember" gen pca --rows 4 --cols 6 -o - | seed "$corpus/matrix/seed"
"$ember" gen sort --records 20 -o - | seed "$corpus/sort/seed"
"$ember" gen linear-regression --size 64 -o - | seed "$corpus/linear_regression/seed"
printf 'The cat sat\non the MAT\n\xff caf\xc3\xa9 end' | seed "$corpus/text/seed"
printf 'a\t1\nb\t2\nb\t3\n' > "$corpus/stream/seed"

cd fuzz
for t in "${targets[@]}"; do
  echo "== $t: $seconds s"
  cargo +nightly fuzz run -O "$t" -- -max_total_time="$seconds" -rss_limit_mb=4096 \
    -max_len=65536 -print_final_stats=1 2>&1 \
    | grep -E '^Done|number_of_executed_units|peak_rss|SUMMARY|panicked|deadly signal' || true
  if compgen -G "artifacts/$t/*" >/dev/null; then
    echo "fuzz.sh: $t found a failing input: fuzz/artifacts/$t" >&2
    exit 1
  fi
done
