"""Options: sizes as integers or as the CLI's size strings, parsed by the
same parser, with its messages."""

import pytest

import ember


def stats(data, **opts):
    return ember.wordcount(data["text"], return_stats=True, threads=2, **opts)[1]


@pytest.mark.parametrize("text,n", [("4096", 4096), ("64KiB", 65536), ("64k", 65536),
                                    ("1MB", 1_000_000), ("1.5MiB", 3 << 19)])
def test_size_strings_act_as_their_integers(data, text, n):
    by_text, by_int = stats(data, split_size=text), stats(data, split_size=n)
    assert by_text["splits"] == by_int["splits"] > 1
    by_text = stats(data, ingest="chunked", chunk_size=text)
    by_int = stats(data, ingest="chunked", chunk_size=n)
    assert len(by_text["chunks"]) == len(by_int["chunks"]) > 1
    assert max(c["bytes"] for c in by_text["chunks"]) <= n
    assert stats(data, memory_limit=text)["memory"]["limit_bytes"] == n
    # The pipelined mode clamps its buffer size: the same either way.
    by_text = stats(data, mode="pipelined", buffer_size=text, max_buffered="1GiB")
    by_int = stats(data, mode="pipelined", buffer_size=n, max_buffered=1 << 30)
    assert by_text["pipeline"]["buffer_bytes"] == by_int["pipeline"]["buffer_bytes"]
    assert by_text["pipeline"]["max_buffered_bytes"] == 1 << 30


def test_bad_sizes_are_value_errors_with_the_cli_message(cli):
    for bad in ("12 parsecs", "MiB", "-4"):
        with pytest.raises(ValueError) as e:
            ember.wordcount(b"a", split_size=bad)
        err = cli("wordcount", f"--split-size={bad}", "-", check=False).stderr.decode()
        reason = str(e.value).split(": ", 1)[1]
        assert str(e.value).startswith("invalid split_size: ")
        assert reason in err, (reason, err)
    with pytest.raises(ValueError, match="split_size must be at least 1"):
        ember.wordcount(b"a", split_size="0KiB")
    with pytest.raises(ValueError, match="chunk_buffers must be at least 1"):
        ember.wordcount(b"a", chunk_buffers=0)
    with pytest.raises(TypeError):
        ember.wordcount(b"a", chunk_buffers="2KiB")
