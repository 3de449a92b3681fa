#!/usr/bin/env bash
# Runs ember's streaming commands under Hadoop's own streaming runner (local
# mode, through scripts/hadoop-streaming.sh) and checks every result against
# ember's own commands on the same files. Not part of CI: it needs Java 8+
# and Maven, fetches Hadoop's jars once (about 66 MB), and takes a minute or
# two. See docs/hadoop.md.
#
#   (a) word count, ember as mapper, combiner and reducer
#       == `ember wordcount FILES -o -`
#   (b) inverted index, ember as mapper, combiner and reducer
#       == `ember inverted-index DIR -o - --doc-list DOCS`, ids mapped to paths
#   (c) word count with the Python scripts wc_mapper.py / wc_reducer.py
#       (the reducer is the combiner too) == `ember wordcount`
#   (d) the times of (a) and (c) (and (f)) side by side, printed last
#   (e) word count as on a cluster: `-files EMBER` ships the binary to the
#       tasks, and the commands name it bare (over small.txt only)
#   (f) where ember has `stream run`: the same Python scripts under it,
#       without Hadoop, == `ember wordcount`, and its time
#
# Usage: scripts/test-hadoop-streaming.sh [WORKDIR]
#   WORKDIR (default: a new temporary directory) holds the corpus and every
#   output; it is removed after a passing run unless KEEP=1 or it was given.
# Environment:
#   EMBER        the ember binary (default target/release/ember, built if missing)
#   SIZE_MIB     MiB of generated text, over three files of 1/2, 3/8, 1/8 (default 24)
#   SPLIT_MIB    Hadoop's split size in MiB, as fs.local.block.size (default 2: the
#                larger files are read by several map tasks each; local mode
#                ignores mapreduce.job.maps and splits by the block size, 32 MiB)
#   PYTHON       the Python 3 for (c) (default: python3 on PATH)
#   and those of scripts/hadoop-streaming.sh (EMBER_CACHE, EMBER_HADOOP_VERSION, ...)
# Exits non-zero on the first mismatch or failed run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd -P)
streaming=$root/scripts/hadoop-streaming.sh
ember=${EMBER:-$root/target/release/ember}
mib=${SIZE_MIB:-24}
split_mib=${SPLIT_MIB:-2}
# The interpreter itself, not a version manager's shim (a shell script that
# would run again for every task).
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)') ||
    { echo "test-hadoop-streaming: no ${PYTHON:-python3}" >&2; exit 1; }

fail() {
    echo "FAIL: $*" >&2
    [ -n "${work:-}" ] && echo "(the inputs and outputs are kept in $work)" >&2
    exit 1
}

if [ ! -x "$ember" ]; then
    echo "building ember (cargo build --release) ..."
    (cd "$root" && cargo build --release --locked -q) || fail "cargo build failed"
fi
ember=$(cd "$(dirname "$ember")" && pwd -P)/$(basename "$ember")
"$ember" stream map wordcount </dev/null >/dev/null 2>&1 ||
    fail "$ember has no working 'stream' command (ember stream map wordcount < /dev/null failed)"

# Hadoop splits the -mapper/-combiner/-reducer commands on spaces: the
# programs' absolute paths must have none.
for p in "$ember" "$python" "$root"; do
    case "$p" in *[[:space:]]*) fail "'$p' has a space in its path: Hadoop's command splitter would cut it" ;; esac
done

pydir=$root/examples/streaming

keep=${KEEP:-0}
if [ $# -ge 1 ]; then
    mkdir -p "$1"
    work=$(cd "$1" && pwd -P)
    keep=1
else
    work=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/ember-hadoop-test.XXXXXX")" && pwd -P)
fi
case "$work" in *[[:space:]]*) fail "the work directory '$work' has a space in its path" ;; esac

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# --- the corpus --------------------------------------------------------------
corpus=$work/corpus
rm -rf "$corpus" "$work/out" "$work/expected"
mkdir -p "$corpus" "$work/out" "$work/expected"

