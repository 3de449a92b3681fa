"""Word count from Python, four ways, on one generated corpus: ember's
built-in job, ember.map_reduce with a Counter per split (the custom-job
fast path), a plain Python dict loop (collections.Counter over the whole
file) and multiprocessing.Pool (a Counter per chunk, merged). Every way's
result is checked equal to ember's.

    python python/bench/wordcount_python.py CORPUS [--threads N] [--repeat R]

Make the corpus with `ember gen text --size 64MiB -o CORPUS`.
"""

import argparse
import multiprocessing
import os
import re
import time
from collections import Counter

import ember

WORD = re.compile(rb"[a-z]+")


def count_bytes(data):
    """Python's word count of a chunk: ember's tokenizer (runs of ASCII
    letters, lower-cased), words as str."""
    return Counter(w.decode() for w in WORD.findall(data.lower()))


def chunks(data, n):
    """`data` cut into about `n` pieces at newlines."""
    size = max(1, len(data) // n)
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + size)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


def plain(path, threads):
    with open(path, "rb") as f:
        return count_bytes(f.read())


def pool(path, threads):
    with open(path, "rb") as f:
        data = f.read()
    total = Counter()
    with multiprocessing.Pool(threads) as p:
        for c in p.imap_unordered(count_bytes, chunks(data, 8 * threads)):
            total.update(c)
    return total


def builtin(path, threads):
    return ember.wordcount(path, threads=threads)


def custom(path, threads):
    return ember.map_reduce(path, count_bytes, threads=threads, split_size=4 << 20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    size = os.path.getsize(a.corpus)
    print(f"corpus {size / 1e6:.1f} MB, {a.threads} threads, best of {a.repeat}")
    want = None
    base = None
    for name, fn in [("ember.wordcount", builtin), ("ember.map_reduce (Counter per split)", custom),
                     ("multiprocessing.Pool (Counter per chunk)", pool),
                     ("plain Python (one Counter)", plain)]:
        best = float("inf")
        for _ in range(a.repeat):
            t = time.perf_counter()
            got = fn(a.corpus, a.threads)
            best = min(best, time.perf_counter() - t)
        want = got if want is None else want
        assert dict(got) == dict(want), f"{name} disagrees with ember.wordcount"
        base = best if base is None else base
        print(f"{name:<42} {best:8.3f} s  {size / best / 1e6:8.1f} MB/s  {best / base:6.1f}x")


if __name__ == "__main__":
    main()
