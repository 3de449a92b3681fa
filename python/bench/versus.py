"""ember from Python against the usual Python tools, in one process run:

- word count: ``ember.wordcount`` (the full word table returned as a dict)
  vs DuckDB, Polars and ``collections.Counter``, on the Zipf corpus;
- histogram: ``ember.histogram`` vs ``np.bincount`` on the BMP's pixel bytes;
- k-means: ``ember.kmeans`` vs a plain NumPy k-means (same initial means,
  the first k points; the same iterations), results compared exactly;
- a custom job: ``ember.map_reduce`` (GIL-bound threads, and with
  ``processes=``) vs a plain Python Counter loop and
  ``multiprocessing.Pool``, for two maps of the same tokenizing work: a
  Counter of the words per split (a large result) and the words counted by
  first letter (a small one).

Every contender's result is checked equal to ember's; each time is the
median of ``--repeat`` runs. DuckDB and Polars are not dependencies of the
package: without them their rows are skipped with a message.

    python python/bench/versus.py --corpus TEXT --custom-corpus TEXT64 \\
        --bmp IMAGE.bmp --points POINTS.mat [--threads N] [--repeat R]

Inputs: ``ember gen text --size 256MiB``, ``ember gen text --size 64MiB``,
``ember gen histogram``, ``ember gen kmeans``.
"""

import argparse
import multiprocessing
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter

import numpy as np

import ember

WORD = re.compile(rb"[a-z]+")


def timed(fn, repeat):
    """(median seconds, last result) of `repeat` calls of `fn`."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


class Table:
    """Rows of one comparison, each time also as a ratio to the first row."""

    def __init__(self, title, mb):
        self.title, self.mb, self.base = title, mb, None
        print(f"\n{title}")

    def row(self, name, secs, note=""):
        self.base = secs if self.base is None else self.base
        rate = f"{self.mb / secs:8.1f} MB/s" if self.mb else " " * 13
        print(f"  {name:<46} {secs:8.3f} s {rate} {secs / self.base:6.2f}x  {note}", flush=True)


def optional(module):
    try:
        return __import__(module)
    except ImportError:
        print(f"  ({module} is not installed: its row is skipped; pip install {module})")
        return None


# Word count -----------------------------------------------------------------

def duckdb_wordcount(duckdb, path):
    """Words split at spaces (the Zipf corpus is lower-case words between
    single spaces), counted by DuckDB, returned as a dict."""
    q = f"""
        SELECT word, count(*) FROM (
          SELECT unnest(string_split(line, ' ')) AS word
          FROM read_csv('{path}', columns = {{'line': 'VARCHAR'}}, header = false,
                        delim = '\\x01', quote = '', escape = '', auto_detect = false))
        WHERE word <> '' GROUP BY word"""
    with duckdb.connect() as con:
        return dict(con.execute(q).fetchall())


def polars_wordcount(pl, path):
    """The same words counted by Polars (lazy, all cores), as a dict."""
    df = (pl.scan_csv(path, has_header=False, separator="\x01", quote_char=None,
                      new_columns=["line"], schema_overrides={"line": pl.String})
          .select(pl.col("line").str.split(" ").explode().alias("word"))
          .filter(pl.col("word") != "")
          .group_by("word").len()
          .collect())
    return dict(zip(df["word"].to_list(), df["len"].to_list()))


def wordcount(a):
    mb = os.path.getsize(a.corpus) / 1e6
    t = Table(f"word count, {mb:.0f} MB Zipf corpus, full table as a dict", mb)
    secs, want = timed(lambda: ember.wordcount(a.corpus, threads=a.threads), a.repeat)
    t.row("ember.wordcount", secs, f"{len(want):,} words")
    _, stats = ember.wordcount(a.corpus, threads=a.threads, return_stats=True)
    print(f"  (of which the ember run: {stats['total_secs']:.3f} s; the rest builds the dict)")
    duckdb = optional("duckdb")
    if duckdb:
        secs, got = timed(lambda: duckdb_wordcount(duckdb, a.corpus), a.repeat)
        assert got == want, "DuckDB disagrees with ember.wordcount"
        t.row(f"DuckDB {duckdb.__version__}", secs)
    pl = optional("polars")
    if pl:
        secs, got = timed(lambda: polars_wordcount(pl, a.corpus), a.repeat)
        assert got == want, "Polars disagrees with ember.wordcount"
        t.row(f"Polars {pl.__version__}", secs)
    # Words split at white space (the corpus's words are lower-case
    # letters), the file read in 64 MiB pieces.
    secs, got = timed(lambda: plain_count(lambda p: p.decode().split(), a.corpus, 64 << 20),
                      max(1, a.repeat // 2))
    assert got == want, "Counter disagrees with ember.wordcount"
    t.row("collections.Counter (one process)", secs)


# Histogram ------------------------------------------------------------------

def numpy_histogram(path):
    """np.bincount of each channel of a 24-bit BMP's pixel bytes."""
    data = np.fromfile(path, dtype=np.uint8)
    offset = int.from_bytes(data[10:14].tobytes(), "little")
    width = int.from_bytes(data[18:22].tobytes(), "little", signed=True)
    height = abs(int.from_bytes(data[22:26].tobytes(), "little", signed=True))
    stride = (width * 3 + 3) // 4 * 4
    rows = data[offset:offset + stride * height].reshape(height, stride)[:, :width * 3]
    px = rows.reshape(-1, 3)
    bgr = [np.bincount(px[:, c], minlength=256) for c in range(3)]
    return np.stack([bgr[2], bgr[1], bgr[0]]).astype(np.uint64)


