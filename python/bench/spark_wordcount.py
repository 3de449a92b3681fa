"""Word count in Spark, three ways in one run, on one text corpus: pure
PySpark RDD (flatMap + reduceByKey), pure DataFrame (split, explode,
groupBy().count()), and Spark + ember (ember.spark.wordcount: one
`ember stream map wordcount` per executor, its partial counts shuffled).
Prints each way's wall time (median and best of the rounds, contenders
interleaved; the session start is timed apart) and its shuffle bytes
(Spark's stage metrics: shuffle write bytes of the job's stages), and
checks that every way counts the same words as the ember CLI.

    python python/bench/spark_wordcount.py CORPUS [--master local[2]] [--rounds 3]
        [--binary target/release/ember] [--only rdd,df,ember,...]

Make the corpus with `ember gen text --size 256MiB -o CORPUS`. The
contenders (--only):

  rdd            sc.textFile, flatMap to words, reduceByKey
  df             spark.read.text, split/explode, groupBy().count()
  ember          ember.spark.wordcount(sc.textFile(...)): one ember per
                 executor with all its cores, lines piped from the JVM
  ember-files    ember.spark.wordcount(ember.spark.text_files(...)): the
                 same, but each executor reads its byte ranges of the file
                 itself and copies them to ember as they are
  ember-python   lines from sc.textFile fed by the Python worker
                 (feed="python")
  ember-tasks    one ember per input partition (coalesce=False), each with
                 spark.task.cpus threads

Every way tokenizes as ember does (maximal runs of ASCII letters,
lower-cased); the action is (distinct words, total words), so no way pays
for collecting a million rows to the driver.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

WORD = re.compile(r"[A-Za-z]+")


def words(line):
    """ember's tokenizer on a str line: runs of ASCII letters, lower-cased."""
    if line.isascii():
        return WORD.findall(line.lower())
    return [w.lower() for w in WORD.findall(line)]


def totals(rdd):
    """(distinct words, total words) of an RDD of (word, count)."""
    return rdd.aggregate(
        (0, 0), lambda acc, kv: (acc[0] + 1, acc[1] + kv[1]), lambda a, b: (a[0] + b[0], a[1] + b[1])
    )


def run_rdd(spark, path, args):
    from operator import add

    sc = spark.sparkContext
    counts = sc.textFile(path).flatMap(words).map(lambda w: (w, 1)).reduceByKey(add)
    return totals(counts)


def run_df(spark, path, args):
    from pyspark.sql import functions as F

    df = spark.read.text(path)
    w = df.select(F.explode(F.split(F.lower(F.col("value")), "[^a-z]+")).alias("word"))
    counts = w.where(F.col("word") != "").groupBy("word").count()
    row = counts.agg(F.count("*").alias("n"), F.sum("count").alias("total")).collect()[0]
    return row["n"], row["total"]


def run_ember(spark, path, args, **opts):
    from ember import spark as es

    lines = spark.sparkContext.textFile(path)
    return totals(es.wordcount(lines, binary=args.binary, threads=args.threads, **opts))


def feed_jvm(spark, path):
    """The JVM feed alone: the lines piped, one task per executor as
    ember.spark coalesces them, into a process that discards them."""
    from ember import spark as es

    sc = spark.sparkContext
    executors, _ = es.executor_layout(sc)
    jrdd = sc.textFile(path)._jrdd.coalesce(executors, False)
    return jrdd.pipe(["sh", "-c", "cat >/dev/null"], {}, False, 1 << 20, "UTF-8").count()


def feed_python(spark, path):
    """The Python feed alone: the lines through the Python worker into a
    process that discards them."""
    from ember import spark as es

    sc = spark.sparkContext
    executors, _ = es.executor_layout(sc)
    lines = sc.textFile(path).map(lambda l: l).coalesce(executors)
    return lines.mapPartitions(lambda it: es._pipe(["sh", "-c", "cat >/dev/null"], it)).count()


def run_ember_files(spark, path, args):
    from ember import spark as es

    data = es.text_files(spark.sparkContext, path)
    return totals(es.wordcount(data, binary=args.binary, threads=args.threads))


CONTENDERS = {
    "rdd": run_rdd,
    "df": run_df,
    "ember": run_ember,
    "ember-files": run_ember_files,
    "ember-python": lambda s, p, a: run_ember(s, p, a, feed="python"),
    "ember-tasks": lambda s, p, a: run_ember(s, p, a, coalesce=False),
}


def wait_listeners(sc):
    """Lets the listener bus deliver the finished job's events, so the
    status store has its stages' metrics."""
    try:
        sc._jsc.sc().listenerBus().waitUntilEmpty()
    except Exception:  # noqa: BLE001 - an internal method; fall back to a pause
        time.sleep(2)


