"""Custom jobs from Python."""

import re
from collections import Counter

import pytest

import ember

WORD = re.compile(rb"[a-z]+")


def words(split):
    return Counter(w.decode() for w in WORD.findall(split.lower()))


def test_counter_per_split_equals_wordcount(data):
    want = ember.wordcount(data["text"])
    got = ember.map_reduce(data["text"], words, threads=2)
    assert got == want
    assert list(got) == sorted(got)


def test_pairs_per_word_and_records(data):
    raw = data["text"].read_bytes()[:50_000]

    def pairs(split):
        for w in WORD.findall(split.lower()):
            yield w, 1

    want = {w.encode(): n for w, n in ember.wordcount(raw).items()}
    for records in ("lines", "words", "whole"):
        assert ember.map_reduce(raw, pairs, records=records) == want


def test_min_max_list_function_and_reduce():
    data = b"a 3\nb 5\na 1\nb 7\na 2\n"

    def parse(split):
        for line in split.splitlines():
            k, v = line.split()
            yield k.decode(), int(v)

    assert ember.map_reduce(data, parse, combine="min") == {"a": 1, "b": 5}
    assert ember.map_reduce(data, parse, combine="max") == {"a": 3, "b": 7}
    lists = ember.map_reduce(data, parse, combine="list")
    assert {k: sorted(v) for k, v in lists.items()} == {"a": [1, 2, 3], "b": [5, 7]}
    assert ember.map_reduce(data, parse, combine=lambda x, y: x * y) == {"a": 6, "b": 35}
    mean = ember.map_reduce(data, parse, combine="list", reduce=lambda k, v: sum(v) / len(v))
    assert mean == {"a": 2.0, "b": 6.0}
    assert ember.map_reduce(data, parse, reduce=lambda k, n: f"{k}={n}") == {"a": "a=6", "b": "b=12"}


def test_exceptions_in_map_come_back_as_themselves():
    def bad(split):
        raise KeyError("from map")

    with pytest.raises(KeyError, match="from map"):
        ember.map_reduce(b"x\ny\n", bad)
    with pytest.raises(TypeError, match="str or bytes"):
        ember.map_reduce(b"x\n", lambda s: {1: 2})
    with pytest.raises(TypeError, match="not both"):
        ember.map_reduce(b"x\n", lambda s: [("a", 1), (b"b", 1)])
    with pytest.raises(ValueError, match="unknown combine"):
        ember.map_reduce(b"x\n", words, combine="median")
    with pytest.raises(ValueError, match="unknown records"):
        ember.map_reduce(b"x\n", words, records="paragraphs")
    # Still usable.
    assert ember.map_reduce(b"x y x\n", words) == {"x": 2, "y": 1}


def lines_and_bytes(split):
    """A picklable map (module-level) with a small result per split."""
    return {"lines": split.count(b"\n"), "bytes": len(split)}


def raises_in_child(split):
    raise KeyError("from a worker process")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_processes_give_the_threads_result(data, threads):
    want = ember.map_reduce(data["text"], words, threads=threads, split_size="256KiB")
    got = ember.map_reduce(data["text"], words, threads=threads, split_size="256KiB",
                           processes=2)
    assert got == want == ember.wordcount(data["text"])
    small = ember.map_reduce(data["text"], lines_and_bytes, processes=threads, threads=threads)
    raw = data["text"].read_bytes()
    assert small == {"bytes": len(raw), "lines": raw.count(b"\n")}


def test_a_pool_is_reused_and_left_open(data):
    import multiprocessing

    with multiprocessing.Pool(2) as pool:
        for split_size in ("64KiB", "1MiB"):
            got = ember.map_reduce(data["text"], words, processes=pool, threads=2,
                                   split_size=split_size)
            assert got == ember.wordcount(data["text"])
        assert pool.apply(len, (b"abc",)) == 3


def test_processes_errors():
    with pytest.raises(KeyError, match="from a worker process"):
        ember.map_reduce(b"x\ny\n", raises_in_child, processes=1)
    with pytest.raises(Exception, match="pickle"):
        ember.map_reduce(b"x\ny\n", lambda s: {"x": 1}, processes=1)
    with pytest.raises(ValueError, match="at least 1"):
        ember.map_reduce(b"x\n", words, processes=0)
    with pytest.raises(TypeError, match="processes must be an int"):
        ember.map_reduce(b"x\n", words, processes="2")
    assert ember.map_reduce(b"x y x\n", words, processes=1) == {"x": 2, "y": 1}