def histogram(a):
    mb = os.path.getsize(a.bmp) / 1e6
    t = Table(f"histogram, {mb:.0f} MB BMP", mb)
    secs, want = timed(lambda: ember.histogram(a.bmp, threads=a.threads), a.repeat)
    t.row("ember.histogram", secs)
    secs, got = timed(lambda: numpy_histogram(a.bmp), a.repeat)
    assert (got == want).all(), "NumPy disagrees with ember.histogram"
    t.row(f"NumPy {np.__version__} bincount", secs)


# k-means --------------------------------------------------------------------

def numpy_kmeans(points, k, max_iter):
    """ember's k-means definition in NumPy: the first k points as means,
    nearest mean by squared distance (ties to the lower index), new means
    the floor of the sums over the counts, an empty cluster keeping its
    mean; stop when no mean changes or after max_iter."""
    p = points.astype(np.float64)  # exact: every value and sum below 2**53
    means = points[:k].astype(np.int64)
    sizes = np.zeros(k, np.int64)
    for it in range(1, max_iter + 1):
        m = means.astype(np.float64)
        # |p - m|^2 without |p|^2 (the same for every mean of a point).
        d = (m * m).sum(1)[None, :] - 2 * (p @ m.T)
        nearest = d.argmin(1)
        sizes = np.bincount(nearest, minlength=k)
        sums = np.stack([np.bincount(nearest, weights=p[:, j], minlength=k)
                         for j in range(p.shape[1])], 1).astype(np.int64)
        new = means.copy()
        got = sizes > 0
        new[got] = np.floor_divide(sums[got], sizes[got, None])
        if (new == means).all():
            return new, sizes, it, True
        means = new
    return means, sizes, max_iter, False


def read_matrix(path):
    """An ember matrix file: `EMBERMAT`, rows and cols (u64 each), then
    the i32 values row by row, all little-endian."""
    raw = np.fromfile(path, dtype=np.uint8)
    assert raw[:8].tobytes() == b"EMBERMAT", f"{path} is not an ember matrix file"
    rows, cols = (int(x) for x in raw[8:24].view("<u8"))
    return raw[24:24 + 4 * rows * cols].view("<i4").reshape(rows, cols)


def kmeans(a):
    pts = read_matrix(a.points)
    t = Table(f"k-means, {pts.shape[0]:,} points x {pts.shape[1]}, k={a.k}, "
              f"at most {a.iterations} iterations", 0)
    secs, want = timed(lambda: ember.kmeans(pts, a.k, max_iter=a.iterations,
                                            threads=a.threads), a.repeat)
    t.row("ember.kmeans", secs, f"{want.iterations} iterations")
    secs, (means, sizes, iters, converged) = timed(
        lambda: numpy_kmeans(pts, a.k, a.iterations), a.repeat)
    assert (means == want.means).all() and (sizes == want.sizes).all(), "NumPy k-means differs"
    assert (iters, converged) == (want.iterations, want.converged)
    t.row(f"NumPy {np.__version__} (float64 matmul, exact)", secs, "same means")


