"""ember.spark on local-cluster[2,1,1024]: two executor JVMs, started
from pip's pyspark (its package holds the scripts a local cluster runs),
equal to the single-machine CLI. Slow (two JVMs start): runs with
EMBER_SPARK_CLUSTER=1."""

import os
import shutil

import pytest

pyspark = pytest.importorskip("pyspark")
if os.environ.get("EMBER_SPARK_CLUSTER") != "1":
    pytest.skip("local-cluster (two executor JVMs): set EMBER_SPARK_CLUSTER=1", allow_module_level=True)

from ember import spark as es  # noqa: E402

from spark_support import cli_index, cli_wordcount, exe, inputs, session  # noqa: E402,F401


@pytest.fixture(scope="module")
def cluster():
    from pyspark.find_spark_home import _find_spark_home

    s = session("local-cluster[2,1,1024]")
    app = s.sparkContext.applicationId
    yield s
    s.stop()
    # The workers' directory for the application (the executors' working
    # directories, their logs and fetched files) is under SPARK_HOME.
    shutil.rmtree(os.path.join(_find_spark_home(), "work", app), ignore_errors=True)


def test_local_cluster_equals_cli(cli, exe, inputs, cluster, tmp_path):
    """Two executor processes of one core each: one ember per executor on
    each feed, and the inverted index over files."""
    sc = cluster.sparkContext
    assert es.executor_layout(sc) == (2, 1)
    want = cli_wordcount(cli, inputs["texts"])
    lines = sc.textFile(",".join(map(str, inputs["texts"])), minPartitions=6)
    assert dict(es.wordcount(lines, binary=exe).collect()) == want
    py_lines = sc.parallelize([l for f in inputs["texts"] for l in f.read_bytes().split(b"\n")], 6)
    assert dict(es.wordcount(py_lines, binary=exe).collect()) == want
    assert {k: int(v) for k, v in es.stream(lines, "wordcount", binary=exe).collect()} == want
    files = es.text_files(sc, inputs["texts"], split_size=100_000)
    assert dict(es.wordcount(files, binary=exe).collect()) == want
    want_index = cli_index(cli, [inputs["docs"]], tmp_path)
    assert dict(es.inverted_index(sc, [inputs["docs"]], binary=exe).collect()) == want_index


def test_exclusive_asks_the_whole_executor(cli, exe, inputs, cluster, tmp_path):
    """exclusive=True: the ember stage's tasks ask for the executor's cores
    (a task resource profile), and the result is the same."""
    sc = cluster.sparkContext
    want = cli_wordcount(cli, inputs["texts"])
    lines = sc.textFile(",".join(map(str, inputs["texts"])), minPartitions=6)
    assert dict(es.wordcount(lines, binary=exe, exclusive=True).collect()) == want