t0=$(now)
bytes=$((mib * 1024 * 1024))
big=$((bytes / 2))
medium=$((bytes * 3 / 8))
small=$((bytes - big - medium))
"$ember" gen text --size "$big" --seed 1 --out "$corpus/big.txt"
"$ember" gen text --size "$medium" --seed 2 --vocab 50000 --out "$corpus/medium.txt"
"$ember" gen text --size "$small" --seed 3 --vocab 20000 --zipf 1.2 --out "$corpus/small.txt"
: >"$corpus/empty.txt"
# Non-ASCII and odd bytes, in a file whose name has a space and a comma (a
# comma is escaped as \x2c in the inverted index's document lists).
"$python" - "$corpus/notes, misc.txt" <<'PY'
import random, sys
rng = random.Random(11)
parts = [
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00dcber Stra\u00dfe \u65e5\u672c\u8a9e \U0001F600 emoji\n".encode(),
    b"latin-1 bytes: caf\xe9 na\xefve \xff\xfe broken \xc3 utf8\n",
    b"CRLF lines\r\nMiXeD CaSe Words\r\n",
    b"tabs\tand\ttabs, NUL\x00bytes and \x01\x02 control\n",
    b"digits123split4words 2024-01-01 under_score hyphen-ated\n",
    b"\n\n   \n",
    b"a" * 70000 + b" long word then short\n",   # a 70 kB word on a 70 kB line
]
words = ["alpha", "beta", "gamma", "delta", "\u00e9t\u00e9", "\u00fcber", "zeta"]
for i in range(20000):
    parts.append((" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) + "\n").encode())
    if i % 997 == 0:
        parts.append(bytes(rng.randrange(256) for _ in range(64)) + b"\n")
parts.append(b"no newline at the end")
open(sys.argv[1], "wb").write(b"".join(parts))
PY
files=("$corpus"/*)
total=$(cat "${files[@]}" | wc -c)
echo "corpus: $corpus, ${#files[@]} files, $total bytes ($(secs "$t0" "$(now)") s to generate)"
for f in "${files[@]}"; do printf '  %10d  %s\n' "$(wc -c <"$f")" "$(basename "$f")"; done
echo "ember:  $ember"
echo "python: $python, scripts from ${pydir#"$root"/}"
t=$(now)
hadoop_lib=$("$streaming" --fetch) || fail "could not fetch Hadoop's jars"
echo "hadoop: $hadoop_lib ($(find "$hadoop_lib" -name "*.jar" | wc -l) jars; $(secs "$t" "$(now)") s to fetch them or find them cached)"
# The times below are wall clock: other work on the machine shows in them.
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# --- helpers -----------------------------------------------------------------
declare -A took

# hadoop NAME STREAMING_ARGS...: runs one job over $input (default: the
# corpus folder) into $work/out/NAME, records its time, and leaves the
# sorted concatenation of its part files in $work/out/NAME.sorted. Generic
# options such as -files go first in STREAMING_ARGS: Hadoop wants them
# before the streaming options.
hadoop() {
    local name=$1 input=${input:-$corpus}
    shift
    local out=$work/out/$name t
    rm -rf "$out"
    t=$(now)
    # Hadoop's working directory is the task's: run it in $work.
    (cd "$work" && EMBER_HADOOP_LOG=INFO "$streaming" -D fs.local.block.size=$((split_mib * 1024 * 1024)) -D mapreduce.job.name="ember-test-$name" \
        "$@" -input "$input" -output "$out" -numReduceTasks 2) >"$work/out/$name.log" 2>&1 || {
        cat "$work/out/$name.log" >&2
        fail "the Hadoop job $name failed"
    }
    took[$name]=$(secs "$t" "$(now)")
    [ -f "$out/_SUCCESS" ] || fail "$name: no _SUCCESS in $out"
    local parts
    parts=$(find "$out" -name 'part-*' | wc -l)
    [ "$parts" -eq 2 ] || fail "$name: $parts part files, expected 2 (-numReduceTasks 2)"
    cat "$out"/part-* | LC_ALL=C sort >"$out.sorted"
    # From Hadoop's log (INFO): the splits and the record counters.
    local log=$work/out/$name.log splits counters
    splits=$(sed -n 's/.*number of splits:\([0-9]*\).*/\1/p' "$log" | head -n 1)
    counters=$(for c in "Map output records" "Combine input records" "Combine output records" "Reduce input records"; do
        printf '%s=%s, ' "$c" "$(sed -n "s/^[[:space:]]*$c=\([0-9]*\).*/\1/p" "$log" | tail -n 1)"
    done)
    echo "  hadoop $name: ${took[$name]} s; ${splits:-?} map tasks, 2 reduce tasks; ${counters%, }"
}

# same WHAT EXPECTED GOT: byte-for-byte, else a diff excerpt and exit 1.
same() {
    if cmp -s "$2" "$3"; then
        echo "  OK $1: $(wc -l <"$3") lines, $(wc -c <"$3") bytes, identical"
    else
        echo "  MISMATCH $1: expected $2, got $3" >&2
        diff "$2" "$3" | head -n 20 >&2 || true
        fail "$1"
    fi
}

# --- (a) word count, ember as mapper, combiner and reducer ---------------------
echo "(a) word count: mapper, combiner and reducer = ember stream ... wordcount"
t=$(now)
"$ember" wordcount "${files[@]}" -o - 2>/dev/null >"$work/expected/wordcount.ember"
took[ember]=$(secs "$t" "$(now)")
LC_ALL=C sort "$work/expected/wordcount.ember" >"$work/expected/wordcount"
echo "  ember wordcount FILES -o -: ${took[ember]} s, $(wc -l <"$work/expected/wordcount") words"
hadoop wc-ember \
    -mapper "$ember stream map wordcount" \
    -combiner "$ember stream combine wordcount" \
    -reducer "$ember stream reduce wordcount"
same "(a) Hadoop + ember stream == ember wordcount" "$work/expected/wordcount" "$work/out/wc-ember.sorted"
echo

# --- (b) inverted index --------------------------------------------------------
echo "(b) inverted index: mapper, combiner and reducer = ember stream ... inverted-index"
echo "    (each map task names its document by \$mapreduce_map_input_file, a file:/ URI)"
t=$(now)
"$ember" inverted-index "$corpus" -o - --doc-list "$work/expected/docs.tsv" 2>/dev/null >"$work/expected/index.ids"
took[ember-index]=$(secs "$t" "$(now)")
# word<TAB>id,id -> word<TAB>path,path: paths sorted by bytes and escaped as
# the streaming reducer does (tab \t, newline \n, carriage return \r,
# backslash \\, comma \x2c, bytes that are not UTF-8 \xHH).
"$python" - "$work/expected/docs.tsv" "$work/expected/index.ids" >"$work/expected/index.unsorted" <<'PY'
import sys

def escape(name):
    out = []
    for ch in name.decode("utf-8", "surrogateescape"):
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append("\\x%02x" % (o - 0xDC00))
        else:
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\", ",": "\\x2c"}.get(ch, ch))
    return "".join(out).encode("utf-8", "surrogateescape")

docs = {}
for line in open(sys.argv[1], "rb"):
    i, _, path = line.rstrip(b"\n").partition(b"\t")
    docs[i] = path
out = sys.stdout.buffer
for line in open(sys.argv[2], "rb"):
    word, _, ids = line.rstrip(b"\n").partition(b"\t")
    names = sorted(docs[i] for i in ids.split(b","))
    out.write(word + b"\t" + b",".join(escape(n) for n in names) + b"\n")
PY
LC_ALL=C sort "$work/expected/index.unsorted" >"$work/expected/index"
echo "  ember inverted-index DIR -o - --doc-list DOCS: ${took[ember-index]} s, $(wc -l <"$work/expected/index") words, $(wc -l <"$work/expected/docs.tsv") documents"
hadoop index-ember \
    -mapper "$ember stream map inverted-index" \
    -combiner "$ember stream combine inverted-index" \
    -reducer "$ember stream reduce inverted-index"
# file:/abs/path -> /abs/path in every name (names are escaped, so a comma
# only ever separates names).
"$python" - "$work/out/index-ember.sorted" >"$work/out/index-ember.paths" <<'PY'
import sys
out = sys.stdout.buffer
for line in open(sys.argv[1], "rb"):
    word, _, names = line.rstrip(b"\n").partition(b"\t")
    names = names.split(b",")
    for n in names:
        if not n.startswith(b"file:/"):
            sys.exit("not a file: URI: %r" % n)
    out.write(word + b"\t" + b",".join(n[len(b"file:"):] for n in names) + b"\n")
PY
same "(b) Hadoop + ember stream == ember inverted-index" "$work/expected/index" "$work/out/index-ember.paths"
echo

# --- (c) word count with the Python scripts ------------------------------------
echo "(c) word count: mapper = wc_mapper.py, combiner and reducer = wc_reducer.py"
hadoop wc-python \
    -mapper "$python $pydir/wc_mapper.py" \
    -combiner "$python $pydir/wc_reducer.py" \
    -reducer "$python $pydir/wc_reducer.py"
same "(c) Hadoop + Python scripts == ember wordcount" "$work/expected/wordcount" "$work/out/wc-python.sorted"
echo

# --- (e) the cluster form: -files ships the binary -------------------------------
# As docs/hadoop.md has it: a stripped copy (the release build keeps line
# tables: 190 MB, stripped about 10) shipped with -files.
shipped=$work/ship/ember
mkdir -p "$work/ship"
strip -o "$shipped" "$ember" 2>/dev/null || cp "$ember" "$shipped"
echo "(e) word count with -files $shipped ($(($(wc -c <"$shipped") / 1000000)) MB, stripped): the commands name it bare (the form for a cluster)"
"$ember" wordcount "$corpus/small.txt" -o - 2>/dev/null | LC_ALL=C sort >"$work/expected/wordcount-small"
input=$corpus/small.txt hadoop wc-files -files "$shipped" \
    -mapper "$(basename "$ember") stream map wordcount" \
    -combiner "$(basename "$ember") stream combine wordcount" \
    -reducer "$(basename "$ember") stream reduce wordcount"
same "(e) Hadoop + shipped ember == ember wordcount small.txt" "$work/expected/wordcount-small" "$work/out/wc-files.sorted"
echo

# --- (f) the same Python scripts under ember stream run ----------------------------
if "$ember" stream run --help >/dev/null 2>&1; then
    echo "(f) the same Python scripts under ember stream run (no Hadoop), 2 reducers, $split_mib MiB splits"
    t=$(now)
    "$ember" stream run --reducers 2 --split-size "${split_mib}MiB" \
        --mapper "$python $pydir/wc_mapper.py" \
        --combiner "$python $pydir/wc_reducer.py" \
        --reducer "$python $pydir/wc_reducer.py" \
        -o "$work/out/run-python" "${files[@]}" 2>"$work/out/run-python.log" || {
        cat "$work/out/run-python.log" >&2
        fail "ember stream run with the Python scripts failed"
    }
    took[run-python]=$(secs "$t" "$(now)")
    LC_ALL=C sort "$work/out/run-python" >"$work/out/run-python.sorted"
    echo "  ember stream run, Python scripts: ${took[run-python]} s (Hadoop, the same scripts: ${took[wc-python]} s)"
    same "(f) ember stream run + Python scripts == ember wordcount" "$work/expected/wordcount" "$work/out/run-python.sorted"
    passed="(a) (b) (c) (e) (f)"
else
    echo "(f) skipped: $ember has no 'stream run'"
    passed="(a) (b) (c) (e)"
fi
echo

# --- (d) timings -----------------------------------------------------------------
echo "(d) word count over the same $total bytes, Hadoop $(basename "$(ls "$hadoop_lib"/hadoop-streaming-*.jar)" .jar | sed 's/hadoop-streaming-//') local mode, $(nproc) cores, splits of $split_mib MiB, 2 reduce tasks:"
printf '  %-50s %8s s\n' "Hadoop Streaming, Python mapper/combiner/reducer" "${took[wc-python]}"
printf '  %-50s %8s s\n' "Hadoop Streaming, ember stream map/combine/reduce" "${took[wc-ember]}"
if [ -n "${took[run-python]:-}" ]; then
    printf '  %-50s %8s s\n' "ember stream run, the same Python scripts" "${took[run-python]}"
fi
printf '  %-50s %8s s\n' "ember wordcount alone (no Hadoop)" "${took[ember]}"
awk -v p="${took[wc-python]}" -v e="${took[wc-ember]}" \
    'BEGIN { if (e > 0) printf "  ember under Hadoop is %.1fx faster than the Python scripts under Hadoop\n", p / e }'
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "all passed: $passed match ember's own results"
if [ "$keep" = 1 ]; then
    echo "inputs and outputs kept in $work"
else
    rm -rf "$work"
fi