def shuffle_bytes(sc, group):
    """Shuffle bytes written and read by the stages of the jobs of `group`,
    and their records written (for PySpark's shuffles, pickled batches),
    from Spark's status store."""
    tracker = sc.statusTracker()
    store = sc._jsc.sc().statusStore()
    details = getattr(store, "stageData$default$3")()
    quantiles = getattr(store, "stageData$default$5")()
    written = read = records = 0
    stages = []
    for job in sorted(tracker.getJobIdsForGroup(group)):
        info = tracker.getJobInfo(job)
        for stage in sorted(info.stageIds) if info else []:
            try:
                attempts = store.stageData(stage, False, details, False, quantiles)
            except Exception:  # noqa: BLE001 - a stage skipped (its shuffle reused)
                continue
            for i in range(attempts.size()):
                s = attempts.apply(i)
                written += s.shuffleWriteBytes()
                read += s.shuffleReadBytes()
                records += s.shuffleWriteRecords()
                sub, done = s.submissionTime(), s.completionTime()
                if sub.isDefined() and done.isDefined():
                    secs = (done.get().getTime() - sub.get().getTime()) / 1000
                    stages.append(f"{s.numTasks()} tasks {secs:.2f} s")
    return written, read, records, stages


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", default=None, help="the ember binary (default: $EMBER_BIN, PATH)")
    ap.add_argument("--threads", type=int, default=None, help="ember threads (default: the executor's cores)")
    ap.add_argument("--only", default="rdd,df,ember,ember-files,ember-python,ember-tasks")
    ap.add_argument("--driver-memory", default="4g")
    args = ap.parse_args()
    names = args.only.split(",")
    for n in names:
        if n not in CONTENDERS:
            ap.error(f"unknown contender {n!r}: one of {', '.join(CONTENDERS)}")
    path = os.path.abspath(args.corpus)
    size = os.path.getsize(path)

    from ember import spark as es

    binary = es.find_binary(args.binary)
    args.binary = binary
    # The reference: the single-machine CLI on the same file.
    t = time.perf_counter()
    out = subprocess.run([binary, "wordcount", path, "-k", "0"], capture_output=True, text=True, check=True)
    cli_secs = time.perf_counter() - t
    m = re.search(r"# (\d+) words, (\d+) distinct", out.stdout + out.stderr)
    want = (int(m.group(2)), int(m.group(1)))

    t = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(args.master)
        .appName("ember-spark-wordcount-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", args.driver_memory)
        .getOrCreate()
    )
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    start_secs = time.perf_counter() - t
    executors, cores = es.executor_layout(sc)
    print(f"corpus    {path}: {size / 2**20:.1f} MiB, {want[1]} words, {want[0]} distinct")
    print(f"spark     {sc.version}, master {args.master} ({executors} executor(s) x {cores} cores), "
          f"session start {start_secs:.1f} s (not in the times below)")
    print(f"input     sc.textFile: {sc.textFile(path).getNumPartitions()} partitions; "
          f"spark.read.text: {spark.read.text(path).rdd.getNumPartitions()} partitions")
    print(f"cli       ember wordcount (single machine, all cores): {cli_secs:.2f} s")

    results = {n: [] for n in names}
    shuffles = {}
    # Round 0 warms the JVM up and is not timed.
    for rnd in range(args.rounds + 1):
        for n in names:
            group = f"{n}-{rnd}"
            sc.setJobGroup(group, n)
            t = time.perf_counter()
            got = CONTENDERS[n](spark, path, args)
            secs = time.perf_counter() - t
            if tuple(got) != want:
                raise SystemExit(f"{n}: (distinct, total) {tuple(got)} != the CLI's {want}")
            wait_listeners(sc)
            shuffles[n] = shuffle_bytes(sc, group)
            if rnd > 0:
                results[n].append(secs)
            print(f"  round {rnd}{' (warm-up)' if rnd == 0 else ''}: {n:13} {secs:7.2f} s, "
                  f"shuffle write {fmt_bytes(shuffles[n][0])}; stages: {', '.join(shuffles[n][3])}",
                  flush=True)
    feeds = {}
    for name, feed in (("jvm", feed_jvm), ("python", feed_python)):
        t = time.perf_counter()
        feed(spark, path)
        feeds[name] = time.perf_counter() - t
    spark.stop()
    print()
    print("feed alone (the lines piped into `cat >/dev/null`, one task per executor): "
          + ", ".join(f"{n} {secs:.2f} s ({size / 1e6 / secs:.0f} MB/s)" for n, secs in feeds.items()))

    df_med = statistics.median(results["df"]) if "df" in results else None
    df_shuffle = shuffles["df"][0] if "df" in shuffles else None
    print()
    print("| way | median s | best s | MB/s (median) | shuffle write | vs df time | vs df shuffle |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n in names:
        med, best = statistics.median(results[n]), min(results[n])
        w = shuffles[n][0]
        vs_t = f"{df_med / med:.1f}x" if df_med else "-"
        vs_s = f"{w / df_shuffle:.2f}" if df_shuffle else "-"
        print(f"| {n} | {med:.2f} | {best:.2f} | {size / 1e6 / med:.0f} | {fmt_bytes(w)} | {vs_t} | {vs_s} |")


if __name__ == "__main__":
    main()