# A custom job ---------------------------------------------------------------

def words(split):
    """ember's tokenizer in Python: runs of ASCII letters, lower-cased, as
    str."""
    return (w.decode() for w in WORD.findall(split.lower()))


def first_letters(split):
    """The first letter of each word."""
    return (chr(w[0]) for w in WORD.findall(split.lower()))


def count_words(split):
    """The map of the custom job: a Counter of the split's words (a large
    result: most of a split's words are distinct)."""
    return Counter(words(split))


def count_first_letters(split):
    """A map whose result is small: the words counted by first letter (at
    most 26 keys), for the same tokenizing work."""
    return Counter(first_letters(split))


def plain_count(tokens, path, piece_bytes):
    """A plain Python loop: the file read in pieces at newlines, one
    Counter updated with each piece's tokens."""
    total, rest = Counter(), b""
    with open(path, "rb") as f:
        while piece := f.read(piece_bytes):
            piece = rest + piece
            cut = piece.rfind(b"\n") + 1
            total.update(tokens(piece[:cut]))
            rest = piece[cut:]
    total.update(tokens(rest))
    return total


def pieces(data, n):
    """`data` cut into about `n` pieces at newlines."""
    size, start = max(1, len(data) // n), 0
    while start < len(data):
        end = data.find(b"\n", start + size)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


def pool_count(fn, path, procs):
    """multiprocessing.Pool: `fn` (a Counter) per piece, merged in the
    parent."""
    with open(path, "rb") as f:
        data = f.read()
    total = Counter()
    with multiprocessing.Pool(procs) as pool:
        for c in pool.imap_unordered(fn, pieces(data, 8 * procs)):
            total.update(c)
    return total


def custom(a):
    mb = os.path.getsize(a.custom_corpus) / 1e6
    path, n = a.custom_corpus, a.threads
    for title, fn, tokens in [
            ("a Counter of the words per split", count_words, words),
            ("words by first letter, at most 26 keys per split", count_first_letters,
             first_letters)]:
        t = Table(f"custom map: {title}, {mb:.0f} MB Zipf corpus", mb)
        rows = []
        if fn is count_words:
            rows.append(("ember.wordcount (built in, for scale)",
                         lambda: ember.wordcount(path, threads=n)))
        rows += [
            ("plain Python (a Counter, 1 MiB pieces)",
             lambda: plain_count(tokens, path, 1 << 20)),
            (f"multiprocessing.Pool({n})", lambda: pool_count(fn, path, n)),
        ]
        for split in a.split_sizes:
            rows.append((f"ember.map_reduce, threads, split {split}",
                         lambda s=split: ember.map_reduce(path, fn, threads=n, split_size=s)))
            rows.append((f"ember.map_reduce, processes={n}, split {split}",
                         lambda s=split: ember.map_reduce(path, fn, threads=n, split_size=s,
                                                          processes=n)))
        want = None
        for name, run in rows:
            secs, got = timed(run, a.repeat)
            want = dict(got) if want is None else want
            assert dict(got) == want, f"{name} disagrees with the first row"
            t.row(name, secs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", help="word count: the 256 MiB Zipf corpus")
    ap.add_argument("--custom-corpus", help="custom map: a smaller Zipf corpus (64 MiB)")
    ap.add_argument("--bmp", help="histogram: a 24-bit BMP")
    ap.add_argument("--points", help="k-means: an ember matrix file of points")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--split-sizes", nargs="+", default=["1MiB"])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"{platform.node()}: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}; {a.threads} threads; "
          f"median of {a.repeat}")
    for run, given in [(wordcount, a.corpus), (histogram, a.bmp), (kmeans, a.points),
                       (custom, a.custom_corpus)]:
        if given:
            run(a)


if __name__ == "__main__":
    main()
