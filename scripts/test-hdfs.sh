#!/usr/bin/env bash
# ember reading hdfs:// URLs against a real HDFS: builds ember with the
# `hdfs` feature and (once) the one-node cluster harness of scripts/hdfs
# (Hadoop's MiniDFSCluster, Java 17 and Maven), starts a cluster with
# permissions enforced, copies test files into it, and checks that
#   - word count of an HDFS folder equals word count of the same local
#     files, byte for byte (also with local files and URLs mixed);
#   - a missing path, a file the user may not read, a namenode nobody
#     listens on and a malformed URL are each one line and exit 1;
#   - the Rust tests that need a cluster pass
#     (crates/ember-cli/tests/hdfs_cluster.rs, EMBER_HDFS_URL set);
# then stops the cluster. Not part of CI (a JVM, downloads): see
# docs/hdfs.md.
#
# Usage: scripts/test-hdfs.sh [--measure SIZE]
#   --measure SIZE  also time word count (2 threads) of a generated text
#                   file of SIZE (e.g. 256MiB) read from the cluster and
#                   from the local disk, alternated, 3 runs each after
#                   one untimed run.
#
# Fetched once into ${EMBER_CACHE:-$HOME/.cache/ember}/hdfs: the Maven
# artifacts of hadoop-client-minicluster (about 130 MB) and the harness's
# classes. Needs java (17) and mvn on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

measure=""
if [ "${1:-}" = "--measure" ]; then
  measure=${2:?--measure needs a size, e.g. 256MiB}
fi

cache=${EMBER_CACHE:-$HOME/.cache/ember}/hdfs
target=${CARGO_TARGET_DIR:-target}
ember=$target/release/ember
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-hdfs.XXXXXX")
passed=0
failed=0
java_pid=""

stop_cluster() {
  if [ -n "$java_pid" ]; then
    exec 3>&- || true # standard input closes: the harness stops
    for _ in $(seq 30); do
      kill -0 "$java_pid" 2>/dev/null || break
      sleep 1
    done
    kill "$java_pid" 2>/dev/null || true
    wait "$java_pid" 2>/dev/null || true
    java_pid=""
  fi
}
cleanup() {
  stop_cluster
  rm -rf "$work"
}
trap cleanup EXIT

ok() {
  echo "ok: $*"
  passed=$((passed + 1))
}
fail() {
  echo "FAILED: $*"
  failed=$((failed + 1))
}

step() {
  echo
  echo "== $* ($(date -u +%H:%M:%S))"
}

step "building ember with --features hdfs"
t0=$(date +%s)
cargo build --release --locked --features hdfs -p ember-cli 2>&1 | tail -n 1
echo "built in $(($(date +%s) - t0)) s"

step "the cluster harness (scripts/hdfs), cached in $cache"
t0=$(date +%s)
stamp=$(cat scripts/hdfs/pom.xml $(find scripts/hdfs/src -type f | sort) | sha256sum | cut -c1-16)
if [ "$(cat "$cache/stamp" 2>/dev/null)" != "$stamp" ]; then
  mkdir -p "$cache"
  mvn -B -q -f scripts/hdfs/pom.xml \
    -Dmaven.repo.local="$cache/m2" -Dminihdfs.build="$cache/build" \
    compile dependency:build-classpath -Dmdep.outputFile="$cache/classpath.txt"
  echo "$stamp" > "$cache/stamp"
  echo "fetched and compiled in $(($(date +%s) - t0)) s ($(du -sh "$cache" | cut -f1))"
else
  echo "up to date"
fi

step "test files"
mkdir -p "$work/data/sub" "$work/local"
"$ember" gen text --size 3MiB --seed 1 -o "$work/data/a.txt" 2>/dev/null
"$ember" gen text --size 1MiB --seed 2 --vocab 5000 -o "$work/data/sub/b.txt" 2>/dev/null
: > "$work/data/empty.txt"
echo "not words" > "$work/data/_SUCCESS" # left out of a folder, as Hadoop does
if [ -n "$measure" ]; then
  "$ember" gen text --size "$measure" --seed 9 -o "$work/local/big.txt" 2>/dev/null
fi
ls -lR "$work/data" | grep -v '^total'

step "starting the cluster"
t0=$(date +%s)
puts=(--put "$work/data" /data --locked /secret/locked.txt)
if [ -n "$measure" ]; then
  puts+=(--put "$work/local/big.txt" /bench/big.txt)
fi
mkfifo "$work/stdin"
java -cp "$cache/build/classes:$(cat "$cache/classpath.txt")" ember.MiniHdfs \
  "$work/base" "${puts[@]}" < "$work/stdin" > "$work/cluster.out" 2> "$work/cluster.log" &
java_pid=$!
exec 3> "$work/stdin" # held open: the cluster stays up until it closes
url=""
for _ in $(seq 180); do
  url=$(sed -n 's/^READY //p' "$work/cluster.out")
  [ -n "$url" ] && break
  kill -0 "$java_pid" 2>/dev/null || break
  sleep 1
done
if [ -z "$url" ]; then
  echo "the cluster did not start; its log:"
  tail -n 40 "$work/cluster.log"
  exit 1
fi
echo "up at $url in $(($(date +%s) - t0)) s (files copied in)"

