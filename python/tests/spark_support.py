"""What the Spark tests share: a local SparkSession on loopback, the
ember binary they ship (the CLI they compare with), small generated inputs
with odd bytes, and the CLI's results to compare with."""

import os
import subprocess
import sys

import pytest

# Spark's driver and executors talk over loopback only.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

ODD_TEXT = (
    "Caf\u00e9 na\u00efve \u00dcber-r\u00e9sum\u00e9 \u65e5\u672c\u8a9e words\n"
    "tab\there back\\slash comma,separated CR\r\nend\r\n"
    "\n"
    "UPPER lower MiXeD 123 numbers4you\n"
    "no newline at the end"
).encode("utf-8") + b"\nbad \xff\xfe bytes\xc3(mid\x80word \xc3a and \xe2\x82 too\n"


def session(master, **conf):
    from pyspark.sql import SparkSession

    b = (
        SparkSession.builder.master(master)
        .appName("ember-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@pytest.fixture(scope="module")
def exe(cli):
    """The ember binary the tests ship to Spark: the CLI they compare with.
    It must speak `ember stream`."""
    from conftest import _cli

    path = _cli()
    p = subprocess.run([path, "stream", "map", "wordcount"], input=b"a b a\n", capture_output=True)
    if p.returncode != 0:
        pytest.fail(f"{path} does not run `ember stream map wordcount`: {p.stderr.decode()}")
    return path


@pytest.fixture(scope="module")
def inputs(cli, tmp_path_factory):
    """Text files (two generated, one of odd bytes) and a folder of
    documents (generated, plus odd ones with non-ASCII names)."""
    d = tmp_path_factory.mktemp("spark-inputs")
    texts = [d / "a.txt", d / "b.txt", d / "odd.txt"]
    cli("gen", "text", "--size", "1MiB", "--vocab", "5000", "--seed", "1", "-o", texts[0])
    cli("gen", "text", "--size", "300KiB", "--vocab", "3000", "--seed", "2", "-o", texts[1])
    texts[2].write_bytes(ODD_TEXT)
    docs = d / "docs"
    cli("gen", "docs", "--size", "256KiB", "--files", "12", "--vocab", "2000", "-o", docs)
    (docs / "na\u00efve,doc.txt").write_bytes(ODD_TEXT)
    (docs / "z-empty.txt").write_bytes(b"")
    (docs / "back\\slash doc.txt").write_bytes(b"Only THESE words, and caf\xc3\xa9 words\n")
    return {"texts": texts, "docs": docs}


def cli_wordcount(cli, files):
    """`ember wordcount FILES -o -` as {word: count}."""
    out = cli("wordcount", *files, "-o", "-").stdout.decode()
    return {w: int(n) for w, n in (l.split("\t") for l in out.splitlines())}


def cli_index(cli, paths, tmp_path):
    """The CLI's index with document ids replaced by the documents' paths,
    each word's names sorted by their bytes."""
    doc_list = tmp_path / "docs.tsv"
    out = cli("inverted-index", *paths, "-o", "-", "--doc-list", doc_list).stdout.decode()
    names = [l.split("\t", 1)[1] for l in doc_list.read_text().splitlines()]
    want = {}
    for line in out.splitlines():
        w, ids = line.split("\t")
        want[w] = sorted((names[int(i)] for i in ids.split(",")), key=os.fsencode)
    return want
