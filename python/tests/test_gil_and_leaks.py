"""The GIL is released while ember runs; repeated calls do not leak."""

import gc
import os
import threading
import time

import ember


def test_python_runs_while_ember_does(data, tmp_path):
    # A run long enough to measure: the text many times over, one thread.
    # Each copy needs a name of its own: a file named twice is read once.
    paths = []
    for i in range(40):
        paths.append(tmp_path / f"copy{i}.txt")
        os.link(data["text"], paths[-1])
    rt = ember.Runtime(threads=1)
    started, done = threading.Event(), threading.Event()
    result = {}

    def work():
        started.set()
        result["counts"] = rt.wordcount(paths)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    spins, t0 = 0, time.perf_counter()
    while not done.is_set():
        spins += 1
    elapsed = time.perf_counter() - t0
    t.join()
    assert result["counts"]
    # Holding the GIL for the whole run would leave this loop a few switch
    # intervals (5 ms) at most; released, it spins the whole time.
    assert elapsed > 0.05, "the run was too short to tell"
    assert spins / elapsed > 100_000, (spins, elapsed)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_a_thousand_calls_do_not_leak(data):
    raw = data["text"].read_bytes()[:20_000]
    rt = ember.Runtime(threads=2)

    def calls(n):
        for _ in range(n):
            counts, stats = rt.wordcount(raw, return_stats=True)
            assert counts and stats["input_bytes"] == len(raw)
            rt.histogram(data["bmp"])

    calls(200)
    gc.collect()
    before = rss_bytes()
    calls(1000)
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 16 << 20, f"RSS grew {grown} bytes over 1000 calls"