step "word count: HDFS against the local disk"
"$ember" wordcount "$work/data/a.txt" "$work/data/sub/b.txt" "$work/data/empty.txt" \
  -o "$work/local.tsv" -k 0
"$ember" wordcount "$url/data" -o "$work/hdfs.tsv" -k 0
if cmp "$work/local.tsv" "$work/hdfs.tsv"; then
  ok "wordcount $url/data = wordcount of the local files ($(wc -l < "$work/local.tsv") words)"
else
  fail "wordcount $url/data differs from the local files"
fi
"$ember" wordcount "$url/data" -o - -t 2 --chunk-size 256KiB 2>/dev/null > "$work/hdfs-small.tsv"
if cmp "$work/local.tsv" "$work/hdfs-small.tsv"; then
  ok "the same with -o -, 2 threads, 256 KiB chunks"
else
  fail "-o -, 2 threads, 256 KiB chunks differ"
fi
"$ember" wordcount "$work/data/a.txt" "$url/data/sub/b.txt" -o - 2>/dev/null > "$work/mixed.tsv"
"$ember" wordcount "$work/data/a.txt" "$work/data/sub/b.txt" -o - 2>/dev/null > "$work/mixed-local.tsv"
if cmp "$work/mixed.tsv" "$work/mixed-local.tsv"; then
  ok "a local file and a URL mixed"
else
  fail "a local file and a URL mixed differ"
fi

# expect_error NAME WANT [ENV...] -- ARGS: exit 1, one line containing WANT.
expect_error() {
  local name=$1 want=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  local err code=0
  err=$(env "${envs[@]}" "$ember" "$@" 2>&1 >/dev/null) || code=$?
  echo "   $err"
  if [ "$code" = 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && [[ "$err" == *"$want"* ]]; then
    ok "$name"
  else
    fail "$name: exit $code, wanted one line with '$want'"
  fi
}

step "errors"
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_error "a missing path" "No such file or directory" -- wordcount "$url/no/such/file.txt"
expect_error "a file with mode 000, read as another user" "Permission denied: user=ember-nobody, access=READ" \
  HADOOP_USER_NAME=ember-nobody -- wordcount "$url/secret/locked.txt"
expect_error "a namenode nobody listens on" "cannot reach the namenode 127.0.0.1:$closed: Connection refused" \
  -- wordcount "hdfs://127.0.0.1:$closed/data"
expect_error "a malformed URL" "malformed HDFS URL 'hdfs:/data'" -- wordcount hdfs:/data
if "$ember" wordcount "$url/secret/locked.txt" > /dev/null 2>&1; then
  ok "the superuser (this user) reads the mode 000 file"
else
  fail "the superuser cannot read the mode 000 file"
fi

step "the Rust tests that need a cluster (EMBER_HDFS_URL=$url)"
if EMBER_HDFS_URL=$url cargo test --locked --features hdfs -p ember-cli \
  --test hdfs_cluster --test hdfs_urls 2>&1 | tee "$work/cargo-test.log" | grep -E '^(test |test result)'; then
  if grep -q "skipped" "$work/cargo-test.log"; then
    fail "cluster tests were skipped"
  else
    ok "cargo test --features hdfs --test hdfs_cluster --test hdfs_urls"
  fi
else
  tail -n 30 "$work/cargo-test.log"
  fail "cargo test --features hdfs --test hdfs_cluster --test hdfs_urls"
fi

if [ -n "$measure" ]; then
  step "measurement: word count of $measure, 2 threads, HDFS against the local disk"
  # Wall time of the whole command (connecting, opening and reading
  # included), alternated; the input is in the page cache both ways.
  run_timed() {
    local s e
    s=$(date +%s.%N)
    "$ember" wordcount "$@" -t 2 -k 1 > /dev/null
    e=$(date +%s.%N)
    echo "$e - $s" | bc
  }
  # One untimed run each first: the datanode's JVM compiles its read
  # path on the first requests.
  run_timed "$url/bench/big.txt" > /dev/null
  run_timed "$work/local/big.txt" > /dev/null
  declare -A times
  for round in 1 2 3; do
    for how in hdfs local-mmap local-chunked; do
      case $how in
        hdfs) t=$(run_timed "$url/bench/big.txt") ;;
        local-mmap) t=$(run_timed "$work/local/big.txt") ;;
        local-chunked) t=$(run_timed "$work/local/big.txt" --ingest chunked) ;;
      esac
      times[$how]="${times[$how]:-} $t"
      printf 'round %d %-14s %6.3f s\n' "$round" "$how" "$t"
    done
  done
  median() { tr ' ' '\n' | grep . | sort -n | sed -n 2p; }
  h=$(echo "${times[hdfs]}" | median)
  m=$(echo "${times[local-mmap]}" | median)
  c=$(echo "${times[local-chunked]}" | median)
  printf 'median: hdfs %.3f s, local (mmap) %.3f s, local (chunked reads) %.3f s\n' "$h" "$m" "$c"
  printf 'hdfs / local mmap = %.2f, hdfs / local chunked = %.2f\n' \
    "$(echo "scale=4; $h / $m" | bc)" "$(echo "scale=4; $h / $c" | bc)"
  echo "(a one-node minicluster on this machine, its JVM sharing the cores with ember)"
fi

step "stopping the cluster"
stop_cluster
echo "stopped"

echo
echo "hdfs: $passed passed, $failed failed"
[ "$failed" = 0 ]
