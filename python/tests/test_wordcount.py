"""Word count and inverted index equal the CLI's output on the same input."""

import ember


def read_tsv(path, value=int):
    out = {}
    for line in path.read_bytes().splitlines():
        k, v = line.split(b"\t")
        out[k.decode()] = value(v)
    return out


def test_wordcount_equals_cli(cli, data, tmp_path):
    out = tmp_path / "wc.tsv"
    cli("wordcount", data["text"], "-o", out)
    want = read_tsv(out)
    got = ember.wordcount(data["text"])
    assert got == want
    assert list(got) == sorted(got), "sorted by word, as the CLI writes them"


def test_wordcount_top_equals_cli(cli, data):
    lines = cli("wordcount", data["text"], "-k", "15").stdout.decode().splitlines()
    want = [(w, int(n)) for w, n in (l.split("\t") for l in lines if not l.startswith("#"))]
    assert ember.wordcount(data["text"], top=15) == want


def test_inputs_of_every_kind_agree(data):
    path = data["text"]
    raw = path.read_bytes()
    want = ember.wordcount(path)
    assert ember.wordcount(str(path)) == want
    assert ember.wordcount([path]) == want
    assert ember.wordcount(raw) == want
    assert ember.wordcount(memoryview(raw)) == want
    assert ember.wordcount(bytearray(raw)) == want
    with open(path, "rb") as f:
        assert ember.wordcount(f) == want


def test_several_files_and_options(data, tmp_path):
    # A file named twice is read once (see docs/cli.md): the second file is
    # a copy.
    copy = tmp_path / "copy.txt"
    copy.write_bytes(data["text"].read_bytes())
    two = ember.wordcount([data["text"], copy], threads=2, split_size=65536,
                          container="hash", mode="barrier", ingest="chunked",
                          chunk_size=1 << 20)
    one = ember.wordcount(data["text"])
    assert two == {w: 2 * n for w, n in one.items()}


def test_a_spilling_run_gives_the_same_counts(data, tmp_path):
    counts, stats = ember.wordcount(data["text"], return_stats=True,
                                    memory_limit=64 << 10, spill_dir=tmp_path)
    assert stats["memory"]["spills"] > 0
    assert stats["memory"]["limit_bytes"] == 64 << 10
    assert counts == ember.wordcount(data["text"])
    assert list(tmp_path.iterdir()) == [], "spill files left"


def test_invalid_utf8_and_upper_case_are_words_of_letters():
    assert ember.wordcount(b"caf\xc3\xa9 \xff\xfeABC abc") == {"abc": 2, "caf": 1}


def test_stats_have_the_stats_json_schema(cli, data, tmp_path):
    js = tmp_path / "stats.json"
    cli("wordcount", data["text"], "--stats-json", js)
    import json

    want = json.loads(js.read_text())
    counts, stats = ember.wordcount(data["text"], return_stats=True)
    assert set(stats) == set(want)
    assert set(stats["plan"]) == set(want["plan"])
    assert stats["distinct_keys"] == want["distinct_keys"] == len(counts)
    assert stats["pairs_emitted"] == want["pairs_emitted"] == sum(counts.values())


def test_folders_and_patterns_read_the_listed_files(tmp_path):
    files = {
        "b.txt": b"bee two shared\n",
        "a.txt": b"ant one shared\n",
        "sub/c.txt": b"cat three\n",
        "_SUCCESS": b"marker\n",
        ".hidden.txt": b"hidden\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(text)
    listed = [tmp_path / f for f in ["a.txt", "b.txt", "sub/c.txt"]]
    top = listed[:2]
    pattern = str(tmp_path / "*.txt")
    for job in [ember.wordcount, ember.inverted_index]:
        every = job(listed)
        assert "cat" in every and "hidden" not in every and "marker" not in every
        assert job(tmp_path) == every
        assert job(str(tmp_path)) == every
        assert job(pattern) == job(top) != every
        assert job([pattern, top[0]]) == job(top)
    names = [str(p) for p in listed]
    assert ember.document_paths(tmp_path) == names
    assert ember.document_paths([tmp_path / "sub", pattern]) == names
