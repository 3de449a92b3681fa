"""Binary file objects: streamed in chunks through ember's chunked ingest
by the jobs the CLI streams (as it reads standard input), read whole by the
others; every result equal to the same job on the path."""

import io

import pytest

import ember


class ReadOnly:
    """A file object with only `read`, giving at most `most` bytes a call
    (short reads, as pipes and sockets give)."""

    def __init__(self, data, most=1 << 30):
        self.f = io.BytesIO(data)
        self.most = most
        self.calls = 0

    def read(self, n=-1):
        self.calls += 1
        return self.f.read(self.most if n is None or n < 0 else min(n, self.most))


class Failing(io.RawIOBase):
    """A raw binary stream that raises `error` once `after` bytes are read."""

    def __init__(self, data, after, error):
        self.data, self.pos, self.after, self.error = data, 0, after, error

    def readable(self):
        return True

    def readinto(self, b):
        if self.pos >= self.after:
            raise self.error
        n = min(len(b), len(self.data) - self.pos, self.after - self.pos)
        b[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("chunk_size,split_size", [("64KiB", "16KiB"), (1 << 20, 1 << 20),
                                                   ("300KB", 4096)])
def test_wordcount_streams_a_file_object_as_the_path(data, threads, chunk_size, split_size):
    path = data["text"]
    want = ember.wordcount(path)
    opts = dict(threads=threads, chunk_size=chunk_size, split_size=split_size)
    with open(path, "rb") as f:
        got, stats = ember.wordcount(f, return_stats=True, **opts)
    assert got == want
    assert stats["plan"]["ingest"] == "chunked"
    assert len(stats["chunks"]) > 1, "read in chunks, not whole"
    assert stats["input_bytes"] == path.stat().st_size
    with open(path, "rb", buffering=0) as raw:
        assert ember.wordcount(raw, **opts) == want
    assert ember.wordcount(io.BytesIO(path.read_bytes()), **opts) == want


def test_short_reads_and_read_only_objects(data):
    raw = data["text"].read_bytes()
    want = ember.wordcount(raw)
    for most in (1, 777, 1 << 16):
        src = ReadOnly(raw[:200_000] if most == 1 else raw, most)
        expect = ember.wordcount(raw[:200_000]) if most == 1 else want
        assert ember.wordcount(src, chunk_size="64KiB", threads=2) == expect
        assert src.calls > 1
    assert ember.wordcount(ReadOnly(raw), top=5) == ember.wordcount(raw, top=5)
    assert ember.wordcount(io.BytesIO(b"")) == {}


def test_streamed_jobs_equal_the_path(data):
    rt = ember.Runtime(threads=2)
    for name, key, kw in [("string_match", "keys", {}), ("linear_regression", "points", {}),
                          ("map_reduce", "text", {"map": lambda s: {"n": s.count(b"\n")}})]:
        fn = getattr(rt, name)
        want = fn(data[key], **kw)
        with open(data[key], "rb") as f:
            assert fn(f, chunk_size="256KiB", **kw) == want, name
        assert fn(ReadOnly(data[key].read_bytes(), 5000), chunk_size=65536, **kw) == want, name


def test_jobs_that_need_the_whole_input_read_it_whole(data):
    for name, key in [("histogram", "bmp"), ("sort", "records")]:
        fn = getattr(ember, name)
        want = fn(data[key])
        with open(data[key], "rb") as f:
            got = fn(f)
        assert (got == want).all() if name == "histogram" else got == want, name
    text = data["text"].read_bytes()[:100_000]
    want = ember.inverted_index(text, lines=True)
    assert ember.inverted_index(io.BytesIO(text), lines=True) == want


def test_a_read_that_raises_comes_back_as_itself():
    raw = b"alpha beta\n" * 50_000
    rt = ember.Runtime(threads=2)

    class Mine(Exception):
        pass

    for after in (0, 1000, 300_000):
        with pytest.raises(Mine, match="disk on fire"):
            rt.wordcount(Failing(raw, after, Mine("disk on fire")), chunk_size="64KiB")
    with pytest.raises(OSError, match="gone"):
        rt.string_match(Failing(raw, 70_000, OSError("gone")), chunk_size="64KiB")
    with pytest.raises(ValueError, match="bad read"):
        rt.histogram(Failing(raw, 10, ValueError("bad read")))
    # The runtime stays usable, for streamed and in-memory inputs.
    assert rt.wordcount(io.BytesIO(raw), chunk_size="64KiB") == {"alpha": 50_000, "beta": 50_000}
    assert rt.wordcount(raw) == {"alpha": 50_000, "beta": 50_000}


def test_text_files_and_objects_that_misbehave(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("some words\n")
    with open(p) as f, pytest.raises(TypeError, match="binary mode"):
        ember.wordcount(f)

    class Text:
        def read(self, n=-1):
            return "text, not bytes"

    with pytest.raises(TypeError, match="binary mode"):
        ember.wordcount(Text())

    class TooMuch:
        def readinto(self, b):
            return len(b) + 1

    with pytest.raises(TypeError, match="readinto returned"):
        ember.wordcount(TooMuch())


def test_file_objects_are_not_kept_or_leaked(data):
    import gc
    import sys

    raw = data["text"].read_bytes()[:50_000]
    rt = ember.Runtime(threads=2)
    f = io.BytesIO(raw)
    before = sys.getrefcount(f)
    for _ in range(1000):
        f.seek(0)
        assert rt.wordcount(f, chunk_size="16KiB")
    for _ in range(3):
        rt.wordcount(b"let pending reference counts settle")
    gc.collect()
    assert sys.getrefcount(f) == before


def test_a_decompressing_reader_is_streamed(data):
    import gzip

    raw = data["text"].read_bytes()
    packed = io.BytesIO(gzip.compress(raw, compresslevel=1))
    with gzip.GzipFile(fileobj=packed) as f:
        assert ember.wordcount(f, chunk_size="256KiB", threads=2) == ember.wordcount(raw)
