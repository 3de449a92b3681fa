"""ember.spark in a local Spark (local[2]) equals the single-machine CLI:
word count and the inverted index over a few small generated files, with
non-ASCII and invalid UTF-8 bytes in their text and in document names.

Skipped only when pyspark is not installed (CI installs it). Spark needs
Java 17 or newer. test_spark_cluster.py runs the same on two executor
JVMs."""

import os
import subprocess
import sys

import pytest

pyspark = pytest.importorskip("pyspark")

from ember import spark as es  # noqa: E402

from spark_support import cli_index, cli_wordcount, exe, inputs, session  # noqa: E402,F401


@pytest.fixture(scope="module")
def spark():
    s = session("local[2]")
    yield s
    s.stop()


def test_import_does_not_need_pyspark():
    code = "import sys; sys.modules['pyspark'] = None; import ember.spark; print('ok')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_missing_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("EMBER_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no ember binary"):
        es.find_binary()
    with pytest.raises(FileNotFoundError, match="is not a file"):
        es.find_binary(tmp_path / "nope")


def test_escape_round_trips():
    for raw in [b"plain", b"t\tn\nb\\c,", b"\xff\xfe caf\xc3\xa9 \xc3(", b""]:
        assert es.unescape(es.escape(raw, comma=True)) == raw
        assert b"\t" not in es.escape(raw) and b"\n" not in es.escape(raw)
    assert es.escape(b"a,b\t\\\xff", comma=True) == b"a\\x2cb\\t\\\\\\xff"


@pytest.mark.parametrize("split_size", [1, 7, 100, 4096, 1 << 20])
def test_file_splits_cover_every_line_once(tmp_path, split_size):
    f = tmp_path / "t.txt"
    data = b"one\ntwo words\n\n\nthree\nlast line without newline"
    f.write_bytes(data)
    splits = es.text_files(None, [f], split_size=split_size).splits
    assert splits[0][1] == 0 and splits[-1][2] == len(data)
    pieces = [b"".join(es._read_split(*s)) for s in splits]
    assert b"".join(pieces) == data
    whole = [p for p in pieces if p]
    assert all(p.endswith(b"\n") for p in whole[:-1])  # whole lines


def test_reduce_input_is_sorted_by_key_text(exe):
    """Keys with bytes that sort below the tab ("a\x01" before "a" as
    lines, after it as keys) still reach `ember stream reduce` in key order."""
    chunks = [b"b\t1\na\x01\t2\n", b"a\t3\nA\\tb\t4\n"]
    ordered = es._by_key(chunks)
    assert ordered == b"A\\tb\t4\na\t3\na\x01\t2\nb\t1\n"
    out = b"".join(es._pipe([exe, "stream", "reduce", "wordcount"], [ordered], raw=True))
    assert out == ordered


def test_layout_from_master(spark):
    assert es.executor_layout(spark.sparkContext) == (1, 2)


def test_wordcount_text_file_equals_cli(cli, exe, spark, inputs, tmp_path):
    want = cli_wordcount(cli, inputs["texts"])
    sc = spark.sparkContext
    lines = sc.textFile(",".join(map(str, inputs["texts"])), minPartitions=4)
    got = es.wordcount(lines, binary=exe)
    assert got.getNumPartitions() == sc.defaultParallelism
    result = got.collect()
    assert len(result) == len(want)  # each word once
    assert dict(result) == want


@pytest.mark.parametrize("coalesce", [True, False, 3])
def test_wordcount_python_feed_equals_cli(cli, exe, spark, inputs, coalesce, tmp_path):
    """Lines held by Python (bytes, invalid UTF-8 kept), fed to ember by the
    Python worker; one ember per executor, per partition, or three."""
    want = cli_wordcount(cli, inputs["texts"])
    lines = [l for f in inputs["texts"] for l in f.read_bytes().split(b"\n")]
    rdd = spark.sparkContext.parallelize(lines, 5)
    got = es.wordcount(rdd, binary=exe, coalesce=coalesce, reducers=3)
    assert got.getNumPartitions() == 3
    assert dict(got.collect()) == want


@pytest.mark.parametrize("coalesce", [True, False])
def test_wordcount_text_files_equals_cli(cli, exe, spark, inputs, tmp_path, coalesce):
    """Files read by the executors in byte ranges (small ones here, so
    that lines and words straddle them), one without a last newline."""
    tail = tmp_path / "tail.txt"
    tail.write_bytes(b"words at the end\nand no newline")
    files = [*inputs["texts"], tail]
    want = cli_wordcount(cli, files)
    data = es.text_files(spark.sparkContext, files, split_size=100_000)
    assert len(data.splits) > len(files)
    assert dict(es.wordcount(data, binary=exe, coalesce=coalesce).collect()) == want


def test_wordcount_dataframe_equals_cli(cli, exe, spark, inputs, tmp_path):
    want = cli_wordcount(cli, inputs["texts"])
    df = spark.read.text([str(f) for f in inputs["texts"]])
    assert dict(es.wordcount(df, binary=exe).collect()) == want
    both = df.selectExpr("value AS line", "length(value) AS n")
    assert dict(es.wordcount(both, column="line", binary=exe, feed="jvm").collect()) == want
    with pytest.raises(ValueError, match="column="):
        es.wordcount(both, binary=exe)


def test_stream_wordcount_equals_cli(cli, exe, spark, inputs, tmp_path):
    """The general path: ember stream map, shuffle, sort, ember stream reduce."""
    want = cli_wordcount(cli, inputs["texts"])
    lines = spark.sparkContext.textFile(",".join(map(str, inputs["texts"])))
    got = es.stream(lines, "wordcount", binary=exe, reducers=2).collect()
    assert {k: int(v) for k, v in got} == want
    assert len(got) == len(want)


def test_inverted_index_paths_equals_cli(cli, exe, spark, inputs, tmp_path):
    want = cli_index(cli, [inputs["docs"]], tmp_path)
    got = es.inverted_index(spark.sparkContext, [inputs["docs"]], binary=exe).collect()
    assert len(got) == len(want)
    assert dict(got) == want


def test_inverted_index_pairs_with_odd_names_equals_cli(cli, exe, spark, inputs, tmp_path):
    """(name, text) pairs whose names hold a tab, a newline, a backslash, a
    comma, non-ASCII and invalid UTF-8: the names come back as given."""
    files = sorted(p for p in inputs["docs"].iterdir())
    odd = ["t\tab", "new\nline", "back\\slash", "com,ma", "caf\u00e9", os.fsdecode(b"bad\xffname")]
    names = [odd[i] if i < len(odd) else f"doc{i:03}" for i in range(len(files))]
    by_path = dict(zip(map(str, files), names))
    want = {
        w: sorted((by_path[p] for p in paths), key=os.fsencode)
        for w, paths in cli_index(cli, files, tmp_path).items()
    }
    pairs = spark.sparkContext.parallelize([(n, f.read_bytes()) for n, f in zip(names, files)], 4)
    got = dict(es.inverted_index(pairs, binary=exe, coalesce=False, reducers=3).collect())
    assert got == want


def test_failing_ember_fails_the_job(exe, spark):
    rdd = spark.sparkContext.parallelize(["a b c"], 1)
    with pytest.raises(Exception, match="no-such-job|exited with status"):
        es.stream(rdd, "no-such-job", binary=exe, feed="python").collect()
